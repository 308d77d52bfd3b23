//! One-line, tcpdump-like summaries of the frame heads a packet trace keeps:
//! Ethernet (and 802.1Q), the MPLS label stack (label, TC, S bit, TTL per entry),
//! IPv4 and ICMP, IPv6 and ICMPv6 (neighbour discovery included), ARP. Heads are truncated, so every step checks what is there and
//! stops quietly where the bytes end.

use std::fmt::Write;

use wire::{EtherType, EthernetFrame, IpProtocol, Ipv4Packet, Lse, VlanTag};

fn mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Summarises a frame head, e.g. `02:..:01 > 02:..:02, mpls (label 100, tc 0, [S],
/// ttl 63), 10.0.1.0 > 10.0.1.1: icmp echo request, ttl 64`.
pub fn frame(head: &[u8]) -> String {
    let mut o = String::new();
    let Ok(eth) = EthernetFrame::new_checked(head) else {
        return format!("{} bytes (truncated Ethernet header)", head.len());
    };
    let _ = write!(
        o,
        "{} > {}",
        mac(eth.src_addr().as_bytes()),
        mac(eth.dst_addr().as_bytes())
    );
    let mut et = eth.ethertype();
    let mut rest = eth.payload();
    while matches!(et, EtherType::Vlan | EtherType::QinQ) {
        let Ok(tag) = VlanTag::new_checked(rest) else {
            o.push_str(", vlan (truncated)");
            return o;
        };
        let _ = write!(o, ", vlan {}", tag.vid());
        et = tag.ethertype();
        // 802.1Q: TCI and the inner EtherType, 4 bytes (checked by new_checked).
        rest = &rest[4..];
    }
    match et {
        //= RFC 3032 §2.1: label (20 bits), TC (3), S (1), TTL (8) per entry.
        EtherType::Mpls => {
            o.push_str(", mpls");
            loop {
                let Ok(lse) = Lse::new_checked(rest) else {
                    o.push_str(" (truncated)");
                    return o;
                };
                let _ = write!(
                    o,
                    " (label {}, tc {}, {}ttl {})",
                    lse.label().value(),
                    lse.tc(),
                    if lse.bottom_of_stack() { "[S], " } else { "" },
                    lse.ttl()
                );
                rest = &rest[wire::mpls::LSE_LEN..];
                if lse.bottom_of_stack() {
                    break;
                }
            }
            match rest.first().map(|b| b >> 4) {
                Some(4) => ipv4(&mut o, rest),
                Some(6) => ipv6(&mut o, rest),
                Some(v) => {
                    let _ = write!(o, ", payload version {v}");
                }
                None => {}
            }
        }
        EtherType::Ipv4 => ipv4(&mut o, rest),
        EtherType::Ipv6 => ipv6(&mut o, rest),
        EtherType::Arp => {
            //= RFC 826: oper at 6..8, sender IP at 14..18, target IP at 24..28.
            if rest.len() >= 28 {
                let ip = |b: &[u8]| std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]);
                let op = u16::from_be_bytes([rest[6], rest[7]]);
                let _ = match op {
                    1 => write!(
                        o,
                        ", arp who-has {} tell {}",
                        ip(&rest[24..28]),
                        ip(&rest[14..18])
                    ),
                    2 => write!(
                        o,
                        ", arp reply {} is-at {}",
                        ip(&rest[14..18]),
                        mac(&rest[8..14])
                    ),
                    _ => write!(o, ", arp op {op}"),
                };
            } else {
                o.push_str(", arp (truncated)");
            }
        }
        other => {
            let _ = write!(o, ", ethertype 0x{:04x}", u16::from(other));
        }
    }
    o
}

fn ipv4(o: &mut String, b: &[u8]) {
    // Only the fixed header is needed; the trace head may cut the packet short, so
    // the total-length check of `new_checked` does not apply.
    if b.len() < 20 {
        o.push_str(", ipv4 (truncated)");
        return;
    }
    let ip = Ipv4Packet::new_unchecked(b);
    let _ = write!(o, ", {} > {}", ip.src_addr(), ip.dst_addr());
    let hl = usize::from(ip.header_len());
    let l4 = b.get(hl..).unwrap_or(&[]);
    match ip.protocol() {
        IpProtocol::Icmp => {
            //= RFC 792: type and code are the first two bytes.
            let what = match (l4.first(), l4.get(1)) {
                (Some(0), _) => "icmp echo reply".to_string(),
                (Some(8), _) => "icmp echo request".to_string(),
                (Some(3), Some(c)) => format!("icmp unreachable code {c}"),
                (Some(11), Some(c)) => format!("icmp time exceeded code {c}"),
                (Some(t), _) => format!("icmp type {t}"),
                (None, _) => "icmp".to_string(),
            };
            let _ = write!(o, ": {what}");
        }
        IpProtocol::Udp if l4.len() >= 4 => {
            let _ = write!(
                o,
                ": udp {} > {}",
                u16::from_be_bytes([l4[0], l4[1]]),
                u16::from_be_bytes([l4[2], l4[3]])
            );
        }
        IpProtocol::Tcp if l4.len() >= 4 => {
            let _ = write!(
                o,
                ": tcp {} > {}",
                u16::from_be_bytes([l4[0], l4[1]]),
                u16::from_be_bytes([l4[2], l4[3]])
            );
        }
        p => {
            let _ = write!(o, ": proto {}", u8::from(p));
        }
    }
    let _ = write!(o, ", ttl {}, length {}", ip.ttl(), ip.total_len());
}

