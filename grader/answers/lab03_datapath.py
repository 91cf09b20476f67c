"""Lab 3's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side,
grader/labs/lab03_datapath.py, is the rest of the lab; this module imports it, never the reverse
(``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).

chunked_map's reference is fn(x) (the spec's "exactly fn(x)"); its hidden cases are plain data (x, a
``Device``, a ``DeviceFn`` by name, copies), and its check observes the device's counters where the
student's code runs and judges them with the rest (``DeviceProblem``, exercise side). ``min_chunks``
stays on the exercise side: the spec gives its formula, and the visible check needs it where the
answer side is absent.

The one-warp mask model (``warp_masks``) lives here; the course shows its results for one warp from
``gpucourse/data/warp_masks.json``, which ``python -m grader.answers.lab03_datapath`` rewrites
(``tests/test_lab03_datapath.py`` fails when it is stale). Exercise 4 no longer asks for that count
(the course's SIMT executor, gpucourse.simt, computes it for any kernel) but for the layout that
minimises it.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..labs.lab03_datapath import (
    CPUS,
    GPUS,
    KERNELS,
    LINK_TIE,
    LINKS,
    WARP,
    _BODIES,
    Device,
    DeviceFn,
    TransferCase,
    _chunk_case,
    transfer_series,
)
from ..problem import Case


def _roofline(flops: float, nbytes: float, proc: dict) -> float:
    return max(flops / proc["flops"], nbytes / proc["bandwidth"])


def _pipeline_seconds(
    steps: list, placement: tuple, nbytes: float, cpu: dict, gpu: dict, link: dict
) -> float:
    """Seconds of one placement: every step at its roofline time where it runs, plus one copy of the
    array each time it changes sides (it starts and ends on the host)."""
    copy = link["latency"] + nbytes / link["bandwidth"]
    total, where = 0.0, "cpu"
    for step, place in zip(steps, placement):
        if place != where:
            total += copy
            where = place
        total += _roofline(step["flops"], step["bytes"], gpu if place == "gpu" else cpu)
    return total + (copy if where == "gpu" else 0.0)


def _placements(steps: list) -> list[tuple]:
    return list(itertools.product(*[("cpu", "gpu") if s["gpu_ok"] else ("cpu",) for s in steps]))


def place_pipeline(steps: list, nbytes: float, cpu: dict, gpu: dict, link: dict):
    best = min(
        _placements(steps), key=lambda p: _pipeline_seconds(steps, p, nbytes, cpu, gpu, link)
    )
    return _pipeline_seconds(steps, best, nbytes, cpu, gpu, link), list(best)


def _ranked(case: Case) -> list[tuple[float, tuple]]:
    return sorted(
        (_pipeline_seconds(case.args[0], p, *case.args[1:]), p) for p in _placements(case.args[0])
    )


def _unique_best(case: Case, rtol: float = 1e-6) -> bool:
    """The spec's promise: one best placement, more than ``rtol`` faster than the next best."""
    ranked = _ranked(case)
    return len(ranked) == 1 or ranked[0][0] < (1 - rtol) * ranked[1][0]


def _per_step_round_trips(case: Case) -> tuple:
    """What offloading each step on its own decides (a round trip per GPU step): the plausible wrong
    design."""
    steps, nbytes, cpu, gpu, link = case.args
    copy = link["latency"] + nbytes / link["bandwidth"]
    return tuple("gpu" if s["gpu_ok"] and 2 * copy + _roofline(s["flops"], s["bytes"], gpu)
                 < _roofline(s["flops"], s["bytes"], cpu) else "cpu" for s in steps)


def _pipeline_draw(rng: np.random.Generator, k: int) -> Case:
    nbytes = float(2 ** rng.uniform(12, 30))
    steps = [{"flops": 0.0, "bytes": 0.0, "gpu_ok": bool(rng.random() < 0.75)} for _ in range(k)]
    for s in steps:
        s["bytes"] = nbytes * float(rng.choice([1.0, 2.0, 3.0]))
        s["flops"] = s["bytes"] * float(2 ** rng.uniform(-3, 9))
    cpu, gpu, link = (x[int(rng.integers(len(x)))] for x in (CPUS, GPUS, LINKS))
    return Case((steps, nbytes, cpu, gpu, link))


