//! The lints: clippy in the build itself (a cargo build, or the Tauri CLI that runs one, made to
//! compile the workspace's own crates through clippy-driver with `-D warnings`; CI's stages, the
//! browser-mode and the desktop builds all lint this way), and the house rules clippy does not
//! know ([`house`]).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result};

use crate::process::output;

pub mod house;

/// `-D warnings` as cargo-clippy hands its arguments to clippy-driver: each one followed by
/// `__CLIPPY_HACKERY__`.
const CLIPPY_ARGS: &str = "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__";

/// Makes `cmd` (a cargo build, or the Tauri CLI that runs one) compile the workspace's own
/// crates through clippy-driver with `-D warnings`, which is all `cargo clippy` does: it sets
/// RUSTC_WORKSPACE_WRAPPER to clippy-driver and passes its arguments in CLIPPY_ARGS. The driver
/// lints, then compiles as rustc would (code generation included when cargo asks for it), so
/// a linted build is the build: no separate `cargo clippy` compile of the graph (its check
/// units are not the build's). Dependencies are compiled by plain rustc and shared with
/// unlinted builds; the workspace's crates get their own hashes (no ping-pong rebuilds).
///
/// What the driver changes in the code it compiles (clippy_driver's config): `cfg(clippy)` is
/// set (nothing here reads it), MIR optimisations are off (`-Zmir-opt-level=0`: LLVM still
/// optimises at the profile's level) and so are debug builds' null and alignment checks on raw
/// pointer reads (`CheckNull`, `CheckAlignment`), in the workspace's crates only.
pub fn lint(cmd: &mut Command) -> Result<&mut Command> {
    Ok(cmd
        .env("RUSTC_WORKSPACE_WRAPPER", clippy_driver()?)
        .env("CLIPPY_ARGS", CLIPPY_ARGS))
}

/// clippy-driver of the toolchain that runs this cargo.
fn clippy_driver() -> Result<PathBuf> {
    static DRIVER: OnceLock<Option<PathBuf>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            std::env::var_os("CARGO")
                .map(|c| PathBuf::from(c).with_file_name("clippy-driver"))
                .filter(|p| p.exists())
                .or_else(|| {
                    output(Command::new("rustup").args(["which", "clippy-driver"]))
                        .map(|s| PathBuf::from(s.trim()))
                        .filter(|p| p.exists())
                })
        })
        .clone()
        .context("no clippy-driver beside cargo (rustup component add clippy)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clippy_args_are_split_as_clippy_driver_splits_them() {
        let args: Vec<&str> = CLIPPY_ARGS
            .split("__CLIPPY_HACKERY__")
            .filter(|a| !a.is_empty())
            .collect();
        assert_eq!(args, ["-D", "warnings"]);
    }
}
