//! The verdict's results grouped by where they were made and how: one group per origin
//! (machine, backend, device) and configuration, each with its machine line, so that a CPU
//! run here and H200 runs from another machine are never read as one.

use serde::{Deserialize, Serialize};

use crate::format::{escape_html, percent, utc_date_time};
use crate::origin::Here;
use crate::runs::RunSummary;
use crate::speedup_basis::Basis;

/// The runs of one origin and configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OriginGroup {
    /// Where they ran ([`Origin::machine_line`](crate::origin::Origin::machine_line) of the
    /// newest): `This machine: …` only when it is this one.
    pub machine_line: String,
    /// Whether they ran on this machine ([`Origin::is_here`](crate::origin::Origin::is_here)).
    pub here: bool,
    /// Their configuration in one line ([`RunConfig::summary`](crate::runs::RunConfig::summary)).
    pub config: String,
    /// The runs, newest first.
    pub runs: Vec<RunSummary>,
    /// The FP16-over-FP32 speed-up across them, when they have one.
    pub basis: Option<Basis>,
}

/// `history` (newest first) in groups of the same origin and configuration
/// ([`RunSummary::same_setup`]), the group of the newest run first; `here` decides which
/// group is this machine's.
pub fn group_runs(history: &[RunSummary], here: &Here) -> Vec<OriginGroup> {
    let mut groups: Vec<Vec<&RunSummary>> = Vec::new();
    for run in history {
        match groups.iter_mut().find(|g| g[0].same_setup(run)) {
            Some(g) => g.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let newest = g[0];
            let runs: Vec<RunSummary> = g.into_iter().cloned().collect();
            OriginGroup {
                machine_line: newest.origin.machine_line(here),
                here: newest.origin.is_here(here),
                config: newest.config().summary(),
                basis: Basis::of(newest, &runs),
                runs,
            }
        })
        .collect()
}

/// The groups as HTML: a section per group with its machine line, configuration and runs.
pub fn groups_html(groups: &[OriginGroup]) -> String {
    let e = escape_html;
    let mut h = String::from("<h2>Results by machine and configuration</h2>\n");
    for g in groups {
        h.push_str(&format!(
            "<section class=\"origin-group\" data-here=\"{}\">\n<h3 class=\"machine-line\">{}</h3>\n\
<p class=\"config\">{} · {} run{}</p>\n",
            g.here,
            e(&g.machine_line),
            e(&g.config),
            g.runs.len(),
            if g.runs.len() == 1 { "" } else { "s" }
        ));
        if let Some(b) = &g.basis {
            h.push_str(&format!(
                "<p class=\"basis\">{}</p>\n",
                e(&crate::speedup_basis::basis_line(b))
            ));
        }
        h.push_str(
            "<table>\n<thead><tr><th>Date</th><th>Run</th><th>Test accuracy</th>\
<th>Speed-up fp16 vs fp32</th></tr></thead>\n<tbody>\n",
        );
        for r in &g.runs {
            let acc: Vec<String> = r
                .results
                .iter()
                .map(|x| format!("{} {}", x.precision, percent(x.test_accuracy)))
                .collect();
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                e(&utc_date_time(r.saved_at)),
                e(&r.id),
                e(&acc.join(", ")),
                r.speedup_fp16_vs_fp32
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "—".into())
            ));
        }
        h.push_str("</tbody>\n</table>\n</section>\n");
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::{BuildInfo, MachineId, Stamp};
    use crate::runs::examples::report;

    fn stamp(id: &str, host: &str) -> Stamp {
        Stamp {
            machine: MachineId {
                host: host.into(),
                id: id.into(),
            },
            build: BuildInfo {
                version: "0.1.0".into(),
                commit: None,
            },
            driver: None,
        }
    }

    /// Regression (issue 37): the verdict's export listed "The machine: Xeon 2 cores, GPU
    /// none found" above the H200's results, as if made here.
    #[test]
    fn a_cpu_run_here_and_h200_runs_from_elsewhere_are_separate_groups() {
        let here = Here {
            machine: Some(MachineId {
                host: "build".into(),
                id: "here".into(),
            }),
            gpus: Vec::new(),
        };
        let mut cpu = report("Xeon", 200.0, 100.0);
        cpu.stamp = Some(stamp("here", "build"));
        let mut h200 = report("NVIDIA H200 (sm_90)", 20.0, 10.0);
        h200.backend = "cuda".into();
        let history = vec![
            RunSummary::of("c", 1_795_900_000, &cpu),
            RunSummary::of("b", 1_795_871_051, &h200),
            RunSummary::of("a", 1_795_870_863, &h200),
        ];
        let groups = group_runs(&history, &here);
        assert_eq!(groups.len(), 2);
        assert!(groups[0].here && groups[0].machine_line.starts_with("This machine: Xeon"));
        assert!(!groups[1].here);
        assert!(
            groups[1]
                .machine_line
                .starts_with("Another machine: NVIDIA H200 (compute capability 9.0)"),
            "{}",
            groups[1].machine_line
        );
        assert!(groups[1].machine_line.contains("2026-11-28"));
        assert_eq!(groups[1].runs.len(), 2);
        assert_eq!(groups[1].basis.as_ref().map(|b| b.runs.len()), Some(2));
        let html = groups_html(&groups);
        assert_eq!(html.matches("<section class=\"origin-group\"").count(), 2);
        assert!(html.contains("data-here=\"false\""));
        assert!(html.contains("1,024 train / 500 test images"), "{html}");
    }
}
