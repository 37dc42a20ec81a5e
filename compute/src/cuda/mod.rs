//! The CUDA backend: our own kernels (`kernels/cuda/train.cu`), compiled at run time by NVRTC
//! for the device's architecture, launched through `cudarc` with dynamic loading (building needs
//! no CUDA installation; a missing driver, device or NVRTC is an ordinary error).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaGraph, CudaSlice, CudaStream, LaunchArgs, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use half::{bf16, f16};
use sha2::{Digest, Sha256};

use crate::backend::cpu::{MemoryMeter, Ticket};
use crate::backend::{
    AdamParams, Backend, DType, LossSums, ScalerState, CURSOR_WORDS, SCALER_GROWTH_INTERVAL,
};
use crate::error::{ComputeError, Result};
use crate::model::{Activation, ConvShape};
use crate::types::Precision;

fn err(reason: impl std::fmt::Display) -> ComputeError {
    ComputeError::Backend {
        backend: "cuda".into(),
        reason: reason.to_string(),
    }
}

/// NVRTC options every kernel is compiled with (besides the architecture).
pub const NVRTC_OPTIONS: [&str; 2] = ["-lineinfo", "--std=c++17"];

/// Compiles `source` to PTX for `arch` (e.g. `compute_90`) with NVRTC; a compile error carries
/// NVRTC's log. Never panics, also when libnvrtc is absent.
pub fn compile_ptx(name: &str, source: &str, arch: &str) -> Result<String> {
    // SAFETY: only checks whether the shared library can be opened.
    if !std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
        .unwrap_or(false)
    {
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

fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("SHOWDOWN_KERNEL_CACHE")
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("precision-showdown/ptx")))
}

/// PTX for `family` on `arch`, from the disk cache (key: arch + options + source hash) or NVRTC.
pub fn ptx_cached(name: &str, source: &str, arch: &str) -> Result<String> {
    let mut h = Sha256::new();
    h.update(arch.as_bytes());
    h.update(NVRTC_OPTIONS.join(" ").as_bytes());
    h.update(source.as_bytes());
    let key: String = h
        .finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect();
    let path = cache_dir().map(|d| d.join(format!("{name}-{arch}-{key}.ptx")));
    if let Some(p) = &path {
        if let Ok(s) = std::fs::read_to_string(p) {
            return Ok(s);
        }
    }
    let ptx = compile_ptx(name, source, arch)?;
    if let Some(p) = &path {
        // The cache is an optimisation: failing to write it is not an error.
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = p.with_extension("tmp");
        if std::fs::write(&tmp, &ptx).is_ok() {
            let _ = std::fs::rename(&tmp, p);
        }
    }
    Ok(ptx)
}

/// A GPU opened for our kernels: its context (one stream, no per-buffer event tracking), the
/// PTX architecture to compile for, its name and SM count.
pub(crate) struct OpenDevice {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) arch: String,
    pub(crate) device: String,
    pub(crate) sms: u32,
}

/// Opens GPU `ordinal` without panicking, whatever is (not) installed.
pub(crate) fn open_device(ordinal: usize) -> Result<OpenDevice> {
    let probe = crate::doctor::probe_gpu();
    probe.usable().map_err(err)?;
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

/// Compiles (or takes from the cache) and loads `families`, returning every entry point.
pub(crate) fn load_families(
    ctx: &Arc<CudaContext>,
    families: &[kernels::KernelFamily],
    arch: &str,
) -> Result<HashMap<String, CudaFunction>> {
    let mut funcs = HashMap::new();
    for fam in families {
        let ptx = ptx_cached(fam.name, fam.source, arch)?;
        let module = ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| err(format!("loading {}.cu for {arch}: {e}", fam.name)))?;
        for ep in fam.entry_points() {
            let f = module
                .load_function(&ep)
                .map_err(|e| err(format!("kernel {ep}: {e}")))?;
            funcs.insert(ep, f);
        }
    }
    Ok(funcs)
}

/// Device storage of a buffer.
pub enum Storage {
    /// f32 values.
    F32(CudaSlice<f32>),
    /// IEEE half bits.
    F16(CudaSlice<u16>),
    /// bfloat16 bits.
    Bf16(CudaSlice<u16>),
    /// Bytes.
    U8(CudaSlice<u8>),
    /// Indices.
    U32(CudaSlice<u32>),
    /// Scaler state: 6 words (scale bits, growth tracker, found_inf, skipped, step, enabled).
    Scaler(CudaSlice<u32>),
    /// Sums: loss, correct, count, last batch mean loss.
    Sums(CudaSlice<f64>),
}

/// A device buffer with its memory accounting.
pub struct CudaBuf {
    storage: Storage,
    len: usize,
    _ticket: Ticket,
}

impl CudaBuf {
    fn suffix(&self) -> Result<&'static str> {
        match self.storage {
            Storage::F32(_) => Ok("f32"),
            Storage::F16(_) => Ok("f16"),
            Storage::Bf16(_) => Ok("bf16"),
            _ => Err(err("expected a float buffer")),
        }
    }
    fn need(&self, len: usize, what: &str) -> Result<()> {
        if self.len < len {
            return Err(err(format!(
                "{what}: buffer holds {} elements, {len} needed",
                self.len
            )));
        }
        Ok(())
    }
}

/// Pushes a buffer's device pointer as a kernel argument.
fn push<'a>(b: &mut LaunchArgs<'a>, buf: &'a CudaBuf) {
    match &buf.storage {
        Storage::F32(s) => b.arg(s),
        Storage::F16(s) | Storage::Bf16(s) => b.arg(s),
        Storage::U8(s) => b.arg(s),
        Storage::U32(s) | Storage::Scaler(s) => b.arg(s),
        Storage::Sums(s) => b.arg(s),
    };
}

/// A data split resident on the device.
pub struct CudaData {
    images: CudaSlice<u8>,
    labels: CudaSlice<u8>,
    pixels: usize,
    n: usize,
    _ticket: Ticket,
}

/// The CUDA backend.
pub struct CudaBackend {
    _ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: HashMap<String, CudaFunction>,
    meter: Arc<MemoryMeter>,
    device: String,
    sms: u32,
    /// Dynamic shared memory a block may use once opted in (bytes).
    smem_optin: usize,
    ordinal: usize,
    /// Compute capability major version (8 = Ampere).
    cc_major: u32,
    /// FP16/BF16 convolutions on tensor cores where the shape fits (`conv_mma.cu`); off with
    /// `SHOWDOWN_CONV=cuda-cores` (the CUDA-core kernels, for comparison).
    conv_mma: bool,
    /// FP32 convolutions run as TF32 on tensor cores (set by [`Backend::set_precision`]).
    tf32: std::sync::atomic::AtomicBool,
    /// Whether training steps are captured as CUDA graphs and replayed; off with
    /// `SHOWDOWN_CUDA_GRAPHS=off` (every launch from the host, for comparison).
    graphs: bool,
    /// FP32 partial weight gradients of `conv_mma_bwd_filter`, grown on demand and kept (a
    /// captured step graph refers to it).
    wgrad_part: Mutex<Option<(CudaSlice<f32>, Ticket)>>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .finish()
    }
}

