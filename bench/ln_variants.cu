// LayerNorm(+GELU) variants at 8192x4096, f32 and f16, each against a device-to-device copy of the
// same bytes (cudaMemcpyAsync) in the same run: block size, vectors per thread, two-pass statistics
// or one reduction of (sum, sum of squares about a shift), gamma/beta in registers. A standalone
// study (nvcc on the GPU machine, no Rust): `nvcc -O3 -arch=sm_90 bench/ln_variants.cu -o ln && ./ln`;
// its output of 2026-11-24 on an H100 is docs/results/ln-variants-h100-2026-11-24.txt. Variant A is
// the shipped kernel's configuration (kernels/cuda/norm.cu).
#include <cuda_fp16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cmath>
typedef unsigned short u16; typedef unsigned int u32;
__device__ __forceinline__ float gelu(float v){ return 0.5f*v*(1.f+erff(v*0.70710678118654752f)); }
struct F32 { typedef float T; static __device__ float ld(float v){return v;} static __device__ float st(float v){return v;} };
struct F16 { typedef u16 T; static __device__ float ld(u16 v){return __half2float(__ushort_as_half(v));} static __device__ u16 st(float v){return __half_as_ushort(__float2half_rn(v));} };
__device__ __forceinline__ float warp_sum(float v){ for(int o=16;o;o>>=1) v+=__shfl_xor_sync(0xffffffffu,v,o); return v; }
__device__ __forceinline__ float2 warp_sum2(float2 v){ for(int o=16;o;o>>=1){ v.x+=__shfl_xor_sync(0xffffffffu,v.x,o); v.y+=__shfl_xor_sync(0xffffffffu,v.y,o);} return v; }
__device__ float block_sum(float v){ __shared__ float part[32]; v=warp_sum(v); int lane=threadIdx.x&31,w=threadIdx.x>>5; __syncthreads(); if(!lane) part[w]=v; __syncthreads(); int ws=(blockDim.x+31)>>5; float t=lane<ws?part[lane]:0.f; return warp_sum(t); }
__device__ float2 block_sum2(float2 v){ __shared__ float2 part2[32]; v=warp_sum2(v); int lane=threadIdx.x&31,w=threadIdx.x>>5; __syncthreads(); if(!lane) part2[w]=v; __syncthreads(); int ws=(blockDim.x+31)>>5; float2 t=lane<ws?part2[lane]:make_float2(0.f,0.f); return warp_sum2(t); }
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
    if (!TWO) __syncthreads(); else __syncthreads();
  }
}
int main(){
  const int rows=8192, cols=4096; size_t n=(size_t)rows*cols;
  int sms; cudaDeviceGetAttribute(&sms,cudaDevAttrMultiProcessorCount,0);
  std::vector<float> h(n); unsigned s=1; for(auto&v:h){ s=s*1664525u+1013904223u; v=((s>>8)/16777216.f)*6.f-3.f; }
  std::vector<u16> hh(n); for(size_t i=0;i<n;++i) hh[i]=__half_as_ushort(__float2half(h[i]));
  void *x32[2],*x16[2],*y32,*y16; float *g,*b;
  for(int i=0;i<2;++i){ cudaMalloc(&x32[i],n*4); cudaMemcpy(x32[i],h.data(),n*4,cudaMemcpyHostToDevice); cudaMalloc(&x16[i],n*2); cudaMemcpy(x16[i],hh.data(),n*2,cudaMemcpyHostToDevice);} cudaMalloc(&y32,n*4); cudaMalloc(&y16,n*2);
  std::vector<float> ones(cols,1.f), zeros(cols,0.f); cudaMalloc(&g,cols*4); cudaMalloc(&b,cols*4); cudaMemcpy(g,ones.data(),cols*4,cudaMemcpyHostToDevice); cudaMemcpy(b,zeros.data(),cols*4,cudaMemcpyHostToDevice);
  cudaEvent_t e0,e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto timeit=[&](auto f){ for(int i=0;i<5;++i) f(i); cudaDeviceSynchronize(); std::vector<float> t; for(int i=0;i<100;++i){ cudaEventRecord(e0); f(i); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms,e0,e1); t.push_back(ms);} std::sort(t.begin(),t.end()); return t[50]; };
  float c32=timeit([&](int i){ cudaMemcpyAsync(y32,x32[i%2],n*4,cudaMemcpyDeviceToDevice); });
  float c16=timeit([&](int i){ cudaMemcpyAsync(y16,x16[i%2],n*2,cudaMemcpyDeviceToDevice); });
  printf("copy f32 %.4f ms %.0f GB/s; copy f16 %.4f ms %.0f GB/s\n", c32, 2.0*n*4/c32/1e6, c16, 2.0*n*2/c16/1e6);
  // reference check values: row 0 mean/var from host for sanity
