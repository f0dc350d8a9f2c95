//! The budget between services under faults, on a real `spin up`: an
//! optional step never costs a committed write its answer, only the layer
//! next to a failure retries it, lock waits end at the work deadline,
//! bodies are limited and timed from arrival, and no raw downstream answer
//! reaches a client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use meridian_e2e::api::relay_until_delivered;
use meridian_e2e::{settled, SpinApp, SpinOptions, StandIn, StandInReply};
use serde_json::{json, Value};

/// How far past its budget a client may see an answer: the suite's
/// documented tolerance for scheduling on a loaded 2-core machine.
const TOLERANCE: Duration = Duration::from_millis(10);

fn invoice(resident: &str, amount: i64) -> Value {
    json!({"resident_id": resident, "amount_cents": amount, "currency": "EUR", "description": "Service charge", "due_date": "2026-12-31"})
}

#[test]
fn a_consumer_that_never_answers_costs_the_event_not_the_committed_invoice() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let resident = acme.resident("Ada");
    // Billing's schema made before the timed write, by a read: a fresh
    // database's first write migrates it first (at 10 ms from a
    // PostgreSQL server, ~80 round trips), which is not what is timed.
    acme.list("/invoices");
    // The real community behind a proxy that passes everything on except
    // event deliveries, which it accepts and never answers.
    let community = SpinApp::community_beside(&app);
    let proxy = StandIn::events_of(&community, |_| StandInReply::Hang(Duration::from_secs(5)));
    let app = app.restart_with(SpinOptions::default().variable("community_url", proxy.url()));
    let budget = Duration::from_millis(800);
    let r = acme
        .post("/invoices")
        .header("x-meridian-timeout-ms", "800")
        .json(&invoice(&resident, 1_000));
    assert_eq!(r.status, 201, "{}\n{}", r.body, app.logs());
    r.assert_within(budget + TOLERANCE, "answered later than the budget");
    // Delivered after the answer: one attempt, held to the budget's end
    // and abandoned there, not retried (counted once the budget is over).
    std::thread::sleep(budget);
    let attempts = settled("the event's delivery", 1, || {
        proxy.count("/internal/events")
    });
    assert_eq!(attempts, 1, "abandoned, not retried");
    assert_eq!(acme.list("/invoices").len(), 1);

    // The failed delivery was recorded and backed off: the relay delivers
    // it once community answers again (polled: the backoff is 1 s).
    let app = app.restart_with(SpinOptions::default());
    let r = relay_until_delivered(&app.client());
    assert_eq!(r.status, 200, "{}", r.body);
    let delivered = r.json();
    assert_eq!(delivered["delivered"], 1, "{delivered}");
    assert_eq!(delivered["pending"], 0);
}

#[test]
fn a_services_answer_reaches_the_caller_before_the_work_after_it() {
    // In place of billing, `hang` answers a page at once and then keeps its
    // thread busy for 2 s after the answer, as billing's SQLite connection
    // does while it closes (the last connection to a write-ahead-logged
    // file checkpoints it, with two fsyncs). Spin wakes the caller waiting
    // for the answer on that same thread: unless the service gives the
    // thread back first, the gateway has the answer only when that work
    // ends (a keyed write's 504 then came after the gateway's own timer).
    let app = SpinApp::start_with(SpinOptions::default().replace_component("billing", "hang"));
    let acme = app.tenant("acme");
    let r = acme
        .get("/invoices")
        .header("x-meridian-timeout-ms", "5000")
        .send();
    assert_eq!(r.status, 200, "{}", r.body);
    // Where the time went, when it came late: billing's call (the answer
    // held back) or the gateway's own steps after it.
    println!(
        "answered after {:?}; the work after it holds 2 s; server-timing: {}",
        r.elapsed,
        r.header("server-timing").unwrap_or("none")
    );
    r.assert_within(
        Duration::from_millis(1_000),
        "the answer waited for the work after it",
    );
}

