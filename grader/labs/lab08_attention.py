"""Lab 8 — attention, fused: the capstone. The online-softmax update, a fused attention kernel on
the course's executor, its memory traffic, and what attention costs in decoding and in training
memory.

Conventions the specs share (the course notebook, course/08_attention.ipynb, derives them):
- Scores are ``q · k / sqrt(d)``; a masked score is -inf; a row whose every score is masked has the
  output 0 and the log-sum-exp log 0 = -inf (as FlashAttention-3's current kernel stores it;
  FlashAttention-2's non-split kernel stores +inf).
- Bytes are what crosses the device-memory (HBM) boundary: reads and writes of global memory.
- Grouped-query attention: ``heads`` query heads share ``kv_heads`` key/value heads
  (``heads % kv_heads == 0``); ``kv_heads == heads`` is ordinary multi-head attention.

No installed code answers an exercise (issue 20). The course derives only the normaliser's
recurrence (max and sum, no output) and shows only naive attention on the executor and the
traffic's ideal lower bound; it never writes a tiled kernel, nor counts one's traffic, nor the
decode crossover of a whole layer, nor what the backward saves; no library call is modelled inside
a kernel on the executor. JAX's own Pallas attention (``jax.experimental.pallas.ops``): the GPU
``mha`` is a kernel of another shape (its key loop inside one grid step, the whole K in one block),
which exercise 3's checker refuses from the grid and the BlockSpecs; the TPU flash-attention body
can be run under the spec's grid with some glue (the fifteenth attack), so the checker also reads
where the kernel's operations were traced (``pallas_tpu.kernel_files``) and refuses a kernel whose
arithmetic comes from those files. The same body run once, outside any pallas_call, answered
exercise 1, and a copy of the module's source run from another file answered both (the fifteenth
and sixteenth attacks): both checkers record which functions ran (``library_calls``, a profile
hook) and refuse JAX's Pallas-ops functions by file or by content — a function with one of their
opcode sequences (``library_opcodes``), however its constants and names were edited.

This module is the lab's *exercise side* (specs, visible cases, comparisons, kernel budgets: what
students install); the references and hidden-case generators are its answer side,
grader/answers/lab08_attention.py (the instructor's only; grader/DESIGN.md). The visible cases'
expected values ship as data: lab08_attention.expected.json.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import textwrap
from typing import Any

import numpy as np

from ..checks import CheckFailure, expect_array_close, expect_int, expect_tuple
from ..kernels import Budget, KernelProblem, Launch, budgeted
from ..problem import Case, Problem

F32 = np.float32
TILE = 16  # query rows per block and keys per K/V tile of the fused kernel (one thread per row)
HEAD_DIM = 16  # the largest head dimension the kernel handles (its shared and local arrays' size)
# what the fused kernel may hold in shared memory per block: one K and one V tile, float32
# (rows padded by one float allowed: a row of HEAD_DIM floats puts a warp's stores in 2 banks)
SHARED_BYTES = 2 * TILE * (HEAD_DIM + 1) * 4
# what one thread may keep in cuda.local.array: its q row and running output (HEAD_DIM floats each)
# and at most one tile's scores — not a row of the s × s matrix
LOCAL_BYTES = (2 * HEAD_DIM + TILE) * 4


# -- exercise 1: one step of online softmax, with the output ---------------------------------------


def _compare_step(what: str, got: Any, expected: tuple, case: Case) -> None:
    expect_tuple(what, got, "m_new, l_new, acc_new")
    for k, name in enumerate(("m_new (the running max)", "l_new (the running sum)",
                              "acc_new (the running output)")):
        value = np.asarray(got[k], dtype=np.float64) if got[k] is not None else None
        if value is not None and np.isnan(value).any() and not np.isnan(expected[k]).any():
            row = int(np.argwhere(np.isnan(value))[0][0])
            m_row = float(np.asarray(case.args[0])[row])
            if np.isfinite(m_row):  # not the all -inf row: an exp that overflowed (inf / inf)
                raise CheckFailure(
                    f"{what} → {name}: NaN in row {row}, expected {expected[k][row]}: this row's"
                    f" running max is {m_row:g}, so the NaN is an exp that overflowed (exp of more"
                    " than about 709 is inf in float64, and inf / inf or inf - inf is NaN):"
                    " exponentiate differences from the max only, exp(m - m_new) and"
                    " exp(s - m_new), never exp(m) or exp(s) alone"
                )
            raise CheckFailure(
                f"{what} → {name}: NaN in row {row}, expected {expected[k][row]}: a row whose"
                " scores were all -inf so far has m = -inf, and exp(m - m_new) = exp(-inf - (-inf))"
                " is NaN — such a row keeps l = 0 and acc = 0"
            )
        try:
            expect_array_close(f"{what} → {name}", got[k], expected[k], rtol=1e-9)
        except CheckFailure as failure:
            if getattr(got[k], "dtype", None) not in (np.float32, np.float16):
                hint = _step_hint(k, got, expected, _STEP_INPUTS.get(id(case), case.args))
                if hint:
                    raise CheckFailure(f"{failure}. Hint: {hint}") from None
                raise
            raise CheckFailure(
                f"{failure}. Your result is {got[k].dtype}, off by its rounding: the inputs are"
                " float64 and so is the answer (keep float64: np.exp of a float64 array is)"
            ) from None
    for i, arg in enumerate(case.args):
        if not np.array_equal(arg, _STEP_INPUTS.get(id(case), case.args)[i], equal_nan=True):
            raise CheckFailure(f"{what} modified its argument {('m', 'l', 'acc', 's', 'v')[i]} in"
                               " place: return new arrays")


def _step_hint(k: int, got: Any, expected: tuple, args: tuple) -> str:
    """A wrong m_new (k = 0) that fell below the old max; where a wrong l_new (k = 1) or acc_new
    (k = 2) is wrong, said by which rows: those whose
    running max grew (the rescaling of the old sums), those whose block stays below the running max
    (terms taken against the block's own max), or all of acc by l (normalised each step). Read
    from the expected values and the inputs' maxima only; "" when no pattern fits."""
    m, l, acc, s, v = (np.asarray(a, dtype=np.float64) for a in args)
    if k == 0:  # the running max: never below the old one
        try:
            value = np.asarray(got[0], dtype=np.float64)
            if value.shape == m.shape and (value < m).any():
                return ("m_new = max(m, the block's max): the running max never falls below the old"
                        " one")
        except (TypeError, ValueError):
            pass
        return ""
    try:
        value = np.asarray(got[k], dtype=np.float64)
        bad = ~np.isclose(value, expected[k], rtol=1e-9, atol=0.0, equal_nan=True)
    except (TypeError, ValueError):
        return ""
    bad = bad.any(axis=1) if k == 2 and bad.ndim == 2 else bad
    if bad.shape != m.shape or not bad.any():
        return ""
    if k == 2:
        l_new = np.asarray(expected[1], dtype=np.float64)
        scaled = value * np.where(l_new > 0, l_new, 1.0)[:, None]
        if np.allclose(scaled, expected[2], rtol=1e-9, atol=0.0):
            return ("your acc_new times l_new is the expected acc_new: acc is the unnormalised"
                    " running sum, divided by l once after the last block, not in each step")
    rows = ", ".join(map(str, np.flatnonzero(bad)[:6]))
    with np.errstate(invalid="ignore"):
        grew = np.isfinite(m) & (np.asarray(expected[0]) > m)  # the max rose in this block
        below = np.isfinite(m) & (s.max(axis=1) < m)  # the block stays below the running max
    if (bad <= grew).all():
        return (f"wrong exactly on rows whose running max grew in this block (rows {rows}): the"
                " old sums were taken relative to the old max, so they are multiplied by"
                " exp(m - m_new), at most 1, before the block's terms are added")
    if (bad <= below).all():
        return (f"wrong exactly on rows whose block stays below the running max (rows {rows}):"
                " each of the block's terms is exp(s - m_new), relative to the running max, not"
                " to the block's own max")
    return ""


_STEP_INPUTS: dict[int, tuple] = {}


def step_case(m, l, acc, s, v) -> Case:
    """A case of exercise 1, its inputs remembered to catch an update made in place."""
    args = tuple(np.array(a, dtype=np.float64) for a in (m, l, acc, s, v))
    case = Case(args)
    _STEP_INPUTS[id(case)] = tuple(a.copy() for a in args)
    return case


def _jax_attention_ops(files: Any) -> list[str]:
    """The files of ``files`` that are JAX's own attention kernels (jax.experimental.pallas.ops)."""
    return sorted(f for f in files if f"{os.sep}pallas{os.sep}ops{os.sep}" in f)


# a function of JAX's Pallas ops is recognised by its opcode sequence when it has at least this many
# instructions (the flash-attention body has about 400; a helper of a few lines is anyone's)
MIN_OPCODES = 40


def _opcodes(code: Any) -> tuple[str, ...]:
    """A function's instructions without their arguments: the same for a copy whose constants,
    names or compared values were edited (program_id(3) → (2), == → <, float32 → float64)."""
    import dis

    return tuple(i.opname for i in dis.get_instructions(code))


@functools.lru_cache(maxsize=1)
def library_opcodes() -> dict[tuple[str, ...], tuple[str, int]]:
    """Every function of JAX's Pallas ops (jax/experimental/pallas/ops/**.py, compiled here from
    their source, nested functions included) of at least MIN_OPCODES instructions: its opcode
    sequence -> ("file: function", the length of its bytecode)."""
    from pathlib import Path

    from jax.experimental import pallas

    root = Path(pallas.__file__).parent / "ops"
    known: dict[tuple[str, ...], str] = {}
    for path in sorted(root.rglob("*.py")):
        try:
            todo = [compile(path.read_text(encoding="utf-8"), str(path), "exec")]
        except (OSError, SyntaxError, ValueError):
            continue
        while todo:
            code = todo.pop()
            todo += [c for c in code.co_consts if hasattr(c, "co_code")]
            ops = _opcodes(code)
            if code.co_name != "<module>" and len(ops) >= MIN_OPCODES:
                name = f"{path.relative_to(root)}: {code.co_name}"
                known.setdefault(ops, (name, len(code.co_code)))
    return known


def library_calls(fn: Any, *args: Any, result: list | None = None) -> list[str]:
    """JAX's own Pallas-ops functions that ran while ``fn(*args)`` did (in this thread and in
    threads it started), found by file (jax.experimental.pallas.ops) or by content: a function
    whose opcode sequence is one of theirs (:func:`library_opcodes`), wherever its source was
    copied to. A body of JAX's flash attention run outside any pallas_call leaves no traced kernel
    to read, and a copy loaded from another file has other file names, but its code is still
    theirs. A hook the function replaced is reported as the one entry "sys.setprofile"."""
    import threading

    import jax

    codes: set[Any] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            codes.add(frame.f_code)

    # JAX's caches of traced functions (jit's, pallas_call's kernels) would skip the Python that
    # the earlier checks already traced: empty them, so that every function runs again, watched
    jax.clear_caches()
    before = (sys.getprofile(), threading.getprofile())
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        out = fn(*args)
        if result is not None:
            result.append(out)
    except Exception:  # noqa: BLE001 - the values were judged already; only the calls matter here
        pass
    finally:
        replaced = sys.getprofile() is not profile
        sys.setprofile(before[0])
        threading.setprofile(before[1])
    if replaced:
        return ["sys.setprofile"]
    known = library_opcodes()
    # every function that ran, whatever file it names (a code object's co_filename is the
    # student's to set): compared only when its bytecode has the length of one of JAX's
    lengths = {length for _, length in known.values()}
    found = {os.path.basename(f) for f in _jax_attention_ops({c.co_filename for c in codes})}
    for code in codes:
        if len(code.co_code) in lengths:
            match = known.get(_opcodes(code))
            found.update([match[0]] if match else [])
    return sorted(found)


def refuse_library(what: str, library: list[str], yours: str) -> None:
    """Raise CheckFailure when :func:`library_calls` found anything: a replaced call watch, or JAX's
    own Pallas ops (``yours``: what the exercise asks the student to write)."""
    if library == ["sys.setprofile"]:
        raise CheckFailure(
            f"{what}: your code replaced the checker's call watch (sys.setprofile): it cannot tell"
            " whose code computed the result"
        )
    if library:
        raise CheckFailure(
            f"{what}: your code ran JAX's own attention kernels, or a copy of them"
            f" ({'; '.join(library)} in jax.experimental.pallas.ops): this exercise is to write"
            f" {yours} yourself"
        )


def rearranged_step(args: tuple, expected: tuple, rng: np.random.Generator) -> tuple:
    """(args, expected) of a copy of exercise 1's case whose answer follows from the case's own: its
    rows repeated 2-6 times and shuffled, 1-6 masked keys (-inf scores, any values) added and the
    keys shuffled, every score and the running max shifted by a power of two. The new max shifts
    with them; l and acc do not change (every term is a difference from the max). Its shape is
    drawn afresh, so no program compiled beforehand for one shape answers it."""
    m, l, acc, s, v = (np.asarray(a, dtype=np.float64) for a in args)
    copies, masked = int(rng.integers(2, 7)), int(rng.integers(1, 7))
    order = rng.permutation(len(m) * copies)
    keys = rng.permutation(s.shape[1] + masked)
    shift = float(rng.choice([-16.0, 8.0, 32.0]))

    def rows(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a] * copies)[order]

    s_new = np.concatenate([s, np.full((len(m), masked), -np.inf)], axis=1)[:, keys]
    v_new = np.concatenate([v, rng.standard_normal((masked, v.shape[1]))])[keys]
    new_args = (rows(m) + shift, rows(l), rows(acc), rows(s_new) + shift, v_new)
    m_new, l_new, acc_new = (np.asarray(e, dtype=np.float64) for e in expected)
    return new_args, (rows(m_new) + shift, rows(l_new), rows(acc_new))


