//! The IPVS codec against bytes captured from `ipvsadm` talking to a real
//! kernel (Debian 6.1, see `fixtures/README.md`): our requests must be
//! byte-identical to `ipvsadm`'s, every captured message must decode and
//! re-encode, and the kernel's dumps must decode to the right values.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ipvs::netlink::{GenlPacket, IpvsAttr, IpvsCmd, IpvsMessage, ServiceAttr};
use ipvs::{Flags, ForwardMethod, IpProtocol, RealServer, ServiceFlags, ServiceKey, VirtualServer};
use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use std::net::IpAddr;

/// One captured netlink message.
struct Captured {
    sent: bool,
    bytes: Vec<u8>,
}

fn fixture(name: &str) -> Vec<Captured> {
    let path = format!("{}/tests/fixtures/{name}.nl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| {
            let (dir, hex) = line.split_once(' ').expect("direction and hex");
            let bytes = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            Captured { sent: dir == "send", bytes }
        })
        .collect()
}

fn decode(bytes: &[u8]) -> NetlinkMessage<GenlPacket> {
    NetlinkMessage::<GenlPacket>::deserialize(bytes).unwrap_or_else(|e| panic!("decode {bytes:02x?}: {e}"))
}

fn ipvs_payload(msg: &NetlinkMessage<GenlPacket>) -> Option<&IpvsMessage> {
    match &msg.payload {
        NetlinkPayload::InnerMessage(GenlPacket::Ipvs(genl)) => Some(&genl.payload),
        _ => None,
    }
}

/// The one request `ipvsadm` sent for the step, besides its GET_INFO probe.
fn ipvsadm_request(name: &str) -> (NetlinkMessage<GenlPacket>, Vec<u8>) {
    let mut found: Vec<_> = fixture(name)
        .into_iter()
        .filter(|c| c.sent)
        .map(|c| (decode(&c.bytes), c.bytes))
        .filter(|(m, _)| ipvs_payload(m).is_some_and(|p| p.cmd != IpvsCmd::GetInfo))
        .collect();
    assert_eq!(found.len(), 1, "{name}: expected one IPVS request");
    found.remove(0)
}

/// Encodes `ours` with the netlink header `ipvsadm` used (family id, flags,
/// sequence number, port id) and checks the bytes are the captured ones.
fn assert_same_bytes(name: &str, ours: IpvsMessage, flags: Flags) {
    let (theirs, bytes) = ipvsadm_request(name);
    let mut msg = ours.into_netlink(theirs.header.message_type, flags);
    msg.header.sequence_number = theirs.header.sequence_number;
    msg.header.port_number = theirs.header.port_number;
    let mut buf = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut buf);
    assert_eq!(buf, bytes, "{name}: our request differs from ipvsadm's\nours:   {buf:02x?}\nipvsadm: {bytes:02x?}");
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn tcp(addr: &str, port: u16) -> ServiceKey {
    ServiceKey::new(ip(addr), IpProtocol::Tcp, port)
}

#[test]
fn new_service_matches_ipvsadm() {
    assert_same_bytes("new_service_tcp", IpvsMessage::new_service(&VirtualServer::new(tcp("10.96.10.10", 80), "rr")), Flags::Change);
    let udp = ServiceKey::new(ip("10.96.10.120"), IpProtocol::Udp, 53);
    assert_same_bytes("new_service_udp", IpvsMessage::new_service(&VirtualServer::new(udp, "lc")), Flags::Change);
    let v6 = tcp("fd00:10:96::10", 443);
    assert_same_bytes("new_service_v6", IpvsMessage::new_service(&VirtualServer::new(v6, "wlc")), Flags::Change);
}

#[test]
fn persistent_service_matches_ipvsadm() {
    let mut vs = VirtualServer::new(tcp("10.96.10.20", 7000), "rr");
    vs.flags = ServiceFlags::PERSISTENT;
    vs.timeout = 10800;
    assert_same_bytes("new_service_persist", IpvsMessage::new_service(&vs), Flags::Change);
}

