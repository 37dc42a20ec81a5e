//! The inference job: each variant of the lab CNN (ReLU, GELU, Swish) trained briefly on the
//! CPU backend, its test logits computed there (FP32), then run on the GPU (FP16 tensor-core
//! convolutions, fused bias/activation/pool, dense), held against them, and timed per batch size
//! as five launches and as a replayed CUDA graph; PyTorch on the same weights and images
//! (`infer_peer.py`) beside them when asked for and found. `showdown bench infer` and Act III
//! run this same function.

use crate::error::{ComputeError, Result};
use crate::inference::{parse_batches, InferenceReport};
use crate::model::Activation;
use crate::protocol::strict::check_unique;
use crate::protocol::InferBenchRequest;

use super::LabJob;

/// The items of `list` as the user would write them: `1,32,1024`.
fn listed(list: &[usize]) -> String {
    list.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks a request's fields, naming the first that is wrong; the variants and the batch
/// sizes, in order. A repeated variant or batch size is refused
/// ([`check_unique`](crate::protocol::strict::check_unique), the rule of every job).
pub fn validate(req: &InferBenchRequest) -> Result<(Vec<Activation>, Vec<usize>)> {
    check_unique("activations", &req.activations)?;
    check_unique("batches", &req.batches)?;
    check_unique("compile_batches", &req.compile_batches)?;
    let batches = parse_batches(&req.batches)
        .map_err(|e| ComputeError::bad_arg("batches", listed(&req.batches), e))?;
    if req.train_limit == Some(0) {
        return Err(ComputeError::bad_arg(
            "train_limit",
            0,
            "must be at least 1 (or null for the whole training split)",
        ));
    }
    if req.epochs == 0 || req.epochs > 50 {
        return Err(ComputeError::bad_arg(
            "epochs",
            req.epochs,
            "must be 1 to 50",
        ));
    }
    if req.max_reps == 0
        || !req.budget_ms.is_finite()
        || req.budget_ms <= 0.0
        || req.budget_ms > 60_000.0
    {
        return Err(ComputeError::bad_arg(
            "budget_ms/max_reps",
            format!("{}/{}", req.budget_ms, req.max_reps),
            "must be positive (budget at most 60 s)",
        ));
    }
    let acts = req.activations.clone();
    if acts.is_empty() {
        return Err(ComputeError::bad_arg(
            "activations",
            "",
            "name at least one of relu, gelu, swish",
        ));
    }
    Ok((acts, batches))
}

/// Where the data set's test split is written for the peer, and the weights it reads.
#[cfg(feature = "cuda")]
struct PeerFiles {
    _dir: tempfile::TempDir,
    data_dir: std::path::PathBuf,
    weights: std::path::PathBuf,
}

/// Writes the test split as IDX files and the weights as JSON into a temporary folder.
#[cfg(feature = "cuda")]
fn peer_files(test: &crate::data::Split, weights: &serde_json::Value) -> Result<PeerFiles> {
    let io = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |source| ComputeError::Io { path, source }
    };
    let dir = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let side = crate::model::lab::IMAGE as u32;
    let n = test.len() as u32;
    let mut images = Vec::with_capacity(16 + test.images.len());
    for v in [2051u32, n, side, side] {
        images.extend_from_slice(&v.to_be_bytes());
    }
    images.extend_from_slice(&test.images);
    let mut labels = Vec::with_capacity(8 + test.labels.len());
    for v in [2049u32, n] {
        labels.extend_from_slice(&v.to_be_bytes());
    }
    labels.extend_from_slice(&test.labels);
    let p = dir.path().join("t10k-images-idx3-ubyte");
    std::fs::write(&p, images).map_err(io(&p))?;
    let p = dir.path().join("t10k-labels-idx1-ubyte");
    std::fs::write(&p, labels).map_err(io(&p))?;
    let w = dir.path().join("weights.json");
    std::fs::write(&w, weights.to_string()).map_err(io(&w))?;
    Ok(PeerFiles {
        data_dir: dir.path().to_path_buf(),
        weights: w,
        _dir: dir,
    })
}

