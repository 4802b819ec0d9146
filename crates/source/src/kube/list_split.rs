//! A list response read as it arrives: `{"kind": …, "metadata": {…},
//! "items": [{…}, {…}, …]}` cut into its `metadata` and one item at a time,
//! so a list of any size is never held whole (nor buffered as serde
//! `Content` whole, as a typed `ObjectList` with its flattened type fields
//! is). Only the JSON structure is scanned here: strings (and their
//! escapes), nesting, and the top level's keys; each item's bytes are
//! decoded by the caller.

/// A piece of the list, as soon as its last byte arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// The bytes of one element of the top-level `items` array.
    Item(Vec<u8>),
    /// The bytes of the top-level `metadata` object.
    Metadata(Vec<u8>),
}

/// The response is not a JSON object with an `items` array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the list response is not JSON of a list at byte {at}: {why}")]
pub(crate) struct Malformed {
    at: usize,
    why: &'static str,
}

/// Where a top-level value being captured goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Capture {
    /// Not kept (`kind`, `apiVersion`, anything else).
    Skip,
    /// `metadata`.
    Metadata,
    /// One element of `items`.
    Item,
}

/// The scanner's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct ListSplitter {
    /// Bytes seen so far (for error positions).
    offset: usize,
    /// Open objects and arrays.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The last top-level key read, while its value is due or being read.
    key: Vec<u8>,
    /// Reading a top-level key (a string at depth 1 before its colon).
    in_key: bool,
    /// At the top level, a key comes next (after `{` or `,`), not a value.
    expect_key: bool,
    /// Inside the top-level `items` array.
    in_items: bool,
    /// The value being captured and its bytes.
    capture: Option<(Capture, Vec<u8>)>,
    /// The outer object closed.
    done: bool,
    started: bool,
}

