//! A networking.k8s.io/v1 ServiceCIDR → the service CIDRs of the proxy's
//! family.

use crate::IpFamily;
use crate::meta::name_of;
use crate::warning::{ObjectKind, Problem, Warning, Warnings};
use ipnet::IpNet;
use k8s_openapi::api::networking::v1::ServiceCIDR;

/// The `spec.cidrs` of `family` (as networks: host bits cleared), in
/// order; entries that are not CIDRs are dropped with a warning, those
/// of the other family silently (as upstream's proxier keeps only its
/// family's). An object without a name is skipped with a warning.
pub(crate) fn service_cidrs(object: &ServiceCIDR, family: IpFamily) -> (Vec<IpNet>, Vec<Warning>) {
    let mut warnings = Warnings::new(ObjectKind::ServiceCIDR, "", name_of(&object.metadata));
    if name_of(&object.metadata).is_empty() {
        warnings.push(Problem::MissingName);
        return (Vec::new(), warnings.into_vec());
    }
    let listed = object
        .spec
        .as_ref()
        .and_then(|s| s.cidrs.as_deref())
        .unwrap_or(&[]);
    let mut out = Vec::new();
    for text in listed {
        match text.parse::<IpNet>() {
            Ok(net) if family.contains_net(&net) => out.push(net.trunc()),
            Ok(_) => {}
            Err(_) => warnings.push(Problem::BadServiceCidr(text.clone())),
        }
    }
    (out, warnings.into_vec())
}
