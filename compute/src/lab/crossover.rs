//! The precision crossover job (issue 39): the same GEMM at growing square sizes in every
//! precision, and the lab CNN's own GEMMs, each timed (median of several) and checked against
//! an f64 product of the same rounded operands; the ceilings (copy bandwidth, a call's fixed
//! cost, each precision's best rate) measured in the same run; where each precision starts to
//! pay, in sentences written from the numbers ([`crate::bench::crossover`]).
//!
//! On a GPU the products are cuBLASLt's ([`crate::cuda::crossover`]); on the CPU they are the
//! CPU backend's: FP32 through `matrixmultiply`, BF16 on `vdpbf16ps` where the CPU has
//! AVX512-BF16 (widened to FP32 elsewhere) and FP16 widened to FP32 (`gemm16`), row blocks
//! spread over the rayon pool. `showdown bench crossover` and Act II run this same function.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use half::{bf16, f16};
use rayon::prelude::*;

use crate::backend::gemm16::{self, Kernel, Mat, Packed, MR};
use crate::bench::crossover::{
    fill_step_speedups, parse_peer_lines, tolerance, CrossoverReport, GemmPoint, GemmShape, Regime,
    SkippedPrecision, StepPoint, ORDER, STEP_BATCHES,
};
use crate::error::{ComputeError, Result};
use crate::protocol::CrossoverRequest;
use crate::types::{BackendChoice, Precision};

use super::LabJob;
use crate::gemm_sweep::{check, median, operands, plan, report};

/// Time budget of one CPU point, ms: the reps are as many as fit, within
/// [`MIN_REPS`]..=[`MAX_REPS`].
const CPU_BUDGET_MS: f64 = 150.0;
/// Timed products at least per point (the median of these).
pub const MIN_REPS: usize = 3;
/// Timed products at most per point.
pub const MAX_REPS: usize = 50;

/// Runs the crossover: on GPU `ordinal` where the request and the machine allow (`auto` falls
/// back to the CPU, saying why in a note and in `skipped`), else on the CPU; then PyTorch when
/// asked for and `python` is a CUDA-enabled PyTorch.
pub fn run_crossover(
    req: &CrossoverRequest,
    ordinal: usize,
    python: Option<&str>,
    job: &mut LabJob<'_>,
) -> Result<CrossoverReport> {
    let mut report = match req.backend {
        BackendChoice::Cpu => cpu_sweep(req, job)?,
        BackendChoice::Cuda => gpu_sweep(req, ordinal, job)?,
        BackendChoice::Auto => match gpu_sweep(req, ordinal, job) {
            Ok(r) => r,
            Err(ComputeError::Cancelled) => return Err(ComputeError::Cancelled),
            Err(e @ ComputeError::BadArgument { .. }) => return Err(e),
            Err(e) => {
                job.note(format!("the CPU runs the sweep: {e}"));
                cpu_sweep(req, job)?
            }
        },
    };
    if req.include_peer {
        if report.backend != "cuda" {
            report.peer_failure = Some("the PyTorch rows need a GPU".into());
        } else {
            match python {
                None => {
                    report.peer_failure = Some(
                        "no Python with a CUDA-enabled PyTorch was found (see the peer setting)"
                            .into(),
                    )
                }
                Some(py) => {
                    let sizes = report.sizes();
                    match super::peers::run(
                        py,
                        super::peers::PeerScript::CrossoverPeer,
                        &peer_args(&sizes, &report.precisions()),
                        job,
                    )? {
                        Ok(out) => {
                            report.peers = parse_peer_lines(&out);
                            for line in out.lines().filter(|l| l.contains("\"skip\"")) {
                                job.note(format!("PyTorch: {}", line.trim()));
                            }
                        }
                        Err(why) => report.peer_failure = Some(why),
                    }
                }
            }
        }
    }
    if req.include_steps {
        if report.backend == "cuda" {
            training_steps(req, &mut report, job)?;
        } else {
            report.step_note = Some(
                "the CPU sweep leaves out the whole training step at batches 128 to 8192 \
                 (minutes on a CPU); Act III's step anatomy measures the CPU's"
                    .into(),
            );
        }
    }
    job.check_cancel()?;
    Ok(report)
}

