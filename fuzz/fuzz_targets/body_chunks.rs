//! Fuzzes `checks::body_chunks`: see its invariants in `shared/platform/src/checks.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| meridian_platform::checks::body_chunks(data));
