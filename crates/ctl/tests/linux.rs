//! The Linux control plane end to end: dataplaned with `[linux]` between two host
//! namespaces; its TAP twins live in a third (control-plane) namespace where the
//! tests run `ip addr/route/neigh/link` (and BIRD) and check that `dpctl --json`
//! shows exactly what Linux holds, and that traffic is forwarded by the dataplane
//! on what was learned. Needs root, iproute2 and iputils-ping.

mod common;
#[path = "linux/ospf6.rs"]
mod ospf6;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// One daemon at a time: each runs workers, BIRD and bursts of netlink on a
/// 2-core machine.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A router config: port0 10.N.1.1/24, port1 10.N.2.1/24, `[linux]` in `cp`,
/// then `extra`.
fn two_port_router(cp: &str, n: u8, extra: &str) -> String {
    format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.{n}.1.1/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.{n}.2.1/24\"]\n\
         [linux]\nnetns = \"{cp}\"\n{extra}"
    )
}

/// A lab of two hosts (10.N.1.2 and 10.N.2.2, the router their gateway) and
/// its daemon started with [`two_port_router`]; with the control namespace.
fn two_port_lab(kind: &str, n: u8, extra: &str) -> (Lab, String) {
    let mut lab = Lab::new(
        kind,
        [&format!("10.{n}.1.2/24"), &format!("10.{n}.2.2/24")],
        Some([&format!("10.{n}.1.1"), &format!("10.{n}.2.1")]),
    );
    let cp = lab.cp();
    lab.start_daemon(&two_port_router(&cp, n, extra));
    (lab, cp)
}

/// Whether `twin`'s carrier is on, as `show linux` says.
fn twin_carrier(lab: &Lab, twin: &str) -> bool {
    lab.json("show linux")["twins"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["twin"] == twin && t["carrier"] == true)
}

/// Waits up to 5 s for `f` to hold.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ip(ns: &str, args: &str) {
    let mut v = vec!["ip", "-n", ns];
    v.extend(args.split_whitespace());
    ok(&v);
}

/// The route for exactly `prefix` in table 0, if any.
fn route(lab: &Lab, prefix: &str) -> Option<Value> {
    let v = lab.json(&format!("route show {prefix}"));
    v["routes"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["prefix"] == prefix).cloned())
}

/// The interface's addresses but the link-local ones the kernel gives every
/// twin.
fn addresses(lab: &Lab, iface: &str) -> Vec<String> {
    let v = lab.json("show interfaces address");
    v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == iface)
        .map(|i| {
            i["addresses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .filter(|a| !a.starts_with("fe80:"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn linux_state_is_reflected_in_the_dataplane() {
    let _serial = serial();
    let mut lab = Lab::new(
        "lx",
        ["10.77.1.2/24", "10.77.2.2/24"],
        Some(["10.77.1.1", "10.77.2.1"]),
    );
    let cp = lab.cp();
    lab.start_daemon(&format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.77.1.1/24\"]\n\
         [[interface]]\nname = \"port1\"\n\
         [[interface]]\nname = \"port0.100\"\nparent = \"port0\"\nvlan = 100\n\
         addresses = [\"10.77.100.1/24\"]\n\
         [[port]]\nname = \"port2\"\ndevice = \"net_tap_{t},iface=dptap{t}\"\n\
         [linux]\nnetns = \"{cp}\"\n",
        t = lab.tag
    ));
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    // The twins exist with the ports' MACs; the file's address went to Linux.
    let show = lab.json("show linux");
    assert_eq!(show["enabled"], true);
    assert_eq!(show["twins"].as_array().unwrap().len(), 4);
    let link = String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "addr", "show", "port0"]).stdout)
        .into_owned();
    assert!(link.contains("10.77.1.1/24"), "{link}");
    // An address added in Linux becomes the interface's, with its subnet.
    ip(&cp, "addr add 10.77.2.1/24 dev port1");
    wait_for("10.77.2.1 on port1", || {
        addresses(&lab, "port1") == ["10.77.2.1/24"]
    });
    assert_eq!(route(&lab, "10.77.2.0/24").unwrap()["source"], "interface");
    // So do IPv6 ones, and the twin's own link-local address.
    ip(&cp, "addr add 2001:db8:77:2::1/64 dev port1 nodad");
    wait_for("2001:db8:77:2::1 on port1", || {
        addresses(&lab, "port1") == ["10.77.2.1/24", "2001:db8:77:2::1/64"]
    });
    assert_eq!(
        route(&lab, "2001:db8:77:2::/64").unwrap()["source"],
        "interface"
    );
    let all = lab.json("show interfaces address");
    assert!(all.to_string().contains("fe80::"), "{all}");
    ip(&cp, "addr del 2001:db8:77:2::1/64 dev port1");
    wait_for("2001:db8:77:2::1 gone", || {
        addresses(&lab, "port1") == ["10.77.2.1/24"]
    });
    assert!(route(&lab, "2001:db8:77:2::/64").is_none());
    // The dataplane forwards between the hosts.
    assert!(
        ping(&a, "10.77.2.2", 4, "0.2").0 >= 3,
        "a -> b through the dataplane"
    );
    // The kernel resolves its neighbours through the twins (ARP punted and
    // injected) and can ping through them.
    assert!(
        ping(&cp, "10.77.1.2", 3, "0.2").0 >= 2,
        "control plane -> a"
    );
    // The idle worker sleeps in poll on its af_packet ports' sockets: the
    // pings' frames ended some of its sleeps.
    let run = lab.json("show run");
    assert!(run["workers"][0]["rx_wakes"].as_u64() > Some(0), "{run}");
    let n = lab.json("neighbor show");
    assert!(
        n["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["address"] == "10.77.1.2" && x["interface"] == "port0"),
        "{n}"
    );
    // Routes: one gateway, ECMP with weights, reject kinds, another table ignored
    // unless mapped.
    ip(&cp, "route add 198.51.100.0/24 via 10.77.2.2");
    ip(
        &cp,
        "route add 203.0.113.0/24 nexthop via 10.77.1.2 weight 1 nexthop via 10.77.2.2 weight 3",
    );
    ip(&cp, "route add blackhole 192.0.2.0/24");
    ip(&cp, "route add unreachable 192.0.2.128/25");
    wait_for("kernel routes", || route(&lab, "192.0.2.128/25").is_some());
    let r = route(&lab, "198.51.100.0/24").unwrap();
    assert_eq!(r["source"], "kernel");
    assert_eq!(r["paths"][0]["gateway"], "10.77.2.2");
    assert_eq!(r["paths"][0]["interface"], "port1");
    let r = route(&lab, "203.0.113.0/24").unwrap();
    let mut legs: Vec<(String, u64)> = r["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["gateway"].as_str().unwrap().to_string(),
                p["weight"].as_u64().unwrap(),
            )
        })
        .collect();
    legs.sort();
    assert_eq!(
        legs,
        [("10.77.1.2".to_string(), 1), ("10.77.2.2".to_string(), 3)]
    );
    assert_eq!(route(&lab, "192.0.2.0/24").unwrap()["kind"], "blackhole");
    assert_eq!(
        route(&lab, "192.0.2.128/25").unwrap()["kind"],
        "unreachable"
    );
    // Host b answers for 198.51.100.1 (an address on its lo): a host pings it
    // through the dataplane on the kernel-learned route.
    ip(&b, "addr add 198.51.100.1/32 dev lo");
    let before = lab.json("show interfaces port1")["interfaces"][0]["counters"]["tx_packets"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        ping(&a, "198.51.100.1", 4, "0.2").0 >= 3,
        "a -> kernel route"
    );
    let after = lab.json("show interfaces port1")["interfaces"][0]["counters"]["tx_packets"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        after >= before + 3,
        "forwarded by the dataplane: {before} -> {after}"
    );
    // An onlink gateway on no subnet of the link (the usual cloud shape): the
    // dataplane asks for it and takes the answer.
    let b_if = format!("dp{}b1", lab.tag);
    ip(&b, &format!("addr add 100.64.77.1/32 dev {b_if}"));
    ip(&b, "addr add 198.18.77.1/24 dev lo");
    ip(
        &cp,
        "route add 198.18.77.0/24 via 100.64.77.1 dev port1 onlink",
    );
    wait_for("the onlink route", || {
        route(&lab, "198.18.77.0/24").is_some()
    });
    let (got, out) = ping(&a, "198.18.77.1", 3, "0.2");
    assert_eq!(got, 3, "a -> onlink gateway: {out}");
    // A permanent neighbour.
    ip(
        &cp,
        "neigh add 10.77.2.9 lladdr 02:00:00:00:02:09 dev port1 nud permanent",
    );
    wait_for("neighbour 10.77.2.9", || {
        lab.json("neighbor show")["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["address"] == "10.77.2.9" && x["mac"] == "02:00:00:00:02:09")
    });
    // dpctl does not change what Linux holds.
    let (code, _, err) = lab.dpctl("interface address add port1 10.77.3.1/24");
    assert_ne!(code, 0);
    assert!(err.contains("Linux twin"), "{err}");
    // Deleting in Linux deletes here.
    ip(&cp, "route del 192.0.2.0/24");
    wait_for("192.0.2.0/24 gone", || {
        route(&lab, "192.0.2.0/24").is_none()
    });
    ip(&cp, "neigh del 10.77.2.9 dev port1");
    wait_for("neighbour gone", || {
        !lab.json("neighbor show")["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["address"] == "10.77.2.9")
    });
    // A link going down purges its routes (the kernel sends no deletes for them)
    // and the interface goes down.
    ip(&cp, "link set port1 down");
    wait_for("port1 down and its routes gone", || {
        route(&lab, "198.51.100.0/24").is_none()
            && lab.json("show interfaces address")["interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["name"] == "port1" && i["up"] == false)
    });
    let r = route(&lab, "203.0.113.0/24").unwrap();
    assert_eq!(r["paths"].as_array().unwrap().len(), 1, "{r}");
    ip(&cp, "link set port1 up");
    // The address goes: its subnet too.
    ip(&cp, "addr del 10.77.2.1/24 dev port1");
    wait_for("10.77.2.1 gone", || addresses(&lab, "port1").is_empty());
    assert!(route(&lab, "10.77.2.0/24").is_none());
    // The port's link is the twin's carrier: the kernel (and BIRD/FRR) see a cut.
    // (net_tap reports its link; an af_packet port has its veth's.)
    let tap = format!("dptap{}", lab.tag);
    let carrier = |lab: &Lab| twin_carrier(lab, "port2");
    assert!(carrier(&lab));
    ok(&["ip", "link", "set", &tap, "down"]);
    wait_for("port2's twin without carrier", || !carrier(&lab));
    let o = sh(&["ip", "-n", &cp, "link", "show", "port2"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("NO-CARRIER"));
    ok(&["ip", "link", "set", &tap, "up"]);
    wait_for("port2's twin with carrier", || carrier(&lab));
    let o = sh(&["ip", "-n", &cp, "link", "show", "port2"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("NO-CARRIER"));
    // The sub-interface's twin: a tagged datagram from host a goes up untagged,
    // the kernel's ICMP error comes back down tagged.
    let host_if = format!("dp{}a1", lab.tag);
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        &a,
        "cat",
        &format!("/sys/class/net/{host_if}/address"),
    ]);
    let host_mac = String::from_utf8_lossy(&o.stdout).trim().to_string();
    ip(
        &cp,
        &format!("neigh add 10.77.100.2 lladdr {host_mac} dev port0.100 nud permanent"),
    );
    let _ = sh(&[
        "ip", "netns", "exec", &a, "ethtool", "-K", &host_if, "rxvlan", "off",
    ]);
    let port0_mac = lab.json("show interfaces port0")["interfaces"][0]["mac"]
        .as_str()
        .unwrap()
        .to_string();
    let probe = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/tools/vlanprobe.py"
    );
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        &a,
        "python3",
        probe,
        &host_if,
        &port0_mac,
        "100",
        "10.77.100.2",
        "10.77.100.1",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("icmp type 3 code 3 vlan 100"),
        "{out}\n{}",
        lab.dpctl("show linux").1
    );
    let show = lab.json("show linux");
    let sub = show["twins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["twin"] == "port0.100")
        .unwrap();
    assert!(sub["punt_pkts"].as_u64().unwrap() >= 1, "{show}");
    assert!(sub["inject_pkts"].as_u64().unwrap() >= 1, "{show}");
    assert!(
        show["twins"][0]["punt_pkts"].as_u64().unwrap() > 0,
        "{show}"
    );
    assert!(
        show["twins"][0]["inject_pkts"].as_u64().unwrap() > 0,
        "{show}"
    );
    assert_eq!(show["netlink"]["malformed"], 0, "{show}");
    lab.stop_daemon();
}

/// An af_packet port's link is its veth's: the neighbour pulling its end takes
/// the twin's carrier (and `show interfaces`' link) within a tick; the twin set
/// down in Linux takes the port's veth down, so the neighbour loses carrier too,
/// and up brings it back.
#[test]
fn port_carrier_and_twin_admin_follow_the_link() {
    let _serial = serial();
    let (mut lab, cp) = two_port_lab("ca", 84, "");
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    let host_if = format!("dp{}a1", lab.tag);
    let port_if = format!("dp{}a0", lab.tag);
    let link = |lab: &Lab| lab.json("show interfaces port0")["interfaces"][0]["link"] == true;
    let no_carrier = |ns: Option<&str>, dev: &str| {
        let mut args = vec!["ip"];
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        args.extend(["link", "show", dev]);
        String::from_utf8_lossy(&sh(&args).stdout).contains("NO-CARRIER")
    };
    wait_for("port0 up with carrier", || {
        twin_carrier(&lab, "port0") && link(&lab)
    });
    assert!(ping(&a, "10.84.2.2", 2, "0.2").0 >= 1);
    // The neighbour pulls its end. The twin's carrier goes, and the kernel
    // publishes it (operstate down: what routing daemons hear) at once, not at
    // linkwatch's next slot a second after the veth's own event.
    let published = || {
        let s = sh(&["ip", "-n", &cp, "link", "show", "port0"]).stdout;
        let s = String::from_utf8_lossy(&s);
        s.contains("NO-CARRIER") && s.contains("state DOWN")
    };
    ip(&a, &format!("link set {host_if} down"));
    let t0 = Instant::now();
    wait_for("port0's twin without carrier", || {
        !twin_carrier(&lab, "port0") && published()
    });
    let lost = t0.elapsed();
    assert!(
        lost < Duration::from_millis(500),
        "published after {lost:?}"
    );
    assert!(!link(&lab));
    ip(&a, &format!("link set {host_if} up"));
    // (its kernel flushed its default route with the link)
    ip(&a, "route replace default via 10.84.1.1");
    wait_for("port0's twin with carrier again", || {
        twin_carrier(&lab, "port0") && !no_carrier(Some(&cp), "port0")
    });
    // The twin goes down in Linux: so does the port, and the neighbour sees it.
    ip(&cp, "link set port0 down");
    wait_for("the neighbour without carrier", || {
        no_carrier(Some(&a), &host_if)
    });
    let s = String::from_utf8_lossy(&sh(&["ip", "link", "show", &port_if]).stdout).into_owned();
    assert!(!s.contains(",UP"), "{s}");
    ip(&cp, "link set port0 up");
    wait_for("the neighbour with carrier again", || {
        !no_carrier(Some(&a), &host_if) && twin_carrier(&lab, "port0")
    });
    let (got, out) = ping(&a, "10.84.2.2", 3, "0.2");
    assert!(got >= 2, "{out}");
    let show = lab.json("show linux");
    assert_eq!(show["port_admin"], 2, "{show}");
    assert_eq!(show["port_admin_errors"], 0, "{show}");
    let _ = b;
    eprintln!("carrier loss seen by the twin after {lost:?}");
    lab.stop_daemon();
}

/// The kernel changes routes over a twin without a message when its carrier
/// goes (nexthop objects over it flushed, with the IPv4 routes that use them)
/// and when it comes back to a twin set up without it (the IPv6 legs over it
/// revived): the dataplane's table follows the kernel's through both.
#[test]
fn silent_route_changes_on_carrier_reach_the_dataplane() {
    let _serial = serial();
    let (mut lab, cp) = two_port_lab("cq", 88, "");
    let b = lab.ns("b");
    let host_if = format!("dp{}b1", lab.tag);
    let legs = |lab: &Lab, prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = route(lab, prefix)
            .and_then(|r| r["paths"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|p| format!("{} {}", p["gateway"], p["interface"]))
            .collect();
        v.sort();
        v
    };
    let both = [
        "\"fe80::98\" \"port1\"".to_string(),
        "\"fe80::99\" \"port0\"".to_string(),
    ];
    wait_for("port1 with carrier", || twin_carrier(&lab, "port1"));
    // (no link-local address for port1: the address coming back with the
    // carrier, after DAD, would have its routes read again anyway)
    ok(&[
        "ip",
        "netns",
        "exec",
        &cp,
        "sysctl",
        "-qw",
        "net.ipv6.conf.port1.addr_gen_mode=1",
    ]);
    ip(&cp, "nexthop add id 7 via 10.88.2.2 dev port1");
    ip(&cp, "route add 198.18.7.0/24 nhid 7");
    ip(
        &cp,
        "-6 route add 2001:db8:88::/48 nexthop via fe80::99 dev port0 nexthop via fe80::98 dev port1",
    );
    wait_for("the routes", || {
        route(&lab, "198.18.7.0/24").is_some() && legs(&lab, "2001:db8:88::/48") == both
    });
    // The neighbour pulls its end: the kernel flushes nexthop 7 and its route.
    ip(&b, &format!("link set {host_if} down"));
    wait_for("port1 without carrier", || !twin_carrier(&lab, "port1"));
    let o = sh(&["ip", "-n", &cp, "route", "show", "198.18.7.0/24"]);
    assert!(o.stdout.is_empty(), "{o:?}");
    wait_for("198.18.7.0/24 gone with nexthop 7", || {
        route(&lab, "198.18.7.0/24").is_none()
    });
    assert_eq!(legs(&lab, "2001:db8:88::/48"), both);
    // Down and up without carrier: the IPv6 leg over port1 is dead.
    ip(&cp, "link set port1 down");
    ip(&cp, "link set port1 up");
    wait_for("the IPv6 leg over port1 dead", || {
        legs(&lab, "2001:db8:88::/48") == both[1..]
    });
    // The carrier comes back, and with it the leg.
    ip(&b, &format!("link set {host_if} up"));
    wait_for("port1 with carrier again", || twin_carrier(&lab, "port1"));
    let o = sh(&["ip", "-n", &cp, "-6", "route", "show", "2001:db8:88::/48"]);
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("dead"),
        "{o:?}"
    );
    wait_for("the IPv6 leg over port1 back", || {
        legs(&lab, "2001:db8:88::/48") == both
    });
    let show = lab.json("show linux");
    assert_eq!(show["netlink"]["malformed"], 0, "{show}");
    lab.stop_daemon();
}

