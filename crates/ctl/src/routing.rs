//! The routing part of the configuration file: interfaces, neighbours, routes and
//! labels, and how they are applied to a [`RouterControl`].
//!
//! ```toml
//! [router]
//! router_id = "10.0.0.1"          # the loopback: ICMP source and ARP address of
//!                                 # interfaces without an address (unnumbered)
//! route_preference = ["dpctl", "config", "fpm", "kernel"]  # most preferred first
//! neighbor_reachable_s = 300      # ARP-learned neighbours: probed after this long
//!                                 # without being heard (0: they never age)
//! neighbor_probes = 3             # unicast probes, 1 s apart, before forgetting
//! label_slots = 65536             # label entries the table holds (64 B each; at
//!                                 # start only): 1048576 for a label per prefix
//!
//! [[interface]]                   # the port's own interface (named like the port)
//! name = "port0"
//! addresses = ["192.168.11.9/31"]
//! mtu = 1500
//!
//! [[interface]]                   # an 802.1Q sub-interface
//! name = "port0.100"
//! parent = "port0"
//! vlan = 100
//! addresses = ["10.1.100.1/24"]
//!
//! [[neighbor]]
//! interface = "port0"
//! address = "192.168.11.8"
//! mac = "02:00:00:00:00:08"
//!
//! [[route]]                       # ingress PE: push label 100
//! prefix = "10.0.1.1/32"
//! via = [{ gateway = "192.168.11.8", interface = "port0", out_labels = [100] }]
//!
//! [[route]]
//! prefix = "10.66.0.0/16"
//! kind = "blackhole"              # blackhole | unreachable | prohibit | local
//!
//! [[label]]                       # P: swap 100 -> 100
//! label = 100
//! eos = true
//! via = [{ gateway = "192.168.11.6", interface = "port1", out_labels = [100] }]
//!
//! [[label]]                       # egress PE: pop and look up in table 0
//! label = 103
//! eos = true
//! lookup_table = 0                # or action = "ip4-lookup": the receiving interface's table
//! ```

use std::collections::{BTreeMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};

use serde::Deserialize;

use dataplane::router::{Interface, MAX_IFACES, RouteSource, RouterControl, RouterError};
pub use dpctl::parse::{parse_addr_len, parse_ip, parse_mac, parse_prefix};
use fib::{IpPrefix, TableId};

use crate::spec::{
    self, LabelSpec, ResolveError, RouteTarget, SpecError, Special, ViaSpec, eos_word,
};

/// Why the routing sections of the configuration file cannot be applied, or
/// why a reload was refused or stopped. The message names the section.
#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    /// A value or combination the file may not have (a duplicate, an unknown
    /// name, a value out of range, a missing key).
    #[error("{0}")]
    Invalid(String),
    /// A value that does not parse, or a route or label of the wrong shape.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A name or table that does not resolve against the router.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The router refused it.
    #[error(transparent)]
    Router(#[from] RouterError),
    /// `[router] route_preference` that the router refuses.
    #[error("[router] {0}")]
    Preference(RouterError),
    /// An error in section (or entry) `what`.
    #[error("{what}: {error}")]
    In {
        /// The section, e.g. `[[route]] 10.0.0.0/8`.
        what: String,
        /// What is wrong in it.
        error: Box<RoutingError>,
    },
    /// A reload that changes what needs a restart of the daemon.
    #[error("{0}")]
    Restart(String),
    /// A reload that would change what Linux owns (a twinned interface's
    /// addresses, MTU and up/down).
    #[error("[[interface]] {interface}: {why} (and its MTU and up/down); nothing was applied")]
    LinuxOwns {
        /// The interface.
        interface: String,
        /// Why Linux owns it.
        why: String,
    },
    /// A reload refused before it changed anything.
    #[error("{0}; nothing was applied")]
    NothingApplied(Box<RoutingError>),
    /// A reload that stopped part way, at `what`.
    #[error(
        "reload stopped at {what}: {error}; the router runs part of the new configuration: fix the file and reload again"
    )]
    Stopped {
        /// The entry it stopped at.
        what: String,
        /// Why.
        error: Box<RoutingError>,
    },
}

/// `error` in section `what`.
fn within(what: String, error: impl Into<RoutingError>) -> RoutingError {
    RoutingError::In {
        what,
        error: Box::new(error.into()),
    }
}

