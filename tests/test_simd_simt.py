"""CPU vector-width detection, assembly inspection, and the warp active-mask model."""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import simd_simt

ASM = """
\tvmovups\t(%rdi), %zmm0
\tvfmadd213ps\t(%rsi), %zmm1, %zmm0
\tvaddps\t%ymm2, %ymm3, %ymm4
\tvaddss\t%xmm0, %xmm1, %xmm1
\tvmulsd\t%xmm2, %xmm2, %xmm2
\tvcmpltps\t%zmm1, %zmm2, %k1
"""


def test_isa_from_flags():
    assert simd_simt.cpu_vector_isa({"sse2", "avx", "avx2", "avx512f"}) == ("AVX-512", 512)
    assert simd_simt.cpu_vector_isa({"sse2", "avx2"}) == ("AVX2", 256)
    assert simd_simt.cpu_vector_isa({"asimd"}) == ("NEON", 128)
    assert simd_simt.cpu_vector_isa(set()) == ("unknown", 0)
    assert simd_simt.lanes(512) == 16 and simd_simt.lanes(256, "float64") == 4


def test_vector_instructions_counts_arithmetic_only_by_register():
    ops = simd_simt.vector_instructions(ASM)
    assert ops == {("vfmadd213ps", "zmm"): 1, ("vaddps", "ymm"): 1, ("vaddss", "xmm"): 1, ("vmulsd", "xmm"): 1}
    assert simd_simt.widest_packed(ASM) == 512
    assert simd_simt.widest_packed("\tvaddss\t%xmm0, %xmm1, %xmm1\n") == 0


def test_numba_vectorizes_an_independent_loop_on_this_cpu():
    if not simd_simt.is_x86():
        pytest.skip("the assembly reader parses x86 only")
    numba = pytest.importorskip("numba")
    _, bits = simd_simt.cpu_vector_isa()
    if bits == 0:
        pytest.skip("not an x86/ARM CPU with known flags")

    @numba.njit(fastmath=True)
    def scale(x, out):
        for i in range(x.shape[0]):
            out[i] = 3.0 * x[i]

    x = np.ones(256, np.float32)
    scale(x, np.empty_like(x))
    asm = next(iter(scale.inspect_asm().values()))
    assert 128 <= simd_simt.widest_packed(asm) <= max(bits, 128)


def test_stored_warp_masks_read_back_as_masks():
    """The course's section 3.3 masks ship as data (the model is lab 3's exercise 4; the data's staleness test is in
    tests/test_lab03_datapath.py): three patterns, 32 lanes, a row per issued instruction, active lanes on their
    path."""
    cost_if, cost_else, stored = simd_simt.stored_warp_masks()
    assert (cost_if, cost_else) == (6, 4) and list(stored) == ["t % 4 == 0 (divergent)", "t < 32 (uniform)",
                                                                "t < 12 (divergent)"]
    for cond, m in stored.values():
        assert cond.shape == (32,) and m.dtype == bool and m.shape[1] == 32
        assert all((row == cond).all() or (row == ~cond).all() for row in m)
    cond, m = stored["t % 4 == 0 (divergent)"]
    assert m.shape == (10, 32) and m.mean() == pytest.approx((8 * 6 + 24 * 4) / (32 * 10))


def test_physical_cores_counts_cores_not_smt_siblings(tmp_path):
    """SMT siblings share a core's FMA pipes: a nominal peak counts (physical id, core id) pairs (review finding 12)."""
    blocks = []
    for cpu, (phys, core) in enumerate([(p, c) for p in (0, 1) for c in (0, 1)] * 2):  # 2 sockets × 2 cores × 2 SMT
        blocks.append(f"processor\t: {cpu}\nphysical id\t: {phys}\ncore id\t\t: {core}\ncpu MHz\t\t: 3000.0\n")
    info = tmp_path / "cpuinfo"
    info.write_text("\n".join(blocks))
    assert simd_simt.physical_cores(str(info)) == 4
    info.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")  # e.g. some ARM kernels: no core ids
    assert simd_simt.physical_cores(str(info)) is None
    assert simd_simt.physical_cores(str(tmp_path / "missing")) is None
