"""Test-session guards: a hang after the last test must end the run, with stacks.

pytest-timeout and ``faulthandler_timeout`` (python/pyproject.toml) watch each test's
setup, call and teardown only. What runs after the session (the interpreter joining
non-daemon threads, such as a gRPC server's thread pool, and the atexit hooks, such as
the embedded runtime's stop) has no timeout, and a hang there leaves CI idle forever.
So at the end of the session faulthandler's watchdog thread is armed: if the process
still exists ``FLINKGO_TEST_EXIT_TIMEOUT`` seconds later (default 60; 0 disables it),
it prints every thread's stack on stderr and exits with status 1. It runs in C, so it
works when every Python thread is blocked.

A test that fails loses both of its timeouts: pytest-timeout and pytest's faulthandler
plugin cancel them in ``pytest_exception_interact`` (meant for a debugger), which runs
for every failed test before its teardown. A fixture teardown that then hangs (a gRPC
server's ``stop`` waiting for a call that never ends) would sit forever, so the
faulthandler watchdog is armed again there, with the same ``faulthandler_timeout``.
"""

from __future__ import annotations

import faulthandler
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from _polling import wait_until
from _pytest.faulthandler import fault_handler_stderr_fd_key

EXIT_TIMEOUT_ENV = "FLINKGO_TEST_EXIT_TIMEOUT"

# A suite started in the background by a non-interactive shell (`make test &`)
# inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler:
# the Ctrl-C tests need Python's own, as a terminal gives it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector) -> None:
    if not isinstance(node, pytest.Item):
        return  # a collection error: no test protocol would cancel the watchdog
    timeout = float(node.config.getini("faulthandler_timeout") or 0)
    # The terminal's stderr: fd 2 is pytest's capture file during a test.
    stderr = node.config.stash.get(fault_handler_stderr_fd_key, None)
    if timeout > 0 and stderr is not None:
        # pytest's plugin cancels this after the test's teardown, as its own.
        faulthandler.dump_traceback_later(timeout, exit=True, file=stderr)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    timeout = float(os.environ.get(EXIT_TIMEOUT_ENV) or 60)
    if timeout > 0 and sys.__stderr__ is not None:
        faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)