/// Runs the inference benchmark on GPU `ordinal`; the peer under `python` when asked for.
#[cfg(feature = "cuda")]
pub fn run_infer_bench(
    req: &InferBenchRequest,
    mut data: crate::data::Dataset,
    ordinal: usize,
    python: Option<&str>,
    weights_out: Option<&std::path::Path>,
    job: &mut LabJob<'_>,
) -> Result<InferenceReport> {
    use crate::backend::cpu::CpuBackend;
    use crate::backend::AdamParams;
    use crate::bench::infer::parse_peer_lines;
    use crate::cuda::infer::CnnInference;
    use crate::inference::{compare_logits, VariantReport};
    use crate::train::{init_params, TrainOptions, Trainer, MEAN, STD};
    use crate::types::Precision;

    let (acts, batches) = validate(req)?;
    let px = data.pixels();
    if let Some(n) = req.train_limit {
        data.train.truncate(n, px);
    }
    if data.train.is_empty() || data.test.is_empty() {
        return Err(ComputeError::bad_file(
            data.name.clone(),
            format!(
                "{} training and {} test images: the inference job needs at least one of each",
                data.train.len(),
                data.test.len()
            ),
        ));
    }
    let images: Vec<f32> = data
        .test
        .images
        .iter()
        .map(|&p| (p as f32 / 255.0 - MEAN) / STD)
        .collect();
    let mut gpu = CnnInference::new(ordinal, &images)?;
    job.watch_gpu(ordinal);
    let mut notes = Vec::new();
    let cap = gpu.capacity();
    let mut batches_run: Vec<usize> = Vec::new();
    for b in batches {
        let b2 = b.min(cap);
        if b2 < b {
            notes.push(format!(
                "batch {b} capped to the {cap} test images of {}",
                data.name
            ));
        }
        if !batches_run.contains(&b2) {
            batches_run.push(b2);
        }
    }
    let cpu = CpuBackend::new(None)?;
    let mut variants = Vec::new();
    let mut weights = Vec::new();
    let total = acts.len() * 2;
    for (i, &act) in acts.iter().enumerate() {
        job.stage(
            format!(
                "{act}: training on the CPU ({} images, {} epoch(s))",
                data.train.len(),
                req.epochs
            ),
            2 * i,
            total,
        )?;
        let opts = TrainOptions {
            precision: Precision::Fp32,
            epochs: req.epochs,
            batch: 128,
            adam: AdamParams::default(),
            seed: req.seed,
            dropout: 0.5,
            activation: act,
        };
        let start = std::time::Instant::now();
        let mut t = Trainer::new(&cpu, opts, &data.train, &data.test, &init_params(req.seed))?;
        t.run(&mut |_| {}, job.cancel_flag())?;
        let train_s = start.elapsed().as_secs_f64();
        let want = t.test_logits()?;
        let params = t.params()?;
        gpu.set_params(&params)?;
        let got = gpu.logits(cap, act)?;
        let check = compare_logits(&got, &want, &data.test.labels);
        job.stage(format!("{act}: timing on the GPU"), 2 * i + 1, total)?;
        let mut rows = Vec::new();
        for &b in &batches_run {
            job.check_cancel()?;
            rows.push(gpu.latency(b, act, false, req.budget_ms, req.max_reps)?);
            match gpu.latency(b, act, true, req.budget_ms, req.max_reps) {
                Ok(r) => rows.push(r),
                Err(e) => notes.push(format!("{act} batch {b}: no CUDA graph row ({e})")),
            }
        }
        variants.push(VariantReport {
            activation: act,
            train_images: data.train.len(),
            epochs: req.epochs,
            train_s,
            check,
            peer_accuracy: None,
            rows,
        });
        weights.push(serde_json::json!({"activation": act, "params": params}));
    }
    let mut report = InferenceReport {
        device: gpu.device().to_string(),
        dataset: data.name.clone(),
        batches: batches_run.clone(),
        variants,
        peers: Vec::new(),
        peer_failure: None,
        notes,
    };
    drop(gpu);
    let weights = serde_json::json!({"mean": MEAN, "std": STD, "variants": weights});
    if let Some(path) = weights_out {
        std::fs::write(path, weights.to_string()).map_err(|source| ComputeError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    if req.peers {
        match python {
            None => {
                report.peer_failure = Some(
                    "no Python with a CUDA-enabled PyTorch was found (see the peer setting)".into(),
                )
            }
            Some(py) => {
                let files = peer_files(&data.test, &weights)?;
                let list = |v: &[usize]| {
                    v.iter()
                        .map(|b| b.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                };
                let args = vec![
                    "--weights".into(),
                    files.weights.display().to_string(),
                    "--data-dir".into(),
                    files.data_dir.display().to_string(),
                    "--batches".into(),
                    list(&batches_run),
                    "--compile-batches".into(),
                    list(&req.compile_batches),
                    "--budget-ms".into(),
                    req.budget_ms.to_string(),
                    "--max-reps".into(),
                    req.max_reps.to_string(),
                ];
                match super::peers::run(py, super::peers::PeerScript::InferPeer, &args, job)? {
                    Ok(out) => {
                        let (rows, acc) = parse_peer_lines(&out);
                        for v in &mut report.variants {
                            v.peer_accuracy = acc
                                .iter()
                                .find(|(x, _)| *x == v.activation)
                                .map(|(_, y)| *y);
                        }
                        report.peers = rows;
                    }
                    Err(why) => report.peer_failure = Some(why),
                }
            }
        }
    }
    Ok(report)
}

/// Without the CUDA backend there is no GPU inference to time.
#[cfg(not(feature = "cuda"))]
pub fn run_infer_bench(
    req: &InferBenchRequest,
    _data: crate::data::Dataset,
    _ordinal: usize,
    _python: Option<&str>,
    _weights_out: Option<&std::path::Path>,
    _job: &mut LabJob<'_>,
) -> Result<InferenceReport> {
    validate(req)?;
    Err(super::needs_gpu(
        "inference latency",
        "this build has no CUDA backend",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_batches_epochs_or_variants_are_named() {
        let r = InferBenchRequest {
            batches: vec![0],
            ..InferBenchRequest::default()
        };
        assert!(validate(&r).unwrap_err().to_string().contains("batches"));
        let r = InferBenchRequest {
            epochs: 0,
            ..InferBenchRequest::default()
        };
        assert!(validate(&r).unwrap_err().to_string().contains("epochs"));
        let r = InferBenchRequest {
            activations: vec![],
            ..InferBenchRequest::default()
        };
        assert!(validate(&r)
            .unwrap_err()
            .to_string()
            .contains("activations"));
        let r = InferBenchRequest {
            activations: vec![Activation::Gelu, Activation::Relu],
            ..InferBenchRequest::default()
        };
        assert_eq!(
            validate(&r).unwrap().0,
            vec![Activation::Gelu, Activation::Relu]
        );
        let r = InferBenchRequest {
            batches: vec![4, 0],
            ..InferBenchRequest::default()
        };
        let m = validate(&r).unwrap_err().to_string();
        assert!(m.starts_with("invalid batches '4,0': "), "{m}");
    }

    /// Regression (issue 30): `train_limit: 0` said `'Some(0)'`, Rust's debug text, and only
    /// after training had been set up on the GPU.
    #[test]
    fn infer_train_limit_0_is_refused_without_debug_text() {
        let r = InferBenchRequest {
            train_limit: Some(0),
            ..InferBenchRequest::default()
        };
        let e = validate(&r).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput);
        assert_eq!(
            e.to_string(),
            "invalid train_limit '0': must be at least 1 (or null for the whole training split)"
        );
        let r = InferBenchRequest {
            train_limit: None,
            ..InferBenchRequest::default()
        };
        assert!(validate(&r).is_ok());
    }

    /// Regression (issue 30): the inference job removed a repeated variant silently while the
    /// duel trained it twice; every job now refuses it, naming it.
    #[test]
    fn infer_duplicate_activations_or_batches_are_refused_naming_them() {
        let r = InferBenchRequest {
            activations: vec![Activation::Gelu, Activation::Relu, Activation::Gelu],
            ..InferBenchRequest::default()
        };
        assert_eq!(
            validate(&r).unwrap_err().to_string(),
            "invalid activations 'gelu': is listed twice; name each once"
        );
        let r = InferBenchRequest {
            batches: vec![32, 1, 32],
            ..InferBenchRequest::default()
        };
        assert_eq!(
            validate(&r).unwrap_err().to_string(),
            "invalid batches '32': is listed twice; name each once"
        );
    }
}
