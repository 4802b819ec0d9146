//! What can go wrong between the command line and a resolved
//! [`super::Config`]: the config file cannot be read or decoded, or a value
//! (from a flag or a file field) is invalid. Each message names the file,
//! the flag or the field path, and why.

use std::fmt;

/// One invalid value: which flag or config field, what it was, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The flag (`--iptables-sync-period`) or field path (`iptables.syncPeriod`).
    pub name: String,
    /// The value as given (or as defaulted).
    pub value: String,
    /// Why it is rejected.
    pub reason: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: invalid value \"{}\": {}",
            self.name, self.value, self.reason
        )
    }
}

/// Why the configuration could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `--config FILE` could not be read.
    #[error("--config: cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML for a KubeProxyConfiguration (unknown
    /// field, wrong type, bad duration).
    #[error("config file {path}: {reason}")]
    Decode {
        /// The file.
        path: String,
        /// The decoder's message, with line and column.
        reason: String,
    },
    /// `apiVersion` or `kind` is missing or not the one we read.
    #[error("config file {path}: {field} is \"{got}\", want \"{want}\"")]
    WrongType {
        /// The file.
        path: String,
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// What the file says (empty when missing).
        got: String,
        /// What it must say.
        want: &'static str,
    },
    /// One or more values are invalid; one line each.
    #[error("{}", join_lines(.0))]
    Invalid(Vec<FieldError>),
    /// `--write-config-to FILE` could not be written.
    #[error("--write-config-to: cannot write {path}: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

fn join_lines(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
