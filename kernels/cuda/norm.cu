// Row-wise LayerNorm (affine) and fused LayerNorm + GELU (erf), FP32 and FP16 storage, FP32
// statistics. One block of 128 threads per row (the launcher's geometry, lab.rs); 16-byte vector
// accesses and the row held in registers when the row width allows it.
// Entry points: {layernorm,layernorm_gelu}_{f32,f16}(const T* x, T* y, const float* gamma,
// const float* beta, int rows, int cols, float eps). Needs prelude.cuh and activation_ops.cuh.
//
// Why it is built this way (issue 27; bench/ln_variants.cu measures each choice against a copy of
// the same bytes, results in docs/results/):
// - FP16: __launch_bounds__(128, 8), at most 64 registers a thread, 8 blocks (50 % occupancy) an
//   SM. The kernel before took 96 registers (31 % occupancy, limited by registers) and DRAM was
//   65 % busy for FP16 LayerNorm+GELU. FP32: __launch_bounds__(128, 4) (up to 128 registers):
//   its row takes 32 registers as raw vectors, and capped at 64 the unguarded variant fell to
//   47–57 % of the copy (spills), at 128 it took 100 % (LayerNorm) and 99.6 % (+GELU).
// - The kernel lab's row (cols = 4096 = vector width · vectors a thread · 128) runs an instance
//   without bounds checks (row_in_regs<…, FULL>); other widths the guarded one.
// - The row is held as the raw 16-byte vectors it was loaded as (4 registers per vector: half
//   the registers of floats for FP16) and converted again where used: one DRAM read of x.
// - Statistics in one block reduction: each thread's count, mean and sum of squared deviations
//   about its own mean (two passes over its registers), combined across threads with Chan's
//   pairwise formula, which keeps the two-pass accuracy (no cancellation of a sum of squares
//   about a far shift); one barrier a row instead of five (two block_sum calls and the trailing
//   one), the per-warp partials double-buffered by row parity.
// - GELU in FP16 output: x·σ(P(x)) (gelu_erf_fast below), 8 instructions and 2 MUFU a value
//   instead of erff's two divergent polynomial branches and expf: the erf of every element was
//   the limit of FP16 LayerNorm+GELU (each variant lost 12–21 points of the copy when GELU was
//   added). FP32 output keeps erff: its error bound (2e-5) is below the approximation's 2.5e-5.

