"""From a kernel's Python source to the function the executor runs.

The kernel's source is parsed and every statement is preceded by a call that appends its line number
to the running thread's *trace* (the granularity of SIMT efficiency: one source statement). Loop
headers call a hook that also counts iterations (a bounded budget, so an infinite loop ends with an
error naming the line) and lets a spinning thread yield to the others. Device functions' statements
and loop iterations count as more steps of the kernel line that calls them (launch.device_step and
device_loop). Line numbers are those
of the original source, so an error says "line 7 of the cell", the line the student sees.

The compiled function is built per CUDA thread from one code object, with the thread's hooks in
closure cells; the kernel's globals are used as they are — or, for a kernel written for numba's real
CUDA target or its simulator, a copy in which ``numba.cuda`` and device-function dispatchers are
replaced by the executor's. Without source (a function built by ``exec`` of a string), the kernel
still runs, traced by ``sys.settrace``.
"""

from __future__ import annotations

import ast
import builtins
import collections
import dis
import enum
import inspect
import linecache
import math as math_module
import os
import re
import sys
import textwrap
import types
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import gpumath
from .errors import NotModelled
from .numbatypes import BUILTINS, joined
from .values import SCALAR_TYPES

TRACE, LOOP = "__simt_t__", "__simt_L__"
JOIN = "__simt_J__"  # numbatypes.joined: a conditional's two sides in one numba-cuda type


@dataclass(frozen=True)
class Loop:
    start: int  # header line
    end: int  # last line of the body


@dataclass
class Compiled:
    """A kernel or device function ready to run: ``make(trace_append, loop_hook)`` gives the
    function."""

    # instrumented code (None: no source, run the original under settrace)
    code: types.CodeType | None
    original: types.FunctionType
    loops: list[Loop]
    header: dict[int, int]  # loop header line -> index into loops
    names: dict[int, str]  # line -> variable a cuda.shared/local.array on that line is assigned to
    # line -> why a shared/local array's shape there is not a constant
    runtime_shapes: dict[int, str] = None

    def __post_init__(self) -> None:
        if self.runtime_shapes is None:
            self.runtime_shapes = {}

    def make(
        self, fn_globals: dict, closure: dict[str, Any], trace_append: Any, loop_hook: Any
    ) -> Callable:
        orig = self.original
        if self.code is None:
            cells = tuple(types.CellType(closure[n]) if n in closure else c
                          for n, c in zip(orig.__code__.co_freevars, orig.__closure__ or ()))
            f = types.FunctionType(
                orig.__code__, fn_globals, orig.__name__, orig.__defaults__, cells or None
            )
        else:
            hooks = {TRACE: trace_append, LOOP: loop_hook, JOIN: joined}
            cells = []
            for name in self.code.co_freevars:
                if name in hooks:
                    cells.append(types.CellType(hooks[name]))
                elif name in closure:
                    cells.append(types.CellType(closure[name]))
                else:
                    cells.append(_cell_of(orig, name))
            f = types.FunctionType(
                self.code, fn_globals, orig.__name__, orig.__defaults__, tuple(cells) or None
            )
        f.__kwdefaults__ = orig.__kwdefaults__
        return f


def _cell_of(fn: types.FunctionType, name: str) -> types.CellType:
    i = fn.__code__.co_freevars.index(name)
    return fn.__closure__[i]


