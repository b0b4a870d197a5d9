from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FuncType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FUNC_TYPE_UNSPECIFIED: _ClassVar[FuncType]
    FUNC_TYPE_GENERAL: _ClassVar[FuncType]
    FUNC_TYPE_PANDAS: _ClassVar[FuncType]
    FUNC_TYPE_ARROW: _ClassVar[FuncType]
    FUNC_TYPE_PANDAS_BATCH: _ClassVar[FuncType]
    FUNC_TYPE_PANDAS_AGGREGATE: _ClassVar[FuncType]

class Transport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRANSPORT_GRPC_STREAM: _ClassVar[Transport]
    TRANSPORT_UNIX_SOCKET: _ClassVar[Transport]
    TRANSPORT_SHARED_MEMORY: _ClassVar[Transport]
FUNC_TYPE_UNSPECIFIED: FuncType
FUNC_TYPE_GENERAL: FuncType
FUNC_TYPE_PANDAS: FuncType
FUNC_TYPE_ARROW: FuncType
FUNC_TYPE_PANDAS_BATCH: FuncType
FUNC_TYPE_PANDAS_AGGREGATE: FuncType
TRANSPORT_GRPC_STREAM: Transport
TRANSPORT_UNIX_SOCKET: Transport
TRANSPORT_SHARED_MEMORY: Transport

class UdfSpec(_message.Message):
    __slots__ = ("name", "payload", "func_type", "is_async", "concurrency", "batch_size", "return_schema", "source_file", "source_text", "concurrency_min", "concurrency_max")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    FUNC_TYPE_FIELD_NUMBER: _ClassVar[int]
    IS_ASYNC_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    RETURN_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TEXT_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_MIN_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_MAX_FIELD_NUMBER: _ClassVar[int]
    name: str
    payload: bytes
    func_type: FuncType
    is_async: bool
    concurrency: int
    batch_size: int
    return_schema: bytes
    source_file: str
    source_text: str
    concurrency_min: int
    concurrency_max: int
    def __init__(self, name: _Optional[str] = ..., payload: _Optional[bytes] = ..., func_type: _Optional[_Union[FuncType, str]] = ..., is_async: _Optional[bool] = ..., concurrency: _Optional[int] = ..., batch_size: _Optional[int] = ..., return_schema: _Optional[bytes] = ..., source_file: _Optional[str] = ..., source_text: _Optional[str] = ..., concurrency_min: _Optional[int] = ..., concurrency_max: _Optional[int] = ...) -> None: ...

class UdfCall(_message.Message):
    __slots__ = ("udf", "args", "output")
    UDF_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    udf: UdfSpec
    args: _containers.RepeatedScalarFieldContainer[str]
    output: str
    def __init__(self, udf: _Optional[_Union[UdfSpec, _Mapping]] = ..., args: _Optional[_Iterable[str]] = ..., output: _Optional[str] = ...) -> None: ...

class OpenRequest(_message.Message):
    __slots__ = ("calls", "input_schema", "output_schema", "max_message_bytes", "async_timeout_seconds", "operator_name", "subtask", "transport", "shared_slot_bytes", "shared_slots")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ASYNC_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    SHARED_SLOT_BYTES_FIELD_NUMBER: _ClassVar[int]
    SHARED_SLOTS_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[UdfCall]
    input_schema: bytes
    output_schema: bytes
    max_message_bytes: int
    async_timeout_seconds: float
    operator_name: str
    subtask: int
    transport: Transport
    shared_slot_bytes: int
    shared_slots: int
    def __init__(self, calls: _Optional[_Iterable[_Union[UdfCall, _Mapping]]] = ..., input_schema: _Optional[bytes] = ..., output_schema: _Optional[bytes] = ..., max_message_bytes: _Optional[int] = ..., async_timeout_seconds: _Optional[float] = ..., operator_name: _Optional[str] = ..., subtask: _Optional[int] = ..., transport: _Optional[_Union[Transport, str]] = ..., shared_slot_bytes: _Optional[int] = ..., shared_slots: _Optional[int] = ...) -> None: ...

