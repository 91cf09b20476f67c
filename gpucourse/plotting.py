"""One plotting style for every figure in the course.

Figures are drawn on an opaque white card with dark text, so they read the same in JupyterLab's
light and dark themes (a transparent figure would put black labels on a dark background). Colours
come from the Okabe-Ito palette, which stays distinguishable for colour-blind readers. Every axis
gets a label with its unit: :func:`axes` refuses to make a figure without them.
"""

from __future__ import annotations

from typing import Any

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

STYLE: dict[str, Any] = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.figsize": (7.0, 4.2),
    "figure.dpi": 100,
    "axes.edgecolor": "#333333",
    "axes.labelcolor": "#111111",
    "text.color": "#111111",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titleweight": "bold",
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.frameon": False,
    "lines.linewidth": 2.0,
    "lines.markersize": 6,
}


def use_style() -> None:
    """Apply the course style to matplotlib (called by :func:`gpucourse.setup`)."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=PALETTE)


def axes(
    xlabel: str,
    ylabel: str,
    title: str = "",
    *,
    ax: Any = None,
    figsize: tuple[float, float] | None = None,
):
    """A styled ``Axes`` with labelled axes. Labels must name a unit, e.g. ``"size [bytes]"``.

    Pass ``unit="-"`` style labels such as ``"speed-up [×]"`` for dimensionless quantities.
    """
    for which, label in (("xlabel", xlabel), ("ylabel", ylabel)):
        if not label or "[" not in label or "]" not in label:
            raise ValueError(f"{which} {label!r} must name its unit in brackets, e.g. 'time [µs]'")
    import matplotlib.pyplot as plt

    use_style()
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax
