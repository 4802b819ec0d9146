//! Repeated measurements and their min / median / max, as every table of
//! the benchmark prints them.

use std::fmt;

/// The values one figure took over the repeats (seconds, MiB, counts...).
#[derive(Debug, Clone, Default)]
pub struct Samples {
    values: Vec<f64>,
}

impl Samples {
    /// Records one repeat's value.
    pub fn push(&mut self, value: f64) {
        self.values.push(value);
    }

    /// Number of values recorded.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Smallest, median (lower middle for an even count) and largest value.
    pub fn min_median_max(&self) -> Option<(f64, f64, f64)> {
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        let (first, last) = (sorted.first()?, sorted.last()?);
        Some((*first, sorted[(sorted.len() - 1) / 2], *last))
    }

    /// `min / median / max` with `decimals` digits, or `–` when empty.
    pub fn summary(&self, decimals: usize) -> String {
        match self.min_median_max() {
            None => "–".to_string(),
            Some((lo, _, hi)) if lo == hi => format!("{lo:.decimals$}"),
            Some((lo, mid, hi)) => format!("{lo:.decimals$} / {mid:.decimals$} / {hi:.decimals$}"),
        }
    }
}

impl fmt::Display for Samples {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary(3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let mut s = Samples::default();
        for v in [3.0, 1.0, 2.0] {
            s.push(v);
        }
        assert_eq!(s.min_median_max(), Some((1.0, 2.0, 3.0)));
        s.push(4.0);
        assert_eq!(s.min_median_max(), Some((1.0, 2.0, 4.0)));
        assert_eq!(Samples::default().summary(1), "–");
    }
}
