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

# Turns IPv6 on in namespace $1 (make_topology leaves it off) without duplicate
# address detection, so that its addresses (added with `nodad`) and link-local
# ones serve at once.
ipv6_on() {
    local d
    in_ns "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    for d in $(in_ns "$1" ls /sys/class/net); do
        in_ns "$1" sysctl -qw "net.ipv6.conf.$d.accept_dad=0"
    done
    in_ns "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0
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

# Runs "$@" while tcpdump records ICMP, ICMPv6 and MPLS on the left end of every
# link into $WORK/$tag-IF.pcap; the command's output lands in CAPTURED.
capture() {
    local tag=$1; shift
    local caps=() l ln li
    for l in "${LINKS[@]}"; do
        read -r ln li _ _ <<< "$l"
        ip netns exec "$P-$ln" timeout 60 tcpdump --immediate-mode -Uqni "$li" -w "$WORK/$tag-$li.pcap" \
            'icmp or icmp6 or mpls' 2> "$WORK/$tag-$li.log" &
        caps+=($!)
    done
    listening "$tag" "${LINKS[@]}"
    CAPTURED=$("$@" 2>&1 || true)
    sleep 0.5
    for c in "${caps[@]}"; do kill -INT "$c" 2>/dev/null || true; done
    for c in "${caps[@]}"; do wait "$c" 2>/dev/null || true; done
}

# Waits (5 s at most each) until the tcpdump of $tag on the left interface of
# every link given ("left-ns left-if ...", or the interface alone) says it
# listens.
listening() {
    local tag=$1 l li; shift
    for l in "$@"; do
        read -r li <<< "$l"
        [[ $l == *" "* ]] && read -r _ li _ <<< "$l"
        for _ in $(seq 100); do
            grep -q listening "$WORK/$tag-$li.log" 2>/dev/null && break
            sleep 0.05
        done
    done
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
# check_hops WHAT TRACE WANT: passes when the hops of traceroute output TRACE
# (the second field of each line after its header) are WANT, space separated.
check_hops() {
    local hops
    hops=$(awk 'NR > 1 { print $2 }' <<< "$2" | paste -sd' ')
    if [ "$hops" = "$3" ]; then
        pass "$1 ($hops)"
    else
        fail "$1: hops [$hops] want [$3]"
    fi
}

# Checks the ICMP echo requests and replies of $tag's capture on every link against
# "request|reply" expectations, one per link of LINKS in order (see `carried`).
check_carried() {
    local tag=$1; shift
    local exp=("$@") k=0 l ln li rn req rep want_req want_rep
    for l in "${LINKS[@]}"; do
        read -r ln li rn _ <<< "$l"
        say "-- link $ln - $rn ($li):"
        show_capture "$tag" "$li"
        req=$(carried "$tag" "$li" "ICMP echo request")
        rep=$(carried "$tag" "$li" "ICMP echo reply")
        IFS='|' read -r want_req want_rep <<< "${exp[$k]}"
        if [ "$req" = "$want_req" ] && [ "$rep" = "$want_rep" ]; then
            pass "$tag $ln-$rn: request [$req] reply [$rep]"
        else
            fail "$tag $ln-$rn: request [$req] want [$want_req], reply [$rep] want [$want_rep]"
        fi
        k=$((k + 1))
    done
}

# The label stack of the first frame of $tag's capture on $li whose decode
# (tcpdump -v, one line a frame) matches the extended regex $what: "100:63
# 1010:S:63" (label:TTL, S on the bottom), "ipv4" for a plain IPv4 frame, "none"
# if no such frame crossed. An IPv6 payload adds its hop limit: "100:63 600:S:63
# hl 63", or "ipv6 hl 64" unlabelled.
stack_of() {
    local tag=$1 li=$2 what=$3 line out
    line=$(tcpdump -envr "$WORK/$tag-$li.pcap" 2> /dev/null | tr '\n' ' ' | sed 's/ \([0-9][0-9]:[0-9][0-9]:\)/\n\1/g' \
        | grep -m1 -E -- "$what" || true)
    if [ -z "$line" ]; then echo "none"; return; fi
    if grep -q 'MPLS (label' <<< "$line"; then
        # (tcpdump names labels 0 and 2: "label 2 (IPv6 explicit NULL), ...")
        out=$(grep -oE '\(label [0-9]+( \([^)]*\))?, (exp|tc) [0-9]+, (\[S\], )?ttl [0-9]+\)' <<< "$line" \
            | sed -E 's/\(label ([0-9]+)( \([^)]*\))?, (exp|tc) [0-9]+, (\[S\], )?ttl ([0-9]+)\)/\1 \4\5/; s/\[S\], /S /' \
            | awk '{ if (NF == 3) printf "%s%s:S:%s", (NR > 1 ? " " : ""), $1, $3; else printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $2 }')
    elif grep -q 'ethertype IPv6' <<< "$line"; then
        out=ipv6
    else
        out=ipv4
    fi
    if grep -qE 'hlim [0-9]+' <<< "$line"; then
        out="$out hl $(grep -oE 'hlim [0-9]+' <<< "$line" | head -1 | cut -d' ' -f2)"
    fi
    echo "$out"
}

# Checks, for $tag, the request and reply stacks (see stack_of) on each link
# interface: "IF request|reply" arguments. The request and the reply are the
# first frames matching $REQ and $REP (default: any echo request and reply);
# $STACK_OF names another function of stack_of's arguments to read them; the
# checks are named $NAME (default $tag).
check_stacks() {
    local tag=$1; shift
    local name=${NAME:-$tag} e li exp req rep want_req want_rep
    for e in "$@"; do
        read -r li exp <<< "$e"
        IFS='|' read -r want_req want_rep <<< "$exp"
        req=$("${STACK_OF:-stack_of}" "$tag" "$li" "${REQ:-echo request}")
        rep=$("${STACK_OF:-stack_of}" "$tag" "$li" "${REP:-echo reply}")
        if [ "$req" = "$want_req" ] && [ "$rep" = "$want_rep" ]; then
            pass "$name $li: request [$req] reply [$rep]"
        else
            fail "$name $li: request [$req] want [$want_req], reply [$rep] want [$want_rep]"
        fi
    done
}

# The ICMP and ICMPv6 time exceeded messages of a capture, decoded by tshark,
# one a line joined by ";": source, then its RFC 4950 label stack as the router
# received it (label:TTL, S on the bottom), if any.
rfc4950_stacks() {
    tshark -r "$1" -Y 'icmp.type == 11 || icmpv6.type == 3' -T fields -e ip.src -e ipv6.src \
        -e icmp.mpls.label -e icmp.mpls.s -e icmp.mpls.ttl 2> /dev/null | awk -F'\t' '{
            split($1 $2, src, ","); line = src[1]
            n = split($3, l, ","); split($4, s, ","); split($5, t, ",")
            for (i = 1; i <= n; i++) line = line " " l[i] ":" (s[i] == "1" ? "S:" : "") t[i]
            print line }' | paste -sd';' || true
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
