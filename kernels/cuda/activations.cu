// Elementwise activations, FP32 and FP16, vectorised to 16-byte accesses.
// Entry points: {relu,gelu_erf,gelu_tanh,swish}_{f32,f16}(const T* x, T* y, long long n).
// Each thread handles one 16-byte vector (4 floats or 8 halves) per grid-stride iteration; the
// tail (n not a multiple of the vector width) is handled element by element by the first thread
// block. Pointers must be 16-byte aligned (cudaMalloc guarantees 256).
// Needs prelude.cuh and activation_ops.cuh (prepended by the kernels crate).

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

#define ACTIVATION(name, op)                                                                          \
    extern "C" __global__ void name##_f32(const float* __restrict__ x, float* __restrict__ y, long long n) { \
        map_f32<op>(x, y, n);                                                                         \
    }                                                                                                 \
    extern "C" __global__ void name##_f16(const u16* __restrict__ x, u16* __restrict__ y, long long n) { \
        map_f16<op>(x, y, n);                                                                         \
    }

ACTIVATION(relu, relu_op)
ACTIVATION(gelu_erf, gelu_erf_op)
ACTIVATION(gelu_tanh, gelu_tanh_op)
ACTIVATION(swish, swish_op)
