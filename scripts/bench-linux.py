#!/usr/bin/env python3
"""The Linux control plane with a full table: how far the dataplane lags the kernel.

dataplaned runs in router mode with [linux] on one veth port (1 worker); the
512,621-prefix IPv4 table of shared/data is loaded into the control-plane
namespace's kernel with `ip -batch` (what a routing daemon's routes look like to
the kernel), and the script measures:

  - kernel load time (ip -batch) and when the dataplane's FIB holds all of it
    (lag = dataplane done - kernel done; `dpctl show linux` kernel_routes polled
    every 10 ms);
  - `dpctl linux resync` of the full table (dump + mark-and-sweep), ms;
  - the daemon's resident memory with the table minus without, bytes per route;
  - the table deleted again (ip -batch) and the lag of the withdrawal;
  - a BGP storm through BIRD: a BGP peer (a second BIRD on the host behind
    port0, its TCP connection through the dataplane) announces the first --storm
    prefixes (default 100,000) and withdraws them, --storm-cycles times
    (default 3), and BIRD exports them to the kernel (--storm-via static: a static protocol of BIRD's own); the kernel
    is done when BIRD counts every route exported (the kernel acknowledged it)
    or none, the dataplane when its FIB holds them all or none (lag both ways);
  - punt and inject through the twin: a host floods UDP to the router's address
    for 3 s (punted to the twin; policer raised out of the way), then the
    control-plane namespace floods UDP to the host (injected): packets/s (the
    senders are tests/tools/flood.py udp-burst, 64 datagrams per sendmmsg);
  - --punt-capacity (alone): the punt path's ceiling with no sender sharing
    its CPUs: net_pcap replays 64-byte UDP frames to the port's address, and
    the twin's kernel counts what it received per second;
  - where the floods' missing packets went: every drop and policer counter,
    the port's, the twin's and the kernel's backlog drops;
  - punt round trips (tests/tools/udpecho.py: the host sends a UDP datagram
    every 2 ms to an echo server in the control-plane namespace, through the
    twin): p50/p99/max and lost, idle and during each bulk operation (the load,
    a resync, a full `dpctl --json route show`, a reload, an FPM walk of the
    table from a local zebra stand-in and its withdrawal, the kernel's
    withdrawal), and the path's share of them (the round trip less the echo
    server's time from its socket's receive to its answer: what the punt and
    inject path and the kernel's delivery took); beside them, in the same run,
    plain Linux: the same prober across a veth to a namespace's kernel, idle
    and while that namespace loads and withdraws the table;
  - the worker's forwarding rate during each of those operations against idle:
    a second pair of ports, net_pcap replaying 64-byte IPv4/UDP frames
    (scripts/mkpcap.py) to a route via net_null, keeps the worker saturated;
    dataplaned reports its tx rate every 250 ms (--stats-json), and the rate
    during an operation is what the reports whose intervals fall within it
    add up to (--no-forward: without the second pair).

The worker polls CPU 1. Every process of the control plane's side (ip, BIRD,
the echo server, dpctl, the FPM sender) runs on the other CPUs (--cp-cpus),
as `isolcpus=1` or systemd's AllowedCPUs would keep them on a router: the
kernel's work for a full table's inserts and deletes is not preemptible for
milliseconds at a time and stalls whatever waits on its CPU. The probes (the
remote hosts) and dataplaned itself may run anywhere. --cp-cpus all lets
everything run anywhere.

    scripts/bench-linux.py [--routes N] [--worker-sleep-us US] [--storm N] [--storm-via bgp|static]
                           [--storm-cycles N] [--repeat N]
                           [--cp-cpus LIST|all] [--punt-on-worker] [--no-forward]
    scripts/bench-linux.py --punt-capacity [--punt-on-worker]

Needs root, hugepages (scripts/setup.sh) and a release build (make build).
Writes the table to target/bench-linux.md.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIB = os.environ.get("RIB_V4", os.path.join(ROOT, "..", "shared", "data", "rib-v4-2014-05-13.txt.gz"))
BIN = os.path.join(ROOT, "target", "release")
NS, HOST = "dpbl-cp", "dpbl-host"
# Plain Linux: a prober and a kernel router a veth apart.
PLAIN_A, PLAIN_B = "dpbl-pa", "dpbl-pb"
ECHO = os.path.join(ROOT, "tests", "tools", "udpecho.py")
FPM_PORT = 2620
WORKER_CPU = 1
ALL_CPUS = os.sched_getaffinity(0)


def anywhere():
    """preexec_fn: the child may run on every CPU, whatever the script's own set."""
    os.sched_setaffinity(0, ALL_CPUS)
METRICS_PORT = 19478


