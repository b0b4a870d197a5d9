"""Pandas UDAFs (``@fg.udaf``): the API's checks, the worker's side, and real-runtime results.

End-to-end results are compared with a reference computed here with pandas: the same
function applied to each window's (or key's) rows (``groupby(...).apply``), from the same
input with bounded disorder, at parallelism 1 and 3, beside built-in aggregates in the
same ``agg``.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import _runtime


@fg.udaf("double")
def spread(y: pd.Series) -> float:
    return y.max() - y.min()


# Small batches and two workers per window subtask: many worker calls, each with
# the rows of many windows.
@fg.udaf("double", batch_size=64, concurrency=2)
def weighted(x: pd.Series, y: pd.Series) -> float:
    return float((x.fillna(0) * y).sum())


@fg.udaf("int64", name="rows")
def count_rows(s: pd.Series) -> int:
    return len(s)


# --- the API ------------------------------------------------------------------------------


def frame() -> fg.DataFrame:
    return fg.Environment().from_pandas(
        pd.DataFrame({"k": ["a"], "ts": pd.to_datetime([0], unit="ms"), "x": [1], "s": ["p"]})
    )


def test_udaf_declares_an_aggregate():
    a = weighted("x", fg.col("y")).alias("w")
    assert (a.function, a.name, a.args, a.udaf) == ("udaf", "w", ("x", "y"), weighted)
    assert str(a) == "weighted(x, y) AS w"
    assert count_rows("s").name == "rows"
    assert weighted.batch_size == 64 and weighted.concurrency == 2
    assert spread.return_type == pa.float64()
    assert "UserDefinedAggregateFunction(name='spread'" in repr(spread)


def test_udaf_plan_and_schema():
    out = frame().key_by("k").window(fg.tumble("ts", "1 s")).agg(count_rows("s"), fg.count())
    assert out.schema.field("rows").type == pa.int64()
    agg = out._step.body.aggregates[0]
    assert (agg.function, agg.name, list(agg.args)) == ("udaf", "rows", ["s"])
    assert agg.udf.name == "rows" and agg.udf.payload


def test_udaf_refuses_what_it_cannot_do():
    df = frame()
    with pytest.raises(fg.InvalidArgumentError, match="'rows' aggregates .* emit=\"updates\""):
        df.key_by("k").agg(count_rows("s"), emit="updates")
    with pytest.raises(fg.ColumnNotFoundError):
        df.window(fg.tumble("ts", "1 s")).agg(count_rows("nope"))
    with pytest.raises(fg.ArgumentTypeError, match="give the argument columns"):
        count_rows()
    with pytest.raises(fg.ArgumentTypeError, match="column names or col"):
        count_rows(fg.col("x") + 1)
    with pytest.raises(fg.InvalidArgumentError, match="unknown func_type"):
        fg.udaf("double", func_type="general")(lambda s: 1.0)  # type: ignore[call-overload]
    with pytest.raises(fg.InvalidArgumentError, match="cannot be async"):

        @fg.udaf("double")
        async def later(s):
            return 1.0


# --- the worker's side: one batch, many groups -------------------------------------------


def aggregate_chain(*aggs: fg.Aggregate) -> object:
    from flinkgo._proto import worker_pb2
    from flinkgo.types import schema_ipc_bytes
    from flinkgo.worker.chain import Chain

    fields = [pa.field("__flinkgo_group", pa.int32()), pa.field("x", pa.int64())]
    fields.append(pa.field("y", pa.float64()))
    calls = [
        worker_pb2.UdfCall(udf=a.udaf._to_spec(), args=list(a.args), output=a.name)
        for a in aggs
        if a.udaf is not None
    ]
    out = pa.schema([pa.field(a.name, a.udaf.return_type) for a in aggs if a.udaf is not None])
    return Chain(
        worker_pb2.OpenRequest(
            calls=calls,
            input_schema=schema_ipc_bytes(pa.schema(fields)),
            output_schema=schema_ipc_bytes(out),
        )
    )


def test_worker_calls_the_function_once_per_group():
    chain = aggregate_chain(spread("y"), weighted("x", "y"))
    batch = pa.RecordBatch.from_pydict(
        {
            "__flinkgo_group": pa.array([0, 0, 1, 2, 2, 2], pa.int32()),
            "x": pa.array([1, None, 3, 4, 5, 6], pa.int64()),
            "y": [1.0, 5.0, 2.0, 1.0, 1.0, 0.5],
        }
    )
    result = chain.apply(batch)  # type: ignore[attr-defined]
    assert result.column("spread").to_pylist() == [4.0, 0.0, 0.5]
    assert result.column("weighted").to_pylist() == [1.0, 6.0, 12.0]


def test_worker_refuses_a_series_or_a_wrong_type():
    @fg.udaf("double")
    def doubled(y):
        return y * 2

    @fg.udaf("int64")
    def word(y):
        return "many"

    batch = pa.RecordBatch.from_pydict(
        {"__flinkgo_group": pa.array([0, 1], pa.int32()), "x": [1, 2], "y": [1.0, 2.0]}
    )
    from flinkgo.worker.chain import UdfResultError

    with pytest.raises(UdfResultError, match="udaf 'doubled' returned a Series for a group"):
        aggregate_chain(doubled("y")).apply(batch)  # type: ignore[attr-defined]
    with pytest.raises(UdfResultError, match="udaf 'word' returned values that do not convert"):
        aggregate_chain(word("y")).apply(batch)  # type: ignore[attr-defined]


# --- end to end against pandas --------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def p(request, runtime):
    return request.param


def disordered(n: int = 3000, disorder_ms: int = 2000, seed: int = 11) -> pd.DataFrame:
    """Rows of a few keys whose times grow with bounded disorder (ms)."""
    rng = np.random.default_rng(seed)
    ts = np.arange(n, dtype=np.int64) * 23
    ts = ts[np.argsort(ts + rng.integers(0, disorder_ms, n))]
    x = rng.integers(-50, 100, n).astype(np.int64)
    return pd.DataFrame(
        {
            "k": rng.choice(["a", "b", "c", "d"], n),
            "ts": pd.to_datetime(ts, unit="ms"),
            "x": pd.array(np.where(rng.random(n) < 0.05, None, x), dtype="Int64"),
            "y": rng.normal(size=n),
            "s": rng.choice(["p", "q", "r"], n),
        }
    )


def windows_of(data: pd.DataFrame, keys: list[str], kind: str, size: int, gap: int) -> pd.DataFrame:
    """Every row with the bounds (ws, we) of its window: Flink's tumble and sessions."""
    t = data["ts"].astype("datetime64[ms]").astype("int64")
    data = data.assign(t=t)
    if kind == "tumble":
        return data.assign(ws=t - t % size, we=t - t % size + size)
    if kind == "hop":  # size 3 slides: each row in 3 windows
        slide = size // 3
        last = t - t % slide
        return pd.concat(
            data.assign(ws=last - i * slide, we=last - i * slide + size) for i in range(3)
        )
    parts = []
    for _, g in data.groupby(keys) if keys else [((), data)]:
        g = g.sort_values("t")
        # A new session starts where the gap to the previous row is at least gap.
        starts = (g["t"].diff().fillna(gap) >= gap).cumsum()
        bounds = g.groupby(starts)["t"].agg(["min", "max"])
        ws = starts.map(bounds["min"]).to_numpy()
        parts.append(g.assign(ws=ws, we=starts.map(bounds["max"]).to_numpy() + gap))
    return pd.concat(parts)


