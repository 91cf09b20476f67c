"""Published figures of TPU chips and pods (v4, v5e, v5p, v6e), and the rules for which slices are tori.

Every number carries its source; nothing here is measured (this course has no TPU). Units: FLOP/s, bytes/s,
bytes, Hz. Sources:

- Google Cloud TPU documentation, one page per version (cloud.google.com/tpu/docs/v4, /v5e, /v5p, /v6e):
  peak bf16 FLOP/s, HBM capacity and bandwidth, "bidirectional inter-chip interconnect (ICI) bandwidth per chip"
  (v5e 400 GB/s, v5p 1,200 GB/s, v6e 800 GB/s), ICI ports, topology, and per-pod bisection and all-reduce
  bandwidths. The v5p page notes that slices of one 4×4×4 cube and larger are full 3D tori.
- Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware Support for
  Embeddings", ISCA 2023: v4's 4 MXUs × 2 TensorCores at 1,050 MHz, six ICI links of 50 GB/s per direction,
  4×4×4 cubes joined by optical circuit switches.
- Austin et al., "How to Scale Your Model" (the JAX scaling book), part 2 "How to Think About TPUs": slices
  smaller than a full cube (v4, v5p) have no wraparound links; v5e/v6e have a wraparound only on an axis of 16
  chips; v5e's MXU runs at 1.5 GHz.
- JAX's own Pallas TPU table (jax/_src/pallas/mosaic/tpu_info.py): VMEM per TensorCore (v4 16 MiB, v5e 128 MiB,
  v5p 64 MiB, v6e 128 MiB), MXU shape and count.

The per-link bandwidth below is Google's per-chip bidirectional figure divided by ports and directions; the
published pod bisection and all-reduce bandwidths, which are independent figures, agree with it
(tests/test_tpu.py). The scaling book's tables use ~10 % lower, "achievable" link figures (4.5e10 / 9e10 B/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class TpuChip:
    name: str
    bf16_flops: float  # dense bf16 peak per chip, FLOP/s
    hbm_bytes_per_s: float  # per chip
    hbm_bytes: float  # per chip
    tensor_cores: int  # per chip
    mxus_per_core: int
    mxu: tuple[int, int]  # systolic array shape (rows, cols)
    clock_hz: float | None  # MXU clock where published
    vmem_bytes_per_core: int
    ici_ports: int  # ICI links per chip
    ici_link_bytes_per_s: float  # per link, per direction
    topology: str  # "3D torus" or "2D torus"
    pod: tuple[int, ...]  # the largest slice
    wrap_rule: str  # "whole cubes" (v4, v5p) or "full axis" (v5e, v6e); see wraparound()
    pod_bisection_bytes_per_s: float | None  # published
    pod_allreduce_bytes_per_s: float | None  # published
    source: str

    @property
    def ridge(self) -> float:
        """FLOP per HBM byte where the bf16 compute roof meets the HBM roof (the critical arithmetic intensity)."""
        return self.bf16_flops / self.hbm_bytes_per_s

    @property
    def ici_bytes_per_s(self) -> float:
        """All ports of one chip, both directions (Google's 'bidirectional ICI bandwidth per chip')."""
        return self.ici_ports * self.ici_link_bytes_per_s * 2

    def ici_intensity(self, axes: int = 1) -> float:
        """FLOPs per byte of ICI traffic where compute meets communication when a collective runs over ``axes``
        mesh axes at once, each a bidirectional ring: bf16 peak / (axes · 2 · link bandwidth). The scaling book
        calls bf16_flops / W_ici the "ICI operational intensity"."""
        return self.bf16_flops / (axes * 2 * self.ici_link_bytes_per_s)

    def wraparound(self, dims: Sequence[int]) -> tuple[bool, ...]:
        """Which axes of a slice of shape ``dims`` have wraparound links (are rings, not lines).

        v4 and v5p ("whole cubes"): the wraparound links go through the optical circuit switches, which connect
        whole 4×4×4 cubes: a slice whose every side is a multiple of 4 is a torus on every axis; any smaller or
        other slice (2×2×1, 2×2×4, 2×4×4) has none. v5e and v6e ("full axis"): an axis wraps only when it spans
        the pod's full 16 chips (a 16×16 slice is a 2D torus, 8×16 wraps on its 16 axis only, 4×4 is a mesh).
        """
        dims = tuple(int(d) for d in dims)
        if len(dims) != len(self.pod) or any(d < 1 for d in dims):
            raise ValueError(f"{self.name} slices have {len(self.pod)} axes of at least 1 chip, got {dims}")
        if any(d > m for d, m in zip(sorted(dims), sorted(self.pod))):
            raise ValueError(f"{dims} does not fit in a {self.name} pod {self.pod}")
        if self.wrap_rule == "whole cubes":
            whole = all(d % 4 == 0 for d in dims)
            return tuple(whole for _ in dims)
        return tuple(d == 16 for d in dims)

    @property
    def chips_per_pod(self) -> int:
        return math.prod(self.pod)


TPU_V4 = TpuChip(
    name="TPU v4", bf16_flops=275e12, hbm_bytes_per_s=1200e9, hbm_bytes=32 * GIB, tensor_cores=2,
    mxus_per_core=4, mxu=(128, 128), clock_hz=1.05e9, vmem_bytes_per_core=16 * MIB, ici_ports=6,
    ici_link_bytes_per_s=50e9, topology="3D torus", pod=(16, 16, 16), wrap_rule="whole cubes",
    pod_bisection_bytes_per_s=24e12, pod_allreduce_bytes_per_s=1.1e15,
    source="cloud.google.com/tpu/docs/v4; Jouppi et al., ISCA 2023 (clock, 6 × 50 GB/s ICI, OCS)")
TPU_V5E = TpuChip(
    name="TPU v5e", bf16_flops=197e12, hbm_bytes_per_s=819e9, hbm_bytes=16e9, tensor_cores=1,
    mxus_per_core=4, mxu=(128, 128), clock_hz=1.5e9, vmem_bytes_per_core=128 * MIB, ici_ports=4,
    ici_link_bytes_per_s=400e9 / 4 / 2, topology="2D torus", pod=(16, 16), wrap_rule="full axis",
    pod_bisection_bytes_per_s=1.6e12, pod_allreduce_bytes_per_s=51.2e12,
    source="cloud.google.com/tpu/docs/v5e; clock: the JAX scaling book, part 2")
TPU_V5P = TpuChip(
    name="TPU v5p", bf16_flops=459e12, hbm_bytes_per_s=2765e9, hbm_bytes=95 * GIB, tensor_cores=2,
    mxus_per_core=4, mxu=(128, 128), clock_hz=None, vmem_bytes_per_core=64 * MIB, ici_ports=6,
    ici_link_bytes_per_s=1200e9 / 6 / 2, topology="3D torus", pod=(16, 20, 28), wrap_rule="whole cubes",
    pod_bisection_bytes_per_s=None, pod_allreduce_bytes_per_s=None,
    source="cloud.google.com/tpu/docs/v5p; pod shape: the JAX scaling book, part 2")
TPU_V6E = TpuChip(
    name="TPU v6e", bf16_flops=918e12, hbm_bytes_per_s=1638e9, hbm_bytes=32e9, tensor_cores=1,
    mxus_per_core=2, mxu=(256, 256), clock_hz=None, vmem_bytes_per_core=128 * MIB, ici_ports=4,
    ici_link_bytes_per_s=800e9 / 4 / 2, topology="2D torus", pod=(16, 16), wrap_rule="full axis",
    pod_bisection_bytes_per_s=3.2e12, pod_allreduce_bytes_per_s=102.4e12,
    source="cloud.google.com/tpu/docs/v6e (Trillium)")

TPU_CHIPS = {c.name: c for c in (TPU_V4, TPU_V5E, TPU_V5P, TPU_V6E)}


def mxu_peak(chip: TpuChip) -> float:
    """bf16 FLOP/s from the MXUs: rows·cols MACs × 2 FLOPs × MXUs × TensorCores × clock (needs the clock)."""
    if chip.clock_hz is None:
        raise ValueError(f"{chip.name}: no published MXU clock")
    return chip.mxu[0] * chip.mxu[1] * 2 * chip.mxus_per_core * chip.tensor_cores * chip.clock_hz


def matmul_intensity(M: int, K: int, N: int, itemsize: int = 2) -> float:
    """FLOPs per HBM byte of ``(M×K)·(K×N)`` reading both operands and writing the result once."""
    return 2 * M * K * N / (itemsize * (M * K + K * N + M * N))


def matmul_seconds(chip: TpuChip, M: int, K: int, N: int, itemsize: int = 2) -> dict[str, float]:
    """Roofline time of one matmul on one chip: the larger of compute at peak and HBM traffic at full bandwidth
    (weights, activations and result each cross HBM once; overlapped, as the TPU pipelines its DMAs)."""
    t_math = 2 * M * K * N / chip.bf16_flops
    t_hbm = itemsize * (M * K + K * N + M * N) / chip.hbm_bytes_per_s
    return {"math": t_math, "hbm": t_hbm, "total": max(t_math, t_hbm)}
