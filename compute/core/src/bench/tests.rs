//! The committed H100 runs (`docs/results/*-h100-2026-11-23.*`) through every reader: parsed,
//! written and parsed again; printed by the terminal tables and compared with the committed
//! terminal output; laid out in the page's tables, with the same labels as the terminal's.

use super::conv::{fill_speedups, finish_row, parse_peer_convs, ConvBench, LadderLayer, PeerConv};
use super::duel::{best_peer_ms, parse_peer_rows, DuelBench};
use super::infer::parse_peer_lines;
use super::kernels::{parse_kernel_timings, parse_peer_ops, KernelsBench, Op, TORCH_EAGER};
use crate::inference::InferenceReport;
use crate::model::Activation;

const CONV_JSON: &str = include_str!("../../../../docs/results/conv-ladder-h100-2026-11-23.json");
const CONV_TXT: &str = include_str!("../../../../docs/results/conv-ladder-h100-2026-11-23.txt");
const KERNELS_JSON: &str =
    include_str!("../../../../docs/results/kernels-bench-h100-2026-11-24-issue17.json");
const KERNELS_TXT: &str =
    include_str!("../../../../docs/results/kernels-bench-h100-2026-11-24-issue17.txt");
const OLD_KERNELS_JSON: &str =
    include_str!("../../../../docs/results/kernels-h100-2026-11-23.json");
const INFER_JSON: &str = include_str!("../../../../docs/results/infer-h100-2026-11-23.json");
const INFER_TXT: &str = include_str!("../../../../docs/results/infer-h100-2026-11-23.txt");
const DUEL_JSON: &str = include_str!("../../../../docs/results/gpu-duel-h100-2026-11-23.json");

fn conv() -> ConvBench {
    ConvBench::parse(CONV_JSON).expect("the committed ladder parses")
}

/// Parse, write, parse again: the same value.
fn round_trips<T>(json: &str, parse: fn(&str) -> Result<T, super::ParseError>)
where
    T: serde::Serialize + PartialEq + std::fmt::Debug,
{
    let first = parse(json).expect("the committed file parses");
    let again = serde_json::to_string(&first).expect("serializes");
    let second = parse(&again).expect("what we wrote parses");
    assert_eq!(first, second);
}

#[test]
fn every_committed_report_round_trips() {
    round_trips(CONV_JSON, ConvBench::parse);
    round_trips(KERNELS_JSON, KernelsBench::parse);
    round_trips(INFER_JSON, InferenceReport::parse);
    round_trips(DUEL_JSON, DuelBench::parse);
}

/// The files the Kernel Reveal page compiles in (`app-ui/src/pages/kernels/results.rs`
/// `include_str!`s these same paths) are the reports its sections read.
#[test]
fn the_included_runs_are_the_reports_each_section_reads() {
    let k = KernelsBench::parse(KERNELS_JSON).expect("the kernel benchmark");
    assert!(k.ours.device.contains("H100") && !k.throughput().is_empty());
    let l = ConvBench::parse(CONV_JSON).expect("the convolution ladder");
    assert_eq!(l.gpu_tables().len(), 4);
    let i = InferenceReport::parse(INFER_JSON).expect("the inference benchmark");
    assert!(i.device.contains("H100") && !i.lines().is_empty());
}

#[test]
fn the_committed_files_hold_every_row() {
    let c = conv();
    assert_eq!(
        (c.ours.rows.len(), c.ours.checks.len(), c.peers.len()),
        (44, 40, 16)
    );
    let k = KernelsBench::parse(KERNELS_JSON).expect("parses");
    assert_eq!(
        (k.ours.checks.len(), k.ours.bench.len(), k.peers.len()),
        (60, 14, 24),
        "12 kernels and a copy ceiling per dtype"
    );
    let d = DuelBench::parse(DUEL_JSON).expect("parses");
    assert_eq!((d.ours.runs.len(), d.peers.len()), (4, 12));
    assert_eq!(
        d.best_peer_ms,
        best_peer_ms(&d.peers, d.ours.config.batch),
        "the stored best peer is the one the CLI computes"
    );
}

