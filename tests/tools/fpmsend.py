#!/usr/bin/env python3
"""Send a zebra-like FPM walk of N IPv4 routes (stdlib only).

    fpmsend.py PORT N GATEWAY OIF SECS

Connects to 127.0.0.1:PORT and sends N RTM_NEWROUTE messages in FPM frames
(version 1, netlink), 100.64.0.0/10-style /32s counted from 100.64.0.0, via
GATEWAY dev OIF (a kernel ifindex), table main, proto bgp, metric 20; prints
"sent" and keeps the connection SECS seconds (a zebra that stays).
"""
import socket
import struct
import sys
import time


def frames(n, gw, oif):
    gw = socket.inet_aton(gw)
    out = bytearray()
    for i in range(n):
        dst = struct.pack("!I", (100 << 24 | 64 << 16) + i)
        attrs = (struct.pack("=HH4s", 8, 1, dst)          # RTA_DST
                 + struct.pack("=HH4s", 8, 5, gw)         # RTA_GATEWAY
                 + struct.pack("=HHI", 8, 4, oif)         # RTA_OIF
                 + struct.pack("=HHI", 8, 6, 20))         # RTA_PRIORITY
        body = struct.pack("=BBBBBBBBI", 2, 32, 0, 0, 254, 186, 0, 1, 0) + attrs
        nl = struct.pack("=IHHII", 16 + len(body), 24, 0x501, 0, 0) + body
        out += struct.pack("!BBH", 1, 1, 4 + len(nl)) + nl
    return bytes(out)


def main():
    port, n, gw, oif, secs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    data = frames(n, gw, oif)
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    print("sent", flush=True)
    time.sleep(secs)


if __name__ == "__main__":
    main()
