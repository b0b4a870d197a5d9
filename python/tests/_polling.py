"""How the tests wait for what a job, a worker or a server makes true.

Bounded polling on a condition, never a sleep for a guessed time: the condition is
checked at once, then at intervals growing from 10 ms to 200 ms (a condition quick to
hold is seen quickly, a slow one costs few checks), until it holds or the timeout
passes. The Go tests' counterpart is internal/poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable

FIRST_INTERVAL = 0.01
MAX_INTERVAL = 0.2


def within(condition: Callable[[], object], timeout: float) -> bool:
    """Wait until condition() is true or timeout seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    interval = FIRST_INTERVAL
    while True:
        if condition():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(interval, left))  # the one sleep: between two checks
        interval = min(2 * interval, MAX_INTERVAL)


def wait_until(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    """Wait until condition() is true; fail saying what was awaited after timeout s.

    condition may itself fail (assert) for a state that makes the wait hopeless.
    """
    assert within(condition, timeout), f"timed out after {timeout} s waiting for {what}"
