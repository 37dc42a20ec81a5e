//! NVRTC: a kernel family compiled to PTX for the device's architecture (a compile error
//! carries NVRTC's log), and the on-disk PTX cache. Optional at run time: training loads the
//! embedded kernels (`shipped`) and comes here only where none fits or `SHOWDOWN_KERNELS=nvrtc`;
//! `cargo xtask kernels` makes those with the same [`NVRTC_OPTIONS`]. A cache entry is keyed by architecture,
//! options, NVRTC version and source, and written atomically: processes compiling the same
//! family at once each write a temporary file of their own and rename it into place, so a
//! reader sees no file or a whole one.

use std::io::Write;
use std::path::{Path, PathBuf};

use cudarc::nvrtc::{CompileError, CompileOptions};
use sha2::{Digest, Sha256};

use super::err;
use crate::error::Result;

/// NVRTC options every kernel is compiled with (besides the architecture).
pub const NVRTC_OPTIONS: [&str; 2] = ["-lineinfo", "--std=c++17"];

/// Whether libnvrtc can be loaded (never panics).
fn nvrtc_present() -> bool {
    // SAFETY: only checks whether the shared library can be opened.
    std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// The version of the NVRTC library that compiles the kernels, `(major, minor)`; `None` where
/// libnvrtc is absent or does not answer. Never panics.
pub(crate) fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_present() {
        return None;
    }
    std::panic::catch_unwind(|| {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion writes two ints.
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .ok()
            .map(|()| (major, minor))
    })
    .ok()
    .flatten()
}

/// Compiles `source` to PTX for `arch` (e.g. `compute_90`) with NVRTC; a compile error carries
/// NVRTC's log. Never panics, also when libnvrtc is absent.
pub fn compile_ptx(name: &str, source: &str, arch: &str) -> Result<String> {
    if !nvrtc_present() {
        return Err(err("libnvrtc not found: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc`, and put its lib folder on LD_LIBRARY_PATH"));
    }
    let mut options: Vec<String> = NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect();
    options.push(format!("--gpu-architecture={arch}"));
    let opts = CompileOptions {
        options,
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    let src = source.to_string();
    let out = std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(src, opts))
        .map_err(|_| err("NVRTC panicked (library too old?)"))?;
    match out {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, options, .. }) => Err(err(format!(
            "NVRTC could not compile {name}.cu ({}):\n{}",
            options.join(" "),
            log.to_string_lossy()
        ))),
        Err(e) => Err(err(format!("NVRTC failed on {name}.cu: {e:?}"))),
    }
}

/// The folder of the PTX cache: `$SHOWDOWN_KERNEL_CACHE`, else the user's cache folder.
fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("SHOWDOWN_KERNEL_CACHE")
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("precision-showdown/ptx")))
}

