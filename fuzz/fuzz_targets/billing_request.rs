//! Fuzzes a whole request through `meridian_request_checks::billing_request`: see the
//! invariant in `shared/request-checks/src/lib.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| meridian_request_checks::billing_request(data));
