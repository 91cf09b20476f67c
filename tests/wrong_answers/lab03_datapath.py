"""Plausible wrong answers to lab 3, one per solution cell: each must score less than full marks."""

WRONG = {
    # prices every GPU step as its own offload (a round trip per step, as gc.datapath.offload_times does for one
    # workload): a run of GPU steps that pays only with one shared pair of copies stays on the CPU
    "ex1_place_pipeline": '''def place_pipeline(steps, nbytes, cpu, gpu, link):
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
    "ex2_min_link_bandwidth": '''def min_link_bandwidth(flops, bytes_in, bytes_out, cpu, gpu, latency):
    moved = bytes_in + bytes_out
    on_cpu = max(flops / cpu["flops"], moved / cpu["bandwidth"])
    on_gpu = max(flops / gpu["flops"], moved / gpu["bandwidth"])
    left = on_cpu - on_gpu - latency
    return moved / left if left > 0 else None
''',
    # right chunk size, but never frees: the previous chunk and its result are still alive when the next arrives
    "ex3_chunked_map": '''def chunked_map(x, mem, fn, copies):
    out = np.empty_like(x)
    chunk = mem.budget // (copies * x.itemsize)
    for start in range(0, x.size, chunk):
        d = mem.to_device(x[start:start + chunk])
        r = fn(d)
        out[start:start + chunk] = mem.to_host(r)
    return out
''',
    # assumes a divergent warp always pays for both paths, and pads the last warp as if full
    "ex4_warp_execution": '''def warp_execution(cond, cost_if, cost_else):
    cond = np.asarray(cond, dtype=bool)
    warps = -(-len(cond) // 32)
    issued = warps * (cost_if + cost_else)
    useful = cost_if * int(cond.sum()) + cost_else * int((~cond).sum())
    return issued, useful / (32 * issued)
''',
    # correct values, but still a Python loop over elements
    "ex5_huber_vectorized": '''def huber_vectorized(pred, target, delta):
    out = np.empty(len(pred), dtype=np.result_type(pred, target))
    for i in range(len(pred)):
        r = pred[i] - target[i]
        out[i] = 0.5 * r * r if abs(r) <= delta else delta * (abs(r) - 0.5 * delta)
    return out
''',
    # an ordinary (unweighted) least-squares line — this exercise's old reference: the largest copies' noise
    # drags the intercept, so the latency misses the 15 % band on several hidden series
    "ex6_fit_transfer": '''def fit_transfer(sizes, seconds):
    slope, intercept = np.polyfit(sizes, seconds, 1)
    return intercept, 1.0 / slope
''',
}
