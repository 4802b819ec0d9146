//! One statement or match of upstream's ruleset, as a value that knows
//! both its kernel expressions (through [`crate::stmt`]) and its `nft`
//! text, so the typed table and the `nft -f` text come from one source.

use crate::expr::{CmpOp, Expr, SetRef};
use crate::render::endpoint_slots::{SLOT_KEYS, Slot};
use crate::render::interval::Interval;
use crate::stmt::{self, Field};
use crate::{DataType, Element, Family, SetFlags, Value, Verdict};
use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// `ip` protocol numbers by name.
pub(crate) fn proto_number(proto: model::Protocol) -> u8 {
    match proto {
        model::Protocol::Tcp => 6,
        model::Protocol::Udp => 17,
        model::Protocol::Sctp => 132,
    }
}

/// One statement or match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    /// `ct state new`.
    CtStateNew,
    /// `ct status dnat`.
    CtStatusDnat,
    /// `<fields> @set`.
    InSet {
        /// The packet fields, concatenated.
        fields: Vec<Field>,
        /// The named set.
        set: String,
    },
    /// `<fields> vmap @map`.
    Vmap {
        /// The packet fields, concatenated.
        fields: Vec<Field>,
        /// The named verdict map.
        map: String,
    },
    /// `ip saddr 10.244.0.0/16` / `ip daddr != 127.0.0.0/8`.
    Prefix {
        /// The address field.
        field: Field,
        /// `==` or `!=`.
        negated: bool,
        /// The network.
        net: IpNet,
    },
    /// `ip6 daddr != ::1`: one address.
    Address {
        /// The address field.
        field: Field,
        /// `==` or `!=`.
        negated: bool,
        /// The address.
        addr: IpAddr,
    },
    /// `iifname "cbr0"` / `iifname != "veth*"`: the input interface by
    /// name, or (`prefix`) by the start of its name.
    Iifname {
        /// `==` or `!=`.
        negated: bool,
        /// The name, or its prefix.
        name: String,
        /// Match names starting with `name` (written `name*`).
        prefix: bool,
    },
    /// `fib saddr type local` (`daddr` with `daddr` true).
    FibLocal {
        /// Look at the destination instead of the source.
        daddr: bool,
    },
    /// `meta mark & <mark> != 0x00000000`.
    MarkHas(u32),
    /// `meta mark set meta mark | <mark>`.
    MarkOr(u32),
    /// `meta mark set meta mark ^ <mark>`.
    MarkXor(u32),
    /// `meta l4proto tcp`.
    L4proto(model::Protocol),
    /// `accept`, `drop`, `jump c`, `goto c`.
    Verdict(Verdict),
    /// `masquerade fully-random`.
    MasqueradeFullyRandom,
    /// `reject` (ICMP or ICMPv6 port unreachable by family).
    Reject(Family),
    /// `dnat ip to numgen random mod N map { i : addr . port, … }`: an
    /// anonymous data map.
    DnatNumgenMap {
        /// The table's family.
        family: Family,
        /// The endpoints, in balancing order.
        targets: Vec<(IpAddr, u16)>,
    },
    /// `dnat ip to numgen random mod 65536 offset K map
    /// @service-endpoints-<n>`: the endpoint picked in the port's slot of
    /// a shared endpoint map ([`crate::render::endpoint_slots`]).
    DnatNumgenSlot {
        /// The table's family.
        family: Family,
        /// The slot.
        slot: Slot,
    },
    /// `dnat ip to ip daddr . meta l4proto . th dport map @map`: the
    /// destination looked up in a named data map of targets
    /// ([`crate::render::direct`]).
    DnatMap {
        /// The table's family.
        family: Family,
        /// The packet fields, concatenated.
        fields: Vec<Field>,
        /// The named map.
        map: String,
    },
    /// `numgen random mod N vmap { i : goto chain, … }`: an anonymous
    /// verdict map.
    NumgenVmap {
        /// The endpoint chains, in balancing order.
        chains: Vec<String>,
    },
    /// `ip saddr != { cidr, … }`: an anonymous interval set.
    SaddrNotIn {
        /// The table's family.
        family: Family,
        /// The merged ranges allowed.
        ranges: Vec<Interval>,
    },
    /// `update @set { ip saddr }`.
    UpdateSaddr {
        /// The table's family.
        family: Family,
        /// The affinity set.
        set: String,
    },
    /// `dnat to 10.0.0.1:80` / `dnat to [fd00::1]:80`.
    DnatTo(IpAddr, u16),
}

