//! Harness for end-to-end tests: starts the real app with `spin up` on a
//! free loopback port and a throw-away state directory, talks to it over
//! HTTP, and runs stand-in downstreams on 127.0.0.1.
#![forbid(unsafe_code)]

pub mod api;
mod client;
pub mod distance;
pub mod edge;
pub mod hosted;
pub mod load;
pub mod loopback;
pub mod otlp;
pub mod postgres;
mod profile;
pub mod proxy;
mod spin;
pub mod split;
mod standin;

pub use client::{Client, Reply};
pub use loopback::ReceivedExt;
pub use profile::{profile, Profile};
pub use spin::{
    spin_binary, write_split_runtime_config, Layout, Secrets, SpinApp, SpinOptions,
    SPIN_REFUSED_UTF8,
};
pub use standin::{Received, StandIn, StandInReply, Truncating};

/// The repository root (this crate lives in `tests/`).
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// The text of the repository's `spin.toml`, which the generated
/// manifests are checked against.
#[cfg(test)]
fn spin_toml() -> String {
    std::fs::read_to_string(repo_root().join("spin.toml")).expect("spin.toml")
}

/// The internal token the test app is started with: long enough for the
/// components' secrets rule (`meridian_platform::secrets::judge_secret`).
pub const INTERNAL_TOKEN: &str = "e2e-internal-4d9f2a7c1e8b3f6a0c5d9e2b7f1a4c8e";
/// The platform admin token the test app is started with.
pub const ADMIN_TOKEN: &str = "e2e-admin-7b3e9c1f5a2d8e4b0f6c3a9d1e7b5f2c";

/// `headers` with the signature a call of `method` to `target` (its path
/// and query, as the service receives it) carries when one of Meridian's
/// components makes it with [`INTERNAL_TOKEN`]: what a test that calls a
/// service directly must present (`meridian_platform::wire::signature`).
pub fn signed_headers(
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        let name: http::HeaderName = name.parse().expect("a header name");
        map.insert(name, value.parse().expect("a header value"));
    }
    let key = meridian_platform::wire::signature::CallKey::derive(INTERNAL_TOKEN);
    meridian_platform::http::signed(&key, method, target, &mut map);
    map.iter()
        .map(|(n, v)| (n.to_string(), v.to_str().expect("ASCII").to_owned()))
        .collect()
}

/// Whether `call`, as a stand-in received it, carries the signature of
/// Meridian's components for what it received (the harness's
/// [`INTERNAL_TOKEN`]).
pub fn signed_by_meridian(call: &loopback::Request) -> bool {
    let key = meridian_platform::wire::signature::CallKey::derive(INTERNAL_TOKEN);
    let target = call.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let signed = meridian_platform::wire::signature::SignedCall {
        method: call.method().as_str(),
        target,
        header: |n: &str| call.headers().get(n).and_then(|v| v.to_str().ok()),
    };
    let presented = call
        .headers()
        .get(meridian_platform::wire::headers::SIGNATURE)
        .and_then(|v| v.to_str().ok());
    key.verifies(&signed, presented)
}

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

/// Waits until `count` is at least `at_least` and has not moved for
/// 300 ms (at most 10 s), and returns it: for deliveries made after the
/// answers, which a test must see all made before it changes what they
/// meet.
#[track_caller]
pub fn settled(what: &str, at_least: usize, mut count: impl FnMut() -> usize) -> usize {
    let started = std::time::Instant::now();
    let mut last = (count(), std::time::Instant::now());
    loop {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = count();
        if now != last.0 {
            last = (now, std::time::Instant::now());
        } else if now >= at_least && last.1.elapsed() >= std::time::Duration::from_millis(300) {
            return now;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "never settled: {what} ({now})"
        );
    }
}

/// Runs `command` to its end and returns what it printed; panics naming
/// `what`, with its output, when it cannot start or does not succeed.
#[track_caller]
pub fn run_ok(command: &mut std::process::Command, what: &str) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The first value of header `name` (any case) among `headers`.
pub(crate) fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
