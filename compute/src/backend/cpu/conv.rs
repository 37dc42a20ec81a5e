//! The CPU backend's convolution blocks: im2col + GEMM (`matrixmultiply`, or the 16-bit GEMM
//! of `gemm16` for FP16/BF16 storage), threads over the batch, the fused activation and
//! max-pool after the forward pass, and the backward pass's weight, bias and input gradients.

use std::sync::atomic::Ordering;

use half::bf16;
use rayon::prelude::*;

use super::buffers::CpuBuf;
use super::buffers::{bad, u8_mut, u8_of, FloatMut, FloatRef};
use super::cpu_backend::CpuBackend;
use super::dense::sgemm;
use super::pool::{act_pool, act_pool_bwd, pooled};
use crate::backend::gemm16::{self, Elem, Kernel, Mat, Packed};
use crate::error::Result;
use crate::model::{Activation, ConvShape};

/// Unrolls one image `x[c_in, h, w]` into `col[c_in·k·k, h_out·w_out]`.
pub fn im2col(x: &[f32], s: &ConvShape, col: &mut [f32]) {
    im2col_any(x, s, col)
}

/// Folds `col[c_in·k·k, h_out·w_out]` back into `dx[c_in, h, w]` (adding overlaps).
pub fn col2im(col: &[f32], s: &ConvShape, dx: &mut [f32]) {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let p = ho * wo;
    dx.iter_mut().for_each(|v| *v = 0.0);
    for ci in 0..s.c_in {
        for ky in 0..k {
            for kx in 0..k {
                let row = (ci * k + ky) * k + kx;
                let src = &col[row * p..(row + 1) * p];
                for oy in 0..ho {
                    let dst = &mut dx[(ci * s.h + oy + ky) * s.w + kx..][..wo];
                    for (d, s) in dst.iter_mut().zip(&src[oy * wo..(oy + 1) * wo]) {
                        *d += s;
                    }
                }
            }
        }
    }
}

/// Convolution forward of one image by im2col + GEMM: `y[c_out, P] = w · col + b`.
pub fn conv2d_im2col_fwd(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    s: &ConvShape,
    col: &mut [f32],
    y: &mut [f32],
) {
    im2col(x, s, col);
    let p = s.out_pixels();
    for (c, row) in y.chunks_mut(p).enumerate().take(s.c_out) {
        row.iter_mut().for_each(|v| *v = b[c]);
    }
    sgemm(
        s.c_out,
        s.patch_len(),
        p,
        w,
        s.patch_len(),
        1,
        col,
        p,
        1,
        1.0,
        y,
    );
}

/// [`im2col`] for any element type: a 16-bit image unrolls into a 16-bit matrix.
pub(super) fn im2col_any<T: Copy>(x: &[T], s: &ConvShape, col: &mut [T]) {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let p = ho * wo;
    for ci in 0..s.c_in {
        for ky in 0..k {
            for kx in 0..k {
                let row = (ci * k + ky) * k + kx;
                let dst = &mut col[row * p..(row + 1) * p];
                for oy in 0..ho {
                    let src = &x[(ci * s.h + oy + ky) * s.w + kx..][..wo];
                    dst[oy * wo..(oy + 1) * wo].copy_from_slice(src);
                }
            }
        }
    }
}

