// ---- The convolution ladder: one forward convolution, five ways (Act III, `showdown bench conv`) ----
// y[b][m][oh][ow] = sum_{c,p,q} x[b][c][oh+p][ow+q] * w[m][c][p][q]   (valid convolution, stride 1,
// NCHW input, weights [M][C][K][K], NCHW output; Ho = H-K+1, Wo = W-K+1).
//
// Rung 1 (baseline, FP32): conv_unroll_f32 (im2col) + gemm_tiled_f32 + conv_permute_f32, three
//   launches per chunk of images, the unrolled matrix in global memory.
// Rung 2 (fused, FP32): conv_fused_f32 — the same 16x16 tiled GEMM, gathering its B tile straight
//   from the input (implicit im2col) and storing straight into NCHW: one launch, no round trips.
// Rung 3 (tensor cores): conv_tc_f16 — FP16 input and weights, FP32 accumulation on mma.sync
//   m16n8k16, FP32 output; persistent blocks, weights (ldmatrix) and each image staged in shared
//   memory, the output tile staged in shared memory and written with 16-byte stores.
// Rung 4 (+ compile-time shapes, FP16 output): conv_tc_opt_{lab_conv1,lab_conv2,lenet_c1,lenet_c3}
//   — rung 3's body with the layer's shape as constants (fully unrolled K loop, constant index
//   math, __restrict__ everywhere) and FP16 output (half the bytes written); for conv2 (32 input
//   channels) the image is staged channels-last so B fragments come from ldmatrix too.
// Rung 5 is rung 4 fed from pinned host memory over two streams (host side only).
// Needs prelude.cuh (u16, u32, h2f, f2h, F32, F16, GRID_STRIDE).

// ---- Rung 1: unroll, GEMM, permute ----

// xu[(c*K + p)*K + q][b*HoWo + oh*Wo + ow] = x[b0 + b][c][oh + p][ow + q], for the nb images from b0.
extern "C" __global__ void conv_unroll_f32(const float* x, float* xu, int b0, int nb, int C, int H, int W, int K) {
    const int Ho = H - K + 1, Wo = W - K + 1, HoWo = Ho * Wo;
    const long long cols = (long long)nb * HoWo;
    GRID_STRIDE(i, (long long)C * K * K * cols) {
        const long long col = i % cols;
        const int row = (int)(i / cols);
        const int b = (int)(col / HoWo), pix = (int)(col % HoWo);
        const int oh = pix / Wo, ow = pix % Wo;
        const int c = row / (K * K), pq = row % (K * K), p = pq / K, q = pq % K;
        xu[i] = x[(((long long)(b0 + b) * C + c) * H + oh + p) * W + ow + q];
    }
}

// C[M][N] = A[M][Kd] * B[Kd][N], row-major, one output per thread of a 16x16 block, 16x16 tiles of
// A and B staged in shared memory (the classic tiled GEMM).
extern "C" __global__ void gemm_tiled_f32(const float* A, const float* B, float* Cm, int M, long long N, int Kd) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty;
    const long long col = (long long)blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < Kd; k0 += 16) {
        As[ty][tx] = (row < M && k0 + tx < Kd) ? A[(long long)row * Kd + k0 + tx] : 0.f;
        Bs[ty][tx] = (k0 + ty < Kd && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 16; ++j) acc += As[ty][j] * Bs[j][tx];
        __syncthreads();
    }
    if (row < M && col < N) Cm[(long long)row * N + col] = acc;
}

// y[b0 + b][m][pix] = yt[m][b*HoWo + pix]: the GEMM's channel-major result back to NCHW.
extern "C" __global__ void conv_permute_f32(const float* yt, float* y, int b0, int nb, int M, int HoWo) {
    const long long per_img = (long long)M * HoWo;
    GRID_STRIDE(i, (long long)nb * per_img) {
        const int b = (int)(i / per_img);
        const int rest = (int)(i % per_img), m = rest / HoWo, pix = rest % HoWo;
        y[(long long)b0 * per_img + i] = yt[(long long)m * nb * HoWo + (long long)b * HoWo + pix];
    }
}

