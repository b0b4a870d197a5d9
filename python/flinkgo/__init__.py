"""flinkgo: Python user-defined functions on a Go dataflow runtime.

Declare UDFs with :func:`udf`; the runtime runs them in Python worker processes.

Importing this package stays light: it loads pyarrow but not grpc, the generated
protocol code or the worker (``python -m flinkgo.worker``).

Examples
--------
>>> import flinkgo
>>> @flinkgo.udf("int64")
... def add_one(x):
...     return x + 1
>>> add_one(1)
2
"""

from flinkgo.udf import UserDefinedFunction, udf

__version__ = "0.1.0"

__all__ = ["UserDefinedFunction", "__version__", "udf"]
