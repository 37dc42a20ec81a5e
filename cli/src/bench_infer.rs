//! `showdown bench infer`: the CNN variant switch. Each variant of the lab CNN (ReLU, GELU,
//! Swish after the convolutions) is trained on the CPU backend, its logits on the test split
//! computed there (FP32), then run on the GPU (FP16: rung-4 tensor-core convolutions, fused
//! bias/activation/pool, dense) and held against them; then timed per batch size as five
//! launches and as a replayed CUDA graph. With `--peer bench/infer_peer.py`, PyTorch runs the
//! same weights on the same images at the same batch sizes in the same call.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use compute::inference::{InferenceReport, LatencyRow};
use compute::model::Activation;
use serde::Deserialize;

/// Options of `bench infer`.
#[derive(Debug, Args)]
pub struct InferArgs {
    /// Variants, comma-separated: relu, gelu, swish.
    #[arg(long, value_delimiter = ',', default_value = "relu,gelu,swish")]
    pub activations: Vec<Activation>,
    /// Batch sizes, comma-separated (capped to the test split).
    #[arg(long, value_delimiter = ',', default_value = "1,32,128,1024,10000")]
    pub batches: Vec<usize>,
    /// mnist-sample (embedded), fashion-mnist or mnist.
    #[arg(long, default_value = "mnist-sample")]
    pub dataset: String,
    /// Read the data set's IDX files from this folder.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Training epochs per variant (CPU backend, FP32, batch 128).
    #[arg(long, default_value_t = 1)]
    pub epochs: usize,
    /// Train on the first N training images.
    #[arg(long)]
    pub train_limit: Option<usize>,
    /// Seed of the weights, shuffles and dropout.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// GPU ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Time budget per row, ms (at least 20 passes, at most --max-reps).
    #[arg(long, default_value_t = 300.0)]
    pub budget_ms: f64,
    /// Timed passes at most per row.
    #[arg(long, default_value_t = 2000)]
    pub max_reps: usize,
    /// The PyTorch peer script (bench/infer_peer.py), run on the same weights after ours.
    #[arg(long)]
    pub peer: Option<PathBuf>,
    /// Batches at which the peer also times torch.compile (slow to compile), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub compile_batches: Vec<usize>,
    /// Python interpreter with PyTorch, for the peer.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Where to write the trained weights (JSON) the peer reads (default: a temporary file).
    #[arg(long)]
    pub weights_out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON here.
    #[arg(long)]
    pub json_out: Option<PathBuf>,
}

/// A JSON line of the peer.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum PeerLine {
    Latency {
        #[serde(rename = "impl")]
        implementation: String,
        activation: Activation,
        batch: usize,
        reps: usize,
        p50_ms: f64,
        p90_ms: f64,
        p99_ms: f64,
    },
    Accuracy {
        activation: Activation,
        accuracy: f64,
    },
}

/// The peer's latency rows and accuracies (other and broken lines are skipped).
pub fn parse_peer(stdout: &str) -> (Vec<LatencyRow>, Vec<(Activation, f64)>) {
    let (mut rows, mut acc) = (Vec::new(), Vec::new());
    for l in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        match serde_json::from_str::<PeerLine>(l) {
            Ok(PeerLine::Latency {
                implementation,
                activation,
                batch,
                reps,
                p50_ms,
                p90_ms,
                p99_ms,
            }) if p50_ms.is_finite() && p50_ms > 0.0 && batch > 0 => rows.push(LatencyRow {
                implementation,
                activation,
                batch,
                reps,
                p50_ms,
                p90_ms,
                p99_ms,
                images_per_s: batch as f64 / (p50_ms * 1e-3),
            }),
            Ok(PeerLine::Accuracy {
                activation,
                accuracy,
            }) => acc.push((activation, accuracy)),
            _ => {}
        }
    }
    (rows, acc)
}

