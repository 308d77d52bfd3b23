//! rtnetlink sockets of the control-plane namespace: one that follows the
//! multicast groups (events), one for dumps and requests.

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkHeader,
    NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{RouteAttribute, RouteMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, protocols::NETLINK_ROUTE};
use nix::sys::socket::{setsockopt, sockopt};

use super::decode::{self, Msg};
use crate::linux::change::DecodeError;

/// RTM_GETNEXTHOP (not in netlink-packet-route 0.34).
const RTM_GETNEXTHOP: u16 = 106;

/// The rtnetlink multicast groups the learner follows: links, neighbours, IPv4
/// and IPv6 addresses and routes, MPLS routes, nexthop objects.
const GROUPS: [u32; 8] = [
    1,  // RTNLGRP_LINK
    3,  // RTNLGRP_NEIGH
    5,  // RTNLGRP_IPV4_IFADDR
    7,  // RTNLGRP_IPV4_ROUTE
    9,  // RTNLGRP_IPV6_IFADDR
    11, // RTNLGRP_IPV6_ROUTE
    27, // RTNLGRP_MPLS_ROUTE
    32, // RTNLGRP_NEXTHOP
];

/// Largest datagram read at once.
const RECV_BUF: usize = 1 << 16;

/// An rtnetlink socket.
pub struct NlSocket {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl std::fmt::Debug for NlSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NlSocket")
            .field("fd", &self.sock.as_raw_fd())
            .finish()
    }
}

impl NlSocket {
    /// A socket in the calling thread's network namespace. With `events`, it
    /// joins the learner's groups, is non-blocking and gets a receive buffer of
    /// `rcvbuf` bytes (forced past `rmem_max`).
    pub fn open(events: bool, rcvbuf: usize) -> io::Result<NlSocket> {
        let sock = NlSocket::joined(if events { &GROUPS } else { &[] })?;
        if rcvbuf > 0 {
            let v = usize::try_from(libc::c_int::MAX).map_or(rcvbuf, |m| rcvbuf.min(m));
            if setsockopt(&sock.sock, sockopt::RcvBufForce, &v).is_err() {
                sock.sock.set_rx_buf_sz(rcvbuf)?;
            }
        }
        Ok(sock)
    }