/// A reload that stopped at `what` for `error`.
fn stopped(what: String, error: impl Into<RoutingError>) -> RoutingError {
    RoutingError::Stopped {
        what,
        error: Box::new(error.into()),
    }
}

/// `[router]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterSection {
    /// ICMP source address for interfaces without one.
    #[serde(default)]
    pub router_id: Option<String>,
    /// ICMP errors per second per worker.
    #[serde(default)]
    pub icmp_rate_pps: Option<u32>,
    /// Extra IPv4 tables to create (table 0 always exists).
    #[serde(default)]
    pub tables: Vec<u32>,
    /// Seconds a neighbour learned from ARP is trusted before it is probed (default
    /// 300; 0: learned neighbours never age).
    #[serde(default)]
    pub neighbor_reachable_s: Option<u64>,
    /// Unicast ARP probes, 1 s apart, before a silent neighbour is forgotten
    /// (default 3).
    #[serde(default)]
    pub neighbor_probes: Option<u8>,
    /// Route sources, most preferred first (default `["dpctl", "config",
    /// "fpm", "kernel"]`).
    #[serde(default)]
    pub route_preference: Option<Vec<String>>,
    /// Action slots of the label table (default 65,536; one per plain label
    /// entry; 64 bytes each, allocated at start; read at start only).
    #[serde(default)]
    pub label_slots: Option<usize>,
}

/// The route preference of `[router]`, if the file sets one.
pub fn route_preference(r: &Routing) -> Result<Option<Vec<RouteSource>>, RoutingError> {
    let Some(names) = &r.router.route_preference else {
        return Ok(None);
    };
    let order = names
        .iter()
        .map(|n| {
            RouteSource::from_name(n).ok_or_else(|| {
                RoutingError::Invalid(format!(
                    "[router] route_preference: unknown source {n:?} (dpctl, config, fpm, kernel)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(order))
}

/// Longest `neighbor_reachable_s` (a week).
const MAX_REACHABLE_S: u64 = 7 * 24 * 3600;

/// How learned neighbours age, from `[router]`.
pub fn neighbor_aging(r: &Routing) -> Result<dataplane::router::NeighborAging, RoutingError> {
    let mut a = dataplane::router::NeighborAging::default();
    if let Some(s) = r.router.neighbor_reachable_s {
        if s > MAX_REACHABLE_S {
            return Err(RoutingError::Invalid(format!(
                "[router] neighbor_reachable_s = {s}: at most {MAX_REACHABLE_S} (a week), 0 to never age"
            )));
        }
        a.reachable = std::time::Duration::from_secs(s);
    }
    if let Some(n) = r.router.neighbor_probes {
        if n > 10 {
            return Err(RoutingError::Invalid(format!(
                "[router] neighbor_probes = {n}: at most 10"
            )));
        }
        a.probes = n;
    }
    Ok(a)
}

/// `[[interface]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceSection {
    /// A port name (the port's own interface) or a new name (with `parent`+`vlan`).
    pub name: String,
    /// Port of a sub-interface.
    #[serde(default)]
    pub parent: Option<String>,
    /// VLAN id of a sub-interface.
    #[serde(default)]
    pub vlan: Option<u16>,
    /// IPv4 addresses with prefix length.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// IP MTU (default 1500).
    #[serde(default)]
    pub mtu: Option<u16>,
    /// IPv4 table.
    #[serde(default)]
    pub table: u32,
    /// The table by its VRF's name (instead of `table`).
    #[serde(default)]
    pub vrf: Option<String>,
    /// Admin state.
    #[serde(default = "yes")]
    pub up: bool,
}

fn yes() -> bool {
    true
}

/// `[[neighbor]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborSection {
    /// Interface name.
    pub interface: String,
    /// IPv4 or IPv6 address (a link-local one included).
    pub address: String,
    /// MAC `aa:bb:cc:dd:ee:ff`.
    pub mac: String,
}

/// A path of a route or label.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViaSection {
    /// Next hop address (omit for an attached route on `interface`).
    #[serde(default)]
    pub gateway: Option<String>,
    /// Output interface (required for labels; optional for routes: recursive).
    #[serde(default)]
    pub interface: Option<String>,
    /// Out-labels, top first.
    #[serde(default)]
    pub out_labels: Vec<u32>,
    /// ECMP weight.
    #[serde(default = "one")]
    pub weight: u32,
    /// The table the gateway is looked up in (routes; default: the route's own).
    #[serde(default)]
    pub next_hop_table: Option<TableId>,
    /// That table by its VRF's name (`default`: table 0).
    #[serde(default)]
    pub next_hop_vrf: Option<String>,
}

/// `[[vrf]]`: a name for a table, which is created.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VrfSection {
    /// The VRF's name.
    pub name: String,
    /// Its table (not 0: that is `default`).
    pub table: TableId,
}

/// `[[pw]]`: a pseudowire (VPWS, RFC 4448) from a port to a remote PE.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PwSection {
    /// Its name.
    pub name: String,
    /// The attachment circuit: a port or sub-interface without addresses.
    pub interface: String,
    /// The remote PE's address (its loopback, reached in table 0).
    pub neighbor: String,
    /// The label this router gives the pseudowire.
    pub in_label: u32,
    /// The label the remote PE gave it.
    pub out_label: u32,
    /// The RFC 4385 control word (default: on).
    #[serde(default = "yes")]
    pub control_word: bool,
}

impl PwSection {
    /// The pseudowire, its circuit named by ifindex in `ctl`.
    fn pw(&self, ctl: &RouterControl) -> Result<dataplane::router::Pw, RoutingError> {
        let remote: Ipv4Addr = self.neighbor.parse().map_err(|_| {
            RoutingError::Invalid(format!(
                "neighbor {:?} is not an IPv4 address",
                self.neighbor
            ))
        })?;
        Ok(dataplane::router::Pw {
            ac: spec::ifindex(ctl, &self.interface)?,
            remote,
            in_label: self.in_label,
            out_label: self.out_label,
            cw: self.control_word,
        })
    }
}

fn one() -> u32 {
    1
}

/// `[[route]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    /// `a.b.c.d/len`.
    pub prefix: String,
    /// Table.
    #[serde(default)]
    pub table: u32,
    /// The table by its VRF's name (instead of `table`).
    #[serde(default)]
    pub vrf: Option<String>,
    /// Paths (ECMP when several).
    #[serde(default)]
    pub via: Vec<ViaSection>,
    /// Special route instead of paths.
    #[serde(default)]
    pub kind: Option<String>,
}

