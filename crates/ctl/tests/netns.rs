//! Two host network namespaces joined by a real dataplaned over veth pairs
//! (xconnect and router modes)
//! (net_af_packet): ping and a numbered burst of 257 raw frames must cross intact,
//! in both directions; in router mode, dpctl's counters, trace and reload while
//! traffic flows. Needs root (CI runs as root) and iproute2, iputils-ping,
//! python3 (scripts/setup.sh installs them).

mod common;
#[path = "netns/ip6.rs"]
mod ip6;

use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn ping_and_raw_burst_cross_the_xconnect() {
    let mut lab = Lab::new("x", ["10.99.7.1/24", "10.99.7.2/24"], None);
    lab.start_daemon("");
    let t = lab.tag.clone();
    let ns_a = format!("dp{t}a");
    let ping = sh(&[
        "ip",
        "netns",
        "exec",
        &ns_a,
        "ping",
        "-c",
        "3",
        "-i",
        "0.2",
        "-W",
        "2",
        "10.99.7.2",
    ]);
    let ping_out = String::from_utf8_lossy(&ping.stdout);
    assert!(
        ping.status.success() && ping_out.contains("3 received"),
        "ping failed: {ping_out}"
    );

    let (ab, report_ab) = lab.burst("a", "b", 257);
    assert!(ab, "a -> b: {report_ab}");
    let (ba, report_ba) = lab.burst("b", "a", 257);
    assert!(ba, "b -> a: {report_ba}");

    let summary = lab.stop_daemon();
    eprintln!("{summary}");
    let row = |name: &str| {
        summary
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|q| q.starts_with(name))
            })
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|w| w.parse::<u64>().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_else(|| panic!("no row for {name} in:\n{summary}"))
    };
    for q in ["port0/q0", "port1/q0"] {
        // columns: worker, rx-pkts, tx-pkts, tx-drops, ...
        let r = row(q);
        let (rx, tx, drops) = (r[1], r[2], r[3]);
        assert!(rx >= 257 + 3, "{q}: rx {rx}");
        assert_eq!(
            rx,
            tx + drops,
            "{q}: every received packet is sent or counted"
        );
        assert_eq!(drops, 0, "{q}: no drops on an idle veth");
    }
}

