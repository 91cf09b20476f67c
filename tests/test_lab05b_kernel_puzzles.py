"""Lab 5b's puzzles: every budget kind is enforced and its message names the budget and by how much; the diagram
is drawn from the student's own kernel (a wrong kernel gives a different picture); every puzzle's solution passes
its checks within the time budget; on a GPU the same kernels run on the device."""

from __future__ import annotations

import contextlib
import io
import math
import time

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import kernel_diagram
from grader import kernels
from grader.checks import CheckFailure
from grader.labs import lab05b_kernel_puzzles as lab
from tests.grading import wrong_answer_lists

gc.quiet_warnings()
cuda = gc.get_backend().cuda
NS = {"np": np, "math": math, **{k: getattr(lab, k) for k in dir(lab) if k.isupper()}}
WRONG = wrong_answer_lists("lab05b_kernel_puzzles")


def _gid(p) -> str:
    return p.name  # a solution cell's grade_id is its exercise's name


def _wrong(name: str, k: int):
    p = lab.problems[name]
    return kernels.load_kernel(WRONG[_gid(p)][k], name, NS, cuda)


def _solutions() -> dict:
    from grader.benchmark_simt import puzzle_kernels

    return puzzle_kernels(cuda)


def _failure(name: str, fn, hidden: bool = False) -> str:
    with pytest.raises(CheckFailure) as exc, contextlib.redirect_stdout(io.StringIO()):
        lab.problems[name].check(fn, hidden=hidden)
    return str(exc.value)


# (puzzle, k-th wrong answer, words its message must hold): one kernel that breaks each budget kind
BREAKS = [
    ("map_add", 0, ["writes global memory 2 times", "budget is 1 per thread, 1 over"]),
    ("map_add", 1, ["reads global memory 2 times", "budget is 1 per thread, 1 over"]),
    ("dot", 1, ["reads global memory 66 times", "budget is 2 per thread, 64 over"]),
    ("shared_first", 0, ["256 bytes of shared memory per block", "budget is 32 bytes, 224 over"]),
    ("map_blocks_2d", 0, ["32-byte sectors", "the budget is 6", "× over"]),
    ("transpose", 1, ["`out` touched", "sectors", "the budget is 5"]),
    ("row_sum", 0, ["11.0 divergent branches per block", "the budget is 8 (3.0 over)"]),
    ("row_sum", 1, ["SIMT efficiency", "the budget is at least 80%"]),
    ("transpose", 0, ["bank conflicts", "the budget is 1-way", "pad"]),
    ("histogram", 1, ["atomic updates of global `counts` per block", "the budget is 8"]),
    ("histogram", 0, ["data race"]),
    ("block_scan", 0, ["data race"]),
    ("dot", 0, ["barrier divergence"]),
    ("pool3", 1, ["uninitialised"]),
    ("warp_sum", 0, ["inactive lane"]),
]


@pytest.mark.parametrize("name, k, words", BREAKS, ids=[f"{n}-{k}" for n, k, _ in BREAKS])
def test_each_budget_kind_is_enforced_with_a_message_that_says_by_how_much(name, k, words):
    msg = _failure(name, _wrong(name, k))
    for w in words:
        assert w in msg, f"{name} wrong answer {k}: {w!r} not in {msg!r}"


def test_total_writes_budget():
    """A right answer that every thread writes into breaks the whole-launch write budget."""
    @cuda.jit
    def dot(a, b, out):
        t = cuda.threadIdx.x
        s = cuda.shared.array(64, np.float32)
        s[t] = a[t] * b[t] if t < a.size else 0.0
        cuda.syncthreads()
        if t == 0:
            acc = 0.0
            for j in range(64):
                acc += s[j]
            out[0] = acc
            out[0] = acc

    msg = _failure("dot", dot)
    assert "wrote global memory 2 times" in msg and "budget is 1 in total, 1 over" in msg


