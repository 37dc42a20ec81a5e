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

enum Chosen {
    Cpu,
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

fn choose_backend(choice: BackendChoice, device: usize) -> Result<(Chosen, String)> {
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
