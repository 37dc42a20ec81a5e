// FP8 training's casts and per-tensor scaling on the GPU: the reference is
// showdown_core::fp8 (Fp8State::cast, Fp8State::end_step), which these kernels mirror value for
// value. An operand is rounded onto the E4M3 or E5M2 grid in place (FP16 storage, so the FP16
// tensor-core kernels then multiply FP8 values exactly, accumulating in FP32): v <- q(v*s)/s, q
// rounding to nearest even and saturating at +-max; a non-finite value is kept (the loss scaler
// must see it). The scaling state is one u64 array (layout mirrored by compute/src/cuda/fp8.rs):
//   header  [0] scaling (0 delayed, 1 current) [1] history length [2] margin (i64) [3] steps
//   tensor t at FP8_HDR + t * FP8_TW: the words FP8_W_* below, then FP8_HIST history amaxes
//   (float bits, a ring: FP8_W_HLEN entries, the next written at FP8_W_HPOS).
// Tensors 0..3 (conv1/conv2 inputs and weights) are E4M3, 4..5 (the output gradients) E5M2.
// The gradients are stored times FP16's loss scale L (a power of two): fp8_cast_grad_f16 divides
// it out, so that every amax, history and scale above is in unscaled units (the reference's
// Fp8State::cast_loss_scaled) and a loss-scale change moves no FP8 scale; the cast multiplies
// the stored values by scale / L.
// Needs prelude.cuh and train.cu (Scaler).

#define FP8_TENSORS 6
#define FP8_HDR 4
#define FP8_HIST 1024
enum {
    FP8_W_SCALE, FP8_W_STEP_SCALE, FP8_W_STEP_AMAX, FP8_W_STEP_NAN, FP8_W_STEP_OVER, FP8_W_STEP_UNDER, FP8_W_STEP_NZ,
    FP8_W_LAST_SCALE, FP8_W_LAST_AMAX, FP8_W_LAST_NAN, FP8_W_LAST_OVER, FP8_W_LAST_UNDER, FP8_W_LAST_NZ,
    FP8_W_TOT_AMAX, FP8_W_TOT_NAN, FP8_W_TOT_OVER, FP8_W_TOT_UNDER, FP8_W_TOT_NZ,
    FP8_W_HLEN, FP8_W_HPOS, FP8_W_CUR_AMAX, FP8_W_HIST
};
#define FP8_TW (FP8_W_HIST + FP8_HIST)

__device__ __forceinline__ bool fp8_is_e4m3(int t) { return t < 4; }
__device__ __forceinline__ float fp8_max(bool e4m3) { return e4m3 ? 448.f : 57344.f; }
__device__ __forceinline__ float fp8_bits_f(u64 w) { return __uint_as_float((u32)w); }
__device__ __forceinline__ u64 fp8_f_bits(float f) { return (u64)__float_as_uint(f); }

// s rounded to the format's grid, ties to even, saturating; NaN stays NaN (callers keep inf).
__device__ __forceinline__ float fp8_round(float s, bool e4m3) {
    const float maxv = fp8_max(e4m3);
    if (s != s) return s;
    const float a = fabsf(s);
    if (a >= maxv) return copysignf(maxv, s);
    const int mbits = e4m3 ? 3 : 2;
    int e = (int)((__float_as_uint(a) >> 23) & 0xff) - 127;
    const int emin = e4m3 ? -6 : -14;
    if (e < emin) e = emin;  // subnormals share the smallest normal's spacing
    const int ulp_e = e - mbits;
    const float inv_ulp = __uint_as_float((u32)(127 - ulp_e) << 23);
    const float ulp = __uint_as_float((u32)(127 + ulp_e) << 23);
    return copysignf(rintf(a * inv_ulp) * ulp, s);
}

// 2^(floor(log2(max / amax)) - margin), clamped to 2^+-100; `keep` when amax is 0 or not finite.
__device__ __forceinline__ float fp8_scale_for(float amax, bool e4m3, int margin, float keep) {
    if (!(amax > 0.f) || amax == __int_as_float(0x7f800000)) return keep;
    const double ratio = (double)fp8_max(e4m3) / (double)amax;
    int e = (int)((__double_as_longlong(ratio) >> 52) & 0x7ff) - 1023 - margin;
    e = e < -100 ? -100 : (e > 100 ? 100 : e);
    return __uint_as_float((u32)(127 + e) << 23);
}

