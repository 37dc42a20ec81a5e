//! The reports of `showdown bench …`, declared once for every reader: the CLI that measures and
//! prints them, `showdown bench plot` that draws them, and the app that shows the committed runs
//! (`docs/results/*.json`). Each report has its module, with the pure logic over it: peers'
//! rows paired with ours, labels, the tables both the terminal and the page print.
//!
//! - [`kernels`]: the activation and norm kernels' checks and timings against PyTorch
//!   (`showdown bench kernels`, [`kernels::KernelsBench`]);
//! - [`conv`]: the convolution ladder against cuDNN (`showdown bench conv`,
//!   [`conv::ConvBench`]);
//! - [`infer`]: the lab CNN's inference latency against PyTorch (`showdown bench infer`,
//!   [`InferenceReport`](crate::inference::InferenceReport));
//! - [`crossover`]: the precision crossover, GEMMs at growing sizes in every precision
//!   (`showdown bench crossover`, [`crossover::CrossoverReport`]);
//! - [`duel`]: our duel beside PyTorch's training scripts (`showdown bench duel`,
//!   [`duel::DuelBench`]).

use serde::de::DeserializeOwned;

pub mod anatomy;
pub mod conv;
pub mod crossover;
pub mod duel;
pub mod infer;
pub mod kernels;

#[cfg(test)]
mod tests;

/// A results file that is not the report it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the {what}: {reason}")]
pub struct ParseError {
    /// Which report was expected (`convolution ladder`, `kernel benchmark`, ...).
    pub what: &'static str,
    /// What serde said.
    pub reason: String,
}

/// Parses `json` as the report `what`.
pub(crate) fn parse_json<T: DeserializeOwned>(
    json: &str,
    what: &'static str,
) -> Result<T, ParseError> {
    serde_json::from_str(json).map_err(|e| ParseError {
        what,
        reason: e.to_string(),
    })
}

/// The lines of a peer script's stdout that may be JSON objects (trimmed, starting with `{`).
pub(crate) fn json_lines(stdout: &str) -> impl Iterator<Item = &str> {
    stdout.lines().map(str::trim).filter(|l| l.starts_with('{'))
}

/// Our short dtype name (`f32`, `f16`, `bf16`) for PyTorch's (`float32`, `float16`,
/// `bfloat16`); other names are kept.
pub fn our_dtype(torch_dtype: &str) -> &str {
    match torch_dtype {
        "float32" => "f32",
        "float16" => "f16",
        "bfloat16" => "bf16",
        other => other,
    }
}

/// `v` with `digits` decimals, or `–` when there is none.
pub(crate) fn or_dash(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.digits$}"))
}