const THREADS: u32 = 256;

/// Output channels each thread of `conv_block_fwd` accumulates (`COG` in train.cu).
const CONV_FWD_COG: usize = 8;

/// The launch shape of `conv_block_fwd`: output channels per block, threads, shared memory.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ConvFwdPlan {
    /// Output channels per block (a multiple of [`CONV_FWD_COG`]).
    cpb: usize,
    /// Threads wanted per block (one per pooled position and channel group, at most 1024).
    threads: u32,
    /// Dynamic shared memory per block: the image's input planes and the group's weights (FP32).
    smem_bytes: usize,
}

impl ConvFwdPlan {
    /// Halves the channels per block from all of them until there are two blocks per SM, keeping
    /// at least one warp of work per block and the staging within the shared-memory limit.
    fn choose(n: usize, s: ConvShape, sms: usize, smem_limit: usize) -> Result<Self> {
        let plane = (s.h_out() / 2) * (s.w_out() / 2);
        let smem =
            |cpb: usize| 4 * ((s.c_in * s.h * s.w).div_ceil(4) * 4 + s.c_in * s.k * s.k * cpb);
        let mut cpb = s.c_out.div_ceil(CONV_FWD_COG) * CONV_FWD_COG;
        loop {
            let half = (cpb / 2).div_ceil(CONV_FWD_COG) * CONV_FWD_COG;
            let too_big = plane * cpb / CONV_FWD_COG > 1024 || smem(cpb) > smem_limit;
            let too_few_blocks =
                n * s.c_out.div_ceil(cpb) < 2 * sms && plane * half / CONV_FWD_COG >= 32;
            if half < cpb && (too_big || too_few_blocks) {
                cpb = half;
            } else {
                break;
            }
        }
        if smem(cpb) > smem_limit {
            return Err(err(format!(
                "conv_block_fwd: one image's input planes and {cpb} channels' weights need {} bytes of shared memory, more than the {smem_limit} this GPU allows",
                smem(cpb)
            )));
        }
        let threads = ((plane * cpb / CONV_FWD_COG).div_ceil(32) * 32).clamp(32, 1024) as u32;
        Ok(ConvFwdPlan {
            cpb,
            threads,
            smem_bytes: smem(cpb),
        })
    }
}

