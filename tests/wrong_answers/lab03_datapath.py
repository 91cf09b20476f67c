"""Plausible wrong answers to lab 3, one per solution cell: each must score less than full marks."""

WRONG = {
    # forgets the copy back (to_cpu): only the inputs cross the bus
    "ex1_offload_decision": '''def offload_decision(flops, bytes_in, bytes_out, cpu, gpu, link):
    traffic = bytes_in + bytes_out
    cpu_s = max(flops / cpu["flops"], traffic / cpu["bandwidth"])
    gpu_s = link["latency"] + bytes_in / link["bandwidth"] + max(flops / gpu["flops"], traffic / gpu["bandwidth"])
    return cpu_s, gpu_s, ("gpu" if gpu_s < cpu_s else "cpu")
''',
    # compares compute only: the copies' bandwidth cost is forgotten (latency kept)
    "ex2_break_even_elements": '''def break_even_elements(flops_per_element, in_per_element, out_per_element, cpu, gpu, link):
    traffic = in_per_element + out_per_element
    cpu_per = max(flops_per_element / cpu["flops"], traffic / cpu["bandwidth"])
    gpu_per = max(flops_per_element / gpu["flops"], traffic / gpu["bandwidth"])
    if gpu_per >= cpu_per:
        return None
    return int(2 * link["latency"] // (cpu_per - gpu_per)) + 1
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
