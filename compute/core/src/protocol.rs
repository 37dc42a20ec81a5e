//! Messages spoken by every door (stdio sidecar, HTTP, Tauri): one request, one reply, and
//! events for long jobs. Defined once here and shared with the UI.
//!
//! On the stdio sidecar every line from the client is an [`Envelope`] and every line from the
//! server is a [`Reply`]:
//!
//! ```text
//! -> {"id":1,"request":{"op":"doctor"}}
//! <- {"id":1,"ok":{ ...DoctorReport... }}
//! -> {"id":2,"request":{"op":"duel","config":{"backend":"cpu","train_limit":256}}}
//! <- {"id":2,"event":{"stream":"duel","event":{"type":"run_started", ...}}}
//! <- {"id":2,"error":{"code":"busy","message":"busy: a duel is already running; ..."}}
//! ```
//!
//! Over HTTP, `POST /api/call` takes a bare [`Request`] and answers the `ok` payload (or the
//! [`ApiError`] with a 4xx/5xx status); `POST /api/duel` streams [`Reply`]s as Server-Sent
//! Events.

use serde::{Deserialize, Serialize};

use crate::error::ErrorKind;
use crate::occupancy::OccupancyInput;
use crate::types::{DuelConfig, DuelEvent};

fn default_arch() -> String {
    "sm_90".into()
}

fn default_threads() -> u32 {
    256
}

fn default_sample_count() -> usize {
    64
}

/// A request to the compute service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Machine, GPU and backend status.
    Doctor,
    /// The data sets and whether each is available.
    ListDatasets,
    /// The lab CNN layer by layer.
    ModelSummary,
    /// A page of real images of a data set with their labels; answers
    /// [`DatasetSamples`](crate::types::DatasetSamples).
    DatasetSamples {
        /// The data set's name (`mnist-sample`, `fashion-mnist`, `mnist`).
        dataset: String,
        /// The split (default `test`).
        #[serde(default)]
        split: crate::types::DataSplit,
        /// Index of the first image in the split (default 0).
        #[serde(default)]
        offset: usize,
        /// Images on the page (default 64, at most
        /// [`MAX_SAMPLES_PER_PAGE`](crate::types::MAX_SAMPLES_PER_PAGE)).
        #[serde(default = "default_sample_count")]
        count: usize,
    },
    /// Run a duel; progress comes as [`Event`]s.
    Duel {
        /// What to run.
        config: DuelConfig,
    },
    /// Theoretical occupancy of one kernel launch; answers an
    /// [`OccupancyOutput`](crate::occupancy::OccupancyOutput).
    Occupancy {
        /// Compute capability: `9.0`, `90` or `sm_90`.
        cc: String,
        /// What the launch asks of an SM.
        input: OccupancyInput,
    },
    /// Facts of our kernels compiled for `arch` (registers, shared and local memory, occupancy
    /// at `threads` per block, PTX `mma` and SASS `HMMA` counts): of one entry point or of a whole
    /// family (`name`); answers a list of [`KernelFacts`](crate::kernel_panel::KernelFacts).
    /// Needs NVRTC and cuobjdump where the service runs, not a GPU.
    KernelFacts {
        /// Entry point (`conv_mma_fwd_f16`) or family (`train`).
        name: String,
        /// Architecture to compile for (default `sm_90`).
        #[serde(default = "default_arch")]
        arch: String,
        /// Threads per block for the occupancy (default 256).
        #[serde(default = "default_threads")]
        threads: u32,
    },
    /// Cancel the running job, if any; answers `{"cancelled": true}` when there was one.
    Cancel,
    /// The saved Nsight Compute imports with their screenshots; answers a list of
    /// [`ImportSummary`](crate::ncu::ImportSummary).
    NcuImports,
    /// Imports an ncu CSV export (details, raw or summary page) and keeps it in the library;
    /// answers its [`ImportSummary`](crate::ncu::ImportSummary).
    NcuImport {
        /// The file's name, as the user chose it (folders are dropped).
        file_name: String,
        /// The file's text.
        text: String,
    },
    /// The seven panels of a saved import's kernels, each with its screenshots; answers a
    /// list of `{id, name, short_name, panels}`.
    NcuPanels {
        /// The import's ID.
        import: String,
        /// Only this kernel (default: every kernel).
        #[serde(default)]
        kernel: Option<u64>,
    },
    /// Attaches a screenshot (PNG or JPEG, decoded in full to check it) to a panel of a saved
    /// import; answers the [`Screenshot`](crate::ncu::Screenshot).
    NcuAttach {
        /// The import's ID.
        import: String,
        /// One of [`PANEL_IDS`](crate::ncu::PANEL_IDS).
        panel: String,
        /// Only on this kernel's panel (default: every kernel's).
        #[serde(default)]
        kernel: Option<u64>,
        /// The image's file name.
        file_name: String,
        /// The image's bytes, base64 (standard alphabet, padded).
        image_base64: String,
        /// A caption.
        #[serde(default)]
        caption: Option<String>,
    },
    /// Removes a screenshot from a saved import; answers `{"removed": true}`.
    NcuDetach {
        /// The import's ID.
        import: String,
        /// The screenshot's ID.
        screenshot: String,
    },
    /// Removes a saved import and its screenshots; answers `{"removed": true}`.
    NcuRemove {
        /// The import's ID.
        import: String,
    },
    /// A screenshot's image, to show it; answers a
    /// [`ScreenshotImage`](crate::ncu::ScreenshotImage) (`{"mime": "image/png", "base64": ..}`).
    NcuScreenshot {
        /// The import's ID.
        import: String,
        /// The screenshot's ID.
        screenshot: String,
    },
    /// The saved duels, newest first; answers a [`RunList`](crate::runs::RunList) (files
    /// that cannot be read are named in its `skipped`).
    Runs,
    /// A saved duel's full report; answers its [`DuelReport`](crate::types::DuelReport).
    Run {
        /// The run's ID.
        id: String,
    },
    /// Removes a saved duel; answers `{"removed": true}`.
    RunRemove {
        /// The run's ID.
        id: String,
    },
    /// A saved duel as CSV, one row per contestant per epoch; answers a
    /// [`CsvExport`](crate::runs::CsvExport) (`{"file_name": .., "csv": ..}`).
    RunCsv {
        /// The run's ID.
        id: String,
    },
    /// Act V's summary of the machine and the newest duels; answers a
    /// [`Verdict`](crate::verdict::Verdict).
    Verdict,
    /// The verdict as a self-contained HTML document; answers an
    /// [`HtmlExport`](crate::verdict::HtmlExport)
    /// (`{"file_name": "precision-showdown-verdict.html", "html": ..}`).
    VerdictHtml,
}

