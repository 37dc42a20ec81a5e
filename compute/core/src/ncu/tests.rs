//! Tests of the importer on real ncu exports and hand-made ones (see
//! `compute/core/tests/data/ncu/README.md`), every bad-input case, the panels and `compare`.

use super::reader::{LineSource, Next, Record, RecordReader};
use super::*;

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ncu")
        .join(name)
}

fn load(name: &str) -> NcuReport {
    let bytes = std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    import_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn err(text: &[u8]) -> NcuError {
    match import_bytes(text) {
        Ok(r) => panic!("expected an error, got {} kernels", r.kernels.len()),
        Err(e) => e,
    }
}

fn kernel(r: &NcuReport, id: u64) -> &Kernel {
    r.kernels
        .iter()
        .find(|k| k.id == id)
        .unwrap_or_else(|| panic!("no kernel {id}"))
}

fn metric<'k>(k: &'k Kernel, section: &str, name: &str) -> &'k Metric {
    k.metric(section, name)
        .unwrap_or_else(|| panic!("kernel {} has no {section}/{name}", k.id))
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs())
}

const SOL: &str = "GPU Speed Of Light Throughput";

/// A details-page header and one metric row of a kernel, for the bad-input cases.
const HEADER: &str = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"";

fn row(id: &str, name: &str, unit: &str, value: &str) -> String {
    format!(
        "\"{id}\",\"641\",\"python3.12\",\"127.0.0.1\",\"k(float*)\",\"1\",\"7\",\"(256, 1, 1)\",\"(16, 1, 1)\",\"0\",\"9.0\",\"{SOL}\",\"{name}\",\"{unit}\",\"{value}\","
    )
}

// ---------------------------------------------------------------- real exports

#[test]
fn torch_cupy_full_details_imports() {
    let r = load("torch_cupy_set_full_details.csv");
    assert_eq!(r.format, Format::Details);
    // 16 distinct IDs (0..=15): counted with Python's csv module on the file.
    assert_eq!(r.kernels.len(), 16);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    for (i, k) in r.kernels.iter().enumerate() {
        assert_eq!(k.id, i as u64);
        assert_eq!(k.cc, "9.0");
        assert_eq!(k.device, Some(0));
        assert!(!k.metrics.is_empty() && !k.short_name.is_empty());
    }
    let k0 = kernel(&r, 0);
    assert!(k0
        .name
        .starts_with("void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4,"));
    assert!(k0.name.ends_with("(long, at::PhiloxCudaState, T3, T4)"));
    assert_eq!(k0.short_name, "distribution_elementwise_grid_stride_kernel");
    assert_eq!((k0.block, k0.grid), ([256, 1, 1], [1056, 1, 1]));

    let k7 = kernel(&r, 7);
    assert!(k7
        .name
        .starts_with("void at::vectorized_elementwise_kernel<4, at::GeluCUDAKernelImpl"));
    assert_eq!(k7.short_name, "vectorized_elementwise_kernel");
    assert_eq!((k7.block, k7.grid), ([128, 1, 1], [16384, 1, 1]));
    // 87 metric rows and 9 rule rows for ID 7 in the file.
    assert_eq!(k7.metrics.len(), 87);
    assert_eq!(k7.rules.len(), 9);
    let d = metric(k7, SOL, "Duration");
    assert_eq!((d.unit(), &d.value), ("us", &MetricValue::Number(41.66)));
    assert!(close(d.si_value.unwrap(), 41.66e-6, 1e-12));
    assert_eq!(d.si_unit(), Some("second"));
    let bw = metric(k7, "Memory Workload Analysis", "Memory Throughput");
    assert_eq!((bw.unit(), bw.value.as_f64()), ("Tbyte/s", Some(2.72)));
    assert!(close(bw.si_value.unwrap(), 2.72e12, 1e-12));
    assert_eq!(bw.si_unit(), Some("byte/second"));
    let cycles = metric(k7, SOL, "Elapsed Cycles");
    assert_eq!(cycles.value, MetricValue::Number(65994.0));
    assert_eq!(
        (cycles.si_value, cycles.si_unit()),
        (Some(65994.0), Some("cycle"))
    );
    let smem = metric(k7, "Launch Statistics", "Shared Memory Configuration Size");
    assert_eq!((smem.unit(), smem.value.as_f64()), ("Kbyte", Some(32.77)));
    assert!(close(smem.si_value.unwrap(), 32770.0, 1e-12));
    let policy = metric(k7, "Launch Statistics", "Cluster Scheduling Policy");
    assert_eq!(policy.value, MetricValue::Text("PolicySpread".into()));
    assert_eq!((policy.si_value, policy.si_unit()), (None, None));
    assert_eq!(
        metric(k7, "Occupancy", "Achieved Occupancy").value.as_f64(),
        Some(79.3)
    );
    let rule = k7
        .rules
        .iter()
        .find(|r| r.name == "AchievedOccupancy")
        .unwrap();
    assert_eq!(rule.section, "Occupancy");
    assert_eq!(rule.rule_type, "OPT");
    assert_eq!(rule.speedup_type.as_deref(), Some("global"));
    assert_eq!(rule.speedup, Some(18.67));
    let inf = k7.rules.iter().find(|r| r.name == "SOLBottleneck").unwrap();
    assert_eq!(
        (
            inf.rule_type.as_str(),
            inf.speedup,
            inf.speedup_type.as_ref()
        ),
        ("INF", None, None)
    );

    let k10 = kernel(&r, 10);
    assert_eq!(k10.name, k10.short_name);
    assert!(k10
        .name
        .starts_with("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"));
    assert_eq!((k10.block, k10.grid), ([384, 1, 1], [2, 66, 1]));
    let k15 = kernel(&r, 15);
    assert_eq!(k15.name, "fused_relu");
    assert_eq!((k15.block, k15.grid), ([128, 1, 1], [32768, 1, 1]));
}

#[test]
fn ours_details_and_mixed_stdout() {
    let r = load("ours_details.csv");
    assert_eq!(r.format, Format::Details);
    assert_eq!(r.kernels.len(), 13);
    let names: Vec<&str> = r.kernels.iter().map(|k| k.short_name.as_str()).collect();
    let expected = [
        "generate_seed_pseudo",
        "gen_sequenced",
        "cupy_copy__float32_float32",
        "relu_f32",
        "gelu_erf_f32",
        "gen_sequenced",
        "cupy_copy__float32_float16",
        "relu_f16",
        "gelu_erf_f16",
        "gen_sequenced",
    ];
    assert_eq!(names[..10], expected);
    assert_eq!(
        names[11..],
        ["DeviceReduceKernel", "DeviceReduceSingleTileKernel"]
    );
    assert!(names[10].starts_with("sm80_xmma_gemm_f32f32"));
    let relu = kernel(&r, 3);
    assert_eq!((relu.block, relu.grid), ([256, 1, 1], [1056, 1, 1]));
    assert_eq!(metric(relu, SOL, "Duration").value.as_f64(), Some(94.05));

    // The live run: the program's output and ==PROF== lines come before the header (line 8).
    let m = load("ours_mixed_stdout.csv");
    assert_eq!(m.kernels.len(), 13);
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("before the header on line 8")),
        "{:?}",
        m.warnings
    );
}

/// (ID, section, name, printed value) of every metric row of a details export.
fn printed_values(name: &str) -> Vec<(String, String, String, String)> {
    let bytes = std::fs::read(data(name)).unwrap();
    let mut rr = RecordReader::new(LineSource::new(&bytes[..]));
    let mut rec = Record::default();
    let mut out = Vec::new();
    let mut header = true;
    while let Next::Record(_) | Next::Skipped { .. } = rr.next(&mut rec).unwrap() {
        if rec.len() < 15 || header {
            header = header && rec.get(0) != "ID";
            continue;
        }
        if !rec.get(12).is_empty() {
            let f = |i| rec.get(i).to_string();
            out.push((f(0), f(11), f(12), f(14)));
        }
    }
    out
}

