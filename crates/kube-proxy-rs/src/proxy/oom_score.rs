//! `--oom-score-adj` / `oomScoreAdj`: the proxy's own OOM score adjustment
//! (upstream's default -999 keeps the node's datapath owner alive under
//! memory pressure), written to `/proc/self/oom_score_adj` at start-up as
//! upstream does. A kernel or container that refuses it is a warning.

const OOM_SCORE_ADJ: &str = "/proc/self/oom_score_adj";

/// Applies `value`; logs, never fails.
pub fn apply(value: i32) {
    match std::fs::write(OOM_SCORE_ADJ, value.to_string()) {
        Ok(()) => tracing::debug!(value, "applied oomScoreAdj"),
        Err(err) => tracing::warn!(value, %err, "cannot apply oomScoreAdj; going on"),
    }
}
