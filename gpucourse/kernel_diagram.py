"""A puzzle's picture from what the kernel actually did (the executor's access log), GPU-Puzzles
style.

Like GPU-Puzzles' ``show()`` this runs the student's own kernel, so a wrong kernel shows a wrong
picture; it draws memory rather than arrows, with the shared memory of each block and the values
left. One panel per memory the kernel touched: each global input (what was read), each output (what
was written, then which elements are right), and each shared array of each block (written, then
read). In every cell:

- the colour is the block that touched the element; an element touched by several blocks is split
  into stripes, one per block;
- the text is the thread (its index in its block, ``threadIdx.x + threadIdx.y·blockDim.x``) that
  touched it, all of them: ``3`` one thread, ``2,3,4`` three, ``6,7|0`` threads 6 and 7 of one block
  and thread 0 of the next, ``×12`` twelve threads (too many to list); ``3²``: thread 3 accessed the
  element twice;
- a dashed orange edge: a read outside the block's own range (an input element at a position whose
  output element the block does not write: a halo, a neighbour's data, a stride);
- a purple edge, in a shared array's panel: the elements one warp-wide access needs from ONE bank
  (the worst bank conflict of the launch; the caption says how many passes it costs);
- a red edge and ``?``: read while no thread had written it (uninitialised shared memory); a red
  ``!``: a data race on the element; in the output's last panel, a red cell holds what the kernel
  left where the answer differs, and a grey ``–`` an element no thread wrote; the caption lists the
  first wrong elements with what was expected.

Text is 9 pt or more at the notebook's width; arrays with more elements than fit a label are drawn
in colour only.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .simt.report import KernelReport

RIGHT, WRONG, MISSING = 0, 1, 2  # codes of the "needed" panel
# (access_maps' callers) label cells with the thread index only when the array is this small
MAX_LABELS = 64
# inches: JupyterLab's notebook column at 100 % (about 950 px at matplotlib's inline 100 dpi)
WIDTH_IN = 9.5
DPI = 100
FONT_PT = 9  # the smallest text in the figure
WRAP = 20  # a 1-D array of more elements is drawn in rows of this many (element i at row i // WRAP)
# shared arrays: blocks drawn (the first ones); the caption says how many are left out
MAX_BLOCK_PANELS = 4
MAX_PANEL_IN = 2.6  # inches: the tallest panel (a tall array gets smaller, unlabelled cells)
LABEL_CHARS = 7  # a cell's label longer than this becomes a count ("×12")
# a caption wraps at this many characters: the picture's width at 9 pt, from its left margin
CAPTION_CHARS = 115
# blocks: ColorBrewer's Set3 with its grey and pale green (they read as "never written" and "right")
# replaced by a pale yellow and Paired's light blue, then Pastel1's beige and Pastel2's blue-grey:
# 12 blocks before a colour repeats
BLOCK_COLOURS = (
    "#8dd3c7",
    "#bebada",
    "#fdb462",
    "#80b1d3",
    "#b3de69",
    "#fccde5",
    "#ffffb3",
    "#bc80bd",
    "#a6cee3",
    "#ffed6f",
    "#e5d8bd",
    "#cbd5e8",
)
HALO, UNINIT, RACE, BAD, GONE, BANK = (
    "outside its block's range",
    "read unwritten",
    "race",
    "wrong",
    "never written",
    "one bank",
)
# a race under CUDA's memory model that changed no value here
SAME = "same value stored by unordered threads"


@dataclass
class Cell:
    blocks: tuple[int, ...] = ()  # blocks that touched the element (stripes), empty: untouched
    label: str = ""  # the threads, or in the result panel the value the kernel left
    marks: frozenset = frozenset()  # HALO, UNINIT, RACE, BAD, GONE


@dataclass
class Panel:
    title: str
    shape: tuple[int, ...]  # the array's shape (a 1-D array is drawn wrapped in rows of WRAP)
    cells: dict[int, Cell]  # flat element index -> what is drawn there (absent: untouched, blank)
    caption: str = ""


@dataclass
class Picture:
    title: str
    panels: list[Panel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the launch's first correctness problem (barrier divergence, a race...), drawn in red on top
    problem: str = ""


def _threads_by_element(
    report: KernelReport, root_ids: list[int], kind: str
) -> dict[int, dict[int, int]]:
    """{flat element: {global thread id: how many times it accessed the element}} of the logged
    accesses of ``kind`` ('r' reads; 'w' writes and atomic updates) to the roots ``root_ids``."""
    log = report._log
    if not len(log):
        return {}
    k = log[:, 4]
    mask = np.isin(log[:, 2], root_ids) & ((k == 0) if kind == "r" else (k != 0))
    out: dict[int, dict[int, int]] = {}
    for tid, pos in zip(log[mask, 0].tolist(), log[mask, 3].tolist()):
        seen = out.setdefault(pos, {})
        seen[tid] = seen.get(tid, 0) + 1
    return {pos: dict(sorted(t.items())) for pos, t in out.items()}


SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _thread_label(tids: dict[int, int], tpb: int) -> str:
    """``3`` · ``2,3,4`` · ``6,7|0`` (a bar between blocks) · ``3²`` (thread 3, twice; ``0⁶⁴`` 64
    times) · ``×12`` (twelve threads) when longer than LABEL_CHARS (``×12²``: and some of them more
    than once)."""
    groups: dict[int, list[str]] = {}
    for t, n in tids.items():
        groups.setdefault(t // tpb, []).append(
            f"{t % tpb}{str(n).translate(SUPERSCRIPT) if n > 1 else ''}"
        )
    text = "|".join(",".join(g) for _, g in sorted(groups.items()))
    repeated = max(tids.values()) > 1
    return text if len(text) <= LABEL_CHARS else f"×{len(tids)}{'²' if repeated else ''}"


def _cells(by_element: dict[int, dict[int, int]], tpb: int) -> dict[int, Cell]:
    return {pos: Cell(tuple(sorted({t // tpb for t in tids})), _thread_label(tids, tpb))
            for pos, tids in by_element.items()}


def _mark(cells: dict[int, Cell], pos: int, mark: str) -> None:
    cell = cells.setdefault(pos, Cell())
    cell.marks = cell.marks | {mark}


def _flat(index: Any, shape: tuple[int, ...]) -> int | None:
    try:
        return int(np.ravel_multi_index(tuple(int(i) for i in np.atleast_1d(index)), shape))
    except (ValueError, TypeError):
        return None


def picture(
    report: KernelReport, outputs: dict[str, tuple[np.ndarray, np.ndarray]], title: str = ""
) -> Picture:
    """The panels of :func:`draw` for one launch; ``outputs`` maps an output's name to (what the
    kernel left, what the answer is). Plain data, so that tests can compare the pictures of two
    kernels cell by cell."""
    tpb = report.threads_per_block
    pic = Picture(title or report.name)
    roots = list(report._roots)
    ids = {name: [i for i, r in enumerate(roots) if r.name == name] for name in report.arrays}
    # output element -> the blocks that wrote it (a block's own range)
    own: dict[int, set[int]] = {}
    own_shape = None
    for name in outputs:
        if name in ids:
            own_shape = report.arrays[name]
            for pos, tids in _threads_by_element(report, ids[name], "w").items():
                own.setdefault(pos, set()).update(t // tpb for t in tids)
    races = [r for r in report.races]
    for name, space in report.spaces.items():
        if space != "global":
            continue
        shape = tuple(report.arrays[name])
        if name not in outputs:
            reads = _threads_by_element(report, ids[name], "r")
            cells = _cells(reads, tpb)
            # halos: reads where the block writes nothing
            if own_shape is not None and tuple(own_shape) == shape:
                for pos, tids in reads.items():
                    if any(t // tpb not in own.get(pos, ()) for t in tids):
                        _mark(cells, pos, HALO)
            for race in races:
                if race.array == name and (pos := _flat(race.index, shape)) is not None:
                    _mark(cells, pos, RACE)
            pic.panels.append(Panel(f"{name} (global): read by", shape, cells))
            continue
        cells = _cells(_threads_by_element(report, ids[name], "w"), tpb)
        for race in races:
            if race.array == name and (pos := _flat(race.index, shape)) is not None:
                _mark(cells, pos, RACE)
        for array, index in getattr(report, "benign_at", ()):
            if array == name and (pos := _flat(index, shape)) is not None:
                _mark(cells, pos, SAME)
        pic.panels.append(Panel(f"{name} (global): written by", shape, cells))
        reads = _threads_by_element(report, ids[name], "r")
        if reads:  # an output the kernel also reads (out[i] += ..., a running total)
            read_cells = _cells(reads, tpb)
            for pos in set(reads) - set(cells):
                # read where no thread of this launch wrote: the caller's zeros, or garbage
                _mark(read_cells, pos, UNINIT)
            pic.panels.append(Panel(f"{name} (global): read by", shape, read_cells))
        got, want = (np.asarray(v) for v in outputs[name])
        got_flat, want_flat = got.ravel(), want.ravel()
        ok = np.isclose(got_flat, want_flat, rtol=1e-4, atol=1e-5, equal_nan=True)
        written = set(cells)
        result: dict[int, Cell] = {}
        wrong = []
        raced = {
            p
            for race in races
            if race.array == name and (p := _flat(race.index, shape)) is not None
        }
        for pos in range(want_flat.size):
            # right only because the executor runs one thread at a time
            if ok[pos] and pos in raced:
                result[pos] = Cell((), "", frozenset({RACE}))
            elif ok[pos]:
                result[pos] = Cell((), "", frozenset())
            elif pos not in written:
                result[pos] = Cell((), "–", frozenset({GONE}))
            else:
                result[pos] = Cell((), f"{got_flat[pos]:.3g}", frozenset({BAD}))
                wrong.append(pos)
        shown = ", ".join(
            f"{name}[{', '.join(map(str, np.unravel_index(p, want.shape)))}] expected "
            f"{want_flat[p]:.4g}, got {got_flat[p]:.4g}"
            for p in wrong[:3]
        )
        n_gone = sum(1 for c in result.values() if GONE in c.marks)
        # already right as it was
        unneeded = sum(1 for p in range(want_flat.size) if ok[p] and p not in written)
        lucky = sum(1 for c in result.values() if RACE in c.marks)
        caption = (
            f"{len(wrong)} wrong"
            + (f" ({shown}{', …' if len(wrong) > 3 else ''})" if wrong else "")
            + f"; {n_gone} needed but never written"
            + (f" ({unneeded} more not written, already right as launched)" if unneeded else "")
            + (
                f"; amber !: {lucky} raced element{'s' * (lucky != 1)} right only because the"
                " executor runs one thread at a time (on a GPU, updates may be lost)"
                if lucky
                else ""
            )
            + (
                "; with a race, the values are the executor's one-thread-at-a-time order: a GPU may"
                " give others, right or wrong"
                if wrong and int(getattr(report, "race_count", 0) or 0)
                else ""
            )
        )
        pic.panels.append(
            Panel(f"{name}: the answer (red: wrong, –: never written)", shape, result, caption)
        )
    for name, space in report.spaces.items():
        if space != "shared":
            continue
        shape = tuple(report.arrays[name])
        size = int(np.prod(shape))
        writes = _threads_by_element(report, ids[name], "w")
        reads = _threads_by_element(report, ids[name], "r")
        blocks = sorted({t // tpb for tids in (*writes.values(), *reads.values()) for t in tids})
        for b in blocks[:MAX_BLOCK_PANELS]:
            mine = lambda accesses: {
                p: {t: n for t, n in tid_set.items() if t // tpb == b}
                for p, tid_set in accesses.items()
                if p < size
            }
            w = {p: tid_set for p, tid_set in mine(writes).items() if tid_set}
            r = {p: tid_set for p, tid_set in mine(reads).items() if tid_set}
            write_cells, read_cells = _cells(w, tpb), _cells(r, tpb)
            for pos in set(r) - set(w):
                _mark(read_cells, pos, UNINIT)
            for u in report.uninitialized:
                o = u.origin
                if (
                    getattr(o, "array", None) == name
                    and o.thread[0] == b
                    and (p := _flat(o.index, shape)) is not None
                ):
                    _mark(read_cells, p, UNINIT)
            for race in races:
                if (
                    race.array == name
                    and race.first[0] == b
                    and (p := _flat(race.index, shape)) is not None
                ):
                    _mark(read_cells, p, RACE)
                    _mark(write_cells, p, RACE)
            for array, index in getattr(report, "benign_at", ()):
                if array == name and (p := _flat(index, shape)) is not None and p in w:
                    _mark(write_cells, p, SAME)
            captions = {}
            for kind, panel_cells in (("w", write_cells), ("r", read_cells)):
                worst = report.worst_conflict(name, kind) if hasattr(report, "worst_conflict") \
                    else None
                if worst is None or worst[1] != b:
                    continue
                ways, _, elems = worst
                for p in elems:
                    _mark(panel_cells, p, BANK)
                captions[kind] = (
                    f"bank conflict: purple, the {len(elems)} elements one warp-wide"
                    f" {'write' if kind == 'w' else 'read'} needs from ONE bank ({ways} words, so"
                    f" {ways} passes instead of 1; {report.bank_conflicts(name, kind):.1f}-way on"
                    " average): a 4-byte element's bank is its index mod 32"
                )
            pic.panels.append(Panel(f"{name} (shared, block {b}): written by", shape, write_cells,
                                    captions.get("w", "")))
            pic.panels.append(Panel(f"{name} (shared, block {b}): read by", shape, read_cells,
                                    captions.get("r", "")))
        if len(blocks) > MAX_BLOCK_PANELS:
            pic.notes.append(
                f"{name}: blocks {blocks[MAX_BLOCK_PANELS]}… not drawn ({len(blocks)} blocks"
                " used it)"
            )
    found = int(getattr(report, "race_count", 0) or 0)
    # the executor keeps a few examples: an unmarked block may race the same way
    if found > len(races):
        pic.notes.append(
            f"red ! marks the executor's first {len(races)} of {found} races found: the other"
            " blocks and elements may race the same way, unmarked"
        )
    return pic


def _grid(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, columns) a panel is drawn with: a 2-D array as it is, a 1-D one wrapped in rows of
    WRAP."""
    if len(shape) >= 2:
        return int(np.prod(shape[:-1])), int(shape[-1])
    n = int(np.prod(shape)) if shape else 1
    return (1, n) if n <= WRAP else (-(-n // WRAP), WRAP)


def _cell_inches(panel: Panel) -> float:
    """A panel's cell size: 0.5 in (room for a label at 9 pt), less where the array is wider than
    the notebook or taller than MAX_PANEL_IN (then drawn in colour only)."""
    rows, cols = _grid(panel.shape)
    return min(0.5, (WIDTH_IN - 0.9) / cols, MAX_PANEL_IN / rows)


def draw(report: KernelReport | Picture, maps: Any = None, title: str = "") -> Any:
    """The figure of a :class:`Picture` (or of ``picture(report, outputs)`` when given a report and
    outputs); returns the figure. Panels stack top to bottom, one per memory, at the notebook's
    width."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    pic = report if isinstance(report, Picture) else picture(report, maps or {}, title)
    cells = [_cell_inches(p) for p in pic.panels]
    # wrapped to the picture's width
    captions = [textwrap.wrap(p.caption, CAPTION_CHARS) for p in pic.panels]
    caption_h = [0.03 + 0.19 * len(lines) if lines else 0 for lines in captions]
    heights = [
        _grid(p.shape)[0] * c + 0.45 + h for p, c, h in zip(pic.panels, cells, caption_h)
    ] or [0.5]
    notes = [line for note in pic.notes for line in textwrap.wrap(note, 120)]
    # the legend's lines, its notes, and the row of block colours
    legend_h = 1.97 + 0.19 * len(notes)
    problem = textwrap.wrap(f"the check fails: {pic.problem}", 110) if pic.problem else []
    head = 0.35 + 0.2 * len(problem)
    fig = plt.figure(figsize=(WIDTH_IN, sum(heights) + legend_h + head), dpi=DPI)
    total = sum(heights) + legend_h + head
    y_top = total - head
    fig.text(0.01, (total - 0.12) / total, pic.title, fontsize=FONT_PT + 2, weight="bold", va="top")
    # what no memory picture shows (a barrier only part of a block reaches, a shuffle from an idle
    # lane)
    if problem:
        fig.text(
            0.01,
            (total - 0.36) / total,
            "\n".join(problem),
            fontsize=FONT_PT,
            weight="bold",
            va="top",
            color="#cb181d",
            linespacing=1.3,
        )
    for panel, h, cell, lines, cap_h in zip(pic.panels, heights, cells, captions, caption_h):
        labelled = cell >= 0.42  # room for "6,7|0" at 9 pt
        rows, cols = _grid(panel.shape)
        ax = fig.add_axes((0.7 / WIDTH_IN, (y_top - h + 0.05 + cap_h) / total,
                           cols * cell / WIDTH_IN, rows * cell / total))
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_xticks([])
        ax.set_yticks([])
        for s in ax.spines.values():
            s.set_visible(False)
        ax.set_title(
            panel.title + ("" if labelled else " (too many elements to label: colours only)"),
            fontsize=FONT_PT,
            loc="left",
            pad=3,
        )
        if len(panel.shape) < 2 and rows > 1:  # wrapped: the first element of each row
            for r in range(rows):
                ax.text(
                    -0.15,
                    r + 0.5,
                    str(r * cols),
                    fontsize=FONT_PT,
                    ha="right",
                    va="center",
                    color="#555555",
                )
        result = panel.title.endswith("never written)")
        for pos in range(int(np.prod(panel.shape)) if panel.shape else 1):
            r, c = divmod(pos, cols)
            cell_here = panel.cells.get(pos)
            if cell_here is None or (not cell_here.blocks and not cell_here.marks and not result):
                ax.add_patch(
                    Rectangle((c, r), 1, 1, facecolor="white", edgecolor="#cccccc", linewidth=0.5)
                )
                continue
            if result:
                face = (
                    "#e34a33"
                    if BAD in cell_here.marks
                    else (
                        "#bbbbbb"
                        if GONE in cell_here.marks
                        # amber: right here, raced
                        else "#fdae6b" if RACE in cell_here.marks else "#cfe8cf"
                    )
                )
                ax.add_patch(
                    Rectangle((c, r), 1, 1, facecolor=face, edgecolor="white", linewidth=0.5)
                )
            else:
                stripes = cell_here.blocks or (-1,)
                for i, b in enumerate(stripes):
                    face = "white" if b < 0 else BLOCK_COLOURS[b % len(BLOCK_COLOURS)]
                    ax.add_patch(
                        Rectangle(
                            (c + i / len(stripes), r),
                            1 / len(stripes),
                            1,
                            facecolor=face,
                            edgecolor="none",
                        )
                    )
                edge, style, width = "#888888", "-", 0.5
                if BANK in cell_here.marks:
                    edge, style, width = "#6a3d9a", "-", 2.2
                if HALO in cell_here.marks:
                    edge, style, width = "#e6550d", "--", 2.0
                if UNINIT in cell_here.marks or RACE in cell_here.marks:
                    edge, style, width = "#cb181d", "-", 2.2
                ax.add_patch(
                    Rectangle(
                        (c + 0.04, r + 0.04),
                        0.92,
                        0.92,
                        facecolor="none",
                        edgecolor=edge,
                        linestyle=style,
                        linewidth=width,
                    )
                )
            marks = (
                ("?" if UNINIT in cell_here.marks else "")
                + ("!" if RACE in cell_here.marks else "")
                + ("=" if SAME in cell_here.marks and RACE not in cell_here.marks else "")
            )
            text = cell_here.label
            # about 0.085 in per character at 9 pt
            if text and len(text + marks) * 0.085 > cell and cell_here.blocks:
                # too wide: the count (marks and repeats kept)
                parts = cell_here.label.replace("|", ",").split(",")
                repeated = any(char in "⁰¹²³⁴⁵⁶⁷⁸⁹" for char in cell_here.label)
                text = (
                    cell_here.label
                    if cell_here.label.startswith("×")
                    else f"×{len(parts)}{'²' if repeated else ''}"
                )
            text += marks
            if text and (labelled or result and BAD in cell_here.marks and cell >= 0.3):
                ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=FONT_PT,
                        color="#cb181d" if (UNINIT in cell_here.marks or RACE in cell_here.marks)
                        else "#e6550d" if SAME in cell_here.marks else "black")
        if lines:
            alarm = panel.caption.startswith("OUT OF BOUNDS")
            fig.text(
                0.7 / WIDTH_IN,
                (y_top - h + 0.05 + cap_h - 0.04) / total,
                "\n".join(lines),
                fontsize=FONT_PT,
                va="top",
                ha="left",
                linespacing=1.3,
                color="#cb181d" if alarm else "black",
                weight="bold" if alarm else "normal",
            )
        y_top -= h
    legend = (
        "colour: the block (stripes: several blocks) · text: its threads' indices in the"
        " block\n(2-D: block blockIdx.x + blockIdx.y × gridDim.x, thread threadIdx.x + threadIdx.y"
        " × blockDim.x)\n(×n: n threads; 3²: thread 3 twice; ×8²: 8 threads, some more than"
        " once)\norange dashed edge: read outside its block's own range · red !: a race (the"
        " executor's examples)\npurple edge: the elements one warp-wide access needs from one"
        " shared-memory bank (a bank conflict: one pass per element)\norange =: a store of the"
        " value already there, unordered with another thread's access\n(still a race in CUDA's"
        " memory model)\nred ?: read before any"
        " thread wrote it (NaN here; a GPU leaves whatever was there)"
    )
    fig.text(
        0.01,
        (legend_h - 0.1) / total,
        "\n".join([legend, *notes]),
        fontsize=FONT_PT,
        va="top",
        linespacing=1.3,
    )
    used = sorted({b for p in pic.panels for c in p.cells.values() for b in c.blocks})
    if used:  # the key: each block's colour and its number (blockIdx.x + blockIdx.y × gridDim.x)
        shown = used[:len(BLOCK_COLOURS)]
        fig.text(0.01, 0.08 / total, "block:", fontsize=FONT_PT, va="center")
        for k, b in enumerate(shown):
            fig.text(
                (0.6 + 0.42 * k) / WIDTH_IN,
                0.08 / total,
                f" {b} ",
                fontsize=FONT_PT,
                va="center",
                bbox={
                    "facecolor": BLOCK_COLOURS[b % len(BLOCK_COLOURS)],
                    "edgecolor": "#888888",
                    "pad": 1.5,
                },
            )
        if len(used) > len(shown):
            fig.text(
                (0.6 + 0.42 * len(shown)) / WIDTH_IN,
                0.08 / total,
                f"… ({len(used)} blocks: colours repeat every {len(BLOCK_COLOURS)})",
                fontsize=FONT_PT,
                va="center",
            )
    return fig


def access_maps(
    report: KernelReport, outputs: dict[str, tuple[np.ndarray, np.ndarray]]
) -> dict[str, np.ndarray]:
    """``{'<array> read' | '<array> written': linear thread id per element (-1: none, the first
    thread where several), '<array> needed': codes}`` for every global array; ``outputs`` maps an
    output's name to (what the kernel left, what the answer is). A compact view for tests;
    :func:`picture` holds every thread."""
    maps: dict[str, np.ndarray] = {}
    for name, space in report.spaces.items():
        if space != "global":
            continue
        kind = "w" if name in outputs else "r"
        maps[f"{name} {'written' if kind == 'w' else 'read'}"] = report.access_map(
            name, kind, "thread"
        )
        if name in outputs:
            got, want = outputs[name]
            codes = np.where(
                np.isclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True), RIGHT, WRONG
            )
            written = maps[f"{name} written"] >= 0
            codes = np.where(~written & (codes == WRONG), MISSING, codes)
            maps[f"{name} needed"] = codes.reshape(np.shape(want))
    return maps
