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
//!
//! Nothing read back is trusted ([`files`]): every record is a regular file of bounded size
//! (a link is never followed, a FIFO never opened), its fields must name files of its own
//! folder, and a damaged part is left out alone and named ([`ImportList::skipped`]): a bad
//! screenshot record drops that screenshot, not its import. Opening a store removes the
//! leftovers of writes a crash cut off: a temporary file (`.tmp-<pid>-XXXXXX`, named for the
//! process writing it) at once when that process is gone, else once it is an hour old
//! ([`files::LEFTOVER_AGE`]); an import folder without its `meta.json` and a screenshot image
//! without its record once they are an hour old.
//! Screenshot decodes share one memory budget per process ([`decode`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub mod decode;
mod error;
pub mod example;
pub mod files;

pub use error::StoreError;
use error::{clip, damaged, file_error, io, Result};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ncu::{
    self, Format, ImageFormat, ImportList, ImportSummary, NcuError, NcuReport, ProfiledOn,
    Screenshot, MAX_CAPTION_CHARS, MAX_SCREENSHOT_BYTES, MAX_SCREENSHOT_SIDE,
};
use decode::{DecodeBudget, DECODE_BUDGET, DECODE_WAIT, MAX_DECODE_BYTES};
use files::FileError;

/// The largest `meta.json` read (its kernel list included).
const MAX_META_BYTES: u64 = 16 << 20;

/// The largest screenshot record read (a 2,000-character caption is a few KiB).
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// The names a stored source may have, inside its import's folder.
const SOURCE_NAMES: [&str; 2] = ["source.csv", "source.ncu-rep"];

