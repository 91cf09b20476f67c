"""The GPU path, checked on the CPU (issue 25): what a student's GPU would print or crash on, with the library
boundary stubbed where a GPU is needed. Review: ../shared/reviews/2026-12-06/gpu-paths-static.md (F1, F12-F14)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from grader import kernels
from grader.course import ROOT


def test_quiet_warnings_silences_what_numba_cuda_and_cuda_core_print_on_a_gpu():
    """F12/F14: numba-cuda's own low-occupancy warning class (not numba's) and cuda.core's one-time "nvjitlink is
    not available" RuntimeWarning, raised after gc.setup(), leave stderr empty (nbgrader scores a test cell with
    any stderr 0). Run in a fresh interpreter: warning filters are process state."""
    code = """
import warnings
import gpucourse as gc
gc.setup(verbose=False)
from numba.cuda.core.errors import NumbaPerformanceWarning
warnings.warn(NumbaPerformanceWarning("Grid size 1 will likely result in GPU under-utilization due to low occupancy."))
warnings.warn("cuda.bindings.nvjitlink is not available, therefore the driver APIs will be used instead, which do "
              "not support minor version compatibility or linking LTO IRs.", RuntimeWarning)
import os
print(os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"])
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "GPUCOURSE_BACKEND": "cpu"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == "", proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "0"


class _FakeGpu:
    """The GPU backend at its boundary: device arrays are host arrays, sync does nothing."""
    is_gpu = True

    def to_device(self, a):
        return a

    def to_host(self, a):
        return np.asarray(a)

    def sync(self):
        pass


class _WarningKernel:
    """A numba-cuda dispatcher's launch as seen from the grader: it runs, and warns about the small grid as
    numba-cuda 0.30 does."""

    def __getitem__(self, config):
        def launch(*args):
            from numba.cuda.core.errors import NumbaPerformanceWarning

            warnings.warn(NumbaPerformanceWarning("Grid size 1 will likely result in GPU under-utilization due to "
                                                  "low occupancy."))
            args[0][:] = 1.0

        return launch


def test_a_kernel_check_on_the_gpu_writes_no_warning(monkeypatch):
    """F13: device_run launches the exercise's (small) grid on the device; the warning numba-cuda raises there must
    not escape, whatever filters the notebook set (here: every warning shown)."""
    import gpucourse

    monkeypatch.setattr(gpucourse, "get_backend", lambda: _FakeGpu())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = kernels.device_run(_WarningKernel(), 1, 32, [np.zeros(4, np.float32)], [0])
    assert seen == [] and out is not None and np.all(out[0] == 1.0)


def test_lab7_collectives_compile_on_the_host_devices_whatever_the_default_backend(monkeypatch):
    """F1: with JAX's CUDA plugin installed, jax.devices() is the one GPU; the sharding exercise's meshes are the
    host's CPU devices (jax.devices("cpu"))."""
    import jax

    from grader.answers import lab07_tpu as answers

    real = jax.devices

    class OneGpu:
        platform = "gpu"

    def devices(backend=None):
        return [OneGpu()] if backend is None else real(backend)

    monkeypatch.setattr(jax, "devices", devices)
    assert answers.compiled_traffic((None, None), (None, None), (None, None), mesh_shape=(1, 1)) == {}


def test_gpu_check_lets_parallel_notebooks_share_the_gpu(tmp_path):
    """JAX preallocates 75 % of the GPU per process: with --jobs > 1 the notebooks' kernels allocate on demand."""
    from gpucourse import gpu_check

    one, two = gpu_check.run_env(tmp_path / "r.jsonl", 1), gpu_check.run_env(tmp_path / "r.jsonl", 2)
    assert two["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and two["GPUCOURSE_BACKEND"] == "gpu"
    assert one.get("XLA_PYTHON_CLIENT_PREALLOCATE") == __import__("os").environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")


def test_each_gpu_extra_brings_one_cuda_major_and_numba_cuda_declares_it():
    """F7: numba-cuda without a flavour resolves to cuda-bindings 13 (driver >= 580); the `gpu` extra must pin the
    CUDA 12 flavour, `gpu-cuda13` the CUDA 13 one — as numba-cuda's own metadata defines the two."""
    import importlib.metadata
    import re
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    declared = importlib.metadata.distribution("numba-cuda").requires
    for extra, flavour, cupy, jax_extra in (("gpu", "cu12", "cupy-cuda12x", "cuda12"),
                                            ("gpu-cuda13", "cu13", "cupy-cuda13x", "cuda13")):
        reqs = extras[extra]
        assert any(r.startswith(f"numba-cuda[{flavour}]") for r in reqs), reqs
        assert any(r.startswith(cupy) for r in reqs) and any(r.startswith(f"jax[{jax_extra}]") for r in reqs), reqs
        bindings = [r for r in declared if r.startswith("cuda-bindings") and f'extra == "{flavour}"' in r]
        assert bindings, f"numba-cuda declares no {flavour} extra: {declared}"
        major = int(flavour[2:])
        bound = re.findall(r"([<>=]=?)\s*(\d+)", bindings[0].split(";")[0])
        assert ("<", str(major + 1)) in bound or ("==", str(major)) in bound, bindings
    assert any("cuda-bindings>=13" in r for r in extras["toolchain"])  # so only gpu-cuda13 combines with it


def test_cuda_event_timing_queues_a_spin_before_the_first_start_event(monkeypatch):
    """Issue 25 / a fresh GPU read: with one call timed (`repeat=1`, as measure_interleaved does), the start event
    of an idle GPU fires at once and the interval holds the host's launch path; a spin kernel queued before it keeps
    the GPU busy until the call is queued. CuPy is stubbed at its boundary: the order of what reaches the stream."""
    from types import SimpleNamespace

    from gpucourse import timing

    log = []

    class Event:
        def record(self, stream):
            log.append("record")

        def synchronize(self):
            log.append("sync")

    def raw_kernel(source, name):
        assert "clock64()" in source and name == "lead"
        return lambda grid, block, args: log.append(("lead", grid, block, int(args[0])))

    cuda = SimpleNamespace(Event=Event, get_current_stream=lambda: "stream", get_elapsed_time=lambda a, b: 0.05,
                           Device=lambda *a: SimpleNamespace(attributes={"ClockRate": 1_980_000}, id=0))
    cp = SimpleNamespace(cuda=cuda, RawKernel=raw_kernel, int64=int)
    monkeypatch.setattr(timing, "get_backend", lambda: SimpleNamespace(is_gpu=True, xp=cp))
    monkeypatch.setattr(timing, "block", lambda out: None)
    t = timing.measure(lambda: log.append("call"), warmup=0, repeat=1, clock="cuda")
    assert log[:4] == [("lead", (1,), (1,), int(timing.LEAD_S * 1.98e9)), "record", "call", "record"]
    assert t.times == (0.05e-3,) and t.clock == "cuda"
