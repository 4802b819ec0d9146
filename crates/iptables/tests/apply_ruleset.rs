//! The applier on a real kernel, each case in a fresh network namespace,
//! for both backends (and both families where the family matters):
//! applying, idempotence, stale chain deletion, failed restores keeping
//! the previous rules, `iptables-restore --test`, the canary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use xtables::apply::{Applied, Backend, Iptables, RestoreFailure, Rollback};
use model::IpFamily;
use xtables::{Error, Rule, Table, Target};
use support::*;

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

/// Runs `check(ipt)` in a fresh namespace for every backend and family.
fn for_each_tool<Fut>(label: &str, families: &[IpFamily], check: fn(Iptables) -> Fut)
where
    Fut: std::future::Future<Output = ()> + 'static,
{
    for backend in Backend::ALL {
        for &family in families {
            in_netns(label, move || check(iptables(backend, family).recording_input()));
        }
    }
}

#[test]
fn applied_rules_chains_and_jumps_show_in_iptables_save() {
    for_each_tool("apply", &FAMILIES, |ipt| async move {
        let ruleset = ruleset(ipt.family(), &["web", "db"]);
        let applied = ipt.apply_ruleset(&ruleset).await.unwrap();
        assert_eq!(applied.added_jumps.len(), ruleset.builtin_jumps.len());
        // Fresh tables: nothing to remove; the jumps are added by the same restore.
        let adds: Vec<String> = ruleset.builtin_jumps.iter().map(add_line).collect();
        let mut rest: Vec<&str> = applied.restore_input.as_deref().unwrap().lines().filter(|l| !adds.iter().any(|a| a == l)).collect();
        let text = ruleset.to_restore();
        let mut expected: Vec<&str> = text.lines().collect();
        // (legacy declares the chains in name order)
        rest.sort();
        expected.sort();
        assert_eq!(rest, expected);
        assert_eq!(applied.restore_input.as_deref().unwrap().lines().filter(|l| adds.iter().any(|a| a == l)).count(), adds.len());

        let save = ipt.save().await.unwrap();
        let lines = rule_lines(&save);
        for (table, rules) in ruleset.tables() {
            for chain in &rules.chains {
                let table_save = ipt.saved_rules(table).await.unwrap();
                assert!(has_chain(&table_save, chain), "{:?} {table}: no {chain} in\n{table_save}", ipt);
            }
            for rule in &rules.rules {
                assert!(lines.contains(&format!("-A {rule}")), "{:?}: rule missing: {rule}\n{save}", ipt);
            }
        }
        // Every jump is printed exactly as rendered (this is what lets the
        // next sync skip `iptables -C`), and prepended in order.
        for jump in &ruleset.builtin_jumps {
            let line = format!("-A {}", jump.rule_line());
            assert_eq!(lines.iter().filter(|l| **l == line).count(), 1, "{:?}: {line}\n{save}", ipt);
        }
        let forward: Vec<_> = lines.iter().filter(|l| l.starts_with("-A FORWARD")).collect();
        assert!(forward[0].ends_with("-j KUBE-SERVICES") && forward[1].ends_with("-j KUBE-FORWARD"), "{forward:?}");
    });
}

#[test]
fn applying_twice_changes_nothing_and_adds_no_jump() {
    for_each_tool("twice", &FAMILIES, |ipt| async move {
        let ruleset = ruleset(ipt.family(), &["web", "db"]);
        ipt.apply_ruleset(&ruleset).await.unwrap();
        let first = normalized(&ipt.save().await.unwrap());
        let again: Applied = ipt.apply_ruleset(&ruleset).await.unwrap();
        assert_eq!(normalized(&ipt.save().await.unwrap()), first, "{:?}", ipt);
        assert!(again.added_jumps.is_empty() && again.removed.is_empty(), "{again:?}");
        assert_eq!(again.restore_input.as_deref(), Some(""), "{:?}: nothing differs, nothing written", ipt);
    });
}

#[test]
fn a_jump_deleted_by_someone_else_comes_back_once() {
    for_each_tool("rejump", &[IpFamily::V4], |ipt| async move {
        let ruleset = ruleset(ipt.family(), &["web"]);
        ipt.apply_ruleset(&ruleset).await.unwrap();
        let (iptables, _) = tools(ipt.backend(), ipt.family());
        let portals = ["-t", "nat", "-D", "PREROUTING", "-m", "comment", "--comment", "kubernetes service portals"];
        sh(&iptables, &[&portals[..], &["-j", "KUBE-SERVICES"]].concat());
        let again = ipt.apply_ruleset(&ruleset).await.unwrap();
        assert_eq!(again.added_jumps.len(), 1, "{again:?}");
        let save = ipt.saved_rules(Table::Nat).await.unwrap();
        assert_eq!(save.matches("-A PREROUTING").count(), 1, "{save}");
    });
}

