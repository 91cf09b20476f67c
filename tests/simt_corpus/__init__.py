"""Kernels no one on this course wrote first: numba-cuda's own tests and documentation examples and the standard
solutions of GPU-Puzzles' 14 puzzles, re-written in the course's style (each names its source). The same module
runs on the executor and, in a child process with ``NUMBA_ENABLE_CUDASIM=1``, on numba's CUDA simulator."""