__device__ __forceinline__ u64* fp8_tensor(u64* st, int t) { return st + FP8_HDR + (long long)t * FP8_TW; }

// The (unscaled) scale a cast of tensor t uses now: the delayed scale, or (current scaling) the
// scale of the amax fp8_amax_f16 just measured over values stored times 1/inv_loss, the last
// scale for an all-zero tensor.
__device__ __forceinline__ float fp8_scale_now(const u64* st, const u64* T, int t, float inv_loss) {
    const float s = fp8_bits_f(T[FP8_W_SCALE]);
    if (st[0] != 1ull) return s;
    return fp8_scale_for(fp8_bits_f(T[FP8_W_CUR_AMAX]) * inv_loss, fp8_is_e4m3(t), (int)(long long)st[2], s);
}

// Block-wide sums and max of one thread's counts, then one atomic per block.
__device__ __forceinline__ void fp8_block_record(u64* T, float amax, u32 nan, u64 over, u64 under, u64 nz) {
    __shared__ float s_amax[32];
    __shared__ u64 s_over[32], s_under[32], s_nz[32];
    __shared__ u32 s_nan[32];
    for (int o = 16; o > 0; o >>= 1) {
        amax = fmaxf(amax, __shfl_down_sync(0xffffffffu, amax, o));
        over += __shfl_down_sync(0xffffffffu, over, o);
        under += __shfl_down_sync(0xffffffffu, under, o);
        nz += __shfl_down_sync(0xffffffffu, nz, o);
        nan |= __shfl_down_sync(0xffffffffu, nan, o);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    if (lane == 0) { s_amax[warp] = amax; s_over[warp] = over; s_under[warp] = under; s_nz[warp] = nz; s_nan[warp] = nan; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < warps; ++w) {
            amax = fmaxf(amax, s_amax[w]); over += s_over[w]; under += s_under[w]; nz += s_nz[w]; nan |= s_nan[w];
        }
        atomicMax(&T[FP8_W_STEP_AMAX], fp8_f_bits(amax));  // non-negative floats order as integers
        if (nan) atomicOr(&T[FP8_W_STEP_NAN], 1ull);
        if (over) atomicAdd(&T[FP8_W_STEP_OVER], over);
        if (under) atomicAdd(&T[FP8_W_STEP_UNDER], under);
        if (nz) atomicAdd(&T[FP8_W_STEP_NZ], nz);
    }
}

// One value of a cast: the new FP16 bits of h, its counts added to the thread's.
struct Fp8Acc { float amax; u32 nan; u64 over, under, nz; };

__device__ __forceinline__ u16 fp8_cast_one(u16 h, float scale, float inv, bool e4m3, Fp8Acc& a) {
    const float v = h2f(h);
    if (v != v) { a.nan = 1; return h; }
    a.amax = fmaxf(a.amax, fabsf(v));
    if (v == 0.f) return h;
    ++a.nz;
    const float s = v * scale;
    if (fabsf(s) > fp8_max(e4m3)) ++a.over;
    if (fabsf(v) == __int_as_float(0x7f800000)) return h;  // inf is kept
    const float q = fp8_round(s, e4m3);
    if (q == 0.f) ++a.under;
    return f2h(q * inv);
}

// Casts x[0, n) (FP16 bits, 16-byte aligned: eight values per load; stored times 1/inv_loss) as
// tensor t in place; with `record`, its unscaled amax and counts join the step's (one atomic per
// count and block).
__device__ __forceinline__ void fp8_cast_body(u16* __restrict__ x, long long n, int t, u64* __restrict__ st, int record,
                                              float inv_loss, long long tid, long long threads) {
    u64* T = fp8_tensor(st, t);
    const bool e4m3 = fp8_is_e4m3(t);
    const float unscaled = fp8_scale_now(st, T, t, inv_loss);
    const float scale = unscaled * inv_loss;  // exact: powers of two
    const float inv = 1.f / scale;
    Fp8Acc a = {0.f, 0u, 0ull, 0ull, 0ull};
    const long long n8 = n / 8;
    uint4* x8 = reinterpret_cast<uint4*>(x);
    for (long long i = tid; i < n8; i += threads) {
        uint4 p = x8[i];
        u16* h = reinterpret_cast<u16*>(&p);
#pragma unroll
        for (int j = 0; j < 8; ++j) h[j] = fp8_cast_one(h[j], scale, inv, e4m3, a);
        x8[i] = p;
    }
    for (long long i = n8 * 8 + tid; i < n; i += threads) x[i] = fp8_cast_one(x[i], scale, inv, e4m3, a);
    if (!record) return;
    fp8_block_record(T, a.amax * inv_loss, a.nan, a.over, a.under, a.nz);
    if (tid == 0) {
        T[FP8_W_STEP_SCALE] = fp8_f_bits(unscaled);
        if (st[0] == 1ull) T[FP8_W_SCALE] = fp8_f_bits(unscaled);
    }
}

