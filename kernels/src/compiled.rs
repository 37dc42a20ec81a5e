//! Every kernel family compiled ahead of time, so that training needs no CUDA toolkit: cubins
//! for [`CUBIN_ARCHS`] and PTX for [`PTX_ARCH`] (which the driver JIT-compiles for newer GPUs),
//! made by `cargo xtask kernels` with NVRTC and the options the runtime compiles with, committed
//! gzip-compressed in `kernels/compiled/` beside their [`MANIFEST`] (per family: the SHA-256 of
//! its source, the options, the NVRTC version, and each file's size and SHA-256), and embedded
//! here. `compute`'s CUDA backend picks and loads them; a test there fails when a family's
//! source or the options no longer match the manifest. Native builds only: the WASM front end
//! carries no device code.

/// Real architectures shipped as cubins. A cubin for sm_XY runs on every GPU of compute
/// capability X.Z with Z ≥ Y (same major, same or newer minor).
pub const CUBIN_ARCHS: [&str; 4] = ["sm_80", "sm_86", "sm_89", "sm_90"];

/// The virtual architecture shipped as PTX: on a GPU of this compute capability or newer for
/// which no cubin fits (Blackwell and later), the driver JIT-compiles it at load time.
pub const PTX_ARCH: &str = "compute_90";

/// `kernels/compiled/manifest.json`, as `cargo xtask kernels` wrote it.
pub const MANIFEST: &str = include_str!("../compiled/manifest.json");

/// One embedded file: a family compiled for one target, gzip-compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Artifact {
    /// The family ([`crate::KernelFamily::name`]).
    pub family: &'static str,
    /// `sm_XY` (a cubin) or `compute_XY` (PTX).
    pub target: &'static str,
    /// The gzip-compressed cubin or PTX.
    pub gz: &'static [u8],
}

/// Every embedded artifact (the list `cargo xtask kernels` generated beside the files).
pub static ARTIFACTS: &[Artifact] = include!("../compiled/embedded.rs");

/// The embedded artifact of `family` for `target`, if there is one.
pub fn artifact(family: &str, target: &str) -> Option<&'static Artifact> {
    ARTIFACTS
        .iter()
        .find(|a| a.family == family && a.target == target)
}

/// The file name of `family` compiled for `target` in `kernels/compiled/`.
pub fn file_name(family: &str, target: &str) -> String {
    if target.starts_with("sm_") {
        format!("{family}.{target}.cubin.gz")
    } else {
        format!("{family}.{target}.ptx.gz")
    }
}

/// Every target shipped: the cubins' architectures, then the PTX's.
pub fn targets() -> impl Iterator<Item = &'static str> {
    CUBIN_ARCHS.into_iter().chain([PTX_ARCH])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated list names real families and shipped targets, once each, and holds gzip
    /// data. (That the files match the sources is checked in `compute`, which can hash them.)
    #[test]
    fn the_embedded_list_is_well_formed() {
        for (i, a) in ARTIFACTS.iter().enumerate() {
            assert!(
                crate::family(a.family).is_some(),
                "{}: no such family",
                a.family
            );
            assert!(
                targets().any(|t| t == a.target),
                "{}: {}",
                a.family,
                a.target
            );
            assert!(
                a.gz.starts_with(&[0x1f, 0x8b]),
                "{} {}: not gzip",
                a.family,
                a.target
            );
            assert_eq!(
                ARTIFACTS[..i]
                    .iter()
                    .filter(|b| b.family == a.family && b.target == a.target)
                    .count(),
                0,
                "{} {} listed twice",
                a.family,
                a.target
            );
            assert_eq!(artifact(a.family, a.target), Some(a));
        }
        assert_eq!(file_name("train", "sm_90"), "train.sm_90.cubin.gz");
        assert_eq!(file_name("train", "compute_90"), "train.compute_90.ptx.gz");
    }
}
