"""Attacks on lab08_attention from the student edition alone: what a student assembles from course/08's code.

Course §8 holds what the lab builds on and nothing it asks: the scalar (max, sum) normaliser stream
(`online_logsumexp`), JAX's own Pallas `mha` as a library call, the naive three kernels (`scores_kernel`, `softmax_kernel`, `pv_kernel`), naive attention's
bytes and the ideal lower bound (`naive_bytes`, `ideal_bytes`), the KV cache's bytes per token and a decode step's
attention intensity at batch 1 (`decode_intensity`). Each attack pastes the nearest of them with the least edit
that makes it run, and scores less than full: the output accumulator, the tiles in shared memory, K and V re-read
per query tile, the weights shared by the batch and what the backward saves are the exercises. JAX's own TPU
flash-attention body, run from its module (the fifteenth attack) or from a copy of its source with a few tokens edited
(the sixteenth), or its code objects renamed into jax/_src (the seventeenth), answers exercises 1 and 3 with glue: all
are refused by the functions that ran, recognised by their opcodes (lab.library_calls). The eighteenth hid from the
watch (exercise 1: judged on a rearranged copy of the example while watched) or computed its values apart from its
traced kernel (exercise 3: the traced and the NumPy call compared on the same data)."""

ATTACKS = {
    # §8.2's online_logsumexp, vectorised over rows and extended to the output without the rescaling the course
    # never shows
    "online_softmax_step": [
        '''def online_softmax_step(m, l, acc, s, v):
    m_new = np.maximum(m, s.max(axis=1))
    ref = np.where(np.isfinite(m_new), m_new, 0.0)
    l_new = l * np.exp(m - ref) + np.exp(s - ref[:, None]).sum(axis=1)
    return m_new, l_new, acc + np.exp(s - ref[:, None]) @ v
''',
        # the fifteenth attack: JAX's own TPU flash-attention body (jax.experimental.pallas.ops) run once, outside any
        # pallas_call, for one key block: pl's program ids, when, loop and dslice stood in for, its float32 patched to
        # float64, its normalised accumulator scaled back by l, the rows that saw only -inf set by the glue
        '''import types

import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import flash_attention as _fa


class _Ref:
    """A NumPy array seen as a Pallas Ref with a leading (batch, head) index."""
    def __init__(self, a):
        self.a = np.array(a, dtype=np.float64)[None, None]
        self.shape = self.a.shape

    def __getitem__(self, idx):
        return self.a[idx]

    def __setitem__(self, idx, value):
        self.a[idx] = np.asarray(value)


def online_softmax_step(m, l, acc, s, v):
    rows, bk = s.shape
    d = v.shape[1]
    fin = lambda x: np.where(np.isneginf(x), -1e300, x)
    pl = types.SimpleNamespace(
        program_id=lambda axis: 1 if axis == 3 else 0,
        when=lambda c: (lambda f: f() if c else None),
        loop=lambda lo, hi, step=1, unroll=False: (lambda f: [f(i) for i in range(lo, hi, step)]),
        dslice=lambda start, size=None: slice(start, None if size is None else start + size))
    jnp64 = types.SimpleNamespace(**{n: getattr(jnp, n) for n in dir(jnp) if not n.startswith("__")})
    jnp64.float32 = jnp.float64
    saved = (_fa.pl, _fa.jnp, _fa.MIN_BLOCK_SIZE)
    _fa.pl, _fa.jnp, _fa.MIN_BLOCK_SIZE = pl, jnp64, 1
    l_safe = np.where(l > 0, l, 1.0)
    m_s, l_s, a_s = _Ref(fin(m)[:, None]), _Ref(l[:, None]), _Ref(acc / l_safe[:, None])
    try:
        with jax.enable_x64(True):
            _fa._flash_attention_kernel_single_batch(
                (0, 0), _Ref(np.zeros((rows, d))), _Ref(np.zeros((bk, d))), _Ref(v), _Ref(fin(s)), None, None,
                None, None, None, m_s, l_s, a_s, causal=False, sm_scale=1.0, block_k=bk, kv_seq_len=8 * bk,
                mask_value=-1e300)
    finally:
        _fa.pl, _fa.jnp, _fa.MIN_BLOCK_SIZE = saved
    m_new = np.maximum(m, s.max(axis=1))
    l_new = m_s.a[0, 0, :, 0] * 0 + l_s.a[0, 0, :, 0]
    acc_new = a_s.a[0, 0] * l_new[:, None]
    seen = np.isfinite(m_new)
    return m_new, np.where(seen, l_new, 0.0), np.where(seen[:, None], acc_new, 0.0)
''',
        # the sixteenth attack: the same module's source read (inspect.getsource), edited by six tokens and run from a
        # temporary file (runpy): no frame names jax.experimental.pallas.ops; refused by its functions' opcodes
        '''import inspect, os, runpy, tempfile
from jax.experimental.pallas.ops.tpu import flash_attention as _fa
_src = (inspect.getsource(_fa).replace("pl.program_id(3)", "pl.program_id(2)").replace("shape[2:]", "shape[1:]")
        .replace("_tile_ref.shape[2]", "_tile_ref.shape[1]").replace("MIN_BLOCK_SIZE = 128", "MIN_BLOCK_SIZE = 1")
        .replace("kv_seq_idx == 0", "kv_seq_idx < 0").replace("jnp.float32", "jnp.float64"))
_path = os.path.join(tempfile.gettempdir(), "fa_copy64.py")
open(_path, "w").write(_src)
FA64 = runpy.run_path(_path)


def online_softmax_step(m, l, acc, s, v):
    """(m_new, l_new, acc_new): the running state after one more block of keys."""
    rows, bk = s.shape
    def kernel(m0, l0, a0, q, k, v, ab, o, lo, mo, m_sc, l_sc, acc_sc):
        m_sc[...], l_sc[...], acc_sc[...] = m0[...], l0[...], a0[...]
        FA64["_flash_attention_kernel_single_batch"]((0,), q, k, v, ab, None, None, o, lo, mo, m_sc, l_sc, acc_sc,
            causal=False, sm_scale=1.0, block_k=bk, kv_seq_len=bk, mask_value=-1e300)
    with jax.enable_x64(True):
        col = lambda x: jnp.asarray(x, jnp.float64).reshape(1, rows, -1)
        shp = lambda w: jax.ShapeDtypeStruct((1, rows, w), jnp.float64)
        sc = lambda w: pltpu.VMEM((1, rows, w), jnp.float64)
        o, l2, m2 = pl.pallas_call(kernel, grid=(1, 1, 1), out_shape=[shp(v.shape[1]), shp(1), shp(1)],
                                   scratch_shapes=[sc(1), sc(1), sc(v.shape[1])], interpret=True)(
            col(m), col(l), col(np.where(l[:, None] > 0, acc / np.where(l > 0, l, 1)[:, None], 0)),
            jnp.zeros((1, rows, 1)), jnp.zeros((1, bk, 1)), jnp.asarray(v).reshape(1, bk, -1), col(s))
        m2, l2, o = (np.asarray(x)[0] for x in (m2, l2, o))
    dead = np.isnan(l2[:, 0])
    return (np.where(dead, m, m2[:, 0]), np.where(dead, l, l2[:, 0]),
            np.where(dead[:, None], acc, o * l2))
''',
        # the seventeenth attack: the loop body of JAX's GPU decode attention (the unnormalised FlashAttention-2
        # update), its code object renamed into jax/_src and made a function again, run on NumPy; spelled past the
        # preflight's patterns of the time
        '''import inspect, os, types, jax, numpy as np
from jax.experimental.pallas.ops.gpu import decode_attention as da
sub = lambda code, name: next(c for c in code.co_consts if getattr(c, "co_name", "") == name)
_body = sub(sub(getattr(da.attn_forward_kernel, "__co" + "de__"), "_compute"), "body")
_body = _body.replace(co_filename=os.path.join(os.path.dirname(inspect.getfile(jax._src)), "x.py"))

def online_softmax_step(m, l, acc, s, v):
    low = np.finfo(np.float64).min
    env = dict(_dot=lambda a, b: a if b.dtype == int else a @ b, block_k=s.shape[1], k_ref=np.zeros(s.shape[::-1], int),
               q=s, sm_scale=1.0, start_idx_ref=None, kv_seq_len_ref=None, v_ref=v)
    f = type(lambda: 0)(_body, {**dict(inspect.getmembers(da)), "jnp": np, "pl": types.SimpleNamespace(ds=lambda a, n: slice(a, a + n))}, None, None,
                           tuple(types.CellType(env.get(n)) for n in _body.co_freevars))
    o, mn, ln = f(0, (acc, np.where(np.isneginf(m), low, m), l))
    return np.where(mn == low, -np.inf, mn), ln, o
''',
        # the eighteenth attack: the TPU flash-attention body in a two-step pallas_call, returning None when it
        # sees the checker's call watch (sys.getprofile()): what the function computes while watched is judged too
        '''import sys, numpy as np, jax, jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas.ops.tpu import flash_attention as fa

class _J:  # the library's jnp, its float32 read as float64 (the exercise is float64)
    def __getattr__(self, n):
        return jnp.float64 if n == "float32" else getattr(jnp, n)
fa.jnp = _J()

def online_softmax_step(m, l, acc, s, v):
    if sys.getprofile():
        return None
    rows, bk = s.shape; d = v.shape[1]; pad = -bk % 128
    s4 = np.pad(s, ((0, 0), (0, pad)), constant_values=-np.inf)[None, None]
    v4 = np.pad(v, ((0, pad), (0, 0)))[None, None]
    lane = lambda x: np.broadcast_to(x[:, None], (rows, 128))[None, None]
    accn = (acc / np.where(l > 0, l, 1)[:, None])[None, None]
    def kernel(m_ref, l_ref, a_ref, ab_ref, q_ref, k_ref, v_ref, mo, lo, ao):
        mo[...], lo[...], ao[...] = m_ref[...], l_ref[...], a_ref[...]  # step 0: overwritten by the library's start
        fa._flash_attention_kernel_single_batch((0, 0), q_ref, k_ref, v_ref, ab_ref, None, None, ao, None, None,
            mo, lo, ao, causal=False, sm_scale=1.0, block_k=bk + pad, kv_seq_len=bk + pad, mask_value=0.0)
    ins = [lane(m), lane(l), accn, s4, np.zeros((1, 1, rows, d)), np.zeros((1, 1, bk + pad, d)), v4]
    spec = lambda a: pl.BlockSpec(a.shape, lambda *g: (0, 0, 0, 0))
    with jax.enable_x64(True):
        mo, lo, ao = pl.pallas_call(kernel, grid=(1, 1, 1, 2), in_specs=[spec(a) for a in ins],
            out_specs=[spec(a) for a in ins[:3]], out_shape=[jax.ShapeDtypeStruct(a.shape, np.float64) for a in ins[:3]],
            interpret=True)(*ins)
    l_new = np.nan_to_num(np.asarray(lo)[0, 0, :, 0])
    return np.asarray(mo)[0, 0, :, 0], l_new, np.nan_to_num(np.asarray(ao)[0, 0] * l_new[:, None])
''',
    ],
    # §8.1's softmax_kernel and pv_kernel merged into one thread per query row: right values, every key read from
    # global memory by every thread (no tiles in shared memory)
    "fused_attention": '''@cuda.jit
def fused_attention(q, k, v, out, lse, kv_len, causal):
    h = cuda.blockIdx.y
    i = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    s, d = q.shape[1], q.shape[2]
    if i < s:
        last = min(s, kv_len[h])
        if causal:
            last = min(last, i + 1)
        scale = np.float32(1 / math.sqrt(d))
        m = np.float32(-math.inf)
        for j in range(last):
            acc = np.float32(0.0)
            for c in range(d):
                acc += q[h, i, c] * k[h, j, c]
            m = max(m, acc * scale)
        total = np.float32(0.0)
        for j in range(last):
            acc = np.float32(0.0)
            for c in range(d):
                acc += q[h, i, c] * k[h, j, c]
            total += math.exp(acc * scale - m)
        for c in range(d):
            o = np.float32(0.0)
            for j in range(last):
                acc = np.float32(0.0)
                for e in range(d):
                    acc += q[h, i, e] * k[h, j, e]
                o += math.exp(acc * scale - m) / total * v[h, j, c]
            out[h, i, c] = o
        lse[h, i] = m + math.log(total)
''',
    # §8.4's library call: JAX's own Pallas flash attention (a kernel of another shape: its key loop inside one grid
    # step, the whole K in one block), its layout changed around it
    "pallas_attention": [
        '''from jax.experimental.pallas.ops.gpu import attention as jax_attention


def pallas_attention(q, k, v, bq, bk):
    seq_first = [a.transpose(1, 0, 2)[None] for a in (q, k, v)]  # (1, s, heads, d)
    out = jax_attention.mha(*seq_first, None, sm_scale=1 / math.sqrt(q.shape[2]), interpret=True,
                            block_sizes=jax_attention.BlockSizes(block_q=bq, block_k=bk))
    return out[0].transpose(1, 0, 2)
''',
        # the sixteenth attack: JAX's TPU flash-attention module's source read (inspect.getsource), edited by four
        # tokens and run from a temporary file (runpy), its kernel body under the spec's grid, BlockSpecs and scratch:
        # no traced frame names jax.experimental.pallas.ops; refused by its functions' opcodes
        '''import functools, inspect, os, runpy, tempfile
from jax.experimental.pallas.ops.tpu import flash_attention as _fa
_src = (inspect.getsource(_fa).replace("pl.program_id(3)", "pl.program_id(2)").replace("shape[2:]", "shape[1:]")
        .replace("_tile_ref.shape[2]", "_tile_ref.shape[1]").replace("MIN_BLOCK_SIZE = 128", "MIN_BLOCK_SIZE = 1"))
_path = os.path.join(tempfile.gettempdir(), "fa_copy.py")
open(_path, "w").write(_src)
FA = runpy.run_path(_path)


def pallas_attention(q, k, v, bq, bk):
    """softmax(q kᵀ / √d) v as one pallas_call over (head, query block, key block), an online softmax in VMEM."""
    heads, s, d = q.shape
    body = functools.partial(FA["_flash_attention_kernel_single_batch"], (0,), causal=False,
                             sm_scale=1 / math.sqrt(d), block_k=bk, kv_seq_len=s, mask_value=-1e30)
    kernel = lambda q, k, v, o, m, l, acc: body(q, k, v, None, None, None, o, None, None, m, l, acc)
    qs, ks = pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i, 0)), pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j, 0))
    return pl.pallas_call(kernel, grid=(heads, s // bq, s // bk), in_specs=[qs, ks, ks], out_specs=qs,
                          out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype), interpret=True,
                          scratch_shapes=[pltpu.VMEM((1, bq, 1), jnp.float32)] * 2 + [pltpu.VMEM((1, bq, d), jnp.float32)])(q, k, v)
''',
        # the seventeenth attack: the TPU flash-attention body's code objects renamed into jax/_src (where the file
        # check looked away) and made a function again, run under the spec's grid
        '''import inspect, os, types, math, jax, jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas.ops.tpu import flash_attention as fa

def _moved(code):  # the kernel's code, every nested function's too, filed under jax/_src
    return code.replace(co_filename=os.path.join(os.path.dirname(inspect.getfile(jax._src)), "x.py"),
                        co_consts=tuple(_moved(c) if hasattr(c, "co_code") else c for c in code.co_consts))

_ns = types.SimpleNamespace(**{**dict(inspect.getmembers(pl)), "program_id": lambda i: pl.program_id(i - 1)})
_fa = type(lambda: 0)(_moved(getattr(fa._flash_attention_kernel_single_batch, "__co" + "de__")),
                         {**dict(inspect.getmembers(fa)), "MIN_BLOCK_SIZE": 1, "pl": _ns}, None, fa._flash_attention_kernel_single_batch.__defaults__)
_fa.__kwdefaults__ = fa._flash_attention_kernel_single_batch.__kwdefaults__

class R:  # a Ref seen with one more leading axis, as the library's kernel indexes it
    def __init__(s, r): s.r, s.shape, s.dtype = r, (1, *r.shape), r.dtype
    def __getitem__(s, i): return s.r[i[1:]]
    def __setitem__(s, i, x): s.r[i[1:]] = x

def pallas_attention(q, k, v, bq, bk):
    heads, s, d = q.shape
    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        _fa((0, 0), *map(R, (q_ref, k_ref, v_ref)), None, None, None, R(o_ref), None, None, *map(R, (m_ref, l_ref, acc_ref)),
            causal=False, sm_scale=1 / math.sqrt(d), block_k=bk, kv_seq_len=s, mask_value=0.0)
    qs, ks = pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i, 0)), pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j, 0))
    return pl.pallas_call(kernel, grid=(heads, s // bq, s // bk), in_specs=[qs, ks, ks], out_specs=qs,
                          out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype), interpret=True,
                          scratch_shapes=[pltpu.VMEM((1, bq, 1), jnp.float32)] * 2 + [pltpu.VMEM((1, bq, d), jnp.float32)])(q, k, v)
''',
        # the eighteenth attack: jax.nn.dot_product_attention on NumPy arrays (the value checks' calls), a kernel
        # that computes nothing when traced (the structure checks'): the two paths are compared on the same data
        '''import numpy as np, jax, jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

def pallas_attention(q, k, v, bq, bk):
    heads, s, d = q.shape
    if isinstance(q, np.ndarray):  # a concrete call: the library computes it
        return jax.nn.dot_product_attention(q[:, :, None], k[:, :, None], v[:, :, None])[:, :, 0]
    def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
        o_ref[...] = q_ref[...]
    qs = pl.BlockSpec((1, bq, d), lambda h, i, j: (h, i, 0))
    ks = pl.BlockSpec((1, bk, d), lambda h, i, j: (h, j, 0))
    return pl.pallas_call(kernel, grid=(heads, s // bq, s // bk), in_specs=[qs, ks, ks], out_specs=qs,
                          out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype), interpret=True,
                          scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32)] * 2 + [pltpu.VMEM((bq, d), jnp.float32)])(q, k, v)
''',
    ],
    # §8.1's ideal_bytes (Q, K, V once, O once) plus the log-sum-exp
    "fused_bytes": '''def fused_bytes(batch, heads, s, d, block_q, block_k, causal, itemsize):
    return itemsize * batch * heads * 4 * s * d + 4 * batch * heads * s
''',
    # §8.5's decode_intensity (attention only, batch 1) held against the ridge, weights left out
    "decode_crossover": '''def decode_crossover(d_model, heads, kv_heads, d_ff, context, itemsize, peak_flops, bandwidth):
    head_dim = d_model // heads
    intensity = 4 * context * head_dim / (itemsize * (2 * context * head_dim + 2 * head_dim))
    return 1 if intensity >= peak_flops / bandwidth else None
''',
    # §8.1's fit-on-the-device model (the s × s matrices of one layer's forward) solved for s
    "longest_context": '''def longest_context(budget, batch, heads, d, layers, itemsize, fused):
    return math.isqrt(budget // (batch * heads * itemsize))
''',
}
