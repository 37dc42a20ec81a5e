//! Act V – The Verdict: a summary built from the user's own measurements (the machine as the
//! doctor sees it and the duels kept in the run history), and its export as one
//! self-contained HTML document (inline CSS, no scripts, nothing fetched from elsewhere).

pub use crate::speedup_basis::{basis_line, Basis};
pub use crate::stats::MIN_RUNS;
use serde::{Deserialize, Serialize};

pub use crate::format::{escape_html, escape_html_into, percent, thousands};
use crate::runs::{utc_date_time, RunList, RunSummary, EPOCH_SPREAD_LIMIT};
use crate::types::{DoctorReport, DuelConfig, Precision};

/// The file name the HTML export gets.
pub const HTML_FILE_NAME: &str = "precision-showdown-verdict.html";

/// The verdict exported as HTML: the answer to
/// [`Request::VerdictHtml`](crate::protocol::Request::VerdictHtml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HtmlExport {
    /// The name the file gets ([`HTML_FILE_NAME`]).
    pub file_name: String,
    /// The document ([`render_html`]).
    pub html: String,
}

/// How many earlier runs the verdict lists besides the newest one.
pub const EARLIER_RUNS: usize = 5;

/// The sentence the verdict says when the history holds no run.
pub const NO_RUN_YET: &str = "No duel run yet — run one in Act II, The Duel.";

/// How many more runs the verdict's "repeat" offers.
pub const REPEATS: usize = 3;

/// The machine, as the verdict describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Program version.
    pub version: String,
    /// CPU model.
    pub cpu: String,
    /// Logical cores.
    pub cores: usize,
    /// Each GPU in words: `NVIDIA H100 (compute capability 9.0, 79.6 GiB, 132 SMs)`.
    pub gpus: Vec<String>,
    /// The backend `auto` picks: `cpu` or `cuda`.
    pub auto_backend: String,
    /// Why.
    pub auto_reason: String,
    /// The machine for [`Origin::is_here`](crate::origin::Origin::is_here).
    #[serde(default)]
    pub here: crate::origin::Here,
}

impl Machine {
    /// The machine `doctor` describes.
    pub fn of(doctor: &DoctorReport) -> Self {
        Machine {
            version: doctor.version.clone(),
            cpu: doctor.cpu.clone(),
            cores: doctor.cores,
            gpus: doctor
                .gpus
                .iter()
                .map(|g| {
                    format!(
                        "{} (compute capability {}, {:.1} GiB, {} SMs)",
                        g.name,
                        g.compute_capability,
                        g.memory_bytes as f64 / (1u64 << 30) as f64,
                        g.sms
                    )
                })
                .collect(),
            auto_backend: doctor.auto_backend.clone(),
            auto_reason: doctor.auto_reason.clone(),
            here: doctor.here(),
        }
    }
}

/// The verdict: the machine, the newest duel and the ones before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// When the verdict was made, Unix seconds.
    pub generated_at: u64,
    /// The machine.
    pub machine: Machine,
    /// The newest saved duel; `None` when the history holds none.
    pub latest: Option<RunSummary>,
    /// Up to [`EARLIER_RUNS`] runs before it, newest first.
    pub earlier: Vec<RunSummary>,
    /// The verdict in one sentence (or [`NO_RUN_YET`]).
    pub headline: String,
    /// Anything that kept history out of the verdict (damaged files, an unreadable folder).
    pub notes: Vec<String>,
    /// What the newest duel's speed-up rests on; `None` without a speed-up.
    #[serde(default)]
    pub basis: Option<Basis>,
    /// The configuration that runs the newest duel again (the "repeat" offer); `None` without
    /// a newest duel.
    #[serde(default)]
    pub repeat: Option<DuelConfig>,
    /// One sentence per contestant of the newest duel whose timed epochs varied by more than
    /// [`EPOCH_SPREAD_LIMIT`].
    #[serde(default)]
    pub flags: Vec<String>,
    /// Every run of the history in groups of one origin and configuration, the newest run's
    /// group first.
    #[serde(default)]
    pub groups: Vec<crate::verdict_groups::OriginGroup>,
    /// Why the newest duel cannot be repeated here (it ran on other hardware); `None` when
    /// it can.
    #[serde(default)]
    pub repeat_blocked: Option<String>,
    /// Where the newest duel ran, in words ([`Origin::words`](crate::origin::Origin::words)).
    #[serde(default)]
    pub latest_origin: Option<String>,
}

