//! dpctl against a real dataplaned (router and cross-connect) on `net_null` ports with
//! `memory = "no-huge"`: no namespaces, no traffic. Every refused command must exit 1
//! with a message that names the problem, and leave the router as it was (compared
//! through `dpctl --json ... show`).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::spawn_dataplaned;

const DATAPLANED: &str = env!("CARGO_BIN_EXE_dataplaned");

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A dataplaned with its own directory, config and socket; killed (by PID) and
/// cleaned up on drop, also when the test fails.
struct Daemon {
    child: Option<Child>,
    dir: PathBuf,
    sock: PathBuf,
    cfg: PathBuf,
    log: std::sync::mpsc::Receiver<String>,
}

fn base_config(tag: &str, mode: &str) -> String {
    format!(
        "[eal]\nmemory = \"no-huge\"\nmemory_mb = 256\n[mempool]\nmbufs = 2047\n\
         [workers]\ncpus = [1]\nidle_max_sleep_us = 1000\n\
         [[port]]\nname = \"port0\"\ndevice = \"net_null_{tag}0,no-rx=1\"\n\
         [[port]]\nname = \"port1\"\ndevice = \"net_null_{tag}1,no-rx=1\"\n\
         [forwarding]\nmode = \"{mode}\"\n"
    )
}

const ROUTER: &str = r#"
[[interface]]
name = "port0"
addresses = ["192.168.11.9/31"]
[[interface]]
name = "port1"
addresses = ["192.168.11.10/31"]
[[neighbor]]
interface = "port0"
address = "192.168.11.8"
mac = "02:00:00:00:00:08"
[[route]]
prefix = "10.66.0.0/16"
kind = "blackhole"
[[route]]
prefix = "10.0.1.1/32"
via = [{ gateway = "192.168.11.8", interface = "port0", out_labels = [100] }]
[[label]]
label = 103
lookup_table = 0
"#;

