//! Plain-text renderings of the service's reports (the JSON forms come from serde).

use std::fmt::Write;

use compute::data::Dataset;
use compute::model::ModelSummary;
use compute::types::{DatasetSummary, DoctorReport, DuelReport};
use serde::Serialize;

/// The duel result table: Precision | Epoch Time (ms) | Max Memory (MB) | Test accuracy.
pub fn duel_table(r: &DuelReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "backend {} ({}), data set {} ({} train / {} test), batch {}, {} epoch(s), seed {}",
        r.backend,
        r.device,
        r.dataset.name,
        r.dataset.train,
        r.dataset.test,
        r.config.batch,
        r.config.epochs,
        r.config.seed
    );
    let _ = writeln!(
        s,
        "{:<9} | {:>15} | {:>15} | {:>13} | {:>9} | {:>7} | {:>10}",
        "Precision",
        "Epoch Time (ms)",
        "Max Memory (MB)",
        "Test accuracy",
        "samples/s",
        "skipped",
        "loss scale"
    );
    let _ = writeln!(s, "{}", "-".repeat(96));
    for run in &r.runs {
        let _ = writeln!(
            s,
            "{:<9} | {:>15.1} | {:>15.2} | {:>13.4} | {:>9.0} | {:>7} | {:>10}",
            run.precision.to_string(),
            run.epoch_ms_median,
            run.peak_memory_bytes as f64 / 1e6,
            run.test_accuracy,
            run.samples_per_s,
            run.skipped_steps,
            run.final_loss_scale
        );
    }
    for run in &r.runs {
        if let Some(f) = &run.fp8 {
            let _ = writeln!(s, "{}", compute::fp8::fp8_sentence(f));
            let _ = writeln!(s, "  {} ran {}.", run.precision, f.engine);
            if f.device != r.device {
                let _ = writeln!(
                    s,
                    "  {} ran on {}, not on {}: its epoch time and memory are not comparable \
                     with the other rows'.",
                    run.precision, f.device, r.device
                );
            }
            let _ = writeln!(s, "  recipe: {}.", f.recipe.describe());
            for t in &f.tensors {
                let last = t.points.last();
                let _ = writeln!(
                    s,
                    "  {:<18} {} scale {:>12} (amax {:>10.4e}) | saturated {:>7} | flushed {:>9} of {:>11}",
                    t.tensor.name(),
                    t.format.name(),
                    last.map(|p| format!("2^{}", compute::grads::exponent(p.scale as f64)))
                        .unwrap_or_else(|| "—".into()),
                    last.map(|p| p.amax).unwrap_or(f32::NAN),
                    t.total.overflow,
                    t.total.underflow,
                    t.total.nonzero,
                );
            }
        }
    }
    if let Some(peer) = &r.peer {
        let _ = writeln!(
            s,
            "{}: {:<44} | epoch ms (median) | peak MB | test acc | ours",
            peer.where_label(),
            "variant"
        );
        for p in &peer.runs {
            let ours = r.runs.iter().find(|o| o.precision == p.precision);
            let vs = ours
                .and_then(|o| {
                    peer.compare(p.precision, o.epoch_ms_median)
                        .into_iter()
                        .find(|c| c.peer.variant == p.variant)
                })
                .map(|c| format!("ours {}", c.words()))
                .unwrap_or_else(|| "—".into());
            let mem = p
                .peak_memory_bytes
                .map(|b| format!("{:.2}", b as f64 / 1e6))
                .unwrap_or_else(|| "—".into());
            let _ = writeln!(
                s,
                "  {:<52} | {:>9.1} ms (median of {} epoch(s)) | {:>8} MB | {:>7.4} | {vs}",
                p.label,
                p.epoch_ms_median(),
                p.timed_epochs(),
                mem,
                p.test_accuracy()
            );
        }
        for k in &peer.skipped {
            let _ = writeln!(s, "  skipped: {k}");
        }
        if let Some(n) = &peer.note {
            let _ = writeln!(s, "  note: {n}");
        }
        if let Some(t) = compute::runs::comparison_sentence(r) {
            let _ = writeln!(s, "{t}");
        }
    }
    for run in &r.runs {
        if let Some(st) = &run.step_times {
            let _ = writeln!(
                s,
                "{:<9}   step time (epoch {}, {} steps each synchronised): p50 {:.3} ms, p90 {:.3}, p99 {:.3}, max {:.3}",
                run.precision.to_string(),
                st.epoch,
                st.steps,
                st.p50_ms,
                st.p90_ms,
                st.p99_ms,
                st.max_ms
            );
        }
    }
    for run in &r.runs {
        if let Some(t) = &run.telemetry {
            if t.samples.is_empty() {
                let _ = writeln!(
                    s,
                    "{:<9}   telemetry: {}",
                    run.precision.to_string(),
                    t.note.as_deref().unwrap_or("no samples")
                );
                continue;
            }
            let n = t.samples.len() as f64;
            let avg = |f: &dyn Fn(&compute::types::TelemetrySample) -> f64| {
                t.samples.iter().map(f).sum::<f64>() / n
            };
            let _ = writeln!(
                s,
                "{:<9}   NVML: {} samples, GPU busy {:.0} %, SM clock {:.0} MHz, {:.0} W, {:.0} °C; process memory (NVML, context included) {}",
                run.precision.to_string(),
                t.samples.len(),
                avg(&|x| x.gpu_util_pct as f64),
                avg(&|x| x.sm_clock_mhz as f64),
                avg(&|x| x.power_w),
                avg(&|x| x.temperature_c as f64),
                t.process_memory_peak_bytes.map(|b| format!("{:.1} MB", b as f64 / 1e6)).unwrap_or_else(|| "n/a".into())
            );
        }
    }
    if let (Some(a), Some(b)) = (r.runs.first(), r.runs.get(1)) {
        let _ = writeln!(
            s,
            "{} vs {}: {:.2}× the speed, {:.2}× the memory",
            b.precision,
            a.precision,
            a.epoch_ms_median / b.epoch_ms_median,
            b.peak_memory_bytes as f64 / a.peak_memory_bytes.max(1) as f64
        );
    }
    s
}

