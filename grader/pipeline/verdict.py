"""Stage 5, the verdict (in the grader): the worker's results judged against the reference, then
merged with nbgrader's scores, **failing closed**.

- :func:`verdicts`: per re-checked test cell {"ok", "message"}: every call's answer (decoded from
  plain data) compared with the expected answer by the problem's own ``compare``; a raised error
  names the earlier student cell that failed; steps after the worker stopped are "not reached" (the
  re-check resumes past a step that stops its process,
  :func:`grader.pipeline.recheck.run_recheck_resuming`: only a stop it cannot resume leaves steps
  unreached); everything after tampering is "not trusted" (kernel-only cells after tampering too).
- :func:`combine`: a test cell scores nbgrader's points only if the out-of-process check passed too.
  A cell that could not be verified keeps nbgrader's score and is marked "kernel-only". If nbgrader
  could not finish (kernel died, timeout, out of memory), cells verified before the failure keep
  their points and the rest score 0 with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

from .lab import nbgrader_meta, source_text
from .steps import After, Call, End, Exec, Step
from .wire import decode, encode, has_course_object, has_unsupported


def verdicts(
    steps: list[Step], expected: dict, lines: list[str], problems: dict
) -> tuple[dict[str, dict], list[str], str | None]:
    """Per test cell {"ok", "message"} from the worker's results, judged here; tamper reports; the
    stop reason."""
    from ..checks import CheckFailure

    records: dict[int, dict] = {}
    tamper: list[str] = []
    done = stuck = False
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            break
        if rec.get("done"):
            done = True
        elif rec.get("stuck"):
            stuck = True
        elif "tampered" in rec:
            step = steps[rec["step"]]
            tamper.append(f"code in {step.label} replaced {', '.join(rec['tampered'])}")
            records.setdefault(rec["step"], {})["tampered"] = True
        elif isinstance(rec.get("step"), int):
            records.setdefault(rec["step"], {}).update(rec)
    out: dict[str, dict] = {}
    tainted = False
    # answer cells that raised since the last test cell: the likely cause
    failed_cells: list[str] = []
    last = max(records) if records else -1
    for i, step in enumerate(steps):
        rec = records.get(i)
        if isinstance(step, Exec):
            tainted = tainted or bool(rec and rec.get("tampered"))
            if step.student and rec and rec.get("ok") is False:
                failed_cells.append(f"cell {step.cell} raised {rec.get('error')}"[:300])
            continue
        if isinstance(step, End):
            failed_cells = []
        # nbgrader's verdict stands, unless the checks were replaced before it
        if isinstance(step, End) and step.kernel_only:
            if rec is not None and tainted:
                out[step.test] = {
                    "ok": False,
                    "message": (
                        "not trusted: earlier code replaced check functions or "
                        f"NumPy/JAX ({'; '.join(tamper)})"
                    ),
                }
            continue
        cell = out.setdefault(step.test, {"ok": True, "message": ""})
        if not cell["ok"]:
            continue
        if rec is None:
            cell.update(
                ok=False,
                message=(
                    "not reached: the grading process stopped before this test "
                    f"({'killed' if not done else 'no result'})"
                ),
            )
            continue
        if tainted:
            cell.update(
                ok=False,
                message=(
                    "not trusted: earlier code replaced check functions or NumPy/JAX "
                    f"({'; '.join(tamper)})"
                ),
            )
            continue
        if isinstance(step, Call):
            chk, case, want = expected[i]
            what = case.call_text(chk.fn)
            # the answer itself is not plain data: nbgrader's verdict stands
            if has_unsupported(encode(want)):
                cell["unverifiable"] = True
                continue
            if not rec.get("ok"):
                cause = f" (earlier, {failed_cells[-1]})" if failed_cells else ""
                cell.update(ok=False, message=f"{what} raised {rec.get('error')}{cause}")
                continue
            # a kernel's observation: the problem's own judge, any failure is a failure
            if step.observe:
                try:
                    problems[chk.problem].judge(decode(rec.get("value")), want, case)
                except CheckFailure as exc:
                    cell.update(ok=False, message=str(exc))
                # an observation that cannot be judged is a wrong one
                except Exception as exc:  # noqa: BLE001
                    cell.update(ok=False, message=f"{what}: could not judge the observation "
                                                  f"({type(exc).__name__}: {exc})")
                continue
            try:
                problems[chk.problem].compare(what, decode(rec.get("value")), want, case)
            # a comparison that chokes on a strange answer is a wrong answer
            except Exception as exc:
                message = str(exc) if isinstance(exc, CheckFailure) else \
                    f"{what}: could not compare the answer ({type(exc).__name__}: {exc})"
                opaque = has_unsupported(encode((case.args, case.kwargs))) or has_course_object(
                    rec.get("value")
                )
                if opaque and not tainted:
                    # the case passes objects (a device model, a callback), or the answer holds one
                    # of the course's objects, whose state the comparison may read: that state
                    # stayed in the sandbox, so nbgrader's verdict decides this cell
                    cell["unverifiable"] = True
                else:
                    cell.update(ok=False, message=message)
        elif isinstance(step, After) and not rec.get("ok"):
            cell.update(ok=False, message=str(rec.get("error") or "the extra check failed"))
    for test, cell in list(out.items()):
        if cell.pop("unverifiable", False) and cell["ok"]:
            del out[test]  # "kernel-only"
    stop = (
        None
        if done
        else (
            f"the check process stopped after step {last + 1} of {len(steps)}"
            + (": a cell ran past its time limit and ignored the timeout" if stuck else "")
        )
    )
    return out, tamper, stop


def combine(
    tests: dict[str, float],
    nbgrader_scores: dict[str, float] | None,
    checked: dict[str, dict],
    messages: dict[str, str],
) -> dict[str, dict]:
    """Per test cell {points, score, message, checked}: nbgrader's score, failed closed by the
    re-check."""
    cells = {}
    for test_id, points in tests.items():
        nbg = nbgrader_scores.get(test_id) if nbgrader_scores is not None else None
        chk = checked.get(test_id)
        if chk is not None and not chk["ok"]:
            score, msg, how = 0.0, chk["message"], "checked outside the kernel"
        elif nbg is None:
            if chk is not None and nbgrader_scores is None:
                score, msg, how = points, "", "checked outside the kernel (nbgrader did not finish)"
            else:
                score, msg, how = 0.0, "not graded: nbgrader did not finish this notebook", "kernel"
        else:
            score, how = nbg, "kernel and outside" if chk is not None else "kernel-only"
            msg = "" if nbg >= points else messages.get(test_id, "the test cell failed")
        cells[test_id] = {"points": points, "score": score, "message": msg, "checked": how}
    return cells


def cell_messages(path: Path) -> dict[str, str]:
    """Test cell id -> the last line of its error (what nbgrader saw), from the executed
    notebook."""
    out = {}
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return out
    for cell in nb["cells"]:
        gid = nbgrader_meta(cell).get("grade_id")
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                out[gid] = f"{o.get('ename')}: {o.get('evalue')}"[:500]
            elif o.get("output_type") == "stream" and o.get("name") == "stderr" and gid not in out:
                out[gid] = "the test cell wrote to stderr: " + source_text(o.get("text"))[:200]
    return out
