#!/usr/bin/env python3
"""The driver's answers for launches beyond the per-block limits (runs on a GPU machine; needs
only Python 3 and the CUDA driver, libcuda.so: no CuPy, no toolkit, the kernel is PTX text).

For one tiny kernel whose opt-in dynamic shared memory is raised to the per-block maximum
(cudaFuncAttributeMaxDynamicSharedMemorySize), asks cuOccupancyMaxActiveBlocksPerMultiprocessor
about block sizes and dynamic shared-memory sizes on both sides of the per-block limits
(1024 threads; sharedMemPerBlockOptin) and writes

    cc,threads,regs,smem_static,smem_dynamic,carveout,blocks_per_sm

to stdout, where blocks_per_sm is the driver's answer or `error:NAME` when the driver refused
the query (or, for `setattr_error:NAME`, the carveout preference). carveout -1 = the default.
Usage: python3 make_over_limit_table.py > over_limit_sm90.csv
"""
import ctypes
import sys

PTX = rb"""
.version 7.8
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b64 %rd<3>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""

cuda = ctypes.CDLL("libcuda.so.1")


def name(code):
    s = ctypes.c_char_p()
    cuda.cuGetErrorName(code, ctypes.byref(s))
    return s.value.decode() if s.value else str(code)


def check(code, what):
    if code != 0:
        sys.exit(f"{what}: {name(code)}")


check(cuda.cuInit(0), "cuInit")
dev = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def dev_attr(attr):
    v = ctypes.c_int()
    check(cuda.cuDeviceGetAttribute(ctypes.byref(v), attr, dev), f"attribute {attr}")
    return v.value


major, minor = dev_attr(75), dev_attr(76)  # COMPUTE_CAPABILITY_MAJOR / _MINOR
optin = dev_attr(97)  # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
mod = ctypes.c_void_p()
check(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)), "cuModuleLoadData")
fn = ctypes.c_void_p()
check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"k"), "cuModuleGetFunction")


def fn_attr(attr):
    v = ctypes.c_int()
    check(cuda.cuFuncGetAttribute(ctypes.byref(v), attr, fn), f"function attribute {attr}")
    return v.value


regs, static = fn_attr(4), fn_attr(1)  # NUM_REGS, SHARED_SIZE_BYTES
# CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: the opt-in, to the most a block may use.
check(cuda.cuFuncSetAttribute(fn, 8, optin - static), "max dynamic shared memory")

print("cc,threads,regs,smem_static,smem_dynamic,carveout,blocks_per_sm")
threads = [0, 32, 256, 1024, 1025, 1056, 2048, 4096]
dynamic = [0, 49152, optin - static, optin - static + 1, optin + 1024, 300000, 1 << 20]
for carveout in [-1, 0, 100, 101]:
    # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    set_code = cuda.cuFuncSetAttribute(fn, 9, carveout)
    for t in threads:
        for d in dynamic:
            if set_code != 0:
                answer = f"setattr_error:{name(set_code)}"
            else:
                n = ctypes.c_int()
                code = cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    ctypes.byref(n), fn, t, ctypes.c_size_t(d))
                answer = str(n.value) if code == 0 else f"error:{name(code)}"
            print(f"{major}.{minor},{t},{regs},{static},{d},{carveout},{answer}")
sys.stdout.flush()