/// Half a unit of the last printed digit of `text` (`2.67` → 0.005).
fn half_ulp_printed(text: &str) -> f64 {
    let decimals = text.split_once('.').map_or(0, |(_, f)| f.len());
    0.5 * 10f64.powi(-(decimals as i32))
}

#[test]
fn human_and_base_units_give_the_same_si_values_real_pair() {
    let human = load("ours_details.csv");
    let base = load("ours_details_base.csv");
    let printed = printed_values("ours_details.csv");
    let hm: Vec<&Metric> = human.kernels.iter().flat_map(|k| &k.metrics).collect();
    let bm: Vec<&Metric> = base.kernels.iter().flat_map(|k| &k.metrics).collect();
    assert_eq!(hm.len(), bm.len());
    assert_eq!(hm.len(), printed.len());
    let mut converted = 0;
    for ((h, b), (_, section, name, text)) in hm.iter().zip(&bm).zip(&printed) {
        assert_eq!((h.section(), h.name()), (b.section(), b.name()));
        assert_eq!((h.section(), h.name()), (section.as_str(), name.as_str()));
        assert_eq!(
            h.si_unit(),
            b.si_unit(),
            "{section}/{name}: {} vs {}",
            h.unit(),
            b.unit()
        );
        let (Some(hv), Some(bv)) = (h.si_value, b.si_value) else {
            assert_eq!(h.value, b.value, "{section}/{name}");
            continue;
        };
        // The human value is the base value rounded to its printed digits, in its unit.
        let scale = units::si_scale(h.unit()).map_or(0, |s| s.exp10);
        let tolerance = units::scale_pow10(half_ulp_printed(text), scale) + 1e-9 * bv.abs();
        assert!(
            (hv - bv).abs() <= tolerance,
            "{section}/{name}: {text} {} = {hv} vs {bv} {}",
            h.unit(),
            b.unit()
        );
        if h.unit() != b.unit() {
            converted += 1;
        }
    }
    // Every kernel has Ghz/us/Mbyte/Kbyte/... rows printed in another unit in base mode.
    assert!(
        converted >= 13 * 5,
        "only {converted} rows had different units"
    );
}

#[test]
fn human_and_base_units_give_identical_si_values_hand_made_pair() {
    let human = load("details_legacy_human.csv");
    let base = load("details_legacy_base.csv");
    assert_eq!(human.kernels.len(), 2);
    assert_eq!(human.kernels[0].short_name, "cuda_compute_step_factor");
    assert_eq!(human.kernels[0].block, [0, 0, 0]);
    assert!(human.warnings.iter().any(|w| w.contains("no Block Size")));
    let pairs: Vec<(&Metric, &Metric)> = human
        .kernels
        .iter()
        .flat_map(|k| &k.metrics)
        .zip(base.kernels.iter().flat_map(|k| &k.metrics))
        .collect();
    assert_eq!(pairs.len(), 17);
    let mut differing_units = 0;
    for (h, b) in pairs {
        assert_eq!(
            h.si_unit(),
            b.si_unit(),
            "{}: {} vs {}",
            h.name(),
            h.unit(),
            b.unit()
        );
        match (h.si_value, b.si_value) {
            (Some(x), Some(y)) => assert!(close(x, y, 1e-15), "{}: {x} vs {y}", h.name()),
            (None, None) => assert_eq!(h.value, MetricValue::Text("n/a".into())),
            other => panic!("{}: {other:?}", h.name()),
        }
        differing_units += usize::from(h.unit() != b.unit());
    }
    assert_eq!(differing_units, 11);
    let k1 = &human.kernels[1];
    let f = k1.metric("GPU Speed Of Light", "SM Frequency").unwrap();
    assert_eq!((f.si_value, f.si_unit()), (Some(1.4105e9), Some("hz")));
    let d = k1.metric("GPU Speed Of Light", "Duration").unwrap();
    assert_eq!((d.si_value, d.si_unit()), (Some(1.25e-3), Some("second")));
}

#[test]
fn raw_page_imports() {
    let r = load("ours_raw.csv");
    assert_eq!(r.format, Format::Raw);
    assert_eq!(r.kernels.len(), 13);
    let details = load("ours_details_base.csv");
    for (raw, det) in r.kernels.iter().zip(&details.kernels) {
        assert_eq!(
            (raw.id, &raw.name, raw.block, raw.grid),
            (det.id, &det.name, det.block, det.grid)
        );
        assert_eq!(raw.cc, "9.0");
        // The same durations, one printed in us (raw) and one in ns (details, base units).
        let a = raw.metric_named("gpu__time_duration.sum").unwrap();
        let b = metric(det, SOL, "Duration");
        assert_eq!(a.unit(), "us");
        assert!(
            close(a.si_value.unwrap(), b.si_value.unwrap(), 1e-9),
            "{} vs {}",
            a.si_value.unwrap(),
            b.si_value.unwrap()
        );
    }
    let k0 = kernel(&r, 0);
    let d = k0.metric_named("gpu__time_duration.sum").unwrap();
    assert_eq!((d.section(), d.value.as_f64()), ("gpu", Some(208.448)));
    let grid = k0.metric_named("launch__grid_size").unwrap();
    assert_eq!(grid.value.as_f64(), Some(64.0));
    let smem = k0.metric_named("launch__shared_mem_config_size").unwrap();
    assert_eq!((smem.unit(), smem.si_value), ("Kbyte", Some(32768.0)));
    let triage = k0
        .metric_named("FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed")
        .map(|m| m.section());
    assert!(matches!(triage, None | Some("dramc")));
    // ncu prints "nan" for metrics it could not compute: kept as text.
    let nan = k0.metric_named("derived_tempMetric4").unwrap();
    assert_eq!(
        (&nan.value, nan.si_value),
        (&MetricValue::Text("nan".into()), None)
    );
    let name = k0.metric_named("device__attribute_display_name").unwrap();
    assert!(matches!(&name.value, MetricValue::Text(t) if t.contains("H100")));
}

#[test]
fn summary_imports() {
    let r = load("ours_summary.csv");
    assert_eq!(r.format, Format::Summary);
    // 13 launches of 11 distinct (name, block, grid): gen_sequenced ran 3 times.
    assert_eq!(r.kernels.len(), 11);
    let ids: Vec<u64> = r.kernels.iter().map(|k| k.id).collect();
    assert_eq!(ids, (0..11).collect::<Vec<_>>());
    let total: u64 = r.kernels.iter().map(|k| k.invocations.unwrap()).sum();
    assert_eq!(total, 13);
    let gs = r
        .kernels
        .iter()
        .find(|k| k.short_name == "gen_sequenced")
        .unwrap();
    assert_eq!(gs.invocations, Some(3));
    assert_eq!(
        (gs.block, gs.grid, gs.cc.as_str()),
        ([64, 1, 1], [64, 1, 1], "9.0")
    );
    let d = metric(gs, SOL, "Duration");
    assert_eq!(
        (d.unit(), d.value.as_f64(), d.min(), d.max()),
        ("us", Some(432.15), Some(22.88), Some(636.9))
    );
    assert!(close(d.si_value.unwrap(), 432.15e-6, 1e-12));
    let c = metric(gs, SOL, "Elapsed Cycles");
    assert_eq!(
        (c.value.as_f64(), c.min(), c.max()),
        (Some(687_082.33), Some(36_322.0), Some(1_012_653.0))
    );
    assert!(gs.rules.is_empty());
}