impl ListSplitter {
    /// Scans `chunk`, handing each completed piece to `emit`.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        emit: &mut impl FnMut(Piece),
    ) -> Result<(), Malformed> {
        for &byte in chunk {
            self.byte(byte, emit)?;
            self.offset += 1;
        }
        Ok(())
    }

    /// The response ended: fails unless the outer object closed.
    pub(crate) fn finish(&self) -> Result<(), Malformed> {
        if self.done {
            Ok(())
        } else {
            Err(self.malformed("the response ended inside the list"))
        }
    }

    fn malformed(&self, why: &'static str) -> Malformed {
        Malformed {
            at: self.offset,
            why,
        }
    }

    fn byte(&mut self, byte: u8, emit: &mut impl FnMut(Piece)) -> Result<(), Malformed> {
        let blank = matches!(byte, b' ' | b'\n' | b'\r' | b'\t');
        if self.in_string {
            self.string_byte(byte);
            return Ok(());
        }
        if blank {
            self.keep(byte);
            return Ok(());
        }
        if self.done {
            return Err(self.malformed("bytes after the list"));
        }
        if !self.started && byte != b'{' {
            return Err(self.malformed("not a JSON object"));
        }
        match byte {
            b'"' if self.depth == 1 && self.expect_key => {
                self.in_string = true;
                self.in_key = true;
                self.key.clear();
                Ok(())
            }
            b'"' => {
                self.open_value();
                self.in_string = true;
                self.keep(byte);
                Ok(())
            }
            b'{' | b'[' => self.open(byte),
            b'}' | b']' => self.close(byte, emit),
            b',' => {
                self.end_scalar(emit);
                self.keep(byte);
                self.expect_key = self.depth == 1;
                Ok(())
            }
            b':' if self.depth == 1 => {
                self.expect_key = false;
                Ok(())
            }
            _ => {
                self.open_value();
                self.keep(byte);
                Ok(())
            }
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let ends = !self.escaped && byte == b'"';
        self.escaped = !self.escaped && byte == b'\\';
        if self.in_key {
            if ends {
                self.in_string = false;
                self.in_key = false;
            } else {
                self.key.push(byte);
            }
            return;
        }
        self.keep(byte);
        if ends {
            self.in_string = false;
        }
    }

    /// A value starts at the top level or as an item: decide what to keep.
    fn open_value(&mut self) {
        if self.capture.is_some() {
            return;
        }
        let what = match self.depth {
            1 if self.key == b"metadata" => Capture::Metadata,
            1 => Capture::Skip,
            2 if self.in_items => Capture::Item,
            _ => return,
        };
        self.capture = Some((what, Vec::new()));
    }

    fn open(&mut self, byte: u8) -> Result<(), Malformed> {
        if !self.started {
            self.started = true;
            self.depth = 1;
            self.expect_key = true;
            return Ok(());
        }
        if self.depth == 1 && byte == b'[' && self.key == b"items" && self.capture.is_none() {
            self.in_items = true;
            self.depth = 2;
            return Ok(());
        }
        self.open_value();
        self.keep(byte);
        self.depth += 1;
        Ok(())
    }

    fn close(&mut self, byte: u8, emit: &mut impl FnMut(Piece)) -> Result<(), Malformed> {
        if self.depth == 0 {
            return Err(self.malformed("a bracket closes nothing"));
        }
        if self.depth == 2 && self.in_items && byte == b']' {
            self.end_scalar(emit);
            self.in_items = false;
            self.depth = 1;
            self.key.clear();
            return Ok(());
        }
        if self.depth == 1 {
            self.end_scalar(emit);
            self.done = true;
            self.depth = 0;
            return Ok(());
        }
        self.keep(byte);
        self.depth -= 1;
        let whole = (self.depth == 1 && !self.in_items) || (self.depth == 2 && self.in_items);
        if whole {
            self.emit_capture(emit);
        }
        Ok(())
    }

    /// A scalar (number, literal, string) ends at a comma or a close.
    fn end_scalar(&mut self, emit: &mut impl FnMut(Piece)) {
        let at_value_level =
            (self.depth == 1 && !self.in_items) || (self.depth == 2 && self.in_items);
        if at_value_level && self.capture.is_some() {
            self.emit_capture(emit);
        }
    }

    fn emit_capture(&mut self, emit: &mut impl FnMut(Piece)) {
        match self.capture.take() {
            Some((Capture::Item, bytes)) => emit(Piece::Item(bytes)),
            Some((Capture::Metadata, bytes)) => emit(Piece::Metadata(bytes)),
            Some((Capture::Skip, _)) | None => {}
        }
        if self.depth == 1 {
            self.key.clear();
        }
    }

    fn keep(&mut self, byte: u8) {
        if let Some((what, bytes)) = &mut self.capture
            && *what != Capture::Skip
        {
            bytes.push(byte);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn split_in_chunks(
        text: &[u8],
        chunk: usize,
    ) -> Result<(Vec<Value>, Option<Value>), Malformed> {
        let mut splitter = ListSplitter::default();
        let (mut items, mut metadata) = (Vec::new(), None);
        for part in text.chunks(chunk.max(1)) {
            splitter.feed(part, &mut |piece| match piece {
                Piece::Item(bytes) => items.push(serde_json::from_slice(&bytes).unwrap()),
                Piece::Metadata(bytes) => metadata = Some(serde_json::from_slice(&bytes).unwrap()),
            })?;
        }
        splitter.finish()?;
        Ok((items, metadata))
    }

    #[test]
    fn items_and_metadata_come_out_whatever_the_chunking() {
        let list = json!({
            "kind": "ServiceList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "42", "continue": "tok\"en}]"},
            "items": [
                {"metadata": {"name": "a", "annotations": {"x": "[{\"nested\": \"}\"}]"}}, "spec": {"ports": [{"port": 80}]}},
                {"metadata": {"name": "b"}, "list": [[], {}, [1, 2]]},
                null, 7, "text", true,
            ],
            "extra": {"items": [1]},
        });
        let text = serde_json::to_vec_pretty(&list).unwrap();
        for chunk in [1, 2, 3, 7, 64, text.len()] {
            let (items, metadata) = split_in_chunks(&text, chunk).unwrap();
            assert_eq!(
                items,
                list["items"].as_array().unwrap().clone(),
                "chunk {chunk}"
            );
            assert_eq!(metadata.as_ref(), Some(&list["metadata"]), "chunk {chunk}");
        }
        let compact = serde_json::to_vec(&list).unwrap();
        assert_eq!(split_in_chunks(&compact, 5).unwrap().0.len(), 6);
    }

    #[test]
    fn metadata_after_the_items_and_an_empty_list() {
        let text = br#"{"items":[],"metadata":{"resourceVersion":"9"}}"#;
        let (items, metadata) = split_in_chunks(text, 4).unwrap();
        assert!(items.is_empty());
        assert_eq!(metadata, Some(json!({"resourceVersion": "9"})));
        let text = br#"{"kind":"List","items":null,"metadata":{}}"#;
        assert_eq!(split_in_chunks(text, 3).unwrap(), (vec![], Some(json!({}))));
    }

    #[test]
    fn a_cut_or_foreign_response_is_an_error() {
        assert!(split_in_chunks(br#"{"items":[{"a":1}"#, 4).is_err());
        assert!(split_in_chunks(br#"[1,2]"#, 4).is_err());
        assert!(split_in_chunks(br#"{"items":[]} trailing"#, 4).is_err());
        assert!(split_in_chunks(br#"}"#, 4).is_err());
    }
}