impl Daemon {
    fn dir(name: &str) -> (String, PathBuf) {
        let tag = format!(
            "{}{}",
            std::process::id() % 100000,
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("dp-dpctl-{name}-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        (tag, dir)
    }

    fn start(name: &str, mode: &str, extra: &str) -> Daemon {
        let (tag, dir) = Self::dir(name);
        let cfg = dir.join("dataplaned.toml");
        std::fs::write(&cfg, format!("{}{extra}", base_config(&tag, mode))).unwrap();
        let sock = dir.join("ctl.sock");
        let mut d = Daemon {
            child: None,
            dir,
            sock,
            cfg,
            log: std::sync::mpsc::channel().1,
        };
        d.spawn();
        d
    }

    fn spawn(&mut self) {
        let (child, log) = spawn_dataplaned(&self.cfg, &self.sock, Stdio::null());
        self.child = Some(child);
        self.log = log;
    }

    /// Waits for a stderr line containing `want`.
    fn wait_log(&self, want: &str) -> String {
        let t0 = Instant::now();
        loop {
            let left = Duration::from_secs(10).saturating_sub(t0.elapsed());
            match self.log.recv_timeout(left) {
                Ok(l) if l.contains(want) => return l,
                Ok(_) => {}
                Err(_) => panic!("no dataplaned line with {want:?} within 10 s"),
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Runs dpctl with `args` (split on spaces): exit code, stdout, stderr.
    fn dpctl(&self, args: &str) -> (i32, String, String) {
        dpctl_at(&self.sock, args)
    }

    /// `dpctl --json ARGS`, which must succeed.
    fn json(&self, args: &str) -> Value {
        let (code, out, err) = self.dpctl(&format!("--json {args}"));
        assert_eq!(code, 0, "dpctl {args}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("dpctl --json {args}: {e}: {out}"))
    }

    /// `dpctl ARGS`, which must succeed.
    fn ok(&self, args: &str) -> String {
        let (code, out, err) = self.dpctl(args);
        assert_eq!(code, 0, "dpctl {args}: {err}");
        assert!(err.is_empty(), "dpctl {args}: {err}");
        out
    }

    /// Everything configurable, as the daemon reports it.
    fn state(&self) -> String {
        [
            "route show",
            "label show",
            "neighbor show",
            "show interfaces address",
        ]
        .iter()
        .map(|c| self.json(c).to_string())
        .collect::<Vec<_>>()
        .join("\n")
    }

    fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let t0 = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("dataplaned did not stop within 10 s of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn dpctl_at(sock: &Path, args: &str) -> (i32, String, String) {
    let o = Command::new(common::dpctl_bin())
        .arg("--socket")
        .arg(sock)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// dpctl's exit status for a bad request `args`: 2 when its own parser refuses
/// it (nothing is sent), 1 when dataplaned does.
fn refused_with(args: &str) -> i32 {
    let words: Vec<String> = args.split_whitespace().map(String::from).collect();
    let syntax = dpctl::cli::vrf_words(&words, |_| Ok::<_, ()>(0))
        .map_or(true, |w| dpctl::cli::parse(&w).is_err());
    if syntax { 2 } else { 1 }
}

/// Sends raw bytes on a fresh connection and returns the answer line (if any).
/// The daemon may answer and close before the last bytes are written (a request
/// over the limit): the write then fails with a broken pipe and the answer waits
/// in the receive queue.
fn raw(sock: &Path, bytes: &[u8]) -> Option<Value> {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    if let Err(e) = s.write_all(bytes) {
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        );
    }
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).ok()?;
    (!line.is_empty()).then(|| serde_json::from_str(&line).unwrap())
}

fn routes(d: &Daemon) -> Vec<String> {
    d.json("route show")["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prefix"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let d = Daemon::start("bad", "router", ROUTER);
    d.ok("label add 100 eos via 192.168.11.8 port0 out-labels 100");
    let before = d.state();
    let cases: &[(&str, &str)] = &[
        // Malformed prefixes.
        (
            "route add 10.0.9.1 via 192.168.11.8 port0",
            "a prefix needs a length",
        ),
        (
            "route add 10.0.9.300/32 via 192.168.11.8 port0",
            "bad prefix \"10.0.9.300/32\"",
        ),
        (
            "route add 10.0.9.1/24 via 192.168.11.8 port0",
            "has host bits set",
        ),
        ("route add 10.0.9.0/33 via 192.168.11.8 port0", "bad prefix"),
        ("route del 10.0.9.0", "a prefix needs a length"),
        // Reserved in-labels.
        (
            "label add 3 eos via 192.168.11.8 port0 out-labels 100",
            "in-label 3 is special-purpose",
        ),
        (
            "label add 1 eos via 192.168.11.8 port0 out-labels 100",
            "in-label 1 is special-purpose",
        ),
        ("label add 1048576 eos drop", "out of range"),
        // Bad out-labels.
        (
            "label add 200 eos via 192.168.11.8 port0 out-labels 1",
            "out-label 1 is special-purpose",
        ),
        (
            "label add 200 eos via 192.168.11.8 port0 out-labels 1048576",
            "label 1048576 is out of range",
        ),
        (
            "route add 10.0.9.0/24 via 192.168.11.8 port0 out-labels 1",
            "out-label 1 is special-purpose",
        ),
        (
            "route add 10.0.9.0/24 via 192.168.11.8 port0 out-labels 1048576",
            "label 1048576 is out of range",
        ),
        (
            "label add 200 eos via 192.168.11.8 port0 out-labels 3 100",
            "implicit null (3) must be the only",
        ),
        // Unknown ports.
        (
            "route add 10.0.9.0/24 via 192.168.11.8 port9",
            "unknown interface \"port9\" (interfaces: port0, port1)",
        ),
        (
            "label add 200 eos via 192.168.11.8 port9 out-labels 100",
            "unknown interface \"port9\" (interfaces: port0, port1)",
        ),
        (
            "neighbor add port9 192.168.11.8 02:00:00:00:00:01",
            "unknown interface \"port9\"",
        ),
        ("interface mtu port9 1500", "unknown interface \"port9\""),
        (
            "interface address add port9 10.9.9.1/24",
            "unknown interface \"port9\"",
        ),
        ("interface sub add port9 100", "unknown interface \"port9\""),
        // Missing via.
        ("route add 10.0.9.0/24", "missing via"),
        (
            "route add 10.0.9.0/24 via",
            "missing a next hop or an interface after via",
        ),
        ("label add 200 eos", "missing via"),
        (
            "label add 200 eos via 192.168.11.8 out-labels 100",
            "a label path needs a next hop and its interface",
        ),
        // Duplicates: add refuses, replace replaces (README: dpctl reference).
        (
            "route add 10.66.0.0/16 unreachable",
            "route 10.66.0.0/16 exists in table 0 (blackhole); use `route replace`",
        ),
        (
            "route add 10.0.1.1/32 via 192.168.11.8 port0 out-labels 200",
            "exists in table 0 (via 192.168.11.8 port0 out-labels 100)",
        ),
        (
            "label add 100 eos via 192.168.11.8 port0 out-labels 200",
            "label 100 eos exists; use `label replace`",
        ),
        ("label add 103 eos via ip4-lookup", "label 103 eos exists"),
        (
            "interface address add port0 192.168.11.9/31",
            "192.168.11.9 is already an address of port0",
        ),
        // Deleting what does not exist.
        ("route del 10.99.0.0/16", "no route 10.99.0.0/16 in table 0"),
        ("route del 10.66.0.0/16 table 7", "unknown table 7"),
        ("label del 200 eos", "no label 200 eos"),
        (
            "label del 100 eos via 192.168.11.8 port0 out-labels 103",
            "label 100 eos has no path via 192.168.11.8 port0 out-labels [103]",
        ),
        (
            "mpls local-label del 100 eos via 192.168.11.9 port0 out-labels 100",
            "label 100 eos has no path via 192.168.11.9 port0",
        ),
        (
            "label del 100 non-eos",
            "no label 100 non-eos (label 100 has only an eos entry; dpctl label show lists them)",
        ),
        (
            "neighbor del port0 192.168.11.99",
            "no neighbor 192.168.11.99 on port0 (neighbors on port0: 192.168.11.8)",
        ),
        (
            "neighbor del port0 192.168.11.8 02:00:00:00:00:09",
            "has MAC 02:00:00:00:00:08",
        ),
        (
            "interface address del port0 10.9.9.9/24",
            "10.9.9.9/24 is not an address of port0 (its addresses: 192.168.11.9/31)",
        ),
        (
            "interface sub del port0.999",
            "unknown interface \"port0.999\"",
        ),
        // The routes of interface addresses belong to the addresses.
        (
            "route del 192.168.11.9/32",
            "is the route of address 192.168.11.9/31 on port0",
        ),
        (
            "route replace 192.168.11.8/31 blackhole",
            "is the route of address",
        ),
        // Other checks the daemon makes.
        ("route add 10.0.9.0/24 table 7 blackhole", "unknown table 7"),
        (
            "label add 200 eos via ip4-lookup table 7",
            "unknown table 7",
        ),
        (
            "interface sub del port0",
            "only sub-interfaces can be deleted",
        ),
        ("interface sub add port0 0", "VLAN 0 is out of range"),
        ("interface mtu port0 60000", "out of range 68..9600"),
        (
            "route add 10.0.9.0/24 via 224.0.0.1",
            "cannot be a next hop",
        ),
        (
            "route add 10.0.9.0/24 via 192.168.11.8 weight 70000",
            "weight 70000 is out of range",
        ),
        ("trace add 0", "1..1024"),
        (
            "route add 2001:db8::/32 via ff02::1 port0",
            "cannot be a next hop",
        ),
        ("route add 2001:db8::1/32 blackhole", "host bits set"),
        ("frobnicate", "unknown command \"frobnicate\""),
        ("show run please", "unexpected \"please\""),
    ];
    for (args, want) in cases {
        let (code, out, err) = d.dpctl(args);
        assert_eq!(
            code,
            refused_with(args),
            "dpctl {args}: exit code (stdout {out:?}, stderr {err:?})"
        );
        assert!(
            out.is_empty(),
            "dpctl {args}: nothing on stdout, got {out:?}"
        );
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "dpctl {args}: one error line, got {err:?}");
        assert!(
            lines[0].starts_with("dpctl: error: ") && lines[0].contains(want),
            "dpctl {args}: want {want:?} in {:?}",
            lines[0]
        );
        assert_eq!(d.state(), before, "dpctl {args} changed the router");
    }
    // The exit status tells a bad command (2) from a refused request (1).
    assert_eq!(d.dpctl("frobnicate").0, 2);
    assert_eq!(d.dpctl("route add 10.0.9.0 via 192.168.11.8 port0").0, 2);
    assert_eq!(d.dpctl("route add 10.0.9.0/24 via 192.168.11.8 port9").0, 1);
    // The daemon checks for itself: the same bad requests straight on the socket,
    // bypassing dpctl's parser, are refused with the same words.
    for (args, want) in [
        (r#"["label","add","3","eos","drop"]"#, "in-label 3"),
        (
            r#"["route","add","10.0.9.0/24","via","1.2.3.4","port9"]"#,
            "unknown interface \"port9\"",
        ),
        (r#"["route","add","10.0.9.1/24","blackhole"]"#, "host bits"),
        (r#"[]"#, "no command"),
    ] {
        let r = raw(
            &d.sock,
            format!("{{\"id\":9,\"args\":{args}}}\n").as_bytes(),
        )
        .unwrap();
        assert_eq!(r["ok"], false, "{args}: {r}");
        assert_eq!(r["id"], 9);
        assert!(r["error"].as_str().unwrap().contains(want), "{args}: {r}");
    }
    let r = raw(&d.sock, b"this is not json\n").unwrap();
    assert!(
        r["error"].as_str().unwrap().contains("not a request"),
        "{r}"
    );
    assert_eq!(r["kind"], "syntax", "{r}");
    // Every refusal says what kind it is, for programs to branch on.
    for (args, kind) in [
        (r#"["route","del","10.99.0.0/16"]"#, "not_found"),
        (r#"["route","del","10.66.0.0/16","table","7"]"#, "not_found"),
        (r#"["interface","mtu","port9","1500"]"#, "not_found"),
        (r#"["route","add","10.66.0.0/16","unreachable"]"#, "exists"),
        (r#"["label","add","100","eos","drop"]"#, "exists"),
        (r#"["frobnicate"]"#, "syntax"),
        (r#"["show","run","please"]"#, "syntax"),
        (
            r#"["route","add","2001:db8::/32","via","ff02::1","port0"]"#,
            "syntax",
        ),
        (
            r#"["route","add","2001:db8::/32","via","fe80::1","port9"]"#,
            "not_found",
        ),
        (r#"["interface","sub","del","port0"]"#, "refused"),
        (
            r#"["interface","address","add","port0","192.168.11.9/31"]"#,
            "exists",
        ),
        (r#"["route","del","192.168.11.9/32"]"#, "conflict"),
    ] {
        let r = raw(
            &d.sock,
            format!("{{\"id\":5,\"args\":{args}}}\n").as_bytes(),
        )
        .unwrap();
        assert_eq!(r["ok"], false, "{args}: {r}");
        assert_eq!(r["kind"], kind, "{args}: {r}");
    }
    // A success has no kind.
    let r = raw(&d.sock, b"{\"id\":6,\"args\":[\"show\",\"version\"]}\n").unwrap();
    assert_eq!(r["ok"], true, "{r}");
    assert!(r.get("kind").is_none(), "{r}");
    assert_eq!(d.state(), before);
}

#[test]
fn every_change_shows_up() {
    let d = Daemon::start("good", "router", ROUTER);
    // The seed article's commands.
    d.ok("route add 10.0.2.0/24 via 192.168.11.8 port0 out-labels 100");
    d.ok("label add 100 eos via 192.168.11.8 port0 out-labels 100");
    d.ok("label add 101 eos via 192.168.11.8 port0 out-labels 0");
    d.ok("label add 102 eos via 192.168.11.8 port0 out-labels 3");
    d.ok("label add 104 eos via ip4-lookup table 0");
    d.ok("label add 105 non-eos pop");
    // ECMP with weights, replace, specials.
    d.ok("route add 10.0.3.0/24 via 192.168.11.8 port0 weight 3 via 192.168.11.11 port1 weight 1");
    d.ok("route replace 10.0.1.1/32 via 192.168.11.11 port1 out-labels 200 300");
    d.ok("route add 10.0.4.0/24 unreachable");
    // A loopback: the router id and its local /32.
    d.ok("router-id 192.0.2.1");
    d.ok("route add 192.0.2.1/32 local");
    assert_eq!(d.json("show version")["router_id"], "192.0.2.1");
    let (code, _, err) = d.dpctl("router-id 192.0.2");
    assert!(code != 0 && err.contains("bad IPv4 address"), "{err}");
    d.ok("route add 10.0.5.0/24 prohibit");
    let r = d.json("route show 10.0.3.0/24");
    let paths = r["routes"][0]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{r}");
    assert_eq!(paths[0]["weight"], 3);
    assert_eq!(paths[1]["interface"], "port1");
    let r = d.json("route show 10.0.1.1");
    assert_eq!(
        r["routes"][0]["paths"][0]["out_labels"],
        serde_json::json!([200, 300]),
        "{r}"
    );
    assert_eq!(
        d.json("route show 10.0.4.9")["routes"][0]["kind"],
        "unreachable"
    );
    assert_eq!(
        d.json("route show 10.0.4.9")["routes"][0]["prefix"],
        "10.0.4.0/24"
    );
    let l = d.json("label show");
    let op = |label: u64| {
        l["labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["label"] == label)
            .map(|x| {
                if x["action"] == "forward" {
                    x["paths"][0]["op"].as_str().unwrap().to_string()
                } else {
                    x["action"].as_str().unwrap().to_string()
                }
            })
            .unwrap_or_default()
    };
    assert_eq!(op(100), "swap");
    assert_eq!(op(101), "explicit-null");
    assert_eq!(op(102), "php");
    assert_eq!(op(103), "ip4-lookup");
    assert_eq!(op(105), "pop");
    // The neighbour from the file resolves the label path.
    assert_eq!(
        l["labels"][0]["paths"][0]["neighbor_mac"], "02:00:00:00:00:08",
        "{l}"
    );
    let text = d.ok("label show");
    assert!(
        text.contains(
            "100      eos      dpctl   swap via 192.168.11.8 port0 out-labels 100 (02:00:00:00:00:08)"
        ),
        "{text}"
    );
    // Interfaces: address, MTU, admin state, sub-interface, neighbours.
    d.ok("interface sub add port0 100");
    d.ok("interface address add port0.100 10.1.100.1/24");
    d.ok("interface mtu port0.100 1400");
    d.ok("interface down port1");
    d.ok("neighbor add port0.100 10.1.100.2 02:00:00:00:01:02");
    let i = d.json("show interfaces port0.100");
    let i = &i["interfaces"][0];
    assert_eq!(i["vlan"], 100);
    assert_eq!(i["mtu"], 1400);
    assert_eq!(i["addresses"], serde_json::json!(["10.1.100.1/24"]));
    assert_eq!(
        d.json("show interfaces port1")["interfaces"][0]["up"],
        false
    );
    assert!(routes(&d).contains(&"10.1.100.0/24".to_string()));
    let n = d.json("neighbor show");
    assert_eq!(n["neighbors"].as_array().unwrap().len(), 2, "{n}");
    // A sub-interface in use cannot go; once unused it can.
    d.ok("route add 10.0.6.0/24 via 10.1.100.2 port0.100");
    let (code, _, err) = d.dpctl("interface sub del port0.100");
    assert_eq!(code, 1);
    assert!(err.contains("in use by route 10.0.6.0/24"), "{err}");
    d.ok("route del 10.0.6.0/24");
    d.ok("neighbor del port0.100 10.1.100.2");
    d.ok("interface sub del port0.100");
    assert!(!routes(&d).contains(&"10.1.100.0/24".to_string()));
    // Deletes.
    d.ok("label del 105 non-eos");
    // The article's form, del with a path: that path goes, the others stay, and the
    // entry goes with its last path.
    d.ok("label add 120 eos via 192.168.11.8 port0 out-labels 120 via 192.168.11.9 port1 out-labels 121");
    let paths = |d: &Daemon| {
        d.json("label show 120")["labels"]
            .as_array()
            .and_then(|a| a.first())
            .map_or(0, |x| x["paths"].as_array().map_or(0, Vec::len))
    };
    assert_eq!(paths(&d), 2);
    d.ok("mpls local-label del 120 eos via 192.168.11.8 port0 out-labels 120");
    assert_eq!(paths(&d), 1);
    d.ok("label del 120 eos via 192.168.11.9 port1 out-labels 121");
    assert_eq!(paths(&d), 0);
    assert!(d.ok("label show").lines().all(|l| !l.contains(" 120 ")));
    d.ok("route del 10.0.5.0/24");
    d.ok("interface up port1");
    d.ok("interface address del port1 192.168.11.10/31");
    d.ok("interface address add port1 192.168.11.12/31");
    assert!(!routes(&d).contains(&"10.0.5.0/24".to_string()));
    assert!(routes(&d).contains(&"192.168.11.12/32".to_string()));
    // Tables: created, an interface moved into one (its addresses first, as
    // VPP's `set interface ip table`), deleted once nothing uses it.
    d.ok("table add 7");
    let (code, _, err) = d.dpctl("interface table port1 7");
    assert!(
        code != 0 && err.contains("remove its addresses first"),
        "{err}"
    );
    d.ok("interface address del port1 192.168.11.12/31");
    d.ok("interface table port1 7");
    d.ok("interface address add port1 10.7.0.1/24");
    assert_eq!(d.json("show interfaces port1")["interfaces"][0]["table"], 7);
    let r = d.json("route show 10.7.0.0/24 table 7");
    assert_eq!(r["routes"][0]["prefix"], "10.7.0.0/24", "{r}");
    let r = d.json("route show 10.7.0.1");
    assert!(
        r["routes"][0]["prefix"] != "10.7.0.0/24",
        "not in table 0: {r}"
    );
    let (code, _, err) = d.dpctl("table del 7");
    assert!(
        code != 0 && err.contains("interface port1 is in it"),
        "{err}"
    );
    let (code, _, err) = d.dpctl("interface table port1 9");
    assert!(code != 0 && err.contains("9"), "{err}");
    d.ok("interface address del port1 10.7.0.1/24");
    d.ok("interface table port1 0");
    d.ok("route add 10.8.0.0/16 table 7 blackhole");
    let (code, _, err) = d.dpctl("table del 7");
    assert!(code != 0 && err.contains("route 10.8.0.0/16"), "{err}");
    d.ok("route del 10.8.0.0/16 table 7");
    d.ok("table del 7");
    let (code, _, err) = d.dpctl("table del 0");
    assert!(code != 0, "{err}");
    // Every show has a text and a JSON form; version says who answers.
    for show in [
        "show interfaces",
        "show interfaces address",
        "show run",
        "show errors",
        "show trace",
        "route show",
        "label show",
        "neighbor show",
    ] {
        d.ok(show);
        d.json(show);
    }
    let v = d.json("show version");
    assert_eq!(v["mode"], "router");
    assert_eq!(v["pid"], d.pid());
}

#[test]
fn socket_is_private_and_exclusive_and_stale_ones_are_replaced() {
    let mut d = Daemon::start("sock", "router", ROUTER);
    let mode = std::fs::metadata(&d.sock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "root-only socket");
    // A second daemon on the same socket is refused and leaves the first alone.
    let o = Command::new(DATAPLANED)
        .arg("-c")
        .arg(&d.cfg)
        .arg("--socket")
        .arg(&d.sock)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("another dataplaned answers there"), "{err}");
    assert_eq!(d.json("show version")["pid"], d.pid());
    // Stopped: the socket goes away and dpctl says the daemon is not running.
    assert!(d.stop().success());
    assert!(!d.sock.exists(), "socket removed at exit");
    let (code, _, err) = d.dpctl("show run");
    assert_eq!(code, 3, "no daemon: exit 3");
    assert!(
        err.contains("dataplaned is not running: no control socket at"),
        "{err}"
    );
    // A stale socket (a daemon killed hard leaves one) is reported as such by dpctl,
    // and replaced by the next daemon.
    drop(std::os::unix::net::UnixListener::bind(&d.sock).unwrap());
    let (code, _, err) = d.dpctl("show run");
    assert_eq!(code, 3, "no daemon: exit 3");
    assert!(
        err.contains("dataplaned is not running: nothing answers on"),
        "{err}"
    );
    d.spawn();
    assert_eq!(d.json("show version")["pid"], d.pid());
    // A path that is not a socket is never removed.
    let (_, dir) = Daemon::dir("notsock");
    let file = dir.join("file");
    std::fs::write(&file, "keep me").unwrap();
    let o = Command::new(DATAPLANED)
        .arg("-c")
        .arg(&d.cfg)
        .arg("--socket")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a socket"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_clients_and_broken_connections() {
    let d = Daemon::start("conc", "router", ROUTER);
    // An idle connection and one stuck mid-request do not hold anybody up.
    let mut idle = UnixStream::connect(&d.sock).unwrap();
    let mut half = UnixStream::connect(&d.sock).unwrap();
    half.write_all(br#"{"id":1,"args":["route","add","10.55.0.0/16","blackhole""#)
        .unwrap();
    // Two clients at once, each adding and checking its own routes.
    let sock = d.sock.clone();
    let workers: Vec<_> = (0..2)
        .map(|c| {
            let sock = sock.clone();
            std::thread::spawn(move || {
                for k in 0..20 {
                    let (code, _, err) = dpctl_at(
                        &sock,
                        &format!("route add 10.{}.{k}.0/24 blackhole", 100 + c),
                    );
                    assert_eq!(code, 0, "{err}");
                    let (code, out, err) = dpctl_at(&sock, "--json route show");
                    assert_eq!(code, 0, "{err}");
                    assert!(out.contains(&format!("10.{}.{k}.0/24", 100 + c)));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let rs = routes(&d);
    for c in 0..2 {
        for k in 0..20 {
            assert!(rs.contains(&format!("10.{}.{k}.0/24", 100 + c)));
        }
    }
    // The half-sent request dies with its connection: nothing applied.
    drop(half);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!routes(&d).contains(&"10.55.0.0/16".to_string()));
    // Several requests on one connection are answered in order.
    let mut c = ctl::proto::Client::connect(&d.sock, Duration::from_secs(5)).unwrap();
    for k in 0..5 {
        let args: Vec<String> = format!("route add 10.56.{k}.0/24 blackhole")
            .split(' ')
            .map(str::to_string)
            .collect();
        assert_eq!(c.call(&args).unwrap(), Value::Null);
    }
    // A complete request is applied even if the client leaves before the answer.
    {
        let mut s = UnixStream::connect(&d.sock).unwrap();
        s.write_all(b"{\"id\":2,\"args\":[\"route\",\"add\",\"10.57.0.0/16\",\"blackhole\"]}\n")
            .unwrap();
    }
    let t0 = Instant::now();
    while !routes(&d).contains(&"10.57.0.0/16".to_string()) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "complete request not applied"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A request line over the limit is refused and the connection closed.
    let mut big = br#"{"id":3,"args":["show","run""#.to_vec();
    big.resize(100 << 10, b' ');
    big.extend_from_slice(b"]}\n");
    let r = raw(&d.sock, &big).unwrap();
    assert!(r["error"].as_str().unwrap().contains("longer than"), "{r}");
    // The idle connection still works.
    idle.write_all(b"{\"id\":4,\"args\":[\"show\",\"version\"]}\n")
        .unwrap();
    let mut line = String::new();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut r = BufReader::new(idle.try_clone().unwrap());
    r.read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["id"], 4);
    assert_eq!(v["data"]["pid"], d.pid());
    let mut rest = Vec::new();
    idle.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let _ = idle.read_to_end(&mut rest);
    assert!(rest.is_empty());
}

#[test]
fn reload_applies_the_file_as_a_diff() {
    let mut d = Daemon::start("reload", "router", ROUTER);
    let text = std::fs::read_to_string(&d.cfg).unwrap();
    d.ok("route add 10.77.0.0/16 blackhole"); // made with dpctl: kept by reloads
    // Route 10.66/16 leaves the file, 10.67/16 comes, 10.0.1.1/32 changes its label,
    // a sub-interface and a label entry appear.
    let new = text
        .replace("10.66.0.0/16", "10.67.0.0/16")
        .replace("out_labels = [100] }]", "out_labels = [200] }]")
        + "[[interface]]\nname = \"port1.7\"\nparent = \"port1\"\nvlan = 7\naddresses = [\"10.7.0.1/24\"]\n\
         [[label]]\nlabel = 104\nvia = [{ gateway = \"192.168.11.8\", interface = \"port0\", out_labels = [3] }]\n";
    std::fs::write(&d.cfg, &new).unwrap();
    let out = d.ok("reload");
    assert_eq!(
        out.trim(),
        "reload: interfaces +1 -0 ~0, routes +1 -1 ~1, labels +1 -0 ~0"
    );
    let rs = routes(&d);
    assert!(rs.contains(&"10.67.0.0/16".to_string()));
    assert!(!rs.contains(&"10.66.0.0/16".to_string()));
    assert!(
        rs.contains(&"10.77.0.0/16".to_string()),
        "dpctl's route is kept"
    );
    assert!(rs.contains(&"10.7.0.0/24".to_string()));
    assert_eq!(
        d.json("route show 10.0.1.1/32")["routes"][0]["paths"][0]["out_labels"],
        serde_json::json!([200])
    );
    assert_eq!(
        d.json("label show 104")["labels"][0]["paths"][0]["op"],
        "php"
    );
    // Reloading the same file changes nothing; SIGHUP does the same as dpctl reload.
    assert_eq!(d.ok("reload").trim(), "reload: no changes");
    // An address both dpctl and the file give stays while either does.
    d.ok("interface address add port1 10.55.0.1/24");
    let both = new.replace(
        "\"192.168.11.10/31\"]",
        "\"192.168.11.10/31\", \"10.55.0.1/24\"]",
    );
    assert_ne!(both, new);
    std::fs::write(&d.cfg, &both).unwrap();
    d.ok("reload");
    std::fs::write(&d.cfg, &new).unwrap();
    d.ok("reload");
    let connected = "10.55.0.0/24".to_string();
    assert!(routes(&d).contains(&connected), "dpctl's address is kept");
    d.ok("interface address del port1 10.55.0.1/24");
    assert!(!routes(&d).contains(&connected));
    std::fs::write(&d.cfg, &text).unwrap();
    let _ = Command::new("kill")
        .args(["-HUP", &d.pid().to_string()])
        .status();
    let line = d.wait_log("SIGHUP");
    assert!(line.contains("routes +1 -1 ~1"), "{line}");
    assert!(routes(&d).contains(&"10.66.0.0/16".to_string()));
    assert!(!routes(&d).contains(&"10.7.0.0/24".to_string()));
    // A bad file, or one that changes what needs a restart, changes nothing.
    let before = d.state();
    for (bad, want) in [
        (
            text.replace("10.66.0.0/16", "10.66.0.1/16"),
            "has host bits set",
        ),
        (
            text.replace("port0\"\naddresses", "port9\"\naddresses"),
            "no port of that name",
        ),
        (
            text.replace("mbufs = 2047", "mbufs = 4095"),
            "[mempool] changed",
        ),
        (
            text.replace("cpus = [1]", "cpus = [1, 1]"),
            "[workers] changed",
        ),
        (
            text.clone() + "[[label]]\nlabel = 3\nlookup_table = 0\n",
            "in-label 3",
        ),
        ("[[port\n".to_string(), "dataplaned.toml"),
    ] {
        std::fs::write(&d.cfg, &bad).unwrap();
        let (code, _, err) = d.dpctl("reload");
        assert_eq!(code, 1, "{want}");
        assert!(
            err.contains(want) && err.contains("nothing was applied"),
            "{want}: {err}"
        );
        let r = raw(&d.sock, b"{\"id\":1,\"args\":[\"reload\"]}\n").unwrap();
        assert_eq!(r["kind"], "config", "{want}: {r}");
        assert_eq!(d.state(), before, "{want}");
    }
    std::fs::write(&d.cfg, &text).unwrap();
    assert!(d.stop().success());
}

#[test]
fn xconnect_serves_the_api_too() {
    let d = Daemon::start("xc", "xconnect", "[metrics]\nlisten = \"127.0.0.1:0\"\n");
    let i = d.json("show interfaces");
    let names: Vec<&str> = i["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["port0", "port1"]);
    assert_eq!(i["interfaces"][0]["peer"], "port1");
    let r = d.json("show run");
    assert_eq!(r["workers"].as_array().unwrap().len(), 1);
    d.ok("show run");
    d.ok("show errors");
    d.ok("clear counters");
    assert_eq!(d.json("show version")["mode"], "xconnect");
    let (code, _, err) = d.dpctl("route add 10.0.0.0/8 blackhole");
    assert_eq!(code, 1);
    assert!(
        err.contains("needs [forwarding] mode = \"router\""),
        "{err}"
    );
    assert!(d.ok("reload").contains("no changes"));
    // Its metrics: the ports' counters and the workers' loops.
    let url = d.json("show version")["metrics"]
        .as_str()
        .unwrap()
        .to_string();
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    for want in [
        "HTTP/1.1 200 OK",
        "dataplane_build_info{version=\"",
        "mode=\"xconnect\"} 1",
        "dataplane_interface_rx_packets_total{interface=\"port0\"} ",
        "dataplane_interface_link{interface=\"port1\"} ",
        "dataplane_port_rx_missed_total{interface=\"port1\"} ",
        "dataplane_worker_loops_total{worker=\"0\"} ",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn dataplaned_has_a_man_page_and_completions() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_dataplaned"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}");
        String::from_utf8(o.stdout).unwrap()
    };
    let man = run(&["--man"]);
    assert!(man.contains(".TH dataplaned 8"), "{man}");
    for s in [".SH OPTIONS", ".SH SIGNALS", ".SH FILES", ".SH SEE ALSO"] {
        assert!(man.contains(s), "{s} missing");
    }
    assert!(
        man.contains("\\-\\-check") && !man.contains("keep\\-twins"),
        "hidden options stay hidden"
    );
    assert!(run(&["--completions", "bash"]).contains("complete -F _dataplaned"));
    assert!(run(&["--completions", "zsh"]).starts_with("#compdef dataplaned"));
}

#[test]
fn the_log_is_json_when_asked_and_a_bad_level_is_refused() {
    let d = Daemon::start(
        "log",
        "router",
        "[log]\nformat = \"json\"\nlevel = \"debug\"\n",
    );
    // (the start-up lines went to the helper that waited for them)
    let _ = Command::new("kill")
        .args(["-HUP", &d.pid().to_string()])
        .status();
    let line = d.wait_log("SIGHUP");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(v["level"], "INFO", "{v}");
    assert_eq!(v["fields"]["message"], "SIGHUP: reload: no changes", "{v}");
    let (_, dir) = Daemon::dir("badlog");
    let cfg = dir.join("bad.toml");
    std::fs::write(
        &cfg,
        format!(
            "{}[log]\nlevel = \"info,ctl=loud\"\n",
            base_config("bl", "router")
        ),
    )
    .unwrap();
    let o = Command::new(DATAPLANED)
        .args(["--check", "-c"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("[log] level") && err.contains("ctl=loud"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Under a `Type=notify` unit: READY=1 once forwarding (dpctl answers then),
/// RELOADING=1 and READY=1 around SIGHUP's reload, STOPPING=1 on SIGTERM.
#[test]
fn systemd_hears_ready_reloading_and_stopping() {
    struct Reap(Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let (tag, dir) = Daemon::dir("notify");
    let cfg = dir.join("dataplaned.toml");
    std::fs::write(&cfg, format!("{}{ROUTER}", base_config(&tag, "router"))).unwrap();
    let sock = dir.join("ctl.sock");
    let nsock = dir.join("notify");
    let systemd = std::os::unix::net::UnixDatagram::bind(&nsock).unwrap();
    systemd
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let recv = || {
        let mut buf = [0u8; 512];
        let n = systemd.recv(&mut buf).expect("a notification within 20 s");
        String::from_utf8_lossy(&buf[..n]).to_string()
    };
    let mut d = Reap(
        Command::new(DATAPLANED)
            .arg("-c")
            .arg(&cfg)
            .arg("--socket")
            .arg(&sock)
            .env("NOTIFY_SOCKET", &nsock)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ready = recv();
    assert!(
        ready.starts_with("READY=1\nSTATUS=forwarding (router), 1 worker(s)"),
        "{ready:?}"
    );
    let (code, out, err) = dpctl_at(&sock, "show version");
    assert_eq!(code, 0, "{out}{err}");
    let pid = d.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(recv(), "RELOADING=1");
    assert!(recv().starts_with("READY=1\nSTATUS=reloaded"));
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(recv(), "STOPPING=1");
    let st = d.0.wait().unwrap();
    assert!(st.success(), "{st}");
    let _ = std::fs::remove_dir_all(dir);
}

/// VRFs by name, from the file and from dpctl, wherever a table is written; an
/// L3VPN route in one via the remote PE's loopback in the default VRF, and its
/// VPN label looking up in it. Bad names are refused and change nothing.
#[test]
fn vrfs_name_tables_and_vpn_routes_resolve_in_the_default_one() {
    let d = Daemon::start(
        "vrf",
        "router",
        &format!(
            "{ROUTER}[[vrf]]\nname = \"red\"\ntable = 10\n\
             [[route]]\nprefix = \"10.1.0.0/24\"\nvrf = \"red\"\n\
             via = [{{ gateway = \"192.0.2.4\", next_hop_vrf = \"default\", out_labels = [78] }}]\n\
             [[label]]\nlabel = 78\nlookup_vrf = \"red\"\n"
        ),
    );
    d.ok("route add 192.0.2.4/32 via 192.168.11.8 port0 out-labels 1000");
    d.ok("route add 10.0.0.0/24 vrf red via 192.0.2.4 next-hop-vrf default out-labels 77");
    d.ok("label add 77 eos ip4-lookup vrf red");
    let out = d.ok("route show vrf red");
    assert!(out.contains("ipv4 table 10 (vrf red): 2 routes"), "{out}");
    assert!(
        out.contains("10.0.0.0/24") && out.contains("via 192.0.2.4 next-hop-table 0 out-labels 77"),
        "{out}"
    );
    assert!(
        out.contains("via 192.0.2.4 next-hop-table 0 out-labels 78"),
        "{out}"
    );
    let labels = d.json("label show 77")["labels"].clone();
    assert_eq!(labels[0]["table"], 10, "{labels}");
    assert_eq!(d.json("label show 78")["labels"][0]["table"], 10);
    d.ok("vrf add blue table 20");
    d.ok("interface address del port1 192.168.11.10/31");
    d.ok("interface table port1 vrf blue");
    let vrfs = d.json("show vrf")["vrfs"].clone();
    let row = |name: &str| {
        vrfs.as_array()
            .unwrap()
            .iter()
            .find(|v| v["vrf"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {vrfs}"))
    };
    assert_eq!(row("default")["table"], 0);
    assert_eq!(row("red")["routes"], 2);
    assert_eq!(row("blue")["interfaces"], serde_json::json!(["port1"]));
    assert!(d.ok("show vrf").contains("blue"));

    let before = d.state();
    for (cmd, want) in [
        (
            "route add 10.0.0.0/24 vrf green blackhole",
            "unknown VRF \"green\" (VRFs: default, blue, red)",
        ),
        ("route show vrf", "vrf needs a VRF name"),
        ("vrf add red table 30", "VRF red is table 10"),
        ("vrf add pink table 10", "table 10 is VRF red already"),
        ("vrf add default table 5", "table 0 is the default VRF"),
        ("vrf add 123 table 5", "bad VRF name"),
        ("vrf del red", "route"),
        ("vrf del green", "unknown VRF"),
        ("vrf del default", "the default VRF (table 0) stays"),
        ("table del 10", "is VRF red"),
        (
            "route add 10.0.0.0/24 vrf red via 192.0.2.4 port0 next-hop-vrf default",
            "next-hop-table needs a next hop without an interface",
        ),
    ] {
        let (code, _, err) = d.dpctl(cmd);
        assert_eq!(code, refused_with(cmd), "{cmd}");
        assert!(err.contains(want), "{cmd}: {err}");
    }
    assert_eq!(d.state(), before);
    d.ok("interface table port1 vrf default");
    d.ok("vrf del blue");
    assert!(!d.ok("show vrf").contains("blue"));
}

/// A pseudowire from dpctl: its circuit (an interface without addresses), its label
/// in `label show`, `show pw` with the transport label of the route to the
/// PE; bad requests are refused and change nothing; deleted, its label goes.
#[test]
fn pseudowires_from_dpctl() {
    let d = Daemon::start("pw", "router", ROUTER);
    d.ok("interface address del port1 192.168.11.10/31");
    d.ok("route add 192.0.2.4/32 via 192.168.11.8 port0 out-labels 1000");
    d.ok("pw add c1 interface port1 neighbor 192.0.2.4 in-label 500 out-label 600");
    let pw = d.json("show pw")["pws"][0].clone();
    assert_eq!(pw["name"], "c1", "{pw}");
    assert_eq!(pw["interface"], "port1", "{pw}");
    assert_eq!(pw["up"], true, "{pw}");
    assert_eq!(pw["control_word"], true, "{pw}");
    assert_eq!(pw["transport_labels"], serde_json::json!([1000]), "{pw}");
    let l = d.json("label show 500")["labels"][0].clone();
    assert_eq!(l["action"], "pseudowire", "{l}");
    assert_eq!(l["pw"], "c1", "{l}");
    assert!(d.ok("show pw").contains("c1"));
    d.ok("label add 700 eos drop");
    let before = d.state();
    for (cmd, want) in [
        (
            "pw add c2 interface port0 neighbor 192.0.2.4 in-label 501 out-label 601",
            "has address 192.168.11.9/31",
        ),
        (
            "pw add c2 interface port1 neighbor 192.0.2.4 in-label 501 out-label 601",
            "port1 is the circuit of pseudowire c1",
        ),
        (
            "pw add c1 interface port1 neighbor 192.0.2.4 in-label 700 out-label 600",
            "in-label 700 is in use",
        ),
        (
            "pw add c1 interface port1 neighbor 192.0.2.4 in-label 500 out-label 5",
            "out-label 5 is not 16-1048575",
        ),
        (
            "pw add c1 interface port9 neighbor 192.0.2.4 in-label 500 out-label 600",
            "port9",
        ),
        ("pw del c9", "no such pseudowire"),
        (
            "interface address add port1 10.9.9.1/24",
            "takes no address",
        ),
    ] {
        let (code, _, err) = d.dpctl(cmd);
        assert_eq!(code, refused_with(cmd), "{cmd}");
        assert!(err.contains(want), "{cmd}: {err}");
    }
    assert_eq!(d.state(), before);
    // Replaced with another label and no control word; then deleted.
    d.ok("pw add c1 interface port1 neighbor 192.0.2.4 in-label 502 out-label 600 no-control-word");
    assert_eq!(d.json("show pw")["pws"][0]["control_word"], false);
    assert!(
        d.json("label show 500")["labels"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    d.ok("route del 192.0.2.4/32");
    assert_eq!(d.json("show pw")["pws"][0]["up"], false);
    d.ok("pw del c1");
    assert!(
        d.json("label show 502")["labels"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    d.ok("interface address add port1 192.168.11.10/31");
}
