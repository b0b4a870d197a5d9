"""The event-time example (examples/python/clicks.py) gives what pandas gives on its data."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

import flinkgo as fg

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its pandas UDF is pickled by reference to the module
    spec.loader.exec_module(module)
    return module


def clicks_reference(
    clicks_example: ModuleType, imps: pd.DataFrame, clicks: pd.DataFrame
) -> pd.DataFrame:
    """The example's windows from its definition: a left interval join, then counts."""
    joined = imps.merge(clicks, on="imp_id", how="left", suffixes=("", "_right"))
    delay = joined["ts_right"] - joined["ts"]
    in_interval = (delay >= pd.Timedelta(0)) & (delay <= pd.Timedelta(minutes=10))
    joined.loc[~in_interval, "ts_right"] = pd.NaT
    joined = joined.drop_duplicates(subset=["imp_id", "ts_right"])
    joined["campaign"] = clicks_example.CAMPAIGNS[joined["ad"] % len(clicks_example.CAMPAIGNS)]
    joined["window_start"] = joined["ts"].dt.floor("5min")
    joined["delay_s"] = (joined["ts_right"] - joined["ts"]).dt.total_seconds()
    out = joined.groupby(["campaign", "window_start"], as_index=False).agg(
        impressions=("imp_id", "size"),
        clicks=("ts_right", "count"),
        median_delay_s=("delay_s", "median"),
    )
    return out.sort_values(["campaign", "window_start"], ignore_index=True)


@pytest.mark.parametrize("parallelism", [1, 3])
def test_clicks_example_equals_pandas(parallelism):
    example = load("clicks")
    imps, clicks = example.generate(impressions=6_000, seed=11)
    got = example.pipeline(fg.Environment(parallelism=parallelism), imps, clicks).to_pandas()
    got = got.sort_values(["campaign", "window_start"], ignore_index=True)
    want = clicks_reference(example, imps, clicks)
    assert (got["window_end"] - got["window_start"] == pd.Timedelta(minutes=5)).all()
    assert got["window_start"].astype("datetime64[ns]").tolist() == want["window_start"].tolist()
    assert got["campaign"].tolist() == want["campaign"].tolist()
    assert got["impressions"].tolist() == want["impressions"].tolist()
    assert got["clicks"].tolist() == want["clicks"].tolist()
    assert np.allclose(got["median_delay_s"], want["median_delay_s"], equal_nan=True)
    assert want["clicks"].sum() > 0.25 * len(imps)  # the join matched, not just padded


def test_clicks_example_runs_as_a_script():
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "clicks.py")], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    header = run.stdout.splitlines()[0].split()
    assert header == [
        "campaign",
        "window_start",
        "window_end",
        "impressions",
        "clicks",
        "median_delay_s",
        "ctr",
    ]


@pytest.mark.parametrize("parallelism", [1, 3])
def test_orders_example_equals_pandas(parallelism):
    example = load("orders")
    orders, customers = example.generate(orders=4_000, customers=200, seed=3)
    got = example.final_table(
        example.pipeline(fg.Environment(parallelism=parallelism), orders, customers).to_pandas()
    )
    want = orders.merge(customers, on="customer_id", how="left")
    # SQL's =: pandas would match a NULL customer id to a NULL one; customers have none.
    assert customers["customer_id"].notna().all()
    assert len(got) == len(want) == len(orders)
    got = got.sort_values("order_id", ignore_index=True)
    want = want.sort_values("order_id", ignore_index=True)
    assert got["order_id"].tolist() == want["order_id"].tolist()
    for column in ("name", "country"):
        assert got[column].fillna("-").tolist() == want[column].fillna("-").tolist()
    bands = pd.cut(
        want["amount"], [-np.inf, 50, 150, np.inf], right=False, labels=["small", "medium", "large"]
    )
    assert got["band"].tolist() == bands.astype(str).tolist()
    assert want["name"].isna().sum() > 0.1 * len(orders)  # NULL and unknown ids are padded


def test_orders_example_runs_as_a_script():
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "orders.py")], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0].split() == ["country", "band", "orders", "revenue"]
