//! PyTorch beside our duel (Act II's "with PyTorch"): the lines the peer script
//! (`bench/duel_peer.py`) prints, the runs they make, and how each compares with our
//! contestant of the same precision.
//!
//! The script trains the same CNN (the first seed's PyTorch network) on the same images, in
//! the same batch size, epochs, learning rate, dropout and activation, once per precision we
//! trained: FP32 (TF32 off), TF32, AMP FP16 with `GradScaler` and AMP BF16, eagerly, and on a
//! GPU also as one CUDA graph per step. It prints one JSON object a line:
//! `{"kind":"env",…}` first, then per variant `started`, one `epoch` per epoch and `finished`
//! (or `skipped` with the reason). Every other line is ignored.

use serde::{Deserialize, Serialize};

use crate::format::speedup_words;
use crate::precision::Precision;

/// How a PyTorch variant runs its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerMode {
    /// Eager PyTorch: one Python-issued launch per operation.
    Eager,
    /// The whole step (forward, backward, Adam) captured once as a CUDA graph and replayed.
    Graph,
}

impl PeerMode {
    /// `eager` or `CUDA graph`.
    pub fn label(self) -> &'static str {
        match self {
            PeerMode::Eager => "eager",
            PeerMode::Graph => "CUDA graph",
        }
    }
}

/// One epoch of a PyTorch variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerEpoch {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Training time of the epoch (evaluation excluded), milliseconds; on a GPU between two
    /// CUDA events around the epoch's steps, as ours.
    pub ms: f64,
    /// Mean training loss over the epoch's steps.
    pub train_loss: f64,
    /// Test accuracy after the epoch (0..1).
    pub test_accuracy: f64,
}

/// One PyTorch variant's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerDuelRun {
    /// The script's name of the variant (`eager-amp-fp16`).
    pub variant: String,
    /// The variant in words (`PyTorch AMP fp16 + GradScaler, eager`).
    pub label: String,
    /// The precision it stands beside.
    pub precision: Precision,
    /// Eager or CUDA graph.
    pub mode: PeerMode,
    /// Every epoch, in order.
    pub epochs: Vec<PeerEpoch>,
    /// Peak bytes PyTorch's caching allocator handed out (`torch.cuda.max_memory_allocated`);
    /// `None` on the CPU, where PyTorch keeps no such count.
    pub peak_memory_bytes: Option<u64>,
    /// What the variant did about loss scaling, in words (`GradScaler, final scale 65536`).
    pub scaling: Option<String>,
}

impl PeerDuelRun {
    /// Median epoch time of epochs 2.. (epoch 1 carries the warm-up: cuDNN's autotuning, the
    /// graph's capture), or of the only epoch: the rule our contestants use.
    pub fn epoch_ms_median(&self) -> f64 {
        let ms: Vec<f64> = self.epochs.iter().map(|e| e.ms).collect();
        crate::stats::median_after_warmup(&ms)
    }

    /// Test accuracy after the last epoch.
    pub fn test_accuracy(&self) -> f64 {
        self.epochs.last().map_or(f64::NAN, |e| e.test_accuracy)
    }

    /// How many epochs the median rests on.
    pub fn timed_epochs(&self) -> usize {
        crate::stats::timed_epoch_count(self.epochs.len())
    }

    /// The slowest timed epoch over the fastest (epochs 2.., as the median), `None` with fewer
    /// than two timed epochs.
    pub fn epoch_spread(&self) -> Option<f64> {
        let skip = usize::from(self.epochs.len() > 1);
        crate::stats::epoch_spread(self.epochs.iter().skip(skip).map(|e| e.ms))
    }

    /// What the median rests on, in words, as our rows say it: `median of 4 epochs, spread
    /// 1.05×`, or `median of 1 epoch, no spread`.
    pub fn rests_on(&self) -> String {
        let n = self.timed_epochs();
        let epochs = format!("median of {n} epoch{}", if n == 1 { "" } else { "s" });
        match self.epoch_spread() {
            Some(x) => format!("{epochs}, spread {x:.2}×"),
            None => format!("{epochs}, no spread"),
        }
    }
}

