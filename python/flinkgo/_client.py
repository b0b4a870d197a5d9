"""A client of a flinkgo runtime's job service (``runtime/proto/job.proto``) over gRPC.

Internal: its methods take and give the generated protobuf messages; users run jobs
with :class:`~flinkgo.Environment` and :class:`~flinkgo.JobClient`.

:class:`Client` talks to one endpoint, the embedded runtime's Unix socket or a
``flinkgo serve`` server, and runs plan messages as :meth:`flinkgo.Environment.plan` builds them:
:meth:`Client.execute` streams the job's events until it ends and returns a
:class:`~flinkgo.JobResult`, :meth:`Client.explain` returns the physical plan, and
:meth:`Client.cancel` cancels a job by id. Most code calls
:meth:`flinkgo.Environment.execute` instead, which picks the endpoint.

Decisions:

- Events are read by a helper thread into a queue; the calling thread waits on the
  queue in short steps, so Ctrl-C is seen promptly and the progress line keeps ticking.
- Ctrl-C during :meth:`Client.execute` asks the runtime to cancel the job (the
  ``Cancel`` RPC, or cancelling the call before the job has an id), waits up to
  ``cancel_wait`` seconds for the job's ``finished`` event, so workers are gone when it
  returns, then cancels the call and raises :exc:`KeyboardInterrupt`. A second Ctrl-C
  stops waiting at once. Cancelling the call cancels an attached job on the server
  (``detached=False``); a detached one runs on until it ends or is canceled by id.
- gRPC message sizes are unlimited on this side: plans carry in-memory sources of up to
  1 GiB, and collected batches can be large.
- Credentials: a TCP server takes calls that carry its bearer token (``token``, else
  ``$FLINKGO_TOKEN``), sent as ``authorization: Bearer ...`` metadata on every call; with
  ``tls`` the channel uses TLS (the system's roots, or a CA file), and ``tls_client_cert``
  presents a client certificate (mutual TLS). A Unix socket needs none: the server
  admits its peers by uid. A refused token raises :exc:`~flinkgo.RuntimeConnectionError`
  saying where the server keeps its token.

This module imports grpc; ``import flinkgo`` does not import it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import grpc
import pyarrow as pa

from flinkgo._endpoint import check_endpoint
from flinkgo._progress import ProgressLine, is_terminal
from flinkgo._proto import job_pb2, job_pb2_grpc
from flinkgo.exceptions import (
    FlinkgoError,
    InvalidPlanError,
    JobCanceledError,
    JobFailedError,
    JobNotFoundError,
    RescaleError,
    RuntimeConnectionError,
    SavepointError,
)
from flinkgo.job import JobResult, OperatorMetrics
from flinkgo.types import ROW_KIND_COLUMN, schema_from_ipc_bytes

if TYPE_CHECKING:
    from flinkgo._proto import plan_pb2

__all__ = ["Client"]

PROGRESS_INTERVAL_MS = 250
"""How often the runtime sends progress events while a progress line is shown."""

TOKEN_ENV = "FLINKGO_TOKEN"

# Keepalive ping interval during a call, and how long a ping may go unanswered
# before the call fails: long enough for a runtime under heavy load.
KEEPALIVE_MS = 10_000
PING_TIMEOUT_MS = 20_000
"""The environment variable holding a TCP server's token when ``token`` is not given."""

_END = object()  # the event stream ended
_STEP = 0.1  # seconds between checks for Ctrl-C and progress redraws


