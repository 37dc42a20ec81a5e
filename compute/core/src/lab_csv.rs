//! A saved lab run as CSV: what its Act III section shows, row by row, with PyTorch's columns
//! and rows where the section shows them, and on every row the run's device, date, batch,
//! run count and origin.

use crate::bench::kernels::{TORCH_COMPILE, TORCH_EAGER};
use crate::lab::{LabReport, LabRun};

/// The columns every lab CSV ends with: where and when the run was measured.
pub const LAB_CSV_ORIGIN: [&str; 7] = [
    "device",
    "run_id",
    "date",
    "machine",
    "compute_capability",
    "driver",
    "build",
];

/// `run` as CSV: one row per measurement (a kernel timing with PyTorch eager's,
/// `torch.compile`'s and Triton's GB/s beside it, a ladder row or PyTorch cuDNN's, a latency
/// row, a launch of the step, a GEMM point), with a header naming the columns; each row ends
/// with [`LAB_CSV_ORIGIN`].
pub fn lab_run_csv(run: &LabRun) -> String {
    write(run).unwrap_or_else(|e| format!("# the CSV could not be written: {e}\n"))
}

/// A number, or an empty cell when it is not one.
fn n(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

/// An optional number, or an empty cell.
fn o(v: Option<f64>) -> String {
    v.map_or(String::new(), n)
}

/// The header and rows of `report`, before the origin's columns.
fn table(report: &LabReport) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut rows = Vec::new();
    match report {
        LabReport::Kernels { report } => {
            let head = vec![
                "op",
                "dtype",
                "rows",
                "cols",
                "ms_p50",
                "ms_p90",
                "ms_p99",
                "gbps",
                "of_copy",
                "eager_gbps",
                "torch_compile_gbps",
                "triton_gbps",
                "triton_check",
            ];
            for r in &report.ours.bench {
                let triton = report.triton_cell(r);
                let check = match &triton {
                    crate::bench::kernels::TritonCell::CheckFailed { .. } => "failed",
                    crate::bench::kernels::TritonCell::Timed(_) => "passed",
                    crate::bench::kernels::TritonCell::Absent => "",
                };
                rows.push(vec![
                    r.op.clone(),
                    r.dtype.clone(),
                    r.shape[0].to_string(),
                    r.shape[1].to_string(),
                    n(r.ms_p50),
                    n(r.ms_p90),
                    n(r.ms_p99),
                    n(r.gbps),
                    n(r.of_copy),
                    o(report.peer_gbps(TORCH_EAGER, r)),
                    o(report.peer_gbps(TORCH_COMPILE, r)),
                    o(triton.gbps()),
                    check.to_string(),
                ]);
            }
            (head, rows)
        }
        LabReport::Ladder { report } => {
            let head = vec![
                "layer",
                "implementation",
                "source",
                "batch",
                "reps",
                "ms_p50",
                "tflops",
                "gbps",
                "speedup_vs_rung1",
            ];
            for r in &report.ours.rows {
                rows.push(vec![
                    r.layer.clone(),
                    r.implementation.clone(),
                    "ours".into(),
                    r.batch.to_string(),
                    r.reps.to_string(),
                    n(r.ms_p50),
                    n(r.tflops),
                    n(r.gbps),
                    o(r.speedup_vs_rung1),
                ]);
            }
            for p in &report.peers {
                rows.push(vec![
                    p.layer().map(|l| l.name().to_string()).unwrap_or_default(),
                    p.label(),
                    "pytorch".into(),
                    p.n.to_string(),
                    String::new(),
                    n(p.ms),
                    o(p.tflops()),
                    String::new(),
                    String::new(),
                ]);
            }
            (head, rows)
        }
        LabReport::Inference { report } => {
            let head = vec![
                "implementation",
                "source",
                "activation",
                "batch",
                "reps",
                "ms_p50",
                "ms_p90",
                "ms_p99",
                "images_per_s",
                "dataset",
            ];
            let ours = report.variants.iter().flat_map(|v| v.rows.iter());
            for (source, r) in ours
                .map(|r| ("ours", r))
                .chain(report.peers.iter().map(|r| ("pytorch", r)))
            {
                rows.push(vec![
                    r.implementation.clone(),
                    source.into(),
                    r.activation.to_string(),
                    r.batch.to_string(),
                    r.reps.to_string(),
                    n(r.p50_ms),
                    n(r.p90_ms),
                    n(r.p99_ms),
                    n(r.images_per_s),
                    report.dataset.clone(),
                ]);
            }
            (head, rows)
        }
        LabReport::Anatomy { report } => {
            let head = vec![
                "precision",
                "index",
                "name",
                "phase",
                "start_ms",
                "ms",
                "batch",
                "steps",
                "dataset",
            ];
            for c in &report.contestants {
                for (i, l) in c.launches.iter().enumerate() {
                    rows.push(vec![
                        c.precision.as_str().to_string(),
                        i.to_string(),
                        l.name.clone(),
                        l.phase.clone(),
                        n(l.start_ms),
                        n(l.ms),
                        report.batch.to_string(),
                        report.steps.to_string(),
                        report.dataset.clone(),
                    ]);
                }
            }
            (head, rows)
        }
        LabReport::Crossover { report } => {
            let head = vec![
                "precision",
                "gemm",
                "m",
                "n",
                "k",
                "reps",
                "ms_p50",
                "tflops",
                "speedup_vs_fp32",
                "speedup_vs_bf16",
                "regime",
                "check_ok",
            ];
            for p in &report.points {
                rows.push(vec![
                    p.precision.as_str().to_string(),
                    p.label.clone().unwrap_or_else(|| "square".into()),
                    p.shape.m.to_string(),
                    p.shape.n.to_string(),
                    p.shape.k.to_string(),
                    p.reps.to_string(),
                    n(p.ms_p50),
                    n(p.tflops),
                    o(p.speedup_vs_fp32),
                    o(p.speedup_vs_bf16),
                    p.regime.as_str().to_string(),
                    p.check.ok.to_string(),
                ]);
            }
            (head, rows)
        }
    }
}

