"""`python -m gpucourse lab` (the README's main command) starts JupyterLab on the course, with nbgrader's
extension and the course's nbgrader config (Formgrader lists the labs)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 10) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port, token = free_port(), "gpucourse-test"
    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "HOME": str(home), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    cmd = [sys.executable, "-m", "gpucourse", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--IdentityProvider.token={token}"]  # as root, `gpucourse lab` adds --allow-root itself
    proc = subprocess.Popen(cmd, cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if get(f"{base}/api/status?token={token}")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited: {proc.stdout.read().decode()[-2000:]}")
            time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer within 60 s")
        yield base, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow
def test_lab_serves_the_course_folder(server):
    base, token = server
    status, body = get(f"{base}/api/contents/course?token={token}")
    assert status == 200
    names = {item["name"] for item in json.loads(body)["content"]}
    assert "01_blas_roofline.ipynb" in names


@pytest.mark.slow
def test_nbgrader_extension_is_enabled(server):
    base, token = server
    status, body = get(f"{base}/lab?token={token}")
    assert status == 200
    assert "@jupyter/nbgrader" in body, "nbgrader's JupyterLab extension is not installed/enabled"


@pytest.mark.slow
def test_formgrader_uses_the_course_config(server):
    base, token = server
    status, body = get(f"{base}/formgrader/api/assignments?token={token}", timeout=120)  # first call creates the gradebook
    assert status == 200, body[:500]
    data = json.loads(body)  # a list of assignments (source folders of solutions/ and their release state)
    names = {a["name"] for a in data}
    assert "lab01_blas_roofline" in names, f"formgrader does not see the course's labs: {names}"
