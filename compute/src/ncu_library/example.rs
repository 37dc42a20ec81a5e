//! The lab's example report: a real Nsight Compute export of our activation kernels (ReLU and
//! GELU from `kernels/cuda/activations.cu`, FP32 and FP16 at 8192×4096, beside CuPy's and
//! cuBLAS's own kernels) on an H100, `ncu --set full`, 2026-11-22 — the file
//! `compute/core/tests/data/ncu/ours_details.csv`, made by `make_exports.sh` beside it. Act IV
//! adds it to a new user's library so its panels are there before anything was profiled; it
//! is removed like any other import.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::{hex, ImportStore, Result, StoreError};
use crate::ncu::ImportSummary;

/// The example export's text.
pub const EXAMPLE_CSV: &str = include_str!("../../core/tests/data/ncu/ours_details.csv");

/// The name the example is listed under.
pub const EXAMPLE_NAME: &str = "example-our-activation-kernels-h100.csv";

/// The example's import ID (an import's ID is the start of its file's SHA-256).
pub fn example_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| hex(&Sha256::digest(EXAMPLE_CSV.as_bytes()))[..16].to_string())
}

impl ImportStore {
    /// Adds the example report to the library (again, if it was removed); its summary.
    pub fn add_example(&self) -> Result<ImportSummary> {
        let report = crate::ncu::import_str(EXAMPLE_CSV).map_err(|source| StoreError::Import {
            path: EXAMPLE_NAME.into(),
            source,
        })?;
        let mut summary = self.save_bytes(EXAMPLE_NAME, EXAMPLE_CSV.as_bytes(), &report)?;
        summary.example = true;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_is_a_real_export_of_our_kernels_listed_as_an_example_and_removable() {
        let t = tempfile::tempdir().unwrap();
        let store = ImportStore::open(t.path()).unwrap();
        let added = store.add_example().unwrap();
        assert_eq!(added.id, example_id());
        assert!(added.example);
        assert_eq!(added.source_name, EXAMPLE_NAME);
        let (summary, report) = store.load(&added.id).unwrap();
        assert!(summary.example, "listed as the example");
        let names: Vec<&str> = report.kernels.iter().map(|k| k.name.as_str()).collect();
        assert!(
            names.contains(&"relu_f32") && names.contains(&"gelu_erf_f32"),
            "{names:?}"
        );
        let list = store.list_checked().unwrap();
        assert_eq!(list.imports.len(), 1);
        assert!(list.imports[0].example);
        store.remove(&added.id).unwrap();
        assert!(store.list_checked().unwrap().imports.is_empty());
        // A user's own import is never taken for the example.
        let own = "x".repeat(10);
        assert_ne!(hex(&Sha256::digest(own.as_bytes()))[..16], *example_id());
    }
}