/// `[[label]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSection {
    /// Incoming label (16..2^20).
    pub label: u32,
    /// Bottom of stack.
    #[serde(default = "yes")]
    pub eos: bool,
    /// Swap/PHP paths.
    #[serde(default)]
    pub via: Vec<ViaSection>,
    /// Pop and look up the payload in this table: IPv4, or the family
    /// `action` names (`ip6-lookup`, `ip-lookup`).
    #[serde(default)]
    pub lookup_table: Option<u32>,
    /// That table by its VRF's name (a per-VRF VPN label).
    #[serde(default)]
    pub lookup_vrf: Option<String>,
    /// `drop`, `punt`, `pop` (non-eos), or `ip4-lookup`, `ip6-lookup`,
    /// `ip-lookup` (pop and look up the IPv4, the IPv6 or either payload by its
    /// version, in `lookup_table` or else the receiving interface's table)
    /// instead of paths.
    #[serde(default)]
    pub action: Option<String>,
    /// `uniform` (default) or `pipe`.
    #[serde(default)]
    pub ttl_mode: Option<String>,
}

/// The file's `[[route]]`s as a reload compares them once they are applied:
/// (table, prefix) → a fingerprint of what the section says (a 64-bit hash).
/// The sections themselves, a few hundred bytes each with their strings, are
/// not kept for a full table's worth of static routes.
pub type RouteDigest = BTreeMap<(TableId, IpPrefix), u64>;

/// The fingerprint of a route's target in a [`RouteDigest`].
fn fingerprint(t: &RouteTarget) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// Everything routing-related of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routing {
    /// `[router]`.
    pub router: RouterSection,
    /// `[[interface]]`.
    pub interfaces: Vec<InterfaceSection>,
    /// `[[neighbor]]`.
    pub neighbors: Vec<NeighborSection>,
    /// `[[route]]`.
    pub routes: Vec<RouteSection>,
    /// `[[label]]`.
    pub labels: Vec<LabelSection>,
    /// `[[vrf]]`.
    pub vrfs: Vec<VrfSection>,
    /// `[[pw]]`.
    pub pws: Vec<PwSection>,
    /// `routes` as their digest, once [`Routing::compact`] dropped them.
    pub route_digest: Option<RouteDigest>,
}