#[test]
fn fwmark_service_matches_ipvsadm() {
    let key = ServiceKey { address: ip("0.0.0.0"), protocol: IpProtocol::Other(0), port: 0, fwmark: 42 };
    assert_same_bytes("new_service_fwmark", IpvsMessage::new_service(&VirtualServer::new(key, "sh")), Flags::Change);
}

#[test]
fn set_and_delete_service_match_ipvsadm() {
    assert_same_bytes("set_service", IpvsMessage::set_service(&VirtualServer::new(tcp("10.96.10.10", 80), "wrr")), Flags::Change);
    let udp = ServiceKey::new(ip("10.96.10.120"), IpProtocol::Udp, 53);
    assert_same_bytes("del_service", IpvsMessage::del_service(&udp), Flags::Change);
    assert_same_bytes("flush", IpvsMessage::flush(), Flags::Change);
}

#[test]
fn destinations_match_ipvsadm() {
    let key = tcp("10.96.10.10", 80);
    let rs = RealServer::masquerade(ip("10.244.0.11"), 8080);
    assert_same_bytes("new_dest", IpvsMessage::new_dest(&key, &rs), Flags::Change);

    let mut thresh = RealServer::masquerade(ip("10.244.1.11"), 8080);
    (thresh.weight, thresh.upper_threshold, thresh.lower_threshold) = (3, 100, 10);
    assert_same_bytes("new_dest_thresh", IpvsMessage::new_dest(&key, &thresh), Flags::Change);

    let drained = RealServer { weight: 0, ..rs };
    assert_same_bytes("set_dest", IpvsMessage::set_dest(&key, &drained), Flags::Change);

    // ipvsadm -d fills in its default method (direct routing) and weight 1.
    let del = RealServer { forward: ForwardMethod::DirectRoute, ..RealServer::masquerade(ip("10.244.1.11"), 8080) };
    assert_same_bytes("del_dest", IpvsMessage::del_dest(&key, &del), Flags::Change);

    let v6 = tcp("fd00:10:96::10", 443);
    let rs6 = RealServer::masquerade(ip("fd00:10:244::5"), 8443);
    assert_same_bytes("new_dest_v6", IpvsMessage::new_dest(&v6, &rs6), Flags::Change);
}

#[test]
fn timeouts_match_ipvsadm() {
    assert_same_bytes("set_timeouts", IpvsMessage::set_timeouts(900, 120, 300), Flags::Change);
}

#[test]
fn dump_requests_match_ipvsadm() {
    let sent: Vec<_> = fixture("list")
        .into_iter()
        .filter(|c| c.sent)
        .map(|c| (decode(&c.bytes), c.bytes))
        .filter(|(m, _)| ipvs_payload(m).is_some_and(|p| p.cmd != IpvsCmd::GetInfo))
        .collect();
    let first_get_dest = sent.iter().find(|(m, _)| ipvs_payload(m).unwrap().cmd == IpvsCmd::GetDest).unwrap();
    for (theirs, bytes) in [&sent[0], first_get_dest] {
        let ours = match ipvs_payload(theirs).unwrap().cmd {
            IpvsCmd::GetService => IpvsMessage::get_services(),
            _ => IpvsMessage::get_dests(&tcp("10.96.10.10", 80)),
        };
        let mut msg = ours.into_netlink(theirs.header.message_type, Flags::Dump);
        msg.header.sequence_number = theirs.header.sequence_number;
        msg.header.port_number = theirs.header.port_number;
        let mut buf = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut buf);
        assert_eq!(&buf, bytes);
    }
}

#[test]
fn every_captured_message_decodes_and_reencodes() {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "nl") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        for captured in fixture(&name) {
            let msg = decode(&captured.bytes);
            let mut buf = vec![0u8; msg.buffer_len()];
            msg.serialize(&mut buf);
            let again = decode(&buf);
            assert_eq!(msg, again, "{name}: decode(encode(m)) != m");
            if captured.sent {
                // ipvsadm's requests use the same attribute layout we emit
                // (nested flag set), so they come back byte for byte.
                assert_eq!(buf, captured.bytes, "{name}: request did not re-encode identically");
            }
            count += 1;
        }
    }
    assert!(count > 100, "only {count} messages in the fixtures");
}

