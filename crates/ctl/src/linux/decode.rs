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
const IFF_LOWER_UP: u32 = 1 << 16;
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
        carrier: m.header.flags.bits() & IFF_LOWER_UP != 0,
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
        // A route over a blackhole nexthop has the blackhole's type too: the
        // object decides, so that the route goes when the object does.
        Some(match (kind, nh_id) {
            (_, Some(id)) => Target::NexthopId(id),
            (RTN_BLACKHOLE, _) => Target::Blackhole,
            (RTN_UNREACHABLE, _) => Target::Unreachable,
            (RTN_PROHIBIT, _) => Target::Prohibit,
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
mod tests;
