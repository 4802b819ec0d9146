//! Runs the built binary with bad flags and config values and checks the
//! exit code and the one message for each: usage errors exit 2 (clap), bad
//! configuration exits 1, and every message names the flag or field.
#![allow(clippy::unwrap_used)]

use std::process::Command;

struct Outcome {
    code: i32,
    stderr: String,
}

fn run(args: &[&str]) -> Outcome {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    Outcome {
        code: out.status.code().unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Asserts exit code `code` and that stderr contains each of `parts`.
fn expect(args: &[&str], code: i32, parts: &[&str]) {
    let out = run(args);
    assert_eq!(out.code, code, "{args:?}: {}", out.stderr);
    for part in parts {
        assert!(
            out.stderr.contains(part),
            "{args:?}: want {part:?} in:\n{}",
            out.stderr
        );
    }
}

fn config_file(body: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kube-proxy.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n{body}"
        ),
    )
    .unwrap();
    (dir, path.display().to_string())
}

#[test]
fn bad_duration_is_a_usage_error_with_gos_message() {
    expect(
        &["--iptables-sync-period=5"],
        2,
        &[
            "--iptables-sync-period",
            "time: missing unit in duration \"5\"",
        ],
    );
    expect(
        &["--ipvs-sync-period", "1x"],
        2,
        &[
            "--ipvs-sync-period",
            "time: unknown unit \"x\" in duration \"1x\"",
        ],
    );
    expect(
        &["--iptables-min-sync-period="],
        2,
        &["--iptables-min-sync-period", "time: invalid duration \"\""],
    );
}

#[test]
fn zero_period() {
    expect(
        &["--iptables-sync-period=0s"],
        1,
        &["--iptables-sync-period: invalid value \"0s\": must be greater than 0"],
    );
    expect(
        &["--proxy-mode=ipvs", "--ipvs-sync-period=0"],
        1,
        &["--ipvs-sync-period", "must be greater than 0"],
    );
}

#[test]
fn negative_period() {
    expect(
        &["--iptables-sync-period=-1s"],
        1,
        &["--iptables-sync-period", "\"-1s\"", "greater than 0"],
    );
    expect(
        &["--proxy-mode=ipvs", "--ipvs-sync-period=-5s"],
        1,
        &["--ipvs-sync-period", "\"-5s\"", "greater than 0"],
    );
}

#[test]
fn min_above_max() {
    expect(
        &[
            "--iptables-min-sync-period=1m",
            "--iptables-sync-period=30s",
        ],
        1,
        &[
            "--iptables-min-sync-period",
            "must be less than or equal to --iptables-sync-period (30s)",
        ],
    );
    expect(
        &["--proxy-mode=ipvs", "--ipvs-min-sync-period=2h22m", "--ipvs-sync-period=1m"],
        1,
        &["--ipvs-min-sync-period", "must be less than or equal to --ipvs-sync-period (1m0s)"],
    );
    let (_d, path) = config_file("iptables:\n  syncPeriod: 10s\n  minSyncPeriod: 1m\n");
    expect(
        &["--config", &path],
        1,
        &["iptables.minSyncPeriod", "iptables.syncPeriod (10s)"],
    );
}

#[test]
fn masquerade_bit_out_of_range() {
    expect(
        &["--iptables-masquerade-bit=40"],
        1,
        &["--iptables-masquerade-bit: invalid value \"40\": must be within the range [0, 31]"],
    );
    let (_d, path) = config_file("iptables:\n  masqueradeBit: 40\n");
    expect(
        &["--config", &path],
        1,
        &["iptables.masqueradeBit: invalid value \"40\""],
    );
}

#[test]
fn unknown_mode() {
    expect(
        &["--proxy-mode=kernelspace"],
        1,
        &[
            "--proxy-mode: invalid value \"kernelspace\"",
            "iptables, ipvs, nftables, userspace",
        ],
    );
    let (_d, path) = config_file("mode: fast\n");
    expect(&["--config", &path], 1, &["mode: invalid value \"fast\""]);
}

