from . import worker_pb2 as _worker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobPlan(_message.Message):
    __slots__ = ("name", "default_parallelism", "config", "nodes")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    name: str
    default_parallelism: int
    config: _containers.ScalarMap[str, str]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    def __init__(self, name: _Optional[str] = ..., default_parallelism: _Optional[int] = ..., config: _Optional[_Mapping[str, str]] = ..., nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("id", "uid", "name", "parallelism", "inputs", "output_schema", "source", "select", "filter", "map_batches", "keyed_aggregate", "union", "sink", "drop_duplicates", "limit", "watermark_assigner", "window_aggregate", "interval_join", "join")
    ID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SELECT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    MAP_BATCHES_FIELD_NUMBER: _ClassVar[int]
    KEYED_AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    UNION_FIELD_NUMBER: _ClassVar[int]
    SINK_FIELD_NUMBER: _ClassVar[int]
    DROP_DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_ASSIGNER_FIELD_NUMBER: _ClassVar[int]
    WINDOW_AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_JOIN_FIELD_NUMBER: _ClassVar[int]
    JOIN_FIELD_NUMBER: _ClassVar[int]
    id: int
    uid: str
    name: str
    parallelism: int
    inputs: _containers.RepeatedCompositeFieldContainer[Input]
    output_schema: bytes
    source: Source
    select: Select
    filter: Filter
    map_batches: MapBatches
    keyed_aggregate: KeyedAggregate
    union: Union
    sink: Sink
    drop_duplicates: DropDuplicates
    limit: Limit
    watermark_assigner: WatermarkAssigner
    window_aggregate: WindowAggregate
    interval_join: IntervalJoin
    join: Join
    def __init__(self, id: _Optional[int] = ..., uid: _Optional[str] = ..., name: _Optional[str] = ..., parallelism: _Optional[int] = ..., inputs: _Optional[_Iterable[_Union[Input, _Mapping]]] = ..., output_schema: _Optional[bytes] = ..., source: _Optional[_Union[Source, _Mapping]] = ..., select: _Optional[_Union[Select, _Mapping]] = ..., filter: _Optional[_Union[Filter, _Mapping]] = ..., map_batches: _Optional[_Union[MapBatches, _Mapping]] = ..., keyed_aggregate: _Optional[_Union[KeyedAggregate, _Mapping]] = ..., union: _Optional[_Union[Union, _Mapping]] = ..., sink: _Optional[_Union[Sink, _Mapping]] = ..., drop_duplicates: _Optional[_Union[DropDuplicates, _Mapping]] = ..., limit: _Optional[_Union[Limit, _Mapping]] = ..., watermark_assigner: _Optional[_Union[WatermarkAssigner, _Mapping]] = ..., window_aggregate: _Optional[_Union[WindowAggregate, _Mapping]] = ..., interval_join: _Optional[_Union[IntervalJoin, _Mapping]] = ..., join: _Optional[_Union[Join, _Mapping]] = ...) -> None: ...

class Input(_message.Message):
    __slots__ = ("node", "partitioning", "output")
    class Output(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MAIN: _ClassVar[Input.Output]
        LATE_ROWS: _ClassVar[Input.Output]
        LATE_ROWS_RIGHT: _ClassVar[Input.Output]
    MAIN: Input.Output
    LATE_ROWS: Input.Output
    LATE_ROWS_RIGHT: Input.Output
    NODE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONING_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    node: int
    partitioning: Partitioning
    output: Input.Output
    def __init__(self, node: _Optional[int] = ..., partitioning: _Optional[_Union[Partitioning, _Mapping]] = ..., output: _Optional[_Union[Input.Output, str]] = ...) -> None: ...

class Partitioning(_message.Message):
    __slots__ = ("kind", "keys")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FORWARD_IMPLICIT: _ClassVar[Partitioning.Kind]
        FORWARD: _ClassVar[Partitioning.Kind]
        REBALANCE: _ClassVar[Partitioning.Kind]
        RESCALE: _ClassVar[Partitioning.Kind]
        SHUFFLE: _ClassVar[Partitioning.Kind]
        BROADCAST: _ClassVar[Partitioning.Kind]
        GLOBAL: _ClassVar[Partitioning.Kind]
        HASH: _ClassVar[Partitioning.Kind]
    FORWARD_IMPLICIT: Partitioning.Kind
    FORWARD: Partitioning.Kind
    REBALANCE: Partitioning.Kind
    RESCALE: Partitioning.Kind
    SHUFFLE: Partitioning.Kind
    BROADCAST: Partitioning.Kind
    GLOBAL: Partitioning.Kind
    HASH: Partitioning.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    kind: Partitioning.Kind
    keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[_Union[Partitioning.Kind, str]] = ..., keys: _Optional[_Iterable[str]] = ...) -> None: ...

class Expr(_message.Message):
    __slots__ = ("column", "literal", "call", "udf")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    LITERAL_FIELD_NUMBER: _ClassVar[int]
    CALL_FIELD_NUMBER: _ClassVar[int]
    UDF_FIELD_NUMBER: _ClassVar[int]
    column: str
    literal: Literal
    call: Call
    udf: UdfExpr
    def __init__(self, column: _Optional[str] = ..., literal: _Optional[_Union[Literal, _Mapping]] = ..., call: _Optional[_Union[Call, _Mapping]] = ..., udf: _Optional[_Union[UdfExpr, _Mapping]] = ...) -> None: ...

class Literal(_message.Message):
    __slots__ = ("null", "bool_value", "int_value", "float_value", "string_value", "type")
    NULL_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    null: bool
    bool_value: bool
    int_value: int
    float_value: float
    string_value: str
    type: str
    def __init__(self, null: _Optional[bool] = ..., bool_value: _Optional[bool] = ..., int_value: _Optional[int] = ..., float_value: _Optional[float] = ..., string_value: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ("function", "args", "cast_to")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    CAST_TO_FIELD_NUMBER: _ClassVar[int]
    function: str
    args: _containers.RepeatedCompositeFieldContainer[Expr]
    cast_to: str
    def __init__(self, function: _Optional[str] = ..., args: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ..., cast_to: _Optional[str] = ...) -> None: ...

class UdfExpr(_message.Message):
    __slots__ = ("udf", "args")
    UDF_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    udf: _worker_pb2.UdfSpec
    args: _containers.RepeatedCompositeFieldContainer[Expr]
    def __init__(self, udf: _Optional[_Union[_worker_pb2.UdfSpec, _Mapping]] = ..., args: _Optional[_Iterable[_Union[Expr, _Mapping]]] = ...) -> None: ...

class NamedExpr(_message.Message):
    __slots__ = ("name", "expr")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPR_FIELD_NUMBER: _ClassVar[int]
    name: str
    expr: Expr
    def __init__(self, name: _Optional[str] = ..., expr: _Optional[_Union[Expr, _Mapping]] = ...) -> None: ...

class Source(_message.Message):
    __slots__ = ("arrow", "file", "datagen", "kafka", "nexmark", "connector")
    ARROW_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    DATAGEN_FIELD_NUMBER: _ClassVar[int]
    KAFKA_FIELD_NUMBER: _ClassVar[int]
    NEXMARK_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    arrow: ArrowSource
    file: FileSource
    datagen: DatagenSource
    kafka: KafkaSource
    nexmark: NexmarkSource
    connector: ConnectorSource
    def __init__(self, arrow: _Optional[_Union[ArrowSource, _Mapping]] = ..., file: _Optional[_Union[FileSource, _Mapping]] = ..., datagen: _Optional[_Union[DatagenSource, _Mapping]] = ..., kafka: _Optional[_Union[KafkaSource, _Mapping]] = ..., nexmark: _Optional[_Union[NexmarkSource, _Mapping]] = ..., connector: _Optional[_Union[ConnectorSource, _Mapping]] = ...) -> None: ...

class ConnectorSource(_message.Message):
    __slots__ = ("kind", "config")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    kind: str
    config: bytes
    def __init__(self, kind: _Optional[str] = ..., config: _Optional[bytes] = ...) -> None: ...

class ArrowSource(_message.Message):
    __slots__ = ("ipc",)
    IPC_FIELD_NUMBER: _ClassVar[int]
    ipc: bytes
    def __init__(self, ipc: _Optional[bytes] = ...) -> None: ...

class FileSource(_message.Message):
    __slots__ = ("format", "paths", "csv_has_header", "csv_delimiter")
    class Format(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FORMAT_UNSPECIFIED: _ClassVar[FileSource.Format]
        CSV: _ClassVar[FileSource.Format]
        JSONL: _ClassVar[FileSource.Format]
        PARQUET: _ClassVar[FileSource.Format]
    FORMAT_UNSPECIFIED: FileSource.Format
    CSV: FileSource.Format
    JSONL: FileSource.Format
    PARQUET: FileSource.Format
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    CSV_HAS_HEADER_FIELD_NUMBER: _ClassVar[int]
    CSV_DELIMITER_FIELD_NUMBER: _ClassVar[int]
    format: FileSource.Format
    paths: _containers.RepeatedScalarFieldContainer[str]
    csv_has_header: bool
    csv_delimiter: str
    def __init__(self, format: _Optional[_Union[FileSource.Format, str]] = ..., paths: _Optional[_Iterable[str]] = ..., csv_has_header: _Optional[bool] = ..., csv_delimiter: _Optional[str] = ...) -> None: ...

class DatagenSource(_message.Message):
    __slots__ = ("rows", "rows_per_second", "seed")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    ROWS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    rows: int
    rows_per_second: float
    seed: int
    def __init__(self, rows: _Optional[int] = ..., rows_per_second: _Optional[float] = ..., seed: _Optional[int] = ...) -> None: ...

class NexmarkSource(_message.Message):
    __slots__ = ("kind", "events", "events_per_second", "seed")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[NexmarkSource.Kind]
        PERSON: _ClassVar[NexmarkSource.Kind]
        AUCTION: _ClassVar[NexmarkSource.Kind]
        BID: _ClassVar[NexmarkSource.Kind]
    KIND_UNSPECIFIED: NexmarkSource.Kind
    PERSON: NexmarkSource.Kind
    AUCTION: NexmarkSource.Kind
    BID: NexmarkSource.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    kind: NexmarkSource.Kind
    events: int
    events_per_second: float
    seed: int
    def __init__(self, kind: _Optional[_Union[NexmarkSource.Kind, str]] = ..., events: _Optional[int] = ..., events_per_second: _Optional[float] = ..., seed: _Optional[int] = ...) -> None: ...

class KafkaSource(_message.Message):
    __slots__ = ("topics", "topic_pattern", "bootstrap_servers", "group_id", "start", "start_timestamp_ms", "start_offsets", "bounded_latest", "value_format", "key_column", "timestamp_column", "partition_column", "offset_column", "topic_column", "properties")
    class Start(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        START_UNSPECIFIED: _ClassVar[KafkaSource.Start]
        EARLIEST: _ClassVar[KafkaSource.Start]
        LATEST: _ClassVar[KafkaSource.Start]
        TIMESTAMP: _ClassVar[KafkaSource.Start]
        OFFSETS: _ClassVar[KafkaSource.Start]
    START_UNSPECIFIED: KafkaSource.Start
    EARLIEST: KafkaSource.Start
    LATEST: KafkaSource.Start
    TIMESTAMP: KafkaSource.Start
    OFFSETS: KafkaSource.Start
    class Format(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FORMAT_UNSPECIFIED: _ClassVar[KafkaSource.Format]
        JSON: _ClassVar[KafkaSource.Format]
        RAW: _ClassVar[KafkaSource.Format]
        CSV: _ClassVar[KafkaSource.Format]
    FORMAT_UNSPECIFIED: KafkaSource.Format
    JSON: KafkaSource.Format
    RAW: KafkaSource.Format
    CSV: KafkaSource.Format
    class PartitionOffset(_message.Message):
        __slots__ = ("topic", "partition", "offset")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partition: int
        offset: int
        def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_PATTERN_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    START_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    START_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    BOUNDED_LATEST_FIELD_NUMBER: _ClassVar[int]
    VALUE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    KEY_COLUMN_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_COLUMN_FIELD_NUMBER: _ClassVar[int]
    PARTITION_COLUMN_FIELD_NUMBER: _ClassVar[int]
    OFFSET_COLUMN_FIELD_NUMBER: _ClassVar[int]
    TOPIC_COLUMN_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    topic_pattern: str
    bootstrap_servers: str
    group_id: str
    start: KafkaSource.Start
    start_timestamp_ms: int
    start_offsets: _containers.RepeatedCompositeFieldContainer[KafkaSource.PartitionOffset]
    bounded_latest: bool
    value_format: KafkaSource.Format
    key_column: str
    timestamp_column: str
    partition_column: str
    offset_column: str
    topic_column: str
    properties: _containers.ScalarMap[str, str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ..., topic_pattern: _Optional[str] = ..., bootstrap_servers: _Optional[str] = ..., group_id: _Optional[str] = ..., start: _Optional[_Union[KafkaSource.Start, str]] = ..., start_timestamp_ms: _Optional[int] = ..., start_offsets: _Optional[_Iterable[_Union[KafkaSource.PartitionOffset, _Mapping]]] = ..., bounded_latest: _Optional[bool] = ..., value_format: _Optional[_Union[KafkaSource.Format, str]] = ..., key_column: _Optional[str] = ..., timestamp_column: _Optional[str] = ..., partition_column: _Optional[str] = ..., offset_column: _Optional[str] = ..., topic_column: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Select(_message.Message):
    __slots__ = ("columns",)
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedCompositeFieldContainer[NamedExpr]
    def __init__(self, columns: _Optional[_Iterable[_Union[NamedExpr, _Mapping]]] = ...) -> None: ...

class Filter(_message.Message):
    __slots__ = ("predicate",)
    PREDICATE_FIELD_NUMBER: _ClassVar[int]
    predicate: Expr
    def __init__(self, predicate: _Optional[_Union[Expr, _Mapping]] = ...) -> None: ...

class MapBatches(_message.Message):
    __slots__ = ("function", "handles_row_kinds")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    HANDLES_ROW_KINDS_FIELD_NUMBER: _ClassVar[int]
    function: _worker_pb2.UdfSpec
    handles_row_kinds: bool
    def __init__(self, function: _Optional[_Union[_worker_pb2.UdfSpec, _Mapping]] = ..., handles_row_kinds: _Optional[bool] = ...) -> None: ...

class KeyedAggregate(_message.Message):
    __slots__ = ("keys", "aggregates", "emit", "state_ttl_ms")
    class Emit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        EMIT_AUTO: _ClassVar[KeyedAggregate.Emit]
        EMIT_FINAL: _ClassVar[KeyedAggregate.Emit]
        EMIT_UPDATES: _ClassVar[KeyedAggregate.Emit]
    EMIT_AUTO: KeyedAggregate.Emit
    EMIT_FINAL: KeyedAggregate.Emit
    EMIT_UPDATES: KeyedAggregate.Emit
    KEYS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATES_FIELD_NUMBER: _ClassVar[int]
    EMIT_FIELD_NUMBER: _ClassVar[int]
    STATE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[str]
    aggregates: _containers.RepeatedCompositeFieldContainer[Aggregate]
    emit: KeyedAggregate.Emit
    state_ttl_ms: int
    def __init__(self, keys: _Optional[_Iterable[str]] = ..., aggregates: _Optional[_Iterable[_Union[Aggregate, _Mapping]]] = ..., emit: _Optional[_Union[KeyedAggregate.Emit, str]] = ..., state_ttl_ms: _Optional[int] = ...) -> None: ...

class IntervalJoin(_message.Message):
    __slots__ = ("left_keys", "right_keys", "left_time", "right_time", "lower_ns", "upper_ns", "how", "late_rows")
    class How(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        INNER: _ClassVar[IntervalJoin.How]
        LEFT: _ClassVar[IntervalJoin.How]
        RIGHT: _ClassVar[IntervalJoin.How]
        FULL: _ClassVar[IntervalJoin.How]
    INNER: IntervalJoin.How
    LEFT: IntervalJoin.How
    RIGHT: IntervalJoin.How
    FULL: IntervalJoin.How
    LEFT_KEYS_FIELD_NUMBER: _ClassVar[int]
    RIGHT_KEYS_FIELD_NUMBER: _ClassVar[int]
    LEFT_TIME_FIELD_NUMBER: _ClassVar[int]
    RIGHT_TIME_FIELD_NUMBER: _ClassVar[int]
    LOWER_NS_FIELD_NUMBER: _ClassVar[int]
    UPPER_NS_FIELD_NUMBER: _ClassVar[int]
    HOW_FIELD_NUMBER: _ClassVar[int]
    LATE_ROWS_FIELD_NUMBER: _ClassVar[int]
    left_keys: _containers.RepeatedScalarFieldContainer[str]
    right_keys: _containers.RepeatedScalarFieldContainer[str]
    left_time: str
    right_time: str
    lower_ns: int
    upper_ns: int
    how: IntervalJoin.How
    late_rows: WindowAggregate.LateRows
    def __init__(self, left_keys: _Optional[_Iterable[str]] = ..., right_keys: _Optional[_Iterable[str]] = ..., left_time: _Optional[str] = ..., right_time: _Optional[str] = ..., lower_ns: _Optional[int] = ..., upper_ns: _Optional[int] = ..., how: _Optional[_Union[IntervalJoin.How, str]] = ..., late_rows: _Optional[_Union[WindowAggregate.LateRows, str]] = ...) -> None: ...

class Join(_message.Message):
    __slots__ = ("left_keys", "right_keys", "how", "suffix", "nulls_equal", "state_ttl_ms", "left_unique_key", "right_unique_key")
    class How(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        INNER: _ClassVar[Join.How]
        LEFT: _ClassVar[Join.How]
        RIGHT: _ClassVar[Join.How]
        FULL: _ClassVar[Join.How]
    INNER: Join.How
    LEFT: Join.How
    RIGHT: Join.How
    FULL: Join.How
    LEFT_KEYS_FIELD_NUMBER: _ClassVar[int]
    RIGHT_KEYS_FIELD_NUMBER: _ClassVar[int]
    HOW_FIELD_NUMBER: _ClassVar[int]
    SUFFIX_FIELD_NUMBER: _ClassVar[int]
    NULLS_EQUAL_FIELD_NUMBER: _ClassVar[int]
    STATE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    LEFT_UNIQUE_KEY_FIELD_NUMBER: _ClassVar[int]
    RIGHT_UNIQUE_KEY_FIELD_NUMBER: _ClassVar[int]
    left_keys: _containers.RepeatedScalarFieldContainer[str]
    right_keys: _containers.RepeatedScalarFieldContainer[str]
    how: Join.How
    suffix: str
    nulls_equal: bool
    state_ttl_ms: int
    left_unique_key: _containers.RepeatedScalarFieldContainer[str]
    right_unique_key: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, left_keys: _Optional[_Iterable[str]] = ..., right_keys: _Optional[_Iterable[str]] = ..., how: _Optional[_Union[Join.How, str]] = ..., suffix: _Optional[str] = ..., nulls_equal: _Optional[bool] = ..., state_ttl_ms: _Optional[int] = ..., left_unique_key: _Optional[_Iterable[str]] = ..., right_unique_key: _Optional[_Iterable[str]] = ...) -> None: ...

class DropDuplicates(_message.Message):
    __slots__ = ("subset",)
    SUBSET_FIELD_NUMBER: _ClassVar[int]
    subset: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, subset: _Optional[_Iterable[str]] = ...) -> None: ...

class WatermarkAssigner(_message.Message):
    __slots__ = ("time_column", "max_out_of_orderness_ms", "idle_timeout_ms", "time_extractor")
    TIME_COLUMN_FIELD_NUMBER: _ClassVar[int]
    MAX_OUT_OF_ORDERNESS_MS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_EXTRACTOR_FIELD_NUMBER: _ClassVar[int]
    time_column: str
    max_out_of_orderness_ms: int
    idle_timeout_ms: int
    time_extractor: Select
    def __init__(self, time_column: _Optional[str] = ..., max_out_of_orderness_ms: _Optional[int] = ..., idle_timeout_ms: _Optional[int] = ..., time_extractor: _Optional[_Union[Select, _Mapping]] = ...) -> None: ...

class Limit(_message.Message):
    __slots__ = ("n",)
    N_FIELD_NUMBER: _ClassVar[int]
    n: int
    def __init__(self, n: _Optional[int] = ...) -> None: ...

class WindowAggregate(_message.Message):
    __slots__ = ("time_column", "kind", "size_ms", "slide_ms", "step_ms", "gap_ms", "offset_ms", "keys", "aggregates", "allowed_lateness_ms", "late_rows")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[WindowAggregate.Kind]
        TUMBLE: _ClassVar[WindowAggregate.Kind]
        HOP: _ClassVar[WindowAggregate.Kind]
        CUMULATE: _ClassVar[WindowAggregate.Kind]
        SESSION: _ClassVar[WindowAggregate.Kind]
    KIND_UNSPECIFIED: WindowAggregate.Kind
    TUMBLE: WindowAggregate.Kind
    HOP: WindowAggregate.Kind
    CUMULATE: WindowAggregate.Kind
    SESSION: WindowAggregate.Kind
    class LateRows(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DROP: _ClassVar[WindowAggregate.LateRows]
        KEEP: _ClassVar[WindowAggregate.LateRows]
    DROP: WindowAggregate.LateRows
    KEEP: WindowAggregate.LateRows
    TIME_COLUMN_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SIZE_MS_FIELD_NUMBER: _ClassVar[int]
    SLIDE_MS_FIELD_NUMBER: _ClassVar[int]
    STEP_MS_FIELD_NUMBER: _ClassVar[int]
    GAP_MS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATES_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_LATENESS_MS_FIELD_NUMBER: _ClassVar[int]
    LATE_ROWS_FIELD_NUMBER: _ClassVar[int]
    time_column: str
    kind: WindowAggregate.Kind
    size_ms: int
    slide_ms: int
    step_ms: int
    gap_ms: int
    offset_ms: int
    keys: _containers.RepeatedScalarFieldContainer[str]
    aggregates: _containers.RepeatedCompositeFieldContainer[Aggregate]
    allowed_lateness_ms: int
    late_rows: WindowAggregate.LateRows
    def __init__(self, time_column: _Optional[str] = ..., kind: _Optional[_Union[WindowAggregate.Kind, str]] = ..., size_ms: _Optional[int] = ..., slide_ms: _Optional[int] = ..., step_ms: _Optional[int] = ..., gap_ms: _Optional[int] = ..., offset_ms: _Optional[int] = ..., keys: _Optional[_Iterable[str]] = ..., aggregates: _Optional[_Iterable[_Union[Aggregate, _Mapping]]] = ..., allowed_lateness_ms: _Optional[int] = ..., late_rows: _Optional[_Union[WindowAggregate.LateRows, str]] = ...) -> None: ...

class Aggregate(_message.Message):
    __slots__ = ("function", "column", "name", "udf", "args")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UDF_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    function: str
    column: str
    name: str
    udf: _worker_pb2.UdfSpec
    args: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, function: _Optional[str] = ..., column: _Optional[str] = ..., name: _Optional[str] = ..., udf: _Optional[_Union[_worker_pb2.UdfSpec, _Mapping]] = ..., args: _Optional[_Iterable[str]] = ...) -> None: ...

class Union(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Sink(_message.Message):
    __slots__ = ("print", "file", "collect", "kafka", "connector")
    PRINT_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    COLLECT_FIELD_NUMBER: _ClassVar[int]
    KAFKA_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    print: PrintSink
    file: FileSink
    collect: CollectSink
    kafka: KafkaSink
    connector: ConnectorSink
    def __init__(self, print: _Optional[_Union[PrintSink, _Mapping]] = ..., file: _Optional[_Union[FileSink, _Mapping]] = ..., collect: _Optional[_Union[CollectSink, _Mapping]] = ..., kafka: _Optional[_Union[KafkaSink, _Mapping]] = ..., connector: _Optional[_Union[ConnectorSink, _Mapping]] = ...) -> None: ...

class ConnectorSink(_message.Message):
    __slots__ = ("kind", "config")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    kind: str
    config: bytes
    def __init__(self, kind: _Optional[str] = ..., config: _Optional[bytes] = ...) -> None: ...

class PrintSink(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FileSink(_message.Message):
    __slots__ = ("format", "path", "mode", "changelog")
    class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ERROR: _ClassVar[FileSink.Mode]
        OVERWRITE: _ClassVar[FileSink.Mode]
        APPEND: _ClassVar[FileSink.Mode]
    ERROR: FileSink.Mode
    OVERWRITE: FileSink.Mode
    APPEND: FileSink.Mode
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    CHANGELOG_FIELD_NUMBER: _ClassVar[int]
    format: FileSource.Format
    path: str
    mode: FileSink.Mode
    changelog: bool
    def __init__(self, format: _Optional[_Union[FileSource.Format, str]] = ..., path: _Optional[str] = ..., mode: _Optional[_Union[FileSink.Mode, str]] = ..., changelog: _Optional[bool] = ...) -> None: ...

class CollectSink(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class KafkaSink(_message.Message):
    __slots__ = ("topic", "bootstrap_servers", "key_column", "value_format", "delivery", "transactional_id_prefix", "properties")
    class Delivery(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DELIVERY_UNSPECIFIED: _ClassVar[KafkaSink.Delivery]
        EXACTLY_ONCE: _ClassVar[KafkaSink.Delivery]
        AT_LEAST_ONCE: _ClassVar[KafkaSink.Delivery]
        NONE: _ClassVar[KafkaSink.Delivery]
    DELIVERY_UNSPECIFIED: KafkaSink.Delivery
    EXACTLY_ONCE: KafkaSink.Delivery
    AT_LEAST_ONCE: KafkaSink.Delivery
    NONE: KafkaSink.Delivery
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    KEY_COLUMN_FIELD_NUMBER: _ClassVar[int]
    VALUE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONAL_ID_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    topic: str
    bootstrap_servers: str
    key_column: str
    value_format: KafkaSource.Format
    delivery: KafkaSink.Delivery
    transactional_id_prefix: str
    properties: _containers.ScalarMap[str, str]
    def __init__(self, topic: _Optional[str] = ..., bootstrap_servers: _Optional[str] = ..., key_column: _Optional[str] = ..., value_format: _Optional[_Union[KafkaSource.Format, str]] = ..., delivery: _Optional[_Union[KafkaSink.Delivery, str]] = ..., transactional_id_prefix: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...
