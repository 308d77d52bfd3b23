//! The control namespace's sessions as the punt policer sees them: which TCP
//! ports something listens on, which TCP connections exist (established or
//! being set up) and which peers it runs BFD with. Published by the control
//! thread (from sock_diag and from what the twins send) as one snapshot the
//! workers read on punts only.
//!
//! A punt that belongs to what the namespace already runs goes to a class of its
//! own ([`PuntClass::Established`]), with its own budget: a flood of new
//! connections, of segments for connections that do not exist or of BFD from
//! strangers cannot crowd out the sessions the routing daemons already run.
//! TCP to a port nothing listens on, that belongs to no connection, is not a
//! routing-protocol packet at all ([`PuntClass::Other`]).

use std::net::Ipv4Addr;

use super::reasons::PuntClass;

/// One snapshot.
#[derive(Debug, Clone, Default)]
pub struct Sessions {
    /// Whether the snapshot comes from the namespace (until then nothing is
    /// known and the policer classifies as if there were no snapshot).
    known: bool,
    /// TCP ports with a listening socket, a bit per port.
    tcp_listen: Vec<u64>,
    /// Keys ([`Sessions::tcp_key`], [`Sessions::bfd_key`]), sorted.
    keys: Vec<u64>,
}

/// UDP ports of BFD (single hop, multihop, echo is not punted as control).
fn is_bfd_port(p: u16) -> bool {
    matches!(p, 3784 | 3785 | 4784)
}

