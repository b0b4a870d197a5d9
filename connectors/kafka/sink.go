package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// KafkaTransaction is a Kafka transaction a sink subtask flushed at a
// barrier (precommitted) and commits when the checkpoint completes: enough
// to commit it from any process (EndTxn with its producer id and epoch), as
// Flink's KafkaCommittable. JSON-serializable; part of SinkState.
type KafkaTransaction struct {
	TransactionalID string `json:"transactional_id"`
	ProducerID      int64  `json:"producer_id"`
	Epoch           int16  `json:"epoch"`
	Checkpoint      int64  `json:"checkpoint"` // committed when this checkpoint completes
}

// sinkProperties are the producer properties write_kafka supports.
var sinkProperties = map[string]string{
	"client.id":              "the client id the producers send",
	"transaction.timeout.ms": "how long the broker keeps a transaction open (default 900000, the broker's default maximum)",
	"linger.ms":              "how long a batch waits for more records (default 0)",
	"batch.size":             "the largest batch in bytes (default 1000012)",
	"compression.type":       "none, gzip, snappy, lz4 or zstd (default none)",
	"delivery.timeout.ms":    "how long a record may take to be acknowledged before the sink fails (default 120000)",
}

// SinkPropertyNames lists the supported producer properties, sorted.
func SinkPropertyNames() []string {
	names := make([]string, 0, len(sinkProperties))
	for k := range sinkProperties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// defaultTransactionTimeout is Kafka's default transaction.max.timeout.ms:
// a precommitted transaction must outlive the checkpoint interval plus a
// restart, or the broker aborts it and its rows are lost (the commit then
// fails with an error naming transaction.timeout.ms).
const defaultTransactionTimeout = 15 * time.Minute

// sinkSettings is a parsed KafkaSink.
type sinkSettings struct {
	servers    []string
	opts       []kgo.Opt // of every producer: brokers, topic, properties
	delivery   planpb.KafkaSink_Delivery
	txnTimeout time.Duration
}

func parseSink(k *planpb.KafkaSink) (sinkSettings, error) {
	var s sinkSettings
	var errs []error
	s.servers = strings.Split(k.GetBootstrapServers(), ",")
	for i := range s.servers {
		s.servers[i] = strings.TrimSpace(s.servers[i])
	}
	if k.GetBootstrapServers() == "" || slices.Contains(s.servers, "") {
		errs = append(errs, fmt.Errorf("bootstrap_servers %q is not a comma-separated list of host:port", k.GetBootstrapServers()))
	}
	if k.GetTopic() == "" {
		errs = append(errs, errors.New("no topic"))
	}
	s.delivery = k.GetDelivery()
	if s.delivery == planpb.KafkaSink_DELIVERY_UNSPECIFIED {
		s.delivery = planpb.KafkaSink_EXACTLY_ONCE
	}
	if _, ok := planpb.KafkaSink_Delivery_name[int32(s.delivery)]; !ok {
		errs = append(errs, fmt.Errorf("delivery %d is not exactly-once, at-least-once or none", s.delivery))
	}
	if s.delivery == planpb.KafkaSink_EXACTLY_ONCE {
		if err := checkTransactionalIDPrefix(k.GetTransactionalIdPrefix()); err != nil {
			errs = append(errs, err)
		}
	}
	s.opts = append(s.opts, kgo.SeedBrokers(s.servers...), kgo.ClientID("flinkgo"),
		kgo.DefaultProduceTopic(k.GetTopic()), kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.ProducerLinger(0))
	s.txnTimeout = defaultTransactionTimeout
	for key, v := range k.GetProperties() {
		bad := func(want string) { errs = append(errs, fmt.Errorf("property %s=%q: want %s", key, v, want)) }
		positive := func() (int64, bool) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 1<<31-1 {
				bad("a non-negative 32-bit integer")
				return 0, false
			}
			return n, true
		}
		switch key {
		case "client.id":
			s.opts = append(s.opts, kgo.ClientID(v))
		case "transaction.timeout.ms":
			if n, ok := positive(); ok {
				s.txnTimeout = time.Duration(n) * time.Millisecond
			}
		case "linger.ms":
			if n, ok := positive(); ok {
				s.opts = append(s.opts, kgo.ProducerLinger(time.Duration(n)*time.Millisecond))
			}
		case "batch.size":
			if n, ok := positive(); ok {
				s.opts = append(s.opts, kgo.ProducerBatchMaxBytes(int32(max(n, 1024))))
			}
		case "delivery.timeout.ms":
			if n, ok := positive(); ok {
				s.opts = append(s.opts, kgo.RecordDeliveryTimeout(time.Duration(n)*time.Millisecond))
			}
		case "compression.type":
			codecs := map[string]kgo.CompressionCodec{
				"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
				"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
			}
			c, ok := codecs[v]
			if !ok {
				bad("none, gzip, snappy, lz4 or zstd")
				continue
			}
			s.opts = append(s.opts, kgo.ProducerBatchCompression(c))
		default:
			hint := ""
			switch key {
			case "bootstrap.servers":
				hint = " (use bootstrap_servers=)"
			case "transactional.id":
				hint = " (use transactional_id_prefix=: each transaction gets its own id)"
			case "acks", "enable.idempotence":
				hint = " (every producer waits for all in-sync replicas and is idempotent)"
			}
			errs = append(errs, fmt.Errorf("property %q is not supported%s; supported: %s", key, hint, strings.Join(SinkPropertyNames(), ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("sink: write_kafka to %q: %w", k.GetTopic(), err)
	}
	return s, nil
}

// checkTransactionalIDPrefix: exactly-once needs a prefix, as Flink's
// KafkaSink: two jobs with one prefix would fence each other's
// transactions, so no default is derived.
func checkTransactionalIDPrefix(p string) error {
	if p == "" {
		return errors.New("delivery exactly-once needs a transactional_id_prefix, unique among the jobs writing to the cluster " +
			"(transactional ids are <prefix>-<subtask>-<n>)")
	}
	if len(p) > 200 {
		return fmt.Errorf("transactional_id_prefix %q is longer than 200 characters", p)
	}
	return nil
}

// transactionalID names transaction n of a subtask, as Flink's
// TransactionalIdFactory (prefix-subtask-offset). n is the subtask's own
// counter of transactions, carried in SinkState.Counter, not the
// checkpoint id: a checkpoint that never reached the sink leaves no gap, so
// the ids an attempt used after its last checkpoint are n, n+1, ... up to
// the first that was never used (see abortLingering).
func transactionalID(prefix string, subtask int, n int64) string {
	return fmt.Sprintf("%s-%d-%d", prefix, subtask, n)
}

// kafkaWriter writes one sink subtask's rows as Kafka records. Exactly-once:
// each checkpoint interval's rows go into one transaction with its own
// producer and transactional id; PreCommit flushes it and keeps it open,
// Commit commits it. At-least-once: PreCommit waits until every record
// sent is acknowledged. None: records are sent and not waited for until
// Close.
type kafkaWriter struct {
	k   *planpb.KafkaSink
	s   sinkSettings
	cfg connector.WriterConfig
	enc *kafkaEncoder

	mu      sync.Mutex
	cur     *kgo.Client // producer of the open transaction (or of every record when not exactly-once)
	curID   string
	counter int64 // the next transaction's number
	// precommitted transactions not committed yet, with their producers
	// (nil after Abort: committed by EndTxn from another client).
	pending []pendingTxn
	failed  error // first produce error: fails the writer
	closed  bool
}

type pendingTxn struct {
	KafkaTransaction
	producer *kgo.Client
}

var _ connector.Writer = (*kafkaWriter)(nil)

// kafkaOpTimeout bounds a flush-less broker round trip of the sink (a
// ping, a commit), so that an unreachable broker fails the task instead
// of hanging it.
const kafkaOpTimeout = 30 * time.Second

func openWriter(k *planpb.KafkaSink, cfg connector.WriterConfig) (*kafkaWriter, error) {
	s, err := parseSink(k)
	if err != nil {
		return nil, err
	}
	enc, err := newKafkaEncoder(k, cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("sink: write_kafka to %q: %w", k.GetTopic(), err)
	}
	w := &kafkaWriter{k: k, s: s, cfg: cfg, enc: enc}
	if cfg.Restoring {
		st, err := DecodeKafkaState(cfg.Restore)
		if err != nil {
			return nil, err
		}
		w.counter = st.Counter
	}
	if s.delivery != planpb.KafkaSink_EXACTLY_ONCE {
		if w.cur, err = w.newProducer(""); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// newProducer returns a producer (transactional when id is set) that has
// reached a broker, so that a wrong address fails here with a clear error.
func (w *kafkaWriter) newProducer(id string) (*kgo.Client, error) {
	opts := slices.Clone(w.s.opts)
	if id != "" {
		opts = append(opts, kgo.TransactionalID(id), kgo.TransactionTimeout(w.s.txnTimeout))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, w.errorf("%w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, w.unreachable(err)
	}
	return cl, nil
}

func (w *kafkaWriter) errorf(format string, args ...any) error {
	return fmt.Errorf("sink: write_kafka to %q (subtask %d): "+format, append([]any{w.k.GetTopic(), w.cfg.Subtask}, args...)...)
}

func (w *kafkaWriter) unreachable(err error) error {
	return w.errorf("cannot reach the Kafka brokers at %s: %w", w.k.GetBootstrapServers(), err)
}

func (w *kafkaWriter) Write(b arrow.RecordBatch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return connector.ErrClosed
	}
	if w.failed != nil {
		return w.failed
	}
	if b.NumRows() == 0 {
		return nil
	}
	recs, err := w.enc.encode(b)
	if err != nil {
		return w.errorf("%w", err)
	}
	if w.cur == nil { // exactly-once: the first row after a barrier opens a transaction
		id := transactionalID(w.k.GetTransactionalIdPrefix(), w.cfg.Subtask, w.counter)
		cl, err := w.newProducer(id)
		if err != nil {
			return err
		}
		if err := cl.BeginTransaction(); err != nil {
			cl.Close()
			return w.errorf("beginning transaction %s: %w", id, err)
		}
		w.cur, w.curID = cl, id
		w.counter++
	}
	for _, r := range recs {
		w.cur.Produce(context.Background(), r, w.produced)
	}
	return nil
}

// produced records the first failed record; the writer fails with it.
func (w *kafkaWriter) produced(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = w.errorf("producing a record: %w", err)
	}
}

// flush waits for every record sent to be acknowledged (w.mu held: the
// callbacks of failed records wait for it, so it is released meanwhile).
func (w *kafkaWriter) flush(cl *kgo.Client) error {
	w.mu.Unlock()
	err := cl.Flush(context.Background())
	w.mu.Lock()
	if err != nil {
		return w.errorf("flushing: %w", err)
	}
	return w.failed
}

func (w *kafkaWriter) PreCommit(checkpointID int64) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, connector.ErrClosed
	}
	if w.failed != nil {
		return nil, w.failed
	}
	switch w.s.delivery {
	case planpb.KafkaSink_NONE:
		return nil, nil
	case planpb.KafkaSink_AT_LEAST_ONCE:
		return nil, w.flush(w.cur)
	}
	if w.cur != nil {
		cl, id := w.cur, w.curID
		if err := w.flush(cl); err != nil {
			w.failed = err
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
		pid, epoch, err := cl.ProducerID(ctx)
		cancel()
		if err != nil {
			w.failed = w.errorf("transaction %s: %w", id, err)
			return nil, w.failed
		}
		w.pending = append(w.pending, pendingTxn{KafkaTransaction{id, pid, epoch, checkpointID}, cl})
		w.cur, w.curID = nil, ""
	}
	return json.Marshal(w.state())
}

func (w *kafkaWriter) state() KafkaState {
	st := KafkaState{Counter: w.counter}
	for _, p := range w.pending {
		st.Transactions = append(st.Transactions, p.KafkaTransaction)
	}
	return st
}

// KafkaState is an exactly-once Kafka sink subtask's checkpointed state,
// the bytes its PreCommit returns as JSON.
type KafkaState struct {
	// Counter is the subtask's next transaction number.
	Counter int64 `json:"counter"`
	// Transactions are the subtask's precommitted transactions, not known
	// to be committed.
	Transactions []KafkaTransaction `json:"transactions,omitempty"`
}

// DecodeKafkaState decodes a Kafka sink subtask's checkpointed state (nil:
// an empty state).
func DecodeKafkaState(b []byte) (KafkaState, error) {
	var st KafkaState
	if len(b) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("sink: the Kafka sink's checkpointed state does not decode: %w", err)
	}
	if st.Counter < 0 {
		return st, fmt.Errorf("sink: the Kafka sink's restored transaction counter %d is below 0", st.Counter)
	}
	return st, nil
}

// Commit commits the transactions precommitted for checkpoints up to
// checkpointID, with the producers that wrote them.
func (w *kafkaWriter) Commit(checkpointID int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && w.pending[0].Checkpoint <= checkpointID {
		if err := w.commit(w.pending[0]); err != nil {
			return err
		}
		w.pending = w.pending[1:]
	}
	return nil
}

func (w *kafkaWriter) commit(p pendingTxn) error {
	if p.producer == nil {
		return commitTransactions(w.k, w.s, []KafkaTransaction{p.KafkaTransaction})
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
	defer cancel()
	err := p.producer.EndTransaction(ctx, kgo.TryCommit)
	if err != nil {
		return w.errorf("committing transaction %s: %w%s", p.TransactionalID, err, timeoutHint(err))
	}
	p.producer.Close()
	return nil
}

// Close ends the input: the open transaction and every precommitted one
// are committed (exactly-once), or every record acknowledged.
func (w *kafkaWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.s.delivery != planpb.KafkaSink_EXACTLY_ONCE {
		err := w.flush(w.cur)
		w.cur.Close()
		return err
	}
	if w.cur != nil {
		if err := w.flush(w.cur); err != nil {
			w.abortCurrent()
			return err
		}
		w.pending = append(w.pending, pendingTxn{KafkaTransaction{TransactionalID: w.curID}, w.cur})
		w.cur = nil
	}
	for len(w.pending) > 0 {
		if err := w.commit(w.pending[0]); err != nil {
			w.closePending()
			return err
		}
		w.pending = w.pending[1:]
	}
	return nil
}

// Abort aborts the open transaction (no checkpoint owns it) and closes the
// producers; precommitted transactions stay open on the broker for Commit
// (by EndTxn from another client) or for recovery.
func (w *kafkaWriter) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if w.s.delivery != planpb.KafkaSink_EXACTLY_ONCE {
		w.cur.Close()
		return
	}
	w.abortCurrent()
	w.closePending()
}

func (w *kafkaWriter) abortCurrent() {
	if w.cur == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	// A failure leaves the transaction to the broker's timeout and to the
	// next attempt's recovery, which aborts it.
	if w.cur.AbortBufferedRecords(ctx) == nil {
		_ = w.cur.EndTransaction(ctx, kgo.TryAbort)
	}
	cancel()
	w.cur.Close()
	w.cur = nil
}

func (w *kafkaWriter) closePending() {
	for i := range w.pending {
		if w.pending[i].producer != nil {
			w.pending[i].producer.Close()
			w.pending[i].producer = nil
		}
	}
}

// validateSink checks a Kafka sink's options and that rows of schema can
// be encoded as its records, before the job starts.
func validateSink(k *planpb.KafkaSink, schema *arrow.Schema) error {
	if _, err := parseSink(k); err != nil {
		return err
	}
	if _, err := newKafkaEncoder(k, schema); err != nil {
		return fmt.Errorf("sink: write_kafka to %q: %w", k.GetTopic(), err)
	}
	return nil
}
