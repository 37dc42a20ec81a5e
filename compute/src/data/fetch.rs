//! Downloading a data set's IDX files from mirrors, streamed in chunks with progress, verified
//! by SHA-256 and written atomically: a `.part` file renamed only once its checksum matches,
//! and removed whenever it does not get there (a wrong checksum, a broken connection, a
//! cancel).
//!
//! The network is read on a thread of its own, each read giving up after [`STALL_TIMEOUT`]
//! without a byte (the mirror counts as failed, the next is tried); the job waits for its
//! chunks [`POLL`] at a time, checking the cancel flag in between, so a cancel stops the fetch
//! within [`POLL`] even while a mirror sends nothing.
//!
//! Where from is the machine's choice, never a request's: [`mirrors_from_env`] reads
//! `SHOWDOWN_MNIST_MIRRORS` (comma-separated base URLs; default [`MNIST_MIRRORS`]) and
//! [`manifest_from_env`] reads `SHOWDOWN_MNIST_MANIFEST` — a **test hook**: a JSON file naming
//! the files and their SHA-256 (`[{"name":"train-images-idx3-ubyte.gz","sha256":"…"}, …]`),
//! so that a loopback mirror can serve small files; without it, the published list
//! ([`mnist_files`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{ComputeError, Result};
use crate::protocol::FetchProgress;

/// A file to fetch: its name on the mirror and its SHA-256 (lower-case hex).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteFile {
    /// File name, appended to each mirror's base URL.
    pub name: String,
    /// Expected SHA-256, lower-case hex.
    pub sha256: String,
}

/// The usual public mirrors of MNIST (the original site no longer serves the files reliably).
pub const MNIST_MIRRORS: [&str; 2] = [
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
];

/// Environment variable naming the mirrors (comma-separated base URLs) to fetch MNIST from.
pub const MIRRORS_ENV: &str = "SHOWDOWN_MNIST_MIRRORS";

/// Environment variable naming a JSON manifest of the files to fetch and their SHA-256: a test
/// hook (see the module's documentation).
pub const MANIFEST_ENV: &str = "SHOWDOWN_MNIST_MANIFEST";

/// MNIST's four files and their published SHA-256 digests.
pub fn mnist_files() -> Vec<RemoteFile> {
    [
        (
            "train-images-idx3-ubyte.gz",
            "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        ),
        (
            "train-labels-idx1-ubyte.gz",
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        ),
        (
            "t10k-images-idx3-ubyte.gz",
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        ),
        (
            "t10k-labels-idx1-ubyte.gz",
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        ),
    ]
    .into_iter()
    .map(|(n, s)| RemoteFile {
        name: n.into(),
        sha256: s.into(),
    })
    .collect()
}

/// The mirrors named by `value` (comma-separated base URLs; blanks ignored), or
/// [`MNIST_MIRRORS`] when it names none.
pub fn parse_mirrors(value: Option<&str>) -> Vec<String> {
    let given: Vec<String> = value
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(String::from)
        .collect();
    if given.is_empty() {
        MNIST_MIRRORS.iter().map(|m| m.to_string()).collect()
    } else {
        given
    }
}

/// The mirrors this machine fetches MNIST from: `$SHOWDOWN_MNIST_MIRRORS`, else
/// [`MNIST_MIRRORS`].
pub fn mirrors_from_env() -> Vec<String> {
    parse_mirrors(std::env::var(MIRRORS_ENV).ok().as_deref())
}

/// Reads a manifest (a JSON list of `{"name", "sha256"}`), checking that each name is a plain
/// file name and each digest 64 hex digits.
pub fn read_manifest(path: &Path) -> Result<Vec<RemoteFile>> {
    let bad = |reason: String| ComputeError::bad_file(path.display().to_string(), reason);
    let text = std::fs::read_to_string(path).map_err(|source| ComputeError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let files: Vec<RemoteFile> = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not a manifest ([{{\"name\": .., \"sha256\": ..}}, ..]): {e}"
        ))
    })?;
    if files.is_empty() {
        return Err(bad("the manifest names no file".into()));
    }
    files
        .into_iter()
        .map(|f| {
            let plain = !f.name.is_empty()
                && !f.name.starts_with('.')
                && f.name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !plain {
                return Err(bad(format!("{:?} is not a plain file name", f.name)));
            }
            let sha256 = f.sha256.to_ascii_lowercase();
            if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(format!(
                    "the SHA-256 of {} is not 64 hex digits: {:?}",
                    f.name, f.sha256
                )));
            }
            Ok(RemoteFile {
                name: f.name,
                sha256,
            })
        })
        .collect()
}

