// Package metrics holds the counters every subtask of a job keeps, under
// Flink's metric names (numRecordsIn, numBytesOut, busyTimeMsPerSecond,
// ...), and turns them into rates.
//
// A Task is one subtask of a chain (Flink's task): the task goroutine adds
// to its counters as it works (records and Arrow buffer bytes in and out,
// nanoseconds busy, idle and back-pressured, the last input watermark), and
// any goroutine reads them. A Sampler samples a job's tasks once a second
// and derives the per-second figures over its window, as Flink's MeterView
// and TimerGauge do: the REST API (package rest), the Prometheus endpoint
// and the autoscaler read them. A History keeps each vertex's figures at
// the latest samplings, a bounded ring per vertex, for the dashboard's
// charts.
//
// A UDF is one UDF operator subtask's Python workers: the runner
// (udf/bridge/pluginrunner) counts batches and rows sent, the worker's
// time per answered batch and the batches in flight with atomics, and
// names its worker process, whose resident memory is read from
// /proc/<pid>/status when a worker opens or goes and at most once a second
// while read, never per batch. UDFs holds a job's, made when an operator
// asks for them.
package metrics