def reference(data: pd.DataFrame, keys: list[str], kind: str, size: int, gap: int) -> pd.DataFrame:
    rows = windows_of(data, keys, kind, size, gap)
    groups = rows.groupby([*keys, "ws", "we"])
    out = pd.DataFrame(
        {
            "spread": groups["y"].apply(spread.func),
            "weighted": groups[["x", "y"]].apply(lambda g: weighted.func(g["x"], g["y"])),
            "rows": groups["s"].apply(count_rows.func),
            "n": groups.size(),
            "mean": groups["y"].mean(),
        }
    ).reset_index()
    out["window_start"] = pd.to_datetime(out.pop("ws"), unit="ms")
    out["window_end"] = pd.to_datetime(out.pop("we"), unit="ms")
    return normalized(out, keys)


def normalized(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    cols = [*keys, "window_start", "window_end", "spread", "weighted", "rows", "n", "mean"]
    df = df[cols].copy()
    for c in ("rows", "n"):
        df[c] = df[c].astype("int64")
    for c in ("window_start", "window_end"):
        df[c] = df[c].astype("datetime64[ns]")
    return df.sort_values([*keys, "window_start"]).reset_index(drop=True)


def aggregates() -> list[fg.Aggregate]:
    # UDAFs and built-ins mixed, in one agg.
    return [
        spread("y"),
        fg.count().alias("n"),
        weighted("x", "y"),
        count_rows("s"),
        fg.mean("y").alias("mean"),
    ]


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "non-keyed"])
@pytest.mark.parametrize("kind", ["tumble", "session", "hop"])
def test_udaf_windows_match_pandas(p, keyed, kind):
    data = disordered()
    size, gap = (3000, 0) if kind != "session" else (0, 120 if keyed else 20)
    if kind == "tumble":
        w = fg.tumble("ts", f"{size} ms")
    elif kind == "hop":
        w = fg.hop("ts", f"{size} ms", f"{size // 3} ms")
    else:
        w = fg.session("ts", f"{gap} ms")
    # Watermarks every millisecond, their delay covering the disorder: windows fire
    # during the run (many per worker call), and no row is late.
    env = fg.Environment(parallelism=p, config={"pipeline.auto-watermark-interval": "1 ms"})
    df = env.from_pandas(data).with_watermark("ts", "3 s")
    windowed = df.key_by("k").window(w) if keyed else df.window(w)
    keys = ["k"] if keyed else []
    got = normalized(windowed.agg(*aggregates()).to_pandas(), keys)
    want = reference(data, keys, kind, size, gap)
    assert len(want) > 20
    pd.testing.assert_frame_equal(got, want, check_dtype=False, check_exact=False, rtol=1e-9)


