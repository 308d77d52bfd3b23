//! A configuration file: parsed, planned and applied to a router without DPDK.
//! Any text is a running configuration or one clear error, never a panic.
#![no_main]

use ctl::config::Config;
use ctl::routing::{self, PortInfo};
use dataplane::router::RouterControl;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = Config::parse(text, "fuzz.toml") else {
        return;
    };
    let Ok(plan) = cfg.plan("fuzz.toml") else {
        return;
    };
    let ports: Vec<PortInfo> = plan
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| PortInfo {
            name: p.name.clone(),
            id: i as u16,
            mac: [2, 0, 0, 0, 0, i as u8],
        })
        .collect();
    let mut ctl = RouterControl::new();
    if let Err(e) = routing::apply(&plan.routing, &ports, &mut ctl) {
        assert!(!e.is_empty());
    }
});
