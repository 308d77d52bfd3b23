//! Netlink messages to [`Change`]s.
//!
//! Links, addresses, neighbours and routes go through netlink-packet-route. Two
//! things the crate (0.34) does not do are parsed by hand below: nexthop objects
//! (RTM_NEWNEXTHOP/RTM_DELNEXTHOP have no message type there) and the MPLS label
//! stack of an RTA_ENCAP inside an RTA_MULTIPATH next hop (the crate parses it with
//! the route-level encap type, so it comes out as a raw attribute).
//!
//! Nothing here panics on any input: every read is bounds-checked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use fib::Ipv4Prefix;
use netlink_packet_core::{Nla, Parseable};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteLwEnCapType, RouteLwTunnelEncap, RouteMessage,
    RouteMplsIpTunnel, RouteVia,
};

use super::change::{Change, DecodeError, Link, NextHop, NexthopObject, Target};

/// One decoded netlink message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// Something the learner applies.
    Change(Change),
    /// A message of no interest to the router, with the reason.
    Ignored(&'static str),
    /// NLMSG_DONE: the end of a dump.
    Done,
    /// NLMSG_ERROR: the errno (0 is an ack).
    Error(i32),
}

const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_NEWNEIGH: u16 = 28;
const RTM_DELNEIGH: u16 = 29;
const RTM_NEWNEXTHOP: u16 = 104;
const RTM_DELNEXTHOP: u16 = 105;

const AF_UNSPEC: u8 = 0;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const AF_MPLS: u8 = 28;

const IFF_UP: u32 = 1;
const NUD_USABLE: u16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80;
const NTF_PROXY: u8 = 0x08;

const RTN_UNSPEC: u8 = 0;
const RTN_UNICAST: u8 = 1;
const RTN_LOCAL: u8 = 2;
const RTN_BROADCAST: u8 = 3;
const RTN_MULTICAST: u8 = 5;
const RTN_BLACKHOLE: u8 = 6;
const RTN_UNREACHABLE: u8 = 7;
const RTN_PROHIBIT: u8 = 8;
const RTPROT_KERNEL: u8 = 2;
const RT_TABLE_LOCAL: u32 = 255;
const RTM_F_CLONED: u32 = 0x200;
const RTNH_F_ONLINK: u32 = 4;

const LWTUNNEL_ENCAP_MPLS: u16 = 1;
const MPLS_IPTUNNEL_DST: u16 = 1;
const NLA_TYPE_MASK: u16 = 0x3fff;

fn bad(what: &'static str, detail: impl Into<String>) -> DecodeError {
    DecodeError::Malformed {
        what,
        detail: detail.into(),
    }
}

fn crate_err(what: &'static str) -> impl Fn(netlink_packet_core::DecodeError) -> DecodeError {
    move |e| bad(what, e.to_string())
}

fn change(c: Change) -> Result<Msg, DecodeError> {
    Ok(Msg::Change(c))
}

fn read_u16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes(s.try_into().ok()?))
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(s.try_into().ok()?))
}

/// Rounds up to the 4-byte netlink alignment (saturating: the caller clamps).
fn align4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// Decodes every netlink message in `buf` (one datagram, as read from a socket).
/// A message whose length is below a header or beyond the buffer ends the
/// datagram with one `Err`.
pub fn messages(buf: &[u8]) -> Vec<Result<Msg, DecodeError>> {
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let len = read_u32(rest, 0).map_or(0, |l| l as usize);
        if len < NLMSG_HDRLEN || len > rest.len() {
            out.push(Err(bad(
                "netlink message",
                format!("nlmsg_len {len} with {} bytes left", rest.len()),
            )));
            break;
        }
        out.push(message(rest.get(..len).unwrap_or_default()));
        rest = rest.get(align4(len)..).unwrap_or_default();
    }
    out
}

/// Decodes one netlink message (header included; bytes past its nlmsg_len are
/// ignored).
pub fn message(msg: &[u8]) -> Result<Msg, DecodeError> {
    let len = read_u32(msg, 0).map_or(0, |l| l as usize);
    let (Some(kind), Some(payload)) = (read_u16(msg, 4), msg.get(NLMSG_HDRLEN..len)) else {
        return Err(bad(
            "netlink message",
            format!("nlmsg_len {len} with {} bytes", msg.len()),
        ));
    };
    match kind {
        NLMSG_DONE => Ok(Msg::Done),
        NLMSG_ERROR => read_u32(payload, 0)
            .map(|e| Msg::Error((e as i32).saturating_neg()))
            .ok_or_else(|| bad("NLMSG_ERROR", "no errno")),
        RTM_NEWLINK | RTM_DELLINK => link(payload, kind == RTM_NEWLINK),
        RTM_NEWADDR | RTM_DELADDR => address(payload, kind == RTM_NEWADDR),
        RTM_NEWNEIGH | RTM_DELNEIGH => neighbour(payload, kind == RTM_NEWNEIGH),
        RTM_NEWROUTE | RTM_DELROUTE => route(payload, kind == RTM_NEWROUTE),
        RTM_NEWNEXTHOP | RTM_DELNEXTHOP => nexthop(payload, kind == RTM_NEWNEXTHOP),
        _ => Ok(Msg::Ignored("unknown type")),
    }
}

fn link(p: &[u8], new: bool) -> Result<Msg, DecodeError> {
    let m = LinkMessage::parse(p).map_err(crate_err("link"))?;
    let ifindex = m.header.index;
    if !new {
        return change(Change::LinkGone { ifindex });
    }
    let mut l = Link {
        ifindex,
        name: String::new(),
        up: m.header.flags.bits() & IFF_UP != 0,
        mtu: 0,
        mac: None,
    };
    for a in m.attributes {
        match a {
            LinkAttribute::IfName(n) => l.name = n,
            LinkAttribute::Mtu(v) => l.mtu = v,
            LinkAttribute::Address(a) => l.mac = a.as_slice().try_into().ok(),
            _ => {}
        }
    }
    change(Change::Link(l))
}

