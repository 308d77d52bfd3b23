//! The control namespace's TCP sockets over sock_diag (NETLINK_SOCK_DIAG, as
//! `ss -t` reads them): which ports something listens on, and which
//! connections exist. The punt policer favours their packets
//! ([`dataplane::router::Sessions`]).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

use netlink_sys::Socket;

/// NETLINK_SOCK_DIAG.
const NETLINK_SOCK_DIAG: isize = 4;
/// SOCK_DIAG_BY_FAMILY.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// TCP_LISTEN.
const LISTEN: u8 = 10;
/// The states asked for: every connection that exists or is being opened
/// from here (SYN_SENT), and listeners; not half-open incoming ones (SYN_RECV,
/// NEW_SYN_RECV: a SYN flood makes those), TIME_WAIT or CLOSE.
const STATES: u32 = (1 << 1) // ESTABLISHED
    | (1 << 2) // SYN_SENT
    | (1 << 4) // FIN_WAIT1
    | (1 << 5) // FIN_WAIT2
    | (1 << 8) // CLOSE_WAIT
    | (1 << 9) // LAST_ACK
    | (1 << 10) // LISTEN
    | (1 << 11); // CLOSING

/// What a dump found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TcpSockets {
    /// Ports with a listener (IPv4 or IPv6: a `::` listener takes IPv4 too).
    pub listen: Vec<u16>,
    /// IPv4 connections (IPv4-mapped ones of IPv6 sockets included): (local,
    /// remote).
    pub conns: Vec<((Ipv4Addr, u16), (Ipv4Addr, u16))>,
}

/// A sock_diag socket.
pub struct SockDiag {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl std::fmt::Debug for SockDiag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SockDiag").finish_non_exhaustive()
    }
}

impl SockDiag {
    /// A socket in the calling thread's namespace.
    pub fn open() -> io::Result<SockDiag> {
        let mut sock = Socket::new(NETLINK_SOCK_DIAG)?;
        sock.bind_auto()?;
        Ok(SockDiag {
            sock,
            seq: 0,
            buf: Vec::with_capacity(1 << 16),
        })
    }

    /// The namespace's TCP listeners and connections.
    pub fn tcp(&mut self) -> io::Result<TcpSockets> {
        let mut out = TcpSockets::default();
        for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            self.dump(family, &mut out)?;
        }
        out.listen.sort_unstable();
        out.listen.dedup();
        out.conns.sort_unstable();
        out.conns.dedup();
        Ok(out)
    }

    fn dump(&mut self, family: u8, out: &mut TcpSockets) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let mut req = Vec::with_capacity(72);
        req.extend_from_slice(&72u32.to_ne_bytes());
        req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        req.extend_from_slice(&0x301u16.to_ne_bytes()); // NLM_F_REQUEST | NLM_F_DUMP
        req.extend_from_slice(&self.seq.to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        // inet_diag_req_v2: family, protocol, ext, pad, states, an empty sockid.
        req.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, 0, 0]);
        req.extend_from_slice(&STATES.to_ne_bytes());
        req.extend_from_slice(&[0; 48]);
        self.sock.send(&req, 0)?;
        loop {
            self.buf.clear();
            self.sock.recv(&mut self.buf, 0)?;
            if parse(&self.buf, out)? {
                return Ok(());
            }
        }
    }
}

/// Takes the messages of one datagram into `out`; whether the dump ended.
fn parse(mut b: &[u8], out: &mut TcpSockets) -> io::Result<bool> {
    while b.len() >= 16 {
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let kind = u16::from_ne_bytes([b[4], b[5]]);
        if len < 16 || len > b.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "sock_diag: bad message length",
            ));
        }
        let body = &b[16..len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let e = body
                    .get(..4)
                    .map_or(0, |x| i32::from_ne_bytes([x[0], x[1], x[2], x[3]]));
                if e == 0 {
                    return Ok(true);
                }
                return Err(io::Error::from_raw_os_error(-e));
            }
            SOCK_DIAG_BY_FAMILY => take(body, out),
            _ => {}
        }
        b = &b[((len + 3) & !3).min(b.len())..];
    }
    Ok(false)
}

/// One inet_diag_msg.
fn take(m: &[u8], out: &mut TcpSockets) {
    if m.len() < 40 {
        return;
    }
    let (family, state) = (m[0], m[1]);
    let sport = u16::from_be_bytes([m[4], m[5]]);
    let dport = u16::from_be_bytes([m[6], m[7]]);
    if state == LISTEN {
        out.listen.push(sport);
        return;
    }
    let addr = |a: &[u8]| -> Option<Ipv4Addr> {
        if family == libc::AF_INET as u8 {
            Some(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
        } else {
            let mut x = [0u8; 16];
            x.copy_from_slice(&a[..16]);
            Ipv6Addr::from(x).to_ipv4_mapped()
        }
    };
    if let (Some(src), Some(dst)) = (addr(&m[8..24]), addr(&m[24..40])) {
        out.conns.push(((src, sport), (dst, dport)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(family: u8, state: u8, sport: u16, dport: u16, src: &[u8], dst: &[u8]) -> Vec<u8> {
        let mut body = vec![0u8; 72];
        body[0] = family;
        body[1] = state;
        body[4..6].copy_from_slice(&sport.to_be_bytes());
        body[6..8].copy_from_slice(&dport.to_be_bytes());
        body[8..8 + src.len()].copy_from_slice(src);
        body[24..24 + dst.len()].copy_from_slice(dst);
        let mut m = Vec::new();
        m.extend_from_slice(&(16 + body.len() as u32).to_ne_bytes());
        m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn listeners_and_connections_of_both_families() {
        let mut b = msg(2, LISTEN, 179, 0, &[0; 4], &[0; 4]);
        b.extend(msg(2, 1, 179, 40000, &[10, 0, 0, 1], &[10, 0, 0, 2]));
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&[10, 0, 0, 3]);
        let mut local = mapped;
        local[12..].copy_from_slice(&[10, 0, 0, 1]);
        b.extend(msg(10, 1, 179, 40001, &local, &mapped));
        // A real IPv6 connection is not an IPv4 one.
        b.extend(msg(10, 1, 179, 40002, &[0x20; 16], &[0x20; 16]));
        let mut done = vec![0u8; 20];
        done[0] = 20;
        done[4] = NLMSG_DONE as u8;
        b.extend(done);
        let mut out = TcpSockets::default();
        assert!(parse(&b, &mut out).unwrap());
        assert_eq!(out.listen, vec![179]);
        let r = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(
            out.conns,
            vec![
                ((r, 179), (Ipv4Addr::new(10, 0, 0, 2), 40000)),
                ((r, 179), (Ipv4Addr::new(10, 0, 0, 3), 40001)),
            ]
        );
    }

    #[test]
    fn bad_lengths_are_errors_not_panics() {
        let mut out = TcpSockets::default();
        let mut b = msg(2, 1, 1, 2, &[1; 4], &[2; 4]);
        b[0] = 200;
        assert!(parse(&b, &mut out).is_err());
        assert!(!parse(&b[..10], &mut out).unwrap());
    }
}