impl Verdict {
    /// The verdict from the doctor's report and the run history (newest first), made at
    /// `generated_at` (Unix seconds).
    pub fn build(doctor: &DoctorReport, history: RunList, generated_at: u64) -> Self {
        let basis = history
            .runs
            .first()
            .and_then(|l| Basis::of(l, &history.runs));
        let mut runs = history.runs.into_iter();
        let latest = runs.next();
        let earlier_all: Vec<RunSummary> = runs.collect();
        let headline = latest
            .as_ref()
            .map(|l| headline(l, basis.as_ref()))
            .unwrap_or_else(|| NO_RUN_YET.to_string());
        let flags = latest.as_ref().map(unsteady_flags).unwrap_or_default();
        let here = doctor.here();
        let groups = crate::verdict_groups::group_runs(
            latest
                .iter()
                .chain(earlier_all.iter())
                .cloned()
                .collect::<Vec<_>>()
                .as_slice(),
            &here,
        );
        let earlier: Vec<RunSummary> = earlier_all.into_iter().take(EARLIER_RUNS).collect();
        Verdict {
            groups,
            repeat_blocked: latest
                .as_ref()
                .and_then(|l| l.origin.needs_hardware("Repeat", &here)),
            latest_origin: latest.as_ref().map(|l| l.origin.words(&here)),
            generated_at,
            machine: Machine::of(doctor),
            repeat: latest.as_ref().map(RunSummary::repeat_config),
            latest,
            earlier,
            headline,
            notes: history.skipped,
            basis,
            flags,
        }
    }

    /// Whether the verdict should offer to repeat the newest duel: it has a speed-up that
    /// rests on fewer than [`MIN_RUNS`] runs, or on a contestant whose epochs varied.
    pub fn offers_repeat(&self) -> bool {
        self.repeat.is_some()
            && self.repeat_blocked.is_none()
            && (self.basis.as_ref().is_some_and(|b| !b.enough()) || !self.flags.is_empty())
    }
}

/// The sentence under the verdict's repeat offer: what it does and why.
pub fn repeat_offer(v: &Verdict) -> String {
    let have = v.basis.as_ref().map_or(0, |b| b.runs.len());
    format!(
        "Repeat {REPEATS}× runs the same duel {REPEATS} more times (same data, backend, \
         activation, batch, epochs, threads and seed): the speed-up then rests on {} runs and \
         their spread shows how much is noise. A speed-up is stated from {MIN_RUNS} runs on.",
        have + REPEATS
    )
}

/// The rule the epoch flags follow, in words (stated on the page).
pub fn epoch_rule() -> String {
    format!(
        "A contestant is flagged when its slowest timed epoch took more than {EPOCH_SPREAD_LIMIT}× \
         its fastest (epoch 1, the warm-up, is left out): another program's load or a clock \
         change then weighs on its time."
    )
}

/// One sentence per contestant of `run` whose timed epochs varied by more than
/// [`EPOCH_SPREAD_LIMIT`].
fn unsteady_flags(run: &RunSummary) -> Vec<String> {
    run.unsteady()
        .into_iter()
        .map(|(p, x)| {
            let r = run.result(p);
            format!(
                "{p}'s epochs varied: the slowest timed epoch took {x:.2}× the fastest ({:.1} ms \
                 vs {:.1} ms, over {} timed epochs; the limit is {EPOCH_SPREAD_LIMIT}×): its \
                 times are not steady, repeat the duel.",
                r.map_or(0.0, |r| r.epoch_ms_max),
                r.map_or(0.0, |r| r.epoch_ms_min),
                r.map_or(0, |r| r.timed_epochs)
            )
        })
        .collect()
}

