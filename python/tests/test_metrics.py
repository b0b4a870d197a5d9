"""JobResult.metrics carries, per operator subtask, the figures of the REST API at the
end of the job: the chain's task metrics and, for a UDF operator, its UDF metrics
(issue 14, item 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

import flinkgo as fg

ROWS = 3000
TASK_METRICS = {"numRecordsIn", "numRecordsOut", "numBytesIn", "accumulatedBusyTime"}
UDF_METRICS = {
    "udfNumBatches",
    "udfNumRecords",
    "udfAccumulatedWorkerTime",
    "udfWorkerTimeMsPerBatch",
    "udfBatchesInFlight",
    "udfWorkerRssBytes",
    "udfNumWorkerRestarts",
}


def sum_of(op: fg.OperatorMetrics, name: str) -> float:
    return sum(s[name] for s in op.subtasks)


def test_job_result_carries_task_and_udf_metrics(tmp_path):
    @fg.udf("int64", func_type="pandas", batch_size=500)
    def double(s: pd.Series) -> pd.Series:
        return s * 2

    env = fg.Environment(parallelism=2)
    df = env.datagen(rows=ROWS, schema={"id": "int64"}).uid("gen").set_parallelism(1)
    out = df.with_column("d", double(fg.col("id"))).uid("double")
    out.write_csv(tmp_path / "out")
    result = env.execute("udf-metrics")

    gen = result.operator("gen")
    (udf,) = [m for m in result.metrics if m.name == "double"]
    assert len(gen.vertex_id) == 32 and len(udf.vertex_id) == 32
    assert gen.vertex_id != udf.vertex_id
    assert len(gen.subtasks) == 1 and len(udf.subtasks) == 2
    assert sum_of(gen, "numRecordsOut") == ROWS
    for s in gen.subtasks:
        assert TASK_METRICS <= s.keys() and not UDF_METRICS & s.keys(), s
    for s in udf.subtasks:
        assert TASK_METRICS | UDF_METRICS <= s.keys(), s
        assert (s["udfWorkerTimeMsPerBatch"] > 0) == (s["udfNumBatches"] > 0), s
        assert s["udfBatchesInFlight"] == 0  # every batch answered at the end
        assert s["udfNumWorkerRestarts"] == 0
        if sys.platform == "linux":  # read from /proc: a Python with pandas, tens of MB
            assert s["udfWorkerRssBytes"] > 10 * 2**20, s
    # Every row went through a worker once; the chain's task counted it in.
    assert sum_of(udf, "udfNumRecords") == ROWS
    assert sum_of(udf, "numRecordsIn") == ROWS
    assert sum_of(udf, "udfNumBatches") >= ROWS / 500
    assert udf.rows_in == ROWS


def test_worker_restarts_count_the_workers_a_restart_replaced(tmp_path):
    marker = str(tmp_path / "failed-once")

    @fg.udf("int64", func_type="pandas")
    def fail_once(s: pd.Series) -> pd.Series:
        if not Path(marker).exists():
            Path(marker).touch()
            raise RuntimeError("the first attempt fails")
        return s + 1

    env = fg.Environment(
        parallelism=1,
        config={
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "50 ms",
        },
    )
    df = env.datagen(rows=ROWS, schema={"id": "int64"})
    df.with_column("y", fail_once(fg.col("id"))).write_csv(tmp_path / "out")
    result = env.execute("restart-metrics")

    (op,) = [m for m in result.metrics if m.name == "fail_once"]
    (s,) = op.subtasks
    assert s["udfNumWorkerRestarts"] == 1, s
    # The second attempt ran from the start (no checkpoint): every row went again.
    assert s["udfNumRecords"] >= ROWS
    assert s["udfBatchesInFlight"] == 0
