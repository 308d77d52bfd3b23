//! Prometheus metrics end to end: a router with `[linux]`, FPM and sFlow
//! between two host namespaces is scraped over HTTP; `promtool check metrics`
//! accepts the exposition, the values agree with `dpctl show`, counters survive
//! `clear counters`, and every query of the Grafana dashboard in `packaging/`
//! names a metric (and label values) the scrape has. Needs root, iproute2,
//! iputils-ping and promtool (Debian's prometheus package).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// One sample: labels and value.
type Sample = (BTreeMap<String, String>, f64);

/// Sends `request` (a whole HTTP/1.1 request) and returns the status line,
/// the header lines and the body.
fn http(addr: &str, request: &str) -> (String, Vec<String>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    let mut lines = head.lines().map(str::to_string);
    let status = lines.next().unwrap_or_default();
    (status, lines.collect(), body.to_string())
}

fn get(addr: &str, path: &str) -> (String, Vec<String>, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
    )
}

/// Parses the 0.0.4 text format strictly: every family has HELP and TYPE before
/// its samples, every sample line is `name{labels} value`.
fn parse(text: &str) -> BTreeMap<String, Vec<Sample>> {
    let mut out: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    let (mut helped, mut typed) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines() {
        if let Some(r) = line.strip_prefix("# HELP ") {
            helped.insert(r.split(' ').next().unwrap().to_string());
            continue;
        }
        if let Some(r) = line.strip_prefix("# TYPE ") {
            let (name, ty) = r.split_once(' ').unwrap();
            assert!(
                ["counter", "gauge"].contains(&ty),
                "type {ty} of {name}: {line}"
            );
            typed.insert(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "stray comment {line:?}");
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((n, rest)) => {
                let body = rest.strip_suffix('}').unwrap_or_else(|| panic!("{line}"));
                let labels = body
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once("=\"").unwrap_or_else(|| panic!("{line}"));
                        (k.to_string(), v.trim_end_matches('"').to_string())
                    })
                    .collect();
                (n, labels)
            }
        };
        assert!(
            helped.contains(name) && typed.contains(name),
            "{name} has no HELP or TYPE before its samples"
        );
        out.entry(name.to_string())
            .or_default()
            .push((labels, value));
    }
    out
}

/// The value of `name` with exactly these labels.
fn value(m: &BTreeMap<String, Vec<Sample>>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    m.get(name)
        .and_then(|s| s.iter().find(|(l, _)| *l == want))
        .map(|s| s.1)
        .unwrap_or_else(|| panic!("no {name}{labels:?} in the scrape"))
}

/// Every `expr` string in the dashboard.
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

/// The metric names in a PromQL expression (every metric is `dataplane_...`),
/// each with the `label="value"` matchers that follow it.
fn metrics_in(expr: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("dataplane_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = tail[..end].to_string();
        let mut matchers = Vec::new();
        if let Some(body) = tail[end..].strip_prefix('{') {
            let body = &body[..body.find('}').unwrap()];
            for m in body.split(',') {
                if let Some((k, v)) = m.split_once("=\"") {
                    if !k.ends_with(['!', '~']) {
                        matchers.push((k.trim().to_string(), v.trim_end_matches('"').to_string()));
                    }
                }
            }
        }
        out.push((name, matchers));
        rest = &tail[end..];
    }
    out
}

