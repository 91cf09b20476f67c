"""The one exercise shape of the course (after GPU-Puzzles' ``CudaProblem(...).show() / .check()``).

A :class:`Problem` holds an exercise's spec, a reference implementation, fixed *visible* cases and a generator
of randomized *hidden* cases. Notebooks use it in three places::

    P = lab.problems["gemm_cost"]
    P.show()                    # the spec and a worked example, before the student writes code
    P.check(gemm_cost)          # visible test cell: fixed cases, clear messages
    P.check(gemm_cost, hidden=True)   # hidden test cell: randomized cases, seeded (per student when graded)

Hidden cases are drawn from a seeded generator, so grading the same submission twice gives the same grade. The
grading command seeds each student's hidden cases from the instructor's secret (``grader.pipeline.secret``):
they differ between students; elsewhere (Validate, CI) the seed is a hash of the problem's name.

While the student's function runs, the answers are *locked* (:meth:`Problem.locked`): every reference
implementation of the lab, and the course helpers listed in ``forbid`` (the ones that would do the exercise, e.g.
``gpucourse.occupancy.occupancy`` for the occupancy calculator), are swapped for tripwires that fail the check
with a clear message; a function that captured one beforehand (a global alias, a default argument, a closure) is
refused too. The same lock guards the grader's out-of-process re-check (``grader.grade``).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import textwrap
import types
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from gpucourse.simt import code_names

from .checks import CheckFailure, show


@dataclass(frozen=True)
class Case:
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def call_text(self, name: str) -> str:
        parts = [_short(a) for a in self.args] + [f"{k}={_short(v)}" for k, v in self.kwargs.items()]
        return f"{name}({', '.join(parts)})"


def _short(v: Any) -> str:
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"<{v.dtype} array {tuple(v.shape)}>"
    if isinstance(v, str):
        return repr(v)
    return show(v)


# compare(what, got, expected, case) raises CheckFailure when `got` is wrong
Compare = Callable[[str, Any, Any, Case], None]


@dataclass
class Problem:
    name: str  # the function the student writes
    spec: str  # what the function must do (shown by .show())
    reference: Callable[..., Any]
    visible: list[Case]
    hidden: Callable[[np.random.Generator], list[Case]]
    compare: Compare
    after: Callable[[Callable[..., Any], bool], str] | None = None  # extra checks (e.g. instrumentation)
    # dotted names of course helpers that would do this exercise for the student ("gpucourse.occupancy.occupancy",
    # "gpucourse.interconnect.Torus.hops"): off limits while the student's function runs
    forbid: tuple[str, ...] = ()

    def seed(self) -> int:
        """The grading command's per-student seed (grader.seeding) while a submission is graded, else a hash of
        the problem's name (Validate, CI: the same for everyone)."""
        from .seeding import installed_seed

        seed = installed_seed(self.name)
        return zlib.crc32(self.name.encode()) if seed is None else seed

    def hidden_cases(self, seed: int | None = None) -> list[Case]:
        return self.hidden(np.random.default_rng(self.seed() if seed is None else seed))

    def show(self) -> None:
        print(f"Exercise: {self.name}\n")
        print(textwrap.dedent(self.spec).strip())
        case = self.visible[0]
        print(f"\nExample: {case.call_text(self.name)}  ->  {_short(self.reference(*case.args, **case.kwargs))}")

    def check(self, fn: Callable[..., Any], hidden: bool = False) -> None:
        if not callable(fn):
            raise CheckFailure(f"{self.name}: expected a function, got {type(fn).__name__}")
        cases = self.hidden_cases() if hidden else self.visible
        for case in cases:
            what = case.call_text(self.name)
            expected = self.reference(*case.args, **case.kwargs)
            try:
                got = self.call(fn, case)
            except (NotImplementedError, CheckFailure):
                raise
            except Exception as exc:
                raise CheckFailure(f"{what} raised {exc.__class__.__name__}: {exc}") from exc
            self.compare(what, got, expected, case)
        extra = self.after(fn, hidden) if self.after else ""
        kind = "hidden" if hidden else "visible"
        print(f"✓ {self.name}: {len(cases)} {kind} case{'s' * (len(cases) != 1)} passed{extra}")

    # -- the lock: no reference answers or exercise-solving helpers while the student's function runs ----------

    def call(self, fn: Callable[..., Any], case: Case) -> Any:
        """``fn(*case.args, **case.kwargs)`` with the answers locked (see :meth:`locked`)."""
        with self.locked(fn):
            return fn(*case.args, **case.kwargs)

    def answer_sites(self) -> list[tuple[Any, str, Any, str]]:
        """(owner, attribute, object, label) for every place an answer lives: each reference of this problem's lab
        (the Problem's field and the lab module's names for it) and each ``forbid`` helper. Computed once, the
        first time (the grader primes it before any student code runs)."""
        cached = self.__dict__.get("_answer_sites")
        if cached is not None:
            return cached
        lab = _lab_of(self)
        problems = list(getattr(lab, "problems", {}).values()) or [self]
        refs = {id(p.reference): p for p in problems}
        sites: list[tuple[Any, str, Any, str]] = [(p, "reference", p.reference, f"the reference answer of {p.name}")
                                                   for p in problems]
        if lab is not None:
            short = lab.__name__.rsplit(".", 1)[-1]
            for name, value in vars(lab).items():
                if id(value) in refs and not name.startswith("__"):
                    sites.append((lab, name, value, f"{short}.{name} (the reference answer of {refs[id(value)].name})"))
        for dotted in self.forbid:
            owner, attr = _resolve_owner(dotted)
            sites.append((owner, attr, getattr(owner, attr), dotted))
        self.__dict__["_answer_sites"] = sites
        return sites

    @contextlib.contextmanager
    def locked(self, fn: Callable[..., Any] | None = None) -> Iterator[None]:
        """While the block runs, every answer site holds a tripwire; ``fn`` must not have captured an answer."""
        sites = self.answer_sites()
        if fn is not None:
            held = _captured(fn, {id(obj): label for _, _, obj, label in sites})
            if held:
                raise CheckFailure(f"{self.name} keeps a reference to {held}, which does this exercise for you: "
                                   "write the computation yourself")
        saved = []
        try:
            for owner, attr, obj, label in sites:
                saved.append((owner, attr, owner.__dict__.get(attr, _MISSING) if hasattr(owner, "__dict__") else obj))
                setattr(owner, attr, _tripwire(self.name, label, obj))
            yield
        finally:
            for owner, attr, old in reversed(saved):
                if old is _MISSING:
                    with contextlib.suppress(AttributeError):
                        delattr(owner, attr)
                else:
                    setattr(owner, attr, old)


