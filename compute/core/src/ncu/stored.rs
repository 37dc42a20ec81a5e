//! What the lab keeps of an import: its summary in the user's library, and the screenshots
//! attached to its panels. Pure types shared with the UI; the native store that writes them
//! is `compute::store`.

use serde::{Deserialize, Serialize};

use super::Format;

/// The stable identifiers of the seven panels, in display order (see [`super::build_panels`]).
pub const PANEL_IDS: [&str; 7] = [
    "throughput",
    "launch",
    "occupancy",
    "warp_state",
    "scheduler",
    "instructions",
    "summary",
];

/// The largest screenshot accepted, in bytes.
pub const MAX_SCREENSHOT_BYTES: u64 = 20 * 1024 * 1024;

/// The longest side, in pixels, of an accepted screenshot.
pub const MAX_SCREENSHOT_SIDE: u32 = 16_384;

/// The longest caption accepted, in characters.
pub const MAX_CAPTION_CHARS: usize = 2_000;

/// An import kept in the user's library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportSummary {
    /// The import's identifier: the first 16 hex digits of the SHA-256 of the imported file,
    /// so importing the same file twice gives the same import.
    pub id: String,
    /// The imported file's name (no folders), as data: never markup.
    pub source_name: String,
    /// The size of the imported file, in bytes.
    pub source_bytes: u64,
    /// The layout it was read from.
    pub format: Format,
    /// How many kernels it holds.
    pub kernels: usize,
    /// When it was first imported, in seconds since the Unix epoch.
    pub imported_at: u64,
    /// The screenshots attached to its panels, oldest first.
    #[serde(default)]
    pub screenshots: Vec<Screenshot>,
    /// Whether this is the lab's example report (a real export of our kernels that ships with
    /// the lab), not one the user imported; it is removed like any other.
    #[serde(default)]
    pub example: bool,
    /// The GPUs and compute capabilities the export names; `None` in imports made before they
    /// were read.
    #[serde(default)]
    pub profiled_on: Option<ProfiledOn>,
}

/// Where an export's kernels ran, as the export itself says it: the GPUs' names (a raw page's
/// `device__attribute_display_name`) and the compute capabilities (every page's `CC`
/// column), each distinct, in the order first seen. An import from another machine then
/// names its device, never passing for this one's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProfiledOn {
    /// The GPUs' names (`NVIDIA H100 80GB HBM3`).
    pub gpus: Vec<String>,
    /// The compute capabilities (`9.0`).
    pub compute_capabilities: Vec<String>,
}

impl ProfiledOn {
    /// What `report` says of where its kernels ran.
    pub fn of(report: &super::NcuReport) -> Self {
        let mut on = ProfiledOn::default();
        for k in &report.kernels {
            if let Some(super::MetricValue::Text(name)) = k
                .metric_named("device__attribute_display_name")
                .map(|m| &m.value)
            {
                let name = name.trim();
                if !name.is_empty() && !on.gpus.iter().any(|g| g == name) {
                    on.gpus.push(name.to_string());
                }
            }
            let cc = k.cc.trim();
            if !cc.is_empty() && !on.compute_capabilities.iter().any(|c| c == cc) {
                on.compute_capabilities.push(cc.to_string());
            }
        }
        on
    }

    /// In words: `NVIDIA H100 80GB HBM3, compute capability 9.0`; `compute capability 9.0
    /// (the export names no GPU)`; `the export names neither its GPU nor its compute
    /// capability`.
    pub fn words(&self) -> String {
        let cc = (!self.compute_capabilities.is_empty()).then(|| {
            format!(
                "compute capability {}",
                self.compute_capabilities.join(", ")
            )
        });
        match (self.gpus.is_empty(), cc) {
            (false, Some(cc)) => format!("{}, {cc}", self.gpus.join(", ")),
            (false, None) => self.gpus.join(", "),
            (true, Some(cc)) => format!("{cc} (the export names no GPU)"),
            (true, None) => "the export names neither its GPU nor its compute capability".into(),
        }
    }
}

/// The library of saved imports, as `ncu_imports` answers it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImportList {
    /// The imports that could be read, oldest first.
    pub imports: Vec<ImportSummary>,
    /// One note per part of the library left out because it could not be read (an import
    /// whose record is damaged, a screenshot whose record or image is: its import is listed
    /// without it), naming the file and what is wrong; everything else is listed all the same.
    #[serde(default)]
    pub skipped: Vec<String>,
}

/// The image formats a screenshot may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// Portable Network Graphics.
    Png,
    /// JPEG (JFIF/Exif).
    Jpeg,
}

impl ImageFormat {
    /// The media type (`image/png`).
    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }

    /// The file extension the store uses (`png`, `jpg`).
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
        }
    }
}

/// A screenshot attached to one panel of one kernel of an import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Screenshot {
    /// The screenshot's identifier within its import (16 hex digits).
    pub id: String,
    /// The kernel's ID in the import (`None`: every kernel's panel shows it).
    pub kernel: Option<u64>,
    /// The panel it belongs to (one of [`PANEL_IDS`]).
    pub panel: String,
    /// The file name it was attached from (no folders), as data: never markup.
    pub original_name: String,
    /// The file name inside the import's `screenshots/` folder.
    pub stored_name: String,
    /// Its format, checked by decoding the whole image.
    pub format: ImageFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Size in bytes.
    pub bytes: u64,
    /// The user's caption, if any, as data: never markup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// When it was attached, in seconds since the Unix epoch.
    pub added_at: u64,
}

impl Screenshot {
    /// Whether this screenshot belongs on panel `panel` of kernel `kernel`.
    pub fn shows_on(&self, kernel: u64, panel: &str) -> bool {
        self.panel == panel && self.kernel.is_none_or(|k| k == kernel)
    }
}

/// A screenshot's image as the `ncu_screenshot` request answers it, ready for a
/// `data:{mime};base64,{base64}` URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenshotImage {
    /// The media type (`image/png` or `image/jpeg`).
    pub mime: String,
    /// The image's bytes, base64 (standard alphabet, padded).
    pub base64: String,
}

impl ScreenshotImage {
    /// The image as a `data:` URL (for an `<img src>`).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64)
    }
}

/// Whether `panel` names one of the seven panels.
pub fn is_panel_id(panel: &str) -> bool {
    PANEL_IDS.contains(&panel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_ids_are_the_ones_build_panels_makes() {
        let r = crate::ncu::import_str(include_str!(
            "../../tests/data/ncu/details_legacy_human.csv"
        ))
        .unwrap();
        let ids: Vec<String> = crate::ncu::build_panels(&r.kernels[0])
            .into_iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, PANEL_IDS);
        assert!(is_panel_id("occupancy"));
        assert!(!is_panel_id("Occupancy"));
    }

    #[test]
    fn a_screenshot_without_kernel_shows_on_every_kernel() {
        let s = Screenshot {
            id: "0123456789abcdef".into(),
            kernel: None,
            panel: "occupancy".into(),
            original_name: "a.png".into(),
            stored_name: "0123456789abcdef.png".into(),
            format: ImageFormat::Png,
            width: 1,
            height: 1,
            bytes: 70,
            caption: None,
            added_at: 0,
        };
        assert!(s.shows_on(7, "occupancy"));
        assert!(!s.shows_on(7, "launch"));
        let s = Screenshot {
            kernel: Some(3),
            ..s
        };
        assert!(s.shows_on(3, "occupancy"));
        assert!(!s.shows_on(4, "occupancy"));
    }
}
