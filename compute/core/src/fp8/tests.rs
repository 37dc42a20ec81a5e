//! Tests of `fp8`.

use super::*;

/// Every finite value of a format, by its definition (sign, exponent, mantissa), written
/// independently of the `float8` crate.
fn grid(format: Fp8Format) -> Vec<f64> {
    let (ebits, mbits, bias) = match format {
        Fp8Format::E4m3 => (4, 3, 7),
        Fp8Format::E5m2 => (5, 2, 15),
    };
    let mut out = Vec::new();
    for e in 0..(1 << ebits) {
        for m in 0..(1 << mbits) {
            let v = if e == 0 {
                m as f64 * 2f64.powi(1 - bias - mbits)
            } else {
                (1.0 + m as f64 / (1 << mbits) as f64) * 2f64.powi(e - bias)
            };
            // E4M3: only S.1111.111 is NaN; E5M2: exponent 11111 is inf/NaN.
            let special = match format {
                Fp8Format::E4m3 => e == 15 && m == 7,
                Fp8Format::E5m2 => e == 31,
            };
            if !special {
                out.push(v);
                out.push(-v);
            }
        }
    }
    out.sort_by(|a, b| a.total_cmp(b));
    out.dedup();
    out
}

/// The nearest grid value, ties to the one with an even last mantissa bit, saturating.
fn nearest(grid: &[f64], x: f64, format: Fp8Format) -> f64 {
    let max = format.max() as f64;
    let x = x.clamp(-max, max);
    let i = grid.partition_point(|&g| g < x);
    if i < grid.len() && grid[i] == x {
        return x;
    }
    let (lo, hi) = (grid[i - 1], grid[i]);
    let (dl, dh) = (x - lo, hi - x);
    if dl < dh {
        lo
    } else if dh < dl {
        hi
    } else {
        // Even mantissa: the grid alternates; index parity within a binade decides.
        let step_of = |v: f64| {
            let mbits = if format == Fp8Format::E4m3 { 3 } else { 2 };
            let a = v.abs();
            if a == 0.0 {
                return 0i64;
            }
            let min_normal = format.range().min_normal_exp;
            let e = crate::histogram::exponent(a).max(min_normal);
            (a / 2f64.powi(e - mbits)).round() as i64
        };
        if step_of(lo) % 2 == 0 {
            lo
        } else {
            hi
        }
    }
}

/// The hand-written rounding against the `float8` crate's conversions (clamped first, as
/// the saturating cast is): every 251st positive f32 bit pattern below the maximum and
/// their negatives, both formats, bit for bit (zeros compared by value).
#[test]
fn quantize_matches_the_float8_crate() {
    for format in [Fp8Format::E4m3, Fp8Format::E5m2] {
        let max = format.max();
        let theirs = |x: f32| {
            let x = x.clamp(-max, max);
            match format {
                Fp8Format::E4m3 => float8::F8E4M3::from_f32(x).to_f32(),
                Fp8Format::E5m2 => float8::F8E5M2::from_f32(x).to_f32(),
            }
        };
        let mut checked = 0u64;
        for bits in (0..max.to_bits() + (1 << 20)).step_by(251) {
            for x in [f32::from_bits(bits), -f32::from_bits(bits)] {
                let (ours, want) = (format.quantize(x), theirs(x));
                assert!(
                    ours.to_bits() == want.to_bits() || (ours == 0.0 && want == 0.0),
                    "{format:?} {x:e} ({bits:#x}): ours {ours:e}, float8 {want:e}"
                );
                checked += 1;
            }
        }
        assert!(checked > 8_000_000, "{checked}");
        for x in [
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN_POSITIVE / 3.0,
        ] {
            assert_eq!(format.quantize(x), theirs(x), "{format:?} {x:e}");
        }
    }
}

