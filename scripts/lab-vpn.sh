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
# 1020/3020); the label pops into the VRF there. A VPWS pseudowire (labels
# 2000/2001, with the control word) joins port pw-a to port pw-b: the hosts
# behind it share 192.168.42.0/24, and 802.1Q-tagged frames of a VLAN the PEs
# do not know (42, a local EtherType) cross it byte for byte.
#
# Checked on the wire with tcpdump: every link's label stack (transport label,
# VPN or PW label, S bit, TTL) for pings within each VRF; no ping across VRFs;
# traceroute inside VRF red; the VPWS carrying tagged frames and ARP unchanged
# with the control word; then the transport LSP relabelled, and rerouted over
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
in_ns pw-a ip addr add 192.168.42.1/24 dev pa0
in_ns pw-b ip addr add 192.168.42.2/24 dev pb0

DPCTL=${DPCTL:-$(dirname "$BIN")/dpctl}

# name  loopback  main/worker CPU  ports ("port-name iface address vrf", "-" for none)
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
            [ "$addr" = - ] || echo "addresses = [\"$addr\"]"
            [ "$vrf" = - ] || echo "vrf = \"$vrf\""
            k=$((k + 1))
        done
    } > "$WORK/$name.toml"
}

start_routers() {
    write_config r3 192.0.2.103 0 1 "w r3w 192.168.11.11/31 -" "red r3red 10.0.0.1/24 red" \
        "blue r3blue 10.0.0.1/24 blue" "pw r3pw - -" "b r3b 192.168.12.0/31 -"
    write_config r2 192.0.2.102 1 0 "w r2w 192.168.11.9/31 -" "e r2e 192.168.11.10/31 -"
    write_config r1 192.0.2.101 0 1 "w r1w 192.168.11.7/31 -" "e r1e 192.168.11.8/31 -" \
        "b r1b 192.168.12.1/31 -"
    write_config r0 192.0.2.100 1 0 "e r0e 192.168.11.6/31 -" "red r0red 10.0.1.1/24 red" \
        "blue r0blue 10.0.1.1/24 blue" "pw r0pw - -"
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
    dp r0 label add 1020 eos ip4-lookup vrf blue
    dp r3 label add 3010 eos ip4-lookup vrf red
    dp r3 label add 3020 eos ip4-lookup vrf blue
    dp r3 route add 10.0.1.0/24 vrf red via 192.0.2.100 next-hop-vrf default out-labels 1010
    dp r3 route add 10.0.1.0/24 vrf blue via 192.0.2.100 next-hop-vrf default out-labels 1020
    dp r0 route add 10.0.0.0/24 vrf red via 192.0.2.103 next-hop-vrf default out-labels 3010
    dp r0 route add 10.0.0.0/24 vrf blue via 192.0.2.103 next-hop-vrf default out-labels 3020
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
    # (tcpdump says "listening on" once it captures)
    for li in $CAP; do
        for _ in $(seq 100); do
            grep -q listening "$WORK/$tag-$li.log" 2>/dev/null && break
            sleep 0.05
        done
    done
    CAPTURED=$("$@" 2>&1 || true)
    sleep 0.5
    for c in "${caps[@]}"; do kill -INT "$c" 2>/dev/null || true; done
    for c in "${caps[@]}"; do wait "$c" 2>/dev/null || true; done
}

