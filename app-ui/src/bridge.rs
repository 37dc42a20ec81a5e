//! The one typed bridge between the pages and the compute service, over either door:
//!
//! - **desktop** (inside the Tauri shell, detected by `window.__TAURI__`): the shell's `call`
//!   command (`invoke`), a job's progress through a `tauri::ipc::Channel`;
//! - **browser mode**: `POST /api/call`, and `POST /api/job` read as Server-Sent Events,
//!   against `showdown serve --http`.
//!
//! Typed by the request: [`call`] and [`job`] take any request of the core's protocol
//! ([`Op`]) and answer its reply type, so a page cannot decode the wrong type. Every call
//! returns `Result<_, ApiError>`: a service error arrives as its own `{code, message}`, and a
//! network failure, an unexpected status or an unreadable body become an [`ApiError`] whose
//! message says what happened. Nothing here unwraps a reply.

use showdown_core::protocol::*;
use showdown_core::types::{DatasetSummary, DoctorReport, DuelConfig};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// A runtime [`ApiError`] with `message`.
pub fn runtime(message: impl Into<String>) -> ApiError {
    ApiError::runtime(message)
}

/// Text of a JavaScript exception (fetch rejections are `TypeError`s with a message).
pub fn js_text(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// Where the page keeps the server's access token for this browser session.
const TOKEN_KEY: &str = "showdown-token";

fn session_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// The access token of a server started with `--token`: taken from the page's address
/// (`?token=…`, as `showdown serve` prints it; then dropped from the address bar) or kept from
/// earlier in this session.
fn token() -> Option<String> {
    let window = web_sys::window()?;
    let location = window.location();
    let search = location.search().unwrap_or_default();
    let given = search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .and_then(|t| js_sys::decode_uri_component(t).ok())
        .and_then(|t| t.as_string());
    if let Some(t) = given.filter(|t| !t.is_empty()) {
        if let Some(store) = session_storage() {
            let _ = store.set_item(TOKEN_KEY, &t);
        }
        // The token stays out of the address bar, bookmarks and screenshots.
        let rest = format!(
            "{}{}",
            location.pathname().unwrap_or_default(),
            location.hash().unwrap_or_default()
        );
        if let Ok(history) = window.history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&rest));
        }
        return Some(t);
    }
    session_storage()?
        .get_item(TOKEN_KEY)
        .ok()
        .flatten()
        .filter(|t| !t.is_empty())
}

/// Asks the user for the server's access token (after a 401); kept for the session.
fn ask_token() -> Option<String> {
    let answer = web_sys::window()?
        .prompt_with_message(
            "This Precision Showdown server needs its access token \
             (the --token it was started with):",
        )
        .ok()
        .flatten()?;
    let t = answer.trim().to_string();
    if t.is_empty() {
        return None;
    }
    if let Some(store) = session_storage() {
        let _ = store.set_item(TOKEN_KEY, &t);
    }
    Some(t)
}

/// `POST path` with a JSON body (and the access token, when there is one); the response,
/// whatever its status. A 401 asks the user for the token once and sends the request again.
async fn post(path: &str, body: &str) -> Result<web_sys::Response, ApiError> {
    let sent = token();
    let resp = post_with(path, body, sent.as_deref()).await?;
    if resp.status() != 401 {
        return Ok(resp);
    }
    // Another request may have asked for the token meanwhile: use it rather than ask again.
    let token = match token().filter(|t| Some(t) != sent.as_ref()) {
        Some(t) => Some(t),
        None => ask_token(),
    };
    match token {
        Some(t) => post_with(path, body, Some(&t)).await,
        None => Ok(resp),
    }
}

