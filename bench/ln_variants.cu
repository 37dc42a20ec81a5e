// LayerNorm(+GELU) variants at 8192x4096, f32 and f16, each against a device-to-device copy of the
// same bytes (cudaMemcpyAsync) in the same run: block size, vectors per thread, two-pass statistics
// or one reduction of (sum, sum of squares about a shift) or of per-thread (count, mean, M2) merged
// with Chan's formula, __launch_bounds__ (register budget), the row held as raw 16-byte vectors,
// and the GELU's erf (erff, a sigmoid-form fit, a branch-free erfc). A standalone study (nvcc on
// the GPU machine, no Rust), from the repository root:
//   nvcc -O3 -arch=sm_90 bench/ln_variants.cu -o ln && ./ln
// It includes the shipped kernels (kernels/cuda/norm.cu, with prelude.cuh and activation_ops.cuh,
// as the kernels crate prepends them) and times them with the kernel lab's earlier geometry (128
// threads, min(rows, 32 per SM) blocks): rows "S"; rows "S'" with one block per row, the launch
// compute/src/cuda/lab.rs makes since this study. Rows "S0" are the kernel
// shipped before issue 27 (copied below), A–G the first study's variants (results of 2026-11-24:
// docs/results/ln-variants-h100-2026-11-24.txt), N* the new ones. It also checks the shipped
// kernels on the lab's awkward shapes against f64 with the lab's metric and bounds, and the fast
// GELU on all 65536 FP16 inputs against f64. Second round (issue 27, block barrier off the
// critical path): W* the shipped warp path (a row per warp or per 2/4 warps, shuffle-only
// statistics) under several launch bounds and grids, E* the entry body with it (any cols), M the
// FP16 kernel of 2026-11-27 morning, P* a block a row with the next row prefetched across the
// barrier. "lmem" is cudaFuncAttributes::localSizeBytes: non-zero means spills.
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <random>
#include "../kernels/cuda/prelude.cuh"
#include "../kernels/cuda/activation_ops.cuh"
namespace shipped {
#include "../kernels/cuda/norm.cu"
}
// gelu_erf_fast, ex2_approx and rcp_approx come from activation_ops.cuh (global, as in the shipped families).

// ---- the kernel shipped before issue 27 (kernels/cuda/norm.cu at that time), verbatim but renamed
namespace before {
// Loads element i of a row as float.
template <class D>
__device__ __forceinline__ float at_before(const typename D::T* row, int i) { return D::ld(row[i]); }

// Rows that fit in registers (cols / VEC ≤ MAXV · blockDim): one DRAM read, statistics from
// registers (two-pass: mean, then the sum of squared deviations), one DRAM write.
// Other rows: pass 1 sums (x − x₀) and its square, pass 2 re-reads the row (an L1/L2 hit).
template <class D, int VEC, int MAXV, bool GELU>
__device__ void layernorm_row_before(const typename D::T* __restrict__ x, typename D::T* __restrict__ y, const float* __restrict__ gamma,
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
            const float shift = at_before<D>(xr, 0);
            float s = 0.f, ss = 0.f;
            for (int i = threadIdx.x; i < cols; i += blockDim.x) { const float d = at_before<D>(xr, i) - shift; s += d; ss += d * d; }
            s = block_sum(s);
            ss = block_sum(ss);
            const float mean_d = s / cols;
            const float var = fmaxf(ss / cols - mean_d * mean_d, 0.f);
            const float mean = shift + mean_d, rstd = rsqrtf(var + eps);
            for (int i = threadIdx.x; i < cols; i += blockDim.x) {
                float o = (at_before<D>(xr, i) - mean) * rstd * gamma[i] + beta[i];
                if (GELU) o = gelu_erf_op(o);
                yr[i] = D::st(o);
            }
        }
        __syncthreads();  // block_sum's shared scratch is reused by the next row
    }
}
}  // namespace before
template<class D,int VEC,int MAXV,bool GELU> __global__ void ln_before(const typename D::T* x, typename D::T* y, const float* g, const float* b, int r, int c, float eps){ before::layernorm_row_before<D,VEC,MAXV,GELU>(x,y,g,b,r,c,eps); }

__device__ __forceinline__ float gelu(float v){ return 0.5f*v*(1.f+erff(v*0.70710678118654752f)); }
// GELU through a branch-free erfc (Numerical Recipes' erfcc, Chebyshev fit, fractional error
// < 1.2e-7 everywhere): Φ(x) = 1 − erfc(z)/2 for x ≥ 0, erfc(z)/2 below, z = |x|/√2. One rcp,
// one ex2 and 11 FMA, no branch: the FP32 candidate (relative error a few 1e-7).
__device__ __forceinline__ float gelu_nr(float x){
  const float z=fabsf(x)*0.70710678118654752f, t=rcp_approx(fmaf(0.5f,z,1.f));
  float p=0.17087277f; p=fmaf(p,t,-0.82215223f); p=fmaf(p,t,1.48851587f); p=fmaf(p,t,-1.13520398f); p=fmaf(p,t,0.27886807f);
  p=fmaf(p,t,-0.18628806f); p=fmaf(p,t,0.09678418f); p=fmaf(p,t,0.37409196f); p=fmaf(p,t,1.00002368f); p=fmaf(p,t,-1.26551223f);
  p=fmaf(-z,z,p);
  const float h=0.5f*t*ex2_approx(p*1.4426950408889634f);
  return x*(x>=0.f?1.f-h:h);
}
template<int GM> __device__ __forceinline__ float act(float o){ return GM==1?gelu(o):GM==2?gelu_erf_fast(o):GM==3?gelu_nr(o):o; }

__device__ __forceinline__ float2 warp_sum2(float2 v){ for(int o=16;o;o>>=1){ v.x+=__shfl_xor_sync(0xffffffffu,v.x,o); v.y+=__shfl_xor_sync(0xffffffffu,v.y,o);} return v; }
__device__ float2 block_sum2(float2 v){ __shared__ float2 part2[32]; v=warp_sum2(v); int lane=threadIdx.x&31,w=threadIdx.x>>5; __syncthreads(); if(!lane) part2[w]=v; __syncthreads(); int ws=(blockDim.x+31)>>5; float2 t=lane<ws?part2[lane]:make_float2(0.f,0.f); return warp_sum2(t); }

