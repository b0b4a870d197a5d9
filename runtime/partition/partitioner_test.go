package partition

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/keygroup"
)

// testBatch returns a batch with columns k (int64, the keys), row (int64,
// the row's index in this batch) and v (string payload "v<row>", null
// every 11th row).
func testBatch(mem memory.Allocator, keys []int64) arrow.RecordBatch {
	kb := array.NewInt64Builder(mem)
	rb := array.NewInt64Builder(mem)
	vb := array.NewStringBuilder(mem)
	defer kb.Release()
	defer rb.Release()
	defer vb.Release()
	for i, k := range keys {
		kb.Append(k)
		rb.Append(int64(i))
		if i%11 == 5 {
			vb.AppendNull()
		} else {
			vb.Append(fmt.Sprintf("v%d", i))
		}
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "row", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	cols := []arrow.Array{kb.NewArray(), rb.NewArray(), vb.NewArray()}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(schema, cols, int64(len(keys)))
}

func seqKeys(n int, mod int64) []int64 {
	keys := make([]int64, n)
	for i := range keys {
		keys[i] = int64(i) % mod
	}
	return keys
}

// rowIDs returns column 1 of a part, the row's index in the input batch
// (the "row" column of testBatch).
func rowIDs(b arrow.RecordBatch) []int64 {
	col := b.Column(1).(*array.Int64)
	return slices.Clone(col.Int64Values())
}

// checkParts checks the invariants of every Split result: ascending distinct
// channels in [0, n), no empty part, input row order kept in each part, and
// every column of each part row equal to the input row it came from. When
// disjoint, every input row is in exactly one part. It returns the channel
// of each input row (the last one for broadcast).
func checkParts(t *testing.T, in arrow.RecordBatch, parts []Part, n int, disjoint bool) []int {
	t.Helper()
	rowChan := make([]int, in.NumRows())
	for i := range rowChan {
		rowChan[i] = -1
	}
	last := -1
	for _, p := range parts {
		if p.Channel <= last || p.Channel >= n {
			t.Fatalf("part channels %v: want ascending, distinct, in [0, %d)", channelsOf(parts), n)
		}
		last = p.Channel
		if p.Batch.NumRows() == 0 {
			t.Fatalf("channel %d: empty part", p.Channel)
		}
		if !p.Batch.Schema().Equal(in.Schema()) {
			t.Fatalf("channel %d: schema %s, want %s", p.Channel, p.Batch.Schema(), in.Schema())
		}
		ids := rowIDs(p.Batch)
		if !slices.IsSorted(ids) {
			t.Fatalf("channel %d: rows %v out of input order", p.Channel, ids)
		}
		for j, r := range ids {
			if disjoint && rowChan[r] != -1 {
				t.Fatalf("row %d in channels %d and %d", r, rowChan[r], p.Channel)
			}
			rowChan[r] = p.Channel
			for c := range int(in.NumCols()) {
				if !array.SliceEqual(p.Batch.Column(c), int64(j), int64(j+1), in.Column(c), r, r+1) {
					t.Fatalf("channel %d row %d column %d differs from input row %d", p.Channel, j, c, r)
				}
			}
		}
	}
	for r, c := range rowChan {
		if c == -1 {
			t.Fatalf("input row %d is in no part", r)
		}
	}
	return rowChan
}

func channelsOf(parts []Part) []int {
	var cs []int
	for _, p := range parts {
		cs = append(cs, p.Channel)
	}
	return cs
}

func mustNew(t *testing.T, kind Kind, cfg Config) Partitioner {
	t.Helper()
	p, err := New(kind, cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", kind, err)
	}
	return p
}

func mustSplit(t *testing.T, p Partitioner, b arrow.RecordBatch) []Part {
	t.Helper()
	parts, err := p.Split(b)
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	t.Cleanup(func() { ReleaseParts(parts) })
	return parts
}

// wholeBatchChannels splits count batches and returns the channel each went
// to, checking that each was passed on whole (the same batch, not a copy).
func wholeBatchChannels(t *testing.T, p Partitioner, mem memory.Allocator, count int) []int {
	t.Helper()
	var got []int
	for i := range count {
		b := testBatch(mem, seqKeys(10+i, 1000))
		parts := mustSplit(t, p, b)
		if len(parts) != 1 || parts[0].Batch != b {
			t.Fatalf("batch %d: parts %v, want the whole batch on one channel", i, channelsOf(parts))
		}
		got = append(got, parts[0].Channel)
		b.Release()
	}
	return got
}

func TestForward(t *testing.T) {
	mem := checkedAllocator(t)
	p := mustNew(t, Forward, Config{NumChannels: 1})
	if got := wholeBatchChannels(t, p, mem, 3); !slices.Equal(got, []int{0, 0, 0}) {
		t.Errorf("forward channels %v, want all 0", got)
	}
}

// With one channel, hash and shuffle send whole batches: no row is hashed
// or drawn.
func TestOneChannelPassesBatchesWhole(t *testing.T) {
	mem := checkedAllocator(t)
	b := testBatch(mem, seqKeys(10, 3))
	defer b.Release()
	for _, kind := range []Kind{Hash, Shuffle} {
		p := mustNew(t, kind, Config{NumChannels: 1, KeyColumns: []int{0}, Allocator: mem})
		parts, err := p.Split(b)
		if err != nil || len(parts) != 1 || parts[0].Batch != b || parts[0].Channel != 0 {
			t.Errorf("%s with one channel: %v, %v; want the batch itself on channel 0", kind, channelsOf(parts), err)
		}
		ReleaseParts(parts)
	}
}

func TestGlobal(t *testing.T) {
	mem := checkedAllocator(t)
	p := mustNew(t, Global, Config{NumChannels: 4})
	if got := wholeBatchChannels(t, p, mem, 5); !slices.Equal(got, []int{0, 0, 0, 0, 0}) {
		t.Errorf("global channels %v, want all 0", got)
	}
}

func TestRebalanceRoundRobinFromRandomStart(t *testing.T) {
	mem := checkedAllocator(t)
	const n = 4
	start := rand.New(rand.NewPCG(7, 11)).IntN(n)
	p := mustNew(t, Rebalance, Config{NumChannels: n, Rand: rand.New(rand.NewPCG(7, 11))})
	got := wholeBatchChannels(t, p, mem, 3*n+1)
	for i, c := range got {
		if want := (start + i) % n; c != want {
			t.Fatalf("rebalance channels %v, want round robin from %d", got, start)
		}
	}
	// The start is random: over seeds, every channel starts.
	starts := map[int]bool{}
	for seed := range uint64(64) {
		p := mustNew(t, Rebalance, Config{NumChannels: n, Rand: rand.New(rand.NewPCG(seed, 0))})
		starts[wholeBatchChannels(t, p, mem, 1)[0]] = true
	}
	if len(starts) != n {
		t.Errorf("64 seeds start rebalance at channels %v, want all %d", starts, n)
	}
	// Without a Rand, a random one is made.
	p = mustNew(t, Rebalance, Config{NumChannels: n})
	got = wholeBatchChannels(t, p, mem, n)
	for i := range got {
		if got[i] != (got[0]+i)%n {
			t.Fatalf("rebalance with default Rand: channels %v, want round robin", got)
		}
	}
}

func TestRescaleRoundRobinFromZero(t *testing.T) {
	mem := checkedAllocator(t)
	p := mustNew(t, Rescale, Config{NumChannels: 3})
	if got := wholeBatchChannels(t, p, mem, 7); !slices.Equal(got, []int{0, 1, 2, 0, 1, 2, 0}) {
		t.Errorf("rescale channels %v, want 0 1 2 0 1 2 0", got)
	}
	one := mustNew(t, Rescale, Config{NumChannels: 1})
	if got := wholeBatchChannels(t, one, mem, 3); !slices.Equal(got, []int{0, 0, 0}) {
		t.Errorf("rescale over one channel: %v, want all 0", got)
	}
}

func TestBroadcast(t *testing.T) {
	mem := checkedAllocator(t)
	p := mustNew(t, Broadcast, Config{NumChannels: 5})
	b := testBatch(mem, seqKeys(100, 7))
	parts, err := p.Split(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(channelsOf(parts), []int{0, 1, 2, 3, 4}) {
		t.Fatalf("broadcast channels %v, want 0..4", channelsOf(parts))
	}
	for _, part := range parts {
		if part.Batch != b {
			t.Fatalf("channel %d got a copy, want the batch itself", part.Channel)
		}
	}
	// One reference per part plus the caller's: releasing them all in any
	// order frees the batch (the checked allocator verifies).
	b.Release()
	ReleaseParts(parts)
}

func TestShufflePerRowReproducible(t *testing.T) {
	mem := checkedAllocator(t)
	const n, rows = 4, 2000
	b := testBatch(mem, seqKeys(rows, 1<<40))
	defer b.Release()
	split := func(seed uint64) []int {
		p := mustNew(t, Shuffle, Config{NumChannels: n, Rand: rand.New(rand.NewPCG(seed, 1)), Allocator: mem})
		return checkParts(t, b, mustSplit(t, p, b), n, true)
	}
	first := split(42)
	if again := split(42); !slices.Equal(first, again) {
		t.Error("shuffle with the same seed assigned rows differently")
	}
	if other := split(43); slices.Equal(first, other) {
		t.Error("shuffle with another seed assigned every row alike")
	}
	counts := make([]int, n)
	for _, c := range first {
		counts[c]++
	}
	for c, k := range counts {
		if k < rows/n/2 {
			t.Errorf("shuffle gave channel %d %d of %d rows (counts %v)", c, k, rows, counts)
		}
	}
	// Per row, not per batch: the channels change along the batch.
	if slices.Equal(first[:10], slices.Repeat(first[:1], 10)) {
		t.Errorf("the first rows all went to channel %d", first[0])
	}
}

func TestHashRoutesByKeyGroup(t *testing.T) {
	mem := checkedAllocator(t)
	keys := make([]int64, 3000)
	for i := range keys {
		keys[i] = int64((i * 31) % 97)
		if i%5 == 0 { // negative and large keys too (small ones are memoized)
			keys[i] = int64(i)*1_000_003 - 5_000_000
		}
	}
	b := testBatch(mem, keys)
	defer b.Release()
	for _, tc := range []struct {
		n, maxP, wantMaxP int
		keyCols           []int
	}{
		{n: 4, maxP: 128, wantMaxP: 128, keyCols: []int{0}},
		{n: 3, maxP: 0, wantMaxP: 128, keyCols: []int{0}}, // default max parallelism
		{n: 7, maxP: 1000, wantMaxP: 1000, keyCols: []int{0}},
		{n: 5, maxP: 256, wantMaxP: 256, keyCols: []int{2, 0}}, // (v, k)
	} {
		t.Run(fmt.Sprintf("n%d_maxP%d_keys%v", tc.n, tc.maxP, tc.keyCols), func(t *testing.T) {
			p := mustNew(t, Hash, Config{NumChannels: tc.n, KeyColumns: tc.keyCols, MaxParallelism: tc.maxP, Allocator: mem})
			rowChan := checkParts(t, b, mustSplit(t, p, b), tc.n, true)
			hashes, err := HashKeys(b, tc.keyCols)
			if err != nil {
				t.Fatal(err)
			}
			chanOfHash := map[int32]int{}
			used := map[int]bool{}
			for r, c := range rowChan {
				kg := keygroup.ForHash(hashes[r], tc.wantMaxP)
				if want := keygroup.Subtask(tc.wantMaxP, tc.n, kg); c != want {
					t.Fatalf("row %d (key group %d) went to channel %d, want %d", r, kg, c, want)
				}
				if rg := keygroup.SubtaskRange(tc.wantMaxP, tc.n, c); !rg.Contains(kg) {
					t.Fatalf("row %d: key group %d outside channel %d's range %v", r, kg, c, rg)
				}
				if prev, ok := chanOfHash[hashes[r]]; ok && prev != c {
					t.Fatalf("equal keys in channels %d and %d", prev, c)
				}
				chanOfHash[hashes[r]] = c
				used[c] = true
			}
			if len(used) != tc.n {
				t.Errorf("97 keys reached channels %v, want all %d", used, tc.n)
			}
		})
	}
}

// Equal keys land together across batches too, and a batch whose rows all
// go to one channel is passed on without a copy.
func TestHashAcrossBatchesAndPassThrough(t *testing.T) {
	mem := checkedAllocator(t)
	p := mustNew(t, Hash, Config{NumChannels: 4, KeyColumns: []int{0}, MaxParallelism: 128, Allocator: mem})
	want := map[int64]int{}
	for i := range 20 {
		b := testBatch(mem, seqKeys(50+i, 13))
		rowChan := checkParts(t, b, mustSplit(t, p, b), 4, true)
		for r, c := range rowChan {
			k := b.Column(0).(*array.Int64).Value(r)
			if prev, ok := want[k]; ok && prev != c {
				t.Fatalf("key %d went to channel %d, before to %d", k, c, prev)
			}
			want[k] = c
		}
		b.Release()
	}
	same := testBatch(mem, []int64{5, 5, 5, 5})
	defer same.Release()
	parts := mustSplit(t, p, same)
	if len(parts) != 1 || parts[0].Batch != same || parts[0].Channel != want[5] {
		t.Errorf("one-key batch: parts on %v, want the batch itself on channel %d", channelsOf(parts), want[5])
	}
	single := mustNew(t, Hash, Config{NumChannels: 1, KeyColumns: []int{0}})
	if parts := mustSplit(t, single, same); len(parts) != 1 || parts[0].Batch != same || parts[0].Channel != 0 {
		t.Errorf("hash over one channel: parts on %v, want the batch itself on 0", channelsOf(parts))
	}
}

// A split's parts are slices of one batch of the rows grouped by channel,
// and its scratch buffers are reused: the parts of a batch stay intact
// while the next batches are split, and hold their buffers until the last
// part is released (the checked allocator sees every byte freed).
func TestHashPartsOutliveTheNextSplit(t *testing.T) {
	mem := checkedAllocator(t)
	p := mustNew(t, Hash, Config{NumChannels: 3, KeyColumns: []int{0}, MaxParallelism: 128, Allocator: mem})
	first := testBatch(mem, seqKeys(500, 29))
	defer first.Release()
	parts, err := p.Split(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 {
		t.Fatalf("parts on %v, want 3 channels", channelsOf(parts))
	}
	for i := range 5 {
		b := testBatch(mem, seqKeys(700+i, 31))
		checkParts(t, b, mustSplit(t, p, b), 3, true)
		b.Release()
	}
	checkParts(t, first, parts, 3, true)
	for _, part := range parts[1:] { // the others go first: the buffers stay
		part.Batch.Release()
	}
	kept := parts[0].Batch
	defer kept.Release()
	for j, r := range rowIDs(kept) {
		for c := range int(first.NumCols()) {
			if !array.SliceEqual(kept.Column(c), int64(j), int64(j+1), first.Column(c), r, r+1) {
				t.Fatalf("after the other parts' release, row %d column %d differs from input row %d", j, c, r)
			}
		}
	}
}

func TestHashSplitErrors(t *testing.T) {
	mem := checkedAllocator(t)
	b := testBatch(mem, seqKeys(10, 3))
	defer b.Release()
	p := mustNew(t, Hash, Config{NumChannels: 2, KeyColumns: []int{3}, Allocator: mem})
	if parts, err := p.Split(b); err == nil || parts != nil || !strings.Contains(err.Error(), "key column 3 is out of range") {
		t.Errorf("Split with key column 3 of 3: %v, %v; want an out-of-range error and no parts", channelsOf(parts), err)
	}
	lists := arrayFromJSON(t, mem, arrow.ListOf(arrow.PrimitiveTypes.Int64), `[[1], [2, 3]]`)
	lb := batchOf(lists)
	defer lb.Release()
	p = mustNew(t, Hash, Config{NumChannels: 2, KeyColumns: []int{0}, Allocator: mem})
	if _, err := p.Split(lb); !errors.Is(err, ErrUnsupportedKeyType) {
		t.Errorf("Split on a list key: %v, want ErrUnsupportedKeyType", err)
	}
}

func TestCustom(t *testing.T) {
	mem := checkedAllocator(t)
	b := testBatch(mem, seqKeys(100, 100))
	defer b.Release()
	var gotN int
	p := mustNew(t, Custom, Config{NumChannels: 3, Allocator: mem, Custom: func(batch arrow.RecordBatch, n int) ([]int, error) {
		gotN = n
		out := make([]int, batch.NumRows())
		for i := range out {
			out[i] = (i / 10) % n
		}
		return out, nil
	}})
	rowChan := checkParts(t, b, mustSplit(t, p, b), 3, true)
	if gotN != 3 {
		t.Errorf("custom function got %d channels, want 3", gotN)
	}
	for r, c := range rowChan {
		if c != (r/10)%3 {
			t.Fatalf("row %d went to channel %d, want %d", r, c, (r/10)%3)
		}
	}

	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		f    CustomFunc
		is   error
		want string
	}{
		{"short", func(arrow.RecordBatch, int) ([]int, error) { return []int{0}, nil }, ErrInvalidChannel, "returned 1 channels for a batch of 100 rows"},
		{"out of range", func(b arrow.RecordBatch, n int) ([]int, error) {
			out := make([]int, b.NumRows())
			out[7] = n
			return out, nil
		}, ErrInvalidChannel, "returned channel 3 for row 7"},
		{"negative", func(b arrow.RecordBatch, n int) ([]int, error) {
			out := make([]int, b.NumRows())
			out[9] = -1
			return out, nil
		}, ErrInvalidChannel, "returned channel -1 for row 9"},
		{"error", func(arrow.RecordBatch, int) ([]int, error) { return nil, boom }, boom, "custom partitioner: boom"},
	} {
		p := mustNew(t, Custom, Config{NumChannels: 3, Allocator: mem, Custom: tc.f})
		parts, err := p.Split(b)
		if !errors.Is(err, tc.is) || parts != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Split = %v, %v; want %v containing %q", tc.name, channelsOf(parts), err, tc.is, tc.want)
		}
	}
}

func TestSplitEmptyBatchHasNoParts(t *testing.T) {
	mem := checkedAllocator(t)
	b := testBatch(mem, nil)
	defer b.Release()
	custom := func(arrow.RecordBatch, int) ([]int, error) { return nil, nil }
	for k := Forward; k <= Custom; k++ {
		n := 3
		if k == Forward {
			n = 1
		}
		p := mustNew(t, k, Config{NumChannels: n, KeyColumns: []int{0}, Custom: custom, Allocator: mem})
		if parts := mustSplit(t, p, b); len(parts) != 0 {
			t.Errorf("%s: empty batch gave parts %v", k, channelsOf(parts))
		}
	}
}

// Take handles every column type: nested, dictionary and null columns are
// split row by row like the rest.
// Fixed-width columns of every width (booleans of one bit a value,
// decimals of 16 bytes), with and without nulls, and a sliced input: the
// parts equal the input rows.
func TestSplitFixedWidthColumns(t *testing.T) {
	mem := checkedAllocator(t)
	const rows = 400
	base := testBatch(mem, seqKeys(rows, 23))
	defer base.Release()
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Float32,
		arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Timestamp_us, arrow.FixedWidthTypes.Date32,
		arrow.FixedWidthTypes.Boolean, &arrow.Decimal128Type{Precision: 20, Scale: 2}, arrow.PrimitiveTypes.Int64,
	}
	cols := append([]arrow.Array{}, base.Columns()...)
	for _, c := range cols {
		c.Retain()
	}
	for i, typ := range types {
		bld := array.NewBuilder(mem, typ)
		for r := range rows {
			if i == len(types)-1 && r%9 == 4 { // the last column has nulls
				bld.AppendNull()
				continue
			}
			if err := bld.AppendValueFromString(fmt.Sprint(r % 2)); err != nil {
				if err := bld.AppendValueFromString(fmt.Sprint(r % 100)); err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
			}
		}
		cols = append(cols, bld.NewArray())
		bld.Release()
	}
	b := batchOf(cols...)
	defer b.Release()
	sliced := b.NewSlice(37, rows-11)
	defer sliced.Release()
	p := mustNew(t, Hash, Config{NumChannels: 3, KeyColumns: []int{0}, MaxParallelism: 128, Allocator: mem})
	checkParts(t, b, mustSplit(t, p, b), 3, true)
	parts := mustSplit(t, p, sliced)
	for _, part := range parts { // "row" counts from the batch's start, not the slice's
		for j, r := range rowIDs(part.Batch) {
			for c := range int(b.NumCols()) {
				if !array.SliceEqual(part.Batch.Column(c), int64(j), int64(j+1), b.Column(c), r, r+1) {
					t.Fatalf("sliced input: channel %d row %d column %d (%s) differs from row %d", part.Channel, j, c, b.Schema().Field(c).Type, r)
				}
			}
		}
	}
}