namespace {

constexpr int LN_THREADS = 128;  // the launcher's block (lab.rs); __launch_bounds__ below

// Loads element i of a row as float.
template <class D>
__device__ __forceinline__ float at(const typename D::T* row, int i) { return D::ld(row[i]); }

// Element j of a 16-byte vector as float.
template <class D, int VEC>
__device__ __forceinline__ float elem(const uint4& raw, int j) { return D::ld(reinterpret_cast<const typename D::T*>(&raw)[j]); }

// The output activation: erff (gelu_erf_op) for FP32, the fast form for 2-byte outputs.
template <class D, bool GELU>
__device__ __forceinline__ float out_act(float o) {
    if (!GELU) return o;
    return sizeof(typename D::T) == 2 ? gelu_erf_fast(o) : gelu_erf_op(o);
}

// (count, mean, M2) of b merged into a (Chan et al.): exact in exact arithmetic, and with no
// cancellation, unlike a sum of squares about a shift. Either count may be 0.
__device__ __forceinline__ void chan_merge(float& n, float& mean, float& m2, float nb, float meanb, float m2b) {
    const float nt = n + nb;
    if (nt == 0.f) return;
    const float d = meanb - mean, f = __fdividef(nb, nt);
    mean = fmaf(d, f, mean);
    m2 = m2 + m2b + d * d * n * f;
    n = nt;
}

// One row held in registers (cols / VEC ≤ MAXV · blockDim). FULL: every thread holds exactly MAXV
// vectors (cols = VEC · MAXV · blockDim, 4096 at 128 threads) and gamma, beta are 16-byte aligned,
// so the code has no guard: the kernel lab's shape. The guarded instance took 91.9 % of the copy
// for FP32 LayerNorm+GELU where the unguarded one took 99.6 % (bench/ln_variants.cu, H100).
template <class D, int VEC, int MAXV, bool GELU, bool FULL>
__device__ __forceinline__ void row_in_regs(const typename D::T* __restrict__ xr, typename D::T* __restrict__ yr,
                                            const float* __restrict__ gamma, const float* __restrict__ beta,
                                            int nv, int cols, float eps, bool gb_vec, float3 (&part)[2][LN_THREADS / 32],
                                            int& parity) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    uint4 raw[MAXV];
    float s = 0.f;
    int mine = 0;  // this thread's vectors
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
        const int vi = threadIdx.x + k * blockDim.x;
        if (FULL || vi < nv) {
            raw[k] = reinterpret_cast<const uint4*>(xr)[vi];
            ++mine;
#pragma unroll
            for (int j = 0; j < VEC; ++j) s += elem<D, VEC>(raw[k], j);
        }
    }
    float n = (float)(mine * VEC);
    float mean = n > 0.f ? __fdividef(s, n) : 0.f, m2 = 0.f;
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
        if (FULL || k < mine) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) { const float d = elem<D, VEC>(raw[k], j) - mean; m2 = fmaf(d, d, m2); }
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float nb = __shfl_xor_sync(0xffffffffu, n, o), mb = __shfl_xor_sync(0xffffffffu, mean, o),
                    qb = __shfl_xor_sync(0xffffffffu, m2, o);
        // The lower lane merges the upper into itself and the upper the lower: the same
        // operands in the same order, so every lane of the warp ends with the same bits.
        if (lane & o) { float n2 = nb, mean2 = mb, q2 = qb; chan_merge(n2, mean2, q2, n, mean, m2); n = n2; mean = mean2; m2 = q2; }
        else chan_merge(n, mean, m2, nb, mb, qb);
    }
    if (lane == 0) part[parity][warp] = make_float3(n, mean, m2);
    __syncthreads();  // the only barrier of the row: part[parity] is next written two rows on
    float3 t = part[parity][0];
    for (int w = 1; w < warps; ++w) { const float3 u = part[parity][w]; chan_merge(t.x, t.y, t.z, u.x, u.y, u.z); }
    parity ^= 1;
    mean = t.y;
    const float rstd = rsqrtf(__fdividef(t.z, (float)cols) + eps);
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
        const int vi = threadIdx.x + k * blockDim.x;
        if (FULL || k < mine) {
            uint4 o4;
            typename D::T* e = reinterpret_cast<typename D::T*>(&o4);
            // gamma and beta four at a time (VEC is 4 or 8; cudaMalloc'd, so 16-byte
            // aligned, which gb_vec checked): a quarter of the load instructions, which
            // is what limits the FP16 rows (half the bytes per element of FP32).
            float ga[VEC], be[VEC];
            if (FULL || gb_vec) {
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
                const float o = fmaf((elem<D, VEC>(raw[k], j) - mean) * rstd, ga[j], be[j]);
                e[j] = D::st(out_act<D, GELU>(o));
            }
            reinterpret_cast<uint4*>(yr)[vi] = o4;
        }
    }
}

