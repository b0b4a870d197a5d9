"""flinkgo: Python user-defined functions on a Go dataflow runtime.

Declare UDFs with :func:`udf` (defined in :mod:`flinkgo.udfs`); build a pipeline from
an :class:`Environment`'s sources with DataFrame methods and expressions (:func:`col`,
:func:`lit`, aggregates such as :func:`mean`); :meth:`Environment.execute` runs it
(``DataFrame.collect`` and ``DataFrame.to_pandas`` return rows) on the embedded local
runtime, a child process started on first use, or on a runtime server
(``Environment(endpoint=...)``). The runtime runs the UDFs in Python worker processes.
Every error the package raises is a :class:`FlinkgoError` (see :mod:`flinkgo.exceptions`).

Importing this package stays light: it loads pyarrow but not grpc, the generated
protocol code, the client or the worker (``python -m flinkgo.worker``). Note that :func:`sum`,
:func:`min` and :func:`max` are aggregates here, as in polars.

Examples
--------
>>> import flinkgo
>>> @flinkgo.udf("int64")
... def add_one(x):
...     return x + 1
>>> add_one.func(1)  # the function itself; add_one("temp") applies it to a column
2
>>> import pandas as pd
>>> env = flinkgo.Environment()
>>> df = env.from_pandas(pd.DataFrame({"sensor": ["a", "b"], "temp": [20, 31]}))
>>> _ = df.with_column("temp", add_one(flinkgo.col("temp"))).key_by("sensor").agg(
...     flinkgo.mean("temp").alias("avg_temp"), flinkgo.count()
... ).print()
>>> [n.name for n in env.plan().nodes]  # doctest: +NORMALIZE_WHITESPACE
['from_pandas(2 rows)', 'with_column(temp = add_one(temp))',
 'key_by(sensor).agg(mean(temp) AS avg_temp, count())', 'print']
"""

from flinkgo import _tracebacks
from flinkgo.aggregates import (
    Aggregate,
    count,
    count_distinct,
    first,
    last,
    max,
    mean,
    min,
    sum,
)
from flinkgo.dataframe import DataFrame, KeyedDataFrame, Sink, WindowedDataFrame
from flinkgo.environment import Environment
from flinkgo.exceptions import (
    ArgumentTypeError,
    ColumnNotFoundError,
    ExpressionTypeError,
    FlinkgoError,
    InvalidArgumentError,
    InvalidPlanError,
    JobCanceledError,
    JobFailedError,
    JobNotFoundError,
    JobTimeoutError,
    NoSuchFileError,
    OperatorNotFoundError,
    PathIsDirectoryError,
    PathIsFileError,
    RescaleError,
    RuntimeConnectionError,
    RuntimeStartError,
    SavepointError,
    SchemaError,
    UdfPickleError,
    UnexecutedSinkWarning,
)
from flinkgo.expr import Expr, coalesce, col, concat, lit, when
from flinkgo.job import JobResult, OperatorMetrics
from flinkgo.job_client import JobClient
from flinkgo.plan import JobPlan, PlanInput, PlanNode
from flinkgo.rescale import RescaleInfo, RescaleVertex
from flinkgo.udfs import UserDefinedAggregateFunction, UserDefinedFunction, udaf, udf
from flinkgo.windows import Window, cumulate, hop, session, tumble

# An uncaught flinkgo error shows the user's frames and our message (flinkgo._tracebacks).
_tracebacks.install()

__version__ = "0.1.0"

__all__ = [
    "Aggregate",
    "ArgumentTypeError",
    "ColumnNotFoundError",
    "DataFrame",
    "Environment",
    "Expr",
    "ExpressionTypeError",
    "FlinkgoError",
    "InvalidArgumentError",
    "InvalidPlanError",
    "JobCanceledError",
    "JobClient",
    "JobFailedError",
    "JobNotFoundError",
    "JobPlan",
    "JobResult",
    "JobTimeoutError",
    "KeyedDataFrame",
    "NoSuchFileError",
    "OperatorMetrics",
    "OperatorNotFoundError",
    "PathIsDirectoryError",
    "PathIsFileError",
    "PlanInput",
    "PlanNode",
    "RescaleError",
    "RescaleInfo",
    "RescaleVertex",
    "RuntimeConnectionError",
    "RuntimeStartError",
    "SavepointError",
    "SchemaError",
    "Sink",
    "UdfPickleError",
    "UnexecutedSinkWarning",
    "UserDefinedAggregateFunction",
    "UserDefinedFunction",
    "Window",
    "WindowedDataFrame",
    "__version__",
    "coalesce",
    "col",
    "concat",
    "count",
    "count_distinct",
    "cumulate",
    "first",
    "hop",
    "last",
    "lit",
    "max",
    "mean",
    "min",
    "session",
    "sum",
    "tumble",
    "udaf",
    "udf",
    "when",
]
