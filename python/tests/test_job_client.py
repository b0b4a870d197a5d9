"""A job submitted with ``execute_async``: its state, a refused start, and whether it
outlives the script that submitted it (detached on a server, as ``flink run -d``).

The server tests start the real binary (``flinkgo serve`` on a Unix socket) and submit
from a separate Python process that exits, as a user's script does.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest
from _polling import wait_until, within

import flinkgo as fg
from flinkgo import _runtime
from flinkgo._client import Client


def test_execute_async_raises_for_a_job_refused_at_its_start() -> None:
    # A checkpoint interval without a checkpoint directory fails the job before it
    # runs: execute_async raises it (it returned a client whose status() said CREATED
    # forever).
    env = fg.Environment(config={"execution.checkpointing.interval": "1 s"})
    _ = env.datagen(schema={"id": "int64"}, rows_per_second=10).print()
    with pytest.raises(
        fg.JobFailedError, match=r"failed: invalid config: .*execution\.checkpointing\.dir"
    ):
        env.execute_async("no checkpoint dir")


def test_status_follows_the_job_to_its_end() -> None:
    env = fg.Environment()
    _ = env.datagen(rows=10, schema={"id": "int64"}).print()
    job = env.execute_async("bounded")
    assert job.status() != "CREATED"
    assert job.result(120).state == "FINISHED"
    assert job.status() == "FINISHED"


@pytest.fixture
def endpoint(tmp_path) -> Iterator[str]:
    sock = tmp_path / "server.sock"
    env = dict(os.environ, FLINKGO_PYTHON=sys.executable, PYTHONPATH=_runtime.worker_pythonpath())
    proc = subprocess.Popen(
        [_runtime.find_binary(), "serve", "--listen", f"unix://{sock}", "--allow-path", "/"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.1)[0]:
                line = proc.stdout.readline().decode()
                if line.startswith(_runtime.READY_PREFIX) or not line:
                    break
        else:
            pytest.fail("flinkgo serve did not start")
        if not line:
            pytest.fail(f"flinkgo serve did not start: {proc.stderr.read().decode()}")
        yield f"unix://{sock}"
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()


_SCRIPT = """
import sys
import flinkgo as fg

env = fg.Environment(endpoint=sys.argv[1])
_ = env.datagen(schema={"id": "int64"}, rows_per_second=20).print()
detached = env.execute_async("detached")
_ = env.datagen(schema={"id": "int64"}, rows_per_second=20).print()
attached = env.execute_async("attached", detached=False)
print(detached.job_id, attached.job_id)
"""


def test_a_detached_job_outlives_the_script_that_submitted_it(endpoint: str) -> None:
    # The script submits two endless jobs and exits. The attached one ends with it,
    # CANCELED; the detached one (the default) runs on until it is canceled by id (it
    # was canceled about 1 s after the script exited).
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), endpoint],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    detached_id, attached_id = done.stdout.split()
    with Client(endpoint) as client:

        def states() -> dict[str, str]:
            return {i: s for i, _, s in client.list_jobs(include_ended=True)}

        within(lambda: states().get(attached_id) == "CANCELED", 60)  # checked below
        now = states()
        assert now.get(attached_id) == "CANCELED", now
        assert now.get(detached_id) == "RUNNING", now
        assert detached_id in {i for i, _, _ in client.list_jobs()}
        assert attached_id not in {i for i, _, _ in client.list_jobs()}
        assert client.cancel(detached_id)
        wait_until(lambda: states().get(detached_id) == "CANCELED", "the detached job's cancel")


def test_an_endless_file_sink_without_checkpoints_is_warned_of(tmp_path) -> None:
    # Its parts are published at checkpoints or the job's end: none while it runs.
    env = fg.Environment()
    _ = env.datagen(schema={"id": "int64"}, rows_per_second=10).write_csv(str(tmp_path / "out"))
    assert "warning: file sink" in env.explain()
    with pytest.warns(UserWarning, match="execution.checkpointing.interval"):
        job = env.execute_async("endless to files")
    job.cancel()
    with pytest.raises(fg.JobCanceledError):
        job.result(120)

    checkpointed = fg.Environment(
        config={
            "execution.checkpointing.interval": "1 s",
            "execution.checkpointing.dir": str(tmp_path / "chk"),
        }
    )
    _ = checkpointed.datagen(schema={"id": "int64"}, rows_per_second=10).write_csv(
        str(tmp_path / "out2")
    )
    assert "warning:" not in checkpointed.explain()


_CTRL_C_SCRIPT = """
import flinkgo as fg

env = fg.Environment()
_ = env.datagen(schema={"id": "int64"}, rows_per_second=20).print()
WAIT
"""


@pytest.mark.parametrize(
    "wait", ['env.execute("endless")', 'env.execute_async("endless").result()']
)
def test_ctrl_c_shows_no_frames_of_the_client(wait: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_CTRL_C_SCRIPT).replace("WAIT", wait)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline(), "the job printed no row"  # it runs
        proc.send_signal(2)  # SIGINT, as Ctrl-C
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert "KeyboardInterrupt" in err, err
    for internal in ("flinkgo/_client.py", "_with_client", "threading.py"):
        assert internal not in err, err