// A row for each group of WPR warps (WPR · 32 lanes; WPR divides the block's warps), each lane
// holding up to WV of the row's 16-byte vectors (cols / VEC ≤ WV · 32 · WPR); FULL: exactly WV
// each and gamma, beta 16-byte aligned, no guard (4096 FP16 values: WPR 1, WV 16). Statistics
// without a block barrier: each warp two-pass over its registers with shuffles (its exact mean,
// then its sum of squared deviations about it), then for WPR > 1 one exchange of the warps'
// (count, mean, M2) through shared memory behind a named barrier of the group's WPR warps only,
// merged with Chan's formula in the same order in every lane. Warps never wait for a warp of
// another row, so a warp's loads overlap other warps' reductions. Rows r = blockIdx.x · groups +
// group, striding by gridDim.x · groups: with the launcher's one block per row, blocks past
// rows / groups find no row and exit at once (bench/ln_variants.cu times that, row "S''").
template <class D, int VEC, int WPR, int WV, bool GELU, bool FULL>
__device__ __forceinline__ void rows_by_warps(const typename D::T* __restrict__ x, typename D::T* __restrict__ y,
                                              const float* __restrict__ gamma, const float* __restrict__ beta,
                                              int rows, int cols, float eps, int nv, bool gb_vec) {
    constexpr int GL = 32 * WPR;  // lanes a row
    static_assert(WPR == 1 || LN_THREADS / GL <= 2, "named barriers 1 and 2: at most two groups of several warps");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int grp = warp / WPR, wig = warp % WPR, gl = wig * 32 + lane;
    const int groups = (int)blockDim.x / GL;
    __shared__ float3 xch[2][LN_THREADS / 32];  // WPR > 1: per-warp (count, mean, M2), by row parity
    int parity = 0;
    // This warp's vectors of a row (the same for every row): guarded rows may leave lanes empty.
    int wcnt = 0;
#pragma unroll
    for (int k = 0; k < WV; ++k) wcnt += FULL ? 32 : min(max(nv - (k * GL + wig * 32), 0), 32);
    for (long long r = (long long)blockIdx.x * groups + grp; r < rows; r += (long long)gridDim.x * groups) {
        const typename D::T* xr = x + r * cols;
        typename D::T* yr = y + r * cols;
        uint4 raw[WV];
        float s = 0.f;
        int mine = 0;  // this lane's vectors
#pragma unroll
        for (int k = 0; k < WV; ++k) {
            const int vi = gl + k * GL;
            if (FULL || vi < nv) {
                raw[k] = reinterpret_cast<const uint4*>(xr)[vi];
                ++mine;
#pragma unroll
                for (int j = 0; j < VEC; ++j) s += elem<D, VEC>(raw[k], j);
            }
        }
        // xor butterflies: both lanes of a pair add the same two operands, so every lane of the
        // warp ends with the same bits.
        const float nw = (float)(wcnt * VEC);
        float mean = nw > 0.f ? __fdividef(warp_sum(s), nw) : 0.f, m2 = 0.f;
#pragma unroll
        for (int k = 0; k < WV; ++k) {
            if (FULL || k < mine) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) { const float d = elem<D, VEC>(raw[k], j) - mean; m2 = fmaf(d, d, m2); }
            }
        }
        m2 = warp_sum(m2);
        if (WPR > 1) {
            if (lane == 0) xch[parity][warp] = make_float3(nw, mean, m2);
            // The group's warps only (barrier 1 or 2; __syncthreads is 0). xch[parity] is next
            // written two rows on, after this group's next barrier, which every warp of the
            // group reaches only after reading this row's entries.
            // Immediate ids: a register id makes ptxas reserve all 16 barriers of the block.
            if (grp == 0) asm volatile("bar.sync 1, %0;" ::"n"(GL) : "memory");
            else asm volatile("bar.sync 2, %0;" ::"n"(GL) : "memory");
            float3 t = xch[parity][grp * WPR];
#pragma unroll
            for (int w = 1; w < WPR; ++w) { const float3 u = xch[parity][grp * WPR + w]; chan_merge(t.x, t.y, t.z, u.x, u.y, u.z); }
            parity ^= 1;
            mean = t.y;
            m2 = t.z;
        }
        const float rstd = rsqrtf(__fdividef(m2, (float)cols) + eps);
#pragma unroll
        for (int k = 0; k < WV; ++k) {
            const int vi = gl + k * GL;
            if (FULL || k < mine) {
                uint4 o4;
                typename D::T* e = reinterpret_cast<typename D::T*>(&o4);
                float ga[VEC], be[VEC];
                if (FULL || gb_vec) {
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
                    const float o = fmaf((elem<D, VEC>(raw[k], j) - mean) * rstd, ga[j], be[j]);
                    e[j] = D::st(out_act<D, GELU>(o));
                }
                reinterpret_cast<uint4*>(yr)[vi] = o4;
            }
        }
    }
}

