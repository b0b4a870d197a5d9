"""The worker process: go-plugin handshake, gRPC services, supervision."""

from __future__ import annotations

import faulthandler
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import types
from collections.abc import Iterable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pyarrow as pa

from flinkgo._proto import (
    grpc_controller_pb2,
    grpc_controller_pb2_grpc,
    grpc_stdio_pb2,
    grpc_stdio_pb2_grpc,
    health_pb2,
    health_pb2_grpc,
    worker_pb2,
    worker_pb2_grpc,
)
from flinkgo.worker import logs
from flinkgo.worker.chain import Chain, UdfCallError, read_batch, write_batch
from flinkgo.worker.datasocket import DataSocket
from flinkgo.worker.namespace import Namespace
from flinkgo.worker.sharedmem import SharedSlots
from flinkgo.worker.supervisor import supervise

# The go-plugin handshake: the host sets this variable; a worker started any
# other way refuses to run (go-plugin's magic cookie).
COOKIE_KEY = "FLINKGO_WORKER_COOKIE"
COOKIE_VALUE = "8f2c1d5e-flinkgo-python-udf-worker"
APP_PROTOCOL_VERSION = 1
# Largest gRPC message; the host passes the value it caps batches below.
MAX_MESSAGE_ENV = "FLINKGO_MAX_MESSAGE_BYTES"
DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024
PARENT_POLL_SECONDS = 0.2
# Largest piece of printed output sent in one GRPCStdio message.
STDIO_CHUNK = 64 * 1024

log = logs.setup(os.environ.get("FLINKGO_WORKER_LOG_LEVEL", "info"))


class StdioForwarder:
    """A text stream that forwards writes to the host through GRPCStdio.

    One replaces ``sys.stdout`` and one ``sys.stderr`` after the handshake, so
    ``print`` in user code reaches the host (the user's terminal, or a server's
    logs) tagged with the UDF, instead of corrupting the go-plugin stdout or
    being taken for the worker's own log lines. Both share one queue, so the
    host sees the writes in order.
    """

    def __init__(
        self,
        channel: grpc_stdio_pb2.StdioData.Channel,
        out: queue.SimpleQueue[tuple[grpc_stdio_pb2.StdioData.Channel, bytes] | None],
    ):
        self.channel = channel
        self.queue = out

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        # Chunks well below the gRPC message limit, however much one print is.
        for start in range(0, len(data), STDIO_CHUNK):
            self.queue.put((self.channel, data[start : start + STDIO_CHUNK]))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def close_stream(self) -> None:
        self.queue.put(None)