# what each deliberate family of hidden cases shows, as a test of the best placement (and of the
# wrong design)
_PIPELINE_FAMILIES = {
    # GPU steps that pay only together: one round trip for a run of steps, not one per step
    "a run pays, its steps alone do not": (
        lambda c, best: best != _per_step_round_trips(c) and "gpu" in best
    ),
    # article 002's complicated case: the array goes back to the CPU in the middle and returns
    "back and forth": lambda c, best: "".join(p[0] for p in best).strip("c").count("c") > 0,
    "all on the CPU though a step could offload": (
        lambda c, best: "gpu" not in best and any(s["gpu_ok"] for s in c.args[0])
    ),
    "ends on the GPU": lambda c, best: best[-1] == "gpu" and best[0] == "cpu",
    "starts on the GPU": lambda c, best: best[0] == "gpu" and best[-1] == "cpu",
    "one step, offloaded": lambda c, best: len(best) == 1 and best[0] == "gpu",
}


def _pipeline_cases(rng: np.random.Generator) -> list[Case]:
    """One draw of every family above (drawn until one has the family's property and a unique best
    placement), a pipeline the CPU must run alone, then random pipelines of 1 to 6 steps."""
    cases = []
    for family in _PIPELINE_FAMILIES.values():
        while True:
            case = _pipeline_draw(rng, 1 if family is _PIPELINE_FAMILIES["one step, offloaded"]
                                  else int(rng.integers(2, 7)))
            if _unique_best(case) and family(case, _ranked(case)[0][1]):
                cases.append(case)
                break
    cpu_only = _pipeline_draw(rng, int(rng.integers(1, 5)))
    for s in cpu_only.args[0]:
        s["gpu_ok"] = False
    cases.append(cpu_only)
    while len(cases) < 14:
        case = _pipeline_draw(rng, int(rng.integers(1, 7)))
        if _unique_best(case):
            cases.append(case)
    return cases


def min_link_bandwidth(flops: float, bytes_in: float, bytes_out: float, cpu: dict, gpu: dict,
                       latency: float) -> float | None:
    traffic = bytes_in + bytes_out
    # offloading pays when latency + bytes_in/B + GPU time + latency + bytes_out/B < CPU time: solve
    # for B
    slack = _roofline(flops, traffic, cpu) - 2 * latency - _roofline(flops, traffic, gpu)
    # the latencies and the GPU's own work alone take the CPU's time: no link is fast enough
    if slack <= 0:
        return None
    return traffic / slack


def _slack(case: Case) -> Fraction:
    """CPU time − 2·latency − GPU time, exactly (on the floats as given)."""
    flops, bytes_in, bytes_out, cpu, gpu, latency = case.args
    traffic = Fraction(bytes_in) + Fraction(bytes_out)
    roof = lambda p: max(
        Fraction(flops) / Fraction(p["flops"]), traffic / Fraction(p["bandwidth"])
    )  # noqa: E731
    return roof(cpu) - 2 * Fraction(latency) - roof(gpu)


def _link_cases(rng: np.random.Generator) -> list[Case]:
    """The exact tie (never pays), a latency too long to recover (never pays), compute-bound and
    memory-bound workloads with and without outputs, then random draws kept clear of the tie
    (|slack| more than 1e-6 of the CPU time: rounding never decides None, and the answer is not
    amplified rounding)."""
    cases = [
        LINK_TIE,
        # 3.3 s on the CPU, but 2 × 2 s of latency
        Case((2e12, 2e8, 0.0, CPUS[0], GPUS[1], 2.0)),
        Case(
            (float(2 ** rng.uniform(38, 42)), 4e8, 4e8, CPUS[int(rng.integers(3))], GPUS[1], 8e-6)
        ),
        # a vector add: NVLink-class
        Case((1e8, 8e8, 4e8, CPUS[1], GPUS[3], float(10 ** rng.uniform(-6, -5)))),
        Case((1e8, 8e8, 0.0, CPUS[0], GPUS[0], 1e-5)),
    ]
    while len(cases) < 14:
        nbytes = float(10 ** rng.uniform(3, 9))
        case = Case(
            (
                nbytes * float(2 ** rng.uniform(-3, 12)),
                nbytes,
                float(nbytes * rng.choice([0.0, 0.5, 1.0])),
                CPUS[int(rng.integers(len(CPUS)))],
                GPUS[int(rng.integers(len(GPUS)))],
                float(10 ** rng.uniform(-7, -3.5)),
            )
        )
        cpu_s = _roofline(case.args[0], case.args[1] + case.args[2], case.args[3])
        if abs(_slack(case)) > 1e-6 * Fraction(cpu_s):
            cases.append(case)
    return cases


