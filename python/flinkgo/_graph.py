"""The graph of a pipeline being built, and its conversion into the plan message.

A :class:`Step` is one node: its kind's message, name, schema, inputs (each with the
partitioning of its edge), uid and parallelism. DataFrames hold steps; the
:class:`~flinkgo.Environment` that made them owns them as a :class:`Pipeline`: it
registers sinks and runs plans. :func:`build_plan` turns the steps that lead to some
sinks into a ``flinkgo.plan.v1.JobPlan``: nodes in topological order (inputs before
the nodes that read them, sinks in the order given), ids from 1, each with its output
schema as Arrow IPC.

This module sits below ``flinkgo.dataframe`` and ``flinkgo.environment`` (both import it,
it imports neither); the generated plan module is imported when a plan is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol, cast

from flinkgo._sources import positive_int
from flinkgo.exceptions import ArgumentTypeError, InvalidArgumentError
from flinkgo.types import schema_ipc_bytes

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pyarrow as pa
    from google.protobuf.message import Message

    from flinkgo._proto import plan_pb2
    from flinkgo.job import JobResult

__all__ = [
    "IMPLICIT",
    "LATE_ROWS",
    "MAX_PARALLELISM",
    "Partitioning",
    "PartitioningKind",
    "Pipeline",
    "Step",
    "build_plan",
]

MAX_PARALLELISM = 32768
"""The largest parallelism of a step, Flink's upper bound of the max parallelism."""

# Longer step names are cut, so that plans and logs stay readable.
_NAME_LIMIT = 200

PartitioningKind = Literal[
    "FORWARD_IMPLICIT", "FORWARD", "REBALANCE", "RESCALE", "SHUFFLE", "BROADCAST", "GLOBAL", "HASH"
]


class Partitioning(NamedTuple):
    """How rows travel along an edge: the name of ``Partitioning.Kind``, and hash keys."""

    kind: PartitioningKind
    keys: tuple[str, ...] = ()


IMPLICIT = Partitioning("FORWARD_IMPLICIT")
"""An edge without an explicit partitioning."""


class Pipeline(Protocol):
    """What steps need of the Environment that made them."""

    def _add_sink(self, step: Step) -> None: ...

    def _plan_of(self, sinks: list[Step], name: str) -> plan_pb2.JobPlan: ...

    def _execute(self, plan: plan_pb2.JobPlan, *, progress: bool) -> JobResult: ...


LATE_ROWS = "late_rows"
"""The kind of a step that is no node of its own: late rows of the step it reads (its
only input), a window or an interval join, an output of that step's node, as Flink's
side outputs; its body is the ``Input`` message naming the output (``LATE_ROWS`` or
``LATE_ROWS_RIGHT``)."""


class Step:
    """One node of the plan: its kind's message, schema, inputs and options."""

    __slots__ = ("body", "env", "inputs", "kind", "name", "parallelism", "schema", "uid")

    def __init__(
        self,
        env: Pipeline,
        kind: str,
        body: Message,
        name: str,
        schema: pa.Schema,
        inputs: tuple[tuple[Step, Partitioning], ...] = (),
    ) -> None:
        self.env = env
        self.kind = kind  # the name of the Node.kind oneof field: "source", "select", ...
        self.body = body  # the message of that field
        self.name = name if len(name) <= _NAME_LIMIT else name[: _NAME_LIMIT - 3] + "..."
        self.schema = schema
        self.inputs = inputs
        self.uid: str | None = None
        self.parallelism: int | None = None

    def _refuse_on_late_rows(self, what: str) -> None:
        if self.kind == LATE_ROWS:
            raise InvalidArgumentError(
                f"{what}: the late rows are a side output of the step "
                f"{self.inputs[0][0].name}, not a step of their own; call {what} on the "
                "DataFrame late_rows() was called on"
            )

    def set_uid(self, uid: object) -> None:
        """Give the step its uid; a second, different one is an error."""
        self._refuse_on_late_rows("uid")
        if not isinstance(uid, str) or not uid.strip():
            raise ArgumentTypeError(
                f"uid: expected a non-empty string, got {uid!r} for {self.name}"
            )
        if self.uid is not None and self.uid != uid:
            raise InvalidArgumentError(
                f"uid: the step {self.name} already has the uid {self.uid!r}; a step has one "
                f"uid (asked for {uid!r})"
            )
        self.uid = uid

    def set_parallelism(self, parallelism: object) -> None:
        """Give the step its parallelism; a second, different one is an error."""
        self._refuse_on_late_rows("set_parallelism")
        value = positive_int(
            f"set_parallelism ({self.name})", "parallelism", parallelism, upper=MAX_PARALLELISM
        )
        if value is None:
            raise ArgumentTypeError(
                f"set_parallelism ({self.name}): parallelism must be a positive integer, got None"
            )
        if self.parallelism is not None and self.parallelism != value:
            raise InvalidArgumentError(
                f"set_parallelism: the step {self.name} already has parallelism "
                f"{self.parallelism}; a step has one parallelism (asked for {value})"
            )
        self.parallelism = value


