//! The user's library of Nsight Compute imports, and the screenshots attached to their
//! panels, kept on disk so they survive restarts of the app and of the compute sidecar.
//!
//! ```text
//! ROOT/imports/ID/meta.json               ImportSummary (without its screenshots)
//! ROOT/imports/ID/source.csv|.ncu-rep     the imported file, byte for byte
//! ROOT/imports/ID/screenshots/SID.png     an attached screenshot (or .jpg)
//! ROOT/imports/ID/screenshots/SID.json    its Screenshot record
//! ```
//!
//! `ID` is the first 16 hex digits of the imported file's SHA-256, so importing the same file
//! again finds the import it already made (and its screenshots). Every file is written to a
//! temporary file in the same folder and renamed into place, so a crash never leaves half a
//! record; a screenshot's record is written after its image, and an image without a record
//! is ignored. Each screenshot is its own pair of files, so two processes attaching to the
//! same import at once lose nothing. The source file is kept rather than the parsed report
//! (a 100 MB raw-page export is millions of metrics, and re-importing it takes about two
//! seconds); [`ImportStore::load`] reads it again.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ComputeError;
use crate::ncu::{
    self, Format, ImageFormat, ImportSummary, NcuError, NcuReport, Screenshot, MAX_CAPTION_CHARS,
    MAX_SCREENSHOT_BYTES, MAX_SCREENSHOT_SIDE, PANEL_IDS,
};

/// The most bytes a decoded screenshot may need in memory.
const MAX_DECODE_BYTES: u64 = 1 << 30;

/// The longest file name kept for an import or a screenshot, in characters.
const MAX_NAME_CHARS: usize = 255;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The operating system refused a read or write.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// No import has this identifier.
    #[error("no import '{id}' in {store} (`showdown ncu list` shows the imports)")]
    UnknownImport {
        /// The identifier asked for.
        id: String,
        /// The store's folder.
        store: String,
    },
    /// The import has no screenshot with this identifier.
    #[error("import {id} has no screenshot '{screenshot}'")]
    UnknownScreenshot {
        /// The import.
        id: String,
        /// The screenshot identifier asked for.
        screenshot: String,
    },
    /// The import has no kernel with this ID.
    #[error("import {id} has no kernel with ID {kernel} (its kernels: {known})")]
    UnknownKernel {
        /// The import.
        id: String,
        /// The kernel ID asked for.
        kernel: u64,
        /// The IDs it has (the first few).
        known: String,
    },
    /// Not one of the seven panels.
    #[error("unknown panel '{panel}': the panels are {}", PANEL_IDS.join(", "))]
    UnknownPanel {
        /// The panel asked for.
        panel: String,
    },
    /// The file is not a usable PNG or JPEG.
    #[error("{name}: {reason}")]
    BadImage {
        /// The image's file name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A caption or name is unusable.
    #[error("invalid {what}: {reason}")]
    BadText {
        /// `caption` or `file name`.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A file of the store is damaged (edited by hand, or a disk fault).
    #[error("{path}: damaged store file: {reason}")]
    Damaged {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The stored source file no longer imports.
    #[error("{path}: {source}")]
    Import {
        /// The stored source.
        path: String,
        /// The importer's error.
        #[source]
        source: NcuError,
    },
}

impl From<StoreError> for ComputeError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Io { path, source } => ComputeError::Io { path, source },
            StoreError::Damaged { path, reason } => ComputeError::bad_file(path, reason),
            StoreError::Import { path, source } => ComputeError::bad_file(path, source.to_string()),
            StoreError::BadImage { name, reason } => ComputeError::bad_file(name, reason),
            other => ComputeError::BadRequest(other.to_string()),
        }
    }
}

type Result<T> = std::result::Result<T, StoreError>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The import's record as written to `meta.json` (screenshots live in their own files).
#[derive(Serialize, Deserialize)]
struct Meta {
    id: String,
    source_name: String,
    source_bytes: u64,
    /// `source.csv` or `source.ncu-rep`.
    stored_source: String,
    format: Format,
    kernel_ids: Vec<u64>,
    imported_at: u64,
}

