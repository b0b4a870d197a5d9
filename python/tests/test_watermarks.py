"""with_watermark: the plan it makes, its errors, and jobs on the real runtime and worker.

Watermarks themselves are not visible from Python until windows read them; the Go tests
(runtime/operators/watermarks_test.go, runtime/job/eventtime_test.go) check their
values. Here: the plan node, every refused argument, rows passing unchanged through
the assigner and through a Python timestamp extractor, the uids the planner derives
(``explain``), and a savepoint restored after an operator was added upstream.
"""

from __future__ import annotations

import datetime
import glob
import os

import pandas as pd
import pyarrow as pa
import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import _runtime, udf
from flinkgo._proto import plan_pb2
from flinkgo.exceptions import (
    ArgumentTypeError,
    ColumnNotFoundError,
    InvalidArgumentError,
    SchemaError,
)

N = 500


def plan_message(env: fg.Environment) -> plan_pb2.JobPlan:
    """The plan as the runtime receives it."""
    return plan_pb2.JobPlan.FromString(env.plan().to_bytes())


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


@udf("timestamp[ms]", func_type="pandas")
def parse_ts(s: pd.Series) -> pd.Series:
    return pd.to_datetime(s, format="%Y-%m-%d %H:%M:%S.%f").astype("datetime64[ms]")


def events(n: int = N) -> pd.DataFrame:
    """Rows with a string time, out of order by up to 3 s."""
    base = pd.Timestamp("2026-01-01 00:00:00")
    offsets = [(i * 1000 + (i % 4) * -1000) for i in range(n)]
    times = [base + pd.Timedelta(milliseconds=o) for o in offsets]
    return pd.DataFrame(
        {
            "id": range(n),
            "s": [t.strftime("%Y-%m-%d %H:%M:%S.%f") for t in times],
            "ts": pd.Series(times).astype("datetime64[ms]"),
        }
    )


# --- the plan --------------------------------------------------------------------------------


def test_plan_node_for_a_column():
    env = fg.Environment()
    df = env.from_pandas(events()).with_watermark(
        "ts", datetime.timedelta(seconds=3), idle_timeout="1 min"
    )
    df.uid("events").print()
    assert env.plan().nodes[1].kind == "watermark_assigner"
    node = plan_message(env).nodes[1]
    assert node.uid == "events"
    wa = node.watermark_assigner
    assert (wa.time_column, wa.max_out_of_orderness_ms, wa.idle_timeout_ms) == ("ts", 3000, 60000)
    assert not wa.HasField("time_extractor")
    assert df.schema == env.from_pandas(events()).schema


def test_plan_node_for_an_expression_adds_the_column():
    env = fg.Environment()
    src = env.from_pandas(events())
    df = src.with_watermark(parse_ts(fg.col("s")).alias("event_time"), "3 s")
    assert df.columns == ["id", "s", "ts", "event_time"]
    assert df.schema.field("event_time").type == pa.timestamp("ms")
    df.print()
    wa = plan_message(env).nodes[1].watermark_assigner
    assert wa.time_column == "event_time"
    assert [c.name for c in wa.time_extractor.columns] == ["id", "s", "ts", "event_time"]
    # A built-in expression named as an input column replaces it in place.
    cast = src.with_watermark(fg.col("s").cast(pa.timestamp("ms")), "0 ms")
    assert cast.columns == ["id", "s", "ts"]
    assert cast.schema.field("s").type == pa.timestamp("ms")


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (("id", "1 s"), {}, SchemaError, "the time column 'id' is int64, not a timestamp"),
        (("s", "1 s"), {}, SchemaError, "the time column 's' is string, not a timestamp"),
        (("nope", "1 s"), {}, ColumnNotFoundError, "unknown column 'nope'"),
        ((3, "1 s"), {}, ArgumentTypeError, "time must be a column name or an expression"),
        (("ts", "ten seconds"), {}, InvalidArgumentError, "max_out_of_orderness: 'ten seconds'"),
        (("ts", 10), {}, ArgumentTypeError, "max_out_of_orderness: expected a duration"),
        (("ts", "-1 s"), {}, InvalidArgumentError, "negative"),
        (("ts", "1 s"), {"idle_timeout": "0 ms"}, InvalidArgumentError, "idle_timeout: '0 ms'"),
        (("ts", "1500 us"), {}, InvalidArgumentError, "not a whole number of milliseconds"),
    ],
)
def test_refused_arguments(args, kwargs, error, message):
    df = fg.Environment().from_pandas(events(3))
    with pytest.raises(error, match=message):
        df.with_watermark(*args, **kwargs)


def test_a_udf_that_does_not_return_timestamps_is_refused_at_the_call():
    @udf("int64")
    def length(s):
        return len(s)

    df = fg.Environment().from_pandas(events(3))
    with pytest.raises(SchemaError, match="'length' is int64, not a timestamp"):
        df.with_watermark(length(fg.col("s")), "1 s")


