"""gpucourse.toolchain: PTX and SASS for Hopper from NVIDIA's compiler wheels, with no GPU.

The SASS-reading tests run everywhere; the compile tests need the wheels (Linux/Windows, the `toolchain` extra)
and are skipped with the reason when they are missing.
"""

from __future__ import annotations

import pytest

from gpucourse import toolchain

needs_toolchain = pytest.mark.skipif(not toolchain.available(), reason=f"needs NVIDIA's compiler wheels: {toolchain.describe()}")

SASS = """
//--------------------- .text.FFMA_kernel --------------------------
        .section  .text.FFMA_kernel,"ax",@progbits
FFMA_kernel:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   FFMA R0, R4, R3, R7 ;
        /*0020*/              @!P0 FFMA.FTZ R0, R4, R3, R7 ;
        /*0030*/                   HFMA2 R0, R4, R3, R7 ;
        /*0040*/                   DFMA R0, R4, R3, R7 ;
.L_x_0:
        /*0050*/              @UP0 HMMA.16816.F32 R16, R4.reuse, R12, RZ ;
        /*0060*/                   HMMA.16816.F32.BF16 R12, R4, R14, RZ ;
        /*0070*/                   NOP;
        /*0080*/                   WARPGROUP.ARRIVE ;
        /*0090*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;
        /*00a0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00b0*/                   EXIT ;
"""


def test_sass_counts_base_opcodes_only():
    s = toolchain.Sass(SASS)
    assert s.count("FFMA") == 2  # FFMA and FFMA.FTZ; not HFMA2, DFMA or the kernel's name
    assert s.count("HMMA") == 2 and s.count("HFMA2") == 1 and s.count("DFMA") == 1
    assert s.variants("HMMA") == {"HMMA.16816.F32": 1, "HMMA.16816.F32.BF16": 1}
    assert s.instructions[0] == "LDC" and s.instructions[-1] == "EXIT"
    # Hopper's warpgroup MMA: the shape modifier has lower-case x's and must stay part of the opcode
    assert s.variants("HGMMA") == {"HGMMA.64x128x16.F32.BF16": 1}
    assert s.variants("WARPGROUP") == {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1}
    assert "NOP" not in s.excerpt() and "HMMA.16816.F32" in s.excerpt(("HMMA",))


def test_ptx_instruction_counter():
    ptx = "\t@%p1 bra \t$L__BB0_2;\n\tfma.rn.f32 \t%f3, %f2, %f1, %f0;\n\tret;\n.reg .f32 %f<4>;\n"
    counts = toolchain.ptx_instructions(ptx)
    assert counts == {"bra": 1, "fma.rn.f32": 1, "ret": 1}


def test_missing_is_a_list_and_describe_names_the_fix():
    gone = toolchain.missing()
    assert isinstance(gone, list)
    assert ("pip install" in toolchain.describe()) == bool(gone)


@needs_toolchain
def test_elementwise_kernel_compiles_to_one_ffma_for_sm90():
    from grader.labs.lab06_xla_sass import ELEMENTWISE_CU

    s = toolchain.sass_of(ELEMENTWISE_CU)
    assert s.count("FFMA") == 1 and s.count("LDG") == 3 and s.count("STG") == 1 and s.count("HMMA") == 0
    assert s.count("FMNMX") == 1  # the relu: max(x*y + z, 0)


@needs_toolchain
@pytest.mark.parametrize("k_steps", [1, 3])
def test_wmma_16x16x16_becomes_two_hmma_16816_per_step(k_steps):
    from grader.labs.lab06_xla_sass import wmma_cu

    s = toolchain.sass_of(wmma_cu(k_steps))
    assert s.variants("HMMA") == {"HMMA.16816.F32": 2 * k_steps}  # m16 n8 k16 per instruction: 2 per 16×16×16
    assert s.count("FFMA") == 0


@needs_toolchain
def test_horner_polynomial_has_one_ffma_per_term_but_the_first():
    from grader.labs.lab06_xla_sass import unrolled_fma_cu

    s = toolchain.sass_of(unrolled_fma_cu(7))
    assert s.count("FFMA") == 6 and s.count("FADD") == 1  # acc = 1*v + 0.5 folds to an add


@needs_toolchain
def test_nvrtc_ptx_output_and_compile_errors():
    from grader.labs.lab06_xla_sass import wmma_cu

    ptx = toolchain.compile_cuda(wmma_cu(1), arch="compute_90", output="ptx").decode()
    assert ".target sm_90" in ptx and "wmma.mma.sync" in ptx
    with pytest.raises(RuntimeError, match="compile"):
        toolchain.compile_cuda('extern "C" __global__ void k() { undefined_thing(); }')


