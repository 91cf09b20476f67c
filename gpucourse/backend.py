"""Which machine the course runs on: CPU-only or an NVIDIA GPU.

This module is the only place in the course that touches CuPy, numba-cuda and device discovery.
Everything else asks it for:

- ``xp``         the array module: CuPy on a GPU, NumPy on CPU;
- ``jax_device`` the device JAX places arrays on;
- ``cuda``       the kernel runner: numba-cuda on the device; on CPU the course's instrumented
                 SIMT executor (``gpucourse.simt.cuda``: numba-cuda's API, every CUDA thread a
                 coroutine, each launch's report in ``kernel.last_report``), or numba's CUDA
                 simulator with ``GPUCOURSE_CUDA_SIM=numba``;
- ``sync()``     wait until all queued device work has finished.

Choose the backend with the environment variable ``GPUCOURSE_BACKEND``:

- ``auto`` (default): the GPU when CuPy can talk to a CUDA device, else the CPU;
- ``cpu``: always the CPU path, even on a GPU machine (useful to compare);
- ``gpu``: insist on the GPU; raises :class:`BackendUnavailable` with the reason when there is none.

``import cupy`` succeeds on a machine without a driver; the *first use* raises ``CUDARuntimeError``.
Detection therefore asks CuPy for the device count inside a ``try`` and never lets that error
escape.
"""

from __future__ import annotations

import importlib
import os
import platform
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import Any

ENV_VAR = "GPUCOURSE_BACKEND"
CHOICES = ("auto", "cpu", "gpu")
# CPU kernel runner: "simt" (default, the course's executor) or "numba" (numba's simulator)
SIM_VAR = "GPUCOURSE_CUDA_SIM"
SIM_CHOICES = ("simt", "numba")


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine (the message says why)."""


@dataclass(frozen=True)
class GpuProbe:
    """What device discovery found. ``ok`` is False with a human-readable ``reason`` when there is
    no GPU."""

    ok: bool
    reason: str
    name: str = ""
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None
    memory_bytes: int | None = None
    driver: str | None = None
    runtime: str | None = None


def _cuda_version(v: int) -> str:
    """CUDA encodes versions as 1000*major + 10*minor (12040 -> '12.4')."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def probe_gpu() -> GpuProbe:
    """Ask CuPy whether a CUDA device is usable. Never raises."""
    try:
        import cupy  # (import works without a driver)
    except Exception as exc:  # ImportError, or a broken CUDA install
        hint = (
            " (an NVIDIA driver is present: install the GPU extra, pip install -e '.[gpu]')"
            if shutil.which("nvidia-smi")
            else ""
        )
        return GpuProbe(False, f"CuPy is not installed{hint}: {exc.__class__.__name__}")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count < 1:
            return GpuProbe(False, "CuPy found no CUDA device")
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return GpuProbe(
            True,
            f"{count} CUDA device(s) found by CuPy",
            name=name,
            compute_capability=(int(props["major"]), int(props["minor"])),
            sm_count=int(props["multiProcessorCount"]),
            memory_bytes=int(props["totalGlobalMem"]),
            driver=_cuda_version(cupy.cuda.runtime.driverGetVersion()),
            runtime=_cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
        )
    except Exception as exc:  # cupy_backends.cuda.api.runtime.CUDARuntimeError without a driver
        return GpuProbe(
            False,
            f"CuPy is installed but no CUDA device is usable ({exc.__class__.__name__}: {exc})",
        )


def _requested() -> str:
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        raise ValueError(f"{ENV_VAR}={value!r} is not one of {', '.join(CHOICES)}")
    return value


def cpu_kernel_runner() -> str:
    """Which CPU kernel runner ``GPUCOURSE_CUDA_SIM`` asks for: 'simt' (default) or 'numba'."""
    value = os.environ.get(SIM_VAR, "simt").strip().lower() or "simt"
    if value not in SIM_CHOICES:
        raise ValueError(f"{SIM_VAR}={value!r} is not one of {', '.join(SIM_CHOICES)}")
    return value


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def _enable_cuda_simulator() -> None:
    """Make ``numba.cuda`` the CUDA simulator. Must happen before ``numba.cuda`` is first
    imported."""
    if "numba.cuda" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        # numba.cuda was imported as the real target; it cannot be swapped inside this process.
        raise BackendUnavailable(
            "numba.cuda was imported before the course chose the CPU backend; restart the kernel"
            " and run `import gpucourse as gc; gc.setup()` first"
        )
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if "numba" in sys.modules:
        from numba.core import config

        config.reload_config()


