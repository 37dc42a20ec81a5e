//! The CUDA backend's optimizer step: the gradients' finiteness check, Adam (one tensor, or
//! every tensor in fused launches), the loss scaler's update and the step's end, the casts
//! and FP8's casts and weight scaling.

use super::cuda_backend::CudaBackend;
use crate::backend::{AdamParams, SCALER_GROWTH_INTERVAL};
use crate::cuda::buffers::{CudaBuf, Storage};
use crate::cuda::err;
use crate::cuda::launch::{self, one_block, TensorTable, MULTI_TENSORS};
use crate::error::Result;

/// [`Backend::check_finite`](crate::backend::Backend::check_finite) on the GPU.
pub(super) fn check_finite(
    be: &CudaBackend,
    grads: &[&CudaBuf],
    scaler: &mut CudaBuf,
) -> Result<()> {
    // One launch per MULTI_TENSORS gradients of one dtype.
    for chunk in grads.chunks(MULTI_TENSORS) {
        let sfx = chunk[0].suffix()?;
        let mut tt = TensorTable::default();
        for (i, g) in chunk.iter().enumerate() {
            if g.suffix()? != sfx {
                return Err(err("check_finite: gradients of mixed dtypes"));
            }
            tt.g[i] = g.ptr(&be.stream)?;
        }
        let total = tt.set_ends(chunk.iter().map(|g| g.len))?;
        let k = be.kernel(&format!("check_finite_multi_{sfx}"))?;
        // SAFETY: every g[i] points to a live buffer of the dtype with the element counts
        // whose running sums are tt.end.
        unsafe { launch::check_finite_multi(&be.stream, k, be.cfg(total), tt, &mut *scaler) }?;
    }
    Ok(())
}

/// [`Backend::adam_all`](crate::backend::Backend::adam_all) on the GPU.
pub(super) fn adam_all(
    be: &CudaBackend,
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
            tt.p[i] = t.param.ptr(&be.stream)?;
            tt.g[i] = t.grad.ptr(&be.stream)?;
            tt.m[i] = t.m.ptr(&be.stream)?;
            tt.v[i] = t.v.ptr(&be.stream)?;
            if let Some(c) = t.copy.as_deref() {
                c.need(len, "adam copy")?;
                if c.suffix()? != sfx {
                    return Err(err("adam: the weight copy must have the gradient's dtype"));
                }
                tt.copy[i] = c.ptr(&be.stream)?;
            }
        }
        let total = tt.set_ends(chunk.iter().map(|t| t.param.len))?;
        let k = be.kernel(&format!("adam_multi_{sfx}"))?;
        // SAFETY: p, m, v are F32 and g, copy (or null) of the dtype, each holding at least
        // the element count that tt.end sums (checked above); the buffers stay borrowed for
        // this call and alive in the trainer for any graph that records it.
        unsafe {
            launch::adam_multi(
                &be.stream,
                k,
                be.cfg(total),
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

/// [`Backend::adam`](crate::backend::Backend::adam) on the GPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn adam(
    be: &CudaBackend,
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
    let k = be.kernel(&format!("adam_{}", grad.suffix()?))?;
    // SAFETY: param, grad, m, v and copy (or null) hold len elements (checked above).
    unsafe {
        launch::adam(
            &be.stream,
            k,
            be.cfg(len),
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

/// [`Backend::scaler_update`](crate::backend::Backend::scaler_update) on the GPU.
pub(super) fn scaler_update(be: &CudaBackend, scaler: &mut CudaBuf) -> Result<()> {
    let k = be.kernel("scaler_update")?;
    // SAFETY: a scaler buffer (its storage checked by the wrapper); one thread.
    unsafe { launch::scaler_update(&be.stream, k, one_block(1), scaler, SCALER_GROWTH_INTERVAL) }
}

/// [`Backend::step_finish`](crate::backend::Backend::step_finish) on the GPU.
pub(super) fn step_finish(
    be: &CudaBackend,
    scaler: &mut CudaBuf,
    cursor: &mut CudaBuf,
) -> Result<()> {
    cursor.cursor()?;
    let k = be.kernel("step_finish")?;
    // SAFETY: a scaler buffer (its storage checked by the wrapper) and the cursor's 3 words
    // (checked above); one thread.
    unsafe {
        launch::step_finish(
            &be.stream,
            k,
            one_block(1),
            scaler,
            SCALER_GROWTH_INTERVAL,
            cursor,
        )
    }
}

/// [`Backend::cast`](crate::backend::Backend::cast) on the GPU.
pub(super) fn cast(be: &CudaBackend, src: &CudaBuf, dst: &mut CudaBuf) -> Result<()> {
    if !matches!(src.storage, Storage::F32(_)) {
        return Err(err("cast: the source must be F32"));
    }
    src.need(dst.len, "cast src")?;
    let k = be.kernel(&format!("cast_from_f32_{}", dst.suffix()?))?;
    let len = dst.len;
    // SAFETY: src and dst hold len elements (checked above).
    unsafe { launch::cast_from_f32(&be.stream, k, be.cfg(len), src, dst, len) }
}

/// [`Backend::fp8_cast`](crate::backend::Backend::fp8_cast) on the GPU.
pub(super) fn fp8_cast(
    be: &CudaBackend,
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
        let reset = be.kernel("fp8_amax_reset")?;
        let amax = be.kernel("fp8_amax_f16")?;
        // SAFETY: an FP8 state buffer (checked by the wrapper), t < 6; `buf` holds len
        // halves (checked above and by the wrapper's dtype).
        unsafe {
            launch::fp8_amax_reset(&be.stream, reset, one_block(1), ti, &mut *state)?;
            launch::fp8_amax_f16(&be.stream, amax, be.cfg(len), &*buf, len, ti, &mut *state)?;
        }
    }
    // Eight values per thread and load; a few blocks per SM (one atomic per count and block).
    let cfg = launch::grid_stride(len.div_ceil(8), be.sms as usize * 4);
    let record = usize::from(record);
    match loss_scaler {
        // SAFETY: as above; grid-stride blocks of whole warps; the buffer starts 16-byte
        // aligned (a whole allocation); a scaler buffer (checked by the wrapper).
        Some(scaler) => unsafe {
            let k = be.kernel("fp8_cast_grad_f16")?;
            launch::fp8_cast_grad_f16(&be.stream, k, cfg, buf, len, ti, state, record, scaler)
        },
        // SAFETY: as above.
        None => unsafe {
            let k = be.kernel("fp8_cast_f16")?;
            launch::fp8_cast_f16(&be.stream, k, cfg, buf, len, ti, state, record)
        },
    }
}

/// [`Backend::fp8_weights_end_step`](crate::backend::Backend::fp8_weights_end_step) on the GPU.
pub(super) fn fp8_weights_end_step(
    be: &CudaBackend,
    w1: &mut CudaBuf,
    n1: usize,
    w2: &mut CudaBuf,
    n2: usize,
    state: &mut CudaBuf,
) -> Result<()> {
    w1.need(n1, "fp8 w1")?;
    w2.need(n2, "fp8 w2")?;
    let k = be.kernel("fp8_weights_end_step_f16")?;
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
        launch::fp8_weights_end_step_f16(&be.stream, k, one_block(threads), w1, n1, w2, n2, state)
    }
}