class _Instrument(ast.NodeTransformer):
    """Insert ``__simt_t__(line)`` before statements (kernels) and ``__simt_L__(line)`` at loop
    heads."""

    def __init__(self, trace: bool):
        self.trace = trace
        self.loops: list[Loop] = []
        self.names: dict[int, str] = {}
        # header lines of the loops being instrumented, innermost last
        self.open_loops: list[int] = []

    @staticmethod
    def _call(name: str, line: int, node: ast.AST) -> ast.stmt:
        call = ast.Expr(ast.Call(ast.Name(name, ast.Load()), [ast.Constant(line)], []))
        return ast.copy_location(call, node)

    def stmts(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        # name -> the number literal the last statement of this list assigning it gave it
        # (`v = 0.0`): an `if` below that assigns v on one side only joins the two at its end
        literal: dict[str, Any] = {}
        for s in body:
            if isinstance(s, ast.If):
                _join_one_sided(s, literal)
            if self.trace:
                out.append(self._call(TRACE, s.lineno, s))
            new = self.visit(s)
            out.extend(new if isinstance(new, list) else [new])
            for name in _stored_names(s):
                literal.pop(name, None)
            if (isinstance(s, ast.Assign) and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name) and _number(s.value)):
                literal[s.targets[0].id] = s.value.value
        return out

    # a function nested in the kernel: as is
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)  # a conditional expression in the value (visit_IfExp)
        # `sA = cuda.shared.array(...)`: remember the name, to call the array sA in reports
        v = node.value
        if (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr in ("array", "array_like")
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            self.names[node.lineno] = node.targets[0].id
        return node

    def _loop(self, node: ast.For | ast.While) -> ast.AST:
        # The header is one statement per evaluation, as CPython's own line events count it: once on
        # entry (the statement record before the loop) and once after every iteration (this hook,
        # also before `continue`): a loop of n iterations records its header n + 1 times, the last
        # being the check that exits.
        self.loops.append(Loop(node.lineno, node.end_lineno or node.lineno))
        self.open_loops.append(node.lineno)
        node.body = self.stmts(node.body) + [self._call(LOOP, node.lineno, node)]
        self.open_loops.pop()
        node.orelse = self.stmts(node.orelse)
        return node

    def visit_Continue(self, node: ast.Continue) -> list[ast.stmt]:
        return [self._call(LOOP, self.open_loops[-1], node), node] if self.open_loops else [node]

    visit_For = visit_While = _loop

    def visit_If(self, node: ast.If) -> ast.AST:
        # a name one side assigns a number literal and the other something else: numba-cuda gives
        # it one type, the two sides' unification (`if c: v = a[i]` / `else: v = 0.0` is float64)
        sides = [_assigned(node.body), _assigned(node.orelse)]
        for mine, other in ((sides[0], sides[1]), (sides[1], sides[0])):
            for name, values in mine.items():
                literal = next((a.value.value for a in other.get(name, []) if _number(a.value)),
                               None)
                if literal is None:
                    continue
                for assign in values:
                    if not _number(assign.value):
                        _join(assign, literal)
        # a name one side assigns a number literal and the other side leaves alone (`r = a * b`,
        # then `if c: r = 0.0`): numba-cuda's phi at the if's end unifies it even when that side
        # never runs, so it is joined after the if (unbound: nothing to join; untraced: no step)
        after = []
        for mine, other in ((node.body, node.orelse), (node.orelse, node.body)):
            untouched = set().union(*map(_stored_names, other)) if other else set()
            for name, values in _assigned(mine).items():
                literal = next((a.value.value for a in values if _number(a.value)), None)
                if literal is not None and name not in untouched:
                    join = f"{name} = {JOIN}({name}, {literal!r})"
                    guarded = f"try:\n    {join}\nexcept NameError:\n    pass"
                    after.append(ast.parse(guarded).body[0])
        node.test = self.visit(node.test)
        node.body, node.orelse = self.stmts(node.body), self.stmts(node.orelse)
        if after:
            end = node.end_lineno or node.lineno
            for part in (n for stmt in after for n in ast.walk(stmt) if hasattr(n, "lineno")):
                part.lineno = part.end_lineno = end  # the if's last line: no line of its own
            return [node, *after]
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        # numba-cuda types both sides whichever runs: the taken side's value is joined with the
        # value of each side whose type is known without running it (a number, a name)
        if all(_number(side) for side in (node.body, node.orelse)):
            return node
        known = [_known(side) for side in (node.body, node.orelse) if _static(side)]
        if not known:
            return node
        call = ast.Call(ast.Name(JOIN, ast.Load()), [node, *known], [])
        return ast.copy_location(call, node)

    def visit_With(self, node: ast.With) -> ast.AST:
        node.body = self.stmts(node.body)
        return node

    def visit_Try(self, node: ast.Try) -> ast.AST:
        node.body, node.orelse, node.finalbody = (
            self.stmts(node.body),
            self.stmts(node.orelse),
            self.stmts(node.finalbody),
        )
        for h in node.handlers:
            h.body = self.stmts(h.body)
        return node


def _number(node: ast.AST) -> bool:
    """A number literal (not a bool): numba-cuda types a float one float64, an int one int64."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool))


def _static(node: ast.AST) -> bool:
    """An expression whose numba-cuda type the executor can know without running it: a number
    literal, one negated (``-0.0``), ``float`` or ``int`` of one (``float(0)``: float64), or a name
    (its value in the frame)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("float", "int") and not node.keywords and len(node.args) <= 1):
        return all(_number(a) for a in node.args)
    return _number(node) or isinstance(node, ast.Name)


def _known(node: ast.expr) -> ast.expr:
    """What :func:`numbatypes.joined` is given for a :func:`_static` side: its value (a number
    expression has no effects) or, for a name, the name as a str (looked up when it is bound)."""
    if isinstance(node, ast.Name):
        return ast.Constant(node.id)
    # a number, -0.0, float(0): evaluated once, here (float of an int is a float64 in a kernel too)
    return ast.Constant(eval(compile(ast.Expression(node), "<const>", "eval"), {}))


def _assigned(body: list[ast.stmt]) -> dict[str, list[ast.expr]]:
    """name -> the values the statements directly in ``body`` assign it (``v = ...``)."""
    out: dict[str, list[ast.expr]] = {}
    for s in body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            out.setdefault(s.targets[0].id, []).append(s)
    return out


def _stored_names(s: ast.stmt) -> set[str]:
    """The names statement ``s`` (and any statement nested in it) assigns."""
    return {n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _join_one_sided(node: ast.If, literal: dict[str, Any]) -> None:
    """``v = 0.0`` then ``if c: v = a[i]`` (no ``v =`` on the other side): at the end of the ``if``
    numba-cuda merges the two definitions (a phi node) into one type, the unification — float64
    for a float32 and a float literal, as for ``v = a[i] if c else 0.0``."""
    sides = [_assigned(node.body), _assigned(node.orelse)]
    for mine, other in ((sides[0], node.orelse), (sides[1], node.body)):
        for name, values in mine.items():
            if name not in literal or name in set().union(*map(_stored_names, other)):
                continue
            for assign in values:
                if not _number(assign.value):
                    _join(assign, literal[name])


def _join(assign: ast.Assign, literal: Any) -> None:
    """``v = x`` becomes ``v = __simt_J__(x, literal)`` (:func:`numbatypes.joined`)."""
    value = assign.value
    assign.value = ast.copy_location(
        ast.Call(ast.Name(JOIN, ast.Load()), [value, ast.Constant(literal)], []), value
    )


_CACHE: dict[tuple[types.CodeType, bool], Compiled] = {}


def compile_function(fn: types.FunctionType, trace: bool) -> Compiled:
    """The instrumented version of ``fn`` (cached per code object)."""
    key = (fn.__code__, trace)
    refuse_reflection(fn.__code__, fn.__name__, fn)
    refuse_defaults(fn)
    hit = _CACHE.get(key)
    if hit is not None and hit.original is fn:
        return hit
    compiled = _compile(fn, trace)
    _CACHE[key] = compiled
    return compiled


def _source_def(fn: types.FunctionType) -> tuple[ast.FunctionDef, int] | None:
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    src = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        return None
    names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    if names != list(fn.__code__.co_varnames[:len(names)]):
        return None  # the source on record is not this function's (a stale cache entry)
    return node, first - 1


def _compile(fn: types.FunctionType, trace: bool) -> Compiled:
    found = _source_def(fn)
    if found is None:
        return Compiled(None, fn, [], {}, {})
    node, offset = found
    node.decorator_list = []
    # the source file's own line numbers, before they are baked into the calls
    ast.increment_lineno(node, offset)
    refused = numba_refusals(node)
    if refused:
        line, what, why = refused[0]
        raise NotModelled(f"{what} inside a kernel{where(fn.__code__, line)}", why)
    runtime_shapes = runtime_array_shapes(node)
    inst = _Instrument(trace)
    node.body = inst.stmts(_without_docstring(node.body))
    freevars = list(fn.__code__.co_freevars)
    maker = ast.FunctionDef(
        name="__simt_make__",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(a) for a in [TRACE, LOOP, JOIN] + freevars],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        ),
        body=[node, ast.Return(ast.Name(fn.__name__, ast.Load()))],
        decorator_list=[],
        returns=None,
        type_comment=None,
        **({"type_params": []} if sys.version_info >= (3, 12) else {}),
    )
    ast.copy_location(maker, node)
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        code = compile(module, fn.__code__.co_filename, "exec")
    except SyntaxError:
        return Compiled(None, fn, [], {}, {})
    maker_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(
        c
        for c in maker_code.co_consts
        if isinstance(c, types.CodeType) and c.co_name == fn.__name__
    )
    loops = inst.loops
    return Compiled(
        inner,
        fn,
        loops,
        {loop.start: i for i, loop in enumerate(loops)},
        inst.names,
        runtime_shapes,
    )


