"""The one GPU command: every GPU-only path of the course, run on an NVIDIA GPU, and one table of
what it measured.

    python -m gpucourse.gpu_check                       # GPU-marked tests, then every course and
                                                        # solution notebook
    python -m gpucourse.gpu_check --skip-tests --only course/01 course/05

1. Without a usable NVIDIA GPU it says why and exits with status 2, having run nothing.
2. ``pytest -m gpu tests`` with ``GPUCOURSE_BACKEND=gpu`` (the tests marked ``gpu``, skipped
   everywhere else).
3. Every notebook of ``course/`` and ``solutions/``, top to bottom in a fresh kernel, with
   ``GPUCOURSE_BACKEND=gpu`` (a notebook that would fall back to the CPU fails instead). Cells that
   measure call ``gc.record(name, value, unit)``; the command collects those numbers
   (``GPUCOURSE_RECORD``) and the text output of every GPU-only cell (a cell guarded by
   ``gc.require_gpu(...)``, or one that branches on ``be.is_gpu``).
4. Prints the table of numbers and writes ``course/gpu_runs/<gpu>_<date>.md`` (and ``.json``): the
   provenance (GPU, compute capability, driver, CUDA runtime, JAX/jaxlib/CuPy/numba-cuda versions,
   date, course commit), the test summary, the numbers and the GPU-only cells' outputs, so students
   without a GPU can read real numbers. Commit that file.

Exit status 0 when every test and notebook passed, 1 otherwise. Budget: 8 minutes on an H100
(notebooks run one at a time so that their timings do not disturb each other; ``--jobs`` trades that
for speed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import records

NO_GPU_STATUS = 2
GPU_CELL = re.compile(r"require_gpu\(|\bbe\.is_gpu\b|gpu_available\(\)")
BUDGET_S = 8 * 60


@dataclass
class NotebookRun:
    path: str  # relative to the course root
    seconds: float
    ok: bool
    error: str = ""
    gpu_cells: list[dict] = field(default_factory=list)  # {"index", "first_line", "output"}


def course_root(given: str | None = None) -> Path:
    """The checkout holding course/ and solutions/: ``--root``, else the folder above this package,
    else cwd."""
    for candidate in ([Path(given)] if given else []) + [
        Path(__file__).resolve().parent.parent,
        Path.cwd(),
    ]:
        if (candidate / "course").is_dir() and (candidate / "solutions").is_dir():
            return candidate.resolve()
    raise SystemExit(
        "gpu_check: no course checkout found (course/ and solutions/); run it from one or pass"
        " --root"
    )


def notebooks(root: Path, only: list[str] | None = None) -> list[Path]:
    """course/*.ipynb then solutions/*/*.ipynb, optionally only those whose path contains one of
    ``only``."""
    found = sorted((root / "course").glob("*.ipynb")) + sorted(
        (root / "solutions").glob("*/*.ipynb")
    )
    if only:
        found = [p for p in found if any(o in str(p.relative_to(root)) for o in only)]
    return found


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def provenance(root: Path, gpu) -> dict[str, str]:
    """What ran: the GPU (a ``backend.GpuProbe``), its driver and CUDA runtime, the libraries, the
    date and the course's commit."""
    g = gpu
    info = {
        "gpu": g.name,
        "compute capability": ".".join(map(str, g.compute_capability or ())),
        "SMs": str(g.sm_count),
        "memory": f"{(g.memory_bytes or 0) / 2**30:.0f} GiB",
        "CUDA driver API / runtime": f"{g.driver} / {g.runtime}",
    }
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        if smi.returncode == 0 and smi.stdout.strip():
            driver, clock, power = (x.strip() for x in smi.stdout.splitlines()[0].split(","))
            info.update({"driver": driver, "max SM clock": clock, "power limit": power})
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    versions = {
        m: _version(m)
        for m in (
            "jax",
            "jaxlib",
            "jax-cuda12-plugin",
            "jax-cuda13-plugin",
            "cupy-cuda12x",
            "cupy-cuda13x",
            "numba",
            "numba-cuda",
            "numpy",
        )
    }
    info["libraries"] = ", ".join(f"{m} {v}" for m, v in versions.items() if v)
    info["python"] = platform.python_version()
    info["date (UTC)"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        info["course commit"] = (
            commit + (" (with uncommitted changes)" if dirty else "") if commit else "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        info["course commit"] = "unknown"
    return info


def gpu_cells(nb: dict) -> list[dict]:
    """The GPU-only cells of an executed notebook, with their text output."""
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if not GPU_CELL.search(source):
            continue
        texts = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                texts.append(o["text"] if isinstance(o["text"], str) else "".join(o["text"]))
            elif o.get("output_type") in (
                "execute_result",
                "display_data",
            ) and "text/plain" in o.get("data", {}):
                t = o["data"]["text/plain"]
                if not str(t).startswith("<Figure"):
                    texts.append(t if isinstance(t, str) else "".join(t))
            elif o.get("output_type") == "error":
                texts.append(f"{o.get('ename')}: {o.get('evalue')}")
        first = next(
            (ln for ln in source.splitlines() if ln.strip() and not ln.startswith("#")), ""
        )
        out.append(
            {"index": i, "first_line": first.strip()[:100], "output": "".join(texts).rstrip()}
        )
    return out


def execute(path: Path, root: Path, env: dict[str, str], timeout: int) -> NotebookRun:
    """Run one notebook in a fresh kernel with ``env``; never raises (a failure is reported)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    ok, error = True, ""
    try:
        client.execute(env=env)
    except Exception as exc:  # CellExecutionError, a timeout, a dead kernel: report and go on
        ok, error = False, (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
    return NotebookRun(
        str(path.relative_to(root)), time.perf_counter() - t0, ok, error, gpu_cells(nb)
    )


def run_env(record_file: Path, jobs: int) -> dict[str, str]:
    """The environment of the GPU-marked tests and of each notebook's kernel."""
    env = {**os.environ, "GPUCOURSE_BACKEND": "gpu", records.RECORD_ENV: str(record_file),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    # JAX preallocates 75 % of the GPU in each process: a second notebook's kernel could not start
    if jobs > 1:
        # allocate on demand (JAX docs, "GPU memory allocation")
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


def run_tests(root: Path, env: dict[str, str], timeout: int) -> dict:
    """``pytest -m gpu tests``: counts from its JUnit XML."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "gpu.xml"
        cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "tests", "-q", "-p", "no:cacheprovider",
               f"--junitxml={junit}", "-o", "addopts="]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(
                cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
            )
            tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
            status = done.returncode
        except subprocess.TimeoutExpired:
            tail, status = [f"timed out after {timeout} s"], -1
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if junit.exists():
            suite = ET.parse(junit).getroot()
            suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
            counts = {k: int(suite.get(k, 0)) for k in counts}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    # pytest exits 5 when every gpu test was deselected or skipped: not a failure of the GPU paths
    return {**counts, "ok": status in (0, 5) and not counts["failures"] and not counts["errors"],
            "seconds": time.perf_counter() - t0, "tail": tail}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def render(
    prov: dict,
    tests: dict | None,
    runs: list[NotebookRun],
    recs: list[records.Record],
    total_s: float,
) -> str:
    """The committed report: provenance, test summary, the numbers, each notebook's GPU-only
    outputs."""
    lines = [
        f"# GPU run: {prov.get('gpu', '?')}, {prov.get('date (UTC)', '?')}",
        "",
        (
            "Recorded by `python -m gpucourse.gpu_check`. These are real outputs of the course's"
            " GPU-only cells on the"
        ),
        (
            "machine below: read them next to the notebooks if you have no GPU. Numbers from other"
            " GPUs, drivers or"
        ),
        "library versions will differ.",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in prov.items()]
    lines += ["", f"Total time: {total_s:.0f} s (budget {BUDGET_S} s).", ""]
    if tests is not None:
        lines += [
            "## GPU-marked tests",
            "",
            (
                f"{tests['passed']} passed, {tests['failures']} failed, {tests['errors']} errors, "
                f"{tests['skipped']} skipped in {tests['seconds']:.0f} s."
            ),
            "",
        ]
    lines += [
        "## Measured numbers",
        "",
        "| measurement | value | unit | notebook | note |",
        "|---|---:|---|---|---|",
    ]
    lines += [f"| {r.name} | {r.value:.4g} | {r.unit} | {r.notebook} | {r.note} |" for r in recs]
    lines += ["", "## Notebooks", "", "| notebook | seconds | status |", "|---|---:|---|"]
    lines += [
        f"| {r.path} | {r.seconds:.1f} |"
        f" {'ok' if r.ok else 'FAILED: ' + r.error.replace('|', '/')} |"
        for r in runs
    ]
    for r in runs:
        if not r.gpu_cells:
            continue
        lines += ["", f"### {r.path}", ""]
        for c in r.gpu_cells:
            lines += [
                f"Cell {c['index']} (`{c['first_line']}`):",
                "",
                "```",
                c["output"] or "(no text output)",
                "```",
                "",
            ]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpucourse.gpu_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", help="the course checkout (default: the one this package is in)")
    parser.add_argument("--out", help="folder for the report (default: ROOT/course/gpu_runs)")
    parser.add_argument(
        "--only", nargs="*", help="run only notebooks whose path contains one of these"
    )
    parser.add_argument("--skip-tests", action="store_true", help="do not run the GPU-marked tests")
    parser.add_argument(
        "--skip-notebooks", action="store_true", help="run only the GPU-marked tests"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="notebooks run at once (default 1: clean timings)"
    )
    parser.add_argument(
        "--timeout", type=int, default=300, help="seconds per notebook cell and for the tests"
    )
    args = parser.parse_args(argv)

    from .backend import probe_gpu, select_backend

    probe = probe_gpu()
    if not probe.ok:
        print(f"gpu_check: no usable NVIDIA GPU on this machine ({probe.reason}); nothing was run.",
              file=sys.stderr)
        return NO_GPU_STATUS
    be = select_backend("gpu", probe)
    root = course_root(args.root)
    started = time.perf_counter()
    prov = provenance(root, be.gpu)
    print(
        f"gpu_check on {be.gpu.name} ({prov['compute capability']}), course at {root}", flush=True
    )

    out_dir = Path(args.out) if args.out else root / "course" / "gpu_runs"
    record_file = Path(tempfile.mkdtemp(prefix="gpu_check_")) / "records.jsonl"
    env = run_env(record_file, args.jobs)
    if args.jobs > 1:
        print(
            f"--jobs {args.jobs}: XLA_PYTHON_CLIENT_PREALLOCATE=false, so that {args.jobs} JAX"
            " processes share the GPU; the notebooks' timings disturb each other",
            flush=True,
        )

    tests = None
    if not args.skip_tests:
        tests = run_tests(root, {**env, records.NOTEBOOK_ENV: "tests"}, timeout=args.timeout)
        print(
            f"GPU-marked tests: {tests['passed']} passed, {tests['failures']} failed,"
            f" {tests['errors']} errors, {tests['skipped']} skipped ({tests['seconds']:.0f} s)",
            flush=True,
        )
        if not tests["ok"]:
            print("\n".join("  " + t for t in tests["tail"]), flush=True)

    runs: list[NotebookRun] = []
    if not args.skip_notebooks:
        paths = notebooks(root, args.only)

        def one(p: Path) -> NotebookRun:
            run = execute(
                p, root, {**env, records.NOTEBOOK_ENV: str(p.relative_to(root))}, args.timeout
            )
            print(
                f"  {run.path:50} {run.seconds:6.1f} s "
                f" {'ok' if run.ok else 'FAILED: ' + run.error}",
                flush=True,
            )
            return run

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            runs = list(pool.map(one, paths))

    recs = records.load(record_file)
    total = time.perf_counter() - started
    print("\n" + records.table(recs))
    print(
        f"\ntotal {total:.0f} s (budget {BUDGET_S} s){'  OVER BUDGET' if total > BUDGET_S else ''}"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{slug(prov['gpu'])}_{prov['date (UTC)'][:10]}"
    (out_dir / f"{stem}.md").write_text(render(prov, tests, runs, recs, total), encoding="utf-8")
    (out_dir / f"{stem}.json").write_text(
        json.dumps(
            {
                "provenance": prov,
                "tests": tests,
                "notebooks": [asdict(r) for r in runs],
                "records": [asdict(r) for r in recs],
                "seconds": total,
            },
            indent=1,
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    print(f"wrote {out_dir / (stem + '.md')} and .json: commit them")
    ok = (tests is None or tests["ok"]) and all(r.ok for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
