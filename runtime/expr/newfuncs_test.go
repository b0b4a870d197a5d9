package expr

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/runtime/plan"
)

func typedLit(v int64, typ string) plan.Expr {
	return &plan.Literal{Kind: plan.LiteralInt, Int: v, Type: typ}
}

func nullLit(typ string) plan.Expr {
	return &plan.Literal{Kind: plan.LiteralNull, Type: typ}
}

func typedStrLit(v, typ string) plan.Expr {
	return &plan.Literal{Kind: plan.LiteralString, String: v, Type: typ}
}

// Rows (UTC): 2024-03-10 23:59:30, 2024-12-31 13:45:10.5, null, 1969-12-31 23:15:00.
var instants = []time.Time{
	time.Date(2024, 3, 10, 23, 59, 30, 0, time.UTC),
	time.Date(2024, 12, 31, 13, 45, 10, 500_000_000, time.UTC),
	{},
	time.Date(1969, 12, 31, 23, 15, 0, 0, time.UTC),
}

var timeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "ts_kolkata", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Asia/Kolkata"}, Nullable: true},
	{Name: "ts_utc", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "d_ms", Type: &arrow.DurationType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

func timeBatch(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, timeSchema)
	defer b.Release()
	valid := []bool{true, true, false, true}
	for i := range 6 {
		unit := timeSchema.Field(i).Type.(*arrow.TimestampType).Unit
		for j, t := range instants {
			if !valid[j] {
				b.Field(i).AppendNull()
				continue
			}
			b.Field(i).(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixNano() / int64(unit.Multiplier())))
		}
	}
	b.Field(6).(*array.DurationBuilder).AppendValues([]arrow.Duration{1500, -60_000, 0, 0}, []bool{true, true, true, false})
	b.Field(7).(*array.Int64Builder).AppendValues([]int64{1, 2, 0, 4}, []bool{true, true, false, true})
	b.Field(8).(*array.Float64Builder).AppendValues([]float64{0.5, 2.5, 3, 0}, []bool{true, true, true, false})
	b.Field(9).(*array.StringBuilder).AppendValues([]string{"a", "b", "c", ""}, []bool{true, true, true, false})
	b.Field(10).(*array.BooleanBuilder).AppendValues([]bool{true, false, false, true}, []bool{true, true, false, true})
	return b.NewRecordBatch()
}

