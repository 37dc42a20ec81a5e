//! The CUDA backend's dropout, dense layer and loss: dropout's forward and backward, the dense
//! layer's passes and its weight gradient, the fused head (`head_train`) and softmax
//! cross-entropy.

use super::cuda_backend::{CudaBackend, HeadScratch};
use crate::backend::cpu::Ticket;
use crate::backend::{HeadDropout, HeadStep};
use crate::cuda::buffers::CudaBuf;
use crate::cuda::err;
use crate::cuda::launch::{
    self, config, one_block, DENSE_BWD_FEATURES_PER_BLOCK, DENSE_BWD_MAX_OUT, HEAD_THREADS, THREADS,
};
use crate::error::Result;

impl CudaBackend {
    /// Launches `dense_bwd_w`: the dense layer's weight and bias gradients (sizes checked by
    /// the caller, `fout` ≤ [`DENSE_BWD_MAX_OUT`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dense_bwd_w(
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
}

/// [`Backend::dropout_fwd`](crate::backend::Backend::dropout_fwd) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn dropout_fwd(
    be: &CudaBackend,
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
    let k = be.kernel(&format!("dropout_fwd_{}", x.suffix()?))?;
    // SAFETY: x, out and mask hold len elements and cursor its 3 words (checked above).
    unsafe {
        launch::dropout_fwd(
            &be.stream,
            k,
            be.cfg(len.div_ceil(4)),
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

/// [`Backend::dropout_bwd`](crate::backend::Backend::dropout_bwd) on the GPU.
pub(super) fn dropout_bwd(
    be: &CudaBackend,
    dout: &CudaBuf,
    mask: &CudaBuf,
    dx: &mut CudaBuf,
    len: usize,
    p: f32,
) -> Result<()> {
    dout.need(len, "dropout dout")?;
    mask.need(len, "dropout mask")?;
    dx.need(len, "dropout dx")?;
    let k = be.kernel(&format!("dropout_bwd_{}", dout.suffix()?))?;
    // SAFETY: dout, mask and dx hold len elements (checked above).
    unsafe { launch::dropout_bwd(&be.stream, k, be.cfg(len), dout, mask, dx, len, p) }
}

/// [`Backend::dense_fwd`](crate::backend::Backend::dense_fwd) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn forward(
    be: &CudaBackend,
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
    let k = be.kernel(&format!("dense_fwd_{}", x.suffix()?))?;
    // SAFETY: sizes checked above; one warp per output.
    unsafe {
        launch::dense_fwd(
            &be.stream,
            k,
            be.cfg(n * fout * 32),
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

/// [`Backend::dense_bwd`](crate::backend::Backend::dense_bwd) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    be: &CudaBackend,
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
    be.dense_bwd_w(x, dy, dw, db, n, fin, fout)?;
    let k = be.kernel(&format!("dense_bwd_x_{sfx}"))?;
    // SAFETY: sizes checked above.
    unsafe { launch::dense_bwd_x(&be.stream, k, be.cfg(n * fin), dy, w, dx, n, fin, fout) }
}

/// [`Backend::head_train`](crate::backend::Backend::head_train) on the GPU.
pub(super) fn head_train(be: &CudaBackend, h: HeadStep<'_, CudaBuf>) -> Result<()> {
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
    let mut scratch = be
        .head_scratch
        .lock()
        .map_err(|_| err("the head scratch lock is poisoned"))?;
    if scratch.as_ref().is_none_or(|s| s.rowstat.len() < 2 * n) {
        *scratch = None;
        *scratch = Some(HeadScratch {
            rowstat: be.stream.alloc_zeros::<f32>(2 * n).map_err(err)?,
            ticket: be.stream.alloc_zeros::<u32>(1).map_err(err)?,
            _meter: Ticket::new(&be.meter, (2 * n * 4 + 4) as u64),
        });
    }
    let Some(scratch) = scratch.as_mut() else {
        return Err(err("head scratch missing"));
    };
    let k = be.kernel(&format!("head_train_{sfx}"))?;
    k.require_block(HEAD_THREADS)?;
    // SAFETY: every size checked above; rowstat holds 2n floats and the ticket word is 0
    // (zeroed at allocation, reset by the kernel's last block); n blocks of HEAD_THREADS;
    // fout within the compiled maximum.
    unsafe {
        launch::head_train(
            &be.stream,
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
    be.dense_bwd_w(x, dlogits, dw, db, n, fin, fout)
}

/// [`Backend::softmax_xent`](crate::backend::Backend::softmax_xent) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn softmax_xent(
    be: &CudaBackend,
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
    let k = be.kernel(&format!("softmax_xent_{}", logits.suffix()?))?;
    // SAFETY: logits, labels and dlogits (or null) sized above; one block.
    unsafe {
        launch::softmax_xent(
            &be.stream,
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