_THREAD_GEOMETRY = {"threadIdx", "blockIdx", "blockDim", "gridDim", "laneid"}


def runtime_array_shapes(fn: ast.FunctionDef) -> dict[int, str]:
    """Lines where ``cuda.shared.array``/``cuda.local.array`` gets a shape known only at run time:
    numba-cuda needs a compile-time constant (an integer literal, a global, or a tuple of them) and
    rejects the kernel otherwise. Only what cannot be constant is flagged: a kernel parameter
    (``n``, ``a.shape[0]``) or the thread geometry (``cuda.blockDim.x``); a local name may hold a
    literal, so it passes."""
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    # a local name's assigned values: `n = 10` compiles, `n = SHARED_BLOCK + 2` not
    local_values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    local_values.setdefault(target.id, []).append(node.value)
    out: dict[int, str] = {}
    for call in ast.walk(fn):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "array"
            and isinstance(call.func.value, ast.Attribute)
            and call.func.value.attr in ("shared", "local")
        ):
            continue
        shape = (
            call.args[0]
            if call.args
            else next((k.value for k in call.keywords if k.arg == "shape"), None)
        )
        if shape is None:
            continue
        kind = call.func.value.attr
        for sub in ast.walk(shape):
            if isinstance(sub, ast.Name) and sub.id in params:
                why = f"the kernel argument `{sub.id}`"
            elif isinstance(sub, ast.Attribute) and sub.attr in _THREAD_GEOMETRY:
                why = f"`{sub.attr}`, known only when the kernel runs"
            else:
                continue
            out[call.lineno] = (
                f"the shape of cuda.{kind}.array uses {why}: numba-cuda needs a compile-time"
                " constant (an integer literal, a global constant, or a tuple of them), so this"
                " kernel does not compile for a GPU"
            )
            break
        else:
            def constant(node: ast.expr, depth: int = 0) -> bool:
                """An int literal, a name (a global constant, or a local always assigned constants),
                or a tuple of them: numba-cuda types each as a compile-time constant (`shape =
                (TILE, TILE_PAD)` included)."""
                if _literal_int(node):
                    return True
                if isinstance(node, ast.Tuple):
                    return all(constant(e, depth) for e in node.elts)
                if isinstance(node, ast.Name) and depth < 8:
                    return all(constant(v, depth + 1) for v in local_values.get(node.id, []))
                return False

            parts = shape.elts if isinstance(shape, ast.Tuple) else [shape]
            odd = next((p for p in parts if not constant(p)), None)
            if odd is not None:
                # numba-cuda types `SHARED_BLOCK + 2` or `lab.POOL_SLOTS` as an int64 value, not a
                # literal, and refuses it ("No implementation of function shared.array ...
                # array(int64, class(float32))").
                # value: the expression numba-cuda cannot type as a constant (a local's assigned
                # one)
                value = odd
                while isinstance(value, ast.Name):
                    value = next(v for v in local_values[value.id] if not constant(v))
                shown = (
                    f"{ast.unparse(value)}`"
                    if value is odd
                    else f"{odd.id}` (assigned `{ast.unparse(value)}`)"
                )
                out[call.lineno] = (
                    f"the shape of cuda.{kind}.array uses `{shown}: numba-cuda needs integer"
                    " literals or names of constants (global constants, or locals always assigned"
                    " them), or a tuple of them, and types an expression or an attribute as an"
                    " int64 value, so this kernel does not compile for a GPU. Name the value"
                    f" outside the kernel, e.g. `SLOTS = {ast.unparse(value)}`."
                )
    return out


