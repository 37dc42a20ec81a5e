//! `cargo xtask bench cpu`: ours against PyTorch on the same CPU, and its table.

use anyhow::{bail, Context, Result};
use std::process::Command;

use crate::process::{cargo, output, root, run};

/// The median of the finite values in `v` (NaN and infinities left out); `None` when there are
/// none.
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mid = v.get(n / 2).copied()?;
    if n % 2 == 1 {
        Some(mid)
    } else {
        Some((v.get(n / 2 - 1).copied()? + mid) / 2.0)
    }
}

/// The smallest and the largest finite value in `v`; `None` when there are none.
pub(crate) fn min_max(v: &[f64]) -> Option<(f64, f64)> {
    v.iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(None, |acc, x| match acc {
            None => Some((x, x)),
            Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
        })
}

/// The median epoch time of epochs 2.. (of the only epoch when there is one), ms, of a report's
/// `epochs` list (`[{"ms": …}, …]`): the rule of `showdown`'s `epoch_ms_median`, applied to both
/// contestants alike. `None` when an epoch has no time.
pub(crate) fn epoch_ms_from_2(epochs: &serde_json::Value) -> Option<f64> {
    let ms = epochs
        .as_array()?
        .iter()
        .map(|e| e["ms"].as_f64())
        .collect::<Option<Vec<f64>>>()?;
    median(ms.get(usize::from(ms.len() > 1)..)?)
}

/// One contestant's result in one run of `bench cpu`.
pub(crate) struct Sample {
    /// Its name in the table: "showdown fp32", "pytorch-2.11.0-cpu bf16 autocast".
    name: String,
    /// fp32, fp16 or bf16.
    precision: String,
    /// Whether it is the PyTorch peer.
    peer: bool,
    /// Training images per epoch.
    train: f64,
    /// Median epoch time of epochs 2.., ms.
    epoch_ms: f64,
    /// Test accuracy after the last epoch.
    accuracy: f64,
}

/// One row of `bench cpu`'s table: a contestant's results over the runs.
pub(crate) struct BenchRow {
    /// See [`Sample::name`].
    name: String,
    /// fp32, fp16 or bf16.
    precision: String,
    /// Whether it is the PyTorch peer.
    peer: bool,
    /// Training images per epoch.
    train: f64,
    /// Per run: the median epoch time of epochs 2.., ms.
    epoch_ms: Vec<f64>,
    /// Per run: the test accuracy after the last epoch.
    accuracy: Vec<f64>,
}

impl BenchRow {
    /// The median over runs of the per-run epoch time, ms.
    fn ms(&self) -> Option<f64> {
        median(&self.epoch_ms)
    }

    /// Training images per second at [`BenchRow::ms`].
    fn samples_per_s(&self) -> Option<f64> {
        self.ms().map(|ms| self.train / (ms / 1e3))
    }

    /// Ours against the peer row it is compared with (fp32 with PyTorch fp32, fp16 and bf16
    /// with PyTorch bf16 autocast): the ratio of samples/s and that row. `None` for the peer's
    /// own rows and where the peer was not measured.
    fn vs_peer<'a>(&self, rows: &'a [BenchRow]) -> Option<(f64, &'a BenchRow)> {
        if self.peer {
            return None;
        }
        let want = if self.precision == "fp32" {
            "fp32"
        } else {
            "bf16"
        };
        let peer = rows.iter().find(|r| r.peer && r.precision == want)?;
        Some((self.samples_per_s()? / peer.samples_per_s()?, peer))
    }
}

/// Adds `s` to its contestant's row in `rows` (a new row at the end for one not seen yet).
pub(crate) fn record(rows: &mut Vec<BenchRow>, s: Sample) {
    match rows.iter_mut().find(|r| r.name == s.name) {
        Some(r) => {
            r.epoch_ms.push(s.epoch_ms);
            r.accuracy.push(s.accuracy);
        }
        None => rows.push(BenchRow {
            name: s.name,
            precision: s.precision,
            peer: s.peer,
            train: s.train,
            epoch_ms: vec![s.epoch_ms],
            accuracy: vec![s.accuracy],
        }),
    }
}

