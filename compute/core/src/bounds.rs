//! What one saved run holds at most, stated once: the trainer's recorder samples to these
//! counts whatever the epochs, and the run store's read limit is sized against them, so every
//! run the service accepts can be read back (issue 38: 10,000 epochs of one image wrote a
//! 642 MB run that its own store refused).
//!
//! The worst case is the largest duel [`DuelConfig::validate`](crate::types::DuelConfig)
//! accepts: [`MAX_EPOCHS`] epochs of every precision, with PyTorch beside them. Per contestant
//! it keeps one [`EpochReport`](crate::types::EpochReport) per epoch (about 200 bytes written
//! compact), at most [`CURVE_POINTS_MAX`] curve points, [`GRAD_SAMPLE_EPOCHS`] epochs' gradient
//! histograms (and those of the first epoch's steps 1, 2, 4, …), [`SCALE_POINTS_MAX`] loss-scale
//! points, [`FP8_POINTS_MAX`] scale points per FP8 tensor and [`TELEMETRY_SAMPLES_MAX`] NVML
//! samples: a few MiB, against [`MAX_RUN_BYTES`].

/// The largest run file the run history reads (a saved duel or a lab run). Runs are written
/// compact, and the caps below keep the largest accepted duel well under it.
pub const MAX_RUN_BYTES: u64 = 64 << 20;

/// Most epochs a duel may ask for.
pub const MAX_EPOCHS: usize = 10_000;

/// Most loss-curve points a run keeps per epoch.
pub const CURVE_POINTS_PER_EPOCH: usize = 32;

/// Most loss-curve points a run keeps over all its epochs (a long run keeps fewer per epoch,
/// at least one: the epoch's last step, on at most this many epochs).
pub const CURVE_POINTS_MAX: usize = 2048;

/// Most epochs whose last step's gradient histograms a contestant keeps: evenly spread over
/// the run, the last epoch always among them (see [`sampled_epoch`]).
pub const GRAD_SAMPLE_EPOCHS: usize = 64;

/// Most loss-scale points a contestant keeps (the first epoch's moves and the epochs' ends,
/// thinned evenly, the first and last kept).
pub const SCALE_POINTS_MAX: usize = 2048;

/// Most scale points an FP8 tensor keeps (thinned as [`SCALE_POINTS_MAX`]).
pub const FP8_POINTS_MAX: usize = 2048;

/// Most GPU telemetry samples a run keeps (NVML at 5 Hz over a long run, thinned evenly).
pub const TELEMETRY_SAMPLES_MAX: usize = 4096;

/// Whether a run of `epochs` epochs keeps something of epoch `epoch` (1-based) when it keeps
/// at most `most` epochs' worth: every epoch when `epochs <= most`, else `most` epochs evenly
/// spread, the last always among them.
pub fn sampled_epoch(epoch: usize, epochs: usize, most: usize) -> bool {
    if epochs <= most {
        return true;
    }
    if most == 0 {
        return false;
    }
    // Epoch e is kept when floor(e·most/epochs) steps up at it: exactly `most` epochs,
    // epochs/most apart, the last one (most·epochs/epochs = most) included.
    (epoch * most) / epochs != ((epoch - 1) * most) / epochs
}

/// `items` thinned evenly to at most `most`, the first and the last kept.
pub fn thin_evenly<T>(items: Vec<T>, most: usize) -> Vec<T> {
    let n = items.len();
    if n <= most {
        return items;
    }
    if most < 2 {
        return items.into_iter().last().into_iter().take(most).collect();
    }
    // Index i·(n-1)/(most-1) for i in 0..most: strictly increasing, 0 and n-1 among them.
    let mut keep = (0..most).map(|i| i * (n - 1) / (most - 1)).peekable();
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| {
            if keep.peek() == Some(&i) {
                keep.next();
                Some(item)
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_epochs_are_capped_and_keep_the_last() {
        for epochs in [1, 63, 64, 65, 100, 9_999, 10_000] {
            let kept: Vec<usize> = (1..=epochs)
                .filter(|&e| sampled_epoch(e, epochs, GRAD_SAMPLE_EPOCHS))
                .collect();
            assert_eq!(kept.len(), epochs.min(GRAD_SAMPLE_EPOCHS), "{epochs}");
            assert_eq!(kept.last(), Some(&epochs), "{epochs}");
        }
    }

    #[test]
    fn thinning_keeps_the_ends_and_the_cap() {
        let v: Vec<usize> = (0..10_000).collect();
        let t = thin_evenly(v, 100);
        assert_eq!(t.len(), 100);
        assert_eq!((t[0], t[99]), (0, 9_999));
        assert!(t.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(thin_evenly(vec![1, 2, 3], 5), vec![1, 2, 3]);
        assert_eq!(thin_evenly(vec![1, 2, 3], 1), vec![3]);
    }
}