#[test]
fn print_details_all_hand_made() {
    let r = load("details_print_details_all.csv");
    assert_eq!(r.kernels.len(), 2);
    // 6 lines before the header (4 ==PROF==, 2 program output); 1 ==WARNING== after it.
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("skipped 6 line(s) before the header on line 7")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("skipped 1 ncu log line")),
        "{:?}",
        r.warnings
    );
    let k0 = kernel(&r, 0);
    assert_eq!(k0.short_name, "stencil_kernel");
    assert_eq!(
        (k0.block, k0.grid, k0.cc.as_str()),
        ([128, 2, 1], [64, 32, 1], "8.6")
    );
    let stall = metric(k0, "Warp State Statistics", "Stall Long Scoreboard");
    assert_eq!(stall.label(), Some("Warp State (All Cycles)"));
    assert_eq!(
        metric(
            k0,
            "Warp State Statistics",
            "Warp Cycles Per Issued Instruction"
        )
        .label(),
        None
    );
    let busy = metric(k0, "Memory Workload Analysis", "Mem Busy");
    assert_eq!(
        (&busy.value, busy.si_value),
        (&MetricValue::Text("n/a".into()), None)
    );
    let d = metric(k0, SOL, "Duration");
    assert_eq!((d.si_value, d.si_unit()), (Some(1.23e-3), Some("second")));
    assert_eq!(
        metric(k0, SOL, "Elapsed Cycles").value.as_f64(),
        Some(2_111_111.0)
    );
    // HTML is data: kept verbatim.
    let k1 = kernel(&r, 1);
    assert_eq!(k1.name, "<script>alert(\"x\")</script> & <b>kernel</b>");
    assert!(k1.rules[0]
        .description
        .contains("<b>Not HTML</b> & \"quoted\""));
    assert_eq!(k1.rules[0].speedup, Some(97.83));
}

#[test]
fn ncu_rep_is_refused_with_the_export_command() {
    let bytes = std::fs::read(data("ours_head.ncu-rep")).unwrap();
    let e = err(&bytes);
    assert_eq!(e.line(), 1);
    assert!(matches!(e, NcuError::NcuRep { .. }));
    assert!(
        e.to_string()
            .contains("ncu --import FILE --csv --page details --print-units base > FILE.csv"),
        "{e}"
    );
    assert_eq!(
        export_command("my run's.ncu-rep"),
        "ncu --import 'my run'\\''s.ncu-rep' --csv --page details --print-units base > 'my run'\\''s.ncu-rep.csv'"
    );
    let named = import_named(&bytes[..], "run.ncu-rep").unwrap_err();
    assert!(named.to_string().contains(
        "ncu --import run.ncu-rep --csv --page details --print-units base > run.ncu-rep.csv"
    ));
    #[cfg(feature = "fs")]
    {
        let file = import_file(&data("ours_head.ncu-rep")).unwrap_err();
        assert!(file
            .to_string()
            .contains("ours_head.ncu-rep --csv --page details --print-units base > "));
    }
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_inputs_name_their_line() {
    // Empty, or blank.
    assert_eq!(err(b""), NcuError::Empty { line: 1 });
    assert_eq!(err(b"\n  \r\n\n"), NcuError::Empty { line: 1 });
    // Binary: NUL bytes, UTF-16, gzip.
    assert!(matches!(
        err(b"\x00\x01\x02garbage\xff"),
        NcuError::Binary { line: 1, .. }
    ));
    assert!(matches!(
        err(b"\xff\xfe\"\x00I\x00D\x00"),
        NcuError::Binary { line: 1, .. }
    ));
    assert!(matches!(
        err(b"\x1f\x8b\x08\x00"),
        NcuError::Binary { line: 1, .. }
    ));
    let late_nul = format!("{}\n\u{0}\u{0}\n", "x".repeat(9000));
    assert!(matches!(
        err(late_nul.as_bytes()),
        NcuError::Binary { line: 2, .. }
    ));
    // Not an ncu export: unrelated CSV, only log lines, an ncu error.
    let e = err(b"name,age\n\"bob\",3\n");
    assert!(
        matches!(&e, NcuError::NotNcu { line: 1, reason } if reason.contains("name,age")),
        "{e}"
    );
    let e = err(b"==PROF== Connected to process 1\n==PROF== Disconnected from process 1\n");
    assert!(
        matches!(&e, NcuError::NotNcu { line: 1, reason } if reason.contains("no CSV")),
        "{e}"
    );
    let e = err(b"==ERROR== The application returned an error code (1).\n");
    assert!(e.to_string().contains("==ERROR== The application"), "{e}");
    // A header that lacks a needed column names the header's line.
    let e = err(b"hello\n\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n");
    assert!(
        matches!(&e, NcuError::NotNcu { line: 2, reason } if reason.contains("Block Size") || reason.contains("Section Name")),
        "{e}"
    );
    // Header only (details, raw with its units row, summary).
    assert_eq!(
        err(format!("{HEADER}\n").as_bytes()),
        NcuError::HeaderOnly { line: 1 }
    );
    assert_eq!(
        err(format!("==PROF== x\n{HEADER}\n\n").as_bytes()),
        NcuError::HeaderOnly { line: 2 }
    );
    let raw = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"gpu__time_duration.sum\"\n\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"us\"\n";
    assert_eq!(err(raw.as_bytes()), NcuError::HeaderOnly { line: 2 });
    // Truncated: a short row, or the input ending inside a quoted field.
    let text = format!(
        "{HEADER}\n{}\n\"1\",\"641\",\"python3.12\"\n",
        row("0", "Duration", "us", "1.5")
    );
    assert!(matches!(
        err(text.as_bytes()),
        NcuError::Truncated { line: 3, .. }
    ));
    let text = format!(
        "{HEADER}\n{}\n\"1\",\"641\",\"python3",
        row("0", "Duration", "us", "1.5")
    );
    assert!(matches!(
        err(text.as_bytes()),
        NcuError::Truncated { line: 3, .. }
    ));
    let short_raw = format!("{raw}\"0\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\"\n");
    assert!(matches!(
        err(short_raw.as_bytes()),
        NcuError::Truncated { line: 3, .. }
    ));
    // Too many fields.
    let text = format!(
        "{HEADER}\n{},\"\",\"\",\"\",\"\",\"extra\"\n",
        row("0", "Duration", "us", "1.5")
    );
    assert!(matches!(
        err(text.as_bytes()),
        NcuError::Malformed { line: 2, .. }
    ));
    // Absurd numbers no longer refuse the report: see
    // `import_keeps_a_report_with_an_overflowing_metric`. A non-finite ID still does.
    let text = format!("{HEADER}\n{}\n", row("1e400", "Duration", "us", "1.5"));
    assert!(
        matches!(err(text.as_bytes()), NcuError::BadValue { line: 2, ref column, .. } if column == "ID")
    );
    // Bad ID and bad launch shape.
    let text = format!("{HEADER}\n{}\n", row("zero", "Duration", "us", "1.5"));
    assert!(
        matches!(err(text.as_bytes()), NcuError::BadValue { line: 2, ref column, .. } if column == "ID")
    );
    let text = format!(
        "{HEADER}\n{}\n",
        row("0", "Duration", "us", "1.5").replace("(256, 1, 1)", "(256, x)")
    );
    assert!(
        matches!(err(text.as_bytes()), NcuError::BadValue { line: 2, ref column, .. } if column == "Block Size")
    );
    // A field over 1 MB.
    let long = "x".repeat(MAX_FIELD_BYTES + 1);
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        row("0", "Duration", "us", "1.5"),
        row("0", &long, "us", "1.5")
    );
    let e = err(text.as_bytes());
    assert!(
        matches!(&e, NcuError::FieldTooLong { line: 3, column, len, .. } if column == "Metric Name" && *len == MAX_FIELD_BYTES + 1),
        "{e}"
    );
    // Every message starts with its line.
    assert!(e.to_string().starts_with("line 3: "));
}

