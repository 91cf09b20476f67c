"""gpucourse.hardware.lookup: a CUDA device name to the course's datasheet figures, by form factor and memory."""

from __future__ import annotations

import pytest

import gpucourse as gc


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"), ("NVIDIA H100 PCIe", None), ("NVIDIA H100 NVL", None),
    ("NVIDIA H200", "H200 SXM 141GB"), ("NVIDIA H200 NVL", None), ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"), ("NVIDIA A100-PCIE-40GB", None), ("NVIDIA A100 80GB PCIe", None),
    ("NVIDIA GeForce RTX 4090", None), ("Tesla T4", "Tesla T4"), ("NVIDIA L4", "NVIDIA L4"), ("NVIDIA L40S", None),
    # the Grace Hopper superchip is not an H200 (96 GB HBM3 at 4.0 TB/s or 144 GB HBM3e at 4.9 TB/s)
    ("NVIDIA GH200 480GB", None), ("NVIDIA GH200 144G HBM3e", None)])
def test_lookup_matches_form_factor_and_memory_not_the_first_word(name, expected):
    spec = gc.hardware.lookup(name)
    assert (spec.name if spec else None) == expected
