"""Purchases from Kafka to Kafka, exactly-once, with checkpoints on S3.

It reads purchases, JSON objects such as ``{"user": "u7", "amount": 12.5, "currency":
"USD", "ts": 1796461201250}`` (``ts``: event time, epoch milliseconds), from a Kafka
topic and, on the embedded local runtime:

1. gives them an event time from their ``ts`` field and watermarks per Kafka
   partition, for purchases up to 5 s out of order (``with_watermark``);
2. converts each amount to euros in a pandas UDF running in Python workers;
3. per user and 1-minute tumbling window of event time, counts the purchases and sums
   and maxes the euros: a window's row is final once the watermark passes its end, so
   the result is append-only, which is what a Kafka sink takes (a running total per
   user would be a changelog, which it refuses);
4. writes one JSON record per user and window to the output topic, keyed by user,
   exactly-once: each sink subtask writes in a Kafka transaction committed when a
   checkpoint completes, and the checkpoints (Kafka offsets, open windows, pending
   transactions) go to S3.

Run it against a local broker and S3 server (docs/kafka.md, "The Kafka and S3 example",
gives the steps that start both)::

    python examples/python/kafka_s3.py prepare        # topics, bucket, 20 000 purchases
    python examples/python/kafka_s3.py run --bounded  # up to the input's end
    python examples/python/kafka_s3.py show           # as a read_committed reader

``run`` without ``--bounded`` runs until Ctrl-C (or SIGTERM), which stops the job with
a savepoint on S3; ``run --from-savepoint PATH`` carries on from it. ``prepare`` and
``show`` need confluent-kafka and boto3 (``make setup`` installs both with the test
extras).

Settings come from the command line, else the environment, else localhost defaults:
``--bootstrap-servers`` (``KAFKA_BOOTSTRAP_SERVERS``, 127.0.0.1:9092),
``--input-topic`` (``KAFKA_INPUT_TOPIC``, purchases), ``--output-topic``
(``KAFKA_OUTPUT_TOPIC``, spend-per-minute), ``--s3-endpoint`` (``S3_ENDPOINT``,
http://127.0.0.1:5000, where ``moto_server`` listens), ``--bucket`` (``S3_BUCKET``,
flinkgo-example); credentials from ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``
(default ``testing``, which a moto server takes). ``pipeline`` is what the tests
compare with pandas on the same purchases.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

import flinkgo as fg
import numpy as np
import pandas as pd

# Euros per unit of each currency (a fixed table: the example's enrichment).
EUR_PER_UNIT = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "CHF": 1.06}
WINDOW = "1 min"
OUT_OF_ORDERNESS = "5 s"
SCHEMA = {
    "user": "string",
    "amount": "double",
    "currency": "string",
    "ts": "timestamp[ms]",
}


@dataclass(frozen=True)
class Settings:
    """Where the example reads, writes and checkpoints."""

    bootstrap_servers: str = "127.0.0.1:9092"
    input_topic: str = "purchases"
    output_topic: str = "spend-per-minute"
    s3_endpoint: str = "http://127.0.0.1:5000"
    bucket: str = "flinkgo-example"
    access_key: str = "testing"
    secret_key: str = "testing"
    parallelism: int = 2
    checkpoint_interval: str = "2 s"

    @property
    def checkpoint_dir(self) -> str:
        return f"s3://{self.bucket}/checkpoints"

    @property
    def savepoint_dir(self) -> str:
        return f"s3://{self.bucket}/savepoints"

    @property
    def transactional_id_prefix(self) -> str:
        # The same for every run writing this topic, so that a restored job aborts
        # what an earlier attempt left open; different for different output topics.
        return f"flinkgo-example-{self.output_topic}"


def generate(
    purchases: int = 20_000,
    users: int = 40,
    seed: int = 7,
    start: pd.Timestamp | None = None,
) -> pd.DataFrame:
    """Return purchases in arrival order, one every 50 ms, up to 3 s out of order.

    ``ts`` is the event time in epoch milliseconds; the last purchase is about
    ``start`` plus ``purchases`` × 50 ms (``start`` defaults to so long before now).
    """
    rng = np.random.default_rng(seed)
    step_ms = 50
    if start is None:
        now = pd.Timestamp.now(tz="UTC").floor(pd.Timedelta(seconds=1))
        start = now - pd.Timedelta(milliseconds=purchases * step_ms)
    start_ms = int(start.timestamp() * 1000)
    arrival = start_ms + np.arange(purchases, dtype=np.int64) * step_ms
    currencies = np.array(sorted(EUR_PER_UNIT))
    return pd.DataFrame(
        {
            "user": [f"u{i}" for i in rng.integers(0, users, purchases)],
            "amount": rng.gamma(2.0, 20.0, purchases).round(2),
            "currency": currencies[rng.integers(0, len(currencies), purchases)],
            # Out of order: less than OUT_OF_ORDERNESS, so no purchase is late.
            "ts": arrival - rng.integers(0, 3_000, purchases),
        }
    )


@fg.udf("double", func_type="pandas")
def to_eur(amount: pd.Series, currency: pd.Series) -> pd.Series:
    """Convert amounts to euros; an unknown currency fails the job, naming it."""
    rate = currency.map(EUR_PER_UNIT)
    unknown = currency[rate.isna()]
    if len(unknown):
        raise ValueError(
            f"to_eur: no rate for currencies {sorted(set(unknown.astype(str)))}; "
            f"known: {sorted(EUR_PER_UNIT)}"
        )
    return (amount * rate).round(2)


def environment(
    settings: Settings, *, restore_from: str | None = None
) -> fg.Environment:
    """An environment that checkpoints to S3 (and restores from `restore_from`)."""
    config = {
        "execution.checkpointing.interval": settings.checkpoint_interval,
        "execution.checkpointing.dir": settings.checkpoint_dir,
        "execution.checkpointing.savepoint-dir": settings.savepoint_dir,
        "s3.endpoint": settings.s3_endpoint,
        "s3.region": "us-east-1",
        "s3.access-key": settings.access_key,
        "s3.secret-key": settings.secret_key,
        "s3.path-style-access": "true",
    }
    if restore_from:
        config["execution.state-recovery.path"] = restore_from
    return fg.Environment(parallelism=settings.parallelism, config=config)


def pipeline(env: fg.Environment, settings: Settings, *, bounded: bool) -> fg.Sink:
    """Purchases → euros → spend per user and minute → the output topic."""
    purchases = (
        env.read_kafka(
            settings.input_topic,
            bootstrap_servers=settings.bootstrap_servers,
            schema=SCHEMA,
            group_id="flinkgo-example",
            bounded="latest" if bounded else None,
        )
        .with_watermark("ts", OUT_OF_ORDERNESS)
        .uid("purchases")
    )
    spend = (
        purchases.with_column("eur", to_eur(fg.col("amount"), fg.col("currency")))
        .key_by("user")
        .window(fg.tumble("ts", WINDOW))
        .agg(
            fg.count().alias("purchases"),
            fg.sum("eur").alias("total_eur"),
            fg.max("eur").alias("max_eur"),
        )
        .uid("spend")
    )
    return spend.write_kafka(
        settings.output_topic,
        bootstrap_servers=settings.bootstrap_servers,
        key="user",
        transactional_id_prefix=settings.transactional_id_prefix,
    ).uid("spend-out")


def stop_requested(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run(settings: Settings, *, bounded: bool, restore_from: str | None) -> None:
    """Run the job: to the input's end, or until Ctrl-C or SIGTERM stop it with a savepoint."""
    env = environment(settings, restore_from=restore_from)
    pipeline(env, settings, bounded=bounded)
    job = env.execute_async("kafka-s3 example")
    # A shell's background job ignores SIGINT, and a container's stop is a SIGTERM.
    signal.signal(signal.SIGTERM, stop_requested)
    print(f"job {job.job_id} running; checkpoints in {settings.checkpoint_dir}")
    try:
        result = job.result()
    except KeyboardInterrupt:
        savepoint = job.stop_with_savepoint()
        result = job.result(timeout=120)
        print(f"stopped with a savepoint; carry on with --from-savepoint {savepoint}")
    print(f"job {result.state} after {result.elapsed:.1f} s")
    spend = result.operator("spend")
    print(
        f"{spend.rows_in:,} purchases in, {spend.rows_out:,} windows out, "
        f"{spend.num_late_records_dropped:,} late purchases dropped"
    )


