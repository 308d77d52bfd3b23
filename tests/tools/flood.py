#!/usr/bin/env python3
"""Flood a router's address with one class of traffic, as fast as Python can
send (stdlib only, needs root for the raw kinds).

    flood.py KIND DST IFACE SECS

KIND: udp (to a closed port), udp-burst (the same, 64 datagrams per
sendmmsg call: several times what one sendto per packet offers), icmp (echo requests), syn (bare SYNs and stray
ACKs to 179), ospf (junk OSPF to 224.0.0.5 out of IFACE), arp (requests for
DST from random senders out of IFACE). Prints how many packets went.
"""
import ctypes
import random
import socket
import struct
import sys
import time


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(Iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", Msghdr), ("len", ctypes.c_uint)]


class Burst:
    """`count` copies of `payload` to `dst`:`port` per sendmmsg(2) on the UDP
    socket `fd`."""

    def __init__(self, fd, dst, port, payload, count):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd, self.count = fd, count
        # struct sockaddr_in
        self.addr = ctypes.create_string_buffer(
            struct.pack("=H", socket.AF_INET) + struct.pack("!H", port)
            + socket.inet_aton(dst) + bytes(8), 16)
        self.buf = ctypes.create_string_buffer(payload, len(payload))
        self.iov = Iovec(ctypes.cast(self.buf, ctypes.c_void_p), len(payload))
        self.msgs = (Mmsghdr * count)()
        for m in self.msgs:
            m.hdr.name = ctypes.cast(self.addr, ctypes.c_void_p)
            m.hdr.namelen = 16
            m.hdr.iov = ctypes.pointer(self.iov)
            m.hdr.iovlen = 1

    def send(self):
        """Datagrams sent by one call (-1: an error such as ENOBUFS)."""
        return self.libc.sendmmsg(self.fd, self.msgs, self.count, 0)


def main():
    kind, dst, iface, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    end = time.monotonic() + secs
    n = 0
    if kind == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        send = lambda: s.sendto(b"x" * 32, (dst, 9))
    elif kind == "udp-burst":
        # (not connected: a port unreachable would fail the next call)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        burst = Burst(s.fileno(), dst, 9, b"x" * 32, 64)
        while time.monotonic() < end:
            sent = burst.send()
            if sent > 0:
                n += sent
            else:
                time.sleep(0.0002)
        print(n, flush=True)
        return
    elif kind == "icmp":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        body = struct.pack("!BBHHH", 8, 0, 0, 0x4242, 1) + b"y" * 32
        pkt = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
        send = lambda: s.sendto(pkt, (dst, 0))
    elif kind == "syn":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)

        def send():
            flags = random.choice((0x02, 0x10))
            seg = struct.pack("!HHIIBBHHH", random.randint(1024, 65535), 179,
                              random.getrandbits(32), 0, 5 << 4, flags, 65535, 0, 0)
            s.sendto(seg, (dst, 0))
    elif kind == "ospf":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, 89)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        # An OSPFv2 hello header with a bad checksum and a stranger's router id.
        junk = struct.pack("!BBH4s4sHH", 2, 1, 44, socket.inet_aton("10.255.0.9"),
                           bytes(4), 0xdead, 0) + b"\0" * 20
        send = lambda: s.sendto(junk, ("224.0.0.5", 0))
    elif kind == "arp":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((iface, 0))
        mac = s.getsockname()[4]
        target = socket.inet_aton(dst)

        def send():
            spa = struct.pack("!I", random.getrandbits(32))
            arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, spa, bytes(6), target)
            s.send(b"\xff" * 6 + mac + b"\x08\x06" + arp + bytes(18))
    else:
        sys.exit(__doc__)
    while time.monotonic() < end:
        try:
            send()
            n += 1
        except OSError:
            time.sleep(0.0002)
    print(n, flush=True)


if __name__ == "__main__":
    main()
