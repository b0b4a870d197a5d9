package pluginrunner

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// The adapter's contract with go-plugin: its own records are debug at
// most, the worker's (through Named(interpreter)) keep their level, every record
// carries the pid once known, and GetLevel follows the slog handler.
func TestSlogHCLogAdapter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var pid atomic.Int64
	h := newSlogHCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &pid, "/venv/bin/python3")

	h.Error("plugin process exited", "id", 7)
	if got := buf.String(); !strings.Contains(got, `level=DEBUG msg="plugin process exited" source=go-plugin id=7`) ||
		strings.Contains(got, "pid=") {
		t.Errorf("go-plugin's own error before the start = %q; want a debug record without a pid", got)
	}

	buf.Reset()
	pid.Store(4242)
	worker := h.Named("python3").With("@module", "flinkgo.worker")
	worker.Warn("slow udf", "ms", 900)
	worker.Trace("hidden below debug")
	if got := buf.String(); got == "" || !strings.Contains(got, `level=WARN msg="slow udf" source=worker pid=4242 @module=flinkgo.worker ms=900`) ||
		strings.Contains(got, "hidden") {
		t.Errorf("worker records = %q; want the warn with pid and implied args, no trace", got)
	}
	if worker.Name() != "python3" || len(worker.ImpliedArgs()) != 2 {
		t.Errorf("Name %q, ImpliedArgs %v", worker.Name(), worker.ImpliedArgs())
	}
	if worker.GetLevel() != hclog.Debug || !worker.IsDebug() || worker.IsTrace() {
		t.Errorf("GetLevel = %s for a debug handler", worker.GetLevel())
	}

	warnOnly := newSlogHCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), &pid, "python3")
	if warnOnly.Named("python3").GetLevel() != hclog.Warn || warnOnly.IsWarn() {
		t.Error("at warn: the worker's level is Warn and go-plugin's own (debug) are off")
	}
	if l := newSlogHCLog(slog.New(slog.DiscardHandler), &pid, "python3").Named("python3").GetLevel(); l != hclog.Off {
		t.Errorf("a discarding logger's level is %s; want Off, so go-plugin skips parsing", l)
	}

	buf.Reset()
	h.Named("stdio").Error("error receiving data")
	if got := buf.String(); !strings.Contains(got, `level=DEBUG msg="error receiving data" source=go-plugin`) {
		t.Errorf("go-plugin's stdio logger record = %q; want it demoted to debug", got)
	}

	buf.Reset()
	h.Named("python3").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("via log.Logger")
	if got := buf.String(); !strings.Contains(got, `level=ERROR msg="via log.Logger"`) {
		t.Errorf("StandardLogger record = %q", got)
	}
}