def _literal_int(node: ast.expr) -> bool:
    """An integer literal, or arithmetic of integer literals (CPython folds `8 + 2` to 10 before
    numba sees it)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _literal_int(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal_int(node.left) and _literal_int(node.right)
    return False


# Python that runs here but that numba-cuda refuses to compile in a kernel (each checked against
# compile_ptx in tests/simt_corpus/typing_cases.py), and isinstance(), which numba-cuda compiles and
# the executor does not model: (what, why), found in the kernel's source before it runs
_NO_HEAP = (
    "numba-cuda cannot build it in a kernel (there is no heap): use a tuple or cuda.local.array"
)
_NO_FORMAT = "numba-cuda formats no strings in a kernel: print(\"x =\", x)"
# (node types, what, why): refused wherever they appear in a kernel's source
_REFUSED_NODES: tuple[tuple[Any, str, str], ...] = (
    (
        ast.Global,
        "a `global` statement",
        (
            "numba-cuda cannot store to a global in a kernel (STORE_GLOBAL): threads "
            "share data through shared or global arrays"
        ),
    ),
    (
        ast.GeneratorExp,
        "a generator expression",
        "numba-cuda compiles no generator in a kernel: write the loop",
    ),
    (
        ast.Starred,
        "`*`-unpacking",
        "numba-cuda refuses it in a kernel: unpack a tuple by its length",
    ),
    (ast.Delete, "`del`", "numba-cuda refuses it in a kernel"),
    (ast.Try, "`try`/`except`", "numba-cuda compiles no exception handling in a kernel"),
    ((ast.Dict, ast.DictComp, ast.Set, ast.SetComp), "a dict or set", _NO_HEAP),
    (ast.ListComp, "a list comprehension", _NO_HEAP),
    (ast.JoinedStr, "an f-string", _NO_FORMAT),
    (
        ast.NamedExpr,
        "the `:=` operator",
        "numba-cuda refuses it in a kernel: assign on a line of its own",
    ),
)

# the builtins numba-cuda types in a kernel (numba's builtin typing on the CUDA target); any other
# builtin a kernel names is refused where it is used (tests/simt_corpus/typing_cases.py: reversed,
# any, all, sorted, map, list, str, type against compile_ptx). Exceptions may be raised; constants
# are not names.
NUMBA_CUDA_BUILTINS = frozenset(
    {
        "abs",
        "bool",
        "complex",
        "divmod",
        "enumerate",
        "float",
        "int",
        "iter",
        "len",
        "max",
        "min",
        "next",
        "ord",
        "pow",
        "print",
        "range",
        "round",
        "sum",
        "tuple",
        # isinstance: refused from the source, with its own sentence
        "zip",
        "isinstance",
    }
)
_NOT_CALLS = frozenset({"True", "False", "None", "Ellipsis", "NotImplemented", "__debug__"})
# builtins numba-cuda compiles in some uses that this executor does not model (the r22 read, against
# compile_ptx)
_NOT_MODELLED_BUILTINS = {
    "type": (
        "numba-cuda compiles type() in some uses (type(x)(2)) and refuses others (type(x) =="
        " type(y)); this executor does not model it: name the type (np.float32(2))"
    ),
    "slice": (
        "numba-cuda compiles slice(); this executor does not model it: write the slice (a[0:4])"
    ),
}


def _array_valued(value: ast.expr, params: set[str]) -> bool:
    """Whether an assigned value is (likely) an array: a kernel argument, or a slice of
    something."""
    return (isinstance(value, ast.Name) and value.id in params) or any(
        isinstance(n, ast.Subscript) and any(isinstance(x, ast.Slice) for x in ast.walk(n.slice))
        for n in ast.walk(value))


def numba_refusals(fn: ast.FunctionDef) -> list[tuple[int, str, str]]:
    """(line, what, why) for each construct of ``fn`` that numba-cuda refuses to compile in a
    kernel."""
    out: list[tuple[int, str, str]] = []
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    for node in ast.walk(fn):
        refused = next(
            ((what, why) for kind, what, why in _REFUSED_NODES if isinstance(node, kind)), None
        )
        if refused is not None:
            out.append((node.lineno, *refused))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            out.append((node.lineno, "a list kept in a variable", _NO_HEAP))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
                isinstance(side, ast.List) for side in (node.left, node.right)):
            out.append((node.lineno, "a list made by `*` (`[0.0] * 4`)", _NO_HEAP))
        elif isinstance(node, ast.Attribute) and node.attr == "literal_unroll":
            out.append(
                (
                    node.lineno,
                    "numba.literal_unroll",
                    "numba-cuda does not type it in a kernel: loop over the tuple itself",
                )
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
            and node.keywords
        ):
            out.append(
                (
                    node.lineno,
                    "print() with keyword arguments",
                    "numba-cuda's print takes positional arguments only",
                )
            )
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            out.append((node.lineno, "%-formatting of a string", _NO_FORMAT))
        elif (
            isinstance(node, (ast.Assign, ast.AugAssign))
            and any(
                isinstance(t, ast.Subscript)
                and any(isinstance(x, ast.Slice) for x in ast.walk(t.slice))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
            and (isinstance(node, ast.AugAssign) or _array_valued(node.value, params))
        ):
            # `a[2:6] = 7.0` (a scalar broadcast) compiles; an array copied in (`out[:] = a`, `=
            # a[1:]`) or an augmented slice (`out[:2] += 1`) does not
            out.append(
                (
                    node.lineno,
                    "assigning to a slice (`out[:] = ...`)",
                    (
                        "numba-cuda cannot copy an array in a kernel: each thread writes its own"
                        " elements"
                    ),
                )
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("hash", "dict", "set")
        ):
            out.append(
                (
                    node.lineno,
                    f"{node.func.id}()",
                    "numba-cuda has no implementation of it for the GPU",
                )
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
        ):
            out.append(
                (
                    node.lineno,
                    "isinstance()",
                    (
                        "numba-cuda decides it when it compiles (a kernel's types are "
                        "fixed then); this executor does not model it: drop the test"
                    ),
                )
            )
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "fsum"
            and isinstance(node.value, ast.Name)
            and node.value.id == "math"
        ):
            out.append(
                (
                    node.lineno,
                    "math.fsum",
                    "numba-cuda has no implementation of it for the GPU: add in a loop",
                )
            )
    return sorted(out)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body) > 1:
        return body[1:]
    return body


# -- source locations a student can find -----------------------------------------------------------

_CELL = re.compile(r"(ipykernel_\d+|<ipython-input-|/tmp/ipykernel)")


def where(code: types.CodeType | None, line: int | None) -> str:
    """' at line 7 of the cell (`out[i] = a[i] + 1`)' — the line as the student's editor numbers
    it."""
    if code is None or line is None or line < 0:
        return ""
    fname = code.co_filename
    place = (
        "the cell"
        if _CELL.search(fname)
        else os.path.basename(fname) if not fname.startswith("<") else fname
    )
    text = linecache.getline(fname, line).strip()
    return f" at line {line} of {place}" + (f" (`{text}`)" if text else "")


# -- rebinding kernels written for numba.cuda ------------------------------------------------------

def code_names(code: types.CodeType) -> set[str]:
    """Every global/attribute name a function's code (and the code nested in it) refers to."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= code_names(c)
    return names


