//! The trainer's tests: the loss scaler, FP8's casts, smoke runs in every precision,
//! reproducibility, gradients against finite differences, cancel, divergence, the gradient
//! histograms and the memory split.

use super::*;
use crate::backend::cpu::CpuBackend;
use crate::fp8::Fp8Format;
use crate::types::{CurvePoint, DuelEvent, RunReport};

#[test]
fn scaler_grows_after_2000_clean_steps_and_backs_off_on_inf() {
    let mut s = ScalerState::new(true);
    assert_eq!(s.scale, 65536.0);
    for _ in 0..1999 {
        s.update();
    }
    assert_eq!(s.scale, 65536.0);
    s.update();
    assert_eq!(s.scale, 131072.0);
    assert_eq!(s.growth_tracker, 0);
    s.found_inf = true;
    s.update();
    assert_eq!(
        (s.scale, s.skipped, s.step, s.found_inf),
        (65536.0, 1, 2000, false)
    );
    // A back-off resets the growth count.
    for _ in 0..1999 {
        s.update();
    }
    s.found_inf = true;
    s.update();
    for _ in 0..1999 {
        s.update();
    }
    assert_eq!(s.scale, 32768.0);
    // Backing off stops at the floor instead of reaching 0 (grad / 0 would poison the weights).
    let mut low = ScalerState::new(true);
    for _ in 0..200 {
        low.found_inf = true;
        low.update();
    }
    assert_eq!(low.scale, crate::backend::SCALER_MIN);
    assert_eq!(low.skipped, 200);
    let mut off = ScalerState::new(false);
    off.found_inf = true;
    off.update();
    assert_eq!((off.scale, off.skipped), (1.0, 1));
}

#[test]
fn an_overflowing_fp16_step_is_skipped_and_the_scale_halves() {
    let be = CpuBackend::new(Some(1)).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let mut train = d.train.clone();
    train.truncate(64, 784);
    let mut test = d.test.clone();
    test.truncate(16, 784);
    let opts = TrainOptions {
        precision: Precision::Fp16,
        epochs: 1,
        batch: 32,
        adam: AdamParams::default(),
        seed: 1,
        dropout: 0.5,
        activation: Activation::Relu,
    };
    let init = init_params(1);
    let mut t = Trainer::new(&be, opts, &train, &test, &init).unwrap();
    // A scale of 2^40 overflows FP16 gradients: the step must be skipped, the weights kept.
    let mut st = be.scaler_read(&t.scaler).unwrap();
    st.scale = (1u64 << 40) as f32;
    t.scaler = be.scaler_new(st).unwrap();
    let before = t.params().unwrap();
    t.step(0, 32).unwrap();
    let after_state = be.scaler_read(&t.scaler).unwrap();
    assert_eq!(after_state.skipped, 1);
    assert_eq!(after_state.scale, (1u64 << 39) as f32);
    assert_eq!(
        t.params().unwrap(),
        before,
        "a skipped step must not touch the weights"
    );
    // At the normal scale the step applies.
    let mut st = after_state;
    st.scale = 65536.0;
    t.scaler = be.scaler_new(st).unwrap();
    t.step(0, 32).unwrap();
    assert_eq!(be.scaler_read(&t.scaler).unwrap().step, 1);
    assert_ne!(t.params().unwrap(), before);
}

fn smoke(precision: Precision) -> RunReport {
    smoke_epochs(precision, 1)
}

fn smoke_epochs(precision: Precision, epochs: usize) -> RunReport {
    let be = CpuBackend::new(None).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let mut train = d.train.clone();
    train.truncate(2048, 784);
    let mut test = d.test.clone();
    test.truncate(500, 784);
    let opts = TrainOptions {
        precision,
        epochs,
        batch: 64,
        adam: AdamParams::default(),
        seed: 7,
        dropout: 0.5,
        activation: Activation::Relu,
    };
    let mut t = Trainer::new(&be, opts, &train, &test, &init_params(7)).unwrap();
    let mut events = 0;
    let r = t
        .run(&mut |_| events += 1, &AtomicBool::new(false))
        .unwrap();
    assert!(events >= 3);
    r
}

