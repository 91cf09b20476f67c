"""Attacks on lab06_xla_sass from the student edition alone: what a determined student assembles from installed code.

Exercises 3, 6, 7 and 9 were redesigned (issue 20) so that no installed code answers them: breaking_op also asks for
the bytes of the breaker's result, which no course helper reads from an HLO type; mma_flops asks for the operations
of the whole tensor-core family from the shapes in the opcodes' modifiers, which toolchain.Sass lists but never
reads; sass_counts asks for those operations too; fusion_payoff_rows is the inverse of gpucourse.fusion's forward
model. Exercise 2, rows_within, is an inverse (design) question whose forward model XLA may compute (class B): how
many rows fit a byte budget, op by op and fused; XLA's count inside the student's own search is the student's
answer, so no lock is set and no attack asks XLA (the attacks that asked it for the old forward counts are gone
with the old exercise). Exercise 5's launch has too few blocks of rows and asks w and b
read once per block (shared memory, a barrier): §5.2's kernels with the formula changed fail. Exercise 8's cases
include lab 1's coarse clock (2 ms ticks, calls of tens of µs): the course's timer, even reloaded with its clock
pointed at the one given, times one call per run and reads 0 or a whole tick. Each attack below is the closest a
student gets from the edition (the helper called, loaded a second time, or its source pasted) and must score less
than full.

Not listed, by decision (grader/DESIGN.md, "What a student can still do"): the course's text readers
(gpucourse.xla's ENTRY/instruction/opcode readers, gpucourse.interconnect's shape regex, toolchain.Sass(...)
.instructions) used for the layout of a listing in breaking_op and mma_flops, with the exercise's own logic written
around them — which instruction is the breaker and what its own type holds; which tensor-core family and shape an
opcode names and its 2·m·n·k. That submission is the exercise answered by the student (the third attack's scored
full marks that way); the attacks below that let the readers decide more than the layout fail."""

