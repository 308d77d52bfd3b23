//! Routes and label entries as the operator writes them (interface *names*, gateway
//! addresses, out-labels), checked for syntax. The daemon resolves them against
//! the running router (`ctl::spec`).
//!
//! Both the configuration file and `dpctl` ([`crate::cli`]) produce these, so a
//! route means the same thing in either place and is checked by the same code.

use std::net::Ipv4Addr;

use fib::TableId;

/// One path of a route or a label entry: `via GATEWAY [INTERFACE] [out-labels ...]
/// [weight N]`, or `via INTERFACE` (attached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViaSpec {
    /// Next hop; `None` for an attached path.
    pub gateway: Option<Ipv4Addr>,
    /// Output interface; `None` resolves the gateway through the table (routes only).
    pub interface: Option<String>,
    /// Out-labels, top of stack first.
    pub out_labels: Vec<u32>,
    /// ECMP weight (routes only), 1..=65535.
    pub weight: u32,
}

/// Special routes that need no path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Checks an in-label: 16..2^20 (0-15 are special-purpose, RFC 3032 §2.1).
pub fn check_in_label(label: u32) -> Result<(), String> {
    mpls::validate_in_label(label).map(|_| ()).map_err(|e| {
        format!("{e}; local labels are 16..1048575 (0 = explicit null and 3 = implicit null are out-labels)")
    })
}

/// Checks the out-labels of a route path (pushed onto IPv4): each 16..2^20, or 0/2
/// (explicit null), or `3` alone (implicit null: push nothing).
pub fn check_route_labels(labels: &[u32]) -> Result<(), String> {
    mpls::validate_out_labels(labels, fib::MAX_LABELS)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Checks the out-labels of a label path (replacing the top label).
pub fn check_swap_labels(labels: &[u32]) -> Result<(), String> {
    mpls::validate_out_labels(labels, mpls::MAX_SWAP_LABELS)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Checks an ECMP weight.
pub fn check_weight(w: u32) -> Result<(), String> {
    if (1..=65535).contains(&w) {
        Ok(())
    } else {
        Err(format!("weight {w} is out of range 1..65535"))
    }
}

/// Checks a next-hop address: a unicast address.
pub fn check_next_hop(ip: Ipv4Addr) -> Result<(), String> {
    if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() || ip.is_loopback() {
        return Err(format!(
            "{ip} cannot be a next hop (unspecified, loopback, multicast or broadcast)"
        ));
    }
    Ok(())
}

impl RouteTarget {
    /// Checks what can be checked without the router: labels, weights, shape.
    pub fn check(&self) -> Result<(), String> {
        let RouteTarget::Paths(paths) = self else {
            return Ok(());
        };
        if paths.is_empty() {
            return Err("a route needs a via (or blackhole, unreachable, prohibit)".into());
        }
        if paths.len() > fib::MAX_PATHS {
            return Err(format!(
                "{} paths, at most {} per route",
                paths.len(),
                fib::MAX_PATHS
            ));
        }
        for v in paths {
            if v.gateway.is_none() && v.interface.is_none() {
                return Err("a via needs a next hop or an interface".into());
            }
            if let Some(g) = v.gateway {
                check_next_hop(g)?;
            }
            check_route_labels(&v.out_labels)?;
            check_weight(v.weight)?;
        }
        Ok(())
    }
}

impl LabelSpec {
    /// The TTL model of the action.
    pub fn ttl_mode(&self) -> mpls::TtlMode {
        match self {
            LabelSpec::Forward { ttl_mode, .. }
            | LabelSpec::Ip4Lookup { ttl_mode, .. }
            | LabelSpec::Pop { ttl_mode } => *ttl_mode,
            LabelSpec::Drop | LabelSpec::Punt => mpls::TtlMode::Uniform,
        }
    }

    /// Checks what can be checked without the router, for entry (`label`, `eos`).
    pub fn check(&self, label: u32, eos: bool) -> Result<(), String> {
        check_in_label(label)?;
        if let LabelSpec::Forward { paths, .. } = self {
            if paths.is_empty() {
                return Err("a label entry needs a via, ip4-lookup, pop, drop or punt".into());
            }
            for v in paths {
                let (Some(g), Some(_)) = (v.gateway, &v.interface) else {
                    return Err(
                        "a label path needs a next hop and its interface (via 192.168.11.8 port0)"
                            .into(),
                    );
                };
                check_next_hop(g)?;
                check_swap_labels(&v.out_labels)?;
                if v.weight != 1 {
                    return Err("label paths have no weight (ECMP is equal-cost)".into());
                }
            }
        }
        // Adjacency ids do not matter for the shape check.
        mpls::validate_action(eos, &self.action_with(|_| 0)).map_err(|e| e.to_string())
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
                .contains("out-label 1")
        );
        assert!(
            fwd(&[1 << 20])
                .check(100, true)
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            fwd(&[100])
                .check(3, true)
                .unwrap_err()
                .contains("in-label 3")
        );
        assert!(
            fwd(&[100])
                .check(1, true)
                .unwrap_err()
                .contains("in-label 1")
        );
        let no_if = LabelSpec::Forward {
            paths: vec![via("192.168.11.8", None, &[100])],
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(no_if.check(100, true).unwrap_err().contains("interface"));
        let pop = LabelSpec::Pop {
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(pop.check(100, false).is_ok());
        assert!(pop.check(100, true).unwrap_err().contains("non-eos"));
        let lookup = LabelSpec::Ip4Lookup {
            table: 0,
            ttl_mode: mpls::TtlMode::Uniform,
        };
        assert!(lookup.check(100, false).unwrap_err().contains("eos"));
    }

    #[test]
    fn route_shapes() {
        assert!(RouteTarget::Paths(vec![]).check().is_err());
        assert!(
            RouteTarget::Paths(vec![via("224.0.0.1", None, &[])])
                .check()
                .unwrap_err()
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