#[test]
fn contestants_sample_their_loss_curves_at_the_same_steps() {
    // Issue 26: the live curves came from whichever steps the 50 ms clock let through
    // (fp16 0.125–0.875 of the epoch, fp32 0.25–1.0).
    let be = CpuBackend::new(Some(1)).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let mut train = d.train.clone();
    train.truncate(640, 784);
    let mut test = d.test.clone();
    test.truncate(64, 784);
    let mut curves = Vec::new();
    for precision in [Precision::Fp32, Precision::Fp16] {
        let opts = TrainOptions {
            precision,
            epochs: 1,
            batch: 8,
            adam: AdamParams::default(),
            seed: 3,
            dropout: 0.5,
            activation: Activation::Relu,
        };
        let mut t = Trainer::new(&be, opts, &train, &test, &init_params(3)).unwrap();
        let mut live = Vec::new();
        let r = t
            .run(
                &mut |e| {
                    if let DuelEvent::Curve { point, .. } = e {
                        live.push(point);
                    }
                },
                &AtomicBool::new(false),
            )
            .unwrap();
        assert_eq!(
            crate::runs::examples::json_of(&live),
            crate::runs::examples::json_of(&r.curve),
            "{precision}: the live points are the report's"
        );
        curves.push(r.curve);
    }
    let steps = |c: &[CurvePoint]| c.iter().map(|p| p.step).collect::<Vec<_>>();
    assert_eq!(steps(&curves[0]), crate::types::curve_steps(80, 1));
    assert_eq!(steps(&curves[0]), steps(&curves[1]));
    let last = curves[0].last().unwrap();
    assert_eq!((last.step, last.global_step, last.x), (80, 80, 1.0));
    assert!(curves[0].iter().all(|p| p.loss.is_finite() && p.loss > 0.0));
    // The loss falls over the epoch.
    assert!(last.loss < curves[0][0].loss, "{curves:?}");
}

#[test]
fn one_epoch_smoke_fp8_learns_and_reports_every_tensors_scale() {
    let r = smoke(Precision::Fp8);
    let fp32 = smoke(Precision::Fp32);
    assert_eq!(r.steps, 32);
    assert!(
        r.test_accuracy > 0.75 && (r.test_accuracy - fp32.test_accuracy).abs() < 0.08,
        "fp8 accuracy {} against fp32 {}",
        r.test_accuracy,
        fp32.test_accuracy
    );
    let f = r.fp8.as_ref().expect("an FP8 run reports its scaling");
    assert!(f.emulated && f.engine.contains("CPU"), "{}", f.engine);
    assert_eq!(f.steps, 32);
    assert_eq!(f.tensors.len(), 6);
    for t in &f.tensors {
        assert!(!t.points.is_empty(), "{:?} has no scale points", t.tensor);
        assert!(t.total.nonzero > 0, "{:?} cast nothing", t.tensor);
        assert_eq!(
            t.points[0].scale, 1.0,
            "step 1 casts at scale 1 (no history)"
        );
    }
    // Gradients are small: after step 1 their E5M2 scales rise far above 1, and at scale 1
    // (step 1) some of them flushed to zero.
    let g = f
        .tensors
        .iter()
        .find(|t| t.tensor == Fp8Tensor::Conv1GradOutput)
        .unwrap();
    assert!(g.points.last().unwrap().scale >= 1024.0, "{:?}", g.points);
    assert!(g.total.underflow > 0);
    // Each sampled step carries the six tensors (the histograms' scales) and their values
    // before the cast.
    assert!(r.grad_samples.iter().all(|s| s.fp8.len() == 6));
    for s in &r.grad_samples {
        for t in &s.fp8 {
            let h = t
                .histogram
                .as_ref()
                .expect("a sampled step keeps its histograms");
            assert!(h.nonzero() > 0, "{:?} at step {}", t.tensor, s.step);
        }
    }
    // The activation gradients' histograms are the values before the cast: at step 1
    // (scale 1) some lie below E5M2's smallest subnormal.
    let first = &r.grad_samples[0];
    let conv1 = &first.layers[0].activations;
    assert!(conv1.against(&crate::fp8::E5M2, 1.0).flush_to_zero > 0);
    assert_eq!(f.stored_bytes, 4 * f.fp8_bytes);
    assert!(smoke(Precision::Fp32).fp8.is_none());
}

