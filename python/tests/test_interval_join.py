"""DataFrame.interval_join (issue 11, item 5): plan checks, and results end to end.

The results come from the embedded runtime at parallelism 1 and 3 and are compared with
the join computed here by its definition with pandas, on input in bounded disorder with
null keys and null times. The bounded inputs end with the maximum watermark, which
decides every row.
"""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest

import flinkgo as fg
from flinkgo import _runtime
from flinkgo.exceptions import (
    ArgumentTypeError,
    ColumnNotFoundError,
    InvalidArgumentError,
    SchemaError,
)

_rng = np.random.default_rng(5)
T0 = pd.Timestamp("2024-05-01 12:00:00")


def _stream(n: int, prefix: str, unit: str) -> pd.DataFrame:
    # Ordered by position, each time up to 20 s off: bounded disorder.
    offsets = np.arange(n) * 3_000 + _rng.integers(-20_000, 20_000, n)
    ts = pd.Series(T0 + pd.to_timedelta(offsets, unit="ms")).astype(f"datetime64[{unit}]")
    ts[11::29] = pd.NaT
    ad = pd.array(_rng.integers(0, 6, n), dtype="Int64")
    ad[7::17] = pd.NA
    return pd.DataFrame({f"{prefix}_id": np.arange(n, dtype="int64"), "ad": ad, "ts": ts})


VIEWS = _stream(150, "view", "ms")
CLICKS = _stream(140, "click", "us")


def reference(
    left: pd.DataFrame,
    right: pd.DataFrame,
    lower: pd.Timedelta,
    upper: pd.Timedelta,
    how: str,
) -> set[tuple[object, object]]:
    """(view_id, click_id) pairs of the join by its definition, None for padding."""
    lk = left.dropna(subset=["ad", "ts"])
    rk = right.dropna(subset=["ad", "ts"])
    m = lk.merge(rk, on="ad", suffixes=("", "_right"))
    m = m[(m["ts"] + lower <= m["ts_right"]) & (m["ts_right"] <= m["ts"] + upper)]
    out = {(int(a), int(b)) for a, b in zip(m["view_id"], m["click_id"], strict=True)}
    if how in ("left", "full"):
        out |= {(int(a), None) for a in set(left["view_id"]) - set(m["view_id"])}
    if how in ("right", "full"):
        out |= {(None, int(b)) for b in set(right["click_id"]) - set(m["click_id"])}
    return out


def to_td(v: object) -> pd.Timedelta:
    """A bound as pandas reads it ("-10 s" is minus ten seconds)."""
    if isinstance(v, str) and v.startswith("-"):
        return -pd.Timedelta(v[1:].replace(" ", ""))
    return pd.Timedelta(str(v).replace(" ", "") if isinstance(v, str) else v)


def joined(table) -> set[tuple[object, object]]:
    views, clicks = table.column("view_id").to_pylist(), table.column("click_id").to_pylist()
    pairs = zip(views, clicks, strict=True)
    rows = list(pairs)
    assert len(rows) == len(set(rows)), "a pair came out twice"
    return set(rows)


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def env(request, runtime):
    return fg.Environment(parallelism=request.param)


@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
@pytest.mark.parametrize(
    ("lower", "upper"),
    [("-10 s", "30 s"), (datetime.timedelta(seconds=5), datetime.timedelta(minutes=1))],
    ids=["around", "after"],
)
def test_interval_join_equals_pandas(env, how, lower, upper):
    views, clicks = env.from_pandas(VIEWS), env.from_pandas(CLICKS)
    out = views.interval_join(
        clicks, on="ad", left_time="ts", right_time="ts", lower=lower, upper=upper, how=how
    )
    assert out.schema.names == ["view_id", "ad", "ts", "click_id", "ad_right", "ts_right"]
    table = out.collect()
    want = reference(VIEWS, CLICKS, to_td(lower), to_td(upper), how)
    assert joined(table) == want
    assert len(want) > 50  # the data makes many matches


def test_left_on_right_on_and_explain(env):
    views = env.from_pandas(VIEWS.rename(columns={"ad": "view_ad", "ts": "view_ts"}))
    clicks = env.from_pandas(CLICKS)
    out = views.interval_join(
        clicks,
        left_on="view_ad",
        right_on="ad",
        left_time="view_ts",
        right_time="ts",
        lower="0 s",
        upper="20 s",
    )
    assert out.schema.names == ["view_id", "view_ad", "view_ts", "click_id", "ad", "ts"]
    out.print()
    text = env.explain()
    env.execute()  # runs the print sink, so none is left unexecuted
    assert (
        "inner join of (view_ad) with (ad) where left.view_ts + 0s <= right.ts <= "
        "left.view_ts + 20s"
    ) in text
    want = reference(VIEWS, CLICKS, pd.Timedelta(0), pd.Timedelta(seconds=20), "inner")
    assert joined(out.collect()) == want


def test_plan_time_errors(env):
    views, clicks = env.from_pandas(VIEWS), env.from_pandas(CLICKS)
    kw = {"left_time": "ts", "right_time": "ts", "lower": "0 s", "upper": "1 s"}
    with pytest.raises(InvalidArgumentError, match="give the keys"):
        views.interval_join(clicks, **kw)
    with pytest.raises(InvalidArgumentError, match="not both"):
        views.interval_join(clicks, on="ad", left_on="ad", right_on="ad", **kw)
    with pytest.raises(ColumnNotFoundError, match="unknown column 'add'"):
        views.interval_join(clicks, on="add", **kw)
    with pytest.raises(SchemaError, match="left time column 'view_id' is int64, not a timestamp"):
        views.interval_join(clicks, on="ad", **{**kw, "left_time": "view_id"})
    with pytest.raises(SchemaError, match="left key 'view_id' is int64 but right key 'ts'"):
        views.interval_join(clicks, left_on="view_id", right_on="ts", **kw)
    with pytest.raises(InvalidArgumentError, match="lower .* is above upper"):
        views.interval_join(clicks, on="ad", **{**kw, "lower": "1 min"})
    with pytest.raises(InvalidArgumentError, match="not a duration"):
        views.interval_join(clicks, on="ad", **{**kw, "upper": "soon"})
    with pytest.raises(InvalidArgumentError, match="how is"):
        views.interval_join(clicks, on="ad", how="outer", **kw)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="must be a flinkgo DataFrame"):
        views.interval_join(VIEWS, on="ad", **kw)  # type: ignore[arg-type]
    other = fg.Environment().from_pandas(CLICKS)
    with pytest.raises(InvalidArgumentError, match="another Environment"):
        views.interval_join(other, on="ad", **kw)


def test_self_join(env):
    views = env.from_pandas(VIEWS)
    out = views.interval_join(
        views, on="ad", left_time="ts", right_time="ts", lower="-10 s", upper="10 s"
    )
    table = out.collect()
    got = set(
        zip(
            table.column("view_id").to_pylist(),
            table.column("view_id_right").to_pylist(),
            strict=True,
        )
    )
    right = VIEWS.rename(columns={"view_id": "click_id"})
    assert got == reference(
        VIEWS, right, pd.Timedelta(seconds=-10), pd.Timedelta(seconds=10), "inner"
    )
