"""Event-time windows: :func:`tumble`, :func:`hop`, :func:`cumulate`, :func:`session`.

A window names the time column (a timestamp column, any unit, that holds each row's
event time) and how rows are grouped in time, as Flink's window table functions:

- ``tumble(time, size, offset=...)``: fixed, non-overlapping windows; a window starts
  at ``ts - (ts - offset) mod size``.
- ``hop(time, size, slide)``: windows of ``size`` starting every ``slide`` (``size`` a
  multiple of ``slide``); a row is in ``size / slide`` windows.
- ``cumulate(time, step, size)``: windows of one period of ``size`` that grow by
  ``step``: ``[start, start+step)``, ``[start, start+2 step)``, ... up to ``size``.
- ``session(time, gap)``: a row opens ``[ts, ts+gap)``; sessions of a key that
  overlap or touch merge.

Use them with ``df.key_by(...).window(w).agg(...)`` or, over all rows in one subtask,
``df.window(w).agg(...)`` (see :class:`WindowedDataFrame`). Durations are
:class:`datetime.timedelta` or Flink's duration strings (``"10 s"``, ``"5 min"``), in
whole milliseconds. This module depends on nothing but :mod:`flinkgo._durations`,
:mod:`flinkgo.exceptions` and :mod:`flinkgo.expr`.
"""

from __future__ import annotations

import datetime
from typing import Literal

from flinkgo._durations import parse_duration
from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError
from flinkgo.expr import Expr, _Column

__all__ = ["Window", "WindowKind", "cumulate", "hop", "session", "tumble"]

WindowKind = Literal["tumble", "hop", "cumulate", "session"]
"""The kinds of windows."""

Duration = datetime.timedelta | str


class Window:
    """An event-time window: made by :func:`tumble`, :func:`hop`, :func:`cumulate`, :func:`session`.

    Durations are kept in milliseconds.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.hop("ts", "10 s", "5 s")
    <Window hop(ts, size=10000ms, slide=5000ms)>
    """

    __slots__ = ("_gap", "_kind", "_offset", "_size", "_slide", "_step", "_time")

    def __init__(
        self,
        kind: WindowKind,
        time: str,
        *,
        size: int = 0,
        slide: int = 0,
        step: int = 0,
        gap: int = 0,
        offset: int = 0,
    ) -> None:
        self._kind = kind
        self._time = time
        self._size = size
        self._slide = slide
        self._step = step
        self._gap = gap
        self._offset = offset

    @property
    def kind(self) -> WindowKind:
        """``"tumble"``, ``"hop"``, ``"cumulate"`` or ``"session"``."""
        return self._kind

    @property
    def time(self) -> str:
        """The time column: each row's event time."""
        return self._time

    @property
    def size_ms(self) -> int:
        """The window size (tumble, hop) or the period (cumulate), in ms; 0 for sessions."""
        return self._size

    @property
    def slide_ms(self) -> int:
        """A hop window's slide, in ms."""
        return self._slide

    @property
    def step_ms(self) -> int:
        """A cumulating window's step, in ms."""
        return self._step

    @property
    def gap_ms(self) -> int:
        """A session window's gap, in ms."""
        return self._gap

    @property
    def offset_ms(self) -> int:
        """The offset of window starts, in ms (tumble)."""
        return self._offset

    def __str__(self) -> str:
        """Render the window as in plan node names, e.g. ``tumble(ts, size=10000ms)``."""
        parts = {
            "tumble": [("size", self._size)],
            "hop": [("size", self._size), ("slide", self._slide)],
            "cumulate": [("step", self._step), ("size", self._size)],
            "session": [("gap", self._gap)],
        }[self._kind]
        if self._offset:
            parts.append(("offset", self._offset))
        text = ", ".join(f"{n}={v}ms" for n, v in parts)
        return f"{self._kind}({self._time}, {text})"

    def __repr__(self) -> str:
        """Show the window, e.g. ``<Window tumble(ts, size=10000ms)>``."""
        return f"<Window {self}>"


