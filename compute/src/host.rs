//! Facts about this host that several parts of the engine need (the CPU backend names its
//! device with them, `doctor` reports them): kept apart so that neither depends on the other.

/// Whether this build contains the CUDA training backend.
pub const CUDA_BACKEND_READY: bool = cfg!(feature = "cuda");

/// The CPU's model name (from /proc/cpuinfo on Linux), or the architecture.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| format!("{} CPU", std::env::consts::ARCH))
}

/// SIMD features relevant to the CPU backend.
pub fn cpu_features() -> Vec<String> {
    #[allow(unused_mut)]
    let mut f = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        for (name, on) in [
            ("sse4.2", std::arch::is_x86_feature_detected!("sse4.2")),
            ("avx", std::arch::is_x86_feature_detected!("avx")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("f16c", std::arch::is_x86_feature_detected!("f16c")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
        ] {
            if on {
                f.push(name.to_string());
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    f.push("neon".to_string());
    f
}
