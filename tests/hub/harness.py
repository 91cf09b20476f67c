"""A real JupyterHub on loopback for the class-scale test and benchmark: deploy/local/jupyterhub_config.py
(LocalProcessSpawner, real Linux users) + configurable-http-proxy (npm) + nbgrader's exchange, driven through
the hub's REST API with one service token (release → fetch → fill → submit → collect), graded with the
project's grading command run as the instructor.

Facts relied on (../shared/notes/jupyterlab-and-hub-facts.md): the hub runs as root; the users' Python must be
readable by them — the project's venv usually is not (its interpreter lives in root's home), so the users get a
venv made from an identical interpreter they can run (this one, /usr/bin/python3 if its version is the same to
the patch level, else a private copy of this one's binary and standard library) whose .pth adds the project
venv's site-packages for the third-party packages (nothing is downloaded; a different patch level broke
soupsieve, hence "identical"); the exchange root must exist, mode 0777; `useradd` homes are 0755, so they are set
to 0700.

The course itself is installed as deploy/local says: the *student edition* (``python -m grader student-edition``,
built from the instructor's checkout) in the users' venv — never this checkout's editable install, whose import
hook would map ``grader`` (answers included) to the checkout. The instructor grades in their own checkout, in
their 0700 home. While the hub runs, this checkout (solutions/, grader/answers/, ...) is closed to other users
except the way to the venv (:func:`close_checkout`), as an instructor's checkout is on a class machine.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_CONFIG = ROOT / "deploy" / "local" / "jupyterhub_config.py"
COURSE_ID = "gpu-course"
LAB = "lab01_blas_roofline"
CHECKOUT_PARTS = ("solutions", "labs", "grader", "gpucourse", "course")


def missing_tools() -> str | None:
    """Why the hub test cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "needs root (the hub spawns servers as real Linux users)"
    for tool in ("useradd", "userdel", "su"):
        if not shutil.which(tool):
            return f"`{tool}` is missing"
    if not shutil.which("configurable-http-proxy"):
        return "configurable-http-proxy is missing (npm install -g configurable-http-proxy)"
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "JupyterHub is not installed (pip install -e '.[e2e]')"
    if users_python() is None and not (Path(sys.base_prefix) / "lib").is_dir():
        return "no interpreter other users can run, and this one cannot be copied"
    if not _readable_by_others(Path(sysconfig.get_paths()["purelib"])):
        return "the venv's site-packages is not readable by other users"
    return None


def grant_traversal() -> list[tuple[Path, int]]:
    """Let other users *traverse* (o+x, not list) the folders above this venv's site-packages, so the hub's real
    users can import the third-party packages; CI clones into a 0700 temporary folder.
    Returns what to restore with :func:`restore_modes`."""
    changed = []
    for target in (Path(sysconfig.get_paths()["purelib"]),):
        for p in [target.resolve(), *target.resolve().parents]:
            mode = p.stat().st_mode
            if not mode & 0o001:
                changed.append((p, mode))
                p.chmod((mode & 0o7777) | 0o001)
    return changed


# What the grading sandbox binds of this checkout (grader/sandbox.py): the sandbox's users (64000 + slot) must read
# them while the hub test runs, because tests on the other pytest worker grade at the same time. Their answer side
# (grader/answers) is closed instead: it is what a student must never read, and the sandbox hides it anyway.
SANDBOX_PACKAGES = ("gpucourse", "grader")


def close_checkout() -> list[tuple[Path, int]]:
    """Close this checkout to other users for the hub's run, but for the way to the venv's site-packages (when the
    venv lives inside it) and the two packages the grading sandbox reads: the checkout itself keeps only o+x (no
    listing), every other entry of it (solutions/, labs/, tests/, ...) and grader/answers lose o+rwx. Root (the
    test) is not affected. Returns what to restore with :func:`restore_modes`."""
    keep = Path(sysconfig.get_paths()["purelib"]).resolve()
    root = ROOT.resolve()
    changed = []
    entries = [p for p in sorted(root.iterdir()) if p.name not in SANDBOX_PACKAGES] + [root / "grader" / "answers"]
    for p in [root, *entries]:
        if p.is_symlink() or not p.exists() or p == keep or p in keep.parents and p != root:
            continue
        mode = p.stat().st_mode
        new = mode & ~(0o006 if p == root else 0o007)
        if new != mode:
            changed.append((p, mode))
            p.chmod(new & 0o7777)
    return changed


