//! The Prometheus scrape of a router (`/metrics`).

use super::*;

impl RouterApi<'_> {
    /// Writes every metric of the router into `m`.
    pub(super) fn scrape(&self, m: &mut Scrape) {
        self.info.metrics(m, "router");
        // The raw counters: `clear counters` never resets a Prometheus counter.
        let snaps: Vec<WorkerSnap> = self
            .ctl
            .worker_stats()
            .iter()
            .map(|s| WorkerSnap::take(s))
            .collect();
        self.scrape_interfaces(m, &snaps);
        self.scrape_workers(m, &snaps);
        self.scrape_tables(m);
        if let Some(agent) = &self.sflow {
            sflow_agent::metrics(agent, m);
        }
        if let Some(l) = &self.linux {
            l.metrics(m);
        }
    }

    /// Per interface: traffic, state, its port's counters, policed punts.
    fn scrape_interfaces(&self, m: &mut Scrape, snaps: &[WorkerSnap]) {
        let ift = self.ctl.ifaces();
        for i in ift.iter() {
            let ix = i.ifindex as usize;
            let sum = |k: usize| -> u64 {
                snaps
                    .iter()
                    .filter_map(|s| s.ifaces.get(ix))
                    .map(|c| c[k])
                    .sum()
            };
            let l = [("interface", i.name.as_str())];
            interface_metrics(m, &l, [sum(0), sum(1), sum(2), sum(3), sum(4)]);
            m.gauge(
                "interface_up",
                "Administrative state (1 up).",
                &l,
                f64::from(u8::from(i.up)),
            );
            m.gauge("interface_mtu", "IP MTU in bytes.", &l, f64::from(i.mtu));
            m.gauge(
                "interface_addresses",
                "IPv4 and IPv6 addresses.",
                &l,
                i.all_addrs().count() as f64,
            );
            if i.vlan.is_none() {
                if let Some((link, ps)) = self.ports.port_state(i.port) {
                    port_metrics(m, &l, link, &ps);
                }
            }
            for c in PuntClass::ALL {
                let n: u64 = snaps
                    .iter()
                    .filter_map(|s| s.policed.get(ix))
                    .map(|p| p[c as usize])
                    .sum();
                m.counter(
                    "punt_policed",
                    "Punts the policer dropped, by receiving interface and class.",
                    &[("interface", i.name.as_str()), ("class", c.name())],
                    n,
                );
            }
        }
    }

    /// Per worker and in total: packets, drops and punts by reason, the scalars.
    fn scrape_workers(&self, m: &mut Scrape, snaps: &[WorkerSnap]) {
        for (w, s) in snaps.iter().enumerate() {
            let ws = w.to_string();
            worker_metrics(
                m,
                &ws,
                [
                    s.loops,
                    s.busy_loops,
                    s.busy_cycles,
                    s.idle_sleeps,
                    s.rx_wakes,
                ],
            );
            for st in Stage::ALL {
                let [calls, pkts, cycles] = s.stages[st as usize];
                let l = [("worker", ws.as_str()), ("node", st.name())];
                m.counter("node_calls", "Calls of a node (show run).", &l, calls);
                m.counter(
                    "node_vectors",
                    "Packets through a node (show run).",
                    &l,
                    pkts,
                );
                m.counter(
                    "node_clocks",
                    "TSC cycles spent in a node (show run).",
                    &l,
                    cycles,
                );
            }
        }
        let total = |f: &dyn Fn(&WorkerSnap) -> u64| -> u64 { snaps.iter().map(f).sum() };
        for r in DropReason::ALL {
            let n = total(&|s| s.drops[r as usize]);
            m.counter(
                "drops",
                "Packets dropped, by reason (show errors).",
                &[("reason", r.name())],
                n,
            );
        }
        for (k, r) in mpls::DropReason::ALL.iter().enumerate() {
            let n = total(&|s| s.mpls_drops[k]);
            m.counter(
                "drops",
                "Packets dropped, by reason (show errors).",
                &[("reason", r.name())],
                n,
            );
        }
        for r in PuntReason::ALL {
            let n = total(&|s| s.punts[r as usize]);
            m.counter(
                "punts",
                "Packets punted to the host, by reason.",
                &[("reason", r.name())],
                n,
            );
        }
        let scalars = [
            (
                "icmp_echo_replies",
                "ICMP echo replies sent by the router.",
                total(&|s| s.echo_replies),
            ),
            (
                "icmp_errors",
                "ICMP errors sent by the router.",
                total(&|s| s.icmp_errors),
            ),
            (
                "arp_replies",
                "ARP replies sent.",
                total(&|s| s.arp_replies),
            ),
            (
                "arp_requests",
                "ARP requests sent.",
                total(&|s| s.arp_requests),
            ),
            (
                "arp_consumed",
                "ARP packets taken by the workers.",
                total(&|s| s.arp_consumed),
            ),
            (
                "nd_replies",
                "Neighbour advertisements sent for the router's IPv6 addresses.",
                total(&|s| s.nd_replies),
            ),
            (
                "nd_requests",
                "Neighbour solicitations sent.",
                total(&|s| s.nd_requests),
            ),
            (
                "nd_consumed",
                "Neighbour advertisements taken by the workers.",
                total(&|s| s.nd_consumed),
            ),
            (
                "held_packets",
                "Packets held waiting for ARP.",
                total(&|s| s.held),
            ),
            (
                "held_released",
                "Held packets sent once resolved.",
                total(&|s| s.hold_released),
            ),
        ];
        for (name, help, n) in scalars {
            m.counter(name, help, &[], n);
        }
    }

    /// Routes per source and table, neighbours by source, neighbour aging.
    fn scrape_tables(&self, m: &mut Scrape) {
        // Tables: sizes per source are kept by the RIB (no walk).
        for src in RouteSource::ALL {
            m.gauge(
                "routes",
                "Route candidates, by source (the RIB).",
                &[("source", src.name())],
                self.ctl.route_count_of(src) as f64,
            );
        }
        let fib = self.ctl.fib();
        for t in fib.tables() {
            let ts = t.to_string();
            m.gauge(
                "fib_routes",
                "Routes installed in a FIB table.",
                &[("table", ts.as_str())],
                fib.route_count(t) as f64,
            );
        }
        m.gauge(
            "fib_results",
            "Distinct FIB results (path lists) held, of fib::MAX_RESULTS.",
            &[],
            fib.result_count() as f64,
        );
        m.counter(
            "fib_results_refused",
            "Routes the FIB refused because it held its limit of distinct results.",
            &[],
            fib.results_refused(),
        );
        m.gauge(
            "labels",
            "MPLS label entries installed.",
            &[],
            self.ctl.labels().len() as f64,
        );
        let mut by_source = [0u64; 3];
        for &(ix, ip) in self.ctl.neighbors().keys() {
            let k = if self.ctl.is_static_neighbor(ix, ip) {
                0
            } else if self.ctl.is_kernel_neighbor(ix, ip) {
                1
            } else {
                2
            };
            by_source[k] += 1;
        }
        by_source[1] += self.ctl.neighbors6().len() as u64;
        for (k, name) in ["static", "kernel", "arp"].iter().enumerate() {
            m.gauge(
                "neighbors",
                "Resolved neighbours, by source.",
                &[("source", name)],
                by_source[k] as f64,
            );
        }
        let (probes, forgotten) = self.ctl.aging_counts();
        m.counter(
            "neighbor_probes",
            "ARP probes of neighbour aging sent.",
            &[],
            probes,
        );
        m.counter(
            "neighbor_forgotten",
            "Neighbours forgotten after unanswered probes.",
            &[],
            forgotten,
        );
    }
}

