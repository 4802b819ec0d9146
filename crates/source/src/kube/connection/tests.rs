//! Which configuration the connection settings resolve to.

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kube")
        .join(name)
}

fn settings(kubeconfig: Option<&Path>, master: Option<&str>) -> ClientSettings {
    ClientSettings {
        kubeconfig: kubeconfig.map(Path::to_path_buf),
        master: master.map(str::to_string),
        ..ClientSettings::default()
    }
}

fn env(kubeconfig: Option<&str>, in_cluster: bool) -> Environment {
    Environment {
        kubeconfig: kubeconfig.map(OsString::from),
        in_cluster,
    }
}

#[test]
fn origin_follows_upstream_order() {
    let file = Path::new("/etc/kube-proxy/kubeconfig");
    let cases = [
        // --kubeconfig wins over everything, with or without --master.
        (
            settings(Some(file), None),
            env(Some("/x"), true),
            Origin::KubeconfigFlag(file.into()),
        ),
        (
            settings(Some(file), Some("https://m:6443")),
            env(None, true),
            Origin::KubeconfigFlag(file.into()),
        ),
        // --master alone: in-cluster credentials when in a pod.
        (
            settings(None, Some("https://m:6443")),
            env(Some("/x"), true),
            Origin::MasterInCluster,
        ),
        (
            settings(None, Some("https://m:6443")),
            env(Some("/x"), false),
            Origin::MasterOnly,
        ),
        // Neither: KUBECONFIG (empty entries skipped), else in-cluster.
        (
            settings(None, None),
            env(Some(":/a::/b"), true),
            Origin::KubeconfigEnv(vec!["/a".into(), "/b".into()]),
        ),
        (
            settings(None, None),
            env(Some(""), false),
            Origin::InCluster,
        ),
        (settings(None, None), env(None, true), Origin::InCluster),
        // Empty flags count as unset (Go checks len() == 0).
        (
            settings(Some(Path::new("")), Some("")),
            env(None, false),
            Origin::InCluster,
        ),
    ];
    for (settings, env, want) in cases {
        assert_eq!(choose_origin(&settings, &env), want, "{settings:?} {env:?}");
    }
}

#[tokio::test]
async fn kubeconfig_flag_gives_its_cluster_namespace_and_token() {
    let config = resolve(
        &settings(Some(&fixture("kubeconfig.yaml")), None),
        &env(None, false),
    )
    .await
    .unwrap();
    assert_eq!(
        config.cluster_url.to_string(),
        "https://api.cluster.test:6443/"
    );
    assert_eq!(config.default_namespace, "kube-system");
    assert!(config.accept_invalid_certs);
    assert!(config.auth_info.token.is_some());
}

#[tokio::test]
async fn master_overrides_the_kubeconfig_server_keeping_credentials() {
    let path = fixture("kubeconfig.yaml");
    let config = resolve(
        &settings(Some(&path), Some("https://10.0.0.1:443")),
        &env(None, false),
    )
    .await
    .unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:443/");
    assert!(config.auth_info.token.is_some());
    // Without a scheme: https, because the kubeconfig has TLS settings.
    let config = resolve(
        &settings(Some(&path), Some("10.0.0.1:6443")),
        &env(None, false),
    )
    .await
    .unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:6443/");
}

#[tokio::test]
async fn master_alone_outside_a_pod_is_a_plain_url() {
    let config = resolve(&settings(None, Some("127.0.0.1:8080")), &env(None, false))
        .await
        .unwrap();
    assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:8080/");
    assert!(config.auth_info.token.is_none());
}

#[tokio::test]
async fn kubeconfig_env_merges_files_first_one_winning() {
    let list = std::env::join_paths([
        fixture("kubeconfig-context.yaml"),
        fixture("kubeconfig-cluster.yaml"),
    ])
    .unwrap();
    let env = Environment {
        kubeconfig: Some(list),
        in_cluster: true,
    };
    let config = resolve(&settings(None, None), &env).await.unwrap();
    assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:18080/");
    assert!(config.auth_info.token.is_some());
}

#[tokio::test]
async fn missing_kubeconfig_names_the_file() {
    let path = fixture("no-such-kubeconfig.yaml");
    let err = resolve(&settings(Some(&path), None), &env(None, false))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Kubeconfig { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-kubeconfig.yaml"), "{err}");
}

#[tokio::test]
async fn bad_master_url_is_an_error() {
    let err = resolve(&settings(None, Some("http://")), &env(None, false))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ServerUrl { .. }), "{err:?}");
    let err = resolve(&settings(None, Some("bad host:80")), &env(None, false))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ServerUrl { .. }), "{err:?}");
}

#[tokio::test]
async fn positive_qps_needs_a_burst() {
    let config = Config::new("http://127.0.0.1:1".parse().unwrap());
    let settings = ClientSettings {
        qps: 20.0,
        burst: 0,
        ..ClientSettings::default()
    };
    let Err(err) = client_from_config(config, &settings) else {
        panic!("a client with qps 20 and burst 0");
    };
    assert!(matches!(err, Error::BurstRequired { .. }), "{err:?}");
}
