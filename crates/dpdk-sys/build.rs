//! Generates the DPDK bindings with bindgen against the headers `pkg-config libdpdk`
//! names, and compiles the C shim with DPDK's own cflags (`-include rte_config.h`,
//! `-march=...`), which the pkg-config crate's include paths would lose.

use std::env;
use std::path::PathBuf;
use std::process::{Command, exit};

const SETUP_HINT: &str = "dpdk-sys: libdpdk (DPDK 22.11 development files) not found by pkg-config; run `scripts/setup.sh` as root to install dpdk, libdpdk-dev, pkg-config and libclang-dev";

fn pkg_config(args: &[&str]) -> Option<Vec<String>> {
    let out = Command::new("pkg-config").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.split_whitespace().map(String::from).collect())
}

fn main() {
    println!("cargo:rerun-if-changed=csrc/wrapper.h");
    println!("cargo:rerun-if-changed=csrc/shim.h");
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let statik = env::var_os("CARGO_FEATURE_STATIC_DPDK").is_some();

    let Some(cflags) = pkg_config(&["--cflags", "libdpdk"]) else {
        eprintln!("{SETUP_HINT}");
        exit(1);
    };

    if statik {
        // Verbatim: the line already wraps the archives in --whole-archive so that
        // the PMDs' constructors are linked in.
        let Some(libs) = pkg_config(&["--static", "--libs", "libdpdk"]) else {
            eprintln!("{SETUP_HINT}");
            exit(1);
        };
        for a in libs {
            println!("cargo:rustc-link-arg={a}");
        }
    } else {
        let Some(libs) = pkg_config(&["--libs", "libdpdk"]) else {
            eprintln!("{SETUP_HINT}");
            exit(1);
        };
        for a in libs {
            if let Some(dir) = a.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(lib) = a.strip_prefix("-l") {
                println!("cargo:rustc-link-lib=dylib={lib}");
            } else {
                println!("cargo:rustc-link-arg={a}");
            }
        }
        // PMD-specific APIs live in driver libraries that libdpdk.pc does not list.
        // The names resolve to the same files EAL loads as plugins, so nothing loads twice.
        println!("cargo:rustc-link-lib=dylib=rte_net_ring");
        // rte_lpm / rte_fib (and rte_lpm6 / rte_fib6, in the same libraries) are the
        // peers of our FIB in the benchmarks.
        println!("cargo:rustc-link-lib=dylib=rte_lpm");
        println!("cargo:rustc-link-lib=dylib=rte_fib");
    }

    // C shim, compiled with DPDK's flags ("-include X" is a pair).
    let mut shim = cc::Build::new();
    shim.file("csrc/shim.c")
        .include("csrc")
        .opt_level(3)
        .warnings(false);
    let mut it = cflags.iter();
    while let Some(f) = it.next() {
        if f == "-include" {
            if let Some(h) = it.next() {
                shim.flag("-include").flag(h);
            }
        } else if let Some(dir) = f.strip_prefix("-I") {
            shim.include(dir);
        } else {
            shim.flag(f);
        }
    }
    shim.compile("dpdkshim");

    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bindings = bindgen::Builder::default()
        .header("csrc/wrapper.h")
        .clang_arg("-Icsrc")
        .clang_args(&cflags)
        .allowlist_function(
            "rte_eal_.*|rte_eth_.*|rte_pktmbuf_pool_create(_by_ops)?|rte_mempool_.*|rte_ring_(create|free|lookup)\
             |rte_lcore_.*|rte_socket_id|rte_strerror|rte_get_tsc_hz|rte_delay_us_block\
             |rte_lpm_(create|free|add|delete|delete_all|find_existing)|rte_fib_.*|rte_fib6_.*|rte_lpm6_.*|rte_version\
             |rte_pktmbuf_free_bulk|rte_get_next_lcore|rte_get_main_lcore|rte_dev_probe\
             |rte_ring_count|shim_.*",
        )
        .allowlist_type("rte_mbuf|rte_eth_conf|rte_eth_dev_info|rte_eth_stats|rte_eth_link|rte_ether_addr|rte_lpm_config|rte_fib_conf|rte_lpm6_config|rte_fib6_conf|rte_eth_rss_conf")
        .allowlist_var("RTE_.*|RING_F_.*|SOCKET_ID_ANY")
        .blocklist_type("max_align_t")
        .opaque_type("rte_arp_hdr|rte_arp_ipv4|rte_l2tpv2_combined_msg_hdr|rte_gtp_psc_generic_hdr")
        .derive_default(true)
        .layout_tests(true)
        .prepend_enum_name(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| {
            eprintln!("dpdk-sys: bindgen failed on the DPDK headers ({e}); is libclang-dev installed? run `scripts/setup.sh`");
            exit(1);
        });
    bindings
        .write_to_file(out.join("dpdk_sys.rs"))
        .expect("write bindings to OUT_DIR");
}
