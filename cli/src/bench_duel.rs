//! `showdown bench duel`: our duel and the PyTorch peers in the same call on the same machine,
//! side by side with ratios (the GPU duel benchmark; `docs/benchmarks.md` records it).
//!
//! The peers are the reference scripts (`anchor_graph.py DATA`: the whole training step in one
//! CUDA graph; `anchor_train.py DATA eager`: eager and AMP variants), run with `--python`
//! after our duel. Each prints one JSON object a line for every variant it measured, with
//! `variant`, `epoch_ms_median` and, where it has them, `max_mem_alloc_mb` (MiB), `test_acc`,
//! `batch` and `data`; every other line is ignored.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use compute::types::{DuelEvent, DuelReport};
use compute::ComputeError;
use serde::{Deserialize, Serialize};

/// One peer measurement, as a reference script prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerRow {
    /// The variant's name (`graph fp16 static-scale`).
    pub variant: String,
    /// Median epoch time, ms.
    pub epoch_ms_median: f64,
    /// Peak `torch.cuda.max_memory_allocated`, MiB.
    #[serde(default)]
    pub max_mem_alloc_mb: Option<f64>,
    /// Test accuracy after the last epoch.
    #[serde(default)]
    pub test_acc: Option<f64>,
    /// Batch size (128 when absent).
    #[serde(default)]
    pub batch: Option<u64>,
    /// Which data set the row is for (rows of other data sets are left out).
    #[serde(default)]
    pub data: Option<String>,
}

/// A reference script that could not be run or printed nothing usable.
#[derive(Debug, Clone, Serialize)]
pub struct PeerFailure {
    /// The script.
    pub script: String,
    /// Why.
    pub reason: String,
}

/// What `bench duel --json` prints and `--json-out` writes.
#[derive(Debug, Serialize)]
pub struct DuelBench {
    /// Our duel.
    pub ours: DuelReport,
    /// The peers' rows at our data set.
    pub peers: Vec<PeerRow>,
    /// Scripts that failed.
    pub peer_failures: Vec<PeerFailure>,
    /// The fastest peer at batch 128, ms per epoch.
    pub best_peer_ms: Option<f64>,
}

/// The JSON rows of a script's output (lines starting with `{` that parse as a [`PeerRow`]).
pub fn parse_peer_rows(stdout: &str) -> Vec<PeerRow> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<PeerRow>(l).ok())
        .filter(|r| r.epoch_ms_median.is_finite() && r.epoch_ms_median > 0.0)
        .collect()
}

fn run_peer(
    python: &str,
    script: &Path,
    data: &str,
    extra: &[&str],
) -> Result<Vec<PeerRow>, String> {
    if !script.is_file() {
        return Err("no such file".into());
    }
    let out = crate::peer::run_script(
        python,
        script,
        std::iter::once(data).chain(extra.iter().copied()),
    )?;
    let rows = parse_peer_rows(&String::from_utf8_lossy(&out.stdout));
    if !out.status.success() || rows.is_empty() {
        let last = crate::peer::last_stderr_line(&out);
        return Err(format!(
            "{} with {} result row(s){}",
            out.status,
            rows.len(),
            if last.is_empty() {
                String::new()
            } else {
                format!("; last stderr line: {last}")
            }
        ));
    }
    Ok(rows)
}