// ---- the first study's kernel (variants A–G)
// V: vectors per thread; TWO: two-pass (mean then squared deviations) vs one reduction of (sum, sum of squares about a shift); GBREG: gamma/beta kept in registers over the row loop
template<class D,int VEC,int V,bool GELU,bool TWO,bool GBREG>
__global__ void ln(const typename D::T* __restrict__ x, typename D::T* __restrict__ y, const float* __restrict__ g, const float* __restrict__ b, int rows, int cols, float eps){
  float ga[V][VEC], be[V][VEC];
  if (GBREG) {
#pragma unroll
    for(int k=0;k<V;++k){ int vi=threadIdx.x+k*blockDim.x;
#pragma unroll
      for(int q=0;q<VEC/4;++q){ float4 g4=reinterpret_cast<const float4*>(g)[vi*(VEC/4)+q], b4=reinterpret_cast<const float4*>(b)[vi*(VEC/4)+q];
        ga[k][4*q]=g4.x;ga[k][4*q+1]=g4.y;ga[k][4*q+2]=g4.z;ga[k][4*q+3]=g4.w; be[k][4*q]=b4.x;be[k][4*q+1]=b4.y;be[k][4*q+2]=b4.z;be[k][4*q+3]=b4.w; } }
  }
  for(int r=blockIdx.x;r<rows;r+=gridDim.x){
    const typename D::T* xr=x+(long long)r*cols; typename D::T* yr=y+(long long)r*cols;
    float v[V][VEC]; float s=0.f, ss=0.f;
#pragma unroll
    for(int k=0;k<V;++k){ int vi=threadIdx.x+k*blockDim.x; uint4 raw=reinterpret_cast<const uint4*>(xr)[vi]; const typename D::T* e=reinterpret_cast<const typename D::T*>(&raw);
#pragma unroll
      for(int j=0;j<VEC;++j){ v[k][j]=D::ld(e[j]); } }
    float mean, rstd;
    if (TWO) {
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j) s+=v[k][j];
      mean=block_sum(s)/cols;
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j){ float d=v[k][j]-mean; ss+=d*d; }
      rstd=rsqrtf(block_sum(ss)/cols+eps);
    } else {
      // shift: the row's first element (every thread loads it: an L1 broadcast)
      const float sh=D::ld(xr[0]);
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j){ float d=v[k][j]-sh; s+=d; ss+=d*d; }
      float2 t=block_sum2(make_float2(s,ss)); float md=t.x/cols; mean=sh+md; rstd=rsqrtf(fmaxf(t.y/cols-md*md,0.f)+eps);
    }
#pragma unroll
    for(int k=0;k<V;++k){ int vi=threadIdx.x+k*blockDim.x; uint4 raw; typename D::T* e=reinterpret_cast<typename D::T*>(&raw);
      float gl[VEC], bl[VEC];
      if (GBREG) {
#pragma unroll
        for(int j=0;j<VEC;++j){gl[j]=ga[k][j]; bl[j]=be[k][j];}
      } else {
#pragma unroll
        for(int q=0;q<VEC/4;++q){ float4 g4=reinterpret_cast<const float4*>(g)[vi*(VEC/4)+q], b4=reinterpret_cast<const float4*>(b)[vi*(VEC/4)+q];
          gl[4*q]=g4.x;gl[4*q+1]=g4.y;gl[4*q+2]=g4.z;gl[4*q+3]=g4.w; bl[4*q]=b4.x;bl[4*q+1]=b4.y;bl[4*q+2]=b4.z;bl[4*q+3]=b4.w; }
      }
#pragma unroll
      for(int j=0;j<VEC;++j){ float o=(v[k][j]-mean)*rstd*gl[j]+bl[j]; if(GELU) o=gelu(o); e[j]=D::st(o); }
      reinterpret_cast<uint4*>(yr)[vi]=raw; }
    __syncthreads();
  }
}

// ---- the new variants (N*): row width exactly T·V·VEC (the host checks), the row held as its raw
// 16-byte vectors (4 registers each, converted again where used), __launch_bounds__(T, MINB).
// ST: 0 two-pass (two block_sum), 1 one reduction of (sum, sum of squares) about the row's first
// element, 2 one reduction of per-thread (count, mean, M2) merged with Chan's formula (as shipped),
// partials double-buffered by row parity (one barrier a row). GM: 0 none, 1 erff, 2 gelu_erf_fast
// (the sigmoid fit), 3 gelu_nr (branch-free erfc).
__device__ __forceinline__ void merge_eq(float& mean, float& m2, float mb, float m2b, float n){ // two halves of n values each
  const float d=mb-mean; mean=fmaf(d,0.5f,mean); m2=m2+m2b+d*d*(0.5f*n); }
template<class D,int T,int V,int GM,int ST,int MINB>
__global__ void __launch_bounds__(T,MINB) ln2(const typename D::T* __restrict__ x, typename D::T* __restrict__ y, const float* __restrict__ g, const float* __restrict__ b, int rows, int cols, float eps){
  constexpr int VEC=16/sizeof(typename D::T);
  __shared__ float2 part[2][T/32];
  const int lane=threadIdx.x&31, warp=threadIdx.x>>5; int parity=0;
  for(int r=blockIdx.x;r<rows;r+=gridDim.x){
    const typename D::T* xr=x+(long long)r*cols; typename D::T* yr=y+(long long)r*cols;
    uint4 raw[V];
#pragma unroll
    for(int k=0;k<V;++k) raw[k]=reinterpret_cast<const uint4*>(xr)[threadIdx.x+k*T];
    auto el=[&](int k,int j){ return D::ld(reinterpret_cast<const typename D::T*>(&raw[k])[j]); };
    float mean, rstd;
    if (ST==0) {
      float s=0.f;
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j) s+=el(k,j);
      mean=block_sum(s)/cols; float ss=0.f;
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j){ float d=el(k,j)-mean; ss=fmaf(d,d,ss); }
      rstd=rsqrtf(block_sum(ss)/cols+eps);
    } else if (ST==1) {
      const float sh=D::ld(xr[0]); float s=0.f, ss=0.f;
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j){ float d=el(k,j)-sh; s+=d; ss=fmaf(d,d,ss); }
      float2 t=block_sum2(make_float2(s,ss)); float md=t.x/cols; mean=sh+md; rstd=rsqrtf(fmaxf(t.y/cols-md*md,0.f)+eps);
    } else {
      float s=0.f;
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j) s+=el(k,j);
      float n=(float)(V*VEC), m=s*(1.f/(V*VEC)), m2=0.f;
#pragma unroll
      for(int k=0;k<V;++k)
#pragma unroll
        for(int j=0;j<VEC;++j){ float d=el(k,j)-m; m2=fmaf(d,d,m2); }
