package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// verifyStream checks the framing and the flatbuffer metadata of an IPC
// stream before arrow-go reads it. arrow-go trusts both: a vector length
// in the metadata becomes a make() of that length (a crafted schema asked
// for 350 GB, which no recover can catch), and cyclic child fields recurse
// until the stack runs out. Here every message must lie inside data, every
// table, string and vector inside its metadata, nesting stays shallow and
// the walk visits a bounded number of objects. Compressed bodies are
// refused: decompression allocates what the stream declares.
func verifyStream(data []byte) ([]message, error) {
	var msgs []message
	pos := 0
	for {
		if pos == len(data) {
			return msgs, nil // arrow-go accepts a stream without an end marker
		}
		if len(data)-pos < 4 {
			return nil, errors.New("truncated message length")
		}
		n := binary.LittleEndian.Uint32(data[pos:])
		pos += 4
		if n == 0xFFFFFFFF { // continuation marker, then the length
			if len(data)-pos < 4 {
				return nil, errors.New("truncated message length")
			}
			n = binary.LittleEndian.Uint32(data[pos:])
			pos += 4
		}
		if n == 0 {
			return msgs, nil // end of stream
		}
		if uint64(n) > uint64(len(data)-pos) {
			return nil, fmt.Errorf("message metadata of %d bytes past the end of the stream", n)
		}
		meta := data[pos : pos+int(n)]
		pos += int(n)
		body, err := verifyMessage(meta)
		if err != nil {
			return nil, fmt.Errorf("message metadata: %w", err)
		}
		if body < 0 || body > int64(len(data)-pos) {
			return nil, fmt.Errorf("message body of %d bytes past the end of the stream", body)
		}
		if body > 0 && pos%8 != 0 {
			// Arrow pads metadata to 8 bytes; the body's buffers are read in place.
			return nil, fmt.Errorf("message body at byte %d is not 8-byte aligned", pos)
		}
		msgs = append(msgs, message{meta: meta, body: data[pos : pos+int(body)]})
		pos += int(body)
	}
}

// message is one verified IPC message: its metadata and body, in place.
type message struct{ meta, body []byte }

const (
	maxNesting = 64      // nested types deeper than this are refused
	maxObjects = 1 << 16 // tables, strings and vectors visited per message
)

// fb reads one flatbuffer with every access bounds-checked.
type fb struct {
	buf     []byte
	visited int
}

func (f *fb) u32(at int) (uint32, error) {
	if at < 0 || at > len(f.buf)-4 {
		return 0, fmt.Errorf("offset %d out of range", at)
	}
	return binary.LittleEndian.Uint32(f.buf[at:]), nil
}

// deref follows the uoffset stored at at.
func (f *fb) deref(at int) (int, error) {
	f.visited++
	if f.visited > maxObjects {
		return 0, fmt.Errorf("more than %d objects", maxObjects)
	}
	off, err := f.u32(at)
	if err != nil {
		return 0, err
	}
	to := uint64(at) + uint64(off)
	if to >= uint64(len(f.buf)) {
		return 0, fmt.Errorf("reference at %d points past the end", at)
	}
	return int(to), nil
}

// table checks the table at t and returns its vtable.
func (f *fb) table(t int) (vt, vtLen int, err error) {
	so, err := f.u32(t)
	if err != nil {
		return 0, 0, err
	}
	vt64 := int64(t) - int64(int32(so))
	if vt64 < 0 || vt64 > int64(len(f.buf))-4 {
		return 0, 0, fmt.Errorf("vtable of table %d out of range", t)
	}
	vt = int(vt64)
	vtLen = int(binary.LittleEndian.Uint16(f.buf[vt:]))
	tabLen := int(binary.LittleEndian.Uint16(f.buf[vt+2:]))
	if vtLen < 4 || vtLen%2 != 0 || vt+vtLen > len(f.buf) || t+tabLen > len(f.buf) {
		return 0, 0, fmt.Errorf("table %d out of range", t)
	}
	return vt, vtLen, nil
}

// field returns the position of slot's value in table t, or -1 when absent.
func (f *fb) field(t int, slot int, size int) (int, error) {
	vt, vtLen, err := f.table(t)
	if err != nil {
		return 0, err
	}
	at := 4 + 2*slot
	if at+2 > vtLen {
		return -1, nil
	}
	off := int(binary.LittleEndian.Uint16(f.buf[vt+at:]))
	if off == 0 {
		return -1, nil
	}
	if t+off+size > len(f.buf) {
		return 0, fmt.Errorf("field %d of table %d out of range", slot, t)
	}
	return t + off, nil
}

// ref returns the table, vector or string slot of t points to, or -1.
func (f *fb) ref(t, slot int) (int, error) {
	at, err := f.field(t, slot, 4)
	if err != nil || at < 0 {
		return at, err
	}
	return f.deref(at)
}

// vector checks slot's vector of elemSize-byte elements and returns its
// first element's position and its length (-1, 0 when absent).
func (f *fb) vector(t, slot, elemSize int) (int, int, error) {
	v, err := f.ref(t, slot)
	if err != nil || v < 0 {
		return -1, 0, err
	}
	n, err := f.u32(v)
	if err != nil {
		return 0, 0, err
	}
	if uint64(n)*uint64(elemSize) > uint64(len(f.buf)-v-4) {
		return 0, 0, fmt.Errorf("vector of %d elements at %d past the end", n, v)
	}
	return v + 4, int(n), nil
}

