"""The worker process as go-plugin sees it: handshake, services, shutdown."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import grpc
import pyarrow as pa
import pytest
from _polling import wait_until

from flinkgo import udf
from flinkgo._proto import (
    grpc_controller_pb2,
    grpc_controller_pb2_grpc,
    health_pb2,
    health_pb2_grpc,
    worker_pb2,
    worker_pb2_grpc,
)
from flinkgo.types import schema_ipc_bytes
from flinkgo.worker.chain import read_batch, write_batch
from flinkgo.worker.server import COOKIE_KEY, COOKIE_VALUE


@udf("int64", func_type="pandas")
def times_ten(x):
    return x * 10


@udf("int64")
def fails(x):
    raise KeyError(f"no key {x}")


def start_worker(**env):
    full_env = dict(os.environ, **{COOKIE_KEY: COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "1"})
    full_env.update(env)
    return subprocess.Popen(
        [sys.executable, "-m", "flinkgo.worker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        text=True,
    )


@pytest.fixture
def worker():
    proc = start_worker()
    line = proc.stdout.readline()
    yield proc, line
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()


def open_request(*calls):
    schema = pa.schema([pa.field("x", pa.int64())])
    out = pa.schema([pa.field(c.output, pa.int64()) for c in calls])
    return worker_pb2.OpenRequest(
        calls=list(calls),
        input_schema=schema_ipc_bytes(schema),
        output_schema=schema_ipc_bytes(out),
        max_message_bytes=16 << 20,
    )


def test_handshake_line_and_private_socket_dir(worker):
    proc, line = worker
    fields = line.rstrip("\n").split("|")
    assert fields[0:3] == ["1", "1", "unix"] and fields[4] == "grpc", line
    socket_dir = os.path.dirname(fields[3])
    assert stat.S_IMODE(os.stat(socket_dir).st_mode) == 0o700
    assert os.path.basename(socket_dir).startswith("flinkgo-worker-")


def test_serves_health_udfs_and_shuts_down(worker):
    proc, line = worker
    socket_path = line.split("|")[3]
    with grpc.insecure_channel("unix:" + socket_path) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        status = health.Check(health_pb2.HealthCheckRequest(service="plugin"), timeout=10)
        assert status.status == health_pb2.HealthCheckResponse.SERVING

        stub = worker_pb2_grpc.UdfWorkerStub(channel)
        call = worker_pb2.UdfCall(
            udf=worker_pb2.UdfSpec.FromString(times_ten.to_bytes()), args=["x"], output="y"
        )
        opened = stub.Open(open_request(call), timeout=30)
        assert opened.pid == proc.pid and not opened.HasField("error")

        batch = pa.record_batch([pa.array([1, 2, 3], pa.int64())], names=["x"])
        requests = [
            worker_pb2.ProcessRequest(batch=worker_pb2.Batch(seq=7, arrow_ipc=write_batch(batch))),
            worker_pb2.ProcessRequest(end_bundle=worker_pb2.EndBundle(bundle_id=1)),
        ]
        responses = list(stub.Process(iter(requests), timeout=30))
        assert [r.WhichOneof("kind") for r in responses] == ["result", "bundle_done"]
        assert responses[0].result.seq == 7
        assert read_batch(responses[0].result.arrow_ipc).column(0).to_pylist() == [10, 20, 30]
        assert responses[1].bundle_done.bundle_id == 1

        stub.Close(worker_pb2.CloseRequest(), timeout=10)
        controller = grpc_controller_pb2_grpc.GRPCControllerStub(channel)
        controller.Shutdown(grpc_controller_pb2.Empty(), timeout=10)
    assert proc.wait(timeout=10) == 0
    assert not os.path.exists(os.path.dirname(socket_path))
    # Nothing but the handshake ever reached stdout.
    assert proc.stdout.read() == ""


def test_udf_exception_is_reported_with_traceback(worker):
    proc, line = worker
    with grpc.insecure_channel("unix:" + line.split("|")[3]) as channel:
        stub = worker_pb2_grpc.UdfWorkerStub(channel)
        call = worker_pb2.UdfCall(
            udf=worker_pb2.UdfSpec.FromString(fails.to_bytes()), args=["x"], output="y"
        )
        stub.Open(open_request(call), timeout=30)
        batch = pa.record_batch([pa.array([5], pa.int64())], names=["x"])
        request = worker_pb2.ProcessRequest(
            batch=worker_pb2.Batch(seq=0, arrow_ipc=write_batch(batch))
        )
        (response,) = list(stub.Process(iter([request]), timeout=30))
    error = response.error
    assert (error.udf_name, error.seq, error.exception_type) == ("fails", 0, "KeyError")
    assert "no key 5" in error.message
    assert (
        "test_worker.py" in error.traceback and 'raise KeyError(f"no key {x}")' in error.traceback
    )
    # Only the user's frames: the worker's own say nothing to the user.
    assert error.traceback.startswith("Traceback (most recent call last):\n")
    assert "flinkgo/worker" not in error.traceback, error.traceback


def test_open_reports_unknown_column(worker):
    proc, line = worker
    with grpc.insecure_channel("unix:" + line.split("|")[3]) as channel:
        stub = worker_pb2_grpc.UdfWorkerStub(channel)
        call = worker_pb2.UdfCall(
            udf=worker_pb2.UdfSpec.FromString(times_ten.to_bytes()), args=["nope"], output="y"
        )
        opened = stub.Open(open_request(call), timeout=30)
    assert "nope" in opened.error.message and "times_ten" in opened.error.message


def test_refuses_to_run_by_hand():
    env = {k: v for k, v in os.environ.items() if k != COOKIE_KEY}
    proc = subprocess.run(
        [sys.executable, "-m", "flinkgo.worker"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "not meant to be run by hand" in proc.stderr


def test_exits_when_parent_dies(tmp_path):
    # A shell starts the worker in the background and is then killed: the
    # worker is reparented and must notice.
    pid_file = tmp_path / "pid"
    # As the host does, the shell tells the worker its pid: a worker still
    # importing when its parent dies then notices as soon as it starts.
    script = (
        f"FLINKGO_HOST_PID=$$ {sys.executable} -m flinkgo.worker > /dev/null 2>&1 & "
        f"echo $! > {pid_file}; sleep 60"
    )
    env = dict(os.environ, **{COOKIE_KEY: COOKIE_VALUE})
    shell = subprocess.Popen(["sh", "-c", script], env=env)
    try:
        wait_until(
            lambda: pid_file.exists() and pid_file.read_text().strip(),
            "the worker to start",
            timeout=30,
        )
        pid = int(pid_file.read_text())
        # Real wall time: the parent must die while the worker runs, not before its
        # interpreter is up (a worker still importing is the other case above).
        time.sleep(0.5)
    finally:
        shell.kill()
        shell.wait()
    wait_until(lambda: not _alive(pid), f"worker {pid} to exit after its parent", timeout=15)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_data_socket_transport(worker):
    import socket
    import struct

    proc, line = worker
    with grpc.insecure_channel("unix:" + line.split("|")[3]) as channel:
        stub = worker_pb2_grpc.UdfWorkerStub(channel)
        call = worker_pb2.UdfCall(
            udf=worker_pb2.UdfSpec.FromString(times_ten.to_bytes()), args=["x"], output="y"
        )
        request = open_request(call)
        request.transport = worker_pb2.TRANSPORT_UNIX_SOCKET
        opened = stub.Open(request, timeout=30)
        path = opened.data_socket
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        batch = pa.record_batch([pa.array([4, 5], pa.int64())], names=["x"])
        for message in (
            worker_pb2.ProcessRequest(batch=worker_pb2.Batch(seq=0, arrow_ipc=write_batch(batch))),
            worker_pb2.ProcessRequest(end_bundle=worker_pb2.EndBundle(bundle_id=9)),
        ):
            data = message.SerializeToString()
            conn.sendall(struct.pack("<I", len(data)) + data)
        conn.shutdown(socket.SHUT_WR)
        responses = []
        stream = conn.makefile("rb")
        while header := stream.read(4):
            (length,) = struct.unpack("<I", header)
            responses.append(worker_pb2.ProcessResponse.FromString(stream.read(length)))
        conn.close()
    assert [r.WhichOneof("kind") for r in responses] == ["result", "bundle_done"]
    assert read_batch(responses[0].result.arrow_ipc).column(0).to_pylist() == [40, 50]
    assert responses[1].bundle_done.bundle_id == 9
    # The socket accepts one connection, then disappears.
    assert not os.path.exists(path)


def test_shared_memory_transport(worker):
    """Batches and results through the host's memfd; a large one inline."""
    import mmap
    import socket
    import struct

    slots, slot_bytes = 2, 64 * 1024
    proc, line = worker
    with grpc.insecure_channel("unix:" + line.split("|")[3]) as channel:
        stub = worker_pb2_grpc.UdfWorkerStub(channel)
        call = worker_pb2.UdfCall(
            udf=worker_pb2.UdfSpec.FromString(times_ten.to_bytes()), args=["x"], output="y"
        )
        request = open_request(call)
        request.transport = worker_pb2.TRANSPORT_SHARED_MEMORY
        request.shared_slots, request.shared_slot_bytes = slots, slot_bytes
        opened = stub.Open(request, timeout=30)

        fd = os.memfd_create("test-region")
        os.ftruncate(fd, 2 * slots * slot_bytes)
        region = mmap.mmap(fd, 2 * slots * slot_bytes)
        small = pa.record_batch([pa.array([4, 5], pa.int64())], names=["x"])
        data = write_batch(small)
        region[: len(data)] = data
        large = pa.record_batch([pa.array(range(20_000), pa.int64())], names=["x"])

        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(opened.data_socket)
        socket.send_fds(conn, [b"\x01"], [fd])
        os.close(fd)
        for message in (
            worker_pb2.Batch(seq=0, slot=0, shared_length=len(data)),
            worker_pb2.Batch(seq=1, slot=1, arrow_ipc=write_batch(large)),
        ):
            body = worker_pb2.ProcessRequest(batch=message).SerializeToString()
            conn.sendall(struct.pack("<I", len(body)) + body)
        conn.shutdown(socket.SHUT_WR)
        responses = []
        stream = conn.makefile("rb")
        while header := stream.read(4):
            (length,) = struct.unpack("<I", header)
            responses.append(worker_pb2.ProcessResponse.FromString(stream.read(length)))
        conn.close()
    first, second = (r.result for r in responses)
    # The small result is in output slot 0, the large one (160 kB) inline.
    assert not first.arrow_ipc and not first.input_retained
    out = bytes(region[slots * slot_bytes : slots * slot_bytes + first.shared_length])
    assert read_batch(out).column(0).to_pylist() == [40, 50]
    assert second.shared_length == 0
    assert read_batch(second.arrow_ipc).column(0).to_pylist() == [10 * i for i in range(20_000)]
    region.close()


