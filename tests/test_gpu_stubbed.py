"""The GPU path, run line by line on the CPU (issue 25): every GPU-only branch of ``gpucourse`` and of the grader's
exercise side, on the stubs of ``tests/gpu_stub.py`` (CuPy, numba-cuda's launch and JAX's GPU devices at their
boundary). A wrong library name or signature, a NumPy function handed a CuPy array, a missing ``.get()`` fails here.

The last test lists every GPU-only ``if`` with the AST and checks, with coverage collected over this module's tests,
that each body ran (or is allow-listed, with the reason). This module runs in one process, in order (the suite's
``--dist loadfile``)."""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests import gpu_stub
from tests.gpu_stub import gpu_backend  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[1]
COVERED_DIRS = ("gpucourse", "gpucourse/simt", "grader", "grader/labs")  # the exercise side: not grader/answers

# -- coverage over this module's stubbed tests ---------------------------------------------------------------------

_COV: dict = {"cov": None, "ran": set()}


@pytest.fixture(scope="module", autouse=True)
def _coverage():
    import coverage

    cov = coverage.Coverage(data_file=None, include=[str(ROOT / d / "*.py") for d in COVERED_DIRS], branch=False)
    _COV["cov"] = cov
    cov.start()
    yield
    cov.stop()


@pytest.fixture(autouse=True)
def _ran(request):
    yield
    _COV["ran"].add(request.node.originalname)


def _spin_ns(cp, us: float):
    """A spin kernel of ``us`` µs on the current stream (the course's own source, gpucourse.streams)."""
    from gpucourse import streams

    k = streams.gpu_spin_kernel()
    return lambda: k((1,), (1,), (cp.int64(streams.gpu_cycles(us)),))


# -- the backend ---------------------------------------------------------------------------------------------------

def test_the_gpu_backend_is_built_from_cupys_device_discovery(gpu_backend):
    import jax

    import gpucourse as gc
    from gpucourse import backend

    be = gpu_backend
    assert be.is_gpu and gc.gpu_available() and gc.get_backend() is be
    assert be.gpu.name == "NVIDIA H100 80GB HBM3" and be.gpu.compute_capability == (9, 0)
    assert be.gpu.sm_count == 132 and be.gpu.driver == "12.8" and be.gpu.runtime == "12.6"
    assert be.xp is gpu_stub.cupy
    text = be.banner()
    assert "GPU backend" in text and "compute capability 9.0, 132 SMs, 79 GiB" in text and "CuPy" in text
    assert be.kernel_runner == "numba-cuda on the GPU"
    from numba import cuda

    assert be.cuda is cuda  # the real numba-cuda (its launch is what the stub replaces)
    assert be.jax_device == jax.devices("cpu")[0]
    host = np.arange(5, dtype=np.float32)
    dev = be.to_device(host)
    assert type(dev).__module__.startswith("cupy") and backend.array_module(dev) is gpu_stub.cupy
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(dev)
    back = be.to_host(dev)
    assert isinstance(back, np.ndarray) and back.tolist() == host.tolist()
    be.sync()
    assert gc.require_gpu("anything") is True


def test_probe_reports_a_broken_driver_without_raising(gpu_backend, monkeypatch):
    from gpucourse import backend

    def broken():
        raise gpu_stub.CUDARuntimeError(35, "cudaErrorInsufficientDriver")

    monkeypatch.setattr(gpu_stub.cuda.runtime, "getDeviceCount", broken)
    probe = backend.probe_gpu()
    assert not probe.ok and "cudaErrorInsufficientDriver" in probe.reason


