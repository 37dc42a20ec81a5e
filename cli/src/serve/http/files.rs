//! The web UI's static files: never one that a symlink takes out of the UI folder.

use super::*;

/// A static file's body depends on the request's `Accept-Encoding` (gzip or not): says so to
/// caches (`Vary: Accept-Encoding`).
pub(super) async fn vary_accept_encoding(mut r: Response) -> Response {
    r.headers_mut().append(
        header::VARY,
        header::HeaderValue::from_static("accept-encoding"),
    );
    r
}

pub(super) async fn not_found(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("not found: {}\n", uri.path()),
    )
        .into_response()
}

/// Answers 404 for a static file (or a folder's `index.html`) that resolves, through a
/// symlink, outside `root`, the canonical `--ui-dir`, and for one that cannot be read; the
/// rest goes on to `ServeDir`.
pub(super) async fn stay_inside(
    State(root): State<Arc<Path>>,
    req: axum::extract::Request,
    next: Next,
) -> Response {
    let uri = req.uri().clone();
    let path = uri.path().to_string();
    let outside = tokio::task::spawn_blocking(move || leaves(&root, &path))
        .await
        .unwrap_or(true);
    if outside {
        return not_found(uri).await;
    }
    let response = next.run(req).await;
    if response.status().is_server_error() {
        // `ServeDir` answers an empty 500 for an I/O error other than "not found": a name the
        // system refuses (over 255 bytes: ENAMETOOLONG), a file it cannot read. No such page.
        return not_found(uri).await;
    }
    response
}

/// Whether the file `ServeDir` would serve for the URL path `url_path` lies outside `root` (a
/// canonical folder). A path `ServeDir` would refuse counts as outside; one that does not exist
/// does not (`ServeDir` answers 404).
pub(super) fn leaves(root: &Path, url_path: &str) -> bool {
    let Some(relative) = percent_decode(url_path.trim_start_matches('/')) else {
        return true;
    };
    let mut file = root.to_path_buf();
    for part in Path::new(&relative).components() {
        match part {
            std::path::Component::Normal(name) => file.push(name),
            std::path::Component::CurDir => {}
            _ => return true,
        }
    }
    let outside = |p: &Path| p.canonicalize().is_ok_and(|real| !real.starts_with(root));
    // The gzip copy `ServeDir` sends instead (`precompressed_gzip`) must stay inside too.
    let gz = |p: &Path| {
        let mut name = p.as_os_str().to_os_string();
        name.push(".gz");
        PathBuf::from(name)
    };
    let index = file.join("index.html");
    outside(&file)
        || outside(&gz(&file))
        || (file.is_dir() && (outside(&index) || outside(&gz(&index))))
}

/// `text` with its `%XX` escapes decoded, as `ServeDir` decodes a path; `None` when the result
/// is not UTF-8.
pub(super) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(b) if bytes[i] == b'%' => {
                out.push(b);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

pub(super) async fn no_ui(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!(
            "not found: {}: this server has no web UI folder ({DEFAULT_UI_DIR} does not exist; \
             build it with `cargo xtask ui` or pass --ui-dir DIR); the API is under /api\n",
            uri.path()
        ),
    )
        .into_response()
}