def build_edition(checkout: Path, dest: Path) -> Path:
    """The student edition built from the instructor's checkout, as the administrator does before installing it
    (``python -m grader student-edition DEST``, run with that checkout's grader). Returns the wheel."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    run = subprocess.run([sys.executable, "-m", "grader", "student-edition", str(dest)], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise RuntimeError(f"python -m grader student-edition failed:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}")
    return next(dest.glob("gpucourse-*.whl"))


def restore_modes(changed: list[tuple[Path, int]]) -> None:
    for p, mode in reversed(changed):
        p.chmod(mode & 0o7777)


def _readable_by_others(path: Path) -> bool:
    path = path.resolve()
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if not (mode & 0o001) or (p == path and not mode & 0o004):
            return False
    return True


def users_python() -> str | None:
    """An interpreter other users can run that is *exactly* this one's version (the project venv's packages are
    shared with it): sys.executable when other users can reach it, else /usr/bin/python3 when its version is
    identical, else None (then `private_python_copy` makes one)."""
    for candidate in (Path(sys.executable), Path("/usr/bin/python3")):
        real = candidate.resolve()
        if not real.exists() or not _readable_by_others(real.parent) or not os.stat(real).st_mode & 0o001:
            continue
        out = subprocess.run([str(real), "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                             timeout=30)
        if out.stdout.strip() == sys.version:
            return str(candidate)
    return None


def private_python_copy(dest: Path) -> tuple[Path, Path]:
    """A copy of this interpreter (binary, libpython, standard library: ~150 MB, a few seconds) that other users
    can run, for when it lives in a private folder (pyenv in /root). Returns (python, its lib dir): the binary's
    RUNPATH still names the private folder, so LD_LIBRARY_PATH must point at the copy's lib/."""
    base = Path(sys.base_prefix)
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (dest / "bin").mkdir(parents=True)
    (dest / "lib").mkdir()
    shutil.copy2(base / "bin" / ver, dest / "bin" / ver)
    for lib in (base / "lib").glob("libpython*"):
        shutil.copy2(lib, dest / "lib" / lib.name, follow_symlinks=True)
    shutil.copytree(base / "lib" / ver, dest / "lib" / ver, symlinks=True, ignore=shutil.ignore_patterns(
        "site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"))
    (dest / "lib" / ver / "site-packages").mkdir()
    for p in (dest, *dest.rglob("*")):
        p.chmod(p.stat().st_mode | 0o005 if p.is_dir() or os.access(p, os.X_OK) else p.stat().st_mode | 0o004)
    return dest / "bin" / ver, dest / "lib"


