//! Who may reach the server: `Host` on every request, on /api the `Origin`, JSON only, one
//! `Host`/`Origin`/`Content-Type` header, and the token.

use super::*;

/// Who may reach the server: checked on every request before anything else runs.
#[derive(Clone)]
pub(super) struct Guard {
    /// The `Host` values accepted (lower case): the bound address and the loopback names with
    /// its port. `None` when bound off loopback (then a token is mandatory): any Host.
    pub(super) hosts: Option<Arc<[String]>>,
    /// Browser origins accepted besides the server's own (`--allow-origin`), answered with
    /// CORS headers.
    pub(super) allowed_origins: Arc<[String]>,
}

/// How a request's `Origin` stands.
pub(super) enum OriginCheck {
    /// No `Origin`, or the server's own: nothing to add.
    Own,
    /// An `--allow-origin` origin: the response carries CORS headers naming it.
    Allowed(header::HeaderValue),
}

/// The `Host` values that name this server on `local`'s port.
pub(super) fn own_hosts(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut hosts = vec![
        local.to_string(),
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    if port == 80 {
        // Browsers leave the default port out.
        let without: Vec<String> = hosts
            .iter()
            .filter_map(|h| h.strip_suffix(":80").map(str::to_string))
            .collect();
        hosts.extend(without);
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

/// An `--allow-origin` value, normalised: `scheme://host[:port]` in lower case.
pub(super) fn parse_origin(origin: &str) -> Result<String> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let well_formed = ["http://", "https://"].iter().any(|scheme| {
        o.strip_prefix(scheme)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains(['/', '?', '#', '@', '*', ' ']))
    });
    if well_formed {
        Ok(o)
    } else {
        Err(ComputeError::bad_arg(
            "--allow-origin",
            origin,
            "must be a browser origin, scheme://host[:port] (such as http://localhost:5173)",
        )
        .into())
    }
}

impl Guard {
    /// Refuses a request whose `Host` (and absolute URI) does not name this server: a page
    /// of another site whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own.
    pub(super) fn check_host(
        &self,
        req: &axum::extract::Request,
    ) -> std::result::Result<(), String> {
        let host = req
            .headers()
            .get(header::HOST)
            .map(|h| h.to_str().unwrap_or("(not text)").to_ascii_lowercase());
        let authority = req
            .uri()
            .authority()
            .map(|a| a.as_str().to_ascii_lowercase());
        if host.is_none() && authority.is_none() {
            return Err("the request has no Host header".into());
        }
        let Some(hosts) = &self.hosts else {
            return Ok(());
        };
        for h in host.iter().chain(authority.iter()) {
            if !hosts.iter().any(|o| o == h) {
                return Err(format!(
                    "Host '{h}' is not this server (it answers to {})",
                    hosts.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Refuses a request whose `Origin` is neither the server's own nor allowed.
    pub(super) fn check_origin(
        &self,
        req: &axum::extract::Request,
    ) -> std::result::Result<OriginCheck, String> {
        let Some(value) = req.headers().get(header::ORIGIN) else {
            return Ok(OriginCheck::Own);
        };
        let origin = value.to_str().unwrap_or("(not text)").to_ascii_lowercase();
        let own = match &self.hosts {
            Some(hosts) => hosts.iter().any(|h| origin == format!("http://{h}")),
            None => req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .is_some_and(|h| origin == format!("http://{}", h.to_ascii_lowercase())),
        };
        if own {
            Ok(OriginCheck::Own)
        } else if self.allowed_origins.contains(&origin) {
            Ok(OriginCheck::Allowed(value.clone()))
        } else {
            Err(format!(
                "requests from the page origin '{origin}' are refused: only this server's own \
                 pages may call its API (start it with --allow-origin {origin} to allow that one)"
            ))
        }
    }
}

pub(super) fn is_api(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

/// Whether the request says its body is JSON (`application/json`, parameters allowed).
pub(super) fn is_json(req: &axum::extract::Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Refuses a request with two `Host`, two `Origin` or two `Content-Type` headers (RFC 9110
/// and 6454: one at most; a check of the first alone would let the second through, and a body
/// announced as JSON then as `text/plain` is not known to be either).
pub(super) fn check_single(req: &axum::extract::Request) -> std::result::Result<(), String> {
    for (name, what) in [
        (header::HOST, "Host"),
        (header::ORIGIN, "Origin"),
        (header::CONTENT_TYPE, "Content-Type"),
    ] {
        if req.headers().get_all(&name).iter().nth(1).is_some() {
            return Err(format!(
                "the request has more than one {what} header: send one"
            ));
        }
    }
    Ok(())
}

/// Checks `Host` on every request (one, naming this server), and on /api the `Origin`, that a
/// POST carries JSON and that its announced length is within the limit; every refusal is an
/// [`ApiError`].
pub(super) async fn guard(
    State(g): State<Guard>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    if let Err(why) = check_single(&req) {
        return error_response(StatusCode::BAD_REQUEST, &ApiError::bad_input(why));
    }
    if let Err(why) = g.check_host(&req) {
        return error_response(StatusCode::FORBIDDEN, &ApiError::bad_input(why));
    }
    if !is_api(req.uri().path()) {
        return next.run(req).await;
    }
    let origin = match g.check_origin(&req) {
        Ok(o) => o,
        Err(why) => return error_response(StatusCode::FORBIDDEN, &ApiError::bad_input(why)),
    };
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let mut response =
        if req.method() == Method::OPTIONS && matches!(origin, OriginCheck::Allowed(_)) {
            // A CORS preflight from an allowed origin.
            let mut r = StatusCode::NO_CONTENT.into_response();
            let h = r.headers_mut();
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                header::HeaderValue::from_static("GET, POST"),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                header::HeaderValue::from_static("content-type, authorization"),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                header::HeaderValue::from_static("600"),
            );
            r
        } else if announced.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
            too_large()
        } else if req.method() == Method::POST && !is_json(&req) {
            error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &ApiError::bad_input(
                    "the API takes JSON: send `Content-Type: application/json` with the request",
                ),
            )
        } else {
            next.run(req).await
        };
    if let OriginCheck::Allowed(o) = origin {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o);
        h.insert(header::VARY, header::HeaderValue::from_static("Origin"));
    }
    response
}

pub(super) async fn require_token(
    State(s): State<AppState>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    if let Some(token) = &s.token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
            let mut r = error_response(
                StatusCode::UNAUTHORIZED,
                &ApiError::bad_input(
                    "this server needs `Authorization: Bearer TOKEN` with the --token it was \
                     started with",
                ),
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return r;
        }
    }
    next.run(req).await
}

/// Compares without stopping at the first difference (no timing hint about the token).
pub(super) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 38, defect 9): `Content-Type: application/json` then
    /// `Content-Type: text/plain` got 200, only the first being read; now 400 naming it.
    #[test]
    fn two_content_type_headers_are_refused() {
        let req = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/api/call")
            .header(header::HOST, "127.0.0.1:8080")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_TYPE, "text/plain")
            .body(Body::empty())
            .unwrap();
        let why = check_single(&req).unwrap_err();
        assert!(why.contains("more than one Content-Type header"), "{why}");
        let one = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/api/call")
            .header(header::HOST, "127.0.0.1:8080")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::empty())
            .unwrap();
        assert!(check_single(&one).is_ok());
    }
}
