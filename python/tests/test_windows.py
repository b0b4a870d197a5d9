"""Event-time windows: the API's checks, and results on the real runtime against pandas.

End-to-end tests read bounded input (the end of input sends the maximum watermark, so
every window fires) with bounded disorder, at parallelism 1 and 3, and compare with a
reference computed here with pandas from the same rows and Flink's window arithmetic.
"""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _runtime

# --- the API ------------------------------------------------------------------------------


def frame() -> fg.DataFrame:
    return _frame_in(fg.Environment())


def _frame_in(env: fg.Environment) -> fg.DataFrame:
    return env.from_pandas(
        pd.DataFrame(
            {
                "k": ["a", "b"],
                "ts": pd.to_datetime([0, 1500], unit="ms"),
                "x": [1, 2],
                "s": ["p", "q"],
            }
        )
    )


def test_window_specs_parse_durations():
    assert fg.tumble("ts", "1 min").size_ms == 60_000
    assert fg.tumble("ts", datetime.timedelta(seconds=10), offset="-2 s").offset_ms == -2000
    h = fg.hop(fg.col("ts"), "10 s", "500 ms")
    assert (h.kind, h.time, h.size_ms, h.slide_ms) == ("hop", "ts", 10_000, 500)
    c = fg.cumulate("ts", "1 h", "1 d")
    assert (c.step_ms, c.size_ms) == (3_600_000, 86_400_000)
    assert fg.session("ts", "30 min").gap_ms == 1_800_000


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: fg.tumble("ts", "0 s"), "is zero"),
        (lambda: fg.tumble("ts", "1 s", offset="1 s"), "smaller than the size"),
        (lambda: fg.hop("ts", "10 s", "3 s"), "not a multiple of slide"),
        (lambda: fg.cumulate("ts", "7 min", "1 h"), "not a multiple of step"),
        (lambda: fg.session("ts", "soon"), "is not a duration"),
        (lambda: fg.tumble("ts", "1.5 ms"), "whole number of milliseconds"),
    ],
)
def test_window_specs_refuse_bad_durations(make, message):
    with pytest.raises(fg.InvalidArgumentError, match=message):
        make()


def test_window_schema_and_plan():
    df = frame()
    out = (
        df.key_by("k")
        .window(fg.hop("ts", "2 s", "1 s"), allowed_lateness="5 s")
        .agg(fg.count(), fg.first("s").alias("f"), fg.count_distinct("x").alias("d"))
    )
    assert out.schema == pa.schema(
        [
            pa.field("k", pa.string()),
            pa.field("window_start", pa.timestamp("ms"), nullable=False),
            pa.field("window_end", pa.timestamp("ms"), nullable=False),
            pa.field("count", pa.int64()),
            pa.field("f", pa.string()),
            pa.field("d", pa.int64()),
        ]
    )
    node = out._step.body
    assert (node.kind, node.size_ms, node.slide_ms, node.allowed_lateness_ms) == (
        2,
        2000,
        1000,
        5000,
    )
    assert list(node.keys) == ["k"]
    # A time zone carries over to the window bounds.
    tz = fg.Environment().from_pandas(
        pd.DataFrame({"ts": pd.to_datetime([0], unit="ms", utc=True), "x": [1]})
    )
    assert tz.window(fg.tumble("ts", "1 s")).agg(fg.sum("x")).schema.field(
        "window_start"
    ).type == pa.timestamp("ms", tz="UTC")


