"""Aggregates: ``sum``, ``count``, ``min``, ``max``, ``mean``; in windows ``first``, ``last``, ...

``df.key_by("sensor").agg(flinkgo.mean("temp").alias("avg_temp"), flinkgo.count())``
computes, per key, a running aggregate of each column; the output has the key columns,
then one column per aggregate. An aggregate is named after its column (``count()`` is
named ``"count"``, as polars) unless :meth:`Aggregate.alias` renames it. Where such
default names would collide in one ``agg`` (``sum("x")`` and ``max("x")``, or
``count("k")`` of a key ``k``), each of those is named ``column_function`` instead
(``x_sum``, ``x_max``, ``k_count``: pyarrow's names); aliased names must be unique.

Output types are those of Arrow's grouped aggregation kernels, which are also what pandas
gives: ``sum`` of signed integers is int64 (unsigned: uint64, bools: uint64, floats:
float64, decimals: a decimal of precision 38), ``mean`` is float64 (decimal for decimals),
``count`` is int64, ``min`` and ``max`` keep the input type. ``count(column)`` counts the
non-null values of the column, ``count()`` the rows; the others ignore nulls, as in SQL.

In windows (:meth:`WindowedDataFrame.agg <flinkgo.dataframe.WindowedDataFrame.agg>`),
``first`` and ``last`` take the value of the row with the earliest and the latest event
time (nulls skipped; among rows of the same time, any). ``count_distinct`` counts the
distinct non-null values (int64), in windows and in keyed aggregations; there each key's
values are kept as keyed state (checkpointed, rescaled with the key), and a changelog's
retractions take values out again.

This module defines ``sum``, ``min`` and ``max``, shadowing the builtins inside it; it
depends on nothing but :mod:`flinkgo.expr`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from flinkgo.exceptions import ArgumentTypeError
from flinkgo.expr import Expr, _Column

if TYPE_CHECKING:
    import pyarrow as pa


class AggregateUDF(Protocol):
    """What an aggregate needs of a Python aggregate function (:func:`flinkgo.udaf` makes one)."""

    @property
    def name(self) -> str:
        """The function's name."""
        ...

    @property
    def return_type(self) -> pa.DataType:
        """The Arrow type of its result."""
        ...

    def _to_spec(self) -> Any: ...


__all__ = [
    "Aggregate",
    "AggregateUDF",
    "AggregateFunction",
    "count",
    "count_distinct",
    "first",
    "last",
    "max",
    "mean",
    "min",
    "sum",
]

AggregateFunction = Literal[
    "sum", "count", "min", "max", "mean", "first", "last", "count_distinct", "udaf"
]
"""The plan's aggregate function names (``"udaf"``: a Python aggregate function)."""

WINDOW_ONLY = ("first", "last")
"""The aggregates only windows compute (first and last need an event time)."""


class Aggregate:
    """One aggregate of :meth:`KeyedDataFrame.agg`; make it with :func:`sum` and the like.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.mean("temp").alias("avg_temp")
    <Aggregate mean(temp) AS avg_temp>
    >>> fg.count().name
    'count'
    """

    __slots__ = ("_aliased", "_args", "_column", "_function", "_name", "_udaf")

    def __init__(
        self,
        function: AggregateFunction,
        column: str | None,
        name: str,
        *,
        udaf: AggregateUDF | None = None,
        args: tuple[str, ...] = (),
        aliased: bool = False,
    ) -> None:
        self._function = function
        self._column = column
        self._name = name
        self._udaf = udaf
        self._args = args
        self._aliased = aliased

    @property
    def udaf(self) -> AggregateUDF | None:
        """The Python aggregate function of a ``"udaf"`` aggregate, else None."""
        return self._udaf

    @property
    def args(self) -> tuple[str, ...]:
        """The argument columns of a ``"udaf"`` aggregate (empty for the others)."""
        return self._args

    @property
    def function(self) -> AggregateFunction:
        """The aggregate function: ``"sum"``, ``"count"``, ``"mean"``, ``"first"``, ...

        One of ``"sum"``, ``"count"``, ``"min"``, ``"max"``, ``"mean"``, ``"first"``,
        ``"last"``, ``"count_distinct"``.
        """
        return self._function

    @property
    def column(self) -> str | None:
        """The input column, or None for ``count()`` (all rows)."""
        return self._column

    @property
    def name(self) -> str:
        """The output column's name (its default one may change in ``agg``: module doc)."""
        return self._name

    @property
    def aliased(self) -> bool:
        """Whether :meth:`alias` named the aggregate."""
        return self._aliased

    def alias(self, name: str) -> Aggregate:
        """Name the output column.

        Parameters
        ----------
        name
            A non-empty string.

        Examples
        --------
        >>> import flinkgo as fg
        >>> fg.max("temp").alias("max_temp").name
        'max_temp'
        """
        if not isinstance(name, str) or not name:
            raise ArgumentTypeError(f"alias: the name must be a non-empty string, got {name!r}")
        return Aggregate(
            self._function, self._column, name, udaf=self._udaf, args=self._args, aliased=True
        )

    def __str__(self) -> str:
        """Render the aggregate as in plan node names, e.g. ``mean(temp) AS avg_temp``."""
        if self._udaf is not None:
            text = f"{self._udaf.name}({', '.join(self._args)})"
            if self._name != self._udaf.name:
                text += f" AS {self._name}"
            return text
        text = f"{self._function}({self._column or ''})"
        if self._name != (self._column or self._function):
            text += f" AS {self._name}"
        return text

    def __repr__(self) -> str:
        """Show the aggregate, e.g. ``<Aggregate mean(temp) AS avg_temp>``."""
        return f"<Aggregate {self}>"


