"""Test-session guards: a hang after the last test must end the run, with stacks.

pytest-timeout and ``faulthandler_timeout`` (python/pyproject.toml) watch each test's
setup, call and teardown only. What runs after the session (the interpreter joining
non-daemon threads, such as a gRPC server's thread pool, and the atexit hooks, such as
the embedded runtime's stop) has no timeout, and a hang there leaves CI idle forever.
So at the end of the session faulthandler's watchdog thread is armed: if the process
still exists ``FLINKGO_TEST_EXIT_TIMEOUT`` seconds later (default 60; 0 disables it),
it prints every thread's stack on stderr and exits with status 1. It runs in C, so it
works when every Python thread is blocked.

A test that fails loses both of its timeouts: pytest-timeout and pytest's faulthandler
plugin cancel them in ``pytest_exception_interact`` (meant for a debugger), which runs
for every failed test before its teardown. A fixture teardown that then hangs (a gRPC
server's ``stop`` waiting for a call that never ends) would sit forever, so the
faulthandler watchdog is armed again there, with the same ``faulthandler_timeout``.
"""

from __future__ import annotations

import faulthandler
import os
import sys

import pytest
from _pytest.faulthandler import fault_handler_stderr_fd_key

EXIT_TIMEOUT_ENV = "FLINKGO_TEST_EXIT_TIMEOUT"


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector) -> None:
    if not isinstance(node, pytest.Item):
        return  # a collection error: no test protocol would cancel the watchdog
    timeout = float(node.config.getini("faulthandler_timeout") or 0)
    # The terminal's stderr: fd 2 is pytest's capture file during a test.
    stderr = node.config.stash.get(fault_handler_stderr_fd_key, None)
    if timeout > 0 and stderr is not None:
        # pytest's plugin cancels this after the test's teardown, as its own.
        faulthandler.dump_traceback_later(timeout, exit=True, file=stderr)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    timeout = float(os.environ.get(EXIT_TIMEOUT_ENV) or 60)
    if timeout > 0 and sys.__stderr__ is not None:
        faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
