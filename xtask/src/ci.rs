//! `cargo xtask test`: what CI runs (`.ci/run`), stage by stage, timed (stages.rs).
//!
//! Each graph is compiled once:
//! - the native one (engine, CLI, supervisor, xtask: the tests and the e2e's `showdown`) in the
//!   dev profile, clippy in the same compile: the workspace's own crates go through
//!   clippy-driver (see [`lint`](crate::lint::lint)), so the test build is the lint;
//! - the WASM front end in wasm-release, linted the same way;
//! - the Tauri shell once, by `tauri build --debug --bundles deb` (linted the same way), with the
//!   dev `showdown` the tests built as its sidecar: no release build in CI (`cargo xtask dist`,
//!   for users, stays release).
//!
//! `cargo xtask` itself (CI's first stage) compiles its dependencies with the test build's
//! features (xtask/Cargo.toml pins them), so the test build reuses them.
//!
//! Tools come prebuilt where a registry ships them (Tauri CLI and tauri-driver from npm,
//! NVRTC and cuobjdump from PyPI, the rest from Debian). Beside the stages, each shown in the
//! table with its own seconds (a "background" row, not added to the total; the stage that
//! waits for it counts what it cost):
//! - wasm-bindgen-cli, which no registry ships, builds while the downloads run;
//! - the PyTorch peer's venv (pip) is made while the native graph builds;
//! - the WASM front end (`cargo xtask ci-job ui`, `nice -n 19`) compiles beside the native
//!   graph's compile and its tests, on the cores they leave idle (serial compiles and links,
//!   the tests' waits, the front end's own single-threaded LTO beside the tests);
//! - compute's wasm32 check (`ci-job wasm32-check`, niced) starts once the test programs run
//!   (cargo holds the dev build folder while it compiles them, not while they run), beside
//!   them and the front end's single-threaded LTO;
//! - the desktop .deb (`ci-job shell`, niced) compiles beside the browser e2e, which leaves
//!   about half the cores idle while it waits on its pages. The bundle embeds its own copy of
//!   the front end (target/tauri-dist), so the e2e's server keeps its gzip copies; the two
//!   share no cargo lock (the e2e builds nothing).
//!
//! The niced jobs yield the cores whenever a stage wants them: the timed tests and the e2e run
//! as they would alone, and a stage waiting for a job gives it the whole machine.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::cli::CiJob;
use crate::cuda::CudaEnv;
use crate::desktop::{self, Profile};
use crate::lint::lint;
use crate::peer_venv::PeerEnv;
use crate::process::{cargo, root, run};
use crate::stages::Stages;
use crate::{browser, installs, peer_venv, wasm};

/// What the native test build leaves out: the front end (wasm32) and the shell (built by the
/// Tauri CLI) have their own stages.
const NATIVE_EXCLUDES: [&str; 4] = ["--exclude", "app-tauri", "--exclude", "app-ui"];

/// app-ui's unit tests natively (`cargo test -p app-ui --lib`): a native build of Leptos and
/// the front end just for them. Off: app-ui holds no unit test, its tested logic lives in
/// crates the workspace's test build covers (the pages and their fragments in showdown-core,
/// the CUDA highlighting in kernels; the rendered Docs pages and highlighted sources are checked
/// by app-ui's build script). Should a `#[test]` come back to app-ui/src, CI says it is not run.
const APP_UI_NATIVE_TESTS: bool = false;

/// The native graph's clippy in its test build: one compile (see [`lint`] for what the driver
/// changes in the code it compiles). `false`: a separate `cargo clippy` (check) pass first, and
/// the tests built by plain rustc (with its debug null/alignment checks).
const LINT_IN_TEST_BUILD: bool = true;

