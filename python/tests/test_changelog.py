"""Changelog streams end to end: row kinds, aggregations over retractions, sinks.

A keyed aggregation with emit="updates" (the mode an unbounded input gets) emits a
retract stream: +I for a new key, -U of the old row and +U of the new one for a key
that changed, -D for a key left without rows. The tests run on the embedded runtime
with rate-limited generated rows and a short update interval, so that updates flow
while rows still arrive, and compare what the changelog ends as with pandas.
"""

from __future__ import annotations

import re

import pandas as pd
import pyarrow.parquet as pq
import pytest

import flinkgo as fg

ROWS = 6000
KEYS = 40
BUCKETS = 7


def updating_env(parallelism: int) -> fg.Environment:
    return fg.Environment(
        parallelism=parallelism,
        config={"pipeline.keyed-aggregate.update-interval": "20 ms"},
    )


def sums_per_key(env: fg.Environment) -> fg.DataFrame:
    rows = env.datagen(rows=ROWS, rows_per_second=20000, schema={"id": "int64"})
    return (
        rows.with_column("k", fg.col("id") % KEYS)
        .key_by("k")
        .agg(
            fg.sum("id").alias("total"),
            fg.min("id").alias("lo"),
            fg.max("id").alias("hi"),
            emit="updates",
        )
    )


def batch_sums() -> pd.DataFrame:
    ids = pd.DataFrame({"id": range(ROWS)})
    ids["k"] = ids["id"] % KEYS
    return (
        ids.groupby("k").agg(total=("id", "sum"), lo=("id", "min"), hi=("id", "max")).reset_index()
    )


@pytest.mark.parametrize("parallelism", [1, 2])
def test_aggregation_over_an_updating_aggregation_equals_the_batch_result(parallelism):
    # Count of keys per sum bucket: every update of a key's sum moves it between
    # buckets (-U from the old bucket, +U into the new one), and the min/max of the
    # second aggregation lose their extreme values to retractions.
    env = updating_env(parallelism)
    buckets = (
        sums_per_key(env)
        .with_column("bucket", fg.col("total") % BUCKETS)
        .key_by("bucket")
        .agg(
            fg.count().alias("keys"),
            fg.sum("total").alias("total"),
            fg.min("lo").alias("lo"),
            fg.max("hi").alias("hi"),
            fg.mean("total").alias("avg"),
            emit="updates",
        )
    )
    got = buckets.to_pandas().sort_values("bucket").reset_index(drop=True)
    sums = batch_sums()
    sums["bucket"] = sums["total"] % BUCKETS
    want = (
        sums.groupby("bucket")
        .agg(
            keys=("k", "count"),
            total=("total", "sum"),
            lo=("lo", "min"),
            hi=("hi", "max"),
            avg=("total", "mean"),
        )
        .reset_index()
    )
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_explain_shows_each_operators_changelog():
    env = updating_env(1)
    sums_per_key(env).with_column("t2", fg.col("total") * 2).print()
    text = env.explain()
    assert "changelog: retract (+I -U +U -D)" in text
    assert re.search(r"changelog: retract, made by #\d+ key_by\(k\)\.agg", text)
    # The source and the select before the aggregation stay append-only.
    assert text.count("changelog:") == 3  # aggregation, select, sink


def test_print_shows_row_kinds_as_flink(capfd):
    env = updating_env(1)
    sums_per_key(env).print()
    env.execute("print changelog")
    lines = capfd.readouterr().out.splitlines()
    kinds = [line[:2] for line in lines]
    assert set(kinds) <= {"+I", "-U", "+U", "-D"}, lines[:5]
    assert all(re.fullmatch(r"[+-][IUD]\[\d+, \d+, \d+, \d+\]", line) for line in lines), lines[:5]
    assert kinds.count("+I") == KEYS
    assert kinds.count("-U") == kinds.count("+U") > 0  # a retract stream pairs them
    # The last row printed of each key is its result.
    last = {}
    for line in lines:
        k, total, lo, hi = map(int, line[3:-1].split(", "))
        last[k] = (total, lo, hi)
    want = batch_sums()
    assert last == {r.k: (r.total, r.lo, r.hi) for r in want.itertuples()}


