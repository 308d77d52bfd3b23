#!/usr/bin/env bash
# MPLS VPN services on the seed article's four routers (scripts/lab.sh's core):
#
#   red-a  --+                                        +-- red-b   (VRF red)
#   blue-a --+ r3 ===== r2 ===== r1 ===== r0 +-- blue-b  (VRF blue)
#   pw-a   --+ PE       P        P        PE +-- pw-b    (VPWS)
#              \________________/  (bypass r3 - r1)
#
# Two customers with the same addresses: red and blue both number their sites
# 10.0.0.0/24 (behind r3) and 10.0.1.0/24 (behind r0), in VRFs red (table 10) and
# blue (table 20) on both PEs. The PEs' loopbacks are 192.0.2.103 (r3) and
# 192.0.2.100 (r0); transport LSPs 100 (to r0) and 103 (to r3) run over the P
# routers. Each PE routes the far site in a VRF via the other PE's loopback in
# the default VRF with the VPN label the other PE gave (red 1010/3010, blue
# 1020/3020); the label pops into the VRF there. IPv6 likewise (6VPE, RFC
# 4659): both customers number their sites 2001:db8:10::/64 and
# 2001:db8:11::/64, and each PE routes the far site in a VRF via the other PE's
# loopback written ::ffff:a.b.c.d, over the same IPv4 LSPs; red has a VPN label
# of its own for IPv6 (1016/3016, `ip6-lookup vrf red`), blue one label for
# both families (1020/3020, `ip-lookup vrf blue`: the payload's version picks
# the lookup). A VPWS pseudowire (labels 2000/2001, with the control word)
# joins port pw-a to port pw-b: the hosts behind it share 192.168.42.0/24, and
# 802.1Q-tagged frames of a VLAN the PEs do not know (42, a local EtherType)
# cross it byte for byte.
#
# Checked on the wire with tcpdump: every link's label stack (transport label,
# VPN or PW label, S bit, TTL; the hop limit for IPv6) for IPv4 and IPv6 pings
# within each VRF; no ping across VRFs, of either family, and no echo request
# on the far PE's customer links; traceroute and traceroute6 (the RFC 4950
# stacks decoded by tshark) inside VRF red; the VPWS carrying tagged frames and
# ARP unchanged with the control word; then the transport LSP relabelled, and rerouted over
# the bypass, under the VPN and the pseudowire: the VPN routes are not
# rewritten (each VRF route names the PE, not the LSP), the next frames carry
# the new label, then take the bypass.
#
# Run as root after scripts/setup.sh and a release build (`make lab-vpn` does
# all). LAB_QUIET=1 prints only the checks. Exit status 0 only if every check
# passed.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/release/dataplaned}
P=dpvpn
WORK=$(mktemp -d /tmp/dpvpn.XXXXXX)
PIDS=()
FAILS=0
say() { [ -n "${LAB_QUIET:-}" ] || echo "$@"; }
. scripts/lab-common.sh

