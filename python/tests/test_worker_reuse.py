"""Warm workers: the embedded runtime lends the idle Python workers of ended jobs to later
jobs of the same process (docs/semantics.md#worker-reuse).

A worker is reused only after a job ended it in order, never by two running jobs at
once, and never with what the previous job's code left in it: its functions, the
modules it imported, its globals, environment variables and classes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import udf

THREE = pd.DataFrame({"x": [1, 2, 3]})

# Module state a UDF changes: this module is pickled by reference, so a worker that kept
# it would show the previous job's changes to the next.
SEEN: list[int] = []


@udf("int64")
def worker_pid(x):
    return os.getpid()


@udf("string")
def remember(x):
    SEEN.append(x)
    return f"{os.getpid()} {len(SEEN)}"


def pids(env: fg.Environment) -> set[int]:
    return set(env.from_pandas(THREE).with_column("pid", worker_pid("x")).to_pandas().pid)


def wait_gone(pid: int, timeout: float = 30.0) -> None:
    """Wait until process `pid` has exited (a condition, with a bound)."""

    def gone() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:  # exited (and reaped) between any two looks
            return True

    wait_until(gone, f"worker {pid} to exit", timeout)


def test_a_second_job_reuses_the_first_jobs_worker():
    env = fg.Environment()
    first = pids(env)
    second = pids(env)
    assert len(first) == 1
    assert second == first


def test_module_state_of_one_job_is_not_the_next_jobs():
    env = fg.Environment()
    df = env.from_pandas(THREE).with_column("n", remember("x"))
    one = [v.split() for v in df.to_pandas().n]
    two = [v.split() for v in df.to_pandas().n]
    assert [n for _, n in one] == ["1", "2", "3"]
    assert [n for _, n in two] == ["1", "2", "3"], "the second job saw the first job's module state"
    assert {p for p, _ in one} == {p for p, _ in two}, "no reuse: the test would prove nothing"


SCRIPT = """
import os
import pandas as pd
import flinkgo as fg
from flinkgo import udf
import helper

COUNT = 0

class Tally:
    calls = 0

@udf("string")
def state(x):
    global COUNT
    COUNT += 1
    Tally.calls += 1
    helper.SEEN.append(x)
    before = os.environ.get("SET_BY_UDF", "-")
    os.environ["SET_BY_UDF"] = "yes"
    return f"{os.getpid()} {COUNT} {Tally.calls} {len(helper.SEEN)} {before}"

env = fg.Environment()
df = env.from_pandas(pd.DataFrame({"x": [1, 2]})).with_column("s", state("x"))
for _ in range(2):
    print(list(df.to_pandas().s))
"""


def test_globals_classes_environment_and_helper_modules_do_not_leak(tmp_path: Path):
    # As a user runs it: functions and classes of the script travel by value, the
    # helper module by reference.
    (tmp_path / "helper.py").write_text("SEEN = []\n")
    (tmp_path / "script.py").write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == second, "the second job saw state the first job's UDF left"
    pid, count, calls, seen, before = eval(first)[1].split()
    assert (count, calls, seen, before) == ("2", "2", "2", "yes")
    assert eval(first)[0].split()[0] == pid  # one worker: the reuse was tested


def test_a_failed_jobs_worker_is_never_reused(tmp_path: Path):
    pid_file = tmp_path / "pid"
    env = fg.Environment()

    @udf("int64")
    def fail(x):
        Path(str(pid_file)).write_text(str(os.getpid()))
        raise ValueError("this job fails")

    with pytest.raises(fg.JobFailedError, match="this job fails"):
        env.from_pandas(THREE).with_column("y", fail("x")).to_pandas()
    failed = int(pid_file.read_text())
    wait_gone(failed)
    assert failed not in pids(env)


def test_idle_timeout_zero_stops_the_workers_at_the_jobs_end():
    env = fg.Environment(config={"python.worker.idle-timeout": "0 ms"})
    (pid,) = pids(env)
    wait_gone(pid)
    assert pid not in pids(fg.Environment())


def test_an_idle_worker_is_stopped_after_its_idle_timeout():
    env = fg.Environment(config={"python.worker.idle-timeout": "300 ms"})
    (pid,) = pids(env)
    wait_gone(pid)  # nobody took it within 300 ms: the pool stopped it
    assert pid not in pids(fg.Environment())


@udf("int64")
def pid_when_both_run(x):
    # Both jobs' UDFs run at once: each waits until the other has written its pid.
    d = Path(os.environ.get("TMPDIR", "/tmp")) / f"flinkgo-reuse-{os.getppid()}"
    d.mkdir(exist_ok=True)
    (d / str(os.getpid())).write_text("")
    deadline = time.monotonic() + 60
    while len(list(d.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # in the worker, where the tests' _polling is not importable
    return os.getpid()


def test_jobs_running_at_once_never_share_a_worker():
    env = fg.Environment()
    pids(env)  # an idle worker now waits in the pool
    results: list[set[int]] = []

    def run() -> None:
        df = env.from_pandas(THREE.head(1)).with_column("pid", pid_when_both_run("x"))
        results.append(set(df.to_pandas().pid))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 2
    assert results[0].isdisjoint(results[1]), f"two running jobs shared a worker: {results}"


def test_a_bad_idle_setting_is_refused_by_name():
    env = fg.Environment(config={"python.worker.max-idle": "-1"})
    with pytest.raises(fg.JobFailedError, match="python.worker.max-idle"):
        pids(env)


def test_the_worker_namespace_drops_modules_the_chain_imported(tmp_path: Path, monkeypatch):
    from flinkgo.worker.namespace import Namespace

    (tmp_path / "users_module.py").write_text("STATE = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ns = Namespace()
    import users_module  # type: ignore[import-not-found]

    users_module.STATE.append(1)
    os.environ["FLINKGO_NAMESPACE_TEST"] = "1"
    path, cwd = list(sys.path), os.getcwd()
    sys.path.append(str(tmp_path / "added"))
    os.chdir(tmp_path)
    dropped = ns.reset()
    assert "users_module" in dropped
    assert "users_module" not in sys.modules
    assert "FLINKGO_NAMESPACE_TEST" not in os.environ
    assert (sys.path, os.getcwd()) == (path, cwd)
    import users_module as again  # type: ignore[import-not-found]

    assert again.STATE == []
    # Libraries of the installation stay imported: re-importing them costs seconds and
    # compiled extensions cannot be imported twice.
    assert "pandas" in sys.modules