/// The twins outlive the daemon. Killed with -9, it leaves its twins up with
/// carrier, their addresses (the file's and one added with `ip addr`) and the
/// kernel's routes through them; the next daemon attaches to the same twins,
/// relearns the namespace (a route deleted and one added while none ran
/// included) and forwards again; `dataplaned --remove-twins` deletes them.
#[test]
fn twins_and_kernel_routes_outlive_a_killed_daemon() {
    let _serial = serial();
    let mut lab = Lab::new(
        "kt",
        ["10.86.1.2/24", "10.86.2.2/24"],
        Some(["10.86.1.1", "10.86.2.1"]),
    );
    let cp = lab.cp();
    let config = two_port_router(&cp, 86, "");
    lab.start_daemon(&config);
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    ip(&b, "addr add 10.86.76.1/32 dev lo");
    ip(&b, "addr add 10.86.77.1/32 dev lo");
    ip(&b, "addr add 10.86.78.1/32 dev lo");
    ip(&cp, "route add 10.86.76.0/24 via 10.86.2.2");
    ip(&cp, "route add 10.86.77.0/24 via 10.86.2.2");
    ip(&cp, "addr add 10.86.9.1/32 dev port0");
    wait_for("the kernel's routes in the FIB", || {
        route(&lab, "10.86.77.0/24").is_some() && route(&lab, "10.86.76.0/24").is_some()
    });
    // The router id: the namespace's lowest loopback unless dpctl gives one;
    // withdrawing dpctl's reveals it again.
    let rid = || {
        let v = lab.json("show version");
        (v["router_id"].clone(), v["router_id_source"].clone())
    };
    ip(&cp, "addr add 10.86.99.2/32 dev lo");
    ip(&cp, "addr add 10.86.99.1/32 dev lo");
    wait_for("the loopback as router id", || {
        rid() == (json!("10.86.99.1"), json!("kernel"))
    });
    assert_eq!(lab.dpctl("router-id 192.0.2.86").0, 0);
    assert_eq!(rid(), (json!("192.0.2.86"), json!("dpctl")));
    ip(&cp, "addr del 10.86.99.1/32 dev lo");
    assert_eq!(lab.dpctl("router-id none").0, 0);
    wait_for("the next loopback as router id", || {
        rid() == (json!("10.86.99.2"), json!("kernel"))
    });
    // The file's address on a twin is Linux's: a reload that changes it is
    // refused whole, and the address stays.
    let file = lab.dir.join("dataplaned.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("10.86.1.1/24", "10.86.1.7/24")).unwrap();
    let (code, _, err) = lab.dpctl("reload");
    assert!(
        code == 1 && err.contains("port0 has a Linux twin") && err.contains("nothing was applied"),
        "{err}"
    );
    std::fs::write(&file, &text).unwrap();
    assert!(route(&lab, "10.86.1.1/32").is_some());
    assert!(ping(&a, "10.86.77.1", 2, "0.2").0 >= 1);
    let keeper = lab.json("show linux")["keep_twins"].clone();
    assert!(
        keeper.as_str().unwrap().starts_with("keeper pid"),
        "{keeper}"
    );

    lab.kill_daemon();
    let killed = Instant::now();
    let link = String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "link", "show", "port0"]).stdout)
        .into_owned();
    assert!(
        link.contains(",UP") && !link.contains("NO-CARRIER"),
        "{link}"
    );
    let addrs = String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "addr", "show", "port0"]).stdout)
        .into_owned();
    assert!(
        addrs.contains("10.86.1.1/24") && addrs.contains("10.86.9.1/32"),
        "{addrs}"
    );
    // What changes while no daemon runs is learned by the next one.
    ip(&cp, "route del 10.86.76.0/24");
    ip(&cp, "route add 10.86.78.0/24 via 10.86.2.2");
    let routes = linux_routes(&cp);
    assert!(
        routes.iter().any(|r| r.starts_with("10.86.77.0/24")),
        "{routes:?}"
    );

    lab.start_daemon(&config);
    let mut forwarding = None;
    wait_for("forwarding again on the kernel's route", || {
        let up = ping(&a, "10.86.77.1", 1, "0.2").0 == 1;
        if up {
            forwarding = Some(killed.elapsed());
        }
        up
    });
    let show = lab.json("show linux");
    for t in show["twins"].as_array().unwrap() {
        assert_eq!(t["reattached"], true, "{show}");
    }
    assert_eq!(show["keep_twins"], "running keeper", "{show}");
    assert!(route(&lab, "10.86.78.0/24").is_some());
    assert!(route(&lab, "10.86.76.0/24").is_none());
    assert!(addresses(&lab, "port0").contains(&"10.86.9.1/32".to_string()));
    assert!(ping(&a, "10.86.78.1", 2, "0.2").0 >= 1);
    eprintln!(
        "forwarding again {:?} after SIGKILL (restart included)",
        forwarding.unwrap()
    );
    lab.stop_daemon();
    // Stopped, the twins stay; --remove-twins deletes them.
    assert!(
        sh(&["ip", "-n", &cp, "link", "show", "port0"])
            .status
            .success()
    );
    let cfg_path = lab.dir.join("dataplaned.toml");
    let out = sh(&[
        env!("CARGO_BIN_EXE_dataplaned"),
        "--config",
        cfg_path.to_str().unwrap(),
        "--remove-twins",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("the twins deleted", || {
        !sh(&["ip", "-n", &cp, "link", "show", "port0"])
            .status
            .success()
    });
    let _ = b;
}

/// A BIRD started in namespace `ns` with `conf`, stopped by PID on drop.
struct Bird {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl Bird {
    fn start(lab: &Lab, ns: &str, name: &str, conf: &str, extra: &[&str]) -> Bird {
        let dir = &lab.dir;
        let cfg = dir.join(format!("{name}.conf"));
        let log = dir.join(format!("{name}.log"));
        std::fs::write(&cfg, conf.replace("LOG", &log.display().to_string())).unwrap();
        let child = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "bird", "-f", "-c"])
            .arg(&cfg)
            .arg("-s")
            .arg(dir.join(format!("{name}.ctl")))
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start bird");
        Bird { child, log }
    }

    /// `birdc graceful restart`: BIRD stops and leaves its routes in the kernel
    /// (`persist`); its OSPF neighbours help it restart (RFC 3623).
    fn graceful_stop(mut self, ns: &str) {
        let sock = self.log.with_extension("ctl");
        let sock = sock.to_str().unwrap();
        ok(&[
            "ip", "netns", "exec", ns, "birdc", "-s", sock, "graceful", "restart",
        ]);
        let _ = self.child.wait();
    }
}