// ---- Rung 2: fused unroll -> GEMM -> permute ----

// The tiled GEMM of rung 1 over all B*HoWo output pixels at once: the B tile is gathered from x
// (implicit im2col), the result stored into NCHW. Grid: (ceil(B*HoWo/16), ceil(M/16)), 16x16 threads.
extern "C" __global__ void conv_fused_f32(const float* x, const float* w, float* y, int B, int C, int H, int W, int M, int K) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int Ho = H - K + 1, Wo = W - K + 1, HoWo = Ho * Wo, KK = K * K, Kd = C * KK;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m = blockIdx.y * 16 + ty;
    const long long n = (long long)blockIdx.x * 16 + tx;
    const bool col_ok = n < (long long)B * HoWo;
    const int b = col_ok ? (int)(n / HoWo) : 0, pix = col_ok ? (int)(n % HoWo) : 0;
    const float* xb = x + (long long)b * C * H * W + (pix / Wo) * W + pix % Wo;
    float acc = 0.f;
    for (int k0 = 0; k0 < Kd; k0 += 16) {
        As[ty][tx] = (m < M && k0 + tx < Kd) ? w[m * Kd + k0 + tx] : 0.f;
        const int kk = k0 + ty;
        float v = 0.f;
        if (kk < Kd && col_ok) {
            const int c = kk / KK, pq = kk % KK;
            v = xb[(c * H + pq / K) * W + pq % K];
        }
        Bs[ty][tx] = v;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 16; ++j) acc += As[ty][j] * Bs[j][tx];
        __syncthreads();
    }
    if (m < M && col_ok) y[((long long)b * M + m) * HoWo + pix] = acc;
}

// ---- Rungs 3 and 4: implicit GEMM on tensor cores ----
// Per image: out[m][pix] = sum_kk W[m][kk] * X[kk][pix], kk = (c, p, q) padded to KP (a multiple
// of 16), m padded to 16*MT. A = the weights (row-major in shared memory, rows KP+8 halves apart
// so ldmatrix is conflict-free), B = the image gathered through a table of offsets (kofs[kk] =
// (c*H + p)*W + q; padding kk read the pixel itself, a finite value the zero weights cancel), C fragments = 16 channels x 8 pixels. A warp owns
// NG = 8/MT consecutive 8-pixel tiles for all MT channel tiles, so every gathered B fragment
// feeds MT mma and every A fragment NG. Blocks are persistent (grid-stride over images); a phase
// stages image i while writing image i-1's output (16-byte stores where aligned), then computes.

#define CONV_TC_THREADS 256

// Shared-memory layout, in bytes; the host computes the same (conv_tc_smem_bytes in conv_ladder.rs).
__host__ __device__ __forceinline__ int conv_tc_kp(int C, int K) { return (C * K * K + 15) / 16 * 16; }
__device__ __forceinline__ int conv_tc_align16(int v) { return (v + 15) / 16 * 16; }

// Copies `bytes` bytes with the widest access (16, 8, 4 or 2 bytes) both addresses and the length allow.
__device__ __forceinline__ void copy_bytes(void* __restrict__ dst, const void* __restrict__ src, int bytes) {
    const size_t a = reinterpret_cast<size_t>(dst) | reinterpret_cast<size_t>(src) | (size_t)bytes;
    if ((a & 15) == 0) {
        for (int i = threadIdx.x; i < bytes / 16; i += blockDim.x) reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    } else if ((a & 7) == 0) {
        for (int i = threadIdx.x; i < bytes / 8; i += blockDim.x) reinterpret_cast<uint2*>(dst)[i] = reinterpret_cast<const uint2*>(src)[i];
    } else if ((a & 3) == 0) {
        for (int i = threadIdx.x; i < bytes / 4; i += blockDim.x) reinterpret_cast<u32*>(dst)[i] = reinterpret_cast<const u32*>(src)[i];
    } else {
        for (int i = threadIdx.x; i < bytes / 2; i += blockDim.x) reinterpret_cast<u16*>(dst)[i] = reinterpret_cast<const u16*>(src)[i];
    }
}

