"""file: URIs name local paths (issue 29, item 8).

``file:///tmp/x`` used to become the relative directory ``./file:/tmp/x``: a sink wrote
there and a source looked there.
"""

from __future__ import annotations

import pandas as pd
import pytest

import flinkgo as fg
from flinkgo._sources import local_path
from flinkgo.exceptions import InvalidArgumentError


def test_a_file_uri_is_the_path_it_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = fg.Environment(parallelism=1)
    out = tmp_path / "out dir"
    env.from_pandas(pd.DataFrame({"x": [1, 2, 3]})).write_csv(
        "file://" + str(out).replace(" ", "%20")
    )
    assert env.execute("write").state == "FINISHED"
    assert not (tmp_path / "file:").exists(), "the URI was taken as a relative path"
    parts = [p for p in out.iterdir() if p.name.startswith("part-")]
    assert parts, f"no part file in {out}"

    back = env.read_csv(f"file://localhost{parts[0]}", schema={"x": "int64"}).to_pandas()
    assert sorted(back["x"]) == [1, 2, 3]


@pytest.mark.parametrize("uri", ["file://otherhost/x", "file:relative/x", "file:///x?q=1"])
def test_a_file_uri_of_another_host_or_relative_is_refused(uri):
    with pytest.raises(InvalidArgumentError, match="file:///absolute/path"):
        local_path("write_csv", uri)
    env = fg.Environment(parallelism=1)
    with pytest.raises(InvalidArgumentError, match="not a local file URI"):
        env.from_pandas(pd.DataFrame({"x": [1]})).write_csv(uri)


def test_plain_paths_are_left_alone():
    assert local_path("read_csv", "/a/b") == "/a/b"
    assert local_path("read_csv", "rel/file:x") == "rel/file:x"
    assert local_path("read_csv", "FILE:///a%2Bb") == "/a+b"