# The worker's cgroup (flinkgo.worker.cgroup). The runtime's own tests of a UDF's
# escaped processes under both supervisions are in udf/bridge/pluginrunner
# (TestJobEndKillsASetsidChildOfTheUDF, TestHostDeathKillsASetsidChildOfTheUDF).


def _cgroup_parent() -> str:
    """Return this process's cgroup v2 directory where a cgroup can be created there.

    Skips, naming why, where none can; fails under FLINKGO_REQUIRE_PYTHON=1 where
    one should: as root on Linux with cgroup2 mounted read-write (CI).
    """
    from flinkgo.worker import cgroup

    parent, why = cgroup.own_cgroup_dir()
    if parent is not None:
        probe = os.path.join(parent, f"flinkgo-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
            os.rmdir(probe)
            return parent
        except OSError as e:
            why = f"cannot create a cgroup under {parent}: {e.strerror}"
    mount = cgroup._mountpoint()
    read_write = mount is not None and os.access(mount, os.W_OK)
    if os.environ.get("FLINKGO_REQUIRE_PYTHON") == "1" and os.geteuid() == 0 and read_write:
        pytest.fail(f"root with cgroup2 mounted read-write cannot create a cgroup: {why}")
    pytest.skip(f"this process cannot create a cgroup, so workers use the subreaper alone: {why}")


def _start_in_cgroup(directory: str, script: str) -> subprocess.Popen:
    """Start a shell inside the cgroup (moved in before exec: its children are born there)."""
    procs = os.path.join(directory, "cgroup.procs")

    def enter() -> None:
        with open(procs, "w") as f:
            f.write("0")

    return subprocess.Popen(["sh", "-c", script], preexec_fn=enter)  # noqa: PLW1509


@pytest.mark.parametrize("use_kill_file", [True, False], ids=["cgroup.kill", "pid-by-pid"])
def test_cgroup_kill_ends_every_process_and_removes_it(use_kill_file):
    from flinkgo.worker import cgroup

    parent = _cgroup_parent()
    directory = os.path.join(parent, f"{cgroup.PREFIX}{os.getpid()}")
    os.mkdir(directory)
    try:
        # Setsid and double-forked processes: in no group of the shell's, and
        # orphaned once their parents exit; a nested cgroup holds one more.
        shell = _start_in_cgroup(
            directory,
            "setsid sleep 100000 </dev/null >/dev/null 2>&1 & "
            "(sleep 100000 </dev/null >/dev/null 2>&1 &) ; "
            f"mkdir {directory}/nested && sh -c 'echo 0 > {directory}/nested/cgroup.procs; "
            "exec sleep 100000' & wait",
        )
        wait_until(lambda: len(cgroup._procs(directory)) >= 4, "the shell's processes to start")
        pids = cgroup._procs(directory)
        cgroup.kill(directory, use_kill_file=use_kill_file)
        shell.wait(timeout=10)
        wait_until(
            lambda: not any(_alive(pid) for pid in pids), f"the cgroup's processes {pids} to die"
        )
        assert cgroup._procs(directory) == []
        assert cgroup.remove(directory)
        assert not os.path.exists(directory)
    finally:
        if os.path.exists(directory):
            cgroup.kill(directory)
            cgroup.remove(directory)


def test_stale_empty_cgroups_are_removed_and_live_ones_kept():
    from flinkgo.worker import cgroup

    parent = _cgroup_parent()
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = os.path.join(parent, f"{cgroup.PREFIX}{gone.pid}")
    live = os.path.join(parent, f"{cgroup.PREFIX}{os.getpid()}")
    os.makedirs(os.path.join(stale, "nested"))
    os.mkdir(live)
    try:
        cgroup.remove_stale(parent)
        assert not os.path.exists(stale), "an empty cgroup of a dead supervisor was left"
        assert os.path.exists(live), "a live supervisor's cgroup was removed"
    finally:
        cgroup.remove(stale)
        cgroup.remove(live)


@pytest.mark.parametrize("supervision", ["cgroup", "subreaper"])
def test_supervisor_logs_once_at_debug_which_supervision_it_uses(supervision):
    if supervision == "cgroup":
        parent = _cgroup_parent()
    env = dict(
        os.environ,
        **{COOKIE_KEY: COOKIE_VALUE, "FLINKGO_WORKER_LOG_LEVEL": "debug"},
        **({"FLINKGO_WORKER_CGROUP": "0"} if supervision == "subreaper" else {}),
    )
    # As the host starts it: the leader of its own process group, so it is supervised.
    proc = subprocess.Popen(
        [sys.executable, "-m", "flinkgo.worker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        preexec_fn=os.setpgrp,  # Popen's process_group is Python 3.11+
    )
    try:
        assert proc.stdout.readline().startswith("1|1|unix|")
        if supervision == "cgroup":
            directory = os.path.join(parent, f"flinkgo-worker-{proc.pid}")
            assert os.path.isdir(directory), "the worker has no cgroup of its own"
        os.killpg(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    messages = [json.loads(line)["@message"] for line in stderr.splitlines() if line]
    chosen = [m for m in messages if m.startswith("worker supervised")]
    if supervision == "cgroup":
        assert chosen == ["worker supervised in a cgroup of its own"]
        assert not os.path.exists(directory), "the worker's cgroup was left behind"
    else:
        assert chosen == ["worker supervised by a child subreaper only, no cgroup"]


def _python_nobody_can_run(cwd: str) -> str:
    """An interpreter uid 65534 may run (pyenv's sit under root's 0700 home)."""
    candidates = [os.path.realpath(sys.executable), shutil.which("python3"), "/usr/bin/python3"]
    for python in filter(None, candidates):
        probe = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", "pass"],
            capture_output=True,
            cwd=cwd,
        )
        if probe.returncode == 0:
            return python
    pytest.skip(f"uid 65534 can run none of {candidates}")


def test_an_ordinary_user_outside_a_delegated_cgroup_gets_the_reason():
    # Run as nobody, where root owns this process's cgroup: create() must refuse
    # with the reason the supervisor logs, and leave nothing behind.
    from flinkgo.worker import cgroup

    parent = _cgroup_parent()
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as another user")
    # pytest's tmp_path sits in a 0700 directory of root's: nobody needs its own.
    module_dir = tempfile.mkdtemp()
    try:
        os.chmod(module_dir, 0o755)
        shutil.copy(cgroup.__file__, module_dir)
        # The venv's interpreter may sit in a directory nobody cannot enter; its
        # base one may not, or the system's; cgroup.py needs nothing else.
        python = _python_nobody_can_run(module_dir)
        code = (
            f"import sys; sys.path.insert(0, {module_dir!r}); import cgroup; print(cgroup.create())"
        )
        out = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", code],
            capture_output=True,
            text=True,
            cwd=module_dir,
            check=True,
        ).stdout
    finally:
        shutil.rmtree(module_dir)
    why = f"cannot create a cgroup under {parent}: Permission denied"
    assert out.strip() == repr((None, why))