class Client:
    """A connection to a flinkgo runtime.

    Parameters
    ----------
    endpoint
        ``"unix:///path/to.sock"`` or ``"host:port"``.
    token
        The bearer token of a TCP server (``flinkgo serve`` prints where its token file
        is); None for ``$FLINKGO_TOKEN``. Not sent over a Unix socket.
    tls
        TCP only: True to connect with TLS trusting the system's roots, or the path of a
        PEM file of the CA certificates to trust; None or False for no TLS.
    tls_client_cert
        TCP with TLS only: ``(certificate_pem_path, key_pem_path)`` presented to a server
        that asks for client certificates (mutual TLS).
    cancel_wait
        Seconds that :meth:`execute` waits, after Ctrl-C, for the canceled job to end.

    Raises
    ------
    ValueError
        If `endpoint` is not of either form, or a TLS file cannot be read.

    Examples
    --------
    >>> from flinkgo._client import Client
    >>> with Client("localhost:8081") as client:  # connects lazily
    ...     client.endpoint
    'localhost:8081'
    """

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        tls: bool | str | None = None,
        tls_client_cert: tuple[str, str] | None = None,
        cancel_wait: float = 5.0,
    ) -> None:
        self.endpoint = check_endpoint(endpoint)
        self.cancel_wait = cancel_wait
        unix = self.endpoint.startswith("unix:")
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        self._metadata: tuple[tuple[str, str], ...] = ()
        if token and not unix:
            self._metadata = (("authorization", f"Bearer {token.strip()}"),)
        options = [
            ("grpc.max_send_message_length", -1),
            ("grpc.max_receive_message_length", -1),
            # Ping during calls, so that a runtime that stopped answering (SIGSTOPped,
            # wedged) fails the call instead of leaving it waiting forever: its socket
            # stays open, so only an unanswered ping tells. The server accepts pings
            # every 5 s (runtime/server.KeepaliveMinTime); a job's event stream can be
            # silent for long, hence no limit on pings without data.
            ("grpc.keepalive_time_ms", KEEPALIVE_MS),
            ("grpc.keepalive_timeout_ms", PING_TIMEOUT_MS),
            ("grpc.http2.ping_timeout_ms", PING_TIMEOUT_MS),  # newer grpcio reads this one
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_pings_without_data", 0),
        ]
        if (tls or tls_client_cert) and not unix:
            credentials = _tls_credentials(tls, tls_client_cert)
            self._channel = grpc.secure_channel(self.endpoint, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(self.endpoint, options=options)
        self._stub = job_pb2_grpc.JobServiceStub(self._channel)
        # Execute's events through _decode_event: collected rows are read in place.
        self._execute = self._channel.unary_stream(
            "/flinkgo.job.v1.JobService/Execute",
            request_serializer=job_pb2.ExecuteRequest.SerializeToString,
            response_deserializer=_decode_event,
        )

    def close(self) -> None:
        """Close the connection. Does not block; safe to call twice."""
        self._channel.close()

    def __enter__(self) -> Client:
        """Return the client."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the client."""
        self.close()

    def __repr__(self) -> str:
        """Show the endpoint."""
        return f"Client({self.endpoint!r})"

    # --- the job service -------------------------------------------------------------------

    def explain(self, plan: plan_pb2.JobPlan) -> str:
        """Plan a job without running it and return the physical plan as text.

        Raises
        ------
        InvalidPlanError
            If the runtime's planner refuses the plan (its message).
        RuntimeConnectionError
            If the runtime cannot be reached.
        """
        try:
            response: job_pb2.ExplainResponse = self._stub.Explain(
                job_pb2.ExplainRequest(plan=plan), metadata=self._metadata
            )
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.INVALID_ARGUMENT:  # over a limit of one request
                raise InvalidPlanError(e.details() or "") from None
            raise self._rpc_error(e, "explain") from None
        if response.error:
            raise InvalidPlanError(response.error)
        return response.explain

    def cancel(self, job_id: str) -> bool:
        """Cancel the running job `job_id`; return whether the runtime had it.

        Returns at once; the job's ``execute`` ends when the job has stopped.

        Raises
        ------
        RuntimeConnectionError
            If the runtime cannot be reached.
        """
        try:
            reply: job_pb2.CancelResponse = self._stub.Cancel(
                job_pb2.CancelRequest(job_id=job_id), timeout=10, metadata=self._metadata
            )
            return reply.found
        except grpc.RpcError as e:
            raise self._rpc_error(e, "cancel") from None

    def trigger_savepoint(self, job_id: str, directory: str = "", *, stop: bool = False) -> str:
        """Take a savepoint of the running job `job_id` and return its directory.

        With `stop`, the job then stops and ends ``FINISHED`` (Flink's stop with
        savepoint). `directory` empty means the job's
        ``execution.checkpointing.savepoint-dir``.

        Raises
        ------
        JobNotFoundError
            If no running job has that id (a :exc:`LookupError`).
        PermissionError
            If `directory` is outside the directories the server lets clients use.
        SavepointError
            If the savepoint failed (a :exc:`RuntimeError`); the message says why.
        RuntimeConnectionError
            If the runtime cannot be reached.
        """
        request = job_pb2.SavepointRequest(job_id=job_id, directory=directory, stop=stop)
        try:
            reply: job_pb2.SavepointResponse = self._stub.TriggerSavepoint(
                request, metadata=self._metadata
            )
            return reply.path
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            if code == grpc.StatusCode.NOT_FOUND:
                raise JobNotFoundError(e.details()) from None
            if code == grpc.StatusCode.PERMISSION_DENIED:  # a directory outside --allow-path
                raise PermissionError(e.details()) from None
            if code == grpc.StatusCode.FAILED_PRECONDITION:
                raise SavepointError(e.details()) from None
            raise self._rpc_error(e, "savepoint") from None

    def rescale(
        self, job_id: str, parallelism: Mapping[str, int] | None
    ) -> job_pb2.RescaleResponse:
        """Set the parallelism of operators of the running job `job_id`, by uid.

        ``None`` only reads the job's rescale history and current parallelism.

        Raises
        ------
        JobNotFoundError
            If no running job has that id (a :exc:`LookupError`).
        RescaleError
            If the runtime refused the request (a :exc:`ValueError`); the message says
            why.
        RuntimeConnectionError
            If the runtime cannot be reached.
        """
        try:
            if parallelism is None:
                reply: job_pb2.RescaleResponse = self._stub.RescaleHistory(
                    job_pb2.RescaleHistoryRequest(job_id=job_id),
                    timeout=10,
                    metadata=self._metadata,
                )
            else:
                reply = self._stub.Rescale(
                    job_pb2.RescaleRequest(job_id=job_id, parallelism=dict(parallelism)),
                    timeout=10,
                    metadata=self._metadata,
                )
            return reply
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            if code == grpc.StatusCode.NOT_FOUND:
                raise JobNotFoundError(e.details()) from None
            if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
                raise RescaleError(e.details()) from None
            raise self._rpc_error(e, "rescale") from None

    def list_jobs(self, *, include_ended: bool = False) -> list[tuple[str, str, str]]:
        """Return ``(job_id, name, state)`` of every job running on the runtime.

        With `include_ended`, the latest jobs that ended follow the running ones.
        """
        try:
            response = self._stub.ListJobs(
                job_pb2.ListJobsRequest(include_ended=include_ended),
                timeout=10,
                metadata=self._metadata,
            )
        except grpc.RpcError as e:
            raise self._rpc_error(e, "list jobs") from None
        return [(j.job_id, j.name, _state_name(j.state)) for j in response.jobs]

    def execute(
        self,
        plan: plan_pb2.JobPlan,
        *,
        progress: bool = True,
        on_event: Callable[[str, str], None] | None = None,
        detached: bool = False,
    ) -> JobResult:
        """Run the job `plan` and wait until it ends.

        Parameters
        ----------
        plan
            The plan, from :meth:`flinkgo.Environment.plan`.
        progress
            Show a live status line and a summary on standard error when it is a
            terminal. Never shown when it is not one.
        on_event
            Called from this thread with ``("started", job_id)``, ``("warning", text)``
            for each of the planner's warnings (instead of :func:`warnings.warn`), with
            ``("state", state)`` on every change of the job's state, and with the
            final state when the job ends.
        detached
            Ask the runtime to keep the job running when this call ends without a
            cancel (the process exits or the connection breaks); see
            :meth:`flinkgo.Environment.execute`.

        Returns
        -------
        JobResult
            Metrics per operator and the rows of every collect sink.

        Raises
        ------
        JobFailedError
            If the job failed; it carries the runtime's message and Python traceback.
        JobCanceledError
            If someone else canceled the job.
        KeyboardInterrupt
            On Ctrl-C, once the job is canceled (see the module doc).
        RuntimeConnectionError
            If the runtime cannot be reached, or the connection broke during the job.
        """
        name = plan.name
        display = ProgressLine(name, plan, sys.stderr, enabled=progress and is_terminal(sys.stderr))
        request = job_pb2.ExecuteRequest(
            plan=plan,
            progress_interval_ms=PROGRESS_INTERVAL_MS if display.enabled else 0,
            detached=detached,
        )
        started_at = time.monotonic()
        events: queue.Queue[Any] = queue.Queue()
        job_id, explain = "", ""
        states: list[tuple[str, float]] = []
        batches: dict[int, list[pa.RecordBatch]] = {}
        finished = None
        failure: BaseException | None = None
        interrupted = False
        give_up_at = float("inf")
        with _ctrl_c_counted() as ctrl_c:
            call = self._execute(request, metadata=self._metadata)
            try:
                # Inside the try: a Ctrl-C that lands while the reader starts cancels the
                # call (and so the job) rather than leaving it running on the server.
                _start_reader(call, events)
                while finished is None and failure is None:
                    try:
                        if ctrl_c.take():
                            raise KeyboardInterrupt
                        try:
                            item = events.get(timeout=_STEP)
                        except queue.Empty:
                            if time.monotonic() > give_up_at:
                                break
                            display.tick()
                            continue
                        if item is _END:
                            failure = RuntimeConnectionError(
                                f"flinkgo: the runtime at {self.endpoint} ended the job's event "
                                "stream before the job finished"
                            )
                        elif isinstance(item, grpc.RpcError):
                            if not interrupted:
                                failure = self._rpc_error(item, f"job {name!r}", job_name=name)
                            break
                        elif isinstance(item, _Collected):
                            batches.setdefault(item.node, []).extend(_read_batches(item.ipc))
                        else:
                            kind = item.WhichOneof("kind")
                            if kind == "started":
                                job_id, explain = item.started.job_id, item.started.explain
                                for warning in item.started.warnings:
                                    if on_event is not None:  # JobClient warns its caller
                                        on_event("warning", f"flinkgo: job {name!r}: {warning}")
                                        continue
                                    warnings.warn(
                                        f"flinkgo: job {name!r}: {warning}",
                                        UserWarning,
                                        stacklevel=_user_stacklevel(),
                                    )
                                if on_event is not None:
                                    on_event("started", job_id)
                                if interrupted:  # Ctrl-C came before the id
                                    self._request_cancel(call, job_id)
                            elif kind == "progress":
                                display.update(item.progress)
                            elif kind == "state_changed":
                                state = _state_name(item.state_changed.state)
                                states.append((state, item.state_changed.elapsed_seconds))
                                if on_event is not None:
                                    on_event("state", state)
                                if not interrupted:  # "canceling", "restarting"; cleared after
                                    busy = state in ("CANCELING", "FAILING", "RESTARTING")
                                    display.note(state.lower() if busy else "")
                            elif kind == "collected":
                                c = item.collected
                                batches.setdefault(c.node, []).extend(
                                    _read_batches(pa.py_buffer(c.arrow_ipc))
                                )
                            elif kind == "finished":
                                finished = item.finished
                                if on_event is not None:  # the state it ended in
                                    on_event("state", _finished_state(finished.state))
                    except KeyboardInterrupt:
                        if interrupted:  # a second Ctrl-C: stop waiting
                            break
                        interrupted = True
                        give_up_at = time.monotonic() + self.cancel_wait
                        display.note("canceling; Ctrl-C again to stop waiting")
                        self._request_cancel(call, job_id)
            finally:
                call.cancel()
                if finished is None:
                    display.close()
        if interrupted:
            if finished is not None:
                display.finish("CANCELED", finished.metrics, time.monotonic() - started_at)
            raise KeyboardInterrupt
        if failure is not None:
            raise failure
        assert finished is not None
        elapsed = finished.metrics.elapsed_seconds or (time.monotonic() - started_at)
        state = job_pb2.JobFinished.State.Name(finished.state)
        display.finish(state, finished.metrics, elapsed)
        return _outcome(plan, finished, job_id, explain, batches, elapsed, tuple(states))

    # --- internals ----------------------------------------------------------------------------

    def _request_cancel(self, call: Any, job_id: str) -> None:
        if not job_id:
            call.cancel()  # not started yet: the server cancels the job with the call
            return
        try:
            self._stub.Cancel(
                job_pb2.CancelRequest(job_id=job_id), timeout=2, metadata=self._metadata
            )
        except grpc.RpcError:
            call.cancel()

    def _rpc_error(self, e: grpc.RpcError, what: str, *, job_name: str = "") -> Exception:
        code = e.code() if hasattr(e, "code") else None
        details = e.details() if hasattr(e, "details") else str(e)
        if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION):
            return JobFailedError(details or str(code), job_name=job_name, kind="PLAN")
        if code == grpc.StatusCode.UNAUTHENTICATED:
            # The server's message says where its token file is; never the token.
            return RuntimeConnectionError(
                f"flinkgo: {what}: the runtime at {self.endpoint} refused the call's "
                f"credentials: {details}"
            )
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            # Over the server's --max-message-size; its message names the option.
            return RuntimeConnectionError(
                f"flinkgo: {what}: the runtime at {self.endpoint} refused the request: {details}"
                + (
                    ""
                    if "--max-message-size" in (details or "")
                    else " (raise the server's --max-message-size, or put large inline data"
                    " in files)"
                )
            )
        if code == grpc.StatusCode.UNAVAILABLE and "ping timeout" in (details or "").lower():
            return RuntimeConnectionError(
                f"flinkgo: {what}: the runtime at {self.endpoint} stopped answering (no answer "
                f"to a keepalive ping for {PING_TIMEOUT_MS // 1000} s): it may be stopped "
                "(SIGSTOP), wedged or starved of CPU; the call was given up, and a runtime "
                "that resumes cancels the job"
            )
        if code == grpc.StatusCode.UNAVAILABLE:
            return RuntimeConnectionError(
                f"flinkgo: {what}: the runtime at {self.endpoint} is unavailable: {details}"
            )
        status = code.name if code is not None else "unknown status"
        return RuntimeConnectionError(
            f"flinkgo: {what}: the runtime at {self.endpoint} answered {status}: {details}"
        )


