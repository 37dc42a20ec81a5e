//! FP8 training's formats and per-tensor scaling: the two formats (E4M3 for weights and
//! activations in the forward pass, E5M2 for the gradients of the backward pass: the "hybrid"
//! recipe), the rounding of a value onto their grids, and the scale each tensor gets from the
//! history of its largest magnitude (amax).
//!
//! The recipe is Transformer Engine's default `DelayedScaling` (`margin = 0`,
//! `amax_history_len = 1024`, `amax_compute_algo = "max"`): a tensor is cast with the scale
//! computed from the amaxes of the steps *before* this one, and the step's own amax joins the
//! history afterwards. [`Fp8Scaling::Current`] instead scales each tensor by its own amax
//! (one more pass over it). One difference from Transformer Engine, stated wherever the scales
//! are shown: our scales are powers of two (`2^⌊log₂(max / amax)⌋`, as the MX formats' E8M0
//! scales are), so scaling and unscaling are exact and a scaled value's rounding error is the
//! format's alone.
//!
//! [`Fp8State::cast`] is the reference every backend is held against: the CPU backend's FP8
//! is this function (operands rounded to the grid with the tensor's scale, then FP32
//! arithmetic on the rounded values).

use serde::{Deserialize, Serialize};

use crate::histogram::FloatRange;

/// An 8-bit floating-point format (OCP FP8, NVIDIA's `__nv_fp8_e4m3` / `__nv_fp8_e5m2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fp8Format {
    /// Sign, 4 exponent bits, 3 mantissa bits; no infinities; 2⁻⁹ to 448.
    E4m3,
    /// Sign, 5 exponent bits, 2 mantissa bits (FP16's exponent); 2⁻¹⁶ to 57,344.
    E5m2,
}

/// E4M3's range: smallest subnormal 2⁻⁹, smallest normal 2⁻⁶, largest 448 (1.75 × 2⁸).
pub const E4M3: FloatRange = FloatRange {
    name: "e4m3",
    min_subnormal_exp: -9,
    min_normal_exp: -6,
    max_exp: 8,
    max: 448.0,
};

/// E5M2's range: smallest subnormal 2⁻¹⁶, smallest normal 2⁻¹⁴, largest 57,344 (1.75 × 2¹⁵).
pub const E5M2: FloatRange = FloatRange {
    name: "e5m2",
    min_subnormal_exp: -16,
    min_normal_exp: -14,
    max_exp: 15,
    max: 57344.0,
};

impl Fp8Format {
    /// The format's name as written in the docs (`E4M3`, `E5M2`).
    pub fn name(self) -> &'static str {
        match self {
            Fp8Format::E4m3 => "E4M3",
            Fp8Format::E5m2 => "E5M2",
        }
    }

    /// The format's range by powers of two.
    pub fn range(self) -> FloatRange {
        match self {
            Fp8Format::E4m3 => E4M3,
            Fp8Format::E5m2 => E5M2,
        }
    }

    /// The largest finite value (448 or 57,344).
    pub fn max(self) -> f32 {
        self.range().max as f32
    }

    /// `x` rounded to the nearest value of the format (ties to even), saturating at ±max
    /// (`__NV_SATFINITE`, what Transformer Engine's casts do); NaN stays NaN.
    ///
    /// The arithmetic of the GPU's `fp8_round` (kernels/cuda/fp8.cu): the spacing of the
    /// format's values in |x|'s binade (the smallest normal binade's for subnormals) is a power
    /// of two `ulp`, so |x| / ulp rounded to the nearest even integer, times ulp, is the
    /// nearest value; both products are exact. Tests hold it to the formats' definitions and
    /// to the `float8` crate.
    pub fn quantize(self, x: f32) -> f32 {
        if x.is_nan() {
            return x;
        }
        let a = x.abs();
        let max = self.max();
        if a >= max {
            return max.copysign(x);
        }
        let (mbits, emin) = match self {
            Fp8Format::E4m3 => (3, -6),
            Fp8Format::E5m2 => (2, -14),
        };
        // |x|'s binary exponent (f32 subnormals read as -127), at least the smallest normal's.
        let e = (((a.to_bits() >> 23) & 0xff) as i32 - 127).max(emin);
        let ulp_e = e - mbits;
        let ulp = f32::from_bits(((127 + ulp_e) as u32) << 23);
        let inv_ulp = f32::from_bits(((127 - ulp_e) as u32) << 23);
        // a / ulp < 2^(mbits + 1) (a is below the maximum): adding and taking away 2^23 rounds
        // it to the nearest integer, ties to even, in f32's own rounding (what
        // `round_ties_even` does, without the libm call it becomes on baseline x86-64).
        const SHIFT: f32 = 8_388_608.0;
        (((a * inv_ulp) + SHIFT - SHIFT) * ulp).copysign(x)
    }
}

