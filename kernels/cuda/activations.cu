// Elementwise activations, FP32 and FP16, vectorised to 16-byte accesses.
// Entry points: {relu,gelu_erf,gelu_tanh,swish}_{f32,f16}(const T* x, T* y, long long n).
// Each thread handles one 16-byte vector (4 floats or 8 halves) per grid-stride iteration; the
// tail (n not a multiple of the vector width) is handled element by element by the first thread
// block. Pointers must be 16-byte aligned (cudaMalloc guarantees 256).
// Needs prelude.cuh and activation_ops.cuh (prepended by the kernels crate).
//
// FP16 (issue 27: GELU and Swish in FP16 were 0.5–1.2 points short of 97 % of the copy of the
// same bytes, ReLU on the same bytes at 97.5 %, so the arithmetic per element was the limit: FP16
// carries twice the elements per byte of FP32). The FP16 kernels compute in FP32, two values per
// 32-bit word, eight per 16-byte vector, with the MUFU approximations ex2.approx and rcp.approx
// (about 2 ulp of FP32, invisible after rounding to FP16) instead of erff (two divergent
// polynomial branches and expf), tanhf and an IEEE division: bench/act_variants.cu measures
// each form against a copy and checks it on all 65536 FP16 inputs against f64. The FP32 GELU
// kernels, which met 97 %, keep the accurate functions of activation_ops.cuh.

// GELU, tanh form, for FP16 outputs: 0.5x(1 + tanh(k)) = x·σ(2k) exactly, k = √(2/π)(x + 0.044715x³);
// the constants are −2·log2(e)·√(2/π)·(1, 0.044715). Only the MUFU errors (a few ulp of FP32).
__device__ __forceinline__ float gelu_tanh_fast(float x) {
    const float p = fmaf(-1.029432396e-1f * x, x, -2.302208198e+00f) * x;
    return x * rcp_approx(1.f + ex2_approx(p));
}
// Swish, x·σ(x), for FP16 outputs: rcp.approx instead of the IEEE division.
__device__ __forceinline__ float swish_fast(float x) { return x * rcp_approx(1.f + ex2_approx(-1.442695041f * x)); }

namespace {

template <float (*OP)(float)>
__device__ __forceinline__ void map_f32(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long vecs = n / 4;
    const float4* __restrict__ xv = reinterpret_cast<const float4*>(x);
    float4* __restrict__ yv = reinterpret_cast<float4*>(y);
    GRID_STRIDE(i, vecs) {
        float4 v = xv[i];
        v.x = OP(v.x); v.y = OP(v.y); v.z = OP(v.z); v.w = OP(v.w);
        yv[i] = v;
    }
    if (blockIdx.x == 0) {
        for (long long i = vecs * 4 + threadIdx.x; i < n; i += blockDim.x) y[i] = OP(x[i]);
    }
}

template <float (*OP)(float)>
__device__ __forceinline__ void map_f16(const u16* __restrict__ x, u16* __restrict__ y, long long n) {
    const long long vecs = n / 8;
    const uint4* __restrict__ xv = reinterpret_cast<const uint4*>(x);
    uint4* __restrict__ yv = reinterpret_cast<uint4*>(y);
    GRID_STRIDE(i, vecs) {
        uint4 raw = xv[i];
        u32* w = reinterpret_cast<u32*>(&raw);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float lo = OP(h2f((u16)(w[j] & 0xffffu))), hi = OP(h2f((u16)(w[j] >> 16)));
            w[j] = (u32)f2h(lo) | ((u32)f2h(hi) << 16);
        }
        yv[i] = raw;
    }
    if (blockIdx.x == 0) {
        for (long long i = vecs * 8 + threadIdx.x; i < n; i += blockDim.x) y[i] = f2h(OP(h2f(x[i])));
    }
}

}  // namespace

#define ACTIVATION(name, op32, op16)                                                                  \
    extern "C" __global__ void name##_f32(const float* __restrict__ x, float* __restrict__ y, long long n) { \
        map_f32<op32>(x, y, n);                                                                       \
    }                                                                                                 \
    extern "C" __global__ void name##_f16(const u16* __restrict__ x, u16* __restrict__ y, long long n) { \
        map_f16<op16>(x, y, n);                                                                       \
    }

ACTIVATION(relu, relu_op, relu_op)
ACTIVATION(gelu_erf, gelu_erf_op, gelu_erf_fast)
ACTIVATION(gelu_tanh, gelu_tanh_op, gelu_tanh_fast)
// FP32 Swish too: its IEEE division held it at 91.7–93.5 % of the copy where ReLU on the same
// bytes took 96–98 %; rcp.approx took it to 96.2 % (bench/act_variants.cu), a few ulp of FP32 off.
ACTIVATION(swish, swish_fast, swish_fast)