#[test]
fn non_utf8_is_replaced_with_a_warning() {
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(
        row("0", "Duration", "us", "1.5")
            .replace("k(float*)", "k_\u{1}(float*)")
            .as_bytes(),
    );
    // Replace the marker with a byte that is neither UTF-8 nor Latin-1 text.
    let pos = bytes.iter().position(|&b| b == 1).unwrap();
    bytes[pos] = 0x81;
    bytes.push(b'\n');
    let r = import_bytes(&bytes).unwrap();
    assert_eq!(r.kernels[0].name, "k_\u{fffd}(float*)");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("invalid UTF-8") && w.contains("line 2")),
        "{:?}",
        r.warnings
    );
}

/// Issue 37: a kernel name written in Latin-1 showed replacement characters.
#[test]
fn a_latin1_kernel_name_is_decoded() {
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(
        row("0", "Duration", "us", "1.5")
            .replace("k(float*)", "k_caf\u{1}_na\u{2}ve(float*)")
            .as_bytes(),
    );
    for (marker, latin1) in [(1u8, 0xE9u8), (2, 0xEF)] {
        let pos = bytes.iter().position(|&b| b == marker).unwrap();
        bytes[pos] = latin1;
    }
    bytes.push(b'\n');
    let r = import_bytes(&bytes).unwrap();
    assert_eq!(r.kernels[0].name, "k_caf\u{e9}_na\u{ef}ve(float*)");
    // The page reads the upload's bytes and sends their text: the same name.
    let text = export_text(&bytes);
    assert!(text.contains("k_caf\u{e9}_na\u{ef}ve(float*)"), "{text}");
    assert_eq!(
        import_str(&text).unwrap().kernels[0].name,
        "k_caf\u{e9}_na\u{ef}ve(float*)"
    );
    assert!(matches!(
        export_text(b"plain"),
        std::borrow::Cow::Borrowed("plain")
    ));
    assert!(
        r.warnings.iter().any(|w| w.contains("Latin-1")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn bom_crlf_multiline_and_log_lines_after_header() {
    let text = format!(
        "\u{feff}{HEADER}\r\n{}\r\n==WARNING== something\r\n\"0\",\"1\",\"p\",\"h\",\"k(float*)\",\"1\",\"7\",\"(256, 1, 1)\",\"(16, 1, 1)\",\"0\",\"9.0\",\"SpeedOfLight\",\"\",\"\",\"\",\"SOLBottleneck\",\"OPT\",\"two\r\nlines\",\"\",\"\"\r\n{}\r\n",
        row("0", "Duration", "us", "1.5"),
        row("1", "Duration", "ms", "2")
    );
    let r = import_str(&text).unwrap();
    assert_eq!(r.kernels.len(), 2);
    assert_eq!(r.kernels[0].rules[0].description, "two\nlines");
    assert_eq!(r.kernels[1].metrics[0].si_value, Some(2e-3));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("skipped 1 ncu log line")));
}

#[test]
fn report_serializes_untagged_values() {
    let r = load("details_print_details_all.csv");
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"format\":\"details\""));
    assert!(json.contains("\"value\":85.2"));
    assert!(json.contains("\"value\":\"n/a\""));
    let back: NcuReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
}

// ---------------------------------------------------------------- panels and compare

#[test]
fn seven_panels_for_every_real_kernel() {
    for file in [
        "torch_cupy_set_full_details.csv",
        "ours_details.csv",
        "ours_raw.csv",
        "ours_summary.csv",
    ] {
        let r = load(file);
        for k in &r.kernels {
            let panels = build_panels(k);
            let ids: Vec<&str> = panels.iter().map(|p| p.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "throughput",
                    "launch",
                    "occupancy",
                    "warp_state",
                    "scheduler",
                    "instructions",
                    "summary",
                ]
            );
            for p in &panels {
                assert!(
                    !p.narrative.trim().is_empty(),
                    "{file} kernel {} panel {}",
                    k.id,
                    p.id
                );
                assert!(!p.title.is_empty());
                assert!(
                    !p.metrics.is_empty() || p.id == "summary",
                    "{file} kernel {} panel {} has no rows",
                    k.id,
                    p.id
                );
            }
        }
    }
}

#[test]
fn boundness_narrative_agrees_with_sol_numbers() {
    let r = load("torch_cupy_set_full_details.csv");
    let mut seen = std::collections::HashSet::new();
    for k in &r.kernels {
        let c = k.number(SOL, "Compute (SM) Throughput").unwrap();
        let m = k.number(SOL, "Memory Throughput").unwrap();
        let throughput = &build_panels(k)[0];
        let expected = match boundness(c, m) {
            Boundness::Memory => "Memory-bound",
            Boundness::Compute => "Compute-bound",
            Boundness::Balanced => "Balanced",
            Boundness::Latency => "Latency-bound",
        };
        seen.insert(expected);
        assert!(
            throughput.narrative.starts_with(expected),
            "kernel {}: {c} vs {m}: {}",
            k.id,
            throughput.narrative
        );
        // Independent check of the rule itself.
        let independent = if c < 60.0 && m < 60.0 {
            "Latency-bound"
        } else if (c - m).abs() <= 10.0 {
            "Balanced"
        } else if m > c {
            "Memory-bound"
        } else {
            "Compute-bound"
        };
        assert_eq!(expected, independent);
        // The numbers quoted are the table's.
        assert!(throughput
            .narrative
            .contains(&format!("{} %", units::fmt_num(c))));
        assert!(throughput
            .narrative
            .contains(&format!("{} %", units::fmt_num(m))));
        let bars = &throughput.chart.as_ref().unwrap().bars;
        assert_eq!((bars[0].label.as_str(), bars[0].value), ("Compute (SM)", c));
        assert_eq!((bars[1].label.as_str(), bars[1].value), ("Memory", m));
    }
    assert!(seen.len() >= 3, "{seen:?}");
    assert_eq!(
        build_panels(kernel(&r, 7))[0].narrative,
        "Memory-bound: memory throughput 81.33 % of peak vs compute 41.83 %. Duration 41.66 \u{b5}s. DRAM throughput 75.82 % of peak."
            .replace("75.82", &units::fmt_num(kernel(&r, 7).number(SOL, "DRAM Throughput").unwrap()))
    );
    assert!(build_panels(kernel(&r, 10))[0]
        .narrative
        .starts_with("Compute-bound: compute (SM) throughput 90.7 % of peak vs memory 70.15 %."));
    assert!(build_panels(kernel(&r, 15))[0].narrative.starts_with(
        "Latency-bound: compute 34.53 % and memory 12.29 % of peak are both below 60 %"
    ));
}

