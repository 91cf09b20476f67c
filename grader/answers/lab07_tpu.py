"""Lab 7's answer side: the reference of every exercise and its hidden-case generator (instructor
only).

Never installed for students, never present in a grading sandbox (grader/sandbox.py hides
``grader/answers``): the student edition (``python -m grader student-edition``) leaves it out and
checks that none of its source is in what it ships. The exercise side, grader/labs/lab07_tpu.py, is
the rest of the lab; this module imports it, never the reverse (``Problem.has_answers`` binds
``ANSWERS`` on first use where this module is installed).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from gpucourse import interconnect, systolic, tpu

from ..labs.lab07_tpu import (
    HYPOTHETICAL,
    MESHES,
    _Dims,
    _step_case,
    faulty_array,
    sharding_family,
)
from ..labs.lab07_tpu import _bf16 as _exercise_bf16
from ..problem import Case


def sharding_class(case: tuple[tuple, tuple, tuple]) -> tuple[bool, bool, bool, bool]:
    """What a case asks of the partitioner: (k is split: partial sums; the product is split along m
    where the output wants m whole; the same along n; the output splits a dimension the product
    holds whole: a local slice)."""
    (am, ak), (_, bn), (om, on) = case
    return (ak is not None, am is not None and om is None, bn is not None and on is None,
            (am is None and om is not None) or (bn is None and on is not None))

def _array_shapes(rng: np.random.Generator, low: int = 2, high: int = 9) -> list[tuple[int, int]]:
    """(K, N) of every class, drawn each time: one PE, one row, one column, square, wider than tall,
    taller than wide (a swapped axis or a row/column mix-up shows only on a non-square array)."""
    s, k, n = (int(v) for v in rng.integers(low, high, size=3))
    wide, tall = sorted(rng.choice(np.arange(low, high), size=2, replace=False).tolist())
    return [(1, 1), (1, n), (k, 1), (s, s), (int(wide), int(tall)), (int(tall), int(wide))]


def pe_step(
    a: np.ndarray, p: np.ndarray, W: np.ndarray, a_in: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One clock edge of the whole array (the registers after this cycle); the register-level array
    of ``grader.answers.systolic_course`` clocks with it."""
    a_new = np.empty_like(a)
    a_new[:, 0] = a_in
    a_new[:, 1:] = a[:, :-1]  # activations move one PE to the right
    p_above = np.zeros_like(p)
    p_above[1:, :] = p[:-1, :]  # partial sums move one PE down
    return a_new, p_above + a_new * W  # K·N MACs in one cycle


def _step_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for K, N in _array_shapes(rng):
        a, p, W = (rng.integers(-5, 6, size=(K, N)).astype(float) for _ in range(3))
        cases.append(_step_case((a, p, W, rng.integers(-5, 6, size=K).astype(float))))
    return cases

def _systolic_reference(
    A: np.ndarray, W: np.ndarray, hw: systolic.WeightStationaryArray | None = None
) -> np.ndarray:
    """What the array delivers: A @ W, or on the checker's faulty array A @ (W with its stuck PE's
    weight)."""
    K, N = np.shape(W)
    weights = np.asarray(W, dtype=np.float64) if hw is None else hw.wired()[:K, :N]
    return np.asarray(A, dtype=np.float64) @ weights

def _systolic_cases(rng: np.random.Generator) -> list[Case]:
    """Arrays of every class (one PE, one row, one column, square, wide, tall), each with a stream
    of M rows shorter than (by 2 or more), as long as and longer than the array is tall, and of one
    row; A and W without zeros (a zero would hide what enters outside the schedule)."""
    cases = []
    one, row, column, square, wide, tall = _array_shapes(rng)
    # M: longer than, as long as, shorter than K; the tall array's stream ends 2+ rows before the
    # array's height, so at the first cycles some rows would read A[m] with m < −M (an unmasked
    # index raises there)
    streams = [
        (one, int(rng.integers(2, 10))),
        (row, int(rng.integers(2, 10))),
        (column, column[0] + 2),
        (square, square[0]),
        (wide, 1),
        (tall, tall[0] - 2),
    ]
    for (K, N), M in streams:
        W = rng.choice([-1.0, 1.0], size=(K, N)) * rng.uniform(0.5, 2.0, size=(K, N))
        A = rng.choice([-1.0, 1.0], size=(M, K)) * rng.integers(1, 5, size=(M, K))
        cases.append(Case((A, W)))
    # the checker's faulty array (a square one, a stream longer than it is tall): one PE's weight
    # stuck at another value (never the one loaded), so only a C read from the array is right
    (K, N), M = square, square[0] + 3
    W = rng.choice([-1.0, 1.0], size=(K, N)) * rng.uniform(0.5, 2.0, size=(K, N))
    A = rng.choice([-1.0, 1.0], size=(M, K)) * rng.integers(1, 5, size=(M, K))
    k, n = int(rng.integers(0, K)), int(rng.integers(0, N))
    cases.append(Case((A, W), {"hw": faulty_array(W, k, n, W[k, n] + float(rng.choice([-3, 2])))}))
    return cases

