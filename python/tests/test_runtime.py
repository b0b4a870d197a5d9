"""The embedded runtime: finding or building the binary, starting it, never leaving it behind.

Fake binaries and a fake ``go`` (shell scripts) check the contract with the binary and
the build on demand; the real runtime checks that it is gone after the Python process
that started it exits or is killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from _polling import wait_until, within

import flinkgo as fg
from flinkgo import _runtime


def script(path, body):
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def gone(pid, timeout):
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        return False
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# --- the contract with the binary ---------------------------------------------------------------


def test_start_passes_the_contract_and_forwards_stdout(tmp_path, capfd):
    record = tmp_path / "record"
    binary = script(
        tmp_path / "flinkgo",
        f"""\
        echo "$@" > {record}
        echo "FLINKGO_PYTHON=$FLINKGO_PYTHON" >> {record}
        echo "PYTHONPATH=$PYTHONPATH" >> {record}
        echo "before ready"
        echo "flinkgo: serving on {tmp_path}/rt.sock"
        echo "a printed row"
        echo "some log" >&2
        exec sleep 60
        """,
    )
    rt = _runtime.LocalRuntime(binary)
    try:
        assert rt.endpoint == f"unix://{tmp_path}/rt.sock"
        assert rt.alive()
        args, python, pythonpath = record.read_text().splitlines()
        serve, listen_flag, listen, parent_flag, parent, *flags = args.split()
        assert (serve, listen_flag, parent_flag) == ("serve", "--listen", "--parent-pid")
        # Its only client is this process: big inline tables, reused workers, and
        # what UDFs print on this program's stderr.
        assert flags == [
            "--max-message-size",
            "1GiB",
            "--reuse-workers",
            "--udf-output",
            "stderr",
        ]
        assert listen.startswith("unix:///") and listen.endswith("/runtime.sock")
        assert parent == str(os.getpid())
        assert python == f"FLINKGO_PYTHON={sys.executable}"
        assert os.path.dirname(__file__) in pythonpath.split("=", 1)[1].split(os.pathsep)
        rt.drain_output()
        out = err = ""

        def printed() -> bool:
            nonlocal out, err
            captured = capfd.readouterr()
            out, err = out + captured.out, err + captured.err
            return "a printed row" in out and bool(err)

        within(printed, 5)  # checked below, line by line
        assert "before ready\n" in out and "a printed row\n" in out
        assert "serving on" not in out
        assert "some log" in err
        socket_dir = os.path.dirname(listen[len("unix://") :])
        assert os.path.isdir(socket_dir)
        assert stat.S_IMODE(os.stat(socket_dir).st_mode) == 0o700
    finally:
        rt.stop()
    assert not rt.alive()
    assert not os.path.exists(socket_dir)
    rt.stop()  # twice is fine


def test_stop_at_exit_does_not_wait_forever_for_a_thread_holding_the_lock(tmp_path, monkeypatch):
    # At interpreter exit a daemon thread may hold the lock for minutes (building
    # the binary, starting the runtime); the atexit hook must still stop the runtime.
    import threading

    binary = script(
        tmp_path / "flinkgo",
        f"""\
        echo "flinkgo: serving on {tmp_path}/rt.sock"
        exec sleep 60
        """,
    )
    monkeypatch.setenv(_runtime.BINARY_ENV, binary)
    monkeypatch.setattr(_runtime, "LOCK_WAIT", 0.2)
    _runtime.stop_local_runtime()  # a runtime of an earlier test
    rt = _runtime.local_runtime()
    held, release = threading.Event(), threading.Event()

    def hold_the_lock():
        with _runtime._lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold_the_lock, daemon=True)
    holder.start()
    try:
        assert held.wait(10)
        stopper = threading.Thread(target=_runtime.stop_local_runtime, daemon=True)
        stopper.start()
        stopper.join(30)  # with the lock held to the end, it would wait for `release`
        assert not stopper.is_alive(), "stop_local_runtime waits for the lock"
        assert gone(rt.pid, 10)
        assert _runtime.current_runtime() is None
    finally:
        release.set()
        holder.join(10)


def test_start_fails_with_the_exit_status_and_stderr(tmp_path):
    binary = script(tmp_path / "flinkgo", "echo 'bad flag --parent-pid' >&2\nexit 3\n")
    with pytest.raises(fg.RuntimeStartError, match="status 3") as info:
        _runtime.LocalRuntime(binary)
    assert "bad flag --parent-pid" in str(info.value)
    assert "serve --listen unix://" in str(info.value)


def test_start_times_out_and_kills_the_process(tmp_path):
    pidfile = tmp_path / "pid"
    binary = script(
        tmp_path / "flinkgo", f"echo $$ > {pidfile}\necho starting >&2\nexec sleep 60\n"
    )
    with pytest.raises(fg.RuntimeStartError, match="within 0.5 s") as info:
        _runtime.LocalRuntime(binary, start_timeout=0.5)
    assert "starting" in str(info.value)
    assert gone(int(pidfile.read_text()), 5)


def test_flinkgo_binary_variable(tmp_path, monkeypatch):
    binary = script(tmp_path / "flinkgo", "exit 0\n")
    monkeypatch.setenv("FLINKGO_BINARY", binary)
    assert _runtime.find_binary() == binary
    monkeypatch.setenv("FLINKGO_BINARY", str(tmp_path / "missing"))
    with pytest.raises(fg.RuntimeStartError, match="FLINKGO_BINARY"):
        _runtime.find_binary()


# --- building from a source checkout --------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "cmd" / "flinkgo").mkdir(parents=True)
    (repo / "go.mod").write_text("module example.com/flinkgo\n")
    (repo / "cmd" / "flinkgo" / "main.go").write_text("package main\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    count = tmp_path / "builds"
    # A fake go: counts builds, names 50 compiled packages on stderr as
    # `go build -v` does, and writes an executable at -o.
    script(
        bin_dir / "go",
        f"""\
        echo build >> {count}
        [ -n "$FAIL" ] && {{ echo "cmd/flinkgo/main.go:1: syntax error" >&2; exit 1; }}
        for i in $(seq 1 50); do echo "example.com/p$i" >&2; done
        while [ "$1" != -o ]; do shift; done
        printf '#!/bin/sh\\n' > "$2"
        chmod +x "$2"
        """,
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FLINKGO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FAIL", raising=False)
    return repo, count


def builds(count):
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_build_on_demand_and_reuse(checkout, capsys):
    repo, count = checkout
    binary = _runtime.build_from_source(repo)
    assert os.access(binary, os.X_OK)
    assert binary.startswith(str(_runtime.cache_dir(repo)))
    err = capsys.readouterr().err
    assert "building the runtime" in err
    # The build's progress is shown, off a terminal a line per 50 packages.
    assert "50 packages compiled" in err
    assert "runtime built in" in err
    assert _runtime.build_from_source(repo) == binary
    assert builds(count) == 1
    # A newer test file does not change the binary; a newer source file does.
    future = time.time() + 100
    test_file = repo / "cmd" / "flinkgo" / "main_test.go"
    test_file.write_text("package main\n")
    os.utime(test_file, (future, future))
    _runtime.build_from_source(repo)
    assert builds(count) == 1
    os.utime(repo / "cmd" / "flinkgo" / "main.go", (future, future))
    _runtime.build_from_source(repo)
    assert builds(count) == 2


def test_build_failure_shows_go_output(checkout, monkeypatch):
    repo, _ = checkout
    monkeypatch.setenv("FAIL", "1")
    with pytest.raises(fg.RuntimeStartError, match="syntax error") as info:
        _runtime.build_from_source(repo)
    assert "Go 1.26" in str(info.value)


def test_build_without_go(checkout, monkeypatch, tmp_path):
    repo, _ = checkout
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(fg.RuntimeStartError, match=r"needs Go 1\.26.*not on PATH"):
        _runtime.build_from_source(repo)


# --- the real runtime is never left behind -------------------------------------------------------

CHILD = """
import sys, time
import pandas as pd
import flinkgo as fg
from flinkgo import _runtime