def make_users_venv(dest: Path, wheel: Path) -> tuple[Path, Path | None]:
    """A venv for the users: made from an interpreter they can run, identical to this one, with the student
    edition's ``wheel`` installed in it and a .pth that adds this venv's site-packages for the third-party packages
    (nothing is downloaded). That folder is added as a plain path, and its .pth files are copied but for the
    editable install's, whose import hook would map ``grader`` to this checkout. Returns (its python, the
    LD_LIBRARY_PATH it needs or None). nbgrader calls `alembic` from PATH, so bin/ gets an alembic script."""
    python, libdir = users_python(), None
    if python is None:
        python, libdir = private_python_copy(dest.parent / "python")
    env = {**os.environ, "LD_LIBRARY_PATH": str(libdir)} if libdir else None
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(dest)], check=True, timeout=120, env=env)
    site = Path(subprocess.run([str(dest / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, env=env).stdout.strip())
    project_site = Path(sysconfig.get_paths()["purelib"])
    (site / "00-gpucourse-project-site.pth").write_text(f"{project_site}\n")  # first: the others import from it
    for pth in sorted(project_site.glob("*.pth")):
        if not pth.name.startswith("__editable__"):
            shutil.copy2(pth, site / pth.name)
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                                "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if installed.returncode != 0:
        raise RuntimeError(f"installing the student edition failed: {installed.stderr[-3000:]}")
    python = dest / "bin" / "python"
    for script, module in (("alembic", "alembic.config"), ("jupyter", "jupyter_core.command")):
        path = dest / "bin" / script
        path.write_text(f"#!{python}\nimport sys\nfrom {module} import main\nsys.exit(main())\n")
        path.chmod(0o755)
    # Jupyter finds server extensions, lab extensions and kernelspecs under sys.prefix: share the project's
    for sub in ("etc/jupyter", "share/jupyter"):
        (dest / sub).parent.mkdir(parents=True, exist_ok=True)
        if (Path(sys.prefix) / sub).exists():
            (dest / sub).symlink_to(Path(sys.prefix) / sub)
    dest.chmod(0o755)
    return python, libdir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Result:
    """What the workflow measured and produced."""
    seconds: dict[str, float] = field(default_factory=dict)
    grades: dict[str, tuple[float, float]] = field(default_factory=dict)  # student -> (score, max)
    grading_command: str = ""
    report: str = ""  # the grading command's per-student report (shown when a grade is wrong)


class Hub:
    """Users, exchange, the hub process, and a REST client with the driver service's token."""

    def __init__(self, n_students: int, keep: bool = False):
        self.tag = "gc" + secrets.token_hex(2)
        self.instructor = f"{self.tag}prof"
        self.students = [f"{self.tag}s{i:02d}" for i in range(1, n_students + 1)]
        self.tmp = Path(tempfile.mkdtemp(prefix="gpucourse-hub-"))
        self.tmp.chmod(0o755)
        self.exchange = self.tmp / "exchange"
        self.token = secrets.token_hex(24)
        self.port, self.hub_port, self.api_port = free_port(), free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.created: list[str] = []
        self.keep = keep
        self.python: Path | None = None
        self.libdir: Path | None = None  # LD_LIBRARY_PATH of a private interpreter copy
        self.marker = f"HUB-ANSWER-SIDE-MARKER-{secrets.token_hex(12)}"  # planted in the instructor's answers

    def checkout(self) -> Path:
        return self.home(self.instructor) / "gpu-course"

    # -- set-up ------------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.exchange.mkdir()
        self.exchange.chmod(0o777)  # nbgrader won't create it; it makes <course>/inbound write-only itself
        (self.tmp / "home").mkdir(mode=0o755)
        for user in [self.instructor, *self.students]:
            home = self.tmp / "home" / user
            subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash",
                            "--user-group", user], check=True, capture_output=True, timeout=30)
            self.created.append(user)
            home.chmod(0o700)  # useradd made it 0755: students could read each other's work
        # the instructor's checkout of the course (nbgrader's course root is its folder), with a marker planted in a
        # reference module and a solution: the end-to-end test looks for it wherever a student can read
        checkout = self.checkout()
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "gradebook.db")
        for part in CHECKOUT_PARTS:
            shutil.copytree(ROOT / part, checkout / part, ignore=ignore)
        for name in ("pyproject.toml", "README.md"):  # the edition's wheel is built from them
            shutil.copy2(ROOT / name, checkout / name)
        for planted in (checkout / "grader" / "answers" / "lab05b_kernel_puzzles.py",
                        checkout / "solutions" / LAB / f"{LAB}.py"):
            with open(planted, "a", encoding="utf-8") as fh:
                fh.write(f'\n_MARKER = "{self.marker}"\n')
        # what the administrator installs for everyone: the student edition built from that checkout
        edition = self.tmp / "edition"
        wheel = build_edition(checkout, edition)
        shutil.rmtree(edition / "src", ignore_errors=True)
        subprocess.run(["chown", "-R", f"{self.instructor}:{self.instructor}", str(checkout)], check=True)
        self.python, self.libdir = make_users_venv(self.tmp / "venv", wheel)
        (self.tmp / "students.txt").write_text("\n".join(self.students) + "\n")
        # the hub's config where every user's server can read its per-role Jupyter config (deploy/README.md copies
        # deploy/ to /opt/gpucourse/deploy): not in this checkout, which is closed to them
        shutil.copytree(ROOT / "deploy", self.tmp / "deploy", ignore=shutil.ignore_patterns("__pycache__"))
        for p in (self.tmp / "deploy", *(self.tmp / "deploy").rglob("*")):  # readable by all (copied modes may not be)
            p.chmod(0o755 if p.is_dir() else 0o644)
        hubdir = self.tmp / "hub"
        hubdir.mkdir(mode=0o700)
        (hubdir / "jupyterhub_config.py").write_text(f"""
c = get_config()
load_subconfig({str(self.tmp / "deploy" / DEPLOY_CONFIG.relative_to(ROOT / "deploy"))!r})
# loopback test overrides: dummy passwords instead of PAM, free ports, a driver service
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {self.token!r}
c.JupyterHub.bind_url = {self.base + '/'!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.api_port}"
c.JupyterHub.db_url = "sqlite:///{hubdir / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(hubdir / 'cookie_secret')!r}
c.ConfigurableHTTPProxy.pid_file = {str(hubdir / 'proxy.pid')!r}
c.JupyterHub.services = [{{"name": "course-driver", "api_token": {self.token!r}}}]
c.JupyterHub.load_roles = [{{"name": "course-driver", "services": ["course-driver"],
    "scopes": ["admin:users", "admin:servers", "access:servers", "tokens", "list:users", "read:users"]}}]
c.Spawner.start_timeout = 120
""" + (f"c.Spawner.environment['LD_LIBRARY_PATH'] = {str(self.libdir)!r}\n" if self.libdir else ""))

    def home(self, user: str) -> Path:
        return self.tmp / "home" / user

    def env(self) -> dict[str, str]:
        return {**os.environ, "GPUCOURSE_VENV": str(self.tmp / "venv"), "GPUCOURSE_EXCHANGE": str(self.exchange),
                "GPUCOURSE_COURSE_ID": COURSE_ID, "GPUCOURSE_INSTRUCTORS": self.instructor,
                "GPUCOURSE_STUDENTS": str(self.tmp / "students.txt")}

    def start(self, timeout: float = 90) -> float:
        """Start the hub; seconds until its API answered."""
        t0 = time.monotonic()
        log = open(self.tmp / "hub" / "jupyterhub.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(self.tmp / "hub" / "jupyterhub_config.py")],
                                     cwd=self.tmp / "hub", env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        while time.monotonic() - t0 < timeout:
            try:
                if self.api("GET", "/hub/api/")[0] == 200:
                    return time.monotonic() - t0
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"JupyterHub did not start within {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        path = self.tmp / "hub" / "jupyterhub.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    # -- REST ----------------------------------------------------------------------------------------------
    def api(self, method: str, path: str, body=None, token: str | None = None, form: bool = False,
            timeout: float = 120) -> tuple[int, object]:
        data = None
        headers = {"Authorization": f"token {token or self.token}"}
        if body is not None:
            if form:
                data = urllib.parse.urlencode(body).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def run_in_kernel(self, user: str, code: str, token: str, timeout: float = 180) -> str:
        """Run ``code`` as a notebook would: a new kernel on ``user``'s own server, started through the hub's proxy
        with Jupyter's REST API, the code sent over the kernel's websocket; returns its stdout (an error raised in
        the kernel fails with its traceback). The kernel is shut down afterwards."""
        import asyncio

        prefix = f"/user/{user}"
        status, kernel = self.api("POST", f"{prefix}/api/kernels", {"name": "python3"}, token=token)
        assert status in (200, 201), f"starting a kernel on {user}'s server: HTTP {status} {kernel}"
        try:
            return asyncio.run(asyncio.wait_for(self._execute(prefix, kernel["id"], code, token), timeout))
        finally:
            self.api("DELETE", f"{prefix}/api/kernels/{kernel['id']}", token=token, timeout=30)

    async def _execute(self, prefix: str, kernel_id: str, code: str, token: str) -> str:
        """One execute_request on the kernel's channels websocket (Jupyter's JSON message format); collects the
        stream output of that request until the kernel reports idle for it."""
        import uuid

        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = "ws" + self.base[len("http"):] + f"{prefix}/api/kernels/{kernel_id}/channels"
        ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
        msg_id = uuid.uuid4().hex
        ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "session": uuid.uuid4().hex, "username": "course-test",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        out, error = [], None
        try:
            while True:
                raw = await ws.read_message()
                if raw is None:
                    raise RuntimeError("the kernel's websocket closed before the code finished")
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg.get("msg_type"), msg.get("content", {})
                if kind == "stream":
                    out.append(content.get("text", ""))
                elif kind == "error":
                    error = "\n".join(content.get("traceback", [])) or f"{content.get('ename')}: {content.get('evalue')}"
                elif kind == "status" and content.get("execution_state") == "idle":
                    break
        finally:
            ws.close()
        if error:
            raise AssertionError(f"the code raised in {prefix}'s kernel:\n{error[-3000:]}")
        return "".join(out)

    def spawn_all(self, timeout: float = 180) -> float:
        """Start every user's server (in parallel, as the hub does); seconds until all are ready."""
        from concurrent.futures import ThreadPoolExecutor

        t0 = time.monotonic()
        users = [self.instructor, *self.students]
        self.api("POST", "/hub/api/users", {"usernames": users})  # the hub's user records

        def spawn(user):  # the POST returns when the server is up (201) or still starting (202)
            status, body = self.api("POST", f"/hub/api/users/{user}/server", timeout=timeout)
            assert status in (201, 202), f"spawning {user}: {status} {body}"

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(spawn, users))
        pending = set(users)
        while pending and time.monotonic() - t0 < timeout:
            for user in sorted(pending):
                status, body = self.api("GET", f"/hub/api/users/{user}")
                server = (body or {}).get("servers", {}).get("") if status == 200 else None
                if server and server.get("ready"):
                    pending.discard(user)
            time.sleep(0.5)
        if pending:
            raise RuntimeError(f"servers not ready after {timeout:.0f} s: {sorted(pending)}\n{self.log_tail()}")
        return time.monotonic() - t0

    def user_token(self, user: str) -> str:
        status, body = self.api("POST", f"/hub/api/users/{user}/tokens", {"note": "course test", "expires_in": 3600})
        assert status in (200, 201), f"token for {user}: {status} {body}"
        return body["token"]

    def as_user(self, user: str, command: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """Run a shell command as a real user, with the users' venv first on PATH."""
        setup = (f"export PATH={self.tmp / 'venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin HOME={self.home(user)} "
                 "PYDEVD_DISABLE_FILE_VALIDATION=1" + (f" LD_LIBRARY_PATH={self.libdir}" if self.libdir else "") + "; ")
        return subprocess.run(["su", "-s", "/bin/sh", user, "-c", setup + command],
                              capture_output=True, text=True, timeout=timeout)

    # -- tear-down -------------------------------------------------------------------------------------------
    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            from concurrent.futures import ThreadPoolExecutor

            def stop_server(user):
                try:
                    self.api("DELETE", f"/hub/api/users/{user}/server", timeout=30)
                except OSError:
                    pass

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(stop_server, [self.instructor, *self.students]))
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        for user in self.created:  # whatever a user's server left running: by process id
            ids = subprocess.run(["ps", "-o", "pid=", "-u", user], capture_output=True, text=True).stdout.split()
            for pid in ids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for user in self.created:
            subprocess.run(["userdel", user], capture_output=True, timeout=30)
            subprocess.run(["groupdel", user], capture_output=True, timeout=30)  # usually gone with the user
        self.created.clear()
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# The class workflow

