#!/usr/bin/env bash
# The seed article's MPLS lab with FRR as the control plane: the four dataplaned
# routers of `make lab`, each with zebra, ospfd and ldpd in its own control-plane
# namespace, peering through the dataplane (TAP twins, punt/inject). OSPF finds the
# paths, LDP chooses the labels, zebra hands routes and LSPs to the dataplane over
# FPM. Nothing is configured with dpctl.
#
#   host-a --- r3 ===== r2 ===== r1 ===== r0 --- host-b
#   192.0.2.0  PE  \    P        P  /     PE     192.0.2.2
#                   ================
#                   bypass r3 - r1, OSPF cost 100
#
# The PEs redistribute the host links into OSPF; LDP gives every prefix a label and the
# routers advertise explicit null for their own prefixes, so a ping from host-a to
# host-b is labelled on every core link: LDP's labels on the first two, label 0 on the
# last, which the egress PE pops and looks up in the same pass.
# Checks: OSPF and LDP up through the dataplane; the labels LDP chose are the ones the
# dataplane forwards with (captured on every core link: label, S bit, TTL); traceroute
# shows every hop, the P routers answering from inside the LSP (RFC 4950); the r2 - r1
# link is cut and traffic moves to the bypass, still labelled.
#
# zebra 8.4 sends labels over FPM only when the kernel takes them. This machine's
# kernel has no MPLS, so zebra runs under tests/tools/nompls_shim.c, a test-only
# LD_PRELOAD library built here; on a kernel with MPLS (modprobe mpls_router) it is
# not needed (README, "Running with BIRD or FRR").
#
# Run as root after scripts/setup.sh and a release build (`make lab-frr` does all).
# LAB_QUIET=1 prints only the checks. Exit status 0 only if every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/release/dataplaned}
DPCTL=${DPCTL:-$(dirname "$BIN")/dpctl}
P=frlab
WORK=$(mktemp -d /tmp/frlab.XXXXXX)
chmod 755 "$WORK"   # FRR runs as user frr
PIDS=()
FAILS=0
T0=$(date +%s.%N)
say() { [ -n "${LAB_QUIET:-}" ] || echo "$@"; }
. scripts/lab-common.sh
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

ROUTERS_NS=(r3 r2 r1 r0)
NS=(host-a host-b r3 r2 r1 r0 r3-cp r2-cp r1-cp r0-cp)
# links: left-ns left-if right-ns right-if
LINKS=(
  "host-a ha0 r3 r3e"
  "r3 r3w r2 r2e"
  "r2 r2w r1 r1e"
  "r1 r1w r0 r0e"
  "r0 r0w host-b hb0"
  "r3 r3x r1 r1x"
)
# router, its loopback, and per port: name veth address (west, east, bypass)
ROUTERS=(
  "r3 10.255.0.13 port0:r3w:192.168.11.11/31 port1:r3e:192.0.2.1/31 port2:r3x:192.168.11.12/31"
  "r2 10.255.0.12 port0:r2w:192.168.11.9/31 port1:r2e:192.168.11.10/31"
  "r1 10.255.0.11 port0:r1w:192.168.11.7/31 port1:r1e:192.168.11.8/31 port2:r1x:192.168.11.13/31"
  "r0 10.255.0.10 port0:r0w:192.0.2.3/31 port1:r0e:192.168.11.6/31"
)

