"""The one exercise shape of the course (after GPU-Puzzles' ``CudaProblem(...).show() / .check()``).

A :class:`Problem` holds an exercise's spec, a reference implementation, fixed *visible* cases and a
generator of randomized *hidden* cases. Notebooks use it in three places::

    P = lab.problems["gemm_k"]
    P.show()                         # the spec and a worked example, before the student writes code
    P.check(gemm_k)                  # visible test cell: fixed cases, clear messages
    P.check(gemm_k, hidden=True)     # hidden test cell: randomized cases, seeded (per student
                                     # when graded)

Hidden cases are drawn from a seeded generator, so grading the same submission twice gives the same
grade. The grading command seeds each student's hidden cases from the instructor's secret
(``grader.pipeline.secret``): they differ between students; elsewhere (Validate, CI) the seed is a
hash of the problem's name.

What the student sees (every ``check``, a subclass's own included, runs inside
:func:`_feedback_frame`):

- a failure is its message, not a traceback through the grader (:mod:`grader.feedback`); when the
  student's own code raised, their frames follow;
- each call of the student's function has a time limit (:attr:`Problem.time_limit`, more for a case
  whose reference is slow), and all calls of one check share :attr:`Problem.check_budget`, below
  nbgrader's 60 s per cell: a loop that never ends fails with "did not return within N s on case …"
  (:mod:`grader.timelimit`);
- a visible check that passes says that the hidden tests, with other inputs, run when the lab is
  graded.

While the student's function runs, the answers are *locked* (:meth:`Problem.locked`): every
reference implementation of the lab, and the library calls listed in ``forbid``, are swapped for
tripwires that fail the check with a clear message; a function that captured one beforehand (a
global alias, a default argument, a closure) is refused too. The same lock guards the grader's
out-of-process re-check (``grader.grade``). A lock is a last resort, not the design: no installed
course code computes an exercise's answer (grader/DESIGN.md, "No exercise is answered by the course
itself"); ``forbid`` says why a library call is not the exercise (lab 2's "by hand" backward pass
refuses JAX's autodiff).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import inspect
import sys
import textwrap
import _thread
import threading
import time
import types
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from gpucourse.simt import code_names

from . import feedback
from .case import Case, _short  # noqa: F401  (Case and _short are part of this module's API)
from .checks import CheckFailure
from .timelimit import CallTimeout, time_limit

HIDDEN_NOTE = (
    "  These were the visible cases only: hidden tests with other inputs run when your lab is"
    " graded."
)
# a call may take this many times as long as the reference on the same case (if over the floor)
REFERENCE_FACTOR = 25

# monotonic deadline of the check being run (None outside a check): every call inside it shares one
# budget
_CHECK_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "check_deadline", default=None
)


class CallTimedOut(CheckFailure):
    """The student's function did not return within its time limit (the message names the case)."""


def _feedback_frame(check: Callable[..., None]) -> Callable[..., None]:
    """Wraps every ``check`` (Problem's and each subclass's own): one time budget for all its calls,
    a readable NotImplementedError, and — for a visible check that passed — the reminder that hidden
    tests run at grading. A check called from inside another (``super().check``) shares the outer
    one's budget and note."""

    @functools.wraps(check)
    def framed(self: Problem, fn: Any, *args: Any, **kwargs: Any) -> None:
        hidden = bool(kwargs.get("hidden", args[0] if args else False))
        outer = _CHECK_DEADLINE.get() is None
        token = _CHECK_DEADLINE.set(time.monotonic() + self.check_budget) if outer else None
        try:
            check(self, fn, *args, **kwargs)
        except NotImplementedError as exc:
            feedback.attach(exc, feedback.render_not_implemented(exc, self.name))
            raise
        finally:
            if token is not None:
                _CHECK_DEADLINE.reset(token)
        if outer and not hidden:
            print(HIDDEN_NOTE)

    framed.__wrapped_check__ = check  # type: ignore[attr-defined]
    return framed


# compare(what, got, expected, case) raises CheckFailure when `got` is wrong
Compare = Callable[[str, Any, Any, Case], None]


