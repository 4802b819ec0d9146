//! Detecting a kernel without IPVS: on such a kernel (this development
//! machine's, for one) connecting must fail with `IpvsUnavailable`, the
//! error the binary turns into its fall-back-to-iptables line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ipvs::{Error, IpvsSocket};
use testkit::netns::Netns;

#[test]
fn connect_reports_whether_the_kernel_has_ipvs() {
    testkit::netns::require_kernel();
    let ns = Netns::new("ipvsdet").unwrap();
    let (result, has_ipvs) = ns
        .run(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let result = rt.block_on(async { IpvsSocket::connect().await.map(|s| s.family_id()) });
            (result, std::path::Path::new("/proc/net/ip_vs").exists())
        })
        .unwrap();
    match result {
        Ok(id) => assert!(has_ipvs, "connected (family {id}) but /proc/net/ip_vs is missing"),
        Err(Error::IpvsUnavailable(why)) => {
            assert!(!has_ipvs, "IPVS is loaded but connect said unavailable: {why}");
            let line = Error::IpvsUnavailable(why).to_string();
            assert!(line.starts_with("the kernel does not support IPVS"), "{line}");
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}