#pragma unroll
      for(int o=1;o<32;o<<=1){ float mb=__shfl_xor_sync(0xffffffffu,m,o), qb=__shfl_xor_sync(0xffffffffu,m2,o);
        if(lane&o){ float a=mb,q=qb; merge_eq(a,q,m,m2,n); m=a; m2=q; } else merge_eq(m,m2,mb,qb,n); n*=2.f; }
      if(!lane) part[parity][warp]=make_float2(m,m2);
      __syncthreads();
      float2 t=part[parity][0];
#pragma unroll
      for(int w=1;w<T/32;++w){ float2 u=part[parity][w]; float nt=n*w; const float d=u.x-t.x, f=1.f/(w+1); t.x=fmaf(d,f,t.x); t.y=t.y+u.y+d*d*nt*f; }
      parity^=1; mean=t.x; rstd=rsqrtf(t.y/cols+eps);
    }
#pragma unroll
    for(int k=0;k<V;++k){ int vi=threadIdx.x+k*T; uint4 o4; typename D::T* e=reinterpret_cast<typename D::T*>(&o4);
#pragma unroll
      for(int q=0;q<VEC/4;++q){ float4 g4=reinterpret_cast<const float4*>(g)[vi*(VEC/4)+q], b4=reinterpret_cast<const float4*>(b)[vi*(VEC/4)+q];
        const float gl[4]={g4.x,g4.y,g4.z,g4.w}, bl[4]={b4.x,b4.y,b4.z,b4.w};
#pragma unroll
        for(int j=0;j<4;++j) e[4*q+j]=D::st(act<GM>(fmaf((el(k,4*q+j)-mean)*rstd,gl[j],bl[j])));
      }
      reinterpret_cast<uint4*>(yr)[vi]=o4; }
  }
}

// ---- issue 27, second round: the block barrier off the critical path.
// W: the shipped warp path (shipped::rows_by_warps: a row per group of WPR warps, WV vectors a
// lane, warp-shuffle two-pass statistics, for WPR > 1 one exchange behind a named barrier of the
// group's warps only; GELU as shipped: the fast form for FP16, erff for FP32), its unguarded
// instance (cols = 4096) under other launch bounds.
template<class D,int WPR,int WV,bool GELU,int MINB>
__global__ void __launch_bounds__(128,MINB) lnw(const typename D::T* __restrict__ x, typename D::T* __restrict__ y, const float* __restrict__ g, const float* __restrict__ b, int rows, int cols, float eps){
  constexpr int VEC=16/sizeof(typename D::T);
  shipped::rows_by_warps<D,VEC,WPR,WV,GELU,true>(x,y,g,b,rows,cols,eps,cols/VEC,true);
}
// E/M: the shipped entry's body (shipped::layernorm_row: any cols; WPR 0 is the block-a-row
// kernel of 2026-11-27 morning, as the FP16 entries were before this round) under given bounds.
template<class D,int MAXV,bool GELU,int WPR,int WV,int MINB>
__global__ void __launch_bounds__(128,MINB) lne(const typename D::T* x, typename D::T* y, const float* g, const float* b, int rows, int cols, float eps){  // no __restrict__: as the entries
  constexpr int VEC=16/sizeof(typename D::T);
  shipped::layernorm_row<D,VEC,MAXV,GELU,WPR,WV>(x,y,g,b,rows,cols,eps);
}
// P: one block (T threads, V vectors a thread, Chan statistics as N*) a row, software-pipelined:
// the block's next row is loaded into a second register set before this row's reduction, so its
// loads are in flight across the barrier. The kernel uses G = min(gridDim.x, ceil(rows/RPB))
// blocks (the others exit at once) and rows blockIdx.x + i·G: with the lab's grid = rows, RPB 2
// gives each working block two rows. Row width exactly T·V·VEC (4096).
template<class D,int T,int V,int GM,int MINB,int RPB>
__global__ void __launch_bounds__(T,MINB) lnp(const typename D::T* __restrict__ x, typename D::T* __restrict__ y, const float* __restrict__ g, const float* __restrict__ b, int rows, int cols, float eps){
  constexpr int VEC=16/sizeof(typename D::T);
  __shared__ float2 part[2][T/32];
  const int lane=threadIdx.x&31, warp=threadIdx.x>>5; int parity=0;
  const int G=min((int)gridDim.x,(rows+RPB-1)/RPB);
  if((int)blockIdx.x>=G) return;
  uint4 cur[V], nxt[V];
  int r=blockIdx.x;
#pragma unroll
  for(int k=0;k<V;++k){ cur[k]=reinterpret_cast<const uint4*>(x+(long long)r*cols)[threadIdx.x+k*T]; nxt[k]=make_uint4(0u,0u,0u,0u); }
  for(;r<rows;r+=G){
    const int rn=r+G;
    if(rn<rows){
#pragma unroll
      for(int k=0;k<V;++k) nxt[k]=reinterpret_cast<const uint4*>(x+(long long)rn*cols)[threadIdx.x+k*T];
    }
    auto el=[&](int k,int j){ return D::ld(reinterpret_cast<const typename D::T*>(&cur[k])[j]); };
    float s=0.f;
#pragma unroll
    for(int k=0;k<V;++k)
#pragma unroll
      for(int j=0;j<VEC;++j) s+=el(k,j);
    float n=(float)(V*VEC), m=s*(1.f/(V*VEC)), m2=0.f;
#pragma unroll
    for(int k=0;k<V;++k)
#pragma unroll
      for(int j=0;j<VEC;++j){ float d=el(k,j)-m; m2=fmaf(d,d,m2); }
#pragma unroll
    for(int o=1;o<32;o<<=1){ float mb=__shfl_xor_sync(0xffffffffu,m,o), qb=__shfl_xor_sync(0xffffffffu,m2,o);
      if(lane&o){ float a=mb,q=qb; merge_eq(a,q,m,m2,n); m=a; m2=q; } else merge_eq(m,m2,mb,qb,n); n*=2.f; }
    if(!lane) part[parity][warp]=make_float2(m,m2);
    __syncthreads();
    float2 t=part[parity][0];
#pragma unroll
    for(int w=1;w<T/32;++w){ float2 u=part[parity][w]; float nt=n*w; const float d=u.x-t.x, f=1.f/(w+1); t.x=fmaf(d,f,t.x); t.y=t.y+u.y+d*d*nt*f; }
    parity^=1; const float mean=t.x, rstd=rsqrtf(t.y/cols+eps);
    typename D::T* yr=y+(long long)r*cols;
#pragma unroll
    for(int k=0;k<V;++k){ int vi=threadIdx.x+k*T; uint4 o4; typename D::T* e=reinterpret_cast<typename D::T*>(&o4);
#pragma unroll
      for(int q=0;q<VEC/4;++q){ float4 g4=reinterpret_cast<const float4*>(g)[vi*(VEC/4)+q], b4=reinterpret_cast<const float4*>(b)[vi*(VEC/4)+q];
        const float gl[4]={g4.x,g4.y,g4.z,g4.w}, bl[4]={b4.x,b4.y,b4.z,b4.w};
#pragma unroll
        for(int j=0;j<4;++j) e[4*q+j]=D::st(act<GM>(fmaf((el(k,4*q+j)-mean)*rstd,gl[j],bl[j])));
      }
      reinterpret_cast<uint4*>(yr)[vi]=o4; }
#pragma unroll
    for(int k=0;k<V;++k) cur[k]=nxt[k];
  }
}

