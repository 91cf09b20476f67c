"""gpucourse.xla: finding the GEMM in optimized HLO whatever the backend made of it, and reading XLA's buffer
assignment. The GPU forms are HLO text recorded from XLA:GPU (deviceless compile for an H100, see
gpucourse.xla_gpu) in tests/data/hlo/; the CPU ones are compiled live."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucourse import xla

HLO = Path(__file__).parent / "data" / "hlo"


def hlo(name: str) -> str:
    return (HLO / f"{name}.hlo").read_text()


def test_cublaslt_custom_call_with_its_fused_epilogue():
    g = xla.find_gemm(hlo("gpu_cublaslt_bias_relu"))
    assert (g.how, g.runner, g.target) == ("library call", "cuBLASLt", "__cublas$lt$matmul")
    assert g.epilogue == "BIAS_RELU" and g.dot == ""  # bias and relu run inside cuBLASLt's kernel
    assert (g.lhs_contracting, g.rhs_contracting) == ((1,), (0,))
    assert g.precision == ("DEFAULT", "DEFAULT")


def test_legacy_cublas_gemm_custom_call():
    g = xla.find_gemm(hlo("gpu_cublas_gemm"))
    assert (g.runner, g.target, g.epilogue) == ("cuBLAS", "__cublas$gemm", "")


def test_triton_gemm_fusion_with_its_tile():
    g = xla.find_gemm(hlo("gpu_triton_tuned_bf16"))
    assert g.how == "generated fusion" and g.target == "__triton_nested_gemm_fusion"
    assert g.runner.startswith("Triton") and " dot(" in g.dot
    assert g.tile == {"output_tile": "128x128", "num_warps": 8, "num_stages": 3}
    h = xla.find_gemm(hlo("gpu_triton_f32_highest"))
    assert h.precision == ("HIGHEST", "HIGHEST") and "operand precision HIGHEST" in h.describe()


def test_legacy_triton_gemm_config_form():
    text = """
%triton_gemm_dot.1_computation (p0: bf16[64,32], p1: bf16[32,16]) -> bf16[64,16] {
  %p0 = bf16[64,32]{1,0} parameter(0)
  %p1 = bf16[32,16]{1,0} parameter(1)
  %dot.1 = bf16[64,16]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %neg.1 = bf16[64,16]{1,0} negate(%dot.1)
}

ENTRY %main (a: bf16[64,32], b: bf16[32,16]) -> bf16[64,16] {
  %a = bf16[64,32]{1,0} parameter(0)
  %b = bf16[32,16]{1,0} parameter(1)
  ROOT %triton_gemm_dot.1 = bf16[64,16]{1,0} fusion(%a, %b), kind=kCustom, calls=%triton_gemm_dot.1_computation, backend_config={"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64","block_n":"16","block_k":"32","split_k":"1","num_stages":"2","num_warps":"4"}}}
}
"""
    g = xla.find_gemm(text)
    assert g.target == "__triton_gemm" and g.tile["block_m"] == 64 and g.tile["num_warps"] == 4
    assert g.fused == ("negate",)  # the epilogue Triton generates inside the GEMM kernel


def test_small_dot_wrapped_in_a_loop_fusion_and_no_gemm_at_all():
    g = xla.find_gemm(hlo("gpu_wrapped_dot"))
    assert g.how == "generated fusion" and g.runner == "XLA's own kLoop emitter" and g.target == ""
    with pytest.raises(ValueError, match="no dot.*'fusion'"):
        xla.find_gemm(hlo("gpu_article_chain"))


def test_plain_dot_and_cpu_library_fusion():
    import jax
    import jax.numpy as jnp

    plain = """ENTRY %e (a: f32[2,3], b: f32[3,2]) -> f32[2,2] {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[3,2]{1,0} parameter(1)
  ROOT %d = f32[2,2]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    g = xla.find_gemm(plain)
    assert (g.how, g.runner, g.lhs_contracting) == ("dot", "XLA", (1,))
    cpu = xla.find_gemm(hlo("cpu_ynn_tanh"))
    assert cpu.target == "__ynn_fusion" and cpu.how == "library fusion"
    live = xla.compiled(lambda a, b: jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST),
                        jnp.ones((8, 4)), jnp.ones((4, 5))).gemm
    assert (live.lhs_contracting, live.rhs_contracting) == ((1,), (0,)) and live.precision == ("HIGHEST", "HIGHEST")


def test_buffer_assignment_reuses_one_temporary_for_a_chain_of_layers():
    import jax.numpy as jnp

    def layers(k):
        def f(x, w):
            for _ in range(k):
                x = jnp.tanh(x @ w)  # a library GEMM, then a loop fusion: two values per layer
            return x
        return f

    x = jnp.ones((64, 64), jnp.float32)
    one_array = x.nbytes
    for k in (2, 6):
        allocs = xla.buffer_assignment(layers(k), x, x)
        temps = [a for a in allocs if a.kind == "temp"]
        values = sum(len(a.values) for a in allocs if a.kind in ("temp", "output"))
        assert values == 2 * k  # every intermediate is a value of its own ...
        assert sum(a.size for a in temps) == one_array  # ... yet they all fit in ONE extra array, reused
        assert sum(a.value_bytes for a in allocs if a.kind in ("temp", "output")) == 2 * k * one_array


def test_parse_buffer_assignment_kinds():
    text = """BufferAssignment:
allocation 0: size 64, output shape is |f32[16]|, maybe-live-out:
 value: <3 add.1 @0> (size=64,offset=0): f32[16]{0}
allocation 1: size 64, parameter 0, shape |f32[16]| at ShapeIndex {}:
 value: <0 a.1 @0> (size=64,offset=0): f32[16]{0}
allocation 2: size 128, preallocated-temp:
 value: <1 mul.1 @0> (size=64,offset=0): f32[16]{0}
 value: <2 sort.1 @0> (size=64,offset=64): f32[16]{0}

Total bytes used: 256
"""
    allocs = xla.parse_buffer_assignment(text)
    assert [a.kind for a in allocs] == ["output", "parameter", "temp"]
    assert allocs[2].values == (("mul.1", 64, 0), ("sort.1", 64, 64)) and allocs[2].value_bytes == 128


def test_round_to_tf32_keeps_ten_mantissa_bits():
    import numpy as np

    x = np.array([1.0, 1 + 2**-10, 1 + 2**-11, 1 + 2**-12, -3.0000002, np.inf], np.float32)
    r = xla.round_to_tf32(x)
    assert r.dtype == np.float32
    assert r[0] == 1.0 and r[1] == 1 + 2**-10  # representable: unchanged
    assert r[2] == 1 + 2**-10  # a tie rounds away from zero
    assert r[3] == 1.0 and r[4] == -3.0 and np.isinf(r[5])
    v = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    rel = np.abs(xla.round_to_tf32(v) - v) / np.abs(v)
    assert rel.max() <= 2**-11 and rel.max() > 2**-13  # half a unit in the 10th mantissa bit