func TestSplitNestedAndDictionaryColumns(t *testing.T) {
	mem := checkedAllocator(t)
	const rows = 300
	base := testBatch(mem, seqKeys(rows, 17))
	defer base.Release()
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	sb := array.NewStructBuilder(mem, arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true}))
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer lb.Release()
	defer sb.Release()
	defer db.Release()
	for i := range rows {
		if i%7 == 0 {
			lb.AppendNull()
			sb.AppendNull()
			db.AppendNull()
			continue
		}
		lb.Append(true)
		for j := range i % 4 {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + j))
		}
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Float64Builder).Append(float64(i) / 3)
		if err := db.AppendString(fmt.Sprintf("d%d", i%5)); err != nil {
			t.Fatal(err)
		}
	}
	cols := append([]arrow.Array{}, base.Columns()...)
	for _, c := range cols {
		c.Retain()
	}
	cols = append(cols, lb.NewArray(), sb.NewArray(), db.NewArray(), array.MakeArrayOfNull(mem, arrow.Null, rows))
	b := batchOf(cols...)
	defer b.Release()
	for _, kind := range []Kind{Shuffle, Hash} {
		p := mustNew(t, kind, Config{NumChannels: 4, KeyColumns: []int{5}, Rand: rand.New(rand.NewPCG(1, 1)), Allocator: mem})
		checkParts(t, b, mustSplit(t, p, b), 4, true)
	}
}

