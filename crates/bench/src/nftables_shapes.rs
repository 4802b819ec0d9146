//! Table shapes for nftables mode at scale (issue 25), measured over our
//! own netlink codec in a fresh network namespace: the kernel's time to
//! program N services × M endpoints from nothing, then to take one
//! endpoint change and one new service, per shape.
//!
//! The shapes differ only in how a service chain picks its endpoint; the
//! rest is the part of the table every shape shares (a `nat` base chain,
//! `services`, the `service-ips` verdict map with one `goto` per service):
//!
//! * `anonymous` — upstream v1.36: `dnat ip to numgen random mod M map
//!   { … }`, one anonymous map per service, the cold start cut into
//!   transactions of `part_size` maps as the binary does;
//! * `direct` — upstream v1.37 for one endpoint: `dnat to addr:port`, no
//!   map (services with more endpoints keep the anonymous map);
//! * `shared` — one named data map `service-endpoints` (`integer :
//!   ipv4_addr . inet_service`) for every service, each service chain's
//!   one rule `dnat ip to numgen random mod M offset K map
//!   @service-endpoints`; an endpoint change is a data-map element update.
//!
//! The old (anonymous) shape stays here as the fixture upstream v1.36's
//! table is measured with beside ours.

use crate::namespace::BenchNetns;
use anyhow::{Context, Result, bail};
use nftables::{
    BaseChain, Chain, ChainType, DataType, Element, Family, Hook, NftSocket, Op, Policy, Rule, Set,
    SetFlags, SetRef, Table, Transaction, Value, Verdict, stmt,
};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const TABLE: &str = "kube-proxy";
const SERVICE_IPS: &str = "service-ips";
const SHARED_MAP: &str = "service-endpoints";
const TCP: u8 = 6;

/// How a service chain reaches its endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One anonymous `numgen` map per service (upstream v1.36).
    Anonymous,
    /// `dnat to` for one endpoint, anonymous map otherwise (upstream v1.37).
    Direct,
    /// One shared data map keyed `numgen random mod M offset K`.
    Shared,
    /// Shared interval maps keyed `numgen random mod 65536 offset K`: each
    /// service owns a slot of 65,536 keys cut into M ranges, so a change of
    /// M is an element update too (the rule never changes).
    Interval,
}

impl Shape {
    /// The shape named `name` (`anonymous`, `direct`, `shared`).
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "anonymous" => Shape::Anonymous,
            "direct" => Shape::Direct,
            "shared" => Shape::Shared,
            "interval" => Shape::Interval,
            other => bail!("unknown shape {other:?} (anonymous, direct, shared, interval)"),
        })
    }

    /// Its name in the report and the curve.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Anonymous => "anonymous (v1.36)",
            Shape::Direct => "direct (v1.37)",
            Shape::Shared => "shared map",
            Shape::Interval => "interval map",
        }
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct ShapeSetup {
    /// Service counts, each a separate table.
    pub services: Vec<u32>,
    /// Endpoints per service.
    pub endpoints: u32,
    /// The shapes, each in its own namespace.
    pub shapes: Vec<Shape>,
    /// Anonymous maps per cold-start transaction (the binary's: 1,000).
    pub part_size: u32,
    /// Changes of each kind to time.
    pub changes: u32,
    /// The anonymous shape only up to this many services (it is quadratic:
    /// 277–444 s at 50,000).
    pub anonymous_max: u32,
    /// Shared shape: services per shared map (0: one map for all). Each
    /// rule bound to a map makes the kernel walk the map's elements, and
    /// each element added walks the map's bindings.
    pub shard_size: u32,
    /// Shared shape: the cold start adds the maps' elements after the
    /// rules that bind them (a bind then walks an empty map).
    pub elements_after_rules: bool,
}

/// The kernel's and our time of one step.
#[derive(Debug, Clone, Copy, Default)]
struct Timed {
    kernel: Duration,
    wall: Duration,
    transactions: usize,
}

impl Timed {
    fn add(&mut self, other: Timed) {
        self.kernel += other.kernel;
        self.wall += other.wall;
        self.transactions += other.transactions;
    }
}