/// "fp32 812 ms, bf16 824 ms": one run's epoch times, for the progress lines.
pub(crate) fn brief(samples: &[Sample]) -> String {
    samples
        .iter()
        .map(|s| format!("{} {:.0} ms", s.precision, s.epoch_ms))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `showdown duel --backend cpu` (fp32, fp16, bf16) on the embedded MNIST sample with the
/// release build: its JSON report.
pub(crate) fn run_showdown(epochs: usize) -> Result<serde_json::Value> {
    let bin = root().join("target/release/showdown");
    let out = Command::new(&bin)
        .args([
            "duel",
            "--backend",
            "cpu",
            "--dataset",
            "mnist-sample",
            "--precisions",
            "fp32,fp16,bf16",
            "--epochs",
            &epochs.to_string(),
            "--json",
        ])
        .output()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    if !out.status.success() {
        bail!(
            "showdown duel failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("parsing showdown's JSON report")
}

/// The contestants of a `showdown duel --json` report.
pub(crate) fn showdown_samples(report: &serde_json::Value) -> Result<Vec<Sample>> {
    let train = report["dataset"]["train"]
        .as_f64()
        .context("showdown's report has no dataset.train")?;
    let runs = report["runs"]
        .as_array()
        .context("showdown's report has no runs")?;
    runs.iter()
        .map(|r| {
            let precision = r["precision"]
                .as_str()
                .context("a run in showdown's report has no precision")?;
            Ok(Sample {
                name: format!("showdown {precision}"),
                precision: precision.to_string(),
                peer: false,
                train,
                epoch_ms: epoch_ms_from_2(&r["epochs"])
                    .with_context(|| format!("showdown {precision}: no epoch times"))?,
                accuracy: r["test_accuracy"]
                    .as_f64()
                    .with_context(|| format!("showdown {precision}: no test_accuracy"))?,
            })
        })
        .collect()
}

/// One run of the PyTorch peer (`bench/torch_cpu_peer.py`: fp32 and bf16 autocast, on the IDX
/// files the embedded sample is made of): its JSON lines (one per precision) and contestants.
pub(crate) fn run_peer(
    python: &str,
    epochs: usize,
) -> Result<(Vec<serde_json::Value>, Vec<Sample>)> {
    let script = root().join("bench/torch_cpu_peer.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(root().join("compute/data"))
        .args([
            "mnist10k-",
            "--epochs",
            &epochs.to_string(),
            "--precisions",
            "fp32,bf16",
        ])
        .output()
        .with_context(|| format!("cannot run {python}"))?;
    if !out.status.success() {
        bail!(
            "{python} {} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(serde_json::Value::is_object)
        .collect();
    if lines.is_empty() {
        bail!("{python} {} printed no result", script.display());
    }
    let samples = lines
        .iter()
        .map(|l| {
            let precision = l["precision"]
                .as_str()
                .context("a line of the peer has no precision")?;
            let name = format!(
                "{} {precision}{}",
                l["peer"].as_str().unwrap_or("peer"),
                if precision == "fp32" { "" } else { " autocast" }
            );
            Ok(Sample {
                precision: precision.to_string(),
                peer: true,
                train: l["train"]
                    .as_f64()
                    .with_context(|| format!("{name}: no train count"))?,
                epoch_ms: epoch_ms_from_2(&l["epochs"])
                    .with_context(|| format!("{name}: no epoch times"))?,
                accuracy: l["epochs"]
                    .as_array()
                    .and_then(|e| e.last())
                    .and_then(|e| e["test_accuracy"].as_f64())
                    .with_context(|| format!("{name}: no test_accuracy"))?,
                name,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((lines, samples))
}

/// This process's command line as `cargo xtask …` (arguments with spaces or quotes quoted).
pub(crate) fn command_line() -> String {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| {
            let a = a.to_string_lossy().into_owned();
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect();
    format!("cargo xtask {}", args.join(" "))
}

/// `cargo xtask bench cpu`: CPU training on the embedded MNIST sample, ours against PyTorch on
/// the same CPU in the same command. `showdown` is built once (release); then `runs` rounds of
/// `showdown duel --backend cpu` (fp32, fp16, bf16) and the PyTorch peer
/// `bench/torch_cpu_peer.py` (fp32, bf16 autocast), interleaved (ours, the peer, ours, the peer,
/// …) so that the machine's drifts hit both alike. A run's figure for a contestant is its median
/// epoch time of epochs 2..; the table (stdout, last, after the command line, date, CPU and
/// threads) gives per contestant the median over runs, the spread (min–max over runs), samples/s
/// at the median, the median test accuracy and the ratio of samples/s to the peer (fp32 against
/// PyTorch fp32, fp16 and bf16 against PyTorch bf16 autocast). Progress goes to stderr, one line
/// per run; the rows and every run's raw reports to target/bench/cpu.json. Without torch at
/// `python` the peer is skipped with a note and ours is still measured.
pub(crate) fn bench_cpu(epochs: usize, runs: usize, python: &str) -> Result<()> {
    let command = command_line();
    let date = output(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "unknown".into());
    run(cargo().args(["build", "--release", "-p", "showdown"]))?;
    let out_dir = root().join("target/bench");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let mut rows: Vec<BenchRow> = Vec::new();
    let mut raw_ours: Vec<serde_json::Value> = Vec::new();
    let mut raw_peer: Vec<Vec<serde_json::Value>> = Vec::new();
    let mut peer_skipped: Option<String> = None;
    for i in 1..=runs {
        let report = run_showdown(epochs).with_context(|| format!("run {i}/{runs}: showdown"))?;
        let ours = showdown_samples(&report)
            .with_context(|| format!("run {i}/{runs}: reading showdown's report"))?;
        let mut progress = format!("run {i}/{runs}: showdown {}", brief(&ours));
        raw_ours.push(report);
        ours.into_iter().for_each(|s| record(&mut rows, s));
        if peer_skipped.is_none() {
            match run_peer(python, epochs) {
                Ok((lines, peer)) => {
                    progress += &format!("; peer {}", brief(&peer));
                    raw_peer.push(lines);
                    peer.into_iter().for_each(|s| record(&mut rows, s));
                }
                // Never measured: no torch there (or no Python); ours alone, said why.
                Err(e) if raw_peer.is_empty() => {
                    eprintln!(
                        "peer skipped: {e:#}. To measure it, pass --python PATH to a Python with torch (and numpy) installed"
                    );
                    peer_skipped = Some(format!("{e:#}"));
                }
                Err(e) => {
                    progress += &format!("; peer failed: {e:#}");
                    raw_peer.push(Vec::new());
                }
            }
        }
        eprintln!("{progress}");
    }
    rows.sort_by_key(|r| r.peer); // stable: ours first, each side in the order it ran.

    let first = raw_ours.first().context("no run of showdown")?;
    let cpu = first["device"].as_str().unwrap_or("?").to_string();
    let threads = &first["config"]["threads"];
    let peer_threads = raw_peer
        .iter()
        .flatten()
        .find_map(|l| l["threads"].as_u64());

    let table: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let spread = min_max(&r.epoch_ms);
            let vs = r.vs_peer(&rows);
            serde_json::json!({
                "run": r.name,
                "precision": r.precision,
                "runs": r.epoch_ms.len(),
                "epoch_ms_median": r.ms(),
                "epoch_ms_min": spread.map(|s| s.0),
                "epoch_ms_max": spread.map(|s| s.1),
                "epoch_ms_runs": r.epoch_ms,
                "samples_per_s": r.samples_per_s(),
                "test_accuracy": median(&r.accuracy),
                "test_accuracy_runs": r.accuracy,
                "vs_peer": vs.map(|v| v.0),
                "vs_peer_run": vs.map(|v| v.1.name.clone()),
            })
        })
        .collect();
    let json = serde_json::json!({
        "bench": "cpu",
        "command": command,
        "date": date,
        "device": cpu,
        "threads": threads,
        "peer_threads": peer_threads,
        "epochs": epochs,
        "runs": runs,
        "peer_skipped": peer_skipped,
        "rows": table,
        "raw": {"showdown": raw_ours, "peer": raw_peer},
    });
    let path = out_dir.join("cpu.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&json).context("serializing the bench JSON")?,
    )
    .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());

    let dataset = &first["dataset"];
    println!("command: {command}");
    println!("date: {date}");
    println!(
        "CPU: {cpu}; showdown {threads} threads{}",
        peer_threads
            .map(|t| format!(", PyTorch {t} threads"))
            .unwrap_or_default()
    );
    println!(
        "CPU training, {} ({} train / {} test), batch {}, {epochs} epochs per run, {runs} runs \
         interleaved (showdown, then PyTorch); a run's figure: its median epoch of epochs 2..; \
         below: the median over runs, the spread min–max over runs",
        dataset["name"].as_str().unwrap_or("mnist-sample"),
        dataset["train"],
        dataset["test"],
        first["config"]["batch"],
    );
    let w = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(28);
    println!(
        "{:<w$} | {:>9} | {:>11} | {:>9} | {:>8} | {:>11}",
        "run", "epoch ms", "spread", "samples/s", "test acc", "vs peer"
    );
    println!("{}", "-".repeat(w + 63));
    let num = |v: Option<f64>, digits: usize| {
        v.map(|x| format!("{x:.digits$}"))
            .unwrap_or_else(|| "—".into())
    };
    for r in &rows {
        let spread = min_max(&r.epoch_ms)
            .map(|(lo, hi)| format!("{lo:.0}–{hi:.0}"))
            .unwrap_or_else(|| "—".into());
        let vs = r
            .vs_peer(&rows)
            .map(|(ratio, p)| format!("{ratio:.2}× {}", p.precision))
            .unwrap_or_else(|| if r.peer { "" } else { "—" }.into());
        println!(
            "{:<w$} | {:>9} | {:>11} | {:>9} | {:>8} | {:>11}",
            r.name,
            num(r.ms(), 1),
            spread,
            num(r.samples_per_s(), 0),
            num(median(&r.accuracy), 4),
            vs
        );
    }
    for r in rows.iter().filter(|r| r.epoch_ms.len() != runs) {
        println!("note: {}: {} of {runs} runs", r.name, r.epoch_ms.len());
    }
    if let Some(why) = &peer_skipped {
        println!("peer: skipped ({why}); pass --python PATH to a Python with torch to measure it");
    }
    Ok(())
}