/// The files to fetch for MNIST: the manifest `$SHOWDOWN_MNIST_MANIFEST` names (a test hook),
/// else the published list ([`mnist_files`]).
pub fn manifest_from_env() -> Result<Vec<RemoteFile>> {
    match std::env::var_os(MANIFEST_ENV) {
        Some(p) if !p.is_empty() => read_manifest(Path::new(&p)),
        _ => Ok(mnist_files()),
    }
}

/// Largest file accepted from a mirror.
const MAX_DOWNLOAD: u64 = 256 << 20;

/// Bytes read (and written) at a time; the cancel flag is checked between chunks.
const CHUNK: usize = 64 << 10;

/// How long a mirror may send nothing (no answer, no byte of the body) before it counts as
/// failed and the next one is tried.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest a download waits for its next chunk before checking the cancel flag again.
pub const POLL: Duration = Duration::from_millis(100);

/// Longest the name lookup, and then the connection, to a mirror may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Longest one file's download may take in all.
const FILE_TIMEOUT: Duration = Duration::from_secs(600);

/// SHA-256 of bytes as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file as lower-case hex, read in chunks; `None` when it cannot be read.
fn sha256_of_file(path: &Path) -> Option<(String, u64)> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0u64;
    loop {
        let got = f.read(&mut buf).ok()?;
        if got == 0 {
            return Some((hex(&h.finalize()), n));
        }
        h.update(&buf[..got]);
        n += got as u64;
    }
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fetched {
    /// The file's path on disk.
    pub path: PathBuf,
    /// The mirror it came from, or `cached` when it was already present and verified.
    pub from: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// Removes a `.part` file when dropped, unless it was renamed into place.
struct PartFile {
    path: PathBuf,
    kept: bool,
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ComputeError + '_ {
    move |source| ComputeError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// What the network thread of a download passes on to the job.
enum Got {
    /// The response's head: the length it declares, if any.
    Head(Option<u64>),
    /// The next bytes of the body.
    Bytes(Vec<u8>),
    /// The end of the body.
    End,
    /// The mirror failed: a sentence naming the URL.
    Failed(String),
}

/// A ureq failure of `url` in words; `stall` is the per-read limit that a timeout means.
fn failure(url: &str, e: ureq::Error, stall: Duration, got: u64) -> String {
    match e {
        ureq::Error::Timeout(_) if got == 0 => format!(
            "{url}: no answer within {} s (the mirror stalled)",
            stall.as_secs_f64()
        ),
        ureq::Error::Timeout(_) => format!(
            "{url}: no data for {} s after {got} bytes (the mirror stalled)",
            stall.as_secs_f64()
        ),
        e => format!("{url}: {e} after {got} bytes"),
    }
}

/// Requests `url` and reads its body a chunk at a time on a thread of its own, passing what
/// comes to `to` (at most a few chunks ahead); each read gives up after `stall` without a
/// byte. Ends at the body's end, at a failure, or when the job stops listening.
fn spawn_reader(
    agent: &ureq::Agent,
    url: &str,
    stall: Duration,
    to: SyncSender<Got>,
) -> std::io::Result<()> {
    let (agent, url) = (agent.clone(), url.to_string());
    let read = move || {
        let resp = match agent.get(&url).call() {
            Ok(r) => r,
            Err(ureq::Error::StatusCode(code)) => {
                let _ = to.send(Got::Failed(format!("{url}: http status: {code}")));
                return;
            }
            Err(e) => {
                let _ = to.send(Got::Failed(failure(&url, e, stall, 0)));
                return;
            }
        };
        if to.send(Got::Head(resp.body().content_length())).is_err() {
            return;
        }
        let mut reader = resp.into_body().into_reader().take(MAX_DOWNLOAD + 1);
        let mut got = 0u64;
        loop {
            let mut buf = vec![0u8; CHUNK];
            let n = match reader.read(&mut buf) {
                Ok(0) => {
                    let _ = to.send(Got::End);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = to.send(Got::Failed(failure(&url, e.into(), stall, got)));
                    return;
                }
            };
            got += n as u64;
            buf.truncate(n);
            if to.send(Got::Bytes(buf)).is_err() {
                return;
            }
        }
    };
    std::thread::Builder::new()
        .name("download".into())
        .spawn(read)
        .map(|_| ())
}

/// The download thread's next message, checking `cancel` every [`POLL`] while none comes.
fn next(from: &Receiver<Got>, url: &str, cancel: &AtomicBool) -> Result<Got> {
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(ComputeError::Cancelled);
        }
        match from.recv_timeout(POLL) {
            Ok(got) => return Ok(got),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Ok(Got::Failed(format!("{url}: the download stopped")))
            }
        }
    }
}

