//! The Prometheus text format 0.0.4 exactly as upstream's Go registry
//! writes it: families sorted by name, HELP and TYPE lines, series sorted
//! by label values, label names in sorted order with `le` last, histogram
//! buckets before `_sum` and `_count`, Go's float formatting, no family
//! without series, no `# EOF`.

use super::labels::Labels;
use crate::gofmt::format_float;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A metric value that knows how to print its sample lines.
pub(super) trait Sample {
    /// The `# TYPE` word: `counter`, `gauge` or `histogram`.
    const KIND: &'static str;

    /// Writes the sample lines of one series named `name` with `labels`.
    fn write_samples(&self, out: &mut String, name: &str, labels: &Labels);
}

/// One scrape being written: each family's text, kept in name order.
#[derive(Default)]
pub(super) struct Exposition {
    families: BTreeMap<String, String>,
}

impl Exposition {
    /// Adds the family `name` with `series`; a family without series is
    /// left out, as Go does.
    pub(super) fn add<'a, M: Sample + 'a>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (&'a Labels, &'a M)>,
    ) {
        let mut text = String::new();
        for (labels, metric) in series {
            metric.write_samples(&mut text, name, labels);
        }
        if text.is_empty() {
            return;
        }
        let mut family = format!("# HELP {name} {}\n# TYPE {name} {}\n", escape_help(help), M::KIND);
        family.push_str(&text);
        self.families.insert(name.to_string(), family);
    }

    /// The whole scrape.
    pub(super) fn finish(self) -> String {
        self.families.into_values().collect()
    }
}

/// `name{labels[,le="bound"]} value` and a newline.
pub(super) fn write_sample_line(out: &mut String, name: &str, labels: &Labels, le: Option<f64>, value: f64) {
    out.push_str(name);
    let le = le.map(format_float);
    let pairs = labels.pairs().iter().map(|(k, v)| (*k, v.as_str())).chain(le.as_deref().map(|le| ("le", le)));
    for (i, (label, label_value)) in pairs.enumerate() {
        out.push(if i == 0 { '{' } else { ',' });
        let _ = write!(out, "{label}=\"{}\"", escape_label_value(label_value));
    }
    if !labels.pairs().is_empty() || le.is_some() {
        out.push('}');
    }
    let _ = writeln!(out, " {}", format_float(value));
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::{Exposition, Labels, Sample, write_sample_line};

    struct Value(f64);

    impl Sample for Value {
        const KIND: &'static str = "gauge";
        fn write_samples(&self, out: &mut String, name: &str, labels: &Labels) {
            write_sample_line(out, name, labels, None, self.0);
        }
    }

    #[test]
    fn families_sorted_by_name_and_empty_ones_left_out() {
        let mut exposition = Exposition::default();
        let none = Labels::none();
        exposition.add("z_gauge", "[ALPHA] Z", [(&none, &Value(1.7953230261319466e9))]);
        exposition.add::<Value>("m_empty", "[ALPHA] nothing", []);
        exposition.add("a_gauge", "[ALPHA] A\\b\nc", [(&none, &Value(3.0))]);
        assert_eq!(
            exposition.finish(),
            concat!(
                "# HELP a_gauge [ALPHA] A\\\\b\\nc\n",
                "# TYPE a_gauge gauge\n",
                "a_gauge 3\n",
                "# HELP z_gauge [ALPHA] Z\n",
                "# TYPE z_gauge gauge\n",
                "z_gauge 1.7953230261319466e+09\n",
            )
        );
    }

    #[test]
    fn label_values_escaped_and_le_last() {
        let labels = Labels::new(vec![("table", "a\"b\\".to_string()), ("ip_family", "IPv4".to_string())]);
        let mut out = String::new();
        write_sample_line(&mut out, "x_bucket", &labels, Some(0.25), 2.0);
        write_sample_line(&mut out, "x_bucket", &labels, Some(f64::INFINITY), 2.0);
        assert_eq!(
            out,
            concat!(
                "x_bucket{ip_family=\"IPv4\",table=\"a\\\"b\\\\\",le=\"0.25\"} 2\n",
                "x_bucket{ip_family=\"IPv4\",table=\"a\\\"b\\\\\",le=\"+Inf\"} 2\n",
            )
        );
    }
}
