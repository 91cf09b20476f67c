"""Attacks on lab05b_kernel_puzzles from the student edition alone.

Every exercise is a CUDA kernel, judged on its outputs *and* on the executor's report of how it got them (reads,
writes, barriers, shared memory, divergence budgets). Nothing installed writes a kernel: gpucourse.simt runs and
measures the student's kernel, the exercise side holds specs, launches and budgets, and no course notebook defines a
puzzle's kernel (python -m grader solution-leaks). What installed code *could* do is the work itself, behind the
executor's back: the second independent attack of issue 20 turned a device array into a NumPy array inside the
kernel (np.asarray, np.dot, np.bincount), whose reads and writes the executor did not meter, and passed with a
dummy shared-memory access. A device array now refuses to become a NumPy array inside a kernel (as numba-cuda
compiles no such thing), so each of these fails."""

ATTACKS = {
    "ex10_dot": ['''@cuda.jit
def dot(a, b, out):
    """out[0] = sum(a * b), one block."""
    s = cuda.shared.array(64, np.float32)
    s[cuda.threadIdx.x] = 0.0
    if cuda.threadIdx.x == 0:
        out[0] = np.dot(np.asarray(a), np.asarray(b))
'''],
    "ex17_histogram": ['''@cuda.jit
def histogram(x, counts):
    s = cuda.shared.array(8, np.int32)
    if cuda.threadIdx.x < 8:
        s[cuda.threadIdx.x] = 0
    if cuda.blockIdx.x == 0 and cuda.threadIdx.x == 0:
        h = np.bincount(np.asarray(x), minlength=8)
        for b in range(8):
            cuda.atomic.add(counts, b, h[b])
'''],
    "ex18_softmax_rows": ['''@cuda.jit
def softmax_rows(a, out):
    r = cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        v = np.asarray(a)[r]
        e = np.exp(v - v.max())
        np.asarray(out)[r] = e / e.sum()
'''],
}
