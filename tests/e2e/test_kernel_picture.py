"""A student's kernel picture in a real JupyterLab (issue 22's screenshot test): the student opens the released lab 5b,
writes puzzle 9 (pool3), runs its diagram cell, and sees the picture at the notebook's width, not shrunk, its
smallest text 9 pt on screen; then drops the halo loads, runs the two cells again, and sees a different picture
with red marks where the kernel went wrong. Screenshots of both go to harness.ARTIFACTS."""

from __future__ import annotations

import base64
import io
import struct

import numpy as np
import pytest

from gpucourse import kernel_diagram as kd
from grader.scratch import load_notebook, solution_cells
from tests.grading import wrong_answer_lists

from . import harness

LAB = "lab05b_kernel_puzzles"
NOTEBOOK = f"labs/{LAB}/{LAB}.ipynb"
GID, NAME = "pool3", "pool3"
SCREEN_DPI = 96  # CSS pixels per inch at 100 % zoom (CSS Values 4: 1in = 96px): 9 pt on screen is 12 CSS px

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PICTURE_JS = """cell => {
    const img = cell.querySelector('.jp-OutputArea-output img');
    if (!img) return null;
    const area = cell.querySelector('.jp-OutputArea').getBoundingClientRect(), box = img.getBoundingClientRect();
    return {src: img.src, natural: [img.naturalWidth, img.naturalHeight], shown: [box.width, box.height],
            left: box.left, right: box.right, area: [area.left, area.right],
            scrolls: document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer, '
                                            + '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook').scrollWidth
                     > document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer, '
                                              + '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook').clientWidth};
}"""


def png_dpi(data: bytes) -> float:
    """Horizontal pixels per inch from a PNG's pHYs chunk (matplotlib writes the figure's dpi there)."""
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"pHYs":
            x, _, unit = struct.unpack(">IIB", data[pos + 8:pos + 17])
            assert unit == 1, "pHYs not in pixels per metre"
            return x * 0.0254
        pos += 12 + length
    raise AssertionError("the picture's PNG has no pHYs chunk (no dpi recorded)")


def run_cell(page, cell) -> None:
    """Run one cell in place (Ctrl+Enter in its editor) and wait until it has a new prompt number."""
    prompt = cell.query_selector(".jp-InputArea-prompt")
    before = prompt.text_content()
    cell.query_selector(".cm-content").click()
    page.keyboard.press("Control+Enter")
    page.wait_for_function("([p, b]) => /\\[\\d+\\]/.test(p.textContent) && p.textContent !== b",
                           arg=[prompt, before], timeout=240_000, polling=250)
    harness.wait_idle(page, 240_000)


def cell_with(page, text: str, without: str | None = None):
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    found = panel.locator(".jp-CodeCell", has_text=text)
    if without:
        found = found.filter(has_not_text=without)
    # JupyterLab adds a long notebook's cells in batches after the first one shows (a CI run once counted 0 here
    # while they were still coming): wait for the cell, then insist it is the only one
    found.first.wait_for(state="attached", timeout=60_000)
    assert found.count() == 1, f"expected one cell with {text!r}, found {found.count()}"
    found.first.scroll_into_view_if_needed()
    return found.first.element_handle()


def draw(page, source: str, shot: str) -> tuple[dict, bytes]:
    """Type ``source`` as the answer, run the answer cell and the diagram cell; (the picture's measures, a
    screenshot of the picture as shown)."""
    answer = cell_with(page, f"def {NAME}(", without=".check(")
    harness.replace_cell_source(page, answer, source)
    run_cell(page, answer)
    diagram = cell_with(page, f'lab.problems["{NAME}"].diagram({NAME})')
    run_cell(page, diagram)
    seen = diagram.evaluate(PICTURE_JS)
    assert seen is not None, f"no picture under the diagram cell: {diagram.inner_text()[:1500]!r}"
    img = diagram.query_selector(".jp-OutputArea-output img")
    img.scroll_into_view_if_needed()
    harness.screenshot(page, shot)
    return seen, img.screenshot()


