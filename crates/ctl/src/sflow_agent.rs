//! sFlow in the daemon: the `[sflow]` config section, its translation into an
//! [`sflow::AgentConfig`], the counter source the agent polls (the workers'
//! per-interface counters and the ports' link state and device counters), and
//! `show sflow`.
//!
//! ```toml
//! [sflow]
//! agent_address = "192.0.2.1"      # default: [router] router_id, else 127.0.0.1
//! collectors = ["192.0.2.99", "collector.example:6343"]
//! polling_interval = 20            # seconds; 0 = no counter samples
//! header_bytes = 128               # 64..=256
//! max_samples_per_second = 20000   # exported, all workers; 0 = no limit
//!
//! [[sflow.interface]]
//! name = "port0"
//! rate = 1000                      # 1-in-N (default 1000)
//! direction = "both"               # rx | tx | both (default rx)
//! ```
//!
//! ifIndexes are the router's (`dpctl show interfaces`).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use dataplane::router::{IfTable, RouterControl, WorkerStats};
use sflow::{
    Agent, AgentConfig, CounterSource, Directions, IfCounters, InterfaceCounters, SampleRecord,
    Sampling,
};

use crate::ports::PortSource;

/// Rate `sflow enable PORT` uses when none is given (and the file's default).
pub const DEFAULT_RATE: u32 = dpctl::cli::DEFAULT_SFLOW_RATE;

/// `[sflow]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SflowSection {
    /// Agent address in the datagrams.
    #[serde(default)]
    pub agent_address: Option<String>,
    /// Collectors, `IP`, `IP:PORT`, `[IPv6]:PORT`, `host[:port]`.
    #[serde(default)]
    pub collectors: Vec<String>,
    /// Counter polling interval in seconds (0 = off).
    #[serde(default = "default_polling")]
    pub polling_interval: u64,
    /// Frame bytes per sample.
    #[serde(default = "default_header_bytes")]
    pub header_bytes: u16,
    /// Most flow samples exported per second (0 = no limit).
    #[serde(default = "default_max_samples")]
    pub max_samples_per_second: u32,
    /// Sampled interfaces.
    #[serde(default, rename = "interface")]
    pub interfaces: Vec<SflowInterface>,
}

fn default_polling() -> u64 {
    sflow::DEFAULT_POLLING_INTERVAL.as_secs()
}
fn default_header_bytes() -> u16 {
    sflow::DEFAULT_HEADER_BYTES
}
fn default_max_samples() -> u32 {
    sflow::DEFAULT_MAX_SAMPLES_PER_SECOND
}
fn default_rate() -> u32 {
    DEFAULT_RATE
}
fn default_direction() -> String {
    "rx".to_string()
}

/// `[[sflow.interface]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SflowInterface {
    /// Interface name (`dpctl show interfaces`).
    pub name: String,
    /// 1-in-N.
    #[serde(default = "default_rate")]
    pub rate: u32,
    /// rx, tx or both.
    #[serde(default = "default_direction")]
    pub direction: String,
}

/// Why a `[sflow]` section is refused (nothing was changed).
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    /// `agent_address` that is not an IP address.
    #[error("[sflow] agent_address {0:?} is not an IP address")]
    AgentAddress(String),
    /// An interface the router does not have.
    #[error("[sflow] interface {0:?}: no such interface")]
    NoInterface(String),
    /// An interface's `direction` is not rx, tx or both.
    #[error("[sflow] interface {name:?}: {error}")]
    Direction {
        /// The interface.
        name: String,
        /// Why.
        error: sflow::ConfigError,
    },
    /// An interface given twice.
    #[error("[sflow] interface {0:?} listed twice")]
    Twice(String),
    /// The agent refuses the configuration (rates, sizes, collectors).
    #[error("[sflow]: {0}")]
    Agent(sflow::ConfigError),
}