def _own_update(fn: Any, hidden: bool) -> str:
    """After the values: the update must not run JAX's own flash-attention body, from its file or
    copied (the fifteenth attack ran it for one key block with 30 lines of glue, the sixteenth a
    copy of its source loaded from a temporary file), and what it computes while watched is judged
    too (the eighteenth returned early when it saw the watch): on a rearranged copy of the example
    (:func:`rearranged_step`) whose shape nobody knew in advance."""
    example = ONLINE_STEP.visible[0].args
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    args, expected = rearranged_step(example, ONLINE_STEP.visible_expected()[0], rng)
    case = step_case(*args)  # its inputs remembered: an update made in place shows
    result: list = []
    library = library_calls(fn, *case.args, result=result)
    refuse_library("online_softmax_step", library, "the update")
    masked = args[3].shape[1] - example[3].shape[1]
    what = (f"online_softmax_step on a rearranged copy of the example ({len(args[0])} rows: its"
            f" rows repeated and shuffled, {masked} masked key{'s' * (masked != 1)} added,"
            " scores and max shifted), run under the checker's call watch")
    if not result:
        raise CheckFailure(f"{what}: it raised an exception")
    _compare_step(what, result[0], expected, case)
    return ""


ONLINE_STEP = Problem(
    name="online_softmax_step",
    spec="""
        online_softmax_step(m, l, acc, s, v) -> (m_new, l_new, acc_new): fold one block of keys
        into the running state of FlashAttention's online softmax, for every query row at once.
        m (rows,) is the running max of the scores seen so far (-inf before any), l (rows,) the
        running sum of exp(score - m), acc (rows, d) the running sum of exp(score - m) · v; s
        (rows, bk) holds the new block's scores (-inf where masked) and v (bk, d) its values. The
        new max is the larger of m and the block's max; the old l and acc were summed relative to
        the old max, so they are rescaled by exp(m - m_new) before the block's terms, each
        exp(s - m_new), are added. A row whose every score so far is -inf keeps m = -inf, l = 0,
        acc = 0 (no NaN). After the last block, the attention output is acc / l. Float64 arrays;
        return new arrays and leave the inputs as they are. In the example below, row 0 sees its
        first scores [0, ln 3], row 1 a larger max (2 > 1: rescale by e^-1), row 2 only -inf, row
        3 scores below its max of 3 (no rescale): s = [[0, ln 3], [2, -inf], [-inf, -inf], [1,
        2]], v = [[1, 0], [0, 1]]. The example's values are shown rounded to 3 decimals.
    """,
    visible=[
        # row 0: its first scores; row 1: a larger max (rescale); row 2: nothing but -inf yet;
        # row 3: a block below the running max (the old max stays, its terms are exp(s - m))
        step_case([-np.inf, 1.0, -np.inf, 3.0], [0.0, 1.0, 0.0, 2.0],
                  [[0.0, 0.0], [2.0, 4.0], [0.0, 0.0], [1.0, 1.0]],
                  [[0.0, math.log(3.0)], [2.0, -np.inf], [-np.inf, -np.inf], [1.0, 2.0]],
                  [[1.0, 0.0], [0.0, 1.0]]),
    ],
    compare=_compare_step,
    after=_own_update,
    # the example's (m_new, l_new, acc_new) rounded, so that they print as numbers to check a hand
    # trace against
    shown=lambda value, case: tuple(np.round(np.asarray(x, dtype=np.float64), 3) for x in value),
)


