"""flinkgo._durations.parse_duration: Flink's duration syntax and timedelta, in ms."""

from __future__ import annotations

import datetime

import pytest

from flinkgo._durations import parse_duration
from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("10 s", 10_000),
        ("10s", 10_000),
        ("500 ms", 500),
        ("500", 500),
        ("5 min", 300_000),
        ("5 m", 300_000),
        ("2 minutes", 120_000),
        ("1 h", 3_600_000),
        ("1 HOUR", 3_600_000),
        ("2 d", 172_800_000),
        ("3 days", 259_200_000),
        ("1.5 s", 1_500),
        ("0.5 min", 30_000),
        ("2000 µs", 2),
        ("3000000 ns", 3),
        ("1 sec", 1_000),
        ("4 seconds", 4_000),
        ("7 millis", 7),
        ("0 s", 0),
    ],
)
def test_flink_syntax(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


def test_timedelta() -> None:
    assert parse_duration(datetime.timedelta(seconds=10)) == 10_000
    assert parse_duration(datetime.timedelta(days=1, milliseconds=5)) == 86_400_005


@pytest.mark.parametrize("text", ["", "ten seconds", "10 parsecs", "1..5 s", "s", "10 s 5"])
def test_bad_strings_name_the_argument_and_the_syntax(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"delay: .* is not a duration; .*\"10 s\""):
        parse_duration(text, what="delay")


def test_not_a_whole_millisecond() -> None:
    with pytest.raises(InvalidArgumentError, match="not a whole number of milliseconds"):
        parse_duration("1500 µs")
    with pytest.raises(InvalidArgumentError, match="not a whole number of milliseconds"):
        parse_duration(datetime.timedelta(microseconds=1))


def test_sign_and_zero() -> None:
    with pytest.raises(InvalidArgumentError, match="negative"):
        parse_duration("-1 s", what="x")
    with pytest.raises(InvalidArgumentError, match="negative"):
        parse_duration(datetime.timedelta(seconds=-1))
    assert parse_duration("-8 h", allow_negative=True) == -28_800_000
    with pytest.raises(InvalidArgumentError, match="zero; it must be positive"):
        parse_duration("0 ms", allow_zero=False)


@pytest.mark.parametrize("value", [10, 1.5, None, True, b"10 s"])
def test_other_types(value: object) -> None:
    with pytest.raises(ArgumentTypeError, match="expected a duration"):
        parse_duration(value, what="size")