#[test]
fn the_formats_ranges_are_their_definitions() {
    let g4 = grid(Fp8Format::E4m3);
    assert_eq!(g4.last().copied(), Some(448.0));
    assert_eq!(g4.len(), 253, "126 positive, 126 negative values and zero");
    let g5 = grid(Fp8Format::E5m2);
    assert_eq!(g5.last().copied(), Some(57344.0));
    let smallest = |g: &[f64]| {
        g.iter()
            .copied()
            .filter(|&v| v > 0.0)
            .fold(f64::MAX, f64::min)
    };
    assert_eq!(smallest(&g4), 2f64.powi(E4M3.min_subnormal_exp));
    assert_eq!(smallest(&g5), 2f64.powi(E5M2.min_subnormal_exp));
    assert_eq!(E4M3.max, 448.0);
    assert_eq!(E5M2.max, 57344.0);
}

#[test]
fn quantize_rounds_to_nearest_even_and_saturates_as_the_definition_says() {
    for format in [Fp8Format::E4m3, Fp8Format::E5m2] {
        let g = grid(format);
        // Every grid value, every midpoint (the ties), and points between.
        let mut xs: Vec<f64> = g.clone();
        for w in g.windows(2) {
            let mid = (w[0] + w[1]) / 2.0;
            xs.extend([mid, w[0] + (w[1] - w[0]) * 0.3, w[0] + (w[1] - w[0]) * 0.7]);
        }
        xs.extend([1e6, -1e6, 500.0, 60000.0, 1e-9, -1e-9]);
        for x in xs {
            let x32 = x as f32;
            let want = nearest(&g, x32 as f64, format);
            let got = format.quantize(x32) as f64;
            assert!(
                got == want || (got == 0.0 && want == 0.0),
                "{format:?}: q({x32:e}) = {got:e}, the definition says {want:e}"
            );
        }
        assert!(format.quantize(f32::NAN).is_nan());
        assert_eq!(format.quantize(f32::INFINITY), format.max());
        assert_eq!(format.quantize(f32::NEG_INFINITY), -format.max());
    }
}

#[test]
fn scales_put_the_amax_just_below_the_maximum() {
    assert_eq!(scale_for(1.0, Fp8Format::E4m3, 0), Some(256.0));
    assert_eq!(scale_for(448.0, Fp8Format::E4m3, 0), Some(1.0));
    assert_eq!(scale_for(449.0, Fp8Format::E4m3, 0), Some(0.5));
    assert_eq!(scale_for(1e-3, Fp8Format::E5m2, 0), Some(2f32.powi(25)));
    assert_eq!(scale_for(1.0, Fp8Format::E4m3, 2), Some(64.0));
    assert_eq!(scale_for(0.0, Fp8Format::E4m3, 0), None);
    assert_eq!(scale_for(f32::INFINITY, Fp8Format::E4m3, 0), None);
    assert_eq!(scale_for(f32::NAN, Fp8Format::E5m2, 0), None);
    assert_eq!(
        scale_for(1e-38, Fp8Format::E5m2, 0),
        Some(2f32.powi(MAX_SCALE_EXP))
    );
    // For any amax the scaled amax lands in (max/2, max].
    for amax in [3.7e-6f32, 0.011, 0.9, 1.0, 77.0, 1234.5, 9e4] {
        for f in [Fp8Format::E4m3, Fp8Format::E5m2] {
            let s = scale_for(amax, f, 0).unwrap();
            let scaled = amax as f64 * s as f64;
            assert!(
                scaled <= f.max() as f64 && scaled > f.max() as f64 / 2.0,
                "{f:?} {amax}"
            );
        }
    }
}

