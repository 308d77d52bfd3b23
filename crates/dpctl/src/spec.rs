//! Routes and label entries as the operator writes them (interface *names*, gateway
//! addresses, out-labels), checked for syntax. The daemon resolves them against
//! the running router (`ctl::spec`).
//!
//! Both the configuration file and `dpctl` ([`crate::cli`]) produce these, so a
//! route means the same thing in either place and is checked by the same code.

use std::net::IpAddr;

use fib::TableId;

/// One path of a route or a label entry: `via GATEWAY [INTERFACE] [next-hop-table N]
/// [out-labels ...] [weight N]`, or `via INTERFACE` (attached).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViaSpec {
    /// Next hop (either family); `None` for an attached path.
    pub gateway: Option<IpAddr>,
    /// Output interface; `None` resolves the gateway through the table (routes only).
    pub interface: Option<String>,
    /// Out-labels, top of stack first.
    pub out_labels: Vec<u32>,
    /// ECMP weight (routes only), 1..=65535.
    pub weight: u32,
    /// The table a gateway without an interface is looked up in (routes only;
    /// `None`: the route's own). An L3VPN route: the remote PE's loopback in the
    /// global table, the VPN label as `out_labels`.
    pub table: Option<TableId>,
}

/// Special routes that need no path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Special {
    /// Drop silently.
    Blackhole,
    /// Drop, ICMP host unreachable.
    Unreachable,
    /// Drop, ICMP administratively prohibited.
    Prohibit,
    /// Addressed to the router.
    Local,
}

impl Special {
    /// Parses `blackhole` (or `drop`), `unreachable`, `prohibit`, `local`.
    pub fn from_word(w: &str) -> Option<Special> {
        match w {
            "blackhole" | "drop" => Some(Special::Blackhole),
            "unreachable" => Some(Special::Unreachable),
            "prohibit" => Some(Special::Prohibit),
            "local" => Some(Special::Local),
            _ => None,
        }
    }

    /// The word for it.
    pub fn word(self) -> &'static str {
        match self {
            Special::Blackhole => "blackhole",
            Special::Unreachable => "unreachable",
            Special::Prohibit => "prohibit",
            Special::Local => "local",
        }
    }
}

/// What a route does, by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RouteTarget {
    /// Forward over these paths (ECMP when several).
    Paths(Vec<ViaSpec>),
    /// A special route.
    Special(Special),
}

/// What a label entry does, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelSpec {
    /// Swap (or PHP with out-labels `3` or none) towards neighbours; ECMP when several.
    Forward {
        /// Paths: gateway and interface are both required.
        paths: Vec<ViaSpec>,
        /// TTL model.
        ttl_mode: mpls::TtlMode,
    },
    /// Pop and look the IPv4 packet up in a table (egress PE).
    Ip4Lookup {
        /// The table.
        table: TableId,
        /// TTL model.
        ttl_mode: mpls::TtlMode,
    },
    /// Pop and look the IPv6 packet up in a table (6PE, 6VPE egress).
    Ip6Lookup {
        /// The table.
        table: TableId,
        /// TTL model.
        ttl_mode: mpls::TtlMode,
    },
    /// Pop and look the packet up in a table by its IP version (a per-VRF
    /// label for both families).
    IpLookup {
        /// The table.
        table: TableId,
        /// TTL model.
        ttl_mode: mpls::TtlMode,
    },
    /// Pop and switch on the next label (non-eos only).
    Pop {
        /// TTL model.
        ttl_mode: mpls::TtlMode,
    },
    /// Drop.
    Drop,
    /// Punt to the control plane.
    Punt,
}

