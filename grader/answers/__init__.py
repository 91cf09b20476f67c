"""The answer side of the labs that are split (grader/DESIGN.md): references and hidden-case
generators, one module per lab, named as its exercise side in ``grader.labs``. The instructor's
only: not in the student edition, hidden in every grading sandbox."""
