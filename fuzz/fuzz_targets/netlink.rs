//! Netlink messages from the kernel (or zebra): decoded, applied to a router as
//! the kernel source, then an empty refresh. Whatever they held, the decoder never
//! panics, the router refuses what it cannot take, and the sweep leaves nothing
//! learned behind. (One router serves every run: making its tables costs far more
//! than a run; each run ends with nothing of its own left in it.)
#![no_main]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use ctl::linux::decode;
use ctl::linux::learner::KernelView;
use dataplane::router::{RouteSource, RouterControl};
use libfuzzer_sys::fuzz_target;

static ROUTER: Mutex<Option<RouterControl>> = Mutex::new(None);

fn router() -> RouterControl {
    let mut ctl = RouterControl::new();
    for p in 0..2u8 {
        ctl.add_interface(common::port(p, 1500)).expect("interface");
    }
    ctl
}

fuzz_target!(|data: &[u8]| {
    let msgs = decode::messages(data);
    // Deterministic: the same bytes say the same.
    assert_eq!(msgs, decode::messages(data));
    let mut guard = ROUTER.lock().unwrap_or_else(|e| e.into_inner());
    let ctl = guard.get_or_insert_with(router);
    // Kernel ifindexes 2 and 3 are the twins of ports 0 and 1.
    let mut view = KernelView::new(HashMap::from([(2, 1), (3, 2)]), BTreeMap::new());
    view.apply_batch(ctl, msgs);
    view.begin_refresh(ctl);
    ctl.batch(|ctl| view.sweep(ctl));
    assert_eq!(ctl.routes_of(RouteSource::Kernel).count(), 0);
    assert!(
        ctl.labels()
            .iter()
            .all(|(l, eos, _)| ctl.label_source(l, eos) != Some(RouteSource::Kernel))
    );
});
