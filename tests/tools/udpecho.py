#!/usr/bin/env python3
"""UDP round trips through a punt path.

  udpecho.py serve PORT                 echo every datagram back (until killed)
  udpecho.py probe DST PORT INTERVAL_MS send a numbered datagram every interval
                                        until SIGTERM/SIGINT, then print one JSON
                                        line: sent, answered, lost (no answer
                                        within 1 s) and round trips p50/p99/max, ms
"""
import json
import select
import signal
import socket
import sys
import time


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    print("ready", flush=True)
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(data, peer)


def probe(dst, port, interval_ms):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((dst, port))
    s.setblocking(False)
    interval = interval_ms / 1000.0
    sent, rtts, pending = 0, [], {}
    next_send = time.monotonic()
    print("ready", flush=True)
    while not stop:
        now = time.monotonic()
        if now >= next_send:
            pending[sent] = now
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
                data = s.recv(64)
            except OSError:
                continue
            t = pending.pop(int.from_bytes(data[:8], "big"), None)
            if t is not None:
                rtts.append((time.monotonic() - t) * 1000.0)
    # Answers still on their way get a second.
    end = time.monotonic() + 1.0
    while pending and time.monotonic() < end:
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            data = s.recv(64)
            t = pending.pop(int.from_bytes(data[:8], "big"), None)
            if t is not None:
                rtts.append((time.monotonic() - t) * 1000.0)
    rtts.sort()
    pick = lambda q: round(rtts[min(len(rtts) - 1, int(q * len(rtts)))], 3) if rtts else None
    print(json.dumps({"sent": sent, "answered": len(rtts), "lost": sent - len(rtts),
                      "p50_ms": pick(0.5), "p99_ms": pick(0.99),
                      "max_ms": round(rtts[-1], 3) if rtts else None}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif sys.argv[1] == "probe":
        probe(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
