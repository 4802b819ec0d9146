//! The manifests parser: Lists, malformed objects, not-YAML errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use source::Error;
use source::manifests::{Checked, Held, Known, Object, Replaced, load, parse};
use std::sync::Mutex;
use tracker::{ObjectKind, Tracker};

const GOOD_SERVICE: &str = "
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: 10.96.0.10
  ports: [{name: http, port: 80, targetPort: 8080}]
";

const GOOD_SLICE: &str = "
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: shop
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.244.0.5]
  nodeName: node-a
";

#[test]
fn list_document_as_kubectl_prints_it() {
    let text = format!(
        "apiVersion: v1\nkind: List\nmetadata: {{resourceVersion: \"\"}}\nitems:\n{}{}- apiVersion: v1\n  kind: Namespace\n  metadata: {{name: shop}}\n- apiVersion: v1\n  kind: Node\n  metadata: {{name: node-a}}\n",
        indent_item(GOOD_SERVICE),
        indent_item(GOOD_SLICE)
    );
    let parsed = parse(&text).unwrap();
    assert_eq!(parsed.objects.services.len(), 1);
    assert_eq!(parsed.objects.endpoint_slices.len(), 1);
    assert_eq!(parsed.objects.nodes.len(), 1);
    assert!(parsed.warnings.is_empty());
    let mut t = Tracker::new("node-a");
    assert!(t.replace_all(&parsed.objects).is_empty());
    let snap = t.snapshot().0;
    let eps = snap.endpoints.values().next().unwrap();
    assert_eq!(eps[0].to_string(), "10.244.0.5:8080");
    assert!(eps[0].is_local);
}

