//! Act IV's screenshot viewer: a thumbnail that opens over the page at actual size (1:1),
//! panned by dragging, the wheel or the arrow keys, with a switch to fit the window.

use super::*;

/// How an opened screenshot is shown.
#[derive(Clone, Copy, PartialEq)]
enum Zoom {
    /// The thumbnail on the page.
    Closed,
    /// Over the page, one image pixel per screen pixel, panned.
    Actual,
    /// Over the page, scaled to fit the window.
    Fit,
}

/// The offset (`left`, `top`, px, at most 0) that keeps an image of `natural` px inside a box
/// of `frame` px after moving it to `wanted`; an image smaller than the box is centred.
fn clamp_pan(wanted: f64, natural: f64, frame: f64) -> f64 {
    if natural <= frame {
        (frame - natural) / 2.0
    } else {
        wanted.clamp(frame - natural, 0.0)
    }
}

/// The screenshot `url` (`width` × `height` px): a thumbnail that a click or Enter opens at
/// actual size; dragging, the wheel or the arrow keys pan it; "Fit to window" scales it; a
/// click without a drag, Escape or "Close" closes it.
#[component]
pub(super) fn ShotImage(url: String, alt: String, width: u32, height: u32) -> impl IntoView {
    let zoom = RwSignal::new(Zoom::Closed);
    let pan = RwSignal::new((0.0f64, 0.0f64));
    // The pointer's last position while a button is down, and whether it moved (a drag is no
    // click).
    let drag = RwSignal::new(None::<(f64, f64)>);
    let moved = RwSignal::new(false);
    let (w, h) = (f64::from(width), f64::from(height));
    let move_by = move |el: &web_sys::Element, dx: f64, dy: f64| {
        let (fw, fh) = (f64::from(el.client_width()), f64::from(el.client_height()));
        pan.update(|(x, y)| {
            *x = clamp_pan(*x + dx, w, fw);
            *y = clamp_pan(*y + dy, h, fh);
        });
    };
    let target = |ev: &leptos::ev::Event| {
        ev.target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    };
    let open = move |el: Option<web_sys::Element>| {
        zoom.set(Zoom::Actual);
        pan.set((0.0, 0.0));
        // Centre an image smaller than the window once the overlay has its size.
        if let Some(el) = el {
            request_animation_frame(move || move_by(&el, 0.0, 0.0));
        }
    };
    view! {
        <img class="screenshot-image" src=url alt=alt
            class:screenshot-full=move || zoom.get() != Zoom::Closed
            class:actual-size=move || zoom.get() == Zoom::Actual
            style:object-position=move || match zoom.get() {
                Zoom::Actual => format!("{}px {}px", pan.get().0, pan.get().1),
                _ => String::new(),
            }
            title=move || match zoom.get() {
                Zoom::Closed => "click for actual size",
                _ => "drag to pan; click or Escape to close",
            }
            tabindex="0"
            on:pointerdown=move |ev| {
                if zoom.get_untracked() == Zoom::Actual {
                    ev.prevent_default();
                    drag.set(Some((f64::from(ev.client_x()), f64::from(ev.client_y()))));
                }
                moved.set(false);
            }
            on:pointermove=move |ev| {
                let Some((x0, y0)) = drag.get_untracked() else { return };
                let (x, y) = (f64::from(ev.client_x()), f64::from(ev.client_y()));
                if (x - x0).abs() + (y - y0).abs() > 2.0 {
                    moved.set(true);
                }
                if let Some(el) = target(&ev) {
                    move_by(&el, x - x0, y - y0);
                }
                drag.set(Some((x, y)));
            }
            on:pointerup=move |_| drag.set(None)
            on:pointerleave=move |_| drag.set(None)
            on:wheel=move |ev| {
                if zoom.get_untracked() == Zoom::Actual {
                    ev.prevent_default();
                    if let Some(el) = target(&ev) {
                        move_by(&el, -ev.delta_x(), -ev.delta_y());
                    }
                }
            }
            on:click=move |ev| match zoom.get_untracked() {
                Zoom::Closed => open(target(&ev)),
                _ if moved.get_untracked() => moved.set(false),
                _ => zoom.set(Zoom::Closed),
            }
            on:keydown=move |ev| {
                let step = 80.0;
                let by = match ev.key().as_str() {
                    "Escape" => {
                        zoom.set(Zoom::Closed);
                        return;
                    }
                    "Enter" if zoom.get_untracked() == Zoom::Closed => {
                        open(target(&ev));
                        return;
                    }
                    "Enter" => {
                        zoom.set(Zoom::Closed);
                        return;
                    }
                    "ArrowLeft" => (step, 0.0),
                    "ArrowRight" => (-step, 0.0),
                    "ArrowUp" => (0.0, step),
                    "ArrowDown" => (0.0, -step),
                    _ => return,
                };
                if zoom.get_untracked() == Zoom::Actual {
                    ev.prevent_default();
                    if let Some(el) = target(&ev) {
                        move_by(&el, by.0, by.1);
                    }
                }
            }/>
        {move || (zoom.get() != Zoom::Closed).then(|| view! {
            <div class="screenshot-tools">
                <button class="screenshot-zoom" on:click=move |_| zoom.update(|z| {
                    *z = if *z == Zoom::Actual { Zoom::Fit } else { Zoom::Actual };
                })>{move || if zoom.get() == Zoom::Actual { "Fit to window" } else { "Actual size (1:1)" }}</button>
                <span class="screenshot-scale">{move || if zoom.get() == Zoom::Actual {
                    format!("1:1, {width} × {height} px: drag, wheel or arrow keys to pan")
                } else {
                    "fitted to the window".to_string()
                }}</span>
                <button class="screenshot-close" on:click=move |_| zoom.set(Zoom::Closed)>"Close"</button>
            </div>
        })}
    }
}