def _example(v: Any) -> str:
    """A value in show()'s example: a small array written out (a student checks a hand trace
    against it) when it fits in 72 characters, a larger one by shape and dtype."""
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.generic) \
            and 0 < v.size <= 16:
        text = f"{np.asarray(v).tolist()} ({v.dtype})"
        return text if len(text) <= 72 else _short(v)
    if isinstance(v, tuple):
        inner = ", ".join(_example(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return _short(v)


@contextlib.contextmanager
def _arguments_restored(case: Case) -> Iterator[None]:
    """A case's NumPy arguments put back after the student's call and its judgement: a function
    that writes into its inputs is judged on what it did, but the case (a visible case is shared by
    every check of the session) is the same for the next check."""
    saved = [(a, a.copy()) for a in (*case.args, *case.kwargs.values())
             if type(a) is np.ndarray and a.flags.writeable]
    try:
        yield
    finally:
        for arg, before in saved:
            np.copyto(arg, before)


@dataclass
class Problem:
    name: str  # the function the student writes
    spec: str  # what the function must do (shown by .show())
    # the answer side (grader/DESIGN.md): a lab split into exercise and answer sides leaves these
    # None here and grader.answers.<lab> holds them (bound on first use where it is installed: the
    # instructor's checkout)
    reference: Callable[..., Any] | None = None
    visible: list[Case] = field(default_factory=list)
    hidden: Callable[[np.random.Generator], list[Case]] | None = None
    compare: Compare = None  # type: ignore[assignment]
    # extra checks (e.g. instrumentation)
    after: Callable[[Callable[..., Any], bool], str] | None = None
    # dotted names of course helpers that would do this exercise for the student
    # ("gpucourse.occupancy.occupancy", "gpucourse.interconnect.Torus.hops"): off limits while the
    # student's function runs
    forbid: tuple[str, ...] = ()
    # seconds one call of the student's function may take (more when the reference itself is slow on
    # that case: REFERENCE_FACTOR × its time); a call past it fails with "did not return within N s
    # on case …"
    time_limit: float = 10.0
    # seconds all calls of one check may take together: nbgrader stops a test cell at 60 s with a
    # bare CellTimeoutError; this budget ends it first, with a message
    check_budget: float = 50.0
    # how .show() displays its example's expected value (e.g. cast to the inputs' dtype where the
    # reference computes in float64 for an exact truth); the checks still judge against the
    # reference's own value
    shown: Callable[[Any, Case], Any] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "check" in cls.__dict__ and not hasattr(cls.__dict__["check"], "__wrapped_check__"):
            cls.check = _feedback_frame(cls.__dict__["check"])  # type: ignore[method-assign]

    def seed(self) -> int:
        """The grading command's per-student seed (grader.seeding) while a submission is graded,
        else a hash of the problem's name (Validate, CI: the same for everyone)."""
        from .seeding import installed_seed

        seed = installed_seed(self.name)
        return zlib.crc32(self.name.encode()) if seed is None else seed

    def hidden_cases(self, seed: int | None = None) -> list[Case]:
        if not self.has_answers():
            raise LookupError(
                f"{self.name}: the hidden cases are generated on the instructor's side only"
            )
        return self.hidden(np.random.default_rng(self.seed() if seed is None else seed))

    def has_answers(self) -> bool:
        """Whether the answer side (reference, hidden-case generator) is here: in the lab module
        itself (a lab not split yet) or bound from ``grader.answers.<lab>`` (the instructor's
        checkout). False in the student edition and in every grading sandbox (grader/sandbox.py
        hides ``grader/answers``)."""
        if self.reference is None or self.hidden is None:
            answers = _answer_module(_lab_of(self))
            if answers is not None and self.name in answers.ANSWERS:
                self.reference, self.hidden = answers.ANSWERS[self.name]
        return self.reference is not None and self.hidden is not None

    def visible_expected(self) -> list[Any]:
        """The expected value of every visible case: the reference's where it is here, else the data
        the student edition ships (``grader/labs/<lab>.expected.json``, written by ``python -m
        grader expected``)."""
        if self.has_answers():
            return [self.reference(*c.args, **c.kwargs) for c in self.visible]
        return _expected_data(_lab_of(self))[self.name]

    def show(self) -> None:
        print(f"Exercise: {self.name}\n")
        print(textwrap.dedent(self.spec).strip())
        case, value = self.visible[0], self.visible_expected()[0]
        value = value if self.shown is None else self.shown(value, case)
        args = [_example(a) for a in case.args]
        args += [f"{k}={_example(v)}" for k, v in case.kwargs.items()]
        print(f"\nExample: {self.name}({', '.join(args)})  ->  {_example(value)}")

    @_feedback_frame
    def check(self, fn: Callable[..., Any], hidden: bool = False) -> None:
        """The one check loop of every exercise: each case observed (:meth:`observed`: the student's
        function called, answers locked, time-limited) and judged (:meth:`judged`) against the
        reference's answer or, where the answer side is absent, the visible cases' stored expected
        values. A hidden check without the answer side observes only (:meth:`_observe_hidden`)."""
        self.accepts(fn)
        answers = self.has_answers()
        if hidden and not answers:
            self._observe_hidden(fn)
            return
        cases = self.hidden_cases() if hidden else self.visible
        stored = None if answers else self.visible_expected()
        t0, notes = time.perf_counter(), []
        for k, case in enumerate(cases):
            start = time.perf_counter()
            expected = self.reference(*case.args, **case.kwargs) if stored is None else stored[k]
            limit = max(self.time_limit, REFERENCE_FACTOR * (time.perf_counter() - start))
            with _arguments_restored(case):
                notes.append(self.judged(self.observed(fn, case, limit), expected, case))
        seconds = time.perf_counter() - t0
        extra = self._after(fn, hidden) if self.after else ""
        kind = "hidden" if hidden else "visible"
        print(f"✓ {self.name}: {len(cases)} {kind} case{'s' * (len(cases) != 1)} passed"
              f"{self.passed_note(notes, seconds)}{extra}")

    # -- the check's steps, which an observed problem (ObservedProblem) fills in its own way -------

    def accepts(self, fn: Any) -> None:
        """Raise CheckFailure unless ``fn`` is the kind of answer this exercise takes (here: a
        function)."""
        if not callable(fn):
            raise CheckFailure(f"{self.name}: expected a function, got {type(fn).__name__}")

    def what(self, case: Case) -> str:
        """``case`` as the messages name it: ``name(<float32 array (3, 4)>, 'sort')``."""
        return case.call_text(self.name)

    def observed(
        self, fn: Callable[..., Any], case: Case, limit: float | None = None, to_judge: bool = True
    ) -> Any:
        """What the student's function gives on ``case`` (answers locked, time-limited;
        :meth:`_observation`). An error it raises becomes a CheckFailure that names the case.
        ``to_judge=False``: only whether it runs matters (a grading sandbox's hidden cells; the
        grader judges the re-check's own observations)."""
        try:
            return self._observation(fn, case, limit, to_judge)
        except (NotImplementedError, CheckFailure):
            raise
        except Exception as exc:
            raise CheckFailure(f"{self.what(case)} raised {exc.__class__.__name__}: {exc}"
                               f"{_tracer_hint(exc, fn)}") from exc

    def _observation(
        self, fn: Callable[..., Any], case: Case, limit: float | None, to_judge: bool = True
    ) -> Any:
        """Here: the function's return value."""
        return self.call(fn, case, limit)

    def judged(self, got: Any, expected: Any, case: Case) -> str | None:
        """Raise CheckFailure unless ``got`` (:meth:`observed`'s) is right for ``case``: here
        :meth:`compared`. Returns a note on the case for the passing line, or None."""
        self.compared(got, expected, case)
        return None

    def compared(self, got: Any, expected: Any, case: Case) -> None:
        """``compare`` on the student's answer ``got``; a comparison that chokes on a strange answer
        is a wrong answer (CheckFailure), not an error of the checker."""
        what = self.what(case)
        try:
            self.compare(what, got, expected, case)
        except CheckFailure:
            raise
        except Exception as exc:
            raise CheckFailure(f"{what}: your answer could not be compared with the expected "
                               f"{_short(expected)} ({exc.__class__.__name__}: {exc}); "
                               f"you returned {type(got).__name__} {_short(got)}") from None

    def ran(self, seen: Any) -> None:
        """Raise CheckFailure if an observation made without judging (a grading sandbox's hidden
        cells) shows that the student's function could not run. Here an error has already been
        raised by :meth:`observed`."""

    def passed_note(self, notes: list[str | None], seconds: float) -> str:
        """What the passing line adds after "N cases passed" (the notes :meth:`judged` returned, the
        seconds the cases took)."""
        return ""

    def _observe_hidden(self, fn: Callable[..., Any]) -> None:
        """A hidden check where the answer side is absent. In a grading sandbox: observe ``fn`` on
        this student's hidden cases, which the grader wrote as plain data (:mod:`grader.seeding`),
        and judge nothing — the grader judges the re-check's observations in its own process.
        Elsewhere (a student's Validate): say so."""
        from .seeding import installed_cases

        cases = installed_cases(self.name)
        if cases is None:
            print(
                f"{self.name}: the hidden tests run when your lab is graded (their cases and"
                " answers stay with your instructor)"
            )
            return
        for case in cases:
            self.ran(self.observed(fn, case, to_judge=False))
        extra = self._after(fn, True) if self.after else ""
        print(
            f"{self.name}: ran on {len(cases)} hidden case{'s' * (len(cases) != 1)}; they are"
            f" judged by the grader{extra}"
        )

    def _after(self, fn: Callable[..., Any], hidden: bool) -> str:
        """The extra check (e.g. instrumentation), which may call ``fn`` again: within what is left
        of the budget."""
        left = _budget_left()
        try:
            with time_limit(left):
                return self.after(fn, hidden)
        except CallTimeout as stop:
            raise CallTimedOut(
                f"{self.name}: the extra check, which calls your function on more inputs, did not "
                f"finish within {left:.0f} s; is there an input where your loop never ends?"
            ) from stop

    # -- the lock: no reference answers or exercise-solving helpers while the student's function run

    def call(self, fn: Callable[..., Any], case: Case, limit: float | None = None) -> Any:
        """``fn(*case.args, **case.kwargs)`` with the answers locked (see :meth:`locked`) and a time
        limit: ``limit`` seconds (default :attr:`time_limit`), less if the check's budget runs out
        first. Raises :class:`CallTimedOut` when the call is stopped."""
        own = self.time_limit if limit is None else limit
        left = _budget_left()
        seconds = min(own, left)
        with self.locked(fn):
            try:
                # inside the lock: the answers are restored after the timer is off
                with time_limit(seconds):
                    return fn(*case.args, **case.kwargs)
            except CallTimeout as stop:
                what = case.call_text(self.name)
                if left < own:
                    msg = (
                        f"{self.name} was stopped on case {what}: this check's calls took more than"
                        f" {self.check_budget:g} s in all (a graded cell may run at most 60 s); is"
                        " your function much slower than it needs to be, or is there an input"
                        " where your loop never ends?"
                    )
                else:
                    msg = (
                        f"{self.name} did not return within {seconds:.3g} s on case {what}; does"
                        " its work grow much faster with the input than it needs to, or is there"
                        " an input where your loop never ends?"
                    )
                raise CallTimedOut(msg) from stop

    def answer_sites(self) -> list[tuple[Any, str, Any, str]]:
        """(owner, attribute, object, label) for every place an answer lives: each reference of this
        problem's lab (the Problem's field and the lab module's names for it) and each ``forbid``
        helper. Computed once, the first time (the grader primes it before any student code
        runs)."""
        cached = self.__dict__.get("_answer_sites")
        if cached is not None:
            return cached
        lab = _lab_of(self)
        problems = [
            p for p in list(getattr(lab, "problems", {}).values()) or [self] if p.has_answers()
        ]
        refs = {id(p.reference): p for p in problems}
        sites: list[tuple[Any, str, Any, str]] = [
            (p, "reference", p.reference, f"the reference answer of {p.name}") for p in problems
        ]
        for module in (lab, _answer_module(lab)):
            if module is None:
                continue
            short = module.__name__.rsplit(".", 1)[-1]
            for name, value in vars(module).items():
                if id(value) in refs and not name.startswith("__"):
                    sites.append(
                        (
                            module,
                            name,
                            value,
                            f"{short}.{name} (the reference answer of {refs[id(value)].name})",
                        )
                    )
        for dotted in self.forbid:
            owner, attr = _resolve_owner(dotted)
            sites.append((owner, attr, getattr(owner, attr), dotted))
        self.__dict__["_answer_sites"] = sites
        return sites

    @contextlib.contextmanager
    def locked(self, fn: Callable[..., Any] | None = None) -> Iterator[None]:
        """While the block runs, every answer site holds a tripwire; ``fn`` must not have captured
        an answer."""
        sites = self.answer_sites()
        if fn is not None:
            held = _captured(fn, {id(obj): label for _, _, obj, label in sites})
            if held:
                raise CheckFailure(
                    f"{self.name} keeps a reference to {held}, which does this exercise for you: "
                    "write the computation yourself"
                )
        saved, wires = [], []
        watch = _Watch(_library_codes(sites))
        if watch.codes:
            _refuse_helpers(self.name)
        try:
            for owner, attr, obj, label in sites:
                saved.append(
                    (
                        owner,
                        attr,
                        owner.__dict__.get(attr, _MISSING) if hasattr(owner, "__dict__") else obj,
                    )
                )
                wires.append((owner, attr, label, _tripwire(self.name, label, obj)))
                setattr(owner, attr, wires[-1][3])
            with watch:
                yield
            # a lock switched off while the student's function ran (an original put back from where
            # the lock keeps it): the call's result does not count
            undone = [
                label
                for owner, attr, label, wire in wires
                if getattr(owner, attr, None) is not wire
            ]
            undone += [label for label in watch.seen if label == _Watch.ITSELF]
            if _Watch.THREAD in watch.seen:
                raise CheckFailure(
                    f"{self.name} started a thread the grader's call watch cannot follow "
                    "(_thread.start_new_thread): write the computation yourself, in one thread"
                )
            called = [label for label in watch.seen if label not in (_Watch.ITSELF, _Watch.THREAD)]
            if called:  # an original reached another way than through its name (kept, or put back)
                raise CheckFailure(
                    f"{self.name} calls {called[0]}, which does this exercise for you: write the "
                    "computation yourself"
                )
            if undone:
                shown = ", ".join(undone[:2]) + (
                    f" and {len(undone) - 2} more" if len(undone) > 2 else ""
                )
                raise CheckFailure(
                    f"{self.name} unlocked {shown} while it ran, which the exercise rules out:"
                    " write the computation yourself"
                )
        finally:
            for owner, attr, old in reversed(saved):
                if old is _MISSING:
                    with contextlib.suppress(AttributeError):
                        delattr(owner, attr)
                else:
                    setattr(owner, attr, old)


@dataclass
class ObservedProblem(Problem):
    """A Problem judged from an *observation* (grader/DESIGN.md, "Observe here, judge there"):
    :meth:`observe` runs where the student's code runs and returns plain data (outputs, counters, a
    compiled program's structure, an executor's report); :meth:`judge` decides from that data and
    the reference's answer — in the student's kernel for visible cases, and in the grader's own
    process for every case of a graded submission, where the observations come back from the
    sandboxed re-check (grader.pipeline.recheck / verdict). Subclasses write the two (and may
    override :meth:`accepts`, :meth:`what`, :meth:`passed_note`); the check loop is Problem's.

    ``observe(fn, case, limit=None)`` may raise (the error of the student's function, said by
    :meth:`observed`) or return a dict whose ``"error"`` says why there is nothing to judge
    (:meth:`ran` raises it)."""

    def observe(self, fn: Callable[..., Any], case: Case, limit: float | None = None) -> Any:
        raise TypeError(f"{type(self).__name__} must define observe(fn, case, limit=None)")

    def judge(self, seen: Any, expected: Any, case: Case) -> str | None:
        raise TypeError(f"{type(self).__name__} must define judge(seen, expected, case)")

    def _observation(
        self, fn: Callable[..., Any], case: Case, limit: float | None, to_judge: bool = True
    ) -> Any:
        return self.observe(fn, case, limit)

    def judged(self, seen: Any, expected: Any, case: Case) -> str | None:
        return self.judge(seen, expected, case)

    def ran(self, seen: Any) -> None:
        if isinstance(seen, dict) and seen.get("error"):
            raise CheckFailure(str(seen["error"]))


_MISSING = object()


def _budget_left() -> float:
    """Seconds left in the budget of the check being run (inf outside a check, e.g. in the grader's
    worker)."""
    deadline = _CHECK_DEADLINE.get()
    return float("inf") if deadline is None else max(deadline - time.monotonic(), 1e-3)


def _lab_of(problem: Problem) -> types.ModuleType | None:
    """The grader.labs module whose ``problems`` holds this Problem (None for a Problem made
    elsewhere)."""
    for name, mod in list(sys.modules.items()):
        if name.startswith("grader.labs.") and any(
            p is problem for p in getattr(mod, "problems", {}).values()
        ):
            return mod
    return None


def _answer_module(lab: types.ModuleType | None) -> types.ModuleType | None:
    """``grader.answers.<lab>`` (references, hidden-case generators) where it is installed, else
    None."""
    if lab is None or not lab.__name__.startswith("grader.labs."):
        return None
    short = lab.__name__.rsplit(".", 1)[-1]
    # looked up as a file first: an empty grader/answers (a sandbox's) must not even become a
    # namespace package
    if not (Path(__file__).resolve().parent / "answers" / f"{short}.py").is_file():
        return None
    return importlib.import_module("grader.answers." + short)


def expected_path(lab: types.ModuleType) -> Path:
    """The visible cases' expected values of a split lab, as data:
    ``grader/labs/<lab>.expected.json``."""
    return Path(lab.__file__).with_suffix(".expected.json")


def _expected_data(lab: types.ModuleType | None) -> dict[str, list[Any]]:
    from .wire import decode

    if lab is None:
        raise LookupError("a Problem outside a lab module has no stored expected values")
    cached = lab.__dict__.get("_EXPECTED")
    if cached is None:
        import json

        cached = decode(json.loads(expected_path(lab).read_text(encoding="utf-8")))
        lab._EXPECTED = cached  # type: ignore[attr-defined]
    return cached


def _resolve_owner(dotted: str) -> tuple[Any, str]:
    """"pkg.mod.Class.attr" -> (pkg.mod.Class, "attr"): import the longest module prefix, walk the
    rest."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:-1]:
            obj = getattr(obj, part)
        if not hasattr(obj, parts[-1]):
            raise AttributeError(f"forbid: {dotted} does not exist")
        return obj, parts[-1]
    raise ImportError(f"forbid: cannot import any module of {dotted}")


def _library_codes(sites: list[tuple[Any, str, Any, str]]) -> dict[types.CodeType, str]:
    """{code object: label} of the library functions a lock forbids (``forbid``: jax.vjp and the
    internals it goes through), not the course's references: a call into one of them while the lock
    holds is seen by :class:`_Watch`, however the student reached the original (the seventh attack
    put the originals back inside the call)."""
    out = {}
    for owner, attr, obj, label in sites:
        if getattr(owner, "__name__", "").startswith("grader") or attr == "reference":
            continue
        # a table (JAX's per-primitive rules): each rule in it, however the table was reached (the
        # thirteenth attack copied the table before the lock and called its rules)
        entries = list(obj.values()) if isinstance(obj, dict) else [obj]
        for entry in entries:
            fn = inspect.unwrap(entry) if callable(entry) and not isinstance(entry, type) else None
            fn = getattr(fn, "func", fn)  # a functools.partial: the function it calls
            code = getattr(fn, "__code__", None)
            if isinstance(code, types.CodeType):
                out[code] = f"{label} ({getattr(fn, '__name__', 'a rule')})" if entry is not obj \
                    else label
    return out


# The re-check worker's own threads, noted before the first student cell runs
# (grader.pipeline.recheck_worker calls guard_threads()). A lock that rules out library code then
# refuses to start while a thread or a child process the student's cells started is alive: the call
# watch follows the checked thread and the threads started under the lock, and a helper started
# earlier could run a locked computation for the checked call (it put the originals back for the
# length of one count). None: not the re-check (a student's own kernel), no refusal.
_OWN_THREADS: frozenset[int] | None = None


def guard_threads() -> None:
    """Note the threads alive now as the grader's own: from now on a lock refuses to run beside any
    other."""
    global _OWN_THREADS
    _OWN_THREADS = frozenset(sys._current_frames())


def _time_limit_thread(ident: int) -> bool:
    """A grader time limit's watchdog (grader.timelimit), finishing after an earlier call."""
    from .timelimit import _ThreadLimit

    thread = threading._active.get(ident)  # type: ignore[attr-defined] - threading's own registry
    target = getattr(thread, "_target", None)
    return (
        type(thread) is threading.Thread
        and isinstance(getattr(target, "__self__", None), _ThreadLimit)
        and getattr(target, "__func__", None) is _ThreadLimit._watch
    )


def _child_processes() -> list[str]:
    """The process ids of this process's live children (Linux /proc; [] where it cannot tell)."""
    found = []
    for task in Path("/proc/self/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += task.read_text().split()
    return found


def _refuse_helpers(exercise: str) -> None:
    if _OWN_THREADS is None:
        return
    this_thread = threading.get_ident()
    strangers = [
        t
        for t in sys._current_frames()
        if t != this_thread and t not in _OWN_THREADS and not _time_limit_thread(t)
    ]
    if strangers:
        active = threading._active  # type: ignore[attr-defined]
        names = [getattr(active.get(t), "name", f"thread {t}") for t in strangers]
        raise CheckFailure(
            f"{exercise} is checked while {len(strangers)} thread{'s' * (len(strangers) != 1)} your"
            f" cells started still run{'s' * (len(strangers) == 1)} ({', '.join(names[:3])}): this"
            " exercise rules out library code, and its check runs your function with no helper"
            " beside it — end (join) your threads before the check"
        )
    children = _child_processes()
    if children:
        raise CheckFailure(
            f"{exercise} is checked while {len(children)} process{'es' * (len(children) != 1)} your"
            f" cells started still run{'s' * (len(children) == 1)}: this exercise rules out library"
            " code, and its check runs your function with no helper beside it — wait for your"
            " processes before the check"
        )


class _Watch:
    """While the lock holds, a profile hook (this thread, and threads started meanwhile) notes every
    call into a forbidden library function's code and every attempt to swap the hook itself: the
    lock's tripwires stop a call through the module's name, this stops a call through an original
    the student kept or put back. Inactive (no hook, no cost) when nothing is watched."""

    SWITCHES = (sys.setprofile, sys.settrace, threading.setprofile, threading.settrace)
    # a thread started without threading.Thread (which installs the watch's hook in it)
    RAW_THREADS = tuple(
        getattr(_thread, n)
        for n in ("start_new_thread", "start_joinable_thread", "start_new")
        if hasattr(_thread, n)
    )
    ITSELF, THREAD = "the grader's call watch", "a thread of its own"

    def __init__(self, codes: dict[types.CodeType, str]):
        self.codes, self.seen, self.closing = codes, [], False
        # one bound method: each `self._hook` would be a new object, never `is` the installed one
        self.hook = self._hook

    def _hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if self.closing:  # the watch's own sys.setprofile on the way out
            return
        if event == "call":
            label = self.codes.get(frame.f_code)
            if label is not None and label not in self.seen:
                self.seen.append(label)
        elif event == "c_call" and arg in self.SWITCHES and self.ITSELF not in self.seen:
            self.seen.append(self.ITSELF)
        elif (
            event == "c_call"
            and arg in self.RAW_THREADS
            and frame.f_code.co_filename != threading.__file__
            and self.THREAD not in self.seen
        ):
            self.seen.append(self.THREAD)

    def __enter__(self) -> "_Watch":
        if self.codes:
            self._before = (
                sys.getprofile(),
                threading.getprofile() if hasattr(threading, "getprofile") else None,
            )
            threading.setprofile(self.hook)
            sys.setprofile(self.hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.codes:
            mine = sys.getprofile() is self.hook
            self.closing = True
            sys.setprofile(self._before[0])
            threading.setprofile(self._before[1])
            if not mine and self.ITSELF not in self.seen:
                self.seen.append(self.ITSELF)


def _tripwire(exercise: str, label: str, original: Any) -> Callable[..., Any]:
    def tripwire(*args: Any, **kwargs: Any) -> Any:
        raise CheckFailure(f"{exercise} calls {label}, which does this exercise for you: "
                           "write the computation yourself")

    # a table (JAX's per-primitive derivative rules): any lookup trips
    if isinstance(original, dict):
        return _TableTripwire(tripwire)
    tripwire.__name__ = getattr(original, "__name__", "tripwire")
    tripwire.__doc__ = f"Locked while {exercise} is checked."
    return tripwire


class _TableTripwire(dict):
    """A locked table: reading it in any way raises what the tripwire raises."""

    def __init__(self, trip: Callable[..., Any]):
        super().__init__()
        self._trip = trip

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        return self._trip()

    __getitem__ = __contains__ = __iter__ = __len__ = get = keys = values = items = copy = _refuse


def _captured(
    fn: Any, answers: dict[int, str], depth: int = 0, seen: set[int] | None = None
) -> str | None:
    """The label of an answer that ``fn`` holds directly: through a global name its code uses, a
    default argument or a closure cell — following the student's own helper functions a few levels
    deep."""
    seen = set() if seen is None else seen
    fn = _py_func(fn)  # a numba dispatcher: its Python function
    if id(fn) in seen or depth > 4 or not isinstance(fn, types.FunctionType):
        return None
    seen.add(id(fn))
    values = list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
    for cell in fn.__closure__ or ():
        with contextlib.suppress(ValueError):  # an empty cell
            values.append(cell.cell_contents)
    values += [fn.__globals__[n] for n in code_names(fn.__code__) if n in fn.__globals__]
    for v in values:
        if id(v) in answers:
            return answers[id(v)]
        if isinstance(v, types.MethodType) and id(v.__func__) in answers:  # a bound method
            return answers[id(v.__func__)]
    for v in values:
        inner = _py_func(v)
        if isinstance(inner, types.FunctionType):
            found = _captured(inner, answers, depth + 1, seen)
            if found:
                return found
    return None


def _py_func(v: Any) -> Any:
    """A function itself, or the Python function behind a numba dispatcher or an executor kernel
    (gpucourse.simt); anything else unchanged (an object whose attribute lookup misbehaves is left
    alone)."""
    if isinstance(v, types.FunctionType):
        return v
    if not (getattr(type(v), "__module__", "") or "").startswith(("numba", "gpucourse.simt")):
        return v
    try:
        inner = v.py_func
    except Exception:  # noqa: BLE001 - never let an odd object break the check
        return v
    return inner if isinstance(inner, types.FunctionType) else v


def _tracer_hint(exc: BaseException, fn: Any) -> str:
    """For NumPy called on a JAX tracer (inside jax.jit): the student's line that did it, and
    why."""
    if type(exc).__name__ not in ("TracerArrayConversionError", "ConcretizationTypeError"):
        return ""
    import linecache

    code = getattr(fn, "__code__", None)
    where, tb = "", exc.__traceback__
    while tb is not None:  # the deepest frame in the student's cell
        if code is not None and tb.tb_frame.f_code.co_filename == code.co_filename:
            text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            where = f" at line {tb.tb_lineno} of your cell" + (f" (`{text}`)" if text else "")
        tb = tb.tb_next
    return (
        f". Hint: NumPy was called on a traced array{where}: inside jax.jit the arguments are"
        " tracers, placeholders without values, which NumPy cannot read — use jax.numpy (jnp.tanh,"
        " jnp.exp, ...) for every operation on them"
    )
