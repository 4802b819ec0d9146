//! Turns prometheus-client's OpenMetrics text into the Prometheus text
//! format 0.0.4 exactly as upstream's Go registry writes it: families
//! sorted by name, counters named with `_total` in HELP/TYPE, series sorted
//! by label values, histogram buckets before `_sum` and `_count`, `le` as
//! the last label, Go's float formatting, no empty families, no `# EOF`.

use crate::gofmt::format_float;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One metric family as parsed from the OpenMetrics text.
#[derive(Default)]
struct ParsedFamily {
    name: String,
    help: String,
    kind: String,
    /// Series keyed by their labels (without `le`), in sorted label order.
    series: BTreeMap<Labels, Vec<Sample>>,
}

/// Label name and value pairs.
type Labels = Vec<(String, String)>;

/// One sample line.
struct Sample {
    name: String,
    le: Option<String>,
    value: String,
}

/// Re-encodes `openmetrics` (prometheus-client's text output) in the
/// Prometheus text format upstream kube-proxy serves.
pub fn render_prometheus_text(openmetrics: &str) -> String {
    let mut families: BTreeMap<String, ParsedFamily> = BTreeMap::new();
    let mut current: Option<ParsedFamily> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            finish_family(&mut families, current.take());
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            // prometheus-client appends a full stop to every help text;
            // upstream's help texts have none.
            let help = help.strip_suffix('.').unwrap_or(help);
            current = Some(ParsedFamily { name: name.to_string(), help: help.to_string(), ..ParsedFamily::default() });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let (Some(family), Some((_, kind))) = (current.as_mut(), rest.split_once(' ')) {
                family.kind = kind.to_string();
            }
        } else if line.starts_with('#') || line.is_empty() {
            // `# UNIT`, `# EOF`: nothing to carry over.
        } else if let (Some(family), Some((name, labels, value))) = (current.as_mut(), parse_sample(line)) {
            add_sample(family, name, labels, value);
        }
    }
    finish_family(&mut families, current.take());

    let mut out = String::new();
    for (name, family) in &families {
        write_family(&mut out, name, family);
    }
    out
}

fn finish_family(families: &mut BTreeMap<String, ParsedFamily>, family: Option<ParsedFamily>) {
    let Some(family) = family else { return };
    if family.series.is_empty() {
        return; // Go does not print families without series.
    }
    let name = if family.kind == "counter" { format!("{}_total", family.name) } else { family.name.clone() };
    families.insert(name, family);
}

fn add_sample(family: &mut ParsedFamily, name: String, labels: Labels, value: String) {
    let mut le = None;
    let mut key: Labels = Vec::with_capacity(labels.len());
    for (label, label_value) in labels {
        if label == "le" && family.kind == "histogram" {
            le = Some(label_value);
        } else {
            key.push((label, label_value));
        }
    }
    key.sort();
    family.series.entry(key).or_default().push(Sample { name, le, value });
}

fn write_family(out: &mut String, name: &str, family: &ParsedFamily) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(&family.help));
    let _ = writeln!(out, "# TYPE {name} {}", family.kind);
    for (labels, samples) in &family.series {
        let mut ordered: Vec<&Sample> = samples.iter().collect();
        // Go: every bucket, then _sum, then _count.
        ordered.sort_by_key(|sample| histogram_rank(&sample.name));
        for sample in ordered {
            write_sample(out, sample, labels);
        }
    }
}

fn histogram_rank(sample_name: &str) -> u8 {
    if sample_name.ends_with("_sum") {
        1
    } else if sample_name.ends_with("_count") {
        2
    } else {
        0
    }
}

fn write_sample(out: &mut String, sample: &Sample, labels: &[(String, String)]) {
    out.push_str(&sample.name);
    let mut pairs: Vec<(&str, String)> = labels.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    if let Some(le) = &sample.le {
        pairs.push(("le", go_number(le)));
    }
    if !pairs.is_empty() {
        out.push('{');
        for (i, (label, value)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{label}=\"{}\"", escape_label_value(value));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", go_number(&sample.value));
}

/// A number printed by prometheus-client (`1.0`, `1.7953230261319466e9`,
/// `+Inf`) as Go prints it.
fn go_number(text: &str) -> String {
    match text {
        "+Inf" => "+Inf".to_string(),
        "-Inf" => "-Inf".to_string(),
        "NaN" => "NaN".to_string(),
        _ => text.parse::<f64>().map(format_float).unwrap_or_else(|_| text.to_string()),
    }
}

/// Splits `name{a="b",c="d"} value [timestamp]` into its parts, unescaping
/// label values.
fn parse_sample(line: &str) -> Option<(String, Labels, String)> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let (labels, rest) = if line[name_end..].starts_with('{') {
        parse_labels(&line[name_end + 1..])?
    } else {
        (Vec::new(), &line[name_end..])
    };
    let value = rest.split_whitespace().next()?.to_string();
    Some((name, labels, value))
}

