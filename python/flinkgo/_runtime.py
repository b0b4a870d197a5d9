"""The embedded local runtime: the ``flinkgo`` binary run as a child process.

:func:`local_runtime` returns the runtime of this Python process, starting it on first
use: ``flinkgo serve`` on a Unix socket in a private (0700) temporary directory, with
``--parent-pid`` so that it exits when this process dies, however it dies. It is stopped
at interpreter exit (SIGTERM, then SIGKILL after a grace) and its directory removed. One
runtime serves every job of the process; one that died is replaced on the next use, and
a forked child starts its own.

The binary is, in order: ``$FLINKGO_BINARY``; ``flinkgo/_bin/flinkgo`` inside the
installed package (wheels carry it); in a source checkout (``go.mod`` two levels above
this package), ``go build ./cmd/flinkgo`` into a cache directory
(``$FLINKGO_CACHE_DIR``, else ``$XDG_CACHE_HOME/flinkgo``, else ``~/.cache/flinkgo``),
rebuilt when a non-test ``.go`` file, ``go.mod`` or ``go.sum`` is newer than it.

The runtime's environment is this process's, plus ``FLINKGO_ALLOW_PATH=/`` and
``FLINKGO_ALLOW_ENDPOINT=*`` (its jobs may use any path and reach any Kafka or S3 endpoint:
it runs as this user, for this process only), ``FLINKGO_PYTHON`` (this
interpreter, so workers run it with this flinkgo) and a ``PYTHONPATH`` holding the
entries of :data:`sys.path` that are outside the interpreter's own directories (the
script's directory, a source checkout, a test directory), so workers import the modules
that UDFs pickled by reference come from. The child runs in its own session, so Ctrl-C
in a terminal reaches only this process, which cancels its job (see
:mod:`flinkgo._client`).

Its standard output (the rows of ``print`` sinks) is forwarded to :data:`sys.stdout`
and its standard error (logs) to :data:`sys.stderr`, by two threads; the last lines of
stderr are kept for error messages.

Decisions: the single runtime per process is module state (guarded by a lock), as the
runtime is a process-wide resource like the interpreter's own threads. This module
imports only the standard library.
"""

from __future__ import annotations

import atexit
import codecs
import collections
import contextlib
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from flinkgo.job import RuntimeStartError

__all__ = ["LocalRuntime", "find_binary", "local_runtime", "stop_local_runtime"]

READY_PREFIX = "flinkgo: serving on "
"""The line ``flinkgo serve`` prints on stdout once it accepts connections."""

BINARY_ENV = "FLINKGO_BINARY"
CACHE_ENV = "FLINKGO_CACHE_DIR"

START_TIMEOUT = 60.0
"""Seconds to wait for the ready line."""

STOP_GRACE = 5.0
"""Seconds the runtime has to exit on SIGTERM before SIGKILL."""

_EXE = ".exe" if os.name == "nt" else ""
_STDERR_TAIL = 40
_GO_HINT = "Go 1.26 or newer (https://go.dev/dl/)"
# A cold build as measured on an idle 2-core machine (docs/benchmarks.md, "First use").
_COLD_BUILD_HINT = "about 4.5 minutes on an idle 2-core machine"
# Off a terminal, the build's progress is a line per this many compiled packages.
_BUILD_PROGRESS_EVERY = 50


# --- finding or building the binary ---------------------------------------------------------


def find_binary() -> str:
    """Return the path of the ``flinkgo`` binary, building it in a source checkout.

    Returns
    -------
    str
        An executable file.

    Raises
    ------
    RuntimeStartError
        If ``$FLINKGO_BINARY`` is not an executable file, or there is no binary and no
        source checkout, or the build fails or Go is missing (the message says what to
        install or set).
    """
    given = os.environ.get(BINARY_ENV)
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise RuntimeStartError(
                f"flinkgo: ${BINARY_ENV} is {given!r}, which is not an executable file; "
                "point it at a built flinkgo binary or unset it"
            )
        return given
    package = Path(__file__).resolve().parent
    packaged = package / "_bin" / f"flinkgo{_EXE}"
    if packaged.is_file():
        return str(packaged)
    repo = package.parent.parent
    if (repo / "go.mod").is_file():
        return build_from_source(repo)
    raise RuntimeStartError(
        f"flinkgo: this installation ({package}) has no runtime binary (flinkgo/_bin/flinkgo) "
        "and is not a source checkout; install flinkgo from a wheel built with Go, set "
        f"${BINARY_ENV} to a flinkgo binary, or run on a runtime server with "
        "Environment(endpoint=...) or $FLINKGO_ENDPOINT"
    )


