package pluginrunner

import (
	"context"
	"io"
	"log"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// slogHCLog is go-plugin's hclog.Logger writing into the runner's
// *slog.Logger. go-plugin logs two kinds of records through it: its own
// (process started, exited, handshake, stdio stream), which are demoted to
// debug because the runner logs what matters itself (worker start,
// unexpected exit); and the worker's stderr lines, through the child it
// names after the interpreter (Named(base name of the command)), which keep
// the level the worker gave them (the Python worker writes JSON lines that
// go-plugin parses). Every record carries the worker's pid once the process
// has started.
type slogHCLog struct {
	log     *slog.Logger
	name    string
	implied []any
	// pid is the worker's process id, 0 before it started; shared by every
	// child logger of one worker.
	pid *atomic.Int64
	// workerName is the name go-plugin gives the logger of the worker's
	// stderr: the base name of the interpreter.
	workerName string
	// worker is set on that logger and its children: their levels are
	// kept, until silenced.
	worker bool
	// silenced, when set and true, demotes the worker's records to debug:
	// the runtime is killing the worker itself, so a traceback of the
	// threads it interrupts is not an error to show the user.
	silenced *atomic.Bool
}

var _ hclog.Logger = (*slogHCLog)(nil)

// newSlogHCLog returns go-plugin's logger for one worker started from the
// command python.
func newSlogHCLog(l *slog.Logger, pid *atomic.Int64, python string) *slogHCLog {
	return &slogHCLog{log: l, pid: pid, workerName: filepath.Base(python)}
}

// slogLevel maps an hclog level to slog's; trace is below debug.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // Info, NoLevel
		return slog.LevelInfo
	}
}

// withSilenced makes the worker's records debug once silenced is true.
func (h *slogHCLog) withSilenced(silenced *atomic.Bool) *slogHCLog {
	h.silenced = silenced
	return h
}

func (h *slogHCLog) level(l hclog.Level) slog.Level {
	if !h.worker || (h.silenced != nil && h.silenced.Load()) {
		return min(slogLevel(l), slog.LevelDebug)
	}
	return slogLevel(l)
}

func (h *slogHCLog) Log(level hclog.Level, msg string, args ...any) {
	lvl := h.level(level)
	ctx := context.Background()
	if !h.log.Enabled(ctx, lvl) {
		return
	}
	attrs := make([]any, 0, len(h.implied)+len(args)+4)
	if h.worker {
		attrs = append(attrs, "source", "worker")
	} else {
		attrs = append(attrs, "source", "go-plugin")
	}
	if pid := h.pid.Load(); pid != 0 {
		attrs = append(attrs, "pid", pid)
	}
	attrs = append(attrs, h.implied...)
	attrs = append(attrs, args...)
	h.log.Log(ctx, lvl, msg, attrs...)
}

func (h *slogHCLog) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *slogHCLog) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *slogHCLog) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *slogHCLog) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *slogHCLog) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *slogHCLog) enabled(l hclog.Level) bool {
	return h.log.Enabled(context.Background(), h.level(l))
}

func (h *slogHCLog) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *slogHCLog) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *slogHCLog) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *slogHCLog) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *slogHCLog) IsError() bool { return h.enabled(hclog.Error) }

func (h *slogHCLog) ImpliedArgs() []any { return h.implied }

func (h *slogHCLog) With(args ...any) hclog.Logger {
	c := *h
	c.implied = append(append([]any(nil), h.implied...), args...)
	return &c
}

func (h *slogHCLog) Name() string { return h.name }

// Named is how go-plugin makes the logger of the worker's stderr
// (Named(base name of the interpreter)) and of its own stdio stream
// (Named("stdio")).
func (h *slogHCLog) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *slogHCLog) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	c.worker = h.worker || name == h.workerName
	return &c
}

// SetLevel does nothing: the slog handler owns the level.
func (h *slogHCLog) SetLevel(hclog.Level) {}

// GetLevel returns the lowest level the slog handler lets through, or Off;
// go-plugin skips parsing the worker's lines below it.
func (h *slogHCLog) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.log.Enabled(context.Background(), slogLevel(l)) {
			return l
		}
	}
	return hclog.Off
}

func (h *slogHCLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *slogHCLog) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return writerFunc(func(p []byte) (int, error) {
		h.Log(level, strings.TrimRight(string(p), "\n"))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
