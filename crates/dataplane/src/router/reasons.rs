//! Why a packet left the forwarding path: every drop and punt has a name and a
//! counter (`dpctl show errors`). Label-table drops keep the names of
//! [`mpls::DropReason`] and have their own counters.

/// Why the core dropped a packet: one of its own reasons or the label table's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Discard {
    /// A reason of the core (`dpctl show errors`, "drops").
    Core(DropReason),
    /// A label-table reason ("mpls drops").
    Mpls(mpls::DropReason),
}

impl Discard {
    /// The counter name.
    pub fn name(self) -> &'static str {
        match self {
            Discard::Core(r) => r.name(),
            Discard::Mpls(r) => r.name(),
        }
    }
}

/// Drop reasons. The names are the counter names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// Frame shorter than an Ethernet header (or a VLAN tag).
    EthTruncated,
    /// Destination MAC is neither ours, broadcast nor multicast.
    NotOurMac,
    /// VLAN id with no sub-interface.
    UnknownVlan,
    /// Received on a port with no interface, or the interface is down.
    InterfaceDown,
    /// EtherType we do not handle.
    UnknownEthertype,
    /// Multi-segment frame (the pools hold whole frames; should not happen).
    MultiSegment,
    /// IPv4 header shorter than 20 bytes or than its IHL.
    Ip4Truncated,
    /// IPv4 version field is not 4.
    Ip4BadVersion,
    /// IHL below 5.
    Ip4BadIhl,
    /// Total length larger than the frame or smaller than the header.
    Ip4BadLength,
    /// Header checksum wrong.
    Ip4BadChecksum,
    /// TTL expired (ICMP time exceeded sent when allowed).
    Ip4TtlExpired,
    /// No route (ICMP net unreachable sent when allowed).
    Ip4NoRoute,
    /// Unreachable route (ICMP host unreachable sent when allowed).
    Ip4Unreachable,
    /// Prohibit route (ICMP administratively prohibited sent when allowed).
    Ip4Prohibit,
    /// Blackhole route.
    Ip4Blackhole,
    /// Source or destination address is martian (0/8, 127/8, multicast source, ...).
    Ip4Martian,
    /// Packet larger than the next hop's MTU with DF set (ICMP frag-needed sent when allowed).
    Ip4MtuExceeded,
    /// Packet larger than the next hop's MTU with DF clear (no fragmentation here).
    Ip4FragmentationNeeded,
    /// Labelled packet larger than the next hop's MTU after switching (RFC 3032
    /// §3: never fragmented here; "fragmentation needed" goes along the LSP when
    /// the IPv4 payload has DF set).
    MplsMtuExceeded,
    /// IPv4 multicast destination (not forwarded).
    Ip4Multicast,
    /// IPv6 header shorter than 40 bytes.
    Ip6Truncated,
    /// IPv6 version field is not 6.
    Ip6BadVersion,
    /// IPv6 payload length past the end of the frame.
    Ip6BadLength,
    /// Hop limit expired (ICMPv6 time exceeded sent when allowed).
    Ip6HopLimitExpired,
    /// No IPv6 route (ICMPv6 no route sent when allowed).
    Ip6NoRoute,
    /// Unreachable IPv6 route (ICMPv6 no route sent when allowed).
    Ip6Unreachable,
    /// Prohibit IPv6 route (ICMPv6 administratively prohibited sent when allowed).
    Ip6Prohibit,
    /// IPv6 blackhole route.
    Ip6Blackhole,
    /// Source or destination that no packet may carry: a multicast or loopback
    /// source, an unspecified or loopback destination (RFC 4291 §2.5.2-2.5.3).
    Ip6Martian,
    /// A link-local source that would leave its link (ICMPv6 beyond scope sent
    /// when allowed; RFC 4291 §2.5.6).
    Ip6BeyondScope,
    /// A link-local destination that is not the router's: never forwarded.
    Ip6LinkLocal,
    /// IPv6 multicast destination the router does not take (not forwarded).
    Ip6Multicast,
    /// IPv6 packet larger than the next hop's MTU (never fragmented on the way:
    /// ICMPv6 packet too big sent, RFC 8200 §5).
    Ip6TooBig,
    /// Neighbour discovery that is invalid (RFC 4861 §7.1: hop limit not 255,
    /// bad checksum, zero-length option, ...) or a solicitation for an address
    /// that is not the router's.
    NdIgnored,
    /// Neighbour not resolved yet (ARP request sent, rate-limited) and the packet
    /// cannot be held: longer than the hold queue keeps, or holding is off.
    NeighborIncomplete,
    /// Neighbour not resolved yet and its hold queue (or the worker's) is full.
    NeighborHoldFull,
    /// Held for a neighbour that did not resolve in time.
    NeighborHoldTimeout,
    /// Adjacency id the FIB no longer knows (route changed under the packet).
    StaleAdjacency,
    /// Not enough headroom to push labels or headers.
    NoHeadroom,
    /// ICMP error suppressed by the rate limit.
    IcmpRateLimited,
    /// ICMP error not sent: about an ICMP error, a fragment, broadcast or multicast.
    IcmpSuppressed,
    /// Local delivery of something the dataplane does not answer and nobody takes.
    LocalUnhandled,
    /// ARP that is malformed, not Ethernet/IPv4, or not for us.
    ArpIgnored,
    /// Punt queue full.
    PuntQueueFull,
    /// The device refused the packet on transmit.
    TxFull,
    /// Sent to a port this worker has no transmit queue on (no such device).
    NoTxPort,
    /// Punt of the control class (routing protocols, ARP, ND) over the worker's
    /// punt policer rate.
    PuntPolicedControl,
    /// Punt of the other class (anything else for the router) over the worker's
    /// punt policer rate.
    PuntPolicedOther,
    /// A pseudowire's remote PE has no route (or no forwarding one).
    PwDown,
    /// A pseudowire's frame over the MTU of where it goes (the core link's, or
    /// the attachment circuit's).
    PwMtuExceeded,
    /// A pseudowire's payload without the control word it should start with
    /// (RFC 4385: first nibble 0), or shorter than an Ethernet header.
    PwBadPayload,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 52] = [
        DropReason::EthTruncated,
        DropReason::NotOurMac,
        DropReason::UnknownVlan,
        DropReason::InterfaceDown,
        DropReason::UnknownEthertype,
        DropReason::MultiSegment,
        DropReason::Ip4Truncated,
        DropReason::Ip4BadVersion,
        DropReason::Ip4BadIhl,
        DropReason::Ip4BadLength,
        DropReason::Ip4BadChecksum,
        DropReason::Ip4TtlExpired,
        DropReason::Ip4NoRoute,
        DropReason::Ip4Unreachable,
        DropReason::Ip4Prohibit,
        DropReason::Ip4Blackhole,
        DropReason::Ip4Martian,
        DropReason::Ip4MtuExceeded,
        DropReason::Ip4FragmentationNeeded,
        DropReason::MplsMtuExceeded,
        DropReason::Ip4Multicast,
        DropReason::Ip6Truncated,
        DropReason::Ip6BadVersion,
        DropReason::Ip6BadLength,
        DropReason::Ip6HopLimitExpired,
        DropReason::Ip6NoRoute,
        DropReason::Ip6Unreachable,
        DropReason::Ip6Prohibit,
        DropReason::Ip6Blackhole,
        DropReason::Ip6Martian,
        DropReason::Ip6BeyondScope,
        DropReason::Ip6LinkLocal,
        DropReason::Ip6Multicast,
        DropReason::Ip6TooBig,
        DropReason::NdIgnored,
        DropReason::NeighborIncomplete,
        DropReason::NeighborHoldFull,
        DropReason::NeighborHoldTimeout,
        DropReason::StaleAdjacency,
        DropReason::NoHeadroom,
        DropReason::IcmpRateLimited,
        DropReason::IcmpSuppressed,
        DropReason::LocalUnhandled,
        DropReason::ArpIgnored,
        DropReason::PuntQueueFull,
        DropReason::TxFull,
        DropReason::NoTxPort,
        DropReason::PuntPolicedControl,
        DropReason::PuntPolicedOther,
        DropReason::PwDown,
        DropReason::PwMtuExceeded,
        DropReason::PwBadPayload,
    ];
    /// Number of reasons.
    pub const COUNT: usize = Self::ALL.len();

    /// Counter name.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::EthTruncated => "eth_truncated",
            DropReason::NotOurMac => "not_our_mac",
            DropReason::UnknownVlan => "unknown_vlan",
            DropReason::InterfaceDown => "interface_down",
            DropReason::UnknownEthertype => "unknown_ethertype",
            DropReason::MultiSegment => "multi_segment",
            DropReason::Ip4Truncated => "ip4_truncated",
            DropReason::Ip4BadVersion => "ip4_bad_version",
            DropReason::Ip4BadIhl => "ip4_bad_ihl",
            DropReason::Ip4BadLength => "ip4_bad_length",
            DropReason::Ip4BadChecksum => "ip4_bad_checksum",
            DropReason::Ip4TtlExpired => "ip4_ttl_expired",
            DropReason::Ip4NoRoute => "ip4_no_route",
            DropReason::Ip4Unreachable => "ip4_unreachable",
            DropReason::Ip4Prohibit => "ip4_prohibit",
            DropReason::Ip4Blackhole => "ip4_blackhole",
            DropReason::Ip4Martian => "ip4_martian",
            DropReason::Ip4MtuExceeded => "ip4_mtu_exceeded",
            DropReason::Ip4FragmentationNeeded => "ip4_fragmentation_needed",
            DropReason::MplsMtuExceeded => "mpls_mtu_exceeded",
            DropReason::Ip4Multicast => "ip4_multicast",
            DropReason::Ip6Truncated => "ip6_truncated",
            DropReason::Ip6BadVersion => "ip6_bad_version",
            DropReason::Ip6BadLength => "ip6_bad_length",
            DropReason::Ip6HopLimitExpired => "ip6_hop_limit_expired",
            DropReason::Ip6NoRoute => "ip6_no_route",
            DropReason::Ip6Unreachable => "ip6_unreachable",
            DropReason::Ip6Prohibit => "ip6_prohibit",
            DropReason::Ip6Blackhole => "ip6_blackhole",
            DropReason::Ip6Martian => "ip6_martian",
            DropReason::Ip6BeyondScope => "ip6_beyond_scope",
            DropReason::Ip6LinkLocal => "ip6_link_local",
            DropReason::Ip6Multicast => "ip6_multicast",
            DropReason::Ip6TooBig => "ip6_packet_too_big",
            DropReason::NdIgnored => "nd_ignored",
            DropReason::NeighborIncomplete => "neighbor_incomplete",
            DropReason::NeighborHoldFull => "neighbor_hold_full",
            DropReason::NeighborHoldTimeout => "neighbor_hold_timeout",
            DropReason::StaleAdjacency => "stale_adjacency",
            DropReason::NoHeadroom => "no_headroom",
            DropReason::IcmpRateLimited => "icmp_rate_limited",
            DropReason::IcmpSuppressed => "icmp_suppressed",
            DropReason::LocalUnhandled => "local_unhandled",
            DropReason::ArpIgnored => "arp_ignored",
            DropReason::PuntQueueFull => "punt_queue_full",
            DropReason::TxFull => "tx_full",
            DropReason::NoTxPort => "no_tx_port",
            DropReason::PuntPolicedControl => "punt_policed_control",
            DropReason::PuntPolicedOther => "punt_policed_other",
            DropReason::PwDown => "pw_down",
            DropReason::PwMtuExceeded => "pw_mtu_exceeded",
            DropReason::PwBadPayload => "pw_bad_payload",
        }
    }
}

