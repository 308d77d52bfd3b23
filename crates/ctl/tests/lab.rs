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
