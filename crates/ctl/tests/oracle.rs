//! The kernel as the oracle: a seeded random sequence of `ip` events in the
//! control-plane namespace (links up and down, carrier lost and back,
//! addresses, routes with metrics, ECMP weights, onlink and IPv6 next hops,
//! reject kinds, nexthop objects (a blackhole among them, deleted and created
//! again under the same id) and groups (of one too), neighbours; a quarter of
//! them IPv6: addresses, routes via link-local and global next hops, ECMP,
//! reject kinds, nexthop objects and groups), and after each step the
//! dataplane's table 0 must equal the kernel's effective main table of both
//! families (per prefix the lowest metric, dead legs dropped; hosts and
//! link-local subnets left out) within a bounded time; every second step a
//! packet from a host to an address of a random prefix, IPv4 and IPv6 in turn,
//! must be treated as that route says (forwarded out one of its interfaces,
//! held for a neighbour there, or answered with the ICMP error or dropped as
//! its reject kind says), seen in `dpctl show trace`.
//! `ORACLE_SEED` replays a run, `ORACLE_STEPS` sets its length (`make soak`
//! runs thousands), `ORACLE_DEBUG` prints each step. Needs root and iproute2.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// How long the dataplane may take to agree after a step.
const AGREE: Duration = Duration::from_secs(2);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
}

/// Per prefix (not /32: hosts and local addresses are each side's own), what
/// forwards: `blackhole`, `unreachable`, `prohibit`, or the sorted legs.
type Table = BTreeMap<String, String>;

fn leg(gw: Option<&str>, dev: &str, weight: u64) -> String {
    match gw {
        Some(g) => format!("via {g} dev {dev} w{weight}"),
        None => format!("dev {dev} w{weight}"),
    }
}

/// A prefix each side holds as its own (hosts, local addresses, link-local
/// subnets): left out of the comparison.
fn own(prefix: &str) -> bool {
    prefix.ends_with("/32") || prefix.ends_with("/128") || prefix.starts_with("fe80:")
}

/// The kernel's effective main table, both families.
fn kernel_table(ns: &str) -> Table {
    let mut routes: Vec<(Value, bool)> = Vec::new();
    for (family, v6) in [("-4", false), ("-6", true)] {
        let o = sh(&[
            "ip", family, "-j", "-n", ns, "route", "show", "table", "main",
        ]);
        let part: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap_or_default();
        routes.extend(part.into_iter().map(|r| (r, v6)));
    }
    let mut best: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for (r, v6) in routes {
        let dst = match (r["dst"].as_str(), v6) {
            (Some("default"), false) => "0.0.0.0/0".to_string(),
            (Some("default"), true) => "::/0".to_string(),
            (Some(d), _) if d.contains('/') => d.to_string(),
            (Some(d), false) => format!("{d}/32"),
            (Some(d), true) => format!("{d}/128"),
            (None, _) => continue,
        };
        if own(&dst) {
            continue;
        }
        let metric = r["metric"].as_u64().unwrap_or(0);
        let what = match r["type"].as_str() {
            Some(t @ ("blackhole" | "unreachable" | "prohibit")) => t.to_string(),
            Some(t) if t != "unicast" => continue,
            _ => {
                let gw = |h: &Value| {
                    h["gateway"]
                        .as_str()
                        .or_else(|| h["via"]["host"].as_str())
                        .map(str::to_string)
                };
                let dead = |h: &Value| {
                    h["flags"]
                        .as_array()
                        .is_some_and(|f| f.iter().any(|x| x == "dead"))
                };
                let mut legs: Vec<String> = match r["nexthops"].as_array() {
                    Some(hops) => hops
                        .iter()
                        .filter(|h| !dead(h))
                        .map(|h| {
                            leg(
                                gw(h).as_deref(),
                                h["dev"].as_str().unwrap_or("?"),
                                h["weight"].as_u64().unwrap_or(1),
                            )
                        })
                        .collect(),
                    None if dead(&r) => Vec::new(),
                    None => vec![leg(gw(&r).as_deref(), r["dev"].as_str().unwrap_or("?"), 1)],
                };
                if legs.is_empty() {
                    continue;
                }
                legs.sort();
                legs.join(", ")
            }
        };
        match best.get(&dst) {
            Some((m, _)) if *m <= metric => {}
            _ => {
                best.insert(dst, (metric, what));
            }
        }
    }
    best.into_iter().map(|(k, (_, v))| (k, v)).collect()
}

