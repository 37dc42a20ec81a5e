//! What the live lab's sections share, below both their layout ([`super::lab`]) and their
//! drawing ([`super::dom`]): the machine the service runs on (the doctor), the PyTorch peer's
//! status, the one job that runs at a time (the service runs one) with its progress, notes and
//! live GPU readings ([`Lab`]); and what a section is, as data ([`Section`]: its form's
//! [`Control`]s, how they make a request, how a reply becomes [`Block`]s).

use std::rc::Rc;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use showdown_core::lab::{
    LabProgress, LabReport, LabRunSummary, PeerStatus, ProfileTarget, RunOrigin,
};
use showdown_core::protocol::{
    ApiError, Event, LabRunsRequest, Op, PeerStatusRequest, ProfileOutcome, Request,
};
use showdown_core::types::{DoctorReport, GpuInfo, TelemetrySample};
use showdown_core::ErrorKind;
use web_sys::HtmlCanvasElement;

use crate::bridge;
use crate::charts::Hit;
use crate::loading::{cancel_job, failure, Acting};
use crate::pages::telemetry::TelemetryStrip;

/// The `sessionStorage` key under which Act IV finds the import to open.
pub const OPEN_IMPORT_KEY: &str = "showdown.open_import";

/// A request of any operation with its reply left as JSON: every lab job and call goes through
/// this one instantiation of the bridge's generic functions, and the replies are read by
/// [`call`] and [`report_of`].
#[derive(Serialize, Deserialize)]
#[serde(transparent)]
struct Untyped(Request);

impl From<Untyped> for Request {
    fn from(u: Untyped) -> Request {
        u.0
    }
}

impl Op for Untyped {
    type Reply = Value;
    const NAME: &'static str = "lab";
}

/// Sends `op` to the compute service; its reply, typed by the request.
pub async fn call<O: Op>(op: O) -> Result<O::Reply, ApiError> {
    let v = bridge::call(Untyped(op.into())).await?;
    crate::bridge::from_json_value(v)
        .map_err(|e| bridge::runtime(format!("the reply to `{}` is not readable: {e}", O::NAME)))
}

/// A lab job's report (`kind`: `kernels`, `ladder`, `inference`, `anatomy`) from its reply or
/// a committed file, read as the run history reads [`LabReport`]s (one compiled reader for
/// both).
pub fn report_of(kind: &str, report: &str) -> Result<LabReport, String> {
    let tagged = format!("{{\"kind\":\"{kind}\",\"report\":{report}}}");
    serde_json::from_str(&tagged).map_err(|e| format!("the {kind} report is not readable: {e}"))
}

/// An error as one line in plain words: a cancelled job says so, anything else names the
/// job in words (`step anatomy`, not `step_anatomy`) and says why without class names.
fn describe(name: &str, e: &ApiError) -> String {
    if e.code == ErrorKind::Cancelled {
        "Cancelled: the job stopped before its result.".into()
    } else {
        format!(
            "The {} failed: {}",
            name.replace('_', " "),
            showdown_core::error::plain_words(e.code, &e.message)
        )
    }
}

/// `v` as `1.23×`, or a dash.
pub fn times(v: Option<f64>) -> String {
    v.filter(|r| r.is_finite() && *r > 0.0)
        .map_or("–".to_string(), |r| format!("{r:.2}×"))
}

/// `v` with `digits` decimals, or a dash.
pub fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".to_string(), |v| format!("{v:.digits$}"))
}

/// The state the lab's sections share.
#[derive(Clone, Copy)]
pub struct Lab {
    /// The doctor's report, or why there is none; `None` while it is asked.
    pub doctor: LocalResource<Result<DoctorReport, String>>,
    /// The PyTorch peer's status, or why there is none; `None` while it is asked (read again
    /// when the interpreter was set).
    pub peer: LocalResource<Result<PeerStatus, String>>,
    /// Whether a job started here runs.
    pub running: RwSignal<bool>,
    /// The section of the latest job: its progress and notes show there.
    pub section: RwSignal<Option<&'static str>>,
    /// The latest stage, in words.
    pub progress: RwSignal<String>,
    /// The job's notes.
    pub notes: RwSignal<Vec<String>>,
    /// The latest GPU reading while the job runs.
    pub sample: RwSignal<Option<TelemetrySample>>,
    /// On a machine without a GPU, the run history's lab runs (the sections show the newest
    /// saved GPU run of their kind); `None` until read (read once the doctor answered), and
    /// `Some(None)` where there is a GPU.
    pub history: LocalResource<Option<Vec<LabRunSummary>>>,
    /// Cancels the running job (each section's Cancel button).
    pub cancel: Acting<(), bool>,
}

