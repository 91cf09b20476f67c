"""Attacks on lab05b_kernel_puzzles from the student edition alone: none to write.

Every exercise is a CUDA kernel, judged on its outputs *and* on the executor's report of how it got them (reads,
writes, barriers, shared memory, divergence budgets). Nothing installed writes a kernel: gpucourse.simt runs and
measures the student's kernel, the exercise side (grader/labs/lab05b_kernel_puzzles.py) holds specs, launches and
budgets, and no course notebook defines a puzzle's kernel (python -m grader solution-leaks compares every solution
kernel's normalised syntax tree with every function of the edition, tests/test_student_edition.py). A NumPy
one-liner that computes the right output is no kernel: the check refuses anything but a @cuda.jit kernel."""

ATTACKS: dict[str, list[str]] = {}
