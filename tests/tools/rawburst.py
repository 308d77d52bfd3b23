#!/usr/bin/env python3
"""Send or receive a numbered burst of raw Ethernet frames (stdlib only, needs root).

    rawburst.py send IFACE COUNT
    rawburst.py recv IFACE COUNT [--timeout SECS]

Frames: broadcast destination, ethertype 0x88b5 (IEEE local experimental), a 16-bit
sequence number, then a payload derived from the sequence number; lengths vary from
60 to 1014 bytes. `recv` prints "ready" once bound, then checks that every sequence
number 0..COUNT-1 arrives exactly once with the exact bytes `send` wrote, ignoring
other traffic, and exits 0 only if all did.
"""
import socket
import struct
import sys
import time

ETHERTYPE = 0x88B5
SRC = bytes([0x02, 0x00, 0x00, 0x00, 0x00, 0x01])


def frame(seq: int) -> bytes:
    length = 60 + (seq * 37) % 955
    head = b"\xff" * 6 + SRC + struct.pack("!HH", ETHERTYPE, seq)
    body = bytes((i + seq) & 0xFF for i in range(length - len(head)))
    return head + body


def main() -> int:
    mode, iface, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--timeout" else 5.0
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    s.bind((iface, ETHERTYPE))
    if mode == "send":
        for seq in range(count):
            s.send(frame(seq))
        print(f"sent {count}")
        return 0
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.settimeout(0.2)
    print("ready", flush=True)
    seen, bad, dup = set(), 0, 0
    deadline = time.monotonic() + timeout
    while len(seen) < count and time.monotonic() < deadline:
        try:
            data = s.recv(4096)
        except socket.timeout:
            continue
        if len(data) < 16 or struct.unpack("!H", data[12:14])[0] != ETHERTYPE:
            continue
        seq = struct.unpack("!H", data[14:16])[0]
        if seq >= count or data != frame(seq):
            bad += 1
        elif seq in seen:
            dup += 1
        else:
            seen.add(seq)
    print(f"received {len(seen)} of {count} intact, {bad} corrupted, {dup} duplicated")
    return 0 if len(seen) == count and bad == 0 and dup == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
