"""Every error flinkgo raises, under one base: :class:`FlinkgoError`.

``except flinkgo.FlinkgoError`` catches whatever the package raises on purpose. Each
error also keeps the built-in base a Python user expects, so ``except ValueError`` or
``except TypeError`` still catches what it caught before the package had its own
classes:

- mistakes in arguments: :class:`InvalidArgumentError` (a :exc:`ValueError`),
  :class:`ArgumentTypeError` (a :exc:`TypeError`), and their refinements
  :class:`ColumnNotFoundError`, :class:`SchemaError`, :class:`ExpressionTypeError`,
  :class:`UdfPickleError`;
- paths: :class:`NoSuchFileError` (:exc:`FileNotFoundError`), :class:`PathIsDirectoryError`
  (:exc:`IsADirectoryError`), :class:`PathIsFileError` (:exc:`FileExistsError`);
- jobs: :class:`InvalidPlanError`, :class:`JobFailedError`, :class:`JobCanceledError`,
  :class:`JobTimeoutError`, :class:`JobNotFoundError`, :class:`SavepointError`,
  :class:`OperatorNotFoundError`;
- the runtime: :class:`RuntimeStartError`, :class:`RuntimeConnectionError`.

This module imports only the standard library, so every other module may import it.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ArgumentTypeError",
    "ColumnNotFoundError",
    "ErrorKind",
    "ExpressionTypeError",
    "FlinkgoError",
    "InvalidArgumentError",
    "InvalidPlanError",
    "JobCanceledError",
    "JobFailedError",
    "JobNotFoundError",
    "JobTimeoutError",
    "NoSuchFileError",
    "OperatorNotFoundError",
    "PathIsDirectoryError",
    "PathIsFileError",
    "RuntimeConnectionError",
    "RuntimeStartError",
    "SavepointError",
    "SchemaError",
    "UdfPickleError",
    "UnexecutedSinkWarning",
]


class FlinkgoError(Exception):
    """The base of every error flinkgo raises.

    Examples
    --------
    >>> import flinkgo as fg
    >>> try:
    ...     fg.col("")
    ... except fg.FlinkgoError as e:
    ...     print(type(e).__name__, isinstance(e, TypeError))
    ArgumentTypeError True
    """


# --- mistakes in arguments ----------------------------------------------------------------


class InvalidArgumentError(FlinkgoError, ValueError):
    """An argument has a wrong value: out of range, unknown, given twice, empty.

    The message names the method or option and says what is expected.
    """


class ArgumentTypeError(FlinkgoError, TypeError):
    """An argument has the wrong type; the message names what was expected."""


class ColumnNotFoundError(InvalidArgumentError):
    """An expression, key or aggregate names a column that the input does not have.

    The message names the operation, the missing column and the columns there are.
    """


class SchemaError(InvalidArgumentError):
    """Schemas do not fit: a column repeats, union inputs differ, a file is not as declared.

    The message names the operation and shows the schemas or columns involved.
    """


class ExpressionTypeError(ArgumentTypeError):
    """A function or cast of an expression does not apply to its argument types.

    The message names the operation and the expression, and quotes Arrow's reason.
    """


class UdfPickleError(ArgumentTypeError):
    """A UDF's function cannot be pickled (cloudpickle) to ship it to the workers.

    The pickling error is chained; the message says what to create inside the function.
    """


# --- paths --------------------------------------------------------------------------------


class NoSuchFileError(FlinkgoError, FileNotFoundError):
    """No file matches a source's path or glob pattern."""


class PathIsDirectoryError(FlinkgoError, IsADirectoryError):
    """A source was given a directory where it reads files."""


class PathIsFileError(FlinkgoError, FileExistsError):
    """A file sink was given an existing file where it writes a directory of part files."""


# --- jobs ---------------------------------------------------------------------------------

ErrorKind = Literal["PLAN", "UDF", "WORKER", "RUNTIME", ""]
"""Where a job's failure comes from, as the runtime classifies it.

``"PLAN"`` the plan is invalid; ``"UDF"`` user code raised; ``"WORKER"`` a Python worker
died or did not start; ``"RUNTIME"`` anything else; ``""`` unknown.
"""


