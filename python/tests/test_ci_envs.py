"""What `make test` (CI) asks of tox: no run of the whole suite twice, every Python smoked.

CI's `.ci/run` took 38 minutes when tox's py311-newest ran the whole pytest suite again
from the wheel (the same Python and newest dependencies as `make py-test`), and each
smoke env installed the whole suite's services (moto, Kafka's client, duckdb, ipython).
"""

import configparser
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]
TESTED_PYTHONS = {"py310", "py311", "py312", "py313"}


def make_test_tox_envs() -> list[str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^TOX_ENVS\s*:=\s*(\S+)\s*$", makefile, re.MULTILINE)
    assert match, "the Makefile names make test's tox envs in TOX_ENVS"
    assert re.search(r"^tox:\n\t.*tox .*-e \$\(TOX_ENVS\)$", makefile, re.MULTILINE)
    return match.group(1).split(",")


def tox_testenv() -> configparser.SectionProxy:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini", encoding="utf-8")
    return tox["testenv"]


def test_make_test_runs_the_whole_suite_once_per_dependency_set():
    envs = make_test_tox_envs()
    # py-test runs the whole suite on the virtualenv's Python 3.11 with the newest
    # releases; a tox env doing the same from the wheel doubles the suite's time.
    assert "py311-newest" not in envs
    assert "py311-lowest" in envs
    assert {env.split("-")[0] for env in envs if env.endswith("-smoke")} == TESTED_PYTHONS


def test_smoke_envs_install_only_what_the_smoke_subset_needs():
    testenv = tox_testenv()
    assert re.search(r"^\s*smoke:\s*test-smoke\s*$", testenv["extras"], re.MULTILINE)
    pyproject = tomllib.loads((REPO / "python" / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    assert "flinkgo[test-smoke]" in extras["test"], "the whole suite's extra includes the smoke's"
    smoke_files = re.findall(r"python\{/\}tests\{/\}(test_\w+\.py)", testenv["commands"])
    assert smoke_files, "tox.ini's smoke command names its test files"
    services = ("moto", "confluent_kafka", "duckdb", "IPython", "kafka_broker", "s3_server")
    for name in smoke_files:
        source = (REPO / "python" / "tests" / name).read_text(encoding="utf-8")
        used = [service for service in services if service in source]
        assert not used, f"{name} is in the smoke subset but uses {used}, not installed there"
