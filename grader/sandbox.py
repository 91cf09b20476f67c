"""The sandbox student code runs in while it is graded (Linux, no Docker).

:class:`Sandbox` turns a command into one that runs

- in **bubblewrap** (``bwrap``, Debian package ``bubblewrap``) with its own network namespace (no
  network, not even the host's loopback), pid, IPC and UTS namespaces, and a *new* root file system
  that holds only what Python needs, read-only: ``/usr``, ``/etc``, the Python installation, the
  virtual environment and the course's two packages ``gpucourse/`` and ``grader/``. ``solutions/``,
  the gradebook, the grading folder, other students' submissions, ``/root`` and ``/home`` do not
  exist inside. The only writable places are the job's scratch folders (bound at their real paths;
  ``/tmp`` and ``$HOME`` point into scratch);
- as an **unprivileged user** (one uid per parallel slot, 64000 + slot, when the grader runs as
  root), with no capabilities and ``no_new_privs``, so ``RLIMIT_NPROC`` caps that user's processes;
- under **resource limits** (``prlimit``): CPU seconds, address space (memory), processes + threads,
  file size (what it can write per file, and so output files), open files, no core dumps; the caller
  adds a wall-clock timeout; pinned to a few CPUs per slot (``taskset``), which also bounds thread
  pools sized by the CPU count.

Without ``bwrap`` it falls back to ``unshare --net --pid --ipc --uts --fork`` + ``prlimit`` (network
and pid isolation and limits, but **no file-system isolation**, and no per-slot user when that user
could not reach the Python installation) and says so loudly on stderr of the grading command.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository (course) root
ANSWERS = ROOT / "grader" / "answers"  # the answer side: hidden (an empty tmpfs) in every sandbox
# sandbox users: UID_BASE + slot (never a real account on a course server). Two grading commands
# running at once on one machine (two classes, or two test files) each need their own range: the
# process limit is per user
UID_BASE = int(os.environ.get("GPUCOURSE_SANDBOX_UID_BASE", "64000"))


# Processes + threads of one grading slot: RLIMIT_NPROC of the slot's user (Linux counts every
# thread as a task). Honest lab solutions peak at a few dozen tasks per slot on its CPUs (README,
# "How a submission is graded").
TIGHT_PROCESSES = 64
SIMULATOR_PROCESSES = 2048
# numba's CUDA simulator runs one OS thread per simulated CUDA thread (a 1024-thread block: over
# 1024 tasks), which needed SIMULATOR_PROCESSES. The CPU backend's `cuda` is now the course's
# executor (gpucourse.simt), which runs every CUDA thread as a greenlet in the caller's thread, so
# the cap is tight (GPUCOURSE_CUDA_SIM=numba brings numba's simulator back, and with it the need for
# --processes 2048). tests/test_sandbox.py::test_default_process_cap_fits_the_kernel_executor
# measures a launch's OS threads.
KERNELS_NEED_OS_THREADS = False
DEFAULT_PROCESSES = SIMULATOR_PROCESSES if KERNELS_NEED_OS_THREADS else TIGHT_PROCESSES
# CPUs each slot's processes are pinned to: thread pools sized by the CPU count (JAX's CPU client:
# about three threads per CPU) then stay within the tight cap on a many-core server, and slots share
# the CPUs evenly
CPUS_PER_SLOT = 2


@dataclass(frozen=True)
class Limits:
    """Per-process limits inside the sandbox (units in the names)."""

    # CPU seconds (RLIMIT_CPU): a busy loop dies even if it ignores signals
    cpu_s: int = 120
    memory_bytes: int = 3 << 30  # address space (RLIMIT_AS): NumPy/JAX raise MemoryError past it
    # RLIMIT_NPROC for the sandbox user: stops fork and thread bombs
    processes: int = DEFAULT_PROCESSES
    file_bytes: int = 64 << 20  # largest file it may write (RLIMIT_FSIZE)
    open_files: int = 256       # RLIMIT_NOFILE
    # whole-job wall-clock limit, enforced by the caller (subprocess timeout)
    wall_s: float = 300.0
    cpus: int = CPUS_PER_SLOT   # CPUs the slot is pinned to (0: not pinned)


def _python_dirs() -> list[Path]:
    """Folders the interpreter needs: the base installation behind the venv, the venv itself."""
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(Path(p).resolve())
    # the venv's python is a symlink chain into the base installation
    dirs.add(Path(sys.executable).resolve().parent.parent)
    # site-packages folders that .pth files add (a venv layered on another environment's packages);
    # only
    # *-packages folders: sys.path can also hold the working directory, i.e. the course with its
    # solutions/
    for entry in sys.path:
        p = Path(entry) if entry else None
        if p and p.is_dir() and p.name in ("site-packages", "dist-packages"):
            dirs.add(p.resolve())
    # a relocated interpreter's shared libraries (LD_LIBRARY_PATH, passed on by Sandbox.env)
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if entry and Path(entry).is_dir():
            dirs.add(Path(entry).resolve())
    out: list[Path] = []
    for d in sorted(dirs, key=lambda p: len(p.parts)):
        if not any(d == o or o in d.parents for o in out) and str(d) not in ("/", "/usr"):
            out.append(d)
    return out


def python_reachable_by_others() -> bool:
    """Whether a user other than the owner can run this Python and read the venv (every parent
    folder o+x)."""
    for target in {
        Path(sys.executable).resolve(),
        Path(sys.prefix).resolve(),
        Path(sys.base_prefix).resolve(),
    }:
        for d in [*reversed(target.parents)]:
            if not d.stat().st_mode & 0o001:
                return False
    return True


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """bwrap's path when it is installed *and works here* (it needs root or unprivileged user
    namespaces, which some distributions restrict), else None: the caller then falls back to unshare
    and says so."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    try:
        ok = (
            subprocess.run(
                [
                    path,
                    "--ro-bind",
                    "/",
                    "/",
                    "--unshare-net",
                    "--unshare-pid",
                    "--die-with-parent",
                    "/bin/true",
                ],
                capture_output=True,
                timeout=30,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return path if ok else None


@dataclass
class Sandbox:
    """How to run a command for one grading slot. ``writable`` folders are the job's scratch
    space."""

    limits: Limits = field(default_factory=Limits)
    slot: int = 0
    readonly: tuple[Path, ...] = ()   # extra read-only binds (e.g. a job's input files)
    use_bwrap: bool | None = None     # None: bwrap when installed

    @property
    def uid(self) -> int | None:
        """Unprivileged user for this slot when the grader runs as root, else None (keep the
        caller's uid). Without bwrap the sandbox user sees the real file system: if it cannot reach
        the interpreter (e.g. a Python under /root, mode 0700) the fallback keeps the caller's uid
        and :func:`warn_if_weak` says so."""
        if os.geteuid() != 0:
            return None
        if not self._bwrap() and not python_reachable_by_others():
            return None
        return UID_BASE + self.slot

    @property
    def kind(self) -> str:
        return "bwrap" if self._bwrap() else "unshare"

    def _bwrap(self) -> bool:
        return bool(bwrap_path()) if self.use_bwrap is None else self.use_bwrap

    def leftovers(self) -> list[int]:
        """Process ids still running as this slot's user (an earlier command's kernel that is still
        exiting, or what a submission left behind): they count against the slot's process limit."""
        if self.uid is None:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                status = (entry / "status").read_text()
            except OSError:  # it ended while we looked
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            uids = fields.get("Uid", "").split()
            # a zombie is dead already: its parent (ours, or the sandbox's init) releases it,
            # nothing can kill it
            if (
                uids
                and int(uids[0]) == self.uid
                and not fields.get("State", "").strip().startswith("Z")
            ):
                found.append(int(entry.name))
        return found

    def reap(self, timeout: float = 30.0) -> list[int]:
        """Kill what still runs as this slot's user and wait (up to ``timeout`` s) until it is gone,
        so that the next command starts with the slot's whole process limit. Returns what was still
        there at the end."""
        deadline = time.monotonic() + timeout
        while (pids := self.leftovers()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.1)
        return self.leftovers()

    def prepare(self, *writable: Path) -> None:
        """Create scratch folders and hand them to the sandbox user."""
        for d in writable:
            d.mkdir(parents=True, exist_ok=True)
            if self.uid is not None:
                for p in [d, *d.rglob("*")]:
                    os.chown(p, self.uid, self.uid, follow_symlinks=False)

    def env(self, home: Path, extra: dict[str, str] | None = None) -> list[str]:
        """A clean environment (nothing of the grader's environment leaks in), as ``env -i``
        arguments."""
        venv_bin = str(Path(sys.executable).parent)
        values = {
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(home),
            "MPLCONFIGDIR": str(home / ".mpl"),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            # the course packages the grader itself runs (ROOT/gpucourse, ROOT/grader: the only
            # parts of ROOT bound inside the sandbox), whatever an installed copy or editable finder
            # would point at
            "PYTHONPATH": str(ROOT),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "JAX_PLATFORMS": "cpu",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
            **(extra or {}),
        }
        # the interpreter itself may need it (a relocated copy)
        if os.environ.get("LD_LIBRARY_PATH"):
            values.setdefault("LD_LIBRARY_PATH", os.environ["LD_LIBRARY_PATH"])
        return ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in values.items())]

    def limit_args(self) -> list[str]:
        lim = self.limits
        return [
            "/usr/bin/prlimit",
            f"--cpu={lim.cpu_s}",
            f"--as={lim.memory_bytes}",
            f"--nproc={lim.processes}",
            f"--fsize={lim.file_bytes}",
            f"--nofile={lim.open_files}",
            "--core=0",
            "--",
        ]

    def cpu_list(self) -> list[int]:
        """The CPUs this slot is pinned to ([] when pinning would not narrow anything):
        ``limits.cpus`` of the CPUs the grader may use, a different window per slot."""
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        k = min(self.limits.cpus, len(allowed))
        if k <= 0 or k >= len(allowed) or not shutil.which("taskset"):
            return []
        return sorted({allowed[(self.slot * k + i) % len(allowed)] for i in range(k)})

    def affinity_args(self) -> list[str]:
        cpus = self.cpu_list()
        return (
            [shutil.which("taskset") or "taskset", "-c", ",".join(map(str, cpus))] if cpus else []
        )

    def user_args(self) -> list[str]:
        if self.uid is None:
            return []
        return ["/usr/bin/setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]

    def wrap(self, argv: list[str], writable: list[Path], cwd: Path, home: Path | None = None,
             env: dict[str, str] | None = None, readonly: list[Path] = ()) -> list[str]:
        """``argv`` as run inside the sandbox: namespaces, file system, user, limits, clean
        environment. ``readonly``: extra files or folders bound read-only (at their real paths) for
        this command."""
        home = home or writable[0]
        inner = [
            *self.user_args(),
            *self.limit_args(),
            *self.affinity_args(),
            *self.env(home, env),
            *argv,
        ]
        if not self._bwrap():
            return [
                "/usr/bin/unshare",
                "--net",
                "--pid",
                "--ipc",
                "--uts",
                "--fork",
                "--kill-child",
                *inner,
            ]
        binds: list[tuple[str, Path, Path]] = [("--ro-bind", Path("/usr"), Path("/usr")),
                                               ("--ro-bind", Path("/etc"), Path("/etc"))]
        binds += [("--ro-bind", d, d) for d in _python_dirs()]
        binds += [("--ro-bind", ROOT / pkg, ROOT / pkg) for pkg in ("gpucourse", "grader")]
        binds += [("--ro-bind", p, p) for p in (*self.readonly, *readonly)]
        binds += [("--bind", w, w) for w in writable]
        args = [
            bwrap_path() or "bwrap",
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
        ]
        for link, target in (
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/bin", "usr/bin"),
            ("/sbin", "usr/sbin"),
        ):
            if Path(link).is_symlink():
                args += ["--symlink", target, link]
            elif Path(link).is_dir():
                binds.append(("--ro-bind", Path(link), Path(link)))
        # parents of bind targets as world-readable directories (bwrap would create them 0700)
        dests = {d for _, _, d in binds}
        parents = {p for d in dests for p in d.parents if str(p) != "/"}
        for parent in sorted(parents, key=lambda p: len(p.parts)):
            if not any(parent == d or d in parent.parents for d in dests):
                args += ["--perms", "0755", "--dir", str(parent)]
        for kind, src, dest in sorted(binds, key=lambda b: len(b[2].parts)):
            args += [kind, str(src), str(dest)]
        # the answer side (references, hidden-case generators of split labs) is never in a sandbox
        args += ["--tmpfs", str(ANSWERS)] if ANSWERS.is_dir() else []
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]
        if not any(
            Path("/tmp") in w.parents or w == Path("/tmp")
            for w in [*writable, *self.readonly, *readonly]
        ):
            # else /tmp is simply absent: TMPDIR points into scratch
            args += ["--bind", str(home), "/tmp"]
        args += ["--chdir", str(cwd), "--"]
        return args + inner