impl Drop for Bird {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = sh(&["kill", "-KILL", &self.child.id().to_string()]);
            let _ = self.child.wait();
        }
    }
}

const BIRD_CP: &str = r#"
log "LOG" all;
router id 10.78.0.1;
protocol device { scan time 10; }
protocol kernel { ipv4 { import none; export all; }; persist; merge paths on; graceful restart on; }
protocol ospf v2 {
  graceful restart yes;
  ipv4 { import all; export none; };
  area 0 {
    interface "port1" { type ptp; cost 10; hello 1; dead 4; };
    interface "port2" { type ptp; cost 20; hello 1; dead 4; };
    interface "port0" { stub; };
  };
}
"#;

const BIRD_PEER: &str = r#"
log "LOG" all;
router id 10.78.0.2;
protocol device { scan time 10; }
protocol kernel { ipv4 { import none; export all; }; }
protocol ospf v2 {
  ipv4 { import all; export none; };
  area 0 {
    interface "UPLINK" { type ptp; cost 10; hello 1; dead 4; };
    interface "SECOND" { type ptp; cost 20; hello 1; dead 4; };
    interface "lo" { stub; };
  };
}
"#;

/// What the OSPF test prints when it fails.
fn ospf_logs(lab: &Lab, cp: &str) -> String {
    format!(
        "--- show linux\n{}\n--- ospf\n{}{}--- links\n{}--- routes\n{}\n--- kernel\n{}\n--- cp bird\n{}\n--- peer bird\n{}",
        lab.dpctl("show linux").1,
        birdc(cp, &lab.dir.join("cp.ctl"), "show ospf neighbors"),
        birdc(cp, &lab.dir.join("cp.ctl"), "show ospf interface"),
        String::from_utf8_lossy(&sh(&["ip", "-n", cp, "-br", "link"]).stdout),
        lab.dpctl("route show").1,
        String::from_utf8_lossy(&sh(&["ip", "-n", cp, "route"]).stdout),
        std::fs::read_to_string(lab.dir.join("cp.log")).unwrap_or_default(),
        std::fs::read_to_string(lab.dir.join("peer.log")).unwrap_or_default()
    )
}

