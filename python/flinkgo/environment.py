"""The Environment: where a job's sources start, its sinks register, and its plan is built.

:class:`Environment` holds the job-wide options (default parallelism, Flink-style config,
the runtime endpoint), makes source DataFrames, and collects the sinks that DataFrames
register. :meth:`Environment.plan` turns every step that leads to a sink into a
:class:`~flinkgo.JobPlan` (the message ``flinkgo.plan.v1.JobPlan``): nodes in
topological order (inputs before the nodes that read them, sinks in the order they were
added), ids from 1, each with its output schema as Arrow IPC; steps that lead to no sink
are left out, as in Flink.

Sources read their schema when they are made: files by a path or a glob expanded to the
sorted list of matching files (see :mod:`flinkgo._sources`), in-memory data by
converting it to Arrow, which the plan then carries.

Running: :meth:`Environment.execute` submits the plan of every sink added so far and
then forgets those sinks, as Flink's ``execute`` does (a second ``execute`` runs only
sinks added since); :meth:`Environment.explain` shows the physical plan without running
anything; ``DataFrame.collect`` runs a plan of its own. Jobs run on the server of
``endpoint`` (the argument, else ``$FLINKGO_ENDPOINT``, which ``flinkgo run`` sets), else
on the embedded local runtime of this process (:mod:`flinkgo._runtime`).

Steps and their conversion into the plan live in :mod:`flinkgo._graph`; this module and
:mod:`flinkgo.dataframe` both build on it. This module must not import grpc or the
worker; the generated plan module is imported when a DataFrame is first made, and the
client (grpc) when a job is first run.
"""

from __future__ import annotations

import datetime
import os
import re
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pyarrow as pa

from flinkgo import _kafka, _sources
from flinkgo._endpoint import check_endpoint
from flinkgo._graph import MAX_PARALLELISM, Step, build_plan
from flinkgo.dataframe import DataFrame
from flinkgo.exceptions import (
    ArgumentTypeError,
    InvalidArgumentError,
    RuntimeConnectionError,
    SchemaError,
    UnexecutedSinkWarning,
)
from flinkgo.job import JobResult
from flinkgo.job_client import JobClient
from flinkgo.plan import JobPlan

if TYPE_CHECKING:
    import pandas as pd
    from google.protobuf.message import Message

    from flinkgo._client import Client
    from flinkgo._proto import plan_pb2

__all__ = ["Environment"]

_T = TypeVar("_T")

ENDPOINT_ENV = "FLINKGO_ENDPOINT"
"""The environment variable naming the default runtime server (``flinkgo run`` sets it)."""

# An in-memory source travels inside the plan, a protobuf message, which cannot exceed 2 GiB.
_MAX_INLINE_BYTES = 1 << 30


