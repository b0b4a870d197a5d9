"""The worker's supervisor: a process above the worker that outlives it and its children.

The host starts ``python -m flinkgo.worker`` as the leader of its own process group;
that process forks at once. The child is the worker. The parent stays as the
supervisor: on Linux it is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every
process the worker's UDFs start, in whatever session or group (``setsid``,
``start_new_session=True``, a double-forked daemon), is re-parented to it rather than
to init when its own parent dies. It leaves the worker's process group, so the host's
signals to the group reach the worker and the UDF's processes but not the supervisor.
Once the worker has ended (however: its own exit, the host's SIGKILL, the OOM killer),
the supervisor SIGKILLs the group and then every process re-parented to it until none
is left, and exits as the worker did (its exit status, or its signal), so the host's
view of the worker's end is the worker's. When the host dies the kernel sends the
supervisor SIGTERM (the parent-death signal the host asks for), and it does the same:
nothing a worker started outlives the runtime, even a SIGKILLed one.

Where the process may create a cgroup v2 (``flinkgo.worker.cgroup``), the supervisor
also moves the worker, before it runs anything, into a cgroup of its own, so every
descendant is born inside it; at the end it kills the whole cgroup first and removes
the directory. Elsewhere the subreaper works alone; which one is used is logged once
at debug. The subreaper stays in both cases: it also reaps.

The supervisor runs no user code, takes no lock and starts no thread on Linux; it only
waits, signals and reaps.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time

from flinkgo.worker import cgroup

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_POLL_SECONDS = 0.2

log = logging.getLogger("flinkgo.worker.supervisor")


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children(me: int) -> list[int]:
    """Return the live processes whose parent is ``me`` (Linux: /proc; elsewhere none)."""
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            return [int(pid) for pid in f.read().split()]
    except OSError:
        pass
    kids = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            # Fields after the command's closing parenthesis: state ppid ...
            fields = stat[stat.rfind(b")") + 1 :].split()
            if len(fields) > 1 and int(fields[1]) == me:
                kids.append(int(name))
    return kids


def _kill_all(group: int, cgroup_dir: str | None) -> None:
    """SIGKILL the worker's cgroup, its group and every process re-parented to us.

    A process killed here has its children re-parented to us before we can reap it,
    so the next round finds them; the loop ends when we have no child left. The
    cgroup, emptied, is removed.
    """
    if cgroup_dir is not None:
        cgroup.kill(cgroup_dir)
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
    me = os.getpid()
    while True:
        for pid in _children(me):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if cgroup_dir is not None:
        cgroup.remove(cgroup_dir)


def _exit_as(status: int) -> None:
    """End this process as the worker ended: its exit code, or its signal."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_DFL)  # refused for SIGKILL, which needs none
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), sig)
            time.sleep(1)  # a signal whose default is to ignore falls through
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def supervise() -> int | None:
    """Fork the worker and supervise it; return only in the worker.

    Returns the supervisor's pid, the parent the worker watches, or None when the
    worker runs unsupervised: started without a process group of its own (by hand).
    """
    group = os.getpid()
    if os.getpgrp() != group:
        return None
    host = int(os.environ.get("FLINKGO_HOST_PID") or os.getppid())
    subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    linux = sys.platform.startswith("linux")
    cgroup_dir, why_not = cgroup.create() if linux else (None, "not Linux")
    # The worker waits until it is in its cgroup: nothing it starts is born outside.
    moved_r, moved_w = os.pipe()
    worker = os.fork()
    if worker == 0:
        # The worker dies with its supervisor; one that is already gone left us
        # re-parented, which the worker's parent watch sees.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.close(moved_w)
        os.read(moved_r, 1)  # EOF too if the supervisor died
        os.close(moved_r)
        return group
    os.close(moved_r)
    if cgroup_dir is not None:
        why_not = cgroup.move(cgroup_dir, worker)
        if why_not:
            cgroup.remove(cgroup_dir)
            cgroup_dir = None
    os.write(moved_w, b"1")
    os.close(moved_w)
    if cgroup_dir is not None:
        log.debug(
            "worker supervised in a cgroup of its own",
            extra={"fields": {"cgroup": cgroup_dir, "worker_pid": worker}},
        )
    else:
        log.debug(
            "worker supervised by a child subreaper only, no cgroup",
            extra={"fields": {"reason": why_not, "worker_pid": worker, "subreaper": subreaper}},
        )
    _run(group, worker, host, cgroup_dir)
    return None  # not reached


def _run(group: int, worker: int, host: int, cgroup_dir: str | None) -> None:
    # Never hold the worker's stdout: go-plugin reads it to its end. Stderr stays
    # for a failure of our own; we exit right after the worker anyway.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: _host_gone(group))
    # The host's parent-death signal to us is SIGTERM (Linux); elsewhere, poll.
    if not _prctl(PR_SET_PDEATHSIG, signal.SIGTERM):
        threading.Thread(target=_watch_host, args=(host,), daemon=True).start()
    # Leave the worker's group for the host's: the host signals the group. A host
    # already gone (before the parent-death signal was armed) ends the worker, and
    # this process too while it is still in the group: nothing escaped yet.
    try:
        os.setpgid(0, os.getpgid(host))
    except OSError:
        _host_gone(group)
    if os.getppid() != host:
        _host_gone(group)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            break
    _kill_all(group, cgroup_dir)
    _exit_as(status)


def _host_gone(group: int) -> None:
    # The worker's end ends our wait; a signal during the cleanup finds the group gone.
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)


def _watch_host(host: int) -> None:
    while os.getppid() == host:
        time.sleep(PARENT_POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
