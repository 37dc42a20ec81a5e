//! The CPU backend's dense layer and loss: the f32 GEMM every layer uses ([`sgemm`]), the
//! dense layer's forward and backward passes, and softmax cross-entropy with its sums.

use super::buffers::{bad, scaler_of, u8_of, CpuBuf, FloatMut, FloatRef, Storage};
use crate::error::Result;

/// `c[m×n] = alpha · a[m×k] · b[k×n] + beta · c` with explicit row/column strides.
#[allow(clippy::too_many_arguments)]
pub(super) fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    rsa: usize,
    csa: usize,
    b: &[f32],
    rsb: usize,
    csb: usize,
    beta: f32,
    c: &mut [f32],
) {
    debug_assert!(c.len() >= m * n);
    // SAFETY: the strides describe matrices inside `a`, `b` and `c` (checked by the callers'
    // lengths: a holds m·k, b holds k·n, c holds m·n elements), c is row-major m×n.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            rsa as isize,
            csa as isize,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            beta,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// [`Backend::dense_fwd`](crate::backend::Backend::dense_fwd) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn forward(
    x: &CpuBuf,
    w: &CpuBuf,
    b: &CpuBuf,
    y: &mut CpuBuf,
    n: usize,
    fin: usize,
    fout: usize,
) -> Result<()> {
    let _span = crate::probe::span("dense_fwd");
    let xv = FloatRef::of(x, n * fin, "dense x")?.to_vec(0, n * fin);
    let wv = FloatRef::of(w, fin * fout, "dense w")?.to_vec(0, fin * fout);
    let bv = FloatRef::of(b, fout, "dense b")?.to_vec(0, fout);
    let mut yv = vec![0f32; n * fout];
    for row in yv.chunks_mut(fout) {
        row.copy_from_slice(&bv);
    }
    sgemm(n, fin, fout, &xv, fin, 1, &wv, 1, fin, 1.0, &mut yv);
    FloatMut::of(y, n * fout, "dense y")?.store(0, &yv);
    Ok(())
}

/// [`Backend::dense_bwd`](crate::backend::Backend::dense_bwd) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    x: &CpuBuf,
    w: &CpuBuf,
    dy: &CpuBuf,
    dx: &mut CpuBuf,
    dw: &mut CpuBuf,
    db: &mut CpuBuf,
    n: usize,
    fin: usize,
    fout: usize,
) -> Result<()> {
    let _span = crate::probe::span("dense_bwd");
    let xv = FloatRef::of(x, n * fin, "dense_bwd x")?.to_vec(0, n * fin);
    let wv = FloatRef::of(w, fin * fout, "dense_bwd w")?.to_vec(0, fin * fout);
    let dyv = FloatRef::of(dy, n * fout, "dense_bwd dy")?.to_vec(0, n * fout);
    let mut gw = vec![0f32; fout * fin];
    sgemm(fout, n, fin, &dyv, 1, fout, &xv, fin, 1, 0.0, &mut gw);
    let mut gb = vec![0f32; fout];
    for row in dyv.chunks(fout) {
        gb.iter_mut().zip(row).for_each(|(a, b)| *a += b);
    }
    let mut gx = vec![0f32; n * fin];
    sgemm(n, fout, fin, &dyv, fout, 1, &wv, fin, 1, 0.0, &mut gx);
    FloatMut::of(dw, fout * fin, "dense_bwd dw")?.store(0, &gw);
    FloatMut::of(db, fout, "dense_bwd db")?.store(0, &gb);
    FloatMut::of(dx, n * fin, "dense_bwd dx")?.store(0, &gx);
    Ok(())
}

/// [`Backend::softmax_xent`](crate::backend::Backend::softmax_xent) on the CPU.
#[allow(clippy::too_many_arguments)]
pub(super) fn softmax_xent(
    logits: &CpuBuf,
    labels: &CpuBuf,
    dlogits: Option<&mut CpuBuf>,
    n: usize,
    classes: usize,
    scaler: &CpuBuf,
    sums: &mut CpuBuf,
) -> Result<()> {
    let _span = crate::probe::span("softmax_xent");
    let z = FloatRef::of(logits, n * classes, "xent logits")?.to_vec(0, n * classes);
    let y = u8_of(labels, n, "xent labels")?;
    let scale = scaler_of(scaler)?.scale;
    let mut g = vec![0f32; n * classes];
    let mut loss = 0f64;
    let mut correct = 0u64;
    for i in 0..n {
        let row = &z[i * classes..(i + 1) * classes];
        let label = y[i] as usize;
        let (mut arg, mut max) = (0, f32::NEG_INFINITY);
        for (j, &v) in row.iter().enumerate() {
            if v > max {
                max = v;
                arg = j;
            }
        }
        let sum: f32 = row.iter().map(|&v| (v - max).exp()).sum();
        let lse = max + sum.ln();
        loss += (lse - row.get(label).copied().unwrap_or(f32::NAN)) as f64;
        correct += (arg == label) as u64;
        for j in 0..classes {
            let p = (row[j] - lse).exp();
            g[i * classes + j] = (p - (j == label) as u8 as f32) / n as f32 * scale;
        }
    }
    if let Some(d) = dlogits {
        FloatMut::of(d, n * classes, "xent dlogits")?.store(0, &g);
    }
    match &mut sums.storage {
        Storage::Sums(s) => {
            s.loss += loss;
            s.correct += correct;
            s.count += n as u64;
            s.last_loss = loss / n as f64;
            Ok(())
        }
        _ => Err(bad("xent: expected a sums buffer")),
    }
}
