"""Checks and schema inference behind the sources of :class:`flinkgo.Environment`.

Paths are resolved when the plan is built: a glob is expanded to the sorted absolute paths
of the files it matches, since the runtime may run in another working directory. Schemas
are inferred with pyarrow's readers from the first file (for CSV and JSON lines, from its
first block, as pyarrow's streaming readers do). Plan schemas carry no schema-level
metadata (pandas' index metadata, say).

This module depends on pyarrow only.
"""

from __future__ import annotations

import glob
import json
import math
import numbers
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from flinkgo.exceptions import (
    ArgumentTypeError,
    InvalidArgumentError,
    NoSuchFileError,
    PathIsDirectoryError,
    SchemaError,
)
from flinkgo.types import to_arrow_type

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

SchemaLike = pa.Schema | Mapping[str, pa.DataType | str]


def to_schema(op: str, schema: Any, *, what: str = "schema") -> pa.Schema:
    """Return `schema` (a pyarrow.Schema or a mapping name -> type) as a checked Schema."""
    if isinstance(schema, pa.Schema):
        result = schema
    elif isinstance(schema, Mapping):
        fields = []
        for name, t in schema.items():
            if not isinstance(name, str):
                raise ArgumentTypeError(
                    f"{op}: {what} column names must be strings, got {name!r} "
                    f"(of type {type(name).__name__})"
                )
            try:
                fields.append(pa.field(name, to_arrow_type(t)))
            except (TypeError, ValueError) as e:
                raise type(e)(f"{op}: bad type for column {name!r}: {e}") from e
        result = pa.schema(fields)
    else:
        raise ArgumentTypeError(
            f"{op}: {what} must be a pyarrow.Schema or a dict of column name to type "
            f"(such as {{'id': 'int64', 'name': 'string'}}), got {type(schema).__name__}"
        )
    return check_schema(op, result, what=what)


def logical_type(dtype: pa.DataType) -> pa.DataType:
    """`dtype` with ``large_string``/``large_binary`` as ``string``/``binary``, at any depth.

    Sources normalise to one logical string (and binary) type, so that pandas data
    (``large_string`` under pandas 3) and a CSV file (``string``) union, join and print
    alike. Offsets are 32-bit per batch, which batches of a stream never outgrow.
    """
    if pa.types.is_large_string(dtype):
        return pa.string()
    if pa.types.is_large_binary(dtype):
        return pa.binary()
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        item = dtype.value_field.with_type(logical_type(dtype.value_type))
        return pa.list_(item) if pa.types.is_list(dtype) else pa.large_list(item)
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(logical_type(f.type)) for f in dtype])
    if pa.types.is_map(dtype):
        return pa.map_(
            dtype.key_field.with_type(logical_type(dtype.key_type)),
            dtype.item_field.with_type(logical_type(dtype.item_type)),
        )
    if pa.types.is_dictionary(dtype):
        return pa.dictionary(dtype.index_type, logical_type(dtype.value_type), dtype.ordered)
    return dtype


def check_schema(op: str, schema: pa.Schema, *, what: str = "schema") -> pa.Schema:
    """Check that `schema` has columns with unique non-empty names; drop its metadata.

    Returns the schema with the sources' logical types (:func:`logical_type`).
    """
    if len(schema) == 0:
        raise SchemaError(f"{op}: the {what} has no columns")
    seen: set[str] = set()
    for name in schema.names:
        if not name:
            raise SchemaError(f"{op}: the {what} has a column with an empty name: {schema.names}")
        if name in seen:
            raise SchemaError(
                f"{op}: the {what} has the column {name!r} more than once: {schema.names}"
            )
        seen.add(name)
    return pa.schema([f.with_type(logical_type(f.type)) for f in schema.remove_metadata()])


def local_path(op: str, text: str) -> str:
    """Return the local path that `text` names: itself, or the path of a file: URI.

    Taken as a path, ``file:///etc/x`` would be the relative ``file:/etc/x`` under the
    working directory. Only ``file:///absolute/path`` (or ``file://localhost/...``)
    names a local path; another host's or a relative file: URI is refused.
    """
    if text[:5].lower() != "file:":
        return text
    parts = urllib.parse.urlsplit(text)
    if (
        parts.netloc not in ("", "localhost")
        or not parts.path.startswith("/")
        or parts.query
        or parts.fragment
    ):
        raise InvalidArgumentError(
            f"{op}: {text!r} is not a local file URI; give a plain path, or file:///absolute/path"
        )
    return urllib.parse.unquote(parts.path)


