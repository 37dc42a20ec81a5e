// The lab CNN's training primitives on the GPU: one kernel family per Backend primitive
// (compute/src/backend/mod.rs documents each contract). Entry points are `{op}_{dtype}` with
// dtype f32, f16 or bf16: the dtype of activations, activation gradients and weight copies.
// Master weights, biases, Adam moments, accumulation and the loss scaler are FP32.
// Needs prelude.cuh (prepended by the kernels crate).

// Dynamic loss scaler (PyTorch GradScaler semantics); layout mirrored by the Rust side.
struct Scaler { float scale; u32 growth_tracker; u32 found_inf; u32 skipped; u32 step; u32 enabled; };

// Step cursor (layout mirrored by the Rust side, CURSOR_WORDS): the step within the epoch and the
// dropout counter. Kernels read it on the device so that a captured step graph, replayed, works on
// the next batch; cursor_advance (the step's last launch) moves it on.
struct Cursor { u32 step; u32 counter_lo; u32 counter_hi; };

__device__ __forceinline__ void cursor_next(Cursor* c) {
    c->step += 1;
    const u64 counter = ((u64)c->counter_hi << 32 | c->counter_lo) + 1;
    c->counter_lo = (u32)counter;
    c->counter_hi = (u32)(counter >> 32);
}

extern "C" __global__ void cursor_advance(Cursor* c) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    cursor_next(c);
}

// ---- batch gather + normalise: x[i, :] = (images[order[cursor.step*stride + i], :] / 255 - mean) / std ----
template <class D>
__device__ void gather(const u8* __restrict__ images, const u8* __restrict__ labels, const u32* __restrict__ order,
                       int order_len, const Cursor* __restrict__ cursor, int stride, int n, int px, float scale, float shift,
                       typename D::T* __restrict__ x, u8* __restrict__ y) {
    const long long offset = (long long)cursor->step * stride;
    GRID_STRIDE(i, (long long)n * px) {
        const int img = (int)(i / px), p = (int)(i % px);
        if (offset + img >= order_len) {  // a cursor past the order: an empty (zero) image, never a stray read
            x[i] = D::st(0.f);
            if (p == 0) y[img] = 0;
            continue;
        }
        const u32 src = order[offset + img];
        x[i] = D::st(images[(long long)src * px + p] * scale - shift);
        if (p == 0) y[img] = labels[src];
    }
}