# what a kernel cannot name: numba-cuda compiles a kernel from its own code, so an array is reached
# only by indexing and its public attributes (.shape, .size, ...); Python's reflection, and the
# executor's own fields behind them (``TracedArray._a``, the raw data, whose reads no meter would
# count), do not exist on a GPU
REFLECTION = {
    "getattr",
    "setattr",
    "delattr",
    "vars",
    "globals",
    "locals",
    "eval",
    "exec",
    "compile",
    "__import__",
    "__builtins__",
    "object",
    "super",
    "open",
    "memoryview",
    "id",
    "dir",
}


def refuse_defaults(fn: types.FunctionType) -> None:
    """A kernel's or device function's default arguments: numba-cuda compiles constants there
    (numbers, strings, None, tuples of them); a function, module or other object is refused (it
    would run outside the executor)."""
    values = list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
    for v in values:
        if not _constant(v):
            raise NotModelled(
                f"a default argument of {type(v).__name__} in {fn.__name__}",
                "numba-cuda refuses to compile it: a default is a constant (a number, a string,"
                " None)",
            )


def _constant(v: Any) -> bool:
    if isinstance(v, tuple):
        return all(_constant(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, complex, str, np.generic))


_NAMEDTUPLE_OWN = set(vars(collections.namedtuple("_Probe", "a")))


def _plain_record(cls: type) -> bool:
    """A namedtuple as collections.namedtuple makes it, or an enum, with no methods of the student's
    own (a method would run as plain Python, outside the executor)."""
    own = {
        k
        for k, x in vars(cls).items()
        if isinstance(x, (types.FunctionType, classmethod, staticmethod, property))
    }
    if issubclass(cls, enum.Enum):
        return not {k for k in own if not k.startswith("_")} and not (
            own & {"__getattr__", "__getattribute__"}
        )
    return cls.__bases__ == (tuple,) and hasattr(cls, "_fields") and own <= _NAMEDTUPLE_OWN


def _plain_data(v: Any) -> bool:
    """What numba-cuda freezes into a kernel as a constant: numbers, strings, tuples of them,
    arrays, dtypes."""
    return _constant(v) or isinstance(v, (np.ndarray, np.dtype))


def _is_builtin(name: str, fn: types.FunctionType | None) -> bool:
    """Whether ``name`` in ``fn``'s code is Python's builtin of that name: not a global of the
    student's module, not a closure variable holding something else (``dir = 2`` at module level is
    a constant numba-cuda compiles)."""
    if fn is None:
        return True
    if name in (fn.__code__.co_freevars or ()):
        cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
        try:
            return cell.cell_contents is getattr(builtins, name, object())
        except ValueError:  # an empty cell: nothing bound yet
            return False
    return name not in fn.__globals__


def refuse_reflection(code: types.CodeType, name: str, fn: types.FunctionType | None = None,
                      outer_locals: frozenset[str] = frozenset()) -> None:
    """Raise NotModelled where ``code`` (a kernel's or device function's, nested code included)
    reads an attribute whose name starts with an underscore, or names one of REFLECTION's builtins:
    numba-cuda compiles neither. (A global or closure variable of the student's that happens to be
    called ``dir`` or ``id`` is not a builtin.)"""
    for ins in dis.get_instructions(code):
        if ins.opname in ("IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR"):
            raise NotModelled(
                f"an import statement inside a kernel ({name}: `import {ins.argval}`)",
                "numba-cuda refuses to compile it: a kernel names modules imported outside it",
            )
        arg = ins.argval if isinstance(ins.argval, str) else None
        if arg is None:
            continue
        if ins.opname in (
            "LOAD_ATTR",
            "STORE_ATTR",
            "DELETE_ATTR",
            "LOAD_METHOD",
            "LOAD_SUPER_ATTR",
        ) and arg.startswith("_"):
            raise NotModelled(
                f"the attribute `.{arg}` inside a kernel ({name})",
                "numba-cuda compiles a module's constants, private ones too, but no private"
                " attribute of an array; this executor refuses every name that starts with an"
                " underscore (it guards its own fields behind the device arrays): give a constant a"
                " public name",
            )
        # a variable of this code, or of the code it is nested in (a lambda capturing a kernel-local
        # `id`)
        local = ins.opname == "LOAD_DEREF" and (arg in code.co_cellvars or arg in outer_locals)
        if (
            ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF")
            and arg in REFLECTION
            and not local
            and _is_builtin(
                arg,
                fn if code is getattr(fn, "__code__", None) or ins.opname != "LOAD_DEREF" else None,
            )
        ):
            raise NotModelled(
                f"`{arg}` inside a kernel ({name})",
                "numba-cuda refuses to compile it: Python's reflection does not exist in a kernel",
            )
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            refuse_reflection(
                const, name, fn, outer_locals | set(code.co_varnames) | set(code.co_cellvars)
            )