/// The lab CNN's whole training step per precision at [`STEP_BATCHES`] (capped at the
/// embedded sample's training images), from the step anatomy on the GPU: the graph-replayed
/// step where there is one, else the launched step. A batch that cannot run is a note.
fn training_steps(
    req: &CrossoverRequest,
    report: &mut CrossoverReport,
    job: &mut LabJob<'_>,
) -> Result<()> {
    use crate::protocol::StepAnatomyRequest;
    let dataset = StepAnatomyRequest::default().dataset;
    let images = crate::data::load(&dataset, None)?.train.len();
    let precisions: Vec<Precision> = ORDER
        .iter()
        .copied()
        .filter(|p| req.precisions.contains(p))
        .collect();
    let mut missing = Vec::new();
    for b in STEP_BATCHES {
        let batch = b.min(images);
        if batch < b {
            missing.push(format!(
                "batch {b} runs as {batch}, the {dataset} training images"
            ));
        }
        let sreq = StepAnatomyRequest {
            precisions: precisions.clone(),
            backend: BackendChoice::Cuda,
            batch,
            steps: 5,
            ..StepAnatomyRequest::default()
        };
        match super::anatomy::run_step_anatomy(&sreq, job) {
            Ok(a) => {
                for c in &a.contestants {
                    let ms = c.graph_step_ms.unwrap_or(c.launched_step_ms);
                    report.steps.push(StepPoint {
                        precision: c.precision,
                        batch: a.batch,
                        ms,
                        images_per_s: if ms > 0.0 {
                            a.batch as f64 / (ms * 1e-3)
                        } else {
                            0.0
                        },
                        speedup_vs_fp32: None,
                    });
                }
                for n in a.notes {
                    if !missing.contains(&n) {
                        missing.push(n);
                    }
                }
            }
            Err(ComputeError::Cancelled) => return Err(ComputeError::Cancelled),
            Err(e) => {
                job.note(format!(
                    "the training step at batch {batch} is left out: {e}"
                ));
                missing.push(format!("batch {batch}: {e}"));
            }
        }
    }
    fill_step_speedups(&mut report.steps);
    if !missing.is_empty() {
        report.step_note = Some(missing.join("; "));
    }
    Ok(())
}

/// The arguments of `crossover_peer.py`.
pub fn peer_args(sizes: &[usize], precisions: &[Precision]) -> Vec<String> {
    vec![
        "--sizes".into(),
        sizes
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(","),
        "--precisions".into(),
        precisions
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(","),
    ]
}

#[cfg(feature = "cuda")]
fn gpu_sweep(
    req: &CrossoverRequest,
    ordinal: usize,
    job: &mut LabJob<'_>,
) -> Result<CrossoverReport> {
    req.validate(false)?;
    crate::cuda::crossover::sweep(req, ordinal, job)
}

#[cfg(not(feature = "cuda"))]
fn gpu_sweep(
    req: &CrossoverRequest,
    _ordinal: usize,
    _job: &mut LabJob<'_>,
) -> Result<CrossoverReport> {
    req.validate(false)?;
    Err(super::needs_gpu(
        "the GPU sweep (cuBLASLt)",
        "this build has no CUDA backend",
    ))
}

/// Rows of `C` per task of a CPU product: enough tasks for the pool, each small enough for a
/// cancel to be seen within a fraction of a second, a multiple of [`MR`].
fn rows_per_task(m: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    m.div_ceil(threads * 4).max(64).div_ceil(MR) * MR
}

