"""Judge mutants in-process: does a Problem's hidden test tell each mutant from the original?

Two judges, one per kind of subject (:mod:`.subjects`):

- :class:`ReferenceJudge` — the original reference's outputs on the cases are computed once; a
  mutant (or the reference running with a mutated helper) is called on the same cases and its
  outputs go through the Problem's own ``compare``, with the original's as the expected values.
  Killed when ``compare`` raises, the mutant raises, or it runs past its time limit. A Problem whose
  ``compare`` accepts anything (a kernel exercise compares inside its ``check``) is judged by the
  course's array comparison instead. Before any mutant, the unmutated reference must pass its own
  judge, else the reference is not answer-shaped (a ``(C, hw)`` answer, a device-memory protocol)
  and the solution is mutated instead.
- :class:`SolutionJudge` — a mutated solution goes through the checker itself, ``Problem.check(fn,
  hidden=...)``, exactly as a student's answer does (answer lock, instrumented kernel run, structure
  checks and all).

Hidden cases decide the verdict. Visible cases are tried only on mutants the hidden cases miss: a
mutant the visible test kills and the hidden one does not is a place where the hidden test is weaker
than the visible one.
"""

from __future__ import annotations

import contextlib
import io
import signal
import threading
import time
import types
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ..checks import CheckFailure, expect_array_close
from ..problem import Case, Problem
from .equivalents import Equivalents
from .operators import Mutant, mutants
from .subjects import Reach, SolutionBook, Subject, reference_subjects

MIN_LIMIT_S = 2.0  # a mutant may always take this long …
LIMIT_FACTOR = 10.0  # … or this many times what the original took on the same cases


class MutantTimeout(BaseException):
    """Raised in the main thread when a mutant runs past its limit (a BaseException: checks catch
    Exception)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (SIGALRM; no limit outside the main thread or without
    SIGALRM)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise MutantTimeout(f"did not return within {seconds:.1f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def compile_cache() -> Iterator[dict]:
    """XLA compiles each distinct lowered module once: a mutant that leaves a computation unchanged
    reuses the original's executable (``jax.stages.Lowered.compile`` keyed by the module's text,
    which holds shapes, dtypes, shardings and every op). Only while the block runs; nothing is
    cached when JAX is not loaded."""
    import sys

    cache: dict = {}
    stages = sys.modules.get("jax.stages")
    if stages is None:
        import jax.stages as stages  # noqa: PLW0621 - the labs that compile import JAX anyway
    original = stages.Lowered.compile

    def compile(self, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
        if args or kwargs:
            return original(self, *args, **kwargs)
        key = self.as_text()
        if key not in cache:
            cache[key] = original(self)
        return cache[key]

    stages.Lowered.compile = compile
    try:
        yield cache
    finally:
        stages.Lowered.compile = original


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No stdout, no warnings, no floating-point chatter from a mutant."""
    with (
        contextlib.redirect_stdout(io.StringIO()),
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
    ):
        warnings.simplefilter("ignore")
        yield


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:240]}" if text else type(exc).__name__


@dataclass
class Verdict:
    killed: bool
    how: str = ""  # the message that killed it ("" when it survived)
    timeout: bool = False


class NotAnswerShaped(Exception):
    """The unmutated reference fails its own judge: its outputs are not what an answer returns."""


# -- comparing outputs -----------------------------------------------------------------------------

def compare_arrays(what: str, got: Any, expected: Any, case: Case) -> None:
    """The course's array comparison, output by output (kernel exercises compare inside their
    check)."""
    got_t = got if isinstance(got, tuple) else (got,)
    exp_t = expected if isinstance(expected, tuple) else (expected,)
    if len(got_t) != len(exp_t):
        raise CheckFailure(f"{what}: expected {len(exp_t)} outputs, got {len(got_t)}")
    for i, (g, e) in enumerate(zip(got_t, exp_t)):
        expect_array_close(f"{what} → output {i}" if len(exp_t) > 1 else what, g, e)


def _as_input_dtype(got: Any, case: Case) -> Any:
    """A reference computed in float64 where the answer must keep its inputs' dtype (float32,
    bfloat16)."""
    return np.asarray(got).astype(case.args[0].dtype)