__device__ __forceinline__ void ldmatrix_x4(u32 (&a)[4], const u16* p) {
#if __CUDA_ARCH__ >= 800
    const u32 s = (u32)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(s));
#else
    __trap();  // the host selects these kernels on sm_80 and newer only
#endif
}

__device__ __forceinline__ void mma_f16_16816(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    __trap();
#endif
}

// O: the output storage (F32 for rung 3, F16 for rung 4); MT: channel tiles of 16 (1, 2 or 4).
// With constant C, H, W, M, K (rung 4's entry points) every loop below has a constant trip count.
template <class O, int MT>
__device__ __forceinline__ void conv_tc_body(const u16* __restrict__ x, const u16* __restrict__ w, typename O::T* __restrict__ y,
                                             int B, int C, int H, int W, int M, int K) {
    typedef typename O::T OT;
    constexpr int NG = 8 / MT;
    extern __shared__ __align__(16) unsigned char conv_smem[];
    const int Ho = H - K + 1, Wo = W - K + 1, HoWo = Ho * Wo, KK = K * K, Kd = C * KK;
    const int KP = conv_tc_kp(C, K), SA = KP + 8, KS = KP / 16, CHW = C * H * W;
    const int NT = (HoWo + 7) / 8, NGR = (NT + NG - 1) / NG;
    u16* ws = reinterpret_cast<u16*>(conv_smem);                                   // [16*MT][SA]
    int* kofs = reinterpret_cast<int*>(conv_smem + conv_tc_align16(16 * MT * SA * 2));  // [KP]
    u16* xs = reinterpret_cast<u16*>(reinterpret_cast<unsigned char*>(kofs) + conv_tc_align16(KP * 4));  // [CHW], 8 spare
    OT* outs = reinterpret_cast<OT*>(reinterpret_cast<unsigned char*>(xs) + conv_tc_align16((CHW + 8) * 2));  // [M*HoWo]
    const int tid = threadIdx.x;
    for (int e = tid; e < 16 * MT * SA; e += blockDim.x) {
        const int m = e / SA, kk = e % SA;
        ws[e] = (m < M && kk < Kd) ? w[m * Kd + kk] : (u16)0;
    }
    for (int kk = tid; kk < KP; kk += blockDim.x) {
        const int c = kk / KK, pq = kk % KK;
        kofs[kk] = kk < Kd ? (c * H + pq / K) * W + pq % K : 0;
    }
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int img_bytes = CHW * 2, out_bytes = M * HoWo * (int)sizeof(OT);
    int prev = -1;
    for (int img = blockIdx.x; img < B; img += gridDim.x) {
        __syncthreads();  // xs and outs are free (and, the first time, ws/kofs are written)
        copy_bytes(xs, x + (long long)img * CHW, img_bytes);
        if (prev >= 0) copy_bytes(y + (long long)prev * M * HoWo, outs, out_bytes);
        __syncthreads();
        for (int grp = warp; grp < NGR; grp += CONV_TC_THREADS / 32) {
            float acc[NG][MT][4];
            int base[NG];
#pragma unroll
            for (int i = 0; i < NG; ++i) {
                const int pix = min((grp * NG + i) * 8 + g, HoWo - 1);
                base[i] = (pix / Wo) * W + pix % Wo;
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int r = 0; r < 4; ++r) acc[i][mt][r] = 0.f;
            }
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                const int k0 = ks * 16 + 2 * t;
                const int o0 = kofs[k0], o1 = kofs[k0 + 1], o2 = kofs[k0 + 8], o3 = kofs[k0 + 9];
                u32 a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(a[mt], ws + (mt * 16 + (lane & 15)) * SA + ks * 16 + 8 * (lane >> 4));
#pragma unroll
                for (int i = 0; i < NG; ++i) {
                    const u16* xb = xs + base[i];
                    const u32 b0 = (u32)xb[o0] | ((u32)xb[o1] << 16);
                    const u32 b1 = (u32)xb[o2] | ((u32)xb[o3] << 16);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) mma_f16_16816(acc[i][mt], a[mt], b0, b1);
                }
            }
