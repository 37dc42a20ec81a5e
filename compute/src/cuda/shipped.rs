//! Kernels shipped compiled: every family as cubins for sm_80/86/89/90 and PTX for compute_90,
//! made ahead of time by `cargo xtask kernels` ([`write_compiled`]: NVRTC with
//! [`NVRTC_OPTIONS`], the runtime's own options) and embedded in the `kernels` crate
//! ([`kernels::compiled`]), so that training needs the NVIDIA driver only.
//!
//! Which file a family loads from, for a GPU of compute capability X.Y ([`target_for`]): the
//! cubin for sm_XY, else the highest cubin of the same major with a lower minor (binary
//! compatible), else the PTX when the GPU is at least compute_90 (the driver JIT-compiles it:
//! Blackwell and newer). NVRTC compiles the family instead where `SHOWDOWN_KERNELS=nvrtc`, where
//! nothing embedded fits (Turing, or a driver older than the CUDA the files were built with),
//! where the family's source changed since the embedded build (a developer's tree), or where the
//! embedded file fails to load. `SHOWDOWN_KERNELS=embedded` (or `ptx`: the PTX, JIT-compiled
//! even where a cubin fits) allows no NVRTC: for checking the shipped files themselves.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::OnceLock;

use cudarc::nvrtc::Ptx;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use kernels::compiled::{self, CUBIN_ARCHS, PTX_ARCH};
use kernels::KernelFamily;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::err;
use super::nvrtc::{compile_ptx, nvrtc_version, write_atomically, NVRTC_OPTIONS};
use crate::error::Result;
use crate::types::{GpuInfo, Probe};

/// The environment variable that chooses where kernels come from (see [`Mode`]).
pub(crate) const KERNELS_ENV: &str = "SHOWDOWN_KERNELS";

/// What the generated files say made them.
const GENERATOR: &str = "cargo xtask kernels";

/// Where kernels come from (`SHOWDOWN_KERNELS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Unset or `auto`: the embedded file that fits, else NVRTC.
    Auto,
    /// `embedded`: the embedded file that fits, never NVRTC.
    Embedded,
    /// `ptx`: the embedded PTX (JIT-compiled by the driver) even where a cubin fits, never
    /// NVRTC.
    Ptx,
    /// `nvrtc`: NVRTC compiles every family (cached on disk), as before kernels were shipped.
    Nvrtc,
}

impl Mode {
    /// The mode `SHOWDOWN_KERNELS` asks for; an unknown value is an error naming the choices.
    pub(crate) fn from_env() -> std::result::Result<Mode, String> {
        let v = std::env::var(KERNELS_ENV).unwrap_or_default();
        match v.trim() {
            "" | "auto" => Ok(Mode::Auto),
            "embedded" => Ok(Mode::Embedded),
            "ptx" => Ok(Mode::Ptx),
            "nvrtc" => Ok(Mode::Nvrtc),
            other => Err(format!(
                "{KERNELS_ENV}={other}: expected auto, embedded, ptx or nvrtc"
            )),
        }
    }
}

/// `kernels/compiled/manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Manifest {
    /// What wrote it.
    generator: String,
    /// Every family, by name.
    families: BTreeMap<String, FamilyBuild>,
}

/// One family's embedded build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FamilyBuild {
    /// SHA-256 (hex) of the family's source ([`KernelFamily::source`]) as compiled.
    source_sha256: String,
    /// The NVRTC that compiled it, `major.minor`.
    nvrtc: String,
    /// The options besides the architecture ([`NVRTC_OPTIONS`] when it was made).
    options: Vec<String>,
    /// Each target's file (`sm_XY`: cubin, `compute_XY`: PTX).
    artifacts: BTreeMap<String, ArtifactFile>,
}

