"""nbgrader configuration of the course.

The course root is the repository root (this file's parent's parent): instructor sources live in
``solutions/<lab>/``, student versions are generated into ``labs/<lab>/``. JupyterLab and the
grading command find this file through ``JUPYTER_CONFIG_PATH`` (``python -m gpucourse lab`` and
``python -m grader`` set it).
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

c.CourseDirectory.root = ROOT
c.CourseDirectory.course_id = "gpu-course"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
# The py:percent twins of the notebooks hold the solutions: never copy them into labs/.
c.CourseDirectory.ignore = [
    ".ipynb_checkpoints",
    "*.pyc",
    "__pycache__",
    "feedback",
    "*.py",
    ".jupytext*",
]

# Test cells call grader's check functions; the stub tells the student roughly how long an answer
# is.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Cells run at most 60 s each when grading (the slowest graded cell takes a few seconds).
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# Feedback must not reveal hidden tests.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbgrader.preprocessors.ClearHiddenTests",
]
