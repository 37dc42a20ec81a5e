//! The service every door (CLI, stdio sidecar, HTTP, Tauri) calls: one function per
//! operation, typed requests and reports from the pure core.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::backend::cpu::CpuBackend;
use crate::backend::{AdamParams, Backend};
use crate::data::{self, Dataset};
use crate::error::{ComputeError, Result};
use crate::occupancy::{occupancy, parse_cc, GpuLimits};
use crate::protocol::{Event, Request};
use crate::train::{init_params, TrainOptions, Trainer};
use crate::types::{BackendChoice, ConfigUsed, DatasetUsed, DuelConfig, DuelEvent, DuelReport};

/// Whether this build contains the CUDA training backend.
pub const CUDA_BACKEND_READY: bool = cfg!(feature = "cuda");

/// Most progress events per second [`handle`] passes on (run and epoch boundaries always pass).
pub const EVENTS_PER_SECOND: u32 = 20;

static BUSY: Mutex<()> = Mutex::new(());

/// The cancel flag of the duel [`handle`] is running, for [`cancel_running`].
static RUNNING: Mutex<Option<Arc<AtomicBool>>> = Mutex::new(None);

/// Locks `m`, carrying on after a panic in another holder (the data are plain flags).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The facts of entry point or family `name` compiled for `arch` with the occupancy at
/// `threads` per block (NVRTC and cuobjdump, no GPU needed): what `showdown kernels show` prints
/// and the Kernel Reveal page shows.
pub fn kernel_facts(
    name: &str,
    arch: &str,
    threads: u32,
) -> Result<Vec<crate::kernel_panel::KernelFacts>> {
    let fam = kernels::FAMILIES
        .iter()
        .find(|f| f.name == name || f.entry_points().iter().any(|e| e == name))
        .ok_or_else(|| {
            ComputeError::bad_arg(
                "kernel",
                name,
                "not in the registry (see `showdown kernels list`)",
            )
        })?;
    #[cfg(feature = "cuda")]
    {
        Ok(crate::cuda::facts::family_facts(fam, arch, threads)?
            .into_iter()
            .filter(|f| f.entry == name || fam.name == name)
            .collect())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (fam, arch, threads);
        Err(ComputeError::Backend {
            backend: "cuda".into(),
            reason: "this build has no CUDA support (NVRTC)".into(),
        })
    }
}

