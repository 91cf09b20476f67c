"""Observe here, judge there (grader/DESIGN.md) for kernels: ``KernelProblem.observe`` runs the student's kernel
where their code runs and returns plain data (the outputs and the executor's report as
:class:`gpucourse.simt.ReportData`); ``KernelProblem.judge`` decides in the grader, against the reference. The
data form must judge exactly as the live report does: every lab 5b solution passes from data on its visible and
hidden cases, every plausible wrong answer fails from data with the same message as the live check, and an
observation that is incomplete or forged is a failure, never a pass."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import simt
from grader import kernels
from grader.checks import CheckFailure
from grader.labs import lab05b_kernel_puzzles as lab
from grader.pipeline.wire import decode, encode
from tests.grading import wrong_answer_lists

gc.quiet_warnings()
cuda = gc.get_backend().cuda
NS = {"np": np, "math": math, **{k: getattr(lab, k) for k in dir(lab) if k.isupper()}}
WRONG = wrong_answer_lists("lab05b_kernel_puzzles")


def _gid(p) -> str:
    return p.name  # a solution cell's grade_id is its exercise's name


def _over_the_wire(observation: dict) -> dict:
    """What the grader receives: JSON text of the wire format, decoded (no object crosses)."""
    return decode(json.loads(json.dumps(encode(observation), allow_nan=True)))


def _verdict(fn) -> str | None:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fn()
    except CheckFailure as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def solutions() -> dict:
    from grader.benchmark_simt import puzzle_kernels

    return puzzle_kernels(cuda)


def test_report_data_answers_as_the_live_report(solutions):
    """Every question a requirement asks, asked of the report and of its data form after the wire: equal."""
    asked = 0
    for name in ("transpose", "histogram", "row_sum", "conv1d", "compact"):
        p = lab.problems[name]
        case = p.visible[0]
        live = p._launch(solutions[name], case)["report"]
        data = _over_the_wire({"r": live.to_data()})["r"]
        assert isinstance(data, simt.ReportData), type(data)
        assert np.array_equal(data.counts, live.counts)
        for space in ("global", "shared"):
            assert data.per_thread(space) == live.per_thread(space)
            for kind in ("r", "w"):
                assert data.total(space, kind) == live.total(space, kind)
        for attr in ("n_threads", "n_blocks", "threads_per_block", "shared_bytes", "dynamic_shared_bytes",
                     "simt_efficiency", "divergent_steps", "divergent_branches", "issued_steps", "race_count",
                     "uninitialized_count", "atomics", "ok"):
            assert getattr(data, attr) == getattr(live, attr), (name, attr)
        assert data.arrays == {k: tuple(v) for k, v in live.arrays.items()}
        for array, space in live.spaces.items():
            assert data.atomic_updates(array) == live.atomic_updates(array)
            for kind in (None, "r", "w"):
                assert data.sectors_per_request(array, kind) == live.sectors_per_request(array, kind)
                if space == "shared":
                    assert data.bank_conflicts(array, kind) == live.bank_conflicts(array, kind)
                asked += 1
    assert asked >= 30, asked


def test_solutions_pass_from_data_on_visible_and_hidden_cases(solutions):
    judged = 0
    for name, p in lab.problems.items():
        assert p.has_answers()
        for case in [*p.visible, *p.hidden_cases(seed=7)]:
            seen = _over_the_wire(p.observe(solutions[name], case))
            assert isinstance(seen["report"], simt.ReportData)
            p.judge(seen, p.reference(*case.args, **case.kwargs), case)  # raises if wrong
            judged += 1
    assert judged > 80, judged


def test_every_wrong_answer_fails_from_data_with_the_live_message():
    """The wrong-answer corpus of lab 5b (every budget kind, races, barrier divergence, wrong values, a kernel
    that cannot finish): judged from data after the wire, the first failing case's message equals the live
    check's."""
    compared = 0
    for p in lab.ORDER:
        for source in WRONG[_gid(p)]:
            fn = kernels.load_kernel(source, p.name, NS, cuda)
            live = _verdict(lambda: p.check(fn))
            if live is None:  # a wrong answer the visible cases cannot tell apart: the hidden ones must
                cases = p.hidden_cases()  # the public seed, as check(hidden=True) draws them here
                live = _verdict(lambda: p.check(fn, hidden=True))
                assert live is not None, f"{p.name}: a wrong answer passes visible and hidden checks"
            else:
                cases = p.visible
            from_data = None
            for case in cases:
                seen = _over_the_wire(p.observe(fn, case))
                from_data = _verdict(lambda: p.judge(seen, p.reference(*case.args, **case.kwargs), case))
                if from_data:
                    break
            assert from_data == live, f"{p.name}:\n live: {live}\n data: {from_data}"
            compared += 1
    assert compared >= len(lab.ORDER), compared  # at least one wrong answer per puzzle


