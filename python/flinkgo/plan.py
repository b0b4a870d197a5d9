"""A job plan as :meth:`~flinkgo.Environment.plan` returns it: read-only, in plain Python.

:class:`JobPlan` is what the runtime receives: the job's name, default parallelism and
config, and its nodes (:class:`PlanNode`) in topological order with ids from 1, each
with its kind, uid, parallelism, output schema and inputs (:class:`PlanInput`).
:meth:`JobPlan.to_bytes` gives the plan's protobuf wire form (the message
``flinkgo.plan.v1.JobPlan`` of ``runtime/proto/plan.proto``), for tools and the runtime;
the generated protobuf classes themselves stay inside the package.

This module imports pyarrow only; the generated plan module is imported with a plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import pyarrow as pa

from flinkgo.types import schema_from_ipc_bytes

if TYPE_CHECKING:
    from flinkgo._proto import plan_pb2

__all__ = ["JobPlan", "PlanInput", "PlanNode"]


@dataclass(frozen=True)
class PlanInput:
    """An edge into a node: the node it reads and how rows travel along it.

    Attributes
    ----------
    node
        The id of the node read.
    partitioning
        ``"FORWARD_IMPLICIT"`` (no partitioning asked for), ``"FORWARD"``,
        ``"REBALANCE"``, ``"RESCALE"``, ``"SHUFFLE"``, ``"BROADCAST"``, ``"GLOBAL"`` or
        ``"HASH"``.
    keys
        The key columns of a ``"HASH"`` edge.
    output
        ``"MAIN"`` (the node's rows), ``"LATE_ROWS"`` (the late rows of a window, or
        of an interval join's left input, with ``late_rows="keep"``) or
        ``"LATE_ROWS_RIGHT"`` (of an interval join's right input); see
        :meth:`~flinkgo.DataFrame.late_rows`.
    """

    node: int
    partitioning: str
    keys: tuple[str, ...] = ()
    output: str = "MAIN"


@dataclass(frozen=True)
class PlanNode:
    """One node of a plan: a source, a transformation or a sink.

    Attributes
    ----------
    id
        Its id in the plan, from 1.
    kind
        ``"source"``, ``"select"``, ``"filter"``, ``"map_batches"``,
        ``"keyed_aggregate"``, ``"drop_duplicates"``, ``"limit"``,
        ``"watermark_assigner"``, ``"interval_join"``, ``"union"`` or ``"sink"``.
    name
        The step's name, e.g. ``"filter(temp > 30)"``.
    uid
        The step's ``uid()``, or ``""``.
    parallelism
        The step's ``set_parallelism()``, or 0 for the job's default.
    schema
        The Arrow schema of the rows it gives out (for a sink, the rows it writes).
    inputs
        The edges into it, in order.
    """

    id: int
    kind: str
    name: str
    uid: str
    parallelism: int
    schema: pa.Schema
    inputs: tuple[PlanInput, ...]


class JobPlan:
    """A job's plan, as the runtime receives it. Made by :meth:`~flinkgo.Environment.plan`.

    Parameters
    ----------
    data
        A plan in its wire form, as :meth:`to_bytes` gives it.

    Raises
    ------
    google.protobuf.message.DecodeError
        If `data` is not a serialized ``JobPlan``.

    Examples
    --------
    >>> import pandas as pd
    >>> import flinkgo as fg
    >>> env = fg.Environment(parallelism=2)
    >>> _ = env.from_pandas(pd.DataFrame({"k": ["a"], "v": [1]})).key_by("k").agg(
    ...     fg.sum("v")
    ... ).print()
    >>> plan = env.plan("sums")
    >>> plan
    <JobPlan 'sums': 3 nodes>
    >>> [(n.id, n.kind) for n in plan.nodes]
    [(1, 'source'), (2, 'keyed_aggregate'), (3, 'sink')]
    >>> plan.nodes[1].inputs
    (PlanInput(node=1, partitioning='HASH', keys=('k',), output='MAIN'),)
    >>> fg.JobPlan(plan.to_bytes()) == plan
    True
    """

    __slots__ = ("_message", "_nodes")

    def __init__(self, data: bytes) -> None:
        from flinkgo._proto import plan_pb2

        self._set(plan_pb2.JobPlan.FromString(data))

    @classmethod
    def _of(cls, message: plan_pb2.JobPlan) -> JobPlan:
        # The plan of a message the package built (no round trip through bytes).
        plan = cls.__new__(cls)
        plan._set(message)
        return plan

    def _set(self, message: plan_pb2.JobPlan) -> None:
        self._message = message
        self._nodes = tuple(_node(n) for n in message.nodes)

    @property
    def name(self) -> str:
        """The job's name."""
        return self._message.name

    @property
    def default_parallelism(self) -> int:
        """The job's default parallelism, or 0 for the runtime's choice."""
        return self._message.default_parallelism

    @property
    def config(self) -> Mapping[str, str]:
        """The job's Flink-style config options, read-only."""
        return MappingProxyType(dict(self._message.config))

    @property
    def nodes(self) -> tuple[PlanNode, ...]:
        """The nodes in topological order (every node after the nodes it reads)."""
        return self._nodes

    def to_bytes(self) -> bytes:
        """Return the plan in its protobuf wire form (``flinkgo.plan.v1.JobPlan``).

        Serializing the same plan twice gives the same bytes.
        """
        return self._message.SerializeToString(deterministic=True)

    def __eq__(self, other: object) -> bool:
        """Plans are equal when their messages are."""
        if not isinstance(other, JobPlan):
            return NotImplemented
        return self._message == other._message

    def __repr__(self) -> str:
        """Show the name and the number of nodes."""
        return f"<JobPlan {self.name!r}: {len(self._nodes)} nodes>"


def _node(node: plan_pb2.Node) -> PlanNode:
    from flinkgo._proto import plan_pb2

    kinds = plan_pb2.Partitioning.Kind
    return PlanNode(
        id=node.id,
        kind=node.WhichOneof("kind") or "",
        name=node.name,
        uid=node.uid,
        parallelism=node.parallelism,
        schema=schema_from_ipc_bytes(node.output_schema),
        inputs=tuple(
            PlanInput(
                node=i.node,
                partitioning=kinds.Name(i.partitioning.kind),
                keys=tuple(i.partitioning.keys),
                output=plan_pb2.Input.Output.Name(i.output),
            )
            for i in node.inputs
        ),
    )
