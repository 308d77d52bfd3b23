#!/usr/bin/env python3
"""A TCP connection, and a flood of segments that belong to none (stdlib only).

  tcpsession.py serve PORT                echo every byte back, any number of
                                          connections (until killed)
  tcpsession.py client DST PORT SECS MS   one connection: an 8-byte message every
                                          MS ms for SECS s; prints one JSON line:
                                          sent, echoed, max_ms (round trip)
  tcpsession.py flood DST PORT SECS       raw TCP segments (ACK, random source
                                          ports) to DST:PORT for SECS s, and
                                          bare SYNs to DST:PORT and DST:646;
                                          prints how many (needs root)
"""
import json
import random
import select
import socket
import struct
import sys
import time


def serve(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(16)
    print("ready", flush=True)
    conns = []
    while True:
        r, _, _ = select.select([ls] + conns, [], [])
        for s in r:
            if s is ls:
                c, _ = ls.accept()
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conns.append(c)
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                conns.remove(s)
                s.close()
            else:
                s.sendall(data)


def client(dst, port, secs, ms):
    s = socket.create_connection((dst, port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print("ready", flush=True)
    sent, echoed, worst, buf = 0, 0, 0.0, b""
    times = {}
    end = time.monotonic() + secs
    nxt = time.monotonic()
    while time.monotonic() < end or (times and time.monotonic() < end + 2):
        now = time.monotonic()
        if now >= nxt and now < end:
            times[sent] = now
            s.sendall(struct.pack("!Q", sent))
            sent += 1
            nxt += ms / 1000.0
        r, _, _ = select.select([s], [], [], max(0.0, min(nxt - time.monotonic(), 0.05)))
        if r:
            buf += s.recv(4096)
            while len(buf) >= 8:
                (k,) = struct.unpack("!Q", buf[:8])
                buf = buf[8:]
                t = times.pop(k, None)
                if t is not None:
                    echoed += 1
                    worst = max(worst, (time.monotonic() - t) * 1000.0)
    print(json.dumps({"sent": sent, "echoed": echoed, "max_ms": round(worst, 3)}), flush=True)


def flood(dst, port, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    s.setblocking(False)
    n = 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for dport, flags in ((port, 0x10), (port, 0x10), (port, 0x02), (646, 0x02)):
            seg = struct.pack("!HHIIBBHHH", random.randint(1024, 65535), dport,
                              random.getrandbits(32), random.getrandbits(32), 5 << 4, flags,
                              65535, 0, 0)
            try:
                s.sendto(seg, (dst, 0))
                n += 1
            except OSError:
                time.sleep(0.0005)
    print(n, flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "serve":
        serve(int(sys.argv[2]))
    elif mode == "client":
        client(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    elif mode == "flood":
        flood(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
