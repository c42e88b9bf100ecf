//! Timing samples and the figures the report shows.

use std::time::Duration;

/// The figures of one measured case, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub median_ms: f64,
    pub p90_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub samples: usize,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none.
    pub fn of(samples: &[Duration]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        Some(Summary {
            median_ms: median(&ms),
            p90_ms: nearest_rank(&ms, 0.90),
            min_ms: ms[0],
            max_ms: ms[ms.len() - 1],
            samples: ms.len(),
        })
    }
}

/// The median of sorted, non-empty `ms` (the mean of the middle two for an even count).
fn median(ms: &[f64]) -> f64 {
    let mid = ms.len() / 2;
    if ms.len().is_multiple_of(2) {
        (ms[mid - 1] + ms[mid]) / 2.0
    } else {
        ms[mid]
    }
}

/// The `q` quantile of sorted, non-empty `ms` by the nearest-rank method: a value that was
/// actually measured, never an interpolation.
fn nearest_rank(ms: &[f64], q: f64) -> f64 {
    let rank = (q * ms.len() as f64).ceil() as usize;
    ms[rank.clamp(1, ms.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn empty_has_no_summary() {
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn odd_count_median_is_the_middle_value() {
        let s = Summary::of(&ms(&[5, 1, 3])).unwrap();
        assert_eq!(s.median_ms, 3.0);
        assert_eq!((s.min_ms, s.max_ms, s.samples), (1.0, 5.0, 3));
    }

    #[test]
    fn even_count_median_is_the_mean_of_the_middle_two() {
        assert_eq!(Summary::of(&ms(&[4, 1, 2, 3])).unwrap().median_ms, 2.5);
    }

    #[test]
    fn p90_is_a_measured_value() {
        let values: Vec<u64> = (1..=10).collect();
        assert_eq!(Summary::of(&ms(&values)).unwrap().p90_ms, 9.0);
        assert_eq!(Summary::of(&ms(&[7])).unwrap().p90_ms, 7.0);
    }
}
