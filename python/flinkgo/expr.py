"""Column expressions: what ``select``, ``with_column`` and ``filter`` compute.

An :class:`Expr` describes a computation over the columns of a DataFrame without running
it: :func:`col` and :func:`lit` make the leaves; Python operators (``+ - * / // %``, unary
``-``, ``== != < <= > >=``, ``& | ~``) and the methods :meth:`Expr.is_null`,
:meth:`Expr.is_not_null`, :meth:`Expr.is_in`, :meth:`Expr.between`, :meth:`Expr.cast`,
:meth:`Expr.alias`, :meth:`Expr.abs`, :meth:`Expr.round`, :meth:`Expr.floor`,
:meth:`Expr.ceil`, :meth:`Expr.fill_null`, the timestamp functions of :attr:`Expr.dt`,
the string functions of :attr:`Expr.str`, :func:`coalesce`, :func:`concat` and the
conditional :func:`when` combine them; calling a
:class:`~flinkgo.UserDefinedFunction` with an expression argument applies the UDF.
Expressions become the plan's ``flinkgo.plan.v1.Expr`` messages; the runtime evaluates
them column-wise with Arrow's compute kernels.

Semantics are those of Arrow's kernels (and of the runtime's ``runtime/expr``), with one
exception taken from pandas, polars and Spark: ``/`` is true division, so integer operands
are divided as float64 (the runtime casts them), and a zero divisor gives ``inf``, ``-inf``
or ``NaN`` as in pandas (an integer ``%`` by zero is an error: its int64 result has no
NaN). Otherwise, integer arithmetic stays
integer and overflows are errors at run time; ``%`` is Python's modulo (the result has the
divisor's sign) and ``//`` Python's floor division (toward negative infinity: ``-7 // 2``
is -4; int64 for integers, where a zero divisor is an error naming the expression, as
Flink SQL's integer division; float64 otherwise, where ``x // 0.0`` is inf as in
pandas); comparisons, ``&`` and ``|`` follow SQL's three-valued logic, a null operand
gives null (except ``False & null`` is False and ``True | null`` is True); a
filter drops rows whose predicate is false or null. A Python value next to an expression
becomes a literal of its natural type (int64, float64, bool, string), so
``col("x_int32") + 1`` is int64, as in Arrow.

Timestamps take durations (a :class:`datetime.timedelta`, or next to ``+``/``-`` a
string in Flink's syntax such as ``"5 min"``): ``timestamp ± duration`` is a timestamp of
the same zone, ``timestamp - timestamp`` a duration. ``is_in``, ``between`` and ``when``
follow SQL's null rules; a zoned timestamp's ``.dt`` fields are in its zone, a naive one's
in UTC (docs/semantics.md, "Expressions").

An expression's output type against a schema is found by evaluating it with
:mod:`pyarrow.compute` on zero rows of that schema, so the types are Arrow's.

Names: a column keeps its name, a literal is named ``"literal"``, an operation takes the
name of its first operand, a UDF call the UDF's name, and :meth:`Expr.alias` sets one.

This module depends on pyarrow only (and knows UDFs only as :class:`UdfLike`, so that
``flinkgo.udfs`` can import it); the generated protocol code is imported when an
expression is converted into the plan.
"""

from __future__ import annotations

import datetime
import difflib
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flinkgo._durations import parse_timedelta
from flinkgo.exceptions import (
    ArgumentTypeError,
    ColumnNotFoundError,
    ExpressionTypeError,
    InvalidArgumentError,
)
from flinkgo.types import to_arrow_type

if TYPE_CHECKING:
    from flinkgo._proto import plan_pb2, worker_pb2

__all__ = [
    "CaseWhen",
    "ColumnNotFoundError",
    "DtAccessor",
    "Expr",
    "UdfCall",
    "StrAccessor",
    "UdfLike",
    "When",
    "coalesce",
    "col",
    "concat",
    "lit",
    "when",
]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# The plan's function name -> (pyarrow compute function, operator symbol or None).
_FUNCTIONS: dict[str, tuple[str, str | None]] = {
    "add": ("add", "+"),
    "subtract": ("subtract", "-"),
    "multiply": ("multiply", "*"),
    "divide": ("divide", "/"),
    "modulo": ("modulo", "%"),
    "floor_divide": ("floor_divide", "//"),
    "negate": ("negate", None),
    "equal": ("equal", "=="),
    "not_equal": ("not_equal", "!="),
    "less": ("less", "<"),
    "less_equal": ("less_equal", "<="),
    "greater": ("greater", ">"),
    "greater_equal": ("greater_equal", ">="),
    "and": ("and_kleene", "&"),
    "or": ("or_kleene", "|"),
    "not": ("invert", None),
    "is_null": ("is_null", None),
    "is_not_null": ("is_valid", None),
}


def _binary(
    function: str, *, reflected: bool = False, compare: bool = False
) -> Callable[[Expr, Any], Expr]:
    symbol = _FUNCTIONS[function][1]

    def method(self: Expr, other: Any) -> Expr:
        if function in ("add", "subtract") and isinstance(other, (str, datetime.timedelta)):
            # Arrow adds no strings, so a string here is a duration: ts - "5 min".
            other = _duration_literal(parse_timedelta(other, what=f"{symbol} {other!r}"))
        if compare:
            return _Call(function, (self, _compared(other, symbol or function)))
        if reflected:
            return _Call(function, (_operand(other), self))
        return _Call(function, (self, _operand(other)))

    method.__doc__ = f"Return the expression ``{'other' if reflected else 'self'} {symbol} " + (
        f"{'self' if reflected else 'other'}``, the plan's ``{function}``."
    )
    return method


def _duration_literal(value: datetime.timedelta) -> _Literal:
    # In the coarsest unit that holds it exactly, so that ts[ms] + "5 min" stays ts[ms].
    micros = value // datetime.timedelta(microseconds=1)
    unit = "s" if micros % 10**6 == 0 else "ms" if micros % 1000 == 0 else "us"
    return _Literal.make(value, pa.duration(unit))


def _unary(function: str) -> Callable[[Expr], Expr]:
    def method(self: Expr) -> Expr:
        return _Call(function, (self,))

    symbol = "-" if function == "negate" else "~"
    method.__doc__ = f"Return the expression ``{symbol}self``, the plan's ``{function}``."
    return method


