"""A fused chain of UDFs applied to Arrow record batches.

Every UDF kind is fed whole Arrow batches, so ``batch_size`` applies to all of
them; what differs is how the worker calls the user's function:

* ``general``: once per row with Python values (``None`` for nulls);
* ``pandas``: once per batch with ``pandas.Series`` (zero-copy where Arrow
  allows), returning a Series, array or list of the same length;
* ``arrow``: once per batch with ``pyarrow.Array``, returning an Array;
* ``async def`` (general only): once per row on the worker's asyncio loop,
  with at most ``concurrency`` calls in flight and each call under a timeout;
  results keep input order;
* ``pandas_batch`` (``map_batches``): once per batch with the whole batch as a
  ``pandas.DataFrame``, returning a DataFrame of any number of rows with the
  declared columns. It is alone in its chain.
* ``pandas_aggregate`` (``@udaf``): once per group with one ``pandas.Series``
  per argument holding the group's rows, returning one scalar. A batch holds
  many groups: its first column, ``__flinkgo_group``, numbers them in runs,
  and the result has one row per group. The chain holds aggregates only.

A result with the wrong number of rows or a type that does not convert to
the declared return type raises ``UdfResultError`` naming the UDF.
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import cloudpickle
import pyarrow as pa

from flinkgo._proto import worker_pb2
from flinkgo.exceptions import FlinkgoError

# Calls in flight per async UDF when the UDF gives no concurrency; Flink's
# table.exec.async-scalar.max-concurrent-operations default.
DEFAULT_ASYNC_CONCURRENCY = 10


class UdfResultError(FlinkgoError):
    """A UDF returned the wrong number of rows or a value of the wrong type."""


class UdfCallError(FlinkgoError):
    """Wraps an exception raised by user code with the UDF's name.

    `row` says which row of the batch a row-at-a-time UDF failed on, with its
    arguments (truncated), when that is known.
    """

    def __init__(self, udf_name: str, cause: BaseException, *, row: str | None = None):
        super().__init__(str(cause))
        self.udf_name = udf_name
        self.cause = cause
        self.row = row


_ROW_REPR_LIMIT = 200


def _describe_row(row: int, columns: Sequence[list[Any]], offset: int = 0) -> str:
    """Name row `row` of `columns`, which start at row `offset` of the batch."""
    arguments = repr(tuple(c[row] for c in columns))
    if len(arguments) > _ROW_REPR_LIMIT:
        arguments = arguments[: _ROW_REPR_LIMIT - 5] + " ...)"
    return f"row {offset + row} of the batch, called with {arguments}"


def read_schema(ipc_bytes: bytes) -> pa.Schema:
    """Read the schema of an Arrow IPC stream that holds no batches."""
    return pa.ipc.open_stream(pa.py_buffer(ipc_bytes)).schema


def read_batch(ipc_bytes: bytes | memoryview) -> pa.RecordBatch:
    """Read the single record batch of an Arrow IPC stream, without copying."""
    reader = pa.ipc.open_stream(pa.py_buffer(ipc_bytes))
    return reader.read_next_batch()


def write_batch(batch: pa.RecordBatch) -> bytes:
    """Serialize one batch as an Arrow IPC stream (schema, batch, end)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue())


@dataclass
class _Call:
    name: str
    func: Callable[..., Any]
    func_type: int
    is_async: bool
    concurrency: int
    return_type: pa.DataType
    args: list[str]
    output: str


