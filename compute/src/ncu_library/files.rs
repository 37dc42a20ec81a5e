//! Reading the stores' own files without trusting them: the import library and the run
//! history are folders a user (or a crash, or another program) can change behind the app's
//! back, so every record is checked before it is read.
//!
//! - Only a regular file is read: a symbolic link is never followed (a link to `/dev/zero`
//!   would be read until memory runs out), and a FIFO, a device or a socket is never opened (a
//!   FIFO blocks its reader until a writer comes). The entry is examined with
//!   `symlink_metadata`, opened, and the opened file must be the same regular file (same
//!   device and inode), so a link swapped in between is not read through either.
//! - Its size is bounded before a byte is read, and the read itself stops one byte past the
//!   bound (a file that grows meanwhile is refused, not followed).
//! - A folder of the store must be a real folder, not a link to one elsewhere.
//!
//! The one race left: an entry replaced by a FIFO between the check and the `open` would block
//! that one open (std offers no `O_NONBLOCK` without a `libc` dependency); only a program
//! racing the app inside its own data folder can arrange that.
//!
//! Every store writes through a temporary file named for its process, `.tmp-<pid>-XXXXXX`
//! ([`temp_file_in`]), renamed into place once whole. [`sweep`] (run when a store opens)
//! removes crash leftovers, the temporary files of a write cut off before its rename: at once
//! when the process named in the file is gone (a server killed mid-import leaves nothing
//! behind past its next start), and otherwise once they are older than [`LEFTOVER_AGE`]
//! (older names without a pid, a pid reused by another process, or a system where a process
//! cannot be looked up).

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How old a leftover temporary file must be before a store removes it when its writer cannot
/// be known to be gone: far longer than any write takes, so a write in progress in another
/// process is never removed from under it.
pub const LEFTOVER_AGE: Duration = Duration::from_secs(60 * 60);

/// Why a store file was not read.
#[derive(Debug)]
pub enum FileError {
    /// Nothing by that name.
    Missing,
    /// The operating system refused the read.
    Io(std::io::Error),
    /// The entry is not something the store reads: what it is, or why it was refused.
    Refused(String),
}

impl From<std::io::Error> for FileError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            FileError::Missing
        } else {
            FileError::Io(e)
        }
    }
}

/// What kind of entry `meta` describes, for a message ("a FIFO (named pipe)").
pub fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        return "a symbolic link";
    }
    if t.is_dir() {
        return "a folder";
    }
    if t.is_file() {
        return "a regular file";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

/// The entry at `path` as it is (a link is not followed), or `None` when there is none.
pub fn entry(path: &Path) -> Result<Option<Metadata>, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::Io(e)),
    }
}

/// Whether `path` is a real folder (not a link to one).
pub fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Whether `path` is a regular file (not a link to one).
pub fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Checks that `meta` is a regular file of at most `max` bytes.
fn check_regular(meta: &Metadata, max: u64) -> Result<u64, FileError> {
    if !meta.is_file() {
        return Err(FileError::Refused(format!(
            "{}, not a regular file",
            kind_of(meta)
        )));
    }
    if meta.len() > max {
        return Err(FileError::Refused(format!(
            "{} bytes, over the {max}-byte limit for this file",
            meta.len()
        )));
    }
    Ok(meta.len())
}

/// Opens the regular file `path` of at most `max` bytes, never through a link; returns it
/// with its size.
pub fn open_regular(path: &Path, max: u64) -> Result<(File, u64), FileError> {
    let before = std::fs::symlink_metadata(path)?;
    check_regular(&before, max)?;
    let file = File::open(path)?;
    let after = file.metadata()?;
    let len = check_regular(&after, max)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (before.dev(), before.ino()) != (after.dev(), after.ino()) {
            return Err(FileError::Refused(
                "the file was replaced while it was being opened".into(),
            ));
        }
    }
    Ok((file, len))
}

/// Reads the regular file `path` of at most `max` bytes, never through a link.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_regular(path, max)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FileError::Io)?;
    if bytes.len() as u64 > max {
        return Err(FileError::Refused(format!(
            "grew past the {max}-byte limit for this file while it was read"
        )));
    }
    Ok(bytes)
}

/// Whether `name` is a temporary file of an atomic write: `.tmp-<pid>-XXXXXX`
/// ([`temp_file_in`]'s), or a name of older versions, `.tmpXXXXXX` (the `tempfile` crate's
/// default), `.run-XXXXXX.tmp` (the run history's) or `.lab-XXXXXX.tmp` (the lab runs').
pub fn is_temporary(name: &str) -> bool {
    name.starts_with(".tmp")
        || ((name.starts_with(".run-") || name.starts_with(".lab-")) && name.ends_with(".tmp"))
}

/// A new temporary file in folder `dir`, for a write to rename into place: named for this
/// process, `.tmp-<pid>-XXXXXX`, so that a store opened once this process is gone removes it
/// at once ([`sweep`]). It is removed when dropped unless persisted.
pub fn temp_file_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&format!(".tmp-{}-", std::process::id()))
        .tempfile_in(dir)
}

