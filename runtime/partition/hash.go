package partition

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/internal/murmur3"
)

// The key hash. State is stored by key group and key groups are computed
// from this hash, so it is part of the format of every checkpoint and
// savepoint: it must give the same value for the same key in every process,
// on every platform and in every release. It therefore uses no seed chosen
// at run time and no Go map or maphash, only MurmurHash3 x86_32 with seed 0
// (the same function as Python's mmh3.hash(data, 0, signed=False)) over a
// fixed encoding of each value:
//
//   - integers (int8..int64, uint8..uint64) and bool (false 0, true 1): the
//     eight little-endian bytes of the value widened to 64 bits (sign-
//     extended for signed types), so a key keeps its hash when its column is
//     widened (int32 -> int64);
//   - date32, date64, time32, time64, timestamp and duration: their stored
//     integer, as above; the unit is part of the key (a date32 day and a
//     date64 millisecond do not hash alike);
//   - float16, float32, float64: the eight little-endian bytes of the IEEE
//     754 bits of the value as a float64 (exact for the narrower types), with
//     -0 hashed as +0 and every NaN as the canonical quiet NaN, so that keys
//     equal by value hash alike;
//   - string, large_string, string_view, binary, large_binary, binary_view,
//     fixed_size_binary: their bytes (UTF-8 for strings), so a string and a
//     binary with the same bytes hash alike;
//   - dictionary-encoded columns of the types above: the hash of the decoded
//     value, whatever the dictionary or index type;
//   - null, in any type (including the null type): NullHash.
//
// A row's hash is the hash of its first key column; each further key column
// c is folded in with one MurmurHash3 body round,
// h = murmur3.MixH1(h, murmur3.MixK1(c)) = rotl(h ^ MixK1(c), 13) * 5 + 0xe6546b64.
// The row hash is then spread by keygroup.MurmurMix when the key group is
// computed, as Flink spreads a key's hashCode.

// NullHash is the hash of a null key value in any column type.
const NullHash uint32 = 0x9e3779b9

// canonicalNaN is the bit pattern every NaN is hashed as.
const canonicalNaN = 0x7ff8000000000000

// HashKeys returns the 32-bit hash of each row of batch over the key columns
// keyCols (indices into the batch's columns, in the order that defines the
// key). The hash is deterministic and stable across processes and releases
// (see the encoding above); it does not depend on how rows are split into
// batches or on array offsets. It fails on a key column index out of range
// and, wrapping ErrUnsupportedKeyType, on a column type with no stable hash.
// The batch is only read.
func HashKeys(batch arrow.RecordBatch, keyCols []int) ([]int32, error) {
	var h rowHasher
	hashes, err := h.hash(batch, keyCols)
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(hashes))
	for i, h := range hashes {
		out[i] = int32(h)
	}
	return out, nil
}

// KeyGroups returns the key group, in [0, maxP), of each row of batch:
// keygroup.ForHash(HashKeys(batch, keyCols)[row], maxP). It fails as HashKeys
// does, and wrapping keygroup.ErrInvalidParallelism when maxP is outside
// [1, keygroup.UpperBoundMaxParallelism].
func KeyGroups(batch arrow.RecordBatch, keyCols []int, maxP int) ([]int32, error) {
	if err := keygroup.ValidateMaxParallelism(maxP); err != nil {
		return nil, err
	}
	var h rowHasher
	hashes, err := h.hash(batch, keyCols)
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(hashes))
	for i, h := range hashes {
		out[i] = int32(keygroup.ForHash(int32(h), maxP))
	}
	return out, nil
}

// checkKeyColumns reports a key column list that cannot address schema.
func checkKeyColumns(schema *arrow.Schema, keyCols []int) error {
	if len(keyCols) == 0 {
		return fmt.Errorf("partition: no key columns")
	}
	for _, c := range keyCols {
		if c < 0 || c >= schema.NumFields() {
			return fmt.Errorf("partition: key column %d is out of range: the batch has %d columns (%s)",
				c, schema.NumFields(), schema)
		}
	}
	return nil
}

// rowHasher computes row hashes into buffers it reuses from one batch to
// the next.
type rowHasher struct {
	rows    []uint32 // the row hashes
	scratch []uint32 // value hashes of the second and further key columns
}

