//! The IDX file format (MNIST's): a big-endian magic `0x0000_08DD` (type `08` = unsigned
//! byte, `DD` = number of dimensions), one big-endian `u32` per dimension, then the data.
//!
//! The reader accepts raw or gzip files, checks the magic and every dimension, and never
//! allocates or reads from the header's claims before checking them: [`IdxFile::open`] reads
//! the header alone and compares what it promises with [`MAX_PAYLOAD`] and with the file's
//! size (raw: exactly; gzip: what that much data can take compressed), so a 2 GB file
//! claiming MNIST's 47 MB is refused at once, without reading it. The caller then checks the
//! dimensions against what it expects ([`IdxFile::dims`]) before [`IdxFile::read`] reads the
//! data; a gzip stream is inflated only up to the claimed size (plus one byte, to detect
//! trailing data), its buffer growing as decompressed bytes arrive.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

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

/// An IDX file whose header was read and checked; its data not yet.
pub struct IdxFile<'a> {
    name: String,
    dims: Vec<usize>,
    payload: u64,
    /// The data, after the header (inflated when the file is gzip).
    data: Box<dyn Read + 'a>,
    /// Whether the data's size was checked against the file's (raw files): then the buffer
    /// is allocated whole.
    sized: bool,
}

impl std::fmt::Debug for IdxFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdxFile")
            .field("name", &self.name)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

fn is_gzip(head: &[u8]) -> bool {
    head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b
}

/// The most bytes a gzip file holding `raw` bytes can take: deflate's stored blocks add 5
/// bytes per 64 KiB, gzip its header (a file name, perhaps) and trailer.
fn max_gzip_size(raw: u64) -> u64 {
    raw.saturating_add(raw / 1000).saturating_add(64 << 10)
}

impl<'a> IdxFile<'a> {
    /// Reads and checks the header of the IDX file (raw or gzip) at `path`; the data is read
    /// by [`IdxFile::read`]. The file must be a regular file whose size fits the header.
    pub fn open(path: &Path) -> Result<IdxFile<'static>> {
        let name = path.display().to_string();
        let io_err = |source| ComputeError::Io {
            path: name.clone(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        if !meta.is_file() {
            return Err(ComputeError::bad_file(&name, "not a regular file"));
        }
        let size = meta.len();
        let mut input = BufReader::with_capacity(1 << 16, file);
        let head = input.fill_buf().map_err(io_err)?;
        if is_gzip(head) {
            let mut dec = flate2::bufread::GzDecoder::new(input);
            let (dims, payload, header) = read_header(&name, &mut dec)?;
            let most = max_gzip_size(header + payload);
            if size > most {
                return Err(ComputeError::bad_file(
                    &name,
                    format!(
                        "header claims dimensions {dims:?} ({payload} data bytes) but the gzip file is {size} bytes, more than that much data can take compressed ({most})"
                    ),
                ));
            }
            Ok(IdxFile {
                name,
                dims,
                payload,
                data: Box::new(dec),
                sized: false,
            })
        } else {
            let (dims, payload, header) = read_header(&name, &mut input)?;
            check_raw_size(&name, &dims, payload, header, size)?;
            Ok(IdxFile {
                name,
                dims,
                payload,
                data: Box::new(input),
                sized: true,
            })
        }
    }

    /// Reads and checks the header of the IDX file (raw or gzip) held in `bytes`.
    pub fn from_bytes(name: &str, bytes: &'a [u8]) -> Result<IdxFile<'a>> {
        if is_gzip(bytes) {
            let mut dec = flate2::read::GzDecoder::new(bytes);
            let (dims, payload, _) = read_header(name, &mut dec)?;
            Ok(IdxFile {
                name: name.into(),
                dims,
                payload,
                data: Box::new(dec),
                sized: false,
            })
        } else {
            let mut rest = bytes;
            let (dims, payload, header) = read_header(name, &mut rest)?;
            check_raw_size(name, &dims, payload, header, bytes.len() as u64)?;
            Ok(IdxFile {
                name: name.into(),
                dims,
                payload,
                data: Box::new(rest),
                sized: true,
            })
        }
    }

    /// The file's name, as errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dimensions the header claims, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Reads the data.
    pub fn read(self) -> Result<IdxArray> {
        let IdxFile {
            name,
            dims,
            payload,
            data: input,
            sized,
        } = self;
        // The size of a raw file was checked against the claim: the buffer can be allocated
        // whole. A gzip stream's grows only as bytes arrive.
        let mut data = if sized {
            Vec::with_capacity(usize::try_from(payload).unwrap_or(0))
        } else {
            Vec::new()
        };
        // One byte more than claimed, to detect trailing data.
        input
            .take(payload + 1)
            .read_to_end(&mut data)
            .map_err(|e| {
                ComputeError::bad_file(&name, format!("cannot read the data: {e} (corrupt gzip?)"))
            })?;
        if (data.len() as u64) < payload {
            return Err(ComputeError::bad_file(
                &name,
                format!(
                    "truncated: header claims {payload} data bytes, file holds {}",
                    data.len()
                ),
            ));
        }
        if data.len() as u64 > payload {
            return Err(ComputeError::bad_file(
                &name,
                format!("trailing data after the {payload} bytes the header claims"),
            ));
        }
        Ok(IdxArray { dims, data })
    }
}

/// Reads an IDX file (raw or gzip) from bytes. `name` names the source in errors.
pub fn parse_idx(name: &str, bytes: &[u8]) -> Result<IdxArray> {
    IdxFile::from_bytes(name, bytes)?.read()
}

/// Reads an IDX file (raw or gzip) from disk, its header checked before its data is read.
pub fn read_idx_file(path: &Path) -> Result<IdxArray> {
    IdxFile::open(path)?.read()
}

fn read_exact_or(name: &str, r: &mut dyn Read, buf: &mut [u8], what: &str) -> Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            ComputeError::bad_file(name, format!("truncated: file ends inside the {what}"))
        }
        _ => ComputeError::bad_file(name, format!("cannot read the {what}: {e} (corrupt gzip?)")),
    })
}

