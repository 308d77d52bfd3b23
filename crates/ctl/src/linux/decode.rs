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

use fib::{IpPrefix, Ipv4Prefix};
use netlink_packet_core::{Nla, Parseable};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{InfoData, InfoVrf, LinkAttribute, LinkInfo, LinkMessage};
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
/// A next hop the kernel keeps but does not use (its link is down, or lost its
/// last address): shown in dumps, revived when the link comes back.
const RTNH_F_DEAD: u32 = 1;

const LWTUNNEL_ENCAP_MPLS: u16 = 1;
const MPLS_IPTUNNEL_DST: u16 = 1;
const NLA_TYPE_MASK: u16 = 0x3fff;

/// The first attribute of `$attrs` matching `$pat`, mapped to `$v`.
macro_rules! find {
    ($attrs:expr, $pat:pat => $v:expr) => {
        $attrs.iter().find_map(|a| match a {
            $pat => Some($v),
            _ => None,
        })
    };
}

fn bad(what: &'static str, detail: impl Into<String>) -> DecodeError {
    DecodeError::Malformed {
        what,
        detail: detail.into(),
    }
}

fn crate_err(what: &'static str) -> impl Fn(netlink_packet_core::DecodeError) -> DecodeError {
    move |e| bad(what, e.to_string())
}

