"""Late rows kept as a side output (``late_rows="keep"``), on the real runtime.

The input is generated at a limited rate by one source subtask with its watermark
assigner chained to it, so watermarks go out between the source's batches: row ``id``
has event time ``id`` seconds, except the rows the test moves back in time. The
watermark is at most ``max event time so far - 1 s - 1 ms`` (it cannot be more, so a
row is never late before that bound passes its windows' cleanup) and, with
``pipeline.auto-watermark-interval`` at 1 ms and a batch of 2 rows every 100 ms, an
emitted watermark follows any run of a few batches (so a row moved back by 30 rows or
more is late, whatever the machine's load). The rows kept are written by hand from
Flink's ``WindowOperator`` rules: a row goes to the side output when every window it
belongs to has ``window_end - 1 + allowed_lateness <= watermark``.
"""

from __future__ import annotations

import glob
import os

import pandas as pd
import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import _runtime

ROWS = 60
RATE = 20.0  # rows per second: batches of 2 rows, 100 ms apart


@pytest.fixture(scope="module")
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


def moved(rows: int, moved_s: dict[int, float]) -> pd.DataFrame:
    """Return the test's input: id, ts (id seconds, or as `moved_s` says), k = id % 2."""
    ids = list(range(rows))
    secs = [moved_s.get(i, float(i)) for i in ids]
    return pd.DataFrame(
        {
            "id": ids,
            "ts": pd.to_datetime([round(s * 1000) for s in secs], unit="ms"),
            "k": [i % 2 for i in ids],
        }
    )


def stream(
    env: fg.Environment, moved_s: dict[int, float], rows: int = ROWS, name: str = ""
) -> fg.DataFrame:
    """Generate `moved` rows at RATE in one source subtask, with watermarks (1 s delay);
    `name` starts the steps' uids."""
    src = env.datagen(rows=rows, schema={"id": "int64", "ts": "timestamp[s]"}, rows_per_second=RATE)
    ts = fg.col("ts").cast("timestamp[ms]")
    for i, s in moved_s.items():
        ts = fg.when(fg.col("id") == i).then(fg.lit(round(s * 1000), "timestamp[ms]")).otherwise(ts)
    return (
        src.uid(name + "numbers")
        .set_parallelism(1)
        .with_columns(ts=ts, k=fg.col("id") % 2)
        .uid(name + "times")
        .set_parallelism(1)
        .with_watermark("ts", "1 s")
        .uid(name + "watermarks")
        .set_parallelism(1)
    )


