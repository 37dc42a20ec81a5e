//! Fuzzes the IDX reader (`compute::data::idx::parse_idx`), raw and gzip.
//!
//! Invariants: never panics; an `Ok` array has 1 to 4 non-zero dimensions whose product is
//! the data length, and re-encoding it gives back the same array, raw and gzip-compressed.
//! For small non-gzip input, the gzip-compressed input parses to the same result (Ok or Err).
#![no_main]

use compute::data::idx::{encode_idx, gzip, parse_idx};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let result = parse_idx("fuzz", data);
    if let Ok(a) = &result {
        assert!((1..=4).contains(&a.dims.len()), "dims {:?}", a.dims);
        assert!(a.dims.iter().all(|&d| d > 0), "zero dim in {:?}", a.dims);
        let product = a
            .dims
            .iter()
            .try_fold(1usize, |p, &d| p.checked_mul(d))
            .expect("dims product overflows usize");
        assert_eq!(a.data.len(), product, "dims {:?}", a.dims);
        let dims: Vec<u32> = a
            .dims
            .iter()
            .map(|&d| u32::try_from(d).expect("dim over u32"))
            .collect();
        let raw = encode_idx(&dims, &a.data);
        assert_eq!(parse_idx("re", &raw).as_ref().ok(), Some(a));
        assert_eq!(parse_idx("re.gz", &gzip(&raw)).as_ref().ok(), Some(a));
    }
    // Differential: the same bytes gzip-compressed must give the same verdict.
    let is_gz = data.len() >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if !is_gz && data.len() <= 4096 {
        let gz = parse_idx("fuzz", &gzip(data));
        assert_eq!(
            result.is_ok(),
            gz.is_ok(),
            "raw {:?} vs gzip {:?}",
            result.as_ref().map(|a| &a.dims),
            gz.as_ref().map(|a| &a.dims)
        );
        if let (Ok(a), Ok(b)) = (&result, &gz) {
            assert_eq!(a, b);
        }
    }
});
