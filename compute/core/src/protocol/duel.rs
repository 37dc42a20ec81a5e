//! The duel's requests and replies: running a duel and reading, exporting or removing a saved one.

use serde::{Deserialize, Serialize};

use crate::types::{DuelConfig, DuelReport};

// Named in the doc links only.
#[cfg(doc)]
use super::{Removed, Request};

/// [`Request::Duel`]: runs a duel (a job); answers a [`DuelOutcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuelRequest {
    /// What to run.
    pub config: DuelConfig,
}

/// [`Request::Run`]: a saved duel's full report; answers its
/// [`DuelReport`](crate::types::DuelReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::RunRemove`]: removes a saved duel; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRemoveRequest {
    /// The run's ID.
    pub id: String,
}

/// [`Request::RunCsv`]: a saved duel as CSV, one row per contestant per epoch; answers a
/// [`CsvExport`](crate::runs::CsvExport) (`{"file_name": .., "csv": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCsvRequest {
    /// The run's ID.
    pub id: String,
}

/// The reply to [`Request::Duel`]: the report, and where it was kept in the run history. On the
/// wire the report's own fields, plus `saved_run` and (when saving failed) `save_note`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuelOutcome {
    /// The duel's report.
    #[serde(flatten)]
    pub report: DuelReport,
    /// The run history's ID of this duel; `None` when it could not be saved.
    #[serde(default)]
    pub saved_run: Option<String>,
    /// Why the duel was not saved (the result is answered all the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_note: Option<String>,
}
