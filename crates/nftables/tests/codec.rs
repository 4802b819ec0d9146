//! The codec without a kernel: an encoded transaction decodes back to the
//! same objects, bytes the kernel sent (captured by the kernel test from
//! a 6.18 kernel, `fixtures/kube-proxy-test.dump.hex`) decode to what was
//! programmed, and batches keep to netlink's limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/compare.rs"]
mod compare;
#[path = "support/ruleset.rs"]
mod ruleset;

use nftables::*;

fn hex_fixture(name: &str) -> Vec<Vec<u8>> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            (0..l.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect()
}

/// Walks a batch's messages: (netlink type, flags, seq, attribute bytes).
fn messages(batch: &Batch) -> Vec<(u16, u16, u32, Vec<u8>)> {
    let mut out = Vec::new();
    for chunk in &batch.chunks {
        let mut at = 0;
        while at < chunk.len() {
            let len = u32::from_ne_bytes(chunk[at..at + 4].try_into().unwrap()) as usize;
            let ty = u16::from_ne_bytes(chunk[at + 4..at + 6].try_into().unwrap());
            let flags = u16::from_ne_bytes(chunk[at + 6..at + 8].try_into().unwrap());
            let seq = u32::from_ne_bytes(chunk[at + 8..at + 12].try_into().unwrap());
            out.push((ty, flags, seq, chunk[at + 20..at + len].to_vec()));
            at += len.div_ceil(4) * 4;
        }
    }
    out
}

#[test]
fn an_encoded_transaction_decodes_to_the_same_objects() {
    let tx = ruleset::transaction();
    let batch = tx.encode(100);
    let got = TableContents::decode(Family::Ip, ruleset::TABLE, &batch.chunks)
        .unwrap()
        .expect("table");
    let sent = compare::sent(&tx);
    // exact, anonymous sets and their references included
    assert_eq!(got.table, sent.table);
    assert_eq!(got.chains, sent.chains);
    assert_eq!(got.rules, sent.rules);
    assert_eq!(got.sets, sent.sets);
    for (set, elements) in &sent.elements {
        assert_eq!(got.elements.get(set), Some(elements), "elements of {set}");
    }
}

#[test]
fn bytes_captured_from_the_kernel_decode_to_what_was_programmed() {
    let captured = hex_fixture("kube-proxy-test.dump.hex");
    let got = TableContents::decode(Family::Ip, ruleset::TABLE, &captured)
        .unwrap()
        .expect("table in the capture");
    compare::assert_same(&compare::sent(&ruleset::transaction()), &got);
    // the kernel gave every rule a handle, and named the anonymous sets
    assert!(got.rules.iter().all(|r| r.handle.is_some()));
    assert_eq!(
        got.sets
            .iter()
            .filter(|s| s.flags.contains(SetFlags::ANONYMOUS))
            .count(),
        3
    );
    // kernel 6.18 answers the chain dump with the chains of every table of
    // the family (the table filter is ignored there); they are skipped
    assert!(
        captured
            .iter()
            .any(|b| b.windows(6).any(|w| w == b"other\0")),
        "the capture holds table other's chain"
    );
    assert!(got.chains.iter().all(|c| c.name != "c"));
    // another table's objects in the same bytes are not ours
    assert_eq!(
        TableContents::decode(Family::Ip, "other", &captured).unwrap(),
        None
    );
    assert_eq!(
        TableContents::decode(Family::Ip6, ruleset::TABLE, &captured).unwrap(),
        None
    );
}

#[test]
fn a_batch_is_one_transaction_with_sequence_numbers_per_change() {
    let tx = ruleset::transaction();
    let batch = tx.encode(7);
    let msgs = messages(&batch);
    let (first, last) = (&msgs[0], &msgs[msgs.len() - 1]);
    assert_eq!((first.0, first.2), (0x10, 7), "BATCH_BEGIN first");
    assert_eq!((last.0, last.2), (0x11, batch.end_seq), "BATCH_END last");
    assert_eq!(last.1 & 0x4, 0x4, "only BATCH_END asks for an ack");
    assert!(msgs[..msgs.len() - 1].iter().all(|m| m.1 & 0x4 == 0));
    assert_eq!(batch.op_of(7), None, "BATCH_BEGIN is no change");
    assert_eq!(
        batch.op_of(8),
        Some(0),
        "the first message is the first change"
    );
    assert_eq!(
        tx.describe(batch.op_of(8).unwrap()),
        "add table ip kube-proxy-test"
    );
    assert_eq!(msgs.len(), tx.ops.len() + 2);
}

