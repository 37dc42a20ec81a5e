//! Opening a GPU for our kernels (its context, architecture, name and facts) and loading kernel
//! families into it: the embedded cubin or PTX that fits the GPU (`shipped`), else NVRTC.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use super::err;
use super::nvrtc::ptx_cached;
use super::shipped::{self, Mode};
use crate::error::{ComputeError, Result};

/// The entry points loaded into a context, by name.
pub(crate) type Kernels = HashMap<String, CudaFunction>;

/// A GPU opened for our kernels: its context (one stream, no per-buffer event tracking), the
/// PTX architecture to compile for, its name and SM count.
pub(crate) struct OpenDevice {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) arch: String,
    pub(crate) device: String,
    pub(crate) sms: u32,
}

/// Opens GPU `ordinal` without panicking, whatever is (not) installed. Needs the driver and the
/// device only: where the kernels come from (embedded, else NVRTC) is [`load_families`]'s
/// business, and its error says what is missing.
pub(crate) fn open_device(ordinal: usize) -> Result<OpenDevice> {
    let probe = crate::gpu_probe::probe_stack();
    probe
        .has_gpu()
        .map_err(|missing| ComputeError::Unavailable {
            backend: "cuda".into(),
            reason: missing,
        })?;
    if ordinal >= probe.gpus.len() {
        return Err(ComputeError::bad_arg(
            "--device",
            ordinal,
            format!("this machine has {} GPU(s)", probe.gpus.len()),
        ));
    }
    let ctx = std::panic::catch_unwind(|| CudaContext::new(ordinal))
        .map_err(|_| err("the CUDA driver panicked while creating a context"))?
        .map_err(err)?;
    let (major, minor) = ctx.compute_capability().map_err(err)?;
    let name = ctx.name().map_err(err)?;
    // One stream: the launches' own order is all the synchronisation we need.
    // SAFETY: no other stream of this context exists, so per-buffer events are never needed.
    unsafe { ctx.disable_event_tracking() };
    let sms = probe.gpus.get(ordinal).map(|g| g.sms).unwrap_or(1).max(1);
    Ok(OpenDevice {
        ctx,
        arch: format!("compute_{major}{minor}"),
        device: format!("{name} (sm_{major}{minor})"),
        sms,
    })
}

/// Loads `families` into `ctx` (a GPU of architecture `arch`, `compute_XY`), returning every
/// entry point: each family from its embedded file for this GPU (see `shipped`), else compiled
/// by NVRTC (or taken from its disk cache).
pub(crate) fn load_families(
    ctx: &Arc<CudaContext>,
    families: &[kernels::KernelFamily],
    arch: &str,
) -> Result<Kernels> {
    let mode = Mode::from_env().map_err(err)?;
    let mut funcs = HashMap::new();
    for fam in families {
        let module = load_family(ctx, fam, arch, mode)?;
        for ep in fam.entry_points() {
            let f = module
                .load_function(&ep)
                .map_err(|e| err(format!("kernel {ep}: {e}")))?;
            funcs.insert(ep, f);
        }
    }
    Ok(funcs)
}

/// One family into `ctx`: the embedded file `shipped::pick` chooses for `arch`; NVRTC where
/// `mode` is `Nvrtc`, or (`Auto`) where nothing embedded fits or it fails to load. An error
/// says every path tried.
fn load_family(
    ctx: &Arc<CudaContext>,
    fam: &kernels::KernelFamily,
    arch: &str,
    mode: Mode,
) -> Result<Arc<CudaModule>> {
    let mut tried = Vec::new();
    if mode != Mode::Nvrtc {
        let cc =
            shipped::cc_of(arch).ok_or_else(|| err(format!("unexpected architecture {arch}")))?;
        match shipped::pick(fam, cc, mode) {
            Ok(target) => {
                let loaded = shipped::module_image(fam.name, target)
                    .and_then(|image| ctx.load_module(image).map_err(err));
                match loaded {
                    Ok(module) => return Ok(module),
                    Err(e) => tried.push(format!(
                        "loading {}.cu from its {}: {e}",
                        fam.name,
                        shipped::describe_target(target)
                    )),
                }
            }
            Err(why) => tried.push(why),
        }
        if mode != Mode::Auto {
            return Err(err(tried.join("; ")));
        }
    }
    let nvrtc = ptx_cached(fam.name, fam.source, arch).and_then(|ptx| {
        ctx.load_module(Ptx::from_src(ptx))
            .map_err(|e| err(format!("loading {}.cu for {arch}: {e}", fam.name)))
    });
    nvrtc.map_err(|e| {
        if tried.is_empty() {
            e
        } else {
            err(format!("{}; and NVRTC: {e}", tried.join("; ")))
        }
    })
}

/// Dynamic shared memory a block may use once opted in (bytes), as the driver reports it.
pub(crate) fn smem_optin(ctx: &CudaContext) -> Result<i32> {
    use cudarc::driver::sys::CUdevice_attribute as DA;
    Ok(ctx
        .attribute(DA::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .map_err(err)?
        .max(0))
}

/// Raises `f`'s dynamic shared-memory limit to `bytes` (`name` for the error).
pub(crate) fn opt_in_smem(name: &str, f: &CudaFunction, bytes: i32) -> Result<()> {
    use cudarc::driver::sys::CUfunction_attribute_enum as FA;
    // SAFETY: `f` belongs to a module loaded in a live context; `bytes` is at most the device's
    // own opt-in limit (the caller's contract; the driver rejects more).
    unsafe {
        cudarc::driver::result::function::set_function_attribute(
            f.cu_function(),
            FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes,
        )
    }
    .map_err(|e| err(format!("{name}: cannot raise its shared-memory limit: {e}")))
}

/// The major compute capability of an architecture name (`compute_90` → 9).
pub(crate) fn major_of(arch: &str) -> u32 {
    let digits: String = arch.chars().filter(|c| c.is_ascii_digit()).collect();
    digits
        .get(..digits.len().saturating_sub(1))
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architecture_names_give_their_major_version() {
        assert_eq!(major_of("compute_90"), 9);
        assert_eq!(major_of("compute_86"), 8);
        assert_eq!(major_of("compute_100"), 10);
        assert_eq!(major_of("garbage"), 0);
    }
}
