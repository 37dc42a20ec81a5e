//! From-scratch reference convolution: direct loops in f64, no unrolling, no GEMM. The tests
//! hold the fast paths (CPU im2col + GEMM today, GPU kernels tomorrow) against it.

use crate::model::{Activation, ConvShape};

/// Direct convolution forward: `y[n, c_out, ho, wo] = Σ x · w + b`.
pub fn conv2d_fwd(x: &[f64], w: &[f64], b: &[f64], n: usize, s: &ConvShape) -> Vec<f64> {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let mut y = vec![0.0; n * s.out_len()];
    for img in 0..n {
        for co in 0..s.c_out {
            for oy in 0..ho {
                for ox in 0..wo {
                    let mut acc = b[co];
                    for ci in 0..s.c_in {
                        for ky in 0..k {
                            for kx in 0..k {
                                acc += x[((img * s.c_in + ci) * s.h + oy + ky) * s.w + ox + kx]
                                    * w[((co * s.c_in + ci) * k + ky) * k + kx];
                            }
                        }
                    }
                    y[((img * s.c_out + co) * ho + oy) * wo + ox] = acc;
                }
            }
        }
    }
    y
}

/// Direct convolution backward: returns `(dx, dw, db)` from `dy[n, c_out, ho, wo]`.
pub fn conv2d_bwd(
    x: &[f64],
    w: &[f64],
    dy: &[f64],
    n: usize,
    s: &ConvShape,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let mut dx = vec![0.0; n * s.in_len()];
    let mut dw = vec![0.0; s.weight_len()];
    let mut db = vec![0.0; s.c_out];
    for img in 0..n {
        for co in 0..s.c_out {
            for oy in 0..ho {
                for ox in 0..wo {
                    let g = dy[((img * s.c_out + co) * ho + oy) * wo + ox];
                    db[co] += g;
                    for ci in 0..s.c_in {
                        for ky in 0..k {
                            for kx in 0..k {
                                let xi = ((img * s.c_in + ci) * s.h + oy + ky) * s.w + ox + kx;
                                let wi = ((co * s.c_in + ci) * k + ky) * k + kx;
                                dw[wi] += g * x[xi];
                                dx[xi] += g * w[wi];
                            }
                        }
                    }
                }
            }
        }
    }
    (dx, dw, db)
}