#[test]
fn bad_config_is_one_clear_error_line() {
    let dir = std::env::temp_dir().join(format!("dp-badcfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_dataplaned"))
            .arg("-c")
            .arg(&p)
            .arg("--socket")
            .arg(dir.join(format!("{name}.sock")))
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let two = "[[port]]\nname=\"port0\"\ndevice=\"net_null_bc0\"\n[[port]]\nname=\"port1\"\n";
    let cases: &[(&str, String, &str)] = &[
        (
            "unknown-key.toml",
            "[eal]\nhugepages = 1\n".into(),
            "unknown field `hugepages`",
        ),
        ("syntax.toml", "[[port]\n".into(), "config"),
        (
            "odd.toml",
            format!(
                "{two}device=\"net_null_bc1\"\n[[port]]\nname=\"port2\"\ndevice=\"net_null_bc2\"\n"
            ),
            "even number of ports",
        ),
        (
            "no-huge.toml",
            format!(
                "[eal]\nmemory=\"in-memory\"\nmemory_mb=4000000\n{two}device=\"net_null_bc1\"\n"
            ),
            "no free 2 MiB hugepages",
        ),
        (
            "bad-vdev.toml",
            format!(
                "[eal]\nmemory=\"no-huge\"\nmemory_mb=128\n[mempool]\nmbufs=1023\n{two}device=\"net_nosuch0\"\n"
            ),
            "port1: cannot create device",
        ),
        (
            "bad-pci.toml",
            format!("[eal]\nmemory=\"no-huge\"\nmemory_mb=128\n{two}device=\"0000:7f:00.0\"\n"),
            "0000:7f:00.0",
        ),
        (
            "eal-fail.toml",
            format!(
                "[eal]\nmemory=\"no-huge\"\nmemory_mb=128\nextra_args=[\"--no-such-eal-option\"]\n{two}device=\"net_null_bc1\"\n"
            ),
            "EAL initialisation failed",
        ),
    ];
    for (name, text, want) in cases {
        let (code, err) = run(name, text);
        assert_eq!(code, Some(1), "{name}: exit code, stderr: {err}");
        let ours: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("dataplaned: error:"))
            .collect();
        assert_eq!(ours.len(), 1, "{name}: exactly one error line, got: {err}");
        assert!(
            ours[0].contains(want),
            "{name}: want {want:?} in {:?}",
            ours[0]
        );
        assert!(!err.contains("panicked"), "{name}: panicked: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn router_mode_routes_pings_and_reports_unreachable() {
    let mut lab = Lab::new(
        "r",
        ["10.99.8.1/24", "10.99.9.1/24"],
        Some(["10.99.8.254", "10.99.9.254"]),
    );
    lab.start_daemon(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.99.8.254/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.99.9.254/24\"]\n\
         [[route]]\nprefix = \"10.99.66.0/24\"\nkind = \"unreachable\"\n",
    );
    let t = lab.tag.clone();
    let ns_a = format!("dp{t}a");
    let received = |dst: &str, n: u32| ping(&ns_a, dst, n, "0.2");
    // Nothing is lost to ARP: the router holds the first packets to a neighbour
    // it is resolving (its reply to the pinger, the ping to host b).
    let (got, out) = received("10.99.8.254", 4);
    assert_eq!(got, 4, "ping to the router: {out}");
    let (got, out) = received("10.99.9.1", 6);
    assert_eq!(got, 6, "routed ping: {out}");
    let (got, out) = received("10.99.66.1", 2);
    assert!(
        got == 0 && out.contains("errors"),
        "ICMP unreachable expected: {out}"
    );
    let summary = lab.stop_daemon();
    eprintln!("{summary}");
    assert!(summary.contains("ip4_unreachable"), "{summary}");
    assert!(summary.contains("ip4-lookup"), "{summary}");
}

#[test]
fn dpctl_counters_trace_and_reload_under_traffic() {
    let mut lab = Lab::new(
        "d",
        ["10.99.10.1/24", "10.99.11.1/24"],
        Some(["10.99.10.254", "10.99.11.254"]),
    );
    let routing = "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.99.10.254/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.99.11.254/24\"]\n";
    let with_66 =
        format!("{routing}[[route]]\nprefix = \"10.99.66.0/24\"\nkind = \"unreachable\"\n");
    let with_77 = format!("{routing}[[route]]\nprefix = \"10.99.77.0/24\"\nkind = \"blackhole\"\n");
    lab.start_daemon(&with_66);
    let ns_a = format!("dp{}a", lab.tag);
    // Neighbours learned both ways (the first packet is lost to ARP).
    let (got, out) = ping(&ns_a, "10.99.11.1", 3, "0.2");
    assert!(got >= 2, "warm-up: {out}");

    // Counters: clear, then exactly what the pings add (plus stray IPv6/ARP frames).
    let (code, _, err) = lab.dpctl("clear counters");
    assert_eq!(code, 0, "{err}");
    let (got, out) = ping(&ns_a, "10.99.11.1", 5, "0.1");
    assert_eq!(got, 5, "{out}");
    let ifs = lab.json("show interfaces");
    let counter = |name: &str, c: &str| {
        ifs["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .map(|i| i["counters"][c].as_u64().unwrap())
            .unwrap()
    };
    for (name, c) in [
        ("port0", "rx_packets"),
        ("port0", "tx_packets"),
        ("port1", "rx_packets"),
        ("port1", "tx_packets"),
    ] {
        let n = counter(name, c);
        assert!(
            (5..15).contains(&n),
            "{name} {c} = {n} after clear + 5 pings: {ifs}"
        );
    }
    let run = lab.json("show run");
    let stage = |name: &str| -> u64 {
        run["workers"][0]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map_or(0, |s| s["vectors"].as_u64().unwrap())
    };
    let ip4 = stage("ip4-lookup");
    assert!((10..20).contains(&ip4), "ip4-lookup vectors {ip4}: {run}");
    let (_, text, _) = lab.dpctl("show run");
    eprintln!("{text}");
    assert!(
        text.contains("ip4-lookup") && text.contains("Vectors/Call"),
        "{text}"
    );

    // Trace: the next packets of the worker, decoded.
    let (code, _, err) = lab.dpctl("trace add 4");
    assert_eq!(code, 0, "{err}");
    let (got, _) = ping(&ns_a, "10.99.11.1", 2, "0.1");
    assert_eq!(got, 2);
    let tr = lab.json("show trace");
    let pkts = tr["packets"].as_array().unwrap();
    assert!(!pkts.is_empty(), "{tr}");
    assert!(
        pkts.iter().any(|p| {
            p["summary_in"]
                .as_str()
                .unwrap()
                .contains("10.99.10.1 > 10.99.11.1: icmp echo request, ttl 64")
                && p["decision"].as_str().unwrap().starts_with("tx")
                && p["summary_out"]
                    .as_str()
                    .is_some_and(|s| s.contains("icmp echo request, ttl 63"))
        }),
        "{tr}"
    );
    let (_, text, _) = lab.dpctl("show trace");
    eprintln!("{text}");
    let (_, ifs, _) = lab.dpctl("show interfaces");
    eprintln!("{ifs}");
    assert!(text.contains("Packet 1"), "{text}");
    let (code, _, _) = lab.dpctl("clear trace");
    assert_eq!(code, 0);
    assert!(
        lab.json("show trace")["packets"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Reloads while a ping flows: routes come and go, no echo is lost.
    let cfg = lab.dir.join("dataplaned.toml");
    let flow = {
        let ns = ns_a.clone();
        std::thread::spawn(move || ping(&ns, "10.99.11.1", 100, "0.02"))
    };
    let routes = |lab: &Lab| -> Vec<String> {
        lab.json("route show")["routes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["prefix"].as_str().unwrap().to_string())
            .collect()
    };
    for k in 0..6 {
        std::thread::sleep(Duration::from_millis(150));
        let (text, want, gone) = if k % 2 == 0 {
            (&with_77, "10.99.77.0/24", "10.99.66.0/24")
        } else {
            (&with_66, "10.99.66.0/24", "10.99.77.0/24")
        };
        std::fs::write(&cfg, lab.config(text)).unwrap();
        let (code, out, err) = lab.dpctl("reload");
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.trim(), "reload: routes +1 -1 ~0");
        let rs = routes(&lab);
        assert!(
            rs.contains(&want.to_string()) && !rs.contains(&gone.to_string()),
            "{rs:?}"
        );
    }
    let (got, out) = flow.join().unwrap();
    assert_eq!(got, 100, "echoes lost during reloads: {out}");
    // The route that came with the last reload forwards as configured.
    let (got, out) = ping(&ns_a, "10.99.66.1", 1, "0.2");
    assert!(got == 0 && out.contains("Unreachable"), "{out}");
    let summary = lab.stop_daemon();
    assert!(summary.contains("ip4-lookup"), "{summary}");
}

/// sFlow end to end: 1:10 on port0's rx in router mode, a collector socket on
/// loopback (the daemon runs in the root namespace; the traffic stays in the
/// namespaces), a few thousand UDP packets from a to b. The number of samples is
/// within statistical bounds of packets/10, the sample pool matches the interface's
/// rx counter, nothing is dropped, the samples name the right interfaces and next
/// hop and route masks, counter samples arrive, and dpctl's sflow commands refuse bad settings
/// without changing anything.
#[test]
fn sflow_one_in_ten_reaches_a_collector() {
    use sflow::{FlowRecord, Interface, Sample, decode_datagram};
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let cport = collector.local_addr().unwrap().port();
    let mut lab = Lab::new(
        "s",
        ["10.99.10.1/24", "10.99.11.1/24"],
        Some(["10.99.10.254", "10.99.11.254"]),
    );
    lab.start_daemon(&format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.99.10.254/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.99.11.254/24\"]\n\
         [sflow]\nagent_address = \"192.0.2.7\"\ncollectors = [\"127.0.0.1:{cport}\"]\n\
         polling_interval = 1\n\
         [[sflow.interface]]\nname = \"port0\"\nrate = 10\ndirection = \"rx\"\n"
    ));
    let t = lab.tag.clone();
    let ns_a = format!("dp{t}a");
    // Resolve both neighbours first.
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        &ns_a,
        "ping",
        "-c",
        "3",
        "-i",
        "0.2",
        "-W",
        "1",
        "10.99.11.1",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let n = 4000;
    let send = format!(
        "import socket,time\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
         for i in range({n}):\n    s.sendto(b'x'*64,('10.99.11.1',9))\n    \
         time.sleep(0.001) if i%25==0 else None\n"
    );
    ok(&["ip", "netns", "exec", &ns_a, "python3", "-c", &send]);

    // Collect until the datagrams stop (the agent flushes within 1 s).
    let mut flows = Vec::new();
    let mut counters = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut quiet_since = Instant::now();
    let t0 = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(2500)
        && t0.elapsed() < Duration::from_secs(20)
    {
        let Ok(len) = collector.recv(&mut buf) else {
            continue;
        };
        let d = decode_datagram(&buf[..len]).expect("our datagrams decode");
        assert_eq!(
            d.header.agent_address,
            sflow::Address::V4("192.0.2.7".parse().unwrap())
        );
        for s in d.samples.iter() {
            match s {
                Sample::Flow(f) => {
                    quiet_since = Instant::now();
                    let nh = f.records.iter().find_map(|r| match r {
                        FlowRecord::ExtendedRouter(x) => {
                            Some((x.next_hop, x.src_mask_len, x.dst_mask_len))
                        }
                        _ => None,
                    });
                    flows.push((
                        f.sampling_rate,
                        f.sample_pool,
                        f.drops,
                        f.input,
                        f.output,
                        nh,
                    ));
                }
                Sample::Counters(c) => {
                    counters.push(c.source_id);
                }
                _ => {}
            }
        }
    }
    let rx0 = {
        let v = lab.json("show interfaces port0");
        let i = v["interfaces"]
            .as_array()
            .and_then(|a| a.first().cloned())
            .unwrap_or(v.clone());
        i["counters"]["rx_packets"]
            .as_u64()
            .unwrap_or_else(|| panic!("rx_packets in {v}"))
    };
    let s = flows.len() as f64;
    let pool = flows.iter().map(|f| f.1).max().unwrap_or(0) as u64;
    eprintln!("samples {s}, pool {pool}, port0 rx {rx0}");
    // (the sender's veth and the af_packet ring may drop a few on a loaded host,
    // before the dataplane sees them; the statistics below use what port0 counted)
    assert!(rx0 >= n as u64 * 99 / 100, "port0 received {rx0} of {n}");
    // The pool is every packet port0 received up to the last sample.
    assert!(pool <= rx0 && rx0 - pool < 200, "pool {pool}, rx {rx0}");
    let p = pool as f64;
    let sigma = (p / 30.0).sqrt();
    assert!(
        (s - p / 10.0).abs() < 6.0 * sigma + 2.0,
        "{s} samples for {p} packets"
    );
    assert!(
        flows
            .iter()
            .all(|f| f.0 == 10 && f.2 == 0 && f.3 == Interface::Index(1))
    );
    let udp = flows
        .iter()
        .filter(|f| f.4 == Interface::Index(2))
        .collect::<Vec<_>>();
    assert!(
        udp.len() as f64 > s * 0.9,
        "{} of {s} forwarded to port1",
        udp.len()
    );
    // The masks: the routes a lookup finds for source and destination, both
    // learned neighbours here (each gets a /32 host route).
    let want = Some((sflow::Address::V4("10.99.11.1".parse().unwrap()), 32, 32));
    let odd: Vec<_> = udp.iter().filter(|f| f.5 != want).collect();
    assert!(
        odd.is_empty(),
        "{} samples unlike {want:?}: {:?}",
        odd.len(),
        odd.first()
    );
    assert!(
        counters.contains(&sflow::DataSource::ifindex(1))
            && counters.contains(&sflow::DataSource::ifindex(2)),
        "counter samples for both interfaces: {counters:?}"
    );
    let st = lab.json("show sflow");
    let w = &st["workers"][0];
    assert_eq!(w["sampled"].as_u64(), Some(flows.len() as u64), "{st}");
    assert_eq!(w["exported"].as_u64(), Some(flows.len() as u64), "{st}");
    assert_eq!(w["dropped"].as_u64(), Some(0), "{st}");

    // Bad settings: a clear error each, nothing changed.
    let before = lab.json("show sflow");
    for (cmd, want) in [
        ("sflow enable port1 rate 0", "rate 0"),
        (
            "sflow header-bytes 300",
            "header-bytes 300 out of range 64..=256",
        ),
        ("sflow header-bytes 32", "out of range"),
        (
            "sflow collector add no-such-host.invalid",
            "no-such-host.invalid",
        ),
        ("sflow collector del 127.0.0.9", "not configured"),
        ("sflow enable nosuch", "nosuch"),
        ("sflow disable port1", "not sampled"),
        ("sflow enable port1 direction up", "rx, tx or both"),
        ("sflow max-samples 4294967296", "not a number"),
        ("sflow max-samples lots", "not a number"),
    ] {
        let (code, _, err) = lab.dpctl(cmd);
        assert_ne!(code, 0, "{cmd} accepted");
        assert!(err.contains(want), "{cmd}: {err}");
    }
    let after = lab.json("show sflow");
    for k in [
        "interfaces",
        "collectors",
        "header_bytes",
        "polling_interval_s",
        "max_samples_per_second",
    ] {
        assert_eq!(before[k], after[k], "{k} changed");
    }
    // Good ones show up.
    for cmd in [
        "sflow enable port1 rate 100 direction both",
        "sflow header-bytes 64",
        "sflow polling 30",
        "sflow collector add 127.0.0.1:9",
        "sflow max-samples 5000",
    ] {
        let (code, _, err) = lab.dpctl(cmd);
        assert_eq!(code, 0, "{cmd}: {err}");
    }
    let v = lab.json("show sflow");
    assert_eq!(v["header_bytes"], 64);
    assert_eq!(v["polling_interval_s"], 30);
    assert_eq!(v["max_samples_per_second"], 5000);
    assert_eq!(v["interfaces"][1]["rate"], 100);
    assert_eq!(v["interfaces"][1]["direction"], "both");
    assert_eq!(v["collectors"].as_array().map(Vec::len), Some(2));
    let (code, out, _) = lab.dpctl("show sflow");
    assert_eq!(code, 0);
    assert!(out.contains("worker") && out.contains("1:100"), "{out}");
    assert!(out.contains("max-samples 5000/s"), "{out}");
    lab.stop_daemon();
}

/// Neighbours learned from ARP age: the kernel host answers the router's unicast
/// probes and stays; once its address is gone the probes go unanswered and the
/// router forgets it (and resolves by broadcast again when traffic needs it).
#[test]
fn learned_neighbors_are_probed_and_forgotten() {
    let mut lab = Lab::new(
        "n",
        ["10.99.12.1/24", "10.99.13.1/24"],
        Some(["10.99.12.254", "10.99.13.254"]),
    );
    lab.start_daemon(
        "[forwarding]\nmode = \"router\"\n\
         [router]\nneighbor_reachable_s = 1\nneighbor_probes = 2\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.99.12.254/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.99.13.254/24\"]\n",
    );
    let t = lab.tag.clone();
    let ns_a = format!("dp{t}a");
    let (got, out) = ping(&ns_a, "10.99.13.1", 3, "0.2");
    assert!(got >= 2, "warm-up: {out}");
    let host = |n: &serde_json::Value| {
        n["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["address"] == "10.99.12.1")
            .cloned()
    };
    // Past the reachable time several times over: probed, answered, still there.
    std::thread::sleep(Duration::from_millis(3500));
    let n = lab.json("neighbor show");
    assert_eq!(
        host(&n).map(|h| h["source"].clone()),
        Some("arp".into()),
        "{n}"
    );
    assert!(n["aging"]["probes_sent"].as_u64().unwrap() >= 2, "{n}");
    assert_eq!(n["aging"]["forgotten"], 0, "{n}");

    // The host loses its address: the probes go unanswered.
    ok(&[
        "ip",
        "-n",
        &ns_a,
        "addr",
        "del",
        "10.99.12.1/24",
        "dev",
        &format!("dp{t}a1"),
    ]);
    let t0 = Instant::now();
    let mut n = lab.json("neighbor show");
    while host(&n).is_some() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        n = lab.json("neighbor show");
    }
    assert!(host(&n).is_none(), "still there after 10 s: {n}");
    assert!(n["aging"]["forgotten"].as_u64().unwrap() >= 1, "{n}");
    let _ = lab.stop_daemon();
}
