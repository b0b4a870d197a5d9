import pyarrow as pa
import pytest

from flinkgo.types import schema_from_ipc_bytes, schema_ipc_bytes, to_arrow_type


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("int8", pa.int8()),
        ("int32", pa.int32()),
        ("int64", pa.int64()),
        ("uint64", pa.uint64()),
        ("float32", pa.float32()),
        ("float64", pa.float64()),
        ("double", pa.float64()),
        ("bool", pa.bool_()),
        ("string", pa.string()),
        ("utf8", pa.string()),
        ("large_string", pa.large_string()),
        ("binary", pa.binary()),
        ("large_binary", pa.large_binary()),
        ("date32", pa.date32()),
        ("timestamp[ms]", pa.timestamp("ms")),
        ("timestamp[ns]", pa.timestamp("ns")),
        ("duration[s]", pa.duration("s")),
        ("null", pa.null()),
    ],
)
def test_pyarrow_names(name, expected):
    assert to_arrow_type(name) == expected


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("int", pa.int64()),
        ("float", pa.float64()),  # 64-bit as in Python, unlike pyarrow's own "float"
        ("str", pa.string()),
        ("bytes", pa.binary()),
    ],
)
def test_friendly_aliases(alias, expected):
    assert to_arrow_type(alias) == expected


def test_name_surrounding_whitespace_is_ignored():
    assert to_arrow_type("  int64 ") == pa.int64()


@pytest.mark.parametrize(
    "t",
    [
        pa.int64(),
        pa.list_(pa.string()),
        pa.struct([("a", pa.int32()), ("b", pa.string())]),
        pa.decimal128(10, 2),
        pa.timestamp("us", tz="UTC"),
    ],
)
def test_data_types_pass_through(t):
    assert to_arrow_type(t) is t


def test_unknown_name_names_the_value_and_lists_examples():
    with pytest.raises(ValueError) as info:
        to_arrow_type("int46")
    message = str(info.value)
    assert "unknown Arrow type name 'int46'" in message
    assert "did you mean 'int64'" in message
    for example in ("'int64'", "'double'", "'string'", "'timestamp[ms]'", "pa.int64()"):
        assert example in message


def test_unknown_name_without_close_match():
    with pytest.raises(ValueError, match=r"unknown Arrow type name 'qwertyuiop'; expected") as info:
        to_arrow_type("qwertyuiop")
    assert "did you mean" not in str(info.value)


def test_parametrized_names_are_not_supported():
    with pytest.raises(ValueError, match=r"unknown Arrow type name 'decimal128\(10, 2\)'"):
        to_arrow_type("decimal128(10, 2)")


def test_empty_name():
    with pytest.raises(ValueError, match=r"unknown Arrow type name ''"):
        to_arrow_type("")


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(int, "type"), (3, "int"), (None, "NoneType"), (pa.field("x", pa.int64()), "Field")],
)
def test_unsupported_objects(value, type_name):
    with pytest.raises(TypeError) as info:
        to_arrow_type(value)
    message = str(info.value)
    assert f"unsupported Arrow type specification {value!r} (of type {type_name})" in message
    assert "pa.int64()" in message
    assert "'int64'" in message


def test_schema_ipc_round_trip():
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("at", pa.timestamp("ms", tz="UTC")),
        ],
        metadata={"owner": "flinkgo"},
    )
    data = schema_ipc_bytes(schema)
    assert isinstance(data, bytes)
    decoded = schema_from_ipc_bytes(data)
    assert decoded.equals(schema, check_metadata=True)
    assert decoded.field("id").nullable is False


def test_schema_ipc_bytes_is_a_stream_without_batches():
    data = schema_ipc_bytes(pa.schema([("x", pa.int32())]))
    reader = pa.ipc.open_stream(data)
    assert reader.schema == pa.schema([("x", pa.int32())])
    assert list(reader) == []


def test_schema_ipc_empty_schema():
    assert schema_from_ipc_bytes(schema_ipc_bytes(pa.schema([]))) == pa.schema([])


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, pa.py_buffer])
def test_schema_from_ipc_accepts_bytes_like(wrap):
    schema = pa.schema([("x", pa.float64())])
    assert schema_from_ipc_bytes(wrap(schema_ipc_bytes(schema))) == schema


def test_schema_from_ipc_reads_schema_of_stream_with_batches():
    batch = pa.record_batch([pa.array([1, 2])], names=["x"])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    assert schema_from_ipc_bytes(sink.getvalue().to_pybytes()) == batch.schema


def test_schema_ipc_bytes_rejects_non_schema():
    with pytest.raises(TypeError, match="schema_ipc_bytes expects a pyarrow.Schema, got list"):
        schema_ipc_bytes([("x", pa.int64())])


def test_schema_from_ipc_rejects_non_bytes():
    with pytest.raises(TypeError, match="expects bytes holding an Arrow IPC stream, got str"):
        schema_from_ipc_bytes("not bytes")


@pytest.mark.parametrize("data", [b"", b"garbage that is not arrow"])
def test_schema_from_ipc_rejects_garbage(data):
    with pytest.raises(
        ValueError, match=rf"not an Arrow IPC stream with a schema \({len(data)} bytes\)"
    ):
        schema_from_ipc_bytes(data)