class _Refused:
    """What a kernel's global or closure value becomes when numba-cuda could not call it from a
    kernel (a plain Python function, a class, a module other than math / numpy / numba): using it
    raises NotModelled."""

    def __init__(self, name: str, what: str, hint: str = ""):
        self._name, self._what, self._hint = name, what, hint

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise NotModelled(
            f"calling or using `{self._name}` ({self._what}) inside a kernel",
            self._hint
            or (
                "numba-cuda refuses to compile it: a kernel calls only @cuda.jit(device=True)"
                " functions, math and the NumPy scalar types"
            ),
        )

    __call__ = _refuse
    __getattr__ = _refuse
    __getitem__ = _refuse
    __iter__ = _refuse
    __len__ = _refuse
    # compared, computed with or converted (`if laneid == 0:`, `out[i] = laneid`): refused too, not
    # silently False
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __int__ = __float__ = (
        __index__
    ) = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = (
        _refuse
    )
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __abs__ = (
        _refuse
    )
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rshift__ = (
        __invert__
    ) = _refuse
    __array__ = _refuse
    __hash__ = object.__hash__  # kept: the executor files its replacements in dicts


class _ModuleView:
    """Another module as a kernel sees it: numba-cuda resolves its constants and its @cuda.jit
    functions when it compiles the kernel (``K.TPB``, ``K.device_fn(...)``); its other functions,
    classes and private names are :class:`_Refused`."""

    def __init__(self, module: types.ModuleType, cuda: Any, wrap_device: Callable[[Any], Any]):
        self._module, self._cuda, self._wrap = module, cuda, wrap_device

    def __getattr__(self, attr: str) -> Any:
        # (a private name never gets here: refuse_reflection)
        where = f"{self._module.__name__}.{attr}"
        value = getattr(self._module, attr)
        # another module's array: a constant of the compiled kernel, read-only
        if isinstance(value, np.ndarray):
            return _frozen_value(value)
        return replacement(value, self._cuda, self._wrap, where)


def is_numba_cuda_module(v: Any) -> bool:
    return isinstance(v, types.ModuleType) and v.__name__.split(".")[:2] == ["numba", "cuda"]


def python_function(kernel: Any) -> types.FunctionType:
    """The Python function behind a @cuda.jit kernel (the executor's, numba's or its simulator's) or
    a function."""
    for attr in ("py_func", "fn"):
        inner = getattr(kernel, attr, None) if not isinstance(kernel, types.FunctionType) else None
        if isinstance(inner, types.FunctionType):
            return inner
    if isinstance(kernel, types.FunctionType):
        return kernel
    raise TypeError(
        f"expected a @cuda.jit kernel or a Python function, got {type(kernel).__name__}"
    )


class _NumbaProxy(types.ModuleType):
    """``numba`` as a kernel sees it here: every attribute of the real module, but ``numba.cuda`` is
    the executor."""

    def __init__(self, real: types.ModuleType, cuda: Any):
        super().__init__("numba")
        self.__dict__["_real"], self.__dict__["cuda"] = real, cuda

    def __getattr__(self, name: str) -> Any:
        if name in SCALAR_TYPES and name != "void":
            # numba.float32(x) casts to a value typed as numba-cuda types it
            return SCALAR_TYPES[name]
        return getattr(self.__dict__["_real"], name)


_NP_SCALARS = {
    np.dtype(t).type: np.dtype(t).name
    for t in ("float32", "float64", "int8", "int16", "int32", "uint8", "uint16", "uint32")
}


class _NumpyProxy(types.ModuleType):
    """``numpy`` as a kernel sees it here: ``np.float32(x)``, ``np.int32(x)`` give values whose
    arithmetic is typed as numba-cuda types it (:mod:`gpucourse.simt.numbatypes`); every other
    attribute is NumPy's own."""

    def __init__(self, real: types.ModuleType):
        super().__init__("numpy")
        self.__dict__["_real"] = real
        for name in _NP_SCALARS.values():
            self.__dict__[name] = SCALAR_TYPES[name]

    def __getattr__(self, name: str) -> Any:
        v = getattr(self.__dict__["_real"], name)
        refused = _numpy_refusal(v, f"np.{name}")
        return v if refused is None else refused


# The NumPy ufuncs numba-cuda has a CUDA implementation of: the names of
# ``numba.cuda.ufuncs.ufunc_db()`` (numba-cuda 0.30; tests/test_simt_types.py checks this set
# against the installed numba-cuda's table and its compiler). Any other ufunc (np.exp, np.sqrt,
# np.add, np.abs) fails to compile in a kernel (KeyError in get_ufunc_info): use math.exp.
NUMBA_CUDA_UFUNCS = frozenset(
    {
        "arccos",
        "arccosh",
        "arcsin",
        "arcsinh",
        "arctan",
        "arctan2",
        "arctanh",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "conjugate",
        "cos",
        "cosh",
        "deg2rad",
        "degrees",
        "divide",
        "equal",
        "fmax",
        "fmin",
        "greater",
        "greater_equal",
        "hypot",
        "invert",
        "isnan",
        "left_shift",
        "less",
        "less_equal",
        "log",
        "log10",
        "log2",
        "logical_and",
        "logical_not",
        "logical_or",
        "logical_xor",
        "maximum",
        "minimum",
        "not_equal",
        "rad2deg",
        "radians",
        "right_shift",
        "sin",
        "sinh",
        "tan",
        "tanh",
    }
)


