//! Harness for end-to-end tests: starts the real app with `spin up` on a
//! free loopback port and a throw-away state directory, talks to it over
//! HTTP, and runs stand-in downstreams on 127.0.0.1.
#![forbid(unsafe_code)]

pub mod api;
mod client;
pub mod loopback;
pub mod otlp;
mod spin;
pub mod split;
mod standin;

pub use client::{Client, Reply};
pub use spin::{
    repo_root, spin_binary, write_split_runtime_config, Layout, SpinApp, SpinOptions, ADMIN_TOKEN,
    INTERNAL_TOKEN, SPIN_REFUSED_UTF8,
};
pub use standin::{Received, StandIn, StandInReply, Truncating};

/// Polls `check` every 20 ms until it gives a value, for at most 5 s, for
/// what happens after an answer: a write's events are delivered once its
/// 201 has gone. Panics naming `what` when it never does.
#[track_caller]
pub fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "never happened: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The first value of header `name` (any case) among `headers`.
pub(crate) fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
