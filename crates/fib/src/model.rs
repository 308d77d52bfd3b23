//! The route data model the control thread speaks: prefixes, paths, routes,
//! interfaces, and the errors that reject bad input.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Routing table id (Linux `RT_TABLE_*` / VRF table). Table 0 always exists.
pub type TableId = u32;

/// Most out-labels one path may impose (VPP allows 12 per imposition object).
pub const MAX_LABELS: usize = 12;
/// Most paths in one route (ECMP width).
pub const MAX_PATHS: usize = 64;
/// Largest MPLS label value (20 bits, RFC 3032 §2.1).
pub const MAX_LABEL_VALUE: u32 = (1 << 20) - 1;

/// Why the FIB refused an update. The FIB is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FibError {
    /// A prefix length above the family's bits (32 or 128): the length given and
    /// the family's bits.
    #[error("prefix length {0} is longer than {1}")]
    PrefixLen(u8, u8),
    /// Address bits set beyond the prefix length.
    #[error("{addr}/{len} has host bits set")]
    HostBits {
        /// The address given.
        addr: IpAddr,
        /// The prefix length given.
        len: u8,
    },
    /// Text that is not `a.b.c.d/len` (or `x:y::z/len` where IPv6 is taken).
    #[error("cannot parse prefix {0:?}")]
    Parse(String),
    /// No table with this id.
    #[error("unknown table {0}")]
    UnknownTable(TableId),
    /// The table exists already.
    #[error("table {0} exists")]
    TableExists(TableId),
    /// Routes of another table resolve their next hops in this one.
    #[error("table {0} is in use: routes of table {1} resolve next hops in it")]
    TableInUse(TableId, TableId),
    /// Table 0 cannot be removed.
    #[error("table 0 cannot be removed")]
    DefaultTable,
    /// No route for this prefix in this table.
    #[error("no route {0} in table {1}")]
    NoSuchRoute(crate::IpPrefix, TableId),
    /// A path names an interface the FIB does not know.
    #[error("unknown interface {0}")]
    UnknownInterface(u32),
    /// No neighbour entry for this address on this interface.
    #[error("no neighbour {1} on interface {0}")]
    UnknownNeighbor(u32, IpAddr),
    /// The interface still carries adjacencies or routes.
    #[error("interface {0} is in use")]
    InterfaceInUse(u32),
    /// A next hop that cannot be one (unspecified, multicast, broadcast, loopback).
    #[error("invalid next hop {0}")]
    InvalidNextHop(IpAddr),
    /// A link-local IPv6 next hop or an attached path needs an interface.
    #[error("next hop {0} needs an interface")]
    NeedsInterface(IpAddr),
    /// An attached path without an interface.
    #[error("attached path without an interface")]
    AttachedWithoutInterface,
    /// No paths at all.
    #[error("route has no paths")]
    NoPaths,
    /// More than [`MAX_PATHS`] paths.
    #[error("{0} paths, at most {MAX_PATHS}")]
    TooManyPaths(usize),
    /// A path with weight 0 or above 65535.
    #[error("weight {0} out of range 1..=65535")]
    Weight(u32),
    /// More than [`MAX_LABELS`] out-labels.
    #[error("{0} out-labels, at most {MAX_LABELS}")]
    TooManyLabels(usize),
    /// A label value above 2^20 - 1.
    #[error("label {0} does not fit in 20 bits")]
    LabelValue(u32),
    /// The route needs a result (a path list of its own) and the FIB holds its
    /// limit of them ([`crate::MAX_RESULTS`] or [`crate::Fib::set_result_limit`]).
    #[error("the FIB holds its limit of {0} distinct results (path lists)")]
    ResultsFull(usize),
    /// A next-hop table on a path whose next hop is not a recursive gateway.
    #[error("a next-hop table needs a gateway without an interface")]
    ViaTableNeedsRecursive,
}

/// An IPv4 prefix with no host bits set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv4Prefix {
    addr: u32,
    len: u8,
}

/// Network mask for a prefix length `len <= 32`.
#[inline]
pub(crate) fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    }
}

impl Ipv4Prefix {
    /// `addr/len`; fails on `len > 32` or host bits set.
    pub fn new(addr: Ipv4Addr, len: u8) -> Result<Self, FibError> {
        if len > 32 {
            return Err(FibError::PrefixLen(len, 32));
        }
        let a = u32::from(addr);
        if a & !mask(len) != 0 {
            return Err(FibError::HostBits {
                addr: addr.into(),
                len,
            });
        }
        Ok(Self { addr: a, len })
    }

