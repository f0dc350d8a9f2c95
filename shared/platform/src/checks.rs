//! Invariants of the parsers that face untrusted input, stated once and run
//! two ways: by the cargo-fuzz targets in `fuzz/` (coverage-guided, for
//! minutes) and by a host test that replays the kept corpus on every run.
//!
//! Each check takes raw bytes, must never panic, and panics (failing the
//! fuzzer or the test) only when an invariant is broken.
#![doc(hidden)]
// A broken invariant must stop the fuzzer: panicking is this module's job,
// and it is compiled only with the `fuzzing` feature, never into a component.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice
)]

use std::time::Duration;

use crate::budget::deadline::Deadline;
use crate::budget::propagation::{BudgetHeaders, ReceivedBudget, MAX_PROPAGATED_BUDGET};
use crate::budget::BudgetConfig;
use crate::http::body::{BodyBuffer, BodyError};
use crate::http::idempotency::IdempotencyKey;
use crate::http::page::{Cursors, PageRequest, MAX_LIMIT};
use crate::input::validate::JsonBody;
use crate::secrets::CursorKey;
use crate::time::UnixMillis;

const NOW: u64 = 1_700_000_000_000;

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// `x-meridian-timeout-ms`: anything accepted is 1 ms up to the max; a
/// string of digits other than zero is always accepted.
pub fn timeout_header(data: &[u8]) {
    let raw = text(data);
    let config = BudgetConfig::new(Duration::from_millis(3_000), Duration::from_millis(10_000));
    match config.budget_for(Some(&raw)) {
        Ok(budget) => assert!(
            budget >= Duration::from_millis(1) && budget <= Duration::from_millis(10_000),
            "{raw:?} gave {budget:?}"
        ),
        Err(_) => {
            let digits = raw.trim_matches(|c| c == ' ' || c == '\t');
            let positive = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && digits.bytes().any(|b| b != b'0');
            assert!(!positive, "{raw:?} refused");
        }
    }
}

/// The two budget headers: a decoded deadline never gives more than the
/// budget sent (nor more than the propagation cap), and what a hop encodes
/// decodes to the same deadline.
pub fn budget_headers(data: &[u8]) {
    let raw = text(data);
    let (deadline, budget) = raw.split_once('\n').unwrap_or((&raw, ""));
    let now = UnixMillis::from_millis(NOW);
    if let Ok(arrival) = ReceivedBudget::decode(
        Some(deadline),
        Some(budget),
        now,
        Duration::from_millis(250),
    ) {
        let left = arrival.deadline.remaining(now);
        assert!(left <= MAX_PROPAGATED_BUDGET, "{raw:?}: {left:?}");
        let sent: u64 = budget.trim_matches([' ', '\t']).parse().unwrap();
        assert!(left <= Duration::from_millis(sent), "{raw:?}: {left:?}");
    }
    // Round trip: a deadline within the cap survives encode and decode.
    let offset = data
        .iter()
        .fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(*b)))
        % MAX_PROPAGATED_BUDGET.as_millis() as u64;
    let sent = Deadline::at(UnixMillis::from_millis(NOW + offset));
    let headers = BudgetHeaders::encode(sent, now);
    let back = ReceivedBudget::decode(
        Some(&headers.deadline),
        Some(&headers.budget_ms),
        now,
        Duration::from_millis(250),
    )
    .expect("encoded headers decode");
    assert_eq!(back.deadline, sent);
    assert_eq!(back.skew_ms, None);
}

/// `Idempotency-Key`: accepted keys are 1–255 visible ASCII characters and
/// come back unchanged.
pub fn idempotency_key(data: &[u8]) {
    let raw = text(data);
    let visible = !raw.is_empty() && raw.len() <= 255 && raw.bytes().all(|b| b.is_ascii_graphic());
    match IdempotencyKey::parse(&raw) {
        Ok(key) => {
            assert!(visible, "{raw:?} accepted");
            assert_eq!(key.as_str(), raw);
        }
        Err(_) => assert!(!visible, "{raw:?} refused"),
    }
}

/// `?limit=&cursor=`: a page request is within the limits, and a cursor
/// it hands out reads back as the same position.
pub fn page_query(data: &[u8]) {
    let raw = text(data);
    let cursors = || {
        let tenant = "0b6f1e3c-7c1e-4a55-9d3c-2f0c3b1f6a01"
            .parse()
            .expect("a tenant id");
        Cursors::new(CursorKey::unkeyed(), tenant)
    };
    if let Ok(page) = PageRequest::from_query(&raw, cursors()) {
        assert!((1..=MAX_LIMIT).contains(&page.limit), "{raw:?}");
        assert!(page.window().after >= 0, "{raw:?}");
        let seq = i64::from(data.first().copied().unwrap_or(0)) + 1;
        let (_, next) = PageRequest::first(1, cursors()).finish(vec![(seq, ()), (seq + 1, ())]);
        let cursor = next.expect("a next page");
        let again = PageRequest::from_query(&format!("cursor={cursor}"), cursors())
            .expect("our own cursor is valid");
        assert_eq!(again.after, Some(seq));
    }
}

/// JSON request bodies: any bytes are a value or a 4xx problem, never a
/// panic; validated text fields respect their bounds.
pub fn json_body(data: &[u8]) {
    match JsonBody::parse(data) {
        Ok(mut body) => {
            if let Some(name) = body.text("name", 1, 20) {
                let chars = name.chars().count();
                assert!((1..=20).contains(&chars), "{name:?}");
            }
            if let Some(n) = body.integer("amount_cents", 1, 1_000) {
                assert!((1..=1_000).contains(&n));
            }
            let _ = body.object("payload");
            let _ = body.patch_text("email", 1, 254, true);
            if let Err(problem) = body.finish() {
                assert!(problem.status().is_client_error());
            }
        }
        Err(problem) => assert!(problem.status().is_client_error()),
    }
}

/// Bodies read in chunks: accepted exactly while the total fits the limit.
pub fn body_chunks(data: &[u8]) {
    let limit = usize::from(data.first().copied().unwrap_or(0));
    let mut buffer = BodyBuffer::new(limit);
    let mut total = 0;
    for chunk in data.chunks(7) {
        total += chunk.len();
        match buffer.push(chunk) {
            Ok(()) => assert!(total <= limit),
            Err(BodyError::TooLarge(l)) => {
                assert!(total > limit && l == limit);
                return;
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(buffer.finish(), data);
}

/// One invariant check over raw input: it panics when the input breaks
/// the invariant (the platform's checks here, the services' requests in
/// `meridian-request-checks`; the fuzz targets and corpora run both).
pub type Check = fn(&[u8]);

/// Every check by the name its fuzz target and corpus folder use.
pub const ALL: [(&str, Check); 6] = [
    ("timeout_header", timeout_header),
    ("budget_headers", budget_headers),
    ("idempotency_key", idempotency_key),
    ("page_query", page_query),
    ("json_body", json_body),
    ("body_chunks", body_chunks),
];
