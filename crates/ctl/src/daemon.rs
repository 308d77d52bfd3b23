//! The daemon: start EAL, open the ports, launch one worker per worker lcore, report
//! counters, and stop cleanly on SIGINT/SIGTERM.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use dataplane::dpdk::{Eal, Mempool, Port, tsc_hz};
use dataplane::xconnect::{RxAssignment, WorkerCounters, XconnectWorker};

use crate::config::Plan;

/// How the daemon reports while it runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Print a counters line this often.
    pub stats_interval: Option<Duration>,
    /// Counters lines as JSON (one object per line) instead of text.
    pub stats_json: bool,
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
}

/// Assigns rx queues to workers: queue q of every port goes to worker q % workers,
/// and a worker sends on its own tx queue (its index) of the peer port.
pub fn assign_queues(plan: &Plan, port_ids: &[u16]) -> Vec<Vec<RxAssignment>> {
    let mut per_worker = vec![Vec::new(); plan.workers];
    for (i, p) in plan.ports.iter().enumerate() {
        for q in 0..p.rx_queues {
            let w = usize::from(q) % plan.workers;
            per_worker[w].push(RxAssignment {
                port: port_ids[i],
                queue: q,
                peer: port_ids[plan.peer[i]],
                tx_queue: w as u16,
            });
        }
    }
    per_worker
}

struct Snapshot {
    rx: u64,
    tx: u64,
    drops: u64,
    busy_cycles: u64,
    at: Instant,
}

fn snapshot(workers: &[Arc<WorkerCounters>]) -> Snapshot {
    Snapshot {
        rx: workers.iter().map(|w| w.rx_pkts()).sum(),
        tx: workers.iter().map(|w| w.tx_pkts()).sum(),
        drops: workers.iter().map(|w| w.tx_drops()).sum(),
        busy_cycles: workers.iter().map(|w| w.busy_cycles.get()).sum(),
        at: Instant::now(),
    }
}

/// Runs the router until a signal (or `opts.duration`). Returns after a clean stop.
pub fn run(plan: &Plan, opts: &RunOptions) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while stopping kills the process (exit code 1).
        signal_hook::flag::register_conditional_shutdown(sig, 1, stop.clone())
            .context("installing signal handlers")?;
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }

    let eal = Eal::init_with(&plan.eal)?;
    if eal.worker_lcores().len() != plan.workers {
        bail!(
            "EAL started {} worker lcores, the config asks for {}",
            eal.worker_lcores().len(),
            plan.workers
        );
    }
    let mp = &plan.mempool;
    let pool = Mempool::new(eal, "dp_mbufs", mp.mbufs, mp.cache, mp.data_room).context(
        "creating the packet buffer pool (lower [mempool] mbufs or raise [eal] memory_mb)",
    )?;
    let mut ports = Vec::new();
    for pc in &plan.ports {
        ports.push(Port::open(eal, pc, pool.clone())?);
    }
    let ids: Vec<u16> = ports.iter().map(Port::id).collect();
    for (p, pc) in ports.iter().zip(&plan.ports) {
        let m = p.mac();
        eprintln!(
            "dataplaned: {} = {} ({}) id {} mac {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} queues {}/{}{}",
            p.name(),
            pc.device,
            p.driver(),
            p.id(),
            m[0],
            m[1],
            m[2],
            m[3],
            m[4],
            m[5],
            p.rx_queues(),
            p.tx_queues(),
            if p.rss() { " rss" } else { "" }
        );
    }

    let worker_stop = Arc::new(AtomicBool::new(false));
    let mut counters = Vec::new();
    let mut plan_queues = Vec::new();
    let mut launched = Vec::new();
    for (w, assignments) in assign_queues(plan, &ids).into_iter().enumerate() {
        let lcore = eal.worker_lcores()[w];
        let mut worker = XconnectWorker::new(assignments.clone(), worker_stop.clone(), plan.idle);
        counters.push(worker.counters());
        plan_queues.push(assignments);
        let started = eal.launch(lcore, move || {
            worker.run();
            0
        });
        if let Err(e) = started {
            worker_stop.store(true, Ordering::SeqCst);
            for l in launched {
                eal.wait(l);
            }
            return Err(e.into());
        }
        launched.push(lcore);
    }
    eprintln!(
        "dataplaned: forwarding (xconnect) with {} worker(s) on lcores {:?}; SIGINT/SIGTERM stops",
        plan.workers,
        eal.worker_lcores()
    );

    let t_start = Instant::now();
    let mut last = snapshot(&counters);
    let mut next_report = opts.stats_interval.map(|d| t_start + d);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
        if let Some(d) = opts.duration {
            if t_start.elapsed() >= d {
                break;
            }
        }
        if let (Some(at), Some(every)) = (next_report, opts.stats_interval) {
            if Instant::now() >= at {
                let now = snapshot(&counters);
                report(&last, &now, t_start, opts.stats_json);
                last = now;
                next_report = Some(at + every);
            }
        }
    }

    worker_stop.store(true, Ordering::SeqCst);
    let mut failed = false;
    for l in launched {
        if eal.wait(l) != 0 {
            failed = true;
        }
    }
    let elapsed = t_start.elapsed();
    print_summary(&ports, &counters, &plan_queues, elapsed);
    drop(ports);
    drop(pool);
    if let Err(e) = eal.cleanup() {
        eprintln!("dataplaned: {e}");
    }
    if failed {
        bail!("a worker panicked; see the messages above");
    }
    Ok(())
}

