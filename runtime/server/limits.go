package server

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/flinkgo/flinkgo/internal/arrowipc"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// What one request may ask of the server. The message cap
// (--max-message-size) bounds a request's bytes, not what it costs: a
// name is copied into the plan, its explanation, events and logs, and each
// column costs the planner far more than its bytes on the wire (measured:
// a 63 MiB job name peaked at 775 MiB, a 15 MiB plan of 1 000 000 columns
// at 3 GiB; integration/bench/requestmem). A plan over a limit is refused
// before it is planned (INVALID_ARGUMENT, see checkLimits), so that what a
// request costs stays proportional to its bytes with a small factor.
const (
	// MaxNameBytes bounds every name of a plan: the job's, its nodes' and
	// uids, column and key names, in the plan and in its Arrow schemas.
	MaxNameBytes = 4096
	// MaxColumns bounds the columns of one node: a select's, the fields of
	// an Arrow schema (output schemas, inline tables, UDF results), the
	// aggregates of an aggregation.
	MaxColumns = 10_000
	// MaxPlanElements bounds the parts of one plan: its messages (nodes,
	// expressions, named columns, ...) and the entries of its lists.
	MaxPlanElements = 200_000
)

// longStrings are the string fields of a plan that are not names and may
// be longer than MaxNameBytes: they are not copied into names, schemas or
// logs.
var longStrings = map[protoreflect.FullName]bool{
	"flinkgo.plan.v1.Literal.string_value":  true,
	"flinkgo.worker.v1.UdfSpec.source_text": true,
}

// LimitError is a plan over one of the limits above; the server answers it
// with INVALID_ARGUMENT. Its message never holds the offending content.
type LimitError struct{ msg string }

func (e *LimitError) Error() string { return e.msg }

func limitErrorf(format string, args ...any) error {
	return &LimitError{msg: "server: the plan is refused: " + fmt.Sprintf(format, args...)}
}

// checkLimits checks a plan against the limits of one request, before
// anything copies it: a cost proportional to its size, and it stops at the
// first problem.
func checkLimits(jp *planpb.JobPlan) error {
	if jp == nil {
		return nil
	}
	for _, n := range jp.GetNodes() {
		if err := checkColumnCounts(n); err != nil {
			return err
		}
	}
	w := &limitWalker{}
	if err := w.message(jp.ProtoReflect(), fieldPath{}); err != nil {
		return err
	}
	for _, n := range jp.GetNodes() {
		if err := checkSchemas(n); err != nil {
			return err
		}
	}
	return nil
}

// checkColumnCounts checks the columns of one node's select and
// aggregates.
func checkColumnCounts(n *planpb.Node) error {
	where := fmt.Sprintf("node %d", n.GetId())
	count := func(what string, got int) error {
		if got > MaxColumns {
			return limitErrorf("%s %s %d columns; a node may have at most %d", where, what, got, MaxColumns)
		}
		return nil
	}
	if err := count("selects", len(n.GetSelect().GetColumns())); err != nil {
		return err
	}
	return count("aggregates", len(n.GetKeyedAggregate().GetAggregates())+len(n.GetWindowAggregate().GetAggregates()))
}

// checkSchemas checks the Arrow schemas a node carries, whose names
// protobuf does not check: they must be UTF-8 to be sent back in any
// message.
func checkSchemas(n *planpb.Node) error {
	where := fmt.Sprintf("node %d", n.GetId())
	schemas := map[string][]byte{"output schema": n.GetOutputSchema(), "inline table": n.GetSource().GetArrow().GetIpc()}
	for what, data := range schemas {
		if len(data) == 0 {
			continue
		}
		s, err := arrowipc.DecodeSchema(data)
		if err != nil {
			continue // not a limit: the planner or the source says what is wrong with it
		}
		if err := checkFields(where+"'s "+what, s.Fields()); err != nil {
			return err
		}
	}
	return nil
}