def test_the_stub_refuses_what_the_real_libraries_refuse(gpu_backend):
    """The stubs are only worth their checks: a host array handed to CuPy, an elapsed time read before the events
    completed, a copy in the wrong direction, a launch above 48 KiB of shared memory without opting in."""
    import inspect

    from numba.cuda import dispatcher

    cp = gpu_backend.xp
    d, h = cp.ones(8, dtype=cp.float32), np.ones(8, np.float32)
    for bad in (lambda: d + h, lambda: cp.sqrt(h), lambda: cp.matmul(d, h), lambda: np.asarray(d), lambda: float(d)):
        with pytest.raises(TypeError):
            bad()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    with pytest.raises(gpu_stub.CUDARuntimeError, match="InvalidResourceHandle"):
        cp.cuda.get_elapsed_time(a, b)  # never recorded
    s = cp.cuda.Stream(non_blocking=True)
    a.record(s)
    _spin_ns(cp, 5.0)()
    with s:
        _spin_ns(cp, 5.0)()
    b.record(s)
    with pytest.raises(gpu_stub.CUDARuntimeError, match="NotReady"):
        cp.cuda.get_elapsed_time(a, b)
    b.synchronize()
    assert cp.cuda.get_elapsed_time(a, b) == pytest.approx(0.005 + gpu_stub.LAUNCH_MS)
    pinned = cp.cuda.alloc_pinned_memory(64)
    with pytest.raises(gpu_stub.CUDARuntimeError, match="InvalidValue"):  # kind says h2d, pointers say d2h
        cp.cuda.runtime.memcpyAsync(pinned.ptr, d.data.ptr, 32, cp.cuda.runtime.memcpyHostToDevice, s.ptr)
    with pytest.raises(TypeError):
        cp.cuda.runtime.memcpyAsync(d.data.ptr, pinned.ptr, 32, cp.cuda.runtime.memcpyHostToDevice, s)
    k = cp.RawKernel('extern "C" __global__ void empty() { }', "empty")
    with pytest.raises(RuntimeError, match="dynamic shared memory"):
        k((1,), (32,), (), shared_mem=64 * 1024)
    with pytest.raises(TypeError):
        k((1,), (32,), [])
    k.max_dynamic_shared_size_bytes = 64 * 1024
    k((1,), (32,), (), shared_mem=64 * 1024)
    # the numba-cuda method the stub replaces has the stub's signature (numba-cuda 0.30.4, installed)
    assert inspect.signature(gpu_stub._device_call).parameters.keys() == \
        inspect.signature(dispatcher.CUDADispatcher.call).parameters.keys()


# -- gpucourse.timing ----------------------------------------------------------------------------------------------

def test_measure_with_cuda_events_times_the_gpu_work(gpu_backend):
    from gpucourse import timing

    cp = gpu_backend.xp
    spin = _spin_ns(cp, 100.0)
    t = timing.measure(spin, warmup=1, repeat=5, clock="cuda")
    assert t.clock == "cuda" and t.synchronized and len(t.times) == 5
    assert all(abs(x - (100e-6 + gpu_stub.LAUNCH_MS * 1e-3)) < 1e-8 for x in t.times), t.times
    kernels = [e for e in gpu_stub.LOG if e[0] == "kernel"]
    assert kernels[1][1] == "lead"  # the lead spin is queued after the warm-up, before the first start event
    first_event = next(i for i, e in enumerate(gpu_stub.LOG) if e[0] == "event")
    assert gpu_stub.LOG.index(kernels[1]) < first_event
    one = timing.measure(spin, warmup=0, repeat=1, clock="cuda")  # one call: still device time (the lead spin)
    assert abs(one.times[0] - 102e-6) < 1e-8


def test_measure_on_the_host_clock_waits_for_the_device(gpu_backend):
    from gpucourse import timing

    a = gpu_backend.xp.asarray(np.ones(1000, np.float32))
    t = timing.measure(lambda: a * 2, warmup=1, repeat=3)
    assert t.clock == "host" and len(t.times) == 3
    s = gpu_stub.cupy.cuda.get_current_stream()
    assert s.done  # block() synchronised the device after each call
    assert timing.block({"x": a * 3})["x"].get()[0] == 3.0


