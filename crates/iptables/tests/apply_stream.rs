//! The syncer fed a streamed rendering ([`iptables::render::stream`]) on a
//! real kernel, for both backends: a first full sync into empty tables
//! (chains declared in name order with legacy), a steady full sync that
//! finds everything in place and writes nothing, a partial sync of one
//! endpoint change, all leaving exactly the rules the collected rendering
//! holds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use plan::Options;
use iptables::Table;
use xtables::apply::{Backend, Syncer};
use xtables::chains::is_service_chain;
use iptables::render::{RenderOptions, render, stream};
use model::IpFamily;
use model::Snapshot;
use support::*;
use testkit::builders::*;

/// `services` services of `endpoints` endpoints each (the first one's
/// last endpoint moved by `shift`).
fn cluster(services: u16, endpoints: u16, shift: u16) -> Snapshot {
    let mut builder = snapshot();
    for s in 0..services {
        let eps: Vec<EndpointBuilder> =
            (0..endpoints).map(|e| endpoint(pod_ip(s * endpoints + e + 1 + if s == 0 && e == 0 { shift } else { 0 }), 8080)).collect();
        let port = tcp_port("ns", &format!("svc{s}"), "http", cluster_ip(s + 1), 80);
        builder = builder.service(if s % 3 == 0 { port.node_port(30000 + s) } else { port }, eps);
    }
    builder.build()
}

fn opts() -> RenderOptions {
    RenderOptions { common: Options::with_cluster_cidr(cluster_cidr()), nfacct: false, ..RenderOptions::default() }
}

/// The rules of every table of the collected rendering of `snapshot`, as
/// `-A` lines, sorted.
fn rendered_lines(snapshot: &Snapshot) -> Vec<String> {
    let ruleset = render(snapshot, &opts()).ruleset;
    let mut lines: Vec<String> = ruleset.tables().iter().flat_map(|(_, t)| t.rules.iter().map(|r| format!("-A {r}"))).collect();
    lines.sort();
    lines
}

/// The `-A` lines of the kernel's tables that are ours (built-in chain
/// jumps left out), sorted.
fn kernel_lines(save: &str) -> Vec<String> {
    let builtin = ["-A PREROUTING ", "-A INPUT ", "-A OUTPUT ", "-A FORWARD ", "-A POSTROUTING "];
    let mut lines: Vec<String> = rule_lines(save).into_iter().filter(|l| !builtin.iter().any(|b| l.starts_with(b))).collect();
    lines.sort();
    lines
}

#[test]
fn a_streamed_rendering_syncs_first_steady_and_partial() {
    for backend in Backend::ALL {
        in_netns("stream", move || async move {
            let ipt = iptables(backend, IpFamily::V4).recording_input();
            let mut syncer = Syncer::new(ipt);
            let before = cluster(12, 3, 0);
            let first = syncer.sync(&stream(&before, &opts()), true).await.unwrap();
            let collected = render(&before, &opts()).ruleset;
            assert!(!first.partial);
            assert_eq!(first.counts, collected.counts());
            assert_eq!(first.written_rules[&Table::Nat], collected.nat.rules.len());
            assert_eq!(first.written_chains, collected.tables().iter().map(|(_, t)| t.chains.len()).sum::<usize>());
            let input = first.applied.input();
            let nat_block = &input[input.find("*nat").unwrap()..];
            let declared: Vec<&str> = nat_block.lines().filter(|l| l.starts_with(':')).collect();
            if backend == Backend::Legacy {
                let names: Vec<&str> = declared.iter().map(|l| l[1..].trim_end_matches(" - [0:0]")).collect();
                let services: Vec<&str> = names.iter().copied().filter(|c| is_service_chain(c)).collect();
                assert!(services.len() > 12 && services.windows(2).all(|w| w[0] > w[1]), "descending: {services:?}");
                assert_eq!(names[..services.len()], services[..], "legacy declares the service chains first");
                assert_eq!(names.last(), Some(&"KUBE-MARK-MASQ"), "and KUBE-MARK-MASQ last");
            }
            assert_eq!(declared.len(), collected.nat.chains.len());
            assert_eq!(kernel_lines(&ipt.save().await.unwrap()), rendered_lines(&before), "{backend}");

            let steady = syncer.sync(&stream(&before, &opts()), true).await.unwrap();
            assert!(!steady.partial && steady.written_chains == 0, "{steady:?}");
            assert_eq!(steady.applied.restore_input.as_deref(), Some(""), "{backend}: nothing differs, nothing written");

            let after = cluster(12, 3, 100);
            let partial = syncer.sync(&stream(&after, &opts()), false).await.unwrap();
            assert!(partial.partial, "{partial:?}");
            // The service's SVC chain, its new SEP chain (the old one deleted).
            assert_eq!(partial.written_chains, 2, "{}", partial.applied.input());
            assert_eq!(partial.applied.removed.iter().map(|t| t.deleted_chains.len()).sum::<usize>(), 1);
            assert_eq!(kernel_lines(&ipt.save().await.unwrap()), rendered_lines(&after), "{backend}");
        });
    }
}
