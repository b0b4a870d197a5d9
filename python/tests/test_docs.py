"""The examples in the docstrings run and show what they claim."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    [
        "flinkgo",
        "flinkgo.exceptions",
        "flinkgo.udfs",
        "flinkgo.types",
        "flinkgo.expr",
        "flinkgo.aggregates",
        "flinkgo.windows",
        "flinkgo.dataframe",
        "flinkgo.environment",
        "flinkgo.job",
        "flinkgo.plan",
        "flinkgo._client",
        "flinkgo.job_client",
    ],
)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0
