// Package config knows every configuration key a job plan may set
// (JobPlan.config, Flink-style names such as
// "execution.checkpointing.interval"): its type, default, description and
// the component that reads it. Known returns that registry as a value;
// nothing in the package is mutable shared state.
//
// Registry.Validate is what makes a setting impossible to lose without a
// word: a job whose config names a key nobody reads, or gives a value of the
// wrong type or out of range, fails at submission with every problem in one
// error (an unknown key comes with its close matches, "did you mean ...").
// The server validates before planning (Execute and Explain alike) and
// package job validates when a job starts, which covers the Go API.
// Registry.Effective lists every key with the value a plan gives it or its
// default (`flinkgo config`).
//
// Values use Flink's syntax: durations as milliseconds or a number with a
// unit ("500 ms", "10 s", "1 min"), booleans as true/false, enums in any
// case.
//
// Adding a key: one entry in Known with the component that reads it, and
// the reading code in that component. A key nobody reads must not be
// registered, or the registry stops telling users the truth.
//
// The package is a leaf: it imports only the standard library, so the
// planner, the runtime, the server and the command can all depend on it.
//
// Parse turns a plan's config into the typed values the runtime reads
// (Runtime), reporting every problem at once. It must not import the
// runtime's other packages (job, task, checkpoint, operators), so that any
// of them can read it.
package config