def test_every_budget_kind_is_stated_in_some_spec():
    specs = "\n".join(p.spec for p in lab.ORDER)
    for words in ("global reads per thread", "global writes per thread", "global writes in total",
                  "shared memory per block", "sectors per warp-wide request", "SIMT efficiency", "divergent branches per block",
                  "bank conflicts",
                  "atomic updates", "no data races, no barrier"):
        assert words in specs, words


def test_every_wrong_answer_fails_visible_or_hidden():
    for p in lab.ORDER:
        for k in range(len(WRONG[_gid(p)])):
            fn = _wrong(p.name, k)
            failed = 0
            for hidden in (False, True):
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        p.check(fn, hidden=hidden)
                except CheckFailure:
                    failed += 1
            assert failed, f"{p.name}: wrong answer {k} passed every check"


def test_solutions_pass_within_the_time_budget():
    from grader.benchmark_simt import CHECK_BUDGET_S

    sols = _solutions()
    assert set(sols) == set(lab.problems) and len(sols) >= 14
    for name, fn in sols.items():
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            lab.problems[name].check(fn)
            lab.problems[name].check(fn, hidden=True)
        # generous: the 2 s target is printed by the benchmark on a quiet machine; this only catches a blow-up
        assert time.perf_counter() - t0 < 5 * CHECK_BUDGET_S, name


def test_hidden_cases_cover_non_multiples_one_element_and_one_block():
    for p in lab.ORDER:
        cases = p.hidden_cases()
        sizes = [np.asarray(c.args[0]).size for c in cases]
        assert 1 in sizes, f"{p.name}: no one-element case"
        grid_block = [(p.launch(c).grid, p.launch(c).block) for c in cases]
        blocks = [np.prod(np.atleast_1d(b)) for _, b in grid_block]
        if p.name in ("map_add", "zip_add"):  # the spec launches ONE block of exactly n threads
            assert blocks == sizes
            continue
        assert any(s % b for s, b in zip(sizes, blocks)), f"{p.name}: every hidden size a multiple of the block"


def test_diagram_of_a_wrong_kernel_differs_from_the_solution():
    sols = _solutions()
    good = kernels.diagram_maps(lab.problems["map_2d"], sols["map_2d"])
    bad = kernels.diagram_maps(lab.problems["map_2d"], _wrong("map_2d", 0))  # guards the column with the rows
    assert (good["out needed"] == kernel_diagram.RIGHT).all()
    # the visible (3, 6) array: columns 3, 4 and 5 of its 3 rows are never written
    assert (bad["out needed"] == kernel_diagram.MISSING).sum() == 9
    assert (bad["out written"] < 0).sum() == 9 and (good["out written"] >= 0).all()
    # the picture names the thread: element (1, 2) of the (3, 6) array is thread (x 2, y 1) = 2 + 1 * 8
    assert good["out written"][1, 2] == 2 + 1 * lab.BLOCK_2D_SMALL[0]
    # uncoalesced but right: same values, a different thread per element
    g2 = kernels.diagram_maps(lab.problems["map_blocks_2d"], sols["map_blocks_2d"])
    b2 = kernels.diagram_maps(lab.problems["map_blocks_2d"], _wrong("map_blocks_2d", 0))
    assert (g2["out needed"] == b2["out needed"]).all() and (g2["a read"] != b2["a read"]).any()


def test_diagram_draws_every_solution_and_stays_quiet_on_a_blank():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, fn in _solutions().items():
        p = lab.problems[name]
        pic = kernels.diagram_picture(p, fn, 0)
        fig = kernel_diagram.draw(pic)
        assert len(fig.axes) == len(pic.panels) >= len(kernels.diagram_maps(p, fn))
        plt.close(fig)

    @cuda.jit
    def blank(a, out):
        raise NotImplementedError()

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        lab.problems["map_add"].diagram(blank)
    assert "not written yet" in buf.getvalue() or "no picture" in buf.getvalue()


