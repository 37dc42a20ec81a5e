//! Run history: the duels the service finished, kept so that they survive restarts of the app
//! and of the compute sidecar, and exported as JSON or CSV.
//!
//! The pure part (always compiled, also for the UI) holds what the history looks like on the
//! wire: [`RunSummary`] (one line of the history), [`RunList`] and the CSV export
//! [`duel_csv`]. The engine (`compute::runs::RunStore`) keeps one JSON file per run:
//!
//! ```text
//! ROOT/runs/20250314-093015-123-00k3.json   {"saved_at": 1741944615, "report": DuelReport}
//! ```
//!
//! `ROOT` is the same data folder as the Nsight Compute imports' library
//! (`$SHOWDOWN_DATA_HOME`, else the user's data folder).

use serde::{Deserialize, Serialize};

use crate::types::{DuelReport, Precision};

/// The longest run identifier accepted, in characters.
pub const MAX_ID_CHARS: usize = 64;

/// One contestant's headline numbers in a saved run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionResult {
    /// The precision trained.
    pub precision: Precision,
    /// Test accuracy after the last epoch (0..1).
    pub test_accuracy: f64,
    /// Median epoch time, milliseconds (see [`RunReport::epoch_ms_median`](crate::types::RunReport::epoch_ms_median)).
    pub epoch_ms_median: f64,
    /// Peak bytes held by the trainer.
    pub peak_memory_bytes: u64,
}

/// One saved duel as the history lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's identifier: a sortable UTC timestamp and a short suffix
    /// (`20250314-093015-123-00k3`).
    pub id: String,
    /// When the run was saved, Unix seconds.
    pub saved_at: u64,
    /// The data set's name.
    pub dataset: String,
    /// Training images used.
    pub train_images: usize,
    /// Test images used.
    pub test_images: usize,
    /// `cpu` or `cuda`.
    pub backend: String,
    /// The device in words (CPU model or GPU name).
    pub device: String,
    /// The contestants, in the order they ran.
    pub precisions: Vec<Precision>,
    /// Epochs per contestant.
    pub epochs: usize,
    /// Each contestant's headline numbers, in the order they ran.
    pub results: Vec<PrecisionResult>,
    /// FP32's median epoch time over FP16's (above 1: FP16 was faster), when both ran and
    /// both times are positive.
    pub speedup_fp16_vs_fp32: Option<f64>,
    /// The contestants whose trained model was kept with the run (Act I can open them).
    #[serde(default)]
    pub models: Vec<Precision>,
}

impl RunSummary {
    /// The summary of `report`, saved as `id` at `saved_at` (Unix seconds).
    pub fn of(id: &str, saved_at: u64, report: &DuelReport) -> Self {
        RunSummary {
            id: id.to_string(),
            saved_at,
            dataset: report.dataset.name.clone(),
            train_images: report.dataset.train,
            test_images: report.dataset.test,
            backend: report.backend.clone(),
            device: report.device.clone(),
            precisions: report.runs.iter().map(|r| r.precision).collect(),
            epochs: report.config.epochs,
            results: report
                .runs
                .iter()
                .map(|r| PrecisionResult {
                    precision: r.precision,
                    test_accuracy: r.test_accuracy,
                    epoch_ms_median: r.epoch_ms_median,
                    peak_memory_bytes: r.peak_memory_bytes,
                })
                .collect(),
            speedup_fp16_vs_fp32: speedup_fp16_vs_fp32(report),
            models: report
                .runs
                .iter()
                .filter(|r| r.model.is_some())
                .map(|r| r.precision)
                .collect(),
        }
    }

    /// The contestant's results, if it ran.
    pub fn result(&self, precision: Precision) -> Option<&PrecisionResult> {
        self.results.iter().find(|r| r.precision == precision)
    }
}

