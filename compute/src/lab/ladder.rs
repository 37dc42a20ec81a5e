//! The convolution ladder job: on a GPU, rungs 1–5, cuDNN through cudarc (a row saying why
//! when the library is not found) and this GPU's ceilings measured in the same job; always the
//! CPU rows (naive f64 and im2col + GEMM), every row checked against f64. cuDNN through
//! PyTorch (`anchor_kernels.py --part conv`) beside them when asked for and found.
//! `showdown bench conv` and Act III run this same function.

use crate::bench::conv::{parse_peer_convs, Ceilings, ConvBench, ConvLadderReport, LadderLayer};
use crate::error::{ComputeError, Result};
use crate::protocol::ConvLadderRequest;
use crate::types::BackendChoice;

use super::LabJob;

/// The largest GPU batch the job accepts.
pub const MAX_BATCH: usize = 60_000;
/// The largest CPU batch the job accepts (the naive f64 rows are slow).
pub const MAX_CPU_BATCH: usize = 256;

/// The request's layers (all when it names none), or the error naming the unknown one.
pub fn layers(req: &ConvLadderRequest) -> Result<Vec<LadderLayer>> {
    if req.layers.is_empty() {
        return Ok(LadderLayer::ALL.to_vec());
    }
    let mut out = Vec::new();
    for l in &req.layers {
        let layer = LadderLayer::parse(l)?;
        if !out.contains(&layer) {
            out.push(layer);
        }
    }
    Ok(out)
}

/// Checks a request's fields, naming the first that is wrong.
pub fn validate(req: &ConvLadderRequest) -> Result<Vec<LadderLayer>> {
    if req.batch == 0 || req.batch > MAX_BATCH {
        return Err(ComputeError::bad_arg(
            "batch",
            req.batch,
            format!("must be 1 to {MAX_BATCH}"),
        ));
    }
    if req.cpu_batch == 0 || req.cpu_batch > MAX_CPU_BATCH {
        return Err(ComputeError::bad_arg(
            "cpu_batch",
            req.cpu_batch,
            format!("must be 1 to {MAX_CPU_BATCH}"),
        ));
    }
    if req.reps == 0 || req.reps > 1000 {
        return Err(ComputeError::bad_arg("reps", req.reps, "must be 1 to 1000"));
    }
    layers(req)
}

/// The arguments of `anchor_kernels.py` for this request's convolutions.
pub fn peer_args(req: &ConvLadderRequest, layers: &[LadderLayer]) -> Vec<String> {
    let names: Vec<&str> = layers.iter().map(|l| l.name()).collect();
    vec![
        "--part".into(),
        "conv".into(),
        "--batch".into(),
        req.batch.to_string(),
        "--layers".into(),
        names.join(","),
    ]
}

/// Runs the ladder: the GPU rows on GPU `ordinal` where the request and the machine allow
/// (`auto` falls back to the CPU rows alone, saying why in `skipped`), then the CPU rows, then
/// the peer when asked for and `python` is a CUDA-enabled PyTorch.
pub fn run_ladder(
    req: &ConvLadderRequest,
    ordinal: usize,
    python: Option<&str>,
    job: &mut LabJob<'_>,
) -> Result<ConvBench> {
    let layers = validate(req)?;
    let data = crate::data::load(
        &req.dataset,
        req.data_dir.as_deref().map(std::path::Path::new),
    )?;
    let mut ours = match req.backend {
        BackendChoice::Cpu => cpu_only(req, "asked for the CPU rows only".into()),
        BackendChoice::Cuda => gpu_rows(req, &layers, ordinal, &data, job)?,
        BackendChoice::Auto => match gpu_rows(req, &layers, ordinal, &data, job) {
            Ok(r) => r,
            Err(ComputeError::Cancelled) => return Err(ComputeError::Cancelled),
            Err(e) => {
                job.note(format!("the GPU rows are left out: {e}"));
                cpu_only(req, format!("GPU rows: {e}"))
            }
        },
    };
    let total = layers.len();
    for (i, &layer) in layers.iter().enumerate() {
        job.stage(format!("CPU rows of {}", layer.name()), i, total)?;
        let input = crate::conv_ladder::ladder_input(layer, req.cpu_batch, &data, 42)?;
        // Checked before each image of each row: a cancel stops the job within one image.
        let stop = || job.cancelled();
        let (rows, check) = crate::conv_ladder::cpu_rows(layer, &input, req.cpu_batch, 3, &stop)?;
        ours.rows.extend(rows);
        ours.checks.push(check);
        job.check_cancel()?;
    }
    let (peers, peer_failure) = if !req.peers {
        (Vec::new(), None)
    } else if ours.ceilings.copy_gbps <= 0.0 {
        (Vec::new(), Some("the PyTorch rows need a GPU".to_string()))
    } else {
        match python {
            None => (
                Vec::new(),
                Some(
                    "no Python with a CUDA-enabled PyTorch was found (see the peer setting)".into(),
                ),
            ),
            Some(py) => match super::peers::run(
                py,
                super::peers::PeerScript::AnchorKernels,
                &peer_args(req, &layers),
                job,
            )? {
                Ok(out) => (parse_peer_convs(&out), None),
                Err(why) => (Vec::new(), Some(why)),
            },
        }
    };
    // A ladder cancelled during its last rows (or its peer) never answers `ok`.
    job.check_cancel()?;
    Ok(ConvBench {
        ours,
        peers,
        peer_failure,
    })
}