/// One compiled file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ArtifactFile {
    /// Its name in `kernels/compiled/` (gzip-compressed).
    file: String,
    /// Bytes of the cubin or PTX.
    bytes: u64,
    /// Bytes of the gzip file.
    gz_bytes: u64,
    /// SHA-256 (hex) of the cubin or PTX.
    sha256: String,
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The embedded manifest, parsed once.
fn manifest() -> std::result::Result<&'static Manifest, String> {
    static M: OnceLock<std::result::Result<Manifest, String>> = OnceLock::new();
    M.get_or_init(|| {
        serde_json::from_str(compiled::MANIFEST)
            .map_err(|e| format!("the embedded kernels' manifest does not parse: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The embedded build of `fam`, when it was compiled from this very source with these options;
/// else why not (ending in what to run).
fn fresh_build(fam: &KernelFamily) -> std::result::Result<&'static FamilyBuild, String> {
    let m = manifest()?;
    let b = m.families.get(fam.name).ok_or_else(|| {
        format!(
            "{}: no embedded build (run `cargo xtask kernels`)",
            fam.name
        )
    })?;
    if b.source_sha256 != sha256_hex(fam.source.as_bytes()) {
        return Err(format!(
            "{}: the source changed since its embedded build (run `cargo xtask kernels`)",
            fam.name
        ));
    }
    if b.options != NVRTC_OPTIONS {
        return Err(format!(
            "{}: embedded build made with the options {:?}, the runtime compiles with {:?} (run `cargo xtask kernels`)",
            fam.name, b.options, NVRTC_OPTIONS
        ));
    }
    Ok(b)
}

/// `(major, minor)` of `sm_XY`, `compute_XY` or `X.Y`.
pub(crate) fn cc_of(arch: &str) -> Option<(u32, u32)> {
    if let Some((major, minor)) = arch.split_once('.') {
        return Some((major.parse().ok()?, minor.parse().ok()?));
    }
    let digits = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The embedded target for a GPU of compute capability `cc`: the cubin of its architecture, else
/// the highest cubin of the same major and a lower minor, else the PTX when the GPU is at least
/// [`PTX_ARCH`] (`Mode::Ptx`: the PTX only). `None`: nothing embedded runs there.
pub(crate) fn target_for(cc: (u32, u32), mode: Mode) -> Option<&'static str> {
    let ptx = cc_of(PTX_ARCH).is_some_and(|p| cc >= p).then_some(PTX_ARCH);
    if mode == Mode::Ptx {
        return ptx;
    }
    CUBIN_ARCHS
        .iter()
        .filter_map(|a| cc_of(a).map(|c| (*a, c)))
        .filter(|(_, c)| c.0 == cc.0 && c.1 <= cc.1)
        .max_by_key(|(_, c)| c.1)
        .map(|(a, _)| a)
        .or(ptx)
}

/// The CUDA version of the driver, `(major, minor)`; `None` where it cannot be asked.
fn driver_version() -> Option<(u32, u32)> {
    std::panic::catch_unwind(|| {
        // SAFETY: only checks whether the shared library can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return None;
        }
        let mut v = 0;
        // SAFETY: cuDriverGetVersion writes one int (allowed before cuInit).
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
            .result()
            .ok()?;
        let v = u32::try_from(v).ok()?;
        Some((v / 1000, (v % 1000) / 10))
    })
    .ok()
    .flatten()
}

/// Whether a driver of CUDA version `driver` loads `target` built by NVRTC `built`: a cubin
/// needs a driver of the same CUDA major or newer (minor version compatibility), PTX one at
/// least as new as its compiler (the driver's JIT reads no newer PTX ISA). Unknown versions
/// pass: loading says.
fn driver_loads(driver: Option<(u32, u32)>, built: &str, target: &str) -> bool {
    match (driver, cc_of(built)) {
        (Some(d), Some(b)) if target.starts_with("sm_") => d.0 >= b.0,
        (Some(d), Some(b)) => d >= b,
        _ => true,
    }
}

/// The embedded target `fam` loads on a GPU of compute capability `cc` under `mode`, checked
/// against the source, the options and the driver; else why none.
pub(crate) fn pick(
    fam: &KernelFamily,
    cc: (u32, u32),
    mode: Mode,
) -> std::result::Result<&'static str, String> {
    let build = fresh_build(fam)?;
    let target = target_for(cc, mode).ok_or_else(|| {
        format!(
            "no embedded kernels for sm_{}{} (cubins {}, PTX {} for newer GPUs)",
            cc.0,
            cc.1,
            CUBIN_ARCHS.join(" "),
            PTX_ARCH
        )
    })?;
    if !build.artifacts.contains_key(target) || compiled::artifact(fam.name, target).is_none() {
        return Err(format!(
            "{}: {target} missing from the embedded build (run `cargo xtask kernels`)",
            fam.name
        ));
    }
    if let Some(d) = driver_version().filter(|&d| !driver_loads(Some(d), &build.nvrtc, target)) {
        return Err(format!(
            "the driver (CUDA {}.{}) is older than the embedded {target} needs (built by NVRTC {})",
            d.0, d.1, build.nvrtc
        ));
    }
    Ok(target)
}

/// The embedded `target` file of `family`, decompressed and ready to load (cubin, or PTX for
/// the driver to JIT-compile).
pub(crate) fn module_image(family: &str, target: &str) -> Result<Ptx> {
    let a = compiled::artifact(family, target)
        .ok_or_else(|| err(format!("{family}: no embedded {target}")))?;
    let mut bytes = Vec::new();
    GzDecoder::new(a.gz).read_to_end(&mut bytes).map_err(|e| {
        err(format!(
            "{family}: the embedded {target} does not decompress: {e}"
        ))
    })?;
    if target.starts_with("sm_") {
        return Ok(Ptx::from_binary(bytes));
    }
    let text = String::from_utf8(bytes)
        .ok()
        .filter(|t| !t.contains('\0'))
        .ok_or_else(|| err(format!("{family}: the embedded {target} is not PTX text")))?;
    Ok(Ptx::from_src(text))
}

/// How a family compiled for `target` reads in doctor: `embedded cubin sm_90`,
/// `embedded PTX compute_90 (JIT)`.
pub(crate) fn describe_target(target: &str) -> String {
    if target.starts_with("sm_") {
        format!("embedded cubin {target}")
    } else {
        format!("embedded PTX {target} (JIT)")
    }
}

/// The NVRTC that built the embedded kernels (`NVRTC 12.8`), from the manifest.
fn built_by() -> String {
    let versions: std::collections::BTreeSet<&str> = manifest()
        .map(|m| m.families.values().map(|b| b.nvrtc.as_str()).collect())
        .unwrap_or_default();
    match versions.len() {
        0 => "nothing".into(),
        _ => format!(
            "NVRTC {}",
            versions.into_iter().collect::<Vec<_>>().join(" / ")
        ),
    }
}

/// Doctor's line on the kernels: which path GPU 0 loads them from (an embedded cubin or PTX, or
/// NVRTC) and why; `ok` when training can get its kernels. `nvrtc`: libnvrtc is present.
pub(crate) fn kernels_probe(gpus: &[GpuInfo], nvrtc: bool) -> Probe {
    let probe = |ok: bool, detail: String| Probe { ok, detail };
    let mode = match Mode::from_env() {
        Ok(m) => m,
        Err(e) => return probe(false, e),
    };
    let built = built_by();
    let stale: Vec<String> = kernels::FAMILIES
        .iter()
        .filter_map(|f| fresh_build(f).err())
        .collect();
    let Some(cc) = gpus.first().and_then(|g| cc_of(&g.compute_capability)) else {
        return if stale.is_empty() {
            probe(
                true,
                format!(
                    "embedded: cubins {} and PTX {} (JIT on newer GPUs), built by {built}; NVRTC is not needed to train",
                    CUBIN_ARCHS.join(" "),
                    PTX_ARCH
                ),
            )
        } else {
            probe(
                nvrtc,
                format!(
                    "{}{}",
                    stale.join("; "),
                    if nvrtc {
                        " — NVRTC compiles them"
                    } else {
                        ""
                    }
                ),
            )
        };
    };
    let nvrtc_path = format!("NVRTC compute_{}{}", cc.0, cc.1);
    if mode == Mode::Nvrtc {
        return if nvrtc {
            probe(true, format!("{nvrtc_path} ({KERNELS_ENV}=nvrtc)"))
        } else {
            probe(
                false,
                format!("{KERNELS_ENV}=nvrtc, but libnvrtc is not found"),
            )
        };
    }
    let mut targets = std::collections::BTreeSet::new();
    let mut why = Vec::new();
    for fam in kernels::FAMILIES {
        match pick(fam, cc, mode) {
            Ok(t) => {
                targets.insert(t);
            }
            Err(e) if !why.contains(&e) => why.push(e),
            Err(_) => {}
        }
    }
    let embedded = targets
        .iter()
        .map(|t| describe_target(t))
        .collect::<Vec<_>>()
        .join(" + ");
    match (why.is_empty(), mode, nvrtc) {
        (true, _, _) => probe(
            true,
            format!("{embedded}, built by {built}: NVRTC is not needed to train"),
        ),
        (false, Mode::Auto, true) if targets.is_empty() => {
            probe(true, format!("{nvrtc_path}: {}", why.join("; ")))
        }
        (false, Mode::Auto, true) => probe(
            true,
            format!("{embedded}, and {nvrtc_path} where {}", why.join("; ")),
        ),
        (false, Mode::Auto, false) => probe(
            false,
            format!("{}, and no NVRTC to compile them", why.join("; ")),
        ),
        (false, _, _) => probe(
            false,
            format!(
                "{}, and {KERNELS_ENV}={} allows no NVRTC",
                why.join("; "),
                if mode == Mode::Ptx { "ptx" } else { "embedded" }
            ),
        ),
    }
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    // GzEncoder's header has no file name and mtime 0: the same input gives the same file.
    let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes)
        .and_then(|()| enc.finish())
        .map_err(|e| err(format!("gzip: {e}")))
}

