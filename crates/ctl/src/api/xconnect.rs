//! The cross-connect's API: `show` and counters of an L2 port-to-port forwarder.

use super::scrape::{interface_metrics, port_metrics, worker_metrics};
use super::*;

/// One port of the cross-connect as `show interfaces` needs it.
#[derive(Debug, Clone)]
pub struct XconnectPort {
    /// Name.
    pub name: String,
    /// DPDK port id.
    pub id: u16,
    /// Driver.
    pub driver: String,
    /// MAC.
    pub mac: [u8; 6],
    /// Name of the peer port.
    pub peer: String,
}

#[derive(Debug, Clone)]
struct XcSnap {
    /// Per queue assignment: rx, tx, tx drops.
    queues: Vec<[u64; 3]>,
    loops: u64,
    busy_loops: u64,
    busy_cycles: u64,
    idle_sleeps: u64,
}

impl XcSnap {
    fn take(c: &WorkerCounters) -> XcSnap {
        XcSnap {
            queues: c
                .queues
                .iter()
                .map(|q| [q.rx_pkts.get(), q.tx_pkts.get(), q.tx_drops.get()])
                .collect(),
            loops: c.loops.get(),
            busy_loops: c.busy_loops.get(),
            busy_cycles: c.busy_cycles.get(),
            idle_sleeps: c.idle_sleeps.get(),
        }
    }

    fn since(&self, b: &XcSnap) -> XcSnap {
        XcSnap {
            queues: self
                .queues
                .iter()
                .zip(&b.queues)
                .map(|(a, b)| std::array::from_fn(|k| a[k].saturating_sub(b[k])))
                .collect(),
            loops: self.loops.saturating_sub(b.loops),
            busy_loops: self.busy_loops.saturating_sub(b.busy_loops),
            busy_cycles: self.busy_cycles.saturating_sub(b.busy_cycles),
            idle_sleeps: self.idle_sleeps.saturating_sub(b.idle_sleeps),
        }
    }
}

/// The cross-connect's API: interfaces, run and errors, counters.
pub struct XconnectApi<'a> {
    ports: &'a dyn PortSource,
    port_list: Vec<XconnectPort>,
    counters: Vec<Arc<WorkerCounters>>,
    queues: Vec<Vec<RxAssignment>>,
    info: DaemonInfo,
    base_workers: Vec<XcSnap>,
    base_ports: Vec<PortStats>,
    base_at: Instant,
}

impl std::fmt::Debug for XconnectApi<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XconnectApi").finish_non_exhaustive()
    }
}

