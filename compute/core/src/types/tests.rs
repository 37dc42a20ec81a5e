//! The tests of the duel's report types: telemetry, step times, data-set samples and the curve.

use crate::types::*;

mod telemetry_tests {
    use super::{Telemetry, TelemetrySample};

    /// Regression (issue 37): a reopened GPU run hid the telemetry it saved.
    #[test]
    fn a_saved_runs_telemetry_reads_in_units_with_its_sample_count() {
        let sample = |mhz: u32, w: f64, c: u32| TelemetrySample {
            t_ms: 0.0,
            gpu_util_pct: 90,
            mem_util_pct: 10,
            sm_clock_mhz: mhz,
            memory_used_bytes: 0,
            power_w: w,
            temperature_c: c,
        };
        let t = Telemetry {
            samples: vec![
                sample(1980, 132.4, 42),
                sample(1755, 160.2, 46),
                sample(1980, 148.9, 44),
            ],
            ..Telemetry::default()
        };
        assert_eq!(
            t.summary().as_deref(),
            Some("SM clock 1.98 GHz (median), power 148.9 W median / 160.2 W max, temperature 46 °C max, over 3 samples")
        );
        assert_eq!(Telemetry::default().summary(), None);
    }
}

mod step_times_tests {
    use super::{EpochReport, StepTimes};

    #[test]
    fn a_nan_loss_travels_as_null_and_comes_back() {
        let e = EpochReport {
            epoch: 1,
            ms: 2.0,
            train_loss: f64::NAN,
            test_accuracy: 0.1,
            test_loss: 2.3,
            skipped_steps: 62,
            loss_scale: 1.0,
        };
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains("\"train_loss\":null"), "{json}");
        let back: EpochReport = serde_json::from_str(&json).unwrap();
        assert!(back.train_loss.is_nan());
        assert_eq!(back.test_loss, 2.3);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let ms: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let st = StepTimes::from_samples(1, &ms).unwrap();
        assert_eq!(
            (st.steps, st.p50_ms, st.p90_ms, st.p99_ms, st.max_ms),
            (100, 50.0, 90.0, 99.0, 100.0)
        );
        let one = StepTimes::from_samples(1, &[2.5]).unwrap();
        assert_eq!((one.p50_ms, one.p99_ms), (2.5, 2.5));
        assert_eq!(StepTimes::from_samples(1, &[]), None);
    }
}

mod dataset_samples_tests {
    use super::{class_names, DataSplit, DatasetSamples};

    fn page(pixels_base64: &str, labels: Vec<u8>) -> DatasetSamples {
        DatasetSamples {
            dataset: "mnist-sample".into(),
            split: DataSplit::Test,
            width: 2,
            height: 1,
            total: 10,
            offset: 0,
            labels,
            class_names: class_names("mnist-sample").map(String::from).to_vec(),
            pixels_base64: pixels_base64.into(),
        }
    }

    #[test]
    fn pixels_decode_and_refuse_the_wrong_length_or_alphabet() {
        // [0, 255, 7, 9]: two 2×1 images.
        assert_eq!(
            page("AP8HCQ==", vec![3, 4]).pixels().unwrap(),
            [0, 255, 7, 9]
        );
        let e = page("AP8HCQ==", vec![3]).pixels().unwrap_err().to_string();
        assert!(e.contains("holds 4 bytes") && e.contains("need 2"), "{e}");
        let e = page("not base64!", vec![3])
            .pixels()
            .unwrap_err()
            .to_string();
        assert!(e.contains("not base64"), "{e}");
        assert_eq!(page("", vec![12]).class_of(0), "?");
    }

    #[test]
    fn splits_read_and_default_to_test() {
        assert_eq!("Train".parse::<DataSplit>().unwrap(), DataSplit::Train);
        assert_eq!("t10k".parse::<DataSplit>().unwrap(), DataSplit::Test);
        assert!("val".parse::<DataSplit>().is_err());
        assert_eq!(DataSplit::default(), DataSplit::Test);
        assert_eq!(
            serde_json::to_string(&DataSplit::Train).unwrap(),
            "\"train\""
        );
    }
}

mod curve_tests {
    use super::{batch_label, batch_note, curve_steps, curve_steps_read_every, effective_batch};

