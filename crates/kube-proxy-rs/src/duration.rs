//! Go `time.Duration` text: an exact port of `time.ParseDuration` and of
//! `Duration.String()`, so every period upstream kube-proxy accepts on its
//! command line or in its config file (`2h22m`, `1m30.5s`, `300ms`) is read
//! the same here, every form it rejects (`5`, `1x`, ``) is rejected with
//! Go's message, and `--write-config-to` prints periods as Go does (`15m0s`).

use std::fmt;
use std::str::FromStr;

/// A signed span of nanoseconds, as Go's `time.Duration` is.
///
/// Signed because Go accepts `-1s`; validation rejects negative periods and
/// then converts to [`std::time::Duration`] with [`GoDuration::to_std`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(i64);

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
/// `1 << 63`: one past `i64::MAX`, the bound Go checks against.
const LIMIT: u64 = 1 << 63;

/// Why a duration string was rejected; the text is Go's own message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the form `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or out of range.
    #[error("time: invalid duration \"{0}\"")]
    Invalid(String),
    /// A number with no unit after it, such as `5`.
    #[error("time: missing unit in duration \"{0}\"")]
    MissingUnit(String),
    /// A unit Go does not know, such as the `x` of `1x`.
    #[error("time: unknown unit \"{unit}\" in duration \"{input}\"")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole input.
        input: String,
    },
}

impl GoDuration {
    /// Zero, which Go prints as `0s`.
    pub const ZERO: GoDuration = GoDuration(0);

    /// A duration of `nanos` nanoseconds (may be negative).
    pub const fn from_nanos(nanos: i64) -> Self {
        GoDuration(nanos)
    }

    /// A duration of whole seconds.
    pub const fn from_secs(secs: i64) -> Self {
        GoDuration::from_nanos(secs * SECOND as i64)
    }

    /// The length in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// The same span as a [`std::time::Duration`], or `None` when negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.as_nanos())
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    /// Parses Go duration text exactly as `time.ParseDuration` does.
    pub fn parse(input: &str) -> Result<Self, DurationError> {
        let invalid = || DurationError::Invalid(input.to_string());
        let (neg, mut rest) = split_sign(input);
        if rest == "0" {
            return Ok(GoDuration(0));
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total: u64 = 0;
        while !rest.is_empty() {
            let (term, tail) = parse_term(rest, input)?;
            total = total
                .checked_add(term)
                .filter(|t| *t <= LIMIT)
                .ok_or_else(invalid)?;
            rest = tail;
        }
        if neg {
            // -(1<<63) is i64::MIN, which Go accepts.
            return Ok(GoDuration((total as i128).wrapping_neg() as i64));
        }
        i64::try_from(total).map(GoDuration).map_err(|_| invalid())
    }
}

/// Strips one leading `+` or `-`; returns whether it was `-`.
fn split_sign(input: &str) -> (bool, &str) {
    match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    }
}

/// Parses one `number unit` term from the front of `s`; returns its
/// nanoseconds and the rest of the string.
fn parse_term<'a>(s: &'a str, input: &str) -> Result<(u64, &'a str), DurationError> {
    let invalid = || DurationError::Invalid(input.to_string());
    let first = s.as_bytes()[0];
    if !(first == b'.' || first.is_ascii_digit()) {
        return Err(invalid());
    }
    let (whole, s_after_int) = leading_int(s).ok_or_else(invalid)?;
    let had_int = s_after_int.len() != s.len();
    let (mut frac, mut scale, mut s) = (0u64, 1f64, s_after_int);
    let mut had_frac = false;
    if let Some(after_dot) = s.strip_prefix('.') {
        let (f, sc, tail) = leading_fraction(after_dot);
        had_frac = tail.len() != after_dot.len();
        (frac, scale, s) = (f, sc, tail);
    }
    if !had_int && !had_frac {
        return Err(invalid());
    }
    let unit_len = s
        .bytes()
        .take_while(|c| !(*c == b'.' || c.is_ascii_digit()))
        .count();
    if unit_len == 0 {
        return Err(DurationError::MissingUnit(input.to_string()));
    }
    let (unit_text, rest) = s.split_at(unit_len);
    let unit = unit_nanos(unit_text).ok_or_else(|| DurationError::UnknownUnit {
        unit: unit_text.to_string(),
        input: input.to_string(),
    })?;
    if whole > LIMIT / unit {
        return Err(invalid());
    }
    let mut value = whole * unit;
    if frac > 0 {
        value += (frac as f64 * (unit as f64 / scale)) as u64;
        if value > LIMIT {
            return Err(invalid());
        }
    }
    Ok((value, rest))
}

