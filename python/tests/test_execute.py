"""End to end: pipelines run on the real runtime, results compared with pandas.

Every test runs on the embedded local runtime (one per process, built from this
checkout when needed), at parallelism 1 and 3. Rows of several subtasks come in no
order, so rows are compared sorted. Nothing is skipped: if the runtime cannot be built
or started, every test here fails with the reason.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import warnings

import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq
import pytest
from _polling import within

import flinkgo as fg
from flinkgo import _runtime, udf

PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3

N = 60
BASE = pd.DataFrame(
    {
        "k": [f"k{i % 4}" for i in range(N)],
        "x": np.arange(N, dtype="int64") - 20,
        "y": [i * 0.5 if i % 7 else None for i in range(N)],
        "s": [f"w{i}" for i in range(N)],
    }
)


# --- UDFs of every kind --------------------------------------------------------------------------


@udf("int64")
def plus_one(x):
    return None if x is None else x + 1


@udf("float64", func_type="pandas", batch_size=7)
def half(y: pd.Series) -> pd.Series:
    return y / 2


@udf("string", func_type="arrow")
def upper(s: pa.Array) -> pa.Array:
    return pc.utf8_upper(s).cast(pa.string())  # from_pandas may give large_string


@udf("string", concurrency=4)
async def tag(k):
    await asyncio.sleep(0.001)
    return f"<{k}>"


@udf("int64", concurrency=2)
def times_three(x):
    return x * 3


@udf("bool", func_type="pandas")
def is_even(x: pd.Series) -> pd.Series:
    return x % 2 == 0


@udf("int64")
def explode_on_seven(x):
    if x == 7:
        raise ValueError(f"seven is not allowed (x={x})")
    return x


# --- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def runtime():
    # The process's runtime: started once, replaced if a test crashed it.
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.fixture
def fresh_runtime():
    # A new runtime, without idle workers of earlier jobs (docs/semantics.md#worker-reuse):
    # every child it has once a job was canceled is a worker the cancel left behind.
    _runtime.stop_local_runtime()
    return _runtime.local_runtime()


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def p(request, runtime):
    return request.param


@pytest.fixture
def env(p):
    return fg.Environment(parallelism=p)


def rows(df: pd.DataFrame) -> list[tuple]:
    """The rows as tuples of Python values, missing values as None, sorted."""
    out = []
    for row in df.astype(object).itertuples(index=False, name=None):
        values = []
        for v in row:
            if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                values.append(None)
            elif isinstance(v, (float, np.floating)):
                values.append(round(float(v), 9))
            elif isinstance(v, np.generic):
                values.append(v.item())
            else:
                values.append(v)
        out.append(tuple(values))
    return sorted(out, key=repr)


def assert_same(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(actual.columns) == list(expected.columns)
    assert rows(actual) == rows(expected)


def assert_schema(table: pa.Table, df: fg.DataFrame) -> None:
    assert table.schema.names == df.schema.names
    assert [f.type for f in table.schema] == [f.type for f in df.schema]


def nullable(df: pd.DataFrame) -> pd.DataFrame:
    """BASE with pandas' nullable dtypes: NA propagates as Arrow's null does."""
    return df.convert_dtypes()


# --- sources -------------------------------------------------------------------------------------


def test_from_pandas(env):
    df = env.from_pandas(BASE)
    table = df.collect()
    assert isinstance(table, pa.Table)
    assert_schema(table, df)
    assert_same(table.to_pandas(), BASE)


def test_from_arrow_batches(env):
    table = pa.Table.from_pandas(BASE, preserve_index=False)
    df = env.from_arrow(table.to_batches(max_chunksize=7))
    assert_same(df.to_pandas(), BASE)


def test_read_csv_glob(env, tmp_path):
    BASE.iloc[:25].to_csv(tmp_path / "a.csv", index=False)
    BASE.iloc[25:].to_csv(tmp_path / "b.csv", index=False)
    df = env.read_csv(tmp_path / "*.csv")
    assert_same(df.to_pandas(), BASE)


def test_read_csv_without_header_and_delimiter(env, tmp_path):
    BASE[["k", "x"]].to_csv(tmp_path / "a.tsv", index=False, header=False, sep="\t")
    df = env.read_csv(
        tmp_path / "a.tsv", has_header=False, delimiter="\t", schema={"k": "string", "x": "int64"}
    )
    assert_same(df.to_pandas(), BASE[["k", "x"]])


def test_read_jsonl(env, tmp_path):
    for name, part in (("a", BASE.iloc[:30]), ("b", BASE.iloc[30:])):
        part.to_json(tmp_path / f"{name}.jsonl", orient="records", lines=True)
    df = env.read_jsonl(tmp_path / "*.jsonl")
    assert_same(df.to_pandas(), BASE)


def test_read_parquet(env, tmp_path):
    BASE.iloc[:40].to_parquet(tmp_path / "part-0.parquet")
    BASE.iloc[40:].to_parquet(tmp_path / "part-1.parquet")
    df = env.read_parquet(tmp_path / "part-*.parquet")
    assert_same(df.to_pandas(), BASE)


def test_datagen_bounded(env):
    schema = {"id": "int64", "v": "float64", "name": "string", "ok": "bool"}
    df = env.datagen(rows=500, schema=schema, seed=7)
    first = df.collect()
    assert first.num_rows == 500
    assert_schema(first, df)
    generated = first.to_pandas()
    # The same seed generates the same rows, so a pipeline over them can be checked.
    out = df.with_column("w", fg.col("id") % 10).filter(fg.col("ok")).to_pandas()
    expected = generated.assign(w=generated["id"] % 10)[generated["ok"]]
    assert_same(out, expected)


def test_datagen_every_documented_type(env):
    schema = {
        "b": "binary",
        "h": "float16",
        "t": "time64[us]",
        "d": "duration[ms]",
        "dec": pa.decimal128(10, 2),
    }
    table = env.datagen(rows=50, schema=schema, seed=1).collect()
    assert table.num_rows == 50
    assert table.schema.types == [
        pa.binary(),
        pa.float16(),
        pa.time64("us"),
        pa.duration("ms"),
        pa.decimal128(10, 2),
    ]


def test_read_csv_schema_matches_header_by_name(env, tmp_path):
    BASE.to_csv(tmp_path / "a.csv", index=False)
    df = env.read_csv(tmp_path / "a.csv", schema={"s": "string", "x": "int64"})
    assert_same(df.to_pandas(), BASE[["s", "x"]])


# --- transformations and expressions -------------------------------------------------------------


@udf("int64")
def name_len(s):
    return len(s)


def test_a_str_argument_of_a_udf_names_a_column(env):
    # As PySpark users write it: name_len("s") applies the UDF to the column s, never
    # to the string "s" (which would give 1 in every row).
    out = env.from_pandas(BASE).select("s", name_len("s").alias("n")).to_pandas()
    assert_same(out, pd.DataFrame({"s": BASE.s, "n": BASE.s.str.len()}))


def test_division_by_zero_follows_pandas(env):
    data = pd.DataFrame({"a": [1, 0, -1, 4], "b": [0, 0, 0, 2], "f": [1.5, 0.0, -2.0, 1.0]})
    out = (
        env.from_pandas(data)
        .select(
            (fg.col("a") / fg.col("b")).alias("ints"),
            (fg.col("f") / 0).alias("floats"),
        )
        .to_pandas()
    )
    expected = pd.DataFrame({"ints": data.a / data.b, "floats": data.f / 0})
    assert_same(out, expected)


def test_select_expressions(env):
    df = env.from_pandas(BASE)
    c = fg.col
    out = df.select(
        "k",
        (c("x") + 1).alias("add"),
        (c("x") - c("y")).alias("sub"),
        (c("x") * 2).alias("mul"),
        (c("x") / 4).alias("div"),
        (c("x") % 3).alias("mod"),
        (-c("x")).alias("neg"),
        fg.lit(5).alias("five"),
        fg.lit("z").alias("zed"),
        c("x").cast("float64").alias("xf"),
        c("x").cast("int32").alias("x32"),
        (c("x") > 0).alias("gt"),
        (c("x") >= 3).alias("ge"),
        (c("x") < 3).alias("lt"),
        (c("x") <= 3).alias("le"),
        (c("x") == 3).alias("eq"),
        (c("x") != 3).alias("ne"),
        ((c("x") > 0) & (c("y") > 5)).alias("and_"),
        ((c("x") > 0) | (c("y") > 5)).alias("or_"),
        (~(c("y") > 5)).alias("not_"),
        c("y").is_null().alias("ynull"),
        c("y").is_not_null().alias("ynotnull"),
    )
    result = out.collect()
    assert_schema(result, out)
    b = nullable(BASE)
    expected = pd.DataFrame(
        {
            "k": b["k"],
            "add": b["x"] + 1,
            "sub": b["x"] - b["y"],
            "mul": b["x"] * 2,
            "div": b["x"] / 4,
            "mod": b["x"] % 3,
            "neg": -b["x"],
            "five": 5,
            "zed": "z",
            "xf": b["x"].astype("float64"),
            "x32": b["x"].astype("int32"),
            "gt": b["x"] > 0,
            "ge": b["x"] >= 3,
            "lt": b["x"] < 3,
            "le": b["x"] <= 3,
            "eq": b["x"] == 3,
            "ne": b["x"] != 3,
            "and_": (b["x"] > 0) & (b["y"] > 5),
            "or_": (b["x"] > 0) | (b["y"] > 5),
            "not_": ~(b["y"] > 5),
            "ynull": b["y"].isna(),
            "ynotnull": b["y"].notna(),
        }
    )
    assert_same(result.to_pandas(), expected)


def test_with_column_and_with_columns(env):
    df = env.from_pandas(BASE)
    out = df.with_column("x", fg.col("x") * 10).with_column("z", fg.col("x") + 1)
    out = out.with_columns(k=fg.col("s"), t=fg.col("x") - 1)
    b = BASE.copy()
    b["x"] = b["x"] * 10
    b["z"] = b["x"] + 1
    b["k"], b["t"] = b["s"], b["x"] - 1
    assert_same(out.to_pandas(), b[["k", "x", "y", "s", "z", "t"]])


def test_filter(env):
    c = fg.col
    df = env.from_pandas(BASE)
    out = env.from_pandas(BASE).with_column("pos", c("x") > 0).filter("pos")
    kept = df.filter((c("x") > -5) & ((c("y") < 20) | c("y").is_null()))
    b = nullable(BASE)
    mask = ((b["x"] > -5) & ((b["y"] < 20) | b["y"].isna())).fillna(False)
    assert_same(kept.to_pandas(), BASE[mask.to_numpy(dtype=bool)])
    assert_same(out.to_pandas(), BASE.assign(pos=BASE["x"] > 0)[BASE["x"] > 0])
    # A null predicate drops the row.
    assert_same(df.filter(c("y") > 3).to_pandas(), BASE[BASE["y"] > 3])


# --- Python UDFs ---------------------------------------------------------------------------------


def test_udfs_of_every_kind(env):
    c = fg.col
    df = env.from_pandas(BASE)
    out = df.select(
        "x",
        plus_one(c("x")),
        half(c("y")),
        upper(c("s")),
        tag(c("k")),
        times_three(c("x")),
        plus_one(times_three(c("x"))).alias("nested"),
        (plus_one(c("x")) * 2).alias("mixed"),
    )
    result = out.collect()
    assert_schema(result, out)
    expected = pd.DataFrame(
        {
            "x": BASE["x"],
            "plus_one": BASE["x"] + 1,
            "half": BASE["y"] / 2,
            "upper": BASE["s"].str.upper(),
            "tag": "<" + BASE["k"] + ">",
            "times_three": BASE["x"] * 3,
            "nested": BASE["x"] * 3 + 1,
            "mixed": (BASE["x"] + 1) * 2,
        }
    )
    assert_same(result.to_pandas(), expected)


def test_udf_in_filter_and_with_column(env):
    df = env.from_pandas(BASE)
    out = df.filter(is_even(fg.col("x"))).with_column("t", tag(fg.col("s")))
    b = BASE[BASE["x"] % 2 == 0]
    assert_same(out.to_pandas(), b.assign(t="<" + b["s"] + ">"))


def test_map_batches(env):
    def double_evens(batch: pd.DataFrame) -> pd.DataFrame:
        evens = batch[batch["x"] % 2 == 0]
        return evens.loc[evens.index.repeat(2), ["x", "s"]].assign(x2=lambda d: d["x"] * 2)

    df = env.from_pandas(BASE).map_batches(
        double_evens, schema={"x": "int64", "s": "string", "x2": "int64"}
    )
    assert_same(df.to_pandas(), double_evens(BASE))


def test_map_batches_returning_concatenated_frames(env):
    def twice(batch: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([batch, batch])[["x", "s"]]

    df = env.from_pandas(BASE).map_batches(twice, schema={"x": "int64", "s": "string"})
    assert_same(df.to_pandas(), twice(BASE))


# --- keyed aggregation and union -----------------------------------------------------------------


def test_keyed_aggregate(env):
    df = env.from_pandas(BASE)
    out = df.key_by("k").agg(
        fg.sum("x"),
        fg.count(),
        fg.count("y").alias("y_count"),
        fg.min("x").alias("x_min"),
        fg.max("x").alias("x_max"),
        fg.mean("y"),
        fg.sum("y").alias("y_sum"),
        fg.min("s").alias("s_min"),
        fg.max("s").alias("s_max"),
    )
    result = out.collect()
    assert_schema(result, out)
    g = BASE.groupby("k")
    expected = pd.DataFrame(
        {
            "x": g["x"].sum(),
            "count": g.size(),
            "y_count": g["y"].count(),
            "x_min": g["x"].min(),
            "x_max": g["x"].max(),
            "y": g["y"].mean(),
            "y_sum": g["y"].sum(),
            "s_min": g["s"].min(),
            "s_max": g["s"].max(),
        }
    ).reset_index()
    assert_same(result.to_pandas(), expected)


def test_keyed_aggregate_two_keys_after_udf(env):
    df = env.from_pandas(BASE).with_column("even", is_even(fg.col("x")))
    out = df.key_by("k", "even").agg(fg.sum("x"), fg.mean("x").alias("avg"))
    b = BASE.assign(even=BASE["x"] % 2 == 0)
    g = b.groupby(["k", "even"])
    expected = pd.DataFrame({"x": g["x"].sum(), "avg": g["x"].mean()}).reset_index()
    assert_same(out.to_pandas(), expected)


def test_keyed_aggregate_null_keys_form_a_group(env):
    data = pd.DataFrame({"k": ["a", None, "a", None, "b"], "x": [1, 2, 3, 4, 5]})
    out = env.from_pandas(data).key_by("k").agg(fg.sum("x"), fg.count())
    g = data.groupby("k", dropna=False)  # as Flink: null is a key like any other
    assert_same(out.to_pandas(), pd.DataFrame({"x": g["x"].sum(), "count": g.size()}).reset_index())


def test_keyed_aggregate_min_max_of_timestamps(env):
    data = pd.DataFrame(
        {
            "k": [1, 1, 2, 2, 2],
            "ts": pd.to_datetime([1_700_000_000_000, 1_600_000_000_000, 5, -500, 99], unit="ms"),
        }
    )
    out = env.from_pandas(data).key_by("k").agg(fg.min("ts"), fg.max("ts").alias("last"))
    g = data.groupby("k")
    want = pd.DataFrame({"ts": g["ts"].min(), "last": g["ts"].max()}).reset_index()
    assert_same(out.to_pandas(), want)


def test_keyed_aggregate_refuses_what_it_would_get_wrong(env):
    data = pd.DataFrame({"k": [1, 1], "u": pd.Series([1, 2**63 + 5], dtype="uint64")})
    with pytest.raises(fg.JobFailedError, match=r"sum\(u\): columns of type uint64 are not"):
        env.from_pandas(data).key_by("k").agg(fg.sum("u")).to_pandas()


def test_keyed_aggregate_on_a_dictionary_key(env):
    table = pa.Table.from_pandas(BASE, preserve_index=False)
    keys = pa.array(BASE["k"], pa.string()).dictionary_encode()
    out = env.from_arrow(table.set_column(0, "k", keys)).key_by("k").agg(fg.sum("x"))
    assert_same(out.to_pandas(), BASE.groupby("k")["x"].sum().reset_index())


def test_keyed_aggregate_on_a_large_string_dictionary_key(env):
    table = pa.Table.from_pandas(BASE, preserve_index=False)
    keys = pa.array(BASE["k"], pa.large_string()).dictionary_encode()
    out = env.from_arrow(table.set_column(0, "k", keys)).key_by("k").agg(fg.sum("x"))
    assert_same(out.to_pandas(), BASE.groupby("k")["x"].sum().reset_index())


def test_drop_duplicates(env):
    twice = pd.concat([BASE, BASE.iloc[::-1]], ignore_index=True)
    df = env.from_pandas(twice)
    # Every column: the distinct rows (null equals null, as Spark's dropDuplicates).
    assert_same(df.drop_duplicates().to_pandas(), BASE)
    # A subset: one row per key, which is one of the key's rows.
    firsts = df.drop_duplicates(subset=["k"]).to_pandas()
    assert sorted(firsts["k"]) == sorted(BASE["k"].unique())
    # "s" is unique per input row: the kept rows are input rows, whole.
    assert_same(firsts, BASE[BASE["s"].isin(firsts["s"])])


def test_union(env):
    df = env.from_pandas(BASE)
    a = df.filter(fg.col("x") < 0)
    b = df.filter(fg.col("x") >= 30)
    c = env.from_pandas(BASE.iloc[:5])
    expected = pd.concat([BASE[BASE["x"] < 0], BASE[BASE["x"] >= 30], BASE.iloc[:5]])
    assert_same(a.union(b, c).to_pandas(), expected)


def test_string_and_large_string_are_one_type(env, tmp_path):
    # pandas 3 gives large_string (from_pandas, pandas-written Parquet); CSV gives
    # string. Sources normalise both to string, so a plain union works.
    frame = pd.DataFrame({"k": ["a", "b", None], "n": [1, 2, 3]})
    from_pandas = env.from_pandas(frame)
    frame.to_csv(tmp_path / "f.csv", index=False)
    from_csv = env.read_csv(tmp_path / "f.csv", schema={"k": "string", "n": "int64"})
    pq.write_table(
        pa.table({"k": pa.array(["c", None], pa.large_string()), "n": [4, 5]}),
        tmp_path / "f.parquet",
    )
    from_parquet = env.read_parquet(tmp_path / "f.parquet")
    large = pa.table({"k": pa.array(["d"], pa.large_string()), "n": [6]})
    from_arrow = env.from_arrow(large)
    for df in (from_pandas, from_csv, from_parquet, from_arrow):
        assert df.schema.field("k").type == pa.string()
    out = from_pandas.union(from_csv, from_parquet, from_arrow).collect()
    assert out.schema.field("k").type == pa.string()
    assert sorted(out.column("n").to_pylist()) == [1, 1, 2, 2, 3, 3, 4, 5, 6]


# --- partitioning, uid, parallelism --------------------------------------------------------------


@pytest.mark.parametrize(
    "partition", ["forward", "rebalance", "rescale", "shuffle", "broadcast", "global_"]
)
def test_partitioning(env, p, partition):
    df = getattr(env.from_pandas(BASE), partition)()
    out = df.with_column("x1", fg.col("x") + 1)
    expected = BASE.assign(x1=BASE["x"] + 1)
    if partition == "broadcast":  # every subtask of the next step gets every row
        expected = pd.concat([expected] * p)
    assert_same(out.to_pandas(), expected)


def test_partitioning_into_other_parallelism(env, p):
    df = env.from_pandas(BASE).rescale().filter(fg.col("x") > 0).set_parallelism(2)
    out = df.rebalance().with_column("h", half(fg.col("y")))
    b = BASE[BASE["x"] > 0]
    assert_same(out.to_pandas(), b.assign(h=b["y"] / 2))


def test_uid_and_set_parallelism(env, p, tmp_path):
    src = env.from_pandas(BASE).uid("numbers")
    out = src.filter(fg.col("x") > 0).uid("positive").set_parallelism(2)
    out.write_parquet(tmp_path / "out").uid("out").set_parallelism(1)
    result = env.execute("uids")
    assert result.state == "FINISHED"
    assert [state for state, _ in result.states] == ["CREATED", "RUNNING", "FINISHED"]
    assert [at for _, at in result.states] == sorted(at for _, at in result.states)
    by_uid = {m.uid: m for m in result.metrics}
    assert by_uid["numbers"].parallelism == p
    assert by_uid["numbers"].rows_out == N
    assert by_uid["positive"].parallelism == 2
    assert by_uid["positive"].rows_out == int((BASE["x"] > 0).sum())
    assert by_uid["out"].parallelism == 1
    assert by_uid["out"].rows_in == int((BASE["x"] > 0).sum())
    assert_same(pq.read_table(tmp_path / "out").to_pandas(), BASE[BASE["x"] > 0])


# --- sinks ---------------------------------------------------------------------------------------


PRINTED = re.compile(r"^(?:(\d+)> )?\+I\[(.*)\]$")


def test_print(env, p, capsys):
    env.from_pandas(BASE[["k", "x"]]).print()
    env.execute("print")
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    matches = [PRINTED.match(line) for line in lines]
    assert all(matches), lines
    assert sorted(m.group(2) for m in matches) == sorted(
        f"{k}, {x}" for k, x in BASE[["k", "x"]].values
    )
    subtasks = {m.group(1) for m in matches}
    if p == 1:
        assert subtasks == {None}
    else:  # Flink's "<subtask+1>> " prefix
        assert subtasks <= {str(i) for i in range(1, p + 1)}


def test_file_sinks(env, tmp_path):
    df = env.from_pandas(BASE).with_column("x2", fg.col("x") * 2)
    df.write_csv(tmp_path / "csv")
    df.write_jsonl(tmp_path / "jsonl")
    df.write_parquet(tmp_path / "parquet")
    result = env.execute("files")
    assert result.state == "FINISHED"
    expected = BASE.assign(x2=BASE["x"] * 2)
    schema = df.schema

    def parts(kind):
        files = sorted((tmp_path / kind).iterdir())
        assert files, f"no part file in {tmp_path / kind}"
        assert not [f.name for f in files if f.name.startswith(".")], "in-progress files left"
        return [f for f in files if f.stat().st_size > 0]

    csv = pa.concat_tables(
        pa_csv.read_csv(
            f, convert_options=pa_csv.ConvertOptions(column_types={f.name: f.type for f in schema})
        )
        for f in parts("csv")
    )
    assert_same(csv.to_pandas(), expected)
    jsonl = pa.concat_tables(
        pa_json.read_json(f, parse_options=pa_json.ParseOptions(explicit_schema=schema))
        for f in parts("jsonl")
    )
    assert_same(jsonl.to_pandas(), expected)
    for f in parts("jsonl"):  # one JSON object per line
        for line in f.read_text().splitlines():
            assert isinstance(json.loads(line), dict)
    assert_same(pq.read_table(tmp_path / "parquet").to_pandas(), expected)


def test_write_csv_of_a_dictionary_column(env, tmp_path):
    keys = pa.array(BASE["k"], pa.string()).dictionary_encode()
    env.from_arrow(pa.table({"k": keys, "x": BASE["x"]})).write_csv(tmp_path / "out")
    result = env.execute("dictionary csv")
    files = {f.name: f.stat().st_size for f in (tmp_path / "out").iterdir()}
    parts = [tmp_path / "out" / n for n, size in files.items() if size and not n.startswith(".")]
    assert parts, f"no part file with rows: {files}; {result.metrics}"
    back = pd.concat(pd.read_csv(f) for f in parts)
    assert_same(back, BASE[["k", "x"]])


def test_collect_runs_only_its_own_steps(env, tmp_path, capsys):
    df = env.from_pandas(BASE)
    df.print()
    df.write_parquet(tmp_path / "not-written")
    assert_same(df.filter(fg.col("x") > 0).to_pandas(), BASE[BASE["x"] > 0])
    assert not (tmp_path / "not-written").exists()
    assert capsys.readouterr().out == ""
    # The Environment's sinks are still there and run with execute.
    env.execute()
    assert (tmp_path / "not-written").exists()
    assert capsys.readouterr().out.count("+I[") == N


def test_collect_empty_result_has_the_schema(env):
    df = env.from_pandas(BASE).filter(fg.col("x") > 1000)
    table = df.collect()
    assert table.num_rows == 0
    assert table.schema.names == df.schema.names
    assert list(df.to_pandas().columns) == df.columns


# --- execute, explain, endpoints -----------------------------------------------------------------


def test_execute_result_and_clears_sinks(env, p, tmp_path):
    df = env.from_pandas(BASE)
    df.filter(fg.col("x") > 0).write_parquet(tmp_path / "a")
    explain = env.explain("first")
    assert "sink" in explain and "from_pandas" in explain
    result = env.execute("first")
    assert result.name == "first"
    assert result.job_id
    assert result.elapsed > 0
    assert result.explain == explain
    assert result.operator("sink-3").rows_in == int((BASE["x"] > 0).sum())
    with pytest.raises(ValueError, match="no sink"):
        env.execute("again")
    df.write_parquet(tmp_path / "b")
    env.execute("second")
    assert pq.read_table(tmp_path / "b").num_rows == N


@udf("int64")
def half_int(x):
    return x / 2


@udf("int64")
def exact_int(x):
    return x * 2.0


@udf("float64", func_type="pandas")
def as_text(x: pd.Series) -> pd.Series:
    return x.astype(str)


@udf("float64", func_type="pandas")
def int_series(x: pd.Series) -> pd.Series:
    return x * 2


def test_udf_results_must_fit_the_declared_type_exactly():
    # A lossy conversion is an error naming the UDF, the row and the value, never a
    # silently truncated or parsed result.
    env = fg.Environment(parallelism=1)
    data = pd.DataFrame({"x": [4, 5, 6]})
    df = env.from_pandas(data)
    with pytest.raises(fg.JobFailedError) as info:
        df.select(half_int(fg.col("x")).alias("h")).to_pandas()
    assert "udf 'half_int' returned 2.5 at row 1 of the batch" in str(info.value)
    assert "int64" in str(info.value)
    with pytest.raises(fg.JobFailedError) as info:
        df.select(as_text(fg.col("x")).alias("t")).to_pandas()
    # (pyarrow < 19 refuses the strings itself, in its own words.)
    assert "udf 'as_text' returned" in str(info.value) and "'4'" in str(info.value)
    # What loses nothing passes: 8.0 into int64, integers into float64.
    out = df.select(exact_int(fg.col("x")).alias("e"), int_series(fg.col("x")).alias("f"))
    assert_same(out.to_pandas(), pd.DataFrame({"e": [8, 10, 12], "f": [8.0, 10.0, 12.0]}))


def test_explain_invalid_plan():
    env = fg.Environment(parallelism=2, config={"pipeline.forward-mismatch": "fail"})
    env.from_pandas(BASE).forward().filter(fg.col("x") > 0).set_parallelism(3).print()
    with pytest.raises(fg.InvalidPlanError, match="forward"):
        env.explain()
    with pytest.raises(fg.JobFailedError) as info:
        env.execute()
    assert info.value.kind == "PLAN"


def test_requests_over_the_limits_are_refused_with_their_limit():
    # A job name over 4 KiB or a select of more than 10 000 columns is refused before
    # planning (INVALID_ARGUMENT), saying which limit, never quoting the content.
    env = fg.Environment(parallelism=1)
    env.from_pandas(BASE).print()
    with pytest.raises(fg.JobFailedError, match="names may be at most 4096 bytes") as info:
        env.execute("n" * 5000)
    # (The client's own message names the job; the server's part does not quote it.)
    assert info.value.kind == "PLAN" and "nnnn" not in str(info.value).split("failed: ", 1)[1]
    wide = fg.Environment(parallelism=1)
    wide.from_pandas(BASE).select(*[fg.col("x").alias(f"c{i}") for i in range(10_001)]).print()
    with pytest.raises(fg.InvalidPlanError, match="10001 columns; a node may have at most 10000"):
        wide.explain()


def test_endpoint_argument_and_env_variable(runtime, monkeypatch):
    env = fg.Environment(endpoint=runtime.endpoint)
    assert env.endpoint == runtime.endpoint
    assert_same(env.from_pandas(BASE).to_pandas(), BASE)
    monkeypatch.setenv("FLINKGO_ENDPOINT", runtime.endpoint)
    env = fg.Environment()
    assert env.endpoint == runtime.endpoint
    assert_same(env.from_pandas(BASE).to_pandas(), BASE)


def test_unreachable_endpoint(tmp_path):
    env = fg.Environment(endpoint=f"unix://{tmp_path}/nobody.sock")
    env.from_pandas(BASE).print()
    with pytest.raises(fg.RuntimeConnectionError, match="nobody.sock"):
        env.execute()


def test_one_runtime_per_process(runtime):
    env = fg.Environment()
    env.from_pandas(BASE).to_pandas()
    assert _runtime.local_runtime() is runtime
    assert runtime.alive()


# --- errors --------------------------------------------------------------------------------------


def test_udf_error_fails_the_job_with_the_traceback(env):
    df = env.from_pandas(BASE).with_column("x", explode_on_seven(fg.col("x")))
    with pytest.raises(fg.JobFailedError) as info:
        df.collect()
    e = info.value
    assert e.udf == "explode_on_seven"
    assert e.kind == "UDF"
    assert "seven is not allowed (x=7)" in e.traceback
    assert "test_execute.py" in e.traceback
    assert 'raise ValueError(f"seven is not allowed (x={x})")' in e.traceback
    assert e.traceback.strip() in str(e)
    assert "explode_on_seven" in str(e)
    # The failing row and its arguments.
    assert re.search(r"\(at row \d+ of the batch, called with \(7,\)\)", str(e)), str(e)


@udf("int64")
async def wait_on_seven(x):
    if x == 7:
        # What aiohttp and asyncio.wait_for raise: the user's TimeoutError, long
        # before the runtime's own limit on one call (3 min).
        await asyncio.wait_for(asyncio.sleep(60), 0.01)
    return x


@udf("int64")
async def async_explode_on_seven(x):
    await asyncio.sleep(0)
    if x == 7:
        raise ValueError(f"seven is not allowed (x={x})")
    return x


def test_async_udf_error_is_reported_as_a_sync_one():
    env = fg.Environment(parallelism=1)
    df = env.from_pandas(BASE).with_column("x", async_explode_on_seven(fg.col("x")))
    with pytest.raises(fg.JobFailedError) as info:
        df.collect()
    e = info.value
    assert (e.udf, e.kind) == ("async_explode_on_seven", "UDF")
    assert "seven is not allowed (x=7)" in e.traceback
    assert 'raise ValueError(f"seven is not allowed (x={x})")' in e.traceback
    assert re.search(r"\(at row \d+ of the batch, called with \(7,\)\)", str(e)), str(e)
    # The user's frames only: no frame of asyncio's machinery around the call.
    assert "asyncio" not in e.traceback, e.traceback


def test_async_udf_raising_timeout_error_keeps_its_own_report():
    env = fg.Environment(parallelism=1)
    df = env.from_pandas(BASE).with_column("x", wait_on_seven(fg.col("x")))
    with pytest.raises(fg.JobFailedError) as info:
        df.collect()
    e = info.value
    assert e.udf == "wait_on_seven"
    assert "did not finish within" not in str(e), str(e)
    assert "TimeoutError" in e.traceback
    assert "await asyncio.wait_for(asyncio.sleep(60), 0.01)" in e.traceback
    assert re.search(r"\(at row \d+ of the batch, called with \(7,\)\)", str(e)), str(e)


@udf("float64", func_type="pandas")
def returns_frame(x: pd.Series) -> pd.DataFrame:
    return pd.DataFrame({"a": x, "b": x})


def test_pandas_udf_returning_a_frame_says_so():
    env = fg.Environment(parallelism=1)
    df = env.from_pandas(BASE).select(returns_frame(fg.col("x")))
    with pytest.raises(fg.JobFailedError) as info:
        df.collect()
    assert "returned a pandas.DataFrame with columns ['a', 'b']" in str(info.value)
    assert "returns a pandas.Series" in str(info.value)


@udf("int64")
def exits(x):
    os._exit(3)


def test_worker_death_fails_the_job(env):
    with pytest.raises(fg.JobFailedError, match="exit status 3") as info:
        env.from_pandas(BASE).select(exits(fg.col("x"))).collect()
    assert info.value.kind == "WORKER"
    assert 'udf "exits"' in str(info.value)


def test_worker_death_names_the_udf_and_operator(env):
    with pytest.raises(fg.JobFailedError) as info:
        env.from_pandas(BASE).select(exits(fg.col("x"))).collect()
    assert (info.value.udf, info.value.operator) == ("exits", "exits")


def test_unknown_column_fails_at_declaration(env):
    df = env.from_pandas(BASE)
    with pytest.raises(fg.ColumnNotFoundError, match="'xx'"):
        df.select(fg.col("xx") + 1)
    with pytest.raises(fg.ColumnNotFoundError, match="'kk'"):
        df.key_by("kk")
    with pytest.raises(fg.ColumnNotFoundError, match="'yy'"):
        df.filter(fg.col("yy") > 0)
    with pytest.raises(fg.ColumnNotFoundError, match="'zz'"):
        df.key_by("k").agg(fg.sum("zz"))


def test_ctrl_c_cancels_the_job(fresh_runtime):
    runtime = fresh_runtime
    env = fg.Environment(parallelism=2)
    endless = env.datagen(schema={"id": "int64"}, rows_per_second=2000)
    endless.filter(fg.col("id") == fg.col("id") + 1).with_column("t", tag(fg.col("id"))).print()
    running = threading.Event()
    running.set()

    def interrupt():
        if running.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(2.0, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            env.execute("endless")
    finally:
        running.clear()
        timer.cancel()
    # The job's workers are gone; the runtime survives and runs the next job.
    assert no_children_left(runtime.pid)
    assert runtime.alive()
    assert_same(fg.Environment().from_pandas(BASE).to_pandas(), BASE)


def no_children_left(pid, timeout=15.0):
    return within(lambda: not psutil.Process(pid).children(recursive=True), timeout)


def test_cancel_by_job_id(fresh_runtime):
    runtime = fresh_runtime
    from flinkgo._client import Client
    from flinkgo._proto import job_pb2, plan_pb2

    env = fg.Environment(parallelism=2)
    endless = env.datagen(schema={"id": "int64"}, rows_per_second=2000)
    endless.with_column("t", tag(fg.col("id"))).filter(fg.col("id") == 0).print()
    with Client(runtime.endpoint) as client:
        plan = plan_pb2.JobPlan.FromString(env.plan("endless").to_bytes())
        events = client._stub.Execute(job_pb2.ExecuteRequest(plan=plan))
        first = next(events)
        job_id = first.started.job_id
        assert job_id
        assert client.cancel(job_id) is True
        rest = list(events)
        last = rest[-1]
        assert client.cancel(job_id) is False  # no longer running
    assert last.finished.state == job_pb2.JobFinished.CANCELED
    states = [
        job_pb2.JobState.Name(e.state_changed.state) for e in rest if e.HasField("state_changed")
    ]
    assert states[-2:] == ["JOB_STATE_CANCELING", "JOB_STATE_CANCELED"]
    assert no_children_left(runtime.pid)


def test_a_sink_never_executed_is_warned_about_at_exit(tmp_path):
    script = tmp_path / "forgot.py"
    script.write_text(
        "import pandas as pd\n"
        "import flinkgo as fg\n"
        "env = fg.Environment()\n"
        f"env.from_pandas(pd.DataFrame({{'x': [1]}})).write_csv({str(tmp_path / 'out')!r})\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "UnexecutedSinkWarning: flinkgo: 1 sink(s) were defined but never executed" in (
        done.stderr
    )
    assert "write_csv" in done.stderr and "env.execute()" in done.stderr


def test_a_sink_never_executed_is_warned_about_when_collected():
    env = fg.Environment()
    env.from_pandas(BASE).print()
    with pytest.warns(fg.UnexecutedSinkWarning, match="print"):
        del env
        gc.collect()
    executed = fg.Environment()
    executed.from_pandas(BASE.iloc[:1]).filter(fg.col("x") > 1000).print()
    executed.execute()
    with warnings.catch_warnings():
        warnings.simplefilter("error", fg.UnexecutedSinkWarning)
        del executed
        gc.collect()


# --- file sink modes -----------------------------------------------------------------------------


def _visible_rows(directory):
    """Every row of the visible CSV parts of directory, sorted, and the part names."""
    names = sorted(f.name for f in directory.iterdir() if not f.name.startswith((".", "_")))
    frames = [pd.read_csv(directory / n) for n in names if (directory / n).stat().st_size]
    rows = sorted(pd.concat(frames)["x"].tolist()) if frames else []
    return rows, names


def _write_twice(env, out, mode):
    """Writes x = 0..5 at parallelism 3, then x = 100..101 at 1 with mode."""
    env.from_pandas(pd.DataFrame({"x": range(6)})).write_csv(out).set_parallelism(3)
    env.execute("first")
    first_rows, first_names = _visible_rows(out)
    assert first_rows == list(range(6)) and len(first_names) == 3
    env.from_pandas(pd.DataFrame({"x": [100, 101]})).write_csv(out, mode=mode).set_parallelism(1)
    env.execute("second")
    return first_names


def test_file_sink_refuses_a_non_empty_directory_by_default(env, tmp_path):
    out = tmp_path / "out"
    env.from_pandas(pd.DataFrame({"x": range(6)})).write_csv(out).set_parallelism(3)
    env.execute("first")
    env.from_pandas(pd.DataFrame({"x": [100, 101]})).write_csv(out).set_parallelism(1)
    with pytest.raises(Exception, match=r"(?s)" + re.escape(str(out)) + r".*mode=\"overwrite\""):
        env.execute("second")
    assert _visible_rows(out)[0] == list(range(6))


def test_file_sink_overwrite_leaves_exactly_the_new_rows(env, tmp_path):
    out = tmp_path / "out"
    _write_twice(env, out, "overwrite")
    rows, names = _visible_rows(out)
    assert rows == [100, 101], names
    assert not [n for n in os.listdir(out) if n.startswith(".")], "hidden parts left"


def test_file_sink_append_keeps_both_runs(env, tmp_path):
    out = tmp_path / "out"
    first_names = _write_twice(env, out, "append")
    rows, names = _visible_rows(out)
    assert rows == [*range(6), 100, 101]
    assert set(first_names) < set(names)


def test_file_sink_overwrite_of_a_failed_job_leaves_the_old_output(env, tmp_path):
    out = tmp_path / "out"
    env.from_pandas(pd.DataFrame({"x": range(6)})).write_csv(out).set_parallelism(3)
    env.execute("first")
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    df = env.from_pandas(pd.DataFrame({"x": range(20)}))
    df.select(explode_on_seven(fg.col("x")).alias("x")).write_csv(out, mode="overwrite")
    with pytest.raises(Exception, match="seven is not allowed"):
        env.execute("failing")
    after = {f.name: f.read_bytes() for f in out.iterdir() if not f.name.startswith(".")}
    assert after == before


@pytest.mark.parametrize("mode", ["Overwrite", "replace", None, 1])
def test_file_sink_mode_is_validated(env, tmp_path, mode):
    df = env.from_pandas(pd.DataFrame({"x": [1]}))
    with pytest.raises(ValueError, match=r"write_parquet: mode must be one of 'error', "):
        df.write_parquet(tmp_path / "out", mode=mode)


def test_limit_bounds_an_endless_source(env):
    gen = env.datagen(schema=pa.schema([("id", pa.int64())]))
    out = gen.limit(5).to_pandas()
    assert len(out) == 5
    gen.limit(5).print()
    assert "passes the first 5 rows" in env.explain()


def test_collect_of_an_endless_source_is_refused(env):
    gen = env.datagen(schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(
        fg.JobFailedError, match=r"collect\(\) would never return: bound it with \.limit\(n\)"
    ):
        gen.to_pandas()


def test_limit_larger_than_the_input_and_parallel(env):
    df = env.from_pandas(BASE)
    assert_same(df.limit(len(BASE) + 10).to_pandas(), BASE)
    gen = env.datagen(schema=pa.schema([("id", pa.int64())])).set_parallelism(3)
    assert len(gen.limit(n=1000).to_pandas()) == 1000
    with pytest.raises(ValueError, match="limit: n must be a positive int, got 0"):
        df.limit(0)
    with pytest.raises(TypeError, match="limit: n must be a positive int"):
        df.limit(2.5)