class KafkaBroker:
    """A real Kafka broker on loopback (KRaft mode), started by scripts/kafka/broker.sh.

    One runs per test session, started by the first test that asks for the
    ``kafka_broker`` fixture and killed at the end of the session. The helpers use
    confluent-kafka (librdkafka), a client independent of the runtime's franz-go.
    """

    def __init__(self, bootstrap: str, directory: str, proc: subprocess.Popen[bytes]) -> None:
        self.bootstrap = bootstrap
        self.directory = directory
        self.proc = proc
        self._topics = 0

    def create_topic(self, prefix: str, partitions: int) -> str:
        """Create a topic with ``partitions`` partitions named after ``prefix``; return its name."""
        from confluent_kafka.admin import AdminClient, NewTopic

        self._topics += 1
        name = f"{prefix}-{self._topics}-{os.getpid()}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(timeout=60)
        return name

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions."""
        from confluent_kafka.admin import AdminClient, NewPartitions

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_partitions([NewPartitions(topic, total)]).values():
            future.result(timeout=60)

    def produce(
        self,
        topic: str,
        records: list[tuple[int, bytes | None, bytes]],
        *,
        timestamps_ms: list[int] | None = None,
    ) -> None:
        """Write ``(partition, key, value)`` records and wait until all are acknowledged.

        ``timestamps_ms`` gives the records' timestamps (default: the time of sending).
        """
        from confluent_kafka import Producer

        errors: list[str] = []

        def delivered(err: object, msg: object) -> None:
            if err is not None:
                errors.append(str(err))

        # Idempotent: librdkafka's default retries may reorder (and repeat) a partition's
        # records under load, and tests read offsets in production order (a CI run once
        # found a partition's last 320 records ahead of its first).
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "linger.ms": 5, "enable.idempotence": True}
        )
        for i, (partition, key, value) in enumerate(records):
            extra = {} if timestamps_ms is None else {"timestamp": timestamps_ms[i]}
            producer.produce(
                topic, value=value, key=key, partition=partition, on_delivery=delivered, **extra
            )
            producer.poll(0)
        left = producer.flush(60)
        assert left == 0 and not errors, f"producing to {topic}: {left} unsent, errors {errors[:5]}"

    def records(self, topic: str, *, read_committed: bool = False) -> list[tuple[int, bytes]]:
        """Read ``topic`` from its start up to its end offsets now: ``(partition, value)`` pairs.

        With ``read_committed`` only committed transactional records count
        (``isolation.level=read_committed``); call it with no transaction in flight.
        """
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"flinkgo-test-reader-{os.getpid()}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                "enable.partition.eof": True,
            }
        )
        try:
            meta = consumer.list_topics(topic, timeout=60).topics[topic]
            ends = {}
            for p in meta.partitions:
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=60)
                if high > 0:
                    ends[p] = high
            consumer.assign([TopicPartition(topic, p, 0) for p in ends])
            out: list[tuple[int, bytes]] = []
            deadline = time.monotonic() + 120
            while ends:
                assert time.monotonic() < deadline, f"reading {topic}: partitions {ends} not at end"
                msg = consumer.poll(1.0)
                if msg is None:
                    continue
                p = msg.partition()
                if msg.error() is not None:
                    # With read_committed the end is the last stable offset: the
                    # partition-EOF event says the readable part is read.
                    if msg.error().code() == -191:  # _PARTITION_EOF
                        ends.pop(p, None)
                        continue
                    raise AssertionError(f"reading {topic} partition {p}: {msg.error()}")
                if p in ends and msg.offset() < ends[p]:
                    out.append((p, msg.value()))
                    if msg.offset() >= ends[p] - 1:
                        del ends[p]
            return out
        finally:
            consumer.close()


def _set_pdeathsig() -> None:
    """Have the kernel kill the broker should pytest die without stopping it."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    os.setpgrp()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kafka_required() -> bool:
    return os.environ.get("FLINKGO_REQUIRE_PYTHON") == "1" or os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """The session's Kafka broker.

    Without one the test skips, or fails under CI and FLINKGO_REQUIRE_PYTHON=1.
    """
    script = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "kafka" / "broker.sh"

    def unavailable(why: str) -> None:
        msg = (
            f"this test needs a Kafka broker, which did not start: {why}\n"
            "Run `make setup` once (it installs Java and Maven if missing "
            "and fetches the Kafka jars)."
        )
        if _kafka_required():
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)

    jars = subprocess.run([str(script), "jars"], capture_output=True, text=True)
    if jars.returncode != 0:
        unavailable(f"{script} jars: {jars.stderr.strip()}")
    from confluent_kafka.admin import AdminClient

    broker = None
    why = ""
    for _ in range(3):  # a free port taken by another process first: try new ones
        directory = tmp_path_factory.mktemp("kafka")
        port = _free_port()
        log = open(directory / "broker.out", "wb")  # noqa: SIM115 (closed with the broker)
        proc = subprocess.Popen(
            [str(script), "run", str(directory), str(port), str(_free_port())],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_set_pdeathsig,
        )
        log.close()
        bootstrap = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        # Quiet: until the broker listens, every try logs a refused connection.
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if admin.list_topics(timeout=2).brokers:
                    broker = KafkaBroker(bootstrap, str(directory), proc)
                    break
            except Exception as e:  # noqa: BLE001 (not yet up: any client error)
                why = str(e)
        del admin  # its connections end now, not when the broker stops
        if broker is not None:
            break
        _kill_group(proc)
        tail = (directory / "broker.out").read_text(errors="replace")[-3000:]
        server_log = directory / "server.log"
        if server_log.exists():
            tail += server_log.read_text(errors="replace")[-3000:]
        why = f"no answer on {bootstrap} ({why}):\n{tail}"
        if time.monotonic() >= deadline:
            break
    if broker is None:
        unavailable(why)
    assert broker is not None
    try:
        yield broker
    finally:
        _kill_group(broker.proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class S3Server:
    """A real S3 API server on loopback: moto's (``moto[server]``, in the test extras).

    One runs per test session, started by the first test that asks for the
    ``s3_server`` fixture; each test creates the buckets it uses. ``client`` is a
    boto3 S3 client of it, with the credentials the server takes (any).
    """

    region = "us-east-1"
    access_key = "testing"
    secret_key = "testing"

    def __init__(self, endpoint: str) -> None:
        import boto3

        self.endpoint = endpoint
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's S3 server."""
    import urllib.request

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_set_pdeathsig,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:

        def listening() -> bool:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=5).close()
                return True
            except OSError:
                assert proc.poll() is None, "moto server exited"
                return False

        wait_until(listening, "the moto server to answer")
        yield S3Server(endpoint)
    finally:
        proc.kill()
        proc.wait()