#[test]
fn fp8_operands_lie_on_their_grids_at_their_scales() {
    let be = CpuBackend::new(Some(1)).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let mut train = d.train.clone();
    train.truncate(64, 784);
    let mut test = d.test.clone();
    test.truncate(16, 784);
    let opts = TrainOptions {
        precision: Precision::Fp8,
        epochs: 1,
        batch: 32,
        adam: AdamParams::default(),
        seed: 1,
        dropout: 0.0,
        activation: Activation::Relu,
    };
    let mut t = Trainer::new(&be, opts, &train, &test, &init_params(1)).unwrap();
    for i in 0..3 {
        t.step(i % 2, 32).unwrap();
    }
    let st = t.fp8_state().unwrap().unwrap();
    assert_eq!(st.steps, 3);
    let on_grid = |values: &[f32], tensor: Fp8Tensor| {
        let s = st.tensor(tensor).last_scale;
        let f = tensor.format();
        let off = values
            .iter()
            .filter(|&&v| f.quantize(v * s) != v * s)
            .count();
        assert_eq!(off, 0, "{tensor:?}: {off} values off the grid at scale {s}");
    };
    on_grid(
        &be.download(t.params[0].copy.as_ref().unwrap()).unwrap(),
        Fp8Tensor::Conv1Weight,
    );
    on_grid(
        &be.download(t.params[2].copy.as_ref().unwrap()).unwrap(),
        Fp8Tensor::Conv2Weight,
    );
    on_grid(&be.download(&t.ws.x).unwrap(), Fp8Tensor::Conv1Input);
    on_grid(&be.download(&t.ws.a1).unwrap(), Fp8Tensor::Conv2Input);
    on_grid(&be.download(&t.ws.da2).unwrap(), Fp8Tensor::Conv2GradOutput);
    on_grid(&be.download(&t.ws.da1).unwrap(), Fp8Tensor::Conv1GradOutput);
    // The master weights stay FP32 (off the grid).
    let master = be.download(&t.params[0].master).unwrap();
    let s = st.tensor(Fp8Tensor::Conv1Weight).last_scale;
    assert!(master
        .iter()
        .any(|&v| Fp8Format::E4m3.quantize(v * s) != v * s));
    // Evaluation casts but records nothing.
    let before = t.fp8_state().unwrap();
    t.evaluate().unwrap();
    assert_eq!(t.fp8_state().unwrap(), before);
}

#[test]
fn one_epoch_smoke_fp32_learns() {
    let r = smoke(Precision::Fp32);
    assert_eq!(r.steps, 32);
    assert_eq!(r.epochs.len(), 1);
    assert!(r.test_accuracy > 0.8, "fp32 accuracy {}", r.test_accuracy);
    assert!(r.epochs[0].train_loss < 1.5, "{}", r.epochs[0].train_loss);
    assert!(r.peak_memory_bytes > 2048 * 784);
}

#[test]
fn the_first_of_several_epochs_times_every_step() {
    assert_eq!(smoke(Precision::Fp32).step_times, None);
    let r = smoke_epochs(Precision::Fp32, 2);
    let st = r.step_times.expect("a two-epoch run is instrumented");
    assert_eq!((st.epoch, st.steps), (1, 32));
    assert!(0.0 < st.p50_ms && st.p50_ms <= st.p90_ms, "{st:?}");
    assert!(st.p90_ms <= st.p99_ms && st.p99_ms <= st.max_ms, "{st:?}");
    // The steps of epoch 1 add up to no more than the epoch.
    assert!(
        st.p50_ms * 16.0 <= r.epochs[0].ms,
        "{st:?} vs {} ms",
        r.epochs[0].ms
    );
}

#[test]
fn one_epoch_smoke_fp16_learns_with_the_scaler() {
    let r = smoke(Precision::Fp16);
    assert!(r.test_accuracy > 0.8, "fp16 accuracy {}", r.test_accuracy);
    assert!(r.final_loss_scale > 0.0 && r.final_loss_scale <= 65536.0);
    assert_eq!(r.steps + r.skipped_steps, 32);
}

#[test]
fn training_is_reproducible_from_the_seed() {
    let a = smoke(Precision::Fp32);
    let b = smoke(Precision::Fp32);
    let strip = |r: &RunReport| {
        r.epochs
            .iter()
            .map(|e| (e.train_loss, e.test_accuracy))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b));
}

