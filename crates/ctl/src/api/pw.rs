//! Pseudowires (VPWS): `pw add|del|show`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_pw(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::PwAdd {
                name,
                interface,
                neighbor,
                in_label,
                out_label,
                control_word,
            } => {
                let pw = dataplane::router::Pw {
                    ac: ifindex(self.ctl, &interface)?,
                    remote: neighbor,
                    in_label,
                    out_label,
                    cw: control_word,
                };
                self.ctl.pw_add(RouteSource::Dpctl, &name, pw)?;
                Ok(Value::Null)
            }
            Command::PwDel(name) => {
                self.ctl.pw_del(&name)?;
                Ok(Value::Null)
            }
            Command::ShowPw => Ok(self.pw_show()),
            other => Err(misrouted(&other)),
        }
    }

    /// `show vrf`: every table with its VRF name, interfaces and route count.
    pub(super) fn pw_show(&self) -> Value {
        let mut reader = self.ctl.fib().reader();
        let view = reader.read();
        let ws = self.ctl.workers();
        let rows: Vec<Value> = self
            .ctl
            .pws()
            .map(|(name, k, source, p)| {
                let sum = |f: fn(&dataplane::router::PwCounters) -> u64| -> u64 {
                    ws.iter()
                        .filter_map(|w| w.stats.pws.get(k as usize))
                        .map(f)
                        .sum()
                };
                // Up: the circuit is, and the remote PE has a forwarding route.
                let leg = view.leg(view.lookup(0, u32::from(p.remote)), k);
                let routed = leg.action() == fib::Action::Forward;
                let mut labels = [0u32; 8];
                let n = leg.labels_into(&mut labels);
                let ac = self.ctl.iface(p.ac).ok();
                json!({
                    "name": name,
                    "interface": ac.map(|i| i.name.clone()),
                    "neighbor": p.remote.to_string(),
                    "in_label": p.in_label,
                    "out_label": p.out_label,
                    "control_word": p.cw,
                    "source": source.name(),
                    "up": routed && ac.is_some_and(|i| i.up),
                    "transport_labels": if routed { json!(labels[..n]) } else { Value::Null },
                    "encap_pkts": sum(|c| c.encap_pkts.get()),
                    "encap_bytes": sum(|c| c.encap_bytes.get()),
                    "decap_pkts": sum(|c| c.decap_pkts.get()),
                    "decap_bytes": sum(|c| c.decap_bytes.get()),
                    "drops": sum(|c| c.drops.get()),
                })
            })
            .collect();
        json!({ "pws": rows })
    }
}
