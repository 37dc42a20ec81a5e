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

