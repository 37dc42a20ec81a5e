//! Act I's forward pass of a saved model on one digit: the models are taken from a saved duel
//! (by default the newest that kept a model trained on the image's data set; the initial
//! weights, with the offer of a short duel, when there is none), the digit
//! from a data set or a drawing (centred like MNIST's), every layer computed by the core's
//! plain forward pass ([`crate::explain::forward`]) and checked against the training backend's
//! own kernels on the same weights ([`Trainer::forward_layers`]).

use base64::Engine;

use crate::backend::{AdamParams, Backend};
use crate::data::{Dataset, Split};
use crate::device::{Device, OnBackend};
use crate::error::{ComputeError, Result};
use crate::explain::{self, matching, BackendCheck, ModelActivations, ModelWeights};
use crate::model::{lab, Activation};
use crate::protocol::{
    DigitSource, ExplainReport, ExplainRequest, INITIAL_WEIGHTS, MAX_DRAWING_SIDE,
};
use crate::runs::RunStore;
use crate::train::{init_params, TrainOptions, Trainer, MEAN, STD};
use crate::types::{class_names, DataSplit, DuelReport, Precision};

/// Where the models come from.
struct Models {
    run: Option<String>,
    source: String,
    /// The data set they were trained on (`None`: the initial weights).
    trained_on: Option<String>,
    /// Set when no saved model fits the image: the data set to train one on.
    no_model_for: Option<String>,
    weights: Vec<ModelWeights>,
}

/// The image's data set (`None`: a drawing).
fn image_dataset(digit: &DigitSource) -> Option<&str> {
    match digit {
        DigitSource::Dataset { dataset, .. } => Some(dataset),
        DigitSource::Drawn { .. } => None,
    }
}