/// How a tensor's scale is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fp8Scaling {
    /// From the amax history of the previous steps (Transformer Engine's default recipe): no
    /// extra pass over the tensor, but a step whose amax jumps overflows (saturates).
    #[default]
    Delayed,
    /// From the tensor's own amax, measured just before the cast: a finite tensor never
    /// saturates (an infinity from a wider type's overflow is kept and counted); costs a pass
    /// over the tensor.
    Current,
}

impl Fp8Scaling {
    /// `delayed` or `current`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fp8Scaling::Delayed => "delayed",
            Fp8Scaling::Current => "current",
        }
    }
}

impl std::str::FromStr for Fp8Scaling {
    type Err = crate::ComputeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "delayed" => Ok(Fp8Scaling::Delayed),
            "current" => Ok(Fp8Scaling::Current),
            _ => Err(crate::ComputeError::bad_arg(
                "--fp8-scaling",
                s,
                "expected delayed or current",
            )),
        }
    }
}

/// Amaxes kept per tensor (Transformer Engine's default `amax_history_len`).
pub const AMAX_HISTORY_LEN: usize = 1024;
/// Powers of two of headroom below the format's maximum (Transformer Engine's default margin).
pub const MARGIN: i32 = 0;
/// The scale's exponent stays within ±this: an all-but-zero amax must not make an infinite
/// scale.
pub const MAX_SCALE_EXP: i32 = 100;

/// The recipe of an FP8 run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fp8Recipe {
    /// Delayed (history) or current (own amax) scaling.
    pub scaling: Fp8Scaling,
    /// Amaxes kept per tensor (delayed scaling).
    pub history_len: usize,
    /// Powers of two of headroom below the format's maximum.
    pub margin: i32,
}

impl Default for Fp8Recipe {
    fn default() -> Self {
        Fp8Recipe {
            scaling: Fp8Scaling::Delayed,
            history_len: AMAX_HISTORY_LEN,
            margin: MARGIN,
        }
    }
}

impl Fp8Recipe {
    /// The recipe in words, for tables and captions.
    pub fn describe(&self) -> String {
        match self.scaling {
            Fp8Scaling::Delayed => format!(
                "delayed scaling: each tensor's scale from the largest amax of its last {} \
                 steps, margin {}, rounded down to a power of two",
                self.history_len, self.margin
            ),
            Fp8Scaling::Current => format!(
                "current scaling: each tensor's scale from its own amax, margin {}, rounded \
                 down to a power of two",
                self.margin
            ),
        }
    }
}

/// The scale that puts `amax` at or just below `format`'s maximum, less `margin` powers of
/// two: `2^(⌊log₂(max / amax)⌋ − margin)`. `None` when `amax` is zero or not finite (the
/// previous scale is kept, as Transformer Engine does).
pub fn scale_for(amax: f32, format: Fp8Format, margin: i32) -> Option<f32> {
    if !(amax.is_finite() && amax > 0.0) {
        return None;
    }
    let ratio = format.max() as f64 / amax as f64;
    let e = (crate::histogram::exponent(ratio) - margin).clamp(-MAX_SCALE_EXP, MAX_SCALE_EXP);
    Some(2f32.powi(e))
}

/// A tensor of the lab CNN that FP8 training casts: the operands of the two convolutions'
/// GEMMs. The dense layer (1,600 × 10) stays in FP32: it holds 0.65 % of the forward pass's
/// multiply-adds (16,000 of 2.44 million per image), and it is the layer next to the loss,
/// where FP8 recipes keep higher precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fp8Tensor {
    /// The normalised images (conv1's input), E4M3.
    Conv1Input,
    /// conv1's weights, E4M3.
    Conv1Weight,
    /// conv2's input (pool1's output), E4M3.
    Conv2Input,
    /// conv2's weights, E4M3.
    Conv2Weight,
    /// The gradient arriving at conv2's block (with respect to pool2's output), E5M2.
    Conv2GradOutput,
    /// The gradient arriving at conv1's block (with respect to pool1's output), E5M2.
    Conv1GradOutput,
}

