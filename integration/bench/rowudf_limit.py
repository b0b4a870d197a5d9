"""The worker's row-UDF path against a plain Python loop, in one process.

Issue 15, item 4: a row-at-a-time ("general") UDF should cost within 2x of the
plain loop ``pa.array([s.upper() for s in col.to_pylist()])`` on the same
column. This times both on a 1 M-string column (and the same for ``len(s)``,
an int64 result), alternating them ``--runs``
times, and prints the medians and the fraction (plain loop time / worker time,
so 1.0 means "as fast as the loop"). The worker's path is ``Chain.apply`` of
flinkgo.worker.chain as a worker runs it, minus the Arrow IPC framing.

``--baseline FILE`` also times another version of chain.py in the same run
(e.g. main's: ``git show main:python/flinkgo/worker/chain.py > /tmp/chain_main.py``),
so a before/after comparison shares the machine's load.

Run from the repository root::

    .venv/bin/python integration/bench/rowudf_limit.py --runs 7 --baseline /tmp/chain_main.py
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pyarrow as pa
from flinkgo import udf
from flinkgo._proto import worker_pb2
from flinkgo.types import schema_ipc_bytes
from flinkgo.worker import chain as current_chain


@udf("string")
def upper(s: str) -> str:
    return s.upper()


@udf("int64")
def length(s: str) -> int:
    return len(s)


# name: (the UDF, its return type, the same work as a plain loop)
WORKLOADS: dict[str, tuple[Any, pa.DataType, Callable[[list[str]], list[Any]]]] = {
    "upper": (upper, pa.string(), lambda values: [s.upper() for s in values]),
    "length": (length, pa.int64(), lambda values: [len(s) for s in values]),
}


def load_chain_module(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline_chain", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def open_chain(module: Any, func: Any, return_type: pa.DataType) -> Any:
    call = worker_pb2.UdfCall(
        udf=worker_pb2.UdfSpec.FromString(func.to_bytes()), args=["s"], output="u"
    )
    request = worker_pb2.OpenRequest(
        calls=[call],
        input_schema=schema_ipc_bytes(pa.schema([pa.field("s", pa.string())])),
        output_schema=schema_ipc_bytes(pa.schema([pa.field("u", return_type)])),
        max_message_bytes=64 << 20,
    )
    return module.Chain(request)


def seconds(f: Callable[[], Any]) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", help="another chain.py to time in the same run")
    parser.add_argument(
        "--workloads", default="upper,length", help="of " + ",".join(WORKLOADS)
    )
    args = parser.parse_args()

    col = pa.array([f"word-{i % 9973}-{i}" for i in range(args.rows)], pa.string())
    batch = pa.record_batch([col], names=["s"])
    baseline = load_chain_module(args.baseline) if args.baseline else None
    print(
        f"rows={args.rows} runs={args.runs} (medians; fraction = plain loop time / time)"
    )
    for workload in args.workloads.split(","):
        func, return_type, loop = WORKLOADS[workload]
        expected = pa.array(loop(col.to_pylist()), return_type)

        def plain_loop(loop: Any = loop) -> pa.Array:
            return pa.array(loop(col.to_pylist()))

        contenders: dict[str, Callable[[], Any]] = {"plain loop": plain_loop}
        chains = {
            "worker (this checkout)": open_chain(current_chain, func, return_type)
        }
        if baseline is not None:
            chains["worker (baseline)"] = open_chain(baseline, func, return_type)
        for name, ch in chains.items():
            out = ch.apply(batch)
            assert out.column(0).equals(expected), f"{name} computed something else"
            contenders[name] = lambda ch=ch: ch.apply(batch)

        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            # Interleaved: each run of each contender sees the same load.
            for name, f in contenders.items():
                times[name].append(seconds(f))

        base = statistics.median(times["plain loop"])
        for name, ts in times.items():
            median = statistics.median(ts)
            print(
                f"{workload:7s} {name:24s} {median:7.3f} s  {args.rows / median / 1e6:6.2f} "
                f"M rows/s  fraction {base / median:5.2f}"
            )


if __name__ == "__main__":
    main()
