package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/source"
)

// The Kafka source reads topics as Flink's KafkaSource does, without its
// coordinator: every partition is a split, id "<topic>-<partition>", owned
// by the subtask kafkaOwner gives (Flink's KafkaSourceEnumerator rule: the
// topic's hash picks the first subtask, partitions go round-robin from
// there), so every subtask knows its partitions from the metadata alone.
// A split's Offset is {"next": n} (the offset of the next record to read)
// and, in bounded mode, "stop": the end offset at the start; the split is
// Done once read to it.
//
// Start offsets are resolved to numbers when a partition is first owned
// (starting_offsets on a fresh start; the earliest offset for a partition
// discovered later or absent from a restored checkpoint, as Flink), so a
// checkpoint never holds "latest", which would skip records on restore.
//
// A poller goroutine fetches with franz-go and hands the records of one
// partition at a time to Next, which decodes them on the task's goroutine,
// so that a batch comes from one split (per-partition watermarks,
// connector.SplitReporter). Next never blocks on Kafka: with nothing fetched it
// returns connector.ErrNoData and Available wakes the task. The poller also looks
// for new partitions (and topics of the pattern) every
// partition.discovery.interval.ms (5 minutes by default, as Flink; not in
// bounded mode).

// defaultDiscoveryInterval is Flink's default partition.discovery.interval.ms.
const defaultDiscoveryInterval = 5 * time.Minute

// kafkaTimeout bounds one metadata or offsets request of Open and of the
// poller: a broker that does not answer fails the source rather than
// hanging it.
const kafkaTimeout = 60 * time.Second

// sourceProperties are the supported properties: Kafka consumer settings
// and Flink KafkaSource options. Others are rejected, so that a setting
// never silently does nothing.
var sourceProperties = map[string]string{
	"client.id":                       "the client id the broker logs",
	"isolation.level":                 "read_uncommitted (default) or read_committed",
	"fetch.max.bytes":                 "bytes of one fetch response",
	"max.partition.fetch.bytes":       "bytes of one partition in a fetch response",
	"fetch.min.bytes":                 "bytes a fetch waits for",
	"fetch.max.wait.ms":               "how long a fetch waits for fetch.min.bytes (default 500)",
	"partition.discovery.interval.ms": "how often new partitions are looked for; 0 or less: never (default 300000)",
	"commit.offsets.on.checkpoint":    "commit offsets to group_id when a checkpoint completes (default true)",
}