def test_an_incomplete_or_forged_observation_fails(solutions):
    p = lab.problems["compact"]  # two outputs
    case = p.visible[0]
    want = p.reference(*case.args)
    good = _over_the_wire(p.observe(solutions["compact"], case))
    p.judge(good, want, case)
    forged = [
        ({**good, "outputs": good["outputs"][:1]}, "1 outputs came back for 2 expected"),
        ({**good, "outputs": []}, "0 outputs came back"),
        ({**good, "report": None}, "the executor's report did not come back"),
        ({**good, "report": decode({"__unsupported__": "KernelReport", "course": True})}, "report did not come back"),
        ("not an observation", "no observation of the kernel came back"),
        ({**good, "error": "compact[...] failed: index 40 out of bounds"}, "index 40 out of bounds"),
        ({**good, "device": [good["outputs"][0] + 1, good["outputs"][1]]}, "on the GPU"),
    ]
    for seen, words in forged:
        with pytest.raises(CheckFailure, match=words.replace("[", r"\[").replace("]", r"\]")):
            p.judge(seen, want, case)
    # a race in the report fails before the values are even looked at, whatever the outputs say
    race = simt.Race("shared", "s", (3,), "read-after-write", (0, 1), (0, 2))
    raced = {**good, "report": good["report"].__class__(**{**vars(good["report"]), "races": (race,), "race_count": 1})}
    with pytest.raises(CheckFailure, match="1 data race: read-after-write race on shared s"):
        p.judge(raced, want, case)


def test_without_the_answer_side_visible_checks_use_the_stored_values_and_hidden_ones_only_observe(
        solutions, monkeypatch, capsys):
    """As in the student edition and the grading sandbox: no reference, no generator. The visible check judges
    against lab05b_kernel_puzzles.expected.json (a wrong kernel still fails); the hidden check outside grading
    says it runs at grading, and inside (cases installed as data) runs the kernel and judges nothing."""
    import grader.problem as problem_mod
    import grader.seeding as seeding

    monkeypatch.setattr(problem_mod, "_answer_module", lambda lab_module: None)
    p = lab.problems["warp_sum"]
    monkeypatch.setattr(p, "reference", None)
    monkeypatch.setattr(p, "hidden", None)
    assert not p.has_answers()
    p.check(solutions["warp_sum"])
    assert "✓ warp_sum: 1 visible case passed" in capsys.readouterr().out
    wrong = kernels.load_kernel(WRONG[_gid(p)][0], "warp_sum", NS, cuda)
    assert _verdict(lambda: p.check(wrong))
    p.check(solutions["warp_sum"], hidden=True)
    assert "the hidden tests run when your lab is graded" in capsys.readouterr().out
    cases = [problem_mod.Case((np.arange(n, dtype=np.float32),)) for n in (5, 100)]
    monkeypatch.setattr(seeding, "installed_cases", lambda name: cases if name == "warp_sum" else None)
    p.check(wrong, hidden=True)  # a wrong kernel that finishes: nothing is judged here
    assert "ran on 2 hidden cases; they are judged by the grader" in capsys.readouterr().out


def test_the_gpu_runs_only_kernels_the_executor_passed_and_only_when_judged(solutions, monkeypatch, capsys):
    """On a GPU machine (device_run stood in for here): a kernel the executor found racy or barrier-divergent is
    never launched on the device (it may hang it; the executor's message is the one to show), a sandbox's hidden
    cell (observed, not judged) launches nothing on the device, and an error of the device launch is said as one."""
    import grader.seeding as seeding

    launched = []

    def fake_device_run(fn, grid, block, args, outputs, sharedmem=0):
        launched.append(fn)
        host = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        simt.run(fn, grid, block, *host, sharedmem=sharedmem)  # a faithful device: the executor's own outputs
        return [host[i] for i in outputs]

    monkeypatch.setattr(kernels, "device_run", fake_device_run)
    with_findings = 0
    for p in lab.ORDER:
        for source in WRONG[_gid(p)]:
            fn = kernels.load_kernel(source, p.name, NS, cuda)
            seen = p.observe(fn, p.visible[0])
            if seen["error"] is None and kernels.first_problem(seen["report"]):
                assert seen["device"] is None, f"{p.name}: a kernel with findings ran on the GPU"
                with_findings += 1
    assert with_findings >= 3 and launched, (with_findings, len(launched))  # races, divergence; clean ones ran
    p = lab.problems["warp_sum"]
    launched.clear()
    p.check(solutions["warp_sum"])
    assert len(launched) == len(p.visible)  # a right kernel: on the executor, then on the device
    launched.clear()
    cases = [lab.Case((np.arange(n, dtype=np.float32),)) for n in (5, 100)]
    monkeypatch.setattr(p, "has_answers", lambda: False)
    monkeypatch.setattr(seeding, "installed_cases", lambda name: cases if name == "warp_sum" else None)
    p.check(solutions["warp_sum"], hidden=True)
    assert launched == [] and "ran on 2 hidden cases" in capsys.readouterr().out

    def failing_device_run(*a, **k):
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.undo()  # has_answers and installed_cases back (device_run too: set below)
    monkeypatch.setattr(kernels, "device_run", failing_device_run)
    with pytest.raises(CheckFailure, match=r"on the GPU raised RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"):
        p.check(solutions["warp_sum"])


