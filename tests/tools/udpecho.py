#!/usr/bin/env python3
"""UDP round trips through a punt path.

  udpecho.py serve PORT                 echo every datagram back (until killed)
  udpecho.py probe DST PORT INTERVAL_MS send a numbered datagram every interval
                                        until SIGTERM/SIGINT, then print one JSON
                                        line: sent, answered, lost (no answer
                                        within 1 s) and round trips p50/p99/max, ms

The server answers with the kernel's receive time of the datagram and its own
send time (CLOCK_REALTIME, one clock across namespaces); with the kernel's
receive time of the answer at the prober, the round trip splits into the
server's share (from its socket's receive to its send: its scheduling) and the
path's (the rest: what carried the datagram both ways), reported as
path_p50/p99/max_ms.
"""
import json
import select
import signal
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = 35  # also SCM_TIMESTAMPNS: struct timespec of the receive


def timestamped(s):
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


def recv_stamped(s):
    """(data, peer, the kernel's receive time in ns or None)."""
    data, anc, _, peer = s.recvmsg(2048, socket.CMSG_SPACE(16))
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            sec, nsec = struct.unpack("=qq", raw[:16])
            return data, peer, sec * 1_000_000_000 + nsec
    return data, peer, None


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    timestamped(s)
    print("ready", flush=True)
    while True:
        data, peer, rx = recv_stamped(s)
        s.sendto(data[:8] + struct.pack("!QQ", rx or 0, time.time_ns()), peer)


def probe(dst, port, interval_ms):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((dst, port))
    s.setblocking(False)
    timestamped(s)
    paths = []

    def answer():
        data, _, arrived = recv_stamped(s)
        t = pending.pop(int.from_bytes(data[:8], "big"), None)
        if t is None:
            return
        rtts.append((time.monotonic() - t[0]) * 1000.0)
        if len(data) >= 24 and arrived:
            rx, tx = struct.unpack("!QQ", data[8:24])
            if rx:
                paths.append(((rx - t[1]) + (arrived - tx)) / 1e6)

    interval = interval_ms / 1000.0
    sent, rtts, pending = 0, [], {}
    next_send = time.monotonic()
    print("ready", flush=True)
    while not stop:
        now = time.monotonic()
        if now >= next_send:
            pending[sent] = (now, time.time_ns())
            try:
                s.send(sent.to_bytes(8, "big"))
            except OSError:
                pass
            sent += 1
            next_send += interval
        try:
            r, _, _ = select.select([s], [], [], max(0.0, next_send - time.monotonic()))
        except InterruptedError:
            continue
        if r:
            try:
                answer()
            except OSError:
                continue
    # Answers still on their way get a second.
    end = time.monotonic() + 1.0
    while pending and time.monotonic() < end:
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            answer()
    rtts.sort()
    paths.sort()
    pick = lambda v, q: round(v[min(len(v) - 1, int(q * len(v)))], 3) if v else None
    print(json.dumps({"sent": sent, "answered": len(rtts), "lost": sent - len(rtts),
                      "p50_ms": pick(rtts, 0.5), "p99_ms": pick(rtts, 0.99),
                      "max_ms": round(rtts[-1], 3) if rtts else None,
                      "path_p50_ms": pick(paths, 0.5), "path_p99_ms": pick(paths, 0.99),
                      "path_max_ms": round(paths[-1], 3) if paths else None}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif sys.argv[1] == "probe":
        probe(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
