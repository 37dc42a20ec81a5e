//! The backend a job runs on, chosen and opened once ([`Device::open`]), and the one way a job
//! runs its body on it ([`Device::run`]): the duel, the step anatomy and the explainer's check
//! each state their work once, generic over [`Backend`], instead of matching on the backend.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::error::{ComputeError, Result};
use crate::types::BackendChoice;

/// A job's work, written once for any backend: [`Device::run`] calls it on the opened one.
pub trait OnBackend {
    /// What the work answers.
    type Output;
    /// Does the work on `be`.
    fn run<B: Backend>(self, be: &B) -> Result<Self::Output>;
}

/// The backend a job runs on, opened.
pub enum Device {
    /// The CPU backend.
    Cpu(CpuBackend),
    /// The CUDA backend.
    #[cfg(feature = "cuda")]
    Cuda(Box<crate::cuda::CudaBackend>),
}

/// How often [`Device::run`] passes a job's cancel flag on to the CPU backend.
const STOP_POLL: Duration = Duration::from_millis(10);

impl Device {
    /// The backend `choice` asks for (GPU `gpu`; `cpu_threads` for the CPU backend, at most this
    /// machine's cores), opened, and why in words: `auto` takes the GPU when it opens, else the
    /// CPU (the reason then starts with "auto fell back").
    pub fn open(
        choice: BackendChoice,
        gpu: usize,
        cpu_threads: Option<usize>,
    ) -> Result<(Device, String)> {
        check_threads(cpu_threads, cores())?;
        let cpu = || CpuBackend::new(cpu_threads).map(Device::Cpu);
        match choice {
            BackendChoice::Cpu => Ok((cpu()?, "asked for --backend cpu".into())),
            BackendChoice::Auto => match open_cuda(gpu) {
                Ok(d) => Ok((d, format!("auto: GPU {gpu} is usable"))),
                Err(e) => Ok((cpu()?, format!("auto fell back to the CPU: {e}"))),
            },
            BackendChoice::Cuda => open_cuda(gpu).map(|d| (d, "asked for --backend cuda".into())),
        }
    }

    /// The CPU backend's stop flag (what its convolutions watch); `None` on a GPU.
    pub fn cpu_stop_flag(&self) -> Option<std::sync::Arc<AtomicBool>> {
        match self {
            Device::Cpu(be) => Some(be.stop_flag()),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => None,
        }
    }

    /// Whether this is a GPU.
    pub fn is_gpu(&self) -> bool {
        !matches!(self, Device::Cpu(_))
    }

    /// Runs `body` on the backend. On the CPU, whose convolutions over a large batch take
    /// seconds, `cancel` is passed on to the backend's stop flag while `body` runs, so a cancel
    /// stops the work within an image, not at the end of a step; a GPU job checks it between
    /// launches itself.
    pub fn run<T: OnBackend>(&self, cancel: &AtomicBool, body: T) -> Result<T::Output> {
        match self {
            Device::Cpu(be) => {
                let (stop, done) = (be.stop_flag(), AtomicBool::new(false));
                std::thread::scope(|scope| {
                    let watch = || {
                        while !done.load(Ordering::Relaxed) {
                            if cancel.load(Ordering::Relaxed) {
                                stop.store(true, Ordering::Relaxed);
                                return;
                            }
                            std::thread::sleep(STOP_POLL);
                        }
                    };
                    // Without the watcher the work still stops, at its own checks.
                    let _watcher = std::thread::Builder::new()
                        .name("cancel-watch".into())
                        .spawn_scoped(scope, watch);
                    let out = body.run(be);
                    done.store(true, Ordering::Relaxed);
                    out
                })
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(be) => body.run(&**be),
        }
    }
}

#[cfg(feature = "cuda")]
fn open_cuda(gpu: usize) -> Result<Device> {
    crate::cuda::CudaBackend::new(gpu).map(|b| Device::Cuda(Box::new(b)))
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(_gpu: usize) -> Result<Device> {
    Err(ComputeError::Unavailable {
        backend: "cuda".into(),
        reason: "this build has no CUDA backend (built without the `cuda` feature)".into(),
    })
}

/// This machine's cores as the OS grants them to this process (1 when it cannot tell).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Refuses more CPU threads than `cores`: they gain nothing, and a request for 100,000 made the
/// CPU backend spawn threads until the OS refused (the core cannot check it: it builds for
/// wasm, where there are no cores to count).
fn check_threads(threads: Option<usize>, cores: usize) -> Result<()> {
    match threads {
        Some(n) if n > cores => Err(ComputeError::bad_arg(
            "--threads",
            n,
            format!("must be at most {cores}, the cores of this machine (more would gain nothing)"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's thread count (Linux), to see that a refusal spawned none.
    fn threads_now() -> Option<usize> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|n| n.trim().parse().ok())
    }

    #[test]
    fn threads_above_the_cores_are_refused_naming_the_limit_without_a_thread_storm() {
        let before = threads_now();
        let e = Device::open(BackendChoice::Cpu, 0, Some(100_000))
            .err()
            .unwrap();
        let message = e.to_string();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput, "{message}");
        assert!(
            message.contains("--threads") && message.contains(&format!("at most {}", cores())),
            "{message}"
        );
        if let (Some(before), Some(after)) = (before, threads_now()) {
            // Other tests run beside this one: allow their threads, not a storm.
            assert!(
                after < before + 64,
                "{before} threads before, {after} after"
            );
        }
        assert!(check_threads(Some(4), 4).is_ok());
        assert!(check_threads(None, 1).is_ok());
        assert!(check_threads(Some(5), 4).is_err());
    }

    /// The body is run on the backend opened, and a cancel during it reaches the CPU
    /// backend's stop flag (what its convolutions watch) within a poll.
    #[test]
    fn a_body_runs_on_the_opened_backend_and_a_cancel_reaches_its_stop_flag() {
        /// Stands in for a long primitive: waits for the backend's stop flag.
        struct Wait(std::sync::Arc<AtomicBool>);
        impl OnBackend for Wait {
            type Output = (String, bool);
            fn run<B: Backend>(self, be: &B) -> Result<(String, bool)> {
                let t0 = std::time::Instant::now();
                while t0.elapsed() < Duration::from_secs(5) {
                    if self.0.load(Ordering::Relaxed) {
                        return Ok((be.name().to_string(), true));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok((be.name().to_string(), false))
            }
        }
        let (device, reason) = Device::open(BackendChoice::Cpu, 0, Some(1)).unwrap();
        assert!(!device.is_gpu());
        assert_eq!(reason, "asked for --backend cpu");
        let body = Wait(device.cpu_stop_flag().unwrap());
        let cancel = AtomicBool::new(false);
        let t0 = std::time::Instant::now();
        let (name, stopped) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                cancel.store(true, Ordering::Relaxed);
            });
            device.run(&cancel, body).unwrap()
        });
        assert_eq!(name, "cpu");
        assert!(stopped, "the cancel did not reach the stop flag");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
}