def resolve_paths(op: str, path_or_glob: Any, *, example: str) -> list[str]:
    """Expand a path or glob into the sorted absolute paths of existing files."""
    if not isinstance(path_or_glob, (str, os.PathLike)):
        raise ArgumentTypeError(
            f"{op}: expected a path or a glob pattern as a str or os.PathLike, got "
            f"{type(path_or_glob).__name__}"
        )
    pattern = os.fspath(path_or_glob)
    if not isinstance(pattern, str) or not pattern:
        raise ArgumentTypeError(f"{op}: expected a non-empty path or glob pattern, got {pattern!r}")
    expanded = os.path.expanduser(local_path(op, pattern))
    if os.path.isfile(expanded):
        return [os.path.abspath(expanded)]
    if os.path.isdir(expanded):
        raise PathIsDirectoryError(
            f"{op}: {pattern!r} is a directory; give a file or a glob pattern such as "
            f"{os.path.join(pattern, example)!r}"
        )
    paths = sorted(
        os.path.abspath(p) for p in glob.glob(expanded, recursive=True) if os.path.isfile(p)
    )
    if not paths:
        kind = "glob pattern" if glob.has_magic(expanded) else "path"
        raise NoSuchFileError(
            f"{op}: no file matches the {kind} {pattern!r} (relative paths are resolved "
            f"against {os.getcwd()!r})"
        )
    return paths


def csv_schema(
    op: str, path: str, *, schema: pa.Schema | None, delimiter: str, has_header: bool
) -> pa.Schema:
    """Infer the schema of a CSV file, or check `schema` against its first block."""
    from pyarrow import csv

    if os.path.getsize(path) == 0:
        return _empty_file(op, path, schema)
    parse = csv.ParseOptions(delimiter=delimiter)
    if schema is None:
        read = csv.ReadOptions(autogenerate_column_names=not has_header)
        convert = csv.ConvertOptions()
    else:
        read = csv.ReadOptions(column_names=None if has_header else schema.names)
        convert = csv.ConvertOptions(column_types=schema, include_columns=schema.names)
    try:
        with csv.open_csv(
            path, read_options=read, parse_options=parse, convert_options=convert
        ) as reader:
            inferred = reader.schema
            if schema is not None:
                # Converts the first block to the given types.
                next(iter(reader), None)
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowNotImplementedError, KeyError) as e:
        where = None
        if schema is not None and isinstance(e, pa.ArrowInvalid):
            where = _locate_csv_value(path, schema, parse=parse, read=read)
        if where is not None:
            # Line and column, as the runtime says for a bad value past the first
            # block; pyarrow's own message ("CSV column #1") adds nothing then.
            raise _read_error(op, path, schema, where) from None
        raise _read_error(op, path, schema, e) from e
    return check_schema(op, schema if schema is not None else inferred)


def _locate_csv_value(path: str, schema: pa.Schema, *, parse: Any, read: Any) -> str | None:
    """Find the first value of the file's first block that does not convert to `schema`.

    Returns ``line N, column "c": cannot parse "v" as T``, or None when no single value
    is to blame (then the caller reports pyarrow's own message).
    """
    import csv as pycsv

    from pyarrow import csv

    as_strings = csv.ConvertOptions(
        column_types={name: pa.string() for name in schema.names},
        include_columns=schema.names,
        strings_can_be_null=True,
    )
    try:
        with csv.open_csv(
            path, read_options=read, parse_options=parse, convert_options=as_strings
        ) as reader:
            block = next(iter(reader), None)
    except (pa.ArrowInvalid, pa.ArrowKeyError, KeyError):
        return None
    if block is None:
        return None
    bad: tuple[int, str, str] | None = None  # (row, column, value)
    for field in schema:
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            continue
        values = block.column(field.name)
        row = _first_unconvertible(values, field.type)
        if row is not None and (bad is None or row < bad[0]):
            bad = (row, field.name, values[row].as_py())
    if bad is None:
        return None
    row, column, value = bad
    # The row's line in the file (quoted fields may span lines).
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        lines = pycsv.reader(f, delimiter=parse.delimiter)
        if not read.column_names:  # the first record is the header
            next(lines, None)
        line = 0
        for i, _ in enumerate(lines):
            if i == row:
                break
            line = lines.line_num  # the last line of record i
        line += 1  # where record `row` starts
    dtype = schema.field(column).type
    quote = json.dumps  # double quotes, as the runtime's messages
    return f"line {line}, column {quote(column)}: cannot parse {quote(value)} as {dtype}"


