//! Tests of `docs_figures`.

use super::*;
use serde_json::json;

fn registry() -> Registry {
    parse_registry(
            r#"{
            "sources": {
                "duel": {"file": "duel.json", "machine": "GPU X", "date": "2026-01-02", "what": "a duel."},
                "lines": {"file": "peers.jsonl", "machine": "GPU X", "date": "2026-01-03", "what": "peers."}
            },
            "figures": {
                "fp16": {"source": "duel", "select": "/runs/precision=fp16/ms", "format": "{:.1} ms"},
                "fp32_us": {"source": "duel", "select": "/runs/precision=fp32/ms", "format": "{:,.0} µs", "scale": 1000},
                "speedup": {"source": "duel", "select": "/runs/precision=fp32/ms", "format": "{:.1}×",
                            "per": {"source": "duel", "select": "/runs/precision=fp16/ms"}},
                "rate": {"source": "duel", "select": "/runs/precision=fp16/ms", "format": "{:.0}/s", "reciprocal": true, "scale": 1000},
                "peer": {"source": "lines", "select": "/impl=b/ms", "format": "{:.2} ms"},
                "missing": {"source": "duel", "select": "/runs/precision=fp64/ms", "format": "{:.1} ms"},
                "device": {"source": "duel", "select": "/device", "format": "{}"}
            },
            "allow": [{"page": "a/b", "text": "48 KB", "why": "a limit"}]
        }"#,
        )
        .unwrap()
}

fn results() -> Results {
    let duel = json!({"device": "GPU X", "runs": [
        {"precision": "fp32", "ms": 151.25},
        {"precision": "fp16", "ms": 56.0},
        {"precision": "fp16", "ms": 99.0}
    ]});
    let mut r = Results::new();
    r.insert("duel.json".into(), Ok(duel));
    r.insert(
        "peers.jsonl".into(),
        parse_results(
            "peers.jsonl",
            "{\"impl\":\"a\",\"ms\":1}\n\n{\"impl\":\"b\",\"ms\":0.125}\n",
        ),
    );
    r
}

#[test]
fn selectors_follow_pointers_and_pick_elements_by_their_fields() {
    let v = json!({"a": {"b": [10, 20]}, "rows": [
        {"layer": "x", "impl": "p", "ms": 1, "tf32": true},
        {"layer": "y", "impl": "p", "ms": 2, "tf32": false},
        {"layer": "y", "impl": "q", "ms": 3, "tf32": true},
        {"layer": "y", "impl": "p", "ms": 4, "tf32": true}
    ]});
    assert_eq!(select(&v, "/a/b/1"), Some(&json!(20)));
    assert_eq!(select(&v, "/rows/layer=y/ms"), Some(&json!(2)));
    assert_eq!(select(&v, "/rows/layer=y,impl=q/ms"), Some(&json!(3)));
    assert_eq!(select(&v, "/rows/layer=y,impl=p#2/ms"), Some(&json!(4)));
    assert_eq!(select(&v, "/rows/layer=y,tf32=true/ms"), Some(&json!(3)));
    assert_eq!(select(&v, "/rows/ms=4/layer"), Some(&json!("y")));
    assert_eq!(select(&v, ""), Some(&v));
    for nothing in [
        "a/b",
        "/a/c",
        "/a/b/2",
        "/a/b/x",
        "/rows/layer=z/ms",
        "/rows/layer=y,impl=p#3/ms",
        "/rows/layer=y#0/ms",
        "/a/layer=x",
        "/rows/0/ms/x",
    ] {
        assert_eq!(select(&v, nothing), None, "{nothing}");
    }
}

#[test]
fn jsonl_files_are_arrays_of_their_lines() {
    let v = parse_results("x.jsonl", "{\"a\":1}\n\n{\"a\":2}\n").unwrap();
    assert_eq!(v, json!([{"a": 1}, {"a": 2}]));
    assert!(parse_results("x.jsonl", "{\"a\":1}\nnot json\n")
        .unwrap_err()
        .starts_with("line 2:"));
    assert!(parse_results("x.json", "{").is_err());
}

