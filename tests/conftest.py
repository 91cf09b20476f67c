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
