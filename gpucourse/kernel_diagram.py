"""A puzzle's picture from what the kernel actually did (the executor's access log), GPU-Puzzles style.

For every global array of one launch: which thread of which block read it (inputs) or wrote it (outputs), one
cell per element, coloured by block and labelled with the thread's index in its block; beside each output, which
elements the answer needs and which of them the kernel got wrong or never wrote. GPU-Puzzles draws the spec; this
draws the student's own kernel, so a wrong kernel shows a wrong picture.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .simt.report import KernelReport

RIGHT, WRONG, MISSING = 0, 1, 2  # codes of the "needed" panel
MAX_LABELS = 64  # label cells with the thread index only when the array is this small


def access_maps(report: KernelReport, outputs: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """``{'<array> read' | '<array> written': linear thread id per element (-1: none), '<array> needed': codes}``
    for every global array; ``outputs`` maps an output's name to (what the kernel left, what the answer is)."""
    maps: dict[str, np.ndarray] = {}
    for name, space in report.spaces.items():
        if space != "global":
            continue
        kind = "w" if name in outputs else "r"
        maps[f"{name} {'written' if kind == 'w' else 'read'}"] = report.access_map(name, kind, "thread")
        if name in outputs:
            got, want = outputs[name]
            codes = np.where(np.isclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True), RIGHT, WRONG)
            written = maps[f"{name} written"] >= 0
            codes = np.where(~written & (codes == WRONG), MISSING, codes)
            maps[f"{name} needed"] = codes.reshape(np.shape(want))
    return maps


def draw(report: KernelReport, maps: dict[str, np.ndarray], title: str = "") -> Any:
    """One panel per map of :func:`access_maps`; returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    n = len(maps)
    fig, axs = plt.subplots(1, n, figsize=(min(3.2 * n, 16), 2.4), squeeze=False, dpi=60)  # small: drawn per puzzle
    tpb = report.threads_per_block
    for ax, (label, m) in zip(axs.flat, maps.items()):
        m2 = m if m.ndim == 2 else m.reshape(1, -1)
        ax.set_xticks([])
        ax.set_yticks([])
        if label.endswith("needed"):
            ax.imshow(m2, cmap=ListedColormap(["#cfe8cf", "#e34a33", "#bbbbbb"]), vmin=0, vmax=2,
                      interpolation="nearest", aspect="auto")
            bad, missing = int((m2 == WRONG).sum()), int((m2 == MISSING).sum())
            ax.set_title(f"{label}: {bad} wrong, {missing} never written", fontsize=9)
            continue
        blocks = np.where(m2 >= 0, m2 // tpb, -1)
        ax.imshow(np.ma.masked_less(blocks, 0), cmap="tab10", vmin=0, vmax=9, interpolation="nearest", aspect="auto")
        if m2.size <= MAX_LABELS:
            for (r, c), t in np.ndenumerate(m2):
                if t >= 0:
                    ax.text(c, r, str(t % tpb), ha="center", va="center", fontsize=6)
        ax.set_title(f"{label} (colour: block, text: thread)", fontsize=9)
    fig.suptitle(title or report.name, fontsize=10)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.78, bottom=0.04, wspace=0.08)  # tight_layout costs ~0.2 s
    return fig
