import operator
import threading

import cloudpickle
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import flinkgo as fg
from flinkgo import ColumnNotFoundError, Expr, col, lit, udf
from flinkgo._proto import plan_pb2, worker_pb2
from flinkgo.expr import UdfCall, resolve
from flinkgo.types import schema_from_ipc_bytes

SCHEMA = pa.schema(
    [
        ("sensor", pa.string()),
        ("temperature", pa.float64()),
        ("n", pa.int64()),
        ("small", pa.int32()),
        ("flag", pa.bool_()),
    ]
)

# Real rows of SCHEMA: expected types come from pyarrow.compute on them.
DATA = pa.table(
    {
        "sensor": pa.array(["a", None, "c"]),
        "temperature": pa.array([20.5, 31.0, None]),
        "n": pa.array([1, -7, 3], pa.int64()),
        "small": pa.array([2, 5, None], pa.int32()),
        "flag": pa.array([True, False, None]),
    },
    schema=SCHEMA,
)


def proto(expr: Expr, schema: pa.Schema = SCHEMA) -> plan_pb2.Expr:
    return resolve(expr, schema, op="test").proto


def column(name):
    return plan_pb2.Expr(column=name)


def int_lit(v):
    return plan_pb2.Expr(literal=plan_pb2.Literal(int_value=v))


# --- the plan messages of operators -------------------------------------------------------

BINARY = [
    (operator.add, "add"),
    (operator.sub, "subtract"),
    (operator.mul, "multiply"),
    (operator.truediv, "divide"),
    (operator.mod, "modulo"),
    (operator.eq, "equal"),
    (operator.ne, "not_equal"),
    (operator.lt, "less"),
    (operator.le, "less_equal"),
    (operator.gt, "greater"),
    (operator.ge, "greater_equal"),
]


@pytest.mark.parametrize(("op", "function"), BINARY)
def test_binary_operators_become_calls_named_as_in_plan_proto(op, function):
    got = proto(op(col("n"), col("small")))
    assert got == plan_pb2.Expr(
        call=plan_pb2.Call(function=function, args=[column("n"), column("small")])
    )


@pytest.mark.parametrize(
    ("op", "function"),
    [
        (operator.add, "add"),
        (operator.sub, "subtract"),
        (operator.mul, "multiply"),
        (operator.truediv, "divide"),
        (operator.mod, "modulo"),
    ],
)
def test_reflected_operators_keep_operand_order(op, function):
    got = proto(op(10, col("n")))
    assert got == plan_pb2.Expr(
        call=plan_pb2.Call(function=function, args=[int_lit(10), column("n")])
    )


def test_boolean_operators():
    a, b = col("flag"), col("n") > 1
    gt = plan_pb2.Expr(call=plan_pb2.Call(function="greater", args=[column("n"), int_lit(1)]))
    assert proto(a & b) == plan_pb2.Expr(
        call=plan_pb2.Call(function="and", args=[column("flag"), gt])
    )
    assert proto(a | b) == plan_pb2.Expr(
        call=plan_pb2.Call(function="or", args=[column("flag"), gt])
    )
    assert proto(~a) == plan_pb2.Expr(call=plan_pb2.Call(function="not", args=[column("flag")]))
    true = plan_pb2.Expr(literal=plan_pb2.Literal(bool_value=True))
    assert proto(True & a).call.args[0] == true  # reflected
    assert proto(a | True).call.args[1] == true


def test_unary_and_null_tests():
    assert proto(-col("n")) == plan_pb2.Expr(
        call=plan_pb2.Call(function="negate", args=[column("n")])
    )
    assert proto(col("n").is_null()).call.function == "is_null"
    assert proto(col("n").is_not_null()).call.function == "is_not_null"


def test_cast_carries_the_arrow_type_name():
    for target in ("int32", pa.int32()):
        got = proto(col("n").cast(target))
        assert got == plan_pb2.Expr(
            call=plan_pb2.Call(function="cast", args=[column("n")], cast_to="int32")
        )
    assert proto(col("n").cast("timestamp[ms]")).call.cast_to == "timestamp[ms]"
    assert proto(col("n").cast("float")).call.cast_to == "double"  # flinkgo's alias


def test_cast_to_an_unknown_type_name_fails_at_once():
    with pytest.raises(ValueError, match="unknown Arrow type name 'int65'"):
        col("n").cast("int65")


def test_alias_is_not_in_the_plan_message():
    assert proto((col("n") + 1).alias("m")) == proto(col("n") + 1)