// renderValues prints timestamps as UTC instants (arrow-go prints their
// integers), other arrays as arrow-go does.
func renderValues(a arrow.Array) string {
	ts, ok := a.(*array.Timestamp)
	if !ok {
		return a.String()
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	parts := make([]string, ts.Len())
	for i, v := range ts.Values() {
		if ts.IsNull(i) {
			parts[i] = "(null)"
			continue
		}
		parts[i] = v.ToTime(unit).UTC().Format("2006-01-02 15:04:05.999999999")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func evalOn(t *testing.T, e plan.Expr) (string, string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := timeBatch(mem)
	defer batch.Release()
	c, err := Compile(e, timeSchema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Eval(compute.WithAllocator(context.Background(), mem), batch)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !arrow.TypeEqual(got.DataType(), c.Type()) {
		t.Errorf("%s: Eval gave %s, Type() says %s", c, got.DataType(), c.Type())
	}
	return c.Type().String(), renderValues(got)
}

func msDuration(d time.Duration) plan.Expr { return typedLit(d.Milliseconds(), "duration[ms]") }

func TestDtFields(t *testing.T) {
	for _, tc := range []struct {
		name, field, column, want string
	}{
		{"year s", "year", "ts_s", "[2024 2024 (null) 1969]"},
		{"month ms", "month", "ts_ms", "[3 12 (null) 12]"},
		{"day us", "day", "ts_us", "[10 31 (null) 31]"},
		{"hour ns", "hour", "ts_ns", "[23 13 (null) 23]"},
		{"minute ns", "minute", "ts_ns", "[59 45 (null) 15]"},
		// Kolkata is UTC+05:30: 2024-03-10 23:59:30 UTC is 2024-03-11 05:29:30 there.
		{"day in the zone", "day", "ts_kolkata", "[11 31 (null) 1]"},
		{"year in the zone", "year", "ts_kolkata", "[2024 2024 (null) 1970]"},
		{"hour in the zone", "hour", "ts_kolkata", "[5 19 (null) 4]"},
		{"minute in the zone", "minute", "ts_kolkata", "[29 15 (null) 45]"},
		{"utc zone", "hour", "ts_utc", "[23 13 (null) 23]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, got := evalOn(t, call(tc.field, col(tc.column)))
			if typ != "int64" || got != tc.want {
				t.Errorf("%s(%s) = %s %s, want int64 %s", tc.field, tc.column, typ, got, tc.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name, column string
		every        time.Duration
		want         string
	}{
		{"5 min of ms", "ts_ms", 5 * time.Minute, "[2024-03-10 23:55:00 2024-12-31 13:45:00 (null) 1969-12-31 23:15:00]"},
		{"1 h of s before the epoch", "ts_s", time.Hour, "[2024-03-10 23:00:00 2024-12-31 13:00:00 (null) 1969-12-31 23:00:00]"},
		{"1 s of ns", "ts_ns", time.Second, "[2024-03-10 23:59:30 2024-12-31 13:45:10 (null) 1969-12-31 23:15:00]"},
		{"1 d of us", "ts_us", 24 * time.Hour, "[2024-03-10 00:00:00 2024-12-31 00:00:00 (null) 1969-12-31 00:00:00]"},
		// Local hours of UTC+05:30 start at :30 UTC; arrow-go prints the UTC instant.
		{"1 h in the zone", "ts_kolkata", time.Hour, "[2024-03-10 23:30:00 2024-12-31 13:30:00 (null) 1969-12-31 22:30:00]"},
		{"1 d in the zone", "ts_kolkata", 24 * time.Hour, "[2024-03-10 18:30:00 2024-12-30 18:30:00 (null) 1969-12-31 18:30:00]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, got := evalOn(t, call("truncate", col(tc.column), msDuration(tc.every)))
			want := timeSchema.Field(timeSchema.FieldIndices(tc.column)[0]).Type.String()
			if typ != want {
				t.Errorf("type %s, want %s", typ, want)
			}
			if got != tc.want {
				t.Errorf("truncate(%s, %s) = %s, want %s", tc.column, tc.every, got, tc.want)
			}
		})
	}
}

func TestTimestampArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		typ  string
		want string
	}{
		{"ms + 90 s", call("add", col("ts_ms"), msDuration(90*time.Second)), "timestamp[ms]",
			"[2024-03-11 00:01:00 2024-12-31 13:46:40.5 (null) 1969-12-31 23:16:30]"},
		{"duration + s becomes ms", call("add", msDuration(1500*time.Millisecond), col("ts_s")), "timestamp[ms]",
			"[2024-03-10 23:59:31.5 2024-12-31 13:45:11.5 (null) 1969-12-31 23:15:01.5]"},
		{"ns - duration column", call("subtract", col("ts_ns"), col("d_ms")), "timestamp[ns]",
			"[2024-03-10 23:59:28.5 2024-12-31 13:46:10.5 (null) (null)]"},
		{"zone is kept", call("add", col("ts_kolkata"), msDuration(time.Hour)), "timestamp[ms, tz=Asia/Kolkata]", ""},
		{"timestamp - timestamp", call("subtract", col("ts_us"), col("ts_s")), "duration[us]", "[0 500000 (null) 0]"},
		{"timestamp - shifted", call("subtract", col("ts_ms"), call("subtract", col("ts_ms"), msDuration(time.Minute))), "duration[ms]", "[60000 60000 (null) 60000]"},
		{"duration arithmetic", call("add", col("d_ms"), typedLit(2, "duration[s]")), "duration[ms]", "[3500 -58000 2000 (null)]"},
		{"compare mixed units", call("less", col("ts_s"), col("ts_ns")), "bool", "[false true (null) false]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, got := evalOn(t, tc.expr)
			if typ != tc.typ {
				t.Errorf("type %s, want %s", typ, tc.typ)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	// The kernels' unit alignment must not rewrite the schema's types.
	if got := timeSchema.Field(0).Type.String(); got != "timestamp[s]" {
		t.Fatalf("the schema's ts_s became %s", got)
	}
}

func TestIsInBetweenWhen(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		typ  string
		want string
	}{
		{"is_in ints", call("is_in", col("x"), intLit(1), intLit(4)), "bool", "[true false (null) true]"},
		{"is_in no match with a null in the list is null", call("is_in", col("x"), intLit(1), nullLit("null")), "bool", "[true (null) (null) (null)]"},
		{"is_in strings", call("is_in", col("s"), strLit("b"), strLit("z")), "bool", "[false true false (null)]"},
		{"is_in int literal for float", call("is_in", col("f"), intLit(3)), "bool", "[false false true (null)]"},
		{"is_in empty", call("is_in", col("x")), "bool", "[false false (null) false]"},
		{"is_in timestamps", call("is_in", col("ts_ms"), typedStrLit("2024-03-10 23:59:30", "timestamp[ms]")), "bool", "[true false (null) false]"},
		{"between inclusive", call("between", col("x"), intLit(2), intLit(4)), "bool", "[false true (null) true]"},
		{"between float bounds", call("between", col("f"), intLit(1), floatLit(2.5)), "bool", "[false true false (null)]"},
		{"between null bound", call("between", col("x"), nullLit("int64"), intLit(3)), "bool", "[(null) (null) (null) false]"},
		{"between timestamps of two units", call("between", col("ts_ns"), call("add", col("ts_s"), msDuration(time.Millisecond)), col("ts_ms")), "bool", "[false true (null) false]"},
		{"when then otherwise", call("case_when", call("greater", col("x"), intLit(1)), strLit("big"), strLit("small")), "utf8", `["small" "big" "small" "big"]`},
		{"when without otherwise is null", call("case_when", call("greater", col("x"), intLit(1)), col("x"), nullLit("null")), "int64", "[(null) 2 (null) 4]"},
		{"first true wins, null condition is false", call("case_when", col("b"), intLit(10), call("greater", col("f"), floatLit(1)), floatLit(0.5), col("x")),
			"float64", "[10 0.5 0.5 10]"},
		{"int and float make float", call("case_when", col("b"), col("x"), col("f")), "float64", "[1 2.5 3 4]"},
		{"when on timestamps", call("case_when", col("b"), col("ts_ms"), call("add", col("ts_ms"), msDuration(time.Second))), "timestamp[ms]", ""},
		{"all literals broadcast", call("case_when", nullLit("bool"), intLit(1), intLit(2)), "int64", "[2 2 2 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, got := evalOn(t, tc.expr)
			if typ != tc.typ {
				t.Errorf("type %s, want %s", typ, tc.typ)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewFunctionTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr plan.Expr
		want string
	}{
		{"year of int", call("year", col("x")), `expr: x.dt.year(): dt.year needs a timestamp, got int64; parse or cast the column first`},
		{"truncate of string", call("truncate", col("s"), msDuration(time.Second)), "dt.truncate needs a timestamp, got utf8"},
		{"truncate by a column", call("truncate", col("ts_ms"), col("d_ms")), "dt.truncate takes a constant duration"},
		{"truncate by zero", call("truncate", col("ts_ms"), msDuration(0)), "needs a positive duration"},
		{"truncate finer than the unit", call("truncate", col("ts_s"), msDuration(500*time.Millisecond)), "not a whole number of the timestamp's unit (s)"},
		{"timestamp + int", call("add", col("ts_ms"), intLit(5)), `a timestamp can only be added to a duration (a datetime.timedelta or a string such as "5 min"), not to int64`},
		{"timestamp + timestamp", call("add", col("ts_ms"), col("ts_s")), "cannot add two timestamps"},
		{"int - timestamp", call("subtract", intLit(5), col("ts_ms")), "cannot subtract a timestamp"},
		{"zoned - naive", call("subtract", col("ts_kolkata"), col("ts_ms")), "different time zones"},
		{"timestamp * 2", call("multiply", col("ts_ms"), intLit(2)), "multiply does not apply to timestamps"},
		{"is_in value of another type", call("is_in", col("x"), strLit("a")), `expr: x.is_in([a]): value a (utf8) does not convert to int64 exactly, the type of x`},
		{"is_in value that would truncate", call("is_in", col("x"), floatLit(2.5)), "value 2.5 (float64) does not convert to int64 exactly"},
		{"is_in with a column", call("is_in", col("x"), col("x")), "is_in takes constant values"},
		{"between string and int", call("between", col("s"), intLit(1), intLit(2)), "cannot compare s (utf8) with 1 (int64)"},
		{"between arity", call("between", col("x"), intLit(1)), "between takes 3 argument(s), got 2"},
		{"when condition not bool", call("case_when", col("x"), intLit(1), intLit(2)), "the condition x is int64, not bool"},
		{"when values without a common type", call("case_when", col("b"), col("s"), col("x")), "types utf8, int64, which have no common type"},
		{"when arity", call("case_when", col("b"), col("x")), "case_when takes pairs"},
		{"bad zone", call("hour", col("x")), "needs a timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr, timeSchema)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	zoned := arrow.NewSchema([]arrow.Field{{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Mars/Olympus"}}}, nil)
	if _, err := Compile(call("hour", col("t")), zoned); err == nil || !strings.Contains(err.Error(), "unknown time zone") {
		t.Errorf("unknown zone: %v", err)
	}
}
