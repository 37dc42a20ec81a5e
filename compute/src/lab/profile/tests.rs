//! Tests of `profile`.

use super::*;
use crate::bench::kernels::{LabDtype, Op};
use crate::ncu_runner::{locate_ncu, ncu_missing};
use crate::protocol::Event;
use std::ffi::OsStr;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A real details export of our kernels (relu/gelu_erf f32/f16 among others).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("core/tests/data/ncu")
        .join(name)
}

/// Writes an executable shell script `body` as `dir/ncu`.
fn fake_ncu(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("ncu");
    {
        let mut f = File::create(&p).unwrap();
        f.write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
            .unwrap();
        f.sync_all().unwrap();
    }
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn kernel_request() -> ProfileRequest {
    ProfileRequest {
        what: ProfileTarget::Kernel {
            op: Op::GeluErf,
            dtype: LabDtype::F16,
            rows: 8192,
            cols: 4096,
        },
        sections: Vec::new(),
    }
}

/// Runs `profile_with` with `ncu` as what the search found, collecting the job's events.
fn run_profile(
    req: &ProfileRequest,
    store: &ImportStore,
    ncu: Result<PathBuf>,
    cancel: &AtomicBool,
) -> (Result<ProfileOutcome>, Vec<Event>) {
    let mut events = Vec::new();
    let mut on_event = |e: Event| events.push(e);
    let mut job = LabJob::new("profile", &mut on_event, cancel);
    let r = profile_with(
        req,
        Path::new("/opt/showdown/bin/showdown"),
        store,
        &mut job,
        || ncu,
    );
    drop(job);
    (r, events)
}

#[test]
fn a_profile_imports_what_ncu_prints_and_names_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let csv = fixture("ours_details_base.csv");
    let args_file = dir.path().join("args");
    let ncu = fake_ncu(
        dir.path(),
        &format!(
            "printf '%s\\n' \"$@\" > '{}'\necho '==PROF== Connected to process 1'\ncat '{}'\n\
             echo '==PROF== Disconnected from process 1'",
            args_file.display(),
            csv.display()
        ),
    );
    let cancel = AtomicBool::new(false);
    let (r, events) = run_profile(&kernel_request(), &store, Ok(ncu), &cancel);
    let out = r.unwrap();
    // The command: our flags, every default section, the filter, the target and its JSON.
    for part in [
        "--csv --page details --print-units base",
        "--clock-control none --cache-control none",
        "--section SpeedOfLight",
        "--section SchedulerStats",
        "--nvtx --nvtx-include profile/ --launch-count 1",
        "/opt/showdown/bin/showdown profile-target --what '{\"target\":\"kernel\"",
    ] {
        assert!(
            out.command.contains(part),
            "{part} missing: {}",
            out.command
        );
    }
    // ncu got the JSON as one argument, which reads back as the target.
    let args = std::fs::read_to_string(&args_file).unwrap();
    let json = args.lines().last().unwrap();
    let back: ProfileTarget = serde_json::from_str(json).unwrap();
    assert_eq!(back, kernel_request().what);
    // The import: named after the target, holding the export's kernels.
    assert!(
        out.import
            .source_name
            .starts_with("profile-kernel-gelu_erf-f16-8192x4096-")
            && out.import.source_name.ends_with(".csv"),
        "{}",
        out.import.source_name
    );
    let (summary, report) = store.load(&out.import.id).unwrap();
    assert_eq!(summary.id, out.import.id);
    assert!(report.kernels.len() >= 4, "{}", report.kernels.len());
    assert_eq!(out.import.kernels, report.kernels.len());
    for name in ["gelu_erf_f16", "relu_f32"] {
        assert!(
            report.kernels.iter().any(|k| k.name == name),
            "{name} not imported"
        );
    }
    // The same path as an ncu_import of the same bytes: the same import.
    let bytes = std::fs::read(&csv).unwrap();
    let again = import_csv("again.csv", &bytes, &store).unwrap();
    assert_eq!(again.kernels, out.import.kernels);
    assert!(events.iter().any(|e| matches!(e, Event::Lab { .. })));
}

#[test]
fn chosen_sections_are_passed_and_bad_ones_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let ncu = fake_ncu(
        dir.path(),
        &format!("cat '{}'", fixture("ours_details_base.csv").display()),
    );
    let mut req = kernel_request();
    req.what = ProfileTarget::Rung {
        layer: "conv2".into(),
        rung: 4,
        batch: 1024,
    };
    req.sections = vec!["Occupancy".into(), "LaunchStats".into(), "Occupancy".into()];
    let cancel = AtomicBool::new(false);
    let out = run_profile(&req, &store, Ok(ncu), &cancel).0.unwrap();
    assert!(
        out.command
            .contains("--section Occupancy --section LaunchStats --metrics 'regex:"),
        "{}",
        out.command
    );
    assert!(!out.command.contains("SpeedOfLight"), "{}", out.command);
    assert!(
        out.import
            .source_name
            .starts_with("profile-rung4-lab_conv2-b1024-"),
        "{}",
        out.import.source_name
    );
    req.sections = vec!["Speed Of Light; rm -rf /".into()];
    let e = run_profile(&req, &store, Err(ncu_missing()), &cancel)
        .0
        .unwrap_err();
    assert!(e.to_string().contains("invalid sections"), "{e}");
}

