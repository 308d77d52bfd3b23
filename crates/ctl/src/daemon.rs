//! The daemon: start EAL, open the ports, launch one worker per worker lcore (L2
//! cross-connect or router), then run the control thread on the EAL main lcore until
//! SIGINT/SIGTERM: a current-thread tokio runtime serving the control socket, the
//! 20 ms control tick, the periodic counters report and SIGHUP (reload).

use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;

use dataplane::dpdk::{Eal, Mempool, Port, tsc_hz};
use dataplane::router::{
    CoreConfig, RouterControl, RouterWorker, SflowHook, Stage, WorkerStats, report,
};
use dataplane::xconnect::{RxAssignment, WorkerCounters, XconnectWorker};

use crate::api::{DaemonInfo, DpdkPorts, RouterApi, XconnectApi, XconnectPort};
use crate::config::{Config, Mode, Plan};
use crate::linux::LinuxPlane;
use crate::metrics::{Scrape, ScrapeRequest};
use crate::routing::{PortInfo, apply};
use crate::server::{ControlSocket, Job, Service, accept_loop};

/// How the daemon reports while it runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Print a counters line this often.
    pub stats_interval: Option<Duration>,
    /// Counters lines as JSON (one object per line) instead of text.
    pub stats_json: bool,
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
    /// The configuration file, re-read on reload.
    pub config_path: Option<PathBuf>,
    /// The control socket (`--socket`, else `[control] socket`).
    pub socket: PathBuf,
    /// The daemon's executable, started as the twins' keeper (`[linux]
    /// keep_twins`); none keeps the twins only as long as this process.
    pub keeper: Option<PathBuf>,
}

/// Everything the control thread needs besides the service.
struct Control<'a> {
    opts: &'a RunOptions,
    stop: &'a AtomicBool,
    hup: &'a AtomicBool,
    socket: ControlSocket,
    /// The metrics listener (`[metrics] listen`).
    metrics: Option<std::net::TcpListener>,
}

/// Assigns rx queues to xconnect workers: queue q of every port goes to worker
/// q % workers, and a worker sends on its own tx queue (its index) of the peer port.
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

/// The rx queues of each router worker: (port id, queue), same rule as xconnect.
pub fn router_queues(plan: &Plan, port_ids: &[u16]) -> Vec<Vec<(u16, u16)>> {
    let mut per_worker = vec![Vec::new(); plan.workers];
    for (i, p) in plan.ports.iter().enumerate() {
        for q in 0..p.rx_queues {
            per_worker[usize::from(q) % plan.workers].push((port_ids[i], q));
        }
    }
    per_worker
}

#[derive(Clone, Copy)]
struct Snapshot {
    rx: u64,
    tx: u64,
    drops: u64,
    busy_cycles: u64,
    at: Instant,
}

/// What the periodic report reads: one of the two worker kinds' counters.
enum Counters {
    Xconnect(Vec<Arc<WorkerCounters>>),
    Router(Vec<Arc<WorkerStats>>),
}

impl Counters {
    fn snapshot(&self) -> Snapshot {
        let (rx, tx, drops, busy_cycles) = match self {
            Counters::Xconnect(ws) => (
                ws.iter().map(|w| w.rx_pkts()).sum(),
                ws.iter().map(|w| w.tx_pkts()).sum(),
                ws.iter().map(|w| w.tx_drops()).sum(),
                ws.iter().map(|w| w.busy_cycles.get()).sum(),
            ),
            Counters::Router(ws) => (
                ws.iter()
                    .map(|w| w.stages[Stage::Rx as usize].pkts.get())
                    .sum(),
                ws.iter()
                    .map(|w| w.ifaces.iter().map(|i| i.tx_pkts.get()).sum::<u64>())
                    .sum(),
                ws.iter().map(|w| w.total_drops()).sum(),
                ws.iter().map(|w| w.busy_cycles.get()).sum(),
            ),
        };
        Snapshot {
            rx,
            tx,
            drops,
            busy_cycles,
            at: Instant::now(),
        }
    }
}

