//! [`CudaBackend`]: the training primitives of [`Backend`] on our own kernels (`train.cu`,
//! `conv_mma.cu`), each launched through its typed wrapper in [`super::launch`].

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaGraph, CudaSlice, CudaStream, LaunchConfig};
use half::{bf16, f16};

use super::buffers::{CudaBuf, CudaData, Storage};
use super::device::{
    load_families, major_of, open_device, opt_in_smem, smem_optin, Kernels, OpenDevice,
};
use super::launch::{
    self, act_code, config, grid_stride, one_block, ConvFwdPlan, Kernel, TensorTable,
    DENSE_BWD_FEATURES_PER_BLOCK, DENSE_BWD_MAX_OUT, HEAD_THREADS, MULTI_TENSORS, THREADS,
};
use super::{conv_mma, err, telemetry};
use crate::backend::cpu::{MemoryMeter, Ticket};
use crate::backend::{
    AdamParams, Backend, DType, HeadDropout, HeadStep, LossSums, ScalerState, CURSOR_WORDS,
    SCALER_GROWTH_INTERVAL,
};
use crate::error::Result;
use crate::model::{Activation, ConvShape};
use crate::types::Precision;

/// The CUDA backend.
pub struct CudaBackend {
    _ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: Kernels,
    meter: Arc<MemoryMeter>,
    device: String,
    sms: u32,
    /// Dynamic shared memory a block may use once opted in (bytes).
    smem_optin: usize,
    ordinal: usize,
    /// Compute capability major version (8 = Ampere).
    cc_major: u32,
    /// The GPU's architecture (`sm_90`).
    arch: String,
    /// Whether the GPU has FP8 tensor cores (sm_89 and newer); a test may turn it off.
    pub(super) fp8_tensor_cores: bool,
    /// FP16/BF16 convolutions on tensor cores where the shape fits (`conv_mma.cu`); off with
    /// `SHOWDOWN_CONV=cuda-cores` (the CUDA-core kernels, for comparison).
    conv_mma: bool,
    /// FP32 convolutions run as TF32 on tensor cores (set by [`Backend::set_precision`]).
    tf32: std::sync::atomic::AtomicBool,
    /// Whether training steps are captured as CUDA graphs and replayed; off with
    /// `SHOWDOWN_CUDA_GRAPHS=off` (every launch from the host, for comparison).
    pub(super) graphs: bool,
    /// FP32 partial weight gradients of `conv_mma_bwd_filter`, grown on demand and kept (a
    /// captured step graph refers to it).
    wgrad_part: Mutex<WgradScratch>,
    /// GELU/Swish backward: the pooled gradient times the activation's derivative
    /// (`act_route`), which the convolution's backward kernels read in place of `dout`; grown
    /// on demand and kept like `wgrad_part`.
    act_grad: Mutex<Option<CudaBuf>>,
    /// `head_train`'s per-row (loss, correct) pairs and its last-block ticket, grown on demand
    /// and kept like `wgrad_part`.
    head_scratch: Mutex<Option<HeadScratch>>,
    /// Clusters of the clustered weight-gradient kernel the device holds at once, per kernel
    /// and shared-memory size.
    cluster_fit: Mutex<std::collections::HashMap<(String, usize), usize>>,
}

/// Scratch of the fused head (`head_train_*`): two floats per batch row and the ticket word
/// that finds the last block (0 between launches).
struct HeadScratch {
    rowstat: CudaSlice<f32>,
    ticket: CudaSlice<u32>,
    _meter: Ticket,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.device)
            .finish()
    }
}

