//! Flow hash for ECMP over labelled paths.
//!
//! VPP (`mpls_compute_flow_hash`) XORs the label values and, at the bottom of the
//! stack, the inner IPv4/IPv6 5-tuple hash; when it meets an entropy label indicator
//! the following entropy label alone is the hash. We do the same, with one multiply
//! to spread the bits, which is all a power-of-two bucket mask needs.

use crate::MAX_STACK_DEPTH;
use crate::stack::read_word;

const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// Folds to 32 bits, then Fibonacci hashing: the top half of the product depends on
/// every input bit, so any mask of its low bits picks buckets evenly.
#[inline(always)]
fn finish(h: u64) -> u32 {
    let x = u64::from((h ^ (h >> 32)) as u32);
    (x.wrapping_mul(MUL) >> 32) as u32
}

/// Hash of an IPv4 header's addresses, protocol and (for unfragmented TCP/UDP) ports;
/// 0 when `p` does not start with an IPv4 header.
#[inline]
pub fn ip4_flow_hash(p: &[u8]) -> u64 {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return 0;
    }
    let src = u64::from(u32::from_be_bytes([p[12], p[13], p[14], p[15]]));
    let dst = u64::from(u32::from_be_bytes([p[16], p[17], p[18], p[19]]));
    let proto = u64::from(p[9]);
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let unfragmented = (u16::from_be_bytes([p[6], p[7]]) & 0x3fff) == 0;
    let ports = if (proto == 6 || proto == 17) && unfragmented {
        read_word(p, ihl).map_or(0, u64::from)
    } else {
        0
    };
    ((src << 32) | dst) ^ ((proto << 32) | ports).rotate_left(21)
}

//= RFC 6790 §4.3: a transit LSR may use the entropy label as the load-balancing key.
/// Flow hash of a labelled packet; `stack` starts at the top label stack entry.
///
/// Mixes every label value down to the bottom of the stack (at most
/// [`MAX_STACK_DEPTH`]) and the inner IPv4 5-tuple; if an entropy label indicator (7)
/// is met, the entropy label that follows is used alone.
#[inline]
pub fn flow_hash(stack: &[u8]) -> u32 {
    let mut h: u64 = 0;
    let mut at = 0;
    for _ in 0..MAX_STACK_DEPTH {
        let Some(w) = read_word(stack, at) else { break };
        let label = w >> 12;
        if label == 7 {
            if let Some(el) = read_word(stack, at + 4) {
                return finish(u64::from(el >> 12) | 0x7_0000_0000);
            }
        }
        h = h.rotate_left(20) ^ u64::from(label);
        at += 4;
        if w & 0x100 != 0 {
            if let Some(p) = stack.get(at..) {
                h ^= ip4_flow_hash(p);
            }
            break;
        }
    }
    finish(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(label: u32, sport: u16) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[..4].copy_from_slice(&((label << 12) | 0x140).to_be_bytes());
        b[4] = 0x45;
        b[13] = 17;
        b[16..20].copy_from_slice(&[16, 0, 0, 1]);
        b[20..24].copy_from_slice(&[48, 0, 0, 1]);
        b[24..26].copy_from_slice(&sport.to_be_bytes());
        b[26..28].copy_from_slice(&33434u16.to_be_bytes());
        b
    }

    #[test]
    fn test_hash_depends_on_ports_and_labels() {
        assert_ne!(flow_hash(&pkt(100, 1)), flow_hash(&pkt(100, 2)));
        assert_ne!(flow_hash(&pkt(100, 1)), flow_hash(&pkt(101, 1)));
        assert_eq!(flow_hash(&pkt(100, 1)), flow_hash(&pkt(100, 1)));
    }

    #[test]
    fn test_entropy_label_alone() {
        // 100 S0, ELI S0, EL 5555 S1, then different payloads: same hash.
        let mut a = [0u8; 40];
        a[..4].copy_from_slice(&((100u32 << 12) | 0x40).to_be_bytes());
        a[4..8].copy_from_slice(&((7u32 << 12) | 0x40).to_be_bytes());
        a[8..12].copy_from_slice(&((5555u32 << 12) | 0x100).to_be_bytes());
        let mut b = a;
        b[12] = 0x45;
        b[30] = 99;
        assert_eq!(flow_hash(&a), flow_hash(&b));
        let mut c = a;
        c[8..12].copy_from_slice(&((5556u32 << 12) | 0x100).to_be_bytes());
        assert_ne!(flow_hash(&a), flow_hash(&c));
    }

    #[test]
    fn test_hash_never_panics_on_short_input() {
        for n in 0..12 {
            let _ = flow_hash(&[0u8; 12][..n]);
            let _ = ip4_flow_hash(&[0x4f; 12][..n]);
        }
        let mut h = [0u8; 20];
        h[0] = 0x4f; // IHL 60 > buffer
        h[9] = 6;
        let _ = ip4_flow_hash(&h);
    }
}