/// `C = A·B` in f32 through `matrixmultiply`, row blocks over the pool; stops between blocks
/// once `stop` is set.
fn sgemm_par(a: &[f32], b: &[f32], c: &mut [f32], s: GemmShape, stop: &AtomicBool) -> Result<()> {
    let GemmShape { m, n, k } = s;
    if a.len() < m * k || b.len() < k * n || c.len() < m * n || n == 0 {
        return Err(bad("sgemm: operands shorter than the shape".into()));
    }
    let rows = rows_per_task(m);
    c[..m * n]
        .par_chunks_mut(rows * n)
        .enumerate()
        .try_for_each(|(t, cs)| {
            if stop.load(Ordering::Relaxed) {
                return Err(ComputeError::Cancelled);
            }
            let r = cs.len() / n;
            let a = &a[t * rows * k..][..r * k];
            // SAFETY: `a` holds r·k elements (row-major r×k), `b` at least k·n (row-major
            // k×n, checked above), `cs` r·n (row-major r×n); the strides describe exactly
            // those matrices.
            unsafe {
                matrixmultiply::sgemm(
                    r,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    k as isize,
                    1,
                    b.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    cs.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            Ok(())
        })
}

/// `C = A·B` on 16-bit operands through the CPU backend's `gemm16` (`B` packed once, each
/// row block of `A` packed by its task); stops between blocks once `stop` is set.
fn gemm16_par<T: gemm16::Elem>(
    kernel: Kernel,
    a: &[T],
    b: &[T],
    c: &mut [f32],
    s: GemmShape,
    stop: &AtomicBool,
) -> Result<()> {
    let GemmShape { m, n, k } = s;
    if a.len() < m * k || b.len() < k * n || c.len() < m * n || n == 0 {
        return Err(bad("gemm16: operands shorter than the shape".into()));
    }
    let mut pb = Packed::default();
    pb.pack_b(kernel, Mat::row_major(&b[..k * n], k, n))?;
    let rows = rows_per_task(m);
    c[..m * n]
        .par_chunks_mut(rows * n)
        .enumerate()
        .try_for_each(|(t, cs)| {
            if stop.load(Ordering::Relaxed) {
                return Err(ComputeError::Cancelled);
            }
            let r = cs.len() / n;
            let mut pa = Packed::default();
            pa.pack_a(kernel, Mat::row_major(&a[t * rows * k..][..r * k], r, k))?;
            gemm16::gemm_packed(&pa, &pb, false, cs, n)
        })
}

fn bad(reason: String) -> ComputeError {
    ComputeError::Backend {
        backend: "cpu".into(),
        reason,
    }
}

/// Times `run` (already warmed up once by the caller): as many runs as fit in `budget_ms`
/// after the first, within [`MIN_REPS`]..=[`MAX_REPS`]; the median in ms and the count. A
/// cancel is seen between runs (and inside a run by `run` itself).
pub fn time_median(
    budget_ms: f64,
    first_ms: f64,
    cancel: &AtomicBool,
    run: &mut dyn FnMut() -> Result<f64>,
) -> Result<(f64, usize)> {
    let reps = if first_ms > 0.0 {
        ((budget_ms / first_ms) as usize).clamp(MIN_REPS, MAX_REPS)
    } else {
        MAX_REPS
    };
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        if cancel.load(Ordering::Relaxed) {
            return Err(ComputeError::Cancelled);
        }
        samples.push(run()?);
    }
    Ok((median(&mut samples), reps))
}

/// The CPU's copy bandwidth: a 64 MiB buffer copied (read and written), best of five, GB/s.
pub fn cpu_copy_gbps() -> f64 {
    let len = 16 << 20;
    let src = vec![1.0f32; len];
    let mut dst = vec![0.0f32; len];
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (2 * len * 4) as f64 / best.max(1e-9) / 1e9
}

/// What a CPU cannot run, and why.
fn cpu_skip(p: Precision) -> Option<&'static str> {
    match p {
        Precision::Tf32 => Some(
            "the CPU has no TF32 arithmetic (a GPU tensor-core mode): FP32 is the CPU's \
             widest and only 32-bit product",
        ),
        Precision::Fp8 => Some(
            "the CPU has no FP8 arithmetic: the CPU backend's FP8 rounds the operands to \
             E4M3 and multiplies in FP32, which would time FP32 again",
        ),
        _ => None,
    }
}

