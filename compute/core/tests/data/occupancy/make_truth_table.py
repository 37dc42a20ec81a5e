#!/usr/bin/env python3
"""Driver truth table for the occupancy calculator (runs on a GPU machine with CuPy).

For kernels of many register and static shared-memory footprints, every block size from 32 to
1024 (step 32) and several dynamic shared-memory sizes and carveout preferences, asks the driver
(cuOccupancyMaxActiveBlocksPerMultiprocessor) how many blocks fit on one SM, and writes

    cc,threads,regs,smem_static,smem_dynamic,carveout,blocks_per_sm

to stdout (regs and smem_static as the driver reports them for the compiled function;
carveout -1 = the default preference). Usage: python3 make_truth_table.py > truth_sm90.csv
"""
import sys
import cupy as cp
from cupy.cuda import driver, runtime

# A kernel whose register use follows -maxrregcount: many independent accumulators stay live.
SRC = r'''
extern "C" __global__ void burn(float* out, int n) {
    __shared__ float pad[SMEM_FLOATS + 1];
    extern __shared__ float dyn[];
    float a[256];
    #pragma unroll
    for (int i = 0; i < 256; ++i) a[i] = out[(threadIdx.x + i * 33) % n];
    #pragma unroll 1
    for (int k = 0; k < n; ++k) {
        #pragma unroll
        for (int i = 0; i < 256; ++i) a[i] = a[i] * a[(i + 1) & 255] + 1.0f;
    }
    float s = 0.f;
    #pragma unroll
    for (int i = 0; i < 256; ++i) s += a[i];
    pad[threadIdx.x % (SMEM_FLOATS + 1)] = s;
    dyn[0] = s;
    __syncthreads();
    out[threadIdx.x] = pad[(threadIdx.x + 1) % (SMEM_FLOATS + 1)] + dyn[0];
}
'''

dev = cp.cuda.Device()
props = runtime.getDeviceProperties(dev.id)
cc = f"{props['major']}.{props['minor']}"
reg_targets = [16, 24, 30, 32, 37, 40, 48, 56, 64, 72, 80, 96, 112, 128, 144, 168, 200, 232, 255]
smem_static_kb = [0, 1, 6, 20, 47]
dynamic = [0, 1024, 8192, 24576, 49152, 81920, 150000]
carveouts = [-1, 0, 25, 50, 100]
print("cc,threads,regs,smem_static,smem_dynamic,carveout,blocks_per_sm")
seen = set()
for r in reg_targets:
    for skb in smem_static_kb:
        floats = max(skb * 1024 // 4 - 1, 0)
        mod = cp.RawModule(code=SRC.replace("SMEM_FLOATS", str(floats)), options=(f"--maxrregcount={r}",))
        k = mod.get_function("burn")
        regs = k.num_regs
        static = k.shared_size_bytes
        key = (regs, static)
        if key in seen:
            continue
        seen.add(key)
        for dyn in dynamic:
            if static + dyn > props["sharedMemPerBlockOptin"]:
                continue
            k.max_dynamic_shared_size_bytes = dyn
            for c in carveouts:
                k.preferred_shared_memory_carveout = c
                for t in range(32, 1025, 32):
                    if t > k.max_threads_per_block:
                        continue
                    b = driver.occupancyMaxActiveBlocksPerMultiprocessor(k.kernel.ptr, t, dyn)
                    print(f"{cc},{t},{regs},{static},{dyn},{c},{b}")
sys.stdout.flush()