impl Lab {
    /// The lab's state, asking the service for the doctor's report and the peer's status.
    pub fn new() -> Self {
        let doctor = LocalResource::new(|| async { bridge::doctor().await.map_err(|e| e.message) });
        let history = LocalResource::new(move || async move {
            // Act III left before this ran (the walk's keys move on within 100 ms) disposed the
            // doctor's resource with the page: awaiting it then would panic.
            if doctor.is_disposed() {
                return None;
            }
            let no_gpu = matches!(doctor.await, Ok(d) if d.auto_backend != "cuda");
            // Unreadable history: the sections simply show no saved run.
            no_gpu.then_some(())?;
            Some(
                call(LabRunsRequest {})
                    .await
                    .map(|l| l.runs)
                    .unwrap_or_default(),
            )
        });
        let lab = Lab {
            doctor,
            peer: LocalResource::new(|| async {
                call(PeerStatusRequest {}).await.map_err(|e| e.message)
            }),
            running: RwSignal::new(false),
            section: RwSignal::new(None),
            progress: RwSignal::new(String::new()),
            notes: RwSignal::new(Vec::new()),
            sample: RwSignal::new(None),
            history,
            cancel: cancel_job(),
        };
        // A failed cancel says so among the job's notes.
        Effect::new(move |_| {
            if let Some(e) = failure(lab.cancel) {
                lab.notes
                    .update(|n| n.push(format!("cancel failed: {}", e.message)));
            }
        });
        lab
    }

    /// A lab that asks the service nothing (its doctor, peer and history never answer): what
    /// a saved run is drawn with.
    pub fn quiet() -> Self {
        Lab {
            doctor: LocalResource::new(std::future::pending),
            peer: LocalResource::new(std::future::pending),
            running: RwSignal::new(false),
            section: RwSignal::new(None),
            progress: RwSignal::new(String::new()),
            notes: RwSignal::new(Vec::new()),
            sample: RwSignal::new(None),
            history: LocalResource::new(std::future::pending),
            cancel: cancel_job(),
        }
    }

    /// Whether the service has a usable GPU (the doctor's `auto` backend is CUDA); `None` while
    /// the doctor has not answered or could not.
    pub fn gpu(&self) -> Option<bool> {
        self.doctor.with(|d| match d {
            Some(Ok(d)) => Some(d.auto_backend == "cuda"),
            _ => None,
        })
    }

    /// The service's first GPU, as the doctor lists it.
    pub fn gpu_info(&self) -> Option<GpuInfo> {
        self.doctor.with(|d| match d {
            Some(Ok(d)) => d.gpus.first().cloned(),
            _ => None,
        })
    }

    /// Whether the lab jobs can run PyTorch's rows.
    pub fn peer_ready(&self) -> bool {
        self.peer
            .with(|p| matches!(p, Some(Ok(PeerStatus { ready: true, .. }))))
    }

