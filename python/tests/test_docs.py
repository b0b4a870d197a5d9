"""The examples in the docstrings run and show what they claim."""

import doctest
import importlib

import pytest


# By module name: the attribute flinkgo.udf is the decorator, which shadows the submodule.
@pytest.mark.parametrize(
    "name",
    [
        "flinkgo",
        "flinkgo.udf",
        "flinkgo.types",
        "flinkgo.expr",
        "flinkgo.aggregates",
        "flinkgo.dataframe",
        "flinkgo.environment",
        "flinkgo.job",
        "flinkgo.client",
        "flinkgo.job_client",
    ],
)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0