def _tls_credentials(
    tls: bool | str | None, client_cert: tuple[str, str] | None
) -> grpc.ChannelCredentials:
    # TLS trusting the system's roots (tls=True) or a CA file, with a client
    # certificate for mutual TLS.
    def read(what: str, path: str) -> bytes:
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise ValueError(f"Client: cannot read the {what} {path!r}: {e}") from None

    roots = read("TLS CA file (tls=)", tls) if isinstance(tls, str) else None
    key = chain = None
    if client_cert is not None:
        cert_path, key_path = client_cert
        chain = read("TLS client certificate", cert_path)
        key = read("TLS client key", key_path)
    return grpc.ssl_channel_credentials(
        root_certificates=roots, private_key=key, certificate_chain=chain
    )


def _outcome(
    plan: plan_pb2.JobPlan,
    finished: Any,
    job_id: str,
    explain: str,
    batches: dict[int, list[pa.RecordBatch]],
    elapsed: float,
    states: tuple[tuple[str, float], ...],
) -> JobResult:
    # The result of a finished job, or the error of a failed or canceled one.
    name = plan.name
    state = job_pb2.JobFinished.State.Name(finished.state)
    err = finished.error
    if finished.state == job_pb2.JobFinished.FINISHED:
        return JobResult(
            name=name,
            job_id=job_id,
            state=state,
            elapsed=elapsed,
            metrics=tuple(
                OperatorMetrics(
                    name=op.name,
                    uid=op.uid,
                    parallelism=op.parallelism,
                    rows_in=op.rows_in,
                    rows_out=op.rows_out,
                    num_late_records_dropped=op.late_records_dropped,
                    vertex_id=op.vertex_id,
                    subtasks=tuple(dict(s.metrics) for s in op.subtasks),
                )
                for op in finished.metrics.operators
            ),
            collected=_tables(plan, batches),
            explain=explain,
            states=states,
        )
    if finished.state == job_pb2.JobFinished.CANCELED:
        raise JobCanceledError(err.message, job_name=name, job_id=job_id)
    message = err.message
    if finished.state != job_pb2.JobFinished.FAILED:
        message = f"the runtime ended the job in the state {state}: {message}"
    raise JobFailedError(
        message,
        job_name=name,
        job_id=job_id,
        operator=err.operator,
        udf=err.udf,
        traceback=err.traceback,
        kind=err.kind,
    )


