"""Checks and plan messages of the Kafka source (:meth:`Environment.read_kafka`).

The runtime reads Kafka (connectors/kafka/source.go, on franz-go); this module turns the
Python arguments into the ``KafkaSource`` plan message and the source's output schema:
the value columns of `schema`, then the metadata columns asked for. It connects to
nothing: a topic that does not exist is reported when the job starts.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flinkgo import _sources
from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError, SchemaError

if TYPE_CHECKING:
    from flinkgo._proto import plan_pb2

OP = "read_kafka"

#: The types of the metadata columns, by the option that names them.
METADATA_TYPES: dict[str, pa.DataType] = {
    "key_column": pa.binary(),
    "timestamp_column": pa.timestamp("ms", tz="UTC"),
    "partition_column": pa.int32(),
    "offset_column": pa.int64(),
    "topic_column": pa.string(),
}

_FORMATS = ("json", "raw", "csv")


def kafka_source(
    topics: Any,
    *,
    bootstrap_servers: Any,
    schema: Any,
    value_format: Any,
    group_id: Any,
    starting_offsets: Any,
    bounded: Any,
    metadata: Mapping[str, Any],
    properties: Any,
) -> tuple[plan_pb2.KafkaSource, pa.Schema, str]:
    """Return the plan message, the output schema and a name for the source."""
    from flinkgo._proto import plan_pb2 as pb

    msg = pb.KafkaSource()
    if isinstance(topics, re.Pattern):
        if not isinstance(topics.pattern, str):
            raise ArgumentTypeError(f"{OP}: the topic pattern must be a str pattern")
        msg.topic_pattern = topics.pattern
        name = f"{OP}(/{topics.pattern}/)"
    else:
        names = [topics] if isinstance(topics, str) else topics
        if not isinstance(names, Sequence) or not all(isinstance(t, str) for t in names):
            raise ArgumentTypeError(
                f"{OP}: topics must be a topic name, a list of names or a re.Pattern, "
                f"got {type(topics).__name__}"
            )
        if not names or any(not t for t in names):
            raise InvalidArgumentError(f"{OP}: topics must name at least one topic: {topics!r}")
        msg.topics.extend(names)
        name = f"{OP}({', '.join(names)})"

    if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
        raise InvalidArgumentError(
            f"{OP}: bootstrap_servers must be 'host:port' (or several, comma-separated), "
            f"got {bootstrap_servers!r}"
        )
    msg.bootstrap_servers = bootstrap_servers
    if group_id is not None:
        if not isinstance(group_id, str) or not group_id:
            raise InvalidArgumentError(f"{OP}: group_id must be a non-empty str or None")
        msg.group_id = group_id

    _starting_offsets(msg, starting_offsets, list(msg.topics))
    if bounded not in (None, "latest"):
        raise InvalidArgumentError(
            f"{OP}: bounded must be None (read forever) or 'latest' (stop at the latest "
            f"offsets of the start), got {bounded!r}"
        )
    msg.bounded_latest = bounded == "latest"

    if value_format not in _FORMATS:
        raise InvalidArgumentError(
            f"{OP}: value_format must be one of {', '.join(map(repr, _FORMATS))}, "
            f"got {value_format!r}"
        )
    msg.value_format = {
        "json": pb.KafkaSource.JSON,
        "raw": pb.KafkaSource.RAW,
        "csv": pb.KafkaSource.CSV,
    }[value_format]
    if schema is None:
        if value_format != "raw":
            raise InvalidArgumentError(
                f"{OP}: value_format={value_format!r} needs schema= (the value's columns "
                "and types, such as {'id': 'int64', 'name': 'string'})"
            )
        value = pa.schema([pa.field("value", pa.binary())])
    else:
        value = _sources.to_schema(OP, schema)
    bytes_like = len(value) == 1 and (
        pa.types.is_binary(value[0].type) or pa.types.is_string(value[0].type)
    )
    if value_format == "raw" and not bytes_like:
        raise SchemaError(
            f"{OP}: value_format='raw' has one value column, binary or string; got {value}"
        )

    fields = list(value)
    for option, column in metadata.items():
        if column is None:
            continue
        if not isinstance(column, str) or not column:
            raise InvalidArgumentError(f"{OP}: {option} must be a column name or None")
        if column in [f.name for f in fields]:
            raise SchemaError(
                f"{OP}: {option}={column!r} is also a column of the value schema or another "
                "metadata column; choose another name"
            )
        setattr(msg, option, column)
        fields.append(pa.field(column, METADATA_TYPES[option], nullable=option == "key_column"))

    if properties is not None:
        if not isinstance(properties, Mapping):
            raise ArgumentTypeError(f"{OP}: properties must be a dict of str to str")
        for k, v in properties.items():
            if not isinstance(k, str) or not isinstance(v, (str, int, bool)):
                raise ArgumentTypeError(
                    f"{OP}: properties must map names to str (or int/bool) values: {k!r}: {v!r}"
                )
            msg.properties[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return msg, pa.schema(fields), name


def _starting_offsets(msg: plan_pb2.KafkaSource, value: Any, topics: list[str]) -> None:
    from flinkgo._proto import plan_pb2 as pb

    if value == "earliest":
        msg.start = pb.KafkaSource.EARLIEST
    elif value == "latest":
        msg.start = pb.KafkaSource.LATEST
    elif isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise InvalidArgumentError(
                f"{OP}: starting_offsets={value!r} has no time zone; give an aware datetime "
                "(such as datetime(2024, 1, 1, tzinfo=timezone.utc))"
            )
        msg.start = pb.KafkaSource.TIMESTAMP
        msg.start_timestamp_ms = int(value.timestamp() * 1000)
    elif isinstance(value, Mapping):
        msg.start = pb.KafkaSource.OFFSETS
        for key, offset in value.items():
            if isinstance(key, tuple) and len(key) == 2:
                topic, partition = key
            elif len(topics) == 1:
                topic, partition = topics[0], key
            else:
                raise InvalidArgumentError(
                    f"{OP}: starting_offsets keys must be (topic, partition) pairs when more "
                    f"than one topic (or a pattern) is read; got {key!r}"
                )
            if (
                not isinstance(topic, str)
                or isinstance(partition, bool)
                or not isinstance(partition, int)
                or isinstance(offset, bool)
                or not isinstance(offset, int)
            ):
                raise ArgumentTypeError(
                    f"{OP}: starting_offsets maps partitions (int) to offsets (int): "
                    f"{key!r}: {offset!r}"
                )
            if partition < 0 or offset < 0 or partition >= 2**31:
                raise InvalidArgumentError(
                    f"{OP}: starting_offsets: partition {partition} offset {offset} is negative "
                    "or out of range"
                )
            msg.start_offsets.append(
                pb.KafkaSource.PartitionOffset(topic=topic, partition=partition, offset=offset)
            )
    else:
        raise InvalidArgumentError(
            f"{OP}: starting_offsets must be 'earliest', 'latest', an aware datetime (the "
            f"first record at or after it) or a dict of partition to offset, got {value!r}"
        )


SINK_OP = "write_kafka"
_DELIVERIES = ("exactly-once", "at-least-once", "none")


def kafka_sink(
    schema: pa.Schema,
    topic: Any,
    *,
    bootstrap_servers: Any,
    key: Any,
    value_format: Any,
    delivery: Any,
    transactional_id_prefix: Any,
    properties: Any,
) -> plan_pb2.KafkaSink:
    """Return the plan message of a Kafka sink writing rows of `schema`."""
    from flinkgo._proto import plan_pb2 as pb

    op = SINK_OP
    msg = pb.KafkaSink()
    if not isinstance(topic, str) or not topic:
        raise InvalidArgumentError(f"{op}: topic must be a topic name, got {topic!r}")
    msg.topic = topic
    if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
        raise InvalidArgumentError(
            f"{op}: bootstrap_servers must be 'host:port' (or several, comma-separated), "
            f"got {bootstrap_servers!r}"
        )
    msg.bootstrap_servers = bootstrap_servers
    if key is not None:
        if not isinstance(key, str) or key not in schema.names:
            raise SchemaError(
                f"{op}: key must be None or one of the columns {schema.names}, got {key!r}"
            )
        msg.key_column = key
    if value_format not in _FORMATS:
        raise InvalidArgumentError(
            f"{op}: value_format must be one of {', '.join(map(repr, _FORMATS))}, "
            f"got {value_format!r}"
        )
    msg.value_format = {
        "json": pb.KafkaSource.JSON,
        "raw": pb.KafkaSource.RAW,
        "csv": pb.KafkaSource.CSV,
    }[value_format]
    if value_format == "raw":
        values = [f for f in schema if f.name != key]
        if len(values) != 1 or not (
            pa.types.is_binary(values[0].type) or pa.types.is_string(values[0].type)
        ):
            raise SchemaError(
                f"{op}: value_format='raw' writes one binary or string column (besides the "
                f"key); the rows have {schema}. Select the column to write first."
            )
    elif value_format == "csv":
        for f in schema:
            if pa.types.is_nested(f.type):
                raise ArgumentTypeError(
                    f"{op}: the column {f.name!r} has the nested type {f.type}, which CSV "
                    "cannot hold; write JSON, or select other columns"
                )
    if delivery not in _DELIVERIES:
        raise InvalidArgumentError(
            f"{op}: delivery must be one of {', '.join(map(repr, _DELIVERIES))}, got {delivery!r}"
        )
    msg.delivery = {
        "exactly-once": pb.KafkaSink.EXACTLY_ONCE,
        "at-least-once": pb.KafkaSink.AT_LEAST_ONCE,
        "none": pb.KafkaSink.NONE,
    }[delivery]
    if transactional_id_prefix is not None:
        if not isinstance(transactional_id_prefix, str) or not transactional_id_prefix:
            raise InvalidArgumentError(
                f"{op}: transactional_id_prefix must be a non-empty str or None"
            )
        msg.transactional_id_prefix = transactional_id_prefix
    elif delivery == "exactly-once":
        raise InvalidArgumentError(
            f"{op}: delivery='exactly-once' needs transactional_id_prefix=, unique among the "
            "jobs writing to the cluster (as Flink's KafkaSink: two jobs sharing a prefix "
            "abort each other's transactions), or delivery='at-least-once'"
        )
    if properties is not None:
        if not isinstance(properties, Mapping):
            raise ArgumentTypeError(f"{op}: properties must be a dict of str to str")
        for k, v in properties.items():
            if not isinstance(k, str) or not isinstance(v, (str, int, bool)):
                raise ArgumentTypeError(
                    f"{op}: properties must map names to str (or int/bool) values: {k!r}: {v!r}"
                )
            msg.properties[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return msg