class Expr:
    """A column expression; build one with :func:`col`, :func:`lit` and operators.

    Expressions are immutable and hold no data. Comparison operators return expressions,
    so an expression has no truth value: combine conditions with ``&``, ``|`` and ``~``
    (not ``and``, ``or``, ``not``), and parenthesize them, since ``&`` binds tighter than
    ``>``.

    Examples
    --------
    >>> from flinkgo import col, lit
    >>> e = (col("temp") * 1.8 + 32).alias("fahrenheit")
    >>> e
    <Expr (temp * 1.8) + 32 AS fahrenheit>
    >>> e.output_name()
    'fahrenheit'
    >>> import pyarrow as pa
    >>> e.output_type(pa.schema([("temp", pa.float32())]))
    DataType(double)
    >>> ((col("temp") > 30) & col("sensor").is_not_null()).output_type(
    ...     pa.schema([("sensor", pa.string()), ("temp", pa.float64())])
    ... )
    DataType(bool)
    """

    __slots__ = ()

    # Operators are made by _binary and _unary (below) with their docstrings.
    __add__ = _binary("add")
    __radd__ = _binary("add", reflected=True)
    __sub__ = _binary("subtract")
    __rsub__ = _binary("subtract", reflected=True)
    __mul__ = _binary("multiply")
    __rmul__ = _binary("multiply", reflected=True)
    __truediv__ = _binary("divide")
    __rtruediv__ = _binary("divide", reflected=True)
    __mod__ = _binary("modulo")
    __rmod__ = _binary("modulo", reflected=True)
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _binary("floor_divide", reflected=True)
    __neg__ = _unary("negate")

    __eq__ = _binary("equal", compare=True)  # type: ignore[assignment]
    __ne__ = _binary("not_equal", compare=True)  # type: ignore[assignment]
    __lt__ = _binary("less", compare=True)
    __le__ = _binary("less_equal", compare=True)
    __gt__ = _binary("greater", compare=True)
    __ge__ = _binary("greater_equal", compare=True)
    # Defining __eq__ removes hashing; expressions are not meant to be dict keys.
    __hash__ = None  # type: ignore[assignment]

    __and__ = _binary("and")
    __rand__ = _binary("and", reflected=True)
    __or__ = _binary("or")
    __ror__ = _binary("or", reflected=True)
    __invert__ = _unary("not")

    def __bool__(self) -> bool:
        """Refuse: an expression's value is known only when the job runs."""
        raise ArgumentTypeError(
            f"the truth value of the expression {self} is not known until the job runs; "
            "combine conditions with & | ~ instead of and/or/not (with parentheses: "
            "(col('a') > 1) & (col('b') < 2)), and write 1 < x < 3 as (x > 1) & (x < 3)"
        )

    # --- methods --------------------------------------------------------------------------

    def is_null(self) -> Expr:
        """Return a bool expression that is true where this expression is null.

        Examples
        --------
        >>> from flinkgo import col
        >>> col("temp").is_null()
        <Expr temp.is_null()>
        """
        return _Call("is_null", (self,))

    def is_not_null(self) -> Expr:
        """Return a bool expression that is true where this expression is not null.

        Examples
        --------
        >>> from flinkgo import col
        >>> col("temp").is_not_null()
        <Expr temp.is_not_null()>
        """
        return _Call("is_not_null", (self,))

    def cast(self, type: pa.DataType | str) -> Expr:
        """Convert the values to another Arrow type.

        The cast is safe: a value that does not fit (an overflow, a truncated float, an
        unparsable string) fails the job rather than turning into something else.

        Parameters
        ----------
        type
            A :class:`pyarrow.DataType` or a type name (see
            :func:`flinkgo.types.to_arrow_type`).

        Returns
        -------
        Expr
            The cast expression; whether the cast exists between the two types is checked
            when the expression is applied to a DataFrame.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from flinkgo import col
        >>> e = col("x").cast("int32")
        >>> e, e.output_type(pa.schema([("x", pa.string())]))
        (<Expr x.cast(int32)>, DataType(int32))
        """
        return _Cast(self, to_arrow_type(type))

    def is_in(self, values: Iterable[Any]) -> Expr:
        """Return a bool expression, true where the value is one of `values` (SQL's ``IN``).

        Null rules are SQL's: a null value gives null; a value that matches none of
        `values` gives null when `values` holds a None, else False.

        Parameters
        ----------
        values
            Constants (bool, int, float, str, timedelta or None) that convert to this
            expression's type exactly; checked when the expression is applied.

        Examples
        --------
        >>> from flinkgo import col
        >>> col("country").is_in(["FR", "DE"])
        <Expr country.is_in(['FR', 'DE'])>
        """
        if isinstance(values, (str, bytes, Expr)) or not isinstance(values, Iterable):
            raise ArgumentTypeError(
                f"is_in: expected a list of constants, e.g. is_in([1, 2]), got {values!r}"
            )
        items = []
        for v in values:
            if isinstance(v, Expr):
                raise ArgumentTypeError(
                    f"is_in takes constants, not the expression {v}; compare with == and "
                    "combine with |"
                )
            items.append(_Literal.make(v, None))
        return _Method("is_in", (self, *items))

    def between(self, lower: Any, upper: Any) -> Expr:
        """Return a bool expression: ``lower <= self <= upper``, bounds included as in SQL.

        It is ``(self >= lower) & (self <= upper)``, so nulls follow SQL's three-valued
        logic: a null value gives null, and a null bound gives null unless the other
        comparison is False.

        Examples
        --------
        >>> from flinkgo import col
        >>> col("price").between(10, 20)
        <Expr price.between(10, 20)>
        """
        return _Method("between", (self, _operand(lower), _operand(upper)))

    def abs(self) -> Expr:
        """Return the absolute value (same type; ``abs`` of the minimum int64 is an error).

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> env = fg.Environment()
        >>> df = env.from_pandas(pd.DataFrame({"x": [-2, 3]}))
        >>> df.select(fg.col("x").abs()).to_pandas()["x"].tolist()
        [2, 3]
        """
        return _Method("abs", (self,))

    def round(self, decimals: int = 0) -> Expr:
        """Round to `decimals` digits, halves away from zero (as Spark's and Flink's ROUND).

        The type stays: a float stays a float (cast to an integer type if wanted), and an
        integer is returned as is (negative `decimals` on integers are refused; write
        ``(x // 100) * 100``). Note that pandas and numpy round halves to even.

        Parameters
        ----------
        decimals
            Digits after the point, -18 to 18; negative rounds to tens, hundreds, ...

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [2.5, -2.5, 1.234]}))
        >>> df.select(fg.col("x").round(), fg.col("x").round(2).alias("r2")).to_pandas()
             x    r2
        0  3.0  2.50
        1 -3.0 -2.50
        2  1.0  1.23
        """
        if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral):
            raise ArgumentTypeError(f"round: decimals must be an int, got {decimals!r}")
        if not -18 <= int(decimals) <= 18:
            raise InvalidArgumentError(
                f"round: decimals must be between -18 and 18, got {decimals}"
            )
        return _Method("round", (self, _Literal.make(int(decimals), None)))

    def floor(self) -> Expr:
        """Round down to a whole number (a float stays a float; an integer is unchanged).

        Examples
        --------
        >>> from flinkgo import col
        >>> col("x").floor()
        <Expr x.floor()>
        """
        return _Method("floor", (self,))

    def ceil(self) -> Expr:
        """Round up to a whole number (a float stays a float; an integer is unchanged).

        Examples
        --------
        >>> from flinkgo import col
        >>> col("x").ceil()
        <Expr x.ceil()>
        """
        return _Method("ceil", (self,))

    def fill_null(self, value: Any) -> Expr:
        """Replace nulls with `value`: ``coalesce(self, value)``.

        Parameters
        ----------
        value
            An expression or a constant (a str is a string constant, as in polars); it
            and this expression need a common type (see :func:`coalesce`).

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"x": [1.5, None]}))
        >>> df.select(fg.col("x").fill_null(0)).to_pandas()["x"].tolist()
        [1.5, 0.0]
        """
        # As polars: a str here is a constant, not a column name.
        return _Method("coalesce", (self, _operand(value)))

    @property
    def dt(self) -> DtAccessor:
        """Timestamp functions: ``.dt.year()``, ``.dt.truncate("5 min")``, ...

        See :class:`DtAccessor`.
        """
        return DtAccessor(self)

    def alias(self, name: str) -> Expr:
        """Name the expression's output column.

        Parameters
        ----------
        name
            A non-empty string.

        Examples
        --------
        >>> from flinkgo import col
        >>> (col("a") + col("b")).alias("total").output_name()
        'total'
        """
        if not isinstance(name, str) or not name:
            raise ArgumentTypeError(f"alias: the name must be a non-empty string, got {name!r}")
        inner = self._inner if isinstance(self, _Alias) else self
        return _Alias(inner, name)

    def output_name(self) -> str:
        """Return the name of the column this expression makes in ``select``.

        A column keeps its name, a literal is ``"literal"``, an operation takes the name
        of its first operand, a UDF call the UDF's name, an alias its name.

        Examples
        --------
        >>> from flinkgo import col, lit
        >>> (col("a") * 2).output_name(), lit(1).output_name()
        ('a', 'literal')
        """
        raise NotImplementedError  # every subclass overrides it

    def output_type(self, schema: pa.Schema) -> pa.DataType:
        """Return the Arrow type of the expression's values over rows of `schema`.

        Parameters
        ----------
        schema
            The input schema.

        Returns
        -------
        pyarrow.DataType
            The type Arrow's compute kernels give (the declared type for a UDF call).

        Raises
        ------
        ColumnNotFoundError
            If the expression names a column that `schema` does not have.
        TypeError
            If a function does not apply to its argument types.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from flinkgo import col
        >>> (col("n") / 2).output_type(pa.schema([("n", pa.int32())]))
        DataType(double)
        """
        return _resolve(self, schema, op="output_type", want_proto=False).type

    # --- internals ------------------------------------------------------------------------

    def __repr__(self) -> str:
        """Show the expression as text, e.g. ``<Expr a + 1>``."""
        return f"<Expr {self}>"

    def __str__(self) -> str:
        """Render the expression as compact text, as in plan node names."""
        return self._text()

    def _text(self) -> str:
        raise NotImplementedError

    def _operand_text(self) -> str:
        # The text of this expression as an operand of an operator or method.
        return self._text()

    def _columns(self) -> Iterator[str]:
        raise NotImplementedError

    def _build(self, ctx: _Context) -> tuple[pa.Array | pa.Scalar, plan_pb2.Expr | None]:
        # Evaluate on zero rows (for the type) and build the plan message.
        raise NotImplementedError

    # Last in the class: below it, `str` in an annotation would mean this property.
    @property
    def str(self) -> StrAccessor:
        """String functions: ``.str.upper()``, ``.str.contains("x")``, ...

        See :class:`StrAccessor`.
        """
        return StrAccessor(self)