def _user_stacklevel() -> int:
    # The stacklevel of warnings.warn, called by our caller, that points at the first
    # frame outside the flinkgo package: the user's execute() call.
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _finished_state(state: int) -> str:
    # JobFinished's FINISHED, FAILED or CANCELED, as JobResult.state spells states.
    return str(job_pb2.JobFinished.State.Name(state))


def _state_name(state: int) -> str:
    # JOB_STATE_RUNNING -> RUNNING, as JobResult.state spells states.
    return job_pb2.JobState.Name(state).removeprefix("JOB_STATE_")


def _start_reader(call: Any, events: queue.Queue[Any]) -> None:
    # The thread that puts the call's events into `events`, then _END or the error.
    threading.Thread(
        target=_pump, args=(call, events), name="flinkgo-job-events", daemon=True
    ).start()


def _pump(call: Any, events: queue.Queue[Any]) -> None:
    try:
        for event in call:
            events.put(event)
    except grpc.RpcError as e:
        events.put(e)
    else:
        events.put(_END)


class _Collected(NamedTuple):
    """A CollectedBatch event whose Arrow IPC stream is a slice of the message's bytes."""

    node: int
    subtask: int
    ipc: pa.Buffer


def _decode_event(raw: bytes) -> Any:
    # Execute's events: a CollectedBatch as _Collected, its rows left in the message's
    # bytes (the server's codec puts them 8-aligned there); any other event, or a
    # CollectedBatch laid out otherwise, as protobuf reads it (which copies the rows).
    try:
        collected = _collected_in_place(raw)
    except (IndexError, ValueError):  # not protobuf: FromString says so
        collected = None
    return collected or job_pb2.JobEvent.FromString(raw)