/// Packs a weight matrix `w[rows × cols]` (or its transpose) as the `A` operand: bf16 pairs
/// straight from a bf16 buffer, else widened to f32 first (vectorised slice conversion).
pub(super) fn pack_operand(
    dst: &mut Packed,
    kernel: Kernel,
    w: FloatRef<'_>,
    rows: usize,
    cols: usize,
    transpose: bool,
) -> Result<()> {
    fn view<T: Copy>(m: Mat<'_, T>, transpose: bool) -> Mat<'_, T> {
        if transpose {
            m.t()
        } else {
            m
        }
    }
    match (kernel, w) {
        (Kernel::Bf16Dot, FloatRef::Bf16(v)) => dst.pack_a(
            kernel,
            view(Mat::row_major(&v[..rows * cols], rows, cols), transpose),
        ),
        (Kernel::Bf16Dot, _) => Err(bad("gemm16: bf16 pairs need bf16 weights")),
        (Kernel::Wide, w) => {
            let v = w.to_vec(0, rows * cols);
            dst.pack_a(kernel, view(Mat::row_major(&v, rows, cols), transpose))
        }
    }
}

/// One image unrolled (im2col) for the 16-bit GEMM: bf16 for bf16 pairs (no conversion), f32
/// for the widening kernel (the image widened once with the vectorised slice conversion).
pub(super) enum Col {
    Bf16(Vec<bf16>),
    Wide { xi: Vec<f32>, col: Vec<f32> },
}

impl Col {
    pub(super) fn new(kernel: Kernel, x: FloatRef<'_>, s: &ConvShape) -> Col {
        let len = s.patch_len() * s.out_pixels();
        match (kernel, x) {
            (Kernel::Bf16Dot, FloatRef::Bf16(_)) => Col::Bf16(vec![bf16::ZERO; len]),
            _ => Col::Wide {
                xi: vec![0.0; s.in_len()],
                col: vec![0.0; len],
            },
        }
    }

    /// Unrolls the image at `x[start..]`.
    pub(super) fn unroll(&mut self, x: FloatRef<'_>, start: usize, s: &ConvShape) {
        match (self, x) {
            (Col::Bf16(col), FloatRef::Bf16(v)) => {
                im2col_any(&v[start..start + s.in_len()], s, col)
            }
            (Col::Wide { xi, col }, x) => {
                x.load(start, xi);
                im2col(xi, s, col);
            }
            // `new` chose Bf16 only for a bf16 image.
            (Col::Bf16(col), x) => {
                let mut xi = vec![0.0; s.in_len()];
                x.load(start, &mut xi);
                let xb: Vec<bf16> = xi.iter().map(|&v| bf16::from_f32(v)).collect();
                im2col_any(&xb, s, col);
            }
        }
    }

    /// Packs the unrolled `[rows × cols]` matrix as `B` (`as_b`) or as `A`.
    pub(super) fn pack(
        &self,
        dst: &mut Packed,
        kernel: Kernel,
        rows: usize,
        cols: usize,
        as_b: bool,
    ) -> Result<()> {
        fn go<T: Elem>(dst: &mut Packed, kernel: Kernel, m: Mat<'_, T>, as_b: bool) -> Result<()> {
            if as_b {
                dst.pack_b(kernel, m)
            } else {
                dst.pack_a(kernel, m)
            }
        }
        match self {
            Col::Bf16(c) => go(dst, kernel, Mat::row_major(c, rows, cols), as_b),
            Col::Wide { col, .. } => go(dst, kernel, Mat::row_major(col, rows, cols), as_b),
        }
    }
}

/// Per-thread outputs of a 16-bit conv backward: `gwᵀ[kk × co]` and `gb[co]`.
pub(super) type Partial = Result<(Vec<f32>, Vec<f32>)>;

impl CpuBackend {
    /// [`Backend::conv_block_fwd`](crate::backend::Backend::conv_block_fwd) with the 16-bit GEMM: each image is unrolled in its own
    /// dtype, packed (bf16 pairs, or widened to f32, once per image), multiplied by the weight
    /// panels packed once per call; f32 accumulation, bias, activation and pool as the f32 path.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn conv_block_fwd16(
        &self,
        kernel: Kernel,
        x: FloatRef<'_>,
        w: FloatRef<'_>,
        bv: &[f32],
        ranges: &[std::ops::Range<usize>],
        outs: Vec<FloatMut<'_>>,
        mask_chunks: Vec<&mut [u8]>,
        s: ConvShape,
        act: Activation,
    ) -> Result<()> {
        let (ho, wo) = (s.h_out(), s.w_out());
        let pooled_len = s.c_out * pooled(ho) * pooled(wo);
        let (kk, p, co, il) = (s.patch_len(), s.out_pixels(), s.c_out, s.in_len());
        let mut pw = Packed::default();
        pack_operand(&mut pw, kernel, w, co, kk, false)?;
        let pw = &pw;
        let stop = &*self.stop;
        let done: Vec<Result<()>> = self.pool.install(|| {
            ranges
                .par_iter()
                .zip(outs)
                .zip(mask_chunks)
                .map(|((r, mut o), m)| {
                    let mut col = Col::new(kernel, x, &s);
                    let mut pcol = Packed::default();
                    let mut y = vec![0f32; s.out_len()];
                    let mut po = vec![0f32; pooled_len];
                    for (k, img) in r.clone().enumerate() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        col.unroll(x, img * il, &s);
                        col.pack(&mut pcol, kernel, kk, p, true)?;
                        for (c, row) in y.chunks_mut(p).enumerate().take(co) {
                            row.fill(bv[c]);
                        }
                        gemm16::gemm_packed(pw, &pcol, true, &mut y, p)?;
                        act_pool(
                            &y,
                            act,
                            co,
                            ho,
                            wo,
                            &mut po,
                            &mut m[k * pooled_len..(k + 1) * pooled_len],
                        );
                        o.store(k * pooled_len, &po);
                    }
                    Ok(())
                })
                .collect()
        });
        done.into_iter().collect::<Result<()>>()?;
        self.check_stop()
    }

    /// [`Backend::conv_block_bwd`](crate::backend::Backend::conv_block_bwd) (ReLU) with the 16-bit GEMM: `gwᵀ += col · dzᵀ` and
    /// `dcol = wᵀ · dz` per image. Under ReLU `dz` holds the upstream gradient's own values, so
    /// packing it as bf16 is exact. Returns `gw[co × kk]` and `gb`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn conv_block_bwd16(
        &self,
        kernel: Kernel,
        x: FloatRef<'_>,
        w: FloatRef<'_>,
        masks: &[u8],
        dout: FloatRef<'_>,
        dxs: Vec<Option<FloatMut<'_>>>,
        ranges: &[std::ops::Range<usize>],
        s: ConvShape,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        let (ho, wo) = (s.h_out(), s.w_out());
        let pooled_len = s.c_out * pooled(ho) * pooled(wo);
        let (kk, p, co, il) = (s.patch_len(), s.out_pixels(), s.c_out, s.in_len());
        let mut pwt = Packed::default();
        if dxs.iter().any(Option::is_some) {
            pack_operand(&mut pwt, kernel, w, co, kk, true)?;
        }
        let pwt = &pwt;
        let stop = &*self.stop;
        let partials: Vec<Partial> = self.pool.install(|| {
            ranges
                .par_iter()
                .zip(dxs)
                .map(|(r, mut dxc)| {
                    let mut gwt = vec![0f32; kk * co];
                    let mut gb = vec![0f32; co];
                    let mut col = Col::new(kernel, x, &s);
                    let mut dz = vec![0f32; co * p];
                    let mut dpool = vec![0f32; pooled_len];
                    let mut dcol = vec![0f32; if dxc.is_some() { kk * p } else { 0 }];
                    let mut dxi = vec![0f32; if dxc.is_some() { il } else { 0 }];
                    let (mut pcol, mut pdzt, mut pdz) =
                        (Packed::default(), Packed::default(), Packed::default());
                    for (k, img) in r.clone().enumerate() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        dout.load(img * pooled_len, &mut dpool);
                        act_pool_bwd(
                            &dpool,
                            &masks[img * pooled_len..(img + 1) * pooled_len],
                            None,
                            co,
                            ho,
                            wo,
                            &mut dz,
                        );
                        col.unroll(x, img * il, &s);
                        // gwᵀ[kk × co] += col[kk × p] · dzᵀ[p × co]
                        col.pack(&mut pcol, kernel, kk, p, false)?;
                        pdzt.pack_b(kernel, Mat::row_major(&dz, co, p).t())?;
                        gemm16::gemm_packed(&pcol, &pdzt, true, &mut gwt, co)?;
                        for (c, row) in dz.chunks(p).enumerate() {
                            gb[c] += row.iter().sum::<f32>();
                        }
                        if let Some(d) = dxc.as_mut() {
                            // dcol[kk × p] = wᵀ[kk × co] · dz[co × p]
                            pdz.pack_b(kernel, Mat::row_major(&dz, co, p))?;
                            gemm16::gemm_packed(pwt, &pdz, false, &mut dcol, p)?;
                            col2im(&dcol, &s, &mut dxi);
                            d.store(k * il, &dxi);
                        }
                    }
                    Ok((gwt, gb))
                })
                .collect()
        });
        let mut gwt = vec![0f32; kk * co];
        let mut gb = vec![0f32; co];
        for part in partials {
            let (pw, pb) = part?;
            gwt.iter_mut().zip(pw).for_each(|(a, b)| *a += b);
            gb.iter_mut().zip(pb).for_each(|(a, b)| *a += b);
        }
        let mut gw = vec![0f32; co * kk];
        for (i, row) in gwt.chunks(co).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                gw[c * kk + i] = v;
            }
        }
        Ok((gw, gb))
    }
}

