//! "A training step's anatomy": one step of the lab CNN replayed with every launch timed on its
//! own, per precision (`StepAnatomyRequest`): a timeline per contestant, a stacked bar per
//! precision (one segment per kernel role, the core's [`StepAnatomy::roles`]), the table of
//! each role's time per precision, the kernels' sum against the graph-replayed step, and the
//! Chrome trace ([`StepAnatomy::trace_json`]) to open in Perfetto.

use std::rc::Rc;

use plotters::style::RGBColor;
use showdown_core::bench::anatomy::{ContestantAnatomy, KernelRole, RoleChange, StepAnatomy};
use showdown_core::lab::{LabReport, ProfileTarget, RunOrigin};
use showdown_core::protocol::{Request, StepAnatomyRequest};
use showdown_core::types::Precision;

use super::section::{cell, report_of, Block, Cell, Control, Form, Row, Section, Table};
use crate::charts::{css_color, lanes, Lanes, Segment, COLORS, REFERENCE_GREY, YELLOW};

const PRECISIONS: [&str; 4] = ["fp32", "fp16", "tf32", "bf16"];

/// The section.
pub static SECTION: Section = Section {
    id: "anatomy",
    kind: "anatomy",
    title: "A training step's anatomy",
    intro: "One training step of the lab CNN, replayed with every launch timed on its own (CUPTI's kernel records on a GPU \
        where libcupti is found, else CUDA events around each launch; the host clock around each primitive on the CPU), per precision: which kernels FP16 made faster, which stayed the \
        same, and how much of the step is not kernel time at all.",
    gpu_only: None,
    controls: &[
        Control::Checks("anatomy-precision", &PRECISIONS, &["fp32", "fp16"], &["tf32", "bf16"]),
        Control::Count("anatomy-batch", "batch", "128"),
        Control::Count("anatomy-steps", "steps", "20"),
    ],
    request,
    show,
};

fn request(f: &Form) -> Result<Request, String> {
    let precisions = f
        .checked("anatomy-precision", "precision")?
        .into_iter()
        .filter_map(|n| Precision::ALL.into_iter().find(|p| p.as_str() == n))
        .collect();
    Ok(StepAnatomyRequest {
        precisions,
        batch: f.count("anatomy-batch", "batch")?,
        steps: f.count("anatomy-steps", "steps")?,
        ..StepAnatomyRequest::default()
    }
    .into())
}

/// A phase's colour: forward sky blue, backward orange, optimizer bluish green.
fn phase_color(phase: &str) -> RGBColor {
    match phase {
        "forward" => COLORS[5],
        "backward" => COLORS[4],
        "optimizer" => COLORS[2],
        _ => REFERENCE_GREY,
    }
}