#[test]
fn occupancy_and_other_narratives() {
    let r = load("torch_cupy_set_full_details.csv");
    let p = build_panels(kernel(&r, 0));
    assert!(
        p[2].narrative.starts_with("Theoretical occupancy 62.5 % (limited by registers: 5 blocks); achieved 50.63 %. Achieved is 11.87 points below theoretical"),
        "{}",
        p[2].narrative
    );
    let chart = p[2].chart.as_ref().unwrap();
    assert_eq!(
        chart.bars.iter().map(|b| b.value).collect::<Vec<_>>(),
        [62.5, 50.63]
    );
    let p10 = build_panels(kernel(&r, 10));
    assert!(p10[2].narrative.starts_with("Theoretical occupancy 18.75 % (limited by registers and shared memory: 1 block); achieved 14.64 %."), "{}", p10[2].narrative);
    let p15 = build_panels(kernel(&r, 15));
    assert!(
        p15[2].narrative.starts_with(
            "Theoretical occupancy 100 % (limited by warps: 16 blocks); achieved 44.42 %."
        ),
        "{}",
        p15[2].narrative
    );
    // Launch, scheduler, instructions quote the table's numbers.
    assert!(p15[1].narrative.starts_with("Grid (32768, 1, 1) × block (128, 1, 1) = 4,194,304 threads; 16 registers per thread; 15.52 waves per SM over 132 SMs."), "{}", p15[1].narrative);
    assert!(
        p15[4].narrative.starts_with(
            "Schedulers had an eligible warp to issue in 39.49 % of cycles and none in 60.51 %"
        ),
        "{}",
        p15[4].narrative
    );
    assert!(
        p15[5]
            .narrative
            .starts_with("6,553,600 instructions executed, 6,606,361 issued"),
        "{}",
        p15[5].narrative
    );
    assert!(
        p15[3]
            .narrative
            .starts_with("Each warp issues an instruction every 17.82 cycles on average"),
        "{}",
        p15[3].narrative
    );
    // Summary: every rule, by estimated speedup.
    let s = &p15[6];
    assert_eq!(s.rules.len(), kernel(&r, 15).rules.len());
    let speedups: Vec<f64> = s.rules.iter().filter_map(|r| r.speedup).collect();
    assert!(speedups.windows(2).all(|w| w[0] >= w[1]), "{speedups:?}");
    assert!(s
        .rules
        .iter()
        .skip_while(|r| r.speedup.is_some())
        .all(|r| r.speedup.is_none()));
    assert!(
        s.narrative.contains(&format!(
            "the largest estimated speedup is {} %",
            units::fmt_num(speedups[0])
        )),
        "{}",
        s.narrative
    );
    // Panel rules belong to the panel's sections.
    assert!(p15[2].rules.iter().all(|r| r.section == "Occupancy"));
    assert!(p15[4]
        .rules
        .iter()
        .any(|r| r.name == "IssueSlotUtilization"));
}

#[test]
fn stall_breakdown_from_raw_page_and_print_details_all() {
    let raw = load("ours_raw.csv");
    let p = build_panels(kernel(&raw, 0));
    let chart = p[3].chart.as_ref().unwrap();
    assert_eq!(chart.unit, "cycles per issued instruction");
    assert_eq!(chart.bars[0].label, "long scoreboard");
    assert!(chart.bars.windows(2).all(|w| w[0].value >= w[1].value));
    assert!(
        p[3].narrative.contains(
            "the largest stall reason is long scoreboard (6.52 cycles per issued instruction)"
        ),
        "{}",
        p[3].narrative
    );
    // Raw-page occupancy via launch__occupancy_limit_* and sm__maximum_warps_per_active_cycle_pct.
    assert!(
        p[2].narrative.starts_with("Theoretical occupancy 100 %"),
        "{}",
        p[2].narrative
    );

    let all = load("details_print_details_all.csv");
    let p = build_panels(kernel(&all, 0));
    let chart = p[3].chart.as_ref().unwrap();
    assert_eq!(
        chart
            .bars
            .iter()
            .map(|b| b.label.as_str())
            .collect::<Vec<_>>(),
        ["Long Scoreboard", "Wait", "Barrier"]
    );
    assert!(
        p[0].narrative
            .starts_with("Memory-bound: memory throughput 85.2 % of peak vs compute 12.1 %."),
        "{}",
        p[0].narrative
    );
    assert!(p[2].narrative.starts_with("Theoretical occupancy 100 % (limited by registers and warps: 6 blocks); achieved 91.5 %."), "{}", p[2].narrative);
    // A kernel with almost nothing still gets seven narratives, none inventing numbers.
    let p = build_panels(kernel(&all, 1));
    assert!(
        p[2].narrative.starts_with("No occupancy metrics"),
        "{}",
        p[2].narrative
    );
    assert!(
        p[6].narrative
            .contains("the largest estimated speedup is 97.83 % (LaunchConfiguration, global)"),
        "{}",
        p[6].narrative
    );
}

#[test]
fn compare_kernels() {
    let r = load("ours_details.csv");
    let (f32k, f16k) = (kernel(&r, 3), kernel(&r, 7));
    let deltas = compare(f32k, f16k);
    assert!(!deltas.is_empty());
    let d = deltas
        .iter()
        .find(|d| d.section == SOL && d.name == "Duration")
        .unwrap();
    let (b, c) = (
        f32k.number(SOL, "Duration").unwrap(),
        f16k.number(SOL, "Duration").unwrap(),
    );
    // Compared in SI: seconds, whatever the export printed (us here).
    assert_eq!(d.unit, "second");
    assert!(close(d.base.as_f64().unwrap(), b * 1e-6, 1e-12));
    assert!(close(d.current.as_f64().unwrap(), c * 1e-6, 1e-12));
    assert!(close(d.delta.unwrap(), (c - b) * 1e-6, 1e-9));
    assert!(close(d.delta_pct.unwrap(), 100.0 * (c - b) / b, 1e-12));
    let text = deltas
        .iter()
        .find(|d| d.name == "Cluster Scheduling Policy")
        .unwrap();
    assert_eq!((text.delta, text.delta_pct), (None, None));
    // Against the same report in base units: compared in SI where the printed units differ.
    let base = load("ours_details_base.csv");
    let deltas = compare(f32k, kernel(&base, 3));
    let d = deltas
        .iter()
        .find(|d| d.section == SOL && d.name == "Duration")
        .unwrap();
    assert_eq!(d.unit, "second");
    assert!(d.delta.unwrap().abs() < 0.01e-6, "{d:?}");
    let cyc = deltas.iter().find(|d| d.name == "Elapsed Cycles").unwrap();
    assert_eq!(
        (cyc.unit.as_str(), cyc.delta, cyc.delta_pct),
        ("cycle", Some(0.0), Some(0.0))
    );
}

// ---------------------------------------------------------------- fuzzing regressions
// Found by `fuzz/fuzz_targets/ncu_csv.rs` (see fuzz/README.md).

