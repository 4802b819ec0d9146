//! A fast reader for the plain block YAML that `kubectl get -o yaml` and
//! generators write: block mappings and sequences (compact `- key: v`
//! items too), plain scalars, quoted strings without line breaks, one-line
//! flow collections of plain scalars (`[a, b]`, `{k: v}`), comment lines.
//! Anything else (nested or quoted flow collections, block scalars, anchors, tags, multi-line scalars, comments after a value,
//! floats, `True`...) makes it give up (`None`), and the document is read
//! by the full YAML parser instead. When it answers, it answers what that
//! parser (YAML 1.2 core schema, strict booleans) would: it is only a
//! shortcut, about ten times faster on large files.

use serde_json::{Map, Number, Value};

/// One content line: its indentation and its text after it.
type Line<'a> = (usize, &'a str);

/// Deeper nesting than Kubernetes objects have is left to the full parser
/// (and its limits).
const MAX_DEPTH: usize = 32;

/// `text` as a value, or `None` when it uses more of YAML than this reader
/// knows (or is not a mapping or sequence at all).
pub(super) fn parse(text: &str) -> Option<Value> {
    let mut lines = content_lines(text)?;
    let first = lines.first()?.0;
    let mut at = 0;
    let value = node(&mut lines, &mut at, first, 0)?;
    (at == lines.len()).then_some(value)
}

/// The lines that carry content: blank and comment lines dropped.
fn content_lines(text: &str) -> Option<Vec<Line<'_>>> {
    let mut lines = Vec::new();
    for line in text.split('\n') {
        if line.bytes().any(|b| b == b'\r' || b == b'\t') {
            return None;
        }
        let body = line.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        lines.push((line.len() - body.len(), body.trim_end_matches(' ')));
    }
    Some(lines)
}

/// Where `first` followed by `second` starts in `text` (both ASCII): a
/// byte scan, where `str::find` of a two-byte pattern sets up a searcher
/// for every scalar of the file.
fn find_pair(text: &str, first: u8, second: u8) -> Option<usize> {
    text.as_bytes().windows(2).position(|w| w[0] == first && w[1] == second)
}

fn is_item(body: &str) -> bool {
    body == "-" || body.starts_with("- ")
}

/// The block (mapping or sequence) starting at line `at`, indented `indent`.
fn node(lines: &mut [Line<'_>], at: &mut usize, indent: usize, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    if is_item(lines.get(*at)?.1) {
        sequence(lines, at, indent, depth)
    } else {
        mapping(lines, at, indent, depth)
    }
}

