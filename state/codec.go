package state

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
)

// Codec serializes the values (and the map state's user keys) of a state.
// Encode appends the encoding of v to dst and returns the extended slice.
// Decode decodes one value from b; it must not retain b, which the backend
// reuses. A Codec must be deterministic for map user keys (equal keys,
// equal bytes), and the map state iterates a key's entries in the byte
// order of the encoded user keys. Codecs are used by the backend's
// goroutine only.
type Codec[T any] interface {
	Encode(dst []byte, v T) []byte
	Decode(b []byte) (T, error)
}

// Compile-time checks of the provided codecs.
var (
	_ Codec[[]byte]  = BytesCodec{}
	_ Codec[string]  = StringCodec{}
	_ Codec[int64]   = Int64Codec{}
	_ Codec[uint64]  = Uint64Codec{}
	_ Codec[float64] = Float64Codec{}
	_ Codec[bool]    = BoolCodec{}
	_ Codec[int]     = GobCodec[int]{}
	_ Codec[int]     = (*BinaryCodec[int])(nil)
)

// BytesCodec stores byte slices as they are. Decode returns a copy.
type BytesCodec struct{}

// Encode implements Codec.
func (BytesCodec) Encode(dst []byte, v []byte) []byte { return append(dst, v...) }

// Decode implements Codec.
func (BytesCodec) Decode(b []byte) ([]byte, error) { return bytes.Clone(b), nil }

// StringCodec stores strings as their bytes.
type StringCodec struct{}

// Encode implements Codec.
func (StringCodec) Encode(dst []byte, v string) []byte { return append(dst, v...) }

// Decode implements Codec.
func (StringCodec) Decode(b []byte) (string, error) { return string(b), nil }

// Int64Codec stores an int64 in 8 bytes, big-endian with the sign bit
// flipped, so that the byte order of encoded map user keys is the numeric
// order.
type Int64Codec struct{}

// Encode implements Codec.
func (Int64Codec) Encode(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// Decode implements Codec.
func (Int64Codec) Decode(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("int64 codec: %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), nil
}

// Uint64Codec stores a uint64 in 8 bytes, big-endian (numeric byte order).
type Uint64Codec struct{}

// Encode implements Codec.
func (Uint64Codec) Encode(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// Decode implements Codec.
func (Uint64Codec) Decode(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("uint64 codec: %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// Float64Codec stores a float64 in 8 bytes whose byte order is the numeric
// order (negative numbers have all bits flipped, others the sign bit); NaNs
// round-trip bit for bit.
type Float64Codec struct{}

// Encode implements Codec.
func (Float64Codec) Encode(dst []byte, v float64) []byte {
	u := math.Float64bits(v)
	if u&(1<<63) != 0 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

// Decode implements Codec.
func (Float64Codec) Decode(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("float64 codec: %d bytes, want 8", len(b))
	}
	u := binary.BigEndian.Uint64(b)
	if u&(1<<63) != 0 {
		u &^= 1 << 63
	} else {
		u = ^u
	}
	return math.Float64frombits(u), nil
}

// BoolCodec stores a bool in one byte.
type BoolCodec struct{}

// Encode implements Codec.
func (BoolCodec) Encode(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// Decode implements Codec.
func (BoolCodec) Decode(b []byte) (bool, error) {
	if len(b) != 1 || b[0] > 1 {
		return false, fmt.Errorf("bool codec: bad encoding %x", b)
	}
	return b[0] == 1, nil
}

// BinaryCodec stores a fixed-size value (a number, a struct or an array of
// fixed-size fields, no slices, strings, maps or pointers) in its
// encoding/binary layout, big-endian. Build it with NewBinaryCodec, which
// rejects types without a fixed size.
type BinaryCodec[T any] struct {
	size int
}

// NewBinaryCodec returns the BinaryCodec of T, or an error when T has no
// fixed size.
func NewBinaryCodec[T any]() (*BinaryCodec[T], error) {
	var zero T
	size := binary.Size(zero)
	if size < 0 {
		return nil, fmt.Errorf("state: BinaryCodec: type %v has no fixed size (use GobCodec)", reflect.TypeFor[T]())
	}
	return &BinaryCodec[T]{size: size}, nil
}

// Encode implements Codec.
func (c *BinaryCodec[T]) Encode(dst []byte, v T) []byte {
	out, err := binary.Append(dst, binary.BigEndian, v)
	if err != nil {
		// NewBinaryCodec checked that T has a fixed size, the only way
		// binary.Append fails.
		panic(fmt.Sprintf("state: BinaryCodec: %v", err))
	}
	return out
}

// Decode implements Codec.
func (c *BinaryCodec[T]) Decode(b []byte) (T, error) {
	var v T
	if len(b) != c.size {
		return v, fmt.Errorf("binary codec: %d bytes, want %d", len(b), c.size)
	}
	_, err := binary.Decode(b, binary.BigEndian, &v)
	return v, err
}

// GobCodec stores any gob-encodable value, each value a self-contained gob
// stream (type information included, so it is larger and slower than the
// other codecs). Its encoding is not deterministic for maps, so do not use
// it for map user keys that contain maps.
type GobCodec[T any] struct{}

// Encode implements Codec. A value gob cannot encode (a func, a channel)
// panics: that is a bug in the job's type, not an I/O error.
func (GobCodec[T]) Encode(dst []byte, v T) []byte {
	buf := bytes.NewBuffer(dst)
	if err := gob.NewEncoder(buf).Encode(&v); err != nil {
		panic(fmt.Sprintf("state: GobCodec: cannot encode %T: %v", v, err))
	}
	return buf.Bytes()
}

// Decode implements Codec.
func (GobCodec[T]) Decode(b []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return v, err
}