def test_nested_expression_message():
    e = (col("temperature") * 1.8 + 32 > 90) & col("sensor").is_not_null()
    assert proto(e) == plan_pb2.Expr(
        call=plan_pb2.Call(
            function="and",
            args=[
                plan_pb2.Expr(
                    call=plan_pb2.Call(
                        function="greater",
                        args=[
                            plan_pb2.Expr(
                                call=plan_pb2.Call(
                                    function="add",
                                    args=[
                                        plan_pb2.Expr(
                                            call=plan_pb2.Call(
                                                function="multiply",
                                                args=[
                                                    column("temperature"),
                                                    plan_pb2.Expr(
                                                        literal=plan_pb2.Literal(float_value=1.8)
                                                    ),
                                                ],
                                            )
                                        ),
                                        int_lit(32),
                                    ],
                                )
                            ),
                            int_lit(90),
                        ],
                    )
                ),
                plan_pb2.Expr(call=plan_pb2.Call(function="is_not_null", args=[column("sensor")])),
            ],
        )
    )


# --- literals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "field", "arrow_type"),
    [
        (True, "bool_value", pa.bool_()),
        (7, "int_value", pa.int64()),
        (2.5, "float_value", pa.float64()),
        ("x", "string_value", pa.string()),
    ],
)
def test_literal_natural_types(value, field, arrow_type):
    message = proto(lit(value)).literal
    assert message.WhichOneof("value") == field
    assert getattr(message, field) == value
    assert message.type == ""
    assert lit(value).output_type(SCHEMA) == arrow_type


def test_literal_with_a_type():
    message = proto(lit(1, "int8")).literal
    assert (message.int_value, message.type) == (1, "int8")
    assert lit(1, pa.int8()).output_type(SCHEMA) == pa.int8()
    ts = lit("2024-01-01T12:00:00", "timestamp[ms]")
    assert ts.output_type(SCHEMA) == pa.timestamp("ms")
    assert proto(ts).literal.string_value == "2024-01-01T12:00:00"
    assert proto(ts).literal.type == "timestamp[ms]"
    # The natural type given explicitly is left out.
    assert proto(lit(1, "int64")).literal.type == ""


def test_null_literals_carry_their_type():
    untyped = proto(lit(None)).literal
    assert (untyped.null, untyped.type) == (True, "null")
    typed = proto(lit(None, "double")).literal
    assert (typed.null, typed.type) == (True, "double")
    assert lit(None, "double").output_type(SCHEMA) == pa.float64()


def test_numpy_scalars_are_plain_literals():
    np = pytest.importorskip("numpy")
    assert proto(lit(np.int32(3))).literal.int_value == 3
    assert proto(lit(np.float32(0.5))).literal.float_value == 0.5


def test_python_values_next_to_expressions_are_literals():
    # In operators a str is a literal, as in polars.
    assert proto(col("sensor") == "a").call.args[1] == plan_pb2.Expr(
        literal=plan_pb2.Literal(string_value="a")
    )


def test_literal_errors():
    with pytest.raises(TypeError, match=r"lit: unsupported value b'x' \(of type bytes\)"):
        lit(b"x")
    with pytest.raises(ValueError, match="lit: 300 does not convert to int8"):
        lit(300, "int8")
    with pytest.raises(ValueError, match="outside the int64 range"):
        lit(2**64)
    with pytest.raises(TypeError, match="unsupported value"):
        col("n") + [1, 2]


# --- output types ---------------------------------------------------------------------------


@pytest.mark.parametrize(("op", "function"), BINARY)
@pytest.mark.parametrize(
    ("left", "right"),
    [("n", "small"), ("small", "small"), ("temperature", "n"), ("small", "temperature")],
)
def test_output_types_are_those_of_arrow_kernels_on_real_data(op, function, left, right):
    if function == "modulo":  # ours (Arrow has no modulo before pyarrow 15): int64 or float64
        ints = pa.types.is_integer(DATA[left].type) and pa.types.is_integer(DATA[right].type)
        assert op(col(left), col(right)).output_type(SCHEMA) == (
            pa.int64() if ints else pa.float64()
        )
        return
    expected = pc.call_function(function, [DATA[left], DATA[right]]).type
    if function == "divide":  # true division
        expected = pc.divide(pc.cast(DATA[left], "double"), pc.cast(DATA[right], "double")).type
    assert op(col(left), col(right)).output_type(SCHEMA) == expected