    /// A socket bound in the calling thread's namespace; with `groups` it
    /// joins them and is non-blocking.
    fn joined(groups: &[u32]) -> io::Result<NlSocket> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        for &g in groups {
            sock.add_membership(g)?;
        }
        if !groups.is_empty() {
            sock.set_non_blocking(true)?;
        }
        Ok(NlSocket {
            sock,
            seq: 0,
            buf: Vec::with_capacity(RECV_BUF),
        })
    }

    /// A non-blocking socket in the calling thread's namespace that hears of
    /// link changes only (carrier, admin state).
    pub fn link_events() -> io::Result<NlSocket> {
        NlSocket::joined(&[1]) // RTNLGRP_LINK
    }

    /// Reads and drops whatever is waiting; whether anything was.
    pub fn drain(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.recv() {
                Ok(Some(_)) => any = true,
                Ok(None) => return any,
                // Lost events: something changed.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => any = true,
                Err(_) => return any,
            }
        }
    }

    /// The socket's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// The receive buffer the kernel granted, bytes.
    pub fn rcvbuf(&self) -> usize {
        self.sock.get_rx_buf_sz().unwrap_or(0)
    }

    /// Reads one datagram; `Ok(None)` when nothing is waiting (non-blocking).
    /// ENOBUFS (events were lost) comes back as the error.
    pub fn recv(&mut self) -> io::Result<Option<&[u8]>> {
        self.buf.clear();
        match self.sock.recv(&mut self.buf, 0) {
            Ok(_) => Ok(Some(&self.buf)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn send(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let mut h = NetlinkHeader::default();
        h.flags = flags;
        h.sequence_number = self.seq;
        let mut m = NetlinkMessage::new(h, NetlinkPayload::InnerMessage(msg));
        m.finalize();
        let mut bytes = vec![0; m.buffer_len()];
        m.serialize(&mut bytes);
        self.sock.send(&bytes, 0)?;
        Ok(self.seq)
    }

    /// Dumps links, addresses, neighbours, nexthop objects, the IPv4 and IPv6 routes of
    /// kernel tables `tables` and the MPLS routes, one after the other, and
    /// returns every message decoded. Blocking: for the dump socket.
    ///
    /// Routes are asked for table by table (strict checking): the kernel walks
    /// only those. An unfiltered dump also walks tables nobody maps, the local
    /// table among them, which shares main's trie: with a full table that walk
    /// is one non-preemptible call of tens of ms.
    pub fn dump_all(&mut self, tables: &[u32]) -> io::Result<Vec<Result<Msg, DecodeError>>> {
        self.sock.set_netlink_get_strict_chk(true)?;
        let mut out = Vec::new();
        let dump = NLM_F_REQUEST | NLM_F_DUMP;
        let reqs = [
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()),
        ];
        for r in reqs {
            self.send(r, dump)?;
            self.collect(&mut out)?;
        }
        // Nexthop objects before the routes that use them; built by hand
        // (nlmsghdr + an all-zero nhmsg).
        self.seq = self.seq.wrapping_add(1);
        let mut req = Vec::with_capacity(24);
        req.extend_from_slice(&24u32.to_ne_bytes());
        req.extend_from_slice(&RTM_GETNEXTHOP.to_ne_bytes());
        req.extend_from_slice(&dump.to_ne_bytes());
        req.extend_from_slice(&self.seq.to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        req.extend_from_slice(&[0; 8]);
        self.sock.send(&req, 0)?;
        // A kernel without nexthop objects answers with an error: nothing to learn.
        let mut nh = Vec::new();
        self.collect(&mut nh)?;
        out.extend(nh.into_iter().filter(|m| !matches!(m, Ok(Msg::Error(_)))));
        let mut reqs = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            for &t in tables {
                let mut m = RouteMessage::default();
                m.header.address_family = family;
                match u8::try_from(t) {
                    Ok(small) => m.header.table = small,
                    Err(_) => m.attributes.push(RouteAttribute::Table(t)),
                }
                reqs.push(m);
            }
        }
        // Only a kernel with MPLS routing: without it the kernel answers a
        // family it does not know with a dump of every family.
        if std::path::Path::new("/proc/sys/net/mpls").exists() {
            let mut mpls = RouteMessage::default();
            mpls.header.address_family = AddressFamily::Mpls;
            reqs.push(mpls);
        }
        for m in reqs {
            self.send(RouteNetlinkMessage::GetRoute(m), dump)?;
            // A table that does not exist (or no MPLS) answers with an error.
            let mut part = Vec::new();
            self.collect(&mut part)?;
            out.extend(part.into_iter().filter(|m| !matches!(m, Ok(Msg::Error(_)))));
        }
        Ok(out)
    }

    /// Reads the answer to one request up to NLMSG_DONE or an error message.
    fn collect(&mut self, out: &mut Vec<Result<Msg, DecodeError>>) -> io::Result<()> {
        loop {
            let Some(buf) = self.recv()? else {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "netlink dump socket is non-blocking",
                ));
            };
            let mut end = false;
            for m in decode::messages(buf) {
                match m {
                    Ok(Msg::Done) => end = true,
                    Ok(Msg::Error(e)) => {
                        end = true;
                        out.push(Ok(Msg::Error(e)));
                    }
                    other => out.push(other),
                }
            }
            if end {
                return Ok(());
            }
        }
    }

    /// Sends `msg` with NLM_F_ACK and waits for the kernel's answer.
    fn request(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.send(msg, NLM_F_REQUEST | NLM_F_ACK | flags)?;
        let mut out = Vec::new();
        self.collect(&mut out)?;
        match out.last() {
            Some(Ok(Msg::Error(0))) | None => Ok(()),
            Some(Ok(Msg::Error(e))) => Err(io::Error::from_raw_os_error(*e)),
            _ => Ok(()),
        }
    }

    /// `ip addr add ADDR/LEN dev IFINDEX` (EEXIST is not an error).
    pub fn add_address(&mut self, ifindex: u32, addr: IpAddr, len: u8) -> io::Result<()> {
        let mut m = AddressMessage::default();
        m.header.family = match addr {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        m.header.prefix_len = len;
        m.header.index = ifindex;
        if addr.is_ipv4() {
            m.attributes.push(AddressAttribute::Local(addr));
        }
        m.attributes.push(AddressAttribute::Address(addr));
        match self.request(
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_CREATE | NLM_F_EXCL,
        ) {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            r => r,
        }
    }

    /// `ip neigh replace ADDR dev IFINDEX use`: the kernel resolves the
    /// neighbour (ARP or a neighbour solicitation) as if traffic used it.
    pub fn resolve_neighbor(&mut self, ifindex: u32, addr: IpAddr) -> io::Result<()> {
        let mut m = NeighbourMessage::default();
        m.header.family = match addr {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        m.header.ifindex = ifindex;
        m.header.state = NeighbourState::Permanent;
        m.header.flags = NeighbourFlags::Use;
        m.attributes
            .push(NeighbourAttribute::Destination(match addr {
                IpAddr::V4(a) => NeighbourAddress::Inet(a),
                IpAddr::V6(a) => NeighbourAddress::Inet6(a),
            }));
        self.request(
            RouteNetlinkMessage::NewNeighbour(m),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }

    /// `ip link set dev IFINDEX up|down`.
    pub fn set_admin(&mut self, ifindex: u32, up: bool) -> io::Result<()> {
        let mut m = LinkMessage::default();
        m.header.index = ifindex;
        m.header.flags = if up {
            LinkFlags::Up
        } else {
            LinkFlags::empty()
        };
        m.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::SetLink(m), 0)
    }

    /// `ip link set dev IFINDEX carrier on|off` (RTM_SETLINK with IFLA_CARRIER; a
    /// TAP's driver applies it as TUNSETCARRIER does): with it off the kernel sees
    /// the link down (routes over it marked linkdown, routing daemons react).
    /// The change is then published at once rather than at linkwatch's next
    /// slot, up to a second later (`ethtool::sync_link`).
    pub fn set_carrier(&mut self, ifindex: u32, on: bool) -> io::Result<()> {
        let mut m = LinkMessage::default();
        m.header.index = ifindex;
        m.attributes.push(LinkAttribute::Carrier(u8::from(on)));
        self.request(RouteNetlinkMessage::SetLink(m), 0)?;
        if let Err(e) = super::ethtool::sync_link(self.sock.as_fd(), ifindex) {
            tracing::debug!("ifindex {ifindex}: link state not synced: {e}");
        }
        Ok(())
    }
}
