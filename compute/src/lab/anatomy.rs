//! A training step's anatomy: one step of the lab CNN replayed with every launch timed on its
//! own, per precision, side by side ([`run_step_anatomy`]). On the CUDA backend each kernel is
//! bracketed by CUDA events on its stream (launched one by one, outside the step's graph), and
//! the graph-replayed step is timed beside it; on the CPU backend each primitive is timed with
//! the host clock. The recorder is [`crate::anatomy`]; the steps are
//! [`Trainer::anatomy`](crate::train::Trainer::anatomy)'s; the report, its trace-event JSON and
//! its tables are the core's ([`StepAnatomy`]).

use crate::backend::{AdamParams, Backend};
use crate::bench::anatomy::{ContestantAnatomy, StepAnatomy};
use crate::data::Dataset;
use crate::device::{Device, OnBackend};
use crate::error::{ComputeError, Result};
use crate::protocol::StepAnatomyRequest;
use crate::train::{init_params, TrainOptions, Trainer};
use crate::types::Precision;

use super::LabJob;

/// Most steps a contestant may time.
pub const MAX_STEPS: usize = 1000;

/// Steps launched (and, on a GPU, replayed) untimed before the timed ones.
pub const WARMUP_STEPS: usize = 3;

/// Seed of the initial weights and the dropout masks (every contestant starts alike).
const SEED: u64 = 0;

/// How the CUDA backend's launches are timed, in words.
pub const CUDA_CLOCK: &str = "CUDA events around each kernel launch, outside the graph";

/// How the CUDA backend's kernels are timed where CUPTI can be used, in words.
pub const CUPTI_CLOCK: &str =
    "CUPTI kernel activity records (each kernel's own start and end on the GPU), launched one by one outside the graph";

/// How the CPU backend's primitives are timed, in words.
pub const CPU_CLOCK: &str = "host clock around each primitive";

/// Checks the request's numbers (the data set is checked when it is loaded).
fn validate(req: &StepAnatomyRequest) -> Result<()> {
    if req.batch == 0 {
        return Err(ComputeError::bad_arg(
            "batch",
            req.batch,
            "must be at least 1",
        ));
    }
    if !(1..=MAX_STEPS).contains(&req.steps) {
        return Err(ComputeError::bad_arg(
            "steps",
            req.steps,
            format!("must be between 1 and {MAX_STEPS}"),
        ));
    }
    if req.precisions.is_empty() {
        return Err(ComputeError::bad_arg(
            "precisions",
            "",
            "name at least one of fp32, fp16, tf32, bf16",
        ));
    }
    // Refused, not removed: the rule of every job (a duel refuses it too).
    crate::protocol::strict::check_unique("precisions", &req.precisions)?;
    Ok(())
}

/// Runs the step anatomy `req` asks for: loads the data set, chooses the backend, and for each
/// precision it can run (each once, in the order asked) trains a fresh CNN from the same
/// initial weights through [`Trainer::anatomy`]. A precision the backend cannot run becomes a
/// note. Reports a stage per contestant; once cancelled, stops within one primitive of a step
/// ([`Trainer::anatomy`]).
pub fn run_step_anatomy(req: &StepAnatomyRequest, job: &mut LabJob<'_>) -> Result<StepAnatomy> {
    validate(req)?;
    job.stage(format!("loading {}", req.dataset), 0, 1)?;
    let data = crate::data::load(
        &req.dataset,
        req.data_dir.as_deref().map(std::path::Path::new),
    )?;
    if req.batch > data.train.len() {
        return Err(ComputeError::bad_arg(
            "batch",
            req.batch,
            format!(
                "must be at most the {} training images of {}",
                data.train.len(),
                data.name
            ),
        ));
    }
    let (device, reason) = Device::open(req.backend, GPU, None)?;
    let fallback = reason.starts_with("auto fell back").then_some(reason);
    if let Some(why) = &fallback {
        job.note(why.clone());
    }
    #[cfg(feature = "cuda")]
    if device.is_gpu() {
        job.watch_gpu(GPU);
    }
    // On the CPU a convolution at batch 8000 takes a second or more: `Device::run` passes the
    // job's cancel on to the backend, which stops within an image.
    let cancel = job.cancel_flag();
    let mut report = device.run(
        cancel,
        AnatomyOn {
            req,
            data: &data,
            job,
        },
    )?;
    if let Some(why) = fallback {
        report.notes.insert(0, why);
    }
    Ok(report)
}

/// The GPU the anatomy runs on.
const GPU: usize = 0;

/// The anatomy's work on whichever backend was opened.
struct AnatomyOn<'r, 'j, 'a> {
    req: &'r StepAnatomyRequest,
    data: &'r Dataset,
    job: &'j mut LabJob<'a>,
}

