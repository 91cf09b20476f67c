"""``simt.run(kernel, grid, block, *args)``: one instrumented launch, and its report."""

from __future__ import annotations

from typing import Any

from .api import Kernel, cuda
from .dims import check_launch, dim3
from .launch import Launch
from .report import KernelReport


def run(kernel: Any, griddim: Any, blockdim: Any, *args: Any, sharedmem: int = 0, block_order: str = "forward",
        max_iterations: int = 1_000_000, time_limit: float | None = 60.0) -> KernelReport:
    """Run ``kernel[griddim, blockdim, 0, sharedmem](*args)`` on the instrumented executor and report what happened.

    ``kernel`` is a ``@cuda.jit`` kernel of this executor (``gpucourse.simt.cuda``), of numba-cuda or of numba's
    simulator, or a plain Python function. NumPy array arguments are global memory, written in place (CuPy arrays
    are copied to the host and back; ``cuda.to_device`` arrays are used as they are). Scalars pass through.

    Raises :class:`~gpucourse.simt.errors.KernelError` (with the partial report as ``.report``) when a thread
    raises, a barrier or warp operation deadlocks, or a thread exceeds ``max_iterations`` loop iterations or the
    launch ``time_limit`` seconds. ``block_order="reverse"`` runs the blocks last to first: a correct kernel cannot
    tell (blocks are independent), a racy one can.
    """
    if block_order not in ("forward", "reverse"):
        raise ValueError("block_order must be 'forward' or 'reverse'")
    grid, block = dim3(griddim, "grid dimension"), dim3(blockdim, "block dimension")
    check_launch(grid, block)
    copies, host_args = [], []
    for a in args:
        if type(a).__module__.split(".")[0] == "cupy" and hasattr(a, "get"):
            host = a.get()
            copies.append((a, host))
            a = host
        host_args.append(a)
    launch = Launch(kernel, grid, block, tuple(host_args), cuda=cuda, sharedmem=sharedmem, block_order=block_order,
                    max_iterations=max_iterations, time_limit=time_limit)
    report = launch.execute()
    for dev, host in copies:
        dev.set(host)
    if isinstance(kernel, Kernel):
        kernel.last_report = report
    return report