def _chunked_reference(x: np.ndarray, device: Device, fn: DeviceFn, copies: int) -> np.ndarray:
    return _BODIES[fn.name](x)  # fn itself refuses host arrays


def _chunked_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(6):
        fn = KERNELS[int(rng.integers(len(KERNELS)))]
        cases.append(
            _chunk_case(
                rng,
                int(rng.integers(3_000, 150_000)),
                str(rng.choice(["float32", "float64"])),
                float(rng.uniform(0.05, 1.5)),
                fn,
            )
        )
    return cases


def _issued(cond: np.ndarray, order: np.ndarray, cost_if: int, cost_else: int) -> int:
    issued = 0
    for start in range(0, len(cond), WARP):
        w = cond[order[start:start + WARP]]
        issued += cost_if * bool(w.any()) + cost_else * bool((~w).any())
    return issued


def warp_layout(cond: np.ndarray, cost_if: int, cost_else: int) -> tuple[list[int], int, float]:
    """The better of the two sorted layouts: if-items first (the partial last warp, if any, holds
    else-items or the mixed warp) or else-items first (the partial last warp holds if-items). One of
    them is optimal: a layout costs cost_if · (warps − pure-else warps) + cost_else · (warps −
    pure-if warps), and each sorted order packs the most pure warps of one path, the partial warp
    included where it can be pure (tests check it against a search)."""
    # if-items first, else-items first (cond is a bool array: the spec)
    layouts = [
        np.r_[np.flatnonzero(cond), np.flatnonzero(~cond)],
        np.r_[np.flatnonzero(~cond), np.flatnonzero(cond)],
    ]
    costs = [_issued(cond, o, cost_if, cost_else) for o in layouts]
    best = int(np.argmin(costs))
    useful = cost_if * int(cond.sum()) + cost_else * int((~cond).sum())
    return [int(i) for i in layouts[best]], costs[best], useful / (WARP * costs[best])


def _wrong_layouts(case: Case) -> dict[str, int]:
    """What the plausible wrong layouts issue: the items as given, always if-items first, always
    else-items first."""
    cond, if_cost, else_cost = case.args
    return {
        "as given": _issued(cond, np.arange(len(cond)), if_cost, else_cost),
        "if-items first": _issued(
            cond, np.r_[np.flatnonzero(cond), np.flatnonzero(~cond)], if_cost, else_cost
        ),
        "else-items first": _issued(
            cond, np.r_[np.flatnonzero(~cond), np.flatnonzero(cond)], if_cost, else_cost
        ),
    }


def _layout_draw(rng: np.random.Generator, n: int) -> Case:
    tid = np.arange(n)
    kind = rng.choice(["random", "modulo", "threshold"])
    if kind == "random":
        cond = rng.random(n) < rng.uniform(0.02, 0.98)
    elif kind == "modulo":
        cond = tid % int(rng.integers(2, 70)) == 0
    else:
        cond = tid < int(rng.integers(0, n + 1))
    return Case((cond, int(rng.integers(1, 30)), int(rng.integers(1, 30))))