/// The dataplane's table 0 in the same terms.
fn dataplane_table(lab: &Lab) -> Table {
    let v = lab.json("route show table 0");
    let mut t = Table::new();
    for r in v["routes"].as_array().into_iter().flatten() {
        let p = r["prefix"].as_str().unwrap().to_string();
        if own(&p) {
            continue;
        }
        let what = match r["kind"].as_str().unwrap_or("") {
            "connected" => leg(None, r["interface"].as_str().unwrap_or("?"), 1),
            "paths" => {
                let mut legs: Vec<String> = r["paths"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|h| {
                        leg(
                            h["gateway"].as_str(),
                            h["interface"].as_str().unwrap_or("?"),
                            h["weight"].as_u64().unwrap_or(1),
                        )
                    })
                    .collect();
                legs.sort();
                legs.join(", ")
            }
            "local" => continue,
            k => k.to_string(),
        };
        t.insert(p, what);
    }
    t
}

/// What the route covering `addr` in `table` says (longest match), if any.
fn covering(table: &Table, addr: std::net::IpAddr) -> Option<(&str, &str)> {
    let bits = |a: std::net::IpAddr| match a {
        std::net::IpAddr::V4(a) => (u128::from(u32::from(a)) << 96, 32u32),
        std::net::IpAddr::V6(a) => (u128::from(a), 128),
    };
    let (key, width) = bits(addr);
    table
        .iter()
        .filter_map(|(p, what)| {
            let (net, len) = p.split_once('/')?;
            let (net, len): (std::net::IpAddr, u32) = (net.parse().ok()?, len.parse().ok()?);
            let (net, w) = bits(net);
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            (w == width && key & mask == net & mask).then_some((len, p.as_str(), what.as_str()))
        })
        .max_by_key(|c| c.0)
        .map(|(_, p, w)| (p, w))
}

