"""DataFrames: the steps of a pipeline, from sources to sinks.

A :class:`DataFrame` is one step of a job (a source, ``select``, ``filter``, ...) and the
rows it produces; it holds no data. Every method checks its arguments against the input's
schema at once, so a mistake is reported at the line that makes it, and returns a new
DataFrame with the output schema (:attr:`DataFrame.schema`). Sinks (``print``,
``write_csv``, ...) register themselves on the :class:`~flinkgo.Environment`, whose
:meth:`~flinkgo.Environment.plan` turns everything that leads to a sink into a
:class:`~flinkgo.JobPlan` and :meth:`~flinkgo.Environment.execute` runs it.
:meth:`DataFrame.collect` and :meth:`DataFrame.to_pandas` run a job of their own,
ending in a collect sink.

Decisions, following Flink and polars:

- The partitioning methods (``rebalance()``, ``shuffle()``, ...) set how rows travel
  into the *next* step that consumes the returned DataFrame; without one, the edge is
  an implicit forward edge; the last call wins. ``key_by`` partitions by the hash of the
  key columns, and refuses an edge that already has a partitioning.
- ``uid()`` and ``set_parallelism()`` configure the step that produced the DataFrame, as
  Flink's ``uid``/``setParallelism`` do: every DataFrame derived from that step sees it,
  and giving a step a second, different value is an error. Steps consumed more than once
  appear once in the plan.
- ``select``, ``with_column`` and ``with_columns`` are one plan node kind, ``Select``;
  ``with_column`` replaces a column of the same name in place, else appends.
- A sink's output schema in the plan is the schema it writes. File sinks write a
  directory of part files (one per sink subtask); paths are made absolute.

Python UDFs are pickled (cloudpickle) when the step that uses them is made. Steps and
their conversion into the plan live in :mod:`flinkgo._graph`, below this module and the
Environment's. This module must not import grpc or the worker; the generated plan
module is imported on first use.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from flinkgo._durations import parse_duration
from flinkgo._graph import IMPLICIT, LATE_ROWS, Partitioning, PartitioningKind, Step
from flinkgo._sources import local_path, to_schema
from flinkgo.aggregates import WINDOW_ONLY, Aggregate
from flinkgo.exceptions import (
    ArgumentTypeError,
    ExpressionTypeError,
    InvalidArgumentError,
    PathIsFileError,
    SchemaError,
)
from flinkgo.expr import Expr, _Alias, _Column, coalesce, resolve, to_expr, unknown_column
from flinkgo.types import ROW_KIND_COLUMN, schema_ipc_bytes
from flinkgo.udfs import UserDefinedFunction
from flinkgo.windows import Window

if TYPE_CHECKING:
    import pandas as pd
    from google.protobuf.message import Message

__all__ = ["DataFrame", "KeyedDataFrame", "Sink", "WindowedDataFrame"]

LateRows = Literal["drop", "keep"]
"""What a window or an interval join does with its late rows: drop them, or keep them as a
side output (see :meth:`DataFrame.late_rows`)."""

Emit = Literal["auto", "final", "updates"]
"""When a keyed aggregation emits its results: see :meth:`KeyedDataFrame.agg`."""

SinkMode = Literal["error", "overwrite", "append"]
"""What a file sink does with a directory that already holds files: see
:meth:`DataFrame.write_csv`."""

_SINK_MODES = ("error", "overwrite", "append")

# The plan's KeyedAggregate.Emit values.
_EMIT_MODES = {"auto": "EMIT_AUTO", "final": "EMIT_FINAL", "updates": "EMIT_UPDATES"}


class DataFrame:
    """Rows produced by one step of a pipeline, with a known schema.

    Get one from a source of :class:`~flinkgo.Environment`, such as
    :meth:`~flinkgo.Environment.from_pandas` or :meth:`~flinkgo.Environment.read_csv`,
    not from this constructor. Every method returns a new DataFrame; nothing runs until
    the job does.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> env = fg.Environment()
    >>> df = env.from_pandas(pd.DataFrame({"sensor": ["a", "b"], "temp": [20.5, 31.0]}))
    >>> hot = df.filter(fg.col("temp") > 30).with_column("f", fg.col("temp") * 1.8 + 32)
    >>> hot.schema
    sensor: ...string
    temp: double
    f: double
    >>> hot.print()
    <Sink print>
    """

    __slots__ = ("_partitioning", "_step")

    def __init__(self, step: Step, partitioning: Partitioning = IMPLICIT) -> None:
        self._step = step
        self._partitioning = partitioning

    # --- description --------------------------------------------------------------------

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows."""
        return self._step.schema

    @property
    def columns(self) -> list[str]:
        """The column names, in order."""
        return list(self._step.schema.names)

    def __repr__(self) -> str:
        """Show the step and the columns, e.g. ``<DataFrame filter(x > 1) [x: int64]>``."""
        cols = ", ".join(f"{f.name}: {f.type}" for f in self._step.schema)
        edge = "" if self._partitioning is IMPLICIT else f" -> {self._partitioning.kind}"
        return f"<DataFrame {self._step.name} [{cols}]{edge}>"

    # --- transformations ------------------------------------------------------------------

    def select(self, *exprs: Expr | str | list[Expr | str]) -> DataFrame:
        """Compute new columns from expressions; the output has exactly those columns.

        Parameters
        ----------
        *exprs
            Expressions (:func:`~flinkgo.col`, :func:`~flinkgo.lit`, operators, UDF
            calls) or column names, or one list of them. Output names (see
            :meth:`Expr.output_name`) must be unique; rename with :meth:`Expr.alias`.

        Returns
        -------
        DataFrame
            The selected columns.

        Raises
        ------
        ColumnNotFoundError
            If an expression names a column the input does not have.
        TypeError
            If a function does not apply to its argument types.
        ValueError
            If no expression is given or two outputs have the same name.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}))
        >>> df.select("a", (fg.col("a") + fg.col("b")).alias("total")).schema
        a: int64
        total: int64
        """
        op = "select"
        if len(exprs) == 1 and isinstance(exprs[0], (list, tuple)):
            exprs = tuple(exprs[0])
        if not exprs:
            raise InvalidArgumentError("select: no columns given; pass column names or expressions")
        converted = [to_expr(e, op=op) for e in exprs]
        columns = [self._named(e, op) for e in converted]
        return self._project(op, f"select({', '.join(map(str, converted))})", columns)

    def with_column(self, name: str, expr: Expr | str | bool | int | float) -> DataFrame:
        """Add a column computed by `expr`, or replace the column of that name in place.

        Parameters
        ----------
        name
            The column's name.
        expr
            An expression, a column name, or a bool/int/float constant.

        Returns
        -------
        DataFrame
            The input's columns with `name` replaced or appended.

        Raises
        ------
        ColumnNotFoundError
            If `expr` names a column the input does not have.
        TypeError
            If a function does not apply to its argument types.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"n": [1, 2]}))
        >>> df.with_column("half", fg.col("n") / 2).schema
        n: int64
        half: double
        >>> df.with_column("n", fg.col("n").cast("int32")).schema
        n: int32
        """
        return self._with({name: expr}, op="with_column")

    def with_columns(self, **named_exprs: Expr | str | bool | int | float) -> DataFrame:
        """Add or replace several columns, each computed from the input's columns.

        Parameters
        ----------
        **named_exprs
            Column name = expression, column name or bool/int/float constant. All are
            evaluated against the input, not against each other.

        Returns
        -------
        DataFrame
            The input's columns with those replaced in place, then the new ones in order.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"a": [1], "b": [2.5]}))
        >>> df.with_columns(a=fg.col("a") * 10, c=fg.col("a") < fg.col("b")).schema
        a: int64
        b: double
        c: bool
        """
        if not named_exprs:
            raise InvalidArgumentError("with_columns: no columns given; pass name=expression")
        return self._with(named_exprs, op="with_columns")

    def rename(self, mapping: Mapping[str, str]) -> DataFrame:
        """Rename columns: ``{old: new}``; the others keep their names, all keep their order.

        Parameters
        ----------
        mapping
            Old name to new name, as polars' ``rename`` and pandas' ``rename(columns=)``.

        Raises
        ------
        ColumnNotFoundError
            If an old name is not a column.
        SchemaError
            If two output columns would have the same name.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"a": [1], "b": [2]}))
        >>> df.rename({"a": "x"}).columns
        ['x', 'b']
        """
        op = "rename"
        if not isinstance(mapping, Mapping) or not mapping:
            raise ArgumentTypeError(
                f"{op}: expected a non-empty dict of old name to new name, got {mapping!r}"
            )
        for old, new in mapping.items():
            if self.schema.get_field_index(old) < 0:
                raise unknown_column(op, old, self.schema.names)
            if not isinstance(new, str) or not new:
                raise ArgumentTypeError(
                    f"{op}: the new name of {old!r} must be a non-empty string, got {new!r}"
                )
        columns = [
            self._named(_Column(n).alias(mapping[n]) if n in mapping else _Column(n), op)
            for n in self.schema.names
        ]
        text = ", ".join(f"{o} -> {n}" for o, n in mapping.items())
        return self._project(op, f"rename({text})", columns)

    def drop(self, *columns: str) -> DataFrame:
        """Remove columns; the others keep their order.

        Parameters
        ----------
        *columns
            Column names (at least one; not all of the columns).

        Raises
        ------
        ColumnNotFoundError
            If a name is not a column.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"a": [1], "b": [2], "c": [3]}))
        >>> df.drop("b").columns
        ['a', 'c']
        """
        op = "drop"
        if len(columns) == 1 and isinstance(columns[0], (list, tuple)):
            columns = tuple(columns[0])
        if not columns:
            raise InvalidArgumentError(f"{op}: no columns given")
        for c in columns:
            if not isinstance(c, str):
                raise ArgumentTypeError(f"{op}: expected column names, got {c!r}")
            if self.schema.get_field_index(c) < 0:
                raise unknown_column(op, c, self.schema.names)
        kept = [n for n in self.schema.names if n not in columns]
        if not kept:
            raise InvalidArgumentError(f"{op}: dropping {list(columns)} leaves no columns")
        out = [self._named(_Column(n), op) for n in kept]
        return self._project(op, f"drop({', '.join(columns)})", out)

    def filter(self, predicate: Expr | str) -> DataFrame:
        """Keep the rows where `predicate` is true (false and null drop the row).

        Parameters
        ----------
        predicate
            A bool expression, or the name of a bool column.

        Returns
        -------
        DataFrame
            The same columns.

        Raises
        ------
        ColumnNotFoundError
            If the predicate names a column the input does not have.
        TypeError
            If the predicate is not of type bool, or a function in it does not apply to
            its argument types.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"temp": [20.5, 31.0]}))
        >>> df.filter((fg.col("temp") > 30) | fg.col("temp").is_null())
        <DataFrame filter((temp > 30) | temp.is_null()) [temp: double]>
        """
        op = "filter"
        expr = to_expr(predicate, op=op)
        resolved = resolve(expr, self.schema, op=op)
        if resolved.type != pa.bool_():
            raise ArgumentTypeError(
                f"filter: the predicate `{expr}` is of type {resolved.type}, expected bool; "
                "compare it, e.g. col('x') > 0, or test it with .is_not_null()"
            )
        from flinkgo._proto import plan_pb2 as pb

        return self._then(
            "filter", pb.Filter(predicate=resolved.proto), f"filter({expr})", self.schema
        )

    def map_batches(
        self,
        fn: Callable[[pd.DataFrame], pd.DataFrame],
        *,
        schema: pa.Schema | Mapping[str, pa.DataType | str],
        name: str | None = None,
        row_kinds: bool = False,
    ) -> DataFrame:
        """Transform each batch of rows with a Python function on pandas DataFrames.

        The function runs in the Python workers: it is called with one
        :class:`pandas.DataFrame` per batch and returns a DataFrame with the columns of
        `schema`, and any number of rows. It is pickled with cloudpickle here.

        Parameters
        ----------
        fn
            A function taking and returning a :class:`pandas.DataFrame`.
        schema
            The output schema: a :class:`pyarrow.Schema` or a dict of column name to
            type (a :class:`pyarrow.DataType` or a type name).
        name
            The step's name in plans and errors; defaults to the function's name.
        row_kinds
            Keyword-only. The function handles row kinds: its DataFrame has a last
            column ``_row_kind`` (int8, Flink's ``RowKind`` bytes: 0 ``+I``, 1 ``-U``,
            2 ``+U``, 3 ``-D``), and it returns one too, after the columns of
            `schema`. Over a changelog (an aggregation that emits updates, say)
            map_batches is refused without it, since the function would treat
            retractions as rows; over an append-only input every row is ``+I`` and the
            function must return ``+I`` rows only.

        Returns
        -------
        DataFrame
            Rows with `schema`.

        Raises
        ------
        TypeError
            If `fn` is not a plain function (an ``async def``, a generator, a class or a
            UDF), cannot be pickled, or `schema` is not a schema.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"word": ["a b", "c"]}))
        >>> def split(batch: pd.DataFrame) -> pd.DataFrame:
        ...     return batch.assign(word=batch["word"].str.split()).explode("word")
        >>> df.map_batches(split, schema={"word": "string"})
        <DataFrame map_batches(split) [word: string]>
        """
        op = "map_batches"
        out_schema = to_schema(op, schema)
        if isinstance(fn, UserDefinedFunction):
            raise ArgumentTypeError(
                f"map_batches: expected a plain function from pandas DataFrame to pandas "
                f"DataFrame, got the UDF {fn.name!r}; apply UDFs with select, with_column "
                "or filter, or pass its .func"
            )
        try:
            declared = UserDefinedFunction(
                fn, pa.struct(list(out_schema)), func_type="pandas", name=name
            )
            spec = declared._to_spec()
        except (TypeError, ValueError) as e:
            raise type(e)(f"map_batches: {e}") from e
        if not isinstance(row_kinds, bool):
            raise ArgumentTypeError(
                f"map_batches: row_kinds must be True or False, got {row_kinds!r}"
            )
        worker_schema = out_schema
        if row_kinds:
            if ROW_KIND_COLUMN in out_schema.names:
                raise InvalidArgumentError(
                    f"map_batches: {ROW_KIND_COLUMN!r} is the row-kind column row_kinds=True "
                    "adds; leave it out of schema"
                )
            worker_schema = out_schema.append(pa.field(ROW_KIND_COLUMN, pa.int8()))
        spec.return_schema = schema_ipc_bytes(worker_schema)
        # The worker calls it with the whole batch and takes any number of rows.
        from flinkgo._proto import plan_pb2 as pb
        from flinkgo._proto import worker_pb2

        spec.func_type = worker_pb2.FUNC_TYPE_PANDAS_BATCH
        return self._then(
            "map_batches",
            pb.MapBatches(function=spec, handles_row_kinds=row_kinds),
            f"map_batches({spec.name})",
            out_schema,
        )

    def key_by(self, *keys: str | Expr) -> KeyedDataFrame:
        """Partition the rows by the hash of key columns, for a keyed aggregation.

        Parameters
        ----------
        *keys
            Column names (or ``col(name)``), at least one.

        Returns
        -------
        KeyedDataFrame
            Call :meth:`KeyedDataFrame.agg` on it.

        Raises
        ------
        ColumnNotFoundError
            If a key is not a column of the input.
        ValueError
            If no key is given, a key repeats, or a partitioning was already chosen for
            this edge (``df.rebalance().key_by(...)``).

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"sensor": ["a", "a"], "temp": [20.0, 22.0]})
        ... )
        >>> df.key_by("sensor").agg(fg.mean("temp").alias("avg_temp"), fg.count()).schema
        sensor: ...string
        avg_temp: double
        count: int64
        """
        op = "key_by"
        if not keys:
            raise InvalidArgumentError("key_by: no key columns given")
        names: list[str] = []
        for k in keys:
            if isinstance(k, _Column):
                k = k.output_name()
            if not isinstance(k, str):
                raise ArgumentTypeError(
                    f"key_by: keys are column names or col(name), got {k!r}; to key by an "
                    "expression, add it as a column first with with_column"
                )
            if self.schema.get_field_index(k) < 0:
                raise unknown_column(op, k, self.schema.names)
            if k in names:
                raise InvalidArgumentError(f"key_by: the key {k!r} is given twice")
            names.append(k)
        if self._partitioning is not IMPLICIT:
            raise InvalidArgumentError(
                f"key_by: this edge is already partitioned by {self._partitioning.kind.lower()}"
                "(); key_by partitions by the hash of the keys, so drop the other call"
            )
        return KeyedDataFrame(self, tuple(names))

    def window(
        self,
        window: Window,
        *,
        allowed_lateness: datetime.timedelta | str | None = None,
        late_rows: LateRows = "drop",
    ) -> WindowedDataFrame:
        """Group all rows into event-time windows (one subtask, as Flink's ``windowAll``).

        The same as :meth:`KeyedDataFrame.window` without keys: every row of a window
        meets in a single subtask, so the aggregation runs at parallelism 1.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"ts": pd.to_datetime([0, 1500], unit="ms"), "x": [1, 2]})
        ... )
        >>> df.window(fg.tumble("ts", "1 s")).agg(fg.sum("x")).columns
        ['window_start', 'window_end', 'x']
        """
        return WindowedDataFrame(self, (), window, allowed_lateness, late_rows)

    def late_rows(self, side: Literal["left", "right"] | None = None) -> DataFrame:
        """Return the rows a step with ``late_rows="keep"`` found late, as a DataFrame.

        Call it on what ``window(..., late_rows="keep").agg(...)`` or
        ``interval_join(..., late_rows="keep")`` returned (Flink's ``getSideOutput`` of
        ``sideOutputLateData``, ``sideOutputLeftLateData``, ``sideOutputRightLateData``).
        The rows come out unchanged, with the columns of the input they came from:

        - of a window, the rows too late for every window they belong to (each past
          ``window_end - 1 + allowed_lateness``), exactly those ``"drop"`` would drop
          and count; rows late within ``allowed_lateness`` update their windows;
        - of an interval join (`side` ``"left"`` or ``"right"``), that side's rows
          whose time is behind the watermark, which match nothing.

        The late rows are a side output of that step, not a step of their own: set
        ``uid`` and ``set_parallelism`` on the step's DataFrame. With nothing reading
        them, late rows are dropped as with ``"drop"``.

        Parameters
        ----------
        side
            For an interval join, ``"left"`` or ``"right"``: whose late rows. None
            (the default) for a window.

        Returns
        -------
        DataFrame
            The late rows, with the schema of the input they came from.

        Raises
        ------
        ValueError
            If this DataFrame is not a window aggregation or an interval join with
            ``late_rows="keep"``, or `side` does not fit it.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"k": ["a"], "ts": pd.to_datetime([0], unit="ms"), "x": [1]})
        ... )
        >>> counts = df.key_by("k").window(fg.tumble("ts", "1 s"), late_rows="keep").agg(
        ...     fg.count()
        ... )
        >>> counts.late_rows().columns
        ['k', 'ts', 'x']
        """
        from flinkgo._proto import plan_pb2 as pb

        op = "late_rows"
        step = self._step
        if step.kind == "window_aggregate":
            if side is not None:
                raise InvalidArgumentError(
                    f"{op}: a window has one input, so no side; call late_rows() without "
                    f"side (got {side!r})"
                )
            output, source = pb.Input.LATE_ROWS, step.inputs[0][0]
        elif step.kind == "interval_join":
            if side not in ("left", "right"):
                raise InvalidArgumentError(
                    f"{op}: an interval join has late rows of each input: give side='left' "
                    f"or side='right' (got {side!r})"
                )
            right = side == "right"
            output = pb.Input.LATE_ROWS_RIGHT if right else pb.Input.LATE_ROWS
            source = step.inputs[1 if right else 0][0]
        else:
            raise InvalidArgumentError(
                f"{op}: {step.name} is neither a window aggregation nor an interval join, "
                'which are the steps with late rows (with late_rows="keep")'
            )
        if getattr(step.body, "late_rows", None) != pb.WindowAggregate.KEEP:
            raise InvalidArgumentError(
                f'{op}: {step.name} drops its late rows; give it late_rows="keep" to keep them'
            )
        which = f", {side}" if side else ""
        late = Step(
            step.env,
            LATE_ROWS,
            pb.Input(output=output),
            f"late_rows({step.name}{which})",
            source.schema,
            ((step, IMPLICIT),),
        )
        return DataFrame(late)

    def limit(self, n: int) -> DataFrame:
        """Keep at most `n` rows (Spark's limit), and end the pipeline once they have passed.

        The limit counts rows in one subtask, so the result holds exactly `n` rows (all of
        them if the input has fewer); which rows, over a parallel input, is unspecified.
        Once `n` rows have passed, the sources upstream stop reading: a limit bounds any
        pipeline, so ``env.datagen(...).limit(5).to_pandas()`` returns. A checkpoint saves
        the count, so a restored job passes `n` rows in all.

        Parameters
        ----------
        n
            How many rows to keep, a positive int.

        Returns
        -------
        DataFrame
            The same columns, at most `n` rows.

        Raises
        ------
        TypeError
            If `n` is not an int.
        ValueError
            If `n` is not positive.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1, 2, 3]}))
        >>> df.limit(2)
        <DataFrame limit(2) [x: int64]>
        """
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"limit: n must be a positive int, got {n!r}")
        if n < 1:
            raise ValueError(f"limit: n must be a positive int, got {n}")
        from flinkgo._proto import plan_pb2 as pb

        return self._then("limit", pb.Limit(n=n), f"limit({n})", self.schema)

    def drop_duplicates(self, *, subset: str | Sequence[str] | None = None) -> DataFrame:
        """Keep the first row seen of each combination of values (Spark's dropDuplicates).

        The combinations seen are kept as keyed state: checkpoints save them, and a job
        restored from a checkpoint or savepoint, at any parallelism, drops the rows of
        combinations seen before it. Rows come out as they arrive, so this works on
        unbounded input too (the state grows with the number of distinct combinations).

        Parameters
        ----------
        subset
            The column, or columns, whose values identify a duplicate; ``None`` (the
            default) for every column. The input is partitioned by their hash.

        Returns
        -------
        DataFrame
            The same columns; of the rows with equal `subset` values, the first a subtask
            receives.

        Raises
        ------
        ColumnNotFoundError
            If a subset column is not a column of the input.
        ValueError
            If `subset` is empty or names a column twice.
        TypeError
            If `subset` holds something other than column names.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"sensor": ["a", "a", "b"], "temp": [20.0, 22.0, 19.5]})
        ... )
        >>> df.drop_duplicates(subset="sensor")
        <DataFrame drop_duplicates(sensor) [sensor: ...string, temp: double]>
        """
        op = "drop_duplicates"
        if subset is None:
            names = list(self.schema.names)
        else:
            given = [subset] if isinstance(subset, str) else list(subset)
            if not given:
                raise InvalidArgumentError(
                    "drop_duplicates: subset is empty; give column names, or None for all"
                )
            names = []
            for c in given:
                if not isinstance(c, str):
                    raise ArgumentTypeError(
                        f"drop_duplicates: subset holds column names, got {c!r}"
                    )
                if self.schema.get_field_index(c) < 0:
                    raise unknown_column(op, c, self.schema.names)
                if c in names:
                    raise InvalidArgumentError(f"drop_duplicates: the column {c!r} is given twice")
                names.append(c)
        from flinkgo._proto import plan_pb2 as pb

        return self._then(
            "drop_duplicates",
            pb.DropDuplicates(subset=names),
            f"drop_duplicates({', '.join(names)})",
            self.schema,
        )

    def with_watermark(
        self,
        time: str | Expr,
        max_out_of_orderness: str | datetime.timedelta,
        *,
        idle_timeout: str | datetime.timedelta | None = None,
    ) -> DataFrame:
        """Give rows an event time and make watermarks for it (Flink's bounded out-of-orderness).

        The event time of a row is its `time` column, a timestamp of any unit (counted in
        whole milliseconds, as Flink's). Rows pass unchanged. Every
        ``pipeline.auto-watermark-interval`` (200 ms by default) the step sends the
        watermark *greatest event time seen - max_out_of_orderness - 1 ms* downstream
        when it advanced: rows later than that are late for the windows and timers that
        follow. At the end of a bounded input the maximum watermark follows, so that every
        window fires. Right after a file source (or after a built-in expression as `time`),
        each file has its own watermark and the step sends the minimum over the files, so
        that reading one file does not make the next one's rows late. Watermarks are not
        checkpointed: after a restore they start again from the rows that come
        (docs/semantics.md#event-time).

        Parameters
        ----------
        time
            The name of a timestamp column, or an expression that computes one (a built-in
            expression, or a Python UDF call such as parsing a string). An expression's
            column is named as in ``select`` (:meth:`Expr.output_name`; rename it with
            :meth:`Expr.alias`) and is added to the rows, replacing an input column of that
            name in place, as :meth:`with_column` does. The planner computes it in an
            operator of its own, uid ``<uid>/extract-timestamp``; the watermarks are made by
            ``<uid>/watermarks``, where ``<uid>`` is this step's :meth:`uid`.
        max_out_of_orderness
            How late a row may be relative to the greatest event time seen: a
            :class:`datetime.timedelta` or a duration string in Flink's syntax (``"10 s"``,
            ``"500 ms"``, ``"5 min"``); ``"0 ms"`` for ascending timestamps.
        idle_timeout
            When set (a positive duration), the step's output is marked idle after that
            long without rows, so that it stops holding back the watermark of the steps
            that merge it with other inputs; its next row makes it active again (Flink's
            ``withIdleness``).

        Returns
        -------
        DataFrame
            The same rows, with the `time` column when it is computed.

        Raises
        ------
        ColumnNotFoundError
            If `time` names a column the input does not have.
        SchemaError
            If the `time` column is not a timestamp.
        TypeError
            If `time` is neither a column name nor an expression, or a duration is neither
            a string nor a timedelta.
        ValueError
            If a duration does not parse, is negative, is not a whole number of
            milliseconds, or the idle timeout is zero.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"ts": pd.to_datetime(["2026-01-01 00:00:01"]), "v": [1]})
        ... )
        >>> df.with_watermark("ts", "5 s").uid("events")
        <DataFrame with_watermark(ts, 5000 ms) [ts: timestamp[...], v: int64]>
        """
        op = "with_watermark"
        delay = parse_duration(max_out_of_orderness, what=f"{op}: max_out_of_orderness")
        idle = 0
        if idle_timeout is not None:
            idle = parse_duration(idle_timeout, what=f"{op}: idle_timeout", allow_zero=False)
        from flinkgo._proto import plan_pb2 as pb

        extractor = None
        schema = self.schema
        if isinstance(time, str):
            column = time
        elif isinstance(time, Expr):
            column = time.output_name()
            if not isinstance(time, _Column):
                computed = self._with({column: time}, op=f"{op} time")
                select = computed._step.body
                assert isinstance(select, pb.Select)  # _with makes a select step
                extractor = select
                schema = computed.schema
        else:
            raise ArgumentTypeError(
                f"{op}: time must be a column name or an expression, got {time!r}"
            )
        if schema.get_field_index(column) < 0:
            raise unknown_column(op, column, schema.names)
        field_type = schema.field(column).type
        if not pa.types.is_timestamp(field_type):
            raise SchemaError(
                f"{op}: the time column {column!r} is {field_type}, not a timestamp; convert it "
                "first, e.g. with_watermark(fg.col(...).cast(pa.timestamp('ms')), ...) or a UDF "
                "returning timestamps"
            )
        body = pb.WatermarkAssigner(
            time_column=column,
            max_out_of_orderness_ms=delay,
            idle_timeout_ms=idle,
            time_extractor=extractor,
        )
        shown = time._inner if isinstance(time, _Alias) else time
        text = column if extractor is None else f"{column} = {shown}"
        name = f"{op}({text}, {delay} ms" + (f", idle {idle} ms)" if idle else ")")
        return self._then("watermark_assigner", body, name, schema)

    def union(self, *others: DataFrame) -> DataFrame:
        """Concatenate the rows of DataFrames that have the same schema.

        Parameters
        ----------
        *others
            At least one DataFrame of the same Environment, with the same column names
            and types in the same order (nullability may differ).

        Returns
        -------
        DataFrame
            All rows; a column is nullable if it is nullable in any input.

        Raises
        ------
        ValueError
            If no other DataFrame is given, one comes from another Environment, or the
            schemas differ (the message shows both).

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> a = env.from_pandas(pd.DataFrame({"x": [1]}))
        >>> b = env.from_pandas(pd.DataFrame({"x": [2, 3]}))
        >>> a.union(b)
        <DataFrame union [x: int64]>
        """
        if not others:
            raise InvalidArgumentError("union: no other DataFrame given")
        fields = list(self.schema)
        for i, other in enumerate(others, start=1):
            if not isinstance(other, DataFrame):
                kind = f"{type(other).__module__}.{type(other).__qualname__}"
                raise ArgumentTypeError(
                    f"union: input {i} is a {kind}, not a flinkgo DataFrame; make one with an "
                    "Environment's source, such as env.from_pandas(...)"
                )
            if other._step.env is not self._step.env:
                raise InvalidArgumentError(
                    f"union: input {i} ({other._step.name}) belongs to another Environment; "
                    "build every part of a job from one Environment"
                )
            if [(f.name, f.type) for f in other.schema] != [(f.name, f.type) for f in fields]:
                raise SchemaError(
                    f"union: input {i} ({other._step.name}) has another schema than this "
                    f"DataFrame ({self._step.name}); union needs the same column names and "
                    "types in the same order\n"
                    f"this DataFrame: {_describe(self.schema)}\n"
                    f"input {i}: {' ' * (len('this DataFrame') - len(f'input {i}'))}"
                    f"{_describe(other.schema)}"
                )
            fields = [
                f.with_nullable(f.nullable or g.nullable)
                for f, g in zip(fields, other.schema, strict=True)
            ]
        from flinkgo._proto import plan_pb2 as pb

        inputs = ((self._step, self._partitioning),) + tuple(
            (o._step, o._partitioning) for o in others
        )
        step = Step(self._step.env, "union", pb.Union(), "union", pa.schema(fields), inputs)
        return DataFrame(step)

    def window_join(
        self,
        right: DataFrame,
        *,
        on: str | Sequence[str] | None = None,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
        how: Literal["inner", "left", "right", "full"] = "inner",
    ) -> DataFrame:
        """Join the rows of two windowed aggregations of the same window (Flink's window join).

        Both inputs are outputs of ``window(...).agg(...)`` (or have their ``window_start``
        and ``window_end`` timestamp columns): a left row matches the right rows of equal
        keys and the same window, as Flink's window join ``ON L.window_start =
        R.window_start AND L.window_end = R.window_end AND L.k = R.k``. A window's rows
        come out when it fires; with ``how="left"``, ``"right"`` or ``"full"`` a window
        row without a counterpart comes out padded with nulls once the watermark passes
        its end. It runs as :meth:`interval_join` with both bounds zero on
        ``window_end`` and ``window_start`` among the keys, so nulls, state and restores
        follow that operator.

        A window with ``allowed_lateness`` is refused: a late row re-fires the window
        behind the watermark, and the join would have to drop it.

        Parameters
        ----------
        right
            The other windowed aggregation, of the same Environment.
        on, left_on, right_on
            The key columns besides the window: `on` when both sides name them alike,
            else `left_on` and `right_on`; none for two windows over all rows.
        how
            ``"inner"`` (the default), ``"left"``, ``"right"`` or ``"full"``.

        Returns
        -------
        DataFrame
            The left columns, then the right ones (``window_start_right``,
            ``window_end_right`` and any other right column named like a left one get
            the suffix ``_right``); every column nullable.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> def per_minute(seconds, name):
        ...     rows = pd.DataFrame({"ad": [1], "ts": pd.to_datetime(seconds, unit="s")})
        ...     w = env.from_pandas(rows).key_by("ad").window(fg.tumble("ts", "1 min"))
        ...     return w.agg(fg.count().alias(name))
        >>> views, clicks = per_minute([0], "views"), per_minute([5], "clicks")
        >>> views.window_join(clicks, on="ad").schema.names  # doctest: +NORMALIZE_WHITESPACE
        ['ad', 'window_start', 'window_end', 'views',
         'ad_right', 'window_start_right', 'window_end_right', 'clicks']
        """
        op = "window_join"
        if not isinstance(right, DataFrame):
            raise ArgumentTypeError(f"{op}: right must be a flinkgo DataFrame, got {right!r}")
        for side, df in (("left", self), ("right", right)):
            for column in ("window_start", "window_end"):
                if df.schema.get_field_index(column) < 0:
                    raise SchemaError(
                        f"{op}: the {side} input has no {column!r} column; join the outputs "
                        "of window(...).agg(...)"
                    )
            lateness = _upstream_window_lateness_ms(df._step)
            if lateness:
                raise InvalidArgumentError(
                    f"{op}: the {side} input's window has allowed_lateness ({lateness} ms): a "
                    "late row fires its window again behind the watermark, which the join "
                    "would have to drop; join windows without allowed_lateness"
                )
        if on is not None and (left_on is not None or right_on is not None):
            raise InvalidArgumentError(f"{op}: give on=, or left_on= and right_on=, not both")
        if (left_on is None) != (right_on is None):
            raise InvalidArgumentError(f"{op}: give left_on= and right_on= together")

        def listed(given: str | Sequence[str] | None) -> list[str]:
            return [given] if isinstance(given, str) else list(given or [])

        lkeys = listed(on if on is not None else left_on)
        rkeys = listed(on if on is not None else right_on)
        joined = self.interval_join(
            right,
            left_on=[*lkeys, "window_start"],
            right_on=[*rkeys, "window_start"],
            left_time="window_end",
            right_time="window_end",
            lower="0 ms",
            upper="0 ms",
            how=how,
        )
        pairs = ", ".join(f"{a} = {b}" for a, b in zip(lkeys, rkeys, strict=True)) or "window"
        joined._step.name = f"window_join({pairs}, how={how})"
        return joined

    def interval_join(
        self,
        right: DataFrame,
        *,
        on: str | Sequence[str] | None = None,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
        left_time: str,
        right_time: str,
        lower: datetime.timedelta | str,
        upper: datetime.timedelta | str,
        how: Literal["inner", "left", "right", "full"] = "inner",
        late_rows: LateRows = "drop",
    ) -> DataFrame:
        """Join rows of equal keys whose event times are close (Flink's interval join).

        A left row at time ``lt`` matches the right rows of its key at times ``rt`` with
        ``lt + lower <= rt <= lt + upper``, bounds included, as Flink's
        ``IntervalJoinOperator``. Both sides buffer their rows until the watermark passes
        the last time a row of the other side could still match them; ``how="left"``,
        ``"right"`` or ``"full"`` then emits a row that never matched, padded with nulls
        (no retraction is ever needed). A row with a null key or a null time never
        matches: an inner side drops it, an outer side emits it padded at once. A row
        that arrives behind the watermark is dropped, as Flink does, or with
        ``late_rows="keep"`` kept (read with ``late_rows(side="left")`` and
        ``late_rows(side="right")`` on the result). A bounded input ends with the
        maximum watermark, so every row is decided at the end.

        The buffered rows are keyed state: checkpoints and savepoints keep them, and a job
        restored at another parallelism goes on matching them.

        Parameters
        ----------
        right
            The other DataFrame, of the same Environment.
        on, left_on, right_on
            The key columns: `on` when both sides name them alike, else `left_on` and
            `right_on` (as many, of equal types). Each input is partitioned by them.
            With `on`, the output has one column per key, as polars' and Spark's
            ``join(on=)``: the left's, filled from the right on a right-only row of a
            ``"right"`` or ``"full"`` join; with `left_on`/`right_on` it has both.
        left_time, right_time
            Each side's event-time column, a timestamp of any unit.
        lower, upper
            The bounds, a :class:`datetime.timedelta` or a duration string such as
            ``"5 min"`` (``"-5 min"`` for a negative one); ``lower <= upper``.
        how
            ``"inner"`` (the default), ``"left"``, ``"right"`` or ``"full"``.
        late_rows
            ``"drop"`` (the default) or ``"keep"``: send each side's rows behind the
            watermark, unchanged, to a side output read with :meth:`late_rows`
            (Flink's ``sideOutputLeftLateData`` and ``sideOutputRightLateData``).

        Returns
        -------
        DataFrame
            The left columns, then the right ones (a right column named like a left one
            gets the suffix ``_right``); every column nullable.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> clicks = env.from_pandas(pd.DataFrame(
        ...     {"ad": [1], "ts": pd.to_datetime(["2024-01-01 10:00:05"])}))
        >>> views = env.from_pandas(pd.DataFrame(
        ...     {"ad": [1], "ts": pd.to_datetime(["2024-01-01 10:00:00"])}))
        >>> views.interval_join(clicks, on="ad", left_time="ts", right_time="ts",
        ...                     lower="0 s", upper="10 min")  # doctest: +NORMALIZE_WHITESPACE
        <DataFrame interval_join(ad = ad, ts + 0s <= ts_right <= ts + 10m0s)
         [ad: int64, ts: timestamp[...], ad_right: int64, ts_right: timestamp[...]]>
        """
        op = "interval_join"
        if not isinstance(right, DataFrame):
            raise ArgumentTypeError(f"{op}: right must be a flinkgo DataFrame, got {right!r}")
        if right._step.env is not self._step.env:
            raise InvalidArgumentError(
                f"{op}: right ({right._step.name}) belongs to another Environment; build "
                "every part of a job from one Environment"
            )
        if on is not None and (left_on is not None or right_on is not None):
            raise InvalidArgumentError(f"{op}: give on=, or left_on= and right_on=, not both")
        if on is None and (left_on is None or right_on is None):
            raise InvalidArgumentError(f"{op}: give the keys, on= or left_on= and right_on=")

        def names(given: str | Sequence[str] | None, side: str) -> list[str]:
            listed = [given] if isinstance(given, str) else list(given or [])
            if not listed or not all(isinstance(c, str) for c in listed):
                raise ArgumentTypeError(f"{op}: the {side} keys are column names, got {given!r}")
            return listed

        lkeys = names(on if on is not None else left_on, "left")
        rkeys = names(on if on is not None else right_on, "right")
        if len(lkeys) != len(rkeys):
            raise InvalidArgumentError(
                f"{op}: {len(lkeys)} left keys {lkeys} but {len(rkeys)} right keys {rkeys}"
            )
        sides = (
            ("left", self.schema, lkeys, left_time),
            ("right", right.schema, rkeys, right_time),
        )
        for side, schema, keys, time in sides:
            for c in [*keys, time]:
                if not isinstance(c, str):
                    raise ArgumentTypeError(f"{op}: {side} columns are names, got {c!r}")
                if schema.get_field_index(c) < 0:
                    raise unknown_column(f"{op} ({side})", c, schema.names)
            if not pa.types.is_timestamp(schema.field(time).type):
                raise SchemaError(
                    f"{op}: the {side} time column {time!r} is {schema.field(time).type}, not a "
                    "timestamp; parse or cast it first (with_column(..., col(...).cast("
                    "'timestamp[ms]')))"
                )
        for lk, rk in zip(lkeys, rkeys, strict=True):
            lt, rt = self.schema.field(lk).type, right.schema.field(rk).type
            if lt != rt:
                raise SchemaError(
                    f"{op}: left key {lk!r} is {lt} but right key {rk!r} is {rt}; cast one so "
                    "both have one type"
                )
        if how not in ("inner", "left", "right", "full"):
            raise InvalidArgumentError(
                f"{op}: how is 'inner', 'left', 'right' or 'full', got {how!r}"
            )
        if late_rows not in ("drop", "keep"):
            raise InvalidArgumentError(
                f'{op}: late_rows must be "drop" or "keep" (read them with .late_rows(side=...) '
                f"on the result), got {late_rows!r}"
            )
        lower_td, upper_td = (
            _signed_duration(lower, f"{op} lower"),
            _signed_duration(upper, f"{op} upper"),
        )
        if lower_td > upper_td:
            raise InvalidArgumentError(
                f"{op}: lower ({lower_td}) is above upper ({upper_td}); no row could match"
            )
        fields = [f.with_nullable(True) for f in self.schema]
        taken = set(self.schema.names)
        for f in right.schema:
            name = f.name
            if name in taken:
                name = f"{name}_right"
                if name in taken:
                    raise SchemaError(
                        f"{op}: the right column {f.name!r} would be renamed {name!r}, which is "
                        "also a column; rename one first"
                    )
            taken.add(name)
            fields.append(f.with_name(name).with_nullable(True))
        from flinkgo._proto import plan_pb2 as pb

        micro = datetime.timedelta(microseconds=1)
        body = pb.IntervalJoin(
            left_keys=lkeys,
            right_keys=rkeys,
            left_time=left_time,
            right_time=right_time,
            lower_ns=lower_td // micro * 1000,
            upper_ns=upper_td // micro * 1000,
            how=getattr(pb.IntervalJoin, how.upper()),
            late_rows=late_rows.upper(),
        )
        right_time_out = fields[len(self.schema) + right.schema.get_field_index(right_time)].name
        pairs = ", ".join(f"{a} = {b}" for a, b in zip(lkeys, rkeys, strict=True))
        label = (
            f"{op}({pairs}, {left_time} + {_fmt(lower_td)} <= {right_time_out} <= "
            f"{left_time} + {_fmt(upper_td)}{'' if how == 'inner' else ', ' + how})"
        )
        inputs = ((self._step, self._partitioning), (right._step, right._partitioning))
        step = Step(self._step.env, op, body, label, pa.schema(fields), inputs)
        return DataFrame(step)

    def join(
        self,
        right: DataFrame,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
        how: Literal["inner", "left", "right", "full"] = "inner",
        suffix: str = "_right",
        nulls_equal: bool = False,
        state_ttl: datetime.timedelta | str | None = None,
    ) -> DataFrame:
        """Join rows of equal keys (a regular equi-join, as Flink SQL's ``JOIN``).

        Both inputs are kept in keyed state, by join key: every row joins the stored rows
        of the other side, whenever either arrives, so the result of bounded inputs
        equals SQL's. An inner join of append-only inputs emits append-only rows. An
        outer side (``how="left"``, ``"right"`` or ``"full"``) emits its row padded with
        nulls while it has no match, and retracts that row when the first match arrives
        (the output is then a changelog, as Flink's; :meth:`collect` applies it).

        Keys compare with ``=``: a row with a null in a key column never matches, so it
        is never stored; an inner side drops it and an outer side emits it padded at
        once. ``nulls_equal=True`` compares with ``IS NOT DISTINCT FROM`` instead (null
        equals null). Without ``state_ttl`` (or ``table.exec.state.ttl``) the state grows
        with every distinct row of unbounded inputs.

        Parameters
        ----------
        right
            The other DataFrame, of the same Environment.
        on, left_on, right_on
            The key columns: `on` when both sides name them alike, else `left_on` and
            `right_on` (as many, of equal types). Each input is partitioned by them.
            With `on`, the output has one column per key, as polars' and Spark's
            ``join(on=)``: the left's, filled from the right on a right-only row of a
            ``"right"`` or ``"full"`` join; with `left_on`/`right_on` it has both.
        how
            ``"inner"`` (the default), ``"left"``, ``"right"`` or ``"full"``.
        suffix
            Appended to a right column named like a left one.
        nulls_equal
            Whether a null key matches a null key.
        state_ttl
            How long a stored row is kept after it was written (processing time, as
            Flink's state TTL), a :class:`datetime.timedelta` or a duration string such
            as ``"1 h"``; a row older than that no longer matches. Default: the job's
            ``table.exec.state.ttl`` (default: forever).

        Returns
        -------
        DataFrame
            The left columns, then the right ones (without `on`'s keys); every column
            nullable.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> orders = env.from_pandas(pd.DataFrame({"order": [1], "customer": [7]}))
        >>> customers = env.from_pandas(pd.DataFrame({"customer": [7], "name": ["Ann"]}))
        >>> orders.join(customers, on="customer", how="left").to_pandas()
           order  customer name
        0      1         7  Ann
        """
        op = "join"
        if not isinstance(right, DataFrame):
            raise ArgumentTypeError(f"{op}: right must be a flinkgo DataFrame, got {right!r}")
        if right._step.env is not self._step.env:
            raise InvalidArgumentError(
                f"{op}: right ({right._step.name}) belongs to another Environment; build "
                "every part of a job from one Environment"
            )
        if on is not None and (left_on is not None or right_on is not None):
            raise InvalidArgumentError(f"{op}: give on=, or left_on= and right_on=, not both")
        if on is None and (left_on is None or right_on is None):
            raise InvalidArgumentError(f"{op}: give the keys, on= or left_on= and right_on=")

        def names(given: str | Sequence[str] | None, side: str) -> list[str]:
            listed = [given] if isinstance(given, str) else list(given or [])
            if not listed or not all(isinstance(c, str) for c in listed):
                raise ArgumentTypeError(f"{op}: the {side} keys are column names, got {given!r}")
            return listed

        lkeys = names(on if on is not None else left_on, "left")
        rkeys = names(on if on is not None else right_on, "right")
        if len(lkeys) != len(rkeys):
            raise InvalidArgumentError(
                f"{op}: {len(lkeys)} left keys {lkeys} but {len(rkeys)} right keys {rkeys}"
            )
        for side, schema, keys in (("left", self.schema, lkeys), ("right", right.schema, rkeys)):
            for c in keys:
                if schema.get_field_index(c) < 0:
                    raise unknown_column(f"{op} ({side})", c, schema.names)
        for lk, rk in zip(lkeys, rkeys, strict=True):
            lt, rt = self.schema.field(lk).type, right.schema.field(rk).type
            if lt != rt:
                raise SchemaError(
                    f"{op}: left key {lk!r} is {lt} but right key {rk!r} is {rt}; cast one so "
                    "both have one type"
                )
        if how not in ("inner", "left", "right", "full"):
            raise InvalidArgumentError(
                f"{op}: how is 'inner', 'left', 'right' or 'full', got {how!r}"
            )
        if not isinstance(suffix, str) or not suffix:
            raise InvalidArgumentError(f"{op}: suffix must be a non-empty string, got {suffix!r}")
        if not isinstance(nulls_equal, bool):
            raise ArgumentTypeError(f"{op}: nulls_equal must be True or False, got {nulls_equal!r}")
        ttl_ms = _state_ttl_ms(state_ttl, op)
        fields = [f.with_nullable(True) for f in self.schema]
        taken = set(self.schema.names)
        for f in right.schema:
            name = f.name
            if name in taken:
                name = f"{name}{suffix}"
                if name in taken:
                    raise SchemaError(
                        f"{op}: the right column {f.name!r} would be renamed {name!r}, which is "
                        "also a column; rename one first or pass another suffix"
                    )
            taken.add(name)
            fields.append(f.with_name(name).with_nullable(True))
        from flinkgo._proto import plan_pb2 as pb

        body = pb.Join(
            left_keys=lkeys,
            right_keys=rkeys,
            how=getattr(pb.Join, how.upper()),
            suffix=suffix,
            nulls_equal=nulls_equal,
            state_ttl_ms=ttl_ms,
            left_unique_key=_unique_key(self._step),
            right_unique_key=_unique_key(right._step),
        )
        pairs = ", ".join(f"{a} = {b}" for a, b in zip(lkeys, rkeys, strict=True))
        extra = "" if how == "inner" else f", {how}"
        if nulls_equal:
            extra += ", nulls_equal"
        inputs = ((self._step, self._partitioning), (right._step, right._partitioning))
        step = Step(self._step.env, op, body, f"{op}({pairs}{extra})", pa.schema(fields), inputs)
        joined = DataFrame(step)
        if on is None:
            return joined
        # on= keeps one column per key, as polars and Spark's join(on=) do: the left's,
        # which is null on a right-only row of a right or full join, so there it is
        # coalesce(left key, right key); the right's key columns go.
        right_names = [f.name for f in fields[len(self.schema) :]]
        right_keys = {right_names[right.schema.get_field_index(k)] for k in rkeys}
        columns = []
        for f in fields:
            if f.name in right_keys:
                continue
            key = _Column(f.name)
            if f.name in lkeys and how in ("right", "full"):
                right_key = right_names[right.schema.get_field_index(f.name)]
                columns.append(joined._named(coalesce(key, _Column(right_key)).alias(f.name), op))
            else:
                columns.append(joined._named(key, op))
        return joined._project(op, f"{op} keys({', '.join(lkeys)})", columns)

    # --- partitioning of the next edge ----------------------------------------------------

    def forward(self) -> DataFrame:
        """Send each subtask's rows to the same subtask of the next step.

        The next step must have the same parallelism (else the runtime applies
        ``pipeline.forward-mismatch``). Without any partitioning call, edges are
        implicit forward edges.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
        >>> df.forward()
        <DataFrame from_pandas(1 rows) [x: int64] -> FORWARD>
        """
        return self._partition("FORWARD")

    def rebalance(self) -> DataFrame:
        """Spread rows round robin over all subtasks of the next step.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
        >>> df.rebalance().filter(fg.col("x") > 0)
        <DataFrame filter(x > 0) [x: int64]>
        """
        return self._partition("REBALANCE")

    def rescale(self) -> DataFrame:
        """Spread rows round robin over a local subset of the next step's subtasks.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).rescale()
        <DataFrame from_pandas(1 rows) [x: int64] -> RESCALE>
        """
        return self._partition("RESCALE")

    def shuffle(self) -> DataFrame:
        """Send each row to a random subtask of the next step.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).shuffle()
        <DataFrame from_pandas(1 rows) [x: int64] -> SHUFFLE>
        """
        return self._partition("SHUFFLE")

    def broadcast(self) -> DataFrame:
        """Send every row to every subtask of the next step.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).broadcast()
        <DataFrame from_pandas(1 rows) [x: int64] -> BROADCAST>
        """
        return self._partition("BROADCAST")

    def global_(self) -> DataFrame:
        """Send every row to subtask 0 of the next step (``global`` is a keyword).

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).global_()
        <DataFrame from_pandas(1 rows) [x: int64] -> GLOBAL>
        """
        return self._partition("GLOBAL")

    # --- step options ---------------------------------------------------------------------

    def uid(self, uid: str) -> DataFrame:
        """Give the step that produced this DataFrame a stable uid.

        The uid matches the step's state in savepoints; it must be unique in the job
        (checked by :meth:`~flinkgo.Environment.plan`). Steps that the planner adds on
        the user's behalf derive their uids from it.

        Parameters
        ----------
        uid
            A non-empty string.

        Returns
        -------
        DataFrame
            The same rows and pending partitioning.

        Raises
        ------
        ValueError
            If the step already has another uid.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> df = env.from_pandas(pd.DataFrame({"x": [1]})).uid("numbers")
        >>> _ = df.print()
        >>> env.plan().nodes[0].uid
        'numbers'
        """
        self._step.set_uid(uid)
        return DataFrame(self._step, self._partitioning)

    def set_parallelism(self, parallelism: int) -> DataFrame:
        """Run the step that produced this DataFrame with `parallelism` subtasks.

        Parameters
        ----------
        parallelism
            An integer from 1 to 32768.

        Returns
        -------
        DataFrame
            The same rows and pending partitioning.

        Raises
        ------
        TypeError
            If `parallelism` is not an integer.
        ValueError
            If it is out of range, or the step already has another parallelism.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> df = env.from_pandas(pd.DataFrame({"x": [1]}))
        >>> _ = df.filter(fg.col("x") > 0).set_parallelism(4).print()
        >>> [n.parallelism for n in env.plan().nodes]
        [0, 4, 0]
        """
        self._step.set_parallelism(parallelism)
        return DataFrame(self._step, self._partitioning)

    # --- sinks ----------------------------------------------------------------------------

    def print(self) -> Sink:
        """Print the rows to the runtime's standard output.

        Returns
        -------
        Sink
            The sink, registered on the Environment.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).print()
        <Sink print>
        """
        from flinkgo._proto import plan_pb2 as pb

        return self._sink(pb.Sink(print=pb.PrintSink()), "print")

    def write_csv(
        self, path: str | os.PathLike[str], *, mode: SinkMode = "error", changelog: bool = False
    ) -> Sink:
        """Write the rows as CSV files (with a header line) into the directory `path`.

        Parameters
        ----------
        path
            A directory; each sink subtask writes its own part file there.
        mode
            Keyword-only. What to do when `path` already holds files (as Spark's
            writers): ``"error"`` (the default) refuses a directory holding visible
            files, at job submission; ``"overwrite"`` deletes the files that were
            there only once the new output is committed (the end of the job, or its
            first completed checkpoint), so a failed run leaves them intact;
            ``"append"`` keeps them, and the new part names never collide with them.
            Files whose names start with ``.`` or ``_`` never count.
        changelog
            Keyword-only. Write a changelog: the rows of an upsert stream (a keyed
            aggregation that emits updates, read directly or through selects that
            keep its keys) with their kind in an
            extra column ``row_kind`` (``"+I"``, ``"+U"``, ``"-D"``, as Flink's
            ``RowKind``); the aggregation then emits no ``-U`` rows. Without it a file
            sink takes append-only streams only, and a job writing a changelog to it
            is refused at submission naming the operator that makes the changelog.

        Returns
        -------
        Sink
            The sink, registered on the Environment.

        Raises
        ------
        TypeError
            If a column has a nested type, which CSV cannot hold.
        ValueError
            If `mode` is not ``"error"``, ``"overwrite"`` or ``"append"``.
        FileExistsError
            If `path` is an existing file.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
        >>> df.write_csv("out/numbers").schema
        x: int64

        Replace the output of an earlier run, or add to it:

        >>> df.write_csv("out/numbers", mode="overwrite")
        <Sink write_csv(out/numbers)>
        >>> df.write_csv("out/more", mode="append")
        <Sink write_csv(out/more)>
        """
        for f in self.schema:
            if pa.types.is_nested(f.type):
                raise ArgumentTypeError(
                    f"write_csv: the column {f.name!r} has the nested type {f.type}, which CSV "
                    "cannot hold; write JSON lines or Parquet, or select other columns"
                )
        return self._file_sink("write_csv", path, "CSV", mode, changelog)

    def write_jsonl(
        self, path: str | os.PathLike[str], *, mode: SinkMode = "error", changelog: bool = False
    ) -> Sink:
        """Write the rows as JSON lines (one object per row) into the directory `path`.

        Parameters
        ----------
        path
            A directory; each sink subtask writes its own part file there.
        mode
            Keyword-only. What to do when `path` already holds files (as Spark's
            writers): ``"error"`` (the default) refuses a directory holding visible
            files, at job submission; ``"overwrite"`` deletes the files that were
            there only once the new output is committed (the end of the job, or its
            first completed checkpoint), so a failed run leaves them intact;
            ``"append"`` keeps them, and the new part names never collide with them.
            Files whose names start with ``.`` or ``_`` never count.
        changelog
            Keyword-only. Write a changelog: the rows of an upsert stream (a keyed
            aggregation that emits updates, read directly or through selects that
            keep its keys) with their kind in an
            extra column ``row_kind`` (``"+I"``, ``"+U"``, ``"-D"``, as Flink's
            ``RowKind``); the aggregation then emits no ``-U`` rows. Without it a file
            sink takes append-only streams only, and a job writing a changelog to it
            is refused at submission naming the operator that makes the changelog.

        Returns
        -------
        Sink
            The sink, registered on the Environment.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
        >>> df.write_jsonl("out/numbers")
        <Sink write_jsonl(out/numbers)>
        >>> df.write_jsonl("out/numbers", mode="overwrite")
        <Sink write_jsonl(out/numbers)>
        """
        return self._file_sink("write_jsonl", path, "JSONL", mode, changelog)

    def write_kafka(
        self,
        topic: str,
        *,
        bootstrap_servers: str,
        key: str | None = None,
        value_format: Literal["json", "raw", "csv"] = "json",
        delivery: Literal["exactly-once", "at-least-once", "none"] = "exactly-once",
        transactional_id_prefix: str | None = None,
        properties: Mapping[str, str | int | bool] | None = None,
    ) -> Sink:
        """Write one Kafka record per row to `topic`, as Flink's ``KafkaSink``.

        With ``delivery="exactly-once"`` (the default) each sink subtask writes the rows
        of each checkpoint interval in one Kafka transaction, flushed when the
        checkpoint's barrier passes and committed when the checkpoint completes (two-phase
        commit). Readers with ``isolation.level=read_committed`` then see every row once,
        across failures and restores: a restored job commits the transactions its
        checkpoint holds and aborts those the failed attempt left open. Rows become
        visible at checkpoint completion, so the checkpoint interval is the latency; a
        job without checkpoints commits once, at its end. ``"at-least-once"`` waits at
        every checkpoint until the rows sent are acknowledged (a restore may write some
        again); ``"none"`` does not wait.

        Parameters
        ----------
        topic
            The topic written (it must exist, unless the broker creates topics).
        bootstrap_servers
            ``"host:port"`` of one broker or more, comma-separated.
        key
            A column whose value is the record key (string or binary: its bytes; another
            type: its JSON text); None writes records without a key.
        value_format
            ``"json"``: a JSON object of every column per record; ``"csv"``: a CSV row,
            columns in order, no header; ``"raw"``: the bytes of the one string or binary
            column (besides the key). The values are encoded by the runtime, in Go.
        delivery
            ``"exactly-once"``, ``"at-least-once"`` or ``"none"``.
        transactional_id_prefix
            Required for exactly-once, as in Flink (no default is derived, since two jobs
            sharing a prefix fence each other): transactions are named
            ``<prefix>-<subtask>-<n>``. Keep it when restoring a job from a checkpoint.
        properties
            Kafka producer properties; the runtime supports ``transaction.timeout.ms``
            (default 900000, which must exceed the checkpoint interval plus the time a
            restart takes), ``linger.ms``, ``batch.size``, ``compression.type``,
            ``delivery.timeout.ms`` and ``client.id``, and refuses others when the job is
            submitted.

        Returns
        -------
        Sink
            The sink, registered on the Environment.

        Raises
        ------
        ValueError
            If `delivery` or `value_format` is unknown, or exactly-once has no
            `transactional_id_prefix`.
        flinkgo.SchemaError
            If `key` is not a column, or ``"raw"`` has not one string or binary column.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"id": [1], "name": ["a"]}))
        >>> df.write_kafka(
        ...     "out", bootstrap_servers="localhost:9092", key="name",
        ...     transactional_id_prefix="my-job",
        ... )
        <Sink write_kafka(out)>
        """
        from flinkgo._kafka import kafka_sink
        from flinkgo._proto import plan_pb2 as pb

        msg = kafka_sink(
            self.schema,
            topic,
            bootstrap_servers=bootstrap_servers,
            key=key,
            value_format=value_format,
            delivery=delivery,
            transactional_id_prefix=transactional_id_prefix,
            properties=properties,
        )
        return self._sink(pb.Sink(kafka=msg), f"write_kafka({topic})")

    def write_parquet(
        self, path: str | os.PathLike[str], *, mode: SinkMode = "error", changelog: bool = False
    ) -> Sink:
        """Write the rows as Parquet files into the directory `path`.

        Parameters
        ----------
        path
            A directory; each sink subtask writes its own part file there.
        mode
            Keyword-only. What to do when `path` already holds files (as Spark's
            writers): ``"error"`` (the default) refuses a directory holding visible
            files, at job submission; ``"overwrite"`` deletes the files that were
            there only once the new output is committed (the end of the job, or its
            first completed checkpoint), so a failed run leaves them intact;
            ``"append"`` keeps them, and the new part names never collide with them.
            Files whose names start with ``.`` or ``_`` never count.
        changelog
            Keyword-only. Write a changelog: the rows of an upsert stream (a keyed
            aggregation that emits updates, read directly or through selects that
            keep its keys) with their kind in an
            extra column ``row_kind`` (``"+I"``, ``"+U"``, ``"-D"``, as Flink's
            ``RowKind``); the aggregation then emits no ``-U`` rows. Without it a file
            sink takes append-only streams only, and a job writing a changelog to it
            is refused at submission naming the operator that makes the changelog.

        Returns
        -------
        Sink
            The sink, registered on the Environment.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
        >>> df.write_parquet("out/numbers").set_parallelism(1)
        <Sink write_parquet(out/numbers)>
        >>> df.write_parquet("out/numbers", mode="append")
        <Sink write_parquet(out/numbers)>
        """
        return self._file_sink("write_parquet", path, "PARQUET", mode, changelog)

    def collect(self) -> pa.Table:
        """Run the steps this DataFrame needs and return its rows as a pyarrow Table.

        A job of its own runs: the steps that lead to this DataFrame and a collect sink,
        not the other sinks of the Environment (which stay registered). It runs where
        :meth:`~flinkgo.Environment.execute` runs and shows the same progress line. The
        rows of several subtasks arrive in no guaranteed order (sort them to compare);
        with parallelism 1 and forward edges they keep the source's order.

        Returns
        -------
        pyarrow.Table
            The rows, with :attr:`schema` (empty when no row came).

        Raises
        ------
        JobFailedError, JobCanceledError, RuntimeStartError, RuntimeConnectionError
            As for :meth:`~flinkgo.Environment.execute`; Ctrl-C raises KeyboardInterrupt
            once the job is canceled.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1, 2, 3]}))
        >>> df.filter(fg.col("x") > 1).collect()
        pyarrow.Table
        x: int64
        ----
        x: [[2,3]]
        """
        env = self._step.env
        from flinkgo._proto import plan_pb2 as pb

        sink = Step(
            env,
            "sink",
            pb.Sink(collect=pb.CollectSink()),
            "collect",
            self.schema,
            ((self._step, self._partitioning),),
        )
        plan = env._plan_of([sink], f"collect {self._step.name}")
        node = plan.nodes[-1].id  # the sink comes last: after everything it reads
        try:
            result = env._execute(plan, progress=True)
        except KeyboardInterrupt:
            # Ctrl-C canceled the job: the client's frames would say nothing more.
            raise KeyboardInterrupt from None
        return result.collected[node]

    def to_pandas(self) -> pd.DataFrame:
        """Run the steps this DataFrame needs and return its rows as a pandas DataFrame.

        As :meth:`collect`, then :meth:`pyarrow.Table.to_pandas`; the row order across
        subtasks is not guaranteed.

        Returns
        -------
        pandas.DataFrame
            The rows, with a default index.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1, 2]}))
        >>> df.with_column("y", fg.col("x") * 10).to_pandas()
           x   y
        0  1  10
        1  2  20
        """
        return self.collect().to_pandas()

    # --- internals ------------------------------------------------------------------------

    def _then(self, kind: str, body: Message, name: str, schema: pa.Schema) -> DataFrame:
        step = Step(self._step.env, kind, body, name, schema, ((self._step, self._partitioning),))
        return DataFrame(step)

    def _partition(self, kind: PartitioningKind) -> DataFrame:
        return DataFrame(self._step, Partitioning(kind))

    def _named(self, expr: Expr, op: str) -> tuple[pa.Field, Any]:
        resolved = resolve(expr, self.schema, op=op)
        inner = expr._inner if isinstance(expr, _Alias) else expr
        if isinstance(inner, _Column):  # keep the input field's nullability and metadata
            field = self.schema.field(inner.output_name()).with_name(resolved.name)
        else:
            field = pa.field(resolved.name, resolved.type)
        return field, resolved.proto

    def _project(self, op: str, name: str, columns: list[tuple[pa.Field, Any]]) -> DataFrame:
        seen: set[str] = set()
        for field, _ in columns:
            if field.name in seen:
                raise SchemaError(
                    f"{op}: the output has the column {field.name!r} more than once; rename "
                    "one with .alias()"
                )
            seen.add(field.name)
        from flinkgo._proto import plan_pb2 as pb

        body = pb.Select(columns=[pb.NamedExpr(name=f.name, expr=p) for f, p in columns])
        return self._then("select", body, name, pa.schema([f for f, _ in columns]))

    def _with(self, named: Mapping[str, Any], *, op: str) -> DataFrame:
        new: dict[str, tuple[pa.Field, Any]] = {}
        for name, value in named.items():
            if not isinstance(name, str) or not name:
                raise ArgumentTypeError(
                    f"{op}: the column name must be a non-empty string, got {name!r}"
                )
            label = f"{op} {name!r}"
            expr = to_expr(value, op=label)
            field, proto = self._named(expr, label)
            new[name] = (field.with_name(name), proto)
        columns = []
        for name in self.schema.names:
            columns.append(new.pop(name) if name in new else self._named(_Column(name), op))
        columns.extend(new.values())
        text = ", ".join(f"{n} = {to_expr(v, op=op)}" for n, v in named.items())
        return self._project(op, f"{op}({text})", columns)

    def _sink(self, body: Message, name: str) -> Sink:
        step = Step(
            self._step.env, "sink", body, name, self.schema, ((self._step, self._partitioning),)
        )
        self._step.env._add_sink(step)
        return Sink(step)

    def _file_sink(
        self,
        op: str,
        path: str | os.PathLike[str],
        fmt: str,
        mode: SinkMode = "error",
        changelog: bool = False,
    ) -> Sink:
        if not isinstance(changelog, bool):
            raise ArgumentTypeError(f"{op}: changelog must be True or False, got {changelog!r}")
        if not isinstance(mode, str) or mode not in _SINK_MODES:
            raise InvalidArgumentError(
                f"{op}: mode must be one of {', '.join(map(repr, _SINK_MODES))}, got {mode!r}"
            )
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise ArgumentTypeError(
                f"{op}: expected a directory path as a str or os.PathLike, got {path!r}"
            )
        text = os.fspath(path)
        if not isinstance(text, str):
            raise ArgumentTypeError(f"{op}: expected a str path, got {text!r}")
        absolute = os.path.abspath(os.path.expanduser(local_path(op, text)))
        if os.path.isfile(absolute):
            raise PathIsFileError(
                f"{op}: {text!r} is an existing file; the sink writes a directory of part "
                "files, so give a directory path"
            )
        from flinkgo._proto import plan_pb2 as pb

        body = pb.Sink(
            file=pb.FileSink(format=fmt, path=absolute, mode=mode.upper(), changelog=changelog)
        )
        return self._sink(body, f"{op}({text})")


