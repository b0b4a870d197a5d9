// Package rowkind is the changelog model of flinkgo's streams, as Flink's
// RowKind and ChangelogMode: the kind of each row (+I, -U, +U, -D), the
// hidden int8 column that carries it in the batches of non-append streams,
// and the kind of a whole stream (append-only, upsert by a key, retract) as
// the planner derives it.
//
// A batch of a changelog stream carries its rows' kinds in its last
// column, named Column, of type int8, holding Flink's RowKind byte values.
// Operators that only look at values (filter, select, scalar UDFs) strip
// the column, work on the values and attach it again; a batch without the
// column is all inserts.
//
// It must not import anything of the module: operators, the planner and
// sinks all depend on it.
package rowkind
