"""Every error of the package is a FlinkgoError and keeps its built-in base."""

import ast
import inspect
import threading
from pathlib import Path

import pandas as pd
import pytest

import flinkgo as fg
from flinkgo import exceptions
from flinkgo.job import JobResult

PACKAGE_DIR = Path(fg.__file__).resolve().parent

BUILTIN_BASES = {
    "InvalidArgumentError": ValueError,
    "ArgumentTypeError": TypeError,
    "ColumnNotFoundError": ValueError,
    "SchemaError": ValueError,
    "ExpressionTypeError": TypeError,
    "UdfPickleError": TypeError,
    "NoSuchFileError": FileNotFoundError,
    "PathIsDirectoryError": IsADirectoryError,
    "PathIsFileError": FileExistsError,
    "InvalidPlanError": ValueError,
    "JobFailedError": RuntimeError,
    "JobCanceledError": RuntimeError,
    "JobTimeoutError": TimeoutError,
    "JobNotFoundError": LookupError,
    "SavepointError": RuntimeError,
    "RescaleError": ValueError,
    "OperatorNotFoundError": KeyError,
    "RuntimeStartError": RuntimeError,
    "RuntimeConnectionError": ConnectionError,
}


def test_every_error_has_the_base_and_its_builtin():
    classes = {
        name: obj
        for name, obj in vars(exceptions).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and not issubclass(obj, Warning)  # warnings are not errors
        and obj is not fg.FlinkgoError
    }
    assert set(classes) == set(BUILTIN_BASES)
    for name, cls in classes.items():
        assert issubclass(cls, fg.FlinkgoError), name
        assert issubclass(cls, BUILTIN_BASES[name]), name
        assert getattr(fg, name) is cls, f"flinkgo.{name} is not exported"


def test_every_exception_class_in_the_package_derives_from_the_base():
    # Scans the source: a new error class anywhere must join the hierarchy.
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if "_proto" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")))
                for b in node.bases
            ):
                found.append((path.name, node.name))
    assert len(found) >= len(BUILTIN_BASES)
    import flinkgo.worker.chain
    import flinkgo.worker.datasocket

    for filename, name in found:
        module = {
            "chain.py": flinkgo.worker.chain,
            "datasocket.py": flinkgo.worker.datasocket,
        }.get(filename, exceptions)
        assert issubclass(getattr(module, name), fg.FlinkgoError), f"{filename}: {name}"


def test_old_import_paths_still_work():
    from flinkgo.expr import ColumnNotFoundError
    from flinkgo.job import InvalidPlanError, JobFailedError

    assert ColumnNotFoundError is fg.ColumnNotFoundError
    assert JobFailedError is fg.JobFailedError
    assert InvalidPlanError is fg.InvalidPlanError


@pytest.mark.parametrize(
    ("make", "error", "builtin"),
    [
        (lambda: fg.col(""), fg.ArgumentTypeError, TypeError),
        (lambda: fg.lit(2**70), fg.InvalidArgumentError, ValueError),
        (lambda: fg.udf(lambda x: x, "no-such-type"), fg.InvalidArgumentError, ValueError),
        (lambda: fg.Environment(parallelism=0), fg.InvalidArgumentError, ValueError),
        (lambda: fg.Environment(endpoint="http://x:1"), fg.InvalidArgumentError, ValueError),
        (
            lambda: fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).select("y"),
            fg.ColumnNotFoundError,
            ValueError,
        ),
        (
            lambda: (
                fg.Environment().from_pandas(pd.DataFrame({"x": ["a"]})).select(fg.col("x") + 1)
            ),
            fg.ExpressionTypeError,
            TypeError,
        ),
        (
            lambda: fg.Environment().from_pandas(pd.DataFrame({"x": [1]})).select("x", fg.col("x")),
            fg.SchemaError,
            ValueError,
        ),
        (
            lambda: fg.Environment().read_csv("/no/such/dir/*.csv"),
            fg.NoSuchFileError,
            FileNotFoundError,
        ),
        (lambda: fg.Environment().read_csv("/"), fg.PathIsDirectoryError, IsADirectoryError),
        (lambda: fg.Environment().plan(), fg.InvalidArgumentError, ValueError),
        (
            lambda: JobResult("j", "1", "FINISHED", 0.0).operator("nope"),
            fg.OperatorNotFoundError,
            KeyError,
        ),
    ],
)
def test_user_mistakes_raise_package_errors(make, error, builtin):
    with pytest.raises(error) as info:
        make()
    assert isinstance(info.value, builtin)
    assert isinstance(info.value, fg.FlinkgoError)


def test_an_existing_file_as_sink_path(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("")
    df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
    with pytest.raises(fg.PathIsFileError) as info:
        df.write_csv(path)
    assert isinstance(info.value, FileExistsError)


def test_unpicklable_udf_in_a_plan():
    lock = threading.Lock()

    @fg.udf("int64")
    def guarded(x):
        with lock:
            return x

    df = fg.Environment().from_pandas(pd.DataFrame({"x": [1]}))
    with pytest.raises(fg.UdfPickleError, match="with_column 'y': udf 'guarded'") as info:
        df.with_column("y", guarded(fg.col("x")))
    assert isinstance(info.value, TypeError)


def test_an_uncaught_error_is_printed_without_flinkgos_frames_and_repeated_causes(capsys):
    import sys

    from flinkgo import _tracebacks

    assert sys.excepthook is _tracebacks._hook  # import flinkgo installed it
    env = fg.Environment()
    lock = threading.Lock()

    @fg.udf("int64")
    def locked(x):
        with lock:
            return x

    with pytest.raises(fg.UdfPickleError) as info:
        env.from_pandas(pd.DataFrame({"x": [1]})).with_column("y", locked("x"))
    error = info.value
    # Caught, the error keeps every frame (for debuggers and logs).
    assert "dataframe.py" in "".join(__import__("traceback").format_tb(error.__traceback__))
    sys.excepthook(type(error), error, error.__traceback__)
    printed = capsys.readouterr().err
    assert str(PACKAGE_DIR) not in printed, printed
    assert printed.count("cannot pickle") == 1, printed
    assert "test_exceptions.py" in printed


def test_an_unpicklable_udf_in_a_pipeline_has_no_repeating_chain():
    # Where no hook trims what is printed (a notebook), the chain must not say it again.
    lock = threading.Lock()

    @fg.udf("int64")
    def locked(x):
        with lock:
            return x

    env = fg.Environment()
    with pytest.raises(fg.UdfPickleError) as info:
        env.from_pandas(pd.DataFrame({"x": [1]})).with_column("y", locked("x"))
    printed = "".join(__import__("traceback").format_exception(info.value))
    assert printed.count("cannot pickle") == 1, printed


def test_ipython_shows_a_flinkgo_error_without_flinkgos_frames():
    # A notebook's kernel is an IPython shell, which prints errors itself and never
    # calls sys.excepthook: import flinkgo registers IPython's custom handler instead.
    import subprocess
    import sys

    cell = (
        "import flinkgo as fg, pandas as pd\n"
        "df = fg.Environment().from_pandas(pd.DataFrame({'x': [1]}))\n"
        "df.select('y')\n"
    )
    script = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance(colors='nocolor')\n"
        f"shell.run_cell({cell!r})\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    printed = run.stdout + run.stderr
    assert "ColumnNotFoundError: select: unknown column 'y'" in printed, printed
    assert "df.select('y')" in printed, printed  # the user's line
    assert str(PACKAGE_DIR) not in printed, printed