/// Runs the router until a signal (or `opts.duration`). `config` is the file as
/// loaded (reload compares against it). Returns after a clean stop.
pub fn run(config: &Config, mut plan: Plan, opts: &RunOptions) -> Result<()> {
    crate::log::init(&config.log).map_err(anyhow::Error::msg)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while stopping kills the process (exit code 1).
        signal_hook::flag::register_conditional_shutdown(sig, 1, stop.clone())
            .context("installing signal handlers")?;
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    // SIGHUP reloads; registered before EAL so an early one does not kill the daemon.
    let hup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())
        .context("installing signal handlers")?;
    // Before EAL: a second daemon on the same socket is refused before it touches
    // hugepages or devices.
    let socket = ControlSocket::bind(&opts.socket, plan.socket_mode)?;
    let metrics = match &config.metrics {
        Some(m) => Some(crate::metrics::bind(m.listen)?),
        None => None,
    };
    let control = Control {
        opts,
        stop: &stop,
        hup: &hup,
        socket,
        metrics,
    };

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
    for (p, pc) in ports.iter().zip(&plan.ports) {
        let m = p.mac();
        tracing::info!(
            "{} = {} ({}) id {} mac {} queues {}/{}{}{}",
            p.name(),
            pc.device,
            p.driver(),
            p.id(),
            mac_str(m),
            p.rx_queues(),
            p.tx_queues(),
            if p.rss() { " rss" } else { "" },
            if p.rx_checksum() { " rx-checksum" } else { "" }
        );
    }
    let info = DaemonInfo {
        config_path: opts.config_path.clone(),
        config: config.clone(),
        socket: opts.socket.clone(),
        lcores: eal.worker_lcores().to_vec(),
        tsc_hz: tsc_hz(),
        started: Instant::now(),
        metrics: control.metrics.as_ref().and_then(|l| l.local_addr().ok()),
    };
    let result = match plan.mode {
        Mode::Xconnect => run_xconnect(eal, &plan, control, info, &ports),
        Mode::Router => run_router(eal, &mut plan, control, info, &ports, &pool),
    };
    drop(ports);
    drop(pool);
    if let Err(e) = eal.cleanup() {
        tracing::error!("{e}");
    }
    result
}

