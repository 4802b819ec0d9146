//! A table as chains of entries: read from the kernel's blob (every
//! chain and rule of other owners kept as raw entries, jumps turned into
//! chain names), changed chain by chain as `iptables-restore --noflush`
//! changes it, and laid out again as libiptc lays it out (built-in chains
//! in hook order, then the user chains by name: libiptc inserts a new
//! chain by name and writes them in its list's order, so a table it wrote
//! is always sorted; each user chain an `ERROR` head, its rules, a
//! `RETURN` tail; a final `ERROR` entry). Chains are found by name and
//! `-X` checks a count of the jumps to each chain, so a sync of 110,000
//! chains does no work quadratic in them.

use super::encode::{Entry, VERDICT_RETURN, error_entry, standard_entry};
use super::layout::{Family, put_u32, u16_at, u32_at};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

/// The chain name a rule without target "jumps" to: the next entry.
pub const FALLTHROUGH: &str = "\0fallthrough";

/// [`FALLTHROUGH`], shared (no allocation per rule).
pub(crate) fn fallthrough() -> Arc<str> {
    static NAME: LazyLock<Arc<str>> = LazyLock::new(|| FALLTHROUGH.into());
    NAME.clone()
}

/// The built-in chains by hook number.
pub const HOOKS: [&str; 5] = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];

/// One rule: its entry, and its index in the table it was read from
/// (its counters are carried over), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The entry (verdict of a jump zero until laid out).
    pub entry: Entry,
    /// Index in the table read.
    pub old: Option<u32>,
}

/// A chain: built-in (with its hook and policy entry) or user-defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// Its name.
    pub name: String,
    /// The hook of a built-in chain.
    pub hook: Option<usize>,
    /// A built-in chain's policy verdict.
    pub policy: i32,
    /// Its rules in order.
    pub rules: Vec<Rule>,
    /// Indexes of the head and tail (or policy) entries read.
    pub old_ends: (Option<u32>, Option<u32>),
}

/// A whole table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// Its family.
    pub family: Family,
    /// Its name (`nat`, ...).
    pub name: String,
    /// Bit set of the hooks it has.
    pub valid_hooks: u32,
    /// Its built-in chains, in hook order.
    pub builtins: Vec<Chain>,
    /// Its user chains, by name.
    pub users: BTreeMap<String, Chain>,
    /// Rules jumping to each chain (by name).
    refs: HashMap<Arc<str>, u32>,
    /// Entries in the table read (the kernel hands back their counters).
    pub old_entries: u32,
}

/// A laid-out table: what `IPT_SO_SET_REPLACE` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Room for the `ipt_replace` header ([`HEAD`] bytes, zero), then
    /// the entries: the replace is written without copying 100 MiB.
    pub bytes: Vec<u8>,
    /// Entries in `bytes`.
    pub entries: u32,
    /// Offsets of each hook's first entry.
    pub hook_entry: [u32; 5],
    /// Offsets of each hook's policy entry.
    pub underflow: [u32; 5],
    /// Per entry, the index of the entry read it continues (counters).
    pub old: Vec<Option<u32>>,
}

/// Bytes before the entries in [`Blob::bytes`]: `struct ipt_replace`
/// (and `ip6t_replace`) up to its entries.
pub const HEAD: usize = 96;

/// Why a table cannot be read or changed natively.
pub type Problem = String;

struct Raw<'a> {
    offset: usize,
    bytes: &'a [u8],
}

