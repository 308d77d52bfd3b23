//! What the label switch tells the pipeline: small `Copy` values, one per packet.

use wire::EtherType;

/// Why a labelled packet was dropped. Each variant is a counter (`dpctl show errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// No entry for (label, bottom-of-stack).
    NoLabel = 0,
    /// The buffer ends inside the label stack, or before the IPv4 header a pop needs.
    Truncated = 1,
    /// More than [`MAX_STACK_DEPTH`](crate::MAX_STACK_DEPTH) entries in one pass.
    StackTooDeep = 2,
    /// Received label TTL 0 (VPP's "MPLS ttl expired"), or a TTL expiry the router
    /// cannot answer with ICMP (payload not IPv4, ICMP about ICMP error, ...).
    TtlExpired = 3,
    /// Label 3 (implicit null) received: it is only ever signalled (RFC 3032 §2.1).
    ImplicitNullOnWire = 4,
    /// An unassigned special-purpose label (4–6, 8–12; RFC 7274).
    ReservedLabel = 5,
    /// Label 15, the extension label: no extended special-purpose label is
    /// implemented (RFC 7274 §3.1).
    ExtensionLabel = 6,
    /// Entropy label indicator at the bottom of the stack, or not followed by an
    /// entropy label (RFC 6790 §4).
    BadEntropyLabel = 7,
    /// An entry that pops into IPv4 (label 0, `ip4-lookup`) exposed an IPv6
    /// header.
    Ip6UnderIp4 = 8,
    /// A pop to IP exposed a version nibble that is neither 4 nor 6.
    NotIp = 9,
    /// No headroom in front of the frame for the labels to write.
    NoHeadroom = 10,
    /// The entry's action is "drop" (a blackhole configured by the operator).
    Blackhole = 11,
    /// Label 1 (router alert) at the bottom of the stack, which RFC 3032 §2.1
    /// forbids.
    RouterAlertAtBottom = 12,
    /// An entry that pops into IPv6 (label 2, `ip6-lookup`) exposed an IPv4
    /// header.
    Ip4UnderIp6 = 13,
}

impl DropReason {
    /// Every reason, in code order (for counter arrays).
    pub const ALL: [DropReason; 14] = [
        DropReason::NoLabel,
        DropReason::Truncated,
        DropReason::StackTooDeep,
        DropReason::TtlExpired,
        DropReason::ImplicitNullOnWire,
        DropReason::ReservedLabel,
        DropReason::ExtensionLabel,
        DropReason::BadEntropyLabel,
        DropReason::Ip6UnderIp4,
        DropReason::NotIp,
        DropReason::NoHeadroom,
        DropReason::Blackhole,
        DropReason::RouterAlertAtBottom,
        DropReason::Ip4UnderIp6,
    ];

    /// Number of reasons (size of a counter array indexed by `reason as usize`).
    pub const COUNT: usize = Self::ALL.len();

    /// The counter name, as `dpctl show errors` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::NoLabel => "mpls_no_label",
            DropReason::Truncated => "mpls_truncated",
            DropReason::StackTooDeep => "mpls_stack_too_deep",
            DropReason::TtlExpired => "mpls_ttl_expired",
            DropReason::ImplicitNullOnWire => "mpls_implicit_null_on_wire",
            DropReason::ReservedLabel => "mpls_reserved_label",
            DropReason::ExtensionLabel => "mpls_extension_label",
            DropReason::BadEntropyLabel => "mpls_bad_entropy_label",
            DropReason::Ip6UnderIp4 => "mpls_ip6_under_ip4_label",
            DropReason::NotIp => "mpls_not_ip",
            DropReason::NoHeadroom => "mpls_no_headroom",
            DropReason::Blackhole => "mpls_blackhole",
            DropReason::RouterAlertAtBottom => "mpls_router_alert_at_bottom",
            DropReason::Ip4UnderIp6 => "mpls_ip4_under_ip6_label",
        }
    }

    /// Decodes a code stored in the table; unknown codes read as `NoLabel` so the
    /// conversion is total.
    pub(crate) const fn from_code(c: u32) -> DropReason {
        match c {
            1 => DropReason::Truncated,
            2 => DropReason::StackTooDeep,
            3 => DropReason::TtlExpired,
            4 => DropReason::ImplicitNullOnWire,
            5 => DropReason::ReservedLabel,
            6 => DropReason::ExtensionLabel,
            7 => DropReason::BadEntropyLabel,
            8 => DropReason::Ip6UnderIp4,
            9 => DropReason::NotIp,
            10 => DropReason::NoHeadroom,
            11 => DropReason::Blackhole,
            12 => DropReason::RouterAlertAtBottom,
            13 => DropReason::Ip4UnderIp6,
            _ => DropReason::NoLabel,
        }
    }
}