@pytest.mark.gpu
def test_every_puzzle_runs_on_the_gpu():
    """On a GPU each check also launches the kernel on the device (numba-cuda) and compares its outputs."""
    for name, fn in _solutions().items():
        with contextlib.redirect_stdout(io.StringIO()) as out:
            lab.problems[name].check(fn, hidden=True)
        assert "and on the GPU" in out.getvalue(), name


def test_padding_the_transpose_tile_changes_its_sass_addressing():
    """What the student changed in the machine code by removing the bank conflict, as the notebook's ungraded
    cell shows it (lab.machine_code: numba-cuda -> PTX -> ptxas -> nvdisasm, sm_90, three kernels in one child):
    the solution's transpose with TILE_PAD = TILE + 1 and = TILE, and its warp_sum. The tile's row stride is the
    multiplier of the shared-memory index: 0x21 (33 floats) padded, 0x20 (32) unpadded; the shuffles are five
    SHFL.DOWN with offsets 16..1."""
    import re

    from gpucourse import toolchain
    from grader.course import ROOT
    from grader.scratch import load_notebook, solution_cells

    if not toolchain.available():
        pytest.skip(f"NVIDIA toolchain wheels missing: {toolchain.describe()}")
    cells = solution_cells(load_notebook(ROOT / "solutions" / "lab05b_kernel_puzzles" / "lab05b_kernel_puzzles.ipynb"))
    code = lab.machine_code(cells[_gid(lab.problems["transpose"])], cells[_gid(lab.problems["warp_sum"])])
    padded, plain = code["transpose, TILE_PAD = TILE + 1"][1], code["transpose, TILE_PAD = TILE"][1]
    assert padded.count("STS") and padded.count("LDS") and padded.count("BAR")
    assert set(re.findall(lab.TILE_STRIDE, padded.text)) == {"0x21"}, padded.excerpt(("STS", "LDS", "IMAD"))
    assert set(re.findall(lab.TILE_STRIDE, plain.text)) == {"0x20"}, plain.excerpt(("STS", "LDS", "IMAD"))
    ptx, shfl = code["warp_sum"]
    assert shfl.variants("SHFL") == {"SHFL.DOWN": 5} and ptx.count("shfl.sync.down.b32") == 5
    offsets = re.findall(r"SHFL\.DOWN PT, R\d+, R\d+, (0x[0-9a-f]+), 0x1f", shfl.text)
    assert sorted(int(o, 16) for o in offsets) == [1, 2, 4, 8, 16]


def test_the_machine_code_cell_compiles_a_kernel_that_names_its_own_constant_and_an_imported_intrinsic():
    """Review r23, finding 1: the compiler's copy of the student's kernel carries the kernel's own int constants and
    the numba.cuda intrinsics it imported by name, as numba-cuda compiling the notebook's kernel would."""
    from numba.cuda import shfl_down_sync

    from gpucourse import toolchain
    from grader.course import ROOT
    from grader.scratch import load_notebook, solution_cells

    if not toolchain.available():
        pytest.skip(f"NVIDIA toolchain wheels missing: {toolchain.describe()}")
    source = """@cuda.jit
def warp_sum(a, out):
    i = cuda.grid(1)
    v = a[i] if i < a.size else np.float32(0)
    offset = 16
    while offset > 0:
        v += shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if i % 32 == 0 and i < a.size:
        out[i // 32] = v
"""
    fn = kernels.load_kernel(source, "warp_sum", {**NS, "FULL_MASK": 0xFFFFFFFF, "shfl_down_sync": shfl_down_sync},
                             cuda)
    with contextlib.redirect_stdout(io.StringIO()):
        lab.problems["warp_sum"].check(fn)
    cells = solution_cells(load_notebook(ROOT / "solutions" / "lab05b_kernel_puzzles" / "lab05b_kernel_puzzles.ipynb"))
    ptx, sass = lab.machine_code(cells[_gid(lab.problems["transpose"])], fn)["warp_sum"]
    assert ptx.count("shfl.sync.down.b32") == 5 and sass.variants("SHFL") == {"SHFL.DOWN": 5}