impl Image {
    /// An image of a table read from the kernel: `blob` is its entries,
    /// `hook_entry` and `underflow` as `IPT_SO_GET_INFO` gave them.
    pub fn read(family: Family, name: &str, valid_hooks: u32, hook_entry: [u32; 5], underflow: [u32; 5], blob: &[u8]) -> Result<Self, Problem> {
        let raws = split(family, blob)?;
        let starts = chain_starts(family, &raws, valid_hooks, &hook_entry);
        let mut chains: Vec<Chain> = Vec::new();
        let mut current: Option<Chain> = None;
        for (index, raw) in raws.iter().enumerate() {
            let index = index as u32;
            let offset = raw.offset as u32;
            if let Some(hook) = (0..5).find(|h| valid_hooks & (1 << h) != 0 && hook_entry[*h] == offset) {
                chains.extend(current.take());
                current = Some(Chain { name: HOOKS[hook].into(), hook: Some(hook), policy: 0, rules: Vec::new(), old_ends: (None, None) });
            }
            if is_error(family, raw.bytes) {
                chains.extend(current.take().map(drop_tail));
                let chain = error_name(family, raw.bytes);
                if chain == "ERROR" {
                    break;
                }
                current = Some(Chain { name: chain, hook: None, policy: 0, rules: Vec::new(), old_ends: (Some(index), None) });
                continue;
            }
            let chain = current.as_mut().ok_or_else(|| format!("an entry outside any chain at offset {offset}"))?;
            if let Some(hook) = chain.hook.filter(|h| underflow[*h] == offset) {
                chain.policy = standard_verdict(family, raw.bytes).ok_or_else(|| format!("{}'s policy is not a verdict", HOOKS[hook]))?;
                chain.old_ends.1 = Some(index);
                chains.extend(current.take());
                continue;
            }
            let entry = read_entry(family, raw, &starts)?;
            chain.rules.push(Rule { entry, old: Some(index) });
        }
        chains.extend(current.take().map(drop_tail));
        let mut image = Image { family, name: name.into(), valid_hooks, builtins: Vec::new(), users: BTreeMap::new(), refs: HashMap::new(), old_entries: raws.len() as u32 };
        for chain in chains {
            for rule in &chain.rules {
                image.count(rule, 1);
            }
            if chain.hook.is_some() {
                image.builtins.push(chain);
            } else {
                image.users.insert(chain.name.clone(), chain);
            }
        }
        Ok(image)
    }

    /// Drops the chains (once laid out: only the table's name, hooks and
    /// count of entries read are needed to replace it).
    pub fn drop_chains(&mut self) {
        self.builtins = Vec::new();
        self.users = BTreeMap::new();
        self.refs = HashMap::new();
    }

    /// Every chain in table order.
    pub fn chains(&self) -> impl Iterator<Item = &Chain> {
        self.builtins.iter().chain(self.users.values())
    }

    /// The chain named `name`.
    pub fn chain_mut(&mut self, name: &str) -> Option<&mut Chain> {
        match self.users.get_mut(name) {
            Some(chain) => Some(chain),
            None => self.builtins.iter_mut().find(|c| c.name == name),
        }
    }

    /// Counts `rule`'s jump (`by` = 1) or uncounts it (`by` = -1).
    fn count(&mut self, rule: &Rule, by: i32) {
        let Some(to) = rule.entry.jump.as_ref().filter(|j| &***j != FALLTHROUGH) else { return };
        match self.refs.get_mut(&**to) {
            Some(n) => *n = n.saturating_add_signed(by),
            None => {
                self.refs.insert(to.clone(), 0u32.saturating_add_signed(by));
            }
        }
    }

    /// Empties chain `name` (`-F`).
    pub fn flush(&mut self, name: &str) -> Result<(), Problem> {
        let rules = std::mem::take(&mut self.chain_mut(name).ok_or_else(|| format!("-F {name}: no such chain"))?.rules);
        rules.iter().for_each(|r| self.count(r, -1));
        Ok(())
    }

    /// Flushes `name`, creating it (placed by name, as libiptc places a new
    /// chain) when it does not exist.
    pub fn declare(&mut self, name: &str) {
        if self.flush(name).is_ok() {
            return;
        }
        let chain = Chain { name: name.into(), hook: None, policy: 0, rules: Vec::new(), old_ends: (None, None) };
        self.users.insert(name.into(), chain);
    }

    /// Deletes the user chain `name` (`-X`): it must be empty and no rule
    /// may jump to it.
    pub fn delete_chain(&mut self, name: &str) -> Result<(), Problem> {
        let chain = self.users.get(name).ok_or_else(|| format!("-X {name}: no such chain"))?;
        if !chain.rules.is_empty() {
            return Err(format!("-X {name}: the chain is not empty"));
        }
        if self.refs.get(name).is_some_and(|n| *n > 0) {
            return Err(format!("-X {name}: a rule jumps to it"));
        }
        self.users.remove(name);
        Ok(())
    }