/// The weight gradients' FP32 partial sums on the device, with their memory ticket (grown on
/// demand, kept for the next step).
type WgradScratch = Option<(CudaSlice<f32>, Ticket)>;

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
        let optin = smem_optin(&ctx)?;
        for (name, f) in &funcs {
            let big_smem = [
                "conv_block_bwd_data_",
                "conv_block_fwd_",
                "conv_mma_fwd_",
                "conv_mma_bwd_",
                "conv_igemm_fwd_",
                "conv_igemm_bwd_",
            ];
            if big_smem.iter().any(|p| name.starts_with(p)) {
                // The device's own opt-in limit, for a function of the module just loaded.
                opt_in_smem(name, f, optin)?;
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
            // Non-negative (smem_optin): lossless.
            smem_optin: optin as usize,
            ordinal,
            conv_mma: std::env::var("SHOWDOWN_CONV").map_or(true, |v| v != "cuda-cores"),
            graphs: std::env::var("SHOWDOWN_CUDA_GRAPHS").map_or(true, |v| v != "off"),
            wgrad_part: Mutex::new(None),
            act_grad: Mutex::new(None),
            head_scratch: Mutex::new(None),
            cluster_fit: Mutex::new(std::collections::HashMap::new()),
            tf32: std::sync::atomic::AtomicBool::new(false),
            cc_major: major_of(&arch),
            fp8_tensor_cores: has_fp8_tensor_cores(&arch),
            arch,
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

    /// Whether the convolution of shape `s` with kernel dtype `d` (`f16`, `bf16`, `tf32`, `f32`)
    /// runs on the implicit-GEMM kernels (`conv_mma_*` on tensor cores, `conv_igemm_*_f32` on
    /// the CUDA cores): the engine and `(forward, input gradient, weight gradient)`, each with
    /// its dynamic shared memory. `SHOWDOWN_CONV=cuda-cores` turns the tensor-core engines off.
    fn mma_plan(
        &self,
        s: ConvShape,
        d: &str,
    ) -> (
        Option<conv_mma::MmaType>,
        Option<usize>,
        Option<usize>,
        Option<usize>,
    ) {
        let Some(t) = conv_mma::MmaType::of(d)
            .filter(|t| !t.tensor_cores() || (self.conv_mma && self.cc_major >= 8))
        else {
            return (None, None, None, None);
        };
        let fits = |b: Option<usize>| b.filter(|&b| b <= self.smem_optin);
        (
            Some(t),
            fits(conv_mma::fwd_smem(s, t)),
            fits(conv_mma::bwd_data_smem(s, t)),
            fits(conv_mma::bwd_filter_smem(s, t)),
        )
    }

    /// Which kernels train a convolution of shape `s` in `precision` (for reports and tests):
    /// forward, input gradient, weight gradient, each without its dtype suffix.
    pub fn conv_kernels(&self, s: ConvShape, precision: Precision) -> [&'static str; 3] {
        let d = match precision {
            Precision::Fp16 => "f16",
            Precision::Bf16 => "bf16",
            Precision::Tf32 => "tf32",
            // FP8 runs the FP16 kernels on operands cast onto the FP8 grids.
            Precision::Fp8 => "f16",
            Precision::Fp32 => "f32",
        };
        let (t, f, x, w) = self.mma_plan(s, d);
        let igemm =
            |op_mma: &'static str, op_f32: &'static str, fallback: &'static str, fits| match (
                t, fits,
            ) {
                (Some(conv_mma::MmaType::F32), Some(_)) => op_f32,
                (Some(_), Some(_)) => op_mma,
                _ => fallback,
            };
        [
            igemm("conv_mma_fwd", "conv_igemm_fwd", "conv_block_fwd", f),
            igemm(
                "conv_mma_bwd_data",
                "conv_igemm_bwd_data",
                "conv_block_bwd_data",
                x,
            ),
            if conv_mma::c1_wgrad_fits(s) {
                "conv_wgrad_c1"
            } else {
                igemm(
                    "conv_mma_bwd_filter",
                    "conv_igemm_bwd_filter",
                    "conv_block_bwd_filter",
                    w,
                )
            },
        ]
    }

    /// Launches `dense_bwd_w`: the dense layer's weight and bias gradients (sizes checked by
    /// the caller, `fout` ≤ [`DENSE_BWD_MAX_OUT`]).
    #[allow(clippy::too_many_arguments)]
    fn dense_bwd_w(
        &self,
        x: &CudaBuf,
        dy: &CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        n: usize,
        fin: usize,
        fout: usize,
    ) -> Result<()> {
        dw.need(fin * fout, "dense_bwd dw")?;
        db.need(fout, "dense_bwd db")?;
        let k = self.kernel(&format!("dense_bwd_w_{}", x.suffix()?))?;
        let cfg = config(k, (fin.div_ceil(DENSE_BWD_FEATURES_PER_BLOCK), 1), 256, 0)?;
        // SAFETY: x, dy sized by the caller, dw and db above; 256 threads per block (the
        // kernel's layout: 8 warps), one block per DENSE_BWD_FEATURES_PER_BLOCK input features,
        // fout within the compiled maximum (the caller's check).
        unsafe { launch::dense_bwd_w(&self.stream, k, cfg, x, dy, dw, db, n, fin, fout) }
    }

    /// Launches the implicit-GEMM weight gradient (engine `t`) and its reduction into `dw`,
    /// `db`.
    #[allow(clippy::too_many_arguments)]
    fn conv_mma_wgrad(
        &self,
        t: conv_mma::MmaType,
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
        // One partial per block unless that scratch would be large (conv2's 128 partials are
        // 9.5 MB, more than FP16 saves on activations): then the clustered kernel's one per
        // cluster, which costs time where the device holds fewer clusters than the batch needs.
        let plain = conv_mma::WgradPlan::new(n, self.sms as usize, 1, 0);
        let clustered =
            conv_mma::wgrad_part_len(s, plain.parts) * 4 > conv_mma::CLUSTER_ABOVE_BYTES;
        let name = t.entry(
            if clustered {
                "bwd_filter_clustered"
            } else {
                "bwd_filter"
            },
            sfx,
        );
        let k = self.kernel(&name)?;
        k.require_block(conv_mma::MMA_THREADS)?;
        let plan = self.wgrad_plan(k, n, smem)?;
        let need = conv_mma::wgrad_part_len(s, plan.parts);
        let mut part = self.wgrad_scratch(need)?;
        let Some((part, _)) = part.as_mut() else {
            return Err(err("weight-gradient scratch missing"));
        };
        let cfg = config(k, (plan.blocks, 1), conv_mma::MMA_THREADS, smem)?;
        // SAFETY: sizes checked by the caller, `part` holds plan.parts * (cout*cin*9 + cout)
        // floats (wgrad_part_len: one partial per block, or per cluster where the kernel is
        // compiled with clusters, whose width divides plan.blocks), the shared memory is
        // conv_mma::bwd_filter_smem(s) within the opted-in limit; MMA_THREADS checked.
        unsafe {
            launch::conv_igemm_bwd_filter(
                &self.stream,
                k,
                cfg,
                x,
                dout,
                mask,
                &mut *part,
                n,
                s.c_in,
                s.c_out,
                s.h,
                s.w,
            )
        }?;
        self.wgrad_reduce(t, sfx, part, plan.parts, s, dw, db)
    }

    /// The FP32 partial-gradient scratch, grown to at least `need` floats (kept for the next
    /// step: a graph replays the same buffer).
    fn wgrad_scratch(&self, need: usize) -> Result<std::sync::MutexGuard<'_, WgradScratch>> {
        let mut part = self
            .wgrad_part
            .lock()
            .map_err(|_| err("the weight-gradient scratch lock is poisoned"))?;
        if part.as_ref().is_none_or(|(p, _)| p.len() < need) {
            *part = None;
            let buf = self.stream.alloc_zeros::<f32>(need).map_err(err)?;
            *part = Some((buf, Ticket::new(&self.meter, (need * 4) as u64)));
        }
        Ok(part)
    }

    /// Launches the reduction of `groups` FP32 partials into `dw`, `db`.
    #[allow(clippy::too_many_arguments)]
    fn wgrad_reduce(
        &self,
        t: conv_mma::MmaType,
        sfx: &str,
        part: &CudaSlice<f32>,
        groups: usize,
        s: ConvShape,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
    ) -> Result<()> {
        let k = self.kernel(&t.entry("wgrad_reduce", sfx))?;
        // SAFETY: dw holds len and db cout elements (checked by the caller), part the groups'
        // partials; four threads per output, the grid-stride loop runs whole warps (the shuffles
        // need every lane).
        unsafe {
            launch::conv_wgrad_reduce(
                &self.stream,
                k,
                self.cfg((s.weight_len() + s.c_out) * 4),
                part,
                groups,
                s.weight_len(),
                s.c_out,
                dw,
                db,
            )
        }
    }

    /// Launches `conv_wgrad_c1` (a single-input-channel layer's weight gradient, one partial
    /// per image) and its reduction into `dw`, `db`.
    #[allow(clippy::too_many_arguments)]
    fn conv_wgrad_c1(
        &self,
        x: &CudaBuf,
        dout: &CudaBuf,
        mask: &CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        n: usize,
        s: ConvShape,
    ) -> Result<()> {
        let sfx = x.suffix()?;
        let k = self.kernel(&format!("conv_wgrad_c1_{sfx}"))?;
        k.require_block(conv_mma::C1_THREADS)?;
        let groups = n.max(1);
        let mut part = self.wgrad_scratch(conv_mma::wgrad_part_len(s, groups))?;
        let Some((part, _)) = part.as_mut() else {
            return Err(err("weight-gradient scratch missing"));
        };
        let esize = if sfx == "f32" { 4 } else { 2 };
        let cfg = config(
            k,
            (groups, 1),
            conv_mma::C1_THREADS,
            conv_mma::c1_smem(s, esize),
        )?;
        // SAFETY: x, dout and mask sized by the caller; c_in = 1, k = 3 and the staging within the
        // default shared memory (conv_mma::c1_wgrad_fits), the dynamic shared memory
        // conv_mma::c1_smem of the dtype; `part` holds one partial per image; C1_THREADS checked.
        unsafe {
            launch::conv_wgrad_c1(
                &self.stream,
                k,
                cfg,
                x,
                dout,
                mask,
                &mut *part,
                n,
                s.c_out,
                s.h,
                s.w,
            )
        }?;
        // FP32 storage reduces with the FP32 engine's kernel (TF32 runs conv1 in strict FP32).
        let t = if sfx == "f32" {
            conv_mma::MmaType::F32
        } else {
            conv_mma::MmaType::Half
        };
        self.wgrad_reduce(t, sfx, part, groups, s, dw, db)
    }

    /// The weight-gradient split for a batch of `n`: clustered where the loaded kernel is
    /// compiled with clusters (`__cluster_dims__`, sm_90 and newer), as many clusters as the
    /// device holds at once with `smem` bytes each (asked once per kernel and size, then kept).
    fn wgrad_plan(&self, k: Kernel<'_>, n: usize, smem: usize) -> Result<conv_mma::WgradPlan> {
        use cudarc::driver::sys::CUfunction_attribute_enum as A;
        // SAFETY: `func` is a function of a module loaded in a live context.
        let width = unsafe {
            cudarc::driver::result::function::get_function_attribute(
                k.func.cu_function(),
                A::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
            )
        }
        .map_err(err)?;
        let width = usize::try_from(width).unwrap_or(0);
        if width <= 1 {
            return Ok(conv_mma::WgradPlan::new(n, self.sms as usize, 1, 0));
        }
        let mut fits = self
            .cluster_fit
            .lock()
            .map_err(|_| err("the cluster occupancy cache lock is poisoned"))?;
        let key = (k.name.to_string(), smem);
        let max = match fits.get(&key) {
            Some(&m) => m,
            None => {
                let probe = config(k, (width, 1), conv_mma::MMA_THREADS, smem)?;
                let m = k
                    .func
                    .occupancy_max_active_clusters(probe, &self.stream)
                    .map_err(|e| err(format!("{}: max active clusters: {e}", k.name)))?
                    as usize;
                fits.insert(key, m);
                m
            }
        };
        Ok(conv_mma::WgradPlan::new(n, self.sms as usize, width, max))
    }

    /// The device's compute capability major version (the GPU tests ask it).
    #[cfg(test)]
    pub(crate) fn cc_major(&self) -> u32 {
        self.cc_major
    }

    /// The loaded entry point `name`.
    fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        Kernel::find(&self.funcs, name)
    }

    /// Grid-stride launch shape for `work` items: enough blocks to fill every SM.
    fn cfg(&self, work: usize) -> LaunchConfig {
        grid_stride(work, self.sms as usize * 16)
    }
}