def _numpy_refusal(v: Any, name: str) -> "_Refused | None":
    """A :class:`_Refused` for a NumPy attribute numba-cuda cannot compile in a kernel (a ufunc
    outside its table, an allocator or any other NumPy function); None for the types, dtypes,
    constants and the ufuncs it has."""
    if isinstance(v, np.ufunc):
        if v.__name__ in NUMBA_CUDA_UFUNCS:
            return None
        alt = (
            f"math.{v.__name__}"
            if hasattr(math_module, v.__name__)
            else "the math module or plain arithmetic"
        )
        return _Refused(
            name,
            f"the NumPy ufunc {v.__name__}",
            f"numba-cuda has no CUDA implementation of np.{v.__name__} (it compiles only "
            f"{len(NUMBA_CUDA_UFUNCS)} NumPy ufuncs in a kernel): use {alt}",
        )
    if isinstance(v, types.ModuleType):  # np.random, np.linalg, np.emath, np.lib
        return _Refused(
            name,
            "a NumPy submodule",
            "numba-cuda compiles no NumPy submodule in a kernel (for random "
            "numbers: numba.cuda.random's xoroshiro128p generators)",
        )
    if callable(v) and not isinstance(v, type):
        return _Refused(
            name,
            "a NumPy function",
            "numba-cuda refuses every NumPy function that allocates (np.zeros, np.empty, np.array,"
            " np.arange: use cuda.local.array or cuda.shared.array) and compiles a few others, such"
            " as np.sum of an array, as a loop in one thread; this executor models none of them:"
            " write the loop, or the parallel reduction the puzzle asks for",
        )
    return None


_NUMPY_PROXY = _NumpyProxy(np)


# numba.cuda's stubs that numba-cuda's typing does not resolve when imported by name (`from
# numba.cuda import threadIdx` then `threadIdx.x`: "Untyped global name"); its vector types (float4,
# int2, ...) it does resolve. Checked against compile_ptx in tests/simt_corpus/typing_cases.py
UNTYPED_BARE_STUBS = frozenset(
    {
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "laneid",
        "warpsize",
        "shared",
        "local",
        "const",
        "atomic",
        "popc",
        "brev",
        "clz",
        "ffs",
        "fma",
        "cbrt",
        "selp",
        "syncwarp",
        "threadfence",
        "threadfence_block",
        "threadfence_system",
        "activemask",
        "lanemask_lt",
        "match_any_sync",
        "match_all_sync",
        "nanosleep",
    }
)


def _numba_cuda_name(v: Any) -> str | None:
    """The name under which numba.cuda exports ``v``, if it is one of its intrinsics (``grid``,
    ``syncthreads``: numba-cuda compiles them imported by name) or stubs (``threadIdx``, ``popc``:
    it does not)."""
    real = sys.modules.get("numba.cuda")
    if real is None or not (
        isinstance(v, (type, types.FunctionType)) or type(v).__name__ == "_Intrinsic"
    ):
        return None
    stub = getattr(sys.modules.get("numba.cuda.stubs"), "Stub", None)
    if isinstance(v, type) and not (stub is not None and issubclass(v, stub)):
        return None
    name = getattr(v, "__name__", None)
    return name if name and getattr(real, name, None) is v else None


def replacement(v: Any, cuda: Any, wrap_device: Callable[[Any], Any], name: str = "?") -> Any:
    """What a kernel's global or closure value ``v`` (named ``name``) must become here (``v`` itself
    when nothing changes; a :class:`_Refused` for what numba-cuda could not use in a kernel)."""
    if v is math_module or (
        isinstance(v, types.BuiltinFunctionType) and getattr(v, "__module__", None) == "math"
    ):
        # IEEE inf/nan where CPython's math raises, numba-cuda's float32 results
        return gpumath.replace(v)
    if v is np:
        return _NUMPY_PROXY
    if isinstance(v, type) and v in _NP_SCALARS:
        return SCALAR_TYPES[_NP_SCALARS[v]]  # `from numpy import float32`
    if isinstance(v, np.ufunc) or (
        callable(v)
        and (getattr(v, "__module__", None) or "").startswith("numpy")
        and not isinstance(v, type)
    ):
        refused = _numpy_refusal(v, name)  # `from numpy import exp`, `from numpy import empty`
        if refused is not None:
            return refused
    imported = _numba_cuda_name(v)
    # `from numba.cuda import grid` (an intrinsic) or `... import threadIdx` (a stub)
    if imported is not None:
        if isinstance(v, type) and imported in UNTYPED_BARE_STUBS:
            return _Refused(
                name,
                f"numba.cuda's `{imported}` imported by name",
                f"numba-cuda types `{imported}` only through the module: write cuda.{imported}",
            )
        mine = getattr(cuda, imported, None)
        if mine is not None:
            return mine
        # a vector type (float4, int2): numba-cuda types it, the executor has none
        if isinstance(v, type):
            return _Refused(
                name,
                f"numba.cuda's `{imported}`",
                f"numba-cuda compiles `{imported}`; this executor "
                "does not model the vector types: use scalars",
            )
        return _Refused(
            name,
            f"numba.cuda's `{imported}`",
            f"numba-cuda compiles `{imported}`; this executor "
            # ldcg and the other cache hints
            "does not model it",
        )
    if isinstance(v, types.ModuleType):
        if is_numba_cuda_module(v):
            sub = v.__name__.split(".")[2:]
            if sub and sub[0] == "random":
                return cuda.random
            return cuda
        if v.__name__ == "numba":
            return _NumbaProxy(v, cuda)
        if v.__name__ in ("math", "cmath", "numpy") or v.__name__.startswith("numba"):
            return v
        return _ModuleView(v, cuda, wrap_device)
    mod = getattr(type(v), "__module__", "") or ""
    if mod.startswith("numba.core.types") and getattr(v, "name", None) in SCALAR_TYPES:
        return SCALAR_TYPES[v.name]  # `from numba import float32`
    if mod.startswith("numba") and isinstance(getattr(v, "py_func", None), types.FunctionType):
        return wrap_device(v)  # a dispatcher of the real target or of numba's simulator
    if isinstance(v, types.FunctionType) and (v.__module__ or "").startswith("numba.cuda"):
        mine = getattr(cuda, v.__name__, None)
        return mine if mine is not None else v
    if isinstance(v, types.FunctionType) and not mod.startswith("numba") and not (
            v.__module__ or "").startswith(("numba", "gpucourse.simt")):
        return _Refused(name, "a Python function, not @cuda.jit(device=True)")
    if isinstance(v, type):
        if (v.__module__ or "").startswith(("numba", "numpy", "gpucourse.simt")) or _plain_record(
            v
        ):
            return v  # numba-cuda compiles namedtuples and enums
        return _Refused(name, f"the class {v.__name__}")
    if mod.startswith(("gpucourse.simt", "numba", "numpy")):
        return v  # the executor's device functions and dispatchers, numba's and NumPy's types
    if callable(v) and not isinstance(v, (types.BuiltinFunctionType, np.ufunc)) or (
            isinstance(v, types.BuiltinFunctionType)
            and getattr(v, "__module__", None) not in ("math", "cmath", "_operator", "operator")):
        # functools.partial, a method
        return _Refused(name, f"a {type(v).__name__}, not @cuda.jit(device=True)")
    if isinstance(v, (list, dict, set)):
        # numba-cuda freezes tuples into a kernel, not lists (a global list fails to lower:
        # "reflected list"), and a container could hand the kernel anything (sys.modules, a module,
        # the raw data)
        example = (
            f" (write {tuple(v)!r})"
            if isinstance(v, list) and len(v) <= 8 and all(map(_constant, v))
            else ""
        )
        return _Refused(
            name,
            f"a {type(v).__name__}",
            f"numba-cuda compiles a global tuple into a kernel, not a {type(v).__name__}: use a "
            f"tuple{example}",
        )
    if not (callable(v) or _plain_data(v)):
        # an object: numba-cuda freezes only constants (numbers, strings, tuples, arrays) into a
        # kernel
        return _Refused(
            name,
            f"a {type(v).__name__}: a kernel's globals are constants, arrays, modules and "
            "device functions",
        )
    return v


