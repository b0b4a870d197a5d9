package job

// A connector defined in this file alone, registered through
// Options.Connectors, runs a checkpointed job end to end: its source's
// splits and offsets (its own bytes) resume after a failure, and its
// two-phase sink's transactions (its own bytes) are committed exactly once
// across the restart.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/connectors/builtin"
	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// ticksSplits is the number of splits of a ticks source: split k has the
// rows r < rows with r mod ticksSplits = k, and goes to subtask k mod p.
const ticksSplits = 4

// ticksConfig is the ticks source's wire config (JSON).
type ticksConfig struct {
	Rows int64 `json:"rows"`
	// FailOnce makes a reader that has returned half its rows wait for a
	// checkpoint taken there to complete, then fail (once per test).
	FailOnce string `json:"fail_once,omitempty"`
}

// failedOnce: the FailOnce names that have failed.
var failedOnce sync.Map

func ticksSource() connector.SourceConnector {
	return connector.SourceConnector{Kind: "ticks", Decode: func(wire *planpb.Source) (connector.Source, error) {
		var c ticksConfig
		if err := json.Unmarshal(wire.GetConnector().GetConfig(), &c); err != nil {
			return nil, fmt.Errorf("ticks: %w", err)
		}
		if c.Rows <= 0 {
			return nil, fmt.Errorf("ticks: rows is %d; it must be positive", c.Rows)
		}
		return ticks(c), nil
	}}
}

type ticks ticksConfig

func (ticks) CheckSchema(s *arrow.Schema) error {
	if s.NumFields() != 1 || s.Field(0).Type.ID() != arrow.INT64 {
		return fmt.Errorf("ticks: the source has one int64 column, not %s", s)
	}
	return nil
}

func (ticks) Boundedness() connector.Boundedness { return connector.Boundedness{Bounded: true} }

// ticksOffset is a split's position: its rows returned.
type ticksOffset struct {
	Next int64 `json:"next"`
}

func (t ticks) Open(cfg connector.ReaderConfig) (connector.Reader, error) {
	cfg = cfg.WithDefaults()
	r := &ticksReader{cfg: cfg, src: t, avail: make(chan struct{}, 1), waitFor: -1}
	for k := range int64(ticksSplits) {
		if int(k)%cfg.Parallelism != cfg.Subtask {
			continue
		}
		s := &ticksSplit{id: fmt.Sprintf("ticks-%d", k), k: k}
		for _, st := range cfg.Restore {
			if st.Split != s.id || len(st.Offset) == 0 {
				continue
			}
			var off ticksOffset
			if err := json.Unmarshal(st.Offset, &off); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", connector.ErrBadOffset, s.id, err)
			}
			s.next = off.Next
		}
		r.splits = append(r.splits, s)
	}
	return r, nil
}

type ticksSplit struct {
	id      string
	k, next int64
}

// row is the value of the split's i-th row, and whether it has one.
func (s *ticksSplit) row(rows, i int64) (int64, bool) {
	v := s.k + i*ticksSplits
	return v, v < rows
}

type ticksReader struct {
	cfg    connector.ReaderConfig
	src    ticks
	splits []*ticksSplit
	// The failure: paused at half the rows, waiting for checkpoint
	// waitFor (taken while paused) to complete.
	avail    chan struct{}
	paused   bool
	waitFor  int64
	complete bool
}

func (r *ticksReader) returned() (n int64) {
	for _, s := range r.splits {
		n += s.next
	}
	return n
}

func (r *ticksReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if name := r.src.FailOnce; name != "" {
		if _, failed := failedOnce.Load(name); !failed && r.returned() >= r.src.Rows/int64(2*r.cfg.Parallelism) {
			if r.complete {
				failedOnce.Store(name, true)
				return nil, errors.New("ticks: the failure the test asked for")
			}
			r.paused = true
			return nil, connector.ErrNoData
		}
	}
	b := array.NewInt64Builder(r.cfg.Allocator)
	defer b.Release()
	for _, s := range r.splits {
		for b.Len() < 100 {
			v, ok := s.row(r.src.Rows, s.next)
			if !ok {
				break
			}
			b.Append(v)
			s.next++
		}
		if b.Len() > 0 {
			break
		}
	}
	if b.Len() == 0 {
		return nil, io.EOF
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(r.cfg.Schema, []arrow.Array{col}, int64(col.Len())), nil
}

func (r *ticksReader) Snapshot() ([]connector.SplitState, error) {
	var out []connector.SplitState
	for _, s := range r.splits {
		off, err := json.Marshal(ticksOffset{Next: s.next})
		if err != nil {
			return nil, err
		}
		_, more := s.row(r.src.Rows, s.next)
		out = append(out, connector.SplitState{Split: s.id, Offset: off, Done: !more})
	}
	return out, nil
}

func (r *ticksReader) Available() <-chan struct{} { return r.avail }

func (r *ticksReader) CheckpointTaken(id int64) {
	if r.paused && r.waitFor < 0 {
		r.waitFor = id
	}
}

func (r *ticksReader) CheckpointComplete(id int64) {
	if r.waitFor >= 0 && id >= r.waitFor {
		r.complete = true
		select {
		case r.avail <- struct{}{}:
		default:
		}
	}
}

func (r *ticksReader) Close() error { return nil }

// ledger is the ticks sink's store: the rows of committed transactions,
// and the open ones by transaction id.
type ledger struct {
	mu        sync.Mutex
	committed []int64
	open      map[string][]int64
	commits   int
}

var ledgers sync.Map // name -> *ledger

func ledgerOf(name string) *ledger {
	l, _ := ledgers.LoadOrStore(name, &ledger{open: map[string][]int64{}})
	return l.(*ledger)
}

// commit commits the open transactions ids; one committed before (not
// open) counts as done.
func (l *ledger) commit(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if rows, ok := l.open[id]; ok {
			l.committed = append(l.committed, rows...)
			l.commits++
			delete(l.open, id)
		}
	}
}

