//! Splits a rule line into words the way `iptables-restore` does:
//! whitespace separates, double or single quotes group (`\"` escapes a
//! quote inside them).

/// One word of a rule line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word without its quotes.
    pub text: String,
    /// It was quoted, so it is always a value, never an option.
    pub quoted: bool,
}

/// Splits `line` into words; an unterminated quote is an error.
pub(crate) fn split_words(line: &str) -> Result<Vec<Word>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut text = String::new();
        let mut quoted = false;
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            if c == '"' || c == '\'' {
                quoted = true;
                read_quoted(&mut chars, c, &mut text)?;
            } else {
                text.push(c);
            }
        }
        words.push(Word { text, quoted });
    }
    Ok(words)
}

fn read_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, quote: char, text: &mut String) -> Result<(), String> {
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped) => text.push(escaped),
                None => break,
            },
            c if c == quote => return Ok(()),
            c => text.push(c),
        }
    }
    Err("unterminated quote".to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        split_words(line).unwrap().into_iter().map(|w| w.text).collect()
    }

    #[test]
    fn splits_on_whitespace_and_keeps_quoted_groups() {
        assert_eq!(
            texts(r#"-m comment --comment "a b:c"  -j  X"#),
            vec!["-m", "comment", "--comment", "a b:c", "-j", "X"]
        );
        let words = split_words(r#"--comment "x""#).unwrap();
        assert!(!words[0].quoted);
        assert!(words[1].quoted);
    }

    #[test]
    fn escaped_quote_inside_quotes() {
        assert_eq!(texts(r#"--comment "say \"hi\"""#), vec!["--comment", r#"say "hi""#]);
        assert_eq!(texts("--comment 'single quoted'"), vec!["--comment", "single quoted"]);
    }

    #[test]
    fn unterminated_quote_is_an_error() {
        assert!(split_words(r#"--comment "open"#).is_err());
    }
}
