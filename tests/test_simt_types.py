"""What numba-cuda refuses to compile, the executor refuses to run (review of the executor, findings 3 and 4).

Sources (NVIDIA/numba-cuda, numba_cuda/numba/cuda/): cudadecl.py types the atomics on fixed dtype sets
(all_numba_types for add/sub/max/min/nanmax/nanmin, integer_numba_types for and_/or_/xor/exch/cas,
unsigned_int_numba_types for inc/dec); intrinsics.py's _syncthreads_predicate accepts an integer predicate only,
shfl_sync_intrinsic "only supports 32- and 64-bit ints and floats", vote_sync_intrinsic an integer or bool.
A kernel that runs here must compile there: otherwise the executor stops with a TypeError naming the line.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpucourse import simt
from gpucourse.simt.errors import NotModelled
from tests.simt_corpus import typing_cases as T

cuda = simt.cuda


@cuda.jit
def count_up(c, out):
    out[cuda.threadIdx.x] = cuda.atomic.inc(c, 0, 5)  # a counter that wraps after 5


def test_atomic_inc_runs_on_uint32_and_wraps():
    c = np.zeros(1, np.uint32)
    out = np.zeros(8, np.uint32)
    simt.run(count_up, 1, 8, c, out)
    assert sorted(out.tolist()) == [0, 0, 1, 1, 2, 3, 4, 5] and c[0] == 2  # old values 0..5, then 0, 1; now 2


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_atomic_inc_on_a_signed_or_float_array_does_not_compile(dtype):
    c = np.zeros(1, dtype)
    with pytest.raises(simt.KernelError, match=r"atomic.inc on an? \w+ array: numba-cuda supports it on uint32, uint64"):
        simt.run(count_up, 1, 8, c, np.zeros(8, dtype))


@cuda.jit
def add_one(c):
    cuda.atomic.add(c, 0, 1)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64])
def test_atomic_add_runs_on_numba_cudas_dtypes(dtype):
    c = np.zeros(1, dtype)
    simt.run(add_one, 1, 8, c)
    assert c[0] == 8


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.float16])
def test_atomic_add_on_other_dtypes_does_not_compile(dtype):
    with pytest.raises(simt.KernelError, match="atomic.add on .* array: numba-cuda supports it on int32, uint32"):
        simt.run(add_one, 1, 8, np.zeros(1, dtype))


def test_bitwise_atomics_need_integers():
    @cuda.jit
    def k(c):
        cuda.atomic.or_(c, 0, 1)
    with pytest.raises(simt.KernelError, match="atomic.or_ on a float32 array"):
        simt.run(k, 1, 2, np.zeros(1, np.float32))


@cuda.jit
def count_positive(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.syncthreads_count(x[t])


@cuda.jit
def count_bool(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.syncthreads_count(x[t] > 0)


def test_syncthreads_count_takes_an_integer_predicate():
    x = np.array([0, 3, 0, 1, 7, 0, 0, 2], np.int32)  # numba-cuda's test_sync passes an int32 array
    out = np.zeros(8, np.int32)
    simt.run(count_positive, 1, 8, x, out)
    assert out.tolist() == [4] * 8
    with pytest.raises(simt.KernelError, match="syncthreads_count: numba-cuda takes an integer predicate, got bool"):
        simt.run(count_bool, 1, 8, x, out)


@cuda.jit
def shuffle(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_sync(0xFFFFFFFF, x[t], 0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_shuffles_take_32_and_64_bit_ints_and_floats(dtype):
    x = np.arange(5, 37).astype(dtype)
    out = np.zeros(32, dtype)
    simt.run(shuffle, 1, 32, x, out)
    assert (out == 5).all()


@pytest.mark.parametrize("dtype", [np.uint32, np.int16, np.float16, np.bool_])
def test_shuffling_other_types_does_not_compile(dtype):
    x = np.ones(32, dtype)
    with pytest.raises(simt.KernelError, match="numba-cuda shuffles int32, int64, float32 and float64 values only"):
        simt.run(shuffle, 1, 32, x, np.zeros(32, dtype))


def test_a_vote_takes_an_integer_or_bool_not_a_float():
    @cuda.jit
    def k(x, out):
        t = cuda.threadIdx.x
        out[t] = cuda.ballot_sync(0xFFFFFFFF, x[t])
    out = np.zeros(32, np.int64)
    simt.run(k, 1, 32, (np.arange(32) % 2).astype(np.int32), out)
    assert out[0] == np.uint32(0xAAAAAAAA).view(np.int32)
    with pytest.raises(simt.KernelError, match="ballot_sync: the predicate must be an integer or a bool"):
        simt.run(k, 1, 32, np.ones(32, np.float32), out)


N_CONST = 32


@cuda.jit
def shape_from_argument(out, n):
    s = cuda.shared.array(n, np.float32)
    s[cuda.threadIdx.x] = 1.0
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]


@cuda.jit
def shape_from_block(out):
    s = cuda.shared.array(cuda.blockDim.x, np.float32)
    s[cuda.threadIdx.x] = 1.0
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]


@cuda.jit
def local_from_shape(a, out):
    acc = cuda.local.array(a.shape[0], np.float32)
    acc[0] = a[0]
    out[0] = acc[0]


@pytest.mark.parametrize("kernel, args, what", [
    (shape_from_argument, (np.zeros(32, np.float32), 32), "cuda.shared.array uses the kernel argument `n`"),
    (shape_from_block, (np.zeros(32, np.float32),), "cuda.shared.array uses `blockDim`"),
    (local_from_shape, (np.ones(32, np.float32), np.zeros(1, np.float32)),
     "cuda.local.array uses the kernel argument `a`"),
])
def test_an_array_shape_known_only_at_run_time_does_not_compile(kernel, args, what):
    with pytest.raises(simt.KernelError, match=f"(?s){what}.*numba-cuda needs a compile-time constant"):
        simt.run(kernel, 1, 32, *args)


def test_constant_shapes_and_dynamic_shared_memory_run():
    tile = 4

    @cuda.jit
    def k(out):
        n = 8  # a local literal: numba-cuda types it as a constant
        s = cuda.shared.array((N_CONST, tile), np.float32)  # a global and a closure constant
        loc = cuda.local.array(n, np.int32)
        dyn = cuda.shared.array(0, np.float32)
        t = cuda.threadIdx.x
        s[t, 0] = 1.0
        loc[0] = 2
        dyn[t] = 3.0
        out[t] = s[t, 0] + loc[0] + dyn[t]

    out = np.zeros(32, np.float32)
    k[1, 32, 0, 32 * 4](out)
    assert (out == 6.0).all() and k.last_report.ok


@cuda.jit
def all_with_mask(mask, predicate, result):  # test_warp_ops.py: test_vote_sync_type_validation
    i = cuda.grid(1)
    if i < result.shape[0]:
        result[i] = cuda.all_sync(mask[i], predicate[i])


@pytest.mark.parametrize("mask, pred, msg", [
    (np.float32, np.int32, "the mask must be an integer"),
    (np.bool_, np.int32, "the mask must be an integer"),
    (np.float64, np.int32, "the mask must be an integer"),
    (np.int32, np.float32, "the predicate must be an integer or a bool"),
    (np.int32, np.float64, "the predicate must be an integer or a bool"),
])
def test_vote_type_validation_follows_numba_cuda(mask, pred, msg):
    with pytest.raises(simt.KernelError, match=msg):
        simt.run(all_with_mask, 1, 32, np.ones(32, mask), np.ones(32, pred), np.empty(32, np.int32))


@pytest.mark.parametrize("mask, pred", [(np.uint32, np.uint32), (np.int64, np.int64), (np.uint64, np.uint64),
                                        (np.int32, np.int32), (np.uint32, np.bool_), (np.uint64, np.bool_)])
def test_valid_vote_types_of_numba_cudas_test_run(mask, pred):
    result = np.empty(32, np.int32)
    simt.run(all_with_mask, 1, 32, np.full(32, ~np.array(0, mask)), np.ones(32, pred), result)
    assert (result == 1).all()


# -- numba-cuda's own compiler as the judge ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def numba_cuda_verdicts(tmp_path_factory):
    """Which tests/simt_corpus/typing_cases kernels numba-cuda's compiler accepts (compile_ptx, sm_90; no GPU)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path_factory.mktemp("typing") / "verdicts.json"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"} | {"PYTHONPATH": str(root)}
    run = subprocess.run([sys.executable, "-m", "tests.simt_corpus.typing_cases", str(out)], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    if run.returncode != 0 and ("NvvmSupportError" in run.stderr or "libNVVM" in run.stderr):
        pytest.skip("numba-cuda's compiler (NVVM) is not installed: pip install -e '.[test]'")
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text())


