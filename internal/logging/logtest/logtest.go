// Package logtest captures the records of a *slog.Logger in tests: a
// Buffer that the goroutines of a job, a server or Pebble may write to at
// once, and the records that hold given words. Test code only.
package logtest

import (
	"log/slog"
	"strings"
	"sync"
)

// Buffer collects text log records; it is safe for concurrent writes.
type Buffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// New returns a logger writing every record (debug and up) as text into a
// new Buffer.
func New() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the records whose text holds every one of want.
func (b *Buffer) Lines(want ...string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		ok := l != ""
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}