/// What an operator's route, label entry, address or MAC is refused for (the
/// message says what to write instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Not `aa:bb:cc:dd:ee:ff`.
    #[error("bad MAC address {0:?} (want aa:bb:cc:dd:ee:ff)")]
    Mac(String),
    /// Not an IPv4 address.
    #[error("bad IPv4 address {0:?}")]
    Ip(String),
    /// Not an IP address of either family.
    #[error("bad IP address {0:?}")]
    IpAny(String),
    /// Not a prefix (or host bits set).
    #[error("bad prefix {0:?}: {1}")]
    Prefix(String, String),
    /// An interface address without `/len`.
    #[error("address {0:?} needs a prefix length (a.b.c.d/len)")]
    NoLength(String),
    /// A prefix length that is not 0..=32.
    #[error("bad prefix length in {0:?} (0 to 32)")]
    Length(String),
    /// An in-label outside 16..2^20.
    #[error(
        "{0}; local labels are 16..1048575 (0 = explicit null and 3 = implicit null are out-labels)"
    )]
    InLabel(mpls::ConfigError),
    /// Out-labels the path cannot push.
    #[error("{0}")]
    OutLabels(mpls::ConfigError),
    /// A label action the entry cannot have.
    #[error("{0}")]
    Action(mpls::ConfigError),
    /// An ECMP weight outside 1..=65535.
    #[error("weight {0} is out of range 1..65535")]
    Weight(u32),
    /// A next hop that is not unicast.
    #[error("{0} cannot be a next hop (unspecified, loopback, multicast or broadcast)")]
    NextHop(IpAddr),
    /// A label entry's path via an IPv6 next hop.
    #[error("label paths take IPv4 next hops ({0} is IPv6)")]
    LabelPathV6(IpAddr),
    /// A link-local IPv6 next hop without its interface.
    #[error("{0} is link-local: name its interface (via {0} INTERFACE)")]
    LinkLocalNeedsInterface(IpAddr),
    /// A route without a via.
    #[error("a route needs a via (or blackhole, unreachable, prohibit)")]
    NoVia,
    /// More paths than a route holds.
    #[error("{0} paths, at most {max} per route", max = fib::MAX_PATHS)]
    TooManyPaths(usize),
    /// A via with neither next hop nor interface.
    #[error("a via needs a next hop or an interface")]
    EmptyVia,
    /// A label entry without an action.
    #[error("a label entry needs a via, ip4-lookup, ip6-lookup, ip-lookup, pop, drop or punt")]
    NoAction,
    /// A label path without next hop or interface.
    #[error("a label path needs a next hop and its interface (via 192.168.11.8 port0)")]
    LabelPath,
    /// A weight on a label path.
    #[error("label paths have no weight (ECMP is equal-cost)")]
    LabelWeight,
    /// A next-hop table on a path that is not a recursive gateway.
    #[error("next-hop-table needs a next hop without an interface (it is looked up in that table)")]
    ViaTable,
}

impl From<SpecError> for String {
    fn from(e: SpecError) -> String {
        e.to_string()
    }
}

/// Checks an in-label: 16..2^20 (0-15 are special-purpose, RFC 3032 §2.1).
pub fn check_in_label(label: u32) -> Result<(), SpecError> {
    mpls::validate_in_label(label)
        .map(|_| ())
        .map_err(SpecError::InLabel)
}

/// Checks the out-labels of a route path (pushed onto IPv4): each 16..2^20, or 0/2
/// (explicit null), or `3` alone (implicit null: push nothing).
pub fn check_route_labels(labels: &[u32]) -> Result<(), SpecError> {
    mpls::validate_out_labels(labels, fib::MAX_LABELS)
        .map(|_| ())
        .map_err(SpecError::OutLabels)
}

/// Checks the out-labels of a label path (replacing the top label).
pub fn check_swap_labels(labels: &[u32]) -> Result<(), SpecError> {
    mpls::validate_out_labels(labels, mpls::MAX_SWAP_LABELS)
        .map(|_| ())
        .map_err(SpecError::OutLabels)
}

/// Checks an ECMP weight.
pub fn check_weight(w: u32) -> Result<(), SpecError> {
    if (1..=65535).contains(&w) {
        Ok(())
    } else {
        Err(SpecError::Weight(w))
    }
}

