//! Kernel facts for the Kernel Reveal page, without a GPU: each family compiled by NVRTC to a
//! cubin for a chosen architecture, its resource usage and SASS read with `cuobjdump`
//! (`$SHOWDOWN_CUOBJDUMP`, or on PATH; pip `nvidia-cuda-cuobjdump` ships one), its PTX, the
//! tensor-core instructions located in both, and the occupancy the calculator predicts.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use cudarc::nvrtc::sys;

use super::err;
use crate::child::run::{run_limited, ChildLimits, Finished, Group};
use crate::error::{ComputeError, Result};
use crate::kernel_panel::KernelResources;

pub use crate::kernel_panel::KernelFacts;

/// Compiles `source` to a cubin for `arch` (`sm_90`) with NVRTC.
pub fn compile_cubin(name: &str, source: &str, arch: &str) -> Result<Vec<u8>> {
    // SAFETY: only checks whether the shared library can be opened.
    if !std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false) {
        return Err(err("libnvrtc not found"));
    }
    let src = CString::new(source).map_err(|_| err("kernel source holds a NUL byte"))?;
    let cname = CString::new(format!("{name}.cu")).map_err(|_| err("bad kernel name"))?;
    let opts: Vec<CString> = super::NVRTC_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--gpu-architecture={arch}")])
        .map(|s| CString::new(s).map_err(|_| err("bad NVRTC option")))
        .collect::<Result<_>>()?;
    let ptrs: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let n_opts = i32::try_from(ptrs.len()).map_err(|_| err("too many NVRTC options"))?;
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: NVRTC C API used as documented: create, compile, read the log/cubin into buffers
    // of the sizes NVRTC reports, destroy. Every pointer outlives the calls.
    unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            cname.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
        .result()
        .map_err(|e| err(format!("{e:?}")))?;
        let compiled = sys::nvrtcCompileProgram(prog, n_opts, ptrs.as_ptr()).result();
        let out = match compiled {
            Err(e) => {
                let mut n = 0usize;
                sys::nvrtcGetProgramLogSize(prog, &mut n);
                let mut log = vec![0u8; n.max(1)];
                sys::nvrtcGetProgramLog(prog, log.as_mut_ptr() as *mut std::ffi::c_char);
                Err(err(format!(
                    "NVRTC could not compile {name}.cu for {arch} ({e:?}):\n{}",
                    String::from_utf8_lossy(&log)
                )))
            }
            Ok(()) => {
                let mut n = 0usize;
                sys::nvrtcGetCUBINSize(prog, &mut n)
                    .result()
                    .map_err(|e| err(format!("{e:?}")))?;
                let mut bin = vec![0u8; n];
                sys::nvrtcGetCUBIN(prog, bin.as_mut_ptr() as *mut std::ffi::c_char)
                    .result()
                    .map_err(|e| err(format!("{e:?}")))?;
                Ok(bin)
            }
        };
        sys::nvrtcDestroyProgram(&mut prog);
        out
    }
}

/// Whether libnvrtc can be opened here.
pub fn nvrtc_present() -> bool {
    // SAFETY: only checks whether the shared library can be opened.
    std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
}

/// Refuses the facts where NVRTC is missing (`present` false), naming it: a machine without
/// NVRTC cannot compile the family, which is what the request asks for (a 4xx on the HTTP
/// door, not a runtime fault, and not cuobjdump's absence, which comes after).
pub fn require_nvrtc(present: bool) -> Result<()> {
    if present {
        Ok(())
    } else {
        Err(ComputeError::BadRequest(format!(
            "{}; the compute service's machine has none (libnvrtc not found).",
            showdown_core::lab::FACTS_NEED_NVRTC
        )))
    }
}

/// The cuobjdump to use, if any.
pub fn cuobjdump() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SHOWDOWN_CUOBJDUMP") {
        return Some(PathBuf::from(p));
    }
    let mut probe = Command::new("cuobjdump");
    probe.arg("--version");
    run_tool(probe)
        .ok()
        .filter(|f| f.success)
        .map(|_| PathBuf::from("cuobjdump"))
}

/// What one cuobjdump run may take: a minute, 64 MiB of output, 1 MiB of errors.
const TOOL_LIMITS: ChildLimits = ChildLimits {
    time: Duration::from_secs(60),
    stdout_bytes: 64 << 20,
    stderr_bytes: 1 << 20,
};

