// ---- The training convolutions on tensor cores (FP16/BF16/TF32 in, FP32 accumulate) ----
// Each is an implicit GEMM per image on `mma.sync` (m16n8k16 for FP16/BF16, m16n8k8 for TF32):
// the block builds the GEMM's A and B operands in shared memory (row-major, K contiguous, row
// strides padded so that every fragment load of a warp hits 32 different banks), then each warp
// accumulates its 16x8 output tiles in registers. The same contracts as conv_block_fwd / conv_block_bwd_data /
// conv_block_bwd_filter above (mask 0..3 = the 2x2 window element, 4 = ReLU cut); the Rust side
// (ConvMmaPlan in compute/src/cuda/mod.rs) chooses these kernels where the shape fits and computes
// the same shared-memory sizes. Lives in the train family: needs prelude.cuh and train.cu's F32/F16/BF16 and T_.

// TF32 math on FP32 data: the same storage as F32, its own tensor-core operation.
struct TF32 : F32 {};

// conv_mma_bwd_filter_clustered_*: the weight gradient's blocks meet in clusters on sm_90 and
// newer: the WGRAD_CLUSTER blocks of a cluster add their FP32 partials over distributed shared
// memory, so one partial per cluster goes to global memory instead of one per block (1/8 of the
// scratch, and of what the reduction reads). Fewer clusters than the batch needs may fit at once
// (an H100 holds 15 clusters of 8: 120 blocks for 128 images), so every block takes an even share
// of the batch's pooled positions; the Rust side uses it only where the per-block partials would
// be large (conv2), and
// reads its width from the function's attribute (CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH; 0 on
// older architectures, whose clustered entry point is the plain kernel).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WGRAD_CLUSTER 8
#define WGRAD_CLUSTER_DIMS __cluster_dims__(WGRAD_CLUSTER, 1, 1)
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// Every thread of every block of the cluster: shared-memory writes before it are visible to the
// cluster's reads after it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The float at `p` (this block's shared memory) in the shared memory of cluster block `rank`.
__device__ __forceinline__ float ld_cluster(const float* p, unsigned rank) {
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}
#else
#define WGRAD_CLUSTER 1
#define WGRAD_CLUSTER_DIMS
#endif

