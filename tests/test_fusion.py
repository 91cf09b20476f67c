"""gpucourse.fusion: the dispatch + bytes + page-fault model of a fused vs unfused chain, and its measurements.
No speed is asserted here (timings belong to notebooks and the benchmark); the arithmetic and the plumbing are."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gpucourse as gc
from gpucourse.fusion import FusionModel, Side


def test_model_terms_ratio_and_table():
    m = FusionModel(Side(3, 8e6, 1000, 2e-3), Side(1, 4e6, 0, 5e-4), dispatch=10e-6, bandwidth=10e9, fault_cost=1e-6)
    assert m.terms(m.unfused) == pytest.approx({"dispatch": 30e-6, "memory": 8e-4, "page faults": 1e-3})
    assert m.predicted(m.fused) == pytest.approx(10e-6 + 4e-4)
    assert m.byte_ratio == 2.0 and m.measured_ratio == pytest.approx(4.0)
    assert m.predicted_ratio == pytest.approx((30e-6 + 8e-4 + 1e-3) / (10e-6 + 4e-4))
    terms = m.terms(m.unfused)
    assert max(terms, key=terms.get) == "page faults"
    assert "byte ratio 2.00×" in m.table() and "unfused" in m.table()


@pytest.mark.skipif(sys.platform == "win32", reason="getrusage (page-fault counts) does not exist on Windows")
def test_page_faults_are_counted_and_cost_something():
    fresh = gc.fusion.page_faults(lambda: np.ones(1 << 22, np.uint8), repeat=3)  # 4 MiB of new memory per call
    assert fresh is not None and fresh >= 0
    cost = gc.fusion.fault_cost(pages=1024, repeat=2)
    assert cost is not None and 0 < cost < 1e-3  # seconds per fault: well under a millisecond anywhere


def test_explain_measures_both_sides_and_calibrates_bandwidth():
    import jax
    import jax.numpy as jnp

    mul, add = jax.jit(lambda a, b: a * b), jax.jit(lambda a, b: a + b)
    fused = jax.jit(lambda a, b: a * b + b)
    args = (jnp.ones(4096, jnp.float32), jnp.ones(4096, jnp.float32))
    tiny = (jnp.ones(1, jnp.float32), jnp.ones(1, jnp.float32))
    m = gc.fusion.explain(lambda a, b: add(mul(a, b), b), fused, args, tiny, calls=(2, 1),
                          nbytes=(5 * 4096 * 4, 3 * 4096 * 4), repeat=3, rounds=1)
    assert m.unfused.calls == 2 and m.fused.calls == 1 and m.byte_ratio == pytest.approx(5 / 3)
    assert m.unfused.seconds > 0 and m.fused.seconds > 0 and m.dispatch > 0 and m.bandwidth > 0
    t, faults = gc.fusion.best_run(fused, *args, repeat=3)
    assert t > 0 and faults >= 0


def test_explain_keeps_every_round_and_returns_the_median_not_the_best(monkeypatch):
    # three rounds with unfused/fused = 2.0, 6.0, 3.0 and no dispatch or faults: model ratio = byte ratio = 2, so
    # measured/model = 1.0, 3.0, 1.5; the round kept is the median (1.5), not the one that agrees best (1.0)
    times = iter([((2e-3, 0.0), (1e-3, 0.0)), ((6e-3, 0.0), (1e-3, 0.0)), ((3e-3, 0.0), (1e-3, 0.0))])
    monkeypatch.setattr(gc.fusion, "_best_interleaved", lambda *a: next(times))
    monkeypatch.setattr(gc.fusion, "dispatch_cost", lambda *a: 0.0)
    monkeypatch.setattr(gc.fusion, "fault_cost", lambda: None)
    m = gc.fusion.explain(None, None, (), (), calls=(3, 1), nbytes=(8e6, 4e6), rounds=3)
    assert m.rounds == pytest.approx((1.0, 3.0, 1.5)) and m.off == pytest.approx(1.5)
    assert "every round: 1.00, 3.00, 1.50" in m.table()


def test_interleaved_runs_alternate_the_two_functions():
    order = []
    gc.fusion._best_interleaved(lambda: order.append("a"), lambda: order.append("b"), (), repeat=3, warmup=1)
    assert order == ["a", "b"] * 4


def test_table_says_when_the_bandwidth_is_not_calibrated():
    # the fused call's 4,000 faults at 5 µs each (20 ms) exceed its 13 ms: explain's memory term is the 5 % floor,
    # and the table must not print the floor as a bandwidth
    floor = FusionModel(Side(3, 134e6, 12_000, 31e-3), Side(1, 67e6, 4_000, 13e-3), dispatch=7e-6,
                        bandwidth=67e6 / (0.05 * 13e-3), fault_cost=5e-6)
    assert not floor.calibrated and "not calibrated" in floor.table() and "GB/s" not in floor.table()
    ok = FusionModel(Side(3, 134e6, 0, 31e-3), Side(1, 67e6, 0, 13e-3), dispatch=7e-6, bandwidth=67e6 / 13e-3,
                     fault_cost=5e-6)
    assert ok.calibrated and "bandwidth 5.2 GB/s" in ok.table()


def _sysfs(root, top: str, sizes: dict[str, str]) -> str:
    """A fake /sys/kernel/mm/transparent_hugepage: the top-level mode, and per-size modes (Linux >= 6.8)."""
    choices = ["always", "inherit", "madvise", "never"]
    (root / "enabled").write_text(" ".join(f"[{c}]" if c == top else c for c in choices if c != "inherit") + "\n")
    (root / "hpage_pmd_size").write_text("2097152\n")
    for kib, mode in sizes.items():
        (root / f"hugepages-{kib}kB").mkdir()
        (root / f"hugepages-{kib}kB" / "enabled").write_text(" ".join(f"[{c}]" if c == mode else c for c in choices))
    return str(root)


@pytest.mark.parametrize("top, sizes, plain, madvised", [
    ("madvise", {}, 0, 2048),  # before Linux 6.8: the top-level mode, for the PMD size
    ("never", {}, 0, 0),
    ("always", {}, 2048, 2048),
    ("madvise", {"2048": "inherit", "64": "never", "16": "never"}, 0, 2048),  # this machine's kind of settings
    ("never", {"2048": "inherit", "64": "always"}, 64, 64),  # a small size set to always: JAX's buffers get them
    ("never", {"2048": "madvise", "64": "never"}, 0, 2048),  # the 2 MiB size on its own, for madvised regions
    ("always", {"2048": "never", "64": "inherit"}, 64, 64),
])
def test_huge_page_kib_reads_the_top_level_and_per_size_thp_settings(tmp_path, monkeypatch, top, sizes, plain,
                                                                    madvised):
    monkeypatch.setattr(gc.fusion, "THP", _sysfs(tmp_path, top, sizes))
    assert gc.fusion.thp_mode() == top
    assert gc.fusion.huge_page_kib(madvised=False) == plain
    assert gc.fusion.huge_page_kib(madvised=True) == madvised


def test_huge_page_kib_is_none_without_thp(tmp_path, monkeypatch):
    monkeypatch.setattr(gc.fusion, "THP", str(tmp_path / "absent"))
    assert gc.fusion.thp_mode() is None and gc.fusion.huge_page_kib(madvised=True) is None


def test_fault_bound_allows_for_the_huge_page_size_and_the_buffer(tmp_path, monkeypatch):
    # x86-64 defaults: 2 MiB pages on a 64 MiB buffer -> at most 4 KiB/2 MiB + 2 * 2 MiB / 64 MiB faults per page
    monkeypatch.setattr(gc.fusion, "THP", _sysfs(tmp_path, "madvise", {"2048": "inherit"}))
    monkeypatch.setattr(gc.fusion, "PAGE", 4096)
    monkeypatch.setattr(gc.fusion, "thp_disabled_for_this_process", lambda: False)
    assert gc.fusion.fault_bound(64 * 2**20, madvised=False) == (0, 1.0)
    kib, bound = gc.fusion.fault_bound(64 * 2**20, madvised=True)
    assert kib == 2048 and bound == pytest.approx(1 / 512 + 1 / 16)
    # an arm64 kernel with 64 KiB pages: the PMD huge page is 512 MiB, larger than half the buffer -> no useful bound
    arm = tmp_path / "arm"
    arm.mkdir()
    monkeypatch.setattr(gc.fusion, "THP", _sysfs(arm, "madvise", {"524288": "inherit"}))
    monkeypatch.setattr(gc.fusion, "PAGE", 65536)
    assert gc.fusion.fault_bound(64 * 2**20, madvised=True) == (524288, 1.0)
    # prctl(PR_SET_THP_DISABLE): no huge pages for this process, whatever the settings
    monkeypatch.setattr(gc.fusion, "thp_disabled_for_this_process", lambda: True)
    assert gc.fusion.fault_bound(64 * 2**20, madvised=True) == (0, 1.0)


def test_glibc_tunable_that_madvises_malloc_is_read(monkeypatch):
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1")
    assert gc.fusion.glibc_madvises_malloc()
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")
    assert not gc.fusion.glibc_madvises_malloc()
    monkeypatch.delenv("GLIBC_TUNABLES")
    assert not gc.fusion.glibc_madvises_malloc()