/// Runs a command-line tool to its end through the one child-process module (its own process
/// group, the ETXTBSY retry, [`TOOL_LIMITS`]); a failure to run it is a CUDA backend error.
fn run_tool(cmd: Command) -> Result<Finished> {
    let what = cmd.get_program().to_string_lossy().into_owned();
    run_limited(cmd, TOOL_LIMITS, &|| false, Group::Own, &mut |_| {}).map_err(|stop| {
        match stop.into_error(&what) {
            ComputeError::Backend { reason, .. } => err(reason),
            other => other,
        }
    })
}

fn run(tool: &PathBuf, args: &[&str], cubin: &[u8]) -> Result<String> {
    // A folder of its own per call: two threads (two tests, two requests) reading facts at
    // once shared `showdown-cubin-<pid>`, and one removed it under the other.
    let dir = tempfile::Builder::new()
        .prefix("showdown-cubin-")
        .tempdir()
        .map_err(|source| ComputeError::Io {
            path: std::env::temp_dir().display().to_string(),
            source,
        })?;
    let file = dir.path().join("k.cubin");
    std::fs::write(&file, cubin).map_err(|source| ComputeError::Io {
        path: file.display().to_string(),
        source,
    })?;
    let mut cmd = Command::new(tool);
    cmd.args(args).arg(&file);
    let out = run_tool(cmd)?;
    drop(dir);
    if !out.success {
        return Err(err(format!(
            "{} {:?} failed: {}",
            tool.display(),
            args,
            out.stderr.trim()
        )));
    }
    Ok(out.stdout)
}

/// Parses `cuobjdump --dump-resource-usage`: ` Function NAME:` followed by
/// `REG:16 STACK:0 SHARED:0 LOCAL:0 …`.
pub fn parse_resource_usage(text: &str) -> HashMap<String, KernelResources> {
    let mut out = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t
            .strip_prefix("Function ")
            .and_then(|r| r.strip_suffix(':'))
        {
            current = Some(name.to_string());
        } else if let (Some(name), true) = (&current, t.starts_with("REG:")) {
            let field = |key: &str| -> u32 {
                t.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(key))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            };
            out.insert(
                name.clone(),
                KernelResources {
                    name: name.clone(),
                    registers: field("REG:"),
                    static_shared_bytes: field("SHARED:"),
                    local_bytes: field("LOCAL:"),
                    stack_bytes: field("STACK:"),
                },
            );
            current = None;
        }
    }
    out
}

/// The PTX of one `.entry` (from `.entry NAME(` to the closing brace at column 0).
fn ptx_entry<'a>(ptx: &'a str, entry: &str) -> &'a str {
    let Some(start) = ptx.find(&format!(".entry {entry}(")) else {
        return "";
    };
    let rest = &ptx[start..];
    let end = rest.find("\n}\n").map(|e| e + 3).unwrap_or(rest.len());
    &rest[..end]
}

/// Counts tensor-core instructions in PTX (`mma.sync`, `wmma.mma`, `wgmma`).
pub fn ptx_tensor_core_count(ptx: &str) -> usize {
    ptx.lines()
        .filter(|l| crate::kernel_panel::is_ptx_tensor_core_line(l))
        .count()
}

/// Counts tensor-core instructions in SASS (`HMMA`, `HGMMA`, `IMMA`).
pub fn sass_tensor_core_count(sass: &str) -> usize {
    sass.lines()
        .filter(|l| crate::kernel_panel::is_sass_tensor_core_line(l))
        .count()
}

/// Lines of PTX and of SASS the Kernel Reveal page shows around a kernel's first tensor-core
/// instruction.
const EXCERPT_LINES: usize = 24;