// SourcePropertyNames are the properties a Kafka source supports, sorted.
func SourcePropertyNames() []string {
	names := make([]string, 0, len(sourceProperties))
	for k := range sourceProperties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

type kafkaOffset struct {
	Next int64  `json:"next"`
	Stop *int64 `json:"stop,omitempty"`
}

type kafkaSplit struct {
	id        string
	topic     string
	partition int32
	next      int64
	stop      int64 // -1: unbounded
	done      bool
}

// sourceSettings are a source's options, parsed and checked.
type sourceSettings struct {
	opts          []kgo.Opt
	readCommitted bool
	discovery     time.Duration // 0: none
	commit        bool
	pattern       *regexp.Regexp
}

func parseSource(src *planpb.KafkaSource) (sourceSettings, error) {
	var s sourceSettings
	var errs []error
	servers := strings.Split(src.GetBootstrapServers(), ",")
	for i := range servers {
		servers[i] = strings.TrimSpace(servers[i])
	}
	if src.GetBootstrapServers() == "" || slices.Contains(servers, "") {
		errs = append(errs, fmt.Errorf("bootstrap_servers %q is not a comma-separated list of host:port", src.GetBootstrapServers()))
	}
	s.opts = append(s.opts, kgo.SeedBrokers(servers...), kgo.ClientID("flinkgo"),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// New partitions are fetched at once, not after the default 5 s between metadata refreshes.
		kgo.MetadataMinAge(100*time.Millisecond),
		// Kafka's consumer default (franz-go's is 5 s): a fetch waiting for data
		// delays the first fetch of a partition added meanwhile by that much.
		kgo.FetchMaxWait(500*time.Millisecond))
	switch {
	case len(src.GetTopics()) > 0 && src.GetTopicPattern() != "":
		errs = append(errs, errors.New("both topics and a topic pattern are set"))
	case len(src.GetTopics()) == 0 && src.GetTopicPattern() == "":
		errs = append(errs, errors.New("no topic and no topic pattern"))
	case src.GetTopicPattern() != "":
		re, err := regexp.Compile("^(?:" + src.GetTopicPattern() + ")$")
		if err != nil {
			errs = append(errs, fmt.Errorf("topic pattern %q: %w", src.GetTopicPattern(), err))
		}
		s.pattern = re
	}
	s.discovery, s.commit = defaultDiscoveryInterval, true
	for k, v := range src.GetProperties() {
		bad := func(want string) { errs = append(errs, fmt.Errorf("property %s=%q: want %s", k, v, want)) }
		intVal := func() (int64, bool) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				bad("an integer")
			}
			return n, err == nil
		}
		switch k {
		case "client.id":
			s.opts = append(s.opts, kgo.ClientID(v))
		case "isolation.level":
			switch v {
			case "read_committed":
				s.readCommitted = true
				s.opts = append(s.opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			case "read_uncommitted":
			default:
				bad("read_committed or read_uncommitted")
			}
		case "fetch.max.bytes", "max.partition.fetch.bytes", "fetch.min.bytes":
			if n, ok := intVal(); ok {
				if n < 1 || n > 1<<31-1 {
					bad("a positive 32-bit integer")
					continue
				}
				switch k {
				case "fetch.max.bytes":
					s.opts = append(s.opts, kgo.FetchMaxBytes(int32(n)))
				case "max.partition.fetch.bytes":
					s.opts = append(s.opts, kgo.FetchMaxPartitionBytes(int32(n)))
				default:
					s.opts = append(s.opts, kgo.FetchMinBytes(int32(n)))
				}
			}
		case "fetch.max.wait.ms":
			if n, ok := intVal(); ok {
				if n < 1 {
					bad("a positive number of milliseconds")
					continue
				}
				s.opts = append(s.opts, kgo.FetchMaxWait(time.Duration(n)*time.Millisecond))
			}
		case "partition.discovery.interval.ms":
			if n, ok := intVal(); ok {
				s.discovery = max(0, time.Duration(n)*time.Millisecond)
			}
		case "commit.offsets.on.checkpoint":
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad("true or false")
			}
			s.commit = b
		default:
			hint := ""
			switch k {
			case "bootstrap.servers":
				hint = " (use bootstrap_servers=)"
			case "group.id":
				hint = " (use group_id=)"
			case "auto.offset.reset":
				hint = " (use starting_offsets=)"
			}
			errs = append(errs, fmt.Errorf("property %q is not supported%s; supported: %s", k, hint, strings.Join(SourcePropertyNames(), ", ")))
		}
	}
	if src.GetBoundedLatest() {
		s.discovery = 0 // as Flink: a bounded source reads the partitions of its start
	}
	if src.GetGroupId() == "" {
		s.commit = false
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("source: read_kafka: %w", err)
	}
	return s, nil
}

// validateSource checks a Kafka source's options without connecting.
func validateSource(src *planpb.KafkaSource, out *arrow.Schema) error {
	if _, err := parseSource(src); err != nil {
		return err
	}
	_, err := newKafkaColumns(src, out)
	return err
}

// kafkaOwner is the subtask of p that reads partition of topic: Flink's
// KafkaSourceEnumerator.getSplitOwner, with Java's String.hashCode.
func kafkaOwner(topic string, partition int32, p int) int {
	start := int((javaStringHash(topic)*31)&0x7FFFFFFF) % p
	return (start + int(partition)) % p
}

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over the
// UTF-16 code units, in 32-bit arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

