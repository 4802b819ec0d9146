//! The diff on small kube-proxy-shaped tables. Every transaction is also
//! replayed on a model of the kernel's rules (names resolved as each
//! message arrives, nothing deleted while referenced), and the result must
//! diff as equal to the desired table.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{SyncCounts, diff};
use crate::stmt::{self, Field};
use crate::*;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

const TCP: u8 = 6;

struct Svc {
    name: &'static str,
    ip: [u8; 4],
    endpoints: Vec<[u8; 4]>,
}

fn svc(name: &'static str, ip: [u8; 4], endpoints: Vec<[u8; 4]>) -> Svc {
    Svc {
        name,
        ip,
        endpoints,
    }
}

fn ip(a: [u8; 4]) -> Value {
    Value::Ipv4(Ipv4Addr::from(a))
}

fn chain_of(s: &Svc) -> String {
    format!("service-{}", s.name)
}

/// `ip kube-proxy`: a base chain jumping to `services`, which looks up
/// `service-ips`; one chain per service with a `numgen` DNAT map.
fn table(services: &[Svc]) -> TableContents {
    let mut t = TableContents {
        table: Table::new(Family::Ip, "kube-proxy").with_comment("rules for kube-proxy"),
        chains: vec![
            Chain::base(
                "nat-prerouting",
                BaseChain {
                    kind: ChainType::Nat,
                    hook: Hook::Prerouting,
                    priority: -100,
                    policy: Policy::Accept,
                },
            ),
            Chain::regular("services"),
        ],
        rules: vec![
            Rule::new(
                "nat-prerouting",
                stmt::verdict(Verdict::Jump("services".into())),
            ),
            Rule::new(
                "services",
                stmt::vmap(
                    &[Field::IpDaddr, Field::L4proto, Field::ThDport],
                    SetRef::named("service-ips"),
                ),
            ),
        ],
        sets: vec![
            Set::new("cluster-ips", vec![DataType::Ipv4Addr]),
            Set::map(
                "service-ips",
                vec![
                    DataType::Ipv4Addr,
                    DataType::InetProto,
                    DataType::InetService,
                ],
                vec![DataType::Verdict],
            ),
        ],
        elements: BTreeMap::new(),
    };
    for (i, s) in services.iter().enumerate() {
        let chain = chain_of(s);
        t.chains.push(Chain::regular(chain.as_str()));
        let map = Set::anonymous(
            i as u32 + 1,
            vec![DataType::Integer],
            Some(vec![DataType::Ipv4Addr, DataType::InetService]),
        );
        let elements = s
            .endpoints
            .iter()
            .enumerate()
            .map(|(n, e)| {
                Element::data(
                    vec![Value::Integer(n as u32)],
                    vec![ip(*e), Value::Port(8080)],
                )
            })
            .collect();
        t.elements.insert(TableContents::set_key(&map), elements);
        t.rules.push(Rule::new(
            chain.as_str(),
            [
                stmt::l4proto(TCP),
                stmt::dnat_numgen_map(2, s.endpoints.len() as u32, SetRef::to_set(&map), 4),
            ]
            .concat(),
        ));
        t.sets.push(map);
        t.elements
            .entry("cluster-ips".into())
            .or_default()
            .push(Element::new(vec![ip(s.ip)]));
        t.elements
            .entry("service-ips".into())
            .or_default()
            .push(Element::verdict(
                vec![ip(s.ip), Value::Proto(TCP), Value::Port(80)],
                Verdict::Goto(chain),
            ));
    }
    t
}

fn three() -> Vec<Svc> {
    vec![
        svc("a", [10, 96, 0, 1], vec![[10, 244, 0, 1], [10, 244, 0, 2]]),
        svc("b", [10, 96, 0, 2], vec![[10, 244, 1, 1]]),
        svc("c", [10, 96, 0, 3], vec![[10, 244, 2, 1], [10, 244, 2, 2]]),
    ]
}

/// A model of our table in the kernel, changed message by message with
/// the kernel's checks.
#[derive(Default)]
struct Model {
    table: Option<Table>,
    chains: Vec<(Chain, Vec<Rule>)>,
    sets: Vec<(Set, Vec<Element>)>,
}

impl Model {
    fn from(t: &TableContents) -> Self {
        let mut m = Model {
            table: Some(t.table.clone()),
            ..Model::default()
        };
        for c in &t.chains {
            let rules = t.rules_of(&c.name).cloned().collect();
            m.chains.push((c.clone(), rules));
        }
        for s in &t.sets {
            let e = t
                .elements
                .get(&TableContents::set_key(s))
                .cloned()
                .unwrap_or_default();
            m.sets.push((s.clone(), e));
        }
        m
    }