def _first_unconvertible(values: pa.Array, dtype: pa.DataType) -> int | None:
    """Index of the first value of string `values` that does not cast to `dtype`."""
    import pyarrow.compute as pc

    def converts(lo: int, hi: int) -> bool:
        try:
            pc.cast(values.slice(lo, hi - lo), dtype, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
        return True

    if converts(0, len(values)):
        return None
    lo, hi = 0, len(values)  # the first bad value is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if converts(lo, mid):
            lo = mid
        else:
            hi = mid
    return lo


def jsonl_schema(op: str, path: str, *, schema: pa.Schema | None) -> pa.Schema:
    """Infer the schema of a JSON-lines file, or check `schema` against its first block."""
    from pyarrow import json

    if os.path.getsize(path) == 0:
        return _empty_file(op, path, schema)
    if schema is None:
        parse = json.ParseOptions()
    else:
        parse = json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        open_json = getattr(json, "open_json", None)
        if open_json is None:  # pyarrow < 19: read the whole file
            inferred = json.read_json(path, parse_options=parse).schema
        else:
            with open_json(path, parse_options=parse) as reader:
                inferred = reader.schema
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, StopIteration) as e:
        raise _read_error(op, path, schema, e) from e
    return check_schema(op, schema if schema is not None else inferred)


def parquet_schema(op: str, path: str) -> pa.Schema:
    """Read the Arrow schema of a Parquet file from its footer."""
    import pyarrow.parquet as pq

    try:
        return check_schema(op, pq.read_schema(path))
    except (pa.ArrowInvalid, OSError) as e:
        raise InvalidArgumentError(f"{op}: cannot read the Parquet schema of {path!r}: {e}") from e


def _empty_file(op: str, path: str, schema: pa.Schema | None) -> pa.Schema:
    # An empty first file fits any given schema, but has none to infer.
    if schema is None:
        raise InvalidArgumentError(
            f"{op}: cannot infer the schema of {path!r}: the file is empty; pass schema="
        )
    return check_schema(op, schema)


def _read_error(op: str, path: str, schema: pa.Schema | None, e: Exception | str) -> SchemaError:
    if schema is None:
        return SchemaError(f"{op}: cannot infer the schema of {path!r}: {e}")
    return SchemaError(f"{op}: {path!r} does not match the given schema ({_fields(schema)}): {e}")


def _fields(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def arrow_table(op: str, data: Any) -> pa.Table:
    """Turn a Table, RecordBatch, RecordBatchReader or batches into one Table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if hasattr(data, "__arrow_c_stream__"):  # e.g. a polars DataFrame
        return pa.table(data)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        batches = list(data)
        if not batches:
            raise InvalidArgumentError(
                f"{op}: no record batches given, so there is no schema; pass a "
                "pyarrow.Table (schema.empty_table() for no rows)"
            )
        for i, b in enumerate(batches):
            if not isinstance(b, pa.RecordBatch):
                raise ArgumentTypeError(
                    f"{op}: item {i} is a {type(b).__name__}, expected a pyarrow.RecordBatch"
                )
        for i, b in enumerate(batches[1:], start=1):
            if not b.schema.equals(batches[0].schema):
                raise SchemaError(
                    f"{op}: record batch {i} has another schema than batch 0:\n"
                    f"batch 0: {_fields(batches[0].schema)}\nbatch {i}: {_fields(b.schema)}"
                )
        return pa.Table.from_batches(batches)
    raise ArgumentTypeError(
        f"{op}: expected a pyarrow.Table, RecordBatch, RecordBatchReader or an iterable of "
        f"RecordBatch, got {type(data).__name__}"
    )


def table_ipc_bytes(table: pa.Table) -> bytes:
    """Encode `table` as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def positive_int(op: str, option: str, value: Any, *, upper: int) -> int | None:
    """Check that `value` is None or an int in [1, upper]."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{op}: {option} must be a positive integer, got {value!r} "
            f"(of type {type(value).__name__})"
        )
    number = int(value)
    if not 1 <= number <= upper:
        raise InvalidArgumentError(
            f"{op}: {option} must be a positive integer (1 to {upper}), got {number}"
        )
    return number


def int64(op: str, option: str, value: Any) -> int:
    """Check that `value` is an int in the int64 range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(
            f"{op}: {option} must be an integer, got {value!r} (of type {type(value).__name__})"
        )
    number = int(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise InvalidArgumentError(f"{op}: {option} must fit in 64 bits, got {number}")
    return number


def positive_rate(op: str, option: str, value: Any) -> float | None:
    """Check that `value` is None or a positive finite number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(
            f"{op}: {option} must be a positive number, got {value!r} "
            f"(of type {type(value).__name__})"
        )
    number = float(value)
    if not (number > 0 and math.isfinite(number)):
        raise InvalidArgumentError(f"{op}: {option} must be a positive finite number, got {number}")
    return number
