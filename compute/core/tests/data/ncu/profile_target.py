#!/usr/bin/env python3
"""A small program for Nsight Compute to profile: our activation kernels (kernels/cuda/activations.cu,
compiled by NVRTC through CuPy) on a 8192×4096 tensor, FP32 and FP16, and a CuPy matmul.
It prints a line of its own output between launches, as real programs do."""
import os, sys
import cupy as cp

here = os.path.dirname(os.path.abspath(__file__))
kdir = os.path.join(here, "../../../../kernels/cuda")
src = open(os.path.join(kdir, "prelude.cuh")).read() + open(os.path.join(kdir, "activations.cu")).read()
mod = cp.RawModule(code=src, options=("-lineinfo", "-std=c++17"), name_expressions=None)
n = 8192 * 4096
for dtype, suffix in ((cp.float32, "f32"), (cp.float16, "f16")):
    x = cp.random.standard_normal(n, dtype=cp.float32).astype(dtype)
    y = cp.empty_like(x)  # f16 kernels take the bits as unsigned short: same layout
    for name in ("relu", "gelu_erf"):
        k = mod.get_function(f"{name}_{suffix}")
        vec = 4 if suffix == "f32" else 8
        blocks = min((n // vec + 255) // 256, 132 * 8)
        k((blocks,), (256,), (x, y, cp.int64(n)))
        cp.cuda.Device().synchronize()
        print(f"program output: ran {name}_{suffix}, y[0] = {float(y[0]):.4f}", flush=True)
a = cp.random.standard_normal((1024, 1024), dtype=cp.float32)
print("program output: matmul checksum", float((a @ a).sum()), flush=True)
