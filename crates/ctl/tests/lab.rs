//! The labs as tests: real dataplaned routers in network namespaces, checked on
//! the wire. Needs root, iproute2, tcpdump, tshark, traceroute (and its
//! traceroute6), ethtool, python3 and FRR (scripts/setup.sh installs them).

use std::process::Command;

mod common;

/// Runs `scripts/NAME` quietly with this build's binaries; it must pass every one
/// of its `passes` checks.
fn run_lab(name: &str, passes: usize) {
    let script = format!("{}/../../scripts/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(&script)
        .env("BIN", env!("CARGO_BIN_EXE_dataplaned"))
        .env("DPCTL", common::dpctl_bin())
        .env("LAB_QUIET", "1")
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    let passed = stdout.lines().filter(|l| l.starts_with("PASS")).count();
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    assert_eq!(passed, passes, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

/// The seed article's four-router MPLS lab (scripts/lab.sh): for plain LSPs,
/// explicit null and PHP the label value, S bit and TTL of the echo request and
/// reply are checked on every link, host-to-host ping must not lose a packet, and
/// traceroute through the LSPs must show every hop (RFC 4950 ICMP from the P
/// routers). IPv6 hosts are reached over the same LSPs by 6PE, with the 6PE
/// label and with label 2: both labels, their TTLs and the hop limit on every
/// link in each mode, and traceroute6 in each mode with the RFC 4950 stack in
/// the P routers' ICMPv6.
#[test]
fn four_router_mpls_lab() {
    // 3 modes x (3 pings + IPv4, 6PE and label 2 on 5 links + traceroute6's
    // hops and RFC 4950 stacks) + traceroute
    run_lab("lab.sh", 3 * (3 + 3 * 5 + 2) + 1);
}

/// The same four routers with FRR as their control plane (scripts/lab-frr.sh):
/// zebra, ospfd and ldpd in each router's control-plane namespace peer through the
/// dataplane; LDP chooses the labels and zebra hands them over FPM. The dataplane's
/// label table must equal zebra's LSPs on every router, every core link must carry
/// LDP's label (explicit null on the last), traceroute must show every hop, and a
/// cut core link must move the LSPs to the bypass.
#[test]
fn four_router_frr_ldp_lab() {
    // converged + 4 routers' LSPs + explicit null + 2 x (ping + 6 links)
    // + traceroute + reroute
    run_lab("lab-frr.sh", 1 + 4 + 1 + 2 * 7 + 1 + 1);
}

/// MPLS VPN services on the same four routers (scripts/lab-vpn.sh): VRFs red
/// and blue with the same IPv4 and IPv6 addresses behind both PEs (IPv6 by
/// 6VPE over the IPv4 LSPs), their VPN label under the transport label on
/// every core link (label, S bit, TTL, hop limit checked), no ping across VRFs
/// in either family, traceroute and traceroute6 (RFC 4950 stacks) inside a
/// VRF, a VPWS pseudowire carrying ARP and 802.1Q-tagged frames byte for byte
/// with the control word, and the transport LSP relabelled, then rerouted over
/// a bypass, under both without a VPN route rewritten.
#[test]
fn four_router_vpn_lab() {
    // 2 VRFs x 2 families x (ping + 5 links) + 4 across + no echo request
    // across + traceroute + traceroute6 (hops, RFC 4950 stacks)
    // + VPWS (ping, 3 links, ARP, tagged frames) + relabel (routes, ping,
    // 2 links, PW ping, PW link) + reroute (routes, pings, 2 links, PW link)
    run_lab("lab-vpn.sh", 2 * 2 * 6 + 4 + 1 + 1 + 2 + 6 + 6 + 5);
}