/// Launches `jobs` on the worker lcores in order; on failure stops what started.
fn launch_all(
    eal: &'static Eal,
    jobs: Vec<Box<dyn FnOnce() -> i32 + Send>>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<u32>> {
    let mut launched = Vec::new();
    for (w, job) in jobs.into_iter().enumerate() {
        let lcore = eal.worker_lcores()[w];
        if let Err(e) = eal.launch(lcore, job) {
            stop.store(true, Ordering::SeqCst);
            for l in launched {
                eal.wait(l);
            }
            return Err(e.into());
        }
        launched.push(lcore);
    }
    Ok(launched)
}

/// The control thread while the workers run, on the EAL main lcore: a
/// current-thread tokio runtime that serves the control socket, calls
/// `svc.tick()` every 20 ms, `svc.io()` when one of its sockets is readable (and
/// on the tick), prints the periodic report, reloads on SIGHUP, and returns on
/// SIGINT/SIGTERM or after the duration.
fn control_loop(
    c: &mut Control<'_>,
    counters: &Counters,
    svc: &mut dyn Service,
) -> Result<Duration> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the control thread's runtime")?;
    let opts = c.opts;
    let (stop, hup) = (c.stop, c.hup);
    rt.block_on(async {
        let listener = c.socket.take_listener()?;
        let (tx, mut jobs) = mpsc::channel::<Job>(64);
        let acceptor = tokio::spawn(accept_loop(listener, tx));
        let (scrape_tx, mut scrapes) = mpsc::channel::<ScrapeRequest>(4);
        let exporter = match c.metrics.take() {
            Some(l) => {
                let l = tokio::net::TcpListener::from_std(l).context("[metrics] listen")?;
                tracing::info!("metrics: http://{}/metrics", l.local_addr()?);
                Some(tokio::spawn(crate::metrics::serve(l, scrape_tx)))
            }
            None => None,
        };
        let t_start = Instant::now();
        let mut last = counters.snapshot();
        let mut next_report = opts.stats_interval.map(|d| t_start + d);
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let io = svc.wants_io();
        let watch = if io {
            Some(
                IoWatch::new()
                    .context("creating the control thread's epoll")?
                    .register()?,
            )
        } else {
            None
        };
        let mut io_more = false;
        loop {
            if let Some(w) = &watch {
                w.get_ref().sync(&svc.io_fds());
            }
            tokio::select! {
                r = async {
                    match &watch {
                        Some(w) => w.readable().await,
                        None => std::future::pending().await,
                    }
                }, if !io_more => {
                    if let Ok(mut g) = r {
                        // Everything readable now is read below; what comes
                        // after raises the readiness again.
                        g.clear_ready();
                    }
                    io_more = svc.io();
                }
                _ = tokio::task::yield_now(), if io_more => io_more = svc.io(),
                _ = tick.tick() => {
                    if io {
                        // Work due by time: quiet periods ended, holds expired.
                        io_more = svc.io();
                    }
                    svc.tick();
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if hup.swap(false, Ordering::Relaxed) {
                        crate::notify::notify("RELOADING=1");
                        let done = svc.handle(&["reload".to_string()]);
                        crate::notify::ready("reloaded");
                        match done {
                            Ok(v) => tracing::info!(
                                "SIGHUP: {}",
                                v["message"].as_str().unwrap_or("reloaded")
                            ),
                            Err(e) => tracing::warn!("SIGHUP: {e}"),
                        }
                    }
                    if opts.duration.is_some_and(|d| t_start.elapsed() >= d) {
                        break;
                    }
                    if let (Some(at), Some(every)) = (next_report, opts.stats_interval) {
                        if Instant::now() >= at {
                            let now = counters.snapshot();
                            report_line(&last, &now, t_start, opts.stats_json);
                            last = now;
                            next_report = Some(at + every);
                        }
                    }
                }
                Some(job) = jobs.recv() => {
                    let _ = job.reply.send(svc.handle(&job.args));
                }
                Some((openmetrics, reply)) = scrapes.recv() => {
                    let mut s = Scrape::new();
                    svc.metrics(&mut s);
                    let _ = reply.send(s.encode(openmetrics));
                }
            }
        }
        crate::notify::notify("STOPPING=1");
        acceptor.abort();
        if let Some(e) = exporter {
            e.abort();
        }
        Ok(t_start.elapsed())
    })
}

/// An epoll set of the service's I/O descriptors, itself watched by the
/// runtime: one readiness for any number of sockets, with no fixed-interval
/// polling.
#[derive(Debug)]
struct IoWatch {
    epoll: Epoll,
    /// What is registered: descriptor number -> token.
    registered: std::cell::RefCell<std::collections::HashMap<RawFd, u64>>,
}

impl IoWatch {
    fn new() -> nix::Result<IoWatch> {
        Ok(IoWatch {
            epoll: Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?,
            registered: Default::default(),
        })
    }

