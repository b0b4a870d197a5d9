"""Checkpoints and savepoints from the Python API, on the embedded runtime.

A job started with ``execute_async`` is stopped with a savepoint part way, then run
again from it: the committed CSV output of both runs is every row exactly once.
"""

from __future__ import annotations

import glob
import os

import pandas as pd
import pytest
from _polling import wait_until, within

import flinkgo as fg
from flinkgo import _runtime, udf

ROWS = 40000


@pytest.fixture(autouse=True)
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@udf("int64", func_type="pandas")
def double(x: pd.Series) -> pd.Series:
    return x * 2


def pipeline(tmp_path, parallelism, rate=4000.0, **config):
    env = fg.Environment(
        parallelism=parallelism,
        config={
            "execution.checkpointing.interval": "200 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints"),
            **config,
        },
    )
    # rate None: as fast as possible (the restored run).
    rows = env.datagen(rows=ROWS, rows_per_second=rate, schema={"id": "int64"}).uid("numbers")
    rows.with_column("y", double(fg.col("id"))).write_csv(tmp_path / "out").uid("files")
    return env


def committed(tmp_path) -> pd.DataFrame:
    parts = sorted(glob.glob(str(tmp_path / "out" / "part-*")))
    if not parts:
        return pd.DataFrame({"id": [], "y": []})
    return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)


def wait_running(job, timeout=60.0):
    wait_until(lambda: job.status() == "RUNNING", f"job {job} to run", timeout)


def wait_committed(tmp_path, timeout=60.0):
    wait_until(lambda: not committed(tmp_path).empty, "a checkpoint to publish rows", timeout)


def test_stop_with_savepoint_and_restore_at_another_parallelism(tmp_path):
    job = pipeline(tmp_path, 2).execute_async("first")
    assert len(job.job_id) == 32
    wait_running(job)
    wait_committed(tmp_path)
    running = job.trigger_savepoint()
    assert os.path.exists(os.path.join(running, "_metadata"))
    stopped = job.stop_with_savepoint()
    result = job.result(timeout=60)
    assert result.state == "FINISHED"
    assert [s for s, _ in result.states][-1] == "FINISHED"
    before = committed(tmp_path)
    assert 0 < len(before) < ROWS

    env = pipeline(tmp_path, 3, rate=None, **{"execution.state-recovery.path": stopped})
    assert env.execute("second", progress=False).state == "FINISHED"
    out = committed(tmp_path).sort_values("id", ignore_index=True)
    assert out["id"].tolist() == list(range(ROWS))
    assert (out["y"] == 2 * out["id"]).all()


def test_cancel_through_the_job_client(tmp_path):
    job = pipeline(tmp_path, 1).execute_async("to cancel")
    wait_running(job)
    job.cancel()
    with pytest.raises(fg.JobCanceledError):
        job.result(timeout=60)
    assert job.done()
    with pytest.raises(LookupError):
        job.trigger_savepoint()


def test_restore_refuses_state_of_a_removed_operator(tmp_path):
    job = pipeline(tmp_path, 1).execute_async("first")
    wait_running(job)
    path = job.stop_with_savepoint()
    job.result(timeout=60)

    env = fg.Environment(config={"execution.state-recovery.path": path})
    env.datagen(rows=10, schema={"id": "int64"}).uid("numbers").write_csv(tmp_path / "other")
    with pytest.raises(fg.JobFailedError, match=r'operator uid "files"'):
        env.execute("without the sink", progress=False)
    env = fg.Environment(
        config={
            "execution.state-recovery.path": path,
            "execution.state-recovery.ignore-unclaimed-state": "true",
        }
    )
    env.datagen(rows=10, schema={"id": "int64"}).uid("numbers").write_csv(tmp_path / "other")
    assert env.execute("without the sink", progress=False).state == "FINISHED"


