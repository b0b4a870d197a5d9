package autoscaler

import (
	"math"
	"time"

	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/task"
)

// Vertex is one job vertex (a chain of operators run as one task per
// subtask) as the autoscaler sees it.
type Vertex struct {
	// UIDs are the chain's operators, head first: a rescale sets them all,
	// so that the chain stays one.
	UIDs        []string
	Parallelism int
	// Bounds are the concurrency=(min, max) of the chain's UDFs (the
	// intersection when several declare some); zero: not scaled.
	Bounds plan.Bounds
	// Inputs are the upstream vertices (indexes); Outputs counts the edges
	// leaving the chain (its RecordsOut counts each edge's copy).
	Inputs  []int
	Outputs int
	Tasks   []*metrics.Task
	// OpIDs are the chain's operators' IDs, head first; UDFs the job's
	// UDF metrics, where those of the chain's UDF operators are (nil:
	// none), made as their subtasks open, so read at each Read.
	OpIDs []int
	UDFs  *metrics.UDFs
}

// Vertices returns g's vertices in topological order, with the subtask
// metrics of tasks (by chain head operator ID, as package job keeps them;
// nil: none).
func Vertices(g *plan.Graph, tasks [][]*metrics.Task) []Vertex {
	heads := task.ChainHeads(g)
	byChain := map[int]int{}
	vs := make([]Vertex, len(heads))
	for i, h := range heads {
		byChain[h.ChainID] = i
		vs[i] = Vertex{Parallelism: h.Parallelism}
		if tasks != nil {
			vs[i].Tasks = tasks[h.ID]
		}
	}
	for _, op := range g.Operators {
		v := &vs[byChain[op.ChainID]]
		v.UIDs = append(v.UIDs, op.UID)
		v.OpIDs = append(v.OpIDs, op.ID)
		if b := op.Concurrency; !b.Zero() {
			if v.Bounds.Zero() {
				v.Bounds = b
			} else {
				v.Bounds = plan.Bounds{Min: max(v.Bounds.Min, b.Min), Max: min(v.Bounds.Max, b.Max)}
			}
		}
	}
	for _, e := range g.Edges {
		from, to := byChain[g.Operators[e.From].ChainID], byChain[g.Operators[e.To].ChainID]
		if from == to {
			continue
		}
		vs[from].Outputs++
		vs[to].Inputs = append(vs[to].Inputs, from)
	}
	return vs
}

// Reading is every vertex's subtask counters at one time, their pending
// records (metrics.Task.PendingRecords) included, and the time its UDF
// operators' Python workers spent on batches.
type Reading struct {
	At     time.Time
	Totals [][]metrics.Totals
	// WorkerTime is by vertex, then by the vertex's UDF operator, the
	// workers' time (metrics.UDF.WorkerTime) of each subtask.
	WorkerTime [][][]time.Duration
}

// Read reads the counters of vs.
func Read(vs []Vertex, at time.Time) Reading {
	r := Reading{At: at, Totals: make([][]metrics.Totals, len(vs)), WorkerTime: make([][][]time.Duration, len(vs))}
	for i, v := range vs {
		for _, t := range v.Tasks {
			r.Totals[i] = append(r.Totals[i], t.Read())
		}
		if v.UDFs == nil {
			continue
		}
		for _, id := range v.OpIDs {
			subs := v.UDFs.Of(id)
			if subs == nil {
				continue
			}
			times := make([]time.Duration, len(subs))
			for s, u := range subs {
				times[s] = time.Duration(u.WorkerTime.Load())
			}
			r.WorkerTime[i] = append(r.WorkerTime[i], times)
		}
	}
	return r
}

// Pending is each vertex's pendingRecords in r, summed over its subtasks
// that report one (0 for a vertex none of whose do).
func (r Reading) Pending() []float64 {
	out := make([]float64, len(r.Totals))
	for i, subs := range r.Totals {
		for _, t := range subs {
			if t.PendingRecords != metrics.NoPendingRecords {
				out[i] += float64(t.PendingRecords)
			}
		}
	}
	return out
}

