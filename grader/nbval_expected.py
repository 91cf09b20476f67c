"""pytest plugin: expected outputs for ``NBVAL_CHECK_OUTPUT`` cells, kept in the cell's source.

Notebooks are committed without outputs, and nbval only compares outputs of cells that were run in
the committed file. So a checked cell states its expected output as a trailing comment block,
readable in any diff, like a doctest::

    # NBVAL_CHECK_OUTPUT
    print(2 * 3)
    # Expected output:
    # 6

When nbval reads a notebook, this plugin turns that block into the cell's reference output (stdout),
and nbval then fails the cell if the executed output differs. Registered through the ``pytest11``
entry point.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

MARKER = re.compile(r"^# Expected output:\s*$", re.M)


def expected_output(source: str) -> str | None:
    m = MARKER.search(source)
    if not m:
        return None
    lines = source[m.end():].lstrip("\n").splitlines()
    return "".join(line[2:] + "\n" if line.startswith("# ") else line[1:] + "\n" for line in lines)


def inject(nb) -> None:
    for cell in nb.cells:
        if cell.cell_type != "code" or "NBVAL_CHECK_OUTPUT" not in cell.source:
            continue
        text = expected_output(cell.source)
        if text is None:
            raise ValueError(
                "cell marked NBVAL_CHECK_OUTPUT has no '# Expected output:'"
                f" block:\n{cell.source[:200]}"
            )
        from nbformat.v4 import new_output

        cell.outputs = [new_output("stream", name="stdout", text=text)]
        cell.execution_count = 1


def pytest_configure(config) -> None:
    try:
        import nbformat
        import nbval.plugin as nbval_plugin
    except ImportError:  # nbval not installed: nothing to do
        return
    if getattr(nbval_plugin.nbformat, "_gpucourse_expected", False):
        return

    def read(*args, **kwargs):
        nb = nbformat.read(*args, **kwargs)
        inject(nb)
        return nb

    proxy = SimpleNamespace(
        **{k: getattr(nbformat, k) for k in dir(nbformat) if not k.startswith("__")}
    )
    proxy.read = read
    proxy._gpucourse_expected = True
    nbval_plugin.nbformat = proxy
