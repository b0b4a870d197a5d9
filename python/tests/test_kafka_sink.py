"""write_kafka: the plan it builds, its argument errors, and jobs writing to a real broker.

The records are read back with confluent-kafka (librdkafka, conftest's ``kafka_broker``), a
client independent of the runtime's franz-go, as a ``read_committed`` consumer.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from _polling import within

import flinkgo as fg
from flinkgo import _runtime
from flinkgo._proto import plan_pb2 as pb


@pytest.fixture
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"id": range(n), "name": [f"n{i}" for i in range(n)]})


def committed(broker, topic: str, rows: int) -> list[bytes]:
    """The values a read_committed reader sees once at least `rows` are visible.

    The broker writes the commit markers just after the commit returns, so the last
    stable offset can trail the end of the job by a moment: this polls for it.
    """
    values: list[bytes] = []

    def visible() -> bool:
        values[:] = [v for _, v in broker.records(topic, read_committed=True)]
        return len(values) >= rows

    within(visible, 60)  # the caller checks the rows
    return values


def sink_message(env: fg.Environment) -> pb.KafkaSink:
    return pb.JobPlan.FromString(env.plan("t").to_bytes()).nodes[-1].sink.kafka


# --- the plan --------------------------------------------------------------------------------


def test_plan_of_a_kafka_sink():
    env = fg.Environment()
    env.from_pandas(frame(1)).write_kafka(
        "out",
        bootstrap_servers="127.0.0.1:9092",
        key="name",
        value_format="csv",
        transactional_id_prefix="job-a",
        properties={"transaction.timeout.ms": 60000, "compression.type": "zstd"},
    )
    msg = sink_message(env)
    assert msg.topic == "out" and msg.bootstrap_servers == "127.0.0.1:9092"
    assert msg.key_column == "name"
    assert msg.value_format == pb.KafkaSource.CSV
    assert msg.delivery == pb.KafkaSink.EXACTLY_ONCE
    assert msg.transactional_id_prefix == "job-a"
    assert dict(msg.properties) == {"transaction.timeout.ms": "60000", "compression.type": "zstd"}

    env = fg.Environment()
    env.from_pandas(frame(1)).write_kafka("out", bootstrap_servers="h:1", delivery="none")
    assert sink_message(env).delivery == pb.KafkaSink.NONE


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"delivery": "exactly_once"}, ValueError, r"delivery must be one of 'exactly-once'"),
        ({}, ValueError, r"needs transactional_id_prefix="),
        ({"delivery": "none", "key": "nope"}, fg.SchemaError, r"key must be None or one of"),
        ({"delivery": "none", "value_format": "avro"}, ValueError, r"value_format must be"),
        ({"delivery": "none", "value_format": "raw"}, fg.SchemaError, r"raw.*one binary or string"),
        ({"delivery": "none", "properties": {"a": 1.5}}, TypeError, r"properties must map"),
    ],
)
def test_bad_options_are_named(kwargs, error, match):
    df = fg.Environment().from_pandas(frame(1))
    with pytest.raises(error, match=match):
        df.write_kafka("out", bootstrap_servers="h:1", **kwargs)


def test_raw_writes_the_one_column_besides_the_key():
    env = fg.Environment()
    env.from_pandas(frame(1)).write_kafka(
        "out", bootstrap_servers="h:1", key="id", value_format="raw", delivery="none"
    )
    assert sink_message(env).value_format == pb.KafkaSource.RAW


# --- jobs against the broker -------------------------------------------------------------


@pytest.mark.parametrize("delivery", ["exactly-once", "at-least-once", "none"])
def test_kafka_to_pandas_udf_to_kafka(runtime, kafka_broker, delivery, tmp_path):
    source = kafka_broker.create_topic("sink-in", 2)
    kafka_broker.produce(
        source, [(i % 2, None, json.dumps({"id": i}).encode()) for i in range(500)]
    )
    target = kafka_broker.create_topic("sink-out", 2)

    @fg.udf("int64", func_type="pandas")
    def doubled(x: pd.Series) -> pd.Series:
        return x * 2

    env = fg.Environment(
        parallelism=2,
        config={
            "execution.checkpointing.interval": "100 ms",
            "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        },
    )
    env.read_kafka(
        source, bootstrap_servers=kafka_broker.bootstrap, schema={"id": "int64"}, bounded="latest"
    ).with_column("y", doubled(fg.col("id"))).write_kafka(
        target,
        bootstrap_servers=kafka_broker.bootstrap,
        key="id",
        delivery=delivery,
        transactional_id_prefix=f"test-{target}",
    )
    env.execute("kafka-to-kafka")
    values = [json.loads(v) for v in committed(kafka_broker, target, 500)]
    assert sorted(v["id"] for v in values) == list(range(500))
    assert all(v["y"] == 2 * v["id"] for v in values)


def test_csv_values_and_keys(runtime, kafka_broker):
    target = kafka_broker.create_topic("sink-csv", 1)
    env = fg.Environment(parallelism=1)
    env.from_pandas(frame(3)).write_kafka(
        target,
        bootstrap_servers=kafka_broker.bootstrap,
        key="name",
        value_format="csv",
        transactional_id_prefix=f"test-{target}",
    )
    env.execute("csv")
    assert committed(kafka_broker, target, 3) == [
        b"0,n0",
        b"1,n1",
        b"2,n2",
    ]


def test_an_unreachable_broker_names_the_sink_and_address(runtime):
    env = fg.Environment(parallelism=1)
    env.from_pandas(frame(3)).write_kafka(
        "out", bootstrap_servers="127.0.0.1:1", transactional_id_prefix="unreachable"
    )
    with pytest.raises(fg.FlinkgoError, match=r'write_kafka to "out".*127\.0\.0\.1:1'):
        env.execute("unreachable")


def test_an_unknown_property_fails_at_submission(runtime, kafka_broker):
    env = fg.Environment(parallelism=1)
    env.from_pandas(frame(3)).write_kafka(
        "out",
        bootstrap_servers=kafka_broker.bootstrap,
        delivery="none",
        properties={"acks": "1"},
    )
    with pytest.raises(fg.FlinkgoError, match=r'"acks" is not supported'):
        env.execute("props")
