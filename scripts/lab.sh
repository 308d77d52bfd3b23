#!/usr/bin/env bash
# The MPLS lab of the seed article, reproduced with four dataplaned routers:
#
#   host-a --- r3 ===== r2 ===== r1 ===== r0 --- host-b
#   10.0.1.0   PE      P        P        PE     10.0.1.1
#   2001:db8:a::2                                2001:db8:b::2
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
# IPv6 crosses the same IPv4-only core by 6PE (RFC 4798): the hosts and the PEs'
# host-facing interfaces have IPv6 addresses, the core none. Each PE routes the
# far host's IPv6 prefix via the far PE's IPv4 address written ::ffff:a.b.c.d
# with the 6PE label that PE gave (r0's 600, r3's 603, both popped into an IPv6
# lookup), so the LSP's label goes on top of it; the hosts' IPv6 loopbacks are
# routed with label 2 (IPv6 explicit null, which RFC 4798 lets the egress PE
# advertise). In each mode the IPv6 pings are captured with the IPv4 one and
# each link's label stack, label TTLs and IPv6 hop limit checked: explicit null
# swaps the transport label to 0 over the 6PE label (label 2 is for an IPv6
# payload right under it), PHP leaves only the 6PE label on the last core link.
# In each mode traceroute6 shows every hop: the P routers, which have no IPv6
# address, answer from their receiving interface's IPv4 address IPv4-mapped,
# their ICMPv6 time exceeded carrying the RFC 4950 label stack (decoded by
# tshark).
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
cleanup() { teardown; [ -n "${LAB_KEEP:-}" ] || rm -rf "$WORK"; }
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
# IPv6 hosts behind the PEs: a link /64 and a loopback /128 each
ipv6_on host-a
in_ns host-a ip addr add 2001:db8:a::2/64 dev ha0 nodad
in_ns host-a ip addr add 2001:db8:1::a/128 dev lo nodad
in_ns host-a ip route add 2001:db8::/32 via 2001:db8:a::1
ipv6_on host-b
in_ns host-b ip addr add 2001:db8:b::2/64 dev hb0 nodad
in_ns host-b ip addr add 2001:db8:1::b/128 dev lo nodad
in_ns host-b ip route add 2001:db8::/32 via 2001:db8:b::1