/// One shape's cold start at one size.
#[derive(Debug, Clone, Copy)]
pub struct ColdStart {
    /// The shape.
    pub shape: Shape,
    /// Services.
    pub services: u32,
    /// The kernel's time (sum over its transactions).
    pub kernel: Duration,
    /// Build + encode + kernel.
    pub wall: Duration,
}

/// Runs every shape of `setup` at every size; returns the report and the
/// cold starts (for the curve).
pub fn run_shapes(setup: &ShapeSetup) -> Result<(String, Vec<ColdStart>)> {
    let mut out = String::new();
    let mut curve = Vec::new();
    for &services in &setup.services {
        out.push_str(&format!(
            "nftables table shapes: {services} services × {} endpoints (kernel = sendmsg to last ack; wall = build + encode + kernel)\n",
            setup.endpoints
        ));
        for &shape in &setup.shapes {
            if shape == Shape::Anonymous && services > setup.anonymous_max {
                out.push_str(&format!(
                    "{:<18} skipped above --anonymous-max {}\n",
                    shape.name(),
                    setup.anonymous_max
                ));
                continue;
            }
            let (text, cold) = run_shape(setup, services, shape)?;
            out.push_str(&text);
            curve.push(ColdStart {
                shape,
                services,
                kernel: cold.kernel,
                wall: cold.wall,
            });
        }
    }
    Ok((out, curve))
}

fn run_shape(setup: &ShapeSetup, services: u32, shape: Shape) -> Result<(String, Timed)> {
    let ns = BenchNetns::labelled("shapes")?;
    let setup = setup.clone();
    ns.run(move || -> Result<(String, Timed)> {
        let mut sock = NftSocket::connect().context("nf_tables socket")?;
        let mut table = Layout::new(shape, setup.endpoints, setup.shard_size);
        let cold = table.cold_start(
            &mut sock,
            services,
            setup.part_size,
            setup.elements_after_rules,
        )?;
        let mut out = format!(
            "{:<18} cold start: kernel {:>9.1} ms, wall {:>9.1} ms, {} transaction(s)\n",
            shape.name(),
            ms(cold.kernel),
            ms(cold.wall),
            cold.transactions
        );
        let step = (services / setup.changes.max(1)).max(1);
        let mut endpoint = Vec::new();
        let mut added = Vec::new();
        let mut resized = Vec::new();
        for k in 0..setup.changes {
            let service = (k * step) % services;
            endpoint.push(apply(&mut sock, table.endpoint_change(service, k + 1))?);
            added.push(apply(&mut sock, table.new_service(services + k))?);
            if matches!(shape, Shape::Shared | Shape::Interval) {
                resized.push(apply(&mut sock, table.endpoint_added(service))?);
            }
        }
        out.push_str(&summary("  one endpoint changed", &endpoint));
        out.push_str(&summary("  one new service", &added));
        if !resized.is_empty() {
            out.push_str(&summary("  one endpoint added (M → M+1)", &resized));
        }
        Ok((out, cold))
    })?
}

fn apply(sock: &mut NftSocket, tx: Transaction) -> Result<Timed> {
    let start = Instant::now();
    sock.apply(&tx)
        .with_context(|| format!("transaction of {} ops", tx.ops.len()))?;
    Ok(Timed {
        kernel: sock.last_kernel_time(),
        wall: start.elapsed(),
        transactions: 1,
    })
}

