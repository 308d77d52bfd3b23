#!/usr/bin/env python3
"""Send one 802.1Q-tagged UDP datagram and wait for the ICMP error it provokes,
tagged with the same VLAN (stdlib only, needs root).

    vlanprobe.py IFACE DST_MAC VLAN SRC_IP DST_IP [--timeout SECS]

Prints "icmp type T code C vlan V" for the first tagged ICMP packet from DST_IP
to SRC_IP and exits 0; exits 1 on timeout. The kernel takes the tag off before
packet sockets see a frame: it is read from PACKET_AUXDATA (or from the frame,
where it stayed).
"""
import socket
import struct
import sys
import time


SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10


def csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def main() -> int:
    iface, dmac, vlan, src, dst = sys.argv[1:6]
    timeout = float(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[6] == "--timeout" else 5.0
    vlan = int(vlan)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    smac = s.getsockname()[4]
    udp = struct.pack("!HHHH", 40000, 9999, 8 + 4, 0) + b"ping"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = bytes.fromhex(dmac.replace(":", "")) + smac + struct.pack("!HH", 0x8100, vlan) \
        + struct.pack("!H", 0x0800) + ip + udp
    s.send(frame)
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.settimeout(0.2)
    end = time.time() + timeout
    while time.time() < end:
        try:
            f, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(20))
        except socket.timeout:
            continue
        v = None
        for level, kind, data in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(data) >= 20:
                status, _, _, _, _, tci, _ = struct.unpack("IIIHHHH", data[:20])
                if status & TP_STATUS_VLAN_VALID:
                    v = tci & 0xFFF
        if f[12:14] == b"\x81\x00" and len(f) >= 18:
            v = struct.unpack("!H", f[14:16])[0] & 0xFFF
            f = f[:12] + f[16:]
        if v is None or len(f) < 14 + 28 or f[12:14] != b"\x08\x00":
            continue
        ip = f[14:]
        if ip[9] == 1 and ip[12:16] == socket.inet_aton(dst) and ip[16:20] == socket.inet_aton(src):
            hl = (ip[0] & 0xF) * 4
            print(f"icmp type {ip[hl]} code {ip[hl + 1]} vlan {v}")
            return 0
    print("timeout")
    return 1


if __name__ == "__main__":
    sys.exit(main())
