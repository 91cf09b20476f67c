"""Grading a kernel: :class:`KernelProblem`, the exercise shape of every ``@cuda.jit`` exercise
(labs 5 and 6).

The student's kernel runs on the course's instrumented executor (``gpucourse.simt``) on every
backend; on a GPU it also runs on the device and must give the same result there. The check reports
the *real* problem first:

1. the kernel could not finish (an out-of-bounds index, an endless loop, a deadlock): the thread,
   the line;
2. synchronisation errors: a ``syncthreads()`` only part of the block reaches, a warp mask naming a
   lane that does not take part (what compute-sanitizer's synccheck reports);
3. data races, with one example and what usually fixes it (racecheck);
4. uses of uninitialised shared, local or device memory (initcheck);
5. only then wrong values ("expected 2.2, got 2.0"), with the dtype when it explains them;
6. the exercise's own requirement on the report (traffic per thread, SIMT efficiency,
   coalescing...).

While the kernel runs, the lab's answers are locked (:meth:`grader.problem.Problem.locked`).
"""

from __future__ import annotations

import re

import linecache
import warnings
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gpucourse import simt
from gpucourse.simt.instrument import python_function

from .checks import CheckFailure, expect_array_close, to_host
from .problem import Case, ObservedProblem

# seconds one instrumented launch may take: an endless loop ends with an error here
LAUNCH_TIME_LIMIT = 10.0


NONFINITE_CAUSE = (
    "an overflow (exp of a large value: subtract the row's max first) or a division by zero"
)


def _why_wrong(
    got: Any, expected: Any, initial: Any, grid: Any, block: Any, written: int | None = None,
    nonfinite: str = NONFINITE_CAUSE,
) -> str:
    """What the wrong elements of an output have in common, when it names the mistake: all of them
    never written (they still hold the output's initial value and the executor saw fewer elements
    stored than the output has), or NaN/inf where the reference is finite (``nonfinite``: its likely
    causes, the exercise's :attr:`KernelProblem.nonfinite_hint` where it has one)."""
    try:
        g, e = np.asarray(to_host(got)), np.asarray(to_host(expected))
        if g.shape != e.shape or g.dtype.kind not in "fc":
            return ""
        wrong = ~np.isclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True)
        if not wrong.any():
            return ""
        if initial is not None:
            init = np.broadcast_to(np.asarray(to_host(initial)), g.shape)
            same = (g == init) | (np.isnan(g) & np.isnan(init))
            if same[wrong].all() and (written is None or written < g.size):
                n = int(wrong.sum())
                still = (f"All {n} wrong elements still hold" if n > 1
                         else "The wrong element still holds")
                return (
                    f". {still}"
                    f" {'their' if n > 1 else 'its'} initial value: no thread stored there (launch:"
                    f" grid {grid}, block {block}) — check each thread's index: the block's offset"
                    " (blockIdx × blockDim), which axis each coordinate of cuda.grid runs along"
                    " (x, the first, follows threadIdx.x and the grid's first dimension), your"
                    " guard, and your loop's bounds"
                )
        if (~np.isfinite(g[wrong])).all() and np.isfinite(e[wrong]).all():
            return (
                f". The wrong elements are NaN or inf where the reference is finite: {nonfinite}"
            )
    except Exception:  # noqa: BLE001 - a hint only: never let it hide the failure itself
        return ""
    return ""


# a float64 output off by at most this relative error: rounding (float32's epsilon is 1.2e-7; a
# sum of n float32 roundings ~ n·eps), not a wrong formula
ROUNDING_RTOL = 1e-4


def _rounding_hint(got: Any, expected: Any, report: Any) -> str:
    """A float64 output wrong only by rounding (every wrong element finite and within
    :data:`ROUNDING_RTOL`): the kernel computed, or stored on the way, in a narrower type — name its
    float32 shared arrays where it has them (as lab 3's checks name a narrower result dtype)."""
    try:
        g, e = np.asarray(to_host(got)), np.asarray(to_host(expected))
        # a float64 output (float64 data): a float32 output of float32 data is meant to round
        if g.shape != e.shape or e.dtype != np.float64 or g.dtype != np.float64:
            return ""
        wrong = ~((g == e) | (np.isnan(g) & np.isnan(e)))
        # an infinite expected value (a log-sum-exp of nothing) is no rounding either
        if not wrong.any() or not (np.isfinite(g[wrong]).all() and np.isfinite(e[wrong]).all()):
            return ""
        rel = np.abs(g[wrong] - e[wrong]) / np.maximum(np.abs(e[wrong]), 1e-30)
        if rel.max() > ROUNDING_RTOL:
            return ""
        spaces, sizes = dict(report.spaces), dict(report.itemsize)
        narrow = [a for a, space in spaces.items() if space == "shared" and sizes.get(a, 8) < 8]
        where = (
            f": your shared array{'s' * (len(narrow) > 1)} {', '.join(f'`{a}`' for a in narrow)}"
            f" hold{'s' * (len(narrow) == 1)} {sizes[narrow[0]]}-byte floats (float32) — declare"
            " it np.float64, like x"
            if narrow
            else ": a float32 value on the way (np.float32(...), a float32 shared or local array)"
            " rounds every partial result — keep the input's dtype, float64"
        )
        return (
            f". Every wrong element is off by at most {rel.max():.1e} of its value: rounding, not"
            f" a wrong formula — the reference computes in float64{where}"
        )
    except Exception:  # noqa: BLE001 - a hint only: never let it hide the failure itself
        return ""