/// The longest file name kept for an import or a screenshot, in characters.
const MAX_NAME_CHARS: usize = 255;

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
    /// What the export says of where its kernels ran (absent in records written before).
    #[serde(default)]
    profiled_on: Option<ProfiledOn>,
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

    /// Opens (creating if needed) the store in `root`, removing the leftovers of writes a
    /// crash cut off: temporary files whose writer is gone at once ([`files::sweep`]), and
    /// once they are [`files::LEFTOVER_AGE`] old, any other temporary file, import folders
    /// without a `meta.json` and screenshot images without a record.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let imports = root.join("imports");
        std::fs::create_dir_all(&imports).map_err(io(&imports))?;
        let store = ImportStore { root };
        store.sweep(SystemTime::now());
        Ok(store)
    }

    /// Removes crash leftovers: temporary files of a process that is gone, and anything older
    /// than [`files::LEFTOVER_AGE`] (failures are left for the next open).
    fn sweep(&self, now: SystemTime) {
        let imports = self.root.join("imports");
        files::sweep(&imports, now);
        let Ok(entries) = std::fs::read_dir(&imports) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.path();
            let Ok(Some(meta)) = files::entry(&dir) else {
                continue;
            };
            if !is_id(&name) || !meta.is_dir() {
                continue;
            }
            if matches!(files::entry(&dir.join("meta.json")), Ok(None)) {
                // An import cut off before its meta.json, or a removal cut off after it.
                if files::older_than(&meta, files::LEFTOVER_AGE, now) {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                continue;
            }
            files::sweep(&dir, now);
            let shots = dir.join("screenshots");
            if !files::is_real_dir(&shots) {
                continue;
            }
            files::sweep(&shots, now);
            let Ok(images) = std::fs::read_dir(&shots) else {
                continue;
            };
            for image in images.flatten() {
                let stored = image.file_name().to_string_lossy().into_owned();
                let Some((sid, _)) = stored.split_once('.').filter(|_| is_stored_name(&stored))
                else {
                    continue;
                };
                // An image whose record was never written (an attach cut off) or whose
                // record was removed (a detach cut off).
                let record = shots.join(format!("{sid}.json"));
                let path = image.path();
                if matches!(files::entry(&record), Ok(None))
                    && files::entry(&path).is_ok_and(|m| {
                        m.is_some_and(|m| {
                            !m.is_dir() && files::older_than(&m, files::LEFTOVER_AGE, now)
                        })
                    })
                {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    }

    /// The store's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of import `id`: a real folder (not a link) holding a `meta.json`.
    fn dir(&self, id: &str) -> Result<PathBuf> {
        let unknown = || StoreError::UnknownImport {
            id: clip(id),
            store: self.root.display().to_string(),
        };
        if !is_id(id) {
            return Err(unknown());
        }
        let d = self.root.join("imports").join(id);
        if files::is_real_dir(&d) && matches!(files::entry(&d.join("meta.json")), Ok(Some(_))) {
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
        let mut tmp = files::temp_file_in(&imports).map_err(io(&imports))?;
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
        ensure_dir(&dir)?;
        ensure_dir(&dir.join("screenshots"))?;
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
            profiled_on: Some(ProfiledOn::of(report)),
        };
        write_json_atomic(&dir.join("meta.json"), &meta)?;
        self.summary(&id)
    }

    /// Import `id`'s folder and its record, checked: its `id` is its folder's and its
    /// `stored_source` one of [`SOURCE_NAMES`] (a record naming another file would have the
    /// store read any file of the machine).
    fn meta(&self, id: &str) -> Result<(PathBuf, Meta)> {
        let dir = self.dir(id)?;
        let path = dir.join("meta.json");
        let meta: Meta = read_json(&path, MAX_META_BYTES)?;
        if meta.id != id {
            return Err(damaged(
                &path,
                format!("its id '{}' is not its folder's ({id})", clip(&meta.id)),
            ));
        }
        if !SOURCE_NAMES.contains(&meta.stored_source.as_str()) {
            return Err(damaged(
                &path,
                format!(
                    "stored_source '{}' is not a source file of the store ({})",
                    clip(&meta.stored_source),
                    SOURCE_NAMES.join(" or ")
                ),
            ));
        }
        Ok((dir, meta))
    }

    /// The import's summary with its screenshots (a damaged screenshot is left out).
    pub fn summary(&self, id: &str) -> Result<ImportSummary> {
        Ok(self.summary_checked(id)?.0)
    }

    /// The import's summary, and one note per screenshot left out because its record or its
    /// image is damaged.
    fn summary_checked(&self, id: &str) -> Result<(ImportSummary, Vec<String>)> {
        let (dir, meta) = self.meta(id)?;
        let (screenshots, notes) = screenshots_in(id, &dir.join("screenshots"));
        let example = meta.id == example::example_id();
        Ok((
            ImportSummary {
                screenshots,
                id: meta.id,
                source_name: meta.source_name,
                source_bytes: meta.source_bytes,
                format: meta.format,
                kernels: meta.kernel_ids.len(),
                imported_at: meta.imported_at,
                example,
                profiled_on: meta.profiled_on,
            },
            notes,
        ))
    }

    /// Every readable import, oldest first (see [`ImportStore::list_checked`] for what was
    /// left out, and why).
    pub fn list(&self) -> Result<Vec<ImportSummary>> {
        Ok(self.list_checked()?.imports)
    }

    /// Every import, oldest first, and one note per part left out, naming it and why: an
    /// import whose `meta.json` is damaged, a screenshot whose record or image is (its import
    /// is listed without it), an entry that is not a folder. One bad part never hides the
    /// others. Folders without a `meta.json` (an import cut off before it finished, or removed
    /// while the list was being read) are skipped silently.
    pub fn list_checked(&self) -> Result<ImportList> {
        let imports = self.root.join("imports");
        let mut listing = ImportList::default();
        for e in std::fs::read_dir(&imports).map_err(io(&imports))? {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    listing.skipped.push(format!(
                        "{}: an entry cannot be read: {err}",
                        imports.display()
                    ));
                    continue;
                }
            };
            let name = e.file_name().to_string_lossy().into_owned();
            if !is_id(&name) {
                continue;
            }
            let path = e.path();
            match files::entry(&path) {
                Ok(Some(m)) if m.is_dir() => {}
                Ok(Some(m)) => {
                    listing.skipped.push(format!(
                        "{}: {}, not an import's folder: left out",
                        path.display(),
                        files::kind_of(&m)
                    ));
                    continue;
                }
                Ok(None) => continue,
                Err(_) => continue,
            }
            if !matches!(files::entry(&path.join("meta.json")), Ok(Some(_))) {
                continue;
            }
            match self.summary_checked(&name) {
                Ok((summary, notes)) => {
                    listing.imports.push(summary);
                    listing.skipped.extend(notes);
                }
                Err(StoreError::UnknownImport { .. }) => {}
                Err(error) => listing
                    .skipped
                    .push(format!("import {name} left out: {error}")),
            }
        }
        listing
            .imports
            .sort_by(|a, b| (a.imported_at, &a.id).cmp(&(b.imported_at, &b.id)));
        listing.skipped.sort();
        Ok(listing)
    }

    /// The import's summary and its report, read again from the stored source (a `.ncu-rep`
    /// needs `ncu` on PATH, as when it was imported). The source must be a regular file of
    /// the import's folder.
    pub fn load(&self, id: &str) -> Result<(ImportSummary, NcuReport)> {
        let (dir, meta) = self.meta(id)?;
        let path = dir.join(&meta.stored_source);
        let shown = path.display().to_string();
        let (file, _) = files::open_regular(&path, u64::MAX).map_err(|e| file_error(&path, e))?;
        let report =
            match ncu::import_named(std::io::BufReader::with_capacity(1 << 16, file), &shown) {
                Err(NcuError::NcuRep { .. }) => crate::ncu_runner::import_rep(&path),
                other => other,
            }
            .map_err(|source| StoreError::Import {
                path: shown,
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
            return Err(StoreError::UnknownPanel { panel: clip(panel) });
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
        ensure_dir(&shots)?;
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
            screenshot: clip(screenshot),
        };
        if !is_id(screenshot) || !files::is_real_dir(&dir) {
            return Err(unknown());
        }
        let record = dir.join(format!("{screenshot}.json"));
        if matches!(files::entry(&record), Ok(None)) {
            return Err(unknown());
        }
        let shot = read_record(&record, screenshot)?;
        let image = dir.join(&shot.stored_name);
        let bytes = match files::read_bounded(&image, MAX_SCREENSHOT_BYTES) {
            Ok(b) => b,
            Err(FileError::Missing) => return Err(unknown()),
            Err(e) => return Err(file_error(&image, e)),
        };
        Ok((shot, bytes))
    }

    /// Removes a screenshot from an import: its record, then its image. A damaged record
    /// can be removed too (it is not read).
    pub fn detach(&self, id: &str, screenshot: &str) -> Result<()> {
        let dir = self.dir(id)?.join("screenshots");
        let unknown = || StoreError::UnknownScreenshot {
            id: id.into(),
            screenshot: clip(screenshot),
        };
        if !is_id(screenshot) || !files::is_real_dir(&dir) {
            return Err(unknown());
        }
        let record = dir.join(format!("{screenshot}.json"));
        match files::entry(&record) {
            Ok(Some(m)) if !m.is_dir() => {}
            _ => return Err(unknown()),
        }
        std::fs::remove_file(&record).map_err(io(&record))?;
        for ext in ["png", "jpg"] {
            let image = dir.join(format!("{screenshot}.{ext}"));
            if files::entry(&image).is_ok_and(|m| m.is_some_and(|m| !m.is_dir())) {
                std::fs::remove_file(&image).map_err(io(&image))?;
            }
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

/// Creates the folder `path` of the store if needed; an existing entry must be a real folder
/// (a link there would have the store write elsewhere).
fn ensure_dir(path: &Path) -> Result<()> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match files::entry(path) {
            Ok(Some(m)) if m.is_dir() => Ok(()),
            Ok(Some(m)) => Err(damaged(
                path,
                format!("{}, not a folder", files::kind_of(&m)),
            )),
            Ok(None) => Err(io(path)(e)),
            Err(e) => Err(file_error(path, e)),
        },
        Err(e) => Err(io(path)(e)),
    }
}

/// Checks that `bytes` are a whole PNG or JPEG within the size limits, by decoding it; returns
/// its format and size in pixels. The size the image declares is checked against
/// [`MAX_DECODE_BYTES`] before any pixel is decoded, and the decode takes its share of the
/// process's decode budget ([`decode::DECODE_BUDGET`]): when other decodes hold it for longer
/// than [`DECODE_WAIT`], the image is refused with [`StoreError::Busy`].
pub fn validate_image(name: &str, bytes: &[u8]) -> Result<(ImageFormat, u32, u32)> {
    validate_image_in(&DECODE_BUDGET, DECODE_WAIT, name, bytes)
}

/// [`validate_image`] with the decode budget `budget`, waiting at most `wait` for it.
pub fn validate_image_in(
    budget: &DecodeBudget,
    wait: std::time::Duration,
    name: &str,
    bytes: &[u8],
) -> Result<(ImageFormat, u32, u32)> {
    use image::ImageDecoder;
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
                "a {} image; screenshots must be PNG or JPEG",
                other
                    .extensions_str()
                    .first()
                    .map_or_else(|| "different".into(), |e| e.to_uppercase())
            )))
        }
        Err(_) => return Err(bad("not a PNG or JPEG image".into())),
    };
    let invalid = |e: image::ImageError| {
        bad(format!(
            "not a valid {} image: {e}",
            format.extension().to_uppercase()
        ))
    };
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), decoder_format);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SCREENSHOT_SIDE);
    limits.max_image_height = Some(MAX_SCREENSHOT_SIDE);
    // The decoder's own buffers besides the pixels.
    limits.max_alloc = Some(MAX_DECODE_BYTES + (64 << 20));
    reader.limits(limits);
    // The header only: no pixel is decoded yet.
    let decoder = reader.into_decoder().map_err(invalid)?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(bad("the image has no pixels".into()));
    }
    let decoded = decoder.total_bytes();
    if matches!(format, ImageFormat::Jpeg) {
        // Before any pixel is decoded: data too short for the declared size.
        decode::check_jpeg_data(bytes, width, height).map_err(bad)?;
    }
    if decoded > MAX_DECODE_BYTES {
        return Err(bad(format!(
            "declares {width}×{height} pixels ({} bytes each), {} MiB once decoded: over the {} MiB a screenshot may take",
            decoder.color_type().bytes_per_pixel(),
            decoded.div_ceil(1 << 20),
            MAX_DECODE_BYTES >> 20
        )));
    }
    // A JPEG decoder holds its planes beside the pixels it hands out.
    let share = match format {
        ImageFormat::Png => decoded,
        ImageFormat::Jpeg => decoded.saturating_mul(2),
    }
    .min(budget.total());
    let _lease = budget
        .take(share, wait)
        .map_err(|in_use| StoreError::Busy {
            in_use_mib: in_use.div_ceil(1 << 20),
            budget_mib: budget.total() >> 20,
        })?;
    // Decoded in full; the pixels must be the size the header declared.
    match format {
        ImageFormat::Png => {
            let img = image::DynamicImage::from_decoder(decoder).map_err(invalid)?;
            if (img.width(), img.height()) != (width, height) {
                return Err(bad(format!(
                    "its header declares {width}×{height} pixels, but it decodes to {}×{}",
                    img.width(),
                    img.height()
                )));
            }
        }
        ImageFormat::Jpeg => {
            // image's JPEG decoder pads data that ends early: the strict decoder refuses it.
            drop(decoder);
            decode::decode_jpeg(bytes, width, height).map_err(bad)?;
        }
    }
    Ok((format, width, height))
}