/// The agent configuration of `s` (absent section: nothing sampled, no collector),
/// checked completely (collectors resolved): any error means nothing may change.
/// `ifindex` names interfaces; `router_id` is the default agent address.
pub fn agent_config(
    s: Option<&SflowSection>,
    ifindex: &dyn Fn(&str) -> Option<u32>,
    router_id: Option<Ipv4Addr>,
) -> Result<AgentConfig, SectionError> {
    let default_addr = IpAddr::V4(router_id.unwrap_or(Ipv4Addr::LOCALHOST));
    let Some(s) = s else {
        return Ok(AgentConfig::new(default_addr));
    };
    let addr = match &s.agent_address {
        Some(a) => a
            .parse::<IpAddr>()
            .map_err(|_| SectionError::AgentAddress(a.clone()))?,
        None => default_addr,
    };
    let mut cfg = AgentConfig::new(addr);
    cfg.collectors = s.collectors.clone();
    cfg.polling_interval = Duration::from_secs(s.polling_interval);
    cfg.header_bytes = s.header_bytes;
    cfg.max_samples_per_second = s.max_samples_per_second;
    for i in &s.interfaces {
        let ix = ifindex(&i.name).ok_or_else(|| SectionError::NoInterface(i.name.clone()))?;
        let directions: Directions =
            i.direction
                .parse()
                .map_err(|error| SectionError::Direction {
                    name: i.name.clone(),
                    error,
                })?;
        if cfg.interfaces.contains_key(&ix) {
            return Err(SectionError::Twice(i.name.clone()));
        }
        cfg.interfaces.insert(
            ix,
            Sampling {
                rate: i.rate,
                directions,
            },
        );
    }
    cfg.validate().map_err(SectionError::Agent)?;
    Ok(cfg)
}

/// Applies the difference between the file's `old` and `new` agent configurations
/// to the running agent (so `dpctl sflow ...` changes to things the file did not
/// change stay). `new` must have been validated.
pub fn apply_diff(agent: &mut Agent, old: &AgentConfig, new: &AgentConfig) -> Vec<String> {
    let mut done = Vec::new();
    if old.agent_address != new.agent_address && agent.set_agent_address(new.agent_address).is_ok()
    {
        done.push(format!("agent address {}", new.agent_address));
    }
    if old.header_bytes != new.header_bytes && agent.set_header_bytes(new.header_bytes).is_ok() {
        done.push(format!("header-bytes {}", new.header_bytes));
    }
    if old.polling_interval != new.polling_interval
        && agent.set_polling_interval(new.polling_interval).is_ok()
    {
        done.push(format!("polling {}", new.polling_interval.as_secs()));
    }
    if old.max_samples_per_second != new.max_samples_per_second {
        agent.set_max_samples_per_second(new.max_samples_per_second);
        done.push(format!("max-samples {}", new.max_samples_per_second));
    }
    for c in &old.collectors {
        if !new.collectors.contains(c) && agent.remove_collector(c).is_ok() {
            done.push(format!("collector del {c}"));
        }
    }
    for c in &new.collectors {
        if !old.collectors.contains(c) && agent.add_collector(c).is_ok() {
            done.push(format!("collector add {c}"));
        }
    }
    for (&ix, &s) in &new.interfaces {
        if old.interfaces.get(&ix) != Some(&s) && agent.set_sampling(ix, Some(s)).is_ok() {
            done.push(format!("enable ifindex {ix}"));
        }
    }
    for &ix in old.interfaces.keys() {
        if !new.interfaces.contains_key(&ix) && agent.set_sampling(ix, None).is_ok() {
            done.push(format!("disable ifindex {ix}"));
        }
    }
    done
}

/// What the agent asks of the router: interface counters ([`poll_counters`]) and
/// the route masks of flow samples ([`mask_lengths`]).
pub struct RouterSource<'a> {
    /// The router (its FIB answers the masks).
    pub ctl: &'a RouterControl,
    /// Its interfaces.
    pub ifaces: &'a IfTable,
    /// The workers' counters.
    pub stats: &'a [std::sync::Arc<WorkerStats>],
    /// The ports' link state and device counters.
    pub ports: &'a dyn PortSource,
}

impl CounterSource for RouterSource<'_> {
    fn poll_counters(&mut self, out: &mut Vec<InterfaceCounters>) {
        poll_counters(self.ifaces, self.stats, self.ports, out);
    }

    fn mask_lengths(&mut self, rec: &SampleRecord) -> Option<(u8, u8)> {
        mask_lengths(self.ctl, self.ifaces, rec)
    }
}

