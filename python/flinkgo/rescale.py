"""Rescaling a running job in place: :meth:`flinkgo.JobClient.rescale`.

A rescale sets the parallelism of operators by uid (an operator's or a node's); the
job restarts at the new parallelism from its next completed checkpoint, as Flink's
adaptive scheduler (FLIP-291, FLIP-461), so nothing is reprocessed. Each rescale is
kept in the job's history (:meth:`flinkgo.JobClient.rescales`) as a
:class:`RescaleInfo`, Flink's rescale history entry. See docs/semantics.md, section
"Rescaling a running job".

This module depends on nothing but the standard library: ``import flinkgo`` loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flinkgo._proto import job_pb2

__all__ = ["RescaleInfo", "RescaleVertex"]


@dataclass(frozen=True)
class RescaleVertex:
    """One operator's parallelism before and after a rescale.

    ``workers_before`` and ``workers_after`` are a UDF operator's Python workers over
    all its subtasks (0 for other operators): an in-place rescale changes them and
    keeps the parallelism.
    """

    uid: str
    name: str
    before: int
    after: int
    workers_before: int = 0
    workers_after: int = 0


@dataclass(frozen=True)
class RescaleInfo:
    """One rescale of a job, as an entry of Flink's rescale history.

    Attributes
    ----------
    id
        The rescale's id.
    trigger_cause
        Why: ``"UPDATE_REQUIREMENT"`` (a rescale request).
    trigger
        What started it: ``"COMPLETED_CHECKPOINT"`` (the next completed checkpoint)
        or ``"CHECKPOINT_FAILURES"`` (that many failed in a row, see
        ``jobmanager.adaptive-scheduler.rescale-trigger.max-checkpoint-failures``);
        ``""`` while pending; ``"IN_PLACE"`` for an in-place rescale.
    status
        ``"PENDING"``, ``"COMPLETED"``, ``"FAILED"`` or ``"IGNORED"`` (a later
        request replaced it, the job ended first, or it changed nothing).
    reason
        Why it failed or was ignored.
    checkpoint_id
        The checkpoint the job restarted from at the new parallelism.
    vertices
        Every operator's parallelism before and after.
    requested_at, started_at, ended_at
        Unix times in seconds; ``None`` when not reached.
    duration
        Seconds from the start of the restart to running at the new parallelism; for
        an in-place rescale, from the request until every new worker took a batch
        and every retired one exited.
    mode
        ``"IN_PLACE"``: the worker pools of stateless UDF operators were resized
        without a restart; ``"CHECKPOINT"``: the job restarted from a checkpoint.
    mode_note
        Why a stateless UDF operator went through a checkpoint all the same (fewer
        workers than its subtasks); ``""`` otherwise.
    """

    id: str
    trigger_cause: str
    trigger: str
    status: str
    reason: str
    checkpoint_id: int
    vertices: tuple[RescaleVertex, ...]
    requested_at: float | None
    started_at: float | None
    ended_at: float | None
    duration: float
    mode: str = ""
    mode_note: str = ""

    @classmethod
    def _from_proto(cls, r: job_pb2.RescaleInfo) -> RescaleInfo:
        def seconds(ms: int) -> float | None:
            return ms / 1000 if ms else None

        return cls(
            id=r.id,
            trigger_cause=r.trigger_cause,
            trigger=r.trigger,
            status=r.status,
            reason=r.reason,
            checkpoint_id=r.checkpoint_id,
            vertices=tuple(
                RescaleVertex(
                    uid=v.uid,
                    name=v.name,
                    before=v.before,
                    after=v.after,
                    workers_before=v.workers_before,
                    workers_after=v.workers_after,
                )
                for v in r.vertices
            ),
            requested_at=seconds(r.requested_at_ms),
            started_at=seconds(r.started_at_ms),
            ended_at=seconds(r.ended_at_ms),
            duration=r.duration_seconds,
            mode=r.mode,
            mode_note=r.mode_note,
        )
