"""Ground truth for occupancy: NVIDIA's own calculator, ``cuda_occupancy.h``, compiled with g++ (no GPU needed).

``gpucourse.occupancy`` and lab 5's graded answers must agree with the header on every configuration tested here —
blocks per SM, the block count each limit allows, every limiting factor, and the registers and shared memory
allocated per block — for compute capability 8.0 (A100) and 9.0 (H100/H200): every warp count with every register
count 0…255, every block size 1…1024 (most not multiples of 32), shared memory up to the opt-in maximum, with and without the
opt-in, and every carve-out preference.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpucourse import hardware, occupancy, occupancy_nvidia

DEVICES = {"sm_80": hardware.A100_SXM, "sm_90": hardware.H100_SXM}


@pytest.fixture(scope="module")
def nvidia(tmp_path_factory):
    absent = occupancy_nvidia.missing()
    if absent:
        pytest.skip("NVIDIA's occupancy calculator cannot be built here: missing " + "; ".join(absent))
    return occupancy_nvidia.NvidiaOccupancy.build(tmp_path_factory.mktemp("cuda_occupancy"))


def ours(cfg, limits):
    threads, regs, smem, opt_in, carveout = cfg
    return occupancy.occupancy(threads, regs, smem, limits, opt_in=opt_in, carveout=carveout)


def assert_agree(nvidia, device, configs):
    """Every field the header returns, for every configuration; reports the first few disagreements."""
    limits = occupancy.sm_limits(DEVICES[device])
    theirs = nvidia.run(occupancy_nvidia.DEVICES[device], configs)
    bad = []
    for cfg, h in zip(configs, theirs):
        o = ours(cfg, limits)
        mine = (o.blocks_per_sm, o.by, o.limiters, o.registers_per_block, o.shared_bytes_per_block)
        want = (h.blocks, h.by, h.limiters, h.registers_per_block, h.shared_bytes_per_block)
        if mine != want:
            bad.append(f"{cfg}: gpucourse {mine} vs cuda_occupancy.h {want}")
    assert not bad, f"{len(bad)} of {len(configs)} configurations disagree on {device}, e.g.\n" + "\n".join(bad[:5])
    return theirs


def test_device_properties_match_the_course_figures():
    """The properties fed to the header are the devices' own; gpucourse.hardware must say the same."""
    for device, gpu in DEVICES.items():
        props, lim = occupancy_nvidia.DEVICES[device], occupancy.sm_limits(gpu)
        assert (props["computeMajor"], props["computeMinor"]) == gpu.compute_capability
        assert props["regsPerMultiprocessor"] == lim["registers"] and props["regsPerBlock"] == lim["registers_per_block"]
        assert props["sharedMemPerMultiprocessor"] == lim["shared_memory_bytes"] == lim["shared_carveouts"][-1]
        assert props["sharedMemPerBlock"] == lim["shared_per_block"]
        assert props["sharedMemPerBlockOptin"] == lim["shared_per_block_optin"]
        assert props["reservedSharedMemPerBlock"] == lim["shared_reserved_per_block"]
        assert props["maxThreadsPerMultiprocessor"] // props["warpSize"] == lim["max_warps"]
        assert props["numSms"] == gpu.sm_count


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_every_warp_count_register_count_and_block_size(nvidia, device):
    """Threads enter the warp and register limits only as warps = ceil(threads / 32): every warp count 1…32 ×
    every register count 0…255 (each with a random, mostly ragged, block size of that many warps), then every
    block size 1…1024 × 12 random register counts — 20,480 configurations per device."""
    rng = np.random.default_rng(11)
    configs = [(int(32 * w - rng.integers(0, 32)), r, 0, False, None) for w in range(1, 33) for r in range(0, 256)]
    configs += [(t, int(r), 0, False, None) for t in range(1, 1025) for r in rng.integers(1, 256, size=12)]
    assert_agree(nvidia, device, configs)


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_shared_memory_opt_in_and_carveouts(nvidia, device):
    """Shared memory from 0 to past the opt-in maximum (both sides of every boundary), with and without the
    opt-in, every carve-out preference; random block sizes and register counts."""
    lim = occupancy.sm_limits(DEVICES[device])
    rng = np.random.default_rng(7)
    edges = [0, 1, 127, 128, 129, lim["shared_per_block"] - 1024, lim["shared_per_block"] - 1,
             lim["shared_per_block"], lim["shared_per_block"] + 1, lim["shared_per_block_optin"] - 1,
             lim["shared_per_block_optin"], lim["shared_per_block_optin"] + 1]
    edges += [c - 1024 + d for c in lim["shared_carveouts"] if c for d in (-1, 0, 1)]  # a carve-out exactly full
    configs = []
    for smem in edges + [int(s) for s in rng.integers(0, lim["shared_per_block_optin"] + 4096, size=3000)]:
        for opt_in in (False, True):
            carveout = rng.choice([None, None, 0, 25, 50, 100, int(rng.integers(0, 101))])
            threads, regs = int(rng.integers(1, 1025)), int(rng.integers(0, 256))
            configs.append((threads, regs, max(smem, 0), opt_in, None if carveout is None else int(carveout)))
    assert_agree(nvidia, device, configs)