#[test]
fn a_private_service_that_hangs_behind_service_chaining_ends_in_a_504_at_the_budget() {
    // Spin runs a `*.spin.internal` call in-process and ignores request
    // options, so only the adapter's race against the budget timer ends it.
    let app = SpinApp::start_with(SpinOptions::default().replace_component("community", "hang"));
    let acme = app.tenant("acme");
    let r = acme
        .get("/residents")
        .header("x-meridian-timeout-ms", "400")
        .send();
    let body = r.assert_problem(504, "deadline_exceeded");
    assert_eq!(body["hop"], "gateway");
    println!("chained hang: 504 after {:?} of 400 ms", r.elapsed);
    // Abandoned at the work deadline (400 less the answer reserve), answered
    // within the budget; the component itself would hold it for 10 s.
    assert!(
        r.elapsed >= Duration::from_millis(370),
        "gave up early: {:?}",
        r.elapsed
    );
    r.assert_within(
        Duration::from_millis(400) + TOLERANCE,
        "answered later than the budget",
    );
}

#[test]
fn a_keyed_write_whose_answer_is_lost_on_the_way_back_is_retried_and_written_once() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let resident = acme.resident("Ada");
    // The real billing (and the community it calls) beside the app, behind
    // a proxy that loses billing's first answer to a POST after the work
    // was done and committed.
    let community = SpinApp::community_beside(&app);
    let billing = SpinApp::service_beside_calling(
        &app,
        "billing",
        &[("community_url", community.url().to_owned())],
    );
    let target = billing.url().to_owned();
    let lost = Arc::new(AtomicBool::new(false));
    let proxy = {
        let lost = lost.clone();
        StandIn::start(move |r| StandInReply::Forward {
            to: target.clone(),
            lose_answer: r.method() == "POST" && !lost.swap(true, Ordering::SeqCst),
        })
    };
    let app = app.restart_with(SpinOptions::default().variable("billing_url", proxy.url()));
    let r = acme
        .post("/invoices")
        .key("lost-answer-1")
        .json(&invoice(&resident, 4_200));
    assert_eq!(r.status, 201, "{}\n{}", r.body, app.logs());
    assert_eq!(
        r.header("idempotent-replayed"),
        Some("true"),
        "the retry got the stored answer"
    );
    let posts = proxy
        .received()
        .iter()
        .filter(|r| r.method() == "POST")
        .count();
    assert_eq!(posts, 2, "the lost answer was retried once");
    let written = acme.list("/invoices");
    assert_eq!(written.len(), 1, "one invoice: {written:?}");
    assert_eq!(written[0]["amount_cents"], 4_200);
}

#[test]
fn a_failing_community_is_retried_by_billing_alone() {
    let (app, acme) = SpinApp::with_tenant("acme");
    let resident = acme.resident("Ada");
    let down = StandIn::start(|_| StandInReply::Json(503, "{}".into()));
    let _app = app.restart_with(SpinOptions::default().variable("community_url", down.url()));
    let r = acme
        .post("/invoices")
        .key("one-layer-1")
        .json(&invoice(&resident, 1_000));
    let body = r.assert_problem(502, "upstream_unavailable");
    assert_eq!(body["retryable"], true);
    // Billing, next to the failure, made its three attempts; the gateway
    // took billing's answer as final and did not multiply them.
    assert_eq!(
        down.count("/internal/residents/"),
        3,
        "{:?}",
        down.received()
    );
    assert_eq!(r.attempts_beyond_resolution(), Some(1), "1 forward");
    assert!(acme.list("/invoices").is_empty(), "nothing written");
}

#[test]
fn a_statement_behind_a_held_lock_gives_up_at_the_services_work_deadline() {
    let (app, acme) = SpinApp::with_tenant("acme");
    assert!(acme.list("/invoices").is_empty()); // billing migrated
    let resident = acme.resident("Ada");
    let holder = rusqlite::Connection::open(app.database("billing")).expect("billing.db");
    holder.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    // Billing's file writes ahead (migration 0004): a read does not wait
    // for the writer, a write does.
    let read = acme
        .get("/invoices")
        .header("x-meridian-timeout-ms", "600")
        .send();
    assert_eq!(
        read.status, 200,
        "a read beside a held write lock: {}",
        read.body
    );
    let r = acme
        .post("/invoices")
        .key("behind-the-lock")
        .header("x-meridian-timeout-ms", "600")
        .json(&invoice(&resident, 1_000));
    holder.execute_batch("ROLLBACK").expect("unlock");
    let body = r.assert_problem(504, "deadline_exceeded");
    // Billing stopped waiting with its answer reserve left, so the 504 is
    // its own, not the gateway's timer cutting it off — or, where billing's
    // answer lost that race on a loaded machine, billing's log shows it
    // gave up on its own deadline.
    assert!(
        app.own_504("billing", &body).is_some(),
        "{body}\n{}",
        app.logs()
    );
    r.assert_within(
        Duration::from_millis(600) + TOLERANCE,
        "answered later than the budget",
    );
    assert!(acme.list("/invoices").is_empty());
}