#pragma unroll
            for (int i = 0; i < NG; ++i)
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        const int m = mt * 16 + g + (r >> 1) * 8, pix = (grp * NG + i) * 8 + 2 * t + (r & 1);
                        if (m < M && pix < HoWo) outs[m * HoWo + pix] = O::st(acc[i][mt][r]);
                    }
        }
        prev = img;
    }
    __syncthreads();
    if (prev >= 0) copy_bytes(y + (long long)prev * M * HoWo, outs, out_bytes);
}

// Rung 3: any shape with M <= 64 (the host checks), FP32 output. Dynamic shared memory from
// conv_tc_smem_bytes; 256 threads; grid: a few blocks per SM.
extern "C" __global__ void __launch_bounds__(CONV_TC_THREADS) conv_tc_f16(const u16* x, const u16* w, float* y, int B, int C, int H, int W, int M, int K) {
    if (M <= 16) conv_tc_body<F32, 1>(x, w, y, B, C, H, W, M, K);
    else if (M <= 32) conv_tc_body<F32, 2>(x, w, y, B, C, H, W, M, K);
    else conv_tc_body<F32, 4>(x, w, y, B, C, H, W, M, K);
}

// Rung 4: one entry point per layer of the ladder, its shape compiled in; FP16 output.
#define CONV_TC_OPT(name, C, H, W, M, K, MT)                                                                              \
    extern "C" __global__ void __launch_bounds__(CONV_TC_THREADS) name(const u16* __restrict__ x, const u16* __restrict__ w, \
                                                                        u16* __restrict__ y, int B) {                         \
        conv_tc_body<F16, MT>(x, w, y, B, C, H, W, M, K);                                                                 \
    }
CONV_TC_OPT(conv_tc_opt_lab_conv1, 1, 28, 28, 32, 3, 2)
CONV_TC_OPT(conv_tc_opt_lenet_c1, 1, 86, 86, 4, 7, 1)
CONV_TC_OPT(conv_tc_opt_lenet_c3, 4, 40, 40, 16, 7, 1)

