"""The course's performance budget, measured: prints a table, asserts nothing (machines here are
noisy).

    python3 -m grader.benchmark            # every notebook + one autograde per lab + executor +
                                           # mutation score per lab
    python3 -m grader.benchmark --notebooks course/01_blas_roofline.ipynb --no-grading --no-mutation
    --no-executor
    python3 -m grader.benchmark_simt       # only the kernel executor: matmul vs numba's simulator,
                                           # kernel checks

Budget (COURSE_PLAN §7): whole course (course/ + solutions/) ≤ 8 min on 2 cores, no notebook over 60
s, one lab autograded in ≤ 20 s. Each notebook runs in a fresh kernel, as nbval and nbgrader run it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from . import course, scratch

NOTEBOOK_BUDGET_S = 60.0
COURSE_BUDGET_S = 8 * 60.0
AUTOGRADE_BUDGET_S = 20.0


def execute(path: Path, timeout: int = 600) -> tuple[float, str]:
    """Seconds to run a notebook top to bottom in a fresh kernel, and 'ok' or the error's first
    line."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    try:
        client.execute()
        status = "ok"
    except Exception as exc:  # a failing notebook is reported, not fatal to the benchmark
        status = f"FAILED: {str(exc).strip().splitlines()[-1][:80]}"
    return time.perf_counter() - t0, status


def autograde_seconds(lab: str) -> tuple[float, float, float]:
    """(seconds, score, max score) to autograde one submission holding the lab's solution."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch_course = scratch.make_course(Path(tmp), lab)
        scratch_course.submit(
            "student",
            scratch.fill(
                scratch_course.released(), scratch.solution_cells(scratch_course.source())
            ),
        )
        t0 = time.perf_counter()
        scratch_course.autograde()
        seconds = time.perf_counter() - t0
        score, max_score = scratch_course.total("student")
    return seconds, score, max_score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.benchmark", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--notebooks", nargs="*", help="notebooks to time (default: course/ and solutions/)"
    )
    parser.add_argument("--no-grading", action="store_true", help="skip the autograde timings")
    parser.add_argument(
        "--no-mutation",
        action="store_true",
        help="skip the mutation score per lab (python -m grader.mutation lists the survivors)",
    )
    parser.add_argument(
        "--no-executor",
        action="store_true",
        help="skip the kernel executor's timings (matmul vs numba's simulator, each kernel check)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")

    notebooks = (
        [Path(p).resolve() for p in args.notebooks] if args.notebooks else course.paired_notebooks()
    )
    print(f"{'notebook':58} {'seconds':>8}  status")
    total = 0.0
    for nb in notebooks:
        seconds, status = execute(nb)
        total += seconds
        flag = "  OVER BUDGET" if seconds > NOTEBOOK_BUDGET_S else ""
        print(f"{str(nb.relative_to(course.ROOT)):58} {seconds:8.1f}  {status}{flag}", flush=True)
    print(f"{'total':58} {total:8.1f}  budget {COURSE_BUDGET_S:.0f} s"
          f"{'  OVER BUDGET' if total > COURSE_BUDGET_S else ''}")

    if not args.no_executor:
        from . import benchmark_simt

        print()
        benchmark_simt.report()

    if not args.no_grading:
        print(f"\n{'lab (one solution submission)':58} {'seconds':>8}  score")
        for lab in course.labs():
            seconds, score, max_score = autograde_seconds(lab)
            flag = "  OVER BUDGET" if seconds > AUTOGRADE_BUDGET_S else ""
            print(f"{lab:58} {seconds:8.1f}  {score:g}/{max_score:g}{flag}", flush=True)

    # issue 13: every non-equivalent mutant of every reference killed by the hidden cases
    if not args.no_mutation:
        from . import mutation

        print("\nmutation score of the hidden tests: killed / non-equivalent mutants "
              "(the survivors: python -m grader.mutation)")
        mutation.print_scores()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