/// Turns a document into an item of a YAML list.
fn indent_item(doc: &str) -> String {
    let mut out = String::new();
    for (i, line) in doc.trim().lines().enumerate() {
        out.push_str(if i == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn typed_list_items_without_kind() {
    let text = "apiVersion: v1\nkind: ServiceList\nitems:\n- metadata: {name: a, namespace: x}\n  spec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}\n";
    let parsed = parse(text).unwrap();
    assert_eq!(parsed.objects.services.len(), 1);
    assert!(parsed.warnings.is_empty());
}

#[test]
fn other_kinds_are_ignored_without_warning() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: k}\n---\n# only a comment\n---\n";
    let parsed = parse(text).unwrap();
    assert!(parsed.objects.services.is_empty() && parsed.objects.nodes.is_empty());
    assert!(parsed.objects.service_cidrs.is_empty());
    assert!(parsed.warnings.is_empty());
}

const SERVICE_CIDRS: &str = "apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: kubernetes}
spec: {cidrs: [10.96.0.0/12, fd00:10:96::/112]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: extra}
spec: {cidrs: [10.200.0.0/16]}
";

#[test]
fn service_cidrs_are_read() {
    let parsed = parse(SERVICE_CIDRS).unwrap();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let names: Vec<&str> = parsed
        .objects
        .service_cidrs
        .iter()
        .map(|o| o.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, ["kubernetes", "extra"]);
    let cidrs = parsed.objects.service_cidrs[0]
        .spec
        .as_ref()
        .unwrap()
        .cidrs
        .clone();
    assert_eq!(cidrs.unwrap(), ["10.96.0.0/12", "fd00:10:96::/112"]);
}

#[test]
fn a_service_cidr_of_another_api_version_is_skipped_with_a_warning() {
    let text = SERVICE_CIDRS.replace(
        "networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}",
        "networking.k8s.io/v1beta1\nkind: ServiceCIDR\nmetadata: {name: extra}",
    );
    let parsed = parse(&text).unwrap();
    assert_eq!(parsed.objects.service_cidrs.len(), 1);
    assert_eq!(parsed.warnings.len(), 1);
    assert_eq!(parsed.warnings[0].kind, ObjectKind::ServiceCIDR);
    assert_eq!(parsed.warnings[0].name, "extra");
    assert!(
        parsed.warnings[0]
            .message
            .contains("want networking.k8s.io/v1"),
        "{}",
        parsed.warnings[0].message
    );
}

#[test]
fn service_cidrs_follow_each_read_into_the_snapshot() {
    let tracker = Mutex::new(Tracker::new("node-a"));
    let mut held = Held::default();
    let first = Checked::new("<test>", SERVICE_CIDRS.to_string()).unwrap();
    assert_eq!(held.replace(first, &tracker).service_cidrs, 2);
    let (snap, changes) = tracker.lock().unwrap().snapshot();
    assert!(changes.service_cidrs_changed);
    let cidrs: Vec<String> = snap.service_cidrs.iter().map(ToString::to_string).collect();
    assert_eq!(
        cidrs,
        ["10.96.0.0/12", "10.200.0.0/16"],
        "IPv4 only, sorted"
    );

    // "extra" removed from the file: deleted from the tracker.
    let kubernetes_only = SERVICE_CIDRS.split("---").next().unwrap().to_string();
    let second = Checked::new("<test>", kubernetes_only).unwrap();
    let replaced = held.replace(second, &tracker);
    assert_eq!((replaced.service_cidrs, replaced.deleted), (1, 1));
    let (snap, changes) = tracker.lock().unwrap().snapshot();
    assert!(changes.service_cidrs_changed);
    let cidrs: Vec<String> = snap.service_cidrs.iter().map(ToString::to_string).collect();
    assert_eq!(cidrs, ["10.96.0.0/12"]);
}

#[test]
fn malformed_documents_are_skipped_each_with_its_warning() {
    let text = format!(
        "{GOOD_SERVICE}---
apiVersion: v1
kind: Service
metadata: {{name: bad-port, namespace: shop}}
spec:
  clusterIP: 10.96.0.11
  ports:
  - port: abc
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: bad-endpoints, namespace: shop, labels: {{kubernetes.io/service-name: web}}}}
addressType: IPv4
endpoints: not-a-list
---
apiVersion: discovery.k8s.io/v1beta1
kind: EndpointSlice
metadata: {{name: old-api, namespace: shop}}
addressType: IPv4
endpoints: []
---
apiVersion: v1
kind: Node
metadata: {{name: node-a}}
status: {{addresses: 5}}
---{GOOD_SLICE}"
    );
    let parsed = parse(&text).unwrap();
    let warnings: Vec<String> = parsed.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "Service shop/bad-port (document at line 8): invalid i32 at line 15, column 11; skipped",
            "EndpointSlice shop/bad-endpoints (document at line 16): expected sequence start at line 21, column 12; skipped",
            "EndpointSlice shop/old-api (document at line 22): unsupported apiVersion \"discovery.k8s.io/v1beta1\" (want discovery.k8s.io/v1); skipped",
            "Node node-a (document at line 28): expected sequence start at line 32, column 21; skipped",
        ]
    );
    assert_eq!(
        &text.lines().nth(14).unwrap()[10..],
        "abc",
        "line 15, column 11 is the bad port"
    );
    assert_eq!(
        &text.lines().nth(31).unwrap()[20..21],
        "5",
        "line 32, column 21 is the bad addresses"
    );
    assert_eq!(parsed.warnings[0].kind, ObjectKind::Service);
    assert_eq!(
        (
            parsed.warnings[0].namespace.as_str(),
            parsed.warnings[0].name.as_str()
        ),
        ("shop", "bad-port")
    );
    // The good objects beside them survive and work.
    assert_eq!(parsed.objects.services.len(), 1);
    assert_eq!(parsed.objects.endpoint_slices.len(), 1);
    assert!(parsed.objects.nodes.is_empty());
    let mut t = Tracker::new("node-a");
    t.replace_all(&parsed.objects);
    let snap = t.snapshot().0;
    assert_eq!(snap.services.len(), 1);
    assert_eq!(snap.endpoints.values().next().unwrap().len(), 1);
}

