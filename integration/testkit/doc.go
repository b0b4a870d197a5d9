// Package testkit helps tests drive real Python workers: it finds the
// interpreter, turns Python UDF source into UdfSpecs with the flinkgo
// package itself, and checks that no worker process outlives a test.
//
// It is imported by tests only; it has no mocks: every spec it returns was
// pickled by cloudpickle in a real Python process.
package testkit