/// Streams `url` into `part`, reporting bytes and checking `cancel` between chunks and every
/// [`POLL`] while none comes. The outer error ends the whole fetch (cancelled, the disk
/// failed); the inner one is this mirror's failure (the next is tried), a mirror sending
/// nothing for `stall` among them. On success: the size and the SHA-256.
fn download_to(
    agent: &ureq::Agent,
    url: &str,
    file: &str,
    part: &Path,
    on_progress: &mut dyn FnMut(FetchProgress),
    cancel: &AtomicBool,
    stall: Duration,
) -> Result<std::result::Result<(u64, String), String>> {
    // A few chunks ahead at most: the memory a download holds stays small.
    let (to, from) = sync_channel::<Got>(2);
    if let Err(e) = spawn_reader(agent, url, stall, to) {
        return Ok(Err(format!("{url}: cannot start a download thread: {e}")));
    }
    let total = match next(&from, url, cancel)? {
        Got::Head(total) => total,
        Got::Failed(why) => return Ok(Err(why)),
        Got::Bytes(_) | Got::End => return Ok(Err(format!("{url}: no response head"))),
    };
    if let Some(t) = total.filter(|&t| t > MAX_DOWNLOAD) {
        return Ok(Err(format!(
            "{url}: {t} bytes is larger than {MAX_DOWNLOAD} bytes"
        )));
    }
    let mut out = std::fs::File::create(part).map_err(io_error(part))?;
    let mut hasher = Sha256::new();
    let mut got = 0u64;
    loop {
        let bytes = match next(&from, url, cancel)? {
            Got::Bytes(b) => b,
            Got::End => break,
            Got::Failed(why) => return Ok(Err(why)),
            Got::Head(_) => return Ok(Err(format!("{url}: a second response head"))),
        };
        got += bytes.len() as u64;
        if got > MAX_DOWNLOAD {
            return Ok(Err(format!("{url}: larger than {MAX_DOWNLOAD} bytes")));
        }
        hasher.update(&bytes);
        out.write_all(&bytes).map_err(io_error(part))?;
        on_progress(FetchProgress::Bytes {
            file: file.into(),
            bytes: got,
            total,
        });
    }
    out.sync_all().map_err(io_error(part))?;
    Ok(Ok((got, hex(&hasher.finalize()))))
}

/// How to place `files` into `dest` by hand, in one sentence (what a failed fetch ends with:
/// offline, the user downloads them elsewhere and copies them in).
fn by_hand(files: &[RemoteFile], dest: &Path) -> String {
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    let list = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    };
    format!(
        "To place the files by hand, copy {list} (as published; unpacked copies without .gz do too) into the folder {}; the app finds them there",
        dest.display()
    )
}

