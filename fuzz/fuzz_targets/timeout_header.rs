//! Fuzzes `checks::timeout_header`: see its invariants in `shared/platform/src/checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| meridian_platform::checks::timeout_header(data));