/// A raw file must hold exactly the header and the data it claims.
fn check_raw_size(name: &str, dims: &[usize], payload: u64, header: u64, total: u64) -> Result<()> {
    if total != header + payload {
        return Err(ComputeError::bad_file(
            name,
            format!(
                "header claims dimensions {dims:?} ({payload} data bytes) but the file holds {}",
                total.saturating_sub(header)
            ),
        ));
    }
    Ok(())
}

/// Reads and checks the header: the dimensions, the data's size and the header's.
fn read_header(name: &str, r: &mut dyn Read) -> Result<(Vec<usize>, u64, u64)> {
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
    Ok((dims, payload, 4 + 4 * ndims as u64))
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
    fn a_2gb_sparse_idx_file_is_refused_in_under_a_second() {
        // Issue 19: the reader read all 2 GB (9.5–12.8 s, 2.16 GB of memory) before it
        // compared the file with its header.
        let t = tempfile::tempdir().unwrap();
        for (file, head) in [
            ("claims-mnist", encode_idx(&[60_000, 28, 28], &[])),
            ("zeros", Vec::new()),
        ] {
            let path = t.path().join(file);
            std::fs::write(&path, &head).unwrap();
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(2 << 30).unwrap();
            let start = std::time::Instant::now();
            let e = IdxFile::open(&path).unwrap_err();
            let took = start.elapsed();
            assert_eq!(e.kind(), crate::ErrorKind::BadInput, "{e}");
            assert!(took < std::time::Duration::from_secs(1), "{file}: {took:?}");
            let e = e.to_string();
            if file == "zeros" {
                assert!(e.contains("not unsigned byte"), "{e}");
            } else {
                assert!(
                    e.contains("47040000 data bytes") && e.contains("file holds 2147483632"),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn a_gzip_file_too_big_for_its_header_is_refused_before_inflating() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("x.gz");
        let mut gz = gzip(&encode_idx(&[4], &[1, 2, 3, 4]));
        gz.resize(1 << 20, 0);
        std::fs::write(&path, &gz).unwrap();
        let e = IdxFile::open(&path).unwrap_err().to_string();
        assert!(
            e.contains("more than that much data can take compressed"),
            "{e}"
        );
        // A gzip file of the right size reads.
        std::fs::write(&path, gzip(&encode_idx(&[4], &[1, 2, 3, 4]))).unwrap();
        let f = IdxFile::open(&path).unwrap();
        assert_eq!(f.dims(), [4]);
        assert_eq!(f.read().unwrap().data, [1, 2, 3, 4]);
    }

    #[test]
    fn the_header_is_checked_before_the_data_is_read() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("raw");
        std::fs::write(&path, encode_idx(&[2, 3], &[1, 2, 3, 4, 5, 6])).unwrap();
        let f = IdxFile::open(&path).unwrap();
        assert_eq!(
            (f.dims(), f.name()),
            (&[2, 3][..], path.display().to_string().as_str())
        );
        assert_eq!(read_idx_file(&path).unwrap().data, [1, 2, 3, 4, 5, 6]);
        let e = IdxFile::open(t.path()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::BadInput, "{e}");
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
