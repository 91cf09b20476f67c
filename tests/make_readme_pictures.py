"""Draw the README's pictures of lab 5b (docs/pictures/): pool3 and dot, each for the solution and for a wrong
kernel of the corpus, beside GPU-Puzzles' pictures of the same puzzles (docs/pictures/gpu-puzzles-*.svg, from
github.com/srush/GPU-Puzzles, MIT licence). Instructor's tool: run from the repository root after changing
gpucourse/kernel_diagram.py, `python -m tests.make_readme_pictures`; tests/test_kernel_pictures.py checks the files
are current."""

from __future__ import annotations

from pathlib import Path

PICTURES = Path(__file__).resolve().parent.parent / "docs" / "pictures"
# (puzzle, which wrong kernel of tests/wrong_answers/lab05b_kernel_puzzles.py, what it gets wrong)
SHOWN = (("pool3", 1, "the halo loads dropped"), ("dot", 2, "one thread adds everything in a register"))


def draw_all(folder: Path = PICTURES) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpucourse import kernel_diagram
    from grader import kernels
    from grader.labs import lab05b_kernel_puzzles as lab
    from tests.test_lab05b_kernel_puzzles import _solutions, _wrong

    sols, out = _solutions(), []
    folder.mkdir(parents=True, exist_ok=True)
    for name, k, _ in SHOWN:
        for tag, fn in (("right", sols[name]), ("wrong", _wrong(name, k))):
            # matplotlib's defaults, whatever style ran before (a course notebook's, another test's): the same pixels
            with matplotlib.rc_context(matplotlib.rcParamsDefault):
                fig = kernel_diagram.draw(kernels.diagram_picture(lab.problems[name], fn, 0))
                path = folder / f"ours-{name}-{tag}.png"
                fig.savefig(path, metadata={"Software": None})
            plt.close(fig)
            out.append(path)
    return out


if __name__ == "__main__":
    for p in draw_all():
        print("wrote", p)
