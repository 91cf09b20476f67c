"""What the browser tests drive: the course served by `python -m gpucourse lab` (the README's command) from a
throwaway copy of the checkout, and headless Chromium (Debian's `chromium`) through Playwright.

Facts this relies on (../shared/notes/jupyterlab-and-hub-facts.md): Playwright's own browser download does not
work offline, so it is given `executable_path`; as root Chromium needs `--no-sandbox`; the server needs
`--allow-root` as root and the venv's bin/ on PATH (gpucourse lab sets both); "| Idle" in the status bar is the trustworthy
kernel-idle signal; menu items are found by `data-command`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("GPUCOURSE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("GPUCOURSE_E2E_ARTIFACTS", ROOT / "tests" / "e2e" / "artifacts"))
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
# What a student's checkout holds (tracked folders); copied so that answering a lab never touches this tree.
CHECKOUT_PARTS = ("course", "labs", "solutions", "grader", "gpucourse")


def missing_tools() -> str | None:
    """Why the browser suite cannot run here (None when it can)."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (Debian: apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[e2e]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def make_checkout(dest: Path) -> Path:
    """A student's/instructor's checkout: the course folders of this repository (no venv, no outputs)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "gradebook.db")
    for part in CHECKOUT_PARTS:
        shutil.copytree(ROOT / part, dest / part, ignore=ignore)
    return dest


class LabServer:
    """`python -m gpucourse lab --no-browser ...` run in `checkout` (so `python -m` imports the checkout's own
    gpucourse, and its course_root() is the checkout), with a private HOME, settings and nbgrader exchange."""

    def __init__(self, checkout: Path, home: Path):
        self.checkout, self.home = checkout, home
        self.port, self.token = free_port(), "gpucourse-e2e"
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = home / "jupyterlab.log"

    def _environment(self) -> dict[str, str]:
        settings = self.home / "lab-settings"
        (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True, exist_ok=True)
        # the "get notified about Jupyter news?" toast would cover the status bar
        (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false"}))
        # render every cell (the default windowing renders cells lazily, so off-screen cells are not in the DOM)
        (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True, exist_ok=True)
        (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "none"}))
        exchange = self.home / "exchange"
        exchange.mkdir(exist_ok=True)
        exchange.chmod(0o777)  # nbgrader does not create it; Formgrader warns when it is missing
        config = self.home / "jupyter-config"
        config.mkdir(exist_ok=True)
        (config / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n")
        return {**os.environ, "HOME": str(self.home), "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
                "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTER_CONFIG_PATH": str(config),
                "JUPYTERLAB_WORKSPACES_DIR": str(self.home / "workspaces"), "PYTHONDONTWRITEBYTECODE": "1",
                "PYDEVD_DISABLE_FILE_VALIDATION": "1", "GPUCOURSE_BACKEND": "auto"}

    def start(self, timeout: float = 60) -> float:
        """Start the server; returns the seconds until /api/status answered."""
        cmd = [sys.executable, "-m", "gpucourse", "lab", "--no-browser", f"--port={self.port}", "--ip=127.0.0.1",
               f"--IdentityProvider.token={self.token}"]  # as root, `gpucourse lab` adds --allow-root itself
        t0 = time.monotonic()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.checkout, env=self._environment(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() - t0 < timeout:
            try:
                if http_get(f"{self.base}/api/status?token={self.token}", timeout=2)[0] == 200:
                    return time.monotonic() - t0
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        tail = self.log.read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{tail}")

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}{'&' if '?' in path else '?'}token={self.token}"

    def stop(self) -> None:
        """SIGTERM the process group; SIGKILL it after 10 s (the server sometimes hangs in threading._shutdown)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass


# ---------------------------------------------------------------------------------------------------------
# Browser steps (Playwright page helpers)

def ran_prompts(page) -> list[str]:
    """Prompt texts ('[3]:') of the non-empty code cells of the open notebook."""
    return page.evaluate("""() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')].filter(
        c => (c.querySelector('.cm-content')?.innerText || '').trim() !== '').map(
        c => c.querySelector('.jp-InputArea-prompt').textContent)""")


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