@needs_toolchain
def test_numba_ptx_in_a_child_process_even_with_the_simulator_on():
    import os

    assert os.environ.get("NUMBA_ENABLE_CUDASIM") in (None, "0", "1")

    def article_relu(x, y, z, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = max(x[i] * y[i] + z[i], numba.float32(0.0))

    ptx = toolchain.numba_ptx(article_relu, "void(float32[::1], float32[::1], float32[::1], float32[::1])")
    counts = toolchain.ptx_instructions(ptx)
    assert ".target sm_90" in ptx
    assert counts["fma.rn.f32"] == 1 and counts["ld.global.f32"] == 3 and counts["st.global.f32"] == 1


def test_function_source_strips_decorators():
    src, name = toolchain._function_source("@cuda.jit\ndef k(a):\n    a[0] = 1\n")
    assert name == "k" and not src.startswith("@")


@needs_toolchain
def test_wgmma_compiles_to_hgmma_for_sm90a_and_is_refused_for_sm90():
    s = toolchain.sass_of(toolchain.WGMMA_CU, arch="sm_90a")
    assert s.variants("HGMMA") == {"HGMMA.64x8x16.F32": 1}  # m64 n8 k16, fp16 in, fp32 accumulate
    assert s.count("WARPGROUP") == 2 and s.count("HMMA") == 0  # ARRIVE before, DEPBAR (wait_group) after
    order = [i.split(".")[0] for i in s.instructions if i.split(".")[0] in ("WARPGROUP", "HGMMA")]
    assert order == ["WARPGROUP", "HGMMA", "WARPGROUP"]
    refusal = toolchain.compile_error(toolchain.WGMMA_CU, "sm_90")
    assert refusal and "wgmma.fence" in refusal and "sm_90" in refusal


@needs_toolchain
def test_wgmma_kernel_fences_the_async_proxy_before_reading_shared_memory():
    # PTX ISA: an async proxy fence must order prior (generic) writes to shared-memory matrices before a wgmma
    # reads them; wgmma.fence orders register accesses only. SASS: FENCE.VIEW.ASYNC.S before WARPGROUP.ARRIVE.
    assert "fence.proxy.async.shared::cta" in toolchain.WGMMA_CU
    s = toolchain.sass_of(toolchain.WGMMA_CU, arch="sm_90a")
    order = [i for i in s.instructions if i.startswith(("BAR.SYNC", "FENCE.VIEW.ASYNC", "WARPGROUP", "HGMMA"))]
    assert order[:3] == ["BAR.SYNC.DEFER_BLOCKING", "FENCE.VIEW.ASYNC.S", "WARPGROUP.ARRIVE"]
    assert toolchain.compile_error(toolchain.ELEMENTWISE_CU, "sm_90") is None


@needs_toolchain
def test_ptxas_assembles_ptx_to_the_same_sass_as_nvrtc():
    ptx = toolchain.compile_cuda(toolchain.wmma_cu(1), arch="compute_90", output="ptx").decode()
    s = toolchain.sass_of_ptx(ptx, arch="sm_90")
    assert s.variants("HMMA") == {"HMMA.16816.F32": 2}
    with pytest.raises(RuntimeError, match="ptxas"):
        toolchain.assemble_ptx(".version 8.0\n.target sm_90\n.address_size 64\nnot ptx at all", "sm_90")
    assert toolchain.cuda_data_dir() is not None  # bin/ptxas and nvvm/libdevice side by side (XLA's CUDA dir)


@needs_toolchain
def test_numba_ptx_many_compiles_several_kernels_in_one_child_with_their_constants():
    """One child process, results in order; the same source with two values of a constant gives two programs."""
    src = "def scale(x, out):\n    i = cuda.grid(1)\n    if i < out.size:\n        out[i] = x[i] * np.float32(K)\n"
    sig = "void(float32[::1], float32[::1])"
    three, five = toolchain.numba_ptx_many([(src, sig, {"K": 3.0}), (src, sig, {"K": 5.0})])
    assert three != five and ".target sm_90" in three
    assert "0f40400000" in three and "0f40A00000" in five  # 3.0f and 5.0f as PTX hex immediates
    (sass,) = toolchain.numba_sass_many([(src, sig, {"K": 3.0})])
    assert sass.count("FMUL") == 1 and sass.count("STG") == 1


def test_numba_ptx_many_refuses_a_constant_that_is_not_a_number():
    with pytest.raises(ValueError, match="expected an identifier bound to an int or a float"):
        toolchain.numba_ptx_many([("def k(a):\n    a[0] = K\n", "void(float32[::1])", {"K": "1; import os"})])
    assert toolchain.numba_ptx_many([]) == []


def test_versions_name_the_compiler_and_disassembler_or_nothing(monkeypatch):
    """What the stored SASS counts of lab 6 record: the NVRTC and nvdisasm that computed them (None without them)."""
    v = toolchain.versions()
    if toolchain.available():
        assert v.startswith(f"NVRTC {'.'.join(map(str, toolchain._nvrtc_version()))}") and ", nvdisasm V" in v
    else:
        assert v is None
    toolchain.versions.cache_clear()
    monkeypatch.setattr(toolchain, "missing", lambda: ["nvdisasm (nvidia-cuda-nvdisasm)"])
    assert toolchain.versions() is None
    toolchain.versions.cache_clear()
