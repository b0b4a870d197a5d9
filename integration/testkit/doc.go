// Package testkit helps tests drive real Python workers: it finds the
// interpreter, turns Python UDF source into UdfSpecs with the flinkgo
// package itself, and checks that no worker process outlives a test.
//
// Python is the one place Go tests look for the interpreter: where there is
// none, a test that needs it skips with a message saying how to run it
// (`make setup`, or $FLINKGO_PYTHON), unless $FLINKGO_REQUIRE_PYTHON is 1, as
// under `make test`, where it fails.
//
// It also starts the real servers tests talk to: an S3 API server (moto)
// per test, and a Kafka broker (KRaft, from Maven Central's jars, run by
// scripts/kafka/broker.sh) per test package, through Kafka and KafkaMain,
// and a headless Chromium (Debian's chromium) driven by chromedp, through
// Browser.
//
// It is imported by tests only; it has no mocks: every spec it returns was
// pickled by cloudpickle in a real Python process.
package testkit