def test_window_refuses_what_it_cannot_do():
    df = frame()
    with pytest.raises(fg.SchemaError, match="'x' is int64, not a timestamp"):
        df.window(fg.tumble("x", "1 s"))
    with pytest.raises(fg.ColumnNotFoundError):
        df.window(fg.tumble("nope", "1 s"))
    with pytest.raises(fg.InvalidArgumentError, match="late_rows must be"):
        df.key_by("k").window(fg.tumble("ts", "1 s"), late_rows="later")  # type: ignore[arg-type]
    with pytest.raises(fg.InvalidArgumentError, match="late_rows must be"):
        df.window(fg.tumble("ts", "1 s"), late_rows=None)  # type: ignore[arg-type]
    with pytest.raises(fg.ExpressionTypeError, match="sum\\(s\\) of type string"):
        df.window(fg.tumble("ts", "1 s")).agg(fg.sum("s"))
    with pytest.raises(fg.SchemaError, match="name of a window column"):
        df.window(fg.tumble("ts", "1 s")).agg(fg.sum("x").alias("window_end"))
    with pytest.raises(fg.InvalidArgumentError, match="computed in windows only"):
        df.key_by("k").agg(fg.first("x"))
    with pytest.raises(fg.ArgumentTypeError, match="expected a window"):
        df.window("ts")  # type: ignore[arg-type]


def test_late_rows_api_and_plan():
    env = fg.Environment()
    df = _frame_in(env)
    agg = (
        df.key_by("k")
        .window(fg.tumble("ts", "1 s"), allowed_lateness="2 s", late_rows="keep")
        .agg(fg.count())
        .uid("w")
        .set_parallelism(2)
    )
    late = agg.late_rows()
    assert late.schema == df.schema  # the window's input rows, unchanged
    late.filter(fg.col("x") > 0).print()
    agg.print()
    plan = env.plan()
    kinds = [n.kind for n in plan.nodes]
    assert kinds == ["source", "window_aggregate", "filter", "sink", "sink"]
    window = plan.nodes[1]
    assert (window.uid, window.parallelism) == ("w", 2)
    assert plan.nodes[2].inputs == (
        fg.PlanInput(node=window.id, partitioning="FORWARD_IMPLICIT", output="LATE_ROWS"),
    )
    assert plan.nodes[4].inputs[0].output == "MAIN"
    from flinkgo._proto import plan_pb2

    msg = plan_pb2.JobPlan.FromString(plan.to_bytes())
    assert msg.nodes[1].window_aggregate.late_rows == plan_pb2.WindowAggregate.KEEP


def test_late_rows_refusals():
    df = frame()
    dropping = df.key_by("k").window(fg.tumble("ts", "1 s")).agg(fg.count())
    with pytest.raises(fg.InvalidArgumentError, match='drops its late rows; give it .*"keep"'):
        dropping.late_rows()
    with pytest.raises(fg.InvalidArgumentError, match="neither a window aggregation nor an"):
        df.late_rows()
    keeping = df.window(fg.tumble("ts", "1 s"), late_rows="keep").agg(fg.count())
    with pytest.raises(fg.InvalidArgumentError, match="uid: the late rows are a side output"):
        keeping.late_rows().uid("late")
    with pytest.raises(fg.InvalidArgumentError, match="set_parallelism: the late rows are a side"):
        keeping.late_rows().set_parallelism(2)
    with pytest.raises(fg.InvalidArgumentError, match="neither a window aggregation nor an"):
        keeping.late_rows().late_rows()
    with pytest.raises(fg.InvalidArgumentError, match="a window has one input, so no side"):
        keeping.late_rows(side="left")


def test_interval_join_late_rows_api_and_plan():
    env = fg.Environment()
    left = _frame_in(env)
    right = left.select("k", "ts")

    def join(late_rows):
        return left.interval_join(
            right,
            on="k",
            left_time="ts",
            right_time="ts",
            lower="0 s",
            upper="1 s",
            late_rows=late_rows,
        )

    with pytest.raises(fg.InvalidArgumentError, match="late_rows must be"):
        join("later")
    with pytest.raises(fg.InvalidArgumentError, match='drops its late rows; give it .*"keep"'):
        join("drop").late_rows(side="left")
    joined = join("keep")
    with pytest.raises(fg.InvalidArgumentError, match="give side='left' or side='right'"):
        joined.late_rows()
    late_left, late_right = joined.late_rows(side="left"), joined.late_rows(side="right")
    assert (late_left.schema, late_right.schema) == (left.schema, right.schema)
    late_left.print()
    late_right.print()
    nodes = env.plan().nodes
    assert [n.kind for n in nodes] == ["source", "select", "interval_join", "sink", "sink"]
    assert [n.inputs[0].output for n in nodes[3:]] == ["LATE_ROWS", "LATE_ROWS_RIGHT"]


