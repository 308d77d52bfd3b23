//! `dpctl`'s text output: the JSON the daemon returns, laid out in aligned columns
//! the way VPP's CLI prints the same tables. `--json` prints the JSON instead, so
//! text and JSON always show the same numbers.

use std::fmt::Write;

use serde_json::Value;

use crate::cli::Command;

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// Renders the result of `cmd`. Changes print their message, if any.
pub fn render(cmd: &Command, data: &Value) -> String {
    match cmd {
        Command::RouteShow { .. } => routes(data),
        Command::LabelShow { .. } => labels(data),
        Command::NeighborShow => neighbors(data),
        Command::ShowInterfaces { .. } => interfaces(data),
        Command::ShowAddresses => addresses(data),
        Command::ShowRun => run(data),
        Command::ShowErrors => errors(data),
        Command::ShowTrace => trace(data),
        Command::ShowVersion => version(data),
        Command::ShowVrf => vrfs(data),
        Command::ShowPw => pws(data),
        Command::ShowSflow => sflow(data),
        Command::ShowLinux => linux(data),
        Command::ShowFpm => fpm(data),
        _ => data
            .get("message")
            .and_then(Value::as_str)
            .map(|m| format!("{m}\n"))
            .unwrap_or_default(),
    }
}

fn labels_text(v: &Value) -> String {
    let l: Vec<String> = arr(v).iter().map(|x| n(x).to_string()).collect();
    if l.is_empty() {
        String::new()
    } else {
        format!(" out-labels {}", l.join(" "))
    }
}

fn path_text(p: &Value) -> String {
    let mut o = String::from("via");
    if let Some(g) = p["gateway"].as_str() {
        let _ = write!(o, " {g}");
    }
    if let Some(i) = p["interface"].as_str() {
        let _ = write!(o, " {i}");
    }
    if let Some(t) = p["next_hop_table"].as_u64() {
        let _ = write!(o, " next-hop-table {t}");
    }
    o += &labels_text(&p["out_labels"]);
    o
}

fn vrfs(d: &Value) -> String {
    let mut o = format!(
        "{:<16} {:>10} {:>10}  Interfaces\n",
        "VRF", "Table", "Routes"
    );
    for v in arr(&d["vrfs"]) {
        let ifaces: Vec<&str> = arr(&v["interfaces"]).iter().map(s).collect();
        let _ = writeln!(
            o,
            "{:<16} {:>10} {:>10}  {}",
            v["vrf"].as_str().unwrap_or("-"),
            n(&v["table"]),
            n(&v["routes"]),
            ifaces.join(" ")
        );
    }
    o
}

fn pws(d: &Value) -> String {
    let mut o = format!(
        "{:<12} {:<10} {:<15} {:>7} {:>7} {:<3} {:<5} {:>12} {:>12} {:>8}  Transport\n",
        "Pseudowire",
        "Interface",
        "Neighbor",
        "In",
        "Out",
        "CW",
        "State",
        "Encap",
        "Decap",
        "Drops"
    );
    for p in arr(&d["pws"]) {
        let transport: Vec<String> = arr(&p["transport_labels"])
            .iter()
            .map(|l| n(l).to_string())
            .collect();
        let _ = writeln!(
            o,
            "{:<12} {:<10} {:<15} {:>7} {:>7} {:<3} {:<5} {:>12} {:>12} {:>8}  {}",
            s(&p["name"]),
            p["interface"].as_str().unwrap_or("-"),
            s(&p["neighbor"]),
            n(&p["in_label"]),
            n(&p["out_label"]),
            if p["control_word"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            },
            if p["up"].as_bool() == Some(true) {
                "up"
            } else {
                "down"
            },
            n(&p["encap_pkts"]),
            n(&p["decap_pkts"]),
            n(&p["drops"]),
            if transport.is_empty() {
                "-".to_string()
            } else {
                transport.join(" ")
            }
        );
    }
    o
}

