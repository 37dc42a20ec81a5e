//! The CPU backend's optimizer step: the gradients' finiteness check for the loss scaler,
//! Adam, the scaler's update, and the casts (to a 16-bit copy, onto FP8's grids).

use super::buffers::{bad, scaler_of, CpuBuf, FloatMut, FloatRef, Storage};
use crate::backend::AdamParams;
use crate::error::Result;
use crate::fp8::Fp8Tensor;

/// [`Backend::check_finite`](crate::backend::Backend::check_finite) on the CPU.
pub(super) fn check_finite(grads: &[&CpuBuf], scaler: &mut CpuBuf) -> Result<()> {
    let _span = crate::probe::span("check_finite");
    let mut finite = true;
    for g in grads {
        let len = match &g.storage {
            Storage::F32(v) => v.len(),
            Storage::F16(v) => v.len(),
            Storage::Bf16(v) => v.len(),
            _ => 0,
        };
        finite &= FloatRef::of(g, len, "check_finite")?.all_finite();
    }
    match &mut scaler.storage {
        Storage::Scaler(s) => {
            s.found_inf |= !finite;
            Ok(())
        }
        _ => Err(bad("check_finite: expected a scaler state buffer")),
    }
}

/// [`Backend::adam`](crate::backend::Backend::adam) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn adam(
    param: &mut CpuBuf,
    grad: &CpuBuf,
    m: &mut CpuBuf,
    v: &mut CpuBuf,
    copy: Option<&mut CpuBuf>,
    hp: AdamParams,
    scaler: &CpuBuf,
) -> Result<()> {
    let _span = crate::probe::span("adam");
    let st = scaler_of(scaler)?;
    if st.found_inf {
        return Ok(());
    }
    let t = (st.step + 1) as i32;
    let inv = 1.0 / st.scale;
    let bc1 = 1.0 - hp.beta1.powi(t);
    let bc2_sqrt = (1.0 - hp.beta2.powi(t)).sqrt();
    let step_size = hp.lr / bc1;
    let (Storage::F32(p), Storage::F32(mv), Storage::F32(vv)) =
        (&mut param.storage, &mut m.storage, &mut v.storage)
    else {
        return Err(bad("adam: param, m and v must be F32"));
    };
    let g = FloatRef::of(grad, p.len(), "adam grad")?.to_vec(0, p.len());
    for i in 0..p.len() {
        let gi = g[i] * inv;
        mv[i] = hp.beta1 * mv[i] + (1.0 - hp.beta1) * gi;
        vv[i] = hp.beta2 * vv[i] + (1.0 - hp.beta2) * gi * gi;
        let denom = vv[i].sqrt() / bc2_sqrt + hp.eps;
        p[i] -= step_size * mv[i] / denom;
    }
    if let Some(c) = copy {
        let pv = p.clone();
        FloatMut::of(c, pv.len(), "adam copy")?.store(0, &pv);
    }
    Ok(())
}

/// [`Backend::scaler_update`](crate::backend::Backend::scaler_update) on the CPU.
pub(super) fn scaler_update(scaler: &mut CpuBuf) -> Result<()> {
    let _span = crate::probe::span("scaler_update");
    match &mut scaler.storage {
        Storage::Scaler(s) => {
            s.update();
            Ok(())
        }
        _ => Err(bad("scaler_update: expected a scaler state buffer")),
    }
}

/// [`Backend::cast`](crate::backend::Backend::cast) on the CPU.
pub(super) fn cast(src: &CpuBuf, dst: &mut CpuBuf) -> Result<()> {
    let _span = crate::probe::span("cast");
    let len = match &dst.storage {
        Storage::F32(v) => v.len(),
        Storage::F16(v) => v.len(),
        Storage::Bf16(v) => v.len(),
        _ => return Err(bad("cast: expected float buffers")),
    };
    let v = FloatRef::of(src, len, "cast src")?.to_vec(0, len);
    FloatMut::of(dst, len, "cast dst")?.store(0, &v);
    Ok(())
}

/// [`Backend::fp8_cast`](crate::backend::Backend::fp8_cast) on the CPU.
pub(super) fn fp8_cast(
    buf: &mut CpuBuf,
    len: usize,
    t: Fp8Tensor,
    state: &mut CpuBuf,
    record: bool,
    loss_scaler: Option<&CpuBuf>,
) -> Result<()> {
    let _span = crate::probe::span("fp8_cast");
    let loss_scale = match loss_scaler {
        Some(s) => scaler_of(s)?.scale,
        None => 1.0,
    };
    let Storage::Fp8(st) = &mut state.storage else {
        return Err(bad("fp8_cast: expected an FP8 state buffer"));
    };
    match &mut buf.storage {
        Storage::F32(v) if v.len() >= len => {
            st.cast_loss_scaled(t, &mut v[..len], record, loss_scale);
            Ok(())
        }
        _ => Err(bad(&format!(
            "fp8_cast: expected an f32 buffer of at least {len} values"
        ))),
    }
}