def col(name: str) -> Expr:
    """Refer to a column of the DataFrame an expression is applied to.

    Parameters
    ----------
    name
        The column name. Whether the column exists is checked when the expression is
        applied to a DataFrame.

    Examples
    --------
    >>> from flinkgo import col
    >>> col("temp") > 30
    <Expr temp > 30>
    """
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"col: the column name must be a non-empty string, got {name!r}")
    return _Column(name)


def lit(
    value: bool | int | float | str | datetime.timedelta | None,
    type: pa.DataType | str | None = None,
) -> Expr:
    """Make a constant: the same value in every row.

    Parameters
    ----------
    value
        A bool, int, float, str, :class:`datetime.timedelta` or None. Without `type`, the
        literal has the value's natural Arrow type: bool, int64, double, string,
        duration[us] (None: the null type).
    type
        An Arrow type (:class:`pyarrow.DataType` or name) to convert the value to, e.g.
        ``lit(1, "int32")``, ``lit("2024-01-01", "timestamp[ms]")`` or ``lit(None,
        "double")`` for a typed null. The conversion is checked here.

    Returns
    -------
    Expr
        The literal, named ``"literal"`` unless aliased.

    Raises
    ------
    TypeError
        If `value` is of another kind (convert it to one of those listed, e.g. a datetime
        to its ISO string with a timestamp `type`).
    ValueError
        If `value` does not convert to `type`, or an int is out of the int64 range.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from flinkgo import lit
    >>> lit(1).output_type(pa.schema([]))
    DataType(int64)
    >>> lit(1, "int8").output_type(pa.schema([]))
    DataType(int8)
    >>> lit("2024-01-01", "timestamp[ms]")
    <Expr '2024-01-01'.cast(timestamp[ms])>
    """
    return _Literal.make(value, None if type is None else to_arrow_type(type))


# --- expression classes -----------------------------------------------------------------------


class _Column(Expr):
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def output_name(self) -> str:
        return self._name

    def _text(self) -> str:
        return self._name if self._name.isidentifier() else f"col({self._name!r})"

    def _columns(self) -> Iterator[str]:
        yield self._name

    def _build(self, ctx: _Context) -> tuple[pa.Array, plan_pb2.Expr | None]:
        value = ctx.column(self._name)
        return value, (ctx.pb.Expr(column=self._name) if ctx.pb else None)


