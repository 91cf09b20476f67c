"""Class-scale benchmark of the one-machine JupyterHub (not a CI test): the same workflow as
tests/hub/test_hub_workflow.py for N students (right/wrong/blank in turn), timed.

    sudo .venv/bin/python -m tests.hub.bench_hub 3 20      # prints a table, writes <artifacts>/hub-bench.json

Measures: hub start (process start → API answers), spawning every user's server (instructor + N, in parallel),
the workflow (release → fetch/fill/submit each student → collect → autograde → export), and the whole run with
user creation and tear-down. Checks the grades like the test does.
"""

from __future__ import annotations

import json
import sys
import time

from tests.e2e.harness import ARTIFACTS

from . import harness


def run(n: int) -> dict:
    reason = harness.missing_tools()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    t0 = time.monotonic()
    hub = harness.Hub(n_students=n)
    try:
        hub.setup()
        start = hub.start()
        spawn = hub.spawn_all(timeout=600)
        kinds = harness.kinds_for(hub.students)
        result = harness.workflow(hub, kinds)
        expected = harness.expected_scores()
        wrong = {s: result.grades.get(s) for s, k in kinds.items() if result.grades.get(s, (None,))[0] != expected[k]}
        assert not wrong, f"wrong grades: {wrong}"
    finally:
        hub.stop()
    return {"students": n, "hub_start_s": start, "spawn_all_s": spawn, **{f"{k}_s": v for k, v in result.seconds.items()},
            "total_with_setup_and_teardown_s": time.monotonic() - t0}


def main(argv: list[str]) -> int:
    rows = [run(int(n)) for n in (argv or ["3", "20"])]
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(f"{row[k]:.1f}" if isinstance(row[k], float) else str(row[k]) for k in keys))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "hub-bench.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
