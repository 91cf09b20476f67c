"""The backend module: detection, the override variable, and never crashing on a driverless CuPy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gpucourse as gc
from gpucourse import backend as B

NO_GPU = B.GpuProbe(False, "test: no GPU")
A_GPU = B.GpuProbe(True, "test: fake GPU", name="NVIDIA H200", compute_capability=(9, 0), sm_count=132,
                   memory_bytes=141 * 10**9, driver="12.8", runtime="12.8")


def test_auto_picks_cpu_without_a_gpu():
    be = B.select_backend("auto", probe=NO_GPU)
    assert be.name == "cpu" and not be.is_gpu
    assert be.xp is np


def test_auto_picks_gpu_when_probe_finds_one():
    be = B.select_backend("auto", probe=A_GPU)
    assert be.name == "gpu"
    assert "H200" in be.banner() and "compute capability 9.0" in be.banner()


def test_cpu_override_wins_over_a_gpu():
    assert B.select_backend("cpu", probe=A_GPU).name == "cpu"


def test_gpu_override_without_gpu_raises_with_reason():
    with pytest.raises(B.BackendUnavailable, match="no usable GPU: test: no GPU"):
        B.select_backend("gpu", probe=NO_GPU)


def test_environment_variable_is_read(monkeypatch):
    monkeypatch.setenv(B.ENV_VAR, "CPU")
    assert B.select_backend(probe=A_GPU).name == "cpu"
    monkeypatch.setenv(B.ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="not one of auto, cpu, gpu"):
        B.select_backend(probe=A_GPU)


def test_probe_never_raises_here():
    probe = B.probe_gpu()
    assert isinstance(probe.ok, bool) and probe.reason


def test_driverless_cupy_is_reported_not_raised(tmp_path):
    """A fake `cupy` whose first use raises like CUDARuntimeError without a driver: detection says why."""
    fake = tmp_path / "cupy"
    (fake / "cuda").mkdir(parents=True)
    (fake / "__init__.py").write_text("from . import cuda\n")
    (fake / "cuda" / "__init__.py").write_text(
        "class CUDARuntimeError(RuntimeError):\n    pass\n"
        "class runtime:\n"
        "    @staticmethod\n"
        "    def getDeviceCount():\n"
        "        raise CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is insufficient')\n"
    )
    code = (
        "import gpucourse as gc\n"
        "be = gc.get_backend()\n"
        "print(be.name, '|', be.gpu.reason)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__('os').environ, "PYTHONPATH": str(tmp_path), "GPUCOURSE_BACKEND": "auto"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cpu |") and "CUDARuntimeError" in out.stdout and "insufficient" in out.stdout


def test_banner_names_device_and_versions(capsys):
    be = gc.setup()
    text = capsys.readouterr().out
    assert "gpucourse:" in text and "numpy" in text and "jax" in text
    assert be.describe()["arrays"] in ("NumPy", "CuPy")


def test_cpu_backend_runs_kernels_on_the_executor():
    code = (
        "import os, sys, gpucourse as gc\n"
        "be = gc.get_backend()\n"
        "cuda = be.cuda\n"
        "print(be.name, type(cuda).__name__, hasattr(cuda, 'threadIdx'), 'numba.cuda' in sys.modules)\n"
        "import numpy as np\n"
        "@cuda.jit\n"
        "def add_one(a):\n"
        "    i = cuda.grid(1)\n"
        "    if i < a.size:\n"
        "        a[i] += 1\n"
        "x = np.arange(5.0)\n"
        "add_one[2, 4](x)\n"
        "print(x.tolist(), add_one.last_report.n_threads)\n"
    )
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("GPUCOURSE_CUDA_SIM", "NUMBA_ENABLE_CUDASIM")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "GPUCOURSE_BACKEND": "cpu"})
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first == "cpu CudaAPI False False"  # the executor; numba.cuda never imported
    assert second == "[1.0, 2.0, 3.0, 4.0, 5.0] 8"
    out = subprocess.run([sys.executable, "-c", code.replace(", add_one.last_report.n_threads", "")],
                         capture_output=True, text=True,
                         env={**env, "GPUCOURSE_BACKEND": "cpu", "GPUCOURSE_CUDA_SIM": "numba"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == ["cpu module False True", "[1.0, 2.0, 3.0, 4.0, 5.0]"]


def test_require_gpu_prints_reason_on_cpu(capsys, monkeypatch):
    monkeypatch.setattr(B, "_BACKEND", B.select_backend("auto", probe=NO_GPU))
    assert gc.require_gpu("CUDA events") is False
    assert "[GPU only] skipped on this machine: CUDA events" in capsys.readouterr().out


def test_array_module_and_transfers():
    be = B.select_backend("cpu")
    a = np.arange(3.0)
    assert gc.array_module(a) is np
    assert be.to_host(be.to_device(a)).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.gpu
def test_gpu_backend_is_real():
    be = gc.get_backend()
    assert be.is_gpu
    x = be.xp.arange(10, dtype=be.xp.float32)
    assert float((x * 2).sum().get()) == 90.0
    assert be.jax_device.platform == "gpu"
