"""The sandbox (grader/sandbox.py) actually blocks what it promises — proven by doing it, not by reading options.

Each test runs a small Python script inside the sandbox that *tries* the forbidden thing and reports what
happened, and, where the check could pass vacuously, runs the same script outside the sandbox as a positive
control (it must succeed there). Network: a live TCP server on this machine's loopback (and on its other
addresses) must see no connection. Files: the real solutions/, a gradebook and another student's folder next to
the scratch folder must be unreadable; writes outside scratch must not reach the host. Resources: a fork bomb,
a CPU loop that ignores signals, a memory hog, a file flood and a sleeper past its wall-clock limit are stopped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import grade
from grader.sandbox import (KERNELS_NEED_OS_THREADS, ROOT, SIMULATOR_PROCESSES, TIGHT_PROCESSES, Limits, Sandbox,
                            bwrap_path)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")
needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap (bwrap) is not installed")

SMALL = Limits(cpu_s=3, memory_bytes=1 << 30, processes=24, file_bytes=1 << 20, open_files=64, wall_s=30)


def run(code: str, scratch: Path, limits: Limits = SMALL, slot: int = 7, use_bwrap: bool | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``code`` with the venv's Python inside the sandbox, scratch as its only writable folder."""
    box = Sandbox(limits, slot=slot, use_bwrap=use_bwrap)
    box.prepare(scratch)
    cmd = box.wrap([sys.executable, "-c", code], [scratch], scratch)
    # started in scratch, as the grader starts its commands (bwrap changes into it itself; the unshare fallback does
    # not, and a file flood run from the checkout once left flood.bin in it)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=scratch)


def report(proc: subprocess.CompletedProcess) -> dict:
    """The script's last stdout line is a JSON report."""
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no report (rc {proc.returncode}): {proc.stderr[-1500:]}"
    return json.loads(lines[-1])


# ----------------------------------------------------------------------------------------------------------
# Network
# ----------------------------------------------------------------------------------------------------------

def _host_addresses() -> list[str]:
    """This machine's IPv4 addresses: loopback plus the others (from the routing table's source address)."""
    addrs = ["127.0.0.1"]
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
            if s.getsockname()[0] not in addrs:
                addrs.append(s.getsockname()[0])
    except OSError:
        pass
    return addrs


CONNECT = r'''
import json, socket, sys
out = {}
for host in sys.argv[1].split(","):
    try:
        socket.create_connection((host, int(sys.argv[2])), timeout=3).sendall(b"leak")
        out[host] = "connected"
    except OSError as e:
        out[host] = type(e).__name__ + ": " + str(e)
out["interfaces"] = [n for _, n in socket.if_nameindex()]
print(json.dumps(out))
'''


