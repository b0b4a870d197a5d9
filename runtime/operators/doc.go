// Package operators holds the runtime's operators, each in a file of its
// own implementing the contract of package operator: sources (opened for
// their task), select, filter, union, the Python UDF and map_batches
// operators (through package bundle and a bridge.Runner), keyed
// aggregation, drop_duplicates and the interval join (two inputs) over
// keyed state (package state), the window aggregation, limit, and sinks.
// The window and keyed aggregations run pandas UDAFs through bridge.Runners
// too (pandasudaf.go: each group's rows kept, many groups per call). Registry
// returns the table from plan.Kind to each operator's factory, output
// schema and state.
//
// It must not import packages task or job, and of package checkpoint uses
// only the snapshot types (Target, SubtaskState, OperatorState): operators
// see their task only through operator.Context and the methods it calls.
package operators
