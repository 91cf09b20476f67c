"""Kernels on the edge of what numba-cuda compiles: each with the launch the executor runs and the signature
numba-cuda's compiler types it with. tests/test_simt_types.py asks numba-cuda's real compiler (``compile_ptx`` for
sm_90, in a child process: no GPU needed) and the executor the same question: does this kernel compile/run?
Each kernel was written here after numba-cuda's typing (numba_cuda/numba/cuda/cudadecl.py, intrinsics.py)."""

from __future__ import annotations

import numpy as np

N_CONST = 32  # a global constant: a valid array shape


def count_bool(x, out):
    t = cuda.threadIdx.x  # noqa: F821 - `cuda` is bound by whoever loads this module's kernels
    out[t] = cuda.syncthreads_count(x[t] > 0)  # noqa: F821


def count_int(x, out):
    t = cuda.threadIdx.x  # noqa: F821
    out[t] = cuda.syncthreads_count(x[t])  # noqa: F821


def inc(c):
    cuda.atomic.inc(c, 0, 5)  # noqa: F821


def add(c):
    cuda.atomic.add(c, 0, 1)  # noqa: F821


def shuffle(x, out):
    t = cuda.threadIdx.x  # noqa: F821
    out[t] = cuda.shfl_sync(0xFFFFFFFF, x[t], 0)  # noqa: F821


def shuffle_bool(x, out):
    t = cuda.threadIdx.x  # noqa: F821
    out[t] = cuda.shfl_sync(0xFFFFFFFF, x[t] > 0, 0)  # noqa: F821


def ballot(x, out):
    out[cuda.threadIdx.x] = cuda.ballot_sync(0xFFFFFFFF, x[cuda.threadIdx.x])  # noqa: F821


def shared_from_argument(out, n):
    s = cuda.shared.array(n, np.float32)  # noqa: F821
    s[cuda.threadIdx.x] = 1.0  # noqa: F821
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]  # noqa: F821


def shared_from_block(out):
    s = cuda.shared.array(cuda.blockDim.x, np.float32)  # noqa: F821
    s[cuda.threadIdx.x] = 1.0  # noqa: F821
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]  # noqa: F821


def shared_from_literals(out):
    n = 8
    s = cuda.shared.array((N_CONST, n), np.float32)  # noqa: F821
    s[cuda.threadIdx.x, 0] = 1.0  # noqa: F821
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x, 0]  # noqa: F821


# (kernel, numba-cuda signature as text, executor launch args factory, does numba-cuda compile it)
CASES = [
    (count_bool, "void(int32[:], int32[:])", lambda: (np.ones(32, np.int32), np.zeros(32, np.int32)), False),
    (count_int, "void(int32[:], int32[:])", lambda: (np.ones(32, np.int32), np.zeros(32, np.int32)), True),
    (inc, "void(int32[:])", lambda: (np.zeros(1, np.int32),), False),
    (inc, "void(uint32[:])", lambda: (np.zeros(1, np.uint32),), True),
    (add, "void(int16[:])", lambda: (np.zeros(1, np.int16),), False),
    (add, "void(float16[:])", lambda: (np.zeros(1, np.float16),), False),
    (add, "void(uint64[:])", lambda: (np.zeros(1, np.uint64),), True),
    (shuffle, "void(float32[:], float32[:])", lambda: (np.ones(32, np.float32), np.zeros(32, np.float32)), True),
    (shuffle, "void(uint32[:], uint32[:])", lambda: (np.ones(32, np.uint32), np.zeros(32, np.uint32)), False),
    (shuffle_bool, "void(int32[:], int32[:])", lambda: (np.ones(32, np.int32), np.zeros(32, np.int32)), False),
    (ballot, "void(float32[:], int32[:])", lambda: (np.ones(32, np.float32), np.zeros(32, np.int32)), False),
    (ballot, "void(boolean[:], int32[:])", lambda: (np.ones(32, np.bool_), np.zeros(32, np.int32)), True),
    (shared_from_argument, "void(float32[:], int64)", lambda: (np.zeros(32, np.float32), 32), False),
    (shared_from_block, "void(float32[:])", lambda: (np.zeros(32, np.float32),), False),
    (shared_from_literals, "void(float32[:])", lambda: (np.zeros(32, np.float32),), True),
]


