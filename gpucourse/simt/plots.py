"""Pictures of a launch: which block/warp/thread touched each element, and the launch as a tree."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dims import WARP_SIZE
from .report import KernelReport


def plot_access(
    report: KernelReport,
    array: str,
    kind: str = "w",
    by: str = "block",
    ax: Any = None,
    title: str = "",
):
    """Draw which block (or warp, or thread) accessed each element of a 1-D or 2-D array."""
    from .. import plotting

    import matplotlib as mpl

    m = report.access_map(array, kind, by)
    one_d = m.ndim == 1
    if one_d:
        m = m[None, :]
    ax = plotting.axes(
        "index [element]" if one_d else "column index [element]",
        "one row [-]" if one_d else "row index [element]",
        title or f"{report.name}: {array} {'written' if kind == 'w' else 'read'} by {by}",
        ax=ax,
    )
    ids = int(m.max()) + 1 if (m >= 0).any() else 1
    # one colour per id (ids are whole numbers): 20 distinct colours, or beyond 20 ids a rainbow
    # in id order, so that a pattern that repeats every k ids shows as a repeating gradient
    colours = ([mpl.colormaps["tab20"](i) for i in range(ids)] if ids <= 20
               else [mpl.colormaps["turbo"](i / (ids - 1)) for i in range(ids)])
    cmap = mpl.colors.ListedColormap(colours)
    norm = mpl.colors.BoundaryNorm(np.arange(-0.5, ids + 0.5), ids)
    image = ax.imshow(np.ma.masked_less(m, 0), cmap=cmap, norm=norm, interpolation="nearest",
                      aspect="auto")
    ax.grid(False)
    if one_d:
        ax.set_yticks([])
    else:
        ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    ax.xaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    step = 1 if ids <= 10 else 2 ** int(np.ceil(np.log2(ids / 8)))  # about 8 ticks, round steps
    ticks = list(range(0, ids, step))
    ax.figure.colorbar(image, ax=ax, label=f"{by} id [-]", ticks=ticks)
    if ids > 20 and m.size <= 48:  # neighbouring ids look alike: name each element's id
        for (row, col), v in np.ndenumerate(m):
            if v >= 0:
                ax.text(col, row, str(int(v)), ha="center", va="center", fontsize=7)
    return ax


def launch_tree(
    report: KernelReport,
    sm_of_block: dict[int, int] | None = None,
    kernel: str = "",
    stream: str = "",
    max_blocks: int = 4,
    max_warps: int = 2,
    max_threads: int = 2,
) -> str:
    """The article 002 tree (kernel → grid → blocks on SMs → warps → threads) for an actual
    launch."""
    tpb = report.threads_per_block
    k = kernel or report.name
    lines = ["GPU", f"└── Kernel {k}" + (f"   ({stream})" if stream else ""), f"      └── Grid {k} "
             f"{tuple(report.grid)} blocks × {tuple(report.block)} threads"]
    blocks_total = report.n_blocks
    shown = list(range(min(blocks_total, max_blocks)))
    for row, b in enumerate(shown):
        last_b = row == len(shown) - 1 and blocks_total <= max_blocks
        sm_label = f"SM {sm_of_block[b]}" if sm_of_block and b in sm_of_block else "SM ?"
        lines.append(f"           {'└──' if last_b else '├──'} Block {b} ({sm_label})")
        pre = "               " if last_b else "           │   "
        warps_per_block = math.ceil(tpb / WARP_SIZE)
        for w in range(min(warps_per_block, max_warps)):
            last_w = w == min(warps_per_block, max_warps) - 1 and warps_per_block <= max_warps
            first_thread, end_thread = w * WARP_SIZE, min((w + 1) * WARP_SIZE, tpb)
            lines.append(
                f"{pre}{'└──' if last_w else '├──'} Warp {b}-{w} (threads"
                f" {first_thread}–{end_thread - 1})"
            )
            pre2 = pre + ("    " if last_w else "│   ")
            for t in range(first_thread, min(end_thread, first_thread + max_threads)):
                lines.append(f"{pre2}├── Thread {t} (global {b * tpb + t})")
            lines.append(f"{pre2}└── ...")
        if warps_per_block > max_warps:
            lines.append(f"{pre}└── ... {warps_per_block - max_warps} more warps")
    if blocks_total > max_blocks:
        lines.append(f"           └── ... {blocks_total - max_blocks} more blocks")
    return "\n".join(lines)