fn address(p: &[u8], add: bool) -> Result<Msg, DecodeError> {
    match p.first() {
        Some(&AF_INET) => {}
        Some(&AF_INET6) => return Ok(Msg::Ignored("ipv6 address")),
        _ => return Ok(Msg::Ignored("not an ip address")),
    }
    let m = AddressMessage::parse(p).map_err(crate_err("address"))?;
    let len = m.header.prefix_len;
    if len > 32 {
        return Err(DecodeError::BadPrefixLen(len));
    }
    let (mut local, mut addr) = (None, None);
    for a in &m.attributes {
        match a {
            AddressAttribute::Local(IpAddr::V4(a)) => local = Some(*a),
            AddressAttribute::Address(IpAddr::V4(a)) => addr = Some(*a),
            _ => {}
        }
    }
    let addr = local
        .or(addr)
        .ok_or_else(|| bad("address", "no IPv4 IFA_LOCAL or IFA_ADDRESS"))?;
    change(Change::Addr {
        add,
        ifindex: m.header.index,
        addr,
        len,
    })
}

fn neighbour(p: &[u8], new: bool) -> Result<Msg, DecodeError> {
    match p.first() {
        Some(&AF_INET | &AF_INET6) => {}
        _ => return Ok(Msg::Ignored("not an ip neighbour")),
    }
    let m = NeighbourMessage::parse(p).map_err(crate_err("neighbour"))?;
    if m.header.flags.bits() & NTF_PROXY != 0 {
        return Ok(Msg::Ignored("proxy neighbour"));
    }
    // ndm_type is the address's route type: multicast/broadcast/local entries
    // are not neighbours to forward to.
    if matches!(
        u8::from(m.header.kind),
        RTN_LOCAL | RTN_BROADCAST | RTN_MULTICAST
    ) {
        return Ok(Msg::Ignored("not a unicast neighbour"));
    }
    let (mut addr, mut lladdr) = (None, None);
    for a in m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => addr = Some(a.into()),
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(a)) => addr = Some(a.into()),
            NeighbourAttribute::LinkLayerAddress(v) => lladdr = Some(v),
            _ => {}
        }
    }
    let addr = addr.ok_or_else(|| bad("neighbour", "no NDA_DST"))?;
    let usable = new && u16::from(m.header.state) & NUD_USABLE != 0;
    let mac = lladdr
        .filter(|_| usable)
        .and_then(|v| v.as_slice().try_into().ok());
    change(Change::Neigh {
        ifindex: m.header.ifindex,
        addr,
        mac,
    })
}

fn route(p: &[u8], new: bool) -> Result<Msg, DecodeError> {
    let family = match p.first() {
        Some(&f @ (AF_INET | AF_MPLS)) => f,
        Some(&AF_INET6) => return Ok(Msg::Ignored("ipv6 route")),
        _ => return Ok(Msg::Ignored("other route family")),
    };
    let m = RouteMessage::parse(p).map_err(crate_err("route"))?;
    let h = &m.header;
    let kind = u8::from(h.kind);
    let flags = h.flags.bits();
    let attrs = &m.attributes;
    let table = attrs
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(h.table));
    if u8::from(h.protocol) == RTPROT_KERNEL {
        return Ok(Msg::Ignored("kernel-derived"));
    }
    if table == RT_TABLE_LOCAL {
        return Ok(Msg::Ignored("local table"));
    }
    if flags & RTM_F_CLONED != 0 {
        return Ok(Msg::Ignored("cloned"));
    }
    // A deletion may come with type 0 (FRR's FPM sends DELROUTE so).
    let reject = matches!(kind, RTN_BLACKHOLE | RTN_UNREACHABLE | RTN_PROHIBIT);
    let ok_kind = kind == RTN_UNICAST || (!new && kind == RTN_UNSPEC);
    if !(ok_kind || reject && family == AF_INET) {
        return Ok(Msg::Ignored("not unicast"));
    }
    if new && foreign_encap(attrs) {
        return Ok(Msg::Ignored("non-mpls encap"));
    }
    if family == AF_MPLS {
        let label = attrs
            .iter()
            .find_map(|a| match a {
                RouteAttribute::Destination(RouteAddress::Mpls(l)) => Some(l.label),
                _ => None,
            })
            .ok_or_else(|| bad("mpls route", "no RTA_DST label"))?;
        let route = if new {
            Some(paths(attrs, flags).map_err(|d| bad("mpls route", d))?)
        } else {
            None
        };
        return change(Change::Label { label, route });
    }
    let len = h.destination_prefix_length;
    if len > 32 {
        return Err(DecodeError::BadPrefixLen(len));
    }
    let dst = attrs
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Destination(RouteAddress::Inet(d)) => Some(*d),
            _ => None,
        })
        .unwrap_or(Ipv4Addr::UNSPECIFIED);
    let prefix = Ipv4Prefix::new_truncated(dst, len).map_err(|_| DecodeError::BadPrefixLen(len))?;
    let route = if !new {
        None
    } else {
        let nh_id = attrs.iter().find_map(|a| match a {
            RouteAttribute::NhId(id) => Some(*id),
            _ => None,
        });
        Some(match (kind, nh_id) {
            (RTN_BLACKHOLE, _) => Target::Blackhole,
            (RTN_UNREACHABLE, _) => Target::Unreachable,
            (RTN_PROHIBIT, _) => Target::Prohibit,
            (_, Some(id)) => Target::NexthopId(id),
            _ => Target::Paths(paths(attrs, flags).map_err(|d| bad("route", d))?),
        })
    };
    change(Change::Route {
        table,
        prefix,
        route,
    })
}

/// True when the route or one of its next hops has a non-MPLS lightweight
/// tunnel encap, which the router cannot honour.
fn foreign_encap(attrs: &[RouteAttribute]) -> bool {
    attrs.iter().any(|a| match a {
        RouteAttribute::EncapType(t) => {
            !matches!(t, RouteLwEnCapType::None | RouteLwEnCapType::Mpls)
        }
        RouteAttribute::MultiPath(hops) => hops.iter().any(|h| foreign_encap(&h.attributes)),
        _ => false,
    })
}

/// The next hops of a route: RTA_MULTIPATH's, or the single one of RTA_OIF and
/// the gateway attributes.
fn paths(attrs: &[RouteAttribute], rtm_flags: u32) -> Result<Vec<NextHop>, String> {
    let multipath = attrs.iter().find_map(|a| match a {
        RouteAttribute::MultiPath(v) => Some(v),
        _ => None,
    });
    if let Some(hops) = multipath {
        if hops.is_empty() {
            return Err("empty RTA_MULTIPATH".into());
        }
        return hops
            .iter()
            .map(|nh| {
                let ifindex = (nh.interface_index != 0).then_some(nh.interface_index);
                let onlink = u32::from(nh.flags.bits()) & RTNH_F_ONLINK != 0;
                hop(&nh.attributes, ifindex, u16::from(nh.hops) + 1, onlink)
            })
            .collect();
    }
    let oif = attrs.iter().find_map(|a| match a {
        RouteAttribute::Oif(i) => Some(*i),
        _ => None,
    });
    Ok(vec![hop(attrs, oif, 1, rtm_flags & RTNH_F_ONLINK != 0)?])
}

