// ---- The training convolutions as implicit GEMMs, one block per image (or per share of the batch) ----
// conv_mma_* (FP16/BF16 on mma.sync m16n8k16, TF32 on m16n8k8, FP32 accumulation) and
// conv_igemm_*_f32 (strict FP32 on the CUDA cores) are one skeleton with the operand engine
// swapped (Igemm<D> below): every operand is staged once in shared memory with its K dimension
// contiguous and rows 16 bytes apart modulo 128, and each warp holds a 16-row tile of the output
// against several 8-column tiles in registers (register blocking), so that one A fragment feeds
// four (forward, input gradient) or ten (weight gradient) mma per K step. The tensor-core engines
// load fragments with ldmatrix (one instruction per 16x16 A tile and per two 8x16 B tiles, each
// lane giving its own row address, so that the forward's A rows are gathered straight from the
// staged image: no im2col); the FP32 engine keeps the same fragment layout (a lane owns rows g
// and g+8, columns 2t and 2t+1 of each tile) and runs FMAs over 16-byte loads. A K step is 32
// bytes of K in every engine (16 halves, 8 floats). Contracts as conv_block_fwd / conv_block_bwd_data /
// conv_block_bwd_filter in train.cu (mask 0..3 = the 2x2 window element, 4 = ReLU cut); the Rust
// side (compute/src/cuda/conv_mma.rs) chooses these kernels where the shape fits and computes the
// same shared-memory sizes. Lives in the train family: needs prelude.cuh and train.cu's F32/F16/BF16 and T_.

// TF32 math on FP32 data: the same storage as F32, its own tensor-core operation.
struct TF32 : F32 {};

// conv_mma_bwd_filter_clustered_* (and conv_igemm_bwd_filter_clustered_f32): the weight gradient's
// blocks meet in clusters on sm_90 and newer: the WGRAD_CLUSTER blocks of a cluster add their FP32
// partials over distributed shared memory, so one partial per cluster goes to global memory instead
// of one per block (half the scratch, and of what the reduction reads). Pairs, so that the device
// holds a cluster for every two images of a batch of 128 at once (an H200 held only 15 clusters of
// 8, 120 blocks, so most blocks took parts of two images and staged both); where it holds fewer,
// every block takes an even share of the batch's pooled positions. The Rust side uses it only where
// the per-block partials would be large (conv2), and reads its width from the function's attribute
// (CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH; 0 on older architectures, whose clustered entry point
// is the plain kernel).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WGRAD_CLUSTER 2
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


// ---- operand engines ----
// A 16x8 tile's accumulators c[4]: c0, c1 at row g, columns 2t, 2t+1; c2, c3 at row g+8 (g = lane/4,
// t = lane%4), in every engine.
__device__ __forceinline__ void ldsm_x4(u32* r, const void* p) {
#if __CUDA_ARCH__ >= 750
    const u32 a = (u32)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#else
    __trap();  // the host selects the tensor-core kernels on sm_80 and newer only
#endif
}

