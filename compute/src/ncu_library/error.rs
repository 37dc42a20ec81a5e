//! Why the Nsight Compute import library could not do what was asked ([`StoreError`]), and
//! the helpers that name the file in it.

use std::path::Path;

use super::files::FileError;
use crate::error::ComputeError;
use crate::ncu::{NcuError, PANEL_IDS};

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The operating system refused a read or write.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// No import has this identifier.
    // The folder is not in the message: a client of the service learns nothing of the
    // server's paths from it.
    #[error("no import '{id}' (`showdown ncu list` shows the imports)")]
    UnknownImport {
        /// The identifier asked for.
        id: String,
        /// The store's folder (for the server's own logs; not in the message).
        store: String,
    },
    /// The import has no screenshot with this identifier.
    #[error("import {id} has no screenshot '{screenshot}'")]
    UnknownScreenshot {
        /// The import.
        id: String,
        /// The screenshot identifier asked for.
        screenshot: String,
    },
    /// The import has no kernel with this ID.
    #[error("import {id} has no kernel with ID {kernel} (its kernels: {known})")]
    UnknownKernel {
        /// The import.
        id: String,
        /// The kernel ID asked for.
        kernel: u64,
        /// The IDs it has (the first few).
        known: String,
    },
    /// Not one of the seven panels.
    #[error("unknown panel '{panel}': the panels are {}", PANEL_IDS.join(", "))]
    UnknownPanel {
        /// The panel asked for.
        panel: String,
    },
    /// The file is not a usable PNG or JPEG.
    #[error("{name}: {reason}")]
    BadImage {
        /// The image's file name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A caption or name is unusable.
    #[error("invalid {what}: {reason}")]
    BadText {
        /// `caption` or `file name`.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A file of the store is damaged (edited by hand, or a disk fault).
    #[error("{path}: damaged store file: {reason}")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Too many screenshots are being decoded at once: their memory budget is spent.
    #[error("busy: other screenshots being decoded hold {in_use_mib} MiB of the {budget_mib} MiB decode budget; try again in a moment")]
    Busy {
        /// MiB held by other decodes.
        in_use_mib: u64,
        /// The budget, in MiB.
        budget_mib: u64,
    },
    /// The stored source file no longer imports.
    #[error("{path}: {source}")]
    Import {
        /// The stored source.
        path: String,
        /// The importer's error.
        #[source]
        source: NcuError,
    },
}

impl From<StoreError> for ComputeError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Io { path, source } => ComputeError::Io { path, source },
            StoreError::Damaged { path, reason } => ComputeError::bad_file(path, reason),
            StoreError::Import { path, source } => ComputeError::bad_file(path, source.to_string()),
            StoreError::BadImage { name, reason } => ComputeError::bad_file(name, reason),
            StoreError::Busy {
                in_use_mib,
                budget_mib,
            } => ComputeError::Busy(format!(
                "the decoding of other screenshots ({in_use_mib} MiB of the {budget_mib} MiB decode budget)"
            )),
            other => ComputeError::BadRequest(other.to_string()),
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, StoreError>;

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A store file that could not be read, as the store's error.
pub(super) fn file_error(path: &Path, e: FileError) -> StoreError {
    match e {
        FileError::Missing => StoreError::Io {
            path: path.display().to_string(),
            source: std::io::ErrorKind::NotFound.into(),
        },
        FileError::Io(source) => StoreError::Io {
            path: path.display().to_string(),
            source,
        },
        FileError::Refused(reason) => StoreError::Damaged {
            path: path.display().to_string(),
            reason,
        },
    }
}

pub(super) fn damaged(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::Damaged {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// At most 80 characters of `s`, for a message.
pub(super) fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}
