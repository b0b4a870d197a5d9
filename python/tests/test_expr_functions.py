"""is_in, between, when/then/otherwise, timestamp arithmetic and .dt (issue 11, item 7).

The plan messages and the plan-time type errors are checked without a runtime; the
results are checked end to end on the embedded runtime at parallelism 1 and 3 against
pandas, computed here from the same input.
"""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _runtime, col, when
from flinkgo._durations import parse_timedelta
from flinkgo.exceptions import ArgumentTypeError, ExpressionTypeError, InvalidArgumentError
from flinkgo.expr import resolve

N = 97
_rng = np.random.default_rng(11)
_start = pd.Timestamp("2024-03-09 22:00:00").value // 10**6  # ms, naive (UTC)
_ms = _start + np.sort(_rng.integers(0, 3 * 86_400_000, N))
_ms[5] = pd.Timestamp("1969-12-31 23:59:59.999").value // 10**6  # before the epoch


def _base() -> pd.DataFrame:
    x = pd.array(_rng.integers(-5, 15, N), dtype="Int64")
    x[::9] = pd.NA
    s = pd.array([f"s{i % 6}" for i in range(N)], dtype="string")
    s[::8] = pd.NA
    f = pd.array(_rng.normal(5, 4, N), dtype="Float64")
    f[3::10] = pd.NA
    ts = pd.Series(pd.to_datetime(_ms, unit="ms")).astype("datetime64[ms]")
    ts[7::13] = pd.NaT
    return pd.DataFrame(
        {
            "id": np.arange(N, dtype="int64"),
            "x": x,
            "s": s,
            "f": f,
            "ts": ts,
            "ts_s": ts.astype("datetime64[s]"),
            "ts_ns": ts.astype("datetime64[ns]"),
            # UTC+05:30 all year: local hours and days are not UTC's.
            "ts_kol": ts.dt.tz_localize("UTC").dt.tz_convert("Asia/Kolkata"),
            # With DST (2024-03-10 02:00 is skipped there): fields follow the local clock.
            "ts_ny": ts.dt.tz_localize("UTC").dt.tz_convert("America/New_York"),
        }
    )


BASE = _base()


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def env(request, runtime):
    return fg.Environment(parallelism=request.param)


def _values(series: pd.Series) -> list[object]:
    out: list[object] = []
    for v in series.astype(object):
        if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        elif isinstance(v, np.generic):
            out.append(v.item())
        else:
            out.append(v)
    return out


def assert_columns(actual: pd.DataFrame, expected: dict[str, pd.Series]) -> None:
    """Compare column by column, rows matched by id (subtasks give them in any order)."""
    actual = actual.sort_values("id").reset_index(drop=True)
    assert list(actual.columns) == ["id", *expected]
    for name, want in expected.items():
        got, exp = _values(actual[name]), _values(want.reset_index(drop=True))
        assert got == exp, f"column {name}: {list(zip(got, exp, strict=True))[:12]}"


def sql_is_in(x: pd.Series, values: list[object]) -> pd.Series:
    """SQL's IN: null for a null x, true on a match, else null when the list has a null."""
    has_null = any(v is None for v in values)
    matched = x.isin([v for v in values if v is not None])
    out = pd.Series(matched, dtype="boolean")
    out[~matched & has_null] = pd.NA
    out[x.isna()] = pd.NA
    return out


# --- plan messages and plan-time checks -----------------------------------------------------


SCHEMA = pa.Schema.from_pandas(BASE, preserve_index=False)


def test_plan_messages():
    e = resolve(col("x").is_in([1, None]), SCHEMA, op="t").proto
    assert e.call.function == "is_in"
    assert [a.WhichOneof("kind") for a in e.call.args] == ["column", "literal", "literal"]
    assert e.call.args[2].literal.null
    e = resolve(col("ts") - "90 s", SCHEMA, op="t").proto
    assert e.call.function == "subtract"
    assert e.call.args[1].literal.int_value == 90
    assert e.call.args[1].literal.type == "duration[s]"
    e = resolve(col("ts").dt.truncate(datetime.timedelta(milliseconds=1500)), SCHEMA, op="t").proto
    assert (e.call.function, e.call.args[1].literal.type) == ("truncate", "duration[ms]")
    assert e.call.args[1].literal.int_value == 1500
    e = resolve(when(col("x") > 1).then(col("f")), SCHEMA, op="t").proto
    assert e.call.function == "case_when"
    assert len(e.call.args) == 3
    assert e.call.args[2].literal.null and e.call.args[2].literal.type == "null"
    e = resolve(col("x").between(1, 3), SCHEMA, op="t").proto
    assert [a.WhichOneof("kind") for a in e.call.args] == ["column", "literal", "literal"]
    for field in ("year", "month", "day", "hour", "minute"):
        e = resolve(getattr(col("ts").dt, field)(), SCHEMA, op="t").proto
        assert e.call.function == field


