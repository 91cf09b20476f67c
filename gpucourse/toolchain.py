"""Below HLO with no GPU: PTX and SASS for a Hopper (sm_90) target, from NVIDIA's own compiler
wheels.

Three real NVIDIA tools run on any Linux/Windows machine, GPU or not:

- **numba-cuda → PTX**: ``numba.cuda.compile_ptx(fn, sig, cc=(9, 0))`` (NVVM from the
  ``nvidia-nvvm`` wheel). The CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, the course's CPU backend)
  *replaces* ``numba.cuda`` in its process, so :func:`numba_ptx` compiles in a child process started
  without that variable.
- **CUDA C → cubin**: NVRTC (``nvidia-cuda-nvrtc`` wheel, called through ``cuda-bindings``) compiles
  a CUDA C kernel for ``sm_90``; the headers (``mma.h`` for the wmma tensor-core API,
  ``cuda_fp16.h``) come from the ``nvidia-cuda-runtime`` and ``nvidia-cuda-crt`` wheels.
- **cubin → SASS**: ``nvdisasm`` (``nvidia-cuda-nvdisasm`` wheel) prints the machine code the GPU
  executes.
- **PTX → cubin**: ``ptxas`` (``nvidia-cuda-nvcc`` wheel), the assembler XLA and the driver run on
  PTX: it turns the PTX that numba-cuda or XLA generated into machine code (:func:`assemble_ptx`,
  :func:`numba_sass`; several kernels in one child process: :func:`numba_sass_many`).

:func:`sass_of` chains NVRTC and nvdisasm; :class:`Sass` counts instructions by opcode (``FFMA``,
``HMMA``, ...).

Two tensor-core paths exist on Hopper, and both compile here (:data:`WMMA` kernels via
:func:`wmma_cu`, :data:`WGMMA_CU`): the warp-level ``mma.sync``/wmma (SASS ``HMMA.16816``, Ampere's
instruction, any sm_80+ target) and the warpgroup-level asynchronous ``wgmma.mma_async`` (SASS
``HGMMA.64xNxK``, K = 16 for fp16/bf16, 8 for TF32, 32 for FP8), which exists only for the
architecture-specific target ``sm_90a``: ``compile_error(WGMMA_CU, "sm_90")`` returns ptxas's
refusal. Every entry point raises :class:`ToolchainMissing` (with the pip line to fix it) when a
wheel is absent; :func:`missing` says what is absent without raising, for notebooks and tests that
skip.
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

PIP_HINT = (
    "pip install -e '.[toolchain]'  (Linux/Windows only: nvidia-cuda-nvrtc, nvidia-cuda-runtime, "
    "nvidia-cuda-crt, nvidia-cuda-nvdisasm, nvidia-nvvm, nvidia-cuda-nvcc)"
)


class ToolchainMissing(RuntimeError):
    """An NVIDIA compiler wheel this step needs is not installed (the message names it)."""


# -- where the wheels put things -------------------------------------------------------------------

def _nvidia_roots() -> list[Path]:
    """Folders of NVIDIA's wheels: ``nvidia/cu13`` (CUDA 13 wheels share one) or
    ``nvidia/<component>`` (CUDA 12)."""
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


def _wheel_binary(name: str) -> Path | None:
    """A binary from NVIDIA's wheels (``nvidia/<root>/bin/NAME``), else from the PATH."""
    exe = f"{name}.exe" if os.name == "nt" else name
    for root in _nvidia_roots():
        if (root / "bin" / exe).is_file():
            return root / "bin" / exe
    from shutil import which

    found = which(exe)
    return Path(found) if found else None


def nvdisasm_path() -> Path | None:
    """The ``nvdisasm`` binary from the ``nvidia-cuda-nvdisasm`` wheel (or the PATH)."""
    return _wheel_binary("nvdisasm")


def ptxas_path() -> Path | None:
    """The ``ptxas`` assembler (PTX → cubin) from the ``nvidia-cuda-nvcc`` wheel (or the PATH)."""
    return _wheel_binary("ptxas")