#[test]
fn fuzz_si_value_overflow_is_kept_as_unreadable() {
    // A finite printed value whose SI conversion overflows (1e308 Tbyte/second is 1e320
    // byte/second) gave si_value = inf (found by the fuzzer); it then refused the whole report.
    // Now the value is kept as unreadable text, without an SI value. The fuzzer's input, a raw
    // page:
    let raw = concat!(
        "\"ID\",\"Kernel Name\",\"launch__block_dim_x\",\"launch__block_dim_y\",\"launch__block_dim_z\",\"launch__grid_dim_x\",\"launch__grid_dim_y\",\"launch__grid_dim_z\",\"device__attribute_compute_capability_major\",\"device__attribute_compute_capability_minor\",\"gpu__time_duration.sum\",\"dram__bytes.sum.per_second\"\n",
        "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"nsecond\",\"Tbyte/second\"\n",
        "\"0\",\"k\",\"256\",\"1\",\"1\",\"16\",\"1\",\"1\",\"9\",\"0\",\"5,290\",1e308\n",
        "\"1\",\"k2\",\"32\",\"1\",\"1\",\"1\",\"1\",\"1\",\"9\",\"0\",\"1e3\",\"nan\"\n",
    );
    let r = import_bytes(raw.as_bytes()).unwrap();
    assert_eq!(r.kernels.len(), 2);
    let dram = r.kernels[0]
        .metric_named("dram__bytes.sum.per_second")
        .unwrap();
    assert!(dram.unreadable());
    assert_eq!(dram.value, MetricValue::Text("1e308".into()));
    assert_eq!((dram.si_value, dram.si_unit()), (None, None));
    let duration = r.kernels[0].metric_named("gpu__time_duration.sum").unwrap();
    assert!(!duration.unreadable());
    assert!(close(duration.si_value.unwrap(), 5.29e-6, 1e-12));
    // `nan` is text, not an unreadable number.
    let nan = r.kernels[1]
        .metric_named("dram__bytes.sum.per_second")
        .unwrap();
    assert!(!nan.unreadable());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("1 value(s) are not finite") && w.contains("line 3")),
        "{:?}",
        r.warnings
    );
    // The same on the details page and in a summary's average.
    let text = format!("{HEADER}\n{}\n", row("0", "Bytes", "Pbyte", "1e300"));
    let r = import_bytes(text.as_bytes()).unwrap();
    assert!(r.kernels[0].metrics[0].unreadable());
    let summary = "\"Kernel Name\",\"Block Size\",\"Grid Size\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Minimum\",\"Maximum\",\"Average\"\n\"k\",\"1\",\"1\",\"9.0\",\"S\",\"Bytes\",\"Tbyte\",\"1\",\"1e999\",\"1e300\"\n";
    let r = import_bytes(summary.as_bytes()).unwrap();
    let m = &r.kernels[0].metrics[0];
    assert!(m.unreadable());
    assert_eq!((m.min(), m.max()), (Some(1.0), None));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("2 value(s)") && w.contains("line 2, 'Bytes' = '1e300'")),
        "{:?}",
        r.warnings
    );
    // Large values whose SI conversion stays finite still import, and tiny ones underflow
    // to a finite value.
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        row("0", "Bytes", "Pbyte", "1e290"),
        row("0", "Duration", "psecond", "1e-300")
    );
    let r = import_bytes(text.as_bytes()).unwrap();
    let si: Vec<f64> = r.kernels[0]
        .metrics
        .iter()
        .map(|m| m.si_value.unwrap())
        .collect();
    assert!(si.iter().all(|v| v.is_finite()), "{si:?}");
    assert!(close(si[0], 1e305, 1e-15), "{si:?}");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn import_keeps_a_report_with_an_overflowing_metric() {
    // Issue 19: one odd value (`1e400`, `inf`) refused the whole report. Now it is kept,
    // marked unreadable, and every other metric is intact.
    for bad in ["1e400", "-1e400", "inf", "-Infinity"] {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n",
            row("0", "Duration", "us", "1.5"),
            row("0", "SM Frequency", "Ghz", bad),
            row("0", "Memory Throughput", "%", "85.2"),
        );
        let r = import_bytes(text.as_bytes()).unwrap_or_else(|e| panic!("{bad}: {e}"));
        let k = &r.kernels[0];
        assert_eq!(k.metrics.len(), 3, "{bad}");
        let freq = metric(k, SOL, "SM Frequency");
        assert!(freq.unreadable(), "{bad}");
        assert_eq!(freq.value, MetricValue::Text(bad.into()));
        assert_eq!((freq.si_value, freq.si_unit()), (None, None));
        assert_eq!(k.number(SOL, "SM Frequency"), None);
        let duration = metric(k, SOL, "Duration");
        assert!(!duration.unreadable());
        assert!(close(duration.si_value.unwrap(), 1.5e-6, 1e-12));
        assert_eq!(k.number(SOL, "Memory Throughput"), Some(85.2));
        let w = r.warnings.join("\n");
        assert!(
            w.contains("line 3, 'SM Frequency'") && w.contains(bad),
            "{bad}: {w}"
        );
        // JSON marks it, and reads back the same.
        let json = serde_json::to_value(freq).unwrap();
        assert_eq!(json["unreadable"], true);
        assert_eq!(json["value"], bad);
        assert!(json["si_value"].is_null());
        assert!(serde_json::to_value(duration)
            .unwrap()
            .get("unreadable")
            .is_none());
        let back: Metric = serde_json::from_value(json).unwrap();
        assert_eq!(&back, freq);
        let report: NcuReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(report, r);
    }
    // A rule's speedup of 1e999 is dropped, the rule kept.
    let rule = format!(
        "{HEADER}\n\"0\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"Occupancy\",\"\",\"\",\"\",\"R\",\"OPT\",\"d\",\"local\",\"1e999\"\n"
    );
    let r = import_bytes(rule.as_bytes()).unwrap();
    assert_eq!(r.kernels[0].rules.len(), 1);
    assert_eq!(r.kernels[0].rules[0].speedup, None);
    assert!(r.warnings.iter().any(|w| w.contains("'Estimated Speedup'")));
}

#[test]
fn panels_show_an_unreadable_value_as_such() {
    let text = format!(
        "{HEADER}\n{}\n{}\n{}\n",
        row("0", "Duration", "us", "1.5"),
        row("0", "SM Frequency", "Ghz", "1e400"),
        row("0", "Compute (SM) Throughput", "%", "12.1"),
    );
    let r = import_bytes(text.as_bytes()).unwrap();
    let panels = build_panels(&r.kernels[0]);
    let rows: Vec<&PanelRow> = panels
        .iter()
        .flat_map(|p| &p.metrics)
        .filter(|row| row.name == "SM Frequency")
        .collect();
    assert!(!rows.is_empty(), "no panel shows SM Frequency");
    for row in rows {
        assert_eq!(
            row.value,
            MetricValue::Text("unreadable value (1e400)".into())
        );
        assert_eq!(row.si_value, None);
    }
    // The other rows keep their numbers.
    assert!(panels
        .iter()
        .flat_map(|p| &p.metrics)
        .any(|row| row.name == "Duration" && row.value == MetricValue::Number(1.5)));
}

#[test]
fn fuzz_empty_kernel_name_is_refused() {
    // A row whose 'Kernel Name' field is empty (or blank) made a kernel with an empty name
    // (and short name). Minimised from the fuzzer's input: details, raw and summary layouts.
    for name in ["", "  "] {
        let text = format!(
            "{HEADER}\n{}\n",
            row("0", "Duration", "us", "1.5").replace("k(float*)", name)
        );
        let e = err(text.as_bytes());
        assert!(
            matches!(&e, NcuError::BadValue { line: 2, column, .. } if column == "Kernel Name"),
            "{name:?}: {e}"
        );
        assert!(e.to_string().contains("empty kernel name"), "{e}");
    }
    let raw = "\"ID\",\"Kernel Name\",\"m\"\n\"\",\"\",\"us\"\n\"0\",\"\",\"1\"\n";
    assert!(
        matches!(err(raw.as_bytes()), NcuError::BadValue { line: 3, ref column, .. } if column == "Kernel Name")
    );
    let summary = "\"Kernel Name\",\"Block Size\",\"Grid Size\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Minimum\",\"Maximum\",\"Average\"\n\"\",\"1\",\"1\",\"9.0\",\"S\",\"D\",\"us\",\"1\",\"1\",\"1\"\n";
    assert!(
        matches!(err(summary.as_bytes()), NcuError::BadValue { line: 2, ref column, .. } if column == "Kernel Name")
    );
    // A later row of an already named kernel (same ID) may leave the name out, as before.
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        row("0", "Duration", "us", "1.5"),
        row("0", "Bytes", "byte", "2").replace("k(float*)", "")
    );
    let r = import_bytes(text.as_bytes()).unwrap();
    assert_eq!((r.kernels.len(), r.kernels[0].metrics.len()), (1, 2));
    assert_eq!(r.kernels[0].name, "k(float*)");
}