/// PyTorch's side of a duel: where it ran and its runs, or why it did not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerDuel {
    /// The Python interpreter that ran the script.
    pub python: String,
    /// PyTorch's version, when it started.
    pub torch: Option<String>,
    /// Where PyTorch trained, in words (the GPU's name, or `CPU`).
    pub device: Option<String>,
    /// One run per variant, in the order run.
    pub runs: Vec<PeerDuelRun>,
    /// Variants the script could not run here, each with its reason (`tf32: this GPU has no
    /// TF32`).
    #[serde(default)]
    pub skipped: Vec<String>,
    /// Why PyTorch's rows are missing or incomplete (no torch, the script failed), in words.
    pub note: Option<String>,
    /// Whether PyTorch ran where ours did (both on the GPU, or both on the CPU): only then are
    /// the two times compared ([`PeerDuel::compare`] is empty otherwise).
    #[serde(default = "comparable_by_default")]
    pub comparable: bool,
    /// Whether the user cancelled PyTorch's side: our contestants had finished and are kept,
    /// with PyTorch's runs up to the cancel.
    #[serde(default)]
    pub cancelled: bool,
}

fn comparable_by_default() -> bool {
    true
}

impl Default for PeerDuel {
    fn default() -> Self {
        PeerDuel {
            python: String::new(),
            torch: None,
            device: None,
            runs: Vec::new(),
            skipped: Vec::new(),
            note: None,
            comparable: true,
            cancelled: false,
        }
    }
}

/// One comparison of ours with a PyTorch variant of the same precision.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerComparison<'a> {
    /// PyTorch's run.
    pub peer: &'a PeerDuelRun,
    /// Our median epoch over PyTorch's: above 1 we are faster.
    pub speedup: f64,
}

impl PeerComparison<'_> {
    /// Our speed-up in words: `4.00× faster`, `2.00× slower`, `at PyTorch's pace (1.02×)`.
    pub fn words(&self) -> String {
        speedup_words(self.speedup)
    }
}

impl PeerDuel {
    /// PyTorch's runs beside our contestant of `precision`, each with our speed-up over it
    /// (PyTorch's median epoch ÷ ours); none when our time is not positive.
    pub fn compare(&self, precision: Precision, ours_ms: f64) -> Vec<PeerComparison<'_>> {
        if !self.comparable {
            return Vec::new();
        }
        self.runs
            .iter()
            .filter(|r| r.precision == precision)
            .filter_map(|peer| {
                let theirs = peer.epoch_ms_median();
                (ours_ms > 0.0 && theirs.is_finite() && theirs > 0.0).then(|| PeerComparison {
                    peer,
                    speedup: theirs / ours_ms,
                })
            })
            .collect()
    }

    /// PyTorch's fastest run at `precision`, with our speed-up over it.
    pub fn fastest(&self, precision: Precision, ours_ms: f64) -> Option<PeerComparison<'_>> {
        self.compare(precision, ours_ms)
            .into_iter()
            .min_by(|a, b| a.speedup.total_cmp(&b.speedup))
    }

    /// Where PyTorch ran, in words: `PyTorch 2.11.0 on NVIDIA H100 80GB HBM3`.
    pub fn where_label(&self) -> String {
        format!(
            "PyTorch {} on {}",
            self.torch.as_deref().unwrap_or("(version unknown)"),
            self.device.as_deref().unwrap_or("(device unknown)")
        )
    }
}

/// One line of the peer script's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum PeerLine {
    /// Where the script runs.
    Env {
        /// PyTorch's version.
        torch: String,
        /// The device in words.
        device: String,
    },
    /// A variant starts.
    Started {
        /// The variant's name.
        variant: String,
        /// In words.
        label: String,
        /// The precision it stands beside.
        precision: Precision,
        /// Eager or graph.
        mode: PeerMode,
        /// Epochs it will train.
        epochs: usize,
    },
    /// An epoch of a variant ended.
    Epoch {
        /// The variant's name.
        variant: String,
        /// The epoch.
        #[serde(flatten)]
        epoch: PeerEpoch,
    },
    /// A variant finished.
    Finished {
        /// The variant's name.
        variant: String,
        /// Peak bytes of PyTorch's allocator, when it counts them.
        peak_memory_bytes: Option<u64>,
        /// Loss scaling in words.
        scaling: Option<String>,
    },
    /// A variant could not run here.
    Skipped {
        /// The variant's name.
        variant: String,
        /// Why.
        reason: String,
    },
}

/// The [`PeerLine`] of `line`, or `None` for any other line.
pub fn parse_line(line: &str) -> Option<PeerLine> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str(line).ok()
}