/// Consumes leading digits; `None` on overflow past `1 << 63`.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: u64 = 0;
    for c in s.as_bytes()[..digits].iter() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some((x, &s[digits..]))
}

/// Consumes leading fraction digits; digits past what fits are ignored,
/// as Go does. Returns the value, its scale (10^digits kept) and the rest.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for c in s.as_bytes()[..digits].iter() {
        if overflow {
            continue;
        }
        if x > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

/// Nanoseconds per unit for Go's unit names.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => NANOSECOND,
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// `v / 10^prec` as Go's fmtFrac writes it: `.` and the digits without
/// trailing zeros, or nothing when the fraction is zero.
fn fraction_text(v: u64, prec: u32) -> String {
    let frac = v % 10u64.pow(prec);
    if frac == 0 {
        return String::new();
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    format!(".{}", digits.trim_end_matches('0'))
}

impl fmt::Display for GoDuration {
    /// Formats as Go's `Duration.String()`: `1h2m3.5s`, `15m0s`, `1.5ms`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let u = self.0.unsigned_abs();
        if u == 0 {
            return f.write_str("0s");
        }
        if u < SECOND {
            let (prec, unit) = match u {
                _ if u < MICROSECOND => (0, "ns"),
                _ if u < MILLISECOND => (3, "\u{b5}s"),
                _ => (6, "ms"),
            };
            let whole = u / 10u64.pow(prec);
            return write!(f, "{sign}{whole}{}{unit}", fraction_text(u, prec));
        }
        let frac = fraction_text(u, 9);
        let secs = u / SECOND;
        let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
        match (h, secs / 60) {
            (0, 0) => write!(f, "{sign}{s}{frac}s"),
            (0, _) => write!(f, "{sign}{m}m{s}{frac}s"),
            _ => write!(f, "{sign}{h}h{m}m{s}{frac}s"),
        }
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GoDuration::parse(s)
    }
}

impl From<std::time::Duration> for GoDuration {
    /// Saturates at Go's largest duration (about 292 years).
    fn from(d: std::time::Duration) -> Self {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl<'de> serde::Deserialize<'de> for GoDuration {
    /// Reads a YAML scalar as Go text (`30s`); a bare `0` is accepted too.
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = GoDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Go duration such as \"30s\", \"1m30s\" or \"2h22m\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GoDuration, E> {
                GoDuration::parse(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<GoDuration, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<GoDuration, E> {
                self.visit_str(&v.to_string())
            }
        }
        de.deserialize_str(Visitor)
    }
}

impl serde::Serialize for GoDuration {
    /// Writes Go's text form, as `--write-config-to` does.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ns(s: &str) -> i64 {
        GoDuration::parse(s).unwrap().as_nanos()
    }