/// Sends `head` (and `body`, if any) over a raw connection and returns the
/// status code and the time from the head to the answer.
fn raw_exchange(app: &SpinApp, head: &str, body: &[u8]) -> (u16, String, Duration) {
    let addr = app.url().trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    stream.write_all(head.as_bytes()).expect("head");
    // The body may be refused before all of it is sent.
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let mut elapsed = None;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                elapsed.get_or_insert_with(|| started.elapsed());
                answer.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&answer);
                if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                    let length = head.lines().find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    });
                    if length.is_some_and(|n| rest.len() >= n) {
                        break;
                    }
                }
            }
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text, elapsed.unwrap_or_else(|| started.elapsed()))
}

#[test]
fn a_body_declared_too_large_is_refused_before_it_is_sent() {
    let app = SpinApp::start();
    let head = "POST /v1/acme/invoices HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
                content-type: application/json\r\ncontent-length: 2000000\r\n\r\n";
    let (status, text, _) = raw_exchange(&app, head, b"");
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("payload_too_large"), "{text}");
}

#[test]
fn an_undeclared_body_is_cut_off_past_the_limit() {
    let app = SpinApp::start();
    let head = "POST /v1/acme/invoices HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
                content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    let chunk = vec![b' '; 64 * 1024];
    let mut body = Vec::new();
    for _ in 0..17 {
        body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        body.extend_from_slice(&chunk);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let (status, text, _) = raw_exchange(&app, head, &body);
    assert_eq!(status, 413, "{text}");
}

#[test]
fn a_slow_upload_spends_the_budget_like_slow_work() {
    let app = SpinApp::start();
    let head = "POST /v1/acme/invoices HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
                content-type: application/json\r\nx-meridian-timeout-ms: 300\r\n\
                content-length: 100\r\n\r\n{\"resident_id\":";
    // Ten bytes of a hundred, then nothing: the budget runs from arrival.
    let (status, text, elapsed) = raw_exchange(&app, head, b"");
    assert_eq!(status, 504, "{text}");
    assert!(text.contains("\"hop\":\"gateway\""), "{text}");
    assert!(
        elapsed <= Duration::from_millis(300) + TOLERANCE,
        "answered after {elapsed:?}"
    );
}

#[test]
fn a_downstream_answer_that_is_not_meridians_never_reaches_the_client() {
    let (app, acme) = SpinApp::with_tenant("acme");
    // (what billing's place answers, what the client must get, attempts):
    // a trap's 500 is final; a proxy's bare 502 is transient, so retried.
    let cases = [
        (
            500,
            "text/plain",
            "Internal Server Error",
            500,
            "internal",
            1,
        ),
        (
            502,
            "text/html",
            "<h1>bad gateway</h1>",
            502,
            "upstream_unavailable",
            3,
        ),
    ];
    let mut app = Some(app);
    for (status, kind, raw, want, code, attempts) in cases {
        let stand_in = StandIn::start(move |_| StandInReply::Raw(status, kind, raw.into()));
        let restarted = app
            .take()
            .unwrap()
            .restart_with(SpinOptions::default().variable("billing_url", stand_in.url()));
        let r = acme.get("/invoices").send();
        r.assert_problem(want, code);
        assert!(
            !r.body.contains(raw),
            "{kind} body passed through: {}",
            r.body
        );
        assert_eq!(stand_in.count("/v1/"), attempts, "{kind}");
        app = Some(restarted);
    }
}
