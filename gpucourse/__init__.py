"""gpucourse: the helper package every notebook of the course imports.

    import gpucourse as gc
    be = gc.setup()          # choose the backend, print the banner, apply the plot style

Modules, by what they hold:

- ``backend``  CPU-only vs NVIDIA GPU: array module, JAX device, kernel runner, synchronisation
- ``timing``   the one timing helper (warm-up, synchronise, repeat, median and spread)
- ``plotting`` the one figure style (labelled axes with units, light and dark themes)
- ``roofline`` the roofline model and measurements of a machine's roofs
- ``datapath`` disk → RAM → PCIe → VRAM: published bandwidths, transfer/offload models, pinned
  copies
- ``devmem``   a device-memory budget that tracks allocations, peaks and copies, and raises OOM
- ``simd_simt`` CPU vector width and compiled vector instructions; one warp's active masks (stored
  data)
- ``simt``     the instrumented SIMT executor with numba-cuda's API (the CPU backend's kernel
  runner): traffic, SIMT efficiency, races, barrier divergence, uninitialised reads
- ``occupancy`` blocks/warps per SM as NVIDIA's cuda_occupancy.h computes them; Little's law
- ``occupancy_nvidia`` NVIDIA's own occupancy calculator (cuda_occupancy.h) compiled with g++, no
  GPU needed
- ``records``  numbers a notebook measured (``gc.record``), gathered by the one GPU command
- ``gpu_check`` the one GPU command: ``python -m gpucourse.gpu_check``
- ``streams``  the command queue and streams: an engine model that draws timelines, real CuPy
  streams on a GPU
- ``blas``     BLAS levels made countable (the source article's triple loop with counters)
- ``hardware`` published figures (with sources) for GPUs the course cannot measure everywhere
- ``training_memory`` params / grads / optimizer state / activations: estimates vs XLA's buffers
- ``toolchain`` PTX/SASS for sm_90 with no GPU: numba-cuda → PTX, NVRTC → cubin, nvdisasm → SASS
- ``systolic`` a cycle-stepped weight-stationary systolic array (the TPU's MXU), tiling and
  utilization
- ``interconnect`` tori and meshes: hop counts, α–β costs of collectives, a message-level simulation
- ``tpu``      published TPU v4/v5e/v5p/v6e figures, ridge points, slice wraparound rules
- ``pallas_tpu`` a traced Pallas kernel's VMEM per grid step and HBM traffic, as the TPU pipeline
  runs it
- ``colab``    "Open in Colab": the badge and the first cell that installs the course in Colab
- ``xla``      what XLA compiled: optimized HLO, fusions, the GEMM and who runs it, cost analysis,
  buffer assignment
- ``xla_gpu``  XLA's GPU compiler run deviceless for an H100: optimized HLO, PTX and SASS without a
  GPU
- ``fusion``   what fusion saves, measured: dispatches, bytes and page faults per call, and a model
  of the time ratio
"""

from __future__ import annotations

import importlib
import os
import warnings

from . import (
    backend,
    blas,
    datapath,
    devmem,
    fusion,
    hardware,
    interconnect,
    occupancy,
    pallas_tpu,
    plotting,
    records,
    roofline,
    simd_simt,
    simt,
    streams,
    systolic,
    timing,
    toolchain,
    tpu,
    training_memory,
    xla,
)
# xla_gpu is imported on use (`from gpucourse import xla_gpu`): it is also a command, python -m
# gpucourse.xla_gpu
from .backend import (
    Backend,
    BackendUnavailable,
    array_module,
    get_backend,
    gpu_available,
    require_gpu,
)
from .records import record
from .timing import Timing, block, confirm_faster, measure

__all__ = [
    "Backend",
    "BackendUnavailable",
    "Timing",
    "array_module",
    "backend",
    "blas",
    "block",
    "get_backend",
    "confirm_faster",
    "gpu_available",
    "record",
    "records",
    "hardware",
    "measure",
    "plotting",
    "require_gpu",
    "roofline",
    "setup",
    "datapath",
    "devmem",
    "fusion",
    "simd_simt",
    "simt",
    "systolic",
    "interconnect",
    "toolchain",
    "occupancy",
    "streams",
    "timing",
    "training_memory",
    "xla",
    "xla_gpu",
    "tpu",
    "pallas_tpu",
]

__version__ = "0.1.0"


def quiet_warnings() -> None:
    """Silence library warnings that would otherwise reach stderr.

    nbgrader scores a test cell that writes *anything* to stderr as 0, so graded notebooks must stay
    quiet; on a real GPU numba-cuda warns ``NumbaPerformanceWarning`` about the small grids the labs
    launch — its own class, ``numba.cuda.core.errors.NumbaPerformanceWarning``, which is not numba's
    (both are silenced) — and cuda.core warns once per process, at the first link, when
    ``cuda.bindings.nvjitlink`` is missing.
    """
    # read when numba-cuda loads its config
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    for module in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            warnings.simplefilter("ignore", importlib.import_module(module).NumbaPerformanceWarning)
        # numba or numba-cuda missing, or an older layout: nothing to silence there
        except Exception:
            pass
    warnings.filterwarnings(
        "ignore", message=".*nvjitlink is not available.*", category=RuntimeWarning
    )
    warnings.filterwarnings("ignore", message=".*An NVIDIA GPU may be present on this machine.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def setup(verbose: bool = True) -> Backend:
    """Choose the backend (``GPUCOURSE_BACKEND`` = auto|cpu|gpu), print its banner, apply the plot
    style.

    Args:
        verbose: print the backend's banner.
    Returns:
        the :class:`Backend`: its array module ``xp``, ``is_gpu``, ``to_host`` and ``cuda``.
    """
    be = get_backend()
    quiet_warnings()
    plotting.use_style()
    if verbose:
        print(be.banner())
    return be