    /// Registers the descriptors not registered yet (or replaced: same number,
    /// new token). A closed descriptor leaves the epoll set by itself.
    fn sync(&self, fds: &[(BorrowedFd<'_>, u64)]) {
        let mut reg = self.registered.borrow_mut();
        if fds.len() == reg.len()
            && fds
                .iter()
                .all(|(fd, t)| reg.get(&fd.as_raw_fd()) == Some(t))
        {
            return;
        }
        let mut now = std::collections::HashMap::new();
        for (fd, token) in fds {
            let raw = fd.as_raw_fd();
            if reg.get(&raw) != Some(token) {
                let ev = EpollEvent::new(EpollFlags::EPOLLIN, *token);
                if self.epoll.add(fd, ev).is_err() {
                    let _ = self
                        .epoll
                        .modify(fd, &mut EpollEvent::new(EpollFlags::EPOLLIN, *token));
                }
            }
            now.insert(raw, *token);
        }
        *reg = now;
    }
}

impl IoWatch {
    /// Hands the epoll set to the runtime's reactor.
    #[allow(unsafe_code)]
    fn register(self) -> std::io::Result<AsyncFd<IoWatch>> {
        // SAFETY: the epoll descriptor is owned by the `IoWatch` (an `OwnedFd`
        // never replaced), so it stays open and the same for as long as the
        // `AsyncFd` holds it.
        unsafe { AsyncFd::register_with_interest(self, Interest::READABLE) }.map_err(Into::into)
    }
}

impl AsRawFd for IoWatch {
    fn as_raw_fd(&self) -> RawFd {
        self.epoll.0.as_raw_fd()
    }
}

fn stop_workers(eal: &Eal, worker_stop: &AtomicBool, launched: Vec<u32>) -> bool {
    worker_stop.store(true, Ordering::SeqCst);
    let mut ok = true;
    for l in launched {
        if eal.wait(l) != 0 {
            ok = false;
        }
    }
    ok
}

fn run_xconnect(
    eal: &'static Eal,
    plan: &Plan,
    mut control: Control<'_>,
    info: DaemonInfo,
    ports: &[Port],
) -> Result<()> {
    let ids: Vec<u16> = ports.iter().map(Port::id).collect();
    let worker_stop = Arc::new(AtomicBool::new(false));
    let mut counters = Vec::new();
    let mut queues = Vec::new();
    let mut jobs: Vec<Box<dyn FnOnce() -> i32 + Send>> = Vec::new();
    for assignments in assign_queues(plan, &ids) {
        let mut worker = XconnectWorker::new(assignments.clone(), worker_stop.clone(), plan.idle);
        counters.push(worker.counters());
        queues.push(assignments);
        jobs.push(Box::new(move || {
            worker.run();
            0
        }));
    }
    let launched = launch_all(eal, jobs, &worker_stop)?;
    tracing::info!(
        "forwarding (xconnect) with {} worker(s) on lcores {:?}; control socket {}; SIGINT/SIGTERM stops",
        plan.workers,
        eal.worker_lcores(),
        control.socket.path().display()
    );
    crate::notify::ready(&format!(
        "forwarding (xconnect), {} worker(s)",
        plan.workers
    ));
    let c = Counters::Xconnect(counters.clone());
    let name = |id: u16| {
        ports
            .iter()
            .find(|p| p.id() == id)
            .map_or("?", |p| p.name())
            .to_string()
    };
    let port_list = ports
        .iter()
        .enumerate()
        .map(|(k, p)| XconnectPort {
            name: p.name().to_string(),
            id: p.id(),
            driver: p.driver().to_string(),
            mac: p.mac(),
            peer: name(ids[plan.peer[k]]),
        })
        .collect();
    let dpdk_ports = DpdkPorts(ports);
    let mut api = XconnectApi::new(
        &dpdk_ports,
        port_list,
        counters.clone(),
        queues.clone(),
        info,
    );
    let elapsed = control_loop(&mut control, &c, &mut api);
    let ok = stop_workers(eal, &worker_stop, launched);
    let elapsed = elapsed?;
    print_xconnect_summary(ports, &counters, &queues, elapsed);
    if !ok {
        bail!("a worker panicked; see the messages above");
    }
    Ok(())
}

fn run_router(
    eal: &'static Eal,
    plan: &mut Plan,
    mut control: Control<'_>,
    info: DaemonInfo,
    ports: &[Port],
    pool: &Arc<Mempool>,
) -> Result<()> {
    let ids: Vec<u16> = ports.iter().map(Port::id).collect();
    let infos: Vec<PortInfo> = ports
        .iter()
        .map(|p| PortInfo {
            name: p.name().to_string(),
            id: p.id(),
            mac: p.mac(),
        })
        .collect();
    let mut ctl = RouterControl::with_label_slots(
        plan.routing
            .router
            .label_slots
            .unwrap_or(mpls::DEFAULT_SLOTS),
    );
    apply(&plan.routing, &infos, &mut ctl).map_err(|e| anyhow!(e))?;
    // The Linux control plane: twins and the first netlink dump before the
    // workers start, so they forward on the kernel's state from the first packet.
    let mut linux = match &info.config.linux {
        Some(section) => {
            let plane = LinuxPlane::start(
                section,
                info.config.fpm.as_ref(),
                &mut ctl,
                control.opts.keeper.as_deref(),
            )
            .map_err(|e| anyhow!(e))?;
            tracing::info!("linux: {plane}");
            Some(plane)
        }
        None => None,
    };
    let punt_rates = info
        .config
        .linux
        .as_ref()
        .map(|l| l.punt_rates())
        .unwrap_or_default();
    let cfg = core_config(plan, ports);
    let n_ports = ids.iter().map(|&i| usize::from(i) + 1).max().unwrap_or(0);
    // sFlow: the agent lives here (the control thread); each worker gets its
    // sampler. With no [sflow] section nothing is sampled and the workers' cost is
    // one load per vector.
    let sflow_cfg = {
        let names = |n: &str| ctl.iface_by_name(n).ok().map(|i| i.ifindex);
        let rid = info
            .config
            .router
            .router_id
            .as_deref()
            .and_then(|r| r.parse().ok());
        crate::sflow_agent::agent_config(info.config.sflow.as_ref(), &names, rid)
            .map_err(|e| anyhow!("{e}"))?
    };
    let mut agent = sflow::Agent::new(sflow_cfg.clone()).context("[sflow]")?;
    let worker_stop = Arc::new(AtomicBool::new(false));
    let mut jobs: Vec<Box<dyn FnOnce() -> i32 + Send>> = Vec::new();
    for (w, rx) in router_queues(plan, &ids).into_iter().enumerate() {
        let (core, punts) = ctl.new_core(cfg, tsc_hz());
        // An idle worker sleeps in poll on its af_packet ports' sockets, so
        // their next frame wakes it (every queue pair's socket: another
        // worker's frame wakes it for nothing, never late).
        let rx_wait: Vec<_> = ports
            .iter()
            .filter(|p| rx.iter().any(|&(id, _)| id == p.id()))
            .flat_map(Port::rx_wait_fds)
            .collect();
        let mut worker = RouterWorker::new(
            core,
            rx,
            w as u16,
            n_ports,
            punts,
            worker_stop.clone(),
            plan.idle,
        )
        .with_sflow(SflowHook::new(
            agent.add_worker(w as u32).context("[sflow] worker")?,
        ))
        .with_inject(ctl.workers()[w].inject.clone())
        .with_wake(ctl.workers()[w].wake.clone())
        .with_rx_wait(rx_wait)
        .with_sessions(ctl.sessions())
        .with_pool(pool.clone())
        .with_punt_rates(punt_rates);
        if let Some(l) = &linux {
            worker = worker.with_punt_signal(l.punt_signal());
        }
        jobs.push(Box::new(move || {
            worker.run();
            0
        }));
    }
    if let Some(l) = &mut linux {
        let cpus: Vec<usize> = plan.eal.worker_cpus.iter().map(|&c| c.into()).collect();
        l.start_punt_path(&ctl, pool.clone(), &cpus)
            .context("[linux] punt path thread")?;
    }
    // (the file's parse is done: a full table's buffers go back to the system)
    crate::linux::heap::trim();
    let launched = launch_all(eal, jobs, &worker_stop)?;
    // (table 0, both families)
    let routes = ctl.fib().route_count(0) + ctl.fib().route6_count(0);
    tracing::info!(
        "forwarding (router) with {} worker(s) on lcores {:?}, {} interface(s), {} route(s), {} label(s); control socket {}; SIGINT/SIGTERM stops",
        plan.workers,
        eal.worker_lcores(),
        ctl.ifaces().iter().count(),
        routes,
        ctl.labels().len(),
        control.socket.path().display()
    );
    crate::notify::ready(&format!(
        "forwarding (router), {} worker(s), {} route(s)",
        plan.workers, routes
    ));
    let c = Counters::Router(ctl.worker_stats());
    let dpdk_ports = DpdkPorts(ports);
    // ARP probes of neighbour aging go out through the first worker.
    let inject = ctl.workers().first().map(|w| w.inject.clone());
    // (applied: what a reload needs of the file's routes is their digest)
    let _ = plan.routing.compact();
    let routing = std::mem::take(&mut plan.routing);
    let mut api =
        RouterApi::new(&mut ctl, &dpdk_ports, infos, routing, info).with_sflow(agent, sflow_cfg);
    if let Some(q) = inject {
        api = api.with_probes(pool, q);
    }
    if let Some(l) = linux {
        api = api.with_linux(l);
    }
    let elapsed = control_loop(&mut control, &c, &mut api);
    drop(api);
    let ok = stop_workers(eal, &worker_stop, launched);
    let elapsed = elapsed?;
    for h in ctl.workers() {
        while h.punts.pop().is_some() {}
    }
    print_router_report(&ctl, elapsed);
    if !ok {
        bail!("a worker panicked; see the messages above");
    }
    Ok(())
}

/// The workers' settings from the file: the ICMP rate and which ports' devices
/// give a checksum verdict worth reading.
fn core_config(plan: &Plan, ports: &[Port]) -> CoreConfig {
    let mut cfg = CoreConfig::default();
    if let Some(r) = plan.routing.router.icmp_rate_pps {
        cfg.icmp_rate_pps = r;
    }
    // Only devices with rx checksum offload leave a verdict worth reading (port
    // ids from 64 on are always read).
    cfg.nic_csum_ports = ports.iter().filter(|p| p.rx_checksum()).fold(0, |m, p| {
        m | 1u64.checked_shl(u32::from(p.id())).unwrap_or(0)
    });
    cfg
}

/// What the router did, on stdout when it stops: per interface, then the
/// workers' run and error counters.
fn print_router_report(ctl: &RouterControl, elapsed: std::time::Duration) {
    let stats = ctl.worker_stats();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "dataplaned: stopped after {:.1} s",
        elapsed.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "{:<12} {:>7} {:>12} {:>14} {:>12} {:>14} {:>10}",
        "interface", "ifindex", "rx-pkts", "rx-bytes", "tx-pkts", "tx-bytes", "drops"
    );
    for r in report::iface_rows(&ctl.ifaces(), &stats) {
        let _ = writeln!(
            out,
            "{:<12} {:>7} {:>12} {:>14} {:>12} {:>14} {:>10}",
            r.name, r.ifindex, r.rx_pkts, r.rx_bytes, r.tx_pkts, r.tx_bytes, r.drops
        );
    }
    let _ = write!(out, "{}", report::show_run(&stats, tsc_hz()));
    let _ = write!(out, "{}", report::show_errors(&stats));
    let _ = out.flush();
}

fn mac_str(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

fn report_line(last: &Snapshot, now: &Snapshot, t0: Instant, json: bool) {
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
            "{{\"t\":{t:.3},\"dt\":{dt:.3},\"rx_pkts\":{rx},\"tx_pkts\":{tx},\"drops\":{drops},\"busy_cycles\":{cyc},\"rx_mpps\":{:.3},\"tx_mpps\":{:.3},\"cycles_per_pkt\":{cpp:.2},\"tsc_hz\":{}}}",
            rx as f64 / dt / 1e6,
            tx as f64 / dt / 1e6,
            tsc_hz()
        )
    } else {
        writeln!(
            out,
            "t={t:7.1}s  rx {:>10.3} Mpps  tx {:>10.3} Mpps  drops {drops:>8}  busy {cpp:6.1} cycles/pkt",
            rx as f64 / dt / 1e6,
            tx as f64 / dt / 1e6
        )
    };
    let _ = out.flush();
}

fn print_xconnect_summary(
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