def test_non_keyed_window_runs_at_parallelism_one(runtime):
    env = fg.Environment(parallelism=3)
    df = env.from_pandas(pd.DataFrame({"ts": pd.to_datetime([0], unit="ms"), "x": [1]}))
    agg = df.window(fg.tumble("ts", "1 s")).agg(fg.sum("x")).uid("w")
    agg.print()
    assert "non-keyed window" in env.explain()
    window = env.execute().operator("w")
    assert (window.parallelism, window.rows_in, window.rows_out) == (1, 1, 1)
    assert window.num_late_records_dropped == 0  # the end of input makes no row late
    with pytest.raises(fg.JobFailedError, match="a window without keys runs at parallelism 1"):
        agg.set_parallelism(2).to_pandas()


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


def disordered(n: int = 2000, disorder_ms: int = 3000, seed: int = 5) -> pd.DataFrame:
    """Rows of a few keys whose times grow with bounded disorder, no two alike."""
    rng = np.random.default_rng(seed)
    base = np.arange(n, dtype=np.int64) * 37
    ts = base + rng.integers(0, disorder_ms, n)
    ts = np.unique(ts)  # distinct times: first and last are then unambiguous
    rng.shuffle(ts)
    ts = np.sort(ts[: len(ts)])
    order = np.argsort(ts + rng.integers(0, disorder_ms, len(ts)))  # bounded disorder
    ts = ts[order]
    m = len(ts)
    x = rng.integers(-50, 100, m).astype(np.int64)
    y = rng.normal(size=m)
    return pd.DataFrame(
        {
            "k": rng.choice(["a", "b", "c", "d", "e"], m),
            "ts": pd.to_datetime(ts * 1000, unit="us"),  # microseconds: floored to ms
            "x": pd.array(np.where(rng.random(m) < 0.05, None, x), dtype="Int64"),
            "y": y,
            "s": rng.choice(["p", "q", "r"], m),
        }
    )


def assign(kind: str, ts_ms: int, size: int, slide: int, offset: int = 0) -> list[tuple[int, int]]:
    """Flink's window assignment for tumble, hop and cumulate (ms)."""
    if kind == "tumble":
        start = ts_ms - (ts_ms - offset) % size
        return [(start, start + size)]
    if kind == "hop":
        last = ts_ms - (ts_ms - offset) % slide
        return [(s, s + size) for s in range(last - size + slide, last + 1, slide)]
    start = ts_ms - (ts_ms - offset) % size  # cumulate: slide is the step
    first_end = ts_ms - (ts_ms - offset) % slide + slide
    return [(start, e) for e in range(first_end, start + size + 1, slide)]


def sessions(ts_sorted: list[int], gap: int) -> list[tuple[int, int, list[int]]]:
    out: list[tuple[int, int, list[int]]] = []
    for t in ts_sorted:
        if out and t <= out[-1][1]:  # [t, t+gap) touches or overlaps the last session
            s, e, members = out[-1]
            out[-1] = (s, max(e, t + gap), [*members, t])
        else:
            out.append((t, t + gap, [t]))
    return out


