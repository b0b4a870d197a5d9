"""The job-service client against an in-process fake runtime (grpc on a Unix socket).

The fake answers what a test scripts, so outcomes the real runtime rarely produces
(a canceled job, a stream that ends early, Ctrl-C before the job has an id) are
checked exactly. test_execute.py runs the real runtime.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import weakref
from concurrent import futures

import grpc
import pandas as pd
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _client as flinkgo_client
from flinkgo._client import Client
from flinkgo._endpoint import check_endpoint
from flinkgo._proto import job_pb2, job_pb2_grpc, plan_pb2

State = job_pb2.JobFinished


class FakeRuntime(job_pb2_grpc.JobServiceServicer):
    """Streams `events` for every Execute; `script` may replace that behavior."""

    def __init__(self):
        self.events: list[job_pb2.JobEvent] = []
        self.script = None
        self.canceled: list[str] = []
        self.cancel_called = threading.Event()
        self.call_ended = threading.Event()
        self.requests: list[job_pb2.ExecuteRequest] = []
        self.explain_response = job_pb2.ExplainResponse(explain="the plan")

    def Execute(self, request, context):  # noqa: N802 - the RPC's name
        self.requests.append(request)
        context.add_callback(self.call_ended.set)
        if self.script is not None:
            yield from self.script(request, context)
            return
        yield from self.events

    def Explain(self, request, context):  # noqa: N802
        return self.explain_response

    def Cancel(self, request, context):  # noqa: N802
        self.canceled.append(request.job_id)
        self.cancel_called.set()
        return job_pb2.CancelResponse(found=True)


@pytest.fixture
def fake(tmp_path):
    servicer = FakeRuntime()
    pool = futures.ThreadPoolExecutor(max_workers=4)
    server = grpc.server(pool)
    job_pb2_grpc.add_JobServiceServicer_to_server(servicer, server)
    endpoint = f"unix://{tmp_path}/fake.sock"
    server.add_insecure_port(endpoint)
    server.start()
    servicer.endpoint = endpoint
    yield servicer
    # Bounded: stop(grace=None) waits for every call's end, forever if one never ends.
    assert server.stop(grace=0).wait(30), "the fake runtime's calls did not end"
    # Its threads are joined at interpreter exit: none may be left in a handler.
    pool.shutdown(wait=False, cancel_futures=True)


def collect_plan():
    env = fg.Environment(parallelism=2)
    env.from_pandas(pd.DataFrame({"x": [1, 2, 3]})).print()
    plan = plan_pb2.JobPlan.FromString(env.plan("fake job").to_bytes())
    plan.nodes[-1].sink.collect.SetInParent()  # a collect sink, as DataFrame.collect makes
    return plan


def started(job_id="j-1"):
    return job_pb2.JobEvent(started=job_pb2.JobStarted(job_id=job_id, explain="explained"))


def progress(rows_in, rows_out, elapsed):
    return job_pb2.Progress(
        operators=[
            job_pb2.OperatorProgress(
                name="from_pandas", uid="source-1", parallelism=2, rows_in=rows_in, rows_out=rows_in
            ),
            job_pb2.OperatorProgress(name="collect", uid="sink-2", parallelism=2, rows_in=rows_out),
        ],
        elapsed_seconds=elapsed,
    )


def state_changed(name, at):
    return job_pb2.JobEvent(
        state_changed=job_pb2.StateChanged(
            state=job_pb2.JobState.Value(f"JOB_STATE_{name}"), elapsed_seconds=at
        )
    )


def finished(state, error=None, metrics=None):
    return job_pb2.JobEvent(
        finished=job_pb2.JobFinished(
            state=state, error=error, metrics=metrics or progress(3, 3, 0.5)
        )
    )


def collected(node, subtask, values):
    batch = pa.RecordBatch.from_arrays([pa.array(values, pa.int64())], names=["x"])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return job_pb2.JobEvent(
        collected=job_pb2.CollectedBatch(
            node=node, subtask=subtask, arrow_ipc=sink.getvalue().to_pybytes()
        )
    )


class Terminal(io.StringIO):
    def isatty(self):
        return True


# --- outcomes ------------------------------------------------------------------------------------


def test_finished_job_gives_metrics_and_collected_rows(fake):
    fake.events = [
        started(),
        state_changed("CREATED", 0.0),
        state_changed("RUNNING", 0.01),
        collected(2, 1, [3]),
        collected(2, 0, [1, 2]),
        state_changed("FINISHED", 0.25),
        finished(State.FINISHED, metrics=progress(3, 3, 0.25)),
    ]
    with Client(fake.endpoint) as client:
        result = client.execute(collect_plan())
    assert result.job_id == "j-1"
    assert result.name == "fake job"
    assert result.state == "FINISHED"
    assert result.states == (("CREATED", 0.0), ("RUNNING", 0.01), ("FINISHED", 0.25))
    assert result.elapsed == 0.25
    assert result.explain == "explained"
    assert [m.uid for m in result.metrics] == ["source-1", "sink-2"]
    assert result.operator("sink-2").rows_in == 3
    assert sorted(result.collected[2].column("x").to_pylist()) == [1, 2, 3]
    assert result.collected[2].schema.names == ["x"]
    # Not a terminal: no progress events are asked for.
    assert fake.requests[0].progress_interval_ms == 0


def test_collect_sink_without_rows_gives_an_empty_table(fake):
    fake.events = [started(), finished(State.FINISHED)]
    with Client(fake.endpoint) as client:
        table = client.execute(collect_plan()).collected[2]
    assert table.num_rows == 0
    assert table.schema.names == ["x"]
    assert table.schema.field("x").type == pa.int64()


def test_failed_job_raises_with_the_traceback(fake):
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "pipeline.py", line 7, in parse\n'
        "    int(s)\n"
        "ValueError: invalid literal for int() with base 10: 'x'"
    )
    error = job_pb2.JobError(
        message='udf "parse" (operator parse, subtask 1) raised ValueError: invalid literal',
        operator="parse",
        udf="parse",
        traceback=traceback,
        kind="UDF",
    )
    fake.events = [started("j-2"), finished(State.FAILED, error)]
    with Client(fake.endpoint) as client, pytest.raises(fg.JobFailedError) as info:
        client.execute(collect_plan())
    e = info.value
    assert (e.udf, e.operator, e.kind, e.job_id, e.job_name) == (
        "parse",
        "parse",
        "UDF",
        "j-2",
        "fake job",
    )
    assert e.traceback == traceback
    assert str(e) == f"job 'fake job' failed: {error.message}\n{traceback}"


def test_a_traceback_already_in_the_message_is_not_repeated():
    tb = "Traceback (most recent call last):\nKeyError: 1"
    e = fg.JobFailedError(f"udf 'f' raised KeyError: 1\n{tb}", traceback=tb)
    assert str(e).count("Traceback") == 1


def test_canceled_job_raises_job_canceled(fake):
    error = job_pb2.JobError(message="job canceled by request", kind="CANCELED")
    fake.events = [started("j-3"), finished(State.CANCELED, error)]
    with Client(fake.endpoint) as client, pytest.raises(fg.JobCanceledError, match="j-3") as info:
        client.execute(collect_plan())
    assert "canceled by request" in str(info.value)


def test_stream_ending_before_finished(fake):
    fake.events = [started()]
    with Client(fake.endpoint) as client, pytest.raises(fg.RuntimeConnectionError, match="before"):
        client.execute(collect_plan())


def test_server_error_status(fake):
    def fail(request, context):
        context.abort(grpc.StatusCode.INTERNAL, "something broke")
        yield  # pragma: no cover

    fake.script = fail
    with Client(fake.endpoint) as client, pytest.raises(fg.RuntimeConnectionError, match="broke"):
        client.execute(collect_plan())


def test_a_plan_over_the_servers_message_limit_names_the_option(tmp_path):
    # As `flinkgo serve --max-message-size`: gRPC refuses the request before
    # the server reads it, and only says "larger than max"; the client says
    # which option raises the limit.
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=2),
        options=[("grpc.max_receive_message_length", 1024)],
    )
    job_pb2_grpc.add_JobServiceServicer_to_server(FakeRuntime(), server)
    endpoint = f"unix://{tmp_path}/small.sock"
    server.add_insecure_port(endpoint)
    server.start()
    try:
        big = collect_plan()
        big.name = "x" * 4096
        with Client(endpoint) as client:
            for call in (client.execute, client.explain):
                with pytest.raises(fg.RuntimeConnectionError) as e:
                    call(big)
                assert "larger than max" in str(e.value)
                assert "--max-message-size" in str(e.value)
                assert "in files" in str(e.value)
    finally:
        server.stop(grace=None)


def test_unreachable_endpoint(tmp_path):
    with Client(f"unix://{tmp_path}/none.sock") as client:
        with pytest.raises(fg.RuntimeConnectionError, match="unavailable"):
            client.execute(collect_plan())
        with pytest.raises(fg.RuntimeConnectionError):
            client.explain(collect_plan())


# --- explain and cancel --------------------------------------------------------------------------


def test_explain(fake):
    with Client(fake.endpoint) as client:
        assert client.explain(collect_plan()) == "the plan"
        fake.explain_response = job_pb2.ExplainResponse(error="plan: node 2: forward mismatch")
        with pytest.raises(fg.InvalidPlanError, match="forward mismatch"):
            client.explain(collect_plan())


def test_cancel(fake):
    with Client(fake.endpoint) as client:
        assert client.cancel("j-9") is True
    assert fake.canceled == ["j-9"]


# --- Ctrl-C --------------------------------------------------------------------------------------


def interrupt_when(event: threading.Event) -> threading.Thread:
    def run():
        if event.wait(10):
            os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_ctrl_c_cancels_the_job_and_waits_for_its_end(fake):
    running = threading.Event()

    def job(request, context):
        yield started("j-4")
        running.set()
        # The client asks to cancel; the job then ends as CANCELED.
        fake.cancel_called.wait(10)
        yield finished(State.CANCELED, job_pb2.JobError(message="canceled", kind="CANCELED"))

    fake.script = job
    interrupt_when(running)
    with Client(fake.endpoint) as client, pytest.raises(KeyboardInterrupt):
        client.execute(collect_plan())
    # The interrupt can land before the client has read the started event;
    # then it cancels the call instead of the job by id. Either way the job
    # ends: the call is over.
    assert fake.canceled in (["j-4"], [])
    assert fake.call_ended.wait(5)


def test_ctrl_c_before_the_job_started_cancels_the_call(fake):
    entered = threading.Event()

    def job(request, context):
        entered.set()
        fake.call_ended.wait(30)  # bounded: a handler that never returns hangs the exit
        if context.is_active():
            yield started("never-seen")  # pragma: no cover

    fake.script = job
    interrupt_when(entered)
    with Client(fake.endpoint) as client, pytest.raises(KeyboardInterrupt):
        client.execute(collect_plan())
    assert fake.call_ended.wait(5)
    assert fake.canceled == []


def test_ctrl_c_handled_inside_a_finalizer_still_cancels_the_job(fake):
    # Python raises KeyboardInterrupt wherever the main thread is when it handles
    # SIGINT; inside a finalizer (a garbage collection) the exception is printed and
    # dropped. The client counts Ctrl-C itself while a job runs, so it is never lost
    # (this test hung before, as test_ctrl_c_gives_up_waiting_after_cancel_wait once
    # did in CI).
    def job(request, context):
        yield started("j-6")
        fake.cancel_called.wait(10)
        yield finished(State.CANCELED, job_pb2.JobError(message="canceled", kind="CANCELED"))

    def ctrl_c_in_a_finalizer(kind, value):
        if kind != "started":
            return
        garbage = type("Garbage", (), {})()
        weakref.finalize(garbage, lambda: (signal.raise_signal(signal.SIGINT), sum(range(100))))
        del garbage  # the finalizer runs here, on the main thread, and takes the signal

    fake.script = job
    with Client(fake.endpoint) as client, pytest.raises(KeyboardInterrupt):
        client.execute(collect_plan(), on_event=ctrl_c_in_a_finalizer)
    assert fake.canceled == ["j-6"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_the_event_reader_starts_cancels_the_call(fake, monkeypatch):
    # Ctrl-C can land anywhere, also while execute starts its event reader; the call
    # must end then too, or the job runs on with no one reading its events.
    entered = threading.Event()

    def job(request, context):
        entered.set()
        yield started("j-6")
        fake.call_ended.wait(30)  # until the client cancels the call

    fake.script = job
    start_reader = flinkgo_client._start_reader

    def interrupted_start(call, events):
        start_reader(call, events)
        assert entered.wait(10)  # the server runs the job
        raise KeyboardInterrupt

    monkeypatch.setattr(flinkgo_client, "_start_reader", interrupted_start)
    client = Client(fake.endpoint)
    try:
        with pytest.raises(KeyboardInterrupt):
            client.execute(collect_plan())
        assert fake.call_ended.wait(10)  # before close(), which would cancel it anyway
    finally:
        client.close()


def test_ctrl_c_gives_up_waiting_after_cancel_wait(fake):
    running = threading.Event()

    def job(request, context):
        yield started("j-5")
        running.set()
        fake.call_ended.wait(30)  # a job that does not end until the call is canceled

    fake.script = job
    interrupt_when(running)
    with Client(fake.endpoint, cancel_wait=0.3) as client, pytest.raises(KeyboardInterrupt):
        client.execute(collect_plan())
    assert fake.call_ended.wait(5)  # the call is canceled, so the server cancels the job


# --- the progress line ---------------------------------------------------------------------------


def test_progress_line_on_a_terminal(fake, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    fake.events = [
        started(),
        job_pb2.JobEvent(progress=progress(1000, 400, 1.0)),
        job_pb2.JobEvent(progress=progress(3000, 2500, 2.0)),
        finished(State.FINISHED, metrics=progress(5000, 5000, 2.5)),
    ]
    with Client(fake.endpoint) as client:
        client.execute(collect_plan())
    out = terminal.getvalue()
    assert fake.requests[0].progress_interval_ms > 0
    assert "\rflinkgo: fake job" in out
    assert "read 3,000 rows  wrote 2,500 rows  2,000 rows/s" in out
    assert out.endswith(
        "\rflinkgo: fake job finished in 2.50 s: read 5,000 rows, wrote 5,000 rows "
        "(2,000 rows/s)\x1b[K\n"
    )


def udf_bound_progress(read, into_udf, written, elapsed):
    return job_pb2.Progress(
        operators=[
            job_pb2.OperatorProgress(
                name="from_pandas", uid="source-1", rows_in=read, rows_out=read
            ),
            job_pb2.OperatorProgress(
                name="slow_udf", uid="udf-2", rows_in=into_udf, rows_out=written
            ),
            job_pb2.OperatorProgress(name="collect", uid="sink-2", rows_in=written),
        ],
        elapsed_seconds=elapsed,
    )


def test_progress_line_of_a_udf_bound_job_shows_the_rate_where_rows_move(fake, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    fake.events = [
        started(),
        # Every row is read at once and waits in the UDF: the sources no longer move.
        job_pb2.JobEvent(progress=udf_bound_progress(3000, 3000, 0, 1.0)),
        job_pb2.JobEvent(progress=udf_bound_progress(3000, 3000, 0, 1.5)),
        # The UDF busy with one batch: nothing moved anywhere.
        job_pb2.JobEvent(progress=udf_bound_progress(3000, 3000, 1000, 2.0)),
        job_pb2.JobEvent(progress=udf_bound_progress(3000, 3000, 2000, 3.0)),
        finished(State.FINISHED, metrics=udf_bound_progress(3000, 3000, 3000, 3.5)),
    ]
    with Client(fake.endpoint) as client:
        client.execute(collect_plan())
    lines = terminal.getvalue().split("\r")
    assert not any("0 rows/s" in line and "rows/s into" not in line for line in lines), lines
    # No rate while nothing moves (the line may be redrawn between events).
    waiting = [line for line in lines if "wrote 0 rows\x1b" in line]
    assert waiting and not any("rows/s" in line for line in waiting), waiting
    # Results leave the UDF: rows enter the sink, 1,000 a second since 1.0 s.
    for written in ("1,000", "2,000"):
        want = f"read 3,000 rows  wrote {written} rows  1,000 rows/s into 'collect'\x1b[K"
        assert any(line.endswith(want) for line in lines), lines


def test_progress_summary_is_never_cut_at_the_terminal_width(fake, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("COLUMNS", "40")
    fake.events = [
        started(),
        job_pb2.JobEvent(progress=progress(3000, 2500, 2.0)),
        finished(State.FINISHED, metrics=progress(5000, 5000, 2.5)),
    ]
    with Client(fake.endpoint) as client:
        client.execute(collect_plan())
    lines = terminal.getvalue().split("\r")
    assert any(line.endswith("...\x1b[K") for line in lines)  # the live line fits
    assert lines[-1] == (
        "flinkgo: fake job finished in 2.50 s: read 5,000 rows, wrote 5,000 rows "
        "(2,000 rows/s)\x1b[K\n"
    )


def test_no_progress_line_when_disabled_or_not_a_terminal(fake, monkeypatch):
    fake.events = [started(), finished(State.FINISHED)]
    for stream, show in ((io.StringIO(), True), (Terminal(), False)):
        monkeypatch.setattr("sys.stderr", stream)
        with Client(fake.endpoint) as client:
            client.execute(collect_plan(), progress=show)
        assert stream.getvalue() == ""


# --- endpoints -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "endpoint", ["localhost:8081", "127.0.0.1:7781", "[::1]:7781", "unix:///tmp/x.sock"]
)
def test_valid_endpoints(endpoint):
    assert check_endpoint(endpoint) == endpoint


@pytest.mark.parametrize(
    "endpoint", ["localhost", "http://localhost:8081", "unix://", ":8081", "host:port"]
)
def test_invalid_endpoints(endpoint):
    with pytest.raises(ValueError, match="endpoint"):
        check_endpoint(endpoint)
    with pytest.raises(ValueError, match="Environment: endpoint"):
        fg.Environment(endpoint=endpoint)


def test_endpoint_from_the_environment_variable(monkeypatch):
    monkeypatch.setenv("FLINKGO_ENDPOINT", "localhost:9999")
    assert fg.Environment().endpoint == "localhost:9999"
    assert fg.Environment(endpoint="localhost:1").endpoint == "localhost:1"
    monkeypatch.setenv("FLINKGO_ENDPOINT", "nope")
    with pytest.raises(ValueError, match=r"\$FLINKGO_ENDPOINT"):
        fg.Environment()


def test_import_flinkgo_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, flinkgo; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google') "
        "or m in ('flinkgo._client', 'flinkgo._runtime', 'flinkgo.worker')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_collected_rows_are_read_in_place_from_a_padded_event():
    # The server's codec (runtime/server/codec.go) writes CollectedBatch's fields as
    # node, subtask, padding, arrow_ipc: protobuf in any parser, the rows 8-aligned.
    table = pa.table({"x": pa.array(range(1000), pa.int64()), "s": [str(i) for i in range(1000)]})
    ipc = _ipc(table)
    for pad in range(8):
        inner = b"\x08" + _varint(3) + b"\x10" + _varint(2**64 - 1)  # node 3, subtask -1
        inner += b"\x22" + _varint(pad) + bytes(pad) + b"\x1a" + _varint(len(ipc))
        raw = b"\x1a" + _varint(len(inner) + len(ipc)) + inner + ipc
        assert job_pb2.JobEvent.FromString(raw).collected.arrow_ipc == ipc  # plain protobuf
        event = flinkgo_client._decode_event(raw)
        assert isinstance(event, flinkgo_client._Collected)
        assert (event.node, event.subtask) == (3, -1)
        batches = flinkgo_client._read_batches(event.ipc)
        assert pa.Table.from_batches(batches).equals(table)
        message = pa.py_buffer(raw)
        values = batches[0].column("x").buffers()[1]
        assert values.address % 8 == 0, "misaligned int64 values were not copied"
        in_place = message.address <= values.address < message.address + message.size
        assert in_place == (event.ipc.address % 8 == 0), (pad, in_place)


def test_other_events_are_read_as_protobuf():
    for event in (
        job_pb2.JobEvent(started=job_pb2.JobStarted(job_id="j")),
        job_pb2.JobEvent(collected=job_pb2.CollectedBatch(node=2, arrow_ipc=b"x")),
    ):
        decoded = flinkgo_client._decode_event(event.SerializeToString())
        if isinstance(decoded, flinkgo_client._Collected):
            assert (decoded.node, decoded.ipc.to_pybytes()) == (2, b"x")
        else:
            assert decoded == event
    with pytest.raises(Exception, match="(?i)pars|decod|truncat"):
        flinkgo_client._decode_event(b"\x1a\x05\x08")  # cut short


def test_collect_reads_the_runtimes_rows_in_place(monkeypatch):
    # Through the real runtime: collected batches are slices of the gRPC messages.
    read = flinkgo_client._read_batches
    outside = []

    def checked(ipc: pa.Buffer) -> list[pa.RecordBatch]:
        batches = read(ipc)
        for batch in batches:
            for column in batch.columns:
                for buf in column.buffers():
                    if buf is not None and buf.size:
                        if not ipc.address <= buf.address < ipc.address + ipc.size:
                            outside.append(column.type)
        return batches

    monkeypatch.setattr(flinkgo_client, "_read_batches", checked)
    table = pa.table(
        {"x": pa.array(range(200_000), pa.int64()), "s": [str(i) for i in range(200_000)]}
    )
    got = fg.Environment(parallelism=1).from_arrow(table).collect()
    assert got.equals(table)
    assert not outside, f"copied buffers of {outside}"
