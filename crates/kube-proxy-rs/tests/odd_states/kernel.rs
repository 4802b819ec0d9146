//! Checking many rendered states against the kernel at once, in a network
//! namespace of the test's own: the `iptables-restore` inputs of a batch of
//! states merged into one restore per family (every state's chains are
//! named after its own services, so they do not collide; the fixed chains
//! take the rules of every state), committed for real with the legacy tool
//! (the kernel checks each rule when the table is replaced); and the
//! nftables tables of a batch, each renamed after its state, checked in one
//! `nft -c -f` (the kernel takes the whole batch, then it is aborted).
//! A rejection names the state whose rule the tool reports.

use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::Stdio;
use testkit::netns::Netns;

/// One table of a merged restore: its chain declarations, and its rule
/// lines with the state each came from.
type MergedTable = (BTreeSet<String>, Vec<(String, usize)>);

/// The `iptables-restore` input of many states, merged per table.
#[derive(Default)]
pub struct RestoreBatch {
    tables: BTreeMap<String, MergedTable>,
    seen: BTreeSet<String>,
    pub states: usize,
}

impl RestoreBatch {
    /// Adds state `index`'s restore input (`*table`, `:CHAIN`, `-A`, `COMMIT`).
    pub fn add(&mut self, index: usize, restore: &str) {
        self.states += 1;
        let mut table = String::new();
        for line in restore.lines() {
            if let Some(name) = line.strip_prefix('*') {
                table = name.to_string();
            } else if let Some(decl) = line.strip_prefix(':') {
                self.tables.entry(table.clone()).or_default().0.insert(decl.to_string());
            } else if line.starts_with("-A ") && self.seen.insert(format!("{table} {line}")) {
                self.tables.entry(table.clone()).or_default().1.push((line.to_string(), index));
            }
        }
    }

    /// The merged input and, per line, the state it came from.
    fn text(&self) -> (String, Vec<Option<usize>>) {
        let (mut out, mut owners) = (String::new(), vec![None]);
        let mut push = |out: &mut String, line: &str, owner: Option<usize>| {
            out.push_str(line);
            out.push('\n');
            owners.push(owner);
        };
        for (table, (decls, rules)) in &self.tables {
            push(&mut out, &format!("*{table}"), None);
            decls.iter().for_each(|d| push(&mut out, &format!(":{d}"), None));
            rules.iter().for_each(|(r, i)| push(&mut out, r, Some(*i)));
            push(&mut out, "COMMIT", None);
        }
        (out, owners)
    }

    /// Commits the batch in `ns` with `tool` (`iptables-legacy-restore`…).
    pub fn commit(&self, ns: &Netns, tool: &str) -> Result<()> {
        let (text, owners) = self.text();
        let stderr = feed(ns, tool, &["-w"], &text)?;
        let Some(stderr) = stderr else { return Ok(()) };
        let line = failed_line(&stderr);
        let owner = line.and_then(|n| owners.get(n).copied().flatten());
        let shown = line.and_then(|n| text.lines().nth(n.saturating_sub(1))).unwrap_or_default();
        bail!("{tool} rejected state {owner:?}: {} (line: {shown})", stderr.trim())
    }
}

/// The nftables tables of many states, each renamed `kp<state>`.
#[derive(Default)]
pub struct NftBatch {
    text: String,
    owners: Vec<usize>,
    pub states: usize,
}

impl NftBatch {
    /// Adds state `index`'s `nft -f` text (one `table <family> <name> {`).
    pub fn add(&mut self, index: usize, nft_text: &str) {
        self.states += 1;
        for (n, line) in nft_text.lines().enumerate() {
            if n == 0 {
                let family = line.split_whitespace().nth(1).unwrap_or("ip");
                self.text.push_str(&format!("table {family} kp{index} {{\n"));
            } else {
                self.text.push_str(line);
                self.text.push('\n');
            }
            self.owners.push(index);
        }
    }

    /// Checks the batch in `ns` with `nft -c -f -`.
    pub fn check(&self, ns: &Netns) -> Result<()> {
        let Some(stderr) = feed(ns, "nft", &["-c", "-f", "-"], &self.text)? else { return Ok(()) };
        let line: Option<usize> = stderr.split(':').nth(1).and_then(|n| n.trim().parse().ok());
        let owner = line.and_then(|n| self.owners.get(n.saturating_sub(1)).copied());
        bail!("nft -c rejected state {owner:?}: {}", stderr.lines().take(6).collect::<Vec<_>>().join("\n"))
    }
}

/// Runs `program args` in `ns` with `input` on stdin: `None` on success,
/// its stderr on failure.
fn feed(ns: &Netns, program: &str, args: &[&str], input: &str) -> Result<Option<String>> {
    let mut child = ns
        .command(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("spawn {program} in {}", ns.name()))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let writing = stdin.write_all(input.as_bytes());
    drop(stdin);
    let out = child.wait_with_output()?;
    writing.with_context(|| format!("write to {program}"))?;
    Ok((!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// The input line an `iptables-restore` error names (`line N failed`, or `Error occurred at line: N`).
fn failed_line(stderr: &str) -> Option<usize> {
    let at = stderr.find("line")?;
    stderr[at + 4..].trim_start_matches([':', ' ']).split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}
