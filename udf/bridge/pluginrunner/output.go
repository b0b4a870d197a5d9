package pluginrunner

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// Bounds on what the runner keeps of a worker's output: a UDF that writes
// a gigabyte without a newline, or prints forever, costs the runtime at
// most these bytes per worker, never memory in proportion to the output.
const (
	// maxTailLineBytes is the longest stderr line kept for error messages.
	maxTailLineBytes = 4 << 10
	// stderrTailLines is how many stderr lines an error message shows.
	stderrTailLines = 20
	// maxPrintedLineBytes is the longest line of what a UDF prints that is
	// shown or logged; the rest of the line is counted, not kept.
	maxPrintedLineBytes = 16 << 10
)

// lineSplitter cuts a byte stream into lines of at most max bytes: the
// part of a longer line past max is dropped and counted, and the line ends
// with a note saying how much was cut.
type lineSplitter struct {
	max     int
	buf     []byte
	dropped int64
}

// write feeds b and calls emit for each completed line, in order.
func (s *lineSplitter) write(b []byte, emit func(line string)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		take := min(len(chunk), s.max-len(s.buf))
		s.buf = append(s.buf, chunk[:take]...)
		s.dropped += int64(len(chunk) - take)
		if i < 0 {
			return
		}
		emit(s.pending())
		s.buf, s.dropped = s.buf[:0], 0
		b = b[i+1:]
	}
}

// pending is the line begun but not ended yet ("" when none).
func (s *lineSplitter) pending() string {
	if s.dropped == 0 {
		return string(s.buf)
	}
	return fmt.Sprintf("%s… [%d more bytes of this line cut]", s.buf, s.dropped)
}

func (s *lineSplitter) hasPending() bool { return len(s.buf) > 0 || s.dropped > 0 }

// lineTail keeps the last n lines written to it, each cut at
// maxTailLineBytes. go-plugin writes the worker's stderr to it.
type lineTail struct {
	mu    sync.Mutex
	n     int
	lines []string
	split lineSplitter
}

func newLineTail(n int) *lineTail { return &lineTail{n: n, split: lineSplitter{max: maxTailLineBytes}} }

func (t *lineTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.split.write(b, func(line string) {
		t.lines = append(t.lines, line)
		if len(t.lines) > t.n {
			// Copy down so the backing array never grows past n+1.
			t.lines = append(t.lines[:0], t.lines[len(t.lines)-t.n:]...)
		}
	})
	return len(b), nil
}

func (t *lineTail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if t.split.hasPending() {
		out = append(out, t.split.pending())
	}
	return out
}

// udfOutput receives what user code in the worker prints to one stream
// (stdout or stderr, forwarded through go-plugin's GRPCStdio), line by
// line, each cut at maxPrintedLineBytes. A line goes to out with prefix
// when out is set (the user's terminal, for the embedded runtime), else to
// the log at info (a server's). Once the runtime kills the worker itself
// (silenced: cancel, shutdown), lines go to the log at debug: a canceled
// worker's last words are not the user's business.
type udfOutput struct {
	log      *slog.Logger // the runner's: tagged with udf, operator, subtask
	pid      *atomic.Int64
	msg      string
	out      io.Writer
	prefix   *atomic.Pointer[string] // swapped when a pooled worker serves another runner
	silenced *atomic.Bool
	mu       sync.Mutex
	split    lineSplitter
	line     []byte
}

func newUDFOutput(log *slog.Logger, pid *atomic.Int64, msg string, out io.Writer, prefix *atomic.Pointer[string], silenced *atomic.Bool) *udfOutput {
	return &udfOutput{log: log, pid: pid, msg: msg, out: out, prefix: prefix, silenced: silenced,
		split: lineSplitter{max: maxPrintedLineBytes}}
}

func (u *udfOutput) Write(b []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.split.write(b, u.emit)
	return len(b), nil
}

func (u *udfOutput) emit(line string) {
	switch {
	case u.silenced.Load():
		u.log.Debug(u.msg, "source", "worker", "pid", u.pid.Load(), "line", line, "after_stop", true)
	case u.out != nil:
		// One Write per line: several workers share the terminal.
		u.line = append(append(append(u.line[:0], *u.prefix.Load()...), line...), '\n')
		_, _ = u.out.Write(u.line)
	default:
		u.log.Info(u.msg, "source", "worker", "pid", u.pid.Load(), "line", line)
	}
}

// flush emits the line begun but not ended, if any: the worker's last
// output, once it has ended.
func (u *udfOutput) flush() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.split.hasPending() {
		u.emit(u.split.pending())
		u.split.buf, u.split.dropped = u.split.buf[:0], 0
	}
}

// stderrLines is what go-plugin copies of the worker's stderr: the last
// lines for error messages, and the lines that are not the worker's JSON
// log lines (a UDF's or a subprocess's writes to fd 2) as the UDF's stderr
// output, which go-plugin alone would log at debug only.
type stderrLines struct {
	tail  *lineTail
	out   *udfOutput
	mu    sync.Mutex
	split lineSplitter
}

func newStderrLines(tail *lineTail, out *udfOutput) *stderrLines {
	return &stderrLines{tail: tail, out: out, split: lineSplitter{max: maxPrintedLineBytes}}
}

func (s *stderrLines) Write(b []byte) (int, error) {
	_, _ = s.tail.Write(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.split.write(b, s.emit)
	return len(b), nil
}

func (s *stderrLines) emit(line string) {
	if !strings.HasPrefix(line, `{"@`) {
		_, _ = s.out.Write([]byte(line + "\n"))
	}
}

// flush hands on the line begun but not ended, once the worker ended.
func (s *stderrLines) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.split.hasPending() {
		s.emit(s.split.pending())
		s.split.buf, s.split.dropped = s.split.buf[:0], 0
	}
}

func ptr[T any](v T) *T { return &v }

// outputPrefix is how a printed line is tagged on the user's terminal:
// the UDF (or fused chain) and the subtask counted from 1, as Flink's print
// sink counts them: "[parse_ts #1] ".
func outputPrefix(udfs string, subtask int) string {
	return fmt.Sprintf("[%s #%d] ", udfs, subtask+1)
}
