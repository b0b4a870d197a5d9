"""The guards that turn a hung test run into a failure with every thread's stack.

Each case runs pytest in a child process on a scripted hang and checks that the run
ends (bounded by subprocess.run's timeout), fails, and shows where it hung.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")
POLLING = Path(__file__).with_name("_polling.py")  # the conftest imports it


def run_pytest(tmp_path: Path, test_code: str, *options: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    shutil.copy(POLLING, tmp_path / "_polling.py")
    (tmp_path / "test_hang.py").write_text(test_code)
    env = dict(os.environ, FLINKGO_TEST_EXIT_TIMEOUT="2")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "test_hang.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # the guard under test failed if this expires
        check=False,
    )


def test_a_thread_that_blocks_interpreter_exit_ends_the_run_with_its_stack(tmp_path):
    # A non-daemon thread that never ends (as a gRPC server's pool thread in a handler
    # that never returns): the interpreter waits for it after the last test, where no
    # test timeout applies.
    result = run_pytest(
        tmp_path,
        "import threading\n"
        "def blocked_forever():\n"
        "    threading.Event().wait()\n"
        "def test_leaves_a_thread():\n"
        "    threading.Thread(target=blocked_forever).start()\n",
    )
    assert "1 passed" in result.stdout
    assert result.returncode == 1, result
    assert "blocked_forever" in result.stderr, result.stderr


def test_a_test_blocked_where_no_signal_handler_runs_ends_the_run_with_its_stack(tmp_path):
    # pytest-timeout's signal method cannot end a main thread that never returns to the
    # interpreter (here: SIGALRM blocked in it, as a call blocked in C); the faulthandler
    # watchdog of the project's settings does.
    result = run_pytest(
        tmp_path,
        "import signal, time\n"
        "def test_blocked():\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
        "    time.sleep(600)\n",
        "-o",
        "timeout=1",
        "-o",
        "timeout_method=signal",
        "-o",
        "faulthandler_timeout=3",
        "-o",
        "faulthandler_exit_on_timeout=true",
    )
    assert result.returncode == 1, result
    assert "test_blocked" in result.stderr, result.stderr


def test_a_failed_test_whose_teardown_hangs_ends_the_run_with_its_stack(tmp_path):
    # A failure cancels pytest-timeout and pytest's faulthandler timeout before the
    # teardown (pytest_exception_interact); the conftest arms the watchdog again.
    result = run_pytest(
        tmp_path,
        "import threading, pytest\n"
        "@pytest.fixture\n"
        "def teardown_blocks():\n"
        "    yield\n"
        "    threading.Event().wait()\n"
        "def test_fails(teardown_blocks):\n"
        "    assert False\n",
        "-o",
        "timeout=1",
        "-o",
        "faulthandler_timeout=3",
        "-o",
        "faulthandler_exit_on_timeout=true",
    )
    assert result.returncode == 1, result
    assert "teardown_blocks" in result.stderr, result.stderr
