"""Warp-level intrinsics on the executor, against numba-cuda's documented semantics and its own tests.

numba's CUDA simulator has no warp intrinsics, so the ground truth here is (a) the expected values of
numba-cuda's tests/cudapy/test_warp_ops.py (each kernel below names the test it follows; written anew, not
copied), (b) numba-cuda's reference docs (docs/source/reference/kernel.rst, "Warp Intrinsics") and (c) the
PTX ISA's shfl.sync definition for the clamp value numba-cuda passes (intrinsics.py: c = 0x1f, 0 for shfl_up):
only bits 4:0 of the lane operand count, and a source lane outside the warp gives the caller's own value.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucourse import simt
from tests.simt_corpus import kernels as K

cuda = simt.cuda
FULL = 0xFFFFFFFF


@cuda.jit
def shfl_idx(out, src):  # test_shfl_sync_idx: every lane reads lane `src`
    i = cuda.grid(1)
    out[i] = cuda.shfl_sync(FULL, i, src)


@cuda.jit
def shfl_up(out, delta):  # test_shfl_sync_up
    i = cuda.grid(1)
    out[i] = cuda.shfl_up_sync(FULL, i, delta)


@cuda.jit
def shfl_down(out, delta):  # test_shfl_sync_down
    i = cuda.grid(1)
    out[i] = cuda.shfl_down_sync(FULL, i, delta)


@cuda.jit
def shfl_xor(out, lanes):  # test_shfl_sync_xor
    i = cuda.grid(1)
    out[i] = cuda.shfl_xor_sync(FULL, i, lanes)


@cuda.jit
def shfl_value(out, value):  # test_shfl_sync_types: lane 0's value, any of int32/int64/float32/float64
    i = cuda.grid(1)
    out[i] = cuda.shfl_sync(FULL, value, 0)


def launch(kernel, n, *args, block=None):
    out = np.zeros(n, dtype=args[0].dtype if args and isinstance(args[0], np.ndarray) else np.int64)
    simt.run(kernel, 1, block or n, out, *args)
    return out


@pytest.mark.parametrize("src", [0, 4, 31])
def test_shfl_sync_reads_one_lane(src):
    np.testing.assert_array_equal(launch(shfl_idx, 32, src), np.full(32, src))


def test_shfl_sync_takes_the_source_lane_mod_32_and_warns():
    # PTX shfl.sync.idx with c = 0x1f uses b[4:0]: lane 33 is lane 1 (numba-cuda's docstring says "the caller's own
    # value"; the hardware and CUDA C's __shfl_sync documentation say srcLane mod width)
    out = np.zeros(32, np.int64)
    r = simt.run(shfl_idx, 1, 32, out, 33)
    np.testing.assert_array_equal(out, np.full(32, 1))
    assert any("low 5 bits" in w for w in r.warnings)


def test_shfl_up_and_down_keep_the_callers_value_outside_the_warp():
    exp_up = np.arange(32)
    exp_up[4:] -= 4  # test_shfl_sync_up: lanes 0..3 keep their own value
    np.testing.assert_array_equal(launch(shfl_up, 32, 4), exp_up)
    exp_down = np.arange(32)
    exp_down[:-4] += 4  # test_shfl_sync_down: lanes 28..31 keep their own value
    np.testing.assert_array_equal(launch(shfl_down, 32, 4), exp_down)


def test_shfl_xor_is_the_butterfly():
    np.testing.assert_array_equal(launch(shfl_xor, 32, 16), np.arange(32) ^ 16)
    np.testing.assert_array_equal(launch(shfl_xor, 32, 1), np.arange(32) ^ 1)


@pytest.mark.parametrize("value", [np.int32(-1), np.int64(1 << 42), np.float32(np.pi), np.float64(np.pi)])
def test_shfl_carries_every_type(value):
    out = np.zeros(32, dtype=value.dtype)
    simt.run(shfl_value, 1, 32, out, value)
    np.testing.assert_array_equal(out, np.full(32, value))


def test_shfl_in_a_second_warp_uses_lane_numbers():
    out = np.zeros(64, np.int64)
    simt.run(shfl_idx, 1, 64, out, 3)
    np.testing.assert_array_equal(out, [3] * 32 + [35] * 32)  # lane 3 of each warp


@cuda.jit
def warp_sum(x, out):
    """The classic shuffle reduction: after 5 xor steps every lane holds its warp's sum."""
    i = cuda.grid(1)
    v = x[i]
    step = 16
    while step > 0:
        v += cuda.shfl_xor_sync(FULL, v, step)
        step //= 2
    out[i] = v