#[test]
fn bad_userspace_port_range_and_udp_timeout() {
    expect(
        &["--proxy-mode=userspace", "--proxy-port-range=2000-1000"],
        1,
        &["--proxy-port-range: invalid value \"2000-1000\": must be a valid port range"],
    );
    expect(&["--proxy-mode=userspace", "--udp-timeout=0s"], 1, &["--udp-timeout: invalid value \"0s\": must be greater than 0"]);
}

#[test]
fn unknown_backend() {
    expect(
        &["--iptables-backend=xtables"],
        2,
        &["--iptables-backend", "xtables", "auto", "legacy", "nft"],
    );
}

#[test]
fn unknown_scheduler_lists_the_valid_ones() {
    expect(
        &["--proxy-mode=ipvs", "--ipvs-scheduler=fifo"],
        1,
        &[
            "--ipvs-scheduler: invalid value \"fifo\"",
            "rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq, mh",
        ],
    );
    let (_d, path) = config_file("mode: ipvs\nipvs:\n  scheduler: fifo\n");
    expect(
        &["--config", &path],
        1,
        &["ipvs.scheduler: invalid value \"fifo\"", "rr, wrr"],
    );
}

#[test]
fn unknown_config_field() {
    let (_d, path) = config_file("iptables:\n  syncPerod: 30s\n");
    expect(
        &["--config", &path],
        1,
        &[&path, "unknown field `syncPerod`", "line 4"],
    );
    let (_d, path) = config_file("udpIdleTimeout: 250ms\n");
    expect(&["--config", &path], 1, &["unknown field `udpIdleTimeout`"]);
}

#[test]
fn wrong_api_version_or_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubeproxy.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n",
    )
    .unwrap();
    expect(
        &["--config", path.to_str().unwrap()],
        1,
        &["apiVersion", "v1beta1", "kubeproxy.config.k8s.io/v1alpha1"],
    );
}

#[test]
fn bad_cidr() {
    expect(
        &["--cluster-cidr=10.0.0.0/33"],
        1,
        &[
            "--cluster-cidr: invalid value \"10.0.0.0/33\"",
            "valid CIDR",
        ],
    );
    expect(
        &["--nodeport-addresses=10.0.0.0/8,nope"],
        1,
        &["--nodeport-addresses: invalid value \"nope\""],
    );
    let (_d, path) = config_file("clusterCIDR: 10.244.0.0/99\n");
    expect(
        &["--config", &path],
        1,
        &["clusterCIDR: invalid value \"10.244.0.0/99\""],
    );
}

#[test]
fn bad_bind_address() {
    expect(
        &["--healthz-bind-address=nohost:1"],
        1,
        &["--healthz-bind-address"],
    );
}

#[test]
fn missing_config_file() {
    expect(
        &["--config=/nonexistent/kube-proxy.yaml"],
        1,
        &["--config: cannot read config file /nonexistent/kube-proxy.yaml"],
    );
}

#[test]
fn unknown_flag_is_a_usage_error() {
    expect(&["--no-such-flag"], 2, &["--no-such-flag"]);
}

#[test]
fn bad_boolean_is_a_usage_error() {
    expect(
        &["--masquerade-all=maybe"],
        2,
        &["--masquerade-all", "maybe"],
    );
}

#[test]
fn each_error_is_one_line() {
    let out = run(&["--iptables-masquerade-bit=40"]);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn help_lists_upstream_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--config",
        "--proxy-mode",
        "--iptables-sync-period",
        "--masquerade-all",
        "--cleanup",
        "--ipvs-scheduler",
        "--manifests",
        "--dry-run",
        "--iptables-backend",
        "-v, --v",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn flags_ignored_with_config_are_warned_about() {
    let (_d, path) = config_file("mode: iptables\n");
    let out_path = _d.path().join("out.yaml");
    let out = run(&[
        "--config",
        &path,
        "--proxy-mode=ipvs",
        "--write-config-to",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("ignoring --proxy-mode"),
        "{}",
        out.stderr
    );
    let written = std::fs::read_to_string(out_path).unwrap();
    assert!(written.contains("\nmode: iptables\n"), "{written}");
}