// Per operand type: the element staged in shared memory (E), the K of one mma (KSTEP), the row
// stride for `steps` K steps (KSTEP*steps plus a pad that makes every fragment load of a warp hit
// 32 distinct banks: the stride in 32-bit words is 4 mod 8), the column a thread's fragment starts
// at, and one K step of the mma for a 16x8 tile.
template <class D> struct Mma;
template <class D> struct Mma16 {
    typedef u16 E;
    static constexpr int KSTEP = 16;
    static __device__ __forceinline__ int stride(int steps) { return steps * 16 + 8; }
    static __device__ __forceinline__ int col(int t) { return 2 * t; }
    static __device__ __forceinline__ void load(u32* a, u32* b, const E* a_lo, const E* a_hi, const E* bp, int k) {
        a[0] = *reinterpret_cast<const u32*>(a_lo + k);
        a[1] = *reinterpret_cast<const u32*>(a_hi + k);
        a[2] = *reinterpret_cast<const u32*>(a_lo + k + 8);
        a[3] = *reinterpret_cast<const u32*>(a_hi + k + 8);
        b[0] = *reinterpret_cast<const u32*>(bp + k);
        b[1] = *reinterpret_cast<const u32*>(bp + k + 8);
    }
};
// One m16n8k16 step with operands of PTX type `ty` (f16 or bf16).
#if __CUDA_ARCH__ >= 800
#define MMA16_STEP(ty)                                                                                                             \
    static __device__ __forceinline__ void step(float* c, const E* a_lo, const E* a_hi, const E* bp, int k) {                     \
        u32 a[4], b[2];                                                                                                            \
        load(a, b, a_lo, a_hi, bp, k);                                                                                             \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." #ty "." #ty ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                                              \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                                          \
    }
#else
// Before sm_80 the host never selects these kernels; they only have to compile.
#define MMA16_STEP(ty) \
    static __device__ __forceinline__ void step(float*, const E*, const E*, const E*, int) { __trap(); }
#endif
template <> struct Mma<F16> : Mma16<F16> { MMA16_STEP(f16) };
template <> struct Mma<BF16> : Mma16<BF16> { MMA16_STEP(bf16) };
// m16n8k8 with TF32 operands: A fragments at (g, t), (g+8, t), (g, t+4), (g+8, t+4); B at
// (k=t, n=g), (k=t+4, n=g). FP32 values are rounded to TF32 (nearest, ties away) as loaded.
template <> struct Mma<TF32> {
    typedef float E;
    static constexpr int KSTEP = 8;
    static __device__ __forceinline__ int stride(int steps) { return steps * 8 + 4; }
    static __device__ __forceinline__ int col(int t) { return t; }
    static __device__ __forceinline__ u32 tf32(float v) {
#if __CUDA_ARCH__ >= 800
        u32 r;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
        return r;
#else
        return __float_as_uint(v);
#endif
    }
    static __device__ __forceinline__ void step(float* c, const E* a_lo, const E* a_hi, const E* bp, int k) {
        const u32 a0 = tf32(a_lo[k]), a1 = tf32(a_hi[k]), a2 = tf32(a_lo[k + 4]), a3 = tf32(a_hi[k + 4]);
        const u32 b0 = tf32(bp[k]), b1 = tf32(bp[k + 4]);
#if __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
        __trap();  // the host selects these kernels on sm_80 and newer only
#endif
    }
};

// Copies `len` elements from global to shared memory: 16-byte accesses when both are 16-byte
// aligned and len is a whole number of 16-byte chunks (the lab's images are), else one at a time.
template <class E>
__device__ __forceinline__ void stage_elems(E* __restrict__ dst, const E* __restrict__ src, int len) {
    constexpr int V = 16 / sizeof(E);
    if ((len % V) == 0 && ((reinterpret_cast<size_t>(src) | reinterpret_cast<size_t>(dst)) & 15) == 0) {
        const uint4* s4 = reinterpret_cast<const uint4*>(src);
        uint4* d4 = reinterpret_cast<uint4*>(dst);
#pragma unroll 4
        for (int e = threadIdx.x; e < len / V; e += blockDim.x) d4[e] = s4[e];
    } else {
#pragma unroll 4
        for (int e = threadIdx.x; e < len; e += blockDim.x) dst[e] = src[e];
    }
}

// Copies `rows` rows of `len` elements (source rows packed, destination rows `stride` apart), 16
// bytes at a time when every row start is 16-byte aligned, all rows at once so the loads overlap.
template <class E>
__device__ __forceinline__ void stage_rows(E* __restrict__ dst, int stride, const E* __restrict__ src, int rows, int len) {
    constexpr int V = 16 / sizeof(E);
    if ((len % V) == 0 && (stride % V) == 0 && ((reinterpret_cast<size_t>(src) | reinterpret_cast<size_t>(dst)) & 15) == 0) {
        const int per = len / V;
#pragma unroll 4
        for (int e = threadIdx.x; e < rows * per; e += blockDim.x)
            *reinterpret_cast<uint4*>(dst + (e / per) * stride + V * (e % per)) = reinterpret_cast<const uint4*>(src)[e];
    } else {
#pragma unroll 4
        for (int e = threadIdx.x; e < rows * len; e += blockDim.x) dst[(e / len) * stride + e % len] = src[e];
    }
}

// C[m][n] += sum_k A[m][k] B[n][k] over `ks` K steps, for the mt x nt grid of 16x8 tiles; tile
// j = warp + i * warps is accumulated in acc[i] (accumulator layout: c0,c1 at row g, columns
// 2t,2t+1; c2,c3 at row g+8).
template <class D, int TPW>
__device__ __forceinline__ void mma_tiles(float (&acc)[TPW][4], const typename Mma<D>::E* A, int sa, const typename Mma<D>::E* B, int sb, int mt, int nt, int ks) {
    typedef typename Mma<D>::E E;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < TPW; ++i) {
        const int tile = warp + i * warps;
        if (tile < mt * nt) {
            const int m0 = (tile % mt) * 16, n0 = (tile / mt) * 8;
            const E* a_lo = A + (m0 + g) * sa + Mma<D>::col(t);
            const E* a_hi = a_lo + 8 * sa;
            const E* bp = B + (n0 + g) * sb + Mma<D>::col(t);
            for (int k = 0; k < ks * Mma<D>::KSTEP; k += Mma<D>::KSTEP) Mma<D>::step(acc[i], a_lo, a_hi, bp, k);
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
__device__ __forceinline__ int conv_mma_fwd_a_bytes(int mt, int sk, int esize, int rows, int cout) {
    const int a = mt * 16 * sk * esize, c = rows * (cout + 1) * 4;
    return ((a > c ? a : c) + 15) & ~15;
}

// ---- forward: conv + bias + activation (ReLU, GELU or Swish) + 2x2 max-pool, one block per image. GEMM rows m = 4 * pooled
// position + window element (so a pool window is 4 consecutive rows), columns = output channels,
// K = cin*K*K taps in the weights' own order (B is the weight matrix as stored). Shared memory:
// the image xs[cin*h*w], A[16*mt][sk] (then C[rows][cout+1] FP32), B[cout][sk].
template <class D, int K, int TPW>
__device__ void conv_mma_fwd(const typename D::T* __restrict__ x, const typename D::T* __restrict__ w, const float* __restrict__ b,
                             typename D::T* __restrict__ out, u8* __restrict__ mask, int n, int cin, int cout, int h, int wd, int act) {
    typedef typename Mma<D>::E E;
    constexpr int KS = Mma<D>::KSTEP;
    extern __shared__ float4 smem4[];
    E* xs = reinterpret_cast<E*>(smem4);
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int rows = plane * 4, mt = (rows + 15) / 16, kr = cin * K * K, ks = (kr + KS - 1) / KS, sk = Mma<D>::stride(ks), nt = cout / 8;
    const int img = blockIdx.x;
    if (img >= n) return;
    const int xlen = cin * h * wd, pad = ks * KS - kr;
    E* as = xs + ((xlen + 7) & ~7);
    E* bs = as + conv_mma_fwd_a_bytes(mt, sk, sizeof(E), rows, cout) / sizeof(E);
    stage_elems(xs, x + (long long)img * xlen, xlen);
    // B: the weight rows as stored (16-byte copies when a row is), zero beyond kr.
    stage_rows(bs, sk, w, cout, kr);
    for (int e = threadIdx.x; e < cout * pad; e += blockDim.x) bs[(e / pad) * sk + kr + e % pad] = 0;
    __syncthreads();
    // A (im2col): one (row, input channel) pair per iteration writes its K*K taps.
#pragma unroll 2
    for (int e = threadIdx.x; e < mt * 16 * cin; e += blockDim.x) {
        const int m = e / cin, ci = e % cin;
        E* dst = as + m * sk + ci * K * K;
        if (m < rows) {
            const int p = m >> 2, q = m & 3, oy = 2 * (p / pw) + (q >> 1), ox = 2 * (p % pw) + (q & 1);
            const E* src = xs + (ci * h + oy) * wd + ox;
#pragma unroll
            for (int ky = 0; ky < K; ++ky)
#pragma unroll
                for (int kx = 0; kx < K; ++kx) dst[ky * K + kx] = src[ky * wd + kx];
        } else {
#pragma unroll
            for (int j = 0; j < K * K; ++j) dst[j] = 0;
        }
    }
    for (int e = threadIdx.x; e < mt * 16 * pad; e += blockDim.x) as[(e / pad) * sk + kr + e % pad] = 0;
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
        const long long o = ((long long)img * cout + co) * plane + p;
        int best = 0;
        if (act == ACT_RELU) {
            float m = cp[0];
#pragma unroll
            for (int q = 1; q < 4; ++q)
                if (cp[q * sc] > m) { m = cp[q * sc]; best = q; }  // first maximum wins, as on the CPU
            const float v = m + b[co];
            const bool pos = v > 0.f;
            out[o] = D::st(pos ? v : 0.f);
            mask[o] = pos ? (u8)best : (u8)4;
        } else {
            // GELU and Swish are not monotonic: the maximum is taken after the activation.
            const float bias = b[co];
            float m = act_apply(act, cp[0] + bias);
#pragma unroll
            for (int q = 1; q < 4; ++q) {
                const float v = act_apply(act, cp[q * sc] + bias);
                if (v > m) { m = v; best = q; }
            }
            out[o] = D::st(m);
            mask[o] = (u8)best;
        }
    }
}

// ---- input gradient, one block per image: an implicit GEMM read straight from shared memory, no
// im2col. GEMM rows = input positions m = (iy, ix), columns = input channels, K = (tap, output
// channel), tap-major. The routed gradient is staged channel-minor, dz[padded position][cout + pad]
// (zero-padded by K-1 on every side), so that the K elements of one tap and 16 (TF32: 8)
// consecutive output channels are contiguous: a warp's A fragment for row m and tap (ky, kx) is
// read at padded position (iy + K-1 - ky, ix + K-1 - kx), 32-bit loads, and the row stride
// (cout + 8 halves, cout + 4 floats: 4 mod 8 words) puts the 8 rows of a fragment on distinct
// banks. B[ci][tap*cout + co] = w[co][ci][tap] is staged once (the weights copied as stored, then
// transposed). Shared memory: dz[hp*wp][sc], B[cin][sb], the weights as stored [cout*cin*K*K].
// Needs cout % KSTEP == 0 (the Rust side checks it).
template <class D, int K, int TPW>
__device__ void conv_mma_bwd_data(const typename D::T* __restrict__ dout, const u8* __restrict__ mask, const typename D::T* __restrict__ w,
                                  typename D::T* __restrict__ dx, int n, int cin, int cout, int h, int wd) {
    typedef typename Mma<D>::E E;
    constexpr int KS = Mma<D>::KSTEP;
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int hp = ho + 2 * (K - 1), wp = wo + 2 * (K - 1);
    const int rows = h * wd, mt = (rows + 15) / 16, nt = cin / 8, kr = K * K * cout;
    const int sc = Mma<D>::stride(cout / KS), sb = Mma<D>::stride(kr / KS);
    const int img = blockIdx.x;
    if (img >= n) return;
    E* dz = reinterpret_cast<E*>(smem4);
    const int dzlen = (hp * wp * sc + 7) & ~7;
    E* bs = dz + dzlen;
    E* ws = bs + cin * sb;
    // dz: zeros (16-byte stores); the weights as stored (16-byte loads).
    uint4* dz4 = reinterpret_cast<uint4*>(dz);
    for (int e = threadIdx.x; e < (int)(dzlen * sizeof(E) / 16); e += blockDim.x) dz4[e] = make_uint4(0, 0, 0, 0);
    stage_elems(ws, w, cout * cin * K * K);
    __syncthreads();
    // B[ci][tap*cout + co] = w[co][ci][tap]: consecutive threads take consecutive co (adjacent
    // stores); then each pooled gradient routed to its window's maximum.
#pragma unroll 2
    for (int e = threadIdx.x; e < cin * cout; e += blockDim.x) {
        const int co = e % cout, ci = e / cout;
        const E* src = ws + (co * cin + ci) * K * K;
        E* dst = bs + ci * sb + co;
#pragma unroll
        for (int tap = 0; tap < K * K; ++tap) dst[tap * cout] = src[tap];
    }
#pragma unroll 4
    for (int e = threadIdx.x; e < cout * plane; e += blockDim.x) {
        const int co = e / plane, p = e % plane;
        const long long o = ((long long)img * cout + co) * plane + p;
        const u8 mk = mask[o];
        if (mk < 4) {
            const int oy = 2 * (p / pw) + (mk >> 1), ox = 2 * (p % pw) + (mk & 1);
            dz[((oy + K - 1) * wp + ox + K - 1) * sc + co] = dout[o];
        }
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3, cpt = cout / KS;
    float acc[TPW][4];
#pragma unroll
    for (int i = 0; i < TPW; ++i) {
        acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
        const int tile = warp + i * warps;
        if (tile < mt * nt) {
            const int m0 = (tile % mt) * 16, n0 = (tile / mt) * 8;
            // Rows past the image read the last row (their sums are never stored).
            const int ml = min(m0 + g, rows - 1), mh = min(m0 + g + 8, rows - 1);
            const E* al = dz + ((ml / wd + K - 1) * wp + ml % wd + K - 1) * sc + Mma<D>::col(t);
            const E* ah = dz + ((mh / wd + K - 1) * wp + mh % wd + K - 1) * sc + Mma<D>::col(t);
            const E* bp = bs + (n0 + g) * sb + Mma<D>::col(t);
#pragma unroll 1
            for (int tap = 0; tap < K * K; ++tap) {
                const int off = ((tap / K) * wp + tap % K) * sc;
                const E* bt = bp + tap * cout;
                for (int c = 0; c < cpt; ++c) Mma<D>::step(acc[i], al - off + c * KS, ah - off + c * KS, bt + c * KS, 0);
            }
        }
    }
    typename D::T* dxi = dx + (long long)img * cin * rows;
    mma_for_each<TPW>(acc, mt, nt, [&](int m, int ci, float v) {
        if (m < rows) dxi[(long long)ci * rows + m] = D::st(v);
    });
}

// ---- weight and bias gradients: block j sums its share of the batch's pooled positions into
// part[j][cout*kr + cout] (FP32; conv_mma_wgrad_reduce adds the G partials). GEMM rows = output channels, columns =
// taps (ci, ky, kx), inner dimension = 4 * pooled position + window element of one image at a
// time. Shared memory: the image xs[cin*h*w], A[cout][sp] (routed gradient), B[8*nt][sp] (the
// image's patches, transposed, and a row of ones whose products are the bias gradient).
template <class D, int K, int TPW, int CW>
__device__ void conv_mma_bwd_filter(const typename D::T* __restrict__ x, const typename D::T* __restrict__ dout, const u8* __restrict__ mask,
                                    float* __restrict__ part, int n, int cin, int cout, int h, int wd) {
    typedef typename Mma<D>::E E;
    constexpr int KS = Mma<D>::KSTEP;
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int inner = plane * 4, ks = (inner + KS - 1) / KS, sp = Mma<D>::stride(ks);
    const int kr = cin * K * K, mt = cout / 16, nt = (kr + 8) / 8;  // + a row of ones: the bias
    const int xlen = cin * h * wd;
    E* xs = reinterpret_cast<E*>(smem4);
    E* as = xs + ((xlen + 7) & ~7);
    E* bs = as + cout * sp;
    // Row kr of B is all ones (over the real inner indices), so column kr of C is the bias
    // gradient; the rows after it are zero. The per-image staging below never writes them.
    const E one = D::st(1.f);
    for (int e = threadIdx.x; e < (nt * 8 - kr) * sp; e += blockDim.x) bs[kr * sp + e] = (e < inner) ? one : (E)0;
    float acc[TPW][4];
#pragma unroll
    for (int i = 0; i < TPW; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    // The batch's n * plane pooled positions are split evenly over the grid: block j takes
    // [total*j/G, total*(j+1)/G), at most a few images' worth, in segments of one image each.
    // Where the grid is smaller than the batch (an H100 holds 120 clustered blocks for 128
    // images) no block takes two whole images: the slowest block does about n/G images' work.
    // A segment builds and multiplies only the K steps that hold its positions.
    constexpr int SPS = KS / 4;  // pooled positions per K step
    const long long total = (long long)n * plane;
    const long long lo = total * blockIdx.x / gridDim.x, hi = total * (blockIdx.x + 1) / gridDim.x;
    for (long long s = lo; s < hi;) {
        const int img = (int)(s / plane), p0 = (int)(s % plane);
        const int p1 = (int)min((long long)plane, p0 + (hi - s));
        s += p1 - p0;
        const int k0 = p0 / SPS, k1 = (p1 + SPS - 1) / SPS;  // the K steps holding [p0, p1)
        const int sl0 = k0 * SPS, nsl = (k1 - k0) * SPS, m0 = k0 * KS, nm = (k1 - k0) * KS;
        __syncthreads();  // the previous segment's operands consumed
        stage_elems(xs, x + (long long)img * xlen, xlen);
        // A: one (output channel, pooled position) per iteration: its gradient goes to the
        // window element the mask names, zeros to the other three (and to positions outside
        // the segment).
#pragma unroll 4
        for (int e = threadIdx.x; e < cout * nsl; e += blockDim.x) {
            const int co = e / nsl, p = sl0 + e % nsl;
            E g = 0;
            int mk = 4;
            if (p >= p0 && p < p1) {
                const long long o = ((long long)img * cout + co) * plane + p;
                mk = mask[o];
                if (mk < 4) g = dout[o];
            }
            E* dst = as + co * sp + 4 * p;
#pragma unroll
            for (int q = 0; q < 4; ++q) dst[q] = q == mk ? g : (E)0;
        }
        __syncthreads();
        // B (the image's patches, transposed): one (input channel, inner index) per iteration.
#pragma unroll 2
        for (int e = threadIdx.x; e < cin * nm; e += blockDim.x) {
            const int ci = e / nm, m = m0 + e % nm;
            E* dst = bs + ci * K * K * sp + m;
            if (m < inner) {
                const int p = m >> 2, q = m & 3, oy = 2 * (p / pw) + (q >> 1), ox = 2 * (p % pw) + (q & 1);
                const E* src = xs + (ci * h + oy) * wd + ox;
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
        mma_tiles<D, TPW>(acc, as + m0, sp, bs + m0, sp, mt, nt, k1 - k0);
    }
    __syncthreads();
    const int plen = cout * kr + cout;
#if WGRAD_CLUSTER > 1
    if constexpr (CW > 1) {
    // The block's sums into its own shared memory (the operands are consumed; the Rust side
    // sizes the dynamic shared memory to hold plen floats), then block `rank` of the cluster
    // adds slice `rank` of all WGRAD_CLUSTER blocks' sums in rank order (deterministic) and
    // writes it to the cluster's partial.
    float* cs = reinterpret_cast<float*>(smem4);
    mma_for_each<TPW>(acc, mt, nt, [&](int co, int r, float v) {
        if (r < kr) cs[co * kr + r] = v;
        else if (r == kr) cs[cout * kr + co] = v;
    });
    cluster_sync();
    const unsigned rank = cluster_rank();
    const int lo = (int)((long long)plen * rank / WGRAD_CLUSTER), hi = (int)((long long)plen * (rank + 1) / WGRAD_CLUSTER);
    float* pj = part + (long long)(blockIdx.x / WGRAD_CLUSTER) * plen;
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        float sum = 0.f;
#pragma unroll
        for (unsigned r = 0; r < WGRAD_CLUSTER; ++r) sum += ld_cluster(cs + i, r);
        pj[i] = sum;
    }
    cluster_sync();  // no block leaves (freeing its shared memory) while another still reads it
    return;
    }
#endif
    float* pj = part + (long long)blockIdx.x * plen;
    mma_for_each<TPW>(acc, mt, nt, [&](int co, int r, float v) {
        if (r < kr) pj[co * kr + r] = v;
        else if (r == kr) pj[cout * kr + co] = v;
    });
}

// dw[i] = sum_j part[j][i] (i < len), db[c] = sum_j part[j][len + c]. Four threads per output
// (lanes 4i..4i+3 of a warp) each sum a quarter of the partials, then meet by shuffles: more
// loads in flight than one thread walking all the partials.
template <class D>
__device__ void conv_mma_wgrad_reduce(const float* __restrict__ part, int groups, int len, int cout, typename D::T* __restrict__ dw,
                                      typename D::T* __restrict__ db) {
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
    extern "C" __global__ void __launch_bounds__(512) conv_mma_fwd_##sfx(const T_(D)* x, const T_(D)* w, const float* b, T_(D)* o, u8* m, int n, int ci, int co, int h, int wd, int act) { \
        conv_mma_fwd<D, 3, CONV_MMA_FWD_TPW>(x, w, b, o, m, n, ci, co, h, wd, act);                                               \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_bwd_data_##sfx(const T_(D)* d, const u8* m, const T_(D)* w, T_(D)* dx, int n, int ci, int co, int h, int wd) { \
        conv_mma_bwd_data<D, 3, CONV_MMA_DATA_TPW>(d, m, w, dx, n, ci, co, h, wd);                                                \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_bwd_filter_##sfx(const T_(D)* x, const T_(D)* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) { \
        conv_mma_bwd_filter<D, 3, CONV_MMA_FILTER_TPW, 1>(x, d, m, part, n, ci, co, h, wd);                                       \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) WGRAD_CLUSTER_DIMS conv_mma_bwd_filter_clustered_##sfx(const T_(D)* x, const T_(D)* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) { \
        conv_mma_bwd_filter<D, 3, CONV_MMA_FILTER_TPW, WGRAD_CLUSTER>(x, d, m, part, n, ci, co, h, wd);                           \
    }                                                                                                                           \
    extern "C" __global__ void conv_mma_wgrad_reduce_##sfx(const float* part, int groups, int len, int co, T_(D)* dw, T_(D)* db) {  \
        conv_mma_wgrad_reduce<D>(part, groups, len, co, dw, db);                                                                  \
    }

MMA_ENTRY_POINTS(f16, F16)
MMA_ENTRY_POINTS(bf16, BF16)
MMA_ENTRY_POINTS(tf32, TF32)
