"""Stage 3, nbgrader autograde with the kernel in the sandbox.

Each job is a private nbgrader course root (a copy of the lab's template gradebook, so parallel jobs
never share a database). nbgrader runs *outside* the sandbox, as the instructor; only its kernel
runs inside: a kernelspec whose argv wraps :mod:`grader.pipeline.sandbox_kernel` in
:class:`grader.sandbox.Sandbox`, talking to nbgrader over IPC sockets in the job's runtime folder
(the sandbox has no network). Locked cells are restored from the gradebook; deleted test cells are
re-added (``OverwriteCells.add_missing_cells``).

What the kernel can see of the job: its scratch home (also its working directory, ``$TMPDIR`` and
``/tmp``), the IPC folder, and the read-only file of this student's hidden-case seeds. Not the
notebook: nbgrader writes the sanitized notebook — hidden tests included — to ``autograded/``, which
is outside the sandbox (nbgrader talks to the kernel over IPC; the kernel never needs the file).
Outputs are capped as they arrive (:mod:`grader.pipeline.output_cap`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import course
from ..sandbox import Sandbox, run_limited, tail
from .lab import Lab
from .workspace import GRADER_VERSION, Settings, Workspace

KERNEL_NAME = "grade-sandbox"
# nbgrader's own process (trusted, outside the sandbox): address-space limit
NBGRADER_MEMORY_BYTES = 6 << 30


def template(lab: Lab, ws: Workspace) -> Path:
    """grading/.template/<lab>/: nbgrader course root with the lab generated into its own
    gradebook."""
    root = ws.root / ".template" / lab.name
    stamp = root / "stamp"
    key = lab.digest() + GRADER_VERSION
    if stamp.exists() and stamp.read_text() == key:
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "source" / lab.name).mkdir(parents=True)
    shutil.copy2(lab.source_path, root / "source" / lab.name / lab.source_path.name)
    write_config(root, extra="")
    course.nbgrader("generate_assignment", lab.name, "--force", cwd=root, config_dir=root)
    stamp.write_text(key)
    return root


def released_notebook(lab: Lab, ws: Workspace) -> dict:
    """The student version of the lab, as nbgrader generated it in the template."""
    tpl = template(lab, ws)
    return json.loads(
        (tpl / "release" / lab.name / lab.source_path.name).read_text(encoding="utf-8")
    )


def write_config(root: Path, extra: str) -> None:
    config = (course.CONFIG_DIR / "nbgrader_config.py").read_text(encoding="utf-8")
    config += (
        "\n# --- grading job (written by grader.pipeline.autograde) ---\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.source_directory = 'source'\n"
        "c.CourseDirectory.release_directory = 'release'\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root / 'gradebook.db'}'\n"
        "c.OverwriteCells.add_missing_cells = True\n"
        "c.LimitOutput.max_lines = 200\n"
        "c.LimitOutput.max_traceback = 40\n" + extra
    )
    (root / "nbgrader_config.py").write_text(config, encoding="utf-8")


def write_job_config(job: Path, settings: Settings) -> None:
    """The job's nbgrader config: the course's, its folders, the sandboxed kernel, the output caps;
    checked."""
    write_config(
        job,
        extra=(
            f"c.Execute.kernel_name = {KERNEL_NAME!r}\nc.Execute.timeout ="
            f" {settings.cell_timeout}\nc.Execute.startup_timeout ="
            " 60\nc.Execute.interrupt_on_timeout = True\nc.Execute.raise_on_iopub_timeout ="
            " False\nc.Execute.kernel_manager_class ="
            " 'grader.pipeline.autograde.SandboxKernelManager'\nfrom grader.pipeline.autograde"
            " import cell_started\nc.Execute.on_cell_start = cell_started\nfrom"
            " nbgrader.converters import Autograde as _Autograde\nfrom grader.pipeline.output_cap"
            " import capped_preprocessors as _capped\nc.Autograde.autograde_preprocessors ="
            " _capped(_Autograde.class_traits()['autograde_preprocessors'].default())\n"
        ),
    )
    check_config(job)


CONFIG_ERROR = "Exception while loading config file"


def check_config(root: Path) -> None:
    """Load the job's nbgrader config here first: nbgrader logs an error in it and carries on
    without the rest of the file (the kernel's sandbox, the output caps), so a broken config must
    stop the job instead."""
    from traitlets.config.loader import PyFileConfigLoader

    try:
        PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    # any error in our own config is a grader bug: fail the job loudly
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError(
            f"the grading job's nbgrader config is broken ({type(exc).__name__}: {exc})"
        ) from exc


@dataclass
class NbgraderRun:
    # test cell -> nbgrader's score; None when nbgrader did not finish
    scores: dict[str, float] | None
    notebook: Path | None            # the executed notebook (None when nbgrader wrote none)
    issue: str | None                # why nbgrader did not finish
    seconds: float


def run_nbgrader(lab: Lab, job: Path, student: str, nb: dict, sandbox: Sandbox, settings: Settings,
                 readonly: list[Path], extra_env: dict[str, str]) -> NbgraderRun:
    """nbgrader autograde of one cleaned submission in the job folder, its kernel in ``sandbox``."""
    sub_dir = job / "submitted" / student / lab.name
    sub_dir.mkdir(parents=True)
    (sub_dir / f"{lab.notebook}.ipynb").write_text(
        json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    home, runtime, scratch = job / "home", job / "runtime", job / "tmp"
    # AF_UNIX socket paths stop at 107 bytes: keep the kernel's IPC sockets short
    if len(str(runtime)) > 60:
        runtime = Path(tempfile.mkdtemp(prefix="grader-ipc-", dir="/tmp"))
    try:
        # the slot's process limit, whole (an earlier job's kernel may still be exiting)
        sandbox.reap()
        sandbox.prepare(home, runtime)
        scratch.mkdir()
        python = str(Path(sys.executable).parent / "python")
        kernel = job / "share" / "kernels" / KERNEL_NAME
        kernel.mkdir(parents=True)
        # the kernel's working directory is its scratch home: the notebook nbgrader executes is not
        # in its view
        mark = runtime / "sandboxed-kernel-started"
        argv = sandbox.wrap(
            [python, "-m", "grader.pipeline.sandbox_kernel", "-f", "{connection_file}"],
            [home, runtime],
            home,
            readonly=readonly,
            env={"NBGRADER_EXECUTION": "autograde", "GRADER_KERNEL_MARK": str(mark), **extra_env},
        )
        (kernel / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": argv,
                    "display_name": "sandbox",
                    "language": "python",
                    "interrupt_mode": "message",
                }
            )
        )
        write_job_config(job, settings)
        env = course.nbgrader_env(job)
        # nbgrader does not need it (and its kernel gets a clean env)
        env.pop("GPUCOURSE_GRADING_SECRET", None)
        env.update(
            JUPYTER_PATH=str(job / "share"),
            JUPYTER_RUNTIME_DIR=str(runtime),
            JUPYTER_DATA_DIR=str(job / "share"),
            IPYTHONDIR=str(job / "ipython"),
            GRADER_RUNTIME_DIR=str(runtime),
            GRADER_JOB_DIR=str(job),
            TMPDIR=str(scratch),
            GRADER_SANDBOX_UID=str(sandbox.uid or ""),
        )
        t0 = time.monotonic()
        rc, timed_out = run_limited(
            [
                sys.executable,
                "-m",
                "nbgrader",
                "autograde",
                lab.name,
                f"--student={student}",
                "--create",
                "--force",
            ],
            job,
            env,
            settings.limits.wall_s,
            job / "nbgrader.log",
            memory=NBGRADER_MEMORY_BYTES,
        )
        seconds = round(time.monotonic() - t0, 2)
        kernel_started = mark.exists()
    finally:
        if runtime != job / "runtime":
            shutil.rmtree(runtime, ignore_errors=True)
    log = tail(job / "nbgrader.log", 1 << 20)
    # nbgrader only logs it, and goes on with its defaults: an unsandboxed kernel
    if CONFIG_ERROR in log:
        raise RuntimeError(
            f"nbgrader could not load the job's configuration: see {job / 'nbgrader.log'}"
        )
    autograded = job / "autograded" / student / lab.name / f"{lab.notebook}.ipynb"
    if autograded.exists() and not kernel_started:
        raise RuntimeError(
            "the sandboxed kernel never started (nbgrader ran another kernel, or this one failed "
            f"to start): see {job / 'nbgrader.log'}"
        )
    if rc == 0 and autograded.exists():
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{job / 'gradebook.db'}") as gb:
            sub = gb.find_submission_notebook(lab.notebook, lab.name, student)
            scores = {g.name: float(g.score or 0.0) for g in sub.grades}
        return NbgraderRun(scores, autograded, None, seconds)
    why = "timed out" if timed_out else f"exited with status {rc}"
    log = log[-4000:]
    hint = (
        "a cell ran past its time limit and ignored the interrupt: the kernel was killed"
        if (job / "interrupt-ignored").exists()
        else (
            "the kernel died (exit, crash, or memory)"
            if re.search(r"[Dd]ead ?[Kk]ernel|Kernel died", log)
            else "a cell ran too long" if "Timeout" in log or timed_out else "see the log"
        )
    )
    return NbgraderRun(None, autograded if autograded.exists() else None,
                       f"nbgrader could not finish this notebook ({why}: {hint})", seconds)


# --------------------------------------------------------------------------------------------------
# Inside nbgrader's process (named by the job's config)
# --------------------------------------------------------------------------------------------------

def _kernel_manager_class():
    """An AsyncKernelManager that talks to the kernel over IPC sockets in the job's runtime folder
    (the sandbox has no network, so TCP cannot connect). nbgrader names it through
    ``Execute.kernel_manager_class``."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class SandboxKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_default(self) -> str:
            return os.path.join(os.environ["GRADER_RUNTIME_DIR"], "kernel")

        @default("connection_file")
        def _connection_file_default(self) -> str:
            return os.path.join(os.environ["GRADER_RUNTIME_DIR"], "kernel-connection.json")

        async def _async_interrupt_kernel(self) -> None:
            # nbclient interrupts a cell at its timeout. Code that ignores SIGINT keeps the kernel
            # busy, and every later cell times out in turn (cell timeout x cells). So the second
            # timeout in a notebook kills the kernel: nbgrader stops at once (DeadKernelError) and
            # the out-of-process check grades what it can.
            _CELL_INTERRUPTS[0] += 1
            if _CELL_INTERRUPTS[0] >= 2:
                Path(os.environ["GRADER_JOB_DIR"]).joinpath("interrupt-ignored").write_text(
                    str(_CELL_INTERRUPTS[1])
                )
                await self._async_kill_kernel()
                return
            await super()._async_interrupt_kernel()

        interrupt_kernel = _async_interrupt_kernel

        def write_connection_file(self, **kwargs: Any) -> None:
            super().write_connection_file(**kwargs)
            uid = os.environ.get("GRADER_SANDBOX_UID")
            if uid:  # the kernel runs as the sandbox user: it must read its (0600) connection file
                os.chown(self.connection_file, int(uid), int(uid))

    return SandboxKernelManager


# interrupts sent in this notebook, the running cell's index (one notebook per process)
_CELL_INTERRUPTS = [0, -1]


def cell_started(cell: Any = None, cell_index: int = -1, **_: Any) -> None:
    """nbclient's ``on_cell_start`` hook (set in the job's nbgrader config): remember which cell
    runs."""
    _CELL_INTERRUPTS[1] = cell_index


def __getattr__(name: str):  # lazy: importing this module must not import jupyter_client
    if name == "SandboxKernelManager":
        return _kernel_manager_class()
    raise AttributeError(name)
