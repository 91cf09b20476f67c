"""Case families: every hidden test must hold every family its visible test holds.

A *family* is a class of input or outcome a wrong answer can hinge on. Each case is tagged from what
it is, not from how it was drawn:

- per argument (named after the reference's parameters): its dtype (a dtype string, or an array's
  dtype), a string or bool value from a small vocabulary ('adam', 'float16', True), None; boundary
  integers (0, 1, negative); lists and tuples of one element or none; arrays: square or not, one
  element, all-True / all-False / mixed masks;
- per result (the reference's answer): None, True/False, a word ('memory', 'compute', 'gpu'), each
  word of a tuple answer, a set of names ({'all-gather', 'all-reduce'}), 0 or 1;
- kernel launches: a last block that is only partly inside the data (sizes not a multiple of the
  block), or none;
- problem-specific families the issue names: exact ties on a decision boundary, wrap-around on a
  torus, a partial last warp, the same chip twice.

:func:`family_report` compares the families of the visible cases with those of the hidden cases.
Mutation testing (:mod:`.runner`) gives the other half of "at least as strong": every mutant the
visible cases kill, the hidden cases kill too.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import asdict, dataclass
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

from ..problem import Case, Problem

DTYPE_NAMES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int32",
    "int64",
    "uint8",
    "bool",
}
MAX_WORD = 24  # strings longer than this are data (HLO, SASS, CUDA source), not a family


def _param_names(problem: Problem, n: int) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(problem.reference).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def _value_tags(name: str, v: Any) -> set[str]:
    if v is None:
        return {f"{name}=None"}
    if isinstance(v, (bool, np.bool_)):
        return {f"{name}={bool(v)}"}
    if isinstance(v, str):
        if v in DTYPE_NAMES:
            return {f"{name}: dtype {v}"}
        return {f"{name}={v!r}"} if len(v) <= MAX_WORD and "\n" not in v else set()
    if isinstance(v, Integral):
        return {f"{name}={int(v)}"} if int(v) in (0, 1) else ({f"{name} < 0"} if v < 0 else set())
    if isinstance(v, Real):
        return {f"{name}=0.0"} if float(v) == 0.0 else ({f"{name} < 0"} if v < 0 else set())
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        shape = tuple(int(d) for d in v.shape)
        tags = {f"{name}: dtype {v.dtype}"}
        if len(shape) == 2:
            tags.add(f"{name}: square" if shape[0] == shape[1] else f"{name}: non-square")
        if math.prod(shape) == 1:
            tags.add(f"{name}: one element")
        if str(v.dtype) == "bool" and v.size:
            a = np.asarray(v)
            tags.add(
                f"{name}: all True"
                if a.all()
                else f"{name}: all False" if not a.any() else f"{name}: mixed"
            )
        return tags
    if isinstance(v, (list, tuple)):
        if len(v) == 0:
            return {f"{name}: empty"}
        if len(v) == 1:
            return {f"{name}: one element"}
    return set()


def _result_tags(r: Any) -> set[str]:
    if r is None or isinstance(r, (bool, np.bool_)) or isinstance(r, str) and len(r) <= MAX_WORD:
        return {f"result={r!r}" if isinstance(r, str) else f"result={r}"}
    if isinstance(r, Integral) and int(r) in (0, 1):
        return {f"result={int(r)}"}
    if isinstance(r, (set, frozenset, list)) and all(isinstance(x, str) for x in r):
        return {"result={" + ", ".join(sorted(set(r))) + "}"}
    if isinstance(r, tuple):
        out = set()
        for i, x in enumerate(r):
            if (
                x is None
                or isinstance(x, (bool, np.bool_))
                or isinstance(x, str)
                and len(x) <= MAX_WORD
            ):
                out.add(f"result[{i}]={x!r}" if isinstance(x, str) else f"result[{i}]={x}")
        return out
    return set()


def _launch_tags(problem: Problem, case: Case) -> set[str]:
    """A kernel exercise: is the last block only partly inside the data? (any array dimension, x =
    last axis)"""
    launch = getattr(problem, "launch", None)
    if launch is None:
        return set()
    try:
        grid, block, args, _ = launch(case)
    except Exception:  # noqa: BLE001
        return set()
    block = block if isinstance(block, tuple) else (block,)
    partial = False
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim <= len(block):
            dims = tuple(reversed(a.shape))  # x runs along the last (contiguous) axis
            partial |= any(d % b for d, b in zip(dims, block))
    return {"launch: partial last block" if partial else "launch: whole blocks only"}


# -- the families the issue names, where the generic tags cannot see them --------------------------

def _tie_link(case: Case, result: Any) -> set[str]:
    flops, bytes_in, bytes_out, cpu, gpu, latency = case.args  # lab 3's min_link_bandwidth
    moved = bytes_in + bytes_out
    left = (
        max(flops / cpu["flops"], moved / cpu["bandwidth"])
        - 2 * latency
        - max(flops / gpu["flops"], moved / gpu["bandwidth"])
    )
    return {"tie: 2·latency + GPU time == CPU time"} if left == 0 else set()


def _torus(case: Case, result: Any) -> set[str]:
    # slice_hops(a, b, dims, chip): whether an axis wraps is the chip's rule
    a, b, dims = case.args[:3]
    deltas = [(abs(x - y), d) for x, y, d in zip(a, b, dims)]
    tags = set()
    if all(delta == 0 for delta, _ in deltas):
        tags.add("same chip")
    if any(2 * delta > d for delta, d in deltas):
        tags.add("the wrap-around link is shorter")
    if any(2 * delta == d and delta for delta, d in deltas):
        tags.add("tie: both ways round are equally long")
    return tags


def _warps(case: Case, result: Any) -> set[str]:
    n = len(case.args[0])
    return {"partial last warp" if n % 32 else "whole warps only"}


SEMANTIC: dict[str, Callable[[Case, Any], set[str]]] = {
    "min_link_bandwidth": _tie_link,
    "slice_hops": _torus,
    "warp_layout": _warps,
}


def tags(problem: Problem, case: Case, result: Any) -> set[str]:
    """Every family ``case`` (whose reference answer is ``result``) belongs to."""
    names = _param_names(problem, len(case.args))
    out: set[str] = set()
    for name, value in zip(names, case.args):
        out |= _value_tags(name, value)
    for name, value in case.kwargs.items():
        out |= _value_tags(name, value)
    out |= _result_tags(result)
    out |= _launch_tags(problem, case)
    if problem.name in SEMANTIC:
        try:
            out |= SEMANTIC[problem.name](case, result)
        except Exception:  # noqa: BLE001 - a case of another shape: no semantic family
            pass
    return out


@dataclass
class FamilyReport:
    problem: str
    visible: list[str]
    hidden: list[str]
    missing: list[str]  # in the visible cases, not in the hidden ones

    def to_json(self) -> dict:
        return asdict(self)


def family_report(problem: Problem) -> FamilyReport:
    from .runner import quiet

    def families(cases: list[Case]) -> set[str]:
        found: set[str] = set()
        for case in cases:
            try:
                result = problem.reference(*case.args, **case.kwargs)
            except Exception:  # noqa: BLE001
                result = None
            found |= tags(problem, case, result)
        return found

    with quiet():
        visible, hidden = families(list(problem.visible)), families(problem.hidden_cases())
    return FamilyReport(problem.name, sorted(visible), sorted(hidden), sorted(visible - hidden))
