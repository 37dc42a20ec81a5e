//! The CPU backend's tests: the 16-bit GEMM paths against the widening path.

use super::*;
use crate::backend::gemm16::{self, Kernel};
use crate::model::lab;
use crate::train::{init_params, TrainOptions, Trainer};
use rand::{Rng, SeedableRng};

/// The widen-then-`sgemm` path, and the 16-bit GEMM paths this CPU runs.
fn backends() -> (CpuBackend, Vec<(Kernel, CpuBackend)>) {
    let mut old = CpuBackend::new(Some(2)).unwrap();
    old.set_gemm16_for_tests(None, None);
    let mut kernels = vec![Kernel::Wide];
    if gemm16::bf16_dot_available() {
        kernels.push(Kernel::Bf16Dot);
    } else {
        eprintln!("no AVX512-BF16 on this CPU: only the widening GEMM is compared");
    }
    let news = kernels
        .into_iter()
        .map(|k| {
            let mut be = CpuBackend::new(Some(2)).unwrap();
            be.set_gemm16_for_tests(Some(k), Some(Kernel::Wide));
            (k, be)
        })
        .collect();
    (old, news)
}

/// max |a − b| / max |b|.
fn rel(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0f64, |m, v| m.max(v.abs() as f64)).max(1e-30);
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0f64, f64::max)
        / scale
}

#[test]
fn gemm16_conv_blocks_equal_the_widening_path_in_bf16_and_fp16() {
    let (old, news) = backends();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
    let n = 5; // more images than threads, and an odd split
    for s in [lab::CONV1, lab::CONV2] {
        let (ph, pw) = (s.h_out() / 2, s.w_out() / 2);
        let plen = s.c_out * ph * pw;
        let mut rv =
            |len: usize| -> Vec<f32> { (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
        let (x, w, b, g) = (
            rv(n * s.in_len()),
            rv(s.weight_len()),
            rv(s.c_out),
            rv(n * plen),
        );
        for dtype in [DType::Bf16, DType::F16] {
            for act in Activation::ALL {
                let up = |be: &CpuBackend, v: &[f32], dt: DType| {
                    let mut buf = be.alloc(dt, v.len()).unwrap();
                    be.upload(&mut buf, v).unwrap();
                    buf
                };
                // The old path: forward, then backward from its own mask.
                let mut out0 = old.alloc(dtype, n * plen).unwrap();
                let mut mask0 = old.alloc(DType::U8, n * plen).unwrap();
                let (xb, wb, bb) = (
                    up(&old, &x, dtype),
                    up(&old, &w, dtype),
                    up(&old, &b, DType::F32),
                );
                let gb = up(&old, &g, dtype);
                old.conv_block_fwd(&xb, &wb, &bb, &mut out0, &mut mask0, n, s, act)
                    .unwrap();
                let bwd = |be: &CpuBackend| {
                    let mut dw = be.alloc(dtype, s.weight_len()).unwrap();
                    let mut db = be.alloc(dtype, s.c_out).unwrap();
                    let mut dx = be.alloc(dtype, n * s.in_len()).unwrap();
                    be.upload(&mut dx, &vec![f32::NAN; n * s.in_len()]).unwrap();
                    be.conv_block_bwd(
                        &xb,
                        &wb,
                        &bb,
                        &mask0,
                        &gb,
                        &mut dw,
                        &mut db,
                        Some(&mut dx),
                        n,
                        s,
                        act,
                    )
                    .unwrap();
                    [dw, db, dx].map(|v| be.download(&v).unwrap())
                };
                let want_out = old.download(&out0).unwrap();
                let want = bwd(&old);
                for (kernel, be) in &news {
                    if dtype == DType::F16 && *kernel == Kernel::Bf16Dot {
                        continue; // fp16 always widens
                    }
                    let mut out = be.alloc(dtype, n * plen).unwrap();
                    be.upload(&mut out, &vec![f32::NAN; n * plen]).unwrap();
                    let mut mask = be.alloc(DType::U8, n * plen).unwrap();
                    be.conv_block_fwd(&xb, &wb, &bb, &mut out, &mut mask, n, s, act)
                        .unwrap();
                    let got = be.download(&out).unwrap();
                    // Only the f32 summation order differs: at most one rounding step of
                    // the storage dtype apart.
                    let tol = if dtype == DType::Bf16 { 1e-2 } else { 2e-3 };
                    let r = rel(&got, &want_out);
                    assert!(r < tol, "{kernel:?} {dtype:?} {act} {s:?} fwd {r}");
                    let got = bwd(be);
                    for (name, g, w) in [("dw", 0, 0), ("db", 1, 1), ("dx", 2, 2)]
                        .map(|(nm, i, j)| (nm, &got[i], &want[j]))
                    {
                        let r = rel(g, w);
                        assert!(r < tol, "{kernel:?} {dtype:?} {act} {s:?} {name} {r}");
                    }
                }
            }
        }
    }
}

#[test]
fn gemm16_training_step_gradients_equal_the_widening_path_in_bf16() {
    let (old, news) = backends();
    let d = crate::data::mnist_sample().unwrap();
    let (mut train, mut test) = (d.train.clone(), d.test.clone());
    train.truncate(24, 784);
    test.truncate(8, 784);
    let opts = TrainOptions {
        precision: Precision::Bf16,
        epochs: 1,
        batch: 12,
        adam: AdamParams::default(),
        seed: 5,
        dropout: 0.0,
        activation: Activation::Relu,
    };
    let grads = |be: &CpuBackend| {
        let mut t = Trainer::new(be, opts, &train, &test, &init_params(5)).unwrap();
        t.forward_backward(0, 12).unwrap();
        t.grads().unwrap()
    };
    let want = grads(&old);
    for (kernel, be) in &news {
        let got = grads(be);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(w.iter().any(|v| *v != 0.0), "parameter {i} has a gradient");
            let r = rel(g, w);
            assert!(r < 2e-2, "{kernel:?} parameter {i}: {r}");
        }
    }
}
