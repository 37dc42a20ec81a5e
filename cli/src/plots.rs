//! `showdown bench plot`: SVG charts of a `bench conv` JSON (and optionally a `bench kernels`
//! JSON) for `docs/`: the ladder's speed-up over rung 1, runtimes against cuDNN, a roofline of
//! every GPU kernel against the ceilings measured in the same run, and (when the kernels file
//! holds its peers) each activation/norm kernel's speed-up over PyTorch eager, torch.compile and
//! the hand-written Triton kernels. The files are read into the core's reports
//! (`compute::bench`), and the numbers drawn are the ones the tables print.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use compute::bench::conv::{ConvBench, ConvRow, LadderLayer};
use compute::bench::kernels::{parse_kernel_timings, BenchRow, KernelsBench};
use plotters::prelude::*;

const SERIES: [(&str, RGBColor); 6] = [
    ("rung 1: unroll + GEMM + permute", RGBColor(150, 150, 150)),
    ("rung 2: fused (FP32)", RGBColor(31, 119, 180)),
    ("rung 3: tensor cores", RGBColor(255, 127, 14)),
    (
        "rung 4: + compile-time shape, FP16 out",
        RGBColor(44, 160, 44),
    ),
    (
        "rung 5: + pinned host, two streams (incl. copy)",
        RGBColor(148, 103, 189),
    ),
    ("best cuDNN (cudarc or PyTorch)", RGBColor(214, 39, 40)),
];

/// The ms of series `i` on `layer`: rungs 1–5, then the best cuDNN (the one the tables name).
fn series_ms(f: &ConvBench, layer: LadderLayer, i: usize) -> Option<f64> {
    if i < 5 {
        return f.rung_ms(layer, i as u8 + 1);
    }
    f.best_cudnn(layer).map(|(_, ms)| ms)
}

fn plot_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing the chart: {e}")
}