// checkFields checks the names and number of an Arrow schema's fields,
// nested ones included.
func checkFields(where string, fields []arrow.Field) error {
	if len(fields) > MaxColumns {
		return limitErrorf("%s has %d columns; at most %d", where, len(fields), MaxColumns)
	}
	for i, f := range fields {
		if err := checkName(fmt.Sprintf("%s: the name of column %d", where, i), f.Name); err != nil {
			return err
		}
		if nested, ok := f.Type.(arrow.NestedType); ok {
			if err := checkFields(fmt.Sprintf("%s: column %q", where, f.Name), nested.Fields()); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkName checks one name; the error says how long it is, or where its
// bytes are not UTF-8, never what it holds.
func checkName(what, name string) error {
	if len(name) > MaxNameBytes {
		return limitErrorf("%s is %d bytes long; names may be at most %d bytes", what, len(name), MaxNameBytes)
	}
	if !utf8.ValidString(name) {
		bad := 0
		for bad < len(name) {
			r, size := utf8.DecodeRuneInString(name[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return limitErrorf("%s is not valid UTF-8 (at byte %d); names must be UTF-8 text", what, bad)
	}
	return nil
}

// fieldPath is where the walker is in a plan, rendered only for an error
// (a plan may have 100 000s of parts).
type fieldPath []pathStep

type pathStep struct {
	field protoreflect.FieldDescriptor
	index int // in a list; -1 otherwise
}

func (p fieldPath) String() string {
	var b strings.Builder
	b.WriteString("plan")
	for _, s := range p {
		b.WriteByte('.')
		b.WriteString(string(s.field.Name()))
		if s.index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		}
	}
	return b.String()
}

// limitWalker visits every part of a plan, counting them against
// MaxPlanElements and checking the length of every name.
type limitWalker struct{ elements int }

func (w *limitWalker) count(n int, path fieldPath) error {
	w.elements += n
	if w.elements > MaxPlanElements {
		return limitErrorf("it has more than %d parts (nodes, expressions, columns, list entries; over the limit at %s); split the job or compute wide rows in a UDF", MaxPlanElements, path)
	}
	return nil
}

func (w *limitWalker) message(m protoreflect.Message, path fieldPath) error {
	if err := w.count(1, path); err != nil {
		return err
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		err = w.field(fd, v, path)
		return err == nil
	})
	return err
}

func (w *limitWalker) field(fd protoreflect.FieldDescriptor, v protoreflect.Value, path fieldPath) error {
	here := append(path, pathStep{field: fd, index: -1})
	switch {
	case fd.IsList():
		list := v.List()
		if err := w.count(list.Len(), here); err != nil {
			return err
		}
		for i := range list.Len() {
			if err := w.single(fd, list.Get(i), append(path, pathStep{field: fd, index: i})); err != nil {
				return err
			}
		}
	case fd.IsMap():
		var err error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			if err = w.count(1, here); err != nil {
				return false
			}
			if err = w.name(fd, k.String(), here); err != nil {
				return false
			}
			if mv.Interface() != nil && fd.MapValue().Kind() == protoreflect.MessageKind {
				err = w.message(mv.Message(), here)
			}
			return err == nil
		})
		return err
	default:
		return w.single(fd, v, here)
	}
	return nil
}

func (w *limitWalker) single(fd protoreflect.FieldDescriptor, v protoreflect.Value, path fieldPath) error {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return w.message(v.Message(), path)
	case protoreflect.StringKind:
		if longStrings[fd.FullName()] {
			return nil
		}
		return w.name(fd, v.String(), path)
	}
	return nil
}

// name checks a string of the plan that is not one of longStrings: a
// name, key, path or option, as long as a name at most.
func (w *limitWalker) name(_ protoreflect.FieldDescriptor, s string, path fieldPath) error {
	if len(s) > MaxNameBytes {
		return checkName(path.String(), s)
	}
	return nil
}

// columnLists are the list fields checked against MaxColumns.
var columnLists = map[protoreflect.FullName]string{
	"flinkgo.plan.v1.Select.columns":             "a select selects",
	"flinkgo.plan.v1.KeyedAggregate.aggregates":  "an aggregation has",
	"flinkgo.plan.v1.WindowAggregate.aggregates": "a window aggregation has",
}

// maxScanDepth bounds the nesting scanWire follows (protobuf's decoder
// refuses deeper messages at 10 000 levels; what scanWire does not reach,
// checkLimits checks after decoding).
const maxScanDepth = 100

// scanWire checks the encoded request b, a message of md, against the
// limits before it is decoded, so that a refused request costs its bytes
// only, not their decoded copies: names longer than MaxNameBytes, column
// lists over MaxColumns, more than MaxPlanElements parts. It reads only
// what it can parse: malformed bytes are the decoder's to report. It
// counts parts as checkLimits does, or fewer.
func scanWire(b []byte, md protoreflect.MessageDescriptor) error {
	parts := 0
	return scanMessage(b, md, 0, &parts)
}

func scanMessage(b []byte, md protoreflect.MessageDescriptor, depth int, parts *int) error {
	if err := scanColumnCounts(b, md); err != nil {
		return err
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if fd.IsList() {
			*parts++
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			if len(v) > MaxNameBytes && !longStrings[fd.FullName()] && !fd.ContainingMessage().IsMapEntry() {
				return limitErrorf("a %s is %d bytes long; names may be at most %d bytes", fd.FullName(), len(v), MaxNameBytes)
			}
		case protoreflect.MessageKind:
			*parts++
			if *parts > MaxPlanElements {
				return limitErrorf("it has more than %d parts (nodes, expressions, columns, list entries); split the job or compute wide rows in a UDF", MaxPlanElements)
			}
			if depth < maxScanDepth && !fd.IsMap() {
				if err := scanMessage(v, fd.Message(), depth+1, parts); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scanColumnCounts counts the entries of md's column lists in b, before
// they are visited (so that a wide select says so, not that the plan has
// too many parts).
func scanColumnCounts(b []byte, md protoreflect.MessageDescriptor) error {
	var lists []protoreflect.FieldDescriptor
	for i := range md.Fields().Len() {
		if _, ok := columnLists[md.Fields().Get(i).FullName()]; ok {
			lists = append(lists, md.Fields().Get(i))
		}
	}
	for _, fd := range lists {
		count := 0
		for rest := b; len(rest) > 0; {
			num, typ, n := protowire.ConsumeTag(rest)
			if n < 0 {
				break
			}
			rest = rest[n:]
			if n = protowire.ConsumeFieldValue(num, typ, rest); n < 0 {
				break
			}
			rest = rest[n:]
			if num == fd.Number() {
				count++
			}
		}
		if count > MaxColumns {
			return limitErrorf("%s %d columns; a node may have at most %d", columnLists[fd.FullName()], count, MaxColumns)
		}
	}
	return nil
}
