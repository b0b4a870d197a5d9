"""Orders enriched with their customers: a regular left join and a pandas UDF.

Run it with ``python examples/python/orders.py``. It generates a customer table and an
order stream (a tenth of the orders have no customer id, some name a customer that does
not exist), then, on the embedded local runtime:

1. sorts each order into a size band in a pandas UDF running in Python workers;
2. joins each order with its customer (``join(..., how="left")``): both streams are
   kept in keyed state, so an order that arrives before its customer comes out at once
   padded with nulls and is retracted (``-D``) and emitted joined when the customer
   arrives; an order without a customer id can never match, so it comes out padded at
   once and is never stored;
3. returns the final table: the changelog applied.

``pipeline`` is what the tests compare with pandas ``merge`` on the same data.
"""

from __future__ import annotations

import flinkgo as fg
import numpy as np
import pandas as pd

COUNTRIES = np.array(["DE", "FR", "IT", "NL", "PL"])


def generate(
    orders: int = 20_000, customers: int = 500, seed: int = 7
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (orders, customers); 10 % of orders have a NULL customer id, 2 % an unknown one."""
    rng = np.random.default_rng(seed)
    cust = pd.DataFrame(
        {
            "customer_id": pd.array(np.arange(customers), dtype="Int64"),
            "name": [f"customer {i}" for i in range(customers)],
            "country": COUNTRIES[rng.integers(0, len(COUNTRIES), customers)],
        }
    ).sample(frac=1, random_state=seed, ignore_index=True)
    ids = pd.array(rng.integers(0, customers, orders), dtype="Int64")
    unknown = rng.random(orders) < 0.02
    ids[unknown] = rng.integers(customers, customers + 50, int(unknown.sum()))
    ids[rng.random(orders) < 0.1] = pd.NA
    order = pd.DataFrame(
        {
            "order_id": np.arange(orders),
            "customer_id": ids,
            "amount": rng.gamma(2.0, 40.0, orders).round(2),
        }
    )
    return order, cust


@fg.udf("string", func_type="pandas")
def band(amount: pd.Series) -> pd.Series:
    """Sort an order into a size band."""
    return pd.Series(
        np.where(amount < 50, "small", np.where(amount < 150, "medium", "large"))
    )


def pipeline(
    env: fg.Environment, orders: pd.DataFrame, customers: pd.DataFrame
) -> fg.DataFrame:
    """Every order with its band and its customer's name and country (nulls when none)."""
    banded = (
        env.from_pandas(orders)
        .with_column("band", band(fg.col("amount")))
        .uid("orders")
    )
    known = env.from_pandas(customers).uid("customers")
    return banded.join(known, on="customer_id", how="left", state_ttl="1 h")


def final_table(df: pd.DataFrame) -> pd.DataFrame:
    """Apply a changelog's row kinds when the result still carries them (``_row_kind``)."""
    if "_row_kind" not in df.columns:
        return df
    keys = [c for c in df.columns if c != "_row_kind"]
    sign = df["_row_kind"].map({0: 1, 1: -1, 2: 1, 3: -1})
    counted = (
        df[keys].assign(_n=sign).groupby(keys, dropna=False, sort=False)["_n"].sum()
    )
    live = counted[counted > 0]
    return live.index.repeat(live.to_numpy()).to_frame(index=False)


def main() -> None:
    """Run the pipeline on generated data and print revenue per country and band."""
    orders, customers = generate()
    env = fg.Environment(parallelism=2)
    out = final_table(pipeline(env, orders, customers).to_pandas())
    out["country"] = out["country"].fillna("(unknown)")
    summary = out.groupby(["country", "band"], as_index=False).agg(
        orders=("order_id", "size"), revenue=("amount", "sum")
    )
    print(summary.round(2).to_string(index=False))


if __name__ == "__main__":
    main()
