//! Act I, inside the network: a trained model's weights, its forward pass on one digit with
//! every layer's output, the convolution at one output pixel with the real numbers, and a drawn
//! digit centred the way MNIST's digits are.
//!
//! The forward pass here is the lab CNN written plainly (direct loops, f32 accumulation) with
//! the storage rounding of the precision the model trained in: the input, the low-precision
//! weight copies and every layer's stored output rounded to FP16/BF16 (TF32 rounds the
//! convolution's operands to a 10-bit mantissa), the biases kept in FP32 — what the trainer's
//! kernels compute. The service checks it against the backend's own forward pass of the same
//! weights and reports the largest difference ([`ModelActivations::backend_check`]).
//!
//! Which model an image goes through, and its class names: [`matching`].

use serde::{Deserialize, Serialize};

pub mod matching;

pub use crate::model::{
    decode_f32, encode_f32, param_lens, ExplainError, ModelWeights, PARAM_NAMES,
};
use crate::model::{lab, Activation, ConvShape};
use crate::precision::Precision;

/// One layer's output for one image: `channels` maps of `height × width`, row-major.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerMaps {
    /// `input`, `conv1`, `pool1`, `conv2`, `pool2`, `logits`, `softmax`.
    pub layer: String,
    /// What the values are, in words.
    pub what: String,
    /// Maps.
    pub channels: usize,
    /// Rows of each map.
    pub height: usize,
    /// Columns of each map.
    pub width: usize,
    /// `channels × height × width` values.
    pub values: Vec<f32>,
}

impl LayerMaps {
    /// Map `c` (empty past the last).
    pub fn map(&self, c: usize) -> &[f32] {
        let n = self.height * self.width;
        self.values.get(c * n..(c + 1) * n).unwrap_or(&[])
    }

    /// The value at channel `c`, row `y`, column `x`.
    pub fn at(&self, c: usize, y: usize, x: usize) -> Option<f32> {
        if c >= self.channels || y >= self.height || x >= self.width {
            return None;
        }
        self.values
            .get((c * self.height + y) * self.width + x)
            .copied()
    }

    /// Smallest and largest value of map `c` (0, 0 for an empty map).
    pub fn range(&self, c: usize) -> (f32, f32) {
        let m = self.map(c);
        if m.is_empty() {
            return (0.0, 0.0);
        }
        m.iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            })
    }
}

/// Every layer of one model on one digit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelActivations {
    /// The precision the model trained in and runs in here.
    pub precision: Precision,
    /// The activation after each convolution.
    pub activation: Activation,
    /// Input (normalised), conv1 (pre-activation), pool1, conv2 (pre-activation), pool2,
    /// logits, softmax — in that order.
    pub layers: Vec<LayerMaps>,
    /// The predicted class.
    pub prediction: usize,
    /// The softmax probabilities (10).
    pub probabilities: Vec<f32>,
    /// The largest difference between these layers (pool1, pool2, logits) and the backend's
    /// own forward pass of the same weights, and which backend, in words; `None` when the
    /// service did not run one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_check: Option<BackendCheck>,
}

impl ModelActivations {
    /// The layer named `name`.
    pub fn layer(&self, name: &str) -> Option<&LayerMaps> {
        self.layers.iter().find(|l| l.layer == name)
    }
}

/// How the pure forward pass compares with the training backend's kernels on the same digit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendCheck {
    /// `cpu` or `cuda`.
    pub backend: String,
    /// The device in words.
    pub device: String,
    /// Largest |difference| over pool1, pool2 and the logits.
    pub max_abs_diff: f32,
    /// Whether the backend predicts the same class.
    pub same_prediction: bool,
}

/// Rounds `v` to what a buffer of `precision`'s activation type stores.
pub fn store(precision: Precision, v: f32) -> f32 {
    match precision {
        Precision::Fp32 | Precision::Tf32 => v,
        Precision::Fp16 => half::f16::from_f32(v).to_f32(),
        Precision::Bf16 => half::bf16::from_f32(v).to_f32(),
        // FP8 runs store FP32 between the casts: the cast's rounding depends on each
        // tensor's scale (`crate::fp8`), not on the storage.
        Precision::Fp8 => v,
    }
}