#[test]
fn objects_that_decode_but_are_invalid_are_the_trackers_warnings() {
    let text = format!(
        "{GOOD_SERVICE}---
apiVersion: v1
kind: Service
metadata: {{name: bad-ip, namespace: shop}}
spec: {{clusterIP: 10.96.0.999, ports: [{{port: 80}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: orphan, namespace: shop}}
addressType: IPv4
endpoints: [{{addresses: [10.244.0.9]}}]
---{GOOD_SLICE}"
    );
    let parsed = parse(&text).unwrap();
    assert!(parsed.warnings.is_empty());
    let mut t = Tracker::new("node-a");
    let warnings: Vec<String> = t
        .replace_all(&parsed.objects)
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert_eq!(
        warnings,
        [
            "Service shop/bad-ip: bad clusterIP \"10.96.0.999\": not an IP address; service skipped",
            "EndpointSlice shop/orphan: no kubernetes.io/service-name label; slice skipped",
        ]
    );
    let snap = t.snapshot().0;
    assert_eq!(
        snap.services
            .keys()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        ["shop/web:http"]
    );
    assert_eq!(snap.endpoints.values().next().unwrap().len(), 1);
}

#[test]
fn unquoted_scalars_in_string_fields_stay_strings() {
    let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  labels: {version: 1.10, enabled: yes, n: 007}\nspec: {clusterIP: 10.96.0.1, ports: [{port: 80, targetPort: http}]}\n";
    let parsed = parse(text).unwrap();
    let labels = parsed.objects.services[0].metadata.labels.clone().unwrap();
    assert_eq!(labels["version"], "1.10");
    assert_eq!(labels["enabled"], "yes");
    assert_eq!(labels["n"], "007");
}

#[test]
fn text_that_is_not_yaml_is_an_error_with_line_and_column() {
    let err = parse("apiVersion: v1\nkind: Service\nmetadata: {name: [x\n").unwrap_err();
    let Error::NotYaml { origin, message } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(origin, "<manifests>");
    assert!(message.contains("line 3"), "{message}");
    assert!(
        err.to_string().starts_with("<manifests>: not valid YAML: "),
        "{err}"
    );
}

#[test]
fn a_document_that_is_not_a_mapping_is_an_error() {
    let err =
        parse("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\nthis is just text\n")
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "<manifests>: document at line 4 is not a Kubernetes object (a mapping) but a string"
    );
}

#[test]
fn empty_text_is_an_empty_state() {
    let parsed = parse("").unwrap();
    assert!(parsed.objects.services.is_empty() && parsed.warnings.is_empty());
    assert!(
        parse("# nothing yet\n---\n")
            .unwrap()
            .objects
            .nodes
            .is_empty()
    );
}

#[test]
fn load_names_the_file_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yaml");
    std::fs::write(&path, "key: [unclosed\n").unwrap();
    let err = load(&path).unwrap_err();
    assert!(matches!(err, Error::NotYaml { .. }));
    assert!(
        err.to_string()
            .starts_with(&format!("{}: not valid YAML", path.display())),
        "{err}"
    );

    let missing = dir.path().join("missing.yaml");
    let err = load(&missing).unwrap_err();
    assert!(matches!(err, Error::Read { .. }));
    assert!(err.to_string().contains("missing.yaml"), "{err}");
}

fn name_of(object: &Object) -> String {
    match object {
        Object::Service(o) => format!("Service {}", o.metadata.name.clone().unwrap_or_default()),
        Object::EndpointSlice(o) => format!(
            "EndpointSlice {}",
            o.metadata.name.clone().unwrap_or_default()
        ),
        Object::Node(o) => format!("Node {}", o.metadata.name.clone().unwrap_or_default()),
        Object::ServiceCIDR(o) => format!(
            "ServiceCIDR {}",
            o.metadata.name.clone().unwrap_or_default()
        ),
    }
}

#[test]
fn objects_are_handed_on_one_at_a_time_in_file_order() {
    let text = format!(
        "{GOOD_SLICE}---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-a}}\n---{GOOD_SERVICE}---\napiVersion: v1\nkind: List\nitems:\n{}",
        indent_item(&GOOD_SERVICE.replace("name: web,", "name: api,"))
    );
    let checked = Checked::new("<test>", text).unwrap();
    let mut order = Vec::new();
    let skipped = checked.for_each_object(|object| order.push(name_of(&object)));
    assert!(skipped.is_empty());
    assert_eq!(
        order,
        [
            "EndpointSlice web-1",
            "Node node-a",
            "Service web",
            "Service api"
        ]
    );
}

#[test]
fn a_text_with_a_broken_third_document_is_refused_before_anything_is_decoded() {
    let text = format!(
        "{GOOD_SERVICE}---{GOOD_SLICE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: [x\n---{GOOD_SERVICE}"
    );
    let err = Checked::new("cluster.yaml", text).unwrap_err();
    let Error::NotYaml { origin, message } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(origin, "cluster.yaml");
    assert!(message.contains("at line 23,"), "{message}");
}