/// The table: per variant the check, then per batch ours (launches, graph) beside the fastest
/// PyTorch row, then every peer row.
pub fn table(r: &InferenceReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} — lab CNN inference (FP16 activations, FP32 accumulation), {} test images",
        r.device, r.dataset
    );
    let _ = writeln!(
        o,
        "{:<6} {:>6} | {:>10} {:>10} {:>10} | {:>10} {:>10} | {:>10} {:<34} | {:>7}",
        "act",
        "batch",
        "launch p50",
        "p90",
        "p99",
        "graph p50",
        "p99",
        "torch best",
        "(which)",
        "ours vs"
    );
    for v in &r.variants {
        for &b in &r.batches {
            let ours = |name: &str| {
                v.rows
                    .iter()
                    .find(|x| x.batch == b && x.implementation == name)
            };
            let (l, g) = (ours("showdown_fp16_launches"), ours("showdown_fp16_graph"));
            let best = r
                .peers
                .iter()
                .filter(|p| p.activation == v.activation && p.batch == b)
                .min_by(|a, c| a.p50_ms.total_cmp(&c.p50_ms));
            let our_best = [l, g]
                .into_iter()
                .flatten()
                .map(|x| x.p50_ms)
                .fold(f64::INFINITY, f64::min);
            let ms = |x: Option<&LatencyRow>, f: fn(&LatencyRow) -> f64| {
                x.map_or("–".into(), |x| format!("{:.4}", f(x)))
            };
            let _ = writeln!(
                o,
                "{:<6} {:>6} | {:>10} {:>10} {:>10} | {:>10} {:>10} | {:>10} {:<34} | {:>7}",
                v.activation.name(),
                b,
                ms(l, |x| x.p50_ms),
                ms(l, |x| x.p90_ms),
                ms(l, |x| x.p99_ms),
                ms(g, |x| x.p50_ms),
                ms(g, |x| x.p99_ms),
                ms(best, |x| x.p50_ms),
                best.map_or("", |x| x.implementation.as_str()),
                best.filter(|_| our_best.is_finite())
                    .map_or("–".into(), |x| format!("{:.2}x", x.p50_ms / our_best)),
            );
        }
    }
    let _ = writeln!(o, "\ncorrectness and accuracy (GPU FP16 vs CPU FP32 logits of the same weights, whole test split):");
    for v in &r.variants {
        let c = &v.check;
        let _ = writeln!(
            o,
            "  {:<6} trained {} epoch(s) on {} images in {:.1} s | acc CPU {:.4} GPU {:.4} PyTorch {} | argmax agree {:.2}% | max |Δlogit| {:.3e} (max |logit| {:.1}) | {}",
            v.activation.name(),
            v.epochs,
            v.train_images,
            v.train_s,
            c.cpu_accuracy,
            c.gpu_accuracy,
            v.peer_accuracy.map_or("–".into(), |a| format!("{a:.4}")),
            c.argmax_agreement * 100.0,
            c.max_abs_diff,
            c.max_abs_logit,
            if c.ok { "ok" } else { "FAIL" }
        );
    }
    if !r.peers.is_empty() {
        let _ = writeln!(o, "\nPyTorch rows (same weights, same images, same call):");
        for p in &r.peers {
            let _ = writeln!(
                o,
                "  {:<6} {:>6} {:<34} p50 {:.4}  p90 {:.4}  p99 {:.4} ms  ({} passes)",
                p.activation.name(),
                p.batch,
                p.implementation,
                p.p50_ms,
                p.p90_ms,
                p.p99_ms,
                p.reps
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if let Some(f) = &r.peer_failure {
        let _ = writeln!(o, "peer failed: {f}");
    }
    o
}

/// Trains, checks, times, runs the peer, prints.
#[cfg(feature = "cuda")]
pub fn run(a: InferArgs) -> Result<()> {
    use compute::backend::cpu::CpuBackend;
    use compute::backend::AdamParams;
    use compute::cuda::infer::CnnInference;
    use compute::inference::{compare_logits, parse_batches, VariantReport};
    use compute::train::{init_params, TrainOptions, Trainer, MEAN, STD};
    use compute::types::Precision;
    use compute::ComputeError;
    use std::sync::atomic::AtomicBool;

    let batches = parse_batches(&a.batches)
        .map_err(|e| ComputeError::bad_arg("--batches", format!("{:?}", a.batches), e))?;
    if a.epochs == 0 || a.max_reps == 0 || !a.budget_ms.is_finite() || a.budget_ms <= 0.0 {
        return Err(ComputeError::bad_arg(
            "--epochs/--max-reps/--budget-ms",
            format!("{}/{}/{}", a.epochs, a.max_reps, a.budget_ms),
            "must be positive",
        )
        .into());
    }
    // Each activation once, in the order given (`relu,gelu,relu` runs ReLU once).
    let mut acts: Vec<Activation> = Vec::new();
    for act in &a.activations {
        if !acts.contains(act) {
            acts.push(*act);
        }
    }
    if acts.is_empty() {
        return Err(ComputeError::bad_arg(
            "--activations",
            "",
            "name at least one of relu, gelu, swish",
        )
        .into());
    }
    let mut data = compute::data::load(&a.dataset, a.data_dir.as_deref())?;
    let px = data.pixels();
    if let Some(n) = a.train_limit {
        data.train.truncate(n, px);
    }
    if data.train.is_empty() || data.test.is_empty() {
        return Err(ComputeError::bad_arg(
            "--train-limit",
            format!("{:?}", a.train_limit),
            "no training images left",
        )
        .into());
    }
    let images: Vec<f32> = data
        .test
        .images
        .iter()
        .map(|&p| (p as f32 / 255.0 - MEAN) / STD)
        .collect();
    let mut gpu = CnnInference::new(a.device, &images)?;
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
    for &act in &acts {
        eprintln!(
            "{act}: training on the CPU ({} images, {} epoch(s)) …",
            data.train.len(),
            a.epochs
        );
        let opts = TrainOptions {
            precision: Precision::Fp32,
            epochs: a.epochs,
            batch: 128,
            adam: AdamParams::default(),
            seed: a.seed,
            dropout: 0.5,
            activation: act,
        };
        let start = std::time::Instant::now();
        let mut t = Trainer::new(&cpu, opts, &data.train, &data.test, &init_params(a.seed))?;
        t.run(&mut |_| {}, &AtomicBool::new(false))?;
        let train_s = start.elapsed().as_secs_f64();
        let want = t.test_logits()?;
        let params = t.params()?;
        gpu.set_params(&params)?;
        let got = gpu.logits(cap, act)?;
        let check = compare_logits(&got, &want, &data.test.labels);
        eprintln!(
            "{act}: GPU vs CPU logits {}; timing …",
            if check.ok { "ok" } else { "FAIL" }
        );
        let mut rows = Vec::new();
        for &b in &batches_run {
            rows.push(gpu.latency(b, act, false, a.budget_ms, a.max_reps)?);
            match gpu.latency(b, act, true, a.budget_ms, a.max_reps) {
                Ok(r) => rows.push(r),
                Err(e) => notes.push(format!("{act} batch {b}: no CUDA graph row ({e})")),
            }
        }
        variants.push(VariantReport {
            activation: act,
            train_images: data.train.len(),
            epochs: a.epochs,
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
    let weights_json = serde_json::json!({"mean": MEAN, "std": STD, "variants": weights});
    let tmp;
    let weights_path = match &a.weights_out {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::Builder::new().suffix(".json").tempfile()?;
            tmp.path().to_path_buf()
        }
    };
    std::fs::write(&weights_path, serde_json::to_string(&weights_json)?)
        .with_context(|| format!("writing {}", weights_path.display()))?;
    if let Some(script) = &a.peer {
        match run_peer(&a, script, &weights_path, &batches_run) {
            Ok(out) => {
                let (rows, acc) = parse_peer(&out);
                for v in &mut report.variants {
                    v.peer_accuracy = acc
                        .iter()
                        .find(|(x, _)| *x == v.activation)
                        .map(|(_, y)| *y);
                }
                report.peers = rows;
            }
            Err(e) => report.peer_failure = Some(e),
        }
    }
    if let Some(p) = &a.json_out {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    if report.variants.iter().any(|v| !v.check.ok) {
        anyhow::bail!("the GPU's logits disagree with the CPU's beyond the bounds");
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn run_peer(
    a: &InferArgs,
    script: &std::path::Path,
    weights: &std::path::Path,
    batches: &[usize],
) -> Result<String, String> {
    if !script.is_file() {
        return Err(format!("{}: no such file", script.display()));
    }
    let data_dir = a
        .data_dir
        .as_ref()
        .ok_or("the peer reads the test images from --data-dir (give the data set's folder)")?;
    let list = |v: &[usize]| {
        v.iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let args: Vec<std::ffi::OsString> = vec![
        "--weights".into(),
        weights.into(),
        "--data-dir".into(),
        data_dir.into(),
        "--batches".into(),
        list(batches).into(),
        "--budget-ms".into(),
        a.budget_ms.to_string().into(),
        "--max-reps".into(),
        a.max_reps.to_string().into(),
        "--compile-batches".into(),
        list(&a.compile_batches).into(),
    ];
    let out = crate::peer::run_script(&a.python, script, args)?;
    crate::peer::stdout_or_failure(script, out)
}

/// Without the CUDA backend there is no GPU inference to time.
#[cfg(not(feature = "cuda"))]
pub fn run(_: InferArgs) -> Result<()> {
    Err(crate::peer::no_cuda_backend())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_lines_become_rows_and_accuracies() {
        let out = r#"{"kind": "accuracy", "activation": "gelu", "accuracy": 0.87, "images": 10000}
{"kind": "latency", "impl": "pytorch_graph_fp16", "activation": "gelu", "batch": 32, "reps": 500, "p50_ms": 0.05, "p90_ms": 0.06, "p99_ms": 0.07, "images_per_s": 640000}
{"kind": "latency", "impl": "pytorch_eager_fp16", "activation": "tanh", "batch": 32, "reps": 5, "p50_ms": 0.1, "p90_ms": 0.1, "p99_ms": 0.1}
{"kind": "latency", "impl": "pytorch_eager_fp16", "activation": "relu", "batch": 0, "reps": 5, "p50_ms": 0.1, "p90_ms": 0.1, "p99_ms": 0.1}
Traceback (most recent call last):"#;
        let (rows, acc) = parse_peer(out);
        assert_eq!(acc, vec![(Activation::Gelu, 0.87)]);
        assert_eq!(
            rows.len(),
            1,
            "unknown activation and batch 0 are dropped: {rows:?}"
        );
        assert_eq!((rows[0].batch, rows[0].reps), (32, 500));
        assert!((rows[0].images_per_s - 640_000.0).abs() < 1e-6);
        let report = InferenceReport {
            device: "GPU".into(),
            dataset: "d".into(),
            batches: vec![32],
            variants: vec![],
            peers: rows,
            peer_failure: Some("x".into()),
            notes: vec!["n".into()],
        };
        let t = table(&report);
        assert!(
            t.contains("pytorch_graph_fp16")
                && t.contains("peer failed: x")
                && t.contains("note: n"),
            "{t}"
        );
    }
}