teardown() {
    set +e
    stop_pids TERM "${PIDS[@]}"
    PIDS=()
    # FRR's daemons detach; their pid files name them
    local frr=() f
    for f in "$WORK"/*/*.pid; do
        [ -f "$f" ] && frr+=("$(cat "$f")")
    done
    stop_pids TERM "${frr[@]}"
    del_namespaces
}
cleanup() { teardown; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || { echo "lab-frr: run as root (network namespaces)"; exit 1; }
[ -x "$BIN" ] || { echo "lab-frr: $BIN missing: run 'cargo build --release -p ctl -p dpctl' (make lab-frr does)"; exit 1; }
[ -x /usr/lib/frr/ldpd ] || { echo "lab-frr: FRR missing: run scripts/setup.sh"; exit 1; }
del_namespaces   # leftovers of an interrupted run
vty() { local r=$1; shift; in_ns "$r-cp" vtysh --vty_socket "$WORK/$r" "$@"; }
dpctl() { local r=$1; shift; "$DPCTL" --socket "$WORK/$r.sock" "$@"; }

say "== topology: host-a - r3 - r2 - r1 - r0 - host-b, bypass r3 - r1 (namespaces $P-*)"
make_topology
in_ns host-a ip addr add 192.0.2.0/31 dev ha0
in_ns host-a ip route add default via 192.0.2.1
in_ns host-b ip addr add 192.0.2.2/31 dev hb0
in_ns host-b ip route add default via 192.0.2.3

SHIM=$WORK/nompls_shim.so
cc -O2 -shared -fPIC -o "$SHIM" tests/tools/nompls_shim.c -ldl

cpu=0
for r in "${ROUTERS[@]}"; do
    read -r name lo ports <<< "$r"
    in_ns "$name-cp" ip addr add "$lo/32" dev lo
    {
        echo "[eal]"
        echo "main_cpu = $cpu"
        echo "memory_mb = 64"
        echo "[mempool]"
        echo "mbufs = 2047"
        echo "cache = 64"
        echo "[workers]"
        echo "cpus = [$((1 - cpu))]"
        for p in $ports; do
            IFS=: read -r pn veth _ <<< "$p"
            echo "[[port]]"
            echo "name = \"$pn\""
            echo "device = \"net_af_packet_$veth,iface=$veth,qdisc_bypass=0\""
        done
        for p in $ports; do
            IFS=: read -r pn _ addr <<< "$p"
            echo "[[interface]]"
            echo "name = \"$pn\""
            echo "addresses = [\"$addr\"]"
        done
        echo "[control]"
        echo "socket = \"$WORK/$name.sock\""
        echo "[forwarding]"
        echo "mode = \"router\""
        echo "[linux]"
        echo "netns = \"$P-$name-cp\""
        echo "[fpm]"
        echo "quiet_ms = 500"
    } > "$WORK/$name.toml"
    cpu=$((1 - cpu))
    # `ip netns exec` execs the program, so $! is the daemon itself.
    ip netns exec "$P-$name" "$BIN" -c "$WORK/$name.toml" > "$WORK/$name.out" 2> "$WORK/$name.err" &
    PIDS+=($!)
done
for name in "${ROUTERS_NS[@]}"; do
    for _ in $(seq 100); do
        grep -q forwarding "$WORK/$name.err" 2>/dev/null && break
        sleep 0.1
    done
    grep -q forwarding "$WORK/$name.err" || { echo "lab-frr: $name did not start:"; cat "$WORK/$name.err"; exit 1; }
done
say "== dataplanes up after $(elapsed "$T0") s; starting FRR"

# FRR: one folder per router for configs, sockets, pid files and logs. zebra runs
# under the shim (see the top of this file).
frr() {
    local r=$1 daemon=$2; shift 2
    local d=$WORK/$r pre=()
    [ "$daemon" = zebra ] && pre=(env LD_PRELOAD="$SHIM")
    in_ns "$r-cp" "${pre[@]}" /usr/lib/frr/"$daemon" -d -u frr -g frr -P 0 --vty_socket "$d" \
        -z "$d/zserv.api" -i "$d/$daemon.pid" -f "$d/$daemon.conf" \
        --log "file:$d/$daemon.log" "$@"
}
T_FRR=$(date +%s.%N)
for r in "${ROUTERS[@]}"; do
    read -r name lo ports <<< "$r"
    d=$WORK/$name
    mkdir -p "$d"
    cat > "$d/zebra.conf" <<CFG
hostname $name
fpm address 127.0.0.1 port 2620
no fpm use-next-hop-groups
CFG
    {
        echo "hostname $name"
        for p in $ports; do
            IFS=: read -r pn veth addr <<< "$p"
            case $addr in 192.0.2.*) continue ;; esac
            echo "interface $pn"
            echo " ip ospf network point-to-point"
            echo " ip ospf hello-interval 1"
            echo " ip ospf dead-interval 4"
            [ "$pn" = port2 ] && echo " ip ospf cost 100"
        done
        echo "router ospf"
        echo " ospf router-id $lo"
        echo " log-adjacency-changes detail"
        echo " network $lo/32 area 0"
        echo " network 192.168.11.0/24 area 0"
        echo " redistribute connected"
        echo " timers throttle spf 0 50 1000"
    } > "$d/ospfd.conf"
    {
        echo "hostname $name"
        echo "mpls ldp"
        echo " router-id $lo"
        echo " address-family ipv4"
        echo "  discovery hello interval 1"
        echo "  discovery hello holdtime 4"
        echo "  discovery transport-address $lo"
        echo "  label local advertise explicit-null"
        for p in $ports; do
            IFS=: read -r pn _ addr <<< "$p"
            case $addr in 192.0.2.*) continue ;; esac
            echo "  interface $pn"
        done
        echo " exit-address-family"
    } > "$d/ldpd.conf"
    chown -R frr:frr "$d"
    frr "$name" zebra -M dplane_fpm_nl
done
for name in "${ROUTERS_NS[@]}"; do
    frr "$name" ospfd
    frr "$name" ldpd --ctl_socket "$WORK/$name"
done

# zebra's LSPs (label -> next hop and out-labels) against the dataplane's label
# entries from FPM: the same set, or a line saying what differs.
lsp_diff() {
    local r=$1
    python3 - "$(vty "$r" -c 'show mpls table json')" "$(dpctl "$r" --json label show)" <<'PY'
import json, sys
zebra, dp = json.loads(sys.argv[1] or "{}"), json.loads(sys.argv[2])
want = {int(l): sorted((n["nexthop"], tuple(n.get("outLabelStack", [n["outLabel"]])))
                       for n in e["nexthops"] if n.get("installed"))
        for l, e in zebra.items()}
have = {e["label"]: sorted((p["gateway"], tuple(p["out_labels"])) for p in e["paths"])
        for e in dp["labels"] if e["eos"] and e["source"] == "fpm"}
if want != have:
    print("zebra", sorted(want.items()), "dataplane", sorted(have.items()))
PY
}

# The out-label of $r's route to $prefix (zebra's choice, from LDP), "-" if none.
out_label() {
    vty "$1" -c "show ip route $2 json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
hops = [n for e in r.get(sys.argv[1], []) if e.get("selected") for n in e["nexthops"]]
print(hops[0]["labels"][0] if hops and hops[0].get("labels") else "-")' "$2"
}

# The next hops of $r's selected route to $prefix, space-separated.
next_hops() {
    vty "$1" -c "show ip route $2 json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(" ".join(n.get("ip", "-") for e in r.get(sys.argv[1], []) if e.get("selected")
               for n in e["nexthops"]))' "$2"
}

say "== waiting for OSPF and LDP (through the dataplanes' twins) and the LSPs over FPM"
# Converged: every router has an LDP session and zebra's LSPs, and OSPF has settled
# on the short path both ways (while r2's adjacencies are still coming up, the
# bypass carries the traffic and the LSPs are not the ones checked below).
converged() {
    local r
    for r in "${ROUTERS_NS[@]}"; do
        [ "$(vty "$r" -c 'show mpls ldp neighbor' | grep -c OPERATIONAL)" -ge 1 ] || return 1
        [ -z "$(lsp_diff "$r")" ] || return 1
    done
    [ "$(next_hops r3 192.0.2.2/31)" = 192.168.11.10 ] || return 1
    [ "$(next_hops r2 192.0.2.2/31)" = 192.168.11.8 ] || return 1
    [ "$(next_hops r1 192.0.2.0/31)" = 192.168.11.9 ] || return 1
    [ "$(next_hops r0 192.0.2.0/31)" = 192.168.11.7 ] || return 1
    [ "$(out_label r3 192.0.2.2/31)" != - ] && [ "$(out_label r0 192.0.2.0/31)" != - ] || return 1
    in_ns host-a ping -c 1 -W 1 192.0.2.2 > /dev/null 2>&1
}
for _ in $(seq 120); do converged && break; sleep 0.5; done
if converged; then
    pass "OSPF, LDP and the LSPs up $(elapsed "$T_FRR") s after FRR started"
else
    fail "not converged after $(elapsed "$T_FRR") s"
fi
for r in "${ROUTERS_NS[@]}"; do
    n=$(vty "$r" -c 'show mpls ldp neighbor' | grep -c OPERATIONAL || true)
    d=$(lsp_diff "$r")
    lsps=$(vty "$r" -c 'show mpls table json' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    if [ -z "$d" ]; then
        pass "$r: $n LDP session(s); the dataplane has zebra's $lsps LSPs exactly (source fpm)"
    else
        fail "$r: LSPs differ: $d"
    fi
done

# A ping across, captured on every link. Expected per link (request westbound | reply
# eastbound): the top label the sending router's zebra chose, S bit, TTL (RFC 3032
# uniform model: the ingress PE copies the decremented IP TTL), or ipv4, or none.
check_links() {
    local tag=$1; shift
    local exp=("$@")
    capture "$tag" in_ns host-a ping -c 3 -i 0.3 -W 2 192.0.2.2
    if grep -q ' 0% packet loss' <<< "$CAPTURED"; then
        pass "$tag: host-a -> host-b ping, 0% loss"
    else
        fail "$tag: ping lost packets: $(tail -2 <<< "$CAPTURED" | head -1)"
    fi
    check_carried "$tag" "${exp[@]}"
}

# LDP's labels toward host-b (westbound) and host-a (eastbound), hop by hop.
w3=$(out_label r3 192.0.2.2/31) w2=$(out_label r2 192.0.2.2/31) w1=$(out_label r1 192.0.2.2/31)
e0=$(out_label r0 192.0.2.0/31) e1=$(out_label r1 192.0.2.0/31) e2=$(out_label r2 192.0.2.0/31)
say ""
say "==== LSPs chosen by LDP: westbound $w3 -> $w2 -> $w1, eastbound $e0 -> $e1 -> $e2"
[ "$w1" = 0 ] && [ "$e2" = 0 ] \
    && pass "the penultimate routers swap to explicit null (LDP: label local advertise explicit-null)" \
    || fail "penultimate out-labels $w1 / $e2, want 0 (explicit null)"
check_links ldp "ipv4|ipv4" "$w3 S 63|$e2 S 61" "$w2 S 62|$e1 S 62" "$w1 S 61|$e0 S 63" \
    "ipv4|ipv4" "none|none"

say ""
say "==== traceroute host-a -> host-b"
tr=$(in_ns host-a traceroute -n -q 1 -N 1 -w 2 192.0.2.2 2>&1 || true)
say "$tr" | sed 's/^/   /'
check_hops "traceroute: every hop answers, the P routers from inside the LSP" "$tr" \
    "192.0.2.1 192.168.11.10 192.168.11.8 192.168.11.6 192.0.2.2"
say ""
say "==== r2 (P): dpctl show fpm; dpctl label show"
[ -n "${LAB_QUIET:-}" ] || { dpctl r2 show fpm; dpctl r2 label show; } | sed 's/^/   /'

say ""
say "==== cut the r2 - r1 link: OSPF (dead interval 4 s) moves the LSPs to the bypass"
in_ns host-a ping -D -i 0.1 -c 150 -W 1 192.0.2.2 > "$WORK/cut.ping" 2>&1 &
pinger=$!
sleep 1
in_ns r2 ip link set r2w down
T_CUT=$(date +%s.%N)
# rerouted: r3 labels toward r1 (zebra first moves the route, LDP then labels it)
rerouted() {
    local now
    now=$(out_label r3 192.0.2.2/31)
    [ "$now" != "$w3" ] && [ "$now" != - ] && [ -z "$(lsp_diff r3)" ] && [ -z "$(lsp_diff r1)" ]
}
for _ in $(seq 60); do rerouted && break; sleep 0.25; done
t_lsp=$(elapsed "$T_CUT")
wait "$pinger" || true
# (r1 drops the link at its dead interval, after r3 rerouted: LDP may still be
# relabelling then, on a loaded host for seconds)
for _ in $(seq 40); do rerouted && break; sleep 0.25; done
# the outage: the longest gap between two answered pings
gap=$(awk -F'[][]' '/bytes from/ { t = $2; if (last && t - last > g) g = t - last; last = t }
    END { printf "%.1f", g }' "$WORK/cut.ping")
say "   $(grep 'packets transmitted' "$WORK/cut.ping")"
# (forwarding on the bypass: the last pings of the cut, or a fresh one within
# 15 s once LDP has relabelled: r0's way back waits for r1's own dead interval
# and relabelling, on a loaded host for seconds)
answered() {
    grep -q 'bytes from' <(tail -5 "$WORK/cut.ping") && return 0
    for _ in $(seq 15); do
        in_ns host-a ping -c 1 -W 1 192.0.2.2 2>/dev/null | grep -q 'bytes from' && return 0
        sleep 0.2
    done
    return 1
}
if rerouted && answered; then
    pass "rerouted: LSPs on the bypass ${t_lsp} s after the cut; no answer for $gap s (pings 0.1 s apart)"
else
    fail "no reroute after ${t_lsp} s: r3's out-label $(out_label r3 192.0.2.2/31) (was $w3); r3: $(lsp_diff r3); r1: $(lsp_diff r1)"
fi
b3=$(out_label r3 192.0.2.2/31) b1=$(out_label r1 192.0.2.2/31)
f1=$(out_label r1 192.0.2.0/31)
check_links bypass "ipv4|ipv4" "none|none" "none|none" "$b1 S 62|$e0 S 63" "ipv4|ipv4" \
    "$b3 S 63|$f1 S 62"

[ -z "${LAB_HOLD:-}" ] || { echo "holding: $WORK"; sleep 100000; }
echo ""
echo "lab-frr: $(elapsed "$T0") s"
if [ "$FAILS" -eq 0 ]; then echo "lab-frr: all checks passed"; else echo "lab-frr: $FAILS check(s) failed"; exit 1; fi
