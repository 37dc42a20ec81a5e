// ---- The training convolutions on tensor cores (FP16/BF16 in, FP32 accumulate) ----
// Each is an implicit GEMM per image on `mma.sync.aligned.m16n8k16`: the block builds the GEMM's
// A and B operands in shared memory (row-major, K contiguous, row strides of 16*steps + 8 halves so
// that every fragment load of a warp hits 32 different banks), then each warp accumulates its
// 16x8 output tiles in registers. The same contracts as conv_block_fwd / conv_block_bwd_data /
// conv_block_bwd_filter above (mask 0..3 = the 2x2 window element, 4 = ReLU cut); the Rust side
// (ConvMmaPlan in compute/src/cuda/mod.rs) chooses these kernels where the shape fits and computes
// the same shared-memory sizes. Lives in the train family: needs prelude.cuh and train.cu's F16/BF16.

template <class D> struct Mma;
template <> struct Mma<F16> {
    static __device__ __forceinline__ void run(float* c, const u32* a, const u32* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct Mma<BF16> {
    static __device__ __forceinline__ void run(float* c, const u32* a, const u32* b) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

// Row stride (halves) of an operand with `steps` 16-wide K steps: 8*(2*steps)+4 words, which is
// 4 mod 8, so the 8 rows x 4 words of a fragment load fall in 32 distinct banks.
__device__ __forceinline__ int mma_stride(int steps) { return steps * 16 + 8; }

// Copies `len` halves from global to shared memory: 16-byte accesses when both are 16-byte aligned
// and len is a multiple of 8 (the lab's images are), one half at a time otherwise.
__device__ __forceinline__ void stage_halves(u16* __restrict__ dst, const u16* __restrict__ src, int len) {
    if ((len & 7) == 0 && ((reinterpret_cast<size_t>(src) | reinterpret_cast<size_t>(dst)) & 15) == 0) {
        const uint4* s4 = reinterpret_cast<const uint4*>(src);
        uint4* d4 = reinterpret_cast<uint4*>(dst);
#pragma unroll 4
        for (int e = threadIdx.x; e < len / 8; e += blockDim.x) d4[e] = s4[e];
    } else {
#pragma unroll 4
        for (int e = threadIdx.x; e < len; e += blockDim.x) dst[e] = src[e];
    }
}

// Copies `rows` rows of `len` halves (source rows packed, destination rows `stride` apart), 16 bytes
// at a time when every row start is 16-byte aligned, all rows at once so the loads overlap.
__device__ __forceinline__ void stage_rows(u16* __restrict__ dst, int stride, const u16* __restrict__ src, int rows, int len) {
    if ((len & 7) == 0 && (stride & 7) == 0 && ((reinterpret_cast<size_t>(src) | reinterpret_cast<size_t>(dst)) & 15) == 0) {
        const int per = len / 8;
#pragma unroll 4
        for (int e = threadIdx.x; e < rows * per; e += blockDim.x)
            *reinterpret_cast<uint4*>(dst + (e / per) * stride + 8 * (e % per)) = reinterpret_cast<const uint4*>(src)[e];
    } else {
#pragma unroll 4
        for (int e = threadIdx.x; e < rows * len; e += blockDim.x) dst[(e / len) * stride + e % len] = src[e];
    }
}

// C[m][n] += sum_k A[m][k] B[n][k] over `ks` K steps, for the mt x nt grid of 16x8 tiles; tile
// j = warp + i * warps is accumulated in acc[i] (fragment layout of m16n8k16: c0,c1 at row g,
// columns 2t,2t+1; c2,c3 at row g+8).
template <class D, int TPW>
__device__ __forceinline__ void mma_tiles(float (&acc)[TPW][4], const u16* A, int sa, const u16* B, int sb, int mt, int nt, int ks) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < TPW; ++i) {
        const int tile = warp + i * warps;
        if (tile < mt * nt) {
            const int m0 = (tile % mt) * 16, n0 = (tile / mt) * 8;
            const u16* a_lo = A + (m0 + g) * sa + 2 * t;
            const u16* a_hi = a_lo + 8 * sa;
            const u16* bp = B + (n0 + g) * sb + 2 * t;
            for (int k = 0; k < ks * 16; k += 16) {
                u32 a[4], b[2];
                a[0] = *reinterpret_cast<const u32*>(a_lo + k);
                a[1] = *reinterpret_cast<const u32*>(a_hi + k);
                a[2] = *reinterpret_cast<const u32*>(a_lo + k + 8);
                a[3] = *reinterpret_cast<const u32*>(a_hi + k + 8);
                b[0] = *reinterpret_cast<const u32*>(bp + k);
                b[1] = *reinterpret_cast<const u32*>(bp + k + 8);
                Mma<D>::run(acc[i], a, b);
            }
        }
    }
}

// Calls f(m, n, value) for the four accumulator elements of every tile this thread holds.
template <int TPW, class F>
__device__ __forceinline__ void mma_for_each(const float (&acc)[TPW][4], int mt, int nt, F f) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < TPW; ++i) {
        const int tile = warp + i * warps;
        if (tile < mt * nt) {
            const int m = (tile % mt) * 16 + g, n = (tile / mt) * 8 + 2 * t;
            f(m, n, acc[i][0]);
            f(m, n + 1, acc[i][1]);
            f(m + 8, n, acc[i][2]);
            f(m + 8, n + 1, acc[i][3]);
        }
    }
}

