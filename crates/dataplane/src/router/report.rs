//! The data behind `show run`, `show errors` and `show interfaces`, aggregated over
//! workers, with VPP-like text and JSON renderings. Reads counters while the workers
//! run; never stops them.

use std::fmt::Write;
use std::sync::Arc;

use super::iface::IfTable;
use super::reasons::{DropReason, PuntReason};
use super::stats::{Stage, WorkerStats};

/// One row of `show run`: a stage on a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Worker index.
    pub worker: usize,
    /// Stage name.
    pub stage: &'static str,
    /// Non-empty vectors the stage processed.
    pub calls: u64,
    /// Packets.
    pub pkts: u64,
    /// TSC cycles.
    pub cycles: u64,
}

impl RunRow {
    /// Cycles per packet.
    pub fn clocks_per_pkt(&self) -> f64 {
        if self.pkts == 0 {
            0.0
        } else {
            self.cycles as f64 / self.pkts as f64
        }
    }
    /// Packets per call (average vector size).
    pub fn vectors_per_call(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.pkts as f64 / self.calls as f64
        }
    }
}

/// `show run` rows for every worker and stage that ran.
pub fn run_rows(workers: &[Arc<WorkerStats>]) -> Vec<RunRow> {
    let mut rows = Vec::new();
    for (w, s) in workers.iter().enumerate() {
        for st in Stage::ALL {
            let c = &s.stages[st as usize];
            rows.push(RunRow {
                worker: w,
                stage: st.name(),
                calls: c.calls.get(),
                pkts: c.pkts.get(),
                cycles: c.cycles.get(),
            });
        }
    }
    rows
}

/// `show run` as text, per worker like VPP: name, calls, vectors, clocks/packet,
/// vectors/call.
pub fn show_run(workers: &[Arc<WorkerStats>], tsc_hz: u64) -> String {
    let mut o = String::new();
    for (w, s) in workers.iter().enumerate() {
        let busy = s.busy_cycles.get();
        let loops = s.loops.get();
        let _ = writeln!(
            o,
            "Thread {w} (worker {w}): loops {loops}, busy loops {}, busy time {:.3} s, idle sleeps {} ({} ended by a frame)",
            s.busy_loops.get(),
            busy as f64 / tsc_hz.max(1) as f64,
            s.idle_sleeps.get(),
            s.rx_wakes.get()
        );
        let _ = writeln!(
            o,
            "{:<18} {:>12} {:>14} {:>14} {:>14}",
            "Name", "Calls", "Vectors", "Clocks/pkt", "Vectors/Call"
        );
        for r in run_rows(std::slice::from_ref(s)) {
            if r.calls == 0 {
                continue;
            }
            let _ = writeln!(
                o,
                "{:<18} {:>12} {:>14} {:>14.2} {:>14.2}",
                r.stage,
                r.calls,
                r.pkts,
                r.clocks_per_pkt(),
                r.vectors_per_call()
            );
        }
    }
    o
}

/// `show run` as JSON.
pub fn show_run_json(workers: &[Arc<WorkerStats>]) -> String {
    let mut o = String::from("[");
    for (i, r) in run_rows(workers).iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(
            o,
            "{{\"worker\":{},\"stage\":\"{}\",\"calls\":{},\"vectors\":{},\"cycles\":{},\"clocks_per_pkt\":{:.3},\"vectors_per_call\":{:.3}}}",
            r.worker,
            r.stage,
            r.calls,
            r.pkts,
            r.cycles,
            r.clocks_per_pkt(),
            r.vectors_per_call()
        );
    }
    o.push(']');
    o
}

/// Non-zero error counters summed over workers: (name, count).
pub fn errors(workers: &[Arc<WorkerStats>]) -> Vec<(&'static str, u64)> {
    let mut v = Vec::new();
    for r in DropReason::ALL {
        let n: u64 = workers.iter().map(|w| w.drops[r as usize].get()).sum();
        if n > 0 {
            v.push((r.name(), n));
        }
    }
    for (k, r) in mpls::DropReason::ALL.iter().enumerate() {
        let n: u64 = workers.iter().map(|w| w.mpls_drops[k].get()).sum();
        if n > 0 {
            v.push((r.name(), n));
        }
    }
    for r in PuntReason::ALL {
        let n: u64 = workers.iter().map(|w| w.punts[r as usize].get()).sum();
        if n > 0 {
            v.push((r.name(), n));
        }
    }
    v
}

/// `show errors` as text.
pub fn show_errors(workers: &[Arc<WorkerStats>]) -> String {
    let mut o = format!("{:>12}  {}\n", "Count", "Reason");
    for (name, n) in errors(workers) {
        let _ = writeln!(o, "{n:>12}  {name}");
    }
    o
}

/// Per-interface totals over workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IfaceRow {
    /// ifIndex.
    pub ifindex: u32,
    /// Name.
    pub name: String,
    /// Admin state.
    pub up: bool,
    /// Counters.
    pub rx_pkts: u64,
    /// Counters.
    pub rx_bytes: u64,
    /// Counters.
    pub tx_pkts: u64,
    /// Counters.
    pub tx_bytes: u64,
    /// Counters.
    pub drops: u64,
}

/// Interface rows.
pub fn iface_rows(ift: &IfTable, workers: &[Arc<WorkerStats>]) -> Vec<IfaceRow> {
    ift.iter()
        .map(|i| {
            let ix = i.ifindex as usize;
            let sum = |f: &dyn Fn(&super::stats::IfaceCounters) -> u64| -> u64 {
                workers.iter().filter_map(|w| w.ifaces.get(ix)).map(f).sum()
            };
            IfaceRow {
                ifindex: i.ifindex,
                name: i.name.clone(),
                up: i.up,
                rx_pkts: sum(&|c| c.rx_pkts.get()),
                rx_bytes: sum(&|c| c.rx_bytes.get()),
                tx_pkts: sum(&|c| c.tx_pkts.get()),
                tx_bytes: sum(&|c| c.tx_bytes.get()),
                drops: sum(&|c| c.drops.get()),
            }
        })
        .collect()
}
