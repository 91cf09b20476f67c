"""What to mutate for a Problem, and how to put a mutant in the original's place.

Two kinds of subject:

- **reference** — the Problem's ``reference`` and every function it reaches in the lab module (its
  helpers; with ``include_course`` also the ``gpucourse`` functions it reaches). Reached = named in
  its code: a global, an attribute of a module it holds, a method of a class it holds (followed
  transitively, methods through ``self``);
- **solution** — the instructor's answer in ``solutions/<lab>/<lab>.py`` (the notebook's solution
  cell, run after the lab's ``setup`` cell, exactly as a student's kernel runs it) and the other
  solution functions it calls. Kernel exercises are mutated this way: their answer is a
  ``@cuda.jit`` kernel, the reference only a NumPy formula.

A mutant is compiled in the original's globals, with its own line numbers matching the file (so
tracebacks, the SIMT executor's line counts and ``inspect.getsource`` all work), re-decorated as the
original was (``@cuda.jit``, ``@functools.lru_cache``), and swapped in at every place the original
object is held: the defining module, modules that imported it by name, the solution namespace, a
class.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import linecache
import re
import sys
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from gpucourse.simt import code_names

from .. import course
from .operators import FunctionSource, Mutant

_OWNED_PREFIXES = ("grader.", "gpucourse.")


def raw_function(obj: Any) -> types.FunctionType | None:
    """The Python function behind a function, an lru_cache wrapper, a numba kernel, a static or
    class method."""
    for _ in range(4):
        if isinstance(obj, types.FunctionType):
            return obj
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        elif isinstance(obj, property):
            obj = obj.fget
        elif isinstance(getattr(obj, "py_func", None), types.FunctionType):
            obj = obj.py_func
        elif isinstance(getattr(obj, "__wrapped__", None), types.FunctionType):
            obj = obj.__wrapped__
        else:
            return None
    return None


@dataclass(eq=False)
class Subject:
    """One function that can be mutated: its source, the object held today, and every place that
    holds it."""

    source: FunctionSource
    # what the holders hold: a function, an lru_cache wrapper, a kernel, a staticmethod
    original: Any
    sites: list[tuple[Any, str]]  # (a dict or a class, name)
    globals: dict  # the namespace its code runs in

    @property
    def qualname(self) -> str:
        return self.source.qualname

    @property
    def line_range(self) -> tuple[int, int]:
        return self.source.first_line, self.source.first_line + self.source.text.count("\n") - 1

    def compile(self, mutant: Mutant) -> Any:
        """The mutant as an object of the original's kind (decorators applied), ready to swap in."""
        filename = f"<mutant {mutant.key}>"
        text = self.source.padded(mutant.text)
        # inspect.getsource works
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace: dict = {}
        exec(
            compile(text, filename, "exec"), self.globals, namespace
        )  # noqa: S102 - our own mutants
        name = self.source.qualname.rsplit(".", 1)[-1]
        if name not in namespace:
            raise RuntimeError(f"mutant {mutant.key} did not define {name}")
        return namespace[name]

    @contextlib.contextmanager
    def installed(self, obj: Any) -> Iterator[None]:
        """``obj`` at every site of the original while the block runs."""
        saved = [(owner, name, _get(owner, name)) for owner, name in self.sites]
        try:
            for owner, name, _ in saved:
                _set(owner, name, obj)
            yield
        finally:
            for owner, name, old in reversed(saved):
                _set(owner, name, old)


def _get(owner: Any, name: str) -> Any:
    return owner[name] if isinstance(owner, dict) else owner.__dict__[name]


def _set(owner: Any, name: str, value: Any) -> None:
    if isinstance(owner, dict):
        owner[name] = value
    else:
        setattr(owner, name, value)


def _function_source(fn: types.FunctionType, qualname: str) -> FunctionSource | None:
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None  # generated code (dataclass __init__, a lambda built at run time)
    if not re.match(r"\s*(@|def |async def )", lines[0]):
        return None  # a lambda: mutated as part of the function that holds it
    return FunctionSource(qualname, fn.__code__.co_filename, start, textwrap.dedent("".join(lines)))