impl Routing {
    /// Keeps the routes as their digest only: what a later reload needs of
    /// them. Fails (and keeps them) if they are not valid.
    pub fn compact(&mut self) -> Result<(), RoutingError> {
        let digest = self.routes_digest()?.into_owned();
        self.route_digest = Some(digest);
        self.routes = Vec::new();
        Ok(())
    }

    /// The routes' digest: kept, or made from `routes`.
    fn routes_digest(&self) -> Result<std::borrow::Cow<'_, RouteDigest>, RoutingError> {
        match &self.route_digest {
            Some(d) if self.routes.is_empty() => Ok(std::borrow::Cow::Borrowed(d)),
            _ => Ok(std::borrow::Cow::Owned(
                wanted_routes(self)?
                    .into_iter()
                    .map(|(k, t)| (k, fingerprint(&t)))
                    .collect(),
            )),
        }
    }

    /// Turns every VRF name (`vrf`, `next_hop_vrf`, `lookup_vrf`) into its table,
    /// from `[[vrf]]`; an unknown name, or a name beside the table it stands
    /// for, is an error that names the section.
    pub fn resolve_vrf_names(&mut self) -> Result<(), RoutingError> {
        let invalid = RoutingError::Invalid;
        let mut names: BTreeMap<String, TableId> = BTreeMap::new();
        names.insert("default".into(), 0);
        for v in &self.vrfs {
            if v.name == "default" || v.table == 0 {
                return Err(invalid(format!(
                    "[[vrf]] {:?}: table 0 is the default VRF; give another name and table",
                    v.name
                )));
            }
            if names.insert(v.name.clone(), v.table).is_some() {
                return Err(invalid(format!("[[vrf]] {:?} is given twice", v.name)));
            }
        }
        if let Some(t) = self
            .vrfs
            .iter()
            .map(|v| v.table)
            .find(|t| self.vrfs.iter().filter(|v| v.table == *t).count() > 1)
        {
            return Err(invalid(format!("[[vrf]] table {t} has two names")));
        }
        let known = names.keys().cloned().collect::<Vec<_>>().join(", ");
        let table = |what: &str, name: &str| {
            names
                .get(name)
                .copied()
                .ok_or_else(|| invalid(format!("{what}: unknown vrf {name:?} (VRFs: {known})")))
        };
        for i in &mut self.interfaces {
            if let Some(n) = i.vrf.take() {
                if i.table != 0 {
                    return Err(invalid(format!(
                        "[[interface]] {}: give table or vrf, not both",
                        i.name
                    )));
                }
                i.table = table(&format!("[[interface]] {}", i.name), &n)?;
            }
        }
        for r in &mut self.routes {
            let what = format!("[[route]] {}", r.prefix);
            if let Some(n) = r.vrf.take() {
                if r.table != 0 {
                    return Err(invalid(format!("{what}: give table or vrf, not both")));
                }
                r.table = table(&what, &n)?;
            }
            for v in &mut r.via {
                if let Some(n) = v.next_hop_vrf.take() {
                    if v.next_hop_table.is_some() {
                        return Err(invalid(format!(
                            "{what}: give next_hop_table or next_hop_vrf, not both"
                        )));
                    }
                    v.next_hop_table = Some(table(&what, &n)?);
                }
            }
        }
        for l in &mut self.labels {
            if let Some(n) = l.lookup_vrf.take() {
                let what = format!("[[label]] {}", l.label);
                if l.lookup_table.is_some() {
                    return Err(invalid(format!(
                        "{what}: give lookup_table or lookup_vrf, not both"
                    )));
                }
                l.lookup_table = Some(table(&what, &n)?);
            }
        }
        Ok(())
    }
}

/// What the daemon knows about a port when it applies the routing config.
#[derive(Debug, Clone)]
pub struct PortInfo {
    /// Port name.
    pub name: String,
    /// DPDK port id.
    pub id: u16,
    /// MAC.
    pub mac: [u8; 6],
}