/// Issue 26: a raw export with metric instances (`--print-metric-instances values`) showed
/// "44 (44)" and "62.50 (62.50)" without units, and the launch panel lost registers and waves.
#[test]
fn a_raw_export_with_metric_instances_is_read_whole() {
    let plain = include_str!("../../tests/data/ncu/ours_raw.csv");
    // Every numeric value of the kernel rows (line 3 on) followed by its instance list, as ncu
    // prints it with --print-metric-instances values.
    let mut out = String::new();
    for (i, line) in plain.lines().enumerate() {
        if i < 2 {
            out.push_str(line);
        } else {
            let fields: Vec<String> = line
                .split("\",\"")
                .enumerate()
                .map(|(col, f)| {
                    let bare = f.trim_matches('"');
                    let numeric = matches!(
                        crate::ncu::units::parse_number(bare),
                        crate::ncu::units::Number::Finite(_)
                    );
                    if col >= 11 && numeric && !bare.contains(',') {
                        f.replace(bare, &format!("{bare} ({bare}; {bare})"))
                    } else {
                        f.to_string()
                    }
                })
                .collect();
            out.push_str(&fields.join("\",\""));
        }
        out.push('\n');
    }
    assert!(out.contains(" (32; 32)"), "the instances were not written");
    let with = import_str(&out).unwrap();
    let without = import_str(plain).unwrap();
    assert_eq!(with.kernels.len(), without.kernels.len());
    let (k, k0) = (&with.kernels[0], &without.kernels[0]);
    let regs = k.metric_named("launch__registers_per_thread").unwrap();
    assert_eq!(regs.value.as_f64(), Some(32.0));
    let waves = k.metric_named("launch__waves_per_multiprocessor").unwrap();
    assert_eq!(
        waves.value.as_f64(),
        k0.metric_named("launch__waves_per_multiprocessor")
            .unwrap()
            .value
            .as_f64()
    );
    let panels = KernelPanels::of(k, &[]);
    let plain_panels = KernelPanels::of(k0, &[]);
    let launch = |p: &KernelPanels| {
        p.panels
            .iter()
            .find(|p| p.id == "launch")
            .map(|p| {
                p.metrics
                    .iter()
                    .map(|r| r.shown.clone())
                    .collect::<Vec<_>>()
            })
            .unwrap()
    };
    assert_eq!(launch(&panels), launch(&plain_panels));
    assert!(
        launch(&panels).iter().any(|s| s == "32 register/thread"),
        "{:?}",
        launch(&panels)
    );
    assert!(!launch(&panels).iter().any(|s| s.contains('(')));
}

/// Issue 26: rule URLs were plain text.
#[test]
fn rule_addresses_are_cut_out_as_links() {
    let parts = split_links(
        "See the guide (https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#sol). More: http://x.y/z, end",
    );
    assert_eq!(
        parts,
        vec![
            ("See the guide (".to_string(), false),
            (
                "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#sol".to_string(),
                true
            ),
            ("). More: ".to_string(), false),
            ("http://x.y/z".to_string(), true),
            (", end".to_string(), false),
        ]
    );
    assert_eq!(
        split_links("no links"),
        vec![("no links".to_string(), false)]
    );
}

/// Issue 26: there was no way from an ncu occupancy panel to the calculator with that
/// kernel's launch.
#[test]
fn a_kernels_launch_opens_in_the_calculator() {
    let r = import_str(include_str!("../../tests/data/ncu/ours_details.csv")).unwrap();
    let k = &r.kernels[0];
    let p = KernelPanels::of(k, &[]);
    let launch = p.calculator_launch().unwrap();
    assert_eq!(launch.cc, k.cc);
    let block = k
        .metric("Launch Statistics", "Block Size")
        .unwrap()
        .value
        .as_f64()
        .unwrap();
    assert_eq!(f64::from(launch.threads), block);
    let regs = k
        .metric("Launch Statistics", "Registers Per Thread")
        .unwrap()
        .value
        .as_f64()
        .unwrap();
    assert_eq!(f64::from(launch.registers), regs);
    // The label names the kernel with its ID and duration.
    assert!(p.picker_label().starts_with(&format!("#{} ", k.id)));
    assert!(
        p.picker_label().contains(" \u{b7} "),
        "{}",
        p.picker_label()
    );
}

/// Issue 26: the app's own Profile ran 6 sections, so the warp-state panel said "No warp state
/// metrics" and the stall breakdown was never collected. `profile_job_h100.csv` is what the
/// Profile button collects now (the default sections and the stall-reason metrics), made by the
/// profile job through `serve --http` on an H100 (bench/profile_panels.py): every panel has
/// rows and the warp-state panel ranks the stall reasons.
#[test]
fn the_profile_jobs_export_fills_all_seven_panels_with_the_stall_reasons() {
    let r = load("profile_job_h100.csv");
    assert_eq!(r.kernels.len(), 1);
    let p = KernelPanels::of(&r.kernels[0], &[]);
    assert_eq!(p.panels.len(), 7);
    for panel in &p.panels {
        assert!(!panel.metrics.is_empty(), "panel {} has no rows", panel.id);
        assert!(
            !panel.narrative.starts_with("No "),
            "panel {}: {}",
            panel.id,
            panel.narrative
        );
    }
    let warp = p.panels.iter().find(|x| x.id == "warp_state").unwrap();
    let chart = warp.chart.as_ref().unwrap();
    assert!(chart.bars.len() >= 10, "{} stall reasons", chart.bars.len());
    assert_eq!(chart.unit, "cycles per issued instruction");
}

/// Issue 27: LayerNorm+GELU FP16 before and after its rewrite, compared as Act IV compares two
/// imports. `ln_gelu_f16_after_h100.csv` is the app's own Profile of the kernel as shipped now
/// (8192×4096, through `serve --http`); `ln_gelu_f16_before_h100.csv` the same ncu options on
/// the kernel shipped before (its verbatim copy in bench/ln_variants.cu), both on an H100 on
/// 2026-11-27 (bench/profile_before_after.py). The registers fall from 96 to 62 per thread,
/// so the theoretical occupancy rises from 31.25 % to 50 % and the kernel runs shorter.
#[test]
fn layernorm_gelu_f16_before_and_after_compare_in_act_iv() {
    let before = load("ln_gelu_f16_before_h100.csv");
    let after = load("ln_gelu_f16_after_h100.csv");
    assert_eq!(before.kernels.len(), 1);
    assert_eq!(after.kernels.len(), 1);
    let a = KernelPanels::of(&before.kernels[0], &[]);
    let b = KernelPanels::of(&after.kernels[0], &[]);
    let deltas = compare_panels(&a, &b);
    let row = |label: &str| {
        deltas
            .iter()
            .find(|d| d.label == label)
            .unwrap_or_else(|| panic!("no {label} row in the comparison"))
    };
    let regs = row("Registers Per Thread");
    assert_eq!(
        (regs.a_shown.as_str(), regs.b_shown.as_str()),
        ("96 register/thread", "62 register/thread"),
        "{regs:?}"
    );
    let theo = row("Theoretical Occupancy");
    assert_eq!(
        theo.ratio.map(|r| (r * 100.0).round()),
        Some(160.0),
        "{theo:?}"
    );
    let achieved = row("Achieved Occupancy");
    assert!(achieved.ratio.unwrap() > 1.4, "{achieved:?}");
    let duration = row("Duration");
    assert!(duration.ratio.unwrap() < 0.85, "{duration:?}");
    // Each side's launch opens in the calculator with its own register count.
    assert_eq!(a.calculator_launch().unwrap().registers, 96);
    assert_eq!(b.calculator_launch().unwrap().registers, 62);
}

/// Every raw-page fixture and the details export of the same profile (its twin). A raw
/// fixture missing here fails `raw_panel_rows_equal_their_details_twin`.
const RAW_TWINS: &[(&str, &str)] = &[("ours_raw.csv", "ours_details_base.csv")];