impl Fp8Tensor {
    /// Every cast tensor, in the order of a step (forward, then backward).
    pub const ALL: [Fp8Tensor; 6] = [
        Fp8Tensor::Conv1Input,
        Fp8Tensor::Conv1Weight,
        Fp8Tensor::Conv2Input,
        Fp8Tensor::Conv2Weight,
        Fp8Tensor::Conv2GradOutput,
        Fp8Tensor::Conv1GradOutput,
    ];

    /// Index in [`Fp8Tensor::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// `conv1.input`, `conv2.weight`, `conv2.grad_output`, …
    pub fn name(self) -> &'static str {
        match self {
            Fp8Tensor::Conv1Input => "conv1.input",
            Fp8Tensor::Conv1Weight => "conv1.weight",
            Fp8Tensor::Conv2Input => "conv2.input",
            Fp8Tensor::Conv2Weight => "conv2.weight",
            Fp8Tensor::Conv2GradOutput => "conv2.grad_output",
            Fp8Tensor::Conv1GradOutput => "conv1.grad_output",
        }
    }

    /// The layer (`conv1`, `conv2`).
    pub fn layer(self) -> &'static str {
        match self {
            Fp8Tensor::Conv1Input | Fp8Tensor::Conv1Weight | Fp8Tensor::Conv1GradOutput => "conv1",
            _ => "conv2",
        }
    }

    /// E4M3 in the forward pass, E5M2 for gradients (the hybrid recipe).
    pub fn format(self) -> Fp8Format {
        match self {
            Fp8Tensor::Conv2GradOutput | Fp8Tensor::Conv1GradOutput => Fp8Format::E5m2,
            _ => Fp8Format::E4m3,
        }
    }

    /// Whether this is a gradient of the backward pass.
    pub fn is_gradient(self) -> bool {
        self.format() == Fp8Format::E5m2
    }
}