#[test]
fn err_nvgpuctrperm_is_explained_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let ncu = fake_ncu(
        dir.path(),
        "echo '==PROF== Connected to process 4242 (/opt/showdown/bin/showdown)'\n\
         echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access \
         NVIDIA GPU Performance Counters on the target device 0.'\nexit 1",
    );
    let cancel = AtomicBool::new(false);
    let e = run_profile(&kernel_request(), &store, Ok(ncu), &cancel)
        .0
        .unwrap_err();
    let m = e.to_string();
    for part in [
        "ERR_NVGPUCTRPERM",
        "NVreg_RestrictProfilingToAdminUsers=0",
        "/etc/modprobe.d/",
        "root",
        "CAP_SYS_ADMIN",
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
    ] {
        assert!(m.contains(part), "{part} missing: {m}");
    }
    assert_eq!(e.kind(), crate::error::ErrorKind::Runtime);
    assert!(store.list_checked().unwrap().imports.is_empty());
}

#[test]
fn a_failing_ncu_shows_its_last_lines_and_an_empty_csv_says_no_kernel_matched() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let ncu = fake_ncu(
        dir.path(),
        "echo 'line one' >&2\necho '==ERROR== the application returned an error code (1)' \
         >&2\nexit 3",
    );
    let cancel = AtomicBool::new(false);
    let e = run_profile(&kernel_request(), &store, Ok(ncu), &cancel)
        .0
        .unwrap_err();
    let m = e.to_string();
    assert!(m.contains("exit status: 3"), "{m}");
    assert!(
        m.contains("line one | ==ERROR== the application returned an error code (1)"),
        "{m}"
    );

    // ncu 2025 prints the application's failure on standard output, the program's own
    // error going to standard error: both are shown.
    let dir = tempfile::tempdir().unwrap();
    let ncu = fake_ncu(
        dir.path(),
        "echo 'error: cuda backend: no CUDA GPU' >&2\n\
         echo '==ERROR== The application returned an error code (1).'\nexit 1",
    );
    let e = run_profile(&kernel_request(), &store, Ok(ncu), &cancel)
        .0
        .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains(
            "error: cuda backend: no CUDA GPU | ==ERROR== The application returned an \
             error code (1)."
        ),
        "{m}"
    );

    let dir = tempfile::tempdir().unwrap();
    let ncu = fake_ncu(
        dir.path(),
        "echo '==WARNING== Note: Running with uncontrolled GPU caches.' >&2\n\
         echo '==PROF== Connected to process 7'\necho '==PROF== Disconnected from process 7'\n\
         echo '==WARNING== No kernels were profiled.'",
    );
    let e = run_profile(&kernel_request(), &store, Ok(ncu), &cancel)
        .0
        .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("ncu profiled no kernel of gelu_erf f16 8192×4096"),
        "{m}"
    );
    assert!(m.contains("No kernels were profiled"), "{m}");
    assert!(
        !m.contains("Note: Running with") && !m.contains("==PROF=="),
        "{m}"
    );
}

#[test]
fn without_ncu_the_error_says_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let found = locate_ncu(None, Some(empty.path().as_os_str()), &[]);
    let cancel = AtomicBool::new(false);
    let e = run_profile(&kernel_request(), &store, found, &cancel)
        .0
        .unwrap_err();
    let m = e.to_string();
    for part in [
        "Nsight Compute (ncu) was not found",
        "Install Nsight Compute",
        "https://developer.nvidia.com/nsight-compute",
        "SHOWDOWN_NCU",
    ] {
        assert!(m.contains(part), "{part} missing: {m}");
    }
    // $SHOWDOWN_NCU naming nothing usable is named; naming the program finds it.
    let bad = locate_ncu(Some(OsStr::new("/nonexistent/ncu")), None, &[]).unwrap_err();
    assert!(
        bad.to_string()
            .contains("$SHOWDOWN_NCU is set to '/nonexistent/ncu'"),
        "{bad}"
    );
    let ncu = fake_ncu(dir.path(), "exit 0");
    assert_eq!(locate_ncu(Some(ncu.as_os_str()), None, &[]).unwrap(), ncu);
    assert_eq!(
        locate_ncu(None, Some(dir.path().as_os_str()), &[]).unwrap(),
        ncu
    );
    assert_eq!(locate_ncu(None, None, &[&ncu]).unwrap(), ncu);
}

