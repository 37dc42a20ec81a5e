//! NVML telemetry during a GPU run: utilisation, SM clock, memory, power and temperature at
//! 5 Hz, and the device memory NVML attributes to this process.

use std::time::Duration;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::Nvml;

use crate::telemetry::TelemetryRecorder;
use crate::types::TelemetrySample;

/// Sampling period (5 Hz).
pub const PERIOD: Duration = Duration::from_millis(200);

/// Starts sampling GPU `index` (NVML's numbering, which matches CUDA's unless
/// `CUDA_VISIBLE_DEVICES` reorders them). Without NVML, the recorder returns no samples and a
/// note saying why.
pub fn start(index: usize) -> TelemetryRecorder {
    let pid = std::process::id();
    let mut nvml: Option<Result<Nvml, String>> = None;
    TelemetryRecorder::spawn(PERIOD, move |t_ms| {
        // NVML is opened on the sampling thread and kept for the run.
        let n = match nvml.get_or_insert_with(|| Nvml::init().map_err(|e| e.to_string())) {
            Ok(n) => n,
            Err(_) => return (None, None),
        };
        let Ok(d) = n.device_by_index(index as u32) else {
            return (None, None);
        };
        let util = d.utilization_rates().ok();
        let sample = TelemetrySample {
            t_ms,
            gpu_util_pct: util.as_ref().map(|u| u.gpu).unwrap_or(0),
            mem_util_pct: util.as_ref().map(|u| u.memory).unwrap_or(0),
            sm_clock_mhz: d.clock_info(Clock::SM).unwrap_or(0),
            memory_used_bytes: d.memory_info().map(|m| m.used).unwrap_or(0),
            power_w: d.power_usage().map(|mw| mw as f64 / 1e3).unwrap_or(0.0),
            temperature_c: d.temperature(TemperatureSensor::Gpu).unwrap_or(0),
        };
        let mine = d.running_compute_processes().ok().and_then(|ps| {
            ps.into_iter()
                .find(|p| p.pid == pid)
                .and_then(|p| match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                })
        });
        (Some(sample), mine)
    })
}

/// One NVML reading of GPU `index` now and its name, or why there is none.
pub fn read_now(index: usize) -> std::result::Result<(String, TelemetrySample), String> {
    let n = Nvml::init().map_err(|e| format!("NVML is not usable: {e}"))?;
    let d = n
        .device_by_index(index as u32)
        .map_err(|e| format!("NVML has no GPU {index}: {e}"))?;
    let util = d.utilization_rates().ok();
    let name = d.name().unwrap_or_else(|_| format!("GPU {index}"));
    Ok((
        name,
        TelemetrySample {
            t_ms: 0.0,
            gpu_util_pct: util.as_ref().map(|u| u.gpu).unwrap_or(0),
            mem_util_pct: util.as_ref().map(|u| u.memory).unwrap_or(0),
            sm_clock_mhz: d.clock_info(Clock::SM).unwrap_or(0),
            memory_used_bytes: d.memory_info().map(|m| m.used).unwrap_or(0),
            power_w: d.power_usage().map(|mw| mw as f64 / 1e3).unwrap_or(0.0),
            temperature_c: d.temperature(TemperatureSensor::Gpu).unwrap_or(0),
        },
    ))
}
