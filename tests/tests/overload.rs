//! Overload and tenant limits on a real `spin up`: a tenant over its rate
//! is refused with 429 and the rate headers while another is served, the
//! platform admin's override takes effect, a tenant at its limit of
//! requests in progress is refused while another is served, and the
//! failure memory never turns a partial failure into a worse one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use meridian_e2e::{load, ReceivedExt, SpinApp, SpinOptions, StandIn, StandInReply, ADMIN_TOKEN};

#[test]
fn a_tenant_over_its_rate_gets_a_429_and_another_tenant_does_not() {
    let app = SpinApp::start_with(SpinOptions::default().variable("tenant_rate_limit", "5/30s"));
    let flood = app.tenant("flood");
    let quiet = app.tenant("quiet");
    // Creating the tenant spent none of its quota (no resolution ran).
    let mut answers = Vec::new();
    for _ in 0..8 {
        answers.push(flood.get("/residents").send());
    }
    let ok = answers.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok, 5, "5 in any 30 s");
    let refused = answers.last().unwrap();
    let problem = refused.assert_problem(429, "rate_limited");
    assert_eq!(problem["retryable"], true);
    let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "Retry-After {wait}");
    assert_eq!(
        refused.header("ratelimit-policy"),
        Some("\"tenant\";q=5;w=30")
    );
    assert!(refused
        .header("ratelimit")
        .unwrap()
        .starts_with("\"tenant\";r=0;t="));
    // The quiet tenant has its own quota.
    let r = quiet.get("/residents").send();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("ratelimit-policy"), Some("\"tenant\";q=5;w=30"));
    // The platform admin raises the flooding tenant's quota: in force at once.
    let client = app.client();
    let admin = [("authorization", format!("Bearer {ADMIN_TOKEN}"))];
    let admin: Vec<(&str, &str)> = admin.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let r = client.send(
        "PUT",
        "/ops/tenants/flood/limits",
        &admin,
        Some(r#"{"quota":100,"window_s":30}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["source"], "override");
    let r = flood.get("/residents").send();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("ratelimit-policy"), Some("\"tenant\";q=100;w=30"));
    // A tenant token is not the admin's.
    let r = client.send(
        "GET",
        "/ops/tenants/flood/limits",
        &[("authorization", &format!("Bearer {}", flood.token))],
        None,
    );
    r.assert_problem(401, "unauthorized");
}

/// A community stand-in that answers every list after 1.5 s: requests
/// that hold their tenant's slots.
fn slow_community() -> StandIn {
    StandIn::start(|_| StandInReply::Delayed {
        delay: std::time::Duration::from_millis(1_500),
        status: 200,
        headers: Vec::new(),
        body: r#"{"items":[],"next_cursor":null}"#.into(),
    })
}