/// An anonymous set a statement needs: its declaration and elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnonymousSet {
    /// Key type.
    pub key: Vec<DataType>,
    /// Data type for a map.
    pub data: Option<Vec<DataType>>,
    /// Extra flags (interval).
    pub flags: SetFlags,
    /// The elements.
    pub elements: Vec<Element>,
}

impl Stmt {
    /// The anonymous set this statement binds, if any.
    pub fn anonymous_set(&self) -> Option<AnonymousSet> {
        match self {
            Stmt::DnatNumgenMap { family, targets } => Some(AnonymousSet {
                key: vec![DataType::Integer],
                data: Some(vec![addr_type(*family), DataType::InetService]),
                flags: SetFlags::default(),
                elements: (0u32..)
                    .zip(targets)
                    .map(|(i, (ip, port))| {
                        Element::data(
                            vec![Value::Integer(i)],
                            vec![value(*ip), Value::Port(*port)],
                        )
                    })
                    .collect(),
            }),
            Stmt::NumgenVmap { chains } => Some(AnonymousSet {
                key: vec![DataType::Integer],
                data: Some(vec![DataType::Verdict]),
                flags: SetFlags::default(),
                elements: (0u32..)
                    .zip(chains)
                    .map(|(i, c)| {
                        Element::verdict(vec![Value::Integer(i)], Verdict::Goto(c.clone()))
                    })
                    .collect(),
            }),
            Stmt::SaddrNotIn { family, ranges } => Some(AnonymousSet {
                key: vec![addr_type(*family)],
                data: None,
                flags: SetFlags::INTERVAL,
                elements: crate::render::interval::elements(*family, ranges),
            }),
            _ => None,
        }
    }

    /// The kernel expressions; `anonymous` names the set from
    /// [`Stmt::anonymous_set`] when there is one.
    pub fn exprs(&self, anonymous: Option<&SetRef>) -> Vec<Expr> {
        let anon = || {
            anonymous
                .cloned()
                .unwrap_or_else(|| SetRef::named("__set%d"))
        };
        match self {
            Stmt::CtStateNew => stmt::ct_state(stmt::CT_STATE_NEW),
            Stmt::CtStatusDnat => stmt::ct_status(stmt::CT_STATUS_DNAT),
            Stmt::InSet { fields, set } => stmt::in_set(fields, SetRef::named(set), false),
            Stmt::Vmap { fields, map } => stmt::vmap(fields, SetRef::named(map)),
            Stmt::Prefix {
                field,
                negated,
                net,
            } => stmt::prefix(*field, cmp(*negated), net.network(), net.prefix_len()),
            Stmt::Address {
                field,
                negated,
                addr,
            } => stmt::compare(*field, cmp(*negated), &value(*addr).to_bytes()),
            Stmt::Iifname {
                negated,
                name,
                prefix,
            } => iifname_exprs(*negated, name, *prefix),
            Stmt::FibLocal { daddr } => stmt::fib_type_local(*daddr),
            Stmt::MarkHas(m) => stmt::mark_has(*m),
            Stmt::MarkOr(m) => stmt::mark_or(*m),
            Stmt::MarkXor(m) => stmt::mark_xor(*m),
            Stmt::L4proto(p) => stmt::l4proto(proto_number(*p)),
            Stmt::Verdict(v) => stmt::verdict(v.clone()),
            Stmt::MasqueradeFullyRandom => stmt::masquerade_fully_random(),
            Stmt::Reject(Family::Ip6) => stmt::reject6(),
            Stmt::Reject(Family::Inet) => stmt::reject_icmpx(),
            Stmt::Reject(Family::Ip) => stmt::reject(),
            Stmt::DnatNumgenMap { family, targets } => {
                let len = addr_type(*family).byte_len();
                stmt::dnat_numgen_map(family.nfproto(), modulus(targets.len()), anon(), len)
            }
            Stmt::DnatNumgenSlot { family, slot } => stmt::dnat_numgen_interval_map(
                family.nfproto(),
                SLOT_KEYS,
                slot.offset,
                SetRef::named(slot.map_name()),
                addr_type(*family).byte_len(),
            ),
            Stmt::DnatMap {
                family,
                fields,
                map,
            } => stmt::dnat_map(
                family.nfproto(),
                fields,
                SetRef::named(map),
                addr_type(*family).byte_len(),
            ),
            Stmt::NumgenVmap { chains } => stmt::numgen_vmap(modulus(chains.len()), anon()),
            Stmt::SaddrNotIn { family, .. } => stmt::in_set(&[saddr(*family)], anon(), true),
            Stmt::UpdateSaddr { family, set } => {
                stmt::update_set(saddr(*family), SetRef::named(set))
            }
            Stmt::DnatTo(ip, port) => stmt::dnat_to(*ip, *port),
        }
    }
}