def test_file_sink_refuses_a_retract_stream_naming_its_operator(tmp_path):
    env = updating_env(1)
    sums_per_key(env).with_column("t2", fg.col("total") * 2).write_parquet(tmp_path / "out")
    with pytest.raises(fg.InvalidPlanError) as refused:
        env.explain()
    with pytest.raises(fg.JobFailedError, match="cannot write the retract stream"):
        env.execute()
    message = str(refused.value)
    assert "cannot write the retract stream made by" in message
    assert "key_by(k).agg(sum(id) AS total" in message
    assert "changelog=True" in message
    assert not (tmp_path / "out").exists()


def test_file_sink_refuses_an_upsert_stream_without_changelog(tmp_path):
    env = updating_env(1)
    sums_per_key(env).write_csv(tmp_path / "out")
    with pytest.raises(fg.InvalidPlanError, match="write it with changelog=True"):
        env.explain()


def test_write_parquet_changelog_writes_an_upsert_stream_with_row_kinds(tmp_path):
    env = updating_env(2)
    # A select that keeps the key may come between: still an upsert stream.
    sums_per_key(env).select("k", "total", "lo", "hi").write_parquet(
        tmp_path / "out", changelog=True
    )
    assert "changelog: upsert(k)" in env.explain()
    env.execute("upserts")
    table = pq.read_table(sorted((tmp_path / "out").glob("part-*"))).to_pandas()
    assert list(table.columns) == ["k", "total", "lo", "hi", "row_kind"]
    assert set(table["row_kind"]) <= {"+I", "+U"}  # an upsert stream: no -U
    assert (table["row_kind"] == "+I").sum() == KEYS
    # Applied by key (the last row of each key wins), it is the batch result.
    final = table.groupby("k").tail(1).drop(columns="row_kind").sort_values("k")
    pd.testing.assert_frame_equal(final.reset_index(drop=True), batch_sums(), check_dtype=False)


def test_write_parquet_changelog_beside_a_second_aggregation(tmp_path):
    # The aggregation feeds a changelog sink and a second aggregation: it stays a
    # retract stream (the second one needs the -U rows) and the sink drops the -U rows,
    # writing the upsert stream by k.
    env = updating_env(2)
    sums = sums_per_key(env)
    sums.write_parquet(tmp_path / "sums", changelog=True)
    (
        sums.with_column("bucket", fg.col("total") % BUCKETS)
        .key_by("bucket")
        .agg(fg.count().alias("keys"), fg.sum("total").alias("total"), emit="updates")
        .write_parquet(tmp_path / "buckets", changelog=True)
    )
    text = env.explain()
    assert re.search(
        r"changelog: upsert\(k\), of the retract stream made by #\d+ key_by\(k\)", text
    )
    assert "changelog: upsert(bucket) (+I +U -D)" in text
    env.execute("changelog beside an aggregation")

    table = pq.read_table(sorted((tmp_path / "sums").glob("part-*"))).to_pandas()
    assert set(table["row_kind"]) <= {"+I", "+U"}  # no -U
    assert (table["row_kind"] == "+U").sum() > 0  # the updates were there to drop
    final = table.groupby("k").tail(1).drop(columns="row_kind").sort_values("k")
    pd.testing.assert_frame_equal(final.reset_index(drop=True), batch_sums(), check_dtype=False)

    buckets = pq.read_table(sorted((tmp_path / "buckets").glob("part-*"))).to_pandas()
    last = buckets.groupby("bucket").tail(1)
    last = last[last["row_kind"] != "-D"].drop(columns="row_kind").sort_values("bucket")
    want = batch_sums().assign(bucket=lambda d: d["total"] % BUCKETS)
    want = want.groupby("bucket").agg(keys=("k", "count"), total=("total", "sum")).reset_index()
    pd.testing.assert_frame_equal(last.reset_index(drop=True), want, check_dtype=False)


def test_changelog_sink_behind_a_filter_says_what_to_do(tmp_path):
    env = updating_env(1)
    sums_per_key(env).filter(fg.col("total") > 10).write_parquet(tmp_path / "out", changelog=True)
    with pytest.raises(fg.InvalidPlanError) as refused:
        env.explain()
    assert "comes between" in str(refused.value)
    assert "apply it before the aggregation" in str(refused.value)


