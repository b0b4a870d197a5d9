"""The worker's row-at-a-time ("general") UDF path, on Chain.apply directly.

The path calls the user's function column-wise (map over to_pylist columns) and
builds the result with one conversion where the values already have the declared
type; these tests pin what that must keep: values, nulls, the failing row, and
the errors for results that do not fit the declared type.
"""

import pyarrow as pa
import pytest

from flinkgo import udf
from flinkgo._proto import worker_pb2
from flinkgo.types import schema_ipc_bytes
from flinkgo.worker.chain import Chain, UdfCallError, UdfResultError


def chain_of(func, args, input_schema, return_type, async_timeout=0.0):
    call = worker_pb2.UdfCall(
        udf=worker_pb2.UdfSpec.FromString(func.to_bytes()), args=args, output="out"
    )
    return Chain(
        worker_pb2.OpenRequest(
            calls=[call],
            input_schema=schema_ipc_bytes(input_schema),
            output_schema=schema_ipc_bytes(pa.schema([pa.field("out", return_type)])),
            max_message_bytes=16 << 20,
            async_timeout_seconds=async_timeout,
        )
    )


XY = pa.schema([pa.field("x", pa.int64()), pa.field("y", pa.string())])


def xy_batch():
    return pa.record_batch(
        [pa.array([1, None, 3, 4], pa.int64()), pa.array(["a", "b", None, "d"])], schema=XY
    )


def test_two_arguments_in_order_with_nulls_as_none():
    @udf("string")
    def both(x, y):
        return f"{x}:{y}"

    out = chain_of(both, ["x", "y"], XY, pa.string()).apply(xy_batch())
    assert out.column(0).to_pylist() == ["1:a", "None:b", "3:None", "4:d"]


def test_no_arguments_calls_once_per_row():
    calls = []

    @udf("int64")
    def counter():
        calls.append(1)
        return len(calls)

    out = chain_of(counter, [], XY, pa.int64()).apply(xy_batch())
    assert out.column(0).to_pylist() == [1, 2, 3, 4]


def test_int64_result_with_none_is_null():
    @udf("int64")
    def maybe(x):
        return None if x is None else x * 2

    out = chain_of(maybe, ["x"], XY, pa.int64()).apply(xy_batch())
    assert out.column(0).type == pa.int64()
    assert out.column(0).to_pylist() == [2, None, 6, 8]


@pytest.mark.parametrize(
    ("args", "fail_at", "called_with"),
    [(["x"], 2, "(3,)"), (["x", "y"], 3, "(4, 'd')"), ([], 1, "()")],
)
def test_failing_row_is_named(args, fail_at, called_with):
    seen = []

    @udf("int64")
    def fails(*values):
        seen.append(values)
        if len(seen) == fail_at + 1:
            raise ValueError("boom")
        return 0

    with pytest.raises(UdfCallError) as info:
        chain_of(fails, args, XY, pa.int64()).apply(xy_batch())
    assert info.value.udf_name == "fails"
    assert info.value.row == f"row {fail_at} of the batch, called with {called_with}"


def test_float_into_int64_is_an_error_naming_row_and_value():
    @udf("int64")
    def half(x):
        return 2.5 if x == 3 else 1

    with pytest.raises(UdfResultError, match=r"'half' returned 2.5 at row 2 of the batch"):
        chain_of(half, ["x"], XY, pa.int64()).apply(xy_batch())


def test_whole_floats_into_int64_pass():
    @udf("int64")
    def whole(x):
        return 2.0

    out = chain_of(whole, ["x"], XY, pa.int64()).apply(xy_batch())
    assert out.column(0).to_pylist() == [2, 2, 2, 2]


def test_int_too_large_for_int32_is_an_error():
    @udf("int32")
    def big(x):
        return 1 << 40

    with pytest.raises(UdfResultError, match=r"'big' returned values that do not convert"):
        chain_of(big, ["x"], XY, pa.int32()).apply(xy_batch())


def test_string_into_int64_is_an_error():
    @udf("int64")
    def text(x):
        return "7"

    with pytest.raises(UdfResultError, match=r"'text' returned values that do not convert"):
        chain_of(text, ["x"], XY, pa.int64()).apply(xy_batch())


def test_a_batch_larger_than_a_chunk_keeps_values_nulls_and_row_numbers():
    # The row path converts and calls at most _ROW_CHUNK rows at a time (CPU caches);
    # the result is one array in row order, and errors name the row in the whole batch.
    from flinkgo.worker.chain import _ROW_CHUNK

    n = 2 * _ROW_CHUNK + 5
    xs = pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int64())
    batch = pa.record_batch([xs, pa.array(["s"] * n)], schema=XY)

    @udf("int64")
    def double(x):
        return None if x is None else 2 * x

    out = chain_of(double, ["x"], XY, pa.int64()).apply(batch)
    assert out.column(0).to_pylist() == [None if i % 7 == 0 else 2 * i for i in range(n)]

    fail_at = _ROW_CHUNK + 3

    @udf("int64")
    def fails(x):
        if x == fail_at:
            raise ValueError("boom")
        return 0

    with pytest.raises(UdfCallError) as info:
        chain_of(fails, ["x"], XY, pa.int64()).apply(batch)
    assert info.value.row == f"row {fail_at} of the batch, called with ({fail_at},)"

    @udf("int64")
    def half(x):
        return 2.5 if x == fail_at else 1

    with pytest.raises(UdfResultError, match=rf"'half' returned 2.5 at row {fail_at} of the batch"):
        chain_of(half, ["x"], XY, pa.int64()).apply(batch)


def test_async_call_past_the_runtimes_limit_says_so_with_its_row():
    import asyncio

    @udf("int64")
    async def slow_on_three(x):
        if x == 3:
            await asyncio.sleep(60)
        return x

    chain = chain_of(slow_on_three, ["x"], XY, pa.int64(), async_timeout=0.05)
    try:
        with pytest.raises(UdfCallError) as info:
            chain.apply(xy_batch())
    finally:
        chain.close()
    assert isinstance(info.value.cause, TimeoutError)
    assert "did not finish within 0.05 s, the runtime's limit" in str(info.value.cause)
    assert info.value.row == "row 2 of the batch, called with (3,)"


def test_async_timeout_error_of_the_users_code_is_the_users():
    import asyncio

    @udf("int64")
    async def gives_up_on_three(x):
        if x == 3:
            raise TimeoutError("upstream took too long")
        await asyncio.sleep(0)
        return x

    # The runtime's limit is far away: the user's TimeoutError is reported as raised.
    chain = chain_of(gives_up_on_three, ["x"], XY, pa.int64(), async_timeout=180.0)
    try:
        with pytest.raises(UdfCallError) as info:
            chain.apply(xy_batch())
    finally:
        chain.close()
    assert str(info.value.cause) == "upstream took too long"
    assert info.value.row == "row 2 of the batch, called with (3,)"
