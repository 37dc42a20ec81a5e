//! Tests of `crossover`.

use super::*;

fn pt(p: Precision, n: usize, ms: f64) -> GemmPoint {
    let shape = GemmShape::square(n);
    GemmPoint {
        precision: p,
        shape,
        label: None,
        padded: None,
        ms_p50: ms,
        reps: 10,
        tflops: shape.flops() / (ms * 1e-3) / 1e12,
        bytes: shape.bytes(2.0, 2.0),
        speedup_vs_fp32: None,
        speedup_vs_bf16: None,
        regime: Regime::Launch,
        check: GemmCheck::new(1e-6, 1e-3, 16),
    }
}

/// The H200's PyTorch rates of ANCHORS.md ("When FP8 pays"), as times.
fn h200() -> CrossoverReport {
    let rates: [(usize, [f64; 4]); 5] = [
        (1024, [26.0, 54.0, 49.0, 51.0]),
        (2048, [45.0, 377.0, 356.0, 225.0]),
        (4096, [50.0, 658.0, 1036.0, 336.0]),
        (8192, [50.0, 725.0, 1171.0, 356.0]),
        (16384, [52.0, 663.0, 1197.0, 339.0]),
    ];
    let mut points = Vec::new();
    for (n, r) in rates {
        let f = GemmShape::square(n).flops();
        for (p, t) in [
            Precision::Fp32,
            Precision::Bf16,
            Precision::Fp8,
            Precision::Tf32,
        ]
        .into_iter()
        .zip(r)
        {
            points.push(pt(p, n, f / (t * 1e12) * 1e3));
        }
    }
    // conv2 fwd: BF16 0.020 ms, FP8 0.028 ms (launch-bound, FP8's casts on top).
    for (p, ms) in [(Precision::Bf16, 0.020), (Precision::Fp8, 0.028)] {
        let mut x = pt(p, 1, ms);
        x.shape = GemmShape {
            m: 15488,
            n: 64,
            k: 288,
        };
        x.bytes = x.shape.bytes(2.0, 2.0);
        x.label = Some("conv2 fwd".into());
        points.push(x);
    }
    let mut r = CrossoverReport {
        device: "NVIDIA H200".into(),
        backend: "cuda".into(),
        library: "cuBLASLt".into(),
        ceilings: CrossoverCeilings {
            copy_gbps: 4300.0,
            launch_ms: 0.02,
            peaks: vec![
                PrecisionPeak {
                    precision: Precision::Fp8,
                    tflops: 1197.0,
                    n: 16384,
                },
                PrecisionPeak {
                    precision: Precision::Bf16,
                    tflops: 725.0,
                    n: 8192,
                },
            ],
        },
        points,
        skipped: Vec::new(),
        crossovers: Vec::new(),
        sentences: Vec::new(),
        peers: Vec::new(),
        peer_failure: None,
        steps: Vec::new(),
        step_note: None,
    };
    r.finish();
    r
}

#[test]
fn regimes_follow_the_roofline() {
    // 1 µs of launch, 1 TB/s, 100 TFLOP/s.
    let (l, b, p) = (0.001, 1000.0, 100.0);
    assert_eq!(regime(1e3, 1e3, l, b, p), Regime::Launch);
    // 1 GB at 1 TB/s: 1 ms; 1 GFLOP at 100 TFLOP/s: 10 µs.
    assert_eq!(regime(1e9, 1e9, l, b, p), Regime::Memory);
    // 1 TFLOP: 10 ms; 1 MB: 1 µs.
    assert_eq!(regime(1e12, 1e6, l, b, p), Regime::Compute);
    // Unknown ceilings count as zero time.
    assert_eq!(regime(1e12, 1e6, 0.0, 0.0, 0.0), Regime::Launch);
    assert_eq!(regime(1e12, 1e9, 0.0, 1000.0, 0.0), Regime::Memory);
}

