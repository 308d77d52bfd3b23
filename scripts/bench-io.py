#!/usr/bin/env python3
"""End-to-end benchmark: dataplaned against DPDK's own apps on the same vdevs, same run.

Everything forwards 64-byte IPv4/UDP frames (to 198.18.1.1-254) from net_pcap
(infinite_rx: the file replays forever) to net_null (no-rx: a pure sink) on one
pinned core (CPU 1), polling without sleeping. Each contender runs ROUNDS times,
alternating, for SECONDS each; its rate is the median of per-second samples after a
warm-up.

  --mode xconnect: dataplaned's L2 cross-connect vs dpdk-testpmd io forwarding.
  --mode router:   dataplaned routing (IPv4 lookup in a 16-route table, TTL,
                   checksum, MAC rewrite) vs testpmd io (the I/O limit) and DPDK's
                   l3fwd in LPM mode with its default 16-route table (built by
                   scripts/build-l3fwd.sh from Debian's dpdk-doc; rate read with
                   dpdk-proc-info).
  --mode router-full: the same with the IPv4 part of the 2024 table (RIB_V4,
                   default ../shared/data/prefixes-2024-v4v6.txt.gz, 901,899
                   prefixes; RIB_V4=../shared/data/rib-v4-2014-05-13.txt.gz: the
                   2014 table's 512,621) in both, every prefix via port1, and
                   frames to 4,096 addresses drawn from its prefixes (seeded):
                   ours with the table as [[route]], l3fwd rebuilt with its LPM
                   sized for 2^20 rules and 2^16 tbl8 groups
                   (scripts/build-l3fwd.sh --full-table) reading it with
                   --rule_ipv4; each waits until forwarding starts (rte_lpm adds
                   a rule in time linear in the rules of its length: about 20 s
                   for the 2014 table, minutes for the 2024 one).

  --mode router6:  IPv6 routing (hop limit, MAC rewrite) in l3fwd's default
                   IPv6 table (16 /64s, 2001:200:0:N::/64 -> port N; ours: each
                   via a static neighbour on port1) with 78-byte UDP/IPv6 frames
                   to 254 hosts of 2001:200:0:1::/64, against testpmd io and
                   l3fwd's IPv6 path with both its lookups: --lookup=lpm
                   (rte_lpm6) and --lookup=fib (rte_fib6, trie).
  --mode router6-full: the same with the IPv6 part of the 2024 table (RIB_V6,
                   default ../shared/data/prefixes-2024-v4v6.txt.gz, 160,147
                   prefixes) in both, every prefix via port1, frames to 4,096
                   addresses drawn from its prefixes (seeded); l3fwd rebuilt
                   with its IPv6 LPM and FIB sized for it (build-l3fwd.sh
                   --full-table) reading it with --rule_ipv6.

  --mode linux:    the router with [linux] (TAP twins, netlink learner) run twice
                   per round: control plane idle, then busy (50,000 /32 routes
                   added and deleted in the namespace's kernel over and over, a
                   `dpctl linux resync` after each pass, pinned to CPU 0): the
                   forwarding rate while the control plane works against the rate
                   while it idles, and the route changes/s it applied.

  --mode mpls-swap|mpls-push|mpls-pop|mpls-mix|mpls-push6|mpls-pop6: dataplaned against Open vSwitch
                   with DPDK (Debian's openvswitch-switch-dpdk, a private
                   ovsdb-server and ovs-vswitchd-dpdk per round, PMD thread on
                   CPU 1, a netdev bridge over the same two vdevs), flows
                   equivalent to our routes and labels, MAC rewrite and TTL
                   decrement on both sides:
                     swap: label 100 -> 200 (set_field, dec_mpls_ttl);
                     push: IPv4 to 16 routes, each with one out-label (dec_ttl,
                           push_mpls, set_field);
                     pop:  label 100 popped and the IPv4 packet looked up in the
                           16 routes (ours: action ip4-lookup; OVS both ways: its
                           plain pop_mpls with no lookup, its best case, and
                           pop_mpls + resubmit to a routing table, which its
                           datapath runs as a recirculation);
                     mix:  push of 65,536 flows over 1,024 prefixes, each with its
                           own label: OVS's exact-match cache (8k entries) misses.
                     push6: IPv6 to 16 routes (2001:200:0:N::/64), each with
                           one out-label via an IPv4 neighbour (6PE's push;
                           OVS: dec_ttl, push_mpls, set_field), 78-byte frames;
                     pop6: label 100 over those IPv6 packets popped into an IPv6
                           lookup in the 16 routes (ours: action ip6-lookup;
                           OVS: pop_mpls:0x86dd, alone and with a resubmit);
                   OVS's cycles/packet are its PMD's (pmd-stats-show), its rate is
                   p1's tx counter (ovs-ofctl dump-ports) per second.

  --mode sflow:    the router run twice per round, sFlow off and sFlow on port0 at
                   1-in-N (--sflow-rate, default 10; --sflow-direction rx|tx|both),
                   exporting to a UDP socket this script drains on 127.0.0.1: the
                   forwarding rate with sampling against the rate without (issue 7's
                   goal: >= 0.95 at 1:10). --sflow-max-samples N sets the agent's
                   export limit (default: the daemon's, 20000/s; 0: no limit).

  --mode router|router6 --callgrind: instructions per packet instead of rates, which do
                   not move with the machine's load: dataplaned routing, its
                   cross-connect (the I/O alone) and l3fwd (router6: with each
                   of its lookups), each once under
                   valgrind's callgrind for SECONDS (EAL without hugepages),
                   counted inside its forwarding loop and split into the pcap PMD's
                   rx, the null PMD's tx, other shared objects (the dynamic
                   loader's TLS lookups, libc) and the program's own work.
                   Packets: dataplaned's own tx counter; l3fwd's rx calls into the
                   pcap PMD times its burst of 32 (the replayed file never runs
                   dry, so every call fills its burst).
  --mode mpls-* --callgrind: the same count for dataplaned alone on that mode's
                   configuration.

    scripts/bench-io.py [--mode xconnect|router|router-full|router6|router6-full|sflow|linux|mpls-swap|mpls-push|mpls-pop|mpls-mix|
                        mpls-push6|mpls-pop6]
                        [--rounds 3] [--seconds 10] [--callgrind]

Prints a table (Mpps, TSC cycles/packet, ratio) and writes it to
target/bench-io/<mode>.md. Needs root and hugepages (scripts/setup.sh).
"""
import argparse
import glob
import gzip
import ipaddress
import json
import os
import random
import re
import shutil
import signal
import socket
import threading
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_ours(binary, cfg_path, seconds):
    out = subprocess.run(
        [binary, "-c", cfg_path, "--stats-interval-ms", "1000", "--stats-json", "--duration", str(seconds)],
        capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        sys.exit(f"dataplaned failed:\n{out.stderr}")
    samples = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    samples = samples[2:] or samples
    mpps = statistics.median(s["tx_mpps"] for s in samples)
    cpp = statistics.median(s["cycles_per_pkt"] for s in samples)
    return mpps, cpp


def run_testpmd(pcap, seconds):
    cmd = ["dpdk-testpmd", "-l", "0,1", "--no-pci", "--in-memory", "--log-level=*:error",
           f"--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1", "--vdev=net_null0,no-rx=1", "--",
           "--forward-mode=io", "--stats-period=1", "--auto-start", "--record-core-cycles",
           "--total-num-mbufs=16384"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         stdin=subprocess.DEVNULL)
    time.sleep(seconds + 2)
    p.send_signal(signal.SIGINT)
    try:
        text, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        text, _ = p.communicate()
    # Port 1 (net_null) Tx-pps per stats period.
    blocks = re.findall(r"NIC statistics for port 1.*?Tx-pps:\s+(\d+)", text, re.S)
    rates = [int(x) / 1e6 for x in blocks]
    rates = [r for r in rates[2:] if r > 0] or rates
    if not rates:
        sys.exit(f"testpmd printed no rates:\n{text[-2000:]}")
    m = re.search(r"CPU cycles/packet=([\d.]+).*?at (\d+) MHz", text)
    cpp = float(m.group(1)) if m else float("nan")
    return statistics.median(rates), cpp


def run_l3fwd(pcap, seconds, binary, rules=(), lookup="lpm"):
    """l3fwd's rate (Mpps) and cycles/packet; a start that fails is tried once more."""
    err = ""
    for _ in range(2):
        r, err = run_l3fwd_once(pcap, seconds, binary, rules, lookup)
        if r is not None:
            return r
    sys.exit(f"l3fwd gave no rates: {err}")


def run_l3fwd_once(pcap, seconds, binary, rules, lookup):
    prefix = "dpbench_l3fwd"
    # (the pcap by its name, in its directory: dpdk-proc-info attaching to an
    # l3fwd whose rx_pcap is a long absolute path crashed before printing)
    here = os.path.dirname(os.path.abspath(pcap))
    cmd = [binary, "-l", "1", "--no-pci", f"--file-prefix={prefix}", "--log-level=*:error",
           f"--vdev=net_pcap0,rx_pcap={os.path.basename(pcap)},infinite_rx=1", "--vdev=net_null0,no-rx=1", "--",
           "-p", "0x3", "-P", f"--lookup={lookup}", "--parse-ptype", "--config=(0,0,1),(1,0,1)", *rules]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, cwd=here)

    def tx1():
        if p.poll() is not None:
            # (no primary to attach to: a secondary would wait for it)
            return None, time.monotonic()
        try:
            out = subprocess.run(["dpdk-proc-info", f"--file-prefix={prefix}", "--no-pci",
                                  "--log-level=*:error", "--", "--stats"],
                                 capture_output=True, text=True, timeout=30, cwd=here).stdout
        except subprocess.TimeoutExpired:
            # (a stalled attach: this sample is lost, the next one is tried)
            return None, time.monotonic()
        blocks = out.split("NIC statistics for port")
        for b in blocks[1:]:
            if b.strip().startswith("1"):
                m = re.search(r"TX-packets:\s+(\d+)", b)
                if m:
                    return int(m.group(1)), time.monotonic()
        return None, time.monotonic()

    try:
        # Forwarding has started when port 1's tx counter moves (the LPM is loaded
        # first: minutes for the 2024 table).
        deadline = time.monotonic() + 900
        a, ta = tx1()
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
            b, tb = tx1()
            if a is not None and b is not None and b > a:
                break
            a, ta = b, tb
        time.sleep(1)
        rates = []
        a, ta = tx1()
        for _ in range(seconds if p.poll() is None else 0):
            time.sleep(1)
            b, tb = tx1()
            if a is not None and b is not None:
                rates.append((b - a) / (tb - ta) / 1e6)
            a, ta = b, tb
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        # (its hugepage files outlive it: the next contender needs the pages)
        for f in glob.glob(f"/dev/hugepages/{prefix}map_*"):
            os.unlink(f)
    rates = rates[1:] or rates
    if not rates:
        return None, f"exit status {p.returncode}: {p.stderr.read()[-2000:] if p.stderr else ''}"
    mpps = statistics.median(rates)
    hz = 2.0e9  # l3fwd's core is 100 % busy: cycles/packet = TSC Hz / pps
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"cpu MHz\s*:\s*([\d.]+)", f.read())
            if m:
                hz = float(m.group(1)) * 1e6
    except OSError:
        pass
    return (mpps, hz / (mpps * 1e6)), ""


