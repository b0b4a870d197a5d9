import asyncio
import functools
import inspect
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import cloudpickle
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import flinkgo
from flinkgo import UserDefinedFunction, udf
from flinkgo._proto import worker_pb2
from flinkgo.types import schema_from_ipc_bytes

# --- the three call forms -------------------------------------------------------------


def test_decorator_with_positional_return_type():
    @udf("int64")
    def add_one(x):
        return x + 1

    assert isinstance(add_one, UserDefinedFunction)
    assert add_one.return_type == pa.int64()
    assert add_one.func(1) == 2


def test_decorator_with_data_type():
    @udf(pa.string())
    def upper(s):
        return s.upper()

    assert upper.return_type == pa.string()
    assert upper.func("a") == "A"


def test_decorator_with_keywords():
    @udf(return_type="int64", concurrency=2)
    def add_one(x):
        return x + 1

    assert add_one.return_type == pa.int64()
    assert add_one.concurrency == 2
    assert add_one.func(41) == 42


def test_call_form_positional():
    def add_one(x):
        return x + 1

    u = udf(add_one, "int64")
    assert isinstance(u, UserDefinedFunction)
    assert u.func is add_one
    assert u.return_type == pa.int64()
    assert u.func(1) == 2


def test_call_form_keyword_data_type():
    def add_one(x):
        return x + 1

    u = udf(add_one, return_type=pa.int64(), batch_size=500)
    assert u.return_type == pa.int64()
    assert u.batch_size == 500
    assert u.func(2) == 3