impl CudaBackend {
    /// Opens GPU `ordinal`, compiles the training kernels for its architecture and loads them.
    pub fn new(ordinal: usize) -> Result<Self> {
        let OpenDevice {
            ctx,
            arch,
            device,
            sms,
        } = open_device(ordinal)?;
        let funcs = load_families(&ctx, &[kernels::TRAIN], &arch)?;
        use cudarc::driver::sys::{CUdevice_attribute as DA, CUfunction_attribute_enum as FA};
        let smem_optin = ctx
            .attribute(DA::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(err)?
            .max(0) as usize;
        for (name, f) in &funcs {
            let big_smem = [
                "conv_block_bwd_data_",
                "conv_block_fwd_",
                "conv_mma_fwd_",
                "conv_mma_bwd_",
            ];
            if big_smem.iter().any(|p| name.starts_with(p)) {
                // SAFETY: `f` belongs to the module just loaded in this context; the value is the
                // device's own opt-in limit.
                unsafe {
                    cudarc::driver::result::function::set_function_attribute(
                        f.cu_function(),
                        FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        smem_optin as i32,
                    )
                }
                .map_err(|e| err(format!("{name}: cannot raise its shared-memory limit: {e}")))?;
            }
        }
        // A stream of our own: the legacy default stream cannot be captured into a graph.
        let stream = ctx.new_stream().map_err(err)?;
        Ok(CudaBackend {
            stream,
            _ctx: ctx,
            funcs,
            meter: Arc::new(MemoryMeter::default()),
            device,
            sms,
            smem_optin,
            ordinal,
            conv_mma: std::env::var("SHOWDOWN_CONV").map_or(true, |v| v != "cuda-cores"),
            graphs: std::env::var("SHOWDOWN_CUDA_GRAPHS").map_or(true, |v| v != "off"),
            wgrad_part: Mutex::new(None),
            tf32: std::sync::atomic::AtomicBool::new(false),
            cc_major: major_of(&arch),
        })
    }

    /// The kernel dtype suffix for buffers of suffix `sfx`: FP32 buffers run the TF32 kernels
    /// while the backend trains in TF32 ([`Backend::set_precision`]).
    fn math(&self, sfx: &'static str) -> &'static str {
        if sfx == "f32" && self.tf32.load(std::sync::atomic::Ordering::Relaxed) {
            "tf32"
        } else {
            sfx
        }
    }

    /// Whether the convolution of shape `s` with kernel dtype `d` (`f16`, `bf16`, `tf32`) runs
    /// on tensor cores: `(forward, input gradient, weight gradient)`, each with its dynamic
    /// shared memory. Strict `f32` never does.
    fn mma_plan(&self, s: ConvShape, d: &str) -> (Option<usize>, Option<usize>, Option<usize>) {
        let Some(t) = conv_mma::MmaType::of(d).filter(|_| self.conv_mma && self.cc_major >= 8)
        else {
            return (None, None, None);
        };
        let fits = |b: Option<usize>| b.filter(|&b| b <= self.smem_optin);
        (
            fits(conv_mma::fwd_smem(s, t)),
            fits(conv_mma::bwd_data_smem(s, t)),
            fits(conv_mma::bwd_filter_smem(s, t)),
        )
    }

    /// Which kernels train a convolution of shape `s` in `precision` (for reports and tests).
    pub fn conv_kernels(&self, s: ConvShape, precision: Precision) -> [&'static str; 3] {
        let d = match precision {
            Precision::Fp16 => "f16",
            Precision::Bf16 => "bf16",
            Precision::Tf32 => "tf32",
            Precision::Fp32 => "f32",
        };
        let (f, x, w) = self.mma_plan(s, d);
        [
            if f.is_some() {
                "conv_mma_fwd"
            } else {
                "conv_block_fwd"
            },
            if x.is_some() {
                "conv_mma_bwd_data"
            } else {
                "conv_block_bwd_data"
            },
            if w.is_some() {
                "conv_mma_bwd_filter"
            } else {
                "conv_block_bwd_filter"
            },
        ]
    }

    /// Launches `conv_mma_bwd_filter` and its reduction into `dw`, `db`.
    #[allow(clippy::too_many_arguments)]
    fn conv_mma_wgrad(
        &self,
        x: &CudaBuf,
        dout: &CudaBuf,
        mask: &CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        n: usize,
        s: ConvShape,
        smem: usize,
    ) -> Result<()> {
        let sfx = self.math(x.suffix()?);
        let groups = conv_mma::wgrad_groups(n, self.sms as usize);
        let need = conv_mma::wgrad_part_len(s, groups);
        let mut part = self
            .wgrad_part
            .lock()
            .map_err(|_| err("the weight-gradient scratch lock is poisoned"))?;
        if part.as_ref().is_none_or(|(p, _)| p.len() < need) {
            *part = None;
            let buf = self.stream.alloc_zeros::<f32>(need).map_err(err)?;
            *part = Some((buf, Ticket::new(&self.meter, (need * 4) as u64)));
        }
        let Some((part, _)) = part.as_mut() else {
            return Err(err("weight-gradient scratch missing"));
        };
        let a = [
            as_i32(n, "n")?,
            s.c_in as i32,
            s.c_out as i32,
            s.h as i32,
            s.w as i32,
        ];
        let f = self.f(&format!("conv_mma_bwd_filter_{sfx}"))?;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, x);
        push(&mut b, dout);
        push(&mut b, mask);
        b.arg(&mut *part);
        for v in &a {
            b.arg(v);
        }
        let cfg = LaunchConfig {
            grid_dim: (groups as u32, 1, 1),
            block_dim: (conv_mma::MMA_THREADS, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        if self.block_size(f, conv_mma::MMA_THREADS)? != conv_mma::MMA_THREADS {
            return Err(err(format!(
                "conv_mma_bwd_filter_{sfx} cannot run {} threads per block",
                conv_mma::MMA_THREADS
            )));
        }
        // SAFETY: conv_mma_bwd_filter_{dtype}(const u16* x, const u16* dout, const u8* mask, float* part,
        // int n, int cin, int cout, int h, int w); sizes checked by the caller, `part` holds
        // groups * (cout*cin*9 + cout) floats (wgrad_part_len), the shared memory is
        // conv_mma::bwd_filter_smem(s) within the opted-in limit.
        unsafe { b.launch(cfg) }.map_err(err)?;
        let (g, len, co) = (groups as i32, s.weight_len() as i32, s.c_out as i32);
        let f = self.f(&format!("conv_mma_wgrad_reduce_{sfx}"))?;
        let mut b = self.stream.launch_builder(f);
        b.arg(&*part).arg(&g).arg(&len).arg(&co);
        push(&mut b, dw);
        push(&mut b, db);
        // SAFETY: conv_mma_wgrad_reduce_{dtype}(const float* part, int groups, int len, int cout, u16* dw, u16* db);
        // dw holds len and db cout elements (checked by the caller); four threads per output,
        // the grid-stride loop runs whole warps (the shuffles need every lane).
        unsafe { b.launch(self.cfg((s.weight_len() + s.c_out) * 4)) }.map_err(err)?;
        Ok(())
    }

    fn f(&self, name: &str) -> Result<&CudaFunction> {
        self.funcs
            .get(name)
            .ok_or_else(|| err(format!("kernel {name} is not loaded")))
    }

    /// `wanted` threads per block, lowered to what the compiled kernel can launch
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`, which its register use limits), in whole warps.
    fn block_size(&self, f: &CudaFunction, wanted: u32) -> Result<u32> {
        use cudarc::driver::sys::CUfunction_attribute_enum as A;
        // SAFETY: `f` is a function of a module loaded in this backend's live context.
        let max = unsafe {
            cudarc::driver::result::function::get_function_attribute(
                f.cu_function(),
                A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )
        }
        .map_err(err)?;
        Ok(wanted.min(max.max(32) as u32) / 32 * 32)
    }

    /// Grid-stride launch shape for `work` items: enough blocks to fill every SM.
    fn cfg(&self, work: usize) -> LaunchConfig {
        let blocks = work
            .div_ceil(THREADS as usize)
            .clamp(1, self.sms as usize * 16) as u32;
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The device address of a float buffer (for tables passed by value).
    fn ptr_of(&self, b: &CudaBuf) -> Result<u64> {
        use cudarc::driver::DevicePtr;
        Ok(match &b.storage {
            Storage::F32(s) => s.device_ptr(&self.stream).0,
            Storage::F16(s) | Storage::Bf16(s) => s.device_ptr(&self.stream).0,
            _ => return Err(err("expected a float buffer")),
        })
    }

    fn wrap(&self, storage: Storage, len: usize, elem: usize) -> CudaBuf {
        CudaBuf {
            storage,
            len,
            _ticket: Ticket::new(&self.meter, (len * elem) as u64),
        }
    }
}

/// Most outputs `dense_bwd_w` is compiled for (`DENSE_BWD_MAX_OUT` in train.cu).
const DENSE_BWD_MAX_OUT: usize = 16;

/// The major compute capability of an architecture name (`compute_90` → 9).
fn major_of(arch: &str) -> u32 {
    let digits: String = arch.chars().filter(|c| c.is_ascii_digit()).collect();
    digits
        .get(..digits.len().saturating_sub(1))
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// Tensors per fused launch (`MULTI_TENSORS` in train.cu).
const MULTI_TENSORS: usize = 8;

/// Kernel argument of `check_finite_multi` and `adam_multi`: `TensorTable` in train.cu, field
/// for field (device pointers, running element counts, tensor count).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TensorTable {
    p: [u64; MULTI_TENSORS],
    g: [u64; MULTI_TENSORS],
    m: [u64; MULTI_TENSORS],
    v: [u64; MULTI_TENSORS],
    copy: [u64; MULTI_TENSORS],
    end: [i64; MULTI_TENSORS],
    count: i32,
    pad: i32,
}

// SAFETY: plain data with the C layout of TensorTable (8-byte fields, then two ints).
unsafe impl cudarc::driver::DeviceRepr for TensorTable {}

impl TensorTable {
    /// Fills `end` with the running sums of `lens` and `count`; returns the total.
    fn set_ends(&mut self, lens: impl Iterator<Item = usize>) -> Result<usize> {
        let mut total = 0usize;
        let mut count = 0;
        for (i, l) in lens.enumerate().take(MULTI_TENSORS) {
            total += l;
            self.end[i] = total as i64;
            count = i + 1;
        }
        if count == 0 || total == 0 {
            return Err(err("a fused launch needs at least one non-empty tensor"));
        }
        self.count = count as i32;
        Ok(total)
    }
}

/// Checks that `b` is a step cursor (U32, [`CURSOR_WORDS`] words).
fn cursor_of(b: &CudaBuf) -> Result<()> {
    match &b.storage {
        Storage::U32(_) if b.len >= CURSOR_WORDS => Ok(()),
        _ => Err(err("a step cursor is a U32 buffer of 3 words")),
    }
}

fn as_i32(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        err(format!(
            "{what} = {v} does not fit a 32-bit kernel argument"
        ))
    })
}

/// The GPU training kernels fuse ReLU into the conv block (its mask carries the derivative);
/// the GELU and Swish variants train on the CPU backend and run inference on the GPU
/// (`showdown bench infer`).
fn relu_only(act: Activation) -> Result<()> {
    if act == Activation::Relu {
        Ok(())
    } else {
        Err(ComputeError::bad_arg(
            "--activation",
            act,
            "the CUDA backend trains the ReLU network only; train GELU or Swish with --backend cpu (their inference runs on the GPU: showdown bench infer)",
        ))
    }
}

impl Backend for CudaBackend {
    type Buf = CudaBuf;
    type Data = CudaData;
    type Graph = CudaGraph;
    type Mark = cudarc::driver::CudaEvent;

    fn name(&self) -> &'static str {
        "cuda"
    }
    fn device(&self) -> String {
        self.device.clone()
    }
    fn threads(&self) -> usize {
        1
    }
    fn supports(&self, precision: Precision) -> bool {
        match precision {
            Precision::Fp32 | Precision::Fp16 => true,
            // BF16 and TF32 tensor-core math needs sm_80 or newer.
            Precision::Bf16 | Precision::Tf32 => self.cc_major >= 8,
        }
    }
    fn set_precision(&self, precision: Precision) {
        self.tf32.store(
            precision == Precision::Tf32,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    fn host_reads_are_cheap(&self) -> bool {
        false
    }
    fn start_telemetry(&self) -> Option<crate::backend::TelemetryRecorder> {
        Some(telemetry::start(self.ordinal))
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<CudaBuf> {
        let s = &self.stream;
        let n = len.max(1);
        let storage = match dtype {
            DType::F32 => Storage::F32(s.alloc_zeros::<f32>(n).map_err(err)?),
            DType::F16 => Storage::F16(s.alloc_zeros::<u16>(n).map_err(err)?),
            DType::Bf16 => Storage::Bf16(s.alloc_zeros::<u16>(n).map_err(err)?),
            DType::U8 => Storage::U8(s.alloc_zeros::<u8>(n).map_err(err)?),
            DType::U32 => Storage::U32(s.alloc_zeros::<u32>(n).map_err(err)?),
        };
        Ok(self.wrap(storage, len, dtype.size()))
    }

    fn upload(&self, buf: &mut CudaBuf, data: &[f32]) -> Result<()> {
        buf.need(data.len(), "upload")?;
        let s = &self.stream;
        match &mut buf.storage {
            Storage::F32(d) => s.memcpy_htod(data, &mut d.slice_mut(..data.len())),
            Storage::F16(d) => s.memcpy_htod(
                &data
                    .iter()
                    .map(|&v| f16::from_f32(v).to_bits())
                    .collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            Storage::Bf16(d) => s.memcpy_htod(
                &data
                    .iter()
                    .map(|&v| bf16::from_f32(v).to_bits())
                    .collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            Storage::U32(d) => s.memcpy_htod(
                &data.iter().map(|&v| v as u32).collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            Storage::U8(d) => s.memcpy_htod(
                &data.iter().map(|&v| v as u8).collect::<Vec<_>>(),
                &mut d.slice_mut(..data.len()),
            ),
            _ => return Err(err("upload: not a tensor buffer")),
        }
        .map_err(err)
    }

    fn download(&self, buf: &CudaBuf) -> Result<Vec<f32>> {
        let s = &self.stream;
        let len = buf.len;
        Ok(match &buf.storage {
            Storage::F32(d) => s.clone_dtoh(&d.slice(..len)).map_err(err)?,
            Storage::F16(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| f16::from_bits(b).to_f32())
                .collect(),
            Storage::Bf16(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| bf16::from_bits(b).to_f32())
                .collect(),
            Storage::U8(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| b as f32)
                .collect(),
            Storage::U32(d) => s
                .clone_dtoh(&d.slice(..len))
                .map_err(err)?
                .into_iter()
                .map(|b| b as f32)
                .collect(),
            _ => return Err(err("download: not a tensor buffer")),
        })
    }

    fn upload_data(&self, images: &[u8], labels: &[u8], pixels: usize) -> Result<CudaData> {
        if images.len() != labels.len() * pixels {
            return Err(err("upload_data: images and labels disagree"));
        }
        Ok(CudaData {
            images: self.stream.clone_htod(images).map_err(err)?,
            labels: self.stream.clone_htod(labels).map_err(err)?,
            pixels,
            n: labels.len(),
            _ticket: Ticket::new(&self.meter, (images.len() + labels.len()) as u64),
        })
    }

    fn peak_bytes(&self) -> u64 {
        self.meter.peak()
    }
    fn reset_peak(&self) {
        self.meter.reset()
    }
    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(err)
    }

    fn gather(
        &self,
        data: &CudaData,
        order: &CudaBuf,
        cursor: &CudaBuf,
        stride: usize,
        n: usize,
        mean: f32,
        std: f32,
        x: &mut CudaBuf,
        labels: &mut CudaBuf,
    ) -> Result<()> {
        // The start (cursor step x stride) is only known on the device; the kernel checks it
        // against the order's length.
        order.need(n, "gather order")?;
        cursor_of(cursor)?;
        x.need(n * data.pixels, "gather x")?;
        labels.need(n, "gather labels")?;
        if data.n == 0 {
            return Err(err("gather: empty data set"));
        }
        let f = self.f(&format!("gather_{}", x.suffix()?))?;
        let (order_len, stride, nn, px) = (
            as_i32(order.len, "order length")?,
            as_i32(stride, "stride")?,
            as_i32(n, "n")?,
            as_i32(data.pixels, "pixels")?,
        );
        let (scale, shift) = (1.0f32 / (255.0 * std), mean / std);
        let mut b = self.stream.launch_builder(f);
        b.arg(&data.images).arg(&data.labels);
        push(&mut b, order);
        b.arg(&order_len);
        push(&mut b, cursor);
        b.arg(&stride).arg(&nn).arg(&px).arg(&scale).arg(&shift);
        push(&mut b, x);
        push(&mut b, labels);
        // SAFETY: gather_{dtype}(const u8*, const u8*, const u32* order, int order_len, const Cursor*,
        // int stride, int n, int px, float, float, T*, u8*); x and labels sized above; the kernel
        // reads order[] only below order_len, and every index in `order` is < data.n.
        unsafe { b.launch(self.cfg(n * data.pixels)) }.map_err(err)?;
        Ok(())
    }

    fn conv_block_fwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        bias: &CudaBuf,
        out: &mut CudaBuf,
        mask: &mut CudaBuf,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        relu_only(act)?;
        let pooled = s.c_out * (s.h_out() / 2) * (s.w_out() / 2);
        x.need(n * s.in_len(), "conv x")?;
        w.need(s.weight_len(), "conv w")?;
        bias.need(s.c_out, "conv b")?;
        out.need(n * pooled, "conv out")?;
        mask.need(n * pooled, "conv mask")?;
        if ![3, 5, 7].contains(&s.k) {
            return Err(err(format!(
                "conv_block_fwd: kernel size {} is not compiled in (3, 5, 7)",
                s.k
            )));
        }
        let sfx = x.suffix()?;
        let math = self.math(sfx);
        if let (Some(smem), _, _) = self.mma_plan(s, math) {
            let f = self.f(&format!("conv_mma_fwd_{math}"))?;
            if self.block_size(f, conv_mma::MMA_THREADS)? != conv_mma::MMA_THREADS {
                return Err(err(format!(
                    "conv_mma_fwd_{math} cannot run {} threads per block",
                    conv_mma::MMA_THREADS
                )));
            }
            let a = [
                as_i32(n, "n")?,
                s.c_in as i32,
                s.c_out as i32,
                s.h as i32,
                s.w as i32,
            ];
            let mut b = self.stream.launch_builder(f);
            push(&mut b, x);
            push(&mut b, w);
            push(&mut b, bias);
            push(&mut b, out);
            push(&mut b, mask);
            for v in &a {
                b.arg(v);
            }
            let cfg = LaunchConfig {
                grid_dim: (as_i32(n, "n")? as u32, 1, 1),
                block_dim: (conv_mma::MMA_THREADS, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            // SAFETY: conv_mma_fwd_{dtype}(const u16* x, const u16* w, const float* b, u16* out, u8* mask,
            // int n, int cin, int cout, int h, int w); buffer sizes checked above, k = 3 and the
            // channel/tile limits checked by conv_mma::fwd_smem, whose size the kernel indexes.
            unsafe { b.launch(cfg) }.map_err(err)?;
            return Ok(());
        }
        let f = self.f(&format!("conv_block_fwd_{sfx}"))?;
        let plan = ConvFwdPlan::choose(n, s, self.sms as usize, self.smem_optin)?;
        let threads = self.block_size(f, plan.threads)?;
        let a = [
            as_i32(n, "n")?,
            s.c_in as i32,
            s.c_out as i32,
            s.h as i32,
            s.w as i32,
            s.k as i32,
            plan.cpb as i32,
        ];
        let mut b = self.stream.launch_builder(f);
        push(&mut b, x);
        push(&mut b, w);
        push(&mut b, bias);
        push(&mut b, out);
        push(&mut b, mask);
        for v in &a {
            b.arg(v);
        }
        let cfg = LaunchConfig {
            grid_dim: (as_i32(n, "n")? as u32, s.c_out.div_ceil(plan.cpb) as u32, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: plan.smem_bytes as u32,
        };
        // SAFETY: conv_block_fwd_{dtype}(const T* x, const T* w, const float* b, T* out, u8* mask,
        // int n, int cin, int cout, int h, int w, int k, int cpb); buffer sizes checked above; the
        // dynamic shared memory is what conv_block_fwd in train.cu indexes (ConvFwdPlan), within
        // the opted-in limit; grid.x = n images, grid.y = output-channel groups of cpb.
        unsafe { b.launch(cfg) }.map_err(err)?;
        Ok(())
    }

    fn conv_block_bwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        _bias: &CudaBuf,
        mask: &CudaBuf,
        dout: &CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        dx: Option<&mut CudaBuf>,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        relu_only(act)?;
        let (ph, pw) = (s.h_out() / 2, s.w_out() / 2);
        let pooled = s.c_out * ph * pw;
        x.need(n * s.in_len(), "conv_bwd x")?;
        mask.need(n * pooled, "conv_bwd mask")?;
        dout.need(n * pooled, "conv_bwd dout")?;
        dw.need(s.weight_len(), "conv_bwd dw")?;
        db.need(s.c_out, "conv_bwd db")?;
        let sfx = x.suffix()?;
        let a = [
            as_i32(n, "n")?,
            s.c_in as i32,
            s.c_out as i32,
            s.h as i32,
            s.w as i32,
            s.k as i32,
        ];
        if !matches!(s.k, 3 | 5 | 7) {
            return Err(err(format!(
                "conv_block_bwd: kernel size {} is not compiled in (3, 5, 7)",
                s.k
            )));
        }
        let math = self.math(sfx);
        let (_, mma_data, mma_filter) = self.mma_plan(s, math);
        if let Some(smem) = mma_filter {
            self.conv_mma_wgrad(x, dout, mask, dw, db, n, s, smem)?;
        } else {
            let f = self.f(&format!("conv_block_bwd_filter_{sfx}"))?;
            let mut b = self.stream.launch_builder(f);
            push(&mut b, x);
            push(&mut b, dout);
            push(&mut b, mask);
            push(&mut b, dw);
            push(&mut b, db);
            for v in &a {
                b.arg(v);
            }
            let threads = self.block_size(f, if s.c_in == 1 { 1024 } else { THREADS })?;
            let cfg = LaunchConfig {
                grid_dim: ((s.c_out * s.c_in) as u32, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: conv_block_bwd_filter_{dtype}(const T* x, const T* dout, const u8* mask, T* dw, T* db,
            // int n, int cin, int cout, int h, int w, int k); one block per (cout, cin) pair, k checked above.
            unsafe { b.launch(cfg) }.map_err(err)?;
        }
        if let Some(dx) = dx {
            dx.need(n * s.in_len(), "conv_bwd dx")?;
            if let Some(smem) = mma_data {
                let f = self.f(&format!("conv_mma_bwd_data_{math}"))?;
                if self.block_size(f, conv_mma::MMA_THREADS)? != conv_mma::MMA_THREADS {
                    return Err(err(format!(
                        "conv_mma_bwd_data_{math} cannot run {} threads per block",
                        conv_mma::MMA_THREADS
                    )));
                }
                let mut b = self.stream.launch_builder(f);
                push(&mut b, dout);
                push(&mut b, mask);
                push(&mut b, w);
                push(&mut b, dx);
                for v in &a[..5] {
                    b.arg(v);
                }
                let cfg = LaunchConfig {
                    grid_dim: (n as u32, 1, 1),
                    block_dim: (conv_mma::MMA_THREADS, 1, 1),
                    shared_mem_bytes: smem as u32,
                };
                // SAFETY: conv_mma_bwd_data_{dtype}(const u16* dout, const u8* mask, const u16* w, u16* dx,
                // int n, int cin, int cout, int h, int w); sizes checked above, the shape's limits
                // and shared memory by conv_mma::bwd_data_smem, within the opted-in limit.
                unsafe { b.launch(cfg) }.map_err(err)?;
                return Ok(());
            }
            // Mirrors conv_block_bwd_data in train.cu: padded dz (rounded to 4 floats) + weights of 8 channels.
            const CG: usize = 8;
            let (hp, wp) = (s.h_out() + 2 * (s.k - 1), s.w_out() + 2 * (s.k - 1));
            let smem = 4 * ((s.c_out * hp * wp).div_ceil(4) * 4 + s.c_out * s.k * s.k * CG);
            let groups = s.c_in.div_ceil(CG);
            if smem > self.smem_optin {
                return Err(err(format!(
                    "conv_block_bwd: one image's routed gradient and weights need {smem} bytes of shared memory, more than the {} this GPU allows",
                    self.smem_optin
                )));
            }
            let f = self.f(&format!("conv_block_bwd_data_{sfx}"))?;
            let mut b = self.stream.launch_builder(f);
            push(&mut b, dout);
            push(&mut b, mask);
            push(&mut b, w);
            push(&mut b, dx);
            for v in &a {
                b.arg(v);
            }
            let threads = self.block_size(
                f,
                ((s.h * s.w).div_ceil(32) * 32).min(THREADS as usize) as u32,
            )?;
            let cfg = LaunchConfig {
                grid_dim: (n as u32, groups as u32, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            // SAFETY: conv_block_bwd_data_{dtype}(const T* dout, const u8* mask, const T* w, T* dx,
            // int n, int cin, int cout, int h, int w, int k); one block per (image, input-channel group),
            // dynamic shared memory holds one image's routed gradient and the group's weights (checked
            // against the opt-in limit the function attribute was raised to at load time).
            unsafe { b.launch(cfg) }.map_err(err)?;
        }
        Ok(())
    }

    fn dropout_fwd(
        &self,
        x: &CudaBuf,
        out: &mut CudaBuf,
        mask: &mut CudaBuf,
        len: usize,
        p: f32,
        seed: u64,
        cursor: &CudaBuf,
    ) -> Result<()> {
        cursor_of(cursor)?;
        x.need(len, "dropout x")?;
        out.need(len, "dropout out")?;
        mask.need(len, "dropout mask")?;
        let f = self.f(&format!("dropout_fwd_{}", x.suffix()?))?;
        let l = len as i64;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, x);
        push(&mut b, out);
        push(&mut b, mask);
        b.arg(&l).arg(&p).arg(&seed);
        push(&mut b, cursor);
        // SAFETY: dropout_fwd_{dtype}(const T* x, T* out, u8* mask, long long len, float p, u64 seed, const Cursor*).
        unsafe { b.launch(self.cfg(len.div_ceil(4))) }.map_err(err)?;
        Ok(())
    }

    fn cursor_set(&self, cursor: &mut CudaBuf, step: u32, counter: u64) -> Result<()> {
        let words = [step, counter as u32, (counter >> 32) as u32];
        let Storage::U32(c) = &mut cursor.storage else {
            return Err(err("a step cursor is a U32 buffer"));
        };
        if c.len() < CURSOR_WORDS {
            return Err(err("a step cursor needs 3 words"));
        }
        self.stream
            .memcpy_htod(&words, &mut c.slice_mut(..CURSOR_WORDS))
            .map_err(err)
    }

    fn cursor_advance(&self, cursor: &mut CudaBuf) -> Result<()> {
        cursor_of(cursor)?;
        let f = self.f("cursor_advance")?;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, cursor);
        // SAFETY: cursor_advance(Cursor*): one thread updates the 3 words checked above.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(err)?;
        Ok(())
    }

    fn mark(&self) -> Result<Option<cudarc::driver::CudaEvent>> {
        let e = self
            ._ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        e.record(&self.stream).map_err(err)?;
        Ok(Some(e))
    }

    fn elapsed_ms(
        &self,
        start: &cudarc::driver::CudaEvent,
        end: &cudarc::driver::CudaEvent,
    ) -> Result<f64> {
        Ok(start.elapsed_ms(end).map_err(err)? as f64)
    }

    fn capture_begin(&self) -> Result<bool> {
        if !self.graphs {
            return Ok(false);
        }
        self.stream
            .begin_capture(
                cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
            .map_err(|e| err(format!("starting a graph capture: {e}")))?;
        Ok(true)
    }

    fn capture_end(&self) -> Result<CudaGraph> {
        self.stream
            .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
            .map_err(|e| err(format!("ending a graph capture: {e}")))?
            .ok_or_else(|| err("the graph capture recorded nothing"))
    }

    fn replay(&self, graph: &CudaGraph) -> Result<()> {
        graph.launch().map_err(err)
    }

    fn dropout_bwd(
        &self,
        dout: &CudaBuf,
        mask: &CudaBuf,
        dx: &mut CudaBuf,
        len: usize,
        p: f32,
    ) -> Result<()> {
        dout.need(len, "dropout dout")?;
        mask.need(len, "dropout mask")?;
        dx.need(len, "dropout dx")?;
        let f = self.f(&format!("dropout_bwd_{}", dout.suffix()?))?;
        let l = len as i64;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, dout);
        push(&mut b, mask);
        push(&mut b, dx);
        b.arg(&l).arg(&p);
        // SAFETY: dropout_bwd_{dtype}(const T* dout, const u8* mask, T* dx, long long len, float p).
        unsafe { b.launch(self.cfg(len)) }.map_err(err)?;
        Ok(())
    }

    fn dense_fwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        bias: &CudaBuf,
        y: &mut CudaBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        x.need(n * fin, "dense x")?;
        w.need(fin * fout, "dense w")?;
        bias.need(fout, "dense b")?;
        y.need(n * fout, "dense y")?;
        let f = self.f(&format!("dense_fwd_{}", x.suffix()?))?;
        let (nn, fi, fo) = (as_i32(n, "n")?, fin as i32, fout as i32);
        let mut b = self.stream.launch_builder(f);
        push(&mut b, x);
        push(&mut b, w);
        push(&mut b, bias);
        push(&mut b, y);
        b.arg(&nn).arg(&fi).arg(&fo);
        // SAFETY: dense_fwd_{dtype}(const T* x, const T* w, const float* b, T* y, int n, int fin, int fout);
        // one warp per output.
        unsafe { b.launch(self.cfg(n * fout * 32)) }.map_err(err)?;
        Ok(())
    }

    fn dense_bwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        dy: &CudaBuf,
        dx: &mut CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        x.need(n * fin, "dense_bwd x")?;
        w.need(fin * fout, "dense_bwd w")?;
        dy.need(n * fout, "dense_bwd dy")?;
        dx.need(n * fin, "dense_bwd dx")?;
        dw.need(fin * fout, "dense_bwd dw")?;
        db.need(fout, "dense_bwd db")?;
        let sfx = x.suffix()?;
        let (nn, fi, fo) = (as_i32(n, "n")?, fin as i32, fout as i32);
        {
            let f = self.f(&format!("dense_bwd_w_{sfx}"))?;
            let mut b = self.stream.launch_builder(f);
            push(&mut b, x);
            push(&mut b, dy);
            push(&mut b, dw);
            push(&mut b, db);
            b.arg(&nn).arg(&fi).arg(&fo);
            if fout > DENSE_BWD_MAX_OUT {
                return Err(err(format!(
                    "dense_bwd: {fout} outputs, the kernel is compiled for at most {DENSE_BWD_MAX_OUT}"
                )));
            }
            let cfg = LaunchConfig {
                grid_dim: (fin.div_ceil(32) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: dense_bwd_w_{dtype}(const T* x, const T* dy, T* dw, T* db, int n, int fin, int fout);
            // 256 threads per block (the kernel's layout: 8 warps x 32 features), one block per
            // 32 input features, fout within the compiled maximum (checked above).
            unsafe { b.launch(cfg) }.map_err(err)?;
        }
        let f = self.f(&format!("dense_bwd_x_{sfx}"))?;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, dy);
        push(&mut b, w);
        push(&mut b, dx);
        b.arg(&nn).arg(&fi).arg(&fo);
        // SAFETY: dense_bwd_x_{dtype}(const T* dy, const T* w, T* dx, int n, int fin, int fout).
        unsafe { b.launch(self.cfg(n * fin)) }.map_err(err)?;
        Ok(())
    }

    fn softmax_xent(
        &self,
        logits: &CudaBuf,
        labels: &CudaBuf,
        dlogits: Option<&mut CudaBuf>,
        n: usize,
        classes: usize,
        scaler: &CudaBuf,
        sums: &mut CudaBuf,
    ) -> Result<()> {
        logits.need(n * classes, "xent logits")?;
        labels.need(n, "xent labels")?;
        let f = self.f(&format!("softmax_xent_{}", logits.suffix()?))?;
        let (nn, c) = (as_i32(n, "n")?, classes as i32);
        let null: u64 = 0;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, logits);
        push(&mut b, labels);
        match &dlogits {
            Some(d) => {
                d.need(n * classes, "xent dlogits")?;
                push(&mut b, d)
            }
            None => {
                b.arg(&null);
            }
        }
        b.arg(&nn).arg(&c);
        push(&mut b, scaler);
        push(&mut b, sums);
        // SAFETY: softmax_xent_{dtype}(const T* z, const u8* y, T* dz /* may be null */, int n, int classes,
        // const Scaler* sc, double* sums); one block.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(err)?;
        Ok(())
    }

    fn check_finite(&self, grads: &[&CudaBuf], scaler: &mut CudaBuf) -> Result<()> {
        // One launch per MULTI_TENSORS gradients of one dtype.
        for chunk in grads.chunks(MULTI_TENSORS) {
            let sfx = chunk[0].suffix()?;
            let mut tt = TensorTable::default();
            for (i, g) in chunk.iter().enumerate() {
                if g.suffix()? != sfx {
                    return Err(err("check_finite: gradients of mixed dtypes"));
                }
                tt.g[i] = self.ptr_of(g)?;
            }
            let total = tt.set_ends(chunk.iter().map(|g| g.len))?;
            let f = self.f(&format!("check_finite_multi_{sfx}"))?;
            let mut b = self.stream.launch_builder(f);
            b.arg(&tt);
            push(&mut b, scaler);
            // SAFETY: check_finite_multi_{dtype}(TensorTable tt, Scaler* sc); every g[i] points to a
            // live buffer of the dtype with the element counts whose running sums are tt.end.
            unsafe { b.launch(self.cfg(total)) }.map_err(err)?;
        }
        Ok(())
    }

    fn adam_all(
        &self,
        tensors: &mut [crate::backend::AdamTensor<'_, CudaBuf>],
        hp: AdamParams,
        scaler: &CudaBuf,
    ) -> Result<()> {
        for chunk in tensors.chunks_mut(MULTI_TENSORS) {
            let sfx = chunk[0].grad.suffix()?;
            let mut tt = TensorTable::default();
            for (i, t) in chunk.iter().enumerate() {
                let len = t.param.len;
                if !matches!(t.param.storage, Storage::F32(_))
                    || !matches!(t.m.storage, Storage::F32(_))
                    || !matches!(t.v.storage, Storage::F32(_))
                    || t.grad.suffix()? != sfx
                {
                    return Err(err(
                        "adam: F32 master weights and moments, gradients of one dtype",
                    ));
                }
                t.grad.need(len, "adam grad")?;
                t.m.need(len, "adam m")?;
                t.v.need(len, "adam v")?;
                tt.p[i] = self.ptr_of(t.param)?;
                tt.g[i] = self.ptr_of(t.grad)?;
                tt.m[i] = self.ptr_of(t.m)?;
                tt.v[i] = self.ptr_of(t.v)?;
                if let Some(c) = t.copy.as_deref() {
                    c.need(len, "adam copy")?;
                    if c.suffix()? != sfx {
                        return Err(err("adam: the weight copy must have the gradient's dtype"));
                    }
                    tt.copy[i] = self.ptr_of(c)?;
                }
            }
            let total = tt.set_ends(chunk.iter().map(|t| t.param.len))?;
            let f = self.f(&format!("adam_multi_{sfx}"))?;
            let mut b = self.stream.launch_builder(f);
            b.arg(&tt)
                .arg(&hp.lr)
                .arg(&hp.beta1)
                .arg(&hp.beta2)
                .arg(&hp.eps);
            push(&mut b, scaler);
            // SAFETY: adam_multi_{dtype}(TensorTable tt, float lr, float b1, float b2, float eps,
            // const Scaler* sc); p, m, v are F32 and g, copy (or null) of the dtype, each holding
            // at least the element count that tt.end sums (checked above); the buffers stay
            // borrowed for this call and alive in the trainer for any graph that records it.
            unsafe { b.launch(self.cfg(total)) }.map_err(err)?;
        }
        Ok(())
    }

    fn adam(
        &self,
        param: &mut CudaBuf,
        grad: &CudaBuf,
        m: &mut CudaBuf,
        v: &mut CudaBuf,
        copy: Option<&mut CudaBuf>,
        hp: AdamParams,
        scaler: &CudaBuf,
    ) -> Result<()> {
        let len = param.len;
        grad.need(len, "adam grad")?;
        m.need(len, "adam m")?;
        v.need(len, "adam v")?;
        let f = self.f(&format!("adam_{}", grad.suffix()?))?;
        let l = len as i64;
        let null: u64 = 0;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, param);
        push(&mut b, grad);
        push(&mut b, m);
        push(&mut b, v);
        match &copy {
            Some(c) => {
                c.need(len, "adam copy")?;
                push(&mut b, c)
            }
            None => {
                b.arg(&null);
            }
        }
        b.arg(&l)
            .arg(&hp.lr)
            .arg(&hp.beta1)
            .arg(&hp.beta2)
            .arg(&hp.eps);
        push(&mut b, scaler);
        // SAFETY: adam_{dtype}(float* p, const T* g, float* m, float* v, T* copy /* may be null */,
        // long long len, float lr, float b1, float b2, float eps, const Scaler* sc).
        unsafe { b.launch(self.cfg(len)) }.map_err(err)?;
        Ok(())
    }

    fn scaler_update(&self, scaler: &mut CudaBuf) -> Result<()> {
        let f = self.f("scaler_update")?;
        let interval = SCALER_GROWTH_INTERVAL;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, scaler);
        b.arg(&interval);
        // SAFETY: scaler_update(Scaler* sc, u32 growth_interval); one thread.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(err)?;
        Ok(())
    }

    fn cast(&self, src: &CudaBuf, dst: &mut CudaBuf) -> Result<()> {
        if !matches!(src.storage, Storage::F32(_)) {
            return Err(err("cast: the source must be F32"));
        }
        src.need(dst.len, "cast src")?;
        let f = self.f(&format!("cast_from_f32_{}", dst.suffix()?))?;
        let l = dst.len as i64;
        let mut b = self.stream.launch_builder(f);
        push(&mut b, src);
        push(&mut b, dst);
        b.arg(&l);
        // SAFETY: cast_from_f32_{dtype}(const float* src, T* dst, long long len).
        unsafe { b.launch(self.cfg(dst.len)) }.map_err(err)?;
        Ok(())
    }

    fn scaler_new(&self, st: ScalerState) -> Result<CudaBuf> {
        let words = [
            st.scale.to_bits(),
            st.growth_tracker,
            st.found_inf as u32,
            st.skipped,
            st.step,
            st.enabled as u32,
        ];
        let s = self.stream.clone_htod(&words).map_err(err)?;
        Ok(self.wrap(Storage::Scaler(s), 6, 4))
    }
    fn scaler_read(&self, scaler: &CudaBuf) -> Result<ScalerState> {
        let Storage::Scaler(s) = &scaler.storage else {
            return Err(err("expected a scaler buffer"));
        };
        let w = self.stream.clone_dtoh(s).map_err(err)?;
        if w.len() < 6 {
            return Err(err("scaler buffer too short"));
        }
        Ok(ScalerState {
            scale: f32::from_bits(w[0]),
            growth_tracker: w[1],
            found_inf: w[2] != 0,
            skipped: w[3],
            step: w[4],
            enabled: w[5] != 0,
        })
    }
    fn sums_new(&self) -> Result<CudaBuf> {
        let s = self.stream.alloc_zeros::<f64>(4).map_err(err)?;
        Ok(self.wrap(Storage::Sums(s), 4, 8))
    }
    fn sums_take(&self, sums: &mut CudaBuf) -> Result<LossSums> {
        let Storage::Sums(s) = &mut sums.storage else {
            return Err(err("expected a sums buffer"));
        };
        let v = self.stream.clone_dtoh(s).map_err(err)?;
        self.stream.memset_zeros(s).map_err(err)?;
        Ok(LossSums {
            loss: v[0],
            correct: v[1] as u64,
            count: v[2] as u64,
            last_loss: v[3],
        })
    }
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
}

pub mod conv_ladder;
mod conv_mma;
pub mod facts;
#[cfg(test)]
mod gpu_tests;
pub mod infer;
pub mod lab;
mod library;
pub mod telemetry;

#[cfg(test)]
mod conv_fwd_plan_tests {
    use super::*;

    const H100_SMS: usize = 132;
    const H100_SMEM: usize = 227 * 1024;

    #[test]
    fn lab_layers_get_two_blocks_per_sm_within_limits() {
        let conv2 = ConvShape {
            c_in: 32,
            c_out: 64,
            h: 13,
            w: 13,
            k: 3,
        };
        let p = ConvFwdPlan::choose(128, conv2, H100_SMS, H100_SMEM).unwrap();
        assert_eq!(p.cpb % CONV_FWD_COG, 0);
        assert!(128 * 64usize.div_ceil(p.cpb) >= 2 * H100_SMS, "{p:?}");
        assert!(
            p.threads >= 32 && p.threads <= 1024 && p.threads % 32 == 0,
            "{p:?}"
        );
        assert_eq!(p.smem_bytes, 4 * (32 * 169 + 32 * 9 * p.cpb));
        let conv1 = ConvShape {
            c_in: 1,
            c_out: 32,
            h: 28,
            w: 28,
            k: 3,
        };
        let p = ConvFwdPlan::choose(128, conv1, H100_SMS, H100_SMEM).unwrap();
        assert!(p.smem_bytes < 48 * 1024, "{p:?}");
        // One image on a big GPU: all channels in one block, never below one warp of work.
        let p = ConvFwdPlan::choose(1, conv2, H100_SMS, H100_SMEM).unwrap();
        assert!(25 * p.cpb / CONV_FWD_COG >= 32, "{p:?}");
    }

    #[test]
    fn a_layer_too_big_for_shared_memory_is_an_error() {
        let huge = ConvShape {
            c_in: 64,
            c_out: 64,
            h: 200,
            w: 200,
            k: 3,
        };
        let e = ConvFwdPlan::choose(8, huge, H100_SMS, H100_SMEM).unwrap_err();
        assert!(e.to_string().contains("shared memory"), "{e}");
    }
}
