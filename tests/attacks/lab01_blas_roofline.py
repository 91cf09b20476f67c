"""Attacks on lab01_blas_roofline from the student edition alone: what a determined student assembles from installed
code.

Every cell runs after the lab's setup cell (numpy as np, gpucourse as gc, the lab). Not listed, on purpose (the
specs say these exercises are about *using* the model, and allow it): max_batch_within and min_batch_compute_bound
by a loop over B with the layer's time (gc.datapath.roofline_time) once the student has counted the layer's FLOPs
and bytes, and min_size_for_fraction by a loop over n with Roofline.fraction once the student has counted each op. Exercises 1, 2\nand 5 are asked backwards (counters → call, budget → length): XLA's cost analysis or §1's counts as the forward model\ninside the student's own search is the exercise answered by the student; the attacks below are the forward models\nthat do not fit (XLA's complex FLOPs and scalar, §1's float32 and square counts), which must not score full.
(The package's gc.tpu.matmul_seconds / matmul_intensity counted a matmul's FLOPs and bytes for any shape: the
seventh independent attack answered the old forward counts and three searches with them, so they are gone.) time_call is
handed its clock (``clock``) and the stand-ins' work shows on that clock only: the course's gc.measure (called,
loaded a second time, pasted) reads time.perf_counter and measures microseconds of Python.
"""