def test_decorator_factory_applied_later():
    make = udf(return_type="double", func_type="pandas")
    u = make(lambda s: s * 2)
    assert u.return_type == pa.float64()
    assert u.func_type == "pandas"
    assert u.func(pd.Series([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_defaults():
    @udf("bool")
    def is_even(x):
        return x % 2 == 0

    assert is_even.name == "is_even"
    assert is_even.func_type == "general"
    assert is_even.is_async is False
    assert is_even.concurrency is None
    assert is_even.batch_size is None


def test_all_options():
    @udf(
        "float",
        func_type="arrow",
        concurrency=3,
        batch_size=1024,
        name="halve",
    )
    def f(a):
        return pa.compute.divide(a, 2.0)

    assert f.name == "halve"
    assert f.return_type == pa.float64()
    assert f.func_type == "arrow"
    assert f.concurrency == 3
    assert f.batch_size == 1024
    assert f.func(pa.array([2.0, 4.0])).to_pylist() == [1.0, 2.0]


def test_numpy_integers_are_accepted_as_plain_ints():
    u = udf(lambda x: x, "int64", concurrency=np.int64(4), batch_size=np.int32(100))
    assert u.concurrency == 4
    assert type(u.concurrency) is int
    assert u.batch_size == 100
    assert type(u.batch_size) is int


def test_attributes_are_read_only():
    u = udf(lambda x: x, "int64", concurrency=2)
    with pytest.raises(AttributeError):
        u.concurrency = 0
    assert u.concurrency == 2


def test_repr():
    @udf("int64", concurrency=2, batch_size=10)
    def add_one(x):
        return x + 1

    assert repr(add_one) == (
        "UserDefinedFunction(name='add_one', return_type=int64, func_type='general', "
        "is_async=False, concurrency=2, batch_size=10)"
    )


# --- functools metadata ---------------------------------------------------------------


def test_keeps_function_metadata():
    def score(text: str, weight: float = 1.0) -> float:
        """Score a text."""
        return len(text) * weight

    u = udf(score, "double")
    assert u.__name__ == "score"
    assert u.__qualname__ == score.__qualname__
    assert u.__doc__ == "Score a text."
    assert u.__module__ == __name__
    assert u.__wrapped__ is score
    assert u.__annotations__ == score.__annotations__
    assert inspect.signature(u) == inspect.signature(score)
    assert str(inspect.signature(u)) == "(text: str, weight: float = 1.0) -> float"


def test_function_attributes_do_not_override_udf_attributes():
    def f(x):
        return x

    f.name = "from_function_dict"
    u = udf(f, "int64")
    assert u.name == "f"


def test_name_defaults():
    assert udf(lambda x: x, "int64").name == "<lambda>"
    assert udf(functools.partial(max, 0), "int64").name == "max"
    assert udf(functools.partial(functools.partial(pow, 2), 3), "int64").name == "pow"

    class Scaler:
        def __call__(self, x):
            return x * 2

    u = udf(Scaler(), "int64")
    assert u.name == "Scaler"
    assert u.func(3) == 6


def test_func_passes_arguments_through():
    def f(*args, **kwargs):
        return args, kwargs

    u = udf(f, "string")
    assert u.func(1, 2, k="v") == ((1, 2), {"k": "v"})


# --- async detection ------------------------------------------------------------------


def test_async_function_is_detected_and_func_returns_coroutine():
    @udf("string", concurrency=8)
    async def fetch(key):
        await asyncio.sleep(0)
        return key.upper()

    assert fetch.is_async is True
    assert fetch.func_type == "general"
    assert fetch.concurrency == 8
    coro = fetch.func("k")
    assert inspect.iscoroutine(coro)
    assert asyncio.run(coro) == "K"


def test_async_partial_and_callable_instance_are_detected():
    async def add(x, y):
        return x + y

    assert udf(functools.partial(add, 1), "int64").is_async is True

    class Client:
        async def __call__(self, x):
            return x

    assert udf(Client(), "int64").is_async is True


def test_sync_callables_are_not_async():
    def f(x):
        return x

    class C:
        def __call__(self, x):
            return x

    assert udf(f, "int64").is_async is False
    assert udf(C(), "int64").is_async is False
    assert udf(functools.partial(f), "int64").is_async is False


# --- validation -----------------------------------------------------------------------


def test_missing_return_type_in_decorator_form():
    with pytest.raises(TypeError) as info:

        @udf(concurrency=2)
        def f(x):
            return x

    message = str(info.value)
    assert "udf 'f': return_type is required" in message
    assert "@udf('int64')" in message


def test_bare_decorator_without_return_type():
    with pytest.raises(TypeError, match=r"udf 'g': return_type is required"):

        @udf
        def g(x):
            return x


def test_unknown_return_type_name():
    with pytest.raises(ValueError) as info:

        @udf("int46")
        def f(x):
            return x

    message = str(info.value)
    assert message.startswith("udf 'f': bad return_type: unknown Arrow type name 'int46'")
    assert "did you mean 'int64'" in message
    assert "'double'" in message
    assert isinstance(info.value.__cause__, ValueError)


def test_unsupported_return_type_object():
    def f(x):
        return x

    with pytest.raises(TypeError) as info:
        udf(f, return_type=int)
    message = str(info.value)
    assert "udf 'f': bad return_type: unsupported Arrow type specification <class 'int'>" in message
    assert "pa.int64()" in message


def test_return_type_given_twice():
    with pytest.raises(
        TypeError, match=r"return type is given twice, as 'int64' and as return_type='double'"
    ):
        udf("int64", return_type="double")


@pytest.mark.parametrize("option", ["concurrency", "batch_size"])
@pytest.mark.parametrize("value", [0, -1, -100, 2**31])
def test_non_positive_or_too_large_integer_options(option, value):
    def f(x):
        return x

    with pytest.raises(ValueError) as info:
        udf(f, "int64", **{option: value})
    assert str(info.value) == (
        f"udf 'f': {option} must be a positive integer (1 to 2147483647) or None, got {value}"
    )


@pytest.mark.parametrize("option", ["concurrency", "batch_size"])
@pytest.mark.parametrize(
    ("value", "type_name"),
    [(True, "bool"), (False, "bool"), (2.0, "float"), (1.5, "float"), ("4", "str"), ([1], "list")],
)
def test_non_integer_options(option, value, type_name):
    def f(x):
        return x

    with pytest.raises(TypeError) as info:
        udf(f, "int64", **{option: value})
    assert str(info.value) == (
        f"udf 'f': {option} must be a positive integer or None, got {value!r} (of type {type_name})"
    )


@pytest.mark.parametrize("func_type", ["scalar", "Pandas", "", None, 1])
def test_unknown_func_type(func_type):
    def f(x):
        return x

    with pytest.raises(ValueError) as info:
        udf(f, "int64", func_type=func_type)
    assert str(info.value) == (
        f"udf 'f': unknown func_type {func_type!r}; expected one of 'general', 'pandas', 'arrow'"
    )


@pytest.mark.parametrize("func_type", ["pandas", "arrow"])
def test_async_with_vectorized_func_type(func_type):
    with pytest.raises(ValueError) as info:

        @udf("int64", func_type=func_type)
        async def f(x):
            return x

    message = str(info.value)
    assert "udf 'f': an async def UDF must have func_type 'general'" in message
    assert f"got func_type {func_type!r}" in message


@pytest.mark.parametrize("value", [42, "x", None, [1]])
def test_non_callable(value):
    with pytest.raises(TypeError) as info:
        if isinstance(value, str) or value is None:
            # A string or None in first position is the decorator form: apply the decorator.
            udf("int64")(value)
        else:
            udf(value, "int64")
    message = str(info.value)
    assert f"udf(): expected a function, got {value!r} (of type {type(value).__name__})" in message
    assert "udf(fn, 'int64')" in message


def test_class_is_rejected():
    class Thing:
        pass

    with pytest.raises(TypeError, match=r"udf\(\): expected a function, got the class .*Thing"):
        udf(Thing, "int64")


def test_generator_function_is_rejected():
    with pytest.raises(TypeError) as info:

        @udf("int64")
        def gen(x):
            yield x

    message = str(info.value)
    assert "udf 'gen': generator functions are not supported" in message
    assert "use return instead of yield" in message


def test_async_generator_function_is_rejected():
    with pytest.raises(TypeError, match=r"udf 'agen': generator functions are not supported"):

        @udf("int64")
        async def agen(x):
            yield x


def test_callable_instance_with_generator_call_is_rejected():
    class Gen:
        def __call__(self, x):
            yield x

    with pytest.raises(TypeError, match=r"udf 'Gen': generator functions are not supported"):
        udf(Gen(), "int64")


def test_udf_of_udf_is_rejected():
    u = udf(lambda x: x, "int64", name="inner")
    with pytest.raises(
        TypeError, match=r"'inner' is already a UserDefinedFunction; apply @udf once"
    ):
        udf(u, "int64")


@pytest.mark.parametrize("name", ["", "   ", 3])
def test_bad_name(name):
    with pytest.raises(TypeError, match=rf"name must be a non-empty string, got {name!r}"):
        udf(lambda x: x, "int64", name=name)


# --- to_bytes: the UdfSpec message --------------------------------------------------


def spec_of(u: UserDefinedFunction) -> worker_pb2.UdfSpec:
    return worker_pb2.UdfSpec.FromString(u.to_bytes())


def test_spec_general():
    offset = 10  # captured by value

    @udf("int64", concurrency=2, batch_size=256)
    def add_offset(x):
        return x + offset

    spec = spec_of(add_offset)
    assert isinstance(spec, worker_pb2.UdfSpec)
    assert spec.name == "add_offset"
    assert spec.func_type == worker_pb2.FUNC_TYPE_GENERAL
    assert spec.is_async is False
    assert spec.concurrency == 2
    assert spec.batch_size == 256

    func = pickle.loads(spec.payload)
    assert not isinstance(func, UserDefinedFunction)  # the raw function, not the wrapper
    assert func(5) == 15

    schema = schema_from_ipc_bytes(spec.return_schema)
    assert schema == pa.schema([pa.field("add_offset", pa.int64())])


def test_spec_defaults_are_zero():
    spec = spec_of(udf(lambda x: x, "string"))
    assert spec.concurrency == 0
    assert spec.batch_size == 0
    assert spec.name == "<lambda>"


@pytest.mark.parametrize(
    ("func_type", "enum"),
    [
        ("general", worker_pb2.FUNC_TYPE_GENERAL),
        ("pandas", worker_pb2.FUNC_TYPE_PANDAS),
        ("arrow", worker_pb2.FUNC_TYPE_ARROW),
    ],
)
def test_spec_func_types(func_type, enum):
    assert spec_of(udf(lambda x: x, "int64", func_type=func_type)).func_type == enum


def test_spec_pandas_payload_runs():
    @udf("double", func_type="pandas")
    def scale(s):
        return s * 0.5

    func = cloudpickle.loads(spec_of(scale).payload)
    assert func(pd.Series([2.0, 4.0])).tolist() == [1.0, 2.0]


def test_spec_async():
    @udf("string", concurrency=16)
    async def shout(s):
        return s.upper()

    spec = spec_of(shout)
    assert spec.is_async is True
    assert spec.concurrency == 16
    func = pickle.loads(spec.payload)
    assert inspect.iscoroutinefunction(func)
    assert asyncio.run(func("hi")) == "HI"


def test_spec_name_override_names_the_schema_field():
    spec = spec_of(udf(lambda ts: ts, "timestamp[ms]", name="event_time"))
    assert spec.name == "event_time"
    schema = schema_from_ipc_bytes(spec.return_schema)
    assert schema.names == ["event_time"]
    assert schema.field("event_time").type == pa.timestamp("ms")


def test_spec_nested_return_type():
    t = pa.list_(pa.struct([("k", pa.string()), ("v", pa.float64())]))
    spec = spec_of(udf(lambda x: x, return_type=t, name="pairs"))
    assert schema_from_ipc_bytes(spec.return_schema).field("pairs").type == t


def test_spec_serializes_to_wire_and_back():
    declared = udf(lambda x: x * 3, "int32", batch_size=7)
    data = declared.to_bytes()
    assert isinstance(data, bytes)
    decoded = worker_pb2.UdfSpec.FromString(data)
    assert decoded.batch_size == 7
    assert decoded.SerializeToString() == data
    assert pickle.loads(decoded.payload)(2) == 6


def test_spec_unpicklable_function():
    lock = threading.Lock()

    @udf("int64")
    def guarded(x):
        with lock:
            return x

    assert guarded.func(1) == 1  # declaring and calling it directly still work
    with pytest.raises(TypeError) as info:
        guarded.to_bytes()
    message = str(info.value)
    assert message.startswith("udf 'guarded': the function cannot be pickled with cloudpickle")
    assert "lock" in message
    assert "inside the function" in message
    assert info.value.__cause__ is not None
    assert "lock" in str(info.value.__cause__)


# --- package --------------------------------------------------------------------------


def test_package_exports():
    assert flinkgo.udf is udf
    assert flinkgo.UserDefinedFunction is UserDefinedFunction
    assert set(flinkgo.__all__) == {
        "udf",
        "UserDefinedFunction",
        "__version__",
        # pandas UDAFs (test_udaf.py)
        "udaf",
        "UserDefinedAggregateFunction",
        # the DataFrame API (test_dataframe.py, test_expr.py)
        "Environment",
        "DataFrame",
        "KeyedDataFrame",
        "Sink",
        "Expr",
        "col",
        "lit",
        "Aggregate",
        "sum",
        "count",
        "min",
        "max",
        "mean",
        "first",
        "last",
        "count_distinct",
        "when",
        # built-in functions (test_builtins.py)
        "coalesce",
        "concat",
        # event time (test_windows.py)
        "Window",
        "WindowedDataFrame",
        "tumble",
        "hop",
        "cumulate",
        "session",
        "JobPlan",
        "PlanNode",
        "PlanInput",
        # running jobs (test_execute.py, test_client.py)
        "JobResult",
        "JobClient",
        "OperatorMetrics",
        "RescaleInfo",
        "RescaleVertex",
        "RescaleError",
        # errors (flinkgo.exceptions, test_exceptions.py)
        "FlinkgoError",
        "InvalidArgumentError",
        "ArgumentTypeError",
        "ColumnNotFoundError",
        "SchemaError",
        "ExpressionTypeError",
        "UdfPickleError",
        "UnexecutedSinkWarning",
        "NoSuchFileError",
        "PathIsDirectoryError",
        "PathIsFileError",
        "InvalidPlanError",
        "JobFailedError",
        "JobCanceledError",
        "JobTimeoutError",
        "JobNotFoundError",
        "SavepointError",
        "OperatorNotFoundError",
        "RuntimeStartError",
        "RuntimeConnectionError",
    }
    assert all(hasattr(flinkgo, name) for name in flinkgo.__all__)


def test_version_matches_pyproject():
    tomllib = pytest.importorskip("tomllib")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text())["project"]
    assert flinkgo.__version__ == project["version"] == "0.1.0"


def test_import_is_light():
    code = (
        "import sys, flinkgo\n"
        "heavy = [m for m in ('grpc', 'google.protobuf', 'flinkgo._proto', 'flinkgo.worker')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == ""


# --- concurrency=(min, max): bounds for the autoscaler --------------------------------


def test_concurrency_bounds_in_spec():
    @udf("int64", concurrency=(1, 4))
    def slow(x):
        return x

    assert slow.concurrency == 1  # the operator starts at min
    assert slow.concurrency_bounds == (1, 4)
    assert "concurrency=(1, 4)" in repr(slow)
    spec = spec_of(slow)
    assert (spec.concurrency, spec.concurrency_min, spec.concurrency_max) == (1, 1, 4)
    plain = spec_of(udf(lambda x: x, "int64", concurrency=3))
    assert (plain.concurrency, plain.concurrency_min, plain.concurrency_max) == (3, 0, 0)


@pytest.mark.parametrize(
    ("bounds", "error", "match"),
    [
        ((3, 2), ValueError, r"1 <= min <= max, got \(3, 2\)"),
        ((0, 2), ValueError, "concurrency min must be a positive integer"),
        ((1, 2, 3), ValueError, r"a pair \(min, max\)"),
        ((1, "4"), TypeError, "concurrency max must be a positive integer or None"),
    ],
)
def test_concurrency_bounds_checked(bounds, error, match):
    with pytest.raises(error, match=match):
        udf(lambda x: x, "int64", concurrency=bounds, name="f")


def test_concurrency_bounds_refused_for_async_and_udaf():
    async def fetch(x):
        return x

    with pytest.raises(ValueError, match="async def UDF cannot take concurrency bounds"):
        udf(fetch, "int64", concurrency=(1, 4))
    with pytest.raises(ValueError, match="concurrency bounds .* are for UDFs"):
        flinkgo.udaf(lambda s: s.sum(), "int64", concurrency=(1, 4))  # type: ignore[arg-type]


def test_concurrency_bounds_reach_the_planner():
    # The runtime's planner starts the UDF's operator at min and shows the bounds.
    @udf("int64", concurrency=(1, 3))
    def bounded(x):
        return x

    env = flinkgo.Environment(parallelism=2)
    df = env.datagen(rows=10, schema={"id": "int64"})
    df.with_column("y", bounded(flinkgo.col("id"))).uid("s").print()
    text = env.explain()
    assert 'udf "bounded" uid=s/udf-0 p=1 (udf concurrency)' in text
    assert "bounded(id) [concurrency=(1, 3)] -> y" in text