async fn post_with(
    path: &str,
    body: &str,
    token: Option<&str>,
) -> Result<web_sys::Response, ApiError> {
    let window = web_sys::window().ok_or_else(|| runtime("no browser window"))?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    let headers = web_sys::Headers::new().map_err(|e| runtime(js_text(&e)))?;
    headers
        .set("Content-Type", "application/json")
        .map_err(|e| runtime(js_text(&e)))?;
    if let Some(t) = token {
        headers
            .set("Authorization", &format!("Bearer {t}"))
            .map_err(|e| runtime(js_text(&e)))?;
    }
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

/// The desktop shell's door: Tauri's `invoke` and `Channel`, present as `window.__TAURI__`
/// (the shell sets `withGlobalTauri`).
mod tauri {
    use super::{js_text, runtime};
    use serde::de::DeserializeOwned;
    use serde::Serialize;
    use showdown_core::protocol::ApiError;
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        /// `window.__TAURI__.core.invoke(cmd, args)`; a command's `Err` rejects the promise.
        #[wasm_bindgen(js_namespace = ["window", "__TAURI__", "core"], js_name = invoke, catch)]
        async fn invoke_js(cmd: &str, args: JsValue) -> Result<JsValue, JsValue>;
    }

    /// Whether the page runs inside the desktop shell.
    pub fn present() -> bool {
        web_sys::window()
            .and_then(|w| js_sys::Reflect::get(&w, &JsValue::from_str("__TAURI__")).ok())
            .is_some_and(|t| t.is_object())
    }

    /// JSON text → a JavaScript value (how arguments cross into `invoke`).
    fn to_js<T: Serialize>(value: &T) -> Result<JsValue, ApiError> {
        let text = serde_json::to_string(value)
            .map_err(|e| runtime(format!("cannot encode the request: {e}")))?;
        js_sys::JSON::parse(&text).map_err(|e| runtime(js_text(&e)))
    }

    /// A JavaScript value → `T`, through its JSON text.
    pub fn from_js<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, ApiError> {
        let text = js_sys::JSON::stringify(value)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_else(|| "null".into());
        serde_json::from_str(&text)
            .map_err(|e| runtime(format!("{what}: unexpected answer {text:.200}: {e}")))
    }

    /// The error a rejected `invoke` carries: the command's `{code, message}`, or the text of
    /// whatever else was thrown (e.g. a command the shell does not have).
    fn error_of(e: JsValue, cmd: &str) -> ApiError {
        from_js::<ApiError>(&e, cmd).unwrap_or_else(|_| {
            runtime(format!(
                "the desktop shell's `{cmd}` failed: {}",
                js_text(&e)
            ))
        })
    }

    /// Invokes shell command `cmd` with `args` (an object of named arguments).
    pub async fn invoke<T: DeserializeOwned>(
        cmd: &str,
        args: js_sys::Object,
    ) -> Result<T, ApiError> {
        let reply = invoke_js(cmd, args.into())
            .await
            .map_err(|e| error_of(e, cmd))?;
        from_js(&reply, cmd)
    }

    /// `{request: <request>}` plus `onEvent: channel` when given.
    pub fn call_args<R: Serialize>(
        request: &R,
        channel: Option<&JsValue>,
    ) -> Result<js_sys::Object, ApiError> {
        let args = js_sys::Object::new();
        let set = |k: &str, v: &JsValue| {
            js_sys::Reflect::set(&args, &JsValue::from_str(k), v)
                .map(|_| ())
                .map_err(|e| runtime(js_text(&e)))
        };
        set("request", &to_js(request)?)?;
        // Every call names a channel (the command takes one); the shell drops what no one reads.
        match channel {
            Some(c) => set("onEvent", c)?,
            None => set("onEvent", &new_channel(None)?)?,
        }
        Ok(args)
    }

    /// `new window.__TAURI__.core.Channel()`, its messages handed to `on_message`.
    pub fn new_channel(on_message: Option<&js_sys::Function>) -> Result<JsValue, ApiError> {
        let window = web_sys::window().ok_or_else(|| runtime("no window"))?;
        let core = js_sys::Reflect::get(&window, &JsValue::from_str("__TAURI__"))
            .and_then(|t| js_sys::Reflect::get(&t, &JsValue::from_str("core")))
            .map_err(|e| runtime(js_text(&e)))?;
        let ctor: js_sys::Function = js_sys::Reflect::get(&core, &JsValue::from_str("Channel"))
            .map_err(|e| runtime(js_text(&e)))?
            .dyn_into()
            .map_err(|_| runtime("window.__TAURI__.core.Channel is not a constructor"))?;
        let channel = js_sys::Reflect::construct(&ctor, &js_sys::Array::new())
            .map_err(|e| runtime(format!("cannot open a Tauri channel: {}", js_text(&e))))?;
        if let Some(f) = on_message {
            js_sys::Reflect::set(&channel, &JsValue::from_str("onmessage"), f)
                .map_err(|e| runtime(js_text(&e)))?;
        }
        Ok(channel)
    }
}