/// What is wrong inside a route's next hops or a nexthop object: the detail of
/// [`DecodeError::Malformed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Fault {
    /// An RTA_MULTIPATH without next hops.
    #[error("empty RTA_MULTIPATH")]
    EmptyMultipath,
    /// A next hop with neither a gateway nor an interface.
    #[error("next hop with neither gateway nor interface")]
    HopWithoutTarget,
    /// An attribute whose length is below its header or beyond the buffer.
    #[error("attribute length {len} with {left} bytes left")]
    AttrLength {
        /// The attribute's length field.
        len: usize,
        /// Bytes left in the buffer.
        left: usize,
    },
    /// An attribute of the wrong size.
    #[error("{name} of {len} bytes")]
    AttrSize {
        /// The attribute.
        name: &'static str,
        /// Its size.
        len: usize,
    },
    /// A nhmsg shorter than its header.
    #[error("short nhmsg")]
    ShortNhmsg,
    /// A gateway whose size does not fit the family.
    #[error("NHA_GATEWAY of {len} bytes in family {family}")]
    GatewaySize {
        /// Its size.
        len: usize,
        /// The nhmsg's family.
        family: u8,
    },
    /// An NHA_ENCAP_TYPE that is not 2 bytes.
    #[error("NHA_ENCAP_TYPE not 2 bytes")]
    EncapTypeSize,
    /// A nexthop object without its id.
    #[error("no NHA_ID")]
    NoId,
    /// A group without members.
    #[error("empty NHA_GROUP")]
    EmptyGroup,
    /// A nexthop object with neither a gateway nor an interface.
    #[error("neither NHA_GATEWAY nor NHA_OIF")]
    NoGatewayNorOif,
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
        vrf_table: None,
        master: None,
    };
    for a in m.attributes {
        match a {
            LinkAttribute::IfName(n) => l.name = n,
            LinkAttribute::Mtu(v) => l.mtu = v,
            LinkAttribute::Address(a) => l.mac = a.as_slice().try_into().ok(),
            LinkAttribute::Controller(m) if m != 0 => l.master = Some(m),
            LinkAttribute::LinkInfo(infos) => {
                for i in infos {
                    if let LinkInfo::Data(InfoData::Vrf(v)) = i {
                        l.vrf_table = v.iter().find_map(|a| match a {
                            InfoVrf::TableId(t) => Some(*t),
                            _ => None,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    change(Change::Link(l))
}

fn address(p: &[u8], add: bool) -> Result<Msg, DecodeError> {
    let v4 = match p.first() {
        Some(&AF_INET) => true,
        Some(&AF_INET6) => false,
        _ => return Ok(Msg::Ignored("not an ip address")),
    };
    let m = AddressMessage::parse(p).map_err(crate_err("address"))?;
    let len = m.header.prefix_len;
    if len > if v4 { 32 } else { 128 } {
        return Err(DecodeError::BadPrefixLen(len));
    }
    let (mut local, mut addr) = (None, None);
    for a in &m.attributes {
        match a {
            AddressAttribute::Local(a) if a.is_ipv4() == v4 => local = Some(*a),
            AddressAttribute::Address(a) if a.is_ipv4() == v4 => addr = Some(*a),
            _ => {}
        }
    }
    let addr = local
        .or(addr)
        .ok_or_else(|| bad("address", "no IFA_LOCAL or IFA_ADDRESS of its family"))?;
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
    if let Some(m) = plain_route(p, new) {
        return m;
    }
    route_general(p, new)
}

const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_PREFSRC: u16 = 7;
const RTA_TABLE: u16 = 15;
const RTMSG_LEN: usize = 12;

/// [`route_general`] for the shape nearly every message of a full table has (an
/// IPv4 route with at most a destination, one gateway, an interface, a metric, a
/// preferred source and a table, each 4 bytes, no flag bits), read in place
/// without the crate's attribute vector: that vector was about a seventh of FPM's
/// per-message cost. `None` for any other shape, which the general decoder then
/// reads; the `plain_route_equals_general` property test holds the two equal.
fn plain_route(p: &[u8], new: bool) -> Option<Result<Msg, DecodeError>> {
    let h = p.get(..RTMSG_LEN)?;
    let (family, dst_len, table8, protocol, kind) = (h[0], h[1], h[4], h[5], h[7]);
    let flags = read_u32(h, 8)?;
    if family != AF_INET || flags & RTNH_F_DEAD != 0 {
        return None;
    }
    let (mut dst, mut oif, mut gateway, mut metric, mut table) = (None, None, None, None, None);
    let mut rest = p.get(RTMSG_LEN..)?;
    while !rest.is_empty() {
        let len = usize::from(read_u16(rest, 0)?);
        let kind = read_u16(rest, 2)?;
        if len != 8 {
            return None;
        }
        let v = read_u32(rest, 4)?;
        let slot = match kind {
            RTA_DST => &mut dst,
            RTA_OIF => &mut oif,
            RTA_GATEWAY => &mut gateway,
            RTA_PRIORITY => &mut metric,
            RTA_TABLE => &mut table,
            RTA_PREFSRC => &mut None,
            _ => return None,
        };
        // The first of repeated attributes counts, as in the general decoder.
        slot.get_or_insert(v);
        rest = rest.get(8..)?;
    }
    let table = table.unwrap_or(u32::from(table8));
    if protocol == RTPROT_KERNEL {
        return Some(Ok(Msg::Ignored("kernel-derived")));
    }
    if table == RT_TABLE_LOCAL {
        return Some(Ok(Msg::Ignored("local table")));
    }
    if flags & RTM_F_CLONED != 0 {
        return Some(Ok(Msg::Ignored("cloned")));
    }
    let reject = matches!(kind, RTN_BLACKHOLE | RTN_UNREACHABLE | RTN_PROHIBIT);
    if !(reject || kind == RTN_UNICAST || (!new && kind == RTN_UNSPEC)) {
        return Some(Ok(Msg::Ignored("not unicast")));
    }
    if dst_len > 32 {
        return Some(Err(DecodeError::BadPrefixLen(dst_len)));
    }
    let target = match kind {
        _ if !new => None,
        RTN_BLACKHOLE => Some(Target::Blackhole),
        RTN_UNREACHABLE => Some(Target::Unreachable),
        RTN_PROHIBIT => Some(Target::Prohibit),
        _ => {
            // RTA_GATEWAY and RTA_DST are in network order; the rest native.
            let gateway = gateway.map(|g| IpAddr::V4(Ipv4Addr::from(u32::from_be(g))));
            if gateway.is_none() && oif.is_none() {
                return Some(Err(bad(
                    "route",
                    "next hop with neither gateway nor interface",
                )));
            }
            Some(Target::Paths(vec![NextHop {
                gateway,
                ifindex: oif,
                weight: 1,
                onlink: flags & RTNH_F_ONLINK != 0,
                labels: Vec::new(),
            }]))
        }
    };
    let dst = Ipv4Addr::from(u32::from_be(dst.unwrap_or(0)));
    let prefix = Ipv4Prefix::new_truncated(dst, dst_len).ok()?.into();
    Some(change(Change::Route {
        table,
        prefix,
        metric: metric.unwrap_or(0),
        route: target,
    }))
}

fn route_general(p: &[u8], new: bool) -> Result<Msg, DecodeError> {
    let family = match p.first() {
        Some(&f @ (AF_INET | AF_INET6 | AF_MPLS)) => f,
        _ => return Ok(Msg::Ignored("other route family")),
    };
    let m = RouteMessage::parse(p).map_err(crate_err("route"))?;
    let h = &m.header;
    let kind = u8::from(h.kind);
    let flags = h.flags.bits();
    let attrs = &m.attributes;
    let table = find!(attrs, RouteAttribute::Table(t) => *t).unwrap_or(u32::from(h.table));
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
    if !(ok_kind || (reject && family != AF_MPLS)) {
        return Ok(Msg::Ignored("not unicast"));
    }
    if new && foreign_encap(attrs) {
        return Ok(Msg::Ignored("non-mpls encap"));
    }
    if family == AF_MPLS {
        let label = find!(attrs, RouteAttribute::Destination(RouteAddress::Mpls(l)) => l.label)
            .ok_or_else(|| bad("mpls route", "no RTA_DST label"))?;
        let route = if new {
            Some(paths(attrs, flags).map_err(|d| bad("mpls route", d.to_string()))?)
        } else {
            None
        };
        return change(Change::Label { label, route });
    }
    let len = h.destination_prefix_length;
    let dst = if family == AF_INET {
        find!(attrs, RouteAttribute::Destination(RouteAddress::Inet(d)) => IpAddr::V4(*d))
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        find!(attrs, RouteAttribute::Destination(RouteAddress::Inet6(d)) => IpAddr::V6(*d))
            .unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED))
    };
    let prefix = IpPrefix::new_truncated(dst, len).map_err(|_| DecodeError::BadPrefixLen(len))?;
    let route = if !new {
        None
    } else {
        let nh_id = find!(attrs, RouteAttribute::NhId(id) => *id);
        Some(match (kind, nh_id) {
            (RTN_BLACKHOLE, _) => Target::Blackhole,
            (RTN_UNREACHABLE, _) => Target::Unreachable,
            (RTN_PROHIBIT, _) => Target::Prohibit,
            (_, Some(id)) => Target::NexthopId(id),
            _ => {
                let hops = paths(attrs, flags).map_err(|d| bad("route", d.to_string()))?;
                if hops.is_empty() {
                    // Every leg dead: the kernel flushes it; it forwards nothing.
                    return Ok(Msg::Ignored("dead route"));
                }
                Target::Paths(hops)
            }
        })
    };
    let metric = find!(attrs, RouteAttribute::Priority(m) => *m).unwrap_or(0);
    change(Change::Route {
        table,
        prefix,
        metric,
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
fn paths(attrs: &[RouteAttribute], rtm_flags: u32) -> Result<Vec<NextHop>, Fault> {
    if let Some(hops) = find!(attrs, RouteAttribute::MultiPath(v) => v) {
        if hops.is_empty() {
            return Err(Fault::EmptyMultipath);
        }
        // Dead legs are not used: the route forwards over the others.
        return hops
            .iter()
            .filter(|nh| u32::from(nh.flags.bits()) & RTNH_F_DEAD == 0)
            .map(|nh| {
                let ifindex = (nh.interface_index != 0).then_some(nh.interface_index);
                let onlink = u32::from(nh.flags.bits()) & RTNH_F_ONLINK != 0;
                hop(&nh.attributes, ifindex, u16::from(nh.hops) + 1, onlink)
            })
            .collect();
    }
    if rtm_flags & RTNH_F_DEAD != 0 {
        return Ok(Vec::new());
    }
    let oif = find!(attrs, RouteAttribute::Oif(i) => *i);
    Ok(vec![hop(attrs, oif, 1, rtm_flags & RTNH_F_ONLINK != 0)?])
}

/// One next hop from the attributes of a route or of an rtnexthop.
fn hop(
    attrs: &[RouteAttribute],
    ifindex: Option<u32>,
    weight: u16,
    onlink: bool,
) -> Result<NextHop, Fault> {
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
        return Err(Fault::HopWithoutTarget);
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
    type Item = Result<(u16, &'a [u8]), Fault>;

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
                Some(Err(Fault::AttrLength { len, left }))
            }
        }
    }
}

fn exact_u32(v: &[u8], name: &'static str) -> Result<u32, Fault> {
    match v.try_into() {
        Ok(b) => Ok(u32::from_ne_bytes(b)),
        Err(_) => Err(Fault::AttrSize { name, len: v.len() }),
    }
}

fn nexthop(p: &[u8], new: bool) -> Result<Msg, DecodeError> {
    nexthop_inner(p, new).map_err(|d| bad("nexthop", d.to_string()))
}

fn nexthop_inner(p: &[u8], new: bool) -> Result<Msg, Fault> {
    let (Some(&family), Some(flags), Some(body)) = (p.first(), read_u32(p, 4), p.get(8..)) else {
        return Err(Fault::ShortNhmsg);
    };
    let (mut id, mut group, mut blackhole, mut oif, mut gateway) = (None, None, false, None, None);
    let (mut encap_type, mut encap) = (None, None);
    for a in Attrs(body) {
        let (kind, v) = a?;
        match kind {
            NHA_ID => id = Some(exact_u32(v, "NHA_ID")?),
            NHA_GROUP => {
                if v.len() % 8 != 0 {
                    return Err(Fault::AttrSize {
                        name: "NHA_GROUP",
                        len: v.len(),
                    });
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
                        let b: [u8; 16] = v.try_into().map_err(|_| Fault::GatewaySize {
                            len: v.len(),
                            family,
                        })?;
                        IpAddr::V6(Ipv6Addr::from(b))
                    }
                    (family, len) => return Err(Fault::GatewaySize { len, family }),
                });
            }
            NHA_ENCAP_TYPE => {
                let b: [u8; 2] = v.try_into().map_err(|_| Fault::EncapTypeSize)?;
                encap_type = Some(u16::from_ne_bytes(b));
            }
            NHA_ENCAP => encap = Some(v),
            _ => {}
        }
    }
    let id = id.ok_or(Fault::NoId)?;
    if !new {
        return Ok(Msg::Change(Change::Nexthop { id, nh: None }));
    }
    let nh = if let Some(g) = group {
        if g.is_empty() {
            return Err(Fault::EmptyGroup);
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
            return Err(Fault::NoGatewayNorOif);
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
    use proptest::collection::vec as pvec;
    use proptest::prelude::*;
    use proptest::sample::{Index, select};

    // A small netlink byte builder, independent of the crate's emitter.
    type R = Result<Msg, DecodeError>;
    type B = Vec<u8>;
    const P: &str = "10.1.2.0/24";
    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn pad(mut v: B) -> B {
        v.resize(align4(v.len()), 0);
        v
    }
    /// One attribute (length without padding, value padded).
    fn a(kind: u16, v: &[u8]) -> B {
        let len = (4 + v.len()) as u16;
        pad([&len.to_ne_bytes()[..], &kind.to_ne_bytes(), v].concat())
    }
    fn a32(kind: u16, v: u32) -> B {
        a(kind, &v.to_ne_bytes())
    }
    fn nest(kind: u16, parts: &[B]) -> B {
        a(kind | 0x8000, &parts.concat())
    }
    /// nlmsghdr (flags 0, seq 1, pid 0) + header struct + attributes.
    fn msg(kind: u16, hdr: &[u8], attrs: &[B]) -> B {
        let body = [pad(hdr.to_vec()), attrs.concat()].concat();
        let len = (16 + body.len()) as u32;
        let h = [len.to_ne_bytes(), [0; 4], 1u32.to_ne_bytes(), [0; 4]].concat();
        [&h[..4], &kind.to_ne_bytes(), &h[6..], &body].concat()
    }
    fn v4(s: &str) -> [u8; 4] {
        s.parse::<Ipv4Addr>().unwrap().octets()
    }
    fn v6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }
    /// struct rtmsg (src_len, tos, scope 0).
    fn rt(family: u8, dst_len: u8, table: u8, proto: u8, rtype: u8, flags: u32) -> B {
        let h = [family, dst_len, 0, 0, table, proto, 0, rtype];
        [&h[..], &flags.to_ne_bytes()].concat()
    }
    /// A BIRD-style IPv4 route header for a /24 in main.
    fn inet(rtype: u8, flags: u32) -> B {
        rt(AF_INET, 24, 254, 12, rtype, flags)
    }
    /// RTM_NEWROUTE, unicast, BIRD, main, 10.1.2.0/24, and `attrs`.
    fn uni(attrs: &[B]) -> B {
        msg(24, &inet(1, 0), &[&[dst()][..], attrs].concat())
    }
    fn dst() -> B {
        a(1, &v4("10.1.2.0"))
    }
    fn gw(s: &str) -> B {
        a(5, &v4(s))
    }
    fn oif(i: u32) -> B {
        a32(4, i)
    }
    fn via(family: u16, addr: &[u8]) -> B {
        a(18, &[&family.to_ne_bytes()[..], addr].concat())
    }
    /// struct rtnexthop and its attributes.
    fn rtnh(flags: u8, hops: u8, ifindex: u32, attrs: &[B]) -> B {
        let attrs = attrs.concat();
        let len = (8 + attrs.len()) as u16;
        let h = [len.to_ne_bytes(), [flags, hops]].concat();
        [h, ifindex.to_ne_bytes().to_vec(), attrs].concat()
    }
    fn multipath(hops: &[B]) -> B {
        a(9, &hops.concat())
    }
    /// Label stack entries, TTL 64, S bit on the last.
    fn lse(labels: &[u32]) -> B {
        let s = |i: usize| u32::from(i + 1 == labels.len()) << 8;
        let e = labels.iter().enumerate();
        let f = |(i, l): (usize, &u32)| (l << 12 | s(i) | 64).to_be_bytes();
        e.flat_map(f).collect()
    }
    /// RTA_ENCAP (nested MPLS_IPTUNNEL_DST) then RTA_ENCAP_TYPE = MPLS.
    fn encap(labels: &[u32]) -> B {
        [nest(22, &[a(1, &lse(labels))]), a(21, &1u16.to_ne_bytes())].concat()
    }
    fn nhmsg(family: u8, flags: u32) -> B {
        [&[family, 0, 4, 0][..], &flags.to_ne_bytes()].concat()
    }
    fn ifinfo(ifindex: u32, flags: u32) -> B {
        let i = [[0, 0, 1, 0], ifindex.to_ne_bytes(), flags.to_ne_bytes()];
        [i.concat(), vec![0; 4]].concat()
    }
    fn ifaddr(family: u8, len: u8, ifindex: u32) -> B {
        [&[family, len, 0, 0][..], &ifindex.to_ne_bytes()].concat()
    }
    fn ndmsg(family: u8, state: u16, flags: u8, ntype: u8) -> B {
        let f = [[family, 0, 0, 0], 3u32.to_ne_bytes()].concat(); // ifindex 3
        [&f[..], &state.to_ne_bytes(), &[flags, ntype]].concat()
    }

    // Expected values.
    fn one(b: &[u8]) -> R {
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
    fn onlink(h: NextHop) -> NextHop {
        NextHop { onlink: true, ..h }
    }
    fn ok(c: Change) -> R {
        Ok(Msg::Change(c))
    }
    fn r(table: u32, p: &str, route: Option<Target>) -> R {
        let prefix = p.parse().unwrap();
        let c = Change::Route {
            table,
            prefix,
            metric: 0,
            route,
        };
        ok(c)
    }
    /// 10.1.2.0/24 in main over `hops`.
    fn p4(hops: Vec<NextHop>) -> R {
        r(254, P, Some(Target::Paths(hops)))
    }
    fn label(label: u32, route: Option<Vec<NextHop>>) -> R {
        ok(Change::Label { label, route })
    }
    fn nho(id: u32, nh: Option<NexthopObject>) -> R {
        ok(Change::Nexthop { id, nh })
    }
    fn malformed(what: &'static str, detail: &str) -> R {
        let detail = detail.into();
        Err(DecodeError::Malformed { what, detail })
    }

    #[test]
    fn single_gateway_route() {
        // Host bits in RTA_DST are cleared; RTA_PRIORITY is the metric.
        let attrs = [a32(15, 254), a(1, &v4("10.1.2.3")), a32(6, 32)];
        let m = msg(
            24,
            &inet(1, 0),
            &[&attrs[..], &[gw("192.0.2.1"), oif(3)]].concat(),
        );
        let mut want = p4(vec![hop("192.0.2.1", 3, 1, &[])]);
        if let Ok(Msg::Change(Change::Route { metric, .. })) = &mut want {
            *metric = 32;
        }
        assert_eq!(one(&m), want);
        // This shape is read in place (see plain_route_equals_general).
        assert_eq!(plain_route(&m[16..], true), Some(want));
    }

    #[test]
    fn device_route_and_default_route() {
        assert_eq!(one(&uni(&[oif(5)])), p4(vec![hop("", 5, 1, &[])]));
        let m = msg(24, &rt(AF_INET, 0, 254, 4, 1, 0), &[gw("192.0.2.1")]);
        let want = Some(Target::Paths(vec![hop("192.0.2.1", 0, 1, &[])]));
        assert_eq!(one(&m), r(254, "0.0.0.0/0", want));
    }

    #[test]
    fn multipath_weights_1_and_3() {
        let (h1, h2) = (
            rtnh(0, 0, 3, &[gw("192.0.2.1")]),
            rtnh(0, 2, 4, &[gw("192.0.2.2")]),
        );
        let mp = multipath(&[h1, h2]);
        let (w1, w2) = (hop("192.0.2.1", 3, 1, &[]), hop("192.0.2.2", 4, 3, &[]));
        let want = vec![w1, w2];
        assert_eq!(one(&uni(&[mp])), p4(want));
    }

    #[test]
    fn multipath_with_mpls_encap() {
        // Encap type before or after RTA_ENCAP.
        let (ty, l200) = (a(21, &1u16.to_ne_bytes()), a(1, &lse(&[200])));
        let mp = multipath(&[
            rtnh(0, 0, 3, &[gw("192.0.2.1"), encap(&[100])]),
            rtnh(0, 0, 4, &[ty, gw("192.0.2.2"), nest(22, &[l200])]),
            rtnh(0, 0, 5, &[gw("192.0.2.3"), encap(&[300, 400])]),
        ]);
        let want = vec![
            hop("192.0.2.1", 3, 1, &[100]),
            hop("192.0.2.2", 4, 1, &[200]),
            hop("192.0.2.3", 5, 1, &[300, 400]),
        ];
        assert_eq!(one(&uni(&[mp])), p4(want));
    }

    #[test]
    fn single_path_mpls_encap() {
        let m = uni(&[gw("192.0.2.1"), oif(3), encap(&[16, 17])]);
        assert_eq!(one(&m), p4(vec![hop("192.0.2.1", 3, 1, &[16, 17])]));
        // Without an S bit the stack runs to the end; entries past it are dropped.
        let (l100, l200) = (100 << 12, 200 << 12);
        assert_eq!(label_stack([l100, l200].into_iter()), vec![100, 200]);
        assert_eq!(label_stack([l100 | 0x100, l200].into_iter()), vec![100]);
    }

    #[test]
    fn via_inet6_gateway() {
        // RFC 5549: an IPv4 route via an IPv6 next hop.
        let m = uni(&[via(10, &v6("fe80::1")), oif(2)]);
        assert_eq!(one(&m), p4(vec![hop("fe80::1", 2, 1, &[])]));
        let m = uni(&[via(2, &v4("192.0.2.1"))]);
        assert_eq!(one(&m), p4(vec![hop("192.0.2.1", 0, 1, &[])]));
    }

    #[test]
    fn onlink_flag() {
        let attrs = [dst(), gw("203.0.113.9"), oif(3)];
        let m = msg(24, &inet(1, RTNH_F_ONLINK), &attrs);
        assert_eq!(one(&m), p4(vec![onlink(hop("203.0.113.9", 3, 1, &[]))]));
        let m = uni(&[multipath(&[rtnh(4, 0, 3, &[gw("203.0.113.9")])])]);
        assert_eq!(one(&m), p4(vec![onlink(hop("203.0.113.9", 3, 1, &[]))]));
    }

    #[test]
    fn reject_routes() {
        let (u, p) = (Target::Unreachable, Target::Prohibit);
        for (t, want) in [(6, Target::Blackhole), (7, u), (8, p)] {
            assert_eq!(one(&msg(24, &inet(t, 0), &[dst()])), r(254, P, Some(want)));
        }
    }

    #[test]
    fn nexthop_id_route() {
        // Compat mode: RTA_NH_ID plus the expanded gateway.
        let m = uni(&[a32(30, 7), gw("192.0.2.1"), oif(3)]);
        assert_eq!(one(&m), r(254, P, Some(Target::NexthopId(7))));
    }

    #[test]
    fn ignored_routes() {
        let cases = [
            (rt(AF_INET, 24, 254, 2, 1, 0), "kernel-derived"),
            (rt(AF_INET, 32, 255, 4, 2, 0), "local table"),
            (inet(1, RTM_F_CLONED), "cloned"),
            (inet(2, 0), "not unicast"),
            (inet(3, 0), "not unicast"),
            (inet(5, 0), "not unicast"),
            (rt(7, 0, 254, 12, 1, 0), "other route family"),
        ];
        for (h, why) in cases {
            assert_eq!(one(&msg(24, &h, &[oif(3)])), Ok(Msg::Ignored(why)), "{why}");
        }
        let m = uni(&[gw("192.0.2.1"), a(21, &2u16.to_ne_bytes())]);
        assert_eq!(one(&m), Ok(Msg::Ignored("non-mpls encap")));
    }

    #[test]
    fn ipv6_routes_decode_as_ipv4_ones_do() {
        let h = rt(AF_INET6, 32, 254, 12, 1, 0);
        let net = a(1, &v6("2001:db8::"));
        let m = msg(24, &h, &[net.clone(), a(5, &v6("fe80::1")), oif(3)]);
        let hops = vec![hop("fe80::1", 3, 1, &[])];
        assert_eq!(one(&m), r(254, "2001:db8::/32", Some(Target::Paths(hops))));
        let m = msg(
            24,
            &rt(AF_INET6, 48, 254, 12, 6, 0),
            &[a(1, &v6("2001:db8:1::"))],
        );
        assert_eq!(one(&m), r(254, "2001:db8:1::/48", Some(Target::Blackhole)));
        let m = msg(25, &h, std::slice::from_ref(&net));
        assert_eq!(one(&m), r(254, "2001:db8::/32", None));
        // Host bits are cleared as for IPv4; a length past 128 is an error.
        let m = msg(24, &h, &[a(1, &v6("2001:db8::1")), oif(3)]);
        let hops = vec![hop("", 3, 1, &[])];
        assert_eq!(one(&m), r(254, "2001:db8::/32", Some(Target::Paths(hops))));
        let m = msg(24, &rt(AF_INET6, 129, 254, 12, 1, 0), &[net, oif(3)]);
        assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(129)));
    }

    #[test]
    fn table_from_rta_table() {
        let dev = || Some(Target::Paths(vec![hop("", 1, 1, &[])]));
        let h = rt(AF_INET, 24, 252, 12, 1, 0);
        assert_eq!(
            one(&msg(24, &h, &[a32(15, 1000), dst(), oif(1)])),
            r(1000, P, dev())
        );
        let h = rt(AF_INET, 24, 100, 12, 1, 0);
        assert_eq!(one(&msg(24, &h, &[dst(), oif(1)])), r(100, P, dev()));
    }

    #[test]
    fn delroute() {
        let m = msg(25, &inet(1, 0), &[dst(), gw("192.0.2.1"), oif(3)]);
        assert_eq!(one(&m), r(254, P, None));
        // FRR FPM: type 0, only RTA_DST and RTA_PRIORITY.
        let m = msg(25, &rt(AF_INET, 24, 254, 196, 0, 0), &[dst(), a32(6, 20)]);
        let mut want = r(254, P, None);
        if let Ok(Msg::Change(Change::Route { metric, .. })) = &mut want {
            *metric = 20;
        }
        assert_eq!(one(&m), want);
        assert_eq!(one(&msg(25, &inet(6, 0), &[dst()])), r(254, P, None));
    }

    #[test]
    fn bad_routes() {
        let m = msg(24, &rt(AF_INET, 33, 254, 12, 1, 0), &[dst(), oif(3)]);
        assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(33)));
        let why = "next hop with neither gateway nor interface";
        assert_eq!(one(&uni(&[])), malformed("route", why));
        let m = uni(&[multipath(&[rtnh(0, 0, 0, &[])])]);
        assert_eq!(one(&m), malformed("route", why));
        let why = "empty RTA_MULTIPATH";
        assert_eq!(one(&uni(&[multipath(&[])])), malformed("route", why));
        // An attribute claiming more bytes than the message has (the crate's error).
        let mut m = uni(&[gw("192.0.2.1")]);
        let at = m.len() - 8;
        m[at..at + 2].copy_from_slice(&40u16.to_ne_bytes());
        let got = format!("{:?}", one(&m));
        assert!(got.starts_with("Err(Malformed { what: \"route\""), "{got}");
        // Unknown attributes are skipped.
        let m = uni(&[a(200, &[1, 2, 3]), oif(3)]);
        assert_eq!(one(&m), p4(vec![hop("", 3, 1, &[])]));
    }

    /// An AF_MPLS route for incoming label 100.
    fn mpls(kind: u16, proto: u8, attrs: &[B]) -> B {
        let attrs = [&[a(1, &lse(&[100]))][..], attrs].concat();
        msg(kind, &rt(AF_MPLS, 20, 254, proto, 1, 0), &attrs)
    }

    #[test]
    fn mpls_swap_pop_ecmp_delete() {
        let via1 = || via(2, &v4("192.0.2.1"));
        let to = |labels: &[u32]| label(100, Some(vec![hop("192.0.2.1", 3, 1, labels)]));
        assert_eq!(
            one(&mpls(24, 196, &[a(19, &lse(&[200])), via1(), oif(3)])),
            to(&[200])
        );
        assert_eq!(one(&mpls(24, 193, &[via1(), oif(3)])), to(&[]));
        assert_eq!(one(&mpls(24, 12, &[gw("192.0.2.1"), oif(3)])), to(&[]));
        let h1 = rtnh(0, 0, 3, &[a(19, &lse(&[17])), via1()]);
        let h2 = rtnh(0, 0, 4, &[a(19, &lse(&[18, 19])), via(2, &v4("192.0.2.2"))]);
        let mp = multipath(&[h1, h2]);
        let (w1, w2) = (
            hop("192.0.2.1", 3, 1, &[17]),
            hop("192.0.2.2", 4, 1, &[18, 19]),
        );
        let want = vec![w1, w2];
        assert_eq!(one(&mpls(24, 196, &[mp])), label(100, Some(want)));
        // FRR's delete: proto 0, no RTA_VIA.
        let m = mpls(25, 0, &[a(19, &lse(&[200])), oif(3)]);
        assert_eq!(one(&m), label(100, None));
        let m = msg(24, &rt(AF_MPLS, 20, 254, 196, 1, 0), &[oif(3)]);
        assert_eq!(one(&m), malformed("mpls route", "no RTA_DST label"));
    }

    #[test]
    fn nexthop_objects() {
        let m4 = |attrs: &[B]| msg(104, &nhmsg(AF_INET, 0), attrs);
        let one_nh = |h| nho(10, Some(NexthopObject::One(h)));
        let m = m4(&[a32(1, 10), a(6, &v4("192.0.2.1")), a32(5, 3)]);
        assert_eq!(one(&m), one_nh(hop("192.0.2.1", 3, 1, &[])));
        // MPLS encap (type after the encap), onlink, an unknown attribute.
        let enc = [nest(8, &[a(1, &lse(&[100, 200]))]), a(7, &[1, 0])];
        let attrs = [&[a32(1, 10), a32(5, 3), a(99, &[0])][..], &enc].concat();
        let m = msg(104, &nhmsg(AF_INET, 4), &attrs);
        assert_eq!(one(&m), one_nh(onlink(hop("", 3, 1, &[100, 200]))));
        let attrs = [a32(1, 10), a(6, &v6("fe80::1")), a32(5, 2)];
        let m = msg(104, &nhmsg(AF_INET6, 0), &attrs);
        assert_eq!(one(&m), one_nh(hop("fe80::1", 2, 1, &[])));
        let grp = [
            10u32.to_ne_bytes(),
            [0; 4],
            11u32.to_ne_bytes(),
            [2, 0, 0, 0],
        ];
        let m = msg(
            104,
            &nhmsg(AF_UNSPEC, 0),
            &[a32(1, 20), a(2, &grp.concat())],
        );
        let g = NexthopObject::Group(vec![(10, 1), (11, 3)]);
        assert_eq!(one(&m), nho(20, Some(g)));
        let m = msg(104, &nhmsg(AF_UNSPEC, 0), &[a32(1, 30), a(4, &[])]);
        assert_eq!(one(&m), nho(30, Some(NexthopObject::Blackhole)));
        assert_eq!(
            one(&msg(105, &nhmsg(AF_INET, 0), &[a32(1, 10)])),
            nho(10, None)
        );
        let m = m4(&[a32(1, 10), a32(5, 3), a(7, &[2, 0])]);
        assert_eq!(one(&m), Ok(Msg::Ignored("non-mpls encap")));
    }

    #[test]
    fn bad_nexthop_objects() {
        let m = |attrs: &[B]| one(&msg(104, &nhmsg(AF_INET, 0), attrs));
        let bad = |why: &str| malformed("nexthop", why);
        assert_eq!(m(&[a32(5, 3)]), bad("no NHA_ID"));
        assert_eq!(m(&[a32(1, 10)]), bad("neither NHA_GATEWAY nor NHA_OIF"));
        let why = "NHA_GATEWAY of 16 bytes in family 2";
        assert_eq!(m(&[a32(1, 10), a(6, &v6("fe80::1"))]), bad(why));
        assert_eq!(m(&[a(1, &[1, 0])]), bad("NHA_ID of 2 bytes"));
        assert_eq!(m(&[a32(1, 1), a(2, &[0; 6])]), bad("NHA_GROUP of 6 bytes"));
        assert_eq!(one(&msg(104, &[2, 0, 0], &[])), bad("short nhmsg"));
        let mut b = msg(104, &nhmsg(AF_INET, 0), &[a32(1, 10), a32(5, 3)]);
        let at = b.len() - 8;
        b[at..at + 2].copy_from_slice(&12u16.to_ne_bytes());
        assert_eq!(one(&b), bad("attribute length 12 with 8 bytes left"));
    }

    #[test]
    fn links() {
        let attrs = [a(3, b"eth0\0"), a32(4, 1500), a(1, &MAC)];
        let link = |ifindex, name: &str, up, mtu, mac| {
            let name = name.to_string();
            ok(Change::Link(Link {
                ifindex,
                name,
                up,
                mtu,
                mac,
                ..Default::default()
            }))
        };
        let m = msg(16, &ifinfo(3, 0x1043), &attrs);
        assert_eq!(one(&m), link(3, "eth0", true, 1500, Some(MAC)));
        // Down, no MTU, a 4-byte (tunnel) address.
        let m = msg(
            16,
            &ifinfo(4, 0x1002),
            &[a(3, b"tun0\0"), a(1, &[10, 0, 0, 1])],
        );
        assert_eq!(one(&m), link(4, "tun0", false, 0, None));
        let gone = ok(Change::LinkGone { ifindex: 3 });
        assert_eq!(one(&msg(17, &ifinfo(3, 0), &attrs)), gone);
        // `ip link add red type vrf table 10`: IFLA_LINKINFO { IFLA_INFO_KIND
        // "vrf", IFLA_INFO_DATA { IFLA_VRF_TABLE 10 } }; a twin enslaved to it
        // carries IFLA_MASTER (0: none).
        let info = nest(18, &[a(1, b"vrf\0"), nest(2, &[a32(1, 10)])]);
        let m = msg(16, &ifinfo(50, 0x1041), &[a(3, b"red\0"), info]);
        let mut red = Link {
            ifindex: 50,
            name: "red".into(),
            up: true,
            vrf_table: Some(10),
            ..Default::default()
        };
        assert_eq!(one(&m), ok(Change::Link(red.clone())));
        let m = msg(16, &ifinfo(3, 0x1043), &[a(3, b"eth0\0"), a32(10, 50)]);
        red = Link {
            ifindex: 3,
            name: "eth0".into(),
            up: true,
            master: Some(50),
            ..Default::default()
        };
        assert_eq!(one(&m), ok(Change::Link(red)));
        let m = msg(16, &ifinfo(3, 0x1043), &[a(3, b"eth0\0"), a32(10, 0)]);
        assert!(matches!(
            one(&m),
            Ok(Msg::Change(Change::Link(Link { master: None, .. })))
        ));
    }

    #[test]
    fn addresses() {
        let add = |add, addr: &str| {
            let addr = addr.parse().unwrap();
            ok(Change::Addr {
                add,
                ifindex: 3,
                addr,
                len: 24,
            })
        };
        // IFA_LOCAL wins over IFA_ADDRESS (the peer on a point-to-point link).
        let attrs = [
            a(1, &v4("192.0.2.2")),
            a(2, &v4("192.0.2.1")),
            a(3, b"eth0\0"),
        ];
        let h = ifaddr(AF_INET, 24, 3);
        assert_eq!(one(&msg(20, &h, &attrs)), add(true, "192.0.2.1"));
        assert_eq!(one(&msg(21, &h, &attrs[..1])), add(false, "192.0.2.2"));
        let m = msg(20, &ifaddr(AF_INET6, 64, 3), &[a(1, &v6("2001:db8::1"))]);
        let want = Change::Addr {
            add: true,
            ifindex: 3,
            addr: "2001:db8::1".parse().unwrap(),
            len: 64,
        };
        assert_eq!(one(&m), ok(want));
        let m = msg(20, &ifaddr(AF_INET, 33, 3), &attrs);
        assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(33)));
        let m = msg(20, &ifaddr(AF_INET6, 129, 3), &[a(1, &v6("2001:db8::1"))]);
        assert_eq!(one(&m), Err(DecodeError::BadPrefixLen(129)));
        // An address of the other family in the message does not count.
        let m = msg(20, &ifaddr(AF_INET6, 64, 3), &[a(1, &v4("192.0.2.1"))]);
        let why = "no IFA_LOCAL or IFA_ADDRESS of its family";
        assert_eq!(one(&m), malformed("address", why));
        assert_eq!(one(&msg(20, &h, &[])), malformed("address", why));
    }

    #[test]
    fn neighbours() {
        let n = |addr: &str, mac| {
            let addr = addr.parse().unwrap();
            ok(Change::Neigh {
                ifindex: 3,
                addr,
                mac,
            })
        };
        let attrs = [a(1, &v4("192.0.2.1")), a(2, &MAC)];
        let usable = [0x02, 0x04, 0x08, 0x10, 0x40, 0x80].map(|s| (s, Some(MAC)));
        for (state, mac) in usable
            .into_iter()
            .chain([(0x20, None), (0x01, None), (0, None)])
        {
            let m = msg(28, &ndmsg(AF_INET, state, 0, 1), &attrs);
            assert_eq!(one(&m), n("192.0.2.1", mac), "{state:#x}");
        }
        let m = msg(28, &ndmsg(AF_INET, 0x02, 0, 1), &attrs[..1]);
        assert_eq!(one(&m), n("192.0.2.1", None));
        let m = msg(29, &ndmsg(AF_INET, 0x02, 0, 1), &attrs);
        assert_eq!(one(&m), n("192.0.2.1", None));
        let attrs6 = [a(1, &v6("fe80::1")), a(2, &MAC)];
        let m = msg(28, &ndmsg(AF_INET6, 0x04, 0x80, 1), &attrs6);
        assert_eq!(one(&m), n("fe80::1", Some(MAC)));
        let m = msg(28, &ndmsg(AF_INET, 0x80, NTF_PROXY, 1), &attrs[..1]);
        assert_eq!(one(&m), Ok(Msg::Ignored("proxy neighbour")));
        let m = msg(28, &ndmsg(7, 0x80, 0x02, 1), &[a(2, &MAC)]);
        assert_eq!(one(&m), Ok(Msg::Ignored("not an ip neighbour")));
        let mcast = [a(1, &v4("224.0.0.5")), a(2, &MAC)];
        let m = msg(28, &ndmsg(AF_INET, 0x40, 0, 5), &mcast);
        assert_eq!(one(&m), Ok(Msg::Ignored("not a unicast neighbour")));
        let m = msg(28, &ndmsg(AF_INET, 0x02, 0, 1), &attrs[1..]);
        assert_eq!(one(&m), malformed("neighbour", "no NDA_DST"));
    }

    #[test]
    fn done_error_and_unknown() {
        assert_eq!(one(&msg(3, &0u32.to_ne_bytes(), &[])), Ok(Msg::Done));
        let err = [(-95i32).to_ne_bytes(), [0; 4], [0; 4], [0; 4], [0; 4]].concat();
        assert_eq!(one(&msg(2, &err, &[])), Ok(Msg::Error(95)));
        assert_eq!(one(&msg(2, &[0; 20], &[])), Ok(Msg::Error(0)));
        assert_eq!(one(&msg(2, &[], &[])), malformed("NLMSG_ERROR", "no errno"));
        assert_eq!(one(&msg(1, &[], &[])), Ok(Msg::Ignored("unknown type")));
        let m = msg(18, &ifinfo(0, 0), &[]);
        assert_eq!(one(&m), Ok(Msg::Ignored("unknown type")));
    }

    #[test]
    fn datagrams() {
        // FRR's replace frame: DELROUTE + NEWROUTE, then a DONE.
        let del = msg(25, &rt(AF_INET, 24, 254, 196, 0, 0), &[dst()]);
        let h = rt(AF_INET, 24, 254, 196, 1, 0);
        let new = msg(24, &h, &[dst(), gw("192.0.2.1")]);
        let got = messages(&[del.clone(), new, msg(3, &[0; 4], &[])].concat());
        let new = p4(vec![hop("192.0.2.1", 0, 1, &[])]);
        let want = vec![r(254, P, None), new, Ok(Msg::Done)];
        assert_eq!(got, want);
        // Truncations end the datagram with one error.
        let why = "nlmsg_len 36 with 35 bytes left";
        assert_eq!(
            messages(&del[..35]),
            vec![malformed("netlink message", why)]
        );
        let mut tiny = del.clone();
        tiny[..4].copy_from_slice(&15u32.to_ne_bytes());
        let why = "nlmsg_len 15 with 36 bytes left";
        assert_eq!(messages(&tiny), vec![malformed("netlink message", why)]);
        let why = "nlmsg_len 36 with 10 bytes left";
        let want = vec![r(254, P, None), malformed("netlink message", why)];
        assert_eq!(messages(&[&del[..], &del[..10]].concat()), want);
        let why = "nlmsg_len 0 with 3 bytes left";
        let want = vec![r(254, P, None), malformed("netlink message", why)];
        assert_eq!(messages(&[&del[..], &[0; 3]].concat()), want);
        assert_eq!(messages(&[]), vec![]);
        let why = "nlmsg_len 36 with 20 bytes";
        assert_eq!(message(&del[..20]), malformed("netlink message", why));
    }

    /// One valid message of most shapes, for the mutation test.
    fn samples() -> Vec<B> {
        let h1 = rtnh(0, 0, 3, &[gw("192.0.2.1"), encap(&[100])]);
        let mp = [h1, rtnh(4, 2, 4, &[via(10, &[0; 16])])];
        let mpls_mp = rtnh(0, 0, 3, &[a(19, &lse(&[17, 18])), via(2, &v4("192.0.2.1"))]);
        let enc = [a(7, &[1, 0]), nest(8, &[a(1, &lse(&[100]))])];
        let nh = [&[a32(1, 11), a(6, &v4("192.0.2.1")), a32(5, 3)][..], &enc].concat();
        let addr = [a(1, &v4("192.0.2.2")), a(2, &v4("192.0.2.1"))];
        let link = [a(3, b"eth0\0"), a32(4, 1500), a(1, &MAC)];
        vec![
            uni(&[a32(15, 1000), gw("192.0.2.1"), oif(3), encap(&[16, 17])]),
            uni(&[multipath(&mp), a32(30, 7)]),
            mpls(24, 196, &[multipath(&[mpls_mp])]),
            msg(104, &nhmsg(AF_INET, 0), &nh),
            msg(
                104,
                &nhmsg(0, 0),
                &[a32(1, 20), a(2, &[10, 0, 0, 0, 0, 0, 0, 0])],
            ),
            msg(16, &ifinfo(3, 1), &link),
            msg(20, &ifaddr(AF_INET, 24, 3), &addr),
            msg(
                28,
                &ndmsg(AF_INET6, 2, 0, 1),
                &[a(1, &v6("fe80::1")), a(2, &MAC)],
            ),
            msg(2, &[0; 20], &[]),
        ]
    }

    #[test]
    fn samples_decode() {
        for s in samples() {
            let got = one(&s);
            assert!(matches!(got, Ok(Msg::Change(_) | Msg::Error(0))), "{got:?}");
        }
    }

    proptest! {
        /// The in-place reader of plain IPv4 routes says exactly what the general
        /// decoder says, for every header and any mix of its attributes (and
        /// others, which it leaves to the general decoder).
        #[test]
        fn plain_route_equals_general(
            new in any::<bool>(),
            dst_len in select(vec![0u8, 8, 24, 31, 32, 33]),
            table in select(vec![0u8, 254, 255, 10]),
            proto in select(vec![2u8, 3, 4, 12, 186]),
            rtype in select(vec![0u8, 1, 2, 5, 6, 7, 8, 9]),
            flags in select(vec![0u32, 4, 0x200, 0x204]),
            attrs in pvec((select(vec![1u16, 4, 5, 6, 7, 15, 12, 30, 0x8001]),
                           select(vec![4usize, 4, 4, 2, 8]), any::<u32>()), 0..7),
        ) {
            let h = rt(AF_INET, dst_len, table, proto, rtype, flags);
            let attrs: Vec<B> = attrs
                .iter()
                .map(|&(k, n, v)| a(k, &[v.to_ne_bytes(), v.to_be_bytes()].concat()[..n]))
                .collect();
            let body = [&h[..], &attrs.concat()].concat();
            if let Some(plain) = plain_route(&body, new) {
                prop_assert_eq!(plain, route_general(&body, new));
            }
        }

        #[test]
        fn random_bytes_never_panic(b in pvec(any::<u8>(), 0..600)) {
            let _ = messages(&b);
        }

        #[test]
        fn random_bodies_never_panic(
            kind in select(vec![2u16, 3, 16, 17, 20, 21, 24, 25, 28, 29, 104, 105]),
            family in select(vec![0u8, 2, 7, 10, 28]),
            mut body in pvec(any::<u8>(), 1..300),
        ) {
            body[0] = family;
            let _ = messages(&msg(kind, &body, &[]));
        }

        #[test]
        fn random_attributes_never_panic(
            which in any::<Index>(),
            attrs in pvec((0u16..80, any::<bool>(), pvec(any::<u8>(), 0..40)), 0..8),
        ) {
            let hdrs = [(16, ifinfo(3, 1)), (20, ifaddr(AF_INET, 24, 3)), (24, inet(1, 0)),
                (24, rt(AF_MPLS, 20, 254, 4, 1, 0)), (28, ndmsg(AF_INET, 2, 0, 1)),
                (104, nhmsg(AF_INET, 0))];
            let (kind, hdr) = which.get(&hdrs);
            let attrs: Vec<B> = attrs.iter().map(|(k, n, v)| {
                // Nested attributes get a valid inner attribute, sometimes.
                if *n { nest(*k, &[a(v.first().map_or(1, |&b| u16::from(b % 8)), v)]) } else { a(*k, v) }
            }).collect();
            let _ = messages(&msg(*kind, hdr, &attrs));
            let _ = messages(&msg(*kind, hdr, &[multipath(&[rtnh(0, 0, 1, &attrs)])]));
        }

        #[test]
        fn mutations_never_panic(
            which in any::<Index>(),
            muts in pvec((any::<Index>(), any::<u8>()), 1..6),
            cut in any::<Index>(),
        ) {
            let all = samples();
            let mut b = which.get(&all).clone();
            for (at, v) in muts {
                let n = at.index(b.len());
                b[n] = v;
            }
            let _ = messages(&b);
            let _ = messages(&b[..cut.index(b.len() + 1)]);
            let _ = messages(&[all.concat(), b].concat());
        }
    }
}
