"""XLA's GPU compiler without a GPU: optimized HLO, PTX and SASS of a JAX function for an H100, on
any Linux machine.

JAX compiles "deviceless" (ahead of time) for a GPU it does not have:
``jax.experimental.topologies`` builds a compile-only CUDA device from a *target config* (the device
description XLA would otherwise query from the driver), and ``jax.jit(f).lower(specs).compile()``
then runs XLA:GPU's whole pipeline — HLO passes, GEMM rewriting to cuBLAS or Triton, fusion, buffer
assignment, LLVM → PTX, ``ptxas`` → cubin. Sources: JAX's ``tests/aot_test.py``
(``test_deviceless_aot_compile``), openxla/xla PR 16913 ("Enable creating topology without a GPU
device").

What it needs, and why it lives in its own folder:

- JAX's CUDA PJRT plugin, ``jax-cuda13-pjrt`` (same version as jaxlib, 124 MB). Installed into the
  virtual environment it would be picked up by *every* JAX process, which on a machine without CUDA
  libraries then prints a plugin error on stderr; so :func:`install` puts it in a private folder
  (:func:`plugin_dir`) that only the child process of :func:`compile_for_gpu` puts on its path
  (``python -m gpucourse.xla_gpu install``).
- ``ptxas`` and ``libdevice`` from the course's ``toolchain`` extra (``nvidia-cuda-nvcc``,
  ``nvidia-nvvm``), handed to XLA as ``xla_gpu_cuda_data_dir``.

What it cannot do: run anything, and *autotune*. On a real GPU, XLA times candidate GEMM
implementations (cuBLAS vs several Triton tilings) and keeps the fastest; deviceless, it keeps its
untuned default tile. A tile can be forced with the debug option ``xla_gpu_override_gemm_autotuner``
(what an autotuned H100 GEMM looks like), or Triton switched off
(``xla_gpu_enable_triton_gemm=False``) to see the cuBLAS path.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import hardware, toolchain
from .xla import Gemm, find_gemm, parse_buffer_assignment

# XLA:GPU for CUDA 13, as a PJRT plugin (the CUDA 13 toolchain wheels match it)
PLUGIN = "jax-cuda13-pjrt"


# What XLA's GpuTargetConfig needs of a card, per target: (figures, compute capability, SASS arch,
# shared memory per SM, opt-in shared memory per block, threads per SM, FP32 lanes per SM). Limits:
# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (7.5: 64 KiB shared
# and 1,024 threads per SM; 8.0: 164 KiB and 2,048; 9.0: 228 KiB and 2,048); the rest from the
# card's datasheet via `gc.hardware`.
_TARGET_FIGURES = {
    "H100 SXM": (hardware.H100_SXM, (9, 0), "sm_90a", 228, 227, 2048, 128, "NVIDIA H100 80GB HBM3"),
    "A100 SXM 80GB": (
        hardware.A100_SXM,
        (8, 0),
        "sm_80",
        164,
        163,
        2048,
        64,
        "NVIDIA A100-SXM4-80GB",
    ),
    "T4": (hardware.T4, (7, 5), "sm_75", 64, 64, 1024, 64, "Tesla T4"),
}


def _target(name: str) -> str:
    """The course's own description of a card, in the text format of XLA's ``GpuTargetConfig``: not
    XLA's shipped specs (``xla/backends/gpu/target_config/specs/*.txtpb``, which also list the
    scalar and matrix unit rates and differ in ``device_memory_size`` and ``dnn_version``; XLA ships
    none for a T4). Each figure: the card's datasheet / whitepaper (via ``gc.hardware``) or the CUDA
    programming guide's limits for its compute capability (see ``_TARGET_FIGURES``)."""
    h, (major, minor), _, smem_kib, optin_kib, threads, lanes, device_name = _TARGET_FIGURES[name]
    kib = 1024
    feature = " feature_extension: ACCELERATED_FEATURES" if major >= 9 else ""
    return f"""gpu_device_info {{
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: {48 * kib}
  shared_memory_per_core: {smem_kib * kib}
  shared_memory_per_block_optin: {optin_kib * kib}
  threads_per_core_limit: {threads}
  core_count: {h.sm_count}
  fpus_per_core: {lanes}
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: {int(h.memory_bandwidth)}
  l2_cache_size: {h.l2_bytes}
  clock_rate_ghz: {h.boost_clock_hz / 1e9:g}
  device_memory_size: {int(h.memory_bytes)}
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
  cuda_compute_capability {{ major: {major} minor: {minor}{feature} }}
}}
platform_name: "CUDA"
dnn_version_info {{ major: 9 minor: 10 }}
runtime_version {{ major: 13 minor: 0 }}
device_description_str: "{device_name}"
"""


