"""The roofline model, and measuring a machine's two roofs independently of the ops placed under
them.

    attainable FLOP/s = min(peak FLOP/s, arithmetic intensity × memory bandwidth)

Arithmetic intensity (연산 밀도) = FLOPs / bytes moved to and from memory. Below the *ridge point*
(peak FLOP/s ÷ bandwidth) an operation is memory-bound; above it, compute-bound.

How the roofs are measured (so that no op is judged against a roof calibrated on itself):

- **memory roof**: the fastest of three read-only streams (:func:`read_candidates`) over float32
  arrays of random values at least 2× the last-level cache (CPU L3 / GPU L2), so that every byte
  comes from DRAM/HBM. Read-only, so no store policy (write-allocate) muddles the byte count.
- **one CPU core** by default (``cores=1``): BLAS limited to one thread (threadpoolctl) while it
  times, NumPy's elementwise ops being single-threaded anyway. On a busy machine a multi-threaded
  BLAS call stalls whenever *any* of its threads is descheduled (its threads wait for each other),
  so all-core timings there are noise; one core's roofline stays measurable. The GPU's roofline is
  always the whole device's.
- **compute roof**: the fastest of a few GEMMs of sizes not plotted (:func:`compute_candidates`), in
  the dtype of the plotted ops, random data (constant data draws less power and can run faster than
  real data).
- every roof and every op is timed in **interleaved rounds** (roof, op 1, op 2, …, roof, op 1, …)
  and reported at its *best* run: load from other processes only ever slows a run down, and
  interleaving gives every measurement the same chances of a quiet moment. On a GPU each run is
  timed with CUDA events.
- each measured roof is reported as a fraction of a *stated* peak: the datasheet on a GPU; on a CPU,
  cores × FMA units × SIMD lanes × 2 FLOP × clock, read from the operating system where it can be
  (:func:`cpu_stated_peak` says how it got each factor).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import hardware
from .backend import get_backend
from .timing import Timing, block, measure

MIB = 2**20


@dataclass(frozen=True)
class Roofline:
    """A machine's two roofs.

    Args:
        name: the machine's name.
        peak_flops: the compute roof, FLOP/s.
        bandwidth: the memory roof, bytes/s.
    """
    name: str
    peak_flops: float  # FLOP/s
    bandwidth: float  # bytes/s

    @property
    def ridge(self) -> float:
        """Intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.peak_flops / self.bandwidth

    def attainable(self, intensity: Any) -> Any:
        """Best FLOP/s an op of this intensity can reach on this machine."""
        return np.minimum(self.peak_flops, np.asarray(intensity, dtype=float) * self.bandwidth)

    def bound(self, intensity: float) -> str:
        return "memory" if intensity < self.ridge else "compute"

    def fraction(self, point: "OpPoint") -> float:
        """Achieved FLOP/s as a fraction of what this roofline allows at the op's intensity (> 1:
        above it)."""
        return point.achieved_flops / float(self.attainable(point.intensity))


@dataclass(frozen=True)
class OpPoint:
    """One measured operation placed on a roofline. Throughput is taken at the *best* run (see the
    module doc)."""

    label: str
    flops: float
    bytes: float
    timing: Timing
    working_set: float | None = None  # bytes the op touches: can it all sit in a cache?

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def seconds(self) -> float:
        return self.timing.best

    @property
    def achieved_flops(self) -> float:
        return self.flops / self.seconds

    @property
    def achieved_bandwidth(self) -> float:
        return self.bytes / self.seconds


@dataclass(frozen=True)
class Verdict:
    """Where a point sits relative to its roof, and why."""

    point: OpPoint
    bound: str  # "memory" or "compute": the roof that limits it at its intensity
    fraction: float  # of the attainable throughput at its intensity
    above: bool  # more than `margin` above the roof
    fits_in_cache: bool | None  # working set <= the last-level cache
    explanation: str