#[test]
fn metrics_are_valid_agree_with_dpctl_and_feed_every_dashboard_query() {
    let mut lab = Lab::new(
        "mx",
        ["10.87.1.2/24", "10.87.2.2/24"],
        Some(["10.87.1.1", "10.87.2.1"]),
    );
    let cp = lab.cp();
    let (a, b) = (lab.ns("a"), lab.ns("b"));
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let cport = collector.local_addr().unwrap().port();
    lab.start_daemon(&format!(
        "[forwarding]\nmode = \"router\"\n\
         [[interface]]\nname = \"port0\"\naddresses = [\"10.87.1.1/24\"]\n\
         [[interface]]\nname = \"port1\"\naddresses = [\"10.87.2.1/24\"]\n\
         [linux]\nnetns = \"{cp}\"\n\
         [fpm]\nport = 0\n\
         [sflow]\ncollectors = [\"127.0.0.1:{cport}\"]\npolling_interval = 1\n\
         [[sflow.interface]]\nname = \"port0\"\nrate = 1\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n"
    ));
    let url = lab.json("show version")["metrics"]
        .as_str()
        .expect("show version names the metrics address")
        .to_string();
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap()
        .to_string();
    // Traffic through the router, and UDP to it: punted to the twin, where
    // the namespace's kernel answers with port unreachable (injected back).
    assert!(ping(&a, "10.87.2.2", 5, "0.1").0 >= 4);
    for _ in 0..3 {
        ok(&[
            "ip",
            "netns",
            "exec",
            &a,
            "bash",
            "-c",
            "echo x > /dev/udp/10.87.1.1/9",
        ]);
    }
    let t0 = std::time::Instant::now();
    loop {
        let twin = &lab.json("show linux")["twins"][0];
        if twin["punt_pkts"].as_u64() >= Some(3) && twin["inject_pkts"].as_u64() >= Some(1) {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "punts: {twin}");
        std::thread::sleep(Duration::from_millis(20));
    }

    // A client that connects and says nothing does not hold up the others.
    let _silent = TcpStream::connect(&addr).unwrap();

    let (status, headers, text) = get(&addr, "/metrics");
    let after = lab.json("show interfaces port0");
    assert_eq!(status, "HTTP/1.1 200 OK", "{headers:?}");
    assert!(
        headers
            .iter()
            .any(|h| h == "Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{headers:?}"
    );
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; scripts/setup.sh installs it)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = promtool.wait_with_output().unwrap();
    assert!(
        o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let m = parse(&text);

    // The values are dpctl's (read after the scrape, so never smaller).
    let rx = value(
        &m,
        "dataplane_interface_rx_packets_total",
        &[("interface", "port0")],
    );
    let dp_rx = after["interfaces"][0]["counters"]["rx_packets"]
        .as_f64()
        .unwrap();
    assert!(rx >= 8.0 && rx <= dp_rx, "scraped {rx}, dpctl {dp_rx}");
    assert!(
        value(
            &m,
            "dataplane_interface_tx_packets_total",
            &[("interface", "port1")]
        ) >= 4.0
    );
    assert!(
        value(
            &m,
            "dataplane_twin_punt_packets_total",
            &[("interface", "port0")]
        ) >= 2.0
    );
    assert!(
        value(
            &m,
            "dataplane_twin_inject_packets_total",
            &[("interface", "port0")]
        ) >= 2.0
    );
    assert_eq!(
        value(&m, "dataplane_interface_link", &[("interface", "port0")]),
        1.0
    );
    assert_eq!(
        value(&m, "dataplane_twin_carrier", &[("interface", "port1")]),
        1.0
    );
    assert_eq!(
        value(
            &m,
            "dataplane_build_info",
            &[("version", env!("CARGO_PKG_VERSION")), ("mode", "router")]
        ),
        1.0
    );
    assert!(
        value(
            &m,
            "dataplane_learner_messages_total",
            &[("source", "netlink")]
        ) > 0.0
    );
    assert_eq!(value(&m, "dataplane_fpm_connected", &[]), 0.0);
    assert!(
        value(
            &m,
            "dataplane_node_vectors_total",
            &[("worker", "0"), ("node", "ip4-lookup")]
        ) >= 4.0
    );
    assert!(value(&m, "dataplane_sflow_sampled_total", &[("worker", "0")]) >= 8.0);
    assert_eq!(
        value(&m, "dataplane_fib_routes", &[("table", "0")]),
        lab.json("route show")["routes"].as_array().unwrap().len() as f64
    );
    assert!(value(&m, "dataplane_fib_results", &[]) >= 1.0);
    assert_eq!(value(&m, "dataplane_fib_results_refused_total", &[]), 0.0);

    // Prometheus's own Accept gets OpenMetrics; counters outlive `clear counters`.
    lab.dpctl("clear counters");
    let (_, headers, om) = http(
        &addr,
        &format!(
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n"
        ),
    );
    assert!(
        headers
            .iter()
            .any(|h| h.starts_with("Content-Type: application/openmetrics-text")),
        "{headers:?}"
    );
    assert!(om.ends_with("# EOF\n"));
    let again: f64 = om
        .lines()
        .find_map(|l| l.strip_prefix("dataplane_interface_rx_packets_total{interface=\"port0\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(again >= rx, "a counter went back: {rx} then {again}");

    // The rest of HTTP.
    let (status, _, body) = http(
        &addr,
        &format!("HEAD /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
    );
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", ""));
    assert_eq!(get(&addr, "/nothing").0, "HTTP/1.1 404 Not Found");
    let post = http(
        &addr,
        &format!("POST /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n"),
    );
    assert_eq!(post.0, "HTTP/1.1 405 Method Not Allowed");

    // Every dashboard query names metrics of this scrape, with label values it has.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../packaging/grafana/dataplane.json"
    );
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut all = Vec::new();
    exprs(&dash, &mut all);
    assert!(all.len() >= 20, "{} queries", all.len());
    let mut named = BTreeSet::new();
    for e in &all {
        let found = metrics_in(e);
        assert!(!found.is_empty(), "a query with no dataplane metric: {e}");
        for (name, matchers) in found {
            let samples = m.get(&name).unwrap_or_else(|| {
                panic!("dashboard query {e:?} names {name}, which is not exported")
            });
            for (k, v) in matchers
                .iter()
                .filter(|(k, v)| k != "instance" && !v.starts_with('$'))
            {
                assert!(
                    samples.iter().any(|(l, _)| l.get(k) == Some(v)),
                    "dashboard query {e:?}: no {name} with {k}=\"{v}\""
                );
            }
            named.insert(name);
        }
    }
    eprintln!(
        "{} dashboard queries over {} metrics",
        all.len(),
        named.len()
    );
    // (the host namespaces answer, so nothing above was lost on the way)
    assert!(ping(&b, "10.87.1.2", 2, "0.1").0 >= 1);
    lab.stop_daemon();
}