func TestNewValidation(t *testing.T) {
	custom := func(arrow.RecordBatch, int) ([]int, error) { return nil, nil }
	tests := []struct {
		kind Kind
		cfg  Config
		want []string
	}{
		{Kind(0), Config{NumChannels: 1}, []string{"unknown partitioner kind Kind(0)"}},
		{Kind(99), Config{NumChannels: 1}, []string{"unknown partitioner kind Kind(99)"}},
		{Rebalance, Config{}, []string{"rebalance partitioner", "NumChannels is 0"}},
		{Forward, Config{NumChannels: 3}, []string{"NumChannels is 3; forward has exactly one channel", "pipeline.forward-mismatch"}},
		{Hash, Config{}, []string{"NumChannels is 0", "KeyColumns is empty"}},
		{Hash, Config{NumChannels: 200, KeyColumns: []int{0, -2}, MaxParallelism: 128}, []string{
			"key column -2 is negative", "parallelism 200 exceeds max parallelism 128"}},
		{Hash, Config{NumChannels: 2, KeyColumns: []int{0}, MaxParallelism: 1 << 16}, []string{"max parallelism 65536 is outside [1, 32768]"}},
		{Custom, Config{NumChannels: 2}, []string{"Custom is nil"}},
	}
	for _, tt := range tests {
		_, err := New(tt.kind, tt.cfg)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%s, %+v) = %v, want ErrInvalidConfig", tt.kind, tt.cfg, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%s, %+v) = %q, want it to contain %q", tt.kind, tt.cfg, err, w)
			}
		}
	}
	// Fields a kind does not use are ignored.
	if _, err := New(Global, Config{NumChannels: 2, KeyColumns: []int{-1}, MaxParallelism: -3}); err != nil {
		t.Errorf("New(global) with unused fields: %v", err)
	}
	if _, err := New(Custom, Config{NumChannels: 2, Custom: custom}); err != nil {
		t.Errorf("New(custom): %v", err)
	}
}

