//! The lab runs of the run history on disk: `ROOT/lab-runs/lab-ID.json`, one file per saved
//! job report, written like the duels' ([`crate::runs::RunStore`]): to a temporary file in the
//! same folder, flushed and renamed into place without clobbering; a file that cannot be read
//! is named in the list's `skipped` and never hides the others.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{ComputeError, Result};
use crate::ncu_library::files::{self, FileError};
use crate::run_store::{new_id, now_ms, sync_dir, MAX_RUN_BYTES};

use super::{is_lab_run_id, LabReport, LabRun, LabRunList, LabRunSummary};

/// The lab runs in one data folder.
#[derive(Debug, Clone)]
pub struct LabStore {
    dir: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ComputeError + '_ {
    move |source| ComputeError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl LabStore {
    /// Opens (creating if needed) the lab runs in `root/lab-runs`.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let dir = root.as_ref().join("lab-runs");
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        files::sweep(&dir, SystemTime::now());
        Ok(LabStore { dir })
    }

    fn path(&self, id: &str) -> Result<PathBuf> {
        if !is_lab_run_id(id) {
            return Err(ComputeError::bad_arg(
                "id",
                id.chars().take(40).collect::<String>(),
                "a lab run's ID is `lab-` then letters, digits, '-' or '_'",
            ));
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    fn existing(&self, id: &str) -> Result<PathBuf> {
        let path = self.path(id)?;
        if matches!(files::entry(&path), Ok(Some(m)) if !m.is_dir()) {
            Ok(path)
        } else {
            Err(ComputeError::BadRequest(format!(
                "no saved lab run '{id}' in {} (the run history lists the saved runs)",
                self.dir.display()
            )))
        }
    }

    /// Saves `report` as a new lab run, now; returns the saved run's summary.
    pub fn save(&self, report: &LabReport) -> Result<LabRunSummary> {
        let now = now_ms();
        let mut tmp = files::temp_file_in(&self.dir).map_err(io(&self.dir))?;
        for _ in 0..16 {
            let run = LabRun {
                id: format!("lab-{}", new_id(now)),
                saved_at: now / 1000,
                report: report.clone(),
            };
            let text = serde_json::to_vec_pretty(&run).map_err(|e| {
                ComputeError::bad_file(
                    self.dir.display().to_string(),
                    format!("the report cannot be written as JSON: {e}"),
                )
            })?;
            tmp.as_file_mut().set_len(0).map_err(io(tmp.path()))?;
            let mut f = tmp.as_file();
            std::io::Seek::rewind(&mut f).map_err(io(tmp.path()))?;
            f.write_all(&text).map_err(io(tmp.path()))?;
            f.sync_all().map_err(io(tmp.path()))?;
            let target = self.path(&run.id)?;
            match tmp.persist_noclobber(&target) {
                Ok(_) => {
                    sync_dir(&self.dir);
                    return Ok(LabRunSummary::of(&run));
                }
                Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
                Err(e) => return Err(io(&target)(e.error)),
            }
        }
        Err(ComputeError::BadRequest(format!(
            "{}: 16 lab run identifiers in a row were taken",
            self.dir.display()
        )))
    }

    fn read(&self, path: &Path) -> Result<LabRun> {
        let bytes = files::read_bounded(path, MAX_RUN_BYTES).map_err(|e| match e {
            FileError::Missing => io(path)(std::io::ErrorKind::NotFound.into()),
            FileError::Io(source) => io(path)(source),
            FileError::Refused(reason) => {
                ComputeError::bad_file(path.display().to_string(), reason)
            }
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ComputeError::bad_file(
                path.display().to_string(),
                format!("damaged lab run file: {e}"),
            )
        })
    }

    /// Every saved lab run, newest first; files that cannot be read are named in `skipped`.
    pub fn list(&self) -> Result<LabRunList> {
        let mut out = LabRunList::default();
        for entry in std::fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let Ok(entry) = entry else {
                out.skipped
                    .push(format!("{}: an entry cannot be read", self.dir.display()));
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|id| is_lab_run_id(id)) else {
                continue;
            };
            match self.read(&entry.path()) {
                Ok(mut run) => {
                    // The file's name is the ID, whatever the file says.
                    run.id = id.to_string();
                    out.runs.push(LabRunSummary::of(&run));
                }
                Err(ComputeError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => out.skipped.push(format!("skipped: {e}")),
            }
        }
        out.runs
            .sort_by(|a, b| (b.saved_at, &b.id).cmp(&(a.saved_at, &a.id)));
        out.skipped.sort();
        Ok(out)
    }

    /// Lab run `id`.
    pub fn load(&self, id: &str) -> Result<LabRun> {
        let path = self.existing(id)?;
        let mut run = self.read(&path)?;
        run.id = id.to_string();
        Ok(run)
    }

    /// Removes lab run `id`.
    pub fn remove(&self, id: &str) -> Result<()> {
        let path = self.existing(id)?;
        std::fs::remove_file(&path).map_err(io(&path))?;
        sync_dir(&self.dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let csv = run.csv();
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