/// FP32's median epoch time over FP16's in `report` (above 1: FP16 was faster); `None` unless
/// both ran with positive, finite times.
pub fn speedup_fp16_vs_fp32(report: &DuelReport) -> Option<f64> {
    let ms = |p: Precision| {
        report
            .runs
            .iter()
            .find(|r| r.precision == p)
            .map(|r| r.epoch_ms_median)
            .filter(|ms| ms.is_finite() && *ms > 0.0)
    };
    Some(ms(Precision::Fp32)? / ms(Precision::Fp16)?)
}

/// The run history, newest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunList {
    /// The saved runs that could be read, newest first.
    pub runs: Vec<RunSummary>,
    /// One note per history file that could not be read (damaged or unreadable), naming it;
    /// the other runs are listed all the same.
    pub skipped: Vec<String>,
}

/// Whether `id` can name a saved run: 1 to [`MAX_ID_CHARS`] characters, each a digit, a
/// lower-case ASCII letter or `-` (an identifier becomes a file name, so no `.`, `/` or `\`).
pub fn is_run_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
}

/// The file name a CSV export of run `id` gets.
pub fn csv_file_name(id: &str) -> String {
    format!("precision-showdown-run-{id}.csv")
}

/// The file name a JSON export of run `id` gets.
pub fn json_file_name(id: &str) -> String {
    format!("precision-showdown-run-{id}.json")
}

/// A saved run exported as CSV: the answer to
/// [`Request::RunCsv`](crate::protocol::Request::RunCsv).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CsvExport {
    /// The name the file gets ([`csv_file_name`]).
    pub file_name: String,
    /// The CSV text ([`duel_csv`]).
    pub csv: String,
}

/// The header of [`duel_csv`].
pub const CSV_HEADER: [&str; 10] = [
    "precision",
    "epoch",
    "train_loss",
    "test_loss",
    "test_accuracy",
    "epoch_ms",
    "peak_memory_bytes",
    "loss_scale",
    "skipped_steps",
    "samples_per_s",
];

/// `report` as CSV: a header ([`CSV_HEADER`]), then one row per contestant per epoch. The
/// peak memory and samples per second are the contestant's (the same on each of its rows); a
/// loss that is not a number (every step skipped, or diverged weights) is an empty cell.
pub fn duel_csv(report: &DuelReport) -> String {
    // Writing to memory cannot fail; should the csv crate ever report an error, the text
    // says so instead of panicking.
    write_csv(report).unwrap_or_else(|e| format!("# the CSV could not be written: {e}\n"))
}