/// Screenshot record `path` of screenshot `sid`, checked: its `id` is `sid` and its image is
/// `sid.png` or `sid.jpg` as its format says, beside it.
fn read_record(path: &Path, sid: &str) -> Result<Screenshot> {
    let shot: Screenshot = read_json(path, MAX_RECORD_BYTES)?;
    if shot.id != sid {
        return Err(damaged(
            path,
            format!("its id '{}' is not its file's ({sid})", clip(&shot.id)),
        ));
    }
    let expected = format!("{sid}.{}", shot.format.extension());
    if shot.stored_name != expected {
        return Err(damaged(
            path,
            format!(
                "stored_name '{}' is not its image ({expected})",
                clip(&shot.stored_name)
            ),
        ));
    }
    if !ncu::is_panel_id(&shot.panel) {
        return Err(damaged(
            path,
            format!("panel '{}' is not one of the panels", clip(&shot.panel)),
        ));
    }
    Ok(shot)
}

/// The screenshots of import `id` whose record and image are whole, oldest first, and one note
/// per screenshot left out (its record or image damaged, its image missing).
fn screenshots_in(id: &str, dir: &Path) -> (Vec<Screenshot>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    match files::entry(dir) {
        Ok(None) => return (out, notes),
        Ok(Some(m)) if m.is_dir() => {}
        Ok(Some(m)) => {
            notes.push(format!(
                "import {id}: {}: {}, not a folder: its screenshots are left out",
                dir.display(),
                files::kind_of(&m)
            ));
            return (out, notes);
        }
        Err(e) => {
            notes.push(format!(
                "import {id}: {}: its screenshots are left out: {}",
                dir.display(),
                file_error(dir, e)
            ));
            return (out, notes);
        }
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            notes.push(format!(
                "import {id}: {}: its screenshots are left out: {e}",
                dir.display()
            ));
            return (out, notes);
        }
    };
    for e in entries {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                notes.push(format!(
                    "import {id}: {}: an entry cannot be read: {err}",
                    dir.display()
                ));
                continue;
            }
        };
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(sid) = file.strip_suffix(".json").filter(|s| is_id(s)) else {
            continue;
        };
        let left_out = |e: StoreError| format!("import {id}: screenshot {sid} left out: {e}");
        let shot = match read_record(&e.path(), sid) {
            Ok(shot) => shot,
            Err(err) => {
                notes.push(left_out(err));
                continue;
            }
        };
        let image = dir.join(&shot.stored_name);
        let problem = match files::entry(&image) {
            Ok(None) => Some(damaged(&image, "the image is missing")),
            Ok(Some(m)) if !m.is_file() => Some(damaged(
                &image,
                format!("{}, not a regular file", files::kind_of(&m)),
            )),
            Ok(Some(m)) if m.len() > MAX_SCREENSHOT_BYTES => Some(damaged(
                &image,
                format!(
                    "{} bytes is over the {} MiB limit for a screenshot",
                    m.len(),
                    MAX_SCREENSHOT_BYTES >> 20
                ),
            )),
            Ok(Some(_)) => None,
            Err(err) => Some(file_error(&image, err)),
        };
        match problem {
            Some(err) => notes.push(left_out(err)),
            None => out.push(shot),
        }
    }
    out.sort_by(|a, b| (a.added_at, &a.id).cmp(&(b.added_at, &b.id)));
    notes.sort();
    (out, notes)
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

/// Reads the JSON record `path` (a regular file of at most `max` bytes, never through a link).
fn read_json<T: for<'de> Deserialize<'de>>(path: &Path, max: u64) -> Result<T> {
    let text = files::read_bounded(path, max).map_err(|e| file_error(path, e))?;
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
    let mut tmp = files::temp_file_in(dir).map_err(io(dir))?;
    tmp.write_all(bytes).map_err(io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io(tmp.path()))?;
    tmp.persist(path).map_err(|e| io(path)(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests;