def test_the_cases_the_issue_cites(nvidia):
    h = nvidia.run(occupancy_nvidia.DEVICES["sm_90"], [(32, 81, 0, False, None), (257, 200, 0, False, None)])
    assert h[0].blocks == 20 and h[1].blocks == 0
    lim = occupancy.sm_limits(hardware.H100_SXM)
    small, big = occupancy.occupancy(32, 81, 0, lim), occupancy.occupancy(257, 200, 0, lim)
    assert (small.blocks_per_sm, big.blocks_per_sm) == (20, 0)
    assert 65536 // (2816 * 1) == 23  # what a per-SM division would have said for the first
    assert "rounds 9 warps up to 12" in big.why_zero


def test_a_per_sm_division_disagrees_with_the_header(nvidia):
    """The old rule (registers as one per-SM pool) is what this test exists to catch: it must be wrong often."""
    configs = [(t, r, 0, False, None) for t, r in itertools.product(range(32, 1025, 32), range(1, 256))]
    h = nvidia.run(occupancy_nvidia.DEVICES["sm_90"], configs)
    wrong = 0
    for (threads, regs, *_), res in zip(configs, h):
        warps, per_warp = threads // 32, -(-regs * 32 // 256) * 256
        per_sm = min(64 // warps, 65536 // (per_warp * warps), 32)
        wrong += per_sm != res.blocks
    assert wrong > 300, wrong


def _lab5_cases(seeds):
    from grader.labs import lab05_kernels as lab5

    problem = lab5.problems["max_registers"]
    assert problem.has_answers()  # the reference and generator: grader/answers/lab05_kernels.py
    cases = list(problem.visible)
    for seed in seeds:
        cases += problem.hidden(np.random.default_rng(seed))
    return lab5, problem, cases


def test_lab5_reference_and_every_case_agree_with_the_header(nvidia):
    """Lab 5's graded answer (the largest register count keeping a target of resident blocks), on its visible cases
    and the hidden cases of many seeds (students' seeds differ), checked against the header itself: at the answer
    the header holds the target, one register more it does not (unless the answer is the top count, 255), and for
    None not even 1 register per thread holds it; the limiter is the header's there."""
    lab5, problem, cases = _lab5_cases(range(25))
    by_device = {"sm_90": [], "sm_80": []}
    for case in cases:
        threads, smem, target, limits = case.args
        device = "sm_90" if limits == lab5.LIMITS["H100"] else "sm_80"
        regs, limiter = problem.reference(*case.args, **case.kwargs)
        opt_in = bool(case.kwargs.get("opt_in"))
        at = regs or 1
        probes = [(threads, at, smem, opt_in, None)]
        if regs and regs < 255:  # one register more must lose the target
            probes.append((threads, regs + 1, smem, opt_in, None))
        by_device[device].append((case, target, regs, limiter, probes))
    seen = {"None": 0, "255": 0, "granule": 0}
    for device, items in by_device.items():
        header = iter(nvidia.run(occupancy_nvidia.DEVICES[device], [cfg for *_, probes in items for cfg in probes]))
        for case, target, regs, limiter, probes in items:
            there = next(header)
            assert (there.blocks >= target) == (regs is not None), f"{device} {case.args[:3]}: {regs}, header {there}"
            assert limiter == next(k for k in occupancy.LIMITERS if k in there.limiters), (device, case.args[:3])
            if len(probes) == 2:
                assert next(header).blocks < target, f"{device} {case.args[:3]}: {regs + 1} registers still fit"
            seen["None" if regs is None else "255" if regs == 255 else "granule"] += 1
            assert regs is None or regs == 255 or regs % 8 == 0
    assert min(seen.values()) >= 25 * 3, seen


def test_hidden_cases_cover_what_the_spec_names():
    from gpucourse import occupancy as occ
    from grader.answers.lab05_kernels import per_sm_division

    lab5, problem, cases = _lab5_cases([0])
    cases = cases[len(problem.visible):]
    threads = [c.args[0] for c in cases]
    assert any(t % 32 for t in threads), "a block size that is not a multiple of 32"
    assert {id(c.args[3]) for c in cases} == {id(v) for v in lab5.LIMITS.values()}, "both GPUs"
    assert any(c.kwargs.get("opt_in") for c in cases) and any(c.args[1] == 48 * 1024 for c in cases)
    results = [problem.reference(*c.args, **c.kwargs) for c in cases]
    assert {r[1] for r in results} >= {"warps", "registers", "shared_memory", "blocks"}, "every limiter"
    assert {r[1] for r, c in zip(results, cases) if r[0] is None} >= {"warps", "shared_memory", "blocks"}
    assert any(r[0] == 255 for r in results) and any(r[0] is not None and r[0] % 8 == 0 for r in results)
    # a single forward call of the model (at the top count) and the per-SM register division both fail some case
    top = [(255 if occ.occupancy(c.args[0], 255, c.args[1], c.args[3], **c.kwargs).blocks_per_sm >= c.args[2]
            else None) for c in cases]
    assert top != [r[0] for r in results]
    assert sum(r[0] is not None and r[0] < per_sm_division(c.args[0], c.args[2], c.args[3])
               for r, c in zip(results, cases)) >= 3
    # the same kernel with and without the opt-in, and on sm_80 and sm_90
    assert any(a.args == b.args and a.kwargs != b.kwargs for a in cases for b in cases)
    assert any(a.args[:3] == b.args[:3] and a.args[3] is not b.args[3] for a in cases for b in cases)