// Rates are one vertex's figures averaged between two readings.
type Rates struct {
	// In and Out are records per second over all subtasks.
	In, Out float64
	// Busy is the subtasks' average busy ratio, in [0, 1]: the larger of
	// the tasks' (TaskBusy) and their Python workers' (WorkerBusy).
	Busy float64
	// TaskBusy is the tasks' busyTimeMsPerSecond / 1000; WorkerBusy the
	// time the workers of the busiest UDF operator of the chain spent on
	// batches, per second and subtask (0 without UDFs).
	TaskBusy, WorkerBusy float64
	// BacklogGrowth is how fast a source's pending records grew, per
	// second (negative while it catches up); 0 when it reports none.
	BacklogGrowth float64
}

// WindowRates are each vertex's rates from old to now.
func WindowRates(old, now Reading) []Rates {
	dt := now.At.Sub(old.At).Seconds()
	out := make([]Rates, len(now.Totals))
	if dt <= 0 {
		return out
	}
	for i := range now.Totals {
		var in, o, backlog int64
		var busy time.Duration
		n := min(len(old.Totals[i]), len(now.Totals[i]))
		for s := range n {
			a, b := old.Totals[i][s], now.Totals[i][s]
			in += b.RecordsIn - a.RecordsIn
			o += b.RecordsOut - a.RecordsOut
			busy += b.Busy - a.Busy
			if pa, pb := a.PendingRecords, b.PendingRecords; pa != metrics.NoPendingRecords && pb != metrics.NoPendingRecords {
				backlog += pb - pa
			}
		}
		r := Rates{In: float64(in) / dt, Out: float64(o) / dt, BacklogGrowth: float64(backlog) / dt}
		if n > 0 {
			r.TaskBusy = ratio(busy, dt, n)
		}
		r.WorkerBusy = workerBusy(old.WorkerTime[i], now.WorkerTime[i], dt)
		r.Busy = max(r.TaskBusy, r.WorkerBusy)
		out[i] = r
	}
	return out
}

// workerBusy is the busy ratio of the busiest UDF operator's workers
// between two readings of a vertex's worker times: a UDF task counts only
// its waits for results as busy, so with batches in flight its worker is
// busier than it (a bottleneck the task's figure hides).
func workerBusy(old, now [][]time.Duration, dt float64) float64 {
	busiest := 0.0
	for k := range min(len(old), len(now)) {
		var spent time.Duration
		n := min(len(old[k]), len(now[k]))
		for s := range n {
			spent += now[k][s] - old[k][s]
		}
		if n > 0 {
			busiest = max(busiest, ratio(spent, dt, n))
		}
	}
	return busiest
}

// ratio is d per second of dt and per subtask of n, in [0, 1].
func ratio(d time.Duration, dt float64, n int) float64 {
	return math.Min(1, math.Max(0, d.Seconds()/dt/float64(n)))
}

// TargetRates are the records per second each vertex must take, as the
// Flink autoscaler's target data rate: a source's is what it read plus the
// growth of its backlog (a source its consumers hold back falls behind:
// the rate it should read at is the rate it read plus that); any other
// vertex's is the sum over its inputs of the input's target rate times
// the input's ratio of records out (per edge) to records in.
func TargetRates(vs []Vertex, r []Rates) []float64 {
	return downstream(vs, r, func(i int) float64 { return max(0, r[i].In+r[i].BacklogGrowth) })
}

// Backlogs are the records each vertex has still to take for the sources'
// current backlog (pending, by vertex, from Reading.Pending): a source's
// own pending records, carried downstream by the same ratios as the target
// rates. Over the catch-up duration they are Flink's catch-up data rate.
func Backlogs(vs []Vertex, r []Rates, pending []float64) []float64 {
	return downstream(vs, r, func(i int) float64 { return pending[i] })
}

// downstream gives each source vertex its own figure and every other
// vertex the sum over its inputs of the input's figure times the input's
// ratio of records out (per edge) to records in.
func downstream(vs []Vertex, r []Rates, atSource func(int) float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		if len(v.Inputs) == 0 {
			out[i] = atSource(i)
			continue
		}
		for _, u := range v.Inputs {
			if r[u].In > 0 && vs[u].Outputs > 0 {
				out[i] += out[u] * r[u].Out / float64(vs[u].Outputs) / r[u].In
			}
		}
	}
	return out
}
