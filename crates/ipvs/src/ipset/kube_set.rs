//! The ipsets IPVS mode maintains (`ipvs-ipsets.md`), with upstream's
//! names, types and comments.

use model::IpFamily;

/// The kernel set type of a [`KubeSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetType {
    /// `hash:ip`
    HashIp,
    /// `hash:ip,port`
    HashIpPort,
    /// `hash:ip,port,ip`
    HashIpPortIp,
    /// `hash:ip,port,net`
    HashIpPortNet,
    /// `bitmap:port`
    BitmapPort,
}

impl SetType {
    /// The type as `ipset create` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SetType::HashIp => "hash:ip",
            SetType::HashIpPort => "hash:ip,port",
            SetType::HashIpPortIp => "hash:ip,port,ip",
            SetType::HashIpPortNet => "hash:ip,port,net",
            SetType::BitmapPort => "bitmap:port",
        }
    }
}

/// One of the sets of `ipvs-ipsets.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KubeSet {
    /// `KUBE-LOOP-BACK`: local endpoint ip,proto:port,ip, for hairpin SNAT.
    LoopBack,
    /// `KUBE-CLUSTER-IP`: every ClusterIP,proto:port.
    ClusterIp,
    /// `KUBE-EXTERNAL-IP`: externalIP,proto:port (externalTrafficPolicy Cluster).
    ExternalIp,
    /// `KUBE-EXTERNAL-IP-LOCAL`: externalIP,proto:port (externalTrafficPolicy Local).
    ExternalIpLocal,
    /// `KUBE-LOAD-BALANCER`: every LB ingress IP,proto:port.
    LoadBalancer,
    /// `KUBE-LOAD-BALANCER-FW`: LB IPs with loadBalancerSourceRanges.
    LoadBalancerFw,
    /// `KUBE-LOAD-BALANCER-LOCAL`: LB IPs with externalTrafficPolicy Local.
    LoadBalancerLocal,
    /// `KUBE-LOAD-BALANCER-SOURCE-IP`: LB ip,proto:port,ip the node may use.
    LoadBalancerSourceIp,
    /// `KUBE-LOAD-BALANCER-SOURCE-CIDR`: LB ip,proto:port,source range.
    LoadBalancerSourceCidr,
    /// `KUBE-NODE-PORT-TCP`
    NodePortTcp,
    /// `KUBE-NODE-PORT-LOCAL-TCP`
    NodePortLocalTcp,
    /// `KUBE-NODE-PORT-UDP`
    NodePortUdp,
    /// `KUBE-NODE-PORT-LOCAL-UDP`
    NodePortLocalUdp,
    /// `KUBE-NODE-PORT-SCTP-HASH`: node ip,sctp:port.
    NodePortSctp,
    /// `KUBE-NODE-PORT-LOCAL-SCTP-HASH`
    NodePortLocalSctp,
    /// `KUBE-HEALTH-CHECK-NODE-PORT`
    HealthCheckNodePort,
    /// `KUBE-IPVS-IPS`: the addresses bound to the dummy interface.
    IpvsIps,
}

impl KubeSet {
    /// Every set, in upstream's order.
    pub const ALL: [KubeSet; 17] = [
        KubeSet::LoopBack,
        KubeSet::ClusterIp,
        KubeSet::ExternalIp,
        KubeSet::ExternalIpLocal,
        KubeSet::LoadBalancer,
        KubeSet::LoadBalancerFw,
        KubeSet::LoadBalancerLocal,
        KubeSet::LoadBalancerSourceIp,
        KubeSet::LoadBalancerSourceCidr,
        KubeSet::NodePortTcp,
        KubeSet::NodePortLocalTcp,
        KubeSet::NodePortUdp,
        KubeSet::NodePortLocalUdp,
        KubeSet::NodePortSctp,
        KubeSet::NodePortLocalSctp,
        KubeSet::HealthCheckNodePort,
        KubeSet::IpvsIps,
    ];