#[test]
fn an_ncu_rep_is_exported_through_ncu_and_kept_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let csv = fixture("ours_details_base.csv");
    let ncu = fake_ncu(
        dir.path(),
        &format!(
            "[ \"$1\" = --import ] || {{ echo \"expected --import, got $1\" >&2; exit 3; }}\n\
             [ \"$(head -c 3 \"$2\")\" = NVR ] || {{ echo \"$2 is not a report\" >&2; exit 4; }}\n\
             [ \"$*\" = \"--import $2 --csv --page details --print-units base\" ] || \
             {{ echo \"unexpected arguments: $*\" >&2; exit 5; }}\n\
             cat '{}'",
            csv.display()
        ),
    );
    let rep = std::fs::read(fixture("ours_head.ncu-rep")).unwrap();
    let summary = import_ncu_rep_with(
        "reports/ours_head.ncu-rep",
        &rep,
        &store,
        || Ok(ncu.clone()),
    )
    .unwrap();
    assert_eq!(summary.source_name, "ours_head.csv");
    assert!(summary.kernels >= 4, "{}", summary.kernels);
    let (_, report) = store.load(&summary.id).unwrap();
    assert!(report.kernels.iter().any(|k| k.name == "gelu_erf_f16"));

    // Without ncu: the exact export command.
    let e =
        import_ncu_rep_with("ours_head.ncu-rep", &rep, &store, || Err(ncu_missing())).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains(
            "ncu --import ours_head.ncu-rep --csv --page details --print-units base > \
             ours_head.ncu-rep.csv"
        ),
        "{m}"
    );
    // ncu failing on the report: its message and the command to try by hand.
    let broken = tempfile::tempdir().unwrap();
    let failing = fake_ncu(
        broken.path(),
        "echo '==ERROR== Failed to load report' >&2; exit 1",
    );
    let e = import_ncu_rep_with("x.ncu-rep", &rep, &store, || Ok(failing)).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("Failed to load report") && m.contains("ncu --import x.ncu-rep"),
        "{m}"
    );
    // A CSV dropped here is imported as it is, without ncu.
    let text = std::fs::read(&csv).unwrap();
    let s = import_ncu_rep_with("plain.csv", &text, &store, || Err(ncu_missing())).unwrap();
    assert_eq!(s.kernels, summary.kernels);
}

#[test]
fn bad_targets_name_their_field() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let cancel = AtomicBool::new(false);
    let req = ProfileRequest {
        what: ProfileTarget::Rung {
            layer: "conv2".into(),
            rung: 9,
            batch: 64,
        },
        sections: Vec::new(),
    };
    // Refused before ncu is looked for.
    let e = run_profile(&req, &store, Err(ncu_missing()), &cancel)
        .0
        .unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("invalid what.rung '9'") && m.contains("1 to 5"),
        "{m}"
    );
    assert_eq!(e.kind(), crate::error::ErrorKind::BadInput);

    let bad = |t: ProfileTarget| validate_target(&t).unwrap_err().to_string();
    let m = bad(ProfileTarget::Rung {
        layer: "conv3".into(),
        rung: 2,
        batch: 64,
    });
    assert!(m.contains("invalid what.layer 'conv3'"), "{m}");
    let m = bad(ProfileTarget::Rung {
        layer: "lenet_c1".into(),
        rung: 2,
        batch: 0,
    });
    assert!(m.contains("invalid what.batch '0'"), "{m}");
    let m = bad(ProfileTarget::Kernel {
        op: Op::Relu,
        dtype: LabDtype::F32,
        rows: 0,
        cols: 4096,
    });
    assert!(m.contains("invalid what.rows '0'"), "{m}");
    let m = bad(ProfileTarget::Kernel {
        op: Op::Relu,
        dtype: LabDtype::F32,
        rows: 1 << 20,
        cols: 1 << 20,
    });
    assert!(m.contains("what.rows × what.cols"), "{m}");
    let m = bad(ProfileTarget::Step {
        precision: crate::types::Precision::Fp16,
        batch: MAX_STEP_BATCH + 1,
    });
    assert!(m.contains("invalid what.batch"), "{m}");
    for layer in ["c1", "c3", "conv1", "lab_conv2", "lenet_c3"] {
        assert!(ladder_layer(layer).is_ok(), "{layer}");
    }
    assert!(validate_target(&kernel_request().what).is_ok());
}

#[test]
fn cancelling_kills_a_running_ncu() {
    let dir = tempfile::tempdir().unwrap();
    let store = ImportStore::open(dir.path().join("store")).unwrap();
    let ncu = fake_ncu(dir.path(), "sleep 30\necho done");
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let e = run_profile(&kernel_request(), &store, Ok(ncu), &cancel)
        .0
        .unwrap_err();
    setter.join().unwrap();
    assert!(matches!(e, ComputeError::Cancelled), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn commands_are_shell_quoted() {
    assert_eq!(ncu::shell_quote("profile/"), "profile/");
    assert_eq!(ncu::shell_quote("a b"), "'a b'");
    assert_eq!(ncu::shell_quote("it's"), "'it'\\''s'");
    assert_eq!(ncu::shell_quote(""), "''");
    assert_eq!(stamp(0), "19700101-000000");
    assert_eq!(
        target_slug(&ProfileTarget::Step {
            precision: crate::types::Precision::Bf16,
            batch: 128
        }),
        "step-bf16-b128"
    );
}