def prepare(settings: Settings, purchases: int) -> None:
    """Create the topics and the bucket if missing, then produce sample purchases.

    The purchases follow the input topic's latest in event time (and end about now),
    so that a job running on the topic gets none late.
    """
    try:
        from confluent_kafka import KafkaException, Producer

        # admin re-exports NewTopic without declaring it (no __all__) for mypy.
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
    except ImportError as e:
        sys.exit(f"prepare needs confluent-kafka ({e}): run `make setup`")
    # Quiet while a broker just started does not listen yet: the wait is the timeout.
    admin = AdminClient(
        {"bootstrap.servers": settings.bootstrap_servers, "log_level": 0}
    )
    try:
        admin.list_topics(timeout=60)
    except KafkaException as e:
        sys.exit(
            f"prepare: no Kafka broker answers at {settings.bootstrap_servers}: {e}"
        )
    new = [NewTopic(t, 4, 1) for t in (settings.input_topic, settings.output_topic)]
    for topic, future in admin.create_topics(new).items():
        try:
            future.result(timeout=60)
            print(f"created topic {topic}")
        except KafkaException as e:
            if e.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise
    s3 = s3_client(settings)
    if settings.bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=settings.bucket)
        print(f"created bucket {settings.bucket}")

    rows = generate(purchases, seed=int(time.time()))
    latest = latest_timestamp_ms(settings)
    if latest is not None and latest >= rows["ts"].min():
        rows["ts"] += latest + 50 - rows["ts"].min()
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers})
    for row in rows.itertuples(index=False):
        value = {"user": row.user, "amount": row.amount, "currency": row.currency}
        producer.produce(
            settings.input_topic,
            key=str(row.user),
            value=json.dumps({**value, "ts": int(row.ts)}),
            timestamp=int(row.ts),
        )
        producer.poll(0)
    if producer.flush(60):
        sys.exit(f"prepare: not every purchase reached {settings.bootstrap_servers}")
    print(f"produced {len(rows):,} purchases to {settings.input_topic}")