#[test]
fn duplicated_and_outdated_jumps_of_ours_are_removed() {
    for_each_tool("dupjump", &[IpFamily::V4], |ipt| async move {
        let ruleset = ruleset(ipt.family(), &["web"]);
        ipt.apply_ruleset(&ruleset).await.unwrap();
        let (iptables, _) = tools(ipt.backend(), ipt.family());
        let portals = ["-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"];
        sh(&iptables, &[&["-t", "nat", "-A", "PREROUTING"][..], &portals].concat());
        sh(&iptables, &["-t", "nat", "-A", "OUTPUT", "-m", "comment", "--comment", "old", "-j", "KUBE-SERVICES"]);
        sh(&iptables, &["-t", "nat", "-A", "OUTPUT", "-d", "192.0.2.1", "-j", "RETURN"]);
        let again = ipt.apply_ruleset(&ruleset).await.unwrap();
        let nat = &again.removed.iter().find(|t| t.table == Table::Nat).expect("nat changes").deleted_jumps;
        assert_eq!(nat.len(), 2, "{nat:?}");
        let save = ipt.saved_rules(Table::Nat).await.unwrap();
        assert_eq!(save.matches("-A PREROUTING").count(), 1, "{save}");
        assert!(save.contains("-A OUTPUT -d 192.0.2.1/32 -j RETURN"), "foreign rule kept:\n{save}");
        assert!(!save.contains("\"old\""), "{save}");
    });
}

#[test]
fn chains_of_a_removed_service_are_deleted_at_the_next_sync() {
    for_each_tool("stale", &FAMILIES, |ipt| async move {
        ipt.apply_ruleset(&ruleset(ipt.family(), &["web", "db"])).await.unwrap();
        let applied = ipt.apply_ruleset(&ruleset(ipt.family(), &["web"])).await.unwrap();
        let save = ipt.saved_rules(Table::Nat).await.unwrap();
        for chain in service_chains("db") {
            assert!(!has_chain(&save, &chain), "{chain} still there:\n{save}");
            assert!(!save.contains(&chain), "{chain} still used:\n{save}");
        }
        for chain in service_chains("web") {
            assert!(has_chain(&save, &chain), "{chain} gone:\n{save}");
        }
        let nat = applied.removed.iter().find(|t| t.table == Table::Nat).expect("nat changes");
        let mut deleted = nat.deleted_chains.clone();
        deleted.sort();
        let mut expected = service_chains("db").to_vec();
        expected.sort();
        assert_eq!(deleted, expected);
        // The same result as applying the smaller ruleset to a fresh table.
        let fresh = in_netns_same_family(ipt, &["web"]).await;
        assert_eq!(normalized(&ipt.saved_rules(Table::Nat).await.unwrap()), fresh);
    });
}

/// The restore line that adds `jump`: `-I CHAIN 1 ...` or `-A CHAIN ...`.
fn add_line(jump: &iptables::BuiltinJump) -> String {
    let line = jump.rule_line();
    let rest = &line[jump.chain.len()..];
    if jump.prepend { format!("-I {} 1{rest}", jump.chain) } else { format!("-A {line}") }
}

/// `iptables-save -t nat` of `services` applied to a fresh namespace.
async fn in_netns_same_family(ipt: Iptables, services: &'static [&'static str]) -> String {
    let job = move || async move {
        ipt.apply_ruleset(&ruleset(ipt.family(), services)).await.unwrap();
        normalized(&ipt.saved_rules(Table::Nat).await.unwrap())
    };
    std::thread::spawn(move || in_netns("fresh", job)).join().unwrap()
}

/// A broken rule in nat (the last table), after a change in filter
/// (committed first): the error names the broken line, filter is rolled
/// back, and the save is what it was before.
#[test]
fn a_rule_iptables_cannot_parse_fails_by_line_and_keeps_the_previous_rules() {
    for_each_tool("badrule", &FAMILIES, |ipt| async move {
        let good = ruleset(ipt.family(), &["web", "db"]);
        ipt.apply_ruleset(&good).await.unwrap();
        let before = normalized(&ipt.save().await.unwrap());

        let mut bad = ruleset(ipt.family(), &["web"]);
        bad.filter.rules.push(Rule::new("KUBE-FORWARD").comment("new rule").target(Target::Accept).build());
        let broken = "KUBE-SERVICES -m no-such-match -j RETURN";
        bad.nat.rules.push(Rule::new("KUBE-SERVICES").matching("-m no-such-match").target(Target::Return).build());
        let err = ipt.apply_ruleset(&bad).await.expect_err("broken rule must fail");
        let Error::Restore(failure) = &err else { panic!("{err}") };
        let RestoreFailure { line, text, table, rollback, .. } = &**failure;
        assert_eq!(*text, format!("-A {broken}"), "{err}");
        assert!(line.is_some_and(|n| n > bad.filter.rules.len()), "{err}");
        assert_eq!(*table, Some(Table::Nat));
        assert_eq!(*rollback, Rollback::Done(vec![Table::Filter]), "{err}");
        assert!(err.to_string().contains(broken), "{err}");
        assert_eq!(normalized(&ipt.save().await.unwrap()), before, "{:?}: previous rules not kept", ipt);
    });
}

