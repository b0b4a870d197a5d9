"""Checkpoints and savepoints on S3 from the Python API, end to end.

A real S3 API server (moto's, from the test extras) runs on loopback; a keyed
aggregation checkpoints into ``s3://``, is stopped with a savepoint there, and runs
again from it at another parallelism: the results equal an uninterrupted run's.
"""

from __future__ import annotations

import glob

import pandas as pd
import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import _runtime

ROWS = 60000
KEYS = 13


@pytest.fixture(autouse=True)
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@pytest.fixture(scope="module")
def s3_endpoint(s3_server):
    s3_server.client.create_bucket(Bucket="flinkgo-test")
    return s3_server.endpoint, s3_server.client


def pipeline(tmp_path, endpoint, parallelism, rate=None, **config):
    env = fg.Environment(
        parallelism=parallelism,
        config={
            "execution.checkpointing.interval": "200 ms",
            # moto on a loaded machine can fail a request now and then; a failed
            # checkpoint must not restart the job, whose savepoint the test then takes
            # (a restarting job has none: "no running job").
            "execution.checkpointing.tolerable-failed-checkpoints": "100",
            "execution.checkpointing.dir": "s3://flinkgo-test/checkpoints",
            "execution.checkpointing.savepoint-dir": "s3://flinkgo-test/savepoints",
            "s3.endpoint": endpoint,
            "s3.region": "us-east-1",
            "s3.access-key": "testing",
            "s3.secret-key": "testing",
            "s3.path-style-access": "true",
            **config,
        },
    )
    rows = env.datagen(rows=ROWS, rows_per_second=rate, schema={"id": "int64"}).uid("numbers")
    sums = (
        rows.with_column("k", fg.col("id") % KEYS)
        .key_by("k")
        .agg(fg.count().alias("n"), fg.sum("id").alias("total"))
        .uid("sums")
    )
    sums.write_csv(tmp_path / "out").uid("files")
    return env


def results(tmp_path) -> pd.DataFrame:
    parts = sorted(glob.glob(str(tmp_path / "out" / "part-*")))
    if not parts:
        return pd.DataFrame({"k": [], "n": [], "total": []})
    return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)


def test_keyed_job_restores_from_a_savepoint_on_s3(tmp_path, s3_endpoint):
    endpoint, client = s3_endpoint
    job = pipeline(tmp_path, endpoint, 2, rate=10000.0).execute_async("on-s3")
    wait_until(
        lambda: client.list_objects_v2(Bucket="flinkgo-test", Prefix="checkpoints/").get(
            "KeyCount"
        ),
        "a checkpoint in the bucket",
    )
    savepoint = job.stop_with_savepoint()
    assert job.result(timeout=60).state == "FINISHED"
    assert savepoint.startswith("s3://flinkgo-test/savepoints/savepoint-")
    key = savepoint.removeprefix("s3://flinkgo-test/") + "/_metadata"
    client.head_object(Bucket="flinkgo-test", Key=key)
    # A bounded aggregation emits at the end of its input: nothing yet.
    assert results(tmp_path).empty

    env = pipeline(tmp_path, endpoint, 3, **{"execution.state-recovery.path": savepoint})
    assert env.execute("restored", progress=False).state == "FINISHED"
    got = results(tmp_path).sort_values("k", ignore_index=True)
    ids = pd.Series(range(ROWS))
    want = (
        pd.DataFrame({"k": ids % KEYS, "id": ids})
        .groupby("k")
        .agg(n=("id", "count"), total=("id", "sum"))
        .reset_index()
    )
    assert got[["k", "n", "total"]].astype("int64").equals(want.astype("int64"))