// ---- conv + bias + ReLU + 2x2 max-pool. One block per (image, group of CPB output channels):
// the block stages the image's input planes xs[cin, h, w] and the group's weights as
// ws[cin, K*K, CPB] (channel-minor, so a thread's COG weights of a tap are COG/4 float4 loads)
// in shared memory, as FP32. Each thread owns one pooled position for COG output channels:
// it loads the (K+1)x(K+1) input patch under its 2x2 pool window once per input channel and
// feeds 4*COG accumulators from it (K*K*4*COG FMAs per 2*(K+1)^2 + K*K*COG/4 shared loads).
// Dynamic shared memory: conv_fwd_smem_floats(...) floats (the Rust side computes the same).
// Output: pooled activation and the pool's argmax (0..3, or 4 when the max is not positive).
template <class D, int K, int COG>
__device__ void conv_block_fwd(const typename D::T* __restrict__ x, const typename D::T* __restrict__ w, const float* __restrict__ b,
                               typename D::T* __restrict__ out, u8* __restrict__ mask, int n, int cin, int cout, int h, int wd, int cpb, int act) {
    extern __shared__ float4 smem4[];
    float* xs = reinterpret_cast<float*>(smem4);
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    const int img = blockIdx.x, co0 = blockIdx.y * cpb;
    if (img >= n || co0 >= cout) return;
    float* ws = xs + ((cin * h * wd + 3) & ~3);
    const typename D::T* xi = x + (long long)img * cin * h * wd;
    for (int e = threadIdx.x; e < cin * h * wd; e += blockDim.x) xs[e] = D::ld(xi[e]);
    for (int e = threadIdx.x; e < cin * K * K * cpb; e += blockDim.x) {
        const int c = e % cpb, tap = (e / cpb) % (K * K), ci = e / (cpb * K * K), co = co0 + c;
        ws[e] = co < cout ? D::ld(w[((long long)co * cin + ci) * K * K + tap]) : 0.f;
    }
    __syncthreads();
    const int groups = cpb / COG;
    for (int t = threadIdx.x; t < plane * groups; t += blockDim.x) {
        const int pos = t % plane, g = t / plane;
        const int py = pos / pw, px = pos % pw;
        float acc[COG][4];
#pragma unroll
        for (int j = 0; j < COG; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[j][q] = 0.f;
        for (int ci = 0; ci < cin; ++ci) {
            float patch[K + 1][K + 1];
            const float* xp = xs + ci * h * wd + (2 * py) * wd + 2 * px;
#pragma unroll
            for (int r = 0; r < K + 1; ++r)
#pragma unroll
                for (int c = 0; c < K + 1; ++c) patch[r][c] = xp[r * wd + c];
            const float4* wc = reinterpret_cast<const float4*>(ws + (ci * K * K) * cpb + g * COG);
#pragma unroll
            for (int ky = 0; ky < K; ++ky)
#pragma unroll
                for (int kx = 0; kx < K; ++kx) {
#pragma unroll
                    for (int j4 = 0; j4 < COG / 4; ++j4) {
                        const float4 v = wc[(ky * K + kx) * (cpb / 4) + j4];
                        const float wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                        for (int u = 0; u < 4; ++u) {
                            float* a = acc[4 * j4 + u];
                            a[0] += wv[u] * patch[ky][kx];
                            a[1] += wv[u] * patch[ky][kx + 1];
                            a[2] += wv[u] * patch[ky + 1][kx];
                            a[3] += wv[u] * patch[ky + 1][kx + 1];
                        }
                    }
                }
        }
#pragma unroll
        for (int j = 0; j < COG; ++j) {
            const int co = co0 + g * COG + j;
            if (co >= cout) break;
            const float bias = b[co];
            const long long o = ((long long)img * cout + co) * plane + pos;
            // First maximum wins, as on the CPU; constant indices keep acc in registers.
            int best = 0;
            if (act == ACT_RELU) {
                // Monotonic: the maximum before the bias and the activation is the one after.
                float m = acc[j][0];
#pragma unroll
                for (int q = 1; q < 4; ++q)
                    if (acc[j][q] > m) { m = acc[j][q]; best = q; }
                const float v = m + bias;
                const bool pos_ = v > 0.f;
                out[o] = D::st(pos_ ? v : 0.f);
                mask[o] = pos_ ? (u8)best : (u8)4;
            } else {
                // GELU and Swish are not monotonic: the maximum is taken after the activation.
                float m = act_apply(act, acc[j][0] + bias);
#pragma unroll
                for (int q = 1; q < 4; ++q) {
                    const float v = act_apply(act, acc[j][q] + bias);
                    if (v > m) { m = v; best = q; }
                }
                out[o] = D::st(m);
                mask[o] = (u8)best;
            }
        }
    }
}

// GELU and Swish backward, before the convolution's own backward kernels: each pooled gradient
// times the activation's derivative at the pre-activation of its window's maximum, which is
// recomputed here (bias + one dot product of cin*K*K taps, FP32 accumulation over the stored
// operands) rather than kept from the forward pass. The conv backward kernels then route
// `dact` through the mask exactly as they route ReLU's gradient (the mask is never 4 here).
template <class D>
__device__ void act_route(const typename D::T* __restrict__ x, const typename D::T* __restrict__ w, const float* __restrict__ b,
                          const typename D::T* __restrict__ dout, const u8* __restrict__ mask, typename D::T* __restrict__ dact, int n,
                          int cin, int cout, int h, int wd, int k, int act) {
    const int ho = h - k + 1, wo = wd - k + 1, ph = ho / 2, pw = wo / 2, plane = ph * pw;
    GRID_STRIDE(o, (long long)n * cout * plane) {
        const int p = (int)(o % plane), co = (int)((o / plane) % cout);
        const long long img = o / ((long long)plane * cout);
        const int m = mask[o];
        float g = 0.f;
        if (m < 4) {
            const int oy = 2 * (p / pw) + (m >> 1), ox = 2 * (p % pw) + (m & 1);
            float z = b[co];
            const typename D::T* wc = w + (long long)co * cin * k * k;
            const typename D::T* xi = x + img * cin * h * wd;
            for (int ci = 0; ci < cin; ++ci)
                for (int ky = 0; ky < k; ++ky)
                    for (int kx = 0; kx < k; ++kx)
                        z += D::ld(wc[(ci * k + ky) * k + kx]) * D::ld(xi[(ci * h + oy + ky) * wd + ox + kx]);
            g = D::ld(dout[o]) * act_derivative(act, z);
        }
        dact[o] = D::st(g);
    }
}

// Gradient of the conv output at (oy, ox) routed through ReLU and the pool's mask.
template <class D>
__device__ __forceinline__ float routed(const typename D::T* dout, const u8* mask, long long plane, int oy, int ox, int ph, int pw) {
    const int py = oy >> 1, px = ox >> 1;
    if (py >= ph || px >= pw) return 0.f;
    const long long o = plane + (long long)py * pw + px;
    return mask[o] == (u8)(((oy & 1) << 1) | (ox & 1)) ? D::ld(dout[o]) : 0.f;
}

// ---- input gradient: one block per (image, group of CG input channels). The block routes
// the image's pooled gradient through the mask into a zero-padded dz[cout, ho+2(K-1), wo+2(K-1)]
// in shared memory and stages the group's weights as ws[cout, K*K, CG]; each thread then owns
// one input position and accumulates all CG channels at once: one dz load feeds CG FMAs, the
// weights are warp-wide broadcasts, and the padding removes every bounds check.
// Dynamic shared memory: conv_bwd_data_smem_floats(...) floats (the Rust side computes the same).
template <class D, int K, int CG>
__device__ void conv_block_bwd_data(const typename D::T* __restrict__ dout, const u8* __restrict__ mask, const typename D::T* __restrict__ w,
                                    typename D::T* __restrict__ dx, int n, int cin, int cout, int h, int wd) {
    extern __shared__ float4 smem4[];
    float* smem = reinterpret_cast<float*>(smem4);
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2;
    const int hp = ho + 2 * (K - 1), wp = wo + 2 * (K - 1);
    const int img = blockIdx.x, ci0 = blockIdx.y * CG, cg = min(CG, cin - ci0);
    if (img >= n || cg <= 0) return;
    float* dzp = smem;
    float* ws = smem + ((cout * hp * wp + 3) & ~3);
    for (int e = threadIdx.x; e < cout * hp * wp; e += blockDim.x) {
        const int co = e / (hp * wp), oy = (e / wp) % hp - (K - 1), ox = e % wp - (K - 1);
        dzp[e] = (oy >= 0 && oy < ho && ox >= 0 && ox < wo) ? routed<D>(dout, mask, ((long long)img * cout + co) * ph * pw, oy, ox, ph, pw) : 0.f;
    }
    for (int e = threadIdx.x; e < cout * K * K * CG; e += blockDim.x) {
        const int co = e / (K * K * CG), tap = (e / CG) % (K * K), c = e % CG;
        ws[e] = c < cg ? D::ld(w[((long long)co * cin + ci0 + c) * K * K + tap]) : 0.f;
    }
    __syncthreads();
    for (int pos = threadIdx.x; pos < h * wd; pos += blockDim.x) {
        const int iy = pos / wd, ix = pos % wd;
        float acc[CG];
#pragma unroll
        for (int c = 0; c < CG; ++c) acc[c] = 0.f;
        for (int co = 0; co < cout; ++co) {
            const float* dzc = dzp + co * hp * wp + (iy + K - 1) * wp + (ix + K - 1);
            const float4* wc = reinterpret_cast<const float4*>(ws + co * K * K * CG);
#pragma unroll
            for (int ky = 0; ky < K; ++ky)
#pragma unroll
                for (int kx = 0; kx < K; ++kx) {
                    const float d = dzc[-(ky * wp + kx)];
#pragma unroll
                    for (int j = 0; j < CG / 4; ++j) {
                        const float4 v = wc[(ky * K + kx) * (CG / 4) + j];
                        acc[4 * j] += d * v.x;
                        acc[4 * j + 1] += d * v.y;
                        acc[4 * j + 2] += d * v.z;
                        acc[4 * j + 3] += d * v.w;
                    }
                }
        }
#pragma unroll
        for (int c = 0; c < CG; ++c)
            if (c < cg) dx[((long long)img * cin + ci0 + c) * h * wd + pos] = D::st(acc[c]);
    }
}

// ---- weight and bias gradients: one block per (output channel, input channel) computing all
// K x K taps at once (each routed gradient is loaded once for the K*K products); the blocks of
// input channel 0 also produce the bias gradient.
template <class D, int K>
__device__ void conv_block_bwd_filter(const typename D::T* __restrict__ x, const typename D::T* __restrict__ dout, const u8* __restrict__ mask,
                                      typename D::T* __restrict__ dw, typename D::T* __restrict__ db, int n, int cin, int cout, int h, int wd) {
    const int ho = h - K + 1, wo = wd - K + 1, ph = ho / 2, pw = wo / 2;
    const int co = blockIdx.x / cin, ci = blockIdx.x % cin;
    if (co >= cout) return;
    float acc[K * K];
#pragma unroll
    for (int j = 0; j < K * K; ++j) acc[j] = 0.f;
    float accb = 0.f;
    const long long total = (long long)n * ph * pw;
    for (long long t = threadIdx.x; t < total; t += blockDim.x) {
        const int img = (int)(t / (ph * pw)), q = (int)(t % (ph * pw));
        const long long o = ((long long)img * cout + co) * ph * pw + q;
        const u8 m = mask[o];
        if (m < 4) {
            const float g = D::ld(dout[o]);
            const int oy = 2 * (q / pw) + (m >> 1), ox = 2 * (q % pw) + (m & 1);
            const typename D::T* xp = x + ((long long)img * cin + ci) * h * wd + (long long)oy * wd + ox;
#pragma unroll
            for (int ky = 0; ky < K; ++ky)
#pragma unroll
                for (int kx = 0; kx < K; ++kx) acc[ky * K + kx] += g * D::ld(xp[ky * wd + kx]);
            accb += g;
        }
    }
#pragma unroll
    for (int j = 0; j < K * K; ++j) {
        const float v = block_sum(acc[j]);
        if (threadIdx.x == 0) dw[((long long)co * cin + ci) * K * K + j] = D::st(v);
    }
    if (ci == 0) {
        const float v = block_sum(accb);
        if (threadIdx.x == 0) db[co] = D::st(v);
    }
}

// ---- Philox4x32-10: counter-based random numbers for dropout ----
__device__ __forceinline__ uint4 philox(uint4 c, uint2 key) {
    for (int r = 0; r < 10; ++r) {
        const u32 hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const u32 hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ key.x, lo1, hi0 ^ c.w ^ key.y, lo0);
        key.x += 0x9E3779B9u;
        key.y += 0xBB67AE85u;
    }
    return c;
}

