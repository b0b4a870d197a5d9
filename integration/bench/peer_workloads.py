"""The flinkgo side of the peer comparison (issue 15): the same workloads as PySpark's and
PyFlink's runs, so that their figures can be set beside these.

Workloads, each at one worker (parallelism 1, UDF concurrency 1) and at the UDF batch
sizes 10 000 and 65 536:

* ``pandas x*2+1``: a pandas UDF ``x * 2 + 1`` over ``--rows`` float64 rows (20 M);
* ``row s.upper()``: a row-at-a-time UDF ``s.upper()`` over ``--string-rows`` short
  strings (3 M).

The pipeline is ``datagen`` → the UDF → a filter that keeps no row (the UDF's output is
never null) → ``collect()``: every row goes through the worker and nothing comes back, as
a peer's ``filter(...).count()`` or ``noop`` write. Rows/s is input rows over the whole
call's wall time: planning, the source, the worker round trips and the job's end.

Each figure is the median of ``--runs`` runs, "worker start excluded": after a first
run, each job reuses the worker of the one before (``python.worker.idle-timeout``). The
same once with the worker's start, "worker start included": a job with reuse off
(``python.worker.idle-timeout: 0``), after another such job emptied the runtime's idle
workers. Before timing, each workload's result is checked on a small input. Run from the
repository root::

    .venv/bin/python integration/bench/peer_workloads.py [--runs 3]

PySpark and PyFlink are not installed here: this runs the flinkgo side only.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import flinkgo as fg
import pandas as pd
from flinkgo import udf

BATCH_SIZES = (10_000, 65_536)
NO_REUSE = {"python.worker.idle-timeout": "0 ms"}


def pandas_pipeline(env: fg.Environment, rows: int, batch_size: int) -> fg.DataFrame:
    @udf("float64", func_type="pandas", concurrency=1, batch_size=batch_size)
    def affine(x: pd.Series) -> pd.Series:
        return x * 2 + 1

    return env.datagen(rows=rows, schema={"x": "float64"}).with_column("y", affine("x"))


def row_pipeline(env: fg.Environment, rows: int, batch_size: int) -> fg.DataFrame:
    @udf("string", concurrency=1, batch_size=batch_size)
    def upper(s: str) -> str:
        return s.upper()

    return env.datagen(rows=rows, schema={"s": "string"}).with_column("y", upper("s"))


def check(
    build: Callable[[fg.Environment, int, int], fg.DataFrame], batch_size: int
) -> None:
    # The UDF's output on a small input, against the same function in pandas.
    out = build(
        fg.Environment(parallelism=1, config=NO_REUSE), 1000, batch_size
    ).to_pandas()
    column = out.columns[0]
    if column == "x":
        want = out["x"] * 2 + 1
    else:
        want = out["s"].str.upper()
    if len(out) != 1000 or not (out["y"] == want).all():
        raise SystemExit(f"peer_workloads: {build.__name__} gave wrong results")


def timed(df: fg.DataFrame) -> float:
    # Every row through the UDF, none back: the filter keeps no row.
    start = time.perf_counter()
    got = df.filter(fg.col("y").is_null()).collect()
    taken = time.perf_counter() - start
    if got.num_rows != 0:
        raise SystemExit(f"peer_workloads: {got.num_rows} null outputs")
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rows", type=int, default=20_000_000, help="rows of the pandas UDF"
    )
    parser.add_argument(
        "--string-rows", type=int, default=3_000_000, help="rows of the row UDF"
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="warm runs per figure (median)"
    )
    args = parser.parse_args()

    workloads: list[
        tuple[str, Callable[[fg.Environment, int, int], fg.DataFrame], int]
    ] = [
        ("pandas x*2+1", pandas_pipeline, args.rows),
        ("row s.upper()", row_pipeline, args.string_rows),
    ]
    results: list[dict[str, Any]] = []
    for name, build, rows in workloads:
        for batch_size in BATCH_SIZES:
            check(build, batch_size)
            no_reuse = build(
                fg.Environment(parallelism=1, config=NO_REUSE), rows, batch_size
            )
            timed(no_reuse)  # takes any idle worker and stops it
            cold = timed(no_reuse)  # its worker starts
            df = build(fg.Environment(parallelism=1), rows, batch_size)
            timed(df)  # starts the worker the next runs reuse
            warm = [timed(df) for _ in range(args.runs)]
            results.append(
                {
                    "name": name,
                    "rows": rows,
                    "batch": batch_size,
                    "cold": cold,
                    "warm": warm,
                }
            )
            print(
                f"{name:14s} rows={rows:>11,d} batch={batch_size:>6,d}  "
                f"warm runs {', '.join(f'{rows / t / 1e6:.2f}' for t in warm)} M rows/s",
                flush=True,
            )

    print()
    print(
        f"one worker (parallelism 1, concurrency 1); warm: median of {args.runs} runs"
    )
    print(
        f"{'workload':14s} {'batch':>7s}  {'worker start excluded':>22s}  "
        f"{'worker start included':>22s}"
    )
    for r in results:
        warm = r["rows"] / statistics.median(r["warm"]) / 1e6
        cold = r["rows"] / r["cold"] / 1e6
        print(
            f"{r['name']:14s} {r['batch']:>7,d}  {warm:>17.2f} M/s  {cold:>17.2f} M/s"
        )


if __name__ == "__main__":
    main()
