"""Durations of event time: :class:`datetime.timedelta` or Flink's duration syntax.

One parser for every event-time argument (``with_watermark``'s out-of-orderness and
idle timeout, window sizes, slides, gaps and offsets), so that they all accept and
refuse the same things with the same message. The syntax is Flink's
(``TimeUtils.parseDuration``), as the Go runtime's ``config.ParseDuration`` reads it:
a number, optionally decimal, followed by an optional unit label, any case, with or
without a space; no label means milliseconds.

Event time is counted in whole milliseconds (as Flink's), so a duration that is not a
whole number of milliseconds is refused rather than rounded: rounding would move
windows silently.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal, InvalidOperation

from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError

__all__ = ["parse_duration", "parse_timedelta"]

_NS_PER_MS = 1_000_000

# Flink's unit labels (TimeUtils.TimeUnit), singular and plural, in nanoseconds.
_UNITS: dict[str, int] = {
    "d": 86_400_000_000_000,
    "h": 3_600_000_000_000,
    "min": 60_000_000_000,
    "m": 60_000_000_000,
    "s": 1_000_000_000,
    "ms": 1_000_000,
    "µs": 1_000,
    "μs": 1_000,
    "us": 1_000,
    "ns": 1,
}
for _label, _ns in {
    "day": 86_400_000_000_000,
    "hour": 3_600_000_000_000,
    "minute": 60_000_000_000,
    "sec": 1_000_000_000,
    "second": 1_000_000_000,
    "milli": 1_000_000,
    "millisecond": 1_000_000,
    "micro": 1_000,
    "microsecond": 1_000,
    "nano": 1,
    "nanosecond": 1,
}.items():
    _UNITS[_label] = _ns
    _UNITS[_label + "s"] = _ns

_SYNTAX = (
    'write a datetime.timedelta, or a string with a number and a unit, as "500 ms", '
    '"10 s", "5 min", "1 h", "2 d" (units: ms/milli(s)/millisecond(s), s/sec(s)/second(s), '
    "min/m/minute(s), h/hour(s), d/day(s), µs, ns; no unit means milliseconds)"
)

_PATTERN = re.compile(r"^\s*(-?)\s*(\d+(?:\.\d*)?|\.\d+)\s*([^\d\s.]*)\s*$")


def parse_duration(
    value: object,
    *,
    what: str = "duration",
    allow_zero: bool = True,
    allow_negative: bool = False,
) -> int:
    """Return ``value`` as a whole number of milliseconds.

    ``value`` is a :class:`datetime.timedelta` or a string in Flink's duration syntax
    (``"10 s"``, ``"500 ms"``, ``"5 min"``, ``"1 h"``, ``"2 d"``, ``"1.5 s"``; a bare
    number is milliseconds). ``what`` names the argument in error messages (for
    example ``"with_watermark(max_out_of_orderness=...)"``). Zero is accepted unless
    ``allow_zero`` is false; a negative duration (``"-8 h"``, for a window offset)
    only with ``allow_negative``.

    Raises :class:`~flinkgo.exceptions.ArgumentTypeError` for a value of another type
    and :class:`~flinkgo.exceptions.InvalidArgumentError` for a string that does not
    parse, a duration that is not a whole number of milliseconds, or one out of range.
    """
    if isinstance(value, datetime.timedelta):
        ns = (value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1_000
        shown = repr(value)
    elif isinstance(value, str):
        ns = _parse_text(value, what)
        shown = repr(value)
    else:
        raise ArgumentTypeError(
            f"{what}: expected a duration, got {type(value).__name__} {value!r}; {_SYNTAX}"
        )
    if ns % _NS_PER_MS != 0:
        raise InvalidArgumentError(
            f"{what}: {shown} is not a whole number of milliseconds; event time is counted "
            "in milliseconds, so write a multiple of 1 ms"
        )
    ms = ns // _NS_PER_MS
    if ms < 0 and not allow_negative:
        raise InvalidArgumentError(f"{what}: {shown} is negative; it must be 0 or more")
    if ms == 0 and not allow_zero:
        raise InvalidArgumentError(f"{what}: {shown} is zero; it must be positive")
    if abs(ms) >= 2**63 // _NS_PER_MS:
        raise InvalidArgumentError(f"{what}: {shown} is too large (at most about 292 years)")
    return ms


def _parse_text(text: str, what: str) -> int:
    """Return ``text`` in nanoseconds (Flink's syntax), or raise naming ``what``."""
    m = _PATTERN.match(text)
    label = m.group(3).lower() if m else ""
    if m is None or (label and label not in _UNITS):
        raise InvalidArgumentError(f"{what}: {text!r} is not a duration; {_SYNTAX}")
    try:
        number = Decimal(m.group(2))
    except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
        raise InvalidArgumentError(f"{what}: {text!r} is not a duration; {_SYNTAX}") from None
    ns = number * _UNITS[label or "ms"]
    if ns != ns.to_integral_value():
        raise InvalidArgumentError(f"{what}: {text!r} is not a whole number of nanoseconds")
    return -int(ns) if m.group(1) else int(ns)


def parse_timedelta(value: object, *, what: str = "duration") -> datetime.timedelta:
    """Return ``value`` (a timedelta or a Flink duration string) as a timedelta.

    For timestamp arithmetic in expressions, whose timestamps may be finer than
    milliseconds: the resolution is a microsecond (:class:`datetime.timedelta`'s), and a
    string naming a part of a microsecond is refused rather than rounded. Negative
    durations are allowed (``col("ts") + "-1 h"`` is ``col("ts") - "1 h"``).

    >>> parse_timedelta("5 min")
    datetime.timedelta(seconds=300)
    >>> parse_timedelta("250")
    datetime.timedelta(microseconds=250000)
    """
    if isinstance(value, datetime.timedelta):
        return value
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{what}: expected a duration, got {type(value).__name__} {value!r}; {_SYNTAX}"
        )
    ns = _parse_text(value, what)
    if ns % 1_000:
        raise InvalidArgumentError(
            f"{what}: {value!r} is not a whole number of microseconds, the finest duration "
            "flinkgo takes"
        )
    try:
        return datetime.timedelta(microseconds=ns // 1_000)
    except OverflowError:
        raise InvalidArgumentError(f"{what}: {value!r} is too long a duration") from None