class _Literal(Expr):
    __slots__ = ("_scalar", "_type", "_value")

    def __init__(self, value: Any, scalar: pa.Scalar, dtype: pa.DataType | None) -> None:
        self._value = value
        self._scalar = scalar
        self._type = dtype  # the explicit type, None for the natural one

    @classmethod
    def make(cls, value: Any, dtype: pa.DataType | None) -> _Literal:
        allowed = (bool, str, numbers.Real, datetime.timedelta)
        if value is not None and not isinstance(value, allowed):
            raise ArgumentTypeError(
                f"lit: unsupported value {value!r} (of type {type(value).__name__}); a "
                "literal is a bool, int, float, str, timedelta or None, converted with type= to "
                "other Arrow types, e.g. lit('2024-01-01T12:00:00', 'timestamp[ms]')"
            )
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise InvalidArgumentError(
                    f"lit: {value} is outside the int64 range; give larger numbers as a "
                    "float or a string with type="
                )
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = float(value)
        if (
            isinstance(value, datetime.timedelta)
            and dtype is not None
            and not pa.types.is_duration(dtype)
        ):
            raise InvalidArgumentError(
                f"lit: a timedelta is a duration; give a duration type (e.g. 'duration[ms]'), "
                f"not {dtype}"
            )
        scalar = pa.scalar(value)
        if dtype is not None and dtype != scalar.type:
            try:
                scalar = pc.cast(scalar, dtype, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise InvalidArgumentError(
                    f"lit: {value!r} does not convert to {dtype}: {e}"
                ) from e
        else:
            dtype = None
        return cls(value, scalar, dtype)

    def output_name(self) -> str:
        return "literal"

    def _text(self) -> str:
        if self._value is None:
            text = "null"
        elif isinstance(self._value, datetime.timedelta):
            return f"duration({str(self._value)!r})"  # its unit is an implementation detail
        elif isinstance(self._value, float) and not math.isfinite(self._value):
            text = f"float({str(self._value)!r})"
        else:
            text = repr(self._value)
        return text if self._type is None else f"{text}.cast({self._type})"

    def _columns(self) -> Iterator[str]:
        return iter(())

    def _build(self, ctx: _Context) -> tuple[pa.Scalar, plan_pb2.Expr | None]:
        if ctx.pb is None:
            return self._scalar, None
        v = self._value
        lit_pb = ctx.pb.Literal()
        if v is None:
            lit_pb.null = True
            lit_pb.type = str(self._scalar.type)
        else:
            if isinstance(v, datetime.timedelta):
                # A duration travels as an integer count of its unit.
                lit_pb.int_value = pc.cast(self._scalar, pa.int64()).as_py()
                lit_pb.type = str(self._scalar.type)
            elif isinstance(v, bool):
                lit_pb.bool_value = v
            elif isinstance(v, int):
                lit_pb.int_value = v
            elif isinstance(v, float):
                lit_pb.float_value = v
            else:
                lit_pb.string_value = v
            if self._type is not None:
                lit_pb.type = str(self._type)
        return self._scalar, ctx.pb.Expr(literal=lit_pb)


class _Call(Expr):
    __slots__ = ("_args", "_function")

    def __init__(self, function: str, args: tuple[Expr, ...]) -> None:
        self._function = function
        self._args = args

    def output_name(self) -> str:
        return self._args[0].output_name()

    def _text(self) -> str:
        symbol = _FUNCTIONS[self._function][1]
        if symbol is not None:
            a, b = self._args
            return f"{a._operand_text()} {symbol} {b._operand_text()}"
        (a,) = self._args
        if self._function == "negate":
            return f"-{a._operand_text()}"
        if self._function == "not":
            return f"~{a._operand_text()}"
        return f"{a._operand_text()}.{self._function}()"

    def _operand_text(self) -> str:
        text = self._text()
        return f"({text})" if _FUNCTIONS[self._function][1] is not None else text

    def _columns(self) -> Iterator[str]:
        for a in self._args:
            yield from a._columns()

    def _build(self, ctx: _Context) -> tuple[pa.Array | pa.Scalar, plan_pb2.Expr | None]:
        built = [a._build(ctx) for a in self._args]
        values = [v for v, _ in built]
        if self._function == "divide":
            # True division: the runtime casts integer operands to float64, as here.
            values = [
                pc.cast(v, pa.float64()) if pa.types.is_integer(v.type) else v for v in values
            ]
        if self._function in ("add", "subtract", "multiply", "divide"):
            ctx.call(self, lambda: _check_temporal_arithmetic(self._function, values))
        if self._function == "modulo":
            value = ctx.call(self, lambda: _python_modulo(values))
        elif self._function == "floor_divide":
            value = ctx.call(self, lambda: _floor_divide_type(values))
        else:
            value = ctx.call(self, lambda: pc.call_function(_FUNCTIONS[self._function][0], values))
        proto = None
        if ctx.pb is not None:
            proto = ctx.pb.Expr(
                call=ctx.pb.Call(function=self._function, args=[p for _, p in built])
            )
        return value, proto


def _python_modulo(values: list[Any]) -> pa.Array | pa.Scalar:
    """Python's ``%`` (the divisor's sign), as the runtime computes it.

    Arrow has no modulo kernel before pyarrow 15 and its Go port has none, so
    both sides implement it: int64 for integers (modulo by zero is an
    error), float64 otherwise (``x % 0.0`` is NaN).
    """
    is_int = all(pa.types.is_integer(v.type) for v in values)
    for v in values:
        if not (pa.types.is_integer(v.type) or pa.types.is_floating(v.type)):
            raise pa.ArrowNotImplementedError(f"modulo needs numbers, got {v.type}")
    typ = pa.int64() if is_int else pa.float64()

    def mod(x: Any, y: Any) -> Any:
        if x is None or y is None:
            return None
        if is_int:
            return x % y
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.mod(float(x), float(y)))

    arrays = [v for v in values if isinstance(v, pa.Array)]
    if not arrays:
        return pa.scalar(mod(values[0].as_py(), values[1].as_py()), typ)
    n = len(arrays[0])
    lists = [v.to_pylist() if isinstance(v, pa.Array) else [v.as_py()] * n for v in values]
    return pa.array([mod(x, y) for x, y in zip(*lists, strict=True)], typ)


def _floor_divide_type(values: list[Any]) -> pa.Array | pa.Scalar:
    """Give ``a // b``'s type: int64 for integers, else float64 (as ``%``)."""
    for v in values:
        if not (pa.types.is_integer(v.type) or pa.types.is_floating(v.type)):
            raise pa.ArrowTypeError(f"// needs numbers, got {v.type}")
    is_int = all(pa.types.is_integer(v.type) for v in values)
    return _like(values, pa.int64() if is_int else pa.float64())


# --- is_in, between, .dt, when/then/otherwise ----------------------------------------------------

_DT_FIELDS = ("year", "month", "day", "hour", "minute")


def _like(values: Sequence[pa.Array | pa.Scalar], dtype: pa.DataType) -> pa.Array | pa.Scalar:
    # A typed value of zero rows (or a scalar when every input is one), for the type.
    if any(isinstance(v, pa.Array) for v in values):
        return pa.nulls(0, dtype)
    return pa.scalar(None, dtype)


def _need_timestamp(what: str, value: pa.Array | pa.Scalar) -> None:
    if not pa.types.is_timestamp(value.type):
        raise pa.ArrowTypeError(
            f"{what} needs a timestamp, got {value.type}; parse or cast the column first, "
            "e.g. .cast('timestamp[ms]')"
        )


