# Shared by the labs (sourced): the topology, stopping daemons, captures on every
# link and what they carried. Needs P (namespace prefix), WORK, NS (namespaces),
# LINKS ("left-ns left-if right-ns right-if") and `say`; `dp` needs DPCTL.

in_ns() { local n=$1; shift; ip netns exec "$P-$n" "$@"; }

# The namespaces $P-NAME of NS (lo up, no IPv6) and the veth pairs of LINKS, up.
make_topology() {
    local n l ln li rn ri e i
    for n in "${NS[@]}"; do
        ip netns add "$P-$n"
        in_ns "$n" ip link set lo up
        in_ns "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    done
    for l in "${LINKS[@]}"; do
        read -r ln li rn ri <<< "$l"
        ip link add "$li" netns "$P-$ln" type veth peer name "$ri" netns "$P-$rn"
        for e in "$ln $li" "$rn $ri"; do
            read -r n i <<< "$e"
            in_ns "$n" ip link set "$i" up
            # A veth leaves TCP/UDP checksums to "hardware", and af_packet hands the
            # router the frame before the kernel fills them in: have the kernel
            # compute them in software (LDP's and BGP's TCP need them).
            in_ns "$n" ethtool -K "$i" tx off > /dev/null
        done
    done
}

# Sends signal $1 to the processes $2..., waits up to 5 s for each, then kills it.
stop_pids() {
    local sig=$1 pid; shift
    for pid in "$@"; do kill "-$sig" "$pid" 2>/dev/null; done
    for pid in "$@"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
    done
    return 0
}

# Removes the namespaces of NS.
del_namespaces() {
    local n
    for n in "${NS[@]}"; do ip netns del "$P-$n" 2>/dev/null || true; done
    return 0
}

# Runs "$@" while tcpdump records ICMP and MPLS on the left end of every link into
# $WORK/$tag-IF.pcap; the command's output lands in CAPTURED.
capture() {
    local tag=$1; shift
    local caps=() l ln li
    for l in "${LINKS[@]}"; do
        read -r ln li _ _ <<< "$l"
        ip netns exec "$P-$ln" timeout 60 tcpdump -Uqni "$li" -w "$WORK/$tag-$li.pcap" 'icmp or mpls' 2> /dev/null &
        caps+=($!)
    done
    sleep 1
    CAPTURED=$("$@" 2>&1 || true)
    sleep 0.5
    for c in "${caps[@]}"; do kill -INT "$c" 2>/dev/null || true; done
    for c in "${caps[@]}"; do wait "$c" 2>/dev/null || true; done
}

# What the first frame of $tag's capture on link interface $li that carries $what
# ("echo request", "echo reply") looked like: "100 S 63" (top label, S bit, TTL),
# "ipv4" for a plain one, "none" if no such frame crossed the link.
carried() {
    local tag=$1 li=$2 what=$3 line
    line=$(tcpdump -enr "$WORK/$tag-$li.pcap" 2> /dev/null | grep -m1 "$what" || true)
    if [ -z "$line" ]; then echo "none"; return; fi
    if grep -q 'MPLS (label' <<< "$line"; then
        sed -E 's/.*MPLS \(label ([0-9]+), (exp|tc) [0-9]+, (\[S\], )?ttl ([0-9]+)\).*/\1 \3\4/; s/\[S\], /S /' <<< "$line" \
            | awk '{ if (NF == 3) print $1, "S", $3; else print $1, "-", $2 }'
    else
        echo "ipv4"
    fi
}

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }

# Checks the echo requests and replies of $tag's capture on every link against
# "request|reply" expectations, one per link of LINKS in order (see `carried`).
check_carried() {
    local tag=$1; shift
    local exp=("$@") k=0 l ln li rn req rep want_req want_rep
    for l in "${LINKS[@]}"; do
        read -r ln li rn _ <<< "$l"
        say "-- link $ln - $rn ($li):"
        show_capture "$tag" "$li"
        req=$(carried "$tag" "$li" "echo request")
        rep=$(carried "$tag" "$li" "echo reply")
        IFS='|' read -r want_req want_rep <<< "${exp[$k]}"
        if [ "$req" = "$want_req" ] && [ "$rep" = "$want_rep" ]; then
            pass "$tag $ln-$rn: request [$req] reply [$rep]"
        else
            fail "$tag $ln-$rn: request [$req] want [$want_req], reply [$rep] want [$want_rep]"
        fi
        k=$((k + 1))
    done
}

# The first lines of $tag's capture on $li, for the reader.
show_capture() {
    [ -n "${LAB_QUIET:-}" ] && return
    { tcpdump -enr "$WORK/$1-$2.pcap" 2> /dev/null || true; } | sed -n '1,4p' | cut -c1-160 | sed 's/^/   /'
}

# Runs `dpctl ARGS...` against router $1's socket ($WORK/$1.sock), showing the
# command; a refusal is a failed check.
dp() {
    local r=$1; shift
    say "   $r# dpctl $*"
    if ! "$DPCTL" --socket "$WORK/$r.sock" "$@" > /dev/null; then
        fail "$r: dpctl $*"
    fi
}
