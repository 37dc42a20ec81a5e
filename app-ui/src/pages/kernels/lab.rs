//! One way to lay a section of the live lab out: [`section_view`] puts a [`Section`]'s form,
//! its job's progress and its result on the page, the form and the result drawn with the DOM's
//! own calls ([`dom`]): the four sections share one compiled form, table, chart canvas and
//! result view, and the WASM stays small. What the sections share ([`Lab`], [`Section`],
//! [`Block`]…) is in [`super::section`], re-exported here.

use std::rc::Rc;

use leptos::prelude::*;
use serde_json::Value;
use showdown_core::lab::{newest_gpu_run, LabRunSummary, RunOrigin};
use showdown_core::protocol::LabRunRequest;

use super::dom::{self, Listeners, Target};
use super::section::{call, Block, Form, Lab, Section};
use crate::bridge;

/// The newest saved GPU run of `s`'s kind, as blocks under a paragraph (`.history-run`) that
/// names it; `None` when there is none or it cannot be read.
async fn saved_gpu_run(s: &'static Section, summary: LabRunSummary) -> Option<Vec<Block>> {
    let run = call(LabRunRequest {
        id: summary.id.clone(),
    })
    .await
    .ok()?;
    let json = serde_json::to_value(&run.report).ok()?;
    let origin = RunOrigin::Saved {
        id: run.id.clone(),
        saved_at: run.saved_at,
    };
    let mut blocks = (s.show)(&json.get("report")?.to_string(), &origin).ok()?;
    blocks.insert(
        0,
        Block::Para(
            "history-run",
            format!(
                "This machine has no GPU: below is the newest GPU run of the {} in the run history ({}, {}, saved {}){}. Run it here for this machine's own numbers.",
                run.report.title(),
                run.id,
                run.report.device(),
                showdown_core::runs::utc_date_time(run.saved_at),
                // Only the kernel lab, the ladder and inference have a reference column.
                if matches!(run.report.kind(), "kernels" | "ladder" | "inference") {
                    format!(", beside the labelled {}", super::results::REFERENCE)
                } else {
                    String::new()
                }
            ),
        ),
    );
    Some(blocks)
}

/// What a job's reply says of the run history, as a paragraph.
fn saved_block(reply: &Value) -> Block {
    let text = |k: &str| reply.get(k).and_then(Value::as_str).map(str::to_string);
    match (text("saved_run"), text("save_note")) {
        (Some(id), _) => Block::Para(
            "saved-run muted",
            format!("Saved to the run history as {id}."),
        ),
        (None, note) => Block::Para(
            "saved-run error",
            note.unwrap_or_else(|| "The result was not saved to the run history.".into()),
        ),
    }
}

/// A section of the lab (`section#lab-<id>`): its form with Run (`#<id>-run`) and Cancel
/// (`#<id>-cancel`, `.lab-cancel`), or the GPU-needed sentence (`.gpu-needed`) on a machine
/// without a GPU; the latest job's progress; the result (`#<id>-result`, `data-saved-run`
/// when the run history kept it). The form and the result are drawn with the DOM's calls
/// ([`dom`]).
pub fn section_view(lab: Lab, s: &'static Section) -> impl IntoView {
    let error = RwSignal::new(None::<String>);
    let result = RwSignal::new_local(None::<(Option<String>, Vec<Block>)>);
    let form_slot = NodeRef::<leptos::html::Div>::new();
    let slot = NodeRef::<leptos::html::Div>::new();
    let form_listeners = StoredValue::new_local(None::<(bool, Listeners)>);
    let listeners = StoredValue::new_local(Listeners::new());
    let id = s.id;
    let run: Rc<dyn Fn()> = Rc::new(move || {
        let form = Form {
            section: s,
            gpu: lab.gpu() == Some(true),
            peer_ready: lab.peer_ready(),
        };
        match (s.request)(&form) {
            Ok(request) => {
                let done = move |reply: Value| {
                    let saved = reply
                        .get("saved_run")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    let head = saved_block(&reply);
                    match (s.show)(&reply.to_string(), &RunOrigin::Live) {
                        Ok(mut blocks) => {
                            blocks.insert(0, head);
                            result.set(Some((saved, blocks)));
                        }
                        Err(e) => error.set(Some(e)),
                    }
                };
                lab.start(id, request, error, Box::new(done));
            }
            Err(e) => error.set(Some(e)),
        }
    });
    // Without a GPU, the newest saved GPU run of this kind from the run history, until a job
    // here gives a result of its own.
    let saved_run = LocalResource::new(move || async move {
        let newest = lab
            .history
            .await
            .and_then(|h| newest_gpu_run(&h, s.kind).cloned())?;
        let id = newest.id.clone();
        saved_gpu_run(s, newest)
            .await
            .map(|blocks| (Some(id), blocks))
    });
    Effect::new(move |_| {
        // A job run meanwhile keeps its own result.
        if let Some(Some(saved)) = saved_run.get() {
            if result.with_untracked(Option::is_none) {
                result.set(Some(saved));
            }
        }
    });
    // The form, drawn once it is on the page; then kept in step with the machine check, the
    // peer's status and the running job.
    Effect::new(move |_| {
        let (gpu, running) = (lab.gpu(), lab.running.get());
        let peer_note = (!lab.peer_ready()).then(|| lab.peer_note());
        let mine = lab.section.get() == Some(id);
        let Some(el) = form_slot.get() else {
            return;
        };
        // Drawn once, and once more when a GPU section learns there is no GPU.
        let needed = s.gpu_only.is_some() && gpu == Some(false);
        if form_listeners.with_value(|f| f.as_ref().map(|(n, _)| *n)) != Some(needed) {
            match dom::form(lab, s, gpu, &el, run.clone()) {
                Ok(l) => form_listeners.set_value(Some((needed, l))),
                Err(e) => error.set(Some(bridge::js_text(&e))),
            }
        }
        dom::form_state(s, gpu, peer_note.as_deref(), running, mine);
    });
    Effect::new(move |_| {
        let gpu = lab.gpu() == Some(true);
        let Some(el) = slot.get() else {
            return;
        };
        let target = Target {
            lab,
            section: id,
            error,
            gpu,
        };
        let drawn = result.with(|r| {
            r.as_ref()
                .map(|(saved, blocks)| dom::render(&target, &el, saved.as_deref(), blocks))
        });
        match drawn {
            Some(Ok(l)) => listeners.set_value(l),
            Some(Err(e)) => error.set(Some(format!(
                "cannot show the result: {}",
                bridge::js_text(&e)
            ))),
            None => {}
        }
    });
    view! {
        <section id=format!("lab-{id}") class="card lab">
            <h3>{s.title}</h3>
            <p>{s.intro}</p>
            <div class="lab-form" node_ref=form_slot></div>
            {lab.status(id)}
            {move || error.get().map(|e| view! { <p class="error lab-error">{e}</p> })}
            <div class="lab-result-slot" node_ref=slot></div>
        </section>
    }
}
