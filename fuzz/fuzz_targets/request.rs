//! The daemon's request handler: one line from the control socket, decoded as
//! the daemon decodes it and run by the router's API (no DPDK, no ports) on a
//! router built from a configuration with interfaces, a second table, routes,
//! labels and neighbours. Every line gets one JSON answer line; a request that
//! fails changes nothing (interfaces, addresses, routes of both tables, labels,
//! neighbours and sFlow read the same before and after). (One router serves
//! every run; what succeeded stays, so runs build on each other.)
#![no_main]

mod common;

use std::sync::Mutex;
use std::time::Instant;

use ctl::api::{DaemonInfo, RouterApi};
use ctl::config::Config;
use ctl::ports::NoPorts;
use ctl::proto::{Request, Response};
use ctl::routing::{self, PortInfo, Routing};
use ctl::server::Service;
use dataplane::router::RouterControl;
use libfuzzer_sys::fuzz_target;

const CONFIG: &str = r#"
[[port]]
name = "port0"
device = "net_null0"
[[port]]
name = "port1"
device = "net_null1"

[forwarding]
mode = "router"

[router]
tables = [1]

[[interface]]
name = "port0"
addresses = ["10.1.0.1/24"]
[[interface]]
name = "port1"
addresses = ["10.2.0.1/24"]
table = 1

[[neighbor]]
interface = "port0"
address = "10.1.0.2"
mac = "02:00:00:00:01:02"

[[route]]
prefix = "198.18.0.0/16"
via = [{ gateway = "10.1.0.2", interface = "port0" }]
[[route]]
prefix = "198.19.0.0/16"
table = 1
via = [{ gateway = "10.2.0.2", interface = "port1", out_labels = [100] }]

[[label]]
label = 100
eos = true
via = [{ gateway = "10.1.0.2", interface = "port0", out_labels = [200] }]
[[label]]
label = 103
eos = true
lookup_table = 1
"#;

struct Rig {
    ctl: RouterControl,
    routing: Routing,
    config: Config,
    ports: Vec<PortInfo>,
}

static RIG: Mutex<Option<Rig>> = Mutex::new(None);

fn rig() -> Rig {
    let config = Config::parse(CONFIG, "fuzz.toml").expect("config");
    let plan = config.plan("fuzz.toml").expect("plan");
    let ports = common::port_infos(&plan);
    let mut ctl = RouterControl::new();
    routing::apply(&plan.routing, &ports, &mut ctl).expect("apply");
    Rig {
        ctl,
        routing: plan.routing,
        config,
        ports,
    }
}

/// What a failed request must leave as it was.
fn state(api: &mut RouterApi<'_>) -> Vec<String> {
    let show = |api: &mut RouterApi<'_>, w: &[&str]| {
        let args: Vec<String> = w.iter().map(|s| s.to_string()).collect();
        format!("{:?}", api.handle(&args))
    };
    vec![
        show(api, &["show", "interfaces", "address"]),
        show(api, &["show", "route"]),
        show(api, &["show", "route", "table", "1"]),
        show(api, &["show", "labels"]),
        show(api, &["show", "neighbors"]),
        show(api, &["show", "sflow"]),
    ]
}

fuzz_target!(|data: &[u8]| {
    let mut guard = RIG.lock().unwrap_or_else(|e| e.into_inner());
    let rig = guard.get_or_insert_with(rig);
    let info = DaemonInfo {
        config_path: None,
        config: rig.config.clone(),
        socket: "fuzz.sock".into(),
        lcores: vec![1],
        tsc_hz: 1_000_000_000,
        started: Instant::now(),
        metrics: None,
    };
    let mut api = RouterApi::new(
        &mut rig.ctl,
        &NoPorts,
        rig.ports.clone(),
        rig.routing.clone(),
        info,
    );
    // As the daemon reads a line: JSON, then the command's words.
    let resp = match serde_json::from_slice::<Request>(data) {
        Err(e) => Response::err(0, format!("not a request ({e})")),
        Ok(req) => {
            let before = state(&mut api);
            let res = api.handle(&req.args);
            if let Err(e) = &res {
                assert!(!e.to_string().is_empty(), "an error without a message");
                let after = state(&mut api);
                assert_eq!(
                    before, after,
                    "{:?} failed ({e}) but changed state",
                    req.args
                );
            }
            ctl::server::answer(req.id, res)
        }
    };
    let line = resp.to_line();
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    let _: serde_json::Value = serde_json::from_str(&line).expect("the answer is JSON");
});