ROW = lab.ROW_SUM_BLOCK


@cuda.jit
def _row_sum_two_line_body(a, out):  # correct: the same tree as the reference, its add written in two statements
    s = cuda.shared.array(ROW, np.float32)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    s[t] = a[r, t] if t < a.shape[1] else 0.0
    cuda.syncthreads()
    stride = ROW // 2
    while stride > 0:
        if t < stride:
            y = s[t + stride]
            s[t] += y
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[r] = s[0]


def test_a_correct_tree_passes_however_its_add_is_written():
    """The divergence budget counts warp splits, not source lines (kernel review, finding 1)."""
    lab.problems["row_sum"].check(_row_sum_two_line_body)
    lab.problems["row_sum"].check(_row_sum_two_line_body, hidden=True)


@cuda.jit
def _softmax_pad_zero(a, out):  # wrong: lanes past cols hold 0, so the "max" of a row of -1000s is 0
    r, c = cuda.blockIdx.x, cuda.threadIdx.x
    v = a[r, c] if c < a.shape[1] else 0.0
    m = v
    for off in (16, 8, 4, 2, 1):
        m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, off))
    e = math.exp(v - m) if c < a.shape[1] else 0.0
    s = e
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_xor_sync(0xFFFFFFFF, s, off)
    if c < a.shape[1]:
        out[r, c] = e / s


def test_softmax_padding_with_zero_fails_on_a_row_far_below_zero():
    """Kernel review, finding 2: rows of values near -1000 (cols < 32) are among the hidden cases."""
    with pytest.raises(Exception):
        with contextlib.redirect_stdout(io.StringIO()):
            lab.problems["softmax_rows"].check(_softmax_pad_zero, hidden=True)


HISTOGRAM_PLAIN_FLUSH = '''@cuda.jit
def histogram(x, counts):
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    h = cuda.shared.array(HIST_BINS, np.int32)
    if t < HIST_BINS:
        h[t] = 0
    cuda.syncthreads()
    if i < x.size:
        cuda.atomic.add(h, x[i], 1)
    cuda.syncthreads()
    if t < HIST_BINS:
        counts[t] += h[t]
'''


def test_a_non_atomic_flush_is_named_as_such_in_one_block_and_a_race_in_two():
    """Kernel review 5f: with one block `counts[t] += h[t]` races with nothing; it used to surface only as a second
    global read against the reads budget. Now the message names the non-atomic read-add-write; with two blocks the
    executor reports the race between the blocks' flushes."""
    p = lab.problems["histogram"]
    k = kernels.load_kernel(HISTOGRAM_PLAIN_FLUSH, "histogram", NS, cuda)
    one_block = lab.Case((np.arange(lab.HIST_BLOCK, dtype=np.int32) % lab.HIST_BINS,))
    with pytest.raises(CheckFailure, match=r"non-atomic read-add-write .* 1 block nothing else wrote that bin"):
        p.run_case(k, one_block)
    with pytest.raises(CheckFailure, match=r"data race"):
        p.check(k)  # the visible case: 100 elements, 2 blocks


def test_softmax_without_the_max_says_exp_overflowed():
    """The eighth GPU read: the hidden case's large values make exp overflow; the message names it."""
    import math

    from grader.checks import CheckFailure
    from grader.kernels import load_kernel
    from gpucourse import simt

    src = '''@cuda.jit
def softmax_rows(a, out):
    r = cuda.blockIdx.x
    c = cuda.threadIdx.x
    e = math.exp(a[r, c]) if c < a.shape[1] else np.float32(0)
    s = e
    for off in (16, 8, 4, 2, 1):
        s += cuda.shfl_xor_sync(0xFFFFFFFF, s, off)
    if c < a.shape[1]:
        out[r, c] = e / s
'''
    from grader.labs import lab05b_kernel_puzzles as lab

    k = load_kernel(src, "softmax_rows", {"np": np, "math": math}, simt.cuda)
    with pytest.raises(CheckFailure) as info:
        lab.problems["softmax_rows"].check(k, hidden=True)
    assert "NaN or inf where the reference is finite" in str(info.value) and "subtract the row's max" in str(info.value)


