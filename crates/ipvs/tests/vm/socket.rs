//! The netlink socket against the VM's kernel, checked with `ipvsadm`.

use super::checks::sh;
use ipvs::{IpProtocol, IpvsSocket, RealServer, ServiceFlags, ServiceKey, Timeouts, VirtualServer};
use std::net::IpAddr;
use tokio::runtime::Runtime;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub fn services_and_destinations(rt: &Runtime) {
    rt.block_on(async {
        sh("ipvsadm -C");
        let ipvs = IpvsSocket::connect().await.unwrap();
        assert!(ipvs.services().await.unwrap().is_empty());

        let key = ServiceKey::new(ip("10.96.10.10"), IpProtocol::Tcp, 80);
        let mut vs = VirtualServer::new(key, "rr");
        ipvs.add_service(&vs).await.unwrap();
        let err = ipvs.add_service(&vs).await.unwrap_err();
        assert!(err.is_already_exists(), "{err}");

        vs.flags = ServiceFlags::PERSISTENT;
        vs.timeout = 10800;
        vs.scheduler = "wlc".into();
        ipvs.update_service(&vs).await.unwrap();
        let listed = ipvs.services().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].same_settings(&vs), "{:?} vs {vs:?}", listed[0]);
        assert!(ipvs.service(&key).await.unwrap().unwrap().same_settings(&vs));
        let missing = ServiceKey::new(ip("10.96.99.99"), IpProtocol::Udp, 53);
        assert!(ipvs.service(&missing).await.unwrap().is_none());

        let a = RealServer::masquerade(ip("10.244.0.11"), 8080);
        let b = RealServer::masquerade(ip("10.244.1.11"), 8080);
        ipvs.add_destination(&key, &a).await.unwrap();
        ipvs.add_destination(&key, &b).await.unwrap();
        ipvs.update_destination(&key, &RealServer { weight: 0, ..b.clone() }).await.unwrap();
        let text = sh("ipvsadm -Ln");
        assert!(text.contains("TCP  10.96.10.10:80 wlc persistent 10800"), "{text}");
        assert!(text.contains("-> 10.244.0.11:8080             Masq    1"), "{text}");
        assert!(text.contains("-> 10.244.1.11:8080             Masq    0"), "{text}");
        let dests = ipvs.destinations(&key).await.unwrap();
        assert_eq!(dests.len(), 2);
        assert_eq!(dests.iter().find(|d| d.address == ip("10.244.1.11")).unwrap().weight, 0);

        ipvs.delete_destination(&key, &a).await.unwrap();
        assert!(ipvs.delete_destination(&key, &a).await.unwrap_err().is_not_found());
        assert_eq!(ipvs.destinations(&key).await.unwrap().len(), 1);

        let v6 = ServiceKey::new(ip("fd00:10:96::10"), IpProtocol::Udp, 53);
        ipvs.add_service(&VirtualServer::new(v6, "sh")).await.unwrap();
        ipvs.add_destination(&v6, &RealServer::masquerade(ip("fd00:10:244::5"), 5353)).await.unwrap();
        assert_eq!(ipvs.destinations(&v6).await.unwrap()[0].address, ip("fd00:10:244::5"));
        assert!(sh("ipvsadm -Ln").contains("UDP  [fd00:10:96::10]:53 sh"));

        ipvs.delete_service(&key).await.unwrap();
        assert_eq!(ipvs.services().await.unwrap().len(), 1);
        ipvs.flush().await.unwrap();
        assert!(ipvs.services().await.unwrap().is_empty());
        assert_eq!(sh("ipvsadm -Ln | wc -l").trim(), "3", "only the header lines remain");
    });
}

pub fn scheduler_check(rt: &Runtime) {
    rt.block_on(async {
        let ipvs = IpvsSocket::connect().await.unwrap();
        for sched in ipvs::Scheduler::ALL {
            ipvs.check_scheduler(sched.name()).await.unwrap_or_else(|e| panic!("{sched}: {e}"));
        }
        let err = ipvs.check_scheduler("nosuch").await.unwrap_err();
        assert!(matches!(err, ipvs::Error::SchedulerUnavailable { .. }), "{err}");
        assert!(err.to_string().starts_with("the kernel has no IPVS scheduler \"nosuch\""), "{err}");
        assert!(ipvs.services().await.unwrap().is_empty(), "the probe service is gone");
    });
}

pub fn timeouts_and_version(rt: &Runtime) {
    rt.block_on(async {
        let ipvs = IpvsSocket::connect().await.unwrap();
        assert_eq!(ipvs.version().await.unwrap(), 0x010201);
        ipvs.set_timeouts(Timeouts { tcp: 900, tcp_fin: 120, udp: 300 }).await.unwrap();
        assert_eq!(ipvs.timeouts().await.unwrap(), Timeouts { tcp: 900, tcp_fin: 120, udp: 300 });
        assert!(sh("ipvsadm -L --timeout").contains("900 120 300"));
        ipvs.set_timeouts(Timeouts { tcp: 0, tcp_fin: 60, udp: 0 }).await.unwrap();
        assert_eq!(ipvs.timeouts().await.unwrap(), Timeouts { tcp: 900, tcp_fin: 60, udp: 300 }, "0 keeps a value");
    });
}

/// Listings at once on one socket all succeed. The kernel refuses a
/// second dump on a socket with `EBUSY` while one runs; the e2e suite hit
/// that in this VM with its CPU saturated by two proxies (`list real
/// servers ...: Device or resource busy`), so dumps now take turns. On an
/// idle VM this check passed without that fix too: it guards the behaviour
/// but does not reproduce the race reliably.
pub fn concurrent_dumps(rt: &Runtime) {
    rt.block_on(async {
        sh("ipvsadm -C");
        let ipvs = IpvsSocket::connect().await.unwrap();
        let keys: Vec<ServiceKey> =
            (0..300u16).map(|i| ServiceKey::new(ip(&format!("10.96.{}.{}", 20 + i / 250, i % 250)), IpProtocol::Tcp, 80)).collect();
        for (i, key) in keys.iter().enumerate() {
            ipvs.add_service(&VirtualServer::new(*key, "rr")).await.unwrap();
            ipvs.add_destination(key, &RealServer::masquerade(ip(&format!("10.244.0.{}", i % 250)), 8080)).await.unwrap();
        }
        for _ in 0..3 {
            let (services, listings) =
                futures::join!(ipvs.services(), futures::future::join_all(keys[..20].iter().map(|key| ipvs.destinations(key))));
            assert_eq!(services.unwrap().len(), keys.len());
            for (key, listing) in keys.iter().zip(listings) {
                assert_eq!(listing.unwrap_or_else(|e| panic!("{key}: {e}")).len(), 1, "{key}");
            }
        }
        ipvs.flush().await.unwrap();
    });
}
