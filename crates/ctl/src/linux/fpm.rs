//! The FPM server: zebra's `dplane_fpm_nl` module connects over TCP (zebra is the
//! client) and sends its forwarding state as netlink messages in frames
//! (`u8 version = 1 | u8 type = 1 (netlink) | u16 length, big-endian, header
//! included | one or more netlink messages`). The messages go through the same
//! decoder and the same applier as the kernel's ([`super::decode`],
//! [`super::learner::KernelView`]), as the FPM source of the RIB.
//!
//! zebra walks its whole state on every connect with no end marker: the server
//! marks everything FPM-owned stale on connect and sweeps what the walk did not
//! refresh once the connection has been quiet for `quiet_ms`. A zebra that goes
//! away leaves its state forwarding until it comes back or `hold_s` passes.
//! Until that sweep, a delete of a route the walk has not announced yet, or of
//! a label, is left to the sweep (graceful restart): a restarted zebra deletes
//! its previous instance's routes before its daemons announce them again; what
//! is not announced again by the sweep goes then. A delete of a route this walk
//! announced is a withdrawal and is taken at once.
//!
//! FPM carries routes, nexthop objects and LSPs only: links, addresses,
//! neighbours and the loopback come from the kernel, and anything else a peer
//! sends is counted and refused. Only `allowed_peers` may connect; a connection
//! silent for `idle_s` gives way to a new one.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use dataplane::router::{RouteSource, RouterControl};

use super::change::DecodeError;
use super::decode;
use super::learner::KernelView;

/// `[fpm]`: listen for zebra's FPM connection in the `[linux]` namespace.
///
/// ```toml
/// [fpm]
/// address = "127.0.0.1"   # zebra: fpm address 127.0.0.1 port 2620
/// port = 2620
/// quiet_ms = 1000         # a walk is over after this long without a message
/// hold_s = 60             # a lost zebra's routes stay this long
/// allowed_peers = ["127.0.0.1", "::1"]
/// idle_s = 30             # a connection silent this long gives way to a new one
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FpmSection {
    /// Address to listen on (default 127.0.0.1).
    #[serde(default = "default_address")]
    pub address: String,
    /// TCP port (default 2620, FPM's).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Quiet time that ends zebra's walk after a connect, ms.
    #[serde(default = "default_quiet_ms")]
    pub quiet_ms: u64,
    /// How long the routes of a zebra that went away keep forwarding, s.
    #[serde(default = "default_hold_s")]
    pub hold_s: u64,
    /// When zebra comes back while its last routes are held, what its walk did
    /// not refresh is swept no sooner than this after the connect, s: a
    /// restarted zebra walks before its daemons (staticd, OSPF, LDP) have given
    /// it their routes, which follow as updates.
    #[serde(default = "default_restart_s")]
    pub restart_s: u64,
    /// Keep importing routes from the kernel while zebra is connected (or held)
    /// (default true). Off: FPM alone brings routes then; links, addresses and
    /// neighbours still come from netlink.
    #[serde(default = "default_true")]
    pub kernel_routes: bool,
    /// Addresses zebra may connect from (default loopback only); others are
    /// closed at once and counted.
    #[serde(default = "default_allowed_peers")]
    pub allowed_peers: Vec<IpAddr>,
    /// A connection that has sent nothing for this long gives way to a new
    /// connection from an allowed peer (zebra sends no keepalives: a quiet zebra
    /// keeps its slot until someone else asks for it), s.
    #[serde(default = "default_idle_s")]
    pub idle_s: u64,
}

impl Default for FpmSection {
    fn default() -> Self {
        FpmSection {
            address: default_address(),
            port: default_port(),
            quiet_ms: default_quiet_ms(),
            hold_s: default_hold_s(),
            restart_s: default_restart_s(),
            kernel_routes: true,
            allowed_peers: default_allowed_peers(),
            idle_s: default_idle_s(),
        }
    }
}

fn default_allowed_peers() -> Vec<IpAddr> {
    vec![
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ]
}
fn default_idle_s() -> u64 {
    30
}

fn default_true() -> bool {
    true
}

fn default_address() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    2620
}
fn default_quiet_ms() -> u64 {
    1000
}
fn default_hold_s() -> u64 {
    60
}
fn default_restart_s() -> u64 {
    10
}

/// FPM frame header bytes.
pub const HEADER: usize = 4;
/// Bytes read from the connection per poll at most.
const READ_BUDGET: usize = 1 << 20;