def _collected_in_place(raw: bytes) -> _Collected | None:
    # JobEvent is one field, collected (3, length-delimited), spanning the message;
    # CollectedBatch's fields come in any order: node (1) and subtask (2) as varints,
    # arrow_ipc (3) and padding (4) length-delimited. Anything else: None.
    if len(raw) < 2 or raw[0] != 0x1A:
        return None
    length, pos = _varint(raw, 1)
    if pos + length != len(raw):
        return None
    node = subtask = 0
    ipc: tuple[int, int] | None = None
    while pos < len(raw):
        tag, pos = _varint(raw, pos)
        field, wire = tag >> 3, tag & 7
        if wire == 0 and field in (1, 2):
            value, pos = _varint(raw, pos)
            value = value - (1 << 64) if value >= 1 << 63 else value  # a negative int32
            if field == 1:
                node = value
            else:
                subtask = value
        elif wire == 2 and field in (3, 4):
            size, pos = _varint(raw, pos)
            if field == 3:
                ipc = (pos, size)
            pos += size
        else:
            return None
    if ipc is None or pos != len(raw):
        return None
    return _Collected(node, subtask, pa.py_buffer(raw).slice(*ipc))


def _varint(raw: bytes, pos: int) -> tuple[int, int]:
    # A protobuf varint at pos, and the position after it.
    value = shift = 0
    while True:
        if shift > 63:
            raise ValueError("a varint of more than 10 bytes")
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


