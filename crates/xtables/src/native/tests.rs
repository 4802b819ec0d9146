//! The native writer against bytes the real tools produced: blobs read
//! with `IPT_SO_GET_ENTRIES` (`testdata/*.hex`: valid hooks, hook entries,
//! underflows, then the entries in hex) from a namespace after
//! `iptables-legacy-restore` / `ip6tables-legacy-restore` 1.8.9 of
//! `testdata/small{4,6}.restore` onto empty tables (`*-empty.hex`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::layout::{Family, u16_at};
use super::restore::apply;
use super::table::Image;

struct Captured {
    valid: u32,
    hooks: [u32; 5],
    under: [u32; 5],
    bytes: Vec<u8>,
}

fn load(text: &str) -> Captured {
    let mut lines = text.lines();
    let nums: Vec<u32> = lines.next().unwrap().split(' ').map(|n| n.parse().unwrap()).collect();
    let hex = lines.next().unwrap();
    let bytes = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    Captured { valid: nums[0], hooks: std::array::from_fn(|i| nums[1 + i]), under: std::array::from_fn(|i| nums[6 + i]), bytes }
}

fn captured(family: Family, table: &str, empty: bool) -> Captured {
    let text = match (family, table, empty) {
        (Family::V4, "nat", false) => include_str!("testdata/v4-nat.hex"),
        (Family::V4, "nat", true) => include_str!("testdata/v4-nat-empty.hex"),
        (Family::V4, _, false) => include_str!("testdata/v4-filter.hex"),
        (Family::V4, _, true) => include_str!("testdata/v4-filter-empty.hex"),
        (Family::V6, "nat", false) => include_str!("testdata/v6-nat.hex"),
        (Family::V6, "nat", true) => include_str!("testdata/v6-nat-empty.hex"),
        (Family::V6, _, false) => include_str!("testdata/v6-filter.hex"),
        (Family::V6, _, true) => include_str!("testdata/v6-filter-empty.hex"),
    };
    load(text)
}

fn read(family: Family, table: &str, c: &Captured) -> Image {
    Image::read(family, table, c.valid, c.hooks, c.under, &c.bytes).unwrap()
}

/// The entries of `bytes` with what the kernel keeps (`comefrom`,
/// counters) zeroed, as hex, one entry each.
fn entries(family: Family, bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let next = usize::from(u16_at(bytes, at + family.offsets_at() + 2));
        let mut entry = bytes[at..at + next].to_vec();
        let comefrom = family.offsets_at() + 4;
        entry[comefrom..comefrom + 4].fill(0);
        entry[family.counters_at()..family.counters_at() + 16].fill(0);
        out.push(entry.iter().map(|b| format!("{b:02x}")).collect());
        at += next;
    }
    out
}

fn input(family: Family) -> &'static str {
    match family {
        Family::V4 => include_str!("testdata/small4.restore"),
        Family::V6 => include_str!("testdata/small6.restore"),
    }
}

/// The lines of `input`'s block for `table`.
fn block<'a>(input: &'a str, table: &str) -> Vec<&'a str> {
    let start = format!("*{table}");
    input.lines().skip_while(|l| *l != start).skip(1).take_while(|l| *l != "COMMIT").collect()
}

#[test]
fn a_restore_onto_empty_tables_lays_out_as_the_legacy_tool_does() {
    for family in [Family::V4, Family::V6] {
        for table in ["nat", "filter"] {
            let (empty, want) = (captured(family, table, true), captured(family, table, false));
            let mut image = read(family, table, &empty);
            for line in block(input(family), table) {
                apply(family, &mut image, line).unwrap_or_else(|e| panic!("{family:?} {table}: {line}: {e}"));
            }
            let blob = image.layout().unwrap();
            let (got, wanted) = (entries(family, blob.entries_bytes()), entries(family, &want.bytes));
            for (i, (g, w)) in got.iter().zip(&wanted).enumerate() {
                assert_eq!(g, w, "{family:?} {table}: entry {i}");
            }
            assert_eq!(got.len(), wanted.len(), "{family:?} {table}");
            for hook in (0..5).filter(|h| want.valid & (1 << h) != 0) {
                assert_eq!((blob.hook_entry[hook], blob.underflow[hook]), (want.hooks[hook], want.under[hook]), "{family:?} {table} hook {hook}");
            }
        }
    }
}

#[test]
fn a_table_read_lays_out_unchanged_and_keeps_its_counters_slots() {
    for family in [Family::V4, Family::V6] {
        for table in ["nat", "filter"] {
            let want = captured(family, table, false);
            let image = read(family, table, &want);
            let blob = image.layout().unwrap();
            assert_eq!(entries(family, blob.entries_bytes()), entries(family, &want.bytes), "{family:?} {table}");
            // Every entry but the final ERROR continues one read.
            let n = blob.old.len();
            assert!(blob.old[..n - 1].iter().enumerate().all(|(i, o)| *o == Some(i as u32)), "{family:?} {table}: {:?}", blob.old);
        }
    }
}

#[test]
fn splicing_deletes_inserts_and_refuses_what_the_tool_refuses() {
    let family = Family::V4;
    let mut image = read(family, "nat", &captured(family, "nat", false));
    apply(family, &mut image, "-I PREROUTING 1 -m comment --comment \"kubernetes service portals\" -j KUBE-T").unwrap();
    apply(family, &mut image, "-D KUBE-U -j MASQUERADE").unwrap();
    assert!(apply(family, &mut image, "-D KUBE-U -j MASQUERADE").unwrap_err().contains("no matching rule"));
    assert!(apply(family, &mut image, "-X KUBE-U").unwrap_err().contains("not empty"));
    apply(family, &mut image, ":KUBE-U - [0:0]").unwrap();
    assert!(apply(family, &mut image, "-X KUBE-U").unwrap_err().contains("jumps to it"));
    apply(family, &mut image, ":KUBE-A - [0:0]").unwrap();
    let names: Vec<&str> = image.chains().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING", "KUBE-A", "KUBE-T", "KUBE-U"]);
    assert!(apply(family, &mut image, "-A KUBE-A -j LOG --log-prefix x").unwrap_err().contains("LOG"));
    assert!(apply(family, &mut image, "-A KUBE-A -m set --match-set x dst -j RETURN").unwrap_err().contains("-m set"));
    apply(family, &mut image, "-A KUBE-A -j NOSUCHCHAIN").unwrap();
    assert!(image.layout().unwrap_err().contains("NOSUCHCHAIN"));
}