extern "C" __global__ void fp8_cast_f16(u16* __restrict__ x, long long n, int t, u64* __restrict__ st, int record) {
    fp8_cast_body(x, n, t, st, record, 1.f, blockIdx.x * (long long)blockDim.x + threadIdx.x, (long long)gridDim.x * blockDim.x);
}

// A gradient's cast: x holds it times the loss scale sc->scale (read here, on the device, so a
// CUDA graph replays it at whatever scale the scaler holds).
extern "C" __global__ void fp8_cast_grad_f16(u16* __restrict__ x, long long n, int t, u64* __restrict__ st, int record,
                                             const Scaler* __restrict__ sc) {
    fp8_cast_body(x, n, t, st, record, 1.f / sc->scale,
                  blockIdx.x * (long long)blockDim.x + threadIdx.x, (long long)gridDim.x * blockDim.x);
}

// Current scaling: zeroes tensor t's measured amax (one thread), before fp8_amax_f16.
extern "C" __global__ void fp8_amax_reset(int t, u64* __restrict__ st) {
    if (blockIdx.x == 0 && threadIdx.x == 0) fp8_tensor(st, t)[FP8_W_CUR_AMAX] = 0ull;
}

// Current scaling: the amax of x[0, n) into tensor t's measured amax; a NaN makes it NaN (the
// cast then keeps the last scale, as the reference does).
extern "C" __global__ void fp8_amax_f16(const u16* __restrict__ x, long long n, int t, u64* __restrict__ st) {
    float amax = 0.f;
    u32 nan = 0;
    GRID_STRIDE(i, n) {
        const float v = fabsf(h2f(x[i]));
        if (v != v) nan = 1;
        else amax = fmaxf(amax, v);
    }
    for (int o = 16; o > 0; o >>= 1) {
        amax = fmaxf(amax, __shfl_down_sync(0xffffffffu, amax, o));
        nan |= __shfl_down_sync(0xffffffffu, nan, o);
    }
    // NaN's bits (0x7fc00000) order above every finite amax and infinity.
    if ((threadIdx.x & 31) == 0) atomicMax(&fp8_tensor(st, t)[FP8_W_CUR_AMAX], nan ? 0x7fc00000ull : fp8_f_bits(amax));
}