def test_clock_hz_falls_back_to_the_device_properties(gpu_backend, monkeypatch):
    from gpucourse import timing

    attrs = {k: v for k, v in gpu_stub.ATTRIBUTES.items() if k != "ClockRate"}  # CUDA 13 dropped some fields
    monkeypatch.setattr(gpu_stub.Device, "attributes", property(lambda self: dict(attrs)))
    assert timing._clock_hz(gpu_backend.xp) == gpu_stub.CLOCK_KHZ * 1e3
    from gpucourse import streams

    monkeypatch.setattr(gpu_stub.Device, "attributes", property(lambda self: {}))
    assert streams.gpu_cycles(1.0) == gpu_stub.CLOCK_KHZ // 1000  # cudaDeviceProp's clockRate
    assert streams.one_block_per_sm_smem() == gpu_stub.SMEM_PER_SM // 2 + 1024


# -- gpucourse.roofline --------------------------------------------------------------------------------------------

def test_roofline_measures_the_gpu_with_cuda_events(gpu_backend, monkeypatch):
    from gpucourse import roofline

    asked = []
    real_gemm = roofline.gemm_op

    def small_gemm(n, dtype="float32", label=None):  # the GPU's roof candidates are 4096³ and 8192³: too big here
        asked.append(n)
        return real_gemm(min(n, 64), dtype, label)

    monkeypatch.setattr(roofline, "gemm_op", small_gemm)
    assert roofline.clock() == "cuda"
    assert roofline.cache_bytes() == (gpu_stub.L2_BYTES, "the device's L2 (cudaDeviceProp.l2CacheSize)")
    assert roofline.stream_bytes() == 2 * gpu_stub.L2_BYTES
    flops, bw, how = roofline.stated_peaks("float32")
    assert flops == 67e12 and bw == 3.35e12 and "H100" in how
    with roofline.blas_threads(1):  # no BLAS limit on a GPU
        pass
    m = roofline.measure_roofline([roofline.gemv_op(128, calls=2)], nbytes=2**20, rounds=2)
    assert asked[:2] == [4096, 8192]
    assert m.roof.name.startswith("this machine (GPU") and m.rounds == 2 and m.cache_bytes == gpu_stub.L2_BYTES
    assert all(p.timing.clock == "cuda" for p in m.memory_candidates + m.compute_candidates + m.points)
    assert m.roof.bandwidth > 0 and m.roof.peak_flops > 0
    assert isinstance(m.memory.seconds, float)
    kinds = roofline.store_kinds(nbytes=2**16, rounds=2)
    assert [k.label for k in kinds] == ["fill", "memcpy", "elementwise copy"]
    assert all(k.timing.clock == "cuda" and k.timing.best > 0 for k in kinds)
    rate, t = roofline.measure_peak_flops(n=64, repeat=3)
    assert rate > 0 and t.clock == "cuda"
    bw, t = roofline.measure_bandwidth(nbytes=2**18, repeat=2)
    assert bw > 0 and t.clock == "cuda"


def test_a_gpu_without_a_datasheet_says_so(gpu_backend, monkeypatch):
    import dataclasses

    from gpucourse import backend, roofline

    other = dataclasses.replace(gpu_backend, gpu=dataclasses.replace(gpu_backend.gpu, name="NVIDIA Imaginary 1"))
    monkeypatch.setattr(backend, "_BACKEND", other)
    assert roofline.stated_peaks("float32") == (None, None, "no datasheet entry for NVIDIA Imaginary 1 in "
                                                            "gpucourse.hardware")


# -- gpucourse.streams ---------------------------------------------------------------------------------------------

