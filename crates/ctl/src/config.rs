//! The daemon's configuration file (TOML).
//!
//! One file describes the whole router: EAL and memory, workers, ports, and the
//! forwarding mode. Sections are added as the router grows (interfaces, routes,
//! labels, sFlow); unknown keys are errors, so a typo never passes silently.
//!
//! ```toml
//! [eal]
//! main_cpu = 0
//! memory = "auto"          # auto | hugepages | in-memory | no-huge
//! memory_mb = 512
//!
//! [workers]
//! cpus = [1]               # one worker lcore per entry, pinned to that CPU
//!
//! [[port]]
//! name = "port0"
//! device = "net_af_packet0,iface=veth0"   # any vdev string or a PCI address
//!
//! [[port]]
//! name = "port1"
//! device = "net_af_packet1,iface=veth1"
//!
//! [forwarding]
//! mode = "xconnect"
//! pairs = [["port0", "port1"]]
//! ```

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use dataplane::dpdk::{EalConfig, MemoryMode, PortConfig};
use dataplane::xconnect::{IdlePolicy, pair_ports};

/// Errors in the configuration file.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: std::io::Error,
    },
    /// TOML syntax error, unknown key or wrong type (the message has line and column).
    #[error("config {path}: {msg}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message, flattened to one line.
        msg: String,
    },
    /// The file parses but says something impossible.
    #[error("config {path}: {msg}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong and how to fix it.
        msg: String,
    },
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// EAL options.
    #[serde(default)]
    pub eal: EalSection,
    /// Packet buffer pool.
    #[serde(default)]
    pub mempool: MempoolSection,
    /// Worker lcores.
    #[serde(default)]
    pub workers: WorkersSection,
    /// Ports, in order (port ids and ifIndex numbering follow this order).
    #[serde(default, rename = "port")]
    pub ports: Vec<PortSection>,
    /// Forwarding mode.
    #[serde(default)]
    pub forwarding: ForwardingSection,
    /// Router settings.
    #[serde(default)]
    pub router: crate::routing::RouterSection,
    /// Interfaces (router mode).
    #[serde(default, rename = "interface")]
    pub interfaces: Vec<crate::routing::InterfaceSection>,
    /// Static neighbours (router mode).
    #[serde(default, rename = "neighbor")]
    pub neighbors: Vec<crate::routing::NeighborSection>,
    /// Routes (router mode).
    #[serde(default, rename = "route")]
    pub routes: Vec<crate::routing::RouteSection>,
    /// Label entries (router mode).
    #[serde(default, rename = "label")]
    pub labels: Vec<crate::routing::LabelSection>,
    /// Named tables (router mode).
    #[serde(default, rename = "vrf")]
    pub vrfs: Vec<crate::routing::VrfSection>,
    /// Pseudowires (router mode).
    #[serde(default, rename = "pw")]
    pub pws: Vec<crate::routing::PwSection>,
    /// The daemon's log.
    #[serde(default)]
    pub log: crate::log::LogSection,
    /// The control socket.
    #[serde(default)]
    pub control: ControlSection,
    /// sFlow (router mode; applied at start and by reload).
    #[serde(default)]
    pub sflow: Option<crate::sflow_agent::SflowSection>,
    /// The Linux control plane (router mode; applied at start).
    #[serde(default)]
    pub linux: Option<crate::linux::LinuxSection>,
    /// zebra's FPM connection (with `[linux]`; applied at start).
    #[serde(default)]
    pub fpm: Option<crate::linux::fpm::FpmSection>,
    /// Prometheus metrics over HTTP (off without the section).
    #[serde(default)]
    pub metrics: Option<MetricsSection>,
}

/// `[metrics]`: where Prometheus scrapes `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Address and TCP port, e.g. `"127.0.0.1:9477"` (read at start).
    pub listen: std::net::SocketAddr,
}

pub use dpctl::proto::DEFAULT_SOCKET;

/// `[control]`: the API socket.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlSection {
    /// Path of the unix socket (default `/run/dataplane/dataplaned.sock`).
    #[serde(default = "default_socket")]
    pub socket: String,
    /// Permissions of the socket file (default `0o600`: root only).
    #[serde(default = "default_socket_mode")]
    pub socket_mode: u32,
}

