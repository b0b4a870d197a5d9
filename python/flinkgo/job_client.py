"""A job running in the background: :meth:`~flinkgo.Environment.execute_async`.

:class:`JobClient` is PyFlink's ``JobClient`` for flinkgo: the running job's id and
state, savepoints (:meth:`JobClient.trigger_savepoint`,
:meth:`JobClient.stop_with_savepoint`), rescaling in place
(:meth:`JobClient.rescale`, :meth:`JobClient.rescales`), :meth:`JobClient.cancel`, and
:meth:`JobClient.result`, which waits for the end and returns the
:class:`~flinkgo.JobResult` or raises the job's error.

The job's events are read by one background thread; a savepoint or a cancel is a call
of its own to the same runtime. This module imports neither grpc nor the client until
a method needs them.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from flinkgo.exceptions import JobCanceledError, JobFailedError, JobTimeoutError
from flinkgo.job import JobResult
from flinkgo.rescale import RescaleInfo

if TYPE_CHECKING:
    from flinkgo._client import Client

_T = TypeVar("_T")


class _WithClient(Protocol):
    # Calls use(client) with a client of the job's runtime and returns what it returns.
    def __call__(self, use: Callable[[Client], _T], /) -> _T: ...


__all__ = ["JobClient"]

# How long job_id and the control methods wait for the runtime to start the job.
_START_TIMEOUT = 120.0


class JobClient:
    """A job started by :meth:`flinkgo.Environment.execute_async`.

    Methods may be called from any thread.

    Examples
    --------
    >>> import flinkgo as fg
    >>> env = fg.Environment()
    >>> _ = env.datagen(rows=10, schema={"id": "int64"}).print()
    >>> job = env.execute_async("demo")  # doctest: +SKIP
    >>> job.status()  # doctest: +SKIP
    'RUNNING'
    >>> job.result().state  # doctest: +SKIP
    'FINISHED'
    """

    def __init__(
        self,
        name: str,
        run: Callable[[Callable[[str, str], None]], JobResult],
        control: _WithClient,
    ) -> None:
        # run(on_event) runs the job to its end; control(use) calls use(client) with a
        # client of the job's runtime.
        self.name = name
        self._control = control
        self._lock = threading.Lock()
        self._started = threading.Event()
        self._done = threading.Event()
        self._running = threading.Event()  # the job left CREATED, or ended
        self._ran = False  # the job got past its start (RUNNING)
        self._warnings: list[str] = []  # the planner's, for execute_async to warn of
        self._job_id = ""
        self._state = "CREATED"
        self._result: JobResult | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(run,), name=f"flinkgo-job-{name}", daemon=True
        )
        self._thread.start()

    def _run(self, run: Callable[[Callable[[str, str], None]], JobResult]) -> None:
        try:
            self._result = run(self._on_event)
        except BaseException as e:  # noqa: BLE001 - handed to result()
            self._error = e
            # A job refused before it ran (its plan, its config) never sends a state:
            # status() says how it ended, not CREATED.
            ended = None
            if isinstance(e, JobCanceledError):
                ended = "CANCELED"
            elif isinstance(e, JobFailedError):
                ended = "FAILED"
            with self._lock:
                if ended is not None and self._state not in ("FAILED", "CANCELED"):
                    self._state = ended
        finally:
            self._started.set()
            self._running.set()
            self._done.set()

    def _wait_running(self) -> None:
        # Called by execute_async: returns once the job runs (or after the start
        # timeout, the job still starting), raises the error of a job that ended
        # before it ran, so a refused job fails the call that submitted it.
        if not self._running.wait(_START_TIMEOUT):
            return
        with self._lock:
            ran, planner_warnings = self._ran, list(self._warnings)
        for text in planner_warnings:  # at the user's execute_async call
            warnings.warn(text, UserWarning, stacklevel=3)
        # Ended before it ran: its error follows the state that says so.
        if not ran and self._done.wait(_START_TIMEOUT) and self._error is not None:
            raise self._error

    def _on_event(self, kind: str, value: str) -> None:
        with self._lock:
            if kind == "started":
                self._job_id = value
                self._started.set()
            elif kind == "warning":
                self._warnings.append(value)
            elif kind == "state":
                self._state = value
                if value not in ("CREATED", "FAILED", "CANCELED"):
                    self._ran = True
                if value != "CREATED":
                    self._running.set()

    @property
    def job_id(self) -> str:
        """The runtime's id of the job; waits until the runtime has started it.

        Raises
        ------
        Exception
            The job's error, if it ended before it got an id (an invalid plan, say).
        JobTimeoutError
            If the runtime did not start the job within two minutes (a :exc:`TimeoutError`).
        """
        if not self._started.wait(_START_TIMEOUT):
            raise JobTimeoutError(f"job {self.name!r}: the runtime did not start it")
        with self._lock:
            if self._job_id:
                return self._job_id
        if self._error is not None:
            raise self._error
        raise JobFailedError("it ended before the runtime gave it an id", job_name=self.name)

    def status(self) -> str:
        """Return the job's latest state: ``CREATED``, ``RUNNING``, ``RESTARTING``, ``FINISHED``...

        As Flink's job status; see :attr:`flinkgo.JobResult.states`.
        """
        with self._lock:
            return self._state

    def done(self) -> bool:
        """Whether the job has ended."""
        return self._done.is_set()

    def trigger_savepoint(self, directory: str | None = None) -> str:
        """Take a savepoint of the running job and return its directory.

        The job keeps running. Start a job from it with the config entry
        ``execution.state-recovery.path`` (or ``flinkgo run --from-savepoint``).

        Parameters
        ----------
        directory
            Where the savepoint directory goes; ``None`` for the job's
            ``execution.checkpointing.savepoint-dir``.

        Raises
        ------
        SavepointError
            If the savepoint failed (a :exc:`RuntimeError`); the message says why.
        JobNotFoundError
            If the job is no longer running (a :exc:`LookupError`).
        """
        return self._savepoint(directory, stop=False)

    def stop_with_savepoint(self, directory: str | None = None) -> str:
        """Take a savepoint, let every sink commit up to it, and stop the job.

        The job ends ``FINISHED``; :meth:`result` returns once it has stopped.
        Parameters and errors as :meth:`trigger_savepoint`.
        """
        return self._savepoint(directory, stop=True)

    def _savepoint(self, directory: str | None, *, stop: bool) -> str:
        job_id = self.job_id
        return self._control(
            lambda client: client.trigger_savepoint(job_id, directory or "", stop=stop)
        )

    def rescale(self, parallelism: Mapping[str, int]) -> RescaleInfo:
        """Change the parallelism of operators of the running job, by uid.

        As Flink's adaptive scheduler with FLIP-291's resource requirements: the call
        returns at once with the pending rescale, and the job restarts at the new
        parallelism from its next completed checkpoint (FLIP-461), so nothing is
        reprocessed; keyed state moves by key group. A rescale waits at least
        ``jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling`` (30 s)
        after the job started or last rescaled. :meth:`rescales` follows it.

        A stateless UDF operator (a ``@udf`` or ``map_batches``, named alone or with
        its node) asked for at least its number of subtasks is resized in place
        instead: its worker pool grows or shrinks to that many Python workers in all
        while the job runs, with no checkpoint and no restart (``mode="IN_PLACE"``).
        A request that holds both kinds returns the checkpoint rescale; the in-place
        one is in :meth:`rescales`.

        Parameters
        ----------
        parallelism
            New parallelism by uid: a node's uid (``.uid("...")``, every operator of
            the node) or an operator's (as :meth:`flinkgo.Environment.explain` shows).
            Uids not named keep their parallelism.

        Raises
        ------
        RescaleError
            If the runtime refused it (a :exc:`ValueError`): the job does not
            checkpoint (needed unless every uid is resized in place), a uid is
            unknown (the message lists the job's), or a parallelism is above the
            job's max parallelism.
        JobNotFoundError
            If the job is no longer running (a :exc:`LookupError`).

        Examples
        --------
        >>> job.rescale({"score": 4})  # doctest: +SKIP
        RescaleInfo(id='...', trigger_cause='UPDATE_REQUIREMENT', status='PENDING', ...)
        """
        job_id = self.job_id
        wanted = {str(uid): int(p) for uid, p in parallelism.items()}
        reply = self._control(lambda client: client.rescale(job_id, wanted))
        return RescaleInfo._from_proto(reply.rescale)

    def rescales(self) -> list[RescaleInfo]:
        """Return the job's rescales, oldest first, a pending one last.

        Raises
        ------
        JobNotFoundError
            If the job is no longer running (a :exc:`LookupError`).
        """
        job_id = self.job_id
        reply = self._control(lambda client: client.rescale(job_id, None))
        return [RescaleInfo._from_proto(r) for r in reply.history]

    def parallelism(self) -> dict[str, int]:
        """Return every operator's current parallelism, by operator uid."""
        job_id = self.job_id
        reply = self._control(lambda client: client.rescale(job_id, None))
        return dict(reply.parallelism)

    def cancel(self) -> None:
        """Ask the runtime to cancel the job; returns at once.

        :meth:`result` then raises :class:`~flinkgo.JobCanceledError`.
        """
        job_id = self.job_id
        self._control(lambda client: client.cancel(job_id))

    def result(self, timeout: float | None = None) -> JobResult:
        """Wait for the job's end and return its result.

        Raises
        ------
        JobTimeoutError
            If it has not ended within `timeout` seconds (a :exc:`TimeoutError`).
        JobFailedError, JobCanceledError, RuntimeConnectionError
            As :meth:`flinkgo.Environment.execute`.
        KeyboardInterrupt
            On Ctrl-C; the job is not canceled (:meth:`cancel` does that).
        """
        try:
            ended = self._done.wait(timeout)
        except KeyboardInterrupt:
            # Ctrl-C while waiting: threading's frames would say nothing; the job runs on.
            raise KeyboardInterrupt from None
        if not ended:
            raise JobTimeoutError(f"job {self.name!r} has not ended within {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def __repr__(self) -> str:
        """Show the job's name, id and state."""
        with self._lock:
            return f"JobClient(name={self.name!r}, job_id={self._job_id!r}, state={self._state!r})"