/// The process that wrote temporary file `name` (`.tmp-<pid>-XXXXXX`), if its name says.
pub fn writer_of(name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix(".tmp-")?.split_once('-')?;
    if rest.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` is known to be gone: no process has that id (`kill(pid, 0)` fails
/// with `ESRCH`; one that exists under another user answers `EPERM`, alive). `false` where it
/// cannot be told (not Unix, an id out of range), so that only the age rule applies there.
pub fn process_gone(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(id) = libc::pid_t::try_from(pid) else {
            return false;
        };
        if id <= 0 {
            return false;
        }
        // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists
        // and may be signalled. `id` is positive, so it names one process, never a group.
        let r = unsafe { libc::kill(id, 0) };
        r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Whether the entry `meta` was last changed at least `age` ago (an entry whose time cannot
/// be read, or lies in the future, is young).
pub fn older_than(meta: &Metadata, age: Duration, now: SystemTime) -> bool {
    meta.modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .is_some_and(|d| d >= age)
}

/// Removes, in folder `dir`, every temporary file ([`is_temporary`]) that no process is
/// writing: what a write cut off by a crash leaves behind. One named for a process that is
/// gone ([`writer_of`], [`process_gone`]) goes at once; any other once it has not changed for
/// [`LEFTOVER_AGE`]. Only files and links are removed (never a folder); a failure is not an
/// error (the next open tries again).
pub fn sweep(dir: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !is_temporary(&name.to_string_lossy()) {
            continue;
        }
        let path = e.path();
        if let Ok(Some(meta)) = entry(&path) {
            let writer_gone = writer_of(&name.to_string_lossy())
                .is_some_and(|pid| pid != std::process::id() && process_gone(pid));
            if !meta.is_dir() && (writer_gone || older_than(&meta, LEFTOVER_AGE, now)) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process that has ended (and been reaped): its id names no process now.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    /// Regression (issue 30): a server killed mid-import left `imports/.tmpXXXX` (13.6 MB)
    /// for an hour. A temporary file names its writer; once that process is gone, the next
    /// sweep removes it at once, while a live writer's file (ours) stays.
    #[cfg(unix)]
    #[test]
    fn killed_writers_temp_file_is_removed_at_once_and_a_live_ones_stays() {
        let t = tempfile::tempdir().unwrap();
        let dead = format!(".tmp-{}-AbC123", dead_pid());
        let ours = temp_file_in(t.path()).unwrap();
        let ours_name = ours
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            ours_name.starts_with(&format!(".tmp-{}-", std::process::id())),
            "{ours_name}"
        );
        assert!(is_temporary(&ours_name));
        assert_eq!(writer_of(&ours_name), Some(std::process::id()));
        std::fs::write(t.path().join(&dead), vec![0u8; 4096]).unwrap();
        // Young files without a pid keep the age rule.
        std::fs::write(t.path().join(".tmpOLDst1"), "x").unwrap();
        std::fs::write(t.path().join(".lab-x1.tmp"), "x").unwrap();
        sweep(t.path(), SystemTime::now());
        let mut left: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec![".lab-x1.tmp".to_string(), ".tmpOLDst1".into(), ours_name];
        want.sort();
        assert_eq!(left, want);
        // An hour on, the rest go too: the age rule, whoever wrote them (a pid may be reused).
        sweep(t.path(), SystemTime::now() + LEFTOVER_AGE);
        let left: Vec<String> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(!process_gone(std::process::id()));
        assert!(!process_gone(0), "0 names a group, never looked up");
        assert!(!process_gone(u32::MAX));
    }

    #[test]
    fn temporary_names_are_the_writers_own() {
        assert_eq!(writer_of(".tmp-4242-Ab12Cd"), Some(4242));
        for n in [
            ".tmpA1b2C3",
            ".tmp-4242",
            ".tmp--x",
            ".tmp-12a-x",
            ".run-1-x.tmp",
        ] {
            assert_eq!(writer_of(n), None, "{n}");
        }
        for n in [
            ".tmpA1b2C3",
            ".tmp",
            ".run-x7Yz.tmp",
            ".lab-x7Yz.tmp",
            ".tmp-12-x",
        ] {
            assert!(is_temporary(n), "{n}");
        }
        for n in [
            "meta.json",
            "tmp",
            ".run-x.json",
            "20250101-000000-000-aaaa.json",
        ] {
            assert!(!is_temporary(n), "{n}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_and_oversized_files_are_refused_before_reading() {
        let t = tempfile::tempdir().unwrap();
        let link = t.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let e = read_bounded(&link, 1 << 20).unwrap_err();
        assert!(
            matches!(&e, FileError::Refused(r) if r.starts_with("a symbolic link")),
            "{e:?}"
        );
        let big = t.path().join("big.json");
        std::fs::write(&big, vec![b' '; 2000]).unwrap();
        let e = read_bounded(&big, 1000).unwrap_err();
        assert!(
            matches!(&e, FileError::Refused(r) if r.contains("2000 bytes")),
            "{e:?}"
        );
        assert_eq!(read_bounded(&big, 2000).unwrap().len(), 2000);
        assert!(matches!(
            read_bounded(&t.path().join("none"), 10),
            Err(FileError::Missing)
        ));
        let e = read_bounded(t.path(), 10).unwrap_err();
        assert!(
            matches!(&e, FileError::Refused(r) if r.starts_with("a folder")),
            "{e:?}"
        );
    }
}