/// How long after `t0` each condition first held (polled every 5 ms, for at
/// most `limit`).
fn first_times<const N: usize>(
    t0: Instant,
    limit: Duration,
    mut conds: [&mut dyn FnMut() -> bool; N],
) -> [Option<Duration>; N] {
    let mut at = [None; N];
    while at.iter().any(Option::is_none) && t0.elapsed() < limit {
        for (t, c) in at.iter_mut().zip(conds.iter_mut()) {
            if t.is_none() && c() {
                *t = Some(t0.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    at
}

/// Waits up to `secs` for `f`, else fails with `logs`.
fn wait_long(what: &str, secs: u64, logs: &dyn Fn() -> String, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out waiting for {what}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("{what}: {:.2} s", t0.elapsed().as_secs_f64());
}

#[test]
fn bird_ospf_peers_through_the_dataplane_and_its_routes_forward() {
    let _serial = serial();
    let mut lab = Lab::new("o", ["10.78.1.2/24", "10.78.2.2/24"], None);
    let cp = lab.cp();
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    let uplink = format!("dp{}b1", lab.tag);
    ip(&a, "route add default via 10.78.1.1");
    // The peer: a second link to the router (port2) and a stub network on lo.
    let (c0, c1) = (format!("dp{}c0", lab.tag), format!("dp{}c1", lab.tag));
    ok(&[
        "ip", "link", "add", &c0, "type", "veth", "peer", "name", &c1,
    ]);
    ok(&["ip", "link", "set", &c1, "netns", &b]);
    ok(&[
        "sysctl",
        "-qw",
        &format!("net.ipv6.conf.{c0}.disable_ipv6=1"),
    ]);
    ok(&["ip", "link", "set", &c0, "up"]);
    ip(&b, &format!("addr add 10.78.3.2/24 dev {c1}"));
    ip(&b, &format!("link set {c1} up"));
    ip(&b, "addr add 198.18.5.1/24 dev lo");
    let config = format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.78.1.1/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.78.2.1/24\"]\n\
         [[interface]]\nname = \"port2\"\naddresses = [\"10.78.3.1/24\"]\n\
         [[port]]\nname = \"port2\"\ndevice = \"net_af_packet_{t}c,iface={c0}\"\n\
         [linux]\nnetns = \"{cp}\"\n",
        t = lab.tag
    );
    lab.start_daemon(&config);
    let peer = Bird::start(
        &lab,
        &b,
        "peer",
        &BIRD_PEER.replace("UPLINK", &uplink).replace("SECOND", &c1),
        &[],
    );
    let bird = Bird::start(&lab, &cp, "cp", BIRD_CP, &[]);
    let logs = || ospf_logs(&lab, &cp);
    // OSPF comes up over the twins (hellos punted and injected) and BIRD's route
    // reaches the dataplane through the kernel.
    wait_long("OSPF route in the dataplane", 30, &logs, || {
        route(&lab, "198.18.5.0/24")
            .is_some_and(|r| r["source"] == "kernel" && r["paths"][0]["interface"] == "port1")
    });
    let tx = |iface: &str| {
        lab.json(&format!("show interfaces {iface}"))["interfaces"][0]["counters"]["tx_packets"]
            .as_u64()
            .unwrap_or(0)
    };
    // The peer learns the router's stub network too; traffic flows both ways
    // through the dataplane.
    let before = tx("port1");
    wait_long("a -> 198.18.5.1", 20, &logs, || {
        ping(&a, "198.18.5.1", 1, "0.2").0 == 1
    });
    assert!(ping(&a, "198.18.5.1", 5, "0.2").0 >= 4, "{}", logs());
    assert!(
        tx("port1") >= before + 5,
        "forwarded on port1 by the dataplane"
    );
    let show = lab.json("show linux");
    assert!(
        show["punted"]["punt_routing"].as_u64().unwrap() > 0,
        "{show}"
    );
    // A flood to the router's address from host a, as fast as it can send: the
    // policer drops most of it and the adjacency holds.
    let flood = "import socket, time\n\
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
        end, n = time.time() + 3, 0\n\
        while time.time() < end:\n    s.sendto(b'x' * 64, ('10.78.1.1', 9)); n += 1\n\
        print(n)\n";
    let o = sh(&["ip", "netns", "exec", &a, "python3", "-c", flood]);
    let sent: u64 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let show = lab.json("show linux");
    let policed = show["policer"]["policed_other"].as_u64().unwrap();
    eprintln!(
        "flood: {sent} datagrams in 3 s ({:.0}/s), {policed} policed, punt_local {}",
        sent as f64 / 3.0,
        show["punted"]["punt_local"]
    );
    assert!(policed > 0 && sent > 20_000, "{show}");
    assert_eq!(show["policer"]["policed_control"], 0, "{show}");
    assert!(
        birdc(&cp, &lab.dir.join("cp.ctl"), "show ospf neighbors").contains("Full"),
        "{}",
        logs()
    );
    assert!(route(&lab, "198.18.5.0/24").is_some_and(|r| r["paths"][0]["interface"] == "port1"));
    // Every other class from the same host, 1 s each: ICMP, SYNs and stray
    // segments to 179, OSPF junk, ARP requests. Each is policed on port0;
    // nothing the neighbour sends on port1 is ever dropped, and transit
    // between the two hosts keeps going.
    let host_if = format!("dp{}a1", lab.tag);
    let echoes_at_b = || -> u64 {
        let snmp = String::from_utf8_lossy(
            &sh(&["ip", "netns", "exec", &b, "cat", "/proc/net/snmp"]).stdout,
        )
        .into_owned();
        let mut icmp = snmp.lines().filter(|l| l.starts_with("Icmp: "));
        let (names, values) = (icmp.next().unwrap_or(""), icmp.next().unwrap_or(""));
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(n, _)| *n == "InEchos")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    };
    let echoes_before = echoes_at_b();
    let rx = |iface: &str| {
        lab.json(&format!("show interfaces {iface}"))["interfaces"][0]["counters"]["rx_packets"]
            .as_u64()
            .unwrap_or(0)
    };
    let rx_before = rx("port0");
    let mut flooded = 0u64;
    let pinger = {
        let a = a.clone();
        std::thread::spawn(move || ping(&a, "198.18.5.1", 200, "0.025"))
    };
    for kind in ["icmp", "syn", "ospf", "arp"] {
        let o = sh(&[
            "ip",
            "netns",
            "exec",
            &a,
            "python3",
            FLOOD_TOOL,
            kind,
            "10.78.1.1",
            &host_if,
            "1",
        ]);
        let n = String::from_utf8_lossy(&o.stdout).trim().to_string();
        eprintln!("flood {kind}: {n} packets in 1 s");
        flooded += n.parse::<u64>().unwrap_or(0);
    }
    let (got, out) = pinger.join().unwrap();
    let sent: u64 = out
        .split(" packets transmitted")
        .next()
        .and_then(|s| s.rsplit(['\n', ' ']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let reached = echoes_at_b().saturating_sub(echoes_before);
    // What share of what host a sent reached the router at all: the veth and
    // the af_packet ring drop the excess of a line-rate flood before the
    // router sees it, as a NIC's ring would (more when the machine is busy).
    let ingress =
        (rx("port0").saturating_sub(rx_before) as f64 / (flooded + sent).max(1) as f64).min(1.0);
    let errors = lab.json("show errors");
    let policed_on = |iface: &str| -> u64 {
        errors["errors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "policed" && e["interface"] == iface)
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    // Drops other than policing: none (the workers had room for everything).
    let other_drops: Vec<&Value> = errors["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["type"] == "drop"
                && !e["reason"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("punt_policed")
        })
        .collect();
    eprintln!(
        "floods: policed on port0 {}, on port1 {}; {:.1} % of what host a sent reached port0; \
         transit {reached}/{sent} echo requests reached b, {got} answers came back; \
         other drops {other_drops:?}; port0 {}",
        policed_on("port0"),
        policed_on("port1"),
        ingress * 100.0,
        lab.json("show interfaces port0")["interfaces"][0]["counters"]
    );
    assert!(policed_on("port0") > 0, "{errors}");
    assert_eq!(policed_on("port1"), 0, "{errors}");
    assert!(
        birdc(&cp, &lab.dir.join("cp.ctl"), "show ospf neighbors").contains("Full"),
        "{}",
        logs()
    );
    assert!(other_drops.is_empty(), "{errors}");
    // Nor did a port drop or miss a frame: the router lost nothing it had
    // room for.
    for port in ["port0", "port1"] {
        let c = &lab.json(&format!("show interfaces {port}"))["interfaces"][0]["counters"];
        for k in ["drops", "rx_missed", "rx_no_mbuf", "tx_errors"] {
            assert_eq!(c[k], 0, "{port} {k}: {c}");
        }
    }
    // Transit went on: the echo requests crossed the router to b at least in
    // the share the flood itself reached the router (less is lost in the
    // router: the counters above say it dropped nothing but policed punts;
    // the share lost on the way in depends on the machine's load, not on the
    // router). Their answers are not counted: the flooding host's own kernel
    // drops some among the router's line-rate answers to its ICMP and ARP.
    assert!(sent >= 190, "ping sent {sent}: {out}");
    assert!(
        reached as f64 >= (ingress - 0.15) * sent as f64,
        "transit during the floods: {reached}/{sent} with {:.1} % ingress\n{errors}",
        ingress * 100.0
    );
    // Carrier loss: the peer's end of port1 goes down. The port's link, the
    // twin's carrier, BIRD's reroute and then the FIB follow; the FIB is at
    // most 0.1 s behind the control namespace's kernel.
    let kernel_route = |ns: &str, prefix: &str| {
        String::from_utf8_lossy(&sh(&["ip", "-n", ns, "route", "show", prefix]).stdout).into_owned()
    };
    let via_port1 =
        || route(&lab, "198.18.5.0/24").is_some_and(|r| r["paths"][0]["interface"] == "port1");
    let mut kernel_via_port2 = || kernel_route(&cp, "198.18.5.0/24").contains("port2");
    let mut fib_via_port2 =
        || route(&lab, "198.18.5.0/24").is_some_and(|r| r["paths"][0]["interface"] == "port2");
    let t0 = Instant::now();
    ip(&b, &format!("link set {uplink} down"));
    let [t_kernel, t_fib] = first_times(
        t0,
        Duration::from_secs(10),
        [&mut kernel_via_port2, &mut fib_via_port2],
    );
    eprintln!(
        "carrier loss: the namespace's kernel rerouted after {t_kernel:?}, the FIB after {t_fib:?}"
    );
    let (Some(tk), Some(tf)) = (t_kernel, t_fib) else {
        panic!("no reroute on carrier loss\n{}", logs());
    };
    assert!(tf <= tk + Duration::from_millis(100), "{tk:?} {tf:?}");
    // BIRD's OSPF runs its SPF on a 1 s tick: between plain kernels the reroute
    // takes up to a second. The twin's carrier loss is published at once, so
    // the dataplane's takes at most 0.1 s more.
    assert!(tf < Duration::from_millis(1100), "{tf:?}\n{}", logs());
    ip(&b, &format!("link set {uplink} up"));
    wait_long("back over port1 after carrier", 20, &logs, via_port1);
    // Admin down of the twin: the port (its veth) goes down, so the peer loses
    // carrier at once and both BIRDs reroute on their next 1 s tick, as between
    // plain kernels (0.97-0.99 s measured there). BIRD originates its
    // router-LSA at most every 5 s: the failure is announced at once only with
    // both LSAs older than that, so the test waits for it first.
    let own_lsa = |ns: &str, sock: &str, id: &str| -> Option<(u32, u32)> {
        birdc(ns, &lab.dir.join(sock), "show ospf lsadb")
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.len() >= 5 && w[0] == "0001" && w[1] == id && w[2] == id)
            .and_then(|w| Some((u32::from_str_radix(w[3], 16).ok()?, w[4].parse().ok()?)))
    };
    let lsas = || {
        [(&cp, "cp.ctl", "10.78.0.1"), (&b, "peer.ctl", "10.78.0.2")]
            .map(|(ns, sock, id)| own_lsa(ns, sock, id))
    };
    wait_long("both router-LSAs 6 s old", 30, &logs, || {
        lsas().iter().all(|l| l.is_some_and(|(_, age)| age >= 6))
    });
    let seqs = lsas().map(|l| l.map_or(0, |(seq, _)| seq));
    let mut peer_via_c1 = || kernel_route(&b, "10.78.1.0/24").contains(&c1);
    let t0 = Instant::now();
    ip(&cp, "link set port1 down");
    let [t_peer, t_kernel, t_fib] = first_times(
        t0,
        Duration::from_secs(10),
        [&mut peer_via_c1, &mut kernel_via_port2, &mut fib_via_port2],
    );
    eprintln!(
        "admin down: the peer rerouted after {t_peer:?}, the namespace's kernel after \
         {t_kernel:?}, the FIB after {t_fib:?}"
    );
    let (Some(tp), Some(tk), Some(tf)) = (t_peer, t_kernel, t_fib) else {
        panic!("no reroute on admin down\n{}", logs());
    };
    assert!(tf <= tk + Duration::from_millis(100), "{tk:?} {tf:?}");
    let tick = Duration::from_millis(1100);
    assert!(tp < tick && tk < tick, "{tp:?} {tk:?}\n{}", logs());
    // Up again once both routers announced the failure: before that, BIRD may
    // keep a route computed while its own LSA still listed the link (an LSA
    // originated again unchanged triggers no new calculation).
    wait_long("both routers announced the failure", 20, &logs, || {
        let now = lsas().map(|l| l.map_or(0, |(seq, _)| seq));
        now[0] > seqs[0] && now[1] > seqs[1]
    });
    ip(&cp, "link set port1 up");
    wait_long("back over port1 after admin up", 20, &logs, || {
        via_port1() && !peer_via_c1()
    });
    // The better link fails silently for OSPF (the peer's address goes): after the
    // dead interval the route moves to the other link.
    ip(&b, &format!("addr del 10.78.2.2/24 dev {uplink}"));
    wait_long("reroute over port2", 20, &logs, || {
        route(&lab, "198.18.5.0/24").is_some_and(|r| r["paths"][0]["interface"] == "port2")
    });
    let before = tx("port2");
    wait_long("a -> 198.18.5.1 again", 20, &logs, || {
        ping(&a, "198.18.5.1", 1, "0.2").0 == 1
    });
    assert!(ping(&a, "198.18.5.1", 3, "0.2").0 >= 2, "{}", logs());
    assert!(tx("port2") >= before + 3, "forwarded on port2");
    // BIRD stops for a graceful restart: with `persist` its routes stay in the
    // kernel, so the dataplane keeps forwarding; BIRD comes back (-R) and takes
    // them over without a gap.
    // The peer's own kernel briefly loses its way back while it helps: a static
    // route keeps it, so the pings measure the router's side only.
    ip(&b, "route add 10.78.1.0/24 via 10.78.3.1 metric 1");
    bird.graceful_stop(&cp);
    std::thread::sleep(Duration::from_millis(300));
    assert!(route(&lab, "198.18.5.0/24").is_some(), "{}", logs());
    assert!(
        ping(&a, "198.18.5.1", 3, "0.2").0 >= 3,
        "forwarding with BIRD down"
    );
    let bird = Bird::start(&lab, &cp, "cp", BIRD_CP, &["-R"]);
    // Through the restart and OSPF's re-convergence (about 6 s) every ping gets
    // its answer.
    let got = ping(&a, "198.18.5.1", 40, "0.2").0;
    assert!(
        got >= 39,
        "{got}/40 answered across BIRD's restart\n{}\n{}",
        lab.dpctl("show errors").1,
        logs()
    );
    let sock = lab.dir.join("cp.ctl");
    let sock = sock.to_str().unwrap();
    wait_long("OSPF full again", 20, &logs, || {
        let o = sh(&[
            "ip",
            "netns",
            "exec",
            &cp,
            "birdc",
            "-s",
            sock,
            "show",
            "ospf",
            "neighbors",
        ]);
        String::from_utf8_lossy(&o.stdout).contains("Full")
    });
    assert_eq!(route(&lab, "198.18.5.0/24").unwrap()["source"], "kernel");
    // dataplaned killed with -9 and started again under 10 ms pings: its twins
    // stay (kept), so BIRD's routes stay in the kernel and OSPF over the twins
    // never notices; forwarding resumes once the new daemon has dumped them.
    let pinger = {
        let a = a.clone();
        std::thread::spawn(move || ping(&a, "198.18.5.1", 400, "0.01"))
    };
    std::thread::sleep(Duration::from_millis(500));
    lab.kill_daemon();
    lab.start_daemon(&config);
    let logs = || ospf_logs(&lab, &cp);
    let (got, out) = pinger.join().unwrap();
    let lost = 400 - got;
    eprintln!("dataplaned killed and restarted: {lost} of 400 pings at 10 ms lost");
    assert!(lost <= 200, "{out}\n{}", logs());
    assert!(
        birdc(&cp, &lab.dir.join("cp.ctl"), "show ospf neighbors").contains("Full"),
        "{}",
        logs()
    );
    assert!(ping(&a, "198.18.5.1", 3, "0.2").0 >= 2, "{}", logs());
    drop(bird);
    drop(peer);
    lab.stop_daemon();
}

/// A UDP echo in one namespace and a prober in another (`tests/tools/udpecho.py`).
struct UdpEcho {
    server: std::process::Child,
    prober: std::process::Child,
}

impl UdpEcho {
    /// Echo on port 7 in `server_ns`; from `client_ns` a datagram to `dst`
    /// every `interval_ms`.
    fn start(server_ns: &str, client_ns: &str, dst: &str, interval_ms: u32) -> UdpEcho {
        let tool = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/tools/udpecho.py");
        let spawn = |ns: &str, args: &[&str]| {
            let mut c = std::process::Command::new("ip")
                .args(["netns", "exec", ns, "python3", tool])
                .args(args)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            std::io::BufRead::read_line(
                &mut std::io::BufReader::new(c.stdout.as_mut().unwrap()),
                &mut line,
            )
            .unwrap();
            assert_eq!(line.trim(), "ready");
            c
        };
        let server = spawn(server_ns, &["serve", "7"]);
        let prober = spawn(client_ns, &["probe", dst, "7", &interval_ms.to_string()]);
        UdpEcho { server, prober }
    }

    /// Stops the prober: its counts and round trips.
    fn finish(mut self) -> Value {
        ok(&["kill", "-TERM", &self.prober.id().to_string()]);
        let mut out = String::new();
        std::io::Read::read_to_string(self.prober.stdout.as_mut().unwrap(), &mut out).unwrap();
        let _ = self.prober.wait();
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{out}: {e}"))
    }
}

impl Drop for UdpEcho {
    fn drop(&mut self) {
        for c in [&mut self.server, &mut self.prober] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Kernel-learned routes in the dataplane, as `prefix` strings; `None` while the
/// daemon does not answer within 10 s (busy with a resync of 100,000 routes, which
/// a debug build on a loaded machine can make longer than dpctl's default 5 s): the
/// caller polls again.
fn kernel_routes(lab: &Lab) -> Option<std::collections::BTreeSet<String>> {
    let (code, out, err) = lab.dpctl("--json --timeout 10 route show");
    if code != 0 {
        eprintln!("route show: {err}");
        return None;
    }
    let v: Value = serde_json::from_str(&out).unwrap();
    Some(
        v["routes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["source"] == "kernel")
            .map(|r| r["prefix"].as_str().unwrap().to_string())
            .collect(),
    )
}

/// Routes of the namespace's main table that the learner takes (not `proto
/// kernel`), as `prefix` strings.
fn linux_routes(ns: &str) -> std::collections::BTreeSet<String> {
    let o = sh(&["ip", "-n", ns, "-4", "route", "show", "table", "main"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.contains("proto kernel"))
        .filter_map(|l| l.split_whitespace().next())
        .map(|p| {
            if p.contains('/') {
                p.to_string()
            } else {
                format!("{p}/32")
            }
        })
        .collect()
}

#[test]
fn lost_netlink_events_resync_to_exactly_the_kernels_table() {
    let _serial = serial();
    let mut lab = Lab::new(
        "rs",
        ["10.79.1.2/24", "10.79.2.2/24"],
        Some(["10.79.1.1", "10.79.2.1"]),
    );
    let cp = lab.cp();
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    // A receive buffer far too small for a burst: events are lost (ENOBUFS).
    lab.start_daemon(&two_port_router(
        &cp,
        79,
        "netlink_rcvbuf = 4096\ntables = { 100 = 0 }\n",
    ));
    ip(&b, "addr add 198.18.7.1/32 dev lo");
    ip(&cp, "route add 198.18.7.0/24 via 10.79.2.2");
    // A mapped table besides main: resyncs dump it too (table by table).
    ip(&cp, "route add 198.18.9.0/24 via 10.79.2.2 table 100");
    wait_for("the stable routes", || {
        route(&lab, "198.18.7.0/24").is_some() && route(&lab, "198.18.9.0/24").is_some()
    });
    assert!(ping(&a, "198.18.7.1", 2, "0.2").0 >= 1);
    // Pings to the stable prefix while 100,000 routes come and go.
    let pinger = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &a,
            "ping",
            "-q",
            "-c",
            "300",
            "-i",
            "0.01",
            "198.18.7.1",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let batch = |verb: &str| {
        let mut s = String::new();
        for i in 0..100_000u32 {
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!(
                    "route {verb} 100.{}.{}.{}/32 via 10.79.2.2\n",
                    64 + (i >> 16),
                    (i >> 8) & 255,
                    i & 255
                ),
            );
        }
        let f = lab.dir.join(format!("{verb}.batch"));
        std::fs::write(&f, s).unwrap();
        ok(&["ip", "-n", &cp, "-batch", f.to_str().unwrap()]);
    };
    // UDP round trips through the punt path (an echo in the control namespace)
    // all along: bulk work on the control thread must not hold them.
    let echo = UdpEcho::start(&cp, &a, "10.79.1.1", 5);
    let t0 = Instant::now();
    batch("add");
    let mut want = linux_routes(&cp);
    assert_eq!(want.len(), 100_001);
    want.insert("198.18.9.0/24".into());
    wait_long(
        "100,001 kernel routes",
        30,
        &|| lab.dpctl("show linux").1,
        || kernel_routes(&lab).as_ref() == Some(&want),
    );
    eprintln!(
        "add burst in the dataplane after {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    let t1 = Instant::now();
    // (bulk work in a debug build: more than dpctl's default 5 s on a loaded machine)
    lab.json("--timeout 30 linux resync");
    let resync = t1.elapsed();
    let t1 = Instant::now();
    lab.json("--timeout 30 route show");
    let show_all = t1.elapsed();
    batch("del");
    let mut want = linux_routes(&cp);
    assert_eq!(want.len(), 1);
    want.insert("198.18.9.0/24".into());
    wait_long(
        "back to 1 kernel route",
        30,
        &|| lab.dpctl("show linux").1,
        || kernel_routes(&lab).as_ref() == Some(&want),
    );
    let show = lab.json("show linux");
    eprintln!("{}", show["netlink"]);
    let resyncs = show["netlink"]["resyncs"].as_u64().unwrap();
    assert!(resyncs >= 2, "overflow forced a resync: {show}");
    assert!(
        show["netlink"]["last_resync"]["reason"]
            .as_str()
            .unwrap()
            .contains("ENOBUFS"),
        "{show}"
    );
    let rtt = echo.finish();
    eprintln!(
        "punt round trips through a 100k add, resync ({resync:?}), route show ({show_all:?}) \
         and delete: {rtt}"
    );
    assert_eq!(rtt["lost"], 0, "{rtt}");
    // (measured: max 6-12 ms, p99 about 4 ms in a debug build)
    assert!(rtt["max_ms"].as_f64().unwrap() < 60.0, "{rtt}");
    let out = pinger.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.contains(" 0% packet loss"),
        "the stable prefix kept forwarding: {out}"
    );
    lab.stop_daemon();
}

const BIRD_LITE_R1: &str = r#"
log "LOG" all;
router id 192.0.2.1;
protocol device { scan time 10; }
protocol direct { ipv4; interface "lo", "port0"; }
protocol direct d6 { ipv6; interface "port0"; }
protocol kernel { ipv4 { import none; export where source = RTS_BGP; }; }
protocol kernel k6 { ipv6 { import none; export where source = RTS_BGP; }; }
protocol bgp peer {
  local fe80::1 as 65001;
  neighbor fe80::2 as 65002;
  interface "port1";
  direct;
  hold time 6; keepalive time 2; connect retry time 1;
  ipv4 { extended next hop on; import all; export where source = RTS_DEVICE; };
  ipv6 { import all; export where source = RTS_DEVICE && net ~ [ 2001:db8::/32+ ]; };
}
"#;

const BIRD_LITE_R2: &str = r#"
log "LOG" all;
router id 192.0.2.2;
protocol device { scan time 10; }
protocol direct { ipv4; interface "lo"; }
protocol direct d6 { ipv6; interface "lo"; }
protocol kernel { ipv4 { import none; export where source = RTS_BGP; }; }
protocol kernel k6 { ipv6 { import none; export where source = RTS_BGP; }; }
protocol bgp peer {
  local fe80::2 as 65002;
  neighbor fe80::1 as 65001;
  interface "UPLINK";
  direct;
  hold time 6; keepalive time 2; connect retry time 1;
  ipv4 { extended next hop on; import all; export where source = RTS_DEVICE; };
  ipv6 { import all; export where source = RTS_DEVICE && net ~ [ 2001:db8::/32+ ]; };
}
"#;

fn birdc(ns: &str, sock: &std::path::Path, cmd: &str) -> String {
    let mut v = vec![
        "ip",
        "netns",
        "exec",
        ns,
        "birdc",
        "-s",
        sock.to_str().unwrap(),
    ];
    v.extend(cmd.split_whitespace());
    String::from_utf8_lossy(&sh(&v).stdout).into_owned()
}

/// The IPv4-lite router of seed 003: the core link carries no IPv4 address; BGP
/// over IPv6 link-local with extended next hop installs IPv4 routes via IPv6
/// next hops, the dataplane forwards on them (resolving the IPv6 neighbour's MAC)
/// and answers traceroute from its loopback. The same BGP peering carries IPv6
/// unicast: IPv6 routes via the link-local peer, forwarded by the dataplane
/// (neighbour discovery both ways on both links) in both directions.
#[test]
fn ipv4_lite_routes_via_ipv6_link_local_next_hops() {
    let _serial = serial();
    let mut lab = Lab::new(
        "l4",
        ["10.80.1.2/24", "10.80.9.9/24"],
        Some(["10.80.1.1", "10.80.9.1"]),
    );
    let cp = lab.cp();
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    let uplink = format!("dp{}b1", lab.tag);
    // R2 (b, a Linux router): no IPv4 on the link, its loopback and a network on lo.
    ip(&b, &format!("addr flush dev {uplink}"));
    ip(&b, &format!("addr add fe80::2/64 dev {uplink} nodad"));
    ip(&b, "addr add 192.0.2.2/32 dev lo");
    ip(&b, "addr add 198.18.6.1/24 dev lo");
    ip(&b, "addr add 2001:db8:6::1/64 dev lo");
    ip(
        &a,
        &format!("addr add 2001:db8:80:1::2/64 dev dp{}a1 nodad", lab.tag),
    );
    ip(&a, "-6 route add default via 2001:db8:80:1::1");
    ok(&[
        "ip",
        "netns",
        "exec",
        &b,
        "sysctl",
        "-qw",
        "net.ipv4.ip_forward=1",
    ]);
    lab.start_daemon(&format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.80.1.1/24\"]\n\
         [[interface]]\nname = \"port1\"\n\
         [linux]\nnetns = \"{cp}\"\n"
    ));
    // R1's loopback and link-local address live in Linux.
    ip(&cp, "addr add 192.0.2.1/32 dev lo");
    ip(&cp, "link set lo up");
    ip(&cp, "addr add fe80::1/64 dev port1 nodad");
    ip(&cp, "addr add 2001:db8:80:1::1/64 dev port0 nodad");
    let r2 = Bird::start(
        &lab,
        &b,
        "r2",
        &BIRD_LITE_R2.replace("UPLINK", &uplink),
        &[],
    );
    let r1 = Bird::start(&lab, &cp, "r1", BIRD_LITE_R1, &[]);
    let logs = || {
        format!(
            "--- show linux\n{}\n--- routes\n{}\n--- kernel\n{}{}\n--- neigh\n{}\n--- r1\n{}\n--- r2\n{}",
            lab.dpctl("show linux").1,
            lab.dpctl("route show").1,
            String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "route"]).stdout),
            String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "-6", "route"]).stdout),
            String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "-6", "neigh"]).stdout),
            birdc(&cp, &lab.dir.join("r1.ctl"), "show protocols all peer"),
            birdc(&b, &lab.dir.join("r2.ctl"), "show route all"),
        )
    };
    wait_long("IPv4 route via fe80::2 in the dataplane", 30, &logs, || {
        route(&lab, "198.18.6.0/24").is_some_and(|r| {
            r["paths"][0]["gateway"] == "fe80::2" && r["paths"][0]["interface"] == "port1"
        })
    });
    assert_eq!(
        lab.json("route show 192.0.2.1/32")["routes"][0]["kind"],
        "local"
    );
    // a -> R1 (dataplane) -> R2's network, and back over R2's route via fe80::1.
    wait_long("a -> 198.18.6.1", 20, &logs, || {
        ping(&a, "198.18.6.1", 1, "0.2").0 == 1
    });
    assert!(ping(&a, "198.18.6.1", 4, "0.2").0 >= 4, "{}", logs());
    // traceroute from R2 towards a: the dataplane hop answers from its loopback
    // (port1 has no address of its own).
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        &b,
        "traceroute",
        "-n",
        "-q",
        "1",
        "-w",
        "1",
        "-s",
        "198.18.6.1",
        "10.80.1.2",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let hops: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(hops, ["192.0.2.1", "10.80.1.2"], "{out}\n{}", logs());
    // A static route via an IPv6 next hop nothing has resolved: the first
    // packets wait while the dataplane has the kernel solicit it.
    ip(&b, &format!("addr add fe80::3/64 dev {uplink} nodad"));
    ip(&b, "addr add 198.18.8.1/24 dev lo");
    ip(&cp, "route add 198.18.8.0/24 via inet6 fe80::3 dev port1");
    wait_for("198.18.8.0/24 via fe80::3", || {
        route(&lab, "198.18.8.0/24").is_some()
    });
    let (got, out) = ping(&a, "198.18.8.1", 3, "0.2");
    assert_eq!(got, 3, "{out}\n{}", logs());
    assert!(
        lab.json("neighbor show")["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["address"] == "fe80::3" && n["interface"] == "port1"),
        "{}",
        logs()
    );
    assert!(lab.json("show linux")["resolve6"].as_u64().unwrap() >= 1);
    // IPv6 over the same peering: R2's network via fe80::2, forwarded here.
    wait_long("IPv6 route via fe80::2 in the dataplane", 30, &logs, || {
        route(&lab, "2001:db8:6::/64").is_some_and(|r| {
            r["paths"][0]["gateway"] == "fe80::2" && r["paths"][0]["interface"] == "port1"
        })
    });
    let ping6 = |n: u32| {
        let o = sh(&[
            "ip",
            "netns",
            "exec",
            &a,
            "ping",
            "-6",
            "-c",
            &n.to_string(),
            "-i",
            "0.2",
            "-W",
            "1",
            "2001:db8:6::1",
        ]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    wait_long("a -> 2001:db8:6::1", 20, &logs, || {
        ping6(1).contains(" 1 received")
    });
    let out = ping6(4);
    assert!(
        out.contains(" 4 received"),
        "{out}
{}",
        logs()
    );
    let run = lab.dpctl("show run").1;
    assert!(run.contains("ip6-lookup"), "{run}");
    drop(r1);
    drop(r2);
    lab.stop_daemon();
}

/// An FRR daemon (zebra, staticd) in namespace `ns`, stopped by PID on drop.
/// `vtysh -c "configure terminal" -c LINE...` against the FRR daemons whose
/// sockets are in `dir`, in namespace `ns`.
fn configure(ns: &str, dir: &std::path::Path, lines: &[&str]) {
    let d = dir.to_str().unwrap();
    let mut args = vec!["ip", "netns", "exec", ns, "vtysh", "--vty_socket", d];
    args.extend(["-c", "configure terminal"]);
    for l in lines {
        args.extend(["-c", l]);
    }
    ok(&args);
}

struct Frr {
    child: std::process::Child,
}

impl Frr {
    fn start(ns: &str, dir: &std::path::Path, daemon: &str, conf: &str) -> Frr {
        Frr::start_with(ns, dir, daemon, conf, &[])
    }

    fn start_with(
        ns: &str,
        dir: &std::path::Path,
        daemon: &str,
        conf: &str,
        extra: &[&str],
    ) -> Frr {
        Frr::start_env(ns, dir, daemon, conf, extra, &[])
    }

    fn start_env(
        ns: &str,
        dir: &std::path::Path,
        daemon: &str,
        conf: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Frr {
        let cfg = dir.join(format!("{daemon}.conf"));
        std::fs::write(&cfg, conf).unwrap();
        ok(&["chown", "-R", "frr:frr", dir.to_str().unwrap()]);
        let d = dir.to_str().unwrap();
        let child = std::process::Command::new("ip")
            .args(["netns", "exec", ns, &format!("/usr/lib/frr/{daemon}")])
            .args(["-u", "frr", "-g", "frr", "-P", "0", "--vty_socket", d])
            .arg("-z")
            .arg(dir.join("zserv.api"))
            .arg("-i")
            .arg(dir.join(format!("{daemon}.pid")))
            .arg("-f")
            .arg(&cfg)
            .arg("--log")
            .arg(format!("file:{d}/{daemon}.log"))
            .args(extra)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start an FRR daemon");
        Frr { child }
    }

    fn stop(mut self) {
        ok(&["kill", "-TERM", &self.child.id().to_string()]);
        let _ = self.child.wait();
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = sh(&["kill", "-KILL", &self.child.id().to_string()]);
            let _ = self.child.wait();
        }
    }
}

/// FRR's zebra installs staticd's routes in the namespace's kernel (with nexthop
/// objects, as zebra does by default) and the dataplane forwards on them.
#[test]
fn frr_static_routes_reach_the_dataplane_through_the_kernel() {
    let _serial = serial();
    let mut lab = Lab::new(
        "fr",
        ["10.81.1.2/24", "10.81.2.2/24"],
        Some(["10.81.1.1", "10.81.2.1"]),
    );
    let cp = lab.cp();
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    lab.start_daemon(&two_port_router(&cp, 81, ""));
    ip(&b, "addr add 198.51.100.1/32 dev lo");
    let dir = lab.dir.join("frr");
    std::fs::create_dir_all(&dir).unwrap();
    let zebra = Frr::start(&cp, &dir, "zebra", "hostname cp\n");
    std::thread::sleep(Duration::from_millis(500));
    let staticd = Frr::start(
        &cp,
        &dir,
        "staticd",
        "hostname cp\n\
         ip route 198.51.100.0/24 10.81.2.2\n\
         ip route 203.0.113.0/24 10.81.1.2\n\
         ip route 203.0.113.0/24 10.81.2.2\n\
         ip route 192.0.2.0/24 blackhole\n",
    );
    let logs = || {
        format!(
            "--- show linux\n{}\n--- routes\n{}\n--- kernel\n{}\n--- zebra\n{}",
            lab.dpctl("show linux").1,
            lab.dpctl("route show").1,
            String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "route"]).stdout),
            std::fs::read_to_string(dir.join("zebra.log")).unwrap_or_default(),
        )
    };
    wait_long("staticd's routes in the dataplane", 20, &logs, || {
        route(&lab, "192.0.2.0/24").is_some_and(|r| r["kind"] == "blackhole")
            && route(&lab, "203.0.113.0/24")
                .is_some_and(|r| r["paths"].as_array().is_some_and(|p| p.len() == 2))
            && route(&lab, "198.51.100.0/24")
                .is_some_and(|r| r["paths"][0]["gateway"] == "10.81.2.2")
    });
    let nl = &lab.json("show linux")["netlink"];
    assert!(
        nl["nexthop_objects"].as_u64().unwrap() > 0,
        "zebra's nexthop groups: {nl}"
    );
    assert!(ping(&a, "198.51.100.1", 3, "0.2").0 >= 2, "{}", logs());
    // zebra withdraws its routes when it stops; the dataplane follows.
    staticd.stop();
    zebra.stop();
    wait_for("zebra's routes gone", || {
        route(&lab, "198.51.100.0/24").is_none() && route(&lab, "203.0.113.0/24").is_none()
    });
    lab.stop_daemon();
}