def _holders(obj: Any, extra: list[dict]) -> list[tuple[dict, str]]:
    """Every (namespace, name) that holds ``obj``: loaded grader/gpucourse modules and the extra
    namespaces."""
    spaces = [
        m.__dict__
        for n, m in list(sys.modules.items())
        if n.startswith(_OWNED_PREFIXES) and m is not None
    ]
    unique = {id(s): s for s in spaces + extra}
    found = []
    for space in unique.values():
        for name, value in list(space.items()):
            if value is obj and not name.startswith("__"):
                found.append((space, name))
    return found


@dataclass
class Reach:
    """Functions reachable from some roots, restricted to those ``allowed`` says are ours to
    mutate."""

    allowed: Callable[[types.FunctionType], bool]
    home: str = ""  # functions of this module are named bare; others as module.function
    # a split lab: its exercise side is named bare too (as before the split)
    also_home: tuple[str, ...] = ()
    # besides modules: where functions may be held
    namespaces: list[dict] = field(default_factory=list)
    subjects: list[Subject] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    _seen: set[int] = field(default_factory=set)

    def add(self, obj: Any, cls: type | None = None, attr: str | None = None) -> None:
        fn = raw_function(obj)
        if fn is None or id(fn) in self._seen or not self.allowed(fn):
            return
        self._seen.add(id(fn))
        qualname = f"{cls.__name__}.{attr}" if cls is not None else fn.__name__
        homes = (self.home, *self.also_home)
        if fn.__module__ not in homes and fn.__globals__.get("__name__") not in homes:
            qualname = f"{(fn.__module__ or '?').rsplit('.', 1)[-1]}.{qualname}"
        source = _function_source(fn, qualname)
        if source is None:
            self.skipped.append(f"{qualname}: no source")
        elif re.search(r"\bsuper\(\)", source.text):
            self.skipped.append(
                f"{qualname}: uses super(), which a mutant compiled outside its class cannot"
            )
        else:
            sites = [(cls, attr)] if cls is not None else _holders(obj, self.namespaces)
            if sites:
                self.subjects.append(Subject(source, obj, sites, fn.__globals__))
            else:
                self.skipped.append(f"{qualname}: held nowhere we can swap it")
        self._follow(fn, cls)

    def _follow(self, fn: types.FunctionType, cls: type | None) -> None:
        names = code_names(fn.__code__)
        for name in sorted(names):
            value = fn.__globals__.get(name)
            if isinstance(value, types.ModuleType):
                for attr in sorted(names):
                    self._add_value(getattr(value, attr, None), attr, names)
            else:
                self._add_value(value, name, names)
            if cls is not None:  # self.method(...)
                self._add_method(cls, name)

    def _add_value(self, value: Any, name: str, names: set[str] = frozenset()) -> None:
        # a class it builds: its constructor, and the methods it calls by name
        if isinstance(value, type):
            for attr in ("__init__", "__post_init__", "__call__", *sorted(names)):
                self._add_method(value, attr)
            return
        if raw_function(value) is not None:
            self.add(value)

    def _add_method(self, cls: type, name: str) -> None:
        for klass in cls.__mro__:
            if name in klass.__dict__:
                # a property's source compiles to a property
                self.add(klass.__dict__[name], klass, name)
                return


def in_modules(
    *module_names: str, prefixes: tuple[str, ...] = ()
) -> Callable[[types.FunctionType], bool]:
    def allowed(fn: types.FunctionType) -> bool:
        mod = fn.__module__ or ""
        return mod in module_names or mod.startswith(prefixes)

    return allowed