#[test]
fn a_cast_counts_saturation_and_flushes_and_is_exact_on_the_grid() {
    let mut v = vec![0.0, 1.0, -3.0, 1000.0, 1e-9, 0.3];
    let c = cast_slice(&mut v, Fp8Format::E4m3, 1.0);
    assert_eq!(c.amax, 1000.0);
    assert_eq!(c.nonzero, 5);
    assert_eq!(c.overflow, 1, "1000 > 448 saturates");
    assert_eq!(c.underflow, 1, "1e-9 < 2^-10 flushes");
    assert_eq!(v, vec![0.0, 1.0, -3.0, 448.0, 0.0, 0.3125]);
    // At a power-of-two scale, values already on the scaled grid are unchanged.
    let mut again = v.clone();
    let c2 = cast_slice(&mut again, Fp8Format::E4m3, 1.0);
    assert_eq!(again, v);
    assert_eq!(c2.overflow, 0);
    // An infinity is kept and counted as an overflow.
    let mut inf = vec![f32::NEG_INFINITY, 1.0];
    let ci = cast_slice(&mut inf, Fp8Format::E5m2, 1.0);
    assert_eq!(
        (inf[0], ci.overflow, ci.amax),
        (f32::NEG_INFINITY, 1, f32::INFINITY)
    );
    // A scale of 2^10 lifts 2^-12 into range; 1e-9 · 2^10 ≈ 1e-6 still flushes.
    let mut small = vec![2f32.powi(-12), 1e-9];
    let c3 = cast_slice(&mut small, Fp8Format::E4m3, 1024.0);
    assert_eq!(small[0], 2f32.powi(-12));
    assert_eq!(c3.underflow, 1);
}

#[test]
fn delayed_scaling_follows_the_history_and_current_scaling_the_tensor() {
    let mut st = Fp8State::new(Fp8Recipe {
        history_len: 3,
        ..Fp8Recipe::default()
    });
    let t = Fp8Tensor::Conv1Input;
    // Step 1 casts at scale 1 (no history yet).
    let mut v = vec![2.0f32, -0.5];
    st.cast(t, &mut v, true);
    assert_eq!(st.tensor(t).step_scale, 1.0);
    st.end_step();
    // amax 2 → 448/2 = 224 → 2^7.
    assert_eq!(st.tensor(t).scale, 128.0);
    assert_eq!(st.tensor(t).last_scale, 1.0);
    // A step whose amax jumps is cast at the old scale and saturates.
    let mut big = vec![10.0f32];
    let c = st.cast(t, &mut big, true);
    assert_eq!(c.overflow, 1);
    assert_eq!(big[0], 448.0 / 128.0);
    st.end_step();
    assert_eq!(st.tensor(t).scale, 32.0, "448/10 → 2^5");
    // Two quiet steps later the 10 is still in the 3-step history …
    for _ in 0..2 {
        let mut q = vec![1.0f32];
        st.cast(t, &mut q, true);
        st.end_step();
    }
    assert_eq!(st.tensor(t).amax_history, vec![10.0, 1.0, 1.0]);
    assert_eq!(st.tensor(t).scale, 32.0);
    // … and one more pushes it out.
    let mut q = vec![1.0f32];
    st.cast(t, &mut q, true);
    st.end_step();
    assert_eq!(st.tensor(t).scale, 256.0);
    assert_eq!(st.tensor(t).total.overflow, 1);
    // Unrecorded casts (evaluation) leave the state alone.
    let before = st.clone();
    let mut e = vec![100.0f32];
    st.cast(t, &mut e, false);
    assert_eq!(st, before);

    // Current scaling uses the tensor's own amax: no saturation on the jump.
    let mut cur = Fp8State::new(Fp8Recipe {
        scaling: Fp8Scaling::Current,
        ..Fp8Recipe::default()
    });
    let mut big = vec![10.0f32, 0.001];
    let c = cur.cast(t, &mut big, true);
    assert_eq!(c.overflow, 0);
    assert_eq!(cur.tensor(t).step_scale, 32.0);
    assert_eq!(big[0], 10.0);
    cur.end_step();
    // An all-zero tensor keeps the last scale.
    let mut z = vec![0.0f32; 4];
    cur.cast(t, &mut z, true);
    assert_eq!(cur.tensor(t).step_scale, 32.0);
}

