//! IPv6 through a real dataplaned between two host namespaces (net_af_packet
//! on veth pairs), side by side with a plain Linux router
//! (`net.ipv6.conf.all.forwarding=1`) between two hosts of its own with the
//! same addresses: the same probes must get the same answers from both —
//! echo replies from the router and across it, time exceeded, no route,
//! administratively prohibited, packet too big with the egress MTU, beyond
//! scope for a link-local source. Neighbour discovery runs both ways (the
//! hosts solicit the router, the router solicits the hosts). Needs root (CI
//! runs as root), iproute2 and iputils-ping.

use crate::common::*;

/// The probes: (what, ping arguments before the destination, destination).
const PROBES: [(&str, &str, &str); 9] = [
    ("the router", "", "2001:db8:a::fe"),
    ("across it", "", "2001:db8:b::1"),
    ("hop limit 1", "-t 1", "2001:db8:b::1"),
    ("no route", "", "2001:db8:99::1"),
    ("unreachable route", "", "2001:db8:66::1"),
    ("prohibit route", "", "2001:db8:77::1"),
    ("too big for b's link", "-s 1400 -M do", "2001:db8:b::1"),
    ("a route of the file via b", "", "2001:db8:88::1"),
    ("a route of dpctl via b", "", "2001:db8:89::1"),
];

/// One ping from `ns` with `args` to `dst`: "reply", or the ICMPv6 error ping
/// prints, and the address it came from.
fn probe(ns: &str, args: &str, dst: &str) -> (String, String) {
    let mut cmd = vec![
        "ip", "netns", "exec", ns, "ping", "-6", "-c", "1", "-W", "2",
    ];
    cmd.extend(args.split_whitespace());
    cmd.push(dst);
    let o = sh(&cmd);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    for l in out.lines() {
        if l.contains("bytes from") {
            return ("reply".into(), String::new());
        }
        if let Some(rest) = l.strip_prefix("From ") {
            let (from, msg) = rest.split_once(' ').unwrap_or((rest, ""));
            let msg = msg.split_once(' ').map_or(msg, |m| m.1);
            return (msg.to_string(), from.to_string());
        }
    }
    (format!("nothing ({})", out.trim()), String::new())
}