    /// Deletes the first rule of `chain` equal to `entry` (`-D`).
    pub fn delete_rule(&mut self, chain: &str, entry: &Entry) -> Result<(), Problem> {
        let family = self.family;
        let c = self.chain_mut(chain).ok_or_else(|| format!("-D {chain}: no such chain"))?;
        let at = c.rules.iter().position(|r| same_rule(family, &r.entry, entry)).ok_or_else(|| format!("-D {chain}: no matching rule"))?;
        let rule = c.rules.remove(at);
        self.count(&rule, -1);
        Ok(())
    }

    /// Inserts `entry` into `chain` at `position` (0: first; past the end:
    /// appended).
    pub fn insert_rule(&mut self, chain: &str, position: usize, entry: Entry) -> Result<(), Problem> {
        let c = self.chain_mut(chain).ok_or_else(|| format!("{chain}: no such chain"))?;
        let at = position.min(c.rules.len());
        let rule = Rule { entry, old: None };
        self.count(&rule, 1);
        let c = self.chain_mut(chain).ok_or_else(|| format!("{chain}: no such chain"))?;
        c.rules.insert(at, rule);
        Ok(())
    }

    /// Lays the table out: entries at their final offsets, every jump's
    /// verdict patched, counters zero.
    pub fn layout(&self) -> Result<Blob, Problem> {
        let family = self.family;
        let head = error_entry(family, "X").len();
        let tail = standard_entry(family, 0).len();
        // First pass: where each chain starts.
        let mut starts = HashMap::with_capacity(self.builtins.len() + self.users.len());
        let mut offset = 0usize;
        for chain in self.chains() {
            if chain.hook.is_none() {
                offset += head;
            }
            starts.insert(chain.name.as_str(), offset);
            offset += chain.rules.iter().map(|r| r.entry.bytes.len()).sum::<usize>() + tail;
        }
        let total = offset + head;
        u32::try_from(total).map_err(|_| "a table over 4 GiB".to_string())?;
        let mut blob = Blob { bytes: vec![0; HEAD], entries: 0, hook_entry: [0; 5], underflow: [0; 5], old: Vec::new() };
        blob.bytes.reserve_exact(total);
        for chain in self.chains() {
            if chain.hook.is_none() {
                blob.push(&error_entry(family, &chain.name), chain.old_ends.0);
            } else if let Some(hook) = chain.hook {
                blob.hook_entry[hook] = blob.offset();
            }
            for rule in &chain.rules {
                let at = blob.offset() as usize;
                blob.push(&rule.entry.bytes, rule.old);
                if let Some(jump) = &rule.entry.jump {
                    let to = if &**jump == FALLTHROUGH {
                        at + rule.entry.bytes.len()
                    } else {
                        *starts.get(&**jump).ok_or_else(|| format!("a jump to {jump}, which is no chain"))?
                    };
                    let verdict_at = at + usize::from(u16_at(&rule.entry.bytes, family.offsets_at())) + 32;
                    put_u32(&mut blob.bytes, HEAD + verdict_at, to as u32);
                }
            }
            if let Some(hook) = chain.hook {
                blob.underflow[hook] = blob.offset();
                blob.push(&standard_entry(family, chain.policy), chain.old_ends.1);
            } else {
                blob.push(&standard_entry(family, VERDICT_RETURN), chain.old_ends.1);
            }
        }
        blob.push(&error_entry(family, "ERROR"), None);
        Ok(blob)
    }
}

impl Blob {
    /// The entries.
    pub fn entries_bytes(&self) -> &[u8] {
        self.bytes.get(HEAD..).unwrap_or_default()
    }

    /// Offset of the next entry in the table.
    fn offset(&self) -> u32 {
        (self.bytes.len() - HEAD) as u32
    }

