"""Arrow data types of UDF results, and Arrow IPC encoding of schemas.

A UDF declares its return type either as a :class:`pyarrow.DataType` or as a type name
string. Names are those of :func:`pyarrow.type_for_alias` (``"int64"``, ``"double"``,
``"string"``, ``"timestamp[ms]"``, ...) plus a few friendly aliases taken from Python's
builtin types (``"int"``, ``"float"``, ``"str"``, ``"bytes"``). Note that ``"float"`` means
a 64-bit float here, as in Python, while pyarrow's own alias ``"float"`` is 32-bit.

Schemas travel between the Python client, the Go runtime and the workers as Arrow IPC
streams holding the schema and no record batch.

This module depends on pyarrow only: it must not import the generated protocol code, grpc
or the worker.
"""

from __future__ import annotations

import difflib

import pyarrow as pa

from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError

__all__ = ["schema_from_ipc_bytes", "schema_ipc_bytes", "to_arrow_type"]

# Friendly aliases, checked before pyarrow's own aliases (so "float" is 64-bit).
_FRIENDLY_ALIASES: dict[str, pa.DataType] = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bytes": pa.binary(),
}

# Common names, used to suggest a fix in error messages; not the full list of valid names.
_COMMON_NAMES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "double",
    "string",
    "utf8",
    "large_string",
    "binary",
    "large_binary",
    "date32",
    "date64",
    "timestamp[s]",
    "timestamp[ms]",
    "timestamp[us]",
    "timestamp[ns]",
    "duration[s]",
    "duration[ms]",
    "duration[us]",
    "duration[ns]",
    *_FRIENDLY_ALIASES,
)

_EXAMPLES = (
    "a pyarrow.DataType such as pa.int64() or pa.list_(pa.string()), or a type name such as "
    "'int64', 'double', 'string', 'bool', 'binary', 'timestamp[ms]' or the aliases "
    "'int', 'float', 'str', 'bytes'"
)


def to_arrow_type(t: pa.DataType | str) -> pa.DataType:
    """Return the Arrow data type that `t` names.

    Parameters
    ----------
    t
        A :class:`pyarrow.DataType`, returned unchanged, or a type name: any name that
        :func:`pyarrow.type_for_alias` accepts, or one of the aliases ``"int"`` (int64),
        ``"float"`` (float64), ``"str"`` (string) and ``"bytes"`` (binary). Types with
        parameters beyond a time unit (decimals, lists, structs, time zones) must be
        given as a :class:`pyarrow.DataType`.

    Returns
    -------
    pyarrow.DataType
        The data type.

    Raises
    ------
    TypeError
        If `t` is neither a :class:`pyarrow.DataType` nor a string.
    ValueError
        If `t` is a string that names no Arrow type.

    Examples
    --------
    >>> import pyarrow as pa
    >>> to_arrow_type("int64")
    DataType(int64)
    >>> to_arrow_type("float")
    DataType(double)
    >>> to_arrow_type("timestamp[ms]")
    TimestampType(timestamp[ms])
    >>> to_arrow_type(pa.list_(pa.string()))
    ListType(list<item: string>)
    """
    if isinstance(t, pa.DataType):
        return t
    if not isinstance(t, str):
        raise ArgumentTypeError(
            f"unsupported Arrow type specification {t!r} (of type {type(t).__name__}); "
            f"expected {_EXAMPLES}"
        )
    name = t.strip()
    friendly = _FRIENDLY_ALIASES.get(name)
    if friendly is not None:
        return friendly
    if name:
        try:
            return pa.type_for_alias(name)
        except (ValueError, KeyError):
            pass
    hint = ""
    close = difflib.get_close_matches(name.lower(), _COMMON_NAMES, n=3)
    if close:
        hint = " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
    raise InvalidArgumentError(f"unknown Arrow type name {t!r}{hint}; expected {_EXAMPLES}")


def schema_ipc_bytes(schema: pa.Schema) -> bytes:
    """Encode `schema` as an Arrow IPC stream with no record batches.

    Parameters
    ----------
    schema
        The schema to encode, metadata included.

    Returns
    -------
    bytes
        The IPC stream: the schema message followed by the end-of-stream marker.

    Raises
    ------
    TypeError
        If `schema` is not a :class:`pyarrow.Schema`.

    See Also
    --------
    schema_from_ipc_bytes : The inverse.

    Examples
    --------
    >>> import pyarrow as pa
    >>> data = schema_ipc_bytes(pa.schema([("x", pa.int64())]))
    >>> schema_from_ipc_bytes(data)
    x: int64
    """
    if not isinstance(schema, pa.Schema):
        raise ArgumentTypeError(
            f"schema_ipc_bytes expects a pyarrow.Schema, got {type(schema).__name__}"
        )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema):
        pass
    return bytes(sink.getvalue())


def schema_from_ipc_bytes(b: bytes | bytearray | memoryview | pa.Buffer) -> pa.Schema:
    """Decode the schema of an Arrow IPC stream, such as :func:`schema_ipc_bytes` writes.

    Parameters
    ----------
    b
        The IPC stream. Record batches after the schema, if any, are not read.

    Returns
    -------
    pyarrow.Schema
        The schema, metadata included.

    Raises
    ------
    TypeError
        If `b` is not bytes-like.
    ValueError
        If `b` does not start with an Arrow IPC schema message.

    Examples
    --------
    >>> import pyarrow as pa
    >>> schema = pa.schema([("name", pa.string())])
    >>> schema_from_ipc_bytes(schema_ipc_bytes(schema)).equals(schema)
    True
    """
    if not isinstance(b, (bytes, bytearray, memoryview, pa.Buffer)):
        raise ArgumentTypeError(
            f"schema_from_ipc_bytes expects bytes holding an Arrow IPC stream, "
            f"got {type(b).__name__}"
        )
    buf = pa.py_buffer(b)
    try:
        with pa.ipc.open_stream(buf) as reader:
            return reader.schema
    except pa.ArrowInvalid as e:
        raise InvalidArgumentError(
            f"not an Arrow IPC stream with a schema ({buf.size} bytes): {e}"
        ) from e


ROW_KIND_COLUMN = "_row_kind"
"""The hidden last column of a changelog's batches: Flink's RowKind bytes (0 +I, 1 -U, 2 +U,
3 -D). Users' functions see it only with ``map_batches(..., row_kinds=True)``."""
