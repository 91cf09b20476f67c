"""Shared pytest setup: GPU-marked tests run only where the course's backend is an NVIDIA GPU."""

from __future__ import annotations

import pytest


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