    fn push(&mut self, entry: &[u8], old: Option<u32>) {
        self.bytes.extend_from_slice(entry);
        self.entries += 1;
        self.old.push(old);
    }
}

/// A user chain read ends with its `RETURN` tail: not a rule.
fn drop_tail(mut chain: Chain) -> Chain {
    if chain.hook.is_none() && chain.rules.pop().is_some() {
        chain.old_ends.1 = chain.old_ends.0.map(|head| head + chain.rules.len() as u32 + 1);
    }
    chain
}

fn split(family: Family, blob: &[u8]) -> Result<Vec<Raw<'_>>, Problem> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < blob.len() {
        let next = usize::from(u16_at(blob, offset + family.offsets_at() + 2));
        if next < family.entry_len() || offset + next > blob.len() {
            return Err(format!("a malformed entry at offset {offset}"));
        }
        out.push(Raw { offset, bytes: &blob[offset..offset + next] });
        offset += next;
    }
    Ok(out)
}

/// Offset of each chain's first entry → its name (jumps land there).
fn chain_starts(family: Family, raws: &[Raw], valid_hooks: u32, hook_entry: &[u32; 5]) -> HashMap<u32, Arc<str>> {
    let mut starts = HashMap::new();
    for raw in raws.iter().filter(|r| is_error(family, r.bytes)) {
        starts.insert((raw.offset + raw.bytes.len()) as u32, error_name(family, raw.bytes).into());
    }
    for hook in (0..5).filter(|h| valid_hooks & (1 << h) != 0) {
        starts.insert(hook_entry[hook], HOOKS[hook].into());
    }
    starts
}

fn target_at(family: Family, entry: &[u8]) -> usize {
    usize::from(u16_at(entry, family.offsets_at()))
}

/// The target's name, NUL-terminated field without its NULs.
fn target_name(family: Family, entry: &[u8]) -> &[u8] {
    let at = target_at(family, entry);
    let field = entry.get(at + 2..at + 31).unwrap_or_default();
    &field[..field.iter().position(|b| *b == 0).unwrap_or(field.len())]
}

fn is_error(family: Family, entry: &[u8]) -> bool {
    target_name(family, entry) == b"ERROR"
}

fn error_name(family: Family, entry: &[u8]) -> String {
    let at = target_at(family, entry);
    c_string(entry.get(at + 32..at + 62).unwrap_or_default())
}

fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn standard_verdict(family: Family, entry: &[u8]) -> Option<i32> {
    (target_name(family, entry).is_empty()).then(|| u32_at(entry, target_at(family, entry) + 32) as i32)
}

/// A rule read: counters and `comefrom` cleared, a jump's verdict turned
/// into the chain it enters (zeroed in the bytes).
fn read_entry(family: Family, raw: &Raw, starts: &HashMap<u32, Arc<str>>) -> Result<Entry, Problem> {
    let mut bytes = raw.bytes.to_vec();
    clear_runtime(family, &mut bytes);
    let mut jump = None;
    if let Some(verdict) = standard_verdict(family, raw.bytes).filter(|v| *v >= 0) {
        let verdict = verdict as u32;
        jump = Some(if verdict as usize == raw.offset + raw.bytes.len() {
            fallthrough()
        } else {
            starts.get(&verdict).cloned().ok_or_else(|| format!("a jump into the middle of a chain at offset {}", raw.offset))?
        });
        let at = target_at(family, &bytes) + 32;
        put_u32(&mut bytes, at, 0);
    }
    Ok(Entry { bytes, jump })
}

/// Zeroes what the kernel keeps in an entry (`comefrom`, counters).
fn clear_runtime(family: Family, bytes: &mut [u8]) {
    let comefrom = family.offsets_at() + 4;
    bytes[comefrom..comefrom + 4].fill(0);
    let counters = family.counters_at();
    bytes[counters..counters + 16].fill(0);
}

/// Whether two rules are the same rule (`-D` by spec).
fn same_rule(family: Family, a: &Entry, b: &Entry) -> bool {
    let _ = family;
    a.jump == b.jump && a.bytes == b.bytes
}