/// Rounds a convolution or dense operand as the precision's arithmetic sees it: FP16/BF16
/// storage, TF32's 10-bit mantissa (round to nearest, ties away), FP32 unchanged.
pub fn operand(precision: Precision, v: f32) -> f32 {
    match precision {
        Precision::Tf32 => tf32(v),
        p => store(p, v),
    }
}

/// `v` rounded to TF32 (10 explicit mantissa bits; nearest, ties away from zero, as
/// `cvt.rna.tf32.f32`).
pub fn tf32(v: f32) -> f32 {
    if !v.is_finite() {
        return v;
    }
    let bits = v.to_bits();
    f32::from_bits((bits.wrapping_add(0x1000)) & 0xffff_e000)
}

/// The weights as the forward pass reads them: the low-precision copies of the three weight
/// tensors (mixed precision), the biases in FP32. FP8: the convolutions' weights cast to E4M3
/// (see [`fp8_operand`]), the dense layer's kept in FP32.
fn weights_as_used(w: &ModelWeights) -> [Vec<f32>; 6] {
    let p = w.precision;
    let mut out = w.params.clone();
    for i in [0, 2, 4] {
        out[i] = w.params[i].iter().map(|&v| store(p, v)).collect();
    }
    if p.casts_to_fp8() {
        out[0] = fp8_operand(&w.params[0]);
        out[2] = fp8_operand(&w.params[2]);
    }
    out
}

/// An FP8 run's convolution operand as inference sees it: cast to E4M3 at the scale of its own
/// amax (current scaling: one digit has no amax history), through [`crate::fp8::Fp8State::cast`]
/// as training's casts.
pub fn fp8_operand(values: &[f32]) -> Vec<f32> {
    let mut out = values.to_vec();
    let f = crate::fp8::Fp8Format::E4m3;
    let scale = crate::fp8::scale_for(crate::fp8::amax(&out), f, crate::fp8::MARGIN).unwrap_or(1.0);
    crate::fp8::cast_slice(&mut out, f, scale);
    out
}

/// Pre-activations of one convolution: `z[c_out, ho, wo] = Σ x·w + b`, operands rounded as
/// the precision's arithmetic sees them, accumulated in f32.
fn conv(x: &[f32], w: &[f32], b: &[f32], s: &ConvShape, p: Precision) -> Vec<f32> {
    let (ho, wo, k) = (s.h_out(), s.w_out(), s.k);
    let xr: Vec<f32> = x.iter().map(|&v| operand(p, v)).collect();
    let wr: Vec<f32> = w.iter().map(|&v| operand(p, v)).collect();
    let mut z = vec![0f32; s.out_len()];
    for co in 0..s.c_out {
        for oy in 0..ho {
            for ox in 0..wo {
                let mut acc = 0f32;
                for ci in 0..s.c_in {
                    for ky in 0..k {
                        for kx in 0..k {
                            acc += xr[(ci * s.h + oy + ky) * s.w + ox + kx]
                                * wr[((co * s.c_in + ci) * k + ky) * k + kx];
                        }
                    }
                }
                z[(co * ho + oy) * wo + ox] = acc + b[co];
            }
        }
    }
    z
}

/// The activation, then the 2×2 max-pool (floor) of `c` maps of `h × w` pre-activations,
/// stored in the precision's type: what the trainer's fused conv block computes.
pub fn act_pool(
    z: &[f32],
    c: usize,
    h: usize,
    w: usize,
    act: Activation,
    p: Precision,
) -> Vec<f32> {
    let (ph, pw) = (h / 2, w / 2);
    let mut out = vec![0f32; c * ph * pw];
    for ch in 0..c {
        for py in 0..ph {
            for px in 0..pw {
                let mut best = f32::NEG_INFINITY;
                for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let v = z[(ch * h + 2 * py + dy) * w + 2 * px + dx];
                    best = best.max(act.apply(v as f64) as f32);
                }
                out[(ch * ph + py) * pw + px] = store(p, best);
            }
        }
    }
    out
}

