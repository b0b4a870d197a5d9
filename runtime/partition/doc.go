// Package partition chooses the output channels of the rows of Arrow record
// batches on an edge between operators. It follows Flink's partitioners
// (forward, rebalance, rescale, shuffle, broadcast, global, hash by key
// group, custom) and Flink's pointwise wiring of producers to consumers,
// adapted to batches: data moves as whole batches or as batches split per
// channel with Arrow's take, never as single rows.
//
// Leaf package: it depends on the standard library, arrow-go,
// internal/keygroup and internal/murmur3 only. It must not start processes
// or goroutines that outlive a call, import the udf packages or protocol
// buffers, or know how parts are sent (tasks, network channels) or how
// state is stored. The planner maps plan partitionings onto Kind; the
// runtime sends the parts. Hash sends a row to keygroup.Subtask of its key
// group, and the state backend of that subtask holds keygroup.SubtaskRange,
// so a row always reaches the subtask holding its state
// (docs/semantics.md#key-groups).
//
// Channels. A producer subtask's partitioner for one edge has
// Config.NumChannels channels. For all-to-all kinds channel c is consumer
// subtask c. For pointwise kinds (Forward, Rescale) channel c is consumer
// PointwiseOutputs(p, q, producer)[c], so Forward, which needs equal
// parallelisms, has the one channel 0; see Outputs.
//
// Decisions where Flink is silent (docs/semantics.md#partitioners gathers
// them):
//   - Forward, Global, Rebalance and Rescale send whole batches, and so do
//     Hash and Shuffle with one channel (nothing to choose); Broadcast
//     gives every channel a reference to the same batch (Retain, no copy);
//     Hash, Shuffle and Custom choose a channel per row and split with one
//     take of the rows grouped by channel, each part a slice of it.
//   - Rebalance and Rescale balance batches, not rows (upstream batches are
//     cut to similar sizes). Rebalance starts at a channel drawn from
//     Config.Rand, Rescale at channel 0, as Flink's partitioners.
//   - Shuffle draws a channel per row, as Flink's ShufflePartitioner does per
//     record; a seeded Config.Rand makes it reproducible.
//   - Parts come in ascending channel order, at most one per channel, and
//     keep input row order; channels that get no rows get no part, and a
//     batch with no rows has no parts. When every row of a split goes to one
//     channel the input batch is passed on, not copied.
//   - The key hash is a fixed MurmurHash3 encoding of the key values,
//     documented in hash.go, stable across processes and releases because
//     checkpoints store state by key group. Nulls are keys like any other
//     value (NullHash): all rows with a null key go to one key group.
//   - Key columns are column indices; the planner resolves the plan's key
//     names against the edge's schema. A split batch has at most
//     math.MaxInt32 rows (take indices are int32).
//   - Invalid arguments to the pure arithmetic (pointwise ranges) panic like
//     an index out of range; validate parallelisms with
//     keygroup.ValidateParallelism, and configs with New, which return
//     errors.
//
// Ownership: Split never releases its input; the caller keeps its reference.
// Every returned Part.Batch carries one reference that the caller of Split
// owns and releases (ReleaseParts). A Partitioner is used by one goroutine.
package partition