template <class D>
__device__ void dropout_fwd(const typename D::T* __restrict__ x, typename D::T* __restrict__ out, u8* __restrict__ mask,
                            long long len, float p, u64 seed, const Cursor* __restrict__ cursor) {
    const u64 counter = (u64)cursor->counter_hi << 32 | cursor->counter_lo;
    const u32 threshold = (u32)fminf(p * 4294967296.f, 4294967295.f);
    const float keep = 1.f / (1.f - p);
    GRID_STRIDE(q, (len + 3) / 4) {
        const uint4 r = philox(make_uint4((u32)q, (u32)(q >> 32), (u32)counter, (u32)(counter >> 32)), make_uint2((u32)seed, (u32)(seed >> 32)));
        const u32 rs[4] = {r.x, r.y, r.z, r.w};
        for (int j = 0; j < 4; ++j) {
            const long long i = q * 4 + j;
            if (i >= len) break;
            const u8 m = rs[j] >= threshold;
            mask[i] = m;
            out[i] = D::st(m ? D::ld(x[i]) * keep : 0.f);
        }
    }
}

template <class D>
__device__ void dropout_bwd(const typename D::T* __restrict__ dout, const u8* __restrict__ mask, typename D::T* __restrict__ dx, long long len, float p) {
    const float keep = 1.f / (1.f - p);
    GRID_STRIDE(i, len) dx[i] = D::st(mask[i] ? D::ld(dout[i]) * keep : 0.f);
}

