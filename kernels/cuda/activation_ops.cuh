// The activation functions, shared by the elementwise kernels (activations.cu), the fused
// LayerNorm+GELU (norm.cu) and the CNN inference path (cnn_infer.cu), so that every kernel that
// says "GELU" computes the same thing. FP32 math; callers load and store their own dtype.

__device__ __forceinline__ float relu_op(float v) { return v > 0.f ? v : 0.f; }
// x·Φ(x), erf form (PyTorch nn.GELU()).
__device__ __forceinline__ float gelu_erf_op(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }
// The tanh approximation (PyTorch nn.GELU(approximate="tanh")).
__device__ __forceinline__ float gelu_tanh_op(float v) {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    return 0.5f * v * (1.f + tanhf(k0 * (v + k1 * v * v * v)));
}
// x·σ(x) (SiLU).
__device__ __forceinline__ float swish_op(float v) { return v / (1.f + __expf(-v)); }

// The training network's activation by code (the order of the Rust `Activation` enum):
// 0 ReLU, 1 GELU (erf form), 2 Swish; and its derivative (ReLU's is 0 at 0, as PyTorch's).
// The derivatives use the accurate expf: the backward pass compares with the CPU backend's f64.
#define ACT_RELU 0
#define ACT_GELU 1
#define ACT_SWISH 2
__device__ __forceinline__ float act_apply(int act, float v) {
    return act == ACT_GELU ? gelu_erf_op(v) : act == ACT_SWISH ? v / (1.f + expf(-v)) : relu_op(v);
}
__device__ __forceinline__ float act_derivative(int act, float z) {
    if (act == ACT_GELU) {
        const float cdf = 0.5f * (1.f + erff(z * 0.70710678118654752f));
        const float pdf = expf(-0.5f * z * z) * 0.39894228040143268f;  // 1/sqrt(2π)
        return cdf + z * pdf;
    }
    if (act == ACT_SWISH) {
        const float s = 1.f / (1.f + expf(-z));
        return s * (1.f + z * (1.f - s));
    }
    return z > 0.f ? 1.f : 0.f;
}

// The FP16 outputs' fast forms (activations.cu's GELU, norm.cu's LayerNorm+GELU): MUFU ex2 and rcp.
__device__ __forceinline__ float ex2_approx(float v) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); return r; }
__device__ __forceinline__ float rcp_approx(float v) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); return r; }
// GELU, erf form, for FP16 outputs: x·σ(P(u)), u = x clamped to ±8, P(u) = u(a + b u² + c u⁴)
// with a = 1.595015175, b = 7.401198899e-2, c = −7.031852396e-4 (a weighted minimax fit of
// logit Φ; P is increasing on [0, 8] and P(8) = 27.6, so σ(±P(8)) is 1 or 0 to 1e-12), the
// constants below being −log2(e)·(a, b, c) for ex2. Max |error| against x·Φ(x) in f64: 2.5e-5 at
// x ≈ 2.07 (fit on a 0.001 grid over ±12; bench/ln_variants.cu checks all 65536 FP16 inputs on
// the GPU). That is 1/40 of the FP16 spacing at 1 (9.8e-4), 1/10 of half the spacing on [0.5, 1),
// and 1/80 of the kernel check's FP16 bound (2e-3 of max(|y|, 1)); ex2.approx and rcp.approx
// add about 2 ulp of FP32 relative.
__device__ __forceinline__ float gelu_erf_fast(float x) {
    const float u = fminf(fmaxf(x, -8.f), 8.f), s = u * u;
    const float p = fmaf(fmaf(1.014481858e-3f, s, -1.067767295e-1f), s, -2.301120483e+00f) * u;
    return x * rcp_approx(1.f + ex2_approx(p));
}