fn sequence(lines: &mut [Line<'_>], at: &mut usize, indent: usize, depth: usize) -> Option<Value> {
    let mut items = Vec::new();
    while let Some(&(ind, body)) = lines.get(*at) {
        if ind < indent || (ind == indent && !is_item(body)) {
            break;
        }
        if ind > indent {
            return None;
        }
        let rest = body.get(1..).unwrap_or("");
        let trimmed = rest.trim_start_matches(' ');
        if trimmed.is_empty() {
            *at += 1;
            items.push(nested(lines, at, indent, false, depth)?);
        } else if split_key(trimmed).is_some() {
            let inner = indent + 1 + rest.len() - trimmed.len();
            lines[*at] = (inner, trimmed);
            items.push(mapping(lines, at, inner, depth + 1)?);
        } else {
            items.push(scalar(trimmed)?);
            *at += 1;
        }
    }
    Some(Value::Array(items))
}

fn mapping(lines: &mut [Line<'_>], at: &mut usize, indent: usize, depth: usize) -> Option<Value> {
    let mut map = Map::new();
    while let Some(&(ind, body)) = lines.get(*at) {
        if ind < indent || (ind == indent && is_item(body)) {
            break;
        }
        if ind > indent {
            return None;
        }
        let (key, value) = split_key(body)?;
        *at += 1;
        let value = if value.is_empty() {
            nested(lines, at, indent, true, depth)?
        } else {
            scalar(value)?
        };
        if map.insert(key.to_string(), value).is_some() {
            return None;
        }
    }
    Some(Value::Object(map))
}

/// The value after `key:` or `-` with nothing on its line: a deeper block,
/// a sequence at the key's own indentation (`same_level_items`), or null.
fn nested(
    lines: &mut [Line<'_>],
    at: &mut usize,
    indent: usize,
    same_level_items: bool,
    depth: usize,
) -> Option<Value> {
    match lines.get(*at) {
        Some(&(ind, _)) if ind > indent => node(lines, at, ind, depth + 1),
        Some(&(ind, body)) if ind == indent && same_level_items && is_item(body) => {
            sequence(lines, at, indent, depth + 1)
        }
        _ => Some(Value::Null),
    }
}

/// `key: value` or `key:` with a plain key of the usual characters.
fn split_key(body: &str) -> Option<(&str, &str)> {
    let (key, value) = match find_pair(body, b':', b' ') {
        Some(colon) => (&body[..colon], body[colon + 2..].trim_start_matches(' ')),
        None => (body.strip_suffix(':')?, ""),
    };
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_'))
        && !key.starts_with('-');
    plain.then_some((key, value))
}

/// A scalar on one line, typed as the YAML 1.2 core schema (with only
/// `true` / `false` as booleans) would.
fn scalar(text: &str) -> Option<Value> {
    match text.as_bytes().first()? {
        b'"' => double_quoted(text).map(Value::String),
        b'\'' => single_quoted(text).map(Value::String),
        b'[' => flow_sequence(text.strip_prefix('[')?.strip_suffix(']')?),
        b'{' => flow_mapping(text.strip_prefix('{')?.strip_suffix('}')?),
        b'?' | b':' | b',' | b']' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%'
        | b'@' | b'`' => None,
        _ => plain(text),
    }
}

/// The items of a one-line flow collection of plain scalars (`[a, b]`,
/// `{k: v}`); nesting, quotes and colons inside items are left to the
/// full parser.
fn flow_items(inner: &str) -> Option<Vec<&str>> {
    if inner.contains(['[', ']', '{', '}', '"', '\'', '#']) {
        return None;
    }
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    let items: Vec<&str> = inner.split(',').map(|i| i.trim_matches(' ')).collect();
    items.iter().all(|i| !i.is_empty()).then_some(items)
}

fn flow_sequence(inner: &str) -> Option<Value> {
    let items = flow_items(inner)?;
    if items.iter().any(|i| i.contains(':')) {
        return None;
    }
    items
        .into_iter()
        .map(scalar)
        .collect::<Option<_>>()
        .map(Value::Array)
}

fn flow_mapping(inner: &str) -> Option<Value> {
    let mut map = Map::new();
    for item in flow_items(inner)? {
        let (key, value) = split_key(item)?;
        if value.is_empty() || value.contains(':') {
            return None;
        }
        if map.insert(key.to_string(), scalar(value)?).is_some() {
            return None;
        }
    }
    Some(Value::Object(map))
}

fn plain(text: &str) -> Option<Value> {
    if is_item(text)
        || find_pair(text, b':', b' ').is_some()
        || find_pair(text, b' ', b'#').is_some()
        || text.ends_with(':')
    {
        return None;
    }
    match text {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "null" | "~" => return Some(Value::Null),
        _ => {}
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if digits.len() > 1 && digits.starts_with('0') {
            return None;
        }
        return text
            .parse::<i64>()
            .ok()
            .map(|n| Value::Number(Number::from(n)));
    }
    if looks_special(text) {
        return None;
    }
    Some(Value::String(text.to_string()))
}

/// Words another schema reads differently, and anything that could be a
/// float (left to the full parser).
fn looks_special(text: &str) -> bool {
    let words = ["true", "false", "null", "yes", "no", "on", "off"];
    if words.iter().any(|w| text.eq_ignore_ascii_case(w)) {
        return true;
    }
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let float_chars = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    let dots = body.bytes().filter(|&b| b == b'.').count();
    (float_chars && dots <= 1)
        || body.starts_with('.')
        || body.starts_with("0x")
        || body.starts_with("0o")
}

fn double_quoted(text: &str) -> Option<String> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return None,
            '\\' => out.push(match chars.next()? {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'n' => '\n',
                't' => '\t',
                _ => return None,
            }),
            c => out.push(c),
        }
    }
    Some(out)
}

fn single_quoted(text: &str) -> Option<String> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.replace("''", "").contains('\'') {
        return None;
    }
    Some(inner.replace("''", "'"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