// ---- dense: y[n, fout] = x[n, fin] w[fout, fin]^T + b, one warp per output ----
template <class D>
__device__ void dense_fwd(const typename D::T* __restrict__ x, const typename D::T* __restrict__ w, const float* __restrict__ b,
                          typename D::T* __restrict__ y, int n, int fin, int fout) {
    const long long warps = (long long)gridDim.x * blockDim.x / 32;
    for (long long o = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; o < (long long)n * fout; o += warps) {
        const int row = (int)(o / fout), j = (int)(o % fout);
        float acc = 0.f;
#pragma unroll 8
        for (int i = threadIdx.x & 31; i < fin; i += 32) acc += D::ld(x[(long long)row * fin + i]) * D::ld(w[(long long)j * fin + i]);
        acc = warp_sum(acc);
        if ((threadIdx.x & 31) == 0) y[o] = D::st(acc + b[j]);
    }
}

// dw[j, i] = sum_n dy[n, j] x[n, i]; db[j] = sum_n dy[n, j], for fout <= DENSE_BWD_MAX_OUT. A block of
// 256 threads covers DENSE_BWD_FPB input features: lane l of a warp takes feature l % FPB and row
// group l / FPB, so the block's 8 warps split the batch rows into 8 * 32 / FPB groups (4 rows each
// at batch 128, few loads in flight per thread, many blocks); each thread keeps all fout sums,
// the lanes of a feature meet by shuffles and the warps in shared memory. Block 0 also writes db.
#define DENSE_BWD_MAX_OUT 16
#define DENSE_BWD_FPB 8
template <class D>
__device__ void dense_bwd_w(const typename D::T* __restrict__ x, const typename D::T* __restrict__ dy, typename D::T* __restrict__ dw,
                            typename D::T* __restrict__ db, int n, int fin, int fout) {
    constexpr int GROUPS = 32 / DENSE_BWD_FPB;  // row groups per warp
    __shared__ float red[8][DENSE_BWD_MAX_OUT][DENSE_BWD_FPB + 1];
    __shared__ float redb[8][DENSE_BWD_MAX_OUT];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;  // blockDim.x == 256
    const int f = lane % DENSE_BWD_FPB, i = blockIdx.x * DENSE_BWD_FPB + f;
    float acc[DENSE_BWD_MAX_OUT], accb[DENSE_BWD_MAX_OUT];
#pragma unroll
    for (int j = 0; j < DENSE_BWD_MAX_OUT; ++j) acc[j] = accb[j] = 0.f;
#pragma unroll 2
    for (int r = warp * GROUPS + lane / DENSE_BWD_FPB; r < n; r += 8 * GROUPS) {
        const float xv = i < fin ? D::ld(x[(long long)r * fin + i]) : 0.f;
#pragma unroll
        for (int j = 0; j < DENSE_BWD_MAX_OUT; ++j)
            if (j < fout) {
                const float g = D::ld(dy[(long long)r * fout + j]);
                acc[j] += g * xv;
                accb[j] += g;
            }
    }
#pragma unroll
    for (int j = 0; j < DENSE_BWD_MAX_OUT; ++j) {
#pragma unroll
        for (int off = DENSE_BWD_FPB; off < 32; off <<= 1) {
            acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
            accb[j] += __shfl_xor_sync(0xffffffffu, accb[j], off);
        }
        if (lane < DENSE_BWD_FPB) red[warp][j][lane] = acc[j];
        if (lane == 0) redb[warp][j] = accb[j];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < DENSE_BWD_FPB * fout; e += blockDim.x) {
        const int l = e % DENSE_BWD_FPB, j = e / DENSE_BWD_FPB, ii = blockIdx.x * DENSE_BWD_FPB + l;
        float v = 0.f;
#pragma unroll
        for (int w = 0; w < 8; ++w) v += red[w][j][l];
        if (ii < fin) dw[(long long)j * fin + ii] = D::st(v);
    }
    if (blockIdx.x == 0 && threadIdx.x < fout) {
        float v = 0.f;
#pragma unroll
        for (int w = 0; w < 8; ++w) v += redb[w][threadIdx.x];
        db[threadIdx.x] = D::st(v);
    }
}