/// An amax that may be NaN or infinite (a value that overflowed a wider type, or a NaN, reached
/// the cast): JSON has no such numbers, so NaN travels as `null` and an infinity as `"inf"`
/// (serde_json would write `null` for both and then refuse to read it back as a number).
mod amax_json {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f32(*v)
        } else if v.is_nan() {
            s.serialize_none()
        } else if *v > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    /// Reads a number, `null` (NaN), `"inf"` or `"-inf"`.
    struct AmaxVisitor;

    impl serde::de::Visitor<'_> for AmaxVisitor {
        type Value = f32;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an amax: a number, null (NaN), \"inf\" or \"-inf\"")
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<f32, E> {
            Ok(v as f32)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<f32, E> {
            Ok(v as f32)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<f32, E> {
            Ok(v as f32)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<f32, E> {
            match v {
                "inf" => Ok(f32::INFINITY),
                "-inf" => Ok(f32::NEG_INFINITY),
                _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
            }
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<f32, E> {
            Ok(f32::NAN)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<f32, E> {
            Ok(f32::NAN)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
        d.deserialize_any(AmaxVisitor)
    }
}

/// What one cast saw.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CastCounts {
    /// Largest magnitude before the cast (unscaled); NaN where a value was NaN.
    #[serde(with = "amax_json")]
    pub amax: f32,
    /// Values whose scaled magnitude exceeded the format's maximum (saturated to it).
    pub overflow: u64,
    /// Nonzero values that became zero.
    pub underflow: u64,
    /// Nonzero values cast.
    pub nonzero: u64,
}

impl CastCounts {
    /// Both casts' counts together (the larger amax).
    pub fn merge(self, o: CastCounts) -> CastCounts {
        CastCounts {
            amax: if self.amax.is_nan() || o.amax.is_nan() {
                f32::NAN
            } else {
                self.amax.max(o.amax)
            },
            overflow: self.overflow + o.overflow,
            underflow: self.underflow + o.underflow,
            nonzero: self.nonzero + o.nonzero,
        }
    }
}

/// The amax of `values` (NaN if one is NaN).
pub fn amax(values: &[f32]) -> f32 {
    // Sixteen running maxima and a NaN flag, no early exit: a loop the compiler vectorises.
    const LANES: usize = 16;
    let mut lanes = [0f32; LANES];
    let mut nan = false;
    let chunks = values.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (m, &v) in lanes.iter_mut().zip(chunk) {
            let a = v.abs();
            nan |= a.is_nan();
            *m = if a > *m { a } else { *m };
        }
    }
    for &v in rest {
        let a = v.abs();
        nan |= a.is_nan();
        lanes[0] = if a > lanes[0] { a } else { lanes[0] };
    }
    if nan {
        f32::NAN
    } else {
        lanes.iter().fold(0f32, |m, &a| m.max(a))
    }
}

/// Rounds every value onto `format`'s grid at `scale`: `v ← q(v · scale) / scale`, where `q`
/// rounds to nearest even and saturates. With a power-of-two scale the result is exactly
/// what an FP8 tensor core multiplies (the stored FP8 value times the inverse scale). An
/// infinity is kept (and counted as an overflow): it says that a wider type already
/// overflowed, which the loss scaler or the divergence check must see; NaN is kept too.
pub fn cast_slice(values: &mut [f32], format: Fp8Format, scale: f32) -> CastCounts {
    let max = format.max();
    let inv = 1.0 / scale;
    let mut c = CastCounts {
        amax: amax(values),
        ..CastCounts::default()
    };
    // Counts as flags added, not branches; a zero rounds to itself.
    for v in values.iter_mut() {
        let x = *v;
        if !x.is_finite() {
            // NaN is not counted; an infinity is nonzero and saturates, and both are kept.
            let inf = !x.is_nan();
            c.nonzero += u64::from(inf);
            c.overflow += u64::from(inf);
            continue;
        }
        let nonzero = x != 0.0;
        let s = x * scale;
        let q = format.quantize(s);
        c.nonzero += u64::from(nonzero);
        c.overflow += u64::from(s.abs() > max);
        c.underflow += u64::from(nonzero && q == 0.0);
        *v = q * inv;
    }
    c
}

/// One tensor's scaling state and counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fp8TensorState {
    /// Which tensor.
    pub tensor: Fp8Tensor,
    /// The scale the next cast uses (delayed scaling); 1 before any history.
    pub scale: f32,
    /// The amaxes of past steps, oldest first (at most the recipe's `history_len`).
    pub amax_history: Vec<f32>,
    /// This step's casts so far.
    pub step: CastCounts,
    /// The scale this step's (last) cast used.
    pub step_scale: f32,
    /// The last finished step's counts.
    pub last: CastCounts,
    /// The scale the last finished step used.
    pub last_scale: f32,
    /// Counts over every finished step.
    pub total: CastCounts,
}

impl Fp8TensorState {
    /// A tensor with scale 1 and an empty history.
    pub fn new(tensor: Fp8Tensor) -> Self {
        Fp8TensorState {
            tensor,
            scale: 1.0,
            amax_history: Vec::new(),
            step: CastCounts::default(),
            step_scale: 1.0,
            last: CastCounts::default(),
            last_scale: 1.0,
            total: CastCounts::default(),
        }
    }

    /// The largest finite amax of the history (0 when it holds none): what the delayed scale
    /// comes from.
    pub fn history_amax(&self) -> f32 {
        self.amax_history
            .iter()
            .filter(|a| a.is_finite())
            .fold(0f32, |m, &a| m.max(a))
    }
}

/// The FP8 state of a training run: the recipe and one [`Fp8TensorState`] per cast tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fp8State {
    /// The recipe.
    pub recipe: Fp8Recipe,
    /// One per [`Fp8Tensor::ALL`], in that order.
    pub tensors: Vec<Fp8TensorState>,
    /// Steps finished.
    pub steps: u64,
}

impl Fp8State {
    /// Every tensor at scale 1, no history.
    pub fn new(recipe: Fp8Recipe) -> Self {
        Fp8State {
            recipe,
            tensors: Fp8Tensor::ALL.map(Fp8TensorState::new).to_vec(),
            steps: 0,
        }
    }

    /// The state of `t`.
    pub fn tensor(&self, t: Fp8Tensor) -> &Fp8TensorState {
        &self.tensors[t.index()]
    }

    /// Casts `values` (tensor `t`) in place, the reference of every backend's cast; with
    /// `record`, its amax and counts join the step's (training steps record, evaluation does
    /// not).
    pub fn cast(&mut self, t: Fp8Tensor, values: &mut [f32], record: bool) -> CastCounts {
        self.cast_loss_scaled(t, values, record, 1.0)
    }

