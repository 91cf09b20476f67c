"""Autograde throughput of the instructor's command: submissions per minute, serial vs parallel, and
what the sandbox costs per submission. Prints numbers, asserts nothing (this machine is shared and
noisy).

    python -m grader.benchmark_grading                       # lab 1, 4 submissions, all cores
    python -m grader.benchmark_grading --lab lab02_backprop_gemm --students 6 --jobs 2
    python -m grader.benchmark_grading --lab lab05b_kernel_puzzles --class-size 100  # a class

A class (``--class-size N``): N submissions of one lab, a mix as a class hands in — 4 in 10 the
solution, 3 in 10 the solution with one exercise's answer replaced by a plausible wrong one (from
tests/wrong_answers, a different exercise each time), 2 in 10 blank (the released lab), 1 in 10 a
corrupt file — graded by the command with 1 job and with ``--jobs``, each printing submissions per
minute, the time to the first result, and peak memory: the largest sum of the resident memory of
every process the grading started, sampled every 0.2 s, in all and per job slot.

What is measured, on the same N copies of the lab's solution (the slowest honest submission: every
cell runs):

- plain nbgrader: one ``nbgrader autograde`` over all N students, unsandboxed, no out-of-process
  check (how nbgrader is normally run), and one unsandboxed ``nbgrader autograde`` per student ->
  s/submission;
- the command, serial (``--jobs 1``) and parallel (``--jobs`` = cores): each submission gets its own
  private gradebook, a sandboxed kernel (bubblewrap + prlimit, IPC transport) and the sandboxed
  re-check process;
- overhead per submission = serial command - plain nbgrader, split into: one nbgrader process per
  student (isolation of gradebooks), the sandbox proper (sandboxed nbgrader minus plain
  one-per-student), the out-of-process re-check (a second sandboxed process) and the rest
  (preflight, feedback HTML, bookkeeping);
- the bare cost of entering the sandbox: ``python -c pass`` inside vs outside (median of 5);
- parallel speed-up: serial wall time / parallel wall time (with jobs = cores, ~cores x when the
  machine is idle).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import course, grade, scratch
from .sandbox import Limits, Sandbox


def plain_nbgrader(
    lab: str, n: int, tmp: Path, per_student: bool = False
) -> tuple[float, list[float]]:
    """Seconds for unsandboxed ``nbgrader autograde`` of n solution submissions (one nbgrader
    process for all, or one per student as the command runs it), and their scores."""
    scratch_course = scratch.make_course(tmp / f"plain-{per_student}", lab)
    nb = scratch.fill(scratch_course.released(), scratch.solution_cells(scratch_course.source()))
    for i in range(n):
        scratch_course.submit(f"s{i:03d}", nb)
    t0 = time.perf_counter()
    if per_student:
        for i in range(n):
            scratch_course.autograde(f"s{i:03d}")
    else:
        scratch_course.autograde()
    seconds = time.perf_counter() - t0
    return seconds, [scratch_course.total(f"s{i:03d}")[0] for i in range(n)]


def command(lab: grade.Lab, n: int, jobs: int, tmp: Path) -> tuple[float, list[dict]]:
    """(wall seconds, results) for the command grading n solution submissions with ``jobs`` at a
    time."""
    released = json.loads(
        (course.ROOT / "labs" / lab.name / lab.source_path.name).read_text(encoding="utf-8")
    )
    nb = scratch.fill(released, scratch.solution_cells(lab.source()))
    src = tmp / f"export-{jobs}"
    src.mkdir(parents=True)
    for i in range(n):
        (src / f"s{i:03d}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    ws = grade.Workspace(tmp / f"grading-{jobs}")
    grade.import_submissions(lab, src, ws)
    # generate the lab once, outside the timed part (the plain run has it too)
    grade.template(lab, ws)
    # never the instructor's own
    secret = grade.Secret(b"benchmark-only-grading-secret", "benchmark")
    t0 = time.perf_counter()
    results = grade.autograde(
        lab, ws, grade.Settings(jobs=jobs), progress=lambda *_: None, secret=secret
    )
    return time.perf_counter() - t0, results


def class_notebooks(lab: grade.Lab, n: int) -> dict[str, bytes]:
    """``n`` submissions of ``lab`` as a class hands them in (the module's docstring: full, one
    exercise wrong, blank, corrupt), by file name."""
    import importlib.util

    released = json.loads(
        (course.ROOT / "labs" / lab.name / lab.source_path.name).read_text(encoding="utf-8")
    )
    answers = scratch.solution_cells(lab.source())
    wrong: list[tuple[str, str]] = []
    path = course.ROOT / "tests" / "wrong_answers" / f"{lab.name}.py"
    if path.exists():  # the instructor's repository; a class without it has no "wrong" kind
        spec = importlib.util.spec_from_file_location(f"wrong_{lab.name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        lists = [[(gid, c) for c in ([codes] if isinstance(codes, str) else codes)]
                 for gid, codes in module.WRONG.items()]
        # round robin over the exercises: each one's first wrong answer, then each one's second, …
        wrong = [w for k in range(max(map(len, lists), default=0)) for w in
                 (entries[k] for entries in lists if k < len(entries))]
    full = json.dumps(scratch.fill(released, answers)).encode()
    out, wrong_made = {}, 0
    for i in range(n):
        kind = ("full", "wrong", "full", "blank", "wrong", "full", "broken", "wrong", "full",
                "blank")[i % 10]
        if kind == "wrong" and wrong:
            gid, code = wrong[wrong_made % len(wrong)]
            wrong_made += 1
            body = json.dumps(scratch.fill(released, {**answers, gid: code})).encode()
        elif kind == "blank":
            body = json.dumps(released).encode()
        elif kind == "broken":
            body = full[: len(full) // 3]  # a file cut off mid-upload: not JSON
        else:
            kind, body = "full", full
        out[f"s{i:03d}-{kind}.ipynb"] = body
    return out


class _MemorySampler:
    """Peak of the summed resident memory (bytes) of every process descended from this one,
    sampled every ``every`` seconds from /proc (Linux) until stopped."""

    def __init__(self, every: float = 0.2) -> None:
        import threading

        self.every, self.peak, self._stop = every, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "_MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._stop.wait(self.every):
            parents: dict[int, int] = {}
            rss: dict[int, int] = {}
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    parents[int(entry.name)] = int(stat[1])  # field 4: the parent's pid
                    rss[int(entry.name)] = int((entry / "statm").read_text().split()[1]) * page
                except (OSError, IndexError, ValueError):
                    continue  # a process that ended meanwhile
            me, total = os.getpid(), 0  # me: this process's pid
            for pid in rss:
                p, seen = pid, 0
                while p in parents and p != me and seen < 64:
                    p, seen = parents[p], seen + 1
                total += rss[pid] if p == me and pid != me else 0
            self.peak = max(self.peak, total)


def class_run(lab: grade.Lab, notebooks: dict[str, bytes], jobs: int, tmp: Path) -> str:
    """Grade the class with ``jobs`` at a time: one printed line of throughput, first result and
    peak memory."""
    src = tmp / f"class-{jobs}"
    src.mkdir(parents=True)
    for name, body in notebooks.items():
        (src / name).write_bytes(body)
    ws = grade.Workspace(tmp / f"class-grading-{jobs}")
    grade.import_submissions(lab, src, ws)
    grade.template(lab, ws)
    secret = grade.Secret(b"benchmark-only-grading-secret", "benchmark")
    first: list[float] = []
    t0 = time.perf_counter()

    def progress(line: str) -> None:
        if not first and line.startswith("  s"):
            first.append(time.perf_counter() - t0)

    with _MemorySampler() as memory:
        results = grade.autograde(lab, ws, grade.Settings(jobs=jobs), progress=progress,
                                  secret=secret)
    wall = time.perf_counter() - t0
    kinds: dict[str, list[float]] = {}
    for r in results:
        kinds.setdefault(r["student"].rsplit("-", 1)[-1], []).append(r["score"])
    mix = ", ".join(f"{k} {len(v)} (mean {statistics.mean(v):.1f}/{results[0]['max_score']:g})"
                    for k, v in sorted(kinds.items()))
    return (
        f"class of {len(results)}, {jobs} job(s): {wall:7.1f} s  {60 * len(results) / wall:5.1f}"
        f" submissions/min  first result after {first[0] if first else float('nan'):.1f} s  peak"
        f" memory {memory.peak / 2**20:,.0f} MiB ({memory.peak / 2**20 / jobs:,.0f} MiB per"
        f" slot)\n  {mix}"
    )


def sandbox_start(repeat: int = 5) -> tuple[float, float]:
    """Median seconds of ``python -c pass`` outside and inside the sandbox."""
    with tempfile.TemporaryDirectory() as tmp:
        box = Sandbox(Limits(), slot=0)
        home = Path(tmp) / "home"
        box.prepare(home)
        plain, boxed = [], []
        for _ in range(repeat):
            for argv, out in (([sys.executable, "-c", "pass"], plain),
                              (box.wrap([sys.executable, "-c", "pass"], [home], home), boxed)):
                t0 = time.perf_counter()
                subprocess.run(argv, check=True, capture_output=True)
                out.append(time.perf_counter() - t0)
    return statistics.median(plain), statistics.median(boxed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.benchmark_grading", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lab", default="lab01_blas_roofline")
    parser.add_argument("--students", type=int, default=4, help="submissions per run")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="parallel jobs of the parallel run"
    )
    parser.add_argument(
        "--class-size", type=int, default=0,
        help="grade a class of this many mixed submissions instead (1 job, then --jobs)",
    )
    args = parser.parse_args(argv)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    lab, n, cores = grade.Lab.find(args.lab), args.students, os.cpu_count() or 1
    grade.prepare_process(lab)
    if args.class_size:
        notebooks = class_notebooks(lab, args.class_size)
        print(f"lab {lab.name}: a class of {len(notebooks)}; {cores} cores; sandbox:"
              f" {Sandbox().kind}; load average {os.getloadavg()[0]:.1f}", flush=True)
        with tempfile.TemporaryDirectory() as tmp_name:
            for jobs in dict.fromkeys((1, args.jobs)):
                print(class_run(lab, notebooks, jobs, Path(tmp_name)), flush=True)
        return 0
    print(
        f"lab {lab.name}: {n} solution submissions per run; {cores} cores; sandbox:"
        f" {Sandbox().kind}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )

    p_in, p_box = sandbox_start()
    print(f"entering the sandbox (python -c pass): {p_in:.2f} s plain, {p_box:.2f} s sandboxed "
          f"(+{p_box - p_in:.2f} s)", flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        plain_s, plain_scores = plain_nbgrader(lab.name, n, tmp)
        print(
            f"plain nbgrader, serial, unsandboxed:  {plain_s:7.1f} s  {plain_s / n:5.1f}"
            f" s/submission  {60 * n / plain_s:5.1f} submissions/min  scores {plain_scores}",
            flush=True,
        )
        solo_s, solo_scores = plain_nbgrader(lab.name, n, tmp, per_student=True)
        print(
            f"plain nbgrader, one process/student:  {solo_s:7.1f} s  {solo_s / n:5.1f} s/submission"
            f"  {60 * n / solo_s:5.1f} submissions/min  scores {solo_scores}",
            flush=True,
        )
        rows = {}
        for jobs in (1, args.jobs):
            if jobs in rows:
                continue
            wall, results = command(lab, n, jobs, tmp)
            rows[jobs] = (wall, results)
            scores = [r["score"] for r in results]
            print(
                f"command, {jobs} job(s), sandboxed:        {wall:7.1f} s  {wall / n:5.1f}"
                f" s/submission  {60 * n / wall:5.1f} submissions/min  scores {scores}",
                flush=True,
            )
        serial_wall, serial_results = rows[1]
        verify = statistics.mean(r.get("seconds_verify", 0) for r in serial_results)
        nbg = statistics.mean(r.get("seconds_nbgrader", 0) for r in serial_results)
        per_plain, per_solo, per_serial = plain_s / n, solo_s / n, serial_wall / n
        print(
            "\noverhead per submission (serial command - plain nbgrader over all):"
            f" {per_serial - per_plain:+.1f} s\n  nbgrader run per student, kernel in the sandbox"
            f" ({nbg:.1f} s; plain nbgrader {per_plain:.1f} s over all, {per_solo:.1f} s one"
            f" process per student): {nbg - per_plain:+.1f} s vs over-all\n  entering the sandbox:"
            f" {p_box - p_in:+.2f} s per process, 2 processes per submission\n  out-of-process"
            f" re-check (second sandboxed process): {verify:.1f} s\n  preflight, feedback HTML,"
            f" bookkeeping: {per_serial - nbg - verify:.1f} s\nsandbox overhead per submission"
            f" (entering it twice + the re-check it enables): {2 * (p_box - p_in) + verify:.1f} s"
            " (target <= 2 s)"
        )
        if args.jobs in rows and args.jobs != 1:
            speedup = serial_wall / rows[args.jobs][0]
            print(f"parallel speed-up with {args.jobs} jobs: x{speedup:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
