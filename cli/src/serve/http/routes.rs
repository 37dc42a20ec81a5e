//! The API's routes: the router, the replies and their status codes, and what a request must
//! be before it goes on (the interpreters an HTTP client may choose).

use super::*;
use compute::service::{KnownPython, PeerPythons};

/// The interpreters the server found itself, which an HTTP client may choose for the PyTorch
/// peer (`peer_set_python`) and which `peer_pythons` lists for the UI to offer: `python3` on
/// PATH, the project's peer venv (`target/peer-venv/bin/python`), `$SHOWDOWN_PYTHON` and each
/// `--python` given at start-up ([`compute::service::found_pythons`]). Any other path is
/// settable only through the CLI or the desktop app: a token holder or a same-origin page
/// must not make the server run any executable of the machine (issue 38, defect 5).
#[derive(Debug, Default)]
pub(super) struct KnownPythons {
    /// Each as found (listed, and named in the refusal), and its file resolved (compared).
    pub(super) known: Vec<(KnownPython, PathBuf)>,
}

impl KnownPythons {
    /// The interpreters found now, with `extra` (the `--python` flags).
    pub(super) fn find(extra: &[PathBuf]) -> Self {
        let extra: Vec<(String, &str)> = extra
            .iter()
            .map(|p| (p.display().to_string(), "--python"))
            .collect();
        Self::of(compute::service::found_pythons(&extra))
    }

    /// `found`, those that name an interpreter file.
    pub(super) fn of(found: Vec<KnownPython>) -> Self {
        let known = found
            .into_iter()
            .filter_map(|k| {
                let file = compute::lab::peers::resolve_python(k.python.trim())?;
                let file = file.canonicalize().ok()?;
                Some((k, file))
            })
            .collect();
        KnownPythons { known }
    }

    /// The door's own answer to `peer_pythons` (the list it accepts, no other path); `None`
    /// for any other request, which goes to the compute process.
    pub(super) fn answer(
        &self,
        request: &Request,
    ) -> Option<std::result::Result<serde_json::Value, ApiError>> {
        let Request::PeerPythons(_) = request else {
            return None;
        };
        let listed = PeerPythons {
            pythons: self.known.iter().map(|(k, _)| k.clone()).collect(),
            any_path: false,
        };
        Some(
            serde_json::to_value(listed)
                .map_err(|e| ApiError::runtime(format!("cannot encode the interpreters: {e}"))),
        )
    }

    /// Refuses a `peer_set_python` naming an interpreter the server did not find; clearing
    /// the choice is always allowed.
    pub(super) fn check(&self, request: &Request) -> std::result::Result<(), ApiError> {
        let Request::PeerSetPython(op) = request else {
            return Ok(());
        };
        let Some(wanted) = op
            .python
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        else {
            return Ok(());
        };
        let file = compute::lab::peers::resolve_python(wanted).and_then(|f| f.canonicalize().ok());
        if file.is_some_and(|f| self.known.iter().any(|(_, k)| *k == f)) {
            return Ok(());
        }
        let names: Vec<&str> = self.known.iter().map(|(k, _)| k.python.as_str()).collect();
        Err(ApiError::bad_input(format!(
            "python '{wanted}' is not one of the interpreters this server found ({}): over \
             HTTP the PyTorch peer runs only those; start the server with --python PATH (or \
             SHOWDOWN_PYTHON=PATH) to add one, or choose it in the desktop app",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )))
    }
}

pub(super) fn router(state: AppState, guard_state: Guard, ui_dir: Option<&Path>) -> Router {
    let api = Router::new()
        .route("/call", post(api_call))
        .route("/job", post(api_job))
        .route("/compute", get(api_compute))
        .fallback(api_not_found)
        .method_not_allowed_fallback(api_method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state);
    let app = Router::new().nest("/api", api);
    let app = match ui_dir {
        // ServeDir refuses `..`, absolute and prefixed paths (also percent-encoded) with 404;
        // `stay_inside` refuses what a symlink would take out of the folder.
        Some(d) => {
            // A file's `NAME.gz` beside it (the UI build writes them) goes to a browser that
            // accepts gzip, with `Content-Encoding: gzip`.
            let files = Router::new()
                .fallback_service(
                    ServeDir::new(d)
                        .precompressed_gzip()
                        .not_found_service(not_found.into_service()),
                )
                .layer(middleware::map_response(vary_accept_encoding))
                .layer(middleware::from_fn_with_state(
                    Arc::<Path>::from(d),
                    stay_inside,
                ));
            app.fallback_service(files)
        }
        None => app.fallback(no_ui),
    };
    app.layer(middleware::from_fn_with_state(guard_state, guard))
}

pub(super) fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub(super) fn error_response(status: StatusCode, e: &ApiError) -> Response {
    let body = serde_json::to_string(e).unwrap_or_else(|_| {
        "{\"code\":\"runtime\",\"message\":\"could not encode the error\"}".into()
    });
    json_response(status, body)
}