ROUTER_CFG = """
[forwarding]
mode = "router"
[[interface]]
name = "port0"
addresses = ["198.18.0.254/24"]
[[interface]]
name = "port1"
addresses = ["192.0.2.1/30"]
[[neighbor]]
interface = "port1"
address = "192.0.2.2"
mac = "02:00:00:00:00:02"
"""


ROUTER6_CFG = """
[forwarding]
mode = "router"
[[interface]]
name = "port0"
addresses = ["2001:db8:a::fe/64"]
[[interface]]
name = "port1"
addresses = ["2001:db8:1::1/64"]
[[neighbor]]
interface = "port1"
address = "2001:db8:1::2"
mac = "02:00:00:00:00:02"
"""


# Both families: IPv6 from port0, IPv4 and IPv6 neighbours on port1.
MPLS6_CFG = ROUTER6_CFG.replace('addresses = ["2001:db8:1::1/64"]',
                                'addresses = ["2001:db8:1::1/64", "192.0.2.1/30"]') + """[[neighbor]]
interface = "port1"
address = "192.0.2.2"
mac = "02:00:00:00:00:02"
"""


OVS_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
SRC_MAC, GW_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"


def mpls_setup(mode):
    """(our config's routing part, [(peer name, OVS flows)], pcap kind, prefixes)."""
    rw = f"mod_dl_src:{SRC_MAC},mod_dl_dst:{GW_MAC},output:2"
    gw = '{ gateway = "192.0.2.2", interface = "port1"'
    routes16 = "".join(f'[[route]]\nprefix = "198.18.{n}.0/24"\nvia = [{gw} }}]\n' for n in range(16))
    if mode == "mpls-swap":
        ours = f"[[label]]\nlabel = 100\nvia = [{gw}, out_labels = [200] }}]\n"
        flows = [("OVS swap", [f"in_port=1,mpls,mpls_label=100,mpls_bos=1,actions=set_field:200->mpls_label,dec_mpls_ttl,{rw}"])]
        return ours, flows, "mpls", 0
    if mode == "mpls-push":
        ours = "".join(f'[[route]]\nprefix = "198.18.{n}.0/24"\nvia = [{gw}, out_labels = [{100 + n}] }}]\n'
                       for n in range(16))
        flows = [("OVS push", [f"in_port=1,ip,nw_dst=198.18.{n}.0/24,actions=dec_ttl,push_mpls:0x8847,"
                               f"set_field:{100 + n}->mpls_label,{rw}" for n in range(16)])]
        return ours, flows, "ipv4", 0
    if mode == "mpls-pop":
        ours = routes16 + '[[label]]\nlabel = 100\naction = "ip4-lookup"\n'
        plain = [f"in_port=1,mpls,mpls_label=100,mpls_bos=1,actions=pop_mpls:0x0800,{rw}"]
        recirc = ["table=0,in_port=1,mpls,mpls_label=100,mpls_bos=1,actions=pop_mpls:0x0800,resubmit(,1)"] + [
            f"table=1,ip,nw_dst=198.18.{n}.0/24,actions=dec_ttl,{rw}" for n in range(16)]
        return ours, [("OVS pop_mpls, no lookup", plain), ("OVS pop_mpls + lookup (recirculation)", recirc)], "mpls", 0
    # IPv6 (16 routes 2001:200:0:N::/64, frames to the first): 6PE's push over
    # an IPv4 neighbour and a pop into an IPv6 lookup.
    if mode == "mpls-push6":
        ours = "".join(f'[[route]]\nprefix = "2001:200:0:{n:x}::/64"\nvia = [{gw}, out_labels = [{100 + n}] }}]\n'
                       for n in range(16))
        flows = [("OVS push", [f"in_port=1,ipv6,ipv6_dst=2001:200:0:{n:x}::/64,actions=dec_ttl,push_mpls:0x8847,"
                               f"set_field:{100 + n}->mpls_label,{rw}" for n in range(16)])]
        return ours, flows, "ipv6", 0
    if mode == "mpls-pop6":
        gw6 = '{ gateway = "2001:db8:1::2", interface = "port1"'
        ours = "".join(f'[[route]]\nprefix = "2001:200:0:{n:x}::/64"\nvia = [{gw6} }}]\n' for n in range(16))
        ours += '[[label]]\nlabel = 100\naction = "ip6-lookup"\n'
        plain = [f"in_port=1,mpls,mpls_label=100,mpls_bos=1,actions=pop_mpls:0x86dd,{rw}"]
        recirc = ["table=0,in_port=1,mpls,mpls_label=100,mpls_bos=1,actions=pop_mpls:0x86dd,resubmit(,1)"] + [
            f"table=1,ipv6,ipv6_dst=2001:200:0:{n:x}::/64,actions=dec_ttl,{rw}" for n in range(16)]
        return ours, [("OVS pop_mpls, no lookup", plain), ("OVS pop_mpls + lookup (recirculation)", recirc)], \
            "mpls6", 0
    if mode == "mpls-mix":
        ours = "".join(f'[[route]]\nprefix = "10.{n >> 8}.{n & 255}.0/24"\nvia = [{gw}, out_labels = [{1000 + n}] }}]\n'
                       for n in range(1024))
        flows = [("OVS push, 64k flows", [f"in_port=1,ip,nw_dst=10.{n >> 8}.{n & 255}.0/24,actions=dec_ttl,"
                                          f"push_mpls:0x8847,set_field:{1000 + n}->mpls_label,{rw}"
                                          for n in range(1024)])]
        return ours, flows, "ipv4", 1024
    sys.exit(f"unknown mode {mode}")