/// Activation then 2×2 max-pool (floor), NCHW: `out = maxpool2(act(y))`; the maximum is taken
/// after the activation, since GELU and Swish are not monotonic.
pub fn act_maxpool2(
    y: &[f64],
    act: Activation,
    n: usize,
    c: usize,
    h: usize,
    w: usize,
) -> Vec<f64> {
    let (ph, pw) = (h / 2, w / 2);
    let mut out = vec![0.0; n * c * ph * pw];
    for p in 0..n * c {
        for py in 0..ph {
            for px in 0..pw {
                let mut m = f64::NEG_INFINITY;
                for dy in 0..2 {
                    for dx in 0..2 {
                        m = m.max(act.apply(y[(p * h + 2 * py + dy) * w + 2 * px + dx]));
                    }
                }
                out[(p * ph + py) * pw + px] = m;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::{col2im, conv2d_im2col_fwd, CpuBackend};
    use crate::backend::{Backend, DType};
    use rand::{Rng, SeedableRng};

    fn rand_vec(rng: &mut impl Rng, len: usize) -> Vec<f64> {
        (0..len).map(|_| rng.random_range(-1.0..1.0)).collect()
    }
    fn f32s(v: &[f64]) -> Vec<f32> {
        v.iter().map(|&x| x as f32).collect()
    }
    fn max_rel(a: &[f32], b: &[f64]) -> f64 {
        let scale = b.iter().fold(1e-6f64, |m, v| m.max(v.abs()));
        a.iter()
            .zip(b)
            .map(|(&x, &y)| (x as f64 - y).abs() / scale)
            .fold(0.0, f64::max)
    }

    const SHAPES: [ConvShape; 3] = [
        ConvShape {
            c_in: 1,
            c_out: 3,
            h: 7,
            w: 9,
            k: 3,
        },
        ConvShape {
            c_in: 4,
            c_out: 5,
            h: 8,
            w: 6,
            k: 3,
        },
        ConvShape {
            c_in: 2,
            c_out: 3,
            h: 11,
            w: 10,
            k: 5,
        },
    ];

    #[test]
    fn im2col_conv_matches_the_direct_conv() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
        for s in SHAPES {
            let (x, w, b) = (
                rand_vec(&mut rng, s.in_len()),
                rand_vec(&mut rng, s.weight_len()),
                rand_vec(&mut rng, s.c_out),
            );
            let want = conv2d_fwd(&x, &w, &b, 1, &s);
            let mut col = vec![0f32; s.patch_len() * s.out_pixels()];
            let mut y = vec![f32::NAN; s.out_len()];
            conv2d_im2col_fwd(&f32s(&x), &f32s(&w), &f32s(&b), &s, &mut col, &mut y);
            assert!(max_rel(&y, &want) < 1e-5, "{s:?}: {}", max_rel(&y, &want));
        }
    }

    #[test]
    fn col2im_is_the_adjoint_of_im2col() {
        // <im2col(x), c> == <x, col2im(c)> for random x, c.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
        for s in SHAPES {
            let x = f32s(&rand_vec(&mut rng, s.in_len()));
            let c = f32s(&rand_vec(&mut rng, s.patch_len() * s.out_pixels()));
            let mut col = vec![0f32; c.len()];
            crate::backend::cpu::im2col(&x, &s, &mut col);
            let mut back = vec![0f32; x.len()];
            col2im(&c, &s, &mut back);
            let lhs: f64 = col
                .iter()
                .zip(&c)
                .map(|(a, b)| (*a as f64) * (*b as f64))
                .sum();
            let rhs: f64 = x
                .iter()
                .zip(&back)
                .map(|(a, b)| (*a as f64) * (*b as f64))
                .sum();
            assert!(
                (lhs - rhs).abs() < 1e-3 * lhs.abs().max(1.0),
                "{lhs} vs {rhs}"
            );
        }
    }

    /// The backend's conv block (conv + bias + ReLU + pool) forward and backward against the
    /// direct f64 reference, in FP32 and in FP16 storage.
    #[test]
    fn conv_block_matches_the_reference_forward_and_backward() {
        let be = CpuBackend::new(Some(2)).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
        for (act, (dtype, tol), s) in Activation::ALL.into_iter().flat_map(|a| {
            [(DType::F32, 1e-5), (DType::F16, 5e-3)]
                .into_iter()
                .flat_map(move |d| SHAPES.into_iter().map(move |s| (a, d, s)))
        }) {
            {
                let n = 3;
                let (x, w, b) = (
                    rand_vec(&mut rng, n * s.in_len()),
                    rand_vec(&mut rng, s.weight_len()),
                    rand_vec(&mut rng, s.c_out),
                );
                let (ph, pw) = (s.h_out() / 2, s.w_out() / 2);
                let plen = s.c_out * ph * pw;
                let up = |v: &[f64], dt: DType| {
                    let mut buf = be.alloc(dt, v.len()).unwrap();
                    be.upload(&mut buf, &f32s(v)).unwrap();
                    buf
                };
                // Round the inputs to the storage dtype first so the reference sees the same values.
                let xq: Vec<f64> = be
                    .download(&up(&x, dtype))
                    .unwrap()
                    .iter()
                    .map(|&v| v as f64)
                    .collect();
                let wq: Vec<f64> = be
                    .download(&up(&w, dtype))
                    .unwrap()
                    .iter()
                    .map(|&v| v as f64)
                    .collect();
                let (xb, wb, bb) = (up(&xq, dtype), up(&wq, dtype), up(&b, DType::F32));
                let mut out = be.alloc(dtype, n * plen).unwrap();
                be.upload(&mut out, &vec![f32::NAN; n * plen]).unwrap(); // poison
                let mut mask = be.alloc(DType::U8, n * plen).unwrap();
                be.conv_block_fwd(&xb, &wb, &bb, &mut out, &mut mask, n, s, act)
                    .unwrap();
                let z = conv2d_fwd(&xq, &wq, &b, n, &s);
                let want = act_maxpool2(&z, act, n, s.c_out, s.h_out(), s.w_out());
                let got = be.download(&out).unwrap();
                assert!(
                    max_rel(&got, &want) < tol,
                    "{act} {dtype:?} {s:?} fwd {}",
                    max_rel(&got, &want)
                );

                // Backward from a random upstream gradient.
                let g = rand_vec(&mut rng, n * plen);
                let gq: Vec<f64> = be
                    .download(&up(&g, dtype))
                    .unwrap()
                    .iter()
                    .map(|&v| v as f64)
                    .collect();
                let gb = up(&gq, dtype);
                // Reference: route g · act'(z) to the window maxima of act(z), then conv backward.
                let (ho, wo) = (s.h_out(), s.w_out());
                let mut dz = vec![0.0; z.len()];
                for p in 0..n * s.c_out {
                    for py in 0..ph {
                        for px in 0..pw {
                            let mut best = (0, 0);
                            for dy in 0..2 {
                                for dx in 0..2 {
                                    let (by, bx) = best;
                                    if act.apply(z[(p * ho + 2 * py + dy) * wo + 2 * px + dx])
                                        > act.apply(z[(p * ho + 2 * py + by) * wo + 2 * px + bx])
                                    {
                                        best = (dy, dx);
                                    }
                                }
                            }
                            let at = (p * ho + 2 * py + best.0) * wo + 2 * px + best.1;
                            dz[at] = gq[(p * ph + py) * pw + px] * act.derivative(z[at]);
                        }
                    }
                }
                let (dx_ref, dw_ref, db_ref) = conv2d_bwd(&xq, &wq, &dz, n, &s);
                let mut dw = be.alloc(dtype, s.weight_len()).unwrap();
                let mut db = be.alloc(dtype, s.c_out).unwrap();
                let mut dx = be.alloc(dtype, n * s.in_len()).unwrap();
                be.upload(&mut dx, &vec![f32::NAN; n * s.in_len()]).unwrap();
                be.conv_block_bwd(
                    &xb,
                    &wb,
                    &bb,
                    &mask,
                    &gb,
                    &mut dw,
                    &mut db,
                    Some(&mut dx),
                    n,
                    s,
                    act,
                )
                .unwrap();
                for (name, got, want) in [
                    ("dw", &dw, &dw_ref),
                    ("db", &db, &db_ref),
                    ("dx", &dx, &dx_ref),
                ] {
                    let got = be.download(got).unwrap();
                    assert!(
                        max_rel(&got, want) < tol,
                        "{act} {dtype:?} {s:?} {name} {}",
                        max_rel(&got, want)
                    );
                }
            }
        }
    }

    /// Finite differences of the direct reference itself: L = Σ dy · conv(x, w, b).
    #[test]
    fn reference_backward_matches_finite_differences() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
        let s = ConvShape {
            c_in: 2,
            c_out: 2,
            h: 5,
            w: 4,
            k: 3,
        };
        let n = 2;
        let (x, w, b) = (
            rand_vec(&mut rng, n * s.in_len()),
            rand_vec(&mut rng, s.weight_len()),
            rand_vec(&mut rng, s.c_out),
        );
        let dy = rand_vec(&mut rng, n * s.out_len());
        let loss = |x: &[f64], w: &[f64], b: &[f64]| -> f64 {
            conv2d_fwd(x, w, b, n, &s)
                .iter()
                .zip(&dy)
                .map(|(a, g)| a * g)
                .sum()
        };
        let (dx, dw, db) = conv2d_bwd(&x, &w, &dy, n, &s);
        let h = 1e-6;
        for i in 0..x.len() {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (loss(&xp, &w, &b) - loss(&xm, &w, &b)) / (2.0 * h);
            assert!((fd - dx[i]).abs() < 1e-6, "dx[{i}] {fd} vs {}", dx[i]);
        }
        for i in 0..w.len() {
            let (mut wp, mut wm) = (w.clone(), w.clone());
            wp[i] += h;
            wm[i] -= h;
            let fd = (loss(&x, &wp, &b) - loss(&x, &wm, &b)) / (2.0 * h);
            assert!((fd - dw[i]).abs() < 1e-6, "dw[{i}] {fd} vs {}", dw[i]);
        }
        for i in 0..b.len() {
            let (mut bp, mut bm) = (b.clone(), b.clone());
            bp[i] += h;
            bm[i] -= h;
            let fd = (loss(&x, &w, &bp) - loss(&x, &w, &bm)) / (2.0 * h);
            assert!((fd - db[i]).abs() < 1e-6, "db[{i}] {fd} vs {}", db[i]);
        }
    }
}