template <class D> struct Igemm;
// FP16 / BF16 operands, m16n8k16 (one K step: 16 halves).
#if __CUDA_ARCH__ >= 800
#define IGEMM_MMA16(ty)                                                                                                            \
    static __device__ __forceinline__ void mma(float* c, const u32* a, u32 b0, u32 b1) {                                         \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." #ty "." #ty ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                                              \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                                             \
    }
#else
#define IGEMM_MMA16(ty) \
    static __device__ __forceinline__ void mma(float*, const u32*, u32, u32) { __trap(); }
#endif
template <> struct Igemm<F16> {
    typedef u16 E;
    static constexpr int KSTEP = 16;
    static constexpr bool TENSOR_CORES = true;
    static __device__ __forceinline__ E prep(u16 v) { return v; }
    IGEMM_MMA16(f16)
};
template <> struct Igemm<BF16> {
    typedef u16 E;
    static constexpr int KSTEP = 16;
    static constexpr bool TENSOR_CORES = true;
    static __device__ __forceinline__ E prep(u16 v) { return v; }
    IGEMM_MMA16(bf16)
};
// TF32, m16n8k8 (one K step: 8 floats): operands rounded to TF32 (nearest, ties away) as they are
// staged, so that ldmatrix hands the mma ready fragments (a 32-bit element is a pair of b16: the
// fragment layouts of m16n8k8.tf32 and of ldmatrix on 16-byte rows of 4 floats agree).
template <> struct Igemm<TF32> {
    typedef float E;
    static constexpr int KSTEP = 8;
    static constexpr bool TENSOR_CORES = true;
    static __device__ __forceinline__ float prep(float v) {
#if __CUDA_ARCH__ >= 800
        u32 r;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
        return __uint_as_float(r);
#else
        return v;
#endif
    }
    static __device__ __forceinline__ void mma(float* c, const u32* a, u32 b0, u32 b1) {
#if __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
        __trap();
#endif
    }
};
// Strict FP32 on the CUDA cores (one K step: 8 floats, two 16-byte loads per row).
template <> struct Igemm<F32> {
    typedef float E;
    static constexpr int KSTEP = 8;
    static constexpr bool TENSOR_CORES = false;
    static __device__ __forceinline__ float prep(float v) { return v; }
};

// Row stride (elements) of a staged operand with `len` K elements: 16 bytes more than the row, so
// that 8 consecutive rows start in 8 different 16-byte bank groups (ldmatrix reads 8 rows at once).
template <class D>
__device__ __forceinline__ int igemm_stride(int len) { return len + 16 / (int)sizeof(typename Igemm<D>::E); }

__device__ __forceinline__ const unsigned char* as_bytes(const void* p) { return reinterpret_cast<const unsigned char*>(p); }
__device__ __forceinline__ float4 lds4(const unsigned char* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float dot8(float c, float4 a0, float4 a1, float4 b0, float4 b1) {
    c = fmaf(a0.x, b0.x, c); c = fmaf(a0.y, b0.y, c); c = fmaf(a0.z, b0.z, c); c = fmaf(a0.w, b0.w, c);
    c = fmaf(a1.x, b1.x, c); c = fmaf(a1.y, b1.y, c); c = fmaf(a1.z, b1.z, c); c = fmaf(a1.w, b1.w, c);
    return c;
}

// Division by a run-time divisor d < 2^16 of numerators n < 2^16 without a divide: q = umulhi(n,
// ceil(2^32 / d)) is exact there (the rounding error of the reciprocal, n·(m·d − 2^32) < 2^32, never
// carries into the quotient); d = 1 passes n through. The staging loops index with it (a 32-bit
// division is some 20 instructions; the Rust side keeps every staged count below 2^16).
struct FastDiv {
    u32 d, m;
    // ceil(2^32 / d) = floor((2^32 - 1) / d) + 1 for d >= 2 (a 32-bit division, once per thread).
    __device__ __forceinline__ explicit FastDiv(u32 dv) : d(dv), m(dv > 1u ? 0xffffffffu / dv + 1u : 0u) {}
    __device__ __forceinline__ u32 div(u32 n) const { return m ? __umulhi(n, m) : n; }
    __device__ __forceinline__ u32 mod(u32 n) const { return n - div(n) * d; }
};

// One warp: acc[j] += A[16 rows][K] · B[8 rows of tile j][K]ᵀ for NT (even) consecutive 8-row tiles
// of B, over `taps` x `cpt` K steps starting at step s0: step (tap, c) is A's bytes
// a_tap(tap) + 32 (s0 + c) from its rows and B's bytes 32 (s0 + tap cpt + c) from its rows (the
// forward and the input gradient jump between taps in A; the weight gradient runs one "tap" of
// cpt steps). `a_row(r)` is the address (bytes) of row r (0..15) of the warp's A tile at K = 0;
// B's rows are `sb` bytes apart from `b` (row 0 of tile 0 at K = 0).
template <class D, int NT, class ARow, class ATap>
__device__ __forceinline__ void warp_gemm(float (&acc)[NT][4], ARow a_row, const unsigned char* b, int sb, int s0, int taps, int cpt, ATap a_tap) {
    static_assert(NT % 2 == 0, "B tiles go in pairs");
    const int lane = threadIdx.x & 31;
    if constexpr (Igemm<D>::TENSOR_CORES) {
        // ldmatrix.x4: lanes 0-7 / 8-15 / 16-23 / 24-31 address the four 8x8 matrices. A: rows 0-7 and
        // 8-15 at K 0-7, then the same at K 8-15 (a0..a3). A B pair: tile 2j at K 0-7 and 8-15, then
        // tile 2j+1 (b0, b1 of each).
        const unsigned char* a = a_row((lane & 7) + ((lane >> 3) & 1) * 8) + (lane >> 4) * 16 + 32 * s0;
        const unsigned char* bl = b + ((lane & 7) + (lane >> 4) * 8) * sb + ((lane >> 3) & 1) * 16 + 32 * s0;
        for (int tap = 0; tap < taps; ++tap) {
            const unsigned char* at = a + a_tap(tap);
            const unsigned char* bt = bl + 32 * tap * cpt;
#pragma unroll 2
            for (int c = 0; c < cpt; ++c) {
                u32 af[4];
                ldsm_x4(af, at + 32 * c);
#pragma unroll
                for (int j = 0; j < NT / 2; ++j) {
                    u32 bf[4];
                    ldsm_x4(bf, bt + j * 16 * sb + 32 * c);
                    Igemm<D>::mma(acc[2 * j], af, bf[0], bf[1]);
                    Igemm<D>::mma(acc[2 * j + 1], af, bf[2], bf[3]);
                }
            }
        }
    } else {
        const int g = lane >> 2, t = lane & 3;
        const unsigned char* a0 = a_row(g) + 32 * s0;
        const unsigned char* a1 = a_row(g + 8) + 32 * s0;
        const unsigned char* bl = b + 2 * t * sb + 32 * s0;
        for (int tap = 0; tap < taps; ++tap) {
            const int ao = a_tap(tap);
            const unsigned char* bt = bl + 32 * tap * cpt;
#pragma unroll 1
            for (int c = 0; c < cpt; ++c) {
                const float4 x0 = lds4(a0 + ao + 32 * c), x1 = lds4(a0 + ao + 32 * c + 16);
                const float4 y0 = lds4(a1 + ao + 32 * c), y1 = lds4(a1 + ao + 32 * c + 16);
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const unsigned char* q = bt + j * 8 * sb + 32 * c;
                    const float4 p0 = lds4(q), p1 = lds4(q + 16), q0 = lds4(q + sb), q1 = lds4(q + sb + 16);
                    acc[j][0] = dot8(acc[j][0], x0, x1, p0, p1);
                    acc[j][1] = dot8(acc[j][1], x0, x1, q0, q1);
                    acc[j][2] = dot8(acc[j][2], y0, y1, p0, p1);
                    acc[j][3] = dot8(acc[j][3], y0, y1, q0, q1);
                }
            }
        }
    }
}

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


// An image x[c][hw] (NCHW, one image) into xs[p * sx + ci] (channel-minor), one element per lane
// and pass: the loads coalesce (consecutive positions), and the stores of a warp spread over the
// banks (rows 16 bytes apart mod 128). A lane writing 8 positions of one channel from one 16-byte
// load put all 32 lanes of a store on one bank (Nsight Compute: 52 % excessive wavefronts).
template <class D>
__device__ __forceinline__ void stage_channel_minor(typename Igemm<D>::E* __restrict__ xs, int sx, const typename D::T* __restrict__ xi, int c, int hw) {
    const FastDiv by_hw((u32)hw);
#pragma unroll 4
    for (int e = threadIdx.x; e < c * hw; e += blockDim.x) {
        const int ci = (int)by_hw.div((u32)e);
        xs[(e - ci * hw) * sx + ci] = Igemm<D>::prep(xi[e]);
    }
}

// The weights w[co][ci][tap] (as stored, K*K taps) into dst[co * s_co + tap * s_tap + ci * s_ci]:
// 16-byte loads of the stored order (coalesced), each lane walking its chunk's (co, ci, tap)
// forward (one division per chunk). The forward stages [co][tap * cin + ci], the input gradient
// [ci][tap * cout + co]. Reading one (co, ci) pair's K*K taps per lane made every load of a warp
// span 18 sectors for 2 bytes a lane (Nsight Compute: 84 % excessive sectors).
template <class D, int KK>
__device__ __forceinline__ void stage_weights(typename Igemm<D>::E* __restrict__ dst, const typename D::T* __restrict__ w, int cout, int cin,
                                              int s_co, int s_tap, int s_ci) {
    typedef typename D::T T;
    constexpr int V = 16 / sizeof(T);
    const int len = cout * cin * KK;
    const FastDiv by_kr((u32)(cin * KK));
    if (len % V == 0 && (reinterpret_cast<size_t>(w) & 15) == 0) {
#pragma unroll 2
        for (int k = threadIdx.x; k < len / V; k += blockDim.x) {
            const uint4 v = reinterpret_cast<const uint4*>(w)[k];
            const T* vv = reinterpret_cast<const T*>(&v);
            int co = (int)by_kr.div((u32)(k * V)), r = k * V - co * cin * KK, ci = r / KK, tap = r - ci * KK;
#pragma unroll
            for (int j = 0; j < V; ++j) {
                dst[co * s_co + tap * s_tap + ci * s_ci] = Igemm<D>::prep(vv[j]);
                if (++tap == KK) {
                    tap = 0;
                    if (++ci == cin) { ci = 0; ++co; }
                }
            }
        }
    } else {
        for (int e = threadIdx.x; e < len; e += blockDim.x) {
            const int co = (int)by_kr.div((u32)e), r = e - co * cin * KK, ci = r / KK;
            dst[co * s_co + (r - ci * KK) * s_tap + ci * s_ci] = Igemm<D>::prep(w[e]);
        }
    }
}

// The pooled-window maximum of a forward tile: rows m = 4 * pooled position + window element, so a
// window is 4 consecutive rows, held by the 4 lanes whose g differ in their two low bits (lane xor
// 4, xor 8). Every lane gets the window's maximum and its element (the first maximum wins, as on
// the CPU: a tie goes to the lower element).
__device__ __forceinline__ float window_max(float v, int* best) {
    int q = (threadIdx.x >> 2) & 3;
#pragma unroll
    for (int o = 4; o <= 8; o <<= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, o);
        const int oq = __shfl_xor_sync(0xffffffffu, q, o);
        if (ov > v || (ov == v && oq < q)) { v = ov; q = oq; }
    }
    *best = q;
    return v;
}

