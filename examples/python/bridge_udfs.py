"""UDFs of the Go bridge example (``make example-bridge``).

The Go program ``examples/go/bridge`` streams generated sensor readings
through these UDFs on real Python workers.
"""

import pandas as pd
from flinkgo import udf


@udf("float64", func_type="pandas", batch_size=65_536)
def to_fahrenheit(celsius: pd.Series) -> pd.Series:
    """Convert a batch of Celsius readings to Fahrenheit."""
    return celsius * 9 / 5 + 32


@udf("string", func_type="pandas", batch_size=65_536)
def classify(fahrenheit: pd.Series) -> pd.Series:
    """Label each reading cold, mild or hot."""
    return pd.cut(
        fahrenheit, [-1e9, 50, 80, 1e9], labels=["cold", "mild", "hot"]
    ).astype(str)
