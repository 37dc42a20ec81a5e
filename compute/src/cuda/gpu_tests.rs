//! GPU tests: every CUDA primitive against the CPU backend on fresh random inputs (outputs
//! poisoned first), and GPU training against CPU training.
//!
//! Every GPU test (here, in `conv_ladder` and in `infer`) is `#[ignore]`d with the reason
//! "needs a GPU", so that a plain `cargo test` lists it as ignored instead of counting it as
//! passed. On a GPU machine:
//!
//! ```text
//! SHOWDOWN_REQUIRE_GPU=1 cargo test -p compute --features cuda --lib cuda:: -- --include-ignored
//! ```
//!
//! runs them; with `SHOWDOWN_REQUIRE_GPU` set, a GPU that cannot be opened fails them (without
//! it, they print why they skipped and return).

use rand::{Rng, SeedableRng};

use super::CudaBackend;
use crate::backend::cpu::CpuBackend;
use crate::backend::{AdamParams, Backend, DType, ScalerState};
use crate::model::{lab, Activation, ConvShape};
use crate::types::Precision;

/// Why an included GPU test cannot run: a failure where `SHOWDOWN_REQUIRE_GPU` is set (the GPU
/// machine), else a printed skip.
pub(super) fn no_gpu(e: impl std::fmt::Display) {
    assert!(
        std::env::var_os("SHOWDOWN_REQUIRE_GPU").is_none(),
        "SHOWDOWN_REQUIRE_GPU is set but no usable GPU: {e}"
    );
    eprintln!("skipped: no usable GPU: {e}");
}

fn gpu_or_skip() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            no_gpu(e);
            None
        }
    }
}

fn rand_vec(rng: &mut impl Rng, len: usize, scale: f32) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-scale..scale)).collect()
}

/// Max |a − b| relative to max |b|.
fn rel(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if x.is_nan() || y.is_nan() {
                f32::INFINITY
            } else {
                (x - y).abs() / scale
            }
        })
        .fold(0.0, f32::max)
}

fn tol(d: DType) -> f32 {
    match d {
        DType::F32 => 2e-5,
        DType::F16 => 4e-3,
        _ => 3e-2,
    }
}

/// Both backends of a comparison test.
struct Pair {
    cpu: CpuBackend,
    gpu: CudaBackend,
}

/// The two backends and a freshly seeded generator, or `None` (a skip, or a failure where
/// `SHOWDOWN_REQUIRE_GPU` is set) without a GPU.
fn pair_or_skip() -> Option<(Pair, rand_chacha::ChaCha8Rng)> {
    let gpu = gpu_or_skip()?;
    let cpu = CpuBackend::new(None).unwrap();
    let rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
    Some((Pair { cpu, gpu }, rng))
}

impl Pair {
    fn up(&self, d: DType, v: &[f32]) -> (crate::backend::cpu::CpuBuf, super::CudaBuf) {
        let mut c = self.cpu.alloc(d, v.len()).unwrap();
        self.cpu.upload(&mut c, v).unwrap();
        let mut g = self.gpu.alloc(d, v.len()).unwrap();
        self.gpu.upload(&mut g, v).unwrap();
        (c, g)
    }
    /// Output buffers poisoned with NaN (for float dtypes) so unwritten elements fail.
    fn out(&self, d: DType, len: usize) -> (crate::backend::cpu::CpuBuf, super::CudaBuf) {
        let poison = vec![
            if matches!(d, DType::U8 | DType::U32) {
                0.0
            } else {
                f32::NAN
            };
            len
        ];
        self.up(d, &poison)
    }
}

/// One convolution block forward and backward on both backends from the same random inputs
/// (outputs poisoned), compared relative to the largest value: forward within `tol_fwd`, the
/// weight, bias and input gradients within `tol_bwd`. The backward pass uses the CPU's mask on
/// both sides (near-ties may pick another window element).
#[allow(clippy::too_many_arguments)]
fn check_conv_block(
    p: &Pair,
    rng: &mut impl Rng,
    d: DType,
    s: ConvShape,
    n: usize,
    tol_fwd: f32,
    tol_bwd: f32,
    label: &str,
    act: Activation,
) {
    let (cpu, gpu) = (&p.cpu, &p.gpu);
    let pooled = s.c_out * (s.h_out() / 2) * (s.w_out() / 2);
    let (xc, xg) = p.up(d, &rand_vec(rng, n * s.in_len(), 1.0));
    let (wc, wg) = p.up(d, &rand_vec(rng, s.weight_len(), 0.3));
    let (bc, bg) = p.up(DType::F32, &rand_vec(rng, s.c_out, 0.1));
    let (mut oc, mut og) = p.out(d, n * pooled);
    let (mut mc, mut mg) = p.out(DType::U8, n * pooled);
    cpu.conv_block_fwd(&xc, &wc, &bc, &mut oc, &mut mc, n, s, act)
        .unwrap();
    gpu.conv_block_fwd(&xg, &wg, &bg, &mut og, &mut mg, n, s, act)
        .unwrap();
    let e = rel(&gpu.download(&og).unwrap(), &cpu.download(&oc).unwrap());
    assert!(e < tol_fwd, "{label} {act:?} {s:?} n={n} forward: {e}");
    if act != Activation::Relu {
        // GELU and Swish never cut a window: every mask entry names its maximum (0–3).
        let m = gpu.download(&mg).unwrap();
        assert!(
            m.iter().all(|&v| v < 4.0),
            "{label} {act:?}: a mask entry is 4"
        );
    }
    let mask = cpu.download(&mc).unwrap();
    let (mc2, mg2) = p.up(DType::U8, &mask);
    let (gc, gg) = p.up(d, &rand_vec(rng, n * pooled, 1.0));
    let (mut dwc, mut dwg) = p.out(d, s.weight_len());
    let (mut dbc, mut dbg) = p.out(d, s.c_out);
    let (mut dxc, mut dxg) = p.out(d, n * s.in_len());
    cpu.conv_block_bwd(
        &xc,
        &wc,
        &bc,
        &mc2,
        &gc,
        &mut dwc,
        &mut dbc,
        Some(&mut dxc),
        n,
        s,
        act,
    )
    .unwrap();
    gpu.conv_block_bwd(
        &xg,
        &wg,
        &bg,
        &mg2,
        &gg,
        &mut dwg,
        &mut dbg,
        Some(&mut dxg),
        n,
        s,
        act,
    )
    .unwrap();
    for (name, g, c) in [("dw", &dwg, &dwc), ("db", &dbg, &dbc), ("dx", &dxg, &dxc)] {
        let e = rel(&gpu.download(g).unwrap(), &cpu.download(c).unwrap());
        assert!(e < tol_bwd, "{label} {act:?} {s:?} n={n} {name}: {e}");
    }
}