fn dumped<T>(name: &str, cmd: IpvsCmd, read: impl Fn(&IpvsMessage) -> T) -> Vec<T> {
    fixture(name)
        .into_iter()
        .filter(|c| !c.sent)
        .map(|c| decode(&c.bytes))
        .filter_map(|m| ipvs_payload(&m).filter(|p| p.cmd == cmd).map(&read))
        .collect()
}

#[test]
fn kernel_service_dump_decodes_to_what_ipvsadm_created() {
    let services = dumped("list", IpvsCmd::NewService, |p| VirtualServer::from_attrs(p.service().unwrap()).unwrap());
    let by_key = |key: ServiceKey| services.iter().find(|vs| vs.key == key).unwrap_or_else(|| panic!("{key} missing"));
    assert_eq!(services.len(), 5);

    let persistent = by_key(tcp("10.96.10.20", 7000));
    assert_eq!(persistent.scheduler, "rr");
    assert_eq!(persistent.flags, ServiceFlags::PERSISTENT, "HASHED is stripped, PERSISTENT kept");
    assert_eq!(persistent.timeout, 10800);
    assert_eq!(persistent.netmask, u32::MAX);

    let edited = by_key(tcp("10.96.10.10", 80));
    assert_eq!(edited.scheduler, "wrr", "ipvsadm -E changed the scheduler");
    assert_eq!(edited.flags, ServiceFlags::default());
    assert_eq!(edited.stats.unwrap().conns, 0);

    let v6 = by_key(tcp("fd00:10:96::10", 443));
    assert_eq!((v6.scheduler.as_str(), v6.netmask), ("wlc", 128));
    assert_eq!(by_key(ServiceKey::new(ip("10.96.10.120"), IpProtocol::Udp, 53)).scheduler, "lc");
    let fwmark = services.iter().find(|vs| vs.key.fwmark == 42).unwrap();
    assert_eq!(fwmark.scheduler, "sh");
}

#[test]
fn kernel_destination_dump_decodes_weights_and_thresholds() {
    let dests = dumped("list", IpvsCmd::NewDest, |p| RealServer::from_attrs(p.dest().unwrap(), 2).unwrap());
    assert_eq!(dests.len(), 3);
    let find = |addr: &str| dests.iter().find(|d| d.address == ip(addr)).unwrap();
    let thresh = find("10.244.1.11");
    assert_eq!((thresh.port, thresh.weight, thresh.upper_threshold, thresh.lower_threshold), (8080, 3, 100, 10));
    assert_eq!(thresh.forward, ForwardMethod::Masquerade);
    assert_eq!((thresh.active_conns, thresh.inactive_conns), (0, 0));
    assert_eq!(find("10.244.0.11").weight, 0, "ipvsadm -e -w 0");
    let v6 = find("fd00:10:244::5");
    assert_eq!(v6.port, 8443);
}

#[test]
fn kernel_errors_decode_with_their_errno() {
    for (name, errno) in [("err_exists", -17), ("err_no_service", -3)] {
        let codes: Vec<i32> = fixture(name)
            .into_iter()
            .filter(|c| !c.sent)
            .filter_map(|c| match decode(&c.bytes).payload {
                NetlinkPayload::Error(e) => e.code.map(|c| c.get()),
                _ => None,
            })
            .collect();
        assert_eq!(codes, [errno], "{name}");
    }
}

#[test]
fn info_reply_decodes_version() {
    let infos = dumped("flush", IpvsCmd::SetInfo, |p| p.attrs.clone());
    assert!(infos.iter().all(|a| a.contains(&IpvsAttr::InfoVersion(0x010201))), "{infos:?}");
}

#[test]
fn decoded_requests_name_the_same_service() {
    let (msg, _) = ipvsadm_request("del_dest");
    let payload = ipvs_payload(&msg).unwrap();
    let vs = VirtualServer::from_attrs(payload.service().unwrap()).unwrap();
    assert_eq!(vs.key, tcp("10.96.10.10", 80));
    assert!(payload.service().unwrap().contains(&ServiceAttr::Scheduler(String::new())));
    let rs = RealServer::from_attrs(payload.dest().unwrap(), 2).unwrap();
    assert_eq!(rs.addr(), "10.244.1.11:8080".parse().unwrap());
}
