"""A one-thread pointer chase as a Triton kernel: each step's load address is the previous
load's value, so steps cannot overlap and the time per step is the load latency. Imported
only by `rldse calibrate gpu` on CUDA, when Triton is installed."""

import triton
import triton.language as tl


@triton.jit
def chase(nxt_ptr, start_ptr, out_ptr, steps):
    p = tl.load(start_ptr)
    for _ in range(steps):
        p = tl.load(nxt_ptr + p, cache_modifier=".cg")  # .cg: skip L1, so L2 is what hits
    tl.store(out_ptr, p)
