"""The test Kafka broker (conftest's ``kafka_broker``) is real and ends with the session."""

from __future__ import annotations

import psutil


def test_kafka_broker_round_trip(kafka_broker):
    topic = kafka_broker.create_topic("broker-round-trip", 3)
    sent = [(i % 3, None, str(i).encode()) for i in range(30)]
    kafka_broker.produce(topic, sent)
    got = kafka_broker.records(topic)
    assert sorted(got) == sorted((p, v) for p, _, v in sent)
    kafka_broker.add_partitions(topic, 4)
    kafka_broker.produce(topic, [(3, b"k", b"late")])
    assert (3, b"late") in kafka_broker.records(topic)


def test_kafka_broker_is_a_java_child_of_pytest(kafka_broker):
    proc = psutil.Process(kafka_broker.proc.pid)
    assert proc.name() == "java"
    assert "kafka.Kafka" in proc.cmdline()
    assert proc.ppid() == psutil.Process().pid