fn write(run: &LabRun) -> Result<String, csv::Error> {
    let origin = run.origin();
    let context = [
        run.report.device(),
        run.id.clone(),
        crate::format::utc_date_time(run.saved_at),
        origin
            .machine
            .as_ref()
            .map(|m| m.host.clone())
            .unwrap_or_default(),
        origin.compute_capability.clone().unwrap_or_default(),
        origin.driver.clone().unwrap_or_default(),
        origin.build.as_ref().map(|b| b.words()).unwrap_or_default(),
    ];
    let (mut head, rows) = table(&run.report);
    head.extend(LAB_CSV_ORIGIN);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&head)?;
    for mut row in rows {
        row.extend(context.iter().cloned());
        w.write_record(&row)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed H200 runs (issue 37's fixture), read as the store reads them.
    fn fixture(name: &str) -> LabRun {
        let path = format!(
            "{}/../tests/data/data-home-h200-2026-11-28/lab-runs/{name}.json.gz",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn read(csv: &str) -> (Vec<String>, Vec<Vec<String>>) {
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let head = r
            .headers()
            .map(|h| h.iter().map(str::to_string).collect())
            .unwrap_or_default();
        let rows = r
            .records()
            .map(|x| {
                x.map(|x| x.iter().map(str::to_string).collect())
                    .unwrap_or_default()
            })
            .collect();
        (head, rows)
    }

    fn col(head: &[String], name: &str) -> usize {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {head:?}"))
    }

    /// Regression (issue 37): lab CSVs carried no device, date or batch.
    #[test]
    fn every_lab_csv_names_its_device_and_date_on_every_row() {
        for name in [
            "lab-20261128-130148-939-012s",
            "lab-20261128-130225-104-02p9",
            "lab-20261128-130249-508-03vn",
            "lab-20261128-130249-665-04vs",
        ] {
            let run = fixture(name);
            let (head, rows) = read(&lab_run_csv(&run));
            assert!(!rows.is_empty(), "{name}");
            let (d, t) = (col(&head, "device"), col(&head, "date"));
            for r in &rows {
                assert_eq!(r[d], "NVIDIA H200 (sm_90)", "{name}");
                assert!(r[t].starts_with("2026-11-28 "), "{name}: {}", r[t]);
                assert_eq!(r[col(&head, "compute_capability")], "9.0", "{name}");
            }
            if run.report.kind() != "kernels" {
                let b = col(&head, "batch");
                assert!(
                    rows.iter()
                        .all(|r| r[b].parse::<usize>().is_ok_and(|b| b > 0)),
                    "{name}"
                );
            }
        }
    }

    /// Regression (issue 37): the kernel bench CSV had no eager, torch.compile or Triton
    /// columns.
    #[test]
    fn the_kernel_bench_csv_has_pytorchs_columns() {
        let run = fixture("lab-20261128-130148-939-012s");
        let (head, rows) = read(&lab_run_csv(&run));
        let (e, c) = (col(&head, "eager_gbps"), col(&head, "torch_compile_gbps"));
        let tr = col(&head, "triton_gbps");
        assert!(
            rows.iter().any(|r| r[e].parse::<f64>().is_ok()),
            "no eager value"
        );
        assert!(
            rows.iter().any(|r| r[c].parse::<f64>().is_ok()),
            "no compile value"
        );
        assert!(
            rows.iter().any(|r| r[tr].parse::<f64>().is_ok()),
            "no Triton value"
        );
    }

    /// Regression (issue 37): the ladder CSV dropped the 16 PyTorch cuDNN rows.
    #[test]
    fn the_ladder_csv_has_the_pytorch_cudnn_rows() {
        let run = fixture("lab-20261128-130225-104-02p9");
        let LabReport::Ladder { report } = &run.report else {
            panic!("not a ladder run");
        };
        let (head, rows) = read(&lab_run_csv(&run));
        let s = col(&head, "source");
        let peers: Vec<_> = rows.iter().filter(|r| r[s] == "pytorch").collect();
        assert_eq!(peers.len(), report.peers.len());
        assert_eq!(peers.len(), 16);
        let imp = col(&head, "implementation");
        assert!(peers.iter().all(|r| r[imp].starts_with("pytorch_cudnn_")));
        assert_eq!(rows.len(), report.ours.rows.len() + 16);
    }
}