#[test]
fn the_h200s_crossovers_match_anchors() {
    let r = h200();
    let fp8 = r.crossover(Precision::Fp8).unwrap();
    assert_eq!(fp8.over, Precision::Bf16);
    assert_eq!(fp8.n, Some(4096), "{fp8:?}");
    let bf16 = r.crossover(Precision::Bf16).unwrap();
    assert_eq!(bf16.over, Precision::Tf32);
    assert_eq!(bf16.n, Some(2048), "{bf16:?}");
    let tf32 = r.crossover(Precision::Tf32).unwrap();
    assert_eq!((tf32.over, tf32.n), (Precision::Fp32, Some(1024)));
    // BF16 at 8192: 725 / 50 = 14.5× FP32.
    let b = r
        .point(Precision::Bf16, GemmShape::square(8192), None)
        .unwrap();
    assert!((b.speedup_vs_fp32.unwrap() - 14.5).abs() < 1e-9);
    assert_eq!(b.speedup_vs_bf16, Some(1.0));
    assert_eq!(b.regime, Regime::Compute);
    let small = r
        .point(Precision::Bf16, GemmShape::square(1024), None)
        .unwrap();
    assert_eq!(small.regime, Regime::Launch);
}

#[test]
fn the_sentence_names_the_device_the_size_and_the_cnns_gemm() {
    let r = h200();
    let s = r.sentences.iter().find(|s| s.contains("FP8 pays")).unwrap();
    assert!(
        s.starts_with("On this NVIDIA H200, FP8 pays over BF16 from N = 4096"),
        "{s}"
    );
    assert!(s.contains("1.57× there, 1.81× at N = 16384"), "{s}");
    assert!(
        s.contains("conv2 fwd 15488×64×288 at batch 128, is where FP8 costs 1.40× BF16, because it is launch-bound."),
        "{s}"
    );
    assert!(
        r.headline().contains("FP8 from N = 4096"),
        "{}",
        r.headline()
    );
}

#[test]
fn a_precision_that_never_pays_says_so_and_a_dip_resets_the_crossover() {
    // 1.3×, 1.1×, 1.5×, 1.6×: pays from the third size only.
    let mut pts = Vec::new();
    for (n, up) in [(64, 1.3), (128, 1.1), (256, 1.5), (512, 1.6)] {
        pts.push(pt(Precision::Fp32, n, 1.0));
        pts.push(pt(Precision::Fp16, n, 1.0 / up));
        pts.push(pt(Precision::Bf16, n, 1.0));
    }
    let c = crossovers(&pts);
    let fp16 = c.iter().find(|c| c.precision == Precision::Fp16).unwrap();
    // No TF32 (a CPU): FP16 is compared with FP32.
    assert_eq!((fp16.over, fp16.n), (Precision::Fp32, Some(256)));
    let bf16 = c.iter().find(|c| c.precision == Precision::Bf16).unwrap();
    assert_eq!(bf16.n, None);
    let mut r = h200();
    r.device = "AMD EPYC".into();
    r.points = pts;
    r.finish();
    let s = r.sentences.iter().find(|s| s.contains("BF16")).unwrap();
    assert!(
        s.starts_with("On this AMD EPYC, BF16 never pays 1.2× over FP32 up to N = 512"),
        "{s}"
    );
}

#[test]
fn the_cnns_gemms_include_conv2_at_15488_by_64_by_288() {
    let g = cnn_gemms(128);
    let conv2 = g.iter().find(|(l, _)| l == "conv2 fwd").unwrap().1;
    assert_eq!(conv2.text(), "15488×64×288");
    let dense = g.iter().find(|(l, _)| l == "dense fwd").unwrap().1;
    assert_eq!((dense.m, dense.n, dense.k), (128, 10, 1600));
    assert_eq!(g.len(), 8);
}

#[test]
fn training_steps_get_their_speed_up_over_fp32_at_the_same_batch() {
    let st = |p, batch, ms| StepPoint {
        precision: p,
        batch,
        ms,
        images_per_s: batch as f64 / (ms * 1e-3),
        speedup_vs_fp32: None,
    };
    let mut v = vec![
        st(Precision::Fp32, 128, 1.0),
        st(Precision::Fp16, 128, 0.8),
        st(Precision::Fp32, 8192, 40.0),
        st(Precision::Fp16, 8192, 16.0),
        st(Precision::Bf16, 512, 1.0),
    ];
    fill_step_speedups(&mut v);
    assert_eq!(v[1].speedup_vs_fp32, Some(1.25));
    assert_eq!(v[3].speedup_vs_fp32, Some(2.5));
    assert_eq!(v[4].speedup_vs_fp32, None);
    let mut r = h200();
    r.steps = v;
    assert!(table(&r).contains("FP16 batch 8192: 16.00 ms a step, 512000 images/s, 2.50× FP32"));
}