def test_modulo_has_pythons_semantics():
    from flinkgo.expr import _python_modulo

    got = _python_modulo([pa.array([-7, 7, None]), pa.array([3, -3, 3])]).to_pylist()
    assert got == [-7 % 3, 7 % -3, None]
    floats = _python_modulo([pa.array([-7.5, 1.0]), pa.scalar(2.0)]).to_pylist()
    assert floats[0] == -7.5 % 2.0 and floats[1] == 1.0


def test_true_division_of_integers_is_float64():
    assert (col("n") / col("small")).output_type(SCHEMA) == pa.float64()
    assert (col("small") / 2).output_type(SCHEMA) == pa.float64()
    # Other arithmetic stays integer, with Arrow's promotion.
    assert (col("small") + 1).output_type(SCHEMA) == pa.int64()
    assert (col("small") * col("small")).output_type(SCHEMA) == pa.int32()
    assert (col("small") % 2).output_type(SCHEMA) == pa.int64()


def test_other_output_types():
    assert (-col("small")).output_type(SCHEMA) == pa.int32()
    assert (col("flag") & (col("n") > 0)).output_type(SCHEMA) == pa.bool_()
    assert (~col("flag")).output_type(SCHEMA) == pa.bool_()
    assert col("sensor").is_null().output_type(SCHEMA) == pa.bool_()
    assert col("n").cast("string").output_type(SCHEMA) == pa.string()
    assert (col("sensor") == "a").output_type(SCHEMA) == pa.bool_()
    assert (lit(1) + lit(2.0)).output_type(SCHEMA) == pa.float64()


def test_output_names():
    assert col("n").output_name() == "n"
    assert lit(1).output_name() == "literal"
    assert (col("n") + col("small")).output_name() == "n"
    assert (1 + col("n")).output_name() == "literal"
    assert col("n").cast("int32").output_name() == "n"
    assert (col("n") * 2).alias("double_n").output_name() == "double_n"
    assert col("n").alias("a").alias("b").output_name() == "b"


def test_text_rendering():
    e = ((col("temperature") * 1.8 + 32 > 90) & ~col("flag")).alias("hot")
    assert str(e) == "(((temperature * 1.8) + 32) > 90) & ~flag AS hot"
    assert repr(col("n") + 1) == "<Expr n + 1>"
    assert str(col("my col") - lit(None)) == "col('my col') - null"
    assert str((col("n") + 1).cast("int32").is_null()) == "(n + 1).cast(int32).is_null()"
    assert str(-(col("n") + 1)) == "-(n + 1)"


# --- errors ---------------------------------------------------------------------------------


def test_unknown_column_names_the_column_the_columns_and_the_operation():
    schema = pa.schema([("sensor", pa.string()), ("temperature", pa.float64())])
    with pytest.raises(ColumnNotFoundError) as info:
        resolve(col("temprature") > 3, schema, op="filter")
    assert str(info.value).startswith(
        "filter: unknown column 'temprature'; columns are ['sensor', 'temperature']"
    )
    assert "did you mean 'temperature'?" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_type_errors_name_the_expression():
    with pytest.raises(TypeError) as info:
        resolve((col("sensor") > 3) & col("flag"), SCHEMA, op="filter")
    message = str(info.value)
    assert message.startswith("filter: cannot evaluate `sensor > 3` (in `(sensor > 3) & flag`)")
    assert "no kernel matching input types (string, int64)" in message
    assert isinstance(info.value.__cause__, pa.ArrowNotImplementedError)


def test_cast_errors_name_the_expression():
    with pytest.raises(TypeError, match=r"cannot evaluate `n.cast\(list<item: int32>\)`"):
        col("n").cast(pa.list_(pa.int32())).output_type(SCHEMA)


def test_expressions_have_no_truth_value():
    with pytest.raises(TypeError, match="combine conditions with & | ~"):
        bool(col("n") > 1)
    with pytest.raises(TypeError, match="truth value"):
        1 < col("n") < 3  # noqa: B015 - chained comparisons call bool()


def test_comparing_with_none_points_to_is_null():
    with pytest.raises(TypeError, match=r"use .is_null\(\) or .is_not_null\(\)"):
        col("n") == None  # noqa: B015, E711
    with pytest.raises(TypeError, match="is_null"):
        col("n") != None  # noqa: B015, E711


def test_expressions_are_not_hashable():
    with pytest.raises(TypeError):
        hash(col("n"))


