//! Several workers: a router with two workers and two receive queues per port
//! (`net_af_packet` with `qpairs=2`: the kernel's packet fanout hashes each flow
//! to one queue, as a NIC's RSS does) between two host namespaces. Flows must
//! spread over both workers, every flow's packets must leave in the order they
//! came, the workers' counters must add up to what the veths carried, and sFlow
//! samples must come from both workers' rings. Needs root, iproute2, python3.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Packets the veth `dev` (in the root namespace) received.
fn veth_rx(dev: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/statistics/rx_packets"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Packets each worker's port-rx node took, by worker.
fn port_rx_by_worker(lab: &Lab) -> Vec<u64> {
    let run = lab.json("show run");
    run["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            w["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == "port-rx")
                .map_or(0, |s| s["vectors"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn two_workers_spread_flows_keep_each_in_order_and_add_up() {
    use sflow::{Sample, decode_datagram};
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    collector
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let cport = collector.local_addr().unwrap().port();
    let mut lab = Lab::new(
        "w",
        ["10.97.10.1/24", "10.97.11.1/24"],
        Some(["10.97.10.254", "10.97.11.254"]),
    );
    let t = lab.tag.clone();
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    // Nothing but the test's own frames on the wire (no IPv6 chatter), so the
    // counters can be compared exactly.
    for ns in [&a, &b] {
        ok(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
    }
    lab.start_daemon_config(&format!(
        "[eal]\nmemory = \"auto\"\nmemory_mb = 256\n[mempool]\nmbufs = 8191\n\
         [workers]\ncpus = [1, 0]\n\
         [[port]]\nname = \"port0\"\ndevice = \"net_af_packet_{t}a,iface=dp{t}a0,qpairs=2\"\n\
         [[port]]\nname = \"port1\"\ndevice = \"net_af_packet_{t}b,iface=dp{t}b0,qpairs=2\"\n\
         [forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.97.10.254/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.97.11.254/24\"]\n\
         [sflow]\nagent_address = \"192.0.2.9\"\ncollectors = [\"127.0.0.1:{cport}\"]\n\
         [[sflow.interface]]\nname = \"port0\"\nrate = 4\ndirection = \"rx\"\n"
    ));
    assert_eq!(lab.json("show version")["workers"], 2);
    // Both neighbours resolved before the flows.
    assert!(ping(&a, "10.97.11.1", 3, "0.2").0 >= 2);

    // 64 UDP flows (source ports) of 60 numbered datagrams each, interleaved.
    let (flows, per_flow) = (64u32, 60u32);
    let mut receiver = std::process::Command::new("ip")
        .args(["netns", "exec", &b, "python3", "-c"])
        .arg(
            "import socket,sys\n\
             s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
             s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,1<<22)\n\
             s.bind(('10.97.11.1',9999))\nprint('ready',flush=True)\n\
             s.settimeout(3)\nout=[]\n\
             try:\n    while True:\n        d,a=s.recvfrom(64)\n        out.append('%d %s'%(a[1],d.decode()))\n\
             except socket.timeout:\n    pass\nprint('\\n'.join(out))\n",
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut rout = std::io::BufReader::new(receiver.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut rout, &mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    std::thread::sleep(Duration::from_millis(300));
    let (rx_a0, rx_b0) = (veth_rx(&format!("dp{t}a0")), veth_rx(&format!("dp{t}b0")));
    let base = port_rx_by_worker(&lab);
    let send = format!(
        "import socket,time\n\
         ss=[socket.socket(socket.AF_INET,socket.SOCK_DGRAM) for _ in range({flows})]\n\
         for i,s in enumerate(ss):\n    s.bind(('10.97.10.1',20000+i))\n\
         for n in range({per_flow}):\n    for s in ss:\n        s.sendto(b'%d'%n,('10.97.11.1',9999))\n    time.sleep(0.002)\n"
    );
    ok(&["ip", "netns", "exec", &a, "python3", "-c", &send]);
    let mut got = String::new();
    std::io::Read::read_to_string(&mut rout, &mut got).unwrap();
    assert!(receiver.wait().unwrap().success());

    // Every flow in order, and (almost) every datagram there.
    let mut seqs: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for l in got.lines() {
        let (port, n) = l.split_once(' ').unwrap();
        seqs.entry(port.parse().unwrap())
            .or_default()
            .push(n.parse().unwrap());
    }
    let total: usize = seqs.values().map(Vec::len).sum();
    let sent = (flows * per_flow) as usize;
    assert!(
        total * 100 >= sent * 99,
        "{total} of {sent} datagrams arrived"
    );
    assert_eq!(seqs.len(), flows as usize, "flows that arrived");
    for (port, s) in &seqs {
        assert!(
            s.windows(2).all(|w| w[0] < w[1]),
            "flow from port {port} reordered: {s:?}"
        );
    }

    // Both workers took a share; their counters add up to the veths'.
    let t0 = Instant::now();
    let (by_worker, veths) = loop {
        let now = port_rx_by_worker(&lab);
        let by: Vec<u64> = now.iter().zip(&base).map(|(n, b)| n - b).collect();
        let veths = veth_rx(&format!("dp{t}a0")) - rx_a0 + veth_rx(&format!("dp{t}b0")) - rx_b0;
        if by.iter().sum::<u64>() == veths || t0.elapsed() > Duration::from_secs(5) {
            break (by, veths);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("port-rx by worker {by_worker:?}, veths {veths}");
    assert_eq!(
        by_worker.iter().sum::<u64>(),
        veths,
        "workers {by_worker:?}"
    );
    for (w, n) in by_worker.iter().enumerate() {
        assert!(
            *n * 5 >= veths,
            "worker {w} took {n} of {veths}: flows did not spread"
        );
    }
    let iface: Value = lab.json("show interfaces port0");
    let rx0 = iface["interfaces"][0]["counters"]["rx_packets"]
        .as_u64()
        .unwrap();
    let tx1 = lab.json("show interfaces port1")["interfaces"][0]["counters"]["tx_packets"]
        .as_u64()
        .unwrap();
    assert!(
        rx0 >= sent as u64 && tx1 >= total as u64,
        "rx {rx0}, tx {tx1}"
    );

    // sFlow: datagrams of both sub-agents (one per worker ring) with flow samples.
    let mut subagents = BTreeSet::new();
    let mut buf = vec![0u8; 65536];
    let t0 = Instant::now();
    while subagents.len() < 2 && t0.elapsed() < Duration::from_secs(10) {
        let Ok(len) = collector.recv(&mut buf) else {
            continue;
        };
        let d = decode_datagram(&buf[..len]).expect("our datagrams decode");
        if d.samples.iter().any(|s| matches!(s, Sample::Flow(_))) {
            subagents.insert(d.header.sub_agent_id);
        }
    }
    assert_eq!(
        subagents,
        BTreeSet::from([0, 1]),
        "sub-agents with flow samples"
    );
    lab.stop_daemon();
}
