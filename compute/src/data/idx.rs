//! The IDX file format (MNIST's): a big-endian magic `0x0000_08DD` (type `08` = unsigned
//! byte, `DD` = number of dimensions), one big-endian `u32` per dimension, then the data.
//!
//! The reader accepts raw or gzip files, checks the magic and every dimension, and never
//! allocates from the header's claims: for raw files it compares the claimed size with the file
//! size first, for gzip files the buffer grows only as decompressed bytes arrive, bounded by the
//! claimed size (and [`MAX_PAYLOAD`]).

use std::io::Read;

use crate::error::{ComputeError, Result};

/// Largest payload the reader accepts (1 GiB): far above the 47 MB of MNIST's training images.
pub const MAX_PAYLOAD: u64 = 1 << 30;

/// An IDX array of unsigned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// Dimensions, outermost first.
    pub dims: Vec<usize>,
    /// Row-major data.
    pub data: Vec<u8>,
}

/// Reads an IDX file (raw or gzip) from bytes. `name` names the source in errors.
pub fn parse_idx(name: &str, bytes: &[u8]) -> Result<IdxArray> {
    if bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b {
        let mut dec = flate2::read::GzDecoder::new(bytes);
        read_idx_stream(name, &mut dec, None)
    } else {
        read_idx_stream(name, &mut &bytes[..], Some(bytes.len() as u64))
    }
}

/// Reads an IDX file (raw or gzip) from disk.
pub fn read_idx_file(path: &std::path::Path) -> Result<IdxArray> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ComputeError::Io {
        path: name.clone(),
        source,
    })?;
    parse_idx(&name, &bytes)
}

fn read_exact_or(name: &str, r: &mut dyn Read, buf: &mut [u8], what: &str) -> Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            ComputeError::bad_file(name, format!("truncated: file ends inside the {what}"))
        }
        _ => ComputeError::bad_file(name, format!("cannot read the {what}: {e} (corrupt gzip?)")),
    })
}

fn read_idx_stream(name: &str, r: &mut dyn Read, total_len: Option<u64>) -> Result<IdxArray> {
    let mut magic = [0u8; 4];
    read_exact_or(name, r, &mut magic, "header")?;
    if magic[0] != 0 || magic[1] != 0 {
        return Err(ComputeError::bad_file(
            name,
            format!(
                "not an IDX file (magic {:02x}{:02x}{:02x}{:02x}, expected 0000 08 0N)",
                magic[0], magic[1], magic[2], magic[3]
            ),
        ));
    }
    if magic[2] != 0x08 {
        return Err(ComputeError::bad_file(
            name,
            format!(
                "IDX element type 0x{:02x} is not unsigned byte (0x08)",
                magic[2]
            ),
        ));
    }
    let ndims = magic[3] as usize;
    if ndims == 0 || ndims > 4 {
        return Err(ComputeError::bad_file(
            name,
            format!("IDX with {ndims} dimensions (expected 1 to 4)"),
        ));
    }
    let mut dims = Vec::with_capacity(ndims);
    let mut payload: u64 = 1;
    for i in 0..ndims {
        let mut d = [0u8; 4];
        read_exact_or(name, r, &mut d, "header")?;
        let d = u32::from_be_bytes(d) as u64;
        payload = payload.saturating_mul(d);
        dims.push(d as usize);
        if d == 0 {
            return Err(ComputeError::bad_file(name, format!("dimension {i} is 0")));
        }
    }
    if payload > MAX_PAYLOAD {
        return Err(ComputeError::bad_file(
            name,
            format!("header claims dimensions {dims:?} ({payload} bytes), more than the {MAX_PAYLOAD}-byte limit"),
        ));
    }
    let header = 4 + 4 * ndims as u64;
    if let Some(total) = total_len {
        if total != header + payload {
            return Err(ComputeError::bad_file(
                name,
                format!("header claims dimensions {dims:?} ({payload} data bytes) but the file holds {}", total.saturating_sub(header)),
            ));
        }
    }
    // Grow only as bytes arrive; read one byte more than claimed to detect trailing data.
    let mut data = Vec::new();
    r.take(payload + 1).read_to_end(&mut data).map_err(|e| {
        ComputeError::bad_file(name, format!("cannot read the data: {e} (corrupt gzip?)"))
    })?;
    if (data.len() as u64) < payload {
        return Err(ComputeError::bad_file(
            name,
            format!(
                "truncated: header claims {payload} data bytes, file holds {}",
                data.len()
            ),
        ));
    }
    if data.len() as u64 > payload {
        return Err(ComputeError::bad_file(
            name,
            format!("trailing data after the {payload} bytes the header claims"),
        ));
    }
    Ok(IdxArray { dims, data })
}