ATTACKS = {
    "fused_bias_gelu": [
        # the eleventh attack: the library's GELU in the inputs' dtype (bfloat16 arithmetic throughout)
        '''def fused_bias_gelu(x, b, r):
    return r + jax.nn.gelu(x + b, approximate=True)
''',
    ],
    "breaking_op": [
        # the course's HLO reader: the opcode alone (the old exercise's answer), filtered by the nearest installed set
        '''def breaking_op(hlo):
    return next(op for op in gc.xla.entry_ops(hlo) if op not in lab.ONE_KERNEL_OPS)
''',
        # the same reader with the bytes read correctly from the breaker's type: only the opcode half is installed,
        # and the structure check's set of one-kernel opcodes lets a copy through (a hidden case puts one first)
        r'''import re

def breaking_op(hlo):
    op = next(op for op in gc.xla.entry_ops(hlo) if op not in lab.ONE_KERNEL_OPS)
    entry = gc.xla.computations(hlo)["ENTRY"]
    line = next(ln for ln in entry.splitlines() if f" {op}(" in ln)
    typ = line.split("=", 1)[1].split(f" {op}(")[0]
    size = {"f32": 4, "s32": 4, "c64": 8, "bf16": 2}
    return op, sum(size[t] * math.prod(int(d) for d in dims.split(",") if d)
                   for t, dims in re.findall(r"([a-z][a-z0-9]*)\[([\d,]*)\]", typ))
''',
        # gpucourse.xla loaded a second time, and the bytes from the result shape of the course's collectives reader
        # (gpucourse.interconnect: its dtype table, its shape regex) on the breaker's line
        '''import importlib.util
import sys
import re

_spec = importlib.util.spec_from_file_location("xla2", gc.xla.__file__)
xla2 = importlib.util.module_from_spec(_spec)
sys.modules["xla2"] = xla2  # its dataclasses look their module up there
_spec.loader.exec_module(xla2)


def breaking_op(hlo):
    op = next(op for op in xla2.entry_ops(hlo) if op not in lab.ONE_KERNEL_OPS)
    entry = xla2.computations(hlo)["ENTRY"]
    line = next(ln for ln in entry.splitlines() if f" {op}(" in ln)
    typ = line.split("=", 1)[1].split(f" {op}(")[0]
    return op, sum(gc.interconnect._DTYPE_BYTES.get(t, 4) * math.prod(int(d) for d in dims.split(",") if d)
                   for t, dims in gc.interconnect._SHAPE.findall(typ))
''',
        # gpucourse.xla's entry_ops and BOOKKEEPING pasted, the result's bytes taken as the parameters' dtype
        '''import re

BOOKKEEPING = ("parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast")
_ENTRY_OP = re.compile(r"^\\s*(?:ROOT\\s+)?%?[\\w.\\-]+\\s*=\\s*(?:\\([^=]*?\\)|\\S+)\\s+([\\w\\-]+)\\(", re.M)


def entry_ops(hlo):
    m = re.search(r"^ENTRY .*?^}", hlo, re.S | re.M)
    return _ENTRY_OP.findall(m.group(0) if m else hlo)


def breaking_op(hlo):
    op = next(op for op in entry_ops(hlo) if op not in BOOKKEEPING)
    m = re.search(r"^ENTRY .*?\\(x\\.1: (\\w+)\\[(\\d+),(\\d+)\\]", hlo, re.M)
    size = {"f32": 4, "bf16": 2}[m.group(1)]
    return op, size * int(m.group(2)) * int(m.group(3))
''',
    ],
    "mma_flops": [
        # the course's Sass counter: HMMA and HGMMA at the course's own kernels' shapes
        '''def mma_flops(sass):
    s = toolchain.Sass(sass)
    return 2 * 16 * 8 * 16 * s.count("HMMA") + 2 * 64 * 8 * 16 * s.count("HGMMA")
''',
        # gpucourse.toolchain loaded a second time; every tensor-core opcode counted, at a 16x8x16 shape each
        '''import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("toolchain2", toolchain.__file__)
toolchain2 = importlib.util.module_from_spec(_spec)
sys.modules["toolchain2"] = toolchain2  # its dataclasses look their module up there
_spec.loader.exec_module(toolchain2)


def mma_flops(sass):
    ops = toolchain2.Sass(sass).opcodes()
    return 4096 * sum(ops[op] for op in ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA"))
''',
        # toolchain.Sass's instruction regex pasted, the variants' shapes read with 'x' only
        '''import re
from collections import Counter

_INSTR = re.compile(r"^\\s*/\\*[0-9a-f]{4,}\\*/\\s+(?:@!?U?P\\w+\\s+)?([A-Z][A-Z0-9_]*(?:\\.[A-Za-z0-9_]+)*)", re.M)


def mma_flops(sass):
    total = 0
    for ins, n in Counter(_INSTR.findall(sass)).items():
        base, shape = (ins.split(".") + [""])[:2]
        if base.endswith("MMA") and "x" in shape:
            a, b, c = (int(v) for v in shape.split("x"))
            total += 2 * a * b * c * n
        elif base.endswith("MMA"):
            total += 4096 * n
    return total
''',
    ],
    "sass_counts": [
        # the course's compile-and-count: FFMA right, the tensor cores as the course's fp16 kernels' shapes
        '''def sass_counts(source, arch="sm_90"):
    s = toolchain.sass_of(source, arch=arch)
    return {"FFMA": s.count("FFMA"), "tensor_flops": 4096 * s.count("HMMA") + 16384 * s.count("HGMMA")}
''',
    ],
    # measure_times is handed its clock and the stand-ins' work shows on that clock only: the course's timers read
    # time.perf_counter and measure microseconds of Python, however they are loaded
    "measure_times": [
        # the course's own timer, called directly
        '''def measure_times(slow, fast, *args, clock):
    return gc.timing.measure(slow, *args).best, gc.timing.measure(fast, *args).best
''',
        # gpucourse/timing.py loaded a second time from its file
        '''import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("gpucourse.my_timing", gc.timing.__file__)
my_timing = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = my_timing
_spec.loader.exec_module(my_timing)


def measure_times(slow, fast, *args, clock):
    return my_timing.measure(slow, *args).median, my_timing.measure(fast, *args).median
''',
        # gc.timing.measure's source pasted into the cell unchanged
        '''import math
import sys
import time

from gpucourse.backend import get_backend
from gpucourse.timing import Timing, block


def measure(
    fn: Callable[..., Any],
    *args: Any,
    warmup: int = 2,
    repeat: int = 15,
    max_seconds: float | None = 5.0,
    sync: bool = True,
    clock: str = "host",
    **kwargs: Any,
) -> Timing:
    """Time ``fn(*args, **kwargs)``: ``warmup`` discarded calls, then ``repeat`` measured ones.

    ``sync=False`` reproduces the classic mistake (the stopwatch stops when the call *returns*) so that the
    course can show how wrong it is. ``max_seconds`` stops repeating early (at least 3 runs) for slow calls.
    ``clock="cuda"`` uses CUDA events on the GPU backend.
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    if clock not in ("host", "cuda"):
        raise ValueError("clock must be 'host' or 'cuda'")
    backend = get_backend()
    if clock == "cuda" and not backend.is_gpu:
        raise ValueError("clock='cuda' needs the GPU backend; use the default host clock on CPU")

    for _ in range(warmup):
        out = fn(*args, **kwargs)
        if sync:
            block(out)

    times: list[float] = []
    started = time.perf_counter()
    for i in range(repeat):
        if clock == "cuda":
            cp = backend.xp
            stream = cp.cuda.get_current_stream()  # the stream fn's work is queued on (`with stream:` selects it)
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(stream)
            out = fn(*args, **kwargs)
            end.record(stream)
            end.synchronize()
            block(out)
            times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)  # ms -> s
        else:
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            if sync:
                block(out)
            times.append(time.perf_counter() - t0)
        if max_seconds is not None and i >= 2 and time.perf_counter() - started > max_seconds:
            break
    if not sync:
        block(out)  # don't leave queued work running into the next measurement
    return Timing(tuple(times), synchronized=sync, clock=clock)


def measure_times(slow, fast, *args, clock):
    return measure(slow, *args, repeat=5).best, measure(fast, *args, repeat=5).best
''',
        # gc.fusion.best_run (§6.3's fastest synchronized run), called directly
        '''def measure_times(slow, fast, *args, clock):
    return gc.fusion.best_run(slow, *args)[0], gc.fusion.best_run(fast, *args)[0]
''',
        # the third attack's (2026-12-06): gpucourse/timing.py loaded a second time with its `time` pointed at the
        # clock given — right on an exact clock; on the coarse clock (2 ms ticks, calls of tens of µs) its one call
        # per measurement reads 0 or a whole tick
        '''import importlib.util
import sys
import types


def measure_times(slow, fast, *args, clock):
    spec = importlib.util.spec_from_file_location("gpucourse._timing_again", gc.timing.__file__)
    again = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = again
    spec.loader.exec_module(again)
    again.time = types.SimpleNamespace(perf_counter=clock)
    return tuple(again.measure(f, *args, warmup=1, repeat=5, max_seconds=None).best for f in (slow, fast))
''',
    ],
    # §5.2's scale_2d (one thread per element) and scale_strided (a grid-stride loop) with the formula changed: the
    # launch has too few blocks of rows for the first, and the second reads w and b once per element, not once per
    # block (the exercise asks them staged in shared memory)
    "scale_bias_relu_kernel": [
        '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    c, r = cuda.grid(2)  # x → column, y → row
    if r < x.shape[0] and c < x.shape[1]:
        out[r, c] = max(x[r, c] * w[c] + b[c], 0.0)
''',
        '''@cuda.jit
def scale_bias_relu_kernel(x, w, b, out):
    c, start = cuda.grid(2)
    if c < x.shape[1]:
        for r in range(start, x.shape[0], cuda.gridsize(2)[1]):
            out[r, c] = max(x[r, c] * w[c] + b[c], 0.0)
''',
    ],
    "fusion_payoff_rows": [
        # the course's forward model, evaluated on one row: a ratio, not a size
        '''def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    F = gc.fusion
    model = F.FusionModel(F.Side(calls[0], row_bytes[0], row_faults[0], 0.0), F.Side(calls[1], row_bytes[1],
                          row_faults[1], 0.0), machine["dispatch"], machine["bandwidth"], machine["fault"])
    terms = model.terms(model.unfused)
    return model.predicted_ratio, max(terms, key=terms.get)
''',
        # the forward model tried one size after another until fusion stops saving the target (runs out of time)
        '''def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    F = gc.fusion
    m = 1
    while True:
        model = F.FusionModel(F.Side(calls[0], (m + 1) * row_bytes[0], (m + 1) * row_faults[0], 0.0),
                              F.Side(calls[1], (m + 1) * row_bytes[1], (m + 1) * row_faults[1], 0.0),
                              machine["dispatch"], machine["bandwidth"], machine["fault"])
        if model.predicted_ratio < target:
            break
        m += 1
    terms = model.terms(model.unfused)
    return m, max(terms, key=terms.get)
''',
    ],
}
