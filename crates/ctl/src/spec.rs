//! The resolution of routes and label entries as the operator writes them
//! ([`dpctl::spec`]: interface names, gateway addresses, out-labels) against the
//! running router into FIB routes and label actions.

use std::net::Ipv4Addr;

use dataplane::router::{RouteSource, RouterControl};
use fib::{Path, RouteKind, TableId};

pub use dpctl::spec::*;

/// The ifIndex of interface `name`, or an error that lists the interfaces.
pub fn ifindex(ctl: &RouterControl, name: &str) -> Result<u32, String> {
    ctl.iface_by_name(name).map(|i| i.ifindex).map_err(|_| {
        let names: Vec<String> = ctl.ifaces().iter().map(|i| i.name.clone()).collect();
        format!(
            "unknown interface {name:?} (interfaces: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    })
}

/// Checks that `table` exists.
pub fn check_table(ctl: &RouterControl, table: TableId) -> Result<(), String> {
    if ctl.fib().tables().any(|t| t == table) {
        return Ok(());
    }
    let mut ts: Vec<TableId> = ctl.fib().tables().collect();
    ts.sort_unstable();
    let ts: Vec<String> = ts.iter().map(u32::to_string).collect();
    Err(format!(
        "unknown table {table} (tables: {}; create it with [router] tables = [{table}])",
        ts.join(", ")
    ))
}

/// Resolves a route target into a FIB route. Changes nothing.
pub fn resolve_route(ctl: &RouterControl, t: &RouteTarget) -> Result<RouteKind, String> {
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
                let p = match (v.gateway, ix) {
                    (Some(g), Some(ix)) => Path::gateway_on(g, ix),
                    (Some(g), None) => Path::gateway(g),
                    (None, Some(ix)) => Path::attached(ix),
                    (None, None) => return Err("a via needs a next hop or an interface".into()),
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
) -> Result<(), String> {
    spec.check(label, eos)?;
    let mut hops = Vec::new();
    if let LabelSpec::Forward { paths, .. } = spec {
        for v in paths {
            let (Some(g), Some(n)) = (v.gateway, &v.interface) else {
                unreachable!("checked above");
            };
            hops.push((ifindex(ctl, n)?, g));
        }
    }
    if let LabelSpec::Ip4Lookup { table, .. } = spec {
        if *table != mpls::RX_TABLE {
            check_table(ctl, *table)?;
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
                return Err(e.to_string());
            }
        }
    }
    let action = spec.action_with(|i| adjs[i]);
    if let Err(e) = ctl.label_add_from(source, label, eos, action) {
        undo_adjacencies(ctl, &created);
        return Err(e.to_string());
    }
    Ok(())
}

fn undo_adjacencies(ctl: &mut RouterControl, created: &[(u32, Ipv4Addr)]) {
    for &(ix, g) in created {
        let _ = ctl.del_neighbor(ix, g);
    }
}
