//! The routing part of the configuration file: interfaces, neighbours, routes and
//! labels, and how they are applied to a [`RouterControl`].
//!
//! ```toml
//! [router]
//! router_id = "10.0.0.1"          # ICMP source for interfaces without an address
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
//! lookup_table = 0
//! ```

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::Deserialize;

use dataplane::router::{Interface, RouterControl, RouterError};
use fib::{Ipv4Prefix, Path, RouteKind};

/// `[router]`.
#[derive(Debug, Clone, Default, Deserialize)]
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
}

/// `[[interface]]`.
#[derive(Debug, Clone, Deserialize)]
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
    /// Admin state.
    #[serde(default = "yes")]
    pub up: bool,
}

fn yes() -> bool {
    true
}

/// `[[neighbor]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborSection {
    /// Interface name.
    pub interface: String,
    /// IPv4 address.
    pub address: String,
    /// MAC `aa:bb:cc:dd:ee:ff`.
    pub mac: String,
}

/// A path of a route or label.
#[derive(Debug, Clone, Deserialize)]
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
}

fn one() -> u32 {
    1
}

/// `[[route]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    /// `a.b.c.d/len`.
    pub prefix: String,
    /// Table.
    #[serde(default)]
    pub table: u32,
    /// Paths (ECMP when several).
    #[serde(default)]
    pub via: Vec<ViaSection>,
    /// Special route instead of paths.
    #[serde(default)]
    pub kind: Option<String>,
}

/// `[[label]]`.
#[derive(Debug, Clone, Deserialize)]
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
    /// Pop and look up the IPv4 payload in this table.
    #[serde(default)]
    pub lookup_table: Option<u32>,
    /// `drop`, `punt` or `pop` (non-eos) instead of paths.
    #[serde(default)]
    pub action: Option<String>,
    /// `uniform` (default) or `pipe`.
    #[serde(default)]
    pub ttl_mode: Option<String>,
}

/// Everything routing-related of the file.
#[derive(Debug, Clone, Default)]
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
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || format!("bad MAC address {s:?} (want aa:bb:cc:dd:ee:ff)");
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut m = [0u8; 6];
    for (o, p) in m.iter_mut().zip(parts) {
        if p.len() != 2 {
            return Err(bad());
        }
        *o = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(m)
}

/// Parses an IPv4 address.
pub fn parse_ip(s: &str) -> Result<Ipv4Addr, String> {
    Ipv4Addr::from_str(s.trim()).map_err(|_| format!("bad IPv4 address {s:?}"))
}

/// Parses `a.b.c.d/len` (host bits must be clear).
pub fn parse_prefix(s: &str) -> Result<Ipv4Prefix, String> {
    Ipv4Prefix::from_str(s.trim()).map_err(|e| format!("bad prefix {s:?}: {e}"))
}

/// Parses `a.b.c.d/len` as an interface address (host bits allowed).
pub fn parse_addr_len(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("address {s:?} needs a prefix length (a.b.c.d/len)"))?;
    let len: u8 = l
        .parse()
        .map_err(|_| format!("bad prefix length in {s:?}"))?;
    if len > 32 {
        return Err(format!("prefix length {len} > 32 in {s:?}"));
    }
    Ok((parse_ip(a)?, len))
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

