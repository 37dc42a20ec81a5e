//! The run history on disk: `ROOT/runs/ID.json`, one file per saved duel, each written to a
//! temporary file in the same folder, flushed to disk and renamed into place (a crash never
//! leaves half a run). A file that cannot be read is skipped by [`RunStore::list`] with a note
//! naming it, so one damaged file never hides the others.
//!
//! A run file is read only if it is a regular file of at most [`MAX_RUN_BYTES`] (a link is
//! never followed, a FIFO never opened: see [`crate::ncu_library::files`]), and opening the history
//! removes the temporary files of saves a crash cut off (`.tmp-<pid>-XXXXXX`): at once when the
//! process that wrote one is gone, else once it is an hour old.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::ComputeError;
use crate::ncu_library::files::{self, FileError};
use crate::runs::{is_run_id, utc_parts, RunList, RunSummary};
use crate::types::DuelReport;

/// The largest run file read: a long duel's report with its histograms is a few MiB.
pub const MAX_RUN_BYTES: u64 = 64 << 20;

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
    #[error("invalid run id '{id}': use only digits, lower-case letters and '-' (at most {} characters)", crate::runs::MAX_ID_CHARS)]
    BadId {
        /// The identifier given (its first 40 characters).
        id: String,
    },
    /// No saved run has this identifier.
    #[error("no saved run '{id}' in {store} (the run history lists the saved runs)")]
    UnknownRun {
        /// The identifier asked for.
        id: String,
        /// The history's folder.
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

/// A saved run as written to `ID.json` (the identifier is the file's name).
#[derive(Serialize, Deserialize)]
struct SavedRun {
    /// When it was saved, Unix seconds.
    saved_at: u64,
    /// The duel's report, as the service answered it.
    report: DuelReport,
}

/// The run history in one data folder.
#[derive(Debug, Clone)]
pub struct RunStore {
    dir: PathBuf,
}

impl RunStore {
    /// Opens (creating if needed) the history in `root/runs`; `root` is the data folder
    /// ([`ImportStore::default_root`](crate::ncu_library::ImportStore::default_root)). Temporary
    /// files of saves a crash cut off are removed at once when their writer is gone, else once
    /// they are [`LEFTOVER_AGE`](files::LEFTOVER_AGE) old ([`files::sweep`]).
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let dir = root.as_ref().join("runs");
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        files::sweep(&dir, SystemTime::now());
        Ok(RunStore { dir })
    }

    /// The history's folder (`ROOT/runs`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of run `id`, after checking that `id` can name one.
    fn path(&self, id: &str) -> Result<PathBuf> {
        if !is_run_id(id) {
            return Err(RunStoreError::BadId {
                id: id.chars().take(40).collect(),
            });
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// The entry of an existing run `id` (whatever it is: reading it checks that).
    fn existing(&self, id: &str) -> Result<PathBuf> {
        let path = self.path(id)?;
        if matches!(files::entry(&path), Ok(Some(m)) if !m.is_dir()) {
            Ok(path)
        } else {
            Err(RunStoreError::UnknownRun {
                id: id.to_string(),
                store: self.dir.display().to_string(),
            })
        }
    }

    /// Saves `report` as a new run, now; returns its summary.
    pub fn save(&self, report: &DuelReport) -> Result<RunSummary> {
        self.save_at(report, now_ms())
    }

    /// Saves `report` as a new run at `now_ms` (Unix milliseconds): the identifier is that
    /// time and a suffix that differs between calls of this process and between processes.
    pub fn save_at(&self, report: &DuelReport, now_ms: u64) -> Result<RunSummary> {
        let saved = SavedRun {
            saved_at: now_ms / 1000,
            report: report.clone(),
        };
        let text = serde_json::to_vec_pretty(&saved).map_err(|e| RunStoreError::Damaged {
            path: self.dir.display().to_string(),
            reason: format!("the report cannot be written as JSON: {e}"),
        })?;
        let mut tmp = files::temp_file_in(&self.dir).map_err(io(&self.dir))?;
        tmp.write_all(&text).map_err(io(tmp.path()))?;
        tmp.as_file().sync_all().map_err(io(tmp.path()))?;
        for _ in 0..SAVE_ATTEMPTS {
            let id = new_id(now_ms);
            let target = self.path(&id)?;
            // No-clobber: another process that picked the same identifier keeps its run.
            match tmp.persist_noclobber(&target) {
                Ok(_) => {
                    sync_dir(&self.dir);
                    return Ok(RunSummary::of(&id, saved.saved_at, report));
                }
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
                Err(e) => return Err(io(&target)(e.error)),
            }
        }
        Err(RunStoreError::Io {
            path: self.dir.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{SAVE_ATTEMPTS} run identifiers in a row were taken"),
            ),
        })
    }

    /// Reads run `id`'s file: a regular file (not a link, not a FIFO) of at most
    /// [`MAX_RUN_BYTES`].
    fn read(&self, path: &Path) -> Result<SavedRun> {
        let bytes = files::read_bounded(path, MAX_RUN_BYTES).map_err(|e| match e {
            FileError::Missing => io(path)(std::io::ErrorKind::NotFound.into()),
            FileError::Io(source) => io(path)(source),
            FileError::Refused(reason) => RunStoreError::Damaged {
                path: path.display().to_string(),
                reason,
            },
        })?;
        serde_json::from_slice(&bytes).map_err(|e| RunStoreError::Damaged {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    /// Every saved run, newest first. A file that cannot be read or parsed (or that is not a
    /// regular file, or is over [`MAX_RUN_BYTES`]) is skipped and named in
    /// [`RunList::skipped`]; files that are not `ID.json` (temporary files of a save in
    /// progress, anything else) are ignored.
    pub fn list(&self) -> Result<RunList> {
        let mut out = RunList::default();
        for entry in std::fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    out.skipped.push(format!(
                        "{}: an entry cannot be read: {e}",
                        self.dir.display()
                    ));
                    continue;
                }
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|id| is_run_id(id)) else {
                continue;
            };
            match self.read(&entry.path()) {
                Ok(saved) => out
                    .runs
                    .push(RunSummary::of(id, saved.saved_at, &saved.report)),
                // Removed while the list was being read.
                Err(RunStoreError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                // The error names the file (its full path).
                Err(e) => out.skipped.push(format!("skipped: {e}")),
            }
        }
        out.runs
            .sort_by(|a, b| (b.saved_at, &b.id).cmp(&(a.saved_at, &a.id)));
        out.skipped.sort();
        Ok(out)
    }

    /// The report of run `id`.
    pub fn load(&self, id: &str) -> Result<DuelReport> {
        let path = self.existing(id)?;
        Ok(self.read(&path)?.report)
    }

    /// The summary of run `id`.
    pub fn summary(&self, id: &str) -> Result<RunSummary> {
        let path = self.existing(id)?;
        let saved = self.read(&path)?;
        Ok(RunSummary::of(id, saved.saved_at, &saved.report))
    }

    /// Removes run `id`.
    pub fn remove(&self, id: &str) -> Result<()> {
        let path = self.existing(id)?;
        std::fs::remove_file(&path).map_err(io(&path))?;
        sync_dir(&self.dir);
        Ok(())
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
}
