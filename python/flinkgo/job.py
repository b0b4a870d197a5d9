"""What running a job gives back: its result, and the errors that end it.

:meth:`~flinkgo.Environment.execute` returns a :class:`JobResult` when the job finishes,
and raises :class:`JobFailedError` when it fails, :class:`JobCanceledError` when it is
canceled from elsewhere (``flinkgo cancel``, another client), and
:exc:`KeyboardInterrupt` when Ctrl-C canceled it. :class:`RuntimeStartError` and
:class:`RuntimeConnectionError` say that no job ran because no runtime could be started
or reached; :class:`InvalidPlanError` that the runtime's planner refused the plan.

How a caller should react:

- :class:`JobFailedError`: fix the code or data it names (``kind`` ``"UDF"``: the
  traceback shows the user's line), or the environment (``"WORKER"``: a Python worker
  died or did not start).
- :class:`JobCanceledError`: someone stopped the job on purpose; do not retry blindly.
- :class:`RuntimeConnectionError`: the runtime server is down or went away; retrying
  may help.

The error classes are defined in :mod:`flinkgo.exceptions` and importable from here.
This module depends on pyarrow only: ``import flinkgo`` loads it, never grpc.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

# The errors live in flinkgo.exceptions; they are importable from here too, where they
# were first defined.
from flinkgo.exceptions import (
    ErrorKind,
    InvalidPlanError,
    JobCanceledError,
    JobFailedError,
    OperatorNotFoundError,
    RuntimeConnectionError,
    RuntimeStartError,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ErrorKind",
    "InvalidPlanError",
    "JobCanceledError",
    "JobFailedError",
    "JobResult",
    "OperatorMetrics",
    "RuntimeConnectionError",
    "RuntimeStartError",
]


@dataclass(frozen=True)
class OperatorMetrics:
    """What one physical operator did: rows in and out over its subtasks, and per subtask.

    Attributes
    ----------
    name
        The operator's name in the explanation (UDF operators are named after their UDFs).
    uid
        Its stable uid: the step's ``uid()``, else ``"<kind>-<node id>"``.
    parallelism
        Its number of subtasks.
    rows_in, rows_out
        Rows received and emitted (a source counts the rows it read as both).
    num_late_records_dropped
        Rows a window aggregation dropped as too late for every window they belong to
        (Flink's ``numLateRecordsDropped``); 0 for other operators.
    vertex_id
        The REST API's id of the operator's job vertex (the chain it runs in):
        ``/jobs/<job_id>/vertices/<vertex_id>``.
    subtasks
        Per subtask, the figures the REST API gives at the end of the job, by the same
        names (see ``docs/semantics.md#rest-api-and-metrics``): the chain's task metrics
        (``numRecordsIn``, ``numBytesOut``, ``accumulatedBusyTime``, ...; the
        ``...PerSecond`` rates are 0 once the job ended) and, for an operator with
        Python workers, its UDF metrics (``udfNumBatches``, ``udfNumRecords``,
        ``udfAccumulatedWorkerTime``, ``udfWorkerTimeMsPerBatch``,
        ``udfBatchesInFlight``, ``udfWorkerRssBytes``, ``udfNumWorkerRestarts``).
    """

    name: str
    uid: str
    parallelism: int
    rows_in: int
    rows_out: int
    num_late_records_dropped: int = 0
    vertex_id: str = ""
    subtasks: tuple[Mapping[str, float], ...] = ()


@dataclass(frozen=True)
class JobResult:
    """A finished job.

    Attributes
    ----------
    name
        The job's name.
    job_id
        The runtime's id of the job.
    state
        ``"FINISHED"`` (a failed or canceled job raises instead).
    elapsed
        Seconds from the job's start to its end, as the runtime measured them.
    metrics
        Per physical operator, in the runtime's order.
    collected
        The rows of each collect sink, by the sink's node id in the plan; rows from
        different subtasks come in no particular order.
    explain
        The physical plan, as :meth:`~flinkgo.Environment.explain` shows it.
    states
        Every state the job went through, with the runtime's seconds since the start
        at which it entered it, as Flink's job status: ``CREATED``, ``RUNNING``, then
        ``FINISHED`` (a job that fails passes ``FAILING`` then ``FAILED``, a canceled
        one ``CANCELING`` then ``CANCELED``, and raises).

    Examples
    --------
    >>> import flinkgo
    >>> r = flinkgo.JobResult(
    ...     name="demo",
    ...     job_id="j1",
    ...     state="FINISHED",
    ...     elapsed=0.25,
    ...     metrics=(flinkgo.OperatorMetrics("print", "sink-2", 1, 3, 0),),
    ... )
    >>> r
    JobResult(name='demo', job_id='j1', state='FINISHED', elapsed=0.25, operators=1, collected=[])
    >>> r.operator("sink-2").rows_in
    3
    """

    name: str
    job_id: str
    state: str
    elapsed: float
    metrics: tuple[OperatorMetrics, ...] = ()
    collected: Mapping[int, pa.Table] = field(default_factory=dict)
    explain: str = ""
    states: tuple[tuple[str, float], ...] = ()

    def operator(self, uid: str) -> OperatorMetrics:
        """Return the metrics of the operator with this uid.

        Raises
        ------
        OperatorNotFoundError
            If no operator has it (a :exc:`KeyError`); the message lists the uids there are.
        """
        for m in self.metrics:
            if m.uid == uid:
                return m
        raise OperatorNotFoundError(
            f"no operator has the uid {uid!r}; uids are {[m.uid for m in self.metrics]}"
        )

    def __repr__(self) -> str:
        """Show the job and how many operators and collect sinks it had."""
        return (
            f"JobResult(name={self.name!r}, job_id={self.job_id!r}, state={self.state!r}, "
            f"elapsed={self.elapsed:.3g}, operators={len(self.metrics)}, "
            f"collected={sorted(self.collected)})"
        )
