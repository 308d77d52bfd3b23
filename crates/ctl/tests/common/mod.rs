//! Two host network namespaces, each joined by a veth pair to the root
//! namespace where a real dataplaned attaches to the outer ends (net_af_packet).
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Lab {
    pub tag: String,
    daemon: Option<Child>,
    pub dir: PathBuf,
}

/// The `dpctl` binary (crate `dpctl`): `$DPCTL`, else the one cargo built
/// beside the test binaries (`cargo test --workspace`, or `cargo build -p
/// dpctl` before `cargo test -p ctl`).
pub fn dpctl_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("DPCTL") {
        return p.into();
    }
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> -> target/<profile>/dpctl
    let p = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("dpctl"))
        .unwrap();
    assert!(
        p.exists(),
        "{} is not built: run `cargo build -p dpctl` (or set DPCTL)",
        p.display()
    );
    p
}

pub fn sh(args: &[&str]) -> std::process::Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

pub fn ok(args: &[&str]) {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

impl Lab {
    pub fn new(kind: &str, addrs: [&str; 2], gateways: Option<[&str; 2]>) -> Lab {
        assert!(
            is_root(),
            "this test needs root (network namespaces and af_packet)"
        );
        let tag = format!("{kind}{}", std::process::id() % 100000);
        let dir = std::env::temp_dir().join(format!("dp-netns-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        let lab = Lab {
            tag,
            daemon: None,
            dir,
        };
        let t = &lab.tag;
        for side in ["a", "b"] {
            let ns = format!("dp{t}{side}");
            let outer = format!("dp{t}{side}0");
            let inner = format!("dp{t}{side}1");
            ok(&["ip", "netns", "add", &ns]);
            ok(&[
                "ip", "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ]);
            ok(&["ip", "link", "set", &inner, "netns", &ns]);
            ok(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{outer}.disable_ipv6=1"),
            ]);
            ok(&["ip", "link", "set", &outer, "up"]);
            let k = usize::from(side == "b");
            ok(&["ip", "-n", &ns, "addr", "add", addrs[k], "dev", &inner]);
            ok(&["ip", "-n", &ns, "link", "set", &inner, "up"]);
            // A veth leaves TCP/UDP checksums to be filled in on the way out, which
            // never happens for frames read by af_packet: the hosts compute them.
            ok(&[
                "ip", "netns", "exec", &ns, "ethtool", "-K", &inner, "tx", "off",
            ]);
            ok(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            if let Some(gw) = gateways {
                ok(&["ip", "-n", &ns, "route", "add", "default", "via", gw[k]]);
            }
        }
        lab
    }

    /// The control-plane namespace of a daemon with `[linux]`.
    pub fn cp(&self) -> String {
        format!("dp{}cp", self.tag)
    }

    /// Host namespace `side` ("a" or "b").
    pub fn ns(&self, side: &str) -> String {
        format!("dp{}{side}", self.tag)
    }

    /// The configuration file: ports, then `extra`.
    pub fn config(&self, extra: &str) -> String {
        let t = &self.tag;
        format!(
            "[eal]\nmemory = \"auto\"\nmemory_mb = 256\n[mempool]\nmbufs = 4095\n\
             [workers]\ncpus = [1]\n\
             [[port]]\nname = \"port0\"\ndevice = \"net_af_packet_{t}a,iface=dp{t}a0\"\n\
             [[port]]\nname = \"port1\"\ndevice = \"net_af_packet_{t}b,iface=dp{t}b0\"\n{extra}"
        )
    }

    /// dpctl against this lab's daemon: exit code, stdout, stderr.
    pub fn dpctl(&self, args: &str) -> (i32, String, String) {
        let o = Command::new(dpctl_bin())
            .arg("--socket")
            .arg(self.dir.join("ctl.sock"))
            .args(args.split_whitespace())
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    /// `dpctl --json ARGS`, which must succeed.
    pub fn json(&self, args: &str) -> serde_json::Value {
        let (code, out, err) = self.dpctl(&format!("--json {args}"));
        assert_eq!(code, 0, "dpctl {args}: {err}");
        serde_json::from_str(&out).unwrap()
    }

    pub fn start_daemon(&mut self, extra: &str) {
        self.start_daemon_config(&self.config(extra));
    }

    /// Starts the daemon on a whole configuration file of the test's own.
    pub fn start_daemon_config(&mut self, config: &str) {
        let cfg = self.dir.join("dataplaned.toml");
        std::fs::write(&cfg, config).unwrap();
        let (child, _log) = spawn_dataplaned(&cfg, &self.dir.join("ctl.sock"), Stdio::piped());
        self.daemon = Some(child);
    }

    /// Kills the daemon with SIGKILL and reaps it.
    pub fn kill_daemon(&mut self) {
        let mut child = self.daemon.take().expect("daemon running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    pub fn stop_daemon(&mut self) -> String {
        let mut child = self.daemon.take().expect("daemon running");
        ok(&["kill", "-INT", &child.id().to_string()]);
        let t0 = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                assert!(st.success(), "dataplaned exited with {st}");
                break;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("dataplaned did not stop within 10 s of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        out
    }

    pub fn burst(&self, from: &str, to: &str, count: u32) -> (bool, String) {
        let tool = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/tools/rawburst.py");
        let t = &self.tag;
        let n = count.to_string();
        let rx_ns = format!("dp{t}{to}");
        let rx_if = format!("dp{t}{to}1");
        let mut recv = Command::new("ip")
            .args([
                "netns",
                "exec",
                &rx_ns,
                "python3",
                tool,
                "recv",
                &rx_if,
                &n,
                "--timeout",
                "10",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(recv.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let tx_ns = format!("dp{t}{from}");
        let tx_if = format!("dp{t}{from}1");
        ok(&[
            "ip", "netns", "exec", &tx_ns, "python3", tool, "send", &tx_if, &n,
        ]);
        let report = lines.next().unwrap().unwrap();
        (recv.wait().unwrap().success(), report)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for side in ["a", "b"] {
            let _ = sh(&["ip", "link", "del", &format!("dp{}{side}0", self.tag)]);
            let _ = sh(&["ip", "netns", "del", &format!("dp{}{side}", self.tag)]);
        }
        let cp = self.cp();
        if std::path::Path::new("/run/netns").join(&cp).exists() {
            let _ = sh(&["ip", "netns", "del", &cp]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `ping -c n` from namespace `ns`: packets received.
pub fn ping(ns: &str, dst: &str, n: u32, interval: &str) -> (u32, String) {
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        ns,
        "ping",
        "-c",
        &n.to_string(),
        "-i",
        interval,
        "-W",
        "1",
        dst,
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let got = out
        .split(", ")
        .find(|p| p.ends_with("received"))
        .and_then(|p| p.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (got, out)
}

/// Starts `dataplaned -c cfg --socket sock` and waits (20 s at most) until it
/// says it forwards. Its stderr is echoed as `[dataplaned] ...` and its lines
/// come through the receiver.
pub fn spawn_dataplaned(
    cfg: &std::path::Path,
    sock: &std::path::Path,
    stdout: Stdio,
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut stdout = Some(stdout);
    // DPDK 22.11's af_packet names a port's fanout group by the process id XOR
    // the interface index: two daemons in one namespace can draw the same group
    // for different interfaces, and the second one's port is refused (EINVAL).
    // Another process id draws another group.
    for _ in 0..5 {
        let out = stdout.take().unwrap_or_else(Stdio::piped);
        match try_spawn_dataplaned(cfg, sock, out) {
            Ok(started) => return started,
            Err(fanout) if fanout => eprintln!("af_packet fanout group taken: starting again"),
            Err(_) => panic!("dataplaned did not start within 20 s"),
        }
    }
    panic!("dataplaned: 5 starts refused by af_packet fanout groups");
}

/// Starts dataplaned and waits for it to forward; `Err(true)` when it stopped
/// because an af_packet port's fanout group was taken.
fn try_spawn_dataplaned(
    cfg: &std::path::Path,
    sock: &std::path::Path,
    stdout: Stdio,
) -> Result<(Child, std::sync::mpsc::Receiver<String>), bool> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dataplaned"))
        .arg("-c")
        .arg(cfg)
        .arg("--socket")
        .arg(sock)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dataplaned");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[dataplaned] {line}");
            let _ = tx.send(line);
        }
    });
    let t0 = Instant::now();
    let mut fanout = false;
    loop {
        let left = Duration::from_secs(20).saturating_sub(t0.elapsed());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains("forwarding") => break,
            Ok(l) => fanout |= l.contains("could not set PACKET_FANOUT"),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fanout);
            }
        }
    }
    Ok((child, rx))
}
