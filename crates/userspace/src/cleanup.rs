//! Removing userspace mode's chains and jumps (upstream's
//! `CleanupLeftovers` of the userspace proxier): from an `iptables-save`
//! dump, the built-in chains' rules jumping to our chains are deleted,
//! then our chains flushed and deleted, in one `iptables-restore
//! --noflush` per backend and family that holds any.

use model::IpFamily;
use proxier::Cleaned;
use std::fmt::Write;
use xtables::apply::{Backend, Iptables};
use xtables::chains::USERSPACE_CHAINS;

/// Cleans both backends of both families; a backend whose tools are
/// missing holds nothing and is skipped.
pub(crate) async fn remove_everywhere() -> Vec<Cleaned> {
    let mut cleaned = Vec::new();
    for family in [IpFamily::V4, IpFamily::V6] {
        for backend in Backend::ALL {
            let Ok(saved) = Iptables::new(backend, family).save().await else { continue };
            let what = format!("userspace {backend} {family}");
            let result = match removal_input(&saved) {
                None => Ok(String::new()),
                Some(input) => restore(backend, family, &input).await.map(|()| "chains and jumps".to_string()),
            };
            cleaned.push(Cleaned { what, result });
        }
    }
    cleaned
}

async fn restore(backend: Backend, family: IpFamily, input: &str) -> Result<(), String> {
    let base = if family == IpFamily::V6 { "ip6tables" } else { "iptables" };
    let inv = host::Invocation::with_args(format!("{base}-{backend}-restore"), &["--noflush", "--wait=5"]);
    host::command::output_with(&inv, Some(input)).await.map(drop).map_err(|e| e.to_string())
}

/// The `iptables-restore --noflush` input removing our jumps and chains
/// from `saved`; `None` when it holds none.
pub fn removal_input(saved: &str) -> Option<String> {
    let mut out = String::new();
    let mut table = TableRemoval::default();
    for line in saved.lines() {
        if let Some(name) = line.strip_prefix('*') {
            std::mem::take(&mut table).write(&mut out);
            table.name = name.trim().to_string();
        } else if let Some(decl) = line.strip_prefix(':') {
            let chain = decl.split_whitespace().next().unwrap_or_default();
            if USERSPACE_CHAINS.contains(&chain) {
                table.chains.push(chain.to_string());
            }
        } else if let Some(rule) = line.strip_prefix("-A ").filter(|rule| is_our_jump(rule)) {
            table.jumps.push(rule.to_string());
        }
    }
    table.write(&mut out);
    (!out.is_empty()).then_some(out)
}

/// What one table of the dump holds of ours.
#[derive(Default)]
struct TableRemoval {
    name: String,
    jumps: Vec<String>,
    chains: Vec<String>,
}

impl TableRemoval {
    /// Its `*table ... COMMIT` block (jumps deleted, chains flushed and
    /// deleted), if it holds anything of ours.
    fn write(self, out: &mut String) {
        if self.jumps.is_empty() && self.chains.is_empty() {
            return;
        }
        let _ = writeln!(out, "*{}", self.name);
        let lines = self.jumps.iter().map(|j| format!("-D {j}"))
            .chain(self.chains.iter().map(|c| format!(":{c} - [0:0]")))
            .chain(self.chains.iter().map(|c| format!("-X {c}")));
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
        out.push_str("COMMIT\n");
    }
}

/// A built-in chain's rule jumping to one of our chains.
fn is_our_jump(rule: &str) -> bool {
    let chain = rule.split_whitespace().next().unwrap_or_default();
    let builtin = ["PREROUTING", "INPUT", "OUTPUT", "FORWARD", "POSTROUTING"].contains(&chain);
    let mut words = rule.split_whitespace();
    let target = std::iter::from_fn(|| words.next()).skip_while(|w| *w != "-j").nth(1);
    builtin && target.is_some_and(|t| USERSPACE_CHAINS.contains(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_our_jumps_then_our_chains_only() {
        let saved = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-PORTALS-CONTAINER - [0:0]\n:KUBE-SERVICES - [0:0]\n\
                     -A PREROUTING -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-CONTAINER\n\
                     -A PREROUTING -j KUBE-SERVICES\n-A KUBE-PORTALS-CONTAINER -d 10.0.0.1/32 -p tcp -j REDIRECT --to-ports 40000\nCOMMIT\n\
                     *filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n";
        let input = removal_input(saved).unwrap_or_default();
        assert_eq!(
            input,
            "*nat\n-D PREROUTING -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-CONTAINER\n\
             :KUBE-PORTALS-CONTAINER - [0:0]\n-X KUBE-PORTALS-CONTAINER\nCOMMIT\n"
        );
        assert_eq!(removal_input("*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n"), None);
    }
}
