"""Published figures of TPU chips and pods (v4, v5e, v5p, v6e), and the rules for which slices are
tori.

Every number carries its source; nothing here is measured (this course has no TPU). Units: FLOP/s,
bytes/s, bytes, Hz. Sources:

- Google Cloud TPU documentation, one page per version (cloud.google.com/tpu/docs/v4, /v5e, /v5p,
  /v6e): peak bf16 FLOP/s, HBM capacity and bandwidth, "bidirectional inter-chip interconnect (ICI)
  bandwidth per chip" (v5e 400 GB/s, v5p 1,200 GB/s, v6e 800 GB/s), ICI ports, topology, per-pod
  bisection and all-reduce bandwidths, and the slice shapes each version supports.
  * v5p page: "All 4x4x4 and larger slices (one cube) have full 3D torus connectivity. Slices
    smaller than a full cube are 3D connected, however, they don't have wrap-around links that make
    them a 3D torus." It lists the shapes 2x2x1 … 16x16x24 and says "The maximum v5p shape is
    16x16x24 (6144 chips, 96 cubes)" — the 8,960-chip pod (16×20×28, the scaling book) is not one
    schedulable slice.
  * v4 page: "Interconnect topology: 3D mesh"; "The connections can be configured as a 3D torus on
    slices where the topology, AxBxC, is either 2A=B=C or 2A=2B=C, where each dimension is a
    multiple of 4. For example, 4x4x8, 4x8x8, or 12x12x24." The "TPU types and topologies" page: v4
    topologies are AxBxC with "A, B and C all <= 4 or all integer multiples of 4", and shapes with
    2A=B=C or 2A=2B=C also have twisted variants.
  * v6e page: "Each TensorCore contains two 256x256 matrix-multiply units (MXU)".
  * v5e and v6e pages: 2D slice shapes 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16.
- Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with
  Hardware Support for Embeddings", ISCA 2023: v4's 4 MXUs × 2 TensorCores at 1,050 MHz, six ICI
  links of 50 GB/s per direction, 4×4×4 cubes joined by optical circuit switches, 128 MiB of CMEM.
- Austin et al., "How to Scale Your Model" (the JAX scaling book), part 2 "How to Think About TPUs":
  "Any multiple of a full cube (e.g. 4x4x4 or 4x4x8) will have wraparounds provided by the optical
  switches", "a 2x2x4 won't have any wraparounds"; v5e/v6e have a wraparound only on an axis of 16
  chips; v5e's MXU runs at 1.5 GHz.
- JAX's own Pallas TPU table (jax/_src/pallas/mosaic/tpu_info.py): VMEM per TensorCore, CMEM per
  chip (v4's 128 MiB in Jouppi et al.; the table's 134,000,000 bytes), MXU
  count (``num_mxus``) and column size (``mxu_column_size``; the table gives no row count). Peak
  FLOP/s and HBM bandwidth here are Google's published figures; JAX's table has other HBM figures
  for v4 and v5p (1.23 and 2.46 TB/s against Google's 1.2 and 2.765).

**Which slices wrap.** The rule used here (whole 4×4×4 cubes wrap on every axis, anything smaller on
none) is the scaling book's; Google states it for v5p. For v4 Google's wording is narrower (tori
only for 2A=B=C or 2A=2B=C): the v4 shapes the two sources judge differently (4x4x4, 8x8x8, 8x8x12,
16x16x16, …) are *disputed* (:meth:`TpuChip.torus_disputed`). Shapes a version does not list are
*hypothetical*: :meth:`TpuChip.check_slice` refuses them unless asked for ``hypothetical=True``, and
refuses anything larger than the largest schedulable slice.

The per-link bandwidth below is Google's per-chip bidirectional figure divided by ports and
directions; the published pod bisection and all-reduce bandwidths, which are independent figures,
agree with it (tests/test_tpu.py). The scaling book's current table uses 10 % lower link figures
(4.5e10 / 9e10 B/s one way), without saying how it got them (an earlier revision had 5e10 / 1e11 for
v5e, v5p and v6e). Some earlier revisions of Google's v5e page gave "Interchip Interconnect BW
1600 Gbps" (200 GB/s per chip), half the "400 GBps" bidirectional figure the current page gives and
this module uses.

**Unverified:** v6e's MXU count. Google's two 256×256 MXUs per TensorCore (and JAX's
``num_mxus = 2``) with the published 918 TFLOP/s imply a 3.5 GHz clock
(:meth:`TpuChip.implied_clock_hz`), far above v5e's 1.5 GHz; Google publishes no v6e clock, so the
count and the peak do not reconcile at a plausible clock.
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
    # per chip, in the unit each chip's Google page states it (GiB or 10⁹ bytes); no cell uses it
    hbm_bytes: float
    tensor_cores: int  # per chip
    mxus_per_core: int
    mxu: tuple[int, int]  # systolic array shape (rows, cols)
    clock_hz: float | None  # MXU clock where published
    vmem_bytes_per_core: int
    ici_ports: int  # ICI links per chip
    ici_link_bytes_per_s: float  # per link, per direction
    topology: str  # Google's "Interconnect topology" row
    pod: tuple[int, ...]  # the whole pod's shape
    max_slice: tuple[int, ...]  # the largest slice that can be scheduled as one job
    # shapes Google lists (None: v4, where a rule decides)
    listed_slices: tuple[tuple[int, ...], ...] | None
    wrap_rule: str  # "whole cubes" (v4, v5p) or "full axis" (v5e, v6e): the rule above
    cmem_bytes: int  # per chip (TPU v4's CMEM; 0 where JAX's table has none)
    pod_bisection_bytes_per_s: float | None  # published
    pod_allreduce_bytes_per_s: float | None  # published
    source: str
    # fields whose published values do not reconcile with the others
    unverified: tuple[str, ...] = ()

    @property
    def ridge(self) -> float:
        """FLOP per HBM byte where the bf16 compute roof meets the HBM roof (the critical arithmetic
        intensity)."""
        return self.bf16_flops / self.hbm_bytes_per_s

    @property
    def ici_bytes_per_s(self) -> float:
        """All ports of one chip, both directions (Google's 'bidirectional ICI bandwidth per
        chip')."""
        return self.ici_ports * self.ici_link_bytes_per_s * 2

    def ici_intensity(self, axes: int = 1) -> float:
        """FLOPs per byte of ICI traffic where compute meets communication when a collective runs
        over ``axes`` mesh axes at once, each a bidirectional ring: bf16 peak / (axes · 2 · link
        bandwidth). The scaling book calls bf16_flops / W_ici the "ICI operational intensity"."""
        return self.bf16_flops / (axes * 2 * self.ici_link_bytes_per_s)

    def listed(self, dims: Sequence[int]) -> bool:
        """Whether Google lists this slice shape for the chip (orientation ignored). v4: Google's
        rule — three sides, all ≤ 4 or all multiples of 4, within the 16×16×16 pod."""
        dims = tuple(sorted(int(d) for d in dims))
        if len(dims) != len(self.pod) or any(d < 1 for d in dims):
            return False
        if self.listed_slices is None:  # TPU v4
            fits = all(d <= m for d, m in zip(dims, sorted(self.max_slice)))
            return fits and (all(d <= 4 for d in dims) or all(d % 4 == 0 for d in dims))
        return dims in {tuple(sorted(s)) for s in self.listed_slices}

    def torus_disputed(self, dims: Sequence[int]) -> bool:
        """True for a v4 slice of whole cubes that Google's v4 page does not call a torus (it names
        only 2A=B=C or 2A=2B=C, A ≤ B ≤ C) while the scaling book does (every multiple of a full
        cube)."""
        if self.name != "TPU v4":
            return False
        a, b, c = sorted(int(d) for d in dims)
        whole = all(d % 4 == 0 for d in (a, b, c))
        return whole and not (2 * a == b == c or 2 * a == 2 * b == c)

    def check_slice(self, dims: Sequence[int], hypothetical: bool = False) -> tuple[int, ...]:
        """``dims`` as a tuple, if it is a slice of this chip: raises ValueError for a shape larger
        than the largest schedulable slice, and for a shape Google does not list unless
        ``hypothetical=True``. (Which axes of a slice wrap around — ``wrap_rule`` — is lab 7's
        exercise 6; the course shows the answers from stored data.)"""
        dims = tuple(int(d) for d in dims)
        if len(dims) != len(self.pod) or any(d < 1 for d in dims):
            raise ValueError(
                f"{self.name} slices have {len(self.pod)} axes of at least 1 chip, got {dims}"
            )
        if any(d > m for d, m in zip(sorted(dims), sorted(self.max_slice))):
            raise ValueError(
                f"{dims} is larger than the largest {self.name} slice {self.max_slice}"
            )
        if not hypothetical and not self.listed(dims):
            raise ValueError(
                f"Google does not list a {'x'.join(map(str, dims))} {self.name} slice; "
                "pass hypothetical=True to apply the rule anyway"
            )
        return dims

    def implied_clock_hz(self) -> float:
        """The clock at which the published MXUs would reach the published bf16 peak."""
        return self.bf16_flops / (
            self.mxu[0] * self.mxu[1] * 2 * self.mxus_per_core * self.tensor_cores
        )

    @property
    def chips_per_pod(self) -> int:
        return math.prod(self.pod)


TPU_V4 = TpuChip(
    name="TPU v4",
    bf16_flops=275e12,
    hbm_bytes_per_s=1200e9,
    hbm_bytes=32 * GIB,
    tensor_cores=2,
    mxus_per_core=4,
    mxu=(128, 128),
    clock_hz=1.05e9,
    vmem_bytes_per_core=16 * MIB,
    ici_ports=6,
    ici_link_bytes_per_s=50e9,
    topology="3D mesh",
    pod=(16, 16, 16),
    max_slice=(16, 16, 16),
    listed_slices=None,
    wrap_rule="whole cubes",
    cmem_bytes=134_000_000,
    pod_bisection_bytes_per_s=24e12,
    pod_allreduce_bytes_per_s=1.1e15,
    source=(
        "cloud.google.com/tpu/docs/v4 (3D mesh; torus for 2A=B=C or 2A=2B=C); Jouppi et al., ISCA"
        " 2023 (clock, 6 × 50 GB/s ICI, OCS, CMEM); whole-cube wraparound: the JAX scaling book,"
        " part 2"
    ),
)
TPU_V5E = TpuChip(
    name="TPU v5e",
    bf16_flops=197e12,
    hbm_bytes_per_s=819e9,
    hbm_bytes=16e9,
    tensor_cores=1,
    mxus_per_core=4,
    mxu=(128, 128),
    clock_hz=1.5e9,
    vmem_bytes_per_core=128 * MIB,
    ici_ports=4,
    ici_link_bytes_per_s=400e9 / 4 / 2,
    topology="2D torus",
    pod=(16, 16),
    max_slice=(16, 16),
    listed_slices=((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)),
    wrap_rule="full axis",
    cmem_bytes=0,
    pod_bisection_bytes_per_s=1.6e12,
    pod_allreduce_bytes_per_s=51.2e12,
    source="cloud.google.com/tpu/docs/v5e; clock: the JAX scaling book, part 2",
)
TPU_V5P = TpuChip(
    name="TPU v5p",
    bf16_flops=459e12,
    hbm_bytes_per_s=2765e9,
    hbm_bytes=95 * GIB,
    tensor_cores=2,
    mxus_per_core=4,
    mxu=(128, 128),
    clock_hz=None,
    vmem_bytes_per_core=64 * MIB,
    ici_ports=6,
    ici_link_bytes_per_s=1200e9 / 6 / 2,
    topology="3D torus",
    pod=(16, 20, 28),
    max_slice=(16, 16, 24),
    listed_slices=(
        (2, 2, 1),
        (2, 2, 2),
        (2, 4, 4),
        (4, 4, 4),
        (4, 4, 8),
        (4, 8, 8),
        (8, 8, 8),
        (8, 8, 16),
        (8, 16, 16),
        (16, 16, 16),
        (16, 16, 24),
    ),
    wrap_rule="whole cubes",
    cmem_bytes=0,
    pod_bisection_bytes_per_s=None,
    pod_allreduce_bytes_per_s=None,
    source=(
        "cloud.google.com/tpu/docs/v5p (shapes, largest slice 16x16x24, tori from one cube up); "
        "pod shape: the JAX scaling book, part 2"
    ),
)
TPU_V6E = TpuChip(
    name="TPU v6e",
    bf16_flops=918e12,
    hbm_bytes_per_s=1638e9,
    hbm_bytes=32e9,
    tensor_cores=1,
    mxus_per_core=2,
    mxu=(256, 256),
    clock_hz=None,
    vmem_bytes_per_core=128 * MIB,
    ici_ports=4,
    ici_link_bytes_per_s=800e9 / 4 / 2,
    topology="2D torus",
    pod=(16, 16),
    max_slice=(16, 16),
    listed_slices=((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)),
    wrap_rule="full axis",
    cmem_bytes=0,
    pod_bisection_bytes_per_s=3.2e12,
    pod_allreduce_bytes_per_s=102.4e12,
    source=(
        "cloud.google.com/tpu/docs/v6e (Trillium; two 256x256 MXUs per TensorCore — unverified"
        " against the peak, see implied_clock_hz)"
    ),
    unverified=("mxus_per_core",),
)

TPU_CHIPS = {c.name: c for c in (TPU_V4, TPU_V5E, TPU_V5P, TPU_V6E)}


def mxu_peak(chip: TpuChip) -> float:
    """bf16 FLOP/s from the MXUs: rows·cols MACs × 2 FLOPs × MXUs × TensorCores × clock (needs the
    clock)."""
    if chip.clock_hz is None:
        raise ValueError(f"{chip.name}: no published MXU clock")
    return chip.mxu[0] * chip.mxu[1] * 2 * chip.mxus_per_core * chip.tensor_cores * chip.clock_hz
