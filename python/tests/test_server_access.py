"""Who may use a ``flinkgo serve`` server: the token of a TCP server and the allowed paths.

These tests start the real binary (``flinkgo serve --listen 127.0.0.1:0``) and talk to it
through :class:`flinkgo.Environment`.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pandas as pd
import pytest

import flinkgo as fg
from flinkgo import _runtime


class Served:
    def __init__(self, proc: subprocess.Popen[bytes], endpoint: str, token_file: str) -> None:
        self.proc, self.endpoint, self.token_file = proc, endpoint, token_file

    @property
    def token(self) -> str:
        with open(self.token_file) as f:
            return f.read().strip()


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.delenv("FLINKGO_TOKEN", raising=False)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    token_file = tmp_path / "token"
    env = dict(os.environ)
    env.update(
        FLINKGO_PYTHON=sys.executable,
        PYTHONPATH=_runtime.worker_pythonpath(),
        XDG_RUNTIME_DIR=str(tmp_path),
    )
    env.pop("FLINKGO_ALLOW_PATH", None)
    args = [_runtime.find_binary(), "serve", "--listen", "127.0.0.1:0"]
    args += ["--token-file", str(token_file), "--allow-path", str(allowed)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        line = _ready_line(proc, deadline=time.monotonic() + 60)
        endpoint = line.removeprefix(_runtime.READY_PREFIX).strip()
        yield Served(proc, endpoint, str(token_file))
    finally:
        proc.terminate()
        proc.wait(30)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()


def _ready_line(proc: subprocess.Popen[bytes], deadline: float) -> str:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.1)[0]:
            line = proc.stdout.readline().decode()
            if line.startswith(_runtime.READY_PREFIX):
                return line
            if not line:
                break
    assert proc.stderr is not None
    pytest.fail(f"flinkgo serve did not start: {proc.stderr.read1(1 << 16).decode()}")


def _rows(env: fg.Environment) -> list[int]:
    return env.from_pandas(pd.DataFrame({"x": [1, 2, 3]})).collect().column("x").to_pylist()


def test_the_token_gets_a_job_through(server):
    assert _rows(fg.Environment(endpoint=server.endpoint, token=server.token)) == [1, 2, 3]


def test_flinkgo_token_variable(server, monkeypatch):
    monkeypatch.setenv("FLINKGO_TOKEN", server.token)
    assert _rows(fg.Environment(endpoint=server.endpoint)) == [1, 2, 3]


@pytest.mark.parametrize("token", [None, "wrong"])
def test_without_the_token_the_job_is_refused_and_told_where_the_token_is(server, token):
    env = fg.Environment(endpoint=server.endpoint, token=token)
    with pytest.raises(fg.RuntimeConnectionError, match="refused the call's credentials") as info:
        _rows(env)
    message = str(info.value)
    assert server.token_file in message
    assert "Environment(token=" in message
    assert server.token not in message


def test_a_path_outside_the_allowed_directories_fails_the_job(server, tmp_path):
    env = fg.Environment(endpoint=server.endpoint, token=server.token)
    outside = tmp_path / "outside"
    env.from_pandas(pd.DataFrame({"x": [1]})).write_csv(str(outside))
    with pytest.raises(fg.JobFailedError) as info:
        env.execute("escape")
    message = str(info.value)
    assert str(outside) in message
    assert str(tmp_path / "allowed") in message
    assert "--allow-path" in message
    assert not outside.exists()

    inside = tmp_path / "allowed" / "out"
    env.from_pandas(pd.DataFrame({"x": [1]})).write_csv(str(inside))
    env.execute("stays inside")
    assert inside.is_dir()