def notebook_path(lab: str = LAB) -> str:
    return f"{lab}/{lab}.ipynb"


WRONG_EXERCISE = "axpy_calls"  # the "wrong" student gets this one wrong and every other one right


def answers_for(kind: str, released: dict) -> dict:
    """The released notebook filled in as a student would: "right" (the instructor's solutions), "wrong" (the
    solutions except WRONG_EXERCISE, which gets its plausible wrong answer from tests/wrong_answers), "blank"."""
    from grader.scratch import fill, load_notebook, solution_cells
    from tests.grading import wrong_answers

    if kind == "blank":
        return released
    right = solution_cells(load_notebook(ROOT / "solutions" / LAB / f"{LAB}.ipynb"))
    if kind == "right":
        return fill(released, right)
    return fill(released, {**right, WRONG_EXERCISE: wrong_answers(LAB)[WRONG_EXERCISE]})


def expected_scores() -> dict[str, float]:
    """kind -> the score nbgrader must give: full, full minus WRONG_EXERCISE's test points, zero."""
    from grader.scratch import exercise_of, load_notebook, test_cells

    tests = test_cells(load_notebook(ROOT / "solutions" / LAB / f"{LAB}.ipynb"))
    full = float(sum(tests.values()))
    lost = float(sum(p for t, p in tests.items() if exercise_of(t) == WRONG_EXERCISE))
    return {"right": full, "wrong": full - lost, "blank": 0.0}


