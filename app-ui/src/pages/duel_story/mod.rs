//! Act II, the mixed-precision story, under the duel's result: the gradients of sampled steps
//! against FP16's and BF16's ranges with the loss scale shifting them (the figure of
//! Micikevicius et al., "Mixed Precision Training", ICLR 2018, live on this model), the loss
//! scale over the steps with the skipped ones marked, peak memory split by what holds it (and
//! the same split computed for any batch size), and the warm-up epoch and step times reported
//! apart from the timed epochs; and FP8's story: each tensor's scale over training and its
//! gradients against E4M3's and E5M2's ranges at its own scale.

pub mod draw;
pub mod fp8;
pub mod histograms;
pub mod memory;
pub mod scale;
pub mod timing;

pub use fp8::Fp8Story;
pub use histograms::GradHistograms;
pub use memory::MemoryPanel;
pub use scale::{LossScaleChart, StepPoint, Trace};
pub use timing::timing_notes;