/// Whether GPUs of architecture `arch` (`sm_89`, `compute_90`, `sm_90a`) have FP8 tensor
/// cores: Ada (sm_89) and Hopper (sm_90) on.
fn has_fp8_tensor_cores(arch: &str) -> bool {
    let digits: String = arch.chars().filter(|c| c.is_ascii_digit()).collect();
    digits.parse::<u32>().is_ok_and(|n| n >= 89)
}

/// The dtype of float buffers with kernel suffix `sfx`.
fn dout_dtype(sfx: &str) -> DType {
    match sfx {
        "f16" => DType::F16,
        "bf16" => DType::Bf16,
        _ => DType::F32,
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
            // Emulated on every GPU: cast kernels round the FP16 operands onto the FP8 grids.
            Precision::Fp8 => true,
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
        Ok(CudaBuf::new(storage, len, dtype.size(), &self.meter))
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
        Ok(CudaData::new(
            self.stream.clone_htod(images).map_err(err)?,
            self.stream.clone_htod(labels).map_err(err)?,
            pixels,
            &self.meter,
        ))
    }

    fn peak_bytes(&self) -> u64 {
        self.meter.peak()
    }
    fn reset_peak(&self) {
        self.meter.reset()
    }
    fn release_scratch(&self) {
        // A poisoned lock keeps its buffer: freeing scratch is an economy, never required.
        if let Ok(mut part) = self.wgrad_part.lock() {
            *part = None;
        }
        if let Ok(mut g) = self.act_grad.lock() {
            *g = None;
        }
        if let Ok(mut h) = self.head_scratch.lock() {
            *h = None;
        }
    }
    fn peak_split(&self) -> Option<crate::memory::MemorySplit> {
        Some(self.meter.peak_split())
    }
    fn set_memory_category(&self, c: crate::memory::MemoryCategory) {
        self.meter.set_category(c);
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
        cursor.cursor()?;
        x.need(n * data.pixels, "gather x")?;
        labels.need(n, "gather labels")?;
        if data.n == 0 {
            return Err(err("gather: empty data set"));
        }
        let k = self.kernel(&format!("gather_{}", x.suffix()?))?;
        let (scale, shift) = (1.0f32 / (255.0 * std), mean / std);
        // SAFETY: x and labels sized above; the kernel reads order[] only below its length, and
        // every index in `order` is < data.n (the trainer's permutation of the split).
        unsafe {
            launch::gather(
                &self.stream,
                k,
                self.cfg(n * data.pixels),
                &data.images,
                &data.labels,
                order,
                order.len,
                cursor,
                stride,
                n,
                data.pixels,
                scale,
                shift,
                x,
                labels,
            )
        }
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
        if let (Some(t), Some(smem), _, _) = self.mma_plan(s, math) {
            let k = self.kernel(&t.entry("fwd", math))?;
            k.require_block(conv_mma::MMA_THREADS)?;
            let cfg = config(k, (n, 1), conv_mma::MMA_THREADS, smem)?;
            // SAFETY: buffer sizes checked above, k = 3 and the channel/tile limits checked by
            // conv_mma::fwd_smem, whose size (within the opted-in limit) the kernel indexes;
            // MMA_THREADS threads checked.
            return unsafe {
                launch::conv_igemm_fwd(
                    &self.stream,
                    k,
                    cfg,
                    x,
                    w,
                    bias,
                    out,
                    mask,
                    n,
                    s.c_in,
                    s.c_out,
                    s.h,
                    s.w,
                    act_code(act),
                )
            };
        }
        let k = self.kernel(&format!("conv_block_fwd_{sfx}"))?;
        let plan = ConvFwdPlan::choose(n, s, self.sms as usize, self.smem_optin)?;
        let threads = k.block_size(plan.threads)?;
        let cfg = config(k, (n, s.c_out.div_ceil(plan.cpb)), threads, plan.smem_bytes)?;
        // SAFETY: buffer sizes and k checked above; the dynamic shared memory is what
        // conv_block_fwd in train.cu indexes (ConvFwdPlan), within the opted-in limit; grid.x = n
        // images, grid.y = output-channel groups of cpb.
        unsafe {
            launch::conv_block_fwd(
                &self.stream,
                k,
                cfg,
                x,
                w,
                bias,
                out,
                mask,
                n,
                s.c_in,
                s.c_out,
                s.h,
                s.w,
                s.k,
                plan.cpb,
                act_code(act),
            )
        }
    }

    fn conv_block_bwd(
        &self,
        x: &CudaBuf,
        w: &CudaBuf,
        bias: &CudaBuf,
        mask: &CudaBuf,
        dout: &CudaBuf,
        dw: &mut CudaBuf,
        db: &mut CudaBuf,
        dx: Option<&mut CudaBuf>,
        n: usize,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        let (ph, pw) = (s.h_out() / 2, s.w_out() / 2);
        let pooled = s.c_out * ph * pw;
        x.need(n * s.in_len(), "conv_bwd x")?;
        mask.need(n * pooled, "conv_bwd mask")?;
        dout.need(n * pooled, "conv_bwd dout")?;
        dw.need(s.weight_len(), "conv_bwd dw")?;
        db.need(s.c_out, "conv_bwd db")?;
        let sfx = x.suffix()?;
        if !matches!(s.k, 3 | 5 | 7) {
            return Err(err(format!(
                "conv_block_bwd: kernel size {} is not compiled in (3, 5, 7)",
                s.k
            )));
        }
        // ReLU's derivative is in the mask; GELU and Swish multiply theirs in first.
        let mut act_grad = self
            .act_grad
            .lock()
            .map_err(|_| err("the activation-gradient scratch lock is poisoned"))?;
        let dout = if act == Activation::Relu {
            dout
        } else {
            let need = n * pooled;
            if act_grad
                .as_ref()
                .is_none_or(|g| g.len < need || g.suffix().ok() != Some(sfx))
            {
                *act_grad = None;
                *act_grad = Some(self.alloc(dout_dtype(sfx), need)?);
            }
            let Some(dact) = act_grad.as_mut() else {
                return Err(err("activation-gradient scratch missing"));
            };
            w.need(s.weight_len(), "conv_bwd w")?;
            bias.need(s.c_out, "conv_bwd b")?;
            let k = self.kernel(&format!("act_route_{sfx}"))?;
            // SAFETY: x, w, bias, dout and mask sized above, dact holds n · pooled elements of
            // dout's dtype; the forward pass wrote a mask entry 0–3 for every pooled output
            // (GELU and Swish never cut a window).
            unsafe {
                launch::act_route(
                    &self.stream,
                    k,
                    self.cfg(need),
                    x,
                    w,
                    bias,
                    dout,
                    mask,
                    &mut *dact,
                    n,
                    s.c_in,
                    s.c_out,
                    s.h,
                    s.w,
                    s.k,
                    act_code(act),
                )
            }?;
            &*dact
        };
        let math = self.math(sfx);
        let (engine, mma_data, mma_filter) = {
            let (t, _, x, w) = self.mma_plan(s, math);
            (t, x, w)
        };
        if conv_mma::c1_wgrad_fits(s) {
            self.conv_wgrad_c1(x, dout, mask, dw, db, n, s)?;
        } else if let (Some(t), Some(smem)) = (engine, mma_filter) {
            self.conv_mma_wgrad(t, x, dout, mask, dw, db, n, s, smem)?;
        } else {
            let k = self.kernel(&format!("conv_block_bwd_filter_{sfx}"))?;
            let threads = k.block_size(if s.c_in == 1 { 1024 } else { THREADS })?;
            let cfg = config(k, (s.c_out * s.c_in, 1), threads, 0)?;
            // SAFETY: sizes and k checked above; one block per (cout, cin) pair.
            unsafe {
                launch::conv_block_bwd_filter(
                    &self.stream,
                    k,
                    cfg,
                    x,
                    dout,
                    mask,
                    dw,
                    db,
                    n,
                    s.c_in,
                    s.c_out,
                    s.h,
                    s.w,
                    s.k,
                )
            }?;
        }
        if let Some(dx) = dx {
            dx.need(n * s.in_len(), "conv_bwd dx")?;
            if let (Some(t), Some(smem)) = (engine, mma_data) {
                let k = self.kernel(&t.entry("bwd_data", math))?;
                k.require_block(conv_mma::MMA_THREADS)?;
                let cfg = config(k, (n, 1), conv_mma::MMA_THREADS, smem)?;
                // SAFETY: sizes checked above, the shape's limits and shared memory by
                // conv_mma::bwd_data_smem, within the opted-in limit; MMA_THREADS checked.
                return unsafe {
                    launch::conv_igemm_bwd_data(
                        &self.stream,
                        k,
                        cfg,
                        dout,
                        mask,
                        w,
                        dx,
                        n,
                        s.c_in,
                        s.c_out,
                        s.h,
                        s.w,
                    )
                };
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
            let k = self.kernel(&format!("conv_block_bwd_data_{sfx}"))?;
            // At most THREADS (256): lossless.
            let wanted = ((s.h * s.w).div_ceil(32) * 32).min(THREADS as usize) as u32;
            let threads = k.block_size(wanted)?;
            let cfg = config(k, (n, groups), threads, smem)?;
            // SAFETY: sizes and k checked above; one block per (image, input-channel group), the
            // dynamic shared memory holds one image's routed gradient and the group's weights
            // (checked against the opt-in limit the function attribute was raised to at load time).
            unsafe {
                launch::conv_block_bwd_data(
                    &self.stream,
                    k,
                    cfg,
                    dout,
                    mask,
                    w,
                    dx,
                    n,
                    s.c_in,
                    s.c_out,
                    s.h,
                    s.w,
                    s.k,
                )
            }?;
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
        cursor.cursor()?;
        x.need(len, "dropout x")?;
        out.need(len, "dropout out")?;
        mask.need(len, "dropout mask")?;
        let k = self.kernel(&format!("dropout_fwd_{}", x.suffix()?))?;
        // SAFETY: x, out and mask hold len elements and cursor its 3 words (checked above).
        unsafe {
            launch::dropout_fwd(
                &self.stream,
                k,
                self.cfg(len.div_ceil(4)),
                x,
                out,
                mask,
                len,
                p,
                seed,
                cursor,
            )
        }
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
        cursor.cursor()?;
        let k = self.kernel("cursor_advance")?;
        // SAFETY: one thread updates the 3 words checked above.
        unsafe { launch::cursor_advance(&self.stream, k, one_block(1), cursor) }
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
        let k = self.kernel(&format!("dropout_bwd_{}", dout.suffix()?))?;
        // SAFETY: dout, mask and dx hold len elements (checked above).
        unsafe { launch::dropout_bwd(&self.stream, k, self.cfg(len), dout, mask, dx, len, p) }
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
        let k = self.kernel(&format!("dense_fwd_{}", x.suffix()?))?;
        // SAFETY: sizes checked above; one warp per output.
        unsafe {
            launch::dense_fwd(
                &self.stream,
                k,
                self.cfg(n * fout * 32),
                x,
                w,
                bias,
                y,
                n,
                fin,
                fout,
            )
        }
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
        if fout > DENSE_BWD_MAX_OUT {
            return Err(err(format!(
                "dense_bwd: {fout} outputs, the kernel is compiled for at most {DENSE_BWD_MAX_OUT}"
            )));
        }
        self.dense_bwd_w(x, dy, dw, db, n, fin, fout)?;
        let k = self.kernel(&format!("dense_bwd_x_{sfx}"))?;
        // SAFETY: sizes checked above.
        unsafe { launch::dense_bwd_x(&self.stream, k, self.cfg(n * fin), dy, w, dx, n, fin, fout) }
    }

    fn head_train(&self, h: HeadStep<'_, CudaBuf>) -> Result<()> {
        let HeadStep {
            feat,
            w,
            b,
            dropout,
            cursor,
            labels,
            logits,
            dlogits,
            dfeat: _,
            dx,
            dw,
            db,
            n,
            fin,
            fout,
            scaler,
            sums,
        } = h;
        cursor.cursor()?;
        feat.need(n * fin, "head feat")?;
        w.need(fin * fout, "head w")?;
        b.need(fout, "head b")?;
        labels.need(n, "head labels")?;
        logits.need(n * fout, "head logits")?;
        dlogits.need(n * fout, "head dlogits")?;
        dx.need(n * fin, "head dx")?;
        if fout > DENSE_BWD_MAX_OUT || n == 0 {
            return Err(err(format!(
                "head_train: {n} rows of {fout} outputs; the kernel needs 1 or more rows and at most {DENSE_BWD_MAX_OUT} outputs"
            )));
        }
        let (p, seed) = dropout.as_ref().map_or((0.0, 0), |d| (d.p, d.seed));
        if !(0.0..1.0).contains(&p) {
            return Err(err(format!(
                "head_train: dropout p = {p} is outside [0, 1)"
            )));
        }
        let (mut dropped, mask) = match dropout {
            Some(HeadDropout { out, mask, .. }) => {
                out.need(n * fin, "head dropout out")?;
                mask.need(n * fin, "head dropout mask")?;
                (Some(out), Some(mask))
            }
            None => (None, None),
        };
        let sfx = feat.suffix()?;
        let mut scratch = self
            .head_scratch
            .lock()
            .map_err(|_| err("the head scratch lock is poisoned"))?;
        if scratch.as_ref().is_none_or(|s| s.rowstat.len() < 2 * n) {
            *scratch = None;
            *scratch = Some(HeadScratch {
                rowstat: self.stream.alloc_zeros::<f32>(2 * n).map_err(err)?,
                ticket: self.stream.alloc_zeros::<u32>(1).map_err(err)?,
                _meter: Ticket::new(&self.meter, (2 * n * 4 + 4) as u64),
            });
        }
        let Some(scratch) = scratch.as_mut() else {
            return Err(err("head scratch missing"));
        };
        let k = self.kernel(&format!("head_train_{sfx}"))?;
        k.require_block(HEAD_THREADS)?;
        // SAFETY: every size checked above; rowstat holds 2n floats and the ticket word is 0
        // (zeroed at allocation, reset by the kernel's last block); n blocks of HEAD_THREADS;
        // fout within the compiled maximum.
        unsafe {
            launch::head_train(
                &self.stream,
                k,
                config(k, (n, 1), HEAD_THREADS, 0)?,
                feat,
                w,
                b,
                dropped.as_deref_mut(),
                mask,
                p,
                seed,
                cursor,
                labels,
                &mut *logits,
                &mut *dlogits,
                dx,
                &mut scratch.rowstat,
                &mut scratch.ticket,
                n,
                fin,
                fout,
                scaler,
                sums,
            )
        }?;
        crate::probe::set_phase("backward");
        let x = match &dropped {
            Some(out) => &**out,
            None => feat,
        };
        self.dense_bwd_w(x, dlogits, dw, db, n, fin, fout)
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
        if let Some(d) = &dlogits {
            d.need(n * classes, "xent dlogits")?;
        }
        let k = self.kernel(&format!("softmax_xent_{}", logits.suffix()?))?;
        // SAFETY: logits, labels and dlogits (or null) sized above; one block.
        unsafe {
            launch::softmax_xent(
                &self.stream,
                k,
                one_block(THREADS),
                logits,
                labels,
                dlogits,
                n,
                classes,
                scaler,
                sums,
            )
        }
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
                tt.g[i] = g.ptr(&self.stream)?;
            }
            let total = tt.set_ends(chunk.iter().map(|g| g.len))?;
            let k = self.kernel(&format!("check_finite_multi_{sfx}"))?;
            // SAFETY: every g[i] points to a live buffer of the dtype with the element counts
            // whose running sums are tt.end.
            unsafe {
                launch::check_finite_multi(&self.stream, k, self.cfg(total), tt, &mut *scaler)
            }?;
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
                tt.p[i] = t.param.ptr(&self.stream)?;
                tt.g[i] = t.grad.ptr(&self.stream)?;
                tt.m[i] = t.m.ptr(&self.stream)?;
                tt.v[i] = t.v.ptr(&self.stream)?;
                if let Some(c) = t.copy.as_deref() {
                    c.need(len, "adam copy")?;
                    if c.suffix()? != sfx {
                        return Err(err("adam: the weight copy must have the gradient's dtype"));
                    }
                    tt.copy[i] = c.ptr(&self.stream)?;
                }
            }
            let total = tt.set_ends(chunk.iter().map(|t| t.param.len))?;
            let k = self.kernel(&format!("adam_multi_{sfx}"))?;
            // SAFETY: p, m, v are F32 and g, copy (or null) of the dtype, each holding at least
            // the element count that tt.end sums (checked above); the buffers stay borrowed for
            // this call and alive in the trainer for any graph that records it.
            unsafe {
                launch::adam_multi(
                    &self.stream,
                    k,
                    self.cfg(total),
                    tt,
                    hp.lr,
                    hp.beta1,
                    hp.beta2,
                    hp.eps,
                    scaler,
                )
            }?;
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
        if let Some(c) = &copy {
            c.need(len, "adam copy")?;
        }
        let k = self.kernel(&format!("adam_{}", grad.suffix()?))?;
        // SAFETY: param, grad, m, v and copy (or null) hold len elements (checked above).
        unsafe {
            launch::adam(
                &self.stream,
                k,
                self.cfg(len),
                param,
                grad,
                m,
                v,
                copy,
                len,
                hp.lr,
                hp.beta1,
                hp.beta2,
                hp.eps,
                scaler,
            )
        }
    }

    fn scaler_update(&self, scaler: &mut CudaBuf) -> Result<()> {
        let k = self.kernel("scaler_update")?;
        // SAFETY: a scaler buffer (its storage checked by the wrapper); one thread.
        unsafe {
            launch::scaler_update(
                &self.stream,
                k,
                one_block(1),
                scaler,
                SCALER_GROWTH_INTERVAL,
            )
        }
    }

    fn step_finish(&self, scaler: &mut CudaBuf, cursor: &mut CudaBuf) -> Result<()> {
        cursor.cursor()?;
        let k = self.kernel("step_finish")?;
        // SAFETY: a scaler buffer (its storage checked by the wrapper) and the cursor's 3 words
        // (checked above); one thread.
        unsafe {
            launch::step_finish(
                &self.stream,
                k,
                one_block(1),
                scaler,
                SCALER_GROWTH_INTERVAL,
                cursor,
            )
        }
    }

    fn cast(&self, src: &CudaBuf, dst: &mut CudaBuf) -> Result<()> {
        if !matches!(src.storage, Storage::F32(_)) {
            return Err(err("cast: the source must be F32"));
        }
        src.need(dst.len, "cast src")?;
        let k = self.kernel(&format!("cast_from_f32_{}", dst.suffix()?))?;
        let len = dst.len;
        // SAFETY: src and dst hold len elements (checked above).
        unsafe { launch::cast_from_f32(&self.stream, k, self.cfg(len), src, dst, len) }
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
        Ok(CudaBuf::new(Storage::Scaler(s), 6, 4, &self.meter))
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
    fn fp8_storage(&self) -> DType {
        DType::F16
    }
    fn fp8_engine(&self) -> Option<(String, bool)> {
        // `compute_90` is NVRTC's name of the architecture; users know it as sm_90.
        let sm = self.arch.replace("compute_", "sm_");
        let hardware = if self.fp8_tensor_cores {
            format!("this GPU ({sm}) has FP8 tensor cores, which this build does not use yet")
        } else {
            format!("this GPU ({sm}) has no FP8 tensor cores")
        };
        Some((
            format!(
                "emulated on {}'s FP16 tensor cores: cast kernels round each operand onto \
                 E4M3/E5M2 with its tensor's scale, the FP16 products of FP8 values are exact and \
                 the sums FP32; FP16's loss scaler runs, and the gradients' casts divide its \
                 scale out of their amaxes and scales ({hardware})",
                self.device
            ),
            true,
        ))
    }
    fn fp8_new(&self, state: crate::fp8::Fp8State) -> Result<CudaBuf> {
        let words = super::fp8::to_words(&state)?;
        let current = state.recipe.scaling == crate::fp8::Fp8Scaling::Current;
        let s = self.stream.clone_htod(&words).map_err(err)?;
        Ok(CudaBuf::new(
            Storage::Fp8(s, current),
            words.len(),
            8,
            &self.meter,
        ))
    }
    fn fp8_cast(
        &self,
        buf: &mut CudaBuf,
        len: usize,
        t: crate::fp8::Fp8Tensor,
        state: &mut CudaBuf,
        record: bool,
        loss_scaler: Option<&CudaBuf>,
    ) -> Result<()> {
        buf.need(len, "fp8_cast")?;
        let Storage::Fp8(_, current) = state.storage else {
            return Err(err("fp8_cast: expected an FP8 state buffer"));
        };
        let ti = t.index();
        if current {
            let reset = self.kernel("fp8_amax_reset")?;
            let amax = self.kernel("fp8_amax_f16")?;
            // SAFETY: an FP8 state buffer (checked by the wrapper), t < 6; `buf` holds len
            // halves (checked above and by the wrapper's dtype).
            unsafe {
                launch::fp8_amax_reset(&self.stream, reset, one_block(1), ti, &mut *state)?;
                launch::fp8_amax_f16(
                    &self.stream,
                    amax,
                    self.cfg(len),
                    &*buf,
                    len,
                    ti,
                    &mut *state,
                )?;
            }
        }
        // Eight values per thread and load; a few blocks per SM (one atomic per count and block).
        let cfg = launch::grid_stride(len.div_ceil(8), self.sms as usize * 4);
        let record = usize::from(record);
        match loss_scaler {
            // SAFETY: as above; grid-stride blocks of whole warps; the buffer starts 16-byte
            // aligned (a whole allocation); a scaler buffer (checked by the wrapper).
            Some(scaler) => unsafe {
                let k = self.kernel("fp8_cast_grad_f16")?;
                launch::fp8_cast_grad_f16(&self.stream, k, cfg, buf, len, ti, state, record, scaler)
            },
            // SAFETY: as above.
            None => unsafe {
                let k = self.kernel("fp8_cast_f16")?;
                launch::fp8_cast_f16(&self.stream, k, cfg, buf, len, ti, state, record)
            },
        }
    }
    fn fp8_end_step(&self, state: &mut CudaBuf) -> Result<()> {
        let k = self.kernel("fp8_end_step")?;
        // SAFETY: an FP8 state buffer (checked by the wrapper); one block of a warp per tensor.
        unsafe { launch::fp8_end_step(&self.stream, k, one_block(32 * 6), state) }
    }
    fn fp8_weights_end_step(
        &self,
        w1: &mut CudaBuf,
        n1: usize,
        w2: &mut CudaBuf,
        n2: usize,
        state: &mut CudaBuf,
    ) -> Result<()> {
        w1.need(n1, "fp8 w1")?;
        w2.need(n2, "fp8 w2")?;
        let k = self.kernel("fp8_weights_end_step_f16")?;
        let threads = k.block_size(1024)?;
        if threads < 32 * 6 {
            return Err(err(format!(
                "fp8_weights_end_step_f16 runs {threads} threads per block, fewer than a warp per tensor"
            )));
        }
        // SAFETY: w1/w2 hold n1/n2 halves (checked above and by the wrapper's dtype) from
        // 16-byte aligned starts (whole allocations); an FP8 state buffer; one block of whole
        // warps, at least six.
        unsafe {
            launch::fp8_weights_end_step_f16(
                &self.stream,
                k,
                one_block(threads),
                w1,
                n1,
                w2,
                n2,
                state,
            )
        }
    }
    fn fp8_read(&self, state: &CudaBuf) -> Result<crate::fp8::Fp8State> {
        let Storage::Fp8(s, _) = &state.storage else {
            return Err(err("expected an FP8 state buffer"));
        };
        let w = self.stream.clone_dtoh(s).map_err(err)?;
        super::fp8::from_words(&w)
    }
    fn sums_new(&self) -> Result<CudaBuf> {
        let s = self.stream.alloc_zeros::<f64>(4).map_err(err)?;
        Ok(CudaBuf::new(Storage::Sums(s), 4, 8, &self.meter))
    }
    fn sums_take(&self, sums: &mut CudaBuf) -> Result<LossSums> {
        let Storage::Sums(s) = &mut sums.storage else {
            return Err(err("expected a sums buffer"));
        };
        let v = self.stream.clone_dtoh(s).map_err(err)?;
        self.stream.memset_zeros(s).map_err(err)?;
        if v.len() < 4 {
            return Err(err("sums buffer too short"));
        }
        Ok(LossSums {
            loss: v[0],
            correct: v[1] as u64,
            count: v[2] as u64,
            last_loss: v[3],
        })
    }
}

#[cfg(test)]
mod fp8_arch_tests {
    #[test]
    fn ada_and_hopper_have_fp8_tensor_cores_whatever_the_arch_is_called() {
        for (arch, has) in [
            ("sm_80", false),
            ("sm_86", false),
            ("sm_89", true),
            ("sm_90", true),
            ("compute_90", true),
            ("sm_90a", true),
            ("compute_86", false),
        ] {
            assert_eq!(super::has_fp8_tensor_cores(arch), has, "{arch}");
        }
    }
}
