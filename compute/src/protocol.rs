//! Messages spoken by every door (stdio sidecar, HTTP, Tauri): one request, one reply, and
//! events for long jobs. Defined once here and shared with the UI.

use serde::{Deserialize, Serialize};

use crate::error::ErrorKind;
use crate::types::{DuelConfig, DuelEvent};

/// A request to the compute service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Machine, GPU and backend status.
    Doctor,
    /// The data sets and whether each is available.
    ListDatasets,
    /// The lab CNN layer by layer.
    ModelSummary,
    /// Run a duel; progress comes as [`Event`]s.
    Duel {
        /// What to run.
        config: DuelConfig,
    },
    /// Cancel the running job, if any.
    Cancel,
}

/// An error as the doors carry it: a machine-readable code and a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// Error class.
    pub code: ErrorKind,
    /// What went wrong, naming the file, flag or field.
    pub message: String,
}

impl From<&crate::error::ComputeError> for ApiError {
    fn from(e: &crate::error::ComputeError) -> Self {
        ApiError {
            code: e.kind(),
            message: e.to_string(),
        }
    }
}

/// An event of a long job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stream", rename_all = "snake_case")]
pub enum Event {
    /// Duel progress.
    Duel {
        /// The progress.
        event: DuelEvent,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_tagged_json() {
        let r = Request::Duel {
            config: DuelConfig::default(),
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.starts_with("{\"op\":\"duel\""), "{s}");
        let back: Request = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
        let d: Request = serde_json::from_str("{\"op\":\"doctor\"}").unwrap();
        assert_eq!(d, Request::Doctor);
    }
}
