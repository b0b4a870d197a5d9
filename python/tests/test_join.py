"""DataFrame.join, the regular equi-join (issue 12, items 3 to 5): plan checks, and results.

The results come from the embedded runtime at parallelism 1 and 3, for every join type,
with and without null keys, with duplicate keys (and duplicate rows) on both sides, and are
compared with SQL's result computed here with pandas ``merge`` from the same input. pandas
matches null keys to each other, which is SQL's ``IS NOT DISTINCT FROM`` (the
``nulls_equal=True`` reference); for ``=`` the null-key rows are taken out before the merge
and added back padded on outer sides. Outer joins emit a changelog (padded rows retracted
when their match arrives); the result is the changelog applied.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _runtime
from flinkgo.exceptions import (
    ArgumentTypeError,
    ColumnNotFoundError,
    InvalidArgumentError,
    SchemaError,
)

_rng = np.random.default_rng(12)


def _side(n: int, prefix: str, null_share: float) -> pd.DataFrame:
    key = pd.array(_rng.integers(0, 15, n), dtype="Int64")
    key[_rng.random(n) < null_share] = pd.NA
    df = pd.DataFrame(
        {
            f"{prefix}id": np.arange(n, dtype="int64") + (0 if prefix == "l" else 10_000),
            "k": key,
            f"{prefix}v": [f"{prefix}{i}" for i in range(n)],
        }
    )
    # Exact duplicate rows: a multiset, not a set, on both sides.
    return pd.concat([df, df.iloc[::9]], ignore_index=True).sample(frac=1, random_state=3)


INPUTS = {
    "no_nulls": (_side(120, "l", 0.0), _side(110, "r", 0.0)),
    "nulls": (_side(120, "l", 0.3), _side(110, "r", 0.3)),
}


def reference(left: pd.DataFrame, right: pd.DataFrame, how: str, nulls_equal: bool) -> Counter:
    """(lid, rid) pairs of SQL's join, with multiplicity, None for padding."""
    pd_how = "outer" if how == "full" else how
    if nulls_equal:  # pandas' merge matches NA to NA: IS NOT DISTINCT FROM
        m = left.merge(right, on="k", how=pd_how)
    else:
        lk, rk = left.dropna(subset=["k"]), right.dropna(subset=["k"])
        m = lk.merge(rk, on="k", how=pd_how)
        if how in ("left", "full"):
            m = pd.concat([m, left[left["k"].isna()]], ignore_index=True)
        if how in ("right", "full"):
            m = pd.concat([m, right[right["k"].isna()]], ignore_index=True)
    return Counter(
        (None if pd.isna(a) else int(a), None if pd.isna(b) else int(b))
        for a, b in zip(m["lid"], m["rid"], strict=True)
    )


def applied(table: pa.Table, columns: tuple[str, ...] = ("lid", "rid")) -> Counter:
    """The join's output with its changelog applied (when it carries row kinds)."""
    values = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
    if "_row_kind" not in table.column_names:
        return Counter(values)
    out: Counter = Counter()
    for row, kind in zip(values, table.column("_row_kind").to_pylist(), strict=True):
        if kind in (0, 2):  # +I, +U
            out[row] += 1
        else:  # -U, -D retract a row that is there
            assert out[row] > 0, f"retraction of {row}, which is not in the result"
            out[row] -= 1
    return +out


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
@pytest.mark.parametrize("data", ["no_nulls", "nulls"])
@pytest.mark.parametrize("nulls_equal", [False, True], ids=["eq", "not_distinct"])
def test_join_equals_sql(env, how, data, nulls_equal):
    left_pd, right_pd = INPUTS[data]
    left, right = env.from_pandas(left_pd), env.from_pandas(right_pd)
    out = left.join(right, on="k", how=how, nulls_equal=nulls_equal)
    # on= keeps one key column, as polars and Spark (issue 29 item 18).
    assert out.schema.names == ["lid", "k", "lv", "rid", "rv"]
    table = out.collect()
    got = applied(table)
    want = reference(left_pd, right_pd, how, nulls_equal)
    assert got == want
    # The key is the left's, or the right's on a right-only row: a row's side's key.
    left_key = dict(zip(left_pd["lid"], left_pd["k"].astype(object), strict=True))
    right_key = dict(zip(right_pd["rid"], right_pd["k"].astype(object), strict=True))
    for (lid, rid, k), n in applied(table, ("lid", "rid", "k")).items():
        side_key = left_key[lid] if lid is not None else right_key[rid]
        assert k == (None if pd.isna(side_key) else side_key), (lid, rid, k, n)
    assert sum(want.values()) > 300  # duplicate keys make many matches