/// One next hop from the attributes of a route or of an rtnexthop.
fn hop(
    attrs: &[RouteAttribute],
    ifindex: Option<u32>,
    weight: u16,
    onlink: bool,
) -> Result<NextHop, String> {
    let mut gateway = None;
    let mut labels = Vec::new();
    let mpls_encap = attrs
        .iter()
        .any(|a| matches!(a, RouteAttribute::EncapType(RouteLwEnCapType::Mpls)));
    for a in attrs {
        match a {
            RouteAttribute::Gateway(RouteAddress::Inet(g))
            | RouteAttribute::Via(RouteVia::Inet(g)) => {
                gateway = Some(IpAddr::V4(*g));
            }
            RouteAttribute::Gateway(RouteAddress::Inet6(g))
            | RouteAttribute::Via(RouteVia::Inet6(g)) => {
                gateway = Some(IpAddr::V6(*g));
            }
            // In an AF_MPLS route the crate reads a 4-byte RTA_GATEWAY as a label.
            RouteAttribute::Gateway(RouteAddress::Mpls(l)) => {
                gateway = Some(IpAddr::V4(Ipv4Addr::from(u32::from(*l))));
            }
            RouteAttribute::NewDestination(stack) => {
                labels = label_stack(stack.iter().map(|&l| u32::from(l)));
            }
            RouteAttribute::Encap(encap) if mpls_encap => labels = encap_labels(encap),
            _ => {}
        }
    }
    if gateway.is_none() && ifindex.is_none() {
        return Err("next hop with neither gateway nor interface".into());
    }
    Ok(NextHop {
        gateway,
        ifindex,
        weight,
        onlink,
        labels,
    })
}

/// The labels of an MPLS RTA_ENCAP.
fn encap_labels(encap: &[RouteLwTunnelEncap]) -> Vec<u32> {
    for e in encap {
        match e {
            RouteLwTunnelEncap::Mpls(RouteMplsIpTunnel::Destination(stack)) => {
                return label_stack(stack.iter().map(|&l| u32::from(l)));
            }
            // Crate gap: inside RTA_MULTIPATH the nested attributes are parsed
            // with the route's encap type (none), so MPLS_IPTUNNEL_DST comes out
            // raw. Read its value by hand.
            RouteLwTunnelEncap::Other(nla) if nla.kind() & NLA_TYPE_MASK == MPLS_IPTUNNEL_DST => {
                let mut raw = vec![0; nla.value_len()];
                nla.emit_value(&mut raw);
                return label_stack_bytes(&raw);
            }
            _ => {}
        }
    }
    Vec::new()
}

/// Labels (20 bits) of label stack entries, outermost first, up to the entry
/// with the bottom-of-stack bit.
fn label_stack(words: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut out = Vec::new();
    for w in words {
        out.push(w >> 12);
        if w & 0x100 != 0 {
            break;
        }
    }
    out
}

/// [`label_stack`] of big-endian 4-byte entries.
fn label_stack_bytes(b: &[u8]) -> Vec<u32> {
    label_stack(
        b.chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])),
    )
}

// ---------------------------------------------------------------------------
// Hand parsing: nexthop objects (netlink-packet-route 0.34 has no
// RTM_NEWNEXTHOP/RTM_DELNEXTHOP). Layout from <linux/nexthop.h>:
// struct nhmsg { u8 family, scope, protocol, resvd; u32 flags } followed by
// attributes; NHA_GROUP is an array of struct nexthop_grp { u32 id; u8 weight
// (weight - 1); u8 resvd1; u16 resvd2 }.
// ---------------------------------------------------------------------------

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
const NHA_ENCAP_TYPE: u16 = 7;
const NHA_ENCAP: u16 = 8;

/// Netlink attributes of a buffer as (type without flag bits, value); an
/// attribute whose length is below its header or beyond the buffer ends the
/// iteration with an error.
struct Attrs<'a>(&'a [u8]);

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<(u16, &'a [u8]), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let len = read_u16(self.0, 0).map_or(0, usize::from);
        match (read_u16(self.0, 2), self.0.get(4..len)) {
            (Some(kind), Some(value)) => {
                self.0 = self.0.get(align4(len)..).unwrap_or_default();
                Some(Ok((kind & NLA_TYPE_MASK, value)))
            }
            _ => {
                let left = self.0.len();
                self.0 = &[];
                Some(Err(format!(
                    "attribute length {len} with {left} bytes left"
                )))
            }
        }
    }
}

fn exact_u32(v: &[u8], name: &str) -> Result<u32, String> {
    match v.try_into() {
        Ok(b) => Ok(u32::from_ne_bytes(b)),
        Err(_) => Err(format!("{name} of {} bytes", v.len())),
    }
}

fn nexthop(p: &[u8], new: bool) -> Result<Msg, DecodeError> {
    nexthop_inner(p, new).map_err(|d| bad("nexthop", d))
}