# what each deliberate family of hidden cases shows (the wrong layouts each lose on one of them at
# least)
_LAYOUT_FAMILIES = {
    "the given layout is not the best": lambda c, best: _wrong_layouts(c)["as given"] > best,
    "if-items first loses (the partial warp should hold if-items)": (
        lambda c, best: _wrong_layouts(c)["if-items first"] > best
    ),
    "else-items first loses": lambda c, best: _wrong_layouts(c)["else-items first"] > best,
    "whole warps, divergent": (
        lambda c, best: len(c.args[0]) % WARP == 0 and c.args[0].any() and not c.args[0].all()
    ),
}


def _layout_cases(rng: np.random.Generator) -> list[Case]:
    """Uniform grids (all if, all else, whole and partial warps) and a single item; one draw of
    every family above (a partial last warp where it matters); then random patterns."""
    whole, partial = 32 * int(rng.integers(1, 5)), 32 * int(rng.integers(0, 4)) + int(
        rng.integers(1, 32)
    )
    cost = lambda: int(rng.integers(1, 30))  # noqa: E731
    cases = [
        Case((np.ones(whole, bool), cost(), cost())),
        Case((np.zeros(partial, bool), cost(), cost())),
        Case((np.ones(partial, bool), cost(), cost())),
        Case((np.array([bool(rng.integers(2))]), cost(), cost())),
    ]
    for name, family in _LAYOUT_FAMILIES.items():
        while True:
            n = (
                32 * int(rng.integers(1, 8))
                if name.startswith("whole")
                else int(rng.integers(33, 400))
            )
            case = _layout_draw(rng, n)
            if family(case, warp_layout(*case.args)[1]):
                cases.append(case)
                break
    while len(cases) < 13:
        cases.append(_layout_draw(rng, int(rng.integers(1, 400))))
    return cases


# -- the warp model of the course's section 3.3 (its figure's data) --------------------------------

def warp_masks(cond: np.ndarray, cost_if: int, cost_else: int) -> np.ndarray:
    """Active masks of one warp running ``if cond[lane]: A (cost_if instr.) else: B (cost_else
    instr.)``: a bool array (issued instructions, 32 lanes). A path is issued only if some lane
    takes it; when both are taken they run one after the other, each with only its own lanes active;
    lanes past len(cond) are never active."""
    cond = np.asarray(cond, dtype=bool)
    if cond.ndim != 1 or len(cond) > WARP:
        raise ValueError(f"cond must be 1-D with at most {WARP} lanes")
    take_if, take_else = np.zeros(WARP, dtype=bool), np.zeros(WARP, dtype=bool)
    take_if[: len(cond)], take_else[: len(cond)] = cond, ~cond
    rows = [take_if] * (cost_if if take_if.any() else 0) + [take_else] * (
        cost_else if take_else.any() else 0
    )
    return np.array(rows, dtype=bool).reshape(len(rows), WARP)


# the course's figure: one warp, path A 6 instructions, path B 4 (course/03_simd_simt_datapath.py,
# section 3.3)
_T = np.arange(WARP)
COURSE_WARP = {"cost_if": 6, "cost_else": 4,
               "patterns": {"t % 4 == 0 (divergent)": _T % 4 == 0, "t < 32 (uniform)": _T < 32,
                            "t < 12 (divergent)": _T < 12}}


def course_warp_masks() -> dict:
    """The data the course shows in section 3.3 (gpucourse/data/warp_masks.json): per pattern, the
    lanes' condition and the active mask of every issued instruction, one string of 32 '0'/'1' per
    row."""
    out = {
        "source": (
            "grader/answers/lab03_datapath.py: warp_masks (python -m grader.answers.lab03_datapath)"
        ),
        "cost_if": COURSE_WARP["cost_if"],
        "cost_else": COURSE_WARP["cost_else"],
        "patterns": {},
    }
    for title, cond in COURSE_WARP["patterns"].items():
        m = warp_masks(cond, COURSE_WARP["cost_if"], COURSE_WARP["cost_else"])
        out["patterns"][title] = {"cond": "".join("1" if c else "0" for c in cond),
                                  "masks": ["".join("1" if v else "0" for v in row) for row in m]}
    return out


def course_data_text() -> str:
    import json

    return json.dumps(course_warp_masks(), indent=1) + "\n"


