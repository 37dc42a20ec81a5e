//! The training precisions (a duel's contestants) and the backend choice: the leaf every
//! feature names, importing nothing of the features back.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::error::ComputeError;

/// A training precision (a duel "contestant").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Strict FP32 everywhere (no tensor cores).
    Fp32,
    /// FP32 storage, TF32 tensor-core math (GPU only).
    Tf32,
    /// Mixed precision: FP16 activations and weight copies, FP32 master weights and
    /// accumulation, dynamic loss scaling.
    Fp16,
    /// Mixed precision with BF16 activations; no loss scaler.
    Bf16,
    /// FP8 training: the convolutions' operands in E4M3 (forward) and E5M2 (gradients),
    /// each tensor with its own scale ([`crate::fp8`]); FP32 master weights, Adam state and
    /// accumulation. Emulated: over FP32 storage on the CPU (no loss scaler), over FP16
    /// storage on a GPU (FP16's loss scaler too).
    Fp8,
}

impl Precision {
    /// Every precision, in the order the UI lists them.
    pub const ALL: [Precision; 5] = [
        Precision::Fp32,
        Precision::Fp16,
        Precision::Tf32,
        Precision::Bf16,
        Precision::Fp8,
    ];

    /// The lower-case name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }

    /// Bytes per stored activation element (FP8's cast operands: one; see
    /// [`crate::fp8::Fp8Report`] for what an emulated run stored).
    pub fn activation_bytes(self) -> usize {
        match self {
            Precision::Fp32 | Precision::Tf32 => 4,
            Precision::Fp16 | Precision::Bf16 => 2,
            Precision::Fp8 => 1,
        }
    }

    /// Whether this precision trains with a dynamic loss scaler on every backend.
    pub fn uses_loss_scaler(self) -> bool {
        match self {
            Precision::Fp16 => true,
            Precision::Fp32 | Precision::Tf32 | Precision::Bf16 | Precision::Fp8 => false,
        }
    }

    /// Whether this precision may train with a dynamic loss scaler on some backend: FP16
    /// always, FP8 where its storage is FP16 (a GPU; the CPU's FP8 runs without one).
    pub fn may_use_loss_scaler(self) -> bool {
        match self {
            Precision::Fp16 | Precision::Fp8 => true,
            Precision::Fp32 | Precision::Tf32 | Precision::Bf16 => false,
        }
    }

    /// Whether the convolutions' operands are cast to FP8 with a per-tensor scale
    /// ([`crate::fp8`]), on top of the storage [`Precision::activation_bytes`] describes.
    pub fn casts_to_fp8(self) -> bool {
        match self {
            Precision::Fp8 => true,
            Precision::Fp32 | Precision::Tf32 | Precision::Fp16 | Precision::Bf16 => false,
        }
    }

    /// Whether this is a reduced precision: one that keeps low-precision copies of the
    /// weights beside FP32 master weights (FP16, BF16, FP8's E4M3 grid). FP32 and TF32 keep
    /// FP32 weights only.
    pub fn is_reduced(self) -> bool {
        match self {
            Precision::Fp16 | Precision::Bf16 | Precision::Fp8 => true,
            Precision::Fp32 | Precision::Tf32 => false,
        }
    }

    /// Whether activations and weight copies are stored in a 16-bit float (FP16, BF16).
    pub fn stores_16_bit(self) -> bool {
        match self {
            Precision::Fp16 | Precision::Bf16 => true,
            Precision::Fp32 | Precision::Tf32 | Precision::Fp8 => false,
        }
    }

    /// Whether the arithmetic rounds below FP32 anywhere (every precision but strict FP32):
    /// what a comparison with an FP32 reference must allow for.
    pub fn rounds_below_fp32(self) -> bool {
        match self {
            Precision::Fp32 => false,
            Precision::Tf32 | Precision::Fp16 | Precision::Bf16 | Precision::Fp8 => true,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = ComputeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "f32" => Ok(Precision::Fp32),
            "tf32" => Ok(Precision::Tf32),
            "fp16" | "f16" | "amp" => Ok(Precision::Fp16),
            "bf16" => Ok(Precision::Bf16),
            "fp8" | "f8" => Ok(Precision::Fp8),
            _ => Err(ComputeError::bad_arg(
                "precision",
                s,
                "expected one of fp32, fp16, tf32, bf16, fp8",
            )),
        }
    }
}

/// Which backend runs a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The GPU when one is usable, otherwise the CPU (saying why).
    #[default]
    Auto,
    /// The CPU backend.
    Cpu,
    /// The CUDA backend; an error if no usable GPU.
    Cuda,
}

impl FromStr for BackendChoice {
    type Err = ComputeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" | "gpu" => Ok(BackendChoice::Cuda),
            _ => Err(ComputeError::bad_arg(
                "backend",
                s,
                "expected auto, cpu or cuda",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_precision_reads_back_from_its_name() {
        for p in Precision::ALL {
            assert_eq!(p.as_str().parse::<Precision>().unwrap(), p);
            assert_eq!(p.to_string(), p.as_str());
        }
        assert!("fp64".parse::<Precision>().is_err());
    }

    #[test]
    fn the_properties_name_the_precisions_they_always_named() {
        let with = |f: fn(Precision) -> bool| -> Vec<Precision> {
            Precision::ALL.into_iter().filter(|p| f(*p)).collect()
        };
        use Precision::*;
        assert_eq!(with(Precision::uses_loss_scaler), [Fp16]);
        assert_eq!(with(Precision::may_use_loss_scaler), [Fp16, Fp8]);
        assert_eq!(with(Precision::casts_to_fp8), [Fp8]);
        assert_eq!(with(Precision::is_reduced), [Fp16, Bf16, Fp8]);
        assert_eq!(with(Precision::stores_16_bit), [Fp16, Bf16]);
        assert_eq!(with(Precision::rounds_below_fp32), [Fp16, Tf32, Bf16, Fp8]);
    }
}
