//! The duel: load the data, open the backend, train each contestant from the same initial
//! weights and data order. Below the service: the service's duel handler, the CLI and the
//! explainer's short duel all call [`run_duel`].

use std::sync::atomic::AtomicBool;

use crate::backend::{AdamParams, Backend};
use crate::data::{self, Dataset};
use crate::device::{Device, OnBackend};
use crate::error::Result;
use crate::fp8::{Fp8Recipe, Fp8Scaling};
use crate::lab::PeerStatus;
use crate::train::{init_params, TrainOptions, Trainer};
use crate::types::{
    BackendChoice, ConfigUsed, DatasetUsed, DuelConfig, DuelEvent, DuelReport, RunReport,
};

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
/// [`ComputeError::Cancelled`](crate::error::ComputeError::Cancelled) within one training step
/// once `cancel` is set (within an image on the CPU). One duel at a time is the concern of the
/// service's job slot, above this module, not this one's.
pub fn run_duel(
    cfg: &DuelConfig,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<DuelReport> {
    run_duel_with_peer(cfg, None, on_event, cancel)
}

/// [`run_duel`], and with [`DuelConfig::pytorch`] PyTorch's side after our contestants
/// ([`crate::pytorch_duel`]), run by the interpreter of `peer` (the service's peer setting); the
/// report's [`DuelReport::peer`] holds its runs, or why there are none.
pub fn run_duel_with_peer(
    cfg: &DuelConfig,
    peer: Option<&PeerStatus>,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<DuelReport> {
    cfg.validate()?;
    let (device, reason) = Device::open(cfg.backend, cfg.device, cfg.threads)?;
    device.run(
        cancel,
        DuelOn {
            cfg,
            reason,
            peer,
            on_event,
            cancel,
        },
    )
}

/// The FP8 contestant on the CPU, where the duel's backend has no FP8.
struct Fp8OnCpu<'a> {
    opts: TrainOptions,
    d: &'a Dataset,
    init: &'a [Vec<f32>; 6],
    scaling: Fp8Scaling,
    on_event: &'a mut dyn FnMut(DuelEvent),
    cancel: &'a AtomicBool,
}

impl OnBackend for Fp8OnCpu<'_> {
    type Output = RunReport;
    fn run<B: Backend>(self, be: &B) -> Result<RunReport> {
        let mut t = Trainer::new(be, self.opts, &self.d.train, &self.d.test, self.init)?;
        t.set_fp8_recipe(Fp8Recipe {
            scaling: self.scaling,
            ..Fp8Recipe::default()
        })?;
        t.run(self.on_event, self.cancel)
    }
}

/// The duel's work on whichever backend was opened.
struct DuelOn<'a> {
    cfg: &'a DuelConfig,
    reason: String,
    peer: Option<&'a PeerStatus>,
    on_event: &'a mut dyn FnMut(DuelEvent),
    cancel: &'a AtomicBool,
}

impl OnBackend for DuelOn<'_> {
    type Output = DuelReport;
    fn run<B: Backend>(self, be: &B) -> Result<DuelReport> {
        duel_on(be, self)
    }
}

