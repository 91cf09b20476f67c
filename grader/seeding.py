"""Per-student hidden-case seeds, as a grading sandbox sees them (the exercise side of the seeding).

Hidden cases are drawn from ``np.random.default_rng(seed)``. Outside grading (a student's own Validate, CI, nbval
of ``solutions/``) the seed is a hash of the problem's name: deterministic, the same for everyone. When the
grading command (:mod:`grader.pipeline.secret`) grades a submission it derives one seed per problem from the
instructor's secret, the lab and the student, writes them to a read-only file inside that student's sandbox and
names it in ``GRADER_HIDDEN_SEEDS_FILE``; :meth:`grader.problem.Problem.seed` then returns them. The secret
itself never enters the sandbox.

The seeds are read once, when this module is first imported — the sandboxed kernel imports it before any cell
runs (:mod:`grader.pipeline.sandbox_kernel`), the re-check worker before any student code — and the variable is
removed from the environment. A reload keeps them (student code cannot reset them to the public ones that way);
replacing them is tampering the re-check reports.
"""

from __future__ import annotations

import json
import os
from types import MappingProxyType
from typing import Mapping

FILE_ENV = "GRADER_HIDDEN_SEEDS_FILE"


def _load() -> Mapping[str, int]:
    path = os.environ.pop(FILE_ENV, "")
    if not path:
        return MappingProxyType({})
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        seeds = {str(k): int(v) for k, v in data["seeds"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # grading with the public seeds would be silently wrong: fail loudly instead
        raise RuntimeError(f"{FILE_ENV}={path}: the hidden-case seeds cannot be read ({exc})") from None
    return MappingProxyType(seeds)


if "_SEEDS" not in globals():  # importlib.reload re-runs this file in the same namespace: keep what was read
    _SEEDS: Mapping[str, int] = _load()


def installed_seed(problem: str) -> int | None:
    """The grading command's seed for ``problem`` in this process, or None outside grading."""
    return _SEEDS.get(problem)