// All 65536 FP16 inputs through erff's GELU and the fast form (f32 results, before rounding).
__global__ void gelu_all_f16(float* ref32, float* fast32){ int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<65536){ float v=h2f((u16)i); ref32[i]=gelu(v); fast32[i]=gelu_erf_fast(v);} }
// A dense sweep of FP32 inputs over [-10, 10] through erff's GELU and gelu_nr.
__global__ void gelu_sweep_f32(float* a, float* b, int n){ int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<n){ float v=-10.f+20.f*(float)i/(float)n; a[i]=gelu(v); b[i]=gelu_nr(v);} }

static double gelu64(double v){ return 0.5*v*(1.0+erf(v/sqrt(2.0))); }
static float h2f_host(u16 h){ return __half2float(__ushort_as_half(h)); }
static u16 f2h_host(float f){ return __half_as_ushort(__float2half_rn(f)); }

// The lab's check (lab.rs CHECK_SHAPES: {1,4096},{3,1001},{7,33},{64,4096},{2,7}) and widths that
// take the other paths of the shipped kernels: {5,2048} {9,1000} {6,40} guarded warp rows (FP16),
// {3,4104} {2,8192} beyond the registers. Max |err|/max(|y|,1) against f64 over all of them (the
// lab's metric); GRID: 0 the lab's earlier min(rows, 32/SM), 1 rows (lab.rs now), 2 ceil(rows/4).
template<class T>
static double check_kernel(void (*k)(const T*, T*, const float*, const float*, int, int, float), bool gl, int gridmode, int sms){
  const bool f16=sizeof(T)==2;
  const int shapes[10][2]={{1,4096},{3,1001},{7,33},{64,4096},{2,7},{5,2048},{9,1000},{6,40},{3,4104},{2,8192}};
  std::mt19937 rng(7); std::uniform_real_distribution<float> U(-4.f,4.f), G(0.5f,1.5f), B(-0.5f,0.5f);
  double worst=0;
  for(auto& sh:shapes){ int r=sh[0], c=sh[1]; size_t m=(size_t)r*c; std::vector<float> x(m), g(c), bb(c); for(auto& v:x) v=U(rng)+3.f; for(auto& v:g) v=G(rng); for(auto& v:bb) v=B(rng);
    if(f16) for(auto& v:x) v=h2f_host(f2h_host(v));
    void *dx,*dy; float *dg,*db; size_t es=f16?2:4; cudaMalloc(&dx,m*es); cudaMalloc(&dy,m*es); cudaMalloc(&dg,c*4); cudaMalloc(&db,c*4);
    std::vector<u16> xh(m); for(size_t i=0;i<m;++i) xh[i]=f2h_host(x[i]);
    cudaMemcpy(dx,f16?(void*)xh.data():(void*)x.data(),m*es,cudaMemcpyHostToDevice); cudaMemset(dy,0xff,m*es); cudaMemcpy(dg,g.data(),c*4,cudaMemcpyHostToDevice); cudaMemcpy(db,bb.data(),c*4,cudaMemcpyHostToDevice);
    const int grid=gridmode==0?std::min(r,sms*32):gridmode==1?r:(r+3)/4;
    k<<<grid,128>>>((const T*)dx,(T*)dy,dg,db,r,c,1e-5f);
    const cudaError_t err=cudaDeviceSynchronize();
    std::vector<float> y(m); if(f16){ std::vector<u16> yh(m); cudaMemcpy(yh.data(),dy,m*2,cudaMemcpyDeviceToHost); for(size_t i=0;i<m;++i) y[i]=h2f_host(yh[i]); } else cudaMemcpy(y.data(),dy,m*4,cudaMemcpyDeviceToHost);
    if(err!=cudaSuccess){ printf("  launch error %s at %dx%d\n", cudaGetErrorString(err), r, c); worst=INFINITY; }
    for(int i=0;i<r;++i){ double mu=0,var=0; for(int j=0;j<c;++j) mu+=x[(size_t)i*c+j]; mu/=c; for(int j=0;j<c;++j){ double d=x[(size_t)i*c+j]-mu; var+=d*d;} var/=c; double rs=1/sqrt(var+(double)1e-5f);
      for(int j=0;j<c;++j){ double o=(x[(size_t)i*c+j]-mu)*rs*g[j]+bb[j]; if(gl) o=gelu64(o); double a=y[(size_t)i*c+j]; double d=std::isfinite(a)?fabs(a-o):INFINITY; worst=std::max(worst,d/std::max(fabs(o),1.0)); } }
    cudaFree(dx); cudaFree(dy); cudaFree(dg); cudaFree(db); }
  return worst;
}