def kinds_for(students: list[str]) -> dict[str, str]:
    """right, wrong, blank, right, wrong, blank, ..."""
    return {s: ("right", "wrong", "blank")[i % 3] for i, s in enumerate(students)}


def release(hub: Hub) -> None:
    """Formgrader's own endpoints on the instructor's server: generate (records the lab in the gradebook), release."""
    base = f"/user/{hub.instructor}/formgrader/api/assignment/{LAB}"
    for action in ("assign", "release"):
        status, body = hub.api("POST", f"{base}/{action}")
        assert status == 200 and isinstance(body, dict) and body.get("success"), f"{action}: {status} {str(body)[:3000]}"


def fetch_fill_submit(hub: Hub, student: str, kind: str) -> None:
    """The student's own server: fetch from the exchange, write the answers, submit."""
    prefix = f"/user/{student}"
    args = {"course_id": COURSE_ID, "assignment_id": LAB}
    status, body = hub.api("POST", f"{prefix}/assignments/fetch", args, form=True)
    assert status == 200 and body.get("success"), f"{student} fetch: {status} {str(body)[:2000]}"
    status, model = hub.api("GET", f"{prefix}/api/contents/{notebook_path()}?content=1")
    assert status == 200, f"{student} cannot open the fetched lab: {status} {model}"
    nb = answers_for(kind, model["content"])
    status, body = hub.api("PUT", f"{prefix}/api/contents/{notebook_path()}", {"type": "notebook", "format": "json", "content": nb})
    assert status == 200, f"{student} save: {status} {body}"
    status, body = hub.api("POST", f"{prefix}/assignments/submit", args, form=True)
    assert status == 200 and body.get("success"), f"{student} submit: {status} {str(body)[:2000]}"