def _initial(args: Any, outputs: Any) -> str:
    """What the example launch's outputs hold before the kernel runs, read from the arrays
    themselves."""
    firsts = set()
    for i in outputs:
        a = np.asarray(args[i])
        if a.dtype.kind == "f" and a.size and np.isnan(a).all():
            firsts.add("NaN")
        elif a.size and (a == a.flat[0]).all():
            firsts.add(a.flat[0].item())
        else:
            return "outputs start with the values shown"
    if firsts == {"NaN"}:
        return "outputs start full of NaN (an element the kernel does not write stays NaN)"
    if len(firsts) == 1:
        value = firsts.pop()
        return "outputs start as zeros" if value == 0 else f"outputs start full of {value:g}"
    return "outputs start with the values shown"


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"<{v.dtype} {tuple(v.shape)}>"
    return repr(v) if not isinstance(v, float) else f"{v:g}"


def _on_gpu() -> bool:
    from gpucourse import gpu_available

    return gpu_available()


def device_run(kernel: Any, grid: Any, block: Any, args: list, outputs: list[int],
               sharedmem: int = 0) -> list[np.ndarray] | None:
    """On a GPU: launch the kernel for real (numba-cuda) and return its outputs; None on CPU."""
    from gpucourse import get_backend

    be = get_backend()
    if not be.is_gpu:
        return None
    dev = [be.to_device(np.array(a)) if isinstance(a, np.ndarray) else a for a in args]
    # the grid is the exercise's, not the student's: numba-cuda's low-occupancy warning (and
    # cuda.core's one-time linker warning) would land on stderr inside a test cell, which nbgrader
    # scores 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel[grid, block, 0, sharedmem](*dev)
        be.sync()
    return [be.to_host(dev[i]) for i in outputs]


def load_kernel(source: str, name: str, namespace: dict, cuda: Any) -> Any:
    """Define ``name`` from a notebook cell's source the way Jupyter does: compiled under a
    cell-like file name with the text in linecache, so the executor reads the kernel's source and
    numbers lines as the cell does."""
    fname = f"/tmp/ipykernel_grader/{name}_{zlib.crc32(source.encode()):08x}.py"
    # mtime None: kept by checkcache
    linecache.cache[fname] = (len(source), None, source.splitlines(True), fname)
    ns = {**namespace, "cuda": cuda}
    exec(compile(source, fname, "exec"), ns)
    return ns[name]


def report_name(kernel: Any, i: int) -> str:
    """The kernel's name for its ``i``-th argument (the parameter name)."""
    code = python_function(kernel).__code__
    names = code.co_varnames[:code.co_argcount]
    return names[i] if i < len(names) else f"argument {i}"


def _s(n: float) -> str:
    """The plural ending for a count: "1 block", "2 blocks"."""
    return "" if n == 1 else "s"


def first_problem(report: simt.KernelReport) -> str | None:
    """The most serious finding of a launch, as one message with a hint; None when there is none."""
    if report.sync_errors:
        more = getattr(report, "sync_error_count", len(report.sync_errors)) - 1
        return str(report.sync_errors[0]) + (f" (and {more} more)" if more else "")
    if report.race_count:
        race = report.races[0]
        n = report.race_count
        return (f"{n} data race{'s' * (n != 1)}: {race}. Hint: {simt.race_hint(race)}")
    if report.uninitialized_count:
        n = report.uninitialized_count
        return (
            f"{n} use{'s' * (n != 1)} of uninitialised memory: {report.uninitialized[0]}. Hint:"
            f" {simt.UNINIT_HINT}"
        )
    return None


def _judge_device(what: str, device: list, names: list[str], expected: tuple) -> None:
    """The GPU's outputs against the expected ones (after the instrumented run passed)."""
    if len(device) != len(expected):
        raise CheckFailure(
            f"{what} on the GPU: {len(device)} outputs came back for {len(expected)} expected"
        )
    for name, got, e in zip(names, device, expected):
        expect_array_close(f"{what} on the GPU → {name}", got, e)


@dataclass(frozen=True)
class Launch:
    """How a kernel exercise launches the student's kernel on one case (GPU-Puzzles' ``CudaProblem``
    holds the same: blocks per grid, threads per block, the arguments)."""

    grid: int | tuple[int, ...]  # blocks in the grid: an int, or (x, y[, z])
    block: int | tuple[int, ...]  # threads per block: an int, or (x, y[, z])
    # the kernel's arguments in order, inputs and outputs (outputs start as zeros or NaN)
    args: list[Any]
    outputs: list[int]  # positions in args of the arrays the kernel writes and the check compares
    # dynamic shared memory per block, bytes (the launch's fourth [ ] parameter)
    shared_bytes: int = 0