ATTACKS = {
    "axpy_calls": [
        # XLA's cost analysis as the forward model, every dtype tried: XLA counts a complex multiply-add as 2 FLOPs,
        # charges the scalar a, and runs float64 / complex128 as float32 / complex64 unless x64 is on
        '''import jax, jax.numpy as jnp

def axpy_calls(flops, nbytes):
    out = []
    for dtype in ["int8", "float16", "float32", "float64", "complex64", "complex128"]:
        n = flops // 2
        if n < 1:
            continue
        x, a = jax.ShapeDtypeStruct((n,), jnp.dtype(dtype)), jax.ShapeDtypeStruct((), jnp.dtype(dtype))
        c = gc.xla.compiled(lambda a, x, y: a * x + y, a, x, x)
        if int(c.flops) == flops and int(c.bytes_accessed) == nbytes:
            out.append((n, dtype))
    return sorted(out)
''',
        # §1.2's axpy point read backwards: its counts are float32's (2 FLOPs, 12 bytes an element)
        '''def axpy_calls(flops, nbytes):
    n = flops // 2
    return [(n, "float32")] if n >= 1 and 2 * n == flops and 12 * n == nbytes else []
''',
    ],
    "gemv_shapes": [
        # gc.roofline.gemv_op's counts (a square matrix) read backwards
        '''import math

def gemv_shapes(flops, nbytes, dtype):
    n = math.isqrt(flops // 2)
    s = np.dtype(dtype).itemsize
    return [(n, n)] if n >= 1 and 2 * n * n == flops and (n * n + 2 * n) * s == nbytes else []
''',
    ],
    "gemm_k": [
        # §1.1's square_gemm_counts, pasted, searched over k as the side of a square GEMM
        '''def square_gemm_counts(n, dtype):
    s = np.dtype(dtype).itemsize
    return 2 * n**3, 3 * n * n * s


def gemm_k(m, n, flops, nbytes, dtype):
    k = round((flops / 2) ** (1 / 3))
    return (k, False) if square_gemm_counts(k, dtype) == (flops, nbytes) else None
''',
    ],
    "max_batch_within": [
        # the old exercise's answer (Roofline.bound + roofline_time) on §1.3's layer counts (square W, float32 bytes)
        '''def max_batch_within(d_in, d_out, act_dtype, weight_dtype, peak_flops, bandwidth, budget_s):
    roof = gc.roofline.Roofline("r", peak_flops, bandwidth)
    n = d_in
    b = 0
    while gc.datapath.roofline_time(2 * n * n * (b + 1), (n * n + 2 * n * (b + 1)) * 4, roof) <= budget_s:
        b += 1
        if b > 200_000:
            break
    if b == 0:
        return None
    return b, roof.bound(2 * n * n * b / ((n * n + 2 * n * b) * 4))
''',
    ],
    "min_batch_compute_bound": [
        # §1.2's n_ridge search with square_gemm_counts: the square GEMM's side, not the layer's batch
        '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    s = np.dtype(dtype).itemsize
    ridge = gc.roofline.Roofline("r", peak_flops, bandwidth).ridge
    return next((n for n in range(1, 100_001) if 2 * n**3 / (3 * n * n * s) >= ridge), None)
''',
        # §1.3's layer bytes (W square, float32) with the ridge from Roofline
        '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    ridge = gc.roofline.Roofline("r", peak_flops, bandwidth).ridge
    n = d_in
    return next((b for b in range(1, 100_001) if 2 * n * n * b / ((n * n + 2 * n * b) * 4) >= ridge), None)
''',
        # the tenth attack: datapath.break_even as a root finder (a workload function of its own, a GPU of infinite
        # rates): it now takes only its own workloads, by name, on finite machines
        '''def min_batch_compute_bound(d_in, d_out, dtype, peak_flops, bandwidth):
    import math
    from gpucourse.datapath import Workload, Link, break_even
    from gpucourse.roofline import Roofline
    s = np.dtype(dtype).itemsize
    layer = lambda B: Workload("l", 2.0 * B * d_in * d_out * (1 + 1e-12), s * (B * d_in + d_in * d_out + B * d_out), 0.0)
    return break_even(layer, Roofline("m", peak_flops, bandwidth), Roofline("g", math.inf, math.inf),
                      Link("b", bandwidth), 100_000)
''',
    ],
    "longest_chain": [
        # §1.4's XLA counts of the source article's chain, taken as the cost of any three ops and scaled
        '''import jax, jax.numpy as jnp

def longest_chain(n, dtype, arity, budget_bytes):
    x = jax.ShapeDtypeStruct((n,), jnp.dtype(dtype))
    fused = int(gc.xla.compiled(lambda a, b, c: jnp.maximum(a * b + c, 0), x, x, x).bytes_accessed)
    steps = [gc.xla.compiled(lambda a, b: a * b, x, x), gc.xla.compiled(lambda a, b: a + b, x, x),
             gc.xla.compiled(lambda a: jnp.maximum(a, 0), x)]
    per_op = sum(int(s.bytes_accessed) for s in steps) / 3
    return int(budget_bytes // per_op), int(budget_bytes // (fused / 3))
''',
    ],
    "blocked_matmul": [
        # course/07's Pallas blocked matmul (square blocks): block counts by floor division drop the edge tiles
        '''import jax, jax.numpy as jnp
from jax.experimental import pallas as pl

def _kernel(x_ref, y_ref, out_ref):
    @pl.when(pl.program_id(axis=2) == 0)
    def _():
        out_ref[...] = jnp.zeros(out_ref.shape, out_ref.dtype)
    out_ref[...] = out_ref[...] + jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

def blocked_matmul(A, B, tile):
    (m, k), n = A.shape, B.shape[1]
    spec = lambda f: pl.BlockSpec((tile, tile), f)
    out = pl.pallas_call(_kernel, grid=(m // tile, n // tile, k // tile),
                         in_specs=[spec(lambda i, j, s: (i, s)), spec(lambda i, j, s: (s, j))],
                         out_specs=spec(lambda i, j, s: (i, j)),
                         out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), interpret=True)(
        jnp.asarray(np.asarray(A), jnp.float32), jnp.asarray(np.asarray(B), jnp.float32))
    return np.asarray(out).astype(A.dtype)
''',
    ],
    "min_size_for_fraction": [
        # the old exercise's answer, Roofline.fraction of an OpPoint, judged at the size where the op turns
        # compute-bound (Roofline.bound): the wrong inverse
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    roof = gc.roofline.Roofline("r", peak_flops, bandwidth)
    s = np.dtype(dtype).itemsize
    for n in range(1, 100_001):
        flops, nbytes = (2 * n * n, (n * n + 2 * n) * s) if op == "gemv" else (2 * n**3, 3 * n * n * s)
        if roof.bound(flops / nbytes) == "compute":
            return n
    return 100_000
''',
        # Roofline.fraction of a point timed at the roofline's time alone (the overhead left out): 100 % at once
        '''def min_size_for_fraction(op, dtype, peak_flops, bandwidth, overhead_s, fraction):
    roof = gc.roofline.Roofline("r", peak_flops, bandwidth)
    s = np.dtype(dtype).itemsize
    n = 1
    while True:
        flops, nbytes = (2 * n * n, (n * n + 2 * n) * s) if op == "gemv" else (2 * n**3, 3 * n * n * s)
        t = gc.datapath.roofline_time(flops, nbytes, roof)
        point = gc.roofline.OpPoint("op", flops, nbytes, gc.timing.Timing((t,), True, "host"))
        if roof.fraction(point) >= fraction:
            return n
        n += 1
''',
    ],
    "time_call": [
        # the third independent attack (2026-12-06): gpucourse/timing.py loaded a second time with its clock pointed
        # at `clock` — a right timer, one call per measurement: on the coarse clock's cases a call reads 0 or a tick
        '''import importlib.util
import sys
import types


def time_call(fn, *args, clock, repeat=5):
    spec = importlib.util.spec_from_file_location("gpucourse._timing_again", gc.timing.__file__)
    again = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = again
    spec.loader.exec_module(again)
    again.time = types.SimpleNamespace(perf_counter=clock)
    return again.measure(fn, *args, warmup=1, repeat=repeat, max_seconds=None).median
''',
        # the course's own timer, called directly: it reads time.perf_counter, not the clock given
        '''def time_call(fn, *args, clock, repeat=5):
    return gc.measure(fn, *args, warmup=1, repeat=repeat).median
''',
        # gpucourse/timing.py loaded a second time from its file, its measure called (best of the runs)
        '''import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("gpucourse.my_timing", gc.timing.__file__)
my_timing = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = my_timing
_spec.loader.exec_module(my_timing)


def time_call(fn, *args, clock, repeat=5):
    return my_timing.measure(fn, *args, warmup=1, repeat=repeat).best
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


def time_call(fn, *args, clock, repeat=5):
    return measure(fn, *args, warmup=1, repeat=repeat).median
''',
    ],
    "explain_point": [
        # gc.roofline.judge with no noise margin: its strict cut at the cache size, and no peak check for a
        # memory-bound point whose data fit
        '''def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    roof = gc.roofline.Roofline("r", peak_flops, bandwidth)
    point = gc.roofline.OpPoint("op", flops, nbytes, gc.timing.Timing((seconds,), True, "host"), working_set)
    v = gc.roofline.judge(point, roof, cache_bytes, margin=0.0)
    if not v.above:
        return v.bound + "-bound"
    return "cache" if v.bound == "memory" and v.fits_in_cache else "impossible"
''',
        # the same module loaded a second time from its file
        '''import importlib.util, sys
_spec = importlib.util.spec_from_file_location("gpucourse.roofline_again", gc.roofline.__file__)
_again = importlib.util.module_from_spec(_spec)
sys.modules["gpucourse.roofline_again"] = _again
_spec.loader.exec_module(_again)

def explain_point(flops, nbytes, seconds, peak_flops, bandwidth, working_set, cache_bytes):
    roof = _again.Roofline("r", peak_flops, bandwidth)
    point = _again.OpPoint("op", flops, nbytes, gc.timing.Timing((seconds,), True, "host"), working_set)
    v = _again.judge(point, roof, cache_bytes, margin=0.0)
    if not v.above:
        return v.bound + "-bound"
    return "cache" if v.bound == "memory" and v.fits_in_cache else "impossible"
''',
    ],
}
