//! `showdown bench duel`: our duel and the PyTorch peers in the same call on the same machine,
//! side by side with ratios. The peers are the reference scripts (`anchor_graph.py DATA`,
//! `anchor_train.py DATA eager`); each prints one JSON object a line for every variant it
//! measured, with `variant`, `epoch_ms_median` and, where it has them, `max_mem_alloc_mb`
//! (MiB), `test_acc`, `batch` and `data`.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::{json_lines, parse_json, ParseError};
use crate::types::DuelReport;

/// The batch a peer row ran at when it does not say.
pub const PEER_DEFAULT_BATCH: u64 = 128;

/// One peer measurement, as a reference script prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Batch size ([`PEER_DEFAULT_BATCH`] when absent).
    #[serde(default)]
    pub batch: Option<u64>,
    /// Which data set the row is for (rows of other data sets are left out).
    #[serde(default)]
    pub data: Option<String>,
}

impl PeerRow {
    /// Whether the row is of the scripts' MNIST sample run (`mnist10k…`), not of the duel's
    /// data set.
    pub fn is_mnist_sample(&self) -> bool {
        self.data.as_deref().unwrap_or("").starts_with("mnist10k")
    }
}

/// A reference script that could not be run or printed nothing usable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerFailure {
    /// The script.
    pub script: String,
    /// Why.
    pub reason: String,
}

/// What `showdown bench duel --json` prints and `--json-out` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuelBench {
    /// Our duel.
    pub ours: DuelReport,
    /// The peers' rows at our data set.
    #[serde(default)]
    pub peers: Vec<PeerRow>,
    /// Scripts that failed.
    #[serde(default)]
    pub peer_failures: Vec<PeerFailure>,
    /// The fastest peer at our batch, ms per epoch ([`best_peer_ms`]).
    pub best_peer_ms: Option<f64>,
}

/// The JSON rows of a script's output (lines starting with `{` that parse as a [`PeerRow`]
/// with a positive epoch time).
pub fn parse_peer_rows(stdout: &str) -> Vec<PeerRow> {
    json_lines(stdout)
        .filter_map(|l| serde_json::from_str::<PeerRow>(l).ok())
        .filter(|r| r.epoch_ms_median.is_finite() && r.epoch_ms_median > 0.0)
        .collect()
}

/// The fastest peer at `batch`, ms per epoch.
pub fn best_peer_ms(peers: &[PeerRow], batch: usize) -> Option<f64> {
    peers
        .iter()
        .filter(|p| p.batch.unwrap_or(PEER_DEFAULT_BATCH) == batch as u64)
        .map(|p| p.epoch_ms_median)
        .min_by(f64::total_cmp)
}

impl DuelBench {
    /// Ours and the peers, with the fastest peer at our batch.
    pub fn new(ours: DuelReport, peers: Vec<PeerRow>, peer_failures: Vec<PeerFailure>) -> Self {
        let best_peer_ms = best_peer_ms(&peers, ours.config.batch);
        DuelBench {
            ours,
            peers,
            peer_failures,
            best_peer_ms,
        }
    }

    /// Parses the JSON of `showdown bench duel --json-out`.
    pub fn parse(json: &str) -> Result<Self, ParseError> {
        parse_json(json, "duel benchmark")
    }

    /// The side-by-side table `showdown bench duel` prints.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let r = &self.ours;
        let batch = r.config.batch;
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
            let vs = self
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
        for p in &self.peers {
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
        for f in &self.peer_failures {
            let _ = writeln!(s, "peer {} failed: {}", f.script, f.reason);
        }
        s
    }
}