class KeyedDataFrame:
    """A DataFrame partitioned by key columns, waiting for :meth:`agg`.

    Made by :meth:`DataFrame.key_by`.
    """

    __slots__ = ("_df", "_keys")

    def __init__(self, df: DataFrame, keys: tuple[str, ...]) -> None:
        self._df = df
        self._keys = keys

    @property
    def keys(self) -> tuple[str, ...]:
        """The key columns."""
        return self._keys

    def __repr__(self) -> str:
        """Show the keys, e.g. ``<KeyedDataFrame key_by(sensor)>``."""
        return f"<KeyedDataFrame key_by({', '.join(self._keys)})>"

    def window(
        self,
        window: Window,
        *,
        allowed_lateness: datetime.timedelta | str | None = None,
        late_rows: LateRows = "drop",
    ) -> WindowedDataFrame:
        """Group each key's rows into event-time windows; aggregate them with ``.agg``.

        A window's row comes out when the watermark reaches ``window_end - 1 ms`` (at
        the latest when the input ends, which sends the maximum watermark). Rows that
        arrive after their window fired follow Flink's ``WindowOperator``: within
        ``allowed_lateness`` they update the window, which fires again (one more row for
        it); later, when every window they belong to is past ``window_end - 1 +
        allowed_lateness``, they are dropped and counted in the operator's
        ``numLateRecordsDropped``.

        Parameters
        ----------
        window
            :func:`flinkgo.tumble`, :func:`~flinkgo.hop`, :func:`~flinkgo.cumulate` or
            :func:`~flinkgo.session`; its time column must be a timestamp column.
        allowed_lateness
            How long after a window fired late rows still update it (a
            :class:`datetime.timedelta` or a string like ``"5 s"``); None is 0.
        late_rows
            ``"drop"`` (count them in ``numLateRecordsDropped``) or ``"keep"``: send
            them, unchanged, to a side output read with :meth:`DataFrame.late_rows` on
            the DataFrame ``agg`` returns (Flink's ``sideOutputLateData``); kept rows
            are not counted as dropped.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"k": ["a"], "ts": pd.to_datetime([0], unit="ms"), "x": [1]})
        ... )
        >>> df.key_by("k").window(fg.hop("ts", "10 s", "5 s")).agg(fg.count()).columns
        ['k', 'window_start', 'window_end', 'count']
        """
        return WindowedDataFrame(self._df, self._keys, window, allowed_lateness, late_rows)

    def agg(
        self,
        *aggregates: Aggregate,
        emit: Emit = "auto",
        state_ttl: datetime.timedelta | str | None = None,
    ) -> DataFrame:
        """Aggregate each key's rows: per key, a running result updated with every row.

        The running results are kept as keyed state: checkpoints save them, and a job
        restored from a checkpoint or savepoint, at any parallelism, carries on from them.

        Parameters
        ----------
        *aggregates
            At least one of :func:`flinkgo.sum`, :func:`~flinkgo.count`,
            :func:`~flinkgo.min`, :func:`~flinkgo.max`, :func:`~flinkgo.mean`,
            :func:`~flinkgo.count_distinct`; over a bounded input also pandas UDAFs
            (:func:`flinkgo.udaf`), computed once per key at the end of the input (a job
            whose source never ends is refused when it is planned, as PyFlink allows them
            in batch group aggregations only).
        emit
            When results come out. ``"final"``: one row per key when the input ends.
            ``"updates"``: the current row of every key that changed, every
            ``pipeline.keyed-aggregate.update-interval`` (default 1 s) and at the end,
            so a key's last row is its result (an upsert stream, as Spark's update
            output mode). ``"auto"``: ``"updates"`` when a source upstream never ends
            (``datagen`` without ``rows``), else ``"final"``.
        state_ttl
            How long a key's running result is kept after its last row (processing time,
            as Flink's state TTL), a :class:`datetime.timedelta` or a duration string
            such as ``"1 h"``; a key seen again after that starts from nothing. Default:
            the job's ``table.exec.state.ttl`` (default: forever).

        Returns
        -------
        DataFrame
            The key columns, then one column per aggregate, typed as Arrow's (and
            pandas') grouped aggregations: sum of integers int64, mean float64, count
            int64, min and max the input type.

        Raises
        ------
        ColumnNotFoundError
            If an aggregate's column is not a column of the input.
        TypeError
            If an argument is not an aggregate, or an aggregate does not apply to the
            column's type (``sum`` of strings, say).
        ValueError
            If no aggregate is given, two output columns have the same name, or `emit`
            is not one of the modes.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> df = env.from_pandas(pd.DataFrame({"sensor": ["a"], "n": [1], "t": [1.5]}))
        >>> df.key_by("sensor").agg(fg.sum("n"), fg.max("t").alias("t_max")).schema
        sensor: ...string
        n: int64
        t_max: double
        """
        op = "agg"
        if not aggregates:
            raise InvalidArgumentError("agg: no aggregates given, e.g. agg(flinkgo.count())")
        if emit not in _EMIT_MODES:
            raise InvalidArgumentError(
                f"agg: emit must be one of {sorted(_EMIT_MODES)}, got {emit!r}"
            )
        for a in aggregates:
            if isinstance(a, Aggregate) and a.udaf is not None and emit == "updates":
                raise InvalidArgumentError(
                    f"agg: the pandas UDAF {a.udaf.name!r} aggregates a key's rows once, at "
                    'the end of a bounded input (as PyFlink\'s batch mode); emit="updates" '
                    'would need it to be incremental: use emit="final" (or "auto"), or '
                    "aggregate per window with key_by(...).window(...).agg(...)"
                )
            if isinstance(a, Aggregate) and a.function in WINDOW_ONLY:
                raise InvalidArgumentError(
                    f"agg: {a.function} is computed in windows only "
                    "(key_by(...).window(...).agg(...)); a keyed aggregation offers sum, count, "
                    "min, max, mean and count_distinct"
                )
            if isinstance(a, Aggregate) and a.function == "count_distinct" and state_ttl:
                raise InvalidArgumentError(
                    "agg: count_distinct cannot be combined with state_ttl yet (the key's value "
                    "set and its count would expire apart); drop state_ttl or aggregate per "
                    "window"
                )
        fields, messages = _aggregate_fields(op, self._df.schema, self._keys, aggregates)
        from flinkgo._proto import plan_pb2 as pb

        body = pb.KeyedAggregate(
            keys=list(self._keys),
            aggregates=messages,
            emit=_EMIT_MODES[emit],
            state_ttl_ms=_state_ttl_ms(state_ttl, op),
        )
        text = ", ".join(map(str, aggregates))
        name = f"key_by({', '.join(self._keys)}).agg({text})"
        step = Step(
            self._df._step.env,
            "keyed_aggregate",
            body,
            name,
            pa.schema(fields),
            ((self._df._step, Partitioning("HASH", self._keys)),),
        )
        return DataFrame(step)


