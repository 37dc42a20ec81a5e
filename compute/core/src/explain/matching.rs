//! Which trained model Act I runs an image through, and what its classes are called.
//!
//! A model only knows the images it was trained on: a CNN trained on MNIST's digits answers
//! "9" for a Fashion-MNIST ankle boot, and that answer means nothing. So the explainer takes
//! the newest saved duel whose model was trained on the image's own data set (or, failing
//! that, on the same kind of images: the embedded MNIST sample and full MNIST hold the same
//! handwritten digits); where no saved duel did, it says so and offers a short duel on that
//! data set ([`short_duel`]) rather than running a model that never saw such an image. Class
//! names always come from the image's own data set ([`image_class_names`]); a model chosen by
//! hand from another data set keeps its own class names for its outputs, with a warning
//! ([`fit_note`]).

use serde::{Deserialize, Serialize};

use crate::runs::RunSummary;
use crate::types::{class_names, DuelConfig, Precision};

/// The data set a drawing imitates (its class names, and what a short duel for it trains on).
pub const DRAWING_DATASET: &str = "mnist-sample";

/// Training images of the short duel Act I offers ([`short_duel`]): a minute or less on a
/// laptop CPU, seconds on a GPU.
pub const SHORT_DUEL_TRAIN_IMAGES: usize = 10_000;

/// Test images the short duel scores its models on.
pub const SHORT_DUEL_TEST_IMAGES: usize = 2000;

/// How a model fits an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fit {
    /// Trained on the image's own data set (a drawing: on handwritten digits).
    Same,
    /// Trained on another data set of the same kind of images (the MNIST sample for a full
    /// MNIST image, or the other way round).
    SameKind,
    /// Trained on other images: its answer for this one is a guess among classes the image
    /// does not belong to.
    Other,
}

/// The kind of images data set `name` holds: `mnist` for the MNIST sample and full MNIST
/// (handwritten digits), the name itself otherwise (`fashion-mnist`, a folder).
pub fn image_kind(name: &str) -> &str {
    match name {
        "mnist" | "mnist-sample" => "mnist",
        other => other,
    }
}

/// How a model trained on `trained_on` fits an image of data set `image` (`None`: a drawing,
/// which is a handwritten digit).
pub fn fit(trained_on: &str, image: Option<&str>) -> Fit {
    match image {
        Some(d) if d == trained_on => Fit::Same,
        Some(d) if image_kind(d) == image_kind(trained_on) => Fit::SameKind,
        Some(_) => Fit::Other,
        None if image_kind(trained_on) == image_kind(DRAWING_DATASET) => Fit::Same,
        None => Fit::Other,
    }
}

/// The newest saved duel (largest `saved_at`, then `id`) that kept a model fitting an image of
/// `image` (`None`: a drawing): one trained on the image's own data set if any, else one
/// trained on the same kind of images ([`Fit::SameKind`]); `None` when no saved duel kept such
/// a model. A duel trained on other images is never chosen.
pub fn newest_model_for<'a>(runs: &'a [RunSummary], image: Option<&str>) -> Option<&'a RunSummary> {
    let newest = |want: Fit| {
        runs.iter()
            .filter(|r| !r.models.is_empty() && fit(&r.dataset, image) == want)
            .max_by(|a, b| (a.saved_at, &a.id).cmp(&(b.saved_at, &b.id)))
    };
    newest(Fit::Same).or_else(|| newest(Fit::SameKind))
}

/// The names of classes 0–9 of an image of data set `image` (`None`: a drawing, the digits).
pub fn image_class_names(image: Option<&str>) -> [&'static str; 10] {
    class_names(image.unwrap_or(DRAWING_DATASET))
}

/// The data set a short duel should train on so that a model fits an image of `image`
/// (`None`: a drawing, the MNIST sample).
pub fn dataset_to_train(image: Option<&str>) -> &str {
    image.unwrap_or(DRAWING_DATASET)
}