/// zebra hands its routes to the dataplane over FPM as well as to the kernel:
/// FPM's win (preferred over the kernel's), keep forwarding while zebra is
/// killed and restarted (what its new walk no longer has is swept, the rest never
/// stops), and are swept when zebra stays away past the hold time.
#[test]
fn frr_routes_over_fpm_are_preferred_held_and_swept() {
    let _serial = serial();
    let mut lab = Lab::new(
        "fp",
        ["10.82.1.2/24", "10.82.2.2/24"],
        Some(["10.82.1.1", "10.82.2.1"]),
    );
    let cp = lab.cp();
    lab.start_daemon(&two_port_router(
        &cp,
        82,
        "[fpm]\nquiet_ms = 500\nhold_s = 8\nrestart_s = 3\nkernel_routes = false\n",
    ));
    let dir = lab.dir.join("frr");
    std::fs::create_dir_all(&dir).unwrap();
    let zebra_conf = "hostname cp\nfpm address 127.0.0.1 port 2620\nno fpm use-next-hop-groups\n";
    let statics = "hostname cp\n\
         ip route 198.51.100.0/24 10.82.2.2\n\
         ip route 203.0.113.0/24 10.82.1.2\n\
         ip route 203.0.113.0/24 10.82.2.2\n\
         ip route 192.0.2.0/24 blackhole\n\
         ipv6 route 2001:db8:82::/48 fe80::2:2 port1\n\
         ipv6 route 2001:db8:83::/48 blackhole\n";
    // After the restart: 203.0.113.0/24 is gone, 100.64.0.0/24 is new.
    let statics2 = "hostname cp\n\
         ip route 198.51.100.0/24 10.82.2.2\n\
         ip route 100.64.0.0/24 10.82.2.2\n\
         ip route 192.0.2.0/24 blackhole\n";
    let start_with = |statics: &str| {
        let zserv = dir.join("zserv.api");
        let _ = std::fs::remove_file(&zserv);
        let z = Frr::start_with(&cp, &dir, "zebra", zebra_conf, &["-M", "dplane_fpm_nl"]);
        wait_for("zebra's zserv socket", || zserv.exists());
        (z, Frr::start(&cp, &dir, "staticd", statics))
    };
    let start = || start_with(statics);
    let logs = || {
        format!(
            "--- show fpm\n{}\n--- routes\n{}\n--- zebra\n{}",
            lab.dpctl("--json show fpm").1,
            lab.dpctl("route show").1,
            std::fs::read_to_string(dir.join("zebra.log")).unwrap_or_default(),
        )
    };
    let (zebra, staticd) = start();
    wait_long("zebra's routes over FPM", 20, &logs, || {
        route(&lab, "198.51.100.0/24").is_some_and(|r| r["source"] == "fpm")
            && route(&lab, "203.0.113.0/24").is_some_and(|r| {
                r["source"] == "fpm" && r["paths"].as_array().is_some_and(|p| p.len() == 2)
            })
            && route(&lab, "192.0.2.0/24").is_some_and(|r| r["kind"] == "blackhole")
            && route(&lab, "2001:db8:82::/48").is_some_and(|r| {
                r["source"] == "fpm"
                    && r["paths"][0]["gateway"] == "fe80::2:2"
                    && r["paths"][0]["interface"] == "port1"
            })
            && route(&lab, "2001:db8:83::/48").is_some_and(|r| r["kind"] == "blackhole")
    });
    let f = lab.json("show fpm");
    assert_eq!(f["connects"], 1, "{f}");
    // With kernel_routes = false the kernel's copies are not taken meanwhile.
    assert_eq!(lab.json("show linux")["kernel_routes"], 0);
    assert!(f["routes"].as_u64().unwrap() >= 3, "{f}");
    // zebra is killed and comes back within the hold time with one route fewer
    // and one more: pings to a route that did not change never stop. (zebra's
    // FPM module connects about 3 s after it starts: the hold is longer.)
    let b = lab.ns("b");
    ip(&b, "addr add 198.51.100.1/32 dev lo");
    let a = lab.ns("a");
    assert!(ping(&a, "198.51.100.1", 3, "0.2").0 >= 2, "{}", logs());
    let pinger = {
        let a = a.clone();
        std::thread::spawn(move || ping(&a, "198.51.100.1", 60, "0.1"))
    };
    std::thread::sleep(Duration::from_millis(500));
    drop(staticd);
    drop(zebra);
    wait_for("zebra's connection lost", || {
        lab.json("show fpm")["peer"].is_null()
    });
    assert_eq!(route(&lab, "203.0.113.0/24").unwrap()["source"], "fpm");
    let (zebra, staticd) = start_with(statics2);
    wait_long("zebra back over FPM", 20, &logs, || {
        let f = lab.json("show fpm");
        f["connects"] == 2 && f["walking"] == false && route(&lab, "100.64.0.0/24").is_some()
    });
    let (got, out) = pinger.join().unwrap();
    assert_eq!(
        got,
        60,
        "pings lost across zebra's restart:\n{out}\n{}",
        logs()
    );
    assert_eq!(route(&lab, "198.51.100.0/24").unwrap()["source"], "fpm");
    // Gone, whether the new zebra deleted it or the sweep after its walk did.
    assert!(route(&lab, "203.0.113.0/24").is_none(), "{}", logs());
    assert!(route(&lab, "2001:db8:82::/48").is_none(), "{}", logs());
    // It goes for longer than the hold time: its routes are swept.
    staticd.stop();
    zebra.stop();
    wait_long("FPM routes swept after the hold", 15, &logs, || {
        route(&lab, "198.51.100.0/24").is_none() && route(&lab, "192.0.2.0/24").is_none()
    });
    assert_eq!(lab.json("show fpm")["routes"], 0);
    lab.stop_daemon();
}