/// CI's dev profile without debug info for the workspace's own crates (the default is full
/// debug info; the dependencies keep the workspace's `line-tables-only`): nothing in CI reads
/// it, and writing and linking it was much of every dev compile. Set in xtask's environment, so
/// every cargo it starts (the tests, the WASM front end's, the Tauri CLI's) builds with the same
/// profile and shares its units.
const CI_DEV_DEBUG: (&str, &str) = ("CARGO_PROFILE_DEV_DEBUG", "0");

/// `cargo xtask test`: every stage, timed; the table of seconds per stage at the end.
pub fn test(no_desktop: bool) -> Result<()> {
    std::env::set_var(CI_DEV_DEBUG.0, CI_DEV_DEBUG.1);
    let mut s = Stages::new();
    let result = stages(&mut s, no_desktop);
    s.finish(&result);
    if result.is_ok() {
        eprintln!("all checks passed");
    }
    result
}

fn stages(s: &mut Stages, no_desktop: bool) -> Result<()> {
    // --- Tools (each stage a no-op when what it installs is there).
    s.run(
        "install: rustup target + components",
        wasm::ensure_rust_parts,
    )?;
    s.run("fmt", || run(cargo().args(["fmt", "--all", "--check"])))?;
    let house = s.run(
        "lint: house rules (file and component lengths, typed loading)",
        || crate::lint::house::check(&root()),
    )?;
    s.note(house.summary());
    let mut wasm_bindgen = s.run(
        "install: wasm-bindgen-cli (start in background)",
        Background::wasm_bindgen,
    )?;
    // The PyTorch peer's venv (pip: downloads and unpacking, little CPU) beside the builds; the
    // browser e2e waits for it.
    let mut peer_job = s.run(
        "install: PyTorch peer venv (start in background)",
        PeerVenvJob::start,
    )?;
    let mut apt = installs::apt_missing_browser();
    if !no_desktop {
        apt.extend(installs::apt_missing_desktop_build());
        apt.extend(installs::apt_missing_desktop_driver());
    }
    // Downloads and unpacking, little CPU: beside the builds, which need none of it (Chromium
    // for the browser e2e, WebKitGTK's files for the .deb, Xvfb for the desktop e2e).
    let mut apt_job = s.run("install: apt packages (start in background)", || {
        installs::apt_install_command(&apt, "CI")?
            .map(|cmd| Background::spawn(cmd, "apt-install.log", "apt-get install"))
            .transpose()
    })?;
    s.note(if apt.is_empty() {
        "all present".to_string()
    } else {
        apt.join(" ")
    });
    let cuda = s.run("install: pip NVRTC + cuobjdump", CudaEnv::new)?;
    let driver = s.run("install: npm tools", || {
        browser::ensure_browser_tools()?;
        if no_desktop {
            return Ok(None);
        }
        desktop::tauri_cli()?;
        desktop::tauri_driver().map(Some)
    })?;
    let host = desktop::host_triple()?;
    s.run("cargo fetch", || {
        run(cargo().args([
            "fetch",
            "--target",
            &host,
            "--target",
            "wasm32-unknown-unknown",
        ]))
    })?;
    if let Some(bg) = wasm_bindgen.take() {
        let (secs, ok) = s.run("install: wasm-bindgen-cli (wait for it)", || bg.wait())?;
        s.background("install: wasm-bindgen-cli (cargo install)", secs, ok, "");
    }
    // The front end's compile beside the native graph's and the tests, niced: it takes the
    // cores they leave idle (their serial compiles and links, the tests' waits) and yields them
    // at once; the browser e2e waits for it.
    let ui_job = s.run(
        "build+clippy: WASM front end (start in background, niced)",
        || Background::job(CiJob::Ui),
    )?;

    // --- The native graph: compiled and linted once, then run.
    if !LINT_IN_TEST_BUILD {
        s.run("clippy: workspace, all targets", || {
            run(cargo()
                .args(["clippy", "--workspace"])
                .args(NATIVE_EXCLUDES)
                .args(["--all-targets", "--", "-D", "warnings"]))
        })?;
    }
    let build_stage = if LINT_IN_TEST_BUILD {
        "build+clippy: workspace, all targets (dev)"
    } else {
        "build: workspace, all targets (dev)"
    };
    s.run(build_stage, || {
        run(native(
            &mut workspace_tests(&["--all-targets", "--no-run"]),
            &cuda,
        )?)
    })?;
    // The dev `showdown` the e2e and the .deb use: built by the tests' build (no compile
    // expected here); asked before the tests, while no background job holds the build folder.
    let showdown = s.run("build: showdown (dev, fresh from the tests' build)", || {
        run(native(cargo().args(["build", "-p", "showdown"]), &cuda)?)?;
        Ok(root().join("target/debug/showdown"))
    })?;
    // compute's wasm32 check (niced) starts once the tests run: cargo holds the dev profile's
    // build folder while it compiles, not while the test programs run.
    let mut wasm32_job = None;
    let counts = s.run("test: workspace", || {
        // Show captured output: what a test prints reaches the log.
        TestCounts::run(
            native(&mut workspace_tests(&["--", "--show-output"]), &cuda)?,
            &mut || {
                if wasm32_job.is_none() {
                    wasm32_job = Some(Background::job(CiJob::Wasm32Check));
                }
            },
        )
    })?;
    s.note(counts.summary());
    s.set("tests", counts.json());
    eprintln!("{}", counts.gpu_line());
    let wasm32_job = match wasm32_job {
        Some(job) => job?,
        None => Background::job(CiJob::Wasm32Check)?,
    };
    let (secs, _) = s.run("build+clippy: WASM front end (wait for it)", || {
        ui_job.wait()
    })?;
    job_rows(s, CiJob::Ui, secs, "beside the native build and its tests");
    let (secs, _) = s.run("check: compute for wasm32 (wait for it)", || {
        wasm32_job.wait()
    })?;
    job_rows(s, CiJob::Wasm32Check, secs, "beside the tests");
    let ui_tests = count_tests(&root().join("app-ui/src"));
    if APP_UI_NATIVE_TESTS {
        s.run("test: app-ui unit tests (native Leptos build)", || {
            run(lint(cargo().args(["test", "-p", "app-ui", "--lib"]))?)
        })?;
    } else if ui_tests > 0 {
        s.skip(
            "test: app-ui unit tests",
            &format!("{ui_tests} #[test] in app-ui/src not run: no native Leptos build in CI (move them to showdown-core or kernels)"),
        );
    }

    // --- Browser mode, the .deb compiled beside it.
    // The PyTorch peer's Python for the e2e (never fails: a failure is the e2e's skip reason).
    let (peer, secs) = s.run("install: PyTorch peer venv (wait for it)", || {
        peer_job.wait()
    })?;
    s.note(peer.note());
    s.background(
        "install: PyTorch peer venv (target/peer-venv)",
        secs,
        true,
        "beside the builds",
    );
    if let Some(job) = apt_job.take() {
        let (secs, ok) = s.run("install: apt packages (wait for it)", || job.wait())?;
        s.background("install: apt packages", secs, ok, "beside the builds");
    }
    s.run("gzip: the front end for `serve --http`", || {
        wasm::compress_ui().map(|_| ())
    })?;
    // The Tauri graph's one compile (the .deb), niced beside the browser e2e, which leaves
    // about half the cores idle while it waits on its pages. The bundle embeds a copy of dist
    // (target/tauri-dist): the e2e's server keeps its files.
    let shell_job = if no_desktop {
        None
    } else {
        Some(s.run(
            "build+clippy: desktop .deb (start in background, niced)",
            || Background::job(CiJob::Shell),
        )?)
    };
    s.run("e2e: browser (headless Chromium)", || {
        browser::run_e2e(&showdown, &cuda, &peer)
    })?;
    // --- The desktop shell: the Tauri graph compiled once, by the dev-profile bundle.
    let Some(shell_job) = shell_job else {
        s.skip("desktop: .deb build and e2e", "--no-desktop");
        return Ok(());
    };
    let (secs, _) = s.run("build+clippy: desktop .deb (wait for it)", || {
        shell_job.wait()
    })?;
    job_rows(s, CiJob::Shell, secs, "beside the browser e2e");
    let deb = desktop::newest_deb(Profile::Dev)?;
    let shell_tests = count_tests(&root().join("app-tauri/src"));
    if shell_tests > 0 {
        // Shares every dependency with the bundle just built (same profile and features).
        s.run("test: app-tauri unit tests", || {
            run(lint(cargo().args(["test", "-p", "app-tauri", "--lib"]))?)
        })?;
    }
    let driver = driver.context("tauri-driver was not installed")?;
    s.run("e2e: desktop (.deb under Xvfb + tauri-driver)", || {
        desktop::run_e2e(&deb, Profile::Dev, &driver)
    })?;
    Ok(())
}

