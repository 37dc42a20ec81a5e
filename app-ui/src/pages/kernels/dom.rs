//! A section's result ([`Block`]s) drawn straight into the page with the DOM's own calls: one
//! small renderer for every table, list, chart and button of the four sections, instead of a
//! compiled view per shape (the WASM stays small). Every text from the service goes in as a
//! text node or `textContent`, never as HTML.

use leptos::prelude::*;
use showdown_core::lab::ProfileTarget;
use showdown_core::protocol::ProfileRequest;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, Element, HtmlCanvasElement};

use std::rc::Rc;

use super::section::{open_in_act_iv, Block, Control, Draw, Lab, Section, Table};
use crate::charts::hit_at;

/// The event listeners of a drawn result, kept alive as long as it is shown.
pub type Listeners = Vec<Closure<dyn FnMut(web_sys::Event)>>;

/// Where a result is drawn and what it answers to.
pub struct Target {
    /// The lab.
    pub lab: Lab,
    /// The section's name.
    pub section: &'static str,
    /// Where a Profile job's error goes.
    pub error: RwSignal<Option<String>>,
    /// Whether the Profile buttons show (the service has a GPU).
    pub gpu: bool,
}

struct Dom {
    doc: Document,
    listeners: Listeners,
}

impl Dom {
    /// Drawing into `slot`, emptied first.
    fn emptying(slot: &Element) -> Result<Dom, JsValue> {
        let doc = web_sys::window()
            .and_then(|w| w.document())
            .ok_or_else(|| JsValue::from_str("no document"))?;
        slot.set_text_content(None);
        Ok(Dom {
            doc,
            listeners: Vec::new(),
        })
    }

    fn el(&self, parent: &Element, tag: &str, class: &str) -> Result<Element, JsValue> {
        let e = self.doc.create_element(tag)?;
        if !class.is_empty() {
            e.set_class_name(class);
        }
        parent.append_child(&e)?;
        Ok(e)
    }

    fn text(
        &self,
        parent: &Element,
        tag: &str,
        class: &str,
        text: &str,
    ) -> Result<Element, JsValue> {
        let e = self.el(parent, tag, class)?;
        e.set_text_content(Some(text));
        Ok(e)
    }

    fn on(
        &mut self,
        target: &Element,
        event: &str,
        f: Box<dyn FnMut(web_sys::Event)>,
    ) -> Result<(), JsValue> {
        let c = Closure::wrap(f);
        target.add_event_listener_with_callback(event, c.as_ref().unchecked_ref())?;
        self.listeners.push(c);
        Ok(())
    }

    fn button(&mut self, parent: &Element, class: &str, label: &str) -> Result<Element, JsValue> {
        let b = self.text(parent, "button", class, label)?;
        b.set_attribute("type", "button")?;
        Ok(b)
    }

    fn profile(
        &mut self,
        t: &Target,
        parent: &Element,
        label: &str,
        target: &ProfileTarget,
    ) -> Result<(), JsValue> {
        let b = self.button(parent, "profile-button", label)?;
        b.set_attribute("title", &format!("Nsight Compute on {}", target.describe()))?;
        let (lab, section, error, what) = (t.lab, t.section, t.error, target.clone());
        self.on(
            &b,
            "click",
            Box::new(move |_| {
                let request = ProfileRequest {
                    what: what.clone(),
                    sections: Vec::new(),
                };
                let open = move |reply| {
                    if let Err(e) = open_in_act_iv(reply) {
                        error.set(Some(e));
                    }
                };
                lab.start(section, request.into(), error, Box::new(open));
            }),
        )
    }

    fn table(&mut self, t: &Target, parent: &Element, table: &Table) -> Result<(), JsValue> {
        let e = self.el(parent, "table", "results")?;
        if !table.id.is_empty() {
            e.set_id(table.id);
        }
        if !table.key.is_empty() {
            e.set_attribute("data-key", &table.key)?;
        }
        if !table.caption.is_empty() {
            self.text(&e, "caption", "", &table.caption)?;
        }
        let head = self.el(&e, "thead", "")?;
        let tr = self.el(&head, "tr", "")?;
        for h in &table.head {
            self.text(&tr, "th", "", h)?;
        }
        let profiles = t.gpu && table.rows.iter().any(|r| r.profile.is_some());
        if profiles {
            self.el(&tr, "th", "")?;
        }
        let body = self.el(&e, "tbody", "")?;
        for r in &table.rows {
            let tr = self.el(&body, "tr", &r.class)?;
            if !r.key.is_empty() {
                tr.set_attribute("data-key", &r.key)?;
            }
            for c in &r.cells {
                let td = self.el(&tr, "td", c.class)?;
                if let Some(color) = &c.swatch {
                    let s = self.el(&td, "span", "swatch")?;
                    s.set_attribute("style", &format!("background:{color}"))?;
                }
                td.append_child(&self.doc.create_text_node(&c.text))?;
            }
            if profiles {
                let td = self.el(&tr, "td", "")?;
                if let Some(target) = &r.profile {
                    self.profile(t, &td, "Profile", target)?;
                }
            }
        }
        Ok(())
    }