/// Answers one protocol request: the dispatcher every door (stdio, HTTP, Tauri) calls. The
/// result is the operation's report as JSON. A duel streams its progress through `on_event`
/// (at most [`EVENTS_PER_SECOND`] step events a second; run and epoch boundaries always), stops
/// with [`ComputeError::Cancelled`] within one training step once `cancel` is set, and can also
/// be stopped by [`Request::Cancel`] from another thread, which answers
/// `{"cancelled": bool}` (whether a duel was running).
pub fn handle(
    request: &Request,
    on_event: &mut dyn FnMut(Event),
    cancel: &Arc<AtomicBool>,
) -> Result<serde_json::Value> {
    match request {
        Request::Doctor => to_json(&crate::doctor::doctor()),
        Request::ListDatasets => to_json(&data::list()),
        Request::ModelSummary => to_json(&crate::model::lab_summary()),
        Request::DatasetSamples {
            dataset,
            split,
            offset,
            count,
        } => to_json(&dataset_samples(dataset, *split, *offset, *count)?),
        Request::Occupancy { cc, input } => {
            let (major, minor) = parse_cc(cc)?;
            let limits = GpuLimits::for_cc(major, minor)?;
            to_json(&occupancy(&limits, input)?)
        }
        Request::Duel { config } => {
            let mut throttle = EventThrottle::new(EVENTS_PER_SECOND);
            let mut forward = |e: DuelEvent| {
                let event = Event::Duel { event: e };
                if throttle.pass(&event) {
                    on_event(event);
                }
            };
            let report = duel_locked(config, &mut forward, cancel, Some(cancel))?;
            let mut reply = to_json(&report)?;
            let saved = run_store().and_then(|store| Ok(store.save(&report)?));
            note_saved_run(&mut reply, saved);
            Ok(reply)
        }
        Request::KernelFacts {
            name,
            arch,
            threads,
        } => to_json(&kernel_facts(name, arch, *threads)?),
        Request::Cancel => to_json(&serde_json::json!({ "cancelled": cancel_running() })),
        Request::NcuImports => {
            let listing = library()?.list_checked()?;
            // The answer stays a list; a damaged import is named in the service's log.
            for skipped in &listing.skipped {
                eprintln!(
                    "warning: import {} left out of the library: {}",
                    skipped.id, skipped.reason
                );
            }
            to_json(&listing.imports)
        }
        Request::NcuImport { file_name, text } => {
            let report = crate::ncu::import_str(text)
                .map_err(|e| ComputeError::bad_file(file_name.clone(), e.to_string()))?;
            to_json(&library()?.save_bytes(file_name, text.as_bytes(), &report)?)
        }
        Request::NcuPanels { import, kernel } => {
            let (summary, report) = library()?.load(import)?;
            let kernels: Vec<&crate::ncu::Kernel> = report
                .kernels
                .iter()
                .filter(|k| kernel.is_none_or(|id| k.id == id))
                .collect();
            if let (Some(id), true) = (kernel, kernels.is_empty()) {
                return Err(ComputeError::BadRequest(format!(
                    "import {import} has no kernel with ID {id}"
                )));
            }
            let out: Vec<crate::ncu::KernelPanels> = kernels
                .iter()
                .map(|k| crate::ncu::KernelPanels::of(k, &summary.screenshots))
                .collect();
            to_json(&out)
        }
        Request::NcuAttach {
            import,
            panel,
            kernel,
            file_name,
            image_base64,
            caption,
        } => {
            use base64::Engine;
            // A 20 MiB image is 28 MiB of base64: refuse longer text before decoding it.
            let max_b64 = (crate::ncu::MAX_SCREENSHOT_BYTES as usize).div_ceil(3) * 4;
            if image_base64.len() > max_b64 {
                return Err(ComputeError::bad_file(
                    file_name.clone(),
                    format!(
                        "over the {} MiB limit for a screenshot",
                        crate::ncu::MAX_SCREENSHOT_BYTES >> 20
                    ),
                ));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(image_base64.trim())
                .map_err(|e| {
                    ComputeError::bad_file(
                        file_name.clone(),
                        format!("image_base64 is not base64: {e}"),
                    )
                })?;
            to_json(&library()?.attach(
                import,
                *kernel,
                panel,
                file_name,
                &bytes,
                caption.as_deref(),
            )?)
        }
        Request::NcuDetach { import, screenshot } => {
            library()?.detach(import, screenshot)?;
            to_json(&serde_json::json!({ "removed": true }))
        }
        Request::NcuRemove { import } => {
            library()?.remove(import)?;
            to_json(&serde_json::json!({ "removed": true }))
        }
        Request::Runs => to_json(&run_store()?.list()?),
        Request::Run { id } => to_json(&run_store()?.load(id)?),
        Request::RunRemove { id } => {
            run_store()?.remove(id)?;
            to_json(&serde_json::json!({ "removed": true }))
        }
        Request::RunCsv { id } => {
            let report = run_store()?.load(id)?;
            to_json(&crate::runs::CsvExport {
                file_name: crate::runs::csv_file_name(id),
                csv: crate::runs::duel_csv(&report),
            })
        }
        Request::Verdict => to_json(&verdict()),
        Request::VerdictHtml => to_json(&crate::verdict::HtmlExport {
            file_name: crate::verdict::HTML_FILE_NAME.into(),
            html: crate::verdict::render_html(&verdict()),
        }),
        Request::NcuScreenshot { import, screenshot } => {
            to_json(&screenshot_image(&library()?, import, screenshot)?)
        }
    }
}

/// The data set [`dataset_samples`] read last: paging through it reads the files once.
static SAMPLED: Mutex<Option<Arc<Dataset>>> = Mutex::new(None);

/// A page of real images of data set `name` (one of [`data::DATASET_NAMES`]): what Act I
/// draws. The data set read last is kept, so turning pages does not read it again.
pub fn dataset_samples(
    name: &str,
    split: crate::types::DataSplit,
    offset: usize,
    count: usize,
) -> Result<crate::types::DatasetSamples> {
    data::check_page(count)?;
    if !data::DATASET_NAMES.contains(&name) {
        return Err(ComputeError::bad_arg(
            "dataset",
            name,
            format!("expected one of {}", data::DATASET_NAMES.join(", ")),
        ));
    }
    let cached = lock(&SAMPLED).clone().filter(|d| d.name == name);
    let d = match cached {
        Some(d) => d,
        None => {
            let d = Arc::new(data::load(name, None)?);
            *lock(&SAMPLED) = Some(Arc::clone(&d));
            d
        }
    };
    data::samples(&d, split, offset, count)
}

/// Asks the duel started through [`handle`] to stop; `false` when none is running.
pub fn cancel_running() -> bool {
    match lock(&RUNNING).as_ref() {
        Some(flag) => {
            flag.store(true, Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// Screenshot `screenshot` of import `import` in `store`, ready for a `data:` URL.
pub fn screenshot_image(
    store: &crate::store::ImportStore,
    import: &str,
    screenshot: &str,
) -> Result<crate::ncu::ScreenshotImage> {
    use base64::Engine;
    let (shot, bytes) = store.screenshot(import, screenshot)?;
    Ok(crate::ncu::ScreenshotImage {
        mime: shot.format.media_type().to_string(),
        base64: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// The data folder: `$SHOWDOWN_DATA_HOME`, else the user data folder (the desktop app points
/// the sidecar's `SHOWDOWN_DATA_HOME` at its app data folder).
fn data_root() -> Result<std::path::PathBuf> {
    crate::store::ImportStore::default_root().ok_or_else(|| {
        ComputeError::BadRequest(
            "this system has no user data folder: set SHOWDOWN_DATA_HOME".into(),
        )
    })
}

/// The library of saved imports, in the [data folder](data_root).
fn library() -> Result<crate::store::ImportStore> {
    Ok(crate::store::ImportStore::open(data_root()?)?)
}

/// The run history, in the [data folder](data_root) beside the imports.
fn run_store() -> Result<crate::runs::RunStore> {
    Ok(crate::runs::RunStore::open(data_root()?)?)
}

/// Adds to a duel's `reply` where its report was kept: `"saved_run": ID`, or, when saving
/// failed, `"saved_run": null` and a `"save_note"` saying why (the result is answered all the
/// same). Readers of a [`DuelReport`] ignore both keys.
fn note_saved_run(reply: &mut serde_json::Value, saved: Result<crate::runs::RunSummary>) {
    let Some(object) = reply.as_object_mut() else {
        return;
    };
    match saved {
        Ok(summary) => {
            object.insert("saved_run".into(), summary.id.into());
        }
        Err(e) => {
            object.insert("saved_run".into(), serde_json::Value::Null);
            object.insert(
                "save_note".into(),
                format!("the run was not saved to the run history: {e}").into(),
            );
        }
    }
}

/// Act V's verdict: the doctor's report and the run history (a history that cannot be read
/// becomes a note of the verdict, not an error).
fn verdict() -> crate::verdict::Verdict {
    let history = run_store()
        .and_then(|store| Ok(store.list()?))
        .unwrap_or_else(|e| crate::runs::RunList {
            runs: Vec::new(),
            skipped: vec![format!("the run history could not be read: {e}")],
        });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    crate::verdict::Verdict::build(&crate::doctor::doctor(), history, now)
}

fn to_json<T: Serialize>(v: &T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| ComputeError::Backend {
        backend: "service".into(),
        reason: format!("could not encode the reply as JSON: {e}"),
    })
}

/// Passes progress events at a bounded rate: run and epoch boundaries always, steps at most
/// `per_second` times a second.
#[derive(Debug)]
pub struct EventThrottle {
    gap: Duration,
    last: Option<Instant>,
}

impl EventThrottle {
    /// A throttle letting through at most `per_second` step events a second (at least one).
    pub fn new(per_second: u32) -> Self {
        EventThrottle {
            gap: Duration::from_secs(1) / per_second.max(1),
            last: None,
        }
    }

    /// Whether `event` should be sent now.
    pub fn pass(&mut self, event: &Event) -> bool {
        let Event::Duel { event } = event;
        if !matches!(event, DuelEvent::Step { .. }) {
            return true;
        }
        let now = Instant::now();
        match self.last {
            Some(t) if now.duration_since(t) < self.gap => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

/// Clears [`RUNNING`] when the registered duel ends, however it ends.
struct Registered;

impl Registered {
    fn new(flag: &Arc<AtomicBool>) -> Self {
        *lock(&RUNNING) = Some(Arc::clone(flag));
        Registered
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        *lock(&RUNNING) = None;
    }
}

/// Loads the duel's data set and applies the limits.
pub fn load_dataset(cfg: &DuelConfig) -> Result<Dataset> {
    let dir = cfg.data_dir.as_ref().map(std::path::Path::new);
    let mut d = data::load(&cfg.dataset, dir)?;
    let px = d.pixels();
    if let Some(n) = cfg.train_limit {
        d.train.truncate(n, px);
    }
    if let Some(n) = cfg.test_limit {
        d.test.truncate(n, px);
    }
    Ok(d)
}

/// Runs a duel: each precision in turn, same initial weights and data order. Refuses to start
/// while another duel runs in this process ([`ComputeError::Busy`]).
pub fn run_duel(
    cfg: &DuelConfig,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<DuelReport> {
    duel_locked(cfg, on_event, cancel, None)
}

/// [`run_duel`], registering `register` for [`cancel_running`] while the duel runs.
fn duel_locked(
    cfg: &DuelConfig,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
    register: Option<&Arc<AtomicBool>>,
) -> Result<DuelReport> {
    cfg.validate()?;
    let _guard = match BUSY.try_lock() {
        Ok(g) => g,
        // A duel that panicked left nothing behind that the next one reads.
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return Err(ComputeError::Busy("a duel".into())),
    };
    let _registered = register.map(Registered::new);
    let (backend, reason) = choose_backend(cfg.backend, cfg.device)?;
    match backend {
        Chosen::Cpu => {
            let be = CpuBackend::new(cfg.threads)?;
            duel_on(&be, cfg, reason, on_event, cancel)
        }
        #[cfg(feature = "cuda")]
        Chosen::Cuda(be) => duel_on(&*be, cfg, reason, on_event, cancel),
    }
}

enum Chosen {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda(Box<crate::cuda::CudaBackend>),
}

#[cfg(feature = "cuda")]
fn open_cuda(device: usize) -> Result<Chosen> {
    crate::cuda::CudaBackend::new(device).map(|b| Chosen::Cuda(Box::new(b)))
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(_device: usize) -> Result<Chosen> {
    Err(ComputeError::Backend {
        backend: "cuda".into(),
        reason: "this build has no CUDA backend (built without the `cuda` feature)".into(),
    })
}

fn choose_backend(choice: BackendChoice, device: usize) -> Result<(Chosen, String)> {
    match choice {
        BackendChoice::Cpu => Ok((Chosen::Cpu, "asked for --backend cpu".into())),
        BackendChoice::Auto => match open_cuda(device) {
            Ok(c) => Ok((c, format!("auto: GPU {device} is usable"))),
            Err(e) => Ok((Chosen::Cpu, format!("auto fell back to the CPU: {e}"))),
        },
        BackendChoice::Cuda => open_cuda(device).map(|c| (c, "asked for --backend cuda".into())),
    }
}

fn duel_on<B: Backend>(
    be: &B,
    cfg: &DuelConfig,
    reason: String,
    on_event: &mut dyn FnMut(DuelEvent),
    cancel: &AtomicBool,
) -> Result<DuelReport> {
    let d = load_dataset(cfg)?;
    let init = init_params(cfg.seed);
    let adam = AdamParams {
        lr: cfg.lr,
        ..AdamParams::default()
    };
    let mut runs = Vec::new();
    for &precision in &cfg.precisions {
        let opts = TrainOptions {
            precision,
            epochs: cfg.epochs,
            batch: cfg.batch,
            adam,
            seed: cfg.seed,
            dropout: cfg.dropout,
            activation: cfg.activation,
        };
        be.reset_peak();
        let mut t = Trainer::new(be, opts, &d.train, &d.test, &init)?;
        runs.push(t.run(on_event, cancel)?);
    }
    Ok(DuelReport {
        backend: be.name().into(),
        device: be.device(),
        backend_reason: reason,
        dataset: DatasetUsed {
            name: d.name.clone(),
            train: d.train.len(),
            test: d.test.len(),
        },
        config: ConfigUsed {
            epochs: cfg.epochs,
            batch: cfg.batch,
            seed: cfg.seed,
            lr: cfg.lr,
            dropout: cfg.dropout,
            activation: cfg.activation,
            threads: be.threads(),
        },
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Precision;

    #[test]
    fn handle_answers_quick_requests_as_json() {
        let flag = Arc::new(AtomicBool::new(false));
        let m = handle(&Request::ModelSummary, &mut |_| {}, &flag).unwrap();
        assert!(m.is_object());
        let o = handle(
            &Request::Occupancy {
                cc: "9.0".into(),
                input: crate::occupancy::OccupancyInput {
                    threads_per_block: 256,
                    registers_per_thread: 64,
                    shared_mem_per_block: 0,
                    carveout_pct: None,
                },
            },
            &mut |_| {},
            &flag,
        )
        .unwrap();
        assert!(o["occupancy_pct"].as_f64().is_some(), "{o}");
        let e = handle(
            &Request::Occupancy {
                cc: "sm_13".into(),
                input: crate::occupancy::OccupancyInput {
                    threads_per_block: 256,
                    registers_per_thread: 64,
                    shared_mem_per_block: 0,
                    carveout_pct: None,
                },
            },
            &mut |_| {},
            &flag,
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
    }

    #[test]
    fn dataset_samples_requests_answer_a_page_or_name_the_field() {
        let flag = Arc::new(AtomicBool::new(false));
        let req: Request =
            serde_json::from_str(r#"{"op":"dataset_samples","dataset":"mnist-sample"}"#).unwrap();
        let page = handle(&req, &mut |_| {}, &flag).unwrap();
        let page: crate::types::DatasetSamples = serde_json::from_value(page).unwrap();
        assert_eq!((page.count(), page.offset, page.total), (64, 0, 2000));
        assert_eq!(page.split, crate::types::DataSplit::Test);
        assert_eq!(page.pixels().unwrap().len(), 64 * 784);
        let ask = |dataset: &str, offset: usize, count: usize| {
            handle(
                &Request::DatasetSamples {
                    dataset: dataset.into(),
                    split: crate::types::DataSplit::Train,
                    offset,
                    count,
                },
                &mut |_| {},
                &flag,
            )
        };
        let e = ask("mnist-sample", 0, 300).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.to_string().contains("count"), "{e}");
        let e = ask("mnist-sample", 8000, 64).unwrap_err();
        assert!(e.to_string().contains("offset"), "{e}");
        let e = ask("cifar", 0, 64).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.to_string().contains("dataset 'cifar'"), "{e}");
        assert_eq!(
            ask("mnist-sample", 7990, 64).unwrap()["labels"]
                .as_array()
                .map(Vec::len),
            Some(10)
        );
    }

    #[test]
    fn a_screenshot_comes_back_as_base64_and_unknown_ids_are_named() {
        use base64::Engine;
        let t = tempfile::tempdir().unwrap();
        let store = crate::store::ImportStore::open(t.path()).unwrap();
        let text = include_str!("../core/tests/data/ncu/ours_details.csv");
        let report = crate::ncu::import_str(text).unwrap();
        let imp = store
            .save_bytes("ours.csv", text.as_bytes(), &report)
            .unwrap();
        let img = image::RgbImage::from_fn(3, 2, |x, y| image::Rgb([x as u8, y as u8, 9]));
        let mut png = std::io::Cursor::new(Vec::new());
        img.write_to(&mut png, image::ImageFormat::Png).unwrap();
        let png = png.into_inner();
        let shot = store
            .attach(&imp.id, None, "launch", "l.png", &png, None)
            .unwrap();
        let out = screenshot_image(&store, &imp.id, &shot.id).unwrap();
        assert_eq!(out.mime, "image/png");
        let back = base64::engine::general_purpose::STANDARD
            .decode(&out.base64)
            .unwrap();
        assert_eq!(back, png);
        assert!(out.data_url().starts_with("data:image/png;base64,iVBOR"));
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["mime"], "image/png");

        let e = screenshot_image(&store, &imp.id, "fedcba9876543210").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.to_string().contains("'fedcba9876543210'"), "{e}");
        let e = screenshot_image(&store, "../../etc", &shot.id).unwrap_err();
        assert!(e.to_string().contains("no import '../../etc'"), "{e}");
        let req: Request = serde_json::from_str(
            r#"{"op":"ncu_screenshot","import":"0123456789abcdef","screenshot":"x"}"#,
        )
        .unwrap();
        assert!(matches!(req, Request::NcuScreenshot { .. }));
    }

    #[test]
    fn the_throttle_passes_boundaries_and_spaces_steps() {
        let mut t = EventThrottle::new(20);
        let step = Event::Duel {
            event: DuelEvent::Step {
                precision: Precision::Fp32,
                epoch: 1,
                step: 1,
                steps: 2,
                loss: 1.0,
                loss_scale: 1.0,
            },
        };
        let start = Event::Duel {
            event: DuelEvent::RunStarted {
                precision: Precision::Fp32,
                steps_per_epoch: 2,
                epochs: 1,
            },
        };
        assert!(t.pass(&step));
        assert!(!t.pass(&step));
        assert!(t.pass(&start));
        std::thread::sleep(Duration::from_millis(60));
        assert!(t.pass(&step));
    }

    #[test]
    fn bad_configs_are_refused_before_any_work() {
        let cfg = DuelConfig {
            batch: 0,
            ..DuelConfig::default()
        };
        let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.to_string().contains("--batch"));
    }

    #[test]
    fn cuda_without_a_gpu_is_a_runtime_error_naming_the_reason() {
        let cfg = DuelConfig {
            backend: BackendChoice::Cuda,
            ..DuelConfig::default()
        };
        let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Runtime);
        assert!(e.to_string().starts_with("cuda backend:"), "{e}");
    }

    #[test]
    fn tf32_on_the_cpu_is_refused_as_bad_input() {
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            precisions: vec![Precision::Tf32],
            train_limit: Some(64),
            ..DuelConfig::default()
        };
        let e = run_duel(&cfg, &mut |_| {}, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput, "{e}");
    }

    #[test]
    fn a_duel_reply_names_its_saved_run_or_why_it_was_not_saved() {
        let t = tempfile::tempdir().unwrap();
        use crate::runs::examples::json;
        let report = crate::runs::examples::report("cpu", 2.0, 1.0);
        let store = crate::runs::RunStore::open(t.path()).unwrap();
        let mut reply = to_json(&report).unwrap();
        note_saved_run(&mut reply, Ok(store.save(&report).unwrap()));
        let id = reply["saved_run"].as_str().unwrap().to_string();
        assert_eq!(json(&store.load(&id).unwrap()), json(&report));
        // A history that cannot be written: the result is answered all the same, with a note.
        let blocked = t.path().join("file");
        std::fs::write(&blocked, "x").unwrap();
        let failed = crate::runs::RunStore::open(&blocked).unwrap_err();
        let mut reply = to_json(&report).unwrap();
        note_saved_run(&mut reply, Err(failed.into()));
        assert!(reply["saved_run"].is_null());
        assert!(
            reply["save_note"].as_str().unwrap().contains("not saved"),
            "{reply}"
        );
        let back: DuelReport = serde_json::from_value(reply).unwrap();
        assert_eq!(json(&back), json(&report));
    }
}