/// The head of the network (dense layer + softmax cross-entropy) against central finite
/// differences of the whole network's loss. The loss is smooth in these parameters; in the
/// conv parameters ReLU and max-pool switches make finite differences unreliable, so the
/// conv blocks are held against the direct reference in `backend::reference` instead.
#[test]
fn dense_and_loss_gradients_match_finite_differences() {
    let be = CpuBackend::new(Some(1)).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let mut train = d.train.clone();
    train.truncate(6, 784);
    let opts = TrainOptions {
        precision: Precision::Fp32,
        epochs: 1,
        batch: 6,
        adam: AdamParams::default(),
        seed: 3,
        dropout: 0.0,
        activation: Activation::Relu,
    };
    let init = init_params(3);
    let mut t = Trainer::new(&be, opts, &train, &d.test, &init).unwrap();
    t.forward_backward(0, 6).unwrap();
    be.sums_take(&mut t.sums).unwrap();
    let grads = t.grads().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(rand::random());
    let h = 1e-2f32;
    for pi in [4, 5] {
        let g = &grads[pi];
        for _ in 0..20 {
            let i = rng.random_range(0..g.len());
            let mut loss_at = |delta: f32| {
                let mut p = init.clone();
                p[pi][i] += delta;
                t.set_params(&p).unwrap();
                t.forward_backward(0, 6).unwrap();
                be.sums_take(&mut t.sums).unwrap().last_loss
            };
            let fd = ((loss_at(h) - loss_at(-h)) / (2.0 * h as f64)) as f32;
            assert!(
                (fd - g[i]).abs() < 0.01 * g[i].abs() + 5e-5,
                "param {pi}[{i}]: finite difference {fd} vs backward {}",
                g[i]
            );
        }
    }
}

/// The CNN variants train on the CPU backend: GELU and Swish learn as ReLU does, and the
/// logits of the test split agree with the evaluation's accuracy.
#[test]
fn gelu_and_swish_variants_learn() {
    let be = CpuBackend::new(None).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let (mut train, mut test) = (d.train.clone(), d.test.clone());
    train.truncate(3000, 784);
    test.truncate(500, 784);
    for activation in [Activation::Gelu, Activation::Swish] {
        let opts = TrainOptions {
            precision: Precision::Fp32,
            epochs: 1,
            batch: 64,
            adam: AdamParams::default(),
            seed: 2,
            dropout: 0.5,
            activation,
        };
        let mut t = Trainer::new(&be, opts, &train, &test, &init_params(2)).unwrap();
        let r = t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap();
        assert!(r.test_accuracy > 0.8, "{activation}: {}", r.test_accuracy);
        let logits = t.test_logits().unwrap();
        assert_eq!(logits.len(), 500 * lab::CLASSES);
        let correct = logits
            .chunks(lab::CLASSES)
            .zip(&test.labels)
            .filter(|(z, &y)| {
                let best = (0..lab::CLASSES)
                    .max_by(|&a, &b| z[a].total_cmp(&z[b]))
                    .unwrap_or(0);
                best == y as usize
            })
            .count();
        let acc = correct as f64 / 500.0;
        assert!(
            (acc - r.test_accuracy).abs() < 1e-9,
            "{acc} vs {}",
            r.test_accuracy
        );
    }
}

#[test]
fn cancel_stops_the_run() {
    let be = CpuBackend::new(Some(1)).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let opts = TrainOptions {
        precision: Precision::Fp32,
        epochs: 1,
        batch: 32,
        adam: AdamParams::default(),
        seed: 1,
        dropout: 0.5,
        activation: Activation::Relu,
    };
    let mut t = Trainer::new(&be, opts, &d.train, &d.test, &init_params(1)).unwrap();
    let e = t.run(&mut |_| {}, &AtomicBool::new(true)).unwrap_err();
    assert!(matches!(e, ComputeError::Cancelled));
}

#[test]
fn fp32_divergence_names_epoch_and_step() {
    let be = CpuBackend::new(None).unwrap();
    let d = crate::data::mnist_sample().unwrap();
    let adam = AdamParams {
        lr: 10.0,
        ..AdamParams::default()
    };
    let opts = TrainOptions {
        precision: Precision::Fp32,
        epochs: 1,
        batch: 128,
        adam,
        seed: 1,
        dropout: 0.5,
        activation: Activation::Relu,
    };
    let mut t = Trainer::new(&be, opts, &d.train, &d.test, &init_params(1)).unwrap();
    match t.run(&mut |_| {}, &AtomicBool::new(false)) {
        Err(ComputeError::Diverged { epoch, step, .. }) => assert!(epoch == 1 && step >= 1),
        other => panic!("expected divergence, got {other:?}"),
    }
}

/// `(zeros, non-finite, counts per bucket)` of `values / scale`, counted directly: each
/// magnitude's bucket found by comparing it with powers of two.
fn direct_count(values: &[f32], scale: f64) -> (u64, u64, Vec<u64>) {
    use crate::grads::{BUCKETS, MAX_EXP, MIN_EXP};
    let (mut zeros, mut bad, mut counts) = (0, 0, vec![0u64; BUCKETS]);
    for &v in values {
        let a = (v as f64 / scale).abs();
        if a == 0.0 {
            zeros += 1;
        } else if !a.is_finite() {
            bad += 1;
        } else {
            let mut e = MIN_EXP;
            while e < MAX_EXP && 2f64.powi(e + 1) <= a {
                e += 1;
            }
            counts[(e - MIN_EXP) as usize] += 1;
        }
    }
    (zeros, bad, counts)
}