/// An import [`ImportStore::list_checked`] left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedImport {
    /// The import's identifier (its folder's name).
    pub id: String,
    /// Why it could not be listed (the damaged file and what is wrong with it).
    pub reason: String,
}

/// What [`ImportStore::list_checked`] found: the readable imports and the ones left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportListing {
    /// The readable imports, oldest first.
    pub imports: Vec<ImportSummary>,
    /// The imports whose records could not be read, by identifier.
    pub skipped: Vec<SkippedImport>,
}

/// The library of imports in one folder.
#[derive(Debug, Clone)]
pub struct ImportStore {
    root: PathBuf,
}

impl ImportStore {
    /// The default folder: `$SHOWDOWN_DATA_HOME`, else the user's data folder
    /// (`~/.local/share/precision-showdown` on Linux).
    pub fn default_root() -> Option<PathBuf> {
        std::env::var_os("SHOWDOWN_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| dirs::data_dir().map(|d| d.join("precision-showdown")))
    }

    /// Opens (creating if needed) the store in `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let imports = root.join("imports");
        std::fs::create_dir_all(&imports).map_err(io(&imports))?;
        Ok(ImportStore { root })
    }

    /// The store's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir(&self, id: &str) -> Result<PathBuf> {
        let unknown = || StoreError::UnknownImport {
            id: id.chars().take(40).collect(),
            store: self.root.display().to_string(),
        };
        if !is_id(id) {
            return Err(unknown());
        }
        let d = self.root.join("imports").join(id);
        if d.join("meta.json").is_file() {
            Ok(d)
        } else {
            Err(unknown())
        }
    }

    /// Keeps `source` (already imported as `report`) in the library and returns its summary;
    /// a file imported before returns the existing import, screenshots included.
    pub fn save(&self, source: &Path, report: &NcuReport) -> Result<ImportSummary> {
        let mut input = std::fs::File::open(source).map_err(io(source))?;
        let ext = if source.extension().is_some_and(|e| e == "ncu-rep") {
            "ncu-rep"
        } else {
            "csv"
        };
        let name = file_name(source)?;
        self.save_from(&mut input, source, &name, ext, report)
    }

    /// Keeps the CSV export `bytes` (already imported as `report`), named `source_name`, in the
    /// library and returns its summary (the existing import if the same bytes were saved).
    pub fn save_bytes(
        &self,
        source_name: &str,
        bytes: &[u8],
        report: &NcuReport,
    ) -> Result<ImportSummary> {
        let name = clean_name(source_name)?;
        let mut input = bytes;
        self.save_from(&mut input, Path::new(&name), &name, "csv", report)
    }

    fn save_from(
        &self,
        input: &mut dyn Read,
        shown: &Path,
        source_name: &str,
        ext: &str,
        report: &NcuReport,
    ) -> Result<ImportSummary> {
        let imports = self.root.join("imports");
        let mut tmp = tempfile::NamedTempFile::new_in(&imports).map_err(io(&imports))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut bytes = 0u64;
        loop {
            let n = input.read(&mut buf).map_err(io(shown))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n]).map_err(io(tmp.path()))?;
            bytes += n as u64;
        }
        let id: String = hex(&hasher.finalize())[..16].to_string();
        if let Ok(existing) = self.summary(&id) {
            return Ok(existing);
        }
        let dir = imports.join(&id);
        std::fs::create_dir_all(dir.join("screenshots")).map_err(io(&dir))?;
        let stored_source = format!("source.{ext}");
        tmp.as_file().sync_all().map_err(io(tmp.path()))?;
        let target = dir.join(&stored_source);
        tmp.persist(&target).map_err(|e| io(&target)(e.error))?;
        let meta = Meta {
            id: id.clone(),
            source_name: source_name.to_string(),
            source_bytes: bytes,
            stored_source,
            format: report.format,
            kernel_ids: report.kernels.iter().map(|k| k.id).collect(),
            imported_at: now(),
        };
        write_json_atomic(&dir.join("meta.json"), &meta)?;
        self.summary(&id)
    }

    fn meta(&self, id: &str) -> Result<(PathBuf, Meta)> {
        let dir = self.dir(id)?;
        let meta: Meta = read_json(&dir.join("meta.json"))?;
        Ok((dir, meta))
    }

    /// The import's summary with its screenshots.
    pub fn summary(&self, id: &str) -> Result<ImportSummary> {
        let (dir, meta) = self.meta(id)?;
        Ok(ImportSummary {
            screenshots: screenshots_in(&dir.join("screenshots"))?,
            id: meta.id,
            source_name: meta.source_name,
            source_bytes: meta.source_bytes,
            format: meta.format,
            kernels: meta.kernel_ids.len(),
            imported_at: meta.imported_at,
        })
    }

    /// Every readable import, oldest first; imports whose records are damaged are left out
    /// (see [`ImportStore::list_checked`] to learn which, and why).
    pub fn list(&self) -> Result<Vec<ImportSummary>> {
        Ok(self.list_checked()?.imports)
    }

    /// Every import, oldest first, and the imports left out because their records could not
    /// be read (a damaged `meta.json` or screenshot record): one bad import never hides the
    /// others. Folders without a `meta.json` (an import cut off before it finished, or removed
    /// while the list was being read) are skipped silently.
    pub fn list_checked(&self) -> Result<ImportListing> {
        let imports = self.root.join("imports");
        let mut listing = ImportListing::default();
        for e in std::fs::read_dir(&imports).map_err(io(&imports))? {
            let e = e.map_err(io(&imports))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if !(is_id(&name) && e.path().join("meta.json").is_file()) {
                continue;
            }
            match self.summary(&name) {
                Ok(summary) => listing.imports.push(summary),
                Err(StoreError::UnknownImport { .. }) => {}
                Err(error) => listing.skipped.push(SkippedImport {
                    id: name,
                    reason: error.to_string(),
                }),
            }
        }
        listing
            .imports
            .sort_by(|a, b| (a.imported_at, &a.id).cmp(&(b.imported_at, &b.id)));
        listing.skipped.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(listing)
    }

    /// The import's summary and its report, read again from the stored source (a `.ncu-rep`
    /// needs `ncu` on PATH, as when it was imported).
    pub fn load(&self, id: &str) -> Result<(ImportSummary, NcuReport)> {
        let (dir, meta) = self.meta(id)?;
        let path = dir.join(&meta.stored_source);
        let report = match ncu::import_file(&path) {
            Err(NcuError::NcuRep { .. }) => ncu::import_ncu_rep(&path, true),
            other => other,
        }
        .map_err(|source| StoreError::Import {
            path: path.display().to_string(),
            source,
        })?;
        Ok((self.summary(id)?, report))
    }

    /// Attaches the image `bytes` (a PNG or JPEG, decoded in full to check it) to panel
    /// `panel` of kernel `kernel` (`None`: of every kernel) of import `id`.
    pub fn attach(
        &self,
        id: &str,
        kernel: Option<u64>,
        panel: &str,
        original_name: &str,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> Result<Screenshot> {
        let (dir, meta) = self.meta(id)?;
        if !ncu::is_panel_id(panel) {
            return Err(StoreError::UnknownPanel {
                panel: panel.chars().take(40).collect(),
            });
        }
        if let Some(k) = kernel {
            if !meta.kernel_ids.contains(&k) {
                let mut known: Vec<String> = meta
                    .kernel_ids
                    .iter()
                    .take(12)
                    .map(u64::to_string)
                    .collect();
                if meta.kernel_ids.len() > 12 {
                    known.push("…".into());
                }
                return Err(StoreError::UnknownKernel {
                    id: id.into(),
                    kernel: k,
                    known: known.join(", "),
                });
            }
        }
        let original_name = clean_name(original_name)?;
        let caption = caption.map(check_caption).transpose()?;
        let (format, width, height) = validate_image(&original_name, bytes)?;
        let mut h = Sha256::new();
        h.update(kernel.map_or_else(|| "*".to_string(), |k| k.to_string()));
        h.update([0]);
        h.update(panel);
        h.update([0]);
        h.update(bytes);
        let sid = hex(&h.finalize())[..16].to_string();
        let shots = dir.join("screenshots");
        std::fs::create_dir_all(&shots).map_err(io(&shots))?;
        let stored_name = format!("{sid}.{}", format.extension());
        write_atomic(&shots.join(&stored_name), bytes)?;
        let shot = Screenshot {
            id: sid.clone(),
            kernel,
            panel: panel.into(),
            original_name,
            stored_name,
            format,
            width,
            height,
            bytes: bytes.len() as u64,
            caption,
            added_at: now(),
        };
        write_json_atomic(&shots.join(format!("{sid}.json")), &shot)?;
        Ok(shot)
    }

    /// Where a screenshot's image is.
    pub fn screenshot_path(&self, id: &str, shot: &Screenshot) -> Result<PathBuf> {
        Ok(self.dir(id)?.join("screenshots").join(&shot.stored_name))
    }

    /// Screenshot `screenshot` of import `id`: its record and its image's bytes. Both
    /// identifiers must be 16 hex digits (they become paths); anything else, or a screenshot
    /// the import does not have, is [`StoreError::UnknownScreenshot`] naming it.
    pub fn screenshot(&self, id: &str, screenshot: &str) -> Result<(Screenshot, Vec<u8>)> {
        let dir = self.dir(id)?.join("screenshots");
        let unknown = || StoreError::UnknownScreenshot {
            id: id.into(),
            screenshot: screenshot.chars().take(40).collect(),
        };
        if !is_id(screenshot) {
            return Err(unknown());
        }
        let record = dir.join(format!("{screenshot}.json"));
        if !record.is_file() {
            return Err(unknown());
        }
        let shot: Screenshot = read_json(&record)?;
        if !is_stored_name(&shot.stored_name) {
            return Err(StoreError::Damaged {
                path: record.display().to_string(),
                reason: format!(
                    "stored_name '{}' is not an image of the store",
                    shot.stored_name
                ),
            });
        }
        let image = dir.join(&shot.stored_name);
        let size = match std::fs::metadata(&image) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(unknown()),
            Err(e) => return Err(io(&image)(e)),
        };
        if size > MAX_SCREENSHOT_BYTES {
            return Err(StoreError::Damaged {
                path: image.display().to_string(),
                reason: format!(
                    "{size} bytes is over the {} MiB limit for a screenshot",
                    MAX_SCREENSHOT_BYTES >> 20
                ),
            });
        }
        let bytes = std::fs::read(&image).map_err(io(&image))?;
        Ok((shot, bytes))
    }

    /// Removes a screenshot from an import.
    pub fn detach(&self, id: &str, screenshot: &str) -> Result<()> {
        let dir = self.dir(id)?.join("screenshots");
        let unknown = || StoreError::UnknownScreenshot {
            id: id.into(),
            screenshot: screenshot.chars().take(40).collect(),
        };
        if !is_id(screenshot) {
            return Err(unknown());
        }
        let record = dir.join(format!("{screenshot}.json"));
        if !record.is_file() {
            return Err(unknown());
        }
        let shot: Screenshot = read_json(&record)?;
        std::fs::remove_file(&record).map_err(io(&record))?;
        let image = dir.join(&shot.stored_name);
        if is_stored_name(&shot.stored_name) && image.is_file() {
            std::fs::remove_file(&image).map_err(io(&image))?;
        }
        Ok(())
    }

    /// Removes an import with its screenshots.
    pub fn remove(&self, id: &str) -> Result<()> {
        let dir = self.dir(id)?;
        // meta.json first: a removal cut off half-way leaves a folder `list` skips.
        let meta = dir.join("meta.json");
        std::fs::remove_file(&meta).map_err(io(&meta))?;
        std::fs::remove_dir_all(&dir).map_err(io(&dir))
    }
}

