"""What a script shows of a flinkgo error it does not catch: the user's frames and our message.

A flinkgo error raised in a pipeline passes through a dozen of the package's frames (the
DataFrame method, the plan builder, the client) before it reaches the user's line; they
say nothing to the user and push the message off the screen. :func:`install` wraps
:data:`sys.excepthook` (``import flinkgo`` calls it) so that an uncaught
:class:`~flinkgo.exceptions.FlinkgoError` is printed

* without the frames of files inside the flinkgo package, and
* without an exception it was raised from when the flinkgo error's message already
  contains that exception's message (the chain would print the same text again).

In an IPython shell (a notebook's kernel), which never calls the hook, the same trimming
is IPython's custom exception handler for flinkgo errors (:func:`install_ipython`).

The hook before it still prints the result, so other hooks keep working; exceptions that
are not flinkgo's, and flinkgo errors caught by the program, are untouched (their
``__traceback__`` keeps every frame, for debuggers and logs). The worker's side, the
traceback of a UDF's exception, shows the UDF's frames only (``flinkgo.worker.server``).
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from flinkgo.exceptions import FlinkgoError

__all__ = ["install", "without_internal_frames"]

_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")

_previous: Any = None


def without_internal_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Return `tb` without the entries of frames in the flinkgo package."""
    kept = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _for_user(exc: BaseException) -> BaseException:
    """Trim `exc` (a flinkgo error) and its chain as this module's docstring says."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        trimmed = without_internal_frames(e.__traceback__)
        if trimmed is not None or isinstance(e, FlinkgoError):
            e.__traceback__ = trimmed
        inner = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
        if inner is not None and isinstance(e, FlinkgoError) and str(inner) in str(e):
            e.__cause__, e.__suppress_context__ = None, True
            inner = None
        e = inner
    return exc


def _hook(
    exc_type: type[BaseException], exc: BaseException, tb: types.TracebackType | None
) -> None:
    if isinstance(exc, FlinkgoError):
        try:
            exc = _for_user(exc)
            tb = exc.__traceback__
        except Exception:  # pragma: no cover - never hide the error itself
            pass
    _previous(exc_type, exc, tb)


def _ipython_handler(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None
) -> None:
    """IPython's custom exception handler: its own traceback display, of the trimmed error."""
    try:
        value = _for_user(value)  # keeps IPython's frame that tb_offset skips, and the cell's
        tb = value.__traceback__
    except Exception:  # pragma: no cover - never hide the error itself
        pass
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def install_ipython(shell: Any) -> None:
    """Show flinkgo errors trimmed in an IPython shell (a notebook's kernel, ``ipython``).

    IPython prints exceptions itself and never calls :data:`sys.excepthook`; its
    ``set_custom_exc`` is the documented way to change how some exceptions show.
    """
    shell.set_custom_exc((FlinkgoError,), _ipython_handler)


def install() -> None:
    """Wrap :data:`sys.excepthook` (once; the hook in place keeps printing), and IPython's.

    IPython is looked for only if the program has imported it (a notebook has).
    """
    global _previous
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    if shell is not None:
        install_ipython(shell)
    if getattr(sys.excepthook, "__module__", None) == __name__:
        return
    _previous = sys.excepthook
    sys.excepthook = _hook
