"""The instructor's grading secret and the per-student hidden-case seeds derived from it.

Hidden cases must differ between students (a student who records the arguments their function was
called with and prints them would otherwise hand the whole class a lookup table), yet grading must
stay deterministic and re-gradable. So every (lab, student, problem) gets its own seed::

    seed = first 8 bytes of HMAC-SHA256(secret, "<lab>/<student>/<problem>")   (big-endian integer)

The secret lives with the instructor, never in the repository and never in a sandbox (only the
derived per-problem seeds of the one student being graded go in, as a read-only file:
:mod:`grader.seeding`):

- ``GPUCOURSE_GRADING_SECRET`` (the secret itself, at least 16 characters), else
- the file ``GPUCOURSE_GRADING_SECRET_FILE``, else ``$XDG_CONFIG_HOME/gpucourse/grading-secret``
  (default ``~/.config/gpucourse/grading-secret``), created with mode 0600 on the first ``python -m
  grader grade`` (its folder 0700). A secret file that others can read is refused.

**Back it up.** If it is lost, a new one is created and every hidden case changes: regrading then
gives grades on different cases (the results record the secret's fingerprint, and the command says
when it changed).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

SECRET_ENV = "GPUCOURSE_GRADING_SECRET"
SECRET_FILE_ENV = "GPUCOURSE_GRADING_SECRET_FILE"
MIN_SECRET_CHARS = 16


@dataclass(frozen=True)
class Secret:
    value: bytes = b""               # never printed: see __repr__
    origin: str = ""                 # where it came from (a path, or the environment variable)
    created: bool = False            # made just now (first grading run on this account)

    def __repr__(self) -> str:
        return f"Secret(origin={self.origin!r}, fingerprint={self.fingerprint()})"

    def fingerprint(self) -> str:
        """A short public id of the secret (recorded in results; reveals nothing about it)."""
        return hmac.new(
            self.value, b"gpucourse grading-secret fingerprint", hashlib.sha256
        ).hexdigest()[:12]

    def seed(self, lab: str, student: str, problem: str) -> int:
        digest = hmac.new(
            self.value, f"{lab}/{student}/{problem}".encode(), hashlib.sha256
        ).digest()
        return int.from_bytes(digest[:8], "big")

    def seeds(self, lab: str, student: str, problems: list[str]) -> dict[str, int]:
        """problem -> its seed for this student of this lab."""
        return {p: self.seed(lab, student, p) for p in problems}


def secret_path() -> Path:
    if os.environ.get(SECRET_FILE_ENV):
        return Path(os.environ[SECRET_FILE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "gpucourse" / "grading-secret"


def load_secret(create: bool = True) -> Secret:
    """The instructor's secret: from the environment, else the secret file (created on first
    use)."""
    env = os.environ.get(SECRET_ENV)
    if env is not None:
        if len(env.strip()) < MIN_SECRET_CHARS:
            raise SystemExit(
                f"{SECRET_ENV} is shorter than {MIN_SECRET_CHARS} characters: use a long random "
                "value (python3 -c 'import secrets; print(secrets.token_hex(32))')"
            )
        return Secret(env.strip().encode(), f"${SECRET_ENV}")
    path = secret_path()
    if path.exists():
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SystemExit(
                f"{path} is readable by other users (mode {stat.S_IMODE(mode):o}): the grading"
                f" secret decides every student's hidden cases. Run: chmod 600 {path}"
            )
        value = path.read_text(encoding="utf-8").strip()
        if len(value) < MIN_SECRET_CHARS:
            raise SystemExit(
                f"{path}: the grading secret is shorter than {MIN_SECRET_CHARS} characters"
            )
        return Secret(value.encode(), str(path))
    if not create:
        raise SystemExit(f"no grading secret: set {SECRET_ENV} or create {path}")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
    return Secret(value.encode(), str(path), created=True)


def write_seed_file(path: Path, lab: str, student: str, seeds: dict[str, int], owner: int | None,
                    cases: dict[str, list] | None = None) -> Path:
    """The one student's seeds (and, for a split lab, hidden cases as data: arguments only) as the
    sandbox reads them (grader.seeding): mode 0400, owned by the sandbox user when there is one
    (nobody else can read them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"lab": lab, "student": student, "seeds": seeds, "cases": cases or {}}, fh)
    if owner is not None:
        os.chown(path, owner, owner)
    path.chmod(0o400)
    return path
