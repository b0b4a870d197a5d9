package arrowipc

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

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

// DecodeSchema reads the schema of an IPC stream.
func DecodeSchema(data []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return r.Schema(), nil
}

// DecodeBatch reads the single batch of an IPC stream. The caller owns it.
func DecodeBatch(data []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	if !r.Next() {
		if r.Err() != nil {
			return nil, r.Err()
		}
		return nil, fmt.Errorf("arrow IPC stream holds no batch")
	}
	b := r.RecordBatch()
	b.Retain()
	return b, nil
}
