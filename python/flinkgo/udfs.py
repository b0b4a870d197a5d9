"""The ``@udf`` decorator: declaring Python user-defined functions.

The module is ``flinkgo.udfs``; the decorator is ``flinkgo.udf`` (so the module's name
is not hidden behind the function's).

A :class:`UserDefinedFunction` wraps a plain Python function with what the runtime needs
to run it in a worker process: its return type, how the worker feeds it
(``func_type``), and the per-UDF ``concurrency`` and ``batch_size`` of
docs/semantics.md#concurrency-and-batch-size.
Everything is validated when the UDF is declared, so a mistake is reported at the
``@udf`` line, not when a job runs. :meth:`UserDefinedFunction.to_bytes` serializes the UDF
(cloudpickle) into the ``UdfSpec`` message that the worker unpickles.

This module must not import grpc or the worker; the generated protobuf module and
cloudpickle are imported only when a UDF is serialized.
"""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

import pyarrow as pa

from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError, UdfPickleError
from flinkgo.expr import UdfCall, udf_call
from flinkgo.types import schema_ipc_bytes, to_arrow_type

if TYPE_CHECKING:
    from flinkgo._proto import worker_pb2
    from flinkgo.aggregates import Aggregate

__all__ = [
    "AggregateFuncType",
    "FuncType",
    "UserDefinedAggregateFunction",
    "UserDefinedFunction",
    "udaf",
    "udf",
]

FuncType = Literal["general", "pandas", "arrow"]
"""How the worker feeds a UDF.

``"general"``
    Called once per row with Python values; the only kind that may be ``async def``.
``"pandas"``
    Called once per batch with one :class:`pandas.Series` per argument; returns a
    Series (or array-like) of the batch's length.
``"arrow"``
    Called once per batch with one :class:`pyarrow.Array` per argument; returns an
    Array (or array-like) of the batch's length.
"""

_FUNC_TYPES: tuple[str, ...] = ("general", "pandas", "arrow")

# concurrency and batch_size travel as int32 in UdfSpec.
_INT32_MAX = 2**31 - 1