/// A report with no GPU rows (filled with the CPU rows by the caller).
fn cpu_only(req: &ConvLadderRequest, why: String) -> ConvLadderReport {
    ConvLadderReport {
        device: crate::host::cpu_model(),
        batch: req.cpu_batch,
        input_source: format!(
            "{} test images (resized for C1), hidden layers uniform [-1, 1)",
            req.dataset
        ),
        ceilings: Ceilings {
            copy_gbps: 0.0,
            gemm_f16_tflops: None,
            gemm_f32_tflops: None,
            gemm_note: Some("no GPU: no ceilings".into()),
        },
        rows: Vec::new(),
        checks: Vec::new(),
        skipped: vec![why],
    }
}

#[cfg(feature = "cuda")]
fn gpu_rows(
    req: &ConvLadderRequest,
    layers: &[LadderLayer],
    ordinal: usize,
    data: &crate::data::Dataset,
    job: &mut LabJob<'_>,
) -> Result<ConvLadderReport> {
    use crate::cuda::conv_ladder::ConvLab;
    use crate::cuda::conv_ladder::LadderOptions;
    let lab = ConvLab::new(ordinal)?;
    job.watch_gpu(ordinal);
    let opts = LadderOptions {
        batch: req.batch,
        reps: req.reps,
        budget_ms: 1500.0,
        layers: layers.to_vec(),
        check_images: 6,
    };
    let total = layers.len() + 1;
    let mut done = 0;
    lab.run_with(&opts, data, &mut |what| {
        let r = job.stage(format!("GPU rows: {what}"), done, total);
        done += 1;
        r
    })
}

#[cfg(not(feature = "cuda"))]
fn gpu_rows(
    _req: &ConvLadderRequest,
    _layers: &[LadderLayer],
    _ordinal: usize,
    _data: &crate::data::Dataset,
    _job: &mut LabJob<'_>,
) -> Result<ConvLadderReport> {
    Err(super::needs_gpu(
        "the GPU rungs",
        "this build has no CUDA backend",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn the_cpu_ladder_runs_checks_and_names_the_missing_gpu_rows() {
        let req = ConvLadderRequest {
            backend: BackendChoice::Cpu,
            cpu_batch: 2,
            layers: vec!["lab_conv1".into(), "lab_conv2".into()],
            ..ConvLadderRequest::default()
        };
        let mut events = Vec::new();
        let cancel = AtomicBool::new(false);
        let mut on = |e| events.push(e);
        let mut job = LabJob::new("conv_ladder", &mut on, &cancel);
        let b = run_ladder(&req, 0, None, &mut job).unwrap();
        assert_eq!(b.ours.rows.len(), 4, "naive and im2col per layer");
        assert!(b.ours.rows.iter().all(|r| r.ms_p50 > 0.0));
        assert_eq!(b.ours.checks.len(), 2);
        assert!(b.ours.checks.iter().all(|c| c.ok), "{:?}", b.ours.checks);
        assert!(b.ours.skipped.iter().any(|s| s.contains("CPU rows only")));
        drop(job);
        assert!(events.len() >= 2, "a stage per layer");
    }

    #[test]
    fn an_unknown_layer_or_batch_is_named() {
        let bad = ConvLadderRequest {
            layers: vec!["conv9".into()],
            ..ConvLadderRequest::default()
        };
        assert!(validate(&bad).is_err());
        let bad = ConvLadderRequest {
            batch: 0,
            ..ConvLadderRequest::default()
        };
        assert!(validate(&bad).unwrap_err().to_string().contains("batch"));
    }

    #[test]
    fn a_cancelled_ladder_stops() {
        let req = ConvLadderRequest {
            backend: BackendChoice::Cpu,
            cpu_batch: 1,
            ..ConvLadderRequest::default()
        };
        let cancel = AtomicBool::new(true);
        let mut on = |_| {};
        let mut job = LabJob::new("conv_ladder", &mut on, &cancel);
        assert!(matches!(
            run_ladder(&req, 0, None, &mut job),
            Err(ComputeError::Cancelled)
        ));
    }
}