def test_warp_reduction_with_shuffles():
    x = np.arange(96, dtype=np.float64)
    out = np.zeros_like(x)
    r = simt.run(warp_sum, 3, 32, x, out)
    np.testing.assert_array_equal(out, np.repeat(x.reshape(3, 32).sum(axis=1), 32))
    assert r.ok and r.race_count == 0 and r.total("global", "r") == 96


@cuda.jit
def votes(pred, out_all, out_any, out_eq, out_ballot):  # test_vote_sync_all/any/eq/ballot
    i = cuda.grid(1)
    p = pred[i]
    out_all[i] = cuda.all_sync(FULL, p)
    out_any[i] = cuda.any_sync(FULL, p)
    out_eq[i] = cuda.eq_sync(FULL, p)
    out_ballot[i] = cuda.ballot_sync(FULL, p)


def _votes(pred):
    outs = [np.zeros(32, np.int32) for _ in range(3)] + [np.zeros(32, np.uint32)]
    simt.run(votes, 1, 32, pred, *outs)
    return outs


def test_votes_follow_numba_cudas_tests():
    ones = np.ones(32, np.int32)
    a, b, e, bal = _votes(ones)
    assert a.all() and b.all() and e.all() and (bal == 0xFFFFFFFF).all()
    last_zero = ones.copy()
    last_zero[-1] = 0
    a, b, e, bal = _votes(last_zero)
    assert not a.any() and b.all() and not e.any() and (bal == 0x7FFFFFFF).all()
    two = np.zeros(32, np.int32)
    two[[2, 5]] = 1
    a, b, e, bal = _votes(two)
    assert not a.any() and b.all() and not e.any() and (bal == (1 << 2 | 1 << 5)).all()
    a, b, e, bal = _votes(np.zeros(32, np.int32))
    assert not a.any() and not b.any() and e.all() and (bal == 0).all()


@cuda.jit
def ballot_value(out):
    out[0] = cuda.ballot_sync(FULL, True)


def test_ballot_is_an_int32_as_in_numba_cuda():
    out = np.zeros(1, np.int64)
    simt.run(ballot_value, 1, 32, out)
    assert out[0] == -1  # int32 0xFFFFFFFF: stored into uint32 it reads 0xFFFFFFFF (test_vote_sync_ballot)


@cuda.jit
def independent_scheduling(out):  # test_independent_scheduling: four groups of lanes, four masks
    i = cuda.threadIdx.x
    if i % 4 == 0:
        b = cuda.ballot_sync(0x11111111, True)
    elif i % 4 == 1:
        b = cuda.ballot_sync(0x22222222, True)
    elif i % 4 == 2:
        b = cuda.ballot_sync(0x44444444, True)
    else:
        b = cuda.ballot_sync(0x88888888, True)
    out[i] = b


def test_ballots_with_disjoint_masks_in_divergent_branches():
    out = np.zeros(32, np.uint32)
    r = simt.run(independent_scheduling, 1, 32, out)
    np.testing.assert_array_equal(out, np.tile([0x11111111, 0x22222222, 0x44444444, 0x88888888], 8))
    assert r.ok


@cuda.jit
def active(out):  # test_activemask: even lanes and odd lanes take different branches
    i = cuda.grid(1)
    if i % 2 == 0:
        out[i] = cuda.activemask()
    else:
        out[i] = cuda.activemask()


@cuda.jit
def lanemask(out):  # test_lanemask_lt
    i = cuda.grid(1)
    out[i] = cuda.lanemask_lt()


def test_activemask_and_lanemask_lt():
    out = np.zeros(32, np.uint32)
    simt.run(active, 1, 32, out)
    np.testing.assert_array_equal(out, np.tile([0x55555555, 0xAAAAAAAA], 16))
    out = np.zeros(32, np.uint32)
    simt.run(lanemask, 1, 32, out)
    np.testing.assert_array_equal(out, [(1 << i) - 1 for i in range(32)])


@cuda.jit
def match(x, out_any, out_all):  # test_match_any_sync / test_match_all_sync
    i = cuda.grid(1)
    out_any[i] = cuda.match_any_sync(0x3FF, x[i])
    m, ok = cuda.match_all_sync(0x3FF, x[i])
    out_all[i] = m if ok else 0