/// Stripe's concurrent-request limiter on real Spin: with two of a
/// tenant's requests in progress (community answering slowly), the rest
/// of its burst is refused with a 429 before any forward; another tenant
/// is served meanwhile; once they end, the tenant is served again (its
/// slots were left).
#[test]
fn a_tenant_at_its_limit_of_requests_in_progress_gets_a_429_and_another_tenant_does_not() {
    let app = SpinApp::start_with(SpinOptions::default().variable("tenant_concurrency_limit", "2"));
    let flood = app.tenant("flood");
    let quiet = app.tenant("quiet");
    let community = slow_community();
    let app = app.restart_with(
        SpinOptions::default()
            .variable("tenant_concurrency_limit", "2")
            .variable("community_url", community.url()),
    );
    let (burst, other) = std::thread::scope(|s| {
        let burst: Vec<_> = (0..6)
            .map(|_| s.spawn(|| flood.get("/residents").send()))
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let other = quiet.get("/residents").send();
        let burst: Vec<_> = burst.into_iter().map(|t| t.join().unwrap()).collect();
        (burst, other)
    });
    assert_eq!(other.status, 200, "the other tenant: {}", other.body);
    let served = burst.iter().filter(|r| r.status == 200).count();
    assert!((1..=2).contains(&served), "served {served} of the burst");
    let refused: Vec<_> = burst.iter().filter(|r| r.status != 200).collect();
    assert!(
        refused.len() >= 4,
        "{:?}",
        burst.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in refused {
        let problem = r.assert_problem(429, "rate_limited");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("requests in progress"),
            "{problem}"
        );
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    let forwards = community
        .received()
        .iter()
        .filter(|r| r.url().contains("/flood/"))
        .count();
    assert_eq!(forwards, served, "refused before any forward");
    let r = flood.get("/residents").send();
    assert_eq!(r.status, 200, "its slots were left: {}", r.body);
    drop(app);
}

/// A caller identity vouched for (its resolution remembered) whose tenant
/// has no slot free is refused before anything is spent on it: its 429s
/// while the tenant's two slots are held take nothing of the tenant's
/// rate (the `RateLimit` header's remaining count is the same for all:
/// none of them counted).
#[test]
fn a_vouched_callers_429s_at_the_limit_spend_none_of_its_rate() {
    let options = || {
        SpinOptions::default()
            .variable("tenant_concurrency_limit", "2")
            .variable("tenant_rate_limit", "1000/60s")
    };
    let app = SpinApp::start_with(options());
    let acme = app.tenant("acme");
    let community = slow_community();
    let app = app.restart_with(options().variable("community_url", community.url()));
    let refused = std::thread::scope(|s| {
        let held: Vec<_> = (0..2)
            .map(|_| s.spawn(|| acme.get("/residents").send()))
            .collect();
        // Both forwarded (their resolutions remembered), then three more.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let forwarded = || {
            let received = community.received();
            received
                .iter()
                .filter(|r| r.url().contains("/acme/"))
                .count()
        };
        while forwarded() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // At once: each refusal is held a second, longer than a slot.
        let refused: Vec<_> = (0..3)
            .map(|_| s.spawn(|| acme.get("/residents").send()))
            .collect();
        let refused: Vec<_> = refused.into_iter().map(|t| t.join().unwrap()).collect();
        for t in held {
            assert_eq!(t.join().unwrap().status, 200);
        }
        refused
    });
    let remaining: Vec<Option<String>> = refused
        .iter()
        .map(|r| {
            r.assert_problem(429, "rate_limited");
            // `"tenant";r=<remaining>;t=<seconds>`: the count alone.
            r.header("ratelimit")
                .and_then(|h| h.split(';').find(|p| p.starts_with("r=")))
                .map(str::to_owned)
        })
        .collect();
    assert!(remaining[0].is_some(), "{remaining:?}");
    assert!(
        remaining.windows(2).all(|w| w[0] == w[1]),
        "a refusal at the limit spends no count: {remaining:?}"
    );
    drop(app);
}

/// A client with as many connections as its tenant's limit, each sending
/// again as soon as it is answered, is never refused: a request leaves
/// its slot before its answer is sent, not after.
#[test]
fn a_client_with_as_many_connections_as_the_limit_is_never_refused() {
    let app = SpinApp::start_with(SpinOptions::default().variable("tenant_concurrency_limit", "2"));
    let acme = app.tenant("acme");
    let statuses = load::on_threads(2, 80, || acme.get("/residents").send().status);
    assert_eq!(statuses.len(), 80);
    let refused: Vec<&u16> = statuses.iter().filter(|&&s| s != 200).collect();
    assert!(refused.is_empty(), "{refused:?}");
}