# -- lab 5: every kernel exercise observed here, judged there ---------------------------------------------------------

@pytest.fixture(scope="module")
def lab5_solutions() -> dict:
    from grader.benchmark_simt import solution_kernels

    from grader.labs import lab05_kernels as lab5

    kernels_ = solution_kernels()
    return {name: kernels_[name] for name, p in lab5.problems.items() if isinstance(p, kernels.KernelProblem)}


def _lab5_kernel_problems():
    from grader.labs import lab05_kernels as lab5

    return {name: p for name, p in lab5.problems.items() if isinstance(p, kernels.KernelProblem)}


def test_lab5_requirements_read_only_what_report_data_carries(lab5_solutions):
    """Lab 5's requirements (traffic per thread, sectors per request, divergent branches, SIMT efficiency, shared
    bytes and element widths) asked of the data form after the wire: the same answers as the live report, and a
    requirement run on the data form of a report must not need the per-access log (ReportData has none)."""
    problems = _lab5_kernel_problems()
    assert set(lab5_solutions) == set(problems) == {"scale_shift", "ramp_2d", "block_sum", "tiled_matmul",
                                                    "halvings_regrouped"}
    for name, p in problems.items():
        case = p.visible[0]
        live = p._launch(lab5_solutions[name], case)["report"]
        data = _over_the_wire({"r": live.to_data()})["r"]
        assert isinstance(data, simt.ReportData) and not hasattr(data, "accesses") and not hasattr(data, "_log")
        for attr in ("n_blocks", "shared_bytes", "dynamic_shared_bytes", "simt_efficiency", "divergent_steps",
                     "divergent_branches", "spaces", "itemsize"):
            assert getattr(data, attr) == getattr(live, attr), (name, attr)
        for array in live.arrays:
            assert data.sectors_per_request(array) == live.sectors_per_request(array), (name, array)
        p.require(data, case, p.what(case))  # the solution meets its requirement from data alone


def test_lab5_solutions_pass_from_data_on_visible_and_hidden_cases(lab5_solutions):
    judged = 0
    for name, p in _lab5_kernel_problems().items():
        assert p.has_answers()
        for case in [*p.visible, *p.hidden_cases(seed=7)]:
            seen = _over_the_wire(p.observe(lab5_solutions[name], case))
            assert isinstance(seen["report"], simt.ReportData)
            p.judge(seen, p.reference(*case.args, **case.kwargs), case)  # raises if wrong
            judged += 1
    assert judged >= 20, judged


def test_lab5_every_wrong_answer_fails_from_data_with_the_live_message():
    """tests/wrong_answers/lab05_kernels.py (WRONG and the matmul slips: a missing guard, uncoalesced reads, the
    interleaved tree, a missing barrier, §5.7 pasted, too many shared reads, a transposed A load, a wrong guard,
    float64 tiles, a right but uncoalesced 2-D walk, parity regrouping, no regrouping, regrouping through global memory), judged from data after the
    wire: the first failing case's message equals the live check's."""
    from grader.labs import lab05_kernels as lab5
    from tests.wrong_answers.lab05_kernels import MATMUL_SLIPS, RAMP_SLIPS

    wrong = wrong_answer_lists("lab05_kernels")
    ns = {"np": np, "math": math, "BLOCK": lab5.REDUCE_BLOCK, "TM": lab5.TILE_M, "TN": lab5.TILE_N,
          "TK": lab5.TILE_K, "REGROUP_BLOCK": lab5.REGROUP_BLOCK}
    compared = 0
    for gid, sources in wrong.items():
        name = gid  # a solution cell's grade_id is its exercise's name
        p = lab5.problems[name]
        if not isinstance(p, kernels.KernelProblem):
            continue
        for source in sources + {"tiled_matmul": MATMUL_SLIPS, "ramp_2d": RAMP_SLIPS}.get(name, []):
            fn = kernels.load_kernel(source, p.name, ns, cuda)
            live, hidden = _verdict(lambda: p.check(fn)), False
            if live is None:  # the visible cases cannot tell it apart: the hidden ones (public seed) must
                live, hidden = _verdict(lambda: p.check(fn, hidden=True)), True
                assert live is not None, f"{p.name}: a wrong answer passes visible and hidden checks"
            from_data = None
            for case in (p.hidden_cases() if hidden else p.visible):
                seen = _over_the_wire(p.observe(fn, case))
                from_data = _verdict(lambda: p.judge(seen, p.reference(*case.args, **case.kwargs), case))
                if from_data:
                    break
            if from_data is None and p.after:  # the worker's `after` step (exercise side, where the kernel is)
                from_data = _verdict(lambda: p.after(fn, hidden))
            assert from_data == live, f"{p.name}:\n live: {live}\n data: {from_data}"
            compared += 1
    assert compared >= 13, compared


