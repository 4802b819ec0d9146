//! The manifests of `deploy/`: every document decodes as its Kubernetes
//! API type with nothing left over (a misspelt field fails); the RBAC they
//! bind (upstream's `system:node-proxier`, `testdata/upstream-bootstrap/`,
//! plus our own roles) grants `list` and `watch` on every resource the
//! binary watches (`source::kube::WATCHED_RESOURCES`); every ConfigMap's
//! `config.conf` passes the binary's `--config` validation; and the
//! DaemonSet has the shape of kubeadm's, so swapping the image there works.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.yaml` under `deploy/`, with its documents.
fn deploy_documents() -> Vec<(PathBuf, String)> {
    let mut files = vec![];
    let mut dirs = vec![repo().join("deploy")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "no manifests in deploy/");
    let mut docs = vec![];
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in text.split("\n---\n").filter(|d| d.lines().any(|l| !l.trim().is_empty() && !l.starts_with('#'))) {
            docs.push((file.clone(), doc.to_string()));
        }
    }
    docs
}

fn kind_of(doc: &str) -> String {
    let value: serde_json::Value = serde_saphyr::from_str(doc).unwrap();
    value["kind"].as_str().expect("a document without kind").to_string()
}

/// Decodes `doc` as `T` and checks that encoding it again gives the same
/// JSON: a field `T` does not know would be dropped and fail here.
fn decode_exactly<T: DeserializeOwned + Serialize>(file: &Path, doc: &str) -> T {
    let typed: T = serde_saphyr::from_str(doc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let generic: serde_json::Value = serde_saphyr::from_str(doc).unwrap();
    let again = serde_json::to_value(&typed).unwrap();
    assert_eq!(again, generic, "{}: a field its API type does not have (misspelt?)", file.display());
    typed
}

#[derive(Default)]
struct Deploy {
    accounts: Vec<ServiceAccount>,
    roles: Vec<ClusterRole>,
    bindings: Vec<ClusterRoleBinding>,
    config_maps: Vec<(PathBuf, ConfigMap)>,
    daemon_sets: Vec<DaemonSet>,
}

fn deploy() -> Deploy {
    let mut out = Deploy::default();
    for (file, doc) in deploy_documents() {
        match kind_of(&doc).as_str() {
            "ServiceAccount" => out.accounts.push(decode_exactly(&file, &doc)),
            "ClusterRole" => out.roles.push(decode_exactly(&file, &doc)),
            "ClusterRoleBinding" => out.bindings.push(decode_exactly(&file, &doc)),
            "ConfigMap" => out.config_maps.push((file.clone(), decode_exactly(&file, &doc))),
            "DaemonSet" => out.daemon_sets.push(decode_exactly(&file, &doc)),
            other => panic!("{}: unexpected kind {other}", file.display()),
        }
    }
    out
}

fn node_proxier() -> ClusterRole {
    let path = repo().join("testdata/upstream-bootstrap/system-node-proxier.yaml");
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn grants(rule: &PolicyRule, group: &str, resource: &str, verb: &str) -> bool {
    let has = |list: &Option<Vec<String>>, want: &str| list.as_ref().is_some_and(|l| l.iter().any(|v| v == want || v == "*"));
    has(&rule.api_groups, group) && has(&rule.resources, resource) && rule.verbs.iter().any(|v| v == verb || v == "*")
}

#[test]
fn every_manifest_decodes_as_its_api_type() {
    let d = deploy();
    assert_eq!((d.accounts.len(), d.daemon_sets.len()), (1, 1));
    assert_eq!(d.config_maps.len(), 3, "the main ConfigMap and one per other mode");
}

#[test]
fn the_bound_roles_grant_every_list_and_watch_the_binary_makes() {
    let d = deploy();
    let account = d.accounts[0].metadata.name.clone().unwrap();
    let namespace = d.accounts[0].metadata.namespace.clone().unwrap();
    let mut known = d.roles.clone();
    known.push(node_proxier());
    let bound: Vec<&ClusterRole> = d
        .bindings
        .iter()
        .filter(|b| {
            b.subjects.iter().flatten().any(|s| {
                s.kind == "ServiceAccount" && s.name == account && s.namespace.as_deref() == Some(&namespace)
            })
        })
        .map(|b| {
            let name = &b.role_ref.name;
            known.iter().find(|r| r.metadata.name.as_deref() == Some(name)).unwrap_or_else(|| panic!("bound role {name} not known"))
        })
        .collect();
    assert!(bound.iter().any(|r| r.metadata.name.as_deref() == Some("system:node-proxier")), "bound to system:node-proxier, as kubeadm");
    for (group, resource) in source::kube::WATCHED_RESOURCES {
        for verb in ["list", "watch"] {
            let granted = bound.iter().flat_map(|r| r.rules.iter().flatten()).any(|rule| grants(rule, group, resource, verb));
            assert!(granted, "no bound role grants {verb} on {resource} (group {group:?})");
        }
    }
}

#[test]
fn a_role_missing_a_watched_resource_would_be_caught() {
    let without_slices = PolicyRule { api_groups: Some(vec!["".into()]), resources: Some(vec!["services".into()]), verbs: vec!["list".into(), "watch".into()], ..PolicyRule::default() };
    assert!(grants(&without_slices, "", "services", "watch"));
    assert!(!grants(&without_slices, "discovery.k8s.io", "endpointslices", "list"));
}

#[test]
fn every_configuration_passes_the_binarys_validation() {
    let dir = tempfile::tempdir().unwrap();
    for (file, config_map) in deploy().config_maps {
        let data = config_map.data.unwrap_or_default();
        let config = data.get("config.conf").unwrap_or_else(|| panic!("{}: no config.conf", file.display()));
        assert!(data.contains_key("kubeconfig.conf"), "{}: no kubeconfig.conf", file.display());
        assert!(config.contains("kubeconfig: /var/lib/kube-proxy/kubeconfig.conf"), "{}: the kubeconfig is not the mounted one", file.display());
        let path = dir.path().join("config.conf");
        std::fs::write(&path, config).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs"))
            .arg("--config")
            .arg(&path)
            .arg("--write-config-to")
            .arg(dir.path().join("effective.yaml"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: --config refused it: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn the_daemon_set_has_kubeadms_shape() {
    let ds = deploy().daemon_sets.remove(0);
    assert_eq!((ds.metadata.name.as_deref(), ds.metadata.namespace.as_deref()), (Some("kube-proxy"), Some("kube-system")));
    let pod = ds.spec.template.spec.unwrap();
    assert_eq!(pod.host_network, Some(true));
    assert_eq!(pod.priority_class_name.as_deref(), Some("system-node-critical"));
    assert_eq!(pod.service_account_name.as_deref(), Some("kube-proxy"));
    assert!(pod.tolerations.iter().flatten().any(|t| t.operator.as_deref() == Some("Exists") && t.key.is_none()));
    let container = &pod.containers[0];
    let command = container.command.clone().unwrap();
    assert_eq!(
        command,
        ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"],
        "kubeadm's command line"
    );
    assert_eq!(container.security_context.as_ref().and_then(|s| s.privileged), Some(true));
    let mounts: Vec<(&str, &str)> =
        container.volume_mounts.iter().flatten().map(|m| (m.name.as_str(), m.mount_path.as_str())).collect();
    for want in [("kube-proxy", "/var/lib/kube-proxy"), ("xtables-lock", "/run/xtables.lock"), ("lib-modules", "/lib/modules")] {
        assert!(mounts.contains(&want), "mount {want:?} missing: {mounts:?}");
    }
    let volumes = pod.volumes.unwrap();
    let config = volumes.iter().find(|v| v.name == "kube-proxy").and_then(|v| v.config_map.as_ref()).unwrap();
    assert_eq!(config.name, "kube-proxy");
    let lock = volumes.iter().find(|v| v.name == "xtables-lock").and_then(|v| v.host_path.as_ref()).unwrap();
    assert_eq!((lock.path.as_str(), lock.type_.as_deref()), ("/run/xtables.lock", Some("FileOrCreate")));
}

#[test]
fn version_names_the_crate_version_and_the_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-proxy-rs")).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let prefix = format!("kube-proxy-rs {} (git ", env!("CARGO_PKG_VERSION"));
    let commit = text.trim().strip_prefix(&prefix).and_then(|rest| rest.strip_suffix(')')).unwrap_or_else(|| panic!("{text}"));
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert!(hash == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())), "{text}");
}
