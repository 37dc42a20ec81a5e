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