/// The name compared zero-padded to `IFNAMSIZ`; a prefix compared on
/// its own bytes only, as `nft` compiles `iifname "veth*"`.
fn iifname_exprs(negated: bool, name: &str, prefix: bool) -> Vec<Expr> {
    let mut exprs = stmt::ifname(true, cmp(negated), name);
    if prefix && let Some(Expr::Cmp { data, .. }) = exprs.last_mut() {
        data.truncate(name.len().min(15));
    }
    exprs
}

fn modulus(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn cmp(negated: bool) -> CmpOp {
    if negated { CmpOp::Neq } else { CmpOp::Eq }
}

/// The address type of `family`.
pub(crate) fn addr_type(family: Family) -> DataType {
    match family {
        Family::Ip6 => DataType::Ipv6Addr,
        _ => DataType::Ipv4Addr,
    }
}

/// `ip saddr` / `ip6 saddr`.
pub(crate) fn saddr(family: Family) -> Field {
    match family {
        Family::Ip6 => Field::Ip6Saddr,
        _ => Field::IpSaddr,
    }
}

/// `ip daddr` / `ip6 daddr`.
pub(crate) fn daddr(family: Family) -> Field {
    match family {
        Family::Ip6 => Field::Ip6Daddr,
        _ => Field::IpDaddr,
    }
}

/// An address as a set value.
pub(crate) fn value(ip: IpAddr) -> Value {
    match ip {
        IpAddr::V4(a) => Value::Ipv4(a),
        IpAddr::V6(a) => Value::Ipv6(a),
    }
}

/// The field as `nft` writes it.
pub(crate) fn field_text(field: Field) -> &'static str {
    match field {
        Field::IpSaddr => "ip saddr",
        Field::IpDaddr => "ip daddr",
        Field::Ip6Saddr => "ip6 saddr",
        Field::Ip6Daddr => "ip6 daddr",
        Field::L4proto => "meta l4proto",
        Field::ThDport => "th dport",
        Field::Mark => "meta mark",
    }
}

fn fields_text(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| field_text(*f))
        .collect::<Vec<_>>()
        .join(" . ")
}

fn neq(negated: bool) -> &'static str {
    if negated { "!= " } else { "" }
}