// ---- forward: conv + bias + activation (ReLU, GELU or Swish) + 2x2 max-pool, one block per image.
// GEMM rows m = 4 * pooled position + window element, columns = output channels, K = (tap, input
// channel), tap-major. Shared memory: the image channel-minor xs[h*w][cin + pad] (an A row is the
// cin channels at the row's input position shifted by the tap: ldmatrix reads it in place) and the
// weights ws[cout][K*K*cin + pad] in the same K order. A warp takes a 16-row tile against 4 column
// tiles (32 channels); the pool, bias and activation run on the accumulators (shuffles), and the
// pooled output and mask go straight to global memory. Needs k = 3, cin % 16 == 0, cout % 32 == 0.
template <class D>
__device__ void conv_igemm_fwd(const typename D::T* __restrict__ x, const typename D::T* __restrict__ w, const float* __restrict__ b,
                               typename D::T* __restrict__ out, u8* __restrict__ mask, int n, int cin, int cout, int h, int wd, int act) {
    typedef typename Igemm<D>::E E;
    constexpr int K = 3, KS = Igemm<D>::KSTEP, NT = 4;
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int rows = plane * 4, mt = (rows + 15) / 16, kr = cin * K * K, hw = h * wd;
    const int sx = igemm_stride<D>(cin), sw = igemm_stride<D>(kr);
    const int img = blockIdx.x;
    if (img >= n) return;
    E* xs = reinterpret_cast<E*>(smem4);
    E* ws = xs + ((hw * sx + 7) & ~7);
    stage_channel_minor<D>(xs, sx, x + (long long)img * cin * hw, cin, hw);
    // The weights as stored [co][ci][tap] into [co][tap * cin + ci].
    stage_weights<D, K * K>(ws, w, cout, cin, sw, cin, 1);
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3, cpt = cin / KS;
    const int esz = (int)sizeof(E);
    auto a_tap = [=](int tap) { return ((tap / K) * wd + tap % K) * sx * esz; };
    for (int task = warp; task < mt * (cout / 32); task += warps) {
        const int m0 = (task % mt) * 16, n0 = (task / mt) * 32;
        // Row m's conv output (oy, ox); rows past the last window read the last one (never stored).
        auto a_row = [=](int r) {
            const int m = min(m0 + r, rows - 1), p = m >> 2, q = m & 3;
            return as_bytes(xs + ((2 * (p / pw) + (q >> 1)) * wd + 2 * (p % pw) + (q & 1)) * sx);
        };
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
        warp_gemm<D, NT>(acc, a_row, as_bytes(ws + n0 * sw), sw * esz, 0, K * K, cpt, a_tap);
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int co = n0 + 8 * j + 2 * t + (c & 1), p = (m0 + g + (c >> 1) * 8) >> 2;
                const float bias = b[co];
                int best;
                float v;
                if (act == ACT_RELU) {
                    // Monotonic: the maximum before the bias and the activation is the one after.
                    v = window_max(acc[j][c], &best) + bias;
                    if (!(v > 0.f)) best = 4;
                    v = v > 0.f ? v : 0.f;
                } else {
                    // GELU and Swish are not monotonic: the maximum is taken after the activation.
                    v = window_max(act_apply(act, acc[j][c] + bias), &best);
                }
                if ((g & 3) == 0 && p < plane) {
                    const long long o = ((long long)img * cout + co) * plane + p;
                    out[o] = D::st(v);
                    mask[o] = (u8)best;
                }
            }
    }
}