def test_budgets_hold_by_kind_whatever_the_arrays_are_named():
    """Issue 22's held-out wrong kernels: the unpadded transpose tile under another name, the arrays renamed, keeps
    its 32-way conflicts and fails visible and hidden; every thread adding into out[0] atomically breaks "one write
    in total"; the verdict from the observation as plain data (the re-check's path) is the same."""
    from grader.pipeline.wire import decode, encode

    renamed = (WRONG[_gid(lab.problems["transpose"])][0].replace("tile", "buf").replace("(a, out)", "(src, dst)")
               .replace("a[", "src[").replace("a.shape", "src.shape").replace("out[", "dst["))
    fn = kernels.load_kernel(renamed, "transpose", NS, cuda)
    for hidden in (False, True):
        msg = _failure("transpose", fn, hidden)
        assert "bank conflicts" in msg and "shared `buf`" in msg and "reads" in msg, msg
    problem, case = lab.problems["transpose"], lab.problems["transpose"].visible[0]
    with pytest.raises(CheckFailure, match="bank conflicts"):
        problem.judge(decode(encode(problem.observe(fn, case))), problem.reference(*case.args), case)

    atomic_dot = kernels.load_kernel('''@cuda.jit
def dot(a, b, out):
    t = cuda.threadIdx.x
    if t < a.size:
        cuda.atomic.add(out, 0, a[t] * b[t])
''', "dot", NS, cuda)
    msg = _failure("dot", atomic_dot)
    assert "of them atomic updates" in msg and "budget is 1 in total" in msg, msg


HISTOGRAM_PLUS_EQUALS = '''@cuda.jit
def histogram(x, counts):
    i = cuda.grid(1)
    if i < x.size:
        counts[x[i]] += 1
'''


@pytest.mark.parametrize("name, source, fix, not_fix", [
    # thread t writes s[t] and reads s[t - d]: the missing barrier between the reads and the writes is the fix
    ("block_scan", None, "cuda.syncthreads() between the write and the read", "atomic"),
    # every thread reads and writes its bin: only an atomic add is right
    ("histogram", HISTOGRAM_PLUS_EQUALS, "use cuda.atomic.add", "syncthreads"),
])
def test_a_race_written_with_plus_equals_gets_the_fix_it_needs(name, source, fix, not_fix):
    """Review r21, finding 1: `s[t] += s[t - d]` is a read-after-write race between neighbours (a barrier fixes it),
    `counts[b] += 1` a read-modify-write of one element by many threads (an atomic does)."""
    fn = _wrong(name, 0) if source is None else kernels.load_kernel(source, name, NS, cuda)  # the corpus' s[t] += s[t - d]
    message = _failure(name, fn)
    hint = message.split("Hint:", 1)[1]
    assert fix in hint and not_fix not in hint, message


def test_the_pictures_headline_is_the_checks_own_failure():
    """Review r21, finding 2: the red line above a picture is the check's first failure on that case (wrong values
    before the budget), and a launch stopped out of bounds says so there."""
    swapped = '''@cuda.jit
def map_blocks_2d(a, out):
    r = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    c = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + 10
'''
    fn = kernels.load_kernel(swapped, "map_blocks_2d", NS, cuda)
    message = _failure("map_blocks_2d", fn)
    pic = kernels.diagram_picture(lab.problems["map_blocks_2d"], fn, 0)
    assert "elements are wrong" in message and pic.problem and pic.problem in message, (pic.problem, message)
    unguarded = '''@cuda.jit
def map_blocks(a, out):
    i = cuda.grid(1)
    out[i] = a[i] + 10
'''
    pic = kernels.diagram_picture(lab.problems["map_blocks"], kernels.load_kernel(unguarded, "map_blocks", NS, cuda))
    assert "is out of bounds" in pic.problem, pic.problem
    assert not kernels.diagram_picture(lab.problems["map_add"], _solutions()["map_add"]).problem


