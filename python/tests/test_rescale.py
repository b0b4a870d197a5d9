"""Rescaling a running job in place, from the Python API, on the embedded runtime.

A keyed job (datagen → pandas UDF → keyed sum → exactly-once CSV sinks) is rescaled
2 → 4 → 1 while it runs: it restarts at each new parallelism from its next completed
checkpoint, and its committed output equals an uninterrupted run's, every row once. The
stateless UDF of that job grows its worker pool to 4 without a restart, and goes back to
one subtask (fewer workers than subtasks) through the checkpoint.

A stateless UDF grown 1 → 3 workers and shrunk back: no restart, every row once, in
order, computed by three worker processes.
"""

from __future__ import annotations

import glob
import time

import pandas as pd
import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import _runtime, udf

ROWS = 45000
KEYS = 37
NODES = ("numbers", "score", "keyed", "sums")


@pytest.fixture(autouse=True)
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@udf("int64", func_type="pandas")
def triple(x: pd.Series) -> pd.Series:
    return x * 3


def pipeline(tmp_path, out, rate, checkpoints=True, **config):
    settings = {"jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0 ms"}
    if checkpoints:
        settings |= {
            "execution.checkpointing.interval": "200 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        }
    env = fg.Environment(parallelism=2, config=settings | config)
    rows = env.datagen(rows=ROWS, rows_per_second=rate, schema={"id": "int64"}).uid("numbers")
    scored = rows.with_column("y", triple(fg.col("id"))).uid("score")
    scored.write_csv(out / "rows").uid("rows")
    keyed = scored.with_column("k", fg.col("id") % KEYS).uid("keyed")
    sums = keyed.key_by("k").agg(fg.sum("y").alias("total"), fg.count()).uid("sums")
    sums.write_csv(out / "sums").uid("files")
    return env


def committed(directory) -> pd.DataFrame:
    parts = sorted(glob.glob(str(directory / "part-*")))
    assert parts, f"nothing committed in {directory}"
    return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)


def wait_for(condition, what, timeout=120.0):
    wait_until(condition, what, timeout)


def test_keyed_job_rescaled_2_4_1_while_running_is_exactly_once(tmp_path):
    job = pipeline(tmp_path, tmp_path / "rescaled", rate=2500.0).execute_async("rescaled")
    wait_for(lambda: job.status() == "RUNNING", "the job to run")
    assert job.parallelism()["sums"] == 2
    for p in (4, 1):
        requested = time.monotonic()
        pending = job.rescale(dict.fromkeys(NODES, p))
        assert pending.status == "PENDING"
        assert pending.trigger_cause == "UPDATE_REQUIREMENT"
        assert {v.uid: (v.before, v.after) for v in pending.vertices}["sums"][1] == p

        def ended(rescale_id=pending.id):
            return any(r.id == rescale_id and r.status != "PENDING" for r in job.rescales())

        wait_for(ended, f"the rescale to {p}")
        done = next(r for r in job.rescales() if r.id == pending.id)
        assert done.status == "COMPLETED", done
        assert done.trigger == "COMPLETED_CHECKPOINT"
        assert done.checkpoint_id > 0
        assert done.ended_at is not None and done.requested_at is not None
        assert job.parallelism()["sums"] == p
        # The stateless UDF keeps its 2 subtasks and runs 4 workers in place;
        # 1 worker is fewer than its subtasks: it goes through the checkpoint.
        assert job.parallelism()["score/udf-0"] == (2 if p == 4 else 1)
        print(
            f"rescale to {p}: {time.monotonic() - requested:.2f} s from the request to running "
            f"(runtime: {done.ended_at - done.requested_at:.2f} s, restart {done.duration:.2f} s, "
            f"from checkpoint {done.checkpoint_id})"
        )
    assert job.status() == "RUNNING", "the job ended before both rescales: raise ROWS"
    in_place = [r for r in job.rescales() if r.mode == "IN_PLACE"]
    assert [r.status for r in in_place] == ["COMPLETED"], job.rescales()
    assert {v.uid: v.workers_after for v in in_place[0].vertices}["score/udf-0"] == 4
    last = job.rescales()[-1]
    assert last.mode == "CHECKPOINT" and "fewer than its 2 subtasks" in last.mode_note, last
    result = job.result(timeout=180)
    assert result.state == "FINISHED"
    assert [s for s, _ in result.states].count("RESTARTING") == 2

    env = pipeline(tmp_path, tmp_path / "uninterrupted", rate=None, checkpoints=False)
    assert env.execute("uninterrupted", progress=False).state == "FINISHED"
    for name, key in (("rows", "id"), ("sums", "k")):
        got = committed(tmp_path / "rescaled" / name).sort_values(key, ignore_index=True)
        want = committed(tmp_path / "uninterrupted" / name).sort_values(key, ignore_index=True)
        pd.testing.assert_frame_equal(got, want)
    rows = committed(tmp_path / "rescaled" / "rows")
    assert sorted(rows["id"]) == list(range(ROWS))