def cuda_data_dir() -> Path | None:
    """The wheels' CUDA folder holding ``bin/ptxas`` and ``nvvm/libdevice`` (what XLA calls its CUDA
    data dir)."""
    p = ptxas_path()
    return (
        p.parent.parent
        if p is not None and (p.parent.parent / "nvvm" / "libdevice").is_dir()
        else None
    )


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
    if ptxas_path() is None:
        out.append("ptxas (nvidia-cuda-nvcc)")
    return out


def available() -> bool:
    """True when CUDA C can be compiled to sm_90 and disassembled to SASS on this machine.

    Returns:
        True when NVIDIA's compiler and disassembler wheels are installed and run.
    """
    return not missing()


def describe() -> str:
    """One line for notebooks: versions found, or what is missing and how to install it.

    Returns:
        one line of text.
    """
    gone = missing()
    if gone:
        return f"NVIDIA toolchain incomplete: missing {', '.join(gone)}. Install: {PIP_HINT}"
    major, minor = _nvrtc_version()
    return (
        f"NVIDIA toolchain: NVRTC {major}.{minor}, nvdisasm and ptxas in {nvdisasm_path().parent}, "
        f"headers in {_find_header('mma.h')}"
    )


def require() -> None:
    gone = missing()
    if gone:
        raise ToolchainMissing(f"missing {', '.join(gone)}; install with: {PIP_HINT}")


# -- CUDA C -> cubin -> SASS -----------------------------------------------------------------------

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
def compile_cuda(
    source: str, arch: str = "sm_90", output: str = "cubin", options: tuple[str, ...] = ()
) -> bytes:
    """Compile CUDA C ``source`` with NVRTC. ``arch='sm_90'`` (Hopper) with ``output='cubin'`` gives
    machine code; ``output='ptx'`` gives PTX (use ``arch='compute_90'``). Kernels should be ``extern
    "C"`` to keep their names. Compilation is deterministic, so results are cached per (source,
    arch, output, options)."""
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


def compile_error(source: str, arch: str = "sm_90") -> str | None:
    """NVRTC's error log when ``source`` does NOT compile for ``arch`` (None when it does): how a
    target refuses an instruction it lacks, e.g. ``wgmma`` on ``sm_90`` (it needs ``sm_90a``)."""
    try:
        compile_cuda(source, arch=arch)
    except RuntimeError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=1)
def ptxas_version() -> str | None:
    """``ptxas``'s release line (e.g. "Cuda compilation tools, release 13.0, V13.0.88"), or None
    without ptxas."""
    exe = ptxas_path()
    if exe is None:
        return None
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    lines = [ln.strip() for ln in done.stdout.splitlines() if "release" in ln]
    return lines[-1] if lines else None


@lru_cache(maxsize=1)
def versions() -> str | None:
    """The versions that decide the SASS :func:`sass_of` prints, e.g. "NVRTC 13.0 (nvidia-cuda-nvrtc
    13.0.88), nvdisasm V13.0.85": counts of instructions computed with one toolchain may differ
    under another (NVRTC compiles straight to a cubin; ``nvdisasm`` prints it). None where the
    toolchain is incomplete."""
    if not available():
        return None
    from importlib import metadata

    major, minor = _nvrtc_version()
    try:
        wheel = f" (nvidia-cuda-nvrtc {metadata.version('nvidia-cuda-nvrtc')})"
    except metadata.PackageNotFoundError:  # a system CUDA's libnvrtc
        wheel = ""
    done = subprocess.run(
        [str(nvdisasm_path()), "--version"], capture_output=True, text=True, timeout=60
    )
    release = re.search(r"V(\d+(?:\.\d+)+)", done.stdout)
    return (
        f"NVRTC {major}.{minor}{wheel}, nvdisasm"
        f" {'V' + release.group(1) if release else 'of unknown version'}"
    )


