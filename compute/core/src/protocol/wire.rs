//! What every door carries around a request: the stdio envelope, the reply, the error, the job
//! events, the size limits and the shared replies (cancelled, removed).

use serde::{Deserialize, Serialize};

use super::{FetchProgress, Request};
use crate::error::ErrorKind;
use crate::types::DuelEvent;

/// The reply to [`Request::Cancel`]: `{"cancelled": true, "freed": true}` when a job was
/// running and has stopped, freeing the job slot, by the time of the reply (the service waits
/// a bounded time for it); `{"cancelled": false}` when none was running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancelled {
    /// Whether a job was running (and was asked to stop).
    pub cancelled: bool,
    /// Whether the cancelled job had stopped and freed the job slot when the reply was sent
    /// (`false`: it is still stopping; the next job may be refused as busy for a moment).
    /// Absent when no job was running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed: Option<bool>,
}

/// The reply to a removal (`ncu_detach`, `ncu_remove`, `run_remove`): `{"removed": true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// Always `true` (a removal that fails answers an error).
    pub removed: bool,
}

/// The largest request a door accepts, in bytes of its JSON: the body of an HTTP `/api` call
/// (413 above it). Room for the largest screenshot an `ncu_attach` may carry (20 MiB, 26.7 MiB
/// in base64) and an ncu CSV of that size.
pub const MAX_REQUEST_BYTES: usize = 32 << 20;

/// What a stdio line holds beyond its request: the [`Envelope`] around it
/// (`{"id":18446744073709551615,"request":` and `}`) and the fields its encoding spells out
/// that the client left to their defaults.
pub const ENVELOPE_ROOM_BYTES: usize = 64 << 10;

/// The longest line the stdio door reads, its newline not counted: a request of
/// [`MAX_REQUEST_BYTES`] in its [`Envelope`]. A longer line is answered with an error for id
/// 0 (its id unread), so a client that wraps requests (the supervisor of `serve --http` and of
/// the desktop shell) refuses a request whose line would be longer before sending it.
pub const MAX_LINE_BYTES: usize = MAX_REQUEST_BYTES + ENVELOPE_ROOM_BYTES;

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
    /// An error of class `code`.
    pub fn new(code: ErrorKind, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// A [`ErrorKind::BadInput`] error: what the user gave is wrong.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadInput, message)
    }

    /// A [`ErrorKind::Runtime`] error: the machine, a device or a process failed.
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, message)
    }

    /// A [`ErrorKind::Busy`] error: another job is running.
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }

    /// A [`ErrorKind::Cancelled`] error: the user stopped the job.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Cancelled, message)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<&crate::error::ComputeError> for ApiError {
    fn from(e: &crate::error::ComputeError) -> Self {
        ApiError {
            code: e.kind(),
            message: e.message_for_service(),
        }
    }
}

/// An event of a job, tagged by the job's stream: `{"stream":"duel","event":{...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stream", rename_all = "snake_case")]
pub enum Event {
    /// Duel progress.
    Duel {
        /// The progress.
        event: DuelEvent,
    },
    /// Data-set download progress.
    DataFetch {
        /// The progress.
        event: FetchProgress,
    },
    /// Progress of a lab job (kernel bench, ladder, inference, step anatomy, profile).
    Lab {
        /// The progress.
        event: crate::lab::LabProgress,
    },
    /// An NVML reading of the GPU while a GPU job runs (a tick).
    Telemetry {
        /// The reading (`t_ms` from the job's start).
        sample: crate::types::TelemetrySample,
    },
}

impl Event {
    /// Whether this is a frequent progress tick (a training step) that a door may thin out;
    /// boundaries (a contestant or an epoch starting or ending) are never dropped.
    pub fn is_tick(&self) -> bool {
        match self {
            Event::Duel { event } => matches!(event, DuelEvent::Step { .. }),
            Event::DataFetch { event } => matches!(event, FetchProgress::Bytes { .. }),
            // Stages are boundaries; telemetry is already paced by its sampler (5 Hz) and
            // must not compete with a duel's steps for the tick budget.
            Event::Lab { .. } | Event::Telemetry { .. } => false,
        }
    }
}