#[test]
fn formats_write_decimals_groups_and_strings() {
    assert_eq!(
        format_value("{:.1} ms", &json!(151.3196)).unwrap(),
        "151.3 ms"
    );
    assert_eq!(
        format_value("{:.0} GB/s", &json!(2962.07)).unwrap(),
        "2962 GB/s"
    );
    assert_eq!(
        format_value("{:,.0} GB/s", &json!(2962.07)).unwrap(),
        "2,962 GB/s"
    );
    assert_eq!(
        format_value("{:,.2}", &json!(1234567.891)).unwrap(),
        "1,234,567.89"
    );
    assert_eq!(format_value("{:.1}", &json!(-0.01)).unwrap(), "0.0");
    assert_eq!(format_value("{:.1}", &json!(-2.25)).unwrap(), "-2.2");
    assert_eq!(format_value("on {}", &json!("GPU X")).unwrap(), "on GPU X");
    assert_eq!(format_value("{} steps", &json!(469)).unwrap(), "469 steps");
    assert!(format_value("{:.1} ms", &json!("fast")).is_err());
    assert!(format_value("{:.1} ms", &json!(null)).is_err());
    for bad in ["ms", "{:.1", "{:x} ms", "{:.1} {}", "{:.} ms"] {
        assert!(format_value(bad, &json!(1.0)).is_err(), "{bad}");
    }
}

#[test]
fn the_registry_is_checked_when_parsed() {
    let bad_source =
        r#"{"sources": {}, "figures": {"a": {"source": "x", "select": "/a", "format": "{}"}}}"#;
    assert!(
        matches!(parse_registry(bad_source), Err(FigureError::Registry(m)) if m.contains("`x`"))
    );
    let bad_format = r#"{"sources": {"x": {"file": "f", "machine": "m", "date": "d", "what": "w"}},
            "figures": {"a": {"source": "x", "select": "/a", "format": "{:.1} {}"}}}"#;
    assert!(
        matches!(parse_registry(bad_format), Err(FigureError::Registry(m)) if m.contains("`a`"))
    );
    let typo = r#"{"sources": {}, "figures": {}, "alow": []}"#;
    assert!(parse_registry(typo).is_err());
}

