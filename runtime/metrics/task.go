package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// NoWatermark is the input watermark of a task that has received none
// (Flink shows Long.MIN_VALUE).
const NoWatermark = math.MinInt64

// NoPendingRecords is the PendingRecords of a task that knows no backlog.
const NoPendingRecords = -1

// Task counts one subtask of a chain. Its fields are written by the task
// goroutine and read from any goroutine.
type Task struct {
	// PendingRecords is a source's backlog (Flink's pendingRecords): the
	// records it is behind, NoPendingRecords when its reader does not know
	// (package source's Backlog). The autoscaler adds its growth to the
	// source's rate: a source held back by a slow consumer falls behind.
	PendingRecords atomic.Int64

	// RecordsIn and BytesIn count what reached the chain's head (from its
	// inbox, or read by its source); RecordsOut and BytesOut what left the
	// chain on its edges, or reached its sinks.
	RecordsIn, RecordsOut atomic.Int64
	BytesIn, BytesOut     atomic.Int64
	// Busy, Idle and BackPressured are nanoseconds: processing, waiting for
	// input, and blocked on a full downstream inbox (not counted as busy).
	Busy, Idle, BackPressured atomic.Int64
	// InputWatermark is the latest watermark of the chain's input, in
	// milliseconds, NoWatermark before the first.
	InputWatermark atomic.Int64
	// InputQueueBytes is the size of the batches queued in the task's
	// inbox (Flink's inputQueueSize), those of the producers blocked by a
	// checkpoint's alignment included; InputQueuePeakBytes the largest it
	// has been.
	InputQueueBytes, InputQueuePeakBytes atomic.Int64
}

// NewTask returns counters at zero with no watermark.
func NewTask() *Task {
	t := &Task{}
	t.InputWatermark.Store(NoWatermark)
	t.PendingRecords.Store(NoPendingRecords)
	return t
}

// AddIn counts a batch that reached the task.
func (t *Task) AddIn(b arrow.RecordBatch) {
	t.RecordsIn.Add(b.NumRows())
	t.BytesIn.Add(BatchBytes(b))
}

// AddOut counts a batch that left the task.
func (t *Task) AddOut(b arrow.RecordBatch) {
	t.RecordsOut.Add(b.NumRows())
	t.BytesOut.Add(BatchBytes(b))
}

// Since adds the time since start to the counter c, and returns now (the
// start of the next interval).
func Since(c *atomic.Int64, start time.Time) time.Time {
	now := time.Now()
	c.Add(int64(now.Sub(start)))
	return now
}

// BatchBytes is the size of a batch's Arrow buffers, as its IPC body
// would carry them (the figure numBytesIn/Out count: flinkgo's tasks
// exchange batches in memory, so no serialized size exists).
func BatchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}

// Totals is a reading of a Task's counters.
type Totals struct {
	RecordsIn, RecordsOut, BytesIn, BytesOut int64
	Busy, Idle, BackPressured                time.Duration
	InputWatermark                           int64
	InputQueueBytes, InputQueuePeakBytes     int64
	// PendingRecords is the source's backlog, NoPendingRecords when it
	// knows none.
	PendingRecords int64
}

// Read reads t's counters.
func (t *Task) Read() Totals {
	return Totals{
		RecordsIn: t.RecordsIn.Load(), RecordsOut: t.RecordsOut.Load(),
		BytesIn: t.BytesIn.Load(), BytesOut: t.BytesOut.Load(),
		Busy: time.Duration(t.Busy.Load()), Idle: time.Duration(t.Idle.Load()),
		BackPressured:   time.Duration(t.BackPressured.Load()),
		InputWatermark:  t.InputWatermark.Load(),
		InputQueueBytes: t.InputQueueBytes.Load(), InputQueuePeakBytes: t.InputQueuePeakBytes.Load(),
		PendingRecords: t.PendingRecords.Load(),
	}
}

// TaskMetricNames are the task metrics by Flink's names, in the order the
// REST API lists them.
var TaskMetricNames = []string{
	"numRecordsIn", "numRecordsOut", "numBytesIn", "numBytesOut",
	"numRecordsInPerSecond", "numRecordsOutPerSecond", "numBytesInPerSecond", "numBytesOutPerSecond",
	"busyTimeMsPerSecond", "idleTimeMsPerSecond", "backPressuredTimeMsPerSecond",
	"accumulatedBusyTime", "accumulatedIdleTime", "accumulatedBackpressuredTime",
	"currentInputWatermark", "inputQueueSize", "pendingRecords",
}

// Values returns a task's metrics by TaskMetricNames: its totals t and
// its rates r (zero ones for a task that ended). pendingRecords is -1
// (NoPendingRecords) for a task that knows no backlog, as
// currentInputWatermark is Long.MIN_VALUE before a watermark: Flink
// registers the gauge on sources that report one only.
func (t Totals) Values(r Rates) map[string]float64 {
	return map[string]float64{
		"numRecordsIn": float64(t.RecordsIn), "numRecordsOut": float64(t.RecordsOut),
		"numBytesIn": float64(t.BytesIn), "numBytesOut": float64(t.BytesOut),
		"numRecordsInPerSecond": r.RecordsInPerSecond, "numRecordsOutPerSecond": r.RecordsOutPerSecond,
		"numBytesInPerSecond": r.BytesInPerSecond, "numBytesOutPerSecond": r.BytesOutPerSecond,
		"busyTimeMsPerSecond": r.BusyTimeMsPerSecond, "idleTimeMsPerSecond": r.IdleTimeMsPerSecond,
		"backPressuredTimeMsPerSecond": r.BackPressuredTimeMsPerSecond,
		"accumulatedBusyTime":          float64(t.Busy.Milliseconds()), "accumulatedIdleTime": float64(t.Idle.Milliseconds()),
		"accumulatedBackpressuredTime": float64(t.BackPressured.Milliseconds()),
		"currentInputWatermark":        float64(t.InputWatermark),
		"inputQueueSize":               float64(t.InputQueueBytes),
		"pendingRecords":               float64(t.PendingRecords),
	}
}