class InvalidPlanError(FlinkgoError, ValueError):
    """The runtime's planner refused the plan; the message is the planner's.

    The DataFrame API checks most mistakes where they are made; this reports the rest
    (a forward edge between steps of different parallelism under
    ``pipeline.forward-mismatch=fail``, say).
    """


class JobFailedError(FlinkgoError, RuntimeError):
    r"""A job failed; the message is the runtime's, with the Python traceback intact.

    Parameters
    ----------
    message
        The runtime's whole message.
    job_name, job_id
        Which job failed (the id is empty when it failed before it started).
    operator, udf
        Where it failed, when known: the physical operator's name, and the UDF's name.
    traceback
        The Python traceback of a UDF's exception (empty for other failures). It is also
        part of ``str(error)``.
    kind
        See :data:`ErrorKind`.

    Examples
    --------
    >>> import flinkgo
    >>> e = flinkgo.JobFailedError(
    ...     'udf "parse" raised ValueError: bad row',
    ...     job_name="etl",
    ...     udf="parse",
    ...     traceback='Traceback (most recent call last):\n  ...\nValueError: bad row',
    ...     kind="UDF",
    ... )
    >>> print(e)
    job 'etl' failed: udf "parse" raised ValueError: bad row
    Traceback (most recent call last):
      ...
    ValueError: bad row
    >>> e.udf, e.kind
    ('parse', 'UDF')
    """

    def __init__(
        self,
        message: str,
        *,
        job_name: str = "",
        job_id: str = "",
        operator: str = "",
        udf: str = "",
        traceback: str = "",
        kind: ErrorKind | str = "",
    ) -> None:
        self.message = message
        self.job_name = job_name
        self.job_id = job_id
        self.operator = operator
        self.udf = udf
        self.traceback = traceback
        self.kind = kind
        text = message.rstrip("\n") or "(the runtime gave no message)"
        tb = traceback.strip("\n")
        if tb and tb not in text:
            text = f"{text}\n{tb}"
        prefix = f"job {job_name!r} failed: " if job_name else "job failed: "
        super().__init__(prefix + text)


class JobCanceledError(FlinkgoError, RuntimeError):
    """A job was canceled by someone else than this client (``flinkgo cancel``, say).

    A Ctrl-C in this client raises :exc:`KeyboardInterrupt` instead.

    Attributes
    ----------
    job_name, job_id
        Which job.
    message
        The runtime's reason, when it gave one.
    """

    def __init__(self, message: str = "", *, job_name: str = "", job_id: str = "") -> None:
        self.message = message
        self.job_name = job_name
        self.job_id = job_id
        text = f"job {job_name!r} ({job_id or 'no id'}) was canceled"
        super().__init__(f"{text}: {message}" if message else text)


class JobTimeoutError(FlinkgoError, TimeoutError):
    """A job did not start, or did not end, within the time waited for it."""


class JobNotFoundError(FlinkgoError, LookupError):
    """The runtime has no running job with the given id."""


class SavepointError(FlinkgoError, RuntimeError):
    """The runtime could not take a savepoint; the message is the runtime's reason."""


class RescaleError(FlinkgoError, ValueError):
    """The runtime refused a rescale; the message says why.

    A job without checkpointing, an unknown uid (the message lists the job's), or a
    parallelism above the job's max parallelism.
    """


class OperatorNotFoundError(FlinkgoError, KeyError):
    """No operator of a job has the uid asked for; the message lists the uids there are."""


# --- the runtime --------------------------------------------------------------------------


class RuntimeStartError(FlinkgoError, RuntimeError):
    """The embedded runtime could not be found, built or started.

    The message says what was tried and, when the runtime process started, what it
    printed on stderr.
    """


class RuntimeConnectionError(FlinkgoError, ConnectionError):
    """The runtime could not be reached, or the connection to it broke during a job.

    The message names the endpoint and gRPC's status.
    """


# --- warnings ------------------------------------------------------------------------------


class UnexecutedSinkWarning(UserWarning):
    """Sinks were defined (``print``, ``write_csv``, ...) but their job never ran.

    Warned when the :class:`~flinkgo.Environment` is garbage-collected or the interpreter
    exits; the message names the sinks. Call ``env.execute()`` after defining them.
    """