    /// `addr/len` with the host bits cleared; fails only on `len > 32`.
    pub fn new_truncated(addr: Ipv4Addr, len: u8) -> Result<Self, FibError> {
        if len > 32 {
            return Err(FibError::PrefixLen(len, 32));
        }
        Ok(Self {
            addr: u32::from(addr) & mask(len),
            len,
        })
    }

    /// The host prefix `addr/32`.
    pub fn host(addr: Ipv4Addr) -> Self {
        Self {
            addr: u32::from(addr),
            len: 32,
        }
    }

    /// The network address.
    pub fn addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.addr)
    }

    /// The network address as a host-order integer.
    pub fn addr_u32(&self) -> u32 {
        self.addr
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// True for the default route `0.0.0.0/0`.
    pub fn is_default(&self) -> bool {
        self.len == 0
    }

    /// The last address inside the prefix.
    pub fn last(&self) -> u32 {
        self.addr | !mask(self.len)
    }

    /// True if `a` is inside the prefix.
    pub fn contains(&self, a: u32) -> bool {
        a & mask(self.len) == self.addr
    }
}

impl fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}

impl FromStr for Ipv4Prefix {
    type Err = FibError;
    fn from_str(s: &str) -> Result<Self, FibError> {
        let (a, l) = split_prefix(s)?;
        Ipv4Prefix::new(a, l)
    }
}

/// `addr/len` as its address and length, unchecked against each other.
pub(crate) fn split_prefix<A: FromStr>(s: &str) -> Result<(A, u8), FibError> {
    let bad = || FibError::Parse(s.to_owned());
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, l.parse().map_err(|_| bad())?))
}

/// Where a path sends packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Via {
    /// An IPv4 gateway. Without an interface it is resolved recursively through the
    /// table; with one it is a neighbour on that interface (onlink).
    Gateway(Ipv4Addr),
    /// An IPv6 gateway for IPv4 traffic (RFC 5549 / RFC 8950, Linux `RTA_VIA`); needs
    /// an interface, the neighbour is found by ND.
    Gateway6(Ipv6Addr),
    /// Directly attached: the destination itself is the neighbour (needs ARP per
    /// destination: the data plane "gleans").
    Attached,
}

/// One path of a route.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    /// The next hop.
    pub via: Via,
    /// Output interface (ifindex-like id), if fixed.
    pub ifindex: Option<u32>,
    /// ECMP weight, 1..=65535.
    pub weight: u32,
    /// Out-labels to impose, top of stack first (empty: plain IPv4). Through a
    /// recursive gateway they go under the labels of the route that reaches it.
    pub labels: Vec<u32>,
    /// The table a recursive gateway is looked up in (VPP's `next-hop-table`;
    /// `None`: the route's own). An L3VPN route in a VRF names the remote PE's
    /// loopback here in the global table, with its VPN label in `labels`.
    pub via_table: Option<TableId>,
}

impl Path {
    /// A gateway resolved recursively through the table.
    pub fn gateway(gw: Ipv4Addr) -> Self {
        Self {
            via: Via::Gateway(gw),
            ifindex: None,
            weight: 1,
            labels: Vec::new(),
            via_table: None,
        }
    }

    /// A gateway that is a neighbour on `ifindex`.
    pub fn gateway_on(gw: Ipv4Addr, ifindex: u32) -> Self {
        Self {
            ifindex: Some(ifindex),
            ..Self::gateway(gw)
        }
    }

    /// An IPv6 gateway on `ifindex` (RFC 5549).
    pub fn gateway6(gw: Ipv6Addr, ifindex: u32) -> Self {
        Self {
            via: Via::Gateway6(gw),
            ifindex: Some(ifindex),
            weight: 1,
            labels: Vec::new(),
            via_table: None,
        }
    }

    /// Directly attached on `ifindex`.
    pub fn attached(ifindex: u32) -> Self {
        Self {
            via: Via::Attached,
            ifindex: Some(ifindex),
            weight: 1,
            labels: Vec::new(),
            via_table: None,
        }
    }

    /// Sets the weight.
    pub fn with_weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// Sets the out-label stack (top first).
    pub fn with_labels(mut self, labels: &[u32]) -> Self {
        self.labels = labels.to_vec();
        self
    }

