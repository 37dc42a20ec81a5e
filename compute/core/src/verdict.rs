//! Act V – The Verdict: a summary built from the user's own measurements (the machine as the
//! doctor sees it and the duels kept in the run history), and its export as one
//! self-contained HTML document (inline CSS, no scripts, nothing fetched from elsewhere).

use serde::{Deserialize, Serialize};

use crate::runs::{utc_date_time, RunList, RunSummary};
use crate::types::{DoctorReport, Precision};

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
}

impl Verdict {
    /// The verdict from the doctor's report and the run history (newest first), made at
    /// `generated_at` (Unix seconds).
    pub fn build(doctor: &DoctorReport, history: RunList, generated_at: u64) -> Self {
        let mut runs = history.runs.into_iter();
        let latest = runs.next();
        let earlier: Vec<RunSummary> = runs.take(EARLIER_RUNS).collect();
        let headline = latest
            .as_ref()
            .map(headline)
            .unwrap_or_else(|| NO_RUN_YET.to_string());
        Verdict {
            generated_at,
            machine: Machine::of(doctor),
            latest,
            earlier,
            headline,
            notes: history.skipped,
        }
    }
}

/// `0.9125` as `91.25 %` (the Act II result table's form).
pub fn percent(accuracy: f64) -> String {
    format!("{:.2} %", accuracy * 100.0)
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

/// One sentence on `run`: who was faster and by how much, and the accuracies.
fn headline(run: &RunSummary) -> String {
    let on = format!("on {} ({})", run.backend, run.device);
    match (
        run.result(Precision::Fp32),
        run.result(Precision::Fp16),
        run.speedup_fp16_vs_fp32,
    ) {
        (Some(a), Some(b), Some(x)) => {
            let pace = if x >= 1.0 {
                format!("trained {x:.2}× faster than FP32")
            } else {
                format!(
                    "trained {:.2}× slower than FP32",
                    1.0 / x.max(f64::MIN_POSITIVE)
                )
            };
            format!(
                "FP16 mixed precision {pace} {on}, reaching {} test accuracy against FP32's {}.",
                percent(b.test_accuracy),
                percent(a.test_accuracy)
            )
        }
        _ => {
            let each: Vec<String> = run
                .results
                .iter()
                .map(|r| format!("{} {}", r.precision, percent(r.test_accuracy)))
                .collect();
            format!(
                "The latest duel {on} ran {}: test accuracy {}.",
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

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by their character references: safe as HTML
/// text and inside quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_html_into(&mut out, s);
    out
}

/// [`escape_html`], appending to `out`.
pub fn escape_html_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
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
        "<p class=\"muted\">Made {} by showdown {}, from runs on this machine.</p>\n",
        e(&utc_date_time(verdict.generated_at)),
        e(&verdict.machine.version)
    ));
    h.push_str(&format!(
        "<p class=\"headline\" id=\"headline\">{}</p>\n",
        e(&verdict.headline)
    ));

    let m = &verdict.machine;
    h.push_str("<h2>The machine</h2>\n<table>\n");
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
                "<p>{}: {} on {} ({}); {} training / {} test images, {} epoch(s).</p>\n",
                e(&utc_date_time(run.saved_at)),
                e(&run.dataset),
                e(&run.backend),
                e(&run.device),
                run.train_images,
                run.test_images,
                run.epochs
            ));
            h.push_str(&result_table(run));
            h.push_str(&format!(
                "<p id=\"speedup\"><strong>{}</strong></p>\n",
                e(&speedup_line(run))
            ));
        }
    }

    if !verdict.earlier.is_empty() {
        h.push_str(
            "<h2>Earlier runs</h2>\n<table>\n<thead><tr><th>Date</th><th>Data set</th>\
<th>Backend</th><th>Test accuracy</th><th>Speed-up fp16 vs fp32</th></tr></thead>\n<tbody>\n",
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
                "<tr><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                e(&utc_date_time(run.saved_at)),
                e(&run.dataset),
                e(&run.backend),
                e(&run.device),
                e(&acc.join(", ")),
                e(&speedup)
            ));
        }
        h.push_str("</tbody>\n</table>\n");
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
        assert!(v.headline.contains("2.00× faster"), "{}", v.headline);
        assert!(
            v.headline.contains("90.75 %") && v.headline.contains("91.25 %"),
            "{}",
            v.headline
        );
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
        assert_eq!(escape_html("a&b\"c'd"), "a&amp;b&quot;c&#39;d");
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
}