# references whose output differs in form from an answer's, and how an answer computing the same
# would return it
ADAPTERS: dict[str, Callable[[Any, Case], Any]] = {
    "fused_bias_gelu": _as_input_dtype,
    "fixed_scale_tanh": _as_input_dtype,
}


def _arrays(value: Any) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    return []


class ReferenceJudge:
    """The Problem's compare on the original reference's outputs vs a mutant's, over one set of
    cases."""

    def __init__(self, problem: Problem, hidden: bool):
        self.problem, self.hidden = problem, hidden
        self.kind = "hidden" if hidden else "visible"
        self.adapt = ADAPTERS.get(problem.name, lambda got, case: got)
        self._load()
        self.compare = problem.compare
        if self.cases and self.expected[0] is not None:
            try:
                with quiet():
                    problem.compare("probe", None, self.expected[0], self.cases[0])
                self.compare = compare_arrays  # accepts None: it checks nothing itself
            except Exception:  # noqa: BLE001 - any complaint means it does check
                pass
        with quiet():
            verdict = self.judge(self.outputs(problem.reference))
        if verdict.killed:
            raise NotAnswerShaped(verdict.how)

    def _load(self) -> None:
        with quiet():
            self.cases = self.problem.hidden_cases() if self.hidden else list(self.problem.visible)
            t0 = time.perf_counter()
            self.expected = [self.problem.reference(*c.args, **c.kwargs) for c in self.cases]
            self.baseline_s = time.perf_counter() - t0
        self._snapshot = [[a.copy() for a in _arrays(c.args)] for c in self.cases]

    def outputs(self, fn: Callable[..., Any]) -> list[Any] | Verdict:
        """What ``fn`` returns on every case, or the Verdict when it raises."""
        got = []
        for case in self.cases:
            try:
                got.append(fn(*case.args, **case.kwargs))
            except Exception as exc:  # noqa: BLE001 - a mutant may raise anything
                return Verdict(
                    True, f"{case.call_text(self.problem.name)} raised {first_line(exc)}"
                )
        return got

    def judge(self, outputs: list[Any] | Verdict) -> Verdict:
        if isinstance(outputs, Verdict):
            return outputs
        for case, got, expected in zip(self.cases, outputs, self.expected):
            what = case.call_text(self.problem.name)
            try:
                self.compare(what, self.adapt(got, case), expected, case)
            # CheckFailure, or a compare tripping on an odd value
            except Exception as exc:  # noqa: BLE001
                return Verdict(True, first_line(exc))
        return Verdict(False)

    def restore(self) -> None:
        """Fresh cases if a mutant wrote into an input array."""
        now = [_arrays(c.args) for c in self.cases]
        if any(
            len(a) != len(b) or any(not np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))
            for a, b in zip(now, self._snapshot)
        ):
            self._load()


CHECK_SLACK = 6.0  # Problem.time_limit and check_budget × this while the tooling runs Problem.check


class SolutionJudge:
    """``Problem.check(fn, hidden=...)``: the grader's own verdict on a (mutated) solution."""

    def __init__(self, problem: Problem, hidden: bool, answer: Any):
        self.problem, self.hidden = problem, hidden
        self.kind = "hidden" if hidden else "visible"
        t0 = time.perf_counter()
        verdict = self.judge(self.outputs(answer))
        self.baseline_s = time.perf_counter() - t0
        if verdict.killed:
            raise NotAnswerShaped(
                f"the instructor's solution fails its own {self.kind} check: {verdict.how}"
            )

    def outputs(self, fn: Any) -> Verdict:
        # the check's own per-call limit, loosened: on a loaded machine the instructor's solution
        # must not lose its mode to a student's 10 s limit (a mutant that hangs is stopped by the
        # runner's limit, from the baseline)
        p = self.problem
        limits = p.time_limit, p.check_budget
        p.time_limit, p.check_budget = limits[0] * CHECK_SLACK, limits[1] * CHECK_SLACK
        try:
            with quiet():
                p.check(fn, hidden=self.hidden)
        except Exception as exc:  # noqa: BLE001
            return Verdict(True, first_line(exc))
        finally:
            p.time_limit, p.check_budget = limits
        return Verdict(False)

    def judge(self, outputs: Verdict) -> Verdict:
        return outputs

    def restore(self) -> None:
        pass


