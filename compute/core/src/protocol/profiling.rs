//! Act IV's requests and replies: occupancy, our kernels' facts, the Nsight Compute library
//! (imports, panels, screenshots) and the profile job.

use serde::{Deserialize, Serialize};

use super::strict;
use crate::occupancy::OccupancyInput;

// Named in the doc links only.
#[cfg(doc)]
use super::{Removed, Request};

fn default_arch() -> String {
    "sm_90".into()
}

fn default_threads() -> u32 {
    256
}

/// [`Request::Occupancy`]: theoretical occupancy of one kernel launch; answers an
/// [`OccupancyOutput`](crate::occupancy::OccupancyOutput).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OccupancyRequest {
    /// Compute capability: `9.0`, `90` or `sm_90`.
    pub cc: String,
    /// What the launch asks of an SM.
    pub input: OccupancyInput,
}

/// [`Request::KernelFacts`]: facts of our kernels compiled for `arch` (registers, shared and
/// local memory, occupancy at `threads` per block, PTX `mma` and SASS `HMMA` counts) of one
/// entry point or of a whole family (`name`); answers a list of
/// [`KernelFacts`](crate::kernel_panel::KernelFacts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFactsRequest {
    /// Entry point (`conv_mma_fwd_f16`) or family (`train`).
    pub name: String,
    /// Architecture to compile for (default `sm_90`).
    #[serde(default = "default_arch")]
    pub arch: String,
    /// Threads per block for the occupancy (default 256).
    #[serde(default = "default_threads")]
    pub threads: u32,
}

/// [`Request::NcuImport`]: imports an ncu CSV export (details, raw or summary page) into the
/// library; answers its [`ImportSummary`](crate::ncu::ImportSummary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuImportRequest {
    /// The file's name, as the user chose it (folders are dropped).
    pub file_name: String,
    /// The file's text.
    pub text: String,
}

/// [`Request::NcuPanels`]: the seven panels of a saved import's kernels, each with its
/// screenshots, a page at a time; answers a list of [`KernelPanels`](crate::ncu::KernelPanels).
/// The import's summary says how many kernels there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuPanelsRequest {
    /// The import's ID.
    pub import: String,
    /// Only this kernel (default: every kernel).
    #[serde(default)]
    pub kernel: Option<u64>,
    /// The page's first kernel, counted from 0 in the import's order (default 0).
    #[serde(default)]
    pub offset: usize,
    /// Kernels on the page: 1 to [`MAX_PANELS_PAGE`]. Without it, every kernel from `offset`
    /// on, refused when they are more than [`MAX_PANELS_PAGE`] (a reply is never built over
    /// its budget).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The most kernels whose panels one [`NcuPanelsRequest`] answers (about 2 KiB of JSON each):
/// the reply's budget (issue 38: one call on a 60,000-kernel import answered 109 MB).
pub const MAX_PANELS_PAGE: usize = 2000;

/// [`Request::NcuAttach`]: attaches a screenshot (PNG or JPEG, decoded in full to check it) to
/// a panel of a saved import; answers the [`Screenshot`](crate::ncu::Screenshot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuAttachRequest {
    /// The import's ID.
    pub import: String,
    /// One of [`PANEL_IDS`](crate::ncu::PANEL_IDS).
    pub panel: String,
    /// Only on this kernel's panel (default: every kernel's).
    #[serde(default)]
    pub kernel: Option<u64>,
    /// The image's file name.
    pub file_name: String,
    /// The image's bytes, base64 (standard alphabet, padded).
    pub image_base64: String,
    /// A caption.
    #[serde(default)]
    pub caption: Option<String>,
}

/// [`Request::NcuDetach`]: removes a screenshot from a saved import; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuDetachRequest {
    /// The import's ID.
    pub import: String,
    /// The screenshot's ID.
    pub screenshot: String,
}

/// [`Request::NcuRemove`]: removes a saved import and its screenshots; answers [`Removed`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuRemoveRequest {
    /// The import's ID.
    pub import: String,
}

/// [`Request::NcuScreenshot`]: a screenshot's image, to show it; answers a
/// [`ScreenshotImage`](crate::ncu::ScreenshotImage) (`{"mime": "image/png", "base64": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuScreenshotRequest {
    /// The import's ID.
    pub import: String,
    /// The screenshot's ID.
    pub screenshot: String,
}

/// [`Request::Profile`]: Nsight Compute on one target of this service's own program; answers
/// a [`ProfileOutcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRequest {
    /// What to profile (an object, `{"target":"kernel",...}`).
    #[serde(deserialize_with = "strict::object")]
    pub what: crate::lab::ProfileTarget,
    /// ncu sections (default [`DEFAULT_SECTIONS`](crate::lab::DEFAULT_SECTIONS); each once).
    #[serde(default, deserialize_with = "strict::unique")]
    pub sections: Vec<String>,
}

/// The reply to [`Request::Profile`]: the import it made and the command that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileOutcome {
    /// The new import in the library (open its panels in Act IV).
    pub import: crate::ncu::ImportSummary,
    /// The ncu command line that ran, for the user to repeat.
    pub command: String,
}

/// [`Request::NcuRepImport`]: a `.ncu-rep` report, exported through `ncu --import` and kept in
/// the library; answers its [`ImportSummary`](crate::ncu::ImportSummary). Without ncu the
/// error names the exact command to run elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuRepImportRequest {
    /// The file's name, as the user chose it.
    pub file_name: String,
    /// The report's bytes, base64 (standard alphabet, padded).
    pub base64: String,
}