def test_match_any_and_all():
    x = np.arange(10, dtype=np.int32) % 2
    a, b = np.zeros(10, np.int32), np.zeros(10, np.int32)
    simt.run(match, 1, 10, x, a, b)
    np.testing.assert_array_equal(a, np.tile([0b0101010101, 0b1010101010], 5))
    np.testing.assert_array_equal(b, 0)
    x = np.zeros(10, np.int32)
    simt.run(match, 1, 10, x, a, b)
    np.testing.assert_array_equal(b, 0b1111111111)


@cuda.jit
def useful_syncwarp(out):  # test_useful_syncwarp: lane 0 writes, syncwarp, everyone reads
    i = cuda.grid(1)
    if i == 0:
        out[0] = 42
    cuda.syncwarp(FULL)
    out[i] = out[0]


@cuda.jit
def no_syncwarp(res):  # the same tree with the syncwarps left out: a race since Volta
    sm = cuda.shared.array(32, np.int32)
    i = cuda.grid(1)
    sm[i] = i
    if i < 16:
        sm[i] = sm[i] + sm[i + 16]
    if i == 0:
        res[0] = sm[0]


def test_syncwarp_orders_memory_between_its_lanes():
    out = np.zeros(32, np.int32)
    r = simt.run(useful_syncwarp, 1, 32, out)
    assert (out == 42).all() and r.race_count == 0
    res = np.zeros(1, np.int32)
    r = simt.run(K.sync_coop_syncwarp, 1, 32, res)  # test_sync.py's coop_syncwarp: a tree ordered by syncwarps
    assert res[0] == sum(range(32)) and r.ok, r.problems()
    r = simt.run(no_syncwarp, 1, 32, np.zeros(1, np.int32))
    assert r.race_count > 0 and r.races[0].space == "shared"


@cuda.jit
def lone_shuffle(out):
    i = cuda.grid(1)
    if i < 16:  # lanes 16..31 never call it, but the mask names them
        out[i] = cuda.shfl_down_sync(FULL, i, 1)
    else:
        cuda.syncthreads()


def test_a_mask_naming_a_lane_that_waits_elsewhere_is_reported():
    with pytest.raises(simt.KernelError, match=r"lane 16 .* named in the mask, does not call it: it waits at "
                                               r"cuda\.syncthreads\(\)") as info:
        simt.run(lone_shuffle, 1, 32, np.zeros(32, np.int64))
    assert "line" in str(info.value) and info.value.report is not None


@cuda.jit
def skipped_shuffle(out):
    i = cuda.grid(1)
    v = i
    if i < 16:
        v = cuda.shfl_down_sync(FULL, i, 8)
    out[i] = v


def test_lanes_that_skip_a_shuffle_their_mask_names_are_reported():
    out = np.zeros(32, np.int64)
    r = simt.run(skipped_shuffle, 1, 32, out)
    kinds = {s.kind for s in r.sync_errors}
    assert "warp mask" in kinds  # lanes 16..31 went past the shuffle
    assert "shuffle from an inactive lane" in kinds  # lanes 8..15 read lanes 16..23, which did not take part
    assert r.uninitialized_count >= 8  # those values are undefined: storing them is a use
    np.testing.assert_array_equal(out[:8], np.arange(8) + 8)


@cuda.jit
def not_in_own_mask(out):
    i = cuda.grid(1)
    out[i] = cuda.shfl_sync(0x1, i, 0)


def test_a_lane_outside_its_own_mask_is_an_error():
    with pytest.raises(simt.KernelError, match="does not include its own lane"):
        simt.run(not_in_own_mask, 1, 2, np.zeros(2, np.int64))


@cuda.jit
def partial_warp_sum(x, out):
    i = cuda.grid(1)
    if i >= x.size:
        return
    v = x[i]
    v += cuda.shfl_down_sync(FULL, v, 1)
    out[i] = v


def test_exited_lanes_are_not_waited_for_but_reading_them_is_undefined():
    x = np.arange(20, dtype=np.float64)
    out = np.zeros_like(x)
    r = simt.run(partial_warp_sum, 1, 32, x, out)  # lanes 20..31 exit first: the shuffle still completes
    np.testing.assert_array_equal(out[:19], x[:19] + x[1:20])
    assert any(s.kind == "shuffle from an inactive lane" and "lane 20" in s.message for s in r.sync_errors)
    assert r.uninitialized_count == 1  # lane 19 stored lane 20's undefined value


@cuda.jit
def masks_must_be_ints(out):
    out[0] = cuda.ballot_sync(1.0, True)


def test_a_float_mask_is_refused_as_numba_cuda_refuses_it():
    with pytest.raises(simt.KernelError, match="Mask type must be an integer"):
        simt.run(masks_must_be_ints, 1, 1, np.zeros(1, np.int64))
