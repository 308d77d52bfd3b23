//! sFlow: `sflow enable|disable|collector|polling|header-bytes|max-samples`, `show sflow`, and the agent's timers.

use super::*;

impl<'a> RouterApi<'a> {
    pub(super) fn sflow_cmd(&mut self, cmd: Command) -> Result<Value, ApiError> {
        if cmd == Command::ShowSflow {
            let Some(agent) = &self.sflow else {
                return Ok(json!({ "enabled": false }));
            };
            let mut v = sflow_agent::show(agent, &|ix| self.iface_name(ix));
            v["enabled"] = json!(true);
            return Ok(v);
        }
        let ifindex_of = |ctl: &RouterControl, name: &str| {
            ctl.iface_by_name(name)
                .map(|i| i.ifindex)
                .map_err(ApiError::State)
        };
        let ctl = &*self.ctl;
        let agent = self.sflow.as_mut().ok_or_else(|| {
            ApiError::Refused("sflow: this dataplaned has no sFlow agent (router mode only)".into())
        })?;
        let message = match cmd {
            Command::SflowEnable {
                interface,
                rate,
                direction,
            } => {
                let ix = ifindex_of(ctl, &interface)?;
                let s = Sampling {
                    rate,
                    directions: direction,
                };
                agent
                    .set_sampling(ix, Some(s))
                    .map_err(|source| ApiError::Sflow {
                        what: format!("sflow enable {interface}"),
                        source,
                    })?;
                format!(
                    "sflow: {interface} (ifindex {ix}) sampled 1:{rate} {}",
                    direction.name()
                )
            }
            Command::SflowDisable { interface } => {
                let ix = ifindex_of(ctl, &interface)?;
                if !agent.config().interfaces.contains_key(&ix) {
                    return Err(ApiError::NotFound(format!(
                        "sflow disable {interface}: not sampled"
                    )));
                }
                agent
                    .set_sampling(ix, None)
                    .map_err(|source| ApiError::Sflow {
                        what: format!("sflow disable {interface}"),
                        source,
                    })?;
                format!("sflow: {interface} no longer sampled")
            }
            Command::SflowCollector { add: true, spec } => {
                let a = agent
                    .add_collector(&spec)
                    .map_err(|source| ApiError::Sflow {
                        what: "sflow collector add".into(),
                        source,
                    })?;
                format!("sflow: collector {a} added")
            }
            Command::SflowCollector { add: false, spec } => {
                let a = agent
                    .remove_collector(&spec)
                    .map_err(|source| ApiError::Sflow {
                        what: "sflow collector del".into(),
                        source,
                    })?;
                format!("sflow: collector {a} removed")
            }
            Command::SflowPolling(secs) => {
                agent
                    .set_polling_interval(Duration::from_secs(secs))
                    .map_err(|source| ApiError::Sflow {
                        what: "sflow polling".into(),
                        source,
                    })?;
                format!("sflow: counters polled every {secs} s")
            }
            Command::SflowHeaderBytes(n) => {
                agent
                    .set_header_bytes(n)
                    .map_err(|source| ApiError::Sflow {
                        what: "sflow header-bytes".into(),
                        source,
                    })?;
                format!("sflow: {n} header bytes per sample")
            }
            Command::SflowMaxSamples(0) => {
                agent.set_max_samples_per_second(0);
                "sflow: no limit on samples exported".to_string()
            }
            Command::SflowMaxSamples(n) => {
                agent.set_max_samples_per_second(n);
                format!("sflow: at most {n} samples exported per second")
            }
            _ => return Err(ApiError::Internal("not an sflow command".into())),
        };
        Ok(json!({ "message": message }))
    }

    /// Drains the workers' sample rings, sends datagrams, polls counters when due.
    pub(super) fn sflow_poll(&mut self) {
        let Some(agent) = &mut self.sflow else {
            return;
        };
        let ctl = &*self.ctl;
        let ifaces = ctl.ifaces();
        let stats = ctl.worker_stats();
        let mut src = sflow_agent::RouterSource {
            ctl,
            ifaces: &ifaces,
            stats: &stats,
            ports: self.ports,
        };
        // A bounded number of rounds per tick: the rest waits for the next tick
        // (the rings absorb it, or drop and count).
        for _ in 0..8 {
            if !agent.poll(Instant::now(), &mut src).more {
                break;
            }
        }
    }

    /// Serves `sflow ...` and `show sflow` with `agent`, which was configured from
    /// the file's `[sflow]` section as `file` (reload diffs against it), and polls it
    /// on every tick.
    pub fn with_sflow(mut self, agent: Agent, file: AgentConfig) -> RouterApi<'a> {
        self.sflow = Some(agent);
        self.sflow_file = Some(file);
        self
    }
}