#[test]
fn each_read_replaces_the_whole_state() {
    let tracker = Mutex::new(Tracker::new("node-a"));
    let mut held = Held::default();
    let api = GOOD_SERVICE
        .replace("name: web,", "name: api,")
        .replace("10.96.0.10", "10.96.0.11");
    let first = Checked::new("<test>", format!("{GOOD_SERVICE}---{GOOD_SLICE}---{api}")).unwrap();
    assert_eq!(
        held.replace(first, &tracker),
        Replaced {
            services: 2,
            endpoint_slices: 1,
            nodes: 0,
            service_cidrs: 0,
            deleted: 0,
            skipped: 0,
            decoded: 3
        }
    );
    let snap = tracker.lock().unwrap().snapshot().0;
    assert_eq!(snap.services.len(), 2);
    assert_eq!(snap.endpoints.len(), 1);

    // api and the slice are gone; web appears twice and the later copy wins.
    let moved = GOOD_SERVICE.replace("10.96.0.10", "10.96.0.20");
    let second = Checked::new("<test>", format!("{GOOD_SERVICE}---{moved}")).unwrap();
    assert_eq!(
        held.replace(second, &tracker),
        Replaced {
            services: 2,
            endpoint_slices: 0,
            nodes: 0,
            service_cidrs: 0,
            deleted: 2,
            skipped: 0,
            decoded: 1
        }
    );
    let snap = tracker.lock().unwrap().snapshot().0;
    let services: Vec<String> = snap
        .services
        .values()
        .map(|p| format!("{} {}", p.name, p.cluster_ip))
        .collect();
    assert_eq!(services, ["shop/web:http 10.96.0.20"]);
    assert!(snap.endpoints.is_empty());
}

#[test]
fn a_re_read_decodes_and_feeds_only_the_documents_that_changed() {
    let tracker = Mutex::new(Tracker::new("node-a"));
    let mut held = Held::default();
    let api = GOOD_SERVICE
        .replace("name: web,", "name: api,")
        .replace("10.96.0.10", "10.96.0.11");
    let first = Checked::new("<test>", format!("{GOOD_SERVICE}---{GOOD_SLICE}---{api}")).unwrap();
    held.replace(first, &tracker);
    tracker.lock().unwrap().snapshot();

    // Only api changes: one document decoded, only api reported changed.
    let api2 = api.replace("10.96.0.11", "10.96.0.12");
    let text = format!("{GOOD_SERVICE}---{GOOD_SLICE}---{api2}");
    let second = Checked::new_after("<test>", text, &held.known()).unwrap();
    let replaced = held.replace(second, &tracker);
    assert_eq!(
        (
            replaced.decoded,
            replaced.services,
            replaced.endpoint_slices
        ),
        (1, 2, 1)
    );
    let (snap, changes) = tracker.lock().unwrap().snapshot();
    let changed: Vec<&str> = changes.services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(changed, ["api"]);
    assert_eq!(snap.services.len(), 2);
    assert_eq!(snap.endpoints.len(), 1);

    // A broken new document still refuses the whole text.
    let broken = format!("{GOOD_SERVICE}---\nkind: Service\nmetadata: {{name: [x\n");
    assert!(Checked::new_after("<test>", broken, &held.known()).is_err());
}

#[test]
fn an_unchanged_later_duplicate_still_wins_over_a_changed_earlier_one() {
    let tracker = Mutex::new(Tracker::new("node-a"));
    let mut held = Held::default();
    let first = Checked::new("<test>", GOOD_SERVICE.to_string()).unwrap();
    held.replace(first, &tracker);
    // A new copy of web before the unchanged one: the later (unchanged,
    // not re-read) one wins, as a full read would have it.
    let earlier = GOOD_SERVICE.replace("10.96.0.10", "10.96.0.20");
    let second = Checked::new_after(
        "<test>",
        format!("{earlier}---{GOOD_SERVICE}"),
        &held.known(),
    )
    .unwrap();
    held.replace(second, &tracker);
    let snap = tracker.lock().unwrap().snapshot().0;
    let ips: Vec<String> = snap
        .services
        .values()
        .map(|p| p.cluster_ip.to_string())
        .collect();
    assert_eq!(ips, ["10.96.0.10"]);
}

