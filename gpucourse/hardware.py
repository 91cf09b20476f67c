"""Published figures for hardware the course cannot measure on every machine.

Each number carries its source. Dense (not 2:4-sparse) tensor-core throughput is quoted: the sparse figures
on datasheets are twice these. Units: FLOP/s, bytes/s, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TERA = 1e12


@dataclass(frozen=True)
class Accelerator:
    name: str
    peak_flops: dict[str, float]  # dtype/unit -> FLOP/s (dense)
    memory_bandwidth: float  # bytes/s of device memory (HBM)
    memory_bytes: float
    sm_count: int | None = None
    source: str = ""
    per_sm: dict[str, float] = field(default_factory=dict)


H100_SXM = Accelerator(
    name="H100 SXM5 80GB",
    peak_flops={"fp64": 34 * TERA, "fp32": 67 * TERA, "tf32-tensor": 494.7 * TERA, "bf16-tensor": 989.4 * TERA,
                "fp8-tensor": 1978.9 * TERA},
    memory_bandwidth=3.35 * TERA,
    memory_bytes=80e9,
    sm_count=132,
    per_sm={"register_file_bytes": 256 * 1024, "shared_memory_bytes": 228 * 1024, "max_threads": 2048,
            "max_warps": 64, "max_blocks": 32, "warp_schedulers": 4},
    source="NVIDIA H100 Tensor Core GPU datasheet; NVIDIA Hopper architecture whitepaper (2022)",
)

H200_SXM = Accelerator(
    name="H200 SXM 141GB",
    peak_flops=dict(H100_SXM.peak_flops),  # same GH100 compute as H100 SXM
    memory_bandwidth=4.8 * TERA,
    memory_bytes=141e9,
    sm_count=132,
    per_sm=dict(H100_SXM.per_sm),
    source="NVIDIA H200 Tensor Core GPU datasheet (2024)",
)

A100_SXM = Accelerator(
    name="A100 SXM4 80GB",
    peak_flops={"fp64": 9.7 * TERA, "fp32": 19.5 * TERA, "tf32-tensor": 156 * TERA, "bf16-tensor": 312 * TERA},
    memory_bandwidth=2.039 * TERA,
    memory_bytes=80e9,
    sm_count=108,
    per_sm={"register_file_bytes": 256 * 1024, "shared_memory_bytes": 164 * 1024, "max_threads": 2048,
            "max_warps": 64, "max_blocks": 32, "warp_schedulers": 4},
    source="NVIDIA A100 Tensor Core GPU datasheet; Ampere GA100 whitepaper (2020)",
)

ACCELERATORS = {a.name: a for a in (A100_SXM, H100_SXM, H200_SXM)}

# Links between memories, bytes/s per direction (theoretical). Source: PCI-SIG specifications; NVIDIA NVLink pages.
LINKS = {
    "PCIe 4.0 x16": 32e9,
    "PCIe 5.0 x16": 64e9,
    "NVLink 4 (H100, per GPU, each direction)": 450e9,
}
