from . import plan_pb2 as _plan_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    JOB_STATE_CREATED: _ClassVar[JobState]
    JOB_STATE_RUNNING: _ClassVar[JobState]
    JOB_STATE_CANCELING: _ClassVar[JobState]
    JOB_STATE_CANCELED: _ClassVar[JobState]
    JOB_STATE_FAILING: _ClassVar[JobState]
    JOB_STATE_FAILED: _ClassVar[JobState]
    JOB_STATE_FINISHED: _ClassVar[JobState]
    JOB_STATE_RESTARTING: _ClassVar[JobState]
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_CREATED: JobState
JOB_STATE_RUNNING: JobState
JOB_STATE_CANCELING: JobState
JOB_STATE_CANCELED: JobState
JOB_STATE_FAILING: JobState
JOB_STATE_FAILED: JobState
JOB_STATE_FINISHED: JobState
JOB_STATE_RESTARTING: JobState

class RescaleRequest(_message.Message):
    __slots__ = ("job_id", "parallelism")
    class ParallelismEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    parallelism: _containers.ScalarMap[str, int]
    def __init__(self, job_id: _Optional[str] = ..., parallelism: _Optional[_Mapping[str, int]] = ...) -> None: ...

class RescaleHistoryRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class RescaleResponse(_message.Message):
    __slots__ = ("rescale", "history", "parallelism")
    class ParallelismEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    RESCALE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    rescale: RescaleInfo
    history: _containers.RepeatedCompositeFieldContainer[RescaleInfo]
    parallelism: _containers.ScalarMap[str, int]
    def __init__(self, rescale: _Optional[_Union[RescaleInfo, _Mapping]] = ..., history: _Optional[_Iterable[_Union[RescaleInfo, _Mapping]]] = ..., parallelism: _Optional[_Mapping[str, int]] = ...) -> None: ...

class RescaleInfo(_message.Message):
    __slots__ = ("id", "trigger_cause", "trigger", "status", "reason", "checkpoint_id", "vertices", "requested_at_ms", "started_at_ms", "ended_at_ms", "duration_seconds", "mode", "mode_note")
    ID_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_CAUSE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MODE_NOTE_FIELD_NUMBER: _ClassVar[int]
    id: str
    trigger_cause: str
    trigger: str
    status: str
    reason: str
    checkpoint_id: int
    vertices: _containers.RepeatedCompositeFieldContainer[RescaleVertex]
    requested_at_ms: int
    started_at_ms: int
    ended_at_ms: int
    duration_seconds: float
    mode: str
    mode_note: str
    def __init__(self, id: _Optional[str] = ..., trigger_cause: _Optional[str] = ..., trigger: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., vertices: _Optional[_Iterable[_Union[RescaleVertex, _Mapping]]] = ..., requested_at_ms: _Optional[int] = ..., started_at_ms: _Optional[int] = ..., ended_at_ms: _Optional[int] = ..., duration_seconds: _Optional[float] = ..., mode: _Optional[str] = ..., mode_note: _Optional[str] = ...) -> None: ...

class RescaleVertex(_message.Message):
    __slots__ = ("uid", "name", "before", "after", "workers_before", "workers_after")
    UID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    WORKERS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_AFTER_FIELD_NUMBER: _ClassVar[int]
    uid: str
    name: str
    before: int
    after: int
    workers_before: int
    workers_after: int
    def __init__(self, uid: _Optional[str] = ..., name: _Optional[str] = ..., before: _Optional[int] = ..., after: _Optional[int] = ..., workers_before: _Optional[int] = ..., workers_after: _Optional[int] = ...) -> None: ...

class SavepointRequest(_message.Message):
    __slots__ = ("job_id", "directory", "stop")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    directory: str
    stop: bool
    def __init__(self, job_id: _Optional[str] = ..., directory: _Optional[str] = ..., stop: _Optional[bool] = ...) -> None: ...