    #[test]
    fn on_a_gpu_the_curve_is_read_where_the_loss_is_read_anyway() {
        // 469 steps (Fashion-MNIST at batch 128), a read every 50: 10 points an epoch, at
        // the reads, ending on the epoch's last step.
        let at = curve_steps_read_every(469, 5, 50);
        assert_eq!(at, vec![50, 100, 150, 200, 250, 300, 350, 400, 450, 469]);
        // Many reads are thinned to the CPU's count, still ending on the last step.
        let thin = curve_steps_read_every(100_000, 1, 50);
        assert_eq!(thin.len(), curve_steps(100_000, 1).len());
        assert_eq!(thin.last(), Some(&100_000));
        assert!(thin.iter().all(|s| s % 50 == 0 || *s == 100_000));
        assert_eq!(curve_steps_read_every(469, 5, 1), curve_steps(469, 5));
    }

    #[test]
    fn every_contestant_samples_its_curve_at_the_same_evenly_spread_steps() {
        // Issue 26: fp16's live curve covered 0.125–0.875 of the epoch and fp32's 0.25–1.0.
        // The steps depend only on what every contestant shares, and end at the epoch's end.
        let s = curve_steps(8, 1);
        assert_eq!(s, [1, 2, 3, 4, 5, 6, 7, 8]);
        let s = curve_steps(469, 2);
        assert_eq!(s.len(), super::CURVE_POINTS_PER_EPOCH);
        assert_eq!(s.last(), Some(&469));
        assert_eq!(s[0], 15);
        // Evenly spread: consecutive gaps differ by at most one step.
        let gaps: Vec<usize> = s.windows(2).map(|w| w[1] - w[0]).collect();
        let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
        assert!(hi - lo <= 1, "{gaps:?}");
        // A long run keeps fewer points an epoch, at least the last step of each.
        assert_eq!(curve_steps(469, 10_000), [469]);
        assert_eq!(curve_steps(1, 3), [1]);
        assert!(curve_steps(0, 3).is_empty());
    }

    #[test]
    fn a_batch_larger_than_the_training_set_is_labelled_with_the_batch_it_was() {
        // Issue 26: a duel at batch 100,000 ran one step an epoch and said nothing.
        assert_eq!(effective_batch(100_000, 1024), 1024);
        assert_eq!(effective_batch(128, 1024), 128);
        assert_eq!(batch_label(128, 1024), "batch 128");
        assert_eq!(
            batch_label(100_000, 1024),
            "batch 100000 (effective 1024: the whole training set per step)"
        );
        assert!(batch_note(128, 1024).is_none());
        // The memory chart at "batch 60000" showed the numbers of 8000 images.
        assert_eq!(
            super::memory_batch_label(60_000, 8000, 2000),
            "batch 60000 (8000 images: the most a batch holds with 8000 training and 2000 test images)"
        );
        assert_eq!(super::memory_batch_label(128, 8000, 2000), "batch 128");
        let capped = crate::memory::estimate(super::Precision::Fp32, 60_000, 8000, 2000, 0);
        let at_8000 = crate::memory::estimate(super::Precision::Fp32, 8000, 8000, 2000, 0);
        assert_eq!(
            capped, at_8000,
            "the label names the batch the numbers are for"
        );
        assert!(batch_note(100_000, 1024)
            .unwrap()
            .contains("each epoch is one step of 1024 images"));
    }

    #[test]
    fn curve_points_are_never_thinned_by_a_door() {
        use crate::protocol::Event;
        let point = super::CurvePoint {
            epoch: 1,
            step: 1,
            global_step: 1,
            x: 0.5,
            loss: f64::NAN,
            loss_scale: 1.0,
            skipped: 0,
        };
        let e = Event::Duel {
            event: super::DuelEvent::Curve {
                precision: super::Precision::Fp16,
                point,
            },
        };
        assert!(!e.is_tick());
        let json = serde_json::to_string(&e).unwrap();
        assert!(
            json.contains("\"type\":\"curve\"") && json.contains("\"loss\":null"),
            "{json}"
        );
        let back: Event = serde_json::from_str(&json).unwrap();
        assert!(matches!(
            back,
            Event::Duel {
                event: super::DuelEvent::Curve { .. }
            }
        ));
    }
}