/// `T` from a JSON value, through its text: every type is then read by one instantiation of
/// serde_json's text reader (`from_value` would compile a second reader per type into the
/// WASM, which keeps the front end under its size target).
pub fn from_json_value<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> serde_json::Result<T> {
    serde_json::from_str(&v.to_string())
}

/// Sends `op` to the compute service; its reply, typed by the request.
pub async fn call<O: Op>(op: O) -> Result<O::Reply, ApiError> {
    let request: Request = op.into();
    if tauri::present() {
        return tauri::invoke("call", tauri::call_args(&request, None)?).await;
    }
    let path = "/api/call";
    let body = serde_json::to_string(&request)
        .map_err(|e| runtime(format!("cannot encode the request: {e}")))?;
    let resp = post(path, &body).await?;
    let text = text_of(&resp, path).await?;
    if !resp.ok() {
        return Err(error_of(resp.status(), &text, path));
    }
    serde_json::from_str(&text)
        .map_err(|e| runtime(format!("{path}: unexpected answer to {body}: {e}")))
}

/// Runs `op` as a job: each progress event handed to `on_event` as it arrives, then its reply
/// (or the error that ended it). Desktop: the shell's `call` with a Tauri channel for the
/// events; browser mode: `POST /api/job`, reading its Server-Sent Events. Any request may be
/// sent this way; one that is not a job just answers without events.
pub async fn job<O: Op>(
    op: O,
    mut on_event: impl FnMut(Event) + 'static,
) -> Result<O::Reply, ApiError> {
    let request: Request = op.into();
    if tauri::present() {
        // Events that arrive after the reply are dropped (`closed`); the closure is handed to
        // JavaScript's garbage collector (no `new Function` no-op: the CSP forbids eval).
        let closed = std::rc::Rc::new(std::cell::Cell::new(false));
        let closed_in = closed.clone();
        let on_message =
            wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |message: JsValue| {
                if closed_in.get() {
                    return;
                }
                match tauri::from_js::<Event>(&message, "job event") {
                    Ok(e) => on_event(e),
                    Err(e) => web_sys::console::warn_1(&JsValue::from_str(&e.message)),
                }
            })
            .into_js_value();
        let channel = tauri::new_channel(Some(on_message.unchecked_ref()))?;
        let result = tauri::invoke("call", tauri::call_args(&request, Some(&channel))?).await;
        closed.set(true);
        return result;
    }
    let path = "/api/job";
    let body = serde_json::to_string(&request)
        .map_err(|e| runtime(format!("cannot encode the request: {e}")))?;
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
                        return from_json_value(v).map_err(|e| {
                            runtime(format!(
                                "{path}: the reply to `{}` is not readable: {e}",
                                request.name()
                            ))
                        })
                    }
                }
            }
        }
        if done {
            return Err(runtime(format!(
                "{path}: the event stream ended before the reply to `{}`",
                request.name()
            )));
        }
    }
}

/// The machine, GPU and backend status.
pub async fn doctor() -> Result<DoctorReport, ApiError> {
    call(DoctorRequest {}).await
}

/// The data sets the server knows.
pub async fn list_datasets() -> Result<Vec<DatasetSummary>, ApiError> {
    call(ListDatasetsRequest {}).await
}

/// Cancels the running job; `true` when one was running.
pub async fn cancel() -> Result<bool, ApiError> {
    call(CancelRequest {}).await.map(|c| c.cancelled)
}

/// Runs a duel (a job), handing each progress event to `on_event`; the report and where the
/// run history keeps it.
pub async fn duel(
    config: &DuelConfig,
    on_event: impl FnMut(Event) + 'static,
) -> Result<DuelOutcome, ApiError> {
    job(
        DuelRequest {
            config: config.clone(),
        },
        on_event,
    )
    .await
}

