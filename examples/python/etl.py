"""CSV to Parquet ETL with ``map_batches``.

A pandas function cleans each batch of ``data/orders.csv``: it drops rows whose
amount is not a number, normalizes currencies and converts amounts to euros; the
job writes Parquet part files. Run: ``python examples/python/etl.py [OUT_DIR]``.
"""

import sys
import tempfile
from pathlib import Path

import flinkgo as fg
import pandas as pd

DATA = Path(__file__).parent / "data"
USD_TO_EUR = 0.92


def clean(orders: pd.DataFrame) -> pd.DataFrame:
    """Drop unparsable amounts and convert every amount to euros."""
    amount = pd.to_numeric(orders["amount"], errors="coerce")
    currency = orders["currency"].str.strip().str.upper()
    euros = amount.where(currency == "EUR", amount * USD_TO_EUR)
    out = pd.DataFrame(
        {
            "order_id": orders["order_id"],
            "customer": orders["customer"],
            "eur": euros.round(2),
        }
    )
    return out[amount.notna()]


def main() -> None:
    out_dir = (
        sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="flinkgo-etl-")
    )
    env = fg.Environment(parallelism=2)
    orders = env.read_csv(
        str(DATA / "orders.csv"),
        schema={
            "order_id": "int64",
            "customer": "string",
            "amount": "string",
            "currency": "string",
        },
    )
    cleaned = orders.map_batches(
        clean, schema={"order_id": "int64", "customer": "string", "eur": "float64"}
    )
    cleaned.write_parquet(out_dir)
    env.execute("orders-etl")
    written = pd.read_parquet(out_dir)
    print(f"wrote {len(written)} orders to {out_dir}")
    print(written.groupby("customer")["eur"].sum().round(2).to_string())


if __name__ == "__main__":
    main()
