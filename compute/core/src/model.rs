//! The lab CNN: its specification and per-layer introspection (shapes, parameters, FLOPs,
//! activation bytes), pure so the UI can compute it in WASM; and a trained model's weights
//! ([`ModelWeights`]), as the run history keeps them.
//!
//! ```text
//! input  [N, 1, 28, 28]
//! conv1  Conv(1→32, 3×3) + ReLU  → [N, 32, 26, 26]
//! pool1  MaxPool 2×2             → [N, 32, 13, 13]
//! conv2  Conv(32→64, 3×3) + ReLU → [N, 64, 11, 11]
//! pool2  MaxPool 2×2             → [N, 64, 5, 5]
//! flatten                        → [N, 1600]
//! dropout p = 0.5                → [N, 1600]
//! dense  Linear(1600→10)         → [N, 10]
//! ```

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::precision::Precision;

/// Shape of a 2-D convolution (stride 1, no padding), NCHW.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvShape {
    /// Input channels.
    pub c_in: usize,
    /// Output channels.
    pub c_out: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Kernel size (square).
    pub k: usize,
}

impl ConvShape {
    /// Output height.
    pub fn h_out(&self) -> usize {
        self.h + 1 - self.k
    }
    /// Output width.
    pub fn w_out(&self) -> usize {
        self.w + 1 - self.k
    }
    /// Elements of one input image.
    pub fn in_len(&self) -> usize {
        self.c_in * self.h * self.w
    }
    /// Elements of one output image.
    pub fn out_len(&self) -> usize {
        self.c_out * self.h_out() * self.w_out()
    }
    /// Rows of the unrolled (im2col) matrix: `c_in · k · k`.
    pub fn patch_len(&self) -> usize {
        self.c_in * self.k * self.k
    }
    /// Output pixels per channel.
    pub fn out_pixels(&self) -> usize {
        self.h_out() * self.w_out()
    }
    /// Weight elements (without bias).
    pub fn weight_len(&self) -> usize {
        self.c_out * self.patch_len()
    }
}

/// The lab CNN's fixed architecture.
pub mod lab {
    use super::ConvShape;
    /// Input image side.
    pub const IMAGE: usize = 28;
    /// Classes.
    pub const CLASSES: usize = 10;
    /// conv1: 1→32, 28×28, k3.
    pub const CONV1: ConvShape = ConvShape {
        c_in: 1,
        c_out: 32,
        h: 28,
        w: 28,
        k: 3,
    };
    /// conv2: 32→64, 13×13, k3.
    pub const CONV2: ConvShape = ConvShape {
        c_in: 32,
        c_out: 64,
        h: 13,
        w: 13,
        k: 3,
    };
    /// Side after pool1 (26 / 2).
    pub const POOL1: usize = 13;
    /// Side after pool2 (floor(11 / 2)).
    pub const POOL2: usize = 5;
    /// Flattened features into the dense layer.
    pub const FEATURES: usize = 64 * POOL2 * POOL2;
}

/// The activation after each convolution of the lab CNN (the CNN variant switch of the Kernel
/// Reveal). The duel trains any of them on either backend (the GPU's conv blocks apply it before
/// the pool's maximum and multiply its derivative in on the way back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// max(z, 0).
    #[default]
    Relu,
    /// z·Φ(z), the erf form (PyTorch `nn.GELU()`).
    Gelu,
    /// z·σ(z) (SiLU, PyTorch `nn.SiLU()`).
    Swish,
}

impl Activation {
    /// Every variant, in table order.
    pub const ALL: [Activation; 3] = [Activation::Relu, Activation::Gelu, Activation::Swish];

