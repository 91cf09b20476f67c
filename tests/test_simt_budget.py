"""Kernels that never end, deadlocks, error messages a student can act on (the thread and the line *as the
editor numbers it*), and kernels written for numba-cuda's real target or its simulator (closures included)."""

from __future__ import annotations

import linecache
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from gpucourse import simt

cuda = simt.cuda
ROOT = Path(__file__).resolve().parent.parent


def from_cell(source: str, name: str, **names):
    """Define ``name`` the way a Jupyter cell does: compiled from a file name IPython uses, its source in
    linecache (so inspect finds it), line numbers counted from the cell's first line."""
    source = textwrap.dedent(source)
    fname = f"/tmp/ipykernel_4242/{abs(hash(source)) % 10**8}.py"
    linecache.cache[fname] = (len(source), None, source.splitlines(True), fname)
    ns = {"cuda": cuda, "np": np, **names}
    exec(compile(source, fname, "exec"), ns)
    return ns[name]


def test_an_error_names_the_thread_and_the_cells_own_line():
    kernel = from_cell("""
        @cuda.jit
        def add_one(a, out):
            i = cuda.grid(1)
            out[i] = a[i] + 1
        """, "add_one")
    with pytest.raises(simt.KernelError) as info:
        simt.run(kernel, 2, 32, np.arange(40.0), np.zeros(40))
    msg = str(info.value)
    # the cell's line 5 (the source starts with an empty line 1), with its text
    assert "thread 8 of block 1 at line 5 of the cell (`out[i] = a[i] + 1`)" in msg and "out of bounds" in msg
    assert info.value.thread == (1, 8) and info.value.line == 5


def test_an_error_in_a_device_function_names_both_lines():
    kernel = from_cell("""
        @cuda.jit(device=True)
        def get(a, i):
            return a[i + 1]

        @cuda.jit
        def shift(a, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = get(a, i)
        """, "shift")
    with pytest.raises(simt.KernelError, match=r"at line 4 of the cell \(`return a\[i \+ 1\]`\) in device function "
                                               r"get, called at line 10 of the cell"):
        simt.run(kernel, 1, 8, np.arange(8.0), np.zeros(8))


def test_an_endless_loop_ends_with_the_thread_and_line():
    kernel = from_cell("""
        @cuda.jit
        def spin(out):
            i = cuda.grid(1)
            k = 0
            while k >= 0:
                k += 1
            out[i] = k
        """, "spin")
    t0 = time.perf_counter()
    with pytest.raises(simt.KernelError, match=r"thread 0 of block 0 at line 6 of the cell \(`while k >= 0:`\).*"
                                               r"more than 20,000 loop iterations"):
        simt.run(kernel, 1, 4, np.zeros(4), max_iterations=20_000)
    assert time.perf_counter() - t0 < 30


def test_a_spin_wait_no_thread_can_end_is_caught_quickly():
    kernel = from_cell("""
        @cuda.jit
        def wait_for_flag(flag, out):
            i = cuda.grid(1)
            if i == 0:
                while flag[0] == 0:
                    pass
            out[i] = 1
        """, "wait_for_flag")
    t0 = time.perf_counter()
    with pytest.raises(simt.KernelError, match=r"thread 0 of block 0 at line 6 of the cell .*loops forever: neither "
                                               r"its variables nor any memory change"):
        simt.run(kernel, 1, 32, np.zeros(1, np.int32), np.zeros(32))
    assert time.perf_counter() - t0 < 5  # found from unchanged state, not by exhausting a budget


def test_a_spin_wait_another_thread_ends_completes():
    kernel = from_cell("""
        @cuda.jit
        def handshake(flag, out):
            i = cuda.threadIdx.x
            if i == 0:
                while cuda.atomic.add(flag, 0, 0) == 0:  # polls until thread 40 (another warp) sets the flag
                    pass
                out[0] = 1
            if i == 40:
                cuda.threadfence()
                cuda.atomic.exch(flag, 0, 1)
        """, "handshake")
    out = np.zeros(1, np.int32)
    simt.run(kernel, 1, 64, np.zeros(1, np.int32), out)
    assert out[0] == 1


def test_a_time_limit_bounds_a_launch():
    kernel = from_cell("""
        @cuda.jit
        def slow(out):
            i = cuda.grid(1)
            acc = 0
            for k in range(900_000):  # under the per-thread loop limit (1,000,000): only the time limit can stop it
                acc += k
            out[i] = acc
        """, "slow")
    t0 = time.perf_counter()
    with pytest.raises(simt.KernelError, match="more than 0.5 s"):
        simt.run(kernel, 1, 256, np.zeros(256), time_limit=0.5)  # 256 threads × 900,000 iterations: minutes
    assert time.perf_counter() - t0 < 10


def test_a_shuffle_waiting_for_lanes_that_wait_at_a_barrier_is_a_deadlock():
    kernel = from_cell("""
        @cuda.jit
        def stuck(out):
            i = cuda.threadIdx.x
            if i == 32:
                out[i] = cuda.shfl_sync(0xFFFFFFFF, i, 0)
            else:
                cuda.syncthreads()
        """, "stuck")
    with pytest.raises(simt.KernelError, match=r"thread 32 of block 0 \(lane 0\) waits in cuda.shfl_sync\(\) at line 6 "
                                               r"of the cell .* lane 1 \(thread 33 of block 0\), named in the mask, does "
                                               r"not call it: it waits at cuda.syncthreads\(\) at line 8"):
        simt.run(kernel, 1, 64, np.zeros(64))