/// Role `i`'s colour, the same in every precision: Okabe–Ito's hues in turn, lighter on each
/// round.
fn role_color(i: usize) -> RGBColor {
    let base = [
        COLORS[0], COLORS[4], COLORS[2], COLORS[1], COLORS[5], COLORS[3], YELLOW,
    ];
    let c = base[i % base.len()];
    let t = [0.0, 0.45, 0.7][(i / base.len()) % 3];
    let mix = |v: u8| (f64::from(v) + (255.0 - f64::from(v)) * t).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

fn us(ms: f64) -> String {
    format!("{:.1} µs", ms * 1e3)
}

/// The kernels' sum against the step, launched and graph-replayed, in one sentence.
fn gap_sentence(c: &ContestantAnatomy) -> String {
    let head = format!(
        "{}: {} launches whose kernels add up to {:.3} ms",
        c.precision,
        c.launches.len(),
        c.sum_ms
    );
    let launched = c.launched_step_ms;
    let pct = |part: f64, whole: f64| {
        if whole > 0.0 {
            100.0 * part / whole
        } else {
            0.0
        }
    };
    match (c.graph_step_ms, c.gap_ms()) {
        (Some(g), Some(gap)) if gap >= 0.0 => format!(
            "{head}; replayed as a CUDA graph the step takes {g:.3} ms, so {gap:.3} ms ({:.0} % of it) is launch overhead and idle time between kernels; launched one at a time with a timer around each it takes {launched:.3} ms.",
            pct(gap, g)
        ),
        (Some(g), Some(gap)) => format!(
            "{head}; replayed as a CUDA graph the step takes {g:.3} ms, {:.3} ms less than the kernels' sum (kernels overlap in the graph, without the per-launch timers); launched one at a time it takes {launched:.3} ms.",
            -gap
        ),
        _ => format!(
            "{head}; launched one at a time the step takes {launched:.3} ms, so {:.3} ms ({:.0} %) is overhead and time between launches (no CUDA graph on this backend).",
            launched - c.sum_ms,
            pct(launched - c.sum_ms, launched)
        ),
    }
}

/// Contestant `i` against the first: the kernels' sum and how many roles changed.
fn change_sentence(a: &StepAnatomy, roles: &[KernelRole], i: usize) -> Option<String> {
    let (first, c) = (a.contestants.first()?, a.contestants.get(i)?);
    let count = |k: RoleChange| roles.iter().filter(|r| r.change(i) == Some(k)).count();
    Some(format!(
        "{} against {}: the kernels take {:.3} ms against {:.3} ms ({:.2}× the time); {} role(s) faster, {} the same (within 10 %), {} slower, {} only in {}, {} only in {}.",
        c.precision,
        first.precision,
        c.sum_ms,
        first.sum_ms,
        if first.sum_ms > 0.0 { c.sum_ms / first.sum_ms } else { 0.0 },
        count(RoleChange::Faster),
        count(RoleChange::Same),
        count(RoleChange::Slower),
        count(RoleChange::Added),
        c.precision,
        count(RoleChange::Gone),
        first.precision,
    ))
}

/// Each contestant's graph-replayed step, as a mark on its lane.
fn graph_marks(a: &StepAnatomy) -> Vec<(usize, f64, String)> {
    let mut marks = Vec::new();
    for (i, c) in a.contestants.iter().enumerate() {
        if let Some(g) = c.graph_step_ms {
            marks.push((i, g, format!("{} step as a CUDA graph", c.precision)));
        }
    }
    marks
}

fn lanes_chart(
    id: &'static str,
    title: &'static str,
    names: Vec<String>,
    legend: Vec<(String, RGBColor)>,
    segments: Vec<Segment>,
    marks: Vec<(usize, f64, String)>,
) -> Block {
    Block::Chart(
        id,
        Rc::new(move |canvas| {
            lanes(
                canvas,
                &Lanes {
                    title,
                    unit: "ms",
                    lanes: &names,
                    legend: &legend,
                    segments: &segments,
                    marks: &marks,
                },
            )
        }),
    )
}

/// One lane per contestant, each launch at its start, coloured by phase.
fn timeline(a: &StepAnatomy, names: Vec<String>) -> Block {
    let mut legend = Vec::new();
    for p in ["forward", "backward", "optimizer"] {
        legend.push((p.to_string(), phase_color(p)));
    }
    let mut segments = Vec::new();
    for (lane, c) in a.contestants.iter().enumerate() {
        for l in &c.launches {
            segments.push(Segment {
                lane,
                x0: l.start_ms,
                x1: l.start_ms + l.ms,
                color: phase_color(&l.phase),
                label: l.name.clone(),
                title: format!(
                    "{} ({}, {}): {} at {:.3} ms",
                    l.name,
                    c.precision,
                    l.phase,
                    us(l.ms),
                    l.start_ms
                ),
            });
        }
    }
    lanes_chart(
        "anatomy-timeline",
        "Timeline: every launch of one step at its start (medians; the black mark ends the graph-replayed step)",
        names,
        legend,
        segments,
        graph_marks(a),
    )
}

/// One stacked bar per contestant, a segment per kernel role (the same colour in each).
fn stacked_bars(a: &StepAnatomy, roles: &[KernelRole], names: Vec<String>) -> Block {
    let mut segments = Vec::new();
    for (lane, c) in a.contestants.iter().enumerate() {
        let mut at = 0.0;
        for (i, r) in roles.iter().enumerate() {
            let Some(ms) = r.ms.get(lane).copied().flatten() else {
                continue;
            };
            segments.push(Segment {
                lane,
                x0: at,
                x1: at + ms,
                color: role_color(i),
                label: r.role.clone(),
                title: format!("{} ({}): {}", r.role, c.precision, us(ms)),
            });
            at += ms;
        }
    }
    lanes_chart(
        "anatomy-bars",
        "The step's kernels stacked by role (same colour, same role; the black mark: the graph-replayed step)",
        names,
        Vec::new(),
        segments,
        graph_marks(a),
    )
}

/// Each role's µs per contestant and its time over the first contestant's; then the totals.
/// One of a contestant's step times (the kernels' sum, the launched step, the graph step).
type StepTime = fn(&ContestantAnatomy) -> Option<f64>;

fn role_table(a: &StepAnatomy, roles: &[KernelRole]) -> Table {
    let first = a
        .contestants
        .first()
        .map_or(String::new(), |c| c.precision.to_string());
    let mut head = vec!["kernel role".to_string(), "phase".to_string()];
    for (i, c) in a.contestants.iter().enumerate() {
        head.push(format!("{} µs", c.precision));
        if i > 0 {
            head.push(format!("{} ÷ {first}", c.precision));
        }
    }
    let us_cell = |v: Option<f64>| cell("num", v.map_or("–".into(), |m| format!("{:.1}", m * 1e3)));
    let mut rows: Vec<Row> = Vec::new();
    for (ri, r) in roles.iter().enumerate() {
        let mut cells = vec![
            Cell {
                text: r.role.clone(),
                class: "",
                swatch: Some(css_color(role_color(ri))),
            },
            cell("", r.phase.clone()),
        ];
        for i in 0..a.contestants.len() {
            cells.push(us_cell(r.ms.get(i).copied().flatten()));
            if i > 0 {
                let change = r.change(i);
                let class = match change {
                    Some(RoleChange::Faster) => "num change faster",
                    Some(RoleChange::Same) => "num change same",
                    Some(RoleChange::Slower) => "num change slower",
                    Some(RoleChange::Added) => "num change added",
                    Some(RoleChange::Gone) => "num change gone",
                    Some(RoleChange::TooShort) => "num change too-short",
                    None => "num",
                };
                let word = change.map_or("–", RoleChange::word);
                let text = match r.ratio.get(i).copied().flatten() {
                    Some(x) => format!("{x:.2}× ({word})"),
                    None => word.to_string(),
                };
                cells.push(cell(class, text));
            }
        }
        rows.push(Row {
            key: r.role.clone(),
            cells,
            ..Row::default()
        });
    }
    let totals: [(&str, StepTime); 3] = [
        ("the kernels' sum", |c| Some(c.sum_ms)),
        ("the step launched one at a time", |c| {
            Some(c.launched_step_ms)
        }),
        ("the step replayed as a CUDA graph", |c| c.graph_step_ms),
    ];
    for (label, f) in totals {
        let mut cells = vec![cell("", label), cell("", "")];
        let base = a.contestants.first().and_then(f);
        for (i, c) in a.contestants.iter().enumerate() {
            let v = f(c);
            cells.push(us_cell(v));
            if i > 0 {
                let x = v.zip(base).filter(|(_, b)| *b > 0.0).map(|(v, b)| v / b);
                cells.push(cell("num", x.map_or("–".into(), |x| format!("{x:.2}×"))));
            }
        }
        rows.push(Row {
            class: "total".into(),
            key: label.into(),
            cells,
            profile: None,
        });
    }
    Table {
        id: "anatomy-table",
        head,
        rows,
        ..Table::default()
    }
}

fn show(reply: &str, origin: &RunOrigin) -> Result<Vec<Block>, String> {
    let LabReport::Anatomy { report: a } = report_of("anatomy", reply)? else {
        return Err("the reply is not a step anatomy".into());
    };
    let roles = a.roles();
    let mut names = Vec::new();
    let mut sentences = Vec::new();
    let mut profiles = Vec::new();
    for (i, c) in a.contestants.iter().enumerate() {
        names.push(c.precision.to_string());
        sentences.push(gap_sentence(c));
        let target = ProfileTarget::Step {
            precision: c.precision,
            batch: a.batch,
        };
        profiles.push((format!("Profile this {} step", c.precision), target));
        if i > 0 {
            sentences.extend(change_sentence(&a, &roles, i));
        }
    }
    let date: String = String::from(js_sys::Date::new_0().to_iso_string())
        .chars()
        .take(10)
        .collect();
    let mut blocks = vec![
        Block::Para(
            "measured-on",
            format!(
                "{} ({} backend): {}, batch {}, medians of {} step(s); each launch timed with {}.",
                origin.measured_on(&a.device),
                a.backend,
                a.dataset,
                a.batch,
                a.steps,
                a.clock
            ),
        ),
        Block::Para("anatomy-clock", a.clock_statement()),
        Block::List("", "lab-notes", a.notes.clone()),
        Block::List("anatomy-gap", "", sentences),
        timeline(&a, names.clone()),
        stacked_bars(&a, &roles, names),
        Block::Table(role_table(&a, &roles)),
        Block::Download(
            "anatomy-export",
            "Export trace (Perfetto)",
            format!("step-anatomy-{date}.json"),
            "application/json",
            a.trace_json().into(),
        ),
    ];
    if a.backend == "cuda" {
        blocks.push(Block::Profiles(profiles));
    }
    Ok(blocks)
}