# -- constructs: Python the executor could run but numba-cuda may refuse (found by expert reads r17/r18 of issue 22,
# each compiled here by compile_ptx). Every kernel takes (x: float32[32], out: float32[32]) on 32 threads.

import enum  # noqa: E402
import linecache  # noqa: E402
import math  # noqa: E402

import numba  # noqa: E402 - numba.literal_unroll, a construct below
from numba.cuda import grid as imported_grid  # noqa: E402 - numba-cuda's intrinsics and stubs imported by name
from numba.cuda import syncthreads as imported_syncthreads  # noqa: E402
from numba.cuda import threadIdx as imported_threadIdx  # noqa: E402
from numba.cuda import popc as imported_popc  # noqa: E402
from numba.cuda import laneid as imported_laneid  # noqa: E402
from numba.cuda import float32x4 as imported_float32x4  # noqa: E402

SB = 8
SHAPE = (N_CONST, 33)
OFFSETS_LIST = [16, 8, 4, 2, 1]
OFFSETS_TUPLE = (16, 8, 4, 2, 1)
TABLE = {"x": 1.0}


class Colour(enum.Enum):
    RED = 1


def _k(body: str, name: str):
    """A kernel from its body (x, out and t = threadIdx.x in scope), defined in this module: its globals are ours."""
    src = f"def {name}(x, out):\n    t = cuda.threadIdx.x\n" + "".join(f"    {line}\n" for line in body.splitlines())
    filename = f"<typing_cases {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # inspect.getsource finds it
    exec(compile(src, filename, "exec"), globals())
    fn = globals()[name]
    fn.body = body
    return fn


