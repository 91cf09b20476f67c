"""NVIDIA's own occupancy calculator, run on any machine: ``cuda_occupancy.h`` compiled with g++, no
GPU needed.

The header ships with the CUDA toolkit and in NVIDIA's pip wheels
(``nvidia/cu13/include/cuda_occupancy.h``, installed by the course's ``toolchain`` extra). It is
header-only C++: a small driver program (below) fills its ``cudaOccDeviceProp`` with a device's
properties (the values ``cudaGetDeviceProperties`` reports), calls
``cudaOccMaxActiveBlocksPerMultiprocessor`` once per configuration read from stdin, and prints the
result. It is the ground truth ``gpucourse.occupancy`` is tested against
(``tests/test_occupancy_header.py``) and that §5 shows.

    calc = NvidiaOccupancy.build()          # None when g++ or the header is missing (see
                                            # `missing()`)
    calc.run(DEVICES["sm_90"], [(32, 81, 0, False, None)])[0].blocks  -> 20
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

HEADER = "cuda_occupancy.h"
INT_MAX = 2**31 - 1

# cudaDeviceProp values of the two architectures (cudaGetDeviceProperties on an A100 SXM4 and an
# H100 SXM5; CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 164 KB /
# 228 KB of shared memory per SM, 163 KB / 227 KB per block with opt-in, 1 KB reserved per block, 64
# K registers per SM and per block).
DEVICES = {
    "sm_80": {
        "computeMajor": 8,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 167936,
        "numSms": 108,
        "sharedMemPerBlockOptin": 166912,
        "reservedSharedMemPerBlock": 1024,
    },
    "sm_90": {
        "computeMajor": 9,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 233472,
        "numSms": 132,
        "sharedMemPerBlockOptin": 232448,
        "reservedSharedMemPerBlock": 1024,
    },
}
PROP_ORDER = (
    "computeMajor",
    "computeMinor",
    "maxThreadsPerBlock",
    "maxThreadsPerMultiprocessor",
    "regsPerBlock",
    "regsPerMultiprocessor",
    "warpSize",
    "sharedMemPerBlock",
    "sharedMemPerMultiprocessor",
    "numSms",
    "sharedMemPerBlockOptin",
    "reservedSharedMemPerBlock",
)

DRIVER = r"""
#include <cstdio>
#include "cuda_occupancy.h"

