"""What XLA did to a function, read from the compiler itself (works on CPU and GPU alike).

``compiled(f, *args)`` lowers and compiles ``jax.jit(f)`` for these arguments and returns the optimized HLO
text, the fusions in it, XLA's own cost model (FLOPs, bytes accessed) and its buffer assignment
(argument / output / temporary bytes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable


# Opcodes that move or name data but compute nothing.
BOOKKEEPING = ("parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast")
_ENTRY_OP = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([\w\-]+)\(", re.M)


def entry_ops(hlo: str) -> list[str]:
    """Opcodes of the ENTRY computation's instructions (tuple-typed ones included), in order."""
    m = re.search(r"^ENTRY .*?^}", hlo, re.S | re.M)
    return _ENTRY_OP.findall(m.group(0) if m else hlo)



def fusion_breakers() -> dict[str, Callable]:
    """Ops that XLA cannot fuse into an elementwise loop, each as a function of one (m, n) array."""
    import jax

    import jax.numpy as jnp
    import numpy as np
    return {
        "sort": lambda a: jnp.sort(a, axis=-1),
        "fft": lambda a: jnp.fft.fft(a, axis=-1).real.astype(a.dtype),
        "custom-call": lambda a: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(a.shape, a.dtype), a),
        "conditional": lambda a: jax.lax.cond(a.reshape(-1)[0] > 0, lambda v: v * 2, lambda v: v - 1, a),
        "top_k": lambda a: jax.lax.top_k(a, 2)[0].sum(-1, keepdims=True) + a,
    }



@dataclass(frozen=True)
class Compiled:
    hlo: str  # optimized HLO of the entry computation and its fusions
    flops: float  # XLA's cost model
    bytes_accessed: float  # bytes XLA expects to read and write from memory
    argument_bytes: int
    output_bytes: int
    temp_bytes: int  # scratch buffers XLA's buffer assignment reserved

    @property
    def fusions(self) -> list[str]:
        """Kinds of the fusion instructions in the entry computation, e.g. ['kLoop', 'kOutput']."""
        return re.findall(r"=\s*\S+\s+fusion\(.*?kind=(k\w+)", self._entry())

    def _entry(self) -> str:
        m = re.search(r"^ENTRY .*?^}", self.hlo, re.S | re.M)
        return m.group(0) if m else self.hlo

    def ops(self) -> list[str]:
        """Opcodes of the entry computation's instructions (after fusion), in order."""
        return entry_ops(self.hlo)

    def excerpt(self, lines: int = 12) -> str:
        """The entry computation, trimmed of metadata, for printing in a notebook."""
        text = re.sub(r",\s*metadata=\{[^}]*\}", "", self._entry())
        out = text.splitlines()
        return "\n".join(out[:lines] + (["  ..."] if len(out) > lines else []))


def _cost(analysis: Any) -> dict:
    if isinstance(analysis, (list, tuple)):  # older JAX returns one dict per computation
        analysis = analysis[0] if analysis else {}
    return dict(analysis or {})


def compiled(f: Callable[..., Any], *args: Any, **jit_kwargs: Any) -> Compiled:
    import jax

    c = jax.jit(f, **jit_kwargs).lower(*args).compile()
    cost = _cost(c.cost_analysis())
    mem = c.memory_analysis()
    return Compiled(
        hlo=c.as_text(),
        flops=float(cost.get("flops", 0.0)),
        bytes_accessed=float(cost.get("bytes accessed", 0.0)),
        argument_bytes=int(getattr(mem, "argument_size_in_bytes", 0)),
        output_bytes=int(getattr(mem, "output_size_in_bytes", 0)),
        temp_bytes=int(getattr(mem, "temp_size_in_bytes", 0)),
    )
