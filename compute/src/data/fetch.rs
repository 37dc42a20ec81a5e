//! Downloading a data set's IDX files from public mirrors, verified by SHA-256, written
//! atomically (a `.part` file renamed only once its checksum matches).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{ComputeError, Result};

/// A file to fetch: its name on the mirror and its SHA-256 (lower-case hex).
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Largest file accepted from a mirror.
const MAX_DOWNLOAD: u64 = 256 << 20;

/// SHA-256 of bytes as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

fn download(agent: &ureq::Agent, url: &str) -> Result<Vec<u8>> {
    let err = |reason: String| ComputeError::Download {
        url: url.into(),
        reason,
    };
    let resp = agent.get(url).call().map_err(|e| err(e.to_string()))?;
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_DOWNLOAD + 1)
        .read_to_end(&mut body)
        .map_err(|e| err(e.to_string()))?;
    if body.len() as u64 > MAX_DOWNLOAD {
        return Err(err(format!("larger than {MAX_DOWNLOAD} bytes")));
    }
    Ok(body)
}

/// Fetches `files` into `dest`, trying each mirror in turn; files already present with the
/// right checksum are kept. `progress(name, mirror)` is called before each download.
pub fn fetch(
    mirrors: &[String],
    files: &[RemoteFile],
    dest: &Path,
    mut progress: impl FnMut(&str, &str),
) -> Result<Vec<Fetched>> {
    std::fs::create_dir_all(dest).map_err(|source| ComputeError::Io {
        path: dest.display().to_string(),
        source,
    })?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(600)))
        .timeout_connect(Some(Duration::from_secs(20)))
        .build()
        .into();
    let mut out = Vec::new();
    for f in files {
        let path = dest.join(&f.name);
        if let Ok(existing) = std::fs::read(&path) {
            if sha256_hex(&existing) == f.sha256 {
                out.push(Fetched {
                    path,
                    from: "cached".into(),
                    bytes: existing.len() as u64,
                });
                continue;
            }
        }
        let mut errors = Vec::new();
        let mut done = false;
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
            progress(&f.name, m);
            let body = match download(&agent, &url) {
                Ok(b) => b,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            let got = sha256_hex(&body);
            if got != f.sha256 {
                errors.push(format!(
                    "{url}: SHA-256 {got} does not match the expected {}",
                    f.sha256
                ));
                continue;
            }
            let part = dest.join(format!("{}.part", f.name));
            std::fs::write(&part, &body).map_err(|source| ComputeError::Io {
                path: part.display().to_string(),
                source,
            })?;
            std::fs::rename(&part, &path).map_err(|source| ComputeError::Io {
                path: path.display().to_string(),
                source,
            })?;
            out.push(Fetched {
                path: path.clone(),
                from: m.clone(),
                bytes: body.len() as u64,
            });
            done = true;
            break;
        }
        if !done {
            return Err(ComputeError::Download {
                url: f.name.clone(),
                reason: errors.join("; "),
            });
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
    /// `requests` requests, then stops.
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
                        let _ = s.write_all(b);
                    }
                    None => {
                        let _ = write!(s, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                }
            }
        });
        format!("http://{addr}/")
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
        let got = fetch(
            &[bad_mirror, good_mirror.clone()],
            &files,
            t.path(),
            |_, _| {},
        )
        .unwrap();
        assert_eq!(got[0].from, good_mirror);
        assert_eq!(std::fs::read(t.path().join("a.gz")).unwrap(), good);
        // Second time: verified from disk, no server needed.
        let again = fetch(&["http://127.0.0.1:9/".into()], &files, t.path(), |_, _| {}).unwrap();
        assert_eq!(again[0].from, "cached");
    }

    #[test]
    fn a_checksum_mismatch_everywhere_is_an_error_and_writes_nothing() {
        let m = serve(vec![("a.gz".into(), b"tampered".to_vec())], 1);
        let files = vec![RemoteFile {
            name: "a.gz".into(),
            sha256: sha256_hex(b"real"),
        }];
        let t = tempfile::tempdir().unwrap();
        let e = fetch(&[m], &files, t.path(), |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not match"), "{e}");
        assert!(!t.path().join("a.gz").exists());
        let e = fetch(&[serve(vec![], 1)], &files, t.path(), |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("404"), "{e}");
    }

    #[test]
    fn mnist_digests_are_well_formed() {
        for f in mnist_files() {
            assert_eq!(f.sha256.len(), 64);
            assert!(f.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
}