# -- one mutant, one problem -----------------------------------------------------------------------

@dataclass
class MutantResult:
    problem: str
    mode: str  # "reference" or "solution"
    function: str
    file: str
    line: int
    operator: str
    original: str
    mutated: str
    key: str
    status: str  # killed | survived | timeout | equivalent | listed-but-killed
    how: str = ""  # what killed it, or why it is equivalent
    visible: str | None = None  # for hidden survivors: "killed" or "survived" by the visible cases
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


@contextlib.contextmanager
def _fresh_caches(subjects: list[Subject]) -> Iterator[None]:
    """lru caches of the reach emptied before and after: a cached result must not hide (or keep) a
    mutant."""
    caches = [s.original for s in subjects if hasattr(s.original, "cache_clear")]
    for c in caches:
        c.cache_clear()
    try:
        yield
    finally:
        for c in caches:
            c.cache_clear()


def evaluate(subject: Subject, mutant: Mutant, judge: Any, root: Any, reach: Reach,
             limit_s: float) -> Verdict:
    """Swap the mutant in, run what the judge runs, swap it out, judge the outputs."""
    try:
        obj = subject.compile(mutant)
    except Exception as exc:  # noqa: BLE001 - e.g. a mutated decorator argument
        return Verdict(True, f"the mutant does not load: {first_line(exc)}")
    target = obj if subject.original is root else root
    try:
        with _fresh_caches(reach.subjects), subject.installed(obj), quiet(), time_limit(limit_s):
            outputs = judge.outputs(target)
    except MutantTimeout as exc:
        judge.restore()
        return Verdict(True, str(exc), timeout=True)
    verdict = judge.judge(outputs)
    judge.restore()
    return verdict


@dataclass
class Mode:
    """One way of mutating a problem: the subjects, the root object and the judges."""

    name: str  # "reference" or "solution"
    reach: Reach
    root: Any
    hidden: Any  # a judge
    make_visible: Callable[[], Any]
    _visible: Any = None

    @property
    def visible(self) -> Any:
        if self._visible is None:
            self._visible = self.make_visible()
        return self._visible


@dataclass
class ProblemRun:
    problem: str
    modes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    broken: int = 0  # candidate mutants that did not compile
    baseline_s: dict[str, float] = field(default_factory=dict)
    results: list[MutantResult] = field(default_factory=list)


def modes_for(
    problem: Problem,
    lab_module: types.ModuleType,
    book: SolutionBook | None,
    solutions: str,
    include_course: bool,
    notes: list[str],
) -> list[Mode]:
    """Reference mode where the reference is answer-shaped. Solution mode (``solutions == "auto"``)
    where only it can see what the hidden test checks: a kernel answer, a reference that is not
    answer-shaped or has nothing to mutate (a lookup), a Problem with an ``after`` check (structure,
    tiling, instrumentation: it runs on the answer, never on the reference); for every problem with
    ``solutions == "all"``."""
    modes = []
    reach = reference_subjects(problem, lab_module, include_course)
    notes += [f"reference: {s}" for s in reach.skipped]
    reference_ok = False
    if reach.subjects and not any(mutants(s.source)[0] for s in reach.subjects):
        notes.append("the reference has nothing to mutate (a lookup or a one-line delegation)")
    elif reach.subjects:
        try:
            hidden = ReferenceJudge(problem, hidden=True)
            modes.append(Mode("reference", reach, problem.reference, hidden,
                              lambda: ReferenceJudge(problem, hidden=False)))
            reference_ok = True
        except NotAnswerShaped as exc:
            notes.append(f"reference mode impossible, the reference is not answer-shaped: {exc}")
    kernel = book is not None and book.is_kernel(problem.name)
    checked_after = problem.after is not None
    want = solutions == "all" or (
        solutions == "auto" and (kernel or not reference_ok or checked_after)
    )
    if want and book is not None and book.answer(problem.name) is not None:
        answer = book.answer(problem.name)
        sreach = book.subjects(problem.name)
        notes += [f"solution: {s}" for s in sreach.skipped]
        try:
            hidden = SolutionJudge(problem, True, answer)
            modes.append(
                Mode(
                    "solution",
                    sreach,
                    answer,
                    hidden,
                    lambda: SolutionJudge(problem, False, answer),
                )
            )
        except NotAnswerShaped as exc:
            notes.append(str(exc))
    elif want:
        notes.append("no solution cell found for solution mode")
    return modes


