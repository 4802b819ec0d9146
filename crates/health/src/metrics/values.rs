//! The metric kinds upstream uses: counters, gauges and histograms with
//! fixed buckets. Plain values; a [`super::family::Family`] guards them.

use super::labels::Labels;
use super::text::{Sample, write_sample_line};

/// A monotonic count (`_total`).
#[derive(Debug, Default, Clone)]
pub(super) struct Counter(u64);

impl Counter {
    /// Adds `n`.
    pub(super) fn inc_by(&mut self, n: u64) {
        self.0 = self.0.saturating_add(n);
    }
}

impl Sample for Counter {
    const KIND: &'static str = "counter";
    fn write_samples(&self, out: &mut String, name: &str, labels: &Labels) {
        write_sample_line(out, name, labels, None, self.0 as f64);
    }
}

/// A value that goes up and down.
#[derive(Debug, Default, Clone)]
pub(super) struct Gauge(f64);

impl Gauge {
    /// Sets the value.
    pub(super) fn set(&mut self, value: f64) {
        self.0 = value;
    }
}

impl Sample for Gauge {
    const KIND: &'static str = "gauge";
    fn write_samples(&self, out: &mut String, name: &str, labels: &Labels) {
        write_sample_line(out, name, labels, None, self.0);
    }
}

/// Observations counted into upper-bounded buckets (`v <= bound`), with
/// their sum and count.
#[derive(Debug, Clone)]
pub(super) struct Histogram {
    bounds: Vec<f64>,
    /// Observations per bucket (not cumulative); the last one is `+Inf`.
    counts: Vec<u64>,
    sum: f64,
}

impl Histogram {
    /// An empty histogram with these upper bounds (ascending, without `+Inf`).
    pub(super) fn new(bounds: Vec<f64>) -> Self {
        let counts = vec![0; bounds.len() + 1];
        Self { bounds, counts, sum: 0.0 }
    }

    /// Records one observation.
    pub(super) fn observe(&mut self, value: f64) {
        let bucket = self.bounds.iter().position(|bound| value <= *bound).unwrap_or(self.bounds.len());
        if let Some(count) = self.counts.get_mut(bucket) {
            *count += 1;
        }
        self.sum += value;
    }
}

impl Sample for Histogram {
    const KIND: &'static str = "histogram";
    fn write_samples(&self, out: &mut String, name: &str, labels: &Labels) {
        let bucket = format!("{name}_bucket");
        let mut cumulative = 0;
        let bounds = self.bounds.iter().copied().chain([f64::INFINITY]);
        for (bound, count) in bounds.zip(&self.counts) {
            cumulative += count;
            write_sample_line(out, &bucket, labels, Some(bound), cumulative as f64);
        }
        write_sample_line(out, &format!("{name}_sum"), labels, None, self.sum);
        write_sample_line(out, &format!("{name}_count"), labels, None, cumulative as f64);
    }
}

/// Go's `prometheus.ExponentialBuckets(start, factor, count)`.
pub(super) fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |b| Some(b * factor)).take(count).collect()
}

/// Go's `prometheus.LinearBuckets(start, width, count)`.
pub(super) fn linear_buckets(start: f64, width: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |b| Some(b + width)).take(count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_inclusive() {
        let mut histogram = Histogram::new(vec![0.5, 1.0]);
        for v in [0.5, 0.75, 3.0] {
            histogram.observe(v);
        }
        let mut out = String::new();
        histogram.write_samples(&mut out, "h", &Labels::none());
        assert_eq!(
            out,
            "h_bucket{le=\"0.5\"} 1\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4.25\nh_count 3\n"
        );
    }

    #[test]
    fn buckets_as_go_computes_them() {
        assert_eq!(exponential_buckets(0.001, 2.0, 3), vec![0.001, 0.002, 0.004]);
        assert_eq!(linear_buckets(60.0, 5.0, 3), vec![60.0, 65.0, 70.0]);
    }
}
