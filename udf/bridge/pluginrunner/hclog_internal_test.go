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

// Once the runtime stops a worker itself (cancel, shutdown), the worker's
// log records and what its UDF prints are debug: no error-level records or
// tracebacks on the user's terminal after a cancel (issue 9, item 8).
func TestStoppedWorkerIsSilenced(t *testing.T) {
	t.Parallel()
	var logs, out bytes.Buffer
	var pid atomic.Int64
	var stopping atomic.Bool
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	worker := newSlogHCLog(log, &pid, "python3").withSilenced(&stopping).Named("python3")
	prefix := new(atomic.Pointer[string])
	prefix.Store(ptr(outputPrefix("parse_ts", 0)))
	printed := newUDFOutput(log, &pid, "udf stderr", &out, prefix, &stopping)

	worker.Error("udf failed", "traceback", "Traceback (most recent call last): ...")
	_, _ = printed.Write([]byte("hello\n"))
	if !strings.Contains(logs.String(), `level=ERROR msg="udf failed"`) || out.String() != "[parse_ts #1] hello\n" {
		t.Fatalf("a running worker's records and output: log %q, output %q", logs.String(), out.String())
	}

	logs.Reset()
	out.Reset()
	stopping.Store(true)
	worker.Error("udf failed", "traceback", "Traceback (most recent call last): ...")
	_, _ = printed.Write([]byte("Traceback (most recent call last):\n"))
	got := logs.String()
	if strings.Contains(got, "level=ERROR") || !strings.Contains(got, `level=DEBUG msg="udf failed"`) ||
		!strings.Contains(got, `level=DEBUG msg="udf stderr"`) || out.Len() != 0 {
		t.Errorf("a stopped worker's records must be debug and print nothing: log %q, output %q", got, out.String())
	}
}

// A line is cut at its bound whatever the chunks it arrives in, and says
// how much was cut; lines under the bound pass whole.
func TestLineSplitterBoundsLines(t *testing.T) {
	t.Parallel()
	s := lineSplitter{max: 8}
	var lines []string
	emit := func(l string) { lines = append(lines, l) }
	s.write([]byte("short\nabcdefghij"), emit)
	s.write([]byte("klmnop\nok"), emit)
	if len(lines) != 2 || lines[0] != "short" || lines[1] != "abcdefgh… [8 more bytes of this line cut]" {
		t.Fatalf("lines = %q", lines)
	}
	if !s.hasPending() || s.pending() != "ok" {
		t.Errorf("pending = %q", s.pending())
	}
	tail := newLineTail(3)
	for range 1000 {
		_, _ = tail.Write(bytes.Repeat([]byte("z"), 10<<10))
		_, _ = tail.Write([]byte("\n"))
	}
	if got := tail.Lines(); len(got) != 3 || len(got[0]) > maxTailLineBytes+64 || cap(tail.lines) > 8 {
		t.Errorf("tail of 1000 lines of 10 KiB kept %d lines, the first %d bytes, capacity %d", len(got), len(got[0]), cap(tail.lines))
	}
}
