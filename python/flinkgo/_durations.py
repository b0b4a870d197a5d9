"""Durations as users write them: a :class:`datetime.timedelta` or Flink's duration syntax.

Flink's ``TimeUtils.parseDuration`` reads ``"<number> <unit>"`` with optional spaces, the
unit case-insensitive and milliseconds when it is left out: ``"10 s"``, ``"500ms"``,
``"5 min"``, ``"1 h"``, ``"2 d"``. The units are

- days: ``d``, ``day``, ``days``
- hours: ``h``, ``hour``, ``hours``
- minutes: ``min``, ``m``, ``minute``, ``minutes``
- seconds: ``s``, ``sec``, ``secs``, ``second``, ``seconds``
- milliseconds: ``ms``, ``milli``, ``millis``, ``millisecond``, ``milliseconds``
- microseconds: ``us``, ``µs``, ``micro``, ``micros``, ``microsecond``, ``microseconds``
- nanoseconds: ``ns``, ``nano``, ``nanos``, ``nanosecond``, ``nanoseconds``

A duration is returned as a :class:`datetime.timedelta`, whose resolution is a
microsecond: a string that is not a whole number of microseconds is refused.

This minimal module is written for expressions (issue 11, item 7); the watermark work
owns the full version of it.
"""

from __future__ import annotations

import datetime
import re

from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError

__all__ = ["parse_duration"]

_NANOS = {
    **dict.fromkeys(("d", "day", "days"), 86_400 * 10**9),
    **dict.fromkeys(("h", "hour", "hours"), 3_600 * 10**9),
    **dict.fromkeys(("min", "m", "minute", "minutes"), 60 * 10**9),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 10**9),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 10**6),
    **dict.fromkeys(("us", "µs", "micro", "micros", "microsecond", "microseconds"), 10**3),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
}

_SYNTAX = re.compile(r"^\s*(\d+)\s*([^\d\s]*)\s*$")


def parse_duration(value: object, *, what: str = "duration") -> datetime.timedelta:
    """Return `value` (a timedelta or a Flink duration string) as a timedelta.

    Parameters
    ----------
    value
        A :class:`datetime.timedelta`, or a string such as ``"5 min"`` (see the module).
    what
        What the duration is for, to start error messages with.

    Raises
    ------
    InvalidArgumentError
        If the string does not parse, or names a part of a microsecond.
    ArgumentTypeError
        If `value` is neither a timedelta nor a string.

    Examples
    --------
    >>> parse_duration("5 min")
    datetime.timedelta(seconds=300)
    >>> parse_duration("250")
    datetime.timedelta(microseconds=250000)
    """
    if isinstance(value, datetime.timedelta):
        return value
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{what}: expected a datetime.timedelta or a string such as '5 min', got "
            f"{value!r} ({type(value).__name__})"
        )
    match = _SYNTAX.match(value)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in _NANOS):
        raise InvalidArgumentError(
            f"{what}: {value!r} is not a duration; write a number and a unit, e.g. '10 s', "
            "'500 ms', '5 min', '1 h', '2 d' (units: d, h, min, s, ms, us, ns)"
        )
    nanos = int(match.group(1)) * _NANOS[unit or "ms"]
    if nanos % 1000:
        raise InvalidArgumentError(
            f"{what}: {value!r} is not a whole number of microseconds, the finest duration "
            "flinkgo takes"
        )
    try:
        return datetime.timedelta(microseconds=nanos // 1000)
    except OverflowError:
        raise InvalidArgumentError(f"{what}: {value!r} is too long a duration") from None