/// extended_router's masks of a flow sample: the lengths of the routes to its
/// source and destination (IPv4 or IPv6) in the table the router looked it up in:
/// the receiving interface's for a packet that arrived without labels, or the one
/// its label stack pops into (explicit null, a label entry's `ip4-lookup`: a
/// per-VRF VPN label); `None` for a label switch, which looks up no prefix.
pub fn mask_lengths(ctl: &RouterControl, ifaces: &IfTable, rec: &SampleRecord) -> Option<(u8, u8)> {
    let sflow::Interface::Index(ix) = rec.input else {
        return None;
    };
    let rx_table = ifaces.get(ix)?.table;
    let mut table = None;
    if rec.in_labels.as_slice().is_empty() {
        table = Some(rx_table);
    }
    for &w in rec.in_labels.as_slice() {
        let (label, eos) = (w >> 12, w & 0x100 != 0);
        let action = match label {
            // IPv4 and IPv6 explicit null: popped, and looked up where it arrived.
            0 | 2 if eos => {
                table = Some(rx_table);
                break;
            }
            0 | 2 => continue,
            _ => ctl.labels().get(label, eos)?,
        };
        if let Some(t) = action.lookup_table() {
            table = Some(if t == mpls::RX_TABLE { rx_table } else { t });
            break;
        }
        match action {
            mpls::LabelAction::Pop { .. } => {}
            _ => return None,
        }
    }
    let table = table?;
    let fib = ctl.fib();
    match ip_addresses(rec.header())? {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let len = |a: Ipv4Addr| fib.match_len(table, u32::from(a)).unwrap_or(0);
            Some((len(s), len(d)))
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let len = |a: Ipv6Addr| fib.match_len6(table, u128::from(a)).unwrap_or(0);
            Some((len(s), len(d)))
        }
        _ => None,
    }
}

/// The source and destination of the IPv4 or IPv6 packet in an Ethernet frame
/// (802.1Q tag and label stack skipped; the packet may be cut short, as a sampled
/// header is; under labels, the first nibble tells the family).
fn ip_addresses(f: &[u8]) -> Option<(IpAddr, IpAddr)> {
    use wire::{EtherType, EthernetFrame, Ipv4Packet, Ipv6Packet, LabelStack, VlanTag};
    let mut et = EthernetFrame::new_checked(f).ok()?.ethertype();
    let mut at = 14;
    if et == EtherType::Vlan {
        et = VlanTag::new_checked(f.get(at..)?).ok()?.ethertype();
        at += 4;
    }
    if et == EtherType::Mpls {
        at += LabelStack::new_checked(f.get(at..)?)
            .ok()?
            .stack_bytes()
            .len();
    } else if et != EtherType::Ipv4 && et != EtherType::Ipv6 {
        return None;
    }
    let rest = f.get(at..)?;
    match rest.first()? >> 4 {
        // (not `new_checked`: the lengths may pass the header's end)
        4 => {
            let ip = Ipv4Packet::new_unchecked(rest.get(..20)?);
            Some((ip.src_addr().into(), ip.dst_addr().into()))
        }
        6 => {
            let ip = Ipv6Packet::new_unchecked(rest.get(..40)?);
            Some((ip.src_addr().into(), ip.dst_addr().into()))
        }
        _ => None,
    }
}

/// Interface counters for the agent's counter samples: the workers' per-interface
/// packets, bytes and drops, the port's link state, speed and device errors.
pub fn poll_counters(
    ifaces: &IfTable,
    stats: &[std::sync::Arc<WorkerStats>],
    ports: &dyn PortSource,
    out: &mut Vec<InterfaceCounters>,
) {
    for i in ifaces.iter() {
        let k = i.ifindex as usize;
        let sum = |f: &dyn Fn(&dataplane::router::IfaceCounters) -> u64| -> u64 {
            stats.iter().filter_map(|s| s.ifaces.get(k)).map(f).sum()
        };
        let port = ports.port_state(i.port);
        let link = port.map_or(i.up, |p| p.0);
        let speed = u64::from(ports.link_speed_mbps(i.port)) * 1_000_000;
        let mut g = IfCounters::ethernet(i.ifindex, speed, i.up, i.up && link);
        g.in_octets = sum(&|c| c.rx_bytes.get());
        g.in_ucast_pkts = sum(&|c| c.rx_pkts.get()) as u32;
        g.in_discards = sum(&|c| c.drops.get()) as u32;
        g.out_octets = sum(&|c| c.tx_bytes.get());
        g.out_ucast_pkts = sum(&|c| c.tx_pkts.get()) as u32;
        if let (None, Some((_, ps))) = (i.vlan, port) {
            g.in_errors = ps.rx_errors as u32;
            g.out_errors = ps.tx_errors as u32;
        }
        out.push(InterfaceCounters {
            generic: g,
            ethernet: None,
        });
    }
}

