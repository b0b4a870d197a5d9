"""The examples (examples/python) give what pandas gives on their data.

The Kafka and S3 example (kafka_s3.py) runs against the session's real Kafka broker and
moto S3 server (conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from _polling import wait_until, within

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


def spend_reference(example: ModuleType, purchases: pd.DataFrame) -> pd.DataFrame:
    """The Kafka example's windows from its definition: euros, then per user and minute."""
    eur = (purchases["amount"] * purchases["currency"].map(example.EUR_PER_UNIT)).round(2)
    start = pd.to_datetime(purchases["ts"], unit="ms").dt.floor("1min")
    out = (
        purchases.assign(eur=eur, window_start=start)
        .groupby(["user", "window_start"], as_index=False)
        .agg(purchases=("eur", "size"), total_eur=("eur", "sum"), max_eur=("eur", "max"))
    )
    return out.sort_values(["user", "window_start"], ignore_index=True)


def committed_json(broker, topic: str, rows: int) -> pd.DataFrame:
    """The topic's values as a read_committed reader sees them once `rows` are visible.

    The commit markers land just after the job's commit returns: this polls for them.
    """
    values: list = []

    def visible() -> bool:
        values[:] = [json.loads(v) for _, v in broker.records(topic, read_committed=True)]
        return len(values) >= rows

    within(visible, 60)  # the caller checks the rows
    return pd.DataFrame(values, columns=["user", "window_start", "window_end", *SPEND])


SPEND = ["purchases", "total_eur", "max_eur"]


@pytest.mark.timeout(600)
def test_kafka_s3_example_stops_resumes_from_s3_and_writes_every_window_once(
    kafka_broker, s3_server
):
    """The example against a real broker and S3 server, stopped and resumed midway.

    It runs streaming (in this process) until a checkpoint is on S3, stops with a
    savepoint there, then runs as a script, bounded, from that savepoint at another
    parallelism over the rest of the purchases: a read_committed reader of its topic
    sees every window pandas computes, once.
    """
    example = load("kafka_s3")
    source = kafka_broker.create_topic("example-purchases", 4)
    target = kafka_broker.create_topic("example-spend", 2)
    bucket = f"kafka-example-{os.getpid()}"
    s3 = s3_server.client
    s3.create_bucket(Bucket=bucket)
    settings = example.Settings(
        bootstrap_servers=kafka_broker.bootstrap,
        input_topic=source,
        output_topic=target,
        s3_endpoint=s3_server.endpoint,
        bucket=bucket,
        parallelism=2,
        checkpoint_interval="200 ms",
    )
    # Recent: brokers refuse timestamps over an hour ahead (log.message.timestamp.after.max.ms).
    start = pd.Timestamp.now(tz="UTC").floor(pd.Timedelta(hours=1)) - pd.Timedelta(hours=2)
    purchases = example.generate(6_000, users=12, seed=5, start=start)
    partition = {u: i % 4 for i, u in enumerate(sorted(purchases["user"].unique()))}

    def produce(rows: pd.DataFrame) -> None:
        records = [
            (partition[r.user], r.user.encode(), json.dumps(r._asdict()).encode())
            for r in rows.astype({"ts": int}).itertuples(index=False)
        ]
        kafka_broker.produce(source, records, timestamps_ms=rows["ts"].astype(int).tolist())

    produce(purchases.iloc[:4_000])
    env = example.environment(settings)
    example.pipeline(env, settings, bounded=False)
    job = env.execute_async("kafka-s3 example, streaming")
    try:
        checkpoint = re.compile(r"checkpoints/[0-9a-f]+/chk-\d+/_metadata")
        wait_until(
            lambda: any(
                checkpoint.fullmatch(o["Key"])
                for o in s3.list_objects_v2(Bucket=bucket, Prefix="checkpoints/").get(
                    "Contents", []
                )
            ),
            "a checkpoint in the bucket",
            timeout=120,
        )
        # Stopped once windows the watermark closed were committed, so that both runs
        # write some.
        assert len(committed_json(kafka_broker, target, 1)) > 0, "no window committed"
        savepoint = job.stop_with_savepoint()
    except BaseException:
        job.cancel()
        raise
    assert job.result(timeout=120).state == "FINISHED"
    assert savepoint.startswith(f"s3://{bucket}/savepoints/savepoint-")
    s3.head_object(Bucket=bucket, Key=savepoint.removeprefix(f"s3://{bucket}/") + "/_metadata")
    want = spend_reference(example, purchases)
    # The first run left windows open (the latest purchases' at least): the second
    # must carry on their state from the savepoint.
    assert len(committed_json(kafka_broker, target, 1)) < len(want)

    produce(purchases.iloc[4_000:])
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "kafka_s3.py"), "run", "--bounded"]
        + ["--from-savepoint", savepoint, "--parallelism", "3"],
        env={
            **os.environ,
            "KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap,
            "KAFKA_INPUT_TOPIC": source,
            "KAFKA_OUTPUT_TOPIC": target,
            "S3_ENDPOINT": s3_server.endpoint,
            "S3_BUCKET": bucket,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "2,000 purchases in" in run.stdout and " 0 late purchases dropped" in run.stdout

    got = committed_json(kafka_broker, target, len(want))
    got["window_start"] = pd.to_datetime(got["window_start"])
    got["window_end"] = pd.to_datetime(got["window_end"])
    got = got.sort_values(["user", "window_start"], ignore_index=True)
    assert (got["window_end"] - got["window_start"] == pd.Timedelta(minutes=1)).all()
    assert got[["user", "window_start", "purchases"]].equals(
        want[["user", "window_start", "purchases"]]
    ), "a window is missing, duplicated or miscounted"
    assert np.allclose(got["total_eur"], want["total_eur"])
    assert np.allclose(got["max_eur"], want["max_eur"])


def test_kafka_s3_example_fails_naming_an_unknown_currency(kafka_broker):
    example = load("kafka_s3")
    source = kafka_broker.create_topic("example-currency", 1)
    target = kafka_broker.create_topic("example-currency-out", 1)
    ts = int(time.time() * 1000) - 60_000
    purchases = [
        {"user": "u1", "amount": 5.0, "currency": currency, "ts": ts + i}
        for i, currency in enumerate(["EUR", "JPY", "USD"])
    ]
    kafka_broker.produce(source, [(0, b"u1", json.dumps(p).encode()) for p in purchases])
    settings = example.Settings(
        bootstrap_servers=kafka_broker.bootstrap, input_topic=source, output_topic=target
    )
    env = fg.Environment(parallelism=1)  # no checkpoints: no restarts
    example.pipeline(env, settings, bounded=True)
    with pytest.raises(fg.FlinkgoError, match=r"to_eur: no rate for currencies \['JPY'\]"):
        env.execute("unknown currency")
    assert kafka_broker.records(target) == []  # nothing written, committed or not