// stdin, one configuration per line:
//   12 device properties (PROP_ORDER), then threads registers shared_bytes opt_in
//   carveout (-1 = default)
// stdout, one line each: status blocks regs_limit smem_limit warps_limit blocks_limit
//                        limiting_factors allocated_registers allocated_shared
int main() {
    cudaOccDeviceProp p;
    long long v[12];
    int threads, regs, optin, carveout;
    long long smem;
    while (std::scanf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld"
                      " %d %d %lld %d %d",
                      &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                      &v[10], &v[11], &threads, &regs, &smem, &optin, &carveout) == 17) {
        p.computeMajor = (int)v[0];
        p.computeMinor = (int)v[1];
        p.maxThreadsPerBlock = (int)v[2];
        p.maxThreadsPerMultiprocessor = (int)v[3];
        p.regsPerBlock = (int)v[4];
        p.regsPerMultiprocessor = (int)v[5];
        p.warpSize = (int)v[6];
        p.sharedMemPerBlock = (size_t)v[7];
        p.sharedMemPerMultiprocessor = (size_t)v[8];
        p.numSms = (int)v[9];
        p.sharedMemPerBlockOptin = (size_t)v[10];
        p.reservedSharedMemPerBlock = (size_t)v[11];

        cudaOccFuncAttributes a;  // what cudaFuncGetAttributes would report for such a kernel
        a.maxThreadsPerBlock = 1024;
        a.numRegs = regs;
        a.sharedSizeBytes = 0;            // all of the block's shared memory is dynamic
        a.partitionedGCConfig = PARTITIONED_GC_OFF;
        a.shmemLimitConfig = optin ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
        // cudaFuncAttributeMaxDynamicSharedMemorySize
        a.maxDynamicSharedSizeBytes = optin ? (size_t)smem : 0;
        a.numBlockBarriers = 1;           // __syncthreads' barrier, as the runtime assumes
        a.virtualResourceCount = 0;

        cudaOccDeviceState s;
        s.carveoutConfig = carveout;      // SHAREDMEM_CARVEOUT_DEFAULT (-1) or a percentage

        cudaOccResult r;
        cudaOccError e =
            cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, threads, (size_t)smem);
        std::printf("%d %d %d %d %d %d %u %d %lld\n", (int)e, r.activeBlocksPerMultiprocessor,
                    r.blockLimitRegs, r.blockLimitSharedMem, r.blockLimitWarps, r.blockLimitBlocks,
                    r.limitingFactors, r.allocatedRegistersPerBlock,
                    (long long)r.allocatedSharedMemPerBlock);
    }
    return 0;
}
"""

# cudaOccLimitingFactor bits -> gpucourse.occupancy's names
FACTORS = {0x01: "warps", 0x02: "registers", 0x04: "shared_memory", 0x08: "blocks"}


@dataclass(frozen=True)
class HeaderResult:
    """One ``cudaOccMaxActiveBlocksPerMultiprocessor`` result (INT_MAX limits become None: "no
    limit")."""

    blocks: int
    by: dict[str, int | None]  # blockLimitWarps / Regs / SharedMem / Blocks
    limiters: tuple[str, ...]  # limitingFactors, in gpucourse.occupancy.LIMITERS order
    registers_per_block: int
    shared_bytes_per_block: int


def header_path() -> Path | None:
    """``cuda_occupancy.h`` from NVIDIA's wheels (or a CUDA toolkit under /usr/local/cuda), if
    installed."""
    from . import toolchain

    candidates = [d / HEADER for d in toolchain.include_dirs()] + [
        Path("/usr/local/cuda/include") / HEADER
    ]
    return next((p for p in candidates if p.is_file()), None)


def missing() -> list[str]:
    """What is needed and absent: empty when the calculator can be built here."""
    out = []
    if shutil.which("g++") is None:
        out.append("g++ (apt-get install g++)")
    if header_path() is None:
        out.append(
            f"{HEADER} (pip install -e '.[toolchain]': NVIDIA's nvidia-cuda-runtime wheel ships it)"
        )
    return out


class NvidiaOccupancy:
    """The compiled driver program. Build once (about a second), then run many configurations per
    call."""

    def __init__(self, executable: Path, header: Path):
        self.executable = executable
        self.header = header

    @classmethod
    def build(cls, workdir: Path | None = None) -> "NvidiaOccupancy | None":
        """Compile the driver against the installed header; None when g++ or the header is
        missing."""
        if missing():
            return None
        header = header_path()
        work = Path(workdir or tempfile.mkdtemp(prefix="cuda_occupancy_"))
        src, exe = work / "occupancy_driver.cpp", work / "occupancy_driver"
        src.write_text(DRIVER)
        subprocess.run(["g++", "-O1", "-std=c++11", f"-I{header.parent}", str(src), "-o", str(exe)],
                       check=True, capture_output=True, timeout=120)
        return cls(exe, header)

    def run(
        self, device: dict, configs: Iterable[tuple[int, int, int, bool, int | None]]
    ) -> list[HeaderResult]:
        """``configs``: (threads, registers per thread, shared bytes per block, opt_in, carveout %
        or None)."""
        props = " ".join(str(device[k]) for k in PROP_ORDER)
        lines = [
            f"{props} {t} {r} {s} {int(bool(o))} {-1 if c is None else c}"
            for t, r, s, o, c in configs
        ]
        done = subprocess.run(
            [str(self.executable)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        results = []
        for line in done.stdout.split("\n"):
            if not line.strip():
                continue
            status, blocks, regs, smem, warps, blk, factors, alloc_regs, alloc_smem = (
                int(x) for x in line.split()
            )
            if status != 0:
                raise ValueError(f"cuda_occupancy.h returned error {status} for a configuration")
            by = {"warps": warps, "registers": None if regs == INT_MAX else regs,
                  "shared_memory": None if smem == INT_MAX else smem, "blocks": blk}
            names = tuple(name for bit, name in FACTORS.items() if factors & bit)
            results.append(HeaderResult(blocks, by, names, alloc_regs, alloc_smem))
        if len(results) != len(lines):
            raise RuntimeError(
                f"the occupancy driver answered {len(results)} of {len(lines)} configurations"
            )
        return results
