"""What a worker forgets between two chains, so that a reused worker starts each job clean.

The host keeps a worker that closed its chain in order idle for a later job of the same
runtime (``docs/semantics.md#worker-reuse``). The functions of a job are unpickled afresh
for each chain: functions of the user's script travel by value, and cloudpickle gives
each unpickled set of them new globals, so a ``global`` one job's UDF changed is not the
next job's. What outlives a chain is process-wide: the modules its code imported, and
its changes to ``sys.path``, the environment and the working directory. `Namespace`
records them when the worker starts and puts them back after each chain:

* a module imported since the snapshot is dropped from ``sys.modules`` (the next job
  imports it afresh, with fresh module state) unless it belongs to the interpreter's
  installation (the standard library and site-packages: libraries such as pandas keep
  their import, which costs seconds), to flinkgo itself, or is a compiled extension
  (those cannot be imported twice);
* ``sys.path``, ``os.environ`` and the working directory get their snapshot's values;
* cloudpickle's registry of classes shipped by value is emptied, so a class of the
  user's script is rebuilt from the next job's pickle, not reused with its class
  attributes.

What cannot be put back: threads or child processes a UDF started, and attributes it set
on modules the worker keeps (a library's global settings). A job that must not see those
runs with ``python.worker.idle-timeout: 0``, which starts its workers afresh.
"""

from __future__ import annotations

import linecache
import os
import site
import sys
import sysconfig
import types

_EXTENSION_SUFFIXES = (".so", ".pyd", ".dylib")


def _install_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    user_site = site.getusersitepackages() if hasattr(site, "getusersitepackages") else ""
    if user_site:
        roots.add(user_site)
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


class Namespace:
    """A snapshot of the worker's process-wide Python state, to return to."""

    def __init__(self) -> None:
        self._modules = frozenset(sys.modules)
        self._path = list(sys.path)
        self._environ = dict(os.environ)
        self._cwd = os.getcwd()
        self._linecache = frozenset(linecache.cache)
        self._roots = _install_roots()

    def reset(self) -> list[str]:
        """Return to the snapshot; return the names of the modules dropped."""
        dropped = [
            name
            for name, module in list(sys.modules.items())
            if name not in self._modules and self._is_users(name, module)
        ]
        for name in dropped:
            sys.modules.pop(name, None)
        if sys.path != self._path:
            sys.path[:] = self._path
        if dict(os.environ) != self._environ:
            os.environ.clear()
            os.environ.update(self._environ)
        if os.getcwd() != self._cwd:
            os.chdir(self._cwd)
        for filename in set(linecache.cache) - self._linecache:
            linecache.cache.pop(filename, None)
        _forget_shipped_classes()
        return dropped

    def _is_users(self, name: str, module: types.ModuleType | None) -> bool:
        if name == "flinkgo" or name.startswith("flinkgo."):
            return False
        if module is None:
            return True  # a failed import's marker
        origin = getattr(module, "__file__", None)
        if origin is None:
            spec = getattr(module, "__spec__", None)
            origin = getattr(spec, "origin", None) if spec is not None else None
        if origin in (None, "built-in", "frozen"):
            # Namespace packages live where their paths are; a module the
            # user's code built in memory is the user's.
            paths = list(getattr(module, "__path__", []) or [])
            if not paths:
                return origin is None
            return not any(self._installed(p) for p in paths)
        if origin.endswith(_EXTENSION_SUFFIXES):
            return False
        return not self._installed(origin)

    def _installed(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(real.startswith(root) for root in self._roots)


def _forget_shipped_classes() -> None:
    try:
        from cloudpickle import cloudpickle as cp
    except ImportError:  # pragma: no cover - cloudpickle is a dependency
        return
    lock = getattr(cp, "_DYNAMIC_CLASS_TRACKER_LOCK", None)
    trackers = [
        getattr(cp, name, None)
        for name in ("_DYNAMIC_CLASS_TRACKER_BY_CLASS", "_DYNAMIC_CLASS_TRACKER_BY_ID")
    ]
    if lock is None:
        return
    with lock:
        for tracker in trackers:
            if tracker is not None:
                tracker.clear()
