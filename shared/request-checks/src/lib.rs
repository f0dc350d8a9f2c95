//! Whole-request invariants, for the fuzzers (`fuzz/`) and for the corpus
//! replay that every test run includes.
//!
//! Each check turns arbitrary bytes into a request — method, a path built
//! on one of the component's own route templates (or anything at all),
//! query, header names and values (UTF-8, non-ASCII included: Spin refuses
//! anything else before a component runs), a declared body length and the
//! body — and hands it to the component's request handling: the gateway's
//! over a scripted upstream where every service is healthy, or a service's
//! over an in-memory SQLite with its real migrations and a few rows. The
//! invariant, whatever the input: a success, or a 4xx problem+json whose
//! `request_id` is the request's; never a panic, never a 5xx.
#![forbid(unsafe_code)]

use meridian_platform::checks::Check;
use meridian_platform::http::prelude::*;

mod input;
mod services;

pub use services::{billing_request, community_request, identity_request};
mod upstream;

pub use input::Input;

/// Every check by its fuzz target's name (and corpus directory).
pub const ALL: [(&str, Check); 4] = [
    ("gateway_request", gateway_request),
    ("identity_request", services::identity_request),
    ("community_request", services::community_request),
    ("billing_request", services::billing_request),
];

/// A request through the gateway, every service healthy behind it.
pub fn gateway_request(data: &[u8]) {
    let templates: Vec<&str> = gateway::routes::OWN
        .iter()
        .map(|e| e.path)
        .chain(
            meridian_endpoints::identity::ENDPOINTS
                .iter()
                .map(|e| e.path),
        )
        .chain(
            meridian_endpoints::community::ENDPOINTS
                .iter()
                .map(|e| e.path),
        )
        .chain(
            meridian_endpoints::billing::ENDPOINTS
                .iter()
                .map(|e| e.path),
        )
        .collect();
    let mut input = Input::new(data);
    let request = input.request(&templates, &["00000000-0000-4000-8000-000000000001"]);
    let gateway = upstream::gateway();
    let response = futures::executor::block_on(gateway.handle(request.clone()));
    let sent_id = response.header("x-request-id").map(str::to_owned);
    assert!(
        sent_id.is_some(),
        "no x-request-id on {} for {request:?}",
        response.status()
    );
    assert_clean(
        "gateway",
        &request,
        response.status().as_u16(),
        response.header("content-type"),
        response.body(),
        sent_id.as_deref(),
    );
}

/// Whether the client asked for a budget too small to answer within: the
/// contract's 504 `deadline_exceeded` is then the right answer, not a
/// fault. (Over the scripted upstream no time passes but 1 ms a call, so a
/// budget of 100 ms or more never runs out.)
fn asked_for_too_little(request: &Request) -> bool {
    request
        .headers()
        .get_all(meridian_platform::wire::headers::TIMEOUT_MS)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.trim().parse::<u64>().is_ok_and(|ms| ms < 100))
}

/// The invariant on one answer: below 500, and every 4xx a problem+json
/// carrying the request id it was answered under.
fn assert_clean(
    who: &str,
    request: &Request,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    request_id: Option<&str>,
) {
    let text = String::from_utf8_lossy(body);
    assert!(
        status < 500 || (status == 504 && asked_for_too_little(request)),
        "{who} answered {status} for input alone: {text}\n{request:?}"
    );
    if status >= 400 {
        assert_eq!(
            content_type,
            Some(meridian_platform::wire::problem::PROBLEM_JSON),
            "{who}'s {status} is not problem+json: {text}\n{request:?}"
        );
        let problem: serde_json::Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("{who}'s {status} body is not JSON ({e}): {text}"));
        assert_eq!(
            problem.get("request_id").and_then(|v| v.as_str()),
            request_id,
            "{who}'s {status} problem does not carry the request id: {text}"
        );
        assert_eq!(
            problem.get("status").and_then(serde_json::Value::as_u64),
            Some(u64::from(status)),
            "{who}'s problem names another status: {text}"
        );
    }
}