# -- exercise 2: the fused attention kernel --------------------------------------------------------


def _blocks(n: int, b: int) -> int:
    return -(-n // b)


def attention_launch(case: Case) -> Launch:
    """fused_attention[(query tiles, heads), TILE](q, k, v, out, lse, kv_len, causal)."""
    q, k, v, kv_len, causal = case.args
    heads, s, d = q.shape
    out = np.full((heads, s, d), np.nan, F32)  # NaN until written: an unwritten row shows
    lse = np.full((heads, s), np.nan, F32)
    return Launch((_blocks(s, TILE), heads), TILE, [q, k, v, out, lse, kv_len, causal],
                  outputs=[3, 4])


def _only_outputs_written_and_tiles_shared(r, case: Case, what: str) -> None:
    """The s × s matrix never reaches global memory (every global write is an output element,
    once), and K/V come through shared memory (a thread reads kv_len[h] and its query row once and
    one K row and one V row per tile, not every key itself)."""
    q = case.args[0]
    heads, s, d = q.shape
    writes, outputs = r.total("global", "w"), heads * s * (d + 1)
    if writes != outputs:
        arrays = [a for a, space in dict(r.spaces).items() if space == "global"]
        # out and lse are the launch's 4th and 5th global arrays: extra writes there are repeats
        repeats = (len(arrays) == 6
                   and sum(r.array_traffic(a)[3] for a in arrays[3:5]) == writes > outputs)
        why = (" — your extra writes all went to out and lse: an output element written again"
               " (e.g. after every key tile, FlashAttention-1's way), not the s × s matrix; keep"
               " the running output in the thread's own storage and write each element once,"
               " after the last tile" if repeats else
               " — fused attention keeps the scores and probabilities (the s × s matrix) on chip"
               " and writes only the output")
        raise CheckFailure(
            f"{what}: the kernel made {writes:,} global writes; out and lse have {outputs:,}"
            f" elements, each written once{why}"
        )
    if r.local_bytes > LOCAL_BYTES:
        raise CheckFailure(
            f"{what}: your kernel keeps {r.local_bytes:,} bytes of cuda.local.array per thread; the"
            f" budget is {LOCAL_BYTES:,} (its scaled q row and its running output, HEAD_DIM floats"
            f" each, plus at most one tile of {TILE} scores). Local memory is per-thread device"
            " memory: a thread's whole row of scores there is the s × s matrix in device memory,"
            " and an array sized for the sequence overflows when s grows — fold each tile's keys"
            " into the running max, sum and output as they come (exercise 1's update)"
        )
    most = 1 + d + 2 * d * _blocks(s, TILE)  # kv_len[h], its q row, a K row and a V row per tile
    reads = r.per_thread("global")["max_reads"]
    if reads > most:
        raise CheckFailure(
            f"{what}: a thread made {reads:,} global reads; the budget is {most:,} (kv_len[h], its"
            f" own q row of d = {d}, then one K row and one V row of each of the"
            f" {_blocks(s, TILE)} key tiles, which the block's threads load together into shared"
            f" memory and all read from there).{_over_budget(r, case)}"
        )


def _over_budget(r, case: Case) -> str:
    """Which input the extra reads went to: the launch's global inputs in order (q, k, v, then
    kv_len after the two outputs), each against what the whole launch may read of it."""
    q = case.args[0]
    heads, s, d = q.shape
    blocks, threads = _blocks(s, TILE) * heads, r.n_threads
    arrays = [a for a, space in dict(r.spaces).items() if space == "global"]
    if len(arrays) != 6:
        return ""
    allowed = {0: ("q", heads * s * d, "read each query row once, into the thread's own storage"),
               1: ("k", blocks * s * d, "load each key row once per block, into shared memory"),
               2: ("v", blocks * s * d, "load each value row once per block, into shared memory"),
               5: ("kv_len", threads, "read kv_len[h] once per thread, before the key loop")}
    over = [f"{name} ({r.array_traffic(arrays[k])[2]:,} reads where the budget allows {most:,}:"
            f" {how})" for k, (name, most, how) in allowed.items()
            if r.array_traffic(arrays[k])[2] > most]
    return (" Over budget: " + "; ".join(over)) if over else ""


FUSED_ATTENTION = KernelProblem(
    name="fused_attention",
    spec=textwrap.dedent(f"""
        fused_attention(q, k, v, out, lse, kv_len, causal): attention of every head, fused, as one
        kernel launched fused_attention[(ceil(s / TILE), heads), TILE] with TILE = {TILE}. q, k, v
        are float32 arrays (heads, s, d) with d ≤ HEAD_DIM = {HEAD_DIM}; out (heads, s, d) and lse
        (heads, s) are float32 outputs. Thread t of block (x, h) owns query row i = x · TILE + t of
        head h (no output row when i ≥ s: such a thread still loads its key row of every tile and
        reaches every barrier). Key j is masked for that row when j ≥ kv_len[h] (padding: kv_len is
        an int32 array (heads,) of values ≥ 0, possibly 0 or past s), or when causal is nonzero and
        j > i. For its row the thread writes out[h, i] = softmax(scores) @ v[h] with scores = q[h,
        i] · k[h, j] / sqrt(d), and lse[h, i] = the log-sum-exp of the unmasked scores; a row with
        no unmasked key gets out = 0 and lse = -inf. The block walks the keys in tiles of TILE: its
        threads load one tile of K and of V into shared memory (thread t loads key row j0 + t),
        synchronise, each folds the tile into its own running max, sum and output (exercise 1's
        update, one key at a time, in the thread's own float32 storage: scalars and
        cuda.local.array(HEAD_DIM, np.float32), which is local memory when indexed by a run-time
        loop, cached in L1),
        and synchronise again before the next tile (shared memory allows tile rows padded to
        HEAD_DIM + 1 floats, so that the threads' stores k_tile[t, c] fall in different banks). The
        s × s scores never reach global memory: the only global writes are out and lse, each element
        once; a thread's local arrays hold at most {(2 * HEAD_DIM + TILE) * 4} bytes (its q row,
        its running output and one tile of scores: local memory is device memory too); a thread
        reads kv_len[h] and its q row once and, per key tile, one K row and one V row (at most
        1 + d + 2 · d · ceil(s / TILE) global reads). Float32 arithmetic only: a float64 value
        made from float32 ones fails the check.
    """).strip(),
    visible=[],  # set below (needs the launch's arrays)
    compare=lambda *a: None,
    launch=attention_launch,
    require=budgeted(Budget(writes=HEAD_DIM + 1, shared=SHARED_BYTES),
                     _only_outputs_written_and_tiles_shared),
    float32_only=True,
)
FUSED_ATTENTION.spec += "\n" + Budget(writes=HEAD_DIM + 1, shared=SHARED_BYTES).text()


def attention_case(heads: int, s: int, d: int, kv_len: list[int], causal: int,
                   rng: np.random.Generator, scale: float = 1.0) -> Case:
    """A case of exercise 2: q, k, v drawn from ``rng`` (standard normal times ``scale``)."""
    q, k, v = (F32(scale) * rng.standard_normal((heads, s, d)).astype(F32) for _ in range(3))
    return Case((q, k, v, np.array(kv_len, np.int32), int(causal)))


# the case with an empty head and causal masking first: the diagram draws the first visible case
FUSED_ATTENTION.visible = [
    attention_case(2, 18, 4, [18, 0], 1, np.random.default_rng(88)),
    attention_case(1, 20, 4, [20], 0, np.random.default_rng(8)),
]


# -- exercise 3: the same in Pallas ----------------------------------------------------------------


def _compare_pallas(what: str, got: Any, expected: np.ndarray, case: Case) -> None:
    dtype = getattr(got, "dtype", None)
    if str(dtype) != "float32":
        raise CheckFailure(
            f"{what}: expected a float32 result (out_shape q.dtype), got dtype {dtype}"
        )
    try:
        expect_array_close(what, np.asarray(got), expected, rtol=2e-4)
    except CheckFailure as failure:
        order = _grid_order(_CHECKED.pop("fn", None), case)
        values = np.asarray(got, dtype=np.float64)
        if not order and values.shape == np.shape(expected) and np.any(
                ~np.isfinite(values) & np.isfinite(expected)):
            order = (". NaN or inf where the reference is finite: an overflow (exp of a large"
                     " score: keep the running row max in scratch and subtract it, rescaling the"
                     " sum and the accumulator when it grows)")
        raise CheckFailure(f"{failure}{order}") from None


_CHECKED: dict[str, Any] = {}  # the function being checked, for the grid-order diagnosis


def _grid_order(fn: Any, case: Case) -> str:
    """Why the numbers are wrong when the key blocks are not the grid's last axis: the running
    state of one query block is reset and mixed with another's between its key blocks. "" when the
    plan cannot be read or is in order."""
    if fn is None:
        return ""
    try:
        from gpucourse import pallas_tpu

        q, k, v, bq, bk = case.args
        plan = pallas_tpu.plan(lambda a, b, c: fn(a, b, c, bq, bk), q, k, v)
        out = plan.operands[-1]
    except Exception:  # noqa: BLE001 - a hint only
        return ""
    overreach = pallas_tpu.overreach(plan, ("q", "k", "v", "out"))
    if overreach:  # e.g. an index map returning element offsets: interpret mode clamps
        return f". {overreach[0].upper()}{overreach[1:]}"
    if out.consecutive:
        return ""
    return (f". Your grid {plan.grid} visits the {out.distinct} output blocks in {out.changes}"
            " separate runs: the scratch holds one query block's running max, sum and output, so"
            " all the key blocks of one query block must run one after another — the key-block"
            " axis last: grid = (heads, s // bq, s // bk)")


class _PallasProblem(Problem):
    """Keeps the function being checked, so that a wrong result can be diagnosed from its grid."""

    def observed(self, fn: Any, case: Case, limit: float | None = None,
                 to_judge: bool = True) -> Any:
        _CHECKED["fn"] = fn
        return super().observed(fn, case, limit, to_judge)


def _same_when_traced(fn: Any, traced: Any, call: str, shape: tuple, bq: int, bk: int) -> None:
    """The kernel the structure checks read (traced: the function gets tracers) must be the one
    that computes the values (called on NumPy arrays, as the value checks call it): both on the same
    fresh random data, the one through jax.jit, must agree (the eighteenth attack computed its
    values with a library call on NumPy arrays and traced a kernel that computed nothing)."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    data = [rng.standard_normal(shape).astype(F32) for _ in range(3)]
    try:
        concrete = np.asarray(fn(*(a.copy() for a in data), bq, bk), dtype=np.float64)
        jitted = np.asarray(jax.jit(traced)(*map(jnp.asarray, data)), dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - said as a failure of the check
        raise CheckFailure(
            f"{call} on random data raised {exc.__class__.__name__}: {exc}"
        ) from None
    if concrete.shape != jitted.shape or not np.allclose(concrete, jitted, rtol=1e-4, atol=1e-5):
        gap = (float(np.max(np.abs(concrete - jitted))) if concrete.shape == jitted.shape
               else f"shapes {concrete.shape} and {jitted.shape}")
        raise CheckFailure(
            f"{call}: on the same random data your function returns other values when traced by"
            f" jax.jit than when called on NumPy arrays (largest difference {gap}): the kernel"
            " the structure checks read must be the one that computes your result"
        )


def _pallas_structure(fn: Any, hidden: bool) -> str:
    """One pallas_call and nothing computed around it, the grid and BlockSpecs the spec names, the
    output blocks visited in one run each (the key axis last), and float32 scratch for the running
    state of one query block."""
    import jax.numpy as jnp

    from gpucourse import pallas_tpu

    heads, s, d, bq, bk = (2, 128, 32, 32, 64) if hidden else (1, 64, 16, 16, 32)
    q = jnp.zeros((heads, s, d), jnp.float32)
    call = f"pallas_attention(({heads}×{s}×{d}) q, k, v, {bq}, {bk})"

    def traced(q_arg: Any, k_arg: Any, v_arg: Any) -> Any:
        return fn(q_arg, k_arg, v_arg, bq, bk)

    calls = pallas_tpu.pallas_calls(traced, q, q, q)
    if len(calls) != 1:
        raise CheckFailure(f"{call}: expected exactly one pl.pallas_call, found {len(calls)}")
    outside = pallas_tpu.outer_primitives(traced, q, q, q)
    if outside:
        raise CheckFailure(
            f"{call}: outside the kernel your function computes {sorted(outside)}: the scores,"
            " the softmax and the division by the running sum all belong in the kernel"
        )
    library = _jax_attention_ops(pallas_tpu.kernel_files(traced, q, q, q))
    if library:  # JAX's own flash-attention body run under the spec's grid (the 15th attack)
        library = [os.path.basename(f) for f in library]
    else:  # or a copy of its source loaded from another file (the 16th): its code, traced
        import jax

        library = library_calls(jax.make_jaxpr(traced), q, q, q)
    refuse_library(call, library, "the online-softmax update in your kernel")
    _same_when_traced(fn, traced, call, (heads, s, d), bq, bk)
    plan = pallas_tpu.plan(traced, q, q, q)
    want_grid = (heads, s // bq, s // bk)
    if plan.grid != want_grid:
        raise CheckFailure(
            f"{call}: the grid is {plan.grid}; expected (heads, s // bq, s // bk) = {want_grid}:"
            " one step per (head, query block, key block), the key blocks last"
        )
    shapes = [o.block for o in plan.operands]
    want = [(1, bq, d), (1, bk, d), (1, bk, d), (1, bq, d)]
    if shapes != want:
        raise CheckFailure(
            f"{call}: BlockSpec shapes (q, k, v, out): expected {want}, got {shapes}"
        )
    overreach = pallas_tpu.overreach(plan, ("q", "k", "v", "out"))
    if overreach:  # interpret mode clamps the copy; a TPU's DMA would not
        raise CheckFailure(f"{call}: {overreach}")
    if not plan.operands[3].consecutive:
        out = plan.operands[3]
        raise CheckFailure(
            f"{call}: your index maps visit the {out.distinct} output blocks in {out.changes}"
            " separate runs of grid steps; on a TPU an output block is written back when the grid"
            " moves on and never read back: the key-block axis must be the grid's last"
        )
    accumulators = [shape for shape, dtype in plan.scratch
                    if dtype == "float32" and math.prod(shape) == bq * d]
    if not accumulators:
        raise CheckFailure(
            f"{call}: your kernel's scratch buffers are {list(plan.scratch)}; the output"
            f" accumulator of one query block needs its own float32 VMEM buffer of {bq} × {d}"
            " (pltpu.VMEM((bq, d), jnp.float32)) beside the row max and sum: the spec keeps all"
            " three in scratch, and writes the output block once, at the last key block"
        )
    least, most = 4 * bq * d, 4 * (bq * d + 2 * bq * 128)
    if not least <= plan.scratch_bytes <= most:
        raise CheckFailure(
            f"{call}: your kernel's scratch is {plan.scratch_bytes:,} bytes; the running state"
            f" of one query block in float32 — the output accumulator ({bq} × {d}) and the row"
            f" max and sum ({bq} values each, or {bq} × 128 lane-wide) — is {least:,} to"
            f" {most:,} bytes (pltpu.VMEM scratch: it is what carries the softmax from one key"
            " block to the next)"
        )
    return (
        f"\n  grid {plan.grid}, blocks {want}: the BlockSpecs move {plan.hbm_bytes:,} bytes"
        f" between HBM and VMEM (q, k, v and out hold {4 * 4 * heads * s * d:,}: K and V are"
        f" read once per query block); one grid step needs {plan.vmem_bytes:,} bytes of VMEM"
    )


def pallas_case(heads: int, s: int, d: int, bq: int, bk: int, rng: np.random.Generator,
                scale: float = 1.0) -> Case:
    """A case of the Pallas exercise: q scaled by ``scale`` (large logits), k and v standard
    normal."""
    q, k, v = (rng.standard_normal((heads, s, d)).astype(F32) for _ in range(3))
    return Case((q * F32(scale), k, v, bq, bk))


PALLAS_ATTENTION = _PallasProblem(
    name="pallas_attention",
    # the output is float32 (out_shape q.dtype); the reference computes in float64 for its truth
    shown=lambda value, case: np.asarray(value, dtype=case.args[0].dtype),
    spec="""
        pallas_attention(q, k, v, bq, bk) -> out: softmax(q @ kᵀ / sqrt(d)) @ v for every head,
        as ONE Pallas kernel (pl.pallas_call, interpret=True) that streams the keys: q, k, v are
        float32 (heads, s, d), no mask; bq and bk divide s. Use grid = (heads, s // bq, s // bk)
        and blocks q: (1, bq, d), k and v: (1, bk, d), out: (1, bq, d) (or None for the 1: the
        head axis squeezed out of the kernel's Refs), so that step (h, i, j)
        sees query block i and key block j of head h. Keep the running state of the query block
        in float32 VMEM scratch (pltpu.VMEM, after the output's Ref): the row max, the row sum and
        the output accumulator (bq × d); start it at the first key block, fold each key block in
        with exercise 1's update (here never an empty row), and at the last key block write
        out = accumulator / sum. The output is float32 and nothing is computed outside the
        kernel. The checker compares the numbers and reads your grid, BlockSpecs, scratch and
        what your function computes around the kernel.
    """,
    visible=[pallas_case(1, 64, 16, 16, 32, np.random.default_rng(3))],
    compare=_compare_pallas,
    after=_pallas_structure,
)


# -- exercise 4: the fused kernel's bytes ----------------------------------------------------------


def _compare_bytes(what: str, got: Any, expected: int, case: Case) -> None:
    expect_int(f"{what} (bytes)", got, expected,
               hint="count Q once; K and V once per query tile, in key tiles of block_k rows, the"
                    " last one partial, never past s"
               " (causal: up to and including the key tile that holds the block's last row, not"
               " exactly to the diagonal); O once; the float32 log-sum-exp once per row")


FUSED_BYTES = Problem(
    name="fused_bytes",
    spec="""
        fused_bytes(batch, heads, s, d, block_q, block_k, causal, itemsize) -> int: the bytes a
        fused attention forward moves between device memory and the chip, for batch · heads
        independent heads of s queries and s keys of dimension d (no padding). The kernel is
        exercise 2's, generalised: one block per (query tile of block_q rows, head); the block
        reads its query rows once, walks the keys in tiles of block_k rows (the last tile of
        rows or keys may be partial), reading each K and V tile it needs once, and writes its
        output rows (d values each) and one log-sum-exp per row. q, k, v and out hold itemsize
        bytes per value; the log-sum-exp is float32 (4 bytes) whatever itemsize is. Causal: a
        block loads the key tiles from the first up to the tile holding its last query row's
        own key, and none after; not causal: every tile. Count nothing else (no caches).
    """,
    visible=[Case((1, 1, 64, 16, 16, 32, True, 2))],
    compare=_compare_bytes,
)


# -- exercise 5: when does decoding become compute-bound? ------------------------------------------


def _compare_crossover(what: str, got: Any, expected: int | None, case: Case) -> None:
    if expected is None:
        if got is not None:
            raise CheckFailure(
                f"{what}: expected None (no batch makes this decode step compute-bound: each"
                f" sequence brings its own KV cache, so the intensity levels off below the ridge"
                f" point), got {got!r}"
            )
        return
    if got is None:
        raise CheckFailure(f"{what}: expected batch {expected}, got None (a large enough batch"
                           " shares the weights over enough tokens here; if your intensity levels"
                           " off too low, check each sequence's KV cache: kv_heads · head_dim"
                           " values per token for K and for V, not heads · head_dim)")
    expect_int(f"{what} (batch)", got, expected,
               hint="per step: the weights' bytes once, whatever the batch; each sequence's K and V"
               " caches (kv_heads · head_dim values per token each) and its FLOPs (2 per weight,"
               " and 4 · heads · head_dim · context for attention) once per sequence; the smallest"
               " integer batch whose FLOPs / bytes reaches peak_flops / bandwidth")


DECODE_CROSSOVER = Problem(
    name="decode_crossover",
    spec="""
        decode_crossover(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops,
        bandwidth) -> int or None: the smallest batch at which one decode step of one decoder
        layer is compute-bound on an accelerator (its FLOPs per byte at least peak_flops /
        bandwidth), or None if no batch is. The layer has head_dim = d_model // heads,
        projections Wq and Wo (d_model × d_model), Wk and Wv (d_model × kv_heads · head_dim) and
        an MLP of two matrices (d_model × d_ff and d_ff × d_model). A decode step makes one new
        token for each of batch sequences, each with context tokens already in its KV cache. Per
        token, each weight costs 2 FLOPs and attention 2 · 2 · heads · head_dim · context (q · K
        and p · V). Bytes: every weight is read once per step (itemsize each), shared by the
        whole batch; each sequence reads its own cached K and V (context · kv_heads · head_dim
        values each, itemsize each). Ignore activations and the new token's K and V.
        (The shapes are Llama's, whose MLP has three matrices, SwiGLU; this model keeps two. The
        example stores the weights and the KV cache in 1 byte each — 8-bit weights and an 8-bit
        KV cache — against the bf16 peak.)
    """,
    visible=[Case((4096, 32, 8, 14336, 256, 1, 989.4e12, 3.35e12))],
    compare=_compare_crossover,
)


# -- exercise 6: what training saves for attention's backward --------------------------------------


def _compare_context(what: str, got: Any, expected: int, case: Case) -> None:
    near = isinstance(got, (int, np.integer)) and abs(int(got) - expected) <= 1
    hint = ("the longest s whose saved bytes are at most the budget: check s and s + 1, in integers"
            " (a float square root of a budget near 10²⁰ can be one off)" if near else
            "per layer and per (sequence, head): q, k, v and o (s × d values each, itemsize bytes),"
            " plus P (s × s, itemsize) without fusion or one float32 log-sum-exp per row with it;"
            " the longest s whose total is at most the budget")
    expect_int(f"{what} (tokens)", got, expected, hint=hint)


LONGEST_CONTEXT = Problem(
    name="longest_context",
    spec="""
        longest_context(budget, batch, heads, d, layers, itemsize, fused) -> int: the longest
        sequence s for which what attention saves for its backward pass, over all layers, fits
        in budget bytes (0 if not even s = 1 fits). Per layer and per (sequence, head) training
        keeps q, k, v and the output o (s × d values each, itemsize bytes per value; o is the
        output projection's input, and a fused backward reads it for rowsum(dO · O)),
        and besides them: without fusion (fused False) the softmax probabilities P (s × s
        values, itemsize each), from which the backward computes dS; with a fused kernel (fused
        True) only the log-sum-exp of each row (s values, float32: 4 bytes), from which the
        backward recomputes P tile by tile.
        Budgets may be as large as 10²⁰ bytes and the answer must be exact: a float square root
        can be one off there, so check your s (and s + 1) in integers (math.isqrt is exact).
    """,
    visible=[Case((2**30, 1, 16, 64, 4, 2, False))],
    compare=_compare_context,
)


# the exercises in notebook order, each named as its function
ORDER = (ONLINE_STEP, FUSED_ATTENTION, PALLAS_ATTENTION, FUSED_BYTES, DECODE_CROSSOVER,
         LONGEST_CONTEXT)
problems: dict[str, Any] = {p.name: p for p in ORDER}