def _aggregate_fields(
    op: str,
    schema: pa.Schema,
    keys: Sequence[str],
    aggregates: Sequence[Aggregate],
    *,
    taken: Sequence[str] = (),
) -> tuple[list[pa.Field], list[Any]]:
    """Return the output fields (keys, then one per aggregate) and the plan's aggregates.

    Output types are those of Arrow's grouped aggregation of the same functions.
    """
    empty = schema.empty_table()
    fields = [schema.field(k) for k in keys]
    seen = set(keys) | set(taken)
    from flinkgo._proto import plan_pb2 as pb

    for a in aggregates:
        if not isinstance(a, Aggregate):
            raise ArgumentTypeError(
                f"{op}: expected aggregates such as flinkgo.sum('x') or flinkgo.count(), got {a!r}"
            )
    names = _aggregate_names(aggregates, seen)
    messages = []
    for a, name in zip(aggregates, names, strict=True):
        if a.column is not None and schema.get_field_index(a.column) < 0:
            raise unknown_column(op, a.column, schema.names)
        for arg in a.args:
            if schema.get_field_index(arg) < 0:
                raise unknown_column(op, arg, schema.names)
        if name in seen:
            what = (
                "a key"
                if name in keys
                else "a window column"
                if name in taken
                else "another aggregate"
            )
            raise SchemaError(
                f"{op}: the output column {name!r} of {a!r} has the name of {what}; "
                "rename it with .alias()"
            )
        seen.add(name)
        if a.udaf is not None:
            fields.append(pa.field(name, a.udaf.return_type))
            messages.append(
                pb.Aggregate(function="udaf", name=name, udf=a.udaf._to_spec(), args=list(a.args))
            )
            continue
        spec = ([], "count_all") if a.column is None else (a.column, a.function)
        try:
            result = empty.group_by(list(keys), use_threads=False).aggregate([spec])
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ExpressionTypeError(
                f"{op}: cannot compute {a.function}({a.column}) of type "
                f"{schema.field(a.column).type if a.column else ''}: {e}"
            ) from e
        out_name = "count_all" if a.column is None else f"{a.column}_{a.function}"
        fields.append(pa.field(name, result.schema.field(out_name).type))
        messages.append(pb.Aggregate(function=a.function, column=a.column or "", name=name))
    return fields, messages


