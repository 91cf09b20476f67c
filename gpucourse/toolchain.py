"""Below HLO with no GPU: PTX and SASS for a Hopper (sm_90) target, from NVIDIA's own compiler wheels.

Three real NVIDIA tools run on any Linux/Windows machine, GPU or not:

- **numba-cuda → PTX**: ``numba.cuda.compile_ptx(fn, sig, cc=(9, 0))`` (NVVM from the ``nvidia-nvvm`` wheel).
  The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, the course's CPU backend) *replaces* ``numba.cuda`` in its
  process, so :func:`numba_ptx` compiles in a child process started without that variable.
- **CUDA C → cubin**: NVRTC (``nvidia-cuda-nvrtc`` wheel, called through ``cuda-bindings``) compiles a CUDA C
  kernel for ``sm_90``; the headers (``mma.h`` for the wmma tensor-core API, ``cuda_fp16.h``) come from the
  ``nvidia-cuda-runtime`` and ``nvidia-cuda-crt`` wheels.
- **cubin → SASS**: ``nvdisasm`` (``nvidia-cuda-nvdisasm`` wheel) prints the machine code the GPU executes.

:func:`sass_of` chains the last two; :class:`Sass` counts its instructions by opcode (``FFMA``, ``HMMA``, ...).
Every entry point raises :class:`ToolchainMissing` (with the pip line to fix it) when a wheel is absent;
:func:`missing` says what is absent without raising, for notebooks and tests that skip.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

PIP_HINT = ("pip install -e '.[toolchain]'  (Linux/Windows only: nvidia-cuda-nvrtc, nvidia-cuda-runtime, "
            "nvidia-cuda-crt, nvidia-cuda-nvdisasm, nvidia-nvvm)")


class ToolchainMissing(RuntimeError):
    """An NVIDIA compiler wheel this step needs is not installed (the message names it)."""


# -- where the wheels put things ----------------------------------------------------------------------------------

def _nvidia_roots() -> list[Path]:
    """Folders of NVIDIA's wheels: ``nvidia/cu13`` (CUDA 13 wheels share one) or ``nvidia/<component>`` (CUDA 12)."""
    try:
        import nvidia  # namespace package created by the wheels
    except ImportError:
        return []
    roots: list[Path] = []
    for base in map(Path, getattr(nvidia, "__path__", [])):
        roots += sorted(p for p in base.iterdir() if p.is_dir())
    return roots


def include_dirs() -> list[Path]:
    """``include/`` folders of the NVIDIA wheels (``mma.h``, ``cuda_fp16.h``, ``crt/…``)."""
    return [r / "include" for r in _nvidia_roots() if (r / "include").is_dir()]


def _find_header(name: str) -> Path | None:
    return next((d for d in include_dirs() if (d / name).is_file()), None)


def nvdisasm_path() -> Path | None:
    """The ``nvdisasm`` binary from the ``nvidia-cuda-nvdisasm`` wheel (or the PATH)."""
    exe = "nvdisasm.exe" if os.name == "nt" else "nvdisasm"
    for root in _nvidia_roots():
        if (root / "bin" / exe).is_file():
            return root / "bin" / exe
    from shutil import which

    found = which(exe)
    return Path(found) if found else None


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        try:
            from cuda import nvrtc  # cuda-python < 12.6 layout
        except ImportError:
            return None
    return nvrtc


@lru_cache(maxsize=None)
def _nvrtc_version() -> tuple[int, int] | None:
    nvrtc = _nvrtc()
    if nvrtc is None:
        return None
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # cuda-bindings present, libnvrtc (the wheel) missing
        return None
    return (major, minor) if int(err) == 0 else None


def missing() -> list[str]:
    """What is absent for the PTX/SASS steps (an empty list: everything works here)."""
    out = []
    if _nvrtc_version() is None:
        out.append("NVRTC (cuda-bindings + nvidia-cuda-nvrtc)")
    if _find_header("mma.h") is None:
        out.append("CUDA headers mma.h/cuda_fp16.h (nvidia-cuda-runtime + nvidia-cuda-crt)")
    if nvdisasm_path() is None:
        out.append("nvdisasm (nvidia-cuda-nvdisasm)")
    return out


def available() -> bool:
    """True when CUDA C can be compiled to sm_90 and disassembled to SASS on this machine."""
    return not missing()


