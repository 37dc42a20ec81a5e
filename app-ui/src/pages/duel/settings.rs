//! The duel form's settings kept across visits and reloads: the contestants, data set, epochs,
//! batch, train limit, backend, activation, FP8 recipe and "with PyTorch", saved to the page's
//! `localStorage` whenever one changes and restored when the app starts.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use showdown_core::fp8::Fp8Scaling;
use showdown_core::model::Activation;
use showdown_core::types::Precision;

use super::Duel;

/// Where the settings are kept in `localStorage`.
const KEY: &str = "precision-showdown.duel-form";

/// What the form holds, as the user left it (the text fields as typed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DuelSettings {
    precisions: Vec<Precision>,
    dataset: String,
    epochs: String,
    batch: String,
    train_limit: String,
    backend: String,
    activation: Activation,
    fp8_scaling: Fp8Scaling,
    with_pytorch: bool,
}

impl DuelSettings {
    fn of(d: Duel) -> Self {
        DuelSettings {
            precisions: d.precisions.get(),
            dataset: d.dataset.get(),
            epochs: d.epochs.get(),
            batch: d.batch.get(),
            train_limit: d.train_limit.get(),
            backend: d.backend.get(),
            activation: d.activation.get(),
            fp8_scaling: d.fp8_scaling.get(),
            with_pytorch: d.with_pytorch.get(),
        }
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Puts the saved settings into the form; settings that cannot be read (another version's,
/// edited by hand) leave the defaults.
pub(super) fn restore(d: Duel) {
    let Some(text) = storage().and_then(|s| s.get_item(KEY).ok().flatten()) else {
        return;
    };
    let Ok(s) = serde_json::from_str::<DuelSettings>(&text) else {
        return;
    };
    if !s.precisions.is_empty() {
        d.precisions.set(s.precisions);
    }
    d.dataset.set(s.dataset);
    d.epochs.set(s.epochs);
    d.batch.set(s.batch);
    d.train_limit.set(s.train_limit);
    d.backend.set(s.backend);
    d.activation.set(s.activation);
    d.fp8_scaling.set(s.fp8_scaling);
    d.with_pytorch.set(s.with_pytorch);
}

/// Saves the settings whenever one of them changes.
pub(super) fn keep(d: Duel) {
    Effect::new(move |_| {
        let settings = DuelSettings::of(d);
        if let (Some(store), Ok(text)) = (storage(), serde_json::to_string(&settings)) {
            // A full or refused storage loses only the convenience, never the duel.
            let _ = store.set_item(KEY, &text);
        }
    });
}
