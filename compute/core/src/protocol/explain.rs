//! Act I's request and reply: a saved model's forward pass on one digit.

use serde::{Deserialize, Serialize};

use super::strict;

// Named in the doc links only.
#[cfg(doc)]
use super::Request;

/// Where Act I's digit comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case", deny_unknown_fields)]
pub enum DigitSource {
    /// An image of a data set.
    Dataset {
        /// The data set's name (`mnist-sample`, `fashion-mnist`, `mnist`).
        dataset: String,
        /// The split (default `test`).
        #[serde(default)]
        split: crate::types::DataSplit,
        /// The image's index in the split.
        index: usize,
    },
    /// A drawing: `side × side` grey bytes (0 background, 255 ink), row-major, in standard
    /// padded base64; centred and scaled as MNIST's digits are
    /// ([`centre_digit`](crate::explain::centre_digit)) before the forward pass.
    Drawn {
        /// The drawing's side in pixels (at most [`MAX_DRAWING_SIDE`]).
        side: usize,
        /// The grey bytes.
        pixels_base64: String,
    },
}

/// [`ExplainRequest::run`] naming the initial weights (seed 0) instead of a saved duel.
pub const INITIAL_WEIGHTS: &str = "initial";

/// The largest drawing [`DigitSource::Drawn`] takes.
pub const MAX_DRAWING_SIDE: usize = 512;

/// [`Request::Explain`]: the forward pass of a saved duel's models on one digit; answers an
/// [`ExplainReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    /// The saved duel whose models to use, or [`INITIAL_WEIGHTS`] for the untrained initial
    /// weights (seed 0); by default the newest duel that kept a model trained on the image's
    /// data set ([`newest_model_for`](crate::explain::matching::newest_model_for)), and the
    /// initial weights, with [`ExplainReport::no_model_for`] set, when there is none.
    #[serde(default)]
    pub run: Option<String>,
    /// The contestants to show (default: every model the run kept; each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub precisions: Vec<crate::types::Precision>,
    /// The digit (an object, `{"from":"dataset",...}`).
    #[serde(deserialize_with = "strict::object")]
    pub digit: DigitSource,
    /// The backend whose kernels check the forward pass (default `auto`: the GPU when there
    /// is one and it runs the precision, else the CPU).
    #[serde(default)]
    pub backend: crate::types::BackendChoice,
}

/// [`Request::Explain`]'s answer: every layer of each chosen model on the digit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainReport {
    /// The saved duel the models come from (`None`: the initial weights).
    pub run: Option<String>,
    /// Where the models come from, in words.
    pub model_source: String,
    /// The image's data set, whose class names [`ExplainReport::class_names`] are (a drawing:
    /// the digits it imitates, `mnist-sample`, or `mnist` when the models were trained on it).
    pub dataset: String,
    /// The class names of the image's data set (Fashion-MNIST's garments for a Fashion image).
    pub class_names: Vec<String>,
    /// The data set the models were trained on (`None`: the untrained initial weights).
    #[serde(default)]
    pub trained_on: Option<String>,
    /// How the models fit the image (`None`: untrained).
    #[serde(default)]
    pub fit: Option<crate::explain::matching::Fit>,
    /// The models' data set against the image's, in words
    /// ([`fit_note`](crate::explain::matching::fit_note)): a warning when they were trained on
    /// other images.
    #[serde(default)]
    pub fit_note: String,
    /// Set when no saved duel kept a model trained on the image's data set (the models shown
    /// are then the untrained initial weights): the data set a short duel would train on
    /// ([`short_duel`](crate::explain::matching::short_duel)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_model_for: Option<String>,
    /// The names of the models' output classes where they are not the image's (a model chosen
    /// by hand that was trained on another data set); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_class_names: Vec<String>,
    /// The digit's label, for a data-set image.
    pub label: Option<u8>,
    /// The 28×28 grey digit the models saw (a drawing after centring), base64.
    pub digit_base64: String,
    /// The normalisation applied: `(p/255 − mean) / std`.
    pub mean: f32,
    /// See [`ExplainReport::mean`].
    pub std: f32,
    /// One entry per model, in the order asked.
    pub models: Vec<crate::explain::ModelActivations>,
    /// The models' weights (same order), for the filters and the convolution at a pixel.
    pub weights: Vec<crate::explain::ModelWeights>,
}