def _aggregate_names(aggregates: Sequence[Aggregate], taken: set[str]) -> list[str]:
    """Name each aggregate: its alias, else its column unless that default collides.

    A default name shared by several unaliased aggregates of a column, or equal to a key,
    a window column or an alias, becomes ``column_function`` (pyarrow's group_by names).
    """
    defaults = [a.name for a in aggregates if not a.aliased and a.column is not None]
    aliases = {a.name for a in aggregates if a.aliased}
    names = []
    for a in aggregates:
        clash = defaults.count(a.name) > 1 or a.name in taken or a.name in aliases
        if not a.aliased and a.column is not None and a.udaf is None and clash:
            names.append(f"{a.column}_{a.function}")
        else:
            names.append(a.name)
    return names


_WINDOW_KINDS = {"tumble": "TUMBLE", "hop": "HOP", "cumulate": "CUMULATE", "session": "SESSION"}


def _window_type_ok(function: str, t: pa.DataType) -> bool:
    """Whether the runtime's window aggregates compute `function` over type `t`."""
    numeric = bool(pa.types.is_integer(t) or pa.types.is_floating(t))
    text = bool(pa.types.is_string(t) or pa.types.is_large_string(t))
    if function in ("sum", "mean"):
        return numeric
    if function in ("min", "max"):
        return numeric or text
    if function in ("first", "last"):
        return bool(
            numeric
            or text
            or pa.types.is_boolean(t)
            or pa.types.is_timestamp(t)
            or pa.types.is_date(t)
            or pa.types.is_duration(t)
        )
    return True