// hash returns the row hashes of batch, valid until the next call.
func (h *rowHasher) hash(batch arrow.RecordBatch, keyCols []int) ([]uint32, error) {
	if err := checkKeyColumns(batch.Schema(), keyCols); err != nil {
		return nil, err
	}
	n := int(batch.NumRows())
	h.rows = grow(h.rows, n)
	dst := h.rows
	for i, c := range keyCols {
		out := dst
		if i > 0 {
			h.scratch = grow(h.scratch, n)
			out = h.scratch
		}
		col := batch.Column(c)
		if !hashColumn(col, out) {
			f := batch.Schema().Field(c)
			return nil, fmt.Errorf("%w: key column %d (%q) has type %s; supported: integers, "+
				"floats, bool, strings, binaries, dates, times, timestamps, durations and "+
				"dictionaries of them", ErrUnsupportedKeyType, c, f.Name, col.DataType())
		}
		if i > 0 {
			for r, h := range out {
				dst[r] = murmur3.MixH1(dst[r], murmur3.MixK1(h))
			}
		}
	}
	return dst, nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// hashColumn writes the value hash of each row of arr into out (len
// arr.Len()) and reports whether arr's type is supported.
func hashColumn(arr arrow.Array, out []uint32) bool {
	hasNulls := arr.NullN() > 0
	switch a := arr.(type) {
	case *array.Boolean:
		h0, h1 := murmur3.Uint64(0), murmur3.Uint64(1)
		for i := range out {
			if a.Value(i) {
				out[i] = h1
			} else {
				out[i] = h0
			}
		}
	case *array.Int8:
		hashSigned(a.Values(), out)
	case *array.Int16:
		hashSigned(a.Values(), out)
	case *array.Int32:
		hashSigned(a.Values(), out)
	case *array.Int64:
		hashSigned(a.Values(), out)
	case *array.Uint8:
		hashUnsigned(a.Values(), out)
	case *array.Uint16:
		hashUnsigned(a.Values(), out)
	case *array.Uint32:
		hashUnsigned(a.Values(), out)
	case *array.Uint64:
		hashUnsigned(a.Values(), out)
	case *array.Date32:
		hashSigned(a.Values(), out)
	case *array.Date64:
		hashSigned(a.Values(), out)
	case *array.Time32:
		hashSigned(a.Values(), out)
	case *array.Time64:
		hashSigned(a.Values(), out)
	case *array.Timestamp:
		hashSigned(a.Values(), out)
	case *array.Duration:
		hashSigned(a.Values(), out)
	case *array.Float16:
		for i, v := range a.Values() {
			out[i] = hashFloat(float64(v.Float32()))
		}
	case *array.Float32:
		for i, v := range a.Values() {
			out[i] = hashFloat(float64(v))
		}
	case *array.Float64:
		for i, v := range a.Values() {
			out[i] = hashFloat(v)
		}
	case *array.String:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.LargeString:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.StringView:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.Binary:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.LargeBinary:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.BinaryView:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.FixedSizeBinary:
		hashBytes(a, a.Value, out, hasNulls)
	case *array.Null:
		// Every row is null: NullHash, set below.
	case *array.Dictionary:
		dict := a.Dictionary()
		dictHashes := make([]uint32, dict.Len())
		if !hashColumn(dict, dictHashes) {
			return false
		}
		for i := range out {
			if hasNulls && a.IsNull(i) {
				continue
			}
			out[i] = dictHashes[a.GetValueIndex(i)]
		}
	default:
		return false
	}
	if hasNulls {
		for i := range out {
			if arr.IsNull(i) {
				out[i] = NullHash
			}
		}
	}
	return true
}

func hashSigned[T ~int8 | ~int16 | ~int32 | ~int64](vals []T, out []uint32) {
	for i, v := range vals {
		out[i] = murmur3.Uint64(uint64(int64(v)))
	}
}

func hashUnsigned[T ~uint8 | ~uint16 | ~uint32 | ~uint64](vals []T, out []uint32) {
	for i, v := range vals {
		out[i] = murmur3.Uint64(uint64(v))
	}
}

func hashFloat(f float64) uint32 {
	switch {
	case f == 0:
		return murmur3.Uint64(0) // +0 and -0
	case f != f:
		return murmur3.Uint64(canonicalNaN)
	default:
		return murmur3.Uint64(math.Float64bits(f))
	}
}

// hashBytes hashes value(i) for every row; null rows are skipped (their
// views or offsets need not be valid) and set by the caller.
func hashBytes[T ~string | ~[]byte](arr arrow.Array, value func(int) T, out []uint32, hasNulls bool) {
	for i := range out {
		if hasNulls && arr.IsNull(i) {
			continue
		}
		out[i] = murmur3.Sum32(value(i), 0)
	}
}