fn summary(label: &str, runs: &[Timed]) -> String {
    let mut kernel: Vec<f64> = runs.iter().map(|t| ms(t.kernel)).collect();
    kernel.sort_by(f64::total_cmp);
    let (Some(min), Some(max)) = (kernel.first(), kernel.last()) else {
        return String::new();
    };
    format!(
        "{label:<32} kernel median {:>7.2} ms (min {min:.2}, max {max:.2}, n={})\n",
        kernel[kernel.len() / 2],
        kernel.len()
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The table of one shape, and what it needs to write its changes.
struct Layout {
    shape: Shape,
    endpoints: u32,
    /// Services per shared map (0: one map).
    shard_size: u32,
    /// Per service: its first key in its shared map and its endpoint count.
    ranges: Vec<(u32, u32)>,
    /// The next free key of each shared map.
    next_key: Vec<u32>,
    /// Anonymous maps written so far (their names are never reused).
    anonymous: u32,
}

impl Layout {
    fn new(shape: Shape, endpoints: u32, shard_size: u32) -> Self {
        Self {
            shape,
            endpoints: endpoints.max(1),
            shard_size,
            ranges: Vec::new(),
            next_key: Vec::new(),
            anonymous: 0,
        }
    }

    fn cold_start(
        &mut self,
        sock: &mut NftSocket,
        services: u32,
        part_size: u32,
        elements_after_rules: bool,
    ) -> Result<Timed> {
        let mut total = Timed::default();
        let started = Instant::now();
        let (mut tx, elements) = self.skeleton(services);
        if !elements_after_rules {
            tx.ops.extend(elements.iter().cloned());
        }
        let parts_of_anonymous = self.uses_anonymous_maps();
        let mut in_part = 0;
        for service in 0..services {
            self.push_service_rule(&mut tx, service, 0);
            in_part += 1;
            if parts_of_anonymous && in_part == part_size.max(1) {
                total.add(apply(sock, std::mem::replace(&mut tx, transaction()))?);
                in_part = 0;
            }
        }
        if elements_after_rules {
            tx.ops.extend(elements);
        }
        if !tx.ops.is_empty() {
            total.add(apply(sock, tx)?);
        }
        total.wall = started.elapsed();
        Ok(total)
    }

    fn uses_anonymous_maps(&self) -> bool {
        match self.shape {
            Shape::Anonymous => true,
            Shape::Direct => self.endpoints > 1,
            Shape::Shared | Shape::Interval => false,
        }
    }

    /// Table, base chain, `services`, `service-ips` with every service's
    /// `goto`, every service chain (empty), the shared map with every
    /// service's endpoints (the element ops returned apart).
    fn skeleton(&mut self, services: u32) -> (Transaction, Vec<Op>) {
        let mut tx = transaction();
        tx.push(Op::AddTable(Table::new(Family::Ip, TABLE)));
        let base = BaseChain {
            kind: ChainType::Nat,
            hook: Hook::Prerouting,
            priority: -100,
            policy: Policy::Accept,
        };
        tx.push(Op::AddChain(Chain::base("nat-prerouting", base)));
        tx.push(Op::AddChain(Chain::regular("services")));
        for service in 0..services {
            tx.push(Op::AddChain(Chain::regular(service_chain(service))));
        }
        tx.push(Op::AddSet(Set::map(
            SERVICE_IPS,
            vec![
                DataType::Ipv4Addr,
                DataType::InetProto,
                DataType::InetService,
            ],
            vec![DataType::Verdict],
        )));
        let mut element_ops = Vec::new();
        if self.uses_shared_maps() {
            let mut per_map: Vec<Vec<Element>> = Vec::new();
            for service in 0..services {
                let shard = self.shard(service) as usize;
                if per_map.len() <= shard {
                    per_map.resize_with(shard + 1, Vec::new);
                }
                let elements = self.allocate(service);
                per_map[shard].extend(elements);
            }
            for (shard, elements) in per_map.into_iter().enumerate() {
                tx.push(Op::AddSet(self.shared_map(shard as u32)));
                element_ops.push(Op::AddElements {
                    set: SetRef::named(shared_map_name(shard as u32)),
                    elements,
                });
            }
        }
        let gotos = (0..services).map(service_ip_element).collect();
        tx.push(Op::AddElements {
            set: SetRef::named(SERVICE_IPS),
            elements: gotos,
        });
        tx.push(Op::AddRule(Rule::new(
            "nat-prerouting",
            stmt::verdict(Verdict::Jump("services".into())),
        )));
        let fields = [
            stmt::Field::IpDaddr,
            stmt::Field::L4proto,
            stmt::Field::ThDport,
        ];
        tx.push(Op::AddRule(Rule::new(
            "services",
            stmt::vmap(&fields, SetRef::named(SERVICE_IPS)),
        )));
        (tx, element_ops)
    }

    fn shard(&self, service: u32) -> u32 {
        service.checked_div(self.shard_size).unwrap_or(0)
    }

    fn next_key(&mut self, service: u32, count: u32) -> u32 {
        let shard = self.shard(service) as usize;
        if self.next_key.len() <= shard {
            self.next_key.resize(shard + 1, 0);
        }
        let first = self.next_key[shard];
        self.next_key[shard] += count;
        first
    }

    fn uses_shared_maps(&self) -> bool {
        matches!(self.shape, Shape::Shared | Shape::Interval)
    }

    fn shared_map(&self, shard: u32) -> Set {
        let map = shared_map(shard);
        if self.shape == Shape::Interval {
            map.with_flags(SetFlags::INTERVAL)
        } else {
            map
        }
    }

    /// Keys for `service`'s endpoints in the shared map (generation 0).
    fn allocate(&mut self, service: u32) -> Vec<Element> {
        let width = if self.shape == Shape::Interval {
            SLOT
        } else {
            self.endpoints
        };
        let first = self.next_key(service, width);
        if self.ranges.len() <= service as usize {
            self.ranges.resize(service as usize + 1, (0, 0));
        }
        self.ranges[service as usize] = (first, self.endpoints);
        self.elements(first, self.endpoints, service, 0)
    }

    /// Every element of a service's `count` endpoints whose keys start at
    /// `first`: in the interval shape each range's start (with the
    /// endpoint) and its end marker (the next range's first key).
    fn elements(&self, first: u32, count: u32, service: u32, generation: u32) -> Vec<Element> {
        let mut out = Vec::new();
        for e in 0..count {
            out.push(self.element(first, e, count, service, generation));
            if self.shape == Shape::Interval {
                out.push(Element::interval_end(vec![interval_key(
                    first + range_start(e + 1, count),
                )]));
            }
        }
        out
    }

    /// Endpoint `e` of `count` of a service whose keys start at `first`.
    fn element(&self, first: u32, e: u32, count: u32, service: u32, generation: u32) -> Element {
        if self.shape != Shape::Interval {
            return endpoint_element(first + e, service, e, generation);
        }
        let mut element = endpoint_element(0, service, e, generation);
        element.key = vec![interval_key(first + range_start(e, count))];
        element
    }

    /// The rule of `service`'s chain (and its anonymous map, if any), its
    /// endpoints at generation `generation`.
    fn push_service_rule(&mut self, tx: &mut Transaction, service: u32, generation: u32) {
        let chain = service_chain(service);
        let exprs = match self.shape {
            Shape::Shared => {
                let (first, count) = self
                    .ranges
                    .get(service as usize)
                    .copied()
                    .unwrap_or_default();
                let map = SetRef::named(shared_map_name(self.shard(service)));
                stmt::dnat_numgen_offset_map(2, count, first, map, 4)
            }
            Shape::Interval => {
                let (first, _) = self
                    .ranges
                    .get(service as usize)
                    .copied()
                    .unwrap_or_default();
                let map = SetRef::named(shared_map_name(self.shard(service)));
                stmt::dnat_numgen_interval_map(2, SLOT, first, map, 4)
            }
            Shape::Direct if self.endpoints == 1 => {
                stmt::dnat_to(endpoint_addr(service, 0, generation).into(), 8080)
            }
            Shape::Direct | Shape::Anonymous => {
                let name = format!("__kp-{}", self.anonymous);
                self.anonymous += 1;
                let mut map =
                    Set::anonymous(0, vec![DataType::Integer], Some(endpoint_data_type()));
                map.name = name.clone();
                let elements = (0..self.endpoints)
                    .map(|e| endpoint_element(e, service, e, generation))
                    .collect();
                tx.push(Op::AddSet(map));
                tx.push(Op::AddElements {
                    set: SetRef::named(name.as_str()),
                    elements,
                });
                stmt::dnat_numgen_map(2, self.endpoints, SetRef::named(name), 4)
            }
        };
        tx.push(Op::AddRule(Rule::new(
            chain,
            [stmt::l4proto(TCP), exprs].concat(),
        )));
    }

    /// `service`'s first endpoint replaced by another address.
    fn endpoint_change(&mut self, service: u32, generation: u32) -> Transaction {
        let mut tx = transaction();
        if self.uses_shared_maps() {
            let (first, count) = self
                .ranges
                .get(service as usize)
                .copied()
                .unwrap_or_default();
            let old = self.element(first, 0, count, service, generation - 1);
            let new = self.element(first, 0, count, service, generation);
            let map = shared_map_name(self.shard(service));
            tx.push(Op::DeleteElements {
                set: SetRef::named(map.as_str()),
                elements: vec![old],
            });
            tx.push(Op::AddElements {
                set: SetRef::named(map),
                elements: vec![new],
            });
        } else {
            tx.push(Op::FlushChain(service_chain(service)));
            self.push_service_rule(&mut tx, service, generation);
        }
        tx
    }

    /// A service that was not there: its chain, rule, endpoints, `goto`.
    fn new_service(&mut self, service: u32) -> Transaction {
        let mut tx = transaction();
        tx.push(Op::AddChain(Chain::regular(service_chain(service))));
        if self.uses_shared_maps() {
            let shard = self.shard(service);
            if self.next_key.len() <= shard as usize {
                tx.push(Op::AddSet(self.shared_map(shard)));
            }
            let elements = self.allocate(service);
            tx.push(Op::AddElements {
                set: SetRef::named(shared_map_name(shard)),
                elements,
            });
        }
        self.push_service_rule(&mut tx, service, 0);
        tx.push(Op::AddElements {
            set: SetRef::named(SERVICE_IPS),
            elements: vec![service_ip_element(service)],
        });
        tx
    }

    /// Shared shape: `service` gets one more endpoint, so a new key range
    /// (M+1 keys past every other) and its rule rewritten (mod M+1).
    fn endpoint_added(&mut self, service: u32) -> Transaction {
        let mut tx = transaction();
        let (old_first, old_count) = self
            .ranges
            .get(service as usize)
            .copied()
            .unwrap_or_default();
        if self.shape == Shape::Interval {
            let map = shared_map_name(self.shard(service));
            let count = old_count + 1;
            self.ranges[service as usize] = (old_first, count);
            let old = self.elements(old_first, old_count, service, 0);
            let new = self.elements(old_first, count, service, 0);
            tx.push(Op::DeleteElements {
                set: SetRef::named(map.as_str()),
                elements: old,
            });
            tx.push(Op::AddElements {
                set: SetRef::named(map),
                elements: new,
            });
            return tx;
        }
        let count = old_count + 1;
        let first = self.next_key(service, count);
        self.ranges[service as usize] = (first, count);
        let map = shared_map_name(self.shard(service));
        let elements = (0..count)
            .map(|e| endpoint_element(first + e, service, e, 500))
            .collect();
        tx.push(Op::AddElements {
            set: SetRef::named(map.as_str()),
            elements,
        });
        tx.push(Op::FlushChain(service_chain(service)));
        self.push_service_rule(&mut tx, service, 0);
        let old = (0..old_count)
            .map(|e| Element::new(vec![Value::Integer(old_first + e)]))
            .collect();
        tx.push(Op::DeleteElements {
            set: SetRef::named(map),
            elements: old,
        });
        tx
    }
}

/// Keys per service in the interval shape.
const SLOT: u32 = 1 << 16;

/// The first key of range `e` of `count` in a slot.
fn range_start(e: u32, count: u32) -> u32 {
    u32::try_from(u64::from(e) * u64::from(SLOT) / u64::from(count.max(1))).unwrap_or(0)
}

/// An interval key: looked up in network order (after `byteorder hton`).
fn interval_key(key: u32) -> Value {
    Value::Integer(u32::from_ne_bytes(key.to_be_bytes()))
}

fn transaction() -> Transaction {
    Transaction::new(Family::Ip, TABLE)
}

fn shared_map(shard: u32) -> Set {
    Set::map(
        shared_map_name(shard),
        vec![DataType::Integer],
        endpoint_data_type(),
    )
    .with_comment("endpoints of every service, by numgen offset")
}

fn shared_map_name(shard: u32) -> String {
    if shard == 0 {
        SHARED_MAP.to_string()
    } else {
        format!("{SHARED_MAP}-{shard}")
    }
}

fn endpoint_data_type() -> Vec<DataType> {
    vec![DataType::Ipv4Addr, DataType::InetService]
}

fn service_chain(service: u32) -> String {
    format!("service-{service:08}-ns/svc/tcp/http")
}

/// ClusterIP of `service`: 172.30.0.0/16 onwards.
fn cluster_ip(service: u32) -> Ipv4Addr {
    Ipv4Addr::from(0xac1e_0000 + service)
}

/// Endpoint `e` of `service` at `generation` (a change moves it).
fn endpoint_addr(service: u32, e: u32, generation: u32) -> Ipv4Addr {
    let index = service
        .wrapping_mul(16)
        .wrapping_add(e)
        .wrapping_add(generation.wrapping_mul(0x0010_0000));
    Ipv4Addr::from(0x0a00_0000 | (index & 0x00ff_ffff))
}

fn endpoint_element(key: u32, service: u32, e: u32, generation: u32) -> Element {
    Element::data(
        vec![Value::Integer(key)],
        vec![
            Value::Ipv4(endpoint_addr(service, e, generation)),
            Value::Port(8080),
        ],
    )
}

fn service_ip_element(service: u32) -> Element {
    Element::verdict(
        vec![
            Value::Ipv4(cluster_ip(service)),
            Value::Proto(TCP),
            Value::Port(80),
        ],
        Verdict::Goto(service_chain(service)),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key_of(element: &Element) -> u32 {
        match element.key.as_slice() {
            [Value::Integer(k)] => u32::from_be_bytes(k.to_ne_bytes()),
            other => panic!("unexpected key {other:?}"),
        }
    }

    /// The ranges of a slot cover it exactly, each range's end marker is
    /// the next range's start, and no two endpoints differ by more than
    /// one key in their share.
    #[test]
    fn interval_ranges_tile_the_slot() {
        for count in [1u32, 2, 3, 7, 10, 100, 1000] {
            let mut layout = Layout::new(Shape::Interval, count, 0);
            layout.allocate(0);
            let elements = layout.allocate(1);
            let first = SLOT;
            assert_eq!(elements.len(), 2 * count as usize);
            let starts: Vec<u32> = elements.iter().step_by(2).map(key_of).collect();
            let ends: Vec<u32> = elements.iter().skip(1).step_by(2).map(key_of).collect();
            assert!(
                elements
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .all(Element::is_interval_end)
            );
            assert_eq!(starts[0], first, "count {count}");
            assert_eq!(*ends.last().unwrap(), first + SLOT, "count {count}");
            assert_eq!(&starts[1..], &ends[..ends.len() - 1], "count {count}");
            let widths: Vec<u32> = starts.iter().zip(&ends).map(|(s, e)| e - s).collect();
            let (min, max) = (widths.iter().min().unwrap(), widths.iter().max().unwrap());
            assert!(max - min <= 1, "count {count}: widths {min}..{max}");
        }
    }

    /// The shared shape gives each service its own keys, one per endpoint.
    #[test]
    fn shared_keys_do_not_overlap() {
        let mut layout = Layout::new(Shape::Shared, 3, 2);
        let keys: Vec<Vec<u32>> = (0..4)
            .map(|s| {
                layout
                    .allocate(s)
                    .iter()
                    .map(|e| match e.key.as_slice() {
                        [Value::Integer(k)] => *k,
                        other => panic!("unexpected key {other:?}"),
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            keys,
            vec![vec![0, 1, 2], vec![3, 4, 5], vec![0, 1, 2], vec![3, 4, 5]]
        );
        assert_eq!(
            (layout.shard(1), layout.shard(2)),
            (0, 1),
            "two services per map"
        );
    }
}