/// `cargo xtask ci-job JOB`: one of CI's background jobs ([`Background::job`] starts it), each
/// of its steps timed into [`job_stages_file`] for CI's table.
pub fn job(job: CiJob) -> Result<()> {
    std::env::set_var(CI_DEV_DEBUG.0, CI_DEV_DEBUG.1);
    let file = job_stages_file(job);
    let _ = std::fs::remove_file(&file);
    let step = |stage: &str, f: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        eprintln!("\n==> {stage}");
        let t = Instant::now();
        let r = f();
        let secs = t.elapsed().as_secs_f64();
        let status = if r.is_ok() { "ok" } else { "FAILED" };
        eprintln!("<== {stage}: {secs:.1} s ({status})");
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .with_context(|| format!("writing {}", file.display()))?;
        writeln!(f, "{secs:.1}\t{status}\t{stage}")?;
        r.with_context(|| format!("{stage} failed"))
    };
    match job {
        CiJob::Ui => {
            step("build+clippy: WASM front end + wasm-bindgen", &mut || {
                wasm::build_ui_with(true)
            })?;
            step("check: WASM size", &mut || {
                wasm::check_wasm_size().map(|_| ())
            })
        }
        CiJob::Wasm32Check => step(
            "check: compute for wasm32, no default features",
            &mut || {
                run(cargo().args([
                    "check",
                    "-p",
                    "compute",
                    "--no-default-features",
                    "--target",
                    "wasm32-unknown-unknown",
                ]))
            },
        ),
        CiJob::Shell => step(
            "build+clippy: desktop .deb (tauri build --debug)",
            &mut || {
                desktop::bundle(Profile::Dev, &root().join("target/debug/showdown"), true)
                    .map(|_| ())
            },
        ),
    }
}