_MISSING = object()


def _lab_of(problem: Problem) -> types.ModuleType | None:
    """The grader.labs module whose ``problems`` holds this Problem (None for a Problem made elsewhere)."""
    for name, mod in list(sys.modules.items()):
        if name.startswith("grader.labs.") and any(p is problem for p in getattr(mod, "problems", {}).values()):
            return mod
    return None


def _resolve_owner(dotted: str) -> tuple[Any, str]:
    """"pkg.mod.Class.attr" -> (pkg.mod.Class, "attr"): import the longest module prefix, walk the rest."""
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


def _tripwire(exercise: str, label: str, original: Any) -> Callable[..., Any]:
    def tripwire(*args: Any, **kwargs: Any) -> Any:
        raise CheckFailure(f"{exercise} calls {label}, which does this exercise for you: "
                           "write the computation yourself")

    tripwire.__name__ = getattr(original, "__name__", "tripwire")
    tripwire.__doc__ = f"Locked while {exercise} is checked."
    return tripwire


def _captured(fn: Any, answers: dict[int, str], depth: int = 0, seen: set[int] | None = None) -> str | None:
    """The label of an answer that ``fn`` holds directly: through a global name its code uses, a default
    argument or a closure cell — following the student's own helper functions a few levels deep."""
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
    """A function itself, or the Python function behind a numba dispatcher or an executor kernel (gpucourse.simt);
    anything else unchanged (an object whose attribute lookup misbehaves is left alone)."""
    if isinstance(v, types.FunctionType):
        return v
    if not (getattr(type(v), "__module__", "") or "").startswith(("numba", "gpucourse.simt")):
        return v
    try:
        inner = v.py_func
    except Exception:  # noqa: BLE001 - never let an odd object break the check
        return v
    return inner if isinstance(inner, types.FunctionType) else v