/// Why a connection was reset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A version other than 1.
    #[error("FPM frame version {0} (want 1)")]
    Version(u8),
    /// A length shorter than the header.
    #[error("FPM frame length {0} shorter than its header")]
    Length(u16),
    /// A netlink message header that does not fit the frame.
    #[error("FPM frame with a broken netlink message inside")]
    Netlink,
}

/// Splits complete frames off the front of `buf`: the netlink payloads of
/// type-1 frames, and how many bytes they took. A bad header is an error (the
/// stream cannot be resynchronised: the connection is reset).
pub fn frames(buf: &[u8]) -> (Vec<&[u8]>, usize, Option<FrameError>) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(h) = buf.get(at..at + HEADER) {
        if h[0] != 1 {
            return (out, at, Some(FrameError::Version(h[0])));
        }
        let len = u16::from_be_bytes([h[2], h[3]]);
        if usize::from(len) < HEADER {
            return (out, at, Some(FrameError::Length(len)));
        }
        let Some(f) = buf.get(at..at + usize::from(len)) else {
            break;
        };
        if h[1] == 1 {
            out.push(&f[HEADER..]);
        }
        at += usize::from(len);
    }
    (out, at, None)
}

/// Counters for `show fpm`.
#[derive(Debug, Default, Clone)]
struct FpmStats {
    connects: u64,
    frames: u64,
    messages: u64,
    resets: u64,
    last_reset: Option<String>,
    /// Connections closed at once: from a peer not allowed, or while the
    /// current one is not idle.
    refused_peer: u64,
    refused_busy: u64,
    /// The last refused connection and why.
    last_refused: Option<String>,
    /// Silent connections replaced by a new one.
    replaced: u64,
    /// When, how many entries went.
    last_sweep: Option<(Instant, u64, &'static str)>,
}

/// zebra's connection.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    since: Instant,
    /// When it last sent something.
    heard: Instant,
}

/// The server.
#[derive(Debug)]
pub struct FpmServer {
    section: FpmSection,
    listener: TcpListener,
    conn: Option<Conn>,
    buf: Vec<u8>,
    view: KernelView,
    stats: FpmStats,
    /// A walk is being marked: when its last message came.
    walking: Option<Instant>,
    /// The walk is not swept before then (see `restart_s`).
    sweep_after: Instant,
    /// zebra went away then.
    lost_at: Option<Instant>,
    /// Refused connections are logged at most this often.
    log_limit: crate::log::RateLimit,
}

impl FpmServer {
    /// Reads the VRF devices the netlink learner keeps (zebra's per-VRF labels
    /// name them as their next hop).
    pub fn share_vrf_devices(&mut self, devs: super::learner::VrfDevices) {
        self.view.share_vrf_devices(devs);
    }

    /// Listens on `listener` (made in the control-plane namespace), mapping
    /// zebra's ifindexes `twins` (kernel -> router) and tables `tables`.
    pub fn new(
        section: FpmSection,
        listener: TcpListener,
        twins: HashMap<u32, u32>,
        tables: BTreeMap<u32, u32>,
    ) -> io::Result<FpmServer> {
        listener.set_nonblocking(true)?;
        Ok(FpmServer {
            section,
            listener,
            conn: None,
            buf: Vec::new(),
            view: KernelView::with_source(RouteSource::Fpm, twins, tables),
            stats: FpmStats::default(),
            log_limit: crate::log::RateLimit::new(5, Duration::from_secs(10)),
            walking: None,
            sweep_after: Instant::now(),
            lost_at: None,
        })
    }

    /// Accepts, reads and applies what arrived; ends walks and holds that are
    /// due. Returns whether bytes are left to read (the budget ran out).
    pub fn poll(&mut self, ctl: &mut RouterControl) -> bool {
        let now = Instant::now();
        while let Ok((s, peer)) = self.listener.accept() {
            self.accept(ctl, s, peer, now);
        }
        let left = self.read(ctl, now);
        if let Some(last) = self.walking {
            if now.duration_since(last) >= Duration::from_millis(self.section.quiet_ms)
                && now >= self.sweep_after
            {
                self.walking = None;
                let v = &mut self.view;
                let swept = ctl.batch(|ctl| v.sweep(ctl));
                tracing::info!("fpm: zebra's walk done, {swept} stale entries swept");
                self.stats.last_sweep = Some((now, swept, "walk done"));
            }
        }
        if let Some(at) = self.lost_at {
            if now.duration_since(at) >= Duration::from_secs(self.section.hold_s) {
                self.lost_at = None;
                self.walking = None;
                let v = &mut self.view;
                v.begin_refresh(ctl);
                let swept = ctl.batch(|ctl| v.sweep(ctl));
                tracing::info!("fpm: zebra's hold time expired, {swept} of its entries withdrawn");
                self.stats.last_sweep = Some((now, swept, "hold time expired"));
            }
        }
        left
    }