# router  port0(west)  addrs0 (comma-separated)        port1(east)  addrs1   main/worker CPU
ROUTERS=(
  "r3 r3w 192.168.11.11/31                r3e 192.0.2.1/31,2001:db8:a::1/64 0 1"
  "r2 r2w 192.168.11.9/31                 r2e 192.168.11.10/31              1 0"
  "r1 r1w 192.168.11.7/31                 r1e 192.168.11.8/31               0 1"
  "r0 r0w 192.0.2.3/31,2001:db8:b::1/64   r0e 192.168.11.6/31               1 0"
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

# 6PE over the same LSPs: the PEs' addresses 192.0.2.1 (r3) and 192.0.2.3 (r0)
# join the LSPs' FECs, the LSPs get entries for a label under theirs (non-eos),
# and each PE routes the far host's IPv6 prefixes via the far PE's address with
# that PE's 6PE label: 600 (r0) and 603 (r3) pop into IPv6; label 2 for the
# loopbacks.
configure_6pe() {
    say "== 6PE: IPv6 over LSPs 100 and 103 (6PE labels 600 at r0, 603 at r3; 2 for the loopbacks)"
    dp r3 route add 192.0.2.3/32 via 192.168.11.10 port0 out-labels 100
    dp r2 label add 100 non-eos via 192.168.11.8 port0 out-labels 100
    dp r1 label add 100 non-eos via 192.168.11.6 port0 out-labels 100
    dp r0 label add 100 non-eos pop
    dp r0 route add 192.0.2.1/32 via 192.168.11.7 port1 out-labels 103
    dp r1 label add 103 non-eos via 192.168.11.9 port1 out-labels 103
    dp r2 label add 103 non-eos via 192.168.11.11 port1 out-labels 103
    dp r3 label add 103 non-eos pop
    dp r0 label add 600 eos via ip6-lookup
    dp r3 label add 603 eos via ip6-lookup
    dp r3 route add 2001:db8:b::/64 via ::ffff:192.0.2.3 out-labels 600
    dp r3 route add 2001:db8:1::b/128 via ::ffff:192.0.2.3 out-labels 2
    dp r3 route add 2001:db8:1::a/128 via 2001:db8:a::2 port1
    dp r0 route add 2001:db8:a::/64 via ::ffff:192.0.2.1 out-labels 603
    dp r0 route add 2001:db8:1::a/128 via ::ffff:192.0.2.1 out-labels 2
    dp r0 route add 2001:db8:1::b/128 via 2001:db8:b::2 port0
}

# The penultimate hops (r1 for LSP 100, r2 for LSP 103) swap to `out` (0: explicit
# null, 3: implicit null = PHP) instead of what they had, as the article does: del + add.
penultimate() {
    local old_w=$1 old_e=$2 out=$3
    dp r1 mpls local-label del 100 eos via 192.168.11.6 port0 out-labels "$old_w"
    dp r1 mpls local-label add 100 eos via 192.168.11.6 port0 out-labels "$out"
    dp r2 mpls local-label del 103 eos via 192.168.11.11 port1 out-labels "$old_e"
    dp r2 mpls local-label add 103 eos via 192.168.11.11 port1 out-labels "$out"
    dp r1 label replace 100 non-eos via 192.168.11.6 port0 out-labels "$out"
    dp r2 label replace 103 non-eos via 192.168.11.11 port1 out-labels "$out"
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
router_id = "${a0%%/*}"
[[interface]]
name = "port0"
addresses = ["${a0//,/\", \"}"]
[[interface]]
name = "port1"
addresses = ["${a1//,/\", \"}"]
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

# The pings of a mode, at once: IPv4 host to host, IPv6 host to host (6PE label)
# and IPv6 loopback to loopback (label 2); each one's loss line, tagged.
pings() {
    { in_ns host-a ping -c 3 -i 0.3 -W 2 -I 10.0.1.0 10.0.1.1 | sed -n 's/.*packet loss.*/ipv4: &/p'; } &
    { in_ns host-a ping -c 3 -i 0.3 -W 2 2001:db8:b::2 | sed -n 's/.*packet loss.*/6pe: &/p'; } &
    { in_ns host-a ping -c 3 -i 0.3 -W 2 -I 2001:db8:1::a 2001:db8:1::b | sed -n 's/.*packet loss.*/label-2: &/p'; } &
    wait
}

# Pings $1 from host-a (ping options $2...) until it answers (neighbours on
# every hop), 20 tries at most.
warm() {
    for _ in $(seq 20); do
        in_ns host-a ping -c 1 -W 1 "${@:2}" "$1" > /dev/null 2>&1 && return 0
    done
    return 0
}

# Captures the pings on every link, then checks label/S/TTL (and the IPv6 hop
# limit) per link and direction.
run_mode() {
    local mode=$1 kind
    say ""
    say "==== mode: $mode"
    # warm up: ARP and neighbour discovery on every hop, in both directions
    warm 10.0.1.1 -I 10.0.1.0
    warm 2001:db8:b::2
    capture "$mode" pings
    say "$CAPTURED"
    for kind in ipv4 6pe label-2; do
        if grep -q "^$kind: .* 0% packet loss" <<< "$CAPTURED"; then
            pass "$mode: host-a -> host-b ping ($kind), 0% loss"
        else
            fail "$mode: ping ($kind) lost packets"
        fi
    done
    # expected (request westbound | reply eastbound) per link: "L S TTL" or ipv4
    local exp
    case $mode in
        plain)         exp=("ipv4|ipv4" "100 S 63|103 S 61" "100 S 62|103 S 62" "100 S 61|103 S 63" "ipv4|ipv4") ;;
        explicit-null) exp=("ipv4|ipv4" "100 S 63|0 S 61"   "100 S 62|103 S 62" "0 S 61|103 S 63"   "ipv4|ipv4") ;;
        php)           exp=("ipv4|ipv4" "100 S 63|ipv4"     "100 S 62|103 S 62" "ipv4|103 S 63"     "ipv4|ipv4") ;;
    esac
    check_carried "$mode" "${exp[@]}"
    # IPv6, per link interface: "label:TTL ... hl HOP-LIMIT" (S on the bottom
    # label) or "ipv6 hl HOP-LIMIT". The ingress PE decrements the hop limit and
    # copies it into both labels; the egress PE pops the labels, the top one's
    # TTL going down the stack into the hop limit, then routes (with PHP the
    # penultimate router copies the transport label's TTL into the 6PE label).
    local exp6
    case $mode in
        plain)         exp6=("ha0 ipv6 hl 64|ipv6 hl 60" "r3w 100:63 600:S:63 hl 63|103:61 603:S:63 hl 63"
                             "r2w 100:62 600:S:63 hl 63|103:62 603:S:63 hl 63"
                             "r1w 100:61 600:S:63 hl 63|103:63 603:S:63 hl 63" "r0w ipv6 hl 60|ipv6 hl 64") ;;
        explicit-null) exp6=("ha0 ipv6 hl 64|ipv6 hl 60" "r3w 100:63 600:S:63 hl 63|0:61 603:S:63 hl 63"
                             "r2w 100:62 600:S:63 hl 63|103:62 603:S:63 hl 63"
                             "r1w 0:61 600:S:63 hl 63|103:63 603:S:63 hl 63" "r0w ipv6 hl 60|ipv6 hl 64") ;;
        php)           exp6=("ha0 ipv6 hl 64|ipv6 hl 60" "r3w 100:63 600:S:63 hl 63|603:S:61 hl 63"
                             "r2w 100:62 600:S:63 hl 63|103:62 603:S:63 hl 63"
                             "r1w 600:S:61 hl 63|103:63 603:S:63 hl 63" "r0w ipv6 hl 60|ipv6 hl 64") ;;
    esac
    NAME="$mode 6pe" REQ='> 2001:db8:b::2: .*echo request' REP='> 2001:db8:a::2: .*echo reply' \
        check_stacks "$mode" "${exp6[@]}"
    # the loopbacks' routes: label 2 where the 6PE label was
    NAME="$mode label-2" REQ='> 2001:db8:1::b: .*echo request' REP='> 2001:db8:1::a: .*echo reply' \
        check_stacks "$mode" "${exp6[@]//60[03]:/2:}"
}