#define RUN(D,VEC,V,GELU,TWO,GBREG,THREADS,GRID,NAME) { \
    auto k=ln<D,VEC,V,GELU,TWO,GBREG>; int grid=(GRID); \
    bool f16=sizeof(typename D::T)==2; void** xs=f16?x16:x32; void* yy=f16?y16:y32; float c=f16?c16:c32; \
    float ms=timeit([&](int i){ k<<<grid,THREADS>>>((const typename D::T*)xs[i%2],(typename D::T*)yy,g,b,rows,cols,1e-5f); }); \
    cudaError_t err=cudaGetLastError(); \
    double gbs=2.0*n*(f16?2:4)/ms/1e6; \
    std::vector<float> out(cols); if(f16){ std::vector<u16> o(cols); cudaMemcpy(o.data(),y16,cols*2,cudaMemcpyDeviceToHost); for(int j=0;j<cols;++j) out[j]=__half2float(__ushort_as_half(o[j])); } else cudaMemcpy(out.data(),y32,cols*4,cudaMemcpyDeviceToHost); \
    double m=0,vv=0; for(int j=0;j<cols;++j) m+=h[j]; m/=cols; for(int j=0;j<cols;++j) vv+=(h[j]-m)*(h[j]-m); vv/=cols; double me=0; \
    for(int j=0;j<cols;++j){ double r=(h[j]-m)/sqrt(vv+1e-5); if(GELU) r=0.5*r*(1+erf(r/sqrt(2.0))); me=std::max(me,fabs(r-out[j])); } \
    printf("%-4s %-5s %-44s %8.4f ms %6.0f GB/s %6.1f%% of copy  maxerr row0 %.2e %s\n", f16?"f16":"f32", GELU?"lngelu":"ln", NAME, ms, gbs, 100.0*c/ms, me, err?cudaGetErrorString(err):""); }
  for (int gelu_i=0; gelu_i<2; ++gelu_i) {
  if(gelu_i==0){
  RUN(F32,4,8,false,true,false,128,std::min(rows,sms*32),"A current: 128 thr, 8 vec, two-pass")
  RUN(F32,4,1,false,true,false,1024,rows,"B 1024 thr, 1 vec, grid rows")
  RUN(F32,4,2,false,true,false,512,rows,"C 512 thr, 2 vec, grid rows")
  RUN(F32,4,2,false,false,false,512,rows,"D 512 thr, 2 vec, one reduction")
  RUN(F32,4,1,false,false,false,1024,rows,"E 1024 thr, 1 vec, one reduction")
  RUN(F32,4,2,false,false,true,512,sms*4,"F 512 thr, 2 vec, one red, gb regs, grid 4/SM")
  RUN(F32,4,4,false,false,false,256,rows,"G 256 thr, 4 vec, one reduction")
  RUN(F16,8,4,false,true,false,128,std::min(rows,sms*32),"A current: 128 thr, 4 vec, two-pass")
  RUN(F16,8,1,false,true,false,512,rows,"B 512 thr, 1 vec, grid rows")
  RUN(F16,8,2,false,true,false,256,rows,"C 256 thr, 2 vec, grid rows")
  RUN(F16,8,2,false,false,false,256,rows,"D 256 thr, 2 vec, one reduction")
  RUN(F16,8,1,false,false,false,512,rows,"E 512 thr, 1 vec, one reduction")
  RUN(F16,8,1,false,false,true,512,sms*4,"F 512 thr, 1 vec, one red, gb regs, grid 4/SM")
  RUN(F16,8,2,false,false,true,256,sms*8,"F2 256 thr, 2 vec, one red, gb regs, grid 8/SM")
  RUN(F16,8,4,false,false,false,128,rows,"G 128 thr, 4 vec, one reduction")
  } else {
  RUN(F32,4,8,true,true,false,128,std::min(rows,sms*32),"A current: 128 thr, 8 vec, two-pass")
  RUN(F32,4,1,true,true,false,1024,rows,"B 1024 thr, 1 vec, grid rows")
  RUN(F32,4,2,true,false,false,512,rows,"D 512 thr, 2 vec, one reduction")
  RUN(F32,4,1,true,false,false,1024,rows,"E 1024 thr, 1 vec, one reduction")
  RUN(F32,4,2,true,false,true,512,sms*4,"F 512 thr, 2 vec, one red, gb regs, grid 4/SM")
  RUN(F16,8,4,true,true,false,128,std::min(rows,sms*32),"A current: 128 thr, 4 vec, two-pass")
  RUN(F16,8,1,true,true,false,512,rows,"B 512 thr, 1 vec, grid rows")
  RUN(F16,8,2,true,false,false,256,rows,"D 256 thr, 2 vec, one reduction")
  RUN(F16,8,1,true,false,false,512,rows,"E 512 thr, 1 vec, one reduction")
  RUN(F16,8,1,true,false,true,512,sms*4,"F 512 thr, 1 vec, one red, gb regs, grid 4/SM")
  RUN(F16,8,2,true,false,true,256,sms*8,"F2 256 thr, 2 vec, one red, gb regs, grid 8/SM")
  }
  }
  return 0;
}