/// The (layer, implementation, batch) of every row the terminal table prints per layer.
fn terminal_rows(text: &str) -> Vec<(String, String, usize)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let layer = w.next()?;
            LadderLayer::parse(layer).ok()?;
            let implementation = w.next()?;
            let _dtypes = w.next()?;
            let batch = w.next()?.parse().ok()?;
            Some((layer.to_string(), implementation.to_string(), batch))
        })
        .collect()
}

/// The (layer, implementation, batch) of every line of the page's tables.
fn page_rows(c: &ConvBench) -> Vec<(String, String, usize)> {
    c.gpu_tables()
        .iter()
        .flat_map(|t| {
            t.lines.iter().map(|l| {
                (
                    t.layer.name().to_string(),
                    l.implementation.clone(),
                    l.batch,
                )
            })
        })
        .collect()
}

#[test]
fn the_terminal_table_reproduces_the_committed_ladder_output() {
    assert_eq!(conv().table(), CONV_TXT);
}

#[test]
fn issue_14_the_terminal_and_the_page_name_the_committed_ladder_rows_alike() {
    let c = conv();
    let at_batch: Vec<_> = terminal_rows(&c.table())
        .into_iter()
        .filter(|r| r.2 == c.ours.batch)
        .collect();
    assert_eq!(
        at_batch.len(),
        4 * (9 + 4),
        "9 rows of ours and 4 of PyTorch per layer"
    );
    assert_eq!(at_batch, page_rows(&c));
    // The committed terminal output names them so too.
    let committed: Vec<_> = terminal_rows(CONV_TXT)
        .into_iter()
        .filter(|r| r.2 == c.ours.batch)
        .collect();
    assert_eq!(committed, page_rows(&c));
    // The best cuDNN of the page's captions is the one the terminal's summary names.
    let tables = c.gpu_tables();
    for v in c.ours_vs_cudnn() {
        let t = tables.iter().find(|t| t.layer == v.layer).expect("a table");
        assert_eq!(t.best_cudnn.as_ref(), Some(&v.cudnn), "{}", v.layer.name());
    }
}

#[test]
fn issue_14_an_f32_channels_last_peer_has_one_label_in_the_terminal_and_on_the_page() {
    let mut c = conv();
    let mut p = c
        .peers
        .iter()
        .find(|p| p.dtype == "float32" && p.tf32 && p.layer() == Some(LadderLayer::LabConv2))
        .cloned()
        .expect("an FP32 TF32 row of lab_conv2");
    p.channels_last = true;
    p.ms = 0.01; // the fastest cuDNN: named in the captions and the summary too
    c.peers.push(p.clone());
    let label = "pytorch_cudnn_f32_channels_last_tf32";
    assert_eq!(p.label(), label);
    let terminal = c.table();
    assert!(
        terminal_rows(&terminal)
            .iter()
            .any(|r| r.0 == "lab_conv2" && r.1 == label),
        "{terminal}"
    );
    assert!(
        terminal.contains(&format!("cuDNN 0.0100 ms ({label})")),
        "{terminal}"
    );
    let tables = c.gpu_tables();
    let conv2 = &tables[1];
    assert_eq!(conv2.layer, LadderLayer::LabConv2);
    assert!(conv2
        .lines
        .iter()
        .any(|l| l.implementation == label && l.is_peer));
    assert_eq!(conv2.best_cudnn.as_ref().map(|b| b.0.as_str()), Some(label));
    assert_eq!(
        terminal_rows(&terminal)
            .into_iter()
            .filter(|r| r.2 == c.ours.batch)
            .collect::<Vec<_>>(),
        page_rows(&c)
    );
}

#[test]
fn peer_labels_name_dtype_layout_then_math() {
    let row = |dtype: &str, channels_last, tf32| PeerConv {
        implementation: "cudnn".into(),
        n: 1,
        cin: 32,
        cout: 64,
        hw: 13,
        k: 3,
        dtype: dtype.into(),
        channels_last,
        tf32,
        ms: 1.0,
    };
    assert_eq!(
        row("float16", true, true).label(),
        "pytorch_cudnn_f16_channels_last"
    );
    assert_eq!(row("float16", false, false).label(), "pytorch_cudnn_f16");
    assert_eq!(
        row("float32", false, true).label(),
        "pytorch_cudnn_f32_tf32"
    );
    assert_eq!(
        row("float32", false, false).label(),
        "pytorch_cudnn_f32_strict"
    );
    assert_eq!(
        row("float32", true, false).label(),
        "pytorch_cudnn_f32_channels_last_strict"
    );
    assert_eq!(
        row("bfloat16", true, false).label(),
        "pytorch_cudnn_bf16_channels_last"
    );
    assert_eq!(row("float16", true, true).dtypes(), "f16/f16");
}