#[test]
fn figures_are_read_scaled_divided_and_formatted() {
    let (reg, res) = (registry(), results());
    let text = |name: &str| figure_text(&reg, &res, "p", name, 1).map(|(t, _)| t);
    assert_eq!(text("fp16").unwrap(), "56.0 ms");
    assert_eq!(text("fp32_us").unwrap(), "151,250 µs");
    assert_eq!(text("speedup").unwrap(), "2.7×");
    assert_eq!(text("rate").unwrap(), "18/s");
    assert_eq!(text("peer").unwrap(), "0.12 ms");
    assert_eq!(text("device").unwrap(), "GPU X");
    let e = text("missing").unwrap_err();
    assert!(matches!(e, FigureError::Value { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("docs-content/p.md")
            && msg.contains("`missing`")
            && msg.contains("docs/results/duel.json"),
        "{msg}"
    );
    let e = text("nope").unwrap_err();
    assert!(matches!(e, FigureError::UnknownFigure { .. }), "{e}");
    // A results file that could not be read names the page, the figure and the file.
    let mut gone = res.clone();
    gone.insert("duel.json".into(), Err("No such file".into()));
    let e = figure_text(&reg, &gone, "p", "fp16", 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "docs-content/p.md: figure `fp16`: docs/results/duel.json: No such file"
    );
    assert!(matches!(
        figure_text(&reg, &Results::new(), "p", "fp16", 1),
        Err(FigureError::Results { .. })
    ));
}

#[test]
fn load_results_reads_each_file_once() {
    let reg = registry();
    let mut asked = Vec::new();
    let res = load_results(&reg, |f| {
        asked.push(f.to_string());
        if f == "duel.json" {
            Ok("{\"runs\": []}".into())
        } else {
            Err("absent".into())
        }
    });
    asked.sort();
    assert_eq!(asked, ["duel.json", "peers.jsonl"]);
    assert_eq!(res["duel.json"], Ok(json!({"runs": []})));
    assert_eq!(res["peers.jsonl"], Err("absent".to_string()));
}

#[test]
fn pages_render_their_figures_with_numbered_sources() {
    let (reg, res) = (registry(), results());
    let md = "# T\n\nfp16 {{fig:fp16}}, peer {{fig:peer}}, again {{fig:speedup}}.\n";
    let out = render_page("a/b", md, &reg, &res).unwrap();
    assert!(out.starts_with(
            "# T\n\nfp16 56.0 ms<sup class=\"fig-src\" title=\"GPU X, 2026-01-02: docs/results/duel.json\">[1]</sup>, \
             peer 0.12 ms<sup class=\"fig-src\" title=\"GPU X, 2026-01-03: docs/results/peers.jsonl\">[2]</sup>, \
             again 2.7×<sup class=\"fig-src\" title=\"GPU X, 2026-01-02: docs/results/duel.json\">[1]</sup>.\n"
        ), "{out}");
    assert!(out.contains("## Where the figures come from"));
    assert!(out.contains("1. `docs/results/duel.json`: GPU X, 2026-01-02. a duel.\n2. `docs/results/peers.jsonl`: GPU X, 2026-01-03. peers.\n"), "{out}");
    // A page without figures is left as it is.
    assert_eq!(render_page("a/b", "# T\n", &reg, &res).unwrap(), "# T\n");
    // Unknown figures fail with the page and line.
    let e = render_page("a/b", "# T\n\n{{fig:nope}}\n", &reg, &res).unwrap_err();
    assert_eq!(
        e.to_string(),
        "docs-content/a/b.md line 3: figure `nope` is not in docs-content/figures.json"
    );
}

#[test]
fn placeholders_must_be_closed_named_and_outside_code() {
    let ok = placeholders(
        "p",
        "a {{fig:x_1}} b {{fig:y.z}}\n```\ncode\n```\n{{fig:w}}",
    )
    .unwrap();
    let names: Vec<(&str, usize)> = ok.iter().map(|p| (p.name.as_str(), p.line)).collect();
    assert_eq!(names, [("x_1", 1), ("y.z", 1), ("w", 5)]);
    assert_eq!(&"a {{fig:x_1}} b"[ok[0].range.clone()], "{{fig:x_1}}");
    for (bad, why) in [
        ("a {{fig:x\n", "closing"),
        ("a {{fig:}}\n", "not a figure name"),
        ("a {{fig:x y}}\n", "not a figure name"),
        ("```text\n{{fig:x}}\n```\n", "fenced code"),
        ("~~~~\n```\n{{fig:x}}\n~~~~\n", "fenced code"),
        ("see `{{fig:x}}`\n", "inline code"),
    ] {
        let e = placeholders("p", bad).unwrap_err();
        assert!(e.to_string().contains(why), "{bad:?}: {e}");
    }
    // After a closed inline span, text again.
    assert_eq!(placeholders("p", "`a` {{fig:x}} ``b`` ").unwrap().len(), 1);
}

#[test]
fn bare_measurements_are_found_outside_code_and_placeholders() {
    let md = "conv2 forward 125 µs, copy 2,879 GB/s, 3–6 µs each, 51 TFLOP/s.\n\
                  It took 1.54–1.65 s; 90 % of it; 2.7× faster; 150ms.\n\
                  Not: 2×2 windows, 3 × forward, H100, sm_90, 8 samples, 16 warps, 2^-24, v0.13 s.\n\
                  ```text\nconv2 125 µs\n```\n\
                  fig {{fig:a}} and `64 MB` in code span.\n";
    let found: Vec<(usize, String)> = bare_measurements(md)
        .into_iter()
        .map(|b| (b.line, b.text))
        .collect();
    let want: Vec<(usize, String)> = [
        (1, "125 µs"),
        (1, "2,879 GB/s"),
        (1, "3–6 µs"),
        (1, "51 TFLOP/s"),
        (2, "1.54–1.65 s"),
        (2, "90 %"),
        (2, "2.7×"),
        (2, "150ms"),
        (7, "64 MB"),
    ]
    .iter()
    .map(|(l, t)| (*l, t.to_string()))
    .collect();
    assert_eq!(found, want);
}

#[test]
fn the_allow_list_is_per_page() {
    let reg = registry();
    let md = "shared memory above 48 KB and 125 µs\n";
    let left: Vec<String> = unallowed_measurements("a/b", md, &reg)
        .into_iter()
        .map(|b| b.text)
        .collect();
    assert_eq!(left, ["125 µs"]);
    assert_eq!(unallowed_measurements("c/d", md, &reg).len(), 2);
}

#[test]
fn citations_outside_the_repository_are_found() {
    let md = "ok `docs/benchmarks.md`\nfrom `../shared/ANCHORS.md`\nsee shared/ANCHORS.md\n`../x.py`\n[link](../layers/conv2d.md)\n";
    let lines: Vec<usize> = outside_citations(md).into_iter().map(|(l, _)| l).collect();
    assert_eq!(lines, [2, 3, 4]);
}
