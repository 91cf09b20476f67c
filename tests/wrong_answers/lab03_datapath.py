"""Plausible wrong answers to lab 3, one per solution cell: each must score less than full marks."""

WRONG = {
    # prices every GPU step as its own offload (a round trip per step, as gc.datapath.offload_times does for one
    # workload): a run of GPU steps that pays only with one shared pair of copies stays on the CPU
    "place_pipeline": '''def place_pipeline(steps, nbytes, cpu, gpu, link):
    copy = link["latency"] + nbytes / link["bandwidth"]
    total, placement = 0.0, []
    for s in steps:
        on_cpu = max(s["flops"] / cpu["flops"], s["bytes"] / cpu["bandwidth"])
        on_gpu = 2 * copy + max(s["flops"] / gpu["flops"], s["bytes"] / gpu["bandwidth"])
        place = "gpu" if s["gpu_ok"] and on_gpu < on_cpu else "cpu"
        total += on_gpu if place == "gpu" else on_cpu
        placement.append(place)
    return total, placement
''',
    # forgets the copy back's latency: one latency instead of two
    "min_link_bandwidth": '''def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    moved = bytes_in + bytes_out
    on_cpu = max(flops / cpu["flops"], moved / cpu["bandwidth"])
    on_gpu = max(flops / gpu["flops"], moved / gpu["bandwidth"])
    left = on_cpu - on_gpu - latency
    return moved / left if left > 0 else None
''',
    # right chunk size, but never frees: the previous chunk and its result are still alive when the next arrives
    "chunked_map": '''def chunked_map(x, mem, fn, copies):
    out = np.empty_like(x)
    chunk = mem.budget // (copies * x.itemsize)
    for start in range(0, x.size, chunk):
        d = mem.to_device(x[start:start + chunk])
        r = fn(d)
        out[start:start + chunk] = mem.to_host(r)
    return out
''',
    # the first design that comes to mind: if-items first, always (right when the if-path is the dearer one, or
    # when the items fill whole warps; wrong when the partial last warp should hold the if-items alone)
    "warp_layout": '''def warp_layout(cond, cost_if, cost_else):
    cond = np.asarray(cond, dtype=bool)
    order = np.argsort(~cond, kind="stable")
    issued = 0
    for start in range(0, len(cond), 32):
        lanes = cond[order[start:start + 32]]
        issued += cost_if * int(lanes.any()) + cost_else * int(not lanes.all())
    useful = cost_if * int(cond.sum()) + cost_else * int((~cond).sum())
    return order, issued, useful / (32 * issued)
''',
    # vectorized, but swaps the cutoffs: hi bounds the negative side, lo the positive one
    "asym_tukey_vectorized": '''def asym_tukey_vectorized(pred, target, lo, hi):
    r = pred - target
    c = np.where(r >= 0, lo, hi)
    w = np.maximum(1 - (r / c) ** 2, 0)
    return c * c / 6 * (1 - w**3), r * w * w
''',
    # the weighted fit of the old exercise on each size's median run (the statistic gc.measure reports): with
    # about half the runs interrupted, the median of five is often an interrupted one
    "transfer_plan": '''def transfer_plan(sizes, seconds, fraction):
    t = np.median(seconds, axis=1)
    slope, latency = np.polyfit(sizes, t, 1, w=1 / t)
    bandwidth = 1 / slope
    return latency, bandwidth, fraction / (1 - fraction) * latency * bandwidth
''',
}