// Rows that fit in registers (cols / VEC ≤ MAXV · blockDim): one DRAM read, statistics from
// registers in one reduction, one DRAM write.
// Other rows: pass 1 sums (x − x₀) and its square, pass 2 re-reads the row (an L1/L2 hit).
// WPR > 0: rows that fit in the registers of WPR warps (cols / VEC ≤ WV · 32 · WPR) go to
// rows_by_warps instead (no block barrier), the others as above; the choice depends on cols
// only, so every block of a launch takes the same path.
template <class D, int VEC, int MAXV, bool GELU, int WPR = 0, int WV = 1>
__device__ __forceinline__ void layernorm_row(const typename D::T* __restrict__ x, typename D::T* __restrict__ y,
                                              const float* __restrict__ gamma, const float* __restrict__ beta,
                                              int rows, int cols, float eps) {
    const bool vec = cols % VEC == 0;
    const int nv = cols / VEC;
    const bool gb_vec = ((reinterpret_cast<size_t>(gamma) | reinterpret_cast<size_t>(beta)) & 15) == 0;
    if (WPR > 0 && vec && nv <= WV * 32 * WPR && (int)blockDim.x % (32 * WPR) == 0) {
        if (nv == WV * 32 * WPR && gb_vec) rows_by_warps<D, VEC, (WPR > 0 ? WPR : 1), WV, GELU, true>(x, y, gamma, beta, rows, cols, eps, nv, true);
        else rows_by_warps<D, VEC, (WPR > 0 ? WPR : 1), WV, GELU, false>(x, y, gamma, beta, rows, cols, eps, nv, gb_vec);
        return;
    }
    const bool in_regs = vec && nv <= MAXV * (int)blockDim.x;
    const bool full = nv == MAXV * (int)blockDim.x && gb_vec;
    __shared__ float3 part[2][LN_THREADS / 32];  // per-warp (count, mean, M2), by row parity
    int parity = 0;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const typename D::T* xr = x + (long long)r * cols;
        typename D::T* yr = y + (long long)r * cols;
        if (in_regs) {
            if (full) row_in_regs<D, VEC, MAXV, GELU, true>(xr, yr, gamma, beta, nv, cols, eps, true, part, parity);
            else row_in_regs<D, VEC, MAXV, GELU, false>(xr, yr, gamma, beta, nv, cols, eps, gb_vec, part, parity);
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
                const float o = (at<D>(xr, i) - mean) * rstd * gamma[i] + beta[i];
                yr[i] = D::st(out_act<D, GELU>(o));
            }
            __syncthreads();  // block_sum's shared scratch is reused by the next row
        }
    }
}

}  // namespace

// LN_F16_WARP_ROWS 1: FP16 rows of up to 4096 values (cols % 8 == 0) one warp each (16 vectors,
// 64 registers of row a lane, so __launch_bounds__(128, 4)). Off (0, the default): ptxas -v
// (sm_90, NVRTC) spills 680–860 bytes a thread at 128 registers for that path (more at tighter
// bounds), and on the H100 it was slower at every bound (2026-11-27, bench/ln_variants.cu rows
// W*, E*: E1, the entry with this switch on and launched as the lab launches it, 68.2 % of the
// copy for LayerNorm and 65.5 % with GELU, against 95.6 % and 93.4 % for the block-per-row
// kernel shipped; docs/results/ln-variants-h100-2026-11-27-b.txt). So it stays a study; the FP16
// entries are the one-block-a-row kernel (__launch_bounds__(128, 8)).
#ifndef LN_F16_WARP_ROWS
#define LN_F16_WARP_ROWS 0
#endif
#if LN_F16_WARP_ROWS
#define LN_F16_MINB 4
#define LN_F16_WPR 1
#define LN_F16_WV 16
#else
#define LN_F16_MINB 8
#define LN_F16_WPR 0
#define LN_F16_WV 1
#endif

#define NORM_ENTRY(name, gelu)                                                                                   \
    extern "C" __global__ void __launch_bounds__(LN_THREADS, 4)                                                  \
        name##_f32(const float* x, float* y, const float* g, const float* b, int r, int c, float eps) {         \
        layernorm_row<F32, 4, 8, gelu>(x, y, g, b, r, c, eps);                                                      \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(LN_THREADS, LN_F16_MINB)                                        \
        name##_f16(const u16* x, u16* y, const float* g, const float* b, int r, int c, float eps) {             \
        layernorm_row<F16, 8, 4, gelu, LN_F16_WPR, LN_F16_WV>(x, y, g, b, r, c, eps);                               \
    }

NORM_ENTRY(layernorm, false)
NORM_ENTRY(layernorm_gelu, true)