rt = _runtime.local_runtime()
print(rt.pid, rt.endpoint, flush=True)
if sys.argv[1] == "job-then-exit":
    env = fg.Environment()
    assert env.from_pandas(pd.DataFrame({"x": [1, 2]})).to_pandas()["x"].sum() == 3
    print("ok", flush=True)
elif sys.argv[1] == "print":
    @fg.udf("int64")
    def shout(x):
        print("hello", x)
        print("to stderr", x, file=sys.stderr)
        return x

    env = fg.Environment()
    df = env.from_pandas(pd.DataFrame({"x": [7]}))
    assert df.with_column("y", shout(fg.col("x"))).to_pandas()["y"].tolist() == [7]
    print("ok", flush=True)
elif sys.argv[1] == "hog":
    import itertools, os, subprocess

    marks = sys.argv[2]

    @fg.udf("int64")
    def hog(x):
        # A child of the UDF, then a C loop that never releases the GIL: no Python
        # thread of the worker runs again.
        child = subprocess.Popen(["sleep", "1000"])
        mark = os.path.join(marks, str(os.getpid()))
        with open(mark + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {child.pid}")
        os.rename(mark + ".tmp", mark)
        return sum(itertools.repeat(1, 10**15))

    env = fg.Environment(parallelism=2)
    src = env.from_pandas(pd.DataFrame({"x": range(100)}))
    src.rebalance().with_column("y", hog(fg.col("x"))).print()
    env.execute("hog")
elif sys.argv[1] == "stopped-runtime":
    import os, signal, threading

    @fg.udf("int64", func_type="pandas")
    def inc(s):
        return s + 1

    def stop_runtime(event, value):
        if event == "started":  # the job runs: freeze the runtime, socket open
            os.kill(rt.pid, signal.SIGSTOP)

    env = fg.Environment()
    src = env.datagen(schema={"i": "int64"}, rows_per_second=1000)
    src.with_column("j", inc(fg.col("i"))).filter(fg.col("j") < 0).print()
    from flinkgo._client import Client

    with Client(rt.endpoint) as client:
        try:
            client.execute(env.plan("frozen")._message, progress=False, on_event=stop_runtime)
        except fg.RuntimeConnectionError as e:
            print("error:", e, flush=True)
else:  # run an endless job with Python workers until killed
    @fg.udf("int64", func_type="pandas")
    def inc(s):
        return s + 1

    env = fg.Environment(parallelism=2)
    src = env.datagen(schema={"i": "int64"}, rows_per_second=1000)
    src.with_column("j", inc(fg.col("i"))).filter(fg.col("j") < 0).print()
    env.execute("endless")
"""


@pytest.fixture(scope="module")
def built():
    # Build (or find) the binary once, outside the children's timing.
    try:
        return _runtime.find_binary()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built:\n{e}", pytrace=False)


def start_child(tmp_path, mode, *args, env=None):
    code = tmp_path / "child.py"
    code.write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(code), mode, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    pid, endpoint = line.split()
    return proc, int(pid), endpoint


def test_runtime_stops_when_python_exits(built, tmp_path):
    proc, pid, endpoint = start_child(tmp_path, "job-then-exit")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip() == "ok"
    assert gone(pid, 5)
    assert not os.path.exists(os.path.dirname(endpoint[len("unix://") :]))


def test_udf_print_reaches_the_users_stderr_tagged(built, tmp_path):
    # As Spark's local mode shows its executors' output: the user sees what a UDF
    # prints, tagged with the UDF and the subtask counted from 1 (issue 9, item 8).
    proc, _, _ = start_child(tmp_path, "print")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.strip() == "ok"
    assert "[shout #1] hello 7\n" in err, err
    assert "[shout #1] to stderr 7\n" in err, err


def test_a_sigkilled_runtime_leaves_no_process_and_its_files_are_removed_next(
    built, tmp_path, request
):
    # Issue 9, item 5: the runtime is SIGKILLed while each worker's UDF holds the GIL in
    # a C loop (so no Python thread of the worker can notice) and has started a child
    # process. The kernel's parent-death signal kills the workers and their group reaper
    # kills the children.
    marks = tmp_path / "marks"
    marks.mkdir()
    # A temp dir of its own, short enough for the workers' socket paths in it.
    tmp = Path(tempfile.mkdtemp(prefix="fg-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    env = dict(os.environ, TMPDIR=str(tmp))
    proc, runtime_pid, _ = start_child(tmp_path, "hog", str(marks), env=env)
    try:
        # Only renamed marks: a ".tmp" one may still be empty.
        def written():
            return [n for n in os.listdir(marks) if not n.endswith(".tmp")]

        wait_until(lambda: written() or proc.poll() is not None, "the UDF to start", timeout=120)
        assert proc.poll() is None, proc.stderr.read()
        mark = written()[0]
        worker, child = (marks / mark).read_text().split()
        # Every process under the runtime: both workers, their group reapers, the
        # UDF's child.
        pids = [p.pid for p in psutil.Process(runtime_pid).children(recursive=True)]
        assert {int(worker), int(child)} <= set(pids), pids
        os.kill(runtime_pid, signal.SIGKILL)
        for pid in pids:
            assert gone(pid, 15), f"process {pid} outlived the SIGKILLed runtime"
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    # Item 7: what the killed runtime (and its client, unless the client saw the
    # runtime die and removed its own first) left is all in their own directories,
    # go-plugin's sockets among them, and the next runtime removes them.
    left = sorted(os.listdir(tmp))
    assert 1 <= len(left) <= 2 and all(n.startswith("flinkgo-rt-") for n in left), left
    assert any(n.startswith("plugin-dir") for d in left for n in os.listdir(tmp / d)), left
    proc, _, _ = start_child(tmp_path, "job-then-exit", env=env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert os.listdir(tmp) == [], "left in $TMPDIR after the next runtime ran"


def test_a_call_to_a_runtime_that_stopped_answering_fails(built, tmp_path):
    # A SIGSTOPped runtime keeps its socket open, so without keepalive pings the
    # client would wait for the job's events forever.
    proc, pid, _ = start_child(tmp_path, "stopped-runtime")
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert out.startswith("error: flinkgo: job 'frozen': the runtime at "), out
    assert "stopped answering (no answer to a keepalive ping" in out, out
    assert gone(pid, 15)


def test_runtime_and_workers_exit_when_python_is_killed(built, tmp_path):
    proc, pid, _ = start_child(tmp_path, "endless")
    try:
        runtime = psutil.Process(pid)
        workers = []

        def started() -> bool:
            nonlocal workers
            workers = runtime.children(recursive=True)
            return len(workers) >= 2

        assert within(started, 60), "the job's Python workers did not start"
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    assert gone(pid, 15), "the runtime outlived the Python process that started it"
    for w in workers:
        assert gone(w.pid, 15), f"worker {w.pid} outlived the runtime"


# --- the flinkgo command ------------------------------------------------------------------------


def test_install_puts_the_flinkgo_command_on_the_path():
    # pip install flinkgo installs the command the README's CLI sections use, beside the
    # interpreter; it runs the runtime binary.
    command = os.path.join(os.path.dirname(sys.executable), "flinkgo")
    assert os.access(command, os.X_OK), f"{command} missing: the package installs no command"
    done = subprocess.run(
        [command, "version"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"flinkgo {fg.__version__}"


def test_flinkgo_command_passes_the_interpreter_to_run(tmp_path):
    # FLINKGO_PYTHON, unless set, is the interpreter that has this flinkgo; the fake
    # binary prints what it got.
    fake = script(tmp_path / "flinkgo", 'echo "$FLINKGO_PYTHON|$*"\n')
    env = {k: v for k, v in os.environ.items() if k != "FLINKGO_PYTHON"}
    env[_runtime.BINARY_ENV] = fake
    done = subprocess.run(
        [sys.executable, "-c", "from flinkgo._cli import main; main()", "run", "p.py"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == f"{sys.executable}|run p.py"
