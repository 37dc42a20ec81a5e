//! The duel: load the data, choose the backend, train each contestant from the same initial
//! weights and data order.

use std::sync::atomic::AtomicBool;

use crate::backend::cpu::CpuBackend;
use crate::backend::{AdamParams, Backend};
use crate::data::{self, Dataset};
use crate::error::Result;
use crate::train::{init_params, TrainOptions, Trainer};
use crate::types::{BackendChoice, ConfigUsed, DatasetUsed, DuelConfig, DuelEvent, DuelReport};

/// Loads the duel's data set and applies the limits.
pub fn load_dataset(cfg: &DuelConfig) -> Result<Dataset> {
    let dir = cfg.data_dir.as_ref().map(std::path::Path::new);
    let mut d = data::load(&cfg.dataset, dir)?;
    let px = d.pixels();
    if let Some(n) = cfg.train_limit {
        d.train.truncate(n, px);
    }
    if let Some(n) = cfg.test_limit {
        d.test.truncate(n, px);
    }
    Ok(d)
}

/// Runs a duel: each precision in turn, same initial weights and data order; stops with
/// [`ComputeError::Cancelled`](crate::error::ComputeError::Cancelled) within one training step once `cancel` is set. One duel at a
/// time per service is the [`Service`](super::Service)'s job slot's concern, not this one's.
pub fn run_duel(
    cfg: &DuelConfig,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<DuelReport> {
    cfg.validate()?;
    check_threads(cfg.threads, cores())?;
    let (backend, reason) = choose_backend(cfg.backend, cfg.device)?;
    match backend {
        Chosen::Cpu => {
            let be = CpuBackend::new(cfg.threads)?;
            duel_on(&be, cfg, reason, on_event, cancel)
        }
        #[cfg(feature = "cuda")]
        Chosen::Cuda(be) => duel_on(&*be, cfg, reason, on_event, cancel),
    }
}

/// This machine's cores as the OS grants them to this process (1 when it cannot tell).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Refuses more CPU threads than `cores`: they gain nothing, and a request for 100,000 made the
/// CPU backend spawn threads until the OS refused (the core cannot check it: it builds for
/// wasm, where there are no cores to count).
fn check_threads(threads: Option<usize>, cores: usize) -> Result<()> {
    match threads {
        Some(n) if n > cores => Err(crate::error::ComputeError::bad_arg(
            "--threads",
            n,
            format!("must be at most {cores}, the cores of this machine (more would gain nothing)"),
        )),
        _ => Ok(()),
    }
}

/// The backend a job runs on, opened.
pub(crate) enum Chosen {
    /// The CPU backend.
    Cpu,
    /// The CUDA backend.
    #[cfg(feature = "cuda")]
    Cuda(Box<crate::cuda::CudaBackend>),
}

#[cfg(feature = "cuda")]
fn open_cuda(device: usize) -> Result<Chosen> {
    crate::cuda::CudaBackend::new(device).map(|b| Chosen::Cuda(Box::new(b)))
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(_device: usize) -> Result<Chosen> {
    Err(crate::error::ComputeError::Backend {
        backend: "cuda".into(),
        reason: "this build has no CUDA backend (built without the `cuda` feature)".into(),
    })
}

/// The backend `choice` asks for on GPU `device`, and why in words: `auto` takes the GPU when it
/// opens, else the CPU (the reason starts with "auto fell back").
pub(crate) fn choose_backend(choice: BackendChoice, device: usize) -> Result<(Chosen, String)> {
    match choice {
        BackendChoice::Cpu => Ok((Chosen::Cpu, "asked for --backend cpu".into())),
        BackendChoice::Auto => match open_cuda(device) {
            Ok(c) => Ok((c, format!("auto: GPU {device} is usable"))),
            Err(e) => Ok((Chosen::Cpu, format!("auto fell back to the CPU: {e}"))),
        },
        BackendChoice::Cuda => open_cuda(device).map(|c| (c, "asked for --backend cuda".into())),
    }
}

fn duel_on<B: Backend>(
    be: &B,
    cfg: &DuelConfig,
    reason: String,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<DuelReport> {
    let d = load_dataset(cfg)?;
    let init = init_params(cfg.seed);
    let adam = AdamParams {
        lr: cfg.lr,
        ..AdamParams::default()
    };
    let mut runs = Vec::new();
    for &precision in &cfg.precisions {
        let opts = TrainOptions {
            precision,
            epochs: cfg.epochs,
            batch: cfg.batch,
            adam,
            seed: cfg.seed,
            dropout: cfg.dropout,
            activation: cfg.activation,
        };
        // The previous contestant's trainer and its graph are gone: its scratch can go too.
        be.release_scratch();
        be.reset_peak();
        let mut t = Trainer::new(be, opts, &d.train, &d.test, &init)?;
        runs.push(t.run(on_event, cancel)?);
    }
    Ok(DuelReport {
        backend: be.name().into(),
        device: be.device(),
        backend_reason: reason,
        dataset: DatasetUsed {
            name: d.name.clone(),
            train: d.train.len(),
            test: d.test.len(),
        },
        config: ConfigUsed {
            epochs: cfg.epochs,
            batch: cfg.batch,
            seed: cfg.seed,
            lr: cfg.lr,
            dropout: cfg.dropout,
            activation: cfg.activation,
            threads: be.threads(),
        },
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DuelConfig;

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
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            threads: Some(100_000),
            train_limit: Some(8),
            test_limit: Some(8),
            ..DuelConfig::default()
        };
        let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
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
}
