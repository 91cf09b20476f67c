"""Lab 5b's pictures (gpucourse/kernel_diagram.py), judged by what a wrong answer shows: for every puzzle and every
wrong kernel of the corpus, the picture differs from the solution's wherever their memory accesses differ; and each
picture is readable at the notebook's width (text 9 pt or more, every label inside its cell)."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

from gpucourse import kernel_diagram as kd
from grader import kernels
from grader.labs import lab05b_kernel_puzzles as lab
from tests.test_lab05b_kernel_puzzles import NS, WRONG, _failure, _gid, _solutions, _wrong, cuda


def _run(name: str, fn):
    """(the report, the picture, {output: (what the kernel left, the answer)}) of ``fn`` on visible case 1; a
    launch the executor stops is drawn up to where it stopped, and the picture says why."""
    p = lab.problems[name]
    with contextlib.redirect_stdout(io.StringIO()):
        report, outs = kernels._diagram_run(p, fn, 0, stopped := [])
        pic = kernels.diagram_picture(p, fn, 0)
    assert len(pic.notes) >= len(stopped) and all(why in " ".join(pic.notes) + pic.problem for why in stopped)
    return report, pic, outs


def _accesses(report) -> dict[tuple, dict[int, frozenset]]:
    """What the kernel did, straight from the executor's log: {(array, 'r' | 'w', block or None for global):
    {element: (thread, how many times) pairs}}."""
    tpb = report.threads_per_block
    names = [r.name for r in report._roots]
    out: dict[tuple, dict[int, set]] = {}
    for tid, rid, pos, kind in report._log[:, [0, 2, 3, 4]].tolist():
        name = names[rid]
        if name not in report.spaces:
            continue
        block = tid // tpb if report.spaces[name] == "shared" else None
        key = (name, "r" if kind == 0 else "w", block)
        seen = out.setdefault(key, {}).setdefault(pos, {})
        seen[tid] = seen.get(tid, 0) + 1
    return {k: {p: frozenset(t.items()) for p, t in v.items()} for k, v in out.items()}


def _panel(pic, key):
    name, kind, block = key
    where = f"(shared, block {block})" if block is not None else "(global)"
    words = "read by" if kind == "r" else "written by"
    return next((p for p in pic.panels if p.title == f"{name} {where}: {words}"), None)


def _cells(panel) -> dict[int, tuple]:
    return {} if panel is None else {p: (c.blocks, c.label, c.marks) for p, c in panel.cells.items()}


PAIRS = [(name, k) for name in lab.problems for k in range(len(WRONG.get(_gid(lab.problems[name]), [])))]


@pytest.fixture(scope="module")
def solved():
    return {name: _run(name, fn) for name, fn in _solutions().items()}


@pytest.mark.parametrize("name,k", PAIRS, ids=[f"{n}-{k}" for n, k in PAIRS])
def test_a_wrong_kernel_looks_different_where_it_accesses_memory_differently(solved, name, k):
    right_report, right_pic, right_outs = solved[name]
    wrong_report, wrong_pic, wrong_outs = _run(name, _wrong(name, k))
    right, wrong = _accesses(right_report), _accesses(wrong_report)
    differ = 0
    for key in set(right) | set(wrong):
        if key[2] is not None and key[2] >= kd.MAX_BLOCK_PANELS:
            continue  # blocks past the first few are not drawn (the picture's note says so)
        a, b = right.get(key, {}), wrong.get(key, {})
        elements = {p for p in set(a) | set(b) if a.get(p) != b.get(p)}
        if not elements:
            continue
        differ += 1
        ca, cb = _cells(_panel(right_pic, key)), _cells(_panel(wrong_pic, key))
        assert any(ca.get(p) != cb.get(p) for p in elements), (
            f"{name} wrong #{k}: {key} accessed differently at {sorted(elements)[:5]}, drawn the same")
    answer = lambda pic: [(p.title, _cells(p)) for p in pic.panels if p.title.endswith("never written)")]
    values_differ = any(not np.allclose(right_outs[o][0], wrong_outs[o][0], equal_nan=True) for o in right_outs)
    if values_differ:
        assert answer(right_pic) != answer(wrong_pic), f"{name} wrong #{k}: other values, the same answer panel"
    drawn = lambda pic: [(p.title, p.shape, _cells(p), p.caption) for p in pic.panels]
    assert drawn(right_pic) != drawn(wrong_pic) or (name, k) in SAME_PICTURE, (
        f"{name} wrong #{k}: wrong, but drawn like the solution")


# wrong kernels whose every memory access and every output value on the drawn (first visible) case are the
# solution's: a memory picture cannot differ; the check's message says what is wrong
# (none now: softmax_rows' visible case has a row near 1000, so a kernel without the max subtracted shows its NaNs)
SAME_PICTURE: set[tuple[str, int]] = set()


def test_a_dropped_halo_load_shows_unwritten_shared_reads_and_the_wrong_values(solved):
    """Puzzle 9 (pool3) without the halo loads: the shared cells the window reads first are red '?' (read before any
    thread wrote them), the wrong outputs are red with the value left, and the caption says what was expected."""
    wrong = next(k for k in range(len(WRONG[_gid(lab.problems["pool3"])]))
                 if _run("pool3", _wrong("pool3", k))[1].panels[-1].title.startswith("s (shared"))
    _, pic, _ = _run("pool3", _wrong("pool3", wrong))
    read0 = next(p for p in pic.panels if p.title == "s (shared, block 0): read by")
    assert {p for p, c in read0.cells.items() if kd.UNINIT in c.marks} == {0, 1}
    result = next(p for p in pic.panels if p.title.startswith("out: the answer"))
    assert any(kd.BAD in c.marks for c in result.cells.values()) and "expected" in result.caption
    _, right, _ = solved["pool3"]
    a_read = next(p for p in right.panels if p.title == "a (global): read by")
    halo = sorted(p for p, c in a_read.cells.items() if kd.HALO in c.marks)
    assert halo == [6, 7] and a_read.cells[6].label == "6|0" and a_read.cells[6].blocks == (0, 1)


def test_every_picture_is_readable_at_the_notebook_width(solved):
    """Rendered as JupyterLab shows it at 100 % (matplotlib inline, 100 dpi): at most 950 px wide, every text 9 pt
    or more (12.5 px), and every cell label inside its cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, (_, pic, _) in solved.items():
        fig = kd.draw(pic)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        width, _ = fig.canvas.get_width_height()
        assert width <= 950, (name, width)
        texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert texts and min(t.get_fontsize() for t in texts) >= kd.FONT_PT, name
        # nothing wider than the figure (JupyterLab's inline figures are saved with bbox_inches="tight", which
        # would widen the picture past the notebook's column to fit an overhanging line)
        assert max(t.get_window_extent(renderer).x1 for t in texts) <= width + 1, name
        for ax in fig.axes:
            for t in ax.texts:
                x, y = t.get_position()
                if t.get_ha() != "center":
                    continue  # row numbers and captions sit outside the cells
                cell = ax.transData.transform([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)])
                box = t.get_window_extent(renderer)
                assert box.width <= abs(cell[1][0] - cell[0][0]) + 1, (name, t.get_text(), box.width)
        plt.close(fig)