fn routes(d: &Value) -> String {
    let mut o = String::new();
    for t in arr(&d["tables"]) {
        let vrf = t["vrf"]
            .as_str()
            .map_or(String::new(), |v| format!(" (vrf {v})"));
        let _ = writeln!(
            o,
            "ipv4 table {}{vrf}: {} routes",
            n(&t["table"]),
            n(&t["routes"])
        );
    }
    let rows = arr(&d["routes"]);
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "{:<6} {:<20} {:<9} Forwarding",
        "Table", "Prefix", "Source"
    );
    for r in rows {
        let head = format!(
            "{:<6} {:<20} {:<9}",
            n(&r["table"]),
            s(&r["prefix"]),
            s(&r["source"])
        );
        match s(&r["kind"]) {
            "paths" => {
                let paths = arr(&r["paths"]);
                let weighted = paths.iter().any(|p| n(&p["weight"]) != 1);
                for (k, p) in paths.iter().enumerate() {
                    let mut t = path_text(p);
                    if weighted {
                        let _ = write!(t, " weight {}", n(&p["weight"]));
                    }
                    if k == 0 {
                        let _ = writeln!(o, "{head} {t}");
                    } else {
                        let _ = writeln!(o, "{:<37} {t}", "");
                    }
                }
            }
            "connected" => {
                let _ = writeln!(o, "{head} connected {}", s(&r["interface"]));
            }
            k => {
                let _ = writeln!(o, "{head} {k}");
            }
        }
    }
    o
}

fn labels(d: &Value) -> String {
    let rows = arr(&d["labels"]);
    let mut o = format!("{} label entries\n", rows.len());
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(o, "{:<8} {:<8} {:<7} Action", "Label", "EOS", "Source");
    for r in rows {
        let eos = if r["eos"].as_bool() == Some(true) {
            "eos"
        } else {
            "non-eos"
        };
        let head = format!("{:<8} {:<8} {:<7}", n(&r["label"]), eos, s(&r["source"]));
        let pipe = if s(&r["ttl_mode"]) == "pipe" {
            " pipe"
        } else {
            ""
        };
        match s(&r["action"]) {
            "forward" => {
                for (k, p) in arr(&r["paths"]).iter().enumerate() {
                    let mac = p["neighbor_mac"]
                        .as_str()
                        .map_or_else(|| " (unresolved)".to_string(), |m| format!(" ({m})"));
                    let t = format!("{} {}{mac}{pipe}", s(&p["op"]), path_text(p));
                    if k == 0 {
                        let _ = writeln!(o, "{head} {t}");
                    } else {
                        let _ = writeln!(o, "{:<25} {t}", "");
                    }
                }
            }
            a @ ("ip4-lookup" | "ip6-lookup" | "ip-lookup") => {
                let _ = match r["table"].as_u64() {
                    Some(t) => writeln!(o, "{head} pop, {a} table {t}{pipe}"),
                    None => writeln!(
                        o,
                        "{head} pop, {a} in the receiving interface's table{pipe}"
                    ),
                };
            }
            "pop" => {
                let _ = writeln!(o, "{head} pop, lookup next label{pipe}");
            }
            a => {
                let _ = writeln!(o, "{head} {a}");
            }
        }
    }
    o
}

fn neighbors(d: &Value) -> String {
    let mut o = format!(
        "{:<16} {:<16} {:<18} {}\n",
        "Interface", "Address", "MAC", "Source"
    );
    for r in arr(&d["neighbors"]) {
        let _ = writeln!(
            o,
            "{:<16} {:<16} {:<18} {}",
            s(&r["interface"]),
            s(&r["address"]),
            s(&r["mac"]),
            s(&r["source"])
        );
    }
    let a = &d["aging"];
    if a.is_object() {
        let _ = writeln!(
            o,
            "aging: {} probes sent, {} lost, {} neighbours forgotten",
            a["probes_sent"], a["probes_lost"], a["forgotten"]
        );
    }
    o
}

/// `show interfaces`, VPP's `show interface` layout: one line per counter, only the
/// counters that are not zero.
fn interfaces(d: &Value) -> String {
    let mut o = format!(
        "{:<24}{:>5}{:>8}{:>7}{:>7}     {:<16}{:>16}\n",
        "Name", "Idx", "State", "Link", "MTU", "Counter", "Count"
    );
    const NAMES: [(&str, &str); 9] = [
        ("rx_packets", "rx packets"),
        ("rx_bytes", "rx bytes"),
        ("tx_packets", "tx packets"),
        ("tx_bytes", "tx bytes"),
        ("drops", "drops"),
        ("rx_missed", "rx missed"),
        ("rx_errors", "rx errors"),
        ("tx_errors", "tx errors"),
        ("rx_no_mbuf", "rx no mbuf"),
    ];
    for i in arr(&d["interfaces"]) {
        let state = if i["up"].as_bool() == Some(false) {
            "down"
        } else {
            "up"
        };
        let link = match i["link"].as_bool() {
            Some(true) => "up",
            Some(false) => "down",
            None => "-",
        };
        let mtu = i["mtu"]
            .as_u64()
            .map_or_else(|| "-".to_string(), |m| m.to_string());
        let head = format!(
            "{:<24}{:>5}{:>8}{:>7}{:>7}",
            s(&i["name"]),
            n(&i["ifindex"]),
            state,
            link,
            mtu
        );
        let c = &i["counters"];
        let mut lines = NAMES
            .iter()
            .filter(|(k, _)| n(&c[*k]) > 0)
            .map(|(k, label)| format!("     {label:<16}{:>16}", n(&c[*k])));
        match lines.next() {
            Some(first) => {
                let _ = writeln!(o, "{head}{first}");
                for l in lines {
                    let _ = writeln!(o, "{:<51}{l}", "");
                }
            }
            None => {
                let _ = writeln!(o, "{head}");
            }
        }
    }
    o
}