/// A community stand-in that answers 503 to a fixed 30 % of its calls, in
/// an order drawn from `seed` (a run's calls see the same order whether
/// the memory is on or off).
fn partly_failing(seed: Arc<AtomicU64>) -> StandIn {
    let calls = Arc::new(AtomicU64::new(0));
    StandIn::start(move |r| {
        if r.url().starts_with("/internal/reset") {
            calls.store(0, Ordering::SeqCst);
            return StandInReply::Json(200, "{}".into());
        }
        let n = calls.fetch_add(1, Ordering::SeqCst);
        // SplitMix64 of (seed, call number): an even, repeatable draw.
        let mut z = seed
            .load(Ordering::SeqCst)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(n.wrapping_mul(0xBF58_476D_1CE4_E5B9));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        if z % 100 < 30 {
            StandInReply::Json(503, "{}".into())
        } else {
            StandInReply::Json(200, r#"{"items":[],"next_cursor":null}"#.into())
        }
    })
}

/// A sequential client: 120 reads one after another, community failing
/// 30 % of calls. In every one of 20 fresh runs (each against a stand-in of
/// its own, the failure memory forgotten first — it is community's,
/// whatever its URL, and a restart alone would not empty a store that
/// persists, as a hosted platform's does), the memory on serves at least 112 of the 120, and at
/// least as many as off on the same draw of failures: the breaker never
/// trips on a partial failure, and a quiet client's retries (120 reads at
/// 30 % need about 50) fit the retry budget's floor of 10 a second (100
/// per 10 s window, Finagle's `minRetriesPerSec`), where 20 % of its first
/// attempts alone would allow 24. A busy caller meets the 20 % itself
/// (docs/benchmarks.md: 1.2 attempts per request at 30 % failing).
#[test]
fn a_sequential_client_at_30_percent_failures_does_no_worse_with_the_failure_memory() {
    const RUNS: u64 = 20;
    const READS: usize = 120;
    const AT_LEAST: usize = 112;
    let seed = Arc::new(AtomicU64::new(0));
    // The tenant's rate limit off: 240 reads of one tenant in a few
    // seconds are not what this measures (where the counts outlive a
    // restart — PostgreSQL's, in the Akamai profile — the off run's reads
    // would count against the on run's).
    let options = |stand_in: &StandIn, memory: &str| {
        SpinOptions::default()
            .variable("community_url", stand_in.url())
            .variable("failure_memory", memory)
            .variable("tenant_rate_limit", "off")
    };
    let mut app = SpinApp::start_with(SpinOptions::default().variable("failure_memory", "off"));
    let acme = app.tenant("acme");
    let mut worse = Vec::new();
    for run in 0..RUNS {
        seed.store(run + 1, Ordering::SeqCst);
        let stand_in = partly_failing(seed.clone());
        let reset = || {
            let _ = ureq::get(&format!("{}/internal/reset", stand_in.url())).call();
        };
        let mut succeeded = [0usize; 2];
        // How each failed read of the memory-on run was answered.
        let mut failed_on = Vec::new();
        for (i, memory) in ["off", "on"].into_iter().enumerate() {
            app = app.restart_with(options(&stand_in, memory));
            app.forget_failure_memory();
            reset();
            for _ in 0..READS {
                let r = acme.get("/residents").send();
                if r.status == 200 {
                    succeeded[i] += 1;
                } else if memory == "on" {
                    failed_on.push(format!(
                        "{} {} attempts {:?} refused {:?}",
                        r.status,
                        r.json()["code"],
                        r.header("x-meridian-attempts"),
                        r.header("x-meridian-retries-refused")
                    ));
                }
            }
        }
        let [off, on] = succeeded;
        if on < off || on < AT_LEAST {
            worse.push((run, off, on, failed_on));
        }
    }
    assert!(
        worse.is_empty(),
        "(run, successes off, successes on, the failed reads on) where the memory did worse than off or served under {AT_LEAST} of {READS}: {worse:?}"
    );
}

/// The shared store's windows (the tenant's rate, the throttle's route and
/// tenant windows, the failure memory's calls) are keyed by window number.
/// However far apart a tenant's requests come, the store keeps at most the
/// last two windows of each: the key-value store of a long-running
/// deployment (Redis, on a cluster) must not grow with every request of a
/// quiet tenant.
#[test]
fn sparse_traffic_leaves_at_most_two_windows_of_each_count_in_the_store() {
    let app = SpinApp::start_with(
        SpinOptions::default()
            // Windows of a second, and every first attempt written, so
            // that requests 3 s apart each open new windows of every kind.
            .variable("tenant_rate_limit", "1000/1s")
            .variable("failure_window_ms", "1000")
            .variable("failure_memory_sample", "1")
            .key_value_file(),
    );
    let acme = app.tenant("acme");
    for i in 0..5 {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(3_100));
        }
        let r = acme.get("/residents").send();
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let keys = app.key_value_keys();
    // A window's key names its number (epoch milliseconds over the
    // window's length: at least ten digits); the rest names the count.
    let mut families = std::collections::BTreeMap::<String, Vec<&str>>::new();
    for key in &keys {
        let segments: Vec<&str> = key.split('/').collect();
        let Some(at) = segments
            .iter()
            .position(|s| s.len() >= 9 && s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let mut family = segments.clone();
        family[at] = "*";
        families
            .entry(family.join("/"))
            .or_default()
            .push(segments[at]);
    }
    assert!(
        families
            .keys()
            .any(|f| f.starts_with("meridian/rate/acme/")),
        "the rate window was counted: {keys:?}"
    );
    let crowded: Vec<_> = families
        .iter()
        .filter(|(_, windows)| windows.len() > 2)
        .collect();
    assert!(
        crowded.is_empty(),
        "counts kept for more than two windows: {crowded:?}"
    );
}