/// Records what zebra 8.4 sends over FPM for static, ECMP and blackhole routes
/// and a delete, into `src/linux/fixtures/zebra-static.fpm` (the decoder's tests
/// read it). Run by hand: `cargo test -p ctl --test linux -- --ignored record`.
#[test]
#[ignore]
fn record_zebra_fpm_frames() {
    let _serial = serial();
    assert!(is_root(), "needs root");
    let ns = format!("dpfr{}", std::process::id() % 100000);
    let dir = std::env::temp_dir().join(&ns);
    std::fs::create_dir_all(&dir).unwrap();
    ok(&["ip", "netns", "add", &ns]);
    let cleanup = |ns: &str| {
        let _ = sh(&["ip", "netns", "del", ns]);
    };
    ip(&ns, "link set lo up");
    ip(&ns, "link add e0 type veth peer name e1");
    ip(&ns, "addr add 10.83.1.1/24 dev e0");
    ip(&ns, "link set e0 up");
    ip(&ns, "link set e1 up");
    let out = dir.join("zebra.fpm");
    let tool = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/tools/fpmrecord.py"
    );
    let mut rec = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            "python3",
            tool,
            out.to_str().unwrap(),
            "2620",
            "8",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(rec.stdout.take().unwrap()));
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let frr = dir.join("frr");
    std::fs::create_dir_all(&frr).unwrap();
    let zebra = Frr::start_with(
        &ns,
        &frr,
        "zebra",
        "hostname r\nfpm address 127.0.0.1 port 2620\nno fpm use-next-hop-groups\n",
        &["-M", "dplane_fpm_nl"],
    );
    std::thread::sleep(Duration::from_millis(500));
    let staticd = Frr::start(
        &ns,
        &frr,
        "staticd",
        "hostname r\nip route 198.51.100.0/24 10.83.1.2\nip route 203.0.113.0/24 10.83.1.2\n\
         ip route 203.0.113.0/24 10.83.1.3\nip route 192.0.2.0/24 blackhole\n",
    );
    std::thread::sleep(Duration::from_secs(4));
    configure(&ns, &frr, &["no ip route 198.51.100.0/24 10.83.1.2"]);
    let n = lines.next().unwrap().unwrap();
    let _ = rec.wait();
    staticd.stop();
    zebra.stop();
    cleanup(&ns);
    assert!(n.parse::<usize>().unwrap() > 0, "nothing recorded");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/linux/fixtures/zebra-static.fpm"
    );
    std::fs::create_dir_all(std::path::Path::new(fixture).parent().unwrap()).unwrap();
    std::fs::copy(&out, fixture).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Builds the test-only LD_PRELOAD library that lets zebra 8.4 keep MPLS on this
