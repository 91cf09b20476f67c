"""Stage 2, preflight (in the grader, nothing executed): the submitted bytes become a clean notebook
to grade, or None with the reason. Decode (UTF-8, else reported), parse the JSON, strip all outputs,
find the lab's cells by grade_id, restore the lab's nbgrader metadata; report renamed/extra files,
missing, duplicated and edited cells. Bad input is reported, never fatal for the class."""

from __future__ import annotations

import json
import re

from .lab import Lab, nbgrader_meta, source_text

# larger submissions are refused (after outputs are stripped: 2 MB of source)
MAX_NOTEBOOK_BYTES = 100 << 20
MAX_SOURCE_BYTES = 2 << 20
# answer cells that touch the grader's objects, or reach into the grading process itself: flagged
# REVIEW for a human (legitimate answers never need them) (a candidate's identity too: lab 2's
# is_correct_backward must test the candidate, not read which one it is)
SUSPICIOUS = re.compile(
    r"\.reference\b|grader\.labs|grader\.checks|grader\.problem|\bproblems\[|\.form\b|"
    r"answer_sites\b|\bsys\.modules\b|"
    r"\bFORMS\b|\b_form_[a-z]\b|getattr\s*\([^)]*[\"']form[\"']"
)
PROCESS_ESCAPES = re.compile(
    r"\bsys\.argv\b|\b_getframe\b|\bgc\.get_ref|\bctypes\b|\bos\._exit\b|results\.jsonl|"
    r"job\.pickle|grader\.seeding|GRADER_HIDDEN_SEEDS|/proc/self|"
    # frames, the garbage collector's view and functions rebuilt from
    # another's code: how a lock's saved originals or a course function's
    # internals are reached
    r"\bget_objects\b|\bgi_frame\b|\bf_locals\b|\bf_back\b|\bcurrentframe\b|"
    r"\binspect\.stack\b|__globals__|__code__|\bFunctionType\b|"
    # another process, where no lock holds (XLA's count run in a child,
    # say)
    r"\bsubprocess\b|\bos\.system\b|\bos\.popen\b|\bmultiprocessing\b|\bos\.fork\b|"
    # another thread, started before a lock (its profile watch holds in
    # this thread only)
    r"\bthreading\b|\bconcurrent\.futures\b|\bThreadPool|\b_thread\b|"
    # the watch itself
    r"\bsetprofile\b|\bsettrace\b|\bgetprofile\b|\bgettrace\b|"
    # the course's helpers that run code in a child Python (numba-cuda's
    # compiler)
    r"\bnumba_ptx|\bnumba_sass|"
    # counts made from a trace or a compiler's listing outside the locks (the twelfth attack)
    r"\bexperimental\.roofline\b|\binspect_llvm\b|\binspect_asm\b|\bget_llvm_str\b|"
    r"\bget_asm_str\b|"
    # the thirteenth attack: XLA's C++ entry points kept before the lock (no Python code for the
    # watch to see), numba's LLVM module read directly, a library module's source run a second time
    # (new code objects), JAX's rule tables copied
    r"\bjaxlib\b|\b_jax\b|\bxla_client\b|\bxla_extension\b|\bhlo_module_cost_analysis\b|"
    r"\bcompile_and_load\b|\b_final_module\b|\bModuleRef\b|\bexec\s*\(|\beval\s*\(|"
    r"__file__|\bimportlib\b|__import__|\bpublic_test_util\b|\bprimitive_transposes\b|"
    r"\bprimitive_jvps\b|"
    # the sixteenth attack: a library module's source read, edited and run again from another file;
    # the seventeenth: its code objects renamed into another file and made functions again
    r"\brunpy\b|\bgetsource(?:lines)?\b|(?<![.\w])compile\s*\(|\bco_[a-z]+\b|\bCellType\b|"
    r"\btype\s*\(\s*lambda\b|\bgetmembers\b"
)
# answer cells that write what an observation reads: the instrumentation the student's own process
# holds (the device tracker's counters, the virtual clock and its workloads), attributes set by name
# or through __dict__, the course's modules rebound, or a workload's true seconds (lab 1: work_s,
# first_s) or its clock read. The tamper snapshot of the re-check catches replaced functions and
# classes; plain counters are protected by this flag (grader/DESIGN.md, threat model)
INSTRUMENT_WRITES = re.compile(
    r"\.(?:h2d_bytes|d2h_bytes|h2d_copies|peak|calls|timed|reads|leftover|reads_at_first|"
    r"seconds|busy_until|now)\s*[-+*/]?=(?!=)|\bsetattr\s*\(|__setattr__|__dict__|"
    r"\bvars\s*\(|\bgpucourse(?:\.\w+)+\s*=(?!=)|\.seconds\b|"
    # the time module's clocks rebound (the course's timer then reads the
    # given clock)
    r"\btime\.(?:perf_counter|monotonic|time|process_time)(?:_ns)?\s*=(?!=)|"
    # lab 1's workload: its true times, its clock (a counter written
    # through it: shown as such)
    r"\.(?:work_s|first_s|_ready_at)\b|\.clock\b(?!\.(?:reads|now|busy_until)\s*[-+*/]?=(?!=))"
)