    #[test]
    fn parses_the_forms_upstream_documents() {
        assert_eq!(ns("2h22m"), (2 * 3600 + 22 * 60) * 1_000_000_000);
        assert_eq!(ns("1m30.5s"), 90_500_000_000);
        assert_eq!(ns("300ms"), 300_000_000);
        assert_eq!(ns("1us"), 1_000);
        assert_eq!(ns("1µs"), 1_000);
        assert_eq!(ns("1\u{3bc}s"), 1_000);
        assert_eq!(ns("0"), 0);
        assert_eq!(ns("-1s"), -1_000_000_000);
        assert_eq!(ns("+5s"), 5_000_000_000);
        assert_eq!(ns("1h"), 3_600_000_000_000);
        assert_eq!(ns("5s"), 5_000_000_000);
        assert_eq!(ns("1m"), 60_000_000_000);
        assert_eq!(ns("10ns"), 10);
        assert_eq!(ns(".5s"), 500_000_000);
        assert_eq!(ns("1.s"), 1_000_000_000);
        assert_eq!(ns("1.004s"), 1_004_000_000);
        assert_eq!(ns("100.00100s"), 100_001_000_000);
        assert_eq!(ns("0s"), 0);
        assert_eq!(ns("-0"), 0);
        assert_eq!(ns("1h1m1s1ms1us1ns"), 3_661_001_001_001);
        assert_eq!(ns("9223372036854775807ns"), i64::MAX);
        assert_eq!(ns("-9223372036854775808ns"), i64::MIN);
        assert_eq!(ns("0.3333333333333333333h"), 1_200_000_000_000);
    }

    #[test]
    fn rejects_what_go_rejects_with_gos_message() {
        let err = |s: &str| GoDuration::parse(s).unwrap_err().to_string();
        assert_eq!(err("5"), "time: missing unit in duration \"5\"");
        assert_eq!(err("1x"), "time: unknown unit \"x\" in duration \"1x\"");
        assert_eq!(err(""), "time: invalid duration \"\"");
        assert_eq!(err("-"), "time: invalid duration \"-\"");
        assert_eq!(err("s"), "time: invalid duration \"s\"");
        assert_eq!(err("."), "time: invalid duration \".\"");
        assert_eq!(err("-.s"), "time: invalid duration \"-.s\"");
        assert_eq!(err(".s"), "time: invalid duration \".s\"");
        assert_eq!(err("+.s"), "time: invalid duration \"+.s\"");
        assert_eq!(err("1d"), "time: unknown unit \"d\" in duration \"1d\"");
        assert_eq!(err("3000000h"), "time: invalid duration \"3000000h\"");
        assert_eq!(
            err("9223372036854775808ns"),
            "time: invalid duration \"9223372036854775808ns\""
        );
        assert_eq!(err("1s "), "time: unknown unit \"s \" in duration \"1s \"");
        assert_eq!(err(" 1s"), "time: invalid duration \" 1s\"");
    }

    #[test]
    fn formats_like_go_string() {
        let s = |n: i64| GoDuration::from_nanos(n).to_string();
        assert_eq!(s(0), "0s");
        assert_eq!(s(1_000_000_000), "1s");
        assert_eq!(s(15 * 60 * 1_000_000_000), "15m0s");
        assert_eq!(s(30 * 1_000_000_000), "30s");
        assert_eq!(s(3_600_000_000_000), "1h0m0s");
        assert_eq!(s(24 * 3_600_000_000_000), "24h0m0s");
        assert_eq!(s(90_500_000_000), "1m30.5s");
        assert_eq!(s(8_520_000_000_000), "2h22m0s");
        assert_eq!(s(300_000_000), "300ms");
        assert_eq!(s(250_000_000), "250ms");
        assert_eq!(s(1_500_000), "1.5ms");
        assert_eq!(s(1_000), "1µs");
        assert_eq!(s(1), "1ns");
        assert_eq!(s(-1_000_000_000), "-1s");
        assert_eq!(s(1_000_000_001), "1.000000001s");
        assert_eq!(s(i64::MAX), "2562047h47m16.854775807s");
        assert_eq!(s(i64::MIN), "-2562047h47m16.854775808s");
    }

    #[test]
    fn text_round_trips_through_parse() {
        for text in [
            "0s", "1s", "15m0s", "1h0m0s", "1m30.5s", "300ms", "1µs", "-1s", "1.5ms",
        ] {
            let d = GoDuration::parse(text).unwrap();
            assert_eq!(d.to_string(), text);
        }
    }

    #[test]
    fn converts_to_std_only_when_not_negative() {
        assert_eq!(
            GoDuration::from_secs(2).to_std(),
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(GoDuration::from_secs(-2).to_std(), None);
    }
}
