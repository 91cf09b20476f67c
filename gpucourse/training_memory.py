"""Where a training step's memory goes: parameters, gradients, optimizer state, saved activations.

Section 2 of the course uses this to explain *why a GPU runs out of memory at a certain batch size*: the
first three terms are fixed by the model, the activations saved for the backward pass grow linearly with the
batch. The estimate is checked in the notebook against XLA's own buffer assignment (``memory_analysis``) on
CPU and against the device's memory on a GPU.

Units: bytes everywhere; element counts are called ``*_elems``. Nothing here touches a device.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

# optimizer state per parameter, in parameter-sized slots: SGD keeps none, momentum one velocity, Adam m and v
OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes one training step needs, by what they hold (all bytes)."""

    params: int
    grads: int
    optimizer: int
    activations: int  # residuals saved by the forward pass for the backward pass (grow with the batch)
    batch: int  # the input and target arrays of the step (grow with the batch)
    workspace: int = 0  # gradients in flight during the backward pass (grow with the batch)

    @property
    def fixed(self) -> int:
        """Bytes that do not depend on the batch size."""
        return self.params + self.grads + self.optimizer

    @property
    def total(self) -> int:
        return self.fixed + self.activations + self.batch + self.workspace

    def as_dict(self) -> dict[str, int]:
        return {"params": self.params, "grads": self.grads, "optimizer state": self.optimizer,
                "activations": self.activations, "batch": self.batch, "workspace": self.workspace}


def estimate(n_params: int, saved_elems_per_example: int, batch_size: int, *, dtype: str = "float32",
             optimizer: str = "adam", io_elems_per_example: int = 0, workspace_elems_per_example: int = 0,
             ) -> TrainingMemory:
    """Training memory of one step of a model with ``n_params`` parameters.

    ``saved_elems_per_example``: elements the forward pass saves for the backward pass, per example
    (read them off ``saved_bytes`` at batch size 1, or count them: a dense layer saves its input).
    ``io_elems_per_example``: elements of the step's inputs and targets per example.
    ``workspace_elems_per_example``: gradient buffers alive at once during the backward pass, per example
    (about two activations of the widest layer: the incoming and the outgoing gradient).
    Parameters, gradients and optimizer state are all stored in ``dtype`` here (no mixed precision).
    """
    if optimizer not in OPTIMIZER_SLOTS:
        raise ValueError(f"optimizer {optimizer!r} is not one of {', '.join(OPTIMIZER_SLOTS)}")
    s = np.dtype(dtype).itemsize
    p = n_params * s
    return TrainingMemory(
        params=p,
        grads=p,
        optimizer=OPTIMIZER_SLOTS[optimizer] * p,
        activations=saved_elems_per_example * batch_size * s,
        batch=io_elems_per_example * batch_size * s,
        workspace=workspace_elems_per_example * batch_size * s,
    )


def largest_batch(budget_bytes: float, memory_at: Callable[[int], TrainingMemory], limit: int = 1 << 40) -> int:
    """Largest batch size whose ``memory_at(batch).total`` fits ``budget_bytes`` (0 when even 1 does not).

    Works for any ``memory_at`` that grows with the batch (binary search, no closed form assumed).
    """
    if memory_at(1).total > budget_bytes:
        return 0
    lo, hi = 1, 2
    while hi < limit and memory_at(hi).total <= budget_bytes:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if memory_at(mid).total <= budget_bytes else (lo, mid)
    return lo


# -- what JAX saves for the backward pass -------------------------------------------------------------------------

_SHAPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[\d,\s]*)\]\s+(?P<why>.*)$")
# bytes per element of the dtype codes JAX prints (f32[8,7] ...)
_ITEMSIZE = {"bool": 1, "i8": 1, "u8": 1, "f16": 2, "bf16": 2, "i16": 2, "f32": 4, "i32": 4, "u32": 4,
             "f64": 8, "i64": 8, "u64": 8}


@dataclass(frozen=True)
class Residual:
    """One array the forward pass keeps for the backward pass."""

    shape: tuple[int, ...]
    itemsize: int
    why: str  # JAX's description: "from the argument x", "output of tanh from ...", ...

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def is_argument(self) -> bool:
        return self.why.startswith("from the argument")


def saved_residuals(f: Callable[..., Any], *args: Any) -> list[Residual]:
    """What ``jax.grad(f)`` keeps from the forward pass, as printed by ``jax.ad_checkpoint.print_saved_residuals``.

    Parsed from the public printer's text (one line per residual: ``f32[8,7] output of tanh from ...``).
    """
    from jax.ad_checkpoint import print_saved_residuals

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_saved_residuals(f, *args)
    out = []
    for line in buf.getvalue().splitlines():
        m = _SHAPE.match(line.strip())
        if not m:
            continue
        shape = tuple(int(v) for v in m["shape"].replace(" ", "").split(",") if v)
        out.append(Residual(shape, _ITEMSIZE.get(m["dtype"], 4), m["why"]))
    return out


def saved_bytes(f: Callable[..., Any], *args: Any, include_arguments: bool = False) -> int:
    """Bytes of the residuals ``jax.grad(f)`` saves; arguments (kept alive anyway) excluded by default."""
    return sum(r.nbytes for r in saved_residuals(f, *args) if include_arguments or not r.is_argument)


def xla_peak_bytes(compiled: Any) -> int:
    """Bytes XLA's buffer assignment reserves for one call of a compiled function:
    arguments + outputs − outputs aliased onto donated arguments + temporaries."""
    m = compiled.memory_analysis()
    return int(m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes + m.temp_size_in_bytes)