NS=(red-a blue-a pw-a r3 r2 r1 r0 red-b blue-b pw-b)
# links: left-ns left-if right-ns right-if (captures run on the left end)
LINKS=(
  "red-a ra0 r3 r3red"
  "blue-a ba0 r3 r3blue"
  "pw-a pa0 r3 r3pw"
  "r3 r3w r2 r2e"
  "r2 r2w r1 r1e"
  "r1 r1w r0 r0e"
  "r3 r3b r1 r1b"
  "r0 r0red red-b rb0"
  "r0 r0blue blue-b bb0"
  "r0 r0pw pw-b pb0"
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

[ "$(id -u)" -eq 0 ] || { echo "lab-vpn: run as root (network namespaces)"; exit 1; }
[ -x "$BIN" ] || { echo "lab-vpn: $BIN missing: run 'cargo build --release -p ctl -p dpctl' (make lab-vpn does)"; exit 1; }
teardown   # leftovers of an interrupted run

say "== topology: customers red, blue and a VPWS behind PEs r3 and r0, P routers r2 and r1 (namespaces $P-*)"
make_topology
host() {
    local ns=$1 dev=$2 addr=$3 gw=$4
    in_ns "$ns" ip addr add "$addr" dev "$dev"
    in_ns "$ns" ip route add default via "$gw"
}
host red-a ra0 10.0.0.2/24 10.0.0.1
host blue-a ba0 10.0.0.2/24 10.0.0.1
host red-b rb0 10.0.1.2/24 10.0.1.1
host blue-b bb0 10.0.1.3/24 10.0.1.1
host6() {
    local ns=$1 dev=$2 addr=$3 gw=$4
    ipv6_on "$ns"
    in_ns "$ns" ip addr add "$addr" dev "$dev" nodad
    in_ns "$ns" ip route add default via "$gw"
}
host6 red-a ra0 2001:db8:10::2/64 2001:db8:10::1
host6 blue-a ba0 2001:db8:10::2/64 2001:db8:10::1
host6 red-b rb0 2001:db8:11::2/64 2001:db8:11::1
host6 blue-b bb0 2001:db8:11::3/64 2001:db8:11::1
in_ns pw-a ip addr add 192.168.42.1/24 dev pa0
in_ns pw-b ip addr add 192.168.42.2/24 dev pb0

DPCTL=${DPCTL:-$(dirname "$BIN")/dpctl}

# name  loopback  main/worker CPU  ports ("port-name iface addresses vrf": addresses
# comma-separated, "-" for none)
write_config() {
    local name=$1 lo=$2 mcpu=$3 wcpu=$4; shift 4
    local k=0 p
    {
        echo "[eal]"
        echo "main_cpu = $mcpu"
        echo "memory_mb = 64"
        echo "[mempool]"
        echo "mbufs = 2047"
        echo "cache = 64"
        echo "[workers]"
        echo "cpus = [$wcpu]"
        for p in "$@"; do
            read -r _ ifname _ _ <<< "$p"
            echo "[[port]]"
            echo "name = \"port$k\""
            # qdisc_bypass=0: tcpdump on the router's side sees what it sends
            echo "device = \"net_af_packet_$ifname,iface=$ifname,qdisc_bypass=0\""
            k=$((k + 1))
        done
        echo "[control]"
        echo "socket = \"$WORK/$name.sock\""
        echo "[forwarding]"
        echo "mode = \"router\""
        echo "[router]"
        echo "router_id = \"$lo\""
        if [ "$name" = r3 ] || [ "$name" = r0 ]; then
            printf '[[vrf]]\nname = "red"\ntable = 10\n[[vrf]]\nname = "blue"\ntable = 20\n'
        fi
        k=0
        for p in "$@"; do
            read -r _ _ addr vrf <<< "$p"
            echo "[[interface]]"
            echo "name = \"port$k\""
            [ "$addr" = - ] || echo "addresses = [\"${addr//,/\", \"}\"]"
            [ "$vrf" = - ] || echo "vrf = \"$vrf\""
            k=$((k + 1))
        done
    } > "$WORK/$name.toml"
}

start_routers() {
    write_config r3 192.0.2.103 0 1 "w r3w 192.168.11.11/31 -" "red r3red 10.0.0.1/24,2001:db8:10::1/64 red" \
        "blue r3blue 10.0.0.1/24,2001:db8:10::1/64 blue" "pw r3pw - -" "b r3b 192.168.12.0/31 -"
    write_config r2 192.0.2.102 1 0 "w r2w 192.168.11.9/31 -" "e r2e 192.168.11.10/31 -"
    write_config r1 192.0.2.101 0 1 "w r1w 192.168.11.7/31 -" "e r1e 192.168.11.8/31 -" \
        "b r1b 192.168.12.1/31 -"
    write_config r0 192.0.2.100 1 0 "e r0e 192.168.11.6/31 -" "red r0red 10.0.1.1/24,2001:db8:11::1/64 red" \
        "blue r0blue 10.0.1.1/24,2001:db8:11::1/64 blue" "pw r0pw - -"
    local name
    for name in r3 r2 r1 r0; do
        # `ip netns exec` execs the program, so $! is the daemon itself.
        ip netns exec "$P-$name" "$BIN" -c "$WORK/$name.toml" > "$WORK/$name.out" 2> "$WORK/$name.err" &
        PIDS+=($!)
    done
    for name in r3 r2 r1 r0; do
        for _ in $(seq 100); do
            grep -q forwarding "$WORK/$name.err" 2>/dev/null && break
            sleep 0.1
        done
        grep -q forwarding "$WORK/$name.err" || { echo "lab-vpn: $name did not start:"; cat "$WORK/$name.err"; exit 1; }
    done
}

configure() {
    say "== transport LSPs: 100 to r0's loopback, 103 to r3's (the VPN or PW label below)"
    dp r3 route add 192.0.2.100/32 via 192.168.11.10 port0 out-labels 100
    dp r2 label add 100 non-eos via 192.168.11.8 port0 out-labels 100
    dp r1 label add 100 non-eos via 192.168.11.6 port0 out-labels 100
    dp r0 label add 100 non-eos pop
    dp r0 route add 192.0.2.103/32 via 192.168.11.7 port0 out-labels 103
    dp r1 label add 103 non-eos via 192.168.11.9 port1 out-labels 103
    dp r2 label add 103 non-eos via 192.168.11.11 port1 out-labels 103
    dp r3 label add 103 non-eos pop
    say "== L3VPN: each VRF's far site via the other PE's loopback, with its VPN label"
    dp r0 label add 1010 eos ip4-lookup vrf red
    dp r0 label add 1020 eos ip-lookup vrf blue
    dp r3 label add 3010 eos ip4-lookup vrf red
    dp r3 label add 3020 eos ip-lookup vrf blue
    dp r3 route add 10.0.1.0/24 vrf red via 192.0.2.100 next-hop-vrf default out-labels 1010
    dp r3 route add 10.0.1.0/24 vrf blue via 192.0.2.100 next-hop-vrf default out-labels 1020
    dp r0 route add 10.0.0.0/24 vrf red via 192.0.2.103 next-hop-vrf default out-labels 3010
    dp r0 route add 10.0.0.0/24 vrf blue via 192.0.2.103 next-hop-vrf default out-labels 3020
    say "== 6VPE: IPv6 in both VRFs via the other PE's loopback IPv4-mapped (red 1016/3016; blue's 1020/3020 take both)"
    dp r0 label add 1016 eos ip6-lookup vrf red
    dp r3 label add 3016 eos ip6-lookup vrf red
    dp r3 route add 2001:db8:11::/64 vrf red via ::ffff:192.0.2.100 next-hop-vrf default out-labels 1016
    dp r3 route add 2001:db8:11::/64 vrf blue via ::ffff:192.0.2.100 next-hop-vrf default out-labels 1020
    dp r0 route add 2001:db8:10::/64 vrf red via ::ffff:192.0.2.103 next-hop-vrf default out-labels 3016
    dp r0 route add 2001:db8:10::/64 vrf blue via ::ffff:192.0.2.103 next-hop-vrf default out-labels 3020
    say "== VPWS: port pw-a (r3 port3) to port pw-b (r0 port3)"
    dp r3 pw add vpws1 interface port3 neighbor 192.0.2.100 in-label 2001 out-label 2000
    dp r0 pw add vpws1 interface port3 neighbor 192.0.2.103 in-label 2000 out-label 2001
}

# Runs "$@" while tcpdump records every frame on the left end of the links
# named ($CAP: left interfaces) into $WORK/$tag-IF.pcap; output in CAPTURED.
capture_all() {
    local tag=$1; shift
    local caps=() li
    for li in $CAP; do
        local ns
        ns=$(for l in "${LINKS[@]}"; do read -r a b _ <<< "$l"; if [ "$b" = "$li" ]; then echo "$a"; fi; done)
        ip netns exec "$P-$ns" timeout 60 tcpdump --immediate-mode -Uqni "$li" -w "$WORK/$tag-$li.pcap" 2> "$WORK/$tag-$li.log" &
        caps+=($!)
    done
    listening "$tag" $CAP
    CAPTURED=$("$@" 2>&1 || true)
    sleep 0.5
    for c in "${caps[@]}"; do kill -INT "$c" 2>/dev/null || true; done
    for c in "${caps[@]}"; do wait "$c" 2>/dev/null || true; done
}

# The label stack of the first pseudowire frame in $tag's capture on $li that
# carries an ICMP echo $what (request, reply) in its Ethernet frame, as stack_of
# says it, with " cw" when an RFC 4385 control word (first nibble 0, sequence 0)
# sits between the stack and the frame (tcpdump does not decode the payload).
pw_stack_of() {
    python3 - "$WORK/$1-$2.pcap" "$3" <<'PY'
import sys
cap = open(sys.argv[1], "rb").read()
want = {"request": 8, "reply": 0}[sys.argv[2]]
i, out = 24, "none"
while i + 16 <= len(cap):
    n = int.from_bytes(cap[i + 8:i + 12], "little")
    f = cap[i + 16:i + 16 + n]
    i += 16 + n
    if f[12:14] != b"\x88\x47":
        continue
    o, stack = 14, []
    while o + 4 <= len(f):
        w = int.from_bytes(f[o:o + 4], "big")
        o += 4
        s = w >> 8 & 1
        stack.append("%d:%s%d" % (w >> 12, "S:" if s else "", w & 0xff))
        if s:
            break
    cw = f[o:o + 4] == bytes(4)
    e = f[o + 4:] if cw else f[o:]
    if e[12:14] == b"\x08\x00" and e[14 + 9] == 1 and e[14 + 20] == want:
        out = " ".join(stack) + (" cw" if cw else "")
        break
print(out)
PY
}

ping_ok() {
    local what=$1; shift
    if grep -q ' 0% packet loss' <<< "$CAPTURED"; then
        pass "$what: 0% loss"
    else
        fail "$what: $(grep 'packet loss' <<< "$CAPTURED" || echo "no answer")"
    fi
}

# Pings until the path answers (ARP on every hop) or 20 tries.
warm() {
    local ns=$1 dst=$2
    for _ in $(seq 20); do
        in_ns "$ns" ping -c 1 -W 1 "$dst" > /dev/null 2>&1 && return 0
    done
    return 0
}

start_routers
configure
CAP="ra0 ba0 r3w r2w r1w r0red r0blue"

# IPv4 and IPv6 pings from $1 to $2 and $3 at once; each one's loss line, tagged.
pings() {
    { in_ns "$1" ping -c 3 -i 0.3 -W 2 "$2" | sed -n 's/.*packet loss.*/ipv4: &/p'; } &
    { in_ns "$1" ping -c 3 -i 0.3 -W 2 "$3" | sed -n 's/.*packet loss.*/ipv6: &/p'; } &
    wait
}

# Checks the tagged loss lines of CAPTURED (see pings): 0% loss for each family.
pings_ok() {
    local what=$1 fam
    for fam in ipv4 ipv6; do
        if grep -q "^$fam: .* 0% packet loss" <<< "$CAPTURED"; then
            pass "$what ($fam): 0% loss"
        else
            fail "$what ($fam): $(grep "^$fam:" <<< "$CAPTURED" || echo "no answer")"
        fi
    done
}

# The IPv4 checks of a capture that also holds IPv6 pings.
check4() { REQ='ICMP echo request' REP='ICMP echo reply' check_stacks "$@"; }
# The IPv6 checks (the hop limit: 64 from the host, 63 once the ingress PE
# has copied it into both labels, 60 out of the egress PE after four hops).
check6() { NAME="$1 ipv6" REQ='ICMP6, echo request' REP='ICMP6, echo reply' check_stacks "$@"; }

say ""
say "==== VRF red: red-a (10.0.0.2, 2001:db8:10::2) -> red-b (10.0.1.2, 2001:db8:11::2)"
warm red-a 10.0.1.2
warm red-a 2001:db8:11::2
capture_all red pings red-a 10.0.1.2 2001:db8:11::2
pings_ok "red-a -> red-b"
# TTLs: r3 pushes both labels with the IPv4 TTL less one (uniform); the P
# routers decrement the top label; r0 pops into the VRF and routes.
check4 red "ra0 ipv4|ipv4" "r3w 100:63 1010:S:63|103:61 3010:S:63" \
    "r2w 100:62 1010:S:63|103:62 3010:S:63" "r1w 100:61 1010:S:63|103:63 3010:S:63" \
    "r0red ipv4|ipv4"
check6 red "ra0 ipv6 hl 64|ipv6 hl 60" "r3w 100:63 1016:S:63 hl 63|103:61 3016:S:63 hl 63" \
    "r2w 100:62 1016:S:63 hl 63|103:62 3016:S:63 hl 63" "r1w 100:61 1016:S:63 hl 63|103:63 3016:S:63 hl 63" \
    "r0red ipv6 hl 60|ipv6 hl 64"

say ""
say "==== VRF blue: blue-a (the same addresses) -> blue-b (10.0.1.3, 2001:db8:11::3)"
warm blue-a 10.0.1.3
warm blue-a 2001:db8:11::3
capture_all blue pings blue-a 10.0.1.3 2001:db8:11::3
pings_ok "blue-a -> blue-b"
check4 blue "ba0 ipv4|ipv4" "r3w 100:63 1020:S:63|103:61 3020:S:63" \
    "r2w 100:62 1020:S:63|103:62 3020:S:63" "r1w 100:61 1020:S:63|103:63 3020:S:63" \
    "r0blue ipv4|ipv4"
check6 blue "ba0 ipv6 hl 64|ipv6 hl 60" "r3w 100:63 1020:S:63 hl 63|103:61 3020:S:63 hl 63" \
    "r2w 100:62 1020:S:63 hl 63|103:62 3020:S:63 hl 63" "r1w 100:61 1020:S:63 hl 63|103:63 3020:S:63 hl 63" \
    "r0blue ipv6 hl 60|ipv6 hl 64"

say ""
say "==== across VRFs: red-a -> blue-b's 10.0.1.3 and 2001:db8:11::3, blue-a -> red-b's 10.0.1.2 and 2001:db8:11::2 (none may answer)"
across() {
    local e ns dst
    for e in "red-a 10.0.1.3" "blue-a 10.0.1.2" "red-a 2001:db8:11::3" "blue-a 2001:db8:11::2"; do
        read -r ns dst <<< "$e"
        { in_ns "$ns" ping -c 2 -i 0.3 -W 1 "$dst" | sed -n "s/.*packets transmitted.*/$ns $dst: &/p"; } &
    done
    wait
}
CAP="r0red r0blue"
capture_all across across
for e in "red-a 10.0.1.3" "blue-a 10.0.1.2" "red-a 2001:db8:11::3" "blue-a 2001:db8:11::2"; do
    read -r ns dst <<< "$e"
    if grep -q "^$ns $dst: .* 0 received" <<< "$CAPTURED"; then
        pass "$ns -> $dst: no answer across VRFs"
    else
        fail "$ns -> $dst answered: $(grep "^$ns $dst:" <<< "$CAPTURED" || echo "no ping")"
    fi
done
# Each destination is in the other VRF only: in its own VRF r0 finds no such
# neighbour, so no echo request may leave on either customer link.
n=$(for li in $CAP; do tcpdump -nr "$WORK/across-$li.pcap" 2> /dev/null; done | grep -c 'echo request' || true)
if [ "$n" = 0 ]; then
    pass "across VRFs: no echo request on r0's red or blue link"
else
    fail "across VRFs: $n echo request(s) left r0 on a customer link"
fi

say ""
say "==== traceroute inside VRF red: red-a -> red-b"
tr=$(in_ns red-a traceroute -n -q 1 -N 1 -w 2 10.0.1.2 2>&1 || true)
say "$tr" | sed 's/^/   /'
# r3 from its red interface, the P routers (RFC 4950 ICMP sent on along the
# LSP to r0, which routes it back in the VRF), r0 from the interface the LSP
# reached it on (its reply routed in VRF red, where the packet was).
check_hops "traceroute in VRF red" "$tr" "10.0.0.1 192.168.11.10 192.168.11.8 192.168.11.6 10.0.1.2"

say ""
say "==== traceroute6 inside VRF red: red-a -> red-b, its answers captured"
CAP="ra0"
capture_all trace6 in_ns red-a traceroute6 -n -q 1 -N 1 -w 2 2001:db8:11::2
say "$CAPTURED" | sed 's/^/   /'
# As for IPv4, with the core's IPv4 addresses IPv4-mapped (no IPv6 in the core).
check_hops "traceroute6 in VRF red" "$CAPTURED" \
    "2001:db8:10::1 ::ffff:192.168.11.10 ::ffff:192.168.11.8 ::ffff:192.168.11.6 2001:db8:11::2"
# The P routers' ICMPv6 time exceeded, decoded by tshark, quote the transport
# and VPN labels the probe arrived with (RFC 4950; label:TTL, S on the bottom);
# r0 answers once both labels are off.
stacks=$(rfc4950_stacks "$WORK/trace6-ra0.pcap")
want="2001:db8:10::1;::ffff:192.168.11.10 100:1 1016:S:1;::ffff:192.168.11.8 100:1 1016:S:2;::ffff:192.168.11.6"
if [ "$stacks" = "$want" ]; then
    pass "traceroute6 in VRF red: RFC 4950 stacks [$stacks]"
else
    fail "traceroute6 in VRF red: RFC 4950 stacks [$stacks] want [$want]"
fi

say ""
say "==== VPWS: pw-a (192.168.42.1) -> pw-b (192.168.42.2) over pseudowire vpws1"
CAP="pa0 r3w r2w r1w r0pw"
in_ns pw-a ip neigh flush dev pa0
# Also 20 frames tagged VLAN 42 with a local EtherType, sent raw from pw-a.
tagged() {
    in_ns pw-a python3 - "$WORK/tagged.bin" <<'PY'
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("pa0", 0))
frames = []
for i in range(20):
    f = (bytes.fromhex("02aa000000bb02aa000000aa") + bytes.fromhex("8100002a88b5")
         + b"vpws-tagged-%02d" % i + bytes(40))
    s.send(f)
    frames.append(f)
open(sys.argv[1], "wb").write(b"".join(len(f).to_bytes(2, "big") + f for f in frames))
PY
}
capture_all pw sh -c "ip netns exec $P-pw-a ping -c 3 -i 0.3 -W 2 192.168.42.2; $(declare -f tagged in_ns); P=$P WORK=$WORK tagged"
ping_ok "pw-a -> pw-b over the pseudowire"
# Both labels leave the PE with TTL 255; the control word follows the PW label.
STACK_OF=pw_stack_of REQ=request REP=reply check_stacks pw "r3w 100:255 2000:S:255 cw|103:253 2001:S:255 cw" \
    "r2w 100:254 2000:S:255 cw|103:254 2001:S:255 cw" "r1w 100:253 2000:S:255 cw|103:255 2001:S:255 cw"