class Echo:
    """udpecho.py: a server in `server_ns`, a prober in `client_ns` to `dst`."""

    def __init__(self, server_ns, client_ns, dst, interval_ms=2):
        self.server = subprocess.Popen(["ip", "netns", "exec", server_ns, "python3", ECHO, "serve", "7"],
                                       stdout=subprocess.PIPE, text=True)
        self.server.stdout.readline()
        self.client_ns, self.dst, self.interval = client_ns, dst, interval_ms

    def during(self, action):
        """Round trips while `action()` runs (at least 1 s of them); the
        stats carry the action's wall-clock window as `t0` and `t1`."""
        p = subprocess.Popen(["ip", "netns", "exec", self.client_ns, "python3", ECHO, "probe",
                              self.dst, "7", str(self.interval)], stdout=subprocess.PIPE, text=True,
                             preexec_fn=anywhere)
        p.stdout.readline()
        t0, s0 = time.time(), steal(WORKER_CPU)
        out = action()
        t1, s1 = time.time(), steal(WORKER_CPU)
        time.sleep(max(0.0, 1.0 - (t1 - t0)))
        p.terminate()
        stats = json.loads(p.stdout.readline())
        p.wait()
        stats["t0"], stats["t1"] = t0, t1
        stats["steal"] = (s1 - s0) / os.sysconf("SC_CLK_TCK") / max(t1 - t0, 1e-9)
        return out, stats

    def close(self):
        self.server.terminate()
        self.server.wait()


def steal(cpu):
    """Time the hypervisor took from `cpu` (/proc/stat, in clock ticks)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                return int(line.split()[8])
    return 0


class Rates:
    """dataplaned's --stats-json reports on its stdout, each stamped with the
    wall clock of its arrival (the end of its interval; its `dt` gives the start)."""

    def __init__(self, stdout):
        self.samples = []  # (start, end, tx packets)
        self.t = threading.Thread(target=self._read, args=(stdout,), daemon=True)
        self.t.start()

    def _read(self, stdout):
        for line in stdout:
            if line.startswith("{"):
                s = json.loads(line)
                end = time.time()
                self.samples.append((end - s["dt"], end, s["tx_pkts"]))

    def mpps(self, t0, t1):
        """Packets per second over the reports at least half inside [t0, t1], or None."""
        inside = [(a, b, n) for a, b, n in list(self.samples)
                  if min(b, t1) - max(a, t0) >= (b - a) / 2]
        secs = sum(b - a for a, b, _ in inside)
        return sum(n for _, _, n in inside) / secs / 1e6 if secs > 0 else None


def rtt(stats):
    path = (f"{stats['path_p50_ms']:.2f} / {stats['path_p99_ms']:.2f} / {stats['path_max_ms']:.1f} ms"
            if stats.get("path_p50_ms") is not None else "?")
    return (f"{stats['p50_ms']:.2f} / {stats['p99_ms']:.2f} / {stats['max_ms']:.1f} ms",
            f"path {path}; {stats['lost']} of {stats['sent']} lost")


def fpm_walk(prefixes, oif, msg_type=24):
    """zebra's FPM frames for `prefixes` via 10.250.0.2 dev `oif` (RTM_NEWROUTE,
    or RTM_DELROUTE with msg_type 25; table main, proto bgp, metric 20), as one
    byte string."""
    import ipaddress
    out = bytearray()
    gw = ipaddress.IPv4Address("10.250.0.2").packed
    for p in prefixes:
        net = ipaddress.IPv4Network(p, strict=False)
        attrs = (struct.pack("=HH4s", 8, 1, net.network_address.packed)  # RTA_DST
                 + struct.pack("=HH4s", 8, 5, gw)                        # RTA_GATEWAY
                 + struct.pack("=HHI", 8, 4, oif)                        # RTA_OIF
                 + struct.pack("=HHI", 8, 6, 20))                        # RTA_PRIORITY
        rtm = struct.pack("=BBBBBBBBI", 2, net.prefixlen, 0, 0, 254, 186, 0, 1, 0)
        body = rtm + attrs
        nl = struct.pack("=IHHII", 16 + len(body), msg_type, 0x401 | 0x100, 0, 0) + body
        out += struct.pack("!BBH", 1, 1, 4 + len(nl)) + nl
    return bytes(out)


FPM_SEND = """
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
inp = sys.stdin.buffer
while True:
    head = inp.read(4)
    if len(head) < 4:
        break
    s.sendall(inp.read(struct.unpack("!I", head)[0]))
    print("sent", flush=True)