# nbgrader's hidden-test markers and what lies between them (``generate_assignment`` drops both)
HIDDEN_TESTS_BLOCK = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*\n.*?^[ \t]*### END HIDDEN TESTS[ \t]*$", re.M | re.S
)


def _without_hidden_tests(source: str) -> str:
    """A cell's code with nbgrader's hidden-test blocks removed, as ``generate_assignment`` releases
    it."""
    return HIDDEN_TESTS_BLOCK.sub("", source).strip()


def decode_notebook(data: bytes) -> tuple[str, list[str]]:
    issues = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), ["notebook is UTF-16 encoded (read anyway; save as UTF-8)"]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("cp1252", errors="replace")
        issues.append(
            f"notebook is not UTF-8 (first bad byte at offset {exc.start}): read as Windows-1252"
        )
    return text, issues


LEGACY_ID = re.compile(r"^(ex\d+[a-z]?)_(.+)$")


def _legacy_ids(cells: list[dict], source: dict[str, dict]) -> dict[str, str]:
    """{old grade_id: today's} for a notebook made from a release whose grade ids carried the
    exercise's position (``ex3_time_call``, ``ex3_intro``, ``ex3_time_call_visible``): today a
    cell's grade_id is its exercise's name (``time_call``, ``time_call_intro``,
    ``time_call_visible``; grader/exercise_cells.py)."""
    old = [
        g
        for c in cells
        if isinstance(g := nbgrader_meta(c).get("grade_id"), str) and g not in source
    ]
    names: dict[str, str] = {}  # "ex3" -> "time_call", from the answer cells' old ids
    for gid in old:
        match = LEGACY_ID.match(gid)
        if (
            match
            and match.group(2) in source
            and nbgrader_meta(source[match.group(2)]).get("solution")
        ):
            names[match.group(1)] = match.group(2)
    out = {}
    for gid in old:
        match = LEGACY_ID.match(gid)
        if not match or match.group(1) not in names:
            continue
        name, rest = names[match.group(1)], match.group(2)
        new = rest if rest.startswith(name) else f"{name}_{rest}"
        if new in source:
            out[gid] = new
    return out


