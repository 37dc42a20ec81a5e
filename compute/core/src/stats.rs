//! Statistics of a run's epoch times: the median after the warm-up epoch, how many epochs it
//! rests on, and the spread between the slowest and the fastest. Ours and PyTorch's runs are
//! summed up by the same functions.

/// How many runs of the same duel a speed-up needs before the verdict states it.
pub const MIN_RUNS: usize = 3;

/// The median epoch time of a run whose epochs took `ms` (in order): the median of epochs 2..
/// (epoch 1 carries the warm-up) or of the only one; NaN without an epoch. Our contestants and
/// PyTorch's runs are both summed up by it.
pub fn median_after_warmup(ms: &[f64]) -> f64 {
    let mut ms: Vec<f64> = ms.iter().skip(usize::from(ms.len() > 1)).copied().collect();
    ms.sort_by(f64::total_cmp);
    match ms.len() {
        0 => f64::NAN,
        l if l % 2 == 1 => ms[l / 2],
        l => (ms[l / 2 - 1] + ms[l / 2]) / 2.0,
    }
}

/// How many epochs [`median_after_warmup`] rests on for a run of `epochs` epochs.
pub fn timed_epoch_count(epochs: usize) -> usize {
    if epochs > 1 {
        epochs - 1
    } else {
        epochs
    }
}

/// The largest of `ms` over the smallest; `None` with fewer than two values or one that is
/// not positive and finite.
pub fn epoch_spread(ms: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut lo, mut hi, mut n) = (f64::INFINITY, 0.0f64, 0usize);
    for v in ms {
        if !(v.is_finite() && v > 0.0) {
            return None;
        }
        lo = lo.min(v);
        hi = hi.max(v);
        n += 1;
    }
    (n >= 2).then(|| hi / lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_spread_is_slowest_over_fastest() {
        assert_eq!(epoch_spread([100.0, 130.0, 110.0].into_iter()), Some(1.3));
        assert_eq!(epoch_spread([100.0].into_iter()), None);
        assert_eq!(epoch_spread([100.0, 0.0].into_iter()), None);
    }
}