/// Downloads data set `dataset` (full MNIST) into the server's data folder (a job), handing
/// each progress event to `on_event`; the data set as now listed, and its files.
pub async fn data_fetch(
    dataset: &str,
    on_event: impl FnMut(Event) + 'static,
) -> Result<DataFetched, ApiError> {
    job(
        DataFetchRequest {
            dataset: dataset.into(),
        },
        on_event,
    )
    .await
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

/// A page of `count` real images of `split` of data set `dataset` from `offset` on.
pub async fn dataset_samples(
    dataset: &str,
    split: showdown_core::types::DataSplit,
    offset: usize,
    count: usize,
) -> Result<showdown_core::types::DatasetSamples, ApiError> {
    call(DatasetSamplesRequest {
        dataset: dataset.into(),
        split,
        offset,
        count,
    })
    .await
}

/// The saved Nsight Compute imports, oldest first, with notes naming the damaged parts left
/// out.
pub async fn ncu_imports() -> Result<showdown_core::ncu::ImportList, ApiError> {
    call(NcuImportsRequest {}).await
}

/// Adds the lab's example report (a real export of our kernels on an H100) to the library.
pub async fn ncu_example() -> Result<showdown_core::ncu::ImportSummary, ApiError> {
    call(NcuExampleRequest {}).await
}

/// Imports the ncu CSV export `text` (named `file_name`) into the saved library.
pub async fn ncu_import(
    file_name: &str,
    text: String,
) -> Result<showdown_core::ncu::ImportSummary, ApiError> {
    call(NcuImportRequest {
        file_name: file_name.into(),
        text,
    })
    .await
}

/// The seven panels of the first kernels (at most
/// [`MAX_PANELS_PAGE`](showdown_core::protocol::MAX_PANELS_PAGE), the most one reply carries:
/// a larger import is never refused whole), or of kernel `kernel`, of saved import `import`.
/// Act IV's panels view pages through the rest.
pub async fn ncu_panels(
    import: &str,
    kernel: Option<u64>,
) -> Result<Vec<showdown_core::ncu::KernelPanels>, ApiError> {
    call(NcuPanelsRequest {
        import: import.into(),
        kernel,
        offset: 0,
        limit: Some(showdown_core::protocol::MAX_PANELS_PAGE),
    })
    .await
}

/// Removes saved import `import` with its screenshots.
pub async fn ncu_remove(import: &str) -> Result<Removed, ApiError> {
    call(NcuRemoveRequest {
        import: import.into(),
    })
    .await
}

/// Attaches the image `image_base64` (PNG or JPEG bytes, base64) named `file_name` to panel
/// `panel` of kernel `kernel` (`None`: of every kernel) of saved import `import`.
pub async fn ncu_attach(
    import: &str,
    panel: &str,
    kernel: Option<u64>,
    file_name: &str,
    image_base64: String,
    caption: Option<String>,
) -> Result<showdown_core::ncu::Screenshot, ApiError> {
    call(NcuAttachRequest {
        import: import.into(),
        panel: panel.into(),
        kernel,
        file_name: file_name.into(),
        image_base64,
        caption,
    })
    .await
}

/// Removes screenshot `screenshot` from saved import `import`.
pub async fn ncu_detach(import: &str, screenshot: &str) -> Result<Removed, ApiError> {
    call(NcuDetachRequest {
        import: import.into(),
        screenshot: screenshot.into(),
    })
    .await
}

/// The image of screenshot `screenshot` of saved import `import`.
pub async fn ncu_screenshot(
    import: &str,
    screenshot: &str,
) -> Result<showdown_core::ncu::ScreenshotImage, ApiError> {
    call(NcuScreenshotRequest {
        import: import.into(),
        screenshot: screenshot.into(),
    })
    .await
}

/// The saved duels, newest first, with notes on history files that could not be read.
pub async fn runs() -> Result<showdown_core::runs::RunList, ApiError> {
    call(RunsRequest {}).await
}

/// The full report of saved duel `id`.
pub async fn run(id: &str) -> Result<showdown_core::types::DuelReport, ApiError> {
    call(RunRequest { id: id.into() }).await
}

/// Removes saved duel `id` from the history.
pub async fn run_remove(id: &str) -> Result<Removed, ApiError> {
    call(RunRemoveRequest { id: id.into() }).await
}

/// Saved duel `id` as CSV, with the file name it should get.
pub async fn run_csv(id: &str) -> Result<showdown_core::runs::CsvExport, ApiError> {
    call(RunCsvRequest { id: id.into() }).await
}

/// Act V's verdict: the machine and the newest duels.
pub async fn verdict() -> Result<showdown_core::verdict::Verdict, ApiError> {
    call(VerdictRequest {}).await
}

/// The verdict as a self-contained HTML document, with the file name it should get.
pub async fn verdict_html() -> Result<showdown_core::verdict::HtmlExport, ApiError> {
    call(VerdictHtmlRequest {}).await
}