/// The models `req` asks for, from `store`: by default the newest saved duel whose models fit
/// an image of `image` ([`matching::newest_model_for`]), never one trained on other images.
fn models(req: &ExplainRequest, store: &RunStore, image: Option<&str>) -> Result<Models> {
    let mut no_model_for = None;
    let chosen: Option<(String, DuelReport)> = match req.run.as_deref() {
        Some(INITIAL_WEIGHTS) => None,
        Some(id) => Some((id.to_string(), store.load(id)?)),
        None => {
            let list = store.list()?;
            match matching::newest_model_for(&list.runs, image) {
                Some(r) => Some((r.id.clone(), store.load(&r.id)?)),
                None => {
                    no_model_for = Some(matching::dataset_to_train(image).to_string());
                    None
                }
            }
        }
    };
    let Some((id, report)) = chosen else {
        let wanted = if req.precisions.is_empty() {
            vec![Precision::Fp32]
        } else {
            req.precisions.clone()
        };
        let weights = wanted
            .into_iter()
            .map(|p| {
                ModelWeights::new(p, Activation::Relu, init_params(0))
                    .map_err(|e| ComputeError::BadRequest(e.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        let source = match &no_model_for {
            Some(d) => format!(
                "the initial weights (seed 0, untrained): no saved duel has kept a model trained \
                 on {d} yet — train one with a short duel on {d} (Act I offers one) or in Act II"
            ),
            None => "the initial weights (seed 0, untrained), as asked".to_string(),
        };
        return Ok(Models {
            run: None,
            source,
            trained_on: None,
            no_model_for,
            weights,
        });
    };
    let kept: Vec<&ModelWeights> = report
        .runs
        .iter()
        .filter_map(|r| r.model.as_ref())
        .collect();
    if kept.is_empty() {
        return Err(ComputeError::bad_arg(
            "run",
            &id,
            "this duel was saved before models were kept with duels: run a new duel, or choose \
             another",
        ));
    }
    let weights = if req.precisions.is_empty() {
        kept.into_iter().cloned().collect()
    } else {
        req.precisions
            .iter()
            .map(|p| {
                kept.iter()
                    .find(|w| w.precision == *p)
                    .map(|w| (*w).clone())
                    .ok_or_else(|| {
                        ComputeError::bad_arg(
                            "precisions",
                            p,
                            format!(
                                "duel {id} kept models for {} only",
                                kept.iter()
                                    .map(|w| w.precision.to_string())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?
    };
    Ok(Models {
        source: format!(
            "duel {id}: trained on {} ({} training images, {} epoch{}) on {} ({})",
            report.dataset.name,
            report.dataset.train,
            report.config.epochs,
            if report.config.epochs == 1 { "" } else { "s" },
            report.device,
            report.backend
        ),
        run: Some(id),
        trained_on: Some(report.dataset.name.clone()),
        no_model_for: None,
        weights,
    })
}

/// The 28×28 digit `source` names, and its label for a data-set image.
fn digit(
    source: &DigitSource,
    dataset: &dyn Fn(&str) -> Result<std::sync::Arc<Dataset>>,
) -> Result<(Vec<u8>, Option<u8>)> {
    match source {
        DigitSource::Dataset {
            dataset: name,
            split,
            index,
        } => {
            let d = dataset(name)?;
            if d.pixels() != lab::IMAGE * lab::IMAGE {
                return Err(ComputeError::bad_arg(
                    "digit.dataset",
                    name,
                    format!("its images are {}×{}, the CNN takes 28×28", d.rows, d.cols),
                ));
            }
            let s = match split {
                DataSplit::Train => &d.train,
                DataSplit::Test => &d.test,
            };
            if *index >= s.len() {
                return Err(ComputeError::bad_arg(
                    "digit.index",
                    index,
                    format!(
                        "the {} split of {name} holds {} images",
                        split.as_str(),
                        s.len()
                    ),
                ));
            }
            let px = d.pixels();
            Ok((
                s.images[index * px..(index + 1) * px].to_vec(),
                Some(s.labels[*index]),
            ))
        }
        DigitSource::Drawn {
            side,
            pixels_base64,
        } => {
            if *side == 0 || *side > MAX_DRAWING_SIDE {
                return Err(ComputeError::bad_arg(
                    "digit.side",
                    side,
                    format!("must be 1 to {MAX_DRAWING_SIDE}"),
                ));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(pixels_base64.trim())
                .map_err(|e| {
                    ComputeError::bad_arg("digit.pixels_base64", "…", format!("not base64: {e}"))
                })?;
            let centred = explain::centre_digit(&bytes, *side)
                .map_err(|e| ComputeError::bad_arg("digit.pixels_base64", "…", e.to_string()))?;
            Ok((centred, None))
        }
    }
}

/// Answers an [`ExplainRequest`]: the models from `store`, data sets through `dataset`. The
/// class names are the image's data set's; a model trained on other images (chosen by hand)
/// keeps its own for its outputs, and the report says it never saw such an image.
pub fn explain(
    req: &ExplainRequest,
    store: &RunStore,
    dataset: &dyn Fn(&str) -> Result<std::sync::Arc<Dataset>>,
) -> Result<ExplainReport> {
    let image = image_dataset(&req.digit);
    let models = models(req, store, image)?;
    let (pixels, label) = digit(&req.digit, dataset)?;
    let trained_on = models.trained_on.as_deref();
    let fit = trained_on.map(|t| matching::fit(t, image));
    // A drawing's classes are the digits; it is named after the digit set its model learnt.
    let dataset_name = match (image, trained_on, fit) {
        (Some(d), _, _) => d.to_string(),
        (None, Some(t), Some(matching::Fit::Same)) => t.to_string(),
        (None, _, _) => matching::DRAWING_DATASET.to_string(),
    };
    let names = |n: [&str; 10]| n.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    let model_class_names = match (trained_on, fit) {
        (Some(t), Some(matching::Fit::Other)) if class_names(t) != class_names(&dataset_name) => {
            names(class_names(t))
        }
        _ => Vec::new(),
    };
    let mut acts = Vec::new();
    for w in &models.weights {
        acts.push(
            explain::forward(w, &pixels, MEAN, STD)
                .map_err(|e| ComputeError::BadRequest(e.to_string()))?,
        );
    }
    check_on_backend(req, &models.weights, &pixels, &mut acts)?;
    Ok(ExplainReport {
        run: models.run,
        model_source: models.source,
        class_names: names(matching::image_class_names(Some(&dataset_name))),
        fit_note: matching::fit_note(trained_on, image),
        trained_on: models.trained_on.clone(),
        fit,
        no_model_for: models.no_model_for,
        model_class_names,
        dataset: dataset_name,
        label,
        digit_base64: base64::engine::general_purpose::STANDARD.encode(&pixels),
        mean: MEAN,
        std: STD,
        models: acts,
        weights: models.weights,
    })
}

/// Runs each model's forward pass on the backend `req` chooses and notes the largest
/// difference from the plain forward pass. A precision the backend does not train in (TF32 on
/// the CPU) gets no check.
fn check_on_backend(
    req: &ExplainRequest,
    weights: &[ModelWeights],
    pixels: &[u8],
    acts: &mut [ModelActivations],
) -> Result<()> {
    /// The check of every model's layers, on whichever backend was opened.
    struct CheckAll<'a> {
        weights: &'a [ModelWeights],
        pixels: &'a [u8],
        acts: &'a mut [ModelActivations],
    }
    impl OnBackend for CheckAll<'_> {
        type Output = ();
        fn run<B: Backend>(self, be: &B) -> Result<()> {
            check_all(be, self.weights, self.pixels, self.acts)
        }
    }
    let (device, _) = Device::open(req.backend, 0, Some(1))?;
    device.run(
        &std::sync::atomic::AtomicBool::new(false),
        CheckAll {
            weights,
            pixels,
            acts,
        },
    )
}

fn check_all<B: Backend>(
    be: &B,
    weights: &[ModelWeights],
    pixels: &[u8],
    acts: &mut [ModelActivations],
) -> Result<()> {
    for (w, a) in weights.iter().zip(acts.iter_mut()) {
        if !be.supports(w.precision) {
            continue;
        }
        let layers = backend_forward(be, w, pixels)?;
        let mut max = 0f32;
        for (name, got) in ["input", "pool1", "pool2", "logits"].iter().zip(&layers) {
            if let Some(l) = a.layer(name) {
                for (x, y) in l.values.iter().zip(got) {
                    max = max.max((x - y).abs());
                }
            }
        }
        a.backend_check = Some(BackendCheck {
            backend: be.name().into(),
            device: be.device(),
            max_abs_diff: max,
            same_prediction: explain::argmax(&layers[3]) == a.prediction,
        });
    }
    Ok(())
}

/// The input, pool1, pool2 and the logits of `w` on one digit, as `be`'s training kernels
/// compute them.
pub fn backend_forward<B: Backend>(
    be: &B,
    w: &ModelWeights,
    pixels: &[u8],
) -> Result<[Vec<f32>; 4]> {
    let one = Split {
        images: pixels.to_vec(),
        labels: vec![0],
    };
    let opts = TrainOptions {
        precision: w.precision,
        epochs: 1,
        batch: 1,
        adam: AdamParams::default(),
        seed: 0,
        dropout: 0.0,
        activation: w.activation,
    };
    let mut t = Trainer::new(be, opts, &one, &one, &w.params)?;
    // One digit has no amax history: FP8 casts each operand at its own amax's scale, as the
    // pure forward pass does.
    t.set_fp8_recipe(crate::fp8::Fp8Recipe {
        scaling: crate::fp8::Fp8Scaling::Current,
        ..crate::fp8::Fp8Recipe::default()
    })?;
    t.forward_layers()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::types::{BackendChoice, DuelConfig};
    use std::sync::Arc;

    fn sample(name: &str) -> Result<Arc<Dataset>> {
        Ok(Arc::new(crate::data::load(name, None)?))
    }

    fn request(run: Option<String>, precisions: Vec<Precision>, index: usize) -> ExplainRequest {
        ExplainRequest {
            run,
            precisions,
            digit: DigitSource::Dataset {
                dataset: "mnist-sample".into(),
                split: DataSplit::Test,
                index,
            },
            backend: BackendChoice::Cpu,
        }
    }

    /// `mnist-sample`, and its images as a stand-in `fashion-mnist` (the explainer reads only
    /// the name, the pixels and the labels).
    fn with_fashion(name: &str) -> Result<Arc<Dataset>> {
        let mut d = crate::data::load("mnist-sample", None)?;
        if name == "fashion-mnist" {
            d.name = name.into();
        } else if name != "mnist-sample" {
            return crate::data::load(name, None).map(Arc::new);
        }
        Ok(Arc::new(d))
    }

    fn image(dataset: &str, index: usize) -> DigitSource {
        DigitSource::Dataset {
            dataset: dataset.into(),
            split: DataSplit::Test,
            index,
        }
    }

    /// A quick CPU duel's report (mnist-sample), not saved.
    fn quick_duel() -> DuelReport {
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            train_limit: Some(256),
            test_limit: Some(64),
            epochs: 1,
            batch: 64,
            ..DuelConfig::default()
        };
        crate::duel::run_duel(
            &cfg,
            &mut |_| {},
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap()
    }

    /// `report` as if it had been trained on `dataset`, saved at `at_ms`.
    fn save_as(store: &RunStore, report: &DuelReport, dataset: &str, at_ms: u64) -> String {
        let mut r = report.clone();
        r.dataset.name = dataset.into();
        store.save_at(&r, at_ms).unwrap().id
    }

    #[test]
    fn a_fashion_image_is_not_run_through_a_digit_model() {
        // Issue 26: an ankle boot went through the newest model, trained on the MNIST sample,
        // and the page said "a mnist-sample image labelled 9 … ✗ the label is 9".
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let digits = saved_duel(&store);
        let mut req = request(None, vec![], 0);
        req.digit = image("fashion-mnist", 0);
        let r = explain(&req, &store, &with_fashion).unwrap();
        assert_eq!(r.run, None, "the digit duel {digits} must not be used");
        assert_eq!(r.trained_on, None);
        assert_eq!(r.fit, None);
        assert_eq!(r.no_model_for.as_deref(), Some("fashion-mnist"));
        assert!(
            r.model_source
                .contains("no saved duel has kept a model trained on fashion-mnist"),
            "{}",
            r.model_source
        );
        assert!(r.fit_note.starts_with("Untrained"), "{}", r.fit_note);
        assert_eq!(r.dataset, "fashion-mnist");
        assert_eq!(r.class_names[9], "Ankle boot");
        assert_eq!(r.weights[0].params, init_params(0));
        // The digits' own images still get the digit duel.
        let r = explain(&request(None, vec![], 0), &store, &with_fashion).unwrap();
        assert_eq!(r.run.as_deref(), Some(digits.as_str()));
        assert_eq!(r.no_model_for, None);
        assert_eq!(r.fit, Some(matching::Fit::Same));
    }

    #[test]
    fn the_newest_model_trained_on_the_images_data_set_is_chosen() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let report = quick_duel();
        let old_fashion = save_as(&store, &report, "fashion-mnist", 1_700_000_000_000);
        let fashion = save_as(&store, &report, "fashion-mnist", 1_700_000_100_000);
        let digits = save_as(&store, &report, "mnist-sample", 1_700_000_200_000);
        let mut req = request(None, vec![], 0);
        req.digit = image("fashion-mnist", 0);
        let r = explain(&req, &store, &with_fashion).unwrap();
        assert_eq!(
            r.run.as_deref(),
            Some(fashion.as_str()),
            "not {old_fashion} nor {digits}"
        );
        assert_eq!(r.trained_on.as_deref(), Some("fashion-mnist"));
        assert_eq!(r.fit, Some(matching::Fit::Same));
        assert!(
            r.model_source.contains("trained on fashion-mnist"),
            "{}",
            r.model_source
        );
        assert_eq!(
            r.fit_note,
            "Trained on fashion-mnist, the image's own data set."
        );
        let want: Vec<String> = crate::types::FASHION_MNIST_CLASSES
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(r.class_names, want);
        assert!(r.model_class_names.is_empty());
        assert_eq!(
            r.label,
            Some(with_fashion("fashion-mnist").unwrap().test.labels[0])
        );
        let r = explain(&request(None, vec![], 0), &store, &with_fashion).unwrap();
        assert_eq!(r.run.as_deref(), Some(digits.as_str()));
        assert_eq!(r.class_names[9], "9");
        // A drawing takes the digit model too.
        let mut req = request(None, vec![], 0);
        req.digit = DigitSource::Drawn {
            side: 28,
            pixels_base64: base64::engine::general_purpose::STANDARD.encode([255u8; 784]),
        };
        let r = explain(&req, &store, &with_fashion).unwrap();
        assert_eq!(r.run.as_deref(), Some(digits.as_str()));
        assert_eq!((r.dataset.as_str(), r.label), ("mnist-sample", None));
    }

    #[test]
    fn a_model_chosen_by_hand_from_other_images_is_flagged_with_its_own_class_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let report = quick_duel();
        let digits = save_as(&store, &report, "mnist-sample", 1_700_000_000_000);
        let mut req = request(Some(digits.clone()), vec![], 0);
        req.digit = image("fashion-mnist", 0);
        let r = explain(&req, &store, &with_fashion).unwrap();
        assert_eq!(r.run.as_deref(), Some(digits.as_str()));
        assert_eq!(r.fit, Some(matching::Fit::Other));
        assert!(
            r.fit_note
                .contains("never saw an image like this fashion-mnist image"),
            "{}",
            r.fit_note
        );
        assert_eq!(
            r.class_names[9], "Ankle boot",
            "the label's names are the image's"
        );
        assert_eq!(
            r.model_class_names[9], "9",
            "the outputs' names are the model's"
        );
        // With only a Fashion model saved, a drawing is offered a duel on the digits.
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        save_as(&store, &report, "fashion-mnist", 1_700_000_000_000);
        let mut req = request(None, vec![], 0);
        req.digit = DigitSource::Drawn {
            side: 28,
            pixels_base64: base64::engine::general_purpose::STANDARD.encode([255u8; 784]),
        };
        let r = explain(&req, &store, &with_fashion).unwrap();
        assert_eq!(
            (r.run, r.no_model_for.as_deref()),
            (None, Some("mnist-sample"))
        );
    }

    /// A quick CPU duel kept in `store`.
    fn saved_duel(store: &RunStore) -> String {
        let cfg = DuelConfig {
            backend: BackendChoice::Cpu,
            train_limit: Some(256),
            test_limit: Some(64),
            epochs: 2,
            batch: 64,
            ..DuelConfig::default()
        };
        let report = crate::duel::run_duel(
            &cfg,
            &mut |_| {},
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
        store.save(&report).unwrap().id
    }

    #[test]
    fn the_layers_returned_equal_the_cpu_trainers_forward_pass_for_fp32_and_fp16_models() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let id = saved_duel(&store);
        let r = explain(&request(None, vec![], 3), &store, &sample).unwrap();
        assert_eq!(r.run.as_deref(), Some(id.as_str()));
        assert_eq!(
            r.weights.len(),
            2,
            "the default duel's fp32 and fp16 models"
        );
        let pixels = base64::engine::general_purpose::STANDARD
            .decode(&r.digit_base64)
            .unwrap();
        let be = CpuBackend::new(Some(1)).unwrap();
        for (w, a) in r.weights.iter().zip(&r.models) {
            let direct = backend_forward(&be, w, &pixels).unwrap();
            let tol = if w.precision.rounds_below_fp32() {
                2e-2
            } else {
                1e-4
            };
            let close = |name: &str, got: &[f32], want: &[f32]| {
                assert_eq!(got.len(), want.len(), "{name}");
                let d = got
                    .iter()
                    .zip(want)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0f32, f32::max);
                assert!(d <= tol, "{} {name}: max |Δ| {d} > {tol}", w.precision);
            };
            for (name, want) in ["input", "pool1", "pool2", "logits"].iter().zip(&direct) {
                close(name, &a.layer(name).unwrap().values, want);
            }
            // The conv maps through the trainer's fused activation + pool: every pixel the pool
            // reads is held against the trainer's pooled output.
            for (conv, want) in [("conv1", &direct[1]), ("conv2", &direct[2])] {
                let l = a.layer(conv).unwrap();
                let pooled = explain::act_pool(
                    &l.values,
                    l.channels,
                    l.height,
                    l.width,
                    w.activation,
                    w.precision,
                );
                close(conv, &pooled, want);
            }
            // The softmax is the logits' (in f64).
            let softmax = explain::softmax(&a.layer("logits").unwrap().values);
            assert_eq!(a.layer("softmax").unwrap().values, softmax);
            let check = a.backend_check.as_ref().unwrap();
            assert_eq!(check.backend, "cpu");
            assert!(
                check.max_abs_diff <= tol && check.same_prediction,
                "{check:?}"
            );
        }
        assert_eq!(
            r.label,
            Some(sample("mnist-sample").unwrap().test.labels[3])
        );
        assert_eq!(r.class_names.len(), 10);
    }

    #[test]
    fn without_a_saved_model_the_initial_weights_are_used_and_said_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let r = explain(&request(None, vec![], 0), &store, &sample).unwrap();
        assert_eq!(r.run, None);
        assert!(
            r.model_source.contains("initial weights"),
            "{}",
            r.model_source
        );
        assert_eq!(r.models.len(), 1);
        assert_eq!(r.weights[0].params, init_params(0));
        // Asked for by name, even where a trained model is kept, in the precisions asked.
        saved_duel(&store);
        let r = explain(
            &request(
                Some(INITIAL_WEIGHTS.into()),
                vec![Precision::Fp32, Precision::Fp16],
                0,
            ),
            &store,
            &sample,
        )
        .unwrap();
        assert_eq!(r.run, None);
        assert_eq!(r.models.len(), 2);
        assert_eq!(r.weights[1].precision, Precision::Fp16);
        assert_eq!(r.weights[1].params, init_params(0));
    }

    #[test]
    fn bad_digits_and_runs_are_refused_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let e = explain(&request(None, vec![], 99_999), &store, &sample).unwrap_err();
        assert!(e.to_string().contains("digit.index"), "{e}");
        let mut req = request(None, vec![], 0);
        req.digit = DigitSource::Drawn {
            side: 10,
            pixels_base64: "AAAA".into(),
        };
        let e = explain(&req, &store, &sample).unwrap_err();
        assert!(
            e.to_string().contains("digit.pixels_base64") && e.to_string().contains("3 pixels"),
            "{e}"
        );
        req.digit = DigitSource::Drawn {
            side: 100_000,
            pixels_base64: String::new(),
        };
        assert!(explain(&req, &store, &sample)
            .unwrap_err()
            .to_string()
            .contains("digit.side"));
        let e = explain(&request(Some("nope".into()), vec![], 0), &store, &sample).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        let id = saved_duel(&store);
        let e = explain(
            &request(Some(id), vec![Precision::Bf16], 0),
            &store,
            &sample,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("kept models for fp32, fp16 only"),
            "{e}"
        );
    }

    #[test]
    fn a_drawing_is_centred_before_the_forward_pass() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(dir.path()).unwrap();
        let side = 56;
        let mut d = vec![0u8; side * side];
        for y in 2..30 {
            for x in 2..8 {
                d[y * side + x] = 255;
            }
        }
        let mut req = request(None, vec![], 0);
        req.digit = DigitSource::Drawn {
            side,
            pixels_base64: base64::engine::general_purpose::STANDARD.encode(&d),
        };
        let r = explain(&req, &store, &sample).unwrap();
        let seen = base64::engine::general_purpose::STANDARD
            .decode(&r.digit_base64)
            .unwrap();
        assert_eq!(seen, explain::centre_digit(&d, side).unwrap());
        assert_eq!(r.label, None);
        assert_eq!(r.models[0].layers[0].values.len(), 784);
    }
}
