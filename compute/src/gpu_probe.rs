//! What the machine's GPU software stack offers (the driver and its devices, NVRTC, NVML),
//! probed without panicking whatever is (not) installed. The CUDA backend asks it before it
//! opens a device; `doctor` adds where the kernels come from (the backend's answer).

use crate::types::{GpuInfo, Probe};

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
        GpuProbe {
            driver: p(driver),
            nvrtc: p(nvrtc),
            nvml: p(nvml),
            // Where the kernels come from is the CUDA backend's to say:
            // `doctor::probe_gpu` asks it (this module must not depend on it).
            kernels: Probe {
                ok: false,
                detail: "not probed".into(),
            },
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

/// Probes the driver, its devices, NVRTC and NVML (not the kernels: see
/// [`crate::doctor::probe_gpu`]); never panics, whatever is (not) installed.
pub fn probe_stack() -> GpuProbe {
    probe::gpu()
}