@dataclass
class KernelProblem(ObservedProblem):
    """A Problem whose answer is a kernel. ``launch(case)`` gives the :class:`Launch` of a case;
    ``require(report, case, what)`` raises CheckFailure when the instrumented run misses the
    exercise's goal."""

    launch: Callable[[Case], Launch] | None = None
    require: Callable[[simt.KernelReport, Case, str], None] | None = None
    time_limit: float = LAUNCH_TIME_LIMIT
    # float64 values made from float32 ones (numba-cuda's typing, which the executor follows): a
    # failure when set (an exercise whose lesson it is: a float64 accumulator), else a note on the
    # passing line. Not a failure everywhere: NVVM folds a single float64 operation on a float32
    # value and an exact constant, rounded straight back to float32 (`a[i] + 10`), into one FP32
    # instruction — the executor's typing cannot see that, the SASS does (tests/test_simt_typing.py
    # compares the two)
    float32_only: bool = False
    # nonfinite_hint(case, wrong): the likely causes of NaN/inf outputs where the reference is
    # finite (``wrong``: a mask of the failing output's wrong elements), named from the case's data
    nonfinite_hint: Callable[[Case, np.ndarray], str] | None = None

    def accepts(self, fn: Any) -> None:
        try:
            python_function(fn)
        except TypeError:
            raise CheckFailure(
                f"{self.name}: expected a @cuda.jit kernel, got {type(fn).__name__}"
            ) from None

    def passed_note(self, notes: list[str | None], seconds: float) -> str:
        return (f" (instrumented run{', and on the GPU' if _on_gpu() else ''}, {seconds:.1f} s)\n"
                f"  last case: {notes[-1]}")

    # -- observe here, judge there (grader/DESIGN.md) ----------------------------------------------

    def what(self, case: Case) -> str:
        """The launch of ``case`` as the messages name it: ``name[grid, block](<float32 (4,)>,
        ...)``."""
        launch = self.launch(case)
        return (
            f"{self.name}[{launch.grid},"
            f" {launch.block}]({', '.join(_short(a) for a in launch.args)})"
        )

    def _launch(self, fn: Any, case: Case) -> dict[str, Any]:
        """Run ``fn`` on ``case`` on the executor, answers locked: {"outputs": the output arrays,
        "names": their parameter names, "report": the live KernelReport, "error": why the kernel
        could not finish, or None}."""
        launch = self.launch(case)
        grid, block, args, outputs, sharedmem = (
            launch.grid,
            launch.block,
            launch.args,
            launch.outputs,
            launch.shared_bytes,
        )
        what = self.what(case)
        host_args = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
        seen: dict[str, Any] = {
            "outputs": None,
            "names": [report_name(fn, i) for i in outputs],
            "report": None,
            "error": None,
        }
        try:
            # the lab's answers are off limits while the kernel runs
            with self.locked(python_function(fn)):
                report = simt.run(
                    fn, grid, block, *host_args, sharedmem=sharedmem, time_limit=self.time_limit
                )
        except simt.KernelError as exc:
            cause = exc.__cause__
            if isinstance(cause, NotImplementedError) and not str(cause):  # the blank stub
                seen["error"] = (
                    f"{self.name} is not written yet: replace `raise NotImplementedError()` in its"
                    " cell with your kernel, run that cell, then this one"
                )
            else:
                seen["error"] = f"{what} failed: {exc}"
            return seen
        except (simt.NotModelled, TypeError, ValueError) as exc:
            seen["error"] = f"{what}: {exc}"
            return seen
        seen["outputs"], seen["report"] = [host_args[i] for i in outputs], report
        return seen

    def _observation(
        self, fn: Any, case: Case, limit: float | None = None, to_judge: bool = True
    ) -> dict[str, Any]:
        """The live observation, in the kernel where ``fn`` runs (what :meth:`observed` gives the
        check): :meth:`_launch`'s (the executor's report itself), and — where a GPU is here, the
        kernel finished on the executor without a race, barrier divergence or uninitialised use
        (such a kernel may hang a GPU; the judge rejects it anyway), and the observation is to be
        judged — the device's outputs (``"device"``, else None; ``"device_error"``: what the device
        launch raised). The kernel's time limit is :attr:`time_limit`, the executor's."""
        seen = self._launch(fn, case)
        seen["device"] = seen["device_error"] = None
        if to_judge and seen["error"] is None and first_problem(seen["report"]) is None:
            launch = self.launch(case)
            try:
                with self.locked(python_function(fn)):
                    seen["device"] = device_run(
                        fn,
                        launch.grid,
                        launch.block,
                        launch.args,
                        launch.outputs,
                        launch.shared_bytes,
                    )
            except CheckFailure:
                raise
            # a numba-cuda compile error, a CUDA error: said after the executor's verdict
            except Exception as exc:
                seen["device_error"] = f"{type(exc).__name__}: {exc}"
        return seen

    def _after(self, fn: Any, hidden: bool) -> str:
        """The extra check, outside the check's time budget: every launch has the executor's own
        time limit."""
        return self.after(fn, hidden)

    def observe(self, fn: Any, case: Case, limit: float | None = None) -> dict[str, Any]:
        """What the grader needs to judge ``fn`` on ``case``, as plain data (runs where the
        student's code runs): the output arrays, the executor's report
        (:class:`gpucourse.simt.ReportData`), the error if the kernel could not finish, and on a GPU
        the device's outputs. Nothing of the reference is needed here."""
        seen = self._observation(fn, case, limit)
        return {**seen, "report": None if seen["report"] is None else seen["report"].to_data()}

    def judge(self, seen: dict[str, Any], expected: Any, case: Case) -> str:
        """Raise CheckFailure unless the observation ``seen`` (:meth:`observe`'s, decoded; or a live
        one) is right for ``case``: the kernel finished, no synchronisation error, race or
        uninitialised use, every output equal to ``expected`` (the reference's), the exercise's
        requirement met, and the GPU's outputs equal too. Returns what the launch did, for the
        passing line."""
        what = self.what(case)
        if not isinstance(seen, dict):
            raise CheckFailure(f"{what}: no observation of the kernel came back")
        if seen.get("error"):
            raise CheckFailure(str(seen["error"]))
        report = seen.get("report")
        if not hasattr(report, "per_thread"):
            raise CheckFailure(f"{what}: the executor's report did not come back")
        problem = first_problem(report)
        if problem:
            raise CheckFailure(f"{what}: {problem}")
        expected = expected if isinstance(expected, tuple) else (expected,)
        got, names = list(seen.get("outputs") or []), list(seen.get("names") or [])
        if len(got) != len(expected):
            raise CheckFailure(f"{what}: {len(got)} outputs came back for {len(expected)} expected")
        names += [f"output {k}" for k in range(len(names), len(got))]
        launch = self.launch(case)
        grid, block, args, outputs = launch.grid, launch.block, launch.args, launch.outputs
        for k, (name, g, e) in enumerate(zip(names, got, expected)):
            try:
                expect_array_close(f"{what} → {name}", g, e)
            except CheckFailure as exc:
                # the executor's warnings that explain wrong values: a dtype truncation, a negative
                # index that wrapped
                truncated = [w for w in report.warnings if "truncat" in w or "negative index" in w]
                initial = args[outputs[k]] if k < len(outputs) else None
                try:
                    written = report.elements_accessed(name, "w")[0]
                # an output the report does not name: judged on values alone
                except Exception:  # noqa: BLE001
                    written = None
                cause = NONFINITE_CAUSE
                if self.nonfinite_hint is not None:
                    try:
                        wrong = ~np.isclose(np.asarray(to_host(g)), np.asarray(to_host(e)),
                                            rtol=1e-5, atol=1e-6, equal_nan=True)
                        cause = self.nonfinite_hint(case, wrong)
                    except Exception:  # noqa: BLE001 - a hint only: never hide the failure
                        pass
                raise CheckFailure(f"{exc}" + _why_wrong(g, e, initial, grid, block, written,
                                                         cause)
                                   + _rounding_hint(g, e, report)
                                   + (f". Note: {truncated[0]}" if truncated else "")) from None
        if self.require:
            self.require(report, case, what)
        f64 = tuple(getattr(report, "float64_ops", ()))
        if self.float32_only and f64:
            raise CheckFailure(
                f"{what}: {f64[0]} — this exercise's float32 data must be computed in float32: "
                "float64 arithmetic (a float64 accumulator, a Python float argument, a float32"
                " times an int64 index) is a conversion and an FP64 instruction per operation on a"
                " GPU (half the float32 rate on an H100, 1/64 on consumer GPUs)"
            )
        if seen.get("device_error"):
            raise CheckFailure(f"{what} on the GPU raised {seen['device_error']}")
        if seen.get("device") is not None:
            _judge_device(what, seen["device"], names, expected)
        g = report.per_thread("global")
        tpb = int(report.threads_per_block)
        # lanes a block's warps have; the missing ones are never active
        cap = tpb / (32 * -(-tpb // 32))
        capped = (
            f" (blocks of {tpb} threads fill {cap:.1%} of their warps' lanes: the most SIMT"
            " efficiency this launch allows)"
            if cap < 1
            else ""
        )
        budget = getattr(self.require, "budget", None)
        measured = budget.measured(report) if budget is not None else ""
        benign = int(getattr(report, "benign_races", 0))
        races = (
            f"no races that change a value ({benign} unordered write{_s(benign)} stored a value"
            " already there: under CUDA's memory model still a race, whatever the values)"
            if benign
            else "no races"
        )
        atomics = sum(
            report.atomic_updates(a)
            for a, space in dict(report.spaces).items()
            if space == "global"
        )
        return (
            f"{report.n_threads} threads in {report.n_blocks} block{_s(report.n_blocks)}; per"
            f" thread {g['reads']:.2f} global reads, {g['writes']:.2f} global writes"
            + (f" (and {atomics / report.n_threads:.2f} global atomic updates)" if atomics else "")
            + f", {report.per_thread('shared')['reads']:.2f} shared reads; SIMT efficiency"
            f" {report.simt_efficiency:.1%}{capped}; {report.divergent_steps} divergent warp"
            f" step{_s(report.divergent_steps)}"
            + (f"; {measured}" if measured else "")
            + f"; {races}, no synchronisation errors, no uninitialised reads used"
            + "".join(
                f"\n    note (not graded): {op}; unless the compiler folds a single operation with"
                " a constant back to float32, the GPU runs it in FP64"
                for op in f64[:1]
            )
        )

    def show(self) -> None:
        """The spec, then the first visible case as a launch: grid, block and every argument by its
        name (from the spec's ``name(a, b, ...)``), with the dtype and shape of each array and which
        arguments are outputs."""
        import re
        import textwrap

        print(f"Exercise: {self.name}\n")
        print(textwrap.dedent(self.spec).strip())
        launch = self.launch(self.visible[0])
        grid, block, args, outputs = launch.grid, launch.block, launch.args, launch.outputs
        m = re.search(rf"{re.escape(self.name)}\(([^)]*)\)", self.spec)
        names = [n.strip() for n in m.group(1).split(",")] if m else []
        names += [f"argument {i}" for i in range(len(names), len(args))]
        parts = [
            f"{n}={_short(a)}" + (" (output)" if i in outputs else "")
            for i, (n, a) in enumerate(zip(names, args))
        ]
        n_blocks, n_threads = int(np.prod(np.atleast_1d(grid))), int(np.prod(np.atleast_1d(block)))
        print(
            f"\nExample launch: {self.name}[{grid}, {block}]({', '.join(parts)})\n    grid {grid} ="
            f" {n_blocks} block{'s' * (n_blocks != 1)}, block {block} = {n_threads} threads each"
            + (
                f", {launch.shared_bytes} bytes of dynamic shared memory"
                if launch.shared_bytes
                else ""
            )
            + f"; {_initial(args, outputs)}; the checker compares them with the reference"
        )
        if self.float32_only:
            print(
                "Float32 data is computed in float32 here: numba-cuda types a Python float"
                " (`acc = 0.0`, a float argument) as float64, and a float32 with an int64 (an"
                " index) as float64 — FP64 on the GPU for every operation. Write"
                " np.float32(0), np.float32(a), np.float32(r + 1); a kernel that computes with"
                " float64 values made from float32 ones fails this check (a float64 only"
                " converted and stored back, `x if c else 0.0` into a float32 array, is two"
                " conversions at most, not arithmetic: it passes)"
            )

    def diagram(self, fn: Any, case: int = 0) -> None:
        """Draw which thread of which block read and wrote each element, from the executor's log of
        ``fn``."""
        diagram(self, fn, case)

    def run_case(self, fn: Any, case: Case, expected: Any = None) -> simt.KernelReport:
        """One case, judged as the check judges it (:meth:`observed`, then :meth:`judge`: the
        findings in order of seriousness, then values, then the exercise's requirement, then on a
        GPU the device). ``expected``: the outputs (default: the reference's). Returns the
        executor's live report (with its per-access log)."""
        if expected is None:
            expected = self.reference(*case.args, **case.kwargs)
        seen = self.observed(fn, case)
        self.judge(seen, expected, case)
        return seen["report"]


# -- budgets: what a puzzle allows, enforced on the executor's report ------------------------------

@dataclass(frozen=True)
class Budget:
    """A kernel exercise's budget, stated in its spec and enforced on the instrumented run's report.
    Races, barrier divergence and uninitialised reads are always enforced (:func:`first_problem`);
    the rest only when set.

    ``reads``/``writes``: the most global reads/writes any one thread may make; ``total_writes``:
    global writes of the whole launch, atomic updates included; ``shared``: bytes of shared memory
    per block (static + dynamic); ``sectors``: most 32-byte sectors per warp-wide access of any
    global array; ``efficiency``: least SIMT efficiency; ``branches``: most divergent branches per
    block (:attr:`KernelReport.divergent_branches`); ``conflicts``: most ways of bank conflict on
    any shared array; ``atomics`` / ``shared_atomics``: most atomic updates per block of any global
    / shared array. A budget names the kind of memory access it limits, never a variable: the
    student's arrays may have any names, and the same budget holds in the visible check, the hidden
    check and the re-check."""

    reads: int | None = None
    writes: int | None = None
    # most shared-memory reads any one thread makes (a serial loop over the block)
    shared_reads: int | None = None
    total_writes: int | None = None
    shared: int | None = None
    # most 32-byte sectors per warp-wide request, on every global array
    sectors: float | None = None
    efficiency: float | None = None
    # most divergent branches per block (a warp split, once however long its body)
    branches: float | None = None
    conflicts: float | None = None  # most ways of bank conflict, on every shared array
    atomics: int | None = None  # most atomic updates per block, on every global array
    # most atomic updates per block, on every shared array (0: a reduction must be a tree)
    shared_atomics: int | None = None

    def text(self) -> str:
        """The budget as the spec states it."""
        lines = []
        if self.reads is not None:
            lines.append(f"global reads per thread  ≤ {self.reads}")
        if self.writes is not None:
            lines.append(f"global writes per thread ≤ {self.writes}")
        if self.shared_reads is not None:
            lines.append(f"shared reads per thread  ≤ {self.shared_reads}")
        if self.total_writes is not None:
            lines.append(f"global writes in total   ≤ {self.total_writes}")
        if self.shared is not None:
            lines.append(f"shared memory per block  ≤ {self.shared} bytes")
        if self.sectors is not None:
            lines.append(
                f"sectors per warp-wide request on global memory ≤ {self.sectors:g} (coalesced)"
            )
        if self.efficiency is not None:
            lines.append(f"SIMT efficiency          ≥ {self.efficiency:.0%}")
        if self.branches is not None:
            lines.append(
                f"divergent branches per block ≤ {self.branches:g} (a warp split by an if or a"
                " loop)"
            )
        if self.conflicts is not None:
            lines.append(f"bank conflicts on shared memory ≤ {self.conflicts:g}-way")
        if self.atomics is not None:
            lines.append(f"atomic updates of global memory per block ≤ {self.atomics}")
        if self.shared_atomics is not None:
            lines.append(f"atomic updates of shared memory per block ≤ {self.shared_atomics}")
        lines.append(
            "no data races, no barrier a thread skips and runs on past, no read of memory nobody"
            " wrote"
        )
        return "Budget (checked by the executor):\n    " + "\n    ".join(lines)

    def measured(self, r: simt.KernelReport) -> str:
        """What the launch measured for each budget set beyond reads and writes, e.g. "bank
        conflicts 1.0-way (budget ≤ 1)" (the passing line shows the numbers the budget held)."""
        spaces = dict(r.spaces)
        glob = [a for a in r.arrays if spaces.get(a) == "global"]
        shared = [a for a in r.arrays if spaces.get(a) == "shared"]
        out = []
        if self.shared is not None:
            out.append(
                f"shared memory {r.shared_bytes + r.dynamic_shared_bytes} B/block (≤ {self.shared})"
            )
        if self.sectors is not None and glob:
            out.append(
                f"sectors per request {max(r.sectors_per_request(a) for a in glob):.1f} (≤"
                f" {self.sectors:g})"
            )
        if self.branches is not None:
            out.append(
                f"divergent branches {r.divergent_branches / r.n_blocks:.1f}/block (≤"
                f" {self.branches:g})"
            )
        if self.conflicts is not None and shared:
            ways = max(r.bank_conflicts(a, k) for a in shared for k in "rw")
            out.append(f"bank conflicts {ways:.1f}-way (≤ {self.conflicts:g})")
        if self.atomics is not None and glob:
            most = max(r.atomic_updates(a) for a in glob) / r.n_blocks
            out.append(f"global atomics {most:.1f}/block (≤ {self.atomics})")
        if self.shared_atomics is not None and shared:
            most = max(r.atomic_updates(a) for a in shared) / r.n_blocks
            out.append(f"shared atomics {most:.1f}/block (≤ {self.shared_atomics})")
        return ", ".join(out)

    def enforce(self, r: simt.KernelReport, what: str) -> None:
        """Raise CheckFailure naming the first budget the report exceeds, by how much, and what
        usually fixes it."""
        c = r.counts
        tpb = r.threads_per_block
        for col, most, verb, fix in (
            (
                0,
                self.reads,
                "reads",
                "load each input element once into a register (or shared memory) and reuse it",
            ),
            (1, self.writes, "writes", "compute into a register and store the result once"),
        ):
            if most is not None and c[:, col].max() > most:
                t = int(c[:, col].argmax())
                raise CheckFailure(
                    f"{what}: your kernel {verb} global memory {int(c[t, col])} times in one thread"
                    f" (thread {t % tpb} of block {t // tpb}; {c[:, col].mean():.2f} per thread on"
                    f" average); the budget is {most} per thread, {int(c[t, col]) - most} over:"
                    f" {fix}"
                )
        if self.shared_reads is not None and c[:, 2].max() > self.shared_reads:
            t = int(c[:, 2].argmax())
            raise CheckFailure(
                f"{what}: your kernel reads shared memory {int(c[t, 2])} times in one thread"
                f" (thread {t % tpb} of block {t // tpb}); the budget is {self.shared_reads} per"
                f" thread, {int(c[t, 2]) - self.shared_reads} over: one thread walks over the"
                " block's elements (a serial loop, or sum() over a slice); every step of a tree"
                " reads a neighbour or two, and there are log2(block) steps"
            )
        spaces = dict(r.spaces)
        global_arrays = [a for a in r.arrays if spaces.get(a) == "global"]
        shared_arrays = [a for a in r.arrays if spaces.get(a) == "shared"]
        # an atomic update of global memory is a write
        atomic = sum(r.atomic_updates(a) for a in global_arrays)
        if self.total_writes is not None and r.total("global", "w") + atomic > self.total_writes:
            n = r.total("global", "w") + atomic
            raise CheckFailure(
                f"{what}: your kernel wrote global memory {n} times"
                + (f" ({atomic} of them atomic updates)" if atomic else "")
                + f"; the budget is {self.total_writes} in total, {n - self.total_writes} over: let"
                " one thread write the final result"
            )
        shared = r.shared_bytes + r.dynamic_shared_bytes
        if self.shared is not None and shared > self.shared:
            raise CheckFailure(
                f"{what}: your kernel uses {shared} bytes of shared memory per block; the budget is"
                f" {self.shared} bytes, {shared - self.shared} over: size the shared array to what"
                " one block needs"
            )
        for array in global_arrays if self.sectors is not None else ():
            s, most = r.sectors_per_request(array), self.sectors
            if s > most:
                one_d = len(r.arrays.get(array, ())) == 1
                raise CheckFailure(
                    f"{what}: each warp-wide access of `{array}` touched {s:.1f} 32-byte sectors on"
                    f" average; the budget is {most:g} ({s / most:.1f}× over): neighbouring threads"
                    " (threadIdx.x) must access neighbouring addresses"
                    + (
                        ": i = blockIdx.x * blockDim.x + threadIdx.x gives each block a contiguous"
                        " run of blockDim.x elements, lane k the k-th (a numbering such as"
                        " blockIdx.x + threadIdx.x * gridDim.x covers every element too, but puts"
                        " neighbouring lanes gridDim.x elements apart: more sectors, more memory"
                        " traffic for the same data)"
                        if one_d
                        else " (the last, contiguous axis)"
                    )
                )
        if self.efficiency is not None and r.simt_efficiency < self.efficiency:
            # the live report and its data form both carry it
            block, warp, steps, active, *rest = r.busiest_warp
            lanes, narrow = active / max(steps, 1), (rest[0] if rest else 0)
            # most steps by one or two lanes: a loop
            if steps >= 16 and (lanes < 4 or 2 * narrow > steps):
                # a serial loop: the lanes that finished early are idle, not divergent (they exited)
                fix = (
                    f"warp {warp} of block {block} issued {steps} steps with {lanes:.1f} of 32"
                    " lanes active on average: one thread (or a few) loops over the work while the"
                    " rest of its warp has finished. Spread the work over the threads: a tree that"
                    " halves the stride each step"
                )
            else:
                fix = "choose which threads work so that whole warps take the same branch"
            steps_note = (f" ({r.divergent_steps} divergent warp step{_s(r.divergent_steps)})"
                          # 0 when the idle lanes had exited: idle, not divergent
                          if r.divergent_steps else "")
            raise CheckFailure(
                f"{what}: SIMT efficiency {r.simt_efficiency:.1%}; the budget is at least"
                f" {self.efficiency:.0%}{steps_note}: {fix}"
            )
        if self.branches is not None and r.divergent_branches / r.n_blocks > self.branches:
            per_block = r.divergent_branches / r.n_blocks
            raise CheckFailure(
                f"{what}: {per_block:.1f} divergent branches per block (a warp's threads split by"
                f" an if or a loop); the budget is {self.branches:g}"
                f" ({per_block - self.branches:.1f} over): choose which threads work so that whole"
                " warps take the same branch"
            )
        for array in shared_arrays if self.conflicts is not None else ():
            # reads and writes apart: a 32-way read must not hide in an average with conflict-free
            # writes
            ways = {
                kind: r.bank_conflicts(array, k) for kind, k in (("reads", "r"), ("writes", "w"))
            }
            kind, w = max(ways.items(), key=lambda kv: kv[1])
            most = self.conflicts
            if w > most:
                raise CheckFailure(
                    f"{what}: the warp-wide {kind} of shared `{array}` were {w:.1f}-way bank"
                    f" conflicts on average (reads {ways['reads']:.1f}-way, writes"
                    f" {ways['writes']:.1f}-way); the budget is {most:g}-way ({w / most:.1f}×"
                    " over): a column of a 32-wide float32 tile lies in ONE bank; pad each row by"
                    " one element so that a column spreads over all 32 banks"
                )
        for array in global_arrays if self.atomics is not None else ():
            n, most = r.atomic_updates(array), self.atomics
            per_block = n / r.n_blocks
            if per_block > most and most == 0:
                raise CheckFailure(
                    f"{what}: {per_block:.1f} atomic updates of global `{array}` per block; the"
                    " budget is 0: this puzzle combines values with the reduction the spec names"
                    " (warp shuffles or a tree in shared memory), and one thread writes each result"
                    " — cuda.atomic.add serialises the updates, in an order CUDA does not define"
                )
            if per_block > most:
                raise CheckFailure(
                    f"{what}: {per_block:.1f} atomic updates of global `{array}` per block; the"
                    f" budget is {most} ({per_block / most:.1f}× over): every thread hitting the"
                    " same global counters serialises them; count in a shared-memory copy first,"
                    " then add it to global memory once per block"
                )
        for array in shared_arrays if self.shared_atomics is not None else ():
            per_block = r.atomic_updates(array) / r.n_blocks
            if per_block > self.shared_atomics:
                raise CheckFailure(
                    f"{what}: {per_block:.1f} atomic updates of shared `{array}` per block; the"
                    f" budget is {self.shared_atomics}: an atomic add into one shared address is"
                    " not a tree — the block's updates serialise, one after another, in an order"
                    " CUDA does not define (so float sums differ from run to run); halve the stride"
                    " each step, with a barrier between steps"
                )


def not_written(**kernels: Any) -> list[str]:
    """The names of the given kernels that are still their stub (a body that only raises
    NotImplementedError): a notebook cell that compiles the student's kernels says to write them
    first instead of failing on a stub."""
    from gpucourse.simt.instrument import python_function

    return [name for name, k in kernels.items()
            if set(python_function(k).__code__.co_names) <= {"NotImplementedError"}]


def budgeted(budget: Budget, extra: Callable[[simt.KernelReport, Case, str], None] | None = None):
    """A KernelProblem ``require`` that enforces ``budget`` (then ``extra``, the exercise's own
    requirement)."""

    def require(r: simt.KernelReport, case: Case, what: str) -> None:
        budget.enforce(r, what)
        if extra:
            extra(r, case, what)

    require.budget = budget  # the passing line prints what the budget held (Budget.measured)
    return require


def _diagram_run(problem: KernelProblem, fn: Any, k: int | Case,
                 stopped: list[str] | None = None) -> tuple[simt.KernelReport, dict[str, tuple]]:
    """The report of ``fn`` on a visible case (its index, or the Case itself) and its outputs as
    {name: (what the kernel left, the answer)}. A launch the executor stops (an index out of bounds,
    a deadlock) gives the report of what it did until then when ``stopped`` is a list: the reason is
    appended to it."""
    case = k if isinstance(k, Case) else problem.visible[k]
    launch = problem.launch(case)
    args, outputs = launch.args, launch.outputs
    host_args = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    with problem.locked(python_function(fn)):
        try:
            report = simt.run(
                fn,
                launch.grid,
                launch.block,
                *host_args,
                sharedmem=launch.shared_bytes,
                time_limit=problem.time_limit,
            )
        except simt.KernelError as exc:
            cause = exc.__cause__
            if (
                isinstance(cause, NotImplementedError)
                and not str(cause)
                or re.search(r"NotImplementedError: ?$", str(exc).splitlines()[0])
            ):
                # the stub's bare `raise NotImplementedError()`: nothing to draw
                raise NotImplementedError() from exc
            if stopped is None or exc.report is None:
                raise
            report = exc.report
            # the whole first line (a 2-D thread's is long)
            stopped.append(str(exc).splitlines()[0][:600])
    if problem.has_answers():
        expected = problem.reference(*case.args, **case.kwargs)
    else:  # the student edition: the stored expected values of the visible cases
        expected = problem.visible_expected()[
            next(i for i, c in enumerate(problem.visible) if c is case)
        ]
    expected = expected if isinstance(expected, tuple) else (expected,)
    return report, {report_name(fn, i): (host_args[i], e) for i, e in zip(outputs, expected)}


def _diagram_maps(
    problem: KernelProblem, fn: Any, k: int | Case
) -> tuple[simt.KernelReport, dict[str, np.ndarray]]:
    """The report and compact access maps of ``fn`` on a visible case (its index, or the Case
    itself)."""
    from gpucourse import kernel_diagram

    report, outs = _diagram_run(problem, fn, k)
    return report, kernel_diagram.access_maps(report, outs)


def diagram_maps(problem: KernelProblem, fn: Any, case: int = 0) -> dict[str, np.ndarray]:
    """The maps :meth:`KernelProblem.diagram` draws for the ``case``-th visible case (for tests)."""
    return _diagram_maps(problem, fn, case)[1]


def diagram_picture(problem: KernelProblem, fn: Any, case: int | Case = 0) -> Any:
    """The :class:`gpucourse.kernel_diagram.Picture` :meth:`KernelProblem.diagram` draws (plain
    data, for tests)."""
    from gpucourse import kernel_diagram

    stopped: list[str] = []
    report, outs = _diagram_run(problem, fn, case, stopped)
    where = case + 1 if isinstance(case, int) else "?"
    pic = kernel_diagram.picture(
        report, outs, f"{problem.name}: what your kernel did on visible case {where}"
    )
    # the headline is the check's own first failure on this case, in the check's order (a barrier
    # only part of a block reaches, a race, wrong or missing values, then the budget), or the reason
    # the launch stopped
    the_case = case if isinstance(case, Case) else problem.visible[case]
    if stopped:
        pic.problem = stopped[0]
    else:
        seen = {
            "error": None,
            "report": report,
            "outputs": [got for got, _ in outs.values()],
            "names": list(outs),
        }
        try:
            problem.judge(seen, tuple(want for _, want in outs.values()), the_case)
        except CheckFailure as failed:
            what = problem.what(the_case)
            text = str(failed)
            pic.problem = (
                (text[len(what) :] if text.startswith(what) else text).lstrip(" :→").strip()
            )
    pic.notes += [
        (
            "the launch stopped (the red line above): drawn is what the threads did until then"
            if why == pic.problem
            else f"the launch stopped: {why} — drawn: what the threads did until then"
        )
        for why in stopped
    ]
    for why in stopped:  # an index out of bounds, drawn under its array
        hit = re.search(r"(\w+)\[([^\]]*)\] is out of bounds", why)
        panel = next(
            (p for p in pic.panels if hit and p.title.startswith(f"{hit.group(1)} (")), None
        )
        if panel is not None:
            panel.caption = f"OUT OF BOUNDS: {hit.group(0)} ({why.split(':')[0]})"
    return pic


def diagram(problem: KernelProblem, fn: Any, case: int = 0) -> None:
    """Draw what the student's kernel did on the ``case``-th visible case; an unfinished or failing
    kernel is said in one line (never an error: the cell is optional)."""
    import matplotlib.pyplot as plt

    try:
        pic = diagram_picture(problem, fn, case)
    except NotImplementedError:
        print(f"{problem.name}: not written yet — nothing to draw")
        return
    except Exception as exc:  # the check above says what went wrong; the picture is optional
        print(
            f"{problem.name}: no picture ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        )
        return
    from gpucourse import kernel_diagram

    kernel_diagram.draw(pic)
    plt.show()