/// Where a background job writes its steps' seconds (`seconds<TAB>status<TAB>stage` lines).
fn job_stages_file(job: CiJob) -> PathBuf {
    root()
        .join("target/ci-logs")
        .join(format!("ci-job-{}.stages", job.name()))
}

/// A background job's steps, as rows of CI's table (beside the stages: not in the total),
/// after the job itself (`secs`, from its start).
fn job_rows(s: &mut Stages, job: CiJob, secs: f64, note: &str) {
    let steps = job_steps(&std::fs::read_to_string(job_stages_file(job)).unwrap_or_default());
    // Its steps' seconds: `secs` runs to when CI collected it, which may be long after its end.
    let ran: f64 = steps.iter().map(|(_, seconds, _)| seconds).sum();
    s.background(
        &format!("{} (the job)", job.what()),
        ran,
        true,
        &format!("{note}; collected {secs:.0} s after its start"),
    );
    for (stage, seconds, ok) in steps {
        s.background(&format!("  {stage}"), seconds, ok, "");
    }
}

/// A job's steps from its stages file: (stage, seconds, whether it succeeded); a line that is
/// not `seconds<TAB>status<TAB>stage` is shown as a failed step (the file is ours: a bad line
/// means the job died writing it).
fn job_steps(text: &str) -> Vec<(String, f64, bool)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| match line.splitn(3, '\t').collect::<Vec<_>>()[..] {
            [seconds, status, stage] => match seconds.parse() {
                Ok(secs) => (stage.to_string(), secs, status == "ok"),
                Err(_) => (format!("(unreadable: {line})"), 0.0, false),
            },
            _ => (format!("(unreadable: {line})"), 0.0, false),
        })
        .collect()
}