def test_udaf_errors_name_the_udaf(runtime):
    df = fg.Environment().from_pandas(disordered(200))
    windowed = df.key_by("k").window(fg.tumble("ts", "1 s"))

    @fg.udaf("double")
    def broken(y):
        return 1 / 0

    with pytest.raises(fg.JobFailedError, match="broken") as failed:
        windowed.agg(broken("y")).to_pandas()
    assert "ZeroDivisionError" in str(failed.value)

    @fg.udaf("double")
    def doubled(y):
        return y * 2

    with pytest.raises(fg.JobFailedError, match="udaf 'doubled' returned a Series"):
        windowed.agg(doubled("y")).to_pandas()

    @fg.udaf("double")
    def word(y):
        return "many"

    with pytest.raises(fg.JobFailedError, match="udaf 'word'.*declared return type double"):
        windowed.agg(word("y")).to_pandas()


@pytest.mark.parametrize("p", [1, 3])
def test_udaf_in_a_keyed_aggregation_of_a_bounded_input(runtime, p):
    data = disordered()
    env = fg.Environment(parallelism=p)
    got = (
        env.from_pandas(data)
        .key_by("k")
        .agg(spread("y"), fg.count().alias("n"), weighted("x", "y"), count_rows("s"))
        .to_pandas()
        .sort_values("k", ignore_index=True)
    )
    groups = data.groupby("k")
    want = pd.DataFrame(
        {
            "spread": groups["y"].apply(spread.func),
            "n": groups.size(),
            "weighted": groups[["x", "y"]].apply(lambda g: weighted.func(g["x"], g["y"])),
            "rows": groups["s"].apply(count_rows.func),
        }
    ).reset_index()
    pd.testing.assert_frame_equal(got, want, check_dtype=False, check_exact=False, rtol=1e-9)