@pytest.mark.parametrize(
    ("expr", "arrow_type"),
    [
        (col("ts") + "5 min", pa.timestamp("ms")),
        (col("ts_s") + datetime.timedelta(milliseconds=250), pa.timestamp("ms")),
        (col("ts_ns") - col("ts"), pa.duration("ns")),
        (col("ts_kol") - "1 d", pa.timestamp("ms", tz="Asia/Kolkata")),
        (col("ts").dt.year(), pa.int64()),
        (col("ts_kol").dt.truncate("1 h"), pa.timestamp("ms", tz="Asia/Kolkata")),
        (col("x").is_in([1, 2]), pa.bool_()),
        (col("x").between(0, 2.5), pa.bool_()),
        (when(col("x") > 0).then(col("x")).otherwise(col("f")), pa.float64()),
        (when(col("x") > 0).then(1).when(col("f") > 1).then(col("x")), pa.int64()),
        (when(col("x") > 0).then("a"), pa.string()),
    ],
)
def test_output_types(expr, arrow_type):
    assert expr.output_type(SCHEMA) == arrow_type


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: col("ts") + 5, "a timestamp can only be added to a duration"),
        (lambda: col("ts") + col("ts_s"), "cannot add two timestamps"),
        (lambda: 5 - col("ts"), "cannot subtract a timestamp"),
        (lambda: col("ts_kol") - col("ts"), "different time zones"),
        (lambda: col("ts") * 2, "multiply does not apply to timestamps"),
        (lambda: col("x").dt.hour(), "dt.hour needs a timestamp, got int64"),
        (lambda: col("ts_s").dt.truncate("500 ms"), "not a whole number of the timestamp's unit"),
        (lambda: col("x").is_in(["a"]), "value 'a' (string) does not convert to int64 exactly"),
        (lambda: col("x").is_in([2.5]), "value 2.5 (double) does not convert to int64 exactly"),
        (lambda: when(col("x")).then(1), "the condition x is int64, not bool"),
        (lambda: when(col("x") > 1).then("a").otherwise(1), "string, int64, which have no"),
        (lambda: col("s").between(1, 2), "s.between(1, 2)"),
    ],
)
def test_type_errors_at_plan_time(make, message):
    df_schema = SCHEMA
    with pytest.raises(ExpressionTypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make().output_type(df_schema)


def test_argument_errors():
    with pytest.raises(InvalidArgumentError, match="'5 parsecs' is not a duration"):
        col("ts") + "5 parsecs"
    with pytest.raises(InvalidArgumentError, match="positive"):
        col("ts").dt.truncate("0 s").output_type(SCHEMA)
    with pytest.raises(ArgumentTypeError, match="a list of constants"):
        col("x").is_in("abc")
    with pytest.raises(ArgumentTypeError, match="is_in takes constants"):
        col("x").is_in([col("x")])
    with pytest.raises(ArgumentTypeError, match="already has an otherwise"):
        when(col("x") > 1).then(1).otherwise(2).otherwise(3)
    with pytest.raises(ArgumentTypeError, match="already ends with otherwise"):
        when(col("x") > 1).then(1).otherwise(2).when(col("x") > 2)


def test_parse_timedelta_follows_flinks_syntax():
    td = datetime.timedelta
    assert parse_timedelta("10 s") == td(seconds=10)
    assert parse_timedelta("500ms") == td(milliseconds=500)
    assert parse_timedelta("5 MIN") == td(minutes=5)
    assert parse_timedelta(" 2 d ") == td(days=2)
    assert parse_timedelta("250") == td(milliseconds=250)  # no unit: milliseconds
    assert parse_timedelta("3 us") == td(microseconds=3)
    assert parse_timedelta(td(hours=1)) == td(hours=1)
    assert parse_timedelta("1.5 s") == td(milliseconds=1500)
    assert parse_timedelta("-5 s") == td(seconds=-5)
    for bad in ("", "5 parsecs", "s"):
        with pytest.raises(InvalidArgumentError):
            parse_timedelta(bad)
    with pytest.raises(InvalidArgumentError, match="microseconds"):
        parse_timedelta("1500 ns")
    with pytest.raises(ArgumentTypeError):
        parse_timedelta(5)


# --- end to end against pandas ----------------------------------------------------------------


def test_is_in_between_when(env):
    df = env.from_pandas(BASE)
    out = df.select(
        "id",
        col("x").is_in([1, 3, 7]).alias("in_x"),
        col("x").is_in([1, None]).alias("in_x_null"),
        col("s").is_in(["s1", "s4"]).alias("in_s"),
        col("x").between(0, 5).alias("btw"),
        col("f").between(2, 6.5).alias("btw_f"),
        when(col("x") > 8)
        .then("high")
        .when(col("x") > 2)
        .then("mid")
        .otherwise("low")
        .alias("band"),
        when(col("f") > 5).then(col("x")).alias("x_if"),
        when(col("s") == "s2").then(col("x")).otherwise(col("f")).alias("mixed"),
    ).collect()
    b = BASE
    band = pd.Series(
        np.select(
            [(b["x"] > 8).fillna(False).astype(bool), (b["x"] > 2).fillna(False).astype(bool)],
            ["high", "mid"],
            "low",
        )
    )
    f_gt = (b["f"] > 5).fillna(False).astype(bool)
    x_if = b["x"].where(f_gt, pd.NA)
    s2 = (b["s"] == "s2").fillna(False).astype(bool)
    mixed = b["x"].astype("Float64").where(s2, b["f"])
    assert_columns(
        out.to_pandas(),
        {
            "in_x": sql_is_in(b["x"], [1, 3, 7]),
            "in_x_null": sql_is_in(b["x"], [1, None]),
            "in_s": sql_is_in(b["s"], ["s1", "s4"]),
            "btw": (b["x"] >= 0) & (b["x"] <= 5),
            "btw_f": (b["f"] >= 2) & (b["f"] <= 6.5),
            "band": band,
            "x_if": x_if,
            "mixed": mixed,
        },
    )
    assert out.schema.field("mixed").type == pa.float64()


def test_filter_with_is_in_and_between(env):
    df = env.from_pandas(BASE)
    out = df.filter(col("s").is_in(["s0", "s3"]) & col("x").between(-1, 9)).select("id", "x")
    b = BASE
    keep = (b["s"].isin(["s0", "s3"]) & (b["x"] >= -1) & (b["x"] <= 9)).fillna(False)
    assert_columns(out.to_pandas(), {"x": b["x"][keep.astype(bool)]})


def test_timestamp_arithmetic(env):
    df = env.from_pandas(BASE)
    out = df.select(
        "id",
        (col("ts") + "5 min").alias("plus"),
        (col("ts") - datetime.timedelta(hours=1, milliseconds=5)).alias("minus"),
        ("90 s" + col("ts_s")).alias("radd"),
        (col("ts_ns") - col("ts_s")).alias("diff"),
        (col("ts_kol") + "1 d").alias("kol"),
        (col("ts") > col("ts_s") + "500 ms").alias("cmp"),
    ).collect()
    b = BASE
    assert out.schema.field("plus").type == pa.timestamp("ms")
    assert out.schema.field("diff").type == pa.duration("ns")
    assert_columns(
        out.to_pandas(),
        {
            "plus": b["ts"] + pd.Timedelta(minutes=5),
            "minus": b["ts"] - pd.Timedelta(hours=1, milliseconds=5),
            "radd": b["ts_s"] + pd.Timedelta(seconds=90),
            "diff": b["ts_ns"] - b["ts_s"].astype("datetime64[ns]"),
            "kol": b["ts_kol"] + pd.Timedelta(days=1),
            "cmp": (b["ts"] > b["ts_s"] + pd.Timedelta(milliseconds=500)).where(
                b["ts"].notna(), pd.NA
            ),
        },
    )


@pytest.mark.parametrize("column", ["ts", "ts_s", "ts_ns", "ts_kol", "ts_ny"])
def test_dt_fields(env, column):
    df = env.from_pandas(BASE)
    fields = ["year", "month", "day", "hour", "minute"]
    out = df.select("id", *(getattr(col(column).dt, f)().alias(f) for f in fields)).collect()
    t = BASE[column]
    assert [out.schema.field(f).type for f in fields] == [pa.int64()] * 5
    assert_columns(out.to_pandas(), {f: getattr(t.dt, f).astype("Int64") for f in fields})


@pytest.mark.parametrize(
    ("column", "every", "freq"),
    [
        ("ts", "15 min", "15min"),
        ("ts_s", "1 h", "1h"),
        ("ts_ns", datetime.timedelta(milliseconds=1500), "1500ms"),
        ("ts", "1 d", "1D"),
        ("ts_kol", "1 h", "1h"),
        ("ts_kol", "1 d", "1D"),
    ],
)
def test_dt_truncate(env, column, every, freq):
    df = env.from_pandas(BASE)
    out = df.select("id", col(column).dt.truncate(every).alias("t")).collect()
    assert out.schema.field("t").type == df.schema.field(column).type
    assert_columns(out.to_pandas(), {"t": BASE[column].dt.floor(freq)})