def reference(
    data: pd.DataFrame, keys: list[str], kind: str, size: int, slide: int, gap: int, offset: int = 0
) -> pd.DataFrame:
    # us -> ms, floor; the unit made explicit (pandas 2 keeps these times in ns)
    data = data.assign(t=data["ts"].astype("datetime64[us]").astype("int64") // 1000)
    exploded = []
    if kind == "session":
        groups = data.groupby(keys) if keys else [((), data)]
        for _, g in groups:
            for s, e, members in sessions(sorted(g["t"]), gap):
                part = g[g["t"].isin(members)]
                exploded.append(part.assign(ws=s, we=e))
    else:
        rows = []
        for i, t in enumerate(data["t"]):
            rows.extend((i, s, e) for s, e in assign(kind, int(t), size, slide, offset))
        idx, ws, we = zip(*rows, strict=True)
        exploded.append(data.iloc[list(idx)].assign(ws=list(ws), we=list(we)))
    allrows = pd.concat(exploded).sort_values("t")
    out = allrows.groupby([*keys, "ws", "we"], sort=False).agg(
        sum=("x", lambda v: v.sum(min_count=1)),  # SQL: NULL over only NULLs
        n=("x", "size"),
        lo=("x", "min"),
        hi=("y", "max"),
        mean=("y", "mean"),
        first=("s", "first"),
        last=("s", "last"),
        distinct=("s", "nunique"),
        nx=("x", "count"),
    )
    out = out.reset_index()
    out["window_start"] = pd.to_datetime(out.pop("ws"), unit="ms")
    out["window_end"] = pd.to_datetime(out.pop("we"), unit="ms")
    return out


def run_window(data: pd.DataFrame, p: int, keyed: bool, w: fg.Window) -> pd.DataFrame:
    env = fg.Environment(parallelism=p)
    df = env.from_pandas(data)
    windowed = df.key_by("k").window(w) if keyed else df.window(w)
    return windowed.agg(
        fg.sum("x").alias("sum"),
        fg.count().alias("n"),
        fg.min("x").alias("lo"),
        fg.max("y").alias("hi"),
        fg.mean("y").alias("mean"),
        fg.first("s").alias("first"),
        fg.last("s").alias("last"),
        fg.count_distinct("s").alias("distinct"),
        fg.count("x").alias("nx"),
    ).to_pandas()


def normalized(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    cols = [
        *keys,
        "window_start",
        "window_end",
        "sum",
        "n",
        "lo",
        "hi",
        "mean",
        "first",
        "last",
        "distinct",
        "nx",
    ]
    df = df[cols].copy()
    for c in ("sum", "n", "lo", "distinct", "nx"):
        df[c] = df[c].astype("Int64")
    df["window_start"] = df["window_start"].astype("datetime64[ns]")
    df["window_end"] = df["window_end"].astype("datetime64[ns]")
    return df.sort_values([*keys, "window_start", "window_end"]).reset_index(drop=True)


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "non-keyed"])
@pytest.mark.parametrize(
    ("kind", "size", "slide", "gap", "offset"),
    [
        ("tumble", 5000, 0, 0, 1200),
        ("hop", 6000, 2000, 0, 0),
        ("cumulate", 9000, 3000, 0, 0),
        ("session", 0, 0, 400, 0),
    ],
)
def test_windows_match_pandas(p, keyed, kind, size, slide, gap, offset):
    data = disordered()
    if kind == "session" and not keyed:
        gap = 30  # rows of all keys come every 37 ms on average
    if kind == "tumble":
        w = fg.tumble("ts", f"{size} ms", offset=f"{offset} ms")
    elif kind == "hop":
        w = fg.hop("ts", f"{size} ms", f"{slide} ms")
    elif kind == "cumulate":
        w = fg.cumulate("ts", f"{slide} ms", f"{size} ms")
    else:
        w = fg.session("ts", f"{gap} ms")
    keys = ["k"] if keyed else []
    got = normalized(run_window(data, p, keyed, w), keys)
    want = normalized(reference(data, keys, kind, size, slide, gap, offset), keys)
    assert len(got) > 10
    pd.testing.assert_frame_equal(got, want, check_dtype=False, check_exact=False, rtol=1e-9)