fn report(last: &Snapshot, now: &Snapshot, t0: Instant, json: bool) {
    let dt = now.at.duration_since(last.at).as_secs_f64().max(1e-9);
    let rx = now.rx - last.rx;
    let tx = now.tx - last.tx;
    let drops = now.drops - last.drops;
    let cyc = now.busy_cycles - last.busy_cycles;
    let cpp = if rx > 0 { cyc as f64 / rx as f64 } else { 0.0 };
    let t = now.at.duration_since(t0).as_secs_f64();
    let mut out = std::io::stdout().lock();
    let _ = if json {
        writeln!(
            out,
            "{{\"t\":{t:.3},\"dt\":{dt:.3},\"rx_pkts\":{rx},\"tx_pkts\":{tx},\"tx_drops\":{drops},\"busy_cycles\":{cyc},\"rx_mpps\":{:.3},\"tx_mpps\":{:.3},\"cycles_per_pkt\":{cpp:.2},\"tsc_hz\":{}}}",
            rx as f64 / dt / 1e6,
            tx as f64 / dt / 1e6,
            tsc_hz()
        )
    } else {
        writeln!(
            out,
            "t={t:7.1}s  rx {:>10.3} Mpps  tx {:>10.3} Mpps  tx-drops {drops:>8}  busy {cpp:6.1} cycles/pkt",
            rx as f64 / dt / 1e6,
            tx as f64 / dt / 1e6
        )
    };
    let _ = out.flush();
}

fn print_summary(
    ports: &[Port],
    counters: &[Arc<WorkerCounters>],
    queues: &[Vec<RxAssignment>],
    elapsed: Duration,
) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "dataplaned: stopped after {:.1} s",
        elapsed.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "{:<8} {:<16} {:>5} {:>12} {:>14} {:>12} {:>14} {:>10} {:>10}",
        "port",
        "driver",
        "link",
        "rx-pkts",
        "rx-bytes",
        "tx-pkts",
        "tx-bytes",
        "rx-missed",
        "tx-errors"
    );
    for p in ports {
        let s = p.stats();
        let _ = writeln!(
            out,
            "{:<8} {:<16} {:>5} {:>12} {:>14} {:>12} {:>14} {:>10} {:>10}",
            p.name(),
            p.driver(),
            if p.link().up { "up" } else { "down" },
            s.rx_pkts,
            s.rx_bytes,
            s.tx_pkts,
            s.tx_bytes,
            s.rx_missed,
            s.tx_errors
        );
    }
    let _ = writeln!(
        out,
        "{:<7} {:<22} {:>12} {:>12} {:>10} {:>12} {:>16}",
        "worker",
        "queue -> peer",
        "rx-pkts",
        "tx-pkts",
        "tx-drops",
        "busy-loops",
        "cycles/pkt(busy)"
    );
    let name = |id: u16| {
        ports
            .iter()
            .find(|p| p.id() == id)
            .map_or("?", |p| p.name())
            .to_string()
    };
    for (w, c) in counters.iter().enumerate() {
        let rx_all = c.rx_pkts();
        let cpp = if rx_all > 0 {
            c.busy_cycles.get() as f64 / rx_all as f64
        } else {
            0.0
        };
        for (i, (q, a)) in c.queues.iter().zip(&queues[w]).enumerate() {
            let _ = writeln!(
                out,
                "{:<7} {:<22} {:>12} {:>12} {:>10} {:>12} {:>16}",
                w,
                format!("{}/q{} -> {}", name(a.port), a.queue, name(a.peer)),
                q.rx_pkts.get(),
                q.tx_pkts.get(),
                q.tx_drops.get(),
                if i == 0 {
                    c.busy_loops.get().to_string()
                } else {
                    String::new()
                },
                if i == 0 {
                    format!("{cpp:.1}")
                } else {
                    String::new()
                }
            );
        }
    }
    let _ = out.flush();
}