class SavepointResponse(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("include_ended",)
    INCLUDE_ENDED_FIELD_NUMBER: _ClassVar[int]
    include_ended: bool
    def __init__(self, include_ended: _Optional[bool] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[JobSummary]
    def __init__(self, jobs: _Optional[_Iterable[_Union[JobSummary, _Mapping]]] = ...) -> None: ...

class JobSummary(_message.Message):
    __slots__ = ("job_id", "name", "state", "elapsed_seconds")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    state: JobState
    elapsed_seconds: float
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., elapsed_seconds: _Optional[float] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("plan", "progress_interval_ms", "detached")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    plan: _plan_pb2.JobPlan
    progress_interval_ms: int
    detached: bool
    def __init__(self, plan: _Optional[_Union[_plan_pb2.JobPlan, _Mapping]] = ..., progress_interval_ms: _Optional[int] = ..., detached: _Optional[bool] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ("started", "progress", "collected", "finished", "state_changed")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    COLLECTED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    STATE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    started: JobStarted
    progress: Progress
    collected: CollectedBatch
    finished: JobFinished
    state_changed: StateChanged
    def __init__(self, started: _Optional[_Union[JobStarted, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., collected: _Optional[_Union[CollectedBatch, _Mapping]] = ..., finished: _Optional[_Union[JobFinished, _Mapping]] = ..., state_changed: _Optional[_Union[StateChanged, _Mapping]] = ...) -> None: ...

class StateChanged(_message.Message):
    __slots__ = ("state", "elapsed_seconds")
    STATE_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    state: JobState
    elapsed_seconds: float
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., elapsed_seconds: _Optional[float] = ...) -> None: ...

class JobStarted(_message.Message):
    __slots__ = ("job_id", "explain", "warnings")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    explain: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_id: _Optional[str] = ..., explain: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class OperatorProgress(_message.Message):
    __slots__ = ("name", "uid", "parallelism", "rows_in", "rows_out", "late_records_dropped", "vertex_id", "subtasks")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    ROWS_IN_FIELD_NUMBER: _ClassVar[int]
    ROWS_OUT_FIELD_NUMBER: _ClassVar[int]
    LATE_RECORDS_DROPPED_FIELD_NUMBER: _ClassVar[int]
    VERTEX_ID_FIELD_NUMBER: _ClassVar[int]
    SUBTASKS_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    parallelism: int
    rows_in: int
    rows_out: int
    late_records_dropped: int
    vertex_id: str
    subtasks: _containers.RepeatedCompositeFieldContainer[SubtaskMetrics]
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., parallelism: _Optional[int] = ..., rows_in: _Optional[int] = ..., rows_out: _Optional[int] = ..., late_records_dropped: _Optional[int] = ..., vertex_id: _Optional[str] = ..., subtasks: _Optional[_Iterable[_Union[SubtaskMetrics, _Mapping]]] = ...) -> None: ...

class SubtaskMetrics(_message.Message):
    __slots__ = ("metrics",)
    class MetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    METRICS_FIELD_NUMBER: _ClassVar[int]
    metrics: _containers.ScalarMap[str, float]
    def __init__(self, metrics: _Optional[_Mapping[str, float]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("operators", "elapsed_seconds")
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    operators: _containers.RepeatedCompositeFieldContainer[OperatorProgress]
    elapsed_seconds: float
    def __init__(self, operators: _Optional[_Iterable[_Union[OperatorProgress, _Mapping]]] = ..., elapsed_seconds: _Optional[float] = ...) -> None: ...

class CollectedBatch(_message.Message):
    __slots__ = ("node", "subtask", "arrow_ipc", "padding")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    PADDING_FIELD_NUMBER: _ClassVar[int]
    node: int
    subtask: int
    arrow_ipc: bytes
    padding: bytes
    def __init__(self, node: _Optional[int] = ..., subtask: _Optional[int] = ..., arrow_ipc: _Optional[bytes] = ..., padding: _Optional[bytes] = ...) -> None: ...

class JobFinished(_message.Message):
    __slots__ = ("state", "error", "metrics")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        STATE_UNSPECIFIED: _ClassVar[JobFinished.State]
        FINISHED: _ClassVar[JobFinished.State]
        CANCELED: _ClassVar[JobFinished.State]
        FAILED: _ClassVar[JobFinished.State]
    STATE_UNSPECIFIED: JobFinished.State
    FINISHED: JobFinished.State
    CANCELED: JobFinished.State
    FAILED: JobFinished.State
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    state: JobFinished.State
    error: JobError
    metrics: Progress
    def __init__(self, state: _Optional[_Union[JobFinished.State, str]] = ..., error: _Optional[_Union[JobError, _Mapping]] = ..., metrics: _Optional[_Union[Progress, _Mapping]] = ...) -> None: ...

class JobError(_message.Message):
    __slots__ = ("message", "operator", "udf", "traceback", "kind")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    UDF_FIELD_NUMBER: _ClassVar[int]
    TRACEBACK_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    message: str
    operator: str
    udf: str
    traceback: str
    kind: str
    def __init__(self, message: _Optional[str] = ..., operator: _Optional[str] = ..., udf: _Optional[str] = ..., traceback: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("plan",)
    PLAN_FIELD_NUMBER: _ClassVar[int]
    plan: _plan_pb2.JobPlan
    def __init__(self, plan: _Optional[_Union[_plan_pb2.JobPlan, _Mapping]] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("explain", "error")
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    explain: str
    error: str
    def __init__(self, explain: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ("found",)
    FOUND_FIELD_NUMBER: _ClassVar[int]
    found: bool
    def __init__(self, found: _Optional[bool] = ...) -> None: ...