    /// Lower-case name (`relu`, `gelu`, `swish`), as flags and JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::Gelu => "gelu",
            Activation::Swish => "swish",
        }
    }

    /// The activation of `z`.
    pub fn apply(self, z: f64) -> f64 {
        match self {
            Activation::Relu => z.max(0.0),
            Activation::Gelu => 0.5 * z * (1.0 + libm::erf(z / std::f64::consts::SQRT_2)),
            Activation::Swish => z / (1.0 + (-z).exp()),
        }
    }

    /// Its derivative at `z` (ReLU's is taken as 0 at 0, as PyTorch does).
    pub fn derivative(self, z: f64) -> f64 {
        match self {
            Activation::Relu => {
                if z > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Activation::Gelu => {
                let cdf = 0.5 * (1.0 + libm::erf(z / std::f64::consts::SQRT_2));
                let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
                cdf + z * pdf
            }
            Activation::Swish => {
                let s = 1.0 / (1.0 + (-z).exp());
                s * (1.0 + z * (1.0 - s))
            }
        }
    }

    /// Display form (`ReLU`, `GELU`, `Swish`).
    pub fn label(self) -> &'static str {
        match self {
            Activation::Relu => "ReLU",
            Activation::Gelu => "GELU",
            Activation::Swish => "Swish",
        }
    }
}

impl std::fmt::Display for Activation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Activation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "relu" => Ok(Activation::Relu),
            "gelu" => Ok(Activation::Gelu),
            "swish" | "silu" => Ok(Activation::Swish),
            _ => Err(format!(
                "unknown activation `{s}`: expected relu, gelu or swish"
            )),
        }
    }
}

/// One layer as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerInfo {
    /// Short name (`conv1`, `pool1`, ...).
    pub name: String,
    /// What it is, e.g. `Conv2d(1→32, 3×3) + ReLU`.
    pub kind: String,
    /// Input shape per image (C, H, W or features).
    pub input: Vec<usize>,
    /// Output shape per image.
    pub output: Vec<usize>,
    /// Trainable parameters.
    pub params: usize,
    /// Forward FLOPs per image (multiply-add counted as 2).
    pub flops_fwd: u64,
    /// Output activation bytes per image in FP32.
    pub activation_bytes_fp32: usize,
    /// Docs page (under docs-content) that explains the layer.
    pub doc: String,
}

/// The whole model summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// Layers in order.
    pub layers: Vec<LayerInfo>,
    /// Total trainable parameters.
    pub params: usize,
    /// Forward FLOPs per image.
    pub flops_fwd: u64,
    /// Training FLOPs per image (forward + backward ≈ 3 × forward for convs and dense).
    pub flops_train: u64,
}

fn conv_flops(s: &ConvShape) -> u64 {
    (2 * s.patch_len() * s.out_len()) as u64
}

/// Describes the lab CNN layer by layer.
pub fn lab_summary() -> ModelSummary {
    use lab::*;
    let c1 = CONV1;
    let c2 = CONV2;
    let layers = vec![
        LayerInfo {
            name: "conv1".into(),
            kind: "Conv2d(1→32, 3×3) + ReLU".into(),
            input: vec![1, IMAGE, IMAGE],
            output: vec![32, c1.h_out(), c1.w_out()],
            params: c1.weight_len() + c1.c_out,
            flops_fwd: conv_flops(&c1) + 2 * c1.out_len() as u64,
            activation_bytes_fp32: 4 * c1.out_len(),
            doc: "layers/conv2d".into(),
        },
        LayerInfo {
            name: "pool1".into(),
            kind: "MaxPool2d(2×2)".into(),
            input: vec![32, c1.h_out(), c1.w_out()],
            output: vec![32, POOL1, POOL1],
            params: 0,
            flops_fwd: 3 * (32 * POOL1 * POOL1) as u64,
            activation_bytes_fp32: 4 * 32 * POOL1 * POOL1,
            doc: "layers/maxpool".into(),
        },
        LayerInfo {
            name: "conv2".into(),
            kind: "Conv2d(32→64, 3×3) + ReLU".into(),
            input: vec![32, POOL1, POOL1],
            output: vec![64, c2.h_out(), c2.w_out()],
            params: c2.weight_len() + c2.c_out,
            flops_fwd: conv_flops(&c2) + 2 * c2.out_len() as u64,
            activation_bytes_fp32: 4 * c2.out_len(),
            doc: "layers/conv2d".into(),
        },
        LayerInfo {
            name: "pool2".into(),
            kind: "MaxPool2d(2×2)".into(),
            input: vec![64, c2.h_out(), c2.w_out()],
            output: vec![64, POOL2, POOL2],
            params: 0,
            flops_fwd: 3 * FEATURES as u64,
            activation_bytes_fp32: 4 * FEATURES,
            doc: "layers/maxpool".into(),
        },
        LayerInfo {
            name: "flatten".into(),
            kind: "Flatten".into(),
            input: vec![64, POOL2, POOL2],
            output: vec![FEATURES],
            params: 0,
            flops_fwd: 0,
            activation_bytes_fp32: 0,
            doc: "layers/flatten-dropout".into(),
        },
        LayerInfo {
            name: "dropout".into(),
            kind: "Dropout(p = 0.5)".into(),
            input: vec![FEATURES],
            output: vec![FEATURES],
            params: 0,
            flops_fwd: FEATURES as u64,
            activation_bytes_fp32: 4 * FEATURES,
            doc: "layers/flatten-dropout".into(),
        },
        LayerInfo {
            name: "dense".into(),
            kind: "Linear(1600→10)".into(),
            input: vec![FEATURES],
            output: vec![CLASSES],
            params: FEATURES * CLASSES + CLASSES,
            flops_fwd: (2 * FEATURES * CLASSES) as u64,
            activation_bytes_fp32: 4 * CLASSES,
            doc: "layers/dense".into(),
        },
    ];
    let params = layers.iter().map(|l| l.params).sum();
    let flops_fwd = layers.iter().map(|l| l.flops_fwd).sum();
    ModelSummary {
        layers,
        params,
        flops_fwd,
        flops_train: 3 * flops_fwd,
    }
}

