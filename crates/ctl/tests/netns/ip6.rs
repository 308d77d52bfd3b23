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

/// sFlow on IPv6: every packet port0 receives is sampled (1 in 1); a UDP packet
/// routed to b's address and one routed by a /48 via b both report b's address
/// as the IPv6 next hop in extended_router, with the masks of the routes the
/// lookup finds (a's and b's neighbour /128s, the /48).
#[test]
fn ipv6_sflow_samples_name_next_hop_and_masks() {
    use sflow::{Address, FlowRecord, Interface, Sample, decode_datagram};
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(std::time::Duration::from_millis(300)))
        .unwrap();
    let cport = collector.local_addr().unwrap().port();
    let mut lab = Lab::new(
        "sf6",
        ["10.99.20.1/24", "10.99.21.1/24"],
        Some(["10.99.20.254", "10.99.21.254"]),
    );
    let t = lab.tag.clone();
    let ns_a = format!("dp{t}a");
    host6(
        &ns_a,
        &format!("dp{t}a1"),
        "2001:db8:a::1/64",
        "2001:db8:a::fe",
    );
    host6(
        &format!("dp{t}b"),
        &format!("dp{t}b1"),
        "2001:db8:b::1/64",
        "2001:db8:b::fe",
    );
    wait_link_local(&ns_a, &format!("dp{t}a1"));
    lab.start_daemon(&format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\n\
         addresses = [\"10.99.20.254/24\", \"2001:db8:a::fe/64\"]\n\
         [[interface]]\nname = \"port1\"\n\
         addresses = [\"10.99.21.254/24\", \"2001:db8:b::fe/64\"]\n\
         [[route]]\nprefix = \"2001:db8:90::/48\"\nvia = [{{ gateway = \"2001:db8:b::1\" }}]\n\
         [sflow]\nagent_address = \"192.0.2.7\"\ncollectors = [\"127.0.0.1:{cport}\"]\n\
         [[sflow.interface]]\nname = \"port0\"\nrate = 1\ndirection = \"rx\"\n"
    ));
    // Both hosts resolved (the echo replies need a), then the UDP packets.
    let (got, out) = (0..20)
        .map(|_| probe(&ns_a, "", "2001:db8:b::1"))
        .find(|p| p.0 == "reply")
        .map_or((false, String::new()), |p| (true, p.1));
    assert!(got, "no echo reply across the router {out}");
    let send = "import socket\ns=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)\n\
                for i in range(20):\n    s.sendto(b'x'*32,('2001:db8:b::1',9))\n    \
                s.sendto(b'x'*32,('2001:db8:90::1',9))\n";
    ok(&["ip", "netns", "exec", &ns_a, "python3", "-c", send]);
    let want_b = (Address::V6("2001:db8:b::1".parse().unwrap()), 128, 128);
    let want_88 = (Address::V6("2001:db8:b::1".parse().unwrap()), 128, 48);
    let (mut to_b, mut to_88, mut other) = (0, 0, Vec::new());
    let mut buf = vec![0u8; 65536];
    let t0 = std::time::Instant::now();
    while (to_b < 20 || to_88 < 20) && t0.elapsed() < std::time::Duration::from_secs(20) {
        let Ok(len) = collector.recv(&mut buf) else {
            continue;
        };
        let d = decode_datagram(&buf[..len]).expect("our datagrams decode");
        for s in d.samples.iter() {
            let Sample::Flow(f) = s else { continue };
            let header = f.records.iter().find_map(|r| match r {
                FlowRecord::SampledHeader(h) => Some(h.header.to_vec()),
                _ => None,
            });
            // IPv6/UDP to port 9 only (not the echoes, nor neighbour discovery).
            let Some(h) = header.filter(|h| h.len() >= 58 && h[12..14] == [0x86, 0xdd]) else {
                continue;
            };
            if h[20] != 17 || h[56..58] != [0, 9] {
                continue;
            }
            let router = f.records.iter().find_map(|r| match r {
                FlowRecord::ExtendedRouter(x) => Some((x.next_hop, x.src_mask_len, x.dst_mask_len)),
                _ => None,
            });
            let dst: [u8; 16] = h[38..54].try_into().unwrap();
            match (std::net::Ipv6Addr::from(dst).to_string().as_str(), router) {
                ("2001:db8:b::1", Some(r)) if r == want_b && f.output == Interface::Index(2) => {
                    to_b += 1
                }
                ("2001:db8:90::1", Some(r)) if r == want_88 && f.output == Interface::Index(2) => {
                    to_88 += 1
                }
                (d, r) => other.push(format!("{d} {r:?} {:?}", f.output)),
            }
        }
    }
    assert!(
        to_b == 20 && to_88 == 20 && other.is_empty(),
        "to b {to_b}, to the /48 {to_88}, unlike: {other:?}"
    );
    lab.stop_daemon();
}
