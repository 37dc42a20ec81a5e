//! `showdown bench infer`: the CNN variant switch. Each variant of the lab CNN (ReLU, GELU,
//! Swish after the convolutions) is trained on the CPU backend, its logits on the test split
//! computed there (FP32), then run on the GPU (FP16: rung-4 tensor-core convolutions, fused
//! bias/activation/pool, dense) and held against them; then timed per batch size as five
//! launches and as a replayed CUDA graph. With `--peer bench/infer_peer.py`, PyTorch runs the
//! same weights on the same images at the same batch sizes in the same call. The report, the
//! peer's lines and the table are the core's (`compute::inference`, `compute::bench::infer`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use compute::model::Activation;

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

/// Trains, checks, times, runs the peer, prints.
#[cfg(feature = "cuda")]
pub fn run(a: InferArgs) -> Result<()> {
    use anyhow::Context;
    use compute::backend::cpu::CpuBackend;
    use compute::backend::AdamParams;
    use compute::bench::infer::parse_peer_lines;
    use compute::cuda::infer::CnnInference;
    use compute::inference::{compare_logits, parse_batches, InferenceReport, VariantReport};
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
                let (rows, acc) = parse_peer_lines(&out);
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
        print!("{}", report.table());
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