/// A rule that parses but that the kernel refuses at commit (an nfacct
/// object that does not exist): legacy names the table's COMMIT, nft the
/// rule. Either way nothing changes.
#[test]
fn a_rule_the_kernel_refuses_fails_and_keeps_the_previous_rules() {
    for_each_tool("kernelno", &[IpFamily::V4], |ipt| async move {
        let good = ruleset(ipt.family(), &["web", "db"]);
        ipt.apply_ruleset(&good).await.unwrap();
        let before = normalized(&ipt.save().await.unwrap());

        let mut bad = ruleset(ipt.family(), &["web"]);
        let refused = "KUBE-SERVICES -m nfacct --nfacct-name  no_such_counter -j RETURN";
        let nfacct = "-m nfacct --nfacct-name  no_such_counter";
        bad.nat.rules.push(Rule::new("KUBE-SERVICES").matching(nfacct).target(Target::Return).build());
        let err = ipt.apply_ruleset(&bad).await.expect_err("kernel must refuse");
        let Error::Restore(failure) = &err else { panic!("{err}") };
        let RestoreFailure { text, table, .. } = &**failure;
        let expected = match ipt.backend() {
            Backend::Legacy => "COMMIT".to_string(),
            Backend::Nft => format!("-A {refused}"),
        };
        assert_eq!(*text, expected, "{err}");
        assert_eq!(*table, Some(Table::Nat));
        assert_eq!(normalized(&ipt.save().await.unwrap()), before);
    });
}

#[test]
fn a_full_sync_rewrites_only_our_chains_someone_changed() {
    for_each_tool("repair", &[IpFamily::V4], |ipt| async move {
        let ruleset = ruleset(ipt.family(), &["web", "db"]);
        ipt.apply_ruleset(&ruleset).await.unwrap();
        let before = normalized(&ipt.save().await.unwrap());
        let (iptables, _) = tools(ipt.backend(), ipt.family());
        let [svc, sep, _] = service_chains("web");
        sh(&iptables, &["-t", "nat", "-I", &svc, "1", "-j", "RETURN"]);
        sh(&iptables, &["-t", "nat", "-D", &sep, "1"]);
        let again = ipt.apply_ruleset(&ruleset).await.unwrap();
        let mut declared: Vec<&str> = again.restore_input.as_deref().unwrap().lines().filter(|l| l.starts_with(':')).collect();
        declared.sort();
        assert_eq!(declared, vec![format!(":{sep} - [0:0]"), format!(":{svc} - [0:0]")], "{:?}", again.restore_input);
        assert_eq!(normalized(&ipt.save().await.unwrap()), before, "{:?}: not repaired", ipt);
    });
}

/// On fresh tables filter (with its built-in jumps) and mangle land before
/// nat fails: the rollback deletes the jumps and our chains again.
#[test]
fn a_failure_on_fresh_tables_takes_the_added_jumps_back() {
    for_each_tool("freshbad", &[IpFamily::V4], |ipt| async move {
        let mut bad = ruleset(ipt.family(), &["web"]);
        bad.nat.rules.push(Rule::new("KUBE-SERVICES").matching("-m no-such-match").target(Target::Return).build());
        let err = ipt.apply_ruleset(&bad).await.expect_err("broken rule must fail");
        let Error::Restore(failure) = &err else { panic!("{err}") };
        assert_eq!(failure.rollback, Rollback::Done(vec![Table::Filter, Table::Mangle]), "{err}");
        let save = ipt.save().await.unwrap();
        assert!(!save.contains("KUBE-"), "{:?}: left behind:\n{save}", ipt);
    });
}