def _executor_runs(i: int) -> bool:
    fn, _, args, _ = T.CASES[i]
    kernel = cuda.jit(fn)
    fn.__globals__["cuda"] = cuda
    try:
        simt.run(kernel, 1, 32, *args())
    except simt.KernelError as exc:
        assert "TypeError" in str(exc), exc
        return False
    return True


@pytest.mark.parametrize("i", range(len(T.CASES)), ids=T.case_id)
def test_the_executor_runs_what_numba_cuda_compiles_and_refuses_what_it_refuses(i, numba_cuda_verdicts):
    name = T.case_id(i)
    assert numba_cuda_verdicts[name] is not None, f"{name}: numba-cuda failed with something other than a TypingError"
    assert numba_cuda_verdicts[name] == T.CASES[i][3], f"{name}: numba-cuda's verdict changed"
    assert _executor_runs(i) == T.CASES[i][3], f"{name}: the executor disagrees with numba-cuda"


def _executor_refusal(fn) -> str | None:
    """None when the executor runs ``fn`` on 32 threads; else its message (a refusal it explains)."""
    fn.__globals__["cuda"] = cuda
    try:
        simt.run(cuda.jit(fn), 1, 32, np.arange(32, dtype=np.float32), np.zeros(32, np.float32))
    except (simt.KernelError, NotModelled) as exc:  # NotModelled: refused from its source, before it runs
        return str(exc)
    return None


