"""Mutants of one function: mutmut's node operators (libcst) plus operators for the course's
misconception families.

mutmut (3.8) walks a libcst tree with its ``MutationVisitor`` and applies ``mutation_operators``:
numbers + 1, strings wrapped in "XX", ``True``/``False`` swapped, ``a = b`` → ``a = None``, ``+=`` →
``=``, ``not`` dropped, call arguments set to ``None`` or removed, ``+ − * / // % ** << >> & | ^``
and ``< <= > >= == != and or is in`` swapped for a neighbour, ternaries forced down one arm. It
never runs a pytest session here: we only borrow the visitor and the operators, honour its ``#
pragma: no mutate`` comments, and compile each mutant ourselves.

mutmut has no operator for the mistakes the course's students make most (issue 13's families), so a
few are added, each named after the misconception it models:

- ``swap_call_name``: ``min``↔``max``, ``np.maximum``↔``np.minimum``, ``ceil``↔``floor``,
  ``any``↔``all`` (the wrong extreme, rounding the wrong way);
- ``call_to_argument``: ``min(d, w − d)`` → ``d``, ``abs(x)`` → ``x``, ``math.ceil(x)`` → ``x`` (no
  wrap-around, no clamp, no absolute value, no rounding);
- ``drop_transpose``: ``X.T`` → ``X`` (a forgotten transpose);
- ``swap_operands``: ``A @ B`` → ``B @ A``, also for ``− / // % **`` (the wrong order);
- ``swap_index_pair``: ``a[r, c]`` → ``a[c, r]`` (swapped axes);
- ``swap_unpacking``: ``c, r = cuda.grid(2)`` → ``r, c = …`` (x taken as the row);
- ``drop_call``: a call statement → ``pass`` (a forgotten ``cuda.syncthreads()``, reset, append).
"""

from __future__ import annotations

import difflib
import functools
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import libcst as cst
from libcst.metadata import MetadataWrapper

try:  # mutmut 3.8's node mutation; only the visitor and the operators are used
    from mutmut.mutation.file_mutation import MutationVisitor
    from mutmut.mutation.mutators import mutation_operators as MUTMUT_OPERATORS
    from mutmut.mutation.pragma_handling import IgnoredCode, PragmaVisitor
except ImportError as exc:  # pragma: no cover - the [test] extra installs it
    raise ImportError("mutation testing needs mutmut 3.8 (pip install -e '.[test]')") from exc

# -- operators for the course's misconception families ---------------------------------------------

_SWAP_NAMES = {
    "min": "max",
    "max": "min",
    "minimum": "maximum",
    "maximum": "minimum",
    "ceil": "floor",
    "floor": "ceil",
    "any": "all",
    "all": "any",
}
_TO_ARGUMENT_MANY = {"min", "max", "minimum", "maximum"}  # min(a, b) -> a, -> b
_TO_ARGUMENT_ONE = {"abs", "ceil", "floor", "round"}  # abs(x) -> x
_ORDERED_OPERATORS = (
    cst.MatrixMultiply,
    cst.Subtract,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
)


def _callee(node: cst.Call) -> str | None:
    if isinstance(node.func, cst.Name):
        return node.func.value
    if isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    return None


