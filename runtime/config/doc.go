// Package config names the keys of a job plan's config that the runtime
// reads (Flink's names where Flink has the option), their defaults, and
// parses them into typed values (Parse), reporting every problem at once.
//
// It is a leaf: it must not import the runtime's other packages (job,
// task, checkpoint, operators), so that any of them can read it.
package config