def cache_dir(repo: Path) -> Path:
    """Return the directory the binary of the checkout `repo` is built into."""
    base = os.environ.get(CACHE_ENV)
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = os.path.join(xdg or os.path.join(os.path.expanduser("~"), ".cache"), "flinkgo")
    digest = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:12]
    return Path(base) / f"build-{digest}"


def newest_source(repo: Path) -> float:
    """Return the newest modification time of the Go sources in `repo`.

    Counts ``go.mod``, ``go.sum`` and every ``.go`` file except tests, skipping hidden
    directories (``.git``, ``.venv``), ``testdata`` and ``python``.
    """
    newest = 0.0
    for name in ("go.mod", "go.sum", "go.work", "go.work.sum"):
        with contextlib.suppress(OSError):
            newest = max(newest, (repo / name).stat().st_mtime)
    for root, dirs, files in os.walk(repo):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith((".", "_"))
            and d not in ("testdata", "node_modules")
            and not (root == str(repo) and d == "python")
        ]
        for f in files:
            if f.endswith(".go") and not f.endswith("_test.go"):
                with contextlib.suppress(OSError):
                    newest = max(newest, os.stat(os.path.join(root, f)).st_mtime)
    return newest


def build_from_source(repo: Path) -> str:
    """Build ``./cmd/flinkgo`` of the checkout `repo` unless the cached binary is fresh.

    Concurrent builds (several processes) take a file lock; the binary is replaced
    atomically, so a running runtime is never overwritten.

    Raises
    ------
    RuntimeStartError
        If Go is missing or the build fails (with Go's output).
    """
    out_dir = cache_dir(repo)
    binary = out_dir / f"flinkgo{_EXE}"
    if _fresh(binary, repo):
        return str(binary)
    go = shutil.which("go")
    if go is None:
        raise RuntimeStartError(
            f"flinkgo: the runtime must be built from the source checkout at {repo}, which "
            f"needs {_GO_HINT}, and `go` is not on PATH; install Go, or set ${BINARY_ENV} "
            "to a built flinkgo binary"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    with _file_lock(out_dir / "build.lock"):
        if _fresh(binary, repo):  # another process built it meanwhile
            return str(binary)
        print(
            f"flinkgo: building the runtime binary (go build ./cmd/flinkgo in {repo}), as this "
            "source checkout has no up-to-date build; with a cold Go cache this downloads the "
            "Go modules and compiles some 780 packages (Arrow, gRPC, Pebble, the AWS SDK), "
            f"{_COLD_BUILD_HINT}; later builds take seconds",
            file=sys.stderr,
            flush=True,
        )
        tmp = out_dir / f".flinkgo-{os.getpid()}{_EXE}"
        try:
            _go_build(go, repo, tmp)
            os.replace(tmp, binary)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return str(binary)


def _go_build(go: str, repo: Path, out: Path) -> None:
    """Run ``go build -v`` of the runtime into `out`, showing its progress on stderr.

    ``-v`` names each package as it is compiled: on a terminal one line is rewritten
    with the count and the package, elsewhere (a log, CI) a line is printed every
    :data:`_BUILD_PROGRESS_EVERY` packages, so a cold build never looks stuck.
    """
    started = time.monotonic()
    tty = sys.stderr.isatty()
    tail: collections.deque[str] = collections.deque(maxlen=40)
    proc = subprocess.Popen(
        [go, "build", "-v", "-o", str(out), "./cmd/flinkgo"],
        cwd=repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    assert proc.stderr is not None
    packages = 0
    for line in proc.stderr:
        line = line.rstrip("\n")
        tail.append(line)
        if not line or " " in line or ":" in line:
            continue  # an error or a download line, not a package path
        packages += 1
        elapsed = time.monotonic() - started
        if tty:
            sys.stderr.write(f"\r\x1b[Kflinkgo: {elapsed:4.0f} s, {packages} packages: {line[:60]}")
            sys.stderr.flush()
        elif packages % _BUILD_PROGRESS_EVERY == 0:
            print(f"flinkgo: {elapsed:.0f} s, {packages} packages compiled", file=sys.stderr)
    code = proc.wait()
    if tty:
        sys.stderr.write("\r\x1b[K")
    if code != 0:
        errors = "\n".join(t for t in tail if " " in t or ":" in t) or "\n".join(tail)
        raise RuntimeStartError(
            f"flinkgo: `go build ./cmd/flinkgo` in {repo} failed (exit status {code}); "
            f"flinkgo needs {_GO_HINT}:\n{errors.strip()}"
        )
    print(
        f"flinkgo: runtime built in {time.monotonic() - started:.0f} s ({packages} packages)",
        file=sys.stderr,
        flush=True,
    )


def _fresh(binary: Path, repo: Path) -> bool:
    try:
        built = binary.stat().st_mtime
    except OSError:
        return False
    return built >= newest_source(repo)


@contextlib.contextmanager
def _file_lock(path: Path):  # type: ignore[no-untyped-def]
    try:
        import fcntl
    except ImportError:  # not on Unix: builds may overlap, each replaces atomically
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --- the running runtime ---------------------------------------------------------------------


def worker_pythonpath() -> str:
    """Return the ``PYTHONPATH`` the runtime's workers get (see the module doc)."""
    own = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    }
    entries: list[str] = []

    def add(path: str) -> None:
        if os.path.exists(path) and path not in entries:
            entries.append(path)

    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p:
            add(os.path.abspath(p))
    for p in sys.path:
        path = os.path.abspath(p or os.getcwd())
        real = os.path.realpath(path)
        if not any(real == o or real.startswith(o + os.sep) for o in own):
            add(path)
    return os.pathsep.join(entries)


class LocalRuntime:
    """A started ``flinkgo serve`` child process. Use :func:`local_runtime`.

    Parameters
    ----------
    binary
        The ``flinkgo`` binary.
    start_timeout
        Seconds to wait for the ready line.

    Raises
    ------
    RuntimeStartError
        If the process does not start, exits, or prints no ready line in time; the
        message holds its exit status and stderr.
    """

    def __init__(self, binary: str, *, start_timeout: float = START_TIMEOUT) -> None:
        self.binary = binary
        self.owner_pid = os.getpid()
        self._dir, self._lock = _locked_dir()
        self._ready = threading.Event()
        self._endpoint = ""
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        self._cond = threading.Condition()
        self._busy = False  # the stdout forwarder holds data it has not written yet
        self._stopped = False
        listen = "unix://" + os.path.join(self._dir, "runtime.sock")
        env = dict(os.environ)
        env["FLINKGO_PYTHON"] = sys.executable
        env["PYTHONPATH"] = worker_pythonpath()
        # The runtime runs as this process's user and serves only it, so the jobs may
        # read and write any path this user may (a `flinkgo serve` started by hand
        # allows only the directories it is given).
        env["FLINKGO_ALLOW_PATH"] = os.sep
        # Likewise any Kafka or S3 endpoint: this process could connect to it itself (a
        # `flinkgo serve` started by hand reaches only its --allow-endpoint list).
        env["FLINKGO_ALLOW_ENDPOINT"] = "*"
        # The embedded runtime's only client is this process, as this user: in-memory
        # tables of up to 1 GiB (a `flinkgo serve` takes 64 MiB), and the workers of one
        # job may serve the next (python.worker.idle-timeout): a second collect() skips
        # their start. What UDFs print goes to this program's stderr, tagged
        # "[udf #subtask] ", as Spark's local mode shows its executors' output.
        args = [binary, "serve", "--listen", listen, "--parent-pid", str(os.getpid())]
        args += ["--max-message-size", "1GiB", "--reuse-workers", "--udf-output", "stderr"]
        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,  # Ctrl-C goes to this process only
                close_fds=True,
            )
        except OSError as e:
            _remove_locked_dir(self._dir, self._lock)
            raise RuntimeStartError(f"flinkgo: cannot start the runtime {binary}: {e}") from e
        self._threads = [
            threading.Thread(target=self._pump_stdout, name="flinkgo-runtime-stdout", daemon=True),
            threading.Thread(target=self._pump_stderr, name="flinkgo-runtime-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()
        try:
            self._wait_ready(start_timeout, " ".join(args))
        except BaseException:  # Ctrl-C while waiting, too: never leave the child behind
            self.stop(grace=1.0)
            raise

    @property
    def endpoint(self) -> str:
        """The gRPC address of the runtime, e.g. ``unix:///tmp/flinkgo-x/runtime.sock``."""
        return self._endpoint

    @property
    def pid(self) -> int:
        """The runtime process's id."""
        return self._proc.pid

    def alive(self) -> bool:
        """Whether the runtime process is running. Does not block."""
        return self._proc.poll() is None

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the process to exit; return whether it did."""
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def describe(self) -> str:
        """Say whether the runtime runs or how it exited, with its last stderr lines."""
        code = self._proc.poll()
        state = "is running" if code is None else f"exited with {_exit_text(code)}"
        tail = "".join(self._stderr_tail).rstrip()
        text = f"the embedded runtime (pid {self._proc.pid}) {state}"
        return f"{text}; its last stderr lines:\n{tail}" if tail else text

    def drain_output(self, timeout: float = 2.0) -> None:
        """Wait until what the runtime wrote on stdout so far is forwarded.

        Blocks for at most `timeout` seconds. Call it after a job finishes, so that the
        rows of its print sinks are on :data:`sys.stdout` before the job returns.
        """
        try:
            fd = self._proc.stdout.fileno() if self._proc.stdout else -1
        except ValueError:  # closed: the runtime exited and everything was forwarded
            fd = -1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if not self._threads[0].is_alive():
                    return
                if not self._busy and (fd < 0 or not _readable(fd)):
                    return
                self._cond.wait(0.01)

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop the runtime: SIGTERM, then SIGKILL after `grace` seconds.

        Blocks until the process is gone. Safe to call twice and from any thread; a
        second call returns once the first is done.
        """
        with self._cond:
            if self._stopped:
                return
            self._stopped = True
        if os.getpid() == self.owner_pid:
            if self._proc.poll() is None:
                with contextlib.suppress(OSError):
                    self._proc.send_signal(signal.SIGTERM)
                try:
                    self._proc.wait(grace)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(OSError):
                        self._proc.kill()
                    # Bounded: a process stuck in the kernel (D state) must not hang
                    # the interpreter's exit; it is gone when it leaves the kernel.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self._proc.wait(grace)
            for t in self._threads:
                t.join(1.0)
        _remove_locked_dir(self._dir, self._lock)

    # --- internals --------------------------------------------------------------------------

    def _wait_ready(self, timeout: float, command: str) -> None:
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            code = self._proc.poll()
            if code is not None:
                for t in self._threads:
                    t.join(1.0)
                problem = f"exited with {_exit_text(code)} before it was ready"
            elif time.monotonic() > deadline:
                problem = f"printed no {READY_PREFIX.strip()!r} line within {timeout:g} s"
            else:
                continue
            tail = "".join(self._stderr_tail).rstrip() or "(nothing)"
            self.stop(grace=1.0)
            raise RuntimeStartError(
                f"flinkgo: the runtime {problem}.\ncommand: {command}\nstderr:\n{tail}"
            )

    def _pump_stdout(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        fd = stream.fileno()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""  # text before the ready line
        try:
            while True:
                if not _readable(fd, None):
                    continue
                with self._cond:
                    self._busy = True
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    data = b""
                text = decoder.decode(data, final=not data)
                if not self._ready.is_set():
                    pending, text = pending + text, ""
                    while "\n" in pending and not self._ready.is_set():
                        line, pending = pending.split("\n", 1)
                        if line.startswith(READY_PREFIX):
                            self._endpoint = _normalize(line[len(READY_PREFIX) :].strip())
                            self._ready.set()
                        else:
                            text += line + "\n"
                    if self._ready.is_set() or not data:
                        pending, text = "", text + pending
                _write(sys.stdout, text)
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
                if not data:
                    return
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
            stream.close()

    def _pump_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", errors="replace")
                self._stderr_tail.append(line)
                _write(sys.stderr, line)
        except (OSError, ValueError):
            pass
        finally:
            stream.close()


# The runtime's convention for its temporary directories (Go package internal/rundir):
# a directory named flinkgo-rt-* holding owner.lock, which its owner keeps flock()ed
# while it lives. A runtime that starts removes the ones whose lock it can take, so the
# directory of a client that was killed does not stay behind.
RUNDIR_PREFIX = "flinkgo-rt-"
RUNDIR_LOCK = "owner.lock"


def _locked_dir() -> tuple[str, int]:
    """Make a runtime directory in the temp dir and lock it for this process."""
    import fcntl

    path = tempfile.mkdtemp(prefix=RUNDIR_PREFIX)
    try:
        # os.open descriptors are not inherited by the runtime or any other child.
        fd = os.open(os.path.join(path, RUNDIR_LOCK), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path, fd


def _remove_locked_dir(path: str, lock: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(lock)


def _normalize(address: str) -> str:
    # grpc targets: unix:///abs/path or host:port. A bare path is a socket.
    if address.startswith("/"):
        return "unix://" + address
    return address


def _readable(fd: int, timeout: float | None = 0) -> bool:
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True  # closed: let the reader see EOF


def _write(stream: TextIO | None, text: str) -> None:
    if not text or stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # closed at interpreter exit
        pass


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


# --- the runtime of this process ---------------------------------------------------------------

_lock = threading.Lock()
_runtime: LocalRuntime | None = None
_atexit_registered = False


def local_runtime() -> LocalRuntime:
    """Return this process's embedded runtime, starting it (and building it) if needed.

    Thread-safe; a runtime that died is replaced, and after a fork the child starts
    its own.

    Raises
    ------
    RuntimeStartError
        See :func:`find_binary` and :class:`LocalRuntime`.
    """
    global _runtime, _atexit_registered
    with _lock:
        rt = _runtime
        if rt is not None and (rt.owner_pid != os.getpid() or not rt.alive()):
            if rt.owner_pid == os.getpid():
                rt.stop()
            rt = _runtime = None
        if rt is None:
            rt = _runtime = LocalRuntime(find_binary())
            if not _atexit_registered:
                atexit.register(stop_local_runtime)
                _atexit_registered = True
        return rt


def current_runtime() -> LocalRuntime | None:
    """Return this process's embedded runtime if it was started, without starting it."""
    rt = _runtime
    return rt if rt is not None and rt.owner_pid == os.getpid() else None


LOCK_WAIT = 5.0
"""Seconds :func:`stop_local_runtime` waits for a thread that is starting the runtime."""


def stop_local_runtime() -> None:
    """Stop this process's embedded runtime, if any. Blocks; safe to call twice.

    It runs at interpreter exit, when a daemon thread may hold the lock for minutes
    (building the binary, or starting the runtime: a job started by
    ``execute_async``); after :data:`LOCK_WAIT` seconds it stops the runtime without
    the lock rather than hang the exit. A runtime started after that ends with this
    process (``--parent-pid``).
    """
    global _runtime
    locked = _lock.acquire(timeout=LOCK_WAIT)
    try:
        rt, _runtime = _runtime, None
    finally:
        if locked:
            _lock.release()
    if rt is not None and rt.owner_pid == os.getpid():
        rt.stop()