func kafkaSplitID(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

// kafkaChunk is what the poller hands to Next: records of one partition,
// new splits, or an error.
type kafkaChunk struct {
	recs   []*kgo.Record
	splits []*kafkaSplit
	err    error
}

type kafkaReader struct {
	src  *planpb.KafkaSource
	cfg  connector.ReaderConfig
	set  sourceSettings
	cols *kafkaColumns
	cl   *kgo.Client
	adm  *kadm.Client
	log  *slog.Logger

	splits map[string]*kafkaSplit // owned, by id
	order  []string               // owned split ids, in the order they came
	cur    []*kgo.Record          // records handed over and not yet returned
	last   string
	// finishing is the bounded split whose last batch Next returned last:
	// done from the next call on.
	finishing *kafkaSplit

	ends      partitionEnds
	chunks    chan kafkaChunk
	avail     chan struct{}
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	// Offsets of checkpoints taken and not yet completed, to commit to the
	// group once they complete; the committer goroutine commits the latest.
	taken    map[int64]map[string]map[int32]int64
	toCommit chan map[string]map[int32]int64
}

func openReader(src *planpb.KafkaSource, cfg connector.ReaderConfig, restore map[string]connector.SplitState) (connector.Reader, error) {
	set, err := parseSource(src)
	if err != nil {
		return nil, err
	}
	cols, err := newKafkaColumns(src, cfg.Schema)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(set.opts...)
	if err != nil {
		return nil, fmt.Errorf("source: read_kafka: %w", err)
	}
	r := &kafkaReader{
		src: src, cfg: cfg, set: set, cols: cols, cl: cl, adm: kadm.NewClient(cl),
		log:    cfg.Logger,
		splits: map[string]*kafkaSplit{}, ends: partitionEnds{m: map[string]int64{}}, chunks: make(chan kafkaChunk, 4), avail: make(chan struct{}, 1),
		taken: map[int64]map[string]map[int32]int64{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	initial, err := r.discover(ctx, restore, true)
	if err != nil {
		cancel()
		cl.Close()
		return nil, err
	}
	r.addSplits(initial)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.poll(ctx)
	}()
	if set.commit {
		r.toCommit = make(chan map[string]map[int32]int64, 1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.commitLoop(ctx)
		}()
	}
	return r, nil
}

// topicPartitions lists the partitions of the source's topics (or of the
// topics matching its pattern). A listed topic that does not exist is an
// error.
func (r *kafkaReader) topicPartitions(ctx context.Context) (map[string][]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	var tds kadm.TopicDetails
	var err error
	if r.set.pattern != nil {
		tds, err = r.adm.ListTopics(ctx)
	} else {
		tds, err = r.adm.ListTopics(ctx, r.src.GetTopics()...)
	}
	if err != nil {
		return nil, fmt.Errorf("source: read_kafka: listing the topics at %s: %w", r.src.GetBootstrapServers(), err)
	}
	out := map[string][]int32{}
	for name, td := range tds {
		if r.set.pattern != nil && !r.set.pattern.MatchString(name) {
			continue
		}
		if td.Err != nil {
			return nil, fmt.Errorf("source: read_kafka: topic %q at %s: %w", name, r.src.GetBootstrapServers(), td.Err)
		}
		for p := range td.Partitions {
			out[name] = append(out[name], p)
		}
		slices.Sort(out[name])
	}
	return out, nil
}

// discover returns the owned partitions not yet known, with their start
// (and, bounded, stop) offsets resolved. initial: the partitions of the
// start, which take restore's positions or starting_offsets; later ones
// start at their earliest offset.
func (r *kafkaReader) discover(ctx context.Context, restore map[string]connector.SplitState, initial bool) ([]*kafkaSplit, error) {
	parts, err := r.topicPartitions(ctx)
	if err != nil {
		return nil, err
	}
	var fresh []*kafkaSplit
	need := map[string][]int32{} // partitions whose start offsets must be listed
	for topic, ps := range parts {
		for _, p := range ps {
			id := kafkaSplitID(topic, p)
			if _, known := r.splits[id]; known || kafkaOwner(topic, p, r.cfg.Parallelism) != r.cfg.Subtask {
				continue
			}
			s := &kafkaSplit{id: id, topic: topic, partition: p, next: -1, stop: -1}
			if st, ok := restore[id]; ok && initial {
				if err := s.restore(st); err != nil {
					return nil, err
				}
			}
			if s.next < 0 && !s.done {
				need[topic] = append(need[topic], p)
			}
			fresh = append(fresh, s)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	if err := r.resolveStarts(ctx, fresh, need, initial && restore == nil); err != nil {
		return nil, err
	}
	if r.src.GetBoundedLatest() {
		if err := r.resolveStops(ctx, fresh); err != nil {
			return nil, err
		}
	} else {
		r.seedEnds(ctx, fresh)
	}
	slices.SortFunc(fresh, func(a, b *kafkaSplit) int { return strings.Compare(a.id, b.id) })
	return fresh, nil
}

func (s *kafkaSplit) restore(st connector.SplitState) error {
	if st.Done {
		s.done = true
		return nil
	}
	if len(st.Offset) == 0 {
		return nil // never read: resolved like a new partition
	}
	var off kafkaOffset
	if err := source.DecodeOffset(s.id, st.Offset, &off); err != nil {
		return err
	}
	if off.Next < 0 || (off.Stop != nil && (*off.Stop < 0 || off.Next > *off.Stop)) {
		return source.BadOffset(s.id, "offset %s is not a Kafka position", st.Offset)
	}
	s.next = off.Next
	if off.Stop != nil {
		s.stop = *off.Stop
		s.done = s.next >= s.stop
	}
	return nil
}

// resolveStarts sets the next offset of the splits in need: by
// starting_offsets when fromStart, else the earliest offset.
func (r *kafkaReader) resolveStarts(ctx context.Context, splits []*kafkaSplit, need map[string][]int32, fromStart bool) error {
	if len(need) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	topics := make([]string, 0, len(need))
	for t := range need {
		topics = append(topics, t)
	}
	mode := planpb.KafkaSource_EARLIEST
	if fromStart && r.src.GetStart() != planpb.KafkaSource_START_UNSPECIFIED {
		mode = r.src.GetStart()
	}
	var listed kadm.ListedOffsets
	var err error
	switch mode {
	case planpb.KafkaSource_LATEST:
		if r.set.readCommitted {
			listed, err = r.adm.ListCommittedOffsets(ctx, topics...)
		} else {
			listed, err = r.adm.ListEndOffsets(ctx, topics...)
		}
	case planpb.KafkaSource_TIMESTAMP:
		listed, err = r.adm.ListOffsetsAfterMilli(ctx, r.src.GetStartTimestampMs(), topics...)
	default: // EARLIEST, OFFSETS (unlisted partitions start at the earliest)
		listed, err = r.adm.ListStartOffsets(ctx, topics...)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return fmt.Errorf("source: read_kafka: listing the start offsets of %v: %w", topics, err)
	}
	given := map[string]int64{}
	if mode == planpb.KafkaSource_OFFSETS {
		for _, o := range r.src.GetStartOffsets() {
			given[kafkaSplitID(o.GetTopic(), o.GetPartition())] = o.GetOffset()
		}
	}
	for _, s := range splits {
		if s.next >= 0 || s.done {
			continue
		}
		lo, ok := listed.Lookup(s.topic, s.partition)
		if !ok || lo.Offset < 0 {
			return fmt.Errorf("source: read_kafka: no start offset for partition %d of topic %q", s.partition, s.topic)
		}
		s.next = lo.Offset
		if off, ok := given[s.id]; ok {
			if off < 0 {
				return fmt.Errorf("source: read_kafka: starting offset %d of partition %d of topic %q is negative", off, s.partition, s.topic)
			}
			s.next = off
		}
	}
	return nil
}

// resolveStops sets the stop offset of bounded splits that have none: the
// end of the partition now (the last stable offset under read_committed).
func (r *kafkaReader) resolveStops(ctx context.Context, splits []*kafkaSplit) error {
	topics := map[string]bool{}
	for _, s := range splits {
		if s.stop < 0 && !s.done {
			topics[s.topic] = true
		}
	}
	if len(topics) == 0 {
		return nil
	}
	listed, err := r.listEnds(ctx, topics)
	if err != nil {
		return err
	}
	for _, s := range splits {
		if s.stop >= 0 || s.done {
			continue
		}
		lo, ok := listed.Lookup(s.topic, s.partition)
		if !ok || lo.Offset < 0 {
			return fmt.Errorf("source: read_kafka: no end offset for partition %d of topic %q", s.partition, s.topic)
		}
		s.stop = lo.Offset
		s.done = s.next >= s.stop
	}
	return nil
}

// listEnds lists the end offsets of topics' partitions (the last stable
// offsets under read_committed).
func (r *kafkaReader) listEnds(ctx context.Context, topics map[string]bool) (kadm.ListedOffsets, error) {
	ctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	var listed kadm.ListedOffsets
	var err error
	if r.set.readCommitted {
		listed, err = r.adm.ListCommittedOffsets(ctx, names...)
	} else {
		listed, err = r.adm.ListEndOffsets(ctx, names...)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("source: read_kafka: listing the end offsets of %v: %w", names, err)
	}
	return listed, nil
}

// seedEnds records the ends of new unbounded splits, so that their
// backlog is known before the poller hands over their first records (it
// takes one partition's at a time: under backpressure the others wait).
// Without them the backlog counts from the fetches alone: a failure is
// logged, not fatal.
func (r *kafkaReader) seedEnds(ctx context.Context, splits []*kafkaSplit) {
	topics := map[string]bool{}
	for _, s := range splits {
		topics[s.topic] = true
	}
	if len(topics) == 0 {
		return
	}
	listed, err := r.listEnds(ctx, topics)
	if err != nil {
		r.log.Warn("read_kafka: the backlog (pendingRecords) counts from the fetches only", "error", err)
		return
	}
	r.ends.mu.Lock()
	defer r.ends.mu.Unlock()
	for _, s := range splits {
		if lo, ok := listed.Lookup(s.topic, s.partition); ok && lo.Offset > r.ends.m[s.id] {
			r.ends.m[s.id] = lo.Offset
		}
	}
}

// addSplits takes new splits over (Next's goroutine, or Open) and starts
// fetching them.
func (r *kafkaReader) addSplits(splits []*kafkaSplit) {
	fetch := map[string]map[int32]kgo.Offset{}
	for _, s := range splits {
		if _, known := r.splits[s.id]; known {
			continue
		}
		r.splits[s.id] = s
		r.order = append(r.order, s.id)
		if s.done {
			continue
		}
		if fetch[s.topic] == nil {
			fetch[s.topic] = map[int32]kgo.Offset{}
		}
		fetch[s.topic][s.partition] = kgo.NewOffset().At(s.next)
	}
	r.cl.AddConsumePartitions(fetch)
}

// poll fetches records and, every discovery interval, new partitions,
// until ctx ends. Its sends block while Next has not taken what came
// before: backpressure.
func (r *kafkaReader) poll(ctx context.Context) {
	var discover <-chan time.Time
	if r.set.discovery > 0 {
		t := time.NewTicker(r.set.discovery)
		defer t.Stop()
		discover = t.C
	}
	send := func(c kafkaChunk) bool {
		select {
		case r.chunks <- c:
		case <-ctx.Done():
			return false
		}
		select {
		case r.avail <- struct{}{}:
		default:
		}
		return true
	}
	known := map[string]bool{} // partitions handed over, for discovery
	for _, id := range r.order {
		known[id] = true
	}
	for ctx.Err() == nil {
		select {
		case <-discover:
			fresh, err := r.discoverNew(ctx, known)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// As Flink's enumerator, a failed discovery fails the source.
				send(kafkaChunk{err: err})
				return
			}
			if len(fresh) > 0 && !send(kafkaChunk{splits: fresh}) {
				return
			}
			continue
		default:
		}
		pollCtx, cancel := context.WithTimeout(ctx, pollSlice(r.set.discovery))
		fetches := r.cl.PollRecords(pollCtx, r.cfg.BatchRows)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var fetchErr error
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if fetchErr == nil {
				fetchErr = fmt.Errorf("source: read_kafka: fetching partition %d of topic %q: %w", p, topic, err)
			}
		})
		if fetchErr != nil {
			send(kafkaChunk{err: fetchErr})
			return
		}
		ok := true
		r.ends.record(fetches, r.set.readCommitted)
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if ok && len(p.Records) > 0 {
				ok = send(kafkaChunk{recs: p.Records})
			}
		})
		if !ok {
			return
		}
	}
}

