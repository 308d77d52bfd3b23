//! A byte stream from an FPM peer: framing, then each frame's netlink decoded.
//! Frames never reach past what was read, nothing panics.
#![no_main]

use ctl::linux::{decode, fpm};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (payloads, used, bad) = fpm::frames(data);
    assert!(used <= data.len());
    let framed: usize = payloads.iter().map(|p| p.len() + fpm::HEADER).sum();
    assert!(framed <= used || bad.is_some());
    for p in payloads {
        let _ = decode::messages(p);
    }
});