// ---- input gradient, one block per image: GEMM rows = input positions m = (iy, ix), columns =
// input channels, K = (tap, output channel), tap-major. The routed gradient is staged channel-minor,
// dz[padded position][cout + pad] (zero-padded by K-1 on every side), so that row m's A elements for
// tap (ky, kx) are the cout channels at padded position (iy + K-1 - ky, ix + K-1 - kx), read in
// place. B[ci][tap * cout + co] = w[co][ci][tap]. A warp takes a 16-row tile against 4 column tiles
// (32 input channels). Needs k = 3, cin % 32 == 0, cout % 16 == 0.
template <class D>
__device__ void conv_igemm_bwd_data(const typename D::T* __restrict__ dout, const u8* __restrict__ mask, const typename D::T* __restrict__ w,
                                    typename D::T* __restrict__ dx, int n, int cin, int cout, int h, int wd) {
    typedef typename Igemm<D>::E E;
    constexpr int K = 3, KS = Igemm<D>::KSTEP, NT = 4;
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int hp = ho + 2 * (K - 1), wp = wo + 2 * (K - 1);
    const int rows = h * wd, mt = (rows + 15) / 16, kr = K * K * cout;
    const int sz = igemm_stride<D>(cout), sb = igemm_stride<D>(kr);
    const int img = blockIdx.x;
    if (img >= n) return;
    E* dz = reinterpret_cast<E*>(smem4);
    const int dzlen = (hp * wp * sz + 7) & ~7;
    E* bs = dz + dzlen;
    uint4* dz4 = reinterpret_cast<uint4*>(dz);
    for (int e = threadIdx.x; e < (int)(dzlen * sizeof(E) / 16); e += blockDim.x) dz4[e] = make_uint4(0, 0, 0, 0);
    // B from the weights as stored [co][ci][tap]: [ci][tap * cout + co].
    stage_weights<D, K * K>(bs, w, cout, cin, 1, cout, sb);
    const FastDiv by_plane((u32)plane), by_pw((u32)pw);
    __syncthreads();  // dz zeroed before the routed gradients land in it
#pragma unroll 4
    for (int e = threadIdx.x; e < cout * plane; e += blockDim.x) {
        const int co = (int)by_plane.div((u32)e), p = e - co * plane;
        const long long o = ((long long)img * cout + co) * plane + p;
        const u8 mk = mask[o];
        if (mk < 4) {
            const int py = (int)by_pw.div((u32)p);
            const int oy = 2 * py + (mk >> 1), ox = 2 * (p - py * pw) + (mk & 1);
            dz[((oy + K - 1) * wp + ox + K - 1) * sz + co] = Igemm<D>::prep(dout[o]);
        }
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3, cpt = cout / KS;
    const int esz = (int)sizeof(E);
    auto a_tap = [=](int tap) { return -((tap / K) * wp + tap % K) * sz * esz; };
    typename D::T* dxi = dx + (long long)img * cin * rows;
    for (int task = warp; task < mt * (cin / 32); task += warps) {
        const int m0 = (task % mt) * 16, n0 = (task / mt) * 32;
        // Rows past the image read the last row (their sums are never stored).
        auto a_row = [=](int r) {
            const int m = min(m0 + r, rows - 1);
            return as_bytes(dz + ((m / wd + K - 1) * wp + m % wd + K - 1) * sz);
        };
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
        warp_gemm<D, NT>(acc, a_row, as_bytes(bs + n0 * sb), sb * esz, 0, K * K, cpt, a_tap);
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int m = m0 + g + (c >> 1) * 8, ci = n0 + 8 * j + 2 * t + (c & 1);
                if (m < rows) dxi[(long long)ci * rows + m] = D::st(acc[j][c]);
            }
    }
}

