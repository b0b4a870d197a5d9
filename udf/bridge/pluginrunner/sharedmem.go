package pluginrunner

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultSharedSlotBytes is the size of one slot of the shared-memory
// transport: batches (and results) of up to this many bytes of Arrow IPC
// go through shared memory, larger ones inline on the socket.
const DefaultSharedSlotBytes = 16 << 20

// sharedRegion is the host's side of TransportSharedMemory: a memfd mapped
// by host and worker, MaxInFlight input slots then as many output slots
// (worker.proto tells the layout). Batch k goes to slot k mod slots: the
// in-flight window guarantees that the batch that used the slot before was
// answered, so the worker is done with its input and the host has copied
// its result out.
type sharedRegion struct {
	// mu keeps unmap away from a write or a read of the mapping:
	// Process and the receiver hold it shared while they touch mem.
	mu        sync.RWMutex
	mem       []byte // nil once unmapped
	slots     int
	slotBytes int64
	// retained marks input slots the worker still views (a UDF kept a
	// reference to its input): never written again.
	retained []atomic.Bool
}

var errNoSharedMemory = errors.New("the shared-memory transport needs Linux (memfd); use the unix-socket transport")

var errSlotFull = errors.New("payload does not fit its shared-memory slot")

// writeInput writes batch at the start of input slot: as a record-batch
// message alone when schemaOmitted (the worker knows the schema from Open:
// it saves both sides the schema's encoding and parsing), else as an Arrow
// IPC stream. ok is false when the slot cannot take it (too large,
// retained), and the caller sends the batch inline.
func (s *sharedRegion) writeInput(slot int, batch arrow.RecordBatch, mem memory.Allocator, schemaOmitted bool) (n int64, ok bool, err error) {
	if s.retained[slot].Load() {
		return 0, false, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mem == nil {
		return 0, false, errors.New("the shared-memory region is already unmapped")
	}
	start := int64(slot) * s.slotBytes
	w := &slotWriter{buf: s.mem[start : start+s.slotBytes]}
	if schemaOmitted {
		err = writeBatchMessage(w, batch, mem)
	} else {
		iw := ipc.NewWriter(w, ipc.WithSchema(batch.Schema()), ipc.WithAllocator(mem))
		err = iw.Write(batch)
		if cerr := iw.Close(); err == nil {
			err = cerr
		}
	}
	if errors.Is(err, errSlotFull) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return int64(w.n), true, nil
}

// readOutput copies the n bytes of output slot out of the region: the
// decoded batch outlives the slot's next use.
func (s *sharedRegion) readOutput(slot int, n int64) ([]byte, error) {
	if n < 0 || n > s.slotBytes {
		return nil, fmt.Errorf("the worker put a result of %d bytes in a %d-byte slot", n, s.slotBytes)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mem == nil {
		return nil, errors.New("the shared-memory region is already unmapped")
	}
	start := int64(s.slots+slot) * s.slotBytes
	return bytes.Clone(s.mem[start : start+n]), nil
}

// unmap releases the host's mapping; the memory goes once the worker's
// mapping goes too (its exit at the latest). Idempotent.
func (s *sharedRegion) unmap() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil {
		return nil
	}
	mem := s.mem
	s.mem = nil
	return unmapRegion(mem)
}

// writeBatchMessage writes batch as one encapsulated IPC message.
func writeBatchMessage(w *slotWriter, batch arrow.RecordBatch, mem memory.Allocator) error {
	payload, err := ipc.GetRecordBatchPayload(batch, ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	defer payload.Release()
	_, err = payload.WritePayload(w)
	return err
}

// hasDictionary says whether schema has a dictionary-encoded field at any
// depth: its batches need the stream's dictionary messages.
func hasDictionary(fields []arrow.Field) bool {
	for _, f := range fields {
		if f.Type.ID() == arrow.DICTIONARY {
			return true
		}
		if nested, ok := f.Type.(arrow.NestedType); ok && hasDictionary(nested.Fields()) {
			return true
		}
	}
	return false
}

// sameLayout says whether a batch of schema a reads as one of schema b:
// the same number of fields of the same types.
func sameLayout(a, b *arrow.Schema) bool {
	if a == b {
		return true
	}
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// slotWriter writes into a fixed slice and fails once it is full.
type slotWriter struct {
	buf []byte
	n   int
}

func (w *slotWriter) Write(p []byte) (int, error) {
	if len(p) > len(w.buf)-w.n {
		return 0, errSlotFull
	}
	w.n += copy(w.buf[w.n:], p)
	return len(p), nil
}