/// The image normalised as the trainer's data loader does: `(p/255 − mean) / std`.
pub fn normalise(pixels: &[u8], mean: f32, std: f32) -> Vec<f32> {
    let scale = 1.0 / (255.0 * std);
    let shift = mean / std;
    pixels.iter().map(|&p| p as f32 * scale - shift).collect()
}

/// The forward pass of `weights` on one 28×28 grey image (0 background, 255 ink), normalised
/// with `mean` and `std`: every layer's output (see [`ModelActivations::layers`]).
pub fn forward(
    weights: &ModelWeights,
    pixels: &[u8],
    mean: f32,
    std: f32,
) -> Result<ModelActivations, ExplainError> {
    weights.check()?;
    let side = lab::IMAGE;
    if pixels.len() != side * side {
        return Err(ExplainError::DigitSize {
            got: pixels.len(),
            want: side * side,
            side,
        });
    }
    let p = weights.precision;
    let act = weights.activation;
    let [w1, b1, w2, b2, w3, b3] = weights_as_used(weights);
    let mut x: Vec<f32> = normalise(pixels, mean, std)
        .into_iter()
        .map(|v| store(p, v))
        .collect();
    if p.casts_to_fp8() {
        x = fp8_operand(&x);
    }
    let (c1, c2) = (lab::CONV1, lab::CONV2);
    let z1 = conv(&x, &w1, &b1, &c1, p);
    let mut a1 = act_pool(&z1, c1.c_out, c1.h_out(), c1.w_out(), act, p);
    if p.casts_to_fp8() {
        a1 = fp8_operand(&a1);
    }
    let z2 = conv(&a1, &w2, &b2, &c2, p);
    let a2 = act_pool(&z2, c2.c_out, c2.h_out(), c2.w_out(), act, p);
    let mut logits = vec![0f32; lab::CLASSES];
    for (o, l) in logits.iter_mut().enumerate() {
        let mut acc = 0f32;
        for (i, &f) in a2.iter().enumerate() {
            acc += operand(p, f) * operand(p, w3[o * lab::FEATURES + i]);
        }
        *l = store(p, acc + b3[o]);
    }
    let probabilities = softmax(&logits);
    let prediction = argmax(&logits);
    let maps = |layer: &str, what: &str, channels, height, width, values| LayerMaps {
        layer: layer.into(),
        what: what.into(),
        channels,
        height,
        width,
        values,
    };
    let act_name = act.name();
    Ok(ModelActivations {
        precision: p,
        activation: act,
        layers: vec![
            maps(
                "input",
                "the image, normalised (p/255 − mean) / std",
                1,
                side,
                side,
                x,
            ),
            maps(
                "conv1",
                &format!("Σ input × filter + bias, before {act_name} (32 maps, 3×3 filters)"),
                c1.c_out,
                c1.h_out(),
                c1.w_out(),
                z1,
            ),
            maps(
                "pool1",
                &format!("{act_name}, then the largest of each 2×2 window"),
                c1.c_out,
                lab::POOL1,
                lab::POOL1,
                a1,
            ),
            maps(
                "conv2",
                &format!("Σ over 32 maps × 3×3 filters + bias, before {act_name} (64 maps)"),
                c2.c_out,
                c2.h_out(),
                c2.w_out(),
                z2,
            ),
            maps(
                "pool2",
                &format!("{act_name}, then 2×2 max-pool: the 1,600 features"),
                c2.c_out,
                lab::POOL2,
                lab::POOL2,
                a2,
            ),
            maps(
                "logits",
                "Σ features × weights + bias, one per class",
                1,
                1,
                lab::CLASSES,
                logits,
            ),
            maps(
                "softmax",
                "e^logit / Σ e^logits",
                1,
                1,
                lab::CLASSES,
                probabilities.clone(),
            ),
        ],
        prediction,
        probabilities,
        backend_check: None,
    })
}

