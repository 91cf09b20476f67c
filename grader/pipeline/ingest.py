"""Stage 1, ingest: a class export (a folder or a zip, one notebook or one folder per student)
becomes ``grading/submitted/<student>/<lab>/<lab>.ipynb`` — raw bytes, nothing parsed or executed
yet (preflight cleans them at grading time). Zip slips, symlinks and zip bombs are refused; odd and
non-ASCII names are kept (made file-system safe); renamed notebooks and extra files are reported per
student."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import zipfile
from pathlib import Path

from .lab import Lab
from .preflight import MAX_NOTEBOOK_BYTES
from .workspace import Workspace

MAX_ZIP_BYTES = 500 << 20          # total uncompressed size accepted from one zip export


def student_id(name: str) -> str:
    """A file-system-safe, stable id for a student from a file or folder name (Korean names are
    kept)."""
    stem = unicodedata.normalize("NFC", name)
    stem = re.sub(r"\.(ipynb|json|zip)$", "", stem, flags=re.I)
    clean = re.sub(r"[^\w.-]+", "_", stem, flags=re.U).strip("._-")[:80]
    return (
        clean
        or "student_" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    )


def _skip(parts: tuple[str, ...]) -> bool:
    return any(
        p.startswith(".") or p in ("__MACOSX", "__pycache__", ".ipynb_checkpoints") for p in parts
    )


def _collect(entries: dict[tuple[str, ...], bytes]) -> dict[str, dict[tuple[str, ...], bytes]]:
    """Group files by student: the first path component (a folder, or a file's stem) names the
    student. A single top-level folder (a zip's wrapper) is descended into."""
    entries = {k: v for k, v in entries.items() if k and not _skip(k)}
    while entries and len({k[0] for k in entries}) == 1 and all(len(k) > 1 for k in entries):
        entries = {k[1:]: v for k, v in entries.items()}
    groups: dict[str, dict[tuple[str, ...], bytes]] = {}
    for parts, data in sorted(entries.items()):
        groups.setdefault(parts[0], {})[parts] = data
    return groups


def _read_source(source: Path) -> dict[tuple[str, ...], bytes]:
    if source.is_file() and zipfile.is_zipfile(source):
        out, total = {}, 0
        with zipfile.ZipFile(source) as zf:
            for info in zf.infolist():
                # folders, symlinks
                if info.is_dir() or (info.external_attr >> 16) & 0o170000 == 0o120000:
                    continue
                parts = tuple(
                    p
                    for p in info.filename.replace("\\", "/").split("/")
                    if p not in ("", ".", "..")
                )
                total += info.file_size
                if total > MAX_ZIP_BYTES:
                    raise SystemExit(
                        f"{source}: more than {MAX_ZIP_BYTES >> 20} MB uncompressed: refusing (zip"
                        " bomb?)"
                    )
                with zf.open(info) as fh:
                    out[parts] = fh.read(MAX_NOTEBOOK_BYTES + 1)
        return out
    if source.is_dir():
        return {p.relative_to(source).parts: p.read_bytes()[: MAX_NOTEBOOK_BYTES + 1]
                for p in sorted(source.rglob("*")) if p.is_file() and not p.is_symlink()}
    if source.is_file():
        return {(source.name,): source.read_bytes()[: MAX_NOTEBOOK_BYTES + 1]}
    raise SystemExit(f"{source}: no such folder or zip file")


def import_submissions(lab: Lab, source: Path, ws: Workspace) -> list[dict]:
    """Copy each student's notebook into grading/submitted/<student>/<lab>/ (raw bytes; preflight
    cleans them at grading time). Re-importing the same export changes nothing; a changed file
    replaces the old one."""
    groups = _collect(_read_source(Path(source)))
    records, seen = [], {}
    for owner, files in groups.items():
        sid = student_id(owner)
        if sid in seen and seen[sid] != owner:  # two names that clean to the same id
            sid = f"{sid}_{hashlib.sha256(owner.encode()).hexdigest()[:6]}"
        seen[sid] = owner
        notebooks = {k: v for k, v in files.items() if k[-1].lower().endswith(".ipynb")}
        issues = []
        if len(notebooks) > 1:  # prefer the expected name, else the largest
            named = {k: v for k, v in notebooks.items() if k[-1] == f"{lab.notebook}.ipynb"}
            pick = sorted(named or notebooks, key=lambda k: (-len(notebooks[k]), k))[0]
            issues.append(
                f"several notebooks ({', '.join('/'.join(k) for k in sorted(notebooks))}): graded "
                f"{'/'.join(pick)}"
            )
        elif notebooks:
            pick = next(iter(notebooks))
        # no .ipynb: a single file is taken as the notebook (renamed .json/.txt), else nothing
        else:
            pick = next(iter(files)) if len(files) == 1 else None
        if pick is not None and len(pick) > 1 and pick[-1] != f"{lab.notebook}.ipynb":
            # (a top-level file is named after its student: that is how one-file-per-student exports
            # look)
            issues.append(
                f"notebook was named {'/'.join(pick)!r} (expected {lab.notebook}.ipynb): graded"
                " anyway"
            )
        extra = sorted('/'.join(k) for k in files if k != pick)
        if extra:
            issues.append(
                f"ignored extra files: {', '.join(extra[:10])}{' …' if len(extra) > 10 else ''}"
            )
        data = files[pick] if pick is not None else b""
        dest = ws.submitted(sid, lab)
        dest.parent.mkdir(parents=True, exist_ok=True)
        origin = {"original": owner, "file": "/".join(pick) if pick else None,
                  "sha256": hashlib.sha256(data).hexdigest(), "import_issues": issues}
        if not dest.exists() or dest.read_bytes() != data:
            dest.write_bytes(data)
        (dest.parent / ".origin.json").write_text(
            json.dumps(origin, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        records.append({"student": sid, **origin})
    return records


def origin_of(ws: Workspace, student: str, lab: Lab) -> dict:
    """What the import recorded about a student's submission ({} when it was placed there by
    hand)."""
    path = ws.submitted(student, lab).parent / ".origin.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