def rebind(
    fn: types.FunctionType, cuda: Any, wrap_device: Callable[[Any], Any]
) -> tuple[dict, dict[str, Any]]:
    """(globals, closure overrides) for running ``fn`` here: ``fn.__globals__`` itself when it needs
    nothing."""
    g = fn.__globals__
    changes = {}
    names = code_names(fn.__code__)
    for name in names:
        if name in g:
            v = g[name]
            r = replacement(v, cuda, wrap_device, name)
            if r is not v:
                changes[name] = r
    for name, typed_builtin in BUILTINS.items():  # min, max, float: typed as numba-cuda types them
        if name in names and name not in g:
            changes[name] = typed_builtin
    for name in names - set(g) - set(BUILTINS) - NUMBA_CUDA_BUILTINS:
        # a builtin the kernel names (co_names holds attribute names too: harmless)
        v = getattr(builtins, name, None)
        if (
            v is not None
            and not (isinstance(v, type) and issubclass(v, BaseException))
            and name not in _NOT_CALLS
        ):
            changes[name] = _Refused(
                name,
                f"the builtin {name}()",
                _NOT_MODELLED_BUILTINS.get(
                    name,
                    f"numba-cuda has no implementation of {name}() in a kernel (it compiles abs,"
                    " bool, complex, divmod, enumerate, float, int, iter, len, max, min, next,"
                    " ord, pow, print, range, round, sum, tuple, zip)",
                ),
            )
    closure = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        r = replacement(v, cuda, wrap_device, name)
        if r is not v:
            closure[name] = r
    if changes:
        g = dict(g)
        g.update(changes)
    return g, closure


# -- numba-cuda freezes a kernel's globals when it compiles it -------------------------------------

_FROZEN: "weakref.WeakKeyDictionary[types.FunctionType, dict]" = weakref.WeakKeyDictionary()
_SCALARS = (bool, int, float, complex, str, np.generic)


def _frozen_value(v: Any) -> Any:
    """The value numba-cuda would compile in (a copy for arrays), or _LIVE for what it keeps by
    reference."""
    if isinstance(v, np.ndarray):
        c = v.copy()
        c.setflags(write=False)  # a global array is a constant in the compiled kernel
        return c
    if isinstance(v, _SCALARS) or (
        isinstance(v, tuple) and all(isinstance(x, _SCALARS) for x in v)
    ):
        return v
    return _LIVE


_LIVE = object()


def signature_key(args: tuple) -> tuple:
    """What numba-cuda compiles a new specialisation for: each argument's type (arrays: dtype and
    rank)."""
    out = []
    for a in args:
        dt = getattr(a, "dtype", None)
        out.append((str(dt), getattr(a, "ndim", 0)) if dt is not None else type(a).__name__)
    return tuple(out)


def freeze(
    fn: types.FunctionType, g: dict, closure: dict[str, Any], key: tuple
) -> tuple[dict, dict[str, Any]]:
    """(globals, closure overrides) with the scalar and array globals of ``fn`` as they were when
    this specialisation was first launched: numba-cuda compiles them in as constants (its
    documentation's test_globals example relaunches after changing them and still sees the old
    values)."""
    per_fn = _FROZEN.setdefault(fn, {})
    snap = per_fn.get(key)
    if snap is None:
        frozen_globals = {}
        for name in code_names(fn.__code__):
            if name in g:
                v = _frozen_value(g[name])
                if v is not _LIVE:
                    frozen_globals[name] = v
        frozen_cells = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                v = closure.get(name, cell.cell_contents)
            except ValueError:
                continue
            frozen = _frozen_value(v)
            if frozen is not _LIVE:
                frozen_cells[name] = frozen
        snap = per_fn[key] = (frozen_globals, frozen_cells)
    frozen_globals, frozen_cells = snap
    if frozen_globals:
        g = dict(g)
        g.update(frozen_globals)
    if frozen_cells:
        closure = {**closure, **frozen_cells}
    return g, closure


def uses_settrace(fn: types.FunctionType) -> bool:
    return compile_function(fn, True).code is None


def current_user_frame(codes: set) -> types.FrameType | None:
    """The innermost frame of a kernel or device function on the running thread's stack."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code in codes:
            return f
        f = f.f_back
    return None