/// Checks a next-hop address: a unicast address.
pub fn check_next_hop(ip: impl Into<IpAddr>) -> Result<(), SpecError> {
    let ip = ip.into();
    let bad = match ip {
        IpAddr::V4(a) => {
            a.is_unspecified() || a.is_multicast() || a.is_broadcast() || a.is_loopback()
        }
        IpAddr::V6(a) => a.is_unspecified() || a.is_multicast() || a.is_loopback(),
    };
    if bad {
        return Err(SpecError::NextHop(ip));
    }
    Ok(())
}

/// Whether `ip` is an IPv6 link-local address (a next hop that needs its
/// interface).
fn link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(a) if a.is_unicast_link_local())
}

impl RouteTarget {
    /// Checks what can be checked without the router: labels, weights, shape.
    pub fn check(&self) -> Result<(), SpecError> {
        let RouteTarget::Paths(paths) = self else {
            return Ok(());
        };
        if paths.is_empty() {
            return Err(SpecError::NoVia);
        }
        if paths.len() > fib::MAX_PATHS {
            return Err(SpecError::TooManyPaths(paths.len()));
        }
        for v in paths {
            if v.gateway.is_none() && v.interface.is_none() {
                return Err(SpecError::EmptyVia);
            }
            if let Some(g) = v.gateway {
                check_next_hop(g)?;
                if link_local(g) && v.interface.is_none() {
                    return Err(SpecError::LinkLocalNeedsInterface(g));
                }
            }
            if v.table.is_some() && (v.gateway.is_none() || v.interface.is_some()) {
                return Err(SpecError::ViaTable);
            }
            check_route_labels(&v.out_labels)?;
            check_weight(v.weight)?;
        }
        Ok(())
    }
}

impl LabelSpec {
    /// A pop-and-lookup of family `word` (`ip4-lookup`, `ip6-lookup`, or
    /// `ip-lookup` for either by the payload's version) in `table`.
    pub fn lookup(word: &str, table: TableId, ttl_mode: mpls::TtlMode) -> Option<LabelSpec> {
        Some(match word {
            "ip4-lookup" => LabelSpec::Ip4Lookup { table, ttl_mode },
            "ip6-lookup" => LabelSpec::Ip6Lookup { table, ttl_mode },
            "ip-lookup" => LabelSpec::IpLookup { table, ttl_mode },
            _ => return None,
        })
    }

    /// The table of a pop-and-lookup.
    pub fn lookup_table(&self) -> Option<TableId> {
        match self {
            LabelSpec::Ip4Lookup { table, .. }
            | LabelSpec::Ip6Lookup { table, .. }
            | LabelSpec::IpLookup { table, .. } => Some(*table),
            _ => None,
        }
    }

    /// The TTL model of the action.
    pub fn ttl_mode(&self) -> mpls::TtlMode {
        match self {
            LabelSpec::Forward { ttl_mode, .. }
            | LabelSpec::Ip4Lookup { ttl_mode, .. }
            | LabelSpec::Ip6Lookup { ttl_mode, .. }
            | LabelSpec::IpLookup { ttl_mode, .. }
            | LabelSpec::Pop { ttl_mode } => *ttl_mode,
            LabelSpec::Drop | LabelSpec::Punt => mpls::TtlMode::Uniform,
        }
    }

    /// Checks what can be checked without the router, for entry (`label`, `eos`).
    pub fn check(&self, label: u32, eos: bool) -> Result<(), SpecError> {
        check_in_label(label)?;
        if let LabelSpec::Forward { paths, .. } = self {
            if paths.is_empty() {
                return Err(SpecError::NoAction);
            }
            for v in paths {
                let (Some(g), Some(_)) = (v.gateway, &v.interface) else {
                    return Err(SpecError::LabelPath);
                };
                if g.is_ipv6() {
                    return Err(SpecError::LabelPathV6(g));
                }
                check_next_hop(g)?;
                check_swap_labels(&v.out_labels)?;
                if v.weight != 1 {
                    return Err(SpecError::LabelWeight);
                }
                if v.table.is_some() {
                    return Err(SpecError::ViaTable);
                }
            }
        }
        // Adjacency ids do not matter for the shape check.
        mpls::validate_action(eos, &self.action_with(|_| 0)).map_err(SpecError::Action)
    }

