//! A dpctl request line: split into words as the daemon does and parsed. Any
//! input is a command or a clear error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    match dpctl::cli::parse(&words) {
        Ok(c) => assert_eq!(dpctl::cli::parse(&words).ok(), Some(c)),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