def _parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` wrapped in parentheses unless it is atomic or already wrapped (precedence survives a
    move)."""
    atomic = (
        cst.Name,
        cst.Attribute,
        cst.Call,
        cst.Subscript,
        cst.BaseNumber,
        cst.BaseString,
        cst.Tuple,
        cst.List,
        cst.Dict,
        cst.Set,
    )
    if isinstance(expr, atomic) or getattr(expr, "lpar", ()):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def swap_call_name(node: cst.Call) -> Iterable[cst.Call]:
    name = _callee(node)
    if name not in _SWAP_NAMES:
        return
    if isinstance(node.func, cst.Name):
        yield node.with_changes(func=node.func.with_changes(value=_SWAP_NAMES[name]))
    else:
        yield node.with_changes(
            func=node.func.with_changes(attr=node.func.attr.with_changes(value=_SWAP_NAMES[name]))
        )


def call_to_argument(node: cst.Call) -> Iterable[cst.BaseExpression]:
    name = _callee(node)
    positional = [a for a in node.args if not a.keyword and not a.star]
    if (
        name in _TO_ARGUMENT_MANY
        and len(positional) >= 2
        or name in _TO_ARGUMENT_ONE
        and len(positional) >= 1
    ):
        for arg in positional if name in _TO_ARGUMENT_MANY else positional[:1]:
            yield _parenthesized(arg.value)


def drop_transpose(node: cst.Attribute) -> Iterable[cst.BaseExpression]:
    if node.attr.value == "T":
        yield node.value


def swap_operands(node: cst.BinaryOperation) -> Iterable[cst.BinaryOperation]:
    if isinstance(node.operator, _ORDERED_OPERATORS):
        yield node.with_changes(left=_parenthesized(node.right), right=_parenthesized(node.left))


def swap_index_pair(node: cst.Subscript) -> Iterable[cst.Subscript]:
    if len(node.slice) == 2:
        a, b = node.slice
        yield node.with_changes(
            slice=[a.with_changes(slice=b.slice), b.with_changes(slice=a.slice)]
        )


def swap_unpacking(node: cst.Assign) -> Iterable[cst.Assign]:
    if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Tuple):
        return
    target = node.targets[0].target
    elements = list(target.elements)
    if len(elements) >= 2 and not any(isinstance(e, cst.StarredElement) for e in elements):
        first, second = elements[0], elements[1]
        elements[0], elements[1] = first.with_changes(value=second.value), second.with_changes(
            value=first.value
        )
        yield node.with_changes(
            targets=[node.targets[0].with_changes(target=target.with_changes(elements=elements))]
        )


def drop_call(node: cst.SimpleStatementLine) -> Iterable[cst.SimpleStatementLine]:
    if (
        len(node.body) == 1
        and isinstance(node.body[0], cst.Expr)
        and isinstance(node.body[0].value, cst.Call)
    ):
        yield node.with_changes(body=[cst.Pass()])


COURSE_OPERATORS: list[tuple[type, Callable[[Any], Iterable[cst.CSTNode]]]] = [
    (cst.Call, swap_call_name),
    (cst.Call, call_to_argument),
    (cst.Attribute, drop_transpose),
    (cst.BinaryOperation, swap_operands),
    (cst.Subscript, swap_index_pair),
    (cst.Assign, swap_unpacking),
    (cst.SimpleStatementLine, drop_call),
]


def _operator_name(fn: Callable) -> str:
    return fn.__name__.removeprefix("operator_")


# -- mutants of one function -----------------------------------------------------------------------

@dataclass(frozen=True)
class FunctionSource:
    """The source of one function as it sits in its file: ``text`` is dedented, decorators included,
    and its first line is line ``first_line`` of ``filename``."""

    qualname: str
    filename: str
    first_line: int
    text: str

    def padded(self, text: str | None = None) -> str:
        """``text`` (default: the original) preceded by blank lines, so compiled line numbers are
        the file's."""
        return "\n" * (self.first_line - 1) + (self.text if text is None else text)


@dataclass(frozen=True)
class Mutant:
    function: str  # qualname of the mutated function
    # position among that function's mutants (stable while the function's source is unchanged)
    index: int
    operator: str
    line: int  # line of the file where the change starts
    original: str  # the changed line(s) before, stripped ("a ⏎ b" when several)
    mutated: str  # the changed line(s) after
    text: str  # the whole mutated function, dedented, decorators included

    @property
    def key(self) -> str:
        return f"{self.function}#{self.index}"

    def describe(self) -> str:
        return f"line {self.line} [{self.operator}]: {self.original}  →  {self.mutated}"


_DEF = re.compile(r"^(async\s+)?def\s", re.M)


def split_decorators(text: str) -> tuple[str, str]:
    """(decorator lines, the function from ``def`` on) of a dedented function source."""
    match = _DEF.search(text)
    if match is None:
        raise ValueError(f"not a function definition:\n{text[:200]}")
    return text[:match.start()], text[match.start():]


def _changed(before: list[str], after: list[str]) -> tuple[int, str, str]:
    """(index of the first changed line in ``before``, the changed lines before, after), lines
    stripped."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        a=before, b=after, autojunk=False
    ).get_opcodes():
        if tag != "equal":
            old = " ⏎ ".join(s.strip() for s in before[i1:i2]) or "(nothing)"
            new = " ⏎ ".join(s.strip() for s in after[j1:j2]) or "(line removed)"
            return i1, old, new
    return 0, "", ""


@functools.lru_cache(maxsize=None)
def mutants(source: FunctionSource, extra: bool = True) -> tuple[list[Mutant], int]:
    """Every mutant of the function (mutmut's operators, plus the course's when ``extra``), in a
    stable order, and how many candidate mutants were dropped because they do not compile."""
    decorators, bare = split_decorators(textwrap.dedent(source.text))
    offset = decorators.count("\n")
    module = cst.parse_module(bare)
    wrapper = MetadataWrapper(module)
    pragmas = PragmaVisitor(source.qualname)
    wrapper.visit(pragmas)
    origin: dict[int, str] = {}

    def named(fn: Callable) -> Callable:
        def operator(node: Any) -> Iterable[cst.CSTNode]:
            for mutated in fn(node):
                origin[id(mutated)] = _operator_name(fn)
                yield mutated

        return operator

    operators = [
        (t, named(fn)) for t, fn in list(MUTMUT_OPERATORS) + (COURSE_OPERATORS if extra else [])
    ]
    visitor = MutationVisitor(
        operators, IgnoredCode(pragmas.no_mutate_lines, pragmas.ignore_node_lines, set())
    )
    wrapper.visit(visitor)
    base = wrapper.module.code
    before = base.splitlines()
    seen = {base}
    out: list[Mutant] = []
    broken = 0
    for mutation in visitor.mutations:
        code = wrapper.module.deep_replace(mutation.original_node, mutation.mutated_node).code
        if code in seen:
            continue
        seen.add(code)
        try:
            compile(code, "<mutant>", "exec")
        except SyntaxError:
            broken += 1
            continue
        i, old, new = _changed(before, code.splitlines())
        out.append(Mutant(source.qualname, len(out), origin.get(id(mutation.mutated_node), "?"),
                          source.first_line + offset + i, old, new, decorators + code))
    return out, broken