    fn chain(&mut self, name: &str) -> &mut (Chain, Vec<Rule>) {
        self.chains
            .iter_mut()
            .find(|c| c.0.name == name)
            .unwrap_or_else(|| panic!("chain {name} does not exist"))
    }

    fn set(&mut self, r: &SetRef) -> &mut (Set, Vec<Element>) {
        self.sets
            .iter_mut()
            .find(|s| s.0.name == r.name && (r.id.is_none() || s.0.id == r.id))
            .unwrap_or_else(|| panic!("set {} does not exist", r.name))
    }

    fn has_chain(&self, name: &str) -> bool {
        self.chains.iter().any(|c| c.0.name == name)
    }

    fn chain_targets(rule: &Rule) -> Vec<String> {
        rule.exprs
            .iter()
            .filter_map(|e| match e {
                Expr::Immediate {
                    data: ImmediateData::Verdict(Verdict::Jump(c) | Verdict::Goto(c)),
                    ..
                } => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    fn set_refs(rule: &Rule) -> Vec<SetRef> {
        rule.exprs
            .iter()
            .filter_map(|e| match e {
                Expr::Lookup { set, .. } | Expr::Dynset { set, .. } => Some(set.clone()),
                _ => None,
            })
            .collect()
    }

    fn element_target(e: &Element) -> Option<&str> {
        match &e.data {
            Some(ElementData::Verdict(Verdict::Jump(c) | Verdict::Goto(c))) => Some(c),
            _ => None,
        }
    }

    fn referenced(&self, chain: &str) -> bool {
        let by_rule = self
            .chains
            .iter()
            .flat_map(|c| &c.1)
            .any(|r| Self::chain_targets(r).iter().any(|t| t == chain));
        let by_element = self
            .sets
            .iter()
            .flat_map(|s| &s.1)
            .any(|e| Self::element_target(e) == Some(chain));
        by_rule || by_element
    }

    /// Drops anonymous sets no rule uses any more (the kernel does).
    fn collect_anonymous(&mut self) {
        let used: Vec<SetRef> = self
            .chains
            .iter()
            .flat_map(|c| &c.1)
            .flat_map(Self::set_refs)
            .collect();
        self.sets.retain(|(s, _)| {
            !s.flags.contains(SetFlags::ANONYMOUS) || used.iter().any(|r| r.name == s.name)
        });
    }

    fn apply(&mut self, tx: &Transaction) {
        for op in &tx.ops {
            self.apply_op(op);
        }
    }

    fn apply_op(&mut self, op: &Op) {
        match op {
            Op::AddTable(t) => {
                assert!(self.table.is_none(), "table exists");
                self.table = Some(t.clone());
            }
            Op::DeleteTable | Op::DestroyTable => *self = Model::default(),
            Op::AddChain(c) => {
                assert!(
                    self.table.is_some() && !self.has_chain(&c.name),
                    "add chain {}",
                    c.name
                );
                self.chains.push((c.clone(), vec![]));
            }
            Op::FlushChain(c) => {
                self.chain(c).1.clear();
                self.collect_anonymous();
            }
            Op::DeleteChain(c) => {
                self.chain(c).1.clear();
                self.collect_anonymous();
                assert!(!self.referenced(c), "chain {c} deleted while referenced");
                self.chains.retain(|x| x.0.name != *c);
            }
            Op::AddRule(r) => {
                for t in Self::chain_targets(r) {
                    assert!(self.has_chain(&t), "rule jumps to missing chain {t}");
                }
                for s in Self::set_refs(r) {
                    self.set(&s);
                }
                self.chain(&r.chain).1.push(r.clone());
            }
            Op::AddSet(s) => {
                assert!(
                    self.sets.iter().all(|x| x.0.name != s.name),
                    "set {} exists",
                    s.name
                );
                self.sets.push((s.clone(), vec![]));
            }
            Op::DeleteSet(s) => {
                let used = self
                    .chains
                    .iter()
                    .flat_map(|c| &c.1)
                    .flat_map(Self::set_refs)
                    .any(|r| r.name == *s);
                assert!(!used, "set {s} deleted while used");
                self.sets.retain(|x| x.0.name != *s);
            }
            Op::AddElements { set, elements } => {
                for e in elements {
                    if let Some(t) = Self::element_target(e) {
                        assert!(self.has_chain(t), "element goes to missing chain {t}");
                    }
                }
                let s = self.set(set);
                for e in elements {
                    assert!(s.1.iter().all(|x| x.key != e.key), "element exists");
                    s.1.push(e.clone());
                }
            }
            Op::DeleteElements { set, elements } => {
                let s = self.set(set);
                for e in elements {
                    let before = s.1.len();
                    s.1.retain(|x| x.key != e.key);
                    assert_eq!(s.1.len(), before - 1, "deleted element exists");
                }
            }
            Op::DeleteRule { .. } | Op::FlushSet(_) => unimplemented!(),
        }
    }

    /// What the kernel would list: no ids; anonymous sets named by us
    /// keep their names, `__set%d` ones get the kernel's `__set<n>`.
    fn contents(&self) -> Option<TableContents> {
        let kernel_name = |r: &SetRef| match r.id {
            Some(id) if r.name.contains('%') => format!("__set{id}"),
            _ => r.name.clone(),
        };
        let mut t = TableContents {
            table: self.table.clone()?,
            chains: self.chains.iter().map(|c| c.0.clone()).collect(),
            rules: self.chains.iter().flat_map(|c| c.1.clone()).collect(),
            sets: vec![],
            elements: BTreeMap::new(),
        };
        for (s, e) in &self.sets {
            let mut s = s.clone();
            s.name = kernel_name(&SetRef::to_set(&s));
            s.id = None;
            t.elements.insert(s.name.clone(), e.clone());
            t.sets.push(s);
        }
        for r in &mut t.rules {
            for e in &mut r.exprs {
                if let Expr::Lookup { set, .. } | Expr::Dynset { set, .. } = e {
                    set.name = kernel_name(set);
                    set.id = None;
                }
            }
        }
        Some(t)
    }
}

/// What a lean syncer's full sync sends: `current` read back reduced to
/// digests, `desired` taken chain by chain (`stream.rs`); `None` when the
/// table's own definition differs (the whole diff is used then).
fn reduced_diff(desired: &TableContents, current: &TableContents) -> Option<Transaction> {
    use super::listed::listed_of;
    use super::names::AnonymousNames;
    use super::piece::Piece;
    use super::state::TableState;
    use super::stream::diff_listed;
    if desired.table != current.table {
        return None;
    }
    let listed = listed_of(current);
    let mut names = AnonymousNames::default();
    names.merge(&listed.names);
    let (fixed, chains) = TableState::new(desired.clone()).split_rules();
    let elements = |s: &Set| {
        Ok(current
            .elements
            .get(&TableContents::set_key(s))
            .cloned()
            .unwrap_or_default())
    };
    Some(
        diff_listed(
            &fixed,
            chains.into_iter().map(Piece::Chain),
            &listed,
            elements,
            &mut names,
        )
        .unwrap(),
    )
}

/// [`diff`], checked to be what [`reduced_diff`] sends too.
fn diff_both(desired: &TableContents, current: Option<&TableContents>) -> Transaction {
    let tx = diff(desired, current);
    if let Some(reduced) = current.and_then(|c| reduced_diff(desired, c)) {
        assert_eq!(reduced, tx, "the reduced diff sends the same");
    }
    tx
}

/// Applies the diff from `current` to `desired` on the model, checks the
/// result equals `desired`, and returns the transaction.
fn diff_and_replay(desired: &TableContents, current: Option<&TableContents>) -> Transaction {
    let tx = diff_both(desired, current);
    let mut model = current.map(Model::from).unwrap_or_default();
    model.apply(&tx);
    let after = model.contents().expect("table exists after the sync");
    let again = diff_both(desired, Some(&after));
    assert!(again.ops.is_empty(), "not converged: {:#?}", again.ops);
    tx
}

fn kinds(tx: &Transaction) -> Vec<String> {
    tx.ops
        .iter()
        .map(|op| match op {
            Op::AddTable(_) => "add table".to_string(),
            Op::DeleteTable => "delete table".to_string(),
            Op::AddChain(c) => format!("add chain {}", c.name),
            Op::FlushChain(c) => format!("flush chain {c}"),
            Op::DeleteChain(c) => format!("delete chain {c}"),
            Op::AddRule(r) => format!("add rule {}", r.chain),
            Op::AddSet(s) => format!("add set {}", s.name),
            Op::DeleteSet(s) => format!("delete set {s}"),
            Op::AddElements { set, elements } => format!("add {} to {}", elements.len(), set.name),
            Op::DeleteElements { set, elements } => {
                format!("delete {} from {}", elements.len(), set.name)
            }
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn from_nothing_creates_everything_in_order() {
    let tx = diff_and_replay(&table(&three()), None);
    let k = kinds(&tx);
    assert_eq!(k[0], "add table");
    assert_eq!(SyncCounts::of(&tx).chains_written, 5);
    assert_eq!(SyncCounts::of(&tx).rules_written, 5);
    assert_eq!(SyncCounts::of(&tx).elements_written, 6);
    assert_eq!(SyncCounts::of(&tx).anonymous_sets_written, 3);
    assert_eq!(SyncCounts::of(&tx).anonymous_elements_written, 5);
    assert!(k.contains(&"add rule service-b".to_string()));
}

#[test]
fn creating_a_new_table_by_moving_its_objects_sends_what_the_diff_sends() {
    use super::diff::{create_all, diff_states};
    use super::names::AnonymousNames;
    use super::state::TableState;
    let desired = TableState::new(table(&three()));
    let (by_diff, _) = diff_states(&desired, None, &mut AnonymousNames::default());
    let moved = create_all(desired, &mut AnonymousNames::default());
    assert!(by_diff.ops.len() > 10, "{by_diff:?}");
    assert_eq!(moved, by_diff);
}

#[test]
fn the_same_table_again_is_an_empty_transaction() {
    let t = table(&three());
    assert!(diff_both(&t, Some(&t)).ops.is_empty());
}

#[test]
fn the_kernels_listing_of_what_we_wrote_is_the_same_table() {
    // as read back: anonymous sets named by the kernel, no ids, elements
    // in another order, handles and counter values
    let desired = table(&three());
    let mut listed = Model::default();
    listed.apply(&diff(&desired, None));
    let mut listed = listed.contents().unwrap();
    for (i, r) in listed.rules.iter_mut().enumerate() {
        r.handle = Some(i as u64 + 4);
        r.exprs.push(Expr::Counter {
            bytes: 0,
            packets: 0,
        });
    }
    for e in listed.elements.values_mut() {
        e.reverse();
    }
    let mut desired = desired;
    for r in &mut desired.rules {
        r.exprs.push(Expr::Counter {
            bytes: 99,
            packets: 1,
        });
    }
    assert!(diff_both(&desired, Some(&listed)).ops.is_empty());
}

#[test]
fn one_endpoint_change_rewrites_one_chain_only() {
    let before = table(&three());
    let mut services = three();
    services[1].endpoints.push([10, 244, 1, 2]);
    let after = table(&services);
    let tx = diff_and_replay(&after, Some(&before));
    assert_eq!(
        kinds(&tx),
        [
            "flush chain service-b",
            "add set __kp0",
            "add 2 to __kp0",
            "add rule service-b"
        ]
    );
}

#[test]
fn new_anonymous_sets_are_named_past_existing_ones() {
    let mut before = Model::default();
    before.apply(&diff(&table(&three()), None));
    let before = before.contents().unwrap();
    assert!(before.sets.iter().any(|s| s.name == "__kp2"));
    let mut services = three();
    services[0].endpoints.pop();
    let tx = diff_and_replay(&table(&services), Some(&before));
    assert!(
        kinds(&tx).contains(&"add set __kp3".to_string()),
        "{:?}",
        kinds(&tx)
    );
}

#[test]
fn changed_element_data_is_deleted_then_added() {
    let before = table(&three());
    let mut after = before.clone();
    let vmap = after.elements.get_mut("service-ips").unwrap();
    vmap[0].data = Some(ElementData::Verdict(Verdict::Goto("service-c".into())));
    vmap.pop();
    after
        .elements
        .get_mut("cluster-ips")
        .unwrap()
        .push(Element::new(vec![ip([10, 96, 0, 9])]));
    let tx = diff_and_replay(&after, Some(&before));
    assert_eq!(
        kinds(&tx),
        [
            "delete 2 from service-ips",
            "add 1 to cluster-ips",
            "add 1 to service-ips"
        ]
    );
    let c = SyncCounts::of(&tx);
    assert_eq!((c.elements_written, c.elements_deleted), (2, 2));
}

#[test]
fn a_removed_service_loses_its_element_before_its_chain() {
    let before = table(&three());
    let services: Vec<Svc> = three().into_iter().filter(|s| s.name != "b").collect();
    let tx = diff_and_replay(&table(&services), Some(&before));
    assert_eq!(
        kinds(&tx),
        [
            "flush chain service-b",
            "delete 1 from cluster-ips",
            "delete 1 from service-ips",
            "delete chain service-b"
        ]
    );
}

#[test]
fn a_new_service_gets_its_chain_before_its_element() {
    let before = table(&three()[..2]);
    let tx = diff_and_replay(&table(&three()), Some(&before));
    let k = kinds(&tx);
    assert_eq!(k[0], "add chain service-c");
    assert_eq!(SyncCounts::of(&tx).chains_written, 1);
    assert_eq!(SyncCounts::of(&tx).elements_written, 2);
}

#[test]
fn a_changed_set_is_replaced_and_its_users_rewritten() {
    let before = table(&three());
    let mut after = before.clone();
    after.sets[1] = after.sets[1].clone().with_comment("ClusterIP traffic");
    let tx = diff_and_replay(&after, Some(&before));
    assert_eq!(
        kinds(&tx),
        [
            "flush chain services",
            "delete set service-ips",
            "add set service-ips",
            "add 3 to service-ips",
            "add rule services"
        ]
    );
}

#[test]
fn a_changed_base_chain_is_deleted_and_added_again() {
    let before = table(&three());
    let mut after = before.clone();
    if let Some(b) = &mut after.chains[0].base {
        b.priority = -110;
    }
    let tx = diff_and_replay(&after, Some(&before));
    assert_eq!(
        kinds(&tx),
        [
            "flush chain nat-prerouting",
            "delete chain nat-prerouting",
            "add chain nat-prerouting",
            "add rule nat-prerouting"
        ]
    );
}

#[test]
fn a_changed_table_is_made_again() {
    let before = table(&three());
    let mut after = before.clone();
    after.table.comment = None;
    let tx = diff_and_replay(&after, Some(&before));
    assert_eq!(kinds(&tx)[..2], ["delete table", "add table"]);
}

#[test]
fn elements_the_packet_path_added_stay() {
    let affinity = Set::new("affinity-x", vec![DataType::Ipv4Addr])
        .with_flags(SetFlags::DYNAMIC | SetFlags::TIMEOUT);
    let mut desired = table(&three());
    desired.sets.push(affinity.clone());
    let mut current = desired.clone();
    current.elements.insert(
        "affinity-x".into(),
        vec![Element::new(vec![ip([10, 0, 0, 7])])],
    );
    assert!(diff_both(&desired, Some(&current)).ops.is_empty());
}

#[test]
fn chains_and_sets_not_desired_are_deleted() {
    let mut before = table(&three());
    before.chains.push(Chain::regular("stale"));
    before.rules.push(Rule::new(
        "stale",
        stmt::verdict(Verdict::Jump("service-a".into())),
    ));
    before
        .sets
        .push(Set::new("stale-set", vec![DataType::Ipv4Addr]));
    let tx = diff_and_replay(&table(&three()), Some(&before));
    assert_eq!(
        kinds(&tx),
        [
            "flush chain stale",
            "delete set stale-set",
            "delete chain stale"
        ]
    );
    assert_eq!(SyncCounts::of(&tx).objects_deleted(), 2);
}

/// Where a partial sync's own time goes at 10,000 services × 10
/// endpoints (printed, not asserted; run with `--release --ignored
/// --nocapture`).
#[test]
#[ignore = "timing probe"]
fn timing_probe_state_and_diff() {
    use super::diff::diff_states;
    use super::names::AnonymousNames;
    use super::state::TableState;
    use std::time::Instant;
    let svcs: Vec<Svc> = (0..10_000u32)
        .map(|i| {
            let ip = |n: u32| n.to_be_bytes();
            Svc {
                name: "x",
                ip: ip(0x0a60_0000 + i),
                endpoints: (0..10).map(|e| ip(0x0af4_0000 + i * 16 + e)).collect(),
            }
        })
        .collect();
    let mut t = table(&svcs);
    // unique chain names
    for (n, c) in t.chains.iter_mut().enumerate().skip(2) {
        c.name = format!("service-{n}");
    }
    for (n, r) in t.rules.iter_mut().enumerate().skip(2) {
        r.chain = format!("service-{n}");
    }
    let last = TableState::new(t.clone());
    for _ in 0..3 {
        let desired = t.clone();
        let start = Instant::now();
        let state = TableState::new(desired);
        let built = start.elapsed();
        let (tx, _) = diff_states(&state, Some(&last), &mut AnonymousNames::default());
        let diffed = start.elapsed() - built;
        let start = Instant::now();
        drop(state);
        println!(
            "state {built:?}, diff {diffed:?} ({} changes), drop {:?}",
            tx.ops.len(),
            start.elapsed()
        );
    }
}

/// `table(services)` as the kernel lists it after we wrote it: anonymous
/// sets named by us and carrying their fingerprint.
fn listed(services: &[Svc]) -> TableContents {
    let mut model = Model::default();
    model.apply(&diff(&table(services), None));
    model.contents().unwrap()
}

#[test]
fn a_full_sync_compares_anonymous_sets_by_the_fingerprint_listed() {
    // not dumped: the listing holds no elements for them
    let mut current = listed(&three());
    current.elements.retain(|name, _| !name.starts_with("__kp"));
    assert!(
        reduced_diff(&table(&three()), &current)
            .unwrap()
            .ops
            .is_empty()
    );

    // a fingerprint that is not what we want: that chain is rewritten
    let mut services = three();
    services[2].endpoints.pop();
    let tx = reduced_diff(&table(&services), &current).unwrap();
    assert_eq!(
        kinds(&tx),
        [
            "flush chain service-c",
            "add set __kp3",
            "add 1 to __kp3",
            "add rule service-c"
        ]
    );
}

#[test]
fn a_full_sync_dumps_and_compares_an_anonymous_set_someone_else_made() {
    // made by hand (`nft add rule … map { … }`): the kernel's name, no
    // fingerprint, its elements listed
    let mut current = listed(&three());
    let set = current.sets.iter_mut().find(|s| s.name == "__kp1").unwrap();
    set.comment = None;
    set.name = "__set0".into();
    let elements = current.elements.remove("__kp1").unwrap();
    current.elements.insert("__set0".into(), elements);
    for r in &mut current.rules {
        for e in &mut r.exprs {
            if let Expr::Lookup { set, .. } = e
                && set.name == "__kp1"
            {
                set.name = "__set0".into();
            }
        }
    }
    assert!(diff_both(&table(&three()), Some(&current)).ops.is_empty());
    // with other elements it is rewritten
    current.elements.get_mut("__set0").unwrap().pop();
    let tx = diff_both(&table(&three()), Some(&current));
    assert_eq!(SyncCounts::of(&tx).chains_flushed, 1);
    assert_eq!(SyncCounts::of(&tx).rules_written, 1);
}

#[test]
fn a_rule_changed_by_hand_is_rewritten_and_a_named_set_redumped() {
    let mut current = listed(&three());
    // a rule of `services` changed, an element of `cluster-ips` gone and
    // one added
    let rule = current
        .rules
        .iter_mut()
        .find(|r| r.chain == "services")
        .unwrap();
    rule.exprs.push(Expr::Counter {
        bytes: 1,
        packets: 1,
    });
    rule.exprs.push(Expr::Notrack);
    let ips = current.elements.get_mut("cluster-ips").unwrap();
    ips.remove(0);
    ips.push(Element::new(vec![ip([10, 96, 9, 9])]));
    let mut dumped = Vec::new();
    let listed = super::listed::listed_of(&current);
    let (fixed, chains) = super::state::TableState::new(table(&three())).split_rules();
    let mut names = super::names::AnonymousNames::default();
    names.merge(&listed.names);
    let tx = super::stream::diff_listed(
        &fixed,
        chains.into_iter().map(super::piece::Piece::Chain),
        &listed,
        |s| {
            dumped.push(s.name.clone());
            Ok(current.elements[&s.name].clone())
        },
        &mut names,
    )
    .unwrap();
    assert_eq!(dumped, ["cluster-ips"], "only the set whose digest differs");
    assert_eq!(
        kinds(&tx),
        [
            "flush chain services",
            "delete 1 from cluster-ips",
            "add 1 to cluster-ips",
            "add rule services"
        ]
    );
    assert_eq!(tx, diff(&table(&three()), Some(&current)));
}

#[test]
fn rules_of_a_chain_listed_apart_make_it_rewritten() {
    // never from the kernel, which lists a chain's rules together
    let mut current = listed(&three());
    let at = current
        .rules
        .iter()
        .position(|r| r.chain == "services")
        .unwrap();
    let rule = current.rules.remove(at);
    current.rules.insert(0, rule.clone());
    current.rules.push(rule);
    let tx = reduced_diff(&table(&three()), &current).unwrap();
    assert_eq!(kinds(&tx), ["flush chain services", "add rule services"]);
}