/// Checks that `bytes` are a whole PNG or JPEG within the size limits, by decoding it; returns
/// its format and size in pixels.
pub fn validate_image(name: &str, bytes: &[u8]) -> Result<(ImageFormat, u32, u32)> {
    let bad = |reason: String| StoreError::BadImage {
        name: name.into(),
        reason,
    };
    if bytes.len() as u64 > MAX_SCREENSHOT_BYTES {
        return Err(bad(format!(
            "{} bytes is over the {} MiB limit for a screenshot",
            bytes.len(),
            MAX_SCREENSHOT_BYTES >> 20
        )));
    }
    if bytes.is_empty() {
        return Err(bad("the file is empty".into()));
    }
    let (format, decoder_format) = match image::guess_format(bytes) {
        Ok(image::ImageFormat::Png) => (ImageFormat::Png, image::ImageFormat::Png),
        Ok(image::ImageFormat::Jpeg) => (ImageFormat::Jpeg, image::ImageFormat::Jpeg),
        Ok(other) => {
            return Err(bad(format!(
                "a {other:?} image; screenshots must be PNG or JPEG"
            )))
        }
        Err(_) => return Err(bad("not a PNG or JPEG image".into())),
    };
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), decoder_format);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SCREENSHOT_SIDE);
    limits.max_image_height = Some(MAX_SCREENSHOT_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| {
        bad(format!(
            "not a valid {} image: {e}",
            format.extension().to_uppercase()
        ))
    })?;
    if img.width() == 0 || img.height() == 0 {
        return Err(bad("the image has no pixels".into()));
    }
    Ok((format, img.width(), img.height()))
}