class UserDefinedFunction:
    """A Python function declared as a UDF, with its return type and execution options.

    Create one with :func:`udf` rather than directly; the constructor takes the same
    arguments and validates them the same way.

    Parameters
    ----------
    func
        The Python function. Plain and ``async def`` functions, lambdas,
        :func:`functools.partial` objects and callable instances are accepted; generator
        functions and classes are not.
    return_type
        The Arrow type of the result: a :class:`pyarrow.DataType` or a type name (see
        :func:`flinkgo.types.to_arrow_type`).
    func_type
        How the worker feeds the function, see :data:`FuncType`.
    concurrency
        A positive integer or None. For a synchronous UDF, the parallelism of the operator
        that runs it (that many worker processes); for an ``async def`` UDF, the number
        of calls in flight at once inside each worker. A synchronous UDF may give bounds
        ``(min, max)`` instead: its operator starts at ``min`` and, with
        ``job.autoscaler.enabled``, the autoscaler sets its parallelism within them.
    batch_size
        A positive integer or None: the most rows per Arrow batch sent to the worker.
    name
        The UDF's name in plans, logs and error messages; defaults to the function's
        ``__name__``.

    Raises
    ------
    TypeError
        If `func` is not a supported callable, or an option has the wrong type.
    ValueError
        If an option has a wrong value, or `func_type` does not suit the function.

    Examples
    --------
    >>> import pyarrow as pa
    >>> add_one = UserDefinedFunction(lambda x: x + 1, pa.int64(), name="add_one")
    >>> add_one("x")  # applied to the column x, in a pipeline
    <Expr add_one(x)>
    >>> add_one.func(41)  # the function itself
    42
    >>> add_one
    UserDefinedFunction(name='add_one', return_type=int64, func_type='general', is_async=False)
    """

    def __init__(
        self,
        func: Callable[..., Any],
        return_type: pa.DataType | str | None,
        *,
        func_type: FuncType = "general",
        concurrency: int | tuple[int, int] | None = None,
        batch_size: int | None = None,
        name: str | None = None,
    ) -> None:
        _check_callable(func)
        # Copies __name__, __qualname__, __doc__, __module__ and sets __wrapped__, so that
        # help() and inspect.signature() show the user's function. Done first: the
        # validated attributes below must win over anything copied from func.__dict__.
        functools.update_wrapper(self, func)
        self._func = func
        self._name = _check_name(func, name)
        label = f"udf {self._name!r}"
        if _is_generator(func):
            raise ArgumentTypeError(
                f"{label}: generator functions are not supported; a UDF returns one value "
                "per call (one per row for func_type 'general', one array per batch for "
                "'pandas' and 'arrow'), use return instead of yield"
            )
        if not isinstance(func_type, str) or func_type not in _FUNC_TYPES:
            raise InvalidArgumentError(
                f"{label}: unknown func_type {func_type!r}; expected one of "
                + ", ".join(repr(t) for t in _FUNC_TYPES)
            )
        self._func_type: FuncType = func_type
        self._is_async = _is_async(func)
        if self._is_async and func_type != "general":
            raise InvalidArgumentError(
                f"{label}: an async def UDF must have func_type 'general' (it is awaited "
                f"once per row), got func_type {func_type!r}; make the function "
                "synchronous to use a vectorized func_type"
            )
        if return_type is None:
            raise ArgumentTypeError(
                f"{label}: return_type is required; declare it as @udf('int64') or "
                "@udf(return_type=pa.int64())"
            )
        try:
            self._return_type = to_arrow_type(return_type)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{label}: bad return_type: {e}") from e
        self._concurrency, self._bounds = _check_concurrency(label, concurrency, self._is_async)
        self._batch_size = _check_positive_int(label, "batch_size", batch_size)

    @property
    def func(self) -> Callable[..., Any]:
        """The user's function, unwrapped."""
        return self._func

    @property
    def name(self) -> str:
        """The UDF's name in plans, logs and error messages."""
        return self._name

    @property
    def return_type(self) -> pa.DataType:
        """The Arrow type of the result."""
        return self._return_type

    @property
    def func_type(self) -> FuncType:
        """How the worker feeds the function: ``"general"``, ``"pandas"`` or ``"arrow"``."""
        return self._func_type

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (``async def``)."""
        return self._is_async

    @property
    def concurrency(self) -> int | None:
        """The explicit concurrency (with bounds, the min it starts at), or None when not given."""
        return self._concurrency

    @property
    def concurrency_bounds(self) -> tuple[int, int] | None:
        """The ``(min, max)`` bounds the autoscaler keeps the operator within, or None."""
        return self._bounds

    @property
    def batch_size(self) -> int | None:
        """The explicit batch size in rows, or None when not given."""
        return self._batch_size

    def __call__(self, *args: Any, **kwargs: Any) -> UdfCall:
        """Apply the UDF to columns, for ``select``, ``with_column`` or ``filter``.

        As in ``select``, ``key_by`` and PySpark, a ``str`` argument names a column; to
        pass a string constant, wrap it in :func:`flinkgo.lit`. Expressions (such as
        :func:`flinkgo.col`) are used as they are, and other Python values become
        literals. Arguments are positional and must fit the function's signature; the
        expression's type is :attr:`return_type` and its name :attr:`name`.

        To call the function itself on plain values (in a unit test, say), use
        :attr:`func`: ``f.func(1, 2)``. For an ``async def`` UDF that gives a coroutine
        to await.

        Raises
        ------
        TypeError
            If keyword arguments are given or the arguments do not fit the function's
            signature.

        Examples
        --------
        >>> @udf("int64")
        ... def add(x, y):
        ...     return x + y
        >>> add("a", "b")
        <Expr add(a, b)>
        >>> from flinkgo import col, lit
        >>> add(col("a"), lit(1))
        <Expr add(a, 1)>
        >>> add.func(1, 2)
        3
        """
        return udf_call(self, args, kwargs)

    def __repr__(self) -> str:
        """Show the name, return type and options that were set."""
        parts = [
            f"name={self._name!r}",
            f"return_type={self._return_type}",
            f"func_type={self._func_type!r}",
            f"is_async={self._is_async}",
        ]
        if self._bounds is not None:
            parts.append(f"concurrency={self._bounds}")
        elif self._concurrency is not None:
            parts.append(f"concurrency={self._concurrency}")
        if self._batch_size is not None:
            parts.append(f"batch_size={self._batch_size}")
        return f"UserDefinedFunction({', '.join(parts)})"

    def to_bytes(self) -> bytes:
        """Serialize the UDF into the ``UdfSpec`` message that a worker runs, as bytes.

        The message is ``flinkgo.worker.v1.UdfSpec`` of ``udf/bridge/proto/worker.proto``
        in its protobuf wire form (what ``python -m flinkgo._specs`` writes for Go tools).
        Its payload is the cloudpickle of :attr:`func` (the user's function, not this
        wrapper); ``return_schema`` is an Arrow IPC stream holding a one-field schema
        named after the UDF; unset ``concurrency`` and ``batch_size`` are sent as 0.

        Returns
        -------
        bytes
            The serialized message.

        Raises
        ------
        UdfPickleError
            If the function cannot be pickled, e.g. because it refers to a lock, an open
            file or a connection (a :exc:`TypeError`); the pickling error is chained.

        Examples
        --------
        >>> @udf("int64", concurrency=2)
        ... def add_one(x):
        ...     return x + 1
        >>> data = add_one.to_bytes()
        >>> isinstance(data, bytes), b"add_one" in data
        (True, True)
        """
        return self._to_spec().SerializeToString()

    def _to_spec(self) -> worker_pb2.UdfSpec:
        # The UdfSpec message of to_bytes, for the plan builder (a new message each call).
        import cloudpickle

        from flinkgo._proto import worker_pb2

        try:
            payload = cloudpickle.dumps(self._func)
        except Exception as e:
            raise UdfPickleError(
                f"udf {self._name!r}: the function cannot be pickled with cloudpickle to "
                f"ship it to the Python workers: {type(e).__name__}: {e}; create objects "
                "such as locks, files, sockets and clients inside the function (or lazily "
                "in a module-level cache) instead of capturing them"
            ) from e
        func_types = {
            "general": worker_pb2.FUNC_TYPE_GENERAL,
            "pandas": worker_pb2.FUNC_TYPE_PANDAS,
            "arrow": worker_pb2.FUNC_TYPE_ARROW,
        }
        return worker_pb2.UdfSpec(
            name=self._name,
            payload=payload,
            func_type=func_types[self._func_type],
            is_async=self._is_async,
            concurrency=self._concurrency or 0,
            concurrency_min=self._bounds[0] if self._bounds else 0,
            concurrency_max=self._bounds[1] if self._bounds else 0,
            batch_size=self._batch_size or 0,
            return_schema=schema_ipc_bytes(pa.schema([pa.field(self._name, self._return_type)])),
            **_source_location(self._func),
        )


# Source files larger than this are not shipped with the UDF.
_MAX_SOURCE_BYTES = 1 << 20


def _source_location(func: Callable[..., Any]) -> dict[str, str]:
    """Return the defining file and its text, which cloudpickle drops.

    The worker restores them so that a traceback names the user's file and
    shows the failing line, even on a machine without that file.
    """
    code = getattr(inspect.unwrap(func), "__code__", None)
    if code is None:  # a callable object: its __call__ method's code
        code = getattr(type(func).__call__, "__code__", None)
    if code is None or code.co_filename.startswith("<"):
        return {}
    try:
        with open(code.co_filename, encoding="utf-8") as f:
            text = f.read(_MAX_SOURCE_BYTES + 1)
    except (OSError, UnicodeDecodeError):
        return {"source_file": code.co_filename}
    if len(text) > _MAX_SOURCE_BYTES:
        text = ""
    return {"source_file": code.co_filename, "source_text": text}


@overload
def udf(
    f: Callable[..., Any],
    /,
    return_type: pa.DataType | str | None = None,
    *,
    func_type: FuncType = "general",
    concurrency: int | tuple[int, int] | None = None,
    batch_size: int | None = None,
    name: str | None = None,
) -> UserDefinedFunction: ...


@overload
def udf(
    f: pa.DataType | str | None = None,
    /,
    return_type: pa.DataType | str | None = None,
    *,
    func_type: FuncType = "general",
    concurrency: int | tuple[int, int] | None = None,
    batch_size: int | None = None,
    name: str | None = None,
) -> Callable[[Callable[..., Any]], UserDefinedFunction]: ...


def udf(
    f: Callable[..., Any] | pa.DataType | str | None = None,
    /,
    return_type: pa.DataType | str | None = None,
    *,
    func_type: FuncType = "general",
    concurrency: int | tuple[int, int] | None = None,
    batch_size: int | None = None,
    name: str | None = None,
) -> UserDefinedFunction | Callable[[Callable[..., Any]], UserDefinedFunction]:
    """Declare a Python function as a user-defined function.

    Use it as a decorator with the return type, ``@udf("int64")`` or
    ``@udf(return_type=pa.int64(), concurrency=2)``, or call it on a function,
    ``udf(fn, "int64")``. All options are checked here, so mistakes are reported where
    the UDF is declared.

    Parameters
    ----------
    f
        The function to declare; or, in the decorator form, the return type.
    return_type
        The Arrow type of the result: a :class:`pyarrow.DataType` or a type name such as
        ``"int64"``, ``"double"``, ``"string"``, ``"bool"``, ``"timestamp[ms]"``, or the
        aliases ``"int"``, ``"float"`` (64-bit), ``"str"``, ``"bytes"``. Required.
    func_type
        How the worker feeds the function: ``"general"`` (once per row with Python values;
        the default), ``"pandas"`` (once per batch with :class:`pandas.Series`) or
        ``"arrow"`` (once per batch with :class:`pyarrow.Array`). An ``async def``
        function must be ``"general"``.
    concurrency
        A positive integer. For a synchronous UDF, the number of worker processes that run
        it at once (the parallelism of its operator); for an ``async def`` UDF, the number
        of calls in flight at once inside each worker. Default: the job's parallelism, and
        one call at a time. A synchronous UDF may give bounds ``(min, max)`` instead: its
        operator starts at ``min`` and, with the config ``job.autoscaler.enabled``, the
        autoscaler sets its parallelism within them from its busy time and the source
        rate (docs/semantics.md#autoscaler).
    batch_size
        A positive integer: the most rows per Arrow batch sent to the worker. Default: the
        job's batch size.
    name
        The UDF's name in plans, logs and error messages. Default: the function's
        ``__name__`` (for a :func:`functools.partial`, the wrapped function's).

    Returns
    -------
    UserDefinedFunction or callable
        The UDF when a function is given; otherwise a decorator that makes one.

    Raises
    ------
    TypeError
        If the return type is missing or of an unsupported kind, the function is not a
        supported callable (or is a generator function), or ``concurrency`` or
        ``batch_size`` is not an integer.
    ValueError
        If the return type name is unknown, ``concurrency`` or ``batch_size`` is not
        positive, ``func_type`` is unknown, or an ``async def`` function is given a
        vectorized ``func_type``.

    Examples
    --------
    A row-at-a-time UDF:

    >>> @udf("int64")
    ... def add_one(x: int) -> int:
    ...     return x + 1
    >>> add_one("x")  # applied to the column x, in a pipeline
    <Expr add_one(x)>
    >>> add_one.func(41)  # the function itself
    42

    A vectorized pandas UDF running in two worker processes:

    >>> import pandas as pd
    >>> @udf(return_type="double", func_type="pandas", concurrency=2)
    ... def scale(s: pd.Series) -> pd.Series:
    ...     return s * 0.5
    >>> scale.func(pd.Series([1.0, 4.0])).tolist()
    [0.5, 2.0]

    An async UDF with up to 16 calls in flight, and the call form:

    >>> @udf("string", concurrency=16)
    ... async def lookup(key: str) -> str:
    ...     return key.upper()
    >>> lookup.is_async
    True
    >>> import pyarrow as pa
    >>> udf(len, return_type=pa.int32()).return_type
    DataType(int32)
    """
    if isinstance(f, (str, pa.DataType)):
        if return_type is not None:
            raise ArgumentTypeError(
                f"udf(): the return type is given twice, as {f!r} and as "
                f"return_type={return_type!r}; give it once"
            )
        f, return_type = None, f

    def decorate(func: Callable[..., Any]) -> UserDefinedFunction:
        return UserDefinedFunction(
            func,
            return_type,
            func_type=func_type,
            concurrency=concurrency,
            batch_size=batch_size,
            name=name,
        )

    if f is None:
        return decorate
    return decorate(f)


def _check_callable(func: object) -> None:
    if isinstance(func, UserDefinedFunction):
        raise ArgumentTypeError(
            f"udf(): {func.name!r} is already a UserDefinedFunction; apply @udf once, "
            "to the plain function"
        )
    if inspect.isclass(func):
        raise ArgumentTypeError(
            f"udf(): expected a function, got the class {func.__qualname__}; decorate a "
            "function, or pass an instance with a __call__ method"
        )
    if not callable(func):
        raise ArgumentTypeError(
            f"udf(): expected a function, got {func!r} (of type {type(func).__name__}); "
            "use @udf('int64') above a def, or udf(fn, 'int64')"
        )


def _check_name(func: Callable[..., Any], name: object) -> str:
    if name is None:
        inner = func
        while isinstance(inner, functools.partial):
            inner = inner.func
        name = getattr(inner, "__name__", None) or type(inner).__name__
    if not isinstance(name, str) or not name.strip():
        raise ArgumentTypeError(
            f"udf(): name must be a non-empty string, got {name!r} for the function {func!r}"
        )
    return name


def _check_concurrency(
    label: str, value: object, is_async: bool
) -> tuple[int | None, tuple[int, int] | None]:
    # An int, or (min, max) bounds for the autoscaler; with bounds the operator starts at min.
    if not isinstance(value, tuple):
        return _check_positive_int(label, "concurrency", value), None
    if len(value) != 2:
        raise InvalidArgumentError(
            f"{label}: concurrency bounds must be a pair (min, max), got {value!r}"
        )
    lo = _check_positive_int(label, "concurrency min", value[0])
    hi = _check_positive_int(label, "concurrency max", value[1])
    if lo is None or hi is None or lo > hi:
        raise InvalidArgumentError(
            f"{label}: concurrency=(min, max) needs integers with 1 <= min <= max, got {value!r}"
        )
    if is_async:
        raise InvalidArgumentError(
            f"{label}: an async def UDF cannot take concurrency bounds {value!r}: its "
            "concurrency is the calls in flight inside each worker, which the autoscaler "
            "does not scale; give an int"
        )
    return lo, (lo, hi)


def _check_positive_int(label: str, option: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{label}: {option} must be a positive integer or None, got {value!r} "
            f"(of type {type(value).__name__})"
        )
    value = int(value)
    if value < 1 or value > _INT32_MAX:
        raise InvalidArgumentError(
            f"{label}: {option} must be a positive integer (1 to {_INT32_MAX}) or None, got {value}"
        )
    return value


def _call_targets(func: Callable[..., Any]) -> tuple[Callable[..., Any], ...]:
    # The function itself and, for a callable instance, its class's __call__ (what a
    # call runs).
    if inspect.isroutine(func):
        return (func,)
    return (func, type(func).__call__)


def _is_async(func: Callable[..., Any]) -> bool:
    return any(inspect.iscoroutinefunction(c) for c in _call_targets(func))


def _is_generator(func: Callable[..., Any]) -> bool:
    return any(
        inspect.isgeneratorfunction(c) or inspect.isasyncgenfunction(c) for c in _call_targets(func)
    )


AggregateFuncType = Literal["pandas"]
"""How the worker feeds an aggregate function: ``"pandas"``, one Series per argument."""


class UserDefinedAggregateFunction:
    """A Python aggregate function (a pandas UDAF); create one with :func:`udaf`.

    Called on columns it gives an :class:`~flinkgo.aggregates.Aggregate` for
    :meth:`WindowedDataFrame.agg <flinkgo.dataframe.WindowedDataFrame.agg>`: per window
    (and key), the function gets one :class:`pandas.Series` per argument holding the
    window's rows and returns one scalar of `return_type`, as PyFlink's pandas UDAFs.

    Examples
    --------
    >>> import pandas as pd
    >>> @udaf("double")
    ... def spread(s: pd.Series) -> float:
    ...     return s.max() - s.min()
    >>> spread("price").alias("price_range")
    <Aggregate spread(price) AS price_range>
    >>> float(spread.func(pd.Series([1.0, 4.0])))
    3.0
    """

    __slots__ = ("_udf",)

    def __init__(
        self,
        func: Callable[..., Any],
        return_type: pa.DataType | str | None,
        *,
        func_type: AggregateFuncType = "pandas",
        concurrency: int | None = None,
        batch_size: int | None = None,
        name: str | None = None,
    ) -> None:
        if func_type != "pandas":
            raise InvalidArgumentError(
                f"udaf(): unknown func_type {func_type!r}; aggregate functions are 'pandas' "
                "(one pandas.Series per argument for a group's rows, returning a scalar)"
            )
        if _is_async(func):
            raise InvalidArgumentError(
                "udaf(): an aggregate function cannot be async def; make it synchronous"
            )
        if isinstance(concurrency, tuple):
            raise InvalidArgumentError(
                f"udaf(): concurrency bounds {concurrency!r} are for UDFs (the autoscaler "
                "scales UDF operators); an aggregate function takes an int, its workers "
                "per subtask"
            )
        self._udf = UserDefinedFunction(
            func,
            return_type,
            func_type="pandas",
            concurrency=concurrency,
            batch_size=batch_size,
            name=name,
        )

    @property
    def func(self) -> Callable[..., Any]:
        """The user's function, unwrapped."""
        return self._udf.func

    @property
    def name(self) -> str:
        """The function's name in plans, logs and error messages (and the default column name)."""
        return self._udf.name

    @property
    def return_type(self) -> pa.DataType:
        """The Arrow type of the result."""
        return self._udf.return_type

    @property
    def concurrency(self) -> int | None:
        """Worker processes per window subtask, or None (one)."""
        return self._udf.concurrency

    @property
    def batch_size(self) -> int | None:
        """The most rows per batch sent to a worker, or None (the job's batch size)."""
        return self._udf.batch_size

    def __call__(self, *columns: Any) -> Aggregate:
        """Apply the function to columns: an aggregate for ``agg(...)``, named after it.

        Raises
        ------
        TypeError
            If an argument is not a column name or ``col(name)``, or none is given.
        """
        from flinkgo.aggregates import Aggregate
        from flinkgo.expr import _Column

        if not columns:
            raise ArgumentTypeError(
                f"udaf {self.name!r}: give the argument columns, e.g. {self.name}('price')"
            )
        names = []
        for c in columns:
            if isinstance(c, _Column):
                c = c.output_name()
            if not isinstance(c, str) or not c:
                raise ArgumentTypeError(
                    f"udaf {self.name!r}: arguments are column names or col(name), got {c!r}; "
                    "compute an expression as a column first with with_column"
                )
            names.append(c)
        return Aggregate("udaf", None, self.name, udaf=self, args=tuple(names))

    def __repr__(self) -> str:
        """Show the name, return type and options that were set."""
        return repr(self._udf).replace("UserDefinedFunction(", "UserDefinedAggregateFunction(", 1)

    def _to_spec(self) -> worker_pb2.UdfSpec:
        from flinkgo._proto import worker_pb2

        spec = self._udf._to_spec()
        spec.func_type = worker_pb2.FUNC_TYPE_PANDAS_AGGREGATE
        return spec


@overload
def udaf(
    f: Callable[..., Any],
    /,
    return_type: pa.DataType | str | None = None,
    *,
    func_type: AggregateFuncType = "pandas",
    concurrency: int | None = None,
    batch_size: int | None = None,
    name: str | None = None,
) -> UserDefinedAggregateFunction: ...


@overload
def udaf(
    f: pa.DataType | str | None = None,
    /,
    return_type: pa.DataType | str | None = None,
    *,
    func_type: AggregateFuncType = "pandas",
    concurrency: int | None = None,
    batch_size: int | None = None,
    name: str | None = None,
) -> Callable[[Callable[..., Any]], UserDefinedAggregateFunction]: ...


def udaf(
    f: Callable[..., Any] | pa.DataType | str | None = None,
    /,
    return_type: pa.DataType | str | None = None,
    *,
    func_type: AggregateFuncType = "pandas",
    concurrency: int | None = None,
    batch_size: int | None = None,
    name: str | None = None,
) -> UserDefinedAggregateFunction | Callable[[Callable[..., Any]], UserDefinedAggregateFunction]:
    """Declare a Python aggregate function (a pandas UDAF), for windows' ``agg(...)``.

    As PyFlink's ``@udaf(result_type, func_type="pandas")``: per window (and key) the
    function is called with one :class:`pandas.Series` per argument, holding the rows of
    that window, and returns one scalar. The runtime sends the rows of many windows to a
    worker in one batch and calls the function once per window there
    (docs/semantics.md#pandas-udafs).

    Parameters
    ----------
    f
        The function; or, in the decorator form, the return type.
    return_type
        The Arrow type of the result (as :func:`udf`'s). Required.
    func_type
        ``"pandas"`` (the only kind).
    concurrency
        A positive integer: the worker processes each window subtask sends its windows'
        rows to (default one).
    batch_size
        A positive integer: the most rows per batch sent to a worker (a window's rows
        are never split; a larger window goes alone). Default: the job's batch size.
    name
        The name in plans and errors, and the default output column name. Default: the
        function's ``__name__``.

    Returns
    -------
    UserDefinedAggregateFunction or callable
        The aggregate function when a function is given; otherwise a decorator.

    Examples
    --------
    >>> import pandas as pd
    >>> @udaf("double", batch_size=50_000)
    ... def vwap(price: pd.Series, qty: pd.Series) -> float:
    ...     return (price * qty).sum() / qty.sum()
    >>> vwap("price", "qty")
    <Aggregate vwap(price, qty)>
    """
    if isinstance(f, (str, pa.DataType)):
        if return_type is not None:
            raise ArgumentTypeError(
                f"udaf(): the return type is given twice, as {f!r} and as "
                f"return_type={return_type!r}; give it once"
            )
        f, return_type = None, f

    def decorate(func: Callable[..., Any]) -> UserDefinedAggregateFunction:
        return UserDefinedAggregateFunction(
            func,
            return_type,
            func_type=func_type,
            concurrency=concurrency,
            batch_size=batch_size,
            name=name,
        )

    if f is None:
        return decorate
    return decorate(f)
