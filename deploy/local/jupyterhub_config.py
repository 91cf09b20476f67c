"""JupyterHub for one machine (a lab server, a workstation with a GPU): real Linux users, LocalProcessSpawner,
nbgrader's exchange on local disk. Good up to a few dozen concurrent students (~160 MiB RAM per open server).

    sudo jupyterhub -f deploy/local/jupyterhub_config.py     # see deploy/README.md for the set-up steps

Everything site-specific comes from environment variables (defaults in brackets):
  GPUCOURSE_VENV        a Python environment with the student edition installed (python -m grader student-edition),
                        readable by every user [/opt/gpucourse/venv]
  GPUCOURSE_EXCHANGE    nbgrader's exchange, mode 0777, created by the administrator [/srv/nbgrader/exchange]
  GPUCOURSE_COURSE_ID   nbgrader course id (must match grader/nbgrader_config.py) [gpu-course]
  GPUCOURSE_INSTRUCTORS comma-separated Linux user names of the instructors [instructor]
  GPUCOURSE_STUDENTS    a file with one student user name per line [/srv/gpucourse/students.txt]
  GPUCOURSE_COURSE_DIR  each instructor's checkout of the course, relative to their home [gpu-course]
tests/hub/ runs this very file (through load_subconfig) on loopback with a dummy authenticator.
"""

import os
import pwd

c = get_config()  # noqa: F821 (provided by traitlets)

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.environ.get("GPUCOURSE_VENV", "/opt/gpucourse/venv")
EXCHANGE = os.environ.get("GPUCOURSE_EXCHANGE", "/srv/nbgrader/exchange")
COURSE_ID = os.environ.get("GPUCOURSE_COURSE_ID", "gpu-course")
COURSE_DIR = os.environ.get("GPUCOURSE_COURSE_DIR", "gpu-course")
INSTRUCTORS = {u.strip() for u in os.environ.get("GPUCOURSE_INSTRUCTORS", "instructor").split(",") if u.strip()}
STUDENTS_FILE = os.environ.get("GPUCOURSE_STUDENTS", "/srv/gpucourse/students.txt")
STUDENTS = set()
if os.path.exists(STUDENTS_FILE):
    with open(STUDENTS_FILE, encoding="utf-8") as f:
        STUDENTS = {line.strip() for line in f if line.strip() and not line.startswith("#")}
CONFIG = os.path.join(HERE, "jupyter-config")  # per-role Jupyter config folders (nbgrader + server settings)

# Who may log in: Linux accounts (PAM, JupyterHub's default authenticator) listed here.
c.Authenticator.allowed_users = STUDENTS | INSTRUCTORS
c.Authenticator.admin_users = set(INSTRUCTORS)

# Each user's server runs as that Linux user (LocalProcessSpawner, JupyterHub's default) from the shared venv.
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = [os.path.join(VENV, "bin", "python"), "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


def _is_instructor(spawner) -> bool:
    return spawner.user.name in INSTRUCTORS


def _config_path(spawner) -> str:
    """Instructors: their checkout's grader/ (the course's nbgrader config: course root = the checkout) first;
    everyone: the shared settings (exchange, course id)."""
    dirs = [os.path.join(CONFIG, "all")]
    if _is_instructor(spawner):
        home = pwd.getpwnam(spawner.user.name).pw_dir
        dirs = [os.path.join(home, COURSE_DIR, "grader"), os.path.join(CONFIG, "instructor")] + dirs
    else:
        dirs = [os.path.join(CONFIG, "student")] + dirs
    return os.pathsep.join(dirs)


c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": _config_path,
    # nbgrader runs `alembic` from PATH; the course picks the GPU when the user's server can see one
    "PATH": os.pathsep.join([os.path.join(VENV, "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
    "GPUCOURSE_EXCHANGE": EXCHANGE,
    "GPUCOURSE_COURSE_ID": COURSE_ID,
    "GPUCOURSE_BACKEND": "auto",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}


# Ports. LocalProcessSpawner picks a free port by binding port 0 and letting it go; when a class logs in at
# once, two spawners can be handed the same port before either server binds it. The second server then fails
# to start while the hub, polling that port, finds the first user's server answering, and routes the second
# user to it (seen at 20 simultaneous spawns: a student's requests reached another student's server, which
# answered 404). So each spawn gets a port no other running server of this hub holds.
_PORTS: dict[str, int] = {}  # server (user/name) -> the port this hub handed it


def _server_key(spawner) -> str:
    return f"{spawner.user.name}/{spawner.name}"


def _allocate_port(spawner) -> int:
    from jupyterhub.utils import random_port

    key = _server_key(spawner)
    _PORTS.pop(key, None)
    taken = set(_PORTS.values())
    for _ in range(1000):
        port = random_port()
        if port not in taken:
            _PORTS[key] = port
            return port
    raise RuntimeError("no free port for a user's server")


def _pre_spawn(spawner):
    spawner.port = _allocate_port(spawner)
    # Instructors open in their course checkout (Formgrader links into it); students in their home.
    if _is_instructor(spawner):
        spawner.notebook_dir = os.path.join(pwd.getpwnam(spawner.user.name).pw_dir, COURSE_DIR)


def _post_stop(spawner):
    _PORTS.pop(_server_key(spawner), None)


c.Spawner.pre_spawn_hook = _pre_spawn
c.Spawner.post_stop_hook = _post_stop