// Column tiles per warp of the weight gradient (its register blocking).
#define IGEMM_WGRAD_NT 10

// Calls f(index, sum) for every weight-gradient sum a warp holds (rows: output channels of row
// tile `mtile`; columns from n0: r < kr the weights' (ci, ky, kx) -> index co * kr + r, r == kr the
// bias -> index cout * kr + co; columns past kr are padding).
template <int NT, class F>
__device__ __forceinline__ void wgrad_each(const float (&acc)[NT][4], int mtile, int n0, int kr, int cout, F f) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int co = mtile * 16 + g + (c >> 1) * 8, r = n0 + 8 * j + 2 * t + (c & 1);
            if (r < kr) f(co * kr + r, acc[j][c]);
            else if (r == kr) f(cout * kr + co, acc[j][c]);
        }
}

// ---- weight and bias gradients: block j sums its share of the batch's pooled positions into
// part[j][cout*kr + cout] (FP32; conv_mma_wgrad_reduce adds the partials). GEMM rows = output
// channels, columns = taps (ci, ky, kx) plus a column of ones (the bias), K = 4 * pooled position +
// window element of one image at a time. Shared memory: the image xs[cin*h*w], A[cout][sp] (the
// routed gradient, zeros beside each window's maximum), B[nb][sp] (the image's patches, transposed,
// row kr all ones over the real K indices, then zero rows up to nb = the tiles the warps hold).
// Warp w takes row tile w % mt against IGEMM_WGRAD_NT column tiles. Needs k = 3, cout % 16 == 0,
// (warps / (cout / 16)) * IGEMM_WGRAD_NT * 8 >= cin * 9 + 1 (the Rust side checks it).
template <class D, int CW>
__device__ void conv_igemm_bwd_filter(const typename D::T* __restrict__ x, const typename D::T* __restrict__ dout, const u8* __restrict__ mask,
                                      float* __restrict__ part, int n, int cin, int cout, int h, int wd) {
    typedef typename Igemm<D>::E E;
    constexpr int K = 3, KS = Igemm<D>::KSTEP, NT = IGEMM_WGRAD_NT;
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int inner = plane * 4, ks = (inner + KS - 1) / KS, sp = igemm_stride<D>(ks * KS);
    const int kr = cin * K * K, mt = cout / 16;
    const int warps = blockDim.x >> 5, wpm = warps / mt, nb = wpm * NT * 8;
    const int xlen = cin * h * wd;
    E* xs = reinterpret_cast<E*>(smem4);
    E* as = xs + ((xlen + 7) & ~7);
    E* bs = as + cout * sp;
    const E one = Igemm<D>::prep(D::st(1.f));
    for (int e = threadIdx.x; e < (nb - kr) * sp; e += blockDim.x) bs[kr * sp + e] = (e < inner) ? one : (E)0;
    const int warp = threadIdx.x >> 5;
    const int mtile = warp % mt, n0 = (warp / mt) * NT * 8;
    const bool active = warp < wpm * mt;
    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    // The batch's n * plane pooled positions are split evenly over the grid: block j takes
    // [total*j/G, total*(j+1)/G), at most a few images' worth, in segments of one image each.
    // Where the grid is smaller than the batch no block takes two whole images: the slowest
    // block does about n/G images' work.
    // A segment builds and multiplies only the K steps that hold its positions.
    constexpr int SPS = KS / 4;  // pooled positions per K step
    const FastDiv by_pw((u32)pw);
    const long long total = (long long)n * plane;
    const long long lo = total * blockIdx.x / gridDim.x, hi = total * (blockIdx.x + 1) / gridDim.x;
    const int esz = (int)sizeof(E);
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
        const FastDiv by_nsl((u32)nsl), by_nm((u32)nm);
#pragma unroll 4
        for (int e = threadIdx.x; e < cout * nsl; e += blockDim.x) {
            const int co = (int)by_nsl.div((u32)e), p = sl0 + e - co * nsl;
            E gv = 0;
            int mk = 4;
            if (p >= p0 && p < p1) {
                const long long o = ((long long)img * cout + co) * plane + p;
                mk = mask[o];
                if (mk < 4) gv = Igemm<D>::prep(dout[o]);
            }
            E* dst = as + co * sp + 4 * p;
#pragma unroll
            for (int q = 0; q < 4; ++q) dst[q] = q == mk ? gv : (E)0;
        }
        __syncthreads();
        // B (the image's patches, transposed): one (input channel, inner index) per iteration.
#pragma unroll 2
        for (int e = threadIdx.x; e < cin * nm; e += blockDim.x) {
            const int ci = (int)by_nm.div((u32)e), m = m0 + e - ci * nm;
            E* dst = bs + ci * K * K * sp + m;
            if (m < inner) {
                const int p = m >> 2, q = m & 3, py = (int)by_pw.div((u32)p);
                const int oy = 2 * py + (q >> 1), ox = 2 * (p - py * pw) + (q & 1);
                const E* src = xs + (ci * h + oy) * wd + ox;
#pragma unroll
                for (int ky = 0; ky < K; ++ky)
#pragma unroll
                    for (int kx = 0; kx < K; ++kx) dst[(ky * K + kx) * sp] = Igemm<D>::prep(src[ky * wd + kx]);
            } else {
#pragma unroll
                for (int j = 0; j < K * K; ++j) dst[j * sp] = 0;
            }
        }
        __syncthreads();
        if (active) {
            auto a_row = [=](int r) { return as_bytes(as + (mtile * 16 + r) * sp); };
            auto a_tap = [](int) { return 0; };
            warp_gemm<D, NT>(acc, a_row, as_bytes(bs + n0 * sp), sp * esz, k0, 1, k1 - k0, a_tap);
        }
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
    if (active) wgrad_each<NT>(acc, mtile, n0, kr, cout, [&](int i, float v) { cs[i] = v; });
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
    if (active) wgrad_each<NT>(acc, mtile, n0, kr, cout, [&](int i, float v) { pj[i] = v; });
}