@pytest.mark.parametrize(("keyed", "kind"), [(True, "hop"), (False, "session"), (True, "cumulate")])
def test_windows_after_with_watermark_match_pandas(p, keyed, kind):
    # Watermarks every millisecond from an assigner whose delay covers the disorder:
    # windows fire during the run, no row is late, the result is the reference's.
    data = disordered(disorder_ms=2000)
    env = fg.Environment(parallelism=p, config={"pipeline.auto-watermark-interval": "1 ms"})
    df = env.from_pandas(data).with_watermark("ts", "4 s")
    w, size, slide, gap = {
        "hop": (fg.hop("ts", "6 s", "2 s"), 6000, 2000, 0),
        "session": (fg.session("ts", "30 ms"), 0, 0, 30),
        "cumulate": (fg.cumulate("ts", "3 s", "9 s"), 9000, 3000, 0),
    }[kind]
    windowed = df.key_by("k").window(w) if keyed else df.window(w)
    got = windowed.agg(
        fg.sum("x").alias("sum"),
        fg.count().alias("n"),
        fg.min("x").alias("lo"),
        fg.max("y").alias("hi"),
        fg.mean("y").alias("mean"),
        fg.first("s").alias("first"),
        fg.last("s").alias("last"),
        fg.count_distinct("s").alias("distinct"),
        fg.count("x").alias("nx"),
    ).to_pandas()
    keys = ["k"] if keyed else []
    want = normalized(reference(data, keys, kind, size, slide, gap), keys)
    pd.testing.assert_frame_equal(
        normalized(got, keys), want, check_dtype=False, check_exact=False, rtol=1e-9
    )


# --- window join --------------------------------------------------------------------------


def _per_window(rows: pd.DataFrame, name: str) -> pd.DataFrame:
    out = rows.assign(window_start=rows["ts"].dt.floor("10s"))
    out = out.groupby(["ad", "window_start"], as_index=False).agg(**{name: ("ts", "size")})
    return out.assign(window_end=out["window_start"] + pd.Timedelta(seconds=10))


@pytest.mark.parametrize("how", ["inner", "left", "full"])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_window_join_equals_pandas(how, parallelism):
    rng = np.random.default_rng(5)
    views = pd.DataFrame(
        {
            "ad": rng.integers(0, 6, 3000),
            "ts": pd.to_datetime(rng.integers(0, 120_000, 3000), unit="ms"),
        }
    )
    clicks = pd.DataFrame(
        {
            "ad": rng.integers(0, 8, 400),
            "ts": pd.to_datetime(rng.integers(0, 120_000, 400), unit="ms"),
        }
    )
    env = fg.Environment(parallelism=parallelism)

    def counted(rows, name):
        w = env.from_pandas(rows).key_by("ad").window(fg.tumble("ts", "10 s"))
        return w.agg(fg.count().alias(name))

    got = counted(views, "views").window_join(counted(clicks, "clicks"), on="ad", how=how)
    got = got.to_pandas()
    want = _per_window(views, "views").merge(
        _per_window(clicks, "clicks"),
        on=["ad", "window_start"],
        how="outer" if how == "full" else how,
    )

    # A padded right row has no left columns: its window and key are the right's.
    got = pd.DataFrame(
        {
            "ad": got["ad"].fillna(got["ad_right"]),
            "window_start": got["window_start"].fillna(got["window_start_right"]),
            "views": got["views"],
            "clicks": got["clicks"],
        }
    )

    def rows_of(df):
        return sorted(
            (int(r.ad), r.window_start.value, _int_or_none(r.views), _int_or_none(r.clicks))
            for r in df.astype({"window_start": "datetime64[ns]"}).itertuples()
        )

    assert rows_of(got) == rows_of(want)
    assert len(want) > 50


def _int_or_none(v):
    return None if pd.isna(v) else int(v)


def test_window_join_refuses_windows_with_allowed_lateness():
    env = fg.Environment()
    rows = pd.DataFrame({"ad": [1], "ts": pd.to_datetime([0], unit="ms")})
    late = (
        env.from_pandas(rows)
        .key_by("ad")
        .window(fg.tumble("ts", "10 s"), allowed_lateness="1 min")
        .agg(fg.count())
    )
    on_time = env.from_pandas(rows).key_by("ad").window(fg.tumble("ts", "10 s")).agg(fg.count())
    with pytest.raises(fg.InvalidArgumentError, match="left input's window has allowed_lateness"):
        late.window_join(on_time, on="ad")
    with pytest.raises(fg.SchemaError, match="right input has no 'window_start'"):
        on_time.window_join(env.from_pandas(rows), on="ad")
