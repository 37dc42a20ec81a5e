//! FP8's scaling state on the device (`kernels/cuda/fp8.cu`): the one `u64` array the cast
//! and end-of-step kernels share, and its conversion from and to
//! [`Fp8State`](crate::fp8::Fp8State) (the reference the kernels mirror).

use crate::error::Result;
use crate::fp8::{CastCounts, Fp8Recipe, Fp8Scaling, Fp8State, Fp8Tensor, Fp8TensorState};

use super::err;

/// Header words: scaling, history length, margin, steps (`FP8_HDR`).
pub(crate) const HDR: usize = 4;
/// The longest amax history the kernels keep (`FP8_HIST`).
pub(crate) const HIST: usize = 1024;
/// Words of one tensor before its history (`FP8_W_HIST`).
const W_HIST: usize = 21;
/// Words per tensor (`FP8_TW`).
const TW: usize = W_HIST + HIST;
/// Words of the whole state.
pub(crate) const WORDS: usize = HDR + Fp8Tensor::ALL.len() * TW;

// The per-tensor words, as `FP8_W_*` in fp8.cu (the test below holds them to it). Each of
// the step's, the last step's and the total counts is five words from its `*_AMAX`: amax
// bits, NaN flag, overflow, underflow, nonzero.
const W_SCALE: usize = 0;
const W_STEP_SCALE: usize = 1;
const W_STEP_AMAX: usize = 2;
const W_LAST_SCALE: usize = 7;
const W_LAST_AMAX: usize = 8;
const W_TOT_AMAX: usize = 13;
const W_HLEN: usize = 18;
const W_HPOS: usize = 19;

fn bits(f: f32) -> u64 {
    u64::from(f.to_bits())
}

fn float(w: u64) -> f32 {
    f32::from_bits(w as u32)
}

/// Counts as words: amax bits (a NaN amax as 0 with the NaN flag set), NaN flag, overflow,
/// underflow, nonzero.
fn counts_words(c: &CastCounts) -> [u64; 5] {
    let nan = c.amax.is_nan();
    [
        if nan { 0 } else { bits(c.amax) },
        u64::from(nan),
        c.overflow,
        c.underflow,
        c.nonzero,
    ]
}

fn counts_of(w: &[u64]) -> CastCounts {
    CastCounts {
        amax: if w[1] != 0 { f32::NAN } else { float(w[0]) },
        overflow: w[2],
        underflow: w[3],
        nonzero: w[4],
    }
}

/// The device words of `s`; an error for a history longer than the kernels keep.
pub(crate) fn to_words(s: &Fp8State) -> Result<Vec<u64>> {
    let hl = s.recipe.history_len;
    if hl == 0 || hl > HIST {
        return Err(err(format!(
            "FP8 on the GPU keeps 1 to {HIST} amaxes per tensor, not {hl}"
        )));
    }
    if s.tensors.len() != Fp8Tensor::ALL.len() {
        return Err(err("an FP8 state holds one entry per cast tensor"));
    }
    let mut w = vec![0u64; WORDS];
    w[0] = u64::from(s.recipe.scaling == Fp8Scaling::Current);
    w[1] = hl as u64;
    w[2] = i64::from(s.recipe.margin) as u64;
    w[3] = s.steps;
    for (i, t) in s.tensors.iter().enumerate() {
        if t.tensor != Fp8Tensor::ALL[i] {
            return Err(err("an FP8 state's tensors are in Fp8Tensor::ALL's order"));
        }
        let b = &mut w[HDR + i * TW..HDR + (i + 1) * TW];
        b[W_SCALE] = bits(t.scale);
        b[W_STEP_SCALE] = bits(t.step_scale);
        b[W_STEP_AMAX..W_STEP_AMAX + 5].copy_from_slice(&counts_words(&t.step));
        b[W_LAST_SCALE] = bits(t.last_scale);
        b[W_LAST_AMAX..W_LAST_AMAX + 5].copy_from_slice(&counts_words(&t.last));
        b[W_TOT_AMAX..W_TOT_AMAX + 5].copy_from_slice(&counts_words(&t.total));
        let hist = &t.amax_history[t.amax_history.len().saturating_sub(hl)..];
        for (j, a) in hist.iter().enumerate() {
            b[W_HIST + j] = bits(*a);
        }
        b[W_HLEN] = hist.len() as u64;
        b[W_HPOS] = (hist.len() % hl) as u64;
    }
    Ok(w)
}

