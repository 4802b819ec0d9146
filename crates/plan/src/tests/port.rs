use super::{ep, ip, net, port, snapshot};
use crate::{NoLocalEndpoints, NodeFacts, Options, PortPlan, Refusal, SyncContext};
use model::{Endpoint, ServicePort};

fn plan<'a>(svc: &'a ServicePort, eps: &'a [Endpoint]) -> PortPlan<'a> {
    let ctx = SyncContext::new(&snapshot(Vec::new()), &Options::default(), &NodeFacts::default());
    PortPlan::new(&ctx, svc, eps)
}

#[test]
fn no_endpoints_rejects_every_kind_of_traffic() {
    let svc = ServicePort { node_port: Some(30080), ..port("a") };
    let p = plan(&svc, &[]);
    assert_eq!((p.internal_refusal, p.external_refusal), (Some(Refusal::Reject), Some(Refusal::Reject)));
    assert!(!p.uses_external_path);
    assert_eq!(p.no_local_endpoints(), NoLocalEndpoints::default(), "no endpoints is not 'no local endpoints'");
}

#[test]
fn local_policies_without_local_endpoints_drop_and_count() {
    let svc = ServicePort { node_port: Some(30080), external_policy_local: true, ..port("a") };
    let eps = [ep("10.180.1.1", false)];
    let p = plan(&svc, &eps);
    assert_eq!(p.internal_refusal, None);
    assert_eq!(p.external_refusal, Some(Refusal::Drop));
    assert!(p.external_local && p.has_internal && !p.has_external);
    assert_eq!(p.no_local_endpoints(), NoLocalEndpoints { internal: 0, external: 1 });
    let itp = ServicePort { internal_policy_local: true, ..port("b") };
    let p = plan(&itp, &eps);
    assert_eq!(p.internal_refusal, Some(Refusal::Drop));
    assert_eq!(p.no_local_endpoints(), NoLocalEndpoints { internal: 1, external: 0 });
}

#[test]
fn local_endpoints_serve_local_policies() {
    let svc = ServicePort { node_port: Some(30080), external_policy_local: true, ..port("a") };
    let eps = [ep("10.180.0.1", true), ep("10.180.1.1", false)];
    let p = plan(&svc, &eps);
    assert_eq!((p.internal_refusal, p.external_refusal), (None, None));
    assert!(p.uses_cluster_endpoints && p.uses_local_endpoints && p.uses_external_path);
    assert_eq!(p.local.len(), 1);
    assert_eq!(p.cluster.len(), 2);
    assert_eq!(p.reachable.len(), 2);
}

#[test]
fn addresses_of_the_other_family_are_left_out_and_the_firewall_needs_all_three() {
    let svc = ServicePort {
        external_ips: vec![ip("192.168.99.1"), ip("fd00::99")],
        load_balancer_ips: vec![ip("1.2.3.4"), ip("2001:db8::4")],
        load_balancer_source_ranges: vec![net("192.168.0.0/16"), net("2001:db8:1::/64")],
        session_affinity_seconds: Some(300),
        ..port("a")
    };
    let eps = [ep("10.180.1.1", false)];
    let p = plan(&svc, &eps);
    assert_eq!(p.external_ips, [ip("192.168.99.1")]);
    assert_eq!(p.lb_ips, [ip("1.2.3.4")]);
    assert_eq!(p.source_ranges, [net("192.168.0.0/16")]);
    assert!(p.uses_firewall);
    assert!(p.source_ranges_hold_node, "192.168.0.2 is in 192.168.0.0/16");
    assert_eq!(p.affinity_seconds, Some(300));
    assert!(!plan(&svc, &[]).uses_firewall, "no endpoints: no firewall");
    let elsewhere = ServicePort { load_balancer_source_ranges: vec![net("203.0.113.0/24")], ..svc.clone() };
    assert!(!plan(&elsewhere, &eps).source_ranges_hold_node);
}
