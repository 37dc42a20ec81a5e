// The lab CNN's inference path around the tensor-core convolutions of conv_ladder.cu (rung 4):
// bias + activation + 2x2 max-pool fused in one pass over the convolution's FP16 output, and the
// dense layer that turns the pooled features into logits. FP16 storage, FP32 math.
// Entry points:
//   bias_{relu,gelu,swish}_pool_f16(const u16* y, const float* bias, u16* out, long long planes,
//                                   int C, int Ho, int Wo)
//       y [planes / C images][C][Ho][Wo] (convolution without bias), out [..][C][Ho/2][Wo/2];
//       the maximum is taken after the activation (GELU and Swish are not monotonic); a NaN in a
//       window stays NaN.
//   dense_logits_f16(const u16* x, const u16* w, const float* b, float* z, int B, int F, int O)
//       z[B][O] = x[B][F] . w[O][F]^T + b; F a multiple of 8, O <= 16; dynamic shared memory
//       O * F * 2 bytes (the weights).
// Needs prelude.cuh and activation_ops.cuh (prepended by the kernels crate).

namespace {

__device__ __forceinline__ float nan_max(float m, float v) { return (v > m || v != v) ? v : m; }

template <float (*OP)(float)>
__device__ __forceinline__ void bias_act_pool(const u16* __restrict__ y, const float* __restrict__ bias,
                                              u16* __restrict__ out, long long planes, int C, int Ho, int Wo) {
    const int Ph = Ho / 2, Pw = Wo / 2;
    const long long total = planes * Ph * Pw;
    const bool pairs = (Wo & 1) == 0;  // every window's row pair is 4-byte aligned
    GRID_STRIDE(i, total) {
        const int px = (int)(i % Pw);
        const long long t = i / Pw;
        const int py = (int)(t % Ph);
        const long long plane = t / Ph;
        const float b = bias[plane % C];
        const long long o0 = (plane * Ho + 2 * py) * Wo + 2 * px;
        float v0, v1, v2, v3;
        if (pairs) {
            const u32 a = *reinterpret_cast<const u32*>(y + o0), c = *reinterpret_cast<const u32*>(y + o0 + Wo);
            v0 = h2f((u16)(a & 0xffffu)); v1 = h2f((u16)(a >> 16));
            v2 = h2f((u16)(c & 0xffffu)); v3 = h2f((u16)(c >> 16));
        } else {
            v0 = h2f(y[o0]); v1 = h2f(y[o0 + 1]); v2 = h2f(y[o0 + Wo]); v3 = h2f(y[o0 + Wo + 1]);
        }
        float m = OP(v0 + b);
        m = nan_max(m, OP(v1 + b));
        m = nan_max(m, OP(v2 + b));
        m = nan_max(m, OP(v3 + b));
        out[i] = f2h(m);
    }
}

}  // namespace

#define BIAS_ACT_POOL(name, op)                                                                                  \
    extern "C" __global__ void name##_f16(const u16* __restrict__ y, const float* __restrict__ bias,          \
                                          u16* __restrict__ out, long long planes, int C, int Ho, int Wo) {   \
        bias_act_pool<op>(y, bias, out, planes, C, Ho, Wo);                                                   \
    }
BIAS_ACT_POOL(bias_relu_pool, relu_op)
BIAS_ACT_POOL(bias_gelu_pool, gelu_erf_op)
BIAS_ACT_POOL(bias_swish_pool, swish_op)

#define DENSE_MAX_OUT 16

// One warp per image (grid-stride over images); the weights staged once per block in shared
// memory; each lane takes 8 features (one 16-byte load) at a time, then a warp sum per output.
extern "C" __global__ void dense_logits_f16(const u16* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ b,
                                            float* __restrict__ z, int B, int F, int O) {
    extern __shared__ __align__(16) unsigned char dense_smem[];
    uint4* ws = reinterpret_cast<uint4*>(dense_smem);
    const int vecs = F / 8;
    const uint4* wv = reinterpret_cast<const uint4*>(w);
    for (int e = threadIdx.x; e < O * vecs; e += blockDim.x) ws[e] = wv[e];
    __syncthreads();
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (long long img = (long long)blockIdx.x * warps + (threadIdx.x >> 5); img < B; img += (long long)gridDim.x * warps) {
        const uint4* xv = reinterpret_cast<const uint4*>(x + img * F);
        float acc[DENSE_MAX_OUT];
#pragma unroll
        for (int o = 0; o < DENSE_MAX_OUT; ++o) acc[o] = 0.f;
        for (int v = lane; v < vecs; v += 32) {
            uint4 xr = xv[v];
            const u32* xp = reinterpret_cast<const u32*>(&xr);
            float xf[8];
#pragma unroll
            for (int j = 0; j < 4; ++j) { xf[2 * j] = h2f((u16)(xp[j] & 0xffffu)); xf[2 * j + 1] = h2f((u16)(xp[j] >> 16)); }
#pragma unroll
            for (int o = 0; o < DENSE_MAX_OUT; ++o) {
                if (o < O) {
                    uint4 wr = ws[o * vecs + v];
                    const u32* wp = reinterpret_cast<const u32*>(&wr);
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        acc[o] = fmaf(xf[2 * j], h2f((u16)(wp[j] & 0xffffu)), acc[o]);
                        acc[o] = fmaf(xf[2 * j + 1], h2f((u16)(wp[j] >> 16)), acc[o]);
                    }
                }
            }
        }
#pragma unroll
        for (int o = 0; o < DENSE_MAX_OUT; ++o) {
            if (o < O) {
                const float s = warp_sum(acc[o]);
                if (lane == 0) z[img * O + o] = s + b[o];
            }
        }
    }
}
