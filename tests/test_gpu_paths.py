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
    assert answers.compiled_collectives((None, None), (None, None), (None, None), mesh_shape=(1, 1)) == []
