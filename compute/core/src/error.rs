//! The engine's error type, shared by every door (CLI exit codes, protocol error replies).

use serde::{Deserialize, Serialize};

/// Whether an error was caused by what the user gave us or by the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A file, flag or request is wrong: the user can fix it (CLI exit code 2).
    BadInput,
    /// The machine failed: I/O, device, network (CLI exit code 1).
    Runtime,
    /// Another long job is running; try again when it ends.
    Busy,
    /// The user cancelled the job.
    Cancelled,
    /// What was asked needs something this machine or build lacks (a CUDA GPU, its driver);
    /// the message says what is missing. Not the request's fault, and not a failure either
    /// (HTTP 409).
    Unavailable,
    /// The work ran, but its numbers left the range they must stay in (training diverged);
    /// the message says which setting to change (HTTP 422).
    Diverged,
}

/// Every failure the engine reports.
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// A file is not what it claims to be.
    #[error("{path}: {reason}")]
    BadFile {
        /// The file (or embedded data set member) that was read.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A flag or request field has an unusable value.
    #[error("invalid {name} '{value}': {reason}")]
    BadArgument {
        /// The flag or field name, e.g. `--batch`.
        name: String,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// A data set could not be found.
    #[error("data set '{name}' not available: {reason}")]
    DatasetUnavailable {
        /// The data set's name.
        name: String,
        /// Where we looked, and what to do.
        reason: String,
    },
    /// An operating-system I/O error on a path.
    #[error("{path}: {source}")]
    Io {
        /// The path being read or written.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A download failed or did not match its checksum.
    #[error("download of {url} failed: {reason}")]
    Download {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A backend this operation needs is missing from this machine or build (no CUDA
    /// driver, no GPU, a build without CUDA): the reason says what is missing.
    #[error("{backend} backend: {reason}")]
    Unavailable {
        /// `cuda`.
        backend: String,
        /// What is missing, and what it would take.
        reason: String,
    },
    /// A backend (CPU or GPU) failed.
    #[error("{backend} backend: {reason}")]
    Backend {
        /// `cpu` or `cuda`.
        backend: String,
        /// What went wrong, as precisely as the backend can say.
        reason: String,
    },
    /// Training diverged (non-finite loss without a loss scaler to absorb it).
    #[error("training diverged in {precision} at epoch {epoch}, step {step}: loss is {loss}; lower --lr")]
    Diverged {
        /// The precision being trained.
        precision: String,
        /// 1-based epoch.
        epoch: usize,
        /// 1-based step within the epoch.
        step: usize,
        /// The loss value printed as text (NaN or inf).
        loss: String,
    },
    /// A request names something that does not exist (an import, a panel, a kernel) or asks
    /// for something refused; the message says which.
    #[error("{0}")]
    BadRequest(String),
    /// A long job is already running.
    #[error("busy: {0} is already running; wait for it or cancel it")]
    Busy(String),
    /// The job was cancelled by the user.
    #[error("cancelled")]
    Cancelled,
}

impl ComputeError {
    /// Classifies the error for exit codes and protocol replies.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ComputeError::BadFile { .. }
            | ComputeError::BadArgument { .. }
            | ComputeError::DatasetUnavailable { .. }
            | ComputeError::BadRequest(_) => ErrorKind::BadInput,
            ComputeError::Busy(_) => ErrorKind::Busy,
            ComputeError::Cancelled => ErrorKind::Cancelled,
            ComputeError::Unavailable { .. } => ErrorKind::Unavailable,
            ComputeError::Diverged { .. } => ErrorKind::Diverged,
            _ => ErrorKind::Runtime,
        }
    }

    /// Shorthand for [`ComputeError::BadArgument`].
    pub fn bad_arg(name: &str, value: impl ToString, reason: impl Into<String>) -> Self {
        ComputeError::BadArgument {
            name: name.into(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// The message for a client of the service (the desktop app, the browser, a script over
    /// `serve`): as [`Display`](std::fmt::Display), except for advice worded for the CLI's
    /// flags (a diverged duel's "lower --lr" becomes the request's `config.lr`).
    pub fn message_for_service(&self) -> String {
        match self {
            ComputeError::Diverged {
                precision,
                epoch,
                step,
                loss,
            } => format!(
                "training diverged in {precision} at epoch {epoch}, step {step}: loss is {loss}; \
                 lower the learning rate (`config.lr`, the duel's learning rate) and run it again"
            ),
            other => other.to_string(),
        }
    }

    /// Shorthand for [`ComputeError::BadFile`].
    pub fn bad_file(path: impl Into<String>, reason: impl Into<String>) -> Self {
        ComputeError::BadFile {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// An error as a page says it to its user: in plain words, without the class's or a flag's
/// internal name. `invalid --epochs '0': must be between 1 and 20` reads `epochs must be
/// between 1 and 20 (0 was given)`; `busy: a duel is already running; wait for it or cancel
/// it` reads `another job is running (a duel): wait for it or cancel it`; a cancelled job
/// says so. Anything else is the message as it is.
pub fn plain_words(kind: ErrorKind, message: &str) -> String {
    let message = message.trim();
    if kind == ErrorKind::Cancelled {
        return "the job was cancelled before its result".into();
    }
    if kind == ErrorKind::Busy {
        let rest = message.strip_prefix("busy: ").unwrap_or(message);
        if let Some((what, _)) = rest.split_once(" is already running") {
            return format!("another job is running ({what}): wait for it or cancel it");
        }
        return rest.to_string();
    }
    if let Some(rest) = message.strip_prefix("invalid ") {
        if let Some((name, tail)) = rest.split_once(" '") {
            if let Some((value, reason)) = tail.split_once("': ") {
                let field = field_words(name);
                return if reason.starts_with("must ") {
                    format!("{field} {reason} ({value} was given)")
                } else {
                    format!("{field} '{value}': {reason}")
                };
            }
        }
    }
    message.to_string()
}

/// A flag or request field's name in words: `--train-limit` and `config.train_limit` read
/// `train limit`.
fn field_words(name: &str) -> String {
    let name = name.trim_start_matches('-');
    let name = name.strip_prefix("config.").unwrap_or(name);
    name.replace(['-', '_', '.'], " ")
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, ComputeError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 37: pages showed "(BadInput): invalid --epochs '0'" and "step_anatomy failed
    /// (Busy)": internal names instead of words.
    #[test]
    fn errors_read_in_plain_words() {
        let epochs = ComputeError::bad_arg("--epochs", 0, "must be between 1 and 20");
        assert_eq!(
            plain_words(epochs.kind(), &epochs.message_for_service()),
            "epochs must be between 1 and 20 (0 was given)"
        );
        let busy = ComputeError::Busy("a duel".into());
        let words = plain_words(busy.kind(), &busy.message_for_service());
        assert_eq!(
            words,
            "another job is running (a duel): wait for it or cancel it"
        );
        let twice =
            ComputeError::bad_arg("--precisions", "fp32", "is listed twice; name each once");
        assert_eq!(
            plain_words(twice.kind(), &twice.to_string()),
            "precisions 'fp32': is listed twice; name each once"
        );
        assert_eq!(
            plain_words(
                ErrorKind::BadInput,
                "invalid train_limit '0': must be at least 1"
            ),
            "train limit must be at least 1 (0 was given)"
        );
        assert_eq!(
            plain_words(ErrorKind::Cancelled, "cancelled"),
            "the job was cancelled before its result"
        );
        for kind in [ErrorKind::BadInput, ErrorKind::Busy, ErrorKind::Runtime] {
            let w = plain_words(kind, "busy: x is already running; wait");
            assert!(
                !w.contains("BadInput") && !w.contains("Busy") && !w.contains("--"),
                "{w}"
            );
        }
        assert_eq!(
            plain_words(ErrorKind::Runtime, "no CUDA driver"),
            "no CUDA driver"
        );
    }
}
