//! The run history: the pure part from the core ([`RunSummary`], the CSV export; re-exported
//! here) and the store on disk, one for every kind of run: `ROOT/runs/ID.json`, one file per
//! saved duel ([`RunStore`]), and `ROOT/lab-runs/lab-ID.json`, one per saved lab job
//! ([`LabStore`]). Both are a [`RunFiles`] of their [`RunKind`]: one save (to a temporary file
//! in the same folder, flushed to disk and renamed into place without clobbering: a crash never
//! leaves half a run), one list, load and remove, one identifier scheme ([`new_id`]: the time
//! and a suffix, `lab-` before a lab run's). A file that cannot be read is skipped by `list`
//! with a note naming it, so one damaged file never hides the others.
//!
//! A run file is read only if it is a regular file of at most [`MAX_RUN_BYTES`] (a link is
//! never followed, a FIFO never opened: see [`crate::ncu_library::files`]), and opening the history
//! removes the temporary files of saves a crash cut off (`.tmp-<pid>-XXXXXX`): at once when the
//! process that wrote one is gone, else once it is an hour old.

use std::io::Write;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ncu_library::files::{self, FileError};
use showdown_core::error::ComputeError;
use showdown_core::lab::{is_lab_run_id, LabReport, LabRun, LabRunList, LabRunSummary};
use showdown_core::types::DuelReport;

pub use showdown_core::runs::*;

/// The largest run file read: the largest duel the service accepts is a few MiB, written
/// compact (the recorder's caps and this limit are stated together in [`crate::bounds`]).
pub const MAX_RUN_BYTES: u64 = crate::bounds::MAX_RUN_BYTES;

/// How many identifiers [`RunStore::save`] tries before giving up (each one taken already).
const SAVE_ATTEMPTS: u32 = 16;

/// Why the run history could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum RunStoreError {
    /// The operating system refused a read or write.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The identifier cannot name a run (it becomes a file name).
    #[error("invalid run id '{id}': use only digits, lower-case letters and '-' (at most {} characters)", showdown_core::runs::MAX_ID_CHARS)]
    BadId {
        /// The identifier given (its first 40 characters).
        id: String,
    },
    /// No saved run has this identifier.
    // The folder is not in the message: a client of the service learns nothing of the
    // server's paths from it.
    #[error("no saved run '{id}' (the run history lists the saved runs)")]
    UnknownRun {
        /// The identifier asked for.
        id: String,
        /// The history's folder (for the server's own logs; not in the message).
        store: String,
    },
    /// A history file is damaged (edited by hand, cut off, or a disk fault).
    #[error("{path}: damaged run file: {reason}")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl From<RunStoreError> for ComputeError {
    fn from(e: RunStoreError) -> Self {
        match e {
            RunStoreError::Io { path, source } => ComputeError::Io { path, source },
            RunStoreError::Damaged { path, reason } => ComputeError::bad_file(path, reason),
            other => ComputeError::BadRequest(other.to_string()),
        }
    }
}

