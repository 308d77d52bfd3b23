//! Agent configuration, its validation and collector resolution.
//!
//! Everything is checked before anything changes: [`AgentConfig::validate`] resolves
//! the collectors and checks every range, and the agent applies a configuration (or a
//! single `sflow ...` change) only once it is known to be valid, so a failed request
//! leaves the running state exactly as it was.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::proto::{self, Address, DEFAULT_COLLECTOR_PORT, pad4};
use crate::record::MAX_RECORD_LABELS;

//= sFlow v5 §4 (sFlowFsMaximumHeaderSize default 128); VPP and hsflowd use 128 too.
/// Default number of frame bytes copied into a sample.
pub const DEFAULT_HEADER_BYTES: u16 = 128;
/// Fewest header bytes a sample may be configured with.
pub const MIN_HEADER_BYTES: u16 = 64;
/// Most header bytes a sample may be configured with (the record's capacity).
pub const MAX_HEADER_BYTES: u16 = 256;
//= sFlow v5 §4 (sFlowCpInterval): VPP, hsflowd on Cumulus and Junos poll every 20 s.
/// Default counter polling interval.
pub const DEFAULT_POLLING_INTERVAL: Duration = Duration::from_secs(20);
//= sFlow v5 §4 (sFlowRcvrMaximumDatagramSize default 1400).
/// Default largest sFlow datagram (UDP payload), in bytes.
pub const DEFAULT_MAX_DATAGRAM_BYTES: usize = 1400;
/// Largest UDP payload over IPv4.
pub const MAX_DATAGRAM_BYTES: usize = 65_507;
//= VPP's sflow plugin sizes its per-worker FIFO at 2048 samples (SFLOW_FIFO_DEPTH).
/// Default capacity of each worker's sample ring, in samples.
pub const DEFAULT_RING_CAPACITY: usize = 2048;
/// Default most samples one [`Agent::poll`](crate::Agent::poll) call drains.
pub const DEFAULT_DRAIN_BUDGET: usize = 4096;
/// Default most flow samples the agent exports per second, over all workers
/// (about 2,900 datagrams and 30 Mbit/s of 128-byte headers). What a sampling
/// rate picks beyond it waits in the rings; a full ring drops and counts, and the
/// collector sees the drops (and scales by the sample pool). 0 = no limit.
pub const DEFAULT_MAX_SAMPLES_PER_SECOND: u32 = 20_000;
//= hsflowd flushes a partly filled datagram on its 1 s tick.
/// Default longest time a sample waits in a partly filled datagram.
pub const DEFAULT_FLUSH_DELAY: Duration = Duration::from_secs(1);
/// Largest ifIndex that can be sampled. The dataplane numbers interfaces from 1 and
/// has far fewer; the limit keeps the per-worker tables small and flat.
pub const MAX_IFINDEX: u32 = 1023;

/// Which packets of an interface are candidates for sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Directions {
    /// Packets received on the interface.
    #[default]
    Rx,
    /// Packets sent on the interface.
    Tx,
    /// Both.
    Both,
}

impl Directions {
    /// Bit 0 rx, bit 1 tx.
    pub const fn bits(self) -> u8 {
        match self {
            Directions::Rx => 1,
            Directions::Tx => 2,
            Directions::Both => 3,
        }
    }

    /// From the bits; `None` for 0.
    pub const fn from_bits(b: u8) -> Option<Directions> {
        match b & 3 {
            1 => Some(Directions::Rx),
            2 => Some(Directions::Tx),
            3 => Some(Directions::Both),
            _ => None,
        }
    }

    /// The name `dpctl` uses.
    pub const fn name(self) -> &'static str {
        match self {
            Directions::Rx => "rx",
            Directions::Tx => "tx",
            Directions::Both => "both",
        }
    }
}

impl std::str::FromStr for Directions {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Directions, ConfigError> {
        match s {
            "rx" => Ok(Directions::Rx),
            "tx" => Ok(Directions::Tx),
            "both" => Ok(Directions::Both),
            _ => Err(ConfigError::BadDirection(s.to_string())),
        }
    }
}

/// Sampling on one interface: one rate (one sFlow data source) for the directions
/// chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sampling {
    /// N of 1-in-N; 1 samples every packet.
    pub rate: u32,
    /// Which directions are candidates.
    pub directions: Directions,
}

impl Sampling {
    /// Checks the rate and the ifIndex the sampling is for.
    pub fn validate(&self, ifindex: u32) -> Result<(), ConfigError> {
        validate_ifindex(ifindex)?;
        if self.rate == 0 {
            return Err(ConfigError::ZeroRate { ifindex });
        }
        Ok(())
    }
}

/// Checks that an ifIndex can be sampled (1..=[`MAX_IFINDEX`]).
pub fn validate_ifindex(ifindex: u32) -> Result<(), ConfigError> {
    if ifindex == 0 || ifindex > MAX_IFINDEX {
        return Err(ConfigError::IfIndex {
            ifindex,
            max: MAX_IFINDEX,
        });
    }
    Ok(())
}