/// `show sflow`.
pub fn show(agent: &Agent, name: &dyn Fn(u32) -> String) -> Value {
    let cfg = agent.config();
    let st = agent.stats();
    let ifaces: Vec<Value> = cfg
        .interfaces
        .iter()
        .map(|(&ix, s)| {
            json!({ "name": name(ix), "ifindex": ix, "rate": s.rate, "direction": s.directions.name() })
        })
        .collect();
    let workers: Vec<Value> = st
        .workers
        .iter()
        .map(|w| {
            json!({ "worker": w.worker, "sampled": w.sampled, "dropped": w.dropped,
                    "exported": w.exported, "queued": w.queued })
        })
        .collect();
    let sources: Vec<Value> = agent
        .sources()
        .iter()
        .map(|s| {
            json!({ "worker": s.worker, "ifindex": s.ifindex, "rate": s.sampling_rate,
                    "flow_samples": s.flow_samples, "sample_pool": s.sample_pool, "drops": s.drops })
        })
        .collect();
    json!({
        "agent_address": cfg.agent_address.to_string(),
        "collectors": agent.collectors().iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        "polling_interval_s": cfg.polling_interval.as_secs(),
        "header_bytes": cfg.header_bytes,
        "max_samples_per_second": cfg.max_samples_per_second,
        "interfaces": ifaces,
        "workers": workers,
        "sources": sources,
        "datagrams": st.datagrams,
        "bytes": st.bytes,
        "send_errors": st.send_errors,
        "flow_samples": st.flow_samples,
        "counter_samples": st.counter_samples,
        "unsent_samples": st.unsent_samples,
    })
}

/// The agent's counters for a Prometheus scrape.
pub fn metrics(agent: &Agent, m: &mut crate::metrics::Scrape) {
    let st = agent.stats();
    for w in &st.workers {
        let ws = w.worker.to_string();
        let l = [("worker", ws.as_str())];
        m.counter(
            "sflow_sampled",
            "Packets picked for sFlow sampling.",
            &l,
            w.sampled,
        );
        m.counter(
            "sflow_ring_drops",
            "sFlow samples lost in a worker (ring full).",
            &l,
            w.dropped,
        );
        m.counter(
            "sflow_exported",
            "sFlow samples sent in datagrams.",
            &l,
            w.exported,
        );
        m.gauge(
            "sflow_ring_queued",
            "sFlow samples waiting in a worker's ring.",
            &l,
            w.queued as f64,
        );
    }
    m.counter(
        "sflow_datagrams",
        "sFlow datagrams sent.",
        &[],
        st.datagrams,
    );
    m.counter(
        "sflow_bytes",
        "Bytes of sFlow datagrams (UDP payload).",
        &[],
        st.bytes,
    );
    m.counter(
        "sflow_send_errors",
        "sFlow datagrams a collector's socket refused.",
        &[],
        st.send_errors,
    );
    m.counter(
        "sflow_flow_samples",
        "sFlow flow samples encoded.",
        &[],
        st.flow_samples,
    );
    m.counter(
        "sflow_poll_samples",
        "sFlow counter samples (interface polls) encoded.",
        &[],
        st.counter_samples,
    );
    m.counter(
        "sflow_unsent_samples",
        "sFlow samples drained with no collector configured.",
        &[],
        st.unsent_samples,
    );
    m.gauge(
        "sflow_collectors",
        "sFlow collectors configured.",
        &[],
        agent.collectors().len() as f64,
    );
}

