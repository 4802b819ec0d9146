//! Walks one chain for one packet: rules in order, following jumps
//! (which return), gotos (which do not) and verdicts, forking where a rule
//! forks. Each result is one path's packet and how it left the chain.

use super::describe::rule_text;
use super::eval::{RuleEnd, eval_rule};
use crate::error::ExplainError;
use crate::tracer::flight::Flight;
use crate::tracer::walk::Exit;
use crate::tracer::{RuleRef, Step, TraceContext};
use nftables::{TableContents, Verdict};
use std::cell::Cell;

/// Kernel limit on nested jumps.
const MAX_DEPTH: usize = 16;
/// How many forks one trace may explore.
const MAX_PATHS: usize = 10_000;

/// Walks chains of one table.
pub(super) struct Walker<'a> {
    pub ctx: &'a TraceContext,
    pub forks: &'a Cell<usize>,
}

impl Walker<'_> {
    /// Runs chain `name` of `table` for `flight`.
    pub fn run(&self, table: &TableContents, name: &str, flight: Flight, depth: usize) -> Result<Vec<(Flight, Exit)>, ExplainError> {
        if depth > MAX_DEPTH {
            return Err(ExplainError::Nftables(format!("chain {name}: jumps nest deeper than {MAX_DEPTH}")));
        }
        if !table.chains.iter().any(|c| c.name == name) {
            return Err(ExplainError::Nftables(format!("a jump or goto to chain {name}, which the table lacks")));
        }
        let rules: Vec<_> = table.rules_of(name).collect();
        let mut done = Vec::new();
        let mut pending = vec![(0usize, flight)];
        while let Some((index, flight)) = pending.pop() {
            let Some(rule) = rules.get(index) else {
                done.push((flight, Exit::Return));
                continue;
            };
            let results = eval_rule(table, rule, self.ctx, flight)?;
            if results.len() > 1 {
                self.forks.set(self.forks.get() + results.len() - 1);
                if self.forks.get() > MAX_PATHS {
                    return Err(ExplainError::Nftables(format!("more than {MAX_PATHS} paths")));
                }
            }
            for (mut flight, notes, end) in results {
                if end != RuleEnd::Missed {
                    flight.steps.push(Step::Rule { rule: rule_ref(table, name, index, rule), assumed: Vec::new() });
                    flight.steps.extend(notes.into_iter().map(Step::Note));
                }
                match end {
                    RuleEnd::Missed | RuleEnd::Matched | RuleEnd::Verdict(Verdict::Continue) => pending.push((index + 1, flight)),
                    RuleEnd::Nat | RuleEnd::Verdict(Verdict::Accept) => done.push((flight, Exit::Accept)),
                    RuleEnd::Verdict(Verdict::Drop) => done.push((flight, Exit::Drop)),
                    RuleEnd::Reject => done.push((flight, Exit::Reject)),
                    RuleEnd::Verdict(Verdict::Return) => done.push((flight, Exit::Return)),
                    RuleEnd::Verdict(Verdict::Jump(callee)) => {
                        for (flight, exit) in self.run(table, &callee, flight, depth + 1)? {
                            match exit {
                                Exit::Return => pending.push((index + 1, flight)),
                                exit => done.push((flight, exit)),
                            }
                        }
                    }
                    RuleEnd::Verdict(Verdict::Goto(callee)) => done.extend(self.run(table, &callee, flight, depth + 1)?),
                }
            }
        }
        Ok(done)
    }
}

fn rule_ref(table: &TableContents, chain: &str, index: usize, rule: &nftables::Rule) -> RuleRef {
    RuleRef {
        table: format!("{} {}", table.table.family.name(), table.table.name),
        chain: chain.to_string(),
        index: index + 1,
        line: 0,
        spec: match rule.handle {
            Some(handle) => format!("{}   [handle {handle}]", rule_text(rule)),
            None => rule_text(rule),
        },
    }
}
