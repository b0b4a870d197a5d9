"""The physical limit the UDF bridge is measured against (issue 15, item 1).

Two Python processes pass Arrow IPC batches over a Unix socket, pipelined (at
most ``--window`` batches in flight, as the bridge's in-flight window): the
sender writes each batch as an Arrow IPC stream with a 4-byte length, the
receiver reads it, applies the function and sends the result back the same
way, and the sender reads and decodes the results on a thread of its own. No
protobuf, no Go, no flinkgo: what Arrow IPC over a socket costs between two
Python processes, plus the function. The functions are the bridge
benchmark's (BenchmarkBridgeLimit in bridgelimit_test.go), on float64 ``x``:

* ``identity``: the batch back as it came;
* ``numpy``: ``x * 2 + 1`` on the column as a numpy array;
* ``pandas``: ``x * 2 + 1`` on the column as a pandas Series;
* ``upper`` (a string column): ``s.upper()`` as a plain Python loop,
  ``pa.array([s.upper() for s in col.to_pylist()])``; ``upper-inproc`` is the
  same loop in one process with no IPC at all (the row UDF's own limit).

Prints one JSON object per line: ``{"func", "batch", "rows", "rows_per_s"}``,
the best of ``--runs`` runs. Run from the repository root::

    .venv/bin/python integration/bench/ipc_limit.py --rows 4000000
    .venv/bin/python integration/bench/ipc_limit.py --rows 200000 --runs 1   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

_HEADER = struct.Struct("<I")
# The string column of the Go benchmarks (intStringBatch in bridge_bench_test.go).
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
]

FUNCS: dict[str, Callable[[pa.RecordBatch], pa.RecordBatch]] = {
    "identity": lambda b: b,
    "numpy": lambda b: pa.record_batch(
        [pa.array(b.column(0).to_numpy() * 2 + 1)], names=["y"]
    ),
    "pandas": lambda b: pa.record_batch(
        [pa.Array.from_pandas(b.column(0).to_pandas() * 2 + 1)], names=["y"]
    ),
    "upper": lambda b: pa.record_batch(
        [pa.array([s.upper() for s in b.column(0).to_pylist()], pa.string())],
        names=["u"],
    ),
}


def make_batch(func: str, rows: int) -> pa.RecordBatch:
    """The bridge benchmark's input: float64 x, or its words for upper."""
    if func.startswith("upper"):
        return pa.record_batch(
            [pa.array([WORDS[i % len(WORDS)] for i in range(rows)])], names=["s"]
        )
    return pa.record_batch(
        [pa.array(np.arange(rows, dtype=np.float64) * 0.5)], names=["x"]
    )


def encode(batch: pa.RecordBatch) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


def decode(data: bytes | bytearray | pa.Buffer) -> pa.RecordBatch:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_next_batch()


def read_frame(conn: socket.socket) -> bytearray | None:
    header = bytearray(_HEADER.size)
    if not read_exactly(conn, memoryview(header)):
        return None
    body = bytearray(_HEADER.unpack(header)[0])
    if not read_exactly(conn, memoryview(body)):
        raise ConnectionError("peer closed in the middle of a frame")
    return body


def read_exactly(conn: socket.socket, view: memoryview) -> bool:
    got = 0
    while got < len(view):
        n = conn.recv_into(view[got:])
        if n == 0:
            if got == 0:
                return False
            raise ConnectionError("peer closed in the middle of a frame")
        got += n
    return True


def write_frame(conn: socket.socket, data: pa.Buffer) -> None:
    conn.sendall(_HEADER.pack(data.size))
    conn.sendall(memoryview(data))


def serve(path: str, func: str) -> None:
    """The receiver: answer every frame with func applied, until EOF."""
    f = FUNCS[func]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        while (frame := read_frame(conn)) is not None:
            write_frame(conn, encode(f(decode(frame))))


def over_ipc(func: str, rows: int, batch_rows: int, window: int) -> float:
    """rows/s of sending rows in batch_rows batches to a receiver process."""
    payload = encode(make_batch(func, batch_rows))
    batches = max(rows // batch_rows, 2 * window)
    with tempfile.TemporaryDirectory(prefix="flinkgo-ipc-limit-") as tmp:
        path = os.path.join(tmp, "s")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        peer = subprocess.Popen(
            [sys.executable, __file__, "--serve", path, "--func", func]
        )
        conn, _ = listener.accept()
        listener.close()
        slots = threading.Semaphore(window)
        got: list[int] = []
        started: list[float] = []

        def receive() -> None:
            n = 0
            while (frame := read_frame(conn)) is not None:
                n += decode(frame).num_rows
                slots.release()
                if not started:  # the first (warm-up) result starts the clock
                    started.append(time.perf_counter())
                    n = 0
                got.append(n)

        reader = threading.Thread(target=receive)
        reader.start()
        for _ in range(batches + 1):
            slots.acquire()
            write_frame(conn, payload)
        conn.shutdown(socket.SHUT_WR)
        reader.join()
        end = time.perf_counter()
        conn.close()
        peer.wait()
    return got[-1] / (end - started[0])


def in_process(func: str, rows: int, batch_rows: int) -> float:
    """rows/s of func in this process, no IPC (the row UDF's plain loop)."""
    f = FUNCS[func.removesuffix("-inproc")]
    batch = make_batch(func, batch_rows)
    batches = max(rows // batch_rows, 1)
    f(batch)
    start = time.perf_counter()
    for _ in range(batches):
        f(batch)
    return batches * batch_rows / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=4_000_000, help="rows per numeric run")
    p.add_argument(
        "--row-udf-rows", type=int, help="rows per upper run (default rows/4)"
    )
    p.add_argument("--batch", type=int, nargs="+", default=[10_000, 65_536, 262_144])
    p.add_argument(
        "--func",
        nargs="+",
        default=["identity", "numpy", "pandas", "upper", "upper-inproc"],
        choices=[*FUNCS, "upper-inproc"],
    )
    p.add_argument("--window", type=int, default=4, help="batches in flight")
    p.add_argument(
        "--runs", type=int, default=2, help="runs per figure; the best is printed"
    )
    p.add_argument("--serve", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        serve(args.serve, args.func[0])
        return
    for func in args.func:
        rows = (
            args.rows
            if not func.startswith("upper")
            else (args.row_udf_rows or args.rows // 4)
        )
        for batch_rows in args.batch:
            runs = []
            for _ in range(args.runs):
                if func.endswith("-inproc"):
                    runs.append(in_process(func, rows, batch_rows))
                else:
                    runs.append(over_ipc(func, rows, batch_rows, args.window))
            out = {
                "func": func,
                "batch": batch_rows,
                "rows": rows,
                "rows_per_s": max(runs),
            }
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