// dx[n, i] = sum_j dy[n, j] w[j, i]
template <class D>
__device__ void dense_bwd_x(const typename D::T* __restrict__ dy, const typename D::T* __restrict__ w, typename D::T* __restrict__ dx, int n, int fin, int fout) {
    GRID_STRIDE(e, (long long)n * fin) {
        const int r = (int)(e / fin), i = (int)(e % fin);
        float acc = 0.f;
        for (int j = 0; j < fout; ++j) acc += D::ld(dy[(long long)r * fout + j]) * D::ld(w[(long long)j * fin + i]);
        dx[e] = D::st(acc);
    }
}

// Adds a batch of n rows to sums = [loss, correct, count, last batch mean loss]: every thread of
// the block calls it with its share of the loss and the hits (a block reduction); thread 0 writes.
__device__ void add_loss_sums(double* __restrict__ sums, float loss, float correct, int n) {
    loss = block_sum(loss);
    correct = block_sum(correct);
    if (threadIdx.x == 0) {
        sums[0] += loss;
        sums[1] += correct;
        sums[2] += n;
        sums[3] = loss / n;
    }
}

// ---- softmax cross-entropy over rows, one block; sums = [loss, correct, count, last batch mean loss] ----
template <class D>
__device__ void softmax_xent(const typename D::T* __restrict__ logits, const u8* __restrict__ labels, typename D::T* __restrict__ dlogits,
                             int n, int classes, const Scaler* __restrict__ sc, double* __restrict__ sums) {
    const float scale = sc->scale;
    float loss = 0.f, correct = 0.f;
    for (int r = threadIdx.x; r < n; r += blockDim.x) {
        const typename D::T* z = logits + (long long)r * classes;
        float m = -__int_as_float(0x7f800000);
        int arg = 0;
        for (int j = 0; j < classes; ++j) { const float v = D::ld(z[j]); if (v > m) { m = v; arg = j; } }
        float s = 0.f;
        for (int j = 0; j < classes; ++j) s += __expf(D::ld(z[j]) - m);
        const float lse = m + __logf(s);
        const int y = labels[r];
        loss += lse - D::ld(z[y]);
        correct += (arg == y);
        if (dlogits) {
            for (int j = 0; j < classes; ++j) {
                const float pj = __expf(D::ld(z[j]) - lse);
                dlogits[(long long)r * classes + j] = D::st((pj - (j == y ? 1.f : 0.f)) / n * scale);
            }
        }
    }
    add_loss_sums(sums, loss, correct, n);
}