#[test]
fn the_committed_ladder_gives_the_page_one_table_per_layer() {
    let c = conv();
    let (n, passed, max_rel) = c.check_totals();
    assert!(c.failed_checks().is_empty());
    assert!(
        n > 0 && passed == n && max_rel < 1e-2,
        "{n} {passed} {max_rel}"
    );
    let tables = c.gpu_tables();
    assert_eq!(tables.len(), 4);
    for t in &tables {
        let rungs: Vec<u8> = t.lines.iter().filter_map(|l| l.rung).collect();
        assert_eq!(rungs, [1, 2, 3, 4, 5], "{}", t.layer.name());
        assert!(t
            .lines
            .iter()
            .all(|l| !l.implementation.starts_with("cpu_")));
        assert_eq!(t.lines.iter().filter(|l| l.is_peer).count(), 4);
        let (_, best) = t.best_cudnn.clone().expect("a cuDNN time");
        assert!(t.lines.iter().filter(|l| l.is_cudnn).all(|l| l.ms >= best));
        assert!(t
            .lines
            .iter()
            .filter(|l| l.is_peer)
            .all(|l| l.tflops.is_some() && l.vs_rung1.is_some()));
    }
    // lab conv2's fastest cuDNN is PyTorch's FP16 channels-last (0.136 ms): rung 4 is slower.
    let conv2 = &tables[1];
    assert_eq!(
        conv2.best_cudnn.as_ref().map(|b| b.0.as_str()),
        Some("pytorch_cudnn_f16_channels_last")
    );
    let rung4 = conv2
        .lines
        .iter()
        .find(|l| l.rung == Some(4))
        .expect("rung 4");
    assert!(rung4.vs_cudnn.is_some_and(|v| v < 1.0));
    // The terminal's tables keep the CPU rows, after cuDNN's and before PyTorch's.
    let all = c.tables();
    let names: Vec<&str> = all[0]
        .lines
        .iter()
        .map(|l| l.implementation.as_str())
        .collect();
    assert_eq!(names[9..11], ["cpu_naive_f64", "cpu_im2col_gemm"]);
    // The plots read the same numbers.
    assert_eq!(c.layers(), LadderLayer::ALL.to_vec());
    assert_eq!(c.rung_ms(LadderLayer::LabConv2, 4), Some(rung4.ms));
}

#[test]
fn layers_have_the_issue_shapes_and_round_trip_their_names() {
    let s = LadderLayer::LabConv1.shape();
    assert_eq!((s.c_in, s.c_out, s.h_out(), s.k), (1, 32, 26, 3));
    // conv1 at batch 10,000 writes 433 MB of FP16 (the issue's floor).
    assert_eq!(10_000 * s.out_len() * 2, 432_640_000);
    assert_eq!(LadderLayer::LenetC1.shape().h_out(), 80);
    assert_eq!(LadderLayer::LenetC3.shape().h_out(), 34);
    for l in LadderLayer::ALL {
        assert_eq!(LadderLayer::parse(l.name()).ok(), Some(l));
    }
    assert!(LadderLayer::parse("conv3").is_err());
}