/// The short duel Act I offers when no saved model fits the image: FP32 and FP16 (the two the
/// page sets side by side), one epoch on the first [`SHORT_DUEL_TRAIN_IMAGES`] training
/// images of `dataset`, scored on [`SHORT_DUEL_TEST_IMAGES`] test images, on the backend the
/// service chooses; everything else as a duel's defaults.
pub fn short_duel(dataset: &str) -> DuelConfig {
    DuelConfig {
        dataset: dataset.to_string(),
        precisions: vec![Precision::Fp32, Precision::Fp16],
        epochs: 1,
        batch: 64,
        train_limit: Some(SHORT_DUEL_TRAIN_IMAGES),
        test_limit: Some(SHORT_DUEL_TEST_IMAGES),
        ..DuelConfig::default()
    }
}

/// What the page says about the models' data set against the image's, in one sentence:
/// `trained_on` is the models' data set (`None`: the untrained initial weights), `image` the
/// image's (`None`: a drawing).
pub fn fit_note(trained_on: Option<&str>, image: Option<&str>) -> String {
    let image_words = match image {
        Some(d) => format!("this {d} image"),
        None => "your drawing".to_string(),
    };
    let Some(t) = trained_on else {
        return format!(
            "Untrained: the initial weights (seed 0) have seen no data set, so their answer for \
             {image_words} is chance."
        );
    };
    match (fit(t, image), image) {
        (Fit::Same, Some(d)) => format!("Trained on {d}, the image's own data set."),
        (Fit::Same, None) => {
            format!("Trained on {t}: handwritten digits, like your drawing.")
        }
        (Fit::SameKind, Some(d)) => format!(
            "Trained on {t}: the same kind of images as {d} (handwritten digits), not {d} itself."
        ),
        (Fit::SameKind, None) | (Fit::Other, _) => format!(
            "Trained on {t}: this model never saw an image like {image_words}. Its outputs are \
             {t}'s classes ({}), so its answer here is a guess among classes the image does not \
             belong to.",
            class_names(t)[..3].join(", ") + ", …"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::RunSummary;

    /// A history line as the service lists it (read as JSON, so that the fields the history
    /// keeps besides these take their defaults).
    fn run(id: &str, saved_at: u64, dataset: &str, models: &[Precision]) -> RunSummary {
        serde_json::from_value(serde_json::json!({
            "id": id,
            "saved_at": saved_at,
            "dataset": dataset,
            "train_images": 1000,
            "test_images": 100,
            "backend": "cpu",
            "device": "a CPU",
            "precisions": models,
            "epochs": 1,
            "results": [],
            "speedup_fp16_vs_fp32": null,
            "models": models,
        }))
        .unwrap()
    }

    const BOTH: &[Precision] = &[Precision::Fp32, Precision::Fp16];

    #[test]
    fn a_fashion_image_never_gets_a_digit_model() {
        // Issue 26: a Fashion-MNIST ankle boot went through the newest model, trained on the
        // MNIST sample, and was reported as "labelled 9".
        let runs = [run("b", 20, "mnist-sample", BOTH)];
        assert_eq!(newest_model_for(&runs, Some("fashion-mnist")), None);
        assert_eq!(fit("mnist-sample", Some("fashion-mnist")), Fit::Other);
        assert_eq!(fit("fashion-mnist", Some("mnist-sample")), Fit::Other);
        assert_eq!(fit("fashion-mnist", None), Fit::Other);
    }

    #[test]
    fn the_newest_model_trained_on_the_images_data_set_is_chosen() {
        let runs = [
            run("20250101-000000-000-aaaa", 10, "fashion-mnist", BOTH),
            run("20250102-000000-000-aaaa", 20, "fashion-mnist", BOTH),
            run("20250103-000000-000-aaaa", 30, "mnist-sample", BOTH),
            // Newest of all, but it kept no model.
            run("20250104-000000-000-aaaa", 40, "fashion-mnist", &[]),
            run("20250105-000000-000-aaaa", 50, "mnist", BOTH),
        ];
        let id = |image| newest_model_for(&runs, image).map(|r| r.id.as_str());
        assert_eq!(id(Some("fashion-mnist")), Some("20250102-000000-000-aaaa"));
        assert_eq!(id(Some("mnist-sample")), Some("20250103-000000-000-aaaa"));
        assert_eq!(id(Some("mnist")), Some("20250105-000000-000-aaaa"));
        // A drawing takes the newest digit model, whichever MNIST it was trained on.
        assert_eq!(id(None), Some("20250105-000000-000-aaaa"));
        // The order of the list does not matter (the history lists newest first).
        let mut reversed = runs.to_vec();
        reversed.reverse();
        assert_eq!(
            newest_model_for(&reversed, Some("fashion-mnist")).map(|r| r.id.as_str()),
            Some("20250102-000000-000-aaaa")
        );
        // Same saved second: the larger id (the later save) wins.
        let tie = [
            run("20250101-000000-000-aaab", 10, "fashion-mnist", BOTH),
            run("20250101-000000-000-aaaa", 10, "fashion-mnist", BOTH),
        ];
        assert_eq!(
            newest_model_for(&tie, Some("fashion-mnist")).map(|r| r.id.as_str()),
            Some("20250101-000000-000-aaab")
        );
    }

    #[test]
    fn the_own_data_set_comes_before_the_same_kind_and_the_same_kind_before_none() {
        let sample = run("s", 10, "mnist-sample", BOTH);
        let full = run("f", 5, "mnist", BOTH);
        let both = [sample.clone(), full.clone()];
        // A full-MNIST image: the older full-MNIST model before the newer sample one.
        assert_eq!(
            newest_model_for(&both, Some("mnist")).map(|r| r.id.as_str()),
            Some("f")
        );
        assert_eq!(fit("mnist-sample", Some("mnist")), Fit::SameKind);
        // Only the sample's: it fits the same kind of image.
        assert_eq!(
            newest_model_for(std::slice::from_ref(&sample), Some("mnist")).map(|r| r.id.as_str()),
            Some("s")
        );
        // A folder of one's own only fits itself.
        assert_eq!(fit("/data/letters", Some("/data/letters")), Fit::Same);
        assert_eq!(newest_model_for(&both, Some("/data/letters")), None);
        assert_eq!(newest_model_for(&[], Some("mnist-sample")), None);
    }

    #[test]
    fn class_names_come_from_the_images_data_set() {
        assert_eq!(image_class_names(Some("fashion-mnist"))[9], "Ankle boot");
        assert_eq!(image_class_names(Some("fashion-mnist"))[0], "T-shirt/top");
        assert_eq!(image_class_names(Some("mnist-sample"))[9], "9");
        assert_eq!(image_class_names(Some("mnist"))[3], "3");
        assert_eq!(image_class_names(None)[7], "7");
        assert_eq!(dataset_to_train(Some("fashion-mnist")), "fashion-mnist");
        assert_eq!(dataset_to_train(None), "mnist-sample");
    }

    #[test]
    fn the_note_names_both_data_sets_and_warns_on_a_mismatch() {
        let mismatch = fit_note(Some("mnist-sample"), Some("fashion-mnist"));
        assert!(
            mismatch.contains("Trained on mnist-sample")
                && mismatch.contains("never saw an image like this fashion-mnist image")
                && mismatch.contains("0, 1, 2, …"),
            "{mismatch}"
        );
        let drawn = fit_note(Some("fashion-mnist"), None);
        assert!(
            drawn.contains("never saw an image like your drawing") && drawn.contains("T-shirt/top"),
            "{drawn}"
        );
        assert_eq!(
            fit_note(Some("fashion-mnist"), Some("fashion-mnist")),
            "Trained on fashion-mnist, the image's own data set."
        );
        assert!(fit_note(Some("mnist-sample"), Some("mnist")).contains("same kind of images"));
        assert!(fit_note(Some("mnist"), None).contains("like your drawing"));
        assert!(fit_note(None, Some("fashion-mnist")).starts_with("Untrained"));
    }

    #[test]
    fn the_short_duel_is_one_quick_valid_epoch_on_the_images_data_set() {
        let c = short_duel("fashion-mnist");
        assert_eq!(c.dataset, "fashion-mnist");
        assert_eq!(c.epochs, 1);
        assert_eq!(c.train_limit, Some(SHORT_DUEL_TRAIN_IMAGES));
        assert_eq!(c.test_limit, Some(SHORT_DUEL_TEST_IMAGES));
        assert_eq!(c.precisions, vec![Precision::Fp32, Precision::Fp16]);
        assert!(c.validate().is_ok());
        // What the duel's request reads back is what was offered.
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<DuelConfig>(&text).unwrap(), c);
    }
}
