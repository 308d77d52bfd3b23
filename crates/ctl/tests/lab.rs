//! The seed article's four-router MPLS lab (scripts/lab.sh) as a test: four real
//! dataplaned routers in network namespaces; for plain LSPs, explicit null and PHP
//! the label value, S bit and TTL of the echo request and reply are checked on every
//! link, host-to-host ping must not lose a packet, and traceroute through the LSPs
//! must show every hop (RFC 4950 ICMP from the P routers). Needs root, iproute2,
//! tcpdump, traceroute and ethtool (scripts/setup.sh installs them).

use std::process::Command;

#[test]
fn four_router_mpls_lab() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/lab.sh");
    let out = Command::new("bash")
        .arg(script)
        .env("BIN", env!("CARGO_BIN_EXE_dataplaned"))
        .env("LAB_QUIET", "1")
        .output()
        .expect("run scripts/lab.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    let passes = stdout.lines().filter(|l| l.starts_with("PASS")).count();
    assert!(out.status.success(), "lab failed:\n{stdout}\n{stderr}");
    // 3 modes x (ping + 5 links) + traceroute
    assert_eq!(passes, 3 * 6 + 1, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

/// The same four routers with FRR as their control plane (scripts/lab-frr.sh):
/// zebra, ospfd and ldpd in each router's control-plane namespace peer through the
/// dataplane; LDP chooses the labels and zebra hands them over FPM. The dataplane's
/// label table must equal zebra's LSPs on every router, every core link must carry
/// LDP's label (explicit null on the last), traceroute must show every hop, and a
/// cut core link must move the LSPs to the bypass. Needs FRR too.
#[test]
fn four_router_frr_ldp_lab() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/lab-frr.sh");
    let out = Command::new("bash")
        .arg(script)
        .env("BIN", env!("CARGO_BIN_EXE_dataplaned"))
        .env("DPCTL", env!("CARGO_BIN_EXE_dpctl"))
        .env("LAB_QUIET", "1")
        .output()
        .expect("run scripts/lab-frr.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    let passes = stdout.lines().filter(|l| l.starts_with("PASS")).count();
    assert!(out.status.success(), "lab-frr failed:\n{stdout}\n{stderr}");
    // converged + 4 routers' LSPs + explicit null + 2 x (ping + 6 links)
    // + traceroute + reroute
    assert_eq!(passes, 1 + 4 + 1 + 2 * 7 + 1 + 1, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}
