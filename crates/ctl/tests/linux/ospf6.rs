//! IPv6 routing across three dataplanes, each with BIRD in its control-plane
//! namespace: OSPFv3 over the twins (link-local next hops), iBGP IPv6 unicast
//! between loopbacks through a route reflector (recursive next hops through
//! OSPFv3), and carrier loss on the direct link rerouting both over the third
//! router.
//!
//! ```text
//!   host a --- r1 ======(cost 10)====== r3 --- host b (+ 2001:db8:bb::/48)
//!                \\                    //
//!                 (10) ===== r2 ===== (10)
//! ```

use super::*;

/// BIRD of router `N`: OSPFv3 on the router links, the host link as a stub,
/// the loopback as an external route (OSPFv3 runs only where there is a
/// link-local address: not on `lo`); iBGP to the other edge router's loopback.
const BIRD6: &str = r#"
log "LOG" all;
router id 10.96.0.N;
protocol device { scan time 10; }
protocol kernel { ipv6 { import none; export all; }; }
protocol direct d6 { ipv6; interface "lo"; }
protocol ospf v3 o6 {
  ipv6 { import all; export where source = RTS_DEVICE && net ~ [ 2001:db8:ff::/48+ ]; };
  area 0 {
    interface "port2" { type ptp; cost COST2; hello 1; dead 4; };
    interface "port3" { type ptp; cost 10; hello 1; dead 4; };
    interface "HOSTPORT" { stub; };
  };
}
"#;

/// iBGP: r2 reflects between r1 and r3 (it carries their traffic when the
/// direct link is down, so it must know their routes too); r3 originates
/// 2001:db8:bb::/48 (behind host b) with itself as next hop.
const BGP6: &str = r#"
protocol static st { ipv6; STATIC }
template bgp edge {
  local 2001:db8:ff::N as 65000;
  multihop;
  hold time 6; keepalive time 2; connect retry time 1;
  ipv6 { next hop self; import all; export where proto = "st"; };
}
protocol bgp to_rr from edge { neighbor 2001:db8:ff::2 as 65000; }
"#;

const BGP6_RR: &str = r#"
template bgp rrc {
  local 2001:db8:ff::2 as 65000;
  multihop;
  rr client;
  hold time 6; keepalive time 2; connect retry time 1;
  ipv6 { import all; export all; };
}
protocol bgp c1 from rrc { neighbor 2001:db8:ff::1 as 65000; }
protocol bgp c3 from rrc { neighbor 2001:db8:ff::3 as 65000; }
"#;

/// The router links: (name, router on the first end, port there, router on the
/// second end, port there).
const LINKS: [(&str, usize, &str, usize, &str); 3] = [
    ("13", 1, "port2", 3, "port2"),
    ("12", 1, "port3", 2, "port2"),
    ("23", 2, "port3", 3, "port3"),
];

/// One router: its lab (port0 and port1 to host namespaces of its own), its
/// configuration and its BIRD.
struct Router {
    lab: Lab,
    config: String,
}

impl Router {
    fn cp(&self) -> String {
        self.lab.cp()
    }
}

/// The veth ends of link `name` (in the root namespace).
fn link_ends(tag: &str, name: &str) -> (String, String) {
    (format!("{tag}x{name}a"), format!("{tag}x{name}b"))
}

/// The tx packet counter of `iface`.
fn tx(lab: &Lab, iface: &str) -> u64 {
    lab.json(&format!("show interfaces {iface}"))["interfaces"][0]["counters"]["tx_packets"]
        .as_u64()
        .unwrap_or(0)
}

/// The interface of the first path of `prefix` in `lab`'s FIB.
fn via(lab: &Lab, prefix: &str) -> Option<String> {
    route(lab, prefix).and_then(|r| r["paths"][0]["interface"].as_str().map(str::to_string))
}

/// Echo replies from `ns` to `dst` out of `n` (iputils' ping takes IPv6 by the
/// address).
fn ping6(ns: &str, dst: &str, n: u32) -> u32 {
    ping(ns, dst, n, "0.2").0
}

/// Removes the router links on drop.
struct Links(String);

impl Drop for Links {
    fn drop(&mut self) {
        for (name, ..) in LINKS {
            let _ = sh(&["ip", "link", "del", &link_ends(&self.0, name).0]);
        }
    }
}

