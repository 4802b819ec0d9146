//! Shared by the `apply_*` kernel tests: running async applier code on a
//! thread inside a fresh network namespace, running tools there, and
//! hand-built rulesets (independent of the renderer) in upstream's shape.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use model::IpFamily;
use xtables::{BuiltinJump, Rule, Ruleset, Table, TableRules, Target};
use std::future::Future;
use testkit::netns::Netns;

/// Runs `f` on a thread inside a fresh namespace, with a current-thread
/// runtime so every child process and socket is made in the namespace.
/// Panics when kernel tests cannot run here.
pub fn in_netns<T, F, Fut>(label: &str, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
{
    testkit::netns::require_kernel();
    let ns = Netns::new(label).expect("create netns");
    let runtime = move || tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f());
    ns.run(runtime).expect("run in netns")
}

/// Runs `program args` (in the calling thread's namespace); panics with
/// its stderr on failure.
pub fn sh(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program).args(args).output().expect("spawn");
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `iptables-save` output without comments and with counters zeroed, so
/// two saves of the same rules compare equal.
pub fn normalized(save: &str) -> String {
    let mut out = String::new();
    for line in save.lines().filter(|l| !l.starts_with('#')) {
        match line.find(" [") {
            Some(at) if line.starts_with(':') => out.push_str(&format!("{} [0:0]", &line[..at])),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The `-A` lines of `save` (all tables together).
pub fn rule_lines(save: &str) -> Vec<String> {
    save.lines().filter(|l| l.starts_with("-A ")).map(str::to_string).collect()
}

/// Whether `save` declares the chain `chain`.
pub fn has_chain(save: &str, chain: &str) -> bool {
    save.lines().any(|l| l.strip_prefix(':').and_then(|r| r.split_whitespace().next()) == Some(chain))
}

/// The chains of a hand-built service `name`: `KUBE-SVC-<NAME…>` and two
/// `KUBE-SEP-` chains, 16-character suffixes like upstream's hashes.
pub fn service_chains(name: &str) -> [String; 3] {
    let hash = |tag: &str| format!("{:A<16}", format!("{}{tag}", name.to_uppercase()));
    [format!("KUBE-SVC-{}", hash("")), format!("KUBE-SEP-{}", hash("1")), format!("KUBE-SEP-{}", hash("2"))]
}

struct Addresses {
    cluster_ip: String,
    pods: [String; 2],
    host_bits: u8,
    dnat: [String; 2],
}

fn addresses(family: IpFamily, n: u8) -> Addresses {
    match family {
        IpFamily::V4 => Addresses {
            cluster_ip: format!("172.30.0.{n}"),
            pods: [format!("10.180.0.{n}"), format!("10.180.1.{n}")],
            host_bits: 32,
            dnat: [format!("10.180.0.{n}:80"), format!("10.180.1.{n}:80")],
        },
        IpFamily::V6 => Addresses {
            cluster_ip: format!("fd00:172:30::{n}"),
            pods: [format!("fd00:10:180::{n}"), format!("fd00:10:180::1:{n}")],
            host_bits: 128,
            dnat: [format!("[fd00:10:180::{n}]:80"), format!("[fd00:10:180::1:{n}]:80")],
        },
    }
}

/// Rules of one ClusterIP service with two endpoints, written the way
/// `iptables-save` prints them.
fn service_rules(family: IpFamily, name: &str, n: u8) -> (Vec<String>, Vec<Rule>) {
    let [svc, sep1, sep2] = service_chains(name);
    let a = addresses(family, n);
    let bits = a.host_bits;
    let comment = format!("ns1/{name}:p80");
    let mut rules = vec![
        Rule::new("KUBE-SERVICES")
            .dst(&format!("{}/{bits}", a.cluster_ip))
            .comment(&format!("{comment} cluster IP"))
            .dport("tcp", 80)
            .jump(&svc)
            .build(),
        Rule::new(&svc)
            .comment(&format!("{comment} -> {}", a.dnat[0]))
            .matching("-m statistic --mode random --probability 0.50000000000")
            .jump(&sep1)
            .build(),
        Rule::new(&svc).comment(&format!("{comment} -> {}", a.dnat[1])).jump(&sep2).build(),
    ];
    for (sep, (pod, dnat)) in [&sep1, &sep2].into_iter().zip(a.pods.iter().zip(&a.dnat)) {
        rules.push(Rule::new(sep).src(&format!("{pod}/{bits}")).comment(&comment).jump("KUBE-MARK-MASQ").build());
        let to = dnat.parse().unwrap_or_else(|e| panic!("{dnat}: {e}"));
        rules.push(Rule::new(sep).proto("tcp").comment(&comment).matching("-m tcp").target(Target::Dnat(to)).build());
    }
    (vec![svc, sep1, sep2], rules)
}

fn jump(table: Table, chain: &'static str, args: &[&str]) -> BuiltinJump {
    BuiltinJump { table, chain, args: args.iter().map(|a| a.to_string()).collect(), prepend: true }
}

/// A ruleset in upstream's shape with one ClusterIP service per name in
/// `services` (numbered from 1 in that order).
pub fn ruleset(family: IpFamily, services: &[&str]) -> Ruleset {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut nat = TableRules {
        chains: strings(&["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY"]),
        rules: vec![
            Rule::new("KUBE-MARK-MASQ").target(Target::SetXmark { value: 0x4000, mask: 0x4000 }).build(),
            Rule::new("KUBE-POSTROUTING").matching("-m mark ! --mark 0x4000/0x4000").target(Target::Return).build(),
            Rule::new("KUBE-POSTROUTING").target(Target::SetXmark { value: 0x4000, mask: 0 }).build(),
            Rule::new("KUBE-POSTROUTING")
                .comment("kubernetes service traffic requiring SNAT")
                .target(Target::Masquerade { random_fully: true })
                .build(),
        ],
    };
    for (i, name) in services.iter().enumerate() {
        let (chains, rules) = service_rules(family, name, i as u8 + 1);
        nat.chains.extend(chains);
        nat.rules.extend(rules);
    }
    let filter = TableRules {
        chains: strings(&["KUBE-SERVICES", "KUBE-FORWARD", "KUBE-PROXY-CANARY"]),
        rules: vec![
            Rule::new("KUBE-FORWARD")
                .comment("kubernetes forwarding rules")
                .matching("-m mark --mark 0x4000/0x4000")
                .target(Target::Accept)
                .build(),
        ],
    };
    let portals = ["-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"];
    let new_portals = ["-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"];
    Ruleset {
        filter,
        nat,
        mangle: TableRules { chains: strings(&["KUBE-PROXY-CANARY"]), rules: Vec::new() },
        builtin_jumps: vec![
            jump(Table::Filter, "FORWARD", &["-m", "comment", "--comment", "kubernetes forwarding rules", "-j", "KUBE-FORWARD"]),
            jump(Table::Filter, "FORWARD", &new_portals),
            jump(Table::Filter, "OUTPUT", &new_portals),
            jump(Table::Nat, "OUTPUT", &portals),
            jump(Table::Nat, "PREROUTING", &portals),
            jump(
                Table::Nat,
                "POSTROUTING",
                &["-m", "comment", "--comment", "kubernetes postrouting rules", "-j", "KUBE-POSTROUTING"],
            ),
        ],
    }
}

/// The tools of `backend` for `family` in the current namespace.
pub fn tools(backend: xtables::apply::Backend, family: IpFamily) -> (String, String) {
    let base = if family == IpFamily::V4 { "iptables" } else { "ip6tables" };
    (format!("{base}-{backend}"), format!("{base}-{backend}-save"))
}

/// The tools for `backend` and `family` with the iptables tests' own lock
/// file (the host's `/run/xtables.lock` is shared with whatever else runs
/// on the machine; the tests' restores still take turns among themselves)
/// and upstream's wait.
pub fn iptables(backend: xtables::apply::Backend, family: IpFamily) -> xtables::apply::Iptables {
    static LOCK: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    let lock = LOCK.get_or_init(|| {
        let path = std::env::temp_dir().join("kprs-iptables-tests-xtables.lock");
        Box::leak(path.to_string_lossy().into_owned().into_boxed_str())
    });
    let wait = xtables::apply::LockWait { file: Some(lock), ..xtables::apply::LockWait::default() };
    xtables::apply::Iptables::new(backend, family).with_lock_wait(wait)
}
