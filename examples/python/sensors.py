"""Sensor pipeline: a pandas UDF, a filter and a keyed aggregation.

Run it with ``python examples/python/sensors.py`` (``make example``): it starts
the embedded local runtime, reads ``data/sensors.csv``, converts readings to
Fahrenheit in a pandas UDF running in Python worker processes, drops missing
readings, and aggregates per sensor.
"""

from pathlib import Path

import flinkgo as fg
import pandas as pd
from flinkgo import udf

DATA = Path(__file__).parent / "data"


@udf("float64", func_type="pandas", batch_size=4096)
def to_fahrenheit(celsius: pd.Series) -> pd.Series:
    """Convert a batch of Celsius readings to Fahrenheit."""
    return celsius * 9 / 5 + 32


def main() -> None:
    env = fg.Environment(parallelism=2)
    readings = env.read_csv(
        str(DATA / "sensors.csv"),
        schema={"sensor": "string", "ts": "string", "celsius": "float64"},
    )
    per_sensor = (
        readings.filter(fg.col("celsius").is_not_null())
        .with_column("fahrenheit", to_fahrenheit(fg.col("celsius")))
        .key_by("sensor")
        .agg(
            fg.count().alias("readings"),
            fg.mean("fahrenheit").alias("avg_f"),
            fg.max("fahrenheit").alias("max_f"),
        )
    )
    result = per_sensor.to_pandas().sort_values("sensor", ignore_index=True)
    print(result.to_string(index=False))


if __name__ == "__main__":
    main()