/// Issue 37: a raw export's Mem Busy and Max Bandwidth were exchanged (kernel 0: 14.86 % / 11.21 %
/// against the details page's 11.21 % / 14.86 %). For each raw fixture, every panel row of its
/// import equals the same row of its details twin (the same kernels exported both ways), in SI
/// units within the printed digits, and the two rows are there in both.
#[test]
fn raw_panel_rows_equal_their_details_twin() {
    let dir = data("");
    let mut raw_files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".csv"))
        .filter(|n| {
            std::fs::read(dir.join(n))
                .ok()
                .and_then(|b| import_bytes(&b).ok())
                .is_some_and(|r| r.format == Format::Raw)
        })
        .collect();
    raw_files.sort();
    let mut listed: Vec<String> = RAW_TWINS.iter().map(|(r, _)| r.to_string()).collect();
    listed.sort();
    assert_eq!(
        raw_files, listed,
        "every raw fixture has its details twin in RAW_TWINS"
    );
    for (raw_name, details_name) in RAW_TWINS {
        raw_rows_equal_details(raw_name, details_name);
    }
}

fn raw_rows_equal_details(raw_name: &str, details_name: &str) {
    let raw = load(raw_name);
    let details = load(details_name);
    assert_eq!(raw.format, Format::Raw, "{raw_name}");
    assert_eq!(details.format, Format::Details, "{details_name}");
    assert_eq!(raw.kernels.len(), details.kernels.len());
    let (mut compared, mut mem_rows) = (0usize, 0usize);
    for (r, d) in raw.kernels.iter().zip(&details.kernels) {
        let (rp, dp) = (build_panels(r), build_panels(d));
        for (a, b) in rp.iter().zip(&dp) {
            assert_eq!(a.id, b.id);
            for row in &a.metrics {
                let Some(twin) = b.metrics.iter().find(|x| x.label == row.label) else {
                    continue;
                };
                if let (Some(x), Some(y)) = (row.si_value, twin.si_value) {
                    let scale = x.abs().max(y.abs()).max(1e-30);
                    assert!(
                        (x - y).abs() <= 5e-3 * scale + 5e-3,
                        "{raw_name} kernel {} panel {} row {}: raw {x} against details {y}",
                        r.id,
                        a.id,
                        row.label
                    );
                    compared += 1;
                    if row.label == "Mem Busy" || row.label == "Max Bandwidth" {
                        mem_rows += 1;
                    }
                }
            }
        }
    }
    assert_eq!(
        mem_rows,
        2 * raw.kernels.len(),
        "{raw_name}: Mem Busy and Max Bandwidth in every kernel"
    );
    assert!(
        compared > 20 * raw.kernels.len(),
        "{raw_name}: {compared} rows compared"
    );
}

/// Issue 37: comparing a details import with a raw import of the same kernels said "These two
/// kernels have no panel metric in common": rows were matched by the section and name the
/// export printed, which differ between the pages. Every row both panels show is compared.
#[test]
fn compare_of_a_details_and_a_raw_import_shows_every_common_row() {
    for (raw_name, details_name) in RAW_TWINS {
        let raw = load(raw_name);
        let details = load(details_name);
        for (r, d) in raw.kernels.iter().zip(&details.kernels) {
            let (a, b) = (KernelPanels::of(d, &[]), KernelPanels::of(r, &[]));
            let common: usize = a
                .panels
                .iter()
                .map(|pa| {
                    let pb = b.panels.iter().find(|p| p.id == pa.id);
                    pa.metrics
                        .iter()
                        .filter(|ra| {
                            pb.is_some_and(|pb| pb.metrics.iter().any(|x| x.label == ra.label))
                        })
                        .count()
                })
                .sum();
            let deltas = compare_panels(&a, &b);
            assert!(
                common > 20,
                "{raw_name} kernel {}: {common} common rows",
                r.id
            );
            assert_eq!(deltas.len(), common, "{raw_name} kernel {}", r.id);
            for label in [
                "Mem Busy",
                "Max Bandwidth",
                "Duration",
                "Registers Per Thread",
            ] {
                let row = deltas.iter().find(|x| x.label == label);
                assert!(
                    row.is_some_and(|x| x.ratio.is_some_and(|q| (q - 1.0).abs() < 0.01)),
                    "{raw_name} kernel {} {label}: {row:?}",
                    r.id
                );
            }
        }
    }
}

/// Issue 37: the calculator counted 12 shared-memory blocks where ncu said 7 (ncu's launch ran
/// with a smaller carveout). With the carveout the launch ran with ("open in the calculator"
/// takes it), the calculator's shared-memory block limit is ncu's for every kernel of the real
/// exports.
#[test]
fn the_calculator_at_ncus_carveout_counts_ncus_shared_memory_blocks() {
    use crate::occupancy::{occupancy, parse_cc, GpuLimits, OccupancyInput};
    let mut checked = 0;
    for name in [
        "ours_details.csv",
        "ours_details_base.csv",
        "ln_gelu_f16_before_h100.csv",
        "ln_gelu_f16_after_h100.csv",
        "torch_cupy_set_full_details.csv",
    ] {
        for k in &load(name).kernels {
            let p = KernelPanels::of(k, &[]);
            let Some(launch) = p.calculator_launch() else {
                continue;
            };
            let Some(ncu_blocks) = p
                .panels
                .iter()
                .flat_map(|x| x.metrics.iter())
                .find(|r| r.label == "Block Limit Shared Mem")
                .and_then(|r| r.si_value)
            else {
                continue;
            };
            let (a, b) = parse_cc(&launch.cc).unwrap();
            let limits = GpuLimits::for_cc(a, b).unwrap();
            let carveout = launch.carveout_bytes.expect("the launch's carveout");
            let input = OccupancyInput {
                threads_per_block: launch.threads,
                registers_per_thread: launch.registers,
                shared_mem_per_block: launch.shared_bytes,
                carveout_pct: Some(limits.carveout_pct_for(carveout).unwrap_or_else(|| {
                    panic!("{name} kernel {}: no carveout option of {carveout} B", k.id)
                })),
            };
            let out = occupancy(&limits, &input).unwrap();
            assert_eq!(
                out.blocks_by_shared_memory.map(f64::from),
                Some(ncu_blocks),
                "{name} kernel {}: {launch:?}",
                k.id
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} kernels checked");
}

/// Issue 37: ncu's text report (printed without --csv) was refused with no hint.
#[test]
fn a_text_report_is_refused_with_the_csv_hint() {
    let text = "==PROF== Connected to process 4242 (/home/lab/app)\n\
  relu_f32(const float *, float *, int) (4096, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n\
    Section: GPU Speed Of Light Throughput\n\
    ----------------------- ------------- ------------\n\
    Metric Name               Metric Unit Metric Value\n\
    ----------------------- ------------- ------------\n\
    DRAM Frequency                    Ghz         2.62\n\
    Duration                           us         5.31\n\
    Section: Launch Statistics\n\
    Block Size                                     256\n";
    let e = err(text.as_bytes()).to_string();
    assert!(
        e.contains("text report") && e.contains("--csv") && e.contains("--page details"),
        "{e}"
    );
    // An unrelated text file does not get the hint.
    let other = err(b"hello\nworld\n").to_string();
    assert!(!other.contains("text report"), "{other}");
}

/// Issue 37: Act IV's imports never named the GPU or the compute capability, even when the
/// export says "NVIDIA H100 80GB HBM3": an H200 profile and the H100 example looked alike.
#[test]
fn an_import_names_the_gpu_and_compute_capability_its_export_gives() {
    let raw = ProfiledOn::of(&load("ours_raw.csv"));
    assert_eq!(raw.gpus, vec!["NVIDIA H100 80GB HBM3".to_string()]);
    assert_eq!(raw.compute_capabilities, vec!["9.0".to_string()]);
    assert_eq!(raw.words(), "NVIDIA H100 80GB HBM3, compute capability 9.0");
    let details = ProfiledOn::of(&load("ours_details.csv"));
    assert!(details.gpus.is_empty(), "{details:?}");
    assert_eq!(
        details.words(),
        "compute capability 9.0 (the export names no GPU)"
    );
    assert_eq!(
        ProfiledOn::default().words(),
        "the export names neither its GPU nor its compute capability"
    );
}