/// As `nft list` writes it (and `nft -f` reads it).
impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stmt::CtStateNew => f.write_str("ct state new"),
            Stmt::CtStatusDnat => f.write_str("ct status dnat"),
            Stmt::InSet { fields, set } => write!(f, "{} @{set}", fields_text(fields)),
            Stmt::Vmap { fields, map } => write!(f, "{} vmap @{map}", fields_text(fields)),
            Stmt::Prefix {
                field,
                negated,
                net,
            } => {
                write!(f, "{} {}{}", field_text(*field), neq(*negated), net.trunc())
            }
            Stmt::Address {
                field,
                negated,
                addr,
            } => write!(f, "{} {}{addr}", field_text(*field), neq(*negated)),
            Stmt::Iifname {
                negated,
                name,
                prefix,
            } => {
                let star = if *prefix { "*" } else { "" };
                write!(f, "iifname {}\"{name}{star}\"", neq(*negated))
            }
            Stmt::FibLocal { daddr } => write!(
                f,
                "fib {} type local",
                if *daddr { "daddr" } else { "saddr" }
            ),
            Stmt::MarkHas(m) => write!(f, "meta mark & {m:#010x} != 0x00000000"),
            Stmt::MarkOr(m) => write!(f, "meta mark set meta mark | {m:#010x}"),
            Stmt::MarkXor(m) => write!(f, "meta mark set meta mark ^ {m:#010x}"),
            Stmt::L4proto(p) => write!(f, "meta l4proto {}", p.as_lower()),
            Stmt::Verdict(v) => write!(f, "{v}"),
            Stmt::MasqueradeFullyRandom => f.write_str("masquerade fully-random"),
            Stmt::Reject(_) => f.write_str("reject"),
            Stmt::DnatNumgenMap { family, targets } => {
                let items: Vec<String> = targets
                    .iter()
                    .enumerate()
                    .map(|(i, (ip, port))| format!("{i} : {ip} . {port}"))
                    .collect();
                write!(
                    f,
                    "dnat {} to numgen random mod {} map {{ {} }}",
                    family.name(),
                    targets.len(),
                    items.join(", ")
                )
            }
            Stmt::DnatNumgenSlot { family, slot } => {
                write!(f, "dnat {} to numgen random mod {SLOT_KEYS}", family.name())?;
                if slot.offset != 0 {
                    write!(f, " offset {}", slot.offset)?;
                }
                write!(f, " map @{}", slot.map_name())
            }
            Stmt::DnatMap {
                family,
                fields,
                map,
            } => write!(
                f,
                "dnat {} to {} map @{map}",
                family.name(),
                fields_text(fields)
            ),
            Stmt::NumgenVmap { chains } => {
                let items: Vec<String> = chains
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{i} : goto {c}"))
                    .collect();
                write!(
                    f,
                    "numgen random mod {} vmap {{ {} }}",
                    chains.len(),
                    items.join(", ")
                )
            }
            Stmt::SaddrNotIn { family, ranges } => {
                let items: Vec<String> = ranges.iter().map(Interval::to_string).collect();
                write!(
                    f,
                    "{} != {{ {} }}",
                    field_text(saddr(*family)),
                    items.join(", ")
                )
            }
            Stmt::UpdateSaddr { family, set } => {
                write!(f, "update @{set} {{ {} }}", field_text(saddr(*family)))
            }
            Stmt::DnatTo(IpAddr::V4(ip), port) => write!(f, "dnat to {ip}:{port}"),
            Stmt::DnatTo(IpAddr::V6(ip), port) => write!(f, "dnat to [{ip}]:{port}"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dnat_maps_print_and_bind_an_anonymous_map() {
        let s = Stmt::DnatNumgenMap {
            family: Family::Ip,
            targets: vec![
                ("10.244.1.13".parse().unwrap(), 8080),
                ("10.244.2.13".parse().unwrap(), 8080),
            ],
        };
        assert_eq!(
            s.to_string(),
            "dnat ip to numgen random mod 2 map { 0 : 10.244.1.13 . 8080, 1 : 10.244.2.13 . 8080 }"
        );
        let set = s.anonymous_set().unwrap();
        assert_eq!(set.elements.len(), 2);
        assert_eq!(
            set.data,
            Some(vec![DataType::Ipv4Addr, DataType::InetService])
        );
        let named = SetRef::named("__kp1");
        assert!(
            s.exprs(Some(&named))
                .iter()
                .any(|e| matches!(e, Expr::Lookup { set, .. } if set == &named))
        );
    }

    #[test]
    fn iifname_prints_quoted_and_compares_the_padded_name_or_the_prefix_bytes() {
        let bridge = Stmt::Iifname {
            negated: true,
            name: "cbr0".into(),
            prefix: false,
        };
        assert_eq!(bridge.to_string(), "iifname != \"cbr0\"");
        let prefix = Stmt::Iifname {
            negated: false,
            name: "veth".into(),
            prefix: true,
        };
        assert_eq!(prefix.to_string(), "iifname \"veth*\"");
        let cmp = |s: &Stmt| {
            s.exprs(None)
                .into_iter()
                .find_map(|e| match e {
                    Expr::Cmp { op, data, .. } => Some((op, data)),
                    _ => None,
                })
                .unwrap()
        };
        let mut padded = b"cbr0".to_vec();
        padded.resize(16, 0);
        assert_eq!(cmp(&bridge), (CmpOp::Neq, padded));
        assert_eq!(cmp(&prefix), (CmpOp::Eq, b"veth".to_vec()));
    }

    #[test]
    fn matches_print_as_nft_lists_them() {
        let pods: IpNet = "10.244.0.0/16".parse().unwrap();
        assert_eq!(
            Stmt::Prefix {
                field: Field::IpSaddr,
                negated: true,
                net: pods
            }
            .to_string(),
            "ip saddr != 10.244.0.0/16"
        );
        assert_eq!(
            Stmt::MarkOr(0x4000).to_string(),
            "meta mark set meta mark | 0x00004000"
        );
        assert_eq!(
            Stmt::DnatTo("fd00::1".parse().unwrap(), 80).to_string(),
            "dnat to [fd00::1]:80"
        );
        assert_eq!(
            Stmt::Vmap {
                fields: vec![Field::L4proto, Field::ThDport],
                map: "m".into()
            }
            .to_string(),
            "meta l4proto . th dport vmap @m"
        );
    }
}