impl CiJob {
    /// Its name on the command line and in its files.
    fn name(self) -> &'static str {
        match self {
            CiJob::Ui => "ui",
            CiJob::Wasm32Check => "wasm32-check",
            CiJob::Shell => "shell",
        }
    }

    /// What it does, in words.
    fn what(self) -> &'static str {
        match self {
            CiJob::Ui => "WASM front end",
            CiJob::Wasm32Check => "compute's wasm32 check",
            CiJob::Shell => "desktop .deb",
        }
    }
}

/// `cargo test` of the native graph (the workspace but [`NATIVE_EXCLUDES`]) with `args`.
fn workspace_tests(args: &[&str]) -> Command {
    let mut c = cargo();
    c.args(["test", "--workspace"])
        .args(NATIVE_EXCLUDES)
        .args(args);
    c
}

/// A native build or test of the engine (linted: [`LINT_IN_TEST_BUILD`]), with NVRTC and
/// cuobjdump: every cargo call on the native graph gets the same environment, so later ones
/// find it fresh.
fn native<'a>(cmd: &'a mut Command, cuda: &CudaEnv) -> Result<&'a mut Command> {
    if LINT_IN_TEST_BUILD {
        lint(cmd)?;
    }
    Ok(cuda
        .apply(cmd)
        .env("SHOWDOWN_REQUIRE_NVRTC", "1")
        .env("SHOWDOWN_REQUIRE_CUOBJDUMP", "1"))
}

/// How many `#[test]` functions the .rs files under `dir` hold.
fn count_tests(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                n += std::fs::read_to_string(&p)
                    .map(|t| t.matches("#[test]").count())
                    .unwrap_or(0);
            }
        }
    }
    n
}

/// A command running beside the stages (the wasm-bindgen-cli install beside the downloads, the
/// wasm32 check beside the WASM build), its output in target/ci-logs. Killed if CI fails first.
struct Background {
    child: Option<Child>,
    started: Instant,
    log: PathBuf,
    /// What it is, in words (`cargo install wasm-bindgen-cli`).
    what: &'static str,
}

impl Background {
    /// Starts `cmd`, its stdout and stderr into target/ci-logs/`log_name`.
    fn spawn(mut cmd: Command, log_name: &str, what: &'static str) -> Result<Background> {
        let dir = root().join("target/ci-logs");
        std::fs::create_dir_all(&dir)?;
        let log = dir.join(log_name);
        let f = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        cmd.stdin(Stdio::null()).stdout(f.try_clone()?).stderr(f);
        // A group of its own: stopping it stops what it started (cargo, rustc, the Tauri CLI).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        eprintln!("$ {cmd:?} > {} (in the background)", log.display());
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {cmd:?}"))?;
        Ok(Background {
            child: Some(child),
            started: Instant::now(),
            log,
            what,
        })
    }

    /// Starts `cargo xtask ci-job JOB` (this program) at the lowest priority (`nice -n 19`):
    /// it runs on what the stages leave of the cores.
    fn job(job: CiJob) -> Result<Background> {
        let mut cmd = Command::new("nice");
        cmd.args(["-n", "19"])
            .arg(std::env::current_exe().context("cannot find xtask's own program")?)
            .args(["ci-job", job.name()]);
        let log = format!("ci-job-{}.log", job.name());
        Background::spawn(cmd, &log, job.what())
    }