def preflight(data: bytes, lab: Lab, released: dict) -> tuple[dict | None, list[str]]:
    """The submission as a clean notebook to grade (or None with the reason) and the problems found.
    ``released`` is the student version of the lab (what locked cells must still say)."""
    if not data.strip():
        return None, ["empty submission: no notebook, or an empty file"]
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, [f"notebook larger than {MAX_NOTEBOOK_BYTES >> 20} MB: not graded"]
    text, issues = decode_notebook(data)
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, issues + [
            f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})"
        ]
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, issues + ["not a notebook: no list of cells"]
    cells = [
        c
        for c in nb["cells"]
        if isinstance(c, dict) and c.get("cell_type") in ("code", "markdown", "raw")
    ]
    if len(cells) != len(nb["cells"]):
        issues.append(f"dropped {len(nb['cells']) - len(cells)} malformed cell(s)")
    source = {
        nbgrader_meta(c)["grade_id"]: c
        for c in released["cells"]
        if nbgrader_meta(c).get("grade_id")
    }
    legacy = _legacy_ids(cells, source)
    seen: set[str] = set()
    hidden_tests: list[str] = []  # hidden-test cells exactly as the instructor's notebook has them
    instructor = lab.cells()
    huge = 0
    for cell in cells:
        huge += len(json.dumps(cell.get("outputs", [])))
        cell["source"] = source_text(cell.get("source"))
        cell.setdefault("metadata", {})
        if not isinstance(cell["metadata"], dict):
            cell["metadata"] = {}
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        else:
            cell.pop("outputs", None), cell.pop("execution_count", None)
        gid = nbgrader_meta(cell).get("grade_id")
        if gid is None:
            continue
        # a notebook from a release that numbered its exercises: the cell's name today
        if gid in legacy:
            gid = cell["metadata"]["nbgrader"]["grade_id"] = legacy[gid]
        # duplicated or foreign: keep the code, drop the grading metadata
        if gid in seen or gid not in source:
            issues.append(
                f"cell {gid!r} is {'duplicated' if gid in seen else 'not part of this lab'}: "
                "graded as an ordinary cell"
            )
            cell["metadata"].pop("nbgrader", None)
            continue
        seen.add(gid)
        want = source[gid]
        if (nbgrader_meta(want).get("locked") and want["cell_type"] == "code"
                and cell["source"].strip() != source_text(want["source"]).strip()):
            mine = cell["source"].strip()
            if (gid in instructor and _without_hidden_tests(mine) != mine
                    and mine == source_text(instructor[gid]["source"]).strip()):
                hidden_tests.append(gid)  # the instructor's source notebook: its hidden tests
            else:
                issues.append(f"locked cell {gid!r} was edited: restored from the lab")
        if nbgrader_meta(want).get("locked") and want["cell_type"] == "markdown":
            # the lab's text (a renumbered heading, say), no note
            cell["source"] = source_text(want["source"])
        # the lab's metadata, not the student's
        cell["metadata"]["nbgrader"] = dict(nbgrader_meta(want))
        cell["cell_type"] = want["cell_type"]
    if hidden_tests:
        issues.append(
            f"{len(hidden_tests)} hidden-test cells hold the hidden tests themselves: this is the"
            " instructor's source notebook (solutions/), not a released lab; those cells were"
            " graded as the lab has them, as for every student"
        )
    if huge > 1 << 20:
        issues.append(f"the notebook carried {huge >> 20} MB of outputs: removed before grading")
    missing = [g for g, c in source.items() if g not in seen]
    lost_solutions = [g for g in missing if nbgrader_meta(source[g]).get("solution")]
    if lost_solutions:
        issues.append(f"missing answer cells (deleted?): {', '.join(lost_solutions)}")
    if [g for g in missing if g not in lost_solutions]:
        issues.append(f"missing locked cells re-added from the lab: "
                      f"{', '.join(g for g in missing if g not in lost_solutions)}")
    if sum(len(c["source"]) for c in cells) > MAX_SOURCE_BYTES:
        return None, issues + [
            f"more than {MAX_SOURCE_BYTES >> 20} MB of code and text: not graded"
        ]
    if not any(nbgrader_meta(c).get("solution") for c in cells) and not any(
            c["cell_type"] == "code" and not nbgrader_meta(c) for c in cells):
        return None, issues + ["empty submission: none of the lab's answer cells is present"]
    minor = nb.get("nbformat_minor", 5)
    clean = {"cells": cells, "metadata": lab.source().get("metadata", {}), "nbformat": 4,
             "nbformat_minor": max(5, int(minor) if str(minor).isdigit() else 5)}
    for i, cell in enumerate(cells):
        cell["id"] = nbgrader_meta(cell).get("grade_id") or f"student-{i:03d}"
    return clean, issues


def review_flags(nb: dict) -> list[str]:
    """Report lines for answer cells a human should read: they use the grader's own objects
    (references, problems, check functions), reach into the grading process (its arguments, frames,
    exit, result files) or write the instrumentation an observation reads (counters, the virtual
    clock, attributes set by name)."""
    answers = [(nbgrader_meta(c).get("grade_id"), source_text(c["source"])) for c in nb["cells"]
               if nbgrader_meta(c).get("solution")]
    out = []
    grader_objects = [gid for gid, src in answers if SUSPICIOUS.search(src)]
    if grader_objects:
        out.append(
            f"REVIEW: answer cells use the grader's own objects: {', '.join(grader_objects)}"
        )
    escapes = [
        f"{gid} ({PROCESS_ESCAPES.search(src).group(0)})"
        for gid, src in answers
        if PROCESS_ESCAPES.search(src)
    ]
    if escapes:
        out.append(f"REVIEW: answer cells reach into the grading process: {', '.join(escapes)}")
    writes = [f"{gid} ({INSTRUMENT_WRITES.search(src).group(0).strip()})" for gid, src in answers
              if INSTRUMENT_WRITES.search(src)]
    if writes:
        out.append(
            f"REVIEW: answer cells write the instrumentation the checks read: {', '.join(writes)}"
        )
    return out