/// The cache key of `source` compiled for `arch` with `options` by NVRTC `version`: 24 hex
/// digits of a SHA-256 over the four, each length-prefixed (no two inputs run together).
pub(crate) fn cache_key(arch: &str, options: &[&str], version: (i32, i32), source: &str) -> String {
    let options = options.join(" ");
    let version = format!("nvrtc {}.{}", version.0, version.1);
    let mut h = Sha256::new();
    for part in [arch, options.as_str(), version.as_str(), source] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `bytes` to `path` atomically: into a temporary file of its own in the same folder,
/// then renamed over `path`. A reader sees the old file or the whole new one; concurrent
/// writers of one path never interleave (the last rename wins); a failed write leaves no
/// temporary file behind.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".ptx-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// PTX for `name` on `arch`, from the disk cache (keyed by arch, options, NVRTC version and
/// source; written atomically) or NVRTC.
pub fn ptx_cached(name: &str, source: &str, arch: &str) -> Result<String> {
    // Without a version (no NVRTC), nothing can be looked up: compile_ptx says why it failed.
    let path = match (cache_dir(), nvrtc_version()) {
        (Some(dir), Some(version)) => {
            let key = cache_key(arch, &NVRTC_OPTIONS, version, source);
            Some(dir.join(format!("{name}-{arch}-{key}.ptx")))
        }
        _ => None,
    };
    if let Some(p) = &path {
        if let Ok(s) = std::fs::read_to_string(p) {
            return Ok(s);
        }
    }
    let ptx = compile_ptx(name, source, arch)?;
    if let Some(p) = &path {
        // The cache is an optimisation: failing to write it is not an error.
        let _ = write_atomically(p, ptx.as_bytes());
    }
    Ok(ptx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel family compiles with NVRTC for sm_80 and sm_90 (CI installs
    /// `nvidia-cuda-nvrtc`); skipped with a printed reason where libnvrtc is absent.
    #[test]
    fn every_kernel_compiles_with_nvrtc() {
        // SAFETY: only checks whether the shared library can be opened.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            // `cargo xtask test` (CI) sets SHOWDOWN_REQUIRE_NVRTC: there a missing NVRTC fails.
            assert!(
                std::env::var_os("SHOWDOWN_REQUIRE_NVRTC").is_none(),
                "SHOWDOWN_REQUIRE_NVRTC is set but libnvrtc cannot be loaded"
            );
            eprintln!("skipped: libnvrtc not found (set LD_LIBRARY_PATH to a CUDA or pip nvidia-cuda-nvrtc lib folder)");
            return;
        }
        for fam in kernels::FAMILIES {
            // Turing (sm_75) too: the tensor-core kernels are guarded, never launched there.
            for arch in ["compute_75", "compute_80", "compute_90"] {
                let ptx = compile_ptx(fam.name, fam.source, arch).unwrap_or_else(|e| panic!("{e}"));
                for ep in fam.entry_points() {
                    assert!(
                        ptx.contains(&format!(".entry {ep}(")),
                        "{}: {ep} missing from the PTX for {arch}",
                        fam.name
                    );
                }
            }
        }
    }

    #[test]
    fn a_compile_error_carries_the_nvrtc_log() {
        // SAFETY: only checks whether the shared library can be opened.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: libnvrtc not found");
            return;
        }
        let e = compile_ptx(
            "broken",
            "extern \"C\" __global__ void k() { undefined_thing(); }",
            "compute_80",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("broken.cu") && e.contains("undefined_thing"),
            "{e}"
        );
    }

    /// The key changes with each of its inputs, the NVRTC version among them (a new NVRTC
    /// never reads PTX an older one wrote), and only with them.
    #[test]
    fn the_cache_key_covers_arch_options_version_and_source() {
        let src = "extern \"C\" __global__ void k() {}";
        let key = cache_key("compute_90", &NVRTC_OPTIONS, (12, 4), src);
        assert_eq!(key.len(), 24);
        assert_eq!(key, cache_key("compute_90", &NVRTC_OPTIONS, (12, 4), src));
        for other in [
            cache_key("compute_90", &NVRTC_OPTIONS, (12, 8), src),
            cache_key("compute_90", &NVRTC_OPTIONS, (13, 4), src),
            cache_key("compute_80", &NVRTC_OPTIONS, (12, 4), src),
            cache_key("compute_90", &["-lineinfo"], (12, 4), src),
            cache_key("compute_90", &NVRTC_OPTIONS, (12, 4), "// other"),
        ] {
            assert_ne!(key, other);
        }
        // Length prefixes: moving a character from one part to the next changes the key.
        assert_ne!(
            cache_key("compute_9", &["0"], (12, 4), src),
            cache_key("compute_90", &[""], (12, 4), src)
        );
    }

    /// Two writers of one cache file at once, over and over, while a reader watches: the
    /// reader only ever sees a whole file of one writer, the file left is whole, and no
    /// temporary file remains in the folder.
    #[test]
    fn concurrent_writers_of_one_key_leave_one_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("ptx")
            .join("train-compute_90-0123456789ab.ptx");
        const LEN: usize = 1 << 18;
        let contents = [vec![b'a'; LEN], vec![b'b'; LEN]];
        let whole = |bytes: &[u8]| bytes.len() == LEN && contents.iter().any(|c| c == bytes);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let writers: Vec<_> = contents
                .iter()
                .map(|c| {
                    let path = &path;
                    s.spawn(move || {
                        for _ in 0..40 {
                            write_atomically(path, c).unwrap();
                        }
                    })
                })
                .collect();
            let reader = s.spawn(|| {
                let mut seen = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok(bytes) = std::fs::read(&path) {
                        assert!(whole(&bytes), "a torn read of {} bytes", bytes.len());
                        seen += 1;
                    }
                }
                seen
            });
            for w in writers {
                w.join().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            reader.join().unwrap();
        });
        assert!(whole(&std::fs::read(&path).unwrap()));
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [path.file_name().unwrap()], "temporary files left");
    }
}
