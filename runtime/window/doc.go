// Package window holds Flink's event-time window arithmetic on int64
// milliseconds, for the window operators to use:
//
//   - Window and the assigners Tumble, Hop, Cumulate and Session (Flink's
//     TumblingEventTimeWindows, SlidingEventTimeWindows, the CUMULATE window
//     TVF and EventTimeSessionWindows), with validation that says what is
//     wrong and what Flink requires;
//   - slices (panes) for tumble, hop and cumulate, as the slicing assigners
//     of Flink's table runtime (SliceAssigners): a row is assigned to one
//     slice in O(1) whatever size/slide is, and each window end says which
//     slices make it, which to drop after it fired, and which window fires
//     next;
//   - MergingSet: the session windows in flight for one key, merged when they
//     intersect or touch (Flink's TimeWindow.intersects/cover and
//     MergingWindowSet), reporting which windows merged into which so state
//     can be merged;
//   - firing, cleanup and lateness arithmetic of Flink's WindowOperator.
//
// Times are int64 milliseconds since the epoch; a window is [Start, End).
// Time zones are the caller's business: shift timestamps before assigning
// if windows must align to local days.
//
// Leaf package: standard library only. It must not import Arrow, state,
// timers or the exec runtime; it keeps no state besides MergingSet, which
// the operator persists through Mappings and restores with NewMergingSet.
package window