/// Why a labelled packet goes to the control plane instead of being forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PuntReason {
    /// Label 1, router alert (RFC 3032 §2.1).
    RouterAlert = 0,
    /// Label 13, generic associated channel (RFC 5586): MPLS-TP OAM, BFD over G-ACh.
    Gal = 1,
    /// Label 14, OAM alert (RFC 3429).
    OamAlert = 2,
    /// The entry's action is "punt".
    Configured = 3,
}

impl PuntReason {
    /// Every reason, in code order.
    pub const ALL: [PuntReason; 4] = [
        PuntReason::RouterAlert,
        PuntReason::Gal,
        PuntReason::OamAlert,
        PuntReason::Configured,
    ];

    /// Number of reasons.
    pub const COUNT: usize = Self::ALL.len();

    /// The counter name.
    pub const fn name(self) -> &'static str {
        match self {
            PuntReason::RouterAlert => "mpls_punt_router_alert",
            PuntReason::Gal => "mpls_punt_gal",
            PuntReason::OamAlert => "mpls_punt_oam_alert",
            PuntReason::Configured => "mpls_punt",
        }
    }

    pub(crate) const fn from_code(c: u32) -> PuntReason {
        match c {
            0 => PuntReason::RouterAlert,
            1 => PuntReason::Gal,
            2 => PuntReason::OamAlert,
            _ => PuntReason::Configured,
        }
    }
}

/// The result of switching one labelled packet.
///
/// The frame was rewritten in place and the caller's offset moved to where the
/// outgoing layer 3 now starts (see [`LabelGuard::switch`](crate::LabelGuard::switch));
/// the L2 header for the adjacency goes in front of it. For `Punt`, `Drop` and
/// `TtlExpired` the frame and the offset are untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MplsDecision {
    /// Send labelled (EtherType 0x8847) to adjacency `adj`.
    Forward {
        /// Adjacency id (index into the FIB's adjacency table).
        adj: u32,
    },
    /// Penultimate hop popped the last label: send the IPv4 payload (EtherType 0x0800)
    /// to adjacency `adj`.
    Php {
        /// Adjacency id.
        adj: u32,
    },
    /// Penultimate hop popped the last label off an IPv6 payload: send it
    /// (EtherType 0x86dd) to adjacency `adj`. The hop limit took the label TTL
    /// less one (uniform) or was left alone (pipe).
    Php6 {
        /// Adjacency id.
        adj: u32,
    },
    /// Popped the last label: look the IPv4 packet up in IPv4 table `table`, in the
    /// same pass ("via ip4-lookup-in-table N", label 0). The label TTL was copied into
    /// the IPv4 header (uniform) or left alone (pipe); the IPv4 stage then does its
    /// usual TTL check and decrement.
    Ip4Lookup {
        /// IPv4 table id.
        table: u32,
    },
    /// Popped the last label: look the IPv6 packet up in table `table`'s IPv6
    /// half, in the same pass (label 2, "via ip6-lookup-in-table N", or an entry
    /// that looks up by the payload's version). The label TTL was copied into the
    /// hop limit (uniform) or left alone (pipe); the IPv6 stage then does its
    /// usual hop limit check and decrement.
    Ip6Lookup {
        /// Table id.
        table: u32,
    },
    /// Popped a pseudowire's label: `*off` is where its payload starts (the
    /// control word if it has one, then the Ethernet frame), for the
    /// attachment circuit of pseudowire `pw`.
    Xconnect {
        /// The pseudowire's index.
        pw: u32,
    },
    /// Hand the frame to the control plane.
    Punt(PuntReason),
    /// Drop and count.
    Drop(DropReason),
    /// The label TTL would reach 0 here: build ICMP time exceeded with the RFC 4950
    /// label stack ([`LabelGuard::ttl_exceeded_reply`](crate::LabelGuard::ttl_exceeded_reply)),
    /// or drop with [`DropReason::TtlExpired`] when that fails.
    TtlExpired,
}

impl MplsDecision {
    /// The EtherType of what leaves, for decisions that send the frame.
    pub const fn ethertype(&self) -> Option<EtherType> {
        match self {
            MplsDecision::Forward { .. } => Some(EtherType::Mpls),
            MplsDecision::Php { .. } | MplsDecision::Ip4Lookup { .. } => Some(EtherType::Ipv4),
            MplsDecision::Php6 { .. } | MplsDecision::Ip6Lookup { .. } => Some(EtherType::Ipv6),
            _ => None,
        }
    }
}
