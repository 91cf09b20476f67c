"""The README's first command, verbatim, as this machine's user (root on CI), in a fresh clone and a fresh virtual
environment, until JupyterLab answers. It failed as root ("Running as root is not recommended. Use --allow-root to
bypass.") and nothing noticed: the tests started the server with their own arguments."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gpucourse import colab
from gpucourse.__main__ import root_arguments

ROOT = Path(__file__).resolve().parent.parent
INSTALL_TIMEOUT_S = 1200  # a fresh venv's `pip install -e .`: ~2–6 min here with pip's cache warm (see README)
SERVER_TIMEOUT_S = 120


def setup_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## Set up", 1)[1].split("\n## ", 1)[0]


def first_command() -> str:
    """The first bash block of the README's "Set up" section: the command that opens the course."""
    return re.findall(r"```bash\n(.*?)```", setup_section(), re.S)[0].strip()


def test_readme_says_to_clone_and_cd_into_the_clone():
    section = setup_section()
    url = f"https://github.com/{colab.REPO}"  # the same placeholder the Colab badges and install cells use
    clone = re.search(r"`(git clone [^`]+)`", section)
    assert clone and clone.group(1) == f"git clone {url} && cd {colab.REPO.split('/')[1]}", section[:600]
    assert clone.start() < section.index("```bash"), "the clone comes first, then the command that opens the course"
    assert "gpucourse lab" in first_command()


def test_root_gets_allow_root_once(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0, raising=False)
    assert root_arguments(["--no-browser"]) == ["--allow-root"]
    assert root_arguments(["--allow-root"]) == []
    assert root_arguments(["--ServerApp.allow_root=True"]) == []
    monkeypatch.setattr(os, "geteuid", lambda: 1000, raising=False)
    assert root_arguments([]) == []


def _wait_for(log: Path, proc: subprocess.Popen, pattern: str, seconds: float) -> re.Match:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text(encoding="utf-8", errors="replace"))
        if m:
            return m
        if proc.poll() is not None:
            break
        time.sleep(1)
    tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    pytest.fail(f"no {pattern!r} within {seconds:.0f} s (exit code {proc.poll()}); the command printed:\n{tail}")


@pytest.mark.slow
def test_readme_first_command_opens_the_course(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists() or shutil.which("bash") is None:
        pytest.skip("needs git, bash and a git checkout to clone")
    name = colab.REPO.split("/")[1]
    clone = tmp_path / name
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    home = tmp_path / "home"
    home.mkdir()
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV", "GPUCOURSE")) and k != "PATH"}
    # an activated fresh venv; BROWSER=true: the server "opens" its URL with `true` instead of a real browser
    env = {**keep, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(venv),
           "HOME": str(home), "BROWSER": "true", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    command = first_command()
    log = tmp_path / "first-command.log"
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        _wait_for(log, proc, r"opening the course:", INSTALL_TIMEOUT_S)
        installed = time.monotonic() - start
        url = _wait_for(log, proc, r"(http://(?:127\.0\.0\.1|localhost):\d+)/lab\?token=(\w+)", SERVER_TIMEOUT_S)
        base, token = url.group(1), url.group(2)
        with urllib.request.urlopen(f"{base}/api/contents/course?token={token}", timeout=30) as r:
            assert r.status == 200 and b"01_blas_roofline.ipynb" in r.read()
        answered = time.monotonic() - start
        text = log.read_text(encoding="utf-8", errors="replace")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            assert "running as root" in text and "--allow-root" in text
        assert "Running as root is not recommended" not in text
        print(f"\nREADME first command: pip install -e . in a fresh venv {installed:.0f} s, server answered at "
              f"{answered:.0f} s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
