"""A cgroup v2 per worker, where the process may create one.

The supervisor creates ``flinkgo-worker-<its pid>`` under its own cgroup in the
unified hierarchy and moves the worker into it before the worker runs anything, so
every process the worker's UDFs start is born inside, whatever its session, and
stays there after a double fork. At the end the whole cgroup is killed at once
(``cgroup.kill``, Linux 5.14+; else SIGKILL every pid in ``cgroup.procs`` until it
is empty) and the directory removed. Where no cgroup can be created (no cgroup2
mount, no write permission, not Linux) ``create`` says why and the supervisor keeps
its child subreaper alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

PREFIX = "flinkgo-worker-"
# Set to 0 to keep the worker in its supervisor's cgroup (subreaper only).
DISABLE_ENV = "FLINKGO_WORKER_CGROUP"
# How long the kill waits for the cgroup to empty before giving up on it.
EMPTY_TIMEOUT_SECONDS = 0.5


def _mountpoint() -> str | None:
    """Return where the cgroup2 hierarchy is mounted for this process, or None."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        # id parent major:minor root mountpoint options [optional...] - fstype ...
        before, _, after = line.partition(" - ")
        fields = before.split()
        if after.split()[:1] == ["cgroup2"] and len(fields) > 4 and fields[3] == "/":
            return fields[4]
    return None


def own_cgroup_dir() -> tuple[str | None, str]:
    """Return the directory of this process's cgroup v2, or None and why not."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return None, f"no /proc/self/cgroup ({e.strerror})"
    path = next((line[3:] for line in lines if line.startswith("0::")), None)
    if path is None:
        return None, "no cgroup v2 (unified) hierarchy in /proc/self/cgroup"
    mount = _mountpoint()
    if mount is None:
        return None, "cgroup2 is not mounted"
    directory = os.path.normpath(os.path.join(mount, path.lstrip("/")))
    if not os.path.isfile(os.path.join(directory, "cgroup.procs")):
        return None, f"{directory} is not this process's cgroup"
    return directory, ""


def remove_stale(parent: str) -> None:
    """Remove the empty cgroups of supervisors that died without cleaning up.

    rmdir refuses a cgroup that has processes or children, so a live worker's
    cgroup is never removed; the owner's pid in the name spares a just-created one.
    """
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            owner = name[len(PREFIX) :]
            if not name.startswith(PREFIX) or not owner.isdigit():
                continue
            try:
                os.kill(int(owner), 0)
                continue  # its supervisor is alive (or the pid was reused: left for later)
            except ProcessLookupError:
                pass
            except OSError:
                continue
            remove(os.path.join(parent, name))


def create() -> tuple[str | None, str]:
    """Create this supervisor's worker cgroup; return its directory, or None and why not."""
    if os.environ.get(DISABLE_ENV) == "0":
        return None, f"{DISABLE_ENV}=0"
    parent, why = own_cgroup_dir()
    if parent is None:
        return None, why
    remove_stale(parent)
    directory = os.path.join(parent, f"{PREFIX}{os.getpid()}")
    try:
        os.mkdir(directory)
    except FileExistsError:
        pass  # a stale one of a previous process with our pid
    except OSError as e:
        return None, f"cannot create a cgroup under {parent}: {e.strerror}"
    return directory, ""


def move(directory: str, pid: int) -> str:
    """Move ``pid`` into the cgroup; return "" or why it failed."""
    try:
        with open(os.path.join(directory, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        return ""
    except OSError as e:
        return f"cannot move the worker into {directory}: {e.strerror}"


def _procs(directory: str) -> list[int]:
    pids: list[int] = []
    for root, _, files in os.walk(directory):
        if "cgroup.procs" in files:
            with contextlib.suppress(OSError), open(os.path.join(root, "cgroup.procs")) as f:
                pids.extend(int(pid) for pid in f.read().split())
    return pids


def kill(directory: str, use_kill_file: bool = True) -> None:
    """SIGKILL every process in the cgroup and its descendants, reaping our children.

    Returns once the cgroup is empty, or after EMPTY_TIMEOUT_SECONDS (a process
    stuck in the kernel); ``remove`` then fails and leaves the directory to the
    next start's ``remove_stale``.
    """
    killed_at_once = False
    if use_kill_file:
        try:
            with open(os.path.join(directory, "cgroup.kill"), "w") as f:
                f.write("1")
            killed_at_once = True
        except OSError:
            pass  # before Linux 5.14: one pid at a time
    deadline = time.monotonic() + EMPTY_TIMEOUT_SECONDS
    while True:
        pids = _procs(directory)
        if not pids or time.monotonic() > deadline:
            return
        if not killed_at_once:
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        # Our own children stay listed as zombies until reaped.
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass
        time.sleep(0.005)


def remove(directory: str) -> bool:
    """Remove the cgroup and any cgroups below it, deepest first; True if it is gone."""
    for root, dirs, _ in os.walk(directory, topdown=False):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, name))
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True