def test_pictures_mark_same_value_races_and_outputs_right_only_by_the_executors_order():
    """Review r20, findings 2 and 4: two blocks storing the same value to one element are marked `=` (still a race
    in CUDA's memory model); a raced counter that came out right here is amber with `!`, and the caption says why."""
    overlapping = '''@cuda.jit
def map_blocks(a, out):
    i = cuda.blockIdx.x + cuda.threadIdx.x
    if i < a.size:
        out[i] = a[i] + 10
'''
    pic = kernels.diagram_picture(lab.problems["map_blocks"], kernels.load_kernel(overlapping, "map_blocks", NS, cuda))
    written = next(p for p in pic.panels if p.title == "out (global): written by")
    assert sum(kernel_diagram.SAME in c.marks for c in written.cells.values()) >= 8
    pic = kernels.diagram_picture(lab.problems["histogram"],
                                  kernels.load_kernel(HISTOGRAM_PLUS_EQUALS, "histogram", NS, cuda))
    answer = next(p for p in pic.panels if p.title.startswith("counts: the answer"))
    lucky = sum(kernel_diagram.RACE in c.marks for c in answer.cells.values())
    assert lucky == lab.HIST_BINS and "right only because the executor runs one thread at a time" in answer.caption
    assert "use cuda.atomic.add" in pic.problem


# (puzzle, a kernel written as a student would, words its failure must hold, visible and hidden): a reduction the
# spec asks of shuffles or a tree, done with atomics instead; a float64 accumulator in a float32 puzzle; the stub
CHEATS = [
    ("warp_sum", """
@cuda.jit
def warp_sum(a, out):
    i = cuda.grid(1)
    if i < a.size:
        cuda.atomic.add(out, i // 32, a[i])
""", ["atomic updates of global `out` per block", "the budget is 0", "warp shuffles or a tree"]),
    ("dot", """
@cuda.jit
def dot(a, b, out):
    acc = cuda.shared.array(DOT_THREADS, np.float32)
    t = cuda.threadIdx.x
    if t == 0:
        acc[0] = 0
    cuda.syncthreads()
    if t < a.size:
        cuda.atomic.add(acc, 0, a[t] * b[t])
    cuda.syncthreads()
    if t == 0:
        out[0] = acc[0]
""", ["atomic updates of shared `acc` per block", "the budget is 0", "not a tree"]),
    ("row_sum", """
@cuda.jit
def row_sum(a, out):
    partial = cuda.shared.array(ROW_SUM_BLOCK, np.float32)
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    if t == 0:
        partial[0] = 0
    cuda.syncthreads()
    if t < a.shape[1]:
        cuda.atomic.add(partial, 0, a[r, t])
    cuda.syncthreads()
    if t == 0:
        out[r] = partial[0]
""", ["atomic updates of shared `partial` per block", "the budget is 0"]),
    ("conv1d", """
@cuda.jit
def conv1d(a, k, out):
    window = cuda.shared.array(CONV_SLOTS, np.float32)
    taps = cuda.shared.array(MAXK, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    window[t] = a[i] if i < a.size else 0
    if t < MAXK - 1:
        j = i + CONV_BLOCK
        window[CONV_BLOCK + t] = a[j] if j < a.size else 0
    if t < MAXK:
        taps[t] = k[t] if t < k.size else 0
    cuda.syncthreads()
    total, j = 0.0, 0  # a Python float: numba-cuda types the sum float64
    while i < a.size and j < k.size:
        total += window[t + j] * taps[j]
        j += 1
    if i < a.size:
        out[i] = total
""", ["float64", "float32 data must be computed in float32", "accumulator"]),
    ("map_add", """
@cuda.jit
def map_add(a, out):
    raise NotImplementedError()
""", ["map_add is not written yet", "replace `raise NotImplementedError()`"]),
]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("name, source, words", CHEATS, ids=[c[0] for c in CHEATS])
def test_a_reduction_by_atomics_a_float64_accumulator_and_the_blank_stub_fail_by_name(name, source, words, hidden):
    fn = kernels.load_kernel(source, name, NS, cuda)
    text = _failure(name, fn, hidden)
    for w in words:
        assert w in text, f"{name} ({'hidden' if hidden else 'visible'}): {w!r} not in {text!r}"


