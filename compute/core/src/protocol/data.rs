//! The data-set requests and replies: a page of samples, and the download job with its progress.

use serde::{Deserialize, Serialize};

// Named in the doc links only.
#[cfg(doc)]
use super::{Event, Request};

fn default_sample_count() -> usize {
    64
}

/// [`Request::DatasetSamples`]: a page of real images of a data set with their labels;
/// answers [`DatasetSamples`](crate::types::DatasetSamples).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSamplesRequest {
    /// The data set's name (`mnist-sample`, `fashion-mnist`, `mnist`).
    pub dataset: String,
    /// The split (default `test`).
    #[serde(default)]
    pub split: crate::types::DataSplit,
    /// Index of the first image in the split (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Images on the page (default 64, at most
    /// [`MAX_SAMPLES_PER_PAGE`](crate::types::MAX_SAMPLES_PER_PAGE)).
    #[serde(default = "default_sample_count")]
    pub count: usize,
}

/// [`Request::DataFetch`]: downloads data set `dataset` (only `mnist` is downloadable) into
/// the service's data folder (a job); answers [`DataFetched`]. The mirrors and the files'
/// SHA-256 digests are the service's own (built in, or from its environment), never the
/// request's: a remote page cannot make the server fetch an address of its choosing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataFetchRequest {
    /// The data set's name (`mnist`).
    pub dataset: String,
}

/// One file of a [`DataFetched`] reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchedFile {
    /// The file's name (`train-images-idx3-ubyte.gz`).
    pub name: String,
    /// Where it is on the service's machine.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The mirror it came from, or `cached` when it was already there with the right SHA-256.
    pub from: String,
}

/// The reply to [`Request::DataFetch`]: the data set as [`ListDatasets`](Request::ListDatasets)
/// now lists it (available, and where it is read from) and its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataFetched {
    /// The data set after the download.
    pub dataset: crate::types::DatasetSummary,
    /// Each file, verified.
    pub files: Vec<FetchedFile>,
}

/// Progress of a [`Request::DataFetch`] job: `{"type":"bytes","file":..,"bytes":..}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FetchProgress {
    /// File `index` of `files` (1-based) starts downloading from `mirror`.
    Started {
        /// The file's name.
        file: String,
        /// Its place in the list, from 1.
        index: usize,
        /// Files in the list.
        files: usize,
        /// The mirror's base URL.
        mirror: String,
    },
    /// `bytes` of the file received so far (a tick: a door may thin these out).
    Bytes {
        /// The file's name.
        file: String,
        /// Bytes received so far.
        bytes: u64,
        /// The file's size, when the mirror says it.
        total: Option<u64>,
    },
    /// A mirror failed for the file (unreachable, an HTTP error, a wrong SHA-256): nothing of
    /// it was kept and the next mirror is tried.
    MirrorFailed {
        /// The file's name.
        file: String,
        /// The mirror's base URL.
        mirror: String,
        /// What went wrong.
        reason: String,
    },
    /// File `index` of `files` is in place with the right SHA-256.
    Done {
        /// The file's name.
        file: String,
        /// Its place in the list, from 1.
        index: usize,
        /// Files in the list.
        files: usize,
        /// Its size in bytes.
        bytes: u64,
        /// The mirror it came from, or `cached` when it was already there.
        from: String,
    },
}