# --- on the runtime --------------------------------------------------------------------------


def test_explain_shows_the_derived_uids(runtime):
    env = fg.Environment()
    src = env.from_pandas(events()).uid("source")
    src.with_watermark(parse_ts(fg.col("s")).alias("et"), "3 s").uid("ts").print()
    src.with_watermark("ts", "1 s").print()
    text = env.explain()
    assert "uid=ts/extract-timestamp" in text
    assert "uid=ts/watermarks" in text
    assert "uid=watermark_assigner-" in text  # the second one, from its derived uid
    assert "event time et; watermark = max et - 3000 ms - 1 ms" in text


@pytest.mark.parametrize("parallelism", [1, 3])
def test_rows_pass_unchanged(runtime, parallelism):
    data = events()
    env = fg.Environment(parallelism=parallelism)
    out = env.from_pandas(data).with_watermark("ts", "3 s").to_pandas()
    out = out.sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(out, data, check_dtype=False)


@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_python_timestamp_extractor(runtime, parallelism):
    data = events()
    env = fg.Environment(parallelism=parallelism)
    df = env.from_pandas(data).with_watermark(parse_ts(fg.col("s")).alias("et"), "3 s")
    out = df.filter(fg.col("id") >= 0).to_pandas().sort_values("id", ignore_index=True)
    assert out["id"].tolist() == list(range(N))
    assert (out["et"].astype("datetime64[ms]") == data["ts"]).all()


def test_a_null_time_fails_the_job_naming_the_column(runtime):
    data = events(5)
    data["ts"] = data["ts"].where(data["id"] != 2)  # NaT: a null time
    df = fg.Environment().from_pandas(data)
    with pytest.raises(fg.JobFailedError, match='time column "ts" is null'):
        df.with_watermark("ts", "1 s").to_pandas()


# --- savepoints ------------------------------------------------------------------------------

ROWS = 20000
# The first job is stopped with a savepoint as soon as a checkpoint has
# published rows; its bounded source must not have ended by then ("some
# tasks have already finished"). At 500 rows/s it reads for 40 s, a margin
# that a loaded machine's first checkpoint does not exhaust, and the test
# takes no longer: the restored job reads the rest at full speed.
FIRST_JOB_RATE = 500.0


def savepoint_pipeline(
    tmp_path, *, with_filter: bool, rate: float | None = FIRST_JOB_RATE, **config
):
    env = fg.Environment(
        parallelism=2,
        config={
            "execution.checkpointing.interval": "200 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints"),
            **config,
        },
    )
    rows = env.datagen(rows=ROWS, rows_per_second=rate, schema={"id": "int64", "s": "string"}).uid(
        "numbers"
    )
    if with_filter:  # the operator added upstream of with_watermark
        rows = rows.filter(fg.col("id") >= 0)
    timed = rows.with_watermark(id_to_ts(fg.col("id")).alias("et"), "1 s").uid("ts")
    timed.drop_duplicates(subset="id").uid("dedup").write_csv(tmp_path / "out").uid("files")
    return env


@udf("timestamp[ms]", func_type="pandas")
def id_to_ts(i: pd.Series) -> pd.Series:
    return pd.to_datetime(i * 10, unit="ms").astype("datetime64[ms]")


def committed(tmp_path) -> pd.DataFrame:
    parts = sorted(glob.glob(str(tmp_path / "out" / "part-*")))
    if not parts:
        return pd.DataFrame({"id": []})
    return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)


def test_savepoint_restores_after_an_operator_is_added_upstream(runtime, tmp_path):
    before = savepoint_pipeline(tmp_path, with_filter=False)
    explained = before.explain()
    assert "uid=ts/extract-timestamp" in explained and "uid=ts/watermarks" in explained
    job = before.execute_async("first")
    wait_until(lambda: not committed(tmp_path).empty, "a checkpoint to publish rows")
    stopped = job.stop_with_savepoint()
    assert job.result(timeout=60).state == "FINISHED"
    first = committed(tmp_path)
    assert 0 < len(first) < ROWS
    assert os.path.exists(os.path.join(stopped, "_metadata"))

    after = savepoint_pipeline(tmp_path, with_filter=True, rate=None)
    explained_after = after.explain()
    # The filter shifted the node ids; the derived uids did not move.
    for u in ("ts/extract-timestamp", "ts/watermarks", "dedup", "files", "numbers"):
        assert f"uid={u} " in explained_after
    after = savepoint_pipeline(
        tmp_path, with_filter=True, rate=None, **{"execution.state-recovery.path": stopped}
    )
    assert after.execute("second", progress=False).state == "FINISHED"
    out = committed(tmp_path).sort_values("id", ignore_index=True)
    assert out["id"].tolist() == list(range(ROWS))
    et = pd.to_datetime(out["et"], format="ISO8601")
    assert (et == pd.to_datetime(out["id"] * 10, unit="ms")).all()
