// Package goworker is a Go implementation of the UDF worker side of the
// bridge protocol, for tests of package pluginrunner (and of anything that
// starts a runner) on machines without Python.
//
// It follows go-plugin's own test style: the test binary is the worker. A
// test's TestMain calls Main first; when the runner started the binary as a
// worker (Command puts Env in its environment), Main serves and exits
// instead of running the tests. Serving means what `python -m
// flinkgo.worker` does: go-plugin's handshake line, its gRPC health
// ("plugin" SERVING), controller (Shutdown) and stdio services (plugin.Serve
// provides them), the UdfWorker service of udf/bridge/proto/workerpb, the
// framed Unix-socket batch transport in the worker's own "flinkgo-worker-"
// directory, and the exit on SIGTERM or when the host process is gone.
//
// Its UDFs are Go functions chosen by name in the spec's payload (UDF,
// MapBatches): arithmetic and identity for results to check, and functions
// that misbehave on purpose (raise, crash, hang, print, answer with the
// wrong rows, type, sequence number or bytes) so the runner's error paths are
// tested without Python. Start says how the process begins (serve, exit or
// hang before the handshake).
//
// It is a test fake beside the real thing: the same runner tests also run
// against the Python worker where one is installed. It depends on go-plugin,
// gRPC, Arrow and the worker protocol, never on pluginrunner (the client
// side it tests), and is imported by tests only.
package goworker