/// The state the device words `w` hold.
pub(crate) fn from_words(w: &[u64]) -> Result<Fp8State> {
    if w.len() < WORDS {
        return Err(err("FP8 state buffer too short"));
    }
    let hl = (w[1] as usize).clamp(1, HIST);
    let recipe = Fp8Recipe {
        scaling: if w[0] == 1 {
            Fp8Scaling::Current
        } else {
            Fp8Scaling::Delayed
        },
        history_len: hl,
        margin: w[2] as i64 as i32,
    };
    let tensors = Fp8Tensor::ALL
        .iter()
        .enumerate()
        .map(|(i, &tensor)| {
            let b = &w[HDR + i * TW..HDR + (i + 1) * TW];
            let len = (b[W_HLEN] as usize).min(hl);
            let pos = (b[W_HPOS] as usize) % hl;
            // Oldest first: a full ring starts at the next position to write.
            let start = if len == hl { pos } else { 0 };
            let amax_history = (0..len)
                .map(|k| float(b[W_HIST + (start + k) % hl]))
                .collect();
            Fp8TensorState {
                tensor,
                scale: float(b[W_SCALE]),
                amax_history,
                step: counts_of(&b[W_STEP_AMAX..W_STEP_AMAX + 5]),
                step_scale: float(b[W_STEP_SCALE]),
                last: counts_of(&b[W_LAST_AMAX..W_LAST_AMAX + 5]),
                last_scale: float(b[W_LAST_SCALE]),
                total: counts_of(&b[W_TOT_AMAX..W_TOT_AMAX + 5]),
            }
        })
        .collect();
    Ok(Fp8State {
        recipe,
        tensors,
        steps: w[3],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_indices_are_fp8_cus() {
        let src = kernels::TRAIN.source;
        let start = src.find("FP8_W_SCALE,").unwrap();
        let end = start + src[start..].find('}').unwrap();
        let names: Vec<&str> = src[start..end]
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        for (name, word) in [
            ("FP8_W_SCALE", W_SCALE),
            ("FP8_W_STEP_SCALE", W_STEP_SCALE),
            ("FP8_W_STEP_AMAX", W_STEP_AMAX),
            ("FP8_W_STEP_NZ", W_STEP_AMAX + 4),
            ("FP8_W_LAST_SCALE", W_LAST_SCALE),
            ("FP8_W_LAST_AMAX", W_LAST_AMAX),
            ("FP8_W_LAST_NZ", W_LAST_AMAX + 4),
            ("FP8_W_TOT_AMAX", W_TOT_AMAX),
            ("FP8_W_TOT_NZ", W_TOT_AMAX + 4),
            ("FP8_W_HLEN", W_HLEN),
            ("FP8_W_HPOS", W_HPOS),
            ("FP8_W_HIST", W_HIST),
        ] {
            assert_eq!(at(name), word, "{name}");
        }
        assert!(src.contains("#define FP8_HDR 4") && src.contains("#define FP8_HIST 1024"));
        assert_eq!((HDR, HIST), (4, 1024));
    }

    #[test]
    fn the_device_words_hold_the_state_and_its_history_oldest_first() {
        let mut s = Fp8State::new(Fp8Recipe {
            history_len: 3,
            ..Fp8Recipe::default()
        });
        for (k, amax) in [2.0f32, 10.0, 1.0, 0.5, f32::NAN].into_iter().enumerate() {
            let mut v = vec![amax, -0.25 * (k as f32 + 1.0)];
            s.cast(Fp8Tensor::Conv2Weight, &mut v, true);
            s.end_step();
        }
        let back = from_words(&to_words(&s).unwrap()).unwrap();
        // NaN != NaN: compare through the words.
        assert_eq!(to_words(&back).unwrap(), to_words(&s).unwrap());
        let t = back.tensor(Fp8Tensor::Conv2Weight);
        assert_eq!(t.amax_history.len(), 3);
        assert_eq!(
            t.amax_history[..2],
            [1.0, 1.0],
            "|-1| outweighs 0.5 at step 4"
        );
        assert!(t.amax_history[2].is_nan());
        assert!(t.last.amax.is_nan() && t.total.amax.is_nan());
        assert_eq!(back.steps, 5);
        assert_eq!(back.recipe, s.recipe);
        let long = Fp8State::new(Fp8Recipe {
            history_len: HIST + 1,
            ..Fp8Recipe::default()
        });
        assert!(to_words(&long).is_err());
    }
}
