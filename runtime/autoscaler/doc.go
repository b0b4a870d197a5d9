// Package autoscaler sets the parallelism of Python UDF operators the way
// the Flink Kubernetes operator's JobVertexScaler does (DS2, Kalavri et
// al., OSDI '18): a vertex's true processing rate is its input rate
// divided by its busy ratio over a metrics window (the larger of its
// tasks' and its Python workers'); the parallelism needed to take the
// target rate at the target utilization, plus the catch-up rate that
// reads the sources' backlog off in the catch-up duration, is ceil(p *
// (catchUp + targetRate / target) / trueRate), clamped to the UDF's
// declared concurrency bounds. Scale-up happens as soon as the expected
// utilization leaves the band above the target; scale-down only after the
// scale-down interval has passed since the last rescale, so a steady load
// does not make the job oscillate.
//
// Decide is pure (a window of one vertex in, a Decision with its reason
// out), tested as a unit with fake metric windows. Vertices, WindowRates
// and TargetRates turn a job's graph and task counters into those
// windows: a source's target rate is what it read plus the growth of its
// backlog (metrics.Task.PendingRecords), and each vertex downstream gets
// its inputs' target rates times their ratio of records out to records
// in; Backlogs carries the sources' current backlog down the same way. Loop is the running part: it samples the job (through the small Job
// interface package job implements), waits for every scaled subtask to
// have worked and for the stabilization interval after a start,
// restart or rescale, collects a full metrics window, then evaluates every tenth of
// the window and asks for one rescale (Job.Rescale, in place at the next
// checkpoint) with every change. Decisions are logged and kept by the job
// for the REST API (GET /jobs/:jid/autoscaler).
package autoscaler