def test_measure_on_gpu_runs_the_ops_on_cupy_streams(gpu_backend):
    from gpucourse import streams as st

    ops = [st.Op("h2d0", "s0", 10.0, "h2d", nbytes=250_000), st.Op("k0", "s0", 20.0, sms=4),
           st.Op("k1", "s1", 30.0, sms=200), st.HostSync("wait k1", on=("k1",)),
           st.Op("k2", st.LEGACY, 5.0, waits=("k0",)), st.HostSync("wait s0", on="s0"),
           st.Op("d2h0", "fast", 4.0, "d2h", nbytes=1000), st.HostSync("all", on="device")]
    tl = st.measure_on_gpu(ops, repeat=2, nonblocking=("fast",))
    spans = {s.name: s for s in tl.spans}
    assert tl.source == "measured" and set(spans) == {"h2d0", "k0", "k1", "k2", "d2h0", "wait k1", "wait s0", "all"}
    launch_us = gpu_stub.LAUNCH_MS * 1e3
    assert spans["h2d0"].start == pytest.approx(0.0, abs=1e-6)
    assert spans["h2d0"].end - spans["h2d0"].start == pytest.approx(10.0, rel=1e-6)  # 250 kB at 25 GB/s
    assert spans["k0"].start == pytest.approx(spans["h2d0"].end)
    assert spans["k0"].end - spans["k0"].start == pytest.approx(20.0 + launch_us, rel=1e-6)
    assert spans["k1"].end - spans["k1"].start == pytest.approx(30.0 + launch_us, rel=1e-6)
    assert spans["k2"].start >= spans["k0"].end and spans["wait k1"].start >= spans["k1"].end - 1e-9
    launches = [e for e in gpu_stub.LOG if e[:2] == ("kernel", "spin")]
    assert all(e[4] > gpu_stub.SMEM_PER_SM // 2 for e in launches)  # one block per SM
    assert max(e[2][0] for e in launches) == gpu_stub.SMS  # sms=200 capped at the device's SM count
    legacy = [e for e in launches if e[5] == 0]
    assert legacy, "LEGACY must be cupy.cuda.Stream.null (ptr 0)"


def test_launch_costs_on_gpu(gpu_backend):
    from gpucourse import streams as st

    costs = st.measure_launch_on_gpu(n=16, repeat=3)
    assert costs.host_ahead and costs.gpu_per_kernel == pytest.approx(gpu_stub.LAUNCH_MS * 1e-3)
    assert costs.graph_per_kernel < costs.gpu_per_kernel and costs.event_pair == pytest.approx(2e-6)
    assert costs.latency > 0 and costs.enqueue > 0 and costs.round_trip > 0
    assert st.one_block_per_sm_smem() == min(gpu_stub.SMEM_PER_SM // 2 + 1024, gpu_stub.SMEM_OPTIN)
    assert st.gpu_cycles(1000.0) == gpu_stub.CLOCK_KHZ


def test_gpu_only_stream_measurements_refuse_the_cpu():
    from gpucourse import BackendUnavailable, backend, streams as st

    if backend.get_backend().is_gpu:
        pytest.skip("a real GPU is here")
    with pytest.raises(BackendUnavailable):
        st.measure_on_gpu([])
    with pytest.raises(BackendUnavailable):
        st.measure_launch_on_gpu()


# -- gpucourse.datapath, gpucourse.devmem --------------------------------------------------------------------------

def test_pinned_and_pageable_transfers(gpu_backend):
    from gpucourse import datapath

    pinned = datapath.pinned_empty(4096)
    assert isinstance(pinned, np.ndarray) and pinned.dtype == np.uint8 and pinned.size == 4096
    for pin in (True, False):
        rate, t = datapath.measure_h2d(1 << 16, pin, repeat=3)
        assert t.clock == "cuda" and rate == pytest.approx(gpu_stub.COPY_BYTES_PER_MS * 1e3, rel=0.1)
        rate, t = datapath.measure_d2h(1 << 16, pin, repeat=3)
        assert t.clock == "cuda" and rate > 0


def test_device_memory_on_cupy_storage(gpu_backend):
    from gpucourse import devmem

    mem = devmem.DeviceMemory(budget=1 << 16)
    assert mem.xp is gpu_stub.cupy
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    d = mem.to_device(x)
    assert type(d.data).__module__.startswith("cupy")
    r = np.sqrt(d * d + 1.0)
    assert mem.allocations >= 3 and mem.h2d_copies == 1
    y = mem.to_host(r)
    assert isinstance(y, np.ndarray) and np.allclose(y, np.sqrt(x * x + 1)) and mem.d2h_copies == 1
    assert d.get().tolist() == x.tolist() and mem.d2h_copies == 2
    assert d.sum() == pytest.approx(float(x.sum()), rel=1e-5) and isinstance(d.max(), float)
    both = np.concatenate([d, d])
    assert both.shape == (2000,) and type(both.data).__module__.startswith("cupy")
    e = mem.empty((10, 10), np.float32)
    e[:] = 0.0
    assert e.reshape(100).shape == (100,)
    with pytest.raises(TypeError):
        np.asarray(d)
    with pytest.raises(TypeError):  # CuPy refuses a host operand: the copy must be explicit
        d + x
    with pytest.raises(devmem.OutOfMemoryError):
        mem.empty(1 << 20)


def test_device_memory_scalars_come_back_to_the_host_on_either_storage(gpu_backend):
    """np.sum(d) is a NumPy scalar on NumPy storage; on CuPy it was a raw, untracked CuPy 0-d array (np.add.reduce: a
    0-d DeviceArray). Both storages now give the same host scalar, as d.sum() already did."""
    import gpucourse as gc
    from gpucourse import devmem

    x = np.linspace(0, 1, 100, dtype=np.float32)
    got = {}
    for storage in (np, gpu_stub.cupy):
        mem = devmem.DeviceMemory(1 << 20, xp=storage)
        d = mem.to_device(x)
        got[storage.__name__] = [np.sum(d), np.dot(d, d), np.max(d), np.add.reduce(d), np.mean(d)]
        # course §3's program on this storage, timed as the notebook times it
        t = gc.measure(lambda: np.tanh(d) * 2.0 + 1.0, repeat=3)
        assert t.median > 0
    for a, b in zip(got["numpy"], got["cupy"]):
        assert type(a) is type(b) and a == pytest.approx(b), (a, b)


# -- the grader: kernels on the device, arrays that come back ------------------------------------------------------

SCALE_SHIFT = """
@cuda.jit
def scale_shift(x, out, a, b):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = np.float32(a) * x[i] + np.float32(b)
"""


def test_the_stub_launch_raises_numba_cudas_own_warnings(gpu_backend, monkeypatch):
    import numba.cuda.dispatcher
    from numba.cuda.core.errors import NumbaPerformanceWarning

    # numba-cuda reads NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS once, when it loads: a course import earlier in this process
    # (gc.quiet_warnings) may have turned it off; this test wants numba-cuda's default, on
    monkeypatch.setattr(numba.cuda.dispatcher.config, "CUDA_LOW_OCCUPANCY_WARNINGS", 1)

    from grader.kernels import load_kernel

    k = load_kernel(SCALE_SHIFT, "scale_shift", {"np": np}, gpu_backend.cuda)
    x = np.arange(8, dtype=np.float32)
    dx, dout = gpu_backend.to_device(x), gpu_backend.to_device(np.zeros(8, np.float32))
    with pytest.warns(NumbaPerformanceWarning, match="Grid size 1 will likely result in GPU under-utilization"):
        k[1, 32](dx, dout, 2.0, 1.0)
    assert dout.get().tolist() == (2 * x + 1).tolist()
    out = np.zeros(8, np.float32)
    with pytest.warns(NumbaPerformanceWarning, match="Host array used in CUDA kernel"):
        k[1, 32](x, out, 2.0, 1.0)
    with pytest.raises(TypeError):
        k[1, 32](list(x), dout, 2.0, 1.0)


def test_device_run_launches_on_device_arrays_and_brings_the_outputs_back(gpu_backend):
    from grader import kernels
    from grader.kernels import load_kernel

    k = load_kernel(SCALE_SHIFT, "scale_shift", {"np": np}, gpu_backend.cuda)
    x = np.arange(70, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning escaping device_run would fail here
        out = kernels.device_run(k, 3, 32, [x, np.zeros_like(x), 2.0, 1.0], [1])
    assert isinstance(out[0], np.ndarray) and out[0].tolist() == (2 * x + 1).tolist()
    assert any(e[0] == "numba kernel" and e[2] == (3, 1, 1) for e in gpu_stub.LOG)


def test_a_graded_kernel_check_on_the_gpu_writes_nothing_to_stderr(gpu_backend, capsys):
    from grader.kernels import load_kernel
    from grader.labs import lab05_kernels as lab

    k = load_kernel(SCALE_SHIFT, "scale_shift", {"np": np}, gpu_backend.cuda)
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # whatever filters the notebook set
        lab.MAP.check(k)
    out, err = capsys.readouterr()
    assert err == "", err
    assert "and on the GPU" in out
    assert sum(e[0] == "numba kernel" for e in gpu_stub.LOG) == len(lab.MAP.visible)


def test_a_kernel_that_differs_on_the_device_fails_the_check(gpu_backend, monkeypatch):
    from grader.checks import CheckFailure
    from grader.kernels import load_kernel
    from grader.labs import lab05_kernels as lab

    real = gpu_stub._device_call

    def off_by_one(self, args, config):  # a device that computes something else (as a float16 kernel would)
        real(self, args, config)
        args[1][:] = args[1] + 1.0

    monkeypatch.setattr("numba.cuda.dispatcher.CUDADispatcher.call", off_by_one)
    k = load_kernel(SCALE_SHIFT, "scale_shift", {"np": np}, gpu_backend.cuda)
    with pytest.raises(CheckFailure, match="on the GPU"):
        lab.MAP.check(k)


KERNEL_LABS = ("lab05_kernels", "lab05b_kernel_puzzles", "lab06_xla_sass", "lab08_attention")


def _solution_kernels(lab: str):
    """(problem, kernel) for every kernel exercise of ``lab``: the solution notebook's cell, defined with numba-cuda
    (the GPU backend's ``cuda``) as the notebook defines it on a GPU."""
    import importlib
    import math

    from grader.kernels import KernelProblem, load_kernel
    from grader.scratch import load_notebook, solution_cells

    module = importlib.import_module(f"grader.labs.{lab}")
    nb = load_notebook(ROOT / "solutions" / lab / f"{lab}.ipynb")
    cells = solution_cells(nb)
    ns = {"np": np, "math": math, "lab": module, **{k: v for k, v in vars(module).items() if k.isupper()}}
    for cell in nb["cells"]:  # the notebook's own constants (BLOCK = 128, ...), as its earlier cells define them
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
        except SyntaxError:
            continue
        for node in tree.body:
            names = [n for t in getattr(node, "targets", []) for n in ast.walk(t) if isinstance(n, ast.Name)]
            if isinstance(node, ast.Assign) and names and all(n.id.isupper() for n in names):
                try:
                    exec(compile(ast.Module([node], []), "<cell>", "exec"), ns)  # noqa: S102
                except Exception:
                    continue
    out = []
    for problem in module.problems.values():
        if isinstance(problem, KernelProblem):
            (source,) = [c for c in cells.values() if f"def {problem.name}(" in c and "@cuda.jit" in c]
            out.append((problem, lambda cuda, s=source, n=problem.name: load_kernel(s, n, ns, cuda)))
    return out


@pytest.mark.parametrize("lab", KERNEL_LABS)
def test_every_kernel_exercise_passes_on_the_gpu_quietly(gpu_backend, capsys, lab):
    """The solutions' kernels, graded on the GPU path: the instrumented run, then the device launch (numba-cuda's
    dispatcher on CuPy arrays), its outputs compared — and nothing on stderr (nbgrader scores such a cell 0)."""
    checked = 0
    for problem, make in _solution_kernels(lab):
        before = sum(e[0] == "numba kernel" for e in gpu_stub.LOG)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            problem.check(make(gpu_backend.cuda))
        out, err = capsys.readouterr()
        assert err == "", f"{problem.name}: {err}"
        assert "and on the GPU" in out, f"{problem.name}: {out}"
        assert sum(e[0] == "numba kernel" for e in gpu_stub.LOG) > before, problem.name
        checked += 1
    assert checked >= 1


def test_the_grader_reads_cupy_arrays_explicitly(gpu_backend):
    from grader import checks, wire

    a = gpu_backend.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert checks.to_host(a).tolist() == [[0, 1, 2], [3, 4, 5]]
    checks.expect_array_close("x", a, np.arange(6, dtype=np.float32).reshape(2, 3))
    enc = wire.encode(a)
    assert enc["shape"] == [2, 3] and wire.decode(json.loads(json.dumps(enc))).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_lab4_runs_the_students_pipeline_on_the_gpu(gpu_backend):
    from grader.answers import lab04_streams as answers
    from grader.labs import lab04_streams as lab

    note = lab._gpu_overlap(answers.fewest_chunks, hidden=False)
    assert "on this GPU: your" in note and "faster than the same ops on one stream" in note
    assert lab._gpu_overlap(answers.fewest_chunks, hidden=True) == ""


# -- gpucourse.xla_gpu, gpucourse.gpu_check ------------------------------------------------------------------------

def test_xla_gpu_compiles_here_on_the_gpu_backend(gpu_backend, monkeypatch):
    from gpucourse import xla_gpu

    monkeypatch.setattr(xla_gpu, "_cuda_plugin_in_env", lambda: "jax_plugins.xla_cuda12")
    gone = xla_gpu.missing()
    assert gone and gone[0].startswith("nothing to add")
    c = xla_gpu.compile_for_gpu("lambda a, b: a @ b", ((8, 8), "float32"), ((8, 8), "float32"))
    assert "this GPU, autotuned" in c.target and c.arch == "sm_90a" and "dot" in c.hlo


def test_gpu_check_records_provenance_on_the_gpu(gpu_backend, tmp_path, capsys):
    from gpucourse import gpu_check

    prov = gpu_check.provenance(ROOT, gpu_backend.gpu)
    assert prov["gpu"] == "NVIDIA H100 80GB HBM3" and prov["compute capability"] == "9.0"
    assert prov["SMs"] == "132" and prov["CUDA driver API / runtime"] == "12.8 / 12.6"
    assert gpu_check.main(["--skip-tests", "--skip-notebooks", "--out", str(tmp_path), "--root", str(ROOT)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == 2 and written[0].startswith("nvidia-h100-80gb-hbm3_")
    report = json.loads((tmp_path / written[0]).read_text())
    assert report["provenance"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert "gpu_check on NVIDIA H100 80GB HBM3 (9.0)" in capsys.readouterr().out


# -- every GPU-only branch ran -------------------------------------------------------------------------------------

BACKEND_CALLS = {"require_gpu", "gpu_available", "_on_gpu"}
# (file, the `if`'s test as ast.unparse writes it) -> why no stubbed test can run it (what only hardware shows).
# Empty: every GPU-only branch of gpucourse/ and grader/ (exercise side) runs on the stubs. Conditional expressions
# (`"cuda" if be.is_gpu else "host"`) are not listed: line coverage cannot tell their arms apart; the tests above
# check their GPU values (clock(), the banner, the roofline's name).
ALLOW: dict[tuple[str, str], str] = {
}


def _mentions(node: ast.AST) -> tuple[bool, bool, bool]:
    """(a backend test appears — ``is_gpu``, ``require_gpu()``, ``gpu_available()``, ``_on_gpu()``, a module
    compared with "cupy" —, one appears negated, a clock == "cuda" comparison appears)."""
    found, negated, clock = False, False, False

    def visit(n: ast.AST, neg: bool) -> None:
        nonlocal found, negated, clock
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            visit(n.operand, not neg)
            return
        hit = (isinstance(n, ast.Attribute) and n.attr == "is_gpu") or \
              (isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) in BACKEND_CALLS)
        if hit:
            found, negated = True, negated or neg
            return
        if isinstance(n, ast.Compare) and any(isinstance(o, ast.Eq) for o in n.ops):
            consts = {c.value for c in [n.left, *n.comparators] if isinstance(c, ast.Constant)}
            if "cupy" in consts:  # type(a).__module__.split(".")[0] == "cupy": a CuPy array, only on a GPU
                found = True
                negated = negated or neg
                return
            clock = clock or "cuda" in consts
        for child in ast.iter_child_nodes(n):
            visit(child, neg)

    visit(node, False)
    return found, negated, clock


def gpu_branches() -> list[tuple[str, int, int, str]]:
    """(file, line of the `if`, first line of its GPU-only body, the test's text) for every `if` of gpucourse/ and grader/ (exercise
    side) whose test asks for the GPU: the body when the test is positive (`if be.is_gpu:`), the `else` or — when
    the body always leaves (return, raise) — the statement after the `if` when it is negated (`if not be.is_gpu:
    raise ...`); a test that mentions only
    `clock == "cuda"` is positive. `if A and not is_gpu` with a clock test is the CPU's error, not a GPU branch."""
    out = []
    for d in COVERED_DIRS:
        for path in sorted((ROOT / d).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            rel = str(path.relative_to(ROOT))
            for parent in ast.walk(tree):
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(parent, field, None)
                    if not isinstance(block, list):
                        continue
                    for i, stmt in enumerate(block):
                        if not isinstance(stmt, ast.If):
                            continue
                        found, negated, clock = _mentions(stmt.test)
                        test = ast.unparse(stmt.test)
                        if found and not negated:
                            out.append((rel, stmt.lineno, stmt.body[0].lineno, test))
                        elif found and negated and not clock:
                            exits = isinstance(stmt.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
                            nxt = stmt.orelse[0] if stmt.orelse else \
                                (block[i + 1] if exits and i + 1 < len(block) else None)
                            if nxt is not None:
                                out.append((rel, stmt.lineno, nxt.lineno, test))
                        elif clock and not found:
                            out.append((rel, stmt.lineno, stmt.body[0].lineno, test))
    return sorted(set(out))


def test_every_gpu_only_branch_runs_on_the_stubs():
    tests = {name for name, obj in globals().items() if name.startswith("test_") and callable(obj)}
    tests.discard("test_every_gpu_only_branch_runs_on_the_stubs")
    if _COV["cov"] is None or not tests <= _COV["ran"]:
        pytest.skip("run the whole module: the branch check reads the coverage of every stubbed test")
    cov = _COV["cov"]
    cov.stop()
    data = cov.get_data()
    branches = gpu_branches()
    assert len(branches) >= 20, branches  # the AST scan still finds the GPU code
    missed = []
    for rel, line, body, test in branches:
        if (rel, test) in ALLOW:
            continue
        lines = data.lines(str(ROOT / rel)) or []
        if body not in lines:
            missed.append(f"{rel}:{line} `if {test}:` (GPU-only code at line {body})")
    stale = [k for k in ALLOW if k not in {(r, t) for r, _, _, t in branches}]
    cov.start()
    assert not stale, f"allow-list entries that are no longer GPU branches: {stale}"
    assert not missed, "GPU-only branches no stubbed test runs:\n  " + "\n  ".join(missed)