class Ovs:
    """A private Open vSwitch with DPDK in `d`: ovsdb-server, ovs-vswitchd-dpdk
    (main thread CPU 0, PMD thread CPU 1), bridge br0 (netdev datapath) with
    p0 = net_pcap replaying `pcap` (OpenFlow port 1) and p1 = net_null (port 2)."""

    def __init__(self, d, pcap, flows):
        if not os.path.exists(OVS_VSWITCHD):
            sys.exit(f"{OVS_VSWITCHD} missing: run scripts/setup.sh (openvswitch-switch-dpdk)")
        subprocess.run(["rm", "-rf", d])
        os.makedirs(d)
        self.d = d
        self.env = dict(os.environ, OVS_RUNDIR=d, OVS_DBDIR=d, OVS_LOGDIR=d, OVS_SYSCONFDIR=d)
        self.run("ovsdb-tool", "create", f"{d}/conf.db", OVS_SCHEMA)
        self.run("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock", f"--pidfile={d}/ovsdb-server.pid",
                 "--detach", f"--log-file={d}/ovsdb-server.log", f"--unixctl={d}/ovsdb-server.ctl")
        self.vsctl("--no-wait", "init")
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                   "other_config:dpdk-lcore-mask=0x1", "other_config:pmd-cpu-mask=0x2",
                   'other_config:dpdk-extra="--no-pci --in-memory --log-level=*:error"')
        self.run(OVS_VSWITCHD, f"unix:{d}/db.sock", f"--pidfile={d}/ovs-vswitchd.pid", "--detach",
                 f"--log-file={d}/ovs-vswitchd.log", f"--unixctl={d}/ovs-vswitchd.ctl")
        self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
                   "--", "add-port", "br0", "p0", "--", "set", "Interface", "p0", "type=dpdk",
                   f"options:dpdk-devargs=net_pcap0,rx_pcap={pcap},infinite_rx=1", "ofport_request=1",
                   "--", "add-port", "br0", "p1", "--", "set", "Interface", "p1", "type=dpdk",
                   "options:dpdk-devargs=net_null0,no-rx=1", "ofport_request=2")
        with open(f"{d}/flows.txt", "w") as f:
            f.write("\n".join(flows) + "\n")
        self.run("ovs-ofctl", "del-flows", "br0")
        self.run("ovs-ofctl", "add-flows", "br0", f"{d}/flows.txt")

    def run(self, *args):
        out = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            log = ""
            if os.path.exists(f"{self.d}/ovs-vswitchd.log"):
                with open(f"{self.d}/ovs-vswitchd.log") as f:
                    log = f.read()[-3000:]
            self.close()
            sys.exit(f"{' '.join(args)} failed: {out.stderr.strip()}\n{log}")
        return out.stdout

    def vsctl(self, *args):
        return self.run("ovs-vsctl", f"--db=unix:{self.d}/db.sock", "--timeout=60", *args)

    def appctl(self, *args):
        return self.run("ovs-appctl", "-t", f"{self.d}/ovs-vswitchd.ctl", *args)

    def tx(self):
        out = self.run("ovs-ofctl", "dump-ports", "br0", "2")
        m = re.search(r"tx pkts=(\d+)", out)
        return int(m.group(1)) if m else None

    def measure(self, seconds):
        """(Mpps median of per-second samples, PMD cycles/packet, pmd-stats text)."""
        time.sleep(3)
        self.appctl("dpif-netdev/pmd-stats-clear")
        rates = []
        a, ta = self.tx(), time.monotonic()
        for _ in range(seconds):
            time.sleep(1)
            b, tb = self.tx(), time.monotonic()
            if a is not None and b is not None:
                rates.append((b - a) / (tb - ta) / 1e6)
            a, ta = b, tb
        stats = self.appctl("dpif-netdev/pmd-stats-show")
        m = re.search(r"avg cycles per packet:\s*([\d.]+)", stats)
        return statistics.median(rates[1:] or rates), float(m.group(1)) if m else float("nan"), stats

    def close(self):
        for name in ("ovs-vswitchd", "ovsdb-server"):
            pidfile = f"{self.d}/{name}.pid"
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.1)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def report(a, outdir, table, runs, load, peer=""):
    """Prints `table` with how it was measured and writes both to target/bench-io/MODE.md."""
    note = (f"\nmedians of {a.rounds} alternating rounds of {a.seconds} s (per-round Mpps: {runs}); {peer}"
            f"load average at start {load:.2f}; command: `scripts/bench-io.py --mode {a.mode} "
            f"--rounds {a.rounds} --seconds {a.seconds}`\n")
    emit(outdir, f"{a.mode}.md", table + note)