class Listener:
    """A TCP server on every local address that counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[bytes] = []
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.accepted.append(conn.recv(16))
                except OSError:
                    self.accepted.append(b"")

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


@pytest.mark.parametrize("use_bwrap", [pytest.param(True, marks=needs_bwrap), False], ids=["bwrap", "unshare"])
def test_no_connection_reaches_a_live_server(tmp_path, use_bwrap):
    server = Listener()
    hosts = ",".join(_host_addresses())
    try:
        # positive control: the same script outside the sandbox does connect (the server works)
        plain = subprocess.run([sys.executable, "-c", CONNECT, hosts, str(server.port)], capture_output=True,
                               text=True, timeout=30)
        assert json.loads(plain.stdout)["127.0.0.1"] == "connected"
        deadline = time.monotonic() + 5
        while len(server.accepted) < len(hosts.split(",")) and time.monotonic() < deadline:
            time.sleep(0.05)
        before = len(server.accepted)
        assert before >= 1, "control: the server saw no connection from an unsandboxed client"

        out = _run_with_args(CONNECT, [hosts, str(server.port)], tmp_path / "scratch", use_bwrap)
        time.sleep(0.5)
        for host in hosts.split(","):
            assert out[host] != "connected", f"sandboxed code connected to {host}"
        assert out["interfaces"] == ["lo"], f"the sandbox sees network interfaces: {out['interfaces']}"
        assert len(server.accepted) == before, "a sandboxed connection reached the server"
    finally:
        server.close()


def _run_with_args(code: str, args: list[str], scratch: Path, use_bwrap: bool | None) -> dict:
    box = Sandbox(SMALL, slot=7, use_bwrap=use_bwrap)
    box.prepare(scratch)
    proc = subprocess.run(box.wrap([sys.executable, "-c", code, *args], [scratch], scratch),
                          capture_output=True, text=True, timeout=60)
    return report(proc)


# ----------------------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------------------

PROBE_FILES = r'''
import json, os, sys
out = {}
for p in sys.argv[1].split(","):
    try:
        with open(p, "rb") as fh:
            out[p] = "read %d bytes" % len(fh.read())
    except OSError as e:
        out[p] = type(e).__name__
for p in sys.argv[2].split(","):
    try:
        with open(p, "w") as fh:
            fh.write("pwned")
        out["w:" + p] = "wrote"
    except OSError as e:
        out["w:" + p] = type(e).__name__
with open(os.path.join(sys.argv[3], "ok.txt"), "w") as fh:
    fh.write("scratch is writable")
print(json.dumps(out))
'''


@needs_bwrap
def test_secrets_are_unreadable_and_writes_stay_in_scratch(tmp_path):
    lab = grade.Lab.find("lab01_blas_roofline")
    solution = lab.source_path.with_suffix(".py")  # the instructor's answers, in the real solutions/
    assert solution.exists()
    # a grading folder like the command's: a gradebook, another student's submission, this job's scratch
    gradebook = tmp_path / "grading" / "gradebook.db"
    other = tmp_path / "grading" / "submitted" / "bob" / "lab01" / "lab01.ipynb"
    hidden_src = ROOT / "grader" / "labs" / "lab01_blas_roofline.py"  # readable by design: see the README
    for p in (gradebook, other):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("secret")
    scratch = tmp_path / "grading" / "jobs" / "alice" / "home"
    reads = [str(solution), str(gradebook), str(other), "/root/.bash_history", str(hidden_src)]
    writes = [str(tmp_path / "grading" / "planted.txt"), str(ROOT / "grader" / "planted.py"),
              "/etc/planted", "/tmp/planted-by-student", str(ROOT / "planted.txt")]

    box = Sandbox(SMALL, slot=7)
    box.prepare(scratch)
    proc = subprocess.run(box.wrap([sys.executable, "-c", PROBE_FILES, ",".join(reads), ",".join(writes),
                                    str(scratch)], [scratch], scratch), capture_output=True, text=True, timeout=60)
    out = report(proc)
    for p in (solution, gradebook, other):
        assert out[str(p)] in ("FileNotFoundError", "PermissionError"), f"sandbox read {p}: {out[str(p)]}"
    assert out[str(hidden_src)].startswith("read"), "the course packages must stay importable"
    for p in writes:
        assert not Path(p).exists(), f"a write from the sandbox reached the host: {p}"
    assert out["w:" + str(ROOT / "grader" / "planted.py")] in ("OSError", "PermissionError")
    assert (scratch / "ok.txt").read_text() == "scratch is writable"

    # positive control: the same probe outside the sandbox reads the secrets (so the test can fail)
    plain = subprocess.run([sys.executable, "-c", PROBE_FILES, ",".join(reads[:3]), "", str(tmp_path)],
                           capture_output=True, text=True, timeout=60)
    control = report(plain)
    assert all(control[p].startswith("read") for p in reads[:3]), control


ANSWER_SIDE = r"""
import importlib, json, os, sys
from grader.labs import lab07_tpu as lab
out = {"listing": sorted(os.listdir(sys.argv[1])), "has_answers": [p.has_answers() for p in lab.problems.values()]}
try:
    importlib.import_module("grader.answers.lab07_tpu")
    out["import"] = "imported"
except ImportError as exc:
    out["import"] = type(exc).__name__
p = lab.problems["best_array"]
try:  # the visible check judges from the expected values shipped as data: a wrong answer fails with the message
    p.check(lambda M, K, N, pes: (1, pes))
    out["wrong"] = "passed"
except Exception as exc:
    out["wrong"] = str(exc)[:200]
p.check(lambda M, K, N, pes: (1, pes), hidden=True)  # no case file here: says hidden tests run when graded
print(json.dumps(out))
"""


@needs_bwrap
def test_the_answer_side_is_absent_in_the_sandbox_and_visible_checks_judge_from_data(tmp_path):
    """grader/answers (references, hidden-case generators of split labs) is an empty folder in every sandbox: the
    lab's Problems have no answers there, and a visible check still judges, from the expected values as data."""
    answers = ROOT / "grader" / "answers"
    assert (answers / "lab07_tpu.py").exists()
    scratch = tmp_path / "s"
    box = Sandbox(SMALL, slot=7)
    box.prepare(scratch)
    proc = subprocess.run(box.wrap([sys.executable, "-c", ANSWER_SIDE, str(answers)], [scratch], scratch),
                          capture_output=True, text=True, timeout=120)
    out = report(proc)
    assert out["listing"] == [] and out["import"] in ("ImportError", "ModuleNotFoundError"), out
    assert not any(out["has_answers"]), out
    assert "expected 1_024" in out["wrong"] or "cycles" in out["wrong"], out
    assert "hidden tests run when your lab is graded" in proc.stdout