/// Compiles every family for every shipped target with the NVRTC that is loaded (cubins via
/// [`super::facts::compile_cubin`], PTX via [`compile_ptx`]: the runtime's own options) into
/// `dir` (`kernels/compiled/`): the gzip-compressed files, `manifest.json` and `embedded.rs` (the
/// list the `kernels` crate embeds); files of families that are gone are removed. Returns a
/// table of the sizes. `cargo xtask kernels` runs it.
pub fn write_compiled(dir: &Path) -> Result<String> {
    let (major, minor) = nvrtc_version().ok_or_else(|| {
        err("libnvrtc not found: `cargo xtask kernels` puts pip's on LD_LIBRARY_PATH")
    })?;
    let io = |path: &Path, e: std::io::Error| crate::error::ComputeError::Io {
        path: path.display().to_string(),
        source: e,
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut manifest = Manifest {
        generator: GENERATOR.into(),
        families: BTreeMap::new(),
    };
    let mut listing = String::new();
    let mut table = format!(
        "{:<12} {:<11} {:>10} {:>10}\n",
        "family", "target", "bytes", "gzip"
    );
    let (mut total, mut total_gz) = (0u64, 0u64);
    for fam in kernels::FAMILIES {
        let mut artifacts = BTreeMap::new();
        for target in compiled::targets() {
            let bytes = if target.starts_with("sm_") {
                super::facts::compile_cubin(fam.name, fam.source, target)?
            } else {
                compile_ptx(fam.name, fam.source, target)?
                    .trim_end_matches('\0')
                    .as_bytes()
                    .to_vec()
            };
            let gz = gzip(&bytes)?;
            let file = compiled::file_name(fam.name, target);
            let path = dir.join(&file);
            write_atomically(&path, &gz).map_err(|e| io(&path, e))?;
            table.push_str(&format!(
                "{:<12} {:<11} {:>10} {:>10}\n",
                fam.name,
                target,
                bytes.len(),
                gz.len()
            ));
            total += bytes.len() as u64;
            total_gz += gz.len() as u64;
            listing.push_str(&format!(
                "    Artifact {{ family: {:?}, target: {:?}, gz: include_bytes!({:?}) }},\n",
                fam.name, target, file
            ));
            artifacts.insert(
                target.to_string(),
                ArtifactFile {
                    file,
                    bytes: bytes.len() as u64,
                    gz_bytes: gz.len() as u64,
                    sha256: sha256_hex(&bytes),
                },
            );
        }
        manifest.families.insert(
            fam.name.to_string(),
            FamilyBuild {
                source_sha256: sha256_hex(fam.source.as_bytes()),
                nvrtc: format!("{major}.{minor}"),
                options: NVRTC_OPTIONS.iter().map(|s| s.to_string()).collect(),
                artifacts,
            },
        );
    }
    table.push_str(&format!(
        "{:<12} {:<11} {:>10} {:>10}\n",
        "total", "", total, total_gz
    ));
    // Files of families (or targets) no longer built.
    let keep: Vec<String> = manifest
        .families
        .values()
        .flat_map(|b| b.artifacts.values().map(|a| a.file.clone()))
        .collect();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".gz") && !keep.contains(&name) {
            std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
        }
    }
    let json =
        serde_json::to_string_pretty(&manifest).map_err(|e| err(format!("manifest: {e}")))? + "\n";
    let path = dir.join("manifest.json");
    write_atomically(&path, json.as_bytes()).map_err(|e| io(&path, e))?;
    let rs = format!(
        "// @generated by `{GENERATOR}` (NVRTC {major}.{minor}): do not edit.\n&[\n{listing}]\n"
    );
    let path = dir.join("embedded.rs");
    write_atomically(&path, rs.as_bytes()).map_err(|e| io(&path, e))?;
    Ok(format!(
        "NVRTC {major}.{minor}, options {}\n{table}",
        NVRTC_OPTIONS.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed files match the sources: every family was compiled from its current source
    /// with the runtime's options, every target is embedded, and each embedded file decompresses
    /// to the bytes the manifest describes. Fails after a kernel edit until `cargo xtask kernels`
    /// is run (CI has no GPU: this needs none).
    #[test]
    fn the_embedded_kernels_match_their_sources() {
        let m = manifest().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.generator, GENERATOR);
        let mut problems = Vec::new();
        for fam in kernels::FAMILIES {
            let build = match fresh_build(fam) {
                Ok(b) => b,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            for target in compiled::targets() {
                let (Some(file), Some(a)) = (
                    build.artifacts.get(target),
                    compiled::artifact(fam.name, target),
                ) else {
                    problems.push(format!("{}: {target} not embedded", fam.name));
                    continue;
                };
                let mut bytes = Vec::new();
                GzDecoder::new(a.gz).read_to_end(&mut bytes).unwrap();
                if bytes.len() as u64 != file.bytes || sha256_hex(&bytes) != file.sha256 {
                    problems.push(format!(
                        "{}: the embedded {target} is not the file the manifest describes",
                        fam.name
                    ));
                }
                assert_eq!(a.gz.len() as u64, file.gz_bytes, "{}", file.file);
                assert_eq!(file.file, compiled::file_name(fam.name, target));
            }
        }
        for name in m.families.keys() {
            if kernels::family(name).is_none() {
                problems.push(format!("{name}: embedded but no longer a family"));
            }
        }
        assert_eq!(
            compiled::ARTIFACTS.len(),
            m.families.len() * compiled::targets().count(),
            "embedded.rs and manifest.json disagree"
        );
        assert!(
            problems.is_empty(),
            "the embedded kernels are stale: run `cargo xtask kernels`\n{}",
            problems.join("\n")
        );
    }

    /// Exact cubin, else the same major's highest lower minor, else the PTX from compute_90 up;
    /// nothing for older GPUs.
    #[test]
    fn each_gpu_gets_the_file_it_can_run() {
        let t = |major, minor| target_for((major, minor), Mode::Auto);
        assert_eq!(t(8, 0), Some("sm_80"));
        assert_eq!(t(8, 6), Some("sm_86"));
        assert_eq!(t(8, 7), Some("sm_86"));
        assert_eq!(t(8, 9), Some("sm_89"));
        assert_eq!(t(9, 0), Some("sm_90"));
        assert_eq!(t(10, 0), Some("compute_90"));
        assert_eq!(t(12, 0), Some("compute_90"));
        assert_eq!(t(7, 5), None);
        assert_eq!(t(7, 0), None);
        assert_eq!(target_for((9, 0), Mode::Ptx), Some("compute_90"));
        assert_eq!(target_for((12, 1), Mode::Ptx), Some("compute_90"));
        assert_eq!(target_for((8, 9), Mode::Ptx), None);
        assert_eq!(target_for((8, 6), Mode::Embedded), Some("sm_86"));
    }

    #[test]
    fn architecture_names_parse() {
        assert_eq!(cc_of("sm_90"), Some((9, 0)));
        assert_eq!(cc_of("compute_86"), Some((8, 6)));
        assert_eq!(cc_of("sm_120"), Some((12, 0)));
        assert_eq!(cc_of("8.9"), Some((8, 9)));
        assert_eq!(cc_of("sm_9"), None);
        assert_eq!(cc_of("sm_90a"), None);
        assert_eq!(cc_of("garbage"), None);
    }

    /// Cubins load on any driver of their CUDA major or newer; PTX needs one at least as new as
    /// the NVRTC that wrote it.
    #[test]
    fn the_driver_must_be_new_enough_for_the_files() {
        assert!(driver_loads(Some((12, 2)), "12.8", "sm_90"));
        assert!(driver_loads(Some((13, 0)), "12.8", "sm_90"));
        assert!(!driver_loads(Some((11, 8)), "12.8", "sm_86"));
        assert!(!driver_loads(Some((12, 4)), "12.8", "compute_90"));
        assert!(driver_loads(Some((12, 8)), "12.8", "compute_90"));
        assert!(driver_loads(Some((13, 0)), "12.8", "compute_90"));
        assert!(driver_loads(None, "12.8", "compute_90"));
    }

    #[test]
    fn doctor_says_which_file_a_gpu_loads() {
        if Mode::from_env() != Ok(Mode::Auto) {
            return eprintln!("skipped: {KERNELS_ENV} is set");
        }
        if kernels::FAMILIES.iter().any(|f| fresh_build(f).is_err()) {
            return eprintln!("skipped: stale embedded kernels (the manifest test says which)");
        }
        let gpu = |cc: &str| GpuInfo {
            index: 0,
            name: "GPU".into(),
            compute_capability: cc.into(),
            memory_bytes: 0,
            sms: 1,
        };
        let skip_old_driver = driver_version().is_some_and(|d| d.0 < 12);
        if skip_old_driver {
            return eprintln!("skipped: a driver older than CUDA 12");
        }
        let p = kernels_probe(&[gpu("9.0")], false);
        assert!(p.ok, "{}", p.detail);
        assert!(p.detail.starts_with("embedded cubin sm_90"), "{}", p.detail);
        assert!(p.detail.contains("NVRTC is not needed to train"));
        let p = kernels_probe(&[gpu("8.7")], false);
        assert!(p.detail.starts_with("embedded cubin sm_86"), "{}", p.detail);
        let p = kernels_probe(&[gpu("7.5")], false);
        assert!(!p.ok);
        assert!(
            p.detail.contains("no embedded kernels for sm_75"),
            "{}",
            p.detail
        );
        assert!(p.detail.contains("no NVRTC"), "{}", p.detail);
        let p = kernels_probe(&[gpu("7.5")], true);
        assert!(p.ok);
        assert!(p.detail.starts_with("NVRTC compute_75"), "{}", p.detail);
        let p = kernels_probe(&[], false);
        assert!(
            p.ok && p.detail.starts_with("embedded: cubins sm_80"),
            "{}",
            p.detail
        );
    }

    /// `cargo xtask kernels` runs this with `SHOWDOWN_WRITE_KERNELS=<repo>/kernels/compiled` and
    /// pip's NVRTC on LD_LIBRARY_PATH; elsewhere (also under `--include-ignored` on the GPU
    /// machine) it only says so.
    #[test]
    #[ignore = "writes kernels/compiled: run by `cargo xtask kernels`"]
    fn write_compiled_kernels() {
        let Some(dir) = std::env::var_os("SHOWDOWN_WRITE_KERNELS") else {
            return eprintln!(
                "skipped: SHOWDOWN_WRITE_KERNELS is not set (`cargo xtask kernels` sets it)"
            );
        };
        let table = write_compiled(Path::new(&dir)).unwrap_or_else(|e| panic!("{e}"));
        println!("wrote {}:\n{table}", Path::new(&dir).display());
    }

    /// On a GPU: every family loads from every embedded file that fits it (the cubin and, from
    /// compute_90 up, the PTX the driver JIT-compiles), with every entry point.
    #[test]
    #[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
    fn every_family_loads_from_its_embedded_files() {
        let dev = match super::super::open_device(0) {
            Ok(d) => d,
            Err(e) => return super::super::gpu_tests::no_gpu(e),
        };
        let cc = cc_of(&dev.arch).unwrap();
        for mode in [Mode::Embedded, Mode::Ptx] {
            let Some(target) = target_for(cc, mode) else {
                eprintln!("{mode:?}: nothing embedded for {}", dev.arch);
                continue;
            };
            for fam in kernels::FAMILIES {
                let module = dev
                    .ctx
                    .load_module(module_image(fam.name, target).unwrap())
                    .unwrap_or_else(|e| panic!("{} {target}: {e}", fam.name));
                for ep in fam.entry_points() {
                    module
                        .load_function(&ep)
                        .unwrap_or_else(|e| panic!("{} {target}: {ep}: {e}", fam.name));
                }
            }
        }
    }
}