/// One request with the client's id, echoed in every [`Reply`] about it: a line of the stdio
/// sidecar, `{"id":7,"request":{"op":"model_summary"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Chosen by the client; 0 is what the server uses when a line's id cannot be read.
    pub id: u64,
    /// What to do.
    pub request: Request,
}

/// One message from the server about request `id`: `{"id":N,"ok":RESULT}`,
/// `{"id":N,"error":{"code":..,"message":..}}` or `{"id":N,"event":EVENT}`. A request gets any
/// number of events, then exactly one `ok` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The request's id (0 for a line whose id could not be read).
    pub id: u64,
    /// The message; its variant name is the JSON key next to `id`.
    #[serde(flatten)]
    pub body: ReplyBody,
}

/// What a [`Reply`] carries, serialized as one key: `ok`, `error` or `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyBody {
    /// The request succeeded; the result is the operation's report as JSON.
    Ok(serde_json::Value),
    /// The request failed.
    Error(ApiError),
    /// Progress of a long job; more messages follow.
    Event(Event),
}

impl Reply {
    /// A success.
    pub fn ok(id: u64, value: serde_json::Value) -> Self {
        Reply {
            id,
            body: ReplyBody::Ok(value),
        }
    }

    /// A failure.
    pub fn error(id: u64, error: ApiError) -> Self {
        Reply {
            id,
            body: ReplyBody::Error(error),
        }
    }

    /// A progress event.
    pub fn event(id: u64, event: Event) -> Self {
        Reply {
            id,
            body: ReplyBody::Event(event),
        }
    }

    /// Whether this is the last message about its request (`ok` or `error`).
    pub fn is_final(&self) -> bool {
        !matches!(self.body, ReplyBody::Event(_))
    }
}