#[test]
fn ospf3_and_ibgp_ipv6_across_three_dataplanes_reroute_on_carrier_loss() {
    let _serial = serial();
    let tag = format!("t6{}", std::process::id() % 100000);
    let links = Links(tag.clone());
    for (name, ..) in LINKS {
        let (a, b) = link_ends(&tag, name);
        ok(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
        for end in [&a, &b] {
            ok(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{end}.disable_ipv6=1"),
            ]);
            ok(&["ip", "link", "set", end, "up"]);
        }
    }
    // Each router's labs give it port0 (host a's side) and port1 (host b's).
    let mut routers: Vec<Router> = (1..=3)
        .map(|n| {
            let lab = Lab::new(
                &format!("r{n}6"),
                [&format!("10.96.{n}.2/24"), &format!("10.97.{n}.2/24")],
                None,
            );
            let mut ports = String::new();
            let mut ifaces = String::new();
            for (name, r1, p1, r2, p2) in LINKS {
                let (a, b) = link_ends(&tag, name);
                for (r, p, end) in [(r1, p1, &a), (r2, p2, &b)] {
                    if r == n {
                        ports.push_str(&format!(
                            "[[port]]\nname = \"{p}\"\ndevice = \"net_af_packet_{p},iface={end}\"\n"
                        ));
                        ifaces.push_str(&format!(
                            "[[interface]]\nname = \"{p}\"\naddresses = [\"fe80::{name}:{n}/64\"]\n"
                        ));
                    }
                }
            }
            // Only r1's port0 and r3's port1 lead to hosts.
            let host = |on: bool, addr: &str| {
                if on {
                    format!("addresses = [\"{addr}\"]\n")
                } else {
                    String::new()
                }
            };
            let config = lab.config(&format!(
                "{ports}[forwarding]\nmode = \"router\"\n\
                 [[interface]]\nname = \"port0\"\n{}\
                 [[interface]]\nname = \"port1\"\n{}\
                 {ifaces}[linux]\nnetns = \"{}\"\n",
                host(n == 1, "2001:db8:a::fe/64"),
                host(n == 3, "2001:db8:b::fe/64"),
                lab.cp()
            ));
            Router { lab, config }
        })
        .collect();
    // Host a behind r1's port0, host b behind r3's port1 (with a second network).
    let a = routers[0].lab.ns("a");
    let b = routers[2].lab.ns("b");
    let a_if = format!("dp{}a1", routers[0].lab.tag);
    let b_if = format!("dp{}b1", routers[2].lab.tag);
    ip(&a, &format!("addr add 2001:db8:a::1/64 dev {a_if} nodad"));
    ip(&a, "-6 route add default via 2001:db8:a::fe");
    ip(&b, &format!("addr add 2001:db8:b::1/64 dev {b_if} nodad"));
    ip(&b, "-6 route add default via 2001:db8:b::fe");
    ip(&b, "addr add 2001:db8:bb::1/64 dev lo");
    for r in &mut routers {
        let config = r.config.clone();
        r.lab.start_daemon_config(&config);
    }
    let mut birds = Vec::new();
    for (k, r) in routers.iter().enumerate() {
        let n = k + 1;
        let cp = r.cp();
        ip(&cp, "link set lo up");
        ip(&cp, &format!("addr add 2001:db8:ff::{n}/128 dev lo"));
        // r1's direct link is the cheap one; r3 sees it at the same cost.
        let (cost2, host) = match n {
            1 => ("10", "port0"),
            2 => ("10", "none"),
            _ => ("10", "port1"),
        };
        let mut conf = BIRD6
            .replace("10.96.0.N", &format!("10.96.0.{n}"))
            .replace("COST2", cost2)
            .replace("HOSTPORT", host);
        if n == 2 {
            conf.push_str(BGP6_RR);
        } else {
            let statics = if n == 3 {
                "route 2001:db8:bb::/48 via 2001:db8:b::1;"
            } else {
                ""
            };
            conf.push_str(
                &BGP6
                    .replace("ff::N", &format!("ff::{n}"))
                    .replace("STATIC", statics),
            );
        }
        birds.push(Bird::start(&r.lab, &cp, "r", &conf, &[]));
    }
    let r1 = &routers[0].lab;
    let logs = || {
        let mut s = String::new();
        for (k, r) in routers.iter().enumerate() {
            let cp = r.cp();
            let sock = r.lab.dir.join("r.ctl");
            s.push_str(&format!(
                "=== r{}\n--- errors\n{}--- interfaces\n{}--- routes\n{}--- kernel\n{}--- neigh\n{}--- ospf\n{}{}--- bgp\n{}--- log\n{}\n",
                k + 1,
                r.lab.dpctl("show errors").1,
                r.lab.dpctl("show interfaces").1,
                r.lab.dpctl("route show").1,
                String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "-6", "route"]).stdout),
                r.lab.dpctl("neighbor show").1,
                birdc(&cp, &sock, "show ospf neighbors"),
                birdc(&cp, &sock, "show ospf interface"),
                birdc(&cp, &sock, "show protocols"),
                std::fs::read_to_string(r.lab.dir.join("r.log")).unwrap_or_default()
            ));
        }
        // The links' veth ends, as the root namespace sees them.
        let ends = sh(&["ip", "-br", "link", "show"]).stdout;
        s.push_str("=== links\n");
        for l in String::from_utf8_lossy(&ends).lines() {
            if l.starts_with(&format!("{tag}x")) {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    };
    // OSPFv3 converges over the twins: r1 reaches b's link directly, over port2
    // via a link-local address of r3's; BGP's route follows it recursively.
    wait_long("OSPFv3 route to b's link in r1", 40, &logs, || {
        route(r1, "2001:db8:b::/64").is_some_and(|r| {
            r["paths"][0]["interface"] == "port2"
                && r["paths"][0]["gateway"]
                    .as_str()
                    .is_some_and(|g| g.starts_with("fe80::"))
        })
    });
    wait_long("iBGP route in r1", 40, &logs, || {
        via(r1, "2001:db8:bb::/48").as_deref() == Some("port2")
    });
    let before = tx(r1, "port2");
    wait_long("a -> b", 20, &logs, || {
        ping6(&a, "2001:db8:b::1", 1) == 1 && ping6(&a, "2001:db8:bb::1", 1) == 1
    });
    for dst in ["2001:db8:b::1", "2001:db8:bb::1"] {
        let got = ping6(&a, dst, 4);
        assert_eq!(got, 4, "{dst}\n{}", logs());
    }
    assert!(tx(r1, "port2") >= before + 8, "forwarded on r1's port2");
    // Carrier loss on the direct link (r3's end goes down): r1's port loses
    // carrier, its BIRD reroutes over r2, and the FIB follows the control
    // namespace's kernel within 0.1 s; BGP's route moves with its next hop.
    let cp1 = routers[0].cp();
    let kernel_via = |prefix: &str, dev: &str| {
        String::from_utf8_lossy(&sh(&["ip", "-n", &cp1, "-6", "route", "show", prefix]).stdout)
            .contains(dev)
    };
    let mut kernel_port3 = || kernel_via("2001:db8:b::/64", "port3");
    let mut fib_port3 = || via(r1, "2001:db8:b::/64").as_deref() == Some("port3");
    let t0 = Instant::now();
    let (_, r3_end) = link_ends(&tag, "13");
    ok(&["ip", "link", "set", &r3_end, "down"]);
    let [t_kernel, t_fib] = first_times(
        t0,
        Duration::from_secs(10),
        [&mut kernel_port3, &mut fib_port3],
    );
    eprintln!("carrier loss: r1's kernel rerouted after {t_kernel:?}, its FIB after {t_fib:?}");
    let (Some(tk), Some(tf)) = (t_kernel, t_fib) else {
        panic!("no reroute on carrier loss\n{}", logs());
    };
    assert!(tf <= tk + Duration::from_millis(100), "{tk:?} {tf:?}");
    // BIRD's OSPF runs its SPF on a 1 s tick: between plain kernels the reroute
    // takes up to a second. The twin's carrier loss is published at once, so
    // the dataplane's takes at most 0.1 s more.
    assert!(tf < Duration::from_millis(1100), "{tf:?}\n{}", logs());
    wait_long("iBGP route over port3", 20, &logs, || {
        via(r1, "2001:db8:bb::/48").as_deref() == Some("port3")
    });
    let before = tx(r1, "port3");
    wait_long("a -> b over r2", 20, &logs, || {
        ping6(&a, "2001:db8:b::1", 1) == 1 && ping6(&a, "2001:db8:bb::1", 1) == 1
    });
    for dst in ["2001:db8:b::1", "2001:db8:bb::1"] {
        let got = ping6(&a, dst, 4);
        assert_eq!(got, 4, "{dst}\n{}", logs());
    }
    assert!(tx(r1, "port3") >= before + 8, "forwarded on r1's port3");
    assert!(tx(&routers[1].lab, "port3") >= 8, "r2 forwarded towards r3");
    // Carrier back: the direct link again.
    ok(&["ip", "link", "set", &r3_end, "up"]);
    wait_long("back over port2", 30, &logs, || {
        via(r1, "2001:db8:b::/64").as_deref() == Some("port2")
            && via(r1, "2001:db8:bb::/48").as_deref() == Some("port2")
    });
    wait_long("a -> b direct again", 20, &logs, || {
        ping6(&a, "2001:db8:bb::1", 1) == 1
    });
    drop(birds);
    for r in &mut routers {
        r.lab.stop_daemon();
    }
    drop(links);
}
