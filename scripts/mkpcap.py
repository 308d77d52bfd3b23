#!/usr/bin/env python3
"""Write a pcap of synthetic Ethernet frames for benchmarks and tests.

    scripts/mkpcap.py OUT.pcap [--kind ipv4|ipv6|mpls|mpls6] [--count N] [--size BYTES] [--prefixes P]
                      [--dsts FILE]

ipv4: UDP/IPv4 frames to 198.18.1.1 .. 198.18.1.N (RFC 2544 benchmark range), from
198.18.0.1, TTL 64, valid header checksums. mpls: the same IPv4 packets under one
label (100, S=1, TTL 64). --prefixes P: frame i goes to 10.a.b.h instead, where
a.b is i mod P (one /24 of 10.0.0.0/8 each) and h the round (i div P) + 1, and
its UDP source port is 1024 + i mod 60000: N distinct flows over P prefixes. ipv6: UDP/IPv6 frames to 2001:200:0:1::1 .. N (in l3fwd's
default route to port 1), from 2001:db8:a::1, hop limit 64. mpls6: those IPv6
packets under label 100 (S=1, TTL 64). --dsts
FILE: frame i goes to line i mod L of FILE (L addresses of the kind's family). Frame size includes the 4-byte FCS the wire would add, so
--size 64 writes 60-byte frames, as testpmd and the DPDK docs count them.
Uses only the standard library.
"""
import argparse
import ipaddress
import struct


def csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data)//2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_udp(i: int, payload_len: int, prefixes: int = 0, to: bytes = b"") -> bytes:
    src = bytes([198, 18, 0, 1])
    if to:
        dst, sport = to, 1024 + i % 1000
    elif prefixes:
        p, h = (i - 1) % prefixes, (i - 1) // prefixes
        dst = bytes([10, p >> 8, p & 0xFF, 1 + h % 254])
        sport = 1024 + (i - 1) % 60000
    else:
        dst = bytes([198, 18, 1 + (i >> 8) % 200, i & 0xFF])
        sport = 1024 + i % 1000
    udp = struct.pack("!HHHH", sport, 5001, 8 + payload_len, 0) + bytes(payload_len)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + udp


def ipv6_udp(i: int, payload_len: int, to: bytes = b"") -> bytes:
    src = bytes.fromhex("20010db8000a00000000000000000001")
    dst = to or bytes.fromhex("20010200000000010000") + i.to_bytes(6, "big")
    udp = struct.pack("!HHHH", 1024 + i % 1000, 5001, 8 + payload_len, 0) + bytes(payload_len)
    pseudo = src + dst + struct.pack("!IxxxB", len(udp), 17)
    udp = udp[:6] + struct.pack("!H", csum(pseudo + udp) or 0xFFFF) + udp[8:]
    return struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + src + dst + udp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--kind", choices=["ipv4", "ipv6", "mpls", "mpls6"], default="ipv4")
    ap.add_argument("--count", type=int, default=254)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--dst-mac", default="02:00:00:00:00:02")
    ap.add_argument("--src-mac", default="02:00:00:00:00:01")
    ap.add_argument("--prefixes", type=int, default=0)
    ap.add_argument("--dsts")
    a = ap.parse_args()
    dsts = []
    if a.dsts:
        with open(a.dsts) as f:
            dsts = [ipaddress.ip_address(l.strip()).packed for l in f if l.strip()]
    dst = bytes(int(x, 16) for x in a.dst_mac.split(":"))
    src = bytes(int(x, 16) for x in a.src_mac.split(":"))
    frame_len = max(a.size - 4, 60)
    with open(a.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(a.count):
            if a.kind == "ipv4":
                l2 = dst + src + b"\x08\x00"
                to = dsts[i % len(dsts)] if dsts else b""
                l3 = ipv4_udp(i + 1, max(frame_len - 14 - 28, 0), a.prefixes, to)
            elif a.kind == "ipv6":
                l2 = dst + src + b"\x86\xdd"
                to = dsts[i % len(dsts)] if dsts else b""
                l3 = ipv6_udp(i + 1, max(frame_len - 14 - 48, 0), to)
            elif a.kind == "mpls6":
                l2 = dst + src + b"\x88\x47"
                lse = struct.pack("!I", (100 << 12) | (1 << 8) | 64)
                l3 = lse + ipv6_udp(i + 1, max(frame_len - 18 - 48, 0))
            else:
                l2 = dst + src + b"\x88\x47"
                lse = struct.pack("!I", (100 << 12) | (1 << 8) | 64)
                l3 = lse + ipv4_udp(i + 1, max(frame_len - 18 - 28, 0))
            frame = (l2 + l3)[:max(frame_len, 60)]
            frame += bytes(max(0, 60 - len(frame)))
            f.write(struct.pack("<IIII", 0, i, len(frame), len(frame)))
            f.write(frame)


if __name__ == "__main__":
    main()