# Batches keep the buffers they are read from where those are aligned as their types
# need, and copy them where not: a misaligned buffer is undefined for Arrow's kernels.
# pyarrow before 16 has no such option: there a stream not 8-aligned in memory is
# copied whole into an aligned buffer first (the server's codec aligns it, so this is
# the exception).
_HAS_ALIGNMENT = hasattr(pa.ipc, "Alignment")
_ALIGNED = (
    pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.DataTypeSpecific)
    if _HAS_ALIGNMENT
    else None
)


def _read_batches(ipc: pa.Buffer) -> list[pa.RecordBatch]:
    if not _HAS_ALIGNMENT and ipc.address % 8:
        aligned = pa.allocate_buffer(ipc.size)  # Arrow's pool: 64-byte aligned
        memoryview(aligned).cast("B")[:] = memoryview(ipc).cast("B")
        ipc = aligned
    with pa.ipc.open_stream(ipc, options=_ALIGNED) as reader:
        return list(reader)


def _tables(
    plan: plan_pb2.JobPlan, batches: dict[int, list[pa.RecordBatch]]
) -> dict[int, pa.Table]:
    # Every collect sink gets a table, empty when no row reached it, with the sink's
    # schema from the plan when the runtime's batches fit it.
    tables = {}
    for node in plan.nodes:
        if node.WhichOneof("kind") != "sink" or node.sink.WhichOneof("kind") != "collect":
            continue
        schema = schema_from_ipc_bytes(node.output_schema)
        got = batches.get(node.id, [])
        tables[node.id] = _conform(got, schema)
    return tables


