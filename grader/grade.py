"""The instructor's grading workflow around nbgrader: import, autograde (sandboxed, parallel),
feedback, CSV, report.

    python -m grader release [LAB ...]                  # regenerate labs/ from solutions/ (what
                                                        # students get)
    python -m grader import LAB SOURCE                  # a folder or a .zip export: one notebook
                                                        # per student
    python -m grader autograde LAB [--jobs N]           # grade every imported submission in the
                                                        # sandbox
    python -m grader grade LAB SOURCE                   # all of it: import, autograde, feedback,
                                                        # CSV, report (prints one line per
                                                        # student; the report file has it all)
    python -m grader report LAB / export LAB            # print the per-student report / write the
                                                        # CSV again

The pipeline lives in :mod:`grader.pipeline`, one module per stage (its docstring walks them from
the export to the CSV); this module only gathers the names the command, the benchmark and the tests
use.
"""

from __future__ import annotations

from .pipeline.autograde import KERNEL_NAME, cell_started, released_notebook, template  # noqa: F401
from .pipeline.classroom import autograde  # noqa: F401
from .pipeline.ingest import MAX_ZIP_BYTES, import_submissions, student_id  # noqa: F401
from .pipeline.job import grade_submission  # noqa: F401
from .pipeline.lab import Lab, prepare_process  # noqa: F401
from .pipeline.preflight import (
    MAX_NOTEBOOK_BYTES,
    MAX_SOURCE_BYTES,
    decode_notebook,
    preflight,
)  # noqa: F401
from .pipeline.publish import (
    export_csv,
    feedback_html,
    lab_tests,
    load_results,
    report,
    summary,
)  # noqa: F401
from .pipeline.recheck import Check, parse_checks, plan  # noqa: F401
from .pipeline.secret import Secret, load_secret  # noqa: F401
from .pipeline.verdict import verdicts  # noqa: F401
from .pipeline.wire import Unsupported, decode, encode  # noqa: F401
from .pipeline.workspace import GRADER_VERSION, Settings, Workspace  # noqa: F401
from .sandbox import run_limited as _run  # noqa: F401


def __getattr__(name: str):  # lazy: importing grader.grade must not import jupyter_client
    if name == "SandboxKernelManager":
        from .pipeline import autograde as _autograde

        return _autograde.SandboxKernelManager
    raise AttributeError(name)