class WindowedDataFrame:
    """Rows grouped into event-time windows (per key, or all of them), waiting for :meth:`agg`.

    Made by :meth:`KeyedDataFrame.window` and :meth:`DataFrame.window`.
    """

    __slots__ = ("_df", "_keys", "_late_rows", "_lateness", "_window")

    def __init__(
        self,
        df: DataFrame,
        keys: tuple[str, ...],
        window: Window,
        allowed_lateness: datetime.timedelta | str | None,
        late_rows: str,
    ) -> None:
        op = "window"
        if not isinstance(window, Window):
            raise ArgumentTypeError(
                f"{op}: expected a window such as flinkgo.tumble('ts', '1 min'), got {window!r}"
            )
        schema = df.schema
        if schema.get_field_index(window.time) < 0:
            raise unknown_column(op, window.time, schema.names)
        time_type = schema.field(window.time).type
        if not pa.types.is_timestamp(time_type):
            raise SchemaError(
                f"{op}: the time column {window.time!r} is {time_type}, not a timestamp; "
                f"convert it first, e.g. with_column({window.time!r}, "
                f"col({window.time!r}).cast('timestamp[ms]'))"
            )
        lateness = 0
        if allowed_lateness is not None:
            lateness = parse_duration(allowed_lateness, what="window(allowed_lateness=...)")
        if late_rows not in ("drop", "keep"):
            raise InvalidArgumentError(
                f'window: late_rows must be "drop" (count them in numLateRecordsDropped) or '
                f'"keep" (read them with .late_rows() on the result of agg), got {late_rows!r}'
            )
        self._df = df
        self._keys = keys
        self._window = window
        self._lateness = lateness
        self._late_rows = late_rows

    def __repr__(self) -> str:
        """Show the window, e.g. ``<WindowedDataFrame key_by(k).window(tumble(ts, ...))>``."""
        by = f"key_by({', '.join(self._keys)})." if self._keys else ""
        return f"<WindowedDataFrame {by}window({self._window})>"

    def agg(self, *aggregates: Aggregate) -> DataFrame:
        """Aggregate the rows of each window: one row per (key,) window when it fires.

        Parameters
        ----------
        *aggregates
            At least one of :func:`flinkgo.sum`, :func:`~flinkgo.count`,
            :func:`~flinkgo.min`, :func:`~flinkgo.max`, :func:`~flinkgo.mean`,
            :func:`~flinkgo.first`, :func:`~flinkgo.last`, :func:`~flinkgo.count_distinct`,
            or a Python aggregate function declared with :func:`flinkgo.udaf` applied to
            columns (``vwap("price", "qty")``), mixed freely.

        Returns
        -------
        DataFrame
            The key columns, ``window_start`` and ``window_end`` (``timestamp[ms]`` in
            the time column's time zone, as Flink's window functions), then one column
            per aggregate, typed as Arrow's grouped aggregations.

        Raises
        ------
        ColumnNotFoundError
            If an aggregate's column is not a column of the input.
        TypeError
            If an aggregate does not apply to the column's type.
        ValueError
            If no aggregate is given or two output columns have the same name.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(
        ...     pd.DataFrame({"k": ["a"], "ts": pd.to_datetime([0], unit="ms"), "p": [1.5]})
        ... )
        >>> w = df.key_by("k").window(fg.tumble("ts", "1 min"))
        >>> w.agg(fg.first("p").alias("open"), fg.max("p")).schema
        k: ...string
        window_start: timestamp[ms] not null
        window_end: timestamp[ms] not null
        open: double
        p: double
        """
        op = "agg"
        if not aggregates:
            raise InvalidArgumentError("agg: no aggregates given, e.g. agg(flinkgo.count())")
        schema = self._df.schema
        for a in aggregates:
            if isinstance(a, Aggregate) and a.column is not None:
                idx = schema.get_field_index(a.column)
                if idx >= 0 and not _window_type_ok(a.function, schema.field(idx).type):
                    raise ExpressionTypeError(
                        f"agg: {a.function}({a.column}) of type {schema.field(idx).type} is "
                        "not computed in windows (sum and mean: numbers; min and max: "
                        "numbers and strings; first and last: numbers, strings, booleans, "
                        "timestamps, dates, durations)"
                    )
        bounds = ("window_start", "window_end")
        fields, messages = _aggregate_fields(op, schema, self._keys, aggregates, taken=bounds)
        for b in bounds:
            if b in self._keys:
                raise SchemaError(
                    f"window: the key {b!r} has the name of a window column; rename it first"
                )
        tz = schema.field(self._window.time).type.tz
        n = len(self._keys)
        fields[n:n] = [pa.field(b, pa.timestamp("ms", tz=tz), nullable=False) for b in bounds]
        from flinkgo._proto import plan_pb2 as pb

        w = self._window
        body = pb.WindowAggregate(
            time_column=w.time,
            kind=_WINDOW_KINDS[w.kind],
            size_ms=w.size_ms,
            slide_ms=w.slide_ms,
            step_ms=w.step_ms,
            gap_ms=w.gap_ms,
            offset_ms=w.offset_ms,
            keys=list(self._keys),
            aggregates=messages,
            allowed_lateness_ms=self._lateness,
            late_rows=self._late_rows.upper(),
        )
        text = ", ".join(map(str, aggregates))
        by = f"key_by({', '.join(self._keys)})." if self._keys else ""
        name = f"{by}window({w}).agg({text})"
        partitioning = Partitioning("HASH", self._keys) if self._keys else IMPLICIT
        step = Step(
            self._df._step.env,
            "window_aggregate",
            body,
            name,
            pa.schema(fields),
            ((self._df._step, partitioning),),
        )
        return DataFrame(step)