def test_a_warp_that_leaves_a_barrier_by_exiting_is_divergence_not_deadlock():
    # warp 1 finishes its shuffle and exits without the barrier warp 0 waits at: Volta+ releases the barrier
    # (all non-exited threads arrived), but the barrier was in divergent code: reported
    kernel = from_cell("""
        @cuda.jit
        def split(out):
            i = cuda.threadIdx.x
            if i < 32:
                cuda.syncthreads()
            else:
                out[i] = cuda.shfl_sync(0xFFFFFFFF, i, 0)
        """, "split")
    out = np.zeros(64)
    r = simt.run(kernel, 1, 64, out)
    assert (out[32:] == 32).all() and r.sync_errors[0].kind == "barrier divergence"


def test_a_kernel_cannot_return_a_value():
    kernel = from_cell("""
        @cuda.jit
        def returns(out):
            return 1
        """, "returns")
    with pytest.raises(simt.KernelError, match="a kernel cannot return a value"):
        simt.run(kernel, 1, 1, np.zeros(1))


def test_what_the_executor_does_not_model_is_said_in_words():
    kernel = from_cell("""
        @cuda.jit
        def uses_libdevice(out):
            out[0] = cuda.libdevice.sqrt(2.0)
        """, "uses_libdevice")
    with pytest.raises(simt.KernelError, match=r"does not model cuda\.libdevice.*On an NVIDIA GPU"):
        simt.run(kernel, 1, 1, np.zeros(1))
    with pytest.raises(simt.NotModelled, match="inspecting a kernel's compiled code"):
        kernel.inspect_asm()


def test_a_closure_kernel_with_a_device_function_in_the_closure():
    def build(k):
        @cuda.jit(device=True)
        def scale(v):
            return v * k

        @cuda.jit
        def apply(a, out):
            i = cuda.grid(1)
            if i < a.size:
                out[i] = scale(a[i])
                cuda.syncthreads() if False else None

        return apply

    a = np.arange(10.0)
    out = np.zeros(10)
    build(3.0)[1, 16](a, out)
    np.testing.assert_array_equal(out, a * 3)


def test_gpu_puzzles_style_closure_over_cuda_runs_here():
    """GPU-Puzzles builds each kernel as `fn(cuda)` returning a closure over the cuda module: numba's simulator
    cannot run that (it swaps only globals); the executor swaps closure cells too."""
    def pool_test(cuda):
        def call(out, a, size):
            shared = cuda.shared.array(8, np.float32)
            i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
            local_i = cuda.threadIdx.x
            if i < size:
                shared[local_i] = a[i]
            cuda.syncthreads()
            if i < size:
                acc = shared[local_i]
                if local_i >= 1:
                    acc += shared[local_i - 1]
                if local_i >= 2:
                    acc += shared[local_i - 2]
                out[i] = acc
        return call

    out = np.zeros(8)
    a = np.arange(8.0)
    r = simt.run(pool_test(cuda), 1, 8, out, a, 8)
    np.testing.assert_array_equal(out, [a[max(i - 2, 0):i + 1].sum() for i in range(8)])
    assert r.ok


_REAL_TARGET = """
import numpy as np
from numba import cuda   # numba-cuda's real CUDA target (no GPU needed to define kernels)
from gpucourse import simt

def build(offset):
    @cuda.jit(device=True)
    def bump(v):
        cuda.syncthreads()          # a barrier inside a device function held in a closure
        return v + offset

    @cuda.jit
    def kernel(a, out):
        s = cuda.shared.array(32, np.float64)
        i = cuda.threadIdx.x
        s[i] = a[i]
        cuda.syncthreads()
        out[i] = bump(s[31 - i])
    return kernel

k = build(10.0)
assert type(k).__module__.startswith("numba"), type(k)
out = np.zeros(32)
r = simt.run(k, 1, 32, np.arange(32.0), out)
assert (out == np.arange(32.0)[::-1] + 10).all(), out
assert r.ok, r.problems()
print("ok", type(k).__name__)
"""


def _child(code: str, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    environ.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, cwd=ROOT,
                          timeout=300)


def test_kernels_written_for_the_real_cuda_target_run_on_the_executor():
    out = _child(_REAL_TARGET)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok CUDADispatcher")


def test_kernels_defined_under_numbas_simulator_run_on_the_executor():
    out = _child(_REAL_TARGET.replace("build(10.0)", "build(10.0)") .replace(
        'assert type(k).__module__.startswith("numba"), type(k)', ""), NUMBA_ENABLE_CUDASIM="1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok FakeCUDAKernel")


def test_an_interrupt_stops_the_launch_and_leaves_no_thread_behind():
    kernel = from_cell("""
        @cuda.jit
        def interrupted(out):
            i = cuda.grid(1)
            cuda.syncthreads()
            if i == 40:
                raise KeyboardInterrupt  # what Jupyter's stop button delivers to the running code
            out[i] = 1
        """, "interrupted")
    with pytest.raises(KeyboardInterrupt):
        simt.run(kernel, 1, 64, np.zeros(64))
    out = np.zeros(64)
    simt.run(from_cell("""
        @cuda.jit
        def fine(out):
            out[cuda.grid(1)] = 1
        """, "fine"), 1, 64, out)  # the executor is usable again
    assert (out == 1).all()