@dataclass(frozen=True)
class Backend:
    """The chosen backend. Create it with :func:`get_backend`; it is cached per process."""

    name: str  # "cpu" or "gpu"
    reason: str  # why this backend was chosen
    gpu: GpuProbe = field(repr=False)

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    # -- what notebooks use ------------------------------------------------------------------------
    @cached_property
    def xp(self) -> ModuleType:
        """The array module: ``cupy`` on a GPU, ``numpy`` on CPU."""
        return importlib.import_module("cupy" if self.is_gpu else "numpy")

    @cached_property
    def jax_device(self) -> Any:
        """The device JAX puts arrays on (a GPU when JAX's CUDA plugin is installed, else the
        CPU)."""
        import jax

        if self.is_gpu:
            try:
                return jax.devices("gpu")[0]
            except RuntimeError:
                warnings.warn(
                    "JAX has no CUDA plugin here (pip install -e '.[gpu]'); JAX runs on the CPU"
                )
        return jax.devices("cpu")[0]

    @cached_property
    def cuda(self) -> Any:
        """``numba.cuda`` on a GPU; on CPU the course's SIMT executor with numba-cuda's API
        (``gpucourse.simt.cuda``), or numba's CUDA simulator when ``GPUCOURSE_CUDA_SIM=numba``."""
        if not self.is_gpu:
            if cpu_kernel_runner() == "simt":
                from .simt import cuda as simt_cuda

                return simt_cuda
            _enable_cuda_simulator()
        from numba import cuda

        return cuda

    @property
    def kernel_runner(self) -> str:
        if self.is_gpu:
            return "numba-cuda on the GPU"
        if cpu_kernel_runner() == "numba":
            return f"numba CUDA simulator ({SIM_VAR}=numba: one Python thread per CUDA thread)"
        return (
            "gpucourse SIMT executor (numba-cuda's API; CUDA threads as coroutines, instrumented)"
        )

    def to_device(self, array: Any) -> Any:
        """Copy a host (NumPy) array to the backend's memory; a no-op on CPU."""
        return self.xp.asarray(array)

    def to_host(self, array: Any) -> Any:
        """Copy an array back to host memory as NumPy."""
        if self.is_gpu and hasattr(array, "get"):
            return array.get()
        import numpy as np

        return np.asarray(array)

    def sync(self) -> None:
        """Block until every command queued on the device has finished
        (``cudaDeviceSynchronize``)."""
        if self.is_gpu:
            self.xp.cuda.Device().synchronize()

    # -- what the banner prints --------------------------------------------------------------------
    def describe(self) -> dict[str, str]:
        info: dict[str, str] = {"backend": self.name, "why": self.reason}
        if self.is_gpu:
            g = self.gpu
            cc = (
                f"{g.compute_capability[0]}.{g.compute_capability[1]}"
                if g.compute_capability
                else "?"
            )
            info["device"] = (
                f"{g.name} (compute capability {cc}, {g.sm_count} SMs, {g.memory_bytes / 2**30:.0f}"
                " GiB)"
            )
            info["CUDA driver / runtime"] = f"{g.driver} / {g.runtime}"
        else:
            info["device"] = f"{_cpu_name()} ({os.cpu_count()} logical cores)"
            info["GPU"] = self.gpu.reason
        info["arrays"] = "CuPy" if self.is_gpu else "NumPy"
        info["kernels"] = self.kernel_runner
        versions = {
            m: _version(m)
            for m in (
                "numpy",
                "jax",
                "jaxlib",
                "numba",
                "numba-cuda",
                "cupy-cuda12x",
                "cupy-cuda13x",
            )
        }
        info["versions"] = ", ".join(f"{m} {v}" for m, v in versions.items() if v)
        info["python"] = f"{platform.python_version()} on {platform.system()} {platform.machine()}"
        return info

    def banner(self) -> str:
        rows = self.describe()
        width = max(len(k) for k in rows)
        title = "GPU backend" if self.is_gpu else "CPU backend (no NVIDIA GPU in use)"
        lines = [f"== gpucourse: {title} =="]
        lines += [f"  {k.ljust(width)} : {v}" for k, v in rows.items()]
        if not self.is_gpu:
            lines.append(
                "  Cells marked [GPU only] print what they would measure and show published figures"
                " instead."
            )
        return "\n".join(lines)


_BACKEND: Backend | None = None


def select_backend(requested: str | None = None, probe: GpuProbe | None = None) -> Backend:
    """Decide the backend without caching it (``requested`` overrides the environment variable)."""
    requested = (requested or _requested()).lower()
    if requested not in CHOICES:
        raise ValueError(f"backend {requested!r} is not one of {', '.join(CHOICES)}")
    if requested == "cpu":
        return Backend(
            "cpu", f"{ENV_VAR}=cpu", probe or GpuProbe(False, "not probed: CPU backend requested")
        )
    probe = probe or probe_gpu()
    if probe.ok:
        return Backend("gpu", probe.reason, probe)
    if requested == "gpu":
        raise BackendUnavailable(f"{ENV_VAR}=gpu but there is no usable GPU: {probe.reason}")
    return Backend("cpu", "auto: no usable NVIDIA GPU", probe)


def get_backend() -> Backend:
    """The process-wide backend (decided once, on first use)."""
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = select_backend()
    return _BACKEND


def gpu_available() -> bool:
    """True when the course runs on an NVIDIA GPU."""
    return get_backend().is_gpu


def array_module(*arrays: Any) -> ModuleType:
    """NumPy or CuPy, whichever the arrays live in (like ``cupy.get_array_module``).

    Args:
        *arrays: the arrays to look at (NumPy, CuPy, or Python scalars).
    Returns:
        the module ``numpy`` or ``cupy``.
    """
    for a in arrays:
        if type(a).__module__.split(".")[0] == "cupy":
            return importlib.import_module("cupy")
    return importlib.import_module("numpy")


def require_gpu(what: str) -> bool:
    """Guard for GPU-only notebook cells: returns True on a GPU, else prints why the cell is
    skipped.

    Usage::

        if gc.require_gpu("CUDA-event timing of an empty kernel"):
            ...  # real GPU code
    """
    if gpu_available():
        return True
    print(f"[GPU only] skipped on this machine: {what}. ({get_backend().gpu.reason})")
    return False