@lru_cache(maxsize=64)
def assemble_ptx(ptx: str, arch: str = "sm_90a") -> bytes:
    """Assemble PTX text into a cubin for ``arch`` with ``ptxas`` (what XLA and the driver do with
    the PTX that LLVM emits). Raises :class:`ToolchainMissing` without the ``nvidia-cuda-nvcc``
    wheel, RuntimeError with ptxas's message when the PTX does not assemble for ``arch``."""
    exe = ptxas_path()
    if exe is None:
        raise ToolchainMissing(
            f"ptxas not found (nvidia-cuda-nvcc wheel); install with: {PIP_HINT}"
        )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        done = subprocess.run(
            [str(exe), f"-arch={arch}", str(src), "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"ptxas -arch={arch} failed: {done.stderr.strip()}")
        return out.read_bytes()


@lru_cache(maxsize=64)
def disassemble(cubin: bytes) -> str:
    """SASS text of a cubin, printed by ``nvdisasm`` (``-c``: code sections only)."""
    require()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run(
            [str(nvdisasm_path()), "-c", str(path)], capture_output=True, text=True, timeout=60
        )
    if done.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {done.stderr.strip()}")
    return done.stdout


# -- reading SASS ----------------------------------------------------------------------------------

# one SASS instruction line:  /*0160*/   @!P0 HMMA.16816.F32 R16, R4.reuse, R12, RZ ;
# (modifiers may hold lower-case letters: HGMMA.64x8x16.F32)
_INSTR = re.compile(
    r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)", re.M
)


@dataclass(frozen=True)
class Sass:
    """Disassembled machine code of one cubin."""

    text: str
    arch: str = "sm_90"

    @property
    def instructions(self) -> list[str]:
        """Every instruction as its full opcode with modifiers, in order: ['LDG.E',
        'HMMA.16816.F32', ...]."""
        return _INSTR.findall(self.text)

    def opcodes(self) -> Counter:
        """How many instructions of each base opcode (modifiers dropped): Counter({'FFMA': 8,
        ...})."""
        return Counter(i.split(".")[0] for i in self.instructions)

    def count(self, opcode: str) -> int:
        """Instructions whose base opcode is ``opcode`` ('FFMA' counts FFMA and FFMA.FTZ, not
        FFMA2... nor DFMA)."""
        return self.opcodes()[opcode]

    def variants(self, opcode: str) -> Counter:
        """Full spellings of one opcode, e.g. {'HMMA.16816.F32': 2}: the modifiers carry the
        tensor-core shape."""
        return Counter(i for i in self.instructions if i.split(".")[0] == opcode)

    def excerpt(self, opcodes: tuple[str, ...] = (), context: int = 0, limit: int = 40) -> str:
        """Instruction lines with their addresses (the NOP padding after the last EXIT/BRA dropped);
        only those of ``opcodes`` (and ``context`` lines around each) when given."""
        lines = [ln.rstrip() for ln in self.text.splitlines() if _INSTR.match(ln)
                 and _INSTR.match(ln).group(1) != "NOP"]
        if opcodes:
            keep = {
                i
                for i, ln in enumerate(lines)
                if _INSTR.match(ln).group(1).split(".")[0] in opcodes
            }
            keep = {
                j for i in keep for j in range(i - context, i + context + 1) if 0 <= j < len(lines)
            }
            lines = [ln for i, ln in enumerate(lines) if i in keep]
        cut = lines[:limit] + (["        ..."] if len(lines) > limit else [])
        return "\n".join(re.sub(r"\s{2,}", "  ", ln).strip() for ln in cut)


def sass_of(source: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> Sass:
    """CUDA C source -> NVRTC cubin for ``arch`` -> ``nvdisasm`` -> :class:`Sass`."""
    return Sass(disassemble(compile_cuda(source, arch=arch, options=options)), arch)


def sass_of_ptx(ptx: str, arch: str = "sm_90a") -> Sass:
    """PTX text -> ``ptxas`` cubin for ``arch`` -> ``nvdisasm`` -> :class:`Sass`."""
    return Sass(disassemble(assemble_ptx(ptx, arch)), arch)


# -- numba-cuda -> PTX, in a child process ---------------------------------------------------------

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
    """(source with decorators removed, name) of a plain Python kernel function (or its source
    text)."""
    if callable(fn):
        import inspect

        # a @cuda.jit dispatcher (simulator or real) keeps the Python function
        fn = getattr(fn, "py_func", fn)
        src = textwrap.dedent(inspect.getsource(fn))
    else:
        src = textwrap.dedent(fn)
    src = re.sub(r"^@.*\n", "", src, flags=re.M)
    return _one_def(src)


def _kernel_names(fn: Callable | str) -> str:
    """The prelude a kernel's own globals need in the child: its int/float constants (and tuples of
    them) as assignments, and numba.cuda's intrinsics it imported by name (``from numba.cuda import
    shfl_down_sync``) as imports — nothing else of the student's module travels (the child compiles
    one def, and runs nothing else)."""
    if not callable(fn):
        return ""
    import types as _types

    fn = getattr(fn, "py_func", fn)
    code, globals_ = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    if code is None:
        return ""
    names, stack = set(), [code]
    while stack:  # the kernel's code and the code nested in it (a lambda, an inner def)
        c = stack.pop()
        names |= set(c.co_names)
        stack += [k for k in c.co_consts if isinstance(k, _types.CodeType)]
    real = sys.modules.get("numba.cuda")
    lines = []
    for name in sorted(n for n in names if n in globals_ and n.isidentifier()):
        value = globals_[name]
        number = (int, float)
        if (
            isinstance(value, number)
            and not isinstance(value, bool)
            or (
                isinstance(value, tuple)
                and all(isinstance(v, number) and not isinstance(v, bool) for v in value)
            )
        ):
            lines.append(f"{name} = {value!r}")
        elif real is not None and type(value).__name__ == "_Intrinsic" and \
                getattr(real, getattr(value, "__name__", ""), None) is value:
            lines.append(f"from numba.cuda import {value.__name__} as {name}")
    return "".join(line + "\n" for line in lines)


_SIGNATURE = re.compile(r"(?!.*__)[A-Za-z0-9_\[\]:,\s().]+")


def _signature(sig: str) -> str:
    """A numba signature text (``void(float32[::1], int64)``): numba evaluates it, so nothing else
    is let through."""
    if not isinstance(sig, str) or not _SIGNATURE.fullmatch(sig):
        raise ValueError(
            f"not a numba signature: {sig!r} (e.g. \"void(float32[::1], float32[::1])\")"
        )
    return sig


def _one_def(src: str) -> tuple[str, str]:
    """(source, name) when ``src`` is exactly one ``def`` whose definition runs nothing: the child
    process execs it before numba-cuda compiles it, so module-level statements, decorators, default
    values and annotations (all evaluated when the def runs) are refused — the child compiles a
    kernel, it is not a place to run code (the eighth independent attack ran XLA there, past lab 6's
    lock)."""
    import ast

    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ValueError(
            f"the kernel's source does not parse: {exc.msg} (line {exc.lineno})"
        ) from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise ValueError(
            "expected the source of exactly one `def kernel(...)` function, with nothing around it"
        )
    fn = tree.body[0]
    a = fn.args
    evaluated = [
        *fn.decorator_list,
        *a.defaults,
        *(d for d in a.kw_defaults if d is not None),
        fn.returns,
        *(x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x),
    ]
    if any(e is not None and not isinstance(e, ast.Constant) for e in evaluated):
        raise ValueError(
            f"{fn.name}: a kernel compiled here takes no decorators, annotations or non-constant "
            "defaults (each is evaluated when the def runs)"
        )
    return src, fn.name


def _compile_error(stderr: str) -> str:
    """numba's own headline of a failed compile (``TypingError: No implementation of function ...
    shared.array``) and where it was (its "During: ..." or "File ..., line N" line), not the
    traceback's last line ("No match.")."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    k = next(
        (i for i, ln in enumerate(lines) if re.match(r"(\w+\.)*\w*(Error|Exception)\b", ln)),
        len(lines) - 1,
    )
    head = lines[k] if lines else ""
    # "found for signature:" then it
    sig = next((ln for ln in lines[k + 1:k + 4] if ln.startswith(">>>")), "")
    at = next(
        (
            ln
            for ln in reversed(lines)
            if ln.startswith("During:") or re.match(r'File "<(?!string>)', ln)
        ),
        "",
    )
    # the name it could not find
    untyped = next((ln for ln in lines if ln.startswith("Untyped global name")), "")
    text = (
        head[:400]
        + (f" {sig[:200]}" if sig else "")
        + (f": {untyped[:200]}" if untyped and untyped not in head else "")
        + (f" ({at[:200]})" if at and at not in head else "")
    )
    return text or "(no message)"


def numba_ptx(
    fn: Callable | str, signature: str, cc: tuple[int, int] = (9, 0), timeout: float = 120
) -> str:
    """PTX that numba-cuda generates for kernel ``fn`` with ``signature``, e.g.
    ``"void(float32[::1], float32[::1])"``, for compute capability ``cc`` (9.0 = Hopper).

    Runs ``numba.cuda.compile_ptx`` in a child Python without ``NUMBA_ENABLE_CUDASIM`` (the
    simulator in this process replaces ``numba.cuda``). ``fn`` may use ``cuda``, ``numba``,
    ``math``, its module's int/float constants and numba.cuda's intrinsics imported by name; it is
    re-created from its source, so it cannot close over notebook variables.
    """
    src, name = _function_source(fn)
    return _numba_ptx(_kernel_names(fn) + src, name, _signature(signature), tuple(cc), timeout)


@lru_cache(maxsize=32)
def _numba_ptx(src: str, name: str, signature: str, cc: tuple[int, int], timeout: float) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input="\0".join([src, name, signature, *map(str, cc)]),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        if "nvvm" in done.stderr.lower() or "libnvvm" in done.stderr.lower():
            raise ToolchainMissing(
                f"numba-cuda found no NVVM (nvidia-nvvm wheel): {tail[0]}; install with: {PIP_HINT}"
            )
        raise RuntimeError(f"numba-cuda could not compile {name}: {_compile_error(done.stderr)}")
    return done.stdout


def numba_sass(fn: Callable | str, signature: str, cc: tuple[int, int] = (9, 0)) -> Sass:
    """SASS of a numba-cuda kernel: :func:`numba_ptx` (NVVM) then ``ptxas`` and ``nvdisasm`` for
    ``sm_<cc>``."""
    arch = f"sm_{cc[0]}{cc[1]}"
    return sass_of_ptx(numba_ptx(fn, signature, cc), arch)


# -- several numba-cuda kernels in one child process (one numba import, one NVVM load) -------------

_CHILD_MANY = r"""
import json, os, sys
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
job = json.loads(sys.stdin.read())
from numba import cuda
out = []
for src, name, sig in job["kernels"]:
    namespace = {}
    header = "from numba import cuda\nimport numba, math\nimport numpy as np\n"
    exec(compile(header + src, "<" + name + ">", "exec"), namespace)
    ptx, _ = cuda.compile_ptx(namespace[name], sig, cc=tuple(job["cc"]), lineinfo=False)
    out.append(ptx)
sys.stdout.write(json.dumps(out))
"""


def numba_ptx_many(kernels, cc: tuple[int, int] = (9, 0), timeout: float = 120) -> list[str]:
    """PTX of several numba-cuda kernels, compiled in **one** child process (numba's import and
    NVVM's start are paid once: the bulk of :func:`numba_ptx`'s seconds). ``kernels`` holds ``(fn,
    signature)`` or ``(fn, signature, constants)`` tuples; ``constants`` (name -> int/float) are
    defined before the kernel's source, so a notebook kernel that names module constants (a tile
    edge ``TILE``) compiles here, and the same kernel can be compiled with other values (``TILE_PAD
    = TILE`` against ``TILE + 1``). ``np``, ``math``, ``numba``, ``cuda`` are imported for every
    kernel. Returns the PTX texts in the order given."""
    import json

    jobs = []
    for entry in kernels:
        fn, signature, constants = (*entry, {})[:3]
        src, name = _function_source(fn)
        for key, value in dict(constants).items():
            if (
                not key.isidentifier()
                or not isinstance(value, (int, float))
                or isinstance(value, bool)
            ):
                raise ValueError(
                    f"constant {key}={value!r}: expected an identifier bound to an int or a float"
                )
        # the kernel's own constants and imported intrinsics, then the caller's constants (which
        # win)
        prelude = _kernel_names(fn) + "".join(
            f"{key} = {value!r}\n" for key, value in dict(constants).items()
        )
        jobs.append([prelude + src, name, _signature(signature)])
    if not jobs:
        return []
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD_MANY],
        input=json.dumps({"kernels": jobs, "cc": list(cc)}),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        if "nvvm" in done.stderr.lower():
            raise ToolchainMissing(
                f"numba-cuda found no NVVM (nvidia-nvvm wheel): {tail[0]}; install with: {PIP_HINT}"
            )
        raise RuntimeError(f"numba-cuda could not compile {', '.join(j[1] for j in jobs)}: "
                           f"{_compile_error(done.stderr)}")
    return json.loads(done.stdout)


def numba_sass_many(kernels, cc: tuple[int, int] = (9, 0)) -> list[Sass]:
    """:func:`numba_ptx_many`, then ``ptxas`` and ``nvdisasm`` of each PTX for ``sm_<cc>``: one
    :class:`Sass` per kernel, in order."""
    arch = f"sm_{cc[0]}{cc[1]}"
    return [sass_of_ptx(ptx, arch) for ptx in numba_ptx_many(kernels, cc)]


def ptx_instructions(ptx: str) -> Counter:
    """PTX instructions by opcode with modifiers ('fma.rn.f32', 'ld.global.f32', ...), labels and
    directives skipped."""
    # modifiers may hold capitals: XLA writes max.NaN.f32 (NaN-propagating max), which a
    # lower-case-only pattern drops
    return Counter(
        re.findall(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+)*)[\s;]", ptx, re.M)
    )


# -- CUDA C sources the course and lab 6 compile ---------------------------------------------------

ELEMENTWISE_CU = r'''
extern "C" __global__ void fused_relu(const float* x, const float* y, const float* z, float* out,
                                      int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i] * y[i] + z[i], 0.0f);
}
'''


def unrolled_fma_cu(terms: int, name: str = "poly") -> str:
    """A kernel evaluating a polynomial by Horner's rule, fully unrolled: one FFMA per term, except
    the first (``acc = 1·v + 0.5`` folds to an FADD)."""
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


def mixed_fma_cu(f32: int, half2: int, f64: int, name: str = "mixed_fma") -> str:
    """A kernel with three fused multiply-add chains, unrolled: ``f32`` float terms (FFMA, the first
    folds to an FADD), ``half2`` __hfma2 terms on pairs of halves (HFMA2) and ``f64`` double terms
    (DFMA). Only the first are FP32 FMAs; ptxas may also use an HFMA2.MMA to move a constant (an
    HFMA2 on another pipe, not a matrix instruction)."""
    body = "\n".join(
        [f"    f = f * v + {0.5 + t:.1f}f;" for t in range(f32)]
        + [f"    h = __hfma2(h, hv, __float2half2_rn({1.5 + t:.1f}f));" for t in range(half2)]
        + [f"    d = d * dv + {2.5 + t:.1f};" for t in range(f64)]
    )
    return f'''
#include <cuda_fp16.h>
extern "C" __global__ void {name}(const float* x, const __half2* y, const double* z, float* out,
                                  __half2* hout, double* dout, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], f = 1.0f;
    __half2 hv = y[i], h = __float2half2_rn(1.0f);
    double dv = z[i], d = 1.0;
{body}
    out[i] = f; hout[i] = h; dout[i] = d;
}}
'''


def wmma_cu(k_steps: int = 1, name: str = "wmma_gemm") -> str:
    """One warp computes C (16×16, fp32) += A (16×16k, fp16) · B (16k×16, fp16) with ``k_steps``
    wmma::mma_sync."""
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


# Hopper's warpgroup MMA. One warpgroup (4 warps, 128 threads) multiplies A (64×16 fp16) by B (16×8
# fp16), both read by the tensor cores straight from shared memory through 64-bit matrix
# descriptors, into a 64×8 fp32 tile held in registers (4 per thread). ``wgmma.mma_async`` is
# asynchronous: issued after ``wgmma.fence``, grouped by ``commit_group``, waited for by
# ``wait_group``. Only the ``sm_90a`` target has it (PTX ISA 8.0+, "Asynchronous Warpgroup Level
# Matrix Multiply-Accumulate"); ptxas refuses it for ``sm_90``. Operands use the ISA's canonical
# no-swizzle K-major layout: 8×8 "core matrices" of 128 contiguous bytes; the descriptor's leading
# byte offset steps between core matrices along K, its stride byte offset along M (or N). The course
# compiles this kernel to read its machine code; it is not run (no GPU in CI), and each thread
# stores its 4 accumulators without the fragment-to-(row, column) mapping a real epilogue applies.
WGMMA_CU = r'''
#include <cuda_fp16.h>
__device__ unsigned long long smem_desc(const void* p, unsigned lead_bytes, unsigned stride_bytes) {
    // the shared-memory byte address; the descriptor's bits 0-13: start address / 16, bits 16-29:
    // leading byte offset / 16, bits 32-45: stride byte offset / 16
    unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
    return (unsigned long long)((addr >> 4) & 0x3FFF)
         | (unsigned long long)((lead_bytes >> 4) & 0x3FFF) << 16
         | (unsigned long long)((stride_bytes >> 4) & 0x3FFF) << 32;
}
extern "C" __global__ void wgmma_tile(const half* a, const half* b, float* c) {
    __shared__ __align__(128) half sa[64 * 16];   // A: 8 (M) x 2 (K) core matrices
    __shared__ __align__(128) half sb[8 * 16];    // B as N x K: 1 (N) x 2 (K) core matrices
    int t = threadIdx.x;
    // A row-major (m, k) -> core matrix (m/8, k/8), row m%8, col k%8
    for (int i = t; i < 64 * 16; i += 128) {
        int m = i / 16, k = i % 16;
        sa[((m / 8) * 2 + k / 8) * 64 + (m % 8) * 8 + k % 8] = a[i];
    }
    // B row-major (k, n) -> core matrix (0, k/8), row n, col k%8
    for (int i = t; i < 16 * 8; i += 128) {
        int k = i / 8, n = i % 8;
        sb[(k / 8) * 64 + n * 8 + k % 8] = b[i];
    }
    __syncthreads();
    // the tiles were written with ordinary stores (the generic proxy); wgmma reads shared memory
    // through the async proxy: an async-proxy fence orders those writes before its reads (PTX ISA,
    // wgmma "Async Proxy"; CUTLASS's fence_view_async_shared). wgmma.fence orders only the register
    // accesses.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    unsigned long long da = smem_desc(sa, 128, 256), db = smem_desc(sb, 128, 256);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    // p = 0: D = A*B (p = 1 would accumulate into D)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
                 " {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db), "r"(0));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    c[4 * t + 0] = d0; c[4 * t + 1] = d1; c[4 * t + 2] = d2; c[4 * t + 3] = d3;
}
'''
