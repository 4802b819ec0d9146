//! The statistics behind the randomized checks, so each bound is computed
//! (not guessed) and the chance of a false failure is stated.
//!
//! A service with k endpoints picks one uniformly at random per new
//! connection, independently (iptables: `-m statistic --mode random`;
//! nftables: `numgen random`; IPVS `rr` is even stricter). So over n
//! connections the count of one endpoint is Binomial(n, 1/k).

/// The smallest n such that, with k equally likely endpoints, the chance
/// that some endpoint gets none of n connections is at most `alpha`:
/// P(some endpoint missed) <= k * (1 - 1/k)^n (union bound).
pub fn attempts_to_see_all(k: usize, alpha: f64) -> usize {
    let miss_one = 1.0 - 1.0 / k as f64;
    let n = ((alpha / k as f64).ln() / miss_one.ln()).ceil();
    n.max(1.0) as usize
}

/// The acceptance interval [lo, hi] for X ~ Binomial(n, p): the widest
/// tails that each carry probability at most `alpha_per_tail`, i.e.
/// P(X < lo) <= alpha_per_tail and P(X > hi) <= alpha_per_tail, with lo as
/// large and hi as small as that allows. Computed exactly from the pmf.
pub fn acceptance_interval(n: u32, p: f64, alpha_per_tail: f64) -> (u32, u32) {
    let pmf = pmf(n, p);
    let mut lo = 0;
    let mut below = 0.0;
    while lo < n && below + pmf[lo as usize] <= alpha_per_tail {
        below += pmf[lo as usize];
        lo += 1;
    }
    let mut hi = n;
    let mut above = 0.0;
    while hi > 0 && above + pmf[hi as usize] <= alpha_per_tail {
        above += pmf[hi as usize];
        hi -= 1;
    }
    (lo, hi)
}

/// P(X = i) for i in 0..=n, computed in log space (no underflow for n in
/// the thousands).
fn pmf(n: u32, p: f64) -> Vec<f64> {
    let ratio = (p / (1.0 - p)).ln();
    let mut ln = n as f64 * (1.0 - p).ln();
    let mut out = Vec::with_capacity(n as usize + 1);
    for i in 0..=n {
        out.push(ln.exp());
        ln += ((n - i) as f64).ln() - ((i + 1) as f64).ln() + ratio;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmf_sums_to_one_and_bounds_are_symmetric_for_half() {
        let total: f64 = pmf(1000, 0.25).iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let (lo, hi) = acceptance_interval(100, 0.5, 1e-3);
        assert_eq!(lo + hi, 100);
        assert!(lo > 30 && lo < 50, "{lo}");
    }

    #[test]
    fn attempts_to_see_all_meets_its_bound() {
        let n = attempts_to_see_all(2, 1e-7);
        assert!(2.0 * 0.5f64.powi(n as i32) <= 1e-7);
        assert!(2.0 * 0.5f64.powi(n as i32 - 1) > 1e-7);
    }
}
