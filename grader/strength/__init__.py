"""How strong are the hidden tests? Mutation testing, branch coverage and case families of every
lab's references.

A hidden test is strong when every plausible wrong answer fails it. This package measures that three
ways:

- :mod:`.operators` makes *mutants* of a function: one small change each (``>=`` → ``>``, ``A @ B``
  → ``B @ A``, ``min(d, w - d)`` → ``d``, a ``cuda.syncthreads()`` dropped), with mutmut's node
  operators on libcst plus a few operators for the course's own misconception families;
- :mod:`.subjects` says what to mutate for each Problem (its reference and the lab-module helpers it
  calls, or the notebook's solution where the answer is a kernel) and swaps a mutant in and out;
- :mod:`.runner` judges each mutant in-process: *killed* when the Problem's own ``compare`` rejects
  the mutant's outputs on the hidden cases (or the checker itself, ``Problem.check``, rejects a
  mutated solution), when it raises, or when it runs past its time limit;
- :mod:`.equivalents` reads ``grader/equivalent_mutants.toml``, the reviewed list of mutants that no
  test can kill;
- :mod:`.branches` measures branch coverage (coverage.py) of each reference by its hidden cases;
- :mod:`.families` tags every case with its families (dtype, shape class, result class, tie,
  wrap-around …) and checks that the hidden cases hold every family the visible ones hold.

``python -m grader.mutation [LAB ...]`` runs it all and prints the report; ``python -m
grader.benchmark`` prints the mutation score per lab.
"""