def reference_subjects(
    problem: Any, lab_module: types.ModuleType, include_course: bool = False
) -> Reach:
    """The reference and what it reaches in the lab module (and in ``gpucourse`` when
    ``include_course``). Only what the reference calls: a ``forbid`` helper it does not call could
    never be told apart by its cases."""
    from ..problem import _answer_module

    if hasattr(problem, "has_answers"):
        problem.has_answers()  # a split lab: bind the reference from grader.answers.<lab>
    answers = _answer_module(lab_module)  # a split lab's answer side is the reference's home
    home = answers or lab_module
    names = (lab_module.__name__,) + ((answers.__name__,) if answers else ())
    allowed = in_modules(*names, prefixes=("gpucourse.",) if include_course else ())
    reach = Reach(allowed, home=home.__name__, also_home=(lab_module.__name__,) if answers else (),
                  namespaces=[home.__dict__] + ([lab_module.__dict__] if answers else []))
    root = problem.reference
    reach.add(root)
    fn = raw_function(root)
    if fn is not None and not allowed(fn):
        reach.skipped.insert(
            0, f"the reference {fn.__module__}.{fn.__qualname__} lives outside the lab module"
        )
    return reach


# -- the instructor's solutions, as a student's kernel runs them -----------------------------------

@dataclass
class SolutionBook:
    """A lab's solution notebook (its py:percent twin) executed the way a student's kernel runs it:
    the ``setup`` cell, then every solution cell; functions keep the twin's file name and line
    numbers."""

    lab: str
    namespace: dict
    cell_of: dict[str, str]  # function name -> grade_id of the solution cell that defines it
    problem_cell: dict[str, str]  # problem name -> grade_id

    @property
    def path(self) -> Path:
        return course.ROOT / "solutions" / self.lab / f"{self.lab}.py"

    def answer(self, problem_name: str) -> Any:
        return self.namespace.get(problem_name)

    def is_kernel(self, problem_name: str) -> bool:
        return isinstance(getattr(self.answer(problem_name), "py_func", None), types.FunctionType)

    def subjects(self, problem_name: str) -> Reach:
        """The solution of ``problem_name`` and the other solution functions it calls."""
        ns = self.namespace

        def allowed(fn: types.FunctionType) -> bool:
            return fn.__globals__ is ns

        reach = Reach(allowed, home=ns["__name__"], namespaces=[ns])
        reach.add(self.answer(problem_name))
        return reach


_CELL = re.compile(r'^# %%.*"grade_id": "([^"]+)"', re.M)


def solution_function_names(lab: str) -> set[str]:
    """Names of the functions the lab's solution cells define, read without running anything."""
    import ast

    import jupytext

    nb = jupytext.read(course.ROOT / "solutions" / lab / f"{lab}.py")
    names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            tree = ast.parse(cell.source)
            names |= {
                n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
    return names


@functools.lru_cache(maxsize=None)
def solution_book(lab: str) -> SolutionBook:
    import jupytext

    path = course.ROOT / "solutions" / lab / f"{lab}.py"
    text = path.read_text(encoding="utf-8")
    file_lines = text.splitlines()
    # source's first line
    starts = {m.group(1): text.count("\n", 0, m.start()) + 2 for m in _CELL.finditer(text)}
    nb = jupytext.reads(text, fmt="py:percent")
    namespace: dict = {"__name__": f"solutions.{lab}"}
    cell_of: dict[str, str] = {}
    problem_cell: dict[str, str] = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if cell.cell_type != "code" or not (gid == "setup" or meta.get("solution")):
            continue
        source = cell.source
        start = starts.get(gid, 0)
        if (
            start
            and file_lines[start - 1 : start - 1 + len(source.splitlines())] == source.splitlines()
        ):
            filename, padded = str(path), "\n" * (start - 1) + source
        else:  # the twin's layout is not what we expect: keep the cell's own numbering
            filename, padded = f"<solution {lab}:{gid}>", source
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        before = set(namespace)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(
                compile(padded, filename, "exec"), namespace
            )  # noqa: S102 - the course's own solutions
        if meta.get("solution"):
            for name in set(namespace) - before:
                cell_of[name] = gid
            problem_cell[gid] = gid  # a solution cell's grade_id is its exercise's name
    return SolutionBook(lab, namespace, cell_of, problem_cell)
