#!/usr/bin/env bash
# The MPLS lab of the seed article, reproduced with four dataplaned routers:
#
#   host-a --- r3 ===== r2 ===== r1 ===== r0 --- host-b
#   10.0.1.0   PE      P        P        PE     10.0.1.1
#
# LSP 100 runs westbound (r3 -> r0), LSP 103 eastbound (r0 -> r3), configured in the
# article's shape: the ingress PE routes the far host's /32 with an out-label, the P
# routers swap, the egress PE pops and looks up the IPv4 payload. A ping from host-a
# to host-b is captured on every link, in three modes:
#   1. plain LSPs (label 100/103 on every core link),
#   2. explicit null: the penultimate router swaps to label 0,
#   3. penultimate hop popping: the penultimate router swaps to implicit null (3), so
#      the last core link carries plain IPv4.
# Each link's label, S bit and TTL are printed and checked; then `show run` of a P
# router; then everything is torn down (also when interrupted).
#
# Label TTLs follow RFC 3032 §2.4.3: the ingress PE decrements the IP TTL (64 -> 63)
# and copies it into the label, so the three core links carry 63/62/61 where the
# article's VPP shows 64/63/62 (VPP copies the TTL before its own decrement, which
# hides the ingress PE from traceroute).
#
# Run as root after scripts/setup.sh and a release build (`make lab` does all).
# LAB_QUIET=1 prints only the checks. Exit status 0 only if every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/release/dataplaned}
P=dplab
WORK=$(mktemp -d /tmp/dplab.XXXXXX)
PIDS=()
FAILS=0
say() { [ -n "${LAB_QUIET:-}" ] || echo "$@"; }
. scripts/lab-common.sh

NS=(host-a r3 r2 r1 r0 host-b)
# links: left-ns left-if right-ns right-if
LINKS=(
  "host-a ha0 r3 r3e"
  "r3 r3w r2 r2e"
  "r2 r2w r1 r1e"
  "r1 r1w r0 r0e"
  "r0 r0w host-b hb0"
)

