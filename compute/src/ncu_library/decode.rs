//! The memory that screenshot decodes may take, shared by every decode of the process.
//!
//! A PNG of a megabyte can declare 16384×16384 RGBA pixels: a gibibyte once decoded. Each
//! image is therefore checked against [`MAX_DECODE_BYTES`] from its header alone, before any
//! pixel is decoded, and then takes its share of the process's [`DECODE_BUDGET`] for as long
//! as it decodes. A decode that does not fit waits a little ([`DECODE_WAIT`]) for others to
//! finish, then is refused as busy: ten requests at once can never hold more than the budget.
//!
//! The size a header declares must also be the size of the data: a JPEG decoder pads an image
//! whose data ends early (a 16×16 image under a header saying 9000×9000 would be stored as a
//! 9000×9000 screenshot of grey). A JPEG is therefore checked to hold at least one bit of
//! entropy-coded data per MCU of its declared size ([`check_jpeg_data`], before any decode),
//! and then decoded in full in strict mode ([`decode_jpeg`]), where data that ends before the
//! last row is an error, and the pixels it gives must be the declared size.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The most bytes one screenshot may take decoded (64 Mpx of RGBA, e.g. 8192×8192).
pub const MAX_DECODE_BYTES: u64 = 256 << 20;

/// The most bytes all the screenshot decodes of the process may take at once.
pub const DECODE_BUDGET_BYTES: u64 = 512 << 20;

/// How long a decode waits for others to free budget before it is refused.
pub const DECODE_WAIT: Duration = Duration::from_secs(5);

/// A byte budget shared by concurrent decodes.
#[derive(Debug)]
pub struct DecodeBudget {
    total: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// The process's budget: memory is the process's, so every store and service shares it.
pub static DECODE_BUDGET: DecodeBudget = DecodeBudget::new(DECODE_BUDGET_BYTES);

/// A share of a [`DecodeBudget`], given back when dropped.
#[derive(Debug)]
pub struct DecodeLease<'a> {
    budget: &'a DecodeBudget,
    bytes: u64,
}