/// The speed-up line of a run: `fp16 vs fp32: 1.85× faster` (or slower), or why there is none.
pub fn speedup_line(run: &RunSummary) -> String {
    match run.speedup_fp16_vs_fp32 {
        Some(x) if x >= 1.0 => format!("fp16 vs fp32: {x:.2}× faster per epoch"),
        Some(x) => format!(
            "fp16 vs fp32: {x:.2}× ({:.2}× slower per epoch)",
            1.0 / x.max(f64::MIN_POSITIVE)
        ),
        None => "fp16 vs fp32: no speed-up to report (the duel did not run both)".into(),
    }
}

/// `1.37× faster` or `1.37× slower` for a speed-up `x` (FP32's time over FP16's).
fn pace(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.2}× faster")
    } else {
        format!("{:.2}× slower", 1.0 / x.max(f64::MIN_POSITIVE))
    }
}

/// One sentence on `run`: who was faster and by how much, on how many runs and with what
/// spread, with its setup and settings and the accuracies. Below [`MIN_RUNS`] runs the
/// speed-up is given as a single measurement, not as the verdict.
fn headline(run: &RunSummary, basis: Option<&Basis>) -> String {
    let on = format!("on {} ({})", run.backend, run.device);
    let settings = format!("{}; {}", run.dataset, run.settings());
    match (
        run.result(Precision::Fp32),
        run.result(Precision::Fp16),
        basis,
    ) {
        (Some(a), Some(b), Some(basis)) => {
            let acc = format!(
                "test accuracy FP16 {} against FP32 {} in the newest run",
                percent(b.test_accuracy),
                percent(a.test_accuracy)
            );
            if !basis.enough() {
                let n = basis.runs.len();
                return format!(
                    "Not yet a verdict: FP16 mixed precision ran {} than FP32 {on} in {} \
                     ({settings}) — {n} run{} cannot tell a speed-up from noise; repeat the duel \
                     {REPEATS}× to measure its spread. {}.",
                    pace(basis.median),
                    if n == 1 {
                        "the only run".to_string()
                    } else {
                        format!(
                            "the median of {n} runs ({:.2}–{:.2}×)",
                            basis.min, basis.max
                        )
                    },
                    if n == 1 { "" } else { "s" },
                    capitalise(&acc)
                );
            }
            let n = basis.runs.len();
            if basis.min < 1.0 && basis.max > 1.0 {
                return format!(
                    "No consistent speed-up: over {n} runs {on} ({settings}) FP16 mixed \
                     precision ranged from {} to {} against FP32 (median {:.2}×). {}.",
                    pace(basis.min),
                    pace(basis.max),
                    basis.median,
                    capitalise(&acc)
                );
            }
            format!(
                "FP16 mixed precision trained {} than FP32 {on} ({settings}): the median of {n} \
                 runs, spread {:.2}–{:.2}×; {acc}.",
                pace(basis.median),
                basis.min,
                basis.max
            )
        }
        _ => {
            let each: Vec<String> = run
                .results
                .iter()
                .map(|r| format!("{} {}", r.precision, percent(r.test_accuracy)))
                .collect();
            format!(
                "The latest duel {on} ({settings}) ran {}: test accuracy {}.",
                run.precisions
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                each.join(", ")
            )
        }
    }
}

/// `s` with its first letter in upper case.
fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