/// The link-local address of `dev` in `ns`.
fn link_local(ns: &str, dev: &str) -> String {
    let o = sh(&[
        "ip", "-n", ns, "-6", "-o", "addr", "show", "dev", dev, "scope", "link",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    out.split_whitespace()
        .skip_while(|w| *w != "inet6")
        .nth(1)
        .and_then(|a| a.split('/').next())
        .unwrap_or_default()
        .to_string()
}

/// Host `ns`'s side `dev`: its address, its default route via the router, and
/// (for b) the addresses the routes via it lead to.
fn host6(ns: &str, dev: &str, addr: &str, gw: &str) {
    ok(&["ip", "-n", ns, "addr", "add", addr, "dev", dev, "nodad"]);
    ok(&["ip", "-n", ns, "-6", "route", "add", "default", "via", gw]);
    for a in ["2001:db8:88::1/64", "2001:db8:89::1/64"] {
        ok(&["ip", "-n", ns, "addr", "add", a, "dev", "lo"]);
    }
}

/// Waits (5 s at most) until `dev` in `ns` has a link-local address that is no
/// longer tentative.
fn wait_link_local(ns: &str, dev: &str) {
    let t0 = std::time::Instant::now();
    loop {
        let o = sh(&[
            "ip", "-n", ns, "-6", "addr", "show", "dev", dev, "scope", "link",
        ]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if out.contains("inet6") && !out.contains("tentative") {
            return;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{ns}/{dev}: no link-local address: {out}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The plain Linux router and its hosts; removed on drop.
struct Kernel {
    tag: String,
}

impl Kernel {
    fn new() -> Kernel {
        let tag = format!("k6{}", std::process::id() % 100000);
        let k = Kernel { tag };
        let (r, a, b) = (k.ns("r"), k.ns("a"), k.ns("b"));
        for n in [&r, &a, &b] {
            ok(&["ip", "netns", "add", n]);
            ok(&["ip", "-n", n, "link", "set", "lo", "up"]);
        }
        for side in ["a", "b"] {
            let (outer, inner) = (format!("{}{side}0", k.tag), format!("{}{side}1", k.tag));
            ok(&[
                "ip", "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ]);
            ok(&["ip", "link", "set", &outer, "netns", &r]);
            ok(&["ip", "link", "set", &inner, "netns", &k.ns(side)]);
            ok(&["ip", "-n", &r, "link", "set", &outer, "up"]);
            ok(&["ip", "-n", &k.ns(side), "link", "set", &inner, "up"]);
        }
        ok(&[
            "ip",
            "netns",
            "exec",
            &r,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.forwarding=1",
        ]);
        let dev = |s: &str| format!("{}{s}", k.tag);
        ok(&[
            "ip",
            "-n",
            &r,
            "addr",
            "add",
            "2001:db8:a::fe/64",
            "dev",
            &dev("a0"),
            "nodad",
        ]);
        ok(&[
            "ip",
            "-n",
            &r,
            "addr",
            "add",
            "2001:db8:b::fe/64",
            "dev",
            &dev("b0"),
            "nodad",
        ]);
        ok(&["ip", "-n", &r, "link", "set", &dev("b0"), "mtu", "1280"]);
        ok(&[
            "ip",
            "-n",
            &r,
            "-6",
            "route",
            "add",
            "unreachable",
            "2001:db8:66::/48",
        ]);
        ok(&[
            "ip",
            "-n",
            &r,
            "-6",
            "route",
            "add",
            "prohibit",
            "2001:db8:77::/48",
        ]);
        host6(&a, &dev("a1"), "2001:db8:a::1/64", "2001:db8:a::fe");
        host6(&b, &dev("b1"), "2001:db8:b::1/64", "2001:db8:b::fe");
        wait_link_local(&a, &dev("a1"));
        wait_link_local(&r, &dev("a0"));
        k
    }

    fn ns(&self, side: &str) -> String {
        format!("{}{side}", self.tag)
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        for side in ["r", "a", "b"] {
            let _ = sh(&["ip", "netns", "del", &self.ns(side)]);
        }
    }
}

#[test]
fn ipv6_answers_match_a_linux_router() {
    let kernel = Kernel::new();
    let mut lab = Lab::new(
        "six",
        ["10.99.18.1/24", "10.99.19.1/24"],
        Some(["10.99.18.254", "10.99.19.254"]),
    );
    let t = lab.tag.clone();
    let (ns_a, ns_b) = (format!("dp{t}a"), format!("dp{t}b"));
    host6(
        &ns_a,
        &format!("dp{t}a1"),
        "2001:db8:a::1/64",
        "2001:db8:a::fe",
    );
    host6(
        &ns_b,
        &format!("dp{t}b1"),
        "2001:db8:b::1/64",
        "2001:db8:b::fe",
    );
    wait_link_local(&ns_a, &format!("dp{t}a1"));
    lab.start_daemon(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\n\
         addresses = [\"10.99.18.254/24\", \"2001:db8:a::fe/64\", \"fe80::fe/64\"]\n\
         [[interface]]\nname = \"port1\"\nmtu = 1280\n\
         addresses = [\"10.99.19.254/24\", \"2001:db8:b::fe/64\", \"fe80::fe/64\"]\n\
         [[route]]\nprefix = \"2001:db8:66::/48\"\nkind = \"unreachable\"\n\
         [[route]]\nprefix = \"2001:db8:77::/48\"\nkind = \"prohibit\"\n\
         [[route]]\nprefix = \"2001:db8:88::/48\"\nvia = [{ gateway = \"2001:db8:b::1\" }]\n",
    );
    let (code, _, err) = lab.dpctl("route add 2001:db8:89::/48 via 2001:db8:b::1");
    assert_eq!(code, 0, "{err}");
    // A static IPv6 neighbour, listed as such, then deleted.
    let nbr = |addr: &str| {
        lab.json("neighbor show")["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["address"] == addr)
            .map(|n| n["source"].as_str().unwrap_or("").to_string())
    };
    let (code, _, err) = lab.dpctl("neighbor add port1 2001:db8:b::77 02:00:00:00:00:77");
    assert_eq!(code, 0, "{err}");
    assert_eq!(nbr("2001:db8:b::77").as_deref(), Some("static"));
    let (code, _, err) = lab.dpctl("neighbor del port1 2001:db8:b::77");
    assert_eq!(code, 0, "{err}");
    assert_eq!(nbr("2001:db8:b::77"), None);
    let mut probes: Vec<(&str, String, String)> = PROBES
        .iter()
        .map(|&(what, args, dst)| (what, args.to_string(), dst.to_string()))
        .collect();
    for (what, args, dst) in &probes {
        let linux = probe(&kernel.ns("a"), args, dst);
        let ours = probe(&ns_a, args, dst);
        eprintln!("{what}: linux {linux:?}, dataplane {ours:?}");
        if ours.0 != linux.0 {
            for c in [
                "show errors",
                "show interfaces address",
                "show run",
                "neighbor show",
                "route show",
            ] {
                eprintln!("{c}: {}", lab.dpctl(c).1);
            }
        }
        assert_eq!(ours.0, linux.0, "{what} ({args} {dst})");
        // Errors come from the router's address on the pinger's link.
        if ours.0 != "reply" {
            assert_eq!(ours.1, "2001:db8:a::fe", "{what}");
        }
    }
    // A link-local source may not leave its link: beyond scope, from the
    // router's link-local address.
    let k_ll = link_local(&kernel.ns("a"), &format!("{}a1", kernel.tag));
    let d_ll = link_local(&ns_a, &format!("dp{t}a1"));
    let linux = probe(
        &kernel.ns("a"),
        &format!("-I {k_ll}%{}a1", kernel.tag),
        "2001:db8:b::1",
    );
    let ours = probe(&ns_a, &format!("-I {d_ll}%dp{t}a1"), "2001:db8:b::1");
    eprintln!("beyond scope: linux {linux:?}, dataplane {ours:?}");
    assert_eq!(ours.0, linux.0);
    assert!(ours.0.contains("Beyond scope"), "{ours:?}");
    assert!(ours.1.starts_with("fe80::fe%"), "{ours:?}");
    probes.clear();
    // The pinger was learned from its solicitations.
    assert_eq!(nbr("2001:db8:a::1").as_deref(), Some("learned"));
    let summary = lab.stop_daemon();
    for c in [
        "ip6_hop_limit_expired",
        "ip6_no_route",
        "ip6_unreachable",
        "ip6_prohibit",
        "ip6_packet_too_big",
        "ip6_beyond_scope",
        "ip6-lookup",
    ] {
        assert!(summary.contains(c), "{c} missing from {summary}");
    }
}
