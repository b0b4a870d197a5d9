"""How fast collect() and to_pandas() bring rows back to the client.

Issue 15, item 6: collect() should stream Arrow IPC to the client without
per-row work, at 20 M rows/s or more for the Nexmark bids shape (auction,
bidder, price as int64, date_time as a timestamp). This writes ~2 M such rows
to a Parquet file and times, in one process with a warm embedded runtime:

* ``pyarrow read``: pyarrow reading the file (the floor);
* ``job, 0 rows out``: the same job with a filter that keeps no row (reading,
  planning, starting: everything but bringing rows back);
* ``collect()`` and ``to_pandas()``: the whole call, and its rows/s;
* ``collect part``: collect() minus the 0-row job, as rows/s: what bringing
  the rows back costs.

Every figure is the median of ``--runs`` interleaved runs, in wall time and in CPU
time (this process's and the runtime's together: on a shared machine the wall time
also counts other work's turns on the cores, the CPU time does not). Run from the
repository root::

    .venv/bin/python integration/bench/collect_speed.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flinkgo as fg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from flinkgo import _runtime


def bids(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    start = np.datetime64("2026-01-01T00:00:00", "ms")
    return pa.table(
        {
            "auction": pa.array(rng.integers(1000, 2000, rows), pa.int64()),
            "bidder": pa.array(rng.integers(1, 100_000, rows), pa.int64()),
            "price": pa.array(rng.integers(1, 10_000_000, rows), pa.int64()),
            "date_time": pa.array(start + np.arange(rows).astype("timedelta64[ms]")),
        }
    )


def cpu_seconds(pid: int) -> float:
    # This process's CPU time and the runtime's (utime + stime of /proc/<pid>/stat).
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return time.process_time() + ticks / os.sysconf("SC_CLK_TCK")


def seconds(f: Callable[[], Any], runtime_pid: int) -> tuple[float, float]:
    cpu = cpu_seconds(runtime_pid)
    start = time.perf_counter()
    f()
    return time.perf_counter() - start, cpu_seconds(runtime_pid) - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    table = bids(args.rows)
    with tempfile.TemporaryDirectory(prefix="collect-speed-") as tmp:
        path = Path(tmp) / "bids.parquet"
        pq.write_table(table, path)
        env = fg.Environment(parallelism=1)
        df = env.read_parquet(path)
        nothing = df.filter(fg.col("price") < 0)
        nothing.collect()  # warm the runtime
        got = df.collect()
        assert got.num_rows == args.rows, got.num_rows
        assert got.sort_by("date_time").equals(table.cast(got.schema)), (
            "collect lost data"
        )

        contenders: dict[str, Callable[[], Any]] = {
            "pyarrow read": lambda: pq.read_table(path),
            "job, 0 rows out": nothing.collect,
            "collect()": df.collect,
            "to_pandas()": df.to_pandas,
        }
        runtime = _runtime.current_runtime()
        assert runtime is not None
        times: dict[str, list[float]] = {name: [] for name in contenders}
        cpus: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, f in contenders.items():
                taken, cpu = seconds(f, runtime.pid)
                times[name].append(taken)
                cpus[name].append(cpu)

    wall = {name: statistics.median(ts) for name, ts in times.items()}
    cpu = {name: statistics.median(ts) for name, ts in cpus.items()}
    print(
        f"rows={args.rows} runs={args.runs} (medians; CPU: this process and the runtime)"
    )
    for name in contenders:
        print(
            f"{name:16s} {wall[name]:7.3f} s  {args.rows / wall[name] / 1e6:7.2f} M rows/s"
            f"   CPU {cpu[name]:7.3f} s"
        )
    for what, medians in (("wall", wall), ("CPU", cpu)):
        part = medians["collect()"] - medians["job, 0 rows out"]
        rate = f"{args.rows / part / 1e6:7.2f} M rows/s" if part > 0 else "within noise"
        print(f"{'collect part':16s} {part:7.3f} s  {rate}   ({what})")


if __name__ == "__main__":
    main()