/// Applies the routing configuration to a fresh router: one interface per port
/// (ifIndex = position + 1), sub-interfaces after them, then addresses, neighbours,
/// routes and labels. Any error names the section and leaves the daemon unstarted.
pub fn apply(r: &Routing, ports: &[PortInfo], ctl: &mut RouterControl) -> Result<(), String> {
    if let Some(id) = &r.router.router_id {
        ctl.set_router_id(Some(
            parse_ip(id).map_err(|e| format!("[router] router_id: {e}"))?,
        ));
    }
    for &t in &r.router.tables {
        if t != 0 {
            ctl.table_add(t)
                .map_err(|e| format!("[router] tables: {e}"))?;
        }
    }
    let mut seen = HashSet::new();
    for i in &r.interfaces {
        if !seen.insert(i.name.as_str()) {
            return Err(format!("[[interface]] {} is configured twice", i.name));
        }
    }
    let mut next_ifindex = ports.len() as u32 + 1;
    // Ports' own interfaces first, in port order.
    for (k, p) in ports.iter().enumerate() {
        let sec = r
            .interfaces
            .iter()
            .find(|i| i.name == p.name && i.parent.is_none());
        let iface = make_iface(k as u32 + 1, p, None, sec)?;
        ctl.add_interface(iface)
            .map_err(|e| format!("[[interface]] {}: {e}", p.name))?;
    }
    for i in &r.interfaces {
        match (&i.parent, i.vlan) {
            (None, None) => {
                if !ports.iter().any(|p| p.name == i.name) {
                    return Err(format!(
                        "[[interface]] {}: no port of that name (a sub-interface needs parent and vlan)",
                        i.name
                    ));
                }
            }
            (Some(parent), Some(vlan)) => {
                let p = ports.iter().find(|p| &p.name == parent).ok_or_else(|| {
                    format!("[[interface]] {}: parent {parent:?} is not a port", i.name)
                })?;
                let iface = make_iface(next_ifindex, p, Some((i.name.clone(), vlan)), Some(i))?;
                next_ifindex += 1;
                ctl.add_interface(iface)
                    .map_err(|e| format!("[[interface]] {}: {e}", i.name))?;
            }
            _ => {
                return Err(format!(
                    "[[interface]] {}: a sub-interface needs both parent and vlan",
                    i.name
                ));
            }
        }
    }
    let ifindex = |ctl: &RouterControl, name: &str| -> Result<u32, String> {
        ctl.iface_by_name(name)
            .map(|i| i.ifindex)
            .map_err(|e| e.to_string())
    };
    for n in &r.neighbors {
        let ctx = |e: String| format!("[[neighbor]] {} on {}: {e}", n.address, n.interface);
        let ix = ifindex(ctl, &n.interface).map_err(ctx)?;
        let ip = parse_ip(&n.address).map_err(ctx)?;
        let mac = parse_mac(&n.mac).map_err(ctx)?;
        ctl.set_neighbor(ix, ip, mac)
            .map_err(|e| ctx(e.to_string()))?;
    }
    for rt in &r.routes {
        let ctx = |e: String| format!("[[route]] {}: {e}", rt.prefix);
        let prefix = parse_prefix(&rt.prefix).map_err(ctx)?;
        let kind = route_kind(rt, ctl).map_err(ctx)?;
        ctl.route_add(rt.table, prefix, kind)
            .map_err(|e| ctx(e.to_string()))?;
    }
    for l in &r.labels {
        let ctx = |e: String| {
            format!(
                "[[label]] {} {}: {e}",
                l.label,
                if l.eos { "eos" } else { "non-eos" }
            )
        };
        let action = label_action(l, ctl).map_err(ctx)?;
        ctl.label_add(l.label, l.eos, action)
            .map_err(|e| ctx(e.to_string()))?;
    }
    Ok(())
}

fn make_iface(
    ifindex: u32,
    p: &PortInfo,
    sub: Option<(String, u16)>,
    sec: Option<&InterfaceSection>,
) -> Result<Interface, String> {
    let name = sub.as_ref().map_or_else(|| p.name.clone(), |s| s.0.clone());
    let mut addrs = Vec::new();
    if let Some(s) = sec {
        for a in &s.addresses {
            addrs.push(parse_addr_len(a).map_err(|e| format!("[[interface]] {name}: {e}"))?);
        }
    }
    Ok(Interface {
        ifindex,
        name,
        port: p.id,
        vlan: sub.map(|s| s.1),
        mac: p.mac,
        mtu: sec.and_then(|s| s.mtu).unwrap_or(1500),
        up: sec.is_none_or(|s| s.up),
        table: sec.map_or(0, |s| s.table),
        addrs,
    })
}