// Rung 4 for layers whose input channels are a multiple of 16 (the lab's conv2): the image is
// staged channels-last in shared memory (xs[pixel][c], rows C + 8 halves apart) and the reduction
// runs over kk = (p*K + q)*C + c, so a B fragment's k pairs are adjacent channels of one pixel and
// one ldmatrix.x4 loads the B fragments of two 8-pixel tiles (instead of 16 16-bit gathers). The
// weights are staged in the same kk order. Per K step a warp issues MT + NG/2 ldmatrix for MT*NG mma.
template <int C, int H, int W, int M, int K>
__device__ __forceinline__ void conv_tc_nhwc_body(const u16* __restrict__ x, const u16* __restrict__ w, u16* __restrict__ y, int B) {
    constexpr int MT = M / 16, NG = 8 / MT, Ho = H - K + 1, Wo = W - K + 1, HoWo = Ho * Wo, HW = H * W;
    constexpr int KP = C * K * K, SA = KP + 8, KS = KP / 16, CP = C + 8, CB = C / 16;
    constexpr int NT = (HoWo + 7) / 8, NGR = (NT + NG - 1) / NG;
    static_assert(C % 16 == 0 && M % 16 == 0 && NG % 2 == 0, "channels-last staging needs C, M multiples of 16");
    extern __shared__ __align__(16) unsigned char conv_smem[];
    u16* ws = reinterpret_cast<u16*>(conv_smem);                                                     // [M][SA]
    u16* xs = reinterpret_cast<u16*>(conv_smem + conv_tc_align16(M * SA * 2));                        // [HW][CP]
    u16* outs = reinterpret_cast<u16*>(reinterpret_cast<unsigned char*>(xs) + conv_tc_align16(HW * CP * 2));  // [M][HoWo]
    const int tid = threadIdx.x;
    for (int e = tid; e < M * KP; e += blockDim.x) {
        const int m = e / KP, kk = e % KP, pq = kk / C, c = kk % C;  // kk in (p, q, c) order
        ws[m * SA + kk] = w[(m * C + c) * K * K + pq];
    }
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    constexpr int out_bytes = M * HoWo * 2;
    int prev = -1;
    for (int img = blockIdx.x; img < B; img += gridDim.x) {
        __syncthreads();
        const u16* xi = x + (long long)img * C * HW;
        // One pixel x 8 channels per thread: 8 loads coalesced across the warp's consecutive
        // pixels, one 16-byte store (rows 16 bytes apart mod 128: no bank conflicts).
        for (int e = tid; e < HW * (C / 8); e += blockDim.x) {
            const int p = e % HW, c8 = (e / HW) * 8;
            u32 v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = xi[(c8 + j) * HW + p];
            uint4 q;
            q.x = v[0] | (v[1] << 16);
            q.y = v[2] | (v[3] << 16);
            q.z = v[4] | (v[5] << 16);
            q.w = v[6] | (v[7] << 16);
            *reinterpret_cast<uint4*>(xs + p * CP + c8) = q;
        }
        if (prev >= 0) copy_bytes(y + (long long)prev * M * HoWo, outs, out_bytes);
        __syncthreads();
        for (int grp = warp; grp < NGR; grp += CONV_TC_THREADS / 32) {
            float acc[NG][MT][4];
#pragma unroll
            for (int i = 0; i < NG; ++i)
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int r = 0; r < 4; ++r) acc[i][mt][r] = 0.f;
            // This lane's ldmatrix row for the B fragments of tile pair jp: matrix lane>>3 =
            // (tile 2jp + (lane>>4), channels +8 if lane&8), row lane&7 = the tile's pixel.
            int brow[NG / 2];
#pragma unroll
            for (int jp = 0; jp < NG / 2; ++jp) {
                const int pix = min((grp * NG + 2 * jp + (lane >> 4)) * 8 + (lane & 7), HoWo - 1);
                brow[jp] = ((pix / Wo) * W + pix % Wo) * CP + ((lane >> 3) & 1) * 8;
            }
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                const int pq = ks / CB, c0 = (ks % CB) * 16;
                const int off = ((pq / K) * W + pq % K) * CP + c0;
                u32 a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(a[mt], ws + (mt * 16 + (lane & 15)) * SA + ks * 16 + 8 * (lane >> 4));
#pragma unroll
                for (int jp = 0; jp < NG / 2; ++jp) {
                    u32 b[4];
                    ldmatrix_x4(b, xs + brow[jp] + off);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_f16_16816(acc[2 * jp][mt], a[mt], b[0], b[1]);
                        mma_f16_16816(acc[2 * jp + 1][mt], a[mt], b[2], b[3]);
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < NG; ++i)
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        const int m = mt * 16 + g + (r >> 1) * 8, pix = (grp * NG + i) * 8 + 2 * t + (r & 1);
                        if (pix < HoWo) outs[m * HoWo + pix] = f2h(acc[i][mt][r]);
                    }
        }
        prev = img;
    }
    __syncthreads();
    if (prev >= 0) copy_bytes(y + (long long)prev * M * HoWo, outs, out_bytes);
}

// Three blocks per SM (at most 85 registers a thread): staging, computing and writing overlap
// across blocks.
#define CONV_TC_OPT_NHWC(name, C, H, W, M, K)                                                                   \
    extern "C" __global__ void __launch_bounds__(CONV_TC_THREADS, 3)                                            \
        name(const u16* __restrict__ x, const u16* __restrict__ w, u16* __restrict__ y, int B) {                \
        conv_tc_nhwc_body<C, H, W, M, K>(x, w, y, B);                                                           \
    }
CONV_TC_OPT_NHWC(conv_tc_opt_lab_conv2, 32, 13, 13, 64, 3)