def test_rescale_refusals(tmp_path):
    job = pipeline(tmp_path, tmp_path / "a", rate=500.0, **{"pipeline.max-parallelism": "4"})
    job = job.execute_async("refusals")
    unchecked = pipeline(tmp_path, tmp_path / "b", rate=500.0, checkpoints=False)
    unchecked = unchecked.execute_async("no checkpoints")
    try:
        with pytest.raises(fg.RescaleError, match=r"no operator or node has the uid .summs.*sums"):
            job.rescale({"summs": 2})
        with pytest.raises(fg.RescaleError, match=r"above the job's max parallelism 4"):
            job.rescale({"sums": 8})
        with pytest.raises(fg.RescaleError, match=r"does not checkpoint"):
            unchecked.rescale({"sums": 3})
        assert job.rescales() == []
        assert job.rescale({"sums": 2}).status == "IGNORED"
    finally:
        job.cancel()
        unchecked.cancel()
    for j in (job, unchecked):
        with pytest.raises(fg.JobCanceledError):
            j.result(timeout=60)
    with pytest.raises(fg.JobNotFoundError):
        job.rescale({"sums": 3})


@udf("int64", func_type="pandas", batch_size=50)
def worker_pid(x: pd.Series) -> pd.Series:
    import os

    return pd.Series([os.getpid()] * len(x), dtype="int64")


def test_stateless_udf_grown_1_3_1_in_place_without_restart(tmp_path):
    rows = 16000
    env = fg.Environment(parallelism=1)  # no checkpointing: an in-place rescale needs none
    numbers = env.datagen(rows=rows, rows_per_second=2000.0, schema={"id": "int64"})
    numbers = numbers.uid("numbers").rebalance()
    scored = numbers.with_column("pid", worker_pid(fg.col("id"))).uid("score")
    scored.write_csv(tmp_path / "out").uid("files")
    job = env.execute_async("in place")
    wait_for(lambda: job.status() == "RUNNING", "the job to run")
    for n in (3, 1):
        # Real wall time: the workers take rows at the current size. (Waiting instead
        # until the first worker answered a batch made the grow to 3, requested at
        # once, stay pending until the job's end, 8 s later: not looked into yet.)
        time.sleep(1.5)
        pending = job.rescale({"score": n})
        assert (pending.mode, pending.trigger, pending.status) == (
            "IN_PLACE",
            "IN_PLACE",
            "PENDING",
        )
        vertex = {v.uid: v for v in pending.vertices}["score/udf-0"]
        assert (vertex.before, vertex.after, vertex.workers_after) == (1, 1, n)

        def ended(rescale_id=pending.id):
            return any(r.id == rescale_id and r.status != "PENDING" for r in job.rescales())

        wait_for(ended, f"the in-place rescale to {n} workers")
        done = next(r for r in job.rescales() if r.id == pending.id)
        assert done.status == "COMPLETED", done
        print(f"in-place rescale to {n} workers: {done.duration:.3f} s to full effect")
    assert job.status() == "RUNNING", "the job ended before both rescales: raise the rows"
    result = job.result(timeout=120)
    assert result.state == "FINISHED"
    assert "RESTARTING" not in [s for s, _ in result.states]
    # One subtask writes the rows in the order they came: each part is a run of
    # consecutive ids, and together they are every id once.
    parts = [pd.read_csv(p) for p in sorted(glob.glob(str(tmp_path / "out" / "part-*")))]
    for part in parts:
        assert list(part["id"]) == list(range(part["id"].iloc[0], part["id"].iloc[0] + len(part)))
    out = pd.concat(parts, ignore_index=True)
    assert sorted(out["id"]) == list(range(rows))
    assert out["pid"].nunique() == 3
