"""Attacks on lab03_datapath from the student edition alone: what a determined student assembles from installed code.

Exercises 1 and 2 use the course's roofline and transfer model (gpucourse.datapath), which stays installed: the
closest a student gets with it is one offload per step (exercise 1) or the model run at the links the course knows,
or without its latencies (exercise 2). A search over the model that brackets the answer and reaches 1e-9 does pass
exercise 2 — that is using the model backwards, which the spec allows.
Exercise 4 asks for a layout: the course's SIMT executor (gpucourse.simt) and the check's own count (lab.issued_by)
count what a layout issues, so the closest submissions count the layout as given, or one fixed sorted design.
Exercise 5's loss is Tukey's biweight with a cutoff per side: no installed library has it (SciPy's robust losses,
scipy.special.huber and least_squares' soft_l1/huber/cauchy/arctan, are never flat beyond a cutoff), and exercise 6's
interrupted runs defeat the old exercise's one-call weighted fit.
"""

_DATAPATH = '''import importlib.util, pathlib, sys
import gpucourse
_spec = importlib.util.spec_from_file_location("gpucourse.datapath_again",
                                               pathlib.Path(gpucourse.__file__).parent / "datapath.py")
dp = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = dp
_spec.loader.exec_module(dp)
'''

ATTACKS = {
    "place_pipeline": [
        # the course's offload model, one offload (two copies) per step, kept where it pays
        '''from gpucourse import datapath, roofline

def place_pipeline(steps, nbytes, cpu, gpu, link):
    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    ln = datapath.Link("link", link["bandwidth"], link["latency"])
    total, placement = 0.0, []
    for s in steps:
        t = datapath.offload_times(datapath.Workload("s", s["flops"], nbytes, s["bytes"] - nbytes), c, g, ln)
        t["to_cpu"] = datapath.transfer_time(nbytes, ln)
        go = s["gpu_ok"] and datapath.gpu_total(t) < t["cpu"]
        total += datapath.gpu_total(t) if go else t["cpu"]
        placement.append("gpu" if go else "cpu")
    return total, placement
''',
        # the same module loaded a second time; the whole pipeline as one workload, all on one side
        _DATAPATH + '''from gpucourse import roofline

def place_pipeline(steps, nbytes, cpu, gpu, link):
    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    w = dp.Workload("all", sum(s["flops"] for s in steps), nbytes, nbytes)
    t = dp.offload_times(w, c, g, dp.Link("link", link["bandwidth"], link["latency"]))
    cpu_s = sum(max(s["flops"] / cpu["flops"], s["bytes"] / cpu["bandwidth"]) for s in steps)
    on_gpu = sum(max(s["flops"] / gpu["flops"], s["bytes"] / gpu["bandwidth"]) for s in steps)
    gpu_s = t["to_gpu"] + on_gpu + t["to_cpu"]
    if gpu_s < cpu_s and all(s["gpu_ok"] for s in steps):
        return gpu_s, ["gpu"] * len(steps)
    return cpu_s, ["cpu"] * len(steps)
''',
        # the helpers' source pasted (gpucourse/datapath.py: transfer_time, roofline_time), greedy per step
        '''def transfer_time(nbytes, link):
    return link["latency"] + nbytes / link["bandwidth"]

def roofline_time(flops, nbytes, roof):
    return max(flops / roof["flops"], nbytes / roof["bandwidth"])

def place_pipeline(steps, nbytes, cpu, gpu, link):
    total, placement = 0.0, []
    for s in steps:
        on_cpu = roofline_time(s["flops"], s["bytes"], cpu)
        on_gpu = 2 * transfer_time(nbytes, link) + roofline_time(s["flops"], s["bytes"], gpu)
        go = s["gpu_ok"] and on_gpu < on_cpu
        total += on_gpu if go else on_cpu
        placement.append("gpu" if go else "cpu")
    return total, placement
''',
    ],
    "min_link_bandwidth": [
        # the course's model at the links it knows (PCIe 4, PCIe 5, NVLink 4): the slowest that pays
        '''from gpucourse import datapath, roofline

def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    w = datapath.Workload("w", flops, bytes_in, bytes_out)
    for name in ("PCIe 4.0 x16", "PCIe 5.0 x16", "NVLink 4 (H100, per GPU, each direction)"):
        t = datapath.offload_times(w, c, g, datapath.Link(name, datapath.BANDWIDTHS[name][0], latency))
        if datapath.gpu_total(t) < t["cpu"]:
            return datapath.BANDWIDTHS[name][0]
    return None
''',
        # the module loaded again; the model at an infinitely fast link tells what the copies may take
        _DATAPATH + '''from gpucourse import roofline

def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    t = dp.offload_times(dp.Workload("w", flops, bytes_in, bytes_out), c, g, dp.Link("fast", float("inf"), 0.0))
    left = t["cpu"] - t["process"]
    return (bytes_in + bytes_out) / left if left > 0 else None
''',
        # roofline_time / transfer_time pasted, a bisection between the course's slowest and fastest links
        '''def transfer_time(nbytes, bandwidth, latency):
    return latency + nbytes / bandwidth

def roofline_time(flops, nbytes, proc):
    return max(flops / proc["flops"], nbytes / proc["bandwidth"])

def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    moved = bytes_in + bytes_out
    def pays(b):
        gpu_s = (transfer_time(bytes_in, b, latency) + roofline_time(flops, moved, gpu)
                 + transfer_time(bytes_out, b, latency))
        return gpu_s < roofline_time(flops, moved, cpu)
    lo, hi = 31.5e9, 450e9
    if not pays(hi):
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pays(mid) else (mid, hi)
    return hi
''',
    ],
    "chunked_map": [
        # the course's streaming loop (section 3.8) turned into a map: its chunk is sized for float32 and 2 copies
        '''def chunked_map(x, mem, fn, copies):
    out = np.empty_like(x)
    chunk = mem.budget // (2 * 4)  # each chunk needs itself + one temporary, float32
    for start in range(0, x.size, chunk):
        dchunk = mem.to_device(x[start:start + chunk])
        out[start:start + chunk] = mem.to_host(fn(dchunk))
        del dchunk
    return out
''',
    ],
    "warp_layout": [
        # the third attack's executor count (gpucourse.simt, two runs: the costs, then 0/0) on the layout as given:
        # right count, wrong design
        '''import math
from gpucourse import simt

def _count(c, cost_if, cost_else):
    def paths(cond, ci, ce, out):
        i = simt.cuda.grid(1)
        if i < cond.size:
            v = 0.0
            if cond[i]:
                for _ in range(ci):
                    v += 1.0
            else:
                for _ in range(ce):
                    v += 1.0
            out[i] = v
    c = np.asarray(c).astype(np.int32)
    def run(ci, ce):
        r = simt.run(paths, max(1, math.ceil(c.size / 32)), 32, c, int(ci), int(ce), np.zeros(c.size))
        return r.issued_steps, sum(w.active for w in r.warps)
    (s1, a1), (s0, a0) = run(cost_if, cost_else), run(0, 0)
    return (s1 - s0) // 2, (a1 - a0) // 2

def warp_layout(cond, cost_if, cost_else):
    order = np.arange(len(cond))
    issued, useful = _count(np.asarray(cond)[order], cost_if, cost_else)
    return order, issued, useful / (32 * issued)
''',
        # the check's own count of a layout (lab.issued_by) on the obvious design: if-items first, always
        '''def warp_layout(cond, cost_if, cost_else):
    cond = np.asarray(cond, dtype=bool)
    order = np.argsort(~cond, kind="stable")
    issued = lab.issued_by(cond, order, cost_if, cost_else)
    useful = cost_if * cond.sum() + cost_else * (~cond).sum()
    return order, issued, useful / (32 * issued)
''',
        # the check's count pasted, on the other sorted design: else-items first, always
        '''def warp_layout(cond, cost_if, cost_else):
    cond = np.asarray(cond, dtype=bool)
    order = np.argsort(cond, kind="stable")
    lanes = np.full(-(-len(cond) // 32) * 32, -1, dtype=np.int8)
    lanes[: len(cond)] = cond[order]
    warps = lanes.reshape(-1, 32)
    issued = int(cost_if * (warps == 1).any(axis=1).sum() + cost_else * (warps == 0).any(axis=1).sum())
    useful = cost_if * cond.sum() + cost_else * (~cond).sum()
    return order, issued, useful / (32 * issued)
''',
    ],
    "asym_tukey_vectorized": [
        # the fifteenth attack's answer to the old (Huber) exercise: SciPy's Huber loss per side, the residual
        # clipped — the closest installed loss, with linear tails where Tukey's are flat
        '''import scipy.special

def asym_tukey_vectorized(pred, target, lo, hi):
    r = pred - target
    return np.where(r > 0, scipy.special.huber(hi, r), scipy.special.huber(lo, r)), np.clip(r, -lo, hi)
''',
        # SciPy's least-squares robust losses (private, installed): soft_l1, cauchy and arctan are the others it
        # has, none flat beyond a cutoff; cauchy at the cutoff's scale, per side
        '''from scipy.optimize._lsq.least_squares import cauchy

def asym_tukey_vectorized(pred, target, lo, hi):
    r = pred - target
    c = np.where(r >= 0, hi, lo)
    rho = np.empty((3, r.size))
    cauchy((r / c) ** 2, rho, False)
    return c * c / 2 * rho[0], r * rho[1]
''',
        # the installed loop pasted, its loss swapped for Tukey's by the course's formula but still a Python loop per
        # element
        '''def asym_tukey_vectorized(pred, target, lo, hi):
    loss, grad = np.empty_like(pred), np.empty_like(pred)
    for i in range(len(pred)):
        r = pred[i] - target[i]
        c = hi if r >= 0 else lo
        w = max(1 - (r / c) ** 2, 0.0)
        loss[i], grad[i] = c * c / 6 * (1 - w**3), r * w * w
    return loss, grad
''',
    ],
    "transfer_plan": [
        # the third attack's weighted fit (np.polyfit(..., w=1/seconds)) on every run, interrupted ones included
        '''def transfer_plan(sizes, seconds, fraction):
    s = np.repeat(sizes, seconds.shape[1])
    t = np.ravel(seconds)
    slope, intercept = np.polyfit(s, t, 1, w=1 / t)
    return intercept, 1 / slope, fraction / (1 - fraction) * intercept / slope
''',
        # the course's timer statistic (gc.measure reports the median) per size, then the weighted fit
        '''def transfer_plan(sizes, seconds, fraction):
    t = np.median(seconds, axis=1)
    slope, intercept = np.polyfit(sizes, t, 1, w=1 / t)
    return intercept, 1 / slope, fraction / (1 - fraction) * intercept / slope
''',
    ],
}
