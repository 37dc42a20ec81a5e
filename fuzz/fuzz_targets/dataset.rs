//! Fuzzes `compute::data::dataset_from_bytes` (four IDX files, raw or gzip).
//!
//! The input is split into four files by a 6-byte prefix: three little-endian `u16` lengths
//! of the first three files; the fourth is the rest. Invariants: never panics; an `Ok` data
//! set is 28×28 with `n × 784` image bytes and labels in 0..=9 for each split.
#![no_main]

use compute::data::dataset_from_bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let (head, mut rest) = data.split_at(6);
    let mut parts: [&[u8]; 4] = [&[]; 4];
    for (i, part) in parts.iter_mut().take(3).enumerate() {
        let n = u16::from_le_bytes([head[2 * i], head[2 * i + 1]]) as usize;
        let (a, b) = rest.split_at(n.min(rest.len()));
        *part = a;
        rest = b;
    }
    parts[3] = rest;
    let files = [
        ("train-images", parts[0]),
        ("train-labels", parts[1]),
        ("t10k-images", parts[2]),
        ("t10k-labels", parts[3]),
    ];
    if let Ok(d) = dataset_from_bytes("fuzz", files) {
        assert_eq!((d.rows, d.cols), (28, 28));
        for s in [&d.train, &d.test] {
            assert_eq!(s.images.len(), s.labels.len() * 784);
            assert!(s.labels.iter().all(|&l| l <= 9));
        }
    }
});