impl<'a> XconnectApi<'a> {
    /// The API over running cross-connect workers.
    pub fn new(
        ports: &'a dyn PortSource,
        port_list: Vec<XconnectPort>,
        counters: Vec<Arc<WorkerCounters>>,
        queues: Vec<Vec<RxAssignment>>,
        info: DaemonInfo,
    ) -> XconnectApi<'a> {
        let base_workers = counters
            .iter()
            .map(|c| XcSnap {
                queues: vec![[0; 3]; c.queues.len()],
                loops: 0,
                busy_loops: 0,
                busy_cycles: 0,
                idle_sleeps: 0,
            })
            .collect();
        let n = port_list.len();
        let base_at = info.started;
        XconnectApi {
            ports,
            port_list,
            counters,
            queues,
            info,
            base_workers,
            base_ports: vec![PortStats::default(); n],
            base_at,
        }
    }

    fn snaps(&self) -> Vec<XcSnap> {
        self.counters
            .iter()
            .zip(&self.base_workers)
            .map(|(c, b)| XcSnap::take(c).since(b))
            .collect()
    }

    /// Runs one parsed command.
    pub fn run(&mut self, cmd: Command) -> Result<Value, ApiError> {
        let snaps = self.snaps();
        match cmd {
            Command::ShowInterfaces { name } => {
                if let Some(n) = &name {
                    if !self.port_list.iter().any(|p| &p.name == n) {
                        let names: Vec<&str> =
                            self.port_list.iter().map(|p| p.name.as_str()).collect();
                        return Err(ApiError::NotFound(format!(
                            "unknown interface {n:?} (interfaces: {})",
                            names.join(", ")
                        )));
                    }
                }
                let rows: Vec<Value> = self
                    .port_list
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| name.as_ref().is_none_or(|n| *n == p.name))
                    .map(|(k, p)| {
                        let (link, now) = self.ports.port_state(p.id).unwrap_or_default();
                        let s = port_diff(now, self.base_ports[k]);
                        // Drops are counted where the frame was received, against the
                        // port it could not leave on.
                        let drops: u64 = self
                            .queues
                            .iter()
                            .zip(&snaps)
                            .flat_map(|(qs, sn)| qs.iter().zip(&sn.queues))
                            .filter(|(a, _)| a.peer == p.id)
                            .map(|(_, c)| c[2])
                            .sum();
                        json!({
                            "name": p.name,
                            "ifindex": k + 1,
                            "port": p.id,
                            "driver": p.driver,
                            "mac": mac_str(p.mac),
                            "up": true,
                            "link": link,
                            "peer": p.peer,
                            "counters": {
                                "rx_packets": s.rx_pkts,
                                "rx_bytes": s.rx_bytes,
                                "tx_packets": s.tx_pkts,
                                "tx_bytes": s.tx_bytes,
                                "drops": drops,
                                "rx_missed": s.rx_missed,
                                "rx_errors": s.rx_errors,
                                "tx_errors": s.tx_errors,
                                "rx_no_mbuf": s.rx_nombuf,
                            },
                        })
                    })
                    .collect();
                Ok(json!({ "interfaces": rows }))
            }
            Command::ShowRun => {
                let secs = self.base_at.elapsed().as_secs_f64();
                let workers: Vec<Value> = snaps
                    .iter()
                    .enumerate()
                    .map(|(w, s)| {
                        let rx: u64 = s.queues.iter().map(|q| q[0]).sum();
                        let tx: u64 = s.queues.iter().map(|q| q[1]).sum();
                        let drops: u64 = s.queues.iter().map(|q| q[2]).sum();
                        let stages = if s.busy_loops > 0 {
                            vec![stage_json(
                                "l2-xconnect",
                                "polling",
                                s.busy_loops,
                                rx,
                                s.busy_cycles,
                            )]
                        } else {
                            Vec::new()
                        };
                        json!({
                            "worker": w,
                            "lcore": self.info.lcores.get(w),
                            "loops": s.loops,
                            "busy_loops": s.busy_loops,
                            "busy_cycles": s.busy_cycles,
                            "idle_sleeps": s.idle_sleeps,
                            "rates": {
                                "in": per_sec(rx, secs),
                                "out": per_sec(tx, secs),
                                "drop": per_sec(drops, secs),
                                "punt": 0.0,
                            },
                            "stages": stages,
                        })
                    })
                    .collect();
                Ok(json!({ "time_s": secs, "tsc_hz": self.info.tsc_hz, "workers": workers }))
            }
            Command::ShowErrors => {
                let drops: u64 = snaps.iter().flat_map(|s| &s.queues).map(|q| q[2]).sum();
                let rows: Vec<Value> = if drops > 0 {
                    vec![json!({ "count": drops, "reason": "tx_full", "type": "drop" })]
                } else {
                    Vec::new()
                };
                Ok(json!({ "errors": rows }))
            }
            Command::ShowVersion => Ok(self.info.version("xconnect")),
            Command::ClearCounters => {
                self.base_workers = self.counters.iter().map(|c| XcSnap::take(c)).collect();
                self.base_ports = self
                    .port_list
                    .iter()
                    .map(|p| self.ports.port_state(p.id).unwrap_or_default().1)
                    .collect();
                self.base_at = Instant::now();
                Ok(Value::Null)
            }
            Command::Reload => {
                let (new, _) = self.info.reread()?;
                self.info.config = new;
                Ok(
                    json!({ "message": "reload: no changes (a cross-connect has no routing sections)" }),
                )
            }
            other => Err(ApiError::Refused(format!(
                "{} needs [forwarding] mode = \"router\"; this dataplaned is an L2 cross-connect (it serves show interfaces|run|errors|version, clear counters, reload)",
                command_name(&other)
            ))),
        }
    }
}

impl Service for XconnectApi<'_> {
    fn metrics(&self, m: &mut Scrape) {
        self.info.metrics(m, "xconnect");
        let raw: Vec<XcSnap> = self.counters.iter().map(|c| XcSnap::take(c)).collect();
        for p in &self.port_list {
            let l = [("interface", p.name.as_str())];
            let (link, s) = self.ports.port_state(p.id).unwrap_or_default();
            // Drops are counted against the port a frame could not leave on.
            let drops: u64 = self
                .queues
                .iter()
                .zip(&raw)
                .flat_map(|(qs, sn)| qs.iter().zip(&sn.queues))
                .filter(|(a, _)| a.peer == p.id)
                .map(|(_, c)| c[2])
                .sum();
            interface_metrics(m, &l, [s.rx_pkts, s.rx_bytes, s.tx_pkts, s.tx_bytes, drops]);
            port_metrics(m, &l, link, &s);
        }
        for (w, s) in raw.iter().enumerate() {
            let ws = w.to_string();
            worker_metrics(
                m,
                &ws,
                // (cross-connect workers sleep on a timer only)
                [s.loops, s.busy_loops, s.busy_cycles, s.idle_sleeps, 0],
            );
        }
    }

    fn handle(&mut self, args: &[String]) -> Result<Value, ApiError> {
        let cmd = cli::parse(args)?;
        self.run(cmd)
    }
}