/// An error as the doors carry it: a machine-readable code and a sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// Error class.
    pub code: ErrorKind,
    /// What went wrong, naming the file, flag or field.
    pub message: String,
}

impl ApiError {
    /// A [`ErrorKind::BadInput`] error.
    pub fn bad_input(message: impl Into<String>) -> Self {
        ApiError {
            code: ErrorKind::BadInput,
            message: message.into(),
        }
    }
}

impl From<&crate::error::ComputeError> for ApiError {
    fn from(e: &crate::error::ComputeError) -> Self {
        ApiError {
            code: e.kind(),
            message: e.to_string(),
        }
    }
}

/// An event of a long job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stream", rename_all = "snake_case")]
pub enum Event {
    /// Duel progress.
    Duel {
        /// The progress.
        event: DuelEvent,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_tagged_json() {
        let r = Request::Duel {
            config: DuelConfig::default(),
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.starts_with("{\"op\":\"duel\""), "{s}");
        let back: Request = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
        let d: Request = serde_json::from_str("{\"op\":\"doctor\"}").unwrap();
        assert_eq!(d, Request::Doctor);
    }

    #[test]
    fn envelopes_and_replies_round_trip() {
        let env: Envelope = serde_json::from_str(
            r#"{"id":3,"request":{"op":"occupancy","cc":"9.0",
                "input":{"threads_per_block":256,"registers_per_thread":64,"shared_mem_per_block":0}}}"#,
        )
        .unwrap();
        assert_eq!(env.id, 3);
        assert!(matches!(env.request, Request::Occupancy { ref cc, input }
            if cc == "9.0" && input.threads_per_block == 256 && input.carveout_pct.is_none()));
        let back: Envelope = serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
        assert_eq!(back, env);

        let replies = [
            Reply::ok(1, serde_json::json!({"a": [1, 2]})),
            Reply::ok(2, serde_json::Value::Null),
            Reply::error(
                0,
                ApiError {
                    code: ErrorKind::Busy,
                    message: "busy".into(),
                },
            ),
            Reply::event(
                4,
                Event::Duel {
                    event: DuelEvent::Step {
                        precision: crate::types::Precision::Fp16,
                        epoch: 1,
                        step: 2,
                        steps: 3,
                        loss: 0.5,
                        loss_scale: 65536.0,
                    },
                },
            ),
        ];
        let lines: Vec<String> = replies
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        assert_eq!(lines[0], r#"{"id":1,"ok":{"a":[1,2]}}"#);
        assert_eq!(lines[1], r#"{"id":2,"ok":null}"#);
        assert_eq!(
            lines[2],
            r#"{"id":0,"error":{"code":"busy","message":"busy"}}"#
        );
        assert!(
            lines[3].starts_with(r#"{"id":4,"event":{"stream":"duel","event":{"type":"step""#),
            "{}",
            lines[3]
        );
        for (line, r) in lines.iter().zip(&replies) {
            let back: Reply = serde_json::from_str(line).unwrap();
            assert_eq!(&back, r);
            assert_eq!(back.is_final(), !line.contains("\"event\""));
        }
        assert!(serde_json::from_str::<Reply>(r#"{"id":1}"#).is_err());
    }

    #[test]
    fn run_history_and_verdict_requests_round_trip() {
        let cases = [
            (Request::Runs, r#"{"op":"runs"}"#),
            (
                Request::Run {
                    id: "20250314-093015-123-00k3".into(),
                },
                r#"{"op":"run","id":"20250314-093015-123-00k3"}"#,
            ),
            (
                Request::RunRemove { id: "a".into() },
                r#"{"op":"run_remove","id":"a"}"#,
            ),
            (
                Request::RunCsv { id: "a".into() },
                r#"{"op":"run_csv","id":"a"}"#,
            ),
            (Request::Verdict, r#"{"op":"verdict"}"#),
            (Request::VerdictHtml, r#"{"op":"verdict_html"}"#),
        ];
        for (request, json) in cases {
            assert_eq!(serde_json::to_string(&request).unwrap(), json);
            assert_eq!(serde_json::from_str::<Request>(json).unwrap(), request);
        }
        assert!(serde_json::from_str::<Request>(r#"{"op":"run"}"#).is_err());
    }
}