time.sleep(float(sys.argv[2]))
"""


class FpmSender:
    """One connection to the FPM port, as zebra's: send() frames, then wait
    for the sender to have written them; close() ends it `linger` s later."""

    def __init__(self, linger):
        self.p = subprocess.Popen(["ip", "netns", "exec", NS, "python3", "-c", FPM_SEND, str(FPM_PORT),
                                   str(linger)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)

    def send(self, frames):
        self.p.stdin.write(struct.pack("!I", len(frames)) + frames)
        self.p.stdin.flush()
        self.p.stdout.readline()

    def close(self, kill=False):
        self.p.stdin.close()
        if kill:
            self.p.kill()
        self.p.wait()


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def dpctl(sock, *args):
    o = sh(os.path.join(BIN, "dpctl"), "--socket", sock, "--json", "--timeout", "120", *args)
    return json.loads(o.stdout) if o.stdout.strip() else None


def twin(sock, name="port0"):
    return next(t for t in dpctl(sock, "show", "linux")["twins"] if t["interface"] == name)


def losses(sock):
    """Every counter of a packet lost on the way: drop reasons, the policer's
    drops, and the port's own (the kernel ring's misses, no mbuf)."""
    out = {e["reason"]: e["count"] for e in dpctl(sock, "show", "errors")["errors"]
           if e["type"] in ("drop", "policed")}
    for i in dpctl(sock, "show", "interfaces")["interfaces"]:
        if i["name"] == "port0":
            # Frames the veth took that the port did not read: its af_packet
            # ring overflowed (a drop DPDK 22.11's af_packet does not count).
            with open("/sys/class/net/dpbl0/statistics/rx_packets") as f:
                out["port0 af_packet ring (veth rx - port rx)"] = int(f.read()) - i["counters"]["rx_packets"]
        for k in ("rx_missed", "rx_no_mbuf", "rx_errors", "tx_errors"):
            n = i.get("counters", {}).get(k, 0)
            if n:
                out[f"{i['name']} {k}"] = n
    # The kernel's per-CPU backlog (a veth's frames wait there for the
    # receiving softirq; netdev_max_backlog): the second column, hex.
    with open("/proc/net/softnet_stat") as f:
        backlog = sum(int(l.split()[1], 16) for l in f if l.strip())
    if backlog:
        out["kernel backlog (softnet) drops"] = backlog
    tw = twin(sock)
    for k in ("punt_errors", "inject_drops"):
        if tw.get(k):
            out[f"twin {k}"] = tw[k]
    return out


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


FLOOD = os.path.join(ROOT, "tests", "tools", "flood.py")


def flood(ns, dst, secs, remote):
    """UDP from `ns` to `dst` as fast as sendmmsg goes; packets sent. A remote
    host's sender may run on any CPU, the control plane's stays on its own."""
    o = subprocess.run(["ip", "netns", "exec", ns, "python3", FLOOD, "udp-burst", dst, "lo", str(secs)],
                       capture_output=True, text=True, preexec_fn=anywhere if remote else None)
    return int(o.stdout.strip() or 0)


def bird_storm(ns, tmp, prefixes, sock, via_bgp, cycles):
    """BIRD exports len(prefixes) routes to the kernel, then withdraws them,
    `cycles` times: per cycle (kernel s, dataplane lag s) for the announce and
    for the withdrawal. With `via_bgp` the routes come from a BGP peer: a
    second BIRD on the host behind port0, its TCP connection through the dataplane
    and the twin, announcing a static protocol (enabled and disabled), as a
    peer's announce and withdraw storm does; else from a static protocol
    of the exporting BIRD itself."""
    conf, ctl = os.path.join(tmp, "bird.conf"), os.path.join(tmp, "bird.ctl")
    statics = "".join(f"  route {p} via 10.250.0.2;\n" for p in prefixes)
    birds = [(conf, ctl)]
    with open(conf, "w") as f:
        f.write("router id 10.250.0.1;\nprotocol device { scan time 60; }\n")
        if via_bgp:
            f.write("protocol kernel { ipv4 { import none; export where source = RTS_BGP; }; scan time 60; }\n"
                    "protocol bgp peer {\n  local 10.250.0.1 as 65001;\n  neighbor 10.250.0.2 as 65002;\n"
                    "  ipv4 { import all; export none; };\n}\n")
        else:
            f.write("protocol kernel { ipv4 { import none; export all; }; scan time 60; }\n"
                    f"protocol static storm {{\n  disabled yes;\n  ipv4;\n{statics}}}\n")
    spaces = [ns]
    if via_bgp:
        peer = (os.path.join(tmp, "peer.conf"), os.path.join(tmp, "peer.ctl"))
        blackholes = "".join(f"  route {p} blackhole;\n" for p in prefixes)
        with open(peer[0], "w") as f:
            f.write("router id 10.250.0.2;\nprotocol device { scan time 60; }\n"
                    f"protocol static storm {{\n  disabled yes;\n  ipv4;\n{blackholes}}}\n"
                    "protocol bgp up {\n  local 10.250.0.2 as 65002;\n  neighbor 10.250.0.1 as 65001;\n"
                    "  ipv4 { import none; export all; };\n}\n")
        birds.append(peer)
        spaces.append(HOST)
    procs = [subprocess.Popen(["ip", "netns", "exec", space, "bird", "-f", "-c", c, "-s", s,
                               "-P", s + ".pid"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for space, (c, s) in zip(spaces, birds)]
    storm_ctl = birds[-1][1]
    out = []
    try:
        deadline = time.time() + 30
        for _, s in birds:
            while sh("birdc", "-s", s, "show", "status", check=False).returncode != 0:
                if time.time() > deadline:
                    sys.exit("bench-linux: BIRD did not start")
                time.sleep(0.1)
        if via_bgp:
            while "Established" not in sh("birdc", "-s", ctl, "show", "protocols", "peer").stdout:
                if time.time() > deadline:
                    sys.exit("bench-linux: BGP did not reach Established")
                time.sleep(0.1)
        for _ in range(cycles):
            cycle = []
            for verb, want in (("enable", len(prefixes)), ("disable", 0)):
                # BIRD's kernel protocol counts a route exported once the kernel
                # acknowledged it: that count is the kernel's progress.
                done = {}

                def kernel():
                    while True:
                        o = sh("birdc", "-s", ctl, "show", "protocols", "all", "kernel1").stdout
                        n = next((int(l.split()[3]) for l in o.splitlines() if "Routes:" in l), -1)
                        if n == want:
                            done["t"] = time.time()
                            return
                        time.sleep(0.005)

                th = threading.Thread(target=kernel)
                t0 = time.time()
                sh("birdc", "-s", storm_ctl, verb, "storm")
                th.start()
                t_dp = wait_routes(sock, want)
                th.join(120)
                t_kernel = done["t"]
                cycle.append((t_kernel - t0, t_dp - t_kernel))
            out.append(cycle)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
    return out


def wait_routes(sock, want, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if dpctl(sock, "show", "linux")["kernel_routes"] == want:
            return time.time()
        time.sleep(0.01)
    sys.exit(f"bench-linux: the dataplane did not reach {want} kernel routes")


def started(d):
    """Waits for dataplaned `d` to say it forwards, then keeps reading its
    stderr so that its log never fills the pipe."""
    for line in d.stderr:
        if "forwarding" in line:
            break
    else:
        sys.exit("bench-linux: dataplaned did not start")
    threading.Thread(target=lambda: [None for _ in d.stderr], daemon=True).start()


def punt_capacity(args, tmp):
    """The punt path's own ceiling, with no sender in the way: net_pcap replays
    64-byte UDP frames to the port's address as fast as the worker reads them,
    the worker punts what the punt queue takes (the rest is counted as
    punt_queue_full), and the twin's own rx counter in the namespace gives
    what reached the kernel per 1-s interval (checked against the path's punt
    counter, read between two reads of it). Returns (median, min, max) pkts/s."""
    pcap = os.path.join(tmp, "punt-64.pcap")
    sh(sys.executable, os.path.join(ROOT, "scripts", "mkpcap.py"), pcap, "--kind", "ipv4", "--count", "1",
       "--size", "64", "--dst-mac", "02:70:63:61:70:00")
    sock = os.path.join(tmp, "cap.sock")
    sh("ip", "netns", "del", NS, check=False)
    sh("ip", "netns", "add", NS)
    cfg = os.path.join(tmp, "cap.toml")
    with open(cfg, "w") as f:
        f.write('[eal]\nmemory_mb = 256\n[mempool]\nmbufs = 16383\n[workers]\n' + f'cpus = [{WORKER_CPU}]\n'
                '[[port]]\nname = "pnt0"\n'
                f'device = "net_pcap0,rx_pcap={pcap},infinite_rx=1"\n'
                '[forwarding]\nmode = "router"\n'
                '[[interface]]\nname = "pnt0"\naddresses = ["198.18.1.1/16"]\n'
                f'[linux]\nnetns = "{NS}"\npunt_other_pps = 100000000\n'
                + (f'punt_cpus = [{WORKER_CPU}]\npunt_priority = 0\n' if args.punt_on_worker else ''))
    d = subprocess.Popen([os.path.join(BIN, "dataplaned"), "-c", cfg, "--socket", sock],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=anywhere)
    rates = []
    try:
        started(d)

        def kernel_rx():
            o = sh("ip", "netns", "exec", NS, "cat", "/sys/class/net/pnt0/statistics/rx_packets")
            return int(o.stdout.strip())

        time.sleep(1.0)
        def sample():
            # The kernel's count before and after the path's: the tun counts a
            # frame before its write returns, so the path's lies between them.
            k1 = kernel_rx()
            t = time.time()
            w = twin(sock, "pnt0")["punt_pkts"]
            return t, k1, w, kernel_rx()

        last = sample()
        for _ in range(5):
            time.sleep(1.0)
            now = sample()
            wrote = now[2] - last[2]
            if not now[1] - last[3] <= wrote <= now[3] - last[1]:
                sys.exit(f"bench-linux: the twin wrote {wrote} frames, its kernel received "
                         f"{now[1] - last[3]} to {now[3] - last[1]}")
            rates.append((now[3] - last[3]) / (now[0] - last[0]))
            last = now
    finally:
        d.terminate()
        d.wait()
        sh("ip", "netns", "del", NS, check=False)
    rates.sort()
    return rates[len(rates) // 2], rates[0], rates[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--routes", type=int, default=0, help="first N prefixes only (default: all)")
    ap.add_argument("--repeat", type=int, default=0,
                    help="then N full resyncs and N zebra reconnect walks: resident memory across them")
    ap.add_argument("--storm", type=int, default=100_000, help="routes in BIRD's storm (0: none)")
    ap.add_argument("--storm-via", choices=("bgp", "static"), default="bgp",
                    help="the storm's routes come from a BGP peer (default) or a static protocol")
    ap.add_argument("--storm-cycles", type=int, default=3, help="announce and withdraw cycles")
    ap.add_argument("--worker-sleep-us", type=int, default=None,
                    help="[workers] idle_max_sleep_us (default: the daemon's; 0 for a polling core)")
    ap.add_argument("--punt-on-worker", action="store_true",
                    help="the punt thread on the worker's CPU as an ordinary thread "
                         "([linux] punt_cpus = [1], punt_priority = 0)")
    ap.add_argument("--no-forward", action="store_true",
                    help="no net_pcap -> net_null pair: the worker only serves the veth port")
    ap.add_argument("--punt-capacity", action="store_true",
                    help="only the punt path's ceiling: net_pcap floods the port's address, "
                         "the twin's punt counter gives what reached the kernel")
    ap.add_argument("--cp-cpus", default=None,
                    help="CPUs of the control plane's processes, e.g. 0,2-3 (default: all but the worker's; "
                         "'all': no pinning)")
    args = ap.parse_args()
    if args.cp_cpus == "all":
        cp = set(ALL_CPUS)
    elif args.cp_cpus:
        cp = set()
        for part in args.cp_cpus.split(","):
            a, _, b = part.partition("-")
            cp |= set(range(int(a), int(b or a) + 1))
    else:
        cp = set(ALL_CPUS) - {WORKER_CPU} or set(ALL_CPUS)
    # Inherited by every child but dataplaned and the probes (anywhere()).
    os.sched_setaffinity(0, cp)
    if args.punt_capacity:
        tmp = tempfile.mkdtemp(prefix="bench-linux-")
        med, lo, hi = punt_capacity(args, tmp)
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        commit = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD", check=False).stdout.strip()
        print(f"# bench-linux --punt-capacity: {time.strftime('%Y-%m-%d')}, commit {commit}, {cpu}\n\n"
              f"punt through the twin, net_pcap source (64 B UDP to the port's address): "
              f"{med:,.0f} pkts/s median of 5 s (per-second {lo:,.0f} .. {hi:,.0f})")
        return
    prefixes = []
    with gzip.open(RIB, "rt") as f:
        for line in f:
            if line[0].isdigit():
                prefixes.append(line.split()[0])
    if args.routes:
        prefixes = prefixes[: args.routes]
    tmp = tempfile.mkdtemp(prefix="bench-linux-")
    sock = os.path.join(tmp, "ctl.sock")
    for verb in ("add", "del"):
        with open(os.path.join(tmp, f"{verb}.batch"), "w") as f:
            for p in prefixes:
                f.write(f"route {verb} {p} via 10.250.0.2 proto bird\n")
    sh("ip", "netns", "del", NS, check=False)
    sh("ip", "netns", "del", HOST, check=False)
    sh("ip", "netns", "add", HOST)
    sh("ip", "link", "add", "dpbl0", "type", "veth", "peer", "name", "dpbl1")
    sh("ip", "link", "set", "dpbl1", "netns", HOST)
    sh("ip", "link", "set", "dpbl0", "up")
    sh("ip", "-n", HOST, "addr", "add", "10.250.0.2/24", "dev", "dpbl1")
    sh("ip", "-n", HOST, "link", "set", "dpbl1", "up")
    sh("ip", "netns", "exec", HOST, "ethtool", "-K", "dpbl1", "tx", "off", check=False)
    for ns in (PLAIN_A, PLAIN_B):
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "-n", PLAIN_A, "link", "add", "dpblp0", "type", "veth", "peer", "name", "dpblp1", "netns", PLAIN_B)
    sh("ip", "-n", PLAIN_A, "addr", "add", "10.251.0.2/24", "dev", "dpblp0")
    sh("ip", "-n", PLAIN_B, "addr", "add", "10.251.0.1/24", "dev", "dpblp1")
    sh("ip", "-n", PLAIN_A, "link", "set", "dpblp0", "up")
    sh("ip", "-n", PLAIN_B, "link", "set", "dpblp1", "up")
    with open(os.path.join(tmp, "plain.batch"), "w") as f:
        for p in prefixes:
            f.write(f"route add {p} via 10.251.0.2 proto bird\n")
    with open(os.path.join(tmp, "plain-del.batch"), "w") as f:
        for p in prefixes:
            f.write(f"route del {p} via 10.251.0.2 proto bird\n")
    fwd = ""
    if not args.no_forward:
        pcap = os.path.join(tmp, "ipv4-64.pcap")
        # destination MAC = the first net_pcap port's, so the router's MAC check accepts the frames
        sh(sys.executable, os.path.join(ROOT, "scripts", "mkpcap.py"), pcap, "--kind", "ipv4", "--count", "254",
           "--size", "64", "--dst-mac", "02:70:63:61:70:00")
        fwd = ('[[port]]\nname = "fwd0"\n'
               f'device = "net_pcap0,rx_pcap={pcap},infinite_rx=1"\n'
               '[[port]]\nname = "fwd1"\ndevice = "net_null0,no-rx=1"\n'
               '[[interface]]\nname = "fwd0"\naddresses = ["198.18.0.254/24"]\n'
               '[[interface]]\nname = "fwd1"\naddresses = ["192.0.2.1/30"]\n'
               '[[neighbor]]\ninterface = "fwd1"\naddress = "192.0.2.2"\nmac = "02:00:00:00:00:02"\n'
               '[[route]]\nprefix = "198.18.1.0/24"\nvia = [{ gateway = "192.0.2.2", interface = "fwd1" }]\n')
    cfg = os.path.join(tmp, "d.toml")
    with open(cfg, "w") as f:
        f.write(
            '[eal]\nmemory_mb = 256\n[mempool]\nmbufs = 16383\n[workers]\n' + f'cpus = [{WORKER_CPU}]\n'
            + (f'idle_max_sleep_us = {args.worker_sleep_us}\n' if args.worker_sleep_us is not None else '')
            +
            '[[port]]\nname = "port0"\ndevice = "net_af_packet0,iface=dpbl0"\n'
            + fwd +
            '[forwarding]\nmode = "router"\n'
            '[[interface]]\nname = "port0"\naddresses = ["10.250.0.1/24"]\n'
            f'[linux]\nnetns = "{NS}"\npunt_other_pps = 10000000\n'
            + (f'punt_cpus = [{WORKER_CPU}]\npunt_priority = 0\n' if args.punt_on_worker else '')
            +
            f'[fpm]\nport = {FPM_PORT}\nkernel_routes = true\nhold_s = 3600\nrestart_s = 0\n'
            f'[metrics]\nlisten = "127.0.0.1:{METRICS_PORT}"\n'
        )
    d = subprocess.Popen([os.path.join(BIN, "dataplaned"), "-c", cfg, "--socket", sock,
                          "--stats-interval-ms", "250", "--stats-json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=anywhere)
    rates = Rates(d.stdout)
    rows = []
    echos = []
    try:
        started(d)
        time.sleep(0.5)
        empty = rss(d.pid)
        n = len(prefixes)
        dp = Echo(NS, HOST, "10.250.0.1")
        plain = Echo(PLAIN_B, PLAIN_A, "10.251.0.1")
        echos += [dp, plain]
        lat = []  # (what, dataplane stats, plain Linux stats or None)
        _, a = dp.during(lambda: time.sleep(3))
        _, b = plain.during(lambda: time.sleep(3))
        lat.append(("idle", a, b))
        if not args.no_forward:
            # What any work beside the worker costs it on this machine (shared caches,
            # memory, the host's scheduling of the vCPUs): no dataplane work at all.
            for what, code in (("a busy loop", "while True: pass"),
                               ("a 64 MiB memory copy loop", "b = bytearray(64 << 20)\nwhile True: bytes(b)")):
                def hog(code=code):
                    h = subprocess.Popen([sys.executable, "-c", code])
                    time.sleep(3)
                    h.kill()
                    h.wait()
                _, a = dp.during(hog)
                lat.append((f"{what} on the control plane's CPU (reference)", a, None))

        def load():
            t0 = time.time()
            sh("ip", "-n", NS, "-batch", os.path.join(tmp, "add.batch"))
            t_kernel = time.time()
            return t0, t_kernel, wait_routes(sock, n)

        (t0, t_kernel, t_dp), a = dp.during(load)
        _, b = plain.during(lambda: sh("ip", "-n", PLAIN_B, "-batch", os.path.join(tmp, "plain.batch")))
        lat.append(("the table loaded into the kernel", a, b))
        rows.append(("kernel load (`ip -batch`)", f"{t_kernel - t0:.2f} s", f"{n / (t_kernel - t0):,.0f} routes/s"))
        rows.append(("dataplane FIB complete after the kernel", f"{t_dp - t_kernel:.2f} s",
                     f"lag; {n / (t_dp - t0):,.0f} routes/s end to end"))
        time.sleep(1)
        full = rss(d.pid)
        rows.append(("resident memory per route (RIB + FIB + learner)", f"{(full - empty) / n:.0f} B",
                     f"{empty / 2**20:.0f} MiB empty, {full / 2**20:.0f} MiB with the table"))
        m, a = dp.during(lambda: dpctl(sock, "linux", "resync")["message"])
        lat.append(("`dpctl linux resync`", a, None))
        ms = dpctl(sock, "show", "linux")["netlink"]["last_resync"]["ms"]
        rows.append(("`dpctl linux resync` of the full table", f"{ms / 1000:.2f} s", m))
        def scrapes():
            took = []
            t_end = time.time() + 3
            while time.time() < t_end:
                t = time.time()
                with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=10) as r:
                    size = len(r.read())
                took.append(time.time() - t)
                time.sleep(max(0.0, 0.05 - (time.time() - t)))
            took.sort()
            return size, took

        (size, took), a = dp.during(scrapes)
        lat.append((f"Prometheus scrapes, 20/s ({size / 1024:.0f} KiB each)", a, None))
        rows.append(("a Prometheus scrape with the full table", f"{took[len(took) // 2] * 1e3:.1f} ms",
                     f"p50; max {took[-1] * 1e3:.1f} ms over {len(took)}"))
        shown, a = dp.during(lambda: len(dpctl(sock, "route", "show")["routes"]))
        lat.append((f"`dpctl --json route show` ({shown:,} routes)", a, None))
        before = rss(d.pid)
        for _ in range(10):
            dpctl(sock, "route", "show")
        after = rss(d.pid)
        rows.append(("resident memory after 10 full-table `route show`", f"{after / before:.3f}x",
                     f"{before / 2**20:,.0f} MiB before, {after / 2**20:,.0f} MiB after"))
        _, a = dp.during(lambda: dpctl(sock, "reload"))
        lat.append(("`dpctl reload`", a, None))
        # A reload of a file that holds the table (as static routes via the
        # host), then of the file without it again.
        with open(cfg) as f:
            base = f.read()

        def reload_timed():
            t = time.time()
            dpctl(sock, "reload")
            return time.time() - t

        with open(cfg, "w") as f:
            f.write(base + "".join(f'[[route]]\nprefix = "{p}"\nvia = [{{ gateway = "10.250.0.2", interface = "port0" }}]\n'
                                   for p in prefixes))
        base_rss = rss(d.pid)
        took, a = dp.during(reload_timed)
        lat.append((f"`dpctl reload` of a file with the table ({len(prefixes):,} `[[route]]` added)", a, None))
        statics = rss(d.pid)
        rows.append(("`dpctl reload` adding the table as `[[route]]` (a 45 MB file)" if len(prefixes) > 500_000
                     else f"`dpctl reload` adding {len(prefixes):,} `[[route]]`", f"{took:.2f} s",
                     f"resident memory then {statics / 2**20:,.0f} MiB: "
                     f"{(statics - base_rss) / len(prefixes):,.0f} B per static route"))
        with open(cfg, "w") as f:
            f.write(base)
        took, a = dp.during(reload_timed)
        lat.append(("`dpctl reload` of the file without them (all removed)", a, None))
        rows.append(("`dpctl reload` removing them", f"{took:.2f} s",
                     f"resident memory then {rss(d.pid) / 2**20:,.0f} MiB"))
        oif = json.loads(sh("ip", "-n", NS, "-j", "link", "show", "port0").stdout)[0]["ifindex"]
        frames = fpm_walk(prefixes, oif)

        fpm = FpmSender(1)

        def wait_fpm(cond):
            deadline = time.time() + 120
            while not cond(dpctl(sock, "show", "fpm")["routes"]):
                if time.time() > deadline:
                    sys.exit("bench-linux: the FPM routes did not arrive or go")
                time.sleep(0.01)

        def walk():
            t0 = time.time()
            fpm.send(frames)
            wait_fpm(lambda r: r >= n)
            return time.time() - t0

        t_walk, a = dp.during(walk)
        lat.append(("an FPM walk of the table", a, None))
        rows.append(("FPM walk of the full table (a local sender, zebra's frames)", f"{t_walk:.2f} s",
                     f"{n / t_walk:,.0f} routes/s into the FIB"))
        gone = fpm_walk(prefixes, oif, msg_type=25)

        def fpm_withdraw():
            t0 = time.time()
            fpm.send(gone)
            wait_fpm(lambda r: r == 0)
            return time.time() - t0

        t_gone, a = dp.during(fpm_withdraw)
        fpm.close()
        lat.append(("zebra withdrawing the table over FPM", a, None))
        rows.append(("FPM withdrawal of the full table", f"{t_gone:.2f} s",
                     f"{n / t_gone:,.0f} routes/s out of the FIB (the kernel's copies take over)"))
        if args.repeat:
            def flat(what, after):
                # From after the first (the heap's steady state) to the last.
                r0, r1 = after[0], after[-1]
                rows.append((f"resident memory across {len(after)} {what}",
                             f"{r0 / 2**20:.1f} -> {r1 / 2**20:.1f} MiB",
                             f"{100 * (r1 - r0) / r0:+.1f} % from the first to the last; "
                             f"max {max(after) / 2**20:.1f} MiB"))

            after = []
            for _ in range(args.repeat):
                dpctl(sock, "linux", "resync")
                after.append(rss(d.pid))
            flat("full resyncs", after)
            after = []
            for _ in range(args.repeat):
                c0 = dpctl(sock, "show", "fpm")["connects"]
                snd = FpmSender(60)
                snd.send(frames)
                deadline = time.time() + 60
                while time.time() < deadline:
                    f = dpctl(sock, "show", "fpm")
                    if f["connects"] == c0 + 1 and not f["walking"]:
                        break
                    time.sleep(0.01)
                else:
                    sys.exit("bench-linux: a reconnect walk was not swept")
                after.append(rss(d.pid))
                snd.close(kill=True)
            flat("zebra reconnect walks", after)
        t0 = time.time()

        def withdraw():
            sh("ip", "-n", NS, "-batch", os.path.join(tmp, "del.batch"))
            return time.time(), wait_routes(sock, 0)

        (t_kernel, t_dp), a = dp.during(withdraw)
        _, b = plain.during(lambda: sh("ip", "-n", PLAIN_B, "-batch", os.path.join(tmp, "plain-del.batch")))
        lat.append(("the table withdrawn from the kernel", a, b))
        rows.append(("withdrawal: kernel", f"{t_kernel - t0:.2f} s", ""))
        rows.append(("withdrawal: dataplane after the kernel", f"{t_dp - t_kernel:.2f} s", "lag"))
        if args.storm:
            storm = prefixes[: args.storm]
            via = "a BGP peer" if args.storm_via == "bgp" else "a static protocol"
            for k, ((ka, la), (kw, lw)) in enumerate(
                    bird_storm(NS, tmp, storm, sock, args.storm_via == "bgp", args.storm_cycles)):
                rows.append((f"BIRD storm of {len(storm):,} routes from {via}, cycle {k + 1}, announced: "
                             "kernel / dataplane lag",
                             f"{ka:.2f} s / {la:.3f} s", f"{len(storm) / ka:,.0f} routes/s in the kernel"))
                rows.append((f"BIRD storm of {len(storm):,} routes from {via}, cycle {k + 1}, withdrawn: "
                             "kernel / dataplane lag",
                             f"{kw:.2f} s / {lw:.3f} s", f"{len(storm) / kw:,.0f} routes/s in the kernel"))
        for what, a, b in lat:
            v, note = rtt(a)
            if b is not None:
                pv, pnote = rtt(b)
                note += f"; plain Linux {pv}, {pnote}"
            rows.append((f"punt round trip p50 / p99 / max: {what}", v, note))
        if not args.no_forward:
            idle = rates.mpps(lat[0][1]["t0"], lat[0][1]["t1"])
            for what, a, _ in lat[1:]:
                m = rates.mpps(a["t0"], a["t1"])
                if idle and m is not None:
                    rows.append((f"forwarding during {what}", f"{m / idle:.3f} of idle",
                                 f"{m:.2f} Mpps against {idle:.2f} idle (64 B, net_pcap -> net_null, "
                                 f"{a['t1'] - a['t0']:.2f} s); the hypervisor took {100 * a['steal']:.1f} % "
                                 f"of the worker's CPU (idle: {100 * lat[0][1]['steal']:.1f} %)"))
        for what, ns, dst, key in (("punt", HOST, "10.250.0.1", "punt_pkts"),
                                   ("inject", NS, "10.250.0.2", "inject_pkts")):
            before, lost0 = twin(sock)[key], losses(sock)
            sent = flood(ns, dst, 3.0, ns == HOST)
            time.sleep(0.2)
            got = twin(sock)[key] - before
            lost = {k: n - lost0.get(k, 0) for k, n in losses(sock).items() if n > lost0.get(k, 0)}
            where = ", ".join(f"{k} {n:,}" for k, n in sorted(lost.items())) or "none counted"
            rows.append((f"{what} through the twin (UDP, 74 B)", f"{got / 3.0:,.0f} pkts/s",
                         f"{sent / 3.0:,.0f}/s offered; lost on the way: {where}"))
        # The same floods between two plain kernels a veth apart (the prober's
        # namespaces): what this machine carries with no dataplane in the way.
        for what, ns, dst, peer, dev, remote in (
                ("punt", PLAIN_A, "10.251.0.1", PLAIN_B, "dpblp1", True),
                ("inject", PLAIN_B, "10.251.0.2", PLAIN_A, "dpblp0", False)):
            def rx():
                o = sh("ip", "netns", "exec", peer, "cat", f"/sys/class/net/{dev}/statistics/rx_packets")
                return int(o.stdout.strip())
            before = rx()
            sent = flood(ns, dst, 3.0, remote)
            time.sleep(0.2)
            got = rx() - before
            rows.append((f"plain Linux: the {what} flood across a veth into a namespace's kernel", f"{got / 3.0:,.0f} pkts/s",
                         f"{sent / 3.0:,.0f}/s offered (the same senders and CPUs)"))
        nl = dpctl(sock, "show", "linux")["netlink"]
        rows.append(("netlink", f"{nl['messages']:,} msgs", f"{nl['batches']} batches, {nl['resyncs']} resyncs, {nl['overflows']} overflows"))
    finally:
        for e in echos:
            e.close()
        d.terminate()
        d.wait()
        sh("ip", "link", "del", "dpbl0", check=False)
        sh("ip", "netns", "del", HOST, check=False)
        sh("ip", "netns", "del", NS, check=False)
        for ns in (PLAIN_A, PLAIN_B):
            sh("ip", "netns", "del", ns, check=False)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD", check=False).stdout.strip()
    out = [f"# bench-linux: {len(prefixes):,} prefixes, {time.strftime('%Y-%m-%d')}, commit {commit}, {cpu}", "",
           "| figure | value | note |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    text = "\n".join(out) + "\n"
    print(text)
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "bench-linux.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