/// Checks a header size.
pub fn validate_header_bytes(n: u16) -> Result<(), ConfigError> {
    if !(MIN_HEADER_BYTES..=MAX_HEADER_BYTES).contains(&n) {
        return Err(ConfigError::HeaderBytes(n));
    }
    Ok(())
}

/// Why a configuration or a change was refused. Nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A sampling rate of 0 (use "disable" to stop sampling).
    #[error("sampling rate 0 on ifIndex {ifindex}: the rate must be at least 1")]
    ZeroRate {
        /// The interface.
        ifindex: u32,
    },
    /// Header bytes outside 64..=256.
    #[error("header-bytes {0} out of range {MIN_HEADER_BYTES}..={MAX_HEADER_BYTES}")]
    HeaderBytes(u16),
    /// An ifIndex of 0 or above the largest that can be sampled.
    #[error("ifIndex {ifindex} out of range 1..={max}")]
    IfIndex {
        /// The ifIndex given.
        ifindex: u32,
        /// The largest allowed.
        max: u32,
    },
    /// A direction other than rx, tx or both.
    #[error("direction {0:?}: expected rx, tx or both")]
    BadDirection(String),
    /// A collector that does not parse or resolve.
    #[error("collector {spec:?}: {reason}")]
    Collector {
        /// What was given.
        spec: String,
        /// Why it was refused.
        reason: String,
    },
    /// Removing a collector that is not configured.
    #[error("collector {0} is not configured")]
    NoSuchCollector(SocketAddr),
    /// The agent address is 0.0.0.0 or ::.
    #[error("agent address {0} is unspecified")]
    AgentAddress(IpAddr),
    /// The datagram size cannot hold the largest sample, or exceeds a UDP payload.
    #[error("max datagram size {bytes} out of range {min}..={max} for these settings")]
    DatagramSize {
        /// The size given.
        bytes: usize,
        /// Smallest that holds a datagram header and the largest sample.
        min: usize,
        /// Largest UDP payload.
        max: usize,
    },
    /// A polling interval longer than a 32-bit number of seconds.
    #[error("polling interval {0:?} too long")]
    PollingInterval(Duration),
    /// A ring capacity of 0.
    #[error("ring capacity must be at least 1")]
    RingCapacity,
    /// A drain budget of 0.
    #[error("drain budget must be at least 1")]
    DrainBudget,
    /// A worker id that is already attached.
    #[error("worker {0} is already attached")]
    DuplicateWorker(u32),
    /// A worker id that is not attached.
    #[error("worker {0} is not attached")]
    NoSuchWorker(u32),
    /// The sampling table of a worker's channel is not the agent's.
    #[error("worker {0} samples with another agent's table")]
    ForeignTable(u32),
    /// A socket could not be opened.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
}

/// Everything the agent is configured with (the `sflow` section of the daemon's
/// config file, and what `sflow ...` commands change one piece at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// Address the datagrams name as the agent (the router id, typically).
    pub agent_address: IpAddr,
    /// Collectors: `IP`, `IP:PORT`, `[IPv6]:PORT`, `host` or `host:port`; the port
    /// defaults to 6343. Resolved once, when the configuration is validated.
    pub collectors: Vec<String>,
    /// Counter polling interval; zero turns counter samples off.
    pub polling_interval: Duration,
    /// Frame bytes copied into each sample (64..=256).
    pub header_bytes: u16,
    /// Largest datagram (UDP payload) sent.
    pub max_datagram_bytes: usize,
    /// Capacity of each worker's ring, for workers added after this is set.
    pub ring_capacity: usize,
    /// Most samples one `poll` drains over all workers.
    pub drain_budget: usize,
    /// Most flow samples taken from the rings per second, over all workers (a
    /// token bucket holding one second's worth); 0 = no limit. Protects the
    /// collectors, the control thread and the workers' caches from a rate set too
    /// high for the traffic: the workers then drop what they pick cheaply (a
    /// full ring), and count it.
    pub max_samples_per_second: u32,
    /// Longest time a sample waits in a partly filled datagram.
    pub flush_delay: Duration,
    /// Sub-agent whose datagrams carry the counter samples (the worker with this id
    /// if there is one, else a sub-agent of its own).
    pub counters_sub_agent: u32,
    /// Seed of the workers' skip generators (each worker mixes in its id); `None`
    /// draws one from the operating system.
    pub seed: Option<u64>,
    /// Sampling per ifIndex.
    pub interfaces: BTreeMap<u32, Sampling>,
}

impl AgentConfig {
    /// Defaults: no collectors, no interfaces, 128 header bytes, 20 s polling,
    /// 1400-byte datagrams.
    pub fn new(agent_address: IpAddr) -> AgentConfig {
        AgentConfig {
            agent_address,
            collectors: Vec::new(),
            polling_interval: DEFAULT_POLLING_INTERVAL,
            header_bytes: DEFAULT_HEADER_BYTES,
            max_datagram_bytes: DEFAULT_MAX_DATAGRAM_BYTES,
            ring_capacity: DEFAULT_RING_CAPACITY,
            drain_budget: DEFAULT_DRAIN_BUDGET,
            max_samples_per_second: DEFAULT_MAX_SAMPLES_PER_SECOND,
            flush_delay: DEFAULT_FLUSH_DELAY,
            counters_sub_agent: 0,
            seed: None,
            interfaces: BTreeMap::new(),
        }
    }