/// Softmax in f64 (stable), as f32.
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits
        .iter()
        .fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    let e: Vec<f64> = logits.iter().map(|&v| (v as f64 - max).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| (v / sum) as f32).collect()
}

/// Index of the largest value (the first on a tie; 0 when empty).
pub fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in values.iter().enumerate() {
        if v > values[best] {
            best = i;
        }
    }
    best
}

/// One product of the convolution at a pixel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConvTerm {
    /// Input map.
    pub channel: usize,
    /// Filter row.
    pub ky: usize,
    /// Filter column.
    pub kx: usize,
    /// The input value (as the arithmetic sees it).
    pub input: f32,
    /// The weight (as the arithmetic sees it).
    pub weight: f32,
}

/// The convolution at one output pixel of `conv1` or `conv2`, with the real numbers: every
/// input × weight, the bias, the sum (the map's value), the activation, and the max-pool
/// window this pixel belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvAtPixel {
    /// `conv1` or `conv2`.
    pub layer: String,
    /// Output map.
    pub channel: usize,
    /// Output row.
    pub y: usize,
    /// Output column.
    pub x: usize,
    /// `c_in × 3 × 3` products.
    pub terms: Vec<ConvTerm>,
    /// The bias (FP32).
    pub bias: f32,
    /// Σ input × weight + bias, accumulated in f32 in the order of `terms`.
    pub sum: f32,
    /// The activation of `sum`.
    pub activated: f32,
    /// The pool window's pixel `(y, x)` holding the largest activation, and whether it is this
    /// one; `None` for the odd last row/column that the floor pool drops.
    pub pool_choice: Option<(usize, usize)>,
}

/// The convolution at pixel `(y, x)` of map `channel` of `layer` (`conv1` or `conv2`) of
/// `acts`, computed with `weights` (those `acts` came from).
pub fn conv_at(
    weights: &ModelWeights,
    acts: &ModelActivations,
    layer: &str,
    channel: usize,
    y: usize,
    x: usize,
) -> Result<ConvAtPixel, ExplainError> {
    let (shape, input_name, w_idx) = match layer {
        "conv1" => (lab::CONV1, "input", 0),
        "conv2" => (lab::CONV2, "pool1", 2),
        _ => {
            return Err(ExplainError::NoSuchPixel {
                layer: layer.into(),
                channel,
                y,
                x,
            })
        }
    };
    let no_pixel = || ExplainError::NoSuchPixel {
        layer: layer.into(),
        channel,
        y,
        x,
    };
    if channel >= shape.c_out || y >= shape.h_out() || x >= shape.w_out() {
        return Err(no_pixel());
    }
    let input = acts.layer(input_name).ok_or_else(no_pixel)?;
    let out = acts.layer(layer).ok_or_else(no_pixel)?;
    let p = weights.precision;
    let used = weights_as_used(weights);
    let (w, b) = (&used[w_idx], &used[w_idx + 1]);
    let k = shape.k;
    let mut terms = Vec::with_capacity(shape.patch_len());
    let mut acc = 0f32;
    for ci in 0..shape.c_in {
        for ky in 0..k {
            for kx in 0..k {
                let iv = operand(p, input.at(ci, y + ky, x + kx).ok_or_else(no_pixel)?);
                let wv = operand(p, w[((channel * shape.c_in + ci) * k + ky) * k + kx]);
                acc += iv * wv;
                terms.push(ConvTerm {
                    channel: ci,
                    ky,
                    kx,
                    input: iv,
                    weight: wv,
                });
            }
        }
    }
    let sum = acc + b[channel];
    let pool_choice = if y / 2 < shape.h_out() / 2 && x / 2 < shape.w_out() / 2 {
        let (y0, x0) = (y / 2 * 2, x / 2 * 2);
        let mut best = (y0, x0);
        let mut best_v = f32::NEG_INFINITY;
        for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            let z = out.at(channel, y0 + dy, x0 + dx).ok_or_else(no_pixel)?;
            let v = acts.activation.apply(z as f64) as f32;
            if v > best_v {
                best_v = v;
                best = (y0 + dy, x0 + dx);
            }
        }
        Some(best)
    } else {
        None
    };
    Ok(ConvAtPixel {
        layer: layer.into(),
        channel,
        y,
        x,
        terms,
        bias: b[channel],
        sum,
        activated: acts.activation.apply(sum as f64) as f32,
        pool_choice,
    })
}