arp_b=$(tcpdump -enr "$WORK/pw-r0pw.pcap" 2> /dev/null | grep -c 'Request who-has 192.168.42.2 tell 192.168.42.1' || true)
if [ "$arp_b" -ge 1 ]; then
    pass "pw-a's ARP request crossed the pseudowire ($arp_b at pw-b)"
else
    fail "no ARP request of pw-a reached pw-b"
fi
same=$(python3 - "$WORK/tagged.bin" "$WORK/pw-r0pw.pcap" <<'PY'
import sys
raw = open(sys.argv[1], "rb").read()
sent, i = [], 0
while i < len(raw):
    n = int.from_bytes(raw[i:i + 2], "big"); sent.append(raw[i + 2:i + 2 + n]); i += 2 + n
cap = open(sys.argv[2], "rb").read()
got, i = set(), 24
while i + 16 <= len(cap):
    n = int.from_bytes(cap[i + 8:i + 12], "little"); got.add(cap[i + 16:i + 16 + n]); i += 16 + n
print(sum(f in got for f in sent), len(sent))
PY
)
if [ "$same" = "20 20" ]; then
    pass "VLAN 42 frames at pw-b byte for byte as pw-a sent them ($same)"
else
    fail "VLAN 42 frames: $same at pw-b unchanged"