    /// The descriptors to watch, with a token that changes with the connection.
    pub fn fds(&self) -> Vec<(BorrowedFd<'_>, u64)> {
        let mut v = vec![(self.listener.as_fd(), 1)];
        if let Some(c) = &self.conn {
            v.push((c.stream.as_fd(), 2 + self.stats.connects));
        }
        v
    }

    /// Takes a new connection, or closes it: a peer not allowed, or a slot
    /// held by a connection that is not idle.
    fn accept(&mut self, ctl: &mut RouterControl, s: TcpStream, peer: SocketAddr, now: Instant) {
        let ip = peer.ip().to_canonical();
        if !self
            .section
            .allowed_peers
            .iter()
            .any(|a| a.to_canonical() == ip)
        {
            self.stats.refused_peer += 1;
            let why = format!("{peer}: not an allowed peer");
            if self.log_limit.allow(now).is_some() {
                tracing::warn!("fpm: connection refused: {why}");
            }
            self.stats.last_refused = Some(why);
            return;
        }
        let idle = Duration::from_secs(self.section.idle_s);
        if let Some(c) = &self.conn {
            if now.duration_since(c.heard) < idle {
                self.stats.refused_busy += 1;
                let why = format!("{peer}: {} is connected and not idle", c.peer);
                if self.log_limit.allow(now).is_some() {
                    tracing::warn!("fpm: connection refused: {why}");
                }
                self.stats.last_refused = Some(why);
                return;
            }
            self.stats.replaced += 1;
            let why = format!("silent for {} s, replaced by {peer}", idle.as_secs());
            self.lose(why, now);
        }
        if s.set_nonblocking(true).is_err() {
            return;
        }
        self.conn = Some(Conn {
            stream: s,
            peer,
            since: now,
            heard: now,
        });
        self.buf.clear();
        self.stats.connects += 1;
        tracing::info!("fpm: zebra connected from {peer}");
        // A zebra back while its routes are held: its daemons' routes come
        // after its walk (see `restart_s`).
        let grace = match self.lost_at.take() {
            Some(_) => Duration::from_secs(self.section.restart_s),
            None => Duration::ZERO,
        };
        self.sweep_after = now + grace;
        // The walk that follows refreshes what is still true.
        self.view.begin_refresh(ctl);
        self.walking = Some(now);
    }

    /// The connection is gone: its state stays, forwarding, until zebra is back
    /// or the hold ends; an unfinished walk is not swept.
    fn lose(&mut self, why: String, now: Instant) {
        tracing::info!(
            "fpm: zebra's connection ended ({why}); its routes are held {} s",
            self.section.hold_s
        );
        self.stats.last_reset = Some(why);
        self.conn = None;
        self.buf.clear();
        self.walking = None;
        self.lost_at = Some(now);
    }

    fn read(&mut self, ctl: &mut RouterControl, now: Instant) -> bool {
        let Some(Conn { stream: s, .. }) = &mut self.conn else {
            return false;
        };
        let mut chunk = [0u8; 64 * 1024];
        let mut got = 0;
        let mut closed = None;
        while got < READ_BUDGET {
            match s.read(&mut chunk) {
                Ok(0) => {
                    closed = Some("zebra closed the connection".to_string());
                    break;
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    got += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    closed = Some(format!("FPM connection: {e}"));
                    break;
                }
            }
        }
        let (payloads, used, mut bad) = frames(&self.buf);
        let mut msgs = Vec::new();
        for p in &payloads {
            self.stats.frames += 1;
            let m = decode::messages(p);
            // A netlink header that does not fit its frame: the stream is not
            // zebra's any more. (A message whose content is bad is counted and
            // skipped by the applier.)
            if m.iter().any(|r| {
                matches!(
                    r,
                    Err(DecodeError::Malformed {
                        what: "netlink message",
                        ..
                    })
                )
            }) {
                bad = Some(FrameError::Netlink);
                break;
            }
            msgs.extend(m);
        }
        self.buf.drain(..used);
        if got > 0 {
            if let Some(c) = &mut self.conn {
                c.heard = now;
            }
        }
        if !msgs.is_empty() {
            self.stats.messages += msgs.len() as u64;
            // One publication per read: a DEL + NEW pair in a frame is one replace.
            self.view.apply_batch(ctl, msgs);
            if self.walking.is_some() {
                self.walking = Some(now);
            }
        }
        if let Some(e) = bad {
            closed = Some(e.to_string());
            self.stats.resets += 1;
        }
        let left = got >= READ_BUDGET && closed.is_none();
        if let Some(why) = closed {
            self.lose(why, now);
        }
        left
    }