class Sink:
    """A registered sink: the end of a pipeline. Made by ``DataFrame.print()`` and the like.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> env = fg.Environment()
    >>> sink = env.from_pandas(pd.DataFrame({"x": [1]})).print().uid("out")
    >>> sink.name, env.plan().nodes[-1].uid
    ('print', 'out')
    """

    __slots__ = ("_step",)

    def __init__(self, step: Step) -> None:
        self._step = step

    @property
    def name(self) -> str:
        """The sink's name in plans, e.g. ``"write_csv(out)"``."""
        return self._step.name

    @property
    def schema(self) -> pa.Schema:
        """The schema of the rows it writes."""
        return self._step.schema

    def uid(self, uid: str) -> Sink:
        """Give the sink a stable uid; see :meth:`DataFrame.uid`.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).print().uid("out")
        <Sink print>
        """
        self._step.set_uid(uid)
        return self

    def set_parallelism(self, parallelism: int) -> Sink:
        """Run the sink with `parallelism` subtasks; see :meth:`DataFrame.set_parallelism`.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).print().set_parallelism(1)
        <Sink print>
        """
        self._step.set_parallelism(parallelism)
        return self

    def __repr__(self) -> str:
        """Show the sink's name, e.g. ``<Sink print>``."""
        return f"<Sink {self._step.name}>"


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _signed_duration(value: object, what: str) -> datetime.timedelta:
    """Read a duration that may be negative, in whole milliseconds as event time is."""
    ms = parse_duration(value, what=what, allow_negative=True)
    return datetime.timedelta(milliseconds=ms)