/// The doctor report as text.
pub fn doctor(r: &DoctorReport) -> String {
    let mut s = String::new();
    let yes = |ok: bool| if ok { "ok " } else { "no " };
    let _ = writeln!(s, "showdown {}", r.version);
    let _ = writeln!(
        s,
        "CPU     {} ({} cores; {})",
        r.cpu,
        r.cores,
        r.cpu_features.join(" ")
    );
    let _ = writeln!(
        s,
        "CUDA    {}",
        if r.cuda_built {
            "built in"
        } else {
            "not in this build"
        }
    );
    let _ = writeln!(s, "driver  {}{}", yes(r.driver.ok), r.driver.detail);
    let _ = writeln!(s, "NVRTC   {}{}", yes(r.nvrtc.ok), r.nvrtc.detail);
    let _ = writeln!(s, "NVML    {}{}", yes(r.nvml.ok), r.nvml.detail);
    let _ = writeln!(s, "kernels {}{}", yes(r.kernels.ok), r.kernels.detail);
    for g in &r.gpus {
        let _ = writeln!(
            s,
            "GPU {}   {} (sm_{}, {} SMs, {:.1} GiB)",
            g.index,
            g.name,
            g.compute_capability.replace('.', ""),
            g.sms,
            g.memory_bytes as f64 / (1u64 << 30) as f64
        );
    }
    let _ = writeln!(
        s,
        "auto    -> {} backend: {}",
        r.auto_backend, r.auto_reason
    );
    s
}

/// The model summary as a table.
pub fn model(m: &ModelSummary) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:<28} {:<14} {:<14} {:>8} {:>12} {:>12}",
        "layer", "kind", "input", "output", "params", "MFLOP fwd", "act bytes"
    );
    for l in &m.layers {
        let _ = writeln!(
            s,
            "{:<8} {:<28} {:<14} {:<14} {:>8} {:>12.3} {:>12}",
            l.name,
            l.kind,
            format!("{:?}", l.input),
            format!("{:?}", l.output),
            l.params,
            l.flops_fwd as f64 / 1e6,
            l.activation_bytes_fp32
        );
    }
    let _ = writeln!(
        s,
        "total: {} parameters, {:.2} MFLOP forward, {:.2} MFLOP training per image",
        m.params,
        m.flops_fwd as f64 / 1e6,
        m.flops_train as f64 / 1e6
    );
    s
}

/// The data-set list as a table.
pub fn datasets(l: &[DatasetSummary]) -> String {
    let mut s = String::new();
    for d in l {
        let _ = writeln!(
            s,
            "{:<14} {:>6} train {:>6} test  {:<10} {}",
            d.name,
            d.train,
            d.test,
            if d.available { "available" } else { "missing" },
            d.source
        );
        let _ = writeln!(s, "{:<14} {}", "", d.note);
    }
    s
}

/// A loaded data set's description.
#[derive(Serialize)]
pub struct DatasetInfo {
    name: String,
    train: usize,
    test: usize,
    image: [usize; 2],
    train_class_counts: [usize; 10],
    test_class_counts: [usize; 10],
    mean_pixel: f64,
}

impl DatasetInfo {
    /// Describes `d`.
    pub fn of(d: &Dataset) -> Self {
        let counts = |l: &[u8]| {
            let mut c = [0usize; 10];
            for &x in l {
                c[(x as usize).min(9)] += 1;
            }
            c
        };
        let n = d.train.images.len().max(1);
        DatasetInfo {
            name: d.name.clone(),
            train: d.train.len(),
            test: d.test.len(),
            image: [d.rows, d.cols],
            train_class_counts: counts(&d.train.labels),
            test_class_counts: counts(&d.test.labels),
            mean_pixel: d.train.images.iter().map(|&p| p as f64).sum::<f64>() / n as f64,
        }
    }
    /// As text.
    pub fn text(&self) -> String {
        format!(
            "{}: {} train / {} test images of {}×{}\ntrain classes {:?}\ntest classes  {:?}\nmean pixel {:.2}\n",
            self.name, self.train, self.test, self.image[0], self.image[1], self.train_class_counts, self.test_class_counts, self.mean_pixel
        )
    }
}