@pytest.mark.parametrize("i", range(len(T.CONSTRUCTS)), ids=T.construct_id)
def test_the_executor_refuses_the_python_numba_cuda_refuses(i, numba_cuda_verdicts):
    """Constructs from the r17/r18 reads (shapes from expressions, global lists, np.exp, try, f-strings, ...):
    numba-cuda's compiler is the judge; the executor refuses what it refuses, with a sentence that says why, and runs
    what it compiles, except the few it says it does not model (np.sum, array methods)."""
    fn, compiles, executor_runs = T.CONSTRUCTS[i]
    verdict = numba_cuda_verdicts[fn.__name__]
    assert (verdict is True) == compiles, f"{fn.__name__}: numba-cuda's verdict changed: {verdict}\n{fn.body}"
    refusal = _executor_refusal(fn)
    if compiles and executor_runs is None:
        assert refusal is None, f"{fn.__name__}: numba-cuda compiles it, the executor refuses:\n{refusal}"
    else:
        assert refusal is not None, f"{fn.__name__}: numba-cuda refuses it ({verdict}), the executor runs it"
        want = "does not model" if compiles else "numba-cuda|does not compile for a GPU|not compile"
        assert re.search(want, refusal), f"{fn.__name__}: the refusal does not say why:\n{refusal}"


def test_the_executors_tables_are_numba_cudas(numba_cuda_verdicts):
    """The NumPy ufuncs and math functions a kernel may call here are the ones numba-cuda compiles: its own ufunc
    table (numba.cuda.ufuncs.ufunc_db) and, for math, each function compiled with compile_ptx (sm_90, no GPU)."""
    from gpucourse.simt import gpumath, instrument

    assert set(numba_cuda_verdicts["__ufuncs__"]) == instrument.NUMBA_CUDA_UFUNCS
    assert set(numba_cuda_verdicts["__math__"]) == gpumath.NUMBA_CUDA_MATH