def _eval_is_in(values: list[Any]) -> pa.Array | pa.Scalar:
    x, *items = values
    if pa.types.is_null(x.type):
        raise pa.ArrowTypeError("is_in on a null-typed value; give it a type with .cast(...)")
    for item in items:
        if item.is_valid and item.type != x.type:
            try:
                pc.cast(item, x.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                raise pa.ArrowTypeError(
                    f"value {item.as_py()!r} ({item.type}) does not convert to {x.type} "
                    "exactly, the type of the expression"
                ) from None
    return _like([x], pa.bool_())


def _eval_between(values: list[Any]) -> pa.Array | pa.Scalar:
    x, lower, upper = values
    result: pa.Array | pa.Scalar = pc.and_kleene(
        pc.greater_equal(x, lower), pc.less_equal(x, upper)
    )
    return result


def _eval_truncate(values: list[Any]) -> pa.Array | pa.Scalar:
    x, every = values
    _need_timestamp("dt.truncate", x)
    nanos = every.as_py() // datetime.timedelta(microseconds=1) * 1000
    unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[x.type.unit]
    if nanos <= 0:
        raise pa.ArrowInvalid(f"dt.truncate needs a positive duration, got {every.as_py()}")
    if nanos % unit:
        raise pa.ArrowInvalid(
            f"dt.truncate({every.as_py()}) is not a whole number of the timestamp's unit "
            f"({x.type.unit}); cast the timestamp to a finer unit first"
        )
    return _like([x], x.type)


def _eval_field(field: str) -> Callable[[list[Any]], pa.Array | pa.Scalar]:
    def evaluate(values: list[Any]) -> pa.Array | pa.Scalar:
        _need_timestamp(f"dt.{field}", values[0])
        return _like(values, pa.int64())

    return evaluate


def _need_number(what: str, value: pa.Array | pa.Scalar) -> None:
    t = value.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)):
        raise pa.ArrowTypeError(
            f"{what} needs a number, got {t}; cast it first, e.g. .cast('double')"
        )


def _eval_numeric(function: str) -> Callable[[list[Any]], pa.Array | pa.Scalar]:
    # abs, round, floor, ceil: the type stays (runtime/expr/builtins.go).
    def evaluate(values: list[Any]) -> pa.Array | pa.Scalar:
        x = values[0]
        _need_number(function, x)
        if function == "round" and pa.types.is_integer(x.type) and values[1].as_py() < 0:
            raise pa.ArrowInvalid(
                f"round of an integer to {values[1].as_py()} decimals is not supported; "
                "write (x // 10**k) * 10**k or cast to double first"
            )
        return _like([x], x.type)

    return evaluate


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _eval_string(function: str) -> Callable[[list[Any]], pa.Array | pa.Scalar]:
    # The .str functions' types (runtime/expr/strings.go computes them).
    def evaluate(values: list[Any]) -> pa.Array | pa.Scalar:
        x = values[0]
        if not _is_string(x.type):
            raise pa.ArrowTypeError(
                f"str.{function} needs a string, got {x.type}; cast it first, e.g. .cast('string')"
            )
        if function == "length":
            return _like([x], pa.int64())
        if function in ("contains", "starts_with", "ends_with"):
            return _like([x], pa.bool_())
        return _like([x], x.type)

    return evaluate


def _eval_coalesce(values: list[Any]) -> pa.Array | pa.Scalar:
    return _like(values, _common_type([v.type for v in values], "coalesce values"))


def _eval_concat(values: list[Any]) -> pa.Array | pa.Scalar:
    for v in values:
        if not (_is_string(v.type) or pa.types.is_null(v.type)):
            raise pa.ArrowTypeError(
                f"concat needs strings, got {v.type}; cast it with .cast('string')"
            )
    large = any(pa.types.is_large_string(v.type) for v in values)
    return _like(values, pa.large_string() if large else pa.string())


_NUMERIC_METHODS = ("abs", "round", "floor", "ceil")
_STR_METHODS = (
    "upper",
    "lower",
    "trim",
    "length",
    "contains",
    "starts_with",
    "ends_with",
    "replace",
    "substring",
)

_METHODS: dict[str, Callable[[list[Any]], pa.Array | pa.Scalar]] = {
    **{f: _eval_numeric(f) for f in _NUMERIC_METHODS},
    **{f: _eval_string(f) for f in _STR_METHODS},
    "coalesce": _eval_coalesce,
    "concat": _eval_concat,
    "is_in": _eval_is_in,
    "between": _eval_between,
    "truncate": _eval_truncate,
    **{f: _eval_field(f) for f in _DT_FIELDS},
}


class _Method(Expr):
    """is_in, between, the .dt and .str functions, abs, round, floor, ceil, coalesce, concat.

    All but coalesce and concat are methods of their first argument, whose name they take.
    """

    __slots__ = ("_args", "_function")

    def __init__(self, function: str, args: tuple[Expr, ...]) -> None:
        self._function = function
        self._args = args

    def output_name(self) -> str:
        return self._args[0].output_name()

    def _text(self) -> str:
        x, *rest = self._args
        texts = ", ".join(a._text() for a in rest)
        if self._function == "is_in":
            return f"{x._operand_text()}.is_in([{texts}])"
        if self._function == "between":
            return f"{x._operand_text()}.between({texts})"
        if self._function in ("coalesce", "concat"):
            return f"{self._function}({', '.join(a._text() for a in self._args)})"
        if self._function in _NUMERIC_METHODS:
            return f"{x._operand_text()}.{self._function}({texts})"
        if self._function in _STR_METHODS:
            return f"{x._operand_text()}.str.{self._function}({texts})"
        return f"{x._operand_text()}.dt.{self._function}({texts})"

    def _columns(self) -> Iterator[str]:
        for a in self._args:
            yield from a._columns()

    def _build(self, ctx: _Context) -> tuple[pa.Array | pa.Scalar, plan_pb2.Expr | None]:
        built = [a._build(ctx) for a in self._args]
        values = [v for v, _ in built]
        value = ctx.call(self, lambda: _METHODS[self._function](values))
        proto = None
        if ctx.pb is not None:
            proto = ctx.pb.Expr(
                call=ctx.pb.Call(function=self._function, args=[p for _, p in built])
            )
        return value, proto