// ---- the weight and bias gradients of a single-input-channel convolution (the lab's conv1) on the
// CUDA cores, one block per image into part[img][cout*K*K + cout] (conv_mma_wgrad_reduce adds the
// images). dW[co][tap] = sum over pooled positions p of dout[co][p] times the input at the window
// element the mask names, shifted by the tap. The image (as FP32), its pooled gradient and its
// mask are staged in shared memory first (16-byte loads, all in flight at once); then each thread
// takes one output channel and every 16th pooled position, and the 16 threads of a channel meet
// by shuffles. Dynamic shared memory: the image rounded to 4 floats, the gradient and the mask each
// rounded to 16 bytes (c1_smem on the Rust side). blockDim = 512 (32 channels per pass).
template <class D, int K>
__device__ void conv_wgrad_c1(const typename D::T* __restrict__ x, const typename D::T* __restrict__ dout, const u8* __restrict__ mask,
                              float* __restrict__ part, int n, int cout, int h, int wd) {
    typedef typename D::T T;
    extern __shared__ float4 smem4[];
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw, hw = h * wd, len = cout * plane;
    float* xs = reinterpret_cast<float*>(smem4);
    T* ds = reinterpret_cast<T*>(xs + ((hw + 3) & ~3));
    u8* ms = reinterpret_cast<u8*>(ds) + ((len * (int)sizeof(T) + 15) & ~15);
    const int img = blockIdx.x;
    const bool valid = img < n;  // a block past the batch writes zeros (an empty batch's one partial)
    if (valid) {
        for (int e = threadIdx.x; e < hw; e += blockDim.x) xs[e] = D::ld(x[(long long)img * hw + e]);
        stage_elems(ds, dout + (long long)img * len, len);
        stage_elems(ms, mask + (long long)img * len, len);
    }
    __syncthreads();
    const int chunk = threadIdx.x & 15;
    const FastDiv by_pw((u32)pw);
    float* pj = part + (long long)img * (cout * K * K + cout);
    for (int co = threadIdx.x >> 4; co < ((cout + 31) & ~31); co += blockDim.x >> 4) {
        float acc[K * K + 1];
#pragma unroll
        for (int j = 0; j <= K * K; ++j) acc[j] = 0.f;
        if (valid && co < cout) {
            for (int p = chunk; p < plane; p += 16) {
                const u8 mk = ms[co * plane + p];
                if (mk < 4) {
                    const float gv = D::ld(ds[co * plane + p]);
                    const int py = (int)by_pw.div((u32)p);
                    const float* src = xs + (2 * py + (mk >> 1)) * wd + 2 * (p - py * pw) + (mk & 1);
#pragma unroll
                    for (int ky = 0; ky < K; ++ky)
#pragma unroll
                        for (int kx = 0; kx < K; ++kx) acc[ky * K + kx] = fmaf(gv, src[ky * wd + kx], acc[ky * K + kx]);
                    acc[K * K] += gv;
                }
            }
        }
#pragma unroll
        for (int j = 0; j <= K * K; ++j) {
            float v = acc[j];
#pragma unroll
            for (int o = 1; o < 16; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (chunk == 0 && co < cout) {
                if (j < K * K) pj[co * K * K + j] = v;
                else pj[cout * K * K + co] = v;
            }
        }
    }
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

#define MMA_ENTRY_POINTS(sfx, D)                                                                                                   \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_fwd_##sfx(const T_(D)* x, const T_(D)* w, const float* b, T_(D)* o, u8* m, int n, int ci, int co, int h, int wd, int act) { \
        conv_igemm_fwd<D>(x, w, b, o, m, n, ci, co, h, wd, act);                                                                  \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_bwd_data_##sfx(const T_(D)* d, const u8* m, const T_(D)* w, T_(D)* dx, int n, int ci, int co, int h, int wd) { \
        conv_igemm_bwd_data<D>(d, m, w, dx, n, ci, co, h, wd);                                                                    \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) conv_mma_bwd_filter_##sfx(const T_(D)* x, const T_(D)* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) { \
        conv_igemm_bwd_filter<D, 1>(x, d, m, part, n, ci, co, h, wd);                                                             \
    }                                                                                                                           \
    extern "C" __global__ void __launch_bounds__(512) WGRAD_CLUSTER_DIMS conv_mma_bwd_filter_clustered_##sfx(const T_(D)* x, const T_(D)* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) { \
        conv_igemm_bwd_filter<D, WGRAD_CLUSTER>(x, d, m, part, n, ci, co, h, wd);                                                 \
    }                                                                                                                           \
    extern "C" __global__ void conv_mma_wgrad_reduce_##sfx(const float* part, int groups, int len, int co, T_(D)* dw, T_(D)* db) {  \
        conv_mma_wgrad_reduce<D>(part, groups, len, co, dw, db);                                                                  \
    }