@pytest.fixture(scope="module")
def kernels(lab_server):
    right = solution_cells(load_notebook(lab_server.checkout / "solutions" / LAB / f"{LAB}.ipynb"))[GID]
    # the corpus's kernel that stages the window in shared memory but loads no halo (the picture test's
    # tests/test_kernel_pictures.py judges the same kernel without a browser)
    dropped = [src for src in wrong_answer_lists(LAB)[GID] if "cuda.shared.array" in src and "t < 2" not in src]
    assert dropped, "the wrong-answer corpus has no pool3 kernel that drops the halo loads"
    return right, dropped[0]


def test_a_kernel_picture_is_readable_in_jupyterlab_and_shows_the_mistake(browser_context, lab_server, kernels):
    right, wrong = kernels
    page = browser_context.new_page()
    try:
        harness.open_notebook(page, lab_server, NOTEBOOK)
        run_cell(page, cell_with(page, "be = gc.setup()"))
        seen_right, shot_right = draw(page, right, "picture-01-pool3-right")
        seen_wrong, shot_wrong = draw(page, wrong, "picture-02-pool3-halo-dropped")
    finally:
        page.close()

    for what, seen in (("right", seen_right), ("wrong", seen_wrong)):
        (nat_w, nat_h), (shown_w, shown_h) = seen["natural"], seen["shown"]
        png = base64.b64decode(seen["src"].split(",", 1)[1])
        dpi = png_dpi(png)
        # the inline backend keeps the figure's dpi; the figure is at most the notebook's width (cropped tight to
        # what is drawn, so a small puzzle's picture is narrower)
        assert abs(dpi - kd.DPI) < 1 and nat_w <= kd.WIDTH_IN * kd.DPI + 2, (what, dpi, nat_w)
        scale = shown_w / nat_w  # CSS px per picture px: JupyterLab shrinks a picture wider than the column
        assert abs(shown_h / nat_h - scale) < 0.01, (what, seen)
        text_px = kd.FONT_PT / 72 * dpi * scale  # the figure's smallest text, in CSS px on screen
        assert text_px >= 9 / 72 * SCREEN_DPI, (
            f"{what}: JupyterLab shows the picture at {scale:.0%} of its size ({shown_w:.0f} of {nat_w} px): its "
            f"{kd.FONT_PT} pt text is {text_px:.1f} CSS px on screen, under 9 pt (12 px)")
        assert seen["area"][0] - 1 <= seen["left"] and seen["right"] <= seen["area"][1] + 1, (what, seen)
        assert not seen["scrolls"], f"{what}: the notebook scrolls sideways to show the picture"
        assert harness.non_blank_fraction(shot_right if what == "right" else shot_wrong) > 0.05, what

    # what the student sees change: the screenshots differ, and only the wrong kernel's has the red of a wrong
    # value or an unwritten read (kernel_diagram's BAD face #e34a33 and alarm edge #cb181d)
    a, b = (np.asarray(_image(s).convert("RGB")).astype(int) for s in (shot_right, shot_wrong))
    h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    changed = (np.abs(a[:h, :w] - b[:h, :w]).sum(axis=2) > 60).mean()
    assert a.shape != b.shape or changed > 0.01, f"the wrong kernel's picture looks like the right one's ({changed:.2%})"
    assert _red(b) > 20 * max(_red(a), 1), (_red(a), _red(b))


def _image(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png))


def _red(img: np.ndarray) -> int:
    """Pixels of kernel_diagram's alarm reds (#e34a33 wrong value, #cb181d unwritten read / race)."""
    near = lambda rgb: (np.abs(img - np.array(rgb)).sum(axis=2) < 40)
    return int((near((0xE3, 0x4A, 0x33)) | near((0xCB, 0x18, 0x1D))).sum())