def describe() -> str:
    """One line for notebooks: versions found, or what is missing and how to install it."""
    gone = missing()
    if gone:
        return f"NVIDIA toolchain incomplete: missing {', '.join(gone)}. Install: {PIP_HINT}"
    major, minor = _nvrtc_version()
    return f"NVIDIA toolchain: NVRTC {major}.{minor}, nvdisasm at {nvdisasm_path()}, headers in {_find_header('mma.h')}"


def require() -> None:
    gone = missing()
    if gone:
        raise ToolchainMissing(f"missing {', '.join(gone)}; install with: {PIP_HINT}")


# -- CUDA C -> cubin -> SASS ----------------------------------------------------------------------------------------

def _check(nvrtc, result, what: str, prog=None) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        log = ""
        if prog is not None:
            _, n = nvrtc.nvrtcGetProgramLogSize(prog)
            buf = b" " * n
            nvrtc.nvrtcGetProgramLog(prog, buf)
            log = buf.decode(errors="replace").strip()
        raise RuntimeError(f"NVRTC {what} failed ({err}){': ' + log if log else ''}")


@lru_cache(maxsize=64)
def compile_cuda(source: str, arch: str = "sm_90", output: str = "cubin", options: tuple[str, ...] = ()) -> bytes:
    """Compile CUDA C ``source`` with NVRTC. ``arch='sm_90'`` (Hopper) with ``output='cubin'`` gives machine code;
    ``output='ptx'`` gives PTX (use ``arch='compute_90'``). Kernels should be ``extern "C"`` to keep their names.
    Compilation is deterministic, so results are cached per (source, arch, output, options)."""
    require()
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    _check(nvrtc, err, "create")
    try:
        opts = [f"--gpu-architecture={arch}", "-std=c++17", *options]
        opts += [f"-I{d}" for d in include_dirs()]
        encoded = [o.encode() for o in opts]
        _check(nvrtc, nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded), "compile", prog)
        if output == "cubin":
            _, n = nvrtc.nvrtcGetCUBINSize(prog)
            buf = b" " * n
            _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, buf), "get cubin")
        elif output == "ptx":
            _, n = nvrtc.nvrtcGetPTXSize(prog)
            buf = b" " * n
            _check(nvrtc, nvrtc.nvrtcGetPTX(prog, buf), "get ptx")
            buf = buf.rstrip(b"\0")
        else:
            raise ValueError("output must be 'cubin' or 'ptx'")
        return bytes(buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@lru_cache(maxsize=64)
def disassemble(cubin: bytes) -> str:
    """SASS text of a cubin, printed by ``nvdisasm`` (``-c``: code sections only)."""
    require()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([str(nvdisasm_path()), "-c", str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {done.stderr.strip()}")
    return done.stdout


# -- reading SASS --------------------------------------------------------------------------------------------------

# one SASS instruction line:  /*0160*/   @!P0 HMMA.16816.F32 R16, R4.reuse, R12, RZ ;
_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)", re.M)


@dataclass(frozen=True)
class Sass:
    """Disassembled machine code of one cubin."""

    text: str
    arch: str = "sm_90"

    @property
    def instructions(self) -> list[str]:
        """Every instruction as its full opcode with modifiers, in order: ['LDG.E', 'HMMA.16816.F32', ...]."""
        return _INSTR.findall(self.text)

    def opcodes(self) -> Counter:
        """How many instructions of each base opcode (modifiers dropped): Counter({'FFMA': 8, ...})."""
        return Counter(i.split(".")[0] for i in self.instructions)

    def count(self, opcode: str) -> int:
        """Instructions whose base opcode is ``opcode`` ('FFMA' counts FFMA and FFMA.FTZ, not FFMA2... nor DFMA)."""
        return self.opcodes()[opcode]

    def variants(self, opcode: str) -> Counter:
        """Full spellings of one opcode, e.g. {'HMMA.16816.F32': 2}: the modifiers carry the tensor-core shape."""
        return Counter(i for i in self.instructions if i.split(".")[0] == opcode)

    def excerpt(self, opcodes: tuple[str, ...] = (), context: int = 0, limit: int = 40) -> str:
        """Instruction lines with their addresses (the NOP padding after the last EXIT/BRA dropped); only those of
        ``opcodes`` (and ``context`` lines around each) when given."""
        lines = [ln.rstrip() for ln in self.text.splitlines() if _INSTR.match(ln)
                 and _INSTR.match(ln).group(1) != "NOP"]
        if opcodes:
            keep = {i for i, ln in enumerate(lines) if _INSTR.match(ln).group(1).split(".")[0] in opcodes}
            keep = {j for i in keep for j in range(i - context, i + context + 1) if 0 <= j < len(lines)}
            lines = [ln for i, ln in enumerate(lines) if i in keep]
        cut = lines[:limit] + (["        ..."] if len(lines) > limit else [])
        return "\n".join(re.sub(r"\s{2,}", "  ", ln).strip() for ln in cut)


def sass_of(source: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> Sass:
    """CUDA C source -> NVRTC cubin for ``arch`` -> ``nvdisasm`` -> :class:`Sass`."""
    return Sass(disassemble(compile_cuda(source, arch=arch, options=options)), arch)


# -- numba-cuda -> PTX, in a child process --------------------------------------------------------------------------

_CHILD = r"""
import os, sys
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
src, name, sig, major, minor = sys.stdin.read().split("\0")
namespace = {}
exec(compile("from numba import cuda\nimport numba, math\n" + src, "<kernel>", "exec"), namespace)
from numba import cuda
ptx, _ = cuda.compile_ptx(namespace[name], sig, cc=(int(major), int(minor)), lineinfo=False)
sys.stdout.write(ptx)
"""


def _function_source(fn: Callable | str) -> tuple[str, str]:
    """(source with decorators removed, name) of a plain Python kernel function (or its source text)."""
    if callable(fn):
        import inspect

        fn = getattr(fn, "py_func", fn)  # a @cuda.jit dispatcher (simulator or real) keeps the Python function
        src = textwrap.dedent(inspect.getsource(fn))
    else:
        src = textwrap.dedent(fn)
    src = re.sub(r"^@.*\n", "", src, flags=re.M)
    name = re.search(r"^def\s+(\w+)", src, re.M)
    if not name:
        raise ValueError("expected the source of one `def kernel(...)` function")
    return src, name.group(1)


def numba_ptx(fn: Callable | str, signature: str, cc: tuple[int, int] = (9, 0), timeout: float = 120) -> str:
    """PTX that numba-cuda generates for kernel ``fn`` with ``signature``, e.g.
    ``"void(float32[::1], float32[::1])"``, for compute capability ``cc`` (9.0 = Hopper).

    Runs ``numba.cuda.compile_ptx`` in a child Python without ``NUMBA_ENABLE_CUDASIM`` (the simulator in this
    process replaces ``numba.cuda``). ``fn`` may use ``cuda``, ``numba`` and ``math``; it is re-created from its
    source, so it cannot close over notebook variables.
    """
    src, name = _function_source(fn)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", _CHILD], input="\0".join([src, name, signature, *map(str, cc)]),
                          capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        if "nvvm" in done.stderr.lower() or "libnvvm" in done.stderr.lower():
            raise ToolchainMissing(f"numba-cuda found no NVVM (nvidia-nvvm wheel): {tail[0]}; install with: {PIP_HINT}")
        raise RuntimeError(f"numba-cuda could not compile {name}: {tail[0]}")
    return done.stdout


def ptx_instructions(ptx: str) -> Counter:
    """PTX instructions by opcode with modifiers ('fma.rn.f32', 'ld.global.f32', ...), labels and directives skipped."""
    return Counter(re.findall(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)[\s;]", ptx, re.M))


# -- CUDA C sources the course and lab 6 compile ---------------------------------------------------------

ELEMENTWISE_CU = r'''
extern "C" __global__ void fused_relu(const float* x, const float* y, const float* z, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i] * y[i] + z[i], 0.0f);
}
'''


def unrolled_fma_cu(terms: int, name: str = "poly") -> str:
    """A kernel evaluating a polynomial by Horner's rule, fully unrolled: one FFMA per term, except the first
    (``acc = 1·v + 0.5`` folds to an FADD)."""
    body = "\n".join(f"    acc = acc * v + {0.5 + t:.1f}f;" for t in range(terms))
    return f'''
extern "C" __global__ void {name}(const float* x, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 1.0f;
{body}
    out[i] = acc;
}}
'''


def wmma_cu(k_steps: int = 1, name: str = "wmma_gemm") -> str:
    """One warp computes C (16×16, fp32) += A (16×16k, fp16) · B (16k×16, fp16) with ``k_steps`` wmma::mma_sync."""
    return f'''
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void {name}(const half* a, const half* b, float* c) {{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    #pragma unroll
    for (int k = 0; k < {k_steps}; ++k) {{
        wmma::load_matrix_sync(fa, a + 16 * k, 16 * {k_steps});
        wmma::load_matrix_sync(fb, b + 16 * k, 16 * {k_steps});
        wmma::mma_sync(fc, fa, fb, fc);
    }}
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}}
'''