/// Builds a [`PeerDuel`] from the script's lines, as they come.
#[derive(Debug, Clone, Default)]
pub struct PeerDuelBuilder {
    duel: PeerDuel,
}

impl PeerDuelBuilder {
    /// A builder for the script run by `python`.
    pub fn new(python: impl Into<String>) -> Self {
        PeerDuelBuilder {
            duel: PeerDuel {
                python: python.into(),
                ..PeerDuel::default()
            },
        }
    }

    /// Takes one line; gives back the run it started or extended, if any.
    pub fn take(&mut self, line: PeerLine) -> Option<&PeerDuelRun> {
        match line {
            PeerLine::Env { torch, device } => {
                self.duel.torch = Some(torch);
                self.duel.device = Some(device);
                None
            }
            PeerLine::Started {
                variant,
                label,
                precision,
                mode,
                ..
            } => {
                self.duel.runs.retain(|r| r.variant != variant);
                self.duel.runs.push(PeerDuelRun {
                    variant,
                    label,
                    precision,
                    mode,
                    epochs: Vec::new(),
                    peak_memory_bytes: None,
                    scaling: None,
                });
                self.duel.runs.last()
            }
            PeerLine::Epoch { variant, epoch } => {
                let run = self.duel.runs.iter_mut().find(|r| r.variant == variant)?;
                run.epochs.push(epoch);
                Some(&*run)
            }
            PeerLine::Finished {
                variant,
                peak_memory_bytes,
                scaling,
            } => {
                let run = self.duel.runs.iter_mut().find(|r| r.variant == variant)?;
                run.peak_memory_bytes = peak_memory_bytes;
                run.scaling = scaling;
                Some(&*run)
            }
            PeerLine::Skipped { variant, reason } => {
                self.duel.skipped.push(format!("{variant}: {reason}"));
                None
            }
        }
    }

    /// Marks PyTorch as having run elsewhere than ours ([`PeerDuel::comparable`]).
    pub fn not_comparable(&mut self) {
        self.duel.comparable = false;
    }

    /// Marks PyTorch's side as cancelled by the user ([`PeerDuel::cancelled`]).
    pub fn cancelled(&mut self) {
        self.duel.cancelled = true;
    }

    /// Sets why the rows are missing or incomplete.
    pub fn note(&mut self, note: impl Into<String>) {
        self.duel.note = Some(note.into());
    }

    /// How many runs have started so far.
    pub fn runs_so_far(&self) -> usize {
        self.duel.runs.len()
    }

    /// The duel so far; runs without an epoch are dropped (a variant the script began and
    /// never trained).
    pub fn finish(mut self) -> PeerDuel {
        self.duel.runs.retain(|r| !r.epochs.is_empty());
        self.duel
    }
}

/// An example PyTorch side, for tests of every crate that shows it (and nothing else).
pub mod examples {
    use super::*;

    /// PyTorch on an H100: an eager FP32 run (three epochs at `fp32_ms` after a 900 ms
    /// warm-up) and an eager AMP FP16 run at `fp16_ms`.
    pub fn peer_duel(fp32_ms: f64, fp16_ms: f64) -> PeerDuel {
        let run = |variant: &str, label: &str, precision, ms: f64, acc: f64| PeerDuelRun {
            variant: variant.into(),
            label: label.into(),
            precision,
            mode: PeerMode::Eager,
            epochs: (1..=3)
                .map(|epoch| PeerEpoch {
                    epoch,
                    ms: if epoch == 1 { 900.0 } else { ms },
                    train_loss: 0.5 / epoch as f64,
                    test_accuracy: acc,
                })
                .collect(),
            peak_memory_bytes: Some(31_457_280),
            scaling: None,
        };
        PeerDuel {
            python: "/venv/bin/python".into(),
            torch: Some("2.11.0".into()),
            device: Some("NVIDIA H100 80GB HBM3".into()),
            runs: vec![
                run(
                    "eager-fp32",
                    "PyTorch FP32 (TF32 off), eager",
                    Precision::Fp32,
                    fp32_ms,
                    0.91,
                ),
                run(
                    "eager-fp16",
                    "PyTorch AMP fp16 + GradScaler, eager",
                    Precision::Fp16,
                    fp16_ms,
                    0.905,
                ),
            ],
            skipped: Vec::new(),
            note: None,
            comparable: true,
            cancelled: false,
        }
    }
}

