//! Go's `time.RFC3339Nano` (what `encoding/json` writes for a `time.Time`),
//! in UTC.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What Go's JSON encoding writes for the zero `time.Time`.
pub(crate) const GO_ZERO_TIME_JSON: &str = "0001-01-01T00:00:00Z";

/// `t` as RFC 3339 with nanoseconds, trailing zeros of the fraction
/// dropped (and the dot with them), in UTC: `2026-11-22T04:50:26.35149223Z`.
pub(crate) fn format_rfc3339_nano(t: SystemTime) -> String {
    let (secs, nanos) = split_unix(t);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Seconds since the Unix epoch as Go computes it for gauges set to a time:
/// `float64(t.UnixNano()) / 1e9`.
pub(crate) fn unix_seconds(t: SystemTime) -> f64 {
    let (secs, nanos) = split_unix(t);
    let unix_nanos = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    // Go converts the int64 nanosecond count; the same rounding happens here.
    (unix_nanos as i64) as f64 / 1e9
}

/// Whole seconds since the epoch (floored) and the nanoseconds past them.
fn split_unix(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (clamp_secs(d), d.subsec_nanos()),
        Err(before) => {
            let d = before.duration();
            let secs = -clamp_secs(d);
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, 1_000_000_000 - n),
            }
        }
    }
}

fn clamp_secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian;
/// Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, nanos: u32) -> SystemTime {
        UNIX_EPOCH + Duration::new(secs, nanos)
    }

    #[test]
    fn formats_like_go_json() {
        // Values from the upstream capture (node-healthz.txt).
        assert_eq!(format_rfc3339_nano(at(1_795_323_026, 351_492_230)), "2026-11-22T04:50:26.35149223Z");
        assert_eq!(format_rfc3339_nano(at(1_795_323_028, 761_537_978)), "2026-11-22T04:50:28.761537978Z");
        assert_eq!(format_rfc3339_nano(at(0, 0)), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339_nano(at(951_782_400, 500_000_000)), "2000-02-29T00:00:00.5Z");
    }

    #[test]
    fn formats_go_zero_time() {
        let zero = UNIX_EPOCH - Duration::from_secs(62_135_596_800);
        assert_eq!(format_rfc3339_nano(zero), GO_ZERO_TIME_JSON);
        assert_eq!(format_rfc3339_nano(zero + Duration::from_millis(1)), "0001-01-01T00:00:00.001Z");
    }

    #[test]
    fn unix_seconds_matches_go_gauge() {
        assert_eq!(unix_seconds(at(1_795_323_026, 288_549_200)), 1_795_323_026_288_549_200i64 as f64 / 1e9);
        assert_eq!(unix_seconds(at(5, 0)), 5.0);
    }
}