func TestNewDoesNotModifyOrRetainConfig(t *testing.T) {
	mem := checkedAllocator(t)
	cfg := Config{NumChannels: 4, KeyColumns: []int{0}}
	p := mustNew(t, Hash, cfg)
	if cfg.MaxParallelism != 0 || cfg.Allocator != nil || cfg.Rand != nil {
		t.Errorf("New modified the caller's Config: %+v", cfg)
	}
	b := testBatch(mem, seqKeys(200, 50))
	defer b.Release()
	before := checkParts(t, b, mustSplit(t, p, b), 4, true)
	cfg.KeyColumns[0] = 2 // must not change the partitioner's key
	if after := checkParts(t, b, mustSplit(t, p, b), 4, true); !slices.Equal(before, after) {
		t.Error("changing the caller's KeyColumns after New changed the partitioner")
	}
}

func TestKind(t *testing.T) {
	want := []string{"forward", "rebalance", "rescale", "shuffle", "broadcast", "global", "hash", "custom"}
	for i, name := range want {
		k := Kind(i + 1)
		if k.String() != name {
			t.Errorf("Kind(%d).String() = %q, want %q", i+1, k, name)
		}
		for _, s := range []string{name, strings.ToUpper(name)} {
			if got, err := ParseKind(s); err != nil || got != k {
				t.Errorf("ParseKind(%q) = %v, %v; want %v", s, got, err, k)
			}
		}
		if got, wantPW := k.IsPointwise(), k == Forward || k == Rescale; got != wantPW {
			t.Errorf("%s.IsPointwise() = %v, want %v", k, got, wantPW)
		}
	}
	if _, err := ParseKind("roundrobin"); err == nil || !strings.Contains(err.Error(), "want one of forward, rebalance") {
		t.Errorf("ParseKind(roundrobin) = %v, want an error listing the kinds", err)
	}
}
