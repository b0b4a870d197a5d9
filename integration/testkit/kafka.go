package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// KafkaBroker is a real Kafka broker on loopback: Apache Kafka in KRaft mode
// (broker and controller in one JVM), from the jars of Maven Central, started
// by scripts/kafka/broker.sh. One runs per test package: Kafka starts it at
// the first test that asks, and KafkaMain stops it after the last.
type KafkaBroker struct {
	// Addr is the bootstrap address, 127.0.0.1:PORT.
	Addr string
	dir  string
	cmd  *exec.Cmd
	out  *lockedBuffer
	// exited is closed when the process has ended and been reaped.
	exited <-chan struct{}
}

// RequireKafkaEnv is the other variable (beside $FLINKGO_REQUIRE_PYTHON=1)
// that turns a broker that cannot start into a failure instead of a skip:
// CI sets CI=true.
const RequireKafkaEnv = "CI"

// brokerStartTimeout bounds a start: a JVM on two busy cores takes seconds.
const brokerStartTimeout = 3 * time.Minute

var (
	kafkaMu     sync.Mutex
	kafkaBroker *KafkaBroker
	kafkaErr    error
)

// Kafka returns the test package's broker, starting it on first use. When it
// cannot start (no Java or Maven, the jars not fetched, the broker failing)
// the test is skipped with the reason and how to fix it, or fails under
// `make test` ($FLINKGO_REQUIRE_PYTHON=1) and in CI (CI=true).
//
// A package whose tests call Kafka must have a TestMain calling KafkaMain,
// which stops the broker.
func Kafka(t testing.TB) *KafkaBroker {
	t.Helper()
	kafkaMu.Lock()
	defer kafkaMu.Unlock()
	if kafkaBroker == nil && kafkaErr == nil {
		kafkaBroker, kafkaErr = startKafka(RepoRoot(t))
	}
	if kafkaErr != nil {
		msg := fmt.Sprintf("testkit: this test needs a Kafka broker, which did not start: %v\n"+
			"Run `make setup` once (it installs Java and Maven if missing and fetches the Kafka jars).", kafkaErr)
		if os.Getenv(RequirePythonEnv) == "1" || os.Getenv(RequireKafkaEnv) == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return kafkaBroker
}

// KafkaMain runs the package's tests, stops its broker (if one started),
// checks that no broker process and no goroutine outlives them (goleak,
// with opts), and exits. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testkit.KafkaMain(m) }
func KafkaMain(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	kafkaMu.Lock()
	b := kafkaBroker
	kafkaBroker, kafkaErr = nil, nil
	kafkaMu.Unlock()
	if b != nil {
		pid := b.cmd.Process.Pid
		b.stop()
		if Alive(pid) {
			fmt.Fprintf(os.Stderr, "testkit: the Kafka broker (pid %d) is still running after its stop\n", pid)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startKafka starts a broker on free loopback ports. Ports are picked by
// binding and closing, so another process can take one first: a broker that
// exits before answering is started again on new ports, twice at most.
func startKafka(root string) (*KafkaBroker, error) {
	script := filepath.Join(root, "scripts", "kafka", "broker.sh")
	// Fetch the jars first (once per machine), outside the start timeout.
	if out, err := exec.Command(script, "jars").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s jars: %v: %s", script, err, bytes.TrimSpace(out))
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var b *KafkaBroker
		b, err = tryStartKafka(script)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errBrokerExited) {
			return nil, err
		}
	}
	return nil, err
}

var errBrokerExited = errors.New("the broker exited")

func tryStartKafka(script string) (*KafkaBroker, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flinkgo-kafka-")
	if err != nil {
		return nil, err
	}
	b := &KafkaBroker{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, out: &lockedBuffer{}}
	cmd := exec.Command(script, "run", dir, strconv.Itoa(port), strconv.Itoa(cport))
	cmd.Stdout, cmd.Stderr = b.out, b.out
	// Its own process group (stop kills the format step too) and killed with
	// the test binary should that die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the starting thread ends: keep this goroutine on
	// one thread while starting, and the runtime keeps that thread.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", script, err)
	}
	b.cmd = cmd
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	b.exited = exited
	testServers.Store(cmd.Process.Pid, true)
	if err := b.waitReady(exited); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// waitReady waits until the broker answers a metadata request listing itself.
func (b *KafkaBroker) waitReady(exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		brokers, err := adm.ListBrokers(attempt)
		cancelAttempt()
		if err == nil && len(brokers) > 0 {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%w before answering on %s:\n%s", errBrokerExited, b.Addr, b.logTail())
		case <-ctx.Done():
			return fmt.Errorf("the broker did not answer on %s within %v (last error: %v):\n%s",
				b.Addr, brokerStartTimeout, err, b.logTail())
		case <-tick.C:
		}
	}
}

// logTail is the script's output and the end of the broker's log, for errors.
func (b *KafkaBroker) logTail() string {
	log, _ := os.ReadFile(filepath.Join(b.dir, "server.log"))
	if len(log) > 4000 {
		log = log[len(log)-4000:]
	}
	return b.out.String() + string(log)
}

// stop kills the broker's process group, waits for it and removes its data.
func (b *KafkaBroker) stop() {
	if b.cmd != nil {
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.exited
		testServers.Delete(b.cmd.Process.Pid)
	}
	_ = os.RemoveAll(b.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Client returns a franz-go client of the broker with opts, closed at the
// end of the test.
func (b *KafkaBroker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// Metadata refreshed without the default 5 s pause: a topic just created
	// (or grown) is written and read at once.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client of the broker, closed at the end of the test.
func (b *KafkaBroker) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client(t))
}

var topicUnsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// CreateTopic creates a topic named after the test (unique in the package's
// broker) with the given partitions and returns its name.
func (b *KafkaBroker) CreateTopic(t testing.TB, partitions int32) string {
	t.Helper()
	name := topicUnsafe.ReplaceAllString(t.Name(), "_")
	if len(name) > 180 {
		name = name[:180]
	}
	name += "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	b.CreateNamedTopic(t, name, partitions)
	return name
}

// CreateNamedTopic creates topic with the given partitions (replication 1).
func (b *KafkaBroker) CreateNamedTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := b.Admin(t).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("testkit: creating Kafka topic %q: %v", topic, err)
	}
}

