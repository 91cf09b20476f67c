"""gpucourse.xla_gpu: XLA:GPU's compiler run deviceless for an H100 — what jnp.dot and a fused elementwise chain
become on Hopper, checked on the optimized HLO, XLA's PTX and the SASS ptxas makes of it. Skipped (with the
reason) where JAX's CUDA plugin is not installed (python -m gpucourse.xla_gpu install)."""

from __future__ import annotations

import pytest

from gpucourse import xla_gpu

needs_plugin = pytest.mark.skipif(not xla_gpu.available(), reason=xla_gpu.describe())

F32 = ((1024, 1024), "float32")
BF16 = ((1024, 1024), "bfloat16")


def test_target_config_is_an_h100_sxm():
    cfg = xla_gpu.TARGETS["H100 SXM"]()
    assert "core_count: 132" in cfg and "memory_bandwidth: 3350000000000" in cfg
    assert "l2_cache_size: 52428800" in cfg and "feature_extension: ACCELERATED_FEATURES" in cfg  # sm_90a
    assert "shared_memory_per_core: 233472" in cfg and "registers_per_core_limit: 65536" in cfg


def test_missing_names_the_install_command():
    gone = xla_gpu.missing()
    assert isinstance(gone, list)
    assert ("install" in xla_gpu.describe()) == any("install" in g for g in gone)
    with pytest.raises(ValueError, match="target"):
        xla_gpu.compile_for_gpu("lambda a: a", ((2,), "float32"), target="A999")


@pytest.fixture(scope="module")
def compiled():
    if not xla_gpu.available():
        pytest.skip(xla_gpu.describe())
    return dict(zip(
        ("f32", "f32_highest", "bf16_tuned", "bias_relu_cublas", "chain"),
        xla_gpu.compile_many([
            ("lambda a, b: jnp.dot(a, b)", (F32, F32), {}),
            ("lambda a, b: jnp.dot(a, b, precision='highest')", (F32, F32), {}),
            ("lambda a, b: jnp.dot(a, b)", (BF16, BF16), {"xla_gpu_override_gemm_autotuner": xla_gpu.TUNED_TILE}),
            ("lambda a, b, c: jnp.maximum(jnp.dot(a, b) + c, 0)", (BF16, BF16, ((1024,), "bfloat16")),
             {"xla_gpu_enable_triton_gemm": False}),
            ("lambda x, y, z: jnp.maximum(x * y + z, 0.0)", (((1 << 22,), "float32"),) * 3, {}),
        ])))


@needs_plugin
def test_f32_dot_runs_in_tf32_on_tensor_cores_unless_highest(compiled):
    default, highest = compiled["f32"], compiled["f32_highest"]
    assert default.gemm.runner.startswith("Triton") and highest.gemm.precision == ("HIGHEST", "HIGHEST")
    ptx = default.ptx_instructions()
    assert ptx["cvt.rna.tf32.f32"] > 0 and any(k.startswith("mma.sync") and "tf32" in k for k in ptx)
    assert default.sass().variants("HMMA") and all("TF32" in v for v in default.sass().variants("HMMA"))
    s = highest.sass()
    assert s.count("HMMA") == 0 and s.count("FFMA") > 0  # true fp32: CUDA-core FMAs, no tensor core


@needs_plugin
def test_bf16_gemm_with_a_tuned_tile_uses_wgmma_hgmma(compiled):
    g = compiled["bf16_tuned"]
    assert g.gemm.tile == {"output_tile": "128x128", "num_warps": 8, "num_stages": 3}
    assert any(k.startswith("wgmma.mma_async") for k in g.ptx_instructions())
    s = g.sass()
    assert s.variants("HGMMA") and all(v.startswith("HGMMA.64x128x16.F32.BF16") for v in s.variants("HGMMA"))
    assert s.count("HMMA") == 0 and s.count("WARPGROUP") >= 2


@needs_plugin
def test_cublaslt_fuses_bias_and_relu_as_its_epilogue(compiled):
    g = compiled["bias_relu_cublas"]
    assert g.gemm.target == "__cublas$lt$matmul" and g.gemm.epilogue == "BIAS_RELU"
    assert g.ptx == () and g.memory["temp"] > 0  # no generated kernel; a cuBLAS workspace in the temp buffer


@needs_plugin
def test_elementwise_chain_is_one_vectorized_loop_fusion(compiled):
    c = compiled["chain"]
    from gpucourse.xla import entry_ops

    assert entry_ops(c.hlo).count("fusion") == 1 and "kind=kLoop" in c.hlo
    s = c.sass()
    assert s.variants("LDG") == {"LDG.E.128.CONSTANT": 3} and s.variants("STG") == {"STG.E.128": 1}
    # XLA keeps the multiply and the add separately rounded (mul.rn/add.rn cannot be contracted): no FFMA
    assert s.count("FMUL") == 4 and s.count("FADD") == 4 and s.count("FMNMX") == 4 and s.count("FFMA") == 0


