//! Cutting a YAML stream into its documents.
//!
//! YAML forbids a line that starts with `---` or `...` followed by a space
//! or the end of the line anywhere inside document content (even inside
//! block or quoted scalars), so such lines delimit documents exactly.
//! Splitting on them lets each document be decoded (and fail) on its own.

use super::content_hash::ContentHasher;

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
    /// Its text (without the `---` marker); `None` once dropped.
    text: Option<Box<str>>,
    /// Line of the file its text starts on (1-based).
    line: u32,
    /// Its position among the stream's documents (0-based).
    position: u32,
}

impl OwnedDocument {
    fn new(text: Box<str>, line: usize, position: usize) -> Self {
        Self {
            text: Some(text),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            position: u32::try_from(position).unwrap_or(u32::MAX),
        }
    }

    /// The document, borrowed (empty text once dropped).
    pub(super) fn as_document(&self) -> Document<'_> {
        Document {
            text: self.text.as_deref().unwrap_or_default(),
            line: self.line as usize,
        }
    }

    /// Its position among the stream's documents.
    pub(super) fn position(&self) -> usize {
        self.position as usize
    }

    /// Whether its text is still held.
    pub(super) fn has_text(&self) -> bool {
        self.text.is_some()
    }

    /// Frees its text (nothing else of the read needs it); returns how
    /// many bytes that was.
    pub(super) fn drop_text(&mut self) -> usize {
        self.text.take().map_or(0, |text| text.len())
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
    for (position, (range, line)) in ranges.into_iter().enumerate().rev() {
        let start = range.start;
        let copied = text.get(range).unwrap_or_default().into();
        docs.push(OwnedDocument::new(copied, line, position));
        text.truncate(start);
        if text.capacity() - text.len() >= SHRINK_STEP {
            text.shrink_to_fit();
        }
    }
    docs.reverse();
    docs
}

/// The documents of a stream read line by line (never held whole), each
/// with its own text; every line read also goes to [`ReadDocuments::hasher`].
pub(super) struct ReadDocuments<R> {
    reader: R,
    cut: Cut,
    /// The current document's text so far.
    pending: String,
    line: String,
    hasher: ContentHasher,
    /// Documents handed on so far.
    count: usize,
    done: bool,
}

impl<R: std::io::BufRead> ReadDocuments<R> {
    pub(super) fn new(reader: R) -> Self {
        Self {
            reader,
            cut: Cut::default(),
            pending: String::new(),
            line: String::new(),
            hasher: ContentHasher::default(),
            count: 0,
            done: false,
        }
    }

    /// The hash of the text read so far ([`super::content_hash::hash_text`]
    /// of the whole file once the documents are all read).
    pub(super) fn hasher(self) -> ContentHasher {
        self.hasher
    }

    /// Takes one more line; the document it closes, if any.
    fn take_line(&mut self) -> Option<(String, usize)> {
        self.hasher.update(&self.line);
        let line_offset = self.cut.offset;
        let closed = self.cut.line(&self.line, &self.pending);
        let closed = closed.map(|(_, first)| (std::mem::take(&mut self.pending), first));
        match self.cut.start.checked_sub(line_offset) {
            // the current document starts within this line
            Some(from) => self.pending = self.line.get(from..).unwrap_or_default().to_string(),
            None => self.pending.push_str(&self.line),
        }
        closed
    }
}

impl<R: std::io::BufRead> Iterator for ReadDocuments<R> {
    type Item = std::io::Result<OwnedDocument>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.line.clear();
            let closed = match self.reader.read_line(&mut self.line) {
                Err(err) => {
                    self.done = true;
                    return Some(Err(err));
                }
                Ok(0) => {
                    self.done = true;
                    let (_, first) = self.cut.end();
                    Some((std::mem::take(&mut self.pending), first))
                }
                Ok(_) => self.take_line(),
            };
            if let Some((text, line)) = closed.filter(|(text, _)| !text.trim().is_empty()) {
                self.count += 1;
                let doc = OwnedDocument::new(text.into_boxed_str(), line, self.count - 1);
                return Some(Ok(doc));
            }
        }
        None
    }
}

/// Where the document being cut starts, as the lines go by: the one
/// splitting rule for a text held whole and one read line by line.
struct Cut {
    /// Offset of the current document's text.
    start: usize,
    /// Its first line (1-based).
    start_line: usize,
    /// Offset of the next line.
    offset: usize,
    /// Number of the next line (1-based).
    line_no: usize,
}

impl Default for Cut {
    fn default() -> Self {
        Self {
            start: 0,
            start_line: 1,
            offset: 0,
            line_no: 1,
        }
    }
}

impl Cut {
    /// Takes the next `line`, `pending` being the current document's text
    /// up to it; returns the document a marker line closes.
    fn line(&mut self, line: &str, pending: &str) -> Option<(std::ops::Range<usize>, usize)> {
        let closed = match marker_len(line) {
            Some(len) => {
                let closed = (self.start..self.offset, self.start_line);
                let is_start = line.starts_with("---");
                (self.start, self.start_line) = if is_start {
                    (self.offset + len, self.line_no)
                } else {
                    (self.offset + line.len(), self.line_no + 1)
                };
                Some(closed)
            }
            None => {
                if line.starts_with('%') && pending.trim().is_empty() {
                    (self.start, self.start_line) = (self.offset + line.len(), self.line_no + 1);
                }
                None
            }
        };
        self.offset += line.len();
        self.line_no += 1;
        closed
    }

    /// The last document, once every line is in.
    fn end(&self) -> (std::ops::Range<usize>, usize) {
        (self.start..self.offset, self.start_line)
    }
}

/// Where each non-blank document of `text` is, with its first line.
fn document_ranges(text: &str) -> Vec<(std::ops::Range<usize>, usize)> {
    let mut docs = Vec::new();
    let mut cut = Cut::default();
    for line in text.split_inclusive('\n') {
        let pending = text.get(cut.start..cut.offset).unwrap_or_default();
        docs.extend(cut.line(line, pending));
    }
    docs.push(cut.end());
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
    fn documents_read_line_by_line_are_the_borrowed_ones() {
        for input in [
            "%YAML 1.2\n---\na: 1\n...\nb: |\n  ---\n---\n\n--- {c: 3}\n",
            "a: 1\n---\nb: 2\n--- \nc: 3",
            "--- {a: 1}\n---\nb: 2",
            "%YAML 1.2\n---\na: 1\n...\n%YAML 1.2\n---\nb: 2\n",
            "---\n---\n# only a comment\n",
            "",
        ] {
            let mut read = ReadDocuments::new(input.as_bytes());
            let owned: Vec<OwnedDocument> = read.by_ref().map(Result::unwrap).collect();
            let owned: Vec<Document<'_>> = owned.iter().map(OwnedDocument::as_document).collect();
            assert_eq!(owned, split_documents(input), "{input:?}");
            assert_eq!(
                read.hasher().finish(),
                super::super::content_hash::hash_text(input)
            );
        }
    }

    #[test]
    fn empty_and_comment_only_documents_are_kept_until_decoding() {
        assert_eq!(texts("---\n---\n# only a comment\n").len(), 1);
        assert!(texts("").is_empty());
    }
}
