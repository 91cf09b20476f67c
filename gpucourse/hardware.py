"""Published figures for hardware the course cannot measure on every machine.

Each number carries its source. Dense (not 2:4-sparse) tensor-core throughput is quoted: the sparse
figures on datasheets are twice these. Units: FLOP/s, bytes/s, bytes, Hz.

Per-SM figures (``per_sm``) are the device properties CUDA reports (``cudaGetDeviceProperties``) and
the per-compute-capability rules of the CUDA C++ Programming Guide, "Technical Specifications per
Compute Capability", which NVIDIA's occupancy calculator ``cuda_occupancy.h`` encodes function by
function (see ``gpucourse.occupancy``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

TERA = 1e12
KIB = 1024


@dataclass(frozen=True)
class Accelerator:
    name: str
    peak_flops: dict[str, float]  # dtype/unit -> FLOP/s (dense)
    memory_bandwidth: float  # bytes/s of device memory (HBM)
    memory_bytes: float
    sm_count: int | None = None
    source: str = ""
    per_sm: dict[str, float] = field(default_factory=dict)
    compute_capability: tuple[int, int] | None = None
    # the maximum SM boost clock. On an H100/H200 SXM the datasheet's FP32/FP64 (CUDA-core) peaks
    # assume it (67 TF = 132 SMs × 128 FP32 lanes × 2 × 1.98 GHz); its tensor-core peaks assume a
    # lower clock, 1.83 GHz (course §6.7 derives it from the bf16 peak). On an A100 both kinds of
    # peak assume its 1.41 GHz boost.
    boost_clock_hz: float | None = None
    l2_bytes: int | None = None


# Per-SM properties shared by compute capability 8.0 (A100) and 9.0 (H100/H200); the shared-memory
# sizes differ.
_SM_COMMON = {
    "register_file_bytes": 256 * KIB,  # 65,536 32-bit registers (regsPerMultiprocessor)
    "registers_per_block": 65536,  # regsPerBlock: what one block may hold
    "max_registers_per_thread": 255,  # Programming Guide; ptxas never allocates more
    # SM sub-partitions (SMSPs): one warp scheduler and a quarter of the register file each
    "sub_partitions": 4,
    "max_threads": 2048,
    "max_warps": 64,
    "max_blocks": 32,  # cudaOccMaxBlocksPerMultiprocessor for cc 8.0 and 9.x
    "max_threads_per_block": 1024,
    "warp_schedulers": 4,
    # sharedMemPerBlock: the default per-block limit without opt-in
    "shared_memory_per_block": 48 * KIB,
    # reservedSharedMemPerBlock: kept by the driver for every block (cc >= 8)
    "shared_reserved_per_block": 1 * KIB,
}

H100_SXM = Accelerator(
    name="H100 SXM5 80GB",
    peak_flops={
        "fp64": 34 * TERA,
        "fp32": 67 * TERA,
        "tf32-tensor": 494.7 * TERA,
        "bf16-tensor": 989.4 * TERA,
        "fp8-tensor": 1978.9 * TERA,
    },
    memory_bandwidth=3.35 * TERA,
    # the datasheet's "80 GB" read as 80·10⁹ bytes: a floor — drivers report 81,559 MiB ≈ 85.5·10⁹
    # bytes for an H100 SXM 80 GB (public nvidia-smi outputs), about 7 % more
    memory_bytes=80e9,
    sm_count=132,
    per_sm={
        **_SM_COMMON,
        "shared_memory_bytes": 228 * KIB,
        "shared_memory_per_block_optin": 227 * KIB,
        # the L1/shared carve-outs an SM can be configured to (cudaOccAlignUpShmemSizeVoltaPlus,
        # cc 9.x)
        "shared_carveouts": tuple(k * KIB for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
        "fp32_lanes": 128,
    },  # FP32 FMA units per SM: 132 × 128 × 2 FLOP × 1.98 GHz = 67 TFLOP/s
    source=(
        "NVIDIA H100 Tensor Core GPU datasheet; NVIDIA Hopper architecture whitepaper (2022); "
        "CUDA C++ Programming Guide, compute capability 9.0"
    ),
    compute_capability=(9, 0),
    boost_clock_hz=1.98e9,
    # the datasheet's "50 MB" is 50 MiB: the device reports 52,428,800 B (cudaDevAttrL2CacheSize;
    # XLA's h100_sxm.txtpb device description, l2_cache_size)
    l2_bytes=50 * 2**20,
)

H200_SXM = Accelerator(
    name="H200 SXM 141GB",
    peak_flops=dict(H100_SXM.peak_flops),  # same GH100 compute as H100 SXM
    memory_bandwidth=4.8 * TERA,
    # the datasheet's "141 GB" as 141·10⁹ bytes: a floor, as the H100's (what a driver reports is
    # more)
    memory_bytes=141e9,
    sm_count=132,
    per_sm=dict(H100_SXM.per_sm),
    source="NVIDIA H200 Tensor Core GPU datasheet (2024)",
    compute_capability=(9, 0),
    boost_clock_hz=1.98e9,
    l2_bytes=50 * 2**20,  # the same GH100 L2 as the H100 SXM
)

A100_SXM = Accelerator(
    name="A100 SXM4 80GB",
    peak_flops={
        "fp64": 9.7 * TERA,
        "fp32": 19.5 * TERA,
        "tf32-tensor": 156 * TERA,
        "bf16-tensor": 312 * TERA,
    },
    memory_bandwidth=2.039 * TERA,
    memory_bytes=80e9,
    sm_count=108,
    per_sm={
        **_SM_COMMON,
        "shared_memory_bytes": 164 * KIB,
        "shared_memory_per_block_optin": 163 * KIB,
        "shared_carveouts": tuple(k * KIB for k in (0, 8, 16, 32, 64, 100, 132, 164)),  # cc 8.0
        "fp32_lanes": 64,
    },  # 108 × 64 × 2 FLOP × 1.41 GHz = 19.5 TFLOP/s
    source=(
        "NVIDIA A100 Tensor Core GPU datasheet; Ampere GA100 whitepaper (2020); "
        "CUDA C++ Programming Guide, compute capability 8.0"
    ),
    compute_capability=(8, 0),
    boost_clock_hz=1.41e9,
    # "40 MB": the device reports 41,943,040 B (XLA's a100 device descriptions)
    l2_bytes=40 * 2**20,
)

ACCELERATORS = {a.name: a for a in (A100_SXM, H100_SXM, H200_SXM)}

# -- the GPUs students and instructors have: every GPU-mode assert of the course must hold on each -
# (tests/test_gpu_profiles.py evaluates each assert's condition against every profile). Only what
# those conditions read is given; a profile is not a lookup target (see `lookup`: the course reads
# figures for a few cards only).
T4 = Accelerator(
    name="Tesla T4",
    # no TF32: an f32 GEMM runs on the FP32 lanes
    peak_flops={"fp32": 8.1 * TERA, "fp16-tensor": 65 * TERA},
    memory_bandwidth=320e9,  # GDDR6
    memory_bytes=16e9,
    sm_count=40,
    per_sm={"fp32_lanes": 64},  # 40 × 64 × 2 FLOP × 1.59 GHz = 8.1 TFLOP/s
    source=(
        "NVIDIA T4 Tensor Core GPU datasheet; Turing TU104 (40 SMs enabled), compute capability 7.5"
    ),
    compute_capability=(7, 5),
    boost_clock_hz=1.59e9,
    l2_bytes=4 * 2**20,
)

L4 = Accelerator(
    name="NVIDIA L4",
    # dense: half of 120/242*
    peak_flops={"fp32": 30.3 * TERA, "tf32-tensor": 60 * TERA, "bf16-tensor": 121 * TERA},
    memory_bandwidth=300e9,  # GDDR6
    memory_bytes=24e9,
    sm_count=58,
    per_sm={"fp32_lanes": 128},  # 58 × 128 × 2 FLOP × 2.04 GHz = 30.3 TFLOP/s
    source=(
        "NVIDIA L4 Tensor Core GPU datasheet (sparse figures marked *, halved here); Ada AD104,"
        " cc 8.9"
    ),
    compute_capability=(8, 9),
    boost_clock_hz=2.04e9,
    l2_bytes=48 * 2**20,
)

A100_SXM_40GB = Accelerator(
    name="A100 SXM4 40GB",
    peak_flops=dict(A100_SXM.peak_flops),  # the same GA100 compute as the 80 GB card
    memory_bandwidth=1.555 * TERA,  # HBM2, not the 80 GB card's HBM2e at 2.039
    memory_bytes=40e9,
    sm_count=108,
    per_sm=dict(A100_SXM.per_sm),
    source="NVIDIA A100 Tensor Core GPU datasheet (40GB SXM column)",
    compute_capability=(8, 0),
    boost_clock_hz=1.41e9,
    l2_bytes=40 * 2**20,
)

GPU_PROFILES = (T4, L4, A100_SXM_40GB, A100_SXM, H100_SXM, H200_SXM)


def f32_gemm_peak(gpu: Accelerator) -> float:
    """The fastest a float32-input GEMM may run: TF32 tensor cores where the card has them (JAX's
    default matmul precision lets XLA:GPU use them for float32 on Ampere and newer; CuPy only with
    CUPY_TF32=1), else the FP32 lanes."""
    return gpu.peak_flops.get("tf32-tensor", gpu.peak_flops["fp32"])

# Links between memories, bytes/s per direction, at most what DMA can move. PCIe rows are after the
# line encoding: PCI-SIG PCIe 4.0 / 5.0 base specifications: 16 / 32 GT/s per lane × 16 lanes ÷ 8
# bits = 32 / 64 GB/s raw, of which 128b/130b encoding leaves 128/130: 31.5 / 63.0 GB/s
# (gpucourse.datapath.pcie_bandwidth derives every generation). NVLink: NVIDIA H100 datasheet, 900
# GB/s total = 450 GB/s each direction.
LINKS = {
    "PCIe 4.0 x16": 16e9 * 16 / 8 * 128 / 130,  # 31.5e9
    "PCIe 5.0 x16": 32e9 * 16 / 8 * 128 / 130,  # 63.0e9
    "NVLink 4 (H100, per GPU, each direction)": 450e9,
}

# Load-to-use latency of a dependent global load that misses L2 (pointer chasing; the 655-cycle row
# is gpu-benches' ~550 MiB footprint, its chains reach 1.5 GB), measured on an H100 PCIe at its
# 1,755 MHz boost clock: ~655 cycles (373 ns); an L2 hit costs ~265 cycles (near partition) to ~475
# (far partition), an L1 hit ~34. Source: D. Ernst (NHR@FAU), gpu-benches, gpu-latency/h100_pcie.txt
# (github.com/te42kyfo/gpu-benches). Dependent (pointer-chasing) loads measure the unloaded latency;
# under load the queues add more.
H100_LATENCY_CYCLES = {
    "L1 hit": 34,
    "L2 hit (near)": 265,
    "L2 hit (far)": 475,
    "HBM (L2 miss)": 655,
}
H100_LATENCY_CLOCK_HZ = 1.755e9  # the clock those cycles were counted at (H100 PCIe boost)
H100_LATENCY_SOURCE = (
    "D. Ernst, gpu-benches (github.com/te42kyfo/gpu-benches), gpu-latency/h100_pcie.txt"
)


def chase_lines(l2_bytes: int, loads: int, line: int = 128) -> tuple[int, int]:
    """§5.4's two pointer chains, in ``line``-byte links: (one that fits in a quarter of the L2, one
    that misses it). The big one is a power of two of at least 8× the L2, of 512 MiB (256 pages of 2
    MiB, CUDA's allocation granularity: under 1 % of consecutive random links share a page, so its
    latency includes the TLB misses it says it does) and of ``loads`` links (every timed load a link
    no run has touched) — a T4's 4 MiB L2 alone would give 32 MiB."""
    import math

    small = 1 << math.floor(math.log2(l2_bytes / 4 / line))
    big = 1 << math.ceil(math.log2(max(8 * l2_bytes / line, 512 * 2**20 / line, loads)))
    return small, big