def test_the_cli_lists_and_stops_a_job_with_a_savepoint(tmp_path, runtime):
    import subprocess

    binary = _runtime.find_binary()
    job = pipeline(tmp_path, 1).execute_async("cli")
    wait_running(job)

    def cli(*args):
        done = subprocess.run(
            [binary, *args[:1], "--endpoint", runtime.endpoint, *args[1:]],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = cli("list")
    assert job.job_id in listed
    assert "RUNNING" in listed
    from flinkgo._client import Client

    with Client(runtime.endpoint) as client:
        assert (job.job_id, "cli", "RUNNING") in client.list_jobs()
    taken = cli("savepoint", job.job_id, str(tmp_path / "by-hand")).strip()
    assert taken.startswith(str(tmp_path / "by-hand"))
    assert os.path.exists(os.path.join(taken, "_metadata"))
    stopped = cli("stop", job.job_id).strip()
    assert os.path.exists(os.path.join(stopped, "_metadata"))
    assert job.result(timeout=60).state == "FINISHED"
    missing = subprocess.run(
        [binary, "cancel", "--endpoint", runtime.endpoint, job.job_id],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1
    assert "no running job has the id" in missing.stderr


def test_keyed_aggregation_of_an_unbounded_source_emits_updates(tmp_path):
    env = fg.Environment(
        parallelism=1, config={"pipeline.keyed-aggregate.update-interval": "100 ms"}
    )
    rows = env.datagen(schema={"id": "int64"}, rows_per_second=5000)
    # An updating aggregation is a changelog: written as an upsert stream.
    rows.with_column("k", fg.col("id") % 3).key_by("k").agg(fg.count().alias("n")).write_csv(
        tmp_path / "out", changelog=True
    )
    job = env.execute_async("updates")
    wait_running(job)
    # Canceled once the sink has its part file open: updates are flowing.
    wait_until(
        lambda: any(p.name.endswith(".inprogress") for p in (tmp_path / "out").glob(".part-*")),
        "the sink to open its part file",
    )
    job.cancel()
    with pytest.raises(fg.JobCanceledError):
        job.result(timeout=60)
    # Without checkpoints the canceled job published nothing; with emit="final" it
    # would never emit at all. Run the same with a stop-with-savepoint instead.
    env = pipeline_updates(tmp_path)
    job = env.execute_async("updates")
    wait_running(job)
    # Until checkpoints published at least two updates of every key.
    counts = pd.Series(dtype="int64")

    def two_updates_per_key() -> bool:
        nonlocal counts
        out = committed(tmp_path)
        counts = out.groupby("k")["n"].count() if "k" in out else pd.Series(dtype="int64")
        return len(counts) == 3 and counts.min() >= 2

    assert within(two_updates_per_key, 60), f"updates published so far: {counts.to_dict()}"
    job.stop_with_savepoint()
    assert job.result(timeout=60).state == "FINISHED"
    out = committed(tmp_path)
    assert set(out["k"]) == {0, 1, 2}
    # Several updates per key (an upsert stream: +I, then +U), no count repeated.
    assert set(out["row_kind"]) == {"+I", "+U"}
    assert (out["row_kind"] == "+I").sum() == 3
    for _, counts in out.groupby("k")["n"]:
        assert len(counts) >= 2
        assert counts.is_unique


def pipeline_updates(tmp_path):
    env = fg.Environment(
        parallelism=1,
        config={
            "pipeline.keyed-aggregate.update-interval": "100 ms",
            "execution.checkpointing.interval": "300 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints"),
        },
    )
    rows = env.datagen(schema={"id": "int64"}, rows_per_second=5000)
    # An updating aggregation is a changelog: written as an upsert stream.
    rows.with_column("k", fg.col("id") % 3).key_by("k").agg(fg.count().alias("n")).write_csv(
        tmp_path / "out", changelog=True
    )
    return env


def test_the_savepoints_example_runs():
    import subprocess
    import sys

    example = os.path.join(
        os.path.dirname(__file__), "..", "..", "examples", "python", "savepoints.py"
    )
    done = subprocess.run(
        [sys.executable, example, "1.5"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("CREATED -> RUNNING -> FINISHED") == 2
    assert "readings counted across both runs" in done.stdout


PIPELINE_FILE = """
import os, sys
import pandas as pd
import flinkgo as fg
from flinkgo import udf

@udf("int64", func_type="pandas")
def double(x: pd.Series) -> pd.Series:
    return x * 2

out = sys.argv[1]
env = fg.Environment(parallelism=1)
rows = env.datagen(rows={rows}, schema={{"id": "int64"}}).uid("numbers")
rows.with_column("y", double(fg.col("id"))).write_csv(out).uid("files")
print(env.execute("from the cli", progress=False).state)
"""


def test_flinkgo_run_from_savepoint(tmp_path, runtime):
    import subprocess
    import sys

    job = pipeline(tmp_path, 2).execute_async("first")
    wait_running(job)
    wait_committed(tmp_path)
    path = job.stop_with_savepoint()
    job.result(timeout=60)
    script = tmp_path / "pipeline.py"
    script.write_text(PIPELINE_FILE.format(rows=ROWS))
    done = subprocess.run(
        [
            _runtime.find_binary(),
            "run",
            "--from-savepoint",
            path,
            str(script),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FLINKGO_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("FINISHED")
    out = committed(tmp_path).sort_values("id", ignore_index=True)
    assert out["id"].tolist() == list(range(ROWS))