class DtAccessor:
    """Timestamp functions of an expression, reached as ``expr.dt``.

    A timestamp with a time zone (``timestamp[ms, tz=Europe/Paris]``) gives its fields and
    truncates in that zone's wall-clock time; a timestamp without one is read as UTC.
    Fields are int64 (as pyarrow's and Flink's ``EXTRACT``); a null gives null.

    Examples
    --------
    >>> from flinkgo import col
    >>> col("ts").dt.hour(), col("ts").dt.truncate("5 min")
    (<Expr ts.dt.hour()>, <Expr ts.dt.truncate(duration('0:05:00'))>)
    """

    __slots__ = ("_expr",)

    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def year(self) -> Expr:
        """Return the year (int64)."""
        return _Method("year", (self._expr,))

    def month(self) -> Expr:
        """Return the month, 1 to 12 (int64)."""
        return _Method("month", (self._expr,))

    def day(self) -> Expr:
        """Return the day of the month, 1 to 31 (int64)."""
        return _Method("day", (self._expr,))

    def hour(self) -> Expr:
        """Return the hour, 0 to 23 (int64)."""
        return _Method("hour", (self._expr,))

    def minute(self) -> Expr:
        """Return the minute, 0 to 59 (int64)."""
        return _Method("minute", (self._expr,))

    def truncate(self, every: datetime.timedelta | str) -> Expr:
        """Round the timestamps down to a multiple of `every`, counted from the epoch.

        As pandas' ``dt.floor``: in the wall-clock time of a zoned timestamp (``"1 d"``
        is local midnight), in UTC for a naive one. The result has the input's type.

        Parameters
        ----------
        every
            A :class:`datetime.timedelta` or a string such as ``"5 min"`` (Flink's duration
            syntax); positive and a whole number of the timestamp's unit.
        """
        duration = parse_timedelta(every, what="dt.truncate")
        if duration <= datetime.timedelta(0):
            raise InvalidArgumentError(f"dt.truncate needs a positive duration, got {every!r}")
        return _Method("truncate", (self._expr, _duration_literal(duration)))


class StrAccessor:
    """String functions of an expression, reached as ``expr.str``.

    Strings are ``string`` or ``large_string`` (the result keeps the type); characters are
    Unicode code points; a null string gives null. Patterns are plain text (no regular
    expressions) and constants.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> df = fg.Environment().from_pandas(pd.DataFrame({"s": [" Ada ", "bob"]}))
    >>> df.select(
    ...     fg.col("s").str.trim().str.upper().alias("up"),
    ...     fg.col("s").str.length().alias("n"),
    ...     fg.col("s").str.contains("b").alias("has_b"),
    ... ).to_pandas()
        up  n  has_b
    0  ADA  5  False
    1  BOB  3   True
    """

    __slots__ = ("_expr",)

    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def upper(self) -> Expr:
        """Return the string in upper case (Unicode simple case mapping)."""
        return _Method("upper", (self._expr,))

    def lower(self) -> Expr:
        """Return the string in lower case (Unicode simple case mapping)."""
        return _Method("lower", (self._expr,))

    def trim(self) -> Expr:
        """Remove leading and trailing white space (as Python's ``str.strip()``)."""
        return _Method("trim", (self._expr,))

    def length(self) -> Expr:
        """Return the number of characters (int64), as Python's ``len``."""
        return _Method("length", (self._expr,))

    def contains(self, text: str) -> Expr:
        """Return whether the string contains `text` (plain text, not a pattern)."""
        return _Method("contains", (self._expr, _text_literal("contains", text)))

    def starts_with(self, prefix: str) -> Expr:
        """Return whether the string starts with `prefix`."""
        return _Method("starts_with", (self._expr, _text_literal("starts_with", prefix)))

    def ends_with(self, suffix: str) -> Expr:
        """Return whether the string ends with `suffix`."""
        return _Method("ends_with", (self._expr, _text_literal("ends_with", suffix)))

    def replace(self, old: str, new: str) -> Expr:
        """Replace every occurrence of `old` with `new` (plain text), as ``str.replace``."""
        if old == "":
            raise InvalidArgumentError("str.replace: the text to replace is empty")
        return _Method(
            "replace",
            (self._expr, _text_literal("replace", old), _text_literal("replace", new)),
        )

    def substring(self, start: int, length: int | None = None) -> Expr:
        """Return `length` characters from `start`, as Python's ``s[start:start + length]``.

        `start` counts from 0 as in Python (not from 1 as SQL's ``SUBSTRING``); a negative
        `start` counts from the end. Without `length`, to the end.

        Examples
        --------
        >>> import pandas as pd
        >>> import flinkgo as fg
        >>> df = fg.Environment().from_pandas(pd.DataFrame({"s": ["flinkgo"]}))
        >>> df.select(fg.col("s").str.substring(0, 5), fg.col("s").str.substring(-2)
        ...     .alias("end")).to_pandas()
               s end
        0  flink  go
        """
        for what, v in (("start", start), ("length", length)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
                raise ArgumentTypeError(f"str.substring: {what} must be an int, got {v!r}")
        if length is not None and length < 0:
            raise InvalidArgumentError(f"str.substring: length must be >= 0, got {length}")
        return _Method(
            "substring",
            (
                self._expr,
                _Literal.make(int(start), None),
                _Literal.make(None if length is None else int(length), None),
            ),
        )


def _text_literal(function: str, value: Any) -> _Literal:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"str.{function}: expected a str, got {value!r}")
    return _Literal.make(value, None)


class When:
    """The ``when(condition)`` of a conditional, waiting for its :meth:`then`."""

    __slots__ = ("_branches", "_condition")

    def __init__(self, branches: tuple[Expr, ...], condition: Expr) -> None:
        self._branches = branches
        self._condition = condition

    def then(self, value: Any) -> CaseWhen:
        """Give the value of the rows where the condition is true."""
        return CaseWhen((*self._branches, self._condition, _operand(value)), None)


def when(condition: Any) -> When:
    """Start a conditional expression: ``when(c).then(x).when(c2).then(y).otherwise(z)``.

    As SQL's ``CASE WHEN``: each row takes the value of the first condition that is true
    (a null condition counts as false), else the ``otherwise`` value, else null. The
    values must have one type: equal types, nulls, integers of several widths (int64) or
    integers with floats (float64); cast others to one type.

    Examples
    --------
    >>> from flinkgo import col, when
    >>> when(col("x") > 10).then("big").when(col("x") > 0).then("small").otherwise("none")
    <Expr when(x > 10).then('big').when(x > 0).then('small').otherwise('none')>
    """
    return When((), _operand(condition))


def coalesce(*exprs: Any) -> Expr:
    """Return, per row, the first of `exprs` that is not null (SQL's ``COALESCE``).

    Null only when all are null. The values need one type: equal types, nulls,
    integers of several widths (int64) or integers with floats (float64), as in
    :func:`when`; cast others. A string argument names a column; use :func:`lit` for a
    string constant.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> df = fg.Environment().from_pandas(
    ...     pd.DataFrame({"nick": ["al", None, None], "name": ["Al", "Bo", None]})
    ... )
    >>> df.select(fg.coalesce("nick", "name", fg.lit("?")).alias("who")).to_pandas()
      who
    0  al
    1  Bo
    2   ?
    """
    if len(exprs) < 2:
        raise InvalidArgumentError(f"coalesce takes at least two values, got {len(exprs)}")
    return _Method("coalesce", tuple(_argument(e) for e in exprs))


def concat(*exprs: Any) -> Expr:
    """Join strings per row; null when any is null (as Spark's and Flink SQL's ``CONCAT``).

    A string argument names a column; use :func:`lit` for a constant. Cast numbers with
    ``.cast("string")`` first; wrap an argument in ``.fill_null("")`` to skip nulls.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> df = fg.Environment().from_pandas(pd.DataFrame({"first": ["Ada"], "last": ["L"]}))
    >>> df.select(fg.concat("first", fg.lit(" "), "last").alias("name")).to_pandas()
        name
    0  Ada L
    """
    if len(exprs) < 2:
        raise InvalidArgumentError(f"concat takes at least two strings, got {len(exprs)}")
    return _Method("concat", tuple(_argument(e) for e in exprs))