class FdCapture:
    """Point the worker's fd 1 at a pipe whose reader thread forwards it to GRPCStdio.

    What reaches fd 1 itself (a C extension's ``printf``, a subprocess that inherited
    it) travels like ``print``. Fd 2 stays go-plugin's stderr, so what a crashing
    worker wrote there last reaches the host's exit error; the host takes its lines
    that are not the worker's JSON log lines for the UDF's stderr output.
    """

    def __init__(
        self, out: queue.SimpleQueue[tuple[grpc_stdio_pb2.StdioData.Channel, bytes] | None]
    ) -> None:
        self._queue = out
        self._threads = []
        for fd, channel in ((1, grpc_stdio_pb2.StdioData.STDOUT),):
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)  # inheritable: a subprocess's output is captured too
            os.close(write_end)
            thread = threading.Thread(
                target=self._forward, args=(read_end, channel), name=f"flinkgo-fd{fd}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _forward(self, read_end: int, channel: grpc_stdio_pb2.StdioData.Channel) -> None:
        try:
            while data := os.read(read_end, STDIO_CHUNK):
                self._queue.put((channel, data))
        finally:
            os.close(read_end)

    def close(self, timeout: float) -> None:
        """Stop capturing and forward what is left, waiting ``timeout`` at most.

        A process the UDF started may hold the pipes open: its output is not waited for.
        """
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


class UdfWorkerServicer(worker_pb2_grpc.UdfWorkerServicer):
    """Runs the chain of Open over the batches of Process."""

    def __init__(self, socket_dir: str, max_message: int) -> None:
        self._chain: Chain | None = None
        self._lock = threading.Lock()
        self._socket_dir = socket_dir
        self._max_message = max_message
        self._opened = 0
        # A reused worker returns to this before each chain but its first
        # (namespace.py); the return runs after Close, off the host's path.
        self._namespace = Namespace()
        self._clean = threading.Event()
        self._clean.set()

    def Open(self, request: worker_pb2.OpenRequest, context: grpc.ServicerContext) -> Any:
        self._clean.wait()
        with self._lock:
            previous, self._chain = self._chain, None
            self._opened += 1
            opened = self._opened
        if previous is not None:  # the host reuses a worker only after Close
            previous.close()
        try:
            chain = Chain(request)
        except UdfCallError as e:
            return worker_pb2.OpenResponse(error=_udf_error(-1, e.udf_name, e.cause))
        except Exception as e:
            return worker_pb2.OpenResponse(error=_udf_error(-1, "", e))
        with self._lock:
            self._chain = chain
        data_socket = ""
        if request.transport in (
            worker_pb2.TRANSPORT_UNIX_SOCKET,
            worker_pb2.TRANSPORT_SHARED_MEMORY,
        ):
            shared = None
            if request.transport == worker_pb2.TRANSPORT_SHARED_MEMORY:
                shared = (request.shared_slots, request.shared_slot_bytes)
            data_socket = os.path.join(self._socket_dir, f"data-{opened}.sock")
            DataSocket(data_socket, self._max_message, log, shared).serve_in_background(
                lambda requests, slots: serve_batches(chain, requests, slots)
            )
        log.info(
            "udf chain opened",
            # The host tags every line with operator and subtask already.
            extra={"fields": {"udfs": [c.udf.name for c in request.calls]}},
        )
        return worker_pb2.OpenResponse(
            pid=os.getpid(),
            python_version=sys.version.split()[0],
            pyarrow_version=pa.__version__,
            data_socket=data_socket,
        )

    def Process(self, request_iterator: Any, context: grpc.ServicerContext) -> Any:
        chain = self._chain
        if chain is None:
            yield _error_response(-1, "", RuntimeError("Process called before Open"))
            return
        yield from serve_batches(chain, request_iterator)

    def Close(self, request: worker_pb2.CloseRequest, context: grpc.ServicerContext) -> Any:
        response = self.close_chain()
        self._clean.clear()
        threading.Thread(target=self._forget, name="flinkgo-forget", daemon=True).start()
        return response

    def _forget(self) -> None:
        """Return to the namespace of the worker's start (the host may reuse it)."""
        try:
            dropped = self._namespace.reset()
            if dropped:
                log.debug(
                    "modules of the closed chain dropped", extra={"fields": {"modules": dropped}}
                )
        except Exception:
            log.exception("could not reset the worker's namespace; it exits")
            os._exit(1)
        finally:
            self._clean.set()

    def close_chain(self) -> worker_pb2.CloseResponse:
        """Close the open chain, if any (Close, and the worker's shutdown)."""
        with self._lock:
            chain, self._chain = self._chain, None
        if chain is not None:
            try:
                chain.close()
            except Exception as e:
                return worker_pb2.CloseResponse(error=_udf_error(-1, "", e))
        return worker_pb2.CloseResponse()


def serve_batches(
    chain: Chain, requests: Iterable[Any], slots: SharedSlots | None = None
) -> Iterator[Any]:
    """Answer a batch stream: one result per batch, BundleDone per marker.

    With slots (the shared-memory transport), batches and results go through
    the shared region where they fit. After a failure it yields one error and
    stops: the host fails the task.
    """
    for request in requests:
        kind = request.WhichOneof("kind")
        if kind == "batch":
            seq = request.batch.seq
            view = None
            try:
                if slots is not None and request.batch.shared_length:
                    view = slots.input_view(request.batch)
                    if request.batch.schema_omitted:
                        batch = pa.ipc.read_record_batch(pa.py_buffer(view), chain.input_schema)
                    else:
                        batch = read_batch(view)
                else:
                    batch = read_batch(request.batch.arrow_ipc)
                out = chain.apply(batch)
                del batch
                if slots is not None:
                    result = slots.write_result(request.batch.slot, out)
                else:
                    result = worker_pb2.BatchResult(arrow_ipc=write_batch(out))
                del out
            except UdfCallError as e:
                yield _error_response(seq, e.udf_name, e.cause, where=e.row)
                return
            except Exception as e:
                yield _error_response(seq, "", e)
                return
            result.seq = seq
            # Before the answer: once the host has it, it may write the slot.
            if view is not None and not SharedSlots.release(view):
                result.input_retained = True
            yield worker_pb2.ProcessResponse(result=result)
        elif kind == "end_bundle":
            yield worker_pb2.ProcessResponse(
                bundle_done=worker_pb2.BundleDone(bundle_id=request.end_bundle.bundle_id)
            )


def _error_response(
    seq: int, udf_name: str, exc: BaseException, *, where: str | None = None
) -> worker_pb2.ProcessResponse:
    return worker_pb2.ProcessResponse(error=_udf_error(seq, udf_name, exc, where=where))


def _udf_error(
    seq: int, udf_name: str, exc: BaseException, *, where: str | None = None
) -> worker_pb2.UdfError:
    message = str(exc)
    if where:
        message = f"{message} (at {where})"
    return worker_pb2.UdfError(
        seq=seq,
        udf_name=udf_name,
        exception_type=type(exc).__name__,
        message=message,
        traceback=users_traceback(exc),
    )


_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")


def users_traceback(exc: BaseException) -> str:
    """Format `exc` with the user's frames only: the worker's own say nothing to the user.

    An exception raised by flinkgo itself (a result of the wrong type, say) has no frame
    left: its message says everything, and the traceback is empty.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = _without_flinkgo_frames(e.__traceback__)
        todo += [e.__cause__, e.__context__]
    if exc.__traceback__ is None and exc.__cause__ is None and exc.__context__ is None:
        return "" if exc.__class__.__module__.startswith("flinkgo") else _only_line(exc)
    return "".join(traceback.format_exception(exc))


def _only_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(exc))


def _without_flinkgo_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


class HealthServicer(health_pb2_grpc.HealthServicer):
    def Check(self, request: Any, context: grpc.ServicerContext) -> Any:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class ControllerServicer(grpc_controller_pb2_grpc.GRPCControllerServicer):
    def __init__(self, shutdown: threading.Event):
        self._shutdown = shutdown

    def Shutdown(self, request: Any, context: grpc.ServicerContext) -> Any:
        log.debug("shutdown requested by host")
        self._shutdown.set()
        return grpc_controller_pb2.Empty()


class StdioServicer(grpc_stdio_pb2_grpc.GRPCStdioServicer):
    def __init__(
        self, out: queue.SimpleQueue[tuple[grpc_stdio_pb2.StdioData.Channel, bytes] | None]
    ):
        self._queue = out

    def StreamStdio(self, request: Any, context: grpc.ServicerContext) -> Any:
        while True:
            item = self._queue.get()
            if item is None:
                return
            channel, data = item
            yield grpc_stdio_pb2.StdioData(channel=channel, data=data)


def _watch_parent(parent: int, shutdown: threading.Event) -> None:
    # A host that crashed cannot ask us to exit; reparenting tells us.
    while not shutdown.is_set():
        if os.getppid() != parent:
            log.warning("host process is gone; worker exits")
            shutdown.set()
            return
        time.sleep(PARENT_POLL_SECONDS)


def main() -> int:
    """Serve until the host shuts the worker down or dies."""
    if os.environ.get(COOKIE_KEY) != COOKIE_VALUE:
        sys.stderr.write(
            "This is the flinkgo Python UDF worker. The flinkgo runtime starts it; "
            "it is not meant to be run by hand.\n"
        )
        return 1
    versions = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(APP_PROTOCOL_VERSION)).split(",")
    if str(APP_PROTOCOL_VERSION) not in versions:
        sys.stderr.write(
            f"flinkgo worker speaks protocol {APP_PROTOCOL_VERSION}, host wants {versions}\n"
        )
        return 1
    # Ctrl-C goes to the whole process group; the host decides what happens.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    shutdown = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: shutdown.set())

    # From here on this is the worker; the process the host started supervises it.
    supervisor = supervise()
    max_message = int(os.environ.get(MAX_MESSAGE_ENV, DEFAULT_MAX_MESSAGE))
    socket_dir = tempfile.mkdtemp(
        prefix="flinkgo-worker-", dir=os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or None
    )
    os.chmod(socket_dir, 0o700)
    socket_path = os.path.join(socket_dir, "plugin.sock")

    printed: queue.SimpleQueue[tuple[grpc_stdio_pb2.StdioData.Channel, bytes] | None]
    printed = queue.SimpleQueue()
    stdout = StdioForwarder(grpc_stdio_pb2.StdioData.STDOUT, printed)
    stderr = StdioForwarder(grpc_stdio_pb2.StdioData.STDERR, printed)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="flinkgo-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message),
            ("grpc.max_send_message_length", max_message),
        ],
    )
    worker = UdfWorkerServicer(socket_dir, max_message)
    worker_pb2_grpc.add_UdfWorkerServicer_to_server(worker, server)
    health_pb2_grpc.add_HealthServicer_to_server(HealthServicer(), server)
    grpc_controller_pb2_grpc.add_GRPCControllerServicer_to_server(
        ControllerServicer(shutdown), server
    )
    grpc_stdio_pb2_grpc.add_GRPCStdioServicer_to_server(StdioServicer(printed), server)
    server.add_insecure_port("unix:" + socket_path)
    server.start()

    # Our parent: the supervisor, or else the host's pid when it gave it. A
    # parent that died before this line left us reparented already, and the
    # watcher must see that.
    parent = supervisor or int(os.environ.get("FLINKGO_HOST_PID") or os.getppid())
    threading.Thread(
        target=_watch_parent, args=(parent, shutdown), name="flinkgo-parent-watch", daemon=True
    ).start()

    real_stdout = sys.stdout
    real_stdout.write(f"1|{APP_PROTOCOL_VERSION}|unix|{socket_path}|grpc\n")
    real_stdout.flush()
    # From here on nothing may reach the real fd 1: whatever reaches fd 1, or
    # Python's stdout and stderr, travels to the host through GRPCStdio. The
    # worker's log handler writes its JSON lines to fd 2, go-plugin's stderr,
    # and so does a crash's traceback: into the host's exit error.
    faulthandler.enable(file=sys.stderr, all_threads=False)
    captured = FdCapture(printed)
    sys.stdout = stdout
    sys.stderr = stderr
    log.debug("worker serving", extra={"fields": {"socket": socket_path, "pid": os.getpid()}})

    shutdown.wait()
    captured.close(timeout=0.2)
    stdout.close_stream()
    # A short grace lets the Shutdown reply reach the host; user code still
    # running (a hung UDF) must not keep the process alive, hence os._exit.
    server.stop(grace=0.2).wait(1)
    try:
        worker.close_chain()
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
        sys.stderr.flush()
        os._exit(0)
