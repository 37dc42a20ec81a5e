// Row-wise LayerNorm (affine) and fused LayerNorm + GELU (erf), FP32 and FP16 storage, FP32
// statistics. One block per row; 16-byte vector accesses and the row held in registers when the
// row width allows it.
// Entry points: {layernorm,layernorm_gelu}_{f32,f16}(const T* x, T* y, const float* gamma,
// const float* beta, int rows, int cols, float eps). Needs prelude.cuh.

namespace {


// Loads element i of a row as float.
template <class D>
__device__ __forceinline__ float at(const typename D::T* row, int i) { return D::ld(row[i]); }

// Rows that fit in registers (cols / VEC ≤ MAXV · blockDim): one DRAM read, statistics from
// registers (two-pass: mean, then the sum of squared deviations), one DRAM write.
// Other rows: pass 1 sums (x − x₀) and its square, pass 2 re-reads the row (an L1/L2 hit).
template <class D, int VEC, int MAXV, bool GELU>
__device__ void layernorm_row(const typename D::T* __restrict__ x, typename D::T* __restrict__ y, const float* __restrict__ gamma,
                              const float* __restrict__ beta, int rows, int cols, float eps) {
    const bool vec = cols % VEC == 0;
    const int nv = cols / VEC;
    const bool in_regs = vec && nv <= MAXV * (int)blockDim.x;
    const bool gb_vec = ((reinterpret_cast<size_t>(gamma) | reinterpret_cast<size_t>(beta)) & 15) == 0;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename D::T* xr = x + (long long)r * cols;
        typename D::T* yr = y + (long long)r * cols;
        if (in_regs) {
            float v[MAXV][VEC];
            float s = 0.f;
#pragma unroll
            for (int k = 0; k < MAXV; ++k) {
                const int vi = threadIdx.x + k * blockDim.x;
                if (vi < nv) {
                    const uint4 raw = reinterpret_cast<const uint4*>(xr)[vi];
                    const typename D::T* e = reinterpret_cast<const typename D::T*>(&raw);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) { v[k][j] = D::ld(e[j]); s += v[k][j]; }
                }
            }
            const float mean = block_sum(s) / cols;
            float ss = 0.f;
#pragma unroll
            for (int k = 0; k < MAXV; ++k) {
                if (threadIdx.x + k * blockDim.x < nv) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) { const float d = v[k][j] - mean; ss += d * d; }
                }
            }
            const float rstd = rsqrtf(block_sum(ss) / cols + eps);
#pragma unroll
            for (int k = 0; k < MAXV; ++k) {
                const int vi = threadIdx.x + k * blockDim.x;
                if (vi < nv) {
                    uint4 raw;
                    typename D::T* e = reinterpret_cast<typename D::T*>(&raw);
                    // gamma and beta four at a time (VEC is 4 or 8; cudaMalloc'd, so 16-byte
                    // aligned, which gb_vec checked): a quarter of the load instructions, which
                    // is what limits the FP16 rows (half the bytes per element of FP32).
                    float ga[VEC], be[VEC];
                    if (gb_vec) {
#pragma unroll
                        for (int q = 0; q < VEC / 4; ++q) {
                            const float4 g4 = reinterpret_cast<const float4*>(gamma)[vi * (VEC / 4) + q];
                            const float4 b4 = reinterpret_cast<const float4*>(beta)[vi * (VEC / 4) + q];
                            ga[4 * q] = g4.x; ga[4 * q + 1] = g4.y; ga[4 * q + 2] = g4.z; ga[4 * q + 3] = g4.w;
                            be[4 * q] = b4.x; be[4 * q + 1] = b4.y; be[4 * q + 2] = b4.z; be[4 * q + 3] = b4.w;
                        }
                    } else {
#pragma unroll
                        for (int j = 0; j < VEC; ++j) { ga[j] = gamma[vi * VEC + j]; be[j] = beta[vi * VEC + j]; }
                    }
#pragma unroll
                    for (int j = 0; j < VEC; ++j) {
                        float o = (v[k][j] - mean) * rstd * ga[j] + be[j];
                        if (GELU) o = gelu_erf_op(o);
                        e[j] = D::st(o);
                    }
                    reinterpret_cast<uint4*>(yr)[vi] = raw;
                }
            }
        } else {
            const float shift = at<D>(xr, 0);
            float s = 0.f, ss = 0.f;
            for (int i = threadIdx.x; i < cols; i += blockDim.x) { const float d = at<D>(xr, i) - shift; s += d; ss += d * d; }
            s = block_sum(s);
            ss = block_sum(ss);
            const float mean_d = s / cols;
            const float var = fmaxf(ss / cols - mean_d * mean_d, 0.f);
            const float mean = shift + mean_d, rstd = rsqrtf(var + eps);
            for (int i = threadIdx.x; i < cols; i += blockDim.x) {
                float o = (at<D>(xr, i) - mean) * rstd * gamma[i] + beta[i];
                if (GELU) o = gelu_erf_op(o);
                yr[i] = D::st(o);
            }
        }
        __syncthreads();  // block_sum's shared scratch is reused by the next row
    }
}

}  // namespace

#define NORM_ENTRY(name, gelu)                                                                                   \
    extern "C" __global__ void name##_f32(const float* x, float* y, const float* g, const float* b, int r, int c, float eps) { \
        layernorm_row<F32, 4, 8, gelu>(x, y, g, b, r, c, eps);                                                      \
    }                                                                                                            \
    extern "C" __global__ void name##_f16(const u16* x, u16* y, const float* g, const float* b, int r, int c, float eps) { \
        layernorm_row<F16, 8, 4, gelu>(x, y, g, b, r, c, eps);                                                      \
    }

NORM_ENTRY(layernorm, false)
NORM_ENTRY(layernorm_gelu, true)