/// An interface's traffic counters for a scrape: rx packets, rx bytes, tx
/// packets, tx bytes, drops.
pub(super) fn interface_metrics(m: &mut Scrape, l: &[(&'static str, &str)], c: [u64; 5]) {
    let names = [
        ("interface_rx_packets", "Packets received."),
        ("interface_rx_bytes", "Bytes received."),
        ("interface_tx_packets", "Packets sent."),
        ("interface_tx_bytes", "Bytes sent."),
        ("interface_drops", "Packets received and dropped."),
    ];
    for ((name, help), v) in names.into_iter().zip(c) {
        m.counter(name, help, l, v);
    }
}

/// A DPDK port's link and error counters for a scrape.
pub(super) fn port_metrics(m: &mut Scrape, l: &[(&'static str, &str)], link: bool, s: &PortStats) {
    m.gauge(
        "interface_link",
        "Carrier of the port (1 up).",
        l,
        f64::from(u8::from(link)),
    );
    let counters = [
        (
            "port_rx_missed",
            "Packets the NIC dropped for want of room (imissed).",
            s.rx_missed,
        ),
        (
            "port_rx_errors",
            "Erroneous packets received (ierrors).",
            s.rx_errors,
        ),
        (
            "port_tx_errors",
            "Packets the NIC failed to send (oerrors).",
            s.tx_errors,
        ),
        (
            "port_rx_no_mbuf",
            "Receive failures for want of a buffer (rx_nombuf).",
            s.rx_nombuf,
        ),
    ];
    for (name, help, v) in counters {
        m.counter(name, help, l, v);
    }
}

/// A worker's loop counters for a scrape: loops, busy loops, busy cycles, sleeps,
/// sleeps a frame ended.
pub(super) fn worker_metrics(m: &mut Scrape, worker: &str, c: [u64; 5]) {
    let names = [
        ("worker_loops", "Poll loops."),
        ("worker_busy_loops", "Poll loops that received packets."),
        ("worker_busy_clocks", "TSC cycles of busy loops."),
        ("worker_idle_sleeps", "Sleeps while idle."),
        (
            "worker_rx_wakes",
            "Idle sleeps ended by a port's frame (af_packet ports' sockets).",
        ),
    ];
    for ((name, help), v) in names.into_iter().zip(c) {
        m.counter(name, help, &[("worker", worker)], v);
    }
}
