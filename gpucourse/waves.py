"""Wave quantization measured where no GPU is: a pool of ``slots`` workers running equal "blocks".

A GPU's block scheduler keeps at most SMs × blocks-per-SM blocks resident and starts the next block
when one finishes; with equal blocks, a grid of n blocks takes ceil(n / slots) rounds ("waves"). The
same holds for any pool of slots that each run one task at a time, so the quantization can be
measured on a CPU with worker threads whose "block" is a fixed sleep (a sleep does not compete for
the CPU, so the timing holds on a loaded machine).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor


def run_blocks(n_blocks: int, slots: int, block_s: float = 0.05) -> float:
    """Wall seconds for ``n_blocks`` blocks of ``block_s`` seconds each on ``slots`` workers (a
    worker takes the next block as soon as it is free, as an SM does)."""
    if n_blocks < 1 or slots < 1 or block_s <= 0:
        raise ValueError(
            f"expected n_blocks >= 1, slots >= 1, block_s > 0; got {n_blocks}, {slots}, {block_s}"
        )
    with ThreadPoolExecutor(max_workers=slots) as pool:
        pool.submit(time.sleep, 0).result()  # start a worker before the clock does
        t0 = time.perf_counter()
        for f in [pool.submit(time.sleep, block_s) for _ in range(n_blocks)]:
            f.result()
        return time.perf_counter() - t0


def measured_waves(n_blocks: int, slots: int, block_s: float = 0.05, repeats: int = 3) -> float:
    """Waves the grid took: the best of ``repeats`` wall times in units of one block's time."""
    return min(run_blocks(n_blocks, slots, block_s) for _ in range(repeats)) / block_s
