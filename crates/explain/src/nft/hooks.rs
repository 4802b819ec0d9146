//! The order the kernel runs base chains in: at each hook by priority
//! (every table of the packet's family), with the routing decision
//! between hooks, as the iptables tracer's hooks do. NAT chains run only
//! for a connection's first packet, and only until one of them has done
//! that hook's kind of NAT; a packet a local process sends to a local
//! address loops back through PREROUTING and INPUT without a second NAT
//! lookup.

use super::walk::Walker;
use crate::error::ExplainError;
use crate::tracer::flight::{Flight, Hook as FlightHook, Iface};
use crate::tracer::walk::Exit;
use crate::tracer::{Outcome, Packet, Path, Policy, Step, TraceContext, Verdict};
use nftables::{BaseChain, ChainType, Family, Hook, TableContents};
use std::cell::Cell;

/// Traces `packet` through the base chains of `tables`.
pub(super) fn trace_tables(tables: &[TableContents], ctx: &TraceContext, packet: &Packet) -> Result<Verdict, ExplainError> {
    let forks = Cell::new(0);
    let mut run = Run { tables, walker: Walker { ctx, forks: &forks }, ctx, ended: Vec::new() };
    let start = vec![Flight::start(packet)];
    match packet.origin {
        crate::tracer::Origin::Local => run.local(start)?,
        crate::tracer::Origin::Inbound { .. } => run.inbound(start)?,
    }
    Ok(Verdict::from_paths(run.ended))
}

struct Run<'a> {
    tables: &'a [TableContents],
    walker: Walker<'a>,
    ctx: &'a TraceContext,
    ended: Vec<Path>,
}

/// Whether NAT chains run at a stage.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nat {
    Run,
    Skip,
}

impl Run<'_> {
    fn local(&mut self, start: Vec<Flight>) -> Result<(), ExplainError> {
        let sent = self.stage(Hook::Output, Nat::Run, start)?;
        let sent = self.stage(Hook::Postrouting, Nat::Run, sent)?;
        let (looped, away) = self.route(sent);
        self.finish(away, false);
        let looped = looped
            .into_iter()
            .map(|mut flight| {
                flight.input = Iface::Known("lo".to_string());
                flight
            })
            .collect();
        let looped = self.stage(Hook::Prerouting, Nat::Skip, looped)?;
        let delivered = self.stage(Hook::Input, Nat::Skip, looped)?;
        self.finish(delivered, true);
        Ok(())
    }

    fn inbound(&mut self, start: Vec<Flight>) -> Result<(), ExplainError> {
        let arrived = self.stage(Hook::Prerouting, Nat::Run, start)?;
        let (local, forwarded) = self.route(arrived);
        let delivered = self.stage(Hook::Input, Nat::Run, local)?;
        self.finish(delivered, true);
        let forwarded = self.stage(Hook::Forward, Nat::Run, forwarded)?;
        let sent = self.stage(Hook::Postrouting, Nat::Run, forwarded)?;
        self.finish(sent, false);
        Ok(())
    }

    fn route(&self, flights: Vec<Flight>) -> (Vec<Flight>, Vec<Flight>) {
        let (mut local, mut away) = (Vec::new(), Vec::new());
        for mut flight in flights {
            let is_local = self.ctx.is_local(flight.destination);
            flight.steps.push(Step::Route { destination: flight.destination, local: is_local });
            if is_local { local.push(flight) } else { away.push(flight) }
        }
        (local, away)
    }

    /// The base chains at `hook` for IPv4 (or IPv6) packets, by priority.
    fn chains_at(tables: &[TableContents], hook: Hook, ipv4: bool) -> Vec<(&TableContents, &str, BaseChain)> {
        let mut chains: Vec<_> = tables
            .iter()
            .filter(|t| matches!((t.table.family, ipv4), (Family::Ip, true) | (Family::Ip6, false) | (Family::Inet, _)))
            .flat_map(|t| t.chains.iter().filter_map(move |c| Some((t, c.name.as_str(), c.base?))))
            .filter(|(_, _, base)| base.hook == hook)
            .collect();
        chains.sort_by_key(|(_, _, base)| base.priority);
        chains
    }

    fn stage(&mut self, hook: Hook, nat: Nat, mut live: Vec<Flight>) -> Result<Vec<Flight>, ExplainError> {
        let Some(first) = live.first() else { return Ok(live) };
        let ipv4 = first.source.is_ipv4();
        for flight in &mut live {
            flight.hook = flight_hook(hook);
        }
        for (table, chain, base) in Self::chains_at(self.tables, hook, ipv4) {
            let mut next = Vec::new();
            for flight in live {
                if base.kind == ChainType::Nat && (nat == Nat::Skip || nat_done(&flight, hook)) {
                    next.push(flight);
                    continue;
                }
                for (mut flight, exit) in self.walker.run(table, chain, flight, 0)? {
                    let exit = match exit {
                        Exit::Return => self.policy(table, chain, base, &mut flight),
                        exit => exit,
                    };
                    match exit {
                        Exit::Drop => self.end(flight, Outcome::Drop),
                        Exit::Reject => self.end(flight, Outcome::Reject),
                        Exit::Accept | Exit::Return => next.push(flight),
                    }
                }
            }
            live = next;
        }
        Ok(live)
    }

    fn policy(&self, table: &TableContents, chain: &str, base: BaseChain, flight: &mut Flight) -> Exit {
        if base.policy == nftables::Policy::Accept {
            return Exit::Accept;
        }
        flight.steps.push(Step::Policy {
            table: format!("{} {}", table.table.family.name(), table.table.name),
            chain: chain.to_string(),
            policy: Policy::Drop,
        });
        Exit::Drop
    }

    fn finish(&mut self, flights: Vec<Flight>, delivered_locally: bool) {
        for flight in flights {
            let outcome = flight.through_every_hook(delivered_locally);
            self.end(flight, outcome);
        }
    }

    fn end(&mut self, flight: Flight, outcome: Outcome) {
        self.ended.push(flight.ended(outcome));
    }
}

/// This hook's kind of NAT (destination before routing, source after)
/// already happened, so its NAT chains do not run again.
fn nat_done(flight: &Flight, hook: Hook) -> bool {
    match hook {
        Hook::Prerouting | Hook::Output => flight.dnat,
        Hook::Postrouting | Hook::Input | Hook::Forward => flight.snat,
    }
}

fn flight_hook(hook: Hook) -> FlightHook {
    match hook {
        Hook::Prerouting => FlightHook::Prerouting,
        Hook::Input => FlightHook::Input,
        Hook::Forward => FlightHook::Forward,
        Hook::Output => FlightHook::Output,
        Hook::Postrouting => FlightHook::Postrouting,
    }
}