    /// The section it runs with.
    pub fn section(&self) -> &FpmSection {
        &self.section
    }

    /// Whether zebra is connected, or gone but its routes still held.
    pub fn active(&self) -> bool {
        self.conn.is_some() || self.lost_at.is_some()
    }

    /// Netlink messages received so far.
    pub fn messages(&self) -> u64 {
        self.stats.messages
    }

    /// Whether a walk after a connect is still being marked (its sweep is due).
    pub fn walking(&self) -> bool {
        self.walking.is_some()
    }

    /// The connection's counters for a Prometheus scrape.
    pub fn metrics(&self, m: &mut crate::metrics::Scrape) {
        let s = &self.stats;
        self.view.metrics("fpm", m);
        m.gauge(
            "fpm_connected",
            "Whether zebra is connected (1).",
            &[],
            f64::from(u8::from(self.conn.is_some())),
        );
        m.counter("fpm_connects", "zebra connections taken.", &[], s.connects);
        m.counter("fpm_frames", "FPM frames read.", &[], s.frames);
        m.counter(
            "fpm_resets",
            "FPM connections lost or closed.",
            &[],
            s.resets,
        );
        m.counter(
            "fpm_refused_peers",
            "Connections refused (peer not allowed).",
            &[],
            s.refused_peer,
        );
        m.counter(
            "fpm_refused_busy",
            "Connections refused (another one is active).",
            &[],
            s.refused_busy,
        );
        m.counter(
            "fpm_replaced",
            "Silent connections replaced by a new one.",
            &[],
            s.replaced,
        );
        m.gauge(
            "fpm_held",
            "Whether FPM routes are held after a lost connection (1).",
            &[],
            f64::from(u8::from(self.lost_at.is_some())),
        );
    }