/// A drawn digit made to look like MNIST's: the ink's bounding box scaled (keeping its aspect)
/// to fit 20×20, then placed in the 28×28 frame so that its centre of mass is the centre — the
/// recipe of the MNIST data set's makers. `pixels` is a `side × side` grey image (0 background,
/// 255 ink). A blank drawing stays blank.
pub fn centre_digit(pixels: &[u8], side: usize) -> Result<Vec<u8>, ExplainError> {
    if side == 0 || pixels.len() != side * side {
        return Err(ExplainError::DigitSize {
            got: pixels.len(),
            want: side * side,
            side,
        });
    }
    let out_side = lab::IMAGE;
    let (mut y0, mut y1, mut x0, mut x1) = (side, 0, side, 0);
    for y in 0..side {
        for x in 0..side {
            if pixels[y * side + x] > 0 {
                y0 = y0.min(y);
                y1 = y1.max(y + 1);
                x0 = x0.min(x);
                x1 = x1.max(x + 1);
            }
        }
    }
    if y1 == 0 {
        return Ok(vec![0; out_side * out_side]);
    }
    let (bh, bw) = ((y1 - y0) as f64, (x1 - x0) as f64);
    let scale = 20.0 / bh.max(bw);
    let (nh, nw) = (
        ((bh * scale).round() as usize).max(1),
        ((bw * scale).round() as usize).max(1),
    );
    // Box-filter resample of the bounding box into nh × nw (area average).
    let mut small = vec![0f64; nh * nw];
    for (oy, row) in small.chunks_mut(nw).enumerate() {
        for (ox, cell) in row.iter_mut().enumerate() {
            let (sy0, sy1) = (oy as f64 / scale, (oy + 1) as f64 / scale);
            let (sx0, sx1) = (ox as f64 / scale, (ox + 1) as f64 / scale);
            let (mut acc, mut area) = (0.0, 0.0);
            let mut sy = sy0.floor() as usize;
            while (sy as f64) < sy1 && sy < y1 - y0 {
                let hy = (sy1.min(sy as f64 + 1.0) - sy0.max(sy as f64)).max(0.0);
                let mut sx = sx0.floor() as usize;
                while (sx as f64) < sx1 && sx < x1 - x0 {
                    let wx = (sx1.min(sx as f64 + 1.0) - sx0.max(sx as f64)).max(0.0);
                    acc += hy * wx * pixels[(y0 + sy) * side + x0 + sx] as f64;
                    area += hy * wx;
                    sx += 1;
                }
                sy += 1;
            }
            *cell = if area > 0.0 { acc / area } else { 0.0 };
        }
    }
    // Centre of mass of the resampled ink.
    let (mut m, mut my, mut mx) = (0.0, 0.0, 0.0);
    for (i, &v) in small.iter().enumerate() {
        m += v;
        my += v * (i / nw) as f64;
        mx += v * (i % nw) as f64;
    }
    let (cy, cx) = if m > 0.0 {
        (my / m, mx / m)
    } else {
        ((nh as f64 - 1.0) / 2.0, (nw as f64 - 1.0) / 2.0)
    };
    let centre = (out_side as f64 - 1.0) / 2.0;
    let (oy, ox) = (
        (centre - cy).round() as isize,
        (centre - cx).round() as isize,
    );
    let mut out = vec![0u8; out_side * out_side];
    for (i, &v) in small.iter().enumerate() {
        let (ty, tx) = ((i / nw) as isize + oy, (i % nw) as isize + ox);
        if (0..out_side as isize).contains(&ty) && (0..out_side as isize).contains(&tx) {
            out[ty as usize * out_side + tx as usize] = v.round().clamp(0.0, 255.0) as u8;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(precision: Precision) -> ModelWeights {
        let mut seed = 12345u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.4
        };
        let params = param_lens().map(|n| (0..n).map(|_| next()).collect::<Vec<f32>>());
        ModelWeights::new(precision, Activation::Relu, params).unwrap()
    }

    fn digit() -> Vec<u8> {
        (0..784)
            .map(|i| {
                let (y, x) = (i / 28, i % 28);
                if (8..20).contains(&y) && (12..16).contains(&x) {
                    255
                } else {
                    0
                }
            })
            .collect()
    }

    #[test]
    fn weights_round_trip_through_json_bit_for_bit_and_wrong_lengths_are_named() {
        let w = weights(Precision::Fp16);
        let text = serde_json::to_string(&w).unwrap();
        let back: ModelWeights = serde_json::from_str(&text).unwrap();
        assert_eq!(back, w);
        let mut bad = w.clone();
        bad.params[3].pop();
        let e = bad.check().unwrap_err().to_string();
        assert!(
            e.contains("conv2.b") && e.contains("63") && e.contains("64"),
            "{e}"
        );
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["params"][1] = "***".into();
        let e = serde_json::from_value::<ModelWeights>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("conv1.b") && e.contains("base64"), "{e}");
    }

    #[test]
    fn every_layer_has_the_lab_cnn_shape_and_pools_are_the_maxima_of_the_conv_maps() {
        let w = weights(Precision::Fp32);
        let a = forward(&w, &digit(), 0.1307, 0.3081).unwrap();
        let shapes: Vec<(String, usize, usize, usize)> = a
            .layers
            .iter()
            .map(|l| (l.layer.clone(), l.channels, l.height, l.width))
            .collect();
        let want = [
            ("input", 1, 28, 28),
            ("conv1", 32, 26, 26),
            ("pool1", 32, 13, 13),
            ("conv2", 64, 11, 11),
            ("pool2", 64, 5, 5),
            ("logits", 1, 1, 10),
            ("softmax", 1, 1, 10),
        ];
        for (got, want) in shapes.iter().zip(want) {
            assert_eq!((got.0.as_str(), got.1, got.2, got.3), want);
            let l = a.layer(want.0).unwrap();
            assert_eq!(l.values.len(), want.1 * want.2 * want.3);
        }
        let (c2, p2) = (a.layer("conv2").unwrap(), a.layer("pool2").unwrap());
        for c in 0..64 {
            for y in 0..5 {
                for x in 0..5 {
                    let m = [(0, 0), (0, 1), (1, 0), (1, 1)]
                        .iter()
                        .map(|(dy, dx)| c2.at(c, 2 * y + dy, 2 * x + dx).unwrap().max(0.0))
                        .fold(f32::NEG_INFINITY, f32::max);
                    assert_eq!(p2.at(c, y, x).unwrap(), m);
                }
            }
        }
        let s: f32 = a.probabilities.iter().sum();
        assert!((s - 1.0).abs() < 1e-5);
        assert_eq!(a.prediction, argmax(&a.probabilities));
    }

    #[test]
    fn the_convolution_at_a_pixel_sums_to_the_maps_value_in_every_precision() {
        for p in [
            Precision::Fp32,
            Precision::Tf32,
            Precision::Fp16,
            Precision::Bf16,
        ] {
            let w = weights(p);
            let a = forward(&w, &digit(), 0.1307, 0.3081).unwrap();
            for (layer, c, y, x) in [
                ("conv1", 3, 10, 13),
                ("conv2", 17, 4, 5),
                ("conv2", 0, 10, 10),
            ] {
                let at = conv_at(&w, &a, layer, c, y, x).unwrap();
                assert_eq!(
                    at.sum,
                    a.layer(layer).unwrap().at(c, y, x).unwrap(),
                    "{p} {layer}"
                );
                let direct: f32 =
                    at.terms.iter().map(|t| t.input * t.weight).sum::<f32>() + at.bias;
                assert_eq!(at.sum, direct);
                assert_eq!(at.terms.len(), if layer == "conv1" { 9 } else { 288 });
            }
            let at = conv_at(&w, &a, "conv2", 0, 10, 10).unwrap();
            assert_eq!(
                at.pool_choice, None,
                "the floor pool drops row and column 10"
            );
        }
        let w = weights(Precision::Fp32);
        let a = forward(&w, &digit(), 0.1307, 0.3081).unwrap();
        let e = conv_at(&w, &a, "conv2", 64, 0, 0).unwrap_err().to_string();
        assert!(e.contains("conv2") && e.contains("channel 64"), "{e}");
        assert!(conv_at(&w, &a, "pool1", 0, 0, 0).is_err());
    }

    #[test]
    fn fp16_models_store_fp16_values_and_differ_from_fp32_only_by_rounding() {
        let w32 = weights(Precision::Fp32);
        let mut w16 = w32.clone();
        w16.precision = Precision::Fp16;
        let a32 = forward(&w32, &digit(), 0.1307, 0.3081).unwrap();
        let a16 = forward(&w16, &digit(), 0.1307, 0.3081).unwrap();
        for l in &a16.layer("pool2").unwrap().values {
            assert_eq!(*l, half::f16::from_f32(*l).to_f32());
        }
        let (l32, l16) = (
            &a32.layer("logits").unwrap().values,
            &a16.layer("logits").unwrap().values,
        );
        let d = l32
            .iter()
            .zip(l16)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(d > 0.0 && d < 0.05, "fp16 vs fp32 logits differ by {d}");
    }

    #[test]
    fn tf32_keeps_ten_mantissa_bits() {
        assert_eq!(tf32(1.0), 1.0);
        let v = 1.0 + 2f32.powi(-11) + 2f32.powi(-20);
        assert_eq!(tf32(v), 1.0 + 2f32.powi(-10));
        assert_eq!(tf32(1.0 + 2f32.powi(-12)), 1.0);
    }

    #[test]
    fn a_drawn_digit_is_scaled_into_20_pixels_and_centred_by_its_mass() {
        // A 10×40 bar in the top-left corner of a 100×100 drawing.
        let side = 100;
        let mut d = vec![0u8; side * side];
        for y in 5..45 {
            for x in 2..12 {
                d[y * side + x] = 255;
            }
        }
        let c = centre_digit(&d, side).unwrap();
        let ink: Vec<(usize, usize)> = (0..784)
            .filter(|&i| c[i] > 127)
            .map(|i| (i / 28, i % 28))
            .collect();
        let rows =
            ink.iter().map(|p| p.0).max().unwrap() - ink.iter().map(|p| p.0).min().unwrap() + 1;
        let cols =
            ink.iter().map(|p| p.1).max().unwrap() - ink.iter().map(|p| p.1).min().unwrap() + 1;
        assert_eq!((rows, cols), (20, 5));
        let m: f64 = c.iter().map(|&v| v as f64).sum();
        let cy: f64 = c
            .iter()
            .enumerate()
            .map(|(i, &v)| v as f64 * (i / 28) as f64)
            .sum::<f64>()
            / m;
        let cx: f64 = c
            .iter()
            .enumerate()
            .map(|(i, &v)| v as f64 * (i % 28) as f64)
            .sum::<f64>()
            / m;
        assert!(
            (cy - 13.5).abs() <= 0.5 && (cx - 13.5).abs() <= 0.5,
            "centre ({cy}, {cx})"
        );
        assert_eq!(centre_digit(&vec![0; 784], 28).unwrap(), vec![0; 784]);
        let e = centre_digit(&[0; 10], 28).unwrap_err().to_string();
        assert!(e.contains("10 pixels") && e.contains("784"), "{e}");
    }
}