def _lists_any(problem: Problem, lab: str, lab_module: types.ModuleType, book: SolutionBook | None,
               equivalents: Equivalents, include_course: bool) -> bool:
    """Whether any mutant of what this problem's modes could mutate is listed as equivalent (made,
    not run)."""
    if not any(e.lab == lab and e.problem in (None, problem.name) for e in equivalents.entries):
        return False
    reaches = [reference_subjects(problem, lab_module, include_course)]
    if book is not None and book.answer(problem.name) is not None:
        reaches.append(book.subjects(problem.name))
    return any(
        any(e.matches(lab, problem.name, m) for e in equivalents.entries)
        for reach in reaches
        for subject in reach.subjects
        for m in mutants(subject.source)[0]
    )


def _visible_verdict(subject: Subject, mutant: Mutant, mode: Mode) -> str:
    try:
        judge = mode.visible
    except NotAnswerShaped as exc:
        return f"n/a ({exc})"
    seen = evaluate(
        subject,
        mutant,
        judge,
        mode.root,
        mode.reach,
        max(MIN_LIMIT_S, LIMIT_FACTOR * judge.baseline_s),
    )
    return "killed" if seen.killed else "survived"


def run_problem(
    problem: Problem,
    lab: str,
    lab_module: types.ModuleType,
    book: SolutionBook | None,
    equivalents: Equivalents,
    solutions: str = "auto",
    include_course: bool = False,
    skip: set[str] = frozenset(),
    on_start: Callable[[str], None] | None = None,
    on_result: Callable[[MutantResult], None] | None = None,
    listed_only: bool = False,
) -> ProblemRun:
    """Judge every mutant of the problem's reference (or, ``listed_only``, only those listed as
    equivalent: the cheap check that the equivalents file is in step, which CI runs; the full run is
    the benchmark's)."""
    run = ProblemRun(problem.name)
    if listed_only and not _lists_any(problem, lab, lab_module, book, equivalents, include_course):
        return run  # nothing of this problem is listed: no baseline to pay for
    for mode in modes_for(problem, lab_module, book, solutions, include_course, run.notes):
        run.modes.append(mode.name)
        run.baseline_s[mode.name] = mode.hidden.baseline_s
        limit = max(MIN_LIMIT_S, LIMIT_FACTOR * mode.hidden.baseline_s)
        for subject in mode.reach.subjects:
            made, broken = mutants(subject.source)
            run.broken += broken
            for mutant in made:
                key = f"{problem.name}:{mode.name}:{mutant.key}"
                if key in skip or (
                    listed_only and equivalents.find(lab, problem.name, mutant) is None
                ):
                    continue
                if on_start:
                    on_start(key)
                t0 = time.perf_counter()
                verdict = evaluate(subject, mutant, mode.hidden, mode.root, mode.reach, limit)
                result = MutantResult(
                    problem.name,
                    mode.name,
                    mutant.function,
                    subject.source.filename,
                    mutant.line,
                    mutant.operator,
                    mutant.original,
                    mutant.mutated,
                    key,
                    "timeout" if verdict.timeout else "killed" if verdict.killed else "survived",
                    verdict.how,
                )
                if not verdict.killed:
                    result.visible = _visible_verdict(subject, mutant, mode)
                entry = equivalents.find(lab, problem.name, mutant)
                if entry is not None:
                    if result.status == "survived":
                        result.status, result.how = "equivalent", entry.reason
                    # right but slow (a search from a worse start): not a kill
                    elif result.status == "timeout":
                        result.status = "equivalent"
                        result.how = f"{entry.reason} (here it also ran slowly: {result.how})"
                    else:
                        result.status = "listed-but-killed"
                        result.how = f"listed as equivalent, but {result.how}"
                result.seconds = time.perf_counter() - t0
                run.results.append(result)
                if on_result:
                    on_result(result)
    return run
