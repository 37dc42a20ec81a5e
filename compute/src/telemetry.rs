//! Live device telemetry during a job: a background sampler ([`TelemetryRecorder`], fed by
//! NVML on a GPU) and the one way a job passes its readings on with its progress
//! ([`TelemetryForward`]), used by the duel and the lab jobs alike.

use crate::protocol::Event;
use crate::sync::lock;

/// A background sampler of device telemetry, stopped by [`TelemetryRecorder::stop`]; the
/// readings so far can be read while it runs ([`TelemetryRecorder::samples_since`]).
pub struct TelemetryRecorder {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    shared: std::sync::Arc<std::sync::Mutex<crate::types::Telemetry>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl TelemetryRecorder {
    /// Runs `sample(elapsed_ms)` every `period` on a background thread until stopped; each call
    /// returns a sample (or `None` to skip) and the process's device memory if known.
    pub fn spawn<F>(period: std::time::Duration, mut sample: F) -> Self
    where
        F: FnMut(f64) -> (Option<crate::types::TelemetrySample>, Option<u64>) + Send + 'static,
    {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let shared = std::sync::Arc::new(std::sync::Mutex::new(crate::types::Telemetry::default()));
        let flag = stop.clone();
        let out = shared.clone();
        let handle = std::thread::Builder::new()
            .name("showdown-telemetry".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                loop {
                    let (s, proc_mem) = sample(t0.elapsed().as_secs_f64() * 1e3);
                    {
                        let mut out = lock(&out);
                        out.samples.extend(s);
                        if let Some(m) = proc_mem {
                            out.process_memory_peak_bytes =
                                Some(out.process_memory_peak_bytes.unwrap_or(0).max(m));
                        }
                    }
                    // Sleep in small slices so stop() returns quickly.
                    let wake = std::time::Instant::now() + period;
                    while std::time::Instant::now() < wake {
                        if flag.load(std::sync::atomic::Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                }
            })
            .ok();
        TelemetryRecorder {
            stop,
            shared,
            handle,
        }
    }

    /// The readings taken after the first `seen` (for a live strip: pass the count read so far).
    pub fn samples_since(&self, seen: usize) -> Vec<crate::types::TelemetrySample> {
        lock(&self.shared)
            .samples
            .get(seen..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// Stops sampling and returns what was recorded.
    pub fn stop(mut self) -> crate::types::Telemetry {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(())) => std::mem::take(&mut *lock(&self.shared)),
            _ => crate::types::Telemetry {
                note: Some("the telemetry thread could not run".into()),
                ..Default::default()
            },
        }
    }
}

impl Drop for TelemetryRecorder {
    fn drop(&mut self) {
        // A run that ends early (error, cancel) drops the recorder: the thread ends with it.
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Passes a job's new telemetry readings on as [`Event::Telemetry`], each once: the duel and
/// the lab jobs call [`TelemetryForward::flush`] with each progress event.
#[derive(Default)]
pub struct TelemetryForward {
    recorder: Option<TelemetryRecorder>,
    sent: usize,
}

impl TelemetryForward {
    /// Forwards `recorder`'s readings (none: nothing to forward).
    pub fn new(recorder: Option<TelemetryRecorder>) -> Self {
        TelemetryForward { recorder, sent: 0 }
    }

    /// Whether a recorder is running.
    pub fn is_running(&self) -> bool {
        self.recorder.is_some()
    }

    /// Sends the readings taken since the last call to `on_event`.
    pub fn flush(&mut self, on_event: &mut dyn FnMut(Event)) {
        if let Some(t) = &self.recorder {
            let fresh = t.samples_since(self.sent);
            self.sent += fresh.len();
            for sample in fresh {
                on_event(Event::Telemetry { sample });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TelemetrySample;

    fn sample(t_ms: f64) -> TelemetrySample {
        TelemetrySample {
            t_ms,
            gpu_util_pct: 1,
            mem_util_pct: 2,
            sm_clock_mhz: 3,
            memory_used_bytes: 4,
            power_w: 5.0,
            temperature_c: 6,
        }
    }

    #[test]
    fn each_reading_is_forwarded_once() {
        let rec = TelemetryRecorder::spawn(std::time::Duration::from_millis(5), |t| {
            (Some(sample(t)), Some(7))
        });
        let mut fwd = TelemetryForward::new(Some(rec));
        let mut seen = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while seen.len() < 3 && std::time::Instant::now() < deadline {
            fwd.flush(&mut |e| {
                if let Event::Telemetry { sample } = e {
                    seen.push(sample.t_ms);
                }
            });
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(seen.len() >= 3, "{seen:?}");
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "each once, in order: {seen:?}"
        );
        let mut none = TelemetryForward::default();
        none.flush(&mut |_| panic!("nothing to forward"));
        assert!(!none.is_running());
    }
}
