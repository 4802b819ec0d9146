use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn udp_flow(client: &str, service: &str, endpoint: &str) -> Flow {
    Flow {
        orig: Tuple { proto: 17, src: ip(client), dst: ip(service), sport: 4000, dport: 53 },
        reply: Tuple { proto: 17, src: ip(endpoint), dst: ip(client), sport: 5353, dport: 4000 },
        zone: 0,
    }
}

/// A dump entry as the kernel sends it: `IPCTNL_MSG_CT_NEW` with both
/// tuples and a few attributes the decoder skips.
fn dump_entry(flow: &Flow, seq: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    let family = if flow.orig.src.is_ipv4() { AF_INET } else { AF_INET6 };
    let start = begin_message(&mut buf, IPCTNL_MSG_CT_NEW, 0x2, seq, family);
    push_tuple(&mut buf, CTA_TUPLE_ORIG, &flow.orig);
    push_tuple(&mut buf, CTA_TUPLE_REPLY, &flow.reply);
    push_attr(&mut buf, 3, &0x0000_0188u32.to_be_bytes()); // CTA_STATUS
    push_attr(&mut buf, 7, &29u32.to_be_bytes()); // CTA_TIMEOUT
    if flow.zone != 0 {
        push_attr(&mut buf, CTA_ZONE, &flow.zone.to_be_bytes());
    }
    end_message(&mut buf, start);
    buf
}

fn done(seq: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend_from_slice(&20u32.to_ne_bytes());
    buf.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    buf.extend_from_slice(&0x2u16.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&0i32.to_ne_bytes());
    buf
}

fn ack(seq: u32, errno: i32) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend_from_slice(&36u32.to_ne_bytes());
    buf.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
    buf.extend_from_slice(&0x100u16.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&(-errno).to_ne_bytes());
    // The request's header (NETLINK_CAP_ACK: no payload).
    buf.extend_from_slice(&60u32.to_ne_bytes());
    buf.extend_from_slice(&(NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_DELETE).to_ne_bytes());
    buf.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf
}

#[test]
fn a_dump_decodes_into_flows_with_both_tuples() {
    let v4 = udp_flow("10.244.0.5", "10.96.0.10", "10.244.1.3");
    let mut v6 = udp_flow("fd00::5", "fd00:96::a", "fd00:1::3");
    v6.zone = 7;
    let data = [dump_entry(&v4, 9), dump_entry(&v6, 9), done(9)].concat();
    assert_eq!(parse_replies(&data).unwrap(), vec![Reply::Flow(v4), Reply::Flow(v6), Reply::Done]);
}

#[test]
fn acks_carry_the_request_sequence_and_errno() {
    let data = [ack(41, 0), ack(42, 2)].concat();
    assert_eq!(parse_replies(&data).unwrap(), vec![Reply::Ack { seq: 41, errno: 0 }, Reply::Ack { seq: 42, errno: 2 }]);
}

#[test]
fn a_delete_request_names_the_original_tuple() {
    let flow = udp_flow("10.244.0.5", "10.96.0.10", "10.244.1.3");
    let mut buf = Vec::new();
    push_delete(&mut buf, &flow, 77);
    assert_eq!(u32_ne(&buf[0..4]) as usize, buf.len());
    assert_eq!(u16_ne(&buf[4..6]), 0x0102);
    assert_eq!(u16_ne(&buf[6..8]), NLM_F_REQUEST | NLM_F_ACK);
    assert_eq!(u32_ne(&buf[8..12]), 77);
    assert_eq!(buf[16], AF_INET);
    let attrs: Vec<_> = Attrs(&buf[20..]).map(|a| a.unwrap()).collect();
    assert_eq!(attrs.len(), 1);
    assert_eq!(attrs[0].0, CTA_TUPLE_ORIG);
    assert_eq!(parse_tuple(attrs[0].1).unwrap(), flow.orig);
}

#[test]
fn the_dump_request_asks_for_a_dump_of_the_family() {
    let buf = dump_request(AF_INET6, 5);
    assert_eq!(buf.len(), 20);
    assert_eq!(u16_ne(&buf[4..6]), 0x0101);
    assert_eq!(u16_ne(&buf[6..8]), NLM_F_REQUEST | NLM_F_DUMP);
    assert_eq!(buf[16], AF_INET6);
}

#[test]
fn every_truncation_of_a_reply_is_an_error_not_a_panic() {
    let flow = udp_flow("10.244.0.5", "10.96.0.10", "10.244.1.3");
    let entry = dump_entry(&flow, 1);
    for cut in 1..entry.len() {
        assert!(parse_replies(&entry[..cut]).is_err(), "cut at {cut}");
    }
    // The message length kept consistent but the payload cut short inside it.
    let mut short = entry.clone();
    short.truncate(entry.len() - 2);
    let len = short.len() as u32;
    short[0..4].copy_from_slice(&len.to_ne_bytes());
    assert!(parse_replies(&short).is_err());
}

#[test]
fn garbage_decodes_to_errors_or_nothing_never_a_panic() {
    let flow = udp_flow("fd00::5", "fd00:96::a", "fd00:1::3");
    let valid = [dump_entry(&flow, 1), ack(2, 0), done(1)].concat();
    let mut state = 0x2545_f491_u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    for _ in 0..20_000 {
        let mut data = valid.clone();
        for _ in 0..(next() % 6 + 1) {
            let at = next() as usize % data.len();
            data[at] = next() as u8;
        }
        let _ = parse_replies(&data);
        let len = next() as usize % 200;
        let random: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = parse_replies(&random);
    }
    // A zero length cannot loop forever.
    let mut zero = done(1);
    zero[0..4].copy_from_slice(&0u32.to_ne_bytes());
    assert!(parse_replies(&zero).is_err());
}
