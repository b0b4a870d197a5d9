"""Built-in aggregates over NULLs, against DuckDB: SQL's rules, which Flink and Arrow share.

An aggregate skips NULLs; over a group with no non-null value every aggregate of a
column is NULL but count(col) and count_distinct(col), which are 0, and count() counts
rows. Groups of only NULLs, of some NULLs and of none, in keyed aggregations (final and
updating, and an aggregation over an updating one, which retracts) and in windows.
"""

from __future__ import annotations

import datetime
import math

import duckdb
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _runtime

T0 = datetime.datetime(2024, 1, 1)


def _table() -> pa.Table:
    """Rows of groups: x (int64), y (float64) and s (string) with NULLs in every pattern."""
    rows = []

    def add(k, second, x, y, s):
        rows.append((k, T0 + datetime.timedelta(seconds=second), x, y, s))

    for i in range(3):  # only NULLs, in every window
        add("none", i * 7, None, None, None)
    add("one", 1, None, None, None)  # a single NULL
    for i, x in enumerate([4, -9, None, None, None, 2]):  # some NULLs; a window of only NULLs
        add("some", i * 5, x, None if x is None else x / 4, None if x is None else f"v{x}")
    for i, x in enumerate([5, 3, 8]):  # no NULL
        add("full", i * 6, x, x * 1.5, f"w{x}")
    add("zero", 2, 3, 0.5, "z")  # sums to zero: 0, not NULL
    add("zero", 3, -3, -0.5, "z")
    k, ts, x, y, s = zip(*rows, strict=True)
    j = [i % 2 for i in range(len(rows))]
    return pa.table(
        {
            "k": pa.array(k, pa.string()),
            "ts": pa.array(ts, pa.timestamp("ms")),
            "x": pa.array(x, pa.int64()),
            "y": pa.array(y, pa.float64()),
            "s": pa.array(s, pa.string()),
            "j": pa.array(j, pa.int64()),
        }
    )


TABLE = _table()


def _rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    def norm(v):
        if isinstance(v, float):
            return None if math.isnan(v) else round(v, 9)
        if isinstance(v, datetime.datetime):
            return v.replace(tzinfo=None)
        return v

    out = [tuple(norm(v) for v in row.values()) for row in table.select(columns).to_pylist()]
    return sorted(out, key=repr)


def _duckdb(sql: str) -> pa.Table:
    """DuckDB's result of `sql` over TABLE (as table t)."""
    t = TABLE  # noqa: F841 (DuckDB reads the local by its name)
    result = duckdb.sql(sql).arrow()
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


KEYED_SQL = """
    SELECT k, sum(x) AS sx, sum(y) AS sy, count(x) AS nx, count(*) AS n, min(x) AS lo,
           max(x) AS hi, min(y) AS ylo, max(y) AS yhi, avg(x) AS mx, avg(y) AS my,
           min(s) AS slo, max(s) AS shi
    FROM t {where} GROUP BY k
"""
KEYED_COLUMNS = ["k", "sx", "sy", "nx", "n", "lo", "hi", "ylo", "yhi", "mx", "my", "slo", "shi"]


def _keyed_aggregates() -> list[fg.Aggregate]:
    return [
        fg.sum("x").alias("sx"),
        fg.sum("y").alias("sy"),
        fg.count("x").alias("nx"),
        fg.count().alias("n"),
        fg.min("x").alias("lo"),
        fg.max("x").alias("hi"),
        fg.min("y").alias("ylo"),
        fg.max("y").alias("yhi"),
        fg.mean("x").alias("mx"),
        fg.mean("y").alias("my"),
        fg.min("s").alias("slo"),
        fg.max("s").alias("shi"),
    ]


@pytest.fixture(scope="module", autouse=True)
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("emit", ["final", "updates"])
@pytest.mark.parametrize("empty", [False, True], ids=["rows", "no-rows"])
def test_keyed_aggregates_over_nulls_equal_duckdb(parallelism, emit, empty):
    env = fg.Environment(parallelism=parallelism)
    df = env.from_arrow(TABLE)
    if empty:
        df = df.filter(fg.col("x") > 1000)
    got = df.key_by("k").agg(*_keyed_aggregates(), emit=emit).collect()
    want = _duckdb(KEYED_SQL.format(where="WHERE x > 1000" if empty else ""))
    assert _rows(got, KEYED_COLUMNS) == _rows(want, KEYED_COLUMNS)
    if not empty:
        assert len(got) == 5


def test_aggregation_over_an_updating_aggregation_over_nulls_equals_duckdb():
    # The first aggregation emits a changelog; the second one accumulates its rows and
    # retracts them as they are updated, NULL sums included.
    env = fg.Environment(parallelism=2)
    per_second = (
        env.from_arrow(TABLE)
        .key_by("k", "j")
        .agg(fg.sum("x").alias("px"), fg.sum("y").alias("py"), emit="updates")
    )
    got = (
        per_second.key_by("k")
        .agg(
            fg.sum("px").alias("sx"),
            fg.sum("py").alias("sy"),
            fg.count("px").alias("nx"),
            fg.min("px").alias("lo"),
            fg.mean("py").alias("my"),
        )
        .collect()
    )
    want = _duckdb(
        """
        WITH per AS (
            SELECT k, j, sum(x) AS px, sum(y) AS py FROM t GROUP BY k, j
        )
        SELECT k, sum(px) AS sx, sum(py) AS sy, count(px) AS nx, min(px) AS lo, avg(py) AS my
        FROM per GROUP BY k
        """
    )
    columns = ["k", "sx", "sy", "nx", "lo", "my"]
    assert _rows(got, columns) == _rows(want, columns)


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "non-keyed"])
def test_window_aggregates_over_nulls_equal_duckdb(keyed):
    env = fg.Environment(parallelism=2 if keyed else 1)
    df = env.from_arrow(TABLE)
    windowed = (
        df.key_by("k").window(fg.tumble("ts", "10 s"))
        if keyed
        else df.window(fg.tumble("ts", "10 s"))
    )
    got = windowed.agg(
        *_keyed_aggregates(),
        fg.first("x").alias("fx"),
        fg.last("y").alias("ly"),
        fg.count_distinct("s").alias("ds"),
    ).collect()
    keys = "k, " if keyed else ""
    want = _duckdb(
        f"""
        SELECT {keys} time_bucket(INTERVAL 10 SECOND, ts) AS window_start,
               sum(x) AS sx, sum(y) AS sy, count(x) AS nx, count(*) AS n, min(x) AS lo,
               max(x) AS hi, min(y) AS ylo, max(y) AS yhi, avg(x) AS mx, avg(y) AS my,
               min(s) AS slo, max(s) AS shi,
               arg_min(x, ts) FILTER (WHERE x IS NOT NULL) AS fx,
               arg_max(y, ts) FILTER (WHERE y IS NOT NULL) AS ly,
               count(DISTINCT s) AS ds
        FROM t GROUP BY {keys} window_start
        """
    )
    columns = [*KEYED_COLUMNS[(0 if keyed else 1) :], "fx", "ly", "ds"]
    columns.insert(1 if keyed else 0, "window_start")
    assert _rows(got, columns) == _rows(want, columns)
    if keyed:  # a window of only NULLs is there, with NULL sums
        assert any(r["k"] == "some" and r["sx"] is None for r in got.to_pylist())