fn addresses(d: &Value) -> String {
    let mut o = String::new();
    for i in arr(&d["interfaces"]) {
        let st = if i["up"].as_bool() == Some(false) {
            "dn"
        } else {
            "up"
        };
        let _ = writeln!(o, "{} ({st}):", s(&i["name"]));
        if n(&i["table"]) != 0 {
            let _ = writeln!(o, "  table {}", n(&i["table"]));
        }
        for a in arr(&i["addresses"]) {
            let _ = writeln!(o, "  L3 {}", s(a));
        }
    }
    o
}

/// `show run`, VPP's `show runtime` layout per worker thread.
fn run(d: &Value) -> String {
    let mut o = String::new();
    let t = f(&d["time_s"]);
    for (k, w) in arr(&d["workers"]).iter().enumerate() {
        let lcore = w["lcore"]
            .as_u64()
            .map_or_else(|| "?".to_string(), |l| l.to_string());
        let _ = writeln!(
            o,
            "Thread {} dp_wk_{} (lcore {lcore})",
            k + 1,
            n(&w["worker"])
        );
        let loops = n(&w["loops"]);
        let _ = writeln!(
            o,
            "Time {t:.1}, loops {loops}, busy loops {}, idle sleeps {}, loops/sec {:.2}",
            n(&w["busy_loops"]),
            n(&w["idle_sleeps"]),
            if t > 0.0 { loops as f64 / t } else { 0.0 }
        );
        let r = &w["rates"];
        let _ = writeln!(
            o,
            "  vector rates in {:.4e}, out {:.4e}, drop {:.4e}, punt {:.4e}",
            f(&r["in"]),
            f(&r["out"]),
            f(&r["drop"]),
            f(&r["punt"])
        );
        let _ = writeln!(
            o,
            "{:>30}{:>14}{:>15}{:>17}{:>16}{:>15}{:>19}",
            "Name", "State", "Calls", "Vectors", "Suspends", "Clocks", "Vectors/Call"
        );
        for st in arr(&w["stages"]) {
            let _ = writeln!(
                o,
                "{:<30}{:>14}{:>15}{:>17}{:>16}{:>15.2e}{:>19.2}",
                s(&st["name"]),
                s(&st["state"]),
                n(&st["calls"]),
                n(&st["vectors"]),
                n(&st["suspends"]),
                f(&st["clocks_per_packet"]),
                f(&st["vectors_per_call"])
            );
        }
        let _ = writeln!(o, "---------------");
    }
    o
}

fn errors(d: &Value) -> String {
    let mut o = format!("{:>12}  {:<6} {}\n", "Count", "Type", "Reason");
    for e in arr(&d["errors"]) {
        let _ = writeln!(
            o,
            "{:>12}  {:<6} {}",
            n(&e["count"]),
            s(&e["type"]),
            s(&e["reason"])
        );
    }
    o
}

fn trace(d: &Value) -> String {
    let pkts = arr(&d["packets"]);
    if pkts.is_empty() {
        return "No packets in trace buffer (dpctl trace add N starts a trace)\n".into();
    }
    let mut o = String::new();
    for (k, p) in pkts.iter().enumerate() {
        let _ = writeln!(
            o,
            "Packet {} (worker {}, rx {}, tsc {})",
            k + 1,
            n(&p["worker"]),
            p["rx_interface"]
                .as_str()
                .map_or_else(|| format!("port {}", n(&p["rx_port"])), str::to_string),
            n(&p["tsc"])
        );
        let _ = writeln!(o, "  in  {:>5} B  {}", n(&p["len_in"]), s(&p["summary_in"]));
        let stages: Vec<&str> = arr(&p["stages"]).iter().map(s).collect();
        let _ = writeln!(o, "  stages    {}", stages.join(" -> "));
        let _ = writeln!(o, "  decision  {}", s(&p["decision"]));
        if let Some(out) = p["summary_out"].as_str() {
            let _ = writeln!(o, "  out {:>5} B  {out}", n(&p["len_out"]));
        }
        o.push('\n');
    }
    o
}