#[test]
fn an_object_goes_only_when_no_document_of_the_read_gives_it_any_more() {
    let tracker = Mutex::new(Tracker::new("node-a"));
    let mut held = Held::default();
    let copy = GOOD_SERVICE.replace("10.96.0.10", "10.96.0.20");
    let api = GOOD_SERVICE
        .replace("name: web,", "name: api,")
        .replace("10.96.0.10", "10.96.0.11");
    let read = |held: &mut Held, text: String| {
        let checked = Checked::new_after("<test>", text, &held.known()).unwrap();
        let replaced = held.replace(checked, &tracker);
        let snap = tracker.lock().unwrap().snapshot().0;
        let mut ips: Vec<String> = snap
            .services
            .values()
            .map(|p| p.cluster_ip.to_string())
            .collect();
        ips.sort();
        (replaced.deleted, ips)
    };
    let first = read(&mut held, format!("{GOOD_SERVICE}---{copy}---{api}"));
    assert_eq!(first, (0, vec!["10.96.0.11".into(), "10.96.0.20".into()]));
    // web's first document gone: its later copy still gives web
    let second = read(&mut held, format!("{copy}---{api}"));
    assert_eq!(second, (0, vec!["10.96.0.11".into(), "10.96.0.20".into()]));
    // the copy gone, web given by a new document: kept, as that one says
    let moved = GOOD_SERVICE.replace("10.96.0.10", "10.96.0.30");
    let third = read(&mut held, format!("{api}---{moved}"));
    assert_eq!(third, (0, vec!["10.96.0.11".into(), "10.96.0.30".into()]));
    // web's last document gone: web deleted, api untouched
    assert_eq!(read(&mut held, api.clone()), (1, vec!["10.96.0.11".into()]));
    // two copies, then the later (whose copy the tracker holds) gone:
    // the earlier one's web again
    let both = read(&mut held, format!("{GOOD_SERVICE}---{copy}---{api}"));
    assert_eq!(both, (0, vec!["10.96.0.11".into(), "10.96.0.20".into()]));
    let earlier = read(&mut held, format!("{GOOD_SERVICE}---{api}"));
    assert_eq!(earlier, (0, vec!["10.96.0.10".into(), "10.96.0.11".into()]));
}

#[test]
fn a_later_duplicate_whose_text_was_not_kept_is_read_again_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    let earlier = GOOD_SERVICE.replace("10.96.0.10", "10.96.0.20");
    let ips_after_re_read = |rewrite: Option<&str>| {
        let tracker = Mutex::new(Tracker::new("node-a"));
        let mut held = Held::default();
        std::fs::write(&path, GOOD_SERVICE).unwrap();
        let first = Checked::read_after(&path, &Known::default()).unwrap();
        held.replace(first.checked.unwrap(), &tracker);
        std::fs::write(&path, format!("{earlier}---{GOOD_SERVICE}")).unwrap();
        let second = Checked::read_after(&path, &held.known()).unwrap();
        if let Some(text) = rewrite {
            std::fs::write(&path, text).unwrap();
        }
        held.replace(second.checked.unwrap(), &tracker);
        let snap = tracker.lock().unwrap().snapshot().0;
        snap.services
            .values()
            .map(|p| p.cluster_ip.to_string())
            .collect::<Vec<_>>()
    };
    // The unchanged web (text dropped as known) is read again and wins.
    assert_eq!(ips_after_re_read(None), ["10.96.0.10"]);
    // Rewritten between the read and the replace: that document is no
    // longer the one read, so it is not used (the next poll reads it).
    let moved = GOOD_SERVICE.replace("10.96.0.10", "10.96.0.30");
    assert_eq!(ips_after_re_read(Some(&moved)), ["10.96.0.20"]);
}

#[test]
fn a_file_read_line_by_line_hashes_and_checks_as_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    std::fs::write(&path, format!("{GOOD_SERVICE}---{GOOD_SLICE}")).unwrap();
    let read = Checked::read_after(&path, &Known::default()).unwrap();
    let mut kinds = Vec::new();
    let warnings = read.checked.unwrap().for_each_object(|o| {
        kinds.push(matches!(o, Object::Service(_)));
    });
    assert!(warnings.is_empty());
    assert_eq!(kinds, [true, false], "a Service, then an EndpointSlice");
    let broken = format!("{GOOD_SERVICE}---\nkind: Service\nmetadata: {{name: [x\n---{GOOD_SLICE}");
    std::fs::write(&path, &broken).unwrap();
    let read = Checked::read_after(&path, &Known::default()).unwrap();
    assert!(read.checked.is_err());
    std::fs::write(&path, format!("{GOOD_SERVICE}---{GOOD_SLICE}")).unwrap();
    let again = Checked::read_after(&path, &Known::default()).unwrap();
    assert_ne!(read.hash, again.hash, "a failed check still hashes the whole file");
    assert!(Checked::read_after(&dir.path().join("none.yaml"), &Known::default()).is_err());
}

