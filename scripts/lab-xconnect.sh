#!/usr/bin/env bash
# The demo: two host network namespaces joined by one dataplaned over veth pairs
# (net_af_packet), a ping across it, then the router's counters.
#
#   host-a (10.99.1.1/24) --veth-- [port0  dataplaned  port1] --veth-- host-b (10.99.1.2/24)
#
# Run as root after scripts/setup.sh (`make lab` does both). Cleans up after itself,
# also when interrupted. Traffic stays inside the namespaces this script creates.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/release/dataplaned}
P=dplab                      # prefix of everything this script creates
WORK=$(mktemp -d /tmp/dplab.XXXXXX)
DP_PID=

teardown_net() {
    for s in a b; do
        ip link del "${P}-${s}0" 2>/dev/null || true
        ip netns del "${P}-host-${s}" 2>/dev/null || true
    done
    return 0
}
cleanup() {
    set +e
    if [ -n "$DP_PID" ] && kill -0 "$DP_PID" 2>/dev/null; then
        kill -INT "$DP_PID"; sleep 1; kill -0 "$DP_PID" 2>/dev/null && kill -KILL "$DP_PID"
    fi
    teardown_net
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

[ "$(id -u)" -eq 0 ] || { echo "lab: run as root (network namespaces)"; exit 1; }
[ -x "$BIN" ] || { echo "lab: $BIN missing: run 'cargo build --release -p ctl -p dpctl' (make lab does)"; exit 1; }
teardown_net   # leftovers of an interrupted run

echo "== topology: ${P}-host-a <-> dataplaned (xconnect) <-> ${P}-host-b"
i=1
for s in a b; do
    ip netns add "${P}-host-${s}"
    ip link add "${P}-${s}0" type veth peer name "${P}-${s}1"
    ip link set "${P}-${s}1" netns "${P}-host-${s}"
    sysctl -qw "net.ipv6.conf.${P}-${s}0.disable_ipv6=1"
    ip link set "${P}-${s}0" up
    ip -n "${P}-host-${s}" addr add "10.99.1.${i}/24" dev "${P}-${s}1"
    ip -n "${P}-host-${s}" link set "${P}-${s}1" up
    ip -n "${P}-host-${s}" link set lo up
    i=$((i + 1))
done

cat > "$WORK/dataplaned.toml" <<CFG
# dataplaned for the lab: one worker, adaptive polling so it shares 2 cores politely.
[eal]
memory = "auto"
memory_mb = 256

[mempool]
mbufs = 4095

[workers]
cpus = [1]

[[port]]
name = "port0"
device = "net_af_packet0,iface=${P}-a0"

[[port]]
name = "port1"
device = "net_af_packet1,iface=${P}-b0"

[forwarding]
mode = "xconnect"
pairs = [["port0", "port1"]]
CFG
echo "== config"; sed 's/^/   /' "$WORK/dataplaned.toml"

"$BIN" -c "$WORK/dataplaned.toml" > "$WORK/out.log" 2> "$WORK/err.log" &
DP_PID=$!
for _ in $(seq 100); do
    grep -q forwarding "$WORK/err.log" 2>/dev/null && break
    kill -0 "$DP_PID" 2>/dev/null || { cat "$WORK/err.log"; exit 1; }
    sleep 0.1
done
sed 's/^/   /' "$WORK/err.log"

echo "== ping host-a -> host-b through dataplaned"
ip netns exec "${P}-host-a" ping -c 5 -i 0.2 -W 2 10.99.1.2

echo "== stopping dataplaned (SIGINT) — its counters:"
kill -INT "$DP_PID"; wait "$DP_PID" || true; DP_PID=
sed 's/^/   /' "$WORK/out.log"
echo "== done"