/// The sampling per ifIndex, for tests and `show`.
pub fn enabled(agent: &Agent) -> BTreeMap<u32, Sampling> {
    agent.config().interfaces.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &str) -> Option<u32> {
        match n {
            "port0" => Some(1),
            "port1" => Some(2),
            _ => None,
        }
    }

    fn parse(text: &str) -> SflowSection {
        #[derive(Deserialize)]
        struct F {
            sflow: SflowSection,
        }
        toml::from_str::<F>(text).unwrap().sflow
    }

    #[test]
    fn masks_are_the_lengths_of_the_routes_a_lookup_finds() {
        use dataplane::router::Interface as If;
        use fib::{Path, RouteKind};
        use sflow::{Direction, PacketInfo};
        let mut ctl = RouterControl::new();
        ctl.add_interface(If {
            ifindex: 1,
            name: "port0".into(),
            port: 0,
            vlan: None,
            mac: [2, 0, 0, 0, 0, 1],
            mtu: 1500,
            up: true,
            table: 0,
            addrs: vec![(Ipv4Addr::new(10, 1, 0, 1), 24)],
            addrs6: Vec::new(),
        })
        .unwrap();
        let via = RouteKind::Paths(vec![Path::gateway(Ipv4Addr::new(10, 1, 0, 2))]);
        ctl.route_add(
            0,
            "198.18.0.0/15".parse::<fib::IpPrefix>().unwrap(),
            via.clone(),
        )
        .unwrap();
        ctl.route_add(0, "198.18.7.0/24".parse::<fib::IpPrefix>().unwrap(), via)
            .unwrap();
        let mut frame = vec![0u8; 14 + 20];
        frame[12..14].copy_from_slice(&[8, 0]);
        frame[14] = 0x45;
        frame[26..30].copy_from_slice(&[10, 1, 0, 9]);
        let rec = |dst: [u8; 4], in_labels: &[u32]| {
            let mut f = frame.clone();
            f[30..34].copy_from_slice(&dst);
            let info = PacketInfo {
                frame: &f,
                frame_len: f.len() as u32,
                input: sflow::Interface::Index(1),
                in_labels,
                ..PacketInfo::default()
            };
            SampleRecord::new(0, Direction::Rx, 1, 1, 1, 0, 128, &info)
        };
        let ifaces = ctl.ifaces();
        let m = |r: &SampleRecord| mask_lengths(&ctl, &ifaces, r);
        assert_eq!(m(&rec([198, 18, 7, 1], &[])), Some((24, 24)));
        assert_eq!(m(&rec([198, 19, 0, 1], &[])), Some((24, 15)));
        assert_eq!(m(&rec([203, 0, 113, 1], &[])), Some((24, 0)));
        // A label switch looks up no prefix; a label that pops into a table
        // (explicit null, ip4-lookup: a per-VRF VPN label) looks up there.
        let adj = ctl.adjacency(1, Ipv4Addr::new(10, 1, 0, 2)).unwrap();
        ctl.label_add(100, true, mpls::LabelAction::swap(adj, &[200]))
            .unwrap();
        ctl.table_add(10).unwrap();
        let via10 = RouteKind::Paths(vec![Path::gateway_on(Ipv4Addr::new(10, 1, 0, 2), 1)]);
        ctl.route_add(10, "198.18.0.0/16".parse::<fib::IpPrefix>().unwrap(), via10)
            .unwrap();
        ctl.label_add(300, true, mpls::LabelAction::ip4_lookup(10))
            .unwrap();
        ctl.label_add(301, true, mpls::LabelAction::ip4_lookup(mpls::RX_TABLE))
            .unwrap();
        ctl.label_add(
            400,
            false,
            mpls::LabelAction::Pop {
                ttl_mode: mpls::TtlMode::Uniform,
            },
        )
        .unwrap();
        let lse = |label: u32, eos: bool| label << 12 | u32::from(eos) << 8 | 64;
        let ifaces = ctl.ifaces();
        let m = |r: &SampleRecord| mask_lengths(&ctl, &ifaces, r);
        assert_eq!(m(&rec([198, 18, 7, 1], &[lse(100, true)])), None);
        assert_eq!(m(&rec([198, 18, 7, 1], &[lse(999, true)])), None);
        assert_eq!(m(&rec([198, 18, 7, 1], &[lse(300, true)])), Some((0, 16)));
        assert_eq!(m(&rec([198, 18, 7, 1], &[lse(301, true)])), Some((24, 24)));
        assert_eq!(m(&rec([198, 18, 7, 1], &[lse(0, true)])), Some((24, 24)));
        assert_eq!(
            m(&rec([198, 19, 0, 1], &[lse(400, false), lse(300, true)])),
            Some((0, 0))
        );
        assert_eq!(
            m(&rec([198, 18, 7, 1], &[lse(0, false), lse(301, true)])),
            Some((24, 24))
        );
        // Pushed (sampled as it left, under a label) and tagged frames: the IPv4
        // header is found behind them.
        let mut r = rec([198, 18, 7, 1], &[]);
        let ip = r.header()[14..].to_vec();
        for (et, shim) in [
            ([0x88, 0x47], [0, 0x64, 0x01, 64]),
            ([0x81, 0], [0, 7, 8, 0]),
        ] {
            let mut f = frame.clone();
            f.truncate(12);
            f.extend_from_slice(&et);
            f.extend_from_slice(&shim);
            f.extend_from_slice(&ip);
            let info = PacketInfo {
                frame: &f,
                frame_len: f.len() as u32,
                input: sflow::Interface::Index(1),
                ..PacketInfo::default()
            };
            r = SampleRecord::new(0, Direction::Tx, 1, 1, 1, 0, 128, &info);
            assert_eq!(m(&r), Some((24, 24)));
        }
    }

    #[test]
    fn section_to_agent_config() {
        let s = parse(
            "[sflow]\ncollectors = [\"127.0.0.1:7000\"]\npolling_interval = 5\nheader_bytes = 64\n\
             [[sflow.interface]]\nname = \"port1\"\nrate = 10\ndirection = \"both\"\n\
             [[sflow.interface]]\nname = \"port0\"\n",
        );
        let cfg = agent_config(Some(&s), &names, Some(Ipv4Addr::new(10, 0, 0, 1))).unwrap();
        assert_eq!(cfg.agent_address, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(cfg.polling_interval, Duration::from_secs(5));
        assert_eq!(cfg.header_bytes, 64);
        assert_eq!(
            cfg.max_samples_per_second,
            sflow::DEFAULT_MAX_SAMPLES_PER_SECOND
        );
        assert_eq!(
            cfg.interfaces[&2],
            Sampling {
                rate: 10,
                directions: Directions::Both
            }
        );
        assert_eq!(
            cfg.interfaces[&1],
            Sampling {
                rate: DEFAULT_RATE,
                directions: Directions::Rx
            }
        );
        let none = agent_config(None, &names, None).unwrap();
        assert!(none.interfaces.is_empty() && none.collectors.is_empty());
        let s = parse("[sflow]\nmax_samples_per_second = 0\n");
        let cfg = agent_config(Some(&s), &names, None).unwrap();
        assert_eq!(cfg.max_samples_per_second, 0);
    }

    #[test]
    fn bad_sections_say_what_is_wrong() {
        let bad = |t: &str| {
            agent_config(Some(&parse(t)), &names, None)
                .unwrap_err()
                .to_string()
        };
        let e = bad("[sflow]\n[[sflow.interface]]\nname = \"port0\"\nrate = 0\n");
        assert!(e.contains("sampling rate 0"), "{e}");
        let e = bad("[sflow]\nheader_bytes = 32\n");
        assert!(e.contains("header-bytes 32 out of range 64..=256"), "{e}");
        let e = bad("[sflow]\nheader_bytes = 300\n");
        assert!(e.contains("header-bytes 300"), "{e}");
        let e = bad("[sflow]\ncollectors = [\"no-such-host.invalid\"]\n");
        assert!(
            e.contains("no-such-host.invalid") && e.contains("resolve"),
            "{e}"
        );
        let e = bad("[sflow]\n[[sflow.interface]]\nname = \"port9\"\n");
        assert!(e.contains("\"port9\": no such interface"), "{e}");
        let e = bad("[sflow]\n[[sflow.interface]]\nname = \"port0\"\ndirection = \"up\"\n");
        assert!(e.contains("expected rx, tx or both"), "{e}");
        let e = bad("[sflow]\nagent_address = \"x\"\n");
        assert!(e.contains("agent_address"), "{e}");
        let e = bad("[sflow]\nagent_address = \"0.0.0.0\"\n");
        assert!(e.contains("unspecified"), "{e}");
    }

    #[test]
    fn diff_keeps_what_the_file_did_not_change() {
        let old = agent_config(
            Some(&parse(
                "[sflow]\n[[sflow.interface]]\nname = \"port0\"\nrate = 10\n",
            )),
            &names,
            None,
        )
        .unwrap();
        let mut agent = Agent::new(old.clone()).unwrap();
        // dpctl change the file does not know about
        agent
            .set_sampling(
                2,
                Some(Sampling {
                    rate: 5,
                    directions: Directions::Tx,
                }),
            )
            .unwrap();
        let new = agent_config(
            Some(&parse(
                "[sflow]\nheader_bytes = 96\nmax_samples_per_second = 500\n\
                 [[sflow.interface]]\nname = \"port0\"\nrate = 20\n",
            )),
            &names,
            None,
        )
        .unwrap();
        let done = apply_diff(&mut agent, &old, &new);
        assert_eq!(
            done,
            ["header-bytes 96", "max-samples 500", "enable ifindex 1"]
        );
        assert_eq!(agent.config().max_samples_per_second, 500);
        assert_eq!(enabled(&agent)[&1].rate, 20);
        assert_eq!(enabled(&agent)[&2].rate, 5);
    }
}