fn route_kind(rt: &RouteSection, ctl: &mut RouterControl) -> Result<RouteKind, String> {
    match (&rt.kind, rt.via.is_empty()) {
        (Some(_), false) => Err("give either kind or via, not both".into()),
        (Some(k), true) => match k.as_str() {
            "blackhole" | "drop" => Ok(RouteKind::Blackhole),
            "unreachable" => Ok(RouteKind::Unreachable),
            "prohibit" => Ok(RouteKind::Prohibit),
            "local" => Ok(RouteKind::Local),
            k => Err(format!(
                "kind {k:?}: use blackhole, unreachable, prohibit or local"
            )),
        },
        (None, true) => Err("needs via = [...] or kind".into()),
        (None, false) => {
            let mut paths = Vec::new();
            for v in &rt.via {
                let ix = match &v.interface {
                    Some(n) => Some(ctl.iface_by_name(n).map_err(|e| e.to_string())?.ifindex),
                    None => None,
                };
                let mut p = match (&v.gateway, ix) {
                    (Some(g), Some(ix)) => Path::gateway_on(parse_ip(g)?, ix),
                    (Some(g), None) => Path::gateway(parse_ip(g)?),
                    (None, Some(ix)) => Path::attached(ix),
                    (None, None) => return Err("a via needs a gateway or an interface".into()),
                };
                if !v.out_labels.is_empty() {
                    mpls::validate_out_labels(&v.out_labels, fib::MAX_LABELS)
                        .map_err(|e| e.to_string())?;
                    p = p.with_labels(&v.out_labels);
                }
                paths.push(p.with_weight(v.weight));
            }
            Ok(RouteKind::Paths(paths))
        }
    }
}

fn label_action(l: &LabelSection, ctl: &mut RouterControl) -> Result<mpls::LabelAction, String> {
    let ttl_mode = match l.ttl_mode.as_deref() {
        None | Some("uniform") => mpls::TtlMode::Uniform,
        Some("pipe") => mpls::TtlMode::pipe(),
        Some(m) => return Err(format!("ttl_mode {m:?}: use uniform or pipe")),
    };
    let n_forms = usize::from(!l.via.is_empty())
        + usize::from(l.lookup_table.is_some())
        + usize::from(l.action.is_some());
    if n_forms != 1 {
        return Err("give exactly one of via, lookup_table or action".into());
    }
    if let Some(t) = l.lookup_table {
        return Ok(mpls::LabelAction::Ip4Lookup { table: t, ttl_mode });
    }
    if let Some(a) = &l.action {
        return match a.as_str() {
            "drop" => Ok(mpls::LabelAction::Drop),
            "punt" => Ok(mpls::LabelAction::Punt),
            "pop" => Ok(mpls::LabelAction::Pop { ttl_mode }),
            a => Err(format!("action {a:?}: use drop, punt or pop")),
        };
    }
    let mut paths = Vec::new();
    for v in &l.via {
        let (Some(g), Some(ifn)) = (&v.gateway, &v.interface) else {
            return Err("a label path needs gateway and interface".into());
        };
        let ix = ctl.iface_by_name(ifn).map_err(|e| e.to_string())?.ifindex;
        let adj = ctl
            .adjacency(ix, parse_ip(g)?)
            .map_err(|e: RouterError| e.to_string())?;
        paths.push(mpls::NextHop::new(adj, &v.out_labels));
    }
    Ok(mpls::LabelAction::Forward { paths, ttl_mode })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers() {
        assert_eq!(parse_mac("02:00:00:00:00:0a").unwrap(), [2, 0, 0, 0, 0, 10]);
        assert!(parse_mac("02:00:00:00:00").is_err());
        assert!(parse_mac("zz:00:00:00:00:00").is_err());
        assert_eq!(
            parse_addr_len("10.0.0.1/24").unwrap(),
            (Ipv4Addr::new(10, 0, 0, 1), 24)
        );
        assert!(parse_addr_len("10.0.0.1").is_err());
        assert!(parse_addr_len("10.0.0.1/33").is_err());
        assert!(parse_prefix("10.0.0.1/24").is_err(), "host bits set");
        assert!(parse_prefix("10.0.0.0/24").is_ok());
    }
}
