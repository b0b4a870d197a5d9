"""Text pipeline: a general UDF and an async UDF, each with its own concurrency.

``normalize`` runs in 2 worker processes at once (``concurrency=2`` becomes its
operator's parallelism); ``lookup`` is an ``async def``: each worker keeps up to 8
calls in flight on an asyncio loop, as a UDF calling a remote service would.
Run: ``python examples/python/text.py``.
"""

import asyncio
from pathlib import Path

import flinkgo as fg
from flinkgo import udf

DATA = Path(__file__).parent / "data"


@udf("string", concurrency=2)
def normalize(text: str) -> str:
    """Lower-case a line and strip its trailing ``#n`` tag."""
    return text.rsplit(" #", 1)[0].lower()


@udf("int64", concurrency=8)
async def lookup(text: str) -> int:
    """Pretend to ask a remote service for the line's score."""
    await asyncio.sleep(0.001)
    return sum(map(ord, text)) % 100


def main() -> None:
    env = fg.Environment()
    lines = env.read_jsonl(str(DATA / "lines.jsonl"))
    scored = lines.with_column("clean", normalize(fg.col("text"))).with_column(
        "score", lookup(fg.col("clean"))
    )
    out = (
        scored.select("id", "clean", "score")
        .to_pandas()
        .sort_values("id", ignore_index=True)
    )
    print(out.head(8).to_string(index=False))
    print(f"{len(out)} lines scored; mean score {out['score'].mean():.1f}")


if __name__ == "__main__":
    main()
