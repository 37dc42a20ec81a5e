//! CI's stage timer: every stage of `cargo xtask test` prints its seconds as it ends, and the
//! run ends with a table of them (stage, seconds, status, and the total) on stderr and in
//! target/ci-stages.json — also when a stage fails (the table, then the error).

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::{json, Value};

struct Row {
    stage: String,
    seconds: f64,
    status: &'static str,
    note: String,
}

pub struct Stages {
    started: Instant,
    rows: Vec<Row>,
    /// Extra facts for the JSON (the test counts).
    extra: serde_json::Map<String, Value>,
    /// Print nothing (this module's own tests: their table is no CI run's).
    quiet: bool,
}

impl Stages {
    pub fn new() -> Self {
        let mut s = Stages {
            started: Instant::now(),
            rows: Vec::new(),
            extra: serde_json::Map::new(),
            quiet: false,
        };
        // .ci/run exports XTASK_CI_T0 (seconds since the epoch) before cargo builds xtask:
        // that build is the first stage, and the total counts from there.
        let since_t0 = std::env::var("XTASK_CI_T0")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .zip(SystemTime::now().duration_since(UNIX_EPOCH).ok())
            .map(|(t0, now)| now.as_secs_f64() - t0)
            .filter(|d| (0.0..86_400.0).contains(d));
        if let Some(secs) = since_t0 {
            if let Some(t) = Instant::now().checked_sub(Duration::from_secs_f64(secs)) {
                s.started = t;
                s.rows.push(Row {
                    stage: "build: xtask (cargo xtask)".to_string(),
                    seconds: secs,
                    status: "ok",
                    note: String::new(),
                });
            }
        }
        s
    }

    /// Runs one stage, timed; its line is printed as it ends (failed or not).
    pub fn run<T>(&mut self, stage: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        if !self.quiet {
            eprintln!("\n==> [{}] {stage}", self.rows.len() + 1);
        }
        let t = Instant::now();
        let r = f();
        let seconds = t.elapsed().as_secs_f64();
        let status = if r.is_ok() { "ok" } else { "FAILED" };
        if !self.quiet {
            eprintln!("<== {stage}: {seconds:.1} s ({status})");
        }
        self.rows.push(Row {
            stage: stage.to_string(),
            seconds,
            status,
            note: String::new(),
        });
        r.with_context(|| format!("stage {} ({stage}) failed", self.rows.len()))
    }

    /// A note on the last stage (shown in the table).
    pub fn note(&mut self, note: impl Into<String>) {
        if let Some(r) = self.rows.last_mut() {
            r.note = note.into();
        }
    }

    /// A stage that did not run, with why.
    pub fn skip(&mut self, stage: &str, why: &str) {
        if !self.quiet {
            eprintln!("\n--- skipped: {stage} ({why})");
        }
        self.rows.push(Row {
            stage: stage.to_string(),
            seconds: 0.0,
            status: "skipped",
            note: why.to_string(),
        });
    }

    /// Work that ran beside the stages (a background install): shown in the table, not added
    /// to the total (the stage that waited for it counts the time it cost).
    pub fn background(&mut self, stage: &str, seconds: f64, ok: bool, note: &str) {
        self.rows.push(Row {
            stage: stage.to_string(),
            seconds,
            status: if ok { "background" } else { "FAILED" },
            note: note.to_string(),
        });
    }

    pub fn set(&mut self, key: &str, value: Value) {
        self.extra.insert(key.to_string(), value);
    }

    /// Prints the table to stderr and writes target/ci-stages.json.
    pub fn finish(&self, result: &Result<()>) {
        self.finish_to(
            &crate::process::root().join("target/ci-stages.json"),
            result,
        );
    }

    fn finish_to(&self, path: &std::path::Path, result: &Result<()>) {
        let total = self.started.elapsed().as_secs_f64();
        let width = self
            .rows
            .iter()
            .map(|r| r.stage.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        let mut table = String::new();
        table.push_str(&format!(
            "\nCI stages ({})\n",
            if result.is_ok() { "passed" } else { "FAILED" }
        ));
        table.push_str(&format!(
            "  {:<width$}  {:>8}  {:<10}  note\n",
            "stage", "seconds", "status"
        ));
        table.push_str(&format!("  {}\n", "-".repeat(width + 34)));
        for r in &self.rows {
            table.push_str(&format!(
                "  {:<width$}  {:>8.1}  {:<10}  {}\n",
                r.stage, r.seconds, r.status, r.note
            ));
        }
        table.push_str(&format!("  {}\n", "-".repeat(width + 34)));
        table.push_str(&format!(
            "  {:<width$}  {:>8.1}  ({:.1} min)\n",
            "total (wall)",
            total,
            total / 60.0
        ));
        if !self.quiet {
            eprint!("{table}");
        }

        let json = json!({
            "ok": result.is_ok(),
            "error": result.as_ref().err().map(|e| format!("{e:#}")),
            "total_seconds": total,
            "stages": self.rows.iter().map(|r| json!({
                "stage": r.stage,
                "seconds": (r.seconds * 10.0).round() / 10.0,
                "status": r.status,
                "note": r.note,
            })).collect::<Vec<_>>(),
            "facts": Value::Object(self.extra.clone()),
        });
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        let written = std::fs::create_dir_all(dir).and_then(|_| {
            std::fs::write(
                path,
                serde_json::to_string_pretty(&json).unwrap_or_default(),
            )
        });
        match written {
            Ok(()) if !self.quiet => eprintln!("wrote {}", path.display()),
            Ok(()) => {}
            Err(e) => eprintln!("cannot write {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_written_when_a_stage_fails() {
        let mut s = Stages::new();
        s.quiet = true;
        s.run("one", || Ok(())).unwrap();
        s.note("a note");
        s.skip("two", "not wanted");
        s.background("three", 2.0, true, "");
        let r: Result<()> = s.run("four", || anyhow::bail!("broken"));
        let path = std::env::temp_dir().join(format!("xtask-stages-{}.json", std::process::id()));
        s.finish_to(&path, &r);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(v["ok"], false);
        // The error names the stage by its number (as `==> [N]` printed it) and name.
        let error = v["error"].as_str().unwrap_or("");
        assert!(
            error.starts_with("stage ") && error.ends_with(" (four) failed: broken"),
            "{error}"
        );
        let stages = v["stages"].as_array().unwrap();
        let names: Vec<&str> = stages
            .iter()
            .map(|r| r["stage"].as_str().unwrap())
            .collect();
        let tail = &names[names.len() - 4..];
        assert_eq!(tail, ["one", "two", "three", "four"]);
        let status: Vec<&str> = stages
            .iter()
            .map(|r| r["status"].as_str().unwrap())
            .collect();
        assert_eq!(
            &status[status.len() - 4..],
            ["ok", "skipped", "background", "FAILED"]
        );
        assert_eq!(stages[stages.len() - 4]["note"], "a note");
    }
}
