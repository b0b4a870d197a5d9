package state

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger passes Pebble's messages to the backend's logger:
// informational ones at debug, errors at error. It is Pebble's Logger.
type pebbleLogger struct{ b *Backend }

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.b.log.Enabled(context.Background(), slog.LevelDebug) {
		l.b.log.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.b.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble when it cannot go on (a failed MANIFEST write,
// a broken invariant, corrupt data). Pebble's default exits the process;
// a task's backend must not take down the other jobs of the process, so
// this logs the error, marks the backend failed (every later state call and
// snapshot returns ErrBackendFailed, which fails the task) and returns.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.b.fail(fmt.Sprintf(format, args...))
}

// fail records Pebble's fatal error msg as the backend's failure, once, and
// logs it at error.
func (b *Backend) fail(msg string) {
	err := fmt.Errorf("%w: operator %q subtask %d: pebble: %s; the task must restart from its last checkpoint",
		ErrBackendFailed, b.opts.OperatorUID, b.opts.Subtask, msg)
	if b.failure.CompareAndSwap(nil, &err) {
		b.log.Error("state backend failed: pebble fatal error", "error", msg)
		return
	}
	b.log.Error("pebble fatal error after the backend failed", "error", msg)
}

// pebbleEvents reports the Pebble events an operator should see: background
// errors, write stalls, slow disks and low disk space as warnings, flushes
// and compactions at debug. Corrupt data fails the backend.
func (b *Backend) pebbleEvents() *pebble.EventListener {
	log := b.log
	debug := func() bool { return log.Enabled(context.Background(), slog.LevelDebug) }
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			log.Warn("pebble background error", "error", err)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			log.Warn("pebble write stall began: state writes block until flushes and compactions catch up",
				"reason", info.Reason)
		},
		WriteStallEnd: func() {
			log.Warn("pebble write stall ended")
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			log.Warn("pebble: slow disk", "detail", info.String())
		},
		LowDiskSpace: func(info pebble.LowDiskSpaceInfo) {
			log.Warn("pebble: low disk space", "detail", info.String())
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			b.fail(info.String())
		},
		FlushEnd: func(info pebble.FlushInfo) {
			if debug() {
				log.Debug("pebble flush", "detail", info.String())
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if debug() {
				log.Debug("pebble compaction", "detail", info.String())
			}
		},
	}
}