impl DecodeBudget {
    /// A budget of `total` bytes.
    pub const fn new(total: u64) -> Self {
        DecodeBudget {
            total,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The budget's size in bytes.
    pub fn total(&self) -> u64 {
        self.total
    }

    fn used(&self) -> MutexGuard<'_, u64> {
        // A decode that panicked while holding the lock left a consistent number behind.
        crate::sync::lock(&self.used)
    }

    /// Bytes taken now.
    pub fn in_use(&self) -> u64 {
        *self.used()
    }

    /// Takes `bytes` of the budget, waiting up to `wait` for other decodes to give theirs
    /// back; `Err(bytes in use)` when they do not fit in time (or never could).
    pub fn take(&self, bytes: u64, wait: Duration) -> Result<DecodeLease<'_>, u64> {
        let deadline = Instant::now() + wait;
        let mut used = self.used();
        loop {
            if bytes <= self.total.saturating_sub(*used) {
                *used += bytes;
                return Ok(DecodeLease {
                    budget: self,
                    bytes,
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if bytes > self.total || left.is_zero() {
                return Err(*used);
            }
            used = self
                .freed
                .wait_timeout(used, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for DecodeLease<'_> {
    fn drop(&mut self) {
        let mut used = self.budget.used();
        *used = used.saturating_sub(self.bytes);
        drop(used);
        self.budget.freed.notify_all();
    }
}

/// What a JPEG's markers say of its data: the largest sampling factors of its frame and the
/// bytes of entropy-coded data in its scans (stuffing and restart markers not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JpegLayout {
    h_max: u32,
    v_max: u32,
    scan_bytes: u64,
}

/// Walks the markers of JPEG `bytes`; `None` when they cannot be walked to a frame and a scan
/// (the decoder then says what is wrong).
fn jpeg_layout(bytes: &[u8]) -> Option<JpegLayout> {
    if bytes.get(..2) != Some(&[0xFF, 0xD8]) {
        return None;
    }
    let mut layout = JpegLayout {
        h_max: 0,
        v_max: 0,
        scan_bytes: 0,
    };
    let mut at = 2;
    loop {
        // A marker: 0xFF (any fill bytes), then its code.
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        while *bytes.get(at)? == 0xFF {
            at += 1;
        }
        let code = *bytes.get(at)?;
        at += 1;
        match code {
            0xD9 => break,                         // EOI
            0xD0..=0xD7 | 0x01 | 0xD8 => continue, // RSTn, TEM, SOI: no length
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]));
        let segment = bytes.get(at + 2..at.checked_add(len)?)?;
        at += len;
        match code {
            // SOFn (not DHT, JPG, DAC): precision, height, width, components, then per
            // component an id, its sampling factors (H << 4 | V) and a table.
            0xC0..=0xCF if !matches!(code, 0xC4 | 0xC8 | 0xCC) => {
                let n = usize::from(*segment.get(5)?);
                for c in 0..n {
                    let hv = *segment.get(6 + 3 * c + 1)?;
                    layout.h_max = layout.h_max.max(u32::from(hv >> 4));
                    layout.v_max = layout.v_max.max(u32::from(hv & 0x0F));
                }
            }
            // SOS: the entropy-coded data follows, up to the next marker that is not a
            // restart (0xFF 0x00 is a stuffed 0xFF byte of data).
            0xDA => {
                while at < bytes.len() {
                    if bytes[at] != 0xFF {
                        layout.scan_bytes += 1;
                        at += 1;
                        continue;
                    }
                    match bytes.get(at + 1) {
                        Some(0x00) => {
                            layout.scan_bytes += 1;
                            at += 2;
                        }
                        Some(0xD0..=0xD7) => at += 2,
                        Some(0xFF) => at += 1,
                        _ => break,
                    }
                }
                if at >= bytes.len() {
                    break;
                }
            }
            _ => {}
        }
    }
    (layout.h_max > 0 && layout.v_max > 0).then_some(layout)
}

/// Checks, from its markers alone, that JPEG `bytes` can hold the `width`×`height` pixels its
/// header declares: every MCU (8×8 pixels times the sampling factors) takes at least one bit
/// of entropy-coded data in a baseline or a progressive JPEG, so data shorter than that is a
/// truncated or doctored file. A file whose markers cannot be walked is left to the decoder.
pub fn check_jpeg_data(bytes: &[u8], width: u32, height: u32) -> Result<(), String> {
    let Some(layout) = jpeg_layout(bytes) else {
        return Ok(());
    };
    let mcus =
        u64::from(width.div_ceil(8 * layout.h_max)) * u64::from(height.div_ceil(8 * layout.v_max));
    if layout.scan_bytes.saturating_mul(8) >= mcus {
        return Ok(());
    }
    Err(format!(
        "its header declares {width}×{height} pixels, but it holds {} bytes of image data, \
         too few for that size (at least {} bytes): the file is truncated or its header was \
         altered",
        layout.scan_bytes,
        mcus.div_ceil(8)
    ))
}

/// Decodes JPEG `bytes` in full in strict mode (data that ends before the last row, or a
/// marker where none may be, is an error) and checks that the pixels are the
/// `width`×`height` its header declared. The caller holds the decode's share of the budget.
pub fn decode_jpeg(bytes: &[u8], width: u32, height: u32) -> Result<(), String> {
    use zune_jpeg::zune_core::bytestream::ZCursor;
    use zune_jpeg::zune_core::colorspace::ColorSpace;
    use zune_jpeg::zune_core::options::DecoderOptions;
    let said = |e: zune_jpeg::errors::DecodeErrors| e.to_string().trim_matches('"').to_string();
    let options = DecoderOptions::default()
        .set_strict_mode(true)
        .set_max_width(width as usize)
        .set_max_height(height as usize);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    decoder
        .decode_headers()
        .map_err(|e| format!("not a valid JPEG: {}", said(e)))?;
    // The colours as the image crate reads them (grey stays grey: one byte a pixel).
    let out = match decoder.input_colorspace() {
        Some(c @ (ColorSpace::RGB | ColorSpace::RGBA | ColorSpace::Luma | ColorSpace::LumaA)) => c,
        _ => ColorSpace::RGB,
    };
    decoder.set_options(decoder.options().jpeg_set_out_colorspace(out));
    let pixels = decoder.decode().map_err(|e| {
        format!(
            "its header declares {width}×{height} pixels, but its data does not decode to them \
             ({})",
            said(e)
        )
    })?;
    let (w, h) = decoder.dimensions().unwrap_or((0, 0));
    let want = (width as usize) * (height as usize) * out.num_components();
    if (w, h) != (width as usize, height as usize) || pixels.len() != want {
        return Err(format!(
            "its header declares {width}×{height} pixels, but it decodes to {w}×{h} ({} of the \
             {want} bytes)",
            pixels.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_budget_and_give_it_back() {
        let b = DecodeBudget::new(100);
        let a = b.take(60, Duration::ZERO).unwrap();
        assert_eq!(b.take(50, Duration::ZERO).unwrap_err(), 60);
        let c = b.take(40, Duration::ZERO).unwrap();
        assert_eq!(b.in_use(), 100);
        drop(a);
        assert_eq!(b.in_use(), 40);
        assert!(b.take(60, Duration::ZERO).is_ok());
        drop(c);
        assert_eq!(b.in_use(), 0);
        assert!(b.take(101, Duration::from_secs(5)).is_err(), "never fits");
    }

    #[test]
    fn a_decode_waits_for_one_that_ends() {
        let b = std::sync::Arc::new(DecodeBudget::new(100));
        let held = b.take(80, Duration::ZERO).unwrap();
        let waiter = {
            let b = std::sync::Arc::clone(&b);
            std::thread::spawn(move || b.take(50, Duration::from_secs(20)).map(|l| l.bytes))
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert_eq!(waiter.join().unwrap(), Ok(50));
        assert_eq!(b.in_use(), 0);
    }
}
