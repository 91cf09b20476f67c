"""The course's authoring and grading command.

    python -m grader sync        # notebooks <-> py:percent twins in step, outputs stripped
    python -m grader generate    # regenerate labs/ from solutions/ (nbgrader generate_assignment)
    python -m grader check       # fail if pairs are out of step or labs/ is stale (CI does this too)
    python -m grader nbgrader ARGS...   # any nbgrader command with the course's config, e.g.
                                        #   python -m grader nbgrader autograde lab01_blas_roofline
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    syn = sub.add_parser("sync", help="sync notebook pairs and strip outputs")
    syn.add_argument("paths", nargs="*", help="notebooks (.py or .ipynb) to sync; default: all of course/ and solutions/")
    gen = sub.add_parser("generate", help="regenerate labs/ from solutions/")
    gen.add_argument("labs", nargs="*", help="labs to generate; default: all")
    gen.add_argument("--db", action="store_true", help="also record the labs in the gradebook (needed to autograde)")
    sub.add_parser("check", help="check pairs and labs/ (exit 1 when stale)")
    nbg = sub.add_parser("nbgrader", help="run nbgrader with the course config")
    nbg.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    if args.cmd == "sync":
        paths = [course.ROOT / p if not os.path.isabs(p) else Path(p) for p in args.paths]
        changed = course.sync([p.resolve().with_suffix(".ipynb") for p in paths] or None)
        print("\n".join(f"synced {c}" for c in changed) or "all notebook pairs already in step")
        return 0
    if args.cmd == "generate":
        dest = course.generate(use_db=args.db, only=args.labs or None)
        print(f"generated {', '.join(args.labs or course.labs())} into {dest}")
        return 0
    if args.cmd == "check":
        problems = course.out_of_sync() + course.stale_labs()
        print("\n".join(problems) or "notebook pairs in step; labs/ matches solutions/")
        return 1 if problems else 0
    env = course.nbgrader_env()
    os.chdir(course.ROOT)
    os.execvpe(sys.executable, [sys.executable, "-m", "nbgrader", *args.args], env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