    /// Starts the install when Cargo.lock's wasm-bindgen is not installed.
    fn wasm_bindgen() -> Result<Option<Background>> {
        let want = wasm::locked_wasm_bindgen()?;
        if let Some(p) = wasm::wasm_bindgen_program(&want) {
            eprintln!("wasm-bindgen {want}: {}", p.display());
            return Ok(None);
        }
        Background::spawn(
            wasm::wasm_bindgen_install(&want),
            "wasm-bindgen-cli-install.log",
            "cargo install wasm-bindgen-cli",
        )
        .map(Some)
    }

    /// Waits for it; its own seconds and whether it succeeded (an error, with its log's tail,
    /// when it failed).
    fn wait(mut self) -> Result<(f64, bool)> {
        let status = match self.child.take() {
            Some(mut c) => c.wait()?,
            None => bail!("nothing to wait for"),
        };
        let secs = self.started.elapsed().as_secs_f64();
        if !status.success() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            for l in tail.iter().rev() {
                eprintln!("  {l}");
            }
            bail!(
                "{} failed with {status} after {secs:.0} s (log: {})",
                self.what,
                self.log.display()
            );
        }
        eprintln!(
            "{} done in {secs:.0} s (in the background; log: {})",
            self.what,
            self.log.display()
        );
        Ok((secs, true))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // The whole group (see `spawn`), then the child itself.
            #[cfg(unix)]
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", c.id())])
                .stderr(Stdio::null())
                .status();
            let _ = c.kill();
            let _ = c.wait();
            eprintln!("stopped {}", self.what);
        }
    }
}

/// The PyTorch peer's venv made on a thread beside the builds ([`peer_venv::ensure_logged`],
/// pip's output in target/ci-logs/peer-venv-pip.log); its pip stopped if CI fails first.
struct PeerVenvJob {
    thread: Option<std::thread::JoinHandle<(PeerEnv, f64)>>,
}

impl PeerVenvJob {
    fn start() -> Result<PeerVenvJob> {
        let dir = root().join("target/ci-logs");
        std::fs::create_dir_all(&dir)?;
        let log = dir.join("peer-venv-pip.log");
        let thread = std::thread::Builder::new()
            .name("peer-venv".into())
            .spawn(move || {
                let t = Instant::now();
                let env = peer_venv::ensure_logged(Some(&log));
                (env, t.elapsed().as_secs_f64())
            })
            .context("cannot start the peer venv's thread")?;
        Ok(PeerVenvJob {
            thread: Some(thread),
        })
    }

    /// Waits for it: what the e2e gets, and the seconds it took on its own.
    fn wait(&mut self) -> Result<(PeerEnv, f64)> {
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(done)) => Ok(done),
            Some(Err(_)) => bail!("the peer venv's thread panicked"),
            None => bail!("nothing to wait for"),
        }
    }
}

impl Drop for PeerVenvJob {
    fn drop(&mut self) {
        if self.thread.is_some() {
            peer_venv::stop_install();
        }
    }
}

/// What libtest reported: its `test result:` lines summed, and the GPU tests among the ignored
/// (`#[ignore = "needs a GPU…"]`: skipped here, never counted as passed).
#[derive(Default)]
struct TestCounts {
    passed: u64,
    failed: u64,
    ignored: u64,
    gpu_skipped: Vec<String>,
    /// Tests that printed "skipped: no usable GPU" yet passed (the old way of skipping).
    gpu_self_skipped: u64,
    /// Tests libtest reported `... FAILED`, in the order they ended.
    failed_names: Vec<String>,
}