impl ViaSection {
    /// The path, checked for syntax.
    pub fn spec(&self) -> Result<ViaSpec, SpecError> {
        Ok(ViaSpec {
            gateway: self
                .gateway
                .as_deref()
                .map(|g| {
                    g.trim()
                        .parse::<std::net::IpAddr>()
                        .map_err(|_| SpecError::IpAny(g.to_string()))
                })
                .transpose()?,
            interface: self.interface.clone(),
            out_labels: self.out_labels.clone(),
            weight: self.weight,
            table: self.next_hop_table,
        })
    }
}

impl RouteSection {
    /// Table, prefix and target, checked for syntax.
    pub fn spec(&self) -> Result<(TableId, IpPrefix, RouteTarget), RoutingError> {
        let invalid = RoutingError::Invalid;
        let prefix = parse_prefix(&self.prefix)?;
        let target = match (&self.kind, self.via.is_empty()) {
            (Some(_), false) => return Err(invalid("give either kind or via, not both".into())),
            (Some(k), true) => RouteTarget::Special(Special::from_word(k).ok_or_else(|| {
                invalid(format!(
                    "kind {k:?}: use blackhole, unreachable, prohibit or local"
                ))
            })?),
            (None, true) => return Err(invalid("needs via = [...] or kind".into())),
            (None, false) => RouteTarget::Paths(
                self.via
                    .iter()
                    .map(ViaSection::spec)
                    .collect::<Result<_, _>>()?,
            ),
        };
        target.check()?;
        Ok((self.table, prefix, target))
    }
}

impl LabelSection {
    /// The action, checked for syntax and shape.
    pub fn spec(&self) -> Result<LabelSpec, RoutingError> {
        let invalid = RoutingError::Invalid;
        let ttl_mode = match self.ttl_mode.as_deref() {
            None | Some("uniform") => mpls::TtlMode::Uniform,
            Some("pipe") => mpls::TtlMode::pipe(),
            Some(m) => return Err(invalid(format!("ttl_mode {m:?}: use uniform or pipe"))),
        };
        // (a lookup action may name its table)
        let lookup = self
            .action
            .as_deref()
            .filter(|a| LabelSpec::lookup(a, 0, ttl_mode).is_some());
        let n_forms = usize::from(!self.via.is_empty())
            + usize::from(self.lookup_table.is_some() || lookup.is_some())
            + usize::from(self.action.is_some() && lookup.is_none());
        if n_forms != 1 {
            return Err(invalid(
                "give exactly one of via, lookup_table or action".into(),
            ));
        }
        let spec = if self.lookup_table.is_some() || lookup.is_some() {
            let table = self.lookup_table.unwrap_or(mpls::RX_TABLE);
            let word = lookup.unwrap_or("ip4-lookup");
            LabelSpec::lookup(word, table, ttl_mode)
                .ok_or_else(|| invalid(format!("action {word:?}")))?
        } else if let Some(a) = &self.action {
            match a.as_str() {
                "drop" => LabelSpec::Drop,
                "punt" => LabelSpec::Punt,
                "pop" => LabelSpec::Pop { ttl_mode },
                a => {
                    return Err(invalid(format!(
                        "action {a:?}: use drop, punt, pop, ip4-lookup, ip6-lookup or ip-lookup"
                    )));
                }
            }
        } else {
            LabelSpec::Forward {
                paths: self
                    .via
                    .iter()
                    .map(ViaSection::spec)
                    .collect::<Result<_, _>>()?,
                ttl_mode,
            }
        };
        spec.check(self.label, self.eos)?;
        Ok(spec)
    }

    fn what(&self) -> String {
        format!("[[label]] {} {}", self.label, eos_word(self.eos))
    }
}

/// An interface as the file describes it, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IfaceWant {
    /// Port (index into the ports) and VLAN.
    port: usize,
    vlan: Option<u16>,
    /// Addresses of both families.
    addrs: Vec<(std::net::IpAddr, u8)>,
    mtu: u16,
    up: bool,
    table: TableId,
}

