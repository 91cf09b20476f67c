"""Lab 8's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side,
grader/labs/lab08_attention.py, is the rest of the lab; this module imports it, never the reverse
(``Problem.has_answers`` binds ``ANSWERS`` on first use where this module is installed).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..labs.lab08_attention import HEAD_DIM, attention_case, pallas_case, step_case
from ..problem import Case

# -- exercise 1 ------------------------------------------------------------------------------------


def _step_reference(m, l, acc, s, v):
    m_new = np.maximum(m, s.max(axis=1))  # (rows,)
    # a finite stand-in for the max of a row with no score yet (-inf becomes the most negative
    # float64): exp(-inf - floor) = 0, never the NaN of exp(-inf - (-inf))
    floor = np.nan_to_num(m_new)
    alpha = np.exp(m - floor)  # (rows,): the old terms, rescaled
    p = np.exp(s - floor[:, None])  # (rows, bk)
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ v


def _state(rng: np.random.Generator, rows: int, d: int, scale: float) -> tuple:
    """A running state that earlier blocks produced: folded from one or two random blocks (some
    rows fully masked so far)."""
    m, l, acc = np.full(rows, -np.inf), np.zeros(rows), np.zeros((rows, d))
    for _ in range(int(rng.integers(0, 3))):
        bk = int(rng.integers(1, 6))
        s = rng.standard_normal((rows, bk)) * scale
        s[rng.random((rows, bk)) < 0.3] = -np.inf
        m, l, acc = _step_reference(m, l, acc, s, rng.standard_normal((bk, d)))
    return m, l, acc


def _step_cases(rng: np.random.Generator) -> list[Case]:
    """Random states and blocks; logits near 1e4 (exp overflows without the max); rows all -inf in
    the state and in the block, in one of them, or neither; ties; a block of one key; a block whose
    max is below the running max (nothing to rescale) and above it."""
    cases = []
    for rows, bk, d, scale in ((1, 1, 1, 1.0), (4, 5, 3, 1.0), (3, 7, 2, 1e4), (5, 3, 4, 30.0)):
        m, l, acc = _state(rng, rows, d, scale)
        s = rng.standard_normal((rows, bk)) * scale
        s[rng.random((rows, bk)) < 0.25] = -np.inf
        cases.append(step_case(m, l, acc, s, rng.standard_normal((bk, d))))
    # the corners in one case: row 0 all -inf so far and now, row 1 all -inf so far only, row 2
    # all -inf now only, row 3 ties with the running max, row 4 far above it, row 5 below it (the
    # running max stays: the block's terms are exp(s - m), not exp(s - the block's max))
    d, bk = 2, 3
    m = np.array([-np.inf, -np.inf, 2.0, 1.5, -50.0, 4.0])
    l = np.array([0.0, 0.0, 1.7, 1.0, 3.0, 2.5])
    acc = rng.standard_normal((6, d)) * np.array([0, 0, 1, 1, 1, 1])[:, None]
    s = np.array([[-np.inf] * 3, [0.5, -np.inf, 3.0], [-np.inf] * 3, [1.5, 1.5, -1.0],
                  [40.0, 41.0, 39.0], [1.0, 2.5, -np.inf]])
    cases.append(step_case(m, l, acc, s, rng.standard_normal((bk, d))))
    return cases


# -- exercise 2 ------------------------------------------------------------------------------------


def _attention_reference(q, k, v, kv_len, causal):
    """(out, lse) in float64 of float32 inputs: the s × s scores, masked, softmaxed."""
    heads, s, d = q.shape
    # (heads, s, s), in float64
    scores = np.matmul(q, k.transpose(0, 2, 1), dtype=np.float64) / math.sqrt(d)
    j = np.arange(s)
    masked = j[None, None, :] >= np.asarray(kv_len)[:, None, None]  # padding, (heads, 1, s)
    if causal:
        masked = masked | (j[None, None, :] > j[None, :, None])  # (heads, s, s)
    scores = np.where(masked, -np.inf, scores)
    m = scores.max(axis=2, keepdims=True)  # -inf in a row with no unmasked key
    p = np.exp(scores - np.nan_to_num(m))  # an empty row: all 0 (m is then the most negative float)
    # l >= 1 in a row with an unmasked key (its largest term is exp(0)); an empty row has l = 0, and
    # max(l, 1) gives it out = 0 and lse = -inf + log 1 = -inf without a 0 / 0
    l = np.maximum(p.sum(axis=2, keepdims=True), 1.0)
    return p @ v / l, (m + np.log(l))[..., 0]


def _attention_cases(rng: np.random.Generator) -> list[Case]:
    """Sizes not multiples of the tile (one row, one tile, a tile and one row), head dims up to
    HEAD_DIM, causal or not, padding that leaves a head with no key or a partial tile (and a
    kv_len past the end: no padding), and logits large enough that exp overflows float32 without
    the max."""
    long = int(rng.integers(TILE_SPAN[0], TILE_SPAN[1]))  # two or three tiles
    return [
        attention_case(1, 1, 1, [3], 0, rng),
        attention_case(1, 16, HEAD_DIM, [16], 1, rng),
        attention_case(2, 17, 3, [17, int(rng.integers(1, 17))], 0, rng),
        attention_case(2, long, int(rng.integers(2, 9)), [0, int(rng.integers(1, long))], 1, rng),
        attention_case(1, 33, 4, [33], int(rng.integers(0, 2)), rng, scale=6.0),
        _far_apart(attention_case(2, 9, 4, [9, 9], int(rng.integers(0, 2)), rng)),
    ]


def _far_apart(case: Case) -> Case:
    """Head 1's logits in the thousands, head 0's near 1: a max taken over more than one row (the
    whole array) underflows every exp of head 0 to 0."""
    q = case.args[0].copy()
    q[1] *= np.float32(400)
    return Case((q, *case.args[1:]))


TILE_SPAN = (18, 40)  # sequence lengths of the random case: two or three tiles, the last partial


# -- exercise 3 (Pallas) ---------------------------------------------------------------------------


def _pallas_reference(q, k, v, bq, bk):
    """softmax(q kᵀ / sqrt(d)) v in float64 (bq and bk do not change the numbers)."""
    scores = np.matmul(q, k.transpose(0, 2, 1), dtype=np.float64) / math.sqrt(q.shape[2])
    p = np.exp(scores - scores.max(axis=2, keepdims=True))
    return p @ v / p.sum(axis=2, keepdims=True)


def _pallas_cases(rng: np.random.Generator) -> list[Case]:
    """Several heads; query blocks smaller and larger than key blocks; one key block (bk = s) and
    one query block (bq = s); logits in the hundreds (exp overflows without the running max); all
    scores equal (q = 0: ties everywhere, the plain mean of v)."""
    zeros = pallas_case(1, 32, 8, 8, 16, rng)
    return [
        pallas_case(2, 64, 16, 16, 32, rng),
        pallas_case(1, 64, 8, 32, 16, rng, scale=30.0),
        pallas_case(3, 48, 16, 16, 48, rng),
        pallas_case(1, 32, 8, 32, 8, rng),
        Case((np.zeros_like(zeros.args[0]), *zeros.args[1:])),
    ]


# -- exercise 4 ------------------------------------------------------------------------------------


def _bytes_reference(batch, heads, s, d, block_q, block_k, causal, itemsize):
    per_head = 0
    for start in range(0, s, block_q):
        rows = min(block_q, s - start)
        keys = s  # every key tile
        if causal:
            last = start + rows - 1  # the block's last query row sees keys 0 … last
            keys = min(s, (last // block_k + 1) * block_k)
        per_head += rows * d * itemsize  # q rows
        per_head += 2 * keys * d * itemsize  # K and V tiles
        per_head += rows * d * itemsize + rows * 4  # out rows and the float32 log-sum-exp
    return batch * heads * per_head


def _bytes_cases(rng: np.random.Generator) -> list[Case]:
    """Long sequences (the executor cannot count these: a model is the only way), tiles of
    different sizes for queries and keys, s not a multiple of either, causal or not, 2- and 4-byte
    values, one row."""
    # causal with query tiles smaller than key tiles: the keys loaded run past the diagonal to the
    # end of the key tile (one whole tile and a partial end)
    cases = [Case((1, 1, 1, 1, 16, 16, True, 4)), Case((2, 3, 200, 64, 16, 64, True, 2)),
             Case((1, 4, 1000, 128, 64, 128, True, 4)),
             # causal with query tiles LARGER than key tiles: the block's last row, not its first,
             # decides the last key tile (a fresh read found the first row's tile passing)
             Case((1, 1, 256, 64, 128, 64, True, 2)), Case((2, 2, 300, 64, 64, 16, True, 4))]
    for _ in range(6):
        block_q = int(rng.choice([16, 32, 64, 128]))
        block_k = int(rng.choice([16, 32, 64, 128]))
        s = int(rng.integers(1, 64)) * 64 + int(rng.choice([0, int(rng.integers(1, 64))]))
        cases.append(Case((int(rng.integers(1, 9)), int(rng.choice([8, 12, 32])), s,
                           int(rng.choice([64, 128])), block_q, block_k, bool(rng.integers(0, 2)),
                           int(rng.choice([2, 4])))))
    return cases


# -- exercise 5 ------------------------------------------------------------------------------------


def _decode_reference(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    head_dim = d_model // heads
    params = 2 * d_model * d_model + 2 * d_model * kv_heads * head_dim + 2 * d_model * d_ff
    flops = 2 * params + 4 * heads * head_dim * context  # per sequence
    kv = 2 * context * kv_heads * head_dim * itemsize  # per sequence
    ridge = Fraction(peak_flops) / Fraction(bandwidth)  # FLOPs per byte
    # batch · flops >= ridge · (params · itemsize + batch · kv)
    gain = flops - ridge * kv
    if gain <= 0:
        return None
    return math.ceil(ridge * params * itemsize / gain)


def _decode_cases(rng: np.random.Generator) -> list[Case]:
    """Real layer shapes (Llama-like, with and without grouped-query attention), short and long
    contexts, 2- and 1-byte values, accelerators from a small GPU to an H200; cases where the
    answer is 1, large, and None (long context without GQA). Each case's exact crossover is at
    least 1e-6 away from an integer, so a float computation rounds the same way."""
    accelerators = [(989.4e12, 3.35e12), (989.4e12, 4.8e12), (312e12, 2.039e12),
                    (165.2e12, 1.008e12), (1979e12, 3.35e12)]
    layers = [(4096, 32, 8, 14336), (4096, 32, 32, 11008), (8192, 64, 8, 28672),
              (2048, 16, 16, 8192), (5120, 40, 40, 13824)]
    found: dict[bool, list[Case]] = {True: [], False: []}  # has a crossover -> cases
    while len(found[True]) < 6 or len(found[False]) < 2:
        d, h, kvh, d_ff = layers[int(rng.integers(len(layers)))]
        peak, bw = accelerators[int(rng.integers(len(accelerators)))]
        ctx = int(rng.choice([16, 64, 128, 256, 512, 1024, 4096, 32768])) + int(rng.integers(0, 8))
        args = (d, h, kvh, d_ff, ctx, int(rng.choice([1, 2])), peak, bw)
        if not _near_integer(*args):
            found[_decode_reference(*args) is not None].append(Case(args))
    return [*found[True][:6], *found[False][:2],
            Case((4096, 32, 32, 11008, 131072, 2, 989.4e12, 3.35e12)),  # None: no GQA, long
            Case((4096, 32, 8, 14336, 16, 2, 50e12, 3.35e12))]  # a low ridge: a small batch


def _near_integer(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    head_dim = d_model // heads
    params = 2 * d_model * d_model + 2 * d_model * kv_heads * head_dim + 2 * d_model * d_ff
    flops = 2 * params + 4 * heads * head_dim * context
    ridge = Fraction(peak_flops) / Fraction(bandwidth)
    gain = flops - ridge * 2 * context * kv_heads * head_dim * itemsize
    if gain <= 0:
        return False
    x = ridge * params * itemsize / gain
    return abs(float(x) - round(float(x))) < 1e-6


# -- exercise 6 ------------------------------------------------------------------------------------


def _context_reference(budget, batch, heads, d, layers, itemsize, fused):
    copies = layers * batch * heads  # of one (sequence, head)'s saved tensors
    if fused:  # s · (4 · d · itemsize + 4) <= budget / copies
        return budget // (copies * (4 * d * itemsize + 4))
    # s² + 4·d·s <= C, C = budget // (copies · itemsize)  <=>  (s + 2d)² <= 4d² + C
    return math.isqrt(4 * d * d + budget // (copies * itemsize)) - 2 * d


def _context_cases(rng: np.random.Generator) -> list[Case]:
    """Budgets from a laptop's to an H200's, fused and not; a budget exactly at a boundary (the
    bytes of some s: that s fits, s + 1 does not) and one byte below it; a budget below s = 1;
    values so large that a float square root misrounds."""
    cases = []
    for fused in (False, True):
        for _ in range(3):
            args = [int(rng.integers(1, 9)), int(rng.choice([8, 16, 32, 64])),
                    int(rng.choice([64, 128])), int(rng.choice([1, 24, 80])),
                    int(rng.choice([2, 4])), fused]
            budget = int(2 ** rng.uniform(30, 37.2))
            cases.append(Case((budget, *args)))
        shape = (2, 16, 128, 32, 2)  # batch, heads, d, layers, itemsize
        b, h, d, n, size = shape
        s = int(rng.integers(1000, 100000))
        exact = n * b * h * (4 * s * d * size + (s * 4 if fused else s * s * size))
        cases += [Case((exact, *shape, fused)), Case((exact - 1, *shape, fused))]
    cases.append(Case((100, 1, 1, 64, 1, 2, False)))  # not even s = 1
    cases.append(Case((130, 1, 1, 16, 1, 2, False)))  # exactly s = 1 (4·16·2 + 2 bytes)
    cases.append(Case((132, 1, 1, 16, 1, 2, True)))  # exactly s = 1, fused (4·16·2 + 4 bytes)
    # just below a perfect square, (1e10)²: the float square root rounds up to 1e10 (9999999998),
    # the integer one does not (s = 9999999997)
    cases.append(Case((10**20 - 5, 1, 1, 1, 1, 1, False)))
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "online_softmax_step": (_step_reference, _step_cases),
    "fused_attention": (_attention_reference, _attention_cases),
    "pallas_attention": (_pallas_reference, _pallas_cases),
    "fused_bytes": (_bytes_reference, _bytes_cases),
    "decode_crossover": (_decode_reference, _decode_cases),
    "longest_context": (_context_reference, _context_cases),
}