// pollSlice is how long one poll waits for records before the poller
// checks whether discovery is due.
func pollSlice(discovery time.Duration) time.Duration {
	if discovery > 0 && discovery < time.Second {
		return discovery
	}
	return time.Second
}

// discoverNew finds partitions not in known (and records them there).
func (r *kafkaReader) discoverNew(ctx context.Context, known map[string]bool) ([]*kafkaSplit, error) {
	parts, err := r.topicPartitions(ctx)
	if err != nil {
		return nil, err
	}
	need := map[string][]int32{}
	var fresh []*kafkaSplit
	for topic, ps := range parts {
		for _, p := range ps {
			id := kafkaSplitID(topic, p)
			if known[id] || kafkaOwner(topic, p, r.cfg.Parallelism) != r.cfg.Subtask {
				continue
			}
			fresh = append(fresh, &kafkaSplit{id: id, topic: topic, partition: p, next: -1, stop: -1})
			need[topic] = append(need[topic], p)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	if err := r.resolveStarts(ctx, fresh, need, false); err != nil {
		return nil, err
	}
	r.seedEnds(ctx, fresh)
	for _, s := range fresh {
		known[s.id] = true
	}
	slices.SortFunc(fresh, func(a, b *kafkaSplit) int { return strings.Compare(a.id, b.id) })
	return fresh, nil
}

// Next returns the next batch of one partition's records, connector.ErrNoData when
// nothing is fetched, or io.EOF once every partition of a bounded source
// is read to its stop offset.
func (r *kafkaReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.finishing != nil {
		r.finishing.done, r.finishing = true, nil
	}
	for {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if len(r.cur) == 0 {
			if r.src.GetBoundedLatest() && r.allDone() {
				return nil, io.EOF
			}
			select {
			case c := <-r.chunks:
				if c.err != nil {
					return nil, c.err
				}
				if len(c.splits) > 0 {
					r.addSplits(c.splits)
					continue
				}
				r.cur = c.recs
			default:
				return nil, connector.ErrNoData
			}
		}
		b, err := r.take()
		if err != nil || b != nil {
			return b, err
		}
	}
}

func (r *kafkaReader) allDone() bool {
	for _, s := range r.splits {
		if !s.done {
			return false
		}
	}
	return true
}

// take decodes up to BatchRows of the current records (of one partition),
// advancing the split; nil without error when they held no rows (control
// records, tombstones, records past a bounded split's stop).
func (r *kafkaReader) take() (arrow.RecordBatch, error) {
	first := r.cur[0]
	s, ok := r.splits[kafkaSplitID(first.Topic, first.Partition)]
	if !ok || s.done || (s.stop >= 0 && s.next >= s.stop) {
		r.cur = nil // a partition no longer read (bounded: past its stop)
		return nil, nil
	}
	rows := make([]*kgo.Record, 0, min(len(r.cur), r.cfg.BatchRows))
	used := 0
	for _, rec := range r.cur {
		if len(rows) == r.cfg.BatchRows {
			break
		}
		used++
		if rec.Offset < s.next {
			continue // fetched before a restart of the fetch position
		}
		if s.stop >= 0 && rec.Offset >= s.stop {
			used = len(r.cur)
			break
		}
		s.next = rec.Offset + 1
		if rec.Attrs.IsControl() || (rec.Value == nil && r.cols.format != planpb.KafkaSource_RAW) {
			continue
		}
		rows = append(rows, rec)
	}
	r.cur = r.cur[used:]
	if s.stop >= 0 && s.next >= s.stop {
		r.cur = nil
		r.cl.RemoveConsumePartitions(map[string][]int32{s.topic: {s.partition}})
		if len(rows) > 0 {
			// Done at the next Next, as a file split: the batch returned now is
			// still of a pending split for the watermark assigner chained after.
			r.finishing = s
		} else {
			s.done = true
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r.last = s.id
	return r.cols.decode(rows, r.cfg.Allocator)
}

// PendingRecords is the records between each owned partition's position
// and its end (Flink's pendingRecords of the KafkaSource: the consumer's
// lag), summed. An unbounded partition's end is its high watermark
// (read_committed: last stable offset) as listed when the partition was
// first owned, then as the latest fetch whose records the poller took
// saw it (every fetch response carries it: no request of its own), so
// records written since are not counted yet; a bounded partition's end
// is its stop offset. Control records and tombstones count, as offsets
// do (connector.Backlog).
func (r *kafkaReader) PendingRecords() int64 {
	r.ends.mu.Lock()
	defer r.ends.mu.Unlock()
	var n int64
	for id, s := range r.splits {
		end, ok := r.ends.m[id]
		if s.stop >= 0 {
			end, ok = s.stop, true
		}
		if ok && !s.done {
			n += max(0, end-s.next)
		}
	}
	return n
}

// partitionEnds are the unbounded partitions' ends, by split id (see
// PendingRecords); the poller and Open write them, Next's goroutine reads
// them.
type partitionEnds struct {
	mu sync.Mutex
	m  map[string]int64
}

func (e *partitionEnds) record(fetches kgo.Fetches, readCommitted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Err != nil {
			return
		}
		end := p.HighWatermark
		if readCommitted {
			end = p.LastStableOffset
		}
		if id := kafkaSplitID(p.Topic, p.Partition); end > e.m[id] {
			e.m[id] = end
		}
	})
}

// Available is signaled when the poller handed something over.
func (r *kafkaReader) Available() <-chan struct{} { return r.avail }

// LastSplit is the partition the last batch came from.
func (r *kafkaReader) LastSplit() string { return r.last }

// PendingSplits are the owned partitions not read to their end (all of
// them when unbounded), in the order they were taken.
func (r *kafkaReader) PendingSplits() []string {
	ids := make([]string, 0, len(r.order))
	for _, id := range r.order {
		if !r.splits[id].done {
			ids = append(ids, id)
		}
	}
	return ids
}

// Snapshot returns the position of every owned partition.
func (r *kafkaReader) Snapshot() ([]connector.SplitState, error) {
	out := make([]connector.SplitState, 0, len(r.order))
	for _, id := range r.order {
		s := r.splits[id]
		st := connector.SplitState{Split: id, Done: s.done}
		if !s.done {
			off := kafkaOffset{Next: s.next}
			if s.stop >= 0 {
				stop := s.stop
				off.Stop = &stop
			}
			st.Offset = source.EncodeOffset(off)
		}
		out = append(out, st)
	}
	return out, nil
}

// CheckpointTaken remembers the offsets of checkpoint id, to commit them
// when it completes.
func (r *kafkaReader) CheckpointTaken(id int64) {
	if r.toCommit == nil {
		return
	}
	offs := map[string]map[int32]int64{}
	for _, s := range r.splits {
		if offs[s.topic] == nil {
			offs[s.topic] = map[int32]int64{}
		}
		offs[s.topic][s.partition] = s.next
	}
	r.taken[id] = offs
}

// CheckpointComplete hands the offsets of checkpoint id to the committer
// (replacing ones it has not committed yet) and forgets older ones.
func (r *kafkaReader) CheckpointComplete(id int64) {
	if r.toCommit == nil {
		return
	}
	offs, ok := r.taken[id]
	for k := range r.taken {
		if k <= id {
			delete(r.taken, k)
		}
	}
	if !ok {
		return
	}
	select {
	case <-r.toCommit: // an older one not committed yet
	default:
	}
	r.toCommit <- offs
}

// commitLoop commits offsets to the group, for monitoring (as Flink, a
// failed commit is logged and the job goes on: restores use checkpoints).
func (r *kafkaReader) commitLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case offs := <-r.toCommit:
			commit := make(kadm.Offsets)
			for t, ps := range offs {
				for p, o := range ps {
					commit.Add(kadm.Offset{Topic: t, Partition: p, At: o, LeaderEpoch: -1})
				}
			}
			cctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
			resp, err := r.adm.CommitOffsets(cctx, r.src.GetGroupId(), commit)
			cancel()
			if err == nil {
				err = resp.Error()
			}
			if err != nil && ctx.Err() == nil {
				r.log.Warn("read_kafka: committing offsets to the consumer group failed (they serve monitoring only)",
					"group", r.src.GetGroupId(), "error", err)
			}
		}
	}
}

// Close stops the poller and the committer and closes the client. Safe to
// call twice.
func (r *kafkaReader) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		// Closing the client first ends requests in flight at once (a commit
		// can be retrying to find the group's coordinator).
		r.cl.Close()
		r.wg.Wait()
		for {
			select {
			case <-r.chunks:
			default:
				return
			}
		}
	})
	return nil
}

var (
	_ connector.Waiter             = (*kafkaReader)(nil)
	_ connector.SplitReporter      = (*kafkaReader)(nil)
	_ connector.CheckpointListener = (*kafkaReader)(nil)
	_ connector.Backlog            = (*kafkaReader)(nil)
)