def test_udaf_in_a_keyed_aggregation_needs_a_bounded_input(runtime):
    env = fg.Environment()
    rows = env.datagen(schema={"id": "int64"}).with_column("k", fg.col("id") % 2)  # never ends
    rows.key_by("k").agg(count_rows("id")).print()
    never = 'UDAF "rows" aggregates a key.s rows once.*never ends'
    with pytest.raises(fg.JobFailedError, match=never):
        env.execute()


# --- checkpoints ----------------------------------------------------------------------------

ROWS = 60_000


@fg.udf("timestamp[ms]", func_type="pandas")
def id_to_ts(i: pd.Series) -> pd.Series:
    return pd.to_datetime(i * 10, unit="ms").astype("datetime64[ms]")


def savepoint_pipeline(tmp_path, parallelism, rate=None, **config):
    env = fg.Environment(
        parallelism=parallelism,
        config={
            "execution.checkpointing.interval": "200 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints"),
            **config,
        },
    )
    rows = env.datagen(rows=ROWS, rows_per_second=rate, schema={"id": "int64"}).uid("numbers")
    timed = (
        rows.with_column("ts", id_to_ts(fg.col("id")))
        .with_column("k", fg.col("id") % 5)
        .with_column("y", fg.col("id").cast("double"))
        .with_watermark("ts", "1 s")
        .uid("ts")
    )
    windowed = timed.key_by("k").window(fg.tumble("ts", "3 s")).agg(spread("y"), count_rows("id"))
    windowed.uid("windows").write_csv(tmp_path / "out").uid("files")
    return env


def committed(tmp_path) -> pd.DataFrame:
    parts = sorted(glob.glob(str(tmp_path / "out" / "part-*")))
    if not parts:
        return pd.DataFrame({"k": [], "window_start": [], "spread": [], "rows": []})
    return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)


def test_udaf_window_restores_from_a_savepoint(runtime, tmp_path):
    job = savepoint_pipeline(tmp_path, 2, rate=6000.0).execute_async("first")
    wait_until(lambda: not committed(tmp_path).empty, "a checkpoint to publish window rows")
    stopped = job.stop_with_savepoint()
    assert job.result(timeout=60).state == "FINISHED"
    assert os.path.exists(os.path.join(stopped, "_metadata"))
    first = committed(tmp_path)
    assert 0 < len(first)

    restored = savepoint_pipeline(tmp_path, 3, **{"execution.state-recovery.path": stopped})
    assert restored.execute("second", progress=False).state == "FINISHED"
    got = committed(tmp_path)
    got["window_start"] = pd.to_datetime(got["window_start"], format="ISO8601")
    got = got.sort_values(["k", "window_start"], ignore_index=True)

    ids = pd.Series(np.arange(ROWS))
    frame_ = pd.DataFrame({"k": ids % 5, "t": ids * 10, "y": ids.astype("float64")})
    frame_["ws"] = pd.to_datetime(frame_["t"] - frame_["t"] % 3000, unit="ms")
    groups = frame_.groupby(["k", "ws"])
    want = pd.DataFrame(
        {"spread": groups["y"].apply(spread.func), "rows": groups["y"].size()}
    ).reset_index()
    # Every window once, with the rows of both runs: some straddle the savepoint.
    assert len(got) == len(want) > len(first)
    assert got["k"].tolist() == want["k"].tolist()
    assert (got["window_start"] == want["ws"]).all()
    assert got["rows"].tolist() == want["rows"].tolist()
    assert np.allclose(got["spread"], want["spread"])
