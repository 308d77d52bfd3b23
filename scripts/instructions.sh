#!/usr/bin/env bash
# Instructions per packet of every pipeline case (benches/benches/pipeline.rs), on
# heap buffers and on DPDK mbufs: `Work::process` and what it calls (for the peer
# `l3fwd_work`, l3fwd's per-packet work over rte_lpm: its own), counted by
# callgrind over 1500 vectors minus 500 vectors of 256 packets (so setup and the
# first vectors cancel out). Instruction counts do not move with the machine's
# load: the figure to hold a change of the core to (`make instructions`).
#
#   scripts/instructions.sh [CASE...]     (default: every case)
#
# PIPELINE_PREFIXES=N loads only the table's first N prefixes (into each of the
# bench's three tables): valgrind needs minutes per run to load the full ones.
# The LPM walks shallower then; compare cases counted with the same N.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "instructions: valgrind missing: run scripts/setup.sh"; exit 1; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(l3fwd_work ip4_forward p_swap pe_push pe_explicit_null pe_pop_lookup php ip4_ecmp4 vpn_ingress vpn_egress pw_encap pw_decap ip6_forward)
bin=$(cargo bench -p benches --bench pipeline --no-run --message-format=json 2> /dev/null \
    | python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "pipeline" and m.get("executable"):
        print(m["executable"])')
[ -x "$bin" ] || { echo "instructions: no pipeline bench binary"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# instructions of Work::process and callees over $2 vectors of case $1 ($3: mbufs)
# (the peer l3fwd_work: of its own process)
count() {
    local out="$work/cg.$1.$2.$3" top='*Work::process*'
    [ "$1" != l3fwd_work ] || top='*L3fwdWork*process*'
    env PIPELINE_PROFILE="$1" PIPELINE_VECTORS="$2" ${3:+PIPELINE_MBUF=1} \
        valgrind --tool=callgrind --callgrind-out-file="$out.%p" --collect-atstart=no \
        --toggle-collect="$top" "$bin" --bench > /dev/null 2>&1
    # (the EAL starts helper processes: one file each, theirs count nothing)
    cat "$out".* | sed -n 's/^summary: *//p' | awk '{ s += $1 } END { print s }'
}
echo "| case | heap buffers | mbufs |"
echo "|---|---:|---:|"
for c in "${cases[@]}"; do
    row="| $c |"
    for m in "" 1; do
        lo=$(count "$c" 500 "$m") hi=$(count "$c" 1500 "$m")
        row="$row $(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.1f", (b - a) / (1000 * 256) }') |"
    done
    echo "$row"
done