/// The lab CNN's name of a convolution shape (`conv1`, `conv2`), or the shape in words.
pub(super) fn conv_layer(s: ConvShape) -> String {
    if s == crate::model::lab::CONV1 {
        "conv1".into()
    } else if s == crate::model::lab::CONV2 {
        "conv2".into()
    } else {
        format!("{}x{}x{}x{} k{}", s.c_in, s.h, s.w, s.c_out, s.k)
    }
}

/// [`Backend::conv_block_fwd`](crate::backend::Backend::conv_block_fwd) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn block_fwd(
    be: &CpuBackend,
    x: &CpuBuf,
    w: &CpuBuf,
    b: &CpuBuf,
    out: &mut CpuBuf,
    mask: &mut CpuBuf,
    n: usize,
    s: ConvShape,
    act: Activation,
) -> Result<()> {
    let _span = crate::probe::span_with(|| format!("conv_block_fwd {}", conv_layer(s)));
    let (ho, wo) = (s.h_out(), s.w_out());
    let pooled_len = s.c_out * pooled(ho) * pooled(wo);
    let x = FloatRef::of(x, n * s.in_len(), "conv x")?;
    let wr = FloatRef::of(w, s.weight_len(), "conv w")?;
    let bv = FloatRef::of(b, s.c_out, "conv b")?.to_vec(0, s.c_out);
    let ranges = be.chunks(n);
    let outs = FloatMut::of(out, n * pooled_len, "conv out")?.split(pooled_len, &ranges);
    let masks = u8_mut(mask, n * pooled_len, "conv mask")?;
    let mut mask_chunks = Vec::new();
    let mut rest = &mut masks[..n * pooled_len];
    for r in &ranges {
        let (a, b2) = rest.split_at_mut(r.len() * pooled_len);
        mask_chunks.push(a);
        rest = b2;
    }
    if let Some(k) = be.gemm16_for(&x, &wr) {
        return be.conv_block_fwd16(k, x, wr, &bv, &ranges, outs, mask_chunks, s, act);
    }
    let wv = wr.to_vec(0, s.weight_len());
    let stop = &*be.stop;
    be.pool.install(|| {
        ranges
            .par_iter()
            .zip(outs)
            .zip(mask_chunks)
            .for_each(|((r, mut o), m)| {
                let mut xi = vec![0f32; s.in_len()];
                let mut col = vec![0f32; s.patch_len() * s.out_pixels()];
                let mut y = vec![0f32; s.out_len()];
                let mut po = vec![0f32; pooled_len];
                for (k, img) in r.clone().enumerate() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    x.load(img * s.in_len(), &mut xi);
                    conv2d_im2col_fwd(&xi, &wv, &bv, &s, &mut col, &mut y);
                    act_pool(
                        &y,
                        act,
                        s.c_out,
                        ho,
                        wo,
                        &mut po,
                        &mut m[k * pooled_len..(k + 1) * pooled_len],
                    );
                    o.store(k * pooled_len, &po);
                }
            })
    });
    be.check_stop()
}

