//! Splits a rule's match text (as [`crate::rules::RuleBuilder`] spells
//! it, iptables-save's quoting) into words.

/// A word of a rule's matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `!`
    Bang,
    /// Any other word, unquoted.
    Word(String),
}

impl Token {
    /// The word (`!` for [`Token::Bang`]).
    pub fn text(&self) -> &str {
        match self {
            Token::Bang => "!",
            Token::Word(word) => word,
        }
    }
}

/// The words of `text`: separated by spaces; `"..."` quotes with `\`
/// escaping the next character, as `xtables_save_string` writes.
pub fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => word.push(chars.next().ok_or("a quote ending in \\")?),
                    Some(c) => word.push(c),
                    None => return Err("an unterminated quote".into()),
                }
            }
            out.push(Token::Word(word));
            continue;
        }
        while let Some(&c) = chars.peek().filter(|c| **c != ' ') {
            word.push(c);
            chars.next();
        }
        out.push(if word == "!" { Token::Bang } else { Token::Word(word) });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_words_unescape() {
        let toks = tokens(r#" ! -s 10.0.0.0/8 -m comment --comment "a \"b\" c""#).unwrap_or_default();
        let words: Vec<&str> = toks.iter().map(Token::text).collect();
        assert_eq!(words, ["!", "-s", "10.0.0.0/8", "-m", "comment", "--comment", "a \"b\" c"]);
        assert_eq!(toks[0], Token::Bang);
        assert!(tokens(" -m comment --comment \"open").is_err());
    }
}