/// Runs our duel (`cfg`), then the peers from `reference` (if given), and prints the table.
pub fn run(
    cfg: compute::types::DuelConfig,
    reference: Option<PathBuf>,
    python: &str,
    skip_eager: bool,
    json: bool,
    json_out: Option<PathBuf>,
) -> Result<()> {
    let cancel = AtomicBool::new(false);
    let mut on_event = |e: DuelEvent| {
        if let DuelEvent::Epoch { precision, report } = e {
            eprintln!(
                "{precision:>5} epoch {}: {:.1} ms, test accuracy {:.4}",
                report.epoch, report.ms, report.test_accuracy
            );
        }
    };
    let ours = compute::service::run_duel(&cfg, &mut on_event, &cancel)?;
    let data = cfg.data_dir.clone().unwrap_or_default();
    let (mut peers, mut peer_failures) = (Vec::new(), Vec::new());
    if let Some(dir) = &reference {
        if data.is_empty() {
            return Err(ComputeError::bad_arg(
                "--data-dir",
                "",
                "the peer scripts read the data set from a folder: pass --data-dir",
            )
            .into());
        }
        let mut scripts = vec![("anchor_graph.py", vec![])];
        if !skip_eager {
            scripts.push(("anchor_train.py", vec!["eager"]));
        }
        for (name, extra) in scripts {
            let script = dir.join(name);
            match run_peer(python, &script, &data, &extra) {
                Ok(rows) => peers.extend(rows),
                Err(reason) => peer_failures.push(PeerFailure {
                    script: script.display().to_string(),
                    reason,
                }),
            }
        }
        // Rows the scripts made for another data set (the MNIST sample) are not this duel.
        peers.retain(|p| !p.data.as_deref().unwrap_or("").starts_with("mnist10k"));
    }
    let best_peer_ms = peers
        .iter()
        .filter(|p| p.batch.unwrap_or(128) == cfg.batch as u64)
        .map(|p| p.epoch_ms_median)
        .min_by(f64::total_cmp);
    let bench = DuelBench {
        ours,
        peers,
        peer_failures,
        best_peer_ms,
    };
    if let Some(path) = &json_out {
        std::fs::write(path, serde_json::to_string_pretty(&bench)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&bench)?);
    } else {
        print!("{}", table(&bench, cfg.batch));
    }
    if reference.is_some() && !bench.peer_failures.is_empty() {
        anyhow::bail!(
            "{} peer script(s) failed: the comparison is incomplete",
            bench.peer_failures.len()
        );
    }
    Ok(())
}

/// The side-by-side table.
pub fn table(b: &DuelBench, batch: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let r = &b.ours;
    let _ = writeln!(
        s,
        "Duel on {} ({} backend): {} ({} train / {} test), batch {batch}, {} epoch(s), median of epochs 2..",
        r.device, r.backend, r.dataset.name, r.dataset.train, r.dataset.test, r.config.epochs
    );
    let _ = writeln!(
        s,
        "{:<40} | {:>9} | {:>8} | {:>8} | {:>22}",
        "contestant",
        "epoch ms",
        "peak MB",
        "test acc",
        format!("vs best PyTorch bs{batch}")
    );
    let _ = writeln!(s, "{}", "-".repeat(98));
    for run in &r.runs {
        let vs = b
            .best_peer_ms
            .map(|best| format!("{:.2}x faster", best / run.epoch_ms_median))
            .unwrap_or_else(|| "no peer".into());
        let _ = writeln!(
            s,
            "{:<40} | {:>9.1} | {:>8.1} | {:>8.4} | {:>22}",
            format!("showdown {}", run.precision),
            run.epoch_ms_median,
            run.peak_memory_bytes as f64 / 1e6,
            run.test_accuracy,
            vs
        );
    }
    for p in &b.peers {
        let mb = p
            .max_mem_alloc_mb
            .map(|m| format!("{:.1}", m * 1.048_576))
            .unwrap_or_else(|| "-".into());
        let acc = p
            .test_acc
            .map(|a| format!("{a:.4}"))
            .unwrap_or_else(|| "-".into());
        let name = match p.batch {
            Some(bs) if bs != batch as u64 => format!("pytorch {} (bs {bs})", p.variant),
            _ => format!("pytorch {}", p.variant),
        };
        let _ = writeln!(
            s,
            "{:<40} | {:>9.1} | {:>8} | {:>8} |",
            name, p.epoch_ms_median, mb, acc
        );
    }
    for f in &b.peer_failures {
        let _ = writeln!(s, "peer {} failed: {}", f.script, f.reason);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_rows_are_read_from_json_lines_only() {
        let out = "warming up\n{\"variant\": \"graph fp16\", \"epoch_ms_median\": 192.3, \"max_mem_alloc_mb\": 580.0, \"test_acc\": 0.8958}\n{\"note\": \"no timing\"}\n{\"variant\": \"bad\", \"epoch_ms_median\": -1}\n{broken\n";
        let rows = parse_peer_rows(out);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].variant, "graph fp16");
        assert_eq!(rows[0].batch, None);
    }
}
