//! A configuration file: parsed, planned and applied to a router without DPDK.
//! Any text is a running configuration or one clear error, never a panic.
#![no_main]

mod common;

use ctl::config::Config;
use ctl::routing;
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
    let ports = common::port_infos(&plan);
    let mut ctl = RouterControl::new();
    if let Err(e) = routing::apply(&plan.routing, &ports, &mut ctl) {
        assert!(!e.to_string().is_empty());
    }
});