    /// [`Fp8State::cast`] of values stored times a loss scale `loss_scale` (a power of two:
    /// FP16 storage's gradients under the dynamic loss scaler). The state stays in unscaled
    /// units whatever the loss scale does: the amax recorded is the values' over
    /// `loss_scale`, the scale kept is the unscaled one, and the cast multiplies the stored
    /// values by scale ÷ loss scale (exact: powers of two). A loss-scale change therefore
    /// moves no tensor's history, and a step cast at loss scale L equals the same step
    /// unscaled, times L.
    pub fn cast_loss_scaled(
        &mut self,
        t: Fp8Tensor,
        values: &mut [f32],
        record: bool,
        loss_scale: f32,
    ) -> CastCounts {
        let inv_loss = 1.0 / loss_scale;
        let scale = match self.recipe.scaling {
            Fp8Scaling::Delayed => self.tensors[t.index()].scale,
            Fp8Scaling::Current => {
                scale_for(amax(values) * inv_loss, t.format(), self.recipe.margin)
                    .unwrap_or(self.tensors[t.index()].scale)
            }
        };
        let mut c = cast_slice(values, t.format(), scale * inv_loss);
        c.amax *= inv_loss;
        if record {
            let s = &mut self.tensors[t.index()];
            s.step = s.step.merge(c);
            s.step_scale = scale;
            if self.recipe.scaling == Fp8Scaling::Current {
                // The scale in force is the one just used.
                s.scale = scale;
            }
        }
        c
    }

    /// Ends a step: each tensor's amax joins its history (the oldest leaves past the
    /// recipe's length) and, with delayed scaling, the next step's scale is computed from
    /// the history's largest amax (kept when the history holds no finite nonzero amax).
    pub fn end_step(&mut self) {
        let recipe = self.recipe;
        for s in &mut self.tensors {
            s.amax_history.push(s.step.amax);
            if s.amax_history.len() > recipe.history_len.max(1) {
                let extra = s.amax_history.len() - recipe.history_len.max(1);
                s.amax_history.drain(..extra);
            }
            if recipe.scaling == Fp8Scaling::Delayed {
                let finite = s
                    .amax_history
                    .iter()
                    .filter(|a| a.is_finite())
                    .fold(0f32, |m, &a| m.max(a));
                if let Some(next) = scale_for(finite, s.tensor.format(), recipe.margin) {
                    s.scale = next;
                }
            }
            s.last = s.step;
            s.last_scale = s.step_scale;
            s.total = s.total.merge(s.step);
            s.step = CastCounts::default();
            s.step_scale = s.scale;
        }
        self.steps += 1;
    }
}

/// One tensor at a sampled step (Act II's histogram slider).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fp8TensorSample {
    /// Which tensor.
    pub tensor: Fp8Tensor,
    /// The scale the step cast it with.
    pub scale: f32,
    /// Its amax at that step (unscaled).
    #[serde(with = "amax_json")]
    pub amax: f32,
    /// The largest finite amax of its history after the step (what the next delayed scale
    /// came from).
    #[serde(with = "amax_json")]
    pub history_amax: f32,
    /// Amaxes in the history after the step.
    pub history_len: usize,
    /// The scale the next step uses.
    pub next_scale: f32,
    /// Values saturated at the step.
    pub overflow: u64,
    /// Nonzero values that became zero at the step.
    pub underflow: u64,
    /// Nonzero values cast at the step.
    pub nonzero: u64,
    /// The tensor's values at the step before the cast, by power of two, before its scale
    /// (gradients on FP16 storage with the loss scale divided out, as the cast records them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<crate::histogram::Log2Histogram>,
}

impl Fp8TensorSample {
    /// The last finished step of `s` (no histogram).
    pub fn of(s: &Fp8TensorState) -> Self {
        Fp8TensorSample {
            tensor: s.tensor,
            scale: s.last_scale,
            amax: s.last.amax,
            history_amax: s.history_amax(),
            history_len: s.amax_history.len(),
            next_scale: s.scale,
            overflow: s.last.overflow,
            underflow: s.last.underflow,
            nonzero: s.last.nonzero,
            histogram: None,
        }
    }
}

/// A tensor's scale after a step (the scale chart).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fp8ScalePoint {
    /// 1-based step over the whole run.
    pub step: usize,
    /// The scale the step used.
    pub scale: f32,
    /// The step's amax (unscaled).
    #[serde(with = "amax_json")]
    pub amax: f32,
}

