// Package watermark holds the event-time progress logic of Flink, as pure
// state machines that return what to send downstream instead of sending it:
//
//   - Watermark and Status, and Emission: what one input caused, to be sent
//     in a fixed order (an Active status, then the watermark, then an Idle
//     status).
//   - Generators (one per source split or per stream): BoundedOutOfOrderness
//     (Flink's BoundedOutOfOrdernessWatermarks; delay 0 is Flink's
//     monotonous/ascending strategy) and WithIdleness (Flink's
//     WatermarksWithIdleness, with an injectable Clock).
//   - Multiplexer: one output per split combined into the subtask's
//     watermark, the minimum over non-idle splits (Flink's
//     WatermarkOutputMultiplexer); Splits: a generator per split feeding
//     one, as Flink's SourceOperator wires them.
//   - Valve: a task's input watermark over its input channels (Flink's
//     StatusWatermarkValve), and InputCombiner: the minimum over the inputs
//     of a two-input operator (Flink's IndexedCombinedWatermarkStatus as
//     AbstractStreamOperator uses it).
//   - ParseMillis: Flink's duration syntax as event-time milliseconds.
//
// Event time is int64 milliseconds since the epoch, as Flink's. Nothing here
// is safe for concurrent use: each value belongs to one task goroutine.
//
// Leaf package: it imports the standard library and runtime/config (for the
// duration syntax) only. It must not import Arrow, protocol buffers or the
// exec runtime, start goroutines, or read the wall clock except through
// Clock; the operators that own batches, barriers and timers call it.
package watermark
