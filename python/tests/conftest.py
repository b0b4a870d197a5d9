"""Test-session guards: a hang after the last test must end the run, with stacks.

pytest-timeout and ``faulthandler_timeout`` (python/pyproject.toml) watch each test's
setup, call and teardown only. What runs after the session (the interpreter joining
non-daemon threads, such as a gRPC server's thread pool, and the atexit hooks, such as
the embedded runtime's stop) has no timeout, and a hang there leaves CI idle forever.
So at the end of the session faulthandler's watchdog thread is armed: if the process
still exists ``FLINKGO_TEST_EXIT_TIMEOUT`` seconds later (default 60; 0 disables it),
it prints every thread's stack on stderr and exits with status 1. It runs in C, so it
works when every Python thread is blocked.
"""

from __future__ import annotations

import faulthandler
import os
import sys

import pytest

EXIT_TIMEOUT_ENV = "FLINKGO_TEST_EXIT_TIMEOUT"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    timeout = float(os.environ.get(EXIT_TIMEOUT_ENV) or 60)
    if timeout > 0 and sys.__stderr__ is not None:
        faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
