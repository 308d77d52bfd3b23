#!/usr/bin/env bash
# Builds DPDK's l3fwd example (the benchmark peer) from Debian's dpdk-doc sources into
# target/l3fwd/ -- nothing of it is kept in this repository. Two edits make it run on
# virtual devices, which offer no rx checksum offload: the requested rx offloads are
# masked with what the device supports (port and queue configuration).
set -euo pipefail
cd "$(dirname "$0")/.."
src=/usr/share/dpdk/examples
[ -d "$src/l3fwd" ] || { echo "build-l3fwd: $src/l3fwd missing: install dpdk-doc (scripts/setup.sh)"; exit 1; }
out=target/l3fwd
rm -rf "$out"
mkdir -p "$out"
cp -r "$src/l3fwd" "$src/common" "$out/"
cd "$out/l3fwd"
sed -i 's|^\(\t*\)local_port_conf.rx_adv_conf.rss_conf.rss_hf &=|\1local_port_conf.rxmode.offloads \&= dev_info.rx_offload_capa;\n&|' main.c
sed -i 's|rxq_conf.offloads = port_conf.rxmode.offloads;|rxq_conf.offloads = port_conf.rxmode.offloads \& dev_info.rx_offload_capa;|' main.c
grep -q 'rxmode.offloads &= dev_info.rx_offload_capa' main.c || { echo "build-l3fwd: could not patch main.c"; exit 1; }
make -s shared > /dev/null
echo "$PWD/build/l3fwd"
