"""Students' servers: fetch, validate and submit only; the instructor's Formgrader is not loaded."""

c = get_config()  # noqa: F821
c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
}
