//! Everything that can go wrong reading rules back or tracing a packet.
//! A rule the tracer does not understand is always an error naming the
//! rule: it never guesses what an unknown match or target would do.

/// Why rules could not be parsed or a packet could not be traced.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A line of the restore input is malformed (or uses a command the
    /// tracer does not support, such as `-D`).
    #[error("line {line}: {reason}: {text}")]
    Syntax {
        /// 1-based line number in the text given to `parse_rules`.
        line: usize,
        /// The offending line.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A rule loads a match module (`-m NAME`) the tracer cannot evaluate.
    #[error("line {line}: unknown match module `{module}` in rule: {rule}")]
    UnknownMatch {
        /// Line of the rule.
        line: usize,
        /// The whole rule line.
        rule: String,
        /// The module name after `-m`.
        module: String,
    },
    /// A rule jumps to something that is neither a target the tracer knows
    /// nor a user chain of the same table.
    #[error("line {line}: unknown target `{target}` (neither a target the tracer knows nor a user chain of table {table}) in rule: {rule}")]
    UnknownTarget {
        /// Line of the rule.
        line: usize,
        /// The table the rule is in.
        table: String,
        /// The whole rule line.
        rule: String,
        /// The name after `-j` / `-g`.
        target: String,
    },
    /// A match or target option the tracer does not model.
    #[error("line {line}: unsupported option `{option}` of {owner} in rule: {rule}")]
    UnsupportedOption {
        /// Line of the rule.
        line: usize,
        /// The whole rule line.
        rule: String,
        /// `match tcp`, `target DNAT`, `rule` (for base options) ...
        owner: String,
        /// The option, e.g. `--tcp-flags`.
        option: String,
    },
    /// An option's value cannot be parsed or is outside what the tracer
    /// models (e.g. a DNAT address range).
    #[error("line {line}: bad value for `{option}` ({reason}) in rule: {rule}")]
    BadValue {
        /// Line of the rule.
        line: usize,
        /// The whole rule line.
        rule: String,
        /// The option whose value is bad.
        option: String,
        /// What is wrong with the value.
        reason: String,
    },
    /// A rule is appended to a chain the input never declared.
    #[error("line {line}: chain `{chain}` is not declared in table {table}: {rule}")]
    UndeclaredChain {
        /// Line of the rule.
        line: usize,
        /// The table.
        table: String,
        /// The chain name.
        chain: String,
        /// The whole rule line.
        rule: String,
    },
    /// A `-m set` rule names an ipset the trace context does not hold.
    #[error("line {line}: ipset `{set}` is not in the trace context (rule: {rule})")]
    UnknownIpset {
        /// Line of the rule.
        line: usize,
        /// The whole rule line.
        rule: String,
        /// The set name.
        set: String,
    },
    /// A `-m set` rule's direction flags do not fit the set's type.
    #[error("line {line}: ipset `{set}` of type {kind} cannot be matched with flags `{flags}` (rule: {rule})")]
    IpsetFlags {
        /// Line of the rule.
        line: usize,
        /// The whole rule line.
        rule: String,
        /// The set name.
        set: String,
        /// The set's type, e.g. `hash:ip,port`.
        kind: String,
        /// The flags of the rule, e.g. `dst`.
        flags: String,
    },
    /// Jumps nest deeper than the kernel allows: a loop between chains.
    #[error("chain nesting deeper than {limit} at {table} {chain}: jump loop")]
    ChainLoop {
        /// The table.
        table: String,
        /// The chain entered too deep.
        chain: String,
        /// The nesting limit.
        limit: usize,
    },
    /// Branching matches produced more paths than the tracer follows.
    #[error("more than {limit} paths: the rules branch too much to trace")]
    TooManyPaths {
        /// The limit.
        limit: usize,
    },
    /// A line of `ipset save` text is malformed.
    #[error("ipset line {line}: {reason}: {text}")]
    IpsetSyntax {
        /// 1-based line number.
        line: usize,
        /// The offending line.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
}
