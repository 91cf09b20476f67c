"""Korean text is a gloss, never the only way to read something: where no CJK font is installed, Hangul renders as
boxes. Every title and heading, every sentence of a notebook's prose and every line of code, spec or message that
contains Hangul also says it in English (ASCII words) in the same heading, sentence or line. (That the glosses do
render where a CJK font exists is shown by the browser test, tests/e2e/test_course_and_formgrader.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader import course

ROOT = course.ROOT
HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]+")
ENGLISH = re.compile(r"[A-Za-z]{2,}")  # a word of at least two ASCII letters
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`*\[\d\uac00-\ud7a3])|\n\s*\n|\n(?=\s*(?:[-*]|\d+\.|\|)\s)")


def unglossed(text: str) -> bool:
    """Hangul with no English word beside it (``(연산 밀도)`` alone is unglossed; ``intensity (연산 밀도)`` is fine)."""
    return bool(HANGUL.search(text)) and not ENGLISH.search(HANGUL.sub(" ", text))


def pieces(markdown: str) -> list[str]:
    """Headings (one line each) and the sentences of the rest of a markdown cell."""
    out, prose = [], []
    for line in markdown.splitlines():
        (out if line.lstrip().startswith("#") else prose).append(line)
    return out + [s for s in SENTENCE_END.split("\n".join(prose)) if s.strip()]


def notebooks() -> list[Path]:
    return sorted(p for folder in ("course", "solutions", "labs") for p in (ROOT / folder).rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def test_the_rule_catches_korean_alone():
    assert unglossed("# 1 — (연산 밀도)") and not unglossed("그래서 JAX 모델로부터?")
    assert unglossed("## 연산 밀도") and not unglossed("## Arithmetic intensity (연산 밀도)")
    assert pieces("# Title (제목)\nA sentence. 한국어 문장.\n\n- item (항목)") == \
        ["# Title (제목)", "A sentence.", "한국어 문장.", "- item (항목)"]
    assert [p for p in pieces("A sentence. 한국어 문장.") if unglossed(p)] == ["한국어 문장."]


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_korean_phrase_in_a_notebook_has_english_beside_it(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    bad = []
    for i, cell in enumerate(nb["cells"]):
        text = course.source_text(cell["source"])
        parts = pieces(text) if cell["cell_type"] == "markdown" else text.splitlines()
        bad += [f"cell {i}: {p.strip()[:160]}" for p in parts if unglossed(p)]
    assert not bad, "Korean with no English beside it (it renders as boxes without a CJK font):\n" + "\n".join(bad)


def test_every_korean_phrase_in_the_packages_and_readme_has_english_beside_it():
    files = [ROOT / "README.md", *sorted((ROOT / "grader").rglob("*.py")), *sorted((ROOT / "gpucourse").rglob("*.py"))]
    bad = [f"{f.relative_to(ROOT)}:{n}: {line.strip()[:160]}" for f in files
           for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if unglossed(line)]
    assert not bad, "\n".join(bad)
