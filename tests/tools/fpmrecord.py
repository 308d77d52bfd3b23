#!/usr/bin/env python3
"""Listen for zebra's FPM connection and write what it sends to a file (stdlib).

    fpmrecord.py OUT PORT SECONDS

Prints "ready" once listening on 127.0.0.1:PORT, accepts one connection, and
writes every byte received in SECONDS to OUT (the raw FPM stream: frames).
"""
import socket
import sys
import time


def main() -> int:
    out, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    print("ready", flush=True)
    ls.settimeout(secs)
    c, _ = ls.accept()
    c.settimeout(0.2)
    end, data = time.time() + secs, b""
    while time.time() < end:
        try:
            b = c.recv(65536)
        except socket.timeout:
            continue
        if not b:
            break
        data += b
    with open(out, "wb") as f:
        f.write(data)
    print(len(data), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
