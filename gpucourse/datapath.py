"""How data reaches the GPU: disk → CPU memory → (PCIe DMA) → GPU memory, as numbers and models.

- ``BANDWIDTHS``: published bandwidths of every hop, with sources (bytes/s, one direction,
  theoretical peak);
- ``transfer_time`` / ``roofline_time`` / ``offload_times``: the model that decides whether
  offloading pays: a transfer costs ``latency + bytes / bandwidth``; work on a processor costs the
  roofline's ``max(flops / peak, bytes / memory bandwidth)``; offloading costs to_gpu + process +
  to_cpu;
- ``break_even``: the smallest problem size at which offloading (transfers included) beats the CPU;
- ``pcie_bandwidth``: a PCIe link's raw rate and what its line encoding leaves (128b/130b, Gen 6
  FLITs);
- ``measure_host_copy`` / ``measure_host_add`` / ``measure_host_peak_flops``: this machine's host
  memory bandwidth (bytes read + written) and GEMM peak, with NumPy on the host whatever the backend
  (real, any machine);
- ``measure_h2d`` / ``measure_d2h``: pageable vs pinned transfers with CUDA events (real, GPU
  backend only);
- ``kv_cache_bytes``: the KV cache of a transformer, the modern reason to offload GPU memory;
- ``draw_timeline``: the steps of a program as bars on a time axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import hardware
from .backend import get_backend
from .roofline import Roofline
from .timing import Timing, measure

# bytes in a gigabyte (10^9, as datasheets count)
GB = 1e9


# -- PCIe: raw signalling rate vs what the line encoding leaves ------------------------------------

@dataclass(frozen=True)
class PCIeRate:
    """One direction of a PCIe link (bytes/s). ``raw`` is the signalling rate (GT/s × lanes / 8);
    ``encoded`` is what is left for packets after the line encoding; transaction-layer headers (≈
    20–30 bytes per packet of at most 128–512 bytes of payload) and flow control take a further few
    percent of ``encoded``."""

    generation: int
    lanes: int
    raw: float
    encoded: float
    encoding: str


# generation -> (GT/s per lane, encoding, payload fraction of the line code). PCI-SIG
# specifications: 8b/10b for Gen 1–2; 128b/130b for Gen 3–5; Gen 6 signals PAM4 at 64 GT/s in FLIT
# mode with no line code, and each 256-byte FLIT carries 236 bytes of transaction-layer packets
# beside 6 bytes of data-link payload, 8 of CRC and 6 of FEC.
_PCIE_GENERATIONS = {
    1: (2.5, "8b/10b", 8 / 10),
    2: (5.0, "8b/10b", 8 / 10),
    3: (8.0, "128b/130b", 128 / 130),
    4: (16.0, "128b/130b", 128 / 130),
    5: (32.0, "128b/130b", 128 / 130),
    6: (64.0, "PAM4, 256-byte FLITs (236 bytes of packets each)", 236 / 256),
}


def pcie_bandwidth(generation: int, lanes: int = 16) -> PCIeRate:
    """Bytes/s of one direction of a PCIe Gen ``generation`` ×``lanes`` link, raw and after the line
    encoding."""
    if generation not in _PCIE_GENERATIONS:
        raise ValueError(
            f"PCIe generation must be one of {sorted(_PCIE_GENERATIONS)}, got {generation!r}"
        )
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"a PCIe link has 1, 2, 4, 8 or 16 lanes, got {lanes!r}")
    gts, encoding, fraction = _PCIE_GENERATIONS[generation]
    # one bit per transfer per lane (PAM4 carries 2 bits per symbol at 32 GBd)
    raw = gts * 1e9 * lanes / 8
    return PCIeRate(generation, lanes, raw, raw * fraction, encoding)


# Published peak bandwidths, bytes/s, one direction. (name -> (bytes/s, source)). PCIe rows are
# after the line encoding (what DMA can at most move); datasheets usually quote the raw rate (32 /
# 64 GB/s for Gen 4 / Gen 5 ×16).
BANDWIDTHS: dict[str, tuple[float, str]] = {
    "NVMe SSD, PCIe 4.0 x4": (7.45 * GB, "Samsung 990 PRO datasheet: 7,450 MB/s sequential read"),
    "NVMe SSD, PCIe 5.0 x4": (14.5 * GB, "Crucial T705 datasheet: 14,500 MB/s sequential read"),
    "PCIe 4.0 x16": (
        pcie_bandwidth(4).encoded,
        "PCI-SIG PCIe 4.0: 16 GT/s × 16 lanes = 32 GB/s raw, 128b/130b",
    ),
    "PCIe 5.0 x16": (
        pcie_bandwidth(5).encoded,
        "PCI-SIG PCIe 5.0: 32 GT/s × 16 lanes = 64 GB/s raw, 128b/130b",
    ),
    "DDR5-5600, 2 channels (desktop)": (
        89.6 * GB,
        "JEDEC JESD79-5: 5600 MT/s × 8 bytes × 2 channels",
    ),
    "DDR5-4800, 12 channels (EPYC 9004 server)": (
        460.8 * GB,
        "AMD EPYC 9004 spec: 12 channels DDR5-4800",
    ),
    "NVLink 4 (H100, per GPU, each direction)": (
        hardware.LINKS["NVLink 4 (H100, per GPU, each direction)"],
        "NVIDIA H100 datasheet: 900 GB/s total = 450 GB/s each direction",
    ),
    "HBM3 (H100 SXM)": (hardware.H100_SXM.memory_bandwidth, hardware.H100_SXM.source),
    "HBM3e (H200 SXM)": (hardware.H200_SXM.memory_bandwidth, hardware.H200_SXM.source),
}

# Grace Hopper (GH200) as it shipped: two physical memories joined by a cache-coherent chip-to-chip
# link, one address space. bytes/s. Source: NVIDIA's GH200 product page and datasheet
# (https://www.nvidia.com/en-us/data-center/ grace-hopper-superchip/, 2024): Grace CPU with up to
# 480 GB LPDDR5X; Hopper GPU with 96 GB HBM3 at 4 TB/s or, the HBM3e SKU, 144 GB at 4.9 TB/s;
# NVLink-C2C 900 GB/s total = 450 GB/s each direction. Two figures are nominal, not settled: the
# LPDDR5X rate (512 GB/s is the datasheet's "up to"; other sources quote ≈ 500 GB/s, and NVIDIA's
# Grace tuning guide says a superchip's memory bandwidth scales with its memory capacity:
# docs.nvidia.com/ grace-perf-tuning-guide/health-checks.html), and the HBM3e SKU, announced in
# August 2023 as 141 GB at 5 TB/s (NVIDIA press release, 8 Aug 2023), listed later as 144 GB at 4.9
# TB/s. (The 2022 pre-launch figures — 3 TB/s HBM3, 512 GB LPDDR5X at 546 GB/s, NVIDIA's "Grace
# Hopper Superchip Architecture In-Depth" — are superseded.)
GRACE_HOPPER: dict[str, float] = {
    "HBM3 (Hopper GPU, 96 GB)": 4000 * GB,
    "HBM3e (Hopper GPU, 144 GB version)": 4900 * GB,
    "LPDDR5X (Grace CPU, up to 480 GB)": 512 * GB,
    "NVLink-C2C (CPU ↔ GPU, each direction)": 450 * GB,
}

# Article 000's CPU / GPU / NPU table with one published example of each, compared like with
# like:
# - cores: independent instruction streams (CPU cores; GPU SMs; TPU TensorCores);
# - fp32 vector ALUs (key fp32_lanes): fp32 units of the vector units, outside any matrix unit,
#   counted as units,
#   not FLOPs: an FMA unit (2 FLOPs per cycle) on the CPU and the GPU, an ALU on the TPU's VPU (CPU:
#   FMA pipes ×
#   SIMD width; H100: FP32 units of the SMs, one per lane; TPU v4: the (8, 128) VPU of each
#   TensorCore with two ALUs per lane — "a total of 2048 floating point
#   adders" per core, JAX scaling book, TPU chapter);
# - dense bf16 matrix FLOP/s: the matrix units (H100 tensor cores, TPU MXUs; the desktop CPU has
#   none), dense,
#   not 2:4-sparse.
PROCESSORS: dict[str, dict[str, Any]] = {
    "CPU (AMD Ryzen 9 9950X, desktop)": dict(
        cores=16,
        core_kind="cores",
        fp32_lanes=16 * 4 * 16,
        bf16_matrix_flops=None,
        memory="DDR5, 2 channels",
        bandwidth=89.6 * GB,
        source=(
            "AMD product page: 16 Zen 5 cores, AVX-512 with a 512-bit datapath; AMD's Zen 5"
            " software optimization guide: 2 FMA and 2 FADD pipes × 16 fp32 lanes per core;"
            " DDR5-5600 dual channel; no matrix unit"
        ),
    ),
    "GPU (NVIDIA H100 SXM)": dict(
        cores=132,
        core_kind="SMs",
        fp32_lanes=132 * 128,
        bf16_matrix_flops=hardware.H100_SXM.peak_flops["bf16-tensor"],
        memory="HBM3 80 GB",
        bandwidth=hardware.H100_SXM.memory_bandwidth,
        source=(
            "NVIDIA Hopper whitepaper: 132 SMs × 128 FP32 units = 16,896 'CUDA cores'; H100 SXM"
            " datasheet: 989.4 TFLOP/s dense bf16 on tensor cores"
        ),
    ),
    "NPU (Google TPU v4)": dict(
        cores=2,
        core_kind="TensorCores",
        fp32_lanes=2 * 8 * 128 * 2,
        bf16_matrix_flops=275e12,
        memory="HBM2 32 GiB",
        bandwidth=1.2e12,
        source=(
            "Jouppi et al., ISCA 2023: 2 TensorCores × 4 MXUs of 128×128 bf16 MACs, 275 TFLOP/s"
            " bf16, 1.2 TB/s; JAX scaling book, TPU chapter: the VPU is an (8, 128) SIMD unit per"
            " core, 2 ALUs per (lane, sublane)"
        ),
    ),
}
# Jouppi et al. 2023: 275 TFLOP/s = 2 cores × 4 MXUs × 128 × 128 MACs × 2 × 1050 MHz
TPU_V4_CLOCK_HZ = 1050e6


@dataclass(frozen=True)
class Link:
    """A copy path between two memories: ``latency`` [s] per transfer plus ``bytes / bandwidth``
    [B/s]."""

    name: str
    bandwidth: float
    latency: float = 0.0


def pageable_link(link: Link, host_copy_bandwidth: float) -> Link:
    """``link`` as seen by ordinary (pageable) host memory: the CUDA driver first copies the data
    with the CPU into a pinned staging buffer, then DMAs it (CUDA Runtime API, "API synchronization
    behavior"). ``host_copy_bandwidth`` is a memcpy rate counting bytes read + written
    (:func:`measure_host_copy`), so staging b bytes takes 2·b / host_copy_bandwidth. Even with
    staging and DMA perfectly overlapped, the copy runs no faster than the slower of the two:
    min(link, host_copy_bandwidth / 2) — an optimistic bound."""
    return Link(
        f"{link.name}, pageable", min(link.bandwidth, host_copy_bandwidth / 2), link.latency
    )


@dataclass(frozen=True)
class Workload:
    """An offloadable computation: FLOPs, bytes it reads (must reach the GPU) and bytes it writes
    (come back)."""

    name: str
    flops: float
    bytes_in: float
    bytes_out: float


def transfer_time(nbytes: float, link: Link) -> float:
    """Seconds to copy ``nbytes`` over ``link``."""
    return link.latency + nbytes / link.bandwidth


def roofline_time(flops: float, nbytes: float, roof: Roofline) -> float:
    """Best-case seconds for ``flops`` FLOPs that move ``nbytes`` to/from ``roof``'s memory.

    Args:
        flops: floating-point operations.
        nbytes: bytes moved to and from memory.
        roof: the machine (peak FLOP/s, bandwidth in bytes/s).
    Returns:
        seconds: ``max(flops / peak, nbytes / bandwidth)``.
    """
    return max(flops / roof.peak_flops, nbytes / roof.bandwidth)


def offload_times(w: Workload, cpu: Roofline, gpu: Roofline, link: Link) -> dict[str, float]:
    """The article 002 program's steps in seconds: on the CPU, or to_gpu → process → to_cpu on the
    GPU.

    Args:
        w: the workload (its bytes and FLOPs).
        cpu, gpu: each side's roofline.
        link: the CPU-GPU link (bandwidth in bytes/s, latency in s).
    Returns:
        seconds per step: ``{"cpu": …, "to_gpu": …, "process": …, "to_cpu": …}``.
    """
    traffic = w.bytes_in + w.bytes_out
    return {
        "cpu": roofline_time(w.flops, traffic, cpu),
        "to_gpu": transfer_time(w.bytes_in, link),
        "process": roofline_time(w.flops, traffic, gpu),
        "to_cpu": transfer_time(w.bytes_out, link),
    }


def gpu_total(times: dict[str, float]) -> float:
    return times["to_gpu"] + times["process"] + times["to_cpu"]


# §3.7's two workloads of size n (float32): what break_even searches over (a fixed table, not any
# function: the search is the course's demonstration of offloading, not a root finder for other
# models)
WORKLOADS: dict[str, Callable[[int], Workload]] = {
    "vector add": lambda n: Workload(f"vector add n={n}", flops=n, bytes_in=8 * n, bytes_out=4 * n),
    "matmul": lambda n: Workload(
        f"matmul n={n}", flops=2 * n**3, bytes_in=8 * n * n, bytes_out=4 * n * n
    ),
}


def _real_machine(what: str, machine: Any, rates: tuple[str, ...]) -> None:
    for rate in rates:
        value = getattr(machine, rate, None)
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(
                f"break_even: {what}.{rate} must be a finite positive rate, got {value!r}"
            )


def break_even(
    workload: str, cpu: Roofline, gpu: Roofline, link: Link, n_max: int = 1 << 40
) -> int | None:
    """Smallest n in [1, n_max] at which offloading ``workload`` (a name of :data:`WORKLOADS`:
    "vector add" or "matmul", float32) to ``gpu`` over ``link`` — transfers included — beats running
    it on ``cpu``, assuming that once offloading pays it keeps paying as n grows. None when it never
    pays up to ``n_max``. The machines must be real: finite positive rates, a finite latency."""
    if workload not in WORKLOADS:
        raise ValueError(
            f"break_even: workload must be one of {sorted(WORKLOADS)}, got {workload!r}"
        )
    for what, machine in (("cpu", cpu), ("gpu", gpu)):
        if not isinstance(machine, Roofline):
            raise TypeError(
                f"break_even: {what} must be a gc.roofline.Roofline, got {type(machine).__name__}"
            )
        _real_machine(what, machine, ("peak_flops", "bandwidth"))
    if not isinstance(link, Link):
        raise TypeError(f"break_even: link must be a datapath.Link, got {type(link).__name__}")
    _real_machine("link", link, ("bandwidth",))
    if not (
        isinstance(link.latency, (int, float)) and math.isfinite(link.latency) and link.latency >= 0
    ):
        raise ValueError(f"break_even: link.latency must be finite and ≥ 0, got {link.latency!r}")
    model = WORKLOADS[workload]

    def pays(n: int) -> bool:
        t = offload_times(model(n), cpu, gpu, link)
        return gpu_total(t) < t["cpu"]

    if not pays(n_max):
        return None
    # pays(hi) is True; pays(lo) is False (n = 0 never pays: latency > 0 or equal)
    lo, hi = 0, n_max
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pays(mid):
            hi = mid
        else:
            lo = mid
    return hi


def measure_host_copy(nbytes: int = 64 * 2**20, repeat: int = 7) -> tuple[float, Timing]:
    """This machine's host memory bandwidth from a memcpy (``np.copyto``, one core) of ``nbytes``
    (larger than most CPUs' caches).

    Returns (bytes/s, timing). A copy **reads** ``nbytes`` and **writes** ``nbytes``: the rate
    counts both (2 × ``nbytes`` per copy), as STREAM's Copy kernel does, so it compares with other
    memory bandwidths. Extra traffic that a write-allocate cache would add (reading the
    destination's lines before writing them) is not counted, as in STREAM; large copies usually
    avoid it with non-temporal stores. The best of ``repeat`` runs is used: interference from other
    programs only ever slows a run down. NumPy on the host, whatever the backend.
    """
    src = np.ones(nbytes, dtype=np.uint8)
    dst = np.empty_like(src)
    t = measure(np.copyto, dst, src, repeat=repeat, max_seconds=2.0)
    return 2 * nbytes / t.best, t


def measure_host_add(nbytes: int = 64 * 2**20, repeat: int = 7) -> tuple[float, Timing]:
    """Host memory bandwidth from a STREAM-style add ``c = a + b`` on float32 arrays of ``nbytes``
    each, with NumPy on the host whatever the backend: 3 × ``nbytes`` per call (read a and b, write
    c), best of ``repeat``."""
    n = nbytes // 4
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.empty_like(a)
    t = measure(np.add, a, b, out=c, repeat=repeat, max_seconds=2.0)
    return 3 * n * 4 / t.best, t


def measure_host_peak_flops(
    n: int = 2048, dtype: str = "float32", repeat: int = 5
) -> tuple[float, Timing]:
    """This CPU's matrix-multiply peak (FLOP/s) with NumPy's BLAS on the host, whatever the backend:
    an n×n GEMM (2·n³ FLOPs) on random data, warmed up, the best of ``repeat`` runs — large enough
    that the BLAS runs at its peak on every core, not a small-matrix rate."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    t = measure(np.matmul, a, b, out=out, warmup=1, repeat=repeat, max_seconds=4.0)
    return 2 * n**3 / t.best, t


def _require_gpu_backend() -> Any:
    be = get_backend()
    if not be.is_gpu:
        raise RuntimeError(
            "pinned/pageable transfer timing needs the GPU backend (CuPy + CUDA events)"
        )
    return be.xp


def pinned_empty(nbytes: int) -> np.ndarray:
    """A NumPy uint8 array in page-locked (pinned) host memory: the GPU's DMA engines can read it
    directly."""
    cp = _require_gpu_backend()
    mem = cp.cuda.alloc_pinned_memory(nbytes)
    return np.frombuffer(mem, dtype=np.uint8, count=nbytes)


def measure_h2d(nbytes: int, pinned: bool, repeat: int = 10) -> tuple[float, Timing]:
    """Host→device copy rate [bytes/s] from pageable (ordinary NumPy) or pinned host memory,
    CUDA-event timed."""
    cp = _require_gpu_backend()
    host = pinned_empty(nbytes) if pinned else np.empty(nbytes, dtype=np.uint8)
    host[:] = 1
    dev = cp.empty(nbytes, dtype=cp.uint8)
    t = measure(dev.set, host, repeat=repeat, clock="cuda")
    return nbytes / t.median, t


def measure_d2h(nbytes: int, pinned: bool, repeat: int = 10) -> tuple[float, Timing]:
    """Device→host copy rate [bytes/s] into pageable or pinned host memory, CUDA-event timed."""
    cp = _require_gpu_backend()
    host = pinned_empty(nbytes) if pinned else np.empty(nbytes, dtype=np.uint8)
    dev = cp.ones(nbytes, dtype=cp.uint8)
    t = measure(dev.get, out=host, repeat=repeat, clock="cuda")
    return nbytes / t.median, t


def kv_cache_bytes(
    layers: int, kv_heads: int, head_dim: int, tokens: int, dtype_bytes: int = 2
) -> int:
    """Bytes of a transformer's KV cache: a key and a value vector per layer, KV head and token."""
    return 2 * layers * kv_heads * head_dim * tokens * dtype_bytes


def draw_timeline(ax: Any, rows: dict[str, Sequence[tuple[str, float]]], unit: float = 1e-3,
                  colors: dict[str, str] | None = None) -> None:
    """Draw each row's steps (label, seconds) back to back as horizontal bars; x in ``unit``
    seconds."""
    from .plotting import PALETTE

    labels = sorted({label for steps in rows.values() for label, _ in steps}, key=lambda s: s)
    colors = colors or {}
    order = [s for steps in rows.values() for s, _ in steps]
    palette = {lab: colors.get(lab, PALETTE[order.index(lab) % len(PALETTE)]) for lab in labels}
    seen: set[str] = set()
    for y, (row, steps) in enumerate(rows.items()):
        start = 0.0
        for label, seconds in steps:
            ax.barh(y, seconds / unit, left=start / unit, color=palette[label], edgecolor="white",
                    label=None if label in seen else label)
            seen.add(label)
            start += seconds
    ax.set_yticks(range(len(rows)), list(rows))
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=min(6, len(labels)))


def fmt_rate(bps: float) -> str:
    return f"{bps / GB:,.1f} GB/s" if bps < 1e12 else f"{bps / 1e12:,.2f} TB/s"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = [
    "BANDWIDTHS",
    "GRACE_HOPPER",
    "PROCESSORS",
    "WORKLOADS",
    "Link",
    "PCIeRate",
    "Workload",
    "break_even",
    "ceil_div",
    "draw_timeline",
    "fmt_rate",
    "gpu_total",
    "kv_cache_bytes",
    "measure_d2h",
    "measure_h2d",
    "measure_host_add",
    "measure_host_copy",
    "measure_host_peak_flops",
    "offload_times",
    "pageable_link",
    "pcie_bandwidth",
    "pinned_empty",
    "roofline_time",
    "transfer_time",
]