#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn conv_blocks_match_the_cpu_backend() {
    let Some((p, mut rng)) = pair_or_skip() else {
        return;
    };
    let gpu = &p.gpu;
    // The lab's conv2 runs on tensor cores in FP16/BF16, conv1's weight gradient per image on
    // the CUDA cores in every precision.
    for p in [Precision::Fp16, Precision::Bf16] {
        assert_eq!(
            gpu.conv_kernels(lab::CONV2, p),
            ["conv_mma_fwd", "conv_mma_bwd_data", "conv_mma_bwd_filter"]
        );
        assert_eq!(gpu.conv_kernels(lab::CONV1, p)[2], "conv_wgrad_c1");
    }
    // Strict FP32: the same skeleton on the CUDA cores.
    assert_eq!(
        gpu.conv_kernels(lab::CONV2, Precision::Fp32),
        [
            "conv_igemm_fwd",
            "conv_igemm_bwd_data",
            "conv_igemm_bwd_filter"
        ]
    );
    assert_eq!(
        gpu.conv_kernels(lab::CONV1, Precision::Fp32),
        ["conv_block_fwd", "conv_block_bwd_data", "conv_wgrad_c1"]
    );
    assert_eq!(
        gpu.conv_kernels(lab::CONV2, Precision::Tf32),
        ["conv_mma_fwd", "conv_mma_bwd_data", "conv_mma_bwd_filter"]
    );
    check_every_conv_path(&p, &mut rng, Activation::Relu, 3);
}

/// [`check_conv_block`] with activation `act` on TF32 (conv2: FP32 buffers, tensor-core math
/// with 10-bit significands, against the CPU's FP32), then every dtype on conv1, conv2 (5 and
/// 140 images: more than an H100's 132 SMs, so some weight-gradient blocks take two) and an
/// odd shape with kernel size `odd_k` (the CUDA-core kernels).
fn check_every_conv_path(p: &Pair, rng: &mut impl Rng, act: Activation, odd_k: usize) {
    let odd = ConvShape {
        c_in: 3,
        c_out: 5,
        h: 9,
        w: 12,
        k: odd_k,
    };
    p.gpu.set_precision(Precision::Tf32);
    for n in [5, 140] {
        check_conv_block(p, rng, DType::F32, lab::CONV2, n, 4e-3, 1e-2, "tf32", act);
    }
    p.gpu.set_precision(Precision::Fp32);
    for d in [DType::F32, DType::F16, DType::Bf16] {
        for (s, n) in [
            (lab::CONV1, 7),
            (lab::CONV2, 5),
            (lab::CONV2, 140),
            (odd, 3),
        ] {
            check_conv_block(
                p,
                rng,
                d,
                s,
                n,
                tol(d),
                tol(d) * 4.0,
                &format!("{d:?}"),
                act,
            );
        }
    }
}

/// GELU and Swish in the conv blocks: the activation applied before the pool's maximum, and
/// the backward pass (`act_route` + the same backward kernels) against the CPU backend, on
/// the CUDA-core and tensor-core paths, every dtype and TF32.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn gelu_and_swish_conv_blocks_match_the_cpu_backend() {
    let Some((p, mut rng)) = pair_or_skip() else {
        return;
    };
    for act in [Activation::Gelu, Activation::Swish] {
        check_every_conv_path(&p, &mut rng, act, 5);
    }
}

