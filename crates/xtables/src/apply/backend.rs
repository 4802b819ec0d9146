//! Which iptables backend to drive (`--iptables-backend auto|legacy|nft`)
//! and the tool names of each backend and IP family.
//!
//! `auto` decides as upstream's iptables wrapper script (kubernetes-sigs
//! iptables-wrappers) does: kubelet's hint chains in mangle
//! (`KUBE-IPTABLES-HINT`, `KUBE-KUBELET-CANARY`; we add our own
//! `KUBE-PROXY-CANARY`, so a restart keeps the backend it used) win,
//! checked on nft first; otherwise the backend printing more rules wins.
//! Where the wrapper breaks a tie (typically: nothing anywhere) towards nft,
//! we pick legacy, as the issue asks.

use host::command::{self, Invocation};
use crate::Error;
use model::IpFamily;
use std::fmt;
use std::str::FromStr;

/// An iptables backend: the kernel API the `iptables` tools talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// x_tables (`iptables-legacy`, `iptables-legacy-restore`, ...).
    Legacy,
    /// nf_tables through the iptables compatibility layer (`iptables-nft`).
    Nft,
}

impl Backend {
    /// Both backends.
    pub const ALL: [Backend; 2] = [Backend::Legacy, Backend::Nft];

    /// `legacy` or `nft`, as the tool names and the flag spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Legacy => "legacy",
            Backend::Nft => "nft",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value of `--iptables-backend`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum BackendChoice {
    /// Whichever backend already holds rules, else legacy.
    #[default]
    Auto,
    /// Always this backend.
    Fixed(Backend),
}

impl FromStr for BackendChoice {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Error> {
        match value {
            "auto" => Ok(BackendChoice::Auto),
            "legacy" => Ok(BackendChoice::Fixed(Backend::Legacy)),
            "nft" => Ok(BackendChoice::Fixed(Backend::Nft)),
            _ => Err(Error::UnknownBackend { value: value.to_string() }),
        }
    }
}

/// One of the three tools of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    /// `iptables` (single rule commands).
    Iptables,
    /// `iptables-save`.
    Save,
    /// `iptables-restore`.
    Restore,
}

/// The program name of `tool` for `backend` and `family`, e.g.
/// `ip6tables-nft-restore`.
pub(crate) fn program(backend: Backend, family: IpFamily, tool: Tool) -> String {
    let base = match family {
        IpFamily::V4 => "iptables",
        IpFamily::V6 => "ip6tables",
    };
    let suffix = match tool {
        Tool::Iptables => "",
        Tool::Save => "-save",
        Tool::Restore => "-restore",
    };
    format!("{base}-{backend}{suffix}")
}

/// Chains in mangle whose presence marks the backend the node uses.
const HINT_CHAINS: &[&str] = &["KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY", crate::chains::KUBE_PROXY_CANARY];

/// Resolves `choice` to a backend; `auto` reads both backends' rules
/// (both families) without creating any table.
pub async fn detect_backend(choice: BackendChoice) -> Result<Backend, Error> {
    match choice {
        BackendChoice::Fixed(backend) => Ok(backend),
        BackendChoice::Auto => Ok(pick_backend(&saved_text(Backend::Legacy).await, &saved_text(Backend::Nft).await)),
    }
}

/// Upstream's wrapper decision on the two backends' `-save` output.
fn pick_backend(legacy: &str, nft: &str) -> Backend {
    if has_hint_chain(nft) {
        Backend::Nft
    } else if has_hint_chain(legacy) {
        Backend::Legacy
    } else if rule_count(nft) > rule_count(legacy) {
        Backend::Nft
    } else {
        Backend::Legacy
    }
}

/// Both families' `-save` output of `backend`; a tool that is missing or
/// fails (no IPv6, no nf_tables) counts as holding nothing, as in the
/// wrapper. The legacy tool is run without `-t` so it creates no table.
async fn saved_text(backend: Backend) -> String {
    let mut text = String::new();
    for family in [IpFamily::V4, IpFamily::V6] {
        let save = Invocation::new(program(backend, family, Tool::Save), Vec::new());
        match command::output(&save).await {
            Ok(out) => text.push_str(&out),
            Err(err) => tracing::debug!(%err, "backend detection: ignoring"),
        }
    }
    text
}

fn has_hint_chain(saved: &str) -> bool {
    saved.lines().any(|line| {
        line.strip_prefix(':')
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|chain| HINT_CHAINS.contains(&chain))
    })
}

fn rule_count(saved: &str) -> usize {
    saved.lines().filter(|line| line.starts_with('-')).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names_cover_backend_family_and_tool() {
        assert_eq!(program(Backend::Legacy, IpFamily::V4, Tool::Iptables), "iptables-legacy");
        assert_eq!(program(Backend::Nft, IpFamily::V6, Tool::Restore), "ip6tables-nft-restore");
        assert_eq!(program(Backend::Legacy, IpFamily::V6, Tool::Save), "ip6tables-legacy-save");
    }

    #[test]
    fn choice_parses_flag_values() {
        assert_eq!("auto".parse::<BackendChoice>().ok(), Some(BackendChoice::Auto));
        assert_eq!("nft".parse::<BackendChoice>().ok(), Some(BackendChoice::Fixed(Backend::Nft)));
        let err = "iptables".parse::<BackendChoice>().err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("invalid iptables backend \"iptables\": want auto, legacy or nft"));
    }

    #[test]
    fn hint_chains_beat_rule_counts() {
        let many = "*filter\n-A INPUT -j ACCEPT\n-A INPUT -j ACCEPT\nCOMMIT\n";
        let hinted = "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n";
        assert_eq!(pick_backend(many, hinted), Backend::Nft);
        assert_eq!(pick_backend(hinted, many), Backend::Legacy);
    }

    #[test]
    fn more_rules_win_and_ties_go_to_legacy() {
        let one = "*filter\n-A INPUT -j ACCEPT\nCOMMIT\n";
        assert_eq!(pick_backend("", one), Backend::Nft);
        assert_eq!(pick_backend(one, ""), Backend::Legacy);
        assert_eq!(pick_backend(one, one), Backend::Legacy);
        assert_eq!(pick_backend("", ""), Backend::Legacy);
    }
}
