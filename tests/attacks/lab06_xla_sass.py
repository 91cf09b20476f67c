"""Attacks on lab06_xla_sass from the student edition alone: what a determined student assembles from installed code.

Exercises 3, 6, 7 and 9 were redesigned (issue 20) so that no installed code answers them: breaking_op also asks for
the bytes of the breaker's result, which no course helper reads from an HLO type; mma_flops asks for the operations
of the whole tensor-core family from the shapes in the opcodes' modifiers, which toolchain.Sass lists but never
reads; sass_counts asks for those operations too; fusion_payoff_rows is the inverse of gpucourse.fusion's forward
model. Each attack below is the closest a student gets from the edition (the helper called, loaded a second time,
or its source pasted) and must score less than full."""

ATTACKS = {
    "ex3_breaking_op": [
        # the course's HLO reader: the opcode alone (the old exercise's answer)
        '''def breaking_op(hlo):
    return next(op for op in gc.xla.entry_ops(hlo) if op not in gc.xla.BOOKKEEPING)
''',
        # gpucourse.xla loaded a second time, and the bytes from the result shape of the course's collectives reader
        # (gpucourse.interconnect: its dtype table, its shape regex) on the breaker's line
        '''import importlib.util
import sys
import re

_spec = importlib.util.spec_from_file_location("xla2", gc.xla.__file__)
xla2 = importlib.util.module_from_spec(_spec)
sys.modules["xla2"] = xla2  # its dataclasses look their module up there
_spec.loader.exec_module(xla2)


def breaking_op(hlo):
    op = next(op for op in xla2.entry_ops(hlo) if op not in xla2.BOOKKEEPING)
    entry = xla2.computations(hlo)["ENTRY"]
    line = next(ln for ln in entry.splitlines() if f" {op}(" in ln)
    typ = line.split("=", 1)[1].split(f" {op}(")[0]
    return op, sum(gc.interconnect._DTYPE_BYTES.get(t, 4) * math.prod(int(d) for d in dims.split(",") if d)
                   for t, dims in gc.interconnect._SHAPE.findall(typ))
''',
        # gpucourse.xla's entry_ops and BOOKKEEPING pasted, the result's bytes taken as the parameters' dtype
        '''import re

BOOKKEEPING = ("parameter", "constant", "fusion", "tuple", "get-tuple-element", "copy", "bitcast")
_ENTRY_OP = re.compile(r"^\\s*(?:ROOT\\s+)?%?[\\w.\\-]+\\s*=\\s*(?:\\([^=]*?\\)|\\S+)\\s+([\\w\\-]+)\\(", re.M)


def entry_ops(hlo):
    m = re.search(r"^ENTRY .*?^}", hlo, re.S | re.M)
    return _ENTRY_OP.findall(m.group(0) if m else hlo)


def breaking_op(hlo):
    op = next(op for op in entry_ops(hlo) if op not in BOOKKEEPING)
    m = re.search(r"^ENTRY .*?\\(x\\.1: (\\w+)\\[(\\d+),(\\d+)\\]", hlo, re.M)
    size = {"f32": 4, "bf16": 2}[m.group(1)]
    return op, size * int(m.group(2)) * int(m.group(3))
''',
    ],
    "ex6_mma_flops": [
        # the course's Sass counter: HMMA and HGMMA at the course's own kernels' shapes
        '''def mma_flops(sass):
    s = toolchain.Sass(sass)
    return 2 * 16 * 8 * 16 * s.count("HMMA") + 2 * 64 * 8 * 16 * s.count("HGMMA")
''',
        # gpucourse.toolchain loaded a second time; every tensor-core opcode counted, at a 16x8x16 shape each
        '''import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("toolchain2", toolchain.__file__)
toolchain2 = importlib.util.module_from_spec(_spec)
sys.modules["toolchain2"] = toolchain2  # its dataclasses look their module up there
_spec.loader.exec_module(toolchain2)


def mma_flops(sass):
    ops = toolchain2.Sass(sass).opcodes()
    return 4096 * sum(ops[op] for op in ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA"))
''',
        # toolchain.Sass's instruction regex pasted, the variants' shapes read with 'x' only
        '''import re
from collections import Counter

_INSTR = re.compile(r"^\\s*/\\*[0-9a-f]{4,}\\*/\\s+(?:@!?U?P\\w+\\s+)?([A-Z][A-Z0-9_]*(?:\\.[A-Za-z0-9_]+)*)", re.M)


def mma_flops(sass):
    total = 0
    for ins, n in Counter(_INSTR.findall(sass)).items():
        base, shape = (ins.split(".") + [""])[:2]
        if base.endswith("MMA") and "x" in shape:
            a, b, c = (int(v) for v in shape.split("x"))
            total += 2 * a * b * c * n
        elif base.endswith("MMA"):
            total += 4096 * n
    return total
''',
    ],
    "ex7_sass_counts": [
        # the course's compile-and-count: FFMA right, the tensor cores as the course's fp16 kernels' shapes
        '''def sass_counts(source, arch="sm_90"):
    s = toolchain.sass_of(source, arch=arch)
    return {"FFMA": s.count("FFMA"), "tensor_flops": 4096 * s.count("HMMA") + 16384 * s.count("HGMMA")}
''',
    ],
    "ex9_fusion_payoff_rows": [
        # the course's forward model, evaluated on one row: a ratio, not a size
        '''def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    F = gc.fusion
    model = F.FusionModel(F.Side(calls[0], row_bytes[0], row_faults[0], 0.0), F.Side(calls[1], row_bytes[1],
                          row_faults[1], 0.0), machine["dispatch"], machine["bandwidth"], machine["fault"])
    terms = model.terms(model.unfused)
    return model.predicted_ratio, max(terms, key=terms.get)
''',
        # the forward model tried one size after another until fusion stops saving the target (runs out of time)
        '''def fusion_payoff_rows(calls, row_bytes, row_faults, machine, target):
    F = gc.fusion
    m = 1
    while True:
        model = F.FusionModel(F.Side(calls[0], (m + 1) * row_bytes[0], (m + 1) * row_faults[0], 0.0),
                              F.Side(calls[1], (m + 1) * row_bytes[1], (m + 1) * row_faults[1], 0.0),
                              machine["dispatch"], machine["bandwidth"], machine["fault"])
        if model.predicted_ratio < target:
            break
        m += 1
    terms = model.terms(model.unfused)
    return m, max(terms, key=terms.get)
''',
    ],
}