    fn chart(&mut self, parent: &Element, id: &str, draw: &Draw) -> Result<(), JsValue> {
        let canvas: HtmlCanvasElement = self
            .el(parent, "canvas", "lab-chart")?
            .dyn_into()
            .map_err(|_| JsValue::from_str("not a canvas"))?;
        canvas.set_id(id);
        match draw(canvas.clone()) {
            Ok(hits) => {
                let c = canvas.clone();
                self.on(
                    &canvas,
                    "mousemove",
                    Box::new(move |ev| {
                        let Some(m) = ev.dyn_ref::<web_sys::MouseEvent>() else {
                            return;
                        };
                        let sx = f64::from(c.width()) / f64::from(c.client_width().max(1));
                        let sy = f64::from(c.height()) / f64::from(c.client_height().max(1));
                        let x = (f64::from(m.offset_x()) * sx) as i32;
                        let y = (f64::from(m.offset_y()) * sy) as i32;
                        let _ = c.set_attribute("title", hit_at(&hits, x, y).unwrap_or(""));
                    }),
                )
            }
            Err(e) => self.text(parent, "p", "error", &e).map(|_| ()),
        }
    }
}

/// Draws `blocks` into `slot` (emptied first) as `div.lab-result#<section>-result`, with
/// `data-saved-run` when the run history kept the run; the listeners to keep.
pub fn render(
    t: &Target,
    slot: &Element,
    saved: Option<&str>,
    blocks: &[Block],
) -> Result<Listeners, JsValue> {
    let mut d = Dom::emptying(slot)?;
    let root = d.el(slot, "div", "lab-result")?;
    root.set_id(&format!("{}-result", t.section));
    if let Some(id) = saved {
        root.set_attribute("data-saved-run", id)?;
    }
    for b in blocks {
        match b {
            Block::Para(class, text) => {
                d.text(&root, "p", class, text)?;
            }
            Block::List(id, class, items) => {
                if items.is_empty() {
                    continue;
                }
                let ul = d.el(&root, "ul", class)?;
                if !id.is_empty() {
                    ul.set_id(id);
                }
                for i in items {
                    d.text(&ul, "li", "", i)?;
                }
            }
            Block::Table(table) => d.table(t, &root, table)?,
            Block::Chart(id, draw) => d.chart(&root, id, draw)?,
            Block::Profiles(list) => {
                if t.gpu {
                    let p = d.el(&root, "p", "profiles")?;
                    for (label, target) in list {
                        d.profile(t, &p, label, target)?;
                    }
                }
            }
            Block::Download(id, label, file, mime, text) => {
                let p = d.el(&root, "p", "")?;
                let b = d.button(&p, "", label)?;
                b.set_id(id);
                let note = d.el(&p, "span", "error")?;
                let (file, mime, text) = (file.clone(), *mime, text.clone());
                d.on(
                    &b,
                    "click",
                    Box::new(move |_| {
                        let r = crate::download::download_text(&file, mime, &text);
                        let message = r.err().map(|e| format!(" export failed: {}", e.message));
                        note.set_text_content(message.as_deref());
                    }),
                )?;
            }
        }
    }
    Ok(d.listeners)
}

fn set_disabled(id: &str, off: bool) {
    if let Some(e) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    {
        let _ = e.toggle_attribute_with_force("disabled", off);
    }
}

fn set_text(id: &str, text: &str) {
    if let Some(e) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    {
        e.set_text_content(Some(text));
    }
}