    /// Starts `request` as `section`'s job (unless one runs): its progress, notes and GPU
    /// readings go to the lab's signals, its reply to `done`, its error to `error`.
    pub fn start(
        self,
        section: &'static str,
        request: Request,
        error: RwSignal<Option<String>>,
        done: Box<dyn FnOnce(Value)>,
    ) {
        if self.running.get_untracked() {
            error.set(Some(
                "Another job of the lab is running: wait for it, or cancel it.".into(),
            ));
            return;
        }
        let lab = self;
        let name = request.name();
        lab.running.set(true);
        lab.section.set(Some(section));
        lab.progress.set("starting…".into());
        lab.notes.set(Vec::new());
        lab.sample.set(None);
        error.set(None);
        let on_event: Box<dyn FnMut(Event)> = Box::new(move |ev| match ev {
            Event::Lab {
                event:
                    LabProgress::Stage {
                        stage, done, total, ..
                    },
            } => lab
                .progress
                .set(format!("{stage} ({done} of {total} done)")),
            Event::Lab {
                event: LabProgress::Note { text, .. },
            } => lab.notes.update(|n| n.push(text)),
            Event::Telemetry { sample } => lab.sample.set(Some(sample)),
            _ => {}
        });
        // A streaming job: its progress, notes and GPU readings arrive while it runs.
        leptos::task::spawn_local(async move {
            let reply = bridge::job(Untyped(request), on_event).await;
            lab.running.set(false);
            lab.sample.set(None);
            match reply {
                Ok(v) => {
                    lab.progress.set("done".into());
                    done(v);
                }
                Err(e) => {
                    lab.progress.set(String::new());
                    error.set(Some(describe(name, &e)));
                }
            }
        });
    }

    /// The progress line (`#lab-progress`), the live GPU readings while the job runs on a GPU
    /// (`#lab-telemetry`, the shared [`TelemetryStrip`]) and the notes of the latest job, in
    /// its section.
    pub fn status(self, section: &'static str) -> impl IntoView {
        move || {
            (self.section.get() == Some(section)).then(|| {
                view! {
                    <div class="lab-status">
                        <p id="lab-progress" class="muted">{move || self.progress.get()}</p>
                        {move || (self.running.get() && self.gpu() == Some(true)).then(|| view! {
                            <TelemetryStrip sample=self.sample id="lab-telemetry"/>
                        })}
                        <p class="lab-notes">{move || self.notes.get().join(" · ")}</p>
                    </div>
                }
            })
        }
    }

    /// What the "with PyTorch" checkbox says beside it: nothing when the peer is ready, else how
    /// to enable it.
    pub fn peer_note(&self) -> String {
        self.peer.with(|p| match p {
            Some(Ok(p)) if p.ready => String::new(),
            Some(Ok(p)) => p.note.clone(),
            Some(Err(e)) => format!("PyTorch status unknown: {e}"),
            None => "checking for PyTorch…".into(),
        })
    }
}

/// Hands a profile's import to Act IV (`sessionStorage`) and goes there; why not, when the
/// reply is not a profile's.
pub fn open_in_act_iv(reply: Value) -> Result<(), String> {
    let outcome = crate::bridge::from_json_value::<ProfileOutcome>(reply)
        .map_err(|e| format!("the profile's reply is not readable: {e}"))?;
    let window = web_sys::window().ok_or("no browser window")?;
    if let Ok(Some(store)) = window.session_storage() {
        let _ = store.set_item(OPEN_IMPORT_KEY, &outcome.import.id);
    }
    window
        .location()
        .set_hash("#/profiling")
        .map_err(|e| bridge::js_text(&e))
}

/// One cell of a [`Table`].
#[derive(Clone, Default)]
pub struct Cell {
    /// Its text.
    pub text: String,
    /// Its class (`num`, `num reference`...).
    pub class: &'static str,
    /// A colour swatch before the text (CSS colour).
    pub swatch: Option<String>,
}

/// A text cell of class `class`.
pub fn cell(class: &'static str, text: impl Into<String>) -> Cell {
    Cell {
        text: text.into(),
        class,
        swatch: None,
    }
}

/// One row of a [`Table`].
#[derive(Clone, Default)]
pub struct Row {
    /// Its class.
    pub class: String,
    /// `data-key`: what the row is (`relu f32`, `rung 3`).
    pub key: String,
    /// Its cells.
    pub cells: Vec<Cell>,
    /// A Profile button at its end.
    pub profile: Option<ProfileTarget>,
}

/// A table of text.
#[derive(Clone, Default)]
pub struct Table {
    /// Its element ID, if any.
    pub id: &'static str,
    /// `data-key`: what the table is (a ladder layer).
    pub key: String,
    /// The caption.
    pub caption: String,
    /// The column heads.
    pub head: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
}

/// Draws a chart on its canvas; the hover titles.
pub type Draw = Rc<dyn Fn(HtmlCanvasElement) -> Result<Vec<Hit>, String>>;