// ---- the classifier head of a training step, one block of HEAD_THREADS per batch row: dropout on
// the row's features (when `drop` is given: the same Philox draws, mask and rounding as
// dropout_fwd), the dense layer (y = x w^T + b), softmax cross-entropy with its scaled gradient
// (as softmax_xent), and the gradient into the features (as dense_bwd_x, then dropout_bwd through
// the mask). Five launches of the unfused step in one; every value is rounded to the dtype where
// the unfused kernels store it. The loss sums: each block writes its row's (loss, correct) to
// rowstat, and the block that takes the last ticket (a counter, reset to 0 for the next launch)
// adds the rows in a fixed order (a block reduction), so the sums are deterministic. Grid: n
// blocks; fout <= DENSE_BWD_MAX_OUT (and <= 32: one warp takes the softmax).
#define HEAD_THREADS 512
template <class D>
__device__ void head_train(const typename D::T* __restrict__ x, const typename D::T* __restrict__ w, const float* __restrict__ b,
                           typename D::T* __restrict__ drop, u8* __restrict__ dmask, float p, u64 seed, const Cursor* __restrict__ cursor,
                           const u8* __restrict__ labels, typename D::T* __restrict__ logits, typename D::T* __restrict__ dlogits,
                           typename D::T* __restrict__ dx, float2* __restrict__ rowstat, u32* __restrict__ ticket, int n, int fin, int fout,
                           const Scaler* __restrict__ sc, double* __restrict__ sums) {
    __shared__ float red[HEAD_THREADS / 32][DENSE_BWD_MAX_OUT];
    __shared__ float dz[DENSE_BWD_MAX_OUT];
    __shared__ bool last;
    const int r = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (r >= n) return;
    const bool dropout = drop != nullptr;
    const u64 counter = (u64)cursor->counter_hi << 32 | cursor->counter_lo;
    const u32 threshold = (u32)fminf(p * 4294967296.f, 4294967295.f);
    const float keep = dropout ? 1.f / (1.f - p) : 1.f;
    const long long base = (long long)r * fin;
    float acc[DENSE_BWD_MAX_OUT];
#pragma unroll
    for (int j = 0; j < DENSE_BWD_MAX_OUT; ++j) acc[j] = 0.f;
    // Element gi's dropout draw is word gi % 4 of Philox call gi / 4, as dropout_fwd draws it. Where
    // the row is a whole number of such quads (fin % 4 == 0: the lab's 1600), a thread takes one
    // quad per pass and one Philox call serves its four features; else one feature per pass.
    auto feature = [&](long long gi, int i, u32 rv) {
        float v = D::ld(x[gi]);
        if (dropout) {
            const u8 m = rv >= threshold;
            const typename D::T o = D::st(m ? v * keep : 0.f);
            dmask[gi] = m;
            drop[gi] = o;
            v = D::ld(o);
        }
#pragma unroll
        for (int j = 0; j < DENSE_BWD_MAX_OUT; ++j)
            if (j < fout) acc[j] += v * D::ld(w[(long long)j * fin + i]);
    };
    const uint2 key = make_uint2((u32)seed, (u32)(seed >> 32));
    if ((fin & 3) == 0) {
        for (int i = 4 * threadIdx.x; i < fin; i += 4 * blockDim.x) {
            const long long gi = base + i, q = gi >> 2;
            const uint4 rq = dropout ? philox(make_uint4((u32)q, (u32)(q >> 32), (u32)counter, (u32)(counter >> 32)), key) : make_uint4(0, 0, 0, 0);
            feature(gi, i, rq.x);
            feature(gi + 1, i + 1, rq.y);
            feature(gi + 2, i + 2, rq.z);
            feature(gi + 3, i + 3, rq.w);
        }
    } else {
        for (int i = threadIdx.x; i < fin; i += blockDim.x) {
            const long long gi = base + i, q = gi >> 2;
            u32 rv = 0;
            if (dropout) {
                const uint4 rq = philox(make_uint4((u32)q, (u32)(q >> 32), (u32)counter, (u32)(counter >> 32)), key);
                const int jj = (int)(gi & 3);
                rv = jj == 0 ? rq.x : jj == 1 ? rq.y : jj == 2 ? rq.z : rq.w;
            }
            feature(gi, i, rv);
        }
    }
#pragma unroll
    for (int j = 0; j < DENSE_BWD_MAX_OUT; ++j) {
        const float v = warp_sum(acc[j]);
        if (lane == 0) red[warp][j] = v;
    }
    __syncthreads();
    // Warp 0: lane j < fout sums logit j over the warps; lane 0 then takes the softmax.
    if (warp == 0) {
        float z = -__int_as_float(0x7f800000);
        if (lane < fout) {
            float v = b[lane];
            for (int k = 0; k < warps; ++k) v += red[k][lane];
            const typename D::T zt = D::st(v);
            logits[(long long)r * fout + lane] = zt;
            z = D::ld(zt);
        }
        // The first maximum (lowest class on ties) and the log-sum-exp, by shuffles.
        float m = z;
        int arg = lane;
        for (int o = 16; o > 0; o >>= 1) {
            const float om = __shfl_xor_sync(0xffffffffu, m, o);
            const int oa = __shfl_xor_sync(0xffffffffu, arg, o);
            if (om > m || (om == m && oa < arg)) { m = om; arg = oa; }
        }
        const float lse = m + __logf(warp_sum(lane < fout ? __expf(z - m) : 0.f));
        const int y = labels[r];
        if (lane < fout) {
            const typename D::T g = D::st((__expf(z - lse) - (lane == y ? 1.f : 0.f)) / n * sc->scale);
            dlogits[(long long)r * fout + lane] = g;
            dz[lane] = D::ld(g);
        }
        const float zy = __shfl_sync(0xffffffffu, z, y & 31);
        if (lane == 0) {
            rowstat[r] = make_float2(lse - zy, (float)(arg == y));
            __threadfence();  // the row's pair visible before the ticket is taken
            last = atomicAdd(ticket, 1u) == (u32)n - 1u;
        }
    }
    __syncthreads();  // dz and `last` ready; this block's mask writes visible to all its threads
    for (int i = threadIdx.x; i < fin; i += blockDim.x) {
        float g = 0.f;
        for (int j = 0; j < fout; ++j) g += dz[j] * D::ld(w[(long long)j * fin + i]);
        dx[base + i] = dropout ? D::st(dmask[base + i] ? D::ld(D::st(g)) * keep : 0.f) : D::st(g);
    }
    // The last block to take a ticket adds every row's loss and hit.
    if (last) {  // the whole block: a block reduction, in a fixed order
        __threadfence();
        float loss = 0.f, correct = 0.f;
        for (int k = threadIdx.x; k < n; k += blockDim.x) {
            const float2 st = __ldcg(rowstat + k);
            loss += st.x;
            correct += st.y;
        }
        add_loss_sums(sums, loss, correct, n);
        if (threadIdx.x == 0) *ticket = 0u;
    }
}

template <class D>
__device__ void check_finite(const typename D::T* __restrict__ g, long long len, Scaler* __restrict__ sc) {
    bool bad = false;
    GRID_STRIDE(i, len) bad |= (__float_as_uint(D::ld(g[i])) & 0x7f800000u) == 0x7f800000u;
    if (__syncthreads_or(bad) && threadIdx.x == 0) sc->found_inf = 1u;
}