# name -> target config text
TARGETS = {name: (lambda name=name: _target(name)) for name in _TARGET_FIGURES}
# the SASS architecture XLA compiles for
ARCH = {name: figures[2] for name, figures in _TARGET_FIGURES.items()}

# A tile the GEMM autotuner picks for large bf16 GEMMs on Hopper-class GPUs (128×128 output tile,
# 64-deep K step, 8 warps = 2 warpgroups, 3-stage pipeline): what `xla_gpu_override_gemm_autotuner`
# takes.
TUNED_TILE = "block_m: 128 block_n: 128 block_k: 64 num_stages: 3 num_warps: 8 num_ctas: 1"


# -- where the plugin lives ------------------------------------------------------------------------

def _jaxlib_version() -> str:
    from importlib.metadata import version

    return version("jaxlib")


def plugin_dir() -> Path:
    """The private folder of the CUDA PJRT plugin: ``$GPUCOURSE_XLA_GPU_DIR``, else the user
    cache."""
    if os.environ.get("GPUCOURSE_XLA_GPU_DIR"):
        return Path(os.environ["GPUCOURSE_XLA_GPU_DIR"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "gpucourse" / f"xla-gpu-aot-jaxlib-{_jaxlib_version()}"


def _plugin_installed() -> bool:
    return (plugin_dir() / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so").is_file()


def _cuda_plugin_in_env() -> str | None:
    """A JAX CUDA plugin installed in this environment (the GPU backend's jax[cuda12]), if any."""
    import importlib.util

    for name in ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13"):
        try:
            if importlib.util.find_spec(name) is not None:
                return name
        except (ImportError, ValueError):
            continue
    return None


def missing() -> list[str]:
    """What is absent for a deviceless GPU compile here (an empty list: everything works)."""
    out = []
    if _cuda_plugin_in_env():
        from .backend import get_backend

        if get_backend().is_gpu:
            out.append(
                f"nothing to add: {_cuda_plugin_in_env()} is installed in this environment, so XLA"
                " compiles for the real GPU (compile_for_gpu does that on the GPU backend); a"
                " second CUDA plugin would clash"
            )
        else:
            out.append(
                f"a usable GPU: {_cuda_plugin_in_env()} is installed in this environment but JAX"
                " found no GPU to compile for, and a second (deviceless) CUDA plugin would clash"
                " with it — run where a GPU is visible, or in an environment without it (then:"
                " python -m gpucourse.xla_gpu install)"
            )
        return out
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        out.append(
            f"JAX's CUDA plugin exists for Linux x86-64/aarch64 only (this is {platform.system()} "
            f"{platform.machine()})"
        )
        return out
    if toolchain.cuda_data_dir() is None:
        out.append(
            "ptxas and libdevice (pip install -e '.[toolchain]': nvidia-cuda-nvcc, nvidia-nvvm)"
        )
    if not _plugin_installed():
        out.append(
            f"{PLUGIN}=={_jaxlib_version()} in {plugin_dir()} (python -m gpucourse.xla_gpu install)"
        )
    return out


def available() -> bool:
    return not missing()


def describe() -> str:
    gone = missing()
    if gone and gone[0].startswith("nothing to add"):
        return "XLA:GPU: " + gone[0]
    if gone:
        return "deviceless XLA:GPU compile unavailable: missing " + "; ".join(gone)
    return (
        f"deviceless XLA:GPU compile: {PLUGIN} {_jaxlib_version()} in {plugin_dir()}, ptxas in "
        f"{toolchain.cuda_data_dir()}"
    )


def install(quiet: bool = False) -> Path:
    """``pip install --target`` the CUDA PJRT plugin matching this jaxlib into :func:`plugin_dir`
    (124 MB)."""
    target = plugin_dir()
    if _plugin_installed():
        return target
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--target",
        str(target),
        f"{PLUGIN}=={_jaxlib_version()}",
    ]
    if not quiet:
        print(f"installing {PLUGIN}=={_jaxlib_version()} (124 MB) into {target}")
    done = subprocess.run(cmd + (["-q"] if quiet else []), capture_output=quiet, text=True)
    if done.returncode != 0 or not _plugin_installed():
        raise RuntimeError(f"could not install {PLUGIN}: {(done.stderr or '').strip()[-500:]}")
    return target


# -- the child process that compiles ---------------------------------------------------------------

_CHILD = r"""
import glob, json, os, sys, tempfile
import jax, jax.numpy as jnp
from jax import lax
from jax.experimental import topologies
job = json.loads(sys.stdin.read())
topo = topologies.get_topology_desc(platform="cuda", target_config=job["target"], topology="1x1x1")
mesh = topologies.make_mesh(topo, (1,), ("x",))
sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
results = []
for prog in job["programs"]:
    fn = eval(prog["src"], {"jax": jax, "jnp": jnp, "lax": lax})
    specs = [jax.ShapeDtypeStruct(tuple(shape), jnp.dtype(dtype), sharding=sharding)
             for shape, dtype in prog["args"]]
    with tempfile.TemporaryDirectory() as dump:
        opts = dict(prog["options"], xla_dump_to=dump, xla_gpu_cuda_data_dir=job["cuda_data_dir"])
        try:
            c = jax.jit(fn).lower(*specs).compile(compiler_options=opts)
        except Exception as exc:
            results.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        def read(pattern):
            return [open(p).read() for p in sorted(glob.glob(os.path.join(dump, pattern)))]
        mem = c.memory_analysis()
        cost = c.cost_analysis()
        cost = (cost[0] if cost else {}) if isinstance(cost, (list, tuple)) else (cost or {})
        results.append({
            "flops": float(cost.get("flops", 0.0)),
            "hlo": c.as_text(),
            "ptx": [t for t in read("*.ptx") if t.strip()],
            "buffers": "\n".join(read("*after_optimizations-buffer-assignment.txt")),
            "memory": {k: int(getattr(mem, k + "_size_in_bytes", 0))
                       for k in ("argument", "output", "temp")},
        })
print(json.dumps({"jax": jax.__version__, "results": results}))
"""


@dataclass(frozen=True)
class GpuCompiled:
    """What XLA:GPU made of one program for a GPU this machine does not have."""

    source: str  # the program, as given
    target: str  # "H100 SXM"
    arch: str  # "sm_90a"
    options: dict  # XLA debug options given (e.g. the forced GEMM tile)
    hlo: str  # optimized HLO, after every GPU pass
    # PTX of the kernels XLA generated (Triton and XLA's own emitters; none for cuBLAS)
    ptx: tuple[str, ...]
    buffers: str  # XLA's buffer-assignment dump
    memory: dict = field(default_factory=dict)  # argument / output / temp bytes
    jax_version: str = ""
    # XLA's cost analysis of the executable (a library call counts -1); None: not read
    flops: float | None = None

    @property
    def gemm(self) -> Gemm:
        return find_gemm(self.hlo)

    def allocations(self):
        return parse_buffer_assignment(self.buffers)

    def sass(self) -> toolchain.Sass:
        """Machine code of the generated kernels: XLA's PTX assembled by ``ptxas`` for this target,
        disassembled."""
        text = "".join(
            toolchain.disassemble(toolchain.assemble_ptx(p, self.arch)) for p in self.ptx
        )
        return toolchain.Sass(text, self.arch)

    def ptx_instructions(self):
        from collections import Counter

        total: Counter = Counter()
        for p in self.ptx:
            total += toolchain.ptx_instructions(p)
        return total

    def provenance(self) -> str:
        """Where the HLO and PTX come from, and that the SASS is the course's re-assembly of XLA's
        PTX (``ptxas`` with default flags, then ``nvdisasm``), not the cubin XLA itself built (its
        flags may differ)."""
        how = (
            f"compiled by XLA:GPU (JAX {self.jax_version}) on {self.target}"
            if "this GPU" in self.target
            else (
                f"compiled deviceless by XLA:GPU ({PLUGIN} {self.jax_version}) for {self.target}"
                f" ({self.arch})"
            )
        )
        how += f", options {self.options}" if self.options else ""
        ptxas = toolchain.ptxas_version() or "ptxas not installed"
        return (
            how
            + f"; SASS: XLA's PTX re-assembled here by ptxas -arch={self.arch} with default flags "
            f"(toolchain.assemble_ptx; {ptxas}), not XLA's own cubin"
        )


def _spec(a: Any) -> list:
    """[shape, dtype] of an array or a (shape, dtype) pair."""
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return [list(a.shape), str(a.dtype)]
    shape, dtype = a
    return [list(shape), str(dtype)]


def compile_for_gpu(source: str, *args: Any, target: str | None = None, options: dict | None = None,
                    timeout: float = 300) -> GpuCompiled:
    """Compile the JAX function ``source`` (text of a lambda, e.g. ``"lambda a, b: jnp.dot(a, b)"``;
    ``jax``, ``jnp`` and ``lax`` are in scope) for ``args`` (arrays, ShapeDtypeStructs or ``(shape,
    dtype)`` pairs) and return what XLA:GPU produced. On the GPU backend (``target=None``) it
    compiles for the GPU in this machine, in this process, autotuned; otherwise deviceless for
    ``target`` (default "H100 SXM") in a child process."""
    return compile_many([(source, args, options or {})], target=target, timeout=timeout)[0]


def compile_many(programs: list[tuple[str, tuple, dict]], target: str | None = None,
                 timeout: float = 300) -> list[GpuCompiled]:
    """Several programs ``(source, args, options)`` at once (deviceless: ONE child process, JAX
    starts once)."""
    from .backend import get_backend

    job = [(src, tuple(tuple(_spec(a)[0]) for a in args), tuple(_spec(a)[1] for a in args),
            json.dumps(opts, sort_keys=True)) for src, args, opts in programs]
    if target is None and get_backend().is_gpu:
        return [_compile_here(*j) for j in job]
    target = target or "H100 SXM"
    if target not in TARGETS:
        raise ValueError(f"target must be one of {sorted(TARGETS)}, got {target!r}")
    todo = list(dict.fromkeys(j for j in job if (j, target) not in _CACHE))
    if todo:
        for j, result in zip(todo, _compile_child(tuple(todo), target, timeout)):
            _CACHE[j, target] = result
    return [_CACHE[j, target] for j in job]


_CACHE: dict[tuple, "GpuCompiled"] = {}  # (program, target) -> result: compiling is deterministic


def _compile_here(src: str, shapes: tuple, dtypes: tuple, opts: str) -> GpuCompiled:
    """Compile on the GPU this process uses (the GPU backend): autotuned, with XLA's dump for the
    PTX."""
    import glob
    import tempfile

    import jax
    import jax.numpy as jnp
    from jax import lax

    from .backend import get_backend

    dev = get_backend().jax_device
    fn = eval(
        src, {"jax": jax, "jnp": jnp, "lax": lax}
    )  # noqa: S307 (course-provided program text)
    on_dev = jax.sharding.SingleDeviceSharding(dev)  # not jax.jit(fn, device=dev): deprecated
    specs = [
        jax.ShapeDtypeStruct(tuple(s), jnp.dtype(d), sharding=on_dev)
        for s, d in zip(shapes, dtypes)
    ]
    cc = getattr(dev, "compute_capability", "9.0")
    major, minor = (int(v) for v in str(cc).split(".")[:2])
    arch = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    with tempfile.TemporaryDirectory() as dump:
        # the GPU's own JAX (jax[cuda12]) brings its CUDA toolchain: no xla_gpu_cuda_data_dir
        # override (the CUDA-13 wheels' ptxas would build cubins the installed driver may not load)
        options = dict(json.loads(opts), xla_dump_to=dump)
        c = jax.jit(fn).lower(*specs).compile(compiler_options=options)
        ptx = tuple(
            t for t in (open(p).read() for p in sorted(glob.glob(f"{dump}/*.ptx"))) if t.strip()
        )
        buffers = "\n".join(
            open(p).read()
            for p in sorted(glob.glob(f"{dump}/*after_optimizations-buffer-assignment.txt"))
        )
    mem = c.memory_analysis()
    memory = {k: int(getattr(mem, k + "_size_in_bytes", 0)) for k in ("argument", "output", "temp")}
    return GpuCompiled(
        src,
        f"{dev.device_kind} (this GPU, autotuned)",
        arch,
        json.loads(opts),
        c.as_text(),
        ptx,
        buffers,
        memory,
        jax.__version__,
    )


def _compile_child(job: tuple, target: str, timeout: float) -> tuple[GpuCompiled, ...]:
    gone = missing()
    if gone:
        raise toolchain.ToolchainMissing("deviceless XLA:GPU compile needs: " + "; ".join(gone))
    payload = {
        "target": TARGETS[target](),
        "cuda_data_dir": str(toolchain.cuda_data_dir()),
        "programs": [
            {
                "src": src,
                "args": [[list(s), d] for s, d in zip(shapes, dtypes)],
                "options": json.loads(o),
            }
            for src, shapes, dtypes, o in job
        ],
    }
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "NUMBA_ENABLE_CUDASIM")}
    env.update(
        PYTHONPATH=os.pathsep.join(
            [str(plugin_dir())] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        ),
        JAX_PLATFORMS="cpu",
        JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"deviceless XLA:GPU compile failed: {tail}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    compiled = []
    for (src, _, _, opts), res in zip(job, out["results"]):
        if "error" in res:
            raise RuntimeError(
                f"XLA:GPU could not compile {src!r} for {target}: {res['error'][:500]}"
            )
        compiled.append(
            GpuCompiled(
                src,
                target,
                ARCH[target],
                json.loads(opts),
                res["hlo"],
                tuple(res["ptx"]),
                res["buffers"],
                res["memory"],
                out["jax"],
                res.get("flops"),
            )
        )
    return tuple(compiled)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["install"]:
        if _cuda_plugin_in_env():
            print(describe())
            return 0
        try:
            print(f"plugin folder: {install()}")
        except RuntimeError as exc:
            print(f"WARNING: {exc}", file=sys.stderr)
            # CI: without the plugin the deviceless cells and tests skip and say why
            if "--optional" in argv:
                print(
                    "continuing without it (--optional): deviceless XLA:GPU compiles will be"
                    " skipped"
                )
                return 0
            return 1
        print(describe())
        return 0
    if argv[:1] in (["status"], []):
        print(describe())
        return 0 if available() else 1
    print("usage: python -m gpucourse.xla_gpu [status | install [--optional]]")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