@needs_bwrap
def test_runs_as_an_unprivileged_user_without_capabilities(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("per-slot users need the grader to run as root")
    out = report(run("import os, json; print(json.dumps({'uid': os.getuid(), 'euid': os.geteuid(), "
                     "'cap': [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]}))",
                     tmp_path / "s", slot=5))
    assert out["uid"] == out["euid"] == 64005
    assert int(out["cap"], 16) == 0


# ----------------------------------------------------------------------------------------------------------
# Resources
# ----------------------------------------------------------------------------------------------------------

FORK_BOMB = r'''
import json, os, time
n, err = 0, None
for _ in range(10_000):
    try:
        pid = os.fork()
    except OSError as e:
        err = type(e).__name__
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print(json.dumps({"forked": n, "error": err}))
'''


@pytest.mark.parametrize("use_bwrap", [pytest.param(True, marks=needs_bwrap), False], ids=["bwrap", "unshare"])
def test_fork_bomb_is_capped(tmp_path, use_bwrap):
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC only caps a dedicated user (the grader runs as root on the course server)")
    if Sandbox(use_bwrap=use_bwrap).uid is None:
        pytest.skip("the unshare fallback runs as root here (the sandbox user cannot reach this Python): "
                    "no process limit, as warn_if_weak says")
    t0 = time.monotonic()
    out = report(run(FORK_BOMB, tmp_path / "s", use_bwrap=use_bwrap, slot=9))
    assert out["error"] == "BlockingIOError", out
    assert out["forked"] < SMALL.processes, out
    # the sleeping children died with the sandbox (pid namespace), they did not survive for 30 s
    assert time.monotonic() - t0 < 25
    assert _gone(64009), "forked children outlived the sandbox"



@needs_bwrap
def test_a_slot_starts_empty(tmp_path):
    """What still runs as a slot's user when its next command starts (a kernel still exiting, a process a
    submission left) counts against that command's process limit: reap() kills it and waits until it is gone."""
    if os.geteuid() != 0:
        pytest.skip("per-slot users need the grader to run as root")
    box = Sandbox(SMALL, slot=14)
    scratch = tmp_path / "s"
    box.prepare(scratch)
    # a leftover: a sleeper started as the slot's user outside any sandbox of this test's
    left = subprocess.Popen(["/usr/bin/setpriv", f"--reuid={box.uid}", f"--regid={box.uid}", "--clear-groups",
                             "sleep", "60"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while left.pid not in box.leftovers() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left.pid in box.leftovers(), "the sleeper should run as the slot's user"
        assert box.reap(timeout=10) == []
        assert left.wait(timeout=10) == -9
    finally:
        if left.poll() is None:
            left.kill()


def test_a_check_process_that_cannot_start_says_why(tmp_path):
    """The check worker's own failure (here: no job file) ends it with status 1 and a traceback on its stderr,
    which the grader keeps for the instructor (Workspace.stop_log)."""
    proc = subprocess.run([sys.executable, "-m", "grader.pipeline.recheck_worker", str(tmp_path / "missing.pickle"),
                           str(tmp_path / "out.jsonl")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "FileNotFoundError" in proc.stderr and "missing.pickle" in proc.stderr, proc.stderr[-2000:]

THREAD_BOMB = r'''
import json, threading, time
n, err = 0, None
for _ in range(10_000):
    try:
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    except RuntimeError as e:
        err = type(e).__name__ + ": " + str(e)
        break
    n += 1
print(json.dumps({"threads": n, "error": err}))
'''

TIGHT = Limits(**{**SMALL.__dict__, "processes": TIGHT_PROCESSES, "cpu_s": 10})


@pytest.mark.parametrize("bomb", ["fork", "thread"])
def test_bombs_stop_at_the_tight_cap(tmp_path, bomb):
    """The cap a grading slot gets once kernels need no OS threads (tens): a fork bomb and a thread bomb (Linux
    counts threads as processes of the user) both stop below it, and nothing outlives the sandbox."""
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC only caps a dedicated user (the grader runs as root on the course server)")
    if Sandbox().uid is None:
        pytest.skip("no per-slot user here (the unshare fallback cannot reach this Python as another user)")
    t0 = time.monotonic()
    out = report(run(FORK_BOMB if bomb == "fork" else THREAD_BOMB, tmp_path / "s", TIGHT, slot=12))
    made = out["forked" if bomb == "fork" else "threads"]
    assert out["error"], f"the {bomb} bomb was not stopped: {out}"
    assert 1 <= made < TIGHT_PROCESSES, out
    assert time.monotonic() - t0 < 25
    assert _gone(64012), f"the {bomb} bomb outlived the sandbox"


def test_slots_are_pinned_to_their_own_cpus(tmp_path):
    """Each slot runs on its own window of CPUs (taskset): thread pools sized by the CPU count (JAX's CPU client
    makes about three threads per CPU) stay small on a many-core server, and slots share the CPUs evenly."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to pin")
    seen = []
    for slot in (0, 1):
        box = Sandbox(Limits(**{**SMALL.__dict__, "cpus": 1}), slot=slot)
        assert len(box.cpu_list()) == 1
        out = report(run("import json, os; print(json.dumps(sorted(os.sched_getaffinity(0))))", tmp_path / f"s{slot}",
                         Limits(**{**SMALL.__dict__, "cpus": 1}), slot=slot))
        assert out == box.cpu_list(), (slot, out)
        seen.append(out[0])
    assert seen[0] != seen[1], "two slots share one CPU while others are idle"
    assert Sandbox(Limits(cpus=len(cpus))).cpu_list() == [], "pinning to every CPU narrows nothing: not pinned"


THREADS_PER_LAUNCH = r'''
import json, os, threading, time
os.environ["GPUCOURSE_BACKEND"] = "cpu"
import numpy as np
import gpucourse as gc
from gpucourse import simt

gc.quiet_warnings()
cuda = gc.get_backend().cuda

@cuda.jit
def reverse_in_block(out):                    # a barrier: every thread must reach it before any goes on
    s = cuda.shared.array(256, np.float32)
    i = cuda.grid(1)
    s[cuda.threadIdx.x] = i
    cuda.syncthreads()
    out[i] = s[255 - cuda.threadIdx.x]

tasks = lambda: len(os.listdir("/proc/self/task"))
peak, running = [0], [True]
def sample():
    while running[0]:
        peak[0] = max(peak[0], tasks())
        time.sleep(0.0005)
out = np.zeros(512, np.float32)
reverse_in_block[2, 256](out)                 # warm up (imports, compilation) before counting
base = tasks()
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
simt.run(reverse_in_block, 2, 256, out)       # how lab exercises are graded
reverse_in_block[2, 256](out)                 # how notebooks launch kernels on the CPU backend
running[0] = False
sampler.join()
print(json.dumps({"extra_threads": peak[0] - base - 1}))
'''


def test_default_process_cap_fits_the_kernel_executor():
    """The default cap is loose only while kernels on the CPU backend need an OS thread per CUDA thread. Measured:
    a 256-thread block with a barrier, through gpucourse.simt and through the CPU backend's ``cuda``. When the
    course's executor runs them without OS threads, this fails until grader/sandbox.py's
    KERNELS_NEED_OS_THREADS is switched to False (the default cap then becomes TIGHT_PROCESSES)."""
    proc = subprocess.run([sys.executable, "-c", THREADS_PER_LAUNCH], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    extra = report(proc)["extra_threads"]
    needs = extra > TIGHT_PROCESSES // 4
    assert KERNELS_NEED_OS_THREADS == needs, (
        f"a 256-thread kernel launch now needs {extra} extra OS threads: set KERNELS_NEED_OS_THREADS = {needs} in "
        "grader/sandbox.py (the default process cap follows it)")
    assert Limits().processes == (SIMULATOR_PROCESSES if needs else TIGHT_PROCESSES)


@pytest.mark.slow
@pytest.mark.xfail(KERNELS_NEED_OS_THREADS, strict=True,
                   reason="kernels on the CPU backend still need one OS thread per CUDA thread (see "
                          "test_default_process_cap_fits_the_kernel_executor)")
def test_lab05_kernel_submission_grades_fully_at_the_tight_cap(tmp_path, monkeypatch):
    """Kernel exercises and a tight cap coexist: lab 5's solution (kernels launched on the CPU backend, graded on
    the instrumented executor) earns full marks with the slot capped at TIGHT_PROCESSES."""
    from grader import __main__ as cli
    from grader import course
    from tests import grading

    if os.geteuid() != 0 or Sandbox().uid is None:
        pytest.skip("the cap applies to a per-slot user (the grader runs as root)")
    monkeypatch.setenv("GPUCOURSE_GRADING_SECRET", "tight-cap-test-secret-0123456789")
    lab = grade.Lab.find("lab05_kernels")
    released = json.loads((course.ROOT / "labs" / lab.name / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
    export = tmp_path / "export"
    export.mkdir()
    (export / "solution.ipynb").write_text(json.dumps(grading.fill(released, grading.solution_cells(lab.source()))))
    ws = tmp_path / "grading"
    assert cli.main(["grade", lab.name, str(export), "--dir", str(ws), "--jobs", "1",
                     "--processes", str(TIGHT_PROCESSES)]) == 0
    (r,) = grade.load_results(lab, grade.Workspace(ws))
    failed = {k: c["message"] for k, c in r["cells"].items() if c["score"] < c["points"]}
    assert r["score"] == r["max_score"] > 0, f"lab 5 at {TIGHT_PROCESSES} processes: {r['issues']} {failed}"
    # lab 5 is split (grader/answers/lab05_kernels.py): every cell, kernels included, is judged in the grader
    assert {c["checked"] for c in r["cells"].values()} <= {"kernel and outside", "checked outside the kernel"}, \
        {k: c["checked"] for k, c in r["cells"].items()}


def _gone(uid: int, within_s: float = 5.0) -> bool:
    """No process of ``uid`` is left within a few seconds (the kernel reaps a dead pid namespace quickly, not
    instantly); a child that outlived its sandbox would sleep on for 30-60 s."""
    deadline = time.monotonic() + within_s
    while _processes_of(uid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _processes_of(uid: int) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if d.stat().st_uid == uid:
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def test_cpu_loop_that_ignores_signals_is_killed(tmp_path):
    code = ("import signal\nfor s in (signal.SIGXCPU, signal.SIGTERM, signal.SIGINT):\n"
            "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n")
    t0 = time.monotonic()
    proc = run(code, tmp_path / "s", Limits(**{**SMALL.__dict__, "cpu_s": 2}))
    assert proc.returncode != 0
    # SIGKILL at the hard CPU limit; bwrap/unshare report it as 128 + 9 or -9
    assert proc.returncode in (-9, 137, -24, 152), proc.returncode
    assert time.monotonic() - t0 < 45


def test_memory_hog_gets_memory_error(tmp_path):
    code = ("import json\ntry:\n    b = bytearray(3 * 2**30)\n    r = 'allocated'\nexcept MemoryError:\n"
            "    r = 'MemoryError'\nimport numpy as np\ntry:\n    a = np.ones((2**28,), dtype=np.float64)\n"
            "    r2 = 'allocated'\nexcept MemoryError:\n    r2 = 'MemoryError'\nprint(json.dumps([r, r2]))\n")
    assert report(run(code, tmp_path / "s")) == ["MemoryError", "MemoryError"]


def test_file_flood_is_capped(tmp_path):
    code = ("import json, os\nn = 0\ntry:\n    with open('flood.bin', 'wb') as fh:\n        for _ in range(64):\n"
            "            fh.write(b'x' * 65536); fh.flush(); n += 65536\n    r = 'wrote'\nexcept OSError as e:\n"
            "    r = type(e).__name__ + ' ' + str(e.errno)\nprint(json.dumps([r, n]))\n")
    scratch = tmp_path / "s"
    r, n = report(run(code, scratch))
    assert r.startswith("OSError 27"), r  # EFBIG
    assert (scratch / "flood.bin").stat().st_size <= SMALL.file_bytes


def test_wall_clock_limit_kills_a_sleeper_and_its_children(tmp_path):
    """A process that ignores SIGTERM and sleeps (no CPU use) is stopped by the caller's wall-clock limit;
    grade._run kills the whole sandbox, forked children included."""
    code = ("import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "if os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\ntime.sleep(60)\n")
    box = Sandbox(SMALL, slot=11)
    scratch = tmp_path / "s"
    box.prepare(scratch)
    t0 = time.monotonic()
    rc, timed_out = grade._run(box.wrap([sys.executable, "-c", code], [scratch], scratch), scratch,
                               {"PATH": "/usr/bin:/bin"}, 3, tmp_path / "log")
    assert timed_out and rc == -9
    assert time.monotonic() - t0 < 15
    if os.geteuid() == 0:
        assert _gone(64011), "the sandbox outlived its wall-clock limit"


def test_environment_is_clean(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_TOKEN", "do-not-leak")
    out = report(run("import os, json; print(json.dumps(dict(os.environ)))", tmp_path / "s"))
    assert "GRADER_SECRET_TOKEN" not in out
    assert out["HOME"] == str(tmp_path / "s")
