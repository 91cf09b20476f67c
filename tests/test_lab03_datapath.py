"""Lab 3's checkers: other correct answers pass, subtle wrong ones fail, and grading is deterministic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from grader.checks import CheckFailure
from grader.answers import lab03_datapath as answers  # the instructor's side: references, hidden-case generators
from grader.labs import lab03_datapath as lab
from grader.pipeline.steps import Call


def chunked_ok(x, mem, fn, copies):
    out = np.empty_like(x)
    chunk = mem.budget // (copies * x.itemsize)
    for s in range(0, x.size, chunk):
        d = mem.to_device(x[s:s + chunk])
        r = fn(d)
        out[s:s + chunk] = mem.to_host(r)
        del d, r
    return out


def as_student(ref):
    """The reference as a student's own function: a copy, with the lab's names as they were (the check locks the
    lab's answers while the student's function runs, and refuses the reference itself)."""
    import types

    refs = {id(q.reference) for q in lab.problems.values() if q.has_answers()}
    scope = dict(ref.__globals__)
    for name, value in ref.__globals__.items():  # a helper that is another exercise's answer: the student's own
        if id(value) in refs and value is not ref:
            scope[name] = types.FunctionType(value.__code__, scope, name, value.__defaults__)
    return types.FunctionType(ref.__code__, scope, ref.__name__, ref.__defaults__, ref.__closure__)


def test_reference_answers_pass_their_own_checks():
    for name, p in lab.problems.items():
        p.has_answers()  # binds the reference from grader.answers
        fn = chunked_ok if name == "chunked_map" else as_student(p.reference)
        if name == "asym_tukey_vectorized":
            continue  # its reference is the float64 formula; checked below with student-style answers
        p.check(fn)
        p.check(fn, hidden=True)


def test_asym_tukey_accepts_numpy_and_numba_answers_and_rejects_loops_huber_and_one_cutoff():
    numba = pytest.importorskip("numba")

    def numpy_answer(pred, target, lo, hi):  # the solution's shape: every region computed, masks pick
        r = pred - target
        c = np.where(r >= 0, hi, lo).astype(r.dtype)
        w = 1 - (r / c) ** 2
        inside = np.abs(r) <= c
        return np.where(inside, c * c / 6 * (1 - w**3), c * c / 6), np.where(inside, r * w * w, 0)

    @numba.njit
    def _tukey(pred, target, lo, hi, loss, grad):
        for i in range(pred.shape[0]):
            r = pred[i] - target[i]
            c = hi if r >= 0 else lo
            if abs(r) > c:
                loss[i], grad[i] = c * c / 6, 0.0
            else:
                w = 1 - (r / c) ** 2
                loss[i], grad[i] = c * c / 6 * (1 - w**3), r * w * w

    def numba_answer(pred, target, lo, hi):
        loss, grad = np.empty_like(pred), np.empty_like(pred)
        _tukey(pred, target, lo, hi, loss, grad)
        return loss, grad

    def loop(pred, target, lo, hi):
        loss, grad = np.empty_like(pred), np.empty_like(pred)
        for i in range(len(pred)):
            r = pred[i] - target[i]
            c = hi if r >= 0 else lo
            w = max(1 - (r / c) ** 2, 0.0)
            loss[i], grad[i] = c * c / 6 * (1 - w**3), r * w * w
        return loss, grad

    for answer in (numpy_answer, numba_answer):
        lab.ASYM_TUKEY.check(answer)
        lab.ASYM_TUKEY.check(answer, hidden=True)
    with pytest.raises(CheckFailure, match="loops over elements"):
        lab.ASYM_TUKEY.check(loop)

    def one_cutoff(pred, target, lo, hi):  # hi on both sides
        r = pred - target
        w = np.maximum(1 - (r / hi) ** 2, 0)
        return hi * hi / 6 * (1 - w**3), r * w * w

    with pytest.raises(CheckFailure, match="wrong only where r < 0: that side's cutoff is lo"):
        lab.ASYM_TUKEY.check(one_cutoff)
    scipy_special = pytest.importorskip("scipy.special")

    def huber(pred, target, lo, hi):  # the old exercise's answer: SciPy's Huber loss per side, the residual clipped
        r = pred - target
        return np.where(r > 0, scipy_special.huber(hi, r), scipy_special.huber(lo, r)), np.clip(r, -lo, hi)

    with pytest.raises(CheckFailure, match="not Huber's"):
        lab.ASYM_TUKEY.check(huber)

    def zero_beyond(pred, target, lo, hi):  # flat tails at 0, not at c²/6
        r = pred - target
        c = np.where(r >= 0, hi, lo)
        w = np.maximum(1 - (r / c) ** 2, 0)
        return np.where(w > 0, c * c / 6 * (1 - w**3), 0), r * w * w

    with pytest.raises(CheckFailure, match=r"c²/6 \(the value it reaches"):
        lab.ASYM_TUKEY.check(zero_beyond)


def test_asym_tukey_hidden_cases_cross_both_cutoffs():
    for seed in range(5):
        cases = lab.ASYM_TUKEY.hidden_cases(seed)
        assert {str(c.args[0].dtype) for c in cases} == {"float32", "float64"}
        assert any(c.args[0].size == 1 for c in cases)
        big = [c for c in cases if c.args[0].size > 100]
        for c in big:
            r = c.args[0].astype(float) - c.args[1]
            assert (r > c.args[3]).any() and (r < -c.args[2]).any() and (np.abs(r) < min(c.args[2:])).any()
        assert any(abs(c.args[2] / c.args[3] - 1) > 0.5 for c in big)  # thresholds far apart: a swap shows


def test_chunked_map_rejects_too_small_chunks_missing_frees_and_device_results():
    def tiny_chunks(x, mem, fn, copies):
        out = np.empty_like(x)
        for s in range(0, x.size, 100):
            d = mem.to_device(x[s:s + 100])
            r = fn(d)
            out[s:s + 100] = mem.to_host(r)
            del d, r
        return out

    with pytest.raises(CheckFailure, match="number of chunks"):
        lab.CHUNKED.check(tiny_chunks)

    def host_only(x, mem, fn, copies):
        return fn(x)  # never touches the device: fn refuses a host array

    with pytest.raises(CheckFailure, match="runs on the device: pass it a DeviceArray"):
        lab.CHUNKED.check(host_only)

    def forged_counters(x, mem, fn, copies):  # fn(x) on the host, counters set by hand: fn refuses it too
        out = np.asarray(fn(x))
        mem.h2d_bytes, mem.d2h_bytes = x.nbytes, out.nbytes
        return out

    with pytest.raises(CheckFailure, match="runs on the device"):
        lab.CHUNKED.check(forged_counters)

    def whole(x, mem, fn, copies):
        return mem.to_host(fn(mem.to_device(x)))

    with pytest.raises(CheckFailure, match="OutOfMemoryError"):
        lab.CHUNKED.check(whole)


def chunked_double_buffered(x, mem, fn, copies):
    """Issue 21: the next chunk is copied in before fn runs on the current one (a pipeline's prefetch): room for
    copies + 1 chunk-sized arrays, so chunks are smaller and more numerous than the fewest the budget allows."""
    out = np.empty_like(x)
    chunk = mem.budget // ((copies + 1) * x.itemsize)
    starts = list(range(0, x.size, chunk))
    nxt = mem.to_device(x[:chunk])
    for i, s in enumerate(starts):
        cur = nxt
        nxt = mem.to_device(x[starts[i + 1]:starts[i + 1] + chunk]) if i + 1 < len(starts) else None
        r = fn(cur)
        out[s:s + chunk] = mem.to_host(r)
        del cur, r
    return out


def test_chunked_map_grades_the_budget_not_one_design():
    """Issue 21 (review 2026-12-06, B2): a double-buffered answer (more chunks than the fewest) and one with half-size
    chunks pass; one that holds a chunk more than the budget allows fails (the tracker raises), as does one whose
    chunks are needlessly small."""
    def half_chunks(x, mem, fn, copies):
        out = np.empty_like(x)
        chunk = max(1, mem.budget // (2 * copies * x.itemsize))
        for s in range(0, x.size, chunk):
            d = mem.to_device(x[s:s + chunk])
            r = fn(d)
            out[s:s + chunk] = mem.to_host(r)
            del d, r
        return out

    def double_buffered_too_big(x, mem, fn, copies):  # prefetches, but with single-buffer chunks: over budget
        out = np.empty_like(x)
        chunk = mem.budget // (copies * x.itemsize)
        starts = list(range(0, x.size, chunk))
        nxt = mem.to_device(x[:chunk])
        for i, s in enumerate(starts):
            cur = nxt
            nxt = mem.to_device(x[starts[i + 1]:starts[i + 1] + chunk]) if i + 1 < len(starts) else None
            out[s:s + chunk] = mem.to_host(fn(cur))
            del cur
        return out

    for answer in (chunked_double_buffered, half_chunks):
        lab.CHUNKED.check(answer)
        lab.CHUNKED.check(answer, hidden=True)
    seen = [lab.CHUNKED.observe(chunked_double_buffered, c) for c in lab.CHUNKED.hidden_cases()]
    fewest = [lab.min_chunks(c.args[0].size, c.args[0].itemsize, c.args[1].budget, c.args[3])
              for c in lab.CHUNKED.hidden_cases()]
    assert any(o["h2d_copies"] > f for o, f in zip(seen, fewest))  # really more chunks than the fewest
    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="OutOfMemoryError"):
            lab.CHUNKED.check(double_buffered_too_big, hidden=hidden)


def test_chunked_map_visible_cases_are_fresh_on_every_run():
    lab.CHUNKED.check(chunked_ok)
    lab.CHUNKED.check(chunked_ok)  # a second run must not see the first run's counters


def test_chunked_map_hidden_cases_need_several_chunks_and_remainders():
    for case in lab.CHUNKED.hidden_cases():
        x, mem, fn, copies = case.args
        chunk = mem.budget // (copies * x.itemsize)
        assert chunk >= 1
    assert any(lab.min_chunks(c.args[0].size, c.args[0].itemsize, c.args[1].budget, c.args[3]) > 1
               for c in lab.CHUNKED.hidden_cases())


def _message(fn) -> str | None:
    import contextlib
    import io

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            fn()
    except CheckFailure as exc:
        return str(exc)
    return None


def _over_the_wire(x):
    """What crosses between the sandbox and the grader: JSON text of the wire format, decoded."""
    from grader.pipeline.wire import decode, encode

    return decode(_as_json(encode(x)))


def _as_json(data):
    import json

    return json.loads(json.dumps(data, allow_nan=True))


def test_chunked_map_cases_travel_as_data():
    """Visible and hidden cases are plain data (x, a Device, a DeviceFn by name, copies): encoded for a sandbox
    and decoded there, they are the same cases, and the decoded DeviceFn computes what the original does."""
    from grader.pipeline.wire import decode_cases, encode_cases

    cases = list(lab.CHUNKED.visible) + lab.CHUNKED.hidden_cases()
    back = decode_cases(_as_json(encode_cases(cases)))
    assert len(back) == len(cases) == 8
    for case, again in zip(cases, back):
        x, device, fn, copies = again.args
        assert np.array_equal(x, case.args[0]) and x.dtype == case.args[0].dtype
        assert (device, fn, copies) == case.args[1:] and isinstance(device, lab.Device)
        assert fn == case.args[2] and np.array_equal(lab._BODIES[fn.name](x), lab._BODIES[fn.name](case.args[0]))
        assert again.call_text("chunked_map") == case.call_text("chunked_map")
    assert "DeviceMemory(budget=" in cases[0].call_text("chunked_map")


def test_device_functions_compute_what_their_names_say():
    """The bodies a DeviceFn names (a case carries only the name): by hand, on NumPy and on the device."""
    from gpucourse import devmem

    x = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])
    by_hand = {"scale_shift": [-5.0, -0.5, 1.0, 4.0, 10.0], "hypot1": np.sqrt([6.0, 2.25, 2.0, 3.0, 11.0]),
               "relu": [0.0, 0.0, 0.0, 1.0, 3.0]}
    assert {f.name: f.copies for f in lab.KERNELS} == {"scale_shift": 3, "hypot1": 3, "relu": 2}
    for f in lab.KERNELS:
        assert np.allclose(lab._BODIES[f.name](x), by_hand[f.name], rtol=1e-15, atol=0), f.name
        mem = devmem.DeviceMemory(x.nbytes * f.copies, xp=np)
        assert np.array_equal(mem.to_host(f(mem.to_device(x))), lab._BODIES[f.name](x))  # fits in `copies` arrays
        with pytest.raises(TypeError, match=f"{f.name} runs on the device: pass it a DeviceArray"):
            f(x)  # a host array is refused: the result must come from the device


def _chunked_answers() -> dict:
    """Right and wrong answers, each wrong in one way the judge names."""
    def tiny_chunks(x, mem, fn, copies):
        out = np.empty_like(x)
        for s in range(0, x.size, 100):
            d = mem.to_device(x[s:s + 100])
            r = fn(d)
            out[s:s + 100] = mem.to_host(r)
            del d, r
        return out

    def never_frees(x, mem, fn, copies):
        out, keep = np.empty_like(x), []
        chunk = mem.budget // (copies * x.itemsize)
        for s in range(0, x.size, chunk):
            keep.append(mem.to_device(x[s:s + chunk]))
            out[s:s + chunk] = mem.to_host(fn(keep[-1]))
        return out

    def twice_back(x, mem, fn, copies):
        out = np.empty_like(x)
        chunk = mem.budget // (copies * x.itemsize)
        for s in range(0, x.size, chunk):
            d = mem.to_device(x[s:s + chunk])
            r = fn(d)
            out[s:s + chunk] = mem.to_host(r)
            mem.to_host(r)
            del d, r
        return out

    def off_by_one(x, mem, fn, copies):
        out = chunked_ok(x, mem, fn, copies)
        out[-1] += 1
        return out

    return {
        "right": chunked_ok,
        "tiny_chunks": tiny_chunks,
        "never_frees": never_frees,
        "twice_back": twice_back,
        "off_by_one": off_by_one,
        "float64": lambda x, mem, fn, copies: chunked_ok(x, mem, fn, copies).astype(np.float64),
        "host_only": lambda x, mem, fn, copies: fn(x),
        "device_array": lambda x, mem, fn, copies: fn(mem.to_device(x[:1])),
        "a_list": lambda x, mem, fn, copies: list(chunked_ok(x, mem, fn, copies)),
    }


def test_chunked_map_judged_from_data_as_the_live_check():
    """Observe here, judge there: an observation that crossed the wire judges as the live check does — the right
    answer passes every visible and hidden case, every wrong one fails with the same message; a forged or empty
    observation is a failure."""
    p = lab.CHUNKED
    cases = list(p.visible) + p.hidden_cases()
    failed = set()
    for name, fn in _chunked_answers().items():
        for case in cases:
            expected = p.reference(*case.args)
            live = _message(lambda: p.judge(p.observed(fn, case), expected, case))
            try:
                seen = _over_the_wire(p.observe(fn, case))
            except Exception as exc:  # the worker reports what fn raised: "<what> raised <error>"
                data = f"{case.call_text(p.name)} raised {type(exc).__name__}: {exc}"
            else:
                data = _message(lambda: p.judge(seen, expected, case))
            assert live == data, (name, live, data)
            if live:
                failed.add(name)
    assert failed == set(_chunked_answers()) - {"right"}, failed
    case = p.visible[0]
    for forged in (None, {}, [1, 2], {"result": p.reference(*case.args)}):
        with pytest.raises(CheckFailure, match="no observation"):
            p.judge(forged, p.reference(*case.args), case)


def test_chunked_map_messages_name_the_rule_broken():
    p = lab.CHUNKED
    answers = _chunked_answers()
    expect = {"tiny_chunks": "number of chunks", "never_frees": "OutOfMemoryError", "twice_back": "device→host",
              "off_by_one": "elements differ from fn", "float64": "dtype float64", "host_only": "runs on the device",
              "device_array": "got a DeviceArray", "a_list": "expected a NumPy array, got list"}
    for name, words in expect.items():
        assert words in (_message(lambda: p.check(answers[name])) or ""), name


def test_chunked_map_without_the_answer_side(monkeypatch, capsys):
    """As in the student edition and the grading sandbox: no reference, no generator. The visible check judges
    against lab03_datapath.expected.json (from a fresh device on every run; a wrong answer still fails); the hidden
    check outside grading says it runs at grading, and inside (cases installed as data) calls the function on
    fresh devices and judges nothing but whether it ran."""
    import grader.problem as problem_mod
    import grader.seeding as seeding
    from grader.pipeline.wire import decode_cases, encode_cases

    several = [c for c in lab.CHUNKED.hidden_cases()  # cases that need several chunks: never_frees runs out
               if lab.min_chunks(c.args[0].size, c.args[0].itemsize, c.args[1].budget, c.args[3]) > 1][:2]
    cases = decode_cases(_as_json(encode_cases(several)))
    p = lab.CHUNKED
    monkeypatch.setattr(problem_mod, "_answer_module", lambda lab_module: None)
    monkeypatch.setattr(p, "reference", None)
    monkeypatch.setattr(p, "hidden", None)
    assert not p.has_answers()
    p.check(chunked_ok)
    p.check(chunked_ok)
    assert capsys.readouterr().out.count("✓ chunked_map: 2 visible cases passed") == 2
    assert "number of chunks" in _message(lambda: p.check(_chunked_answers()["tiny_chunks"]))
    p.check(chunked_ok, hidden=True)
    assert "the hidden tests run when your lab is graded" in capsys.readouterr().out
    monkeypatch.setattr(seeding, "installed_cases", lambda name: cases if name == "chunked_map" else None)
    p.check(_chunked_answers()["tiny_chunks"], hidden=True)  # wrong, but it runs: judged by the grader
    assert "ran on 2 hidden cases; they are judged by the grader" in capsys.readouterr().out
    assert "OutOfMemoryError" in _message(lambda: p.check(_chunked_answers()["never_frees"], hidden=True))


def test_chunked_map_cells_are_rechecked_by_observation():
    """The grader's re-check plans chunked_map's test cells as observations of cases sent as data (never
    "kernel-only"), and judges the worker's lines: the right answer passes, a wrong one fails with its message."""
    import json

    from grader import grade
    from grader.pipeline import recheck, verdict
    from grader.pipeline.wire import decode_cases, encode

    source = grade.Lab.find("lab03_datapath")
    for q in lab.problems.values():  # as the grading job does first: this student's hidden cases, drawn here
        q.hidden_cases(seed=11)
    steps, expected = recheck.plan(source, source.source(), seeds={"chunked_map": 11})
    mine = [i for i, st in enumerate(steps) if getattr(st, "test", "").startswith("chunked_map")]
    assert {steps[i].test for i in mine} == {"chunked_map_visible", "chunked_map_hidden"}
    calls = [i for i in mine if isinstance(steps[i], Call)]
    assert len(calls) == 8 and all(steps[i].observe and steps[i].case is not None for i in calls)
    assert not any(getattr(steps[i], "kernel_only", False) for i in mine)
    hidden = [expected[i][1] for i in calls if steps[i].hidden]
    assert [c.args[0].size for c in hidden] == [c.args[0].size for c in lab.CHUNKED.hidden_cases(seed=11)]
    tests = {"chunked_map_visible", "chunked_map_hidden"}
    for name, fn in _chunked_answers().items():
        lines = []
        for i in mine:
            rec = {"step": i, "ok": True}
            if isinstance(steps[i], Call):
                case = decode_cases([_as_json(steps[i].case)])[0]  # what the worker rebuilds
                try:
                    rec["value"] = encode(lab.CHUNKED.observe(fn, case))
                except Exception as exc:  # noqa: BLE001
                    rec = {"step": i, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
            lines.append(json.dumps(rec))
        lines.append(json.dumps({"done": True}))
        cells, _, _ = verdict.verdicts(steps, expected, lines, lab.problems)
        cells = {k: v for k, v in cells.items() if k in tests}
        assert set(cells) == tests, (name, cells)
        if name == "right":
            assert all(c["ok"] for c in cells.values()), cells
        else:
            assert not cells["chunked_map_visible"]["ok"] and cells["chunked_map_visible"]["message"], name


def _unweighted(sizes, seconds):
    (slope, intercept), *_ = np.linalg.lstsq(np.c_[sizes, np.ones_like(sizes)], seconds, rcond=None)
    return intercept, 1 / slope


def _weighted(sizes, seconds):
    slope, intercept = np.polyfit(sizes, seconds, 1, w=1 / seconds)
    return intercept, 1 / slope


def _log_space(sizes, seconds):
    """Gauss-Newton on log(seconds) = log(latency + size / bandwidth): another sound estimator."""
    lat, bw = seconds[0], sizes[-1] / seconds[-1]
    x = np.log([lat, bw])
    for _ in range(50):
        lat, bw = np.exp(x)
        model = lat + sizes / bw
        r = np.log(seconds) - np.log(model)
        J = np.c_[lat / model, -sizes / (bw * model)]  # d log(model) / d (log lat, log bw)
        step, *_ = np.linalg.lstsq(J, r, rcond=None)
        x = x + step
    return tuple(np.exp(x))


def _plan(fit, runs=lambda t: t.min(axis=1)):
    """A transfer_plan from a fit of (sizes, one time per size) and a way of reducing each size's runs."""
    def transfer_plan(sizes, seconds, fraction):
        lat, bw = fit(sizes, runs(seconds))
        return lat, bw, fraction / (1 - fraction) * lat * bw
    return transfer_plan


def test_transfer_plan_grades_against_the_truth_sound_plans_pass_others_fail():
    for sound in (_plan(_log_space), _plan(_weighted)):
        lab.TRANSFER.check(sound)
        lab.TRANSFER.check(sound, hidden=True)
    with pytest.raises(CheckFailure, match="latency"):
        lab.TRANSFER.check(_plan(_unweighted), hidden=True)  # the best runs, but an unweighted line
    with pytest.raises(CheckFailure):
        lab.TRANSFER.check(_plan(_weighted, lambda t: np.median(t, axis=1)), hidden=True)  # interrupted medians
    with pytest.raises(CheckFailure):
        lab.TRANSFER.check(_plan(_weighted, lambda t: t.mean(axis=1)))  # the mean: interrupted runs count

    def every_run(sizes, seconds, fraction):  # the third attack's one-call fit, on every run at once
        lat, bw = _weighted(np.repeat(sizes, seconds.shape[1]), seconds.ravel())
        return lat, bw, fraction / (1 - fraction) * lat * bw

    with pytest.raises(CheckFailure):
        lab.TRANSFER.check(every_run, hidden=True)

    def half_the_size(sizes, seconds, fraction):  # size = fraction · latency · bandwidth: the (1 − f) forgotten
        lat, bw, size = _plan(_weighted)(sizes, seconds, fraction)
        return lat, bw, fraction * lat * bw

    with pytest.raises(CheckFailure, match="size"):
        lab.TRANSFER.check(half_the_size, hidden=True)

    def smallest_and_largest(sizes, seconds, fraction):  # "small copies are all latency": not at 8 KiB
        best = seconds.min(axis=1)
        return best[0], sizes[-1] / best[-1], fraction / (1 - fraction) * best[0] * sizes[-1] / best[-1]

    with pytest.raises(CheckFailure, match="latency") as two_points:
        lab.TRANSFER.check(smallest_and_largest, hidden=True)
    # the hint must fit this answer too, which fits no line at all (method-neutral)
    assert "not pure latency" in str(two_points.value) and "least-squares" not in str(two_points.value)


def test_transfer_plan_a_fit_inside_both_bands_never_fails_on_the_size():
    """The size is a function of the latency and bandwidth: a latency 12 % low (inside its 15 % band) with the right
    formula once failed the size's 10 % band against the truth, with a hint blaming the formula. Now the size is
    graded against the answer's own latency and bandwidth: such a plan passes, and a wrong formula still fails."""
    for case in [*lab.TRANSFER.visible, *lab.TRANSFER.hidden_cases()]:
        (lat, bw, _), f = case.truth, case.args[2]
        for got_lat, got_bw in [(0.877 * lat, 0.997 * bw), (1.14 * lat, 1.07 * bw), (0.86 * lat, 0.93 * bw)]:
            lab._compare_plan("plan", (got_lat, got_bw, f / (1 - f) * got_lat * got_bw), (), case)

    def forgot_one_minus_f(sizes, seconds, fraction):
        lat, bw = _weighted(sizes, seconds.min(axis=1))
        return lat, bw, fraction * lat * bw

    with pytest.raises(CheckFailure, match="your own latency and bandwidth") as wrong:
        lab.TRANSFER.check(forgot_one_minus_f)
    assert "fraction · bandwidth for size" in str(wrong.value)


def test_transfer_plan_bands_are_met_by_sound_plans_over_many_series_and_missed_by_others():
    """5,000 series drawn like the hidden cases: the best runs with a 1/t-weighted fit (the reference) never leave
    the bands; the medians, every run at once and an unweighted line through the best runs leave them often."""
    rng = np.random.default_rng(2024)
    plans = {"reference": answers.transfer_plan, "median": _plan(_weighted, lambda t: np.median(t, axis=1)),
             "unweighted": _plan(_unweighted), "log space": _plan(_log_space),
             "every run": lambda s, t, f: _plan(_weighted, lambda x: x.ravel())(np.repeat(s, t.shape[1]), t, f)}
    misses = dict.fromkeys(plans, 0)
    n = 5_000
    for i in range(n):
        case = answers._transfer_case(rng, float(rng.uniform(2e-6, 30e-6)), float(rng.uniform(5e9, 60e9)),
                                      (int(rng.integers(8, 14)), int(rng.integers(24, 31))),
                                      float(rng.choice([0.5, 0.75, 0.8, 0.9, 0.95])))
        lat, bw, size = case.truth
        for k, plan in plans.items():
            if k == "log space" and i % 20:
                continue  # the slower estimator on a subsample
            got = plan(*case.args)
            own = case.args[2] / (1 - case.args[2]) * got[0] * got[1]  # the size is graded against these
            misses[k] += bool(abs(got[0] / lat - 1) > lab.LATENCY_RTOL or abs(got[1] / bw - 1) > lab.BANDWIDTH_RTOL
                              or abs(got[2] / own - 1) > lab.SIZE_RTOL)
    assert misses["reference"] == 0 and misses["log space"] == 0, misses
    # measured on 5,000: median 0.55, every run 0.84, unweighted 0.34
    assert misses["median"] / n > 0.4 and misses["every run"] / n > 0.6 and misses["unweighted"] / n > 0.3, misses


def test_transfer_cases_keep_a_clean_run_of_every_size_and_the_truths_agree():
    for case in [*lab.TRANSFER.visible, *lab.TRANSFER.hidden_cases()]:
        sizes, seconds, fraction = case.args
        lat, bw, size = case.truth
        assert seconds.shape[0] == sizes.size and 0 < fraction < 1
        assert np.all(seconds.min(axis=1) < 1.1 * (lat + sizes / bw))  # an uninterrupted run of every size
        assert size / (lat + size / bw) == pytest.approx(fraction * bw)  # the stated size is the stated fraction's


def _best_layout(n, k, cost_if, cost_else):
    """The fewest instructions over every layout: a search over how many if-items each warp gets."""
    import functools

    sizes = [32] * (n // 32) + ([n % 32] if n % 32 else [])

    @functools.lru_cache(maxsize=None)
    def best(w, left):
        if w == len(sizes):
            return 0 if left == 0 else 10**9
        return min(cost_if * (t > 0) + cost_else * (t < sizes[w]) + best(w + 1, left - t)
                   for t in range(min(sizes[w], left) + 1))

    return best(0, k)


def test_warp_layout_reference_is_the_fewest_over_every_layout():
    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(1, 130))
        k = int(rng.integers(0, n + 1))
        cond = np.zeros(n, bool)
        cond[rng.permutation(n)[:k]] = True
        ci, ce = (int(c) for c in rng.integers(1, 30, 2))
        order, issued, _ = answers.warp_layout(cond, ci, ce)
        assert issued == _best_layout(n, k, ci, ce) == lab.issued_by(cond, np.asarray(order), ci, ce)


def test_warp_layout_partial_warps_matter_and_each_fixed_design_fails():
    def padded(cond, cost_if, cost_else):  # counts the missing lanes of the last warp as else-lanes
        order, _, _ = answers.warp_layout(cond, cost_if, cost_else)
        cond = np.concatenate([np.asarray(cond, bool)[order], np.zeros(-len(cond) % 32, bool)])
        issued = sum(cost_if * w.any() + cost_else * (~w).any() for w in cond.reshape(-1, 32))
        useful = cost_if * int(cond.sum()) + cost_else * int((~cond).sum())
        return order, int(issued), useful / (32 * issued)

    def as_given(cond, cost_if, cost_else):  # the count of the items' own layout (the old exercise's answer)
        order = np.arange(len(cond))
        issued = lab.issued_by(cond, order, cost_if, cost_else)
        return order, issued, (cost_if * cond.sum() + cost_else * (~cond).sum()) / (32 * issued)

    for wrong in (padded, as_given):
        with pytest.raises(CheckFailure):
            lab.WARP_LAYOUT.check(wrong, hidden=True)
    with pytest.raises(CheckFailure, match="permutation"):
        lab.WARP_LAYOUT.check(lambda c, a, b: (np.zeros(len(c), int), 0, 0.0))


def test_hidden_cases_are_deterministic():
    for p in lab.problems.values():
        a, b = p.hidden_cases(), p.hidden_cases()
        assert [c.call_text(p.name) for c in a] == [c.call_text(p.name) for c in b]


def _pipeline_dp(steps, nbytes, cpu, gpu, link):
    """Another correct design: dynamic programming over the side the array is on after each step."""
    copy = link["latency"] + nbytes / link["bandwidth"]
    roof = lambda s, p: max(s["flops"] / p["flops"], s["bytes"] / p["bandwidth"])  # noqa: E731
    best = {"cpu": (0.0, []), "gpu": (copy, [])}  # the array starts on the host; being on the GPU costs a copy
    for s in steps:
        nxt = {}
        for side, proc in (("cpu", cpu), ("gpu", gpu)):
            if side == "gpu" and not s["gpu_ok"]:
                nxt[side] = (float("inf"), [])
                continue
            other = "gpu" if side == "cpu" else "cpu"
            t, path = min(best[side], (best[other][0] + copy, best[other][1]), key=lambda tp: tp[0])
            nxt[side] = (t + roof(s, proc), path + [side])
        best = nxt
    return min(best["cpu"], (best["gpu"][0] + copy, best["gpu"][1]), key=lambda tp: tp[0])


def _pipeline_per_step(steps, nbytes, cpu, gpu, link):
    """The attack's design: each step offloaded on its own (gc.datapath.offload_times + gpu_total per step)."""
    from gpucourse import datapath, roofline

    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    ln = datapath.Link("link", link["bandwidth"], link["latency"])
    total, placement = 0.0, []
    for s in steps:
        t = datapath.offload_times(datapath.Workload("step", s["flops"], nbytes, nbytes), c, g, ln)
        t["process"] = max(s["flops"] / gpu["flops"], s["bytes"] / gpu["bandwidth"])  # the step's own bytes
        on_cpu = max(s["flops"] / cpu["flops"], s["bytes"] / cpu["bandwidth"])
        go = s["gpu_ok"] and datapath.gpu_total(t) < on_cpu
        total += datapath.gpu_total(t) if go else on_cpu
        placement.append("gpu" if go else "cpu")
    return total, placement


def test_place_pipeline_accepts_another_design_and_rejects_per_step_offloads():
    lab.PIPELINE.check(_pipeline_dp)
    lab.PIPELINE.check(_pipeline_dp, hidden=True)
    with pytest.raises(CheckFailure, match="placement"):
        lab.PIPELINE.check(_pipeline_per_step)
    with pytest.raises(CheckFailure, match="placement"):
        lab.PIPELINE.check(_pipeline_per_step, hidden=True)


def test_place_pipeline_hidden_cases_hold_every_family_and_a_unique_best():
    for seed in range(12):
        cases = lab.PIPELINE.hidden_cases(seed)
        assert all(answers._unique_best(c) for c in cases)
        bests = [answers._ranked(c)[0][1] for c in cases]
        for name, family in answers._PIPELINE_FAMILIES.items():
            assert any(family(c, b) for c, b in zip(cases, bests)), (seed, name)
        assert any(not any(s["gpu_ok"] for s in c.args[0]) for c in cases)
    for case in lab.PIPELINE.visible:
        assert answers._unique_best(case)
    assert answers._ranked(lab.PIPELINE_RUN)[0][1] != answers._per_step_round_trips(lab.PIPELINE_RUN)


def test_place_pipeline_messages():
    def off_limits(steps, nbytes, cpu, gpu, link):
        return 0.0, ["gpu"] * len(steps)

    assert "needs the CPU" in (_message(lambda: lab.PIPELINE.check(off_limits)) or "")
    assert "expected a list of 3 entries" in (_message(lambda: lab.PIPELINE.check(lambda *a: (0.0, ["cpu"]))) or "")

    def right_placement_no_copy_back(steps, nbytes, cpu, gpu, link):
        seconds, placement = _pipeline_dp(steps, nbytes, cpu, gpu, link)
        return seconds - (link["latency"] + nbytes / link["bandwidth"]) * (placement[-1] == "gpu"), placement

    assert "seconds" in (_message(lambda: lab.PIPELINE.check(right_placement_no_copy_back)) or "")


def _link_by_search(flops, bytes_in, bytes_out, cpu, gpu, latency):
    """A search over the course's model (allowed: using the model backwards), bracketed and with None detected."""
    from gpucourse import datapath, roofline

    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    w = datapath.Workload("w", flops, bytes_in, bytes_out)

    def pays(b):
        t = datapath.offload_times(w, c, g, datapath.Link("l", b, latency))
        return datapath.gpu_total(t) < t["cpu"]

    if not pays(1e300):
        return None
    lo, hi = 1e-300, 1e300
    for _ in range(3000):
        mid = (lo * hi) ** 0.5 if hi / lo > 4 else (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if pays(mid) else (mid, hi)
    return hi


def test_min_link_bandwidth_other_forms_pass_and_the_tie_is_none():
    lab.LINK.check(_link_by_search)
    lab.LINK.check(_link_by_search, hidden=True)
    assert answers.min_link_bandwidth(*lab.LINK_TIE.args) is None
    assert answers._slack(lab.LINK_TIE) == 0

    def non_strict(flops, bytes_in, bytes_out, cpu, gpu, latency):  # "<" where a tie never pays
        moved = bytes_in + bytes_out
        left = max(flops / cpu["flops"], moved / cpu["bandwidth"]) - 2 * latency - max(
            flops / gpu["flops"], moved / gpu["bandwidth"])
        return None if left < 0 else (moved / left if left else float("inf"))

    for hidden in (False, True):
        with pytest.raises(CheckFailure, match="expected None"):
            lab.LINK.check(non_strict, hidden=hidden)


def test_min_link_bandwidth_hidden_cases_are_clear_of_the_tie_and_hold_both_outcomes():
    for seed in range(20):
        cases = lab.LINK.hidden_cases(seed)
        found = [answers.min_link_bandwidth(*c.args) for c in cases]
        assert found[0] is None and found[1] is None and None in found[5:] and any(f is not None for f in found)
        for c in cases[1:]:
            cpu_s = Fraction(max(c.args[0] / c.args[3]["flops"], (c.args[1] + c.args[2]) / c.args[3]["bandwidth"]))
            assert abs(answers._slack(c)) > Fraction(1, 10**6) * cpu_s
        assert any(c.args[2] > 0 and f is not None for c, f in zip(cases, found))
        assert any(c.args[2] == 0 and f is not None for c, f in zip(cases, found))


def test_warp_layout_hidden_cases_hold_every_class():
    for seed in range(10):
        cases = lab.WARP_LAYOUT.hidden_cases(seed)
        kinds = {(len(c.args[0]) % 32 == 0, bool(c.args[0].all()), bool(c.args[0].any())) for c in cases}
        assert {(True, True, True), (False, False, False), (False, True, True), (True, False, True)} <= kinds
        assert any(len(c.args[0]) == 1 for c in cases)
        assert all(c.args[0].dtype == bool for c in cases)  # the spec: cond is a bool array
        for family in answers._LAYOUT_FAMILIES.values():
            assert any(family(c, answers.warp_layout(*c.args)[1]) for c in cases)


def test_stored_warp_masks_are_the_reference_models():
    """gpucourse/data/warp_masks.json (what course section 3.3 shows) is what the answer side's warp model computes:
    rewrite it with python -m grader.answers.lab03_datapath."""
    from gpucourse import simd_simt

    assert simd_simt.WARP_MASKS_PATH.read_text(encoding="utf-8") == answers.course_data_text()
    assert not hasattr(simd_simt, "warp_masks")
    cost_if, cost_else, stored = simd_simt.stored_warp_masks()
    for cond, masks in stored.values():
        assert np.array_equal(masks, answers.warp_masks(cond, cost_if, cost_else))
        issued = lab.issued_by(cond, np.arange(len(cond)), cost_if, cost_else)
        assert masks.shape[0] == issued


def test_warp_masks_divergent_uniform_and_partial():
    lanes = np.arange(32)
    m = answers.warp_masks(lanes % 2 == 0, 3, 5)
    assert m.shape == (8, 32)
    assert m[:3].sum(axis=1).tolist() == [16] * 3 and m[3:].sum(axis=1).tolist() == [16] * 5
    assert answers.warp_masks(lanes >= 0, 3, 5).shape == (3, 32)  # uniform: only the taken path
    assert answers.warp_masks(lanes < 0, 3, 5).shape == (5, 32)
    part = answers.warp_masks(np.ones(20, bool), 4, 4)
    assert part.shape == (4, 32) and part.sum() == 80  # 12 missing lanes never active
    with pytest.raises(ValueError):
        answers.warp_masks(np.ones(33, bool), 1, 1)


def test_a_placement_that_pays_a_copy_pair_per_gpu_step_is_named_before_its_time():
    """The greedy answer (each step on its faster side, a copy in and out around every GPU step) gets a wrong total
    and a wrong placement: the message names the placement and why, not only the total."""
    import contextlib
    import io

    def per_step(steps, nbytes, cpu, gpu, link):
        copy = link["latency"] + nbytes / link["bandwidth"]
        roof = lambda s, p: max(s["flops"] / p["flops"], s["bytes"] / p["bandwidth"])
        places = ["gpu" if s["gpu_ok"] and roof(s, gpu) + 2 * copy < roof(s, cpu) else "cpu" for s in steps]
        total = sum(roof(s, gpu) + 2 * copy if p == "gpu" else roof(s, cpu) for s, p in zip(steps, places))
        return total, places

    with pytest.raises(CheckFailure) as failed, contextlib.redirect_stdout(io.StringIO()):
        lab.problems["place_pipeline"].check(per_step)
    assert "→ placement: expected" in str(failed.value) and "one copy in and one copy out" in str(failed.value)


def test_a_narrow_dtype_is_named():
    import contextlib
    import io

    def float32(pred, target, lo, hi):
        r = (pred - target).astype(np.float32)
        c = np.where(r >= 0, hi, lo).astype(np.float32)
        w = np.maximum(1 - (r / c) ** 2, 0)
        return (c * c / 6 * (1 - w**3)).astype(np.float32), (r * w * w).astype(np.float32)

    with pytest.raises(CheckFailure, match="is float32, pred is float64: a narrower type"), \
            contextlib.redirect_stdout(io.StringIO()):
        lab.problems["asym_tukey_vectorized"].check(float32, hidden=True)


@pytest.mark.parametrize("mistake, hint", [
    ("sign", r"grad is d loss / d pred = \+r · w²"),
    ("r·w", "the loss is right; inside the cutoff grad = r · w²"),
    ("order", r"return \(loss, grad\) in that order"),
    ("swapped cutoffs", r"c the cutoff of r's side \(hi where r >= 0, lo where r < 0\)"),
    ("c²/2", "inside the cutoff loss = c²/6"),
])
@pytest.mark.parametrize("hidden", [False, True])
def test_asym_tukey_mistakes_get_the_hint_that_fits_them(mistake, hint, hidden):
    """A fresh reader's round: with lo != hi on every case, every wrong answer used to be told to pick its cutoff per
    side, whatever its mistake."""
    def answer(pred, target, lo, hi):
        r = pred - target
        c = np.where(r >= 0, lo, hi) if mistake == "swapped cutoffs" else np.where(r >= 0, hi, lo)
        w = np.maximum(1 - (r / c) ** 2, 0)
        loss, grad = c * c / (2 if mistake == "c²/2" else 6) * (1 - w**3), r * w * w
        grad = -grad if mistake == "sign" else r * w if mistake == "r·w" else grad
        return (grad, loss) if mistake == "order" else (loss, grad)

    with pytest.raises(CheckFailure, match=hint):
        lab.ASYM_TUKEY.check(answer, hidden=hidden)
