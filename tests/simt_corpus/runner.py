"""``python -m tests.simt_corpus.runner OUT.npz``: run every corpus case numba's CUDA simulator can run and save
its outputs (this process must be started with ``NUMBA_ENABLE_CUDASIM=1``: numba decides once per process)."""

from __future__ import annotations

import os
import sys

import numpy as np


def main(out: str) -> int:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        print("run me with NUMBA_ENABLE_CUDASIM=1", file=sys.stderr)
        return 2
    from tests.simt_corpus.kernels import CASES

    results: dict[str, np.ndarray] = {}
    for k, case in enumerate(CASES):
        if not case.sim:
            continue
        args = case.args()
        try:
            case.launch(args)
        except Exception as exc:  # recorded, so the parent can say which case the simulator could not run
            results[f"{k}:error"] = np.array(f"{exc.__class__.__name__}: {exc}")
            continue
        for j in case.outputs:
            results[f"{k}:{j}"] = np.asarray(args[j])
    np.savez(out, **results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