/// Fetches `files` into `dest`, trying each mirror in turn; files already present with the
/// right checksum are kept. Progress goes to `on_progress` (a [`FetchProgress::Bytes`] per
/// chunk: the caller thins them); once `cancel` is set the fetch stops within a chunk, or
/// within [`POLL`] while a mirror sends nothing, with [`ComputeError::Cancelled`], leaving the
/// files finished before and no partial one. A mirror that sends nothing for
/// [`STALL_TIMEOUT`] counts as failed.
pub fn fetch(
    mirrors: &[String],
    files: &[RemoteFile],
    dest: &Path,
    on_progress: &mut dyn FnMut(FetchProgress),
    cancel: &AtomicBool,
) -> Result<Vec<Fetched>> {
    fetch_with_stall(mirrors, files, dest, on_progress, cancel, STALL_TIMEOUT)
}

/// [`fetch`], a mirror counting as stalled after `stall` without a byte.
fn fetch_with_stall(
    mirrors: &[String],
    files: &[RemoteFile],
    dest: &Path,
    on_progress: &mut dyn FnMut(FetchProgress),
    cancel: &AtomicBool,
    stall: Duration,
) -> Result<Vec<Fetched>> {
    std::fs::create_dir_all(dest).map_err(io_error(dest))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FILE_TIMEOUT))
        .timeout_resolve(Some(CONNECT_TIMEOUT))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_per_read(Some(stall))
        .build()
        .into();
    let count = files.len();
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err(ComputeError::Cancelled);
        }
        let path = dest.join(&f.name);
        let done = |bytes: u64, from: &str| FetchProgress::Done {
            file: f.name.clone(),
            index: i + 1,
            files: count,
            bytes,
            from: from.into(),
        };
        if let Some((sha, bytes)) = sha256_of_file(&path) {
            if sha == f.sha256 {
                on_progress(done(bytes, "cached"));
                out.push(Fetched {
                    path,
                    from: "cached".into(),
                    bytes,
                });
                continue;
            }
        }
        let mut errors = Vec::new();
        let mut fetched = None;
        for m in mirrors {
            let url = format!(
                "{}{}",
                if m.ends_with('/') {
                    m.clone()
                } else {
                    format!("{m}/")
                },
                f.name
            );
            on_progress(FetchProgress::Started {
                file: f.name.clone(),
                index: i + 1,
                files: count,
                mirror: m.clone(),
            });
            let mut part = PartFile {
                path: dest.join(format!("{}.part", f.name)),
                kept: false,
            };
            let failure = match download_to(
                &agent,
                &url,
                &f.name,
                &part.path,
                on_progress,
                cancel,
                stall,
            )? {
                Ok((bytes, got)) if got == f.sha256 => {
                    std::fs::rename(&part.path, &path).map_err(io_error(&path))?;
                    part.kept = true;
                    fetched = Some(Fetched {
                        path: path.clone(),
                        from: m.clone(),
                        bytes,
                    });
                    break;
                }
                Ok((_, got)) => format!(
                    "{url}: SHA-256 {got} does not match the expected {}",
                    f.sha256
                ),
                Err(reason) => reason,
            };
            drop(part);
            on_progress(FetchProgress::MirrorFailed {
                file: f.name.clone(),
                mirror: m.clone(),
                reason: failure.clone(),
            });
            errors.push(failure);
        }
        match fetched {
            Some(got) => {
                on_progress(done(got.bytes, &got.from));
                out.push(got);
            }
            None => {
                let failed = if errors.is_empty() {
                    "no mirror to fetch it from".to_string()
                } else {
                    errors.join("; ")
                };
                return Err(ComputeError::Download {
                    url: f.name.clone(),
                    reason: format!("{failed}. {}", by_hand(files, dest)),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    /// A loopback HTTP server answering GET /NAME from `files`, 404 otherwise; serves
    /// `requests` requests, then stops. Bodies go out in 16 KiB pieces.
    fn serve(files: Vec<(String, Vec<u8>)>, requests: usize) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().take(requests) {
                let Ok(mut s) = s else { continue };
                let mut line = String::new();
                let mut r = BufReader::new(s.try_clone().unwrap());
                r.read_line(&mut line).unwrap();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap() <= 2 {
                        break;
                    }
                }
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_string();
                match files.iter().find(|(n, _)| *n == path) {
                    Some((_, b)) => {
                        let _ = write!(
                            s,
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        );
                        for piece in b.chunks(16 << 10) {
                            if s.write_all(piece).is_err() {
                                break;
                            }
                            let _ = s.flush();
                        }
                    }
                    None => {
                        let _ = write!(s, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                }
            }
        });
        format!("http://{addr}/")
    }

    fn no_cancel() -> AtomicBool {
        AtomicBool::new(false)
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn fetches_verifies_and_falls_back_to_the_next_mirror() {
        let good = b"idx-bytes".to_vec();
        let bad_mirror = serve(vec![("a.gz".into(), b"tampered".to_vec())], 1);
        let good_mirror = serve(vec![("a.gz".into(), good.clone())], 1);
        let files = vec![RemoteFile {
            name: "a.gz".into(),
            sha256: sha256_hex(&good),
        }];
        let t = tempfile::tempdir().unwrap();
        let mut events = Vec::new();
        let got = fetch(
            &[bad_mirror.clone(), good_mirror.clone()],
            &files,
            t.path(),
            &mut |e| events.push(e),
            &no_cancel(),
        )
        .unwrap();
        assert_eq!(got[0].from, good_mirror);
        assert_eq!(std::fs::read(t.path().join("a.gz")).unwrap(), good);
        assert_eq!(entries(t.path()), ["a.gz"], "no .part left behind");
        assert!(
            events.iter().any(
                |e| matches!(e, FetchProgress::MirrorFailed { mirror, reason, .. }
                if *mirror == bad_mirror && reason.contains("does not match"))
            ),
            "{events:?}"
        );
        assert!(
            matches!(events.last(), Some(FetchProgress::Done { from, bytes: 9, index: 1, files: 1, .. }) if *from == good_mirror),
            "{events:?}"
        );
        // Second time: verified from disk, no server needed.
        let again = fetch(
            &["http://127.0.0.1:9/".into()],
            &files,
            t.path(),
            &mut |_| {},
            &no_cancel(),
        )
        .unwrap();
        assert_eq!(again[0].from, "cached");
    }

    /// Issue 18: the fetch streams its body with byte progress (total known from the mirror)
    /// between a file's `started` and `done`.
    #[test]
    fn progress_comes_per_chunk_with_the_total_between_file_boundaries() {
        let a: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let b = b"small".to_vec();
        let m = serve(
            vec![("a.gz".into(), a.clone()), ("b.gz".into(), b.clone())],
            2,
        );
        let files = vec![
            RemoteFile {
                name: "a.gz".into(),
                sha256: sha256_hex(&a),
            },
            RemoteFile {
                name: "b.gz".into(),
                sha256: sha256_hex(&b),
            },
        ];
        let t = tempfile::tempdir().unwrap();
        let mut events = Vec::new();
        let got = fetch(
            std::slice::from_ref(&m),
            &files,
            t.path(),
            &mut |e| events.push(e),
            &no_cancel(),
        )
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(std::fs::read(t.path().join("a.gz")).unwrap(), a);
        let ticks: Vec<(u64, Option<u64>)> = events
            .iter()
            .filter_map(|e| match e {
                FetchProgress::Bytes { file, bytes, total } if file == "a.gz" => {
                    Some((*bytes, *total))
                }
                _ => None,
            })
            .collect();
        assert!(ticks.len() >= 300_000 / CHUNK, "{ticks:?}");
        assert!(ticks.windows(2).all(|w| w[0].0 < w[1].0), "{ticks:?}");
        assert_eq!(ticks.last(), Some(&(300_000, Some(300_000))));
        assert!(
            matches!(&events[0], FetchProgress::Started { file, index: 1, files: 2, mirror } if file == "a.gz" && *mirror == m)
        );
        let boundaries: Vec<String> = events
            .iter()
            .filter(|e| !matches!(e, FetchProgress::Bytes { .. }))
            .map(|e| match e {
                FetchProgress::Started { file, .. } => format!("start {file}"),
                FetchProgress::Done { file, .. } => format!("done {file}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            boundaries,
            ["start a.gz", "done a.gz", "start b.gz", "done b.gz"]
        );
    }

    /// Issue 18: a fetch cancelled mid-file stops there and leaves neither the file nor its
    /// `.part`; the files done before stay.
    #[test]
    fn a_cancel_mid_file_stops_and_leaves_no_partial_file() {
        let small = b"first".to_vec();
        let big: Vec<u8> = vec![7; 2 << 20];
        let m = serve(
            vec![("a.gz".into(), small.clone()), ("b.gz".into(), big.clone())],
            2,
        );
        let files = vec![
            RemoteFile {
                name: "a.gz".into(),
                sha256: sha256_hex(&small),
            },
            RemoteFile {
                name: "b.gz".into(),
                sha256: sha256_hex(&big),
            },
        ];
        let t = tempfile::tempdir().unwrap();
        let cancel = AtomicBool::new(false);
        let mut seen = 0u64;
        let e = fetch(
            &[m],
            &files,
            t.path(),
            &mut |e| {
                if let FetchProgress::Bytes { file, bytes, .. } = e {
                    if file == "b.gz" {
                        seen = bytes;
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
            },
            &cancel,
        )
        .unwrap_err();
        assert!(matches!(e, ComputeError::Cancelled), "{e}");
        assert_eq!(e.kind(), crate::ErrorKind::Cancelled);
        assert!(
            seen > 0 && seen < big.len() as u64,
            "stopped mid-file: {seen}"
        );
        assert_eq!(entries(t.path()), ["a.gz"], "no b.gz nor b.gz.part");
    }

    /// A loopback mirror that answers every request with a head declaring `len` bytes and the
    /// first 100 of them, then sends nothing more, holding the connection for `hold`.
    fn stalled(len: usize, hold: Duration) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().take(4) {
                let Ok(mut s) = s else { continue };
                std::thread::spawn(move || {
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut h = String::new();
                    while r.read_line(&mut h).map(|n| n > 2).unwrap_or(false) {
                        h.clear();
                    }
                    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                    let _ = s.write_all(&[5u8; 100]);
                    let _ = s.flush();
                    std::thread::sleep(hold);
                });
            }
        });
        format!("http://{addr}/")
    }

    /// Issue 30: a cancel reaches a download whose mirror sends nothing more (it used to wait
    /// for the mirror to hang up, holding the job slot for minutes), and leaves no `.part`.
    #[test]
    fn a_cancel_stops_a_stalled_download_within_a_poll() {
        let m = stalled(1 << 20, Duration::from_secs(20));
        let files = vec![RemoteFile {
            name: "a.gz".into(),
            sha256: sha256_hex(b"never"),
        }];
        let t = tempfile::tempdir().unwrap();
        let cancel = AtomicBool::new(false);
        let mut cancelled_at = None;
        let e = fetch(
            &[m],
            &files,
            t.path(),
            &mut |e| {
                if let FetchProgress::Bytes { bytes: 100, .. } = e {
                    cancel.store(true, Ordering::Relaxed);
                    cancelled_at = Some(std::time::Instant::now());
                }
            },
            &cancel,
        )
        .unwrap_err();
        let took = cancelled_at.expect("the first bytes came").elapsed();
        assert!(matches!(e, ComputeError::Cancelled), "{e}");
        assert!(took < Duration::from_millis(500), "{took:?}");
        assert!(entries(t.path()).is_empty(), "{:?}", entries(t.path()));
    }

    /// Issue 30: a mirror that stalls mid-body fails after the stall limit, naming it, and the
    /// next mirror is tried.
    #[test]
    fn a_stalled_mirror_fails_after_the_stall_limit_and_the_next_is_tried() {
        let good = b"idx-bytes".to_vec();
        let stuck = stalled(1 << 20, Duration::from_secs(20));
        let fine = serve(vec![("a.gz".into(), good.clone())], 1);
        let files = vec![RemoteFile {
            name: "a.gz".into(),
            sha256: sha256_hex(&good),
        }];
        let t = tempfile::tempdir().unwrap();
        let mut events = Vec::new();
        let t0 = std::time::Instant::now();
        let got = fetch_with_stall(
            &[stuck.clone(), fine.clone()],
            &files,
            t.path(),
            &mut |e| events.push(e),
            &no_cancel(),
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        assert_eq!(got[0].from, fine);
        assert!(
            events.iter().any(
                |e| matches!(e, FetchProgress::MirrorFailed { mirror, reason, .. }
                if *mirror == stuck && reason.contains("no data for 0.3 s after 100 bytes"))
            ),
            "{events:?}"
        );
        assert_eq!(entries(t.path()), ["a.gz"]);
    }

    #[test]
    fn a_checksum_mismatch_everywhere_is_an_error_and_writes_nothing() {
        let m = serve(vec![("a.gz".into(), b"tampered".to_vec())], 1);
        let files = vec![RemoteFile {
            name: "a.gz".into(),
            sha256: sha256_hex(b"real"),
        }];
        let t = tempfile::tempdir().unwrap();
        let e = fetch(&[m], &files, t.path(), &mut |_| {}, &no_cancel())
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not match"), "{e}");
        assert!(entries(t.path()).is_empty(), "{:?}", entries(t.path()));
        let e = fetch(
            &[serve(vec![], 1)],
            &files,
            t.path(),
            &mut |_| {},
            &no_cancel(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("404"), "{e}");
        assert!(entries(t.path()).is_empty());
    }

    #[test]
    fn mnist_digests_are_well_formed() {
        for f in mnist_files() {
            assert_eq!(f.sha256.len(), 64);
            assert!(f.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn mirrors_come_from_a_comma_list_else_the_built_in_ones() {
        assert_eq!(
            parse_mirrors(Some(" http://127.0.0.1:1/ , ,http://127.0.0.1:2")),
            ["http://127.0.0.1:1/", "http://127.0.0.1:2"]
        );
        for none in [None, Some(""), Some(" , ")] {
            assert_eq!(parse_mirrors(none), MNIST_MIRRORS);
        }
    }

    /// The test hook: a manifest names the files and their digests; anything odd is refused
    /// naming the manifest.
    #[test]
    fn manifests_name_plain_files_with_sha256_digests() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("m.json");
        let sha = sha256_hex(b"x");
        std::fs::write(
            &p,
            format!(
                r#"[{{"name":"train-images-idx3-ubyte.gz","sha256":"{}"}}]"#,
                sha.to_uppercase()
            ),
        )
        .unwrap();
        assert_eq!(
            read_manifest(&p).unwrap(),
            [RemoteFile {
                name: "train-images-idx3-ubyte.gz".into(),
                sha256: sha.clone()
            }]
        );
        for (text, why) in [
            ("[]".to_string(), "names no file"),
            ("{}".to_string(), "not a manifest"),
            (
                format!(r#"[{{"name":"../x","sha256":"{sha}"}}]"#),
                "not a plain file name",
            ),
            (
                format!(r#"[{{"name":"a/b","sha256":"{sha}"}}]"#),
                "not a plain file name",
            ),
            (
                r#"[{"name":"a","sha256":"abc"}]"#.to_string(),
                "not 64 hex digits",
            ),
            (
                format!(r#"[{{"name":"a","sha256":"{sha}","url":"http://x/"}}]"#),
                "unknown field",
            ),
        ] {
            std::fs::write(&p, &text).unwrap();
            let e = read_manifest(&p).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("m.json"), "{text}: {e}");
        }
    }

    /// Issue 26: "Get full MNIST" offline said what failed but not how to place the files by
    /// hand. The error names the folder and the four files.
    #[test]
    fn offline_fetch_says_where_to_place_the_four_files_by_hand() {
        let t = tempfile::tempdir().unwrap();
        let dest = t.path().join("mnist");
        let cancel = AtomicBool::new(false);
        // Port 1 on loopback refuses at once: the machine is "offline".
        let e = fetch(
            &["http://127.0.0.1:1/".to_string()],
            &mnist_files(),
            &dest,
            &mut |_| {},
            &cancel,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(&dest.display().to_string()), "{e}");
        for f in mnist_files() {
            assert!(e.contains(&f.name), "{} missing: {e}", f.name);
        }
        assert!(e.contains("by hand"), "{e}");
    }
}
