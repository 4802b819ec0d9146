//! Go's `strconv.FormatFloat(f, 'g', -1, 64)` as the Prometheus text
//! format uses it (`1`, `0.067403129`, `1.7953230261319466e+09`, `+Inf`).

/// `v` the way Go's Prometheus text encoder writes sample values and `le`
/// bounds.
pub(crate) fn format_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if v < 0.0 { "-" } else { "" };
    // Shortest 'g': exponent form when exp < -4 || exp >= 6 (Go uses
    // precision 6 for this decision when printing the shortest digits).
    if !(-4..6).contains(&exp) {
        format!("{sign}{}", exponent_form(&digits, exp))
    } else {
        format!("{sign}{}", fixed_form(&digits, exp))
    }
}

/// `d.ddde±XX`, at least two exponent digits.
fn exponent_form(digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let dot = if rest.is_empty() { "" } else { "." };
    let exp_sign = if exp < 0 { '-' } else { '+' };
    format!("{first}{dot}{rest}e{exp_sign}{:02}", exp.unsigned_abs())
}

/// Plain decimal with exactly the significant digits.
fn fixed_form(digits: &str, exp: i32) -> String {
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        let zeros = "0".repeat(point.unsigned_abs() as usize);
        return format!("0.{zeros}{digits}");
    }
    let point = point as usize;
    if digits.len() <= point {
        format!("{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{}.{}", &digits[..point], &digits[point..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_go_for_capture_values() {
        for (v, want) in [
            (1.0, "1"),
            (0.0, "0"),
            (-1.0, "-1"),
            (204.0, "204"),
            (15.0, "15"),
            (0.001, "0.001"),
            (16.384, "16.384"),
            (0.067403129, "0.067403129"),
            (1.7953230261319466e9, "1.7953230261319466e+09"),
            (1e6, "1e+06"),
            (999_999.0, "999999"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123.456, "123.456"),
            (-2.5e-7, "-2.5e-07"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            (1e21, "1e+21"),
            (300.0, "300"),
        ] {
            assert_eq!(format_float(v), want, "{v}");
        }
    }
}
