//! The `bench` commands' side of the lab jobs (`compute::lab`): a job whose stages print to
//! stderr, and the JSON copy of a report.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use compute::lab::{LabJob, LabProgress};
use compute::protocol::Event;

/// Runs `f` with a [`LabJob`] named `name` whose progress goes to stderr.
pub fn with_job<T>(
    name: &'static str,
    f: impl FnOnce(&mut LabJob<'_>) -> compute::error::Result<T>,
) -> Result<T> {
    let cancel = AtomicBool::new(false);
    let mut print = |e: Event| match e {
        Event::Lab {
            event: LabProgress::Stage {
                stage, done, total, ..
            },
        } => eprintln!("[{done}/{total}] {stage} …"),
        Event::Lab {
            event: LabProgress::Note { text, .. },
        } => eprintln!("note: {text}"),
        _ => {}
    };
    let mut job = LabJob::new(name, &mut print, &cancel);
    f(&mut job).map_err(|e| as_flags(e).into())
}

/// A refused request field named as the command's flag (`batch` → `--batch`,
/// `budget_ms/max_reps` → `--budget-ms/--max-reps`): the CLI's user typed flags.
fn as_flags(e: compute::ComputeError) -> compute::ComputeError {
    match e {
        compute::ComputeError::BadArgument {
            name,
            value,
            reason,
        } if !name.starts_with('-') => compute::ComputeError::BadArgument {
            name: name
                .split('/')
                .map(|n| format!("--{}", n.replace('_', "-")))
                .collect::<Vec<_>>()
                .join("/"),
            value,
            reason,
        },
        other => other,
    }
}

/// Writes `report` as pretty JSON to `path`, when given.
pub fn write_json<T: serde::Serialize>(report: &T, path: Option<&Path>) -> Result<()> {
    if let Some(p) = path {
        std::fs::write(p, serde_json::to_string_pretty(report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