/// On a GPU the gradients are stored times FP16's loss scale. The state must not see it:
/// a step cast at loss scale L is the unscaled step times L, with the same amax, counts
/// and scales, and a loss-scale change (growth here) between steps moves no scale.
#[test]
fn a_loss_scale_moves_no_scale_and_no_count() {
    for scaling in [Fp8Scaling::Delayed, Fp8Scaling::Current] {
        let recipe = Fp8Recipe {
            scaling,
            history_len: 4,
            ..Fp8Recipe::default()
        };
        let (mut plain, mut scaled) = (Fp8State::new(recipe), Fp8State::new(recipe));
        let t = Fp8Tensor::Conv2GradOutput;
        for (step, loss_scale) in [65536f32, 65536.0, 131072.0, 1024.0]
            .into_iter()
            .enumerate()
        {
            let g: Vec<f32> = (0..200)
                .map(|i| ((i as f32 * 0.37).sin() * 3e-4 + 1e-9 * i as f32) * (step + 1) as f32)
                .chain([0.0, 7e-2, -1e-12])
                .collect();
            let mut a = g.clone();
            let mut b: Vec<f32> = g.iter().map(|v| v * loss_scale).collect();
            let ca = plain.cast(t, &mut a, true);
            let cb = scaled.cast_loss_scaled(t, &mut b, true, loss_scale);
            assert_eq!(ca, cb, "{scaling:?} step {step}: counts and amax");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x * loss_scale, *y, "{scaling:?} step {step}");
            }
            plain.end_step();
            scaled.end_step();
            assert_eq!(plain.tensor(t), scaled.tensor(t), "{scaling:?} step {step}");
        }
        // The amax, 0.07: 57344 / 0.07 → 2^19, in unscaled units on both.
        assert_eq!(scaled.tensor(t).scale, 524288.0, "{scaling:?}");
    }
}

#[test]
fn a_report_with_nan_and_infinite_amaxes_survives_json() {
    let mut r = examples::report("cpu", 3);
    r.tensors[0].total.amax = f32::NAN;
    r.tensors[1].total.amax = f32::INFINITY;
    r.tensors[2].points[0].amax = f32::NEG_INFINITY;
    let text = serde_json::to_string(&r).unwrap();
    let back: Fp8Report = serde_json::from_str(&text).unwrap();
    assert!(back.tensors[0].total.amax.is_nan());
    assert_eq!(back.tensors[1].total.amax, f32::INFINITY);
    assert_eq!(back.tensors[2].points[0].amax, f32::NEG_INFINITY);
    assert_eq!(back.tensors[3], r.tensors[3]);
    let bad = text.replacen("\"inf\"", "\"lots\"", 1);
    assert!(serde_json::from_str::<Fp8Report>(&bad).is_err());
}

#[test]
fn a_non_finite_amax_keeps_the_scale_and_gradients_use_e5m2() {
    let mut st = Fp8State::new(Fp8Recipe::default());
    let g = Fp8Tensor::Conv2GradOutput;
    assert_eq!(g.format(), Fp8Format::E5m2);
    assert_eq!(Fp8Tensor::Conv2Weight.format(), Fp8Format::E4m3);
    let mut v = vec![1e-3f32];
    st.cast(g, &mut v, true);
    st.end_step();
    let s = st.tensor(g).scale;
    assert_eq!(s, 2f32.powi(25));
    let mut bad = vec![f32::NAN, 1.0];
    st.cast(g, &mut bad, true);
    st.end_step();
    assert_eq!(st.tensor(g).scale, s, "NaN's step leaves the scale");
    assert!(st.tensor(g).last.amax.is_nan());
    let sample = Fp8TensorSample::of(st.tensor(g));
    assert_eq!(sample.history_len, 2);
    assert_eq!(sample.next_scale, s);
}