#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn dense_softmax_dropout_and_adam_match_the_cpu_backend() {
    let Some((p, mut rng)) = pair_or_skip() else {
        return;
    };
    let (cpu, gpu) = (&p.cpu, &p.gpu);
    for d in [DType::F32, DType::F16, DType::Bf16] {
        let (n, fin, fout) = (37, 1600, 10);
        let (xc, xg) = p.up(d, &rand_vec(&mut rng, n * fin, 1.0));
        let (wc, wg) = p.up(d, &rand_vec(&mut rng, fin * fout, 0.05));
        let (bc, bg) = p.up(DType::F32, &rand_vec(&mut rng, fout, 0.05));
        let (mut yc, mut yg) = p.out(d, n * fout);
        cpu.dense_fwd(&xc, &wc, &bc, &mut yc, n, fin, fout).unwrap();
        gpu.dense_fwd(&xg, &wg, &bg, &mut yg, n, fin, fout).unwrap();
        let e = rel(&gpu.download(&yg).unwrap(), &cpu.download(&yc).unwrap());
        assert!(e < tol(d), "{d:?} dense fwd {e}");

        // Softmax cross-entropy with a scale, from the same logits.
        let labels: Vec<f32> = (0..n).map(|_| rng.random_range(0..10) as f32).collect();
        let (lc, lg) = p.up(DType::U8, &labels);
        let st = ScalerState {
            scale: 1024.0,
            ..ScalerState::new(true)
        };
        let (sc, sg) = (cpu.scaler_new(st).unwrap(), gpu.scaler_new(st).unwrap());
        let (mut sumc, mut sumg) = (cpu.sums_new().unwrap(), gpu.sums_new().unwrap());
        let (mut dzc, mut dzg) = p.out(d, n * fout);
        cpu.softmax_xent(&yc, &lc, Some(&mut dzc), n, fout, &sc, &mut sumc)
            .unwrap();
        gpu.softmax_xent(&yg, &lg, Some(&mut dzg), n, fout, &sg, &mut sumg)
            .unwrap();
        let e = rel(&gpu.download(&dzg).unwrap(), &cpu.download(&dzc).unwrap());
        assert!(e < tol(d) * 2.0, "{d:?} dlogits {e}");
        let (a, b) = (
            gpu.sums_take(&mut sumg).unwrap(),
            cpu.sums_take(&mut sumc).unwrap(),
        );
        assert!(
            (a.loss - b.loss).abs() < 1e-3 * b.loss.abs().max(1.0),
            "{d:?} loss {} vs {}",
            a.loss,
            b.loss
        );
        assert_eq!((a.correct, a.count), (b.correct, b.count));

        // Dense backward from the same dlogits.
        let (mut dxc, mut dxg) = p.out(d, n * fin);
        let (mut dwc, mut dwg) = p.out(d, fin * fout);
        let (mut dbc, mut dbg) = p.out(d, fout);
        let (gc, gg) = p.up(d, &cpu.download(&dzc).unwrap());
        cpu.dense_bwd(&xc, &wc, &gc, &mut dxc, &mut dwc, &mut dbc, n, fin, fout)
            .unwrap();
        gpu.dense_bwd(&xg, &wg, &gg, &mut dxg, &mut dwg, &mut dbg, n, fin, fout)
            .unwrap();
        for (name, g, c) in [("dx", &dxg, &dxc), ("dw", &dwg, &dwc), ("db", &dbg, &dbc)] {
            let e = rel(&gpu.download(g).unwrap(), &cpu.download(c).unwrap());
            assert!(e < tol(d) * 4.0, "{d:?} dense {name} {e}");
        }

        // Dropout: the GPU's own mask, checked for rate and consistency.
        let len = 64 * 1600 + 3;
        let xs = rand_vec(&mut rng, len, 1.0);
        let (_, xg) = p.up(d, &xs);
        let (_, mut og) = p.out(d, len);
        let (_, mut mg) = p.out(DType::U8, len);
        let mut cursor = gpu.alloc(DType::U32, crate::backend::CURSOR_WORDS).unwrap();
        gpu.cursor_set(&mut cursor, 0, 3).unwrap();
        gpu.dropout_fwd(&xg, &mut og, &mut mg, len, 0.5, 7, &cursor)
            .unwrap();
        let (o, m, xr) = (
            gpu.download(&og).unwrap(),
            gpu.download(&mg).unwrap(),
            gpu.download(&xg).unwrap(),
        );
        let kept = m.iter().filter(|&&v| v == 1.0).count() as f64 / len as f64;
        assert!((kept - 0.5).abs() < 0.01, "{d:?} dropout keeps {kept}");
        for i in 0..len {
            let want = if m[i] == 1.0 { xr[i] * 2.0 } else { 0.0 };
            assert!(
                (o[i] - want).abs() <= tol(d) * want.abs().max(1.0),
                "{d:?} dropout[{i}] {} vs {want}",
                o[i]
            );
        }
        let (_, mut og2) = p.out(d, len);
        let (_, mut mg2) = p.out(DType::U8, len);
        gpu.cursor_advance(&mut cursor).unwrap();
        gpu.dropout_fwd(&xg, &mut og2, &mut mg2, len, 0.5, 7, &cursor)
            .unwrap();
        assert_ne!(
            gpu.download(&mg2).unwrap(),
            m,
            "a new counter must draw a new mask"
        );

        // Adam from the same grads, with the copy refreshed.
        let init = rand_vec(&mut rng, 1000, 0.5);
        let grad = rand_vec(&mut rng, 1000, 100.0);
        let (mut pc, mut pg) = p.up(DType::F32, &init);
        let (gc, gg) = p.up(d, &grad);
        let (mut m1c, mut m1g) = p.up(DType::F32, &vec![0.0; 1000]);
        let (mut v1c, mut v1g) = p.up(DType::F32, &vec![0.0; 1000]);
        let (mut cc, mut cg) = p.out(d, 1000);
        let hp = AdamParams::default();
        cpu.adam(&mut pc, &gc, &mut m1c, &mut v1c, Some(&mut cc), hp, &sc)
            .unwrap();
        gpu.adam(&mut pg, &gg, &mut m1g, &mut v1g, Some(&mut cg), hp, &sg)
            .unwrap();
        let e = rel(&gpu.download(&pg).unwrap(), &cpu.download(&pc).unwrap());
        assert!(e < 1e-5, "{d:?} adam params {e}");
        let e = rel(&gpu.download(&cg).unwrap(), &cpu.download(&cc).unwrap());
        assert!(e < tol(d), "{d:?} adam copy {e}");
    }
}