/// A PyTorch duel parsed from the peer script's lines, for tests here and beside the run
/// history.
#[cfg(test)]
pub(crate) mod script_lines {
    use super::*;

    const LINES: &str = r#"loading…
{"kind":"env","torch":"2.11.0","device":"NVIDIA H100 80GB HBM3"}
{"kind":"started","variant":"eager-amp-fp16","label":"PyTorch AMP fp16 + GradScaler, eager","precision":"fp16","mode":"eager","epochs":3}
{"kind":"epoch","variant":"eager-amp-fp16","epoch":1,"ms":900.0,"train_loss":0.61,"test_accuracy":0.84}
{"kind":"epoch","variant":"eager-amp-fp16","epoch":2,"ms":190.0,"train_loss":0.41,"test_accuracy":0.87}
{"kind":"epoch","variant":"eager-amp-fp16","epoch":3,"ms":200.0,"train_loss":0.37,"test_accuracy":0.88}
{"kind":"finished","variant":"eager-amp-fp16","peak_memory_bytes":31457280,"scaling":"GradScaler, final scale 65536"}
{"kind":"skipped","variant":"graph-amp-fp16","reason":"no GPU"}
{"kind":"started","variant":"eager-bf16","label":"x","precision":"bf16","mode":"eager","epochs":3}
"#;

    pub(crate) fn built() -> PeerDuel {
        let mut b = PeerDuelBuilder::new("/venv/bin/python");
        for l in LINES.lines().filter_map(parse_line) {
            b.take(l);
        }
        b.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::script_lines::built;
    use super::*;

    #[test]
    fn the_scripts_lines_make_runs_and_other_lines_are_ignored() {
        let d = built();
        assert_eq!(d.torch.as_deref(), Some("2.11.0"));
        assert_eq!(d.runs.len(), 1, "the run that never trained is dropped");
        let r = &d.runs[0];
        assert_eq!(r.precision, Precision::Fp16);
        assert_eq!(r.epochs.len(), 3);
        assert_eq!(r.peak_memory_bytes, Some(31_457_280));
        assert_eq!(d.skipped, vec!["graph-amp-fp16: no GPU".to_string()]);
        // Epochs 2..: (190 + 200) / 2, the warm-up left out as for ours.
        assert_eq!(r.epoch_ms_median(), 195.0);
        assert_eq!(r.timed_epochs(), 2);
        assert_eq!(r.test_accuracy(), 0.88);
    }

    #[test]
    fn the_fp8_peer_stands_beside_our_fp8() {
        let mut b = PeerDuelBuilder::new("py");
        for l in [
            r#"{"kind":"started","variant":"eager-fp8","label":"PyTorch FP8 (im2col + torch._scaled_mm, delayed scaling), bf16 elsewhere, eager","precision":"fp8","mode":"eager","epochs":2}"#,
            r#"{"kind":"epoch","variant":"eager-fp8","epoch":1,"ms":300.0,"train_loss":0.6,"test_accuracy":0.8}"#,
            r#"{"kind":"epoch","variant":"eager-fp8","epoch":2,"ms":120.0,"train_loss":0.4,"test_accuracy":0.85}"#,
            r#"{"kind":"finished","variant":"eager-fp8","peak_memory_bytes":null,"scaling":"delayed scaling, history 1024; final scales x1 2^7, w1 2^10 (conv inputs x, weights w, output grads dy)"}"#,
        ]
        .into_iter()
        .filter_map(parse_line)
        {
            b.take(l);
        }
        let d = b.finish();
        assert_eq!(d.runs[0].precision, Precision::Fp8);
        assert!(d.compare(Precision::Fp16, 60.0).is_empty());
        let c = d.compare(Precision::Fp8, 60.0);
        assert_eq!(c.len(), 1);
        assert!((c[0].speedup - 2.0).abs() < 1e-12);
        assert!(d.runs[0].scaling.as_deref().unwrap_or("").contains("2^7"));
    }

    #[test]
    fn our_speedup_is_their_median_over_ours() {
        let d = built();
        let c = d.compare(Precision::Fp16, 48.75);
        assert_eq!(c.len(), 1);
        assert!((c[0].speedup - 4.0).abs() < 1e-12);
        assert!(d.compare(Precision::Fp32, 50.0).is_empty());
        assert!(d.compare(Precision::Fp16, 0.0).is_empty());
    }
}
