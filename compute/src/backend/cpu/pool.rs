//! The CPU backend's activation, 2×2 max-pool and dropout: the fused activation + pool of a
//! convolution's output and its backward pass, and dropout's mask, forward and backward.

use rand::{Rng, SeedableRng};

use super::buffers::{cursor_words, u8_mut, u8_of, CpuBuf, FloatMut, FloatRef};
use crate::error::Result;
use crate::model::Activation;

/// Pooled side of a conv output side (floor division, as PyTorch's MaxPool2d(2)).
pub(super) fn pooled(side: usize) -> usize {
    side / 2
}

/// Fused activation + 2×2 max-pool of one image `y[c, ho, wo]` (pre-activations): writes the
/// pooled values and the mask (index 0–3 of the window maximum; for ReLU 4 when it is ≤ 0).
/// GELU and Swish are not monotonic, so the maximum is taken after the activation.
pub(super) fn act_pool(
    y: &[f32],
    act: Activation,
    c: usize,
    ho: usize,
    wo: usize,
    out: &mut [f32],
    mask: &mut [u8],
) {
    let (ph, pw) = (pooled(ho), pooled(wo));
    if act == Activation::Relu {
        // Branch-free (the window maxima are data-dependent): the same first-maximum and
        // ReLU rules as the general loop below.
        for ch in 0..c {
            let plane = &y[ch * ho * wo..(ch + 1) * ho * wo];
            for py in 0..ph {
                let r0 = &plane[(2 * py) * wo..][..2 * pw];
                let r1 = &plane[(2 * py + 1) * wo..][..2 * pw];
                let o = (ch * ph + py) * pw;
                let (out, mask) = (&mut out[o..o + pw], &mut mask[o..o + pw]);
                for (((o, m), a), b) in out
                    .iter_mut()
                    .zip(mask.iter_mut())
                    .zip(r0.chunks_exact(2))
                    .zip(r1.chunks_exact(2))
                {
                    let (mut best, mut v) = (0u8, a[0]);
                    let gt = a[1] > v;
                    best = if gt { 1 } else { best };
                    v = if gt { a[1] } else { v };
                    let gt = b[0] > v;
                    best = if gt { 2 } else { best };
                    v = if gt { b[0] } else { v };
                    let gt = b[1] > v;
                    best = if gt { 3 } else { best };
                    v = if gt { b[1] } else { v };
                    let keep = v > 0.0;
                    *o = if keep { v } else { 0.0 };
                    *m = if keep { best } else { 4 };
                }
            }
        }
        return;
    }
    for ch in 0..c {
        let plane = &y[ch * ho * wo..(ch + 1) * ho * wo];
        for py in 0..ph {
            let r0 = &plane[(2 * py) * wo..];
            let r1 = &plane[(2 * py + 1) * wo..];
            for px in 0..pw {
                let mut v = [r0[2 * px], r0[2 * px + 1], r1[2 * px], r1[2 * px + 1]];
                if act != Activation::Relu {
                    v.iter_mut().for_each(|z| *z = act.apply(*z as f64) as f32);
                }
                let mut best = 0;
                for i in 1..4 {
                    if v[i] > v[best] {
                        best = i;
                    }
                }
                let o = (ch * ph + py) * pw + px;
                if act != Activation::Relu || v[best] > 0.0 {
                    out[o] = v[best];
                    mask[o] = best as u8;
                } else {
                    out[o] = 0.0;
                    mask[o] = 4;
                }
            }
        }
    }
}

/// Routes pooled gradients back to the window maxima: `dz[c, ho, wo]` from `dout[c, ph, pw]`,
/// times the activation's derivative at the pre-activation `y` (`None` for ReLU, whose mask
/// already says where the derivative is 1).
pub(super) fn act_pool_bwd(
    dout: &[f32],
    mask: &[u8],
    pre: Option<(&[f32], Activation)>,
    c: usize,
    ho: usize,
    wo: usize,
    dz: &mut [f32],
) {
    let (ph, pw) = (pooled(ho), pooled(wo));
    dz.iter_mut().for_each(|v| *v = 0.0);
    for ch in 0..c {
        for py in 0..ph {
            for px in 0..pw {
                let o = (ch * ph + py) * pw + px;
                let m = mask[o];
                if m < 4 {
                    let (dy, dx) = ((m / 2) as usize, (m % 2) as usize);
                    let at = ch * ho * wo + (2 * py + dy) * wo + 2 * px + dx;
                    dz[at] = match pre {
                        Some((y, act)) => dout[o] * act.derivative(y[at] as f64) as f32,
                        None => dout[o],
                    };
                }
            }
        }
    }
}

/// Counter-based dropout mask: keep element `i` iff its random word ≥ p·2³².
pub(super) fn dropout_mask(mask: &mut [u8], p: f32, seed: u64, counter: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(counter);
    let threshold = (p as f64 * 4294967296.0) as u64;
    for m in mask.iter_mut() {
        *m = ((rng.random::<u32>() as u64) >= threshold) as u8;
    }
}

/// [`Backend::dropout_fwd`](crate::backend::Backend::dropout_fwd) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn dropout_fwd(
    x: &CpuBuf,
    out: &mut CpuBuf,
    mask: &mut CpuBuf,
    len: usize,
    p: f32,
    seed: u64,
    cursor: &CpuBuf,
) -> Result<()> {
    let _span = crate::probe::span("dropout_fwd");
    let c = cursor_words(cursor)?;
    let counter = c[1] as u64 | (c[2] as u64) << 32;
    let m = u8_mut(mask, len, "dropout mask")?;
    dropout_mask(&mut m[..len], p, seed, counter);
    let mut v = FloatRef::of(x, len, "dropout x")?.to_vec(0, len);
    let keep = 1.0 / (1.0 - p);
    v.iter_mut()
        .zip(m.iter())
        .for_each(|(a, &k)| *a *= k as f32 * keep);
    FloatMut::of(out, len, "dropout out")?.store(0, &v);
    Ok(())
}

/// [`Backend::dropout_bwd`](crate::backend::Backend::dropout_bwd) on the CPU.
pub(super) fn dropout_bwd(
    dout: &CpuBuf,
    mask: &CpuBuf,
    dx: &mut CpuBuf,
    len: usize,
    p: f32,
) -> Result<()> {
    let _span = crate::probe::span("dropout_bwd");
    let m = u8_of(mask, len, "dropout mask")?;
    let mut v = FloatRef::of(dout, len, "dropout dout")?.to_vec(0, len);
    let keep = 1.0 / (1.0 - p);
    v.iter_mut()
        .zip(m.iter())
        .for_each(|(a, &k)| *a *= k as f32 * keep);
    FloatMut::of(dx, len, "dropout dx")?.store(0, &v);
    Ok(())
}
