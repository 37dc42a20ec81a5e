//! The `showdown` binary end to end: JSON schemas, exit codes, and one-line errors for bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

mod common;

use std::io::Write;
use std::process::{Command, Output};

fn showdown(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_showdown"))
        .args(args)
        .env(
            "SHOWDOWN_DATA_HOME",
            std::env::temp_dir().join("showdown-cli-test-home"),
        )
        .output()
        .expect("the showdown binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn doctor_works_without_any_nvidia_software() {
    let o = showdown(&["doctor", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "cpu",
        "cores",
        "driver",
        "nvrtc",
        "nvml",
        "kernels",
        "gpus",
        "auto_backend",
        "auto_reason",
    ] {
        assert!(v.get(key).is_some(), "doctor JSON lacks {key}");
    }
    if !v["driver"]["ok"].as_bool().unwrap() {
        assert_eq!(v["auto_backend"], "cpu");
        assert!(!v["auto_reason"].as_str().unwrap().is_empty());
    }
}

#[test]
fn duel_json_meets_the_schema() {
    let o = showdown(&[
        "duel",
        "--backend",
        "cpu",
        "--dataset",
        "mnist-sample",
        "--epochs",
        "1",
        "--train-limit",
        "1024",
        "--test-limit",
        "400",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backend"], "cpu");
    assert!(v["device"].is_string());
    assert_eq!(v["dataset"]["name"], "mnist-sample");
    assert_eq!(v["dataset"]["train"], 1024);
    assert_eq!(v["dataset"]["test"], 400);
    assert_eq!(v["config"]["epochs"], 1);
    assert_eq!(v["config"]["batch"], 128);
    assert_eq!(v["config"]["seed"], 0);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["precision"], "fp32");
    assert_eq!(runs[1]["precision"], "fp16");
    for r in runs {
        let e = &r["epochs"][0];
        for key in ["epoch", "ms", "train_loss", "test_accuracy"] {
            assert!(e[key].is_number(), "epoch lacks {key}: {e}");
        }
        for key in [
            "epoch_ms_median",
            "samples_per_s",
            "peak_memory_bytes",
            "test_accuracy",
            "skipped_steps",
            "final_loss_scale",
        ] {
            assert!(r[key].is_number(), "run lacks {key}: {r}");
        }
        assert!(
            r["test_accuracy"].as_f64().unwrap() > 0.5,
            "1,024 images should already teach something: {r}"
        );
    }
    assert_eq!(runs[1]["final_loss_scale"], 65536.0);
    // FP16 storage needs less memory than FP32.
    assert!(runs[1]["peak_memory_bytes"].as_u64() < runs[0]["peak_memory_bytes"].as_u64());
}

fn assert_bad_input(args: &[&str], needle: &str) {
    let o = showdown(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn absurd_flags_exit_2_naming_the_flag() {
    assert_bad_input(&["duel", "--backend", "cpu", "--batch", "0"], "--batch");
    assert_bad_input(&["duel", "--epochs", "-1"], "-1");
    assert_bad_input(&["duel", "--epochs", "0"], "--epochs");
    assert_bad_input(&["duel", "--precisions", "fp32,fp4"], "fp4");
    assert_bad_input(&["duel", "--backend", "tpu"], "tpu");
    assert_bad_input(&["duel", "--dataset", "cifar"], "cifar");
    assert_bad_input(
        &["duel", "--backend", "cpu", "--train-limit", "0"],
        "--train-limit",
    );
    assert_bad_input(&["duel", "--backend", "cpu", "--lr", "NaN"], "--lr");
    assert_bad_input(&["frobnicate"], "frobnicate");
}

fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 8, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn write_set(dir: &std::path::Path, train_images: Vec<u8>) {
    std::fs::write(dir.join("train-images-idx3-ubyte"), train_images).unwrap();
    std::fs::write(dir.join("train-labels-idx1-ubyte"), idx(&[2], &[1, 2])).unwrap();
    std::fs::write(
        dir.join("t10k-images-idx3-ubyte"),
        idx(&[1, 28, 28], &[0; 784]),
    )
    .unwrap();
    std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx(&[1], &[3])).unwrap();
}

#[test]
fn bad_data_dirs_exit_2_naming_the_file() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().to_str().unwrap();
    assert_bad_input(
        &["duel", "--backend", "cpu", "--data-dir", d],
        "train-images-idx3-ubyte",
    );
    assert_bad_input(
        &[
            "duel",
            "--backend",
            "cpu",
            "--data-dir",
            &format!("{d}/missing"),
        ],
        "is not a folder holding",
    );
    // Truncated images.
    write_set(t.path(), idx(&[2, 28, 28], &[0; 100]));
    assert_bad_input(
        &["data", "info", "--data-dir", d],
        "train-images-idx3-ubyte",
    );
    // A header claiming 2^31 images.
    write_set(t.path(), idx(&[1 << 31, 28, 28], &[0; 100]));
    assert_bad_input(&["duel", "--backend", "cpu", "--data-dir", d], "limit");
    // A gzip name holding garbage.
    std::fs::remove_file(t.path().join("train-images-idx3-ubyte")).unwrap();
    let mut f = std::fs::File::create(t.path().join("train-images-idx3-ubyte.gz")).unwrap();
    f.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3])
        .unwrap();
    assert_bad_input(
        &["duel", "--backend", "cpu", "--data-dir", d],
        "train-images-idx3-ubyte.gz",
    );
    // A good tiny set trains.
    std::fs::remove_file(t.path().join("train-images-idx3-ubyte.gz")).unwrap();
    write_set(t.path(), idx(&[2, 28, 28], &[7; 2 * 784]));
    let o = showdown(&[
        "train",
        "--backend",
        "cpu",
        "--precision",
        "fp16",
        "--data-dir",
        d,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn cuda_backend_without_a_gpu_exits_1() {
    let o = showdown(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if v["driver"]["ok"].as_bool().unwrap() {
        eprintln!(
            "skipped: this machine has a CUDA driver, so --backend cuda is not an error here"
        );
        return;
    }
    let o = showdown(&["duel", "--backend", "cuda", "--train-limit", "128"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cuda backend"), "{}", stderr(&o));
}

#[test]
fn bench_conv_names_bad_flags_and_needs_a_gpu() {
    assert_bad_input(&["bench", "conv", "--layers", "conv3"], "--layers");
    assert_bad_input(&["bench", "conv", "--batch", "0"], "--batch");
    let o = showdown(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if v["driver"]["ok"].as_bool().unwrap() {
        eprintln!("skipped: this machine has a CUDA driver, so bench conv is not an error here");
        return;
    }
    let o = showdown(&["bench", "conv", "--batch", "4", "--layers", "lab_conv1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cuda backend"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn bench_infer_and_kernels_name_bad_flags_and_need_a_gpu() {
    assert_bad_input(&["bench", "infer", "--activations", "tanh"], "tanh");
    assert_bad_input(&["bench", "infer", "--batches", "32,0"], "--batches");
    assert_bad_input(&["bench", "infer", "--epochs", "0"], "--epochs");
    assert_bad_input(&["bench", "kernels", "--reps", "0"], "--reps");
    let o = showdown(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    if v["driver"]["ok"].as_bool().unwrap() {
        eprintln!("skipped: this machine has a CUDA driver, so bench infer is not an error here");
        return;
    }
    for args in [
        &["bench", "infer", "--batches", "1"][..],
        &["bench", "kernels", "--rows", "8"][..],
    ] {
        let o = showdown(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("cuda backend"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}

/// The CNN variant switch on the CPU: a GELU duel trains and says so in its report; the GPU
/// backend refuses the variant by name.
#[test]
fn duel_trains_the_gelu_variant_on_the_cpu() {
    let o = showdown(&[
        "duel",
        "--backend",
        "cpu",
        "--activation",
        "gelu",
        "--precisions",
        "fp32",
        "--train-limit",
        "1024",
        "--test-limit",
        "300",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["config"]["activation"], "gelu");
    assert!(v["runs"][0]["test_accuracy"].as_f64().unwrap() > 0.5, "{v}");
    assert_bad_input(&["duel", "--activation", "tanh"], "tanh");
}

#[test]
fn bench_plot_draws_the_committed_h100_runs() {
    let dir = tempfile::tempdir().unwrap();
    let docs = format!("{}/../docs/results", env!("CARGO_MANIFEST_DIR"));
    let out = dir.path().join("plots");
    let o = showdown(&[
        "bench",
        "plot",
        "--conv",
        &format!("{docs}/conv-ladder-h100-2026-11-23.json"),
        "--kernels",
        &format!("{docs}/kernels-h100-2026-11-23.json"),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in [
        "conv_ladder_speedup.svg",
        "conv_runtime.svg",
        "roofline.svg",
    ] {
        let svg = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(svg.starts_with("<svg"), "{f}");
    }
    let roof = std::fs::read_to_string(out.join("roofline.svg")).unwrap();
    assert!(
        roof.contains("NVIDIA H100"),
        "the device comes from the run"
    );
    let o = showdown(&["bench", "plot", "--conv", "/no/such/file.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("/no/such/file.json"), "{}", stderr(&o));
}

#[test]
fn fetch_refuses_a_mirror_serving_the_wrong_bytes() {
    use std::io::{BufRead, BufReader};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming().take(1).flatten() {
            let mut s = s;
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                line.clear();
            }
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    let t = tempfile::tempdir().unwrap();
    let o = showdown(&[
        "data",
        "fetch",
        "mnist",
        "--mirror",
        &url,
        "--dest",
        t.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("SHA-256"), "{}", stderr(&o));
    assert!(
        std::fs::read_dir(t.path()).unwrap().next().is_none(),
        "nothing may be written"
    );
}

#[test]
fn data_list_and_model_print_json() {
    let o = showdown(&["data", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["name"], "mnist-sample");
    assert_eq!(v[0]["available"], true);
    let o = showdown(&["model", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["params"], 34826);
}

#[test]
fn data_samples_prints_real_digits_and_names_bad_flags() {
    let o = showdown(&["data", "samples", "--count", "3", "--offset", "5", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["offset"].as_u64(), v["total"].as_u64()),
        (Some(5), Some(2000))
    );
    assert_eq!(v["labels"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["split"], "test");
    let o = showdown(&["data", "samples", "--count", "1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("mnist-sample test #0: "), "{text}");
    assert!(text.contains('@') || text.contains('%'), "{text}");
    for (args, field) in [
        (&["data", "samples", "--count", "257"][..], "count"),
        (&["data", "samples", "--offset", "2000"][..], "offset"),
        (&["data", "samples", "--split", "val"][..], "split"),
    ] {
        let o = showdown(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(field), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn occupancy_single_query_json_and_text() {
    let args = [
        "occupancy",
        "--cc",
        "9.0",
        "--threads",
        "256",
        "--regs",
        "64",
        "--smem",
        "4096",
    ];
    let o = showdown(&[&args[..], &["--json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["active_blocks_per_sm"], 4);
    assert_eq!(v["active_warps_per_sm"], 32);
    assert_eq!(v["max_warps_per_sm"], 64);
    assert_eq!(v["occupancy_pct"], 50.0);
    assert_eq!(v["limiters"], serde_json::json!(["registers"]));
    assert_eq!(v["warps_per_block"], 8);
    assert_eq!(v["blocks_by_warps"], 8);
    assert_eq!(v["blocks_by_registers"], 4);
    assert_eq!(v["blocks_by_shared_memory"], 45);
    assert_eq!(v["blocks_by_max_blocks"], 32);
    assert_eq!(v["registers_per_block"], 16384);
    assert_eq!(v["shared_memory_per_block"], 5120);
    assert_eq!(v["carveout_bytes"], 32768);
    assert_eq!(v["notes"], serde_json::json!([]));
    // The readable form says the same.
    let o = showdown(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for needle in [
        "sm_90",
        "32 of 64",
        "50.0 %",
        "registers",
        "5120 B",
        "32 KB",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
}

#[test]
fn occupancy_batch_appends_the_answers() {
    let t = tempfile::tempdir().unwrap();
    let rows = t.path().join("rows.csv");
    std::fs::write(
        &rows,
        "threads,regs,smem,carveout\n\
         256,64,4096,\n\
         1024,32,0,-1\n\
         128,32,10240,25\n\
         32,0,0,\n\
         1024,65,0,\n\
         128,32,102400,\n",
    )
    .unwrap();
    let path = rows.to_str().unwrap();
    let o = showdown(&["occupancy", "--cc", "9.0", "--batch", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "threads,regs,smem,carveout,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
         256,64,4096,,4,32,50,registers\n\
         1024,32,0,-1,2,64,100,warps+registers\n\
         128,32,10240,25,5,20,31.25,shared_memory\n\
         32,0,0,,32,32,50,blocks\n\
         1024,65,0,,0,0,0,registers\n\
         128,32,102400,,2,8,12.5,shared_memory\n"
    );
    // Three columns; another architecture (sm_86: 48 warps, 16 blocks).
    std::fs::write(&rows, "threads,regs,smem\n1024,32,0\n32,16,0\n").unwrap();
    let o = showdown(&["occupancy", "--cc", "8.6", "--batch", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "threads,regs,smem,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
         1024,32,0,1,32,66.6667,warps\n\
         32,16,0,16,16,33.3333,blocks\n"
    );
    // --json: one array of {line, input, output}.
    let o = showdown(&["occupancy", "--cc", "8.6", "--batch", path, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2));
    assert_eq!(v[1]["line"], 3);
    assert_eq!(v[1]["input"]["threads_per_block"], 32);
    assert_eq!(v[1]["output"]["active_blocks_per_sm"], 16);
}

#[test]
fn occupancy_bad_input_exits_2() {
    let t = tempfile::tempdir().unwrap();
    let rows = t.path().join("rows.csv");
    let path = rows.to_str().unwrap();
    std::fs::write(&rows, "threads,regs,smem\n256,64,4096\n256,sixty-four,0\n").unwrap();
    let batch = ["occupancy", "--cc", "9.0", "--batch", path];
    assert_bad_input(&batch, &format!("{path}: line 3: regs 'sixty-four'"));
    std::fs::write(&rows, "threads,regs,smem\n256,64\n").unwrap();
    assert_bad_input(&batch, "line 2: expected 3 fields");
    // A row the driver refuses (0 threads); 2048 threads is answered with 0 blocks now.
    std::fs::write(&rows, "threads,regs,smem\n\n0,64,0\n").unwrap();
    assert_bad_input(&batch, "line 3: 0 threads per block is out of range");
    std::fs::write(&rows, "threads,registers,smem\n256,64,0\n").unwrap();
    assert_bad_input(&batch, "line 1: expected the header");
    assert_bad_input(
        &[
            "occupancy",
            "--cc",
            "9.0",
            "--batch",
            &format!("{path}.missing"),
        ],
        "rows.csv.missing",
    );
    // Unknown or unreadable compute capabilities.
    let query = ["--threads", "256", "--regs", "64"];
    assert_bad_input(&[&["occupancy", "--cc", "8.5"], &query[..]].concat(), "8.5");
    assert_bad_input(
        &[&["occupancy", "--cc", "banana"], &query[..]].concat(),
        "banana",
    );
    assert_bad_input(&["occupancy", "--cc", "3.5", "--batch", path], "3.5");
    // Out-of-range flags and flag mixes.
    assert_bad_input(
        &[
            &["occupancy", "--cc", "9.0", "--carveout", "101"],
            &query[..],
        ]
        .concat(),
        "carveout",
    );
    assert_bad_input(&["occupancy", "--cc", "9.0", "--threads", "256"], "--regs");
    assert_bad_input(
        &[&["occupancy", "--cc", "9.0", "--batch", path], &query[..]].concat(),
        "--batch",
    );
}

fn data(rel: &str) -> String {
    format!(
        "{}/../compute/core/tests/data/ncu/{rel}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn ncu_import_and_panels_of_real_exports() {
    let o = showdown(&[
        "ncu",
        "import",
        &data("torch_cupy_set_full_details.csv"),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernels"].as_array().unwrap().len(), 16);
    assert_eq!(v["kernels"][0]["cc"], "9.0");
    assert_eq!(v["kernels"][0]["block"], serde_json::json!([256, 1, 1]));
    let o = showdown(&["ncu", "panels", &data("ours_details.csv"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in v.as_array().unwrap() {
        let panels = k["panels"].as_array().unwrap();
        assert_eq!(panels.len(), 7, "{}", k["short_name"]);
        assert!(panels
            .iter()
            .all(|p| !p["narrative"].as_str().unwrap().is_empty()));
    }
    // The same report with and without --print-units base: identical SI values.
    let si = |file: &str| -> Vec<f64> {
        let o = showdown(&["ncu", "import", &data(file), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|k| {
                k["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|m| m["si_value"].as_f64())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let (a, b) = (si("ours_details.csv"), si("ours_details_base.csv"));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-2 * y.abs().max(1e-30) + 1e-12,
            "{x} vs {y}"
        );
    }
}

#[test]
fn ncu_bad_inputs_exit_2_naming_file_and_line() {
    let t = tempfile::tempdir().unwrap();
    let unrelated = t.path().join("unrelated.csv");
    std::fs::write(&unrelated, "name,value\nx,1\n").unwrap();
    assert_bad_input(
        &["ncu", "import", unrelated.to_str().unwrap()],
        "unrelated.csv: line 1",
    );
    assert_bad_input(
        &["ncu", "import", &data("ours_head.ncu-rep")],
        "--csv --page details --print-units base",
    );
    let empty = t.path().join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    assert_bad_input(&["ncu", "panels", empty.to_str().unwrap()], "empty.csv");
    assert_bad_input(
        &[
            "ncu",
            "import",
            t.path().join("missing.csv").to_str().unwrap(),
        ],
        "no such file",
    );
    assert_bad_input(
        &[
            "ncu",
            "panels",
            &data("ours_details.csv"),
            "--kernel",
            "999",
        ],
        "--kernel",
    );
}

#[test]
fn kernels_list_names_every_family() {
    let o = showdown(&["kernels", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["train", "activations", "norm", "conv_ladder", "cnn_infer"]
    );
    assert!(v[1]["entry_points"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "relu_f16"));
    assert_bad_input(
        &["kernels", "show", "no_such_kernel"],
        "not in the registry",
    );
}

fn image(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn ncu_library_keeps_imports_and_panel_screenshots() {
    let t = tempfile::tempdir().unwrap();
    let store = t.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--store", store]);
        let o = showdown(&all);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        o
    };
    let json = |o: &Output| -> serde_json::Value { serde_json::from_slice(&o.stdout).unwrap() };
    let v = json(&run(&[
        "ncu",
        "import",
        &data("ours_details.csv"),
        "--save",
        "--json",
    ]));
    let id = v["saved"]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 16);
    assert_eq!(
        v["kernels"].as_array().unwrap().len(),
        v["saved"]["kernels"]
    );
    let kernel = v["kernels"][0]["id"].as_u64().unwrap().to_string();

    let shot = json(&run(&[
        "ncu",
        "attach",
        &id,
        &image("shot.png"),
        "--panel",
        "occupancy",
        "--kernel",
        &kernel,
        "--caption",
        "<img src=x onerror=alert(1)> from ncu-ui",
        "--json",
    ]));
    assert_eq!(
        (&shot["width"], &shot["height"], &shot["format"]),
        (
            &serde_json::json!(24),
            &serde_json::json!(16),
            &serde_json::json!("png")
        )
    );
    let list = json(&run(&["ncu", "list", "--json"]));
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["screenshots"].as_array().unwrap().len(), 1);

    // Panels of the saved import carry the screenshot on the occupancy panel only.
    let panels = json(&run(&["ncu", "panels", &id, "--kernel", &kernel, "--json"]));
    for p in panels[0]["panels"].as_array().unwrap() {
        let n = p["screenshots"].as_array().unwrap().len();
        assert_eq!(n, usize::from(p["id"] == "occupancy"), "{}", p["id"]);
    }
    let occ = panels[0]["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "occupancy")
        .unwrap();
    assert_eq!(
        occ["screenshots"][0]["caption"],
        "<img src=x onerror=alert(1)> from ncu-ui"
    );

    // Bad screenshots and names exit 2 with the reason; nothing is stored.
    let bad = |args: &[&str], needle: &str| {
        let mut all = args.to_vec();
        all.extend(["--store", store]);
        assert_bad_input(&all, needle);
    };
    bad(
        &["ncu", "attach", &id, &image("cut.png"), "--panel", "launch"],
        "cut.png: not a valid PNG image",
    );
    bad(
        &[
            "ncu",
            "attach",
            &id,
            &data("ours_raw.csv"),
            "--panel",
            "launch",
        ],
        "not a PNG or JPEG image",
    );
    bad(
        &["ncu", "attach", &id, &image("shot.png"), "--panel", "speed"],
        "unknown panel 'speed'",
    );
    bad(
        &[
            "ncu",
            "attach",
            "0000000000000000",
            &image("shot.png"),
            "--panel",
            "launch",
        ],
        "no import '0000000000000000'",
    );
    bad(&["ncu", "panels", "0000000000000000"], "no import");
    let list = json(&run(&["ncu", "list", "--json"]));
    assert_eq!(list[0]["screenshots"].as_array().unwrap().len(), 1);

    let sid = shot["id"].as_str().unwrap();
    run(&["ncu", "detach", &id, sid]);
    run(&["ncu", "remove", &id]);
    let list = json(&run(&["ncu", "list", "--json"]));
    assert!(list.as_array().unwrap().is_empty());
}

#[test]
fn bench_duel_prints_ours_beside_the_peers_with_ratios() {
    let t = tempfile::tempdir().unwrap();
    // A small real data set in the standard IDX names: 64 train and 16 test images.
    let pixels: Vec<u8> = (0..64 * 784).map(|i| (i * 7 % 251) as u8).collect();
    let data = t.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(
        data.join("train-images-idx3-ubyte"),
        idx(&[64, 28, 28], &pixels),
    )
    .unwrap();
    let labels: Vec<u8> = (0..64).map(|i| (i % 10) as u8).collect();
    std::fs::write(data.join("train-labels-idx1-ubyte"), idx(&[64], &labels)).unwrap();
    std::fs::write(
        data.join("t10k-images-idx3-ubyte"),
        idx(&[16, 28, 28], &pixels[..16 * 784]),
    )
    .unwrap();
    std::fs::write(
        data.join("t10k-labels-idx1-ubyte"),
        idx(&[16], &labels[..16]),
    )
    .unwrap();
    // Stand-ins for the reference scripts: they print what the real ones print.
    let reference = t.path().join("reference");
    std::fs::create_dir(&reference).unwrap();
    std::fs::write(
        reference.join("anchor_graph.py"),
        "import sys\nassert sys.argv[1].endswith('data')\nprint('warm-up')\nprint('{\"variant\": \"graph fp16 static-scale\", \"epoch_ms_median\": 100000.0, \"max_mem_alloc_mb\": 580.0, \"test_acc\": 0.8958}')\nprint('{\"variant\": \"graph bs1024\", \"epoch_ms_median\": 1.0, \"batch\": 1024}')\nprint('{\"variant\": \"sample\", \"epoch_ms_median\": 2.0, \"data\": \"mnist10k-\"}')\n",
    )
    .unwrap();
    std::fs::write(
        reference.join("anchor_train.py"),
        "import sys\nassert sys.argv[2] == 'eager'\nsys.exit('CUDA not available')\n",
    )
    .unwrap();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "bench",
            "duel",
            "--backend",
            "cpu",
            "--data-dir",
            data.to_str().unwrap(),
            "--epochs",
            "1",
            "--batch",
            "32",
            "--precisions",
            "fp32",
            "--reference",
            reference.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // The eager stand-in fails: exit 1, the table still printed, the failure named.
    let a = args(&[]);
    let o = showdown(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("anchor_train.py failed: exit status: 1"),
        "{out}"
    );
    assert!(stderr(&o).contains("comparison is incomplete"));
    // Without the eager peers: exit 0; ratio against the best bs-32 peer... there is none at
    // batch 32, so it says so; the bs-1024 row is labelled, the MNIST-sample row left out.
    let json_out = t.path().join("bench.json");
    let a = args(&["--skip-eager", "--json-out", json_out.to_str().unwrap()]);
    let o = showdown(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("pytorch graph bs1024 (bs 1024)"), "{out}");
    assert!(!out.contains("pytorch sample"), "{out}");
    assert!(out.contains("no peer"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
    assert_eq!(v["peers"].as_array().unwrap().len(), 2);
    assert_eq!(v["ours"]["runs"][0]["precision"], "fp32");
    // At batch 128 (the peers' default) the ratio is best peer / ours.
    let a: Vec<String> = args(&["--skip-eager", "--json"])
        .into_iter()
        .map(|s| if s == "32" { "128".into() } else { s })
        .collect();
    let o = showdown(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["best_peer_ms"], 100000.0);
}

// ---------------------------------------------------------------- issues 18 and 19

#[test]
fn occupancy_batch_answers_over_limit_rows_with_zero_blocks() {
    // Issue 18: `--batch` stopped (exit 2) at the first row with more shared memory than a
    // block may use; the driver answers such a launch with 0 blocks per SM, and so do we, with
    // the limiter that stops it. The last row is the largest that still runs (227 KB).
    let t = tempfile::tempdir().unwrap();
    let rows = t.path().join("rows.csv");
    std::fs::write(
        &rows,
        "threads,regs,smem\n\
         256,64,4096\n\
         128,32,232449\n\
         256,32,300000\n\
         2048,32,0\n\
         1056,16,0\n\
         128,256,0\n\
         1024,65,0\n\
         128,32,232448\n",
    )
    .unwrap();
    let path = rows.to_str().unwrap();
    let o = showdown(&["occupancy", "--cc", "9.0", "--batch", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "threads,regs,smem,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
         256,64,4096,4,32,50,registers\n\
         128,32,232449,0,0,0,shared_memory\n\
         256,32,300000,0,0,0,shared_memory\n\
         2048,32,0,0,0,0,warps\n\
         1056,16,0,0,0,0,warps\n\
         128,256,0,0,0,0,registers\n\
         1024,65,0,0,0,0,registers\n\
         128,32,232448,1,4,6.25,shared_memory\n"
    );
    let o = showdown(&["occupancy", "--cc", "9.0", "--batch", path, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(8));
    assert_eq!(v[1]["line"], 3);
    assert_eq!(v[1]["output"]["active_blocks_per_sm"], 0);
    assert_eq!(v[1]["output"]["blocks_by_shared_memory"], 0);
    assert!(v[1]["output"]["notes"][0]
        .as_str()
        .unwrap()
        .contains("cannot launch"));
    // A single launch beyond a limit is still refused, with the limit named.
    assert_bad_input(
        &[
            "occupancy",
            "--cc",
            "9.0",
            "--threads",
            "128",
            "--regs",
            "32",
            "--smem",
            "232449",
        ],
        "per-block maximum of 232448 B",
    );
}

#[test]
fn occupancy_batch_names_unparseable_lines_and_answers_the_rest() {
    // Valid, over-limit and unparseable rows mixed: every readable row is answered, each bad
    // line is named on stderr, and the exit code is 2 after all the answers.
    let t = tempfile::tempdir().unwrap();
    let rows = t.path().join("mixed.csv");
    std::fs::write(
        &rows,
        "threads,regs,smem,carveout\n\
         256,64,4096,\n\
         256,sixty-four,0,\n\
         128,32,240000,\n\
         1024\n\
         128,32,10240,25\n\
         128,32,0,101\n\
         32,0,0,-1\n",
    )
    .unwrap();
    let path = rows.to_str().unwrap();
    let o = showdown(&["occupancy", "--cc", "9.0", "--batch", path]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout.clone()).unwrap(),
        "threads,regs,smem,carveout,blocks_per_sm,warps_per_sm,occupancy_pct,limiter\n\
         256,64,4096,,4,32,50,registers\n\
         128,32,240000,,0,0,0,shared_memory\n\
         128,32,10240,25,5,20,31.25,shared_memory\n\
         32,0,0,-1,32,32,50,blocks\n"
    );
    let err = stderr(&o);
    for needle in [
        format!("{path}: line 3: regs 'sixty-four' is not a whole number"),
        format!("{path}: line 5: expected 4 fields"),
        format!("{path}: line 7: shared-memory carveout preference 101%"),
        format!(
            "{path}: 3 row(s) could not be read and were left out (line 3, 5, 7); the other 4 \
             row(s) were answered"
        ),
    ] {
        assert!(err.contains(&needle), "{needle:?} not in\n{err}");
    }
    assert_eq!(err.lines().count(), 4, "{err}");
    // The same from stdin, as JSON: the answered rows keep their line numbers.
    let mut child = Command::new(env!("CARGO_BIN_EXE_showdown"))
        .args(["occupancy", "--cc", "9.0", "--batch", "-", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&rows).unwrap())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 4, 6, 8]);
    assert!(stderr(&o).contains("<stdin>: line 5: expected 4 fields"));
}

#[cfg(target_os = "linux")]
#[test]
fn occupancy_batch_of_dev_zero_exits_2_quickly() {
    // Issue 19: `--batch /dev/zero` read one endless line until memory ran out.
    let limit = std::time::Duration::from_secs(5);
    let (code, err, elapsed, rss_kib) = common::run_bounded(
        &["occupancy", "--cc", "9.0", "--batch", "/dev/zero"],
        false,
        limit,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("/dev/zero: a character device, not a regular file"),
        "{err}"
    );
    assert!(elapsed < std::time::Duration::from_secs(1), "{elapsed:?}");
    assert!(rss_kib < 32 * 1024, "peak resident set {rss_kib} KiB");
    // The same stream through stdin: the first line is cut at 64 KiB.
    let (code, err, elapsed, rss_kib) =
        common::run_bounded(&["occupancy", "--cc", "9.0", "--batch", "-"], true, limit);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("<stdin>: line 1: longer than 65536 bytes"),
        "{err}"
    );
    assert!(elapsed < std::time::Duration::from_secs(1), "{elapsed:?}");
    assert!(rss_kib < 32 * 1024, "peak resident set {rss_kib} KiB");
}

#[test]
fn occupancy_batch_of_a_directory_exits_2() {
    // Issue 19: a directory gave exit 1 (a read error) instead of a bad-input refusal.
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().to_str().unwrap();
    let o = showdown(&["occupancy", "--cc", "9.0", "--batch", dir]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{dir}: a directory, not a regular file")),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn ncu_import_keeps_a_report_with_an_overflowing_metric() {
    // Issue 19: one metric value of `1e400` (or `inf`, or one overflowing in SI units) refused
    // the whole report. Now the report imports, that value is kept as printed and marked
    // unreadable (no SI value), the other metrics are intact, and a warning names it.
    let t = tempfile::tempdir().unwrap();
    let header = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\",\"Estimated Speedup Type\",\"Estimated Speedup\"";
    let row = |name: &str, unit: &str, value: &str| {
        format!(
            "\"0\",\"641\",\"python3.12\",\"127.0.0.1\",\"k(float*)\",\"1\",\"7\",\"(256, 1, 1)\",\"(16, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"{name}\",\"{unit}\",\"{value}\","
        )
    };
    let export = t.path().join("odd.csv");
    std::fs::write(
        &export,
        format!(
            "{header}\n{}\n{}\n{}\n{}\n",
            row("Duration", "us", "52.9"),
            row("SM Frequency", "Ghz", "1e400"),
            row("DRAM Throughput", "Tbyte/second", "1e308"),
            row("Memory Throughput", "%", "85.2"),
        ),
    )
    .unwrap();
    let path = export.to_str().unwrap();
    let o = showdown(&["ncu", "import", path, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let metrics = v["kernels"][0]["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 4);
    let by_name = |n: &str| metrics.iter().find(|m| m["name"] == n).unwrap();
    for (name, printed) in [("SM Frequency", "1e400"), ("DRAM Throughput", "1e308")] {
        let m = by_name(name);
        assert_eq!(m["value"], printed, "{m}");
        assert_eq!(m["unreadable"], true, "{m}");
        assert!(m["si_value"].is_null(), "{m}");
    }
    assert_eq!(by_name("Duration")["value"], 52.9);
    assert!((by_name("Duration")["si_value"].as_f64().unwrap() - 52.9e-6).abs() < 1e-15);
    assert!(by_name("Duration").get("unreadable").is_none());
    assert_eq!(by_name("Memory Throughput")["value"], 85.2);
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("2 value(s) are not finite numbers") && warnings.contains("line 3"),
        "{warnings}"
    );
    // The panels build, and show the odd value as unreadable.
    let o = showdown(&["ncu", "panels", path, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows: Vec<&serde_json::Value> = v[0]["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["metrics"].as_array().unwrap())
        .filter(|r| r["name"] == "SM Frequency")
        .collect();
    assert!(!rows.is_empty());
    assert!(rows
        .iter()
        .all(|r| r["value"] == "unreadable value (1e400)"));
}

#[test]
fn duel_negative_batch_names_the_flag_and_exits_2() {
    // A negative number is the flag's value, refused by its parser naming the flag (not clap's
    // "unexpected argument '-1'", which names none).
    for (args, flag) in [
        (&["duel", "--batch", "-1"][..], "--batch"),
        (&["duel", "--epochs", "-3"], "--epochs"),
        (&["train", "--seed", "-7"], "--seed"),
        (&["data", "samples", "--count", "-1"], "--count"),
        (&["bench", "conv", "--reps", "-5"], "--reps"),
        (
            &[
                "occupancy",
                "--cc",
                "9.0",
                "--threads",
                "-256",
                "--regs",
                "32",
            ],
            "--threads",
        ),
    ] {
        let o = showdown(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("invalid value '-"), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: expected {flag} in {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
    // A flag after a flag is still a flag.
    let o = showdown(&["duel", "--batch", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