/// A piece of a section's result.
#[derive(Clone)]
pub enum Block {
    /// A paragraph: class and text.
    Para(&'static str, String),
    /// A list: element ID (or empty), class and items.
    List(&'static str, &'static str, Vec<String>),
    /// A table.
    Table(Table),
    /// A chart: the canvas's ID and how to draw it.
    Chart(&'static str, Draw),
    /// Profile buttons, each with its label (shown where the service has a GPU).
    Profiles(Vec<(String, ProfileTarget)>),
    /// A button that saves a text file: its ID, label, file name, MIME type and text.
    Download(&'static str, &'static str, String, &'static str, Rc<str>),
}

/// A control of a section's form.
pub enum Control {
    /// A number field: ID, label, default.
    Count(&'static str, &'static str, &'static str),
    /// A number field for the GPU rows only (ID, label, default): off, saying so, without a
    /// GPU.
    GpuCount(&'static str, &'static str, &'static str),
    /// A text field: ID, label, default.
    Text(&'static str, &'static str, &'static str),
    /// Checkboxes: class, the names, the ones ticked at first, the ones that need a GPU.
    Checks(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    ),
    /// The "with PyTorch" checkbox.
    Peer,
}

/// A section's form as the user filled it, read from the page when Run is pressed.
pub struct Form {
    /// The section.
    pub section: &'static Section,
    /// Whether the service has a GPU (controls that need one are left out without it).
    pub gpu: bool,
    /// Whether the PyTorch peer is ready.
    pub peer_ready: bool,
}

/// The input with element ID `id`.
pub fn input(id: &str) -> Option<web_sys::HtmlInputElement> {
    use wasm_bindgen::JsCast;
    web_sys::window()?
        .document()?
        .get_element_by_id(id)?
        .dyn_into()
        .ok()
}

impl Form {
    /// Field `id` as a whole number above 0, or a sentence naming `name`.
    pub fn count(&self, id: &str, name: &str) -> Result<usize, String> {
        let text = self.text(id);
        text.trim()
            .parse::<usize>()
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| format!("{name} must be a whole number above 0, not {text:?}"))
    }

    /// Field `id`'s text.
    pub fn text(&self, id: &str) -> String {
        input(id).map(|i| i.value()).unwrap_or_default()
    }

    /// The ticked names of checkboxes `class` (those that need a GPU left out without one),
    /// or a sentence naming `what` when none is.
    pub fn checked(&self, class: &str, what: &str) -> Result<Vec<&'static str>, String> {
        let mut list = Vec::new();
        for c in self.section.controls {
            if let Control::Checks(cl, names, _, gpu_only) = c {
                if *cl != class {
                    continue;
                }
                for n in *names {
                    let on = input(&format!("{cl}-{n}")).is_some_and(|i| i.checked());
                    if on && (self.gpu || !gpu_only.contains(n)) {
                        list.push(*n);
                    }
                }
            }
        }
        if list.is_empty() {
            Err(format!("choose at least one {what}"))
        } else {
            Ok(list)
        }
    }

    /// Whether to run PyTorch's rows (asked for, and the peer ready).
    pub fn peers(&self) -> bool {
        self.peer_ready && input(&format!("{}-peers", self.section.id)).is_some_and(|i| i.checked())
    }
}

/// A section of the lab: its form, its request, its result.
pub struct Section {
    /// Its name: `#<id>-run`, `#<id>-cancel`, `#lab-<id>`, `#<id>-result`.
    pub id: &'static str,
    /// The kind of report it shows ([`LabReport::kind`]).
    pub kind: &'static str,
    /// Its title.
    pub title: &'static str,
    /// What it measures, in words.
    pub intro: &'static str,
    /// What needs a GPU (the GPU-needed sentence's subject), for a section that only runs on
    /// one.
    pub gpu_only: Option<&'static str>,
    /// The form.
    pub controls: &'static [Control],
    /// The request the form makes, or why it makes none.
    pub request: fn(&Form) -> Result<Request, String>,
    /// The reply's JSON (the report's fields, `saved_run` and `save_note`) as blocks, said to
    /// come from where `origin` says (this machine, or a saved run of the history).
    pub show: fn(&str, &RunOrigin) -> Result<Vec<Block>, String>,
}