// ledgerState is a ledger writer's checkpointed state: its precommitted
// transactions not known to be committed.
type ledgerState struct {
	Transactions []string `json:"transactions"`
	Checkpoints  []int64  `json:"checkpoints"`
}

func ledgerSink() connector.SinkConnector {
	return connector.SinkConnector{Kind: "ledger", Decode: func(wire *planpb.Sink) (connector.Sink, error) {
		name := string(wire.GetConnector().GetConfig())
		if name == "" {
			return nil, errors.New("ledger: the config names no ledger")
		}
		return ledgerConfig{ledgerOf(name)}, nil
	}}
}

type ledgerConfig struct{ l *ledger }

func (ledgerConfig) CheckSchema(*arrow.Schema) error { return nil }
func (ledgerConfig) Changelog() connector.Changelog  { return connector.Changelog{} }
func (ledgerConfig) CheckChangelog(in connector.ChangelogInput) error {
	return fmt.Errorf("ledger sink %s takes no %s", in.Sink, in.Mode)
}
func (ledgerConfig) CommitsAtCheckpoints() bool { return true }
func (ledgerConfig) HoldsOutputUntilEnd() bool  { return false }
func (ledgerConfig) Prepare(bool, beneath.Paths) (connector.Prepared, error) {
	return nil, nil
}

func (c ledgerConfig) Open(cfg connector.WriterConfig) (connector.Writer, error) {
	return &ledgerWriter{l: c.l, prefix: fmt.Sprintf("%s-%d", cfg.AttemptID, cfg.Subtask)}, nil
}

// Recover commits what the restored states precommitted and aborts every
// other open transaction: a failed attempt's lingering ones.
func (c ledgerConfig) Recover(rc connector.RecoverContext) error {
	var states [][]byte
	for _, b := range rc.States {
		states = append(states, b)
	}
	if err := c.CommitFinal(states, nil); err != nil {
		return err
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	clear(c.l.open)
	return nil
}

func (c ledgerConfig) CommitFinal(states [][]byte, _ beneath.Paths) error {
	for _, b := range states {
		var st ledgerState
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("ledger: state %q: %w", b, err)
		}
		c.l.commit(st.Transactions)
	}
	return nil
}

type ledgerWriter struct {
	l       *ledger
	prefix  string
	rows    []int64
	pending ledgerState
}

func (w *ledgerWriter) Write(b arrow.RecordBatch) error {
	w.rows = append(w.rows, b.Column(0).(*array.Int64).Int64Values()...)
	return nil
}

func (w *ledgerWriter) PreCommit(id int64) ([]byte, error) {
	txn := fmt.Sprintf("%s-%d", w.prefix, id)
	w.l.mu.Lock()
	w.l.open[txn] = w.rows
	w.l.mu.Unlock()
	w.rows = nil
	w.pending.Transactions = append(w.pending.Transactions, txn)
	w.pending.Checkpoints = append(w.pending.Checkpoints, id)
	return json.Marshal(w.pending)
}

func (w *ledgerWriter) Commit(id int64) error {
	i := 0
	for i < len(w.pending.Checkpoints) && w.pending.Checkpoints[i] <= id {
		i++
	}
	w.l.commit(w.pending.Transactions[:i])
	w.pending.Transactions, w.pending.Checkpoints = w.pending.Transactions[i:], w.pending.Checkpoints[i:]
	return nil
}

func (w *ledgerWriter) Close() error {
	if _, err := w.PreCommit(1 << 62); err != nil {
		return err
	}
	return w.Commit(1 << 62)
}