class CaseWhen(Expr):
    """A conditional expression made by :func:`when`; without otherwise its default is null."""

    __slots__ = ("_branches", "_otherwise")

    def __init__(self, branches: tuple[Expr, ...], otherwise: Expr | None) -> None:
        self._branches = branches  # condition, value, condition, value, ...
        self._otherwise = otherwise

    def when(self, condition: Any) -> When:
        """Add a condition, tried when the ones before are not true."""
        if self._otherwise is not None:
            raise ArgumentTypeError(f"when: {self} already ends with otherwise(...)")
        return When(self._branches, _operand(condition))

    def otherwise(self, value: Any) -> CaseWhen:
        """Give the value of the rows where no condition is true."""
        if self._otherwise is not None:
            raise ArgumentTypeError(f"otherwise: {self} already has an otherwise(...)")
        return CaseWhen(self._branches, _operand(value))

    def output_name(self) -> str:
        """Return the name of the first ``then`` value, as polars does."""
        return self._branches[1].output_name()

    def _text(self) -> str:
        b = self._branches
        text = ".".join(
            f"when({b[i]._text()}).then({b[i + 1]._text()})" for i in range(0, len(b), 2)
        )
        if self._otherwise is not None:
            text += f".otherwise({self._otherwise._text()})"
        return text

    def _columns(self) -> Iterator[str]:
        for a in self._args():
            yield from a._columns()

    def _args(self) -> tuple[Expr, ...]:
        otherwise = self._otherwise if self._otherwise is not None else _Literal.make(None, None)
        return (*self._branches, otherwise)

    def _build(self, ctx: _Context) -> tuple[pa.Array | pa.Scalar, plan_pb2.Expr | None]:
        args = self._args()
        built = [a._build(ctx) for a in args]
        values = [v for v, _ in built]
        value = ctx.call(self, lambda: _eval_case_when(args, values))
        proto = None
        if ctx.pb is not None:
            proto = ctx.pb.Expr(call=ctx.pb.Call(function="case_when", args=[p for _, p in built]))
        return value, proto


def _eval_case_when(args: tuple[Expr, ...], values: list[Any]) -> pa.Array | pa.Scalar:
    results = []
    for i, (arg, v) in enumerate(zip(args, values, strict=True)):
        if i % 2 == 0 and i < len(values) - 1:
            if not (pa.types.is_boolean(v.type) or pa.types.is_null(v.type)):
                raise pa.ArrowTypeError(f"the condition {arg} is {v.type}, not bool")
        else:
            results.append(v.type)
    return _like(values, _common_type(results))


def _common_type(types: list[pa.DataType], what: str = "then/otherwise values") -> pa.DataType:
    # As the runtime's commonType (runtime/expr/conditional.go).
    typed = [t for t in types if not pa.types.is_null(t)]
    if not typed:
        return pa.null()
    if all(t == typed[0] for t in typed):
        return typed[0]
    if all(pa.types.is_integer(t) for t in typed):
        return pa.int64()
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in typed):
        return pa.float64()
    raise pa.ArrowTypeError(
        f"the {what} have types {', '.join(map(str, typed))}, which have no "
        "common type; cast them to one type"
    )


_DURATION_HINT = "a duration (a datetime.timedelta or a string such as '5 min')"


def _check_temporal_arithmetic(function: str, values: list[Any]) -> None:
    # As the runtime's checkTemporalArithmetic, so both give the same message.
    a, b = (v.type for v in values)
    ts_a, ts_b = pa.types.is_timestamp(a), pa.types.is_timestamp(b)
    if not (ts_a or ts_b):
        return
    if function == "add":
        if ts_a and ts_b:
            raise pa.ArrowTypeError(
                f"cannot add two timestamps ({a} + {b}); subtract them to get a duration, "
                f"or add {_DURATION_HINT}"
            )
        other = a if ts_b else b
        if not pa.types.is_duration(other):
            raise pa.ArrowTypeError(
                f"a timestamp can only be added to {_DURATION_HINT}, not to {other}"
            )
    elif function == "subtract":
        if not ts_a:
            raise pa.ArrowTypeError(
                f"cannot subtract a timestamp ({b}) from {a}; write timestamp - duration or "
                "timestamp - timestamp"
            )
        if ts_b and a.tz != b.tz:
            raise pa.ArrowTypeError(
                f"cannot subtract timestamps of different time zones ({a} - {b}); cast one "
                "to the other's type first"
            )
        if not ts_b and not pa.types.is_duration(b):
            raise pa.ArrowTypeError(
                f"from a timestamp subtract {_DURATION_HINT} or another timestamp, not {b}"
            )
    else:
        raise pa.ArrowTypeError(
            f"{function} does not apply to timestamps ({a}, {b}); timestamps take + and - "
            "with durations, comparisons and .dt"
        )


class _Cast(Expr):
    __slots__ = ("_inner", "_to")

    def __init__(self, inner: Expr, to: pa.DataType) -> None:
        self._inner = inner
        self._to = to

    def output_name(self) -> str:
        return self._inner.output_name()

    def _text(self) -> str:
        return f"{self._inner._operand_text()}.cast({self._to})"

    def _columns(self) -> Iterator[str]:
        return self._inner._columns()

    def _build(self, ctx: _Context) -> tuple[pa.Array | pa.Scalar, plan_pb2.Expr | None]:
        value, arg = self._inner._build(ctx)
        value = ctx.call(self, lambda: pc.cast(value, self._to, safe=True))
        proto = None
        if ctx.pb is not None:
            proto = ctx.pb.Expr(
                call=ctx.pb.Call(function="cast", args=[arg], cast_to=str(self._to))
            )
        return value, proto


class _Alias(Expr):
    __slots__ = ("_inner", "_name")

    def __init__(self, inner: Expr, name: str) -> None:
        self._inner = inner
        self._name = name

    def output_name(self) -> str:
        return self._name

    def _text(self) -> str:
        name = self._name if self._name.isidentifier() else repr(self._name)
        return f"{self._inner._text()} AS {name}"

    def _operand_text(self) -> str:
        return f"({self._text()})"

    def _columns(self) -> Iterator[str]:
        return self._inner._columns()

    def _build(self, ctx: _Context) -> tuple[pa.Array | pa.Scalar, plan_pb2.Expr | None]:
        return self._inner._build(ctx)