int main(){
  const int rows=8192, cols=4096; size_t n=(size_t)rows*cols;
  int sms; cudaDeviceGetAttribute(&sms,cudaDevAttrMultiProcessorCount,0);
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop,0);
  printf("# bench/ln_variants.cu on %s, %d SMs; median of 100 timed launches after 5, inputs alternating between two buffers (each larger than L2)\n", prop.name, sms);
  // ---- accuracy of the GELU forms
  {
    float *a,*b; cudaMalloc(&a,65536*4); cudaMalloc(&b,65536*4); gelu_all_f16<<<256,256>>>(a,b); std::vector<float> ra(65536), rb(65536);
    cudaMemcpy(ra.data(),a,65536*4,cudaMemcpyDeviceToHost); cudaMemcpy(rb.data(),b,65536*4,cudaMemcpyDeviceToHost);
    double ea=0,eb=0,xa=0,xb=0,ma=0,mb=0; int diff=0, fin=0;
    for(int i=0;i<65536;++i){ float v=h2f_host((u16)i); if(!std::isfinite(v)) continue; ++fin; double r=gelu64(v);
      double da=fabs(ra[i]-r), db=fabs(rb[i]-r); if(da>ea){ea=da;xa=v;} if(db>eb){eb=db;xb=v;}
      double sc=std::max(fabs(r),1.0); ma=std::max(ma,fabs(h2f_host(f2h_host(ra[i]))-r)/sc); mb=std::max(mb,fabs(h2f_host(f2h_host(rb[i]))-r)/sc);
      if(f2h_host(ra[i])!=f2h_host(rb[i])) ++diff; }
    printf("gelu over all %d finite f16 inputs vs f64: erff max|err| %.2e (x=%g), gelu_erf_fast max|err| %.2e (x=%g); after rounding to f16, max |err|/max(|y|,1): erff %.2e, fast %.2e (lab f16 bound 2e-3); f16 outputs differing from erff's: %d\n", fin, ea, xa, eb, xb, ma, mb, diff);
    cudaFree(a); cudaFree(b);
    const int m=1<<22; cudaMalloc(&a,m*4); cudaMalloc(&b,m*4); gelu_sweep_f32<<<m/256,256>>>(a,b,m); std::vector<float> sa(m), sb(m);
    cudaMemcpy(sa.data(),a,m*4,cudaMemcpyDeviceToHost); cudaMemcpy(sb.data(),b,m*4,cudaMemcpyDeviceToHost);
    double la=0,lb=0,qa=0,qb=0; for(int i=0;i<m;++i){ float v=-10.f+20.f*(float)i/(float)m; double r=gelu64(v), sc=std::max(fabs(r),1.0);
      la=std::max(la,fabs(sa[i]-r)/sc); lb=std::max(lb,fabs(sb[i]-r)/sc); if(fabs(r)>1e-30){ qa=std::max(qa,fabs(sa[i]-r)/fabs(r)); qb=std::max(qb,fabs(sb[i]-r)/fabs(r)); } }
    printf("gelu over %d f32 inputs in [-10,10] vs f64, |err|/max(|y|,1) (lab f32 bound 2e-5): erff %.2e, gelu_nr %.2e; relative: erff %.2e, gelu_nr %.2e\n", m, la, lb, qa, qb);
    cudaFree(a); cudaFree(b);
  }
  // ---- the shipped kernels (and the entry-like E variants) on the lab's awkward shapes and more, lab's metric and bounds
  {
    bool all=true;
    auto line=[&](const char* what, bool f16, double worst){ double bound=f16?2e-3:2e-5; all=all&&worst<=bound;
      printf("check %-58s %s on 10 shapes (lab's 5 + 5): max |err|/max(|y|,1) %.2e (bound %.0e) %s\n", what, f16?"f16":"f32", worst, bound, worst<=bound?"ok":"FAILED"); };
    const char* gname[3]={"grid 32/SM","grid rows (lab.rs)","grid rows/4"};
    char buf[128];
    for(int gm=0;gm<3;++gm){
      snprintf(buf,sizeof buf,"shipped layernorm      %s",gname[gm]); line(buf,false,check_kernel<float>(shipped::layernorm_f32,false,gm,sms));
      snprintf(buf,sizeof buf,"shipped layernorm      %s",gname[gm]); line(buf,true ,check_kernel<u16>(shipped::layernorm_f16,false,gm,sms));
      snprintf(buf,sizeof buf,"shipped layernorm_gelu %s",gname[gm]); line(buf,false,check_kernel<float>(shipped::layernorm_gelu_f32,true,gm,sms));
      snprintf(buf,sizeof buf,"shipped layernorm_gelu %s",gname[gm]); line(buf,true ,check_kernel<u16>(shipped::layernorm_gelu_f16,true,gm,sms));
    }
    line("E f32 layernorm      2 warps/row, lb(128,4), grid rows", false, check_kernel<float>(lne<F32,8,false,2,16,4>,false,1,sms));
    line("E f32 layernorm_gelu 2 warps/row, lb(128,4), grid rows", false, check_kernel<float>(lne<F32,8,true,2,16,4>,true,1,sms));
    line("E f32 layernorm_gelu 1 warp/row, lb(128,2), grid rows", false, check_kernel<float>(lne<F32,8,true,1,32,2>,true,1,sms));
    line("E f16 layernorm_gelu 2 warps/row, lb(128,8), grid rows", true, check_kernel<u16>(lne<F16,4,true,2,8,8>,true,1,sms));
    line("E f16 layernorm      1 warp/row, lb(128,4), grid rows", true, check_kernel<u16>(lne<F16,4,false,1,16,4>,false,1,sms));
    line("E f16 layernorm_gelu 1 warp/row, lb(128,4), grid rows", true, check_kernel<u16>(lne<F16,4,true,1,16,4>,true,1,sms));
    line("E f16 layernorm_gelu 1 warp/row, lb(128,4), grid 32/SM", true, check_kernel<u16>(lne<F16,4,true,1,16,4>,true,0,sms));
    line("M f16 layernorm_gelu morning kernel, grid rows", true, check_kernel<u16>(lne<F16,4,true,0,1,8>,true,1,sms));
    printf("check shipped: %s\n", all?"all within the lab's bounds":"SOME FAILED");
  }
  std::vector<float> h(n); unsigned s=1; for(auto&v:h){ s=s*1664525u+1013904223u; v=((s>>8)/16777216.f)*6.f-3.f; }
  std::vector<u16> hh(n); for(size_t i=0;i<n;++i) hh[i]=f2h_host(h[i]);
  void *x32[2],*x16[2],*y32,*y16; float *g,*b;
  for(int i=0;i<2;++i){ cudaMalloc(&x32[i],n*4); cudaMemcpy(x32[i],h.data(),n*4,cudaMemcpyHostToDevice); cudaMalloc(&x16[i],n*2); cudaMemcpy(x16[i],hh.data(),n*2,cudaMemcpyHostToDevice);} cudaMalloc(&y32,n*4); cudaMalloc(&y16,n*2);
  std::vector<float> ones(cols,1.f), zeros(cols,0.f); cudaMalloc(&g,cols*4); cudaMalloc(&b,cols*4); cudaMemcpy(g,ones.data(),cols*4,cudaMemcpyHostToDevice); cudaMemcpy(b,zeros.data(),cols*4,cudaMemcpyHostToDevice);
  cudaEvent_t e0,e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto timeit=[&](auto f){ for(int i=0;i<5;++i) f(i); cudaDeviceSynchronize(); std::vector<float> t; for(int i=0;i<100;++i){ cudaEventRecord(e0); f(i); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms,e0,e1); t.push_back(ms);} std::sort(t.begin(),t.end()); return t[50]; };
  float c32=timeit([&](int i){ cudaMemcpyAsync(y32,x32[i%2],n*4,cudaMemcpyDeviceToDevice); });
  float c16=timeit([&](int i){ cudaMemcpyAsync(y16,x16[i%2],n*2,cudaMemcpyDeviceToDevice); });
  printf("copy f32 %.4f ms %.0f GB/s; copy f16 %.4f ms %.0f GB/s\n", c32, 2.0*n*4/c32/1e6, c16, 2.0*n*2/c16/1e6);
  // error: the first 64 rows against f64 from the stored inputs, max |err|/max(|y|,1) (the lab's metric)
  struct Best { float pct=0; const char* name=""; }; Best best[2][2]; // [gelu][f16]
  auto report=[&](bool f16, bool gel, const char* name, float ms, int regs, int lmem, cudaError_t err){
    const int rc=64; std::vector<float> out((size_t)rc*cols);
    if(f16){ std::vector<u16> o((size_t)rc*cols); cudaMemcpy(o.data(),y16,o.size()*2,cudaMemcpyDeviceToHost); for(size_t j=0;j<o.size();++j) out[j]=h2f_host(o[j]); } else cudaMemcpy(out.data(),y32,out.size()*4,cudaMemcpyDeviceToHost);
    double me=0; for(int r=0;r<rc;++r){ const float* xr=&h[(size_t)r*cols]; std::vector<double> xv(cols); for(int j=0;j<cols;++j) xv[j]=f16?h2f_host(hh[(size_t)r*cols+j]):xr[j];
      double m=0,vv=0; for(int j=0;j<cols;++j) m+=xv[j]; m/=cols; for(int j=0;j<cols;++j) vv+=(xv[j]-m)*(xv[j]-m); vv/=cols;
      for(int j=0;j<cols;++j){ double o=(xv[j]-m)/sqrt(vv+(double)1e-5f); if(gel) o=gelu64(o); me=std::max(me,fabs(o-out[(size_t)r*cols+j])/std::max(fabs(o),1.0)); } }
    double gbs=2.0*n*(f16?2:4)/ms/1e6; float pct=100.f*(f16?c16:c32)/ms;
    printf("%-4s %-6s %-58s %8.4f ms %6.0f GB/s %6.1f%% of copy  regs %3d  lmem %3d B  maxerr 64 rows %.2e %s\n", f16?"f16":"f32", gel?"lngelu":"ln", name, ms, gbs, pct, regs, lmem, me, err?cudaGetErrorString(err):"");
    Best& bb=best[gel][f16]; if(!err && pct>bb.pct){ bb.pct=pct; bb.name=name; } };
  // lmem: local memory a thread (cudaFuncAttributes::localSizeBytes), non-zero when registers spill
  auto attr_of=[](const void* f){ cudaFuncAttributes a; cudaFuncGetAttributes(&a,f); return a; };