teardown() {
    set +e
    stop_pids INT "${PIDS[@]}"
    PIDS=()
    del_namespaces
}
cleanup() { teardown; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || { echo "lab: run as root (network namespaces)"; exit 1; }
[ -x "$BIN" ] || { echo "lab: $BIN missing: run 'cargo build --release -p ctl -p dpctl' (make lab does)"; exit 1; }
teardown   # leftovers of an interrupted run

say "== topology: host-a - r3 - r2 - r1 - r0 - host-b (namespaces $P-*)"
make_topology
# hosts (the article's host1-0 and host1-1)
in_ns host-a ip addr add 192.0.2.0/31 dev ha0
in_ns host-a ip addr add 10.0.1.0/32 dev lo
in_ns host-a ip route add 10.0.1.1/32 via 192.0.2.1 src 10.0.1.0
in_ns host-b ip addr add 192.0.2.2/31 dev hb0
in_ns host-b ip addr add 10.0.1.1/32 dev lo
in_ns host-b ip route add 10.0.1.0/32 via 192.0.2.3 src 10.0.1.1

# router  port0(west)  addr0              port1(east)  addr1              main/worker CPU
ROUTERS=(
  "r3 r3w 192.168.11.11/31 r3e 192.0.2.1/31     0 1"
  "r2 r2w 192.168.11.9/31  r2e 192.168.11.10/31 1 0"
  "r1 r1w 192.168.11.7/31  r1e 192.168.11.8/31  0 1"
  "r0 r0w 192.0.2.3/31     r0e 192.168.11.6/31  1 0"
)

DPCTL=${DPCTL:-$(dirname "$BIN")/dpctl}

# The LSPs, configured with dpctl in the article's own words (its GigabitEthernet10/0/0
# is our port0, westbound; 10/0/1 is port1, eastbound).
configure_lsps() {
    say "== LSP 100 westbound (r3 -> r0) and LSP 103 eastbound (r0 -> r3)"
    dp r3 ip route add 10.0.1.1/32 via 192.168.11.10 port0 out-labels 100
    dp r2 mpls local-label add 100 eos via 192.168.11.8 port0 out-labels 100
    dp r1 mpls local-label add 100 eos via 192.168.11.6 port0 out-labels 100
    dp r0 mpls local-label add 100 eos via ip4-lookup-in-table 0
    dp r0 ip route add 10.0.1.1/32 via 192.0.2.2
    dp r0 ip route add 10.0.1.0/32 via 192.168.11.7 port1 out-labels 103
    dp r1 mpls local-label add 103 eos via 192.168.11.9 port1 out-labels 103
    dp r2 mpls local-label add 103 eos via 192.168.11.11 port1 out-labels 103
    dp r3 mpls local-label add 103 eos via ip4-lookup-in-table 0
    dp r3 ip route add 10.0.1.0/32 via 192.0.2.0
}

# The penultimate hops (r1 for LSP 100, r2 for LSP 103) swap to `out` (0: explicit
# null, 3: implicit null = PHP) instead of what they had, as the article does: del + add.
penultimate() {
    local old_w=$1 old_e=$2 out=$3
    dp r1 mpls local-label del 100 eos via 192.168.11.6 port0 out-labels "$old_w"
    dp r1 mpls local-label add 100 eos via 192.168.11.6 port0 out-labels "$out"
    dp r2 mpls local-label del 103 eos via 192.168.11.11 port1 out-labels "$old_e"
    dp r2 mpls local-label add 103 eos via 192.168.11.11 port1 out-labels "$out"
}

start_routers() {
    for r in "${ROUTERS[@]}"; do
        read -r name p0 a0 p1 a1 mcpu wcpu <<< "$r"
        cat > "$WORK/$name.toml" <<CFG
# $name
[eal]
main_cpu = $mcpu
memory_mb = 64
[mempool]
mbufs = 2047
cache = 64
[workers]
cpus = [$wcpu]
# qdisc_bypass=0: the router's own transmissions go through the qdisc, so tcpdump
# on the router's side of a link sees both directions.
[[port]]
name = "port0"
device = "net_af_packet_${name}w,iface=$p0,qdisc_bypass=0"
[[port]]
name = "port1"
device = "net_af_packet_${name}e,iface=$p1,qdisc_bypass=0"
[control]
socket = "$WORK/$name.sock"
[forwarding]
mode = "router"
[router]
router_id = "${a0%/*}"
[[interface]]
name = "port0"
addresses = ["$a0"]
[[interface]]
name = "port1"
addresses = ["$a1"]
CFG
        # `ip netns exec` execs the program, so $! is the daemon itself.
        ip netns exec "$P-$name" "$BIN" -c "$WORK/$name.toml" > "$WORK/$name.out" 2> "$WORK/$name.err" &
        PIDS+=($!)
    done
    for r in "${ROUTERS[@]}"; do
        read -r name _ <<< "$r"
        for _ in $(seq 100); do
            grep -q forwarding "$WORK/$name.err" 2>/dev/null && break
            sleep 0.1
        done
        grep -q forwarding "$WORK/$name.err" || { echo "lab: $name did not start:"; cat "$WORK/$name.err"; exit 1; }
    done
}

stop_routers() {
    for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}

# Captures the ping on every link, then checks label/S/TTL per link and direction.
run_mode() {
    local mode=$1
    say ""
    say "==== mode: $mode"
    # warm up: ARP on every hop, in both directions, before the captures
    for _ in $(seq 20); do
        in_ns host-a ping -c 1 -W 1 -I 10.0.1.0 10.0.1.1 > /dev/null 2>&1 && break
    done
    capture "$mode" in_ns host-a ping -c 3 -i 0.3 -W 2 -I 10.0.1.0 10.0.1.1
    say "$CAPTURED" | tail -2
    if grep -q ' 0% packet loss' <<< "$CAPTURED"; then
        pass "$mode: host-a -> host-b ping, 0% loss"
    else
        fail "$mode: ping lost packets"
    fi
    # expected (request westbound | reply eastbound) per link: "L S TTL" or ipv4
    local exp
    case $mode in
        plain)         exp=("ipv4|ipv4" "100 S 63|103 S 61" "100 S 62|103 S 62" "100 S 61|103 S 63" "ipv4|ipv4") ;;
        explicit-null) exp=("ipv4|ipv4" "100 S 63|0 S 61"   "100 S 62|103 S 62" "0 S 61|103 S 63"   "ipv4|ipv4") ;;
        php)           exp=("ipv4|ipv4" "100 S 63|ipv4"     "100 S 62|103 S 62" "ipv4|103 S 63"     "ipv4|ipv4") ;;
    esac
    check_carried "$mode" "${exp[@]}"
}

start_routers
configure_lsps
run_mode plain
# traceroute through the LSPs: the P routers answer TTL expiry with ICMP time exceeded
# carrying the RFC 4950 label stack, sent on along the LSP to the egress PE.
say ""
say "==== traceroute host-a -> host-b (plain LSPs)"
tr=$(in_ns host-a traceroute -n -q 1 -N 1 -w 2 -s 10.0.1.0 10.0.1.1 2>&1 || true)
say "$tr" | sed 's/^/   /'
hops=$(awk 'NR > 1 { print $2 }' <<< "$tr" | paste -sd' ')
want="192.0.2.1 192.168.11.10 192.168.11.8 192.168.11.6 10.0.1.1"
if [ "$hops" = "$want" ]; then
    pass "traceroute: every hop answers ($hops)"
else
    fail "traceroute: hops [$hops] want [$want]"
fi
say ""
say "==== show run of P router r2 (plain LSPs)"
[ -n "${LAB_QUIET:-}" ] || "$DPCTL" --socket "$WORK/r2.sock" show run | sed 's/^/   /'
say ""
say "== explicit null on the last core link"
penultimate 100 103 0
run_mode explicit-null
say ""
say "== penultimate hop popping (implicit null) on the last core link"
penultimate 0 0 3
run_mode php
stop_routers
echo ""
if [ "$FAILS" -eq 0 ]; then echo "lab: all checks passed"; else echo "lab: $FAILS check(s) failed"; exit 1; fi