impl OnBackend for AnatomyOn<'_, '_, '_> {
    type Output = StepAnatomy;
    fn run<B: Backend>(self, be: &B) -> Result<StepAnatomy> {
        anatomy_on(be, self.req, self.data, self.job)
    }
}

/// Each precision's anatomy on `be`.
fn anatomy_on<B: Backend>(
    be: &B,
    req: &StepAnatomyRequest,
    data: &Dataset,
    job: &mut LabJob<'_>,
) -> Result<StepAnatomy> {
    // Repeats were refused when the request was read (one rule for every job).
    let precisions: &[Precision] = &req.precisions;
    let mut notes = Vec::new();
    let runnable: Vec<Precision> = precisions
        .iter()
        .copied()
        .filter(|&p| {
            let ok = be.supports(p);
            if !ok {
                let note = format!(
                    "{p} left out: the {} backend does not train in {p}",
                    be.name()
                );
                job.note(note.clone());
                notes.push(note);
            }
            ok
        })
        .collect();
    if runnable.is_empty() {
        return Err(ComputeError::bad_arg(
            "precisions",
            precisions
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(","),
            format!("the {} backend trains in none of them", be.name()),
        ));
    }
    let init = init_params(SEED);
    let total = runnable.len();
    let mut contestants: Vec<ContestantAnatomy> = Vec::with_capacity(total);
    // Whether every contestant's kernels were timed by CUPTI's records.
    let mut by_cupti = true;
    for (i, &precision) in runnable.iter().enumerate() {
        job.stage(
            format!(
                "{precision}: {WARMUP_STEPS} warm-up step(s), then {} timed step(s)",
                req.steps
            ),
            i,
            total,
        )?;
        let opts = TrainOptions {
            precision,
            epochs: 1,
            batch: req.batch,
            adam: AdamParams::default(),
            seed: SEED,
            dropout: 0.5,
            activation: req.activation,
        };
        let mut trainer = Trainer::new(be, opts, &data.train, &data.test, &init)?;
        // Checked before each step and between a step's primitives: at batch 8000 on the CPU
        // one step takes seconds.
        let c = trainer.anatomy(req.steps, WARMUP_STEPS, job.cancel_flag())?;
        by_cupti &= crate::anatomy::kernels_timed_by_cupti();
        if be.name() == "cuda" && c.graph_step_ms.is_none() {
            let note = format!(
                "{precision}: no graph step (CUDA graphs are off: SHOWDOWN_CUDA_GRAPHS=off)"
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        contestants.push(c);
    }
    job.stage("done", total, total)?;
    Ok(StepAnatomy {
        backend: be.name().into(),
        device: be.device(),
        dataset: data.name.clone(),
        batch: req.batch,
        steps: req.steps,
        clock: if be.name() == "cuda" && by_cupti && !contestants.is_empty() {
            CUPTI_CLOCK
        } else if be.name() == "cuda" {
            CUDA_CLOCK
        } else {
            CPU_CLOCK
        }
        .into(),
        contestants,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use crate::types::BackendChoice;
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::protocol::Event;

    fn request(backend: BackendChoice) -> StepAnatomyRequest {
        StepAnatomyRequest {
            precisions: vec![Precision::Fp32, Precision::Fp16],
            backend,
            dataset: "mnist-sample".into(),
            batch: 32,
            steps: 3,
            ..StepAnatomyRequest::default()
        }
    }

    fn run(req: &StepAnatomyRequest) -> (Result<StepAnatomy>, Vec<Event>) {
        let cancel = AtomicBool::new(false);
        let mut events = Vec::new();
        let mut on_event = |e: Event| events.push(e);
        let mut job = LabJob::new("step_anatomy", &mut on_event, &cancel);
        let r = run_step_anatomy(req, &mut job);
        drop(job);
        (r, events)
    }

    #[test]
    fn the_cpu_anatomy_times_every_primitive_of_the_step() {
        let (r, events) = run(&request(BackendChoice::Cpu));
        let r = r.unwrap();
        eprintln!("{}", r.table());
        assert_eq!((r.backend.as_str(), r.clock.as_str()), ("cpu", CPU_CLOCK));
        assert_eq!(
            (r.batch, r.steps, r.dataset.as_str()),
            (32, 3, "mnist-sample")
        );
        assert_eq!(
            r.contestants
                .iter()
                .map(|c| c.precision)
                .collect::<Vec<_>>(),
            [Precision::Fp32, Precision::Fp16]
        );
        for c in &r.contestants {
            assert!(!c.launches.is_empty(), "{}: no launches", c.precision);
            let names: Vec<&str> = c.launches.iter().map(|l| l.name.as_str()).collect();
            for want in [
                "gather",
                "conv_block_fwd conv1",
                "conv_block_fwd conv2",
                "conv_block_bwd conv1",
                "conv_block_bwd conv2",
                "dense_fwd",
                "dense_bwd",
                "softmax_xent",
                "adam",
                "scaler_update",
            ] {
                assert!(
                    names.contains(&want),
                    "{}: no {want} in {names:?}",
                    c.precision
                );
            }
            assert_eq!(
                names.contains(&"check_finite"),
                c.precision.uses_loss_scaler(),
                "{names:?}"
            );
            for l in &c.launches {
                assert!(l.ms > 0.0, "{}: {l:?}", c.precision);
                assert!(l.start_ms >= 0.0, "{}: {l:?}", c.precision);
            }
            let sum: f64 = c.launches.iter().map(|l| l.ms).sum();
            assert!(c.sum_ms > 0.0 && sum > 0.0, "{c:?}");
            assert!(
                c.sum_ms <= c.launched_step_ms * 1.05,
                "{}: sum {} ms over the step's {} ms",
                c.precision,
                c.sum_ms,
                c.launched_step_ms
            );
            assert_eq!(c.graph_step_ms, None);
            let phases: Vec<String> = c.phase_totals().into_iter().map(|(p, _)| p).collect();
            assert_eq!(phases, ["forward", "backward", "optimizer"]);
            let phase_of = |name: &str| {
                c.launches
                    .iter()
                    .find(|l| l.name == name)
                    .map(|l| l.phase.as_str())
            };
            assert_eq!(phase_of("conv_block_fwd conv1"), Some("forward"));
            assert_eq!(phase_of("conv_block_bwd conv1"), Some("backward"));
            assert_eq!(phase_of("adam"), Some("optimizer"));
            // In issue order: starts never go backwards.
            assert!(c
                .launches
                .windows(2)
                .all(|w| w[0].start_ms <= w[1].start_ms));
        }
        // The trace and the roles of the report.
        let trace: serde_json::Value = serde_json::from_str(&r.trace_json()).unwrap();
        let launches = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "launch")
            .count();
        assert_eq!(
            launches,
            r.contestants
                .iter()
                .map(|c| c.launches.len())
                .sum::<usize>()
        );
        let roles = r.roles();
        let conv2 = roles
            .iter()
            .find(|x| x.role == "conv_block_fwd conv2")
            .unwrap();
        assert!(conv2.ms.iter().all(Option::is_some), "{conv2:?}");
        // A stage per contestant, then done.
        let stages = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::Lab {
                        event: crate::lab::LabProgress::Stage { .. }
                    }
                )
            })
            .count();
        assert_eq!(stages, 1 + 2 + 1);
    }

    /// Regression (issue 30): the anatomy removed a repeated precision silently while the duel
    /// trained it twice; every job now refuses it, naming it (CLI requests included).
    #[test]
    fn anatomy_duplicate_precisions_are_refused_naming_them() {
        let req = StepAnatomyRequest {
            precisions: vec![Precision::Fp32, Precision::Fp16, Precision::Fp32],
            ..request(BackendChoice::Cpu)
        };
        let e = validate(&req).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid precisions 'fp32': is listed twice; name each once"
        );
        assert!(validate(&request(BackendChoice::Cpu)).is_ok());
    }

    /// Issue 30: a CPU anatomy at batch 8000 (seconds a step, a second or more a
    /// convolution) answered its cancel only at its end; it stops within a convolution's image.
    #[test]
    fn a_cancelled_cpu_anatomy_at_batch_8000_stops_within_a_second() {
        let req = StepAnatomyRequest {
            precisions: vec![Precision::Fp32],
            batch: 8000,
            steps: MAX_STEPS,
            ..request(BackendChoice::Cpu)
        };
        let cancel = AtomicBool::new(false);
        let (r, cancelled_at) = std::thread::scope(|s| {
            let canceller = s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(1500));
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                std::time::Instant::now()
            });
            let mut on_event = |_| {};
            let mut job = LabJob::new("step_anatomy", &mut on_event, &cancel);
            let r = run_step_anatomy(&req, &mut job);
            (r, canceller.join().unwrap())
        });
        let took = cancelled_at.elapsed();
        assert!(matches!(r, Err(ComputeError::Cancelled)), "{r:?}");
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn bad_requests_name_the_field_and_unsupported_precisions_become_notes() {
        for (req, field) in [
            (
                StepAnatomyRequest {
                    batch: 0,
                    ..request(BackendChoice::Cpu)
                },
                "batch",
            ),
            (
                StepAnatomyRequest {
                    steps: 0,
                    ..request(BackendChoice::Cpu)
                },
                "steps",
            ),
            (
                StepAnatomyRequest {
                    steps: MAX_STEPS + 1,
                    ..request(BackendChoice::Cpu)
                },
                "steps",
            ),
            (
                StepAnatomyRequest {
                    precisions: vec![],
                    ..request(BackendChoice::Cpu)
                },
                "precisions",
            ),
            (
                StepAnatomyRequest {
                    batch: 1_000_000,
                    ..request(BackendChoice::Cpu)
                },
                "batch",
            ),
        ] {
            let e = run(&req).0.unwrap_err();
            assert!(
                matches!(&e, ComputeError::BadArgument { name, .. } if name == field),
                "{field}: {e}"
            );
        }
        // TF32 needs tensor cores: the CPU backend leaves it out with a note.
        let req = StepAnatomyRequest {
            precisions: vec![Precision::Tf32, Precision::Fp32],
            steps: 1,
            ..request(BackendChoice::Cpu)
        };
        let (r, events) = run(&req);
        let r = r.unwrap();
        assert_eq!(r.contestants.len(), 1);
        assert_eq!(r.contestants[0].precision, Precision::Fp32);
        assert!(
            r.notes.iter().any(|n| n.starts_with("tf32")),
            "{:?}",
            r.notes
        );
        assert!(events.iter().any(|e| matches!(
            e,
            Event::Lab {
                event: crate::lab::LabProgress::Note { .. }
            }
        )));
        let only_tf32 = StepAnatomyRequest {
            precisions: vec![Precision::Tf32],
            ..request(BackendChoice::Cpu)
        };
        let e = run(&only_tf32).0.unwrap_err();
        assert!(
            matches!(&e, ComputeError::BadArgument { name, .. } if name == "precisions"),
            "{e}"
        );
    }

    /// On a GPU (`SHOWDOWN_REQUIRE_GPU=1 cargo test -p compute --features cuda --lib
    /// lab::anatomy -- --include-ignored`): each launch is a CUDA entry point timed by events,
    /// beside the graph-replayed step.
    #[cfg(feature = "cuda")]
    #[test]
    #[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
    fn the_gpu_anatomy_times_each_kernel_beside_the_graph() {
        if let Err(e) = crate::cuda::CudaBackend::new(GPU) {
            assert!(
                std::env::var_os("SHOWDOWN_REQUIRE_GPU").is_none(),
                "SHOWDOWN_REQUIRE_GPU is set but no usable GPU: {e}"
            );
            eprintln!("skipped: no usable GPU: {e}");
            return;
        }
        let req = StepAnatomyRequest {
            precisions: vec![Precision::Fp32, Precision::Fp16, Precision::Bf16],
            steps: 5,
            batch: 128,
            ..request(BackendChoice::Cuda)
        };
        let (r, _) = run(&req);
        let r = r.unwrap();
        // CUPTI's kernel records wherever libcupti loads (the GPU machine has it), events else.
        // SAFETY: only checks whether the shared library can be opened.
        let cupti = unsafe { cudarc::cupti::sys::is_culib_present() };
        assert_eq!(
            (r.backend.as_str(), r.clock.as_str()),
            ("cuda", if cupti { CUPTI_CLOCK } else { CUDA_CLOCK })
        );
        assert_eq!(r.contestants.len(), 3, "{:?}", r.notes);
        for c in &r.contestants {
            let names: Vec<&str> = c.launches.iter().map(|l| l.name.as_str()).collect();
            assert!(
                names.iter().all(|n| !n.is_empty()
                    && n.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')),
                "{}: not entry points: {names:?}",
                c.precision
            );
            let sfx = match c.precision {
                Precision::Fp32 => "_f32",
                Precision::Fp16 => "_f16",
                _ => "_bf16",
            };
            assert!(
                names
                    .iter()
                    .any(|n| n.starts_with("gather") && n.ends_with(sfx)),
                "{}: {names:?}",
                c.precision
            );
            assert!(names.iter().any(|n| n.contains("conv")), "{names:?}");
            assert!(names.iter().any(|n| n.contains("adam")), "{names:?}");
            assert!(c.launches.iter().all(|l| l.ms >= 0.0 && l.start_ms >= 0.0));
            assert!(c.sum_ms >= 0.0);
            assert!(c.sum_ms <= c.launched_step_ms * 1.05 + 1e-3, "{c:?}");
            let graph = c.graph_step_ms.expect("CUDA graphs are on by default");
            assert!(graph > 0.0, "{c:?}");
            let phases: Vec<String> = c.phase_totals().into_iter().map(|(p, _)| p).collect();
            assert_eq!(phases, ["forward", "backward", "optimizer"], "{c:?}");
        }
        eprintln!("{}", r.table());
    }
}