def emit(outdir, name, text):
    """Prints `text` and writes it to target/bench-io/NAME."""
    print(text)
    with open(os.path.join(outdir, name), "w") as f:
        f.write(text)


CG_HEAD = ("| program | pcap rx | null tx | other (TLS, libc) | own work | total |\n"
           "|---|---:|---:|---:|---:|---:|\n")


def cg_row(name, parts, pkts):
    """A row of CG_HEAD: `parts` (callgrind_split) per packet."""
    per = {k: v / pkts for k, v in parts.items()}
    return (f"| {name} | {per['pcap rx']:.1f} | {per['null tx']:.1f} | {per['other']:.1f} "
            f"| **{per['own']:.1f}** | {sum(per.values()):.1f} |\n")


def peer_table(what, ours, peers, size=64):
    """The table of our rounds against each (name, rounds) of `peers` (medians of
    (Mpps, cycles/pkt) each), and the per-round Mpps for the note."""
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    o_mpps, o_cpp = med(ours, 0), med(ours, 1)
    table = ("| path | dataplaned Mpps | cycles/pkt | peer | peer Mpps | peer cycles/pkt | ratio |\n"
             "|---|---|---|---|---|---|---|\n")
    runs = ", ".join(f"{x[0]:.2f}" for x in ours)
    for name, xs in peers:
        p_mpps, p_cpp = med(xs, 0), med(xs, 1)
        table += (f"| {what}, {size} B, net_pcap -> net_null, 1 core | {o_mpps:.2f} | {o_cpp:.1f} | {name} "
                  f"| {p_mpps:.2f} | {p_cpp:.1f} | {o_mpps / p_mpps:.3f} |\n")
        runs += f" vs {name} " + ", ".join(f"{x[0]:.2f}" for x in xs)
    return table, runs


def run_ovs(outdir, pcap, flows, seconds):
    ovs = Ovs(os.path.join(outdir, "ovs"), pcap, flows)
    try:
        mpps, cpp, stats = ovs.measure(seconds)
    finally:
        ovs.close()
    pmd = stats.split("main thread:")[0]
    hits = {k: int(v) for k, v in re.findall(r"(emc hits|megaflow hits|packet recirculations|packets received):\s*(\d+)", pmd)}
    return mpps, cpp, hits


