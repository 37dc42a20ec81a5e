//! CUDA without a GPU: NVRTC and cuobjdump from pip wheels (into target/), the environment that
//! lets the tests and `showdown serve` find them, and `cargo xtask kernels`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::installs::pip_install;
use crate::process::{cargo, root, run};

/// A folder holding `libnvrtc.so` (NVRTC 13 from pip `nvidia-cuda-nvrtc`, installed into
/// target/ when missing) and the folder of its builtins, for LD_LIBRARY_PATH: CI compiles every
/// kernel with NVRTC although it has no GPU.
pub(crate) fn nvrtc_lib_path() -> Result<String> {
    nvrtc_lib_path_of("nvidia-cuda-nvrtc==13.0.*", "pip-nvrtc", "nvrtc")
}

/// [`nvrtc_lib_path`] for the pip requirement `requirement`, installed into target/`pip_dir`,
/// its `libnvrtc.so` link in target/`link_dir`.
pub(crate) fn nvrtc_lib_path_of(
    requirement: &str,
    pip_dir: &str,
    link_dir: &str,
) -> Result<String> {
    let pip_dir = root().join("target").join(pip_dir);
    let find = |dir: &Path| -> Option<PathBuf> {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).ok()?.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_dir() {
                    stack.push(p);
                } else if name.starts_with("libnvrtc.so.") {
                    return Some(p);
                }
            }
        }
        None
    };
    let lib = match find(&pip_dir) {
        Some(l) => l,
        None => {
            pip_install(&pip_dir, &[requirement])?;
            find(&pip_dir).with_context(|| {
                format!("pip installed {requirement} but no libnvrtc.so.* was found in it")
            })?
        }
    };
    // cudarc looks for libnvrtc.so (or .so.12/.11…): the NVRTC 13 wheel has only libnvrtc.so.13.
    let link_dir = root().join("target").join(link_dir);
    std::fs::create_dir_all(&link_dir)?;
    let link = link_dir.join("libnvrtc.so");
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(&lib, &link).context("linking libnvrtc.so")?;
    let lib_dir = lib.parent().map(Path::to_path_buf).unwrap_or_default();
    let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    Ok(format!(
        "{}:{}{}",
        link_dir.display(),
        lib_dir.display(),
        if old.is_empty() {
            String::new()
        } else {
            format!(":{old}")
        }
    ))
}

/// A PATH with cuobjdump and nvdisasm (pip `nvidia-cuda-cuobjdump` / `nvidia-cuda-nvdisasm`,
/// installed into target/ when missing): CI reads every kernel's resource usage and SASS.
pub(crate) fn cuda_tools_path() -> Result<String> {
    let dir = root().join("target/pip-cuda-tools");
    let bin = dir.join("nvidia/cu13/bin");
    if !(bin.join("cuobjdump").exists() && bin.join("nvdisasm").exists()) {
        pip_install(
            &dir,
            &[
                "nvidia-cuda-cuobjdump==13.2.*",
                "nvidia-cuda-nvdisasm==13.2.*",
            ],
        )?;
    }
    if !bin.join("cuobjdump").exists() {
        bail!(
            "pip installed nvidia-cuda-cuobjdump but {} has no cuobjdump",
            bin.display()
        );
    }
    Ok(format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    ))
}

/// The environment that lets NVRTC and cuobjdump run here without a GPU (pip wheels, installed
/// into target/ when missing): the tests and `showdown serve` compile every kernel with them.
pub struct CudaEnv {
    ld_library_path: String,
    path: String,
}

impl CudaEnv {
    pub fn new() -> Result<Self> {
        Ok(CudaEnv {
            ld_library_path: nvrtc_lib_path()?,
            path: cuda_tools_path()?,
        })
    }

    pub fn apply<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("LD_LIBRARY_PATH", &self.ld_library_path)
            .env("PATH", &self.path)
    }
}

/// The NVRTC `cargo xtask kernels` compiles with by default: CUDA 12.8, whose cubins every
/// driver from CUDA 12.0 (r525) on loads (minor version compatibility) and whose PTX every
/// driver that knows Blackwell (r570, CUDA 12.8) JIT-compiles; NVRTC 13's files need r580.
pub(crate) const KERNELS_NVRTC: &str = "nvidia-cuda-nvrtc-cu12==12.8.*";

/// `cargo xtask kernels`: NVRTC `requirement` from pip (into target/), then compute's
/// `write_compiled` (the runtime's own compile functions and options) through its test
/// `write_compiled_kernels`, writing kernels/compiled/.
pub(crate) fn kernels(requirement: &str) -> Result<()> {
    let tag: String = requirement
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let ld = nvrtc_lib_path_of(requirement, &format!("pip-{tag}"), &format!("nvrtc-{tag}"))?;
    let out = root().join("kernels/compiled");
    run(cargo()
        .args(["test", "-p", "compute", "--features", "cuda", "--lib", "--"])
        .args(["--ignored", "--exact", "--nocapture"])
        .arg("cuda::shipped::tests::write_compiled_kernels")
        .env("LD_LIBRARY_PATH", ld)
        .env("SHOWDOWN_WRITE_KERNELS", &out))?;
    let manifest = std::fs::read_to_string(out.join("manifest.json"))
        .with_context(|| format!("reading {}", out.join("manifest.json").display()))?;
    if !manifest.contains("\"source_sha256\"") {
        bail!("{} holds no family: nothing was compiled", out.display());
    }
    eprintln!(
        "kernels/compiled/ written: commit it (`cargo test -p compute --features cuda --lib shipped` checks it)"
    );
    Ok(())
}