class OpenResponse(_message.Message):
    __slots__ = ("pid", "python_version", "pyarrow_version", "error", "data_socket")
    PID_FIELD_NUMBER: _ClassVar[int]
    PYTHON_VERSION_FIELD_NUMBER: _ClassVar[int]
    PYARROW_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DATA_SOCKET_FIELD_NUMBER: _ClassVar[int]
    pid: int
    python_version: str
    pyarrow_version: str
    error: UdfError
    data_socket: str
    def __init__(self, pid: _Optional[int] = ..., python_version: _Optional[str] = ..., pyarrow_version: _Optional[str] = ..., error: _Optional[_Union[UdfError, _Mapping]] = ..., data_socket: _Optional[str] = ...) -> None: ...

class ProcessRequest(_message.Message):
    __slots__ = ("batch", "end_bundle")
    BATCH_FIELD_NUMBER: _ClassVar[int]
    END_BUNDLE_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    end_bundle: EndBundle
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ..., end_bundle: _Optional[_Union[EndBundle, _Mapping]] = ...) -> None: ...

class Batch(_message.Message):
    __slots__ = ("seq", "arrow_ipc", "slot", "shared_length", "schema_omitted")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    SHARED_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_OMITTED_FIELD_NUMBER: _ClassVar[int]
    seq: int
    arrow_ipc: bytes
    slot: int
    shared_length: int
    schema_omitted: bool
    def __init__(self, seq: _Optional[int] = ..., arrow_ipc: _Optional[bytes] = ..., slot: _Optional[int] = ..., shared_length: _Optional[int] = ..., schema_omitted: _Optional[bool] = ...) -> None: ...

class EndBundle(_message.Message):
    __slots__ = ("bundle_id",)
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    bundle_id: int
    def __init__(self, bundle_id: _Optional[int] = ...) -> None: ...

class ProcessResponse(_message.Message):
    __slots__ = ("result", "bundle_done", "error")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_DONE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    result: BatchResult
    bundle_done: BundleDone
    error: UdfError
    def __init__(self, result: _Optional[_Union[BatchResult, _Mapping]] = ..., bundle_done: _Optional[_Union[BundleDone, _Mapping]] = ..., error: _Optional[_Union[UdfError, _Mapping]] = ...) -> None: ...

class BatchResult(_message.Message):
    __slots__ = ("seq", "arrow_ipc", "shared_length", "input_retained")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    SHARED_LENGTH_FIELD_NUMBER: _ClassVar[int]
    INPUT_RETAINED_FIELD_NUMBER: _ClassVar[int]
    seq: int
    arrow_ipc: bytes
    shared_length: int
    input_retained: bool
    def __init__(self, seq: _Optional[int] = ..., arrow_ipc: _Optional[bytes] = ..., shared_length: _Optional[int] = ..., input_retained: _Optional[bool] = ...) -> None: ...

class BundleDone(_message.Message):
    __slots__ = ("bundle_id",)
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    bundle_id: int
    def __init__(self, bundle_id: _Optional[int] = ...) -> None: ...

class UdfError(_message.Message):
    __slots__ = ("seq", "udf_name", "exception_type", "message", "traceback")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    UDF_NAME_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    seq: int
    udf_name: str
    exception_type: str
    message: str
    traceback: str
    def __init__(self, seq: _Optional[int] = ..., udf_name: _Optional[str] = ..., exception_type: _Optional[str] = ..., message: _Optional[str] = ..., traceback: _Optional[str] = ...) -> None: ...

class CloseRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CloseResponse(_message.Message):
    __slots__ = ("error",)
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: UdfError
    def __init__(self, error: _Optional[_Union[UdfError, _Mapping]] = ...) -> None: ...