fn default_socket() -> String {
    DEFAULT_SOCKET.into()
}
fn default_socket_mode() -> u32 {
    0o600
}

impl Default for ControlSection {
    fn default() -> Self {
        ControlSection {
            socket: default_socket(),
            socket_mode: default_socket_mode(),
        }
    }
}

/// What the workers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// L2 cross-connect between port pairs.
    Xconnect,
    /// IPv4 routing and MPLS switching.
    Router,
}

/// `[eal]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EalSection {
    /// CPU of the main lcore (control thread).
    #[serde(default)]
    pub main_cpu: u16,
    /// `auto`, `hugepages`, `in-memory` or `no-huge`.
    #[serde(default = "default_memory")]
    pub memory: String,
    /// MiB of memory (size with no-huge; hugepages needed otherwise).
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u32,
    /// `--file-prefix` for `memory = "hugepages"`.
    #[serde(default)]
    pub file_prefix: Option<String>,
    /// DPDK log levels (`--log-level`), default `["*:error"]`.
    #[serde(default = "default_log_level")]
    pub log_level: Vec<String>,
    /// Extra EAL arguments, verbatim.
    #[serde(default)]
    pub extra_args: Vec<String>,
}

fn default_memory() -> String {
    "auto".into()
}
fn default_memory_mb() -> u32 {
    512
}
fn default_log_level() -> Vec<String> {
    vec!["*:error".into()]
}

impl Default for EalSection {
    fn default() -> Self {
        EalSection {
            main_cpu: 0,
            memory: default_memory(),
            memory_mb: default_memory_mb(),
            file_prefix: None,
            log_level: default_log_level(),
            extra_args: Vec::new(),
        }
    }
}

/// `[mempool]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MempoolSection {
    /// Mbufs in the pool (2^n - 1 is the most memory-efficient size).
    #[serde(default = "default_mbufs")]
    pub mbufs: u32,
    /// Per-lcore cache.
    #[serde(default = "default_cache")]
    pub cache: u32,
    /// Bytes per buffer, headroom included.
    #[serde(default = "default_data_room")]
    pub data_room: u16,
}

fn default_mbufs() -> u32 {
    16383
}
fn default_cache() -> u32 {
    256
}
fn default_data_room() -> u16 {
    2176
}

impl Default for MempoolSection {
    fn default() -> Self {
        MempoolSection {
            mbufs: default_mbufs(),
            cache: default_cache(),
            data_room: default_data_room(),
        }
    }
}

/// `[workers]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkersSection {
    /// One worker per entry, pinned to that CPU.
    #[serde(default = "default_worker_cpus")]
    pub cpus: Vec<u16>,
    /// Empty polls before a worker starts sleeping.
    #[serde(default = "default_spin")]
    pub idle_spin_loops: u32,
    /// Longest idle sleep in µs (0: never sleep, for a dedicated core).
    #[serde(default = "default_sleep")]
    pub idle_max_sleep_us: u32,
}

fn default_worker_cpus() -> Vec<u16> {
    vec![1]
}
fn default_spin() -> u32 {
    IdlePolicy::default().spin_loops
}
fn default_sleep() -> u32 {
    IdlePolicy::default().max_sleep_us
}

impl Default for WorkersSection {
    fn default() -> Self {
        WorkersSection {
            cpus: default_worker_cpus(),
            idle_spin_loops: default_spin(),
            idle_max_sleep_us: default_sleep(),
        }
    }
}

/// `[[port]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSection {
    /// Our name (`port0`).
    pub name: String,
    /// vdev devargs or PCI address.
    pub device: String,
    /// Receive queues (default: one per worker).
    #[serde(default)]
    pub rx_queues: Option<u16>,
    /// Receive descriptors per queue.
    #[serde(default = "default_desc")]
    pub rx_desc: u16,
    /// Transmit descriptors per queue.
    #[serde(default = "default_desc")]
    pub tx_desc: u16,
    /// Promiscuous mode.
    #[serde(default = "default_true")]
    pub promiscuous: bool,
    /// Use the device's IPv4 header checksum check when it has one.
    #[serde(default = "default_true")]
    pub rx_checksum: bool,
}

fn default_desc() -> u16 {
    1024
}
fn default_true() -> bool {
    true
}

/// `[forwarding]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardingSection {
    /// `xconnect` or `router`.
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Cross-connected port pairs by name; empty pairs ports in order.
    #[serde(default)]
    pub pairs: Vec<[String; 2]>,
}

