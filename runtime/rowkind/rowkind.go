package rowkind

import (
	"fmt"
	"strings"
)

// Kind is the kind of one row, with Flink's RowKind byte values (part of
// the wire and checkpoint format: never changes).
type Kind int8

const (
	// Insert (+I) adds a row.
	Insert Kind = 0
	// UpdateBefore (-U) retracts the previous row of an update; an
	// UpdateAfter follows it.
	UpdateBefore Kind = 1
	// UpdateAfter (+U) is the new row of an update.
	UpdateAfter Kind = 2
	// Delete (-D) retracts a row.
	Delete Kind = 3
)

// Kinds lists every row kind in byte-value order.
var Kinds = []Kind{Insert, UpdateBefore, UpdateAfter, Delete}

// String is Flink's short form: "+I", "-U", "+U" or "-D".
func (k Kind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", int8(k))
}

// Valid reports whether k is one of the four kinds.
func (k Kind) Valid() bool { return k >= Insert && k <= Delete }

// IsAccumulate reports whether the row adds (+I, +U) rather than retracts
// (-U, -D), as Flink's RowDataUtil.isAccumulateMsg.
func (k Kind) IsAccumulate() bool { return k == Insert || k == UpdateAfter }

// Parse reads Flink's short form ("+I", "-U", "+U", "-D").
func Parse(s string) (Kind, error) {
	for _, k := range Kinds {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown row kind %q (+I, -U, +U, -D)", s)
}

// Mode is the kind of a stream, as Flink's ChangelogMode: which row kinds
// its batches may carry.
type Mode int8

const (
	// AppendOnly streams hold inserts only; their batches have no row-kind
	// column.
	AppendOnly Mode = 0
	// Upsert streams hold +I, +U and -D by a unique key (the planner keeps
	// the key beside the mode): a +U replaces the key's row, without a -U.
	Upsert Mode = 1
	// Retract streams hold all four kinds: an update is a -U of the old row
	// followed by a +U of the new one; applying them needs no key.
	Retract Mode = 2
)

// String names the mode as explain() shows it.
func (m Mode) String() string {
	switch m {
	case AppendOnly:
		return "append-only"
	case Upsert:
		return "upsert"
	case Retract:
		return "retract"
	}
	return fmt.Sprintf("Mode(%d)", int8(m))
}

// IsChangelog reports whether the stream's batches carry the row-kind
// column (every mode but AppendOnly).
func (m Mode) IsChangelog() bool { return m != AppendOnly }

// Kinds lists the row kinds a stream of mode m may carry.
func (m Mode) Kinds() []Kind {
	switch m {
	case Upsert:
		return []Kind{Insert, UpdateAfter, Delete}
	case Retract:
		return Kinds
	}
	return []Kind{Insert}
}

// Describe is the mode as explain() shows it, with the upsert key:
// "append-only", "retract", "upsert(k1, k2)".
func Describe(m Mode, upsertKey []string) string {
	if m == Upsert {
		return "upsert(" + strings.Join(upsertKey, ", ") + ")"
	}
	return m.String()
}

// ParseMode reads what Mode.String returns.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{AppendOnly, Upsert, Retract} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown changelog mode %q (append-only, upsert, retract)", s)
}
