//! PyTorch beside our duel (Act II's "with PyTorch"): the duel's own images are written as IDX
//! files beside `bench/duel_peer.py` in a temporary folder, the peer interpreter runs the
//! script on the same settings, and each line it prints becomes a [`DuelEvent`] as it comes.
//! The script and its lines are described in [`showdown_core::pytorch_duel`].

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::child::run::ChildLimits;
use crate::data::idx::encode_idx;
use crate::data::{Dataset, Split};
use crate::error::{ComputeError, Result};
use crate::lab::peers;
use crate::lab::PeerStatus;
use crate::types::{DuelConfig, DuelEvent};
pub use showdown_core::pytorch_duel::*;

/// The script, as committed in `bench/`.
pub const SCRIPT: &str = include_str!("../../bench/duel_peer.py");

/// The script's limits: a duel on a CPU may take hours, so only the output is held short; a
/// cancel stops it at once.
const LIMITS: ChildLimits = ChildLimits {
    time: Duration::from_secs(12 * 3600),
    stdout_bytes: 16 << 20,
    stderr_bytes: 4 << 20,
};

/// Writes one split as two IDX files (`<name>-images.idx`, `<name>-labels.idx`).
fn write_split(dir: &Path, name: &str, s: &Split, rows: usize, cols: usize) -> Result<()> {
    let n = u32::try_from(s.len())
        .map_err(|_| ComputeError::BadRequest(format!("{name}: too many images for IDX")))?;
    let files = [
        (
            format!("{name}-images.idx"),
            encode_idx(&[n, rows as u32, cols as u32], &s.images),
        ),
        (format!("{name}-labels.idx"), encode_idx(&[n], &s.labels)),
    ];
    for (file, bytes) in files {
        let path = dir.join(file);
        std::fs::write(&path, bytes).map_err(|source| ComputeError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// Where PyTorch trains: on the GPU when ours did and PyTorch sees CUDA, else on the CPU (and a
/// sentence when that makes the times incomparable).
fn device_for(ours_backend: &str, peer: &PeerStatus) -> (&'static str, Option<String>) {
    match (ours_backend == "cuda", peer.cuda) {
        (true, true) => ("cuda", None),
        (true, false) => (
            "cpu",
            Some(format!(
                "this PyTorch ({}) sees no CUDA GPU, so it trained on the CPU: its times are not \
                 comparable with ours on the GPU",
                peer.torch.as_deref().unwrap_or("?")
            )),
        ),
        (false, _) => ("cpu", None),
    }
}

/// Runs PyTorch's side of the duel `cfg` on `d` (the images our contestants trained on), with
/// the interpreter of `peer`, after ours ran on `ours_backend` (`cuda` on GPU `cfg.device`, or
/// `cpu` with `threads` CPU threads; on the CPU PyTorch takes as many, and all of the CPU's
/// when ours ran on the GPU). Each line becomes a [`DuelEvent::Peer`] or
/// [`DuelEvent::PeerNote`]. A peer that cannot run (no torch), fails or is cancelled gives a
/// [`PeerDuel`] whose note says why, with the runs it made; ours, finished before, are kept.
pub fn run_peer_duel(
    cfg: &DuelConfig,
    d: &Dataset,
    ours_backend: &str,
    threads: usize,
    peer: &PeerStatus,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<PeerDuel> {
    let mut built = PeerDuelBuilder::new(&peer.python);
    if peer.torch.is_none() {
        built.note(peer.note.clone());
        on_event(DuelEvent::PeerNote {
            text: peer.note.clone(),
        });
        return Ok(built.finish());
    }
    let (device, why) = device_for(ours_backend, peer);
    if why.is_some() {
        built.not_comparable();
    }
    // Named after this process: swept at the next start if this process is killed.
    let dir = crate::child::temp_dir().map_err(|source| ComputeError::Io {
        path: "the temporary folder".into(),
        source,
    })?;
    write_split(dir.path(), "train", &d.train, d.rows, d.cols)?;
    write_split(dir.path(), "test", &d.test, d.rows, d.cols)?;
    let script = dir.path().join("duel_peer.py");
    std::fs::write(&script, SCRIPT).map_err(|source| ComputeError::Io {
        path: script.display().to_string(),
        source,
    })?;
    let precisions = cfg
        .precisions
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let mut cmd = Command::new(&peer.python);
    cmd.arg(&script)
        .arg("--data")
        .arg(dir.path())
        .args(["--device", device, "--precisions", &precisions])
        .args(["--epochs", &cfg.epochs.to_string()])
        .args(["--batch", &cfg.batch.to_string()])
        .args(["--lr", &cfg.lr.to_string()])
        .args(["--seed", &cfg.seed.to_string()])
        .args(["--dropout", &cfg.dropout.to_string()])
        .args(["--activation", cfg.activation.name()])
        .args(["--fp8-scaling", cfg.fp8_scaling.as_str()]);
    if device == "cuda" {
        cmd.args(["--cuda-device", &cfg.device.to_string()]);
    } else if ours_backend == "cpu" {
        cmd.args(["--threads", &threads.max(1).to_string()]);
    }
    if let Some(why) = &why {
        on_event(DuelEvent::PeerNote { text: why.clone() });
    }
    let epochs = cfg.epochs;
    let finished = peers::run_streaming(
        cmd,
        LIMITS,
        &|| cancel.load(Ordering::Relaxed),
        &mut |line| {
            let Some(line) = parse_line(line) else {
                return;
            };
            let note = match &line {
                PeerLine::Env { torch, device } => Some(format!("PyTorch {torch} on {device}")),
                PeerLine::Skipped { variant, reason } => {
                    Some(format!("PyTorch {variant} skipped: {reason}"))
                }
                _ => None,
            };
            if let Some(run) = built.take(line) {
                on_event(DuelEvent::Peer {
                    run: run.clone(),
                    epochs,
                });
            }
            if let Some(text) = note {
                on_event(DuelEvent::PeerNote { text });
            }
        },
    );
    match finished {
        Ok(f) if f.success => {
            if let Some(why) = why {
                built.note(why);
            }
        }
        Ok(f) => {
            let last = f.last_error_line();
            let text = format!(
                "the PyTorch script stopped ({}){}",
                f.status,
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            );
            on_event(DuelEvent::PeerNote { text: text.clone() });
            built.note(text);
        }
        Err(e) if e.kind() == crate::error::ErrorKind::Cancelled => {
            // Ours had finished: they are kept, with PyTorch's runs up to the cancel.
            let done = built.runs_so_far();
            let text = format!(
                "PyTorch was cancelled after {done} of its run(s) had started; ours had finished \
                 and are kept"
            );
            on_event(DuelEvent::PeerNote { text: text.clone() });
            built.note(text);
            built.cancelled();
        }
        Err(e) => {
            let text = format!("PyTorch did not finish: {e}");
            on_event(DuelEvent::PeerNote { text: text.clone() });
            built.note(text);
        }
    }
    Ok(built.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Precision;

    fn dataset(n: usize) -> Dataset {
        Dataset {
            name: "t".into(),
            rows: 28,
            cols: 28,
            train: Split {
                images: (0..n * 784).map(|i| (i % 251) as u8).collect(),
                labels: (0..n).map(|i| (i % 10) as u8).collect(),
            },
            test: Split {
                images: vec![7; 3 * 784],
                labels: vec![1, 2, 3],
            },
        }
    }

    fn status(python: &str, torch: Option<&str>) -> PeerStatus {
        PeerStatus {
            python: python.into(),
            source: "setting".into(),
            torch: torch.map(str::to_string),
            cuda: false,
            device: None,
            ready: false,
            note: "PyTorch is not beside our rows: install torch".into(),
        }
    }

    #[test]
    fn the_idx_files_hold_the_duels_images() {
        let dir = tempfile::tempdir().unwrap();
        let d = dataset(5);
        write_split(dir.path(), "train", &d.train, 28, 28).unwrap();
        let img = std::fs::read(dir.path().join("train-images.idx")).unwrap();
        assert_eq!(&img[..4], &[0, 0, 8, 3]);
        assert_eq!(&img[4..16], &[0, 0, 0, 5, 0, 0, 0, 28, 0, 0, 0, 28]);
        assert_eq!(&img[16..], &d.train.images[..]);
        let lab = std::fs::read(dir.path().join("train-labels.idx")).unwrap();
        assert_eq!(&lab[..8], &[0, 0, 8, 1, 0, 0, 0, 5]);
        assert_eq!(&lab[8..], &d.train.labels[..]);
    }

    #[test]
    fn without_torch_the_note_says_what_to_install_and_nothing_runs() {
        let cfg = DuelConfig::default();
        let mut notes = Vec::new();
        let p = run_peer_duel(
            &cfg,
            &dataset(2),
            "cpu",
            1,
            &status("/no/python", None),
            &mut |e| notes.push(e),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert!(p.runs.is_empty());
        assert!(p.note.as_deref().unwrap().contains("install torch"));
        assert_eq!(notes.len(), 1);
    }

    #[cfg(unix)]
    use crate::lab::peers::tests::fake_python;

    /// A stand-in interpreter that prints the script's lines: every line becomes an event as
    /// it comes, and the runs and the arguments are those of the duel.
    #[cfg(unix)]
    #[test]
    fn the_scripts_lines_become_events_and_runs() {
        let (_dir, py) = fake_python(
            r#"echo "$@" > "$(dirname "$0")/args"
echo '{"kind":"env","torch":"2.11.0","device":"CPU"}'
echo 'some warning'
echo '{"kind":"started","variant":"eager-fp32","label":"PyTorch FP32","precision":"fp32","mode":"eager","epochs":2}'
echo '{"kind":"epoch","variant":"eager-fp32","epoch":1,"ms":20.0,"train_loss":1.0,"test_accuracy":0.5}'
echo '{"kind":"epoch","variant":"eager-fp32","epoch":2,"ms":10.0,"train_loss":0.5,"test_accuracy":0.75}'
echo '{"kind":"finished","variant":"eager-fp32","peak_memory_bytes":null,"scaling":null}'"#,
        );
        let cfg = DuelConfig {
            epochs: 2,
            batch: 64,
            precisions: vec![Precision::Fp32],
            ..DuelConfig::default()
        };
        let mut events = Vec::new();
        let p = run_peer_duel(
            &cfg,
            &dataset(4),
            "cpu",
            2,
            &status(&py, Some("2.11.0")),
            &mut |e| events.push(e),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(p.runs.len(), 1);
        assert_eq!(p.runs[0].epoch_ms_median(), 10.0);
        assert_eq!(p.torch.as_deref(), Some("2.11.0"));
        assert_eq!(p.note, None);
        let peer_events = events
            .iter()
            .filter(|e| matches!(e, DuelEvent::Peer { .. }))
            .count();
        assert_eq!(peer_events, 4, "started, two epochs, finished");
        let args = std::fs::read_to_string(_dir.path().join("args")).unwrap();
        assert!(
            args.contains("--device cpu --precisions fp32 --epochs 2 --batch 64"),
            "{args}"
        );
        assert!(args.contains("--threads 2"), "{args}");
        assert!(args.contains("--fp8-scaling delayed"), "{args}");
    }

    #[cfg(unix)]
    #[test]
    fn a_failing_script_keeps_what_ran_and_says_why() {
        let (_dir, py) = fake_python(
            r#"echo '{"kind":"started","variant":"eager-fp32","label":"x","precision":"fp32","mode":"eager","epochs":2}'
echo '{"kind":"epoch","variant":"eager-fp32","epoch":1,"ms":20.0,"train_loss":1.0,"test_accuracy":0.5}'
echo 'RuntimeError: out of memory' >&2
exit 3"#,
        );
        let p = run_peer_duel(
            &DuelConfig::default(),
            &dataset(2),
            "cpu",
            1,
            &status(&py, Some("2.11.0")),
            &mut |_| {},
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(p.runs.len(), 1);
        let note = p.note.unwrap();
        assert!(note.contains("RuntimeError: out of memory"), "{note}");
    }

    #[cfg(unix)]
    #[test]
    fn a_cancel_stops_the_script_at_once_and_keeps_what_ran() {
        let (_dir, py) = fake_python(
            r#"echo '{"kind":"started","variant":"eager-fp32","label":"x","precision":"fp32","mode":"eager","epochs":2}'
echo '{"kind":"epoch","variant":"eager-fp32","epoch":1,"ms":20.0,"train_loss":1.0,"test_accuracy":0.5}'
sleep 30"#,
        );
        let cancel = AtomicBool::new(false);
        let t = std::time::Instant::now();
        let p = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                cancel.store(true, Ordering::Relaxed);
            });
            run_peer_duel(
                &DuelConfig::default(),
                &dataset(2),
                "cpu",
                1,
                &status(&py, Some("2.11.0")),
                &mut |_| {},
                &cancel,
            )
            .unwrap()
        });
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(p.cancelled);
        assert_eq!(p.runs.len(), 1, "the epoch before the cancel is kept");
        assert!(p.note.unwrap().contains("cancelled"));
    }
}