def latest_timestamp_ms(settings: Settings) -> int | None:
    """The latest record timestamp of the input topic (None when it is empty)."""
    from confluent_kafka import Consumer, TopicPartition

    topic = settings.input_topic
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": "flinkgo-example-prepare",
            "enable.auto.commit": False,
        }
    )
    try:
        lasts = []
        for p in consumer.list_topics(topic, timeout=60).topics[topic].partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), 60)
            if high > low:
                lasts.append(TopicPartition(topic, p, high - 1))
        consumer.assign(lasts)
        latest = None
        deadline = time.monotonic() + 60
        while lasts and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                latest = max(latest or 0, msg.timestamp()[1])
                lasts.pop()
        return latest
    finally:
        consumer.close()


def s3_client(settings: Settings) -> Any:
    """A boto3 client of the S3 server (boto3 comes with ``make setup``)."""
    try:
        import boto3
    except ImportError as e:
        sys.exit(f"this needs boto3 ({e}): run `make setup`")
    return boto3.client(
        "s3",
        endpoint_url=settings.s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id=settings.access_key,
        aws_secret_access_key=settings.secret_key,
    )


def show(settings: Settings) -> None:
    """Print the output topic as a read_committed reader sees it now, and what is on S3."""
    env = fg.Environment(parallelism=1)
    out = env.read_kafka(
        settings.output_topic,
        bootstrap_servers=settings.bootstrap_servers,
        schema={
            "user": "string",
            "window_start": "timestamp[ms]",
            "window_end": "timestamp[ms]",
            "purchases": "int64",
            "total_eur": "double",
            "max_eur": "double",
        },
        bounded="latest",
        properties={"isolation.level": "read_committed"},
    ).to_pandas()
    print(out.sort_values(["window_start", "user"]).to_string(index=False))
    print(f"{len(out):,} windows, {int(out['purchases'].sum()):,} purchases")
    # A running job's latest checkpoint, and the savepoints (a job that ends deletes
    # its checkpoints; savepoints stay).
    listing = s3_client(settings).list_objects_v2(Bucket=settings.bucket)
    for key in sorted(o["Key"] for o in listing.get("Contents", [])):
        if key.endswith("/_metadata"):
            print(f"s3://{settings.bucket}/{key}")


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, Settings]:
    """The command and its settings: options, else environment variables, else defaults."""
    env = os.environ.get
    d = Settings()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
        "(default testing, which a moto server takes).",
    )
    parser.add_argument("command", choices=["prepare", "run", "show"])

    def setting(option: str, variable: str, default: str) -> None:
        parser.add_argument(
            option,
            default=env(variable, default),
            help=f"default: ${variable}, else {default}",
        )

    setting("--bootstrap-servers", "KAFKA_BOOTSTRAP_SERVERS", d.bootstrap_servers)
    setting("--input-topic", "KAFKA_INPUT_TOPIC", d.input_topic)
    setting("--output-topic", "KAFKA_OUTPUT_TOPIC", d.output_topic)
    setting("--s3-endpoint", "S3_ENDPOINT", d.s3_endpoint)
    setting("--bucket", "S3_BUCKET", d.bucket)
    parser.add_argument(
        "--parallelism",
        type=int,
        default=d.parallelism,
        help=f"default: {d.parallelism}",
    )
    parser.add_argument(
        "--checkpoint-interval",
        default=d.checkpoint_interval,
        help=f"default: {d.checkpoint_interval}",
    )
    parser.add_argument(
        "--bounded", action="store_true", help="run: stop at the input's end"
    )
    parser.add_argument("--from-savepoint", help="run: restore from this savepoint")
    parser.add_argument(
        "--purchases",
        type=int,
        default=20_000,
        help="prepare: how many (default: 20000)",
    )
    args = parser.parse_args(argv)
    settings = Settings(
        bootstrap_servers=args.bootstrap_servers,
        input_topic=args.input_topic,
        output_topic=args.output_topic,
        s3_endpoint=args.s3_endpoint,
        bucket=args.bucket,
        access_key=env("AWS_ACCESS_KEY_ID", d.access_key),
        secret_key=env("AWS_SECRET_ACCESS_KEY", d.secret_key),
        parallelism=args.parallelism,
        checkpoint_interval=args.checkpoint_interval,
    )
    return args, settings


def main(argv: list[str] | None = None) -> None:
    """Prepare, run or show, as the command line says."""
    args, settings = parse(argv)
    if args.command == "prepare":
        prepare(settings, args.purchases)
    elif args.command == "run":
        run(settings, bounded=args.bounded, restore_from=args.from_savepoint)
    else:
        show(settings)


if __name__ == "__main__":
    main()