class Environment:
    """The context of one job: its options, sources and sinks.

    Options are copied and checked here, all at once.

    Parameters
    ----------
    parallelism
        The default number of subtasks of each step, from 1 to 32768; None lets the
        runtime choose. ``set_parallelism`` and a UDF's ``concurrency`` override it.
    config
        Flink-style options by key, as strings, e.g.
        ``{"pipeline.forward-mismatch": "rescale", "python.fn-execution.bundle.size":
        "50000"}``. Copied. The runtime checks them when a job is submitted: an unknown
        key or a bad value fails it, naming the close match of a misspelt key;
        ``flinkgo config`` lists every key with its default.
    endpoint
        The address of a runtime server to run on, ``"host:port"`` or
        ``"unix:///path/to.sock"``; None for ``$FLINKGO_ENDPOINT`` when it is set, else
        the embedded local runtime (started on first use, one per process).
    token
        The bearer token of a TCP server (``flinkgo serve --listen host:port`` prints the
        file that holds it); None for ``$FLINKGO_TOKEN``. Not needed for a Unix socket,
        whose server admits peers by their uid.
    tls
        For a TCP server with TLS: True to trust the system's root certificates, or the
        path of a PEM file of CA certificates to trust; None for no TLS.
    tls_client_cert
        For a server that asks for client certificates (mutual TLS): the paths
        ``(certificate_pem, key_pem)``.

    Raises
    ------
    TypeError
        If an option has the wrong type (every problem is listed).
    ValueError
        If an option has a wrong value (every problem is listed).

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> env = fg.Environment(parallelism=2, config={"pipeline.forward-mismatch": "fail"})
    >>> df = env.from_pandas(pd.DataFrame({"sensor": ["a", "b"], "temp": [20.5, 31.0]}))
    >>> _ = df.filter(fg.col("temp") > 30).print()
    >>> plan = env.plan("hot sensors")
    >>> [(n.id, n.name) for n in plan.nodes]
    [(1, 'from_pandas(2 rows)'), (2, 'filter(temp > 30)'), (3, 'print')]
    >>> plan.default_parallelism, dict(plan.config)
    (2, {'pipeline.forward-mismatch': 'fail'})
    """

    def __init__(
        self,
        *,
        parallelism: int | None = None,
        config: Mapping[str, str] | None = None,
        endpoint: str | None = None,
        token: str | None = None,
        tls: bool | str | None = None,
        tls_client_cert: tuple[str, str] | None = None,
    ) -> None:
        type_errors: list[str] = []
        value_errors: list[str] = []
        try:
            self._parallelism = _sources.positive_int(
                "Environment", "parallelism", parallelism, upper=MAX_PARALLELISM
            )
        except TypeError as e:
            type_errors.append(str(e))
        except ValueError as e:
            value_errors.append(str(e))
        self._config: dict[str, str] = {}
        if config is not None and not isinstance(config, Mapping):
            type_errors.append(
                f"Environment: config must be a dict of str to str, got {type(config).__name__}"
            )
        else:
            for key, value in (config or {}).items():
                if not isinstance(key, str) or not key:
                    type_errors.append(
                        f"Environment: config keys must be non-empty strings, got {key!r}"
                    )
                elif not isinstance(value, str):
                    type_errors.append(
                        f"Environment: config[{key!r}] must be a string, got {value!r} "
                        f"(of type {type(value).__name__}); write it as {str(value)!r}"
                    )
                else:
                    self._config[key] = value
        if endpoint is None:
            endpoint = os.environ.get(ENDPOINT_ENV) or None
            source = f"${ENDPOINT_ENV}"
        else:
            source = "endpoint"
        if endpoint is not None:
            if not isinstance(endpoint, str) or not endpoint.strip():
                type_errors.append(
                    f"Environment: endpoint must be a non-empty string such as "
                    f"'localhost:8081' or None, got {endpoint!r}"
                )
            else:
                try:
                    endpoint = check_endpoint(endpoint)
                except ValueError as e:
                    value_errors.append(f"Environment: {source}: {e}")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            type_errors.append(
                "Environment: token must be a non-empty string or None, got a "
                f"{type(token).__name__}"
            )
        if tls is not None and not isinstance(tls, (bool, str)):
            type_errors.append(
                f"Environment: tls must be True, a CA file path or None, got {tls!r}"
            )
        if tls_client_cert is not None and not (
            isinstance(tls_client_cert, tuple)
            and len(tls_client_cert) == 2
            and all(isinstance(p, str) for p in tls_client_cert)
        ):
            type_errors.append(
                "Environment: tls_client_cert must be (certificate_path, key_path), got "
                f"{tls_client_cert!r}"
            )
        if type_errors or value_errors:
            problems = "\n".join(type_errors + value_errors)
            raise (ArgumentTypeError if type_errors else InvalidArgumentError)(problems)
        self._endpoint = endpoint
        self._credentials: dict[str, Any] = {
            "token": token,
            "tls": tls,
            "tls_client_cert": tls_client_cert,
        }
        self._sinks: list[Step] = []
        # The names of sinks added and not yet executed; a finalizer warns about
        # them when the Environment is collected or the interpreter exits.
        self._unexecuted: list[str] = []
        weakref.finalize(self, _warn_unexecuted_sinks, self._unexecuted)

    @property
    def parallelism(self) -> int | None:
        """The default parallelism, or None for the runtime's."""
        return self._parallelism

    @property
    def config(self) -> dict[str, str]:
        """A copy of the config options."""
        return dict(self._config)

    @property
    def endpoint(self) -> str | None:
        """The runtime server's address, or None for the embedded local runtime."""
        return self._endpoint

    def __repr__(self) -> str:
        """Show the options and the number of sinks."""
        return (
            f"Environment(parallelism={self._parallelism}, config={self._config}, "
            f"endpoint={self._endpoint!r}, sinks={len(self._sinks)})"
        )

    # --- sources ----------------------------------------------------------------------------

    def from_pandas(self, df: pd.DataFrame) -> DataFrame:
        """Make a source of the rows of a pandas DataFrame, shipped inside the plan.

        The index is dropped (``preserve_index=False``); columns convert as
        :meth:`pyarrow.Table.from_pandas` converts them.

        Parameters
        ----------
        df
            A :class:`pandas.DataFrame` with unique string column names.

        Returns
        -------
        DataFrame
            The rows.

        Raises
        ------
        TypeError
            If `df` is not a pandas DataFrame, a column name is not a string, or a column
            does not convert to Arrow.
        ValueError
            If a column name repeats or the data exceeds 1 GiB.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1, 2], "y": ["a", None]})).schema
        x: int64
        y: ...string
        """
        import pandas as pd

        op = "from_pandas"
        if not isinstance(df, pd.DataFrame):
            raise ArgumentTypeError(f"{op}: expected a pandas.DataFrame, got {type(df).__name__}")
        seen: set[str] = set()
        for name in df.columns:
            if not isinstance(name, str):
                raise ArgumentTypeError(
                    f"{op}: column names must be strings, got {name!r} (of type "
                    f"{type(name).__name__}); rename them, e.g. df.columns = df.columns.map(str)"
                )
            if name in seen:
                raise SchemaError(
                    f"{op}: the column {name!r} appears more than once: {list(df.columns)}"
                )
            seen.add(name)
        try:
            table = pa.Table.from_pandas(df, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise ArgumentTypeError(f"{op}: a column does not convert to Arrow: {e}") from e
        return self._inline(op, table, f"{op}({len(df)} rows)")

    def from_arrow(
        self,
        table_or_batches: pa.Table
        | pa.RecordBatch
        | pa.RecordBatchReader
        | Iterable[pa.RecordBatch],
    ) -> DataFrame:
        """Make a source of Arrow data, shipped inside the plan.

        Parameters
        ----------
        table_or_batches
            A :class:`pyarrow.Table`, a :class:`pyarrow.RecordBatch`, a
            :class:`pyarrow.RecordBatchReader` (read to its end here), an iterable of
            record batches with one schema, or any object with ``__arrow_c_stream__``.

        Returns
        -------
        DataFrame
            The rows.

        Raises
        ------
        TypeError
            If the argument is of another kind.
        ValueError
            If no batch is given, batches differ in schema, column names are not unique,
            or the data exceeds 1 GiB.

        Examples
        --------
        >>> import pyarrow as pa
        >>> import flinkgo as fg
        >>> batch = pa.record_batch([pa.array([1, 2], pa.int32())], names=["x"])
        >>> fg.Environment().from_arrow([batch, batch])
        <DataFrame from_arrow(4 rows) [x: int32]>
        """
        op = "from_arrow"
        table = _sources.arrow_table(op, table_or_batches)
        return self._inline(op, table, f"{op}({table.num_rows} rows)")

    def read_csv(
        self,
        path_or_glob: str | os.PathLike[str],
        *,
        schema: pa.Schema | Mapping[str, pa.DataType | str] | None = None,
        delimiter: str = ",",
        has_header: bool = True,
    ) -> DataFrame:
        r"""Make a source that reads CSV files.

        Parameters
        ----------
        path_or_glob
            A file, or a glob pattern (``*``, ``?``, ``[...]``, ``**`` for any depth)
            expanded now to the sorted list of matching files.
        schema
            The columns and their types (a :class:`pyarrow.Schema` or a dict of name to
            type). With a header, columns are matched by name and others are skipped;
            without, by position. Checked against the first block of the first file.
            Default: inferred by pyarrow from the first file's first block.
        delimiter
            The one-character field separator.
        has_header
            Whether each file's first line holds the column names. Without a header and
            schema, columns are named ``f0``, ``f1``, ...

        Returns
        -------
        DataFrame
            The rows of the files, in order.

        Raises
        ------
        FileNotFoundError
            If no file matches `path_or_glob` (the message names it).
        IsADirectoryError
            If `path_or_glob` is a directory.
        ValueError
            If the schema cannot be inferred, or the first file does not fit `schema`.

        Examples
        --------
        >>> import os, tempfile
        >>> import flinkgo as fg
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "a.csv"), "w") as f:
        ...     _ = f.write("sensor,temp\na,20.5\n")
        >>> fg.Environment().read_csv(os.path.join(d, "*.csv")).schema
        sensor: string
        temp: double
        """
        op = "read_csv"
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise InvalidArgumentError(f"{op}: delimiter must be one character, got {delimiter!r}")
        if not isinstance(has_header, bool):
            raise ArgumentTypeError(f"{op}: has_header must be a bool, got {has_header!r}")
        given = None if schema is None else _sources.to_schema(op, schema)
        paths = _sources.resolve_paths(op, path_or_glob, example="*.csv")
        out = _sources.csv_schema(
            op, paths[0], schema=given, delimiter=delimiter, has_header=has_header
        )
        from flinkgo._proto import plan_pb2 as pb

        file = pb.FileSource(
            format=pb.FileSource.CSV,
            paths=paths,
            csv_has_header=has_header,
            csv_delimiter=delimiter,
        )
        return self._source(pb.Source(file=file), f"{op}({os.fspath(path_or_glob)})", out)

    def read_jsonl(
        self,
        path_or_glob: str | os.PathLike[str],
        *,
        schema: pa.Schema | Mapping[str, pa.DataType | str] | None = None,
    ) -> DataFrame:
        r"""Make a source that reads JSON-lines files (one JSON object per line).

        Parameters
        ----------
        path_or_glob
            A file, or a glob pattern expanded now to the sorted list of matching files.
        schema
            The columns and their types (a :class:`pyarrow.Schema` or a dict of name to
            type); fields not in it are skipped, missing ones are null. Default: inferred
            by pyarrow from the first file's first block.

        Returns
        -------
        DataFrame
            The rows of the files, in order.

        Raises
        ------
        FileNotFoundError
            If no file matches `path_or_glob` (the message names it).
        ValueError
            If the schema cannot be inferred, or the first file does not fit `schema`.

        Examples
        --------
        >>> import os, tempfile
        >>> import flinkgo as fg
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "a.jsonl"), "w") as f:
        ...     _ = f.write('{"sensor": "a", "temp": 20.5}\n')
        >>> fg.Environment().read_jsonl(os.path.join(d, "a.jsonl"), schema={"temp": "float"})
        <DataFrame read_jsonl(...a.jsonl) [temp: double]>
        """
        op = "read_jsonl"
        given = None if schema is None else _sources.to_schema(op, schema)
        paths = _sources.resolve_paths(op, path_or_glob, example="*.jsonl")
        out = _sources.jsonl_schema(op, paths[0], schema=given)
        from flinkgo._proto import plan_pb2 as pb

        file = pb.FileSource(format=pb.FileSource.JSONL, paths=paths)
        return self._source(pb.Source(file=file), f"{op}({os.fspath(path_or_glob)})", out)

    def read_parquet(self, path_or_glob: str | os.PathLike[str]) -> DataFrame:
        """Make a source that reads Parquet files, with the schema of the first file.

        Parameters
        ----------
        path_or_glob
            A file, or a glob pattern expanded now to the sorted list of matching files.

        Returns
        -------
        DataFrame
            The rows of the files, in order.

        Raises
        ------
        FileNotFoundError
            If no file matches `path_or_glob` (the message names it).
        ValueError
            If the first file is not Parquet.

        Examples
        --------
        >>> import os, tempfile
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> d = tempfile.mkdtemp()
        >>> pd.DataFrame({"x": [1, 2]}).to_parquet(os.path.join(d, "part-0.parquet"))
        >>> fg.Environment().read_parquet(os.path.join(d, "part-*.parquet")).schema
        x: int64
        """
        op = "read_parquet"
        paths = _sources.resolve_paths(op, path_or_glob, example="*.parquet")
        out = _sources.parquet_schema(op, paths[0])
        from flinkgo._proto import plan_pb2 as pb

        file = pb.FileSource(format=pb.FileSource.PARQUET, paths=paths)
        return self._source(pb.Source(file=file), f"{op}({os.fspath(path_or_glob)})", out)

    def read_kafka(
        self,
        topics: str | Sequence[str] | re.Pattern[str],
        *,
        bootstrap_servers: str,
        schema: pa.Schema | Mapping[str, pa.DataType | str] | None = None,
        value_format: Literal["json", "raw", "csv"] = "json",
        group_id: str | None = None,
        starting_offsets: Literal["earliest", "latest"]
        | datetime.datetime
        | Mapping[int | tuple[str, int], int] = "earliest",
        bounded: Literal["latest"] | None = None,
        key_column: str | None = None,
        timestamp_column: str | None = None,
        partition_column: str | None = None,
        offset_column: str | None = None,
        topic_column: str | None = None,
        properties: Mapping[str, str | int | bool] | None = None,
    ) -> DataFrame:
        """Make a source that reads Kafka topics, as Flink's ``KafkaSource``.

        Every partition is a split: the source's subtasks share the partitions as Flink
        assigns them, each partition's offset is part of every checkpoint (so a job
        restored from one, at any parallelism, reads every record exactly once into its
        exactly-once sinks), and with `group_id` the offsets of each completed checkpoint
        are committed to that consumer group, for monitoring only. New partitions, and
        new topics of a pattern, are found every ``partition.discovery.interval.ms``
        (5 minutes; a property) and read from their earliest offset. Records become Arrow
        batches in the runtime, one partition per batch, so ``with_watermark`` keeps a
        watermark per partition.

        Parameters
        ----------
        topics
            A topic, a list of topics, or a compiled regular expression (RE2 syntax)
            that whole topic names match.
        bootstrap_servers
            ``"host:port"`` of one broker or more, comma-separated.
        schema
            The value's columns and types (a :class:`pyarrow.Schema` or a dict of name
            to type). Required for ``"json"`` and ``"csv"``; ``"raw"`` defaults to one
            binary column ``value``.
        value_format
            ``"json"``: a JSON object per record (fields not in `schema` are skipped,
            missing ones are null); ``"csv"``: a CSV row per record, columns in schema
            order; ``"raw"``: the value's bytes (binary, or string if declared so).
            JSON and CSV skip records with a null value (tombstones), as Flink does.
        group_id
            The consumer group the offsets are committed to when checkpoints complete;
            None commits nothing.
        starting_offsets
            Where a fresh start begins: ``"earliest"``, ``"latest"``, an aware
            :class:`datetime.datetime` (the first record at or after it), or a dict of
            partition (or ``(topic, partition)``) to offset, partitions not in it starting
            at their earliest offset. A restored job starts where its checkpoint was.
        bounded
            None reads forever; ``"latest"`` stops at the latest offsets of the moment
            the job starts (then the source ends, and a batch job can finish).
        key_column, timestamp_column, partition_column, offset_column, topic_column
            Names for the record's key (binary), timestamp (``timestamp[ms, UTC]``),
            partition (int32), offset (int64) and topic (string) as columns after the
            value's; None (the default) leaves each out.
        properties
            Kafka consumer and Flink KafkaSource properties: ``isolation.level``
            (``read_committed`` to read only committed transactions),
            ``partition.discovery.interval.ms``, ``commit.offsets.on.checkpoint``,
            ``client.id``, ``fetch.max.bytes``, ``max.partition.fetch.bytes``,
            ``fetch.min.bytes``, ``fetch.max.wait.ms``. Others fail the job when it starts.

        Returns
        -------
        DataFrame
            The records' rows; unbounded unless ``bounded="latest"``.

        Raises
        ------
        InvalidArgumentError
            If an option has a bad value or `schema` is missing for JSON or CSV.
        SchemaError
            If a metadata column's name is already taken.

        Examples
        --------
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> env.read_kafka(
        ...     "events",
        ...     bootstrap_servers="localhost:9092",
        ...     schema={"user": "string", "amount": "double"},
        ...     timestamp_column="ts",
        ... ).schema
        user: string
        amount: double
        ts: timestamp[ms, tz=UTC] not null
        """
        msg, out, name = _kafka.kafka_source(
            topics,
            bootstrap_servers=bootstrap_servers,
            schema=schema,
            value_format=value_format,
            group_id=group_id,
            starting_offsets=starting_offsets,
            bounded=bounded,
            metadata={
                "key_column": key_column,
                "timestamp_column": timestamp_column,
                "partition_column": partition_column,
                "offset_column": offset_column,
                "topic_column": topic_column,
            },
            properties=properties,
        )
        from flinkgo._proto import plan_pb2 as pb

        return self._source(pb.Source(kafka=msg), name, out)

    def datagen(
        self,
        *,
        rows: int | None = None,
        schema: pa.Schema | Mapping[str, pa.DataType | str],
        rows_per_second: float | None = None,
        seed: int = 0,
    ) -> DataFrame:
        """Make a source of generated rows, as Flink's datagen connector.

        The values are a pure function of (seed, row index, column), the same at any
        parallelism, so a test can compute them: integers, timestamps, dates, times,
        durations and decimals count the row index (0, 1, 2, ...); strings and binary
        are ``"<column>-<row index>"``; only floats (uniform in [0, 1)) and bools are
        pseudo-random, from `seed`.

        Parameters
        ----------
        rows
            How many rows to generate, a positive integer; None (the default) for an
            unbounded stream.
        schema
            The columns: a :class:`pyarrow.Schema` or a dict of name to type. Types are
            flat: numbers, bool, strings, binary, dates, times, timestamps, durations,
            decimals.
        rows_per_second
            A positive rate limit; None (the default) for as fast as possible.
        seed
            The seed of the float and bool columns; the same seed generates the same rows.

        Returns
        -------
        DataFrame
            The generated rows.

        Raises
        ------
        TypeError
            If an option has the wrong type or a column type is nested.
        ValueError
            If `rows` or `rows_per_second` is not positive.

        Examples
        --------
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> env.datagen(rows=1000, schema={"id": "int64", "name": "string"}, seed=7).schema
        id: int64
        name: string
        """
        op = "datagen"
        count = _sources.positive_int(op, "rows", rows, upper=2**63 - 1)
        rate = _sources.positive_rate(op, "rows_per_second", rows_per_second)
        seed = _sources.int64(op, "seed", seed)
        out = _sources.to_schema(op, schema)
        for f in out:
            t = f.type
            if not (
                pa.types.is_primitive(t)
                or pa.types.is_string(t)
                or pa.types.is_large_string(t)
                or pa.types.is_binary(t)
                or pa.types.is_large_binary(t)
                or pa.types.is_decimal(t)
            ) or pa.types.is_null(t):
                raise ArgumentTypeError(
                    f"{op}: cannot generate the column {f.name!r} of type {t}; datagen makes "
                    "numbers, bools, strings, binary, dates, times, timestamps, durations "
                    "and decimals"
                )
        from flinkgo._proto import plan_pb2 as pb

        gen = pb.DatagenSource(rows=count or 0, rows_per_second=rate or 0.0, seed=seed)
        return self._source(pb.Source(datagen=gen), op, out)

    def nexmark(
        self,
        kind: Literal["bid", "auction", "person"],
        *,
        events: int,
        events_per_second: float | None = None,
        seed: int = 0,
    ) -> DataFrame:
        """Make a source of Nexmark-shaped auction events: persons, auctions or bids.

        The events follow the semantics of Nexmark's generator (the benchmark suite of
        Flink, Beam and others): a stream of `events` events, persons, auctions and bids
        in the proportions 1:3:46, of which this source returns those of `kind`. Persons
        and auctions are numbered from 1000; a bid names an auction and a bidder made
        before it (or a few ids ahead, as Nexmark's generator does), half the bids go to
        "hot" auctions and most to "hot" bidders; prices are in cents; ``extra`` pads each
        event to Nexmark's average size. Event ``e`` happens at 2015-07-15T00:00:00Z plus
        ``e / 10`` ms. Every value is a pure function of `seed` and the event's number:
        the same at any parallelism, and the three kinds read with the same `events` and
        `seed` are views of one stream (joins of bids to auctions and persons match).

        Columns (``timestamp`` is ``timestamp[ms, tz=UTC]``, ids and prices ``int64``):

        - ``"person"``: id, name, email_address, credit_card, city, state, date_time,
          extra
        - ``"auction"``: id, item_name, description, initial_bid, reserve, date_time,
          expires, seller, category, extra
        - ``"bid"``: auction, bidder, price, date_time, extra

        Parameters
        ----------
        kind
            Which events to return: ``"bid"``, ``"auction"`` or ``"person"``.
        events
            How many events the stream has, of every kind, a positive integer up to
            2**62 (so ``events=50_000`` gives 1000 persons, 3000 auctions and 46 000
            bids).
        events_per_second
            A positive rate limit on the events of the stream (of every kind), as
            Nexmark's event rate; None (the default) for as fast as possible.
        seed
            The seed of the random values; the same seed generates the same events.

        Returns
        -------
        DataFrame
            The events of `kind`.

        Raises
        ------
        TypeError
            If an option has the wrong type.
        ValueError
            If `kind` is not one of the three, or `events` or `events_per_second` is not
            positive.

        Examples
        --------
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> env.nexmark("bid", events=50_000).schema
        auction: int64 not null
        bidder: int64 not null
        price: int64 not null
        date_time: timestamp[ms, tz=UTC] not null
        extra: string not null
        """
        op = "nexmark"
        kinds = ("bid", "auction", "person")
        if not isinstance(kind, str):
            raise ArgumentTypeError(
                f"{op}: kind must be one of 'bid', 'auction', 'person', got {kind!r} "
                f"(of type {type(kind).__name__})"
            )
        if kind not in kinds:
            raise InvalidArgumentError(
                f"{op}: kind must be one of 'bid', 'auction', 'person', got {kind!r}"
            )
        if events is None:
            raise InvalidArgumentError(
                f"{op}: events must be a positive integer (the stream is bounded), got None"
            )
        count = _sources.positive_int(op, "events", events, upper=2**62)
        rate = _sources.positive_rate(op, "events_per_second", events_per_second)
        seed = _sources.int64(op, "seed", seed)
        from flinkgo._proto import plan_pb2 as pb

        msg = pb.NexmarkSource(
            kind=kind.upper(), events=count, events_per_second=rate or 0.0, seed=seed
        )
        return self._source(pb.Source(nexmark=msg), f"nexmark {kind}", _NEXMARK_SCHEMAS[kind])

    # --- the plan -------------------------------------------------------------------------

    def plan(self, name: str = "flinkgo job") -> JobPlan:
        """Build the job plan of every sink added so far.

        Parameters
        ----------
        name
            The job's name.

        Returns
        -------
        JobPlan
            A new plan: nodes in topological order with ids from 1, their inputs and
            partitioning, uid, parallelism, output schema, and the job's default
            parallelism and config (:meth:`JobPlan.to_bytes` gives what the runtime
            receives). Building it again gives an equal plan.

        Raises
        ------
        ValueError
            If no sink was added, or two steps have the same uid.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> df = env.from_pandas(pd.DataFrame({"k": ["a"], "v": [1]}))
        >>> _ = df.key_by("k").agg(fg.sum("v")).print()
        >>> plan = env.plan()
        >>> [n.kind for n in plan.nodes]
        ['source', 'keyed_aggregate', 'sink']
        >>> plan.nodes[1].inputs[0]
        PlanInput(node=1, partitioning='HASH', keys=('k',), output='MAIN')
        """
        return JobPlan._of(self._plan_of(self._sinks, name))

    # --- running ----------------------------------------------------------------------------

    def execute(
        self, name: str = "flinkgo job", *, progress: bool = True, detached: bool = True
    ) -> JobResult:
        """Run the job of every sink added so far and wait until it ends.

        The sinks are then forgotten, as in Flink: a second call runs only the sinks added
        after this one (and fails if there are none). The job runs on the server of
        :attr:`endpoint`, else on the embedded local runtime, whose standard output (the
        rows of ``print`` sinks) is forwarded to :data:`sys.stdout`.

        Parameters
        ----------
        name
            The job's name.
        progress
            Show a live status line and a summary on standard error when it is a
            terminal (never otherwise).
        detached
            On a server (:attr:`endpoint`), whether the job outlives this process: a
            detached job (the default, as Flink's ``flink run -d``) runs until it ends
            or is canceled (Ctrl-C here, :meth:`JobClient.cancel`, ``flinkgo cancel``),
            even when this process exits or its connection breaks; with
            ``detached=False`` (attached) the server cancels the job as soon as this
            process goes away. A job with collect sinks (``to_pandas``, ``collect``)
            always runs attached: its rows have nowhere else to go. On the embedded
            local runtime it makes no difference: the runtime is a child of this
            process and stops, canceling its jobs, when the process exits.

        Returns
        -------
        JobResult
            The job's id, state, elapsed seconds and metrics per operator.

        Raises
        ------
        ValueError
            If no sink was added (see :meth:`plan`).
        JobFailedError
            If the job failed: the runtime's message, and for a UDF its name and the
            Python traceback (``.udf``, ``.traceback``, ``.operator``, ``.kind``).
        JobCanceledError
            If the job was canceled from elsewhere (``flinkgo cancel``).
        KeyboardInterrupt
            On Ctrl-C, once the runtime canceled the job.
        RuntimeStartError
            If the embedded runtime cannot be found, built or started.
        RuntimeConnectionError
            If the runtime cannot be reached or the connection breaks.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> df = env.from_pandas(pd.DataFrame({"x": [1, 2, 3]}))
        >>> _ = df.filter(fg.col("x") > 1).print()
        >>> result = env.execute("filter demo")
        +I[2]
        +I[3]
        >>> result.state, result.operator("sink-3").rows_in
        ('FINISHED', 2)
        """
        plan = self._plan_of(self._sinks, name)
        self._sinks = []
        self._unexecuted.clear()
        try:
            return self._execute(plan, progress=progress, detached=detached)
        except KeyboardInterrupt:
            # Ctrl-C canceled the job: the client's frames would say nothing more.
            raise KeyboardInterrupt from None

    def execute_async(self, name: str = "flinkgo job", *, detached: bool = True) -> JobClient:
        """Start the job of every sink added so far and return at once.

        As :meth:`execute`, but the job runs in the background: the returned
        :class:`~flinkgo.JobClient` gives its id and state, takes savepoints, cancels
        it, and waits for its :class:`~flinkgo.JobResult`. No progress line is shown.
        It returns once the job runs: a job the runtime refuses or that fails to start
        raises here.

        A script that starts a job on a server (:attr:`endpoint`) and exits leaves it
        running there (``flinkgo list``, ``flinkgo cancel``), unless ``detached=False``.
        On the embedded local runtime the job ends with this process (the runtime is
        its child): wait for it with :meth:`JobClient.result`.

        Parameters
        ----------
        name
            The job's name.
        detached
            As for :meth:`execute`.

        Returns
        -------
        JobClient
            The running job.

        Raises
        ------
        ValueError
            If no sink was added (see :meth:`plan`).
        JobFailedError
            If the job failed before it ran: an invalid plan or config (a checkpoint
            interval without a checkpoint directory, say), a failed start.
        RuntimeStartError, RuntimeConnectionError
            As for :meth:`execute`.

        Examples
        --------
        >>> import flinkgo as fg
        >>> env = fg.Environment(config={"execution.checkpointing.savepoint-dir": "/tmp/sp"})
        >>> _ = env.datagen(schema={"id": "int64"}, rows_per_second=100).print()
        >>> job = env.execute_async("endless")  # doctest: +SKIP
        >>> path = job.stop_with_savepoint()  # doctest: +SKIP
        >>> job.result().state  # doctest: +SKIP
        'FINISHED'
        """
        plan = self._plan_of(self._sinks, name)
        self._sinks = []
        self._unexecuted.clear()
        job = JobClient(
            name,
            lambda on_event: self._with_client(
                lambda client: client.execute(
                    plan, progress=False, on_event=on_event, detached=detached
                )
            ),
            self._with_client,
        )
        job._wait_running()
        return job

    def explain(self, name: str = "flinkgo job") -> str:
        """Return the physical plan of the sinks added so far, as the runtime plans it.

        Nothing runs and the sinks stay. The text shows operators with their uids and
        parallelism, chaining, partitioners, and the edges the forward-mismatch policy
        changed; print it with ``print(env.explain())``.

        Parameters
        ----------
        name
            The job's name.

        Returns
        -------
        str
            The explanation.

        Raises
        ------
        ValueError
            If no sink was added (see :meth:`plan`).
        InvalidPlanError
            If the runtime's planner refuses the plan; the message is the planner's.
        RuntimeStartError, RuntimeConnectionError
            As for :meth:`execute`.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment(parallelism=2)
        >>> _ = env.from_pandas(pd.DataFrame({"x": [1]})).print()
        >>> print(env.explain())  # doctest: +SKIP
        """
        plan = self._plan_of(self._sinks, name)
        return self._with_client(lambda client: client.explain(plan))

    # --- the plan of some sinks --------------------------------------------------------------

    def _plan_of(self, sinks: list[Step], name: str) -> plan_pb2.JobPlan:
        return build_plan(sinks, name, default_parallelism=self._parallelism, config=self._config)

    def _execute(
        self, plan: plan_pb2.JobPlan, *, progress: bool, detached: bool = False
    ) -> JobResult:
        return self._with_client(
            lambda client: client.execute(plan, progress=progress, detached=detached)
        )

    def _with_client(self, use: Callable[[Client], _T]) -> _T:
        from flinkgo._client import Client

        if self._endpoint is not None:
            with Client(self._endpoint, **self._credentials) as client:
                return use(client)
        from flinkgo import _runtime

        runtime = _runtime.local_runtime()
        try:
            with Client(runtime.endpoint) as client:
                return use(client)
        except RuntimeConnectionError as e:
            # Most likely the runtime died: let it finish exiting, so that its exit
            # status is known and the next job starts a new one.
            runtime.wait_exit(1.0)
            raise RuntimeConnectionError(f"{e}\n{runtime.describe()}") from None
        finally:
            runtime.drain_output()

    # --- internals --------------------------------------------------------------------------

    def _source(self, body: Message, name: str, schema: pa.Schema) -> DataFrame:
        return DataFrame(Step(self, "source", body, name, schema))

    def _inline(self, op: str, table: pa.Table, name: str) -> DataFrame:
        schema = _sources.check_schema(op, table.schema)
        table = table.replace_schema_metadata(None)
        if not table.schema.equals(schema):
            table = table.cast(schema)  # large_string as string: one logical type
        ipc = _sources.table_ipc_bytes(table)
        if len(ipc) > _MAX_INLINE_BYTES:
            raise InvalidArgumentError(
                f"{op}: the data is {len(ipc) >> 20} MiB as Arrow IPC, more than a plan "
                f"carries ({_MAX_INLINE_BYTES >> 20} MiB); write it to Parquet files and "
                "read them with read_parquet"
            )
        from flinkgo._proto import plan_pb2 as pb

        return self._source(pb.Source(arrow=pb.ArrowSource(ipc=ipc)), name, table.schema)

    def _add_sink(self, step: Step) -> None:
        self._sinks.append(step)
        self._unexecuted.append(step.name)


def _warn_unexecuted_sinks(names: list[str]) -> None:
    # Called when an Environment is collected or at interpreter exit: a sink that was
    # defined but never executed wrote nothing, which is worth a word.
    if names:
        warnings.warn(
            f"flinkgo: {len(names)} sink(s) were defined but never executed, so they "
            f"wrote nothing: {', '.join(names)}; call env.execute() (or "
            "env.execute_async()) after defining them",
            UnexecutedSinkWarning,
            stacklevel=1,
        )


_NEXMARK_TIME = pa.timestamp("ms", tz="UTC")
# The columns of Nexmark's Person, Auction and Bid in snake case, never null; the
# runtime checks them against its generator's (connectors/nexmark/reader.go).
_NEXMARK_SCHEMAS = {
    kind: pa.schema([pa.field(name, typ, nullable=False) for name, typ in columns])
    for kind, columns in {
        "person": [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("email_address", pa.string()),
            ("credit_card", pa.string()),
            ("city", pa.string()),
            ("state", pa.string()),
            ("date_time", _NEXMARK_TIME),
            ("extra", pa.string()),
        ],
        "auction": [
            ("id", pa.int64()),
            ("item_name", pa.string()),
            ("description", pa.string()),
            ("initial_bid", pa.int64()),
            ("reserve", pa.int64()),
            ("date_time", _NEXMARK_TIME),
            ("expires", _NEXMARK_TIME),
            ("seller", pa.int64()),
            ("category", pa.int64()),
            ("extra", pa.string()),
        ],
        "bid": [
            ("auction", pa.int64()),
            ("bidder", pa.int64()),
            ("price", pa.int64()),
            ("date_time", _NEXMARK_TIME),
            ("extra", pa.string()),
        ],
    }.items()
}