    /// Checks every field and resolves the collectors.
    pub fn validate(&self) -> Result<Vec<SocketAddr>, ConfigError> {
        validate_agent_address(self.agent_address)?;
        validate_header_bytes(self.header_bytes)?;
        validate_datagram_size(
            self.max_datagram_bytes,
            self.agent_address,
            self.header_bytes,
        )?;
        validate_polling_interval(self.polling_interval)?;
        if self.ring_capacity == 0 {
            return Err(ConfigError::RingCapacity);
        }
        if self.drain_budget == 0 {
            return Err(ConfigError::DrainBudget);
        }
        for (&ifindex, s) in &self.interfaces {
            s.validate(ifindex)?;
        }
        let mut out = Vec::with_capacity(self.collectors.len());
        for c in &self.collectors {
            let a = resolve_collector(c)?;
            if !out.contains(&a) {
                out.push(a);
            }
        }
        Ok(out)
    }
}

/// Checks the agent address.
pub fn validate_agent_address(a: IpAddr) -> Result<(), ConfigError> {
    if a.is_unspecified() {
        return Err(ConfigError::AgentAddress(a));
    }
    Ok(())
}

/// Checks a polling interval (whole seconds are what collectors expect; anything
/// up to `u32::MAX` seconds is accepted, zero turns polling off).
pub fn validate_polling_interval(d: Duration) -> Result<(), ConfigError> {
    if d.as_secs() > u64::from(u32::MAX) {
        return Err(ConfigError::PollingInterval(d));
    }
    Ok(())
}

/// Bytes of the largest flow sample the agent can send with `header_bytes`: a
/// sampled header, extended_switch, extended_router and extended_mpls with two full
/// label stacks.
pub const fn max_flow_sample_len(header_bytes: u16) -> usize {
    proto::TAG_LEN
        + proto::FLOW_SAMPLE_FIXED_LEN
        + (proto::TAG_LEN + 16 + pad4(header_bytes as usize))
        + (proto::TAG_LEN + 16)
        + (proto::TAG_LEN + 16)
        + (proto::TAG_LEN + 8 + 8 + 8 * MAX_RECORD_LABELS)
}

/// Bytes of a counters sample with generic and Ethernet counters.
pub const COUNTERS_SAMPLE_LEN: usize = proto::TAG_LEN
    + proto::COUNTERS_SAMPLE_FIXED_LEN
    + (proto::TAG_LEN + proto::IF_COUNTERS_LEN)
    + (proto::TAG_LEN + proto::ETHERNET_COUNTERS_LEN);

/// Bytes of a datagram header for this agent address.
pub const fn datagram_header_len(agent: IpAddr) -> usize {
    let addr = match agent {
        IpAddr::V4(a) => Address::V4(a),
        IpAddr::V6(a) => Address::V6(a),
    };
    16 + addr.buffer_len() + 4
}

/// Checks that `bytes` holds a datagram header and the largest sample.
pub fn validate_datagram_size(
    bytes: usize,
    agent: IpAddr,
    header_bytes: u16,
) -> Result<(), ConfigError> {
    let sample = max_flow_sample_len(header_bytes).max(COUNTERS_SAMPLE_LEN);
    let min = datagram_header_len(agent) + sample;
    if !(min..=MAX_DATAGRAM_BYTES).contains(&bytes) {
        return Err(ConfigError::DatagramSize {
            bytes,
            min,
            max: MAX_DATAGRAM_BYTES,
        });
    }
    Ok(())
}

/// Resolves a collector: `IP`, `IP:PORT`, `[IPv6]:PORT`, `host` or `host:port`
/// (port 6343 when none is given). Uses the system resolver for names, once.
pub fn resolve_collector(spec: &str) -> Result<SocketAddr, ConfigError> {
    let err = |reason: &str| ConfigError::Collector {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    let s = spec.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    let addr = if let Ok(a) = s.parse::<SocketAddr>() {
        a
    } else if let Ok(ip) = s.parse::<IpAddr>() {
        SocketAddr::new(ip, DEFAULT_COLLECTOR_PORT)
    } else if s.starts_with('[') {
        return Err(err("not an [IPv6]:port"));
    } else {
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => {
                let port = p.parse::<u16>().map_err(|_| err("bad port"))?;
                (h, port)
            }
            Some(_) => return Err(err("not an address")),
            None => (s, DEFAULT_COLLECTOR_PORT),
        };
        let mut addrs = (host, port)
            .to_socket_addrs()
            .map_err(|e| err(&format!("does not resolve: {e}")))?;
        addrs.next().ok_or_else(|| err("resolves to no address"))?
    };
    if addr.port() == 0 {
        return Err(err("port 0"));
    }
    if addr.ip().is_unspecified() {
        return Err(err("unspecified address"));
    }
    Ok(addr)
}
