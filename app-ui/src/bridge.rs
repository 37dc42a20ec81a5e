//! The one typed bridge between the pages and the compute service (browser mode: HTTP + SSE
//! against `showdown serve --http`).
//!
//! Every call returns `Result<T, ApiError>`: a server error arrives as its own
//! `{code, message}`, and a network failure, an unexpected status or an unreadable body become
//! an [`ApiError`] whose message says what happened. Nothing here unwraps a reply.

use compute::protocol::{ApiError, Event, Reply, ReplyBody, Request};
use compute::types::{DatasetSummary, DoctorReport, DuelConfig, DuelReport};
use compute::ErrorKind;
use serde::de::DeserializeOwned;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// A runtime [`ApiError`] with `message`.
pub fn runtime(message: impl Into<String>) -> ApiError {
    ApiError {
        code: ErrorKind::Runtime,
        message: message.into(),
    }
}

/// Text of a JavaScript exception (fetch rejections are `TypeError`s with a message).
fn js_text(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// `POST path` with a JSON body; the response, whatever its status.
async fn post(path: &str, body: &str) -> Result<web_sys::Response, ApiError> {
    let window = web_sys::window().ok_or_else(|| runtime("no browser window"))?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    let headers = web_sys::Headers::new().map_err(|e| runtime(js_text(&e)))?;
    headers
        .set("Content-Type", "application/json")
        .map_err(|e| runtime(js_text(&e)))?;
    init.set_headers(&headers);
    let resp = JsFuture::from(window.fetch_with_str_and_init(path, &init))
        .await
        .map_err(|e| {
            runtime(format!(
                "cannot reach the compute service at {path}: {} (is `showdown serve --http` running?)",
                js_text(&e)
            ))
        })?;
    resp.dyn_into::<web_sys::Response>()
        .map_err(|_| runtime(format!("{path}: the answer is not an HTTP response")))
}

async fn text_of(resp: &web_sys::Response, path: &str) -> Result<String, ApiError> {
    let promise = resp.text().map_err(|e| runtime(js_text(&e)))?;
    let text = JsFuture::from(promise)
        .await
        .map_err(|e| runtime(format!("{path}: cannot read the answer: {}", js_text(&e))))?;
    text.as_string()
        .ok_or_else(|| runtime(format!("{path}: the answer is not text")))
}

/// The error a non-2xx answer carries: its `{code, message}` body, or the status and text.
fn error_of(status: u16, text: &str, path: &str) -> ApiError {
    serde_json::from_str::<ApiError>(text).unwrap_or_else(|_| {
        let excerpt: String = text.chars().take(200).collect();
        runtime(format!("{path} answered HTTP {status}: {}", excerpt.trim()))
    })
}

/// `POST /api/call` with `request`; the result decoded as `T`.
pub async fn call<T: DeserializeOwned>(request: &Request) -> Result<T, ApiError> {
    let path = "/api/call";
    let body = serde_json::to_string(request)
        .map_err(|e| runtime(format!("cannot encode the request: {e}")))?;
    let resp = post(path, &body).await?;
    let text = text_of(&resp, path).await?;
    if !resp.ok() {
        return Err(error_of(resp.status(), &text, path));
    }
    serde_json::from_str(&text)
        .map_err(|e| runtime(format!("{path}: unexpected answer to {body}: {e}")))
}

/// The machine, GPU and backend status.
pub async fn doctor() -> Result<DoctorReport, ApiError> {
    call(&Request::Doctor).await
}

/// The data sets the server knows.
pub async fn list_datasets() -> Result<Vec<DatasetSummary>, ApiError> {
    call(&Request::ListDatasets).await
}

/// Cancels the running duel; `true` when one was running.
pub async fn cancel() -> Result<bool, ApiError> {
    let path = "/api/cancel";
    let resp = post(path, "{}").await?;
    let text = text_of(&resp, path).await?;
    if !resp.ok() {
        return Err(error_of(resp.status(), &text, path));
    }
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| runtime(format!("{path}: unexpected answer: {e}")))?;
    Ok(v.get("cancelled")
        .and_then(|c| c.as_bool())
        .unwrap_or(false))
}

/// Runs a duel: `POST /api/duel`, reading the Server-Sent Events as they arrive and handing
/// each progress event to `on_event`; the final report, or the error that ended it.
pub async fn duel(
    config: &DuelConfig,
    mut on_event: impl FnMut(Event),
) -> Result<DuelReport, ApiError> {
    let path = "/api/duel";
    let body = serde_json::to_string(config)
        .map_err(|e| runtime(format!("cannot encode the duel configuration: {e}")))?;
    let resp = post(path, &body).await?;
    if !resp.ok() {
        let text = text_of(&resp, path).await?;
        return Err(error_of(resp.status(), &text, path));
    }
    let stream = resp
        .body()
        .ok_or_else(|| runtime(format!("{path}: the answer has no body")))?;
    let reader: web_sys::ReadableStreamDefaultReader = stream
        .get_reader()
        .dyn_into()
        .map_err(|_| runtime(format!("{path}: cannot read the event stream")))?;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|e| {
            runtime(format!(
                "{path}: the event stream broke: {} (did the server stop?)",
                js_text(&e)
            ))
        })?;
        let done = js_sys::Reflect::get(&chunk, &JsValue::from_str("done"))
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if let Ok(value) = js_sys::Reflect::get(&chunk, &JsValue::from_str("value")) {
            if let Some(bytes) = value.dyn_ref::<js_sys::Uint8Array>() {
                buf.extend_from_slice(&bytes.to_vec());
            }
        }
        // Events end with a blank line; `\n` is never part of a multi-byte UTF-8 character.
        while let Some(end) = find_event_end(&buf) {
            let event: Vec<u8> = buf.drain(..end).collect();
            let text = String::from_utf8_lossy(&event);
            for line in text.lines() {
                let Some(data) = line.strip_prefix("data:") else {
                    continue; // comments (keep-alive) and other fields
                };
                let reply: Reply = serde_json::from_str(data.trim_start()).map_err(|e| {
                    runtime(format!("{path}: unreadable event {}: {e}", data.trim()))
                })?;
                match reply.body {
                    ReplyBody::Event(ev) => on_event(ev),
                    ReplyBody::Error(e) => return Err(e),
                    ReplyBody::Ok(v) => {
                        return serde_json::from_value(v).map_err(|e| {
                            runtime(format!("{path}: the duel report is not readable: {e}"))
                        })
                    }
                }
            }
        }
        if done {
            return Err(runtime(format!(
                "{path}: the event stream ended before the duel's result"
            )));
        }
    }
}

/// The length of the first complete event in `buf` (including its blank line).
fn find_event_end(buf: &[u8]) -> Option<usize> {
    let n = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let rn = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    match (n, rn) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