def test_inner_join_of_append_only_inputs_has_no_row_kinds(env):
    left_pd, right_pd = INPUTS["nulls"]
    table = env.from_pandas(left_pd).join(env.from_pandas(right_pd), on="k").collect()
    assert "_row_kind" not in table.column_names
    assert applied(table) == reference(left_pd, right_pd, "inner", False)


def test_left_on_right_on_suffix_and_ttl(env):
    left_pd, right_pd = INPUTS["nulls"]
    left = env.from_pandas(left_pd.rename(columns={"k": "lk"}))
    right = env.from_pandas(right_pd.rename(columns={"lid": "x"}).assign(lid=1))
    right = right.select("rid", "k", "rv", "lid")
    out = left.join(right, left_on="lk", right_on="k", how="left", suffix="_r", state_ttl="1 h")
    assert out.schema.names == ["lid", "lk", "lv", "rid", "k", "rv", "lid_r"]
    # a state TTL far beyond the job changes nothing
    want = reference(left_pd, right_pd, "left", False)
    assert applied(out.collect()) == want


def test_join_of_an_aggregation_stores_one_row_per_key(env):
    left_pd, right_pd = INPUTS["no_nulls"]
    counts = env.from_pandas(right_pd).key_by("k").agg(fg.count().alias("n"))
    out = env.from_pandas(left_pd).join(counts, on="k", how="left")
    join_step = out._step.inputs[0][0]  # under the select that keeps one k
    assert list(join_step.body.right_unique_key) == ["k"]
    want = left_pd.merge(right_pd.groupby("k").size().rename("n").reset_index(), on="k", how="left")
    assert applied(out.collect(), ("lid", "n")) == Counter(
        zip(want["lid"], want["n"].astype("Int64").astype(object), strict=True)
    )


def test_explain_names_the_join(env):
    left_pd, right_pd = INPUTS["nulls"]
    out = env.from_pandas(left_pd).join(env.from_pandas(right_pd), on="k", how="full")
    out.print()
    text = env.explain()
    assert "full join on left.k = right.k" in text
    assert "a NULL key never matches and is not stored" in text


def test_table_exec_state_ttl_is_a_known_key(runtime):
    env = fg.Environment(config={"table.exec.state.ttl": "1 h"})
    left_pd, right_pd = INPUTS["nulls"]
    got = applied(env.from_pandas(left_pd).join(env.from_pandas(right_pd), on="k").collect())
    assert got == reference(left_pd, right_pd, "inner", False)


def test_plan_errors():
    env = fg.Environment()
    left = env.from_pandas(pd.DataFrame({"k": [1], "v": ["a"]}))
    right = env.from_pandas(pd.DataFrame({"k": [1.0], "k_right": [2], "w": [1]}))
    with pytest.raises(InvalidArgumentError, match="not both"):
        left.join(right, on="k", left_on="k", right_on="k")
    with pytest.raises(InvalidArgumentError, match="give the keys"):
        left.join(right)
    with pytest.raises(ColumnNotFoundError):
        left.join(right, on="nope")
    with pytest.raises(SchemaError, match="cast one"):
        left.join(right, on="k")
    with pytest.raises(InvalidArgumentError, match="how is"):
        left.join(left, on="k", suffix="_2", how="outer")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="cast one"):
        left.join(right, left_on="v", right_on="w")
    ints = env.from_pandas(pd.DataFrame({"k": [1], "k_right": [1]}))
    with pytest.raises(SchemaError, match="another suffix"):
        ints.join(ints, on="k")
    with pytest.raises(InvalidArgumentError, match="state_ttl"):
        ints.join(ints, on="k", suffix="_2", state_ttl="0 s")
    with pytest.raises(ArgumentTypeError, match="nulls_equal"):
        ints.join(ints, on="k", suffix="_2", nulls_equal=1)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="DataFrame"):
        ints.join(pd.DataFrame(), on="k")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="state_ttl"):
        ints.key_by("k").agg(fg.count(), state_ttl="-1 s")
