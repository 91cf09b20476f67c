"""The sandboxed kernel's entry point (the argv of the grading kernelspec, inside bubblewrap).

Exactly ``python -m ipykernel_launcher``, after two things that must happen before any cell runs:
reading the per-student hidden-case seeds (:mod:`grader.seeding`, which also removes their file's
name from the environment), and leaving the mark by which the grader knows that *this* kernel ran
the notebook (were the job's nbgrader config not applied, nbgrader would quietly start its default,
unsandboxed kernel instead).
"""

import os
import sys

# as ipykernel_launcher: the working directory is not an import path
if sys.path and sys.path[0] == "":
    del sys.path[0]

import grader.seeding  # noqa: E402,F401  (read the seeds now, before student code)
from ipykernel import kernelapp  # noqa: E402

MARK_ENV = "GRADER_KERNEL_MARK"

if __name__ == "__main__":
    mark = os.environ.pop(MARK_ENV, "")
    if mark:
        with open(mark, "w", encoding="utf-8") as fh:
            fh.write("sandboxed kernel started\n")
    kernelapp.launch_new_instance()
