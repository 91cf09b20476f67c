"""A Pallas kernel as a TPU would run it: its BlockSpecs, the HBM ↔ VMEM copies its grid causes, and
the VMEM one grid step needs.

Read from the traced ``pallas_call`` itself (its grid and the BlockSpecs' block shapes, dtypes and
index maps), not from a formula typed next to it. Two facts of Pallas's TPU pipeline decide the
numbers (Pallas docs, "Software Pipelining" and "TPU Pipelining"; the scheduler in
jax/_src/pallas/mosaic/pipeline.py):

- every blocked operand, input or output, is *double-buffered*: a ``(buffer_count, *block_shape)``
  buffer in VMEM, ``buffer_count = 2`` unless the BlockSpec asks for another with
  ``pipeline_mode=pl.Buffered(n)``, so the next block is copied in (and the last one out) while the
  kernel works on the current one;
- the grid runs as nested loops, last axis fastest, and a block is copied in only when its index
  changes from one step to the next (an output block is written back when the next step moves to
  another block, and at the end);
- so every output block must be visited in **one unbroken run** of grid steps: "we do require that
  all invocations that write to a particular slice are consecutive" (Pallas docs, "TPU details");
  "Failure to access output blocks consecutively will result in incorrect values" (Pallas docs,
  sparse kernels): an output block is stored to HBM when the grid moves on and never read back, so
  one visited again starts from a stale VMEM buffer (:attr:`Operand.consecutive`). JAX's own TPU
  interpreter (``interpret=pltpu.InterpretParams()``) refuses such kernels ("Revisited block");
  plain ``interpret=True`` computes the right numbers and does not notice.

Tracing needs no TPU: ``jax.make_jaxpr`` works on shapes, and ``interpret=True`` kernels run on this
CPU.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

DEFAULT_BUFFERS = 2  # Pallas TPU double-buffers every blocked operand


def _equations(jaxpr: Any, into_kernels: bool = True) -> Any:
    """Every equation of ``jaxpr`` and of the jaxprs nested in its equations' parameters (jit and
    loop bodies, cond branches, and kernels unless ``into_kernels`` is False), depth first."""
    for eqn in jaxpr.eqns:
        yield eqn
        if not into_kernels and eqn.primitive.name == "pallas_call":
            continue
        for v in eqn.params.values():
            for sub in v if isinstance(v, (list, tuple)) else (v,):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    yield from _equations(inner, into_kernels)
                elif hasattr(sub, "eqns"):
                    yield from _equations(sub, into_kernels)


def pallas_calls(fn: Callable[..., Any], *args: Any) -> list[Any]:
    """The ``pallas_call`` equations in the jaxpr of ``fn(*args)`` (searched through nested jaxprs).
    ``args`` may be arrays or ``jax.ShapeDtypeStruct``s."""
    import jax

    jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    return [eqn for eqn in _equations(jaxpr) if eqn.primitive.name == "pallas_call"]


def block_shape(mapping: Any) -> tuple[int, ...]:
    """A BlockMapping's block shape as integers (a squeezed dimension counts as 1)."""
    out = []
    for d in mapping.block_shape:
        size = getattr(d, "block_size", d)
        # a squeezed dimension (None, or pl.Squeezed() in newer JAX) is one element of the array
        out.append(1 if size is None or type(size).__name__ == "Squeezed" else int(size))
    return tuple(out)


@dataclass(frozen=True)
class Operand:
    """One blocked operand of a pallas_call."""

    role: str  # "in" or "out"
    array_shape: tuple[int, ...]
    block: tuple[int, ...]
    itemsize: int  # bytes per element
    buffers: int  # VMEM buffers Pallas allocates for it
    # grid steps at which its block index differs from the previous step's (the first counts)
    changes: int
    distinct: int  # different block indices over the whole grid
    # per dimension, the largest (block index + 1) · block size over the grid: elements reached
    reach: tuple[int, ...] = ()

    @property
    def block_bytes(self) -> int:
        return math.prod(self.block) * self.itemsize

    @property
    def vmem_bytes(self) -> int:
        return self.buffers * self.block_bytes

    @property
    def hbm_bytes(self) -> int:
        """Bytes copied between HBM and VMEM for this operand over the whole grid."""
        return self.changes * self.block_bytes

    @property
    def consecutive(self) -> bool:
        """Every block is visited in one unbroken run of grid steps (changes == distinct). Required
        of outputs on a TPU: an output block left and visited again would start from a stale VMEM
        buffer."""
        return self.changes == self.distinct

    @property
    def inside(self) -> bool:
        """Every block the index map asks for lies inside the array. Interpret mode clamps a block
        past the edge (so an index map that returns element offsets computes wrong numbers, no
        error); a TPU's DMA would read or write out of bounds."""
        return all(r <= a for r, a in zip(self.reach, self.array_shape))