def judge(point: OpPoint, roof: Roofline, cache_bytes: float, margin: float = 0.20) -> Verdict:
    """Place a measured point against a measured roof. A point *above* a roof needs a reason: above
    the memory roof, its data may have come from a cache faster than DRAM — all of it if its working
    set fits there, part of it if the working set is larger (real last-level caches keep part of a
    larger working set: by how much is lab 1's exercise 9, so such a point is only flagged "partly
    cached?"); above the compute roof nothing is faster, so the measurement or the roof is wrong.
    ``margin``: measurement noise allowed."""
    f = roof.fraction(point)
    bound = roof.bound(point.intensity)
    fits = None if point.working_set is None else point.working_set <= cache_bytes
    above = f > 1 + margin
    if not above:
        why = (
            "at its roof (within measurement noise)" if f >= 1 - margin else f"{f:.0%} of its roof"
        )
    elif bound == "memory" and fits:
        why = (
            f"above the DRAM roof: its {point.working_set / MIB:.1f} MiB fit in the"
            f" {cache_bytes / MIB:.0f} MiB cache, which is faster than DRAM"
        )
    elif bound == "memory":
        why = (
            f"above the DRAM roof with {point.working_set / MIB:.1f} MiB, more than the"
            f" {cache_bytes / MIB:.0f} MiB cache: partly cached? (lab 1, exercise 9)"
            if point.working_set is not None
            else "above the DRAM roof, working set unknown: cached? (lab 1, exercise 9)"
        )
    else:
        why = (
            "above the compute roof: nothing computes faster than the peak, so the roof or the"
            " timing is wrong"
        )
    return Verdict(point, bound, f, above, fits, why)


# -- what the machine says about itself ------------------------------------------------------------

def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([KMG]?)i?B?", text.strip(), re.I)
    if not m:
        raise ValueError(f"not a cache size: {text!r}")
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()]


def cache_bytes() -> tuple[int, str]:
    """(bytes, source) of the last-level cache data has to get past: the GPU's L2 on the GPU
    backend, else the CPU's largest cache (Linux sysfs; macOS sysctl). Falls back to 64 MiB, and
    says so, where neither can be read.

    Returns:
        (bytes, where the number came from).
    """
    be = get_backend()
    if be.is_gpu:
        props = be.xp.cuda.runtime.getDeviceProperties(0)
        return int(props["l2CacheSize"]), "the device's L2 (cudaDeviceProp.l2CacheSize)"
    best, where = 0, ""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        kind, size = _read(str(index / "type")), _read(str(index / "size"))
        if kind in ("Unified", "Data") and size:
            level = _read(str(index / "level"))
            if _size(size) > best:
                best, where = _size(size), f"L{level} in /sys/devices/system/cpu/cpu0/cache"
    if best:
        return best, where
    if platform.system() == "Darwin":
        import subprocess

        for key in ("hw.l3cachesize", "hw.l2cachesize"):
            out = subprocess.run(
                ["sysctl", "-n", key], capture_output=True, text=True
            ).stdout.strip()
            if out.isdigit() and int(out) > 0:
                return int(out), f"sysctl {key}"
    return 64 * MIB, "not readable here: assumed 64 MiB"


def stream_bytes(factor: int = 2, minimum: int = 64 * MIB, maximum: int = 1024 * MIB) -> int:
    """Bytes per array for a DRAM/HBM measurement: ``factor`` × the last-level cache, within
    [minimum, maximum]. Twice the cache is enough for a stream: sweeping an array larger than the
    cache in order evicts each line before the sweep comes back to it, so every access misses.

    Args:
        factor: times the last-level cache.
        minimum, maximum: bounds, in bytes.
    Returns:
        bytes per array.
    """
    return int(min(maximum, max(minimum, factor * cache_bytes()[0])))


@dataclass(frozen=True)
class StatedPeak:
    flops: float | None  # FLOP/s, or None where the machine does not say enough
    how: str  # how each factor was obtained


def _cpuinfo() -> dict[str, str]:
    text = _read("/proc/cpuinfo") or ""
    first = text.split("\n\n")[0]
    return {
        k.strip(): v.strip()
        for k, _, v in (line.partition(":") for line in first.splitlines())
        if k.strip()
    }