fn fpm(d: &Value) -> String {
    if d["enabled"] != Value::Bool(true) {
        return "no FPM server ([fpm] is not configured)\n".into();
    }
    let mut o = format!(
        "listening on {}, peer {}, {} connect(s), {} frames, {} messages, {} FPM routes\n",
        s(&d["listen"]),
        d["peer"].as_str().unwrap_or("none"),
        n(&d["connects"]),
        n(&d["frames"]),
        n(&d["messages"]),
        n(&d["routes"])
    );
    if d["walking"] == Value::Bool(true) {
        o += "walk in progress (entries not refreshed yet will be swept)\n";
    }
    if let Some(h) = d["held_s"].as_f64() {
        let _ = writeln!(o, "zebra gone for {h:.1} s: its routes are held");
    }
    if let Some(w) = d["last_sweep"].as_object() {
        let _ = writeln!(
            o,
            "last sweep {:.1} s ago: {} swept ({})",
            w.get("ago_s").map_or(0.0, f),
            w.get("swept").map_or(0, n),
            w.get("why").map_or("", s)
        );
    }
    if let Some(r) = d["last_reset"].as_str() {
        let _ = writeln!(o, "last reset: {r} ({} resets)", n(&d["resets"]));
    }
    o
}

fn linux(d: &Value) -> String {
    if d["enabled"] != Value::Bool(true) {
        return "no Linux control plane ([linux] is not configured)\n".into();
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "netns {}, twins kept by {}",
        s(&d["netns"]),
        s(&d["keep_twins"])
    );
    let _ = writeln!(
        o,
        "{:<14} {:<14} {:>7} {:>12} {:>8} {:>12} {:>8}",
        "interface", "twin", "kifindex", "punt-pkts", "p-errs", "inject-pkts", "i-drops"
    );
    for t in arr(&d["twins"]) {
        let _ = writeln!(
            o,
            "{:<14} {:<14} {:>7} {:>12} {:>8} {:>12} {:>8}",
            s(&t["interface"]),
            s(&t["twin"]),
            n(&t["kernel_ifindex"]),
            n(&t["punt_pkts"]),
            n(&t["punt_errors"]),
            n(&t["inject_pkts"]),
            n(&t["inject_drops"])
        );
    }
    let mut punted: Vec<String> = d["punted"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k} {}", n(v))).collect())
        .unwrap_or_default();
    punted.push(format!("no_twin {}", n(&d["punt_no_twin"])));
    let _ = writeln!(o, "punted: {}", punted.join(", "));
    let _ = writeln!(
        o,
        "punt thread: scheduling {}, {} wakeups, {} rests; workers woken for injects {}",
        s(&d["punt_scheduling"]),
        n(&d["punt_wakeups"]),
        n(&d["punt_rests"]),
        n(&d["worker_wakes"])
    );
    let ss = &d["sessions"];
    let list = |v: &Value| {
        arr(v)
            .iter()
            .map(|x| x.to_string().trim_matches('"').to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        o,
        "sessions (favoured by the policer): tcp listening [{}], {} connections, bfd peers [{}]",
        list(&ss["tcp_listen"]),
        n(&ss["tcp_connections"]),
        list(&ss["bfd_peers"])
    );
    let _ = writeln!(
        o,
        "ipv6 next hops resolved by the kernel: {} asked, {} refused",
        n(&d["resolve6"]),
        n(&d["resolve6_errors"])
    );
    let p = &d["policer"];
    let _ = writeln!(
        o,
        "policer: control {}/s (dropped {}), other {}/s (dropped {}) per worker",
        n(&p["control_pps"]),
        n(&p["policed_control"]),
        n(&p["other_pps"]),
        n(&p["policed_other"])
    );
    let l = &d["netlink"];
    let _ = writeln!(
        o,
        "netlink: {} messages in {} batches, {} applied, {} malformed, {} refused, rcvbuf {} bytes",
        n(&l["messages"]),
        n(&l["batches"]),
        n(&l["applied"]),
        n(&l["malformed"]),
        n(&l["refused"]),
        n(&l["rcvbuf"])
    );
    if let Some(r) = l["last_resync"].as_object() {
        let _ = writeln!(
            o,
            "resyncs: {} (last: {}, {:.1} ms, {} swept)",
            n(&l["resyncs"]),
            r.get("reason").map_or("", s),
            r.get("ms").map_or(0.0, f),
            r.get("swept").map_or(0, n)
        );
    }
    if let Some(e) = l["last_error"].as_str() {
        let _ = writeln!(o, "last error: {e}");
    }
    o
}

fn sflow(d: &Value) -> String {
    let mut o = String::new();
    let cs: Vec<&str> = arr(&d["collectors"]).iter().map(s).collect();
    let _ = writeln!(
        o,
        "agent {}  collectors {}  polling {} s  header-bytes {}  max-samples {}",
        s(&d["agent_address"]),
        if cs.is_empty() {
            "-".to_string()
        } else {
            cs.join(", ")
        },
        n(&d["polling_interval_s"]),
        n(&d["header_bytes"]),
        match n(&d["max_samples_per_second"]) {
            0 => "unlimited".to_string(),
            m => format!("{m}/s"),
        }
    );
    let _ = writeln!(
        o,
        "{:<16} {:>7} {:>10} {:>9}",
        "interface", "ifindex", "rate", "direction"
    );
    for i in arr(&d["interfaces"]) {
        let _ = writeln!(
            o,
            "{:<16} {:>7} {:>10} {:>9}",
            s(&i["name"]),
            n(&i["ifindex"]),
            format!("1:{}", n(&i["rate"])),
            s(&i["direction"])
        );
    }
    let _ = writeln!(
        o,
        "{:<7} {:>12} {:>10} {:>12} {:>8}",
        "worker", "sampled", "dropped", "exported", "queued"
    );
    for w in arr(&d["workers"]) {
        let _ = writeln!(
            o,
            "{:<7} {:>12} {:>10} {:>12} {:>8}",
            n(&w["worker"]),
            n(&w["sampled"]),
            n(&w["dropped"]),
            n(&w["exported"]),
            n(&w["queued"])
        );
    }
    let _ = writeln!(
        o,
        "datagrams {}  flow-samples {}  counter-samples {}  send-errors {}",
        n(&d["datagrams"]),
        n(&d["flow_samples"]),
        n(&d["counter_samples"]),
        n(&d["send_errors"])
    );
    o
}

fn version(d: &Value) -> String {
    format!(
        "{} {}, pid {}, mode {}, {} worker(s), up {:.1} s\nconfig {}\nsocket {}\n",
        s(&d["name"]),
        s(&d["version"]),
        n(&d["pid"]),
        s(&d["mode"]),
        n(&d["workers"]),
        f(&d["uptime_s"]),
        d["config"].as_str().unwrap_or("-"),
        s(&d["socket"])
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn run_and_interfaces_are_aligned() {
        let d = json!({"time_s": 2.0, "workers": [{"worker": 0, "lcore": 1, "loops": 100,
            "busy_loops": 10, "idle_sleeps": 90, "rates": {"in": 5.0, "out": 5.0, "drop": 0.0, "punt": 0.0},
            "stages": [{"name": "port-rx", "state": "polling", "calls": 10, "vectors": 20,
                        "suspends": 0, "clocks_per_packet": 123.0, "vectors_per_call": 2.0}]}]});
        let t = run(&d);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Thread 1 dp_wk_0 (lcore 1)");
        let (h, r) = (lines[3], lines[4]);
        assert!(r.starts_with("port-rx"));
        // Right-aligned columns end where their headers end.
        for col in ["Calls", "Vectors", "Vectors/Call"] {
            let end = h.find(col).unwrap() + col.len();
            assert_ne!(r.as_bytes()[end - 1], b' ', "{col}:\n{h}\n{r}");
        }
        let d = json!({"interfaces": [{"name": "port0", "ifindex": 1, "up": true, "link": true,
            "mtu": 1500, "counters": {"rx_packets": 3, "tx_bytes": 300}}]});
        let t = interfaces(&d);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(
            lines[1].starts_with("port0") && lines[1].ends_with("rx packets                     3")
        );
        assert_eq!(lines[2].find("tx bytes"), lines[1].find("rx packets"));
    }
}