def _state_ttl_ms(value: object, op: str) -> int:
    """Read a state TTL (None: the job's table.exec.state.ttl) in milliseconds."""
    if value is None:
        return 0
    ms = parse_duration(value, what=f"{op} state_ttl")
    if ms <= 0:
        raise InvalidArgumentError(
            f"{op}: state_ttl must be at least 1 ms, got {value!r}; leave it out to keep state "
            "forever (or set table.exec.state.ttl)"
        )
    return int(ms)


def _unique_key(step: Step) -> list[str]:
    """Return columns that are a unique key of `step`'s rows, or [] when none is known.

    A keyed aggregation has one row per key; drop_duplicates one per subset value.
    """
    field = {"keyed_aggregate": "keys", "drop_duplicates": "subset"}.get(step.kind)
    return list(getattr(step.body, field)) if field else []


def _fmt(d: datetime.timedelta) -> str:
    """Print a duration as Go does (10m0s, -5s, 1.5s), for step names."""
    micros = d // datetime.timedelta(microseconds=1)
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    h, rest = divmod(micros, 3_600_000_000)
    m, rest = divmod(rest, 60_000_000)
    sec = f"{rest / 1e6:g}s"
    if h:
        return f"{sign}{h}h{m}m{sec}"
    if m:
        return f"{sign}{m}m{sec}"
    return f"{sign}{sec}"


def _upstream_window_lateness_ms(step: Step) -> int:
    """Return the allowed lateness of the window aggregation `step` reads from, or 0.

    Looks through selects and filters; 0 also when no window aggregation is there.
    """
    while step.kind in ("select", "filter") and step.inputs:
        step = step.inputs[0][0]
    if step.kind == "window_aggregate":
        return int(getattr(step.body, "allowed_lateness_ms", 0))
    return 0