/// Facts of every entry point of `family` on `arch`, for launches of `threads` per block.
pub fn family_facts(
    family: &kernels::KernelFamily,
    arch: &str,
    threads: u32,
) -> Result<Vec<KernelFacts>> {
    let (major, minor) = crate::occupancy::parse_cc(arch)
        .map_err(|e| ComputeError::bad_arg("--arch", arch, e.to_string()))?;
    require_nvrtc(nvrtc_present())?;
    let tool = cuobjdump().ok_or_else(|| err("cuobjdump not found: install the CUDA toolkit or `pip install nvidia-cuda-cuobjdump`, or set SHOWDOWN_CUOBJDUMP"))?;
    let sm = format!("sm_{major}{minor}");
    let cubin = compile_cubin(family.name, family.source, &sm)?;
    let res = parse_resource_usage(&run(&tool, &["--dump-resource-usage"], &cubin)?);
    let sass = run(&tool, &["--dump-sass"], &cubin)?;
    let ptx = super::compile_ptx(
        family.name,
        family.source,
        &format!("compute_{major}{minor}"),
    )?;
    let limits = crate::occupancy::GpuLimits::for_cc(major, minor)
        .map_err(|e| ComputeError::bad_arg("--arch", arch, e.to_string()))?;
    let mut out = Vec::new();
    for entry in family.entry_points() {
        let mut r = res
            .get(&entry)
            .cloned()
            .ok_or_else(|| err(format!("cuobjdump reported no resource usage for {entry}")))?;
        // cuobjdump's SHARED includes the 1 KB the driver reserves per block on sm_80 and newer
        // (every kernel shows at least 1024); the calculator adds that reserve itself.
        let reserved = limits.reserved_shared_memory_per_block;
        if r.static_shared_bytes >= reserved {
            r.static_shared_bytes -= reserved;
        }
        let input = crate::occupancy::OccupancyInput {
            threads_per_block: threads,
            registers_per_thread: r.registers,
            shared_mem_per_block: r.static_shared_bytes,
            carveout_pct: None,
        };
        let occ = crate::occupancy::occupancy(&limits, &input)
            .map_err(|e| ComputeError::bad_arg("--threads", threads, e.to_string()))?;
        // The SASS of one function: from its "Function : NAME" header to the next one.
        let fsass = sass
            .split("Function : ")
            .find(|s| s.starts_with(&entry) && s[entry.len()..].starts_with(['\n', '\r']))
            .unwrap_or("");
        let entry_ptx = ptx_entry(&ptx, &entry);
        out.push(KernelFacts {
            ptx_excerpt: crate::kernel_panel::excerpt(
                entry_ptx,
                EXCERPT_LINES,
                crate::kernel_panel::is_ptx_tensor_core_line,
            ),
            sass_excerpt: crate::kernel_panel::excerpt(
                fsass,
                EXCERPT_LINES,
                crate::kernel_panel::is_sass_tensor_core_line,
            ),
            family: family.name.into(),
            entry: entry.clone(),
            arch: sm.clone(),
            threads,
            occupancy: occ,
            ptx_lines: ptx.lines().count(),
            ptx_tensor_core_instructions: ptx_tensor_core_count(entry_ptx),
            sass_tensor_core_instructions: Some(sass_tensor_core_count(fsass)),
            sass_instructions: Some(
                fsass
                    .lines()
                    .filter(|l| l.trim_start().starts_with("/*") && l.contains("*/ "))
                    .count(),
            ),
            resources: r,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cuobjdump_resource_usage() {
        let text = "Fatbin elf code:\n================\narch = sm_90\n\nResource usage:\n Common:\n  GLOBAL:0\n Function relu_f32:\n  REG:16 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:912 TEXTURE:0 SURFACE:0 SAMPLER:0\n Function conv_x:\n  REG:40 STACK:8 SHARED:4096 LOCAL:24 CONSTANT[0]:900\n";
        let r = parse_resource_usage(text);
        assert_eq!(r["relu_f32"].registers, 16);
        assert_eq!(
            (
                r["conv_x"].registers,
                r["conv_x"].static_shared_bytes,
                r["conv_x"].local_bytes,
                r["conv_x"].stack_bytes
            ),
            (40, 4096, 24, 8)
        );
    }

    /// Issue 26: without NVRTC the facts answered HTTP 500 blaming cuobjdump. They are refused
    /// as bad input (a 4xx) naming NVRTC, before cuobjdump is looked for.
    #[test]
    fn facts_without_nvrtc_are_refused_naming_nvrtc() {
        let e = require_nvrtc(false).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput, "{e}");
        let text = e.to_string();
        assert!(
            text.contains("NVRTC") && !text.contains("cuobjdump"),
            "{text}"
        );
        assert!(require_nvrtc(true).is_ok());
        if nvrtc_present() {
            return;
        }
        // What the service's `kernel_facts` calls first (its own test is in the service).
        let arch = "sm_90";
        let e = family_facts(&kernels::FAMILIES[0], arch, 256).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput, "{e}");
        assert!(e.to_string().contains("NVRTC"), "{e}");
    }

    /// Whether NVRTC and cuobjdump are here; where they are not, prints why the test is skipped
    /// (and fails when CI requires them through SHOWDOWN_REQUIRE_CUOBJDUMP).
    fn tools_or_skip() -> bool {
        // SAFETY: only checks whether the shared library can be opened.
        let nvrtc = unsafe { sys::is_culib_present() };
        if !nvrtc || cuobjdump().is_none() {
            assert!(
                std::env::var_os("SHOWDOWN_REQUIRE_CUOBJDUMP").is_none(),
                "SHOWDOWN_REQUIRE_CUOBJDUMP is set but NVRTC or cuobjdump is missing"
            );
            eprintln!("skipped: needs libnvrtc and cuobjdump (nvrtc present: {nvrtc})");
            return false;
        }
        true
    }

    /// Every family's facts at 256 threads for sm_80 and sm_90, in [`kernels::FAMILIES`]' order,
    /// worked out once for the tests that read them: each is an NVRTC compile and two cuobjdump
    /// runs, most of this crate's test time, so the (family, arch) pairs are shared out over the
    /// machine's cores, and the second test waits for the first's answer instead of repeating it.
    fn every_familys_facts() -> &'static [(
        &'static kernels::KernelFamily,
        &'static str,
        Vec<KernelFacts>,
    )] {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Mutex, OnceLock};
        type Facts = (
            &'static kernels::KernelFamily,
            &'static str,
            Vec<KernelFacts>,
        );
        static ALL: OnceLock<Vec<Facts>> = OnceLock::new();
        ALL.get_or_init(|| {
            let jobs: Vec<(&'static kernels::KernelFamily, &'static str)> = kernels::FAMILIES
                .iter()
                .flat_map(|fam| ["sm_80", "sm_90"].map(|arch| (fam, arch)))
                .collect();
            let next = AtomicUsize::new(0);
            let done = Mutex::new(Vec::new());
            let workers = std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(jobs.len());
            std::thread::scope(|s| {
                for _ in 0..workers {
                    s.spawn(|| loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(fam, arch)) = jobs.get(i) else {
                            break;
                        };
                        let facts = family_facts(fam, arch, 256)
                            .unwrap_or_else(|e| panic!("{} on {arch}: {e}", fam.name));
                        done.lock().unwrap().push((i, (fam, arch, facts)));
                    });
                }
            });
            let mut done = done.into_inner().unwrap();
            done.sort_by_key(|(i, _)| *i);
            assert_eq!(done.len(), jobs.len(), "a (family, arch) pair has no facts");
            done.into_iter().map(|(_, f)| f).collect()
        })
    }

    /// Every family compiles to sm_80 and sm_90 cubins whose resource usage cuobjdump reads;
    /// none spills. CI installs pip nvidia-cuda-cuobjdump and sets SHOWDOWN_REQUIRE_CUOBJDUMP.
    #[test]
    fn every_kernel_has_facts_for_sm80_and_sm90() {
        if !tools_or_skip() {
            return;
        }
        for (fam, arch, facts) in every_familys_facts() {
            assert_eq!(facts.len(), fam.entry_points().len());
            for f in facts {
                assert!(f.resources.registers > 0, "{f:?}");
                assert_eq!(f.resources.local_bytes, 0, "{} spills on {arch}", f.entry);
                assert!(
                    f.sass_instructions.unwrap_or(0) > 0,
                    "{}: no SASS found",
                    f.entry
                );
                assert!(
                    f.occupancy.active_blocks_per_sm > 0,
                    "{}: cannot launch 256 threads",
                    f.entry
                );
            }
        }
    }

    /// The tensor-core kernels really issue tensor-core instructions (`mma` in the PTX, `HMMA`
    /// in the SASS for sm_80 and sm_90), and no other kernel does: strict FP32 training never
    /// touches a tensor core. A change that silently drops (or adds) tensor-core math fails here.
    #[test]
    fn tensor_cores_exactly_where_the_registry_says() {
        if !tools_or_skip() {
            return;
        }
        let mut tensor_core_kernels = 0;
        for (fam, arch, facts) in every_familys_facts() {
            for f in facts {
                let sass = f.sass_tensor_core_instructions.unwrap_or(0);
                let expects = fam.is_tensor_core(&f.entry);
                if expects {
                    tensor_core_kernels += 1;
                    assert!(
                        sass > 0 && f.ptx_tensor_core_instructions > 0,
                        "{} on {arch}: {sass} HMMA in SASS, {} mma in PTX",
                        f.entry,
                        f.ptx_tensor_core_instructions
                    );
                } else {
                    assert_eq!(sass, 0, "{} on {arch} uses tensor cores", f.entry);
                }
            }
        }
        // (conv_mma_{fwd,bwd_data,bwd_filter,bwd_filter_clustered} x {f16, bf16, tf32} +
        // conv_tc_f16 + the four conv_tc_opt_*) x {sm_80, sm_90}
        assert_eq!(tensor_core_kernels, 34);
    }
}
