"""Built-in functions of issue 29 item 18: //, abs/round/floor/ceil, coalesce/fill_null,
the .str functions and concat, rename/drop and default aggregate names.

Plan-time checks run without a runtime; results run end to end on the embedded runtime
at parallelism 1 and 3 and are compared with pandas (Python's own semantics for //).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pytest import approx

import flinkgo as fg
from flinkgo import _runtime, col, lit
from flinkgo.exceptions import (
    ColumnNotFoundError,
    ExpressionTypeError,
    InvalidArgumentError,
    JobFailedError,
    SchemaError,
)

N = 61
_rng = np.random.default_rng(29)


def _base() -> pd.DataFrame:
    i = pd.array(_rng.integers(-50, 50, N), dtype="Int64")
    i[::7] = pd.NA
    d = pd.array(_rng.integers(-6, 7, N), dtype="Int64")
    d[d == 0] = 3
    d[5::11] = pd.NA
    f = pd.array(np.round(_rng.normal(0, 20, N), 3), dtype="Float64")
    f[2::9] = pd.NA
    words = [" Alpha ", "beta", "GAMMA-x", "déjà vu", "", "b-b-b"]
    s = pd.array([words[k % len(words)] for k in range(N)], dtype="string")
    s[3::8] = pd.NA
    t = pd.array([f"t{k % 4}" for k in range(N)], dtype="string")
    t[::5] = pd.NA
    return pd.DataFrame({"id": np.arange(N, dtype="int64"), "i": i, "d": d, "f": f, "s": s, "t": t})


BASE = _base()
SCHEMA = pa.Schema.from_pandas(BASE, preserve_index=False)


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def env(request, runtime):
    return fg.Environment(parallelism=request.param)


def _py(v: object) -> object:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def _rows(series: pd.Series) -> list[object]:
    return [_py(v) for v in series.astype(object)]


def _elementwise(f, *columns: str) -> list[object]:
    """Apply a Python function row by row; a null argument gives null (SQL)."""
    out = []
    for values in zip(*(_rows(BASE[c]) for c in columns), strict=True):
        out.append(None if any(v is None for v in values) else f(*values))
    return out


def _round_half_away(x: float, digits: int) -> float:
    scaled = abs(x) * 10**digits
    return math.copysign(math.floor(scaled + 0.5) / 10**digits, x)


def test_expressions_against_python(env):
    df = env.from_pandas(BASE)
    out = df.select(
        "id",
        (col("i") // col("d")).alias("idiv"),
        (col("i") // 7).alias("idiv7"),
        (100 // col("d")).alias("rdiv"),
        (col("f") // 0.3).alias("fdiv"),
        (col("f") // col("d")).alias("fdiv_int"),
        col("i").abs().alias("iabs"),
        col("f").abs().alias("fabs"),
        col("f").round(1).alias("fround1"),
        col("f").round().alias("fround"),
        col("f").floor().alias("ffloor"),
        col("f").ceil().alias("fceil"),
        col("i").round().alias("iround"),
        col("i").fill_null(-1).alias("ifill"),
        fg.coalesce("f", "i", lit(0)).alias("coal"),
        col("s").str.upper().alias("up"),
        col("s").str.lower().alias("low"),
        col("s").str.trim().alias("trim"),
        col("s").str.length().alias("len"),
        col("s").str.contains("b").alias("has_b"),
        col("s").str.starts_with("b").alias("sw"),
        col("s").str.ends_with("x").alias("ew"),
        col("s").str.replace("b", "BB").alias("rep"),
        col("s").str.substring(1, 3).alias("sub"),
        col("s").str.substring(-2).alias("tail"),
        fg.concat("s", lit("|"), "t").alias("cat"),
        fg.concat(col("s").fill_null(""), col("t").fill_null("")).alias("cat_nn"),
    ).to_pandas()
    out = out.sort_values("id").reset_index(drop=True)
    expected = {
        "idiv": _elementwise(lambda a, b: a // b, "i", "d"),
        "idiv7": _elementwise(lambda a: a // 7, "i"),
        "rdiv": _elementwise(lambda b: 100 // b, "d"),
        "fdiv": _elementwise(lambda a: a // 0.3, "f"),
        "fdiv_int": _elementwise(lambda a, b: a // b, "f", "d"),
        "iabs": _elementwise(abs, "i"),
        "fabs": _elementwise(abs, "f"),
        "fround1": _elementwise(lambda a: _round_half_away(a, 1), "f"),
        "fround": _elementwise(lambda a: _round_half_away(a, 0), "f"),
        "ffloor": _elementwise(lambda a: float(math.floor(a)), "f"),
        "fceil": _elementwise(lambda a: float(math.ceil(a)), "f"),
        "iround": _rows(BASE["i"]),
        "ifill": _rows(BASE["i"].fillna(-1)),
        "coal": [
            float(f if f is not None else i if i is not None else 0)
            for f, i in zip(_rows(BASE["f"]), _rows(BASE["i"]), strict=True)
        ],
        "up": _rows(BASE["s"].str.upper()),
        "low": _rows(BASE["s"].str.lower()),
        "trim": _rows(BASE["s"].str.strip()),
        "len": _rows(BASE["s"].str.len()),
        "has_b": _rows(BASE["s"].str.contains("b", regex=False)),
        "sw": _rows(BASE["s"].str.startswith("b")),
        "ew": _rows(BASE["s"].str.endswith("x")),
        "rep": _rows(BASE["s"].str.replace("b", "BB", regex=False)),
        "sub": _elementwise(lambda v: v[1:4], "s"),
        "tail": _elementwise(lambda v: v[-2:], "s"),
        "cat": _elementwise(lambda a, b: f"{a}|{b}", "s", "t"),
        "cat_nn": _rows(BASE["s"].fillna("") + BASE["t"].fillna("")),
    }
    for name, want in expected.items():
        got = _rows(out[name])
        if name in ("fround1", "fround", "fdiv", "fdiv_int"):
            close = [
                (g is None and w is None) or (g is not None and w is not None and g == approx(w))
                for g, w in zip(got, want, strict=True)
            ]
            assert all(close), f"{name}: {list(zip(got, want, strict=True))[:10]}"
        else:
            assert got == want, f"{name}: {list(zip(got, want, strict=True))[:10]}"


def test_readme_changelog_example_runs(runtime):
    # The README's Changelogs example, on a bounded input: tiers by // 100.
    env = fg.Environment(parallelism=2)
    orders = env.from_pandas(
        pd.DataFrame(
            {"customer": ["a", "b", "a", "c", "b", "a"], "amount": [60, 30, 70, 250, 40, 5]}
        )
    )
    sums = orders.key_by("customer").agg(fg.sum("amount").alias("total"))
    tiers = (
        sums.with_column("tier", fg.col("total") // 100)
        .key_by("tier")
        .agg(fg.count().alias("customers"))
    )
    got = tiers.to_pandas().sort_values("tier").reset_index(drop=True)
    totals = pd.Series({"a": 135, "b": 70, "c": 250})
    want = (totals // 100).value_counts().sort_index()
    assert got["tier"].tolist() == want.index.tolist()
    assert got["customers"].tolist() == want.tolist()


def test_integer_floor_division_by_zero_names_the_expression(runtime):
    env = fg.Environment(parallelism=1)
    df = env.from_pandas(pd.DataFrame({"a": [7, 8], "b": [2, 0]}))
    with pytest.raises(JobFailedError, match=r"evaluating \(a // b\): integer division by zero"):
        df.select((col("a") // col("b")).alias("q")).to_pandas()


def test_rename_drop_and_aggregate_names(env):
    df = env.from_pandas(BASE[["id", "i", "f", "t"]])
    renamed = df.rename({"i": "n", "t": "tag"}).drop("id")
    assert renamed.columns == ["n", "f", "tag"]
    got = (
        renamed.key_by("tag")
        .agg(fg.sum("n"), fg.max("n"), fg.mean("f"), fg.count("tag"), fg.count())
        .to_pandas()
    )
    assert list(got.columns) == ["tag", "n_sum", "n_max", "f", "tag_count", "count"]
    base = BASE.rename(columns={"i": "n", "t": "tag"})
    want = base.groupby("tag", dropna=False).agg(
        n_sum=("n", "sum"),
        n_max=("n", "max"),
        f=("f", "mean"),
        tag_count=("tag", "count"),
        count=("id", "size"),
    )
    got = got.set_index("tag")
    for tag, row in want.iterrows():
        key = None if tag is pd.NA or (isinstance(tag, float) and math.isnan(tag)) else tag
        g = got.loc[got.index.isna()] if key is None else got.loc[[key]]
        assert len(g) == 1, tag
        g = g.iloc[0]
        assert int(g["n_sum"]) == int(row["n_sum"])
        assert _py(g["n_max"]) == _py(row["n_max"])
        assert float(g["f"]) == pytest.approx(float(row["f"]))
        assert int(g["tag_count"]) == int(row["tag_count"])
        assert int(g["count"]) == int(row["count"])


# --- plan time ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "arrow_type"),
    [
        (col("i") // col("d"), pa.int64()),
        (col("i") // 2.0, pa.float64()),
        (col("f").round(2), pa.float64()),
        (col("i").abs(), pa.int64()),
        (col("i").fill_null(0.5), pa.float64()),
        # pandas strings are large_string or string, by the pandas version.
        (fg.coalesce("s", "t"), SCHEMA.field("s").type),
        (col("s").str.length(), pa.int64()),
        (col("s").str.contains("a"), pa.bool_()),
        (col("s").str.substring(0, 2), SCHEMA.field("s").type),
        (fg.concat("s", "t"), SCHEMA.field("s").type),
        (fg.concat(col("s").cast("string"), lit("x")), pa.string()),
    ],
)
def test_output_types(expr, arrow_type):
    assert expr.output_type(SCHEMA) == arrow_type


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda df: df.select(col("s") // 2),
            r"select: cannot evaluate `s // 2`: //",
        ),
        (lambda df: df.select(col("s").abs()), r"abs needs a number, got (large_)?string"),
        (lambda df: df.with_column("r", col("i").round(-1)), r"with_column 'r'.*not supported"),
        (lambda df: df.select(col("i").str.upper()), r"str.upper needs a string, got int64"),
        (lambda df: df.select(fg.concat("s", "i")), r"concat needs strings, got int64"),
        (
            lambda df: df.select(fg.coalesce("s", "i")),
            r"coalesce values have types (large_)?string, int64",
        ),
    ],
)
def test_type_errors_name_the_step(make, message):
    df = fg.Environment().from_pandas(BASE)
    with pytest.raises(ExpressionTypeError, match=message):
        make(df)


def test_argument_errors():
    df = fg.Environment().from_pandas(BASE)
    with pytest.raises(ColumnNotFoundError, match="rename: unknown column 'x'"):
        df.rename({"x": "y"})
    with pytest.raises(SchemaError, match="'f' more than once"):
        df.rename({"i": "f"})
    with pytest.raises(ColumnNotFoundError, match="drop: unknown column 'nope'"):
        df.drop("nope")
    with pytest.raises(InvalidArgumentError, match="leaves no columns"):
        df.drop(*BASE.columns)
    with pytest.raises(InvalidArgumentError, match="at least two"):
        fg.coalesce("i")
    with pytest.raises(InvalidArgumentError, match="length must be >= 0"):
        col("s").str.substring(0, -1)
    with pytest.raises(SchemaError, match="'n' of .* has the name of another aggregate"):
        df.key_by("t").agg(fg.sum("i").alias("n"), fg.max("f").alias("n"))


# --- count_distinct in keyed aggregations -------------------------------------------------


@pytest.mark.parametrize("emit", ["final", "updates"])
def test_keyed_count_distinct_equals_pandas(env, emit):
    df = env.from_pandas(BASE)
    got = (
        df.key_by("t")
        .agg(fg.count_distinct("d"), fg.count_distinct("s").alias("ds"), fg.count(), emit=emit)
        .to_pandas()
    )
    want = BASE.groupby("t", dropna=False).agg(d=("d", "nunique"), ds=("s", "nunique"))
    got_rows = {(_py(r.t), int(r.d), int(r.ds)) for r in got.itertuples()}
    want_rows = {(_py(t), int(r.d), int(r.ds)) for t, r in want.iterrows()}
    assert got_rows == want_rows


@pytest.mark.parametrize("parallelism", [1, 2])
def test_keyed_count_distinct_over_a_changelog(runtime, parallelism):
    # Per key a running total of a 6000-row stream, updated every 20 ms (a changelog
    # with -U/+U); per bucket the distinct totals' tens: every update of a key's total
    # retracts its old value from its old bucket's set.
    env = fg.Environment(
        parallelism=parallelism,
        config={"pipeline.keyed-aggregate.update-interval": "20 ms"},
    )
    rows = env.datagen(rows=6000, rows_per_second=20000, schema={"id": "int64"})
    sums = (
        rows.with_column("k", col("id") % 40)
        .key_by("k")
        .agg(fg.sum("id").alias("total"), emit="updates")
    )
    buckets = (
        sums.with_column("bucket", col("total") % 7)
        .with_column("tens", col("total") // 10)
        .key_by("bucket")
        .agg(
            fg.count_distinct("tens").alias("tens"),
            fg.count_distinct("k").alias("keys"),
            emit="updates",
        )
    )
    got = buckets.to_pandas().sort_values("bucket").reset_index(drop=True)
    ids = pd.DataFrame({"id": range(6000)})
    totals = ids.groupby(ids["id"] % 40)["id"].sum().rename("total").reset_index()
    totals["bucket"], totals["tens"] = totals["total"] % 7, totals["total"] // 10
    want = totals.groupby("bucket").agg(tens=("tens", "nunique"), keys=("id", "nunique"))
    assert got["bucket"].tolist() == want.index.tolist()
    assert got["tens"].tolist() == want["tens"].tolist()
    assert got["keys"].tolist() == want["keys"].tolist()


def test_keyed_count_distinct_refuses_a_state_ttl():
    df = fg.Environment().from_pandas(BASE)
    with pytest.raises(InvalidArgumentError, match="count_distinct cannot be combined"):
        df.key_by("t").agg(fg.count_distinct("i"), state_ttl="1 h")
