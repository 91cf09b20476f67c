"""nbgrader settings every user's server shares on the one-machine hub: the course id and the exchange."""

import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = os.environ.get("GPUCOURSE_COURSE_ID", "gpu-course")
c.Exchange.root = os.environ.get("GPUCOURSE_EXCHANGE", "/srv/nbgrader/exchange")
c.Exchange.path_includes_course = False  # students find a fetched lab in ~/<lab>/
# what a student's submit leaves out (JupyterLab's autosave checkpoints, caches)
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