def parts(path) -> pd.DataFrame:
    files = sorted(glob.glob(os.path.join(path, "part-*")))
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def final_windows(out: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The last result of every window: a window re-fired by a row within the lateness
    emits its grown count and sum again, so the largest are the final ones."""
    by = [*keys, "window_start", "window_end"]
    out = out.groupby(by, as_index=False)[["count", "id"]].max()
    return out.sort_values(by, ignore_index=True).astype({"count": "int64", "id": "int64"})


def reference(rows: pd.DataFrame, keys: list[str], size_s: int, slide_s: int) -> pd.DataFrame:
    """Count and sum of id per window (tumble: slide = size) of `rows`, with pandas."""
    ms = (rows["ts"] - pd.Timestamp(0)) // pd.Timedelta(milliseconds=1)
    out = []
    for i, t in zip(rows.index, ms, strict=True):
        last = t - t % (slide_s * 1000)
        for start in range(last, t - size_s * 1000, -slide_s * 1000):
            out.append({**rows.loc[i, keys].to_dict(), "start": start, "id": rows.loc[i, "id"]})
    df = pd.DataFrame(out)
    df = df.groupby([*keys, "start"], as_index=False).agg(count=("id", "size"), id=("id", "sum"))
    df["window_start"] = pd.to_datetime(df.pop("start"), unit="ms")
    df["window_end"] = df["window_start"] + pd.Timedelta(seconds=size_s)
    by = [*keys, "window_start", "window_end"]
    return (
        df[[*by, "count", "id"]]
        .sort_values(by, ignore_index=True)
        .astype({"count": "int64", "id": "int64"})
    )


# Keyed tumble(5 s), allowed lateness 10 s: a window's cleanup is its end - 1 ms + 10 s.
#  - id 48 at 36 s: window [35, 40), cleanup 49.999 s; the watermark is at most
#    47 - 1 s - 1 ms = 45.999 s then: never late (re-fires the window if it fired).
#  - id 50 at 0.5 s, id 55 at 3 s: window [0, 5), cleanup 14.999 s, passed once a
#    watermark after row 16 went out: late (34 rows after row 16).
#  - id 59 at 7 s: window [5, 10), cleanup 19.999 s, after row 21: late.
TUMBLE_MOVED = {48: 36.0, 50: 0.5, 55: 3.0, 59: 7.0}
TUMBLE_LATE = [(50, 500, 0), (55, 3000, 1), (59, 7000, 1)]

# Non-keyed hop(10 s, 5 s), no lateness: cleanup is the last window's end - 1 ms.
#  - id 48 at 46 s: windows [40, 50), [45, 55), which fire at 49.999 s and 54.999 s;
#    the watermark is at most 45.999 s then: never late.
#  - id 50 at 0.5 s, id 55 at 3 s: windows [-5, 5), [0, 10); the last fires at
#    9.999 s, after row 11: late.
#  - id 59 at 7 s: windows [0, 10), [5, 15); the last fires at 14.999 s, after row 16.
HOP_MOVED = {48: 46.0, 50: 0.5, 55: 3.0, 59: 7.0}
HOP_LATE = TUMBLE_LATE


@pytest.mark.parametrize("parallelism", [1, 3], ids=["p1", "p3"])
@pytest.mark.parametrize("kind", ["keyed tumble", "hop"])
def test_late_rows_kept_as_flinks_rules_say(runtime, tmp_path, parallelism, kind):
    env = fg.Environment(
        parallelism=parallelism, config={"pipeline.auto-watermark-interval": "1 ms"}
    )
    if kind == "hop":
        moved_s, late_rows, keys = HOP_MOVED, HOP_LATE, []
        windowed = stream(env, moved_s).window(fg.hop("ts", "10 s", "5 s"), late_rows="keep")
        size, slide = 10, 5
    else:
        moved_s, late_rows, keys = TUMBLE_MOVED, TUMBLE_LATE, ["k"]
        windowed = (
            stream(env, moved_s)
            .key_by("k")
            .window(fg.tumble("ts", "5 s"), allowed_lateness="10 s", late_rows="keep")
        )
        size, slide = 5, 5
    windows = windowed.agg(fg.count(), fg.sum("id")).uid("w")
    windows.write_parquet(tmp_path / "windows")
    # At parallelism 3 the late rows cross an exchange to the sink; at 1 they are chained.
    late = windows.late_rows()
    if parallelism > 1:
        late = late.rebalance()
    late.write_parquet(tmp_path / "late")

    result = env.execute(progress=False)

    assert result.operator("w").num_late_records_dropped == 0  # kept, not dropped
    kept = parts(tmp_path / "late").sort_values("id", ignore_index=True)
    assert list(kept.columns) == ["id", "ts", "k"]  # the window's input rows, unchanged
    want = frame_of(late_rows)
    pd.testing.assert_frame_equal(kept, want, check_dtype=False)

    rows = moved(ROWS, moved_s)
    on_time = rows[~rows["id"].isin(want["id"])]
    got = final_windows(parts(tmp_path / "windows"), keys)
    expected = reference(on_time, keys, size, slide)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


def test_late_rows_nobody_reads_are_dropped_and_counted(runtime):
    env = fg.Environment(parallelism=1, config={"pipeline.auto-watermark-interval": "1 ms"})
    windows = (
        stream(env, TUMBLE_MOVED)
        .key_by("k")
        .window(fg.tumble("ts", "5 s"), allowed_lateness="10 s", late_rows="keep")
        .agg(fg.count())
        .uid("w")
    )
    windows.print()
    assert env.execute(progress=False).operator("w").num_late_records_dropped == 3


def frame_of(rows: list[tuple[int, int, int]]) -> pd.DataFrame:
    """(id, ts in ms, k) rows as the stream's columns."""
    return pd.DataFrame(
        {
            "id": [i for i, _, _ in rows],
            "ts": pd.to_datetime([t for _, t, _ in rows], unit="ms"),
            "k": [k for _, _, k in rows],
        }
    )


# An interval join on k = id % 2 with bounds of +-500 ms: left id i (at i s) matches the
# right row id i only. Rows are late when behind the join's watermark, the smaller of
# the two sides' (Flink's IntervalJoinOperator): left id 50 moved to 0.5 s and right
# id 55 moved to 1 s are far behind both (the sides generate at the same rate), so they
# are late and match nothing; left 55 and right 50 then have no partner.
@pytest.mark.parametrize("parallelism", [1, 3], ids=["p1", "p3"])
def test_interval_join_late_rows_kept_per_side(runtime, tmp_path, parallelism):
    env = fg.Environment(
        parallelism=parallelism, config={"pipeline.auto-watermark-interval": "1 ms"}
    )
    left = stream(env, {50: 0.5}, name="left ")
    right = stream(env, {55: 1.0}, name="right ")
    joined = left.interval_join(
        right,
        on="k",
        left_time="ts",
        right_time="ts",
        lower="-500 ms",
        upper="500 ms",
        late_rows="keep",
    ).uid("join")
    joined.write_parquet(tmp_path / "joined")
    joined.late_rows(side="left").write_parquet(tmp_path / "left late")
    joined.late_rows(side="right").rebalance().write_parquet(tmp_path / "right late")

    env.execute(progress=False)

    for path, want in (("left late", [(50, 500, 0)]), ("right late", [(55, 1000, 1)])):
        got = parts(tmp_path / path)
        pd.testing.assert_frame_equal(got, frame_of(want), check_dtype=False)
    pairs = parts(tmp_path / "joined")
    assert (pairs["id"] == pairs["id_right"]).all()
    assert sorted(pairs["id"]) == [i for i in range(ROWS) if i not in (50, 55)]


# --- checkpoints: the side output to a file sink, exactly once across a restore -------

# 160 rows, 8 s at RATE. id 40 at 0.5 s is late (after row 16); the first run stops
# with a savepoint once a checkpoint has published it, well before the rows moved back
# at the end, which are late in the restored run (its watermark starts again from the
# rows after the savepoint, as Flink's: watermarks are not checkpointed, and the last
# moved row comes 100 rows after the first run's end at the latest).
RESTORE_ROWS = 160
RESTORE_MOVED = {40: 0.5, 148: 136.0, 150: 3.0, 155: 7.0, 159: 12.0}
RESTORE_LATE = [(40, 500, 0), (150, 3000, 0), (155, 7000, 1), (159, 12000, 1)]


def restore_job(tmp_path, parallelism: int, **config: str) -> fg.Environment:
    env = fg.Environment(
        parallelism=parallelism,
        config={
            "pipeline.auto-watermark-interval": "1 ms",
            "execution.checkpointing.interval": "200 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints"),
            **config,
        },
    )
    windows = (
        stream(env, RESTORE_MOVED, rows=RESTORE_ROWS)
        .key_by("k")
        .window(fg.tumble("ts", "5 s"), allowed_lateness="10 s", late_rows="keep")
        .agg(fg.count(), fg.sum("id"))
        .uid("w")
    )
    windows.write_parquet(tmp_path / "windows", mode="append").uid("windows out")
    windows.late_rows().write_parquet(tmp_path / "late", mode="append").uid("late out")
    return env


def test_late_rows_to_a_file_sink_exactly_once_across_a_savepoint(runtime, tmp_path):
    job = restore_job(tmp_path, 2).execute_async("first")
    wait_until(lambda: not parts(tmp_path / "late").empty, "a checkpoint to publish a late row")
    stopped = job.stop_with_savepoint()
    assert job.result(timeout=60).state == "FINISHED"
    before = parts(tmp_path / "late")
    assert before["id"].tolist() == [40]

    env = restore_job(tmp_path, 3, **{"execution.state-recovery.path": stopped})
    assert env.execute("second", progress=False).state == "FINISHED"

    kept = parts(tmp_path / "late").sort_values("id", ignore_index=True)
    want = frame_of(RESTORE_LATE)
    pd.testing.assert_frame_equal(kept, want, check_dtype=False)  # each once
    rows = moved(RESTORE_ROWS, RESTORE_MOVED)
    on_time = rows[~rows["id"].isin(want["id"])]
    got = final_windows(parts(tmp_path / "windows"), ["k"])
    pd.testing.assert_frame_equal(got, reference(on_time, ["k"], 5, 5), check_dtype=False)