#[test]
fn rules_name_their_chain_and_never_a_chain_id() {
    let batch = ruleset::transaction().encode(1);
    for (ty, _, _, attrs) in messages(&batch) {
        if ty == (10 << 8) | 6 {
            // NFTA_RULE_CHAIN (2) present, NFTA_RULE_CHAIN_ID (11) absent
            let kinds = top_level_kinds(&attrs);
            assert!(kinds.contains(&2), "{kinds:?}");
            assert!(!kinds.contains(&11), "{kinds:?}");
        }
    }
}

fn top_level_kinds(mut attrs: &[u8]) -> Vec<u16> {
    let mut out = Vec::new();
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes(attrs[0..2].try_into().unwrap()) as usize;
        out.push(u16::from_ne_bytes(attrs[2..4].try_into().unwrap()) & 0x3fff);
        attrs = &attrs[(len.div_ceil(4) * 4).min(attrs.len())..];
    }
    out
}

#[test]
fn large_element_lists_are_split_under_the_attribute_limit_and_buffers_stay_small() {
    let mut tx = Transaction::new(Family::Ip, "t");
    tx.push(Op::AddTable(Table::new(Family::Ip, "t")));
    let set = Set::map(
        "m",
        vec![
            DataType::Ipv4Addr,
            DataType::InetProto,
            DataType::InetService,
        ],
        vec![DataType::Verdict],
    );
    tx.push(Op::AddSet(set.clone()));
    let elements: Vec<Element> = (0..30_000u32)
        .map(|i| {
            Element::verdict(
                vec![
                    Value::Ipv4(std::net::Ipv4Addr::from(0xac1e_0000 + i)),
                    Value::Proto(6),
                    Value::Port(80),
                ],
                Verdict::Goto(format!(
                    "service-{i:05}-some-namespace/some-service/tcp/http"
                )),
            )
            .with_comment("some-namespace/some-service:http")
        })
        .collect();
    tx.push(Op::AddElements {
        set: SetRef::named("m"),
        elements: elements.clone(),
    });
    let batch = tx.encode(1);
    let msgs = messages(&batch);
    assert!(
        msgs.len() > 10,
        "30,000 elements need several messages, got {}",
        msgs.len()
    );
    assert!(
        msgs.iter().all(|m| m.3.len() < 65_000),
        "every element list fits a 16-bit attribute length"
    );
    assert!(batch.chunks.len() > 1 && batch.chunks.iter().all(|c| c.len() < (1 << 20) + 70_000));
    // every split message maps back to the one change
    // seq 1 begin, 2 table, 3 set, 4.. elements, the last one end
    assert!((4..msgs.len() as u32).all(|seq| batch.op_of(seq) == Some(2)));
    assert_eq!(batch.op_of(msgs.len() as u32), None);
    let got = TableContents::decode(Family::Ip, "t", &batch.chunks)
        .unwrap()
        .unwrap();
    assert_eq!(got.elements["m"], elements);
}

#[test]
fn long_comments_are_cut_to_what_nft_accepts() {
    let long = "x".repeat(300);
    let mut tx = Transaction::new(Family::Ip, "t");
    tx.push(Op::AddTable(Table::new(Family::Ip, "t")));
    tx.push(Op::AddChain(Chain::regular("c")));
    tx.push(Op::AddRule(
        Rule::new("c", stmt::verdict(Verdict::Accept)).with_comment(long),
    ));
    let got = TableContents::decode(Family::Ip, "t", &tx.encode(1).chunks)
        .unwrap()
        .unwrap();
    assert_eq!(got.rules[0].comment.as_deref().map(str::len), Some(127));
}

/// The decoder reads what the kernel sends; damaged bytes give an error or
/// fewer objects, never a panic. Every 3rd byte of the capture is altered
/// (to 0, 0xff or +1 in turn), and every buffer is cut at every 7th length;
/// each time the buffers up to the damaged one are decoded.
#[test]
fn damaged_replies_never_panic() {
    let captured = hex_fixture("kube-proxy-test.dump.hex");
    let mut decoded = 0;
    for (b, buf) in captured.iter().enumerate() {
        for at in (0..buf.len()).step_by(3) {
            let mut damaged = captured[..=b].to_vec();
            damaged[b][at] = [0x00u8, 0xff, buf[at].wrapping_add(1)][at / 3 % 3];
            decoded +=
                usize::from(TableContents::decode(Family::Ip, ruleset::TABLE, &damaged).is_ok());
        }
        for len in (0..buf.len()).step_by(7) {
            let mut cut = captured[..=b].to_vec();
            cut[b].truncate(len);
            let _ = TableContents::decode(Family::Ip, ruleset::TABLE, &cut);
        }
    }
    assert!(decoded > 0, "most single-byte changes still decode");
}