fn default_mode() -> String {
    "xconnect".into()
}

impl Default for ForwardingSection {
    fn default() -> Self {
        ForwardingSection {
            mode: default_mode(),
            pairs: Vec::new(),
        }
    }
}

/// What the daemon runs: the validated configuration, resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// EAL configuration.
    pub eal: EalConfig,
    /// Pool.
    pub mempool: MempoolSection,
    /// Ports in order.
    pub ports: Vec<PortConfig>,
    /// Forwarding mode.
    pub mode: Mode,
    /// For each port (by index), its xconnect peer (index); empty in router mode.
    pub peer: Vec<usize>,
    /// Interfaces, routes, labels (router mode).
    pub routing: crate::routing::Routing,
    /// Workers.
    pub workers: usize,
    /// Idle policy.
    pub idle: IdlePolicy,
    /// The control socket: path and permissions.
    pub socket: PathBuf,
    /// Permissions of the socket file.
    pub socket_mode: u32,
}

/// Bytes per `read` of a configuration file.
const READ_SLICE: usize = 256 << 10;

/// Reads a file as UTF-8 in slices of [`READ_SLICE`]: one `read` of a file with
/// a full table (45 MB) keeps a kernel without preemption busy for ~10 ms, and
/// with it the punt thread that shares the control thread's CPU; each return
/// from a slice lets it run.
fn read_in_slices(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let size = f.metadata().map_or(0, |m| m.len() as usize);
    let mut buf = Vec::with_capacity(size);
    let mut slice = vec![0u8; READ_SLICE];
    loop {
        match f.read(&mut slice) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&slice[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

impl Config {
    /// Reads, parses and plans a file on a thread of its own, and returns the
    /// file (without its routes and labels: the plan has them) and its plan,
    /// copied out. The parser's scratch, a document tree many times the size
    /// of a file with a full table, stays in that thread's heap arena, which is
    /// all free once the copies are made and goes back to the system at the
    /// next trim. Parsed here, the router's long-lived state would be laid out
    /// through the freed tree and keep most of it resident.
    pub fn load_planned(path: &Path) -> Result<(Config, Plan), ConfigError> {
        let shown = path.display().to_string();
        let parsed = std::thread::scope(|s| {
            s.spawn(|| {
                let mut c = Config::load(path)?;
                let plan = c.plan(&shown)?;
                c.routes = Vec::new();
                c.labels = Vec::new();
                Ok::<_, ConfigError>((c, plan))
            })
            .join()
        });
        match parsed {
            Ok(Ok((c, plan))) => Ok((c.clone(), plan.clone())),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ConfigError::Read {
                path: shown,
                reason: std::io::Error::other("the parser stopped"),
            }),
        }
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let p = path.display().to_string();
        let text = read_in_slices(path).map_err(|reason| ConfigError::Read {
            path: p.clone(),
            reason,
        })?;
        Self::parse(&text, &p)
    }

    /// Parses TOML text; `path` is only used in messages.
    pub fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            let full = e.to_string();
            let at = full
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("TOML parse error at ");
            let msg = format!("{at}: {}", one_line(e.message()));
            ConfigError::Parse {
                path: path.into(),
                msg,
            }
        })
    }

    /// Checks everything that can be checked without DPDK and resolves the plan.
    pub fn plan(&self, path: &str) -> Result<Plan, ConfigError> {
        let bad = |msg: String| ConfigError::Invalid {
            path: path.into(),
            msg,
        };
        let memory = match self.eal.memory.as_str() {
            "auto" => MemoryMode::Auto,
            "hugepages" => MemoryMode::Hugepages,
            "in-memory" => MemoryMode::InMemory,
            "no-huge" => MemoryMode::NoHuge,
            m => {
                return Err(bad(format!(
                    "[eal] memory = {m:?}: use auto, hugepages, in-memory or no-huge"
                )));
            }
        };
        if self.eal.memory_mb < 64 {
            return Err(bad(format!(
                "[eal] memory_mb = {}: at least 64 MiB is needed",
                self.eal.memory_mb
            )));
        }
        let workers = self.workers.cpus.len();
        if workers == 0 {
            return Err(bad("[workers] cpus is empty: give at least one CPU".into()));
        }
        if self.ports.is_empty() {
            return Err(bad("no [[port]]: configure at least two ports".into()));
        }
        let ports = self.plan_ports(workers, path)?;
        let (mode, peer) = self.plan_forwarding(ports.len(), path)?;
        let pci = ports
            .iter()
            .filter(|p| is_pci(&p.device))
            .map(|p| p.device.clone())
            .collect();
        let eal = EalConfig {
            program: "dataplaned".into(),
            main_cpu: self.eal.main_cpu,
            worker_cpus: self.workers.cpus.clone(),
            memory,
            memory_mb: self.eal.memory_mb,
            file_prefix: self.eal.file_prefix.clone(),
            pci,
            log_level: self.eal.log_level.clone(),
            extra: self.eal.extra_args.clone(),
        };
        let idle = IdlePolicy {
            spin_loops: self.workers.idle_spin_loops,
            max_sleep_us: self.workers.idle_max_sleep_us,
        };
        self.check_control(path)?;
        let mut routing = crate::routing::Routing {
            router: self.router.clone(),
            interfaces: self.interfaces.clone(),
            neighbors: self.neighbors.clone(),
            routes: self.routes.clone(),
            labels: self.labels.clone(),
            vrfs: self.vrfs.clone(),
            pws: self.pws.clone(),
            route_digest: None,
        };
        routing
            .resolve_vrf_names()
            .map_err(|e| bad(e.to_string()))?;
        Ok(Plan {
            eal,
            mempool: self.mempool.clone(),
            ports,
            mode,
            peer,
            routing,
            workers,
            idle,
            socket: PathBuf::from(&self.control.socket),
            socket_mode: self.control.socket_mode,
        })
    }

    /// The ports of the plan: names and devices unique, queues per worker.
    fn plan_ports(&self, workers: usize, path: &str) -> Result<Vec<PortConfig>, ConfigError> {
        let bad = |msg: String| ConfigError::Invalid {
            path: path.into(),
            msg,
        };
        let mut names = HashSet::new();
        let mut devices = HashSet::new();
        let mut ports = Vec::new();
        for p in &self.ports {
            if p.name.is_empty()
                || !p
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            {
                return Err(bad(format!(
                    "port name {:?}: use letters, digits, '-', '_' or '.'",
                    p.name
                )));
            }
            if !names.insert(p.name.as_str()) {
                return Err(bad(format!("port {} is configured twice", p.name)));
            }
            let dev_name = p.device.split(',').next().unwrap_or("").trim();
            if dev_name.is_empty() {
                return Err(bad(format!("port {}: device is empty", p.name)));
            }
            if !devices.insert(dev_name) {
                return Err(bad(format!(
                    "port {}: device {dev_name} is used by another port",
                    p.name
                )));
            }
            let rxq = p.rx_queues.unwrap_or(workers as u16);
            if rxq == 0 {
                return Err(bad(format!(
                    "port {}: rx_queues must be at least 1",
                    p.name
                )));
            }
            ports.push(PortConfig {
                name: p.name.clone(),
                device: p.device.trim().to_string(),
                rx_queues: rxq,
                tx_queues: workers as u16,
                rx_desc: p.rx_desc,
                tx_desc: p.tx_desc,
                promiscuous: p.promiscuous,
                rx_checksum: p.rx_checksum,
            });
        }
        Ok(ports)
    }

    /// The forwarding mode, and in cross-connect mode each port's peer; the
    /// sections a mode needs or excludes.
    fn plan_forwarding(
        &self,
        n_ports: usize,
        path: &str,
    ) -> Result<(Mode, Vec<usize>), ConfigError> {
        let bad = |msg: String| ConfigError::Invalid {
            path: path.into(),
            msg,
        };
        let mode = match self.forwarding.mode.as_str() {
            "xconnect" => Mode::Xconnect,
            "router" => Mode::Router,
            m => {
                return Err(bad(format!(
                    "[forwarding] mode = {m:?}: use \"xconnect\" or \"router\""
                )));
            }
        };
        let routed = !(self.interfaces.is_empty()
            && self.routes.is_empty()
            && self.labels.is_empty()
            && self.neighbors.is_empty());
        if mode == Mode::Xconnect && routed {
            return Err(bad(
                "interfaces, neighbors, routes and labels need [forwarding] mode = \"router\""
                    .into(),
            ));
        }
        if let Some(l) = &self.linux {
            if mode == Mode::Xconnect {
                return Err(bad("[linux] needs [forwarding] mode = \"router\"".into()));
            }
            l.check().map_err(|e| bad(e.to_string()))?;
            let workers: Vec<usize> = self.workers.cpus.iter().map(|&c| c.into()).collect();
            l.check_cpus(&workers).map_err(|e| bad(e.to_string()))?;
        }
        if self.fpm.is_some() && self.linux.is_none() {
            return Err(bad(
                "[fpm] needs [linux]: the FPM server listens in its namespace".into(),
            ));
        }
        if mode == Mode::Router && !self.forwarding.pairs.is_empty() {
            return Err(bad("[forwarding] pairs is for mode = \"xconnect\"".into()));
        }
        let index = |n: &str| {
            self.ports
                .iter()
                .position(|p| p.name == n)
                .ok_or_else(|| bad(format!("[forwarding] pairs: no port named {n:?}")))
        };
        let mut pairs = Vec::new();
        for [a, b] in &self.forwarding.pairs {
            pairs.push((index(a)?, index(b)?));
        }
        let peer = if mode == Mode::Xconnect {
            pair_ports(n_ports, &pairs).map_err(|m| bad(format!("[forwarding] {m}")))?
        } else {
            Vec::new()
        };
        Ok((mode, peer))
    }

    /// The control socket's path and mode.
    fn check_control(&self, path: &str) -> Result<(), ConfigError> {
        let bad = |msg: String| ConfigError::Invalid {
            path: path.into(),
            msg,
        };
        if self.control.socket.is_empty() {
            return Err(bad("[control] socket is empty: give a path".into()));
        }
        // sun_path holds 108 bytes with the terminating NUL.
        if self.control.socket.len() > 107 {
            return Err(bad(format!(
                "[control] socket {:?} is longer than 107 bytes (a unix socket limit)",
                self.control.socket
            )));
        }
        if self.control.socket_mode > 0o777 {
            return Err(bad(format!(
                "[control] socket_mode = {:o}: give permission bits like 0o600",
                self.control.socket_mode
            )));
        }
        Ok(())
    }

    /// What differs between this (running) configuration and `new` in the sections
    /// only a restart can apply: EAL, memory, workers, ports, forwarding mode, the
    /// control socket. Empty when a reload can apply `new`.
    pub fn restart_sections(&self, new: &Config) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.eal != new.eal {
            v.push("[eal]");
        }
        if self.mempool != new.mempool {
            v.push("[mempool]");
        }
        if self.workers != new.workers {
            v.push("[workers]");
        }
        if self.ports != new.ports {
            v.push("[[port]]");
        }
        if self.forwarding != new.forwarding {
            v.push("[forwarding]");
        }
        if self.control != new.control {
            v.push("[control]");
        }
        if self.metrics != new.metrics {
            v.push("[metrics]");
        }
        v
    }
}

