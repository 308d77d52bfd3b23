#!/usr/bin/env bash
# Builds DPDK's l3fwd example (the benchmark peer) from Debian's dpdk-doc sources into
# target/l3fwd/ -- nothing of it is kept in this repository. Two edits make it run on
# virtual devices, which offer no rx checksum offload: the requested rx offloads are
# masked with what the device supports (port and queue configuration).
#
#   scripts/build-l3fwd.sh [--full-table]
#
# --full-table: into target/l3fwd-full/, its lookups sized for full tables: the IPv4
# LPM for 2^20 rules and 2^16 tbl8 groups (the stock one takes 1,024 rules and 256
# groups), the IPv6 LPM for 2^18 rules, the IPv6 FIB (rte_fib6 trie) for 2^19
# routes (its RIB counts its branch nodes too) and 300,000 tbl8 groups (it
# reserves the worst case per route: 273,035
# for the 2024 table's 160,147 prefixes; the stock one takes 2^16 - 1 and 2^15).
set -euo pipefail
cd "$(dirname "$0")/.."
src=/usr/share/dpdk/examples
[ -d "$src/l3fwd" ] || { echo "build-l3fwd: $src/l3fwd missing: install dpdk-doc (scripts/setup.sh)"; exit 1; }
full=${1:-}
case "$full" in
    "") out=target/l3fwd ;;
    --full-table) out=target/l3fwd-full ;;
    *) echo "usage: build-l3fwd.sh [--full-table]"; exit 2 ;;
esac
rm -rf "$out"
mkdir -p "$out"
cp -r "$src/l3fwd" "$src/common" "$out/"
cd "$out/l3fwd"
sed -i 's|^\(\t*\)local_port_conf.rx_adv_conf.rss_conf.rss_hf &=|\1local_port_conf.rxmode.offloads \&= dev_info.rx_offload_capa;\n&|' main.c
sed -i 's|rxq_conf.offloads = port_conf.rxmode.offloads;|rxq_conf.offloads = port_conf.rxmode.offloads \& dev_info.rx_offload_capa;|' main.c
grep -q 'rxmode.offloads &= dev_info.rx_offload_capa' main.c || { echo "build-l3fwd: could not patch main.c"; exit 1; }
if [ -n "$full" ]; then
    sed -i -e 's|^#define IPV4_L3FWD_LPM_MAX_RULES .*|#define IPV4_L3FWD_LPM_MAX_RULES (1 << 20)|' \
        -e 's|^#define IPV4_L3FWD_LPM_NUMBER_TBL8S .*|#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 16)|' l3fwd_lpm.c
    sed -i -e 's|^#define IPV6_L3FWD_LPM_MAX_RULES .*|#define IPV6_L3FWD_LPM_MAX_RULES (1 << 18)|' l3fwd_lpm.c
    grep -q 'IPV4_L3FWD_LPM_MAX_RULES (1 << 20)' l3fwd_lpm.c && grep -q 'NUMBER_TBL8S (1 << 16)' l3fwd_lpm.c \
        && grep -q 'IPV6_L3FWD_LPM_MAX_RULES (1 << 18)' l3fwd_lpm.c \
        || { echo "build-l3fwd: could not size the LPM in l3fwd_lpm.c"; exit 1; }
    sed -i -e 's|^\(\t*\)config.max_routes = (1 << 16) - 1;|\1config.max_routes = (1 << 19);|' \
        -e 's|^\(\t*\)config.trie.num_tbl8 = (1 << 15);|\1config.trie.num_tbl8 = 300000;|' l3fwd_fib.c
    grep -q 'config.max_routes = (1 << 19);' l3fwd_fib.c && grep -q 'config.trie.num_tbl8 = 300000;' l3fwd_fib.c \
        || { echo "build-l3fwd: could not size the IPv6 FIB in l3fwd_fib.c"; exit 1; }
fi
make -s shared > /dev/null
echo "$PWD/build/l3fwd"