#define TIMEK(KER,D,GRID,THREADS,GEL,NAME) { auto k=KER; int grid=(GRID); bool f16=sizeof(typename D::T)==2; void** xs=f16?x16:x32; void* yy=f16?y16:y32;     float ms=timeit([&](int i){ k<<<grid,THREADS>>>((const typename D::T*)xs[i%2],(typename D::T*)yy,g,b,rows,cols,1e-5f); }); cudaError_t err=cudaGetLastError();     cudaFuncAttributes fa=attr_of((const void*)k); report(f16,GEL,NAME,ms,fa.numRegs,(int)fa.localSizeBytes,err); }
#define RUN(D,VEC,V,GELU,TWO,GBREG,THREADS,GRID,NAME) TIMEK((ln<D,VEC,V,GELU,TWO,GBREG>),D,GRID,THREADS,GELU,NAME)
#define RUN2(D,TH,V,GM,ST,MINB,GRID,NAME) { static_assert(TH*V*(16/sizeof(typename D::T))==4096,"row width"); TIMEK((ln2<D,TH,V,GM,ST,MINB>),D,GRID,TH,GM!=0,NAME) }
#define RUNW(D,WPR,WV,GEL,MINB,GRID,NAME) { static_assert(32*WPR*WV*(16/sizeof(typename D::T))==4096,"row width"); TIMEK((lnw<D,WPR,WV,GEL,MINB>),D,GRID,128,GEL,NAME) }
#define RUNP(D,V,GM,MINB,RPB,GRID,NAME) { static_assert(128*V*(16/sizeof(typename D::T))==4096,"row width"); TIMEK((lnp<D,128,V,GM,MINB,RPB>),D,GRID,128,GM!=0,NAME) }
  const int lab_grid=std::min(rows,sms*32);
  // ---------------- LayerNorm
  TIMEK(shipped::layernorm_f32,F32,lab_grid,128,false,"S  shipped now: lab geometry (128 thr, grid 32/SM)")
  TIMEK(shipped::layernorm_f32,F32,rows,128,false,"S' shipped now, grid rows")
  TIMEK((ln_before<F32,4,8,false>),F32,lab_grid,128,false,"S0 shipped before (lab geometry)")
  RUN(F32,4,8,false,true,false,128,lab_grid,"A 128 thr, 8 vec, two-pass")
  RUN(F32,4,4,false,false,false,256,rows,"G 256 thr, 4 vec, one reduction")
  RUN2(F32,128,8,0,2,8,rows,"N1 128x8, Chan, lb(128,8), grid rows")
  RUN2(F32,128,8,0,2,8,lab_grid,"N2 128x8, Chan, lb(128,8), grid 32/SM")
  RUN2(F32,128,8,0,1,8,rows,"N3 128x8, shifted, lb(128,8), grid rows")
  RUN2(F32,128,8,0,0,8,rows,"N4 128x8, two-pass, lb(128,8), grid rows")
  RUN2(F32,256,4,0,2,4,rows,"N5 256x4, Chan, lb(256,4), grid rows")
  RUN2(F32,128,8,0,2,4,rows,"N6 128x8, Chan, lb(128,4), grid rows")
  RUN2(F32,128,8,0,2,12,rows,"N7 128x8, Chan, lb(128,12), grid rows")
  RUNW(F32,1,32,false,2,rows,"W1 warp/row, 32 vec/lane, lb(128,2), grid rows")
  RUNW(F32,1,32,false,3,rows,"W2 warp/row, 32 vec/lane, lb(128,3), grid rows")
  RUNW(F32,1,32,false,2,rows/4,"W3 warp/row, 32 vec/lane, lb(128,2), grid rows/4")
  RUNW(F32,2,16,false,4,rows,"W4 2 warps/row, 16 vec/lane, lb(128,4), grid rows")
  RUNW(F32,2,16,false,5,rows,"W5 2 warps/row, 16 vec/lane, lb(128,5), grid rows")
  RUNW(F32,2,16,false,4,rows/2,"W6 2 warps/row, 16 vec/lane, lb(128,4), grid rows/2")
  RUNW(F32,4,8,false,4,rows,"W7 4 warps/row (named barrier), 8 vec, lb(128,4), grid rows")
  TIMEK((lne<F32,8,false,2,16,4>),F32,rows,128,false,"E1 entry body, 2 warps/row, lb(128,4), grid rows (lab)")
  TIMEK(shipped::layernorm_f16,F16,lab_grid,128,false,"S  shipped now: lab geometry (128 thr, grid 32/SM)")
  TIMEK(shipped::layernorm_f16,F16,rows,128,false,"S' shipped now, grid rows")
  TIMEK(shipped::layernorm_f16,F16,rows,128,false,"S'' shipped now, grid rows as lab.rs (3/4 blocks exit)")
  TIMEK(shipped::layernorm_f16,F16,rows/4,128,false,"S4 shipped now, grid rows/4 (no idle blocks)")
  TIMEK((ln_before<F16,8,4,false>),F16,lab_grid,128,false,"S0 shipped before (lab geometry)")
  RUN(F16,8,4,false,true,false,128,lab_grid,"A 128 thr, 4 vec, two-pass")
  RUN(F16,8,4,false,false,false,128,rows,"G 128 thr, 4 vec, one reduction")
  RUN2(F16,128,4,0,2,8,rows,"N1 128x4, Chan, lb(128,8), grid rows")
  RUN2(F16,128,4,0,2,8,lab_grid,"N2 128x4, Chan, lb(128,8), grid 32/SM")
  RUN2(F16,128,4,0,1,8,rows,"N3 128x4, shifted, lb(128,8), grid rows")
  RUN2(F16,128,4,0,0,8,rows,"N4 128x4, two-pass, lb(128,8), grid rows")
  RUN2(F16,256,2,0,2,4,rows,"N5 256x2, Chan, lb(256,4), grid rows")
  RUN2(F16,64,8,0,2,16,rows,"N6 64x8, Chan, lb(64,16), grid rows")
  RUN2(F16,128,4,0,2,12,rows,"N7 128x4, Chan, lb(128,12), grid rows")
  RUN2(F16,128,4,0,2,16,rows,"N8 128x4, Chan, lb(128,16), grid rows")
  TIMEK((lne<F16,4,false,0,1,8>),F16,rows,128,false,"M  morning kernel (block/row, lb(128,8)), grid rows")
  TIMEK((lne<F16,4,false,1,16,4>),F16,rows,128,false,"E1 entry body, LN_F16_WARP_ROWS 1: warp/row, lb(128,4), grid rows (lab)")
  TIMEK((lne<F16,4,false,1,16,4>),F16,rows/4,128,false,"E2 entry body, LN_F16_WARP_ROWS 1, grid rows/4 (no idle blocks)")
  RUNW(F16,1,16,false,4,rows,"W1 warp/row, 16 vec/lane, lb(128,4), grid rows")
  RUNW(F16,1,16,false,5,rows,"W2 warp/row, 16 vec/lane, lb(128,5), grid rows")
  RUNW(F16,1,16,false,6,rows,"W3 warp/row, 16 vec/lane, lb(128,6), grid rows")
  RUNW(F16,1,16,false,8,rows,"W4 warp/row, 16 vec/lane, lb(128,8), grid rows")
  RUNW(F16,1,16,false,4,rows/4,"W5 warp/row, 16 vec/lane, lb(128,4), grid rows/4")
  RUNW(F16,1,16,false,5,rows/4,"W6 warp/row, 16 vec/lane, lb(128,5), grid rows/4")
  RUNW(F16,1,16,false,4,sms*4,"W7 warp/row, lb(128,4), grid 4/SM (persistent)")
  RUNW(F16,2,8,false,8,rows,"W8 2 warps/row, 8 vec/lane, lb(128,8), grid rows")
  RUNW(F16,2,8,false,6,rows,"W9 2 warps/row, 8 vec/lane, lb(128,6), grid rows")
  RUNW(F16,2,8,false,8,rows/2,"WA 2 warps/row, 8 vec/lane, lb(128,8), grid rows/2")
  RUNP(F16,4,0,6,1,rows/2,"P1 pipelined 128x4, lb(128,6), grid rows/2")
  RUNP(F16,4,0,6,2,rows,"P2 pipelined 128x4, lb(128,6), grid rows (lab), 2 rows/blk")
  RUNP(F16,4,0,4,1,rows/2,"P3 pipelined 128x4, lb(128,4), grid rows/2")
  RUNP(F16,4,0,8,1,rows/2,"P4 pipelined 128x4, lb(128,8), grid rows/2")
  RUNP(F16,4,0,6,1,sms*6,"P5 pipelined 128x4, lb(128,6), grid 6/SM (persistent)")
  RUNP(F16,4,0,6,4,rows,"P6 pipelined 128x4, lb(128,6), grid rows (lab), 4 rows/blk")
  // ---------------- LayerNorm + GELU
  TIMEK(shipped::layernorm_gelu_f32,F32,lab_grid,128,true,"S  shipped now: lab geometry (erff)")
  TIMEK(shipped::layernorm_gelu_f32,F32,rows,128,true,"S' shipped now, grid rows")
  TIMEK((ln_before<F32,4,8,true>),F32,lab_grid,128,true,"S0 shipped before (lab geometry)")
  RUN(F32,4,8,true,true,false,128,lab_grid,"A 128 thr, 8 vec, two-pass")
  RUN2(F32,128,8,1,2,8,rows,"N1 128x8, Chan, lb(128,8), grid rows, erff")
  RUN2(F32,128,8,1,2,8,lab_grid,"N2 128x8, Chan, lb(128,8), grid 32/SM, erff")
  RUN2(F32,128,8,3,2,8,rows,"N3 128x8, Chan, lb(128,8), grid rows, gelu_nr")
  RUN2(F32,128,8,3,2,8,lab_grid,"N4 128x8, Chan, lb(128,8), grid 32/SM, gelu_nr")
  RUN2(F32,256,4,1,2,4,rows,"N5 256x4, Chan, lb(256,4), grid rows, erff")
  RUN2(F32,128,8,1,2,4,rows,"N6 128x8, Chan, lb(128,4), grid rows, erff")
  RUN2(F32,128,8,2,2,8,rows,"N9 128x8, Chan, lb(128,8), fast (f16-grade: info)")
  RUNW(F32,1,32,true,2,rows,"W1 warp/row, 32 vec/lane, lb(128,2), grid rows")
  RUNW(F32,1,32,true,3,rows,"W2 warp/row, 32 vec/lane, lb(128,3), grid rows")
  RUNW(F32,1,32,true,2,rows/4,"W3 warp/row, 32 vec/lane, lb(128,2), grid rows/4")
  RUNW(F32,2,16,true,4,rows,"W4 2 warps/row, 16 vec/lane, lb(128,4), grid rows")
  RUNW(F32,2,16,true,5,rows,"W5 2 warps/row, 16 vec/lane, lb(128,5), grid rows")
  RUNW(F32,2,16,true,4,rows/2,"W6 2 warps/row, 16 vec/lane, lb(128,4), grid rows/2")
  RUNW(F32,4,8,true,4,rows,"W7 4 warps/row (named barrier), 8 vec, lb(128,4), grid rows")
  TIMEK((lne<F32,8,true,2,16,4>),F32,rows,128,true,"E1 entry body, 2 warps/row, lb(128,4), grid rows (lab)")
  TIMEK(shipped::layernorm_gelu_f16,F16,lab_grid,128,true,"S  shipped now: lab geometry (fast gelu)")
  TIMEK(shipped::layernorm_gelu_f16,F16,rows,128,true,"S' shipped now, grid rows")
  TIMEK(shipped::layernorm_gelu_f16,F16,rows,128,true,"S'' shipped now, grid rows as lab.rs (3/4 blocks exit)")
  TIMEK(shipped::layernorm_gelu_f16,F16,rows/4,128,true,"S4 shipped now, grid rows/4 (no idle blocks)")
  TIMEK((ln_before<F16,8,4,true>),F16,lab_grid,128,true,"S0 shipped before (lab geometry)")
  RUN(F16,8,4,true,true,false,128,lab_grid,"A 128 thr, 4 vec, two-pass")
  RUN2(F16,128,4,1,2,8,rows,"N1 128x4, Chan, lb(128,8), grid rows, erff")
  RUN2(F16,128,4,2,2,8,rows,"N2 128x4, Chan, lb(128,8), grid rows, fast")
  RUN2(F16,128,4,2,2,8,lab_grid,"N3 128x4, Chan, lb(128,8), grid 32/SM, fast")
  RUN2(F16,128,4,3,2,8,rows,"N4 128x4, Chan, lb(128,8), grid rows, gelu_nr")
  RUN2(F16,128,4,2,1,8,rows,"N5 128x4, shifted, lb(128,8), grid rows, fast")
  RUN2(F16,256,2,2,2,4,rows,"N6 256x2, Chan, lb(256,4), grid rows, fast")
  RUN2(F16,64,8,2,2,16,rows,"N7 64x8, Chan, lb(64,16), grid rows, fast")
  RUN2(F16,128,4,2,2,12,rows,"N8 128x4, Chan, lb(128,12), grid rows, fast")
  TIMEK((lne<F16,4,true,0,1,8>),F16,rows,128,true,"M  morning kernel (block/row, lb(128,8)), grid rows")
  TIMEK((lne<F16,4,true,1,16,4>),F16,rows,128,true,"E1 entry body, LN_F16_WARP_ROWS 1: warp/row, lb(128,4), grid rows (lab)")
  TIMEK((lne<F16,4,true,1,16,4>),F16,rows/4,128,true,"E2 entry body, LN_F16_WARP_ROWS 1, grid rows/4 (no idle blocks)")
  RUNW(F16,1,16,true,4,rows,"W1 warp/row, 16 vec/lane, lb(128,4), grid rows")
  RUNW(F16,1,16,true,5,rows,"W2 warp/row, 16 vec/lane, lb(128,5), grid rows")
  RUNW(F16,1,16,true,6,rows,"W3 warp/row, 16 vec/lane, lb(128,6), grid rows")
  RUNW(F16,1,16,true,8,rows,"W4 warp/row, 16 vec/lane, lb(128,8), grid rows")
  RUNW(F16,1,16,true,4,rows/4,"W5 warp/row, 16 vec/lane, lb(128,4), grid rows/4")
  RUNW(F16,1,16,true,5,rows/4,"W6 warp/row, 16 vec/lane, lb(128,5), grid rows/4")
  RUNW(F16,1,16,true,4,sms*4,"W7 warp/row, lb(128,4), grid 4/SM (persistent)")
  RUNW(F16,2,8,true,8,rows,"W8 2 warps/row, 8 vec/lane, lb(128,8), grid rows")
  RUNW(F16,2,8,true,6,rows,"W9 2 warps/row, 8 vec/lane, lb(128,6), grid rows")
  RUNW(F16,2,8,true,8,rows/2,"WA 2 warps/row, 8 vec/lane, lb(128,8), grid rows/2")
  RUNP(F16,4,2,6,1,rows/2,"P1 pipelined 128x4, lb(128,6), grid rows/2")
  RUNP(F16,4,2,6,2,rows,"P2 pipelined 128x4, lb(128,6), grid rows (lab), 2 rows/blk")
  RUNP(F16,4,2,4,1,rows/2,"P3 pipelined 128x4, lb(128,4), grid rows/2")
  RUNP(F16,4,2,8,1,rows/2,"P4 pipelined 128x4, lb(128,8), grid rows/2")
  RUNP(F16,4,2,6,1,sms*6,"P5 pipelined 128x4, lb(128,6), grid 6/SM (persistent)")
  RUNP(F16,4,2,6,4,rows,"P6 pipelined 128x4, lb(128,6), grid rows (lab), 4 rows/blk")
  for(int gl=0;gl<2;++gl) for(int f=0;f<2;++f) printf("best %s %-6s: %s (%.1f%% of copy)\n", f?"f16":"f32", gl?"lngelu":"ln", best[gl][f].name, best[gl][f].pct);
  return 0;
}