@pytest.mark.gpu
def test_on_the_gpu_backend_it_compiles_for_this_gpu_autotuned():
    """On a GPU machine compile_for_gpu compiles in-process for the real GPU (autotuned): whatever XLA picks for a
    large bf16 GEMM — cuBLAS(Lt) or a Triton fusion — find_gemm names it, and a Triton kernel on Hopper is HGMMA."""
    import gpucourse as gc

    r = xla_gpu.compile_for_gpu("lambda a, b: jnp.dot(a, b)", ((4096, 4096), "bfloat16"), ((4096, 4096), "bfloat16"))
    assert "this GPU" in r.target and r.gemm.how in ("library call", "generated fusion")
    if r.gemm.how == "generated fusion" and r.arch == "sm_90a":
        assert r.sass().count("HGMMA") > 0, "an autotuned Triton GEMM on Hopper uses wgmma"
    chain = xla_gpu.compile_for_gpu("lambda x, y, z: jnp.maximum(x * y + z, 0.0)", *(((1 << 24,), "float32"),) * 3)
    assert gc.xla.entry_ops(chain.hlo).count("fusion") == 1 and chain.ptx


@needs_plugin
def test_provenance_names_ptxas_and_says_the_sass_is_the_courses_reassembly(compiled):
    p = compiled["f32"].provenance()
    assert "XLA's PTX re-assembled here by ptxas -arch=sm_90a" in p and "not XLA's own cubin" in p
    assert "release" in p  # ptxas's version line


def test_the_gpu_backend_compile_keeps_jaxs_own_cuda_toolchain_and_no_deprecated_device_argument():
    import inspect

    src = inspect.getsource(xla_gpu._compile_here)
    assert 'options["xla_gpu_cuda_data_dir"]' not in src and "xla_gpu_cuda_data_dir=" not in src
    assert "jax.jit(fn).lower" in src and "SingleDeviceSharding(dev)" in src


def test_describe_with_a_cuda_plugin_but_no_gpu_does_not_claim_xla_compiles_for_the_gpu(monkeypatch):
    import gpucourse as gc

    monkeypatch.setattr(xla_gpu, "_cuda_plugin_in_env", lambda: "jax-cuda12-plugin")
    text = xla_gpu.describe()
    if gc.get_backend().is_gpu:
        assert "compiles for the real GPU" in text and "missing" not in text
    else:
        assert "no GPU" in text and "compiles for the real GPU" not in text and "missing nothing" not in text


@pytest.mark.parametrize("target, arch, cc, sms", [("T4", "sm_75", "major: 7 minor: 5", 40),
                                                   ("A100 SXM 80GB", "sm_80", "major: 8 minor: 0", 108),
                                                   ("H100 SXM", "sm_90a", "major: 9 minor: 0", 132)])
def test_each_card_has_a_target_from_its_datasheet(target, arch, cc, sms):
    cfg = xla_gpu.TARGETS[target]()
    assert xla_gpu.ARCH[target] == arch and cc in cfg and f"core_count: {sms}" in cfg
    assert ("ACCELERATED_FEATURES" in cfg) == (arch == "sm_90a")  # wgmma: sm_90a only


@needs_plugin
def test_a_float32_dot_on_each_card_takes_the_path_the_course_says():
    """Issue 25, deviceless: on a T4 (sm_75) XLA has no Triton GEMMs, so jnp.dot is a cuBLAS call (which XLA's
    plain cost analysis would count as -1 FLOP: §0 and §2.4 read FLOPs on an XLA:CPU compile or not at all on a
    GPU); on an A100 and an H100 it is a Triton fusion whose untuned tile splits K — contracting dims {2}·{1}, not
    {1}·{0} (§0 asserts the dims on the CPU only)."""
    dot = "lambda a, b: jnp.dot(a, b)"
    small = ((128, 128), "float32")
    t4, a100, h100 = (xla_gpu.compile_for_gpu(dot, small, small, target=t) for t in ("T4", "A100 SXM 80GB", "H100 SXM"))
    assert t4.gemm.how == "library call" and "cublas" in t4.gemm.target.lower() and not t4.ptx
    for c in (a100, h100):
        assert c.gemm.how == "generated fusion" and "Triton" in c.gemm.runner and c.ptx
        assert (c.gemm.lhs_contracting, c.gemm.rhs_contracting) != ((1,), (0,))
    assert {".target sm_80", ".target sm_90a"} <= {line.strip() for c in (a100, h100) for p in c.ptx
                                                    for line in p.splitlines() if line.startswith(".target")}