@dataclass(frozen=True)
class PallasPlan:
    grid: tuple[int, ...]
    operands: tuple[Operand, ...]
    scratch_bytes: int
    # each scratch buffer's (shape, dtype name), in the kernel's order
    scratch: tuple[tuple[tuple[int, ...], str], ...] = ()

    @property
    def steps(self) -> int:
        return math.prod(self.grid)

    @property
    def vmem_bytes(self) -> int:
        """VMEM one grid step needs: every operand's buffers plus scratch."""
        return sum(o.vmem_bytes for o in self.operands) + self.scratch_bytes

    @property
    def hbm_bytes(self) -> int:
        return sum(o.hbm_bytes for o in self.operands)

    @property
    def outputs_consecutive(self) -> bool:
        """Every output block is visited in one unbroken run of grid steps (what a TPU requires)."""
        return all(o.consecutive for o in self.operands if o.role == "out")


def _block_index_changes(
    mapping: Any, grid: tuple[int, ...]
) -> tuple[int, int, tuple[int, ...]]:
    """Run the BlockSpec's index map over the whole grid (last axis fastest): the steps whose block
    index differs from the step before, the number of different block indices, and how far the
    blocks reach (:attr:`Operand.reach`)."""
    import jax
    import jax.numpy as jnp
    from jax.extend.core import jaxpr_as_fun

    # (rank, steps), row-major: last grid axis fastest
    idx = np.indices(grid).reshape(len(grid), -1)
    f = jaxpr_as_fun(mapping.index_map_jaxpr)
    # (steps, block rank)
    blocks = jax.vmap(lambda *g: jnp.stack(f(*g)))(*[jnp.asarray(i, jnp.int32) for i in idx])
    blocks = np.asarray(blocks)
    if blocks.shape[0] == 0:
        return 0, 0, ()
    changes = 1 + int(np.any(blocks[1:] != blocks[:-1], axis=1).sum())
    size = block_shape(mapping)
    reach = tuple(int((blocks[:, d].max() + 1) * size[d]) for d in range(len(size)))
    return changes, len(np.unique(blocks.reshape(blocks.shape[0], -1), axis=0)), reach


# wrappers around a kernel, not arithmetic
_WRAPPERS = {"pallas_call", "pjit", "jit", "closed_call"}


def outer_primitives(fn: Callable[..., Any], *args: Any) -> set[str]:
    """The primitives ``fn(*args)`` computes outside its pallas_calls (through jit wrappers, not
    into kernels): empty when everything happens in the kernels."""
    import jax

    jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    return {eqn.primitive.name for eqn in _equations(jaxpr, into_kernels=False)} - _WRAPPERS


def kernel_files(fn: Callable[..., Any], *args: Any) -> set[str]:
    """The source files whose lines traced the operations inside the kernels of ``fn(*args)``'s
    pallas_calls (every frame of every equation's traceback, JAX's own internals left out): where a
    kernel's arithmetic was written."""
    import jax

    internal = os.path.join(os.path.dirname(jax.__file__), "_src") + os.sep
    files: set[str] = set()
    for call in pallas_calls(fn, *args):
        for eqn in _equations(call.params["jaxpr"]):
            traceback = getattr(eqn.source_info, "traceback", None)
            files.update(f.file_name for f in getattr(traceback, "frames", ()) or ()
                         if not f.file_name.startswith(internal))
    return files


def overreach(plan: PallasPlan, names: tuple[str, ...]) -> str:
    """What is wrong with the first operand (named by ``names``, in order) whose blocks reach past
    its array, as a sentence; "" when every block lies inside (:attr:`Operand.inside`)."""
    for name, op in zip(names, plan.operands):
        if not op.inside:
            return (
                f"the index map of {name} asks for blocks up to element {op.reach} of an array of"
                f" shape {op.array_shape} (blocks {op.block}): a block index counts blocks, not"
                " elements, and every block must lie inside the array"
            )
    return ""


def plan(fn: Callable[..., Any], *args: Any, call: int = 0) -> PallasPlan:
    """The grid, operands and scratch of the ``call``-th pallas_call in ``fn(*args)``."""
    calls = pallas_calls(fn, *args)
    if not calls:
        raise ValueError("no pl.pallas_call in this function")
    gm = calls[call].params["grid_mapping"]
    grid = tuple(int(g) for g in gm.grid)
    ops = []
    for i, bm in enumerate(gm.block_mappings):
        mode = getattr(bm, "pipeline_mode", None)
        buffers = int(getattr(mode, "buffer_count", DEFAULT_BUFFERS) or DEFAULT_BUFFERS)
        aval = bm.array_aval
        ops.append(
            Operand(
                "in" if i < gm.num_inputs else "out",
                tuple(int(s) for s in aval.shape),
                block_shape(bm),
                int(np.dtype(aval.dtype).itemsize),
                buffers,
                *_block_index_changes(bm, grid),
            )
        )
    avals = tuple(getattr(gm, "scratch_avals", ()) or ())
    scratch = sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize for a in avals)
    buffers = tuple((tuple(int(d) for d in a.shape), str(np.dtype(a.dtype))) for a in avals)
    return PallasPlan(grid, tuple(ops), int(scratch), buffers)
