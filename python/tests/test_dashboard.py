"""The embedded runtime serves the REST API and the web dashboard when a job sets rest.port.

The browser test of the dashboard itself is Go's (integration/dashboard_test.go, in a
headless Chromium); this one checks the embedded runtime's side: the page, its script and
its Content-Security-Policy at the port the job asked for, the job in Flink's
/jobs/overview, and the REST cancel the dashboard's button sends.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest
from _polling import wait_until

import flinkgo as fg
from flinkgo import _runtime


@pytest.fixture(autouse=True)
def runtime():
    try:
        return _runtime.local_runtime()
    except fg.RuntimeStartError as e:
        pytest.fail(f"the flinkgo runtime cannot be built or started:\n{e}", pytrace=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], str]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_embedded_runtime_serves_the_dashboard_at_the_jobs_rest_port(tmp_path):
    port = free_port()
    env = fg.Environment(config={"rest.port": str(port)})
    env.datagen(schema={"x": "int64"}, rows_per_second=200).write_csv(str(tmp_path / "out"))
    job = env.execute_async("dashboard embedded")
    base = f"http://127.0.0.1:{port}"
    try:
        # The REST server starts with the job; the job is RUNNING once deployed.
        wait_until(
            lambda: fetch(f"{base}/jobs/{job.job_id}/status")[2] == '{"status":"RUNNING"}\n',
            "the job to run",
            timeout=120,
        )
        status, headers, page = fetch(base + "/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "<title>flinkgo dashboard</title>" in page
        assert '<script src="/static/app.js" defer></script>' in page
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe" not in csp
        status, _, script = fetch(base + "/static/app.js")
        assert status == 200 and "textContent" in script

        status, _, body = fetch(base + "/jobs/overview")
        jobs = {j["jid"]: j for j in json.loads(body)["jobs"]}
        assert jobs[job.job_id]["name"] == "dashboard embedded"
        assert jobs[job.job_id]["state"] == "RUNNING"

        # What the dashboard's cancel button sends (no rest.auth-token: no token).
        status, _, _ = fetch(f"{base}/jobs/{job.job_id}?mode=cancel", method="PATCH")
        assert status == 202
        with pytest.raises(fg.JobCanceledError):
            job.result(timeout=120)
        status, _, body = fetch(f"{base}/jobs/{job.job_id}/status")
        assert json.loads(body)["status"] == "CANCELED"
    finally:
        if not job.done():
            job.cancel()
