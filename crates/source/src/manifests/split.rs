//! Cutting a YAML stream into its documents.
//!
//! YAML forbids a line that starts with `---` or `...` followed by a space
//! or the end of the line anywhere inside document content (even inside
//! block or quoted scalars), so such lines delimit documents exactly.
//! Splitting on them lets each document be decoded (and fail) on its own.

/// One document of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Document<'a> {
    /// Its text (without the `---` marker).
    pub(super) text: &'a str,
    /// Line of the file its text starts on (1-based).
    pub(super) line: usize,
}

/// The documents of `text`, in order; blank or comment-only ones included
/// (they decode to nothing). Directive lines (`%YAML`, `%TAG`) before a
/// `---` are dropped: nothing in a manifest depends on them.
pub(super) fn split_documents(text: &str) -> Vec<Document<'_>> {
    document_ranges(text)
        .into_iter()
        .map(|(range, line)| Document {
            text: text.get(range).unwrap_or_default(),
            line,
        })
        .collect()
}

/// One document of the stream with its own copy of its text, so the
/// documents of a large file can be dropped one by one as they are used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OwnedDocument {
    /// Its text (without the `---` marker); emptied once it is used.
    text: Box<str>,
    /// Line of the file its text starts on (1-based).
    line: usize,
}

impl OwnedDocument {
    /// The document, borrowed.
    pub(super) fn as_document(&self) -> Document<'_> {
        Document {
            text: &self.text,
            line: self.line,
        }
    }

    /// Frees its text (nothing else of the read needs it); returns how
    /// many bytes that was.
    pub(super) fn drop_text(&mut self) -> usize {
        std::mem::take(&mut self.text).len()
    }
}

/// Shrink the file's text at least this much at a time while it is cut
/// into documents (each shrink may move what is left).
const SHRINK_STEP: usize = 1 << 20;

/// [`split_documents`], each document copied out of `text`, which is
/// freed as they are: cut from the end, the text is shortened (and its
/// allocation shrunk every [`SHRINK_STEP`]) after each copy, so the
/// file's text is held about once, never twice.
pub(super) fn into_documents(mut text: String) -> Vec<OwnedDocument> {
    let ranges = document_ranges(&text);
    let mut docs = Vec::with_capacity(ranges.len());
    for (range, line) in ranges.into_iter().rev() {
        let start = range.start;
        let copied = text.get(range).unwrap_or_default().into();
        docs.push(OwnedDocument { text: copied, line });
        text.truncate(start);
        if text.capacity() - text.len() >= SHRINK_STEP {
            text.shrink_to_fit();
        }
    }
    docs.reverse();
    docs
}

/// Where each non-blank document of `text` is, with its first line.
fn document_ranges(text: &str) -> Vec<(std::ops::Range<usize>, usize)> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_no = index + 1;
        let marker = marker_len(line);
        if let Some(len) = marker {
            docs.push((start..offset, start_line));
            let is_start = line.starts_with("---");
            start = if is_start {
                offset + len
            } else {
                offset + line.len()
            };
            start_line = if is_start { line_no } else { line_no + 1 };
        } else if line.starts_with('%') && text.get(start..offset).is_some_and(|t| t.trim().is_empty()) {
            start = offset + line.len();
            start_line = line_no + 1;
        }
        offset += line.len();
    }
    docs.push((start..text.len(), start_line));
    docs.retain(|(range, _)| text.get(range.clone()).is_some_and(|t| !t.trim().is_empty()));
    docs
}

/// A hash of the document's text (its position in the file left out: a
/// document that moved is the same document).
pub(super) fn hash_document(doc: &Document<'_>) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(doc.text, &mut hasher);
    std::hash::Hasher::finish(&hasher)
}

/// Length of the document marker (`---` / `...`) opening `line`, if it is
/// one.
fn marker_len(line: &str) -> Option<usize> {
    let rest = line
        .strip_prefix("---")
        .or_else(|| line.strip_prefix("..."))?;
    match rest.chars().next() {
        None => Some(3),
        Some(c) if c.is_whitespace() => Some(3),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &str) -> Vec<(&str, usize)> {
        split_documents(input)
            .into_iter()
            .map(|d| (d.text, d.line))
            .collect()
    }

    #[test]
    fn splits_on_markers_and_keeps_line_numbers() {
        let input = "a: 1\n---\nb: 2\n--- \nc: 3\n";
        assert_eq!(
            texts(input),
            [("a: 1\n", 1), ("\nb: 2\n", 2), (" \nc: 3\n", 4)]
        );
    }

    #[test]
    fn content_after_marker_belongs_to_the_next_document() {
        assert_eq!(
            texts("--- {a: 1}\n---\nb: 2"),
            [(" {a: 1}\n", 1), ("\nb: 2", 2)]
        );
    }

    #[test]
    fn document_end_marker_and_directives() {
        let input = "%YAML 1.2\n---\na: 1\n...\n%YAML 1.2\n---\nb: 2\n";
        assert_eq!(texts(input), [("\na: 1\n", 2), ("\nb: 2\n", 6)]);
    }

    #[test]
    fn dashes_inside_content_are_not_markers() {
        let input = "a: |\n  ---\n  x\nb: ----\n";
        assert_eq!(texts(input), [(input, 1)]);
    }

    #[test]
    fn owned_documents_are_the_borrowed_ones() {
        let input = "%YAML 1.2\n---\na: 1\n...\nb: |\n  ---\n---\n\n--- {c: 3}\n";
        let owned = into_documents(input.to_string());
        let owned: Vec<Document<'_>> = owned.iter().map(OwnedDocument::as_document).collect();
        assert_eq!(owned, split_documents(input));
        // over 3 MiB of text: shrunk while it is cut
        let filler = "x".repeat(1000);
        let big: String = (0..4 * 1024).map(|i| format!("---\na: {i}\nb: {filler}\n")).collect();
        assert!(big.len() > 3 * SHRINK_STEP);
        let owned = into_documents(big.clone());
        assert_eq!(owned.len(), 4 * 1024);
        assert!(owned.iter().map(OwnedDocument::as_document).eq(split_documents(&big)));
    }

    #[test]
    fn empty_and_comment_only_documents_are_kept_until_decoding() {
        assert_eq!(texts("---\n---\n# only a comment\n").len(), 1);
        assert!(texts("").is_empty());
    }
}