def run_limited(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float, log: Path,
                memory: int | None = None) -> tuple[int, bool]:
    """Run a trusted helper process (nbgrader, or a sandboxed command) with a wall-clock limit, in
    its own session so that the limit kills it *and everything it started*; its output goes to
    ``log``, never to our memory. Returns (exit status, timed out); -9 when it was killed at the
    limit."""
    # no preexec_fn: the grader may hold JAX's threads (lab modules import it), and forking a
    # threaded process to run Python code is unsafe; a new session (setsid) and prlimit do the same
    # without it
    if memory:
        cmd = ["/usr/bin/prlimit", f"--as={memory}", "--", *cmd]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return -9, True


def tail(path: Path, n: int = 4000) -> str:
    """The last ``n`` bytes of a log, as text ("" when there is none)."""
    if not path.exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - n))
        return fh.read().decode("utf-8", "replace")


def warn_if_weak(stream=None) -> str | None:
    """A loud message when the file-system sandbox is missing (no bwrap), else None."""
    if bwrap_path():
        return None
    msg = (
        "!" * 100
        + "\nWARNING: bubblewrap (bwrap) is not installed or does not work here (no user"
        " namespaces?): student code runs with NO FILE-SYSTEM ISOLATION\n(it can read solutions/,"
        " the gradebook and other submissions). Network, pid namespace and resource limits\nstill"
        " apply (unshare + prlimit)"
        + (
            ""
            if python_reachable_by_others() or os.geteuid() != 0
            else "; student code runs as root, so the process limit (fork bombs) does NOT apply"
        )
        + ". Install it: apt-get install -y bubblewrap\n"
        + "!" * 100
    )
    print(msg, file=stream or sys.stderr)
    return msg
