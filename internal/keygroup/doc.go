// Package keygroup is the key-group arithmetic that keyed routing, keyed
// state and the planner share, as Flink's KeyGroupRangeAssignment: the key
// group of a key hash, the subtask that owns a key group, the range of key
// groups a subtask owns, the default max parallelism (the number of key
// groups) and the bounds that validate it. The rules are written down in
// docs/semantics.md#key-groups.
//
// One number ties the three users together: the max parallelism of a keyed
// operator. The planner fixes it once per job (DefaultMaxParallelism, or
// pipeline.max-parallelism, or the max parallelism of restored state), the
// hash partitioner sends a row to Subtask(maxP, p, ForHash(hash, maxP)), and
// the state backend of subtask i holds exactly SubtaskRange(maxP, p, i), so a
// row always reaches the subtask holding its state, and a rescale moves
// whole key groups.
//
// Leaf package: it depends on the standard library and internal/murmur3
// only; it must not import Arrow, protocol buffers or any other package of
// the module. Invalid arguments to the pure arithmetic panic like an index
// out of range; check them first with ValidateParallelism or
// ValidateMaxParallelism, which return errors.
package keygroup