# The label stack of the first frame of $tag's capture on $li whose decode has
# $what: "100:63 1010:S:63" (label:TTL, S on the bottom), "ipv4" for a plain IPv4
# frame, "none" if no such frame crossed.
stack_of() {
    local tag=$1 li=$2 what=$3 line
    line=$(tcpdump -envr "$WORK/$tag-$li.pcap" 2> /dev/null | tr '\n' ' ' | sed 's/ \([0-9][0-9]:[0-9][0-9]:\)/\n\1/g' \
        | grep -m1 -- "$what" || true)
    if [ -z "$line" ]; then echo "none"; return; fi
    if grep -q 'MPLS (label' <<< "$line"; then
        grep -oE '\(label [0-9]+, (exp|tc) [0-9]+, (\[S\], )?ttl [0-9]+\)' <<< "$line" \
            | sed -E 's/\(label ([0-9]+), (exp|tc) [0-9]+, (\[S\], )?ttl ([0-9]+)\)/\1 \3\4/; s/\[S\], /S /' \
            | awk '{ if (NF == 3) printf "%s%s:S:%s", (NR > 1 ? " " : ""), $1, $3; else printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $2 }'
        echo
    else
        echo "ipv4"
    fi
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

# Checks, for $tag, the request and reply stacks (see stack_of) on each link
# interface: "IF request|reply" arguments.
check_stacks() {
    local tag=$1; shift
    local e li exp req rep want_req want_rep
    for e in "$@"; do
        read -r li exp <<< "$e"
        IFS='|' read -r want_req want_rep <<< "$exp"
        if [ -n "${PW_FRAMES:-}" ]; then
            req=$(pw_stack_of "$tag" "$li" request)
            rep=$(pw_stack_of "$tag" "$li" reply)
        else
            req=$(stack_of "$tag" "$li" "echo request")
            rep=$(stack_of "$tag" "$li" "echo reply")
        fi
        if [ "$req" = "$want_req" ] && [ "$rep" = "$want_rep" ]; then
            pass "$tag $li: request [$req] reply [$rep]"
        else
            fail "$tag $li: request [$req] want [$want_req], reply [$rep] want [$want_rep]"
        fi
    done
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

say ""
say "==== VRF red: red-a (10.0.0.2) -> red-b (10.0.1.2)"
warm red-a 10.0.1.2
capture_all red in_ns red-a ping -c 3 -i 0.3 -W 2 10.0.1.2
ping_ok "red-a -> red-b"
# TTLs: r3 pushes both labels with the IPv4 TTL less one (uniform); the P
# routers decrement the top label; r0 pops into the VRF and routes.
check_stacks red "ra0 ipv4|ipv4" "r3w 100:63 1010:S:63|103:61 3010:S:63" \
    "r2w 100:62 1010:S:63|103:62 3010:S:63" "r1w 100:61 1010:S:63|103:63 3010:S:63" \
    "r0red ipv4|ipv4"

say ""
say "==== VRF blue: blue-a (10.0.0.2, the same address) -> blue-b (10.0.1.3)"
warm blue-a 10.0.1.3
capture_all blue in_ns blue-a ping -c 3 -i 0.3 -W 2 10.0.1.3
ping_ok "blue-a -> blue-b"
check_stacks blue "ba0 ipv4|ipv4" "r3w 100:63 1020:S:63|103:61 3020:S:63" \
    "r2w 100:62 1020:S:63|103:62 3020:S:63" "r1w 100:61 1020:S:63|103:63 3020:S:63" \
    "r0blue ipv4|ipv4"

say ""
say "==== across VRFs: red-a -> blue-b's 10.0.1.3 and blue-a -> red-b's 10.0.1.2 (none may answer)"
for e in "red-a 10.0.1.3" "blue-a 10.0.1.2"; do
    read -r ns dst <<< "$e"
    out=$(in_ns "$ns" ping -c 2 -i 0.3 -W 1 "$dst" 2>&1 || true)
    if grep -q ' 0 received' <<< "$out"; then
        pass "$ns -> $dst: no answer across VRFs"
    else
        fail "$ns -> $dst answered: $(grep 'packet loss' <<< "$out")"
    fi
done

say ""
say "==== traceroute inside VRF red: red-a -> red-b"
tr=$(in_ns red-a traceroute -n -q 1 -N 1 -w 2 10.0.1.2 2>&1 || true)
say "$tr" | sed 's/^/   /'
hops=$(awk 'NR > 1 { print $2 }' <<< "$tr" | paste -sd' ')
# r3 from its red interface, the P routers (RFC 4950 ICMP sent on along the
# LSP to r0, which routes it back in the VRF), r0 from the interface the LSP
# reached it on (its reply routed in VRF red, where the packet was).
want="10.0.0.1 192.168.11.10 192.168.11.8 192.168.11.6 10.0.1.2"
if [ "$hops" = "$want" ]; then
    pass "traceroute in VRF red: $hops"
else
    fail "traceroute in VRF red: hops [$hops] want [$want]"
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
PW_FRAMES=1 check_stacks pw "r3w 100:255 2000:S:255 cw|103:253 2001:S:255 cw" \
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
PW_FRAMES=1 check_stacks pw2 "r3w 200:255 2000:S:255 cw|103:253 2001:S:255 cw"

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
PW_FRAMES=1 check_stacks reroute "r3b 100:255 2000:S:255 cw|none"

stop_pids INT "${PIDS[@]}"
PIDS=()
echo ""
if [ "$FAILS" -eq 0 ]; then echo "lab-vpn: all checks passed"; else echo "lab-vpn: $FAILS check(s) failed"; exit 1; fi
