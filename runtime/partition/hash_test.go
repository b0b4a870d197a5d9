package partition

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/internal/murmur3"
)

// arrayFromJSON builds an array of type dt from a JSON list.
func arrayFromJSON(t testing.TB, mem memory.Allocator, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	arr, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
	if err != nil {
		t.Fatalf("array of %s from %s: %v", dt, js, err)
	}
	return arr
}

// batchOf returns a batch with columns c0, c1, ... holding cols, and
// releases cols (the batch keeps its own references).
func batchOf(cols ...arrow.Array) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: c.DataType(), Nullable: true}
	}
	rows := int64(0)
	if len(cols) > 0 {
		rows = int64(cols[0].Len())
	}
	b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return b
}

// hashJSON returns HashKeys of a one-column batch of type dt built from js.
func hashJSON(t *testing.T, mem memory.Allocator, dt arrow.DataType, js string) []int32 {
	t.Helper()
	b := batchOf(arrayFromJSON(t, mem, dt, js))
	defer b.Release()
	h, err := HashKeys(b, []int{0})
	if err != nil {
		t.Fatalf("HashKeys(%s %s): %v", dt, js, err)
	}
	return h
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The hash of a key is part of the checkpoint format: these values must
// never change.
func TestHashKeysGolden(t *testing.T) {
	mem := checkedAllocator(t)
	tests := []struct {
		dt   arrow.DataType
		js   string
		want []int32
	}{
		{arrow.PrimitiveTypes.Int64, `[0, 1, -1, 42, null]`, []int32{int32(murmur3.Uint64(0)), int32(murmur3.Uint64(1)), int32(murmur3.Uint64(math.MaxUint64)), int32(murmur3.Uint64(42)), nullHash32}},
		{arrow.BinaryTypes.String, `["", "flink", "π", null]`, []int32{0, int32(murmur3.Sum32("flink", 0)), int32(murmur3.Sum32("π", 0)), nullHash32}},
		{arrow.PrimitiveTypes.Float64, `[1.5]`, []int32{int32(murmur3.Uint64(math.Float64bits(1.5)))}},
		{arrow.FixedWidthTypes.Boolean, `[false, true]`, []int32{int32(murmur3.Uint64(0)), int32(murmur3.Uint64(1))}},
	}
	for _, tt := range tests {
		if got := hashJSON(t, mem, tt.dt, tt.js); !equalInt32s(got, tt.want) {
			t.Errorf("HashKeys(%s %s) = %v, want %v", tt.dt, tt.js, got, tt.want)
		}
	}
	// Pinned literals, so that a change of the encoding cannot go unnoticed.
	pinned := []struct {
		dt   arrow.DataType
		js   string
		want []int32
	}{
		{arrow.PrimitiveTypes.Int64, `[0, 42, -1]`, []int32{goldenInt0, goldenInt42, goldenIntMinus1}},
		{arrow.BinaryTypes.String, `["flink"]`, []int32{goldenFlink}},
	}
	for _, tt := range pinned {
		if got := hashJSON(t, mem, tt.dt, tt.js); !equalInt32s(got, tt.want) {
			t.Errorf("HashKeys(%s %s) = %v, want pinned %v", tt.dt, tt.js, got, tt.want)
		}
	}
	b := batchOf(arrayFromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[42]`), arrayFromJSON(t, mem, arrow.BinaryTypes.String, `["flink"]`))
	defer b.Release()
	got, err := HashKeys(b, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	h42, hFlink := goldenInt42, goldenFlink
	combined := int32(murmur3.MixH1(uint32(h42), murmur3.MixK1(uint32(hFlink))))
	if got[0] != combined || got[0] != goldenInt42Flink {
		t.Errorf("HashKeys((42, \"flink\")) = %d, want %d (pinned %d)", got[0], combined, goldenInt42Flink)
	}
}

// nullHash32 is NullHash as HashKeys returns it.
var nullHash32 = asInt32(NullHash)

func asInt32(u uint32) int32 { return int32(u) }

// Pinned key hashes (murmur3 x86_32, seed 0, of the encodings in hash.go).
const (
	goldenInt0       int32 = 1669671676
	goldenInt42      int32 = 1871679806
	goldenIntMinus1  int32 = 1651860712
	goldenFlink      int32 = -446148597
	goldenInt42Flink int32 = -1295975401
)

// Keys equal by value hash alike across column types.
func TestHashKeysAcrossTypes(t *testing.T) {
	mem := checkedAllocator(t)
	groups := []struct {
		name string
		js   string
		dts  []arrow.DataType
	}{
		{"small integers", `[0, 1, 7, 100, null]`, []arrow.DataType{
			arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
			arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
			arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Duration_s,
			arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Time32s, arrow.FixedWidthTypes.Time64us,
		}},
		{"negative integers", `[-1, -128, null]`, []arrow.DataType{
			arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		}},
		{"large unsigned", `[4000000000, 0]`, []arrow.DataType{
			arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int64,
		}},
		{"floats", `[1.5, -2.25, 0, 1024, 0.375, null]`, []arrow.DataType{
			arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		}},
		{"strings", `["", "a", "flink", "a longer string than twelve bytes", null]`, []arrow.DataType{
			arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.StringView,
			&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String},
			&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint32, ValueType: arrow.BinaryTypes.String},
		}},
	}
	for _, g := range groups {
		want := hashJSON(t, mem, g.dts[0], g.js)
		for _, dt := range g.dts[1:] {
			if got := hashJSON(t, mem, dt, g.js); !equalInt32s(got, want) {
				t.Errorf("%s: HashKeys(%s %s) = %v, want %v as for %s", g.name, dt, g.js, got, want, g.dts[0])
			}
		}
	}

	// Binary types hash their bytes as strings do ("AQI=" is 0x01 0x02).
	strs := hashJSON(t, mem, arrow.BinaryTypes.String, `["\u0001\u0002", null]`)
	for _, dt := range []arrow.DataType{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary, arrow.BinaryTypes.BinaryView, &arrow.FixedSizeBinaryType{ByteWidth: 2}} {
		if got := hashJSON(t, mem, dt, `["AQI=", null]`); !equalInt32s(got, strs) {
			t.Errorf("HashKeys(%s) = %v, want %v as for the same bytes in a string", dt, got, strs)
		}
	}
}

func TestHashKeysFloatNormalization(t *testing.T) {
	mem := checkedAllocator(t)
	f64 := array.NewFloat64Builder(mem)
	f64.AppendValues([]float64{0, math.Copysign(0, -1), math.NaN(), math.Float64frombits(0x7ff0000000000001), math.Inf(1)}, nil)
	f32 := array.NewFloat32Builder(mem)
	f32.AppendValues([]float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), math.Float32frombits(0xffc00001), float32(math.Inf(1))}, nil)
	f16 := array.NewFloat16Builder(mem)
	f16.AppendValues([]float16.Num{float16.New(0), float16.New(float32(math.Copysign(0, -1))), float16.New(float32(math.NaN())), float16.New(float32(math.NaN())), float16.New(float32(math.Inf(1)))}, nil)
	b := batchOf(f64.NewArray(), f32.NewArray(), f16.NewArray())
	f64.Release()
	f32.Release()
	f16.Release()
	defer b.Release()
	var cols [3][]int32
	for c := range cols {
		h, err := HashKeys(b, []int{c})
		if err != nil {
			t.Fatal(err)
		}
		cols[c] = h
		if h[0] != h[1] {
			t.Errorf("column %s: +0 hashes %d, -0 hashes %d; want equal", b.Schema().Field(c).Type, h[0], h[1])
		}
		if h[2] != h[3] {
			t.Errorf("column %s: NaNs hash %d and %d; want equal", b.Schema().Field(c).Type, h[2], h[3])
		}
		if h[4] == h[0] || h[2] == h[0] {
			t.Errorf("column %s: +Inf, NaN and 0 should hash differently: %v", b.Schema().Field(c).Type, h)
		}
	}
	if !equalInt32s(cols[0], cols[1]) || !equalInt32s(cols[0], cols[2]) {
		t.Errorf("float64 %v, float32 %v and float16 %v hashes differ", cols[0], cols[1], cols[2])
	}
}

// A key hashes the same whatever batch it is in and at whatever offset.
func TestHashKeysIndependentOfChunking(t *testing.T) {
	mem := checkedAllocator(t)
	const n = 1000
	keys := array.NewInt64Builder(mem)
	names := array.NewStringBuilder(mem)
	for i := range n {
		if i%17 == 0 {
			keys.AppendNull()
		} else {
			keys.Append(int64(i*7919) - 5000)
		}
		if i%23 == 0 {
			names.AppendNull()
		} else {
			names.Append(strings.Repeat("x", i%9) + fmt.Sprint(i%50))
		}
	}
	whole := batchOf(keys.NewArray(), names.NewArray())
	keys.Release()
	names.Release()
	defer whole.Release()

	for _, keyCols := range [][]int{{0}, {1}, {0, 1}, {1, 0}} {
		want, err := HashKeys(whole, keyCols)
		if err != nil {
			t.Fatal(err)
		}
		again, err := HashKeys(whole, keyCols)
		if err != nil || !equalInt32s(again, want) {
			t.Fatalf("keys %v: second HashKeys differs (%v)", keyCols, err)
		}
		for _, chunk := range []int{1, 3, 64, 333, n} {
			for start := 0; start < n; start += chunk {
				end := min(start+chunk, n)
				slice := whole.NewSlice(int64(start), int64(end))
				got, err := HashKeys(slice, keyCols)
				slice.Release()
				if err != nil {
					t.Fatal(err)
				}
				if !equalInt32s(got, want[start:end]) {
					t.Fatalf("keys %v: rows [%d, %d) hash %v in a slice, %v in the whole batch", keyCols, start, end, got, want[start:end])
				}
			}
		}
		// A batch built afresh from a subset of rows.
		kb := array.NewInt64Builder(mem)
		sb := array.NewStringBuilder(mem)
		var rows []int
		for i := n - 1; i >= 0; i -= 37 {
			rows = append(rows, i)
			k, s := whole.Column(0).(*array.Int64), whole.Column(1).(*array.String)
			if k.IsNull(i) {
				kb.AppendNull()
			} else {
				kb.Append(k.Value(i))
			}
			if s.IsNull(i) {
				sb.AppendNull()
			} else {
				sb.Append(s.Value(i))
			}
		}
		fresh := batchOf(kb.NewArray(), sb.NewArray())
		kb.Release()
		sb.Release()
		got, err := HashKeys(fresh, keyCols)
		fresh.Release()
		if err != nil {
			t.Fatal(err)
		}
		for j, i := range rows {
			if got[j] != want[i] {
				t.Fatalf("keys %v: row %d hashes %d in a new batch, %d in the whole batch", keyCols, i, got[j], want[i])
			}
		}
	}
}

func TestHashKeysMultipleColumns(t *testing.T) {
	mem := checkedAllocator(t)
	b := batchOf(
		arrayFromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[1, 2, 1, null, 1]`),
		arrayFromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[2, 1, 2, 1, null]`),
	)
	defer b.Release()
	ab, err := HashKeys(b, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if ab[0] == ab[1] {
		t.Errorf("keys (1, 2) and (2, 1) hash alike: %d", ab[0])
	}
	if ab[0] != ab[2] {
		t.Errorf("equal keys (1, 2) hash %d and %d", ab[0], ab[2])
	}
	if ab[3] == ab[4] {
		t.Errorf("keys (null, 1) and (1, null) hash alike: %d", ab[3])
	}
	a, _ := HashKeys(b, []int{0})
	c, _ := HashKeys(b, []int{1})
	for i := range ab {
		if want := int32(murmur3.MixH1(uint32(a[i]), murmur3.MixK1(uint32(c[i])))); ab[i] != want {
			t.Errorf("row %d: hash %d, want the documented combination %d", i, ab[i], want)
		}
	}
}

func TestHashKeysErrors(t *testing.T) {
	mem := checkedAllocator(t)
	lists := arrayFromJSON(t, mem, arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1, 2]]`)
	indices := arrayFromJSON(t, mem, arrow.PrimitiveTypes.Int8, `[0]`)
	dictOfLists := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: lists.DataType()}, indices, lists)
	indices.Release()
	b := batchOf(arrayFromJSON(t, mem, arrow.PrimitiveTypes.Int64, `[1]`), lists, dictOfLists)
	defer b.Release()
	if _, err := HashKeys(b, []int{0, 1}); !errors.Is(err, ErrUnsupportedKeyType) || !strings.Contains(err.Error(), `key column 1 ("c1") has type list<item: int32, nullable>`) {
		t.Errorf("HashKeys on a list column: %v, want ErrUnsupportedKeyType naming the column", err)
	}
	if _, err := HashKeys(b, []int{2}); !errors.Is(err, ErrUnsupportedKeyType) {
		t.Errorf("HashKeys on a dictionary of lists: %v, want ErrUnsupportedKeyType", err)
	}
	if _, err := HashKeys(b, []int{3}); err == nil || !strings.Contains(err.Error(), "key column 3 is out of range: the batch has 3 columns") {
		t.Errorf("HashKeys with key column 3: %v, want out of range", err)
	}
	if _, err := HashKeys(b, []int{-1}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("HashKeys with key column -1: %v, want out of range", err)
	}
	if _, err := HashKeys(b, nil); err == nil || !strings.Contains(err.Error(), "no key columns") {
		t.Errorf("HashKeys without key columns: %v, want an error", err)
	}
	if _, err := KeyGroups(b, []int{0}, 0); !errors.Is(err, keygroup.ErrInvalidParallelism) {
		t.Errorf("KeyGroups with max parallelism 0: %v, want keygroup.ErrInvalidParallelism", err)
	}
}

func TestKeyGroups(t *testing.T) {
	mem := checkedAllocator(t)
	kb := array.NewInt64Builder(mem)
	for i := range 5000 {
		kb.Append(int64(i))
	}
	b := batchOf(kb.NewArray())
	kb.Release()
	defer b.Release()
	hashes, err := HashKeys(b, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	for _, maxP := range []int{1, 128, 1000, 32768} {
		kgs, err := KeyGroups(b, []int{0}, maxP)
		if err != nil {
			t.Fatal(err)
		}
		used := map[int32]bool{}
		for i, kg := range kgs {
			if want := int32(keygroup.ForHash(hashes[i], maxP)); kg != want {
				t.Fatalf("maxP %d row %d: key group %d, want %d", maxP, i, kg, want)
			}
			used[kg] = true
		}
		if maxP <= 128 && len(used) != maxP {
			t.Errorf("maxP %d: 5000 keys use %d key groups, want all", maxP, len(used))
		}
	}
}
