//! `showdown bench duel`: our duel and the PyTorch peers in the same call on the same machine,
//! side by side with ratios (the GPU duel benchmark; `docs/benchmarks.md` records it).
//!
//! The peers are the reference scripts (`anchor_graph.py DATA`: the whole training step in one
//! CUDA graph; `anchor_train.py DATA eager`: eager and AMP variants), run with `--python`
//! after our duel. Each prints one JSON object a line for every variant it measured, with
//! `variant`, `epoch_ms_median` and, where it has them, `max_mem_alloc_mb` (MiB), `test_acc`,
//! `batch` and `data`; every other line is ignored. The report, the peer's rows and the table
//! are the core's (`compute::bench::duel`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use compute::bench::duel::{parse_peer_rows, DuelBench, PeerFailure, PeerRow};
use compute::types::DuelEvent;
use compute::ComputeError;

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
    let rows = parse_peer_rows(&out.stdout);
    if !out.success || rows.is_empty() {
        let last = out.last_error_line();
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
        peers.retain(|p| !p.is_mnist_sample());
    }
    let bench = DuelBench::new(ours, peers, peer_failures);
    if let Some(path) = &json_out {
        std::fs::write(path, serde_json::to_string_pretty(&bench)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&bench)?);
    } else {
        print!("{}", bench.table());
    }
    if reference.is_some() && !bench.peer_failures.is_empty() {
        anyhow::bail!(
            "{} peer script(s) failed: the comparison is incomplete",
            bench.peer_failures.len()
        );
    }
    Ok(())
}
