#!/usr/bin/env python3
"""I/O benchmark: dataplaned against dpdk-testpmd on the same vdevs, same run.

Both forward 64-byte frames from net_pcap (infinite_rx: the file replays forever)
to net_null (no-rx: a pure sink) on one pinned core (CPU 1), with a polling worker
that never sleeps. Each side runs ROUNDS times, alternating, for SECONDS each; the
rate is the median of the per-second samples after a warm-up of two samples.

    scripts/bench-io.py [--mode xconnect] [--rounds 3] [--seconds 10] [--pcap FILE]

Prints a table (Mpps, TSC cycles/packet, ratio) and writes it to
target/bench-io/<mode>.md. Needs root and hugepages (scripts/setup.sh).
"""
import argparse
import json
import os
import re
import signal
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="xconnect")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--pcap")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/dataplaned"))
    a = ap.parse_args()
    outdir = os.path.join(ROOT, "target", "bench-io")
    os.makedirs(outdir, exist_ok=True)
    pcap = a.pcap or os.path.join(outdir, "ip64.pcap")
    if not a.pcap:
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts/mkpcap.py"), pcap, "--kind", "ipv4",
                        "--count", "254", "--size", "64"], check=True)
    cfg = os.path.join(outdir, f"{a.mode}.toml")
    with open(cfg, "w") as f:
        f.write(f"""[eal]
memory = "in-memory"
memory_mb = 512
[mempool]
mbufs = 16383
[workers]
cpus = [1]
idle_max_sleep_us = 0
[[port]]
name = "port0"
device = "net_pcap0,rx_pcap={pcap},infinite_rx=1"
[[port]]
name = "port1"
device = "net_null0,no-rx=1"
[forwarding]
mode = "{a.mode}"
""")
    load = os.getloadavg()[0]
    ours, peer = [], []
    for r in range(a.rounds):
        ours.append(run_ours(a.binary, cfg, a.seconds))
        peer.append(run_testpmd(pcap, a.seconds))
        print(f"round {r + 1}: dataplaned {ours[-1][0]:.2f} Mpps {ours[-1][1]:.1f} cyc/pkt | "
              f"testpmd io {peer[-1][0]:.2f} Mpps {peer[-1][1]:.1f} cyc/pkt", flush=True)
    o_mpps = statistics.median(x[0] for x in ours)
    o_cpp = statistics.median(x[1] for x in ours)
    p_mpps = statistics.median(x[0] for x in peer)
    p_cpp = statistics.median(x[1] for x in peer)
    table = (
        f"| path | dataplaned Mpps | cycles/pkt | testpmd io Mpps | cycles/pkt | ratio |\n"
        f"|---|---|---|---|---|---|\n"
        f"| {a.mode}, 64 B, net_pcap -> net_null, 1 core | {o_mpps:.2f} | {o_cpp:.1f} | {p_mpps:.2f} | {p_cpp:.1f} | {o_mpps / p_mpps:.3f} |\n"
    )
    runs = ", ".join(f"{x[0]:.2f}" for x in ours) + " vs " + ", ".join(f"{x[0]:.2f}" for x in peer)
    note = (f"\nmedians of {a.rounds} alternating rounds of {a.seconds} s (per-round Mpps: {runs}); "
            f"load average at start {load:.2f}; command: `scripts/bench-io.py --mode {a.mode} "
            f"--rounds {a.rounds} --seconds {a.seconds}`\n")
    print(table + note)
    with open(os.path.join(outdir, f"{a.mode}.md"), "w") as f:
        f.write(table + note)


if __name__ == "__main__":
    main()
