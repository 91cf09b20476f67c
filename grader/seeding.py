"""Per-student hidden-case seeds, as a grading sandbox sees them (the exercise side of the seeding).

Hidden cases are drawn from ``np.random.default_rng(seed)``. Outside grading (a student's own
Validate, CI, nbval of ``solutions/``) the seed is a hash of the problem's name:
deterministic, the same for everyone. When the grading command (:mod:`grader.pipeline.secret`)
grades a submission it derives one seed per problem from the instructor's secret, the lab and the
student, writes them to a read-only file inside that student's sandbox and names it in
``GRADER_HIDDEN_SEEDS_FILE``; :meth:`grader.problem.Problem.seed` then returns them. The secret
itself never enters the sandbox.

The seeds are read once, when this module is first imported — the sandboxed kernel imports
it before any cell runs (:mod:`grader.pipeline.sandbox_kernel`), the re-check worker before any
student code — and the variable is removed from the environment. A reload keeps them (student code
cannot reset them to the public ones that way); replacing them is tampering the re-check reports.
"""

from __future__ import annotations

import json
import os
from types import MappingProxyType
from typing import Mapping

FILE_ENV = "GRADER_HIDDEN_SEEDS_FILE"


def _load() -> tuple[Mapping[str, int], Mapping[str, str]]:
    """(seeds of the problems whose generator is in the sandbox, the JSON text of the hidden cases
    of the problems of a split lab — their generator stays with the grader, only the arguments come
    in, as plain data)."""
    path = os.environ.pop(FILE_ENV, "")
    if not path:
        return MappingProxyType({}), MappingProxyType({})
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        seeds = {str(k): int(v) for k, v in data["seeds"].items()}
        cases = {str(k): json.dumps(v) for k, v in data.get("cases", {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # grading with the public seeds would be silently wrong: fail loudly instead
        raise RuntimeError(
            f"{FILE_ENV}={path}: the hidden-case seeds cannot be read ({exc})"
        ) from None
    return MappingProxyType(seeds), MappingProxyType(cases)


# importlib.reload re-runs this file in the same namespace: keep what was read
if "_SEEDS" not in globals():
    _SEEDS, _CASES = _load()


def installed_seed(problem: str) -> int | None:
    """The grading command's seed for ``problem`` in this process, or None outside grading."""
    return _SEEDS.get(problem)


def installed_cases(problem: str) -> list | None:
    """This student's hidden cases of ``problem`` as the grader wrote them (arguments only, never
    the expected answers), or None where there are none (outside grading, or a lab whose generator
    is in the sandbox)."""
    text = _CASES.get(problem)
    if text is None:
        return None
    from .wire import decode_cases

    return decode_cases(json.loads(text))