fi
say ""
[ -n "${LAB_QUIET:-}" ] || "$DPCTL" --socket "$WORK/r3.sock" show pw | sed 's/^/   /'

say ""
say "==== the transport LSP relabelled under the VPN (r3 -> r2: 200 instead of 100)"
before=$("$DPCTL" --socket "$WORK/r3.sock" route show vrf red)
dp r2 label add 200 non-eos via 192.168.11.8 port0 out-labels 100
dp r3 route replace 192.0.2.100/32 via 192.168.11.10 port0 out-labels 200
after=$("$DPCTL" --socket "$WORK/r3.sock" route show vrf red)
if [ "$before" = "$after" ] && grep -q 'out-labels 1010' <<< "$after"; then
    pass "VRF red's routes untouched by the LSP change (they name the PE and the VPN label)"
else
    fail "VRF red's routes changed: before [$before] after [$after]"
fi
CAP="r3w r2w"
capture_all relabel in_ns red-a ping -c 3 -i 0.3 -W 2 10.0.1.2
ping_ok "red-a -> red-b over the relabelled LSP"
check_stacks relabel "r3w 200:63 1010:S:63|103:61 3010:S:63" "r2w 100:62 1010:S:63|103:62 3010:S:63"
CAP="r3w"
capture_all pw2 in_ns pw-a ping -c 2 -i 0.3 -W 2 192.168.42.2
ping_ok "the pseudowire over the relabelled LSP"
STACK_OF=pw_stack_of REQ=request REP=reply check_stacks pw2 "r3w 200:255 2000:S:255 cw|103:253 2001:S:255 cw"

