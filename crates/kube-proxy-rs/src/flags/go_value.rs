//! Value parsers for flag text that follow Go's rules: `strconv.ParseBool`
//! for booleans, `time.ParseDuration` for periods, and component-base's
//! `key=bool` pairs for `--feature-gates`.

use crate::duration::{DurationError, GoDuration};

/// One `--feature-gates` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGate {
    /// The gate's name.
    pub name: String,
    /// Whether it is switched on.
    pub enabled: bool,
}

/// Parses a boolean as Go's `strconv.ParseBool`: 1, t, T, TRUE, true, True,
/// 0, f, F, FALSE, false, False.
pub fn parse_go_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "strconv.ParseBool: parsing \"{text}\": invalid syntax"
        )),
    }
}

/// Parses a Go duration (`30s`, `2h22m`).
pub fn parse_duration(text: &str) -> Result<GoDuration, DurationError> {
    GoDuration::parse(text)
}

/// Parses one `Name=bool` pair of `--feature-gates`.
pub fn parse_feature_gate(text: &str) -> Result<FeatureGate, String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("missing bool value for {text}"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("missing feature name in \"{text}\""));
    }
    let enabled = parse_go_bool(value.trim())
        .map_err(|_| format!("invalid value of {name}={value}, err: invalid syntax"))?;
    Ok(FeatureGate {
        name: name.to_string(),
        enabled,
    })
}