const STYLE: &str =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:58rem;\
margin:2rem auto;padding:0 1rem;color:#1d2330;line-height:1.45}\
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #d6dbe4;padding-bottom:.2rem}\
.muted{color:#5d6677}.headline{font-size:1.15rem;background:#eef3fb;border-left:4px solid #3569c8;\
padding:.6rem .9rem}table{border-collapse:collapse;margin:.6rem 0}\
th,td{border:1px solid #d6dbe4;padding:.3rem .7rem;text-align:left}th{background:#f3f5f9}\
td.num{text-align:right;font-variant-numeric:tabular-nums}.note{color:#9a4b00}";

/// `verdict` as a self-contained HTML document: the machine, the newest duel's result table
/// (Precision | Epoch Time (ms) | Max Memory (MB) | Test accuracy), the speed-up, earlier runs
/// and the date. Every string from the machine or the history is escaped.
pub fn render_html(verdict: &Verdict) -> String {
    let e = escape_html;
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str("<title>Precision Showdown — The Verdict</title>\n");
    h.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    h.push_str("<h1>Precision Showdown — The Verdict</h1>\n");
    h.push_str(&format!(
        "<p class=\"muted\">Made {} by showdown {}, from the run history; each result names \
the machine it ran on.</p>\n",
        e(&utc_date_time(verdict.generated_at)),
        e(&verdict.machine.version)
    ));
    h.push_str(&format!(
        "<p class=\"headline\" id=\"headline\">{}</p>\n",
        e(&verdict.headline)
    ));

    let m = &verdict.machine;
    h.push_str("<h2>Where the verdict was made</h2>\n<table>\n");
    h.push_str(&format!(
        "<tr><th>CPU</th><td>{} ({} cores)</td></tr>\n",
        e(&m.cpu),
        m.cores
    ));
    let gpus = if m.gpus.is_empty() {
        "none found".to_string()
    } else {
        m.gpus.iter().map(|g| e(g)).collect::<Vec<_>>().join("<br>")
    };
    h.push_str(&format!("<tr><th>GPU</th><td>{gpus}</td></tr>\n"));
    h.push_str(&format!(
        "<tr><th>Backend (auto)</th><td>{} — {}</td></tr>\n</table>\n",
        e(&m.auto_backend),
        e(&m.auto_reason)
    ));

    h.push_str("<h2>The latest duel</h2>\n");
    match &verdict.latest {
        None => h.push_str(&format!("<p id=\"no-run\">{}</p>\n", e(NO_RUN_YET))),
        Some(run) => {
            h.push_str(&format!(
                "<p>{}: {}.</p>\n<p id=\"latest-origin\">Ran on {}.</p>\n\
<p id=\"settings\">Settings: {}.</p>\n",
                e(&utc_date_time(run.saved_at)),
                e(&run.setup()),
                e(verdict.latest_origin.as_deref().unwrap_or_default()),
                e(&run.config().summary()),
            ));
            h.push_str(&result_table(run));
            h.push_str(&format!(
                "<p id=\"speedup\"><strong>{}</strong></p>\n",
                e(&speedup_line(run))
            ));
            if let Some(b) = &verdict.basis {
                h.push_str(&format!("<p id=\"basis\">{}</p>\n", e(&basis_line(b))));
            }
            if let Some(t) = &run.pytorch_sentence {
                h.push_str(&format!("<p id=\"pytorch\">{}</p>\n", e(t)));
            }
            if let Some(t) = &run.fp8_sentence {
                h.push_str(&format!("<p id=\"fp8\">{}</p>\n", e(t)));
            }
            for f in &verdict.flags {
                h.push_str(&format!("<p class=\"note flag\">{}</p>\n", e(f)));
            }
            h.push_str(&format!("<p class=\"muted\">{}</p>\n", e(&epoch_rule())));
        }
    }

    if !verdict.earlier.is_empty() {
        h.push_str(
            "<h2>Earlier runs</h2>\n<table>\n<thead><tr><th>Date</th><th>Data set</th>\
<th>Backend</th><th>Settings</th><th>Test accuracy</th><th>Speed-up fp16 vs fp32</th></tr></thead>\n<tbody>\n",
        );
        for run in &verdict.earlier {
            let acc: Vec<String> = run
                .results
                .iter()
                .map(|r| format!("{} {}", r.precision, percent(r.test_accuracy)))
                .collect();
            let speedup = run
                .speedup_fp16_vs_fp32
                .map(|x| format!("{x:.2}×"))
                .unwrap_or_else(|| "—".into());
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                e(&utc_date_time(run.saved_at)),
                e(&run.dataset),
                e(&run.backend),
                e(&run.device),
                e(&run.settings()),
                e(&acc.join(", ")),
                e(&speedup)
            ));
        }
        h.push_str("</tbody>\n</table>\n");
    }

    if !verdict.groups.is_empty() {
        h.push_str(&crate::verdict_groups::groups_html(&verdict.groups));
    }
    for note in &verdict.notes {
        h.push_str(&format!("<p class=\"note\">{}</p>\n", e(note)));
    }
    h.push_str(
        "<p class=\"muted\">Epoch time is the median training time of an epoch (evaluation \
excluded); max memory is the peak the trainer held, from the backend's own allocation \
accounting.</p>\n</body>\n</html>\n",
    );
    h
}

