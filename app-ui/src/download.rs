//! Saving something the page made as a file: a temporary `<a download>` the page clicks, with
//! the text in a Blob URL (revoked a moment later) or a canvas as a PNG data URL.

use showdown_core::protocol::ApiError;

use crate::bridge::{js_text, runtime};
use wasm_bindgen::{JsCast, JsValue};

/// Offers `text` to the user as a file named `file_name` of type `mime`
/// (`text/html;charset=utf-8`, `text/csv`, `application/json`).
pub fn download_text(file_name: &str, mime: &str, text: &str) -> Result<(), ApiError> {
    let fail = |e: JsValue| runtime(format!("cannot save {file_name}: {}", js_text(&e)));
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).map_err(fail)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(fail)?;
    let clicked = click_link(file_name, &url);
    // The browser reads the Blob when the download starts; free it a little later.
    let revoke_url = url.clone();
    let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&revoke_url);
    });
    if let Some(window) = web_sys::window() {
        let _ = window
            .set_timeout_with_callback_and_timeout_and_arguments_0(revoke.unchecked_ref(), 10_000);
    }
    clicked
}

/// Offers the canvas with element ID `canvas_id` to the user as a PNG named `file_name`.
pub fn download_canvas_png(canvas_id: &str, file_name: &str) -> Result<(), ApiError> {
    let canvas = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(canvas_id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        .ok_or_else(|| runtime(format!("there is no chart #{canvas_id} on this page")))?;
    let url = canvas
        .to_data_url()
        .map_err(|e| runtime(format!("cannot read the chart: {}", js_text(&e))))?;
    click_link(file_name, &url)
}

/// Offers the canvas `canvas_id` as a PNG named `file_name` with `caption` drawn on a band
/// under the chart and stored in the file as its `iTXt` Description
/// ([`showdown_core::png_text`]): the image keeps its context wherever it goes.
pub fn download_canvas_png_captioned(
    canvas_id: &str,
    file_name: &str,
    caption: &str,
) -> Result<(), ApiError> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| runtime("no browser document"))?;
    let chart = document
        .get_element_by_id(canvas_id)
        .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        .ok_or_else(|| runtime(format!("there is no chart #{canvas_id} on this page")))?;
    let fail = |e: JsValue| runtime(format!("cannot caption the chart: {}", js_text(&e)));
    let band = 28u32;
    let out: web_sys::HtmlCanvasElement = document
        .create_element("canvas")
        .map_err(fail)?
        .dyn_into()
        .map_err(|_| runtime("cannot make a canvas"))?;
    out.set_width(chart.width());
    out.set_height(chart.height() + band);
    let ctx: web_sys::CanvasRenderingContext2d = out
        .get_context("2d")
        .map_err(fail)?
        .ok_or_else(|| runtime("no 2D context"))?
        .dyn_into()
        .map_err(|_| runtime("no 2D context"))?;
    ctx.set_fill_style_str("#ffffff");
    ctx.fill_rect(0.0, 0.0, f64::from(out.width()), f64::from(out.height()));
    ctx.draw_image_with_html_canvas_element(&chart, 0.0, 0.0)
        .map_err(fail)?;
    ctx.set_fill_style_str("#1d2330");
    ctx.set_font("12px sans-serif");
    ctx.fill_text(caption, 8.0, f64::from(chart.height()) + 18.0)
        .map_err(fail)?;
    let url = out
        .to_data_url()
        .map_err(|e| runtime(format!("cannot read the chart: {}", js_text(&e))))?;
    let window = web_sys::window().ok_or_else(|| runtime("no browser window"))?;
    let b64 = url
        .strip_prefix("data:image/png;base64,")
        .ok_or_else(|| runtime("the chart is not a PNG"))?;
    let binary = window.atob(b64).map_err(fail)?;
    let bytes: Vec<u8> = binary.chars().map(|c| c as u32 as u8).collect();
    let captioned =
        showdown_core::png_text::with_text(&bytes, showdown_core::png_text::CAPTION_KEY, caption)
            .ok_or_else(|| runtime("the chart is not a PNG"))?;
    let text: String = captioned.iter().map(|b| char::from(*b)).collect();
    let encoded = window.btoa(&text).map_err(fail)?;
    click_link(file_name, &format!("data:image/png;base64,{encoded}"))
}

/// Adds a hidden `<a href=url download=file_name>` to the page, clicks it and removes it.
fn click_link(file_name: &str, url: &str) -> Result<(), ApiError> {
    let fail = |e: JsValue| runtime(format!("cannot save {file_name}: {}", js_text(&e)));
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| runtime("no browser document"))?;
    let body = document
        .body()
        .ok_or_else(|| runtime("the page has no body"))?;
    let link: web_sys::HtmlAnchorElement = document
        .create_element("a")
        .map_err(fail)?
        .dyn_into()
        .map_err(|_| runtime("cannot make a link element"))?;
    link.set_href(url);
    link.set_download(file_name);
    link.set_hidden(true);
    body.append_child(&link).map_err(fail)?;
    link.click();
    link.remove();
    Ok(())
}