/// The fused head (`head_train_*`: dropout, dense, softmax cross-entropy and the gradients in
/// one launch, then `dense_bwd_w`) against the unfused launches on the same device, from the
/// same inputs: the dropout mask and the dropped features bit for bit (the same Philox draws),
/// the rest within a few roundings (the dense sums run in another order). Twice in a row, so
/// that the last-block ticket is seen reset and the loss sums add up; with a row length that is
/// not a multiple of 4, so that Philox groups straddle rows.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn the_fused_head_matches_the_unfused_launches() {
    use crate::backend::{HeadDropout, HeadStep};
    let Some(gpu) = gpu_or_skip() else { return };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
    let up = |d: DType, v: &[f32]| {
        let mut b = gpu.alloc(d, v.len()).unwrap();
        gpu.upload(&mut b, v).unwrap();
        b
    };
    let poison = |d: DType, len: usize| up(d, &vec![f32::NAN; len]);
    for d in [DType::F32, DType::F16, DType::Bf16] {
        for (n, fin, p) in [(37, 1600, 0.5f32), (37, 1603, 0.3), (128, 1600, 0.0)] {
            let fout = 10;
            let feat = up(d, &rand_vec(&mut rng, n * fin, 1.0));
            let w = up(d, &rand_vec(&mut rng, fin * fout, 0.05));
            let b = up(DType::F32, &rand_vec(&mut rng, fout, 0.05));
            let labels: Vec<f32> = (0..n).map(|_| rng.random_range(0..10) as f32).collect();
            let labels = up(DType::U8, &labels);
            let st = ScalerState {
                scale: 1024.0,
                ..ScalerState::new(true)
            };
            let scaler = gpu.scaler_new(st).unwrap();
            let mut cursor = gpu.alloc(DType::U32, crate::backend::CURSOR_WORDS).unwrap();
            gpu.cursor_set(&mut cursor, 0, 11).unwrap();
            let label = format!("{d:?} n={n} fin={fin} p={p}");

            // Unfused: the separate launches the default head runs.
            let mut sums_u = gpu.sums_new().unwrap();
            let (mut drop_u, mut mask_u) = (poison(d, n * fin), up(DType::U8, &vec![7.0; n * fin]));
            let x_u = if p > 0.0 {
                gpu.dropout_fwd(&feat, &mut drop_u, &mut mask_u, n * fin, p, 5, &cursor)
                    .unwrap();
                &drop_u
            } else {
                &feat
            };
            let mut logits_u = poison(d, n * fout);
            gpu.dense_fwd(x_u, &w, &b, &mut logits_u, n, fin, fout)
                .unwrap();
            let mut dlogits_u = poison(d, n * fout);
            let (mut dfeat_u, mut dx_u) = (poison(d, n * fin), poison(d, n * fin));
            let (mut dw_u, mut db_u) = (poison(d, fin * fout), poison(d, fout));
            for _ in 0..2 {
                gpu.softmax_xent(
                    &logits_u,
                    &labels,
                    Some(&mut dlogits_u),
                    n,
                    fout,
                    &scaler,
                    &mut sums_u,
                )
                .unwrap();
            }
            gpu.dense_bwd(
                x_u,
                &w,
                &dlogits_u,
                &mut dfeat_u,
                &mut dw_u,
                &mut db_u,
                n,
                fin,
                fout,
            )
            .unwrap();
            if p > 0.0 {
                gpu.dropout_bwd(&dfeat_u, &mask_u, &mut dx_u, n * fin, p)
                    .unwrap();
            } else {
                dx_u = dfeat_u;
            }

            // Fused, twice (the same inputs and cursor: the same results, the sums doubled).
            let mut sums_f = gpu.sums_new().unwrap();
            let (mut drop_f, mut mask_f) = (poison(d, n * fin), up(DType::U8, &vec![7.0; n * fin]));
            let (mut logits_f, mut dlogits_f) = (poison(d, n * fout), poison(d, n * fout));
            let (mut dfeat_f, mut dx_f) = (poison(d, n * fin), poison(d, n * fin));
            let (mut dw_f, mut db_f) = (poison(d, fin * fout), poison(d, fout));
            for _ in 0..2 {
                let dropout = (p > 0.0).then_some(HeadDropout {
                    out: &mut drop_f,
                    mask: &mut mask_f,
                    p,
                    seed: 5,
                });
                gpu.head_train(HeadStep {
                    feat: &feat,
                    w: &w,
                    b: &b,
                    dropout,
                    cursor: &cursor,
                    labels: &labels,
                    logits: &mut logits_f,
                    dlogits: &mut dlogits_f,
                    dfeat: &mut dfeat_f,
                    dx: &mut dx_f,
                    dw: &mut dw_f,
                    db: &mut db_f,
                    n,
                    fin,
                    fout,
                    scaler: &scaler,
                    sums: &mut sums_f,
                })
                .unwrap();
            }
            if p > 0.0 {
                assert_eq!(
                    gpu.download(&mask_f).unwrap(),
                    gpu.download(&mask_u).unwrap(),
                    "{label} mask"
                );
                assert_eq!(
                    gpu.download(&drop_f).unwrap(),
                    gpu.download(&drop_u).unwrap(),
                    "{label} dropped"
                );
            }
            for (name, f, u, t) in [
                ("logits", &logits_f, &logits_u, 2.0),
                ("dlogits", &dlogits_f, &dlogits_u, 4.0),
                ("dx", &dx_f, &dx_u, 8.0),
                ("dw", &dw_f, &dw_u, 8.0),
                ("db", &db_f, &db_u, 8.0),
            ] {
                let e = rel(&gpu.download(f).unwrap(), &gpu.download(u).unwrap());
                assert!(e < tol(d) * t, "{label} {name}: {e}");
            }
            let (a, b) = (
                gpu.sums_take(&mut sums_f).unwrap(),
                gpu.sums_take(&mut sums_u).unwrap(),
            );
            assert!(
                (a.loss - b.loss).abs() < 1e-3 * b.loss.abs().max(1.0),
                "{label} loss {} vs {}",
                a.loss,
                b.loss
            );
            assert_eq!(
                (a.correct, a.count),
                (b.correct, b.count),
                "{label} correct, count"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn the_scaler_skips_and_backs_off_on_the_device() {
    let Some(gpu) = gpu_or_skip() else { return };
    let mut sg = gpu.scaler_new(ScalerState::new(true)).unwrap();
    let mut good = gpu.alloc(DType::F16, 10).unwrap();
    gpu.upload(&mut good, &[1.0; 10]).unwrap();
    let mut bad = gpu.alloc(DType::F16, 10).unwrap();
    gpu.upload(
        &mut bad,
        &[1.0, 1e6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    )
    .unwrap(); // 1e6 overflows f16 to inf
    gpu.check_finite(&[&good], &mut sg).unwrap();
    gpu.scaler_update(&mut sg).unwrap();
    let s = gpu.scaler_read(&sg).unwrap();
    assert_eq!((s.scale, s.step, s.skipped), (65536.0, 1, 0));
    // A skipped step leaves the parameters alone.
    let mut p = gpu.alloc(DType::F32, 10).unwrap();
    gpu.upload(&mut p, &[0.5; 10]).unwrap();
    let (mut m, mut v) = (
        gpu.alloc(DType::F32, 10).unwrap(),
        gpu.alloc(DType::F32, 10).unwrap(),
    );
    gpu.check_finite(&[&good, &bad], &mut sg).unwrap();
    gpu.adam(
        &mut p,
        &bad,
        &mut m,
        &mut v,
        None,
        AdamParams::default(),
        &sg,
    )
    .unwrap();
    gpu.scaler_update(&mut sg).unwrap();
    let s = gpu.scaler_read(&sg).unwrap();
    assert_eq!(
        (s.scale, s.step, s.skipped, s.found_inf),
        (32768.0, 1, 1, false)
    );
    assert_eq!(gpu.download(&p).unwrap(), vec![0.5; 10]);
}

/// One epoch of batches of 64, seed 11, dropout off, ReLU: the side-by-side training tests'.
fn side_by_side_options(precision: Precision) -> crate::train::TrainOptions {
    crate::train::TrainOptions {
        precision,
        epochs: 1,
        batch: 64,
        adam: AdamParams::default(),
        seed: 11,
        dropout: 0.0,
        activation: Activation::Relu,
    }
}

/// The CPU's and the GPU's trainers of `precision` from the same initial weights (seed 11) and
/// batches of 64 on the MNIST sample, dropout off, after 50 steps side by side, with their
/// last losses (CPU, GPU).
fn cpu_and_gpu_after_50_steps<'g>(
    cpu: &'g CpuBackend,
    gpu: &'g CudaBackend,
    precision: Precision,
) -> (
    crate::train::Trainer<'g, CpuBackend>,
    crate::train::Trainer<'g, CudaBackend>,
    (f64, f64),
) {
    use crate::train::{init_params, Trainer};
    let d = crate::data::mnist_sample().unwrap();
    let opts = side_by_side_options(precision);
    let init = init_params(11);
    let mut tc = Trainer::new(cpu, opts, &d.train, &d.test, &init).unwrap();
    let mut tg = Trainer::new(gpu, opts, &d.train, &d.test, &init).unwrap();
    let mut last = (0.0, 0.0);
    for s in 0..50 {
        tc.step(s, 64).unwrap();
        tg.step(s, 64).unwrap();
        last = (tc.last_loss().unwrap(), tg.last_loss().unwrap());
    }
    (tc, tg, last)
}

/// GPU FP32 training from the same initial weights and batch order tracks the CPU's loss
/// (dropout off): within 1e-3 after 50 steps.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn gpu_fp32_training_tracks_the_cpu() {
    let Some(gpu) = gpu_or_skip() else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let (_, _, last) = cpu_and_gpu_after_50_steps(&cpu, &gpu, Precision::Fp32);
    assert!(
        (last.0 - last.1).abs() < 1e-3,
        "after 50 steps: CPU loss {} vs GPU loss {}",
        last.0,
        last.1
    );
    assert!(
        last.0 < 1.0,
        "the model should have learnt something: {}",
        last.0
    );
}

/// GELU and Swish networks train on the GPU as on the CPU: the same initial weights and batch
/// order, dropout off, 50 steps; FP32 within the ReLU test's 1e-3 of the CPU's loss, the mixed
/// precisions within 2e-2 of the CPU's loss in the same precision (TF32 against the CPU's FP32,
/// which has no TF32).
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn gpu_gelu_and_swish_training_tracks_the_cpu() {
    use crate::train::{init_params, TrainOptions, Trainer};
    let Some(gpu) = gpu_or_skip() else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    for activation in [Activation::Gelu, Activation::Swish] {
        for precision in [
            Precision::Fp32,
            Precision::Tf32,
            Precision::Fp16,
            Precision::Bf16,
        ] {
            let opts = TrainOptions {
                precision,
                epochs: 1,
                batch: 64,
                adam: AdamParams::default(),
                seed: 11,
                dropout: 0.0,
                activation,
            };
            let cpu_opts = TrainOptions {
                precision: if cpu.supports(precision) {
                    precision
                } else {
                    Precision::Fp32
                },
                ..opts
            };
            let init = init_params(11);
            let mut tc = Trainer::new(&cpu, cpu_opts, &d.train, &d.test, &init).unwrap();
            let mut tg = Trainer::new(&gpu, opts, &d.train, &d.test, &init).unwrap();
            let mut last = (0.0, 0.0);
            for s in 0..50 {
                tc.step(s, 64).unwrap();
                tg.step(s, 64).unwrap();
                last = (tc.last_loss().unwrap(), tg.last_loss().unwrap());
            }
            let tolerance = if precision == Precision::Fp32 {
                1e-3
            } else {
                2e-2
            };
            assert!(
                (last.0 - last.1).abs() < tolerance,
                "{activation:?} {precision}: after 50 steps CPU loss {} ({}) vs GPU loss {}",
                last.0,
                cpu_opts.precision,
                last.1
            );
            assert!(
                last.0 < 1.0,
                "{activation:?} {precision}: the model should have learnt something: {}",
                last.0
            );
        }
    }
}

/// A GELU and a Swish duel on the GPU in all four precisions: every contestant learns (the
/// ReLU duel's 0.93 bar after 2 epochs of the embedded sample).
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn gelu_and_swish_gpu_duels_learn_in_every_precision() {
    use crate::types::{BackendChoice, DuelConfig};
    let Some(_) = gpu_or_skip() else { return };
    for activation in [Activation::Gelu, Activation::Swish] {
        let cfg = DuelConfig {
            backend: BackendChoice::Cuda,
            precisions: vec![
                Precision::Fp32,
                Precision::Tf32,
                Precision::Fp16,
                Precision::Bf16,
            ],
            epochs: 2,
            activation,
            ..DuelConfig::default()
        };
        let r = crate::duel::run_duel(
            &cfg,
            &mut |_| {},
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(r.backend, "cuda");
        assert_eq!(r.runs.len(), 4);
        for run in &r.runs {
            assert!(
                run.test_accuracy > 0.93,
                "{activation:?} {}: {}",
                run.precision,
                run.test_accuracy
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn a_gpu_duel_learns_in_every_precision() {
    use crate::types::{BackendChoice, DuelConfig, Precision};
    let Some(gpu) = gpu_or_skip() else { return };
    let cc_major = gpu.cc_major();
    drop(gpu);
    let cfg = DuelConfig {
        backend: BackendChoice::Cuda,
        precisions: vec![
            Precision::Fp32,
            Precision::Tf32,
            Precision::Fp16,
            Precision::Bf16,
        ],
        epochs: 2,
        ..DuelConfig::default()
    };
    let r = crate::duel::run_duel(
        &cfg,
        &mut |_| {},
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(r.backend, "cuda");
    for run in &r.runs {
        assert!(
            run.test_accuracy > 0.93,
            "{}: {}",
            run.precision,
            run.test_accuracy
        );
    }
    // FP16 is the lighter contestant: half the activations, and the tensor-core weight
    // gradient's scratch is one partial per cluster (sm_90) rather than per image.
    let peak = |p: Precision| {
        r.runs
            .iter()
            .find(|x| x.precision == p)
            .map(|x| x.peak_memory_bytes)
            .unwrap()
    };
    if cc_major >= 9 {
        assert!(
            peak(Precision::Fp16) < peak(Precision::Fp32),
            "fp16 peak {} B, fp32 {} B",
            peak(Precision::Fp16),
            peak(Precision::Fp32)
        );
    }
    explainer_checks_of_a_gpu_duel(&r);
}

/// Issue 16 on the GPU: each contestant's memory split sums to its peak and matches the
/// model's specification but for the kernels' scratch; its gradient histograms were sampled;
/// its trained model's layers from the plain forward pass match the CUDA kernels' and the CPU
/// kernels' forward pass of the same weights on real digits.
fn explainer_checks_of_a_gpu_duel(r: &crate::types::DuelReport) {
    use crate::explain;
    let gpu = CudaBackend::new(0).unwrap();
    let cpu = CpuBackend::new(None).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    for run in &r.runs {
        let p = run.precision;
        let split = run.memory.expect("the CUDA backend keeps the split");
        assert_eq!(split.total(), run.peak_memory_bytes, "{p}: {split:?}");
        let want = crate::memory::estimate(
            p,
            r.config.batch,
            r.dataset.train,
            r.dataset.test,
            split.workspace,
        );
        assert_eq!(split, want, "{p}");
        assert_eq!(
            run.grad_samples.last().map(|g| g.layers.len()),
            Some(3),
            "{p}"
        );
        assert!(
            run.grad_samples.len() >= 3 && !run.scale_history.is_empty(),
            "{p}"
        );
        let model = run.model.as_ref().expect("the model is kept");
        let tol = match p {
            Precision::Fp32 => 1e-4,
            Precision::Tf32 => 2e-2,
            Precision::Fp16 | Precision::Bf16 | Precision::Fp8 => 6e-2,
        };
        let (mut worst_gpu, mut worst_cpu, mut same) = (0f32, 0f32, 0);
        let images = 32;
        for i in 0..images {
            let px = &d.test.images[i * 784..(i + 1) * 784];
            let a = explain::forward(model, px, crate::train::MEAN, crate::train::STD).unwrap();
            let on_gpu = crate::explainer::backend_forward(&gpu, model, px).unwrap();
            let plain = [
                &a.layer("input").unwrap().values,
                &a.layer("pool1").unwrap().values,
                &a.layer("pool2").unwrap().values,
                &a.layer("logits").unwrap().values,
            ];
            for (x, y) in plain.iter().zip(&on_gpu) {
                worst_gpu = worst_gpu.max(rel(x, y));
            }
            if cpu.supports(p) {
                let on_cpu = crate::explainer::backend_forward(&cpu, model, px).unwrap();
                for (x, y) in on_cpu.iter().zip(&on_gpu) {
                    worst_cpu = worst_cpu.max(rel(x, y));
                }
            }
            same += usize::from(explain::argmax(&on_gpu[3]) == a.prediction);
        }
        eprintln!(
            "explainer {p}: peak {} B = split {:?}; {} grad samples; layers plain vs cuda max rel              {worst_gpu:.2e}, cpu vs cuda {worst_cpu:.2e}, same prediction {same}/{images}",
            run.peak_memory_bytes,
            split,
            run.grad_samples.len()
        );
        assert!(
            worst_gpu <= tol && worst_cpu <= tol,
            "{p}: {worst_gpu} / {worst_cpu} > {tol}"
        );
        assert!(same >= images - 1, "{p}: {same}/{images} same predictions");
    }
}

/// Every activation and norm kernel, FP32 and FP16, on awkward shapes against the f64 reference.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn activation_and_norm_kernels_match_the_f64_reference() {
    use super::lab::{KernelLab, LabDtype, Op, CHECK_SHAPES};
    let lab = match KernelLab::new(0) {
        Ok(l) => l,
        Err(e) => return no_gpu(e),
    };
    for op in Op::ALL {
        for dt in [LabDtype::F32, LabDtype::F16] {
            for [r, c] in CHECK_SHAPES {
                let row = lab.check(op, dt, r, c).unwrap();
                assert!(row.ok, "{row:?}");
            }
        }
    }
}

/// The recorded step replayed batch after batch trains exactly as the step launched kernel by
/// kernel: same parameters to the bit after an epoch with dropout and the loss scaler, so each
/// replay gathered its own batch and drew its own dropout mask from the device cursor.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn a_replayed_step_graph_trains_like_launches() {
    use crate::train::{init_params, TrainOptions, Trainer};
    use std::sync::atomic::AtomicBool;
    let Some(with_graphs) = gpu_or_skip() else {
        return;
    };
    let Some(mut launches) = gpu_or_skip() else {
        return;
    };
    launches.graphs = false;
    let d = crate::data::mnist_sample().unwrap();
    let mut train = d.train.clone();
    train.truncate(64 * 20 + 17, 784);
    for precision in [Precision::Fp32, Precision::Fp16, Precision::Fp8] {
        let opts = TrainOptions {
            precision,
            epochs: 2,
            batch: 64,
            adam: AdamParams::default(),
            seed: 5,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        let init = init_params(5);
        let mut params = Vec::new();
        for be in [&with_graphs, &launches] {
            let mut t = Trainer::new(be, opts, &train, &d.test, &init).unwrap();
            let report = t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap();
            assert_eq!(report.steps, 2 * 21, "{precision}: every step taken");
            params.push(t.params().unwrap());
        }
        assert!(
            params[0] == params[1],
            "{precision}: graph replay and launches differ"
        );
        assert!(with_graphs.graphs, "graphs are on by default");
    }
}

/// Values for the FP8 cast tests: every power of two the formats can meet and beyond, both
/// signs, zeros, values just off the grid and, with `specials`, an infinity and a NaN (which
/// keep the scale: without them the scales move), as FP16 holds them.
fn fp8_values(rng: &mut impl Rng, len: usize, specials: bool) -> Vec<f32> {
    (0..len)
        .map(|i| match i % 97 {
            0 => 0.0,
            1 if specials => f32::INFINITY,
            2 if specials && len > 500 => f32::NAN,
            3 => 60000.0,
            _ => {
                let e = rng.random_range(-24..15);
                let m: f32 = rng.random_range(1.0..2.0);
                let sign = if rng.random_bool(0.5) { -1.0 } else { 1.0 };
                half::f16::from_f32(sign * m * 2f32.powi(e)).to_f32()
            }
        })
        .collect()
}

/// The GPU's FP8 casts and end-of-step (fp8.cu) against the reference
/// (`Fp8State::cast_loss_scaled`, `end_step`) on awkward lengths, every tensor, delayed and
/// current scaling, over several steps: the cast values bit for bit (as FP16 stores them), and
/// the whole state (scales, amax histories, counts) equal. The gradients are cast under a loss
/// scaler whose scale changes from step to step, as FP16's does (the state stays unscaled).
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn fp8_casts_and_scaling_match_the_reference() {
    use crate::fp8::{Fp8Recipe, Fp8Scaling, Fp8State, Fp8Tensor};
    let Some(gpu) = gpu_or_skip() else { return };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(28);
    for scaling in [Fp8Scaling::Delayed, Fp8Scaling::Current] {
        let recipe = Fp8Recipe {
            scaling,
            history_len: 3,
            ..Fp8Recipe::default()
        };
        let mut reference = Fp8State::new(recipe);
        let mut state = gpu.fp8_new(reference.clone()).unwrap();
        for step in 0..5 {
            for (k, &t) in Fp8Tensor::ALL.iter().enumerate() {
                let len = [1, 31, 1000, 100_003, 4097, 77][(k + step) % 6];
                // The amax moves from step to step (delayed scaling then saturates).
                let mut v = fp8_values(&mut rng, len, (k + step) % 4 == 0);
                let grow = 2f32.powi(step as i32 * 3 - 6);
                for x in v.iter_mut() {
                    *x = half::f16::from_f32(*x * grow).to_f32();
                }
                let mut buf = gpu.alloc(DType::F16, len).unwrap();
                gpu.upload(&mut buf, &v).unwrap();
                let record = step != 2 || k % 2 == 0;
                // Loss scales 2^16, 2^17, 2^15, 2^12, 2^13: growth and back-offs.
                let loss_scale = 2f32.powi([16, 17, 15, 12, 13][step]);
                let scaler = gpu
                    .scaler_new(ScalerState {
                        scale: loss_scale,
                        ..ScalerState::new(true)
                    })
                    .unwrap();
                let loss_scaler = t.is_gradient().then_some(&scaler);
                gpu.fp8_cast(&mut buf, len, t, &mut state, record, loss_scaler)
                    .unwrap();
                let got = gpu.download(&buf).unwrap();
                let mut want = v.clone();
                let l = if t.is_gradient() { loss_scale } else { 1.0 };
                reference.cast_loss_scaled(t, &mut want, record, l);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let w16 = half::f16::from_f32(*w);
                    let same = g.to_bits() == w16.to_f32().to_bits() || (g.is_nan() && w.is_nan());
                    assert!(
                        same,
                        "{scaling:?} step {step} {t:?} [{i}] of {len}: GPU {g:e}, reference {w:e} (input {:e})",
                        v[i]
                    );
                }
            }
            gpu.fp8_end_step(&mut state).unwrap();
            reference.end_step();
            let on_gpu = gpu.fp8_read(&state).unwrap();
            assert_eq!(
                super::fp8::to_words(&on_gpu).unwrap(),
                super::fp8::to_words(&reference).unwrap(),
                "{scaling:?} after step {step}: the GPU's state {on_gpu:?} is not the reference's {reference:?}"
            );
        }
        // The optimizer's fused tail (both weight casts and the end of the step, one block)
        // against the same three calls of the reference.
        for (n1, n2) in [(288, 18_432), (9, 1001)] {
            let specials = n1 < 100;
            let (v1, v2) = (
                fp8_values(&mut rng, n1, specials),
                fp8_values(&mut rng, n2, specials),
            );
            let (mut b1, mut b2) = (
                gpu.alloc(DType::F16, n1).unwrap(),
                gpu.alloc(DType::F16, n2).unwrap(),
            );
            gpu.upload(&mut b1, &v1).unwrap();
            gpu.upload(&mut b2, &v2).unwrap();
            gpu.fp8_weights_end_step(&mut b1, n1, &mut b2, n2, &mut state)
                .unwrap();
            let (mut r1, mut r2) = (v1.clone(), v2.clone());
            reference.cast(Fp8Tensor::Conv1Weight, &mut r1, true);
            reference.cast(Fp8Tensor::Conv2Weight, &mut r2, true);
            reference.end_step();
            for (got, want) in [
                (gpu.download(&b1).unwrap(), r1),
                (gpu.download(&b2).unwrap(), r2),
            ] {
                for (g, w) in got.iter().zip(&want) {
                    let w16 = half::f16::from_f32(*w).to_f32();
                    assert!(
                        g.to_bits() == w16.to_bits() || (g.is_nan() && w.is_nan()),
                        "{scaling:?} fused weights: GPU {g:e}, reference {w:e}"
                    );
                }
            }
            assert_eq!(
                super::fp8::to_words(&gpu.fp8_read(&state).unwrap()).unwrap(),
                super::fp8::to_words(&reference).unwrap(),
                "{scaling:?}: the fused tail's state"
            );
        }
        let t = reference.tensor(Fp8Tensor::Conv1GradOutput);
        assert!(t.total.overflow > 0 && t.total.underflow > 0, "{t:?}");
        // The scales moved (finite amaxes), so scaling itself was compared, not only scale 1.
        let moved = reference
            .tensors
            .iter()
            .filter(|t| t.scale != 1.0 && t.last_scale != 1.0)
            .count();
        assert!(
            moved >= 3,
            "{scaling:?}: only {moved} tensors left scale 1: {reference:?}"
        );
    }
}

/// FP8 on the GPU (FP16 tensor cores on operands cast onto the FP8 grids, FP16's loss scaler)
/// trains as the CPU's emulation does (FP32 storage): the same weights and batches, dropout
/// off, 50 steps, the losses within 3e-2; both learn. And with the GPU's FP8 tensor cores
/// forced off, the backend still trains FP8 and says that it emulates it.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn gpu_fp8_training_tracks_the_cpu_emulation() {
    use crate::train::{init_params, Trainer};
    let Some(mut gpu) = gpu_or_skip() else { return };
    let cpu = CpuBackend::new(None).unwrap();
    let (tc, tg, last) = cpu_and_gpu_after_50_steps(&cpu, &gpu, Precision::Fp8);
    assert!(
        (last.0 - last.1).abs() < 3e-2,
        "after 50 steps: CPU emulation loss {} vs GPU loss {}",
        last.0,
        last.1
    );
    assert!(last.1 < 1.0, "the GPU's FP8 should have learnt: {}", last.1);
    // The forward scales agree. (The gradients' are unscaled on both, but the GPU's come from
    // FP16 storage and its loss scaler's skipped steps, so they may differ by a power of two.)
    let (sc, sg) = (
        tc.fp8_state().unwrap().unwrap(),
        tg.fp8_state().unwrap().unwrap(),
    );
    for t in [
        crate::fp8::Fp8Tensor::Conv1Input,
        crate::fp8::Fp8Tensor::Conv2Weight,
    ] {
        assert_eq!(sc.tensor(t).scale, sg.tensor(t).scale, "{t:?}");
    }
    let (engine, emulated) = gpu.fp8_engine().unwrap();
    assert!(emulated && engine.contains("emulated on"), "{engine}");
    if gpu.cc_major() >= 9 {
        assert!(
            engine.contains("has FP8 tensor cores, which this build does not use yet"),
            "{engine}"
        );
    }
    gpu.fp8_tensor_cores = false;
    let (engine, _) = gpu.fp8_engine().unwrap();
    assert!(engine.contains("has no FP8 tensor cores"), "{engine}");
    let d = crate::data::mnist_sample().unwrap();
    let opts = side_by_side_options(Precision::Fp8);
    let mut off = Trainer::new(&gpu, opts, &d.train, &d.test, &init_params(11)).unwrap();
    for s in 0..5 {
        off.step(s, 64).unwrap();
    }
    assert!(off.last_loss().unwrap().is_finite());
}

/// A GPU duel with FP8 beside FP16: FP8 trains on the GPU (not the CPU), learns, reports its
/// scales and says it is emulated; its gradients' histograms were kept before the casts.
#[test]
#[ignore = "needs a GPU: cargo test -p compute --features cuda -- --include-ignored"]
fn a_gpu_duel_trains_fp8_on_the_gpu() {
    use std::sync::atomic::AtomicBool;
    if gpu_or_skip().is_none() {
        return;
    }
    let cfg = crate::types::DuelConfig {
        backend: crate::types::BackendChoice::Cuda,
        precisions: vec![Precision::Fp16, Precision::Fp8],
        epochs: 2,
        ..crate::types::DuelConfig::default()
    };
    let r = crate::duel::run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap();
    let fp8 = r
        .runs
        .iter()
        .find(|x| x.precision == Precision::Fp8)
        .unwrap();
    let f = fp8.fp8.as_ref().unwrap();
    assert_eq!(f.device, r.device, "FP8 trained on the duel's GPU");
    assert!(
        f.emulated && f.engine.contains("FP16 tensor cores"),
        "{}",
        f.engine
    );
    assert!(
        fp8.test_accuracy > 0.9,
        "fp8 accuracy {}",
        fp8.test_accuracy
    );
    assert_eq!(f.tensors.len(), 6);
    // The instrumented first epoch keeps each tensor's values before its cast; the timed
    // epochs keep the scales and counts only.
    for s in &fp8.grad_samples {
        assert_eq!(s.fp8.len(), 6);
        assert_eq!(
            s.fp8.iter().all(|t| t.histogram.is_some()),
            s.epoch == 1,
            "epoch {} step {}",
            s.epoch,
            s.step
        );
    }
}