/// The interfaces the file describes, by name: every port's own interface (with
/// defaults when it has no section) and the sub-interfaces. Checks names, parents
/// and duplicates.
fn wanted_ifaces(
    r: &Routing,
    ports: &[PortInfo],
) -> Result<BTreeMap<String, IfaceWant>, RoutingError> {
    let invalid = RoutingError::Invalid;
    let mut seen = HashSet::new();
    for i in &r.interfaces {
        if !seen.insert(i.name.as_str()) {
            return Err(invalid(format!(
                "[[interface]] {} is configured twice",
                i.name
            )));
        }
    }
    let attrs = |i: Option<&InterfaceSection>, name: &str| -> Result<_, RoutingError> {
        let mut addrs = Vec::new();
        if let Some(s) = i {
            for a in &s.addresses {
                addrs.push(
                    parse_addr_len(a).map_err(|e| within(format!("[[interface]] {name}"), e))?,
                );
            }
        }
        Ok((
            addrs,
            i.and_then(|s| s.mtu).unwrap_or(1500),
            i.is_none_or(|s| s.up),
            i.map_or(0, |s| s.table),
        ))
    };
    let mut out = BTreeMap::new();
    for (k, p) in ports.iter().enumerate() {
        let sec = r
            .interfaces
            .iter()
            .find(|i| i.name == p.name && i.parent.is_none());
        let (addrs, mtu, up, table) = attrs(sec, &p.name)?;
        out.insert(
            p.name.clone(),
            IfaceWant {
                port: k,
                vlan: None,
                addrs,
                mtu,
                up,
                table,
            },
        );
    }
    for i in &r.interfaces {
        match (&i.parent, i.vlan) {
            (None, None) => {
                if !ports.iter().any(|p| p.name == i.name) {
                    return Err(invalid(format!(
                        "[[interface]] {}: no port of that name (a sub-interface needs parent and vlan)",
                        i.name
                    )));
                }
            }
            (Some(parent), Some(vlan)) => {
                let k = ports
                    .iter()
                    .position(|p| &p.name == parent)
                    .ok_or_else(|| {
                        invalid(format!(
                            "[[interface]] {}: parent {parent:?} is not a port",
                            i.name
                        ))
                    })?;
                if ports.iter().any(|p| p.name == i.name) {
                    return Err(invalid(format!(
                        "[[interface]] {}: a port has that name; name sub-interfaces like {parent}.{vlan}",
                        i.name
                    )));
                }
                let (addrs, mtu, up, table) = attrs(Some(i), &i.name)?;
                out.insert(
                    i.name.clone(),
                    IfaceWant {
                        port: k,
                        vlan: Some(vlan),
                        addrs,
                        mtu,
                        up,
                        table,
                    },
                );
            }
            _ => {
                return Err(invalid(format!(
                    "[[interface]] {}: a sub-interface needs both parent and vlan",
                    i.name
                )));
            }
        }
    }
    Ok(out)
}

fn make_iface(ifindex: u32, name: &str, w: &IfaceWant, ports: &[PortInfo]) -> Interface {
    Interface {
        ifindex,
        name: name.to_string(),
        port: ports[w.port].id,
        vlan: w.vlan,
        mac: ports[w.port].mac,
        mtu: w.mtu,
        up: w.up,
        table: w.table,
        addrs: w
            .addrs
            .iter()
            .filter_map(|&(a, l)| match a {
                std::net::IpAddr::V4(a) => Some((a, l)),
                std::net::IpAddr::V6(_) => None,
            })
            .collect(),
        addrs6: w
            .addrs
            .iter()
            .filter_map(|&(a, l)| match a {
                std::net::IpAddr::V6(a) => Some((a, l)),
                std::net::IpAddr::V4(_) => None,
            })
            .collect(),
    }
}

/// Routes of the file by (table, prefix), checked for syntax and duplicates.
fn wanted_routes(r: &Routing) -> Result<BTreeMap<(TableId, IpPrefix), RouteTarget>, RoutingError> {
    let mut out = BTreeMap::new();
    for rt in &r.routes {
        let (table, prefix, target) = rt
            .spec()
            .map_err(|e| within(format!("[[route]] {}", rt.prefix), e))?;
        if out.insert((table, prefix), target).is_some() {
            return Err(RoutingError::Invalid(format!(
                "[[route]] {prefix} in table {table} is configured twice"
            )));
        }
    }
    Ok(out)
}

/// Label entries of the file by (label, eos), checked for syntax and duplicates.
fn wanted_labels(r: &Routing) -> Result<BTreeMap<(u32, bool), LabelSpec>, RoutingError> {
    let mut out = BTreeMap::new();
    for l in &r.labels {
        let spec = l.spec().map_err(|e| within(l.what(), e))?;
        if out.insert((l.label, l.eos), spec).is_some() {
            return Err(RoutingError::Invalid(format!(
                "{} is configured twice",
                l.what()
            )));
        }
    }
    Ok(out)
}

