//! Fuzzes `checks::budget_headers`: see its invariants in `shared/platform/src/checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| meridian_platform::checks::budget_headers(data));
