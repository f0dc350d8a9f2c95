//! Meridian behind its front proxy (`deploy/haproxy/haproxy.cfg`, Debian's
//! HAProxy 2.6): a short flood ends in the proxy's cheap 503s, not in
//! answers later than their budget. The proxy caps the requests at Spin,
//! queues the rest for as long as a served request can still finish in
//! time (derived from a measurement of the app at the cap, not guessed),
//! and stamps the arrival, which the gateway trusts (`admission =
//! "proxy"`: the proxy bounds the work, so the gateway does not shed it a
//! second time).

use std::time::Duration;

use meridian_e2e::load::{self, Target};
use meridian_e2e::proxy::{self, Proxy, ProxySettings};
use meridian_e2e::{SpinApp, SpinOptions};

/// The budget every request of the flood carries.
const BUDGET: Duration = Duration::from_millis(100);
/// How much later than its budget an answer may reach the client (the
/// suite's tolerance everywhere).
const TOLERANCE: Duration = Duration::from_millis(10);
/// The caps tried: the proxy's is the one at which the app itself serves
/// the most within the budget (docs/deploy.md, "Behind a front proxy"),
/// which depends on the layout (PostgreSQL's requests take longer).
const CAPS: [u32; 3] = [2, 4, 8];

/// One answer: status, time at the client, and, when the proxy refused
/// it, whether that was its problem document with a `Retry-After`.
struct Answer {
    status: u16,
    elapsed: Duration,
    by_proxy: bool,
    proxy_problem: bool,
}

/// `connections` clients, each sending its next request as soon as the
/// last is answered, for `run` (the harness's closed loop).
fn closed_loop(
    base: &str,
    path: &str,
    token: &str,
    connections: usize,
    run: Duration,
) -> Vec<Answer> {
    let budget = u64::try_from(BUDGET.as_millis()).unwrap_or(u64::MAX);
    let target = Target::as_caller(base, path, token, budget);
    load::closed_loop(&target, connections, run, |r| {
        let header = |name: &str| r.headers().get(name).and_then(|v| v.to_str().ok());
        let by_proxy = header("x-meridian-refused-by") == Some("proxy");
        let proxy_problem = by_proxy
            && r.status() == 503
            && header("retry-after") == Some("1")
            && serde_json::from_slice::<serde_json::Value>(r.body())
                .is_ok_and(|v| v["code"] == "overloaded");
        (by_proxy, proxy_problem)
    })
    .into_iter()
    .filter_map(|sample| {
        let (by_proxy, proxy_problem) = sample.kept?;
        Some(Answer {
            status: sample.status,
            elapsed: sample.latency,
            by_proxy,
            proxy_problem,
        })
    })
    .collect()
}

fn percentile(mut times: Vec<Duration>, p: usize) -> Duration {
    times.sort();
    let at = (times.len() * p / 100).min(times.len().saturating_sub(1));
    times.get(at).copied().unwrap_or_default()
}

