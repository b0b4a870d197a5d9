package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// jsonIter reads one JSON-lines file: JSON objects separated by white space,
// one per line. A scanner cuts the records of a batch out of the file, so
// that a batch ends just after a record whose byte offset and line are
// known, and arrow-go's JSON reader decodes them.
type jsonIter struct {
	f      *os.File
	sc     jsonScanner
	schema *arrow.Schema
	mem    memory.Allocator
	chunk  int
	buf    []byte  // the records of the batch, one per line
	starts []int   // where each record starts in buf
	lines  []int64 // the line each record starts on
	done   bool
}

func openJSONL(s *fileSplit, cfg Config) (batchIter, error) {
	f, err := openFile(cfg, s.path)
	if err != nil {
		return nil, err
	}
	if s.at.Byte > 0 {
		st, err := f.Stat()
		if err == nil && s.at.Byte > st.Size() {
			err = BadOffset(s.id, "byte %d is past the end of the file, which has %d bytes", s.at.Byte, st.Size())
		}
		if err == nil {
			_, err = f.Seek(s.at.Byte, io.SeekStart)
		}
		if err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return &jsonIter{
		f:      f,
		sc:     jsonScanner{br: bufio.NewReaderSize(f, 1<<16), off: s.at.Byte, line: max(s.at.Line, 1)},
		schema: cfg.Schema, mem: cfg.Allocator, chunk: cfg.BatchRows,
	}, nil
}

func (it *jsonIter) next(context.Context) (arrow.RecordBatch, error) {
	if it.done {
		return nil, io.EOF
	}
	it.buf, it.starts, it.lines = it.buf[:0], it.starts[:0], it.lines[:0]
	for len(it.starts) < it.chunk {
		start := len(it.buf)
		buf, line, err := it.sc.record(it.buf)
		if errors.Is(err, io.EOF) {
			it.done = true
			break
		}
		if err != nil {
			return nil, err
		}
		it.buf = append(buf, '\n')
		it.starts, it.lines = append(it.starts, start), append(it.lines, line)
	}
	n := len(it.starts)
	if n == 0 {
		return nil, io.EOF
	}
	r := array.NewJSONReader(bytes.NewReader(it.buf), it.schema, array.WithChunk(-1), array.WithAllocator(it.mem))
	defer r.Release()
	var b arrow.RecordBatch
	if r.Next() {
		b = r.RecordBatch()
		b.Retain()
	}
	if err := r.Err(); err != nil || b == nil || b.NumRows() != int64(n) {
		if b != nil {
			b.Release()
		}
		return nil, it.locate(err)
	}
	return b, nil
}

// locate decodes the batch's records one by one to name the line of the
// first that does not decode.
func (it *jsonIter) locate(err error) error {
	bldr := array.NewRecordBuilder(it.mem, it.schema)
	defer bldr.Release()
	for i, start := range it.starts {
		end := len(it.buf)
		if i+1 < len(it.starts) {
			end = it.starts[i+1]
		}
		if e := bldr.UnmarshalJSON(it.buf[start:end]); e != nil {
			return fmt.Errorf("line %d: %w", it.lines[i], e)
		}
	}
	if err == nil {
		err = errors.New("the JSON reader lost records")
	}
	return err
}

func (it *jsonIter) pos() fileOffset { return fileOffset{Byte: it.sc.off, Line: it.sc.line} }

func (it *jsonIter) close() { _ = it.f.Close() }

// jsonScanner cuts JSON values out of a stream, counting bytes and lines.
// It follows strings and nesting only: the decoder checks the rest.
type jsonScanner struct {
	br   *bufio.Reader
	off  int64 // file offset of the next byte to scan
	line int64 // the line off is on
}

// record appends the next value to buf and returns it with the line it
// starts on, or io.EOF when only white space is left. A value that is not
// an object or array ends at the end of its line; one that the file ends in
// the middle of is returned as it is, for the decoder to report.
func (s *jsonScanner) record(buf []byte) ([]byte, int64, error) {
	var (
		started, scalar, inStr, esc bool
		depth                       int
		line                        int64
	)
	for {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && started {
					return buf, line, nil
				}
				return buf, 0, err
			}
		}
		win, _ := s.br.Peek(s.br.Buffered())
		i, from := 0, 0
		if !started {
			for ; i < len(win); i++ {
				c := win[i]
				if c == '\n' {
					s.line++
				} else if c != ' ' && c != '\t' && c != '\r' {
					break
				}
			}
			if i < len(win) {
				started, line, from = true, s.line, i
				scalar = win[i] != '{' && win[i] != '['
			}
		}
		end, complete := len(win), false
		for ; i < len(win) && !complete; i++ {
			c := win[i]
			if c == '\n' {
				s.line++
			}
			switch {
			case inStr:
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
				}
			case c == '\n' && scalar:
				end, complete = i+1, true
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 && !scalar {
					end, complete = i+1, true
				}
			}
		}
		if started {
			buf = append(buf, win[from:end]...)
		}
		_, _ = s.br.Discard(end)
		s.off += int64(end)
		if complete {
			return buf, line, nil
		}
	}
}