/// Why a packet went to the control plane (the punt queue, then the Linux twin of
/// the interface it arrived on). The policer meters it by its [`PuntClass`]
/// ([`PuntClass::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PuntReason {
    /// IPv4 addressed to the router that the dataplane does not answer itself and
    /// that is not a routing protocol (ICMP other than echo, UDP/TCP to our
    /// addresses).
    Local,
    /// ARP the kernel must see (replies to the router; requests for our addresses
    /// are answered by the dataplane alone).
    Arp,
    /// MPLS router alert or OAM.
    Mpls,
    /// IPv4 routing and control protocols: OSPF, link-local multicast
    /// (224.0.0.0/24), BGP, LDP, BFD, RIP, VRRP, IGMP, PIM.
    Routing,
    /// IPv6 control: neighbour discovery, MLD, link-local multicast, OSPFv3, and
    /// the routing protocols above over IPv6.
    Ip6Control,
    /// Any other IPv6 for the router.
    Ip6Other,
}

impl PuntReason {
    /// Every reason.
    pub const ALL: [PuntReason; 6] = [
        PuntReason::Local,
        PuntReason::Arp,
        PuntReason::Mpls,
        PuntReason::Routing,
        PuntReason::Ip6Control,
        PuntReason::Ip6Other,
    ];
    /// Number of reasons.
    pub const COUNT: usize = Self::ALL.len();
    /// Counter name.
    pub const fn name(self) -> &'static str {
        match self {
            PuntReason::Local => "punt_local",
            PuntReason::Arp => "punt_arp",
            PuntReason::Mpls => "punt_mpls",
            PuntReason::Routing => "punt_routing",
            PuntReason::Ip6Control => "punt_ip6_control",
            PuntReason::Ip6Other => "punt_ip6_other",
        }
    }
}