/// The CPU sweep: the request's (or the default small) sizes and the CNN's GEMMs in FP32,
/// BF16 and FP16 on the CPU backend's GEMMs; TF32 and FP8 reported skipped with the reason.
pub fn cpu_sweep(req: &CrossoverRequest, job: &mut LabJob<'_>) -> Result<CrossoverReport> {
    req.validate(true)?;
    let sizes = req.sizes_for(true);
    let plan = plan(&sizes, req.include_cnn);
    let mut skipped = Vec::new();
    let mut run: Vec<Precision> = Vec::new();
    for p in ORDER.iter().copied().filter(|p| req.precisions.contains(p)) {
        match cpu_skip(p) {
            Some(why) => {
                job.note(format!("{} skipped: {why}", p.as_str()));
                skipped.push(SkippedPrecision {
                    precision: p,
                    reason: why.into(),
                });
            }
            None => run.push(p),
        }
    }
    let bf16_kernel = if gemm16::bf16_dot_available() {
        Kernel::Bf16Dot
    } else {
        Kernel::Wide
    };
    let threads = rayon::current_num_threads();
    let library = format!(
        "CPU backend, {threads} thread(s): FP32 matrixmultiply; BF16 {}; FP16 widened to FP32",
        if bf16_kernel == Kernel::Bf16Dot {
            "vdpbf16ps (AVX512-BF16)"
        } else {
            "widened to FP32 (no AVX512-BF16 here)"
        }
    );
    job.stage("measuring the copy bandwidth", 0, 1)?;
    let copy_gbps = cpu_copy_gbps();
    let total = run.len() * plan.len();
    let mut points = Vec::with_capacity(total);
    let cancel = job.cancel_flag();
    for (i, (label, shape)) in plan.iter().enumerate() {
        let a32 = operands(shape.m * shape.k, 1 + i as u64);
        let b32 = operands(shape.k * shape.n, 1000 + i as u64);
        for &p in &run {
            let what = match label {
                Some(l) => format!("{} {l} {}", p.as_str(), shape.text()),
                None => format!("{} N = {}", p.as_str(), shape.n),
            };
            job.stage(what, points.len(), total)?;
            let point = cpu_point(p, *shape, label.clone(), &a32, &b32, bf16_kernel, cancel)?;
            points.push(point);
        }
    }
    let report = report(
        crate::host::cpu_model(),
        "cpu",
        library,
        points,
        skipped,
        copy_gbps,
    );
    job.stage("done", total, total)?;
    Ok(report)
}