func (w *ledgerWriter) Abort() {}

func TestConnectorFromTheTestRunsAJobExactlyOnceAcrossAFailure(t *testing.T) {
	const rows = 4000
	schema, err := arrowipc.EncodeSchema(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	connectors, err := builtin.Registry().With([]connector.SourceConnector{ticksSource()}, []connector.SinkConnector{ledgerSink()})
	if err != nil {
		t.Fatal(err)
	}
	name := t.Name()
	srcConfig, err := json.Marshal(ticksConfig{Rows: rows, FailOnce: name})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "ticks", Name: "ticks", OutputSchema: schema, Parallelism: 2,
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Connector{
				Connector: &planpb.ConnectorSource{Kind: "ticks", Config: srcConfig}}}}},
		{Id: 2, Uid: "ledger", Name: "ledger", OutputSchema: schema, Parallelism: 3, Inputs: []*planpb.Input{{Node: 1}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Connector{
				Connector: &planpb.ConnectorSink{Kind: "ledger", Config: []byte(name)}}}}},
	}
	cfg := checkpointConfig(t.TempDir(), config.ConfigRestartStrategy, "fixed-delay",
		config.ConfigFixedDelayAttempts, "2", config.ConfigFixedDelay, "10 ms")
	g, err := plan.PlanWire(&planpb.JobPlan{Name: "ticks", Config: cfg, Nodes: nodes}, plan.Options{Connectors: connectors})
	if err != nil {
		t.Fatal(err)
	}
	j, err := Start(context.Background(), g, Options{Connectors: connectors})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, failed := failedOnce.Load(name); !failed || j.Attempts() < 2 {
		t.Fatalf("the source did not fail once (attempts %d): the test checks nothing", j.Attempts())
	}
	l := ledgerOf(name)
	l.mu.Lock()
	defer l.mu.Unlock()
	got := slices.Sorted(slices.Values(l.committed))
	if len(got) != rows {
		t.Fatalf("the ledger committed %d rows, want %d once each", len(got), rows)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("committed row %d is %d: rows lost or duplicated across the restart", i, v)
		}
	}
	if len(l.open) != 0 {
		t.Errorf("transactions left open: %v", l.open)
	}
}

// The planner asks the test's connector which changelogs its sink takes,
// and refuses an aggregation's updates with the connector's message.
func TestConnectorFromTheTestRefusesAChangelogByItsOwnMessage(t *testing.T) {
	connectors, err := builtin.Registry().With([]connector.SourceConnector{ticksSource()}, []connector.SinkConnector{ledgerSink()})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(names ...string) []byte {
		var fields []arrow.Field
		for _, n := range names {
			fields = append(fields, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int64})
		}
		b, err := arrowipc.EncodeSchema(arrow.NewSchema(fields, nil))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nodes := []*planpb.Node{
		{Id: 1, Uid: "ticks", Name: "ticks", OutputSchema: schema("n"),
			Kind: &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Connector{
				Connector: &planpb.ConnectorSource{Kind: "ticks", Config: []byte(`{"rows": 10}`)}}}}},
		{Id: 2, Uid: "counts", Name: "counts", OutputSchema: schema("n", "c"),
			Inputs: []*planpb.Input{{Node: 1, Partitioning: &planpb.Partitioning{Kind: planpb.Partitioning_HASH, Keys: []string{"n"}}}},
			Kind: &planpb.Node_KeyedAggregate{KeyedAggregate: &planpb.KeyedAggregate{Keys: []string{"n"}, Emit: planpb.KeyedAggregate_EMIT_UPDATES,
				Aggregates: []*planpb.Aggregate{{Function: "count", Name: "c"}}}}},
		{Id: 3, Uid: "ledger", Name: "ledger", OutputSchema: schema("n", "c"), Inputs: []*planpb.Input{{Node: 2}},
			Kind: &planpb.Node_Sink{Sink: &planpb.Sink{Kind: &planpb.Sink_Connector{
				Connector: &planpb.ConnectorSink{Kind: "ledger", Config: []byte(t.Name())}}}}},
	}
	_, err = plan.PlanWire(&planpb.JobPlan{Name: "counts", Nodes: nodes}, plan.Options{Connectors: connectors})
	if err == nil || !strings.Contains(err.Error(), `ledger sink "ledger"`) {
		t.Fatalf("planning an aggregation's updates into the ledger: %v; want the ledger's refusal", err)
	}
	// Without the test's connectors the runtime names the kind it lacks.
	_, err = plan.PlanWire(&planpb.JobPlan{Name: "counts", Nodes: nodes}, plan.Options{Connectors: builtin.Registry()})
	if err == nil || !strings.Contains(err.Error(), `no source connector "ticks"`) {
		t.Fatalf("planning without the test's connectors: %v", err)
	}
}