def test_every_text_of_a_wrong_kernels_picture_lies_inside_the_picture():
    """Review r22, finding 6: captions (the answer panel's, an out-of-bounds one) and headlines wrap at the
    picture's width, so no part of what they say is cut off — for the first wrong kernel of every puzzle."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for p in lab.ORDER:
        pic = kernels.diagram_picture(p, _wrong(p.name, 0), 0)
        fig = kd.draw(pic)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        width, height = fig.canvas.get_width_height()
        for t in fig.findobj(matplotlib.text.Text):
            box = t.get_window_extent(renderer)
            if t.get_text():
                assert -1 <= box.x0 and box.x1 <= width + 1 and -1 <= box.y0 and box.y1 <= height + 1, (
                    p.name, t.get_text()[:80], box)
        plt.close(fig)


def test_the_readme_pictures_are_current(tmp_path):
    """README's side-by-side (docs/pictures/): every picture it shows is committed, and ours are what
    `python -m tests.make_readme_pictures` draws now (the same size, at most 0.5 % of pixels different: fonts may
    anti-alias differently between machines)."""
    from pathlib import Path

    from PIL import Image

    from tests.make_readme_pictures import PICTURES, draw_all

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"!\[[^\]]*\]\((docs/pictures/[^)]+)\)", readme)
    assert len(shown) == 6 and all((PICTURES.parent.parent / p).is_file() for p in shown), shown
    for fresh in draw_all(tmp_path):
        committed = np.asarray(Image.open(PICTURES / fresh.name).convert("L"), dtype=np.int16)
        now = np.asarray(Image.open(fresh).convert("L"), dtype=np.int16)
        assert committed.shape == now.shape, fresh.name
        assert (np.abs(committed - now) > 32).mean() < 0.005, f"{fresh.name}: run python -m tests.make_readme_pictures"


def _barrier_in_an_if() -> str:
    """The solution's dot with the tree's barrier moved inside `if t < stride:` (only the working threads reach it)."""
    from pathlib import Path

    from grader.scratch import load_notebook, solution_cells

    src = solution_cells(load_notebook(Path(lab.__file__).parents[2] / "solutions" / "lab05b_kernel_puzzles" /
                                       "lab05b_kernel_puzzles.ipynb"))["dot"]
    right = "            s[t] += s[t + stride]\n        cuda.syncthreads()\n"
    assert right in src, "the solution's tree changed: update this test's edit"
    return src.replace(right, "            s[t] += s[t + stride]\n            cuda.syncthreads()\n")


def test_what_memory_does_not_show_is_written_in_red_above_the_picture(solved):
    """A barrier inside an `if` leaves memory as the right kernel does on the executor (r18 F5): the picture's
    memory panels can be the same, so the check's finding is drawn above them, and the right kernel has none."""
    import matplotlib

    matplotlib.use("Agg")
    fn = kernels.load_kernel(_barrier_in_an_if(), "dot", NS, cuda)
    _, pic, _ = _run("dot", fn)
    assert pic.problem.startswith("barrier divergence") and not solved["dot"][1].problem
    fig = kd.draw(pic)
    red = [t for t in fig.texts if t.get_text().startswith("the check fails: barrier divergence")]
    assert red and red[0].get_color() == "#cb181d" and red[0].get_fontsize() >= kd.FONT_PT


def test_an_unpadded_transpose_tile_shows_the_bank_its_column_read_needs(solved):
    """The unpadded tile reads the same elements as the padded one (same threads, same values): only the banks
    differ. Its picture marks, in the shared read panel, the elements one warp-wide read takes from ONE bank (a
    column of the 32-wide tile) and says how many passes that costs; the padded tile's picture marks none."""
    wrong = next(k for k in range(len(WRONG[_gid(lab.problems["transpose"])]))
                 if "bank conflicts" in _failure("transpose", _wrong("transpose", k)))
    _, pic, _ = _run("transpose", _wrong("transpose", wrong))
    read0 = next(p for p in pic.panels if p.title.endswith("(shared, block 0): read by"))
    marked = sorted(p for p, c in read0.cells.items() if kd.BANK in c.marks)
    cols = read0.shape[1]
    assert len(marked) > 1 and len({p % cols for p in marked}) == 1, f"one column of the tile: {marked}"
    assert "bank conflict" in read0.caption and "passes instead of 1" in read0.caption, read0.caption
    _, right, _ = solved["transpose"]
    assert not any(kd.BANK in c.marks for p in right.panels for c in p.cells.values())