/// kernel (tests/tools/nompls_shim.c) into `dir`; returns its path.
fn nompls_shim(dir: &std::path::Path) -> String {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/tools/nompls_shim.c"
    );
    let so = dir.join("nompls_shim.so");
    let so = so.to_str().unwrap().to_string();
    ok(&["cc", "-O2", "-shared", "-fPIC", "-o", &so, src, "-ldl"]);
    so
}

/// zebra's static LSPs reach the label table over FPM: swap, PHP (implicit
/// null out-label), explicit null, ECMP with an out-label per path; deleted with
/// `no mpls lsp`.
#[test]
fn frr_static_lsps_over_fpm_become_label_entries() {
    let _serial = serial();
    let (mut lab, cp) = two_port_lab("ls", 85, "[fpm]\nquiet_ms = 500\n");
    let dir = lab.dir.join("frr");
    std::fs::create_dir_all(&dir).unwrap();
    let shim = nompls_shim(&lab.dir);
    let zebra = Frr::start_env(
        &cp,
        &dir,
        "zebra",
        "hostname cp\nfpm address 127.0.0.1 port 2620\nno fpm use-next-hop-groups\n\
         mpls lsp 100 10.85.2.2 200\n\
         mpls lsp 101 10.85.2.2 implicit-null\n\
         mpls lsp 102 10.85.2.2 explicit-null\n\
         mpls lsp 103 10.85.1.2 301\n\
         mpls lsp 103 10.85.2.2 302\n",
        &["-M", "dplane_fpm_nl"],
        &[("LD_PRELOAD", shim.as_str())],
    );
    let logs = || {
        format!(
            "--- show fpm\n{}\n--- labels\n{}\n--- zebra\n{}",
            lab.dpctl("--json show fpm").1,
            lab.dpctl("label show").1,
            std::fs::read_to_string(dir.join("zebra.log")).unwrap_or_default(),
        )
    };
    let entry = |l: u32| -> Option<Value> {
        lab.json(&format!("label show {l}"))["labels"]
            .as_array()
            .and_then(|v| v.iter().find(|e| e["eos"] == true).cloned())
    };
    wait_long("zebra's LSPs in the label table", 20, &logs, || {
        (100..=102).all(|l| entry(l).is_some_and(|e| e["source"] == "fpm"))
            && entry(103).is_some_and(|e| e["paths"].as_array().is_some_and(|p| p.len() == 2))
    });
    let out = |l: u32| entry(l).unwrap()["paths"][0]["out_labels"].clone();
    assert_eq!(out(100), serde_json::json!([200]), "{}", logs());
    assert_eq!(out(101), serde_json::json!([3]), "{}", logs());
    assert_eq!(out(102), serde_json::json!([0]), "{}", logs());
    assert_eq!(entry(100).unwrap()["paths"][0]["interface"], "port1");
    let mut ecmp: Vec<_> = entry(103).unwrap()["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["interface"].clone(), p["out_labels"].clone()))
        .collect();
    ecmp.sort_by_key(|p| p.0.to_string());
    assert_eq!(
        ecmp,
        [
            ("port0".into(), serde_json::json!([301])),
            ("port1".into(), serde_json::json!([302]))
        ],
        "{}",
        logs()
    );
    configure(&cp, &dir, &["no mpls lsp 100 10.85.2.2 200"]);
    wait_long("LSP 100 deleted", 10, &logs, || entry(100).is_none());
    assert!(entry(101).is_some());
    // Labelled routes, one path and ECMP with a label per path (staticd takes
    // them only once zebra told it MPLS is on: through vtysh).
    let staticd = Frr::start(&cp, &dir, "staticd", "hostname cp\n");
    std::thread::sleep(Duration::from_millis(500));
    configure(
        &cp,
        &dir,
        &[
            "ip route 198.51.100.0/24 10.85.2.2 label 300",
            "ip route 203.0.113.0/24 10.85.2.2 label 400",
            "ip route 203.0.113.0/24 10.85.1.2 label 401",
        ],
    );
    let legs = |p: &str| -> Vec<(String, Value)> {
        let mut v: Vec<(String, Value)> = route(&lab, p)
            .filter(|r| r["source"] == "fpm")
            .and_then(|r| r["paths"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|p| {
                (
                    p["gateway"].as_str().unwrap_or("").to_string(),
                    p["out_labels"].clone(),
                )
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    wait_long("labelled routes over FPM", 20, &logs, || {
        legs("198.51.100.0/24").len() == 1 && legs("203.0.113.0/24").len() == 2
    });
    assert_eq!(
        legs("198.51.100.0/24"),
        [("10.85.2.2".into(), serde_json::json!([300]))]
    );
    assert_eq!(
        legs("203.0.113.0/24"),
        [
            ("10.85.1.2".into(), serde_json::json!([401])),
            ("10.85.2.2".into(), serde_json::json!([400]))
        ]
    );
    drop(staticd);
    drop(zebra);
    lab.stop_daemon();
}

/// `tests/tools/tcpsession.py MODE ARGS` in namespace `ns`; waits for "ready"
/// where the mode prints it.
fn tcpsession(ns: &str, args: &[&str], ready: bool) -> std::process::Child {
    let tool = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/tools/tcpsession.py"
    );
    let mut c = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "python3", tool])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if ready {
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(c.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
    }
    c
}

/// Floods one class of traffic (tests/tools/flood.py KIND DST IFACE SECS).
const FLOOD_TOOL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/tools/flood.py");

/// The output of a finished child.
fn child_output(c: std::process::Child) -> String {
    let out = c.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sessions_the_namespace_holds_outlast_a_flood_of_strangers() {
    let _serial = serial();
    let mut lab = Lab::new(
        "ss",
        ["10.81.1.2/24", "10.81.2.2/24"],
        Some(["10.81.1.1", "10.81.2.1"]),
    );
    let cp = lab.cp();
    let a = lab.ns("a");
    // A small budget: 500 TCP punts/s per interface for connections nobody
    // knows, as many for the sessions the namespace holds.
    lab.start_daemon(&two_port_router(&cp, 81, "punt_control_pps = 2000\n"));
    let mut server = tcpsession(&cp, &["serve", "179"], true);
    wait_for("the listener in show linux", || {
        lab.json("show linux")["sessions"]["tcp_listen"]
            .as_array()
            .is_some_and(|l| l.iter().any(|p| p == 179))
    });
    let client = tcpsession(&a, &["client", "10.81.1.1", "179", "4", "10"], true);
    wait_for("the connection in show linux", || {
        lab.json("show linux")["sessions"]["tcp_connections"]
            .as_u64()
            .is_some_and(|n| n >= 1)
    });
    // From the same host and port: segments of connections that do not exist,
    // SYNs to 179 and to 646 (nothing listens there), as fast as it can.
    let flood = tcpsession(&a, &["flood", "10.81.1.1", "179", "3"], false);
    let flooded: u64 = child_output(flood).trim().parse().unwrap_or(0);
    let rtt: Value = serde_json::from_str(child_output(client).trim()).unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let errors = lab.json("show errors");
    let policed = |class: &str| -> u64 {
        errors["errors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "policed" && e["class"] == class)
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    eprintln!(
        "{flooded} flood segments; connection round trips {rtt}; policed tcp {} syn {} other {} established {}",
        policed("tcp"),
        policed("syn"),
        policed("other"),
        policed("established")
    );
    assert!(policed("tcp") > 0, "the flood was policed: {errors}");
    assert_eq!(policed("established"), 0, "{errors}");
    assert_eq!(rtt["echoed"], rtt["sent"], "{rtt}");
    // A policed segment costs a retransmission (200 ms at least).
    assert!(rtt["max_ms"].as_f64().unwrap() < 150.0, "{rtt}");
    lab.stop_daemon();
}

/// A flood the control namespace sends out of a twin as fast as it can
/// (nothing polices it): the real-time punt thread takes two thirds of its
/// CPU at most, never a worker's, and transit between the hosts goes on meanwhile.
#[test]
fn an_inject_flood_leaves_transit_alone() {
    let _serial = serial();
    let mut lab = Lab::new(
        "if",
        ["10.83.1.2/24", "10.83.2.2/24"],
        Some(["10.83.1.1", "10.83.2.1"]),
    );
    let cp = lab.cp();
    let a = lab.ns("a");
    lab.start_daemon(&two_port_router(&cp, 83, ""));
    assert!(ping(&a, "10.83.2.2", 3, "0.2").0 >= 2);
    let flood = std::process::Command::new("ip")
        .args(["netns", "exec", &cp, "python3", FLOOD_TOOL])
        .args(["udp-burst", "10.83.1.2", "port0", "4"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the flood through the twin", || {
        lab.json("show linux")["twins"][0]["inject_pkts"]
            .as_u64()
            .is_some_and(|n| n > 10_000)
    });
    let (got, out) = ping(&a, "10.83.2.2", 100, "0.02");
    let sent: u64 = child_output(flood).trim().parse().unwrap_or(0);
    let show = lab.json("show linux");
    let rtt_max = out
        .lines()
        .find(|l| l.starts_with("rtt "))
        .and_then(|l| l.split('/').nth(5))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(f64::MAX);
    eprintln!(
        "inject flood: {sent} sent in 4 s, {} injected, {} dropped, punt thread rests {}, gathers {}; transit {got}/100, max {rtt_max} ms",
        show["twins"][0]["inject_pkts"],
        show["twins"][0]["inject_drops"],
        show["punt_rests"],
        show["punt_gathers"]
    );
    // A stream gathers: the thread does not wake for each frame.
    assert!(show["punt_gathers"].as_u64() > Some(0), "{show}");
    assert!(got >= 95, "transit during the flood: {got}/100\n{out}");
    assert!(rtt_max < 50.0, "transit during the flood:\n{out}");
    lab.stop_daemon();
}

const BIRD_BFD: &str = r#"
log "LOG" all;
router id RID;
timeformat protocol iso long ms;
protocol device { scan time 10; }
protocol bfd {
  interface "*" { interval 50 ms; multiplier 3; };
  neighbor PEER;
}
"#;

/// `State Since` of BFD with `peer`, from `birdc show bfd sessions`.
fn bfd_session(ns: &str, sock: &std::path::Path, peer: &str) -> Option<(String, String)> {
    let out = birdc(ns, sock, "show bfd sessions");
    let line = out.lines().find(|l| l.starts_with(peer))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    // address, interface, state, since (date and time), interval, timeout
    Some((w.get(2)?.to_string(), w.get(3..5)?.join(" ")))
}

#[test]
fn bfd_holds_through_a_full_table_resync_walk_and_reload() {
    const ROUTES: u32 = 512_621;
    let _serial = serial();
    let mut lab = Lab::new(
        "bf",
        ["10.82.1.2/24", "10.82.2.2/24"],
        Some(["10.82.1.1", "10.82.2.1"]),
    );
    let cp = lab.cp();
    let b = lab.ns("b");
    lab.start_daemon(&two_port_router(&cp, 82, "[fpm]\nport = 2682\n"));
    let conf = |rid: &str, peer: &str| BIRD_BFD.replace("RID", rid).replace("PEER", peer);
    let _r1 = Bird::start(&lab, &cp, "r1", &conf("10.82.2.1", "10.82.2.2"), &[]);
    let _r2 = Bird::start(&lab, &b, "r2", &conf("10.82.2.2", "10.82.2.1"), &[]);
    let sock = lab.dir.join("r1.ctl");
    let logs = || birdc(&cp, &sock, "show bfd sessions");
    wait_long("BFD up", 30, &logs, || {
        bfd_session(&cp, &sock, "10.82.2.2").is_some_and(|(s, _)| s == "Up")
    });
    // BIRD shows its monotonic change time as wall-clock time: it moves by a
    // millisecond from one `show` to the next; a flap moves it by far more.
    let secs = |t: &str| -> f64 {
        t.rsplit(' ')
            .next()
            .unwrap_or("")
            .split(':')
            .fold(0.0, |acc, x| {
                acc * 60.0 + x.parse::<f64>().unwrap_or(f64::NAN)
            })
    };
    let same = |a: &str, b: &str| (secs(a) - secs(b)).abs() < 0.02;
    // Up and settled: the same state change seen for 2 s.
    let mut since = bfd_session(&cp, &sock, "10.82.2.2").unwrap().1;
    let mut stable = Instant::now();
    wait_long("BFD settled", 30, &logs, || {
        let now = bfd_session(&cp, &sock, "10.82.2.2")
            .map(|(_, s)| s)
            .unwrap_or_default();
        if !same(&now, &since) {
            since = now;
            stable = Instant::now();
        }
        stable.elapsed() >= Duration::from_secs(2)
    });
    // A full-size table in the namespace's kernel.
    let mut s = String::new();
    for i in 0..ROUTES {
        let a = std::net::Ipv4Addr::from((100u32 << 24 | 64 << 16) + i);
        let _ =
            std::fmt::Write::write_fmt(&mut s, format_args!("route add {a}/32 via 10.82.2.2\n"));
    }
    let f = lab.dir.join("add.batch");
    std::fs::write(&f, s).unwrap();
    ok(&["ip", "-n", &cp, "-batch", f.to_str().unwrap()]);
    let kernel = || {
        lab.json("show linux")["kernel_routes"]
            .as_u64()
            .unwrap_or(0)
    };
    wait_long("the table learned", 120, &logs, || {
        kernel() >= u64::from(ROUTES)
    });
    let t0 = Instant::now();
    for _ in 0..3 {
        lab.json("linux resync");
    }
    let resyncs = t0.elapsed();
    let t0 = Instant::now();
    lab.json("reload");
    let reload = t0.elapsed();
    // zebra's walk of the same table over FPM.
    let oif =
        String::from_utf8_lossy(&sh(&["ip", "-n", &cp, "-j", "link", "show", "port1"]).stdout)
            .into_owned();
    let oif = serde_json::from_str::<Value>(&oif).unwrap()[0]["ifindex"].to_string();
    let tool = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/tools/fpmsend.py");
    let n = ROUTES.to_string();
    let t0 = Instant::now();
    let mut walk = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &cp,
            "python3",
            tool,
            "2682",
            &n,
            "10.82.2.2",
            &oif,
            "60",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_long("the FPM walk applied", 120, &logs, || {
        lab.json("show fpm")["routes"].as_u64().unwrap_or(0) >= u64::from(ROUTES)
    });
    let walked = t0.elapsed();
    let _ = walk.kill();
    let _ = walk.wait();
    let after = bfd_session(&cp, &sock, "10.82.2.2");
    eprintln!(
        "3 resyncs {resyncs:?}, reload {reload:?}, FPM walk {walked:?}; BFD since {since}, now {after:?}; {}",
        lab.json("show linux")["punt_scheduling"]
    );
    let (state, now) = after.clone().unwrap_or_default();
    assert!(
        state == "Up" && same(&now, &since),
        "BFD went down: since {since}, now {after:?}\n{}",
        logs()
    );
    lab.stop_daemon();
}