#[test]
fn a_flood_behind_the_proxy_ends_in_its_503s_not_in_late_answers() {
    assert!(
        proxy::available(),
        "haproxy is not installed (scripts/test.sh installs Debian's package)"
    );
    let app = SpinApp::start_with(
        SpinOptions::default()
            .variable("admission", "proxy")
            .variable("trust_request_start", "on")
            .variable("tenant_rate_limit", "off")
            .variable("tenant_concurrency_limit", "10000"),
    );
    let acme = app.tenant("acme");
    acme.resident("Ada");
    let path = acme.path("/residents?limit=20");
    // The cap: where the app itself serves the most within the budget.
    // The queue's timeout: the budget, less what a served request takes at
    // the cap (its p99, measured here), less the tolerance for the answer's
    // way back; its length, what the cap serves in that wait.
    let (cap, at_cap) = CAPS
        .iter()
        .map(|&cap| {
            let answers = closed_loop(
                app.url(),
                &path,
                &acme.token,
                cap as usize,
                Duration::from_secs(1),
            );
            (cap, answers)
        })
        .max_by_key(|(_, answers)| {
            answers
                .iter()
                .filter(|a| a.status == 200 && a.elapsed <= BUDGET)
                .count()
        })
        .expect("a cap");
    let served: Vec<Duration> = at_cap
        .iter()
        .filter(|a| a.status == 200)
        .map(|a| a.elapsed)
        .collect();
    assert!(!served.is_empty(), "nothing served at the cap");
    let (p50, service) = (percentile(served.clone(), 50), percentile(served, 99));
    let settings = ProxySettings::derived(BUDGET, cap, p50, service);
    let queue = settings.queue;
    let proxy = Proxy::start(app.url(), settings);

    // More clients than the cap and the queue hold, by 64.
    let clients = (settings.cap + settings.max_queue) as usize + 64;
    let answers = closed_loop(
        &proxy.url(),
        &path,
        &acme.token,
        clients,
        Duration::from_secs(2),
    );
    let total = answers.len();
    let in_time = answers
        .iter()
        .filter(|a| a.status == 200 && a.elapsed <= BUDGET)
        .count();
    let late: Vec<(u16, u128)> = answers
        .iter()
        .filter(|a| a.elapsed > BUDGET + TOLERANCE)
        .map(|a| (a.status, a.elapsed.as_millis()))
        .collect();
    let by_proxy = answers.iter().filter(|a| a.by_proxy).count();
    let mut other = std::collections::BTreeMap::<u16, usize>::new();
    for a in answers.iter().filter(|a| a.status != 200 && !a.by_proxy) {
        *other.entry(a.status).or_default() += 1;
    }
    let summary = format!(
        "{clients} clients; at the cap of {cap}: p50 {p50:?}, p99 {service:?}, so a queue of {queue:?} for at most {} \
         requests; the flood: {total} answers, \
         {in_time} 200 within the budget, {by_proxy} the proxy's 503, the app's other answers \
         {other:?} (a 504: its budget, from the proxy's stamp, too short for the route), {} late \
         (status, ms) {late:?}",
        settings.max_queue,
        late.len(),
    );
    eprintln!("{summary}");
    assert!(by_proxy > 0, "the flood was past the cap: {summary}");
    assert!(
        answers
            .iter()
            .filter(|a| a.by_proxy)
            .all(|a| a.proxy_problem),
        "every refusal of the proxy is its 503 problem with Retry-After: {summary}"
    );
    // A stall of the machine (a shared CI runner, say) makes every answer
    // in flight late at once; one such round, an answer per client, is
    // allowed beside 1 % of the answers. A queue that waits longer than
    // the budget makes most answers late.
    assert!(
        late.len() <= total / 100 + clients,
        "more answers later than the budget than 1 % and one round of the clients: {summary}"
    );
    // The overload ends in the proxy's cheap refusals, not passed on to
    // the gateway: a queue that waits the whole budget hands Spin requests
    // with too little left, and the flood ends in the gateway's 504s
    // instead (measured: 3,561-3,718 504s against 31-85 of the proxy's
    // 503s; with the derived queue 95-616 against 1,904-2,428, the slower
    // layouts included).
    let too_late_to_serve = other.get(&504).copied().unwrap_or(0);
    assert!(
        too_late_to_serve < by_proxy,
        "more of the flood was passed on too late to serve (the gateway's 504s) than refused by the proxy: {summary}"
    );
    // Goodput through the flood's 2 s at least a third of the app's own
    // rate at the cap (its 1 s): the proxy's refusals leave the app its
    // work (on 2 cores the flood's clients and the proxy share the CPU).
    let at_cap_served = at_cap
        .iter()
        .filter(|a| a.status == 200 && a.elapsed <= BUDGET)
        .count();
    assert!(
        in_time * 3 >= at_cap_served * 2,
        "the flood's goodput fell below a third of the rate at the cap ({at_cap_served} a second): {summary}"
    );
}

/// Slow request heads cannot take the proxy's connections: with as many
/// clients as it accepts each sending its request's head a line at a time
/// (never silent long enough for `timeout client`), the proxy answers each
/// one 408 once `timeout http-request` has passed, and another client is
/// served at once after. Without that timeout the trickling heads held
/// every connection for as long as they trickled.
#[test]
fn slow_request_heads_do_not_starve_other_clients() {
    use std::io::Write;
    use std::time::Instant;
    assert!(
        proxy::available(),
        "haproxy is not installed (scripts/test.sh installs Debian's package)"
    );
    let app = SpinApp::start();
    let settings = ProxySettings {
        cap: 4,
        queue: Duration::from_millis(500),
        max_queue: 8,
    };
    // 16 connections at once, a head in full within 1 s.
    let proxy = Proxy::start_with(
        app.url(),
        settings,
        &[
            ("MERIDIAN_PROXY_CONNECTIONS", "16".to_owned()),
            ("MERIDIAN_PROXY_HEAD_MS", "1000".to_owned()),
        ],
    );
    let port = proxy.port();
    let trickling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let slow: Vec<_> = (0..16)
        .map(|_| {
            let trickling = trickling.clone();
            let mut stream =
                std::net::TcpStream::connect(("127.0.0.1", port)).expect("a slow client");
            std::thread::spawn(move || {
                let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: meridian\r\n");
                // A header line every 200 ms for 8 s, ignoring the closed
                // connection the proxy leaves it.
                for i in 0..40 {
                    if !trickling.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let _ = stream.write_all(format!("x-slow-{i}: 1\r\n").as_bytes());
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let served = meridian_e2e::Client::new(&proxy.url()).get("/healthz");
    let waited = started.elapsed();
    trickling.store(false, std::sync::atomic::Ordering::Relaxed);
    slow.into_iter()
        .for_each(|t| t.join().expect("a slow client"));
    assert_eq!(served.status, 200, "{}", served.body);
    assert!(
        waited < Duration::from_millis(2_500),
        "another client waited {waited:?} behind the slow heads"
    );
    drop(app);
}
