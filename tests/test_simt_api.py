"""numba-cuda's host API on the executor (``gpucourse.simt.cuda``, the CPU backend's ``be.cuda``): decorators,
launch configurations, device arrays, streams and events, intrinsics, and the backend switch."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numba
import numpy as np
import pytest

from gpucourse import simt

cuda = simt.cuda
ROOT = Path(__file__).resolve().parent.parent


def test_every_way_to_write_the_decorator():
    def body(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    for deco in (cuda.jit, cuda.jit(), cuda.jit("void(float64[:])"), cuda.jit(cuda.void(cuda.float64[:])),
                 cuda.jit([numba.void(numba.float64[:])]), cuda.jit(debug=True, opt=False, lineinfo=True)):
        k = deco(body)
        a = np.zeros(5)
        k[1, 8](a)
        assert (a == 1).all() and isinstance(k, simt.Kernel) and k.py_func is body

    dev = cuda.jit("float64(float64)", device=True)(lambda v: v * 2)
    assert isinstance(dev, simt.DeviceFunction) and dev(3.0) == 6.0  # callable from Python, as in numba's simulator


@cuda.jit
def fill(a, v):
    i = cuda.grid(1)
    if i < a.size:
        a[i] = v


def test_launch_configurations_and_the_last_report():
    a = np.zeros(70)
    fill[3, 32](a, 1.0)
    assert (a == 1).all() and fill.last_report.n_blocks == 3
    fill[(2, 1), (64, 1, 1), 0](a, 2.0)
    assert (a == 2).all() and fill.last_report.threads_per_block == 64
    s = cuda.stream()
    fill[1, 128, s, 0](a, 3.0)
    assert (a == 3).all()
    fill.forall(a.size)(a, 4.0)
    assert (a == 4).all()
    with pytest.raises(ValueError, match="launch it with a configuration"):
        fill(a, 5.0)
    with pytest.raises(ValueError, match="at most 1024 threads"):
        fill[1, 2048](a, 5.0)


def test_device_arrays_are_copies_until_copied_back():
    host = np.zeros(10)
    d = cuda.to_device(host)
    fill[1, 32](d, 7.0)
    assert (host == 0).all()  # the device copy changed, not the host array
    back = d.copy_to_host()
    assert (back == 7).all() and d.shape == (10,) and d.dtype == np.float64 and len(d) == 10
    dest = np.empty(10)
    assert d.copy_to_host(dest) is dest and (dest == 7).all()
    like = cuda.device_array_like(host)
    fill[1, 32](like, 1.5)
    assert (like.copy_to_host() == 1.5).all() and fill.last_report.ok
    d2 = cuda.to_device(np.arange(4.0))
    cuda.to_device(np.ones(4), to=d2)
    assert (d2.copy_to_host() == 1).all() and cuda.is_cuda_array(d2) and not cuda.is_cuda_array(host)


def test_streams_events_devices_are_there():
    cuda.synchronize()
    s = cuda.stream()
    s.synchronize()
    e0, e1 = cuda.event(), cuda.event()
    e0.record(s)
    fill[1, 32](np.zeros(4), 1.0)
    e1.record(s)
    e1.synchronize()
    assert cuda.event_elapsed_time(e0, e1) >= 0
    dev = cuda.get_current_device()
    assert dev.compute_capability == (9, 0) and dev.WARP_SIZE == 32 and cuda.is_available()
    with cuda.pinned(np.zeros(2)):
        pass


def test_in_kernel_names_outside_a_kernel_say_so():
    with pytest.raises(RuntimeError, match="only has a value inside a running kernel"):
        cuda.threadIdx.x
    assert not hasattr(cuda, "blockIdx")
    with pytest.raises(RuntimeError, match="only be used inside a kernel"):
        cuda.syncthreads()
    with pytest.raises(simt.NotModelled, match="does not model cuda.some_feature"):
        cuda.some_feature


@cuda.jit
def intrinsics(x, out):
    i = cuda.grid(1)
    if i == 0:
        out[0] = cuda.popc(np.int32(-1))
        out[1] = cuda.popc(np.uint32(0b1011))
        out[2] = cuda.clz(np.int32(1))
        out[3] = cuda.ffs(np.int32(0b1000))
        out[4] = cuda.brev(np.uint32(1)) == np.uint32(0x80000000)
        out[5] = cuda.fma(np.float32(2.0), np.float32(3.0), np.float32(1.0))
        out[6] = cuda.cbrt(-27.0)
        out[7] = cuda.selp(x[0] > 0, 10, 20)
        out[8] = cuda.laneid + cuda.warpsize
        out[9] = cuda.gridsize(1)
        out[10] = cuda.float32(1.0) / 3 == np.float32(1.0) / 3
        out[11] = cuda.int32(2**31)  # wraps, as a GPU's conversion does


def test_integer_and_float_intrinsics():
    out = np.zeros(12)
    simt.run(intrinsics, 2, 32, np.array([1.0]), out)
    np.testing.assert_array_equal(out, [32, 3, 31, 4, 1, 7, -3, 10, 32, 64, 1, -(2**31)])


@cuda.jit
def overflow(out):
    a = np.int32(2**31 - 1)
    out[0] = a + np.int32(1)  # int32 + int32 is int64 in numba-cuda: no wrap
    out[1] = np.float32(1.0) / np.float32(0.0)


def test_a_launch_writes_nothing_to_stderr(capfd):
    out = np.zeros(2)
    simt.run(overflow, 1, 1, out)
    assert out[0] == 2**31 and np.isinf(out[1])
    assert capfd.readouterr().err == ""  # nbgrader scores a test cell that writes to stderr 0


@cuda.jit
def barrier_heavy(a):
    s = cuda.shared.array(256, np.float32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    a[cuda.grid(1)] = s[255 - t]


def test_a_launch_starts_no_os_thread():
    seen = []
    before = threading.active_count()
    orig = threading.Thread.start
    threading.Thread.start = lambda self: (seen.append(self), orig(self))[1]
    try:
        a = np.zeros(1024, np.float32)
        r = simt.run(barrier_heavy, 4, 256, a)
    finally:
        threading.Thread.start = orig
    assert not seen and threading.active_count() == before and r.n_threads == 1024


def test_the_cpu_backend_switch(tmp_path):
    code = ("import gpucourse as gc, numpy as np\n"
            "be = gc.get_backend()\n"
            "cuda = be.cuda\n"
            "@cuda.jit\n"
            "def add_one(a):\n"
            "    i = cuda.grid(1)\n"
            "    if i < a.size:\n"
            "        a[i] += 1\n"
            "x = np.arange(5.0)\n"
            "add_one[2, 4](x)\n"
            "import sys\n"
            "print(type(cuda).__name__, be.kernel_runner.split(' (')[0], x.tolist(), 'numba.cuda' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "GPUCOURSE_CUDA_SIM")}
    env["GPUCOURSE_BACKEND"] = "cpu"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CudaAPI", "gpucourse", "SIMT", "executor", "[1.0,", "2.0,", "3.0,", "4.0,",
                                  "5.0]", "False"]  # numba.cuda is never imported on the executor path
    env["GPUCOURSE_CUDA_SIM"] = "numba"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("module numba CUDA simulator [1.0, 2.0, 3.0, 4.0, 5.0] True")
    env["GPUCOURSE_CUDA_SIM"] = "bogus"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode != 0 and "GPUCOURSE_CUDA_SIM='bogus'" in out.stderr


@cuda.jit
def uses_math(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = math.exp(v)
        out[i, 1] = math.sqrt(abs(v))
        out[i, 2] = math.floor(v)
        out[i, 3] = math.tanh(v) if not math.isnan(v) else -1.0
        out[i, 4] = math.pi * v


def test_math_functions_inside_kernels():
    x = np.linspace(-2, 2, 37).astype(np.float32)
    out = np.zeros((37, 5), np.float32)
    simt.run(uses_math, 2, 32, x, out)
    x64 = x.astype(np.float64)
    want = np.stack([np.exp(x64), np.sqrt(np.abs(x64)), np.floor(x64), np.tanh(x64), np.pi * x64], axis=1)
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-6)


def _kernel(source: str, namespace: dict):
    """A @cuda.jit kernel defined in a module namespace of its own (its globals are ``namespace``)."""
    import linecache

    filename = f"<kernel {len(namespace)} {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return next(v for k, v in namespace.items() if hasattr(v, "py_func") and not k.startswith("_"))


def test_a_global_named_like_a_builtin_is_the_students_constant():
    """Review r22, finding 2: numba-cuda compiles a module constant called `dir` or `id` (it is not the builtin);
    the builtins themselves stay refused, as numba-cuda refuses them."""
    a = np.ones(4, np.float32)
    scaled = _kernel("@cuda.jit\ndef scaled(a, out):\n    i = cuda.threadIdx.x\n    out[i] = a[i] * dir\n",
                     {"cuda": cuda, "np": np, "dir": 3})
    out = np.zeros(4, np.float32)
    simt.run(scaled, 1, 4, a, out)
    assert (out == 3).all()
    listing = _kernel("@cuda.jit\ndef listing(a, out):\n    out[0] = len(dir(a))\n", {"cuda": cuda, "np": np})
    with pytest.raises(simt.NotModelled, match="does not model `dir` inside a kernel"):
        simt.run(listing, 1, 1, a, np.zeros(1, np.float32))


def test_the_host_api_and_another_modules_arrays_are_not_a_kernels():
    """Review r22, findings 3 and 4: numba-cuda has no allocation, stream or synchronize in a kernel, and compiles
    another module's array as a constant (a store to it is a trap on the GPU): the executor refuses both."""
    import types

    a = np.ones(4, np.float32)
    scratch = _kernel("@cuda.jit\ndef scratch(a, out):\n    i = cuda.threadIdx.x\n"
                      "    b = cuda.device_array(4, np.float32)\n    b[i] = a[i]\n    out[i] = b[i]\n",
                      {"cuda": cuda, "np": np})
    with pytest.raises(simt.KernelError, match="does not model `cuda.device_array` inside a kernel"):
        simt.run(scratch, 1, 4, a, np.zeros(4, np.float32))
    helper = types.ModuleType("helper_module")
    helper.SCRATCH = np.zeros(4, np.float32)
    store = _kernel("@cuda.jit\ndef store(a, out):\n    i = cuda.threadIdx.x\n    helper.SCRATCH[i] = a[i]\n"
                    "    out[i] = helper.SCRATCH[i]\n", {"cuda": cuda, "np": np, "helper": helper})
    with pytest.raises(simt.KernelError, match="read-only"):
        simt.run(store, 1, 4, a, np.zeros(4, np.float32))
    assert (helper.SCRATCH == 0).all()
    cuda.synchronize()  # on the host, the same calls stay what they are
    assert cuda.device_array(4, np.float32).shape == (4,)