#[test]
fn a_run_of_one_precision_says_why_it_has_no_crossover() {
    let mut r = h200();
    r.points.retain(|p| p.precision == Precision::Fp32);
    r.finish();
    assert!(r.crossovers.is_empty());
    assert_eq!(
        r.sentences,
        vec!["On this NVIDIA H200, only FP32 ran: a crossover compares a precision with a wider one measured in the same run."]
    );
}

#[test]
fn tolerance_and_check() {
    let t = tolerance(Precision::Fp32, 1024, 2f64.powi(-24));
    assert!(t > 1e-6 && t < 1e-4, "{t}");
    assert!(tolerance(Precision::Fp8, 1024, 2f64.powi(-8)) > t);
    assert!(GemmCheck::new(1e-6, t, 5).ok);
    assert!(!GemmCheck::new(f64::NAN, t, 5).ok);
    assert!(!GemmCheck::new(1.0, t, 5).ok);
}

#[test]
fn the_table_and_peer_lines() {
    let r = h200();
    let t = table(&r);
    assert!(t.contains("| 4096 |"), "{t}");
    assert!(t.contains("conv2 fwd 15488×64×288"), "{t}");
    assert!(t.contains("FP8 pays over BF16"), "{t}");
    let peers = parse_peer_lines(
        "warming up\n{\"precision\":\"bf16\",\"n\":1024,\"ms\":0.04}\n{\"skip\":\"fp8\"}\n",
    );
    assert_eq!(peers.len(), 1);
    assert!((peers[0].tflops - 53.687).abs() < 0.01, "{:?}", peers[0]);
    assert_eq!(ms_text(0.04), "40.0 µs");
    assert_eq!(tflops_text(0.084), "84.0 GFLOP/s");
}

#[test]
fn bad_requests_are_refused_naming_the_field() {
    use crate::protocol::{parse_request, CrossoverRequest, Request};
    let m = |b: &str| parse_request(b.as_bytes()).unwrap_err().message;
    assert_eq!(
        m(r#"{"op":"crossover","sizes":[64,128,64]}"#),
        "sizes: '64' is listed twice; name each once"
    );
    assert_eq!(
        m(r#"{"op":"crossover","sizes":[64,20000]}"#),
        "sizes: 20000 is out of range: each size must be 16 to 16384"
    );
    assert!(m(r#"{"op":"crossover","sizes":[8]}"#).starts_with("sizes: 8 is out of range"));
    assert!(m(r#"{"op":"crossover","precisions":[]}"#)
        .starts_with("precisions: name at least one precision"));
    assert!(m(r#"{"op":"crossover","precisions":["fp4"]}"#).starts_with("precisions"));
    let ok = parse_request(br#"{"op":"crossover","backend":"cpu","sizes":[32,64]}"#).unwrap();
    let Request::Crossover(r) = ok else {
        panic!("{ok:?}")
    };
    assert_eq!(r.precisions, ORDER.to_vec());
    assert!(r.include_cnn && !r.include_peer);
    // Built in code (the CLI): the same rules in validate, the CPU's ceiling on top.
    let r = CrossoverRequest {
        sizes: vec![8192, 64],
        ..CrossoverRequest::default()
    };
    assert!(r.validate(false).is_ok());
    assert_eq!(r.sizes_for(false), vec![64, 8192]);
    let e = r.validate(true).unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::BadInput);
    assert_eq!(
        e.to_string(),
        "invalid sizes '8192': 8192 is out of range: each size must be 16 to 4096 on the CPU"
    );
    let e = CrossoverRequest {
        precisions: vec![],
        ..CrossoverRequest::default()
    }
    .validate(false)
    .unwrap_err();
    assert!(e.to_string().starts_with("invalid precisions"), "{e}");
    let e = CrossoverRequest {
        sizes: vec![64, 64],
        ..CrossoverRequest::default()
    }
    .validate(false)
    .unwrap_err();
    assert!(e.to_string().starts_with("invalid sizes '64'"), "{e}");
    assert_eq!(
        CrossoverRequest::default().sizes_for(true),
        CPU_SIZES.to_vec()
    );
}

#[test]
fn sizes_parse_with_commas_or_spaces_and_name_a_bad_one() {
    assert_eq!(parse_sizes("32, 64 128").unwrap(), vec![32, 64, 128]);
    assert_eq!(parse_sizes("").unwrap(), Vec::<usize>::new());
    assert!(parse_sizes("64,x").unwrap_err().contains("\"x\""));
}

#[test]
fn the_report_round_trips() {
    let r = h200();
    let back: CrossoverReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
}