# (kernel, does numba-cuda compile it, does the executor run it: None = the same as numba-cuda, False = it refuses
# with "does not model" though numba-cuda compiles it)
CONSTRUCTS = [
    (_k("s = cuda.shared.array(SB + 2, np.float32)\ns[t % 10] = x[t]\nout[t] = s[0]", "shape_expression"), False, None),
    (_k("s = cuda.shared.array((N_CONST, N_CONST + 1), np.float32)\ns[t, 0] = x[t]\nout[t] = s[t, 0]",
        "shape_tuple_expression"), False, None),
    (_k("n = SB + 2\ns = cuda.shared.array(n, np.float32)\ns[t % 10] = x[t]\nout[t] = s[0]", "shape_local_expression"),
     False, None),
    (_k("s = cuda.shared.array(8 + 2, np.float32)\ns[t % 10] = x[t]\nout[t] = s[0]", "shape_folded_literals"),
     True, None),
    (_k("n = 10\ns = cuda.shared.array(n, np.float32)\ns[t % 10] = x[t]\nout[t] = s[0]", "shape_local_literal"),
     True, None),
    (_k("s = cuda.shared.array(SHAPE, np.float32)\ns[t, 0] = x[t]\nout[t] = s[t, 0]", "shape_global_tuple"), True, None),
    (_k("v = x[t]\nfor off in OFFSETS_LIST:\n    v += off\nout[t] = v", "global_list"), False, None),
    (_k("v = x[t]\nfor off in OFFSETS_TUPLE:\n    v += off\nout[t] = v", "global_tuple"), True, None),
    (_k("out[t] = TABLE['x']", "global_dict"), False, None),
    (_k("v = x[t]\nfor off in [16, 8]:\n    v += off\nout[t] = v", "for_over_a_list_literal"), True, None),
    (_k("l = [x[t], x[0]]\nout[t] = l[1]", "local_list"), False, None),
    (_k("v = x[t]\nfor k in [i for i in range(3)]:\n    v += k\nout[t] = v", "list_comprehension"), False, None),
    (_k("d = {1: x[t]}\nout[t] = d[1]", "local_dict"), False, None),
    (_k("s = {1, 2}\nout[t] = len(s)", "local_set"), False, None),
    (_k("try:\n    out[t] = x[t]\nexcept Exception:\n    out[t] = 0", "try_except"), False, None),
    (_k("print(f'{x[t]}')\nout[t] = 1", "f_string"), False, None),
    (_k("print('x', x[t])\nout[t] = 1", "print_values"), True, None),
    (_k("if (n := x.size) > 0:\n    out[t] = n", "walrus"), False, None),
    (_k("if t == 0:\n    out[:] = x", "slice_assignment"), False, None),
    (_k("if t == 0:\n    out[:2] += 1", "slice_augmented_assignment"), False, None),
    (_k("b = x[1:]\nout[t] = b[0]", "slice_read"), True, None),
    (_k("if t == 0:\n    out[2:6] = 7.0", "slice_assignment_of_a_scalar"), True, None),
    (_k("out[t] = hash(3)", "hash"), False, None),
    (_k("out[t] = math.fsum((x[0], x[1]))", "math_fsum"), False, None),
    (_k("out[t] = np.exp(x[t])", "np_exp"), False, None),
    (_k("out[t] = np.sqrt(x[t])", "np_sqrt"), False, None),
    (_k("out[t] = np.log(x[t] + 1)", "np_log"), True, None),
    (_k("out[t] = math.exp(x[t])", "math_exp"), True, None),
    (_k("tmp = np.empty(2, np.float32)\ntmp[0] = x[t]\nout[t] = tmp[0]", "np_empty"), False, None),
    (_k("tmp = np.zeros(2, np.float32)\nout[t] = tmp[0]", "np_zeros"), False, None),
    (_k("c = Colour.RED\nif c == Colour.RED:\n    out[t] = 1", "enum_compare"), True, None),
    (_k("out[t] = np.float32(x[t]) + np.float32(np.pi)", "numpy_scalar_and_constant"), True, None),
    # the r19 read's constructs
    (_k("global SB\nSB = 9\nout[t] = x[t]", "global_statement"), False, None),
    (_k("v = x[t]\nfor k in reversed(range(3)):\n    v += k\nout[t] = v", "builtin_reversed"), False, None),
    (_k("out[t] = 1.0 if any((x[t] > 0, x[0] > 0)) else 0.0", "builtin_any"), False, None),
    (_k("out[t] = sorted((3, 1, 2))[0]", "builtin_sorted"), False, None),
    (_k("out[t] = len(list((1, 2)))", "builtin_list"), False, None),
    (_k("out[t] = 1.0 if type(x[t]) == type(x[0]) else 0.0", "builtin_type"), False, None),
    (_k("out[t] = sum(x[i] for i in range(3))", "generator_expression"), False, None),
    (_k("a, *b = (1, 2, 3)\nout[t] = a", "starred_unpacking"), False, None),
    (_k("v = x[t]\ndel v\nout[t] = 1", "del_statement"), False, None),
    (_k("print(t, x[t], sep=',')\nout[t] = 1", "print_keywords"), False, None),
    (_k("print('%d' % t)\nout[t] = 1", "percent_format"), False, None),
    (_k("out[t] = math.factorial(3)", "math_factorial"), False, None),
    (_k("out[t] = math.gcd(6, 4)", "math_gcd"), False, None),
    (_k("out[t] = np.random.rand()", "np_random"), False, None),
    (_k("shape = (N_CONST, 33)\ns = cuda.shared.array(shape, np.float32)\ns[t, 0] = x[t]\nout[t] = s[t, 0]",
        "shape_local_tuple"), True, None),
    (_k("n = SB\ns = cuda.shared.array(n, np.float32)\ns[t % 8] = x[t]\nout[t] = s[0]", "shape_local_alias"),
     True, None),
    (_k("out[t] = math.erf(x[t]) + math.hypot(x[t], 1.0)", "math_erf_hypot"), True, None),
    (_k("v = x[t]\nfor i, k in zip(range(2), (16, 8)):\n    v += i * k\nout[t] = v", "builtin_zip"), True, None),
    (_k("out[t] = abs(x[t]) + len(x) + round(x[0])", "builtins_abs_len_round"), True, None),
    (_k("if t == 0:\n    out[0] = np.sum(x)", "np_sum"), True, False),
    (_k("if t == 0:\n    out[0] = x.sum()", "array_sum_method"), True, False),
    # the r20 read's constructs
    (_k("acc = [x[t]] * 2\nout[t] = acc[1]", "list_multiplication"), False, None),
    (_k("v = x[t]\nfor k in [16, 8] * 2:\n    v += k\nout[t] = v", "for_over_a_multiplied_list"), False, None),
    (_k("v = x[t]\nfor k in (16, 8) * 2:\n    v += k\nout[t] = v", "for_over_a_multiplied_tuple"), True, None),
    (_k("v = x[t]\nfor k in numba.literal_unroll((1, 2)):\n    v += k\nout[t] = v", "literal_unroll"), False, None),
    # the r22 read's: numba-cuda's intrinsics compile imported by name, its stubs do not
    (_k("i = imported_grid(1)\nout[i] = x[i]", "intrinsic_grid_by_name"), True, None),
    (_k("imported_syncthreads()\nout[t] = x[t]", "intrinsic_syncthreads_by_name"), True, None),
    (_k("out[imported_threadIdx.x] = x[t]", "stub_threadidx_by_name"), False, None),
    (_k("out[t] = imported_popc(t)", "stub_popc_by_name"), False, None),
    # the r23 read's: a refused name only compared is refused too; a vector type imported by name compiles
    (_k("if imported_laneid == 0:\n    out[t] = x[t]", "stub_laneid_compared"), False, None),
    (_k("v = imported_float32x4(x[t], x[t], x[t], x[t])\nout[t] = v.x", "vector_type_by_name"), True, False),
]