// ---- Adam (PyTorch semantics) on FP32 master weights from grad / scale; skipped on found_inf ----
template <class D>
__device__ void adam(float* __restrict__ p, const typename D::T* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                     typename D::T* __restrict__ copy, long long len, float lr, float b1, float b2, float eps, const Scaler* __restrict__ sc) {
    if (sc->found_inf) return;
    const float t = (float)(sc->step + 1);
    const float inv = 1.f / sc->scale;
    const float bc1 = 1.f - powf(b1, t), bc2_sqrt = sqrtf(1.f - powf(b2, t));
    const float step_size = lr / bc1;
    GRID_STRIDE(i, len) {
        const float gi = D::ld(g[i]) * inv;
        const float mi = b1 * m[i] + (1.f - b1) * gi;
        const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        const float pi = p[i] - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
        p[i] = pi;
        if (copy) copy[i] = D::st(pi);
    }
}

// ---- the same two over up to MULTI_TENSORS tensors in one launch: element i belongs to the first
// tensor t with i < end[t]. Tables are passed by value (layout mirrored by the Rust side). ----
#define MULTI_TENSORS 8
struct TensorTable { u64 p[MULTI_TENSORS], g[MULTI_TENSORS], m[MULTI_TENSORS], v[MULTI_TENSORS], copy[MULTI_TENSORS]; long long end[MULTI_TENSORS]; int count, pad; };

__device__ __forceinline__ int table_find(const TensorTable& tt, long long i, long long* local) {
    int t = 0;
    while (t + 1 < tt.count && i >= tt.end[t]) ++t;
    *local = i - (t ? tt.end[t - 1] : 0);
    return t;
}

template <class D>
__device__ void check_finite_multi(const TensorTable tt, Scaler* __restrict__ sc) {
    bool bad = false;
    GRID_STRIDE(i, tt.end[tt.count - 1]) {
        long long j;
        const int t = table_find(tt, i, &j);
        bad |= (__float_as_uint(D::ld(reinterpret_cast<const typename D::T*>(tt.g[t])[j])) & 0x7f800000u) == 0x7f800000u;
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0) sc->found_inf = 1u;
}

template <class D>
__device__ void adam_multi(const TensorTable tt, float lr, float b1, float b2, float eps, const Scaler* __restrict__ sc) {
    if (sc->found_inf) return;
    const float t = (float)(sc->step + 1);
    const float inv = 1.f / sc->scale;
    const float bc1 = 1.f - powf(b1, t), bc2_sqrt = sqrtf(1.f - powf(b2, t));
    const float step_size = lr / bc1;
    GRID_STRIDE(i, tt.end[tt.count - 1]) {
        long long j;
        const int k = table_find(tt, i, &j);
        float* p = reinterpret_cast<float*>(tt.p[k]);
        float* m = reinterpret_cast<float*>(tt.m[k]);
        float* v = reinterpret_cast<float*>(tt.v[k]);
        const float gi = D::ld(reinterpret_cast<const typename D::T*>(tt.g[k])[j]) * inv;
        const float mi = b1 * m[j] + (1.f - b1) * gi;
        const float vi = b2 * v[j] + (1.f - b2) * gi * gi;
        m[j] = mi;
        v[j] = vi;
        const float pi = p[j] - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
        p[j] = pi;
        if (tt.copy[k]) reinterpret_cast<typename D::T*>(tt.copy[k])[j] = D::st(pi);
    }
}

template <class D>
__device__ void cast_from_f32(const float* __restrict__ src, typename D::T* __restrict__ dst, long long len) {
    GRID_STRIDE(i, len) dst[i] = D::st(src[i]);
}

__device__ __forceinline__ void scaler_next(Scaler* sc, u32 growth_interval) {
    if (sc->found_inf) {
        sc->skipped += 1;
        if (sc->enabled) { sc->scale = fmaxf(sc->scale * 0.5f, 5.9604644775390625e-8f); sc->growth_tracker = 0; }  // floor 2^-24 (SCALER_MIN)
    } else {
        sc->step += 1;
        if (sc->enabled && ++sc->growth_tracker == growth_interval) { sc->scale *= 2.f; sc->growth_tracker = 0; }
    }
    sc->found_inf = 0;
}

extern "C" __global__ void scaler_update(Scaler* sc, u32 growth_interval) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    scaler_next(sc, growth_interval);
}

// The step's last launch: scaler_update then cursor_advance, in one thread.
extern "C" __global__ void step_finish(Scaler* sc, u32 growth_interval, Cursor* c) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    scaler_next(sc, growth_interval);
    cursor_next(c);
}