def mpls_main(a, cfg, outdir, load, pcap):
    """Rounds of ours against each OVS variant, alternating; ratios of the medians."""
    ours_cfg, peers, _, _ = mpls_setup(a.mode)
    with open(cfg, "a") as f:
        f.write(ours_cfg)
    if a.callgrind:
        return mpls_callgrind(a, cfg, outdir)
    ours, theirs = [], [[] for _ in peers]
    for r in range(a.rounds):
        ours.append(run_ours(a.binary, cfg, a.seconds))
        line = f"round {r + 1}: dataplaned {ours[-1][0]:.2f} Mpps {ours[-1][1]:.1f} cyc/pkt"
        for k, (name, flows) in enumerate(peers):
            theirs[k].append(run_ovs(outdir, pcap, flows, a.seconds))
            mpps, cpp, hits = theirs[k][-1]
            rx = max(hits.get("packets received", 0), 1)
            recirc = hits.get("packet recirculations", 0)
            line += (f" | {name} {mpps:.2f} Mpps {cpp:.1f} cyc/pkt (EMC hits {hits.get('emc hits', 0) / (rx + recirc):.0%}"
                     f" of lookups, recirculations {recirc / rx:.2f}/pkt)")
        print(line, flush=True)
    what = {"mpls-swap": "MPLS swap", "mpls-push": "MPLS push (IPv4 lookup, 16 routes)",
            "mpls-pop": "MPLS pop + IPv4 lookup (16 routes)",
            "mpls-mix": "MPLS push, 65,536 flows over 1,024 prefixes and labels",
            "mpls-push6": "MPLS push onto IPv6 (6PE, IPv6 lookup, 16 routes)",
            "mpls-pop6": "MPLS pop + IPv6 lookup (16 routes)"}[a.mode]
    size = 78 if a.mode in ("mpls-push6", "mpls-pop6") else 64
    table, runs = peer_table(what, ours, [(name, xs) for (name, _), xs in zip(peers, theirs)], size)
    version = subprocess.run([OVS_VSWITCHD, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    report(a, outdir, table, runs, load, f"peer: {version}; ")


def mpls_callgrind(a, cfg, outdir):
    """--mode mpls-* --callgrind: instructions per packet of dataplaned on the
    mode's configuration, by part (OVS does not run under valgrind)."""
    if not shutil.which("valgrind"):
        sys.exit("callgrind: valgrind missing: run scripts/setup.sh")
    with open(cfg) as f:
        text = f.read().replace('memory = "in-memory"', 'memory = "no-huge"')
    tag = a.mode
    cg_cfg = os.path.join(outdir, f"{tag}-cg.toml")
    with open(cg_cfg, "w") as f:
        f.write(text)
    path, out = callgrind_run([a.binary, "-c", cg_cfg, "--duration", str(a.seconds)],
                              "*RouterWorker::poll_once*", a.seconds, outdir, tag)
    pkts = tx_at_exit(out, "port1", "dataplaned")
    if pkts == 0:
        sys.exit("dataplaned: no packets forwarded under callgrind")
    table = CG_HEAD + cg_row(f"dataplaned {a.mode}", callgrind_split(path), pkts)
    note = (f"\ninstructions per packet (callgrind, inside the forwarding loop, {a.seconds} s, "
            f"{pkts:,} packets); command: `scripts/bench-io.py --mode {a.mode} --callgrind "
            f"--seconds {a.seconds}`\n")
    emit(outdir, f"{a.mode}-callgrind.md", table + note)


class Collector:
    """A UDP socket on loopback that counts the sFlow datagrams it drains."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.datagrams = 0
        self.stop = False
        self.thread = threading.Thread(target=self.drain, daemon=True)
        self.thread.start()

    def drain(self):
        while not self.stop:
            try:
                self.sock.recv(65536)
                self.datagrams += 1
            except socket.timeout:
                pass

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def sflow_cfg(base, rate, direction, port, max_samples=None):
    """`base` with sFlow sampling port0 at 1-in-`rate` towards `port` on loopback
    (and the export limit `max_samples`, when given)."""
    limit = "" if max_samples is None else f"max_samples_per_second = {max_samples}\n"
    return base + (f'[sflow]\ncollectors = ["127.0.0.1:{port}"]\n{limit}'
                   f'[[sflow.interface]]\nname = "port0"\nrate = {rate}\n'
                   f'direction = "{direction}"\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="xconnect")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--pcap")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/dataplaned"))
    ap.add_argument("--l3fwd", default=L3FWD)
    ap.add_argument("--sflow-rate", type=int, default=10)
    ap.add_argument("--sflow-direction", default="rx", choices=["rx", "tx", "both"])
    ap.add_argument("--sflow-max-samples", type=int)
    ap.add_argument("--callgrind", action="store_true")
    a = ap.parse_args()
    if a.callgrind and a.mode not in ("router", "router6") and not a.mode.startswith("mpls-"):
        sys.exit("--callgrind: with --mode router, router6 or an mpls mode only")
    outdir = os.path.join(ROOT, "target", "bench-io")
    os.makedirs(outdir, exist_ok=True)
    mpls = a.mode.startswith("mpls-")
    v6 = a.mode in ("router6", "router6-full", "mpls-push6", "mpls-pop6")
    full = a.mode in ("router-full", "router6-full")
    kind, prefixes = mpls_setup(a.mode)[2:] if mpls else ("ipv6" if v6 else "ipv4", 0)
    count = 65536 if prefixes else FULL_DSTS if full else 254
    # (78 bytes: the smallest UDP/IPv6 frame with a payload, as IPv6 benchmarks use)
    size = 78 if v6 else 64
    pcap = a.pcap or os.path.join(outdir, f"{kind}{'-mix' if prefixes else '-full' if full else ''}{size}.pcap")
    table = (read_rib6() if v6 else read_rib()) if full else []
    if not a.pcap:
        # destination MAC = net_pcap0's MAC, so the router's MAC check accepts the frames
        extra = ["--dsts", full_dsts(table, outdir)] if full else []
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts/mkpcap.py"), pcap, "--kind", kind,
                        "--count", str(count), "--size", str(size), "--dst-mac", "02:70:63:61:70:00",
                        "--prefixes", str(prefixes), *extra], check=True)
    cfg = os.path.join(outdir, f"{a.mode}.toml")
    with open(cfg, "w") as f:
        f.write(f"""[eal]
memory = "in-memory"
memory_mb = 512
[mempool]
mbufs = {131071 if count > 254 else 16383}
[workers]
cpus = [1]
idle_max_sleep_us = 0
[[port]]
name = "port0"
device = "net_pcap0,rx_pcap={pcap},infinite_rx=1"
[[port]]
name = "port1"
device = "net_null0,no-rx=1"
[control]
socket = "{outdir}/bench.sock"
""")
        if mpls and v6:
            f.write(MPLS6_CFG)
        elif mpls:
            f.write(ROUTER_CFG)
        elif v6:
            f.write(ROUTER6_CFG)
            # l3fwd's default IPv6 table: 2001:200:0:N::/64 -> port N, N = 0..15;
            # or the full table, every prefix via port1
            routes = [f"{net}/{plen}" for net, plen in table] or [
                f"2001:200:0:{n:x}::/64" for n in range(16)]
            for r in routes:
                f.write(f'[[route]]\nprefix = "{r}"\nvia = [{{ gateway = "2001:db8:1::2", interface = "port1" }}]\n')
        elif a.mode in ("router", "router-full", "sflow", "linux"):
            f.write(ROUTER_CFG)
            if a.mode == "linux":
                f.write(f'[linux]\nnetns = "{LINUX_NS}"\n')
            # l3fwd's default LPM table: 198.18.N.0/24 -> port N, N = 0..15; or the
            # full table, every prefix via port1 (l3fwd's rules say port 1)
            routes = [f"{net}/{plen}" for net, plen in table] or [f"198.18.{n}.0/24" for n in range(16)]
            for r in routes:
                f.write(f'[[route]]\nprefix = "{r}"\nvia = [{{ gateway = "192.0.2.2", interface = "port1" }}]\n')
        else:
            f.write('[forwarding]\nmode = "xconnect"\n')
    rules = []
    if full:
        if a.l3fwd == L3FWD:
            a.l3fwd = L3FWD_FULL
        if not os.path.exists(a.l3fwd):
            subprocess.run([os.path.join(ROOT, "scripts/build-l3fwd.sh"), "--full-table"], check=True)
        # (l3fwd reads rule files only in pairs: its default table of the other family)
        defaults = os.path.dirname(os.path.dirname(a.l3fwd))
        mine = os.path.join(outdir, f"full-v{6 if v6 else 4}.cfg")
        with open(mine, "w") as f:
            for net, plen in table:
                f.write(f"R{net}/{plen} 1\n")
        if v6:
            rules = [f"--rule_ipv4={os.path.join(defaults, 'lpm_default_v4.cfg')}", f"--rule_ipv6={mine}"]
        else:
            rules = [f"--rule_ipv4={mine}", f"--rule_ipv6={os.path.join(defaults, 'lpm_default_v6.cfg')}"]
    elif a.mode in ("router", "router6") and not os.path.exists(a.l3fwd):
        subprocess.run([os.path.join(ROOT, "scripts/build-l3fwd.sh")], check=True)
    load = os.getloadavg()[0]
    if mpls:
        return mpls_main(a, cfg, outdir, load, pcap)
    if a.mode == "sflow":
        return sflow_main(a, cfg, outdir, load)
    if a.mode == "linux":
        return linux_main(a, cfg, outdir, load)
    if a.callgrind:
        return callgrind_main(a, cfg, outdir, pcap)
    ours, peer = [], []
    lookups = ["lpm", "fib"] if v6 else ["lpm"] if a.mode in ("router", "router-full") else []
    l3 = {k: [] for k in lookups}
    for r in range(a.rounds):
        ours.append(run_ours(a.binary, cfg, a.seconds))
        peer.append(run_testpmd(pcap, a.seconds))
        line = (f"round {r + 1}: dataplaned {ours[-1][0]:.2f} Mpps {ours[-1][1]:.1f} cyc/pkt | "
                f"testpmd io {peer[-1][0]:.2f} Mpps {peer[-1][1]:.1f} cyc/pkt")
        for k in lookups:
            l3[k].append(run_l3fwd(pcap, a.seconds, a.l3fwd, rules, k))
            line += f" | l3fwd {k} {l3[k][-1][0]:.2f} Mpps {l3[k][-1][1]:.1f} cyc/pkt"
        print(line, flush=True)
    what = {"xconnect": "xconnect", "router": "IPv4 routing, 16 routes",
            "router-full": f"IPv4 routing, {len(table):,} prefixes, {FULL_DSTS:,} destinations",
            "router6": "IPv6 routing, 16 routes",
            "router6-full": f"IPv6 routing, {len(table):,} prefixes, {FULL_DSTS:,} destinations"}[a.mode]
    table, runs = peer_table(what, ours, [("testpmd io", peer)] + [(f"l3fwd {k}", l3[k]) for k in lookups],
                             size)
    report(a, outdir, table, runs, load)


# Shared objects by the part of a packet's path their instructions are.
CG_PARTS = (("pcap rx", "librte_net_pcap"), ("null tx", "librte_net_null"))


def callgrind_run(cmd, toggle, seconds, outdir, tag, cwd=None, sigint=False):
    """Runs `cmd` under callgrind, collecting inside functions matching `toggle`;
    stops it after `seconds` with SIGINT when `sigint` (else it stops itself).
    Returns (its profile's path, its output)."""
    for f in glob.glob(os.path.join(outdir, f"cg.{tag}.*")):
        os.unlink(f)
    # (--fair-sched: valgrind runs one thread at a time, and without it a polling
    # worker can starve the main thread that is to stop it)
    vg = ["valgrind", "--tool=callgrind", "--fair-sched=yes", f"--callgrind-out-file={outdir}/cg.{tag}.%p",
          "--collect-atstart=no", f"--toggle-collect={toggle}"]
    p = subprocess.Popen(vg + cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         stdin=subprocess.DEVNULL, cwd=cwd)
    try:
        if sigint:
            time.sleep(seconds)
            p.send_signal(signal.SIGINT)
        text, _ = p.communicate(timeout=seconds + 300)
    except subprocess.TimeoutExpired:
        p.kill()
        text, _ = p.communicate()
    # (one file per process: the EAL's helpers collect nothing)
    files = sorted(glob.glob(os.path.join(outdir, f"cg.{tag}.*")), key=os.path.getsize)
    if not files:
        sys.exit(f"callgrind wrote no profile for {cmd[0]}:\n{text[-2000:]}")
    return files[-1], text


def callgrind_split(path):
    """Instructions of a profile by part: {'pcap rx', 'null tx', 'other', 'own'}."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    parts = dict.fromkeys(["pcap rx", "null tx", "other", "own"], 0)
    # Lines are `count (percent) file:function [object]`; a function's lines for
    # code inlined from other files name no object: it is the function's.
    entries, objs = [], {}
    for line in out.split("Auto-annotated source")[0].splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*?:(.*?)(?: \[(.*)\])?$", line)
        if not m:
            continue
        n, func = int(m.group(1).replace(",", "")), m.group(2)
        if m.group(3):
            objs[func] = os.path.basename(m.group(3))
        entries.append((n, func))
    for n, func in entries:
        obj = objs.get(func, "")
        part = next((k for k, sub in CG_PARTS if sub in obj), None)
        if part is None:
            # (the program itself is the one object that is not a shared library)
            part = "other" if ".so" in obj or not obj else "own"
        parts[part] += n
    return parts


def callgrind_calls_into(path, obj_sub):
    """Calls from other objects into functions of the shared object named like
    `obj_sub` (the PMD's rx or tx burst function)."""
    names, ob, cob, total = {}, None, None, 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "ob":
                    ob, cob = m.group(2), None
                else:
                    cob = m.group(2)
                continue
            if line.startswith("fn="):
                cob = None
                continue
            m = re.match(r"^calls=(\d+)", line)
            if m:
                callee, caller = names.get(cob or ob, ""), names.get(ob, "")
                if obj_sub in callee and obj_sub not in caller:
                    total += int(m.group(1))
                cob = None
    return total


def tx_at_exit(text, port, name):
    """`port`'s tx-pkts in the table dataplaned prints when it stops."""
    cols = None
    for line in text.splitlines():
        words = line.split()
        if "tx-pkts" in words:
            cols = words
        elif cols and words and words[0] == port and len(words) == len(cols):
            return int(words[cols.index("tx-pkts")])
    sys.exit(f"{name}: no tx count for {port} in its output:\n{text[-2000:]}")


def callgrind_main(a, cfg, outdir, pcap):
    """--mode router --callgrind: instructions per packet of dataplaned routing, its
    cross-connect and l3fwd, by part (see the module docs)."""
    if not shutil.which("valgrind"):
        sys.exit("callgrind: valgrind missing: run scripts/setup.sh")
    rows = []
    # (the router's config without hugepages, and the same ports cross-connected)
    with open(cfg) as f:
        router = f.read().replace('memory = "in-memory"', 'memory = "no-huge"')
    xconnect = router.split("[forwarding]")[0] + '[forwarding]\nmode = "xconnect"\n'
    for name, text, toggle in (("dataplaned xconnect", xconnect, "*XconnectWorker::run*"),
                               ("dataplaned router", router, "*RouterWorker::poll_once*")):
        tag = name.split()[1]
        cg_cfg = os.path.join(outdir, f"{tag}-cg.toml")
        with open(cg_cfg, "w") as f:
            f.write(text)
        path, text = callgrind_run([a.binary, "-c", cg_cfg, "--duration", str(a.seconds)], toggle,
                                   a.seconds, outdir, tag)
        rows.append((name, callgrind_split(path), tx_at_exit(text, "port1", name)))
    here = os.path.dirname(os.path.abspath(pcap))
    # (IPv6: l3fwd's both lookups, rte_lpm6 and rte_fib6)
    for lookup in ("lpm", "fib") if a.mode == "router6" else ("lpm",):
        cmd = [a.l3fwd, "-l", "1", "--no-pci", "--no-huge", "-m", "512", "--no-shconf", "--log-level=*:error",
               f"--vdev=net_pcap0,rx_pcap={os.path.basename(pcap)},infinite_rx=1", "--vdev=net_null0,no-rx=1",
               "--", "-p", "0x3", "-P", f"--lookup={lookup}", "--parse-ptype", "--config=(0,0,1),(1,0,1)"]
        path, text = callgrind_run(cmd, f"{lookup}_main_loop", a.seconds, outdir, f"l3fwd-{lookup}", cwd=here,
                                   sigint=True)
        rows.append((f"l3fwd {lookup}", callgrind_split(path), 32 * callgrind_calls_into(path, "librte_net_pcap")))
    table = CG_HEAD
    for name, parts, pkts in rows:
        if pkts == 0:
            sys.exit(f"{name}: no packets forwarded under callgrind")
        table += cg_row(name, parts, pkts)
    note = (f"\ninstructions per packet (callgrind, inside the forwarding loop, {a.seconds} s each, "
            f"{', '.join(f'{n}: {p:,} packets' for n, _, p in rows)}); command: "
            f"`scripts/bench-io.py --mode {a.mode} --callgrind --seconds {a.seconds}`\n")
    emit(outdir, f"{a.mode}-callgrind.md", table + note)


LINUX_NS = "dpbench-io"
L3FWD = os.path.join(ROOT, "target/l3fwd/l3fwd/build/l3fwd")
L3FWD_FULL = os.path.join(ROOT, "target/l3fwd-full/l3fwd/build/l3fwd")
RIB = os.environ.get("RIB_V4", os.path.join(ROOT, "..", "shared", "data", "prefixes-2024-v4v6.txt.gz"))
# Destinations of router-full's frames: l3fwd's mbuf pool (8,192) holds the
# replayed pcap and its rings.
FULL_DSTS = 4096


def read_rib():
    """(network, length) of every prefix of the table, host bits cleared."""
    table = []
    with gzip.open(RIB, "rt") as f:
        for line in f:
            if not line[0].isdigit():
                continue
            net, _, plen = line.split()[0].partition("/")
            try:
                a = [int(x) for x in net.split(".")]
                n = int(plen)
            except ValueError:
                continue
            if len(a) != 4 or not 0 <= n <= 32:
                continue
            v = (a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3]) & ((0xFFFFFFFF << (32 - n)) & 0xFFFFFFFF)
            table.append((".".join(str(v >> s & 255) for s in (24, 16, 8, 0)), n))
    if len(table) < 500_000:
        sys.exit(f"{RIB}: only {len(table)} prefixes")
    return table


RIB6 = os.environ.get("RIB_V6", os.path.join(ROOT, "..", "shared", "data", "prefixes-2024-v4v6.txt.gz"))


def read_rib6():
    """(network, length) of every IPv6 prefix of the table (lines with a ':')."""
    table = []
    with gzip.open(RIB6, "rt") as f:
        for line in f:
            w = line.split()
            if not w or ":" not in w[0]:
                continue
            try:
                n = ipaddress.IPv6Network(w[0], strict=False)
            except ValueError:
                continue
            table.append((str(n.network_address), n.prefixlen))
    if len(table) < 100_000:
        sys.exit(f"{RIB6}: only {len(table)} IPv6 prefixes")
    return table


def full_dsts(table, outdir):
    """Writes FULL_DSTS addresses, each in a prefix of `table` drawn at random
    (seeded; none in the ports' subnets), and returns the file's path."""
    rng = random.Random(4)
    path = os.path.join(outdir, "full-dsts.txt")
    if ":" in table[0][0]:
        with open(path, "w") as f:
            for _ in range(FULL_DSTS):
                net, plen = table[rng.randrange(len(table))]
                while net.startswith("2001:db8:"):
                    net, plen = table[rng.randrange(len(table))]
                v = int(ipaddress.IPv6Address(net)) | (rng.getrandbits(128 - plen) if plen < 128 else 0)
                f.write(f"{ipaddress.IPv6Address(v)}\n")
        return path
    with open(path, "w") as f:
        for _ in range(FULL_DSTS):
            net, plen = table[rng.randrange(len(table))]
            while net.startswith(("192.0.2.", "198.18.", "198.19.")):
                # (not into the ports' own subnets)
                net, plen = table[rng.randrange(len(table))]
            a = [int(x) for x in net.split(".")]
            v = a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3]
            v |= rng.getrandbits(32 - plen) if plen < 32 else 0
            f.write(".".join(str(v >> s & 255) for s in (24, 16, 8, 0)) + "\n")
    return path


def run_linux(a, cfg, outdir, busy):
    """One run with [linux]; with `busy`, route churn in the namespace meanwhile.
    Returns (Mpps, cycles/pkt, route changes applied per second)."""
    sock = os.path.join(outdir, "bench.sock")
    dpctl = os.path.join(os.path.dirname(a.binary), "dpctl")
    p = subprocess.Popen([a.binary, "-c", cfg, "--stats-interval-ms", "1000", "--stats-json",
                          "--duration", str(a.seconds + 3)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    changes, t_busy = 0, 0.0
    if busy:
        batches = []
        for verb in ("add", "del"):
            f = os.path.join(outdir, f"churn-{verb}.batch")
            with open(f, "w") as out:
                for i in range(50_000):
                    out.write(f"route {verb} 100.{64 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}/32 via 192.0.2.2\n")
            batches.append(f)
        time.sleep(3)
        t0 = time.monotonic()
        while p.poll() is None and time.monotonic() - t0 < a.seconds - 1:
            for f in batches:
                subprocess.run(["taskset", "-c", "0", "ip", "-n", LINUX_NS, "-batch", f],
                               capture_output=True)
                changes += 50_000
            subprocess.run(["taskset", "-c", "0", dpctl, "--socket", sock, "linux", "resync"],
                           capture_output=True)
        t_busy = time.monotonic() - t0
    out, err = p.communicate(timeout=a.seconds + 60)
    if p.returncode != 0:
        sys.exit(f"dataplaned failed:\n{err}")
    samples = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    samples = samples[3:] or samples
    mpps = statistics.median(s["tx_mpps"] for s in samples)
    cpp = statistics.median(s["cycles_per_pkt"] for s in samples)
    return mpps, cpp, (changes / t_busy if t_busy else 0.0)


def linux_main(a, cfg, outdir, load):
    idle, busy = [], []
    try:
        for r in range(a.rounds):
            idle.append(run_linux(a, cfg, outdir, False))
            busy.append(run_linux(a, cfg, outdir, True))
            print(f"round {r + 1}: idle {idle[-1][0]:.2f} Mpps | busy {busy[-1][0]:.2f} Mpps, "
                  f"{busy[-1][2]:,.0f} route changes/s", flush=True)
    finally:
        subprocess.run(["ip", "netns", "del", LINUX_NS], capture_output=True)
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    table = (
        "| path | control plane | dataplaned Mpps | cycles/pkt | route changes/s | ratio |\n"
        "|---|---|---|---|---|---|\n"
        f"| IPv4 routing with [linux], 64 B, net_pcap -> net_null, 1 core | idle | {med(idle, 0):.2f} | {med(idle, 1):.1f} | 0 | 1 |\n"
        f"| same | 50k-route churn + resyncs | {med(busy, 0):.2f} | {med(busy, 1):.1f} | {med(busy, 2):,.0f} | {med(busy, 0) / med(idle, 0):.3f} |\n"
    )
    note = (f"\nmedians of {a.rounds} alternating rounds of {a.seconds} s; load average at start {load:.2f}; "
            f"command: `scripts/bench-io.py --mode linux --rounds {a.rounds} --seconds {a.seconds}`\n")
    emit(outdir, "linux.md", table + note)


def sflow_main(a, cfg, outdir, load):
    """Rounds of sFlow off / on, alternating; the ratio of the medians."""
    with open(cfg) as f:
        base = f.read()
    col = Collector()
    on_cfg = os.path.join(outdir, "sflow-on.toml")
    with open(on_cfg, "w") as f:
        f.write(sflow_cfg(base, a.sflow_rate, a.sflow_direction, col.port, a.sflow_max_samples))
    off, on = [], []
    try:
        for r in range(a.rounds):
            off.append(run_ours(a.binary, cfg, a.seconds))
            before = col.datagrams
            on.append(run_ours(a.binary, on_cfg, a.seconds))
            got = col.datagrams - before
            print(f"round {r + 1}: sFlow off {off[-1][0]:.2f} Mpps {off[-1][1]:.1f} cyc/pkt | "
                  f"1:{a.sflow_rate} {a.sflow_direction} {on[-1][0]:.2f} Mpps {on[-1][1]:.1f} cyc/pkt "
                  f"({on[-1][0] / off[-1][0]:.3f}; {got} datagrams received)", flush=True)
    finally:
        col.close()
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    f_mpps, f_cpp, n_mpps, n_cpp = med(off, 0), med(off, 1), med(on, 0), med(on, 1)
    what = f"IPv4 routing, 16 routes, sFlow 1:{a.sflow_rate} {a.sflow_direction} on port0"
    table = (
        f"| path | sFlow on Mpps | cycles/pkt | sFlow off Mpps | cycles/pkt | ratio |\n"
        f"|---|---|---|---|---|---|\n"
        f"| {what}, 64 B, net_pcap -> net_null, 1 core | {n_mpps:.2f} | {n_cpp:.1f} | {f_mpps:.2f} | {f_cpp:.1f} | {n_mpps / f_mpps:.3f} |\n"
    )
    runs = ", ".join(f"{x[0]:.2f}" for x in on) + " vs off " + ", ".join(f"{x[0]:.2f}" for x in off)
    note = (f"\nmedians of {a.rounds} alternating rounds of {a.seconds} s (per-round Mpps: {runs}); "
            f"load average at start {load:.2f}; command: `scripts/bench-io.py --mode sflow "
            f"--sflow-rate {a.sflow_rate} --sflow-direction {a.sflow_direction} "
            + ("" if a.sflow_max_samples is None else f"--sflow-max-samples {a.sflow_max_samples} ")
            + f"--rounds {a.rounds} --seconds {a.seconds}`\n")
    emit(outdir, "sflow.md", table + note)


if __name__ == "__main__":
    main()
