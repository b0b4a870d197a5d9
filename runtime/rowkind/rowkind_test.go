package rowkind

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestKindValuesAreFlinks(t *testing.T) {
	// Flink's RowKind.toByteValue: part of the format.
	want := map[Kind]struct {
		b int8
		s string
	}{Insert: {0, "+I"}, UpdateBefore: {1, "-U"}, UpdateAfter: {2, "+U"}, Delete: {3, "-D"}}
	for k, w := range want {
		if int8(k) != w.b || k.String() != w.s {
			t.Errorf("%v: byte %d string %q, want %d %q", k, int8(k), k.String(), w.b, w.s)
		}
		if p, err := Parse(w.s); err != nil || p != k {
			t.Errorf("Parse(%q) = %v, %v", w.s, p, err)
		}
	}
	if !Insert.IsAccumulate() || !UpdateAfter.IsAccumulate() || UpdateBefore.IsAccumulate() || Delete.IsAccumulate() {
		t.Error("IsAccumulate: want +I and +U only")
	}
	if Kind(4).Valid() || Kind(-1).Valid() {
		t.Error("4 and -1 must not be valid kinds")
	}
	if _, err := Parse("+X"); err == nil {
		t.Error("Parse(+X): want an error")
	}
}

func TestModes(t *testing.T) {
	for _, m := range []Mode{AppendOnly, Upsert, Retract} {
		if p, err := ParseMode(m.String()); err != nil || p != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), p, err)
		}
	}
	if AppendOnly.IsChangelog() || !Upsert.IsChangelog() || !Retract.IsChangelog() {
		t.Error("IsChangelog")
	}
	if got := Describe(Upsert, []string{"a", "b"}); got != "upsert(a, b)" {
		t.Errorf("Describe = %q", got)
	}
	if got := len(Upsert.Kinds()); got != 3 {
		t.Errorf("upsert kinds: %d, want 3 (no -U)", got)
	}
}

func TestAttachStrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	xb := array.NewInt64Builder(mem)
	xb.AppendValues([]int64{1, 2, 3}, nil)
	x := xb.NewArray()
	xb.Release()
	values := array.NewRecordBatch(schema, []arrow.Array{x}, 3)
	x.Release()
	defer values.Release()

	if KindsOf(values) != nil || Has(values.Schema()) {
		t.Fatal("a batch without the column has no kinds")
	}
	kinds := NewArray(mem, func(yield func(Kind) bool) {
		for _, k := range []Kind{Insert, UpdateBefore, UpdateAfter} {
			if !yield(k) {
				return
			}
		}
	})
	b, err := Attach(values, kinds)
	kinds.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if Index(b.Schema()) != 1 || b.Schema().Field(1).Name != Column {
		t.Fatalf("schema %s", b.Schema())
	}
	if err := Validate(b); err != nil {
		t.Fatal(err)
	}
	if _, err := Attach(b, KindsOf(b)); err == nil {
		t.Error("attaching twice: want an error")
	}
	v, k := Strip(b)
	defer v.Release()
	defer k.Release()
	if v.NumCols() != 1 || Has(v.Schema()) {
		t.Errorf("stripped schema %s", v.Schema())
	}
	if At(k, 1) != UpdateBefore || At(nil, 0) != Insert {
		t.Errorf("kinds %v", k)
	}
	taken := Take(mem, k, []int{2, 0})
	defer taken.Release()
	if At(taken, 0) != UpdateAfter || At(taken, 1) != Insert {
		t.Errorf("Take: %v", taken)
	}
	all, err := AttachConstant(mem, v, Delete)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Release()
	if At(KindsOf(all), 2) != Delete {
		t.Errorf("AttachConstant: %v", KindsOf(all))
	}

	bad := NewArray(mem, func(yield func(Kind) bool) {
		for _, k := range []Kind{Insert, 7, Insert} {
			if !yield(k) {
				return
			}
		}
	})
	defer bad.Release()
	wrong, err := Attach(v, bad)
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Release()
	if err := Validate(wrong); err == nil {
		t.Error("Validate: want an error for kind 7")
	}
}