/// One CPU point: the operands rounded to the precision, one warm-up product (checked against
/// f64), then the timed ones.
fn cpu_point(
    p: Precision,
    shape: GemmShape,
    label: Option<String>,
    a32: &[f32],
    b32: &[f32],
    bf16_kernel: Kernel,
    cancel: &AtomicBool,
) -> Result<GemmPoint> {
    let GemmShape { m, n, k } = shape;
    let mut c = vec![0.0f32; m * n];
    let out_unit = 2f64.powi(-24);
    let tol = tolerance(p, k, out_unit);
    let (check, (ms, reps), in_bytes) = match p {
        Precision::Bf16 => {
            let a: Vec<bf16> = a32.iter().map(|&x| bf16::from_f32(x)).collect();
            let b: Vec<bf16> = b32.iter().map(|&x| bf16::from_f32(x)).collect();
            let go = |c: &mut [f32]| -> Result<f64> {
                let t = Instant::now();
                gemm16_par(bf16_kernel, &a, &b, c, shape, cancel)?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            };
            let first = go(&mut c)?;
            let chk = check(
                shape,
                &|i, kk| f64::from(a[i * k + kk].to_f32()),
                &|kk, j| f64::from(b[kk * n + j].to_f32()),
                &|i, j| f64::from(c[i * n + j]),
                tol,
            );
            let timed = time_median(CPU_BUDGET_MS, first, cancel, &mut || go(&mut c))?;
            (chk, timed, 2.0)
        }
        Precision::Fp16 => {
            let a: Vec<f16> = a32.iter().map(|&x| f16::from_f32(x)).collect();
            let b: Vec<f16> = b32.iter().map(|&x| f16::from_f32(x)).collect();
            let go = |c: &mut [f32]| -> Result<f64> {
                let t = Instant::now();
                gemm16_par(Kernel::Wide, &a, &b, c, shape, cancel)?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            };
            let first = go(&mut c)?;
            let chk = check(
                shape,
                &|i, kk| f64::from(a[i * k + kk].to_f32()),
                &|kk, j| f64::from(b[kk * n + j].to_f32()),
                &|i, j| f64::from(c[i * n + j]),
                tol,
            );
            let timed = time_median(CPU_BUDGET_MS, first, cancel, &mut || go(&mut c))?;
            (chk, timed, 2.0)
        }
        Precision::Fp32 => {
            let go = |c: &mut [f32]| -> Result<f64> {
                let t = Instant::now();
                sgemm_par(a32, b32, c, shape, cancel)?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            };
            let first = go(&mut c)?;
            let chk = check(
                shape,
                &|i, kk| f64::from(a32[i * k + kk]),
                &|kk, j| f64::from(b32[kk * n + j]),
                &|i, j| f64::from(c[i * n + j]),
                tol,
            );
            let timed = time_median(CPU_BUDGET_MS, first, cancel, &mut || go(&mut c))?;
            (chk, timed, 4.0)
        }
        other => {
            return Err(bad(format!(
                "the CPU sweep has no {} product",
                other.as_str()
            )))
        }
    };
    Ok(GemmPoint {
        precision: p,
        shape,
        label,
        padded: None,
        ms_p50: ms,
        reps,
        tflops: if ms > 0.0 {
            shape.flops() / (ms * 1e-3) / 1e12
        } else {
            0.0
        },
        bytes: shape.bytes(in_bytes, 4.0),
        speedup_vs_fp32: None,
        speedup_vs_bf16: None,
        regime: Regime::Launch,
        check,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::crossover::{cnn_gemms, CNN_BATCH};
    use crate::gemm_sweep::*;
    use crate::protocol::Event;

    fn cpu_req(sizes: &[usize], cnn: bool) -> CrossoverRequest {
        CrossoverRequest {
            sizes: sizes.to_vec(),
            backend: BackendChoice::Cpu,
            include_cnn: cnn,
            ..CrossoverRequest::default()
        }
    }

    #[test]
    fn the_cpu_sweep_checks_every_point_and_skips_tf32_and_fp8_with_the_reason() {
        let req = cpu_req(&[16, 48, 96], true);
        let mut events = Vec::new();
        let cancel = AtomicBool::new(false);
        let mut on = |e| events.push(e);
        let mut job = LabJob::new("crossover", &mut on, &cancel);
        let r = run_crossover(&req, 0, None, &mut job).unwrap();
        drop(job);
        assert_eq!(r.backend, "cpu");
        // 3 sizes + 8 CNN GEMMs, in FP32, BF16 and FP16.
        assert_eq!(r.points.len(), 3 * 11);
        for p in &r.points {
            assert!(p.check.ok, "{p:?}");
            assert!(
                p.ms_p50 > 0.0 && p.tflops > 0.0 && p.reps >= MIN_REPS,
                "{p:?}"
            );
        }
        let skipped: Vec<Precision> = r.skipped.iter().map(|s| s.precision).collect();
        assert_eq!(skipped, vec![Precision::Tf32, Precision::Fp8]);
        assert!(r.ceilings.copy_gbps > 0.0 && r.ceilings.launch_ms > 0.0);
        assert_eq!(r.ceilings.peaks.len(), 3);
        // BF16 and FP16 are compared with FP32 (no TF32 on a CPU), each has its sentence.
        assert_eq!(r.crossovers.len(), 2);
        assert!(r.crossovers.iter().all(|c| c.over == Precision::Fp32));
        assert_eq!(r.sentences.len(), 2);
        assert!(r.sentences[0].starts_with(&format!("On this {}", r.device)));
        let fp32 = r
            .point(Precision::Fp32, GemmShape::square(48), None)
            .unwrap();
        assert_eq!(fp32.speedup_vs_fp32, Some(1.0));
        assert!(r.cnn().any(|p| p.label.as_deref() == Some("conv2 fwd")));
        // The whole training step is the GPU's: the CPU says why it left it out.
        assert!(r.steps.is_empty());
        assert!(r
            .step_note
            .as_deref()
            .is_some_and(|n| n.contains("leaves out the whole training step")));
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
        assert!(stages >= r.points.len(), "a stage per point: {stages}");
    }

    #[test]
    fn a_cancelled_sweep_stops_within_a_second_even_inside_a_big_product() {
        let req = CrossoverRequest {
            precisions: vec![Precision::Fp32],
            ..cpu_req(&[2048], false)
        };
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            flag.store(true, Ordering::Relaxed);
            Instant::now()
        });
        let mut on = |_| {};
        let mut job = LabJob::new("crossover", &mut on, &cancel);
        let r = run_crossover(&req, 0, None, &mut job);
        let ended = Instant::now();
        let set_at = setter.join().unwrap();
        assert!(matches!(r, Err(ComputeError::Cancelled)), "{r:?}");
        let late = ended.saturating_duration_since(set_at);
        assert!(
            late.as_secs_f64() < 1.0,
            "stopped {late:?} after the cancel"
        );
    }

    #[test]
    fn the_checks_catch_a_wrong_product() {
        let s = GemmShape { m: 4, n: 3, k: 5 };
        let a = operands(20, 1);
        let b = operands(15, 2);
        let mut c = vec![0.0f32; 12];
        let stop = AtomicBool::new(false);
        sgemm_par(&a, &b, &mut c, s, &stop).unwrap();
        let tol = tolerance(Precision::Fp32, 5, 2f64.powi(-24));
        let ok = check(
            s,
            &|i, kk| f64::from(a[i * 5 + kk]),
            &|kk, j| f64::from(b[kk * 3 + j]),
            &|i, j| f64::from(c[i * 3 + j]),
            tol,
        );
        assert!(ok.ok && ok.entries == 12, "{ok:?}");
        c[7] += 0.01;
        let bad = check(
            s,
            &|i, kk| f64::from(a[i * 5 + kk]),
            &|kk, j| f64::from(b[kk * 3 + j]),
            &|i, j| f64::from(c[i * 3 + j]),
            tol,
        );
        assert!(!bad.ok, "{bad:?}");
    }

    #[test]
    fn bad_requests_are_refused_before_anything_runs() {
        let cancel = AtomicBool::new(false);
        let mut on = |_| {};
        let mut job = LabJob::new("crossover", &mut on, &cancel);
        let e = run_crossover(&cpu_req(&[8192], false), 0, None, &mut job).unwrap_err();
        assert!(e.to_string().contains("sizes"), "{e}");
        let e = run_crossover(
            &CrossoverRequest {
                precisions: vec![],
                ..cpu_req(&[64], false)
            },
            0,
            None,
            &mut job,
        )
        .unwrap_err();
        assert!(e.to_string().contains("precisions"), "{e}");
    }

    fn decode_e4m3(b: u8) -> f32 {
        let (e, m) = (((b >> 3) & 0xF) as i32, (b & 7) as f32);
        let v = if e == 0 {
            m * 2f32.powi(-9)
        } else {
            (1.0 + m / 8.0) * 2f32.powi(e - 7)
        };
        if b & 0x80 != 0 {
            -v
        } else {
            v
        }
    }

    #[test]
    fn e4m3_bytes_round_trip_and_tf32_rounds_to_nearest_even() {
        for b in 0..=255u8 {
            if b & 0x7F == 0x7F {
                continue;
            }
            let v = decode_e4m3(b);
            assert_eq!(
                e4m3_bits(v),
                if v == 0.0 { b & 0x80 } else { b },
                "{b:#x} {v}"
            );
        }
        assert_eq!(e4m3_bits(448.0), 0x7E);
        let (bytes, deq, inv) = e4m3_tensor(&[0.5, -1.0, 0.25]);
        assert_eq!(inv, 1.0 / 448.0);
        assert_eq!(bytes[1], 0x80 | 0x7E);
        assert_eq!(deq[1], -1.0);
        assert_eq!(round_tf32(1.0), 1.0);
        // 1 + 2⁻¹¹ is a tie between 1 and 1 + 2⁻¹⁰: to even (1).
        assert_eq!(round_tf32(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(round_tf32(1.0 + 3.0 * 2f32.powi(-11)), 1.0 + 2f32.powi(-9));
        assert_eq!(round_tf32(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
    }

    #[test]
    fn fp8_pads_the_cnns_shapes_to_16_and_the_check_reads_the_unpadded_operands() {
        let g = cnn_gemms(CNN_BATCH);
        let shape = |l: &str| g.iter().find(|(x, _)| x == l).unwrap().1;
        let conv1 = shape("conv1 fwd");
        assert_eq!(
            run_shape(Precision::Fp8, conv1),
            GemmShape {
                m: 86528,
                n: 32,
                k: 16
            }
        );
        assert_eq!(run_shape(Precision::Bf16, conv1), conv1);
        let conv2 = shape("conv2 fwd");
        assert_eq!(
            run_shape(Precision::Fp8, conv2),
            conv2,
            "already multiples of 16"
        );
        let dense = shape("dense fwd");
        assert_eq!(run_shape(Precision::Fp8, dense).n, 16);
        // 3 rows of 5 padded to 4 rows of 16, and back.
        let src: Vec<f32> = (0..15).map(|x| x as f32 + 1.0).collect();
        let p = pad_rows(&src, 3, 5, 4, 16);
        assert_eq!(p.len(), 64);
        assert_eq!(&p[16..21], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!(p[21..32].iter().chain(&p[48..]).all(|&x| x == 0.0));
        assert_eq!(unpad_rows(&p, 3, 5, 16), src);
        assert_eq!(pad_rows(&src, 3, 5, 3, 5), src);
        assert_eq!(unpad_rows(&src, 2, 5, 5), src[..10].to_vec());
    }

    #[test]
    fn the_median_and_the_peer_arguments() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(
            peer_args(&[64, 128], &[Precision::Bf16, Precision::Fp8]),
            vec!["--sizes", "64,128", "--precisions", "bf16,fp8"]
        );
    }
}
