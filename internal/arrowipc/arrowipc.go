package arrowipc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrInvalid marks Arrow data that failed validation: a stream arrow-go
// cannot read, or a batch whose buffers are inconsistent (offsets going
// backwards, lengths past the end of a buffer, wrong null counts).
var ErrInvalid = errors.New("invalid Arrow data")

// EncodeBatch writes b as an IPC stream into buf (reset first).
func EncodeBatch(buf *bytes.Buffer, b arrow.RecordBatch, mem memory.Allocator) error {
	buf.Reset()
	w := ipc.NewWriter(buf, ipc.WithSchema(b.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(b); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// EncodeSchema writes an IPC stream holding only s.
func EncodeSchema(s *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newReader opens an IPC stream of untrusted bytes: verified first
// (verifyStream), then read in place. The batches' buffers point into
// data, which the caller must not change while they live; nothing is
// copied, so a plan's table costs its plan's bytes once, whatever the
// parallelism.
func newReader(data []byte, mem memory.Allocator) (*ipc.Reader, error) {
	if len(data) > 0 && uintptr(unsafe.Pointer(&data[0]))%8 != 0 {
		data = bytes.Clone(data) // Go allocates 8-aligned; typed reads need it
	}
	msgs, err := verifyStream(data)
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return ipc.NewReaderFromMessageReader(&inPlace{msgs: msgs}, ipc.WithAllocator(mem))
}

// inPlace serves verified messages without copying them.
type inPlace struct {
	msgs []message
	refs atomic.Int64
}

func (r *inPlace) Message() (*ipc.Message, error) {
	if len(r.msgs) == 0 {
		return nil, io.EOF
	}
	m := r.msgs[0]
	r.msgs = r.msgs[1:]
	meta, body := memory.NewBufferBytes(m.meta), memory.NewBufferBytes(m.body)
	defer meta.Release()
	defer body.Release()
	return ipc.NewMessage(meta, body), nil
}

func (r *inPlace) Retain()  { r.refs.Add(1) }
func (r *inPlace) Release() { r.refs.Add(-1) }

// guard turns a panic of arrow-go on crafted bytes into an error: every
// decoder here reads data from outside the process (plans, workers).
func guard(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: arrow-go failed on it: %v", ErrInvalid, r)
	}
}

// DecodeSchema reads the schema of an IPC stream.
func DecodeSchema(data []byte) (s *arrow.Schema, err error) {
	defer guard(&err)
	r, err := newReader(data, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer r.Release()
	return r.Schema(), nil
}

// Validate checks every buffer of b in full (arrow-go's array.ValidateFull
// on each column, and the columns' lengths), so that reading b can never
// panic or read out of bounds. It costs one pass over b's offsets and
// validity bitmaps.
func Validate(b arrow.RecordBatch) (err error) {
	defer guard(&err)
	for i, col := range b.Columns() {
		name := b.Schema().Field(i).Name
		if int64(col.Len()) != b.NumRows() {
			return fmt.Errorf("%w: column %q has %d rows, the batch %d", ErrInvalid, name, col.Len(), b.NumRows())
		}
		if !arrow.TypeEqual(col.DataType(), b.Schema().Field(i).Type) {
			return fmt.Errorf("%w: column %q holds %s, its schema says %s", ErrInvalid, name, col.DataType(), b.Schema().Field(i).Type)
		}
		if err := validateFull(col); err != nil {
			return fmt.Errorf("%w: column %q: %w", ErrInvalid, name, err)
		}
	}
	return nil
}

// validateFull is array.ValidateFull, which itself can slice out of range
// on some crafted layouts.
func validateFull(col arrow.Array) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("inconsistent buffers: %v", r)
		}
	}()
	return array.ValidateFull(col)
}

// DecodeBatch reads the single batch of an IPC stream, validated in full
// (Validate). The caller owns it.
func DecodeBatch(data []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	var out arrow.RecordBatch
	_, err := decode(data, mem, func(b arrow.RecordBatch) error {
		if out != nil {
			return fmt.Errorf("%w: the IPC stream holds more than one batch", ErrInvalid)
		}
		b.Retain()
		out = b
		return nil
	})
	if err == nil && out == nil {
		err = fmt.Errorf("%w: the IPC stream holds no batch", ErrInvalid)
	}
	if err != nil {
		if out != nil {
			out.Release()
		}
		return nil, err
	}
	return out, nil
}

// DecodeStream reads every batch of an IPC stream, each validated in full
// (Validate), and returns its schema and the batches, which the caller
// releases.
func DecodeStream(data []byte, mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	s, err := decode(data, mem, func(b arrow.RecordBatch) error {
		b.Retain()
		out = append(out, b)
		return nil
	})
	if err != nil {
		for _, b := range out {
			b.Release()
		}
		return nil, nil, err
	}
	return s, out, nil
}

// decode calls fn with each batch of data's stream once it is validated.
func decode(data []byte, mem memory.Allocator, fn func(arrow.RecordBatch) error) (s *arrow.Schema, err error) {
	defer guard(&err)
	r, err := newReader(data, mem)
	if err != nil {
		return nil, fmt.Errorf("%w: not an Arrow IPC stream: %w", ErrInvalid, err)
	}
	defer r.Release()
	for r.Next() {
		b := r.RecordBatch()
		if err := Validate(b); err != nil {
			return nil, err
		}
		if err := fn(b); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return r.Schema(), nil
}

// EncodedSize is at least the size of the IPC stream EncodeBatch writes
// for b: its buffers, each padded, and room for the messages' metadata.
func EncodedSize(b arrow.RecordBatch) int {
	n := 1024
	for _, c := range b.Columns() {
		size, buffers := dataSize(c.Data())
		n += 256 + size + 64*buffers
	}
	return n
}

// BatchBytes is the size of b's buffers (the whole buffers of a slice).
func BatchBytes(b arrow.RecordBatch) int {
	n := 0
	for _, c := range b.Columns() {
		size, _ := dataSize(c.Data())
		n += size
	}
	return n
}

// dataSize is the size of d's buffers, its children's and its
// dictionary's, and how many buffers they are.
func dataSize(d arrow.ArrayData) (size, buffers int) {
	for _, buf := range d.Buffers() {
		if buf != nil {
			size += buf.Len()
			buffers++
		}
	}
	more := d.Children()
	if d.DataType().ID() == arrow.DICTIONARY {
		more = append(more[:len(more):len(more)], d.Dictionary())
	}
	for _, child := range more {
		s, n := dataSize(child)
		size, buffers = size+s, buffers+n
	}
	return size, buffers
}