/// Grouped bars per layer on a log axis: `value(layer, series)`.
fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    f: &ConvBench,
    value: impl Fn(LadderLayer, usize) -> Option<f64>,
) -> Result<()> {
    let ls = f.layers();
    let vals: Vec<f64> = ls
        .iter()
        .flat_map(|&l| {
            (0..SERIES.len())
                .filter_map(|i| value(l, i))
                .collect::<Vec<_>>()
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if vals.is_empty() {
        anyhow::bail!("no rows to draw for {}", path.display());
    }
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min) / 2.0;
    let hi = vals.iter().copied().fold(0.0, f64::max) * 8.0; // room for the legend
    let root = SVGBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let n = ls.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..n - 0.5, (lo..hi).log_scale())
        .map_err(plot_err)?;
    let names: Vec<&str> = ls.iter().map(|l| l.name()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(ls.len())
        .x_label_formatter(&|x| category_label(&names, *x))
        .y_desc(y_desc)
        .draw()
        .map_err(plot_err)?;
    let width = 0.8 / SERIES.len() as f64;
    for (i, (label, color)) in SERIES.iter().enumerate() {
        let bars: Vec<_> = ls
            .iter()
            .enumerate()
            .filter_map(|(g, &l)| {
                let v = value(l, i)?;
                let x0 = g as f64 - 0.4 + i as f64 * width;
                Some(Rectangle::new(
                    [(x0, lo), (x0 + width * 0.9, v)],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(plot_err)?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// One point of the roofline.
struct RoofPoint {
    intensity: f64,
    tflops: f64,
    color: RGBColor,
}

fn rung_color(r: &ConvRow) -> Option<RGBColor> {
    if let Some(rung) = r.rung {
        return SERIES.get(rung as usize - 1).map(|s| s.1);
    }
    r.implementation.starts_with("cudnn").then_some(SERIES[5].1)
}

/// The roofline: every GPU row of the ladder (and the activation/norm kernels, when given)
/// against the copy and GEMM ceilings measured in the same run.
fn roofline(path: &Path, f: &ConvBench, kernels: Option<&[BenchRow]>) -> Result<()> {
    let c = &f.ours.ceilings;
    let mut pts: Vec<RoofPoint> = f
        .ours
        .rows
        .iter()
        .filter(|r| r.batch == f.ours.batch && r.rung != Some(5))
        .filter_map(|r| {
            Some(RoofPoint {
                intensity: r.intensity,
                tflops: r.tflops,
                color: rung_color(r)?,
            })
        })
        .collect();
    for (intensity, tflops) in kernels
        .unwrap_or_default()
        .iter()
        .filter_map(BenchRow::roofline_point)
    {
        pts.push(RoofPoint {
            intensity,
            tflops,
            color: RGBColor(23, 190, 207),
        });
    }
    let top = c.gemm_f16_tflops.unwrap_or(1000.0).max(1.0) * 2.0;
    let root = SVGBackend::new(path, (1000, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Roofline, {} (ceilings measured in the same run)",
                f.ours.device
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((0.05f64..2000.0).log_scale(), (0.001f64..top).log_scale())
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity, FLOP per compulsory byte")
        .y_desc("TFLOP/s")
        .draw()
        .map_err(plot_err)?;
    let xs: Vec<f64> = (0..=60)
        .map(|i| 0.05 * 10f64.powf(i as f64 * 4.6 / 60.0))
        .collect();
    for (ceiling, label, color) in [
        (c.gemm_f16_tflops, "cuBLAS FP16 GEMM", RGBColor(44, 160, 44)),
        (
            c.gemm_f32_tflops,
            "cuBLAS FP32 GEMM",
            RGBColor(31, 119, 180),
        ),
    ] {
        if let Some(peak) = ceiling {
            let line: Vec<(f64, f64)> = xs
                .iter()
                .map(|&x| (x, (c.copy_gbps * x / 1000.0).min(peak)))
                .collect();
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .map_err(plot_err)?
                .label(format!(
                    "copy {:.0} GB/s, {label} {peak:.0} TFLOP/s",
                    c.copy_gbps
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
    }
    chart
        .draw_series(
            pts.iter()
                .map(|p| Circle::new((p.intensity, p.tflops), 5, p.color.filled())),
        )
        .map_err(plot_err)?;
    for (label, color) in SERIES.iter().filter(|(l, _)| !l.starts_with("rung 5")) {
        let color = *color;
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(plot_err)?
            .label(*label)
            .legend(move |(x, y)| Circle::new((x + 6, y), 5, color.filled()));
    }
    if kernels.is_some() {
        let color = RGBColor(23, 190, 207);
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(plot_err)?
            .label("activation / norm kernels (nominal FLOPs)")
            .legend(move |(x, y)| Circle::new((x + 6, y), 5, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// The speed-up chart's series: the peer (as [`ThroughputGroup::speedups`] names it), its
/// legend and colour.
///
/// [`ThroughputGroup::speedups`]: compute::bench::kernels::ThroughputGroup::speedups
const PEER_SERIES: [(&str, &str, RGBColor); 3] = [
    ("eager", "ours ÷ PyTorch eager", RGBColor(148, 103, 189)),
    (
        "torch.compile",
        "ours ÷ torch.compile (generated Triton)",
        RGBColor(44, 160, 44),
    ),
    (
        "Triton",
        "ours ÷ hand-written Triton (checked against f64)",
        RGBColor(255, 127, 14),
    ),
];

/// Per activation/norm kernel (op and dtype), ours ÷ each peer (how many times faster ours is,
/// same bytes, same call), with the parity line at 1×; a Triton kernel that failed its check
/// is marked instead of drawn. Nothing is written (None) when no kernel has a peer.
pub fn kernel_speedups(path: &Path, k: &KernelsBench) -> Result<Option<PathBuf>> {
    let groups = k.throughput();
    let vals: Vec<f64> = groups
        .iter()
        .flat_map(|g| g.speedups().into_iter().filter_map(|(_, v)| v))
        .collect();
    if vals.is_empty() {
        return Ok(None);
    }
    let hi = vals.iter().copied().fold(1.0, f64::max) * 1.35; // room for the legend
    let n = groups.len() as f64;
    let root = SVGBackend::new(path, (1100, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let shape = groups.first().map_or([0, 0], |g| g.ours.shape);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Activation / norm kernels, {}×{}: speed-up of ours over each peer ({})",
                shape[0], shape[1], k.ours.device
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..hi)
        .map_err(plot_err)?;
    let names: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len())
        .x_label_formatter(&|x| category_label(&names, *x))
        .y_desc("ours ÷ peer (x), above 1: ours faster")
        .draw()
        .map_err(plot_err)?;
    chart
        .draw_series(LineSeries::new(
            [(-0.5, 1.0), (n - 0.5, 1.0)],
            BLACK.mix(0.6).stroke_width(1),
        ))
        .map_err(plot_err)?
        .label("parity (1x)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.6)));
    let width = 0.8 / PEER_SERIES.len() as f64;
    for (i, (name, label, color)) in PEER_SERIES.iter().enumerate() {
        let value = |g: &compute::bench::kernels::ThroughputGroup| {
            g.speedups()
                .into_iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v)
        };
        let bars: Vec<_> = groups
            .iter()
            .enumerate()
            .filter_map(|(j, g)| {
                let v = value(g)?;
                let x0 = j as f64 - 0.4 + i as f64 * width;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.9, v)],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(plot_err)?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        let texts: Vec<_> = groups
            .iter()
            .enumerate()
            .filter_map(|(j, g)| {
                let x0 = j as f64 - 0.4 + i as f64 * width;
                let text = match value(g) {
                    Some(v) => format!("{v:.2}"),
                    None if *name == "Triton" && g.triton.failure().is_some() => {
                        "check failed".to_string()
                    }
                    None => return None,
                };
                let y = value(g).unwrap_or(0.0) + hi * 0.035;
                Some(Text::new(text, (x0, y), ("sans-serif", 10)))
            })
            .collect();
        chart.draw_series(texts).map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(Some(path.to_path_buf()))
}

/// Writes `conv_ladder_speedup.svg`, `conv_runtime.svg` and `roofline.svg` into `out`, and
/// `kernel_speedup.svg` when the kernels file holds PyTorch's or Triton's rows.
pub fn run(conv: &Path, kernels: Option<&Path>, out: &Path) -> Result<Vec<PathBuf>> {
    let text =
        std::fs::read_to_string(conv).with_context(|| format!("reading {}", conv.display()))?;
    let f = ConvBench::parse(&text).with_context(|| {
        format!(
            "{}: not a `showdown bench conv --json` file",
            conv.display()
        )
    })?;
    let mut with_peers: Option<KernelsBench> = None;
    let k: Option<Vec<BenchRow>> = match kernels {
        Some(p) => {
            let t =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            // A whole `bench kernels --json-out` file also gives the speed-up chart.
            with_peers = KernelsBench::parse(&t).ok().filter(|b| !b.peers.is_empty());
            Some(parse_kernel_timings(&t).with_context(|| {
                format!(
                    "{}: not a `showdown bench kernels --json` file",
                    p.display()
                )
            })?)
        }
        None => None,
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let speedup = out.join("conv_ladder_speedup.svg");
    grouped_bars(
        &speedup,
        &format!(
            "Convolution ladder, batch {}: speed-up over rung 1 ({})",
            f.ours.batch, f.ours.device
        ),
        "speed-up over rung 1 (x)",
        &f,
        |l, i| Some(series_ms(&f, l, 0)? / series_ms(&f, l, i)?),
    )?;
    let runtime = out.join("conv_runtime.svg");
    grouped_bars(
        &runtime,
        &format!(
            "Convolution forward, batch {}: median ms per pass",
            f.ours.batch
        ),
        "ms (log)",
        &f,
        |l, i| series_ms(&f, l, i),
    )?;
    let roof = out.join("roofline.svg");
    roofline(&roof, &f, k.as_deref())?;
    let mut written = vec![speedup, runtime, roof];
    if let Some(b) = &with_peers {
        written.extend(kernel_speedups(&out.join("kernel_speedup.svg"), b)?);
    }
    Ok(written)
}

/// The name of the category at `x` on a chart of one category per whole number (0, 1, …);
/// nothing between them.
fn category_label(names: &[impl AsRef<str>], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
        names[i as usize].as_ref().to_string()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use compute::bench::conv::{finish_row, Ceilings, ConvLadderReport};

    fn report() -> ConvBench {
        let mut rows = Vec::new();
        for l in LadderLayer::ALL {
            for (rung, ms) in [(1u8, 10.0), (2, 5.0), (3, 1.0), (4, 0.5), (5, 3.0)] {
                rows.push(finish_row(l, "r", Some(rung), 100, (4, 4), (ms, ms, ms, 5)));
            }
            rows.push(finish_row(
                l,
                "cudnn_f16",
                None,
                100,
                (2, 2),
                (0.8, 0.8, 0.8, 5),
            ));
        }
        ConvBench {
            ours: ConvLadderReport {
                device: "test GPU".into(),
                batch: 100,
                input_source: "x".into(),
                ceilings: Ceilings {
                    copy_gbps: 3000.0,
                    gemm_f16_tflops: Some(700.0),
                    gemm_f32_tflops: Some(50.0),
                    gemm_note: None,
                },
                rows,
                checks: Vec::new(),
                skipped: Vec::new(),
            },
            peers: Vec::new(),
            peer_failure: None,
        }
    }

    #[test]
    fn the_three_charts_are_written_as_svg_with_their_labels() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conv = dir.path().join("conv.json");
        std::fs::write(
            &conv,
            serde_json::to_string(&serde_json::json!({
                "ours": report().ours, "peers": []
            }))
            .expect("json"),
        )
        .expect("write");
        let kern = dir.path().join("kernels.json");
        std::fs::write(&kern, r#"{"device":"test GPU","bench":[
{"op":"copy","dtype":"f32","shape":[8192,4096],"ms_p50":0.09,"ms_p90":0.09,"ms_p99":0.09,"gbps":2982,"of_copy":1},
{"op":"relu","dtype":"f16","shape":[8192,4096],"ms_p50":0.05,"ms_p90":0.05,"ms_p99":0.05,"gbps":2684,"of_copy":0.9}]}"#).expect("write");
        let out = run(&conv, Some(&kern), &dir.path().join("plots")).expect("plots");
        assert_eq!(out.len(), 3);
        for p in &out {
            let svg = std::fs::read_to_string(p).expect("svg");
            assert!(svg.starts_with("<svg"), "{}", p.display());
            assert!(svg.contains("lab_conv2") || p.ends_with("roofline.svg"));
        }
        let roof = std::fs::read_to_string(&out[2]).expect("svg");
        assert!(roof.contains("cuBLAS FP16 GEMM 700 TFLOP/s"));
        assert!(roof.contains("activation / norm kernels"));
        // series_ms picks rung 4's 0.5 ms and the cuDNN row for "best cuDNN".
        let f = report();
        assert_eq!(series_ms(&f, LadderLayer::LabConv1, 3), Some(0.5));
        assert_eq!(series_ms(&f, LadderLayer::LabConv1, 5), Some(0.8));
    }

    /// Issue 29: a `bench kernels --json-out` file with its peers also gives the speed-up
    /// chart: ours ÷ eager, ÷ torch.compile, ÷ Triton per kernel, a failed Triton check marked.
    #[test]
    fn issue_29_the_kernel_speedup_chart_is_written_beside_the_others() {
        use compute::bench::kernels::{parse_peer_ops, KernelsOurs};
        let dir = tempfile::tempdir().expect("tempdir");
        let conv = dir.path().join("conv.json");
        std::fs::write(
            &conv,
            serde_json::to_string(&serde_json::json!({ "ours": report().ours, "peers": [] }))
                .expect("json"),
        )
        .expect("write");
        let row = |op: &str, dtype: &str, gbps: f64| BenchRow {
            op: op.into(),
            dtype: dtype.into(),
            shape: [8192, 4096],
            ms_p50: 0.1,
            ms_p90: 0.1,
            ms_p99: 0.1,
            gbps,
            of_copy: gbps / 3000.0,
        };
        let peers = parse_peer_ops(
            r#"{"kind": "op", "impl": "torch-eager", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": 0.1, "gbps": 2000}
{"kind": "op", "impl": "torch-compile-triton", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": 0.1, "gbps": 2500}
{"kind": "op", "impl": "triton", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": 0.1, "gbps": 2400, "check": "ok", "max_abs": 0.0, "max_rel": 0.0, "bound": 2e-05}
{"kind": "op", "impl": "torch-eager", "op": "ln_gelu", "dtype": "float16", "shape": [8192, 4096], "ms": 0.1, "gbps": 1200}
{"kind": "op", "impl": "triton", "op": "ln_gelu", "dtype": "float16", "shape": [8192, 4096], "check": "failed", "max_abs": 0.1, "max_rel": 0.05, "bound": 0.002}"#,
        );
        assert_eq!(peers.len(), 5);
        let k = KernelsBench {
            ours: KernelsOurs {
                device: "test GPU".into(),
                checks: Vec::new(),
                bench: vec![
                    row("copy", "f32", 3000.0),
                    row("relu", "f32", 2900.0),
                    row("layernorm_gelu", "f16", 2000.0),
                ],
            },
            peers,
            peer_failure: None,
            triton_failure: None,
        };
        let kern = dir.path().join("kernels.json");
        std::fs::write(&kern, serde_json::to_string(&k).expect("json")).expect("write");
        let out = run(&conv, Some(&kern), &dir.path().join("plots")).expect("plots");
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(out[3].ends_with("kernel_speedup.svg"));
        let svg = std::fs::read_to_string(&out[3]).expect("svg");
        for text in [
            "relu f32",
            "layernorm_gelu f16",
            "ours ÷ PyTorch eager",
            "ours ÷ torch.compile",
            "ours ÷ hand-written Triton",
            "parity (1x)",
            "1.45",         // 2900 ÷ 2000
            "1.21",         // 2900 ÷ 2400
            "check failed", // the failed Triton check, not a time
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        // Without peers there is nothing to compare: no chart.
        let alone = KernelsBench {
            peers: Vec::new(),
            ..k
        };
        assert_eq!(
            kernel_speedups(&dir.path().join("none.svg"), &alone).expect("no error"),
            None
        );
    }

    #[test]
    fn a_file_that_is_not_a_conv_bench_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{\"runs\": []}").expect("write");
        let e = run(&p, None, dir.path()).expect_err("must fail");
        assert!(
            format!("{e:#}").contains("not a `showdown bench conv --json` file"),
            "{e:#}"
        );
    }
}
