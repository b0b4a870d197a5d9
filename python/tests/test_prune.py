"""The planner's pruning of unread columns never changes a result.

Each pipeline runs on the embedded runtime at parallelism 2 twice, with
``pipeline.prune-unread-columns`` on (the default) and off, and the two results must be
equal; the plan explained with the rule on must show which operator dropped which
columns (``pruned: ...``), or none where every column is read downstream (a sink writing
all columns, collect, map_batches, a join's inputs). The plans themselves are checked
without Python in runtime/plan/prune_test.go.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import flinkgo as fg
from flinkgo import _runtime, udf

N = 400
DATA = pd.DataFrame(
    {
        "ts": pd.to_datetime(np.arange(N, dtype=np.int64) * 25, unit="ms"),
        "k": np.arange(N, dtype=np.int64) % 7,
        "x": np.arange(N, dtype=np.float64) * 0.5,
        "s": [f"s{i}" for i in range(N)],
        "unread": np.arange(N, dtype=np.int64) * 3,
    }
)


@udf("float64", func_type="pandas")
def affine(x: pd.Series) -> pd.Series:
    return x * 2 + 1


@pytest.fixture(scope="module", autouse=True)
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


Build = Callable[[fg.Environment], fg.DataFrame]


def env(prune: bool) -> fg.Environment:
    return fg.Environment(
        parallelism=2, config={"pipeline.prune-unread-columns": "true" if prune else "false"}
    )


def rows(df: pd.DataFrame) -> list[tuple]:
    return sorted(df.astype(object).itertuples(index=False, name=None), key=repr)


def explained(build: Build, tmp_path) -> str:
    e = env(True)
    build(e).write_csv(os.path.join(tmp_path, "explain"))
    return e.explain()


def pruned_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("pruned:")]


def check_same(build: Build, tmp_path, want_pruned: list[str]) -> pd.DataFrame:
    on, off = build(env(True)).to_pandas(), build(env(False)).to_pandas()
    assert len(on) > 0
    assert list(on.columns) == list(off.columns)
    assert rows(on) == rows(off)
    got = [line.split(" (")[0] for line in pruned_lines(explained(build, tmp_path))]
    assert got == [f"pruned: {p}" for p in want_pruned]
    return on


def test_udf_pass_through_then_keyed_aggregation(tmp_path):
    def build(e: fg.Environment) -> fg.DataFrame:
        df = e.from_pandas(DATA).with_column("y", affine(fg.col("x")))
        return df.key_by("k").agg(fg.sum("y").alias("total"), fg.count().alias("n"))

    got = check_same(build, tmp_path, ["ts, x, s, unread"])
    want = DATA.assign(y=DATA.x * 2 + 1).groupby("k").y.sum()
    assert dict(zip(got.k, got.total, strict=True)) == pytest.approx(want.to_dict())


def test_select_before_a_window(tmp_path):
    def build(e: fg.Environment) -> fg.DataFrame:
        df = e.from_pandas(DATA).with_column("x2", fg.col("x") * 2)
        return (
            df.key_by("k")
            .window(fg.tumble("ts", "1 s"))
            .agg(fg.sum("x2").alias("sum"), fg.last("s").alias("last"))
        )

    check_same(build, tmp_path, ["x, unread"])


def test_select_after_a_join(tmp_path):
    def build(e: fg.Environment) -> fg.DataFrame:
        left = e.from_pandas(DATA[["k", "x", "unread"]]).with_column("lx", fg.col("x") + 1)
        right = e.from_pandas(
            pd.DataFrame({"k": np.arange(7, dtype=np.int64), "w": np.arange(7) * 10.0})
        )
        joined = left.join(right, on="k").with_column("z", fg.col("lx") * fg.col("w"))
        return joined.key_by("k").agg(fg.sum("z").alias("total"))

    # Only the selects after the join (join(on=)'s, which drops k_right, then
    # with_column's): a join's inputs keep every column.
    check_same(build, tmp_path, ["x, unread", "x, unread, lx, w"])


def test_filter_drop_duplicates_and_rebalance_to_collect(tmp_path):
    def build(e: fg.Environment) -> fg.DataFrame:
        df = e.from_pandas(DATA).select("k", "x", "s", "unread", (fg.col("x") * 10).alias("x10"))
        df = df.filter(fg.col("x") > 3).drop_duplicates(subset=["k", "x10"]).rebalance()
        return df.select("k", "x10")

    check_same(build, tmp_path, ["s, unread"])


def test_what_reads_whole_rows_keeps_every_column(tmp_path):
    def to_sink(e: fg.Environment) -> fg.DataFrame:
        return e.from_pandas(DATA).with_column("y", affine(fg.col("x"))).filter(fg.col("k") > 2)

    # A sink writes all columns: results with the rule on and off, as files.
    outs = []
    for prune in (True, False):
        e = env(prune)
        path = os.path.join(tmp_path, f"csv-{prune}")
        to_sink(e).write_csv(path)
        e.execute()
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".csv"))
        outs.append(pd.concat([pd.read_csv(f) for f in files], ignore_index=True))
    assert list(outs[0].columns) == ["ts", "k", "x", "s", "unread", "y"]
    assert rows(outs[0]) == rows(outs[1])
    assert pruned_lines(explained(to_sink, tmp_path)) == []

    def mapped(e: fg.Environment) -> fg.DataFrame:
        df = e.from_pandas(DATA).with_column("x2", fg.col("x") * 2)
        return (
            df.map_batches(
                lambda b: b.drop(columns=["s"]),
                schema={
                    "ts": "timestamp[ms]",
                    "k": "int64",
                    "x": "float64",
                    "unread": "int64",
                    "x2": "float64",
                },
            )
            .key_by("k")
            .agg(fg.sum("x2").alias("t"))
        )

    check_same(mapped, tmp_path, [])