MMA_ENTRY_POINTS(f16, F16)
MMA_ENTRY_POINTS(bf16, BF16)
MMA_ENTRY_POINTS(tf32, TF32)

// Strict FP32: the same skeleton on the CUDA cores.
extern "C" __global__ void __launch_bounds__(512) conv_igemm_fwd_f32(const float* x, const float* w, const float* b, float* o, u8* m, int n, int ci, int co, int h, int wd, int act) {
    conv_igemm_fwd<F32>(x, w, b, o, m, n, ci, co, h, wd, act);
}
extern "C" __global__ void __launch_bounds__(512) conv_igemm_bwd_data_f32(const float* d, const u8* m, const float* w, float* dx, int n, int ci, int co, int h, int wd) {
    conv_igemm_bwd_data<F32>(d, m, w, dx, n, ci, co, h, wd);
}
extern "C" __global__ void __launch_bounds__(512) conv_igemm_bwd_filter_f32(const float* x, const float* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) {
    conv_igemm_bwd_filter<F32, 1>(x, d, m, part, n, ci, co, h, wd);
}
extern "C" __global__ void __launch_bounds__(512) WGRAD_CLUSTER_DIMS conv_igemm_bwd_filter_clustered_f32(const float* x, const float* d, const u8* m, float* part, int n, int ci, int co, int h, int wd) {
    conv_igemm_bwd_filter<F32, WGRAD_CLUSTER>(x, d, m, part, n, ci, co, h, wd);
}
extern "C" __global__ void conv_igemm_wgrad_reduce_f32(const float* part, int groups, int len, int co, float* dw, float* db) {
    conv_mma_wgrad_reduce<F32>(part, groups, len, co, dw, db);
}

// The single-input-channel weight gradient (conv1), every storage dtype; k = 3.
#define C1_ENTRY_POINTS(sfx, D)                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512) conv_wgrad_c1_##sfx(const T_(D)* x, const T_(D)* d, const u8* m, float* part, int n, int co, int h, int wd) { \
        conv_wgrad_c1<D, 3>(x, d, m, part, n, co, h, wd);                                                                         \
    }
C1_ENTRY_POINTS(f32, F32)
C1_ENTRY_POINTS(f16, F16)
C1_ENTRY_POINTS(bf16, BF16)