/// [`Backend::conv_block_bwd`](crate::backend::Backend::conv_block_bwd) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn block_bwd(
    be: &CpuBackend,
    x: &CpuBuf,
    w: &CpuBuf,
    b: &CpuBuf,
    mask: &CpuBuf,
    dout: &CpuBuf,
    dw: &mut CpuBuf,
    db: &mut CpuBuf,
    dx: Option<&mut CpuBuf>,
    n: usize,
    s: ConvShape,
    act: Activation,
) -> Result<()> {
    let _span = crate::probe::span_with(|| format!("conv_block_bwd {}", conv_layer(s)));
    let (ho, wo) = (s.h_out(), s.w_out());
    let pooled_len = s.c_out * pooled(ho) * pooled(wo);
    let p = s.out_pixels();
    let (kk, co) = (s.patch_len(), s.c_out);
    let x = FloatRef::of(x, n * s.in_len(), "conv_bwd x")?;
    let wr = FloatRef::of(w, s.weight_len(), "conv_bwd w")?;
    let bv = FloatRef::of(b, s.c_out, "conv_bwd b")?.to_vec(0, s.c_out);
    let masks = u8_of(mask, n * pooled_len, "conv_bwd mask")?;
    let dout = FloatRef::of(dout, n * pooled_len, "conv_bwd dout")?;
    let ranges = be.chunks(n);
    let dxs: Vec<Option<FloatMut>> = match dx {
        Some(d) => FloatMut::of(d, n * s.in_len(), "conv_bwd dx")?
            .split(s.in_len(), &ranges)
            .into_iter()
            .map(Some)
            .collect(),
        None => ranges.iter().map(|_| None).collect(),
    };
    // The 16-bit GEMM only under ReLU (dz is then the upstream gradient's own values; other
    // activations multiply in act'(z), an f32), and for bf16 pairs only from a bf16 dout.
    let kernel = match (be.gemm16_for(&x, &wr), dout) {
        (Some(Kernel::Bf16Dot), FloatRef::Bf16(_)) => Some(Kernel::Bf16Dot),
        (Some(Kernel::Wide), _) => Some(Kernel::Wide),
        _ => None,
    }
    .filter(|_| act == Activation::Relu);
    let store = |done: Result<(Vec<f32>, Vec<f32>)>, dw: &mut CpuBuf, db: &mut CpuBuf| {
        let (gw, gb) = done?;
        be.check_stop()?;
        FloatMut::of(dw, co * kk, "conv_bwd dw")?.store(0, &gw);
        FloatMut::of(db, co, "conv_bwd db")?.store(0, &gb);
        Ok(())
    };
    if let Some(k) = kernel {
        let done = be.conv_block_bwd16(k, x, wr, masks, dout, dxs, &ranges, s);
        return store(done, dw, db);
    }
    let wv = wr.to_vec(0, s.weight_len());
    let stop = &*be.stop;
    let partials: Vec<(Vec<f32>, Vec<f32>)> = be.pool.install(|| {
        ranges
            .par_iter()
            .zip(dxs)
            .map(|(r, mut dxc)| {
                let mut gw = vec![0f32; co * kk];
                let mut gb = vec![0f32; co];
                let mut xi = vec![0f32; s.in_len()];
                let mut col = vec![0f32; kk * p];
                let mut dz = vec![0f32; co * p];
                let mut dpool = vec![0f32; pooled_len];
                let mut dxi = vec![0f32; s.in_len()];
                let mut y = vec![
                    0f32;
                    if act == Activation::Relu {
                        0
                    } else {
                        s.out_len()
                    }
                ];
                for (k, img) in r.clone().enumerate() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    dout.load(img * pooled_len, &mut dpool);
                    x.load(img * s.in_len(), &mut xi);
                    let pre = if act == Activation::Relu {
                        None
                    } else {
                        // The pre-activations again (one GEMM), for act'(z) at each maximum.
                        conv2d_im2col_fwd(&xi, &wv, &bv, &s, &mut col, &mut y);
                        Some((&y[..], act))
                    };
                    act_pool_bwd(
                        &dpool,
                        &masks[img * pooled_len..(img + 1) * pooled_len],
                        pre,
                        co,
                        ho,
                        wo,
                        &mut dz,
                    );
                    if act == Activation::Relu {
                        im2col(&xi, &s, &mut col); // the non-ReLU path did it above
                    }
                    // gw[co × kk] += dz[co × p] · colᵀ[p × kk]
                    sgemm(co, p, kk, &dz, p, 1, &col, 1, p, 1.0, &mut gw);
                    for (c, row) in dz.chunks(p).enumerate() {
                        gb[c] += row.iter().sum::<f32>();
                    }
                    if let Some(d) = dxc.as_mut() {
                        // dcol[kk × p] = wᵀ[kk × co] · dz[co × p]
                        sgemm(kk, co, p, &wv, 1, kk, &dz, p, 1, 0.0, &mut col);
                        col2im(&col, &s, &mut dxi);
                        d.store(k * s.in_len(), &dxi);
                    }
                }
                (gw, gb)
            })
            .collect()
    });
    be.check_stop()?;
    let mut gw = vec![0f32; co * kk];
    let mut gb = vec![0f32; co];
    for (pw, pb) in partials {
        gw.iter_mut().zip(pw).for_each(|(a, b)| *a += b);
        gb.iter_mut().zip(pb).for_each(|(a, b)| *a += b);
    }
    FloatMut::of(dw, co * kk, "conv_bwd dw")?.store(0, &gw);
    FloatMut::of(db, co, "conv_bwd db")?.store(0, &gb);
    Ok(())
}