impl TestCounts {
    /// Runs `cmd` (a `cargo test`), its stdout passed through and read.
    /// `on_running` is called at each test program's `running N tests` line (cargo has
    /// compiled by then).
    fn run(cmd: &mut Command, on_running: &mut dyn FnMut()) -> Result<TestCounts> {
        eprintln!("$ {cmd:?}");
        let mut child = cmd
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {cmd:?}"))?;
        let mut counts = TestCounts::default();
        if let Some(out) = child.stdout.take() {
            let mut out = BufReader::new(out);
            let mut buf = Vec::new();
            while out.read_until(b'\n', &mut buf).unwrap_or(0) > 0 {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                println!("{line}");
                if line.starts_with("running ") {
                    on_running();
                }
                counts.observe(line);
                buf.clear();
            }
        }
        let status = child.wait()?;
        if !status.success() {
            eprintln!("{}", counts.summary());
            bail!(
                "{}",
                counts.failure(&format!("{cmd:?}"), &status.to_string())
            );
        }
        Ok(counts)
    }

    fn observe(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("test result: ") {
            for part in rest.split(';') {
                let words: Vec<&str> = part.split_whitespace().collect();
                if let [.., n, kind] = words.as_slice() {
                    let n: u64 = n.parse().unwrap_or(0);
                    match *kind {
                        "passed" => self.passed += n,
                        "failed" => self.failed += n,
                        "ignored" => self.ignored += n,
                        _ => {}
                    }
                }
            }
        } else if let Some((name, reason)) = line
            .strip_prefix("test ")
            .and_then(|l| l.split_once(" ... ignored, "))
        {
            if reason.contains("GPU") {
                self.gpu_skipped.push(name.to_string());
            }
        } else if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|l| l.strip_suffix(" ... FAILED"))
        {
            self.failed_names.push(name.to_string());
        } else if line.contains("skipped: no usable GPU") {
            self.gpu_self_skipped += 1;
        }
    }

    /// The error of a failed `cargo test`: the failing tests named first (CI's log may keep only
    /// its last lines), then the command and its status.
    fn failure(&self, cmd: &str, status: &str) -> String {
        let named = if self.failed_names.is_empty() {
            "no test reported FAILED (a build, a crash or a doc test?)".to_string()
        } else {
            format!("failing tests: {}", self.failed_names.join(", "))
        };
        format!("{named}; {cmd} failed with {status}")
    }

    fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} ignored ({} GPU tests skipped: no GPU)",
            self.passed,
            self.failed,
            self.ignored,
            self.gpu_skipped.len()
        )
    }

    fn gpu_line(&self) -> String {
        let mut s = format!(
            "GPU tests: {} skipped (ignored as needing a GPU; this run is CPU only), not counted as passed",
            self.gpu_skipped.len()
        );
        if self.gpu_self_skipped > 0 {
            s.push_str(&format!(
                "\nnote: {} test(s) printed \"skipped: no usable GPU\" and count as passed: mark them #[ignore = \"needs a GPU…\"]",
                self.gpu_self_skipped
            ));
        }
        s
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "passed": self.passed,
            "failed": self.failed,
            "ignored": self.ignored,
            "gpu_skipped": self.gpu_skipped.len(),
            "gpu_skipped_tests": self.gpu_skipped,
            "gpu_self_skipped_but_passed": self.gpu_self_skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Each package of a `cargo tree` selection (`args`, on the host) with its feature sets.
    fn features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
        let host = crate::desktop::host_triple().unwrap();
        let out = crate::process::output(
            cargo()
                .args(["tree", "--target", &host])
                .args(args)
                .args(["-f", "{p}|{f}", "--prefix", "none"]),
        )
        .expect("cargo tree runs");
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in out.lines() {
            if let Some((package, features)) = line.split_once('|') {
                let package = package.split(" (").next().unwrap_or(package).trim();
                let features = features
                    .trim_end_matches(" (*)")
                    .trim_end_matches(" (proc-macro)");
                map.entry(package.to_string())
                    .or_default()
                    .insert(features.to_string());
            }
        }
        map
    }

    #[test]
    fn a_jobs_steps_are_read_back_with_their_seconds_and_status() {
        let text =
            "49.5\tok\tcheck: compute for wasm32\n343.2\tFAILED\tbuild: the .deb\n\nhalf a li";
        assert_eq!(
            job_steps(text),
            vec![
                ("check: compute for wasm32".to_string(), 49.5, true),
                ("build: the .deb".to_string(), 343.2, false),
                ("(unreadable: half a li)".to_string(), 0.0, false),
            ]
        );
    }

    #[test]
    fn a_background_command_is_waited_for_and_its_failure_shows_its_log() {
        let mut ok = Command::new("sh");
        ok.args(["-c", "echo fine"]);
        let (secs, done) = Background::spawn(ok, "xtask-test-ok.log", "a test command")
            .unwrap()
            .wait()
            .unwrap();
        assert!(done && secs >= 0.0);
        let mut bad = Command::new("sh");
        bad.args(["-c", "echo the reason; exit 3"]);
        let err = Background::spawn(bad, "xtask-test-bad.log", "a failing command")
            .unwrap()
            .wait()
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("a failing command failed with exit status: 3"),
            "{err}"
        );
        let log = root().join("target/ci-logs/xtask-test-bad.log");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "the reason\n");
        for f in ["xtask-test-ok.log", "xtask-test-bad.log"] {
            let _ = std::fs::remove_file(root().join("target/ci-logs").join(f));
        }
    }

    /// `cargo xtask` builds xtask alone; the test build then reuses its dependencies only if
    /// cargo gave them the same features (xtask/Cargo.toml pins them). Fails naming each crate
    /// the test build would compile a second time.
    #[test]
    fn xtask_shares_its_dependencies_with_the_test_build() {
        let native = features(&[
            "--workspace",
            "--exclude",
            "app-tauri",
            "--exclude",
            "app-ui",
            "-e",
            "normal,build,dev",
        ]);
        let xtask = features(&["-p", "xtask", "-e", "normal,build"]);
        assert!(
            xtask.keys().any(|k| k.starts_with("serde_json ")),
            "cargo tree's output was not read: {xtask:?}"
        );
        let differ: Vec<String> = xtask
            .iter()
            .filter(|(package, f)| native.get(*package) != Some(f))
            .map(|(package, f)| format!("{package}: xtask {f:?}, tests {:?}", native.get(package)))
            .collect();
        assert!(differ.is_empty(), "compiled twice in CI: {differ:#?}");
    }

    #[test]
    fn gpu_tests_ignored_are_counted_as_skipped_not_passed() {
        let mut c = TestCounts::default();
        for l in [
            "running 4 tests",
            "test cuda::gpu_tests::gemm_matches_cpu ... ignored, needs a GPU (CUDA driver and device)",
            "test cuda::gpu_tests::duel_runs ... ignored, needs a GPU",
            "test slow::thing ... ignored, takes minutes",
            "test data::idx::reads ... ok",
            "skipped: no usable GPU (no CUDA driver)",
            "test result: ok. 1 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s",
        ] {
            c.observe(l);
        }
        assert_eq!((c.passed, c.failed, c.ignored), (3, 1, 3));
        assert_eq!(
            c.gpu_skipped,
            [
                "cuda::gpu_tests::gemm_matches_cpu",
                "cuda::gpu_tests::duel_runs"
            ]
        );
        assert_eq!(c.gpu_self_skipped, 1);
        assert!(c.summary().contains("2 GPU tests skipped"));
    }

    #[test]
    fn a_failed_run_names_its_failing_tests_first() {
        let mut c = TestCounts::default();
        let quiet = c.failure("cargo test", "exit status: 101");
        assert!(quiet.starts_with("no test reported FAILED"), "{quiet}");
        for l in [
            "test service::tests::a ... ok",
            "test service::tests::b ... FAILED",
            "test store::tests::c ... FAILED",
        ] {
            c.observe(l);
        }
        let msg = c.failure("cargo test", "exit status: 101");
        assert!(
            msg.starts_with("failing tests: service::tests::b, store::tests::c; cargo test failed"),
            "{msg}"
        );
    }
}