def write_course_data() -> Path:
    from gpucourse.simd_simt import WARP_MASKS_PATH

    WARP_MASKS_PATH.write_text(course_data_text(), encoding="utf-8")
    return WARP_MASKS_PATH


def asym_tukey_vectorized(
    pred: np.ndarray, target: np.ndarray, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray]:
    """One formula for all four regions, in float64: u² = (r/c)² clamped to 1 makes w = 1 − u² zero
    beyond the cutoff (loss c²/6, gradient 0), and 1 − w³ = u²·(1 + w + w²) does not cancel for
    small r."""
    r = pred - target  # in pred's dtype, as the student's is
    r64 = r.astype(np.float64)
    c = np.where(r64 >= 0, hi, lo)
    u2 = np.minimum((r64 / c) ** 2, 1.0)  # (r/c)², 1 beyond the cutoff
    w = 1.0 - u2
    return c * c / 6.0 * u2 * (1.0 + w + w * w), r64 * w * w


def _asym_tukey_cases(rng: np.random.Generator) -> list[Case]:
    """float32 and float64, residuals on both sides of both thresholds (lo and hi drawn
    independently), and
    one element."""
    cases = []
    for k in range(7):
        n = 1 if k == 0 else int(rng.integers(2, 5000))
        dt = ["float32", "float64"][k % 2]
        scale = float(10 ** rng.uniform(-1, 1))
        pred, target = ((scale * rng.standard_normal(n)).astype(dt) for _ in range(2))
        lo, hi = (float(rng.uniform(0.05, 2.0) * scale) for _ in range(2))
        cases.append(Case((pred, target, lo, hi)))
    return cases


def transfer_plan(
    sizes: np.ndarray, seconds: np.ndarray, fraction: float
) -> tuple[float, float, float]:
    """Each size's best run (an interrupted run is only ever slower), then least squares on the
    relative errors (each residual divided by its own time: weights 1/t); the size solves size /
    (lat + size / bw) = f · bw."""
    best = np.min(seconds, axis=1)
    # latency + size · per_byte ≈ best, each row over its time
    rows = np.stack([np.ones_like(best), sizes]) / best
    (latency, per_byte), *_ = np.linalg.lstsq(rows.T, np.ones_like(best))
    return (
        float(latency),
        float(1.0 / per_byte),
        fraction / (1.0 - fraction) * float(latency / per_byte),
    )


def _transfer_case(rng: np.random.Generator, latency: float, bandwidth: float, k: tuple[int, int],
                   fraction: float) -> TransferCase:
    # the truth the answer is graded against
    size = fraction / (1.0 - fraction) * latency * bandwidth
    return TransferCase(
        (*transfer_series(rng, latency, bandwidth, k), fraction), truth=(latency, bandwidth, size)
    )


def _transfer_cases(rng: np.random.Generator) -> list[Case]:
    fraction = lambda: float(rng.choice([0.5, 0.75, 0.8, 0.9, 0.95]))  # noqa: E731
    cases = [
        _transfer_case(
            rng,
            float(rng.uniform(2e-6, 30e-6)),
            float(rng.uniform(5e9, 60e9)),
            (int(rng.integers(8, 14)), int(rng.integers(24, 31))),
            fraction(),
        )
        for _ in range(6)
    ]
    # the hard corners: few small copies (latency barely resolved) with the largest sizes, and a
    # fast, low-latency link
    cases.append(_transfer_case(rng, 2e-6, 5e9, (13, 31), 0.5))
    cases.append(_transfer_case(rng, 2e-6, 60e9, (8, 31), 0.95))
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "place_pipeline": (place_pipeline, _pipeline_cases),
    "min_link_bandwidth": (min_link_bandwidth, _link_cases),
    "chunked_map": (_chunked_reference, _chunked_hidden),
    "warp_layout": (warp_layout, _layout_cases),
    "asym_tukey_vectorized": (asym_tukey_vectorized, _asym_tukey_cases),
    "transfer_plan": (transfer_plan, _transfer_cases),
}


# rewrite the course's stored warp masks (gpucourse/data/warp_masks.json)
if __name__ == "__main__":
    print(write_course_data())