def physical_cores() -> tuple[int, str]:
    """Cores this process may run on, counted once per physical core (SMT siblings share the FMA
    units)."""
    logical = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
    info = _cpuinfo()
    siblings, cores = info.get("siblings"), info.get("cpu cores")
    if siblings and cores and int(siblings) > int(cores):
        smt = int(siblings) // int(cores)
        return max(1, logical // smt), f"{logical} logical CPUs / {smt}-way SMT"
    return logical, f"{logical} CPUs available to this process, no SMT"


# Intel client cores with AVX-512 (family 6): Cannon Lake, Ice Lake, Tiger Lake, Rocket Lake, Alder
# Lake (where AVX-512 is not fused off). They fuse ports 0 and 1 into ONE 512-bit FMA unit and lack
# the server cores' second one on port 5, so AVX-512 gives them the FLOPs per clock of AVX2 on two
# 256-bit units.
INTEL_CLIENT_AVX512_MODELS = {0x66, 0x7D, 0x7E, 0x8C, 0x8D, 0xA7, 0x97, 0x9A}
# AMD family 1Ah (Zen 5) models with 256-bit FP datapaths: Strix Point (0x20-0x2F) and Krackan Point
# (0x60-0x6F); keyed on the model number, since names differ (a Ryzen Z2 Extreme is a Strix Point
# without "Ryzen AI" in it)
ZEN5_MOBILE_256_MODELS = set(range(0x20, 0x30)) | set(range(0x60, 0x70))


def fma_units_of(info: dict[str, str], flags: set[str]) -> tuple[int, int, str]:
    """(FMA units per core, their width in bits, how) for an x86-64 core, from /proc/cpuinfo's
    vendor, family, model, model name and flags. No interface reports the units, so this is a table
    of what the vendors' own optimisation manuals and microarchitecture disclosures say: 2 units
    (Intel since Haswell, AMD since Zen 2), as wide as the widest FMA instructions, except
    - AMD Zen 1/Zen+ (family 17h, models below 30h): 2 units of 128 bits; Intel E-cores (Gracemont
      and later, not told apart in /proc/cpuinfo from the P-cores beside them) likewise — said in
      the text it returns;
    - Intel client cores with AVX-512 (INTEL_CLIENT_AVX512_MODELS): 1 unit of 512 bits;
    - AMD Zen 4 (family 19h) and the mobile Zen 5 of Strix Point (Ryzen AI 300, Ryzen Z2 Extreme)
      and Krackan Point (ZEN5_MOBILE_256_MODELS): 2 units of 256 bits, a 512-bit FMA executed as two
      256-bit halves ("double-pumped"); desktop and server Zen 5 and Strix Halo (Ryzen AI Max, model
      0x70) have the full 512-bit units;
    - Skylake-SP / Cascade Lake Xeons (model 0x55) are ambiguous: Platinum and most Gold 6xxx have 2
      units of 512 bits, Bronze, Silver and most Gold 5xxx (and the Core i7-78xxX) 1 — counted as 2,
      and the text says so."""
    vendor = info.get("vendor_id", "")
    family = int(info.get("cpu family", "0") or 0)
    model = int(info.get("model", "0") or 0)
    if "avx512f" in flags:
        if vendor == "AuthenticAMD" and (
            family == 0x19 or (family == 0x1A and model in ZEN5_MOBILE_256_MODELS)
        ):
            zen = "Zen 4" if family == 0x19 else "mobile Zen 5"
            return (
                2,
                256,
                f"AVX-512 on {zen}'s 256-bit FMA units: a 512-bit FMA is two 256-bit halves",
            )
        if vendor == "GenuineIntel" and family == 6 and model in INTEL_CLIENT_AVX512_MODELS:
            return (
                1,
                512,
                "AVX-512 on an Intel client core: one 512-bit FMA unit (ports 0 and 1 fused)",
            )
        if vendor == "GenuineIntel" and family == 6 and model == 0x55:
            return (
                2,
                512,
                (
                    "AVX-512; a Skylake-SP/Cascade Lake part: Bronze, Silver and most Gold 5xxx"
                    " have ONE 512-bit FMA unit, half this peak"
                ),
            )
        return 2, 512, "AVX-512"
    if "avx2" in flags and "fma" in flags:
        # Zen 1/Zen+ (Ryzen 1000/2000, EPYC 7001)
        if vendor == "AuthenticAMD" and family == 0x17 and model < 0x30:
            return 2, 128, "AVX2+FMA on Zen 1: two 128-bit FMA units (a 256-bit FMA is two halves)"
        return (
            2,
            256,
            (
                "AVX2+FMA (two 256-bit FMA units; an Intel E-core — Gracemont and later — has two"
                " 128-bit units: half this peak)"
            ),
        )
    return 2, 128, "SSE2 (no FMA: mul and add count as 2 FLOP in 2 units)"


@lru_cache(maxsize=None)
def cpu_stated_peak(dtype: str = "float32", cores: int | None = None) -> StatedPeak:
    """cores × FMA units × SIMD lanes × 2 FLOP × clock for an x86-64 Linux CPU, each factor read
    from the OS except the FMA units' number and width, which no interface reports
    (:func:`fma_units_of`). None, with the reason, elsewhere."""
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    if platform.machine() not in ("x86_64", "AMD64") or not flags:
        return StatedPeak(
            None,
            f"no stated peak: this needs /proc/cpuinfo on x86-64 (here: {platform.system()} "
            f"{platform.machine()}); the measured GEMM is the only compute roof",
        )
    fma_units, bits, isa = fma_units_of(info, flags)
    lanes = bits // (8 * np.dtype(dtype).itemsize)
    if cores is None:
        cores, cores_how = physical_cores()
    else:
        cores_how = "the cores the measurement uses"
    max_khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if max_khz:
        clock_hz, clock_how = int(max_khz) * 1e3, "cpuinfo_max_freq (the highest boost clock)"
    elif info.get("cpu MHz"):
        clock_hz = float(info["cpu MHz"]) * 1e6
        clock_how = (
            "'cpu MHz' in /proc/cpuinfo (in a VM: the nominal clock; cores may boost above it)"
        )
    else:
        return StatedPeak(None, "no stated peak: the clock is not readable here")
    peak = cores * fma_units * lanes * 2 * clock_hz
    how = (
        f"{cores} core{'s' * (cores != 1)} ({cores_how}) × {fma_units} FMA"
        f" unit{'s' * (fma_units != 1)} (vendor table: gc.roofline.fma_units_of) × {lanes} {dtype}"
        f" lanes ({isa}) × 2 FLOP per FMA × {clock_hz / 1e9:.2f} GHz ({clock_how})"
    )
    return StatedPeak(peak, how)


def stated_peaks(
    dtype: str = "float32", cores: int | None = None
) -> tuple[float | None, float | None, str]:
    """(peak FLOP/s, peak bytes/s, source) this backend's measured roofs are compared with (on a
    CPU, for ``cores`` cores; all of them by default)."""
    be = get_backend()
    if be.is_gpu:
        # form factor and memory size matched: an A100 40GB is not the 80GB
        sheet = hardware.lookup(be.gpu.name)
        if sheet is None:
            return None, None, f"no datasheet entry for {be.gpu.name} in gpucourse.hardware"
        key = {
            "float32": "fp32",
            "float64": "fp64",
            "float16": "bf16-tensor",
            "bfloat16": "bf16-tensor",
        }[dtype]
        return (
            sheet.peak_flops[key],
            sheet.memory_bandwidth,
            f"{sheet.name} datasheet ({sheet.source})",
        )
    stated = cpu_stated_peak(dtype, cores)
    return (
        stated.flops,
        None,
        stated.how + "; DRAM peak: not readable from inside the OS (channels × MT/s × 8 B)",
    )


# -- measuring -------------------------------------------------------------------------------------

def clock() -> str:
    """CUDA events on the GPU backend, the host clock on CPU."""
    return "cuda" if get_backend().is_gpu else "host"


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Limit the CPU's BLAS (OpenBLAS, MKL: whatever NumPy loaded) to ``n`` threads inside the block
    (None or a GPU backend: no limit).

    Args:
        n: BLAS threads inside the ``with`` block (None: no limit).
    Returns:
        a context manager.
    """
    if n is None or get_backend().is_gpu:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(n, user_api="blas"):
        yield


def measure_interleaved(fns: dict[str, Callable[[], Any]], rounds: int = 5, warmup: int = 1,
                        clock_: str | None = None) -> dict[str, Timing]:
    """Time every function once per round, round after round (the one timing helper times each run:
    synchronised, CUDA events on a GPU), so that they all see the same load; one Timing per function
    over all rounds. ``clock_="host"`` for JAX work on a GPU: JAX runs on its own CUDA streams,
    which CuPy's events do not see."""
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    which = clock_ or clock()
    for fn in fns.values():
        for _ in range(warmup):
            block(fn())
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = measure(fn, warmup=0, repeat=1, clock=which)
            times[name].append(t.times[0])
    return {k: Timing(tuple(v), synchronized=True, clock=which) for k, v in times.items()}


def _random(shape: Any, dtype: str, seed: int = 0) -> Any:
    """Random data in the backend's memory (constant data draws less power and flatters a GPU)."""
    xp = get_backend().xp
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype))


