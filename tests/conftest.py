"""Shared pytest setup: GPU-marked tests run only where the course's backend is an NVIDIA GPU."""

from __future__ import annotations

import os

import pytest

# Sandbox users of each pytest worker's own (grader/sandbox.py: UID_BASE + slot): the process limit (RLIMIT_NPROC)
# counts every task of a slot's user, so two workers grading at once with the same users shared one limit, and a
# check process was killed "by a resource limit" beside another grading test (issue 26's flaky observation).
# Read when grader.sandbox is imported, which is after this file.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
os.environ.setdefault("GPUCOURSE_SANDBOX_UID_BASE", str(64000 + 1000 * int(_WORKER.removeprefix("gw") or 0)))


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    import gpucourse as gc

    if gc.gpu_available():
        return
    reason = f"needs an NVIDIA GPU: {gc.get_backend().gpu.reason}"
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _fresh_answer_sites():
    """A problem caches where its answers live (``Problem.answer_sites``) the first time it is locked. A test that
    hides the answer side (as in the student edition) would leave a cache without the references for the tests
    after it in the same worker: drop every cache after each test."""
    yield
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("grader.labs.") and isinstance(getattr(module, "problems", None), dict):
            for problem in module.problems.values():
                problem.__dict__.pop("_answer_sites", None)