/// Static neighbours of the file by (interface, address) → MAC.
fn wanted_neighbors(r: &Routing) -> Result<BTreeMap<(String, IpAddr), [u8; 6]>, RoutingError> {
    let mut out = BTreeMap::new();
    for n in &r.neighbors {
        let ctx =
            |e: RoutingError| within(format!("[[neighbor]] {} on {}", n.address, n.interface), e);
        let ip: IpAddr = n
            .address
            .trim()
            .parse()
            .map_err(|_| ctx(SpecError::IpAny(n.address.clone()).into()))?;
        let mac = parse_mac(&n.mac).map_err(|e| ctx(e.into()))?;
        if out.insert((n.interface.clone(), ip), mac).is_some() {
            return Err(ctx(RoutingError::Invalid("configured twice".into())));
        }
    }
    Ok(out)
}

fn router_id(r: &Routing) -> Result<Option<Ipv4Addr>, RoutingError> {
    r.router
        .router_id
        .as_deref()
        .map(parse_ip)
        .transpose()
        .map_err(|e| within("[router] router_id".into(), e))
}

/// Applies the routing configuration to a fresh router: one interface per port
/// (ifIndex = position + 1), sub-interfaces after them, then neighbours, routes and
/// labels. Any error names the section and leaves the daemon unstarted.
pub fn apply(r: &Routing, ports: &[PortInfo], ctl: &mut RouterControl) -> Result<(), RoutingError> {
    neighbor_aging(r)?;
    if let Some(order) = route_preference(r)? {
        ctl.set_route_preference(&order)
            .map_err(RoutingError::Preference)?;
    }
    ctl.set_router_id(router_id(r)?);
    for &t in &r.router.tables {
        if t != 0 {
            ctl.table_add(t)
                .map_err(|e| within("[router] tables".into(), e))?;
        }
    }
    for v in &r.vrfs {
        ctl.vrf_add(&v.name, v.table)
            .map_err(|e| within(format!("[[vrf]] {}", v.name), e))?;
    }
    let ifaces = wanted_ifaces(r, ports)?;
    // Ports' own interfaces first, in port order, then sub-interfaces in file order.
    for (k, p) in ports.iter().enumerate() {
        let iface = make_iface(k as u32 + 1, &p.name, &ifaces[&p.name], ports);
        ctl.add_interface(iface)
            .map_err(|e| within(format!("[[interface]] {}", p.name), e))?;
    }
    let subs = r.interfaces.iter().filter(|i| i.parent.is_some());
    for (ifindex, i) in (ports.len() as u32 + 1..).zip(subs) {
        let iface = make_iface(ifindex, &i.name, &ifaces[&i.name], ports);
        ctl.add_interface(iface)
            .map_err(|e| within(format!("[[interface]] {}", i.name), e))?;
    }
    for ((ifname, ip), mac) in wanted_neighbors(r)? {
        let ctx = |e: RoutingError| within(format!("[[neighbor]] {ip} on {ifname}"), e);
        let ix = spec::ifindex(ctl, &ifname).map_err(|e| ctx(e.into()))?;
        ctl.set_configured_neighbor(ix, ip, mac)
            .map_err(|e| ctx(e.into()))?;
    }
    for ((table, prefix), target) in wanted_routes(r)? {
        let ctx = |e: RoutingError| within(format!("[[route]] {prefix}"), e);
        let kind = spec::resolve_route(ctl, &target).map_err(|e| ctx(e.into()))?;
        ctl.route_add(table, prefix, kind)
            .map_err(|e| ctx(e.into()))?;
    }
    for ((label, eos), s) in wanted_labels(r)? {
        spec::install_label(ctl, RouteSource::Config, label, eos, &s)
            .map_err(|e| within(format!("[[label]] {label} {}", eos_word(eos)), e))?;
    }
    for p in &r.pws {
        let ctx = |e: RoutingError| within(format!("[[pw]] {}", p.name), e);
        let pw = p.pw(ctl).map_err(ctx)?;
        ctl.pw_add(RouteSource::Config, &p.name, pw)
            .map_err(|e| ctx(e.into()))?;
    }
    Ok(())
}

mod reload;
pub use reload::{Changes, ReloadSummary, reload};

#[cfg(test)]
mod tests;
