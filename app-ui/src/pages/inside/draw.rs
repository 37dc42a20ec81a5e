//! The drawing pad: white ink on black with a thick round brush (mouse, pen or finger), sent to
//! the service at 140 × 140 grey; the service centres and scales it as MNIST's digits are
//! (its ink's box into 20 × 20, centred by mass in 28 × 28) before the forward pass.

use leptos::html::Canvas;
use leptos::prelude::*;
use showdown_core::protocol::{DigitSource, MAX_DRAWING_SIDE};
use web_sys::HtmlCanvasElement;

use super::maps::context;
use super::Chosen;

/// The pad's side, canvas pixels.
const PAD: u32 = 280;
/// The side of the grey image sent (each pixel the mean of `PAD / SENT` squared).
const SENT: usize = 140;
/// The brush's diameter, canvas pixels (about 2 MNIST pixels once scaled to 28 × 28).
const BRUSH: f64 = 22.0;

fn clear(canvas: &HtmlCanvasElement) -> Result<(), String> {
    let ctx = context(canvas)?;
    ctx.set_fill_style_str("#000");
    ctx.fill_rect(
        0.0,
        0.0,
        f64::from(canvas.width()),
        f64::from(canvas.height()),
    );
    Ok(())
}

/// A stroke from `a` to `b` (a dot when they are the same point).
fn stroke(canvas: &HtmlCanvasElement, a: (f64, f64), b: (f64, f64)) -> Result<(), String> {
    let ctx = context(canvas)?;
    ctx.set_fill_style_str("#fff");
    ctx.set_stroke_style_str("#fff");
    ctx.set_line_width(BRUSH);
    ctx.set_line_cap("round");
    ctx.set_line_join("round");
    ctx.begin_path();
    if a == b {
        ctx.arc(a.0, a.1, BRUSH / 2.0, 0.0, std::f64::consts::TAU)
            .map_err(|e| format!("cannot draw: {e:?}"))?;
        ctx.fill();
    } else {
        ctx.move_to(a.0, a.1);
        ctx.line_to(b.0, b.1);
        ctx.stroke();
    }
    Ok(())
}

/// Where the pointer is, in canvas pixels.
fn point(canvas: &HtmlCanvasElement, ev: &web_sys::MouseEvent) -> (f64, f64) {
    let sx = f64::from(canvas.width()) / f64::from(canvas.client_width().max(1));
    let sy = f64::from(canvas.height()) / f64::from(canvas.client_height().max(1));
    (f64::from(ev.offset_x()) * sx, f64::from(ev.offset_y()) * sy)
}

/// The pad's ink as `SENT × SENT` grey bytes (0 background, 255 ink); `None` when blank.
fn grey(canvas: &HtmlCanvasElement) -> Result<Option<Vec<u8>>, String> {
    let ctx = context(canvas)?;
    let (w, h) = (canvas.width() as usize, canvas.height() as usize);
    let data = ctx
        .get_image_data(0.0, 0.0, w as f64, h as f64)
        .map_err(|e| format!("cannot read the drawing: {e:?}"))?
        .data()
        .0;
    let f = (w / SENT).max(1);
    if SENT * f > w || SENT * f > h || data.len() < w * h * 4 {
        return Err(format!("the pad is {w}×{h}, too small for {SENT}×{SENT}"));
    }
    let mut out = vec![0u8; SENT * SENT];
    for (i, o) in out.iter_mut().enumerate() {
        let (y0, x0) = ((i / SENT) * f, (i % SENT) * f);
        let mut sum = 0u32;
        for y in y0..y0 + f {
            for x in x0..x0 + f {
                sum += u32::from(data[(y * w + x) * 4]);
            }
        }
        *o = (sum / (f * f) as u32) as u8;
    }
    Ok(out.iter().any(|&v| v > 0).then_some(out))
}

/// The pad (#draw-pad) with its buttons (#draw-clear, #draw-run); Run sets `chosen` to the
/// drawing (key `drawn/<n>`).
#[component]
pub fn DrawPad(
    /// The digit the page shows.
    chosen: RwSignal<Chosen>,
) -> impl IntoView {
    let canvas = NodeRef::<Canvas>::new();
    let last = StoredValue::new(None::<(f64, f64)>);
    let runs = StoredValue::new(0u32);
    let error = RwSignal::new(None::<String>);
    let report = move |r: Result<(), String>| {
        if let Err(e) = r {
            error.set(Some(e));
        }
    };
    Effect::new(move |_| {
        if let Some(c) = canvas.get() {
            report(clear(&c));
        }
    });
    let down = move |ev: web_sys::PointerEvent| {
        let Some(c) = canvas.get_untracked() else {
            return;
        };
        ev.prevent_default();
        let _ = c.set_pointer_capture(ev.pointer_id());
        let p = point(&c, &ev);
        report(stroke(&c, p, p));
        last.set_value(Some(p));
    };
    let moved = move |ev: web_sys::PointerEvent| {
        let (Some(c), Some(prev)) = (canvas.get_untracked(), last.get_value()) else {
            return;
        };
        let p = point(&c, &ev);
        report(stroke(&c, prev, p));
        last.set_value(Some(p));
    };
    let up = move |_: web_sys::PointerEvent| last.set_value(None);
    let run = move |_| {
        let Some(c) = canvas.get_untracked() else {
            return;
        };
        match grey(&c) {
            Err(e) => error.set(Some(e)),
            Ok(None) => error.set(Some("The pad is empty: draw a digit first.".into())),
            Ok(Some(pixels)) => {
                error.set(None);
                runs.update_value(|n| *n += 1);
                let side = SENT.min(MAX_DRAWING_SIDE);
                chosen.set(Some((
                    format!("drawn/{}", runs.get_value()),
                    DigitSource::Drawn {
                        side,
                        pixels_base64: {
                            use base64::Engine;
                            base64::engine::general_purpose::STANDARD.encode(&pixels)
                        },
                    },
                )));
            }
        }
    };
    let clear_pad = move |_| {
        if let Some(c) = canvas.get_untracked() {
            error.set(None);
            report(clear(&c));
        }
    };
    view! {
        <div id="draw" class="draw">
            <canvas id="draw-pad" node_ref=canvas width=PAD height=PAD
                style="touch-action: none; cursor: crosshair; background: #000; margin: 0.3rem 0; max-width: 100%"
                title="Draw a digit: white ink on black"
                on:pointerdown=down on:pointermove=moved on:pointerup=up on:pointercancel=up></canvas>
            <div>
                <button type="button" id="draw-clear" on:click=clear_pad>"Clear"</button>
                <button type="button" id="draw-run" on:click=run>"Run it through the network"</button>
            </div>
            {move || error.get().map(|e| view! { <p class="error" id="draw-error">{e}</p> })}
        </div>
    }
}