fn small_trainer(be: &CpuBackend, precision: Precision, epochs: usize) -> Trainer<'_, CpuBackend> {
    let d = crate::data::mnist_sample().unwrap();
    let (mut train, mut test) = (d.train.clone(), d.test.clone());
    train.truncate(1000, 784);
    test.truncate(300, 784);
    let opts = TrainOptions {
        precision,
        epochs,
        batch: 64,
        adam: AdamParams::default(),
        seed: 3,
        dropout: 0.5,
        activation: Activation::Relu,
    };
    Trainer::new(be, opts, &train, &test, &init_params(3)).unwrap()
}

#[test]
fn the_gradient_histograms_equal_a_direct_count_over_the_same_gradients() {
    let be = CpuBackend::new(Some(2)).unwrap();
    for precision in [Precision::Fp32, Precision::Fp16] {
        let mut t = small_trainer(&be, precision, 2);
        let r = t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap();
        // 16 steps an epoch (1000 / 64): steps 1, 2, 4, 8 of the instrumented epoch, and
        // each epoch's last.
        let at: Vec<(usize, usize)> = r.grad_samples.iter().map(|g| (g.epoch, g.step)).collect();
        assert_eq!(
            at,
            [(1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (2, 16)],
            "{precision}"
        );
        let last = r.grad_samples.last().unwrap();
        let state = be.scaler_read(&t.scaler).unwrap();
        assert_eq!(
            last.loss_scale, state.scale as f64,
            "no growth or skip at the last step"
        );
        let n = t.step_len(15);
        assert_eq!(n, 1000 - 15 * 64);
        let wanted: [(&str, &Vec<f32>, usize, usize); 3] = [
            ("conv1", &be.download(&t.ws.da1).unwrap(), n * A1, 0),
            (
                "conv2",
                &be.download(&t.ws.da2).unwrap(),
                n * lab::FEATURES,
                2,
            ),
            (
                "dense",
                &be.download(&t.ws.dlogits).unwrap(),
                n * lab::CLASSES,
                4,
            ),
        ];
        for ((name, acts, len, w), got) in wanted.iter().zip(&last.layers) {
            assert_eq!(&got.layer, name);
            let (z, bad, counts) = direct_count(&acts[..*len], last.loss_scale);
            assert_eq!(
                (got.activations.zeros, got.activations.non_finite),
                (z, bad)
            );
            assert_eq!(
                got.activations.counts, counts,
                "{precision} {name} activations"
            );
            if *name != "dense" {
                assert!(
                    z > 0,
                    "ReLU and the pool leave exact zeros in {name}'s gradient"
                );
            }
            let grads = be.download(&t.params[*w].grad).unwrap();
            let (z, bad, counts) = direct_count(&grads, last.loss_scale);
            assert_eq!((got.weights.zeros, got.weights.non_finite), (z, bad));
            assert_eq!(got.weights.counts, counts, "{precision} {name} weights");
            assert_eq!(got.weights.total(), grads.len() as u64);
        }
        assert_eq!(r.scale_history.first().map(|p| p.step), Some(1));
        let expected_scale = if precision == Precision::Fp16 {
            65536.0
        } else {
            1.0
        };
        assert_eq!(r.grad_samples[0].loss_scale, expected_scale, "{precision}");
        assert_eq!(r.scale_history.last().map(|p| p.step), Some(32));
    }
}

#[test]
fn the_memory_split_sums_to_the_peak_and_matches_the_model_specification() {
    let be = CpuBackend::new(Some(2)).unwrap();
    for precision in [Precision::Fp32, Precision::Fp16, Precision::Bf16] {
        be.reset_peak();
        let r = {
            let mut t = small_trainer(&be, precision, 1);
            t.run(&mut |_| {}, &AtomicBool::new(false)).unwrap()
        };
        let split = r.memory.expect("the CPU backend keeps the split");
        assert_eq!(split.total(), r.peak_memory_bytes, "{precision}: {split:?}");
        let want = crate::memory::estimate(precision, 64, 1000, 300, split.workspace);
        assert_eq!(split, want, "{precision}");
        assert!(split.workspace > 0 && split.workspace < 1024, "{split:?}");
        let m = r.model.expect("the model is kept");
        assert_eq!(m.precision, precision);
        m.check().unwrap();
    }
    assert_eq!(
        be.meter_current_for_tests(),
        0,
        "every trainer's bytes were given back"
    );
}