def construct_id(i: int) -> str:
    return CONSTRUCTS[i][0].__name__


def case_id(i: int) -> str:
    fn, sig, _, _ = CASES[i]
    return f"{fn.__name__}:{sig}"


def _compiles(real, fn) -> bool:
    try:
        real.compile_ptx(fn, "void(float32[:], float32[:])", cc=(9, 0))
        return True
    except Exception:  # noqa: BLE001 - any failure: it does not compile
        return False


def main(out_path: str) -> None:
    """In a child process: numba-cuda's real compiler (no GPU) says which cases compile for sm_90."""
    import json

    from numba import cuda as real

    verdicts = {}
    for i, (fn, sig, _, _) in enumerate(CASES):
        fn.__globals__["cuda"] = real
        try:
            real.compile_ptx(fn, sig, cc=(9, 0))
            verdicts[case_id(i)] = True
        except Exception as exc:  # noqa: BLE001 - a TypingError is the answer asked for
            verdicts[case_id(i)] = type(exc).__name__ != "TypingError" and None
    from numba.cuda.ufuncs import ufunc_db

    verdicts["__ufuncs__"] = sorted(u.__name__ for u in ufunc_db())  # the ufuncs it has a CUDA loop for
    compiled_math = []
    for name in sorted(n for n in dir(math) if not n.startswith("_") and callable(getattr(math, n))):
        for args in ("x[0]", "x[0], x[1]", "x[0], x[1], x[2]", "3"):
            ns = {"math": math}
            exec(f"def k(x, out):\n    out[0] = math.{name}({args})\n"
                 f"def k2(x, out):\n    out[0] = math.{name}({args})[0]\n", ns)  # k2: frexp, modf return tuples
            if any(_compiles(real, ns[k]) for k in ("k", "k2")):
                compiled_math.append(name)
                break
    verdicts["__math__"] = compiled_math
    for i, (fn, _, _) in enumerate(CONSTRUCTS):  # any failure is a refusal here (lowering fails in many ways)
        fn.__globals__["cuda"] = real
        try:
            real.compile_ptx(fn, "void(float32[:], float32[:])", cc=(9, 0))
            verdicts[construct_id(i)] = True
        except Exception as exc:  # noqa: BLE001
            verdicts[construct_id(i)] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    with open(out_path, "w") as f:
        json.dump(verdicts, f)


if __name__ == "__main__":
    import sys

    main(sys.argv[1])
