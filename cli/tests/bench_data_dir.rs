//! `--data-dir` on the benches that load a data set (`bench conv`, `bench anatomy`, `bench
//! infer`): a bad folder is refused naming the flag and the folder (exit code 2), and a good
//! one is what the bench's job reads, over `$SHOWDOWN_FASHION_MNIST_DIR` and the data home.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails by panicking

use std::path::Path;
use std::process::{Command, Output};

/// `showdown args` with the data set's environment pointed away: a folder that is not there
/// for Fashion-MNIST, an empty data home for MNIST. What the bench reads comes from the flag.
fn showdown(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_showdown"))
        .args(args)
        .env(
            "SHOWDOWN_FASHION_MNIST_DIR",
            "/nonexistent/env-fashion-mnist",
        )
        .env("SHOWDOWN_DATA_HOME", home)
        .output()
        .expect("the showdown binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An IDX file (raw, not gzip: the loader reads both): `dims` big-endian after the magic.
fn idx(path: &Path, kind: u8, dims: &[u32], data: &[u8]) {
    let mut b = vec![0, 0, kind, dims.len() as u8];
    for d in dims {
        b.extend_from_slice(&d.to_be_bytes());
    }
    b.extend_from_slice(data);
    std::fs::write(path, b).unwrap();
}

/// The four Fashion-MNIST file names with `train` training and `test` test images of side
/// `side` (28 for a good set), labels 0, 1, 2, ….
fn tiny_set(dir: &Path, train: u32, test: u32, side: u32) {
    for (prefix, n) in [("train", train), ("t10k", test)] {
        let pixels: Vec<u8> = (0..n * side * side).map(|i| (i % 251) as u8).collect();
        idx(
            &dir.join(format!("{prefix}-images-idx3-ubyte")),
            0x08,
            &[n, side, side],
            &pixels,
        );
        let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
        idx(
            &dir.join(format!("{prefix}-labels-idx1-ubyte")),
            0x08,
            &[n],
            &labels,
        );
    }
}

/// The cheapest run of each bench, on the CPU where it can.
const CONV: &[&str] = &[
    "bench",
    "conv",
    "--batch",
    "1",
    "--reps",
    "1",
    "--layers",
    "lab_conv1",
    "--cpu-batch",
    "1",
];
const ANATOMY: &[&str] = &[
    "bench",
    "anatomy",
    "--backend",
    "cpu",
    "--precisions",
    "fp32",
    "--steps",
    "1",
];
const INFER: &[&str] = &["bench", "infer", "--batches", "1", "--activations", "relu"];
const DUEL: &[&str] = &["bench", "duel", "--backend", "cpu", "--precisions", "fp32"];

fn with(base: &[&str], more: &[&str]) -> Vec<String> {
    base.iter().chain(more).map(|s| s.to_string()).collect()
}

fn run(args: &[String], home: &Path) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    showdown(&args, home)
}

#[test]
fn bench_conv_refuses_a_data_dir_that_is_not_there_naming_the_flag_and_the_path() {
    let home = tempfile::tempdir().unwrap();
    let o = run(
        &with(
            CONV,
            &[
                "--dataset",
                "fashion-mnist",
                "--data-dir",
                "/nonexistent/fashion",
            ],
        ),
        home.path(),
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--data-dir"), "{e}");
    assert!(e.contains("/nonexistent/fashion"), "{e}");
    assert!(e.contains("not a folder"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "one line: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn every_bench_that_loads_a_data_set_refuses_a_bad_data_dir_the_same_way() {
    let home = tempfile::tempdir().unwrap();
    for base in [ANATOMY, INFER, DUEL] {
        let o = run(
            &with(
                base,
                &["--dataset", "fashion-mnist", "--data-dir", "/nonexistent/x"],
            ),
            home.path(),
        );
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{base:?}: {e}");
        assert!(
            e.contains("invalid --data-dir '/nonexistent/x'"),
            "{base:?}: {e}"
        );
    }
}

#[test]
fn bench_conv_names_the_file_missing_from_the_folder() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tiny_set(dir.path(), 3, 2, 28);
    std::fs::remove_file(dir.path().join("t10k-labels-idx1-ubyte")).unwrap();
    let d = dir.path().to_str().unwrap();
    let o = run(
        &with(CONV, &["--dataset", "fashion-mnist", "--data-dir", d]),
        home.path(),
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--data-dir"), "{e}");
    assert!(
        e.contains(&format!("{d}/t10k-labels-idx1-ubyte")),
        "the missing file, in the folder: {e}"
    );
}

/// The ladder's job (not the CLI) reads the folder: a test split of 27×27 images in it is
/// refused by the loader naming that file, before any GPU work, on any machine. Through
/// `$SHOWDOWN_FASHION_MNIST_DIR` (pointed at no folder) the job would have refused the
/// environment's folder instead.
#[test]
fn bench_conv_job_reads_the_folder_given() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tiny_set(dir.path(), 3, 2, 27);
    let d = dir.path().to_str().unwrap();
    let o = run(
        &with(CONV, &["--dataset", "fashion-mnist", "--data-dir", d]),
        home.path(),
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!("{}/train-images-idx3-ubyte", dir.path().display())),
        "{e}"
    );
    assert!(e.contains("28×28"), "{e}");
    assert!(!e.contains("env-fashion-mnist"), "{e}");
}

/// A step's anatomy on the CPU from a folder of 3 training images: it runs at batch 2 and says
/// it used fashion-mnist, and batch 4 is refused for those 3 images (the system's or the
/// environment's Fashion-MNIST has 60,000). `--dataset mnist` reads the same folder.
#[test]
fn bench_anatomy_trains_on_the_folder_given() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tiny_set(dir.path(), 3, 2, 28);
    let d = dir.path().to_str().unwrap();
    let o = run(
        &with(
            ANATOMY,
            &[
                "--dataset",
                "fashion-mnist",
                "--data-dir",
                d,
                "--batch",
                "2",
                "--json",
            ],
        ),
        home.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["dataset"], "fashion-mnist", "{v}");

    for name in ["fashion-mnist", "mnist"] {
        let o = run(
            &with(
                ANATOMY,
                &["--dataset", name, "--data-dir", d, "--batch", "4"],
            ),
            home.path(),
        );
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(
            e.contains(&format!("3 training images of {name}")),
            "{name}: {e}"
        );
    }
}

/// As in `duel`, a folder overrides the data set's own location whatever its name: with the
/// default `--dataset` the job reads the folder's 3 images, not the built-in sample's 8,000.
#[test]
fn a_data_dir_overrides_the_built_in_sample_as_in_the_duel() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    tiny_set(dir.path(), 3, 2, 28);
    let o = run(
        &with(
            ANATOMY,
            &["--data-dir", dir.path().to_str().unwrap(), "--batch", "4"],
        ),
        home.path(),
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("3 training images"), "{e}");
}
