"""The live status line of a running job, on a terminal's standard error.

While a job runs, one line is rewritten in place (carriage return, erase to the end of
the line): elapsed time, rows read by the sources, rows written by the sinks, and a recent
rate over the last seconds of progress events. The runtime counts the rows entering and
leaving every operator; the rate is of the rows read while the sources read, else of the
furthest point downstream where rows still move, named: a UDF-bound job whose input is
read shows the rate at which results leave the UDF (``1,200 rows/s out of "parse"``). A
point moves when its count changed in the last second; when none does (a UDF busy with
one batch) the line shows no rate rather than ``0 rows/s``. When the job ends, the line
is replaced by a summary. Nothing is written unless the stream is a terminal, so logs
and pipes stay clean.

Sources and sinks are recognized by their operator uids in progress events: the plan
node's uid, else ``"source-<id>"`` / ``"sink-<id>"`` (the runtime's naming of a node's
operator, ``runtime/plan``). This module imports only the standard library.
"""

from __future__ import annotations

import collections
import shutil
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["ProgressLine", "is_terminal"]

# Seconds of progress events the recent rate is computed over.
_RATE_WINDOW = 3.0
# A count that changed less than this long ago is moving.
_MOVING = 1.0


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is an open terminal."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ProgressLine:
    """The status line of one job. Methods do nothing when it is disabled.

    Parameters
    ----------
    name
        The job's name.
    plan
        The ``JobPlan`` (to find the uids of its sources and sinks).
    stream
        Where to draw, normally :data:`sys.stderr`.
    enabled
        Whether to draw at all.
    """

    def __init__(self, name: str, plan: Any, stream: TextIO | None, *, enabled: bool) -> None:
        self.enabled = enabled and stream is not None
        self._name = name
        self._stream = stream
        self._sources: set[str] = set()
        self._sinks: set[str] = set()
        for node in plan.nodes:
            kind = node.WhichOneof("kind")
            if kind in ("source", "sink"):
                (self._sources if kind == "source" else self._sinks).add(
                    node.uid or f"{kind}-{node.id}"
                )
        self._start = time.monotonic()
        self._seen_at = self._start  # when the last progress event came
        self._elapsed = 0.0  # the runtime's elapsed seconds at that event
        self._rows_in = 0
        self._rows_out = 0
        # (runtime's elapsed seconds, rows read, the counts of every point), oldest first;
        # the points are each operator's rows in and out, in the runtime's (plan) order.
        self._history: collections.deque[tuple[float, int, tuple[int, ...]]] = collections.deque()
        self._points: tuple[str, ...] = ()
        self._note = ""
        self._shown = ""

    def totals(self, progress: Any) -> tuple[int, int]:
        """Return (rows read by the sources, rows written by the sinks) of a Progress."""
        rows_in = rows_out = 0
        for op in progress.operators:
            if op.uid in self._sources:
                rows_in += max(op.rows_in, op.rows_out)
            if op.uid in self._sinks:
                rows_out += max(op.rows_in, op.rows_out)
        return rows_in, rows_out

    def update(self, progress: Any) -> None:
        """Take a progress event and redraw."""
        if not self.enabled:
            return
        self._seen_at = time.monotonic()
        self._elapsed = progress.elapsed_seconds
        self._rows_in, self._rows_out = self.totals(progress)
        points = tuple(
            f"{where} {op.name!r}" for op in progress.operators for where in ("into", "out of")
        )
        counts = tuple(n for op in progress.operators for n in (op.rows_in, op.rows_out))
        if points != self._points:
            self._history.clear()  # other operators: start the window again
            self._points = points
        self._history.append((self._elapsed, self._rows_in, counts))
        while len(self._history) > 2 and self._history[0][0] < self._elapsed - _RATE_WINDOW:
            self._history.popleft()
        self.tick()

    def note(self, text: str) -> None:
        """Show `text` at the end of the line (e.g. "canceling")."""
        self._note = text
        self.tick()

    def tick(self) -> None:
        """Redraw with the current time; cheap when nothing changed."""
        if not self.enabled:
            return
        elapsed = self._elapsed + (time.monotonic() - self._seen_at)
        if not self._history:
            elapsed = time.monotonic() - self._start
        text = (
            f"flinkgo: {self._name}  {elapsed:.1f} s  read {self._rows_in:,} rows  "
            f"wrote {self._rows_out:,} rows"
        )
        rate = self._rate()
        if rate:
            text += f"  {rate}"
        if self._note:
            text += f"  ({self._note})"
        self._draw(text)

    def _rate(self) -> str:
        """Return the recent rate as the module's docstring says, or "" when nothing moved."""
        if len(self._history) < 2:
            return ""
        (t0, read0, first), (t1, read1, last) = self._history[0], self._history[-1]
        if t1 <= t0:
            return ""
        entries = list(self._history)

        def moving(value: Callable[[tuple[float, int, tuple[int, ...]]], int]) -> bool:
            # Whether the count changed between two events of the last _MOVING seconds.
            return any(
                newer[0] >= t1 - _MOVING and value(newer) != value(older)
                for older, newer in zip(entries, entries[1:], strict=False)
            )

        if moving(lambda e: e[1]):
            return f"{(read1 - read0) / (t1 - t0):,.0f} rows/s"
        for i in reversed(range(len(last))):
            if moving(lambda e, i=i: e[2][i]):  # type: ignore[misc]
                return f"{(last[i] - first[i]) / (t1 - t0):,.0f} rows/s {self._points[i]}"
        return ""

    def finish(self, state: str, metrics: Any | None, elapsed: float) -> None:
        """Replace the line by the job's summary line."""
        if not self.enabled:
            return
        if metrics is not None and metrics.operators:
            self._rows_in, self._rows_out = self.totals(metrics)
        verb = {"FINISHED": "finished in", "CANCELED": "canceled after"}.get(state, "failed after")
        text = (
            f"flinkgo: {self._name} {verb} {elapsed:.2f} s: read {self._rows_in:,} rows, "
            f"wrote {self._rows_out:,} rows"
        )
        if elapsed > 0 and self._rows_in:
            text += f" ({self._rows_in / elapsed:,.0f} rows/s)"
        self._draw(text, end="\n")
        self.enabled = False

    def close(self) -> None:
        """Erase the line if no summary replaced it."""
        if self.enabled and self._shown:
            self._write("\r\x1b[K")
        self.enabled = False

    def _draw(self, text: str, end: str = "") -> None:
        # The live line fits the terminal, so that \r can redraw it; the summary stays
        # whole (the terminal wraps it).
        width = shutil.get_terminal_size((100, 20)).columns - 1
        if not end and len(text) > width > 10:
            text = text[: width - 3] + "..."
        if text == self._shown and not end:
            return
        self._shown = text
        self._write(f"\r{text}\x1b[K{end}")

    def _write(self, s: str) -> None:
        assert self._stream is not None
        try:
            self._stream.write(s)
            self._stream.flush()
        except (OSError, ValueError):
            self.enabled = False