// tables calls each for every table of slot's vector of tables.
func (f *fb) tables(t, slot int, each func(int) error) error {
	start, n, err := f.vector(t, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		e, err := f.deref(start + 4*i)
		if err != nil {
			return err
		}
		if err := each(e); err != nil {
			return err
		}
	}
	return nil
}

func (f *fb) u8(t, slot int) (byte, error) {
	at, err := f.field(t, slot, 1)
	if err != nil || at < 0 {
		return 0, err
	}
	return f.buf[at], nil
}

func (f *fb) i64(t, slot int) (int64, error) {
	at, err := f.field(t, slot, 8)
	if err != nil || at < 0 {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(f.buf[at:])), nil
}

// Slots and union tags of Arrow's Message.fbs and Schema.fbs.
const (
	headerSchema, headerDictionaryBatch, headerRecordBatch = 1, 2, 3
	typeTimestamp, typeUnion                               = 10, 14
)

// verifyMessage checks a Message's metadata and returns its body length.
func verifyMessage(meta []byte) (int64, error) {
	f := &fb{buf: meta}
	root, err := f.deref(0)
	if err != nil {
		return 0, err
	}
	if err := f.keyValues(root, 4); err != nil {
		return 0, err
	}
	body, err := f.i64(root, 3)
	if err != nil {
		return 0, err
	}
	kind, err := f.u8(root, 1)
	if err != nil {
		return 0, err
	}
	header, err := f.ref(root, 2)
	if err != nil || header < 0 {
		return body, err
	}
	switch kind {
	case headerSchema:
		err = f.schema(header)
	case headerRecordBatch:
		err = f.recordBatch(header)
	case headerDictionaryBatch:
		var rb int
		if rb, err = f.ref(header, 1); err == nil && rb >= 0 {
			err = f.recordBatch(rb)
		}
	default:
		err = fmt.Errorf("message kind %d is not a schema or a batch", kind)
	}
	return body, err
}

func (f *fb) schema(s int) error {
	if err := f.tables(s, 1, func(t int) error { return f.arrowField(t, 1) }); err != nil {
		return err
	}
	if err := f.keyValues(s, 2); err != nil {
		return err
	}
	_, _, err := f.vector(s, 3, 8) // features
	return err
}

func (f *fb) arrowField(t, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("types nested more than %d deep", maxNesting)
	}
	if _, err := f.str(t, 0); err != nil { // name
		return err
	}
	kind, err := f.u8(t, 2)
	if err != nil {
		return err
	}
	typ, err := f.ref(t, 3)
	if err != nil {
		return err
	}
	if typ >= 0 {
		if _, _, err := f.table(typ); err != nil {
			return err
		}
		switch kind {
		case typeTimestamp:
			_, err = f.str(typ, 1)
		case typeUnion:
			_, _, err = f.vector(typ, 1, 4)
		}
		if err != nil {
			return err
		}
	}
	if dict, err := f.ref(t, 4); err != nil {
		return err
	} else if dict >= 0 {
		if idx, err := f.ref(dict, 1); err != nil {
			return err
		} else if idx >= 0 {
			if _, _, err := f.table(idx); err != nil {
				return err
			}
		}
	}
	if err := f.tables(t, 5, func(c int) error { return f.arrowField(c, depth+1) }); err != nil {
		return err
	}
	return f.keyValues(t, 6)
}

func (f *fb) keyValues(t, slot int) error {
	return f.tables(t, slot, func(kv int) error {
		if _, err := f.str(kv, 0); err != nil {
			return err
		}
		_, err := f.str(kv, 1)
		return err
	})
}

func (f *fb) str(t, slot int) (int, error) {
	_, n, err := f.vector(t, slot, 1)
	return n, err
}

func (f *fb) recordBatch(rb int) error {
	if _, _, err := f.vector(rb, 1, 16); err != nil { // field nodes
		return err
	}
	bufs, nbuf, err := f.vector(rb, 2, 16) // buffers: offset, length
	if err != nil {
		return err
	}
	for i := range nbuf {
		// Read in place as typed slices: the spec's 8-byte alignment is required.
		if off := binary.LittleEndian.Uint64(f.buf[bufs+16*i:]); off%8 != 0 {
			return fmt.Errorf("buffer %d at body offset %d is not 8-byte aligned", i, off)
		}
	}
	if c, err := f.ref(rb, 3); err != nil {
		return err
	} else if c >= 0 {
		return errors.New("compressed bodies are not accepted (write the stream without compression)")
	}
	start, n, err := f.vector(rb, 4, 8) // variadic buffer counts
	if err != nil {
		return err
	}
	for i := range n {
		c := int64(binary.LittleEndian.Uint64(f.buf[start+8*i:]))
		if c < 0 || c > int64(nbuf) || c > math.MaxInt32 {
			return fmt.Errorf("variadic buffer count %d, with %d buffers", c, nbuf)
		}
	}
	return nil
}
