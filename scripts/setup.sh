#!/usr/bin/env bash
# Set up a fresh Debian bookworm machine for building, testing and running the
# dataplane: Debian packages (DPDK 22.11, libclang for bindgen, network tools for
# the lab and the tests) and 2 MiB hugepages. Idempotent: safe to run again.
#
#   scripts/setup.sh            install packages, reserve hugepages
#   HUGEPAGES=1024 scripts/setup.sh
#
# Runs as root (CI does). Without root it only checks and says what is missing.
set -euo pipefail

HUGEPAGES=${HUGEPAGES:-512}

# Every Debian package the build, the tests, the lab and the benchmarks use.
PACKAGES=(
    # DPDK 22.11: libraries + headers + pkg-config file; dpdk-dev has dpdk-testpmd.
    dpdk dpdk-dev libdpdk-dev pkg-config
    # bindgen needs libclang; the C shim is built by cc (gcc is on the image).
    clang libclang-dev
    # lab and network tests
    iproute2 iputils-ping tcpdump tshark python3-scapy traceroute ethtool
    # routing daemons that run beside the dataplane ([linux] control plane tests)
    bird2 frr
    # l3fwd sources for the benchmark peer; instruction counts (make instructions)
    dpdk-doc make valgrind
    # the MPLS benchmarks' peer (scripts/bench-io.py --mode mpls-*: Open vSwitch with
    # DPDK, run privately per round; the distribution's own service is not used)
    openvswitch-switch-dpdk
    # promtool checks the metrics exposition; make deb and its checks
    prometheus dpkg-dev lintian
)

log() { printf 'setup: %s\n' "$*"; }

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        log "missing packages: ${missing[*]} (run this script as root)"
        exit 1
    fi
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Other sessions may hold the dpkg lock: wait for it rather than fail.
    apt_opts=(-y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
    # tshark asks whether non-root users may capture; answer no without a prompt.
    echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections 2>/dev/null || true
    apt-get -o DPkg::Lock::Timeout=600 -q update
    apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}"
else
    log "all packages present"
fi

pkg-config --exists libdpdk || { log "libdpdk still not found by pkg-config"; exit 1; }
log "DPDK $(pkg-config --modversion libdpdk)"

# Hugepages: reserve at runtime when we can. The project runs EAL with --in-memory
# (no hugetlbfs mount needed) and falls back to --no-huge where pages are missing,
# so a failure here is reported, not fatal.
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
    cur=$(cat /proc/sys/vm/nr_hugepages)
    if [ "$cur" -lt "$HUGEPAGES" ]; then
        echo "$HUGEPAGES" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
    fi
    now=$(cat /proc/sys/vm/nr_hugepages)
    log "hugepages: $now x 2 MiB reserved (wanted $HUGEPAGES)"
    if ! mountpoint -q /dev/hugepages 2>/dev/null; then
        mkdir -p /dev/hugepages
        mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages 2>/dev/null \
            && log "hugetlbfs mounted on /dev/hugepages" \
            || log "could not mount hugetlbfs (fine: the project uses --in-memory)"
    fi
else
    log "not root: hugepages left as they are ($(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo ?))"
fi

# Rust toolchain parts the checks use.
if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy || true
    # The fuzzers (scripts/fuzz.sh): libFuzzer through cargo-fuzz, on nightly.
    rustup toolchain list 2>/dev/null | grep -q '^nightly' || rustup toolchain install nightly --profile minimal || true
fi
if command -v cargo >/dev/null 2>&1 && ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked || log "could not install cargo-fuzz (scripts/fuzz.sh needs it)"
fi
log "done"
