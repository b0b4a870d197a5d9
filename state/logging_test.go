package state

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/flinkgo/flinkgo/internal/logging/logtest"
)

// failOnce returns an injector failing the first operation of kind on a
// file whose name ends with suffix, once armed.
func failOnce(kind errorfs.OpKind, suffix string, armed *atomic.Bool) (errorfs.Injector, *atomic.Int32) {
	var hits atomic.Int32
	return errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && op.Kind == kind && strings.HasSuffix(op.Path, suffix) && hits.Add(1) == 1 {
			return errors.New("injected disk error")
		}
		return nil
	}), &hits
}

// openLogged opens a backend of t on the real file system wrapped by inj,
// logging at debug into the returned buffer, and writes some state.
func openLogged(t *testing.T, inj errorfs.Injector) (*Backend, *logtest.Buffer) {
	t.Helper()
	logs := &logtest.Buffer{}
	opts := testOptions(t, KeyGroupRange{Start: 0, End: 127})
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.fs = errorfs.Wrap(vfs.Default, inj)
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	v, err := NewValue(b, "value", Int64Codec{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := v.Put(testKey(i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	return b, logs
}

// A flush that fails writing its sstable is a Pebble background error:
// Pebble retries it, and the operator sees a warning naming the operator,
// the subtask and the cause.
func TestPebbleBackgroundErrorIsLogged(t *testing.T) {
	var armed atomic.Bool
	inj, hits := failOnce(errorfs.OpCreate, ".sst", &armed)
	b, logs := openLogged(t, inj)
	armed.Store(true)
	// PrepareSnapshot flushes the memtable: the first flush fails, the
	// retry succeeds.
	p, err := b.PrepareSnapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	p.Discard()
	if hits.Load() == 0 {
		t.Fatal("the flush created no sstable; nothing was injected")
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "pebble background error") {
			found = true
			for _, want := range []string{"level=WARN", "injected disk error", `state.operator=op/agg`, "state.subtask=0"} {
				if !strings.Contains(line, want) {
					t.Errorf("background error record lacks %q: %s", want, line)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no background error logged:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "pebble flush") {
		t.Errorf("the successful flush was not logged at debug:\n%s", logs)
	}
}

// A failed MANIFEST write is fatal to Pebble. Its Fatalf must not exit the
// process: the error is logged and the backend fails with ErrBackendFailed.
func TestPebbleFatalErrorFailsTheBackend(t *testing.T) {
	var armed atomic.Bool
	inj, hits := failOnce(errorfs.OpFileSync, "", &armed)
	b, logs := openLogged(t, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !strings.Contains(op.Path, "MANIFEST") {
			return nil
		}
		return inj.MaybeError(op)
	}))
	armed.Store(true)
	_, err := b.PrepareSnapshot(1)
	if hits.Load() == 0 {
		t.Fatal("the flush did not sync the MANIFEST; nothing was injected")
	}
	if !errors.Is(err, ErrBackendFailed) {
		t.Fatalf("PrepareSnapshot after a fatal Pebble error = %v; want ErrBackendFailed", err)
	}
	v, err := NewValue(b, "other", Int64Codec{})
	if !errors.Is(err, ErrBackendFailed) {
		t.Fatalf("registering a state on a failed backend = %v, %v; want ErrBackendFailed", v, err)
	}
	out := logs.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "state backend failed") ||
		!strings.Contains(out, "injected disk error") {
		t.Errorf("the fatal error was not logged at error:\n%s", out)
	}
}