def build_plan(
    sinks: list[Step], name: str, *, default_parallelism: int | None, config: Mapping[str, str]
) -> plan_pb2.JobPlan:
    """Return the plan message of everything `sinks` need.

    Raises :class:`~flinkgo.exceptions.ArgumentTypeError` for an empty name and
    :class:`~flinkgo.exceptions.InvalidArgumentError` when there is no sink or two steps
    have one uid.
    """
    from flinkgo._proto import plan_pb2

    if not isinstance(name, str) or not name.strip():
        raise ArgumentTypeError(f"plan: the job name must be a non-empty string, got {name!r}")
    if not sinks:
        raise InvalidArgumentError(
            "plan: the job has no sink; end each pipeline with df.print(), "
            "df.write_csv(path), df.write_jsonl(path) or df.write_parquet(path)"
        )
    order = [step for step in _topological(sinks) if step.kind != LATE_ROWS]
    ids = {id(step): i for i, step in enumerate(order, start=1)}
    owners: dict[str, Step] = {}
    for step in order:
        if step.uid is None:
            continue
        first = owners.setdefault(step.uid, step)
        if first is not step:
            raise InvalidArgumentError(
                f"plan: the uid {step.uid!r} is given to two steps, {first.name} (node "
                f"{ids[id(first)]}) and {step.name} (node {ids[id(step)]}); uids match "
                "state in savepoints and must be unique in a job"
            )
    nodes = []
    for step in order:
        node = plan_pb2.Node(
            id=ids[id(step)],
            uid=step.uid or "",
            name=step.name,
            parallelism=step.parallelism or 0,
            output_schema=schema_ipc_bytes(step.schema),
            inputs=[_input(parent, part, ids) for parent, part in step.inputs],
        )
        getattr(node, step.kind).CopyFrom(step.body)
        nodes.append(node)
    return plan_pb2.JobPlan(
        name=name,
        default_parallelism=default_parallelism or 0,
        config=config,
        nodes=nodes,
    )


def _input(parent: Step, part: Partitioning, ids: dict[int, int]) -> plan_pb2.Input:
    from flinkgo._proto import plan_pb2

    output = plan_pb2.Input.MAIN
    if parent.kind == LATE_ROWS:
        parent, output = parent.inputs[0][0], cast("plan_pb2.Input", parent.body).output
    return plan_pb2.Input(
        node=ids[id(parent)],
        partitioning=plan_pb2.Partitioning(kind=part.kind, keys=part.keys),
        output=output,
    )


def _topological(sinks: list[Step]) -> list[Step]:
    # Depth-first, inputs in order, each step after its inputs; iterative, so long
    # pipelines do not hit the recursion limit.
    order: list[Step] = []
    seen: set[int] = set()
    for sink in sinks:
        stack: list[tuple[Step, bool]] = [(sink, False)]
        while stack:
            step, inputs_done = stack.pop()
            if inputs_done:
                order.append(step)
                continue
            if id(step) in seen:
                continue
            seen.add(id(step))
            stack.append((step, True))
            stack.extend((parent, False) for parent, _ in reversed(step.inputs))
    return order