fn write_csv(report: &DuelReport) -> Result<String, csv::Error> {
    let num = |v: f64| {
        if v.is_finite() {
            v.to_string()
        } else {
            String::new()
        }
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for run in &report.runs {
        for e in &run.epochs {
            w.write_record([
                run.precision.as_str().to_string(),
                e.epoch.to_string(),
                num(e.train_loss),
                num(e.test_loss),
                num(e.test_accuracy),
                num(e.ms),
                run.peak_memory_bytes.to_string(),
                num(e.loss_scale),
                e.skipped_steps.to_string(),
                num(run.samples_per_s),
            ])?;
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `unix_secs` as a UTC date and time, `2025-03-14 09:30 UTC`.
pub fn utc_date_time(unix_secs: u64) -> String {
    let (y, mo, d, h, mi, _) = utc_parts(unix_secs);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02} UTC")
}

/// `unix_secs` split into UTC (year, month, day, hour, minute, second).
pub fn utc_parts(unix_secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Howard Hinnant's civil_from_days (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem / 60 % 60) as u32,
        (rem % 60) as u32,
    )
}

/// Example reports, for tests of every crate that handles reports (and nothing else).
pub mod examples {
    use super::*;
    use crate::types::{ConfigUsed, DatasetUsed, EpochReport, RunReport};

    /// `r` as JSON text: reports hold NaN losses (never equal to themselves), so tests compare
    /// reports by their JSON.
    pub fn json(r: &DuelReport) -> String {
        serde_json::to_string(r).unwrap_or_default()
    }

    /// A two-contestant report on `device`: fp32 at `fp32_ms`, fp16 at `fp16_ms` per epoch.
    pub fn report(device: &str, fp32_ms: f64, fp16_ms: f64) -> DuelReport {
        let run = |precision, ms: f64, acc: f64, scale: f64| RunReport {
            precision,
            epochs: (1..=2)
                .map(|epoch| EpochReport {
                    epoch,
                    ms,
                    train_loss: if epoch == 1 { f64::NAN } else { 0.25 },
                    test_accuracy: acc,
                    test_loss: 0.3,
                    skipped_steps: 2 - epoch,
                    loss_scale: scale,
                })
                .collect(),
            epoch_ms_median: ms,
            samples_per_s: 1000.0,
            peak_memory_bytes: 12_500_000,
            test_accuracy: acc,
            skipped_steps: 1,
            final_loss_scale: scale,
            steps: 10,
            telemetry: None,
            step_times: None,
            model: None,
            grad_samples: Vec::new(),
            scale_history: Vec::new(),
            memory: None,
        };
        DuelReport {
            backend: "cpu".into(),
            device: device.into(),
            backend_reason: "asked for --backend cpu".into(),
            dataset: DatasetUsed {
                name: "mnist-sample".into(),
                train: 1024,
                test: 500,
            },
            config: ConfigUsed {
                epochs: 2,
                batch: 128,
                seed: 0,
                lr: 1e-3,
                dropout: 0.5,
                activation: crate::model::Activation::Relu,
                threads: 2,
            },
            runs: vec![
                run(Precision::Fp32, fp32_ms, 0.9125, 1.0),
                run(Precision::Fp16, fp16_ms, 0.9075, 32768.0),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::examples::report;
    use super::*;

    #[test]
    fn a_summary_has_the_headline_numbers_and_the_speedup() {
        let s = RunSummary::of(
            "20250314-093015-123-00k3",
            7,
            &report("cpu x", 200.0, 100.0),
        );
        assert_eq!(s.precisions, vec![Precision::Fp32, Precision::Fp16]);
        assert_eq!(
            (s.dataset.as_str(), s.epochs, s.train_images),
            ("mnist-sample", 2, 1024)
        );
        assert_eq!(
            s.result(Precision::Fp16).map(|r| r.test_accuracy),
            Some(0.9075)
        );
        assert_eq!(s.speedup_fp16_vs_fp32, Some(2.0));
        let mut only32 = report("cpu", 200.0, 100.0);
        only32.runs.truncate(1);
        assert_eq!(speedup_fp16_vs_fp32(&only32), None);
        assert_eq!(speedup_fp16_vs_fp32(&report("cpu", 200.0, 0.0)), None);
    }

    #[test]
    fn the_csv_has_a_row_per_contestant_and_epoch() {
        let csv = duel_csv(&report("cpu", 200.0, 100.5));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + 2 * 2, "{csv}");
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(lines[1], "fp32,1,,0.3,0.9125,200,12500000,1,1,1000");
        assert_eq!(
            lines[4],
            "fp16,2,0.25,0.3,0.9075,100.5,12500000,32768,0,1000"
        );
        // Read back with the same crate: every row has every column.
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        assert_eq!(
            r.records()
                .filter(|x| x.as_ref().is_ok_and(|x| x.len() == 10))
                .count(),
            4
        );
    }

    #[test]
    fn ids_allow_only_digits_lower_case_letters_and_dashes() {
        assert!(is_run_id("20250314-093015-123-00k3"));
        for bad in [
            "",
            "../x",
            "a/b",
            "A1",
            "x.json",
            "a b",
            "a\\b",
            &"a".repeat(65),
        ] {
            assert!(!is_run_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(utc_date_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date_time(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_parts(1_741_944_615), (2025, 3, 14, 9, 30, 15));
    }
}