def test_an_idle_thread_that_reads_fails_map_guard():
    """Round-3 read: map_guard's spec says threads with i >= a.size do nothing; one that reads a[i % n] and guards
    only its write now fails, visible and hidden, with the thread named."""
    fn = kernels.load_kernel('''
@cuda.jit
def map_guard(a, out):
    i = cuda.threadIdx.x
    v = a[i % a.size]
    if i < a.size:
        out[i] = v + 10
''', "map_guard", NS, cuda)
    for hidden in (False, True):
        assert "has no element" in _failure("map_guard", fn, hidden) and "guard the read too" in _failure(
            "map_guard", fn, hidden)


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("name, literal, line", [
    ("softmax_rows", "np.float32(-math.inf)", "m = max(m, cuda.shfl_xor_sync(0xFFFFFFFF, m, off))"),
    ("block_scan", "np.float32(0)", "s[t] += v"),
])
def test_float64_literal_joins_that_reach_arithmetic_fail_the_float32_only_puzzles(name, literal, line, hidden):
    """§5 read, round 8: `else -math.inf` (softmax_rows: 31 DFMA, 8 DADD, 6 DMUL in the SASS) and `else 0.0`
    (block_scan: 4 DADD) passed with only a note, while the conversions-only `else 0.0` of dot was refused. A joined
    float32 is now noted where it takes part in arithmetic, and these two puzzles are float32-only like dot: the
    solution with the float literal fails, naming the line of the first float64 arithmetic."""
    from grader.course import ROOT
    from grader.scratch import load_notebook, solution_cells

    cells = solution_cells(load_notebook(ROOT / "solutions" / "lab05b_kernel_puzzles" / "lab05b_kernel_puzzles.ipynb"))
    source = cells[_gid(lab.problems[name])]
    assert literal in source
    python_float = "-math.inf" if "inf" in literal else "0.0"
    fn = kernels.load_kernel(source.replace(literal, python_float), name, NS, cuda)
    msg = _failure(name, fn, hidden)
    assert "float64 operation" in msg and f"(`{line}`)" in msg, msg


@pytest.mark.parametrize("hidden", [False, True])
def test_warp_sum_every_lane_storing_the_sum_is_over_the_write_budget(hidden):
    """§5 read, round 8: with a butterfly (shfl_xor) every lane holds the warp's sum, and all of them storing it to
    out[w] passed (the values agree); the spec says lane 0 writes, and 32 stores of one word are a race under CUDA's
    memory model. One write per warp that owns an element is now a budget, in every check."""

    @cuda.jit
    def warp_sum(a, out):
        i = cuda.grid(1)
        v = a[i] if i < a.size else np.float32(0)
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_xor_sync(0xFFFFFFFF, v, offset)
        if (i // 32) * 32 < a.size:
            out[i // 32] = v

    msg = _failure("warp_sum", warp_sum, hidden)
    assert "for the" in msg and "warps that own elements; the budget is one write per such warp" in msg, msg
    assert "only lane 0 stores" in msg