    /// Resolves the (recursive) gateway in `table` instead of the route's own.
    pub fn in_table(mut self, table: TableId) -> Self {
        self.via_table = Some(table);
        self
    }
}

/// What a route does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RouteKind {
    /// Forward over these paths (ECMP when several).
    Paths(Vec<Path>),
    /// Silently discard (`blackhole`).
    Blackhole,
    /// Discard and send ICMP unreachable (`unreachable`).
    Unreachable,
    /// Discard and send ICMP administratively prohibited (`prohibit`).
    Prohibit,
    /// Addressed to this router: punt (`local`).
    Local,
    /// A connected subnet on an interface: neighbours are resolved per destination.
    Connected {
        /// The interface.
        ifindex: u32,
    },
}

/// An interface the FIB forwards out of: its L2 identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Source MAC address.
    pub mac: [u8; 6],
    /// IP MTU in bytes.
    pub mtu: u16,
    /// 802.1Q VLAN id for a sub-interface.
    pub vlan: Option<u16>,
}

/// What the data plane does with a packet, per ECMP bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Action {
    /// No route matched (or every path is unresolved): drop, ICMP net unreachable.
    NoRoute = 0,
    /// Rewrite with the adjacency and send.
    Forward = 1,
    /// Blackhole: drop silently.
    Drop = 2,
    /// Drop, ICMP unreachable.
    Unreachable = 3,
    /// Drop, ICMP administratively prohibited.
    Prohibit = 4,
    /// To this router: punt.
    Local = 5,
    /// Connected subnet: resolve the destination (ARP) on the interface.
    Glean = 6,
}

impl Action {
    pub(crate) fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Forward,
            2 => Self::Drop,
            3 => Self::Unreachable,
            4 => Self::Prohibit,
            5 => Self::Local,
            6 => Self::Glean,
            _ => Self::NoRoute,
        }
    }
}

/// An adjacency as the data plane reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adjacency {
    /// The neighbour's IPv4 address (None for an IPv6 next hop), for ARP while the
    /// adjacency is incomplete.
    pub neighbor: Option<Ipv4Addr>,
    /// The neighbour's IPv6 address (None for an IPv4 next hop), for neighbour
    /// solicitation while the adjacency is incomplete.
    pub neighbor6: Option<std::net::Ipv6Addr>,
    /// Output interface.
    pub ifindex: u32,
    /// False while the neighbour's MAC is unknown (needs ARP/ND): punt or drop.
    pub complete: bool,
    /// Neighbour MAC (zero when incomplete).
    pub dst_mac: [u8; 6],
    /// Our MAC on the interface.
    pub src_mac: [u8; 6],
    /// 802.1Q tag to push.
    pub vlan: Option<u16>,
    /// IP MTU of the interface.
    pub mtu: u16,
}

pub(crate) fn check_paths(paths: &[Path]) -> Result<(), FibError> {
    if paths.is_empty() {
        return Err(FibError::NoPaths);
    }
    if paths.len() > MAX_PATHS {
        return Err(FibError::TooManyPaths(paths.len()));
    }
    for p in paths {
        if p.weight == 0 || p.weight > 65535 {
            return Err(FibError::Weight(p.weight));
        }
        if p.labels.len() > MAX_LABELS {
            return Err(FibError::TooManyLabels(p.labels.len()));
        }
        if let Some(&l) = p.labels.iter().find(|&&l| l > MAX_LABEL_VALUE) {
            return Err(FibError::LabelValue(l));
        }
        if p.via_table.is_some() && (p.ifindex.is_some() || matches!(p.via, Via::Attached)) {
            return Err(FibError::ViaTableNeedsRecursive);
        }
        match p.via {
            Via::Gateway(gw) => {
                if gw.is_unspecified() || gw.is_multicast() || gw.is_broadcast() || gw.is_loopback()
                {
                    return Err(FibError::InvalidNextHop(IpAddr::V4(gw)));
                }
            }
            Via::Gateway6(gw) => {
                if gw.is_unspecified() || gw.is_multicast() || gw.is_loopback() {
                    return Err(FibError::InvalidNextHop(IpAddr::V6(gw)));
                }
                // A link-local address names a neighbour only with its link.
                if p.ifindex.is_none() && gw.is_unicast_link_local() {
                    return Err(FibError::NeedsInterface(IpAddr::V6(gw)));
                }
            }
            Via::Attached => {
                if p.ifindex.is_none() {
                    return Err(FibError::AttachedWithoutInterface);
                }
            }
        }
    }
    Ok(())
}