/// What the punt policer meters on its own, per receiving interface and per
/// worker: a flood of one kind from one host spends its own budget only, never
/// another interface's or another kind's (hellos, BGP/LDP, BFD, ARP/ND).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PuntClass {
    /// Routing hellos and link-local control: OSPF, link-local multicast
    /// (224.0.0.0/24), IGMP, PIM, VRRP, RIP, Babel, LDP discovery.
    Hello,
    /// TCP segments of routing protocols (BGP, LDP) other than a bare SYN:
    /// connections under way.
    Tcp,
    /// A bare TCP SYN to a routing port: a new connection, or a flood.
    Syn,
    /// BFD (UDP 3784, 3785, 4784).
    Bfd,
    /// ARP for the host stack.
    Arp,
    /// IPv6 control: ND, MLD, OSPFv3, link-local multicast.
    Ip6Control,
    /// Everything else for the router (ICMP, UDP/TCP to its addresses, other
    /// IPv6, MPLS OAM).
    Other,
    /// Packets of what the control namespace already runs: TCP connections
    /// it holds, BFD from peers it talks to (see [`super::Sessions`]).
    Established,
}

impl PuntClass {
    /// Every class.
    pub const ALL: [PuntClass; 8] = [
        PuntClass::Hello,
        PuntClass::Tcp,
        PuntClass::Syn,
        PuntClass::Bfd,
        PuntClass::Arp,
        PuntClass::Ip6Control,
        PuntClass::Other,
        PuntClass::Established,
    ];
    /// Number of classes.
    pub const COUNT: usize = Self::ALL.len();

