"""Grading side of the course: nbgrader configuration, the exercise shape and the shared check
functions.

``grader`` imports the helper package ``gpucourse``; the helper package never imports ``grader``.
Lab-specific problems live in ``grader.labs.<lab name>``.
"""

from .checks import CheckFailure
from .problem import Case, Problem

__all__ = ["Case", "CheckFailure", "Problem"]
