//! Walks one chain of one table for one packet, following jumps, gotos and
//! returns, and forking the packet at every match that could go either
//! way. Each result is one path's packet and how it left the chain.

use super::context::TraceContext;
use super::error::TraceError;
use super::flight::Flight;
use super::matches::{RuleSite, Tri};
use super::rules::{Chain, Rule, Table};
use super::target::Target;
use super::verdict::{RuleRef, Step};
use std::cell::Cell;

/// Kernel limit on nested jumps; deeper means a loop.
pub(crate) const MAX_DEPTH: usize = 64;

/// How many branch points one trace may explore.
pub(crate) const MAX_PATHS: usize = 10_000;

/// How a packet leaves a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Fell off the end or hit RETURN: the caller continues.
    Return,
    /// ACCEPT (or a NAT target): this table is done for this hook.
    Accept,
    /// DROP
    Drop,
    /// REJECT
    Reject,
}

/// Walks chains of one table; counts forks against [`MAX_PATHS`].
pub(crate) struct Walker<'a> {
    pub ctx: &'a TraceContext,
    pub forks: &'a Cell<usize>,
}

impl Walker<'_> {
    /// Runs `chain` of `table` for `flight`: every path's packet and exit.
    pub fn run(&self, table: &Table, chain: &Chain, flight: Flight, depth: usize) -> Result<Vec<(Flight, Exit)>, TraceError> {
        if depth > MAX_DEPTH {
            return Err(TraceError::ChainLoop { table: table.name.clone(), chain: chain.name.clone(), limit: MAX_DEPTH });
        }
        let mut done = Vec::new();
        let mut pending = vec![(0usize, flight)];
        while let Some((index, flight)) = pending.pop() {
            let Some(rule) = chain.rules.get(index) else {
                done.push((flight, Exit::Return));
                continue;
            };
            for (flight, matched) in self.decide(table, chain, index, rule, flight)? {
                if matched {
                    self.apply(table, rule, index, flight, depth, &mut pending, &mut done)?;
                } else {
                    pending.push((index + 1, flight));
                }
            }
        }
        Ok(done)
    }

    /// Evaluates a rule's matches: one or two (forked) packets, each with
    /// whether the rule matched on that branch.
    fn decide(&self, table: &Table, chain: &Chain, index: usize, rule: &Rule, mut flight: Flight) -> Result<Vec<(Flight, bool)>, TraceError> {
        let text = format!("-A {} {}", chain.name, rule.spec);
        let site = RuleSite { line: rule.line, text: &text };
        let mut assumed = Vec::new();
        let (mut chance, mut sticky) = (1.0, false);
        for m in &rule.matches {
            match m.eval(&flight, self.ctx, &site)? {
                Tri::Yes => {}
                Tri::No => return Ok(vec![(flight, false)]),
                Tri::Either(what) => {
                    chance *= m.chance().unwrap_or(1.0);
                    sticky |= m.is_affinity_check();
                    assumed.push(what);
                }
            }
        }
        let rule_ref = RuleRef {
            table: table.name.clone(),
            chain: chain.name.clone(),
            index: index + 1,
            line: rule.line,
            spec: rule.spec.clone(),
        };
        if assumed.is_empty() {
            flight.steps.push(Step::Rule { rule: rule_ref, assumed });
            return Ok(vec![(flight, true)]);
        }
        self.fork()?;
        let mut missed = flight.clone();
        if chance < 1.0 {
            missed.probability *= 1.0 - chance;
            flight.probability *= chance;
        }
        flight.sticky |= sticky;
        missed.steps.push(Step::NotTaken { rule: rule_ref.clone(), assumed: assumed.clone() });
        flight.steps.push(Step::Rule { rule: rule_ref, assumed });
        Ok(vec![(missed, false), (flight, true)])
    }

    fn fork(&self) -> Result<(), TraceError> {
        self.forks.set(self.forks.get() + 1);
        if self.forks.get() > MAX_PATHS {
            return Err(TraceError::TooManyPaths { limit: MAX_PATHS });
        }
        Ok(())
    }

    /// Applies a matched rule's target.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        table: &Table,
        rule: &Rule,
        index: usize,
        mut flight: Flight,
        depth: usize,
        pending: &mut Vec<(usize, Flight)>,
        done: &mut Vec<(Flight, Exit)>,
    ) -> Result<(), TraceError> {
        let next = index + 1;
        match &rule.target {
            Target::None => pending.push((next, flight)),
            Target::Mark { .. } => {
                flight.mark = rule.target.apply_mark(flight.mark);
                pending.push((next, flight));
            }
            Target::Accept => done.push((flight, Exit::Accept)),
            Target::Drop => done.push((flight, Exit::Drop)),
            Target::Reject => done.push((flight, Exit::Reject)),
            Target::Return => done.push((flight, Exit::Return)),
            Target::Dnat { to, port } => {
                flight.destination = *to;
                flight.destination_port = port.unwrap_or(flight.destination_port);
                flight.dnat = true;
                done.push((flight, Exit::Accept));
            }
            Target::Snat { to } => {
                flight.source = *to;
                flight.snat = true;
                done.push((flight, Exit::Accept));
            }
            Target::Masquerade => {
                flight.snat = true;
                done.push((flight, Exit::Accept));
            }
            Target::Jump(name) | Target::Goto(name) => {
                let goto = matches!(rule.target, Target::Goto(_));
                let callee = table.chain(name).ok_or_else(|| TraceError::UnknownTarget {
                    line: rule.line,
                    table: table.name.clone(),
                    rule: rule.spec.clone(),
                    target: name.clone(),
                })?;
                for (flight, exit) in self.run(table, callee, flight, depth + 1)? {
                    match exit {
                        Exit::Return if !goto => pending.push((next, flight)),
                        exit => done.push((flight, exit)),
                    }
                }
            }
        }
        Ok(())
    }
}