def apply_changelog(table: pa.Table) -> pa.Table:
    """Apply a changelog: the rows that remain once every retraction took its row back.

    +I and +U rows add a row, -U and -D rows take back one equal row (a retract
    stream needs no key). A table without the row-kind column is returned as it is.
    """
    names = table.column_names
    if not names or names[-1] != ROW_KIND_COLUMN:
        return table
    kinds = table.column(ROW_KIND_COLUMN).to_pylist()
    values = table.drop_columns([ROW_KIND_COLUMN])
    columns = [c.to_pylist() for c in values.columns]
    rows = list(zip(*columns, strict=True)) if columns else [()] * len(kinds)
    counts: dict[tuple[object, ...], int] = {}
    first: dict[tuple[object, ...], int] = {}  # the row's first position: keeps arrival order
    for i, (row, kind) in enumerate(zip(rows, kinds, strict=True)):
        counts[row] = counts.get(row, 0) + (1 if kind in (0, 2) else -1)
        first.setdefault(row, i)
    negative = [row for row, n in counts.items() if n < 0]
    if negative:
        raise FlinkgoError(
            f"the changelog retracts {len(negative)} row(s) it never added, e.g. {negative[0]}: "
            "an operator emitted a retraction without its row; please report it"
        )
    keep = [first[row] for row, n in counts.items() for _ in range(n)]
    keep.sort()
    return values.take(pa.array(keep, type=pa.int64()))


def _conform(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    if not batches:
        return schema.empty_table()
    if batches[0].schema.names[-1:] == [ROW_KIND_COLUMN]:
        # A changelog: the client sees the table it ends as.
        batches = apply_changelog(pa.Table.from_batches(batches)).to_batches()
        if not batches:
            return schema.empty_table()
    tables = [pa.Table.from_batches([b]) for b in batches]
    try:
        return pa.concat_tables([t if t.schema.equals(schema) else t.cast(schema) for t in tables])
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError):
        # Keep the runtime's types rather than fail after the job ran.
        return pa.concat_tables(tables)


class _CtrlC:
    """Ctrl-C presses counted by a signal handler, taken one at a time by the wait loop."""

    def __init__(self) -> None:
        self.pending = 0

    def count(self, signum: int, frame: object) -> None:
        self.pending += 1

    def take(self) -> bool:
        if self.pending == 0:
            return False
        self.pending -= 1
        return True


@contextlib.contextmanager
def _ctrl_c_counted() -> Iterator[_CtrlC]:
    """Count Ctrl-C while a job runs instead of raising where it lands.

    Python raises KeyboardInterrupt in whatever code runs when the signal is handled; in a
    weakref finalizer or a ``__del__`` (a garbage collection) it is printed and dropped, and
    the job would go on as if nobody had pressed Ctrl-C. Counted here, it is raised by the
    wait loop itself. Only on the main thread, and only over Python's default handler: a
    handler the user installed keeps working.
    """
    ctrl_c = _CtrlC()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield ctrl_c
        return
    previous = signal.signal(signal.SIGINT, ctrl_c.count)
    try:
        yield ctrl_c
    finally:
        signal.signal(signal.SIGINT, previous)
        if ctrl_c.pending:
            raise KeyboardInterrupt
