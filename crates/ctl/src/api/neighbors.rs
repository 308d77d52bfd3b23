//! Neighbours: `neighbor add|del|show`, and the aging of ARP-learned ones.

use std::net::IpAddr;

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_neighbors(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::NeighborAdd {
                interface,
                ip,
                mac: Some(mac),
            } => {
                let ix = ifindex(self.ctl, &interface)?;
                self.ctl
                    .set_configured_neighbor(ix, ip, mac)
                    .map_err(|source| ApiError::Router {
                        what: format!("neighbor {ip} on {interface}"),
                        source,
                    })?;
                Ok(Value::Null)
            }
            Command::NeighborAdd {
                interface,
                ip: IpAddr::V6(ip),
                mac: None,
            } => {
                ifindex(self.ctl, &interface)?;
                // (nothing to hold: the workers solicit it when traffic needs it)
                Ok(json!({
                    "message": format!("{ip} on {interface}: resolved by neighbour discovery when traffic uses it")
                }))
            }
            Command::NeighborDel {
                interface,
                ip: IpAddr::V6(ip),
                mac,
            } => {
                let ix = ifindex(self.ctl, &interface)?;
                let Some(have) = self.ctl.neighbors6().get(&(ix, ip)).copied() else {
                    return Err(ApiError::NotFound(format!(
                        "no neighbor {ip} on {interface}"
                    )));
                };
                if mac.is_some_and(|m| m != have) {
                    return Err(ApiError::NotFound(format!(
                        "neighbor {ip} on {interface} has MAC {}",
                        mac_str(have)
                    )));
                }
                self.ctl
                    .del_neighbor6(ix, ip)
                    .map_err(|source| ApiError::Router {
                        what: format!("neighbor {ip} on {interface}"),
                        source,
                    })?;
                Ok(Value::Null)
            }
            Command::NeighborAdd {
                interface,
                ip: IpAddr::V4(ip),
                mac: None,
            } => {
                let ix = ifindex(self.ctl, &interface)?;
                if self.ctl.neighbors().contains_key(&(ix, ip)) {
                    return Ok(
                        json!({ "message": format!("{ip} on {interface} is resolved already") }),
                    );
                }
                // An incomplete entry: the workers ARP for it when traffic needs it.
                self.ctl
                    .adjacency(ix, ip)
                    .map_err(|source| ApiError::Router {
                        what: format!("neighbor {ip} on {interface}"),
                        source,
                    })?;
                Ok(json!({
                    "message": format!("{ip} on {interface}: incomplete, resolved by ARP when traffic uses it")
                }))
            }
            Command::NeighborDel {
                interface,
                ip: IpAddr::V4(ip),
                mac,
            } => {
                let ix = ifindex(self.ctl, &interface)?;
                let Some(have) = self.ctl.neighbors().get(&(ix, ip)).copied() else {
                    let on: Vec<String> = self
                        .ctl
                        .neighbors()
                        .keys()
                        .filter(|k| k.0 == ix)
                        .map(|k| k.1.to_string())
                        .collect();
                    return Err(ApiError::NotFound(format!(
                        "no neighbor {ip} on {interface} (neighbors on {interface}: {})",
                        if on.is_empty() {
                            "none".into()
                        } else {
                            on.join(", ")
                        }
                    )));
                };
                if let Some(m) = mac {
                    if m != have {
                        return Err(ApiError::NotFound(format!(
                            "neighbor {ip} on {interface} has MAC {}, not {}",
                            mac_str(have),
                            mac_str(m)
                        )));
                    }
                }
                // A configured entry goes and reveals what the host stack or
                // ARP knows; otherwise the neighbour is forgotten.
                if !self.ctl.del_static_neighbor(ix, ip) {
                    self.ctl
                        .del_neighbor(ix, ip)
                        .map_err(|source| ApiError::Router {
                            what: format!("neighbor {ip} on {interface}"),
                            source,
                        })?;
                }
                Ok(Value::Null)
            }
            Command::NeighborShow => {
                let ift = self.ctl.ifaces();
                let name = |ix: u32| ift.get(ix).map_or("?", |i| i.name.as_str()).to_string();
                let mut v: Vec<Value> = self
                    .ctl
                    .neighbors()
                    .iter()
                    .map(|(&(ix, ip), &mac)| {
                        json!({
                            "interface": name(ix),
                            "address": ip.to_string(),
                            "mac": mac_str(mac),
                            "source": if self.ctl.is_static_neighbor(ix, ip) {
                                "static"
                            } else if self.ctl.is_kernel_neighbor(ix, ip) {
                                "kernel"
                            } else {
                                "arp"
                            },
                        })
                    })
                    .collect();
                // IPv6: configured, or learned (neighbour discovery, the kernel).
                v.extend(self.ctl.neighbors6().iter().map(|(&(ix, ip), &mac)| {
                    json!({
                        "interface": name(ix),
                        "address": ip.to_string(),
                        "mac": mac_str(mac),
                        "source": if self.ctl.is_static_neighbor6(ix, ip) {
                            "static"
                        } else {
                            "learned"
                        },
                    })
                }));
                let (probes, forgotten) = self.ctl.aging_counts();
                let lost = self.probes.as_ref().map_or(0, |p| p.lost);
                Ok(json!({
                    "neighbors": v,
                    "aging": {
                        "probes_sent": probes,
                        "probes_lost": lost,
                        "forgotten": forgotten,
                    },
                }))
            }
            other => Err(misrouted(&other)),
        }
    }

    /// Ages learned neighbours (four times a second) and sends the probes due.
    pub(super) fn age_neighbors(&mut self) {
        let now = Instant::now();
        if now.duration_since(self.aged_at) < Duration::from_millis(250) {
            return;
        }
        self.aged_at = now;
        // The file was checked when loaded; a bad value cannot reach here.
        let Ok(aging) = routing::neighbor_aging(&self.routing) else {
            return;
        };
        for p in self.ctl.age_neighbors(now, &aging) {
            let Some(sink) = self.probes.as_mut() else {
                continue;
            };
            let sent = sink.pool.alloc_with(&p.frame).is_some_and(|mut m| {
                m.set_port(p.port);
                sink.inject.push((p.port, m)).is_ok()
            });
            if !sent {
                sink.lost += 1;
            }
        }
    }
}
