"""The sandboxed kernel's entry point (the argv of the grading kernelspec, inside bubblewrap).

Exactly ``python -m ipykernel_launcher``, after one thing that must happen before any cell runs: reading the
per-student hidden-case seeds (:mod:`grader.seeding`, which also removes their file's name from the
environment)."""

import sys

if sys.path and sys.path[0] == "":  # as ipykernel_launcher: the working directory is not an import path
    del sys.path[0]

import grader.seeding  # noqa: E402,F401  (read the seeds now, before student code)
from ipykernel import kernelapp  # noqa: E402

if __name__ == "__main__":
    kernelapp.launch_new_instance()