    /// `show fpm`.
    pub fn show(&self, ctl: &RouterControl) -> Value {
        let s = &self.stats;
        let v = self.view.stats();
        json!({
            "listen": format!("{}:{}", self.section.address, self.section.port),
            "peer": self.conn.as_ref().map(|c| c.peer.to_string()),
            "connected_s": self.conn.as_ref().map(|c| c.since.elapsed().as_secs_f64()),
            "silent_s": self.conn.as_ref().map(|c| c.heard.elapsed().as_secs_f64()),
            "allowed_peers": self.section.allowed_peers,
            "refused_peer": s.refused_peer,
            "refused_busy": s.refused_busy,
            "last_refused": s.last_refused,
            "replaced": s.replaced,
            "refused_by": v.refused_by,
            "connects": s.connects,
            "frames": s.frames,
            "messages": s.messages,
            "malformed": v.malformed,
            "refused": v.refused,
            "last_error": v.last_error,
            "ignored": v.ignored,
            "resets": s.resets,
            "last_reset": s.last_reset,
            "walking": self.walking.is_some(),
            "held_s": self.lost_at.map(|t| t.elapsed().as_secs_f64()),
            "routes": ctl.route_count_of(RouteSource::Fpm),
            "last_sweep": s.last_sweep.map(|(t, n, why)| json!({
                "ago_s": t.elapsed().as_secs_f64(),
                "swept": n,
                "why": why,
            })),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::Ipv4Addr;

    use super::super::learner::VrfDevices;
    use dataplane::router::Interface;
    use fib::{IpPrefix, Ipv4Prefix};

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![1, kind];
        f.extend_from_slice(&((payload.len() + HEADER) as u16).to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn frames_split_wait_and_reset() {
        let mut b = frame(1, b"abc");
        b.extend(frame(2, b"skipped"));
        b.extend(frame(1, b"de"));
        let part = frame(1, b"fghij");
        b.extend_from_slice(&part[..5]);
        let (p, used, bad) = frames(&b);
        assert_eq!(p, [&b"abc"[..], &b"de"[..]]);
        assert_eq!(used, b.len() - 5);
        assert_eq!(bad, None);
        assert_eq!(frames(&[1, 1]).1, 0);
        assert_eq!(frames(&[2, 1, 0, 8]).2, Some(FrameError::Version(2)));
        assert_eq!(frames(&[1, 1, 0, 3]).2, Some(FrameError::Length(3)));
        // A good frame before a bad one is still taken.
        let mut b = frame(1, b"ok");
        b.extend([9, 9, 9, 9]);
        let (p, used, bad) = frames(&b);
        assert_eq!((p.len(), used, bad), (1, 6, Some(FrameError::Version(9))));
    }

    /// RTM_NEWROUTE (or DELROUTE) `dst/24` via `gw` out of kernel ifindex 11, as
    /// zebra sends it.
    fn route_msg(new: bool, dst: [u8; 4], gw: [u8; 4]) -> Vec<u8> {
        // rtmsg: inet, /24, main, proto static (196 zebra), universe, unicast
        let rtm = [2, 24, 0, 0, 254, 196, 0, 1, 0, 0, 0, 0];
        let attrs = [nla(1, &dst), nla(5, &gw), nla(4, &11u32.to_ne_bytes())];
        route_nlmsg(if new { 24 } else { 25 }, rtm, &attrs)
    }

    fn router() -> RouterControl {
        let mut ctl = RouterControl::new();
        ctl.add_interface(Interface {
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
        ctl
    }

    /// Polls until `f` holds (at most 2 s).
    fn poll_until(
        s: &mut FpmServer,
        ctl: &mut RouterControl,
        f: impl Fn(&FpmServer, &RouterControl) -> bool,
    ) {
        let t0 = Instant::now();
        while !f(s, ctl) {
            assert!(t0.elapsed() < Duration::from_secs(2), "{}", s.show(ctl));
            s.poll(ctl);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A netlink attribute (padded to 4 bytes).
    fn nla(kind: u16, val: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + val.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(val);
        a.resize(a.len().next_multiple_of(4), 0);
        a
    }

    /// An RTM_NEWROUTE or RTM_DELROUTE (`kind`) with rtmsg `rtm` and
    /// attributes `attrs`.
    fn route_nlmsg(kind: u16, rtm: [u8; 12], attrs: &[Vec<u8>]) -> Vec<u8> {
        let attrs = attrs.concat();
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + 12 + attrs.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(&rtm);
        m.extend(attrs);
        m
    }

    /// RTM_NEWROUTE with rtmsg `rtm` and attributes `attrs`.
    fn new_route(rtm: [u8; 12], attrs: &[Vec<u8>]) -> Vec<u8> {
        route_nlmsg(24, rtm, attrs)
    }

    /// An MPLS label stack on the wire (the last one bottom of stack).
    fn stack(labels: &[u32]) -> Vec<u8> {
        let n = labels.len();
        labels
            .iter()
            .enumerate()
            .flat_map(|(i, l)| (l << 12 | u32::from(i + 1 == n) << 8).to_be_bytes())
            .collect()
    }

    /// zebra's L3VPN shapes (this kernel has no VRF devices, so they are
    /// built here as zebra's netlink encoder lays them out): a VRF's route
    /// (rtm_table = the VRF's table) resolved over the transport LSP, with the
    /// transport label over the VPN label; and the per-VRF label, an MPLS
    /// route whose only next hop is the VRF's device (implicit null): pop, then
    /// look up in the VRF. A VRF device whose table is no FIB table is refused.
    #[test]
    fn zebra_vpn_routes_and_per_vrf_labels() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let section = FpmSection {
            port: addr.port(),
            quiet_ms: 50,
            hold_s: 3600,
            ..FpmSection::default()
        };
        let mut s = FpmServer::new(section, l, HashMap::from([(11, 1)]), BTreeMap::new()).unwrap();
        // The netlink learner's view of the namespace: VRF red (kernel ifindex
        // 50, table 10), and 51 with table 99, which the router does not have.
        let devs = VrfDevices::default();
        devs.lock().unwrap().extend([(50, 10), (51, 99)]);
        s.share_vrf_devices(devs);
        let mut ctl = router();
        ctl.table_add(10).unwrap();
        let mut z = TcpStream::connect(addr).unwrap();
        let vpn_route = new_route(
            // inet /24, table 10, proto bgp, universe, unicast
            [2, 24, 0, 0, 10, 186, 0, 1, 0, 0, 0, 0],
            &[
                nla(15, &10u32.to_ne_bytes()),
                nla(1, &[10, 0, 0, 0]),
                nla(5, &[10, 1, 0, 2]),
                nla(4, &11u32.to_ne_bytes()),
                nla(21, &1u16.to_ne_bytes()),
                nla(22, &nla(1, &stack(&[1000, 77]))),
            ],
        );
        // AF_MPLS, label 80, out of the VRF device: no RTA_NEWDST, no RTA_VIA.
        let mpls = |label: u32, oif: u32| {
            new_route(
                [28, 20, 0, 0, 254, 186, 0, 1, 0, 0, 0, 0],
                &[nla(1, &stack(&[label])), nla(4, &oif.to_ne_bytes())],
            )
        };
        let mut msgs = vpn_route;
        msgs.extend(mpls(80, 50));
        msgs.extend(mpls(81, 51));
        z.write_all(&frame(1, &msgs)).unwrap();
        let p: Ipv4Prefix = "10.0.0.0/24".parse().unwrap();
        poll_until(&mut s, &mut ctl, |_, c| {
            c.route_of(RouteSource::Fpm, 10, p).is_some()
                && c.label_of(RouteSource::Fpm, 80, true).is_some()
        });
        match ctl.route_of(RouteSource::Fpm, 10, p) {
            Some(fib::RouteKind::Paths(ps)) => {
                assert_eq!(ps.len(), 1, "{ps:?}");
                assert_eq!(ps[0].via, fib::Via::Gateway(Ipv4Addr::new(10, 1, 0, 2)));
                assert_eq!(ps[0].ifindex, Some(1));
                assert_eq!(ps[0].labels, [1000, 77]);
            }
            other => panic!("{other:?}"),
        }
        assert!(ctl.route_of(RouteSource::Fpm, 0, p).is_none());
        assert!(matches!(
            ctl.label_of(RouteSource::Fpm, 80, true),
            Some(mpls::LabelAction::IpLookup { table: 10, .. })
        ));
        assert!(matches!(
            ctl.label_of(RouteSource::Fpm, 80, false),
            Some(mpls::LabelAction::Pop { .. })
        ));
        assert!(ctl.label_of(RouteSource::Fpm, 81, true).is_none());
        let v = s.show(&ctl);
        assert!(v.to_string().contains("table 99 is no FIB table"), "{v}");
    }

    #[test]
    fn routes_over_a_connection_then_a_bad_frame_then_a_walk() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let section = FpmSection {
            address: "127.0.0.1".into(),
            port: addr.port(),
            quiet_ms: 50,
            hold_s: 3600,
            restart_s: 0,
            ..FpmSection::default()
        };
        let mut s = FpmServer::new(section, l, HashMap::from([(11, 1)]), BTreeMap::new()).unwrap();
        let mut ctl = router();
        let fpm_routes = |c: &RouterControl| c.routes_of(RouteSource::Fpm).count();
        let mut z = TcpStream::connect(addr).unwrap();
        // Two routes in one frame, a third in a frame split across writes.
        let mut two = route_msg(true, [198, 51, 100, 0], [10, 1, 0, 2]);
        two.extend(route_msg(true, [203, 0, 113, 0], [10, 1, 0, 2]));
        z.write_all(&frame(1, &two)).unwrap();
        let third = frame(1, &route_msg(true, [192, 0, 2, 0], [10, 1, 0, 3]));
        z.write_all(&third[..7]).unwrap();
        poll_until(&mut s, &mut ctl, |_, c| fpm_routes(c) == 2);
        z.write_all(&third[7..]).unwrap();
        poll_until(&mut s, &mut ctl, |_, c| fpm_routes(c) == 3);
        // A replace as zebra sends it: DEL + NEW in one frame.
        let mut rep = route_msg(false, [192, 0, 2, 0], [10, 1, 0, 3]);
        rep.extend(route_msg(true, [192, 0, 2, 0], [10, 1, 0, 4]));
        z.write_all(&frame(1, &rep)).unwrap();
        poll_until(&mut s, &mut ctl, |_, c| {
            matches!(
                c.route_of(RouteSource::Fpm, 0, "192.0.2.0/24".parse::<IpPrefix>().unwrap()),
                Some(fib::RouteKind::Paths(p)) if p[0].via == fib::Via::Gateway(Ipv4Addr::new(10, 1, 0, 4))
            )
        });
        // A bad header: the connection is reset, the routes stay (held).
        z.write_all(&[7, 1, 0, 4]).unwrap();
        poll_until(&mut s, &mut ctl, |s, _| {
            s.stats.resets == 1 && s.conn.is_none()
        });
        assert_eq!(fpm_routes(&ctl), 3);
        // A frame whose netlink message claims more than the frame holds: reset.
        let mut z = TcpStream::connect(addr).unwrap();
        let mut broken = route_msg(true, [198, 51, 100, 0], [10, 1, 0, 2]);
        broken[0] = 200;
        z.write_all(&frame(1, &broken)).unwrap();
        poll_until(&mut s, &mut ctl, |s, _| {
            s.stats.resets == 2 && s.conn.is_none()
        });
        assert_eq!(fpm_routes(&ctl), 3);
        // zebra reconnects and walks only one route: the others are swept once
        // the walk is quiet.
        let mut z = TcpStream::connect(addr).unwrap();
        z.write_all(&frame(
            1,
            &route_msg(true, [198, 51, 100, 0], [10, 1, 0, 2]),
        ))
        .unwrap();
        poll_until(&mut s, &mut ctl, |_, c| fpm_routes(c) == 1);
        let v = s.show(&ctl);
        assert_eq!(v["connects"], 3, "{v}");
        assert_eq!(v["resets"], 2, "{v}");
        assert_eq!(v["last_sweep"]["swept"], 2, "{v}");
    }

    /// A restarted zebra deletes its previous instance's routes before its
    /// daemons announce them again: the held routes keep forwarding until the
    /// sweep; a delete of what the new connection announced is taken at once.
    /// Links, addresses and neighbours over FPM are refused; a silent connection
    /// gives way to a new one, a busy one does not.
    #[test]
    fn a_restart_keeps_held_routes_and_fpm_carries_routes_only() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let section = FpmSection {
            port: addr.port(),
            quiet_ms: 50,
            hold_s: 3600,
            restart_s: 3600,
            idle_s: 1,
            ..FpmSection::default()
        };
        let mut s = FpmServer::new(section, l, HashMap::from([(11, 1)]), BTreeMap::new()).unwrap();
        let mut ctl = router();
        let p198: Ipv4Prefix = "198.51.100.0/24".parse().unwrap();
        let p203: Ipv4Prefix = "203.0.113.0/24".parse().unwrap();
        let has = |c: &RouterControl, p: Ipv4Prefix| c.route_of(RouteSource::Fpm, 0, p).is_some();
        let mut z = TcpStream::connect(addr).unwrap();
        let mut two = route_msg(true, [198, 51, 100, 0], [10, 1, 0, 2]);
        two.extend(route_msg(true, [203, 0, 113, 0], [10, 1, 0, 2]));
        z.write_all(&frame(1, &two)).unwrap();
        poll_until(&mut s, &mut ctl, |_, c| has(c, p198) && has(c, p203));
        // An RTM_NEWLINK (type 16) setting a twin down: refused, counted.
        let mut link = Vec::new();
        link.extend_from_slice(&32u32.to_ne_bytes());
        link.extend_from_slice(&16u16.to_ne_bytes());
        link.extend_from_slice(&[0; 10]);
        link.extend_from_slice(&[0, 0, 1, 0]);
        link.extend_from_slice(&11i32.to_ne_bytes());
        link.extend_from_slice(&[0; 8]);
        z.write_all(&frame(1, &link)).unwrap();
        poll_until(&mut s, &mut ctl, |s, _| {
            s.view.stats().refused_by.get("link over FPM") == Some(&1)
        });
        assert!(ctl.iface(1).unwrap().up);
        // zebra dies; a new one deletes both, then announces one again.
        drop(z);
        poll_until(&mut s, &mut ctl, |s, _| s.conn.is_none());
        let mut z = TcpStream::connect(addr).unwrap();
        let mut dels = route_msg(false, [198, 51, 100, 0], [10, 1, 0, 2]);
        dels.extend(route_msg(false, [203, 0, 113, 0], [10, 1, 0, 2]));
        z.write_all(&frame(1, &dels)).unwrap();
        z.write_all(&frame(
            1,
            &route_msg(true, [198, 51, 100, 0], [10, 1, 0, 3]),
        ))
        .unwrap();
        poll_until(&mut s, &mut ctl, |_, c| {
            matches!(c.route_of(RouteSource::Fpm, 0, p198),
                Some(fib::RouteKind::Paths(p)) if p[0].via == fib::Via::Gateway(Ipv4Addr::new(10, 1, 0, 3)))
        });
        assert!(has(&ctl, p203), "a held route's delete waits for the sweep");
        // A delete then an announce during the walk: no gap; a delete alone of
        // what this walk announced is a withdrawal, taken at once, while the
        // held route's waits for the sweep.
        let mut again = route_msg(false, [198, 51, 100, 0], [10, 1, 0, 3]);
        again.extend(route_msg(true, [198, 51, 100, 0], [10, 1, 0, 4]));
        z.write_all(&frame(1, &again)).unwrap();
        poll_until(&mut s, &mut ctl, |_, c| {
            matches!(c.route_of(RouteSource::Fpm, 0, p198),
                Some(fib::RouteKind::Paths(p)) if p[0].via == fib::Via::Gateway(Ipv4Addr::new(10, 1, 0, 4)))
        });
        z.write_all(&frame(
            1,
            &route_msg(false, [198, 51, 100, 0], [10, 1, 0, 4]),
        ))
        .unwrap();
        poll_until(&mut s, &mut ctl, |s, _| s.stats.messages >= 9);
        assert!(!has(&ctl, p198), "withdrawn after this walk announced it");
        assert!(has(&ctl, p203), "a held route waits for the sweep");
        // Busy: a second connection is closed; once this one is silent for
        // idle_s, a new one replaces it.
        let mut other = TcpStream::connect(addr).unwrap();
        other
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        s.poll(&mut ctl);
        let mut b = [0u8; 1];
        assert_eq!(
            std::io::Read::read(&mut other, &mut b).unwrap(),
            0,
            "closed"
        );
        assert_eq!(s.stats.refused_busy, 1);
        std::thread::sleep(Duration::from_millis(1100));
        let _z2 = TcpStream::connect(addr).unwrap();
        poll_until(&mut s, &mut ctl, |s, _| s.stats.replaced == 1);
        assert_eq!(s.stats.connects, 3);
        drop(z);
    }

    #[test]
    fn peers_not_allowed_are_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let section = FpmSection {
            port: addr.port(),
            allowed_peers: vec!["192.0.2.1".parse().unwrap()],
            ..FpmSection::default()
        };
        let mut s = FpmServer::new(section, l, HashMap::new(), BTreeMap::new()).unwrap();
        let mut ctl = router();
        let _z = TcpStream::connect(addr).unwrap();
        poll_until(&mut s, &mut ctl, |s, _| s.stats.refused_peer == 1);
        assert!(s.conn.is_none());
        assert_eq!(s.stats.connects, 0);
    }

    /// What zebra 8.4 sent over FPM for staticd's routes (recorded by
    /// `record_zebra_fpm_frames` in tests/linux.rs): each frame decodes to the
    /// change it meant.
    #[test]
    fn a_recorded_zebra_stream_decodes() {
        use crate::linux::change::{Change, Target};
        use crate::linux::decode::Msg;
        let rec = include_bytes!("fixtures/zebra-static.fpm");
        let (payloads, used, bad) = frames(rec);
        assert_eq!((used, bad), (rec.len(), None));
        let mut got = Vec::new();
        for p in payloads {
            for m in decode::messages(p) {
                match m.expect("zebra's messages decode") {
                    Msg::Change(Change::Route { prefix, route, .. }) => {
                        let what = match route {
                            None => "deleted".to_string(),
                            Some(Target::Blackhole) => "blackhole".to_string(),
                            Some(Target::Paths(p)) => p
                                .iter()
                                .map(|h| h.gateway.map_or("dev".into(), |g| g.to_string()))
                                .collect::<Vec<_>>()
                                .join(","),
                            Some(t) => format!("{t:?}"),
                        };
                        got.push(format!("{prefix} {what}"));
                    }
                    Msg::Ignored(why) => got.push(format!("ignored: {why}")),
                    other => got.push(format!("{other:?}")),
                }
            }
        }
        assert_eq!(
            got,
            [
                // The interface's connected route: the dataplane derives its own.
                "ignored: kernel-derived",
                "192.0.2.0/24 blackhole",
                "198.51.100.0/24 10.83.1.2",
                "203.0.113.0/24 10.83.1.2,10.83.1.3",
                // The IPv6 connected route of the interface.
                "ignored: kernel-derived",
                // `no ip route ...`: DELROUTE with type 0.
                "198.51.100.0/24 deleted",
            ]
        );
    }
}
