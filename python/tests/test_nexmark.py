"""Nexmark-shaped events (env.nexmark): options, the plan, and queries on the runtime.

The generator itself (proportions, determinism, field ranges, ids) is tested beside it
in connectors/nexmark/reader_test.go; here the Python side: the options it checks, what
the plan carries, and Nexmark's q1 (a pandas UDF converting prices to euros) on the
real runtime against pandas on the same events.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _runtime, udf
from flinkgo._proto import plan_pb2
from flinkgo.types import schema_from_ipc_bytes


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


def test_nexmark_options_in_the_plan():
    env = fg.Environment()
    env.nexmark("auction", events=5000, events_per_second=250.5, seed=-3).print()
    env.nexmark("person", events=7).print()
    plan = plan_pb2.JobPlan.FromString(env.plan().to_bytes())
    auction, person = plan.nodes[0], plan.nodes[2]
    src = auction.source.nexmark
    assert (src.kind, src.events, src.events_per_second, src.seed) == (
        plan_pb2.NexmarkSource.AUCTION,
        5000,
        250.5,
        -3,
    )
    assert auction.name == "nexmark auction"
    assert person.source.nexmark.events_per_second == 0.0
    assert schema_from_ipc_bytes(person.output_schema).names == [
        "id",
        "name",
        "email_address",
        "credit_card",
        "city",
        "state",
        "date_time",
        "extra",
    ]
    assert schema_from_ipc_bytes(auction.output_schema).field("expires").type == pa.timestamp(
        "ms", tz="UTC"
    )


def test_nexmark_errors():
    env = fg.Environment()
    with pytest.raises(ValueError, match="nexmark: kind must be one of 'bid', 'auction', 'person'"):
        env.nexmark("bids", events=10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nexmark: kind must be one of .* got 3 "):
        env.nexmark(3, events=10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nexmark: events must be a positive integer"):
        env.nexmark("bid", events=0)
    with pytest.raises(ValueError, match=r"nexmark: events must be a positive integer \(1 to"):
        env.nexmark("bid", events=2**62 + 1)
    with pytest.raises(ValueError, match=r"nexmark: events must be a positive integer .*got None"):
        env.nexmark("bid", events=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nexmark: events must be a positive integer, got 1.5"):
        env.nexmark("bid", events=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nexmark: events_per_second must be a positive finite"):
        env.nexmark("bid", events=10, events_per_second=-1)
    with pytest.raises(TypeError, match="nexmark: seed must be an integer"):
        env.nexmark("bid", events=10, seed="1")  # type: ignore[arg-type]


@udf("float64", func_type="pandas")
def dollar_to_euro(price):
    return price * 0.908


@pytest.mark.parametrize("p", [1, 2])
def test_q1_currency_conversion_matches_pandas(runtime, p):
    # Nexmark q1: every bid with its price in euros, here with a pandas UDF.
    env = fg.Environment(parallelism=p)
    bids = env.nexmark("bid", events=20_000, seed=11)
    got = bids.with_column("price", dollar_to_euro(fg.col("price"))).to_pandas()

    # The same events, read as they are (the generator does not depend on the
    # parallelism), converted by pandas.
    want = fg.Environment(parallelism=1).nexmark("bid", events=20_000, seed=11).to_pandas()
    assert len(want) == 18_400  # 46 of every 50 events are bids
    want["price"] = want["price"] * 0.908

    def ordered(df: pd.DataFrame) -> pd.DataFrame:
        return df.sort_values(["date_time", "extra"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(ordered(got), ordered(want), check_exact=True)


def test_bids_join_auctions_of_the_same_stream(runtime):
    # The three kinds of one seed are views of one stream: nearly every bid names an
    # auction of it (a few name an auction a little ahead, as Nexmark's bids do).
    env = fg.Environment(parallelism=2)
    bids = env.nexmark("bid", events=10_000, seed=4).to_pandas()
    auctions = env.nexmark("auction", events=10_000, seed=4).to_pandas()
    persons = env.nexmark("person", events=10_000, seed=4).to_pandas()
    assert (len(bids), len(auctions), len(persons)) == (9200, 600, 200)
    assert sorted(auctions["id"]) == list(range(1000, 1600))
    assert bids["auction"].isin(auctions["id"]).mean() > 0.99
    assert bids["bidder"].isin(persons["id"]).mean() > 0.99
    assert auctions["seller"].isin(persons["id"]).mean() > 0.99
