//! The order in which the kernel runs tables at each hook, and the
//! routing decision between them: the iptables datapath as a whole.
//!
//! * Local process: OUTPUT (raw, mangle, nat, filter, security), then
//!   POSTROUTING (mangle, nat). If the destination (after DNAT) is local,
//!   the packet loops back over `lo`: PREROUTING (raw, mangle) and INPUT
//!   (mangle, filter, security) — no second NAT lookup, the connection's
//!   NAT is already decided.
//! * Inbound: PREROUTING (raw, mangle, nat), route on the post-DNAT
//!   destination, then INPUT (mangle, filter, security, nat) for a local
//!   address, else FORWARD (mangle, filter, security) and POSTROUTING
//!   (mangle, nat). Filter rules therefore see the DNATed destination.

use super::context::TraceContext;
use super::error::TraceError;
use super::flight::{Flight, Hook, Iface};
use super::packet::{Origin, Packet};
use super::rules::{Policy, Rules};
use super::verdict::{Outcome, Path, Step, Verdict};
use super::walk::{Exit, Walker};
use std::cell::Cell;

/// Traces `packet` through `rules`.
pub(crate) fn trace_rules(rules: &Rules, ctx: &TraceContext, packet: &Packet) -> Result<Verdict, TraceError> {
    let forks = Cell::new(0);
    let mut run = Run { rules, ctx, walker: Walker { ctx, forks: &forks }, ended: Vec::new() };
    let start = vec![Flight::start(packet)];
    match packet.origin {
        Origin::Local => run.local(start)?,
        Origin::Inbound { .. } => run.inbound(start)?,
    }
    Ok(Verdict::from_paths(run.ended))
}

struct Run<'a> {
    rules: &'a Rules,
    ctx: &'a TraceContext,
    walker: Walker<'a>,
    ended: Vec<Path>,
}

impl Run<'_> {
    fn local(&mut self, start: Vec<Flight>) -> Result<(), TraceError> {
        let sent = self.stage(Hook::Output, &["raw", "mangle", "nat", "filter", "security"], start)?;
        let (balanced, sent) = self.ipvs(sent);
        let balanced = self.stage(Hook::Postrouting, &["mangle", "nat"], balanced)?;
        self.finish(balanced, false);
        let sent = self.stage(Hook::Postrouting, &["mangle", "nat"], sent)?;
        let (looped, away) = self.route(sent);
        self.finish(away, false);
        let looped = looped
            .into_iter()
            .map(|mut flight| {
                flight.input = Iface::Known("lo".to_string());
                flight
            })
            .collect();
        let looped = self.stage(Hook::Prerouting, &["raw", "mangle"], looped)?;
        let delivered = self.stage(Hook::Input, &["mangle", "filter", "security"], looped)?;
        self.finish(delivered, true);
        Ok(())
    }

    fn inbound(&mut self, start: Vec<Flight>) -> Result<(), TraceError> {
        let arrived = self.stage(Hook::Prerouting, &["raw", "mangle", "nat"], start)?;
        let (local, forwarded) = self.route(arrived);
        let delivered = self.stage(Hook::Input, &["mangle", "filter", "security", "nat"], local)?;
        let (balanced, delivered) = self.ipvs(delivered);
        let balanced = self.stage(Hook::Postrouting, &["mangle", "nat"], balanced)?;
        self.finish(balanced, false);
        self.finish(delivered, true);
        let forwarded = self.stage(Hook::Forward, &["mangle", "filter", "security"], forwarded)?;
        let sent = self.stage(Hook::Postrouting, &["mangle", "nat"], forwarded)?;
        self.finish(sent, false);
        Ok(())
    }

    /// IPVS after the INPUT (or OUTPUT) chains: packets to a virtual
    /// server fork to its real servers (or end rejected when it has none);
    /// returns (balanced, untouched).
    fn ipvs(&mut self, flights: Vec<Flight>) -> (Vec<Flight>, Vec<Flight>) {
        let (mut balanced, mut untouched) = (Vec::new(), Vec::new());
        for mut flight in flights {
            let Some(vs) = self.ctx.virtual_server(flight.protocol, flight.destination()) else {
                untouched.push(flight);
                continue;
            };
            let shares = vs.shares();
            if shares.is_empty() {
                flight.steps.push(Step::Note(format!("{vs}: no real server (ICMP port unreachable)")));
                self.end(flight, Outcome::Reject);
                continue;
            }
            for (real, share) in shares {
                let mut to = flight.clone();
                to.steps.push(Step::Note(format!("{vs}: real server {real} ({:.1}% of new connections)", share * 100.0)));
                to.destination = real.ip();
                to.destination_port = real.port();
                to.dnat = true;
                to.probability *= share;
                balanced.push(to);
            }
        }
        (balanced, untouched)
    }

    /// Splits packets into (to a local address, elsewhere), recording the
    /// decision.
    fn route(&self, flights: Vec<Flight>) -> (Vec<Flight>, Vec<Flight>) {
        let (mut local, mut away) = (Vec::new(), Vec::new());
        for mut flight in flights {
            let is_local = self.ctx.is_local(flight.destination);
            flight.steps.push(Step::Route { destination: flight.destination, local: is_local });
            if is_local { local.push(flight) } else { away.push(flight) }
        }
        (local, away)
    }

    /// Runs the built-in chain of `hook` in each table, in order; dropped
    /// and rejected packets end their path here.
    fn stage(&mut self, hook: Hook, tables: &[&str], mut live: Vec<Flight>) -> Result<Vec<Flight>, TraceError> {
        for flight in &mut live {
            flight.hook = hook;
        }
        for name in tables {
            let Some(table) = self.rules.table(name) else { continue };
            let Some(chain) = table.chain(hook.chain()) else { continue };
            let mut next = Vec::new();
            for flight in live {
                for (mut flight, exit) in self.walker.run(table, chain, flight, 0)? {
                    let exit = match exit {
                        Exit::Return => {
                            let policy = chain.policy.unwrap_or(Policy::Accept);
                            if !chain.rules.is_empty() || policy != Policy::Accept {
                                flight.steps.push(Step::Policy { table: table.name.clone(), chain: chain.name.clone(), policy });
                            }
                            if policy == Policy::Drop { Exit::Drop } else { Exit::Accept }
                        }
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

    /// Ends paths that made it through every hook.
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