def open_notebook(page, server: LabServer, path: str) -> None:
    """Open a notebook as a student does (JupyterLab's /lab/tree URL) and wait until its kernel is idle."""
    page.goto(server.url(f"lab/tree/{path}"))
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.wait_for(timeout=60_000)
    # JupyterLab adds a long notebook's cells in batches after the first shows (a loaded CI run once looked for a
    # cell that was not there yet): wait until every cell of the file is in the page
    cells = len(json.loads((server.checkout / path).read_text())["cells"])
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell').length >= n",
        arg=cells, timeout=60_000, polling=250)
    wait_idle(page)


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """The status bar says '| Idle' once a kernel exists and is idle (the toolbar indicator lies before that)."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-StatusBar-TextItem')].some(e => /\\|\\s*Idle/.test(e.textContent))",
        timeout=timeout_ms)


def menu_command(page, menu: str, command: str) -> None:
    """Open a main-menu (by its label) and click the item with this data-command."""
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').first.click()


RUN_STATE_JS = """() => {
  const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  // empty cells (e.g. the released lab's hidden-test cells) never get a prompt number
  const cells = [...nb.querySelectorAll('.jp-CodeCell')].filter(
      c => (c.querySelector('.cm-content')?.innerText || '').trim() !== '');
  const prompts = cells.map(c => c.querySelector('.jp-InputArea-prompt').textContent);
  const errors = [...nb.querySelectorAll('.jp-OutputArea-output')].filter(o => /Traceback/.test(o.textContent));
  return {prompts, errors: errors.length,
          started: prompts.some(p => p.includes('*') || /\\[\\d+\\]/.test(p)),
          busy: prompts.some(p => p.includes('*')),
          done: prompts.every(p => /\\[\\d+\\]/.test(p))};
}"""


def run_all_and_wait(page, timeout_ms: int = 300_000) -> None:
    """Clear outputs (stale prompts would satisfy the wait), Run All, wait until every code cell has a prompt
    number or the run stopped at an error, and the kernel is idle again.

    A loaded machine (CI runs this beside the grading tests) can swallow the menu click before the menu is
    live: when no cell has started within 30 s, Run All is chosen again. A run that does not end within
    `timeout_ms` fails with the prompts it reached (which cell hung), not only Playwright's timeout."""
    menu_command(page, "Edit", "editmenu:clear-all")
    menu_command(page, "Run", "runmenu:run-all")
    try:
        page.wait_for_function(f"() => ({RUN_STATE_JS})().started", timeout=30_000, polling=500)
    except Exception:  # playwright's TimeoutError: the click did not start a run
        menu_command(page, "Run", "runmenu:run-all")
    try:
        page.wait_for_function(f"() => {{ const s = ({RUN_STATE_JS})(); return !s.busy && (s.done || s.errors > 0); }}",
                               timeout=timeout_ms, polling=500)
    except Exception as e:
        state = page.evaluate(RUN_STATE_JS)
        screenshot(page, "run-all-timed-out")
        raise AssertionError(f"Run All did not end within {timeout_ms / 1000:.0f} s: prompts {state['prompts']}, "
                             f"{state['errors']} traceback(s) shown (screenshot: run-all-timed-out.png)") from e
    wait_idle(page, timeout_ms)


def replace_cell_source(page, cell, text: str) -> None:
    """Type `text` into a cell as a student would: click into the editor, select all, paste.
    (Pasting keeps the text verbatim; keystrokes would trigger auto-indent and bracket closing.)
    `cell` is an ElementHandle (a locator by text would stop matching once the text changes)."""
    editor = cell.query_selector(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.evaluate("t => navigator.clipboard.writeText(t)", text)
    page.keyboard.press("Control+v")
    typed = editor.inner_text().replace("\u00a0", " ")
    if typed.split() != text.split():
        raise AssertionError(f"the editor holds {typed!r}, not the answer {text!r}")


def validate(page, shot: str, timeout_ms: int = 120_000, inspect=None):
    """Click nbgrader's Validate button; screenshot the 'Validation Results' dialog as `shot`, close it, and
    return its text (and ``inspect(page)``, run while the dialog is open, when given)."""
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar .validate-button").click()
    dialog = page.locator(".jp-Dialog", has_text="Validation Results")
    dialog.wait_for(timeout=timeout_ms)
    page.wait_for_function(
        "() => /passes all the tests|failed|error|Error/.test(document.querySelector('.jp-Dialog')?.innerText || '')",
        timeout=timeout_ms)
    text = dialog.inner_text()
    inspected = inspect(page) if inspect else None
    screenshot(page, shot)
    dialog.locator("button.jp-mod-accept, button:has-text('Ok')").first.click()
    dialog.wait_for(state="detached", timeout=10_000)
    return (text, inspected) if inspect else text


def non_blank_fraction(png: bytes) -> float:
    """Fraction of pixels that differ clearly from the image's most common colour (the background)."""
    import io

    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    flat = img.reshape(-1, 3)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    return float((np.abs(flat - background).sum(axis=1) > 60).mean())
