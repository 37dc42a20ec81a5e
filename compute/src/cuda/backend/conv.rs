//! The CUDA backend's convolution blocks: which kernels a shape and precision take (the direct
//! kernels or the tensor-core `conv_mma` ones), their launch plans, the forward and backward
//! passes, and the weight gradients' partial sums and their reduction.

use cudarc::driver::CudaSlice;

use super::cuda_backend::{dout_dtype, CudaBackend, WgradScratch};
use crate::backend::cpu::Ticket;
use crate::backend::Backend;
use crate::cuda::buffers::CudaBuf;
use crate::cuda::launch::{self, act_code, config, ConvFwdPlan, Kernel, THREADS};
use crate::cuda::{conv_mma, err};
use crate::error::Result;
use crate::model::{Activation, ConvShape};
use crate::types::Precision;

impl CudaBackend {
    /// Whether the convolution of shape `s` with kernel dtype `d` (`f16`, `bf16`, `tf32`, `f32`)
    /// runs on the implicit-GEMM kernels (`conv_mma_*` on tensor cores, `conv_igemm_*_f32` on
    /// the CUDA cores): the engine and `(forward, input gradient, weight gradient)`, each with
    /// its dynamic shared memory. `SHOWDOWN_CONV=cuda-cores` turns the tensor-core engines off.
    pub(super) fn mma_plan(
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

    /// Launches the implicit-GEMM weight gradient (engine `t`) and its reduction into `dw`,
    /// `db`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn conv_mma_wgrad(
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
    pub(super) fn wgrad_scratch(
        &self,
        need: usize,
    ) -> Result<std::sync::MutexGuard<'_, WgradScratch>> {
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
    pub(super) fn wgrad_reduce(
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
    pub(super) fn conv_wgrad_c1(
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
    pub(super) fn wgrad_plan(
        &self,
        k: Kernel<'_>,
        n: usize,
        smem: usize,
    ) -> Result<conv_mma::WgradPlan> {
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
}

/// [`Backend::conv_block_fwd`](crate::backend::Backend::conv_block_fwd) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn block_fwd(
    be: &CudaBackend,
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
    let math = be.math(sfx);
    if let (Some(t), Some(smem), _, _) = be.mma_plan(s, math) {
        let k = be.kernel(&t.entry("fwd", math))?;
        k.require_block(conv_mma::MMA_THREADS)?;
        let cfg = config(k, (n, 1), conv_mma::MMA_THREADS, smem)?;
        // SAFETY: buffer sizes checked above, k = 3 and the channel/tile limits checked by
        // conv_mma::fwd_smem, whose size (within the opted-in limit) the kernel indexes;
        // MMA_THREADS threads checked.
        return unsafe {
            launch::conv_igemm_fwd(
                &be.stream,
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
    let k = be.kernel(&format!("conv_block_fwd_{sfx}"))?;
    let plan = ConvFwdPlan::choose(n, s, be.sms as usize, be.smem_optin)?;
    let threads = k.block_size(plan.threads)?;
    let cfg = config(k, (n, s.c_out.div_ceil(plan.cpb)), threads, plan.smem_bytes)?;
    // SAFETY: buffer sizes and k checked above; the dynamic shared memory is what
    // conv_block_fwd in train.cu indexes (ConvFwdPlan), within the opted-in limit; grid.x = n
    // images, grid.y = output-channel groups of cpb.
    unsafe {
        launch::conv_block_fwd(
            &be.stream,
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

/// [`Backend::conv_block_bwd`](crate::backend::Backend::conv_block_bwd) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn block_bwd(
    be: &CudaBackend,
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
    let mut act_grad = be
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
            *act_grad = Some(be.alloc(dout_dtype(sfx), need)?);
        }
        let Some(dact) = act_grad.as_mut() else {
            return Err(err("activation-gradient scratch missing"));
        };
        w.need(s.weight_len(), "conv_bwd w")?;
        bias.need(s.c_out, "conv_bwd b")?;
        let k = be.kernel(&format!("act_route_{sfx}"))?;
        // SAFETY: x, w, bias, dout and mask sized above, dact holds n · pooled elements of
        // dout's dtype; the forward pass wrote a mask entry 0–3 for every pooled output
        // (GELU and Swish never cut a window).
        unsafe {
            launch::act_route(
                &be.stream,
                k,
                be.cfg(need),
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
    let math = be.math(sfx);
    let (engine, mma_data, mma_filter) = {
        let (t, _, x, w) = be.mma_plan(s, math);
        (t, x, w)
    };
    if conv_mma::c1_wgrad_fits(s) {
        be.conv_wgrad_c1(x, dout, mask, dw, db, n, s)?;
    } else if let (Some(t), Some(smem)) = (engine, mma_filter) {
        be.conv_mma_wgrad(t, x, dout, mask, dw, db, n, s, smem)?;
    } else {
        let k = be.kernel(&format!("conv_block_bwd_filter_{sfx}"))?;
        let threads = k.block_size(if s.c_in == 1 { 1024 } else { THREADS })?;
        let cfg = config(k, (s.c_out * s.c_in, 1), threads, 0)?;
        // SAFETY: sizes and k checked above; one block per (cout, cin) pair.
        unsafe {
            launch::conv_block_bwd_filter(
                &be.stream, k, cfg, x, dout, mask, dw, db, n, s.c_in, s.c_out, s.h, s.w, s.k,
            )
        }?;
    }
    if let Some(dx) = dx {
        dx.need(n * s.in_len(), "conv_bwd dx")?;
        if let (Some(t), Some(smem)) = (engine, mma_data) {
            let k = be.kernel(&t.entry("bwd_data", math))?;
            k.require_block(conv_mma::MMA_THREADS)?;
            let cfg = config(k, (n, 1), conv_mma::MMA_THREADS, smem)?;
            // SAFETY: sizes checked above, the shape's limits and shared memory by
            // conv_mma::bwd_data_smem, within the opted-in limit; MMA_THREADS checked.
            return unsafe {
                launch::conv_igemm_bwd_data(
                    &be.stream, k, cfg, dout, mask, w, dx, n, s.c_in, s.c_out, s.h, s.w,
                )
            };
        }
        // Mirrors conv_block_bwd_data in train.cu: padded dz (rounded to 4 floats) + weights of 8 channels.
        const CG: usize = 8;
        let (hp, wp) = (s.h_out() + 2 * (s.k - 1), s.w_out() + 2 * (s.k - 1));
        let smem = 4 * ((s.c_out * hp * wp).div_ceil(4) * 4 + s.c_out * s.k * s.k * CG);
        let groups = s.c_in.div_ceil(CG);
        if smem > be.smem_optin {
            return Err(err(format!(
                "conv_block_bwd: one image's routed gradient and weights need {smem} bytes of shared memory, more than the {} this GPU allows",
                be.smem_optin
            )));
        }
        let k = be.kernel(&format!("conv_block_bwd_data_{sfx}"))?;
        // At most THREADS (256): lossless.
        let wanted = ((s.h * s.w).div_ceil(32) * 32).min(THREADS as usize) as u32;
        let threads = k.block_size(wanted)?;
        let cfg = config(k, (n, groups), threads, smem)?;
        // SAFETY: sizes and k checked above; one block per (image, input-channel group), the
        // dynamic shared memory holds one image's routed gradient and the group's weights
        // (checked against the opt-in limit the function attribute was raised to at load time).
        unsafe {
            launch::conv_block_bwd_data(
                &be.stream, k, cfg, dout, mask, w, dx, n, s.c_in, s.c_out, s.h, s.w, s.k,
            )
        }?;
    }
    Ok(())
}