fn nexthop_inner(p: &[u8], new: bool) -> Result<Msg, String> {
    let (Some(&family), Some(flags), Some(body)) = (p.first(), read_u32(p, 4), p.get(8..)) else {
        return Err("short nhmsg".into());
    };
    let (mut id, mut group, mut blackhole, mut oif, mut gateway) = (None, None, false, None, None);
    let (mut encap_type, mut encap) = (None, None);
    for a in Attrs(body) {
        let (kind, v) = a?;
        match kind {
            NHA_ID => id = Some(exact_u32(v, "NHA_ID")?),
            NHA_GROUP => {
                if v.len() % 8 != 0 {
                    return Err(format!("NHA_GROUP of {} bytes", v.len()));
                }
                let g = v.chunks_exact(8).map(|e| {
                    let id = u32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
                    (id, u16::from(e[4]) + 1)
                });
                group = Some(g.collect::<Vec<_>>());
            }
            NHA_BLACKHOLE => blackhole = true,
            NHA_OIF => oif = Some(exact_u32(v, "NHA_OIF")?),
            NHA_GATEWAY => {
                gateway = Some(match (family, v.len()) {
                    (AF_INET | AF_UNSPEC, 4) => IpAddr::V4(Ipv4Addr::new(v[0], v[1], v[2], v[3])),
                    (AF_INET6 | AF_UNSPEC, 16) => {
                        let b: [u8; 16] = v.try_into().map_err(|_| "NHA_GATEWAY")?;
                        IpAddr::V6(Ipv6Addr::from(b))
                    }
                    (f, n) => return Err(format!("NHA_GATEWAY of {n} bytes in family {f}")),
                });
            }
            NHA_ENCAP_TYPE => {
                let b: [u8; 2] = v.try_into().map_err(|_| "NHA_ENCAP_TYPE not 2 bytes")?;
                encap_type = Some(u16::from_ne_bytes(b));
            }
            NHA_ENCAP => encap = Some(v),
            _ => {}
        }
    }
    let id = id.ok_or("no NHA_ID")?;
    if !new {
        return Ok(Msg::Change(Change::Nexthop { id, nh: None }));
    }
    let nh = if let Some(g) = group {
        if g.is_empty() {
            return Err("empty NHA_GROUP".into());
        }
        NexthopObject::Group(g)
    } else if blackhole {
        NexthopObject::Blackhole
    } else {
        let labels = match (encap_type, encap) {
            (None | Some(0), _) => Vec::new(),
            (Some(LWTUNNEL_ENCAP_MPLS), Some(e)) => {
                let mut labels = Vec::new();
                for a in Attrs(e) {
                    if let (MPLS_IPTUNNEL_DST, v) = a? {
                        labels = label_stack_bytes(v);
                    }
                }
                labels
            }
            (Some(LWTUNNEL_ENCAP_MPLS), None) => Vec::new(),
            (Some(_), _) => return Ok(Msg::Ignored("non-mpls encap")),
        };
        if gateway.is_none() && oif.is_none() {
            return Err("neither NHA_GATEWAY nor NHA_OIF".into());
        }
        NexthopObject::One(NextHop {
            gateway,
            ifindex: oif,
            weight: 1,
            onlink: flags & RTNH_F_ONLINK != 0,
            labels,
        })
    };
    Ok(Msg::Change(Change::Nexthop { id, nh: Some(nh) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // --- A small netlink byte builder, independent of the crate's emitter. ---

    fn pad(mut v: Vec<u8>) -> Vec<u8> {
        v.resize(align4(v.len()), 0);
        v
    }
    /// One attribute (length without padding, value padded).
    fn a(kind: u16, v: &[u8]) -> Vec<u8> {
        let mut out = ((4 + v.len()) as u16).to_ne_bytes().to_vec();
        out.extend(kind.to_ne_bytes());
        out.extend(v);
        pad(out)
    }
    fn a32(kind: u16, v: u32) -> Vec<u8> {
        a(kind, &v.to_ne_bytes())
    }
    fn nest(kind: u16, parts: &[Vec<u8>]) -> Vec<u8> {
        a(kind | 0x8000, &parts.concat())
    }
    fn msg(kind: u16, hdr: &[u8], attrs: &[Vec<u8>]) -> Vec<u8> {
        let body = [pad(hdr.to_vec()), attrs.concat()].concat();
        let mut m = ((16 + body.len()) as u32).to_ne_bytes().to_vec();
        m.extend(kind.to_ne_bytes());
        m.extend([0, 0, 1, 0, 0, 0, 0, 0, 0, 0]); // flags, seq 1, pid 0
        m.extend(body);
        m
    }
    fn v4(s: &str) -> [u8; 4] {
        s.parse::<Ipv4Addr>().unwrap().octets()
    }
    fn v6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }
    /// struct rtmsg.
    fn rt(family: u8, dst_len: u8, table: u8, proto: u8, rtype: u8, flags: u32) -> Vec<u8> {
        let mut h = vec![family, dst_len, 0, 0, table, proto, 0, rtype];
        h.extend(flags.to_ne_bytes());
        h
    }
    /// A BIRD-style IPv4 unicast route header for a /24.
    fn inet(rtype: u8, flags: u32) -> Vec<u8> {
        rt(AF_INET, 24, 254, 12, rtype, flags)
    }
    fn dst() -> Vec<u8> {
        a(1, &v4("10.1.2.0"))
    }
    fn gw(s: &str) -> Vec<u8> {
        a(5, &v4(s))
    }
    fn via(family: u16, addr: &[u8]) -> Vec<u8> {
        a(18, &[&family.to_ne_bytes()[..], addr].concat())
    }
    /// struct rtnexthop and its attributes.
    fn rtnh(flags: u8, hops: u8, ifindex: u32, attrs: &[Vec<u8>]) -> Vec<u8> {
        let attrs = attrs.concat();
        let mut v = ((8 + attrs.len()) as u16).to_ne_bytes().to_vec();
        v.extend([flags, hops]);
        v.extend(ifindex.to_ne_bytes());
        v.extend(attrs);
        v
    }
    /// Label stack entries, TTL 64, S bit on the last.
    fn lse(labels: &[u32]) -> Vec<u8> {
        let n = labels.len();
        let e = labels.iter().enumerate();
        e.flat_map(|(i, l)| (l << 12 | u32::from(i + 1 == n) << 8 | 64).to_be_bytes())
            .collect()
    }
    /// RTA_ENCAP (nested MPLS_IPTUNNEL_DST) then RTA_ENCAP_TYPE = MPLS.
    fn encap(labels: &[u32]) -> Vec<u8> {
        [nest(22, &[a(1, &lse(labels))]), a(21, &1u16.to_ne_bytes())].concat()
    }
    fn nhmsg(family: u8, flags: u32) -> Vec<u8> {
        [&[family, 0, 4, 0][..], &flags.to_ne_bytes()].concat()
    }
    fn ifinfo(ifindex: u32, flags: u32) -> Vec<u8> {
        [
            &[0u8, 0, 1, 0][..],
            &ifindex.to_ne_bytes(),
            &flags.to_ne_bytes(),
            &[0; 4],
        ]
        .concat()
    }
    fn ifaddr(family: u8, len: u8, ifindex: u32) -> Vec<u8> {
        [&[family, len, 0, 0][..], &ifindex.to_ne_bytes()].concat()
    }
    fn ndmsg(family: u8, ifindex: u32, state: u16, flags: u8, ntype: u8) -> Vec<u8> {
        let h = [
            &[family, 0, 0, 0][..],
            &ifindex.to_ne_bytes(),
            &state.to_ne_bytes(),
        ];
        [&h.concat()[..], &[flags, ntype]].concat()
    }
    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn one(b: &[u8]) -> Result<Msg, DecodeError> {
        let mut v = messages(b);
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }
    fn hop(gw: &str, ifindex: u32, weight: u16, labels: &[u32]) -> NextHop {
        NextHop {
            gateway: (!gw.is_empty()).then(|| gw.parse().unwrap()),
            ifindex: (ifindex != 0).then_some(ifindex),
            weight,
            onlink: false,
            labels: labels.to_vec(),
        }
    }
    fn ok(c: Change) -> Result<Msg, DecodeError> {
        Ok(Msg::Change(c))
    }
    fn r(table: u32, p: &str, route: Option<Target>) -> Result<Msg, DecodeError> {
        ok(Change::Route {
            table,
            prefix: p.parse().unwrap(),
            route,
        })
    }
    fn paths(h: Vec<NextHop>) -> Option<Target> {
        Some(Target::Paths(h))
    }
    fn malformed(what: &'static str, detail: &str) -> Result<Msg, DecodeError> {
        Err(DecodeError::Malformed {
            what,
            detail: detail.into(),
        })
    }

    #[test]
    fn single_gateway_route() {
        let prio = a32(6, 32);
        let b = msg(
            24,
            &inet(1, 0),
            &[
                a32(15, 254),
                a(1, &v4("10.1.2.3")),
                prio,
                gw("192.0.2.1"),
                a32(4, 3),
            ],
        );
        assert_eq!(
            one(&b),
            r(254, "10.1.2.0/24", paths(vec![hop("192.0.2.1", 3, 1, &[])]))
        );
    }

    #[test]
    fn device_route_and_default() {
        let b = msg(24, &rt(AF_INET, 24, 254, 4, 1, 0), &[dst(), a32(4, 5)]);
        assert_eq!(
            one(&b),
            r(254, "10.1.2.0/24", paths(vec![hop("", 5, 1, &[])]))
        );
        let b = msg(24, &rt(AF_INET, 0, 254, 4, 1, 0), &[gw("192.0.2.1")]);
        assert_eq!(
            one(&b),
            r(254, "0.0.0.0/0", paths(vec![hop("192.0.2.1", 0, 1, &[])]))
        );
    }

    #[test]
    fn multipath_weights() {
        let mp = [
            rtnh(0, 0, 3, &[gw("192.0.2.1")]),
            rtnh(0, 2, 4, &[gw("198.51.100.1")]),
        ]
        .concat();
        let b = msg(24, &inet(1, 0), &[dst(), a(9, &mp)]);
        let want = vec![hop("192.0.2.1", 3, 1, &[]), hop("198.51.100.1", 4, 3, &[])];
        assert_eq!(one(&b), r(254, "10.1.2.0/24", paths(want)));
    }

    #[test]
    fn multipath_mpls_encap() {
        let mp = [
            rtnh(0, 0, 3, &[gw("192.0.2.1"), encap(&[100])]),
            rtnh(
                0,
                0,
                4,
                &[
                    a(21, &1u16.to_ne_bytes()),
                    gw("198.51.100.1"),
                    nest(22, &[a(1, &lse(&[200]))]),
                ],
            ),
            rtnh(0, 0, 5, &[gw("203.0.113.1"), encap(&[300, 400])]),
        ];
        let b = msg(24, &inet(1, 0), &[dst(), a(9, &mp.concat())]);
        let want = vec![
            hop("192.0.2.1", 3, 1, &[100]),
            hop("198.51.100.1", 4, 1, &[200]),
            hop("203.0.113.1", 5, 1, &[300, 400]),
        ];
        assert_eq!(one(&b), r(254, "10.1.2.0/24", paths(want)));
    }

    #[test]
    fn single_path_mpls_encap_and_via_inet6() {
        let b = msg(
            24,
            &inet(1, 0),
            &[dst(), gw("192.0.2.1"), a32(4, 3), encap(&[16, 17])],
        );
        assert_eq!(
            one(&b),
            r(
                254,
                "10.1.2.0/24",
                paths(vec![hop("192.0.2.1", 3, 1, &[16, 17])])
            )
        );
        // RFC 5549: an IPv4 route via an IPv6 next hop.
        let b = msg(
            24,
            &inet(1, 0),
            &[dst(), via(10, &v6("fe80::1")), a32(4, 2)],
        );
        assert_eq!(
            one(&b),
            r(254, "10.1.2.0/24", paths(vec![hop("fe80::1", 2, 1, &[])]))
        );
        // A label stack without S bit stops at the end; entries past S are dropped.
        assert_eq!(
            label_stack_bytes(&[0, 0x64, 0, 64, 0, 0xc8, 0, 64]),
            vec![6, 12]
        );
        assert_eq!(
            label_stack_bytes(&[0, 0x64, 0x01, 64, 0, 0xc8, 0, 64]),
            vec![6]
        );
    }

    #[test]
    fn onlink_and_reject_types() {
        let b = msg(
            24,
            &inet(1, RTNH_F_ONLINK),
            &[dst(), gw("203.0.113.9"), a32(4, 3)],
        );
        let h = NextHop {
            onlink: true,
            ..hop("203.0.113.9", 3, 1, &[])
        };
        assert_eq!(one(&b), r(254, "10.1.2.0/24", paths(vec![h])));
        let mp = rtnh(4, 0, 3, &[gw("203.0.113.9")]);
        let h = NextHop {
            onlink: true,
            ..hop("203.0.113.9", 3, 1, &[])
        };
        assert_eq!(
            one(&msg(24, &inet(1, 0), &[dst(), a(9, &mp)])),
            r(254, "10.1.2.0/24", paths(vec![h]))
        );
        for (t, want) in [
            (6, Target::Blackhole),
            (7, Target::Unreachable),
            (8, Target::Prohibit),
        ] {
            assert_eq!(
                one(&msg(24, &inet(t, 0), &[dst()])),
                r(254, "10.1.2.0/24", Some(want))
            );
        }
    }

    #[test]
    fn nexthop_id_route() {
        // Compat mode: RTA_NH_ID plus the expanded gateway.
        let b = msg(
            24,
            &inet(1, 0),
            &[dst(), a32(30, 7), gw("192.0.2.1"), a32(4, 3)],
        );
        assert_eq!(one(&b), r(254, "10.1.2.0/24", Some(Target::NexthopId(7))));
    }

    #[test]
    fn ignored_routes() {
        let cases = [
            (rt(AF_INET, 24, 254, 2, 1, 0), "kernel-derived"),
            (rt(AF_INET, 32, 255, 4, 2, 0), "local table"),
            (inet(1, RTM_F_CLONED), "cloned"),
            (inet(3, 0), "not unicast"),
            (inet(2, 0), "not unicast"),
            (inet(5, 0), "not unicast"),
            (rt(AF_INET6, 64, 254, 12, 1, 0), "ipv6 route"),
            (rt(7, 0, 254, 12, 1, 0), "other route family"),
        ];
        for (h, why) in cases {
            assert_eq!(
                one(&msg(24, &h, &[a32(4, 3)])),
                Ok(Msg::Ignored(why)),
                "{why}"
            );
        }
        let b = msg(
            24,
            &inet(1, 0),
            &[dst(), gw("192.0.2.1"), a(21, &2u16.to_ne_bytes())],
        );
        assert_eq!(one(&b), Ok(Msg::Ignored("non-mpls encap")));
    }

    #[test]
    fn table_from_rta_table_and_deletes() {
        let b = msg(
            24,
            &rt(AF_INET, 24, 252, 12, 1, 0),
            &[a32(15, 1000), dst(), gw("192.0.2.1")],
        );
        assert_eq!(
            one(&b),
            r(
                1000,
                "10.1.2.0/24",
                paths(vec![hop("192.0.2.1", 0, 1, &[])])
            )
        );
        let b = msg(24, &rt(AF_INET, 24, 100, 12, 1, 0), &[dst(), a32(4, 1)]);
        assert_eq!(
            one(&b),
            r(100, "10.1.2.0/24", paths(vec![hop("", 1, 1, &[])]))
        );
        let b = msg(25, &inet(1, 0), &[dst(), gw("192.0.2.1"), a32(4, 3)]);
        assert_eq!(one(&b), r(254, "10.1.2.0/24", None));
        // FRR FPM: type 0, only RTA_DST and RTA_PRIORITY.
        let b = msg(25, &rt(AF_INET, 24, 254, 196, 0, 0), &[dst(), a32(6, 20)]);
        assert_eq!(one(&b), r(254, "10.1.2.0/24", None));
        assert_eq!(
            one(&msg(25, &inet(6, 0), &[dst()])),
            r(254, "10.1.2.0/24", None)
        );
    }

    #[test]
    fn bad_routes() {
        let b = msg(24, &rt(AF_INET, 33, 254, 12, 1, 0), &[dst(), a32(4, 3)]);
        assert_eq!(one(&b), Err(DecodeError::BadPrefixLen(33)));
        let detail = "next hop with neither gateway nor interface";
        assert_eq!(
            one(&msg(24, &inet(1, 0), &[dst()])),
            malformed("route", detail)
        );
        let mp = rtnh(0, 0, 0, &[]);
        assert_eq!(
            one(&msg(24, &inet(1, 0), &[dst(), a(9, &mp)])),
            malformed("route", detail)
        );
        // An attribute claiming more bytes than the message has.
        let mut b = msg(24, &inet(1, 0), &[dst(), gw("192.0.2.1")]);
        let at = b.len() - 8;
        b[at..at + 2].copy_from_slice(&40u16.to_ne_bytes());
        assert!(matches!(
            one(&b),
            Err(DecodeError::Malformed { what: "route", .. })
        ));
        // Unknown attributes are skipped.
        let b = msg(24, &inet(1, 0), &[a(200, &[1, 2, 3]), dst(), a32(4, 3)]);
        assert_eq!(
            one(&b),
            r(254, "10.1.2.0/24", paths(vec![hop("", 3, 1, &[])]))
        );
    }

    fn mpls(kind: u16, proto: u8, attrs: &[Vec<u8>]) -> Vec<u8> {
        msg(
            kind,
            &rt(AF_MPLS, 20, 254, proto, 1, 0),
            &[&[a(1, &lse(&[100]))][..], attrs].concat(),
        )
    }

    #[test]
    fn mpls_routes() {
        let b = mpls(
            24,
            196,
            &[a(19, &lse(&[200])), via(2, &v4("192.0.2.1")), a32(4, 3)],
        );
        let swap = Some(vec![hop("192.0.2.1", 3, 1, &[200])]);
        assert_eq!(
            one(&b),
            ok(Change::Label {
                label: 100,
                route: swap
            })
        );
        let b = mpls(24, 193, &[via(2, &v4("192.0.2.1")), a32(4, 3)]);
        let pop = Some(vec![hop("192.0.2.1", 3, 1, &[])]);
        assert_eq!(
            one(&b),
            ok(Change::Label {
                label: 100,
                route: pop
            })
        );
        let mp = [
            rtnh(0, 0, 3, &[a(19, &lse(&[17])), via(2, &v4("192.0.2.1"))]),
            rtnh(
                0,
                0,
                4,
                &[a(19, &lse(&[18, 19])), via(2, &v4("198.51.100.1"))],
            ),
        ];
        let b = mpls(24, 196, &[a(9, &mp.concat())]);
        let ecmp = vec![
            hop("192.0.2.1", 3, 1, &[17]),
            hop("198.51.100.1", 4, 1, &[18, 19]),
        ];
        assert_eq!(
            one(&b),
            ok(Change::Label {
                label: 100,
                route: Some(ecmp)
            })
        );
        // FRR's delete: proto 0, no RTA_VIA.
        let b = mpls(25, 0, &[a(19, &lse(&[200])), a32(4, 3)]);
        assert_eq!(
            one(&b),
            ok(Change::Label {
                label: 100,
                route: None
            })
        );
        let b = msg(24, &rt(AF_MPLS, 20, 254, 196, 1, 0), &[a32(4, 3)]);
        assert_eq!(one(&b), malformed("mpls route", "no RTA_DST label"));
    }

    #[test]
    fn nexthop_objects() {
        let b = msg(
            104,
            &nhmsg(AF_INET, 0),
            &[a32(1, 10), a(6, &v4("192.0.2.1")), a32(5, 3)],
        );
        let one_nh = NexthopObject::One(hop("192.0.2.1", 3, 1, &[]));
        assert_eq!(
            one(&b),
            ok(Change::Nexthop {
                id: 10,
                nh: Some(one_nh)
            })
        );
        let enc = [
            a(7, &1u16.to_ne_bytes()),
            nest(8, &[a(1, &lse(&[100, 200]))]),
        ];
        let b = msg(
            104,
            &nhmsg(AF_INET, RTNH_F_ONLINK),
            &[&[a32(1, 11), a32(5, 3), a(99, &[0])][..], &enc].concat(),
        );
        let h = NextHop {
            onlink: true,
            ..hop("", 3, 1, &[100, 200])
        };
        assert_eq!(
            one(&b),
            ok(Change::Nexthop {
                id: 11,
                nh: Some(NexthopObject::One(h))
            })
        );
        let b = msg(
            104,
            &nhmsg(AF_INET6, 0),
            &[a32(1, 12), a(6, &v6("fe80::1")), a32(5, 2)],
        );
        let h = NexthopObject::One(hop("fe80::1", 2, 1, &[]));
        assert_eq!(
            one(&b),
            ok(Change::Nexthop {
                id: 12,
                nh: Some(h)
            })
        );
        let grp = [
            [10u32.to_ne_bytes(), [0, 0, 0, 0]].concat(),
            [11u32.to_ne_bytes(), [2, 0, 0, 0]].concat(),
        ];
        let b = msg(
            104,
            &nhmsg(AF_UNSPEC, 0),
            &[a32(1, 20), a(2, &grp.concat())],
        );
        let g = NexthopObject::Group(vec![(10, 1), (11, 3)]);
        assert_eq!(
            one(&b),
            ok(Change::Nexthop {
                id: 20,
                nh: Some(g)
            })
        );
        let b = msg(104, &nhmsg(AF_UNSPEC, 0), &[a32(1, 30), a(4, &[])]);
        assert_eq!(
            one(&b),
            ok(Change::Nexthop {
                id: 30,
                nh: Some(NexthopObject::Blackhole)
            })
        );
        let b = msg(105, &nhmsg(AF_INET, 0), &[a32(1, 10)]);
        assert_eq!(one(&b), ok(Change::Nexthop { id: 10, nh: None }));
        // Errors.
        let b = msg(104, &nhmsg(AF_INET, 0), &[a32(5, 3)]);
        assert_eq!(one(&b), malformed("nexthop", "no NHA_ID"));
        let b = msg(104, &nhmsg(AF_INET, 0), &[a32(1, 10)]);
        assert_eq!(
            one(&b),
            malformed("nexthop", "neither NHA_GATEWAY nor NHA_OIF")
        );
        let mut b = msg(104, &nhmsg(AF_INET, 0), &[a32(1, 10), a32(5, 3)]);
        let at = b.len() - 8;
        b[at..at + 2].copy_from_slice(&12u16.to_ne_bytes());
        assert_eq!(
            one(&b),
            malformed("nexthop", "attribute length 12 with 8 bytes left")
        );
        let b = msg(104, &nhmsg(AF_INET, 0), &[a32(1, 10), a(6, &v6("fe80::1"))]);
        assert_eq!(
            one(&b),
            malformed("nexthop", "NHA_GATEWAY of 16 bytes in family 2")
        );
        assert_eq!(
            one(&msg(104, &[2, 0, 0], &[])),
            malformed("nexthop", "short nhmsg")
        );
    }

    #[test]
    fn links() {
        let attrs = [a(3, b"eth0\0"), a32(4, 1500), a(1, &MAC)];
        let b = msg(16, &ifinfo(3, 0x1043), &attrs);
        let l = Link {
            ifindex: 3,
            name: "eth0".into(),
            up: true,
            mtu: 1500,
            mac: Some(MAC),
        };
        assert_eq!(one(&b), ok(Change::Link(l)));
        let b = msg(
            16,
            &ifinfo(4, 0x1002),
            &[a(3, b"tun0\0"), a(1, &[10, 0, 0, 1])],
        );
        let l = Link {
            ifindex: 4,
            name: "tun0".into(),
            up: false,
            mtu: 0,
            mac: None,
        };
        assert_eq!(one(&b), ok(Change::Link(l)));
        assert_eq!(
            one(&msg(17, &ifinfo(3, 0), &attrs)),
            ok(Change::LinkGone { ifindex: 3 })
        );
    }

    #[test]
    fn addresses() {
        let attrs = [
            a(1, &v4("192.0.2.2")),
            a(2, &v4("192.0.2.1")),
            a(3, b"eth0\0"),
        ];
        let b = msg(20, &ifaddr(AF_INET, 24, 3), &attrs);
        let want = |add| {
            ok(Change::Addr {
                add,
                ifindex: 3,
                addr: "192.0.2.1".parse().unwrap(),
                len: 24,
            })
        };
        assert_eq!(one(&b), want(true));
        assert_eq!(
            one(&msg(21, &ifaddr(AF_INET, 24, 3), &attrs[..1])),
            ok(Change::Addr {
                add: false,
                ifindex: 3,
                addr: "192.0.2.2".parse().unwrap(),
                len: 24
            })
        );
        let b = msg(20, &ifaddr(AF_INET6, 64, 3), &[a(1, &v6("2001:db8::1"))]);
        assert_eq!(one(&b), Ok(Msg::Ignored("ipv6 address")));
        let b = msg(20, &ifaddr(AF_INET, 33, 3), &attrs);
        assert_eq!(one(&b), Err(DecodeError::BadPrefixLen(33)));
        let b = msg(20, &ifaddr(AF_INET, 24, 3), &[]);
        assert_eq!(
            one(&b),
            malformed("address", "no IPv4 IFA_LOCAL or IFA_ADDRESS")
        );
    }

    #[test]
    fn neighbours() {
        let attrs = [a(1, &v4("192.0.2.1")), a(2, &MAC)];
        let n = |addr: &str, mac| {
            ok(Change::Neigh {
                ifindex: 3,
                addr: addr.parse().unwrap(),
                mac,
            })
        };
        for (state, mac) in [
            (0x02, Some(MAC)),
            (0x04, Some(MAC)),
            (0x80, Some(MAC)),
            (0x20, None),
            (0x01, None),
        ] {
            assert_eq!(
                one(&msg(28, &ndmsg(AF_INET, 3, state, 0, 1), &attrs)),
                n("192.0.2.1", mac)
            );
        }
        assert_eq!(
            one(&msg(28, &ndmsg(AF_INET, 3, 0x02, 0, 1), &attrs[..1])),
            n("192.0.2.1", None)
        );
        assert_eq!(
            one(&msg(29, &ndmsg(AF_INET, 3, 0x02, 0, 1), &attrs)),
            n("192.0.2.1", None)
        );
        let b = msg(
            28,
            &ndmsg(AF_INET6, 3, 0x04, 0x80, 1),
            &[a(1, &v6("fe80::1")), a(2, &MAC)],
        );
        assert_eq!(one(&b), n("fe80::1", Some(MAC)));
        let b = msg(28, &ndmsg(AF_INET, 3, 0x80, NTF_PROXY, 1), &attrs[..1]);
        assert_eq!(one(&b), Ok(Msg::Ignored("proxy neighbour")));
        let b = msg(28, &ndmsg(7, 3, 0x80, 0x02, 1), &[a(2, &MAC)]);
        assert_eq!(one(&b), Ok(Msg::Ignored("not an ip neighbour")));
        let b = msg(
            28,
            &ndmsg(AF_INET, 3, 0x40, 0, 5),
            &[a(1, &v4("224.0.0.5")), a(2, &MAC)],
        );
        assert_eq!(one(&b), Ok(Msg::Ignored("not a unicast neighbour")));
    }

    #[test]
    fn control_messages_and_datagrams() {
        assert_eq!(one(&msg(3, &0u32.to_ne_bytes(), &[])), Ok(Msg::Done));
        let err = [(-95i32).to_ne_bytes(), [0; 4], [0; 4], [0; 4], [0; 4]].concat();
        assert_eq!(one(&msg(2, &err, &[])), Ok(Msg::Error(95)));
        assert_eq!(one(&msg(2, &[0; 20], &[])), Ok(Msg::Error(0)));
        assert_eq!(one(&msg(2, &[], &[])), malformed("NLMSG_ERROR", "no errno"));
        assert_eq!(one(&msg(1, &[], &[])), Ok(Msg::Ignored("unknown type")));
        assert_eq!(
            one(&msg(18, &ifinfo(0, 0), &[])),
            Ok(Msg::Ignored("unknown type"))
        );
        // FRR's replace frame: DELROUTE + NEWROUTE, then a DONE.
        let del = msg(25, &rt(AF_INET, 24, 254, 196, 0, 0), &[dst()]);
        let new = msg(
            24,
            &rt(AF_INET, 24, 254, 196, 1, 0),
            &[dst(), gw("192.0.2.1")],
        );
        let done = msg(3, &[0; 4], &[]);
        let got = messages(&[del.clone(), new, done].concat());
        let route = paths(vec![hop("192.0.2.1", 0, 1, &[])]);
        assert_eq!(
            got,
            vec![
                r(254, "10.1.2.0/24", None),
                r(254, "10.1.2.0/24", route),
                Ok(Msg::Done)
            ]
        );
        // Truncations end the datagram with one error.
        let short = malformed("netlink message", "nlmsg_len 48 with 47 bytes left");
        assert_eq!(messages(&del[..del.len() - 1]), vec![short]);
        let mut tiny = del.clone();
        tiny[..4].copy_from_slice(&15u32.to_ne_bytes());
        assert_eq!(
            messages(&tiny),
            vec![malformed(
                "netlink message",
                "nlmsg_len 15 with 48 bytes left"
            )]
        );
        let got = messages(&[&del[..], &del[..10]].concat());
        let tail = malformed("netlink message", "nlmsg_len 0 with 10 bytes left");
        assert_eq!(got, vec![r(254, "10.1.2.0/24", None), tail]);
        assert_eq!(messages(&[]), vec![]);
        assert_eq!(
            message(&del[..20]),
            malformed("netlink message", "nlmsg_len 48 with 20 bytes")
        );
    }

    /// One valid message of every shape, for the mutation test.
    fn samples() -> Vec<Vec<u8>> {
        let mp = [
            rtnh(0, 0, 3, &[gw("192.0.2.1"), encap(&[100])]),
            rtnh(4, 2, 4, &[via(10, &v6("fe80::1"))]),
        ];
        let grp = [10u32.to_ne_bytes(), [0, 0, 0, 0]].concat();
        vec![
            msg(
                24,
                &inet(1, 0),
                &[
                    a32(15, 1000),
                    dst(),
                    gw("192.0.2.1"),
                    a32(4, 3),
                    encap(&[16, 17]),
                ],
            ),
            msg(24, &inet(1, 0), &[dst(), a(9, &mp.concat()), a32(30, 7)]),
            mpls(
                24,
                196,
                &[a(
                    9,
                    &rtnh(0, 0, 3, &[a(19, &lse(&[17, 18])), via(2, &v4("192.0.2.1"))]),
                )],
            ),
            msg(
                104,
                &nhmsg(AF_INET, 0),
                &[
                    a32(1, 11),
                    a(6, &v4("192.0.2.1")),
                    a32(5, 3),
                    a(7, &[1, 0]),
                    nest(8, &[a(1, &lse(&[100]))]),
                ],
            ),
            msg(104, &nhmsg(AF_UNSPEC, 0), &[a32(1, 20), a(2, &grp)]),
            msg(
                16,
                &ifinfo(3, 1),
                &[a(3, b"eth0\0"), a32(4, 1500), a(1, &MAC)],
            ),
            msg(
                20,
                &ifaddr(AF_INET, 24, 3),
                &[a(1, &v4("192.0.2.2")), a(2, &v4("192.0.2.1"))],
            ),
            msg(
                28,
                &ndmsg(AF_INET6, 3, 2, 0, 1),
                &[a(1, &v6("fe80::1")), a(2, &MAC)],
            ),
            msg(2, &[0; 20], &[]),
        ]
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = messages(&b);
        }

        #[test]
        fn random_bodies_never_panic(
            kind in proptest::sample::select(vec![2u16, 3, 16, 17, 20, 21, 24, 25, 28, 29, 104, 105]),
            family in proptest::sample::select(vec![0u8, 2, 7, 10, 28]),
            body in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut hdr = body.clone();
            if let Some(f) = hdr.first_mut() {
                *f = family;
            }
            let _ = messages(&msg(kind, &hdr, &[]));
        }

        #[test]
        fn mutations_never_panic(
            which in any::<proptest::sample::Index>(),
            muts in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<proptest::sample::Index>(),
        ) {
            let all = samples();
            let mut b = which.get(&all).clone();
            for (at, v) in muts {
                let n = b.len();
                b[at.index(n)] = v;
            }
            let _ = messages(&b);
            let _ = messages(&b[..cut.index(b.len() + 1)]);
            let _ = messages(&[all.concat(), b].concat());
        }
    }

    #[test]
    fn samples_decode() {
        for s in samples() {
            assert!(
                matches!(one(&s), Ok(Msg::Change(_) | Msg::Error(0))),
                "{:?}",
                messages(&s)
            );
        }
    }
}
