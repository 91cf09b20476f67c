"""gpucourse.waves: a pool of slots running equal blocks takes ceil(n / slots) waves."""

import math

import pytest

from gpucourse import waves


@pytest.mark.parametrize("n, slots", [(4, 4), (5, 4), (3, 4), (9, 4), (1, 1)])
def test_measured_waves_are_the_ceiling(n, slots):
    assert abs(waves.measured_waves(n, slots, block_s=0.05) - math.ceil(n / slots)) < 0.5


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="n_blocks >= 1"):
        waves.run_blocks(0, 4)


def test_wave_hidden_cases_hold_the_boundaries():
    import numpy as np

    from grader.labs import lab05_kernels as lab

    from grader.answers.lab05_kernels import wave_reference

    assert lab.WAVES.has_answers()
    cases = [c.args for c in lab.WAVES.hidden(np.random.default_rng(7))]
    assert any(b % (s * p) == 0 for b, p, s in cases)  # an exact multiple: slowdown 1.0
    assert any(b % (s * p) == 1 and b > s * p for b, p, s in cases)  # one block over a wave
    assert any(b < s for b, p, s in cases)  # fewer blocks than SMs
    # a grid of millions of blocks: predicted, since running it on gpucourse.waves' pool of 50 ms slots would take
    # far longer than a check's time limit (tests/attacks/lab05_kernels.py measures instead of predicting)
    assert any(math.ceil(b / (s * p)) * 0.05 > 10 * lab.WAVES.time_limit for b, p, s in cases)
    assert wave_reference(133, 1, 132) == (2, 264 / 133) and wave_reference(66, 1, 132) == (1, 2.0)