@dataclass(frozen=True)
class Op:
    """A workload to place on the roofline: the call, its FLOPs and bytes, and the bytes it
    touches.

    Args:
        label: the name a table or plot shows.
        fn: the call, no arguments.
        flops: FLOPs of one call; bytes: bytes it moves to and from memory.
        working_set: bytes it touches (what must fit in a cache).
    """

    label: str
    fn: Callable[[], Any]
    flops: float
    bytes: float
    working_set: float


def read_stream(nbytes: int | None = None, dtype: str = "float32", cores: int = 1) -> Op:
    """A read-only stream: every byte of a large array read once (its maximum). On a CPU with
    ``cores`` > 1 the array is split into one slice per core, each reduced by its own thread
    (NumPy's reduction releases the GIL)."""
    nbytes = nbytes or stream_bytes()
    a = _random(nbytes // np.dtype(dtype).itemsize, dtype, seed=1)
    if get_backend().is_gpu or cores <= 1:
        fn = a.max
    else:
        chunks = np.array_split(a, cores)
        pool = ThreadPoolExecutor(cores)

        def fn() -> float:
            return max(pool.map(np.max, chunks))
    return Op(
        f"read {a.nbytes / MIB:.0f} MiB: max (reduction)", fn, 0.0, float(a.nbytes), float(a.nbytes)
    )


def read_candidates(nbytes: int | None = None, dtype: str = "float32", cores: int = 1) -> list[Op]:
    """The memory-roof candidates: three read-only streams over the same bytes (none of them an op
    §1 plots) — NumPy's/CuPy's maximum (a reduction), the BLAS dot a·a (each element read once), and
    a BLAS matrix-vector product over a *wide* 64-row matrix (a long streaming read with a tiny
    vector). The memory roof is the fastest: one core's bandwidth is limited by how many loads it
    keeps in flight, and a kernel that prefetches in software (OpenBLAS's gemv does) keeps more than
    a plain loop.

    Args:
        nbytes: bytes each stream reads (None: :func:`stream_bytes`).
        dtype: the element type; cores: CPU cores the BLAS streams may use.
    Returns:
        a list of :class:`Op`: time each, take the fastest as the memory roof.
    """
    nbytes = nbytes or stream_bytes()
    s = np.dtype(dtype).itemsize
    reduction = read_stream(nbytes, dtype, cores)
    a = _random(nbytes // s, dtype, seed=7)
    wide = a.reshape(64, -1)
    v = _random(wide.shape[1], dtype, seed=8)
    mib = a.nbytes / MIB
    return [
        reduction,
        Op(
            f"read {mib:.0f} MiB: a·a (BLAS dot)",
            lambda: a @ a,
            2.0 * a.size,
            float(a.nbytes),
            float(a.nbytes),
        ),
        Op(
            f"read {mib:.0f} MiB: 64-row gemv (BLAS)",
            lambda: wide @ v,
            2.0 * a.size,
            float(a.nbytes),
            float(a.nbytes),
        ),
    ]


def compute_candidates(dtype: str = "float32") -> list[Op]:
    """The compute-roof candidates: GEMMs of sizes §1 does not plot (it plots 64³…512³). The fastest
    is the roof: on a CPU the largest GEMM is not always the fastest (the longest calls are the
    likeliest to be slowed by other programs, and a core's clock varies with its neighbours' load),
    on a GPU the largest is.

    Args:
        dtype: the element type of the GEMMs.
    Returns:
        a list of :class:`Op`: time each, take the fastest as the compute roof.
    """
    sizes = (4096, 8192) if get_backend().is_gpu else (384, 640, 1024)
    return [gemm_op(n, dtype, label=f"gemm n={n} (roof candidate)") for n in sizes]


def gemm_op(n: int, dtype: str = "float32", label: str | None = None) -> Op:
    """C = A @ B on random n×n matrices: 2n³ FLOPs, 3n² elements of compulsory traffic.

    Args:
        n: the matrices' edge; dtype: their element type; label: the name shown.
    Returns:
        an :class:`Op` with its FLOPs, bytes and working set.
    """
    A, B = _random((n, n), dtype, 2), _random((n, n), dtype, 3)
    s = np.dtype(dtype).itemsize
    return Op(label or f"gemm n={n}", lambda: A @ B, 2.0 * n**3, 3.0 * n * n * s, 3.0 * n * n * s)


def gemv_op(n: int, dtype: str = "float32", label: str | None = None, calls: int = 1) -> Op:
    """y = A @ x on a random n×n matrix, ``calls`` times back to back in one timed run (FLOPs and
    bytes counted ``calls`` times; the working set is one matrix). An op is timed once per round,
    between other ops that sweep the cache: a single call of a matrix that fits in the cache finds
    it evicted and reads it from DRAM. Back-to-back calls find it where the first one left it — the
    only way to see what the cache delivers.

    Args:
        n: the matrix's edge; dtype: its element type; label: the name shown.
        calls: calls per timed run.
    Returns:
        an :class:`Op` with its FLOPs, bytes and working set.
    """
    if calls < 1:
        raise ValueError(f"calls must be at least 1, got {calls}")
    A, x = _random((n, n), dtype, 4), _random(n, dtype, 5)
    s = np.dtype(dtype).itemsize
    traffic = (n * n + 2.0 * n) * s

    def fn() -> Any:
        for _ in range(calls - 1):
            A @ x
        return A @ x

    return Op(label or f"gemv n={n}" + (f" ×{calls}" if calls > 1 else ""), fn, 2.0 * n * n * calls,
              traffic * calls, traffic)


@dataclass
class RooflineMeasurement:
    roof: Roofline
    memory: OpPoint  # the fastest read stream: it set the memory roof
    compute: OpPoint  # the fastest GEMM candidate: it set the compute roof
    points: list[OpPoint] = field(default_factory=list)  # the ops measured in the same rounds
    cache_bytes: int = 0
    cache_source: str = ""
    stated_flops: float | None = None
    stated_bandwidth: float | None = None
    stated_source: str = ""
    rounds: int = 0
    margin: float = 0.20
    consistent: bool = True  # no point above the compute roof (see `unexplained`)
    memory_candidates: list[OpPoint] = field(default_factory=list)
    compute_candidates: list[OpPoint] = field(default_factory=list)

    def verdicts(self, margin: float | None = None) -> list[Verdict]:
        return [
            judge(p, self.roof, self.cache_bytes, self.margin if margin is None else margin)
            for p in self.points
        ]

    def unexplained(self) -> list[Verdict]:
        """Points above the compute roof by more than the margin: nothing computes faster than the
        peak, so either the roof's runs were all slowed down or the point's timing or count is
        wrong. (A point above the *memory* roof is never counted here: a cache may explain it, fully
        or in part — see :func:`judge`.)"""
        return [v for v in self.verdicts() if v.above and v.bound == "compute"]


def measure_roofline(
    ops: Iterable[Op] = (),
    *,
    dtype: str = "float32",
    rounds: int = 5,
    nbytes: int | None = None,
    name: str | None = None,
    margin: float = 0.20,
    cores: int | None = 1,
) -> RooflineMeasurement:
    """Measure both roofs and place ``ops`` under them, all in the same ``rounds`` interleaved
    rounds (module doc), on ``cores`` CPU cores (BLAS threads; None: all) — the GPU backend measures
    the whole device. Each roof is the fastest of its candidates (:func:`read_candidates`,
    :func:`compute_candidates`).

    The number of rounds is fixed in advance: every roof and every op gets exactly ``rounds`` timed
    runs, summarised once (the best of each). Nothing is re-timed because a result looks odd —
    timing until the roofs agree with the points would be optional stopping. ``consistent`` says
    whether some point sits above the compute roof by more than ``margin``
    (:meth:`RooflineMeasurement.unexplained`); the caller reports it."""
    ops = list(ops)
    be = get_backend()
    cores = None if be.is_gpu else cores
    reads = read_candidates(nbytes, dtype, cores=cores or physical_cores()[0])
    gemms = compute_candidates(dtype)
    roof_fns = {op.label: op.fn for op in reads + gemms}
    fns = {**roof_fns, **{op.label: op.fn for op in ops}}
    if len(fns) != len(roof_fns) + len(ops):
        raise ValueError("every op needs its own label")
    cache, source = cache_bytes()
    stated_flops, stated_bw, stated_how = stated_peaks(dtype, cores)
    where = "GPU" if be.is_gpu else f"{cores} core{'s' * (cores != 1)}" if cores else "all cores"
    with blas_threads(cores):
        timings = measure_interleaved(fns, rounds=rounds)
    mem_points = [
        OpPoint(op.label, 0.0, op.bytes, timings[op.label], op.working_set) for op in reads
    ]
    comp_points = [
        OpPoint(op.label, op.flops, op.bytes, timings[op.label], op.working_set) for op in gemms
    ]
    mem = max(mem_points, key=lambda p: p.achieved_bandwidth)
    comp = max(comp_points, key=lambda p: p.achieved_flops)
    roof = Roofline(
        name or f"this machine ({where}, {dtype}, measured)",
        comp.achieved_flops,
        mem.achieved_bandwidth,
    )
    points = [
        OpPoint(op.label, op.flops, op.bytes, timings[op.label], op.working_set) for op in ops
    ]
    m = RooflineMeasurement(
        roof,
        mem,
        comp,
        points,
        cache,
        source,
        stated_flops,
        stated_bw,
        stated_how,
        len(timings[mem.label].times),
        margin,
        True,
        mem_points,
        comp_points,
    )
    m.consistent = not m.unexplained()
    return m


@dataclass(frozen=True)
class StoreKind:
    """One way of writing n bytes, and what its time says about write-allocate.

    Which bytes write-allocate would add that a roof can bound depends on what limits the roof:
    - one CPU core (§1.2's read roof): the limit is how many loads the core keeps in flight. With
      write-allocate every stored line is first read (a read for ownership), so the reads the core
      waits for are the program's own reads plus the bytes it writes; the write-backs of dirty lines
      leave later, evicted by the caches, and the core does not wait for them. Only the *read side*
      can be held against that roof (the total, write-backs included, may exceed a one-core read
      roof either way).
    - a GPU, or any roof set by DRAM bandwidth: reads and write-backs share the same memory bus, so
      the *total* write-allocate traffic (reads + reads for ownership + write-backs) must fit under
      the memory roof.
    Write-allocate is ruled out when the test that applies is exceeded (by more than the margin)."""

    label: str
    requested: float  # bytes the program asks to move (STREAM's count): its reads + its writes
    # bytes DRAM moves if every store first reads its line (write-allocate): reads + 2 × writes
    allocate: float
    timing: Timing
    reads: float = 0.0  # bytes the program itself reads (0 for a fill)

    @property
    def writes(self) -> float:
        return self.requested - self.reads

    @property
    def reads_if_allocate(self) -> float:
        """Bytes the core must read under write-allocate: its own reads + one read for ownership per
        written byte."""
        return self.reads + self.writes

    def bandwidth(self, nbytes: float) -> float:
        return nbytes / self.timing.best

    def allocate_test(self, dram_limited: bool) -> tuple[float, str]:
        """(bytes write-allocate would need the roof to carry, which test that is), by what limits
        the roof."""
        if dram_limited:
            return self.allocate, "total vs the DRAM-limited memory roof"
        return self.reads_if_allocate, "reads vs the one-core read roof"

    def verdict(
        self, roof_bandwidth: float, dram_limited: bool = False, margin: float = 0.15
    ) -> str:
        """'no write-allocate' when the bytes write-allocate needs past this roof (the read side on
        one CPU core, the total where DRAM bandwidth limits the roof, as on a GPU) would take more
        than the roof allows, by over ``margin`` (a measured roof is itself a best of a few runs: a
        store test a few per cent above it is noise, not proof); the test that applied is named in
        brackets."""
        need, test = self.allocate_test(dram_limited)
        if self.bandwidth(need) > (1 + margin) * roof_bandwidth:
            return f"no write-allocate [{test}: would beat the roof by over {margin:.0%}]"
        return f"cannot tell [{test}: within the roof's {margin:.0%} noise margin either way]"


def store_kinds(nbytes: int | None = None, rounds: int = 9) -> list[StoreKind]:
    """Write an array three ways, timed in interleaved rounds: ``fill`` (stores only: n bytes
    requested, 2n with write-allocate), ``memcpy`` (a contiguous copy, which NumPy hands to memcpy
    and glibc streams with non-temporal stores when large: 2n or 3n) and an elementwise copy
    ``positive(a, out=c)`` (ordinary stores: 2n or 3n). On a GPU, CuPy's fill kernel, cudaMemcpy and
    the same elementwise kernel."""
    xp = get_backend().xp
    a = _random((nbytes or stream_bytes()) // 4, "float32", seed=6)
    c = xp.zeros_like(a)  # touched once, so no first-touch page faults in the timed runs
    n = float(a.nbytes)
    if get_backend().is_gpu:
        def memcpy() -> Any:
            c.data.copy_from_device(a.data, a.nbytes)  # cudaMemcpy, device to device
            return c
    else:
        def memcpy() -> Any:
            np.copyto(c, a)  # a contiguous copy: NumPy calls memcpy
            return c
    fns = {
        "fill": lambda: c.fill(1.5),
        "memcpy": memcpy,
        "elementwise copy": lambda: xp.positive(a, out=c),
    }
    t = measure_interleaved(fns, rounds=rounds)
    return [
        StoreKind("fill", n, 2 * n, t["fill"], reads=0.0),
        StoreKind("memcpy", 2 * n, 3 * n, t["memcpy"], reads=n),
        StoreKind("elementwise copy", 2 * n, 3 * n, t["elementwise copy"], reads=n),
    ]


# Kept for code that measured one roof at a time.
def measure_bandwidth(nbytes: int = 64 * MIB, repeat: int = 7) -> tuple[float, Timing]:
    """Read bandwidth of the backend (bytes/s): the fastest of :func:`read_candidates` over
    ``nbytes``, best of ``repeat`` interleaved rounds, on one CPU core."""
    reads = read_candidates(nbytes)
    with blas_threads(1):
        t = measure_interleaved({op.label: op.fn for op in reads}, rounds=repeat)
    best = max(reads, key=lambda op: op.bytes / t[op.label].best)
    return best.bytes / t[best.label].best, t[best.label]


def measure_peak_flops(
    n: int = 1024, dtype: str = "float32", repeat: int = 5
) -> tuple[float, Timing]:
    """Matrix-multiply throughput (FLOP/s) of the backend's BLAS (cuBLAS on a GPU), ``2 n³`` FLOPs,
    best run."""
    op = gemm_op(n, dtype)
    t = measure(op.fn, repeat=repeat, clock=clock())
    return op.flops / t.best, t


def plot(
    ax: Any,
    rooflines: Iterable[Roofline],
    points: Iterable[OpPoint] = (),
    *,
    imin: float = 1 / 16,
    imax: float = 1024,
) -> Any:
    """Draw rooflines (log-log) and the measured operations on them."""
    from .plotting import PALETTE, axes

    axes("arithmetic intensity [FLOP/byte]", "attainable throughput [GFLOP/s]", ax=ax)
    intensities = np.logspace(np.log2(imin), np.log2(imax), 200, base=2)
    for i, roof in enumerate(rooflines):
        color = PALETTE[i % len(PALETTE)]
        ax.plot(
            intensities,
            roof.attainable(intensities) / 1e9,
            color=color,
            label=(
                f"{roof.name}: {roof.peak_flops / 1e9:,.0f} GFLOP/s, {roof.bandwidth / 1e9:,.0f}"
                " GB/s"
            ),
        )
        ax.axvline(roof.ridge, color=color, linestyle=":", linewidth=1)
    markers = "osD^v<>"
    for j, p in enumerate(points):
        ax.scatter(
            [p.intensity],
            [p.achieved_flops / 1e9],
            marker=markers[j % len(markers)],
            s=50,
            zorder=3,
            color=PALETTE[(j + 2) % len(PALETTE)],
            edgecolor="black",
            label=p.label,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize=8, loc="lower right")
    return ax
