"""Warm workers: the first and the second collect() of a 3-row pipeline with a UDF.

Each round is a fresh Python process (so a fresh embedded runtime) that times its first
collect() (runtime start, worker start, job) and its second (the worker of the first job
reused), then a third with ``python.worker.idle-timeout: 0`` after it (reuse off: the
worker is started afresh, the runtime is warm). Prints every round and the medians:

    .venv/bin/python integration/bench/warm_workers.py [ROUNDS]   (default 10)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

ROUND = """
import json, time
import pandas as pd
import flinkgo as fg
from flinkgo import udf

@udf("int64")
def plus_one(x):
    return x + 1

def timed(env):
    df = env.from_pandas(pd.DataFrame({"x": [1, 2, 3]})).with_column("y", plus_one("x"))
    start = time.perf_counter()
    out = df.collect()
    assert out.to_pydict()["y"] == [2, 3, 4]
    return (time.perf_counter() - start) * 1000

env = fg.Environment()
first = timed(env)
second = timed(env)
cold = fg.Environment(config={"python.worker.idle-timeout": "0 ms"})
timed(cold)  # its worker is stopped at the end; the next one starts afresh
no_reuse = timed(cold)
print(json.dumps({"first": first, "second": second, "no_reuse": no_reuse}))
"""


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    results = []
    for i in range(rounds):
        done = subprocess.run(
            [sys.executable, "-c", ROUND],
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            return 1
        r = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(r)
        print(
            f"round {i + 1}: first {r['first']:.0f} ms, second {r['second']:.0f} ms, "
            f"second without reuse {r['no_reuse']:.0f} ms"
        )
    for key, label in (
        ("first", "first collect()"),
        ("second", "second collect() (warm worker)"),
        ("no_reuse", "a collect() without reuse (idle-timeout 0)"),
    ):
        print(
            f"median of {rounds}, {label}: {statistics.median(r[key] for r in results):.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
