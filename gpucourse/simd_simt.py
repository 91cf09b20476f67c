"""Vector lanes on a CPU (SIMD) and thread lanes in a GPU warp (SIMT).

CPU side — what this machine's vector units can do, read from the machine itself:

- ``cpu_vector_isa()``: the widest x86 vector extension in ``/proc/cpuinfo``'s flags (sse2 → avx2 →
  avx512f) and its register width in bits;
- ``vector_instructions(asm)``: the packed (``…ps``/``…pd``) and scalar (``…ss``/``…sd``)
  floating-point instructions in compiled x86 assembly (e.g. numba's ``inspect_asm()``), with the
  register each one used: ``zmm`` = 512-bit (16 fp32 lanes), ``ymm`` = 256-bit (8), ``xmm`` =
  128-bit (4, or 1 for a scalar op).

GPU side — one warp's active masks, as data:

- ``stored_warp_masks()``: the active mask of each instruction one warp issues for ``if cond: <6
  instructions> else: <4 instructions>``, for the three branch patterns of the course's section 3.3
  — one row per issued instruction, one column per lane. A warp issues one instruction for all its
  lanes; lanes whose branch is not the one being executed are masked off (they idle).
  ``mask.mean()`` is the warp's lane utilization. The model that computes them is lab 3's exercise
  4, so it is not installed: the masks were computed by the course's reference
  (``grader/answers/lab03_datapath.py``, instructor only) and ship as
  ``gpucourse/data/warp_masks.json``.
"""

from __future__ import annotations

import json
import platform
import re
from collections import Counter
from pathlib import Path

import numpy as np

# threads per warp on every NVIDIA GPU so far (CUDA C++ Programming Guide, "SIMT Architecture")
WARP_SIZE = 32

REGISTER_BITS = {"xmm": 128, "ymm": 256, "zmm": 512}
# widest first: flag in /proc/cpuinfo -> (name, register bits)
_ISA = [
    ("avx512f", "AVX-512", 512),
    ("avx2", "AVX2", 256),
    ("avx", "AVX", 256),
    ("sse2", "SSE2", 128),
]


def is_x86() -> bool:
    """True on x86-64 CPUs: the assembly helpers below read x86 (AT&T syntax) only."""
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The CPU feature flags the kernel reports (empty on non-Linux machines)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_vector_isa(flags: set[str] | None = None) -> tuple[str, int]:
    """(name, register width in bits) of the widest vector extension this CPU reports; ('unknown',
    0) if none."""
    flags = cpu_flags() if flags is None else flags
    for flag, name, bits in _ISA:
        if flag in flags:
            return name, bits
    if "asimd" in flags:  # 64-bit ARM: NEON
        return "NEON", 128
    return "unknown", 0


def cpu_clock_hz(path: str = "/proc/cpuinfo") -> float | None:
    """The highest clock the kernel reports for any core ("cpu MHz"), in Hz; None where it is not
    reported.

    It is the current or nominal clock, not a guaranteed peak: turbo can run faster, a busy or
    throttled machine slower, and a virtual machine reports its host's nominal clock."""
    try:
        with open(path, encoding="utf-8") as f:
            mhz = [float(line.split(":", 1)[1]) for line in f if line.lower().startswith("cpu mhz")]
    except (OSError, ValueError):
        return None
    return max(mhz) * 1e6 if mhz else None


def physical_cores(path: str = "/proc/cpuinfo") -> int | None:
    """Physical cores of this machine: distinct (physical id, core id) pairs in ``/proc/cpuinfo``;
    None where the kernel does not report them (then fall back to ``os.cpu_count()``, which counts
    logical CPUs).

    With SMT (Hyper-Threading), two logical CPUs share one core's FMA pipes, so a nominal FLOP peak
    must count physical cores: counting logical CPUs overstates it 2×."""
    pairs, phys, core = set(), "0", None
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip().lower(), value.strip()
                if key == "processor":
                    phys, core = "0", None
                elif key == "physical id":
                    phys = value
                elif key == "core id":
                    core = value
                    pairs.add((phys, core))
    except OSError:
        return None
    return len(pairs) or None


def lanes(register_bits: int, dtype: str = "float32") -> int:
    """How many values of ``dtype`` one register of ``register_bits`` holds."""
    return register_bits // (8 * np.dtype(dtype).itemsize)


_FP_OP = re.compile(r"^\s+(v?[a-z0-9]+?(ps|pd|ss|sd))\s+(.*)$", re.M)


def vector_instructions(asm: str) -> Counter:
    """Count floating-point arithmetic instructions in x86 AT&T assembly by (mnemonic, widest
    register).

    Moves, shuffles, conversions and compares are left out: only add/sub/mul/div/fma/min/max/sqrt
    count.
    """
    found: Counter = Counter()
    for m in _FP_OP.finditer(asm):
        op, operands = m.group(1), m.group(3)
        if not re.match(r"v?(add|sub|mul|div|fmadd|fnmadd|fmsub|min|max|sqrt)", op):
            continue
        regs = re.findall(r"%([xyz]mm)\d+", operands)
        if regs:
            widest = max(regs, key=lambda r: REGISTER_BITS[r])
            found[(op, widest)] += 1
    return found


def widest_packed(asm: str) -> int:
    """Widest register [bits] used by a *packed* (multi-lane) floating-point instruction; 0 if
    none."""
    widths = [
        REGISTER_BITS[reg] for (op, reg) in vector_instructions(asm) if op.endswith(("ps", "pd"))
    ]
    return max(widths, default=0)


WARP_MASKS_PATH = Path(__file__).resolve().parent / "data" / "warp_masks.json"


def stored_warp_masks() -> tuple[int, int, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(cost_if, cost_else, {pattern: (cond, masks)}) from ``gpucourse/data/warp_masks.json``:
    ``cond`` a bool array of the 32 lanes' branch conditions, ``masks`` a bool array (issued
    instructions, 32 lanes)."""
    data = json.loads(WARP_MASKS_PATH.read_text(encoding="utf-8"))
    bits = lambda text: np.array([c == "1" for c in text], dtype=bool)  # noqa: E731
    patterns = {
        title: (
            bits(p["cond"]),
            np.array([bits(row) for row in p["masks"]], dtype=bool).reshape(-1, WARP_SIZE),
        )
        for title, p in data["patterns"].items()
    }
    return data["cost_if"], data["cost_else"], patterns