/// The result table of `run`: Precision | Epoch Time (ms) | Max Memory (MB) | Test accuracy.
fn result_table(run: &RunSummary) -> String {
    let mut t = String::from(
        "<table id=\"result-table\">\n<thead><tr><th>Precision</th><th>Epoch Time (ms)</th>\
<th>Max Memory (MB)</th><th>Test accuracy</th></tr></thead>\n<tbody>\n",
    );
    for r in &run.results {
        t.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{:.1}</td>\
<td class=\"num\">{}</td></tr>\n",
            escape_html(r.precision.as_str()),
            r.epoch_ms_median,
            r.peak_memory_bytes as f64 / 1e6,
            escape_html(&percent(r.test_accuracy))
        ));
    }
    t.push_str("</tbody>\n</table>\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{GpuInfo, Probe};

    const XSS: &str = "<img src=x onerror=alert(1)>";

    fn doctor(device: &str) -> DoctorReport {
        let probe = Probe {
            ok: false,
            detail: "absent".into(),
        };
        DoctorReport {
            version: "0.1.0".into(),
            cpu: device.into(),
            cores: 2,
            cpu_features: vec![],
            cuda_built: false,
            driver: probe.clone(),
            nvrtc: probe.clone(),
            kernels: probe.clone(),
            nvml: probe,
            gpus: vec![GpuInfo {
                index: 0,
                name: device.into(),
                compute_capability: "9.0".into(),
                memory_bytes: 80 << 30,
                sms: 132,
            }],
            auto_backend: "cpu".into(),
            auto_reason: "no <driver>".into(),
            machine: Some(test_machine()),
        }
    }

    fn history(n: usize) -> RunList {
        RunList {
            runs: (0..n)
                .map(|i| {
                    let r = crate::runs::examples::report(XSS, 200.0, 100.0 + i as f64);
                    RunSummary::of(&format!("run-{i}"), 1_741_944_615 - i as u64, &r)
                })
                .collect(),
            skipped: vec![format!("skipped {XSS}.json: damaged")],
        }
    }

    #[test]
    fn the_verdict_is_built_from_the_newest_run() {
        let v = Verdict::build(&doctor("Grace"), history(8), 1_741_944_700);
        assert_eq!(v.latest.as_ref().map(|r| r.id.as_str()), Some("run-0"));
        assert_eq!(v.earlier.len(), EARLIER_RUNS);
        assert_eq!(v.earlier[0].id, "run-1");
        // Eight runs of the same duel: fp16 at 100..107 ms against fp32's 200.
        assert!(
            v.headline.contains("trained 1.93× faster than FP32")
                && v.headline
                    .contains("the median of 8 runs, spread 1.87–2.00×"),
            "{}",
            v.headline
        );
        assert!(
            v.headline.contains("90.75 %") && v.headline.contains("91.25 %"),
            "{}",
            v.headline
        );
        assert!(!v.offers_repeat());
        assert_eq!(
            v.machine.gpus,
            ["Grace (compute capability 9.0, 80.0 GiB, 132 SMs)"]
        );
        let back: Verdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn the_html_has_the_table_the_speedup_and_the_date() {
        let v = Verdict::build(&doctor("Grace"), history(2), 1_741_944_700);
        let html = render_html(&v);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("Precision Showdown"));
        for want in [
            "<th>Precision</th><th>Epoch Time (ms)</th><th>Max Memory (MB)</th><th>Test accuracy</th>",
            "<td>fp32</td><td class=\"num\">200.0</td><td class=\"num\">12.5</td><td class=\"num\">91.25 %</td>",
            "fp16 vs fp32: 2.00× faster per epoch",
            "2025-03-14 09:31 UTC",
            "Earlier runs",
        ] {
            assert!(html.contains(want), "{want} not in {html}");
        }
        // Self-contained: no scripts, no external resources.
        for banned in [
            "<script", "<link", "src=\"", "http://", "https://", "@import",
        ] {
            assert!(!html.contains(banned), "{banned} in the HTML");
        }
    }

    #[test]
    fn every_string_is_escaped() {
        let v = Verdict::build(&doctor(XSS), history(2), 0);
        let html = render_html(&v);
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(html.contains("no &lt;driver&gt;"));
    }

    #[test]
    fn no_run_yet_is_a_verdict_not_an_error() {
        let v = Verdict::build(&doctor("Grace"), RunList::default(), 0);
        assert_eq!(v.latest, None);
        assert_eq!(v.headline, NO_RUN_YET);
        let html = render_html(&v);
        assert!(html.contains("No duel run yet"), "{html}");
        assert!(!html.contains("result-table"));
    }

    /// The machine the tests' doctor describes (and their duels ran on).
    fn test_machine() -> crate::origin::MachineId {
        crate::origin::MachineId {
            host: "test".into(),
            id: "test-machine".into(),
        }
    }

    /// `n` runs of one duel on the test machine, newest first, with these fp16 epoch times
    /// (fp32 at 100 ms).
    fn runs_of(fp16_ms: &[f64]) -> RunList {
        RunList {
            runs: fp16_ms
                .iter()
                .enumerate()
                .map(|(i, ms)| {
                    let mut r = crate::runs::examples::report("Grace", 100.0, *ms);
                    r.stamp = Some(crate::origin::Stamp {
                        machine: test_machine(),
                        ..Default::default()
                    });
                    RunSummary::of(&format!("run-{i}"), 1_741_944_615 - i as u64, &r)
                })
                .collect(),
            skipped: vec![],
        }
    }

    #[test]
    fn a_headline_from_one_noisy_run_is_not_a_verdict() {
        // Issue 26: "FP16 1.37× faster" came from a single run slowed by load.
        let v = Verdict::build(&doctor("Grace"), runs_of(&[73.0]), 0);
        assert!(
            v.headline.starts_with("Not yet a verdict")
                && v.headline.contains("1.37× faster")
                && v.headline.contains("in the only run")
                && v.headline.contains("repeat the duel 3×"),
            "{}",
            v.headline
        );
        let b = v.basis.as_ref().unwrap();
        assert_eq!((b.runs.len(), b.enough()), (1, false));
        assert!(v.offers_repeat());
        let again = v.repeat.as_ref().unwrap();
        assert_eq!(
            (again.train_limit, again.batch),
            (Some(1024), 128),
            "the repeat runs the same duel"
        );
        assert!(
            repeat_offer(&v).contains("rests on 4 runs"),
            "{}",
            repeat_offer(&v)
        );
        let html = render_html(&v);
        assert!(
            html.contains("Speed-up rests on 1 run of this duel"),
            "{html}"
        );
    }

    #[test]
    fn the_headline_states_how_many_runs_and_their_spread() {
        let v = Verdict::build(&doctor("Grace"), runs_of(&[80.0, 50.0, 100.0 / 1.37]), 0);
        assert!(
            v.headline.contains("1.37× faster")
                && v.headline
                    .contains("the median of 3 runs, spread 1.25–2.00×"),
            "{}",
            v.headline
        );
        assert_eq!(
            basis_line(v.basis.as_ref().unwrap()),
            "Speed-up rests on 3 runs of this duel: median 1.37×, spread 1.25–2.00× (newest \
             first: 1.25×, 2.00×, 1.37×)."
        );
        // A spread on both sides of 1 is no speed-up.
        let v = Verdict::build(&doctor("Grace"), runs_of(&[73.0, 102.0, 99.0]), 0);
        assert!(
            v.headline
                .starts_with("No consistent speed-up: over 3 runs"),
            "{}",
            v.headline
        );
    }

    #[test]
    fn runs_of_another_activation_are_not_pooled() {
        let mut list = runs_of(&[73.0, 100.0, 100.0]);
        // The two older runs trained GELU: another duel, so the newest rests on itself alone.
        for r in &mut list.runs[1..] {
            r.activation = crate::model::Activation::Gelu;
        }
        let v = Verdict::build(&doctor("Grace"), list, 0);
        assert_eq!(v.basis.as_ref().unwrap().runs, ["run-0"]);
        assert!(v.headline.contains("ReLU, batch 128"), "{}", v.headline);
        let html = render_html(&v);
        assert!(
            html.contains("<td>GELU, batch 128, 2 epochs, 2 threads, seed 0</td>"),
            "{html}"
        );
    }

    #[test]
    fn unsteady_epochs_are_flagged_with_the_rule_stated() {
        let mut r = crate::runs::examples::report("Grace", 100.0, 73.0);
        let mut third = r.runs[1].epochs[1].clone();
        third.epoch = 3;
        third.ms = 140.0;
        r.runs[1].epochs.push(third);
        let list = RunList {
            runs: vec![RunSummary::of("run-0", 1, &r)],
            skipped: vec![],
        };
        let v = Verdict::build(&doctor("Grace"), list, 0);
        assert_eq!(v.flags.len(), 1, "{:?}", v.flags);
        assert!(
            v.flags[0].starts_with("fp16's epochs varied: the slowest timed epoch took 1.92×"),
            "{}",
            v.flags[0]
        );
        let html = render_html(&v);
        assert!(html.contains("more than 1.25× its fastest"), "{html}");
    }

    #[test]
    fn a_duel_without_fp16_still_has_a_headline() {
        let mut list = history(1);
        list.runs[0].results.truncate(1);
        list.runs[0].precisions.truncate(1);
        list.runs[0].speedup_fp16_vs_fp32 = None;
        let v = Verdict::build(&doctor("Grace"), list, 0);
        assert!(
            v.headline.contains("ran fp32: test accuracy fp32 91.25 %"),
            "{}",
            v.headline
        );
        assert!(render_html(&v).contains("no speed-up to report"));
    }

    /// Regression (issue 37): "Repeat 3×" was offered for an H200 duel on a machine without a
    /// GPU and failed with "no CUDA driver"; the export said "from runs on this machine".
    #[test]
    fn a_duel_from_another_machine_is_not_offered_for_repeat_and_the_export_names_it() {
        let mut h200 = crate::runs::examples::report("NVIDIA H200 (sm_90)", 100.0, 90.0);
        h200.backend = "cuda".into();
        let history = RunList {
            runs: vec![RunSummary::of(
                "20261128-130103-019-00hn",
                1_795_870_863,
                &h200,
            )],
            skipped: vec![],
        };
        let v = Verdict::build(&doctor("Grace"), history, 1_795_900_000);
        assert!(!v.offers_repeat());
        let why = v.repeat_blocked.clone().unwrap_or_default();
        assert!(
            why.contains("NVIDIA H200") && why.contains("2026-11-28"),
            "{why}"
        );
        let html = render_html(&v);
        assert!(!html.contains("runs on this machine"), "{html}");
        assert!(html.contains("Ran on NVIDIA H200 (compute capability 9.0) (machine not recorded), 2026-11-28, not this machine."), "{html}");
        assert!(html.contains("Another machine: NVIDIA H200"), "{html}");
        assert!(!html.contains("This machine:"), "{html}");
        assert_eq!(v.groups.len(), 1);
    }
}
