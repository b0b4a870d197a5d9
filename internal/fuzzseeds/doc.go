// Package fuzzseeds holds what the fuzzers of the runtime's trust
// boundaries start from: valid job plans with a node of every kind and
// inline Arrow tables (Plans), a table with crafted buffers
// (CraftedStrings), and the mutations applied to them (Mutate). The plan
// and Arrow fuzz tests seed their corpora with them, and the `flinkgo
// serve` fuzzer sends their mutants to a real server.
//
// Leaf package for tests: it knows the plan protocol and Arrow only.
package fuzzseeds