    /// Counter name.
    pub const fn name(self) -> &'static str {
        match self {
            PuntClass::Hello => "hello",
            PuntClass::Tcp => "tcp",
            PuntClass::Syn => "syn",
            PuntClass::Bfd => "bfd",
            PuntClass::Arp => "arp",
            PuntClass::Ip6Control => "ip6_control",
            PuntClass::Other => "other",
            PuntClass::Established => "established",
        }
    }

    /// The class of a frame punted for `reason` (`frame` from its Ethernet
    /// header on).
    pub fn of(reason: PuntReason, frame: &[u8]) -> PuntClass {
        match reason {
            PuntReason::Arp => PuntClass::Arp,
            PuntReason::Ip6Control => PuntClass::Ip6Control,
            PuntReason::Routing => routing_class(frame),
            PuntReason::Local | PuntReason::Mpls | PuntReason::Ip6Other => PuntClass::Other,
        }
    }
}

/// The class of an IPv4 routing-protocol punt.
fn routing_class(frame: &[u8]) -> PuntClass {
    let l3 = match frame.get(12..14) {
        Some([0x81, 0x00]) => 18,
        _ => 14,
    };
    let Some(ip) = frame.get(l3..) else {
        return PuntClass::Hello;
    };
    let hl = usize::from(ip.first().map_or(5, |b| b & 0x0f)) * 4;
    let l4 = ip.get(hl..).unwrap_or(&[]);
    let port = |o: usize| l4.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    match ip.get(9) {
        Some(6) => match l4.get(13) {
            // SYN without ACK
            Some(f) if f & 0x12 == 0x02 => PuntClass::Syn,
            _ => PuntClass::Tcp,
        },
        Some(17)
            if [port(0), port(2)]
                .iter()
                .any(|p| matches!(p, Some(3784 | 3785 | 4784))) =>
        {
            PuntClass::Bfd
        }
        _ => PuntClass::Hello,
    }
}
