//! What the netlink learner takes from one netlink message, in the router's terms:
//! the output of [`super::decode`] and the input of the learner.

use std::net::IpAddr;

use fib::IpPrefix;

/// One fact from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// RTM_NEWLINK: a link exists with this state.
    Link(Link),
    /// RTM_DELLINK.
    LinkGone {
        /// Kernel ifindex.
        ifindex: u32,
    },
    /// RTM_NEWADDR / RTM_DELADDR of an IPv4 or IPv6 address.
    Addr {
        /// Added (true) or removed.
        add: bool,
        /// Kernel ifindex.
        ifindex: u32,
        /// The address.
        addr: IpAddr,
        /// Its prefix length.
        len: u8,
    },
    /// RTM_NEWNEIGH / RTM_DELNEIGH of an IPv4 or IPv6 neighbour. `mac` is `Some`
    /// while the neighbour is usable (REACHABLE, STALE, DELAY, PROBE, PERMANENT,
    /// NOARP with a link-layer address), `None` when it is gone (RTM_DELNEIGH,
    /// FAILED, INCOMPLETE, no link-layer address).
    Neigh {
        /// Kernel ifindex.
        ifindex: u32,
        /// The neighbour's address.
        addr: IpAddr,
        /// Its MAC while usable.
        mac: Option<[u8; 6]>,
    },
    /// RTM_NEWROUTE / RTM_DELROUTE of an IPv4 or IPv6 unicast route. `route` is `None` for
    /// a deletion.
    Route {
        /// The kernel's routing table (RTA_TABLE, else rtm_table).
        table: u32,
        /// Destination.
        prefix: IpPrefix,
        /// RTA_PRIORITY (the metric; 0 when absent). The kernel holds one route
        /// per (table, prefix, metric); the lowest forwards.
        metric: u32,
        /// What it does, or `None` when deleted.
        route: Option<Target>,
    },
    /// RTM_NEWROUTE / RTM_DELROUTE of an AF_MPLS route: the incoming label.
    Label {
        /// The incoming label.
        label: u32,
        /// Next hops (their `labels` are the outgoing stack; empty = pop), or
        /// `None` when deleted.
        route: Option<Vec<NextHop>>,
    },
    /// RTM_NEWNEXTHOP / RTM_DELNEXTHOP: a nexthop object.
    Nexthop {
        /// NHA_ID.
        id: u32,
        /// What it is, or `None` when deleted.
        nh: Option<NexthopObject>,
    },
}

/// A link's state as RTM_NEWLINK tells it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Link {
    /// Kernel ifindex.
    pub ifindex: u32,
    /// IFLA_IFNAME.
    pub name: String,
    /// IFF_UP (administratively up).
    pub up: bool,
    /// IFF_LOWER_UP (the device has carrier).
    pub carrier: bool,
    /// IFLA_MTU (0 when absent).
    pub mtu: u32,
    /// IFLA_ADDRESS when it is a MAC.
    pub mac: Option<[u8; 6]>,
    /// A VRF device's table (IFLA_INFO_KIND "vrf", IFLA_VRF_TABLE).
    pub vrf_table: Option<u32>,
    /// IFLA_MASTER: the device it is enslaved to (a VRF, a bridge, a bond).
    pub master: Option<u32>,
}

/// What an IPv4 route does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Forward over these next hops (one, or several with weights).
    Paths(Vec<NextHop>),
    /// Forward as nexthop object `id` says (RTA_NH_ID).
    NexthopId(u32),
    /// RTN_BLACKHOLE: drop silently.
    Blackhole,
    /// RTN_UNREACHABLE: drop, ICMP host unreachable.
    Unreachable,
    /// RTN_PROHIBIT: drop, ICMP administratively prohibited.
    Prohibit,
}

/// One next hop of a route, an MPLS route or a nexthop object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHop {
    /// RTA_GATEWAY (IPv4) or RTA_VIA (IPv4 or IPv6); `None` for a directly
    /// connected (device) route.
    pub gateway: Option<IpAddr>,
    /// RTA_OIF / rtnh_ifindex.
    pub ifindex: Option<u32>,
    /// Relative weight, 1..=256 (rtnh_hops + 1).
    pub weight: u16,
    /// RTNH_F_ONLINK: the gateway is on the link even if no subnet covers it.
    pub onlink: bool,
    /// Labels pushed (MPLS encap, or RTA_NEWDST of an MPLS route), outermost
    /// first.
    pub labels: Vec<u32>,
}

/// A nexthop object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NexthopObject {
    /// A single next hop.
    One(NextHop),
    /// A group: (member id, weight 1..=256).
    Group(Vec<(u32, u16)>),
    /// NHA_BLACKHOLE.
    Blackhole,
}

/// Why a message was not turned into a [`Change`] although it is of a kind the
/// learner follows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes do not parse as the message they claim to be.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// Message kind.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A prefix length beyond the family's.
    #[error("prefix length {0} out of range")]
    BadPrefixLen(u8),
}