fn is_pci(dev: &str) -> bool {
    let d = dev.split(',').next().unwrap_or("");
    d.contains(':') && d.contains('.') && !d.starts_with("net_")
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "|")
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_whole_in_slices() {
        let dir = std::env::temp_dir().join(format!("dp-config-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("big.toml");
        // Several slices and a partial one, with multi-byte characters across
        // slice boundaries.
        let text: String = (0..3 * READ_SLICE / 7 + 5)
            .map(|i| if i % 3 == 0 { "# é\n" } else { "# ab\n" })
            .collect();
        assert!(text.len() > 2 * READ_SLICE);
        std::fs::write(&f, &text).unwrap();
        assert_eq!(read_in_slices(&f).unwrap(), text);
        std::fs::write(&f, [b'a', 0xff, b'b']).unwrap();
        let e = read_in_slices(&f).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        let e = read_in_slices(&dir.join("none.toml")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    const GOOD: &str = r#"
[eal]
memory = "no-huge"
memory_mb = 256
[workers]
cpus = [1, 1]
[[port]]
name = "port0"
device = "net_null0"
[[port]]
name = "port1"
device = "net_null1"
rx_queues = 1
"#;

    fn err(text: &str) -> String {
        match Config::parse(text, "t.toml").and_then(|c| c.plan("t.toml")) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn good_config_resolves() {
        let plan = Config::parse(GOOD, "t").unwrap().plan("t").unwrap();
        assert_eq!(plan.workers, 2);
        assert_eq!(plan.ports[0].rx_queues, 2);
        assert_eq!(plan.ports[1].rx_queues, 1);
        assert_eq!(plan.ports[0].tx_queues, 2);
        assert_eq!(plan.peer, vec![1, 0]);
        assert!(plan.eal.pci.is_empty());
        let args = plan.eal.args().unwrap();
        assert!(args.contains(&"--no-pci".to_string()));
        assert!(args.contains(&"--no-huge".to_string()));
        assert!(args.iter().any(|a| a == "--lcores=0@0,1@1,2@1"));
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        assert!(err("[eal]\nmemroy = 1\n").contains("unknown field `memroy`"));
        assert!(err("[[port]]\nname = \"p\"\n").contains("missing field `device`"));
        assert!(err("[eal\n").contains("t.toml"));
        assert!(err("[eal]\nmemory = \"lots\"\n").contains("use auto, hugepages"));
        assert!(err("").contains("no [[port]]"));
        let three = "[[port]]\nname=\"a\"\ndevice=\"net_null0\"\n[[port]]\nname=\"b\"\ndevice=\"net_null1\"\n[[port]]\nname=\"c\"\ndevice=\"net_null2\"\n";
        assert!(err(three).contains("even number of ports"));
        let dup = "[[port]]\nname=\"a\"\ndevice=\"net_null0\"\n[[port]]\nname=\"a\"\ndevice=\"net_null1\"\n";
        assert!(err(dup).contains("configured twice"));
        let dupdev = "[[port]]\nname=\"a\"\ndevice=\"net_null0\"\n[[port]]\nname=\"b\"\ndevice=\"net_null0,size=64\"\n";
        assert!(err(dupdev).contains("used by another port"));
        let badpair = "[[port]]\nname=\"a\"\ndevice=\"net_null0\"\n[[port]]\nname=\"b\"\ndevice=\"net_null1\"\n[forwarding]\npairs=[[\"a\",\"z\"]]\n";
        assert!(err(badpair).contains("no port named \"z\""));
        assert!(
            err("[workers]\ncpus = []\n[[port]]\nname=\"a\"\ndevice=\"x\"\n")
                .contains("cpus is empty")
        );
        assert!(
            err("[forwarding]\nmode = \"route\"\n[[port]]\nname=\"a\"\ndevice=\"x\"\n")
                .contains("use \"xconnect\" or \"router\"")
        );
    }

    #[test]
    fn vrf_names_stand_for_their_tables() {
        let router =
            format!("{GOOD}[forwarding]\nmode = \"router\"\n[[vrf]]\nname = \"red\"\ntable = 10\n");
        let plan = Config::parse(
            &format!(
                "{router}[[interface]]\nname = \"port1\"\nvrf = \"red\"\n\
                 [[route]]\nprefix = \"10.0.0.0/24\"\nvrf = \"red\"\n\
                 via = [{{ gateway = \"192.0.2.4\", next_hop_vrf = \"default\", out_labels = [77] }}]\n\
                 [[label]]\nlabel = 77\nlookup_vrf = \"red\"\n"
            ),
            "t",
        )
        .unwrap()
        .plan("t")
        .unwrap();
        let r = &plan.routing;
        assert_eq!(r.interfaces[0].table, 10);
        assert_eq!(r.routes[0].table, 10);
        assert_eq!(r.routes[0].via[0].next_hop_table, Some(0));
        assert_eq!(r.labels[0].lookup_table, Some(10));
        let bad = |extra: &str| err(&format!("{router}{extra}"));
        assert!(
            bad("[[route]]\nprefix = \"10.0.0.0/24\"\nvrf = \"blue\"\nkind = \"blackhole\"\n")
                .contains("[[route]] 10.0.0.0/24: unknown vrf \"blue\" (VRFs: default, red)")
        );
        assert!(
            bad("[[interface]]\nname = \"port1\"\nvrf = \"red\"\ntable = 10\n")
                .contains("give table or vrf, not both")
        );
        assert!(bad("[[vrf]]\nname = \"red\"\ntable = 11\n").contains("given twice"));
        assert!(bad("[[vrf]]\nname = \"pink\"\ntable = 10\n").contains("two names"));
        assert!(bad("[[vrf]]\nname = \"x\"\ntable = 0\n").contains("default VRF"));
        assert!(
            bad("[[label]]\nlabel = 77\nlookup_vrf = \"red\"\nlookup_table = 10\n")
                .contains("not both")
        );
    }

    #[test]
    fn linux_section_is_checked() {
        let router = format!("{GOOD}[forwarding]\nmode = \"router\"\n");
        let plan = Config::parse(&format!("{router}[linux]\n"), "t")
            .unwrap()
            .plan("t");
        assert!(plan.is_ok());
        let c = Config::parse(&format!("{router}[linux]\n"), "t").unwrap();
        let l = c.linux.unwrap();
        assert_eq!(l.netns, "dataplane");
        assert_eq!(l.punt_rates(), dataplane::router::PuntRates::default());
        assert!(err(&format!("{GOOD}[linux]\n")).contains("needs [forwarding] mode = \"router\""));
        assert!(
            err(&format!("{router}[linux]\ntables = {{ main = 0 }}\n"))
                .contains("not a Linux table number")
        );
        assert!(err(&format!("{router}[linux]\npunt_other_pps = 0\n")).contains("at least 1"));
        assert!(err(&format!("{router}[linux]\npunt_cpus = []\n")).contains("at least one CPU"));
        let c = Config::parse(&format!("{router}[linux]\npunt_cpus = [0]\n"), "t").unwrap();
        assert_eq!(c.linux.unwrap().punt_cpus, Some(vec![0]));
        // (GOOD's workers poll CPU 1)
        assert!(err(&format!("{router}[linux]\npunt_cpus = [1]\n")).contains("punt_priority = 0"));
        let beside = format!("{router}[linux]\npunt_cpus = [1]\npunt_priority = 0\n");
        assert!(Config::parse(&beside, "t").unwrap().plan("t").is_ok());
        assert!(
            err(&format!(
                "{router}[linux]\nnames = {{ port0 = \"a-name-longer-than-15\" }}\n"
            ))
            .contains("not a Linux interface name")
        );
        assert!(
            err(&format!("{router}[linux]\nnetnss = \"x\"\n")).contains("unknown field `netnss`")
        );
    }

    #[test]
    fn control_section_and_restart_sections() {
        let plan = Config::parse(GOOD, "t").unwrap().plan("t").unwrap();
        assert_eq!(plan.socket, PathBuf::from(DEFAULT_SOCKET));
        assert_eq!(plan.socket_mode, 0o600);
        let t = format!("{GOOD}[control]\nsocket = \"/run/r1.sock\"\nsocket_mode = 0o660\n");
        let c = Config::parse(&t, "t").unwrap();
        let plan = c.plan("t").unwrap();
        assert_eq!(plan.socket, PathBuf::from("/run/r1.sock"));
        assert_eq!(plan.socket_mode, 0o660);
        assert!(err(&format!("{GOOD}[control]\nsocket = \"\"\n")).contains("socket is empty"));
        assert!(err(&format!("{GOOD}[control]\nsocket_mode = 0o7777\n")).contains("socket_mode"));
        assert!(
            err(&format!(
                "{GOOD}[control]\nsocket = \"/{}\"\n",
                "x".repeat(120)
            ))
            .contains("107 bytes")
        );
        assert!(err(&format!("{GOOD}[control]\nsockett = 1\n")).contains("unknown field"));
        let base = Config::parse(GOOD, "t").unwrap();
        assert!(base.restart_sections(&base).is_empty());
        assert_eq!(base.restart_sections(&c), ["[control]"]);
        let more = Config::parse(&GOOD.replace("cpus = [1, 1]", "cpus = [1]"), "t").unwrap();
        assert_eq!(base.restart_sections(&more), ["[workers]"]);
    }

    #[test]
    fn pci_devices_go_to_eal() {
        let t = "[[port]]\nname=\"a\"\ndevice=\"0000:01:00.0\"\n[[port]]\nname=\"b\"\ndevice=\"0000:01:00.1\"\n";
        let plan = Config::parse(t, "t").unwrap().plan("t").unwrap();
        assert_eq!(plan.eal.pci, vec!["0000:01:00.0", "0000:01:00.1"]);
        assert!(!plan.eal.args().unwrap().contains(&"--no-pci".to_string()));
    }
}
