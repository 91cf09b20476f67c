"""Launch geometry and the hardware limits the executor enforces (those of NVIDIA's sm_90, the
H100/H200)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

WARP_SIZE = 32  # threads per warp on every NVIDIA GPU to date
SECTOR_BYTES = 32  # global memory is served in 32-byte sectors (4 per 128-byte cache line)
FULL_MASK = 0xFFFFFFFF  # every lane of a warp

# CUDA C Programming Guide, "Compute Capabilities" table, compute capability 9.0
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
# bytes of static shared memory per block (more needs dynamic shared memory)
STATIC_SHARED_LIMIT = 48 * 1024
# bytes per block with the opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize)
SHARED_OPTIN_LIMIT = 227 * 1024
H100_SMS = 132  # SMs of an H100 SXM: how many blocks a cooperative launch can hold at once
MAX_THREADS_PER_SM = 2048


class Dim3(NamedTuple):
    x: int
    y: int = 1
    z: int = 1


def dim3(v: int | tuple, what: str = "launch dimension") -> Dim3:
    """A grid or block shape as Dim3: an int, a 1- to 3-tuple, or anything with .x/.y/.z."""
    if isinstance(v, Dim3):
        return v
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    elif all(hasattr(v, a) for a in "xyz"):
        v = (v.x, v.y, v.z)
    try:
        v = tuple(int(x) for x in v)
    except TypeError:
        raise ValueError(f"a {what} must be 1 to 3 positive ints, got {v!r}") from None
    if not 1 <= len(v) <= 3 or min(v) < 1:
        raise ValueError(f"a {what} must be 1 to 3 positive ints, got {v}")
    return Dim3(*v)


def check_launch(grid: Dim3, block: Dim3) -> None:
    """Raise ValueError for a launch a GPU refuses (cudaErrorInvalidConfiguration)."""
    tpb = block.x * block.y * block.z
    if tpb > MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"a block holds at most {MAX_THREADS_PER_BLOCK} threads, got {tuple(block)} = {tpb} "
            "(a GPU refuses the launch: invalid configuration)"
        )
    for axis, n, most in zip("xyz", block, MAX_BLOCK_DIM):
        if n > most:
            raise ValueError(f"blockDim.{axis} is at most {most}, got {n}")
    for axis, n, most in zip("xyz", grid, MAX_GRID_DIM):
        if n > most:
            raise ValueError(f"gridDim.{axis} is at most {most:,}, got {n:,}")


# `of`: the extent the index `d` is taken in (a block's or a grid's)
def linear(d: Dim3, of: Dim3) -> int:
    """Linear id of index ``d`` in a box of shape ``of`` (x fastest, as CUDA numbers threads)."""
    return d.x + of.x * (d.y + of.y * d.z)


# `of`: the extent the index is taken in (a block's or a grid's)
def unlinear(i: int, of: Dim3) -> Dim3:
    return Dim3(i % of.x, (i // of.x) % of.y, i // (of.x * of.y))
