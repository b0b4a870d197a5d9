"""Ad clicks in event time: watermarks, an interval join, a pandas UDF and UDAF, windows.

Run it with ``python examples/python/clicks.py``. It generates an impression stream
and a click stream (a click follows its impression by up to 8 minutes; both streams
arrive up to 20 seconds out of order), then, on the embedded local runtime:

1. gives both streams an event time and watermarks (``with_watermark``);
2. joins each impression with its click within 10 minutes (``interval_join``,
   ``how="left"``: an impression never clicked comes out once the watermark proves
   no click can match it any more);
3. names each ad's campaign in a pandas UDF running in Python workers;
4. counts impressions and clicks per campaign in 5-minute tumbling windows, with the
   median delay to a click computed by a pandas UDAF (a Python aggregate function:
   one call per window, many windows per worker call).

``pipeline`` is what the tests compare with pandas on the same data.
"""

from __future__ import annotations

import flinkgo as fg
import numpy as np
import pandas as pd

CAMPAIGNS = np.array(["spring", "summer", "autumn"])


def generate(
    impressions: int = 20_000, seed: int = 7
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (impressions, clicks): one impression every 30 ms, 30 % of them clicked."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-12-04 09:00:00")
    ts = start + pd.to_timedelta(np.arange(impressions) * 30, unit="ms")
    imps = pd.DataFrame(
        {
            "imp_id": np.arange(impressions),
            "ad": rng.integers(0, 12, impressions),
            "ts": ts,
        }
    )
    clicked = imps[rng.random(impressions) < 0.3]
    delay = pd.to_timedelta(rng.integers(1, 8 * 60_000, len(clicked)), unit="ms")
    clicks = pd.DataFrame(
        {
            "imp_id": clicked["imp_id"].to_numpy(),
            "ts": (clicked["ts"] + delay).to_numpy(),
        }
    )
    return shuffle_locally(imps, rng), shuffle_locally(clicks.sort_values("ts"), rng)


def shuffle_locally(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Disorder rows by up to 20 s of event time, as a real stream arrives."""
    jitter = pd.to_timedelta(rng.integers(0, 20_000, len(df)), unit="ms")
    order = np.argsort((df["ts"] + jitter).to_numpy(), kind="stable")
    return df.iloc[order].reset_index(drop=True)


@fg.udf("string", func_type="pandas")
def campaign(ad: pd.Series) -> pd.Series:
    """Name the campaign an ad belongs to."""
    return pd.Series(CAMPAIGNS[ad.to_numpy() % len(CAMPAIGNS)])


@fg.udaf("double")
def median_delay_s(shown: pd.Series, clicked: pd.Series) -> float | None:
    """Median seconds from impression to click, over the window's clicked impressions."""
    delay = (clicked - shown).dt.total_seconds().dropna()
    return float(delay.median()) if len(delay) else None


def pipeline(
    env: fg.Environment, imps: pd.DataFrame, clicks: pd.DataFrame
) -> fg.DataFrame:
    """Impressions and clicks per campaign and 5-minute window of impression time."""
    impressions = env.from_pandas(imps).with_watermark("ts", "20 s").uid("impressions")
    clicked = env.from_pandas(clicks).with_watermark("ts", "20 s").uid("clicks")
    joined = impressions.interval_join(
        clicked,
        on="imp_id",
        left_time="ts",
        right_time="ts",
        lower="0 s",
        upper="10 min",
        how="left",
    )
    return (
        joined.with_column("campaign", campaign(fg.col("ad")))
        .key_by("campaign")
        .window(fg.tumble("ts", "5 min"))
        .agg(
            fg.count().alias("impressions"),
            fg.count("ts_right").alias("clicks"),
            median_delay_s("ts", "ts_right"),
        )
    )


def main() -> None:
    """Run the pipeline on generated data and print the click-through rate per window."""
    imps, clicks = generate()
    env = fg.Environment(parallelism=2)
    out = pipeline(env, imps, clicks).to_pandas()
    out["ctr"] = (out["clicks"] / out["impressions"]).round(3)
    print(
        out.sort_values(["window_start", "campaign"], ignore_index=True).to_string(
            index=False
        )
    )


if __name__ == "__main__":
    main()