def collect(hub: Hub) -> None:
    status, body = hub.api("POST", f"/user/{hub.instructor}/formgrader/api/assignment/{LAB}/collect")
    assert status == 200 and body.get("success"), f"collect: {status} {str(body)[:3000]}"


def grade(hub: Hub, result: Result) -> None:
    """Autograde, feedback and export as the instructor, in their checkout, with the project's grading command
    (`python -m grader grade`: sandboxed autograde, verdicts re-checked outside the student's process)."""
    py = hub.tmp / "venv" / "bin" / "python"
    course = hub.home(hub.instructor) / "gpu-course"
    # the instructor's own grading secret: created in their ~/.config by this first `grade`, whatever the test
    # runner's environment says
    unset = "env -u GPUCOURSE_GRADING_SECRET -u GPUCOURSE_GRADING_SECRET_FILE -u XDG_CONFIG_HOME "
    job = f"cd {course} && {unset}{py} -m grader grade {LAB} submitted --dir grading --jobs 2"
    result.grading_command = job.split(" && ", 1)[1].replace(unset, "")
    out = hub.as_user(hub.instructor, job)
    assert out.returncode == 0, f"{job}: exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    import csv

    with open(course / "grading" / f"{LAB}_grades.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            result.grades[row["student"]] = (float(row["score"]), float(row["max_score"]))
    result.report = (course / "grading" / f"{LAB}_report.txt").read_text(encoding="utf-8")


def workflow(hub: Hub, kinds: dict[str, str]) -> Result:
    """release → fetch/fill/submit (every student) → collect → autograde → export, timed."""
    result = Result()
    t0 = time.monotonic()
    release(hub)
    result.seconds["release"] = time.monotonic() - t0
    t = time.monotonic()
    for student, kind in kinds.items():
        fetch_fill_submit(hub, student, kind)
    result.seconds["fetch_fill_submit"] = time.monotonic() - t
    t = time.monotonic()
    collect(hub)
    result.seconds["collect"] = time.monotonic() - t
    t = time.monotonic()
    grade(hub, result)
    result.seconds["autograde_export"] = time.monotonic() - t
    result.seconds["workflow"] = time.monotonic() - t0
    return result
