// Package bridgetest is a fake bridge.Runner for unit tests of code that
// drives the runner contract (package bundle's operator, the runtime's UDF
// operators): it answers in memory, with no worker process.
//
// A Runner echoes every input batch as its result unless Transform scripts
// another answer or an error. Knobs make Flush or Close block until released
// (or, for Flush, until Close or Cancel), make them fail, or hold results
// until Flush as a worker that answers late. Fail breaks the runner from any
// goroutine, as a lost worker does. Every call is recorded in order in a
// CallLog, which the test may share with its own fakes to check
// interleavings ("runner.Flush" before "emit", and so on). Wrap a Runner in
// Cancelable to give it bridge.Canceler; without it, bridge.CancelRunner
// falls back to Close.
//
// The fake is checked against the same contract as the real runner: tests
// that need a worker's real behaviour use package pluginrunner with the
// Python worker or the Go worker of package goworker.
//
// It depends on package bridge and Arrow only, and is imported by tests only.
package bridgetest