    /// The IPv4 name (`KUBE-...`).
    pub fn base_name(self) -> &'static str {
        match self {
            KubeSet::LoopBack => "KUBE-LOOP-BACK",
            KubeSet::ClusterIp => "KUBE-CLUSTER-IP",
            KubeSet::ExternalIp => "KUBE-EXTERNAL-IP",
            KubeSet::ExternalIpLocal => "KUBE-EXTERNAL-IP-LOCAL",
            KubeSet::LoadBalancer => "KUBE-LOAD-BALANCER",
            KubeSet::LoadBalancerFw => "KUBE-LOAD-BALANCER-FW",
            KubeSet::LoadBalancerLocal => "KUBE-LOAD-BALANCER-LOCAL",
            KubeSet::LoadBalancerSourceIp => "KUBE-LOAD-BALANCER-SOURCE-IP",
            KubeSet::LoadBalancerSourceCidr => "KUBE-LOAD-BALANCER-SOURCE-CIDR",
            KubeSet::NodePortTcp => "KUBE-NODE-PORT-TCP",
            KubeSet::NodePortLocalTcp => "KUBE-NODE-PORT-LOCAL-TCP",
            KubeSet::NodePortUdp => "KUBE-NODE-PORT-UDP",
            KubeSet::NodePortLocalUdp => "KUBE-NODE-PORT-LOCAL-UDP",
            KubeSet::NodePortSctp => "KUBE-NODE-PORT-SCTP-HASH",
            KubeSet::NodePortLocalSctp => "KUBE-NODE-PORT-LOCAL-SCTP-HASH",
            KubeSet::HealthCheckNodePort => "KUBE-HEALTH-CHECK-NODE-PORT",
            KubeSet::IpvsIps => "KUBE-IPVS-IPS",
        }
    }

    /// The set's name for `family`: IPv6 sets are `KUBE-6-...`, cut to
    /// ipset's 31 characters, as upstream names them.
    pub fn name(self, family: IpFamily) -> String {
        let base = self.base_name();
        match family {
            IpFamily::V4 => base.to_string(),
            IpFamily::V6 => {
                let mut name = base.replacen("KUBE-", "KUBE-6-", 1);
                name.truncate(31);
                name
            }
        }
    }

    /// The kernel set type.
    pub fn set_type(self) -> SetType {
        match self {
            KubeSet::LoopBack | KubeSet::LoadBalancerSourceIp => SetType::HashIpPortIp,
            KubeSet::LoadBalancerSourceCidr => SetType::HashIpPortNet,
            KubeSet::NodePortTcp
            | KubeSet::NodePortLocalTcp
            | KubeSet::NodePortUdp
            | KubeSet::NodePortLocalUdp
            | KubeSet::HealthCheckNodePort => SetType::BitmapPort,
            KubeSet::IpvsIps => SetType::HashIp,
            _ => SetType::HashIpPort,
        }
    }

    /// Upstream's comment, used in the iptables rules matching the set.
    pub fn comment(self) -> &'static str {
        match self {
            KubeSet::LoopBack => "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose",
            KubeSet::ClusterIp => "Kubernetes service cluster ip + port for masquerade purpose",
            KubeSet::ExternalIp => "Kubernetes service external ip + port for masquerade and filter purpose",
            KubeSet::ExternalIpLocal => "Kubernetes service external ip + port with externalTrafficPolicy=local",
            KubeSet::LoadBalancer => "Kubernetes service lb portal",
            KubeSet::LoadBalancerFw => "Kubernetes service load balancer ip + port for load balancer with sourceRange",
            KubeSet::LoadBalancerLocal => {
                "Kubernetes service load balancer ip + port with externalTrafficPolicy=local"
            }
            KubeSet::LoadBalancerSourceIp => {
                "Kubernetes service load balancer ip + port + source IP for packet filter purpose"
            }
            KubeSet::LoadBalancerSourceCidr => {
                "Kubernetes service load balancer ip + port + source cidr for packet filter purpose"
            }
            KubeSet::NodePortTcp => "Kubernetes nodeport TCP port for masquerade purpose",
            KubeSet::NodePortLocalTcp => "Kubernetes nodeport TCP port with externalTrafficPolicy=local",
            KubeSet::NodePortUdp => "Kubernetes nodeport UDP port for masquerade purpose",
            KubeSet::NodePortLocalUdp => "Kubernetes nodeport UDP port with externalTrafficPolicy=local",
            KubeSet::NodePortSctp => "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
            KubeSet::NodePortLocalSctp => {
                "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'"
            }
            KubeSet::HealthCheckNodePort => "Kubernetes health check node port",
            KubeSet::IpvsIps => "Addresses on the ipvs interface",
        }
    }

    /// The `ipset create` options after the type, as upstream creates the
    /// set (`family inet hashsize 1024 maxelem 65536`, or the port range).
    pub fn create_options(self, family: IpFamily) -> String {
        match self.set_type() {
            SetType::BitmapPort => "range 0-65535".to_string(),
            _ => {
                let fam = if family == IpFamily::V6 { "inet6" } else { "inet" };
                format!("family {fam} hashsize 1024 maxelem 65536")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_names_are_prefixed_and_fit_ipset_limit() {
        assert_eq!(KubeSet::ClusterIp.name(IpFamily::V6), "KUBE-6-CLUSTER-IP");
        assert_eq!(KubeSet::LoadBalancerSourceCidr.name(IpFamily::V6), "KUBE-6-LOAD-BALANCER-SOURCE-CID");
        assert!(KubeSet::ALL.iter().all(|s| s.name(IpFamily::V6).len() <= 31 && s.name(IpFamily::V4).len() <= 31));
    }
}