/// Parameter tensors of the lab CNN, in order: conv1 weight and bias, conv2 weight and bias,
/// dense weight and bias.
pub const PARAM_NAMES: [&str; 6] = [
    "conv1.w", "conv1.b", "conv2.w", "conv2.b", "dense.w", "dense.b",
];

/// Length of each parameter tensor (see [`PARAM_NAMES`]).
pub fn param_lens() -> [usize; 6] {
    let (c1, c2) = (lab::CONV1, lab::CONV2);
    [
        c1.weight_len(),
        c1.c_out,
        c2.weight_len(),
        c2.c_out,
        lab::FEATURES * lab::CLASSES,
        lab::CLASSES,
    ]
}

/// Why weights or a digit cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// A parameter tensor has the wrong length.
    #[error("model parameter {name} holds {got} values, the lab CNN needs {want}")]
    ParamLength {
        /// The tensor's name ([`PARAM_NAMES`]).
        name: &'static str,
        /// Values found.
        got: usize,
        /// Values needed.
        want: usize,
    },
    /// A parameter tensor is not valid base64 of little-endian f32s.
    #[error("model parameter {name}: {reason}")]
    ParamEncoding {
        /// The tensor's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A drawn or chosen digit has the wrong size.
    #[error("the digit holds {got} pixels, a {side}×{side} image needs {want}")]
    DigitSize {
        /// Pixels found.
        got: usize,
        /// Pixels needed.
        want: usize,
        /// The image's side.
        side: usize,
    },
    /// A pixel outside the layer was asked for.
    #[error("{layer} has no output pixel (channel {channel}, row {y}, column {x})")]
    NoSuchPixel {
        /// The layer.
        layer: String,
        /// Channel asked for.
        channel: usize,
        /// Row asked for.
        y: usize,
        /// Column asked for.
        x: usize,
    },
}

/// A trained model: the master weights (FP32) of one contestant at the end of its run, and
/// what it was trained as. Kept with the duel in the run history (35k parameters, about
/// 190 KB of JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelWeights {
    /// The precision it trained in (its forward pass runs in the same one).
    pub precision: Precision,
    /// The activation after each convolution.
    pub activation: Activation,
    /// `[conv1.w, conv1.b, conv2.w, conv2.b, dense.w, dense.b]` (row-major, PyTorch's layouts:
    /// conv `[c_out, c_in, k, k]`, dense `[out, in]`), each as base64 of little-endian f32s.
    #[serde(with = "params_base64")]
    pub params: [Vec<f32>; 6],
}