fn duel_on<B: Backend>(be: &B, on: DuelOn<'_>) -> Result<DuelReport> {
    let DuelOn {
        cfg,
        reason,
        peer,
        on_event,
        cancel,
    } = on;
    // Every precision is checked before any trains (FP8 falls back to the CPU where the
    // backend has none): a refusal of the last must not come after the first's epochs.
    for &precision in &cfg.precisions {
        // FP8 falls back to the CPU's emulation where the backend has none.
        if !precision.casts_to_fp8() {
            crate::train::check_supported(be, precision)?;
        }
    }
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
        if precision.casts_to_fp8() && !be.supports(precision) {
            // A GPU backend without FP8: FP8 trains emulated on the CPU, and says so.
            let (cpu, _) = Device::open(BackendChoice::Cpu, 0, cfg.threads)?;
            let mut run = cpu.run(
                cancel,
                Fp8OnCpu {
                    opts,
                    d: &d,
                    init: &init,
                    scaling: cfg.fp8_scaling,
                    on_event: &mut *on_event,
                    cancel,
                },
            )?;
            if let Some(f) = run.fp8.as_mut() {
                f.engine = format!(
                    "{} (the {} backend of {} has no FP8 kernels in this build)",
                    f.engine,
                    be.name(),
                    be.device()
                );
            }
            runs.push(run);
            continue;
        }
        let mut t = Trainer::new(be, opts, &d.train, &d.test, &init)?;
        t.set_fp8_recipe(Fp8Recipe {
            scaling: cfg.fp8_scaling,
            ..Fp8Recipe::default()
        })?;
        runs.push(t.run(on_event, cancel)?);
    }
    let peer = if cfg.pytorch {
        // Our trainers are gone: their device memory is free for PyTorch's.
        be.release_scratch();
        let none = PeerStatus {
            python: String::new(),
            source: String::new(),
            torch: None,
            cuda: false,
            device: None,
            ready: false,
            note: "PyTorch was asked for, but no peer interpreter was given to this duel".into(),
        };
        Some(crate::pytorch_duel::run_peer_duel(
            cfg,
            &d,
            be.name(),
            be.threads(),
            peer.unwrap_or(&none),
            on_event,
            cancel,
        )?)
    } else {
        None
    };
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
        peer,
        stamp: Some(crate::origin::stamp(be.name())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DuelConfig, Precision};

    /// Regression (issue 30): `"precisions": ["fp32","fp16","fp32"]` trained FP32 twice and
    /// saved it twice; the duel now refuses it before loading anything, as every job does.
    #[test]
    fn duel_duplicate_precisions_are_refused_before_training() {
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            precisions: vec![
                crate::types::Precision::Fp32,
                crate::types::Precision::Fp16,
                crate::types::Precision::Fp32,
            ],
            train_limit: Some(8),
            test_limit: Some(8),
            ..DuelConfig::default()
        };
        let mut events = 0;
        let e = run_duel(&cfg, &mut |_| events += 1, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput, "{e}");
        assert_eq!(
            e.to_string(),
            "invalid --precisions 'fp32': is listed twice; name each once"
        );
        assert_eq!(events, 0, "nothing was trained");
    }

    /// Regression (issue 38, smaller items): on the CPU, `[bf16, tf32]` trained bf16 to the
    /// end before it refused tf32; every precision is now checked before any trains.
    #[test]
    fn a_duels_precisions_are_all_checked_before_any_trains() {
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            precisions: vec![Precision::Bf16, Precision::Tf32],
            train_limit: Some(8),
            test_limit: Some(8),
            ..DuelConfig::default()
        };
        let mut events = 0;
        let e = run_duel(&cfg, &mut |_| events += 1, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput, "{e}");
        assert!(e.to_string().contains("tf32"), "{e}");
        assert_eq!(events, 0, "bf16 was not trained first");
    }

    /// A duel over the CPU's large batches stops within an image of a cancel, not at the end
    /// of a step (seconds at batch 8,000 on two cores): the cancel reaches the backend's
    /// convolutions through [`Device::run`].
    #[test]
    fn a_cpu_duel_at_a_large_batch_stops_soon_after_a_cancel() {
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            batch: 8000,
            epochs: 1,
            train_limit: Some(8000),
            test_limit: Some(100),
            precisions: vec![crate::types::Precision::Fp32],
            ..DuelConfig::default()
        };
        let cancel = AtomicBool::new(false);
        let (result, waited) = std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let flag = &cancel;
            let canceller = s.spawn(move || {
                // Cancel once the first step has started.
                let _ = rx.recv_timeout(std::time::Duration::from_secs(60));
                std::thread::sleep(std::time::Duration::from_millis(200));
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
                std::time::Instant::now()
            });
            let r = run_duel(
                &cfg,
                &mut |e| {
                    if matches!(e, DuelEvent::RunStarted { .. }) {
                        let _ = tx.send(());
                    }
                },
                &cancel,
            );
            let at = canceller.join().unwrap();
            (r, at.elapsed())
        });
        let e = result.unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Cancelled, "{e}");
        assert!(
            waited < std::time::Duration::from_secs(1),
            "the duel stopped {waited:?} after the cancel"
        );
    }
}