fn screenshots_in(dir: &Path) -> Result<Vec<Screenshot>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io(dir)(e)),
    };
    for e in entries {
        let e = e.map_err(io(dir))?;
        let path = e.path();
        let is_record = path.extension().is_some_and(|x| x == "json")
            && path
                .file_stem()
                .is_some_and(|s| is_id(&s.to_string_lossy()));
        if !is_record {
            continue;
        }
        let shot: Screenshot = read_json(&path)?;
        if !is_stored_name(&shot.stored_name) {
            return Err(StoreError::Damaged {
                path: path.display().to_string(),
                reason: format!(
                    "stored_name '{}' is not an image of the store",
                    shot.stored_name
                ),
            });
        }
        if dir.join(&shot.stored_name).is_file() {
            out.push(shot);
        }
    }
    out.sort_by(|a, b| (a.added_at, &a.id).cmp(&(b.added_at, &b.id)));
    Ok(out)
}

/// 16 lower-case hex digits: the only form an identifier may take (it becomes a path).
fn is_id(s: &str) -> bool {
    s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_stored_name(s: &str) -> bool {
    s.split_once('.')
        .is_some_and(|(id, ext)| is_id(id) && (ext == "png" || ext == "jpg"))
}

fn file_name(path: &Path) -> Result<String> {
    clean_name(
        &path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    )
}

/// A file name as given by the user, without folders or control characters.
fn clean_name(name: &str) -> Result<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = base.chars().filter(|c| !c.is_control()).collect();
    if clean.trim().is_empty() {
        return Err(StoreError::BadText {
            what: "file name",
            reason: format!(
                "'{}' has no name part",
                name.chars().take(40).collect::<String>()
            ),
        });
    }
    Ok(clean.chars().take(MAX_NAME_CHARS).collect())
}

fn check_caption(c: &str) -> Result<String> {
    let n = c.chars().count();
    if n > MAX_CAPTION_CHARS {
        return Err(StoreError::BadText {
            what: "caption",
            reason: format!("{n} characters, at most {MAX_CAPTION_CHARS}"),
        });
    }
    if c.chars()
        .any(|ch| ch.is_control() && ch != '\n' && ch != '\t')
    {
        return Err(StoreError::BadText {
            what: "caption",
            reason: "control characters (other than newline and tab)".into(),
        });
    }
    Ok(c.to_string())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = std::fs::read(path).map_err(io(path))?;
    serde_json::from_slice(&text).map_err(|e| StoreError::Damaged {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_vec_pretty(value).map_err(|e| StoreError::Damaged {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    write_atomic(path, &text)
}

/// Writes `bytes` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`: readers see the old file or the new one, never half of one.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    tmp.write_all(bytes).map_err(io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io(tmp.path()))?;
    tmp.persist(path).map_err(|e| io(path)(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests;