impl ModelWeights {
    /// Weights for the lab CNN, checking every tensor's length.
    pub fn new(
        precision: Precision,
        activation: Activation,
        params: [Vec<f32>; 6],
    ) -> Result<Self, ExplainError> {
        let w = ModelWeights {
            precision,
            activation,
            params,
        };
        w.check()?;
        Ok(w)
    }

    /// Checks every tensor's length against the lab CNN.
    pub fn check(&self) -> Result<(), ExplainError> {
        for ((p, want), name) in self.params.iter().zip(param_lens()).zip(PARAM_NAMES) {
            if p.len() != want {
                return Err(ExplainError::ParamLength {
                    name,
                    got: p.len(),
                    want,
                });
            }
        }
        Ok(())
    }
}

/// `[Vec<f32>; 6]` as six base64 strings of little-endian f32s.
mod params_base64 {
    use super::*;
    use serde::de::Error as _;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Vec<f32>; 6], s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<String> = v.iter().map(|t| encode_f32(t)).collect();
        texts.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[Vec<f32>; 6], D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        if texts.len() != 6 {
            return Err(D::Error::custom(format!(
                "a model has 6 parameter tensors, this one {}",
                texts.len()
            )));
        }
        let mut out: [Vec<f32>; 6] = Default::default();
        for ((o, t), name) in out.iter_mut().zip(&texts).zip(PARAM_NAMES) {
            *o = decode_f32(name, t).map_err(D::Error::custom)?;
        }
        Ok(out)
    }
}

/// Little-endian f32s as standard padded base64.
pub fn encode_f32(values: &[f32]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The inverse of [`encode_f32`]; `name` names the tensor in the error.
pub fn decode_f32(name: &str, text: &str) -> Result<Vec<f32>, ExplainError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| ExplainError::ParamEncoding {
            name: name.into(),
            reason: format!("not base64: {e}"),
        })?;
    if bytes.len() % 4 != 0 {
        return Err(ExplainError::ParamEncoding {
            name: name.into(),
            reason: format!("{} bytes is not a whole number of f32s", bytes.len()),
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_cnn_matches_the_pytorch_parameter_count() {
        // PyTorch: 1*32*9+32 + 32*64*9+64 + 1600*10+10 = 320 + 18496 + 16010
        let s = lab_summary();
        assert_eq!(s.params, 34_826);
        assert_eq!(s.layers[2].output, vec![64, 11, 11]);
        assert_eq!(s.layers[4].output, vec![1600]);
    }

    #[test]
    fn activation_derivatives_match_central_differences() {
        for act in Activation::ALL {
            for i in -40..=40 {
                let z = i as f64 * 0.1 + 0.013;
                let h = 1e-6;
                let fd = (act.apply(z + h) - act.apply(z - h)) / (2.0 * h);
                let d = act.derivative(z);
                assert!((fd - d).abs() < 1e-6, "{act} at {z}: {d} vs {fd}");
            }
        }
        assert_eq!(Activation::Gelu.apply(0.0), 0.0);
        assert!((Activation::Gelu.apply(1.0) - 0.841_344_746_068_543).abs() < 1e-12);
        assert!((Activation::Swish.apply(1.0) - 0.731_058_578_630_004_9).abs() < 1e-12);
        assert_eq!("SiLU".parse::<Activation>(), Ok(Activation::Swish));
        assert!("tanh".parse::<Activation>().unwrap_err().contains("tanh"));
    }

    #[test]
    fn forward_flops_are_about_4_9_mflop_per_image() {
        let f = lab_summary().flops_fwd as f64 / 1e6;
        assert!((4.8..5.0).contains(&f), "{f}");
    }
}

#[cfg(test)]
mod doc_link_tests {
    /// Every layer's `doc` names a page of docs-content/ (the Docs page renders them).
    #[test]
    fn every_layer_doc_page_exists() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs-content");
        for l in super::lab_summary().layers {
            let page = root.join(format!("{}.md", l.doc));
            assert!(page.is_file(), "{}: {} is missing", l.name, page.display());
        }
    }
}
