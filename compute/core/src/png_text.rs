//! A text chunk added to a PNG: the caption an exported chart carries in its file (beside the
//! line drawn under the chart), readable by any PNG tool as `iTXt` `Description`.

/// The keyword the caption is stored under (a PNG registered keyword).
pub const CAPTION_KEY: &str = "Description";

/// `png` with an `iTXt` chunk `key` = `text` (UTF-8, uncompressed) right after its `IHDR`;
/// `None` when `png` is not a PNG that starts with its `IHDR` chunk.
pub fn with_text(png: &[u8], key: &str, text: &str) -> Option<Vec<u8>> {
    const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    if png.len() < 8 + 25 || png[..8] != SIGNATURE || &png[12..16] != b"IHDR" {
        return None;
    }
    let ihdr_len = u32::from_be_bytes([png[8], png[9], png[10], png[11]]) as usize;
    let after_ihdr = 8 + 12 + ihdr_len;
    if png.len() < after_ihdr {
        return None;
    }
    // keyword, NUL, compression flag 0, method 0, language "", NUL, translated "", NUL, text.
    let mut data = Vec::with_capacity(key.len() + text.len() + 5);
    data.extend_from_slice(key.as_bytes());
    data.extend_from_slice(&[0, 0, 0, 0, 0]);
    data.extend_from_slice(text.as_bytes());
    let mut chunk = Vec::with_capacity(data.len() + 12);
    chunk.extend_from_slice(&(data.len() as u32).to_be_bytes());
    chunk.extend_from_slice(b"iTXt");
    chunk.extend_from_slice(&data);
    chunk.extend_from_slice(&crc32(&chunk[4..]).to_be_bytes());
    let mut out = Vec::with_capacity(png.len() + chunk.len());
    out.extend_from_slice(&png[..after_ihdr]);
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&png[after_ihdr..]);
    Some(out)
}

/// The text of the first `iTXt` chunk `key` of `png`, if any.
pub fn text_of(png: &[u8], key: &str) -> Option<String> {
    let mut at = 8;
    while at + 12 <= png.len() {
        let len = u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]) as usize;
        let kind = &png[at + 4..at + 8];
        let data = png.get(at + 8..at + 8 + len)?;
        if kind == b"iTXt" && data.starts_with(key.as_bytes()) && data.get(key.len()) == Some(&0) {
            // Skip the keyword's NUL, the two flags, then the language and translated keyword.
            let rest = data.get(key.len() + 3..)?;
            let mut parts = rest.splitn(3, |b| *b == 0);
            let (_, _, text) = (parts.next()?, parts.next()?, parts.next()?);
            return String::from_utf8(text.to_vec()).ok();
        }
        at += 12 + len;
    }
    None
}

/// The PNG chunk CRC (CRC-32, ISO 3309) of `bytes`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest PNG: one transparent pixel.
    const PIXEL: [u8; 67] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f,
        0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn the_crc_is_pngs() {
        // IHDR's CRC in the pixel above.
        assert_eq!(crc32(&PIXEL[12..29]), 0x1f15_c489);
    }

    /// Issue 37: the exported loss PNG named no run, device, data set, batch or date.
    #[test]
    fn a_caption_goes_in_after_ihdr_and_reads_back() {
        let caption = "Run 20261128-130411-950-05ht · NVIDIA H200 (sm_90) · batch 128";
        let png = with_text(&PIXEL, CAPTION_KEY, caption).unwrap_or_default();
        assert_eq!(
            png.len(),
            PIXEL.len() + 12 + CAPTION_KEY.len() + 5 + caption.len()
        );
        assert_eq!(&png[37..41], b"iTXt");
        assert_eq!(text_of(&png, CAPTION_KEY).as_deref(), Some(caption));
        assert_eq!(text_of(&PIXEL, CAPTION_KEY), None);
        assert_eq!(with_text(b"not a png", CAPTION_KEY, "x"), None);
    }
}