// The end of a step for tensor t, by one warp: the step's amax joins the history ring, the
// delayed scale is recomputed from the history's largest finite amax (the lanes stride the
// ring), the step's counts become the last step's and join the totals.
__device__ void fp8_end_step_warp(u64* __restrict__ st, int t) {
    const int lane = threadIdx.x & 31;
    u64* T = fp8_tensor(st, t);
    const u32 hl = (u32)(st[1] < 1ull ? 1ull : (st[1] > FP8_HIST ? FP8_HIST : st[1]));
    const bool nan = T[FP8_W_STEP_NAN] != 0ull;
    const float amax = nan ? __int_as_float(0x7fc00000) : fp8_bits_f(T[FP8_W_STEP_AMAX]);
    const u32 pos = (u32)T[FP8_W_HPOS], len0 = (u32)T[FP8_W_HLEN];
    const u32 len = len0 + 1 > hl ? hl : len0 + 1;
    __syncwarp();
    if (lane == 0) T[FP8_W_HIST + pos] = fp8_f_bits(amax);
    __syncwarp();
    if (st[0] == 0ull) {
        float m = 0.f;
        // Independent loads, several in flight per lane (the ring holds up to 1024 amaxes).
#pragma unroll 8
        for (u32 i = lane; i < len; i += 32) {
            const float a = fp8_bits_f(T[FP8_W_HIST + i]);
            if (a == a && a != __int_as_float(0x7f800000)) m = fmaxf(m, a);
        }
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
        if (lane == 0)
            T[FP8_W_SCALE] = fp8_f_bits(fp8_scale_for(m, fp8_is_e4m3(t), (int)(long long)st[2], fp8_bits_f(T[FP8_W_SCALE])));
    }
    if (lane != 0) return;
    // Every word read first (independent loads in flight), then written: interleaved, each load
    // would wait for the store before it (the same array).
    const u64 scale = T[FP8_W_SCALE], s_scale = T[FP8_W_STEP_SCALE], s_amax = T[FP8_W_STEP_AMAX];
    const u64 s_nan = T[FP8_W_STEP_NAN], s_over = T[FP8_W_STEP_OVER], s_under = T[FP8_W_STEP_UNDER];
    const u64 s_nz = T[FP8_W_STEP_NZ], t_amax = T[FP8_W_TOT_AMAX], t_nan = T[FP8_W_TOT_NAN];
    const u64 t_over = T[FP8_W_TOT_OVER], t_under = T[FP8_W_TOT_UNDER], t_nz = T[FP8_W_TOT_NZ];
    T[FP8_W_HPOS] = (pos + 1) % hl;
    T[FP8_W_HLEN] = len;
    T[FP8_W_LAST_SCALE] = s_scale;
    T[FP8_W_LAST_AMAX] = s_amax;
    T[FP8_W_LAST_NAN] = s_nan;
    T[FP8_W_LAST_OVER] = s_over;
    T[FP8_W_LAST_UNDER] = s_under;
    T[FP8_W_LAST_NZ] = s_nz;
    T[FP8_W_TOT_AMAX] = s_amax > t_amax ? s_amax : t_amax;
    T[FP8_W_TOT_NAN] = t_nan | s_nan;
    T[FP8_W_TOT_OVER] = t_over + s_over;
    T[FP8_W_TOT_UNDER] = t_under + s_under;
    T[FP8_W_TOT_NZ] = t_nz + s_nz;
    T[FP8_W_STEP_AMAX] = 0ull;
    T[FP8_W_STEP_NAN] = 0ull;
    T[FP8_W_STEP_OVER] = 0ull;
    T[FP8_W_STEP_UNDER] = 0ull;
    T[FP8_W_STEP_NZ] = 0ull;
    T[FP8_W_STEP_SCALE] = scale;
    if (t == 0) st[3] += 1ull;
}

// The end of a step: one warp per tensor (at least FP8_TENSORS warps, one block).
extern "C" __global__ void fp8_end_step(u64* __restrict__ st) {
    const int w = threadIdx.x >> 5;
    if (blockIdx.x != 0 || w >= FP8_TENSORS) return;
    fp8_end_step_warp(st, w);
}

// The optimizer's FP8 tail in one launch (one block): the two convolutions' weight copies cast
// (tensors 1 and 3, recorded; current scaling measures each one's amax first), then the end of
// the step. Blocks of whole warps, at least FP8_TENSORS of them.
extern "C" __global__ void fp8_weights_end_step_f16(u16* __restrict__ w1, long long n1, u16* __restrict__ w2, long long n2,
                                                     u64* __restrict__ st) {
    if (blockIdx.x != 0) return;
    __shared__ float s_amax[32];
    __shared__ u32 s_nan[32];
    for (int k = 0; k < 2; ++k) {
        u16* w = k == 0 ? w1 : w2;
        const long long n = k == 0 ? n1 : n2;
        const int t = k == 0 ? 1 : 3;
        if (st[0] == 1ull) {
            float amax = 0.f;
            u32 nan = 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const float v = fabsf(h2f(w[i]));
                if (v != v) nan = 1; else amax = fmaxf(amax, v);
            }
            for (int o = 16; o > 0; o >>= 1) {
                amax = fmaxf(amax, __shfl_down_sync(0xffffffffu, amax, o));
                nan |= __shfl_down_sync(0xffffffffu, nan, o);
            }
            if ((threadIdx.x & 31) == 0) { s_amax[threadIdx.x >> 5] = amax; s_nan[threadIdx.x >> 5] = nan; }
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int i = 1; i < (int)(blockDim.x >> 5); ++i) { amax = fmaxf(amax, s_amax[i]); nan |= s_nan[i]; }
                fp8_tensor(st, t)[FP8_W_CUR_AMAX] = nan ? 0x7fc00000ull : fp8_f_bits(amax);
            }
            __syncthreads();
        }
        fp8_cast_body(w, n, t, st, 1, 1.f, threadIdx.x, blockDim.x);
        __syncthreads();
    }
    __threadfence_block();
    const int wi = threadIdx.x >> 5;
    if (wi < FP8_TENSORS) fp8_end_step_warp(st, wi);
}
