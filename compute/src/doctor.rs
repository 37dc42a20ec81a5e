//! What this machine can do: CPU, GPU, driver, NVRTC, NVML, where the kernels come from (the
//! embedded cubin or PTX, or NVRTC), and the backend `auto` picks.

use crate::host::{cpu_features, cpu_model, CUDA_BACKEND_READY};
use crate::types::{DoctorReport, GpuInfo, Probe};

/// What the GPU probe found.
#[derive(Debug, Clone)]
pub struct GpuProbe {
    /// The driver library and its version.
    pub driver: Probe,
    /// NVRTC (optional: the Kernel Reveal's facts, rebuilding a family).
    pub nvrtc: Probe,
    /// NVML.
    pub nvml: Probe,
    /// Where GPU 0's kernels come from: an embedded cubin or PTX, or NVRTC.
    pub kernels: Probe,
    /// Devices.
    pub gpus: Vec<GpuInfo>,
}

impl GpuProbe {
    /// Whether there is a GPU to open: a driver and a device.
    pub fn has_gpu(&self) -> Result<(), String> {
        if !self.driver.ok {
            return Err(format!("no CUDA driver: {}", self.driver.detail));
        }
        if self.gpus.is_empty() {
            return Err("the CUDA driver reports no GPU".into());
        }
        Ok(())
    }

    /// Whether the CUDA backend can run: a driver, a device, and kernels for it (embedded, or
    /// compiled by NVRTC).
    pub fn usable(&self) -> Result<(), String> {
        self.has_gpu()?;
        if !self.kernels.ok {
            return Err(format!("no kernels for this GPU: {}", self.kernels.detail));
        }
        Ok(())
    }
}

#[cfg(feature = "cuda")]
mod probe {
    use super::*;
    use cudarc::driver::{result, sys};

    fn guarded<T>(
        f: impl FnOnce() -> Result<T, String> + std::panic::UnwindSafe,
    ) -> Result<T, String> {
        std::panic::catch_unwind(f).unwrap_or_else(|_| {
            Err("the CUDA library panicked while loading (missing symbol?)".into())
        })
    }

    pub fn gpu() -> GpuProbe {
        let driver = guarded(|| {
            // SAFETY: only checks whether the shared library can be opened.
            if !unsafe { sys::is_culib_present() } {
                return Err("libcuda.so not found (no NVIDIA driver installed)".into());
            }
            result::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
            let mut v = 0;
            // SAFETY: cuDriverGetVersion writes one int.
            unsafe { sys::cuDriverGetVersion(&mut v) }
                .result()
                .map_err(|e| format!("{e:?}"))?;
            Ok(format!("CUDA driver API {}.{}", v / 1000, (v % 1000) / 10))
        });
        let gpus = if driver.is_ok() {
            guarded(|| {
                let n = result::device::get_count().map_err(|e| format!("{e:?}"))?;
                let mut out = Vec::new();
                for i in 0..n {
                    let d = result::device::get(i).map_err(|e| format!("{e:?}"))?;
                    let name = result::device::get_name(d).map_err(|e| format!("{e:?}"))?;
                    use sys::CUdevice_attribute as A;
                    // SAFETY: d is a valid device handle from cuDeviceGet.
                    let attr = |a| unsafe { result::device::get_attribute(d, a) }.unwrap_or(0);
                    // SAFETY: as above.
                    let mem = unsafe { result::device::total_mem(d) }.unwrap_or(0);
                    out.push(GpuInfo {
                        index: i as usize,
                        name,
                        compute_capability: format!(
                            "{}.{}",
                            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                        ),
                        memory_bytes: mem as u64,
                        sms: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) as u32,
                    });
                }
                Ok(out)
            })
            .unwrap_or_default()
        } else {
            Vec::new()
        };
        let nvrtc = guarded(|| {
            // SAFETY: only checks whether the shared library can be opened.
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err(
                    "libnvrtc.so not found: optional, training uses the embedded kernels (NVRTC serves the Kernel Reveal's facts and rebuilds kernels; CUDA toolkit or pip nvidia-cuda-nvrtc)"
                        .into(),
                );
            }
            let (mut major, mut minor) = (0, 0);
            // SAFETY: nvrtcVersion writes two ints.
            unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
                .result()
                .map_err(|e| format!("{e:?}"))?;
            Ok(format!("NVRTC {major}.{minor}"))
        });
        let nvml = match nvml_wrapper::Nvml::init() {
            Ok(n) => Ok(n
                .sys_driver_version()
                .map(|v| format!("NVML, driver {v}"))
                .unwrap_or_else(|_| "NVML".into())),
            Err(e) => Err(format!("NVML unavailable: {e}")),
        };
        let p = |r: Result<String, String>| match r {
            Ok(d) => Probe {
                ok: true,
                detail: d,
            },
            Err(d) => Probe {
                ok: false,
                detail: d,
            },
        };
        let kernels = crate::cuda::kernels_probe(&gpus, nvrtc.is_ok());
        GpuProbe {
            driver: p(driver),
            nvrtc: p(nvrtc),
            nvml: p(nvml),
            kernels,
            gpus,
        }
    }
}

#[cfg(not(feature = "cuda"))]
mod probe {
    use super::*;
    pub fn gpu() -> GpuProbe {
        let no = || Probe {
            ok: false,
            detail: "this build has no CUDA backend (built without the `cuda` feature)".into(),
        };
        GpuProbe {
            driver: no(),
            nvrtc: no(),
            nvml: no(),
            kernels: no(),
            gpus: Vec::new(),
        }
    }
}

/// Probes the GPU software stack; never panics, whatever is (not) installed.
pub fn probe_gpu() -> GpuProbe {
    probe::gpu()
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
    }
}