#define T_(D) typename D::T
#define ENTRY_POINTS(sfx, D)                                                                                                        \
    extern "C" __global__ void gather_##sfx(const u8* a, const u8* b, const u32* c, int ol, const Cursor* cu, int d, int e, int f, float g, float h, T_(D)* i, u8* j) { gather<D>(a, b, c, ol, cu, d, e, f, g, h, i, j); } \
    extern "C" __global__ void conv_block_fwd_##sfx(const T_(D)* x, const T_(D)* w, const float* b, T_(D)* o, u8* m, int n, int ci, int co, int h, int wd, int k, int cpb, int act) { \
        if (k == 3) conv_block_fwd<D, 3, 8>(x, w, b, o, m, n, ci, co, h, wd, cpb, act);                           \
        else if (k == 5) conv_block_fwd<D, 5, 8>(x, w, b, o, m, n, ci, co, h, wd, cpb, act);                      \
        else if (k == 7) conv_block_fwd<D, 7, 8>(x, w, b, o, m, n, ci, co, h, wd, cpb, act);                      \
    }                                                                                                            \
    extern "C" __global__ void act_route_##sfx(const T_(D)* x, const T_(D)* w, const float* b, const T_(D)* d, const u8* m, T_(D)* da, int n, int ci, int co, int h, int wd, int k, int act) { \
        act_route<D>(x, w, b, d, m, da, n, ci, co, h, wd, k, act);                                                \
    }                                                                                                            \
    extern "C" __global__ void conv_block_bwd_data_##sfx(const T_(D)* d, const u8* m, const T_(D)* w, T_(D)* dx, int n, int ci, int co, int h, int wd, int k) { \
        if (k == 3) conv_block_bwd_data<D, 3, 8>(d, m, w, dx, n, ci, co, h, wd);                             \
        else if (k == 5) conv_block_bwd_data<D, 5, 8>(d, m, w, dx, n, ci, co, h, wd);                        \
        else if (k == 7) conv_block_bwd_data<D, 7, 8>(d, m, w, dx, n, ci, co, h, wd);                        \
    }                                                                                                          \
    extern "C" __global__ void conv_block_bwd_filter_##sfx(const T_(D)* x, const T_(D)* d, const u8* m, T_(D)* dw, T_(D)* db, int n, int ci, int co, int h, int wd, int k) { \
        if (k == 3) conv_block_bwd_filter<D, 3>(x, d, m, dw, db, n, ci, co, h, wd);                        \
        else if (k == 5) conv_block_bwd_filter<D, 5>(x, d, m, dw, db, n, ci, co, h, wd);                   \
        else if (k == 7) conv_block_bwd_filter<D, 7>(x, d, m, dw, db, n, ci, co, h, wd);                   \
    }                                                                                                        \
    extern "C" __global__ void dropout_fwd_##sfx(const T_(D)* x, T_(D)* o, u8* m, long long len, float p, u64 s, const Cursor* c) { dropout_fwd<D>(x, o, m, len, p, s, c); } \
    extern "C" __global__ void dropout_bwd_##sfx(const T_(D)* d, const u8* m, T_(D)* dx, long long len, float p) { dropout_bwd<D>(d, m, dx, len, p); } \
    extern "C" __global__ void dense_fwd_##sfx(const T_(D)* x, const T_(D)* w, const float* b, T_(D)* y, int n, int fi, int fo) { dense_fwd<D>(x, w, b, y, n, fi, fo); } \
    extern "C" __global__ void dense_bwd_w_##sfx(const T_(D)* x, const T_(D)* dy, T_(D)* dw, T_(D)* db, int n, int fi, int fo) { dense_bwd_w<D>(x, dy, dw, db, n, fi, fo); } \
    extern "C" __global__ void dense_bwd_x_##sfx(const T_(D)* dy, const T_(D)* w, T_(D)* dx, int n, int fi, int fo) { dense_bwd_x<D>(dy, w, dx, n, fi, fo); } \
    extern "C" __global__ void __launch_bounds__(HEAD_THREADS) head_train_##sfx(const T_(D)* x, const T_(D)* w, const float* b, T_(D)* dr, u8* dm, float p, u64 s, const Cursor* c, const u8* y, T_(D)* z, T_(D)* dz, T_(D)* dx, float2* rs, u32* t, int n, int fi, int fo, const Scaler* sc, double* su) { \
        head_train<D>(x, w, b, dr, dm, p, s, c, y, z, dz, dx, rs, t, n, fi, fo, sc, su);                            \
    }                                                                                                            \
    extern "C" __global__ void softmax_xent_##sfx(const T_(D)* z, const u8* y, T_(D)* dz, int n, int c, const Scaler* sc, double* s) { softmax_xent<D>(z, y, dz, n, c, sc, s); } \
    extern "C" __global__ void check_finite_##sfx(const T_(D)* g, long long len, Scaler* sc) { check_finite<D>(g, len, sc); } \
    extern "C" __global__ void adam_##sfx(float* p, const T_(D)* g, float* m, float* v, T_(D)* cp, long long len, float lr, float b1, float b2, float eps, const Scaler* sc) { adam<D>(p, g, m, v, cp, len, lr, b1, b2, eps, sc); } \
    extern "C" __global__ void check_finite_multi_##sfx(const TensorTable tt, Scaler* sc) { check_finite_multi<D>(tt, sc); } \
    extern "C" __global__ void adam_multi_##sfx(const TensorTable tt, float lr, float b1, float b2, float eps, const Scaler* sc) { adam_multi<D>(tt, lr, b1, b2, eps, sc); } \
    extern "C" __global__ void cast_from_f32_##sfx(const float* s, T_(D)* d, long long len) { cast_from_f32<D>(s, d, len); }

ENTRY_POINTS(f32, F32)
ENTRY_POINTS(f16, F16)
ENTRY_POINTS(bf16, BF16)