def test_bad_names():
    with pytest.raises(TypeError, match="col: the column name must be a non-empty string"):
        col("")
    with pytest.raises(TypeError, match="alias: the name must be a non-empty string"):
        col("n").alias(3)


# --- UDF calls ------------------------------------------------------------------------------


@udf("double")
def to_fahrenheit(c):
    return c * 1.8 + 32


@udf("int64", func_type="pandas", concurrency=2, batch_size=100)
def add(a, b):
    return a + b


def test_calling_a_udf_applies_it_to_columns_and_func_calls_the_function():
    # As in select, key_by and PySpark, a str argument names a column, even alone:
    # name_len("email") must never run the function on the string "email".
    e = add("a", "b")
    assert isinstance(e, UdfCall)
    assert str(e) == "add(a, b)"
    assert add("a", lit("b")).output_name() == "add"
    # The function itself, on plain values.
    assert to_fahrenheit.func(100) == 212.0
    assert add.func("a", "b") == "ab"


def test_calling_a_udf_with_an_expression_makes_a_udf_expression():
    e = to_fahrenheit(col("temperature"))
    assert isinstance(e, UdfCall)
    assert e.udf is to_fahrenheit
    assert e.output_name() == "to_fahrenheit"
    assert e.output_type(SCHEMA) == pa.float64()  # the declared type
    assert str(e) == "to_fahrenheit(temperature)"


def test_udf_expression_carries_the_spec_and_argument_expressions():
    # With an Expr argument, a str names a column and other values are literals.
    e = add(col("n"), "small")
    message = proto(e)
    assert message.WhichOneof("kind") == "udf"
    spec = message.udf.udf
    assert spec.name == "add"
    assert spec.func_type == worker_pb2.FUNC_TYPE_PANDAS
    assert (spec.concurrency, spec.batch_size) == (2, 100)
    assert schema_from_ipc_bytes(spec.return_schema) == pa.schema([("add", pa.int64())])
    func = cloudpickle.loads(spec.payload)
    assert func(pd.Series([1, 2]), pd.Series([10, 20])).tolist() == [11, 22]
    assert list(message.udf.args) == [column("n"), column("small")]
    assert proto(add(col("n"), 5)).udf.args[1] == int_lit(5)


def test_udf_expressions_compose_with_operators():
    e = (to_fahrenheit(col("temperature")) > 90) & col("flag")
    assert e.output_type(SCHEMA) == pa.bool_()
    message = proto(e)
    assert message.call.args[0].call.args[0].udf.udf.name == "to_fahrenheit"
    nested = to_fahrenheit(col("n") + 1)
    assert proto(nested).udf.args[0].call.function == "add"


def test_udf_expression_arguments_are_checked():
    with pytest.raises(ColumnNotFoundError, match="select: unknown column 'nope'"):
        resolve(to_fahrenheit(col("nope")), SCHEMA, op="select")
    with pytest.raises(TypeError, match="cannot evaluate `sensor - 1`"):
        resolve(to_fahrenheit(col("sensor") - 1), SCHEMA, op="select")


def test_udf_expression_rejects_keywords_and_bad_arity():
    with pytest.raises(
        TypeError, match=r"udf 'add': applied to columns, a UDF takes positional.*add\.func"
    ):
        add(col("n"), b=col("small"))
    with pytest.raises(
        TypeError, match=r"udf 'add': the arguments do not fit the signature add\(a, b\)"
    ):
        add(col("n"))
    with pytest.raises(TypeError, match="udf 'to_fahrenheit': the arguments do not fit"):
        to_fahrenheit(col("n"), col("small"))


def test_unpicklable_udf_fails_when_applied_naming_the_operation():
    lock = threading.Lock()

    @udf("int64")
    def guarded(x):
        with lock:
            return x

    with pytest.raises(TypeError) as info:
        resolve(guarded(col("n")), SCHEMA, op="with_column 'g'")
    assert str(info.value).startswith(
        "with_column 'g': udf 'guarded': the function cannot be pickled with cloudpickle"
    )


def test_async_udf_expression():
    @udf("string", concurrency=8)
    async def lookup(key):
        return key

    spec = proto(lookup(col("sensor"))).udf.udf
    assert spec.is_async is True
    assert spec.concurrency == 8


def test_output_type_needs_a_schema():
    with pytest.raises(TypeError, match="expected a pyarrow.Schema, got dict"):
        col("n").output_type({"n": "int64"})


def test_package_level_helpers():
    assert fg.col is col
    assert fg.lit is lit
