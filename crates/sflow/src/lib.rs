//! sFlow v5 for the dataplane: per-interface 1-in-N samplers that cost next to
//! nothing when they do not fire, fixed-size sample records in a lock-free ring per
//! worker, the sFlow v5 encoder (and a strict decoder for tests and tools), and the
//! agent that exports datagrams to collectors over UDP. Pure code: no DPDK, no
//! `unsafe`; the agent uses `std::net` only.
//!
//! # Who calls what
//!
//! Control thread (the daemon; owns the one [`Agent`]):
//! * [`Agent::new`] with an [`AgentConfig`] (validated: rate 0, header bytes
//!   outside 64..=256, an unresolvable collector are [`ConfigError`]s and change
//!   nothing).
//! * [`Agent::add_worker`] once per worker; the returned [`WorkerSampler`] moves to
//!   the worker's thread.
//! * `dpctl sflow ...`: [`Agent::set_sampling`], [`Agent::set_header_bytes`],
//!   [`Agent::set_polling_interval`], [`Agent::set_max_samples_per_second`],
//!   [`Agent::add_collector`],
//!   [`Agent::remove_collector`]; a config reload: [`Agent::reconfigure`].
//! * Every few milliseconds: [`Agent::poll`] with the port counters as a
//!   [`CounterSource`]; `show sflow`: [`Agent::stats`] and [`Agent::sources`].
//!
//! Worker, per vector, after the forwarding decision:
//! ```text
//! sampler.refresh();                                   // one load unless config changed
//! sampler.select_run(Direction::Rx, rx_ifindex, 0, n, &mut picks);       // one port's rx
//! sampler.select_burst(Direction::Tx, n, |i| out_ifindex[i], &mut picks); // mixed tx
//! for p in picks.as_slice() { sampler.submit(p, &packet_info(p.index)); }
//! picks.clear();
//! ```
//! `select_*` only decrement per-interface skip counts unless one expires; `submit`
//! copies the first `header_bytes` of the frame, the interfaces, next hop and label
//! stacks into a [`SampleRecord`] and pushes it into the worker's ring; a full ring
//! drops the sample, counts it, and the next sample of that interface reports it in
//! its `drops` field.
//!
//! A pipeline that notes per packet what a sample is described from can skip the
//! notes for most vectors: [`WorkerSampler::may_pick`] says whether a skip count
//! may run out within the next `n` packets, and [`WorkerSampler::begin_vector`]
//! whether the ring has room (without room, the vector's picks are counted as
//! dropped as they are selected, and none is returned).
//!
//! Tests and tools: [`decode_datagram`] and the [`proto`] types.
#![forbid(unsafe_code)]

mod agent;
mod config;
pub mod decode;
pub mod proto;
mod record;
mod ring;
mod sampler;

pub use agent::{
    Agent, AgentStats, CounterSource, InterfaceCounters, NoCounters, PollReport, SourceStats,
    WorkerStats,
};
pub use config::{
    AgentConfig, COUNTERS_SAMPLE_LEN, ConfigError, DEFAULT_DRAIN_BUDGET, DEFAULT_FLUSH_DELAY,
    DEFAULT_HEADER_BYTES, DEFAULT_MAX_DATAGRAM_BYTES, DEFAULT_MAX_SAMPLES_PER_SECOND,
    DEFAULT_POLLING_INTERVAL, DEFAULT_RING_CAPACITY, Directions, MAX_DATAGRAM_BYTES,
    MAX_HEADER_BYTES, MAX_IFINDEX, MIN_HEADER_BYTES, Sampling, datagram_header_len,
    max_flow_sample_len, resolve_collector, validate_agent_address, validate_datagram_size,
    validate_header_bytes, validate_ifindex, validate_polling_interval,
};
pub use decode::{DecodeError, decode_datagram};
pub use proto::{
    Address, CounterRecord, CountersSample, DataSource, Datagram, DatagramHeader, EncodeError,
    EthernetCounters, ExtendedMpls, ExtendedRouter, ExtendedSwitch, FlowRecord, FlowSample,
    HeaderProtocol, IfCounters, Interface, Sample, SampledHeader,
};
pub use record::{
    Direction, FCS_BYTES, HEADER_CAPACITY, LabelWords, MAX_RECORD_LABELS, PacketInfo, SampleRecord,
};
pub use sampler::{
    BURST, PICKS_CAPACITY, Pick, Picks, SampleConsumer, SamplingTable, WorkerCounters,
    WorkerSampler, channel,
};