#[test]
fn speedups_are_relative_to_rung1_of_the_same_layer() {
    let mk =
        |layer: LadderLayer, rung, ms| finish_row(layer, "r", rung, 100, (4, 4), (ms, ms, ms, 1));
    let mut rows = vec![
        mk(LadderLayer::LabConv1, Some(1), 10.0),
        mk(LadderLayer::LabConv1, Some(4), 2.0),
        mk(LadderLayer::LabConv2, Some(4), 1.0),
    ];
    fill_speedups(&mut rows);
    assert_eq!(rows[0].speedup_vs_rung1, Some(1.0));
    assert_eq!(rows[1].speedup_vs_rung1, Some(5.0));
    assert_eq!(rows[2].speedup_vs_rung1, None);
    // conv1, 100 images: 2·100·21632·9 FLOPs over (100·784 + 288)·4 + 100·21632·4 bytes.
    let r = &rows[0];
    let want =
        2.0 * 100.0 * 21632.0 * 9.0 / ((100.0 * 784.0 + 288.0) * 4.0 + 100.0 * 21632.0 * 4.0);
    assert!((r.intensity - want).abs() < 1e-9, "{}", r.intensity);
}

#[test]
fn peer_conv_rows_parse_and_map_onto_layers() {
    let out = r#"{"kind": "ceiling", "name": "d2d_copy_1GiB", "ms": 0.7, "gbps": 2999}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 32, "cout": 64, "hw": 13, "k": 3, "dtype": "float16", "channels_last": true, "tf32": true, "ms": 0.137, "tflops": 300}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 1, "cout": 4, "hw": 86, "k": 7, "dtype": "float32", "channels_last": false, "tf32": false, "ms": 7.7, "tflops": 3}
not json
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 1, "cout": 4, "hw": 86, "k": 7, "dtype": "float32", "ms": -1}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 3, "cout": 3, "hw": 9, "k": 3, "dtype": "float32", "channels_last": false, "tf32": false, "ms": 1.0}"#;
    let rows = parse_peer_convs(out);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].layer(), Some(LadderLayer::LabConv2));
    assert_eq!(rows[0].label(), "pytorch_cudnn_f16_channels_last");
    assert_eq!(rows[1].layer(), Some(LadderLayer::LenetC1));
    assert_eq!(rows[1].label(), "pytorch_cudnn_f32_strict");
    assert_eq!(rows[2].layer(), None);
    assert_eq!(rows[2].tflops(), None);
}

#[test]
fn the_terminal_table_reproduces_the_committed_kernel_output() {
    let k = KernelsBench::parse(KERNELS_JSON).expect("parses");
    assert_eq!(k.table(), KERNELS_TXT);
}

#[test]
fn the_committed_kernel_benchmark_pairs_every_kernel_with_pytorch() {
    let k = KernelsBench::parse(KERNELS_JSON).expect("the committed run parses");
    assert!(k.ours.device.contains("H100"));
    let groups = k.throughput();
    assert_eq!(
        groups.len(),
        12,
        "6 ops x f32/f16, the copy ceiling left out"
    );
    assert!(
        groups
            .iter()
            .all(|g| g.eager.is_some() && g.compile.is_some()),
        "{groups:?}"
    );
    let ln_gelu = groups
        .iter()
        .find(|g| g.label == "layernorm_gelu f32")
        .expect("ln+gelu");
    assert!(
        ln_gelu.eager.is_some_and(|e| (e - 1176.0).abs() < 1.0),
        "ln_gelu is paired: {ln_gelu:?}"
    );
    // The page's labels are the terminal's rows, in the same order.
    let terminal: Vec<String> = k
        .table()
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("op "))
        .skip(1)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some(format!("{} {}", w.next()?, w.next()?))
        })
        .collect();
    let page: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    assert_eq!(terminal, page);
    assert!(k.copy_ceiling_gbps().is_some_and(|c| c > 2000.0));
    let checks = k.check_summaries();
    assert_eq!(checks.len(), 12);
    assert_eq!((checks[0].op, checks[0].checks), (Op::Relu, 5));
    assert_eq!(
        checks.iter().map(|c| c.checks).sum::<usize>(),
        k.ours.checks.len()
    );
    assert!(checks
        .iter()
        .all(|c| c.passed == c.checks && c.max_abs <= c.bound));
    assert_eq!(k.checks_passed(), (60, 60));
}