// Bytes of the region that holds A and, after the GEMM, the FP32 result C (forward).
__device__ __forceinline__ int conv_mma_fwd_a_bytes(int mt, int sk, int rows, int cout) {
    const int a = mt * 16 * sk * 2, c = rows * (cout + 1) * 4;
    return ((a > c ? a : c) + 15) & ~15;
}

// ---- forward: conv + bias + ReLU + 2x2 max-pool, one block per image. GEMM rows m = 4 * pooled
// position + window element (so a pool window is 4 consecutive rows), columns = output channels,
// K = cin*K*K taps in the weights' own order (B is the weight matrix as stored). Shared memory:
// the image xs[cin*h*w], A[16*mt][sk] (then C[rows][cout+1] FP32), B[cout][sk].
template <class D, int K, int TPW>
__device__ void conv_mma_fwd(const u16* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ b,
                             u16* __restrict__ out, u8* __restrict__ mask, int n, int cin, int cout, int h, int wd) {
    extern __shared__ float4 smem4[];
    u16* xs = reinterpret_cast<u16*>(smem4);
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int rows = plane * 4, mt = (rows + 15) / 16, kr = cin * K * K, ks = (kr + 15) / 16, sk = mma_stride(ks), nt = cout / 8;
    const int img = blockIdx.x;
    if (img >= n) return;
    const int xlen = cin * h * wd;
    u16* as = xs + ((xlen + 7) & ~7);
    u16* bs = as + conv_mma_fwd_a_bytes(mt, sk, rows, cout) / 2;
    stage_halves(xs, x + (long long)img * xlen, xlen);
    // B: the weight rows as stored (16-byte copies when a row is), zero beyond kr.
    stage_rows(bs, sk, w, cout, kr);
    for (int e = threadIdx.x; e < cout * (ks * 16 - kr); e += blockDim.x) bs[(e / (ks * 16 - kr)) * sk + kr + e % (ks * 16 - kr)] = 0;
    __syncthreads();
    // A (im2col): one (row, input channel) pair per iteration writes its K*K taps.
#pragma unroll 2
    for (int e = threadIdx.x; e < mt * 16 * cin; e += blockDim.x) {
        const int m = e / cin, ci = e % cin;
        u16* dst = as + m * sk + ci * K * K;
        if (m < rows) {
            const int p = m >> 2, q = m & 3, oy = 2 * (p / pw) + (q >> 1), ox = 2 * (p % pw) + (q & 1);
            const u16* src = xs + (ci * h + oy) * wd + ox;
#pragma unroll
            for (int ky = 0; ky < K; ++ky)
#pragma unroll
                for (int kx = 0; kx < K; ++kx) dst[ky * K + kx] = src[ky * wd + kx];
        } else {
#pragma unroll
            for (int j = 0; j < K * K; ++j) dst[j] = 0;
        }
    }
    for (int e = threadIdx.x; e < mt * 16 * (ks * 16 - kr); e += blockDim.x) as[(e / (ks * 16 - kr)) * sk + kr + e % (ks * 16 - kr)] = 0;
    __syncthreads();
    float acc[TPW][4];
#pragma unroll
    for (int i = 0; i < TPW; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    mma_tiles<D, TPW>(acc, as, sk, bs, sk, mt, nt, ks);
    __syncthreads();  // A's region now receives C
    float* c = reinterpret_cast<float*>(as);
    const int sc = cout + 1;
    mma_for_each<TPW>(acc, mt, nt, [&](int m, int co, float v) {
        if (m < rows) c[m * sc + co] = v;
    });
    __syncthreads();
    for (int e = threadIdx.x; e < cout * plane; e += blockDim.x) {
        const int co = e / plane, p = e % plane;
        const float* cp = c + (4 * p) * sc + co;
        int best = 0;
        float m = cp[0];
#pragma unroll
        for (int q = 1; q < 4; ++q)
            if (cp[q * sc] > m) { m = cp[q * sc]; best = q; }  // first maximum wins, as on the CPU
        const float v = m + b[co];
        const bool pos = v > 0.f;
        const long long o = ((long long)img * cout + co) * plane + p;
        out[o] = D::st(pos ? v : 0.f);
        mask[o] = pos ? (u8)best : (u8)4;
    }
}

// ---- input gradient, one block per image. GEMM rows = input positions, columns = input channels,
// K = cout*K*K (output channel, tap), taken in chunks of CHUNK_STEPS*16. Shared memory: the routed
// gradient dz[cout][ho+2(K-1)][wo+2(K-1)] zero-padded (raw FP16/BF16 bits), B[cin][sb] with
// B[ci][co*K*K + tap] = w[co][ci][tap], and one A chunk [16*mt][CHUNK_STEPS*16 + 8].
#define CONV_MMA_CHUNK_STEPS 9
template <class D, int K, int TPW>
__device__ void conv_mma_bwd_data(const u16* __restrict__ dout, const u8* __restrict__ mask, const u16* __restrict__ w,
                                  u16* __restrict__ dx, int n, int cin, int cout, int h, int wd) {
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int hp = ho + 2 * (K - 1), wp = wo + 2 * (K - 1);
    const int rows = h * wd, mt = (rows + 15) / 16, kr = cout * K * K, ksb = (kr + 15) / 16, sb = mma_stride(ksb), nt = cin / 8;
    const int sa = mma_stride(CONV_MMA_CHUNK_STEPS);
    const int img = blockIdx.x;
    if (img >= n) return;
    u16* dz = reinterpret_cast<u16*>(smem4);
    const int dzlen = cout * hp * wp;
    u16* bs = dz + ((dzlen + 7) & ~7);
    u16* as = bs + cin * sb;
    // dz: zeros, then each pooled gradient routed to its window's maximum (one mask and one
    // gradient load per pooled element).
    uint4* dz4 = reinterpret_cast<uint4*>(dz);
    for (int e = threadIdx.x; e < (dzlen + 7) / 8; e += blockDim.x) dz4[e] = make_uint4(0, 0, 0, 0);
    // B[ci][co*K*K + tap] = w[co][ci][tap]: the weights are copied as stored (16-byte loads) into
    // the A region, which is free until the first chunk, then transposed per (ci, co) pair.
    const int wlen = cout * cin * K * K;
    if (wlen <= mt * 16 * sa) {
        stage_halves(as, w, wlen);
        __syncthreads();
    }
    const u16* wsrc = wlen <= mt * 16 * sa ? as : w;
#pragma unroll 2
    for (int e = threadIdx.x; e < cin * cout; e += blockDim.x) {
        const int ci = e / cout, co = e % cout;
        const u16* src = wsrc + (co * cin + ci) * K * K;
        u16* dst = bs + ci * sb + co * K * K;
#pragma unroll
        for (int j = 0; j < K * K; ++j) dst[j] = src[j];
    }
    for (int e = threadIdx.x; e < cin * (ksb * 16 - kr); e += blockDim.x) bs[(e / (ksb * 16 - kr)) * sb + kr + e % (ksb * 16 - kr)] = 0;
    __syncthreads();
#pragma unroll 4
    for (int e = threadIdx.x; e < cout * plane; e += blockDim.x) {
        const int co = e / plane, p = e % plane;
        const long long o = ((long long)img * cout + co) * plane + p;
        const u8 mk = mask[o];
        if (mk < 4) {
            const int oy = 2 * (p / pw) + (mk >> 1), ox = 2 * (p % pw) + (mk & 1);
            dz[(co * hp + oy + K - 1) * wp + ox + K - 1] = dout[o];
        }
    }
    float acc[TPW][4];
#pragma unroll
    for (int i = 0; i < TPW; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    for (int k0 = 0; k0 < ksb * 16; k0 += CONV_MMA_CHUNK_STEPS * 16) {
        const int steps = min(CONV_MMA_CHUNK_STEPS, ksb - k0 / 16);
        __syncthreads();  // dz and B staged / the previous chunk consumed
        // One (row, output channel) pair per iteration writes its K*K taps; a chunk holds
        // CHANNELS whole output channels (CONV_MMA_CHUNK_STEPS*16 is a multiple of K*K).
        constexpr int CHANNELS = CONV_MMA_CHUNK_STEPS * 16 / (K * K);
        static_assert(CONV_MMA_CHUNK_STEPS * 16 % (K * K) == 0, "a chunk must hold whole output channels");
#pragma unroll 2
        for (int e = threadIdx.x; e < mt * 16 * CHANNELS; e += blockDim.x) {
            const int m = e / CHANNELS, cl = e % CHANNELS, co = k0 / (K * K) + cl;
            u16* dst = as + m * sa + cl * K * K;
            if (m < rows && co < cout) {
                const int iy = m / wd, ix = m % wd;
                const u16* src = dz + (co * hp + iy + K - 1) * wp + ix + K - 1;
#pragma unroll
                for (int ky = 0; ky < K; ++ky)
#pragma unroll
                    for (int kx = 0; kx < K; ++kx) dst[ky * K + kx] = src[-(ky * wp + kx)];
            } else {
#pragma unroll
                for (int j = 0; j < K * K; ++j) dst[j] = 0;
            }
        }
        __syncthreads();
        mma_tiles<D, TPW>(acc, as, sa, bs + k0, sb, mt, nt, steps);
    }
    u16* dxi = dx + (long long)img * cin * rows;
    mma_for_each<TPW>(acc, mt, nt, [&](int m, int ci, float v) {
        if (m < rows) dxi[(long long)ci * rows + m] = D::st(v);
    });
}

// ---- weight and bias gradients: block j sums images j, j+G, ... into part[j][cout*kr + cout]
// (FP32; conv_mma_wgrad_reduce adds the G partials). GEMM rows = output channels, columns =
// taps (ci, ky, kx), inner dimension = 4 * pooled position + window element of one image at a
// time. Shared memory: the image xs[cin*h*w], A[cout][sp] (routed gradient), B[8*nt][sp] (the
// image's patches, transposed, and a row of ones whose products are the bias gradient).
template <class D, int K, int TPW>
__device__ void conv_mma_bwd_filter(const u16* __restrict__ x, const u16* __restrict__ dout, const u8* __restrict__ mask,
                                    float* __restrict__ part, int n, int cin, int cout, int h, int wd) {
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int inner = plane * 4, ks = (inner + 15) / 16, sp = mma_stride(ks);
    const int kr = cin * K * K, mt = cout / 16, nt = (kr + 8) / 8;  // + a row of ones: the bias
    const int xlen = cin * h * wd;
    u16* xs = reinterpret_cast<u16*>(smem4);
    u16* as = xs + ((xlen + 7) & ~7);
    u16* bs = as + cout * sp;
    // Row kr of B is all ones (over the real inner indices), so column kr of C is the bias
    // gradient; the rows after it are zero. The per-image staging below never writes them.
    const u16 one = D::st(1.f);
    for (int e = threadIdx.x; e < (nt * 8 - kr) * sp; e += blockDim.x) bs[kr * sp + e] = (e < inner) ? one : (u16)0;
    float acc[TPW][4];
#pragma unroll
    for (int i = 0; i < TPW; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    for (int img = blockIdx.x; img < n; img += gridDim.x) {
        __syncthreads();  // the previous image's operands consumed
        stage_halves(xs, x + (long long)img * xlen, xlen);
        // A: one (output channel, pooled position) per iteration: its gradient goes to the
        // window element the mask names, zeros to the other three (and to the padding slots).
#pragma unroll 4
        for (int e = threadIdx.x; e < cout * ks * 4; e += blockDim.x) {
            const int co = e / (ks * 4), p = e % (ks * 4);
            u16 g = 0;
            int mk = 4;
            if (p < plane) {
                const long long o = ((long long)img * cout + co) * plane + p;
                mk = mask[o];
                if (mk < 4) g = dout[o];
            }
            u16* dst = as + co * sp + 4 * p;
#pragma unroll
            for (int q = 0; q < 4; ++q) dst[q] = q == mk ? g : (u16)0;
        }
        __syncthreads();
        // B (the image's patches, transposed): one (input channel, inner index) per iteration.
#pragma unroll 2
        for (int e = threadIdx.x; e < cin * ks * 16; e += blockDim.x) {
            const int ci = e / (ks * 16), m = e % (ks * 16);
            u16* dst = bs + ci * K * K * sp + m;
            if (m < inner) {
                const int p = m >> 2, q = m & 3, oy = 2 * (p / pw) + (q >> 1), ox = 2 * (p % pw) + (q & 1);
                const u16* src = xs + (ci * h + oy) * wd + ox;
#pragma unroll
                for (int ky = 0; ky < K; ++ky)
#pragma unroll
                    for (int kx = 0; kx < K; ++kx) dst[(ky * K + kx) * sp] = src[ky * wd + kx];
            } else {
#pragma unroll
                for (int j = 0; j < K * K; ++j) dst[j * sp] = 0;
            }
        }
        __syncthreads();
        mma_tiles<D, TPW>(acc, as, sp, bs, sp, mt, nt, ks);
    }
    __syncthreads();
    float* pj = part + (long long)blockIdx.x * (cout * kr + cout);
    mma_for_each<TPW>(acc, mt, nt, [&](int co, int r, float v) {
        if (r < kr) pj[co * kr + r] = v;
        else if (r == kr) pj[cout * kr + co] = v;
    });
}

// dw[i] = sum_j part[j][i] (i < len), db[c] = sum_j part[j][len + c]. Four threads per output
// (lanes 4i..4i+3 of a warp) each sum a quarter of the partials, then meet by shuffles: more
// loads in flight than one thread walking all the partials.
template <class D>
__device__ void conv_mma_wgrad_reduce(const float* __restrict__ part, int groups, int len, int cout, u16* __restrict__ dw, u16* __restrict__ db) {
    const long long total = (long long)(len + cout) * 4;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < ((total + 31) & ~31LL); t += (long long)gridDim.x * blockDim.x) {
        const long long i = t >> 2;
        const int q = (int)(t & 3);
        float s = 0.f;
        if (i < len + cout) {
#pragma unroll 8
            for (int j = q; j < groups; j += 4) s += part[(long long)j * (len + cout) + i];
        }
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        if (q == 0 && i < len) dw[i] = D::st(s);
        else if (q == 0 && i < len + cout) db[i - len] = D::st(s);
    }
}

// Tiles per warp the entry points are compiled for (the Rust side refuses shapes with more).
#define CONV_MMA_FWD_TPW 4
#define CONV_MMA_DATA_TPW 4
#define CONV_MMA_FILTER_TPW 10

#define MMA_ENTRY_POINTS(sfx, D)                                                                                                   \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_fwd_##sfx(const u16* x, const u16* w, const float* b, u16* o, u8* m, int n, int ci, int co, int h, int wd) { \
        conv_mma_fwd<D, 3, CONV_MMA_FWD_TPW>(x, w, b, o, m, n, ci, co, h, wd);                                                    \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_bwd_data_##sfx(const u16* d, const u8* m, const u16* w, u16* dx, int n, int ci, int co, int h, int wd) { \
        conv_mma_bwd_data<D, 3, CONV_MMA_DATA_TPW>(d, m, w, dx, n, ci, co, h, wd);                                                \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_bwd_filter_##sfx(const u16* x, const u16* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) { \
        conv_mma_bwd_filter<D, 3, CONV_MMA_FILTER_TPW>(x, d, m, part, n, ci, co, h, wd);                                          \
    }                                                                                                                           \
    extern "C" __global__ void conv_mma_wgrad_reduce_##sfx(const float* part, int groups, int len, int co, u16* dw, u16* db) {    \
        conv_mma_wgrad_reduce<D>(part, groups, len, co, dw, db);                                                                  \
    }

MMA_ENTRY_POINTS(f16, F16)
MMA_ENTRY_POINTS(bf16, BF16)