type Result<T> = std::result::Result<T, RunStoreError>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunStoreError + '_ {
    move |source| RunStoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A saved duel as written to `ID.json` (the identifier is the file's name).
#[derive(Serialize, Deserialize)]
pub struct SavedRun {
    /// When it was saved, Unix seconds.
    pub saved_at: u64,
    /// The duel's report, as the service answered it.
    pub report: DuelReport,
}

/// A kind of run the history keeps: its folder, its identifiers, what one file holds and how
/// its errors read.
pub trait RunKind {
    /// What one file holds.
    type File: Serialize + DeserializeOwned;
    /// The error of this kind's store.
    type Error;
    /// The folder under the data root (`runs`, `lab-runs`).
    const FOLDER: &'static str;
    /// Whether `id` can name a run of this kind (it becomes a file name).
    fn is_id(id: &str) -> bool;
    /// A new identifier of this kind from [`new_id`]'s.
    fn id_of(new_id: String) -> String;
    /// The operating system refused a read or write of `path`.
    fn io(path: &Path, source: std::io::Error) -> Self::Error;
    /// Whether `e` says a file was not found (removed while the list was read).
    fn is_missing(e: &Self::Error) -> bool;
    /// `id` cannot name a run.
    fn bad_id(id: &str) -> Self::Error;
    /// No saved run `id` in `dir`.
    fn unknown(id: &str, dir: &Path) -> Self::Error;
    /// The file at `path` was refused or could not be parsed (`reason`).
    fn damaged(path: &Path, reason: String) -> Self::Error;
    /// A run could not be written as JSON.
    fn unwritable(dir: &Path, e: serde_json::Error) -> Self::Error;
    /// Every identifier tried was taken.
    fn all_taken(dir: &Path) -> Self::Error;
    /// The note for a folder entry that cannot be read.
    fn entry_note(dir: &Path, e: &std::io::Error) -> String;
}

/// Every run file of kind `K` read, as (identifier, file), and the notes on those skipped.
pub type Listed<K> = (Vec<(String, <K as RunKind>::File)>, Vec<String>);

/// The runs of kind `K` in one data folder.
#[derive(Debug)]
pub struct RunFiles<K> {
    dir: PathBuf,
    kind: PhantomData<K>,
}

impl<K> Clone for RunFiles<K> {
    fn clone(&self) -> Self {
        RunFiles {
            dir: self.dir.clone(),
            kind: PhantomData,
        }
    }
}

impl<K: RunKind> RunFiles<K> {
    /// Opens (creating if needed) the runs in `root/FOLDER`; `root` is the data folder
    /// ([`ImportStore::default_root`](crate::ncu_library::ImportStore::default_root)).
    /// Temporary files of saves a crash cut off are removed at once when their writer is gone,
    /// else once they are [`LEFTOVER_AGE`](files::LEFTOVER_AGE) old ([`files::sweep`]).
    pub fn open(root: impl AsRef<Path>) -> std::result::Result<Self, K::Error> {
        let dir = root.as_ref().join(K::FOLDER);
        std::fs::create_dir_all(&dir).map_err(|e| K::io(&dir, e))?;
        files::sweep(&dir, SystemTime::now());
        Ok(RunFiles {
            dir,
            kind: PhantomData,
        })
    }

    /// The runs' folder (`ROOT/FOLDER`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of run `id`, after checking that `id` can name one.
    fn path(&self, id: &str) -> std::result::Result<PathBuf, K::Error> {
        if !K::is_id(id) {
            return Err(K::bad_id(id));
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// The entry of an existing run `id` (whatever it is: reading it checks that).
    fn existing(&self, id: &str) -> std::result::Result<PathBuf, K::Error> {
        let path = self.path(id)?;
        if matches!(files::entry(&path), Ok(Some(m)) if !m.is_dir()) {
            Ok(path)
        } else {
            Err(K::unknown(id, &self.dir))
        }
    }

    /// Saves the file `make` makes for a new identifier at `now_ms` (Unix milliseconds),
    /// trying another identifier while one is taken; the identifier and the file saved.
    pub fn save_new(
        &self,
        now_ms: u64,
        make: impl Fn(&str) -> K::File,
    ) -> std::result::Result<(String, K::File), K::Error> {
        let mut tmp = files::temp_file_in(&self.dir).map_err(|e| K::io(&self.dir, e))?;
        for _ in 0..SAVE_ATTEMPTS {
            let id = K::id_of(new_id(now_ms));
            let file = make(&id);
            // Compact: a run is read by programs (the UI draws it), and pretty-printing a long
            // run's histograms tripled its size.
            let text = serde_json::to_vec(&file).map_err(|e| K::unwritable(&self.dir, e))?;
            let at = tmp.path().to_path_buf();
            tmp.as_file_mut().set_len(0).map_err(|e| K::io(&at, e))?;
            let mut f = tmp.as_file();
            std::io::Seek::rewind(&mut f).map_err(|e| K::io(&at, e))?;
            f.write_all(&text).map_err(|e| K::io(&at, e))?;
            f.sync_all().map_err(|e| K::io(&at, e))?;
            let target = self.path(&id)?;
            // No-clobber: another process that picked the same identifier keeps its run.
            match tmp.persist_noclobber(&target) {
                Ok(_) => {
                    sync_dir(&self.dir);
                    return Ok((id, file));
                }
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
                Err(e) => return Err(K::io(&target, e.error)),
            }
        }
        Err(K::all_taken(&self.dir))
    }

    /// Reads a run's file: a regular file (not a link, not a FIFO) of at most
    /// [`MAX_RUN_BYTES`].
    fn read(&self, path: &Path) -> std::result::Result<K::File, K::Error> {
        let bytes = files::read_bounded(path, MAX_RUN_BYTES).map_err(|e| match e {
            FileError::Missing => K::io(path, std::io::ErrorKind::NotFound.into()),
            FileError::Io(source) => K::io(path, source),
            FileError::Refused(reason) => K::damaged(path, reason),
        })?;
        serde_json::from_slice(&bytes).map_err(|e| K::damaged(path, e.to_string()))
    }

    /// Every saved run as (identifier, file), in no order; the notes on the files skipped. A
    /// file that cannot be read or parsed (or that is not a regular file, or is over
    /// [`MAX_RUN_BYTES`]) is skipped and named; files that are not `ID.json` (temporary files
    /// of a save in progress, anything else) are ignored.
    pub fn all(&self) -> std::result::Result<Listed<K>, K::Error>
    where
        K::Error: std::fmt::Display,
    {
        let (mut runs, mut skipped) = (Vec::new(), Vec::new());
        for entry in std::fs::read_dir(&self.dir).map_err(|e| K::io(&self.dir, e))? {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    skipped.push(K::entry_note(&self.dir, &e));
                    continue;
                }
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|id| K::is_id(id)) else {
                continue;
            };
            match self.read(&entry.path()) {
                Ok(file) => runs.push((id.to_string(), file)),
                // Removed while the list was being read.
                Err(e) if K::is_missing(&e) => {}
                // The error names the file (its full path).
                Err(e) => skipped.push(format!("skipped: {e}")),
            }
        }
        skipped.sort();
        Ok((runs, skipped))
    }

    /// The file of run `id`.
    pub fn load_file(&self, id: &str) -> std::result::Result<K::File, K::Error> {
        let path = self.existing(id)?;
        self.read(&path)
    }

    /// Removes run `id`.
    pub fn remove(&self, id: &str) -> std::result::Result<(), K::Error> {
        let path = self.existing(id)?;
        std::fs::remove_file(&path).map_err(|e| K::io(&path, e))?;
        sync_dir(&self.dir);
        Ok(())
    }
}

/// Saved duels: `ROOT/runs/ID.json`.
#[derive(Debug, Clone, Copy)]
pub struct DuelRuns;

impl RunKind for DuelRuns {
    type File = SavedRun;
    type Error = RunStoreError;
    const FOLDER: &'static str = "runs";
    fn is_id(id: &str) -> bool {
        is_run_id(id)
    }
    fn id_of(new_id: String) -> String {
        new_id
    }
    fn io(path: &Path, source: std::io::Error) -> RunStoreError {
        io(path)(source)
    }
    fn is_missing(e: &RunStoreError) -> bool {
        matches!(e, RunStoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
    fn bad_id(id: &str) -> RunStoreError {
        RunStoreError::BadId {
            id: id.chars().take(40).collect(),
        }
    }
    fn unknown(id: &str, dir: &Path) -> RunStoreError {
        RunStoreError::UnknownRun {
            id: id.to_string(),
            store: dir.display().to_string(),
        }
    }
    fn damaged(path: &Path, reason: String) -> RunStoreError {
        RunStoreError::Damaged {
            path: path.display().to_string(),
            reason,
        }
    }
    fn unwritable(dir: &Path, e: serde_json::Error) -> RunStoreError {
        RunStoreError::Damaged {
            path: dir.display().to_string(),
            reason: format!("the report cannot be written as JSON: {e}"),
        }
    }
    fn all_taken(dir: &Path) -> RunStoreError {
        RunStoreError::Io {
            path: dir.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{SAVE_ATTEMPTS} run identifiers in a row were taken"),
            ),
        }
    }
    fn entry_note(dir: &Path, e: &std::io::Error) -> String {
        format!("{}: an entry cannot be read: {e}", dir.display())
    }
}

/// The run history of duels in one data folder.
pub type RunStore = RunFiles<DuelRuns>;

impl RunFiles<DuelRuns> {
    /// Saves `report` as a new run, now; returns its summary.
    pub fn save(&self, report: &DuelReport) -> Result<RunSummary> {
        self.save_at(report, now_ms())
    }

    /// Saves `report` as a new run at `now_ms` (Unix milliseconds): the identifier is that
    /// time and a suffix that differs between calls of this process and between processes.
    pub fn save_at(&self, report: &DuelReport, now_ms: u64) -> Result<RunSummary> {
        let (id, saved) = self.save_new(now_ms, |_| SavedRun {
            saved_at: now_ms / 1000,
            report: report.clone(),
        })?;
        Ok(RunSummary::of(&id, saved.saved_at, report))
    }

    /// Every saved run, newest first. A file that cannot be read or parsed (or that is not a
    /// regular file, or is over [`MAX_RUN_BYTES`]) is skipped and named in
    /// [`RunList::skipped`]; files that are not `ID.json` (temporary files of a save in
    /// progress, anything else) are ignored.
    pub fn list(&self) -> Result<RunList> {
        let (runs, skipped) = self.all()?;
        let mut out = RunList {
            runs: runs
                .iter()
                .map(|(id, saved)| RunSummary::of(id, saved.saved_at, &saved.report))
                .collect(),
            skipped,
        };
        out.runs
            .sort_by(|a, b| (b.saved_at, &b.id).cmp(&(a.saved_at, &a.id)));
        Ok(out)
    }

    /// The report of run `id`.
    pub fn load(&self, id: &str) -> Result<DuelReport> {
        Ok(self.load_file(id)?.report)
    }

    /// The summary of run `id`.
    pub fn summary(&self, id: &str) -> Result<RunSummary> {
        let saved = self.load_file(id)?;
        Ok(RunSummary::of(id, saved.saved_at, &saved.report))
    }
}

/// Saved lab jobs: `ROOT/lab-runs/lab-ID.json`.
#[derive(Debug, Clone, Copy)]
pub struct LabRuns;

fn compute_io(path: &Path, source: std::io::Error) -> ComputeError {
    ComputeError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl RunKind for LabRuns {
    type File = LabRun;
    type Error = ComputeError;
    const FOLDER: &'static str = "lab-runs";
    fn is_id(id: &str) -> bool {
        is_lab_run_id(id)
    }
    fn id_of(new_id: String) -> String {
        format!("lab-{new_id}")
    }
    fn io(path: &Path, source: std::io::Error) -> ComputeError {
        compute_io(path, source)
    }
    fn is_missing(e: &ComputeError) -> bool {
        matches!(e, ComputeError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
    fn bad_id(id: &str) -> ComputeError {
        ComputeError::bad_arg(
            "id",
            id.chars().take(40).collect::<String>(),
            "a lab run's ID is `lab-` then letters, digits, '-' or '_'",
        )
    }
    fn unknown(id: &str, _dir: &Path) -> ComputeError {
        ComputeError::BadRequest(format!(
            // The folder is not named: a client learns nothing of the server's paths.
            "no saved lab run '{id}' (the run history lists the saved runs)"
        ))
    }
    fn damaged(path: &Path, reason: String) -> ComputeError {
        ComputeError::bad_file(path.display().to_string(), reason)
    }
    fn unwritable(dir: &Path, e: serde_json::Error) -> ComputeError {
        ComputeError::bad_file(
            dir.display().to_string(),
            format!("the report cannot be written as JSON: {e}"),
        )
    }
    fn all_taken(dir: &Path) -> ComputeError {
        ComputeError::BadRequest(format!(
            "{}: {SAVE_ATTEMPTS} lab run identifiers in a row were taken",
            dir.display()
        ))
    }
    fn entry_note(dir: &Path, _: &std::io::Error) -> String {
        format!("{}: an entry cannot be read", dir.display())
    }
}

/// The lab runs of the run history in one data folder.
pub type LabStore = RunFiles<LabRuns>;

impl RunFiles<LabRuns> {
    /// Saves `report` as a new lab run, now; returns the saved run's summary.
    pub fn save(&self, report: &LabReport) -> showdown_core::error::Result<LabRunSummary> {
        let now = now_ms();
        let (_, run) = self.save_new(now, |id| LabRun {
            id: id.to_string(),
            saved_at: now / 1000,
            report: report.clone(),
            stamp: Some(crate::origin::stamp(if report.on_gpu() {
                "cuda"
            } else {
                "cpu"
            })),
        })?;
        Ok(LabRunSummary::of(&run))
    }

    /// Every saved lab run, newest first; files that cannot be read are named in `skipped`.
    pub fn list(&self) -> showdown_core::error::Result<LabRunList> {
        let (runs, skipped) = self.all()?;
        let mut out = LabRunList {
            runs: runs
                .into_iter()
                .map(|(id, mut run)| {
                    // The file's name is the ID, whatever the file says.
                    run.id = id;
                    LabRunSummary::of(&run)
                })
                .collect(),
            skipped,
        };
        out.runs
            .sort_by(|a, b| (b.saved_at, &b.id).cmp(&(a.saved_at, &a.id)));
        Ok(out)
    }

    /// Lab run `id`.
    pub fn load(&self, id: &str) -> showdown_core::error::Result<LabRun> {
        let mut run = self.load_file(id)?;
        run.id = id.to_string();
        Ok(run)
    }
}

/// Flushes a folder's entries (a rename or removal) to disk where the system allows it; a
/// failure only weakens durability after a power cut, so it is not reported.
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Calls of [`new_id`] in this process, so that identifiers of the same millisecond differ
/// and sort in the order they were made.
static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// `YYYYMMDD-HHMMSS-mmm-SSPP` (UTC): the time, then two base-36 digits of this process's
/// sequence and two of a per-process salt (the process ID mixed with the clock's
/// nanoseconds), so that two processes saving in the same millisecond pick different names.
pub(crate) fn new_id(now_ms: u64) -> String {
    let (y, mo, d, h, mi, s) = utc_parts(now_ms / 1000);
    let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let salt = std::process::id().wrapping_mul(2_654_435_761) ^ nanos;
    format!(
        "{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{:03}-{}{}",
        now_ms % 1000,
        base36_2(seq),
        base36_2(salt)
    )
}

/// Two base-36 digits (`0-9a-z`) of `n` modulo 36².
fn base36_2(n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let n = (n % (36 * 36)) as usize;
    [DIGITS[n / 36], DIGITS[n % 36]]
        .iter()
        .map(|&b| char::from(b))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::examples::{json, report};

    fn files_in(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn runs_are_saved_listed_loaded_and_removed() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        assert_eq!(store.list().unwrap(), RunList::default());
        let r = report("cpu model", 200.0, 100.0);
        let s = store.save(&r).unwrap();
        assert!(is_run_id(&s.id), "{}", s.id);
        assert_eq!(s.speedup_fp16_vs_fp32, Some(2.0));
        assert_eq!(json(&store.load(&s.id).unwrap()), json(&r));
        assert_eq!(store.summary(&s.id).unwrap(), s);
        // A restart: a new store on the same folder sees the run.
        let again = RunStore::open(t.path()).unwrap();
        assert_eq!(again.list().unwrap().runs, vec![s.clone()]);
        again.remove(&s.id).unwrap();
        assert!(again.list().unwrap().runs.is_empty());
        assert!(matches!(
            again.load(&s.id),
            Err(RunStoreError::UnknownRun { .. })
        ));
        assert!(matches!(
            again.remove(&s.id),
            Err(RunStoreError::UnknownRun { .. })
        ));
    }

    #[test]
    fn the_list_is_newest_first() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let base = 1_741_944_615_000;
        let middle = store
            .save_at(&report("b", 2.0, 1.0), base + 60_000)
            .unwrap();
        let oldest = store.save_at(&report("a", 2.0, 1.0), base).unwrap();
        let newest = store
            .save_at(&report("c", 2.0, 1.0), base + 3_600_000)
            .unwrap();
        // Two in the same millisecond: the later call sorts first.
        let same_ms = store
            .save_at(&report("d", 2.0, 1.0), base + 3_600_000)
            .unwrap();
        assert!(
            newest.id.starts_with("20250314-103015-000-"),
            "{}",
            newest.id
        );
        let devices: Vec<String> = store
            .list()
            .unwrap()
            .runs
            .into_iter()
            .map(|r| r.device)
            .collect();
        assert_eq!(devices, ["d", "c", "b", "a"]);
        assert_eq!(
            (oldest.saved_at, middle.saved_at, same_ms.saved_at),
            (1_741_944_615, 1_741_944_675, 1_741_948_215)
        );
    }

    #[test]
    fn a_damaged_file_is_skipped_and_named() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let good = store.save(&report("ok", 2.0, 1.0)).unwrap();
        std::fs::write(
            store.dir().join("20200101-000000-000-zzzz.json"),
            "{\"saved_at\": 1,",
        )
        .unwrap();
        std::fs::write(store.dir().join("20200101-000000-000-yyyy.json"), "[]").unwrap();
        // Not run files: ignored, not reported.
        std::fs::write(store.dir().join("notes.txt"), "hello").unwrap();
        std::fs::write(store.dir().join("Bad.Name.json"), "{}").unwrap();
        let list = store.list().unwrap();
        assert_eq!(list.runs, vec![good]);
        assert_eq!(list.skipped.len(), 2, "{:?}", list.skipped);
        assert!(
            list.skipped[0].contains("20200101-000000-000-yyyy.json"),
            "{:?}",
            list.skipped
        );
        assert!(
            list.skipped[1].contains("20200101-000000-000-zzzz.json"),
            "{:?}",
            list.skipped
        );
        assert!(matches!(
            store.load("20200101-000000-000-zzzz"),
            Err(RunStoreError::Damaged { .. })
        ));
    }

    #[test]
    fn bad_ids_are_refused_before_touching_a_file() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path().join("data")).unwrap();
        std::fs::write(t.path().join("secret.json"), "{}").unwrap();
        for bad in ["../secret", "..", "", "A", "x/y", "run.json"] {
            assert!(
                matches!(store.load(bad), Err(RunStoreError::BadId { .. })),
                "{bad:?}"
            );
            assert!(
                matches!(store.remove(bad), Err(RunStoreError::BadId { .. })),
                "{bad:?}"
            );
        }
        assert!(t.path().join("secret.json").is_file());
        let e = ComputeError::from(RunStoreError::BadId { id: "..".into() });
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    }

    #[test]
    fn a_save_leaves_only_the_run_file() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let a = store.save(&report("x", 2.0, 1.0)).unwrap();
        let b = store.save(&report("y", 2.0, 1.0)).unwrap();
        assert_ne!(a.id, b.id);
        let mut want = vec![format!("{}.json", a.id), format!("{}.json", b.id)];
        want.sort();
        assert_eq!(files_in(store.dir()), want);
    }

    /// Runs `f` on a thread of its own; `None` when it has not answered within 20 s (it
    /// hangs: the test fails instead of waiting for ever).
    fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(20)).ok()
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_the_run_history_is_skipped_not_waited_on() {
        // Issue 19: a FIFO named like a run made `runs` (and the verdict) wait for a writer.
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let good = store.save(&report("ok", 2.0, 1.0)).unwrap();
        let fifo = store.dir().join("20200101-000000-000-fifo.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let s = store.clone();
        let list = within_20s(move || s.list().unwrap()).expect("list() hung on the FIFO");
        assert_eq!(list.runs, vec![good]);
        assert_eq!(list.skipped.len(), 1, "{:?}", list.skipped);
        assert!(
            list.skipped[0].contains("20200101-000000-000-fifo.json")
                && list.skipped[0].contains("a FIFO (named pipe), not a regular file"),
            "{:?}",
            list.skipped
        );
        let s = store.clone();
        let e = within_20s(move || s.load("20200101-000000-000-fifo").unwrap_err())
            .expect("load() hung on the FIFO");
        assert!(matches!(e, RunStoreError::Damaged { .. }), "{e}");
        // It can be removed like a damaged run.
        store.remove("20200101-000000-000-fifo").unwrap();
        assert!(store.list().unwrap().skipped.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_to_dev_zero_is_skipped() {
        // Issue 19: a link to /dev/zero named like a run was read until memory ran out.
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let good = store.save(&report("ok", 2.0, 1.0)).unwrap();
        std::os::unix::fs::symlink(
            "/dev/zero",
            store.dir().join("20200101-000000-000-zero.json"),
        )
        .unwrap();
        // A link to a well-formed run elsewhere is not followed either.
        let outside = t.path().join("elsewhere.json");
        std::fs::copy(store.dir().join(format!("{}.json", good.id)), &outside).unwrap();
        std::os::unix::fs::symlink(&outside, store.dir().join("20200101-000000-000-link.json"))
            .unwrap();
        let s = store.clone();
        let list = within_20s(move || s.list().unwrap()).expect("list() read /dev/zero");
        assert_eq!(list.runs, vec![good]);
        assert_eq!(list.skipped.len(), 2, "{:?}", list.skipped);
        for note in &list.skipped {
            assert!(
                note.contains("a symbolic link, not a regular file"),
                "{note}"
            );
        }
    }

    #[test]
    fn an_oversized_run_file_is_refused_before_it_is_read() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let f = std::fs::File::create(store.dir().join("20200101-000000-000-huge.json")).unwrap();
        f.set_len(MAX_RUN_BYTES + 1).unwrap();
        let list = store.list().unwrap();
        assert!(list.runs.is_empty());
        assert!(list.skipped[0].contains("over the"), "{:?}", list.skipped);
    }

    /// Regression (issue 30): a save cut off by a kill left its temporary file for an hour;
    /// it now names its writer, and the next open removes it once that process is gone.
    #[cfg(unix)]
    #[test]
    fn killed_savers_temp_file_is_removed_at_open_and_a_live_ones_stays() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_name = format!(".tmp-{dead}-q1W2e3");
        let live_name = format!(".tmp-{}-r4T5y6", std::process::id());
        for name in [&dead_name, &live_name] {
            std::fs::write(store.dir().join(name), "{").unwrap();
        }
        let reopened = RunStore::open(t.path()).unwrap();
        assert_eq!(files_in(reopened.dir()), vec![live_name.clone()]);
        // A save writes through such a file and leaves none behind.
        let saved = reopened.save(&report("x", 2.0, 1.0)).unwrap();
        let mut want = vec![format!("{}.json", saved.id), live_name];
        want.sort();
        assert_eq!(files_in(reopened.dir()), want);
    }

    #[test]
    fn crash_leftovers_are_removed_at_open() {
        let t = tempfile::tempdir().unwrap();
        let store = RunStore::open(t.path()).unwrap();
        let kept = store.save(&report("x", 2.0, 1.0)).unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
        for name in [".run-abc123.tmp", ".tmpXYZ789"] {
            let f = std::fs::File::create(store.dir().join(name)).unwrap();
            f.set_modified(old).unwrap();
        }
        // A save in progress (young) and other files stay.
        std::fs::write(store.dir().join(".run-young1.tmp"), "{").unwrap();
        std::fs::write(store.dir().join("notes.txt"), "mine").unwrap();
        let f = std::fs::File::create(store.dir().join("notes-old.txt")).unwrap();
        f.set_modified(old).unwrap();
        let reopened = RunStore::open(t.path()).unwrap();
        let mut want = vec![
            ".run-young1.tmp".to_string(),
            format!("{}.json", kept.id),
            "notes-old.txt".into(),
            "notes.txt".into(),
        ];
        want.sort();
        assert_eq!(files_in(reopened.dir()), want);
    }

    #[test]
    fn a_store_that_cannot_be_created_is_an_io_error() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("plain-file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            RunStore::open(&file),
            Err(RunStoreError::Io { .. })
        ));
    }

    // The lab runs: the same store, their own kind.
    mod lab_runs {
        use super::super::*;
        use crate::bench::anatomy::{ContestantAnatomy, LaunchTime, StepAnatomy};
        use crate::types::Precision;

        fn anatomy() -> LabReport {
            LabReport::Anatomy {
                report: StepAnatomy {
                    backend: "cpu".into(),
                    device: "test CPU".into(),
                    dataset: "mnist-sample".into(),
                    batch: 8,
                    steps: 2,
                    clock: "host clock".into(),
                    contestants: vec![ContestantAnatomy {
                        precision: Precision::Fp32,
                        launches: vec![LaunchTime {
                            name: "dense_fwd".into(),
                            phase: "forward".into(),
                            start_ms: 0.0,
                            ms: 0.25,
                        }],
                        sum_ms: 0.25,
                        launched_step_ms: 0.3,
                        graph_step_ms: None,
                    }],
                    notes: vec![],
                },
            }
        }

        #[test]
        fn a_saved_lab_run_lists_loads_exports_and_removes() {
            let dir = tempfile::tempdir().unwrap();
            let store = LabStore::open(dir.path()).unwrap();
            let saved = store.save(&anatomy()).unwrap();
            assert!(is_lab_run_id(&saved.id), "{}", saved.id);
            assert_eq!(saved.kind, "anatomy");
            // A reopened store (the app restarted) still has it.
            let again = LabStore::open(dir.path()).unwrap();
            let list = again.list().unwrap();
            assert_eq!(list.runs.len(), 1);
            assert_eq!(list.runs[0].id, saved.id);
            let run = again.load(&saved.id).unwrap();
            assert_eq!(run.report, anatomy());
            let csv = showdown_core::lab_csv::lab_run_csv(&run);
            assert!(
                csv.starts_with("precision,index,name,phase,start_ms,ms"),
                "{csv}"
            );
            assert!(csv.contains("fp32,0,dense_fwd,forward,0,0.25"), "{csv}");
            again.remove(&saved.id).unwrap();
            assert!(again.list().unwrap().runs.is_empty());
            assert!(again.load(&saved.id).is_err());
        }

        #[test]
        fn a_damaged_lab_file_is_named_and_hides_nothing() {
            let dir = tempfile::tempdir().unwrap();
            let store = LabStore::open(dir.path()).unwrap();
            store.save(&anatomy()).unwrap();
            std::fs::write(dir.path().join("lab-runs/lab-broken.json"), "{not json").unwrap();
            let list = store.list().unwrap();
            assert_eq!(list.runs.len(), 1);
            assert_eq!(list.skipped.len(), 1);
            assert!(
                list.skipped[0].contains("lab-broken.json"),
                "{:?}",
                list.skipped
            );
            assert!(store.load("../etc/passwd").is_err());
        }
    }

    /// A copy of a data home the current version wrote on an H200 (2026-11-28: two duels and
    /// four lab runs, each gzip-compressed here): every run file opens.
    #[test]
    fn the_h200_data_home_of_2026_11_28_still_opens() {
        use std::io::Read;
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/data-home-h200-2026-11-28");
        let home = tempfile::tempdir().unwrap();
        for folder in ["runs", "lab-runs"] {
            std::fs::create_dir_all(home.path().join(folder)).unwrap();
            for e in std::fs::read_dir(fixture.join(folder)).unwrap() {
                let path = e.unwrap().path();
                let mut text = Vec::new();
                flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
                    .read_to_end(&mut text)
                    .unwrap();
                let name = path.file_stem().unwrap().to_owned();
                std::fs::write(home.path().join(folder).join(name), text).unwrap();
            }
        }
        let duels = RunStore::open(home.path()).unwrap();
        let list = duels.list().unwrap();
        assert!(list.skipped.is_empty(), "{:?}", list.skipped);
        assert_eq!(list.runs.len(), 2);
        for run in &list.runs {
            let report = duels.load(&run.id).unwrap();
            assert!(!report.runs.is_empty(), "{}", run.id);
            assert_eq!(duels.summary(&run.id).unwrap(), *run);
        }
        let labs = LabStore::open(home.path()).unwrap();
        let list = labs.list().unwrap();
        assert!(list.skipped.is_empty(), "{:?}", list.skipped);
        assert_eq!(list.runs.len(), 4);
        for summary in &list.runs {
            let run = labs.load(&summary.id).unwrap();
            assert_eq!(run.id, summary.id);
            assert!(
                !showdown_core::lab_csv::lab_run_csv(&run).is_empty(),
                "{}",
                run.id
            );
        }
    }
}