/// One tensor over an FP8 run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fp8TensorReport {
    /// Which tensor.
    pub tensor: Fp8Tensor,
    /// Its format.
    pub format: Fp8Format,
    /// Its scale and amax at the sampled steps (the loss curve's steps, and every step of the
    /// first epoch where the scale changed).
    pub points: Vec<Fp8ScalePoint>,
    /// Counts over the whole run.
    pub total: CastCounts,
    /// Elements per image (the storage FP8 saves is counted from it).
    pub elements_per_image: usize,
    /// Elements independent of the batch (weights).
    pub elements_fixed: usize,
}

/// The FP8 side of a run report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fp8Report {
    /// The recipe used.
    pub recipe: Fp8Recipe,
    /// Which engine ran the FP8 arithmetic, in words ("emulated on the CPU: …").
    pub engine: String,
    /// Whether the FP8 arithmetic was emulated (rounded operands, FP32 or FP16 arithmetic)
    /// rather than run on FP8 tensor cores.
    pub emulated: bool,
    /// The device it ran on (the duel's own device, or the CPU where the duel's GPU backend
    /// has no FP8).
    pub device: String,
    /// One per cast tensor.
    pub tensors: Vec<Fp8TensorReport>,
    /// Steps taken.
    pub steps: u64,
    /// Bytes the cast tensors hold at one byte per element (at the run's batch), and at the
    /// storage the run used.
    pub fp8_bytes: u64,
    /// See [`Fp8Report::fp8_bytes`].
    pub stored_bytes: u64,
}

impl Fp8Report {
    /// Overflows (saturations) over the run, every tensor.
    pub fn overflow(&self) -> u64 {
        self.tensors.iter().map(|t| t.total.overflow).sum()
    }
    /// Underflows over the run, every tensor.
    pub fn underflow(&self) -> u64 {
        self.tensors.iter().map(|t| t.total.underflow).sum()
    }
}

/// The run's FP8 story in one sentence (the duel table's note, the verdict, the walk).
pub fn fp8_sentence(r: &Fp8Report) -> String {
    let values: u64 = r.tensors.iter().map(|t| t.total.nonzero).sum();
    let pct = |c: u64| 100.0 * c as f64 / values.max(1) as f64;
    format!(
        "FP8 ({}; {}): {} step(s), {} saturated and {} flushed to zero of {} nonzero values \
         cast ({:.3} % and {:.3} %).",
        if r.emulated {
            "emulated"
        } else {
            "tensor cores"
        },
        r.recipe.scaling.as_str(),
        crate::format::thousands(r.steps),
        crate::format::thousands(r.overflow()),
        crate::format::thousands(r.underflow()),
        crate::format::thousands(values),
        pct(r.overflow()),
        pct(r.underflow()),
    )
}

/// An example FP8 side of a run, for tests of every crate that shows it (and nothing else).
pub mod examples {
    use super::*;

    /// An emulated delayed-scaling FP8 run of `steps` steps on `device`: each tensor scaled
    /// at 1 for step 1, then at its format's scale for an amax of 2 (forward) or 2⁻¹⁰
    /// (gradients).
    pub fn report(device: &str, steps: u64) -> Fp8Report {
        let tensors = Fp8Tensor::ALL
            .iter()
            .map(|&t| {
                let amax = if t.is_gradient() { 2f32.powi(-10) } else { 2.0 };
                let scale = scale_for(amax, t.format(), MARGIN).unwrap_or(1.0);
                Fp8TensorReport {
                    tensor: t,
                    format: t.format(),
                    points: vec![
                        Fp8ScalePoint {
                            step: 1,
                            scale: 1.0,
                            amax,
                        },
                        Fp8ScalePoint {
                            step: steps as usize,
                            scale,
                            amax,
                        },
                    ],
                    total: CastCounts {
                        amax,
                        overflow: if t.is_gradient() { 3 } else { 0 },
                        underflow: if t.is_gradient() { 1000 } else { 10 },
                        nonzero: 1_000_000,
                    },
                    elements_per_image: 100,
                    elements_fixed: 0,
                }
            })
            .collect();
        Fp8Report {
            recipe: Fp8Recipe::default(),
            engine: "emulated on the CPU: each operand rounded to E4M3/E5M2 with its tensor's \
                     scale, the products and sums in FP32"
                .into(),
            emulated: true,
            device: device.into(),
            tensors,
            steps,
            fp8_bytes: 6 * 100 * 128,
            stored_bytes: 4 * 6 * 100 * 128,
        }
    }
}

#[cfg(test)]
mod tests;
