//! The daemon as a whole: `show run|errors|version`, packet traces, `clear counters`, `reload`.

use super::*;

impl RouterApi<'_> {
    /// Runs a command of this domain (see [`Domain`]).
    pub(super) fn run_system(&mut self, cmd: Command) -> Result<Value, ApiError> {
        match cmd {
            Command::ShowRun => Ok(self.show_run()),
            Command::ShowErrors => Ok(self.show_errors()),
            Command::ShowTrace => Ok(self.show_trace()),
            Command::ShowVersion => {
                let mut v = self.info.version("router");
                v["router_id"] = json!(self.ctl.router_id().map(|a| a.to_string()));
                v["router_id_source"] = json!(self.ctl.router_id_source().map(|s| s.name()));
                Ok(v)
            }
            Command::TraceAdd(n) => {
                if self.ctl.workers().is_empty() {
                    return Err(ApiError::Refused("no workers to trace".into()));
                }
                self.ctl.trace_add(n);
                Ok(json!({
                    "message": format!("tracing the next {n} packets of each of {} worker(s); dpctl show trace", self.ctl.workers().len())
                }))
            }
            Command::TraceClear => {
                self.ctl.trace_clear();
                Ok(Value::Null)
            }
            Command::ClearCounters => {
                let stats = self.ctl.worker_stats();
                let ports = self
                    .port_infos
                    .iter()
                    .filter_map(|p| Some((p.id, self.ports.port_state(p.id)?.1)))
                    .collect();
                self.baseline = RouterBaseline {
                    workers: stats.iter().map(|s| WorkerSnap::take(s)).collect(),
                    ports,
                    at: Instant::now(),
                };
                Ok(Value::Null)
            }
            Command::Reload => {
                let r = self.reload();
                // A file with a full table leaves its parse's buffers (hundreds
                // of MB) free in the C heap: give them back.
                crate::linux::heap::trim();
                r
            }
            other => Err(misrouted(&other)),
        }
    }

    /// Re-reads the configuration file and applies its routing sections as a diff.
    pub fn reload(&mut self) -> Result<Value, ApiError> {
        let (new, routing) = self.info.reread()?;
        // [sflow] is checked before anything is applied (interface names too, as far
        // as the interfaces exist now or are named by the new file).
        let router_id = new
            .router
            .router_id
            .as_deref()
            .and_then(|r| r.parse::<Ipv4Addr>().ok());
        let known = |n: &str| {
            let now = self.ctl.iface_by_name(n).ok().map(|i| i.ifindex);
            let named = new.interfaces.iter().any(|i| i.name == n);
            now.or(named.then_some(1))
        };
        if self.sflow.is_some() {
            sflow_agent::agent_config(new.sflow.as_ref(), &known, router_id)
                .map_err(ReloadError::Sflow)?;
        }
        // (refusals made before the reload borrows the router)
        let twinned: HashMap<String, String> = self
            .ctl
            .ifaces()
            .iter()
            .filter_map(|i| {
                let why = self.linux_owns(&i.name, "addresses").err()?;
                Some((i.name.clone(), why.to_string()))
            })
            .collect();
        let owns = |name: &str| twinned.get(name).cloned();
        let sum = routing::reload(&self.routing, &routing, &self.port_infos, self.ctl, &owns)
            .map_err(ReloadError::Routing)?;
        self.routing = routing;
        // (applied: the file's routes are valid)
        let _ = self.routing.compact();
        let mut message = format!("reload: {sum}");
        if let (Some(agent), Some(old)) = (&mut self.sflow, &self.sflow_file) {
            let ctl = &*self.ctl;
            let names = |n: &str| ctl.iface_by_name(n).ok().map(|i| i.ifindex);
            let cfg = sflow_agent::agent_config(new.sflow.as_ref(), &names, router_id)
                .map_err(ReloadError::SflowAfterRouting)?;
            let done = sflow_agent::apply_diff(agent, old, &cfg);
            if !done.is_empty() {
                message.push_str(&format!("; sflow: {}", done.join(", ")));
            }
            self.sflow_file = Some(cfg);
        }
        self.info.config = new;
        Ok(json!({ "message": message, "changes": sum }))
    }

    pub(super) fn show_run(&self) -> Value {
        let secs = self.baseline.at.elapsed().as_secs_f64();
        let workers: Vec<Value> = self
            .snaps()
            .iter()
            .enumerate()
            .map(|(w, s)| {
                let stages: Vec<Value> = Stage::ALL
                    .iter()
                    .filter(|st| s.stages[**st as usize][0] > 0)
                    .map(|st| {
                        let [calls, pkts, cycles] = s.stages[*st as usize];
                        let state = if *st == Stage::Rx {
                            "polling"
                        } else {
                            "active"
                        };
                        stage_json(st.name(), state, calls, pkts, cycles)
                    })
                    .collect();
                let rx = s.stages[Stage::Rx as usize][1];
                let tx: u64 = s.ifaces.iter().map(|c| c[2]).sum();
                let punts: u64 = s.punts.iter().sum();
                json!({
                    "worker": w,
                    "lcore": self.info.lcores.get(w),
                    "loops": s.loops,
                    "busy_loops": s.busy_loops,
                    "busy_cycles": s.busy_cycles,
                    "idle_sleeps": s.idle_sleeps,
                    "rx_wakes": s.rx_wakes,
                    "echo_replies": s.echo_replies,
                    "icmp_errors": s.icmp_errors,
                    "arp_replies": s.arp_replies,
                    "arp_requests": s.arp_requests,
                    "arp_consumed": s.arp_consumed,
                    "nd_replies": s.nd_replies,
                    "nd_requests": s.nd_requests,
                    "nd_consumed": s.nd_consumed,
                    "held": s.held,
                    "hold_released": s.hold_released,
                    "rates": {
                        "in": per_sec(rx, secs),
                        "out": per_sec(tx, secs),
                        "drop": per_sec(s.total_drops(), secs),
                        "punt": per_sec(punts, secs),
                    },
                    "stages": stages,
                })
            })
            .collect();
        json!({ "time_s": secs, "tsc_hz": self.info.tsc_hz, "workers": workers })
    }

    pub(super) fn show_errors(&self) -> Value {
        let snaps = self.snaps();
        let mut rows = Vec::new();
        let mut push = |name: &str, kind: &str, n: u64| {
            if n > 0 {
                rows.push(json!({ "count": n, "reason": name, "type": kind }));
            }
        };
        for r in DropReason::ALL {
            push(
                r.name(),
                "drop",
                snaps.iter().map(|s| s.drops[r as usize]).sum(),
            );
        }
        for (k, r) in mpls::DropReason::ALL.iter().enumerate() {
            push(
                r.name(),
                "drop",
                snaps.iter().map(|s| s.mpls_drops[k]).sum(),
            );
        }
        for r in PuntReason::ALL {
            push(
                r.name(),
                "punt",
                snaps.iter().map(|s| s.punts[r as usize]).sum(),
            );
        }
        // The policer's drops by receiving interface and class.
        let ift = self.ctl.ifaces();
        let ifs = snaps.first().map_or(0, |s| s.policed.len());
        for ix in 0..ifs {
            for c in PuntClass::ALL {
                let n: u64 = snaps.iter().map(|s| s.policed[ix][c as usize]).sum();
                if n > 0 {
                    let name = ift.get(ix as u32).map_or("?", |i| i.name.as_str());
                    rows.push(json!({
                        "count": n,
                        "reason": format!("punt_policed_{} {name}", c.name()),
                        "type": "policed",
                        "interface": name,
                        "class": c.name(),
                    }));
                }
            }
        }
        json!({ "errors": rows })
    }

    pub(super) fn show_trace(&self) -> Value {
        let ift = self.ctl.ifaces();
        let recs: Vec<Value> = self
            .ctl
            .trace_records()
            .iter()
            .map(|(w, r)| {
                let n_in = usize::from(r.len_in).min(r.head_in.len());
                let n_out = usize::from(r.len_out).min(r.head_out.len());
                json!({
                    "worker": w,
                    "tsc": r.tsc,
                    "rx_port": r.rx_port,
                    "rx_interface": ift.get(r.rx_if).map(|i| i.name.clone()),
                    "stages": r.stages,
                    "decision": r.decision,
                    "len_in": r.len_in,
                    "head_in": decode::hex(&r.head_in[..n_in]),
                    "summary_in": decode::frame(&r.head_in[..n_in]),
                    "len_out": r.len_out,
                    "head_out": decode::hex(&r.head_out[..n_out]),
                    "summary_out": (r.len_out > 0).then(|| decode::frame(&r.head_out[..n_out])),
                })
            })
            .collect();
        json!({ "packets": recs })
    }
}