    /// The label action with adjacency ids from `adj(path index)`.
    /// The label action with adjacency `adj(i)` for path `i`.
    pub fn action_with(&self, mut adj: impl FnMut(usize) -> u32) -> mpls::LabelAction {
        match self {
            LabelSpec::Forward { paths, ttl_mode } => mpls::LabelAction::Forward {
                paths: paths
                    .iter()
                    .enumerate()
                    .map(|(i, v)| mpls::NextHop::new(adj(i), &v.out_labels))
                    .collect(),
                ttl_mode: *ttl_mode,
            },
            LabelSpec::Ip4Lookup { table, ttl_mode } => mpls::LabelAction::Ip4Lookup {
                table: *table,
                ttl_mode: *ttl_mode,
            },
            LabelSpec::Ip6Lookup { table, ttl_mode } => mpls::LabelAction::Ip6Lookup {
                table: *table,
                ttl_mode: *ttl_mode,
            },
            LabelSpec::IpLookup { table, ttl_mode } => mpls::LabelAction::IpLookup {
                table: *table,
                ttl_mode: *ttl_mode,
            },
            LabelSpec::Pop { ttl_mode } => mpls::LabelAction::Pop {
                ttl_mode: *ttl_mode,
            },
            LabelSpec::Drop => mpls::LabelAction::Drop,
            LabelSpec::Punt => mpls::LabelAction::Punt,
        }
    }
}

/// `eos` or `non-eos`.
pub fn eos_word(eos: bool) -> &'static str {
    if eos { "eos" } else { "non-eos" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn via(g: &str, i: Option<&str>, labels: &[u32]) -> ViaSpec {
        ViaSpec {
            gateway: Some(g.parse().unwrap()),
            interface: i.map(str::to_string),
            out_labels: labels.to_vec(),
            weight: 1,
            table: None,
        }
    }

    #[test]
    fn label_shapes() {
        let fwd = |labels: &[u32]| LabelSpec::Forward {
            paths: vec![via("192.168.11.8", Some("port0"), labels)],
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(fwd(&[100]).check(100, true).is_ok());
        assert!(fwd(&[0]).check(100, true).is_ok(), "explicit null");
        assert!(fwd(&[3]).check(100, true).is_ok(), "PHP");
        assert!(
            fwd(&[1])
                .check(100, true)
                .unwrap_err()
                .to_string()
                .contains("out-label 1")
        );
        assert!(
            fwd(&[1 << 20])
                .check(100, true)
                .unwrap_err()
                .to_string()
                .contains("out of range")
        );
        assert!(
            fwd(&[100])
                .check(3, true)
                .unwrap_err()
                .to_string()
                .contains("in-label 3")
        );
        assert!(
            fwd(&[100])
                .check(1, true)
                .unwrap_err()
                .to_string()
                .contains("in-label 1")
        );
        let no_if = LabelSpec::Forward {
            paths: vec![via("192.168.11.8", None, &[100])],
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(
            no_if
                .check(100, true)
                .unwrap_err()
                .to_string()
                .contains("interface")
        );
        let pop = LabelSpec::Pop {
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(pop.check(100, false).is_ok());
        assert!(
            pop.check(100, true)
                .unwrap_err()
                .to_string()
                .contains("non-eos")
        );
        let lookup = LabelSpec::Ip4Lookup {
            table: 0,
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(
            lookup
                .check(100, false)
                .unwrap_err()
                .to_string()
                .contains("eos")
        );
    }

    #[test]
    fn route_shapes() {
        assert!(RouteTarget::Paths(vec![]).check().is_err());
        assert!(
            RouteTarget::Paths(vec![via("224.0.0.1", None, &[])])
                .check()
                .unwrap_err()
                .to_string()
                .contains("next hop")
        );
        let mut v = via("10.0.0.1", None, &[]);
        v.weight = 0;
        assert!(RouteTarget::Paths(vec![v]).check().is_err());
        assert!(
            RouteTarget::Paths(vec![via("10.0.0.1", None, &[2, 3])])
                .check()
                .is_err()
        );
    }
}