#[test]
fn kernel_timings_are_read_from_either_kernel_file() {
    let new = parse_kernel_timings(KERNELS_JSON).expect("the benchmark file");
    let old = parse_kernel_timings(OLD_KERNELS_JSON).expect("the earlier file");
    // The newer file times a copy ceiling per dtype, the earlier one an FP32 copy only.
    assert_eq!((new.len(), old.len()), (14, 13));
    let relu = new.iter().find(|r| r.op == "relu").expect("relu");
    let (intensity, tflops) = relu.roofline_point().expect("on the roofline");
    assert!(
        (intensity - 1.0 / 8.0).abs() < 1e-12,
        "1 FLOP per 8 bytes of f32 in and out"
    );
    assert!(tflops > 0.0);
    assert_eq!(
        new.iter()
            .find(|r| r.op == "copy")
            .and_then(|r| r.roofline_point()),
        None
    );
    assert!(
        parse_kernel_timings(CONV_JSON).is_err(),
        "a ladder is not a kernel file"
    );
}

#[test]
fn peer_op_rows_are_read_and_matched_by_op_dtype_and_shape() {
    let log = r#"{"kind": "ceiling", "name": "d2d_copy_1GiB", "ms": 0.7, "gbps": 3000}
{"kind": "op", "impl": "torch-eager", "op": "ln_gelu", "dtype": "float16", "shape": [8192, 4096], "ms": 0.11, "gbps": 1168.0}
{"kind": "op", "impl": "torch-compile-triton", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": 0.09, "gbps": 2836.0}
{"kind": "conv", "impl": "cudnn", "N": 10000, "cin": 32, "cout": 64, "hw": 13, "k": 3, "dtype": "float16", "channels_last": true, "tf32": true, "ms": 0.137}
{"kind": "op", "impl": "torch-eager", "op": "relu", "dtype": "float32", "shape": [8192, 4096], "ms": -1, "gbps": 1}
broken {"#;
    let peers = parse_peer_ops(log);
    assert_eq!(peers.len(), 2, "{peers:?}");
    let mut k = KernelsBench::parse(KERNELS_JSON).expect("parses");
    k.peers = peers;
    let row = |op: &str, dtype: &str, shape| {
        let mut r = k.ours.bench[1].clone();
        (r.op, r.dtype, r.shape) = (op.into(), dtype.into(), shape);
        r
    };
    assert_eq!(
        k.peer_gbps(TORCH_EAGER, &row("layernorm_gelu", "f16", [8192, 4096])),
        Some(1168.0)
    );
    assert_eq!(
        k.peer_gbps("torch-compile-triton", &row("relu", "f32", [8192, 4096])),
        Some(2836.0)
    );
    assert_eq!(
        k.peer_gbps("torch-compile-triton", &row("relu", "f32", [4096, 4096])),
        None
    );
    assert_eq!(
        k.peer_gbps(TORCH_EAGER, &row("relu", "f32", [8192, 4096])),
        None,
        "a non-positive time is dropped"
    );
}

#[test]
fn the_terminal_table_reproduces_the_committed_inference_output() {
    let i = InferenceReport::parse(INFER_JSON).expect("parses");
    assert_eq!(i.table(), INFER_TXT);
}

#[test]
fn the_committed_inference_run_puts_the_fastest_pytorch_beside_ours() {
    let i = InferenceReport::parse(INFER_JSON).expect("the committed run parses");
    assert_eq!(i.variants.len(), 3);
    assert!(i.variants.iter().all(|v| v.check.ok));
    let lines = i.lines();
    assert_eq!(lines.len(), 15, "3 activations x 5 batches");
    let relu1 = &lines[0];
    assert_eq!((relu1.activation, relu1.batch), (Activation::Relu, 1));
    let best = relu1.best_torch.as_ref().expect("a PyTorch row");
    assert_eq!(best.implementation, "pytorch_graph_fp16");
    assert!((best.p50_ms - 0.0382).abs() < 1e-3);
    assert!(relu1.ours_vs_best.is_some_and(|v| (v - 1.07).abs() < 0.01));
}

#[test]
fn inference_peer_lines_become_rows_and_accuracies() {
    let out = r#"{"kind": "accuracy", "activation": "gelu", "accuracy": 0.87, "images": 10000}
{"kind": "latency", "impl": "pytorch_graph_fp16", "activation": "gelu", "batch": 32, "reps": 500, "p50_ms": 0.05, "p90_ms": 0.06, "p99_ms": 0.07, "images_per_s": 640000}
{"kind": "latency", "impl": "pytorch_eager_fp16", "activation": "tanh", "batch": 32, "reps": 5, "p50_ms": 0.1, "p90_ms": 0.1, "p99_ms": 0.1}
{"kind": "latency", "impl": "pytorch_eager_fp16", "activation": "relu", "batch": 0, "reps": 5, "p50_ms": 0.1, "p90_ms": 0.1, "p99_ms": 0.1}
Traceback (most recent call last):"#;
    let (rows, acc) = parse_peer_lines(out);
    assert_eq!(acc, vec![(Activation::Gelu, 0.87)]);
    assert_eq!(
        rows.len(),
        1,
        "unknown activation and batch 0 are dropped: {rows:?}"
    );
    assert_eq!((rows[0].batch, rows[0].reps), (32, 500));
    assert!((rows[0].images_per_s - 640_000.0).abs() < 1e-6);
    let report = InferenceReport {
        device: "GPU".into(),
        dataset: "d".into(),
        batches: vec![32],
        variants: vec![],
        peers: rows,
        peer_failure: Some("x".into()),
        notes: vec!["n".into()],
    };
    let t = report.table();
    assert!(
        t.contains("pytorch_graph_fp16") && t.contains("peer failed: x") && t.contains("note: n"),
        "{t}"
    );
}

#[test]
fn duel_peer_rows_are_read_from_json_lines_only() {
    let out = "warming up\n{\"variant\": \"graph fp16\", \"epoch_ms_median\": 192.3, \"max_mem_alloc_mb\": 580.0, \"test_acc\": 0.8958}\n{\"note\": \"no timing\"}\n{\"variant\": \"bad\", \"epoch_ms_median\": -1}\n{broken\n";
    let rows = parse_peer_rows(out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].variant, "graph fp16");
    assert_eq!(rows[0].batch, None);
    assert_eq!(
        best_peer_ms(&rows, 128),
        Some(192.3),
        "no batch is batch 128"
    );
    assert_eq!(best_peer_ms(&rows, 256), None);
}

#[test]
fn the_committed_duel_prints_every_contestant_and_peer() {
    let d = DuelBench::parse(DUEL_JSON).expect("parses");
    let t = d.table();
    assert_eq!(
        t.lines().filter(|l| l.starts_with("showdown ")).count(),
        4,
        "{t}"
    );
    assert_eq!(
        t.lines().filter(|l| l.starts_with("pytorch ")).count(),
        12,
        "{t}"
    );
    assert!(t.contains("x faster"), "{t}");
    let again = DuelBench::new(d.ours.clone(), d.peers.clone(), d.peer_failures.clone());
    assert_eq!(again, d);
}

#[test]
fn a_file_that_does_not_parse_is_an_error_not_a_panic() {
    assert!(KernelsBench::parse("{").is_err());
    let e = ConvBench::parse(r#"{"ours": {}}"#).expect_err("missing fields");
    assert!(e.to_string().contains("convolution ladder"), "{e}");
    assert!(InferenceReport::parse("[]").is_err());
    assert!(DuelBench::parse("null").is_err());
    assert!(
        ConvBench::parse(KERNELS_JSON).is_err(),
        "a kernel file is not a ladder"
    );
    assert!(parse_kernel_timings("").is_err());
}

/// A ladder run on a machine without a GPU: the CPU rows alone, 8 images per pass, while the
/// request's GPU batch (1024) is what the report's `batch` holds.
fn cpu_only_ladder() -> ConvBench {
    use super::conv::{Ceilings, ConvLadderReport};
    let mut rows = Vec::new();
    for layer in [LadderLayer::LabConv1, LadderLayer::LabConv2] {
        // 45 ms and 4 ms for 8 images: about 0.1 and 1 GFLOP/s on lab conv1.
        rows.push(finish_row(
            layer,
            "cpu_naive_f64",
            None,
            8,
            (4, 4),
            (45.0, 46.0, 47.0, 3),
        ));
        rows.push(finish_row(
            layer,
            "cpu_im2col_gemm",
            None,
            8,
            (4, 4),
            (4.0, 4.1, 4.2, 3),
        ));
    }
    ConvBench {
        ours: ConvLadderReport {
            device: "Test CPU".into(),
            batch: 1024,
            input_source: "mnist-sample test images".into(),
            ceilings: Ceilings {
                copy_gbps: 0.0,
                gemm_f16_tflops: None,
                gemm_f32_tflops: None,
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

/// Issue 26: the CPU rows read "0.00 TFLOP/s" beside four columns of dashes (× rung 1, vs
/// cuDNN, the H100 reference and the ratio to it), and the page said batch 1024 while they
/// ran 8. They read in GFLOP/s, the empty columns are left out, and the statement gives each
/// side's own batch.
#[test]
fn cpu_ladder_rows_read_in_gflops_without_empty_columns() {
    use super::conv::{flops_text, LadderColumn};
    let c = cpu_only_ladder();
    let tables = c.tables();
    assert_eq!(tables.len(), 2);
    let t = &tables[0];
    let refs = vec![None; t.lines.len()];
    assert_eq!(
        LadderColumn::shown(&t.lines, &refs),
        [
            LadderColumn::Implementation,
            LadderColumn::Dtypes,
            LadderColumn::Batch,
            LadderColumn::Median,
            LadderColumn::Throughput,
        ]
    );
    for l in &t.lines {
        assert!(l.is_cpu());
        let text = l
            .cell(LadderColumn::Throughput, None)
            .expect("a throughput");
        assert!(
            text.ends_with(" GFLOP/s") && !text.starts_with("0.00"),
            "{text}"
        );
        assert_eq!(l.cell(LadderColumn::Batch, None).as_deref(), Some("8"));
        // A reference figure never lands on a CPU row.
        assert_eq!(l.cell(LadderColumn::Reference, Some(50.0)), None);
    }
    assert_eq!(c.cpu_batch(), Some(8));
    assert!(!c.has_gpu_rows());
    let said = c.batch_statement();
    assert!(said.contains("8 image(s) per pass on the CPU"), "{said}");
    assert!(!said.contains("1024"), "{said}");
    assert_eq!(flops_text(0.000_123, true), "0.12 GFLOP/s");
    assert_eq!(flops_text(45.678, false), "45.7 TFLOP/s");
    assert_eq!(flops_text(123.4, false), "123 TFLOP/s");
}

/// The committed H100 ladder keeps every column on its GPU tables (each has a value), and its
/// statement gives both batches.
#[test]
fn gpu_ladder_tables_keep_their_columns() {
    use super::conv::LadderColumn;
    let c = conv();
    for t in c.gpu_tables() {
        let refs: Vec<Option<f64>> = t.lines.iter().map(|l| l.tflops).collect();
        assert_eq!(
            LadderColumn::shown(&t.lines, &refs),
            LadderColumn::ALL,
            "{}",
            t.layer.name()
        );
        let rung1 = t.lines.iter().find(|l| l.rung == Some(1)).expect("rung 1");
        let text = rung1
            .cell(LadderColumn::Throughput, None)
            .expect("a throughput");
        assert!(text.ends_with(" TFLOP/s"), "{text}");
    }
    let said = c.batch_statement();
    assert!(
        said.contains("on the GPU") && said.contains("on the CPU"),
        "{said}"
    );
}

/// Issue 37: the ladder's "ours against cuDNN" line read "0.53× slower" for a layer cuDNN ran
/// 1.89 times faster; the line says the ratio in the one wording the duel's rows use.
#[test]
fn ours_against_cudnn_reads_in_one_wording() {
    let line = |speedup: f64| {
        super::conv::OursVsCudnn {
            layer: LadderLayer::LabConv2,
            ours: ("rung4_mma".into(), 0.1234),
            cudnn: ("cudnn_fastest".into(), 0.0654),
            speedup,
        }
        .sentence()
    };
    let slower = line(0.53);
    assert!(slower.ends_with(": 1.89× slower"), "{slower}");
    assert!(!slower.contains("0.53"), "{slower}");
    assert!(line(2.0).ends_with(": 2.00× faster"));
    assert!(line(1.01).ends_with("at the same pace (1.01×)"));
}
