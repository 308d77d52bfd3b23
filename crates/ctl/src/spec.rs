//! The resolution of routes and label entries as the operator writes them
//! ([`dpctl::spec`]: interface names, gateway addresses, out-labels) against the
//! running router into FIB routes and label actions.

use std::net::{IpAddr, Ipv4Addr};

use dataplane::router::{RouteSource, RouterControl, RouterError};
use fib::{Path, RouteKind, TableId};

pub use dpctl::spec::*;

/// Why a route or label entry as the operator wrote it does not resolve against
/// the running router (nothing is changed when it does not).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Refused before the router is asked (labels, weights, shape).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// No interface of that name.
    #[error("unknown interface {name:?} (interfaces: {known})")]
    UnknownInterface {
        /// The name written.
        name: String,
        /// The router's interfaces, comma-separated ("none" without any).
        known: String,
    },
    /// No IPv4 table of that id.
    #[error("unknown table {table} (tables: {known}; create it with [router] tables = [{table}])")]
    UnknownTable {
        /// The id written.
        table: TableId,
        /// The router's tables, comma-separated.
        known: String,
    },
    /// The router refused it.
    #[error(transparent)]
    Router(#[from] RouterError),
}

/// The ifIndex of interface `name`, or an error that lists the interfaces.
pub fn ifindex(ctl: &RouterControl, name: &str) -> Result<u32, ResolveError> {
    ctl.iface_by_name(name).map(|i| i.ifindex).map_err(|_| {
        let names: Vec<String> = ctl.ifaces().iter().map(|i| i.name.clone()).collect();
        ResolveError::UnknownInterface {
            name: name.to_string(),
            known: if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            },
        }
    })
}

/// Checks that `table` exists.
pub fn check_table(ctl: &RouterControl, table: TableId) -> Result<(), ResolveError> {
    if ctl.fib().tables().any(|t| t == table) {
        return Ok(());
    }
    let mut ts: Vec<TableId> = ctl.fib().tables().collect();
    ts.sort_unstable();
    let ts: Vec<String> = ts.iter().map(u32::to_string).collect();
    Err(ResolveError::UnknownTable {
        table,
        known: ts.join(", "),
    })
}

/// Resolves a route target into a FIB route. Changes nothing.
pub fn resolve_route(ctl: &RouterControl, t: &RouteTarget) -> Result<RouteKind, ResolveError> {
    t.check()?;
    Ok(match t {
        RouteTarget::Special(s) => match s {
            Special::Blackhole => RouteKind::Blackhole,
            Special::Unreachable => RouteKind::Unreachable,
            Special::Prohibit => RouteKind::Prohibit,
            Special::Local => RouteKind::Local,
        },
        RouteTarget::Paths(vias) => {
            let mut paths = Vec::with_capacity(vias.len());
            for v in vias {
                let ix = v
                    .interface
                    .as_deref()
                    .map(|n| ifindex(ctl, n))
                    .transpose()?;
                //= RFC 4798 §2: 6PE's next hop is the egress PE's IPv4 address as an
                //= IPv4-mapped IPv6 address (::ffff:a.b.c.d); it resolves over the
                //= IPv4 routes, whose LSP gives the transport label.
                let gateway = v.gateway.map(|g| match g {
                    IpAddr::V6(a) => a.to_ipv4_mapped().map_or(g, IpAddr::V4),
                    g => g,
                });
                let p = match (gateway, ix) {
                    (Some(IpAddr::V4(g)), Some(ix)) => Path::gateway_on(g, ix),
                    (Some(IpAddr::V6(g)), Some(ix)) => Path::gateway6(g, ix),
                    (Some(g), None) => {
                        let p = match g {
                            IpAddr::V4(g) => Path::gateway(g),
                            IpAddr::V6(g) => Path {
                                ifindex: None,
                                ..Path::gateway6(g, 0)
                            },
                        };
                        match v.table {
                            Some(t) => {
                                check_table(ctl, t)?;
                                p.in_table(t)
                            }
                            None => p,
                        }
                    }
                    (None, Some(ix)) => Path::attached(ix),
                    (None, None) => return Err(SpecError::EmptyVia.into()),
                };
                // Implicit null (3) never goes on the wire: push nothing.
                let labels: &[u32] = if v.out_labels == [3] {
                    &[]
                } else {
                    &v.out_labels
                };
                paths.push(p.with_labels(labels).with_weight(v.weight));
            }
            RouteKind::Paths(paths)
        }
    })
}

/// Installs (adds or replaces) label entry (`label`, `eos`). Everything is checked
/// before anything changes; neighbour entries created for its paths are removed
/// again if the label table refuses the entry.
pub fn install_label(
    ctl: &mut RouterControl,
    source: RouteSource,
    label: u32,
    eos: bool,
    spec: &LabelSpec,
) -> Result<(), ResolveError> {
    spec.check(label, eos)?;
    let mut hops = Vec::new();
    if let LabelSpec::Forward { paths, .. } = spec {
        for v in paths {
            let (Some(IpAddr::V4(g)), Some(n)) = (v.gateway, &v.interface) else {
                unreachable!("checked above");
            };
            hops.push((ifindex(ctl, n)?, g));
        }
    }
    if let Some(table) = spec.lookup_table() {
        if table != mpls::RX_TABLE {
            check_table(ctl, table)?;
        }
    }
    let mut adjs = Vec::with_capacity(hops.len());
    let mut created = Vec::new();
    for &(ix, g) in &hops {
        let existed = ctl.fib().adjacency_id(ix, g.into()).is_some();
        match ctl.adjacency(ix, g) {
            Ok(id) => {
                if !existed {
                    created.push((ix, g));
                }
                adjs.push(id);
            }
            Err(e) => {
                undo_adjacencies(ctl, &created);
                return Err(e.into());
            }
        }
    }
    let action = spec.action_with(|i| adjs[i]);
    if let Err(e) = ctl.label_add_from(source, label, eos, action) {
        undo_adjacencies(ctl, &created);
        return Err(e.into());
    }
    Ok(())
}

fn undo_adjacencies(ctl: &mut RouterControl, created: &[(u32, Ipv4Addr)]) {
    for &(ix, g) in created {
        let _ = ctl.del_neighbor(ix, g);
    }
}
