"""Configuration keys on the real runtime: unknown keys and bad values fail the job at
submission with a message naming them (and the close match of a misspelt key); known
keys run."""

from __future__ import annotations

import pandas as pd
import pytest

import flinkgo as fg

ROWS = pd.DataFrame({"x": range(10)})


def env_with(config: dict[str, str]) -> fg.Environment:
    env = fg.Environment(parallelism=1, config=config)
    env.from_pandas(ROWS).print()
    return env


def test_unknown_key_fails_with_the_close_match():
    env = env_with({"python.fn-execution.bundle.sise": "1000"})
    want = (
        'unknown key "python.fn-execution.bundle.sise": '
        'did you mean "python.fn-execution.bundle.size"?'
    )
    with pytest.raises(fg.InvalidPlanError) as explained:
        env.explain()
    assert want in str(explained.value)
    with pytest.raises(fg.JobFailedError) as executed:
        env.execute("typo")
    assert executed.value.kind == "PLAN"
    assert want in str(executed.value)


def test_every_problem_is_reported_at_once():
    env = env_with(
        {"execution.checkpointing.intervall": "1 s", "python.fn-execution.bundle.time": "soon"}
    )
    with pytest.raises(fg.JobFailedError) as info:
        env.execute("two problems")
    message = str(info.value)
    assert 'did you mean "execution.checkpointing.interval"?' in message
    assert 'python.fn-execution.bundle.time="soon": expected a duration' in message


def test_known_keys_run():
    env = fg.Environment(
        parallelism=1,
        config={"python.fn-execution.bundle.size": "3", "python.fn-execution.bundle.time": "1 h"},
    )

    @fg.udf("int64")
    def double(x):
        return 2 * x

    out = env.from_pandas(ROWS).with_column("y", double(fg.col("x"))).to_pandas()
    assert sorted(out["y"]) == [2 * x for x in range(10)]


@pytest.mark.parametrize("transport", ["shared-memory", "unix-socket", "grpc-stream"])
def test_every_worker_transport_runs(transport):
    env = fg.Environment(parallelism=1, config={"python.worker.transport": transport})

    @fg.udf("int64", func_type="pandas")
    def plus_one(x):
        return x + 1

    out = env.from_pandas(ROWS).with_column("y", plus_one(fg.col("x"))).to_pandas()
    assert sorted(out["y"]) == [x + 1 for x in range(10)]


def test_unknown_worker_transport_is_named():
    env = env_with({"python.worker.transport": "pigeon"})
    with pytest.raises(fg.JobFailedError) as info:
        env.execute("bad transport")
    assert 'python.worker.transport="pigeon"' in str(info.value)
    assert "shared-memory" in str(info.value)