/// Draws section `s`'s form into `slot` (emptied first): its controls with their defaults,
/// Run (`#<id>-run`, calling `run`) and Cancel (`#<id>-cancel`); or, for a section that
/// needs a GPU on a machine without one, the GPU-needed sentence. The listeners to keep.
pub fn form(
    lab: Lab,
    s: &'static Section,
    gpu: Option<bool>,
    slot: &Element,
    run: Rc<dyn Fn()>,
) -> Result<Listeners, JsValue> {
    let mut d = Dom::emptying(slot)?;
    if let (Some(what), Some(false)) = (s.gpu_only, gpu) {
        d.text(
            slot,
            "p",
            "gpu-needed",
            &format!("{what} needs a CUDA GPU that the compute service can use, and this machine has none."),
        )?;
        return Ok(d.listeners);
    }
    let controls = d.el(slot, "div", "controls")?;
    for c in s.controls {
        match c {
            Control::Count(id, label, default)
            | Control::GpuCount(id, label, default)
            | Control::Text(id, label, default) => {
                let l = d.text(&controls, "label", "", &format!("{label} "))?;
                l.set_attribute("for", id)?;
                let i = d.el(&l, "input", "field")?;
                let number = !matches!(c, Control::Text(..));
                i.set_attribute("type", if number { "number" } else { "text" })?;
                if number {
                    i.set_attribute("min", "1")?;
                }
                i.set_id(id);
                i.set_attribute("value", default)?;
                if matches!(c, Control::GpuCount(..)) {
                    d.el(&controls, "span", "muted")?
                        .set_id(&format!("{id}-gpu-note"));
                }
            }
            Control::Checks(class, names, on, gpu_only) => {
                let span = d.el(&controls, "span", "checks")?;
                for n in *names {
                    let l = d.el(&span, "label", "check")?;
                    let i = d.el(&l, "input", class)?;
                    i.set_attribute("type", "checkbox")?;
                    i.set_id(&format!("{class}-{n}"));
                    i.set_attribute("value", n)?;
                    if on.contains(n) {
                        i.set_attribute("checked", "")?;
                    }
                    l.append_child(&d.doc.create_text_node(n))?;
                }
                if !gpu_only.is_empty() {
                    d.el(&span, "span", "muted")?
                        .set_id(&format!("{class}-gpu-note"));
                }
            }
            Control::Peer => {
                let l = d.el(&controls, "label", "check")?;
                let i = d.el(&l, "input", "with-pytorch")?;
                i.set_attribute("type", "checkbox")?;
                i.set_id(&format!("{}-peers", s.id));
                l.append_child(&d.doc.create_text_node("with PyTorch"))?;
                d.el(&controls, "span", "muted peer-note")?
                    .set_id(&format!("{}-peer-note", s.id));
            }
        }
    }
    let p = d.el(slot, "p", "")?;
    let b = d.button(&p, "lab-run", "Run")?;
    b.set_id(&format!("{}-run", s.id));
    d.on(&b, "click", Box::new(move |_| run()))?;
    let b = d.button(&p, "lab-cancel", "Cancel")?;
    b.set_id(&format!("{}-cancel", s.id));
    d.on(
        &b,
        "click",
        Box::new(move |_| {
            lab.cancel.dispatch(());
        }),
    )?;
    Ok(d.listeners)
}

/// Keeps section `s`'s form in step: Run off while a job runs (or, for a GPU section, until
/// the machine check found a GPU), Cancel on while this section's job runs, the controls that
/// need a GPU off without one, "with PyTorch" off unless the peer is ready (`peer_note` says
/// how to enable it).
pub fn form_state(
    s: &Section,
    gpu: Option<bool>,
    peer_note: Option<&str>,
    running: bool,
    mine: bool,
) {
    let id = s.id;
    set_disabled(
        &format!("{id}-run"),
        running || (s.gpu_only.is_some() && gpu != Some(true)),
    );
    set_disabled(&format!("{id}-cancel"), !(running && mine));
    for c in s.controls {
        match c {
            Control::Checks(class, _, _, gpu_only) if !gpu_only.is_empty() => {
                for n in *gpu_only {
                    set_disabled(&format!("{class}-{n}"), gpu != Some(true));
                }
                let note = if gpu == Some(true) {
                    String::new()
                } else {
                    format!(" ({} need a GPU)", gpu_only.join(", "))
                };
                set_text(&format!("{class}-gpu-note"), &note);
            }
            Control::GpuCount(field, ..) => {
                set_disabled(field, gpu != Some(true));
                let note = if gpu == Some(false) {
                    " (GPU rows only: this machine has no GPU)"
                } else {
                    ""
                };
                set_text(&format!("{field}-gpu-note"), note);
            }
            Control::Peer => {
                set_disabled(&format!("{id}-peers"), peer_note.is_some());
                set_text(&format!("{id}-peer-note"), peer_note.unwrap_or(""));
            }
            _ => {}
        }
    }
}
