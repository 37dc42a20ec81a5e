//! What this machine can do: CPU, GPU, driver, NVRTC, NVML, where the kernels come from (the
//! embedded cubin or PTX, or NVRTC), and the backend `auto` picks.

use crate::host::{cpu_features, cpu_model, CUDA_BACKEND_READY};
use crate::types::DoctorReport;

pub use crate::gpu_probe::GpuProbe;

/// Probes the GPU software stack and where the kernels would come from (the embedded cubin or
/// PTX for this GPU, or NVRTC); never panics, whatever is (not) installed.
pub fn probe_gpu() -> GpuProbe {
    #[allow(unused_mut)]
    let mut probe = crate::gpu_probe::probe_stack();
    #[cfg(feature = "cuda")]
    {
        probe.kernels = crate::cuda::kernels_probe(&probe.gpus, probe.nvrtc.ok);
    }
    probe
}

/// The full doctor report.
pub fn doctor() -> DoctorReport {
    let gpu = probe_gpu();
    let (auto_backend, auto_reason) = match gpu.usable() {
        Ok(()) if CUDA_BACKEND_READY => (
            "cuda".to_string(),
            format!(
                "{} is usable (kernels: {})",
                gpu.gpus.first().map(|g| g.name.as_str()).unwrap_or("GPU"),
                gpu.kernels
                    .detail
                    .split([':', ',', ';'])
                    .next()
                    .unwrap_or_default()
            ),
        ),
        Ok(()) => (
            "cpu".to_string(),
            "a GPU is usable, but this build's CUDA training backend is not available yet".into(),
        ),
        Err(why) => ("cpu".to_string(), why),
    };
    DoctorReport {
        version: env!("CARGO_PKG_VERSION").into(),
        cpu: cpu_model(),
        cores: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cpu_features: cpu_features(),
        cuda_built: cfg!(feature = "cuda"),
        driver: gpu.driver,
        nvrtc: gpu.nvrtc,
        nvml: gpu.nvml,
        kernels: gpu.kernels,
        gpus: gpu.gpus,
        auto_backend,
        auto_reason,
        machine: Some(crate::origin::this_machine()),
    }
}