impl Sessions {
    /// A snapshot: TCP ports listened on, TCP connections as (local, remote)
    /// address and port pairs, and BFD peers.
    pub fn new(
        listen: impl IntoIterator<Item = u16>,
        tcp: impl IntoIterator<Item = ((Ipv4Addr, u16), (Ipv4Addr, u16))>,
        bfd_peers: impl IntoIterator<Item = Ipv4Addr>,
    ) -> Sessions {
        let mut tcp_listen = vec![0u64; 1024];
        for p in listen {
            tcp_listen[usize::from(p >> 6)] |= 1 << (p & 63);
        }
        let mut keys: Vec<u64> = tcp
            .into_iter()
            .map(|(l, r)| Sessions::tcp_key(l, r))
            .chain(bfd_peers.into_iter().map(Sessions::bfd_key))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        Sessions {
            known: true,
            tcp_listen,
            keys,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether it came from the namespace.
    pub fn is_known(&self) -> bool {
        self.known
    }

    /// The key of a TCP connection from the router's side.
    pub fn tcp_key(local: (Ipv4Addr, u16), remote: (Ipv4Addr, u16)) -> u64 {
        let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ 6;
        for w in [
            u64::from(u32::from(local.0)),
            u64::from(u32::from(remote.0)),
            (u64::from(local.1) << 16) | u64::from(remote.1),
        ] {
            h = (h ^ w).wrapping_mul(0xff51_afd7_ed55_8ccd);
            h ^= h >> 33;
        }
        h
    }

    /// The key of a BFD peer.
    pub fn bfd_key(peer: Ipv4Addr) -> u64 {
        let mut h = (0x9e37_79b9_7f4a_7c15u64 ^ 17) ^ u64::from(u32::from(peer));
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 29)
    }

    fn has(&self, k: u64) -> bool {
        self.keys.binary_search(&k).is_ok()
    }

    fn listening(&self, port: u16) -> bool {
        self.tcp_listen
            .get(usize::from(port >> 6))
            .is_some_and(|w| w & (1 << (port & 63)) != 0)
    }

    /// The class of a routing-protocol punt (`frame` from its Ethernet header
    /// on), given the generic class `generic` ([`PuntClass::of`]).
    pub fn classify(&self, frame: &[u8], generic: PuntClass) -> PuntClass {
        if !self.known || !matches!(generic, PuntClass::Tcp | PuntClass::Syn | PuntClass::Bfd) {
            return generic;
        }
        let l3 = match frame.get(12..14) {
            Some([0x81, 0x00]) => 18,
            _ => 14,
        };
        let Some(ip) = frame.get(l3..l3 + 20) else {
            return generic;
        };
        let hl = usize::from(ip[0] & 0x0f) * 4;
        let Some(l4) = frame.get(l3 + hl..l3 + hl + 4) else {
            return generic;
        };
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let sport = u16::from_be_bytes([l4[0], l4[1]]);
        let dport = u16::from_be_bytes([l4[2], l4[3]]);
        match generic {
            PuntClass::Bfd => {
                // RFC 5881: single-hop BFD arrives with TTL 255.
                let single_hop = is_bfd_port(dport) && dport != 4784;
                if self.has(Sessions::bfd_key(src)) && (!single_hop || ip[8] == 255) {
                    PuntClass::Established
                } else {
                    generic
                }
            }
            _ => {
                if self.has(Sessions::tcp_key((dst, dport), (src, sport))) {
                    PuntClass::Established
                } else if self.listening(dport) {
                    generic
                } else {
                    // No connection and no listener: the kernel answers with
                    // a reset; not a routing protocol's packet.
                    PuntClass::Other
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 8] = 64;
        f[14 + 9] = 6;
        f[14 + 12..14 + 16].copy_from_slice(&src);
        f[14 + 16..14 + 20].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f[34 + 13] = flags;
        f
    }

    fn bfd(src: [u8; 4], ttl: u8) -> Vec<u8> {
        let mut f = tcp(src, [10, 0, 0, 1], 49152, 3784, 0);
        f[14 + 9] = 17;
        f[14 + 8] = ttl;
        f
    }

    fn snapshot() -> Sessions {
        let r = Ipv4Addr::new(10, 0, 0, 1);
        Sessions::new(
            [179],
            [((r, 179), (Ipv4Addr::new(10, 0, 0, 2), 40000))],
            [Ipv4Addr::new(10, 0, 0, 2)],
        )
    }

    #[test]
    fn sessions_the_namespace_has_get_their_own_class() {
        let s = snapshot();
        let seg = tcp([10, 0, 0, 2], [10, 0, 0, 1], 40000, 179, 0x10);
        assert_eq!(s.classify(&seg, PuntClass::Tcp), PuntClass::Established);
        // Another source port: a connection that does not exist.
        let other = tcp([10, 0, 0, 2], [10, 0, 0, 1], 40001, 179, 0x10);
        assert_eq!(s.classify(&other, PuntClass::Tcp), PuntClass::Tcp);
        let syn = tcp([10, 0, 0, 9], [10, 0, 0, 1], 40001, 179, 0x02);
        assert_eq!(s.classify(&syn, PuntClass::Syn), PuntClass::Syn);
        assert_eq!(
            s.classify(&bfd([10, 0, 0, 2], 255), PuntClass::Bfd),
            PuntClass::Established
        );
        // Not single hop, or a stranger.
        assert_eq!(
            s.classify(&bfd([10, 0, 0, 2], 254), PuntClass::Bfd),
            PuntClass::Bfd
        );
        assert_eq!(
            s.classify(&bfd([10, 0, 0, 3], 255), PuntClass::Bfd),
            PuntClass::Bfd
        );
    }

    #[test]
    fn tcp_to_a_port_nobody_listens_on_is_not_routing() {
        let s = snapshot();
        let syn = tcp([10, 0, 0, 9], [10, 0, 0, 1], 40001, 646, 0x02);
        assert_eq!(s.classify(&syn, PuntClass::Syn), PuntClass::Other);
        // Without a snapshot nothing changes.
        let none = Sessions::default();
        assert_eq!(none.classify(&syn, PuntClass::Syn), PuntClass::Syn);
        // Truncated frames keep their class.
        assert_eq!(s.classify(&syn[..36], PuntClass::Syn), PuntClass::Syn);
    }
}