def best_array(M: int, K: int, N: int, pes: int) -> tuple[int, int]:
    # 1 × pes … pes × 1, fewest rows first
    shapes = [(2**i, pes // 2**i) for i in range(pes.bit_length())]
    cycles = [systolic.TiledGemm(M, K, N, rows, cols).cycles for rows, cols in shapes]
    return shapes[cycles.index(min(cycles))]  # the first minimum: the fewest rows


def _array_cases(rng: np.random.Generator) -> list[Case]:
    """Every kind of optimum: one row (K = 1: an outer product), one column (N = 1: a matrix-vector
    product), a square array and both non-square sides; decode batches (M below the rows of the
    square array) and prefill ones; exact ties between an array and its transpose (the fewest rows
    wins), one padded tile (fill and drain decide)."""
    cases = [Case((1, 1, int(rng.integers(2000, 9000)), 16)),  # K = 1, one row at a time: 1 × pes
             # N = 1: pes × 1
             Case((int(rng.integers(600, 3000)), int(rng.integers(3000, 9000)), 1, 512)),
             Case((int(rng.integers(1, 5)), 4096, 4096, 16384)),  # decode: few rows
             # prefill: 64 × 128 and 128 × 64 tie, the fewest rows wins
             Case((8192, 4096, 4096, 8192)),
             Case((int(rng.integers(20, 40)), 2048, 2048, 1024)),
             # one small tile
             Case((int(rng.integers(1, 3)), int(rng.integers(2, 7)), int(rng.integers(2, 7)), 16)),
             # one padded tile: fill and drain decide
             Case((int(rng.integers(100, 300)), 100, 120, 4096)),
             Case((64, 128, 16384, 1024))]  # many columns
    for _ in range(4):
        pes = int(2 ** rng.integers(4, 15))
        cases.append(
            Case(
                (
                    int(2 ** rng.uniform(0, 13)),
                    int(rng.integers(1, 6000)),
                    int(rng.integers(1, 6000)),
                    pes,
                )
            )
        )
    return cases

def _fused_reference(x: Any, w: Any, b: Any, bm: int, bn: int, bk: int) -> np.ndarray:
    """relu(x @ w + b), exact, rounded once to bfloat16 (what an f32 accumulator and an f32 epilogue
    give, to within one bf16 rounding)."""
    exact = np.asarray(x, dtype=np.float64) @ np.asarray(w, dtype=np.float64) + np.asarray(
        b, dtype=np.float64
    )
    return _bf16(np.maximum(exact, 0.0)).astype(np.float32)


def _bf16(values: np.ndarray) -> np.ndarray:
    return _exercise_bf16(values)  # the exercise side's rounding (the spec's), not a copy of it


def _fused_cases(rng: np.random.Generator) -> list[Case]:
    """Legal TPU blocks (the last two dimensions multiples of 8 and 128, or the whole array
    dimension); x and w non-square (m, k or k, n read the wrong way round shows only there); 2 or 3
    k blocks with a bias of either sign (added once per k block, or a relu per k block, shows); one
    output block spanning n = 200 (not a multiple of 128); and a sum that bf16 accumulation loses:
    the first k block gives ±256 and each of the seven others adds 0.5 (an f32 accumulator ends at
    259.5 -> 260 in bf16 before the bias; adding in bf16 stays at 256)."""
    cases = []
    for bm, bn, bk, k_blocks, n in ((16, 128, 128, 3, None), (32, 128, 128, 2, 200)):
        m = bm * int(rng.integers(1, 3))
        n = n or bn * int(rng.integers(1, 3))
        x = rng.standard_normal((m, bk * k_blocks))
        w = rng.standard_normal((bk * k_blocks, n))
        b = rng.standard_normal((1, n)) * 4
        cases.append(Case((_bf16(x), _bf16(w), _bf16(b), bm, n if n % 128 else bn, bk)))
    m, n, k = 16, 128, 1024
    x = np.ones((m, k)) * rng.choice([-1.0, 1.0], size=(m, 1))
    w = np.full((k, n), 1 / 256)
    w[:128] = 2.0
    b = rng.choice([-1.0, 1.0], size=(1, n)) * rng.integers(1, 3, size=(1, n))
    cases.append(Case((_bf16(x), _bf16(w), _bf16(b), 16, 128, 128)))
    return cases


def _received(kind: str, elements: float, group: int, itemsize: int) -> float:
    """Bytes one device receives in one collective whose result holds ``elements`` per device, over
    ``group`` devices: an all-gather everything but its own piece, a ring all-reduce a
    reduce-scatter and an all-gather."""
    share = (group - 1) / group * elements * itemsize
    return 2 * share if kind == "all-reduce" else share


def compiled_traffic(a_spec: tuple, b_spec: tuple, out_spec: tuple, mesh_shape: tuple = (2, 4),
                     mkn: tuple = (64, 32, 16), itemsize: int = 4) -> dict[str, float]:
    """Compile ``a @ b`` with these shardings on a mesh of ``mesh_shape`` ('x', 'y') and read, from
    the HLO, each collective's result shape and replica groups: the bytes one device receives in
    each kind. Needs as many JAX devices as the mesh has (tests/test_lab07_tpu.py runs it in a
    subprocess with 16)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    m, k, n = mkn
    size = int(np.prod(mesh_shape))
    # the host's CPU devices (XLA_FLAGS --xla_force_host_platform_device_count): jax.devices() alone
    # is the default backend's, one GPU where JAX's CUDA plugin is installed
    msh = Mesh(np.array(jax.devices("cpu")[:size]).reshape(mesh_shape), ("x", "y"))
    a = jax.ShapeDtypeStruct((m, k), jnp.float32, sharding=NamedSharding(msh, P(*a_spec)))
    b = jax.ShapeDtypeStruct((k, n), jnp.float32, sharding=NamedSharding(msh, P(*b_spec)))
    f = jax.jit(lambda u, v: u @ v, out_shardings=NamedSharding(msh, P(*out_spec)))
    out: dict[str, float] = {}
    for c in interconnect.hlo_collectives(f.lower(a, b).compile().as_text()):
        out[c.kind] = out.get(c.kind, 0.0) + _received(c.kind, c.elements, c.group_size, itemsize)
    return out


def _effective(spec: tuple, mesh_shape: tuple) -> tuple:
    """A spec with every axis of one device dropped: sharding over it is replication."""
    size = dict(zip(("x", "y"), mesh_shape))
    return tuple(ax if ax is not None and size[ax] > 1 else None for ax in spec)


def _collectives_reference(
    a_spec: tuple, b_spec: tuple, out_spec: tuple, mesh_shape: tuple, mkn: tuple, itemsize: int
) -> dict[str, float]:
    """XLA's answer, as a rule: tests/test_lab07_tpu.py compiles the whole family on every mesh of
    MESHES (and on 16-device meshes) and reads the same bytes from the HLO."""
    size = {None: 1, **dict(zip(("x", "y"), mesh_shape))}
    (am, ak), (_, bn), (om, on) = (_effective(s, mesh_shape) for s in (a_spec, b_spec, out_spec))
    m, _, n = mkn
    block = m // size[am or om] * (n // size[bn or on])  # the block of C each device computes
    final = m // size[om] * (n // size[on])  # its block of C as out_spec shards it
    found = {}
    if ak is not None:  # partial sums, all-reduced on a ring: a reduce-scatter, then an all-gather
        found["all-reduce"] = 2 * (size[ak] - 1) / size[ak] * block * itemsize
    if final != block:  # pieces joined
        found["all-gather"] = float((final - block) * itemsize)
    return found


def _sharded_reference(a_spec: tuple, b_spec: tuple, out_spec: tuple, mesh_shape: tuple,
                       mkn: tuple) -> dict[str, float]:
    """The bound exercise 5 holds a program to: the bytes one device receives in what jit's
    automatic partitioning compiles for the same float32 matmul (the rule of
    :func:`_collectives_reference`, checked against XLA)."""
    return _collectives_reference(a_spec, b_spec, out_spec, mesh_shape, mkn, 4)


def _sharded_cases(rng: np.random.Generator) -> list[Case]:
    """One configuration of every sharding class (11 of them; some hold 2 of the 45 configurations,
    so a random draw of 8 would miss them) on meshes whose axes all have 2 or more devices; then, on
    every mesh with a 1-device axis, a configuration where that axis changes which collectives there
    are (splitting over it splits nothing). Matrix sizes are multiples of 16 (every split divides
    them), m, k and n different."""
    family = sharding_family()
    by_class: dict[tuple, list[int]] = {}
    for i, case in enumerate(family):
        by_class.setdefault(sharding_class(case), []).append(i)
    full = [m for m in MESHES if min(m) > 1]
    offset = int(rng.integers(len(full)))

    def sizes() -> tuple[int, int, int]:
        m, k, n = (16 * int(v) for v in rng.choice(np.arange(1, 17), size=3, replace=False))
        return (m, k, n)

    cases = [Case(family[int(rng.choice(members))] + (full[(j + offset) % len(full)], sizes()))
             for j, (_, members) in enumerate(sorted(by_class.items()))]
    for mesh_shape in (m for m in MESHES if min(m) == 1):
        differs = [c for c in family if set(_collectives_reference(*c, mesh_shape, (16, 16, 16), 4))
                   != set(_collectives_reference(*c, (2, 4), (16, 16, 16), 4))]
        cases.append(Case(differs[int(rng.integers(len(differs)))] + (mesh_shape, sizes())))
    return [cases[int(i)] for i in rng.permutation(len(cases))]


def wraparound(chip: tpu.TpuChip, dims: Sequence[int], hypothetical: bool) -> tuple[bool, ...]:
    """Which axes of a ``chip`` slice of shape ``dims`` have wraparound links (are rings, not
    lines).

    v4 and v5p ("whole cubes"): the wraparound links go through the optical circuit switches, which
    connect whole 4×4×4 cubes: a slice whose every side is a multiple of 4 is a torus on every axis;
    any smaller or other slice (2×2×1, 2×2×4, 2×4×4) has none. v5e and v6e ("full axis"): an axis
    wraps only when it spans the pod's full 16 chips. Refuses what :meth:`TpuChip.check_slice`
    refuses.
    """
    dims = chip.check_slice(dims, hypothetical)
    if chip.wrap_rule == "whole cubes":
        whole = all(d % 4 == 0 for d in dims)
        return tuple(whole for _ in dims)
    return tuple(d == 16 for d in dims)


def hops(t: interconnect.Torus, a: Sequence[int], b: Sequence[int]) -> int:
    """Fewest links a message crosses from the chip at coordinates ``a`` to the chip at ``b``."""
    total = 0
    for x, y, d, w in zip(a, b, t.dims, t.wrap):
        delta = abs(x - y)
        total += min(delta, d - delta) if w else delta
    return total


def _hops_reference(a: tuple, b: tuple, dims: tuple, chip: str) -> int:
    hypothetical = (chip, tuple(dims)) in HYPOTHETICAL
    return hops(
        interconnect.Torus(dims, wraparound(tpu.TPU_CHIPS[chip], dims, hypothetical=hypothetical)),
        a,
        b,
    )


def _slice_cases(rng: np.random.Generator) -> list[Case]:
    """Google's listed slices (v4: its topology rule; none of the v4 shapes its v4 page and the
    scaling book judge differently), whole-cube and smaller v4/v5p slices, full-axis and shorter
    v5e/v6e axes; on every shape a pair at the ends of the axes (where the wraparound is shorter)
    and a pair anywhere; on each chip's first shape a pair half an axis apart (a tie: both ways
    round are equally long), a chip to itself, and the two ends of an axis (one hop over the
    wraparound); and the hypothetical non-cube v5p slices end to end."""
    shapes = {"TPU v4": [(4, 4, 8), (4, 8, 8), (8, 8, 16), (2, 2, 4), (2, 4, 4), (2, 2, 1)],
              "TPU v5p": [(4, 4, 4), (4, 8, 8), (16, 16, 24), (2, 2, 2), (2, 4, 4)],
              "TPU v5e": [(16, 16), (8, 16), (4, 8), (4, 4), (2, 4)],
              "TPU v6e": [(16, 16), (16, 8), (4, 8)]}
    cases = []
    for chip, dims_list in shapes.items():
        for i, dims in enumerate(dims_list):
            anywhere = tuple(int(rng.integers(d)) for d in dims)
            pairs = [(tuple(0 for _ in dims), tuple(d - 1 for d in dims)),  # corner to corner
                     (anywhere, tuple(int(rng.integers(d)) for d in dims))]
            if i == 0:
                axis = int(rng.integers(len(dims)))
                half = tuple(
                    (x + d // 2) % d if j == axis else x
                    for j, (x, d) in enumerate(zip(anywhere, dims))
                )
                first = tuple(0 if j == axis else x for j, x in enumerate(anywhere))
                last = tuple(dims[axis] - 1 if j == axis else x for j, x in enumerate(anywhere))
                # last → first: one wraparound hop
                pairs += [(anywhere, half), (anywhere, anywhere), (last, first)]
            cases += [Case((a, b, dims, chip)) for a, b in pairs]
    # corner to corner: every axis's wraparound would matter
    for chip, dims in sorted(HYPOTHETICAL):
        cases.append(Case((tuple(0 for _ in dims), tuple(d - 1 for d in dims), dims, chip)))
    return [_with_wraps(c) for c in cases]


def _with_wraps(case: Case) -> Case:
    """``case`` with its dims carrying which axes wrap (for the hint)."""
    a, b, dims, chip = case.args
    hypothetical = (chip, tuple(dims)) in HYPOTHETICAL
    wraps = wraparound(tpu.TPU_CHIPS[chip], dims, hypothetical=hypothetical)
    return Case((a, b, _Dims(dims, wraps), chip))

def axis_rounds(kind: str, p: int, ring: bool) -> int:
    """Communication rounds (each a hop, paying the latency α once) of one collective over one axis
    (a 2-chip ring takes p // 2 = p − 1 = 1 round either way; one chip, 0)."""
    one = p // 2 if ring else p - 1
    return 2 * one if kind == "all-reduce" else one


def axis_link_bytes(kind: str, nbytes: float, p: int, ring: bool) -> float:
    """Bytes on the busiest link, in one direction, of one collective of a ``nbytes`` array over one
    axis (one chip: every formula gives 0)."""
    ring = ring and p > 2
    if kind == "all-to-all":
        crossings = (
            (p * p / 8 if p % 2 == 0 else (p * p - 1) / 8) if ring else (p // 2) * ((p + 1) // 2)
        )
        return crossings * nbytes / p**2
    one = (p - 1) / p * nbytes / (2 if ring else 1)  # all-gather or reduce-scatter
    return 2 * one if kind == "all-reduce" else one


def _collective_reference(kind: str, nbytes: float, p: int, wrap: bool, link_bandwidth: float,
                          latency: float) -> float:
    return (
        axis_rounds(kind, p, wrap) * latency
        + axis_link_bytes(kind, nbytes, p, wrap) / link_bandwidth
    )


def _collective_cases(rng: np.random.Generator) -> list[Case]:
    """Every collective on rings and lines; even and odd p (the opposite chip's block splits only
    for even p); p = 1 and 2 (no ring possible) and 3 (the smallest ring); latency zero and not."""
    cases = []
    for kind in interconnect.COLLECTIVES:
        for p, wrap in (
            (16, True),
            (7, True),
            (6, True),
            (3, True),
            (5, False),
            (8, False),
            (2, True),
            (1, False),
        ):
            bw = float(rng.choice([45e9, 50e9, 90e9, 100e9]))
            lat = float(rng.choice([0.0, 1e-6, 2.5e-6]))
            cases.append(Case((kind, float(2 ** rng.uniform(12, 32)), p, wrap, bw, lat)))
    return cases


# exercise -> (reference, hidden-case generator)
ANSWERS = {
    "pe_step": (pe_step, _step_cases),
    "systolic_matmul": (_systolic_reference, _systolic_cases),
    "best_array": (best_array, _array_cases),
    "fused_dense": (_fused_reference, _fused_cases),
    "sharded_matmul": (_sharded_reference, _sharded_cases),
    "slice_hops": (_hops_reference, _slice_cases),
    "collective_seconds": (_collective_reference, _collective_cases),
}
