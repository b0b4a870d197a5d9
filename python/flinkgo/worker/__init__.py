"""The Python UDF worker: a go-plugin gRPC plugin that runs one UDF chain.

The Go runtime starts it as ``python -m flinkgo.worker``; it is not meant to be
started by hand. The worker

* prints exactly one go-plugin handshake line on stdout and nothing else there
  afterwards (``print`` in user code is forwarded through ``GRPCStdio``);
* logs JSON lines on stderr that go-plugin's hclog parses;
* serves ``grpc.health.v1.Health``, ``plugin.GRPCController``,
  ``plugin.GRPCStdio`` and ``flinkgo.worker.v1.UdfWorker``;
* listens on a Unix socket inside its own 0700 directory, which it removes;
* takes batches on a data socket per chain, their Arrow data in the host's shared
  memory where it gives some (``sharedmem.py``);
* exits when its parent process dies, so a crashed host leaves no orphan;
* runs under a supervisor, the process the host started (``supervisor.py``), which
  kills every process the worker's UDFs started, in whatever session, once the
  worker has ended.

Nothing here imports the user-facing API beyond what unpickled UDFs need. It is no part
of the Python API either: its modules take and give the generated protocol messages of
``udf/bridge/proto/worker.proto``.
"""