/// Parses `a="b",c="d"}` and returns the labels and what follows the `}`.
fn parse_labels(mut text: &str) -> Option<(Labels, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches(',');
        if let Some(rest) = text.strip_prefix('}') {
            return Some((labels, rest));
        }
        let (name, rest) = text.split_once("=\"")?;
        let (value, rest) = take_quoted(rest)?;
        labels.push((name.to_string(), value));
        text = rest;
    }
}

/// Reads an escaped label value up to its closing quote.
fn take_quoted(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &text[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => value.push('\n'),
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::render_prometheus_text;

    #[test]
    fn reencodes_counters_histograms_and_gauges_like_go() {
        let openmetrics = concat!(
            "# HELP kubeproxy_z_gauge [ALPHA] A gauge.\n",
            "# TYPE kubeproxy_z_gauge gauge\n",
            "kubeproxy_z_gauge{ip_family=\"IPv6\"} 1.7953230261319466e9\n",
            "kubeproxy_z_gauge{ip_family=\"IPv4\"} 3\n",
            "# HELP kubeproxy_a_count [ALPHA] A counter.\n",
            "# TYPE kubeproxy_a_count counter\n",
            "kubeproxy_a_count_total 21\n",
            "# HELP kubeproxy_empty [ALPHA] Nothing yet.\n",
            "# TYPE kubeproxy_empty counter\n",
            "# HELP kubeproxy_h_seconds [ALPHA] A histogram.\n",
            "# TYPE kubeproxy_h_seconds histogram\n",
            "kubeproxy_h_seconds_sum{ip_family=\"IPv4\"} 0.067403129\n",
            "kubeproxy_h_seconds_count{ip_family=\"IPv4\"} 1\n",
            "kubeproxy_h_seconds_bucket{le=\"0.001\",ip_family=\"IPv4\"} 0\n",
            "kubeproxy_h_seconds_bucket{le=\"1.0\",ip_family=\"IPv4\"} 1\n",
            "kubeproxy_h_seconds_bucket{le=\"+Inf\",ip_family=\"IPv4\"} 1\n",
            "# EOF\n",
        );
        assert_eq!(
            render_prometheus_text(openmetrics),
            concat!(
                "# HELP kubeproxy_a_count_total [ALPHA] A counter\n",
                "# TYPE kubeproxy_a_count_total counter\n",
                "kubeproxy_a_count_total 21\n",
                "# HELP kubeproxy_h_seconds [ALPHA] A histogram\n",
                "# TYPE kubeproxy_h_seconds histogram\n",
                "kubeproxy_h_seconds_bucket{ip_family=\"IPv4\",le=\"0.001\"} 0\n",
                "kubeproxy_h_seconds_bucket{ip_family=\"IPv4\",le=\"1\"} 1\n",
                "kubeproxy_h_seconds_bucket{ip_family=\"IPv4\",le=\"+Inf\"} 1\n",
                "kubeproxy_h_seconds_sum{ip_family=\"IPv4\"} 0.067403129\n",
                "kubeproxy_h_seconds_count{ip_family=\"IPv4\"} 1\n",
                "# HELP kubeproxy_z_gauge [ALPHA] A gauge\n",
                "# TYPE kubeproxy_z_gauge gauge\n",
                "kubeproxy_z_gauge{ip_family=\"IPv4\"} 3\n",
                "kubeproxy_z_gauge{ip_family=\"IPv6\"} 1.7953230261319466e+09\n",
            )
        );
    }

    #[test]
    fn keeps_escaped_label_values() {
        let text = "# HELP x_total h.\n# TYPE x_total gauge\nx_total{table=\"a\\\"b\",z=\"1\"} 2\n";
        assert_eq!(
            render_prometheus_text(text),
            "# HELP x_total h\n# TYPE x_total gauge\nx_total{table=\"a\\\"b\",z=\"1\"} 2\n"
        );
    }
}
