"""Attacks on each lab from the student edition alone (issue 20): tests/attacks/<lab>.py holds ATTACKS =
{solution grade_id: [answer cell, ...]}, the shortest submissions a determined student assembles from installed code
(a direct call, the module loaded a second time, the helper's source pasted). tests/test_attacks.py grades them
through the grading command; each must earn less than the exercise's full marks."""