# traceroute6 from host-a to host-b, its answers captured on every link; checks
# the hops and the RFC 4950 stacks of their time exceeded as host-a got them.
trace6() {
    local mode=$1 stacks want
    say ""
    say "==== traceroute6 host-a -> host-b ($mode, 6PE), its answers captured"
    capture "trace6-$mode" in_ns host-a traceroute6 -n -q 1 -N 1 -w 2 2001:db8:b::2
    say "$CAPTURED" | sed 's/^/   /'
    # r3 from its IPv6 interface; the P routers r2 and r1, and r0 where the hop
    # limit runs out after its pop, from their receiving core interfaces' IPv4
    # addresses IPv4-mapped (the core has no IPv6 address). The P routers' answers
    # go on along LSP 100 to r0 and come back over LSP 103, through the mode's
    # penultimate hops.
    want="2001:db8:a::1 ::ffff:192.168.11.10 ::ffff:192.168.11.8 ::ffff:192.168.11.6 2001:db8:b::2"
    check_hops "$mode traceroute6: every hop answers" "$CAPTURED" "$want"
    # The P routers quote the stack the probe arrived with (the ingress PE
    # copied the hop limit into both labels); r0 answers once both labels are
    # off, as for IPv4: no stack.
    stacks=$(rfc4950_stacks "$WORK/trace6-$mode-ha0.pcap")
    say "   time exceeded: $stacks"
    want="2001:db8:a::1;::ffff:192.168.11.10 100:1 600:S:1;::ffff:192.168.11.8 100:1 600:S:2;::ffff:192.168.11.6"
    if [ "$stacks" = "$want" ]; then
        pass "$mode traceroute6: RFC 4950 label stacks from the LSP's hops [$stacks]"
    else
        fail "$mode traceroute6: time exceeded [$stacks] want [$want]"
    fi
}

start_routers
configure_lsps
configure_6pe
run_mode plain
# traceroute through the LSPs: the P routers answer TTL expiry with ICMP time exceeded
# carrying the RFC 4950 label stack, sent on along the LSP to the egress PE.
say ""
say "==== traceroute host-a -> host-b (plain LSPs)"
tr=$(in_ns host-a traceroute -n -q 1 -N 1 -w 2 -s 10.0.1.0 10.0.1.1 2>&1 || true)
say "$tr" | sed 's/^/   /'
check_hops "traceroute: every hop answers" "$tr" \
    "192.0.2.1 192.168.11.10 192.168.11.8 192.168.11.6 10.0.1.1"
say ""
trace6 plain
say ""
say "==== show run of P router r2 (plain LSPs)"
[ -n "${LAB_QUIET:-}" ] || "$DPCTL" --socket "$WORK/r2.sock" show run | sed 's/^/   /'
say ""
say "== explicit null on the last core link"
penultimate 100 103 0
run_mode explicit-null
trace6 explicit-null
say ""
say "== penultimate hop popping (implicit null) on the last core link"
penultimate 0 0 3
run_mode php
trace6 php
stop_routers
echo ""
if [ "$FAILS" -eq 0 ]; then echo "lab: all checks passed"; else echo "lab: $FAILS check(s) failed"; exit 1; fi