/// Sends one UDP datagram from host `a` (of lab `n`) to `addr` (either family)
/// and checks the dataplane's decision for it (its trace) against what the
/// table says. Err: why not.
fn probe(lab: &Lab, table: &Table, n: u8, addr: std::net::IpAddr, port: u16) -> Result<(), String> {
    lab.dpctl("clear trace");
    lab.dpctl("trace add 64");
    sh(&[
        "ip",
        "netns",
        "exec",
        &lab.ns("a"),
        "bash",
        "-c",
        &format!("echo x > /dev/udp/{addr}/{port}"),
    ]);
    // (its own port: a datagram of an earlier probe, held then, is not it)
    let needle = format!(" > {addr}: udp ");
    let port = format!(" > {port},");
    let t0 = Instant::now();
    let decision = loop {
        let t = lab.json("show trace");
        let found = t["packets"].as_array().into_iter().flatten().find(|r| {
            r["summary_in"]
                .as_str()
                .is_some_and(|s| s.contains(&needle) && s.contains(&port))
        });
        if let Some(r) = found {
            break format!(
                "{} (stages {})",
                r["decision"].as_str().unwrap_or(""),
                r["stages"]
            );
        }
        if t0.elapsed() > AGREE {
            return Err(format!("no trace of the datagram to {addr}: {t}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let route = covering(table, addr);
    let ip = if addr.is_ipv4() { "ip4" } else { "ip6" };
    // Host a's address, where an ICMP error goes back to.
    let host_a: std::net::IpAddr = if addr.is_ipv4() {
        std::net::Ipv4Addr::new(10, n, 1, 2).into()
    } else {
        std::net::Ipv6Addr::new(0x2001, 0xdb8, n.into(), 1, 0, 0, 0, 2).into()
    };
    // (the reject kind of the route back to host a, if it is one)
    let back = covering(table, host_a)
        .map(|r| r.1)
        .filter(|k| ["blackhole", "unreachable", "prohibit"].contains(k));
    // The ICMP error, or the error built but with no way back to host a (the
    // router's own lookup for it found no route, a reject route, or no
    // neighbour, as the kernel's would with the same table; for IPv6, no
    // address of the router's to send it from).
    let error = |kinds: &[&str]| {
        kinds.iter().any(|k| decision.contains(k))
            || decision.starts_with("drop icmp_rate_limited ")
            || decision.starts_with("drop icmp_suppressed ")
            || (decision.contains("\"local\"")
                && (decision.starts_with(&format!("drop {ip}_no_route "))
                    || back.is_some_and(|k| decision.starts_with(&format!("drop {ip}_{k} ")))
                    || decision.starts_with("drop neighbor_")))
    };
    let ok = match route.map(|r| r.1) {
        None => error(&[&format!("{ip}_no_route")]),
        Some("blackhole") => decision.starts_with(&format!("drop {ip}_blackhole ")),
        Some("unreachable") => error(&[&format!("{ip}_unreachable")]),
        Some("prohibit") => error(&[&format!("{ip}_prohibit")]),
        Some(legs) => {
            // Out one of the route's interfaces (port N is DPDK port N here),
            // the datagram itself or the ARP request that holds it; or held
            // for a neighbour not resolved yet (an IPv6 one, an absent host).
            let out_on_leg = decision
                .strip_prefix("tx port ")
                .and_then(|r| r.split_whitespace().next())
                .is_some_and(|p| legs.contains(&format!("dev port{p} ")))
                && (!decision.contains("original") || decision.contains("neighbor"));
            out_on_leg
                || decision.starts_with("drop consumed ")
                || decision.starts_with("drop neighbor_")
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "to {addr}: route {route:?}, the dataplane: {decision}"
        ))
    }
}

/// One random `ip` command for the control namespace (`n`: the lab's number),
/// or `carrier a|b down|up` for the host end of a port's veth.
fn step(rng: &mut Rng, n: u8) -> String {
    let ports = ["port0", "port1"];
    let gws = [
        format!("10.{n}.1.2"),
        format!("10.{n}.1.3"),
        format!("10.{n}.2.2"),
        format!("10.{n}.2.3"),
        format!("10.{n}.3.2"),
    ];
    let gws: Vec<&str> = gws.iter().map(String::as_str).collect();
    let prefixes = [
        "198.18.0.0/24",
        "198.18.1.0/24",
        "198.18.2.0/24",
        "198.18.3.0/24",
        "198.18.0.0/16",
        "203.0.113.0/25",
        "0.0.0.0/0",
    ];
    let metric = ["", " metric 10", " metric 20"][rng.below(3)];
    let p = rng.pick(&prefixes);
    let op = ["add", "replace"][rng.below(2)];
    if rng.below(4) == 0 {
        return step6(rng, n, op, metric);
    }
    match rng.below(21) {
        0 => format!(
            "link set {} {}",
            rng.pick(&ports),
            ["down", "up", "up", "up"][rng.below(4)]
        ),
        // The host end of a port's veth: the port, and so its twin, loses or
        // regains carrier.
        20 => format!(
            "carrier {} {}",
            ["a", "b"][rng.below(2)],
            ["down", "up", "up"][rng.below(3)]
        ),
        1 | 2 => {
            let (dev, addrs) = if rng.below(2) == 0 {
                (
                    "port0",
                    [
                        format!("10.{n}.1.1/24"),
                        format!("10.{n}.1.5/24"),
                        format!("10.{n}.3.1/24"),
                    ],
                )
            } else {
                (
                    "port1",
                    [
                        format!("10.{n}.2.1/24"),
                        format!("10.{n}.2.5/24"),
                        format!("10.{n}.4.1/24"),
                    ],
                )
            };
            let a = &addrs[rng.below(3)];
            format!("addr {} {a} dev {dev}", ["add", "del"][rng.below(2)])
        }
        3..=5 => format!("route {op} {p}{metric} via {}", rng.pick(&gws)),
        6 | 7 => format!(
            "route {op} {p}{metric} nexthop via {} weight {} nexthop via {} weight {}",
            rng.pick(&gws),
            1 + rng.below(4),
            rng.pick(&gws),
            1 + rng.below(4)
        ),
        8 => format!(
            "route {op} {p}{metric} via 100.64.{n}.1 dev {} onlink",
            rng.pick(&ports)
        ),
        9 => format!(
            "route {op} {p}{metric} via inet6 fe80::99 dev {}",
            rng.pick(&ports)
        ),
        10 => format!(
            "route {op} {} {p}{metric}",
            ["blackhole", "unreachable", "prohibit"][rng.below(3)]
        ),
        11 => format!(
            "route {op} {p}{metric} nhid {}",
            // (21 and 30: IPv6 next hops, RFC 5549's IPv4 over IPv6)
            [1, 2, 3, 10, 21, 30][rng.below(6)]
        ),
        12..=14 => format!("route del {p}{metric}"),
        // (a blackhole member can only be a group of one: the kernel refuses
        // the rest, and the step with it)
        15 => match rng.below(4) {
            0 => format!("nexthop {op} id {} blackhole", 1 + rng.below(3)),
            _ => format!(
                "nexthop {op} id {} via {}",
                1 + rng.below(3),
                rng.pick(&gws)
            ),
        },
        16 => match rng.below(3) {
            0 => format!("nexthop {op} id 10 group {}", 1 + rng.below(3)),
            _ => format!(
                "nexthop {op} id 10 group {}/{},{}",
                1 + rng.below(3),
                1 + rng.below(3),
                1 + rng.below(3)
            ),
        },
        17 => format!("nexthop del id {}", [1, 2, 3, 10][rng.below(4)]),
        18 => format!(
            "neigh replace {} lladdr 02:00:00:00:{n:02x}:{:02x} dev {} nud permanent",
            rng.pick(&gws),
            rng.below(256),
            rng.pick(&ports)
        ),
        _ => format!("neigh del {} dev {}", rng.pick(&gws), rng.pick(&ports)),
    }
}

/// One random IPv6 `ip` command: addresses, routes via link-local and global
/// next hops, ECMP with weights, reject kinds, deletes.
fn step6(rng: &mut Rng, n: u8, op: &str, metric: &str) -> String {
    let prefixes = [
        format!("2001:db8:{n}:9::/64"),
        format!("2001:db8:{n}:a::/64"),
        format!("2001:db8:{n}::/48"),
        "::/0".to_string(),
    ];
    let p = &prefixes[rng.below(prefixes.len())];
    let port = ["port0", "port1"][rng.below(2)];
    let k = if port == "port0" { 1 } else { 2 };
    let via = |rng: &mut Rng| match rng.below(3) {
        0 => format!("via fe80::99 dev {port}"),
        1 => format!("via fe80::98 dev {port}"),
        _ => format!("via 2001:db8:{n}:{k}::2"),
    };
    match rng.below(13) {
        0 | 1 => format!(
            "addr {} 2001:db8:{n}:{k}::1/64 dev {port} nodad",
            ["add", "del"][rng.below(2)]
        ),
        // Nexthop objects of IPv6 next hops (ids of their own: an IPv4 route may
        // use one, an IPv6 route no IPv4 one), groups of them, routes over them.
        8 | 9 => match rng.below(4) {
            0 => format!("nexthop {op} id 30 group {}", 21 + rng.below(3)),
            1 => format!(
                "nexthop {op} id 30 group {}/{},{}",
                21 + rng.below(3),
                21 + rng.below(3),
                1 + rng.below(3)
            ),
            _ => format!(
                "nexthop {op} id {} via {} dev {port}",
                21 + rng.below(3),
                ["fe80::99", "fe80::98", &format!("2001:db8:{n}:{k}::2")][rng.below(3)]
            ),
        },
        10 | 11 => format!(
            "-6 route {op} {p}{metric} nhid {}",
            [21, 22, 23, 30][rng.below(4)]
        ),
        12 => format!("nexthop del id {}", [21, 22, 23, 30][rng.below(4)]),
        2 | 3 => format!("-6 route {op} {p}{metric} {}", via(rng)),
        4 => format!(
            "-6 route {op} {p}{metric} nexthop via fe80::99 dev port0 weight {} \
             nexthop via fe80::98 dev port1 weight {}",
            1 + rng.below(4),
            1 + rng.below(4)
        ),
        5 => format!(
            "-6 route {op} {} {p}{metric}",
            ["blackhole", "unreachable", "prohibit"][rng.below(3)]
        ),
        _ => format!("-6 route del {p}{metric}"),
    }
}

#[test]
fn random_kernel_events_leave_the_dataplane_equal_to_the_kernel() {
    let n = 86u8;
    let seed: u64 = std::env::var("ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let steps: usize = std::env::var("ORACLE_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    eprintln!("oracle: seed {seed}, {steps} steps (ORACLE_SEED={seed} replays it)");
    let mut lab = Lab::new(
        "or",
        [&format!("10.{n}.1.2/24"), &format!("10.{n}.2.2/24")],
        None,
    );
    let cp = lab.cp();
    lab.start_daemon(&format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.{n}.1.1/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.{n}.2.1/24\"]\n\
         [linux]\nnetns = \"{cp}\"\n"
    ));
    // Host a sends the probes through the router, whatever addresses port0
    // has at the time: its gateway's MAC is the port's, for good.
    let gw = format!("10.{n}.1.1");
    let mac = lab.json("show interfaces port0")["interfaces"][0]["mac"]
        .as_str()
        .unwrap()
        .to_string();
    let (a, veth) = (lab.ns("a"), format!("dp{}a1", lab.tag));
    // (again before each probe: the host's link going down flushes both)
    let host_a_route = || {
        sh(&[
            "ip",
            "-n",
            &a,
            "neigh",
            "replace",
            &gw,
            "lladdr",
            &mac,
            "dev",
            &veth,
            "nud",
            "permanent",
        ]);
        sh(&["ip", "-n", &a, "route", "replace", "default", "via", &gw]);
    };
    // IPv6: host a's address, and the router as its gateway by a link-local
    // address whose MAC is port0's, for good.
    let host_a_route6 = || {
        let a6 = format!("2001:db8:{n}:1::2/64");
        sh(&[
            "ip", "-n", &a, "addr", "replace", &a6, "dev", &veth, "nodad",
        ]);
        sh(&[
            "ip",
            "-n",
            &a,
            "-6",
            "neigh",
            "replace",
            "fe80::1",
            "lladdr",
            &mac,
            "dev",
            &veth,
            "nud",
            "permanent",
        ]);
        sh(&[
            "ip", "-n", &a, "-6", "route", "replace", "default", "via", "fe80::1", "dev", &veth,
        ]);
    };
    let targets: Vec<std::net::IpAddr> = [
        "198.18.0.77",
        "198.18.1.77",
        "198.18.2.77",
        "198.18.3.77",
        "198.18.9.77",
        "203.0.113.77",
        "192.0.2.77",
    ]
    .iter()
    .map(|a| a.parse().unwrap())
    .chain((2..5).map(|k| std::net::Ipv4Addr::new(10, n, k, 77).into()))
    .collect();
    let targets6: Vec<std::net::IpAddr> = ["9", "a", "b", "2"]
        .iter()
        .map(|s| format!("2001:db8:{n}:{s}::77").parse().unwrap())
        .chain(["2001:db8:99::77".parse().unwrap()])
        .collect();
    // (`ORACLE_DEBUG`: every step and every probe left out, as they come)
    let debug = std::env::var_os("ORACLE_DEBUG").is_some();
    let mut host_a_carrier = true;
    let (mut probed, mut probed6) = (0, 0);
    let mut rng = Rng(seed);
    let mut history: Vec<String> = Vec::new();
    let mut applied = 0;
    for i in 0..steps {
        let cmd = step(&mut rng, n);
        let took = match cmd.split_whitespace().collect::<Vec<_>>()[..] {
            ["carrier", side, state] => {
                if side == "a" {
                    host_a_carrier = state == "up";
                }
                let (ns, veth) = (lab.ns(side), format!("dp{}{side}1", lab.tag));
                sh(&["ip", "-n", &ns, "link", "set", &veth, state])
                    .status
                    .success()
            }
            _ => {
                let mut args = vec!["ip", "-n", &cp];
                args.extend(cmd.split_whitespace());
                sh(&args).status.success()
            }
        };
        applied += usize::from(took);
        history.push(format!(
            "{i}: ip {cmd}{}",
            if took { "" } else { "  (refused)" }
        ));
        if debug {
            eprintln!("oracle: step {}", history[i]);
        }
        let t0 = Instant::now();
        loop {
            let (k, d) = (kernel_table(&cp), dataplane_table(&lab));
            if k == d {
                break;
            }
            if t0.elapsed() > AGREE {
                let keys: std::collections::BTreeSet<_> = k.keys().chain(d.keys()).collect();
                let diff: Vec<String> = keys
                    .into_iter()
                    .filter(|p| k.get(*p) != d.get(*p))
                    .map(|p| format!("  {p}: kernel {:?}, dataplane {:?}", k.get(p), d.get(p)))
                    .collect();
                let tail = history[history.len().saturating_sub(
                    std::env::var("ORACLE_TAIL")
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(25),
                )..]
                    .join("\n");
                // (every route of the differing prefixes, each metric and source)
                let routes = lab.json("route show table 0");
                let detail: Vec<String> = routes["routes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| {
                        let p = r["prefix"].as_str().unwrap_or("");
                        k.get(p) != d.get(p)
                    })
                    .map(|r| r.to_string())
                    .collect();
                panic!(
                    "seed {seed}: after step {i} the dataplane differs from the kernel:\n{}\n\
                     the dataplane's routes there:\n{}\nlast steps:\n{tail}\n--- show linux\n{}",
                    diff.join("\n"),
                    detail.join("\n"),
                    lab.dpctl("show linux").1
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Every second step, a datagram to a random address, while host a can
        // reach the router (its link and port0 up).
        let port0 = String::from_utf8_lossy(
            &sh(&["ip", "-n", &cp, "-br", "link", "show", "dev", "port0"]).stdout,
        )
        .into_owned();
        let up = host_a_carrier && port0.contains(",UP") && port0.contains("LOWER_UP");
        if i % 2 == 1 && !up && debug {
            eprintln!(
                "oracle: step {i}: no probe (host a's link {host_a_carrier}, port0 {port0:?})"
            );
        }
        if i % 2 == 1 && up {
            // (IPv4 and IPv6 in turn)
            let addr = if i % 4 == 1 {
                targets[rng.below(targets.len())]
            } else {
                targets6[rng.below(targets6.len())]
            };
            host_a_route();
            host_a_route6();
            // A datagram held for a neighbour is looked up again when it is
            // let go, by then under another route: one more, afresh.
            let mut r = probe(&lab, &kernel_table(&cp), n, addr, 40_000 + i as u16);
            if r.as_ref().is_err_and(|e| e.contains("\"local\"")) {
                eprintln!("oracle: step {i}: {}; again", r.as_ref().unwrap_err());
                r = probe(&lab, &kernel_table(&cp), n, addr, 50_000 + i as u16);
            }
            if let Err(e) = r {
                panic!(
                    "seed {seed}: after step {i} a packet went where the kernel would not send it: {e}\n\
                     last steps:\n{}",
                    history[history.len().saturating_sub(25)..].join("\n")
                );
            }
            probed += 1;
            probed6 += usize::from(addr.is_ipv6());
        }
    }
    eprintln!(
        "oracle: seed {seed}: {steps} steps agree ({applied} taken by the kernel), {probed} packets ({probed6} IPv6) went where the kernel sends them"
    );
    assert!(
        steps < 100 || probed6 > 0 && probed > probed6,
        "no packet of a family was sent"
    );
    for (p, what) in kernel_table(&cp) {
        eprintln!("oracle: final {p}: {what}");
    }
    let show = lab.json("show linux");
    assert_eq!(show["netlink"]["malformed"], 0, "{show}");
    lab.stop_daemon();
}
