"""A streaming job that checkpoints, stops with a savepoint and resumes from it.

Run it with ``python examples/python/savepoints.py``. An endless stream of readings
goes through a pandas UDF into a keyed aggregation whose state the runtime keeps in
Pebble and checkpoints every second; Parquet part files are published as checkpoints
complete, so they hold every reading exactly once. After a few seconds the job stops
with a savepoint, then starts again from it at another parallelism and carries on
counting where it stopped.
"""

import sys
import tempfile
import time
from pathlib import Path

import flinkgo as fg
import pandas as pd
from flinkgo import udf


@udf("float64", func_type="pandas")
def to_fahrenheit(celsius: pd.Series) -> pd.Series:
    """Convert a batch of Celsius readings to Fahrenheit."""
    return celsius * 9 / 5 + 32


def run(work: Path, parallelism: int, seconds: float, restore_from: str | None) -> str:
    """Run the job for `seconds`, stop it with a savepoint and return the savepoint."""
    config = {
        "execution.checkpointing.interval": "1 s",
        "execution.checkpointing.dir": str(work / "checkpoints"),
        "execution.checkpointing.savepoint-dir": str(work / "savepoints"),
    }
    if restore_from:
        config["execution.state-recovery.path"] = restore_from
    env = fg.Environment(parallelism=parallelism, config=config)
    readings = env.datagen(
        schema={"id": "int64", "celsius": "float64"}, rows_per_second=20_000
    ).uid("readings")
    per_sensor = (
        readings.with_column("sensor", fg.col("id") % 5)
        .with_column("fahrenheit", to_fahrenheit(fg.col("celsius") * 40))
        .key_by("sensor")
        .agg(fg.count().alias("readings"), fg.max("fahrenheit").alias("max_f"))
        .uid("per-sensor")
    )
    # An endless aggregation emits a changelog: written as upserts with a row_kind column.
    per_sensor.write_parquet(work / "per_sensor", changelog=True).uid("parquet")
    job = env.execute_async("sensors, streaming")
    time.sleep(seconds)
    savepoint = job.stop_with_savepoint()
    result = job.result()
    states = " -> ".join(state for state, _ in result.states)
    print(f"parallelism {parallelism}: {states}; savepoint {savepoint}")
    return savepoint


def main(seconds: float = 4.0) -> None:
    with tempfile.TemporaryDirectory(prefix="flinkgo-savepoints-") as tmp:
        work = Path(tmp)
        savepoint = run(work, parallelism=2, seconds=seconds, restore_from=None)
        run(work, parallelism=1, seconds=seconds, restore_from=savepoint)
        # An upsert stream (+I, then +U): each sensor's last row is its count so far.
        rows = pd.read_parquet(work / "per_sensor")
        latest = rows.groupby("sensor").agg(
            readings=("readings", "max"), max_f=("max_f", "max")
        )
        print(latest.to_string())
        print(f"{int(latest['readings'].sum()):,} readings counted across both runs")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