def lookup(device_name: str) -> Accelerator | None:
    """The accelerator of :data:`ACCELERATORS` whose figures hold for the CUDA device called
    ``device_name`` (as ``cudaGetDeviceProperties`` names it), matching form factor and memory size
    — or None where the course has no figures for it. "NVIDIA H100 80GB HBM3" is the SXM5 card;
    "H100 PCIe" (2.0 TB/s) and "H100 NVL" (3.9 TB/s) are other cards with other figures;
    "A100-SXM4-40GB" and "A100-PCIE-40GB" have 1.555 TB/s, not the 80GB card's 2.039; the A100 SXM4
    40GB, the T4 and the L4 (the GPUs Colab lends) have profiles of their own
    (:data:`GPU_PROFILES`). The GH200 Grace Hopper superchip ("NVIDIA GH200 480GB") is not an H200:
    its Hopper GPU has 96 GB of HBM3 at 4.0 TB/s or 144 GB of HBM3e at 4.9 TB/s (NVIDIA GH200
    datasheet), not the H200's 141 GB at 4.8 TB/s. Never matched on the first word of a name."""
    name = device_name.upper().replace("-", " ")
    # "Tesla T4", as Colab's reports it
    if name.split()[-1:] == ["T4"] or name.endswith("TESLA T4"):
        return T4
    if name.split() == ["NVIDIA", "L4"]:
        return L4
    if "A100" in name and "SXM" in name and "40GB" in name:
        return A100_SXM_40GB
    if any(other in name for other in ("PCIE", "NVL", " 40GB", "94GB", "GH200", "GB200")):
        return None
    if "H100" in name and ("HBM3" in name or "SXM" in name) and "80GB" in name:
        return H100_SXM
    if "H200" in name:
        return H200_SXM
    if "A100" in name and "SXM" in name and "80GB" in name:
        return A100_SXM
    return None


def half_tensor_peak(gpu: Accelerator) -> float:
    """The dense fp16 tensor-core peak, FLOP/s: the datasheet's fp16 figure where it gives one (the
    T4, which has no bf16), else its bf16 figure (dense fp16 = dense bf16 on Ampere and Hopper)."""
    return gpu.peak_flops.get("fp16-tensor", gpu.peak_flops.get("bf16-tensor"))


def clock_from_peak(gpu: Accelerator) -> float:
    """The SM clock the datasheet's FP32 peak implies: peak / (SMs × FP32 lanes per SM × 2 FLOP per
    FMA)."""
    return gpu.peak_flops["fp32"] / (gpu.sm_count * gpu.per_sm["fp32_lanes"] * 2)