def _make(function: AggregateFunction, column: str | Expr) -> Aggregate:
    if isinstance(column, _Column):
        column = column.output_name()
    if isinstance(column, Expr):
        raise ArgumentTypeError(
            f"{function}: aggregates apply to a column, got the expression {column}; add it "
            "as a column first, e.g. df.with_column('x2', expr).key_by(...).agg("
            f"{function}('x2'))"
        )
    if not isinstance(column, str) or not column:
        raise ArgumentTypeError(
            f"{function}: expected a column name or col(name), got {column!r} "
            f"(of type {type(column).__name__})"
        )
    return Aggregate(function, column, column)


def sum(column: str | Expr) -> Aggregate:  # noqa: A001 - as polars' pl.sum
    """Sum the non-null values of a column, per key.

    Parameters
    ----------
    column
        A column name or ``col(name)``.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.sum("bytes")
    <Aggregate sum(bytes)>
    """
    return _make("sum", column)


def min(column: str | Expr) -> Aggregate:  # noqa: A001
    """Take the smallest non-null value of a column, per key.

    Parameters
    ----------
    column
        A column name or ``col(name)``.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.min("temp").alias("coldest")
    <Aggregate min(temp) AS coldest>
    """
    return _make("min", column)


def max(column: str | Expr) -> Aggregate:  # noqa: A001
    """Take the largest non-null value of a column, per key.

    Parameters
    ----------
    column
        A column name or ``col(name)``.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.max("temp")
    <Aggregate max(temp)>
    """
    return _make("max", column)


def mean(column: str | Expr) -> Aggregate:
    """Average the non-null values of a column, per key (float64 for numbers).

    Parameters
    ----------
    column
        A column name or ``col(name)``.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.mean("temp").alias("avg_temp")
    <Aggregate mean(temp) AS avg_temp>
    """
    return _make("mean", column)


def count(column: str | Expr | None = None) -> Aggregate:
    """Count rows per key: all of them, or those where `column` is not null.

    Parameters
    ----------
    column
        A column name or ``col(name)``; None (the default) counts every row.

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.count(), fg.count("temp")
    (<Aggregate count()>, <Aggregate count(temp)>)
    """
    if column is None:
        return Aggregate("count", None, "count")
    return _make("count", column)


def first(column: str | Expr) -> Aggregate:
    """Take the non-null value of the row with the earliest event time, per window.

    Only in windows (:meth:`~flinkgo.dataframe.WindowedDataFrame.agg`).

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.first("price").alias("open")
    <Aggregate first(price) AS open>
    """
    return _make("first", column)


def last(column: str | Expr) -> Aggregate:
    """Take the non-null value of the row with the latest event time, per window.

    Only in windows (:meth:`~flinkgo.dataframe.WindowedDataFrame.agg`).

    Examples
    --------
    >>> import flinkgo as fg
    >>> fg.last("price").alias("close")
    <Aggregate last(price) AS close>
    """
    return _make("last", column)


def count_distinct(column: str | Expr) -> Aggregate:
    """Count the distinct non-null values of a column, per key or per window (int64).

    As SQL's ``COUNT(DISTINCT x)``. In a keyed aggregation each key's values are keyed
    state; over a changelog a value leaves when its last row is retracted. A state TTL
    is not supported with it yet.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> df = fg.Environment().from_pandas(
    ...     pd.DataFrame({"shop": ["a", "a", "a", "b"], "user": [1, 1, 2, None]})
    ... )
    >>> df.key_by("shop").agg(fg.count_distinct("user")).to_pandas().sort_values("shop")
      shop  user
    0    a     2
    1    b     0
    """
    return _make("count_distinct", column)