class UdfLike(Protocol):
    """What an expression needs of a UDF; :class:`~flinkgo.UserDefinedFunction` is one."""

    @property
    def name(self) -> str:
        """The UDF's name, the default name of its output column."""
        ...

    @property
    def func(self) -> Callable[..., Any]:
        """The user's function, whose signature the arguments must fit."""
        ...

    @property
    def return_type(self) -> pa.DataType:
        """The Arrow type of the result."""
        ...

    def _to_spec(self) -> worker_pb2.UdfSpec: ...


class UdfCall(Expr):
    """A :class:`~flinkgo.UserDefinedFunction` applied to argument expressions.

    Made by calling a UDF with at least one :class:`Expr` argument; its type is the UDF's
    declared return type and its name the UDF's name.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from flinkgo import col, udf
    >>> @udf("double")
    ... def to_fahrenheit(c):
    ...     return c * 1.8 + 32
    >>> e = to_fahrenheit(col("temp"))
    >>> e, e.output_name(), e.output_type(pa.schema([("temp", pa.float32())]))
    (<Expr to_fahrenheit(temp)>, 'to_fahrenheit', DataType(double))
    """

    __slots__ = ("_args", "_udf")

    def __init__(self, udf: UdfLike, args: Sequence[Any]) -> None:
        self._udf = udf
        self._args = tuple(_argument(a) for a in args)

    @property
    def udf(self) -> UdfLike:
        """The UDF that is called."""
        return self._udf

    @property
    def args(self) -> tuple[Expr, ...]:
        """The argument expressions (column-name strings turned into :func:`col`)."""
        return self._args

    def output_name(self) -> str:
        """Return the UDF's name, the default name of its output column."""
        return self._udf.name

    def _text(self) -> str:
        return f"{self._udf.name}({', '.join(a._text() for a in self._args)})"

    def _columns(self) -> Iterator[str]:
        for a in self._args:
            yield from a._columns()

    def _build(self, ctx: _Context) -> tuple[pa.Array, plan_pb2.Expr | None]:
        built = [a._build(ctx) for a in self._args]
        value = pa.nulls(0, self._udf.return_type)
        if ctx.pb is None:
            return value, None
        try:
            spec = self._udf._to_spec()
        except TypeError as e:  # not picklable: keep the error's class
            # Said once, also where no excepthook trims the chain (a notebook): the
            # message holds the pickling error's type and text.
            raise type(e)(f"{ctx.op}: {e}") from None
        return value, ctx.pb.Expr(udf=ctx.pb.UdfExpr(udf=spec, args=[p for _, p in built]))


def udf_call(udf: UdfLike, args: Sequence[Any], kwargs: dict[str, Any]) -> UdfCall:
    """Apply `udf` to expression arguments; see :meth:`UserDefinedFunction.__call__`."""
    label = f"udf {udf.name!r}"
    if kwargs:
        raise ArgumentTypeError(
            f"{label}: applied to columns, a UDF takes positional arguments only "
            f"(got keywords {sorted(kwargs)}); pass the columns in the order of the "
            f"function's parameters, or call the function itself with {udf.name}.func(...)"
        )
    try:
        signature = inspect.signature(udf.func)
    except (TypeError, ValueError):  # some builtins have no signature
        signature = None
    if signature is not None:
        try:
            signature.bind(*args)
        except TypeError as e:
            raise ArgumentTypeError(
                f"{label}: the arguments do not fit the signature {udf.name}{signature}: {e}"
            ) from None
    return UdfCall(udf, args)


# --- conversion of Python values -----------------------------------------------------------


def _operand(value: Any) -> Expr:
    # An operand of an operator: a Python value (str included) is a literal, as in polars.
    if isinstance(value, Expr):
        return value
    return _Literal.make(value, None)


def _compared(value: Any, symbol: str) -> Expr:
    if value is None:
        raise ArgumentTypeError(
            f"comparing with None ({symbol} None) is null in every row, as in SQL; "
            "use .is_null() or .is_not_null()"
        )
    return _operand(value)


def _argument(value: Any) -> Expr:
    # An argument of a DataFrame method or a UDF call: a str names a column.
    if isinstance(value, Expr):
        return value
    if isinstance(value, str):
        return col(value)
    return _Literal.make(value, None)


def to_expr(value: Any, *, op: str) -> Expr:
    """Turn a DataFrame method's argument into an expression (str: a column name)."""
    try:
        return _argument(value)
    except (TypeError, ValueError) as e:
        raise type(e)(
            f"{op}: expected an expression (col(...), lit(...)), a column name or a "
            f"bool/int/float value, got {value!r}: {e}"
        ) from None


# --- resolution against a schema ----------------------------------------------------------


def _plan_module() -> Any:
    """Import the generated plan module (protobuf) on first use."""
    from flinkgo._proto import plan_pb2

    return plan_pb2


def unknown_column(op: str, name: str, columns: Sequence[str]) -> ColumnNotFoundError:
    """Make the error for a missing column, with a suggestion when one is close."""
    hint = ""
    close = difflib.get_close_matches(name, list(columns), n=1)
    if close:
        hint = f" (did you mean {close[0]!r}?)"
    return ColumnNotFoundError(f"{op}: unknown column {name!r}; columns are {list(columns)}{hint}")


class _Context:
    """Zero-row columns of the input, the operation's label and the plan module."""

    def __init__(self, schema: pa.Schema, op: str, top: Expr, pb: Any) -> None:
        self.schema = schema
        self.op = op
        self.top = top
        self.pb = pb
        self._columns: dict[str, pa.Array] = {}

    def column(self, name: str) -> pa.Array:
        if name not in self._columns:
            index = self.schema.get_field_index(name)
            if index < 0:
                raise unknown_column(self.op, name, self.schema.names)
            self._columns[name] = pa.nulls(0, self.schema.field(index).type)
        return self._columns[name]

    def call(self, expr: Expr, compute: Any) -> pa.Array | pa.Scalar:
        try:
            return compute()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
            where = "" if expr is self.top else f" (in `{self.top}`)"
            raise ExpressionTypeError(f"{self.op}: cannot evaluate `{expr}`{where}: {e}") from e


class Resolved(NamedTuple):
    """An expression resolved against an input schema."""

    name: str
    type: pa.DataType
    proto: Any  # plan_pb2.Expr, or None when not asked for


def resolve(expr: Expr, schema: pa.Schema, *, op: str) -> Resolved:
    """Check `expr` against `schema`; return its name, type and plan message.

    Raises :class:`ColumnNotFoundError` for an unknown column and :class:`TypeError` for
    a function that does not apply to its argument types, both prefixed with `op`.
    """
    return _resolve(expr, schema, op=op, want_proto=True)


def _resolve(expr: Expr, schema: pa.Schema, *, op: str, want_proto: bool) -> Resolved:
    if not isinstance(schema, pa.Schema):
        raise ArgumentTypeError(f"{op}: expected a pyarrow.Schema, got {type(schema).__name__}")
    ctx = _Context(schema, op, expr, _plan_module() if want_proto else None)
    value, proto = expr._build(ctx)
    return Resolved(expr.output_name(), value.type, proto)