fn ipv6(o: &mut String, b: &[u8]) {
    //= RFC 8200 §3: next header at 6, hop limit at 7, addresses at 8..24, 24..40.
    if b.len() < 40 {
        o.push_str(", ipv6 (truncated)");
        return;
    }
    let addr = |at: usize| {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[at..at + 16]);
        std::net::Ipv6Addr::from(a)
    };
    let _ = write!(o, ", {} > {}", addr(8), addr(24));
    let l4 = &b[40..];
    let port = |at: usize| u16::from_be_bytes([l4[at], l4[at + 1]]);
    match b[6] {
        //= RFC 4443 §2.1, RFC 4861 §4: the message types.
        58 => {
            let what = match (l4.first(), l4.get(1)) {
                (Some(128), _) => "icmp6 echo request".to_string(),
                (Some(129), _) => "icmp6 echo reply".to_string(),
                (Some(1), Some(c)) => format!("icmp6 unreachable code {c}"),
                (Some(2), _) => "icmp6 packet too big".to_string(),
                (Some(3), Some(c)) => format!("icmp6 time exceeded code {c}"),
                (Some(4), Some(c)) => format!("icmp6 parameter problem code {c}"),
                (Some(133), _) => "icmp6 router solicitation".to_string(),
                (Some(134), _) => "icmp6 router advertisement".to_string(),
                (Some(135), _) if l4.len() >= 24 => {
                    format!("icmp6 neighbor solicitation who-has {}", addr(40 + 8))
                }
                (Some(136), _) if l4.len() >= 24 => {
                    format!("icmp6 neighbor advertisement {}", addr(40 + 8))
                }
                (Some(t), _) => format!("icmp6 type {t}"),
                (None, _) => "icmp6".to_string(),
            };
            let _ = write!(o, ": {what}");
        }
        17 if l4.len() >= 4 => {
            let _ = write!(o, ": udp {} > {}", port(0), port(2));
        }
        6 if l4.len() >= 4 => {
            let _ = write!(o, ": tcp {} > {}", port(0), port(2));
        }
        nh => {
            let _ = write!(o, ": next header {nh}");
        }
    }
    let _ = write!(
        o,
        ", hlim {}, payload length {}",
        b[7],
        u16::from_be_bytes([b[4], b[5]])
    );
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter()
        .fold(String::with_capacity(b.len() * 2), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn mpls_echo_request() {
        // 52:54:00:13:10:00 > 52:54:00:12:10:01, MPLS (label 100, exp 0, [S], ttl 64),
        // 10.0.1.0 > 10.0.1.1: ICMP echo request (the seed article's second hop).
        let f = unhex(
            "525400121001 525400131000 8847 00064140
             4500 0054 1234 4000 4001 0000 0a000100 0a000101 0800 0000",
        );
        assert_eq!(
            frame(&f),
            "52:54:00:13:10:00 > 52:54:00:12:10:01, mpls (label 100, tc 0, [S], ttl 64), 10.0.1.0 > 10.0.1.1: icmp echo request, ttl 64, length 84"
        );
        assert!(frame(&f[..16]).ends_with("mpls (truncated)"));
        assert!(frame(&f[..30]).ends_with("ipv4 (truncated)"));
        assert!(frame(&f[..5]).contains("truncated Ethernet"));
    }

    #[test]
    fn ipv6_udp_and_neighbour_discovery() {
        let f = unhex(
            "020000000002 020000000001 86dd 60000000 0010 11 40
             20010db8000100000000000000000002 20010db8000200000000000000000001
             9c40 0035 0010 0000",
        );
        assert_eq!(
            frame(&f),
            "02:00:00:00:00:01 > 02:00:00:00:00:02, 2001:db8:1::2 > 2001:db8:2::1: udp 40000 > 53, hlim 64, payload length 16"
        );
        let ns = unhex(
            "3333ff000001 020000000001 86dd 60000000 0020 3a ff
             fe800000000000000000000000000002 ff0200000000000000000001ff000001
             8700 0000 00000000 fe800000000000000000000000000001 0101020000000001",
        );
        assert!(
            frame(&ns).ends_with(
                "fe80::2 > ff02::1:ff00:1: icmp6 neighbor solicitation who-has fe80::1, hlim 255, payload length 32"
            ),
            "{}",
            frame(&ns)
        );
        assert!(frame(&f[..40]).ends_with("ipv6 (truncated)"));
    }

    #[test]
    fn vlan_arp() {
        let f = unhex(
            "ffffffffffff 020000000001 8100 0064 0806
             0001 0800 06 04 0001 020000000001 c0a80b09 000000000000 c0a80b08",
        );
        assert_eq!(
            frame(&f),
            "02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff, vlan 100, arp who-has 192.168.11.8 tell 192.168.11.9"
        );
    }
}