/// nft: a full sync split into one `COMMIT` per service leaves exactly
/// what one `COMMIT` per table leaves, also when services go away.
#[test]
fn nft_commits_per_service_block_give_the_same_tables_as_one_commit() {
    const ALL: &[&str] = &["web", "db", "api", "cache", "queue"];
    let tables = |per: Option<usize>| {
        move || async move {
            let ipt = iptables(Backend::Nft, IpFamily::V4).with_services_per_commit(per).recording_input();
            let applied = ipt.apply_ruleset(&ruleset(ipt.family(), ALL)).await.unwrap();
            let first = normalized(&ipt.save().await.unwrap());
            // Three services go, two are renumbered (rewritten), two are new.
            let again = ipt.apply_ruleset(&ruleset(ipt.family(), &["db", "api", "x", "y"])).await.unwrap();
            let commits = |a: &Applied| a.restore_input.as_deref().unwrap().matches("COMMIT").count();
            (first, normalized(&ipt.save().await.unwrap()), commits(&applied), commits(&again), again.removed)
        }
    };
    let one = in_netns("nftone", tables(None));
    let split = in_netns("nftsplit", tables(Some(1)));
    assert_eq!((one.2, one.3), (3, 1), "the second sync writes only nat");
    // filter and mangle: one each; nat: static chains, 5 services, top chains;
    // then only the 4 services that differ and the top chains.
    assert_eq!((split.2, split.3), (2 + 1 + 5 + 1, 4 + 1));
    assert_eq!(split.0, one.0, "all services");
    assert_eq!(split.1, one.1, "after removing services");
    assert_eq!(split.4, one.4);
}

/// nft: when a later block of a table fails, the blocks already committed
/// are put back.
#[test]
fn nft_a_failing_block_rolls_back_the_blocks_before_it() {
    in_netns("nftblockbad", || async {
        let ipt = iptables(Backend::Nft, IpFamily::V4).with_services_per_commit(Some(1));
        ipt.apply_ruleset(&ruleset(ipt.family(), &["web", "db", "api"])).await.unwrap();
        let before = normalized(&ipt.save().await.unwrap());
        // Renumbered: every service differs, so every block writes.
        let mut bad = ruleset(ipt.family(), &["db", "api", "web"]);
        let [svc, ..] = service_chains("web");
        let nfacct = "-m nfacct --nfacct-name  no_such_counter";
        bad.nat.rules.push(Rule::new(&svc).matching(nfacct).target(Target::Return).build());
        let err = ipt.apply_ruleset(&bad).await.expect_err("kernel must refuse");
        let Error::Restore(failure) = &err else { panic!("{err}") };
        assert!(failure.text.starts_with(&format!("-A {svc}")), "{err}");
        assert_eq!(failure.rollback, Rollback::Done(vec![Table::Nat]), "{err}");
        assert_eq!(normalized(&ipt.save().await.unwrap()), before);
    });
}

#[test]
fn a_failure_in_the_first_table_needs_no_rollback() {
    for_each_tool("badfirst", &[IpFamily::V4], |ipt| async move {
        ipt.apply_ruleset(&ruleset(ipt.family(), &["web"])).await.unwrap();
        let before = normalized(&ipt.save().await.unwrap());
        let mut bad = ruleset(ipt.family(), &["web", "db"]);
        bad.filter.rules.push(Rule::new("KUBE-FORWARD").jump("NO-SUCH-CHAIN").build());
        let err = ipt.apply_ruleset(&bad).await.expect_err("must fail");
        let Error::Restore(failure) = &err else { panic!("{err}") };
        let RestoreFailure { table, rollback, .. } = &**failure;
        assert_eq!((*table, rollback), (Some(Table::Filter), &Rollback::NotNeeded), "{err}");
        assert_eq!(normalized(&ipt.save().await.unwrap()), before);
    });
}

#[test]
fn restore_test_accepts_the_restore_text_and_names_a_bad_line() {
    for_each_tool("restest", &FAMILIES, |ipt| async move {
        let ruleset = ruleset(ipt.family(), &["web", "db"]);
        ipt.test_restore(&ruleset.to_restore()).await.unwrap();
        let save = ipt.save().await.unwrap();
        assert!(!save.contains("KUBE-"), "--test must not commit:\n{save}");

        let mut bad = ruleset.clone();
        bad.nat.rules.insert(2, Rule::new("KUBE-SERVICES").matching("-p tcp --dport").target(Target::Return).build());
        let err = ipt.test_restore(&bad.to_restore()).await.expect_err("bad rule");
        let Error::Restore(failure) = &err else { panic!("{err}") };
        let text = &failure.text;
        assert_eq!(text, "-A KUBE-SERVICES -p tcp --dport -j RETURN", "{err}");
    });
}

#[test]
fn the_canary_is_seen_until_someone_flushes_mangle() {
    for_each_tool("canary", &[IpFamily::V4], |ipt| async move {
        assert!(!ipt.canary_exists().await.unwrap());
        ipt.apply_ruleset(&ruleset(ipt.family(), &["web"])).await.unwrap();
        assert!(ipt.canary_exists().await.unwrap());
        let (iptables, _) = tools(ipt.backend(), ipt.family());
        sh(&iptables, &["-t", "mangle", "-F"]);
        sh(&iptables, &["-t", "mangle", "-X"]);
        assert!(!ipt.canary_exists().await.unwrap());
    });
}
