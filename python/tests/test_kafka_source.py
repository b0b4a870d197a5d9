"""read_kafka: the plan it builds, and jobs reading a real broker (conftest's ``kafka_broker``).

The records are produced with confluent-kafka (librdkafka), a client independent of the
runtime's franz-go, and read back through the runtime: every record once, its key,
timestamp, partition and offset as columns, through a pandas UDF.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pandas as pd
import pyarrow as pa
import pytest

import flinkgo as fg
from flinkgo import _runtime
from flinkgo._proto import plan_pb2 as pb

SCHEMA = {"id": "int64", "name": "string", "amount": "double"}


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


def source_message(env: fg.Environment, df: fg.DataFrame) -> pb.KafkaSource:
    df.print()
    msg = pb.JobPlan.FromString(env.plan("t").to_bytes()).nodes[0].source.kafka
    return msg


# --- the plan --------------------------------------------------------------------------------


def test_plan_of_a_kafka_source():
    env = fg.Environment()
    df = env.read_kafka(
        ["a", "b"],
        bootstrap_servers="127.0.0.1:9092",
        schema=SCHEMA,
        group_id="g",
        starting_offsets={("a", 0): 5, ("b", 1): 7},
        bounded="latest",
        key_column="k",
        timestamp_column="ts",
        partition_column="p",
        offset_column="o",
        topic_column="t",
        properties={"isolation.level": "read_committed", "partition.discovery.interval.ms": 100},
    )
    assert df.schema == pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("amount", pa.float64()),
            ("k", pa.binary()),
            pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("p", pa.int32(), nullable=False),
            pa.field("o", pa.int64(), nullable=False),
            pa.field("t", pa.string(), nullable=False),
        ]
    )
    msg = source_message(env, df)
    assert list(msg.topics) == ["a", "b"]
    assert msg.bounded_latest and msg.group_id == "g"
    assert msg.start == pb.KafkaSource.OFFSETS
    assert [(o.topic, o.partition, o.offset) for o in msg.start_offsets] == [
        ("a", 0, 5),
        ("b", 1, 7),
    ]
    assert dict(msg.properties) == {
        "isolation.level": "read_committed",
        "partition.discovery.interval.ms": "100",
    }


def test_pattern_timestamp_start_and_raw_default_schema():
    env = fg.Environment()
    when = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)
    df = env.read_kafka(
        re.compile("events-.*"),
        bootstrap_servers="h:1",
        value_format="raw",
        starting_offsets=when,
    )
    assert df.schema == pa.schema([("value", pa.binary())])
    msg = source_message(env, df)
    assert msg.topic_pattern == "events-.*" and not msg.topics
    assert msg.start == pb.KafkaSource.TIMESTAMP
    assert msg.start_timestamp_ms == int(when.timestamp() * 1000)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"schema": None}, fg.InvalidArgumentError, "needs schema="),
        ({"value_format": "avro"}, fg.InvalidArgumentError, "value_format must be one of"),
        ({"bounded": "earliest"}, fg.InvalidArgumentError, "bounded must be None"),
        ({"starting_offsets": "middle"}, fg.InvalidArgumentError, "starting_offsets must be"),
        (
            {"starting_offsets": dt.datetime(2024, 1, 1)},
            fg.InvalidArgumentError,
            "has no time zone",
        ),
        ({"key_column": "id"}, fg.SchemaError, "key_column='id' is also a column"),
        ({"bootstrap_servers": ""}, fg.InvalidArgumentError, "bootstrap_servers must be"),
        (
            {"value_format": "raw", "schema": {"a": "int64"}},
            fg.SchemaError,
            "one value column, binary or string",
        ),
    ],
)
def test_bad_options_are_named(kwargs, error, match):
    args = {"bootstrap_servers": "h:1", "schema": SCHEMA} | kwargs
    with pytest.raises(error, match=match):
        fg.Environment().read_kafka("t", **args)


def test_partition_keys_need_topics_when_several():
    with pytest.raises(fg.InvalidArgumentError, match=r"\(topic, partition\) pairs"):
        fg.Environment().read_kafka(
            ["a", "b"], bootstrap_servers="h:1", schema=SCHEMA, starting_offsets={0: 1}
        )


# --- jobs on a real broker -------------------------------------------------------------------


def produce_events(broker, topic: str, n: int, partitions: int) -> list[dict]:
    events = [{"id": i, "name": f"user-{i % 7}", "amount": i / 4} for i in range(n)]
    broker.produce(
        topic,
        [(e["id"] % partitions, str(e["id"]).encode(), json.dumps(e).encode()) for e in events],
    )
    return events


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_bounded_read_of_four_partitions(runtime, kafka_broker, parallelism):
    topic = kafka_broker.create_topic(f"events-p{parallelism}", 4)
    events = produce_events(kafka_broker, topic, 2000, 4)
    env = fg.Environment(parallelism=parallelism)
    df = env.read_kafka(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        schema=SCHEMA,
        bounded="latest",
        key_column="key",
        timestamp_column="ts",
        partition_column="partition",
        offset_column="offset",
    )
    got = df.to_pandas().sort_values("id").reset_index(drop=True)
    want = pd.DataFrame(events)
    pd.testing.assert_frame_equal(got[["id", "name", "amount"]], want)
    assert list(got["key"]) == [str(i).encode() for i in range(2000)]
    assert (got["partition"] == got["id"] % 4).all()
    # Partition p holds the ids p, p+4, ... at consecutive offsets. They start at 0 on a
    # quiet broker; once, under heavy load, partition 0 started at 65 (cause not found).
    for _, part in got.groupby("partition"):
        assert (part["offset"].diff().dropna() == 1).all(), part[["id", "offset"]]
    now = pd.Timestamp.now(tz="UTC")
    assert ((now - got["ts"]) < pd.Timedelta(minutes=10)).all()


def test_csv_and_raw_values_through_a_pandas_udf(runtime, kafka_broker):
    topic = kafka_broker.create_topic("csv", 2)
    kafka_broker.produce(topic, [(i % 2, None, f"{i},item {i}".encode()) for i in range(100)])

    @fg.udf("int64", func_type="pandas")
    def doubled(x: pd.Series) -> pd.Series:
        return x * 2

    env = fg.Environment(parallelism=2)
    csv = env.read_kafka(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        value_format="csv",
        schema={"n": "int64", "label": "string"},
        bounded="latest",
    ).with_column("twice", doubled(fg.col("n")))
    got = csv.to_pandas().sort_values("n").reset_index(drop=True)
    assert list(got["n"]) == list(range(100))
    assert list(got["twice"]) == [2 * i for i in range(100)]
    assert got["label"][3] == "item 3"

    raw = env.read_kafka(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        value_format="raw",
        schema={"line": "string"},
        bounded="latest",
    ).to_pandas()
    assert sorted(raw["line"]) == sorted(f"{i},item {i}" for i in range(100))


def test_a_value_that_does_not_decode_names_its_offset(runtime, kafka_broker):
    topic = kafka_broker.create_topic("bad-json", 1)
    kafka_broker.produce(topic, [(0, None, b'{"id": 1}'), (0, None, b"not json")])
    df = fg.Environment(parallelism=1).read_kafka(
        topic, bootstrap_servers=kafka_broker.bootstrap, schema={"id": "int64"}, bounded="latest"
    )
    with pytest.raises(fg.JobFailedError, match=r"partition 0 offset 1: the value does not decode"):
        df.collect()


def test_a_missing_topic_and_an_unknown_property_fail_the_job(runtime, kafka_broker):
    env = fg.Environment(parallelism=1)
    missing = env.read_kafka(
        "no-such-topic", bootstrap_servers=kafka_broker.bootstrap, schema=SCHEMA, bounded="latest"
    )
    with pytest.raises(fg.JobFailedError, match="no-such-topic"):
        missing.collect()
    topic = kafka_broker.create_topic("props", 1)
    unknown = env.read_kafka(
        topic,
        bootstrap_servers=kafka_broker.bootstrap,
        schema=SCHEMA,
        bounded="latest",
        properties={"auto.offset.reset": "earliest"},
    )
    with pytest.raises(fg.FlinkgoError, match=r"auto.offset.reset.*use starting_offsets="):
        unknown.collect()


def test_each_partition_has_its_own_watermark(runtime, kafka_broker):
    # Partition 0 is a day ahead of partition 1 in event time (the Kafka timestamps).
    # One watermark for both would make partition 1's rows late once partition 0's came;
    # with a watermark per partition (the assigner chained to the source) none is late.
    topic = kafka_broker.create_topic("watermarks", 2)
    day = 86_400_000
    n = 500
    records = [(p, None, b"{}") for p in (0, 1) for _ in range(n)]
    stamps = [day * (1 - p) + i * 1000 for p in (0, 1) for i in range(n)]
    kafka_broker.produce(topic, records, timestamps_ms=stamps)
    env = fg.Environment(parallelism=1)
    counts = (
        env.read_kafka(
            topic,
            bootstrap_servers=kafka_broker.bootstrap,
            schema={"note": "string"},
            timestamp_column="ts",
            partition_column="partition",
            bounded="latest",
        )
        .with_watermark("ts", "1 s")
        .window(fg.tumble("ts", "10 s"))
        .agg(fg.count().alias("n"))
        .uid("w")
    )
    counts.print()
    window = env.execute().operator("w")
    assert window.num_late_records_dropped == 0
    assert window.rows_in == 2 * n
