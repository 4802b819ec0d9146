//! Just enough Markdown for the docs test: the links of a file (outside
//! code), its headings' anchors as GitHub makes them, and the commands in
//! the code blocks of a section.

use std::collections::BTreeSet;

/// One link: where it points and the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The target as written (`path`, `path#anchor`, `#anchor`, a URL).
    pub target: String,
    /// 1-based line number.
    pub line: usize,
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, line))
    })
}

/// `line` with its inline code spans removed.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// Every inline link and image (`[text](target)`, `![alt](target "title")`)
/// and reference definition (`[label]: target`) outside code.
pub fn links(text: &str) -> Vec<Link> {
    let mut links = Vec::new();
    for (line_no, line) in prose_lines(text) {
        let line = without_code_spans(line);
        if let Some(rest) = line.trim_start().strip_prefix('[')
            && let Some((_, after)) = rest.split_once("]:")
            && let Some(target) = after.split_whitespace().next()
        {
            links.push(Link { target: target.to_string(), line: line_no });
        }
        let mut from = 0;
        while let Some(pos) = line[from..].find("](") {
            let start = from + pos + 2;
            let end = line[start..].find(')').map_or(line.len(), |e| start + e);
            if let Some(target) = line[start..end].split_whitespace().next() {
                links.push(Link { target: target.to_string(), line: line_no });
            }
            from = end;
        }
    }
    links
}

/// The anchors GitHub gives the headings of `text` (`#`-headings outside
/// code): the heading's text lowercased, without its markup and
/// punctuation, spaces as hyphens; a repeated one gets `-1`, `-2`…
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = heading_text(line) else { continue };
        let slug = slug(&heading);
        let mut unique = slug.clone();
        let mut n = 0;
        while anchors.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        anchors.insert(unique);
    }
    anchors
}

/// The text of an ATX heading (`## Text`), links reduced to their text.
fn heading_text(line: &str) -> Option<String> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let text = line[hashes..].strip_prefix(' ')?;
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("](") {
        let close = rest[open..].find(')').map_or(rest.len(), |c| open + c + 1);
        out.push_str(&rest[..open]);
        rest = &rest[close..];
    }
    out.push_str(rest);
    Some(out.replace('[', ""))
}

/// GitHub's anchor for a heading's text.
pub fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The body of the `index`-th `## ` section (0-based), up to the next.
pub fn section(text: &str, index: usize) -> Option<String> {
    let mut sections = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with("## ") {
            sections.extend(current.take().map(|lines| lines.join("\n")));
            current = Some(vec![line]);
        } else if let Some(lines) = current.as_mut() {
            lines.push(line);
        }
    }
    sections.extend(current.map(|lines| lines.join("\n")));
    sections.into_iter().nth(index)
}

/// The commands in the fenced `sh` blocks of `text`: continuation lines
/// (`\`) joined, comments and trailing `# ...` dropped.
pub fn commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if !in_sh || trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        let code = trimmed.split(" #").next().unwrap_or(trimmed).trim_end();
        match code.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(code);
                commands.push(pending.split_whitespace().collect::<Vec<_>>().join(" "));
                pending.clear();
            }
        }
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_outside_code_only() {
        let text = "see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d]: d.md\n![i](img.png \"t\")";
        let targets: Vec<String> = links(text).into_iter().map(|l| l.target).collect();
        assert_eq!(targets, ["a.md#x", "d.md", "img.png"]);
    }

    #[test]
    fn anchors_as_github_makes_them() {
        let text = "# Scale\n## nftables mode at 10,000 × 10\n## In a cluster: image and deploy/\n## `kube-proxy-rs explain`\n## Scale\n```\n# not a heading\n```";
        let got = anchors(text);
        for want in ["scale", "nftables-mode-at-10000--10", "in-a-cluster-image-and-deploy", "kube-proxy-rs-explain", "scale-1"] {
            assert!(got.contains(want), "{want} not in {got:?}");
        }
        assert!(!got.contains("not-a-heading"));
    }

    #[test]
    fn commands_join_continuations_and_drop_comments() {
        let text = "```sh\n# a comment\ncargo run -- --a \\\n    --b   # trailing\nbash x.sh\n```\n```text\nnot a command\n```";
        assert_eq!(commands(text), ["cargo run -- --a --b", "bash x.sh"]);
    }
}