# -- lab 6: scale_bias_relu_kernel observed here, judged there ------------------------------------------------------

def test_lab6_kernel_judged_from_data_as_live():
    """Lab 6's fused kernel: its requirement reads per-array traffic (distinct elements and accesses) and who wrote
    `out` — ReportData carries both (``array_traffic``, ``writers``), equal to the live report's after the wire. The
    solution passes from data on visible and hidden cases; each wrong kernel (two passes, a warp-row of threads
    looping over every row, w and b read per element, staging without a barrier, rows on x, a column-major walk, a
    missing guard) fails from data with the live check's message."""
    from grader.benchmark_simt import solution_kernels
    from grader.labs import lab06_xla_sass as lab6
    from tests import test_lab06_xla_sass as t6

    p = lab6.KERNEL
    assert p.has_answers()
    good = solution_kernels()["scale_bias_relu_kernel"]
    cases = [*p.visible, *p.hidden_cases(seed=7)]
    for case in cases:
        live = p._launch(good, case)["report"]
        data = _over_the_wire({"r": live.to_data()})["r"]
        assert list(data.arrays) == list(live.arrays)  # the requirement names x and out by position
        for array in live.arrays:
            assert data.array_traffic(array) == live.array_traffic(array), array
            assert data.writers(array) == live.writers(array), array
        x, rows_of_threads = case.args[0], 4 * case.kwargs["rows_of_blocks"]  # a grid-stride loop over the rows
        assert live.writers("out") == (min(rows_of_threads, x.shape[0]) * x.shape[1],
                                       math.ceil(x.shape[0] / rows_of_threads))
        assert live.array_traffic("out") == (0, x.size, 0, x.size)
        p.judge(_over_the_wire(p.observe(good, case)), p.reference(*case.args), case)
    wrong = [kernels.load_kernel(s, p.name, NS, cuda) for s in wrong_answer_lists("lab06_xla_sass")[
        "scale_bias_relu_kernel"]]
    column_major = (  # right values, one thread per element, but a warp's lanes walk down a column: uncoalesced
        "@cuda.jit\ndef scale_bias_relu_kernel(x, w, b, out):\n    c, r = cuda.grid(2)\n    m, n = out.shape\n"
        "    g = r * cuda.gridDim.x * cuda.blockDim.x + c\n    if g < m * n:\n        i, j = g % m, g // m\n"
        "        out[i, j] = max(x[i, j] * w[j] + b[j], 0.0)\n")
    wrong += [t6._two_pass, t6._one_row_of_threads_loops, t6._rows_on_x, kernels.load_kernel(column_major, p.name, NS,
                                                                                              cuda), kernels.load_kernel(
        "@cuda.jit\ndef scale_bias_relu_kernel(x, w, b, out):\n    j, i = cuda.grid(2)\n"
        "    out[i, j] = max(x[i, j] * w[j] + b[j], 0.0)\n", p.name, NS, cuda)]
    messages = []
    for fn in wrong:
        live, hidden = _verdict(lambda: p.check(fn)), False
        if live is None:
            live, hidden = _verdict(lambda: p.check(fn, hidden=True)), True
        assert live is not None
        from_data = None
        for case in (p.hidden_cases() if hidden else p.visible):
            seen = _over_the_wire(p.observe(fn, case))
            from_data = _verdict(lambda: p.judge(seen, p.reference(*case.args), case))
            if from_data:
                break
        assert from_data == live, f"\n live: {live}\n data: {from_data}"
        messages.append(live)
    assert any("reads `out` back" in m for m in messages) and any("grid-stride loop" in m for m in messages)
    assert any("shared memory" in m for m in messages) and any("race" in m for m in messages)
    assert any("sectors" in m for m in messages) and any("out of bounds" in m for m in messages)