#[test]
fn a_long_file_checked_on_two_threads_fails_at_its_first_bad_document() {
    // more documents than one batch between the reading and the checking
    // thread: the error is the first bad document's, in file order
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.yaml");
    let service = |i: usize| GOOD_SERVICE.replace("name: web", &format!("name: web-{i}"));
    let mut docs: Vec<String> = (0..300).map(service).collect();
    docs[170] = "\nthis is just text\n".into();
    docs[250] = "\n[not, a, mapping]\n".into();
    let text = docs.join("---");
    // a document's line is its `---` line's, the one before its text
    let line = text.lines().position(|l| l == "this is just text").unwrap();
    std::fs::write(&path, &text).unwrap();
    let err = Checked::read_after(&path, &Known::default()).unwrap().checked.unwrap_err();
    assert!(
        err.to_string().contains(&format!("document at line {line} ")),
        "{err} (expected line {line})"
    );
    docs[170] = service(170);
    docs[250] = service(250);
    std::fs::write(&path, docs.join("---")).unwrap();
    let read = Checked::read_after(&path, &Known::default()).unwrap();
    let mut names = Vec::new();
    read.checked.unwrap().for_each_object(|o| {
        if let Object::Service(s) = o {
            names.push(s.metadata.name.unwrap());
        }
    });
    let expected: Vec<String> = (0..300).map(|i| format!("web-{i}")).collect();
    assert_eq!(names, expected, "every document, in file order");
}

#[test]
fn a_document_that_does_not_decode_removes_what_it_held() {
    let tracker = Mutex::new(Tracker::new("node-a"));
    let mut held = Held::default();
    held.replace(
        Checked::new("<test>", GOOD_SERVICE.to_string()).unwrap(),
        &tracker,
    );
    assert_eq!(tracker.lock().unwrap().snapshot().0.services.len(), 1);
    let bad = GOOD_SERVICE.replace("port: 80", "port: abc");
    let replaced = held.replace(Checked::new("<test>", bad).unwrap(), &tracker);
    assert_eq!((replaced.skipped, replaced.deleted), (1, 1));
    assert!(tracker.lock().unwrap().snapshot().0.services.is_empty());
}

/// Topology: the node's zone label, endpoints' zone and node hints and the
/// Service's trafficDistribution come through the manifests as written.
#[test]
fn zone_label_and_hints_reach_the_snapshot() {
    let text = "
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/zone: zone-a}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: 10.96.0.10
  trafficDistribution: PreferSameNode
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: shop
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.244.0.5]
  nodeName: node-a
  hints:
    forZones: [{name: zone-a}]
    forNodes: [{name: node-a}]
- addresses: [10.244.1.5]
  nodeName: node-b
  hints:
    forZones: [{name: zone-b}]
";
    let parsed = parse(text).unwrap();
    assert!(parsed.warnings.is_empty());
    let mut t = Tracker::new("node-a");
    assert!(t.replace_all(&parsed.objects).is_empty());
    let snap = t.snapshot().0;
    assert_eq!(snap.node.zone.as_deref(), Some("zone-a"));
    let eps = snap.endpoints.values().next().unwrap();
    let hints = eps[0].hints.as_deref().expect("hints of 10.244.0.5");
    assert_eq!(
        (
            hints.zones().collect::<Vec<_>>(),
            hints.nodes().collect::<Vec<_>>()
        ),
        (vec!["zone-a"], vec!["node-a"])
    );
    let hints = eps[1].hints.as_deref().expect("hints of 10.244.1.5");
    assert!(hints.for_zone("zone-b") && !hints.has_node_hints());
}

#[test]
fn the_nodes_alone_are_those_of_every_object() {
    let list = format!(
        "apiVersion: v1\nkind: List\nitems:\n{}- apiVersion: v1\n  kind: Node\n  metadata: {{name: node-a}}\n",
        indent_item(GOOD_SERVICE)
    );
    let json = r#"{"apiVersion": "v1", "kind": "\u004eode", "metadata": {"name": "node-b"}}"#;
    let text = format!("{GOOD_SERVICE}---\n{list}---\n{GOOD_SLICE}---\n{json}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-c}}\n");
    let checked = Checked::new("<test>", text).unwrap();
    let mut every = Vec::new();
    checked.for_each_object(|object| {
        if let Object::Node(node) = object {
            every.push(node.metadata.name.unwrap());
        }
    });
    let mut nodes = Vec::new();
    checked.for_each_node(|node| nodes.push(node.metadata.name.unwrap()));
    assert_eq!(every, ["node-a", "node-b", "node-c"]);
    assert_eq!(nodes, every);
}