/// Encodes an IDX array (raw, uncompressed). Used by tests and tools.
pub fn encode_idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

/// Gzip-compresses bytes. Used by tests and tools.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = e.write_all(bytes);
    e.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(r: Result<IdxArray>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn reads_raw_and_gzip_alike() {
        let raw = encode_idx(&[2, 2, 3], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let a = parse_idx("raw", &raw).unwrap();
        let b = parse_idx("gz", &gzip(&raw)).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.dims, vec![2, 2, 3]);
        assert_eq!(a.data[11], 12);
    }

    #[test]
    fn rejects_bad_magic_type_and_dims() {
        assert!(msg(parse_idx("f", b"PK\x03\x04hello")).contains("not an IDX file"));
        assert!(
            msg(parse_idx("f", &[0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0]))
                .contains("not unsigned byte")
        );
        assert!(msg(parse_idx("f", &[0, 0, 8, 0])).contains("0 dimensions"));
        assert!(msg(parse_idx("f", &encode_idx(&[0], &[]))).contains("dimension 0 is 0"));
    }

    #[test]
    fn truncated_files_are_named_as_truncated() {
        let raw = encode_idx(&[10], &[7; 10]);
        assert!(msg(parse_idx("t.idx", &raw[..9])).contains("t.idx"));
        assert!(msg(parse_idx("t.idx", &raw[..2])).contains("truncated"));
        let mut gz = gzip(&raw[..12]);
        assert!(msg(parse_idx("t.gz", &gz)).contains("truncated"));
        // A gzip stream cut in the middle.
        gz.truncate(gz.len() / 2);
        let e = msg(parse_idx("t.gz", &gz));
        assert!(e.contains("t.gz"), "{e}");
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut raw = encode_idx(&[3], &[1, 2, 3]);
        raw.push(9);
        assert!(msg(parse_idx("x", &raw)).contains("file holds 4"));
        assert!(msg(parse_idx("x", &gzip(&raw))).contains("trailing"));
    }

    #[test]
    fn a_header_claiming_2_pow_31_images_allocates_nothing() {
        // 2^31 images of 28x28: refused from the header alone, raw or gzip.
        let raw = encode_idx(&[1 << 31, 28, 28], &[0; 100]);
        assert!(msg(parse_idx("huge", &raw)).contains("limit"));
        assert!(msg(parse_idx("huge.gz", &gzip(&raw))).contains("limit"));
        // Under the limit but larger than the file: raw is checked against the file size.
        let raw = encode_idx(&[1 << 20, 28], &[0; 100]);
        assert!(msg(parse_idx("big", &raw)).contains("file holds 100"));
        assert!(msg(parse_idx("big.gz", &gzip(&raw))).contains("truncated"));
    }

    #[test]
    fn garbage_gzip_is_an_error_not_a_panic() {
        let mut g = gzip(&encode_idx(&[4], &[1, 2, 3, 4]));
        for b in g.iter_mut().skip(12) {
            *b ^= 0x5a;
        }
        assert!(parse_idx("bad.gz", &g).is_err());
    }
}
