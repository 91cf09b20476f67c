"""Attacks on lab03_datapath from the student edition alone: what a determined student assembles from installed code.

Exercises 1 and 2 use the course's roofline and transfer model (gpucourse.datapath), which stays installed: the
closest a student gets with it is one offload per step (exercise 1) or the model run at the links the course knows,
or without its latencies (exercise 2). A search over the model that brackets the answer and reaches 1e-9 does pass
exercise 2 — that is using the model backwards, which the spec allows. Exercise 4's warp model is not installed at
all (the course shows stored masks), so the closest is the course's one-warp arithmetic applied to the whole grid.
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
    "ex1_place_pipeline": [
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
    "ex2_min_link_bandwidth": [
        # the course's model at the links it knows (PCIe 4, PCIe 5, NVLink 4): the slowest that pays
        '''from gpucourse import datapath, roofline

def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    c = roofline.Roofline("cpu", cpu["flops"], cpu["bandwidth"])
    g = roofline.Roofline("gpu", gpu["flops"], gpu["bandwidth"])
    w = datapath.Workload("w", flops, bytes_in, bytes_out)
    for name in ("PCIe 4.0 x16", "PCIe 5.0 x16", "NVLink 4 (H100, per GPU)"):
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
    "ex3_chunked_map": [
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
    "ex4_warp_execution": [
        # the course's one-warp arithmetic (section 3.3) on the whole grid: every thread in one "warp"
        '''def warp_execution(cond, cost_if, cost_else):
    cond = np.asarray(cond, dtype=bool)
    issued = cost_if * cond.any() + cost_else * (~cond).any()
    useful = cost_if * cond.sum() + cost_else * (~cond).sum()
    return int(issued), useful / (32 * issued)
''',
        # the stored masks of section 3.3 as a lookup, the model looked for in the installed module
        '''from gpucourse import simd_simt

def warp_execution(cond, cost_if, cost_else):
    model = getattr(simd_simt, "warp_masks", None)
    cond = np.asarray(cond, dtype=bool)
    issued = useful = 0
    for start in range(0, len(cond), 32):
        m = model(cond[start:start + 32], cost_if, cost_else)
        issued += m.shape[0]
        useful += int(m.sum())
    return issued, useful / (32 * issued)
''',
        # the installed module loaded a second time: still no model in it
        '''import importlib.util, pathlib
import gpucourse
spec = importlib.util.spec_from_file_location("simd_again", pathlib.Path(gpucourse.__file__).parent / "simd_simt.py")
again = importlib.util.module_from_spec(spec)
spec.loader.exec_module(again)

def warp_execution(cond, cost_if, cost_else):
    cond = np.asarray(cond, dtype=bool)
    issued = useful = 0
    for start in range(0, len(cond), 32):
        m = again.warp_masks(cond[start:start + 32], cost_if, cost_else)
        issued += m.shape[0]
        useful += int(m.sum())
    return issued, useful / (32 * issued)
''',
    ],
    "ex5_huber_vectorized": [
        # the installed loop itself, and NumPy's vectorize around it: still a Python loop per element
        '''huber_vectorized = lab.huber_loop
''',
        '''def huber_vectorized(pred, target, delta):
    return np.vectorize(lambda p, t: lab.huber_loop(np.array([p]), np.array([t]), delta)[0])(pred, target)
''',
    ],
    "ex6_fit_transfer": [
        # the course's straight-line fit (course 02: np.polyfit(batches, ..., 1)), unweighted
        '''def fit_transfer(sizes, seconds):
    slope, intercept = np.polyfit(sizes, seconds, 1)
    return intercept, 1.0 / slope
''',
    ],
}
