"""Command line: ``python -m gpucourse lab`` opens the course; ``python -m gpucourse info`` prints
the backend."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def course_root() -> Path:
    """The checkout that holds course/, labs/ and grader/ (this package's parent in an editable
    install)."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here, Path.cwd()):
        if (candidate / "course").is_dir() and (candidate / "grader").is_dir():
            return candidate
    raise SystemExit("cannot find the course folder: run this from the root of the course checkout")


def jupyter_env(root: Path) -> dict[str, str]:
    """Environment for JupyterLab and nbgrader: the course's nbgrader config and this env's bin/ on
    PATH."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")  # nbgrader runs `alembic` from here
    paths = [str(root / "grader")] + [
        p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p
    ]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(paths)
    return env


def root_arguments(args: list[str]) -> list[str]:
    """``--allow-root`` when this process runs as root and the arguments do not already allow it:
    Jupyter refuses to start as root otherwise ("Running as root is not recommended. Use
    --allow-root to bypass.")."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    if any("allow-root" in a or "allow_root" in a for a in args):
        return []
    return ["--allow-root"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpucourse", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    lab = sub.add_parser(
        "lab", help="open the course in JupyterLab (nbgrader's extension included)"
    )
    lab.add_argument(
        "jupyter_args", nargs="*", help="extra arguments for `jupyter lab`, e.g. --no-browser"
    )
    sub.add_parser("info", help="print the backend banner")
    args, extra = parser.parse_known_args(argv)
    if extra and args.cmd != "lab":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")

    if args.cmd == "info":
        import gpucourse

        gpucourse.setup()
        return 0
    root = course_root()
    env = jupyter_env(root)
    user_args = [*args.jupyter_args, *extra]
    as_root = root_arguments(user_args)
    if as_root:
        print(
            "running as root (a container, Colab-like image or CI): starting JupyterLab with"
            " --allow-root",
            flush=True,
        )
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={root}",
        *user_args,
        *as_root,
    ]
    print("opening the course:", " ".join(cmd), flush=True)
    os.chdir(root)
    os.execvpe(cmd[0], cmd, env)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