def test_map_batches_over_a_changelog_is_refused():
    env = updating_env(1)
    sums_per_key(env).map_batches(lambda b: b, schema={"k": "int64"}).print()
    refused = "row kinds .* a map_batches function does not see"
    with pytest.raises(fg.InvalidPlanError, match=refused):
        env.explain()


def test_map_batches_that_handles_row_kinds_sees_and_returns_them():
    # The function drops the retractions (-U) and keeps each key's latest row: an
    # upsert view made by hand, which it may do since it declares row_kinds=True.
    def latest(batch: pd.DataFrame) -> pd.DataFrame:
        assert batch.columns[-1] == "_row_kind"
        return batch[batch["_row_kind"] != 1][["k", "total", "_row_kind"]]

    env = updating_env(1)
    out = sums_per_key(env).map_batches(
        latest, schema={"k": "int64", "total": "int64"}, row_kinds=True
    )
    assert out.schema.names == ["k", "total"]
    got = out.to_pandas()
    # Applied as a changelog, +U without -U adds rows: every +I and +U is there.
    assert set(got.groupby("k")["total"].max().items()) == set(
        batch_sums().set_index("k")["total"].items()
    )


def test_map_batches_with_row_kinds_over_an_append_only_input():
    env = fg.Environment(parallelism=1)
    df = env.from_pandas(pd.DataFrame({"x": [1, 2, 3]}))

    def kinds(batch: pd.DataFrame) -> pd.DataFrame:
        assert list(batch["_row_kind"]) == [0, 0, 0]  # all +I
        return batch

    assert df.map_batches(kinds, schema={"x": "int64"}, row_kinds=True).to_pandas()[
        "x"
    ].tolist() == [1, 2, 3]

    def deletes(batch: pd.DataFrame) -> pd.DataFrame:
        return batch.assign(_row_kind=3)

    with pytest.raises(fg.JobFailedError, match="returned a -D row over an append-only input"):
        df.map_batches(deletes, schema={"x": "int64"}, row_kinds=True).to_pandas()


@pytest.mark.parametrize("parallelism", [1, 2])
def test_scalar_udfs_and_filters_keep_each_rows_kind(parallelism):
    @fg.udf("int64", func_type="pandas")
    def doubled(total: pd.Series) -> pd.Series:
        return total * 2

    @fg.udf("bool")
    def even_key(k: int) -> bool:
        return k % 2 == 0

    env = updating_env(parallelism)
    out = (
        sums_per_key(env)
        .with_column("t2", doubled(fg.col("total")))
        .filter(even_key(fg.col("k")))
        .filter(fg.col("lo") >= 0)
        .select("k", "t2")
    )
    got = out.to_pandas().sort_values("k").reset_index(drop=True)
    want = batch_sums()
    want = want[want["k"] % 2 == 0].assign(t2=lambda d: d["total"] * 2)[["k", "t2"]]
    pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)


@pytest.mark.parametrize("how", ["inner", "left"])
def test_join_of_an_updating_aggregation_equals_the_batch_result(how):
    # The join takes back what each -U of a key's sum joined, so applied, its
    # changelog is the join of the final sums (issue 12: joins consume changelogs).
    env = updating_env(2)
    names = pd.DataFrame({"k": range(0, KEYS, 2), "name": [f"n{k}" for k in range(0, KEYS, 2)]})
    joined = sums_per_key(env).join(env.from_pandas(names), on="k", how=how)
    joined.print()
    assert "changelog: retract" in env.explain().split("join on left.k")[1]
    got = joined.to_pandas().sort_values("k", ignore_index=True)
    want = batch_sums().merge(names, on="k", how=how).sort_values("k", ignore_index=True)
    assert got["k"].tolist() == want["k"].tolist()
    assert got["total"].tolist() == want["total"].tolist()
    assert got["lo"].tolist() == want["lo"].tolist()
    assert got["name"].fillna("-").tolist() == want["name"].fillna("-").tolist()
