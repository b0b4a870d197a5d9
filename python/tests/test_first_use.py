"""The new-user trial of issue 10, as a user runs it: mistakes made on purpose in scripts
run with ``python script.py`` on the embedded runtime, each checked by the first lines of
what the user sees.

An uncaught error shows the user's frame, then flinkgo's one message (no frame of the
package, no repeated chained message, no runtime log line before it); a UDF's exception
adds the UDF's own frames only. The caret lines Python draws under a source line are
left out of the comparison (they differ between Python versions).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flinkgo import _runtime

# Every script starts with these lines; the line numbers below count from them.
PRELUDE = """\
import pandas as pd
import flinkgo as fg
from flinkgo import udf, col, lit
env = fg.Environment()
"""


@pytest.fixture(scope="module", autouse=True)
def built_runtime() -> None:
    # A checkout builds its runtime on first use and says so on stderr: build it here,
    # so the scripts see what a user of an installed package sees.
    _runtime.find_binary()


def run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def visible(text: str) -> list[str]:
    """The lines of `text` without the caret lines under source lines."""
    return [line for line in text.splitlines() if not re.fullmatch(r"\s*[\^~]+\s*", line)]


def traceback_head(tmp_path: Path, line: int, code: str) -> list[str]:
    """The lines an uncaught error at `line` of the script starts with."""
    return [
        "Traceback (most recent call last):",
        f'  File "{tmp_path / "script.py"}", line {line}, in <module>',
        f"    {code}",
    ]


def no_internal_frames(stderr: str) -> None:
    package = str(Path(__import__("flinkgo").__file__).parent)
    assert package not in stderr, f"flinkgo's own frames are shown:\n{stderr}"


def test_udf_raising_shows_the_users_frames_and_one_message(tmp_path):
    done = run(
        tmp_path,
        """\
        @udf("int64")
        def inverse_distance(x):
            return 1 // (x - 2)

        df = env.from_pandas(pd.DataFrame({"x": [1, 2, 3]}))
        print(df.with_column("y", inverse_distance("x")).to_pandas())
        """,
    )
    assert done.returncode == 1
    assert visible(done.stderr) == [
        *traceback_head(
            tmp_path, 10, 'print(df.with_column("y", inverse_distance("x")).to_pandas())'
        ),
        "flinkgo.exceptions.JobFailedError: job 'collect with_column(y = inverse_distance(x))' "
        'failed: udf "inverse_distance" (operator inverse_distance, subtask 0) raised '
        "ZeroDivisionError on batch 0: integer division or modulo by zero (at row 1 of the "
        "batch, called with (2,))",
        "Traceback (most recent call last):",
        f'  File "{tmp_path / "script.py"}", line 7, in inverse_distance',
        "    return 1 // (x - 2)",
        "ZeroDivisionError: integer division or modulo by zero",
    ]
    no_internal_frames(done.stderr)


def test_unpicklable_udf_is_said_once(tmp_path):
    done = run(
        tmp_path,
        """\
        import threading
        lock = threading.Lock()

        @udf("int64")
        def locked(x):
            with lock:
                return x

        df = env.from_pandas(pd.DataFrame({"x": [1]}))
        df.with_column("y", locked("x")).to_pandas()
        """,
    )
    assert visible(done.stderr) == [
        *traceback_head(tmp_path, 14, 'df.with_column("y", locked("x")).to_pandas()'),
        "flinkgo.exceptions.UdfPickleError: with_column 'y': udf 'locked': the function cannot "
        "be pickled with cloudpickle to ship it to the Python workers: TypeError: cannot pickle "
        "'_thread.lock' object; create objects such as locks, files, sockets and clients inside "
        "the function (or lazily in a module-level cache) instead of capturing them",
    ]
    assert done.stderr.count("cannot pickle") == 1


def test_collect_of_an_endless_source_is_refused(tmp_path):
    done = run(tmp_path, 'print(env.datagen(schema={"x": "int64"}).to_pandas())\n')
    assert visible(done.stderr) == [
        *traceback_head(tmp_path, 5, 'print(env.datagen(schema={"x": "int64"}).to_pandas())'),
        "flinkgo.exceptions.JobFailedError: job 'collect datagen' failed: plan: invalid job "
        'plan "collect datagen": collect sink "collect" reads an endless source "datagen" '
        "(datagen without rows=); collect() would never return: bound it with .limit(n), use "
        "a bounded source, or write to a sink and run env.execute_async()",
    ]


def test_writing_into_a_directory_with_old_output_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "part-1.csv").write_text("x\n9\n")
    done = run(
        tmp_path,
        """\
        env.from_pandas(pd.DataFrame({"x": [1, 2]})).write_csv("out")
        env.execute()
        """,
    )
    assert visible(done.stderr) == [
        *traceback_head(tmp_path, 6, "env.execute()"),
        "flinkgo.exceptions.JobFailedError: job 'flinkgo job' failed: job: the sink "
        '"write_csv(out)" (uid sink-2): sink: the output directory '
        f"{tmp_path / 'out'} already holds 1 file(s) (part-1.csv): to replace them once the "
        'new output is committed, pass mode="overwrite"; to add to them, mode="append"; or '
        "write into an empty or new directory",
    ]


def test_a_lossy_udf_result_is_an_error(tmp_path):
    done = run(
        tmp_path,
        """\
        @udf("int64")
        def half(x):
            return x / 2

        df = env.from_pandas(pd.DataFrame({"x": [2, 5]}))
        df.with_column("h", half("x")).to_pandas()
        """,
    )
    assert visible(done.stderr) == [
        *traceback_head(tmp_path, 10, 'df.with_column("h", half("x")).to_pandas()'),
        "flinkgo.exceptions.JobFailedError: job 'collect with_column(h = half(x))' failed: "
        "python worker (operator half, subtask 0) raised UdfResultError on batch 0: udf 'half' "
        "returned 2.5 at row 1 of the batch, which is not exactly a int64 (its declared return "
        "type); return whole numbers (round them yourself), or declare a float return type",
    ]


def test_a_pandas_udf_returning_a_frame_is_told_to_return_a_series(tmp_path):
    done = run(
        tmp_path,
        """\
        @udf("int64", func_type="pandas")
        def both(x):
            return pd.DataFrame({"a": x, "b": x})

        df = env.from_pandas(pd.DataFrame({"x": [1, 2]}))
        df.with_column("y", both("x")).to_pandas()
        """,
    )
    lines = visible(done.stderr)
    assert lines[:3] == traceback_head(tmp_path, 10, 'df.with_column("y", both("x")).to_pandas()')
    assert lines[3:] == [
        "flinkgo.exceptions.JobFailedError: job 'collect with_column(y = both(x))' failed: "
        "python worker (operator both, subtask 0) raised UdfResultError on batch 0: udf 'both' "
        "(pandas) returned a pandas.DataFrame with columns ['a', 'b']; a scalar pandas UDF "
        "returns a pandas.Series (one value per row): select one column, or use map_batches "
        "for a function that returns whole frames",
    ]


def test_an_unknown_column_names_the_close_match(tmp_path):
    done = run(
        tmp_path,
        """\
        df = env.from_pandas(pd.DataFrame({"email": ["a@b.c"]}))
        df.select("emial").to_pandas()
        """,
    )
    assert visible(done.stderr) == [
        *traceback_head(tmp_path, 6, 'df.select("emial").to_pandas()'),
        "flinkgo.exceptions.ColumnNotFoundError: select: unknown column 'emial'; columns are "
        "['email'] (did you mean 'email'?)",
    ]


def test_a_bad_csv_value_in_the_first_block_names_line_and_column(tmp_path):
    (tmp_path / "sales.csv").write_text("shop,amount\na,1.5\nb,2\nc,xx\n")
    done = run(
        tmp_path,
        """\
        df = env.read_csv("sales.csv", schema={"shop": "string", "amount": "float64"})
        df.to_pandas()
        """,
    )
    # The first block is read when the source is declared, for its schema.
    assert visible(done.stderr) == [
        *traceback_head(
            tmp_path,
            5,
            'df = env.read_csv("sales.csv", schema={"shop": "string", "amount": "float64"})',
        ),
        f"flinkgo.exceptions.SchemaError: read_csv: '{tmp_path / 'sales.csv'}' does not match "
        'the given schema (shop: string, amount: double): line 4, column "amount": cannot '
        'parse "xx" as double',
    ]


def test_a_sink_never_executed_is_warned_about(tmp_path):
    done = run(
        tmp_path,
        """\
        env.from_pandas(pd.DataFrame({"x": [1]})).write_csv("out")
        """,
    )
    assert done.returncode == 0
    (first,) = [line for line in done.stderr.splitlines() if line][:1]
    assert "UnexecutedSinkWarning: flinkgo: 1 sink(s) were defined but never executed" in first


def test_a_udf_called_with_a_column_name_reads_the_column(tmp_path):
    done = run(
        tmp_path,
        """\
        @udf("int64")
        def name_len(s):
            return len(s)

        df = env.from_pandas(pd.DataFrame({"email": ["a@b.c", "longer@x.org"]}))
        print(df.with_column("n", name_len("email")).to_pandas().n.tolist())
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "[5, 12]"
    assert done.stderr == ""


def test_a_second_collect_reuses_the_worker(tmp_path):
    done = run(
        tmp_path,
        """\
        import os

        @udf("int64")
        def pid(x):
            return os.getpid()

        df = env.from_pandas(pd.DataFrame({"x": [1, 2, 3]})).with_column("p", pid("x"))
        print(set(df.to_pandas().p) == set(df.to_pandas().p))
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "True"
