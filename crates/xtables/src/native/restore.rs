//! `iptables-restore --noflush` of the input the applier writes, done
//! natively: each `*table` … `COMMIT` block is applied to the table read
//! from the kernel ([`Image`]) and laid out; nothing is written until
//! every block of the input was read and encoded, so an input the native
//! writer cannot take ([`Problem`]) changes nothing and can go through
//! `iptables-restore` instead. The input is the subset the applier writes:
//! `:CHAIN - [0:0]` (create or flush; a built-in chain's policy),
//! `-A`, `-I CHAIN [N]`, `-D` by spec, `-F`, `-X`, comments and blank lines.

use super::encode::{VERDICT_ACCEPT, VERDICT_DROP, encode_spec};
use super::layout::Family;
use super::socket::Socket;
use super::table::{Blob, Image};

/// Why the native writer did not take an input: the line and what it
/// cannot do there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("native x_tables restore, line {line}: {problem}")]
pub struct Problem {
    /// The input line (1-based).
    pub line: usize,
    /// What it cannot do.
    pub problem: String,
}

/// A restore in progress: tables read and changed, not yet written.
#[derive(Debug)]
pub struct Restore {
    family: Family,
    socket: Socket,
    line: usize,
    current: Option<Image>,
    done: Vec<(Image, Blob, usize)>,
}

/// A table the kernel refused: the line of its `COMMIT`, its name, why.
#[derive(Debug)]
pub struct Refused {
    /// The line of the table's `COMMIT`.
    pub line: usize,
    /// The table.
    pub table: String,
    /// The kernel's error.
    pub error: std::io::Error,
}

impl Restore {
    /// Starts one for `family` (opens the raw socket).
    pub fn new(family: Family) -> std::io::Result<Self> {
        Ok(Self { family, socket: Socket::open(family)?, line: 0, current: None, done: Vec::new() })
    }

    fn problem(&self, problem: impl Into<String>) -> Problem {
        Problem { line: self.line, problem: problem.into() }
    }

    /// Takes one line of input.
    pub fn line(&mut self, text: &str) -> Result<(), Problem> {
        self.line += 1;
        let text = text.trim_end();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        if let Some(table) = text.strip_prefix('*') {
            if self.current.is_some() {
                return Err(self.problem("a table inside a table"));
            }
            let image = self.socket.read(table).map_err(|e| self.problem(format!("reading table {table}: {e}")))?;
            self.current = Some(image);
            return Ok(());
        }
        if text == "COMMIT" {
            let mut image = self.current.take().ok_or_else(|| self.problem("COMMIT outside a table"))?;
            let blob = image.layout().map_err(|p| self.problem(p))?;
            image.drop_chains();
            self.done.push((image, blob, self.line));
            return Ok(());
        }
        let family = self.family;
        let line = self.line;
        let image = self.current.as_mut().ok_or(Problem { line, problem: "a rule outside a table".into() })?;
        apply(family, image, text).map_err(|problem| Problem { line, problem })
    }

    /// Writes every table taken, in input order; the first the kernel
    /// refuses stops it (tables before it stay written). Returns the
    /// tables written.
    pub fn commit(self) -> Result<usize, CommitError> {
        if self.current.is_some() {
            return Err(CommitError::Input(self.problem("input ended inside a table (no COMMIT)")));
        }
        let (socket, mut done) = (self.socket, self.done);
        for (image, blob, line) in &mut done {
            socket.replace(image, blob).map_err(|error| CommitError::Refused(Refused { line: *line, table: image.name.clone(), error }))?;
        }
        Ok(done.len())
    }
}

/// Why a commit wrote nothing (input) or stopped (refused).
#[derive(Debug)]
pub enum CommitError {
    /// The input was incomplete: nothing was written.
    Input(Problem),
    /// The kernel refused a table.
    Refused(Refused),
}

/// One command line applied to `image`.
pub(crate) fn apply(family: Family, image: &mut Image, text: &str) -> Result<(), String> {
    if let Some(decl) = text.strip_prefix(':') {
        let mut words = decl.split(' ');
        let (chain, policy) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
        return match (policy, image.chain_mut(chain)) {
            ("-", _) => {
                image.declare(chain);
                Ok(())
            }
            ("ACCEPT" | "DROP", Some(builtin)) if builtin.hook.is_some() => {
                builtin.policy = if policy == "ACCEPT" { VERDICT_ACCEPT } else { VERDICT_DROP };
                Ok(())
            }
            _ => Err(format!("declaration {text:?}")),
        };
    }
    let (command, rest) = text.split_once(' ').ok_or_else(|| format!("command {text:?}"))?;
    let (chain, spec) = rest.split_once(' ').unwrap_or((rest, ""));
    match command {
        "-A" => {
            let entry = encode_spec(family, spec).map_err(|e| e.to_string())?;
            image.insert_rule(chain, usize::MAX, entry)
        }
        "-I" => {
            let (position, spec) = match spec.split_once(' ') {
                Some((n, spec)) if n.parse::<usize>().is_ok() => (n.parse::<usize>().unwrap_or(1), spec),
                _ => (1, spec),
            };
            let entry = encode_spec(family, spec).map_err(|e| e.to_string())?;
            image.insert_rule(chain, position.saturating_sub(1), entry)
        }
        "-D" => {
            let entry = encode_spec(family, spec).map_err(|e| e.to_string())?;
            image.delete_rule(chain, &entry)
        }
        "-F" if spec.is_empty() => image.flush(chain),
        "-X" if spec.is_empty() => image.delete_chain(chain),
        _ => Err(format!("command {command}")),
    }
}