say ""
say "==== the transport LSP rerouted under the VPN: r3 -> r1 over the bypass"
dp r3 route replace 192.0.2.100/32 via 192.168.12.1 port4 out-labels 100
after=$("$DPCTL" --socket "$WORK/r3.sock" route show vrf red)
if [ "$before" = "$after" ]; then
    pass "VRF red's routes untouched by the reroute"
else
    fail "VRF red's routes changed: before [$before] after [$after]"
fi
CAP="r3b r3w"
capture_all reroute sh -c "ip netns exec $P-red-a ping -c 3 -i 0.3 -W 2 10.0.1.2; ip netns exec $P-pw-a ping -c 2 -i 0.3 -W 2 192.168.42.2"
if [ "$(grep -c ' 0% packet loss' <<< "$CAPTURED")" = 2 ]; then
    pass "VRF red and the pseudowire over the bypass: 0% loss"
else
    fail "over the bypass: $(grep 'packet loss' <<< "$CAPTURED" | paste -sd' ')"
fi
# Westbound over the bypass, eastbound as before (r0's LSP to r3 is unchanged).
check_stacks reroute "r3b 100:63 1010:S:63|none" "r3w none|103:61 3010:S:63"
STACK_OF=pw_stack_of REQ=request REP=reply check_stacks reroute "r3b 100:255 2000:S:255 cw|none"

stop_pids INT "${PIDS[@]}"
PIDS=()
echo ""
if [ "$FAILS" -eq 0 ]; then echo "lab-vpn: all checks passed"; else echo "lab-vpn: $FAILS check(s) failed"; exit 1; fi