def _time_column(op: str, time: str | Expr) -> str:
    if isinstance(time, _Column):
        time = time.output_name()
    if not isinstance(time, str) or not time:
        raise ArgumentTypeError(
            f"{op}: time is the name of a timestamp column (or col(name)), got {time!r}; "
            "to window by an expression, add it as a column first with with_column"
        )
    return time


def _positive(op: str, name: str, value: Duration) -> int:
    return parse_duration(value, what=f"{op}({name}=...)", allow_zero=False)


def _multiple(op: str, big: str, big_ms: int, small: str, small_ms: int) -> None:
    if big_ms % small_ms != 0:
        raise InvalidArgumentError(
            f"{op}: {big} {big_ms}ms is not a multiple of {small} {small_ms}ms; the windows "
            f"are made of slices of one {small}, so {big} must be k x {small} (as Flink "
            "requires)"
        )


def tumble(time: str | Expr, size: Duration, *, offset: Duration | None = None) -> Window:
    """Tumbling windows of ``size``: every row is in exactly one window.

    Parameters
    ----------
    time
        The timestamp column holding each row's event time.
    size
        The window length: a :class:`datetime.timedelta` or a string such as ``"10 s"``.
    offset
        Shift of the window starts (for example ``"-8 h"`` for days in UTC+8); its
        absolute value must be smaller than ``size``.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.tumble("ts", "1 min")
    <Window tumble(ts, size=60000ms)>
    """
    op = "tumble"
    column = _time_column(op, time)
    size_ms = _positive(op, "size", size)
    offset_ms = 0
    if offset is not None:
        offset_ms = parse_duration(offset, what="tumble(offset=...)", allow_negative=True)
        if abs(offset_ms) >= size_ms:
            raise InvalidArgumentError(
                f"tumble: the offset {offset_ms}ms must be smaller than the size {size_ms}ms "
                "in absolute value (an offset of size + x gives the windows of x)"
            )
    return Window("tumble", column, size=size_ms, offset=offset_ms)


def hop(time: str | Expr, size: Duration, slide: Duration) -> Window:
    """Hopping (sliding) windows of ``size``, a new one every ``slide``.

    ``size`` must be a multiple of ``slide``; a row is in ``size / slide`` windows, yet
    costs one update whatever that ratio (windows are computed from slices of one
    slide).

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.hop("ts", "10 min", "1 min").size_ms
    600000
    """
    op = "hop"
    column = _time_column(op, time)
    size_ms = _positive(op, "size", size)
    slide_ms = _positive(op, "slide", slide)
    _multiple(op, "size", size_ms, "slide", slide_ms)
    return Window("hop", column, size=size_ms, slide=slide_ms)


def cumulate(time: str | Expr, step: Duration, size: Duration) -> Window:
    """Cumulating windows: periods of ``size``, emitted every ``step`` as they grow.

    For a period starting at ``s``: ``[s, s+step)``, ``[s, s+2 step)``, ... ``[s, s+size)``.
    ``size`` must be a multiple of ``step``.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.cumulate("ts", "1 h", "1 d")
    <Window cumulate(ts, step=3600000ms, size=86400000ms)>
    """
    op = "cumulate"
    column = _time_column(op, time)
    step_ms = _positive(op, "step", step)
    size_ms = _positive(op, "size", size)
    _multiple(op, "size", size_ms, "step", step_ms)
    return Window("cumulate", column, size=size_ms, step=step_ms)


def session(time: str | Expr, gap: Duration) -> Window:
    """Session windows: a row opens ``[ts, ts+gap)``; overlapping or touching ones merge.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.session("ts", "30 min")
    <Window session(ts, gap=1800000ms)>
    """
    op = "session"
    column = _time_column(op, time)
    return Window("session", column, gap=_positive(op, "gap", gap))