class AsyncLoop:
    """An asyncio loop on its own daemon thread, shared by the async UDFs."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="flinkgo-async-udf", daemon=True
        )
        self._thread.start()

    def run(self, coro: Any) -> Any:
        """Run ``coro`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        """Stop the loop; calls still pending are abandoned."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=1)


class Chain:
    """The UDF chain of one OpenRequest."""

    def __init__(self, request: worker_pb2.OpenRequest):
        self.input_schema = read_schema(request.input_schema)
        self.output_schema = read_schema(request.output_schema)
        self.async_timeout = request.async_timeout_seconds or None
        self.calls = [self._compile(c) for c in request.calls]
        self.is_batch_map = any(
            c.func_type == worker_pb2.FUNC_TYPE_PANDAS_BATCH for c in self.calls
        )
        if self.is_batch_map and len(self.calls) != 1:
            raise ValueError("a map_batches function must be alone in its chain")
        aggregates = [c.func_type == worker_pb2.FUNC_TYPE_PANDAS_AGGREGATE for c in self.calls]
        self.is_aggregate = any(aggregates)
        if self.is_aggregate and not all(aggregates):
            raise ValueError("a chain of aggregate functions cannot hold other UDFs")
        if self.is_aggregate and self.input_schema.names[:1] != [GROUP_COLUMN]:
            raise ValueError(f"an aggregate chain's input must start with {GROUP_COLUMN!r}")
        self._async_loop = AsyncLoop() if any(c.is_async for c in self.calls) else None
        known = set(self.input_schema.names)
        if self.is_batch_map:
            return
        for call in self.calls:
            missing = [a for a in call.args if a not in known]
            if missing:
                raise ValueError(
                    f"udf {call.name!r}: argument column(s) {missing} are neither input "
                    f"columns {self.input_schema.names} nor outputs of earlier UDFs"
                )
            known.add(call.output)
        missing = [n for n in self.output_schema.names if n not in known]
        if missing:
            raise ValueError(f"output column(s) {missing} are produced by no UDF of the chain")

    @staticmethod
    def _compile(call: worker_pb2.UdfCall) -> _Call:
        spec = call.udf
        try:
            func = cloudpickle.loads(spec.payload)
        except ModuleNotFoundError as e:
            hint = ModuleNotFoundError(
                f"{e}: the udf needs module {e.name!r}, which the worker's Python "
                f"({sys.executable}) cannot import; install it in that environment "
                "(or set the runtime's FLINKGO_PYTHON to a Python that has it)"
            )
            hint.name = e.name
            raise UdfCallError(spec.name, hint) from e
        except Exception as e:
            raise UdfCallError(spec.name, e) from e
        if spec.source_file:
            func = _restore_source(func, spec.source_file, spec.source_text)
        return_type = read_schema(spec.return_schema).field(0).type
        concurrency = spec.concurrency or (DEFAULT_ASYNC_CONCURRENCY if spec.is_async else 1)
        return _Call(
            name=spec.name,
            func=func,
            func_type=spec.func_type,
            is_async=spec.is_async,
            concurrency=concurrency,
            return_type=return_type,
            args=list(call.args),
            output=call.output or spec.name,
        )

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Apply every call in order; return the output columns."""
        if self.is_batch_map:
            return self._map_batch(self.calls[0], batch)
        if self.is_aggregate:
            return self._aggregate(batch)
        columns: dict[str, pa.Array] = dict(zip(batch.schema.names, batch.columns, strict=True))
        for call in self.calls:
            args = [columns[a] for a in call.args]
            columns[call.output] = self._invoke(call, args, batch.num_rows)
        arrays = []
        for field in self.output_schema:
            array = columns[field.name]
            if not array.type.equals(field.type):
                array = array.cast(field.type)
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema)

    def _map_batch(self, call: _Call, batch: pa.RecordBatch) -> pa.RecordBatch:
        import pandas as pd

        result = _call_user(call, batch.to_pandas())
        if not isinstance(result, pd.DataFrame):
            raise UdfResultError(
                f"map_batches function {call.name!r} must return a pandas.DataFrame, "
                f"got {type(result).__name__}"
            )
        names = self.output_schema.names
        missing = [n for n in names if n not in result.columns]
        if missing:
            raise UdfResultError(
                f"map_batches function {call.name!r} returned columns {list(result.columns)}, "
                f"missing {missing} of its declared schema {names}"
            )
        try:
            # Through a Table: pandas 3 frames (a pd.concat, say) can convert to
            # chunked columns, which a RecordBatch cannot hold.
            table = pa.Table.from_pandas(
                result[names], schema=self.output_schema, preserve_index=False
            ).combine_chunks()
            batches = table.to_batches()
            if not batches:
                return pa.RecordBatch.from_pylist([], schema=self.output_schema)
            return batches[0]
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise UdfResultError(
                f"map_batches function {call.name!r} returned values that do not fit its "
                f"declared schema {self.output_schema}: {e}"
            ) from e

    def _aggregate(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Call every aggregate once per group; one result row per group."""
        import numpy as np

        groups = batch.column(0).to_numpy(zero_copy_only=False)
        if len(groups) == 0:
            return pa.RecordBatch.from_pylist([], schema=self.output_schema)
        # Rows of a group are contiguous: its bounds are where the id changes.
        bounds = np.flatnonzero(groups[1:] != groups[:-1]) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        ends = [*bounds.tolist(), len(groups)]
        columns = dict(zip(batch.schema.names, batch.columns, strict=True))
        arrays = []
        for call, field in zip(self.calls, self.output_schema, strict=True):
            series = [_fresh_series(columns[a]) for a in call.args]
            values = [
                _aggregate_value(call, _call_user(call, *(s.iloc[a:b] for s in series)))
                for a, b in zip(starts, ends, strict=True)
            ]
            try:
                array = _to_array(call, values, len(starts))
            except UdfResultError as e:
                # The scalar UDFs' conversion checks, named as what the user declared.
                raise UdfResultError(
                    str(e).replace(f"udf {call.name!r}", f"udaf {call.name!r}", 1)
                ) from e
            if not array.type.equals(field.type):
                array = array.cast(field.type)
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.output_schema)

    def close(self) -> None:
        """Release the chain's resources (the async loop)."""
        if self._async_loop is not None:
            self._async_loop.close()

    def _invoke(self, call: _Call, args: Sequence[pa.Array], num_rows: int) -> pa.Array:
        if call.is_async:
            assert self._async_loop is not None  # made in __init__ when a call is async
            values = self._async_loop.run(self._run_async(call, args, num_rows))
            return _to_array(call, values, num_rows)
        if call.func_type == worker_pb2.FUNC_TYPE_PANDAS:
            import pandas as pd

            series = [a.to_pandas() for a in args]
            result = _call_user(call, *series)
            if isinstance(result, pd.DataFrame):
                raise UdfResultError(
                    f"udf {call.name!r} (pandas) returned a pandas.DataFrame with columns "
                    f"{list(result.columns)}; a scalar pandas UDF returns a pandas.Series "
                    "(one value per row): select one column, or use map_batches for a "
                    "function that returns whole frames"
                )
            return _to_array(call, result, num_rows, from_pandas=True)
        if call.func_type == worker_pb2.FUNC_TYPE_ARROW:
            result = _call_user(call, *args)
            if isinstance(result, pa.ChunkedArray):
                result = result.combine_chunks()
            if not isinstance(result, pa.Array):
                raise UdfResultError(
                    f"udf {call.name!r} (arrow) must return a pyarrow.Array, "
                    f"got {type(result).__name__}"
                )
            return _check_array(call, result, num_rows)
        if num_rows <= _ROW_CHUNK:
            return _invoke_rows(call, args, num_rows, 0)
        parts = []
        for offset in range(0, num_rows, _ROW_CHUNK):
            rows = min(_ROW_CHUNK, num_rows - offset)
            chunk = [a.slice(offset, rows) for a in args]
            parts.append(_invoke_rows(call, chunk, rows, offset))
        return pa.concat_arrays(parts)

    async def _run_async(self, call: _Call, args: Sequence[pa.Array], num_rows: int) -> list[Any]:
        limit = asyncio.Semaphore(call.concurrency)
        timeout = self.async_timeout
        columns = [a.to_pylist() for a in args]
        rows = list(zip(*columns, strict=True)) if args else [()] * num_rows
        loop = asyncio.get_running_loop()

        async def one(index: int, row: tuple[Any, ...]) -> Any:
            async with limit:
                # The call runs in this task, not in one wait_for wraps it in: a
                # user's error then carries the user's frames only, and the
                # runtime's own deadline (expired) is told apart from a
                # TimeoutError the user's code raised (aiohttp's, wait_for's).
                expired = False
                task = asyncio.current_task()
                assert task is not None

                def expire() -> None:
                    nonlocal expired
                    expired = True
                    task.cancel()

                deadline = loop.call_later(timeout, expire) if timeout is not None else None
                try:
                    return await call.func(*row)
                except asyncio.CancelledError:
                    if not expired:
                        raise  # cancelled from outside: another row failed
                    raise UdfCallError(
                        call.name,
                        TimeoutError(
                            f"async call did not finish within {timeout:g} s, the runtime's "
                            "limit on one call of an async UDF (pluginrunner.Options."
                            "AsyncTimeout, as Flink's table.exec.async-scalar.timeout): "
                            "make the call return sooner, e.g. bound its waits with "
                            "asyncio.wait_for and handle their TimeoutError"
                        ),
                        row=_describe_row(index, columns),
                    ) from None
                except Exception as e:
                    raise UdfCallError(call.name, e, row=_describe_row(index, columns)) from e
                finally:
                    if deadline is not None:
                        deadline.cancel()

        tasks = [asyncio.ensure_future(one(i, row)) for i, row in enumerate(rows)]
        try:
            return await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()


def _restore_source(func: Any, filename: str, text: str) -> Any:
    """Give an unpickled function back its file name and source lines.

    cloudpickle names every shipped code object ``<dynamic-code>``; without
    this, a traceback could show neither the user's file nor the failing line.
    """

    def relocate(code: types.CodeType) -> types.CodeType:
        consts = tuple(relocate(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        return code.replace(co_filename=filename, co_consts=consts)

    if not isinstance(func, types.FunctionType):
        return func
    # Helpers defined beside the UDF were shipped with it and share its
    # globals; they come from the same file.
    for value in [func, *func.__globals__.values()]:
        if isinstance(value, types.FunctionType) and value.__code__.co_filename == "<dynamic-code>":
            value.__code__ = relocate(value.__code__)
    if text:
        lines = text.splitlines(keepends=True)
        linecache.cache[filename] = (len(text), None, lines, filename)
    return func


GROUP_COLUMN = "__flinkgo_group"
"""The first column of an aggregate chain's batches: the rows' group numbers."""


def _fresh_series(array: pa.Array) -> Any:
    return array.to_pandas()


def _aggregate_value(call: _Call, value: Any) -> Any:
    """Check that an aggregate function returned one value, not a column of them."""
    import numpy as np
    import pandas as pd

    if isinstance(value, (pd.Series, pd.DataFrame, pd.Index, list, tuple)) or (
        isinstance(value, np.ndarray) and value.ndim > 0
    ):
        raise UdfResultError(
            f"udaf {call.name!r} returned a {type(value).__name__} for a group; an aggregate "
            "function returns one scalar per group (e.g. s.mean(), not s * 2)"
        )
    if isinstance(value, np.generic):
        return value.item()
    if value is pd.NaT or value is pd.NA:
        return None
    return value


def _call_user(call: _Call, *args: Any) -> Any:
    try:
        return call.func(*args)
    except Exception as e:
        raise UdfCallError(call.name, e) from e


# A row UDF converts and calls at most this many rows at a time (slices of the
# batch, zero-copy). Past it the lists of Python objects per chunk outgrow the CPU
# caches: the plain loop of to_pylist, the calls and one pa.array measured 2.9-4.4 M
# rows/s on whole 65 536- and 262 144-row string batches against 6.7-6.9 M in 8 192-row
# chunks (and 7.5 M on whole 10 000-row ones), so a larger batch_size would be slower.
_ROW_CHUNK = 8192


def _invoke_rows(call: _Call, args: Sequence[pa.Array], num_rows: int, offset: int) -> pa.Array:
    """Call a row UDF on each of `num_rows` rows; `offset` is their first row in the batch."""
    # Column-wise: one to_pylist per argument, then map() calls the user's
    # function straight from C, with no tuple per row and no frame of ours.
    # Nulls arrive as None, as PyFlink passes them, so no per-row branch.
    columns = [a.to_pylist() for a in args]
    if columns:
        first = iter(columns[0])
        calls = map(call.func, first, *columns[1:])
    else:
        first = iter(range(num_rows))
        calls = map(lambda _: call.func(), first)
    try:
        values = list(calls)
    except Exception as e:
        # map() takes the failing row from `first` before the call: count what is
        # left, rather than tracking an index on every row's path.
        row = num_rows - sum(1 for _ in first) - 1
        raise UdfCallError(call.name, e, row=_describe_row(row, columns, offset)) from e
    return _to_array(call, values, num_rows, offset=offset)


def _to_array(
    call: _Call, values: Any, num_rows: int, from_pandas: bool = False, offset: int = 0
) -> pa.Array:
    """Build the declared type's array from a UDF's values (rows from `offset` of the batch)."""
    try:
        length = len(values)
    except TypeError:
        raise UdfResultError(
            f"udf {call.name!r} returned {type(values).__name__}, which has no length; "
            f"return one value per input row ({num_rows})"
        ) from None
    if length != num_rows:
        raise UdfResultError(
            f"udf {call.name!r} returned {length} rows for a batch of {num_rows} rows; "
            "a scalar UDF must return exactly one value per input row"
        )
    if isinstance(values, list) and pa.types.is_integer(call.return_type):
        # A row UDF's ints: converted as they are, they either come out as the
        # declared type exactly (nothing truncated, nothing parsed: done in one
        # conversion) or go through the typed conversion and its checks below.
        try:
            own = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            own = None
        if own is not None and own.type.equals(call.return_type):
            return _check_array(call, own, num_rows)
    try:
        array = pa.array(values, type=call.return_type, from_pandas=from_pandas)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise UdfResultError(
            f"udf {call.name!r} returned values that do not convert to its declared "
            f"return type {call.return_type}: {e}"
        ) from e
    lossy = _lossy_conversion(call, values, array, from_pandas, offset)
    if lossy is not None:
        raise UdfResultError(lossy)
    return _check_array(call, array, num_rows)


def _lossy_conversion(
    call: _Call, values: Any, array: pa.Array, from_pandas: bool, offset: int = 0
) -> str | None:
    """Say why converting `values` to the declared number type lost or invented data.

    pyarrow's typed conversion truncates Python floats into integers (2.5 becomes 2) and
    parses strings into numbers ("1.5" becomes 1.5). A result must fit its declared type
    exactly: the values are converted as they are (their own type) and compared.
    Conversions that lose nothing (an int into float64, 2.0 into int64) pass.
    """
    declared = call.return_type
    if not (pa.types.is_integer(declared) or pa.types.is_floating(declared)):
        return None
    dtype = getattr(values, "dtype", None)
    if dtype is not None:
        # A Series or ndarray: only text or Python objects can hide strings or floats.
        if getattr(dtype, "kind", "O") not in "OSU" and not _is_pandas_string(dtype):
            return None
    elif not pa.types.is_integer(declared):
        return None  # a list of str, say, into a float fails in pyarrow already
    try:
        own = pa.array(values, from_pandas=from_pandas)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None  # mixed values: the typed conversion's checks stand
    if pa.types.is_string(own.type) or pa.types.is_large_string(own.type):
        import pyarrow.compute as pc

        row = pc.index(pc.is_valid(own), True).as_py()
        return (
            f"udf {call.name!r} returned the string {own[row].as_py()!r} at row "
            f"{offset + row} of the batch, where its declared return type is {declared}; "
            "return numbers (convert strings yourself, e.g. with pandas.to_numeric), or "
            "declare a string return type"
        )
    if pa.types.is_floating(own.type) and pa.types.is_integer(declared):
        import pyarrow.compute as pc

        back = pc.cast(array, own.type)
        differs = pc.fill_null(pc.not_equal(own, back), False)
        if pc.any(differs).as_py():
            row = pc.index(differs, True).as_py()
            return (
                f"udf {call.name!r} returned {own[row].as_py()!r} at row {offset + row} of "
                f"the batch, which is not exactly a {declared} (its declared return type); "
                "return whole numbers (round them yourself), or declare a float return type"
            )
    return None


def _is_pandas_string(dtype: Any) -> bool:
    return type(dtype).__name__ in ("StringDtype", "ArrowDtype") and "str" in str(dtype)


def _check_array(call: _Call, array: pa.Array, num_rows: int) -> pa.Array:
    if len(array) != num_rows:
        raise UdfResultError(
            f"udf {call.name!r} returned {len(array)} rows for a batch of {num_rows} rows; "
            "a scalar UDF must return exactly one value per input row"
        )
    if not array.type.equals(call.return_type):
        raise UdfResultError(
            f"udf {call.name!r} returned type {array.type}, but it was declared to return "
            f"{call.return_type}"
        )
    return array