pub(super) fn status_of(code: ErrorKind) -> StatusCode {
    match code {
        ErrorKind::BadInput => StatusCode::BAD_REQUEST,
        // A machine without what the operation needs (a GPU): nothing failed, and the client
        // cannot fix it by changing the request.
        ErrorKind::Busy | ErrorKind::Unavailable => StatusCode::CONFLICT,
        // The request was well formed and ran, but its numbers diverged.
        ErrorKind::Diverged => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The request in an `/api` body, with what it holds until answered; or the response to give.
pub(super) async fn receive(
    s: &AppState,
    req: axum::extract::Request,
) -> std::result::Result<(Request, Held), Response> {
    let (parts, body) = req.into_parts();
    let conn = parts.extensions.get::<ConnOf>();
    let memory = BodyMemory {
        address: conn.map(|ConnOf(c)| s.address_bodies.of(c.addr)),
        whole: Arc::clone(&s.bodies),
    };
    let (bytes, held) = read_body(body, &memory, conn)
        .await
        .map_err(|(status, e)| body_error(status, &e))?;
    let (request, held) = parse_request(bytes, held)
        .await
        .map_err(|(status, e)| error_response(status, &e))?;
    s.pythons
        .check(&request)
        .map_err(|e| error_response(StatusCode::FORBIDDEN, &e))?;
    Ok((request, held))
}

/// A call's answer as its reply; the memory of a large answer (its parsed tree, freed once
/// encoded) is given back to the system ([`given_back_after`]).
pub(super) fn result_response(
    result: std::result::Result<serde_json::Value, ApiError>,
) -> Response {
    match result {
        Ok(v) => {
            let body = v.to_string();
            drop(v);
            given_back_after(body.len());
            json_response(StatusCode::OK, body)
        }
        Err(e) => error_response(status_of(e.code), &e),
    }
}

pub(super) async fn api_call(State(s): State<AppState>, req: axum::extract::Request) -> Response {
    let (request, held) = match receive(&s, req).await {
        Ok(received) => received,
        Err(response) => return response,
    };
    if let Some(answer) = s.pythons.answer(&request) {
        return result_response(answer);
    }
    if matches!(request, Request::Doctor(_)) {
        return shared_doctor(s, request, held).await;
    }
    match take_turn(&s, &request).await {
        Ok(turn) => result_response(call_for_client(s.compute, request, held, turn).await),
        Err((status, e)) => error_response(status, &e),
    }
}

/// How long a `doctor` answer is shared with the calls that arrive after it.
const DOCTOR_SHARED_FOR: Duration = Duration::from_millis(500);

/// `doctor` for a burst of clients: the calls wait in line for the last answer, the first asks
/// the compute process and the others take its answer while it is fresh
/// ([`DOCTOR_SHARED_FOR`]): 200 concurrent calls cost one question to the compute process, not
/// 200 turns in its queue (issue 38, defect 7). A failure is not shared.
async fn shared_doctor(s: AppState, request: Request, held: Held) -> Response {
    let mut last = s.doctor.lock().await;
    if let Some((at, answer)) = last.as_ref() {
        if at.elapsed() < DOCTOR_SHARED_FOR {
            return result_response(Ok(answer.clone()));
        }
    }
    let answer = match take_turn(&s, &request).await {
        Ok(turn) => call_for_client(s.compute.clone(), request, held, turn).await,
        Err((status, e)) => return error_response(status, &e),
    };
    *last = answer.as_ref().ok().map(|a| (Instant::now(), a.clone()));
    result_response(answer)
}

/// The compute process's state: `{program, running, pid, crashes}`. Never waits on the compute
/// process ([`Sidecar::status`] reads what the supervisor recorded), so it answers at once
/// while the compute process is busy.
pub(super) async fn api_compute(State(s): State<AppState>) -> Response {
    match serde_json::to_string(&s.compute.status()) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &ApiError::runtime(format!("cannot encode the status: {e}")),
        ),
    }
}

pub(super) async fn api_not_found(uri: Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &ApiError::bad_input(format!(
            "no API endpoint {}: POST /api/call or /api/job, GET /api/compute",
            uri.path()
        )),
    )
}

pub(super) async fn api_method_not_allowed(method: Method, uri: Uri) -> Response {
    error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        &ApiError::bad_input(format!(
            "{method} {} is not an API call: POST /api/call or /api/job, GET /api/compute",
            uri.path()
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 38, smaller items): a GPU-only operation on a machine without a GPU
    /// answered 500 ("cuda backend: no CUDA driver…"), and a diverged duel 500 with the CLI's
    /// "lower --lr"; now 409 saying what is missing, and 422 naming the request's field.
    #[test]
    fn gpu_only_ops_without_a_gpu_are_409_and_a_diverged_duel_is_422_with_the_doors_advice() {
        let missing = ApiError::from(&ComputeError::Unavailable {
            backend: "cuda".into(),
            reason: "no CUDA driver: libcuda.so not found".into(),
        });
        assert_eq!(status_of(missing.code), StatusCode::CONFLICT);
        assert!(missing.message.contains("no CUDA driver"), "{missing}");
        let diverged = ApiError::from(&ComputeError::Diverged {
            precision: "fp32".into(),
            epoch: 1,
            step: 3,
            loss: "NaN".into(),
        });
        assert_eq!(status_of(diverged.code), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(!diverged.message.contains("--lr"), "{diverged}");
        assert!(diverged.message.contains("config.lr"), "{diverged}");
        assert_eq!(
            status_of(ErrorKind::Runtime),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    /// Regression (issue 38, defect 5): over HTTP `peer_set_python` accepted any executable
    /// of the machine, which the next `peer_status` ran. Only the interpreters the server
    /// found itself are accepted now (clearing the choice always is).
    #[test]
    fn peer_set_python_over_http_accepts_only_interpreters_the_server_found() {
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python");
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        let known = KnownPythons::of(vec![KnownPython {
            python: python.display().to_string(),
            source: "--python".into(),
        }]);
        let set = |p: Option<&str>| {
            Request::from(compute::protocol::PeerSetPythonRequest {
                python: p.map(str::to_string),
            })
        };
        assert!(known
            .check(&set(Some(&python.display().to_string())))
            .is_ok());
        assert!(known.check(&set(None)).is_ok());
        let e = known.check(&set(Some("/bin/sh"))).unwrap_err();
        assert_eq!(e.code, ErrorKind::BadInput);
        assert!(e.message.contains("'/bin/sh' is not one of"), "{e}");
        assert!(known.check(&Request::from(CancelRequest {})).is_ok());
    }
}
