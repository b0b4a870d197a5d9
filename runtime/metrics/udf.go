package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// UDF metric names, in Flink's style (operator scope, camelCase).
const (
	UDFNumBatches            = "udfNumBatches"            // batches sent to the worker
	UDFNumRecords            = "udfNumRecords"            // rows sent to the worker
	UDFAccumulatedWorkerTime = "udfAccumulatedWorkerTime" // ms the worker spent on the answered batches
	UDFWorkerTimeMsPerBatch  = "udfWorkerTimeMsPerBatch"  // their mean, ms
	UDFBatchesInFlight       = "udfBatchesInFlight"       // sent, not answered yet
	UDFWorkerRssBytes        = "udfWorkerRssBytes"        // the worker's resident memory, last sample
	UDFNumWorkerRestarts     = "udfNumWorkerRestarts"     // workers opened after the first
)

const (
	rssSamplePeriod    = time.Second // at most one /proc read per period while read
	procStatusRSSField = "VmRSS:"    // in /proc/<pid>/status, in kB
)

// UDFMetricNames lists the UDF metrics in the order the REST API lists
// them.
var UDFMetricNames = []string{
	UDFNumBatches, UDFNumRecords, UDFAccumulatedWorkerTime, UDFWorkerTimeMsPerBatch,
	UDFBatchesInFlight, UDFWorkerRssBytes, UDFNumWorkerRestarts,
}

// UDF counts the Python workers of one UDF operator subtask (one, or a
// pandas aggregation's several), across the job's attempts. The runners
// write it where they see batches (atomics, no lock on the hot path); any
// goroutine reads it.
type UDF struct {
	// Batches and Rows count what was sent to the workers; Answered the
	// batches whose result came back, and WorkerTime (ns) the workers'
	// share of answering them (see AddAnswered).
	Batches, Rows, Answered, WorkerTime atomic.Int64
	// InFlight is the batches sent and not answered yet.
	InFlight atomic.Int64

	// The workers, touched when one opens or goes and at a memory sample,
	// never per batch.
	mu struct {
		sync.Mutex
		pids map[int]bool // the workers serving the subtask now
		// opens counts the workers opened (started, or taken idle from
		// the pool), peak the most that served at once.
		opens, peak int
		rss         int64 // bytes, the last sample's sum over the workers
		sampledAt   time.Time
	}
}

// NewUDF returns counters at zero.
func NewUDF() *UDF { return &UDF{} }

// AddBatch counts a batch of rows sent to a worker.
func (u *UDF) AddBatch(rows int64) {
	u.Batches.Add(1)
	u.Rows.Add(rows)
}

// AddInFlight adds n (negative when answered or dropped) to InFlight.
func (u *UDF) AddInFlight(n int64) { u.InFlight.Add(n) }

// AddAnswered counts an answered batch a worker spent d on.
func (u *UDF) AddAnswered(d time.Duration) {
	u.Answered.Add(1)
	u.WorkerTime.Add(int64(d))
}

// WorkerOpened counts worker pid, now serving the subtask, and samples
// the workers' memory.
func (u *UDF) WorkerOpened(pid int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mu.pids == nil {
		u.mu.pids = map[int]bool{}
	}
	u.mu.pids[pid] = true
	u.mu.opens++
	u.mu.peak = max(u.mu.peak, len(u.mu.pids))
	u.sampleLocked()
}

// WorkerGone takes a last sample of the workers' memory with worker pid
// (the figure stays after the last one went) and forgets pid.
func (u *UDF) WorkerGone(pid int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.mu.pids[pid] {
		return
	}
	u.sampleLocked()
	delete(u.mu.pids, pid)
}

// WorkerRetired forgets the open of a worker that an in-place rescale
// retired, and its place among the most that served at once: a worker
// grown again later takes a new place, it replaces no worker.
func (u *UDF) WorkerRetired() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mu.opens > 0 && u.mu.peak > 0 {
		u.mu.opens--
		u.mu.peak--
	}
}

// Restarts is the number of workers opened beyond the most that served
// the subtask at once: the workers a restart of the job replaced.
func (u *UDF) Restarts() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.mu.opens - u.mu.peak
}

// RSS returns the workers' resident set size in bytes, summed: a sample
// of /proc/<pid>/status at most rssSamplePeriod old while workers run
// (the read may take it), the last one after they went. Where /proc
// cannot tell (not Linux), 0.
func (u *UDF) RSS() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.mu.pids) > 0 && time.Since(u.mu.sampledAt) >= rssSamplePeriod {
		u.sampleLocked()
	}
	return u.mu.rss
}

// sampleLocked reads the workers' memory now; a worker /proc does not
// know (gone already) counts nothing. u.mu is held.
func (u *UDF) sampleLocked() {
	var sum int64
	for pid := range u.mu.pids {
		if n, err := ProcessRSS(pid); err == nil {
			sum += n
		}
	}
	u.mu.rss, u.mu.sampledAt = sum, time.Now()
}

// ProcessRSS reads the VmRSS line of /proc/<pid>/status, in bytes.
func ProcessRSS(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(procStatusRSSField))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, procStatusRSSField, sc.Text())
		}
		kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: %s %w", pid, procStatusRSSField, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s line (a kernel thread, or a zombie)", pid, procStatusRSSField)
}

// Values returns the metrics by their names (UDFMetricNames).
func (u *UDF) Values() map[string]float64 {
	answered, workerTime := u.Answered.Load(), time.Duration(u.WorkerTime.Load())
	perBatch := 0.0
	if answered > 0 {
		perBatch = float64(workerTime) / float64(time.Millisecond) / float64(answered)
	}
	return map[string]float64{
		UDFNumBatches: float64(u.Batches.Load()), UDFNumRecords: float64(u.Rows.Load()),
		UDFAccumulatedWorkerTime: float64(workerTime.Milliseconds()), UDFWorkerTimeMsPerBatch: perBatch,
		UDFBatchesInFlight: float64(u.InFlight.Load()), UDFWorkerRssBytes: float64(u.RSS()),
		UDFNumWorkerRestarts: float64(u.Restarts()),
	}
}

// UDFs holds the UDF metrics of a job's operator subtasks, made when an
// operator asks for them (For): only operators with a worker have any.
type UDFs struct {
	mu sync.Mutex
	m  map[int][]*UDF // by operator ID, then subtask
}

// NewUDFs returns an empty set.
func NewUDFs() *UDFs { return &UDFs{m: map[int][]*UDF{}} }

// For returns subtask's metrics of operator opID (of parallelism
// subtasks), made on first use.
func (s *UDFs) For(opID, subtask, parallelism int) *UDF {
	s.mu.Lock()
	defer s.mu.Unlock()
	subs := s.m[opID]
	if len(subs) < parallelism {
		subs = append(subs, make([]*UDF, parallelism-len(subs))...)
		s.m[opID] = subs
	}
	if subs[subtask] == nil {
		subs[subtask] = NewUDF()
	}
	return subs[subtask]
}

// Of returns operator opID's metrics by subtask (zero ones for subtasks
// that have not asked yet), nil when it has none.
func (s *UDFs) Of(opID int) []*UDF {
	s.mu.Lock()
	defer s.mu.Unlock()
	subs := s.m[opID]
	if subs == nil {
		return nil
	}
	out := make([]*UDF, len(subs))
	for i, u := range subs {
		if u == nil {
			u = NewUDF()
			subs[i] = u
		}
		out[i] = u
	}
	return out
}