// AddPartitions grows topic to total partitions.
func (b *KafkaBroker) AddPartitions(t testing.TB, topic string, total int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := b.Admin(t).UpdatePartitions(ctx, total, topic)
	if err == nil {
		var r kadm.CreatePartitionsResponse
		r, err = resp.On(topic, nil)
		if err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("testkit: growing Kafka topic %q to %d partitions: %v", topic, total, err)
	}
}

// Produce writes each record synchronously to the partition its Partition
// field names, failing the test on the first error.
func (b *KafkaBroker) Produce(t testing.TB, records ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("testkit: producing %d records: %v", len(records), err)
	}
}

// Records reads topic from its start up to the end offsets of the moment of
// the call, of every partition. With readCommitted only committed
// transactional records count (isolation.level=read_committed), and the
// end is the last stable offset.
func (b *KafkaBroker) Records(t testing.TB, topic string, readCommitted bool) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := b.Admin(t)
	var ends kadm.ListedOffsets
	var err error
	if readCommitted {
		ends, err = adm.ListCommittedOffsets(ctx, topic)
	} else {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("testkit: listing the end offsets of %q: %v", topic, err)
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	// Control records (transaction markers) are kept so that the last offset
	// before the end is always seen, whatever it holds; they are not returned.
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("testkit: reading %q: partitions %v (partition: end offset) not read to their end in time "+
				"(Records needs every transaction below the end finished)", topic, remaining)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			t.Fatalf("testkit: reading %q partition %d: %v", topic, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			end, ok := remaining[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset == end-1 {
				delete(remaining, r.Partition)
			}
		})
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.buf.String())
}
