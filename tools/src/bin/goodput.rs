//! Goodput under overload (docs/overload.md): answers
//! that reached the client as a 200 within their budget, per second,
//! against load, Meridian beside the floor app in the same run.
//!
//! Run: `cargo run -p meridian-tools --release --bin goodput -- [--seconds S]
//! [--stamp] [--concurrency] [--pinned-variables] [--only closed,open,recovery,quiet]
//! [--slice]` after building
//! the release components (scripts/bench.sh does both). `--stamp` runs
//! Meridian as behind a front proxy: `trust_request_start` on, and every
//! request stamped with `X-Request-Start` when it arrived (in a closed
//! loop as it is sent; in the open loop when it was due, as a proxy with
//! a pool of connections stamps it before it waits for one). `--concurrency`
//! runs the one-tenant curves with the tenant's concurrency limit at its
//! default of 8 and its rate limit off (without it both are off, and what
//! holds goodput is the throttle alone; at the default 100 a second, the
//! rate limit would be all a one-tenant curve measured).
//! `--pinned-variables` runs Meridian with its variables pinned in a static
//! provider (docs/configuration.md), which spares the runtime's blocking
//! pool the environment lookups. `--proxy` puts Meridian and the floor app
//! each behind its own HAProxy with the same settings
//! (`deploy/haproxy/haproxy.cfg`; Meridian with `admission = "proxy"` and
//! `trust_request_start` on, the proxy stamping the arrival): per budget,
//! the cap is the connections at which Meridian's goodput peaks directly
//! (4, 8 or 16, 2 s each), the queue's timeout the budget less its p99 at
//! the cap less 10 ms, and the queue's length what the cap serves in that
//! wait (`ProxySettings::derived`); the closed loop then adds 16
//! connections. Writes
//! `target/bench/goodput.json`.
//!
//! - closed loop: 1 to 256 connections, each sending its next request as
//!   soon as the last is answered (keep-alive), budgets 100 and 300 ms;
//! - open loop: arrivals at 1×, 2×, 4× and 8× Meridian's measured peak
//!   goodput, timed from when each request was due (a late send counts);
//! - a quiet tenant at 20 requests/s, alone for 2 s and then beside a
//!   tenant flooding with 64 connections (judged on its requests beside
//!   the flood; the flood's first second and the rest also shown apart);
//! - recovery: goodput in 2 s windows at 8 connections after 15 s at 256,
//!   Meridian's and then the floor's, with the runtime's threads;
//! - the breaker's `circuit_open` events during all of it, and the wasted
//!   work: statements run for requests that ended in a 504.
//!
//! `--slice` is the test command's bounded run: it checks only what holds
//! on any machine (a short flood never opens the breaker on a healthy
//! downstream, a tenant over its limit gets its 429, a quiet tenant's
//! requests beside a flood succeed) and prints one result line.

use std::collections::{BTreeMap, HashSet};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{ensure, Context, Result};
use meridian_e2e::api::{add_resident, TenantClient};
use meridian_e2e::load::{self, Connection, Target};
use meridian_e2e::proxy::{Proxy, ProxySettings};
use meridian_e2e::{repo_root, SpinApp, SpinOptions};
use meridian_tools::Sorted;
use serde_json::json;

/// The read every load sends: `tenant`'s first page of residents, at
/// `base`, as its admin, with a budget of `budget_ms`.
fn residents(base: &str, tenant: &TenantClient, budget_ms: u64) -> Target {
    Target::as_caller(
        base,
        &tenant.path("/residents?limit=20"),
        &tenant.token,
        budget_ms,
    )
}

/// `target` as a front proxy sends it, stamped on arrival (`--stamp`).
fn stamped(target: Target, stamp: bool) -> Target {
    Target { stamp, ..target }
}

/// One answer: its status, how long it took from when it was due, and
/// when (since the run started) it ended.
type Sample = load::Sample<()>;

/// A closed loop: `connections` clients, each sending again as soon as it
/// is answered, for `seconds` (the harness's, on hyper's client).
fn closed(target: &Target, connections: usize, seconds: f64) -> Vec<Sample> {
    load::closed_loop(
        target,
        connections,
        Duration::from_secs_f64(seconds),
        |_| (),
    )
}

/// An open loop: requests due every `1/rate` s for `seconds`, taken by
/// `workers` connections; latency runs from when a request was due, so a
/// request that waited for a free connection counts its wait. Stamped,
/// a request carries when it was due: a front proxy stamps a request when
/// it arrives, before it waits for one of its connections to Meridian.
fn open(target: &Target, rate: f64, seconds: f64, workers: usize) -> Vec<Sample> {
    let start = Instant::now();
    let wall = SystemTime::now();
    let (tx, rx) = mpsc::channel::<Instant>();
    let rx = Arc::new(Mutex::new(rx));
    let samples = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            let rx = rx.clone();
            let samples = &samples;
            s.spawn(move || {
                let mut connection = Connection::new();
                let mut mine = Vec::new();
                while let Some(due) = rx.lock().ok().and_then(|r| r.recv().ok()) {
                    let answer = connection.send(target, wall + (due - start));
                    let now = Instant::now();
                    mine.push(Sample {
                        status: answer.as_ref().map_or(0, |a| a.status().as_u16()),
                        latency: now - due,
                        ended: now - start,
                        kept: answer.map(drop),
                    });
                }
                samples.lock().map(|mut s| s.extend(mine)).ok();
            });
        }
        let n = (rate * seconds) as u64;
        for i in 0..n {
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if tx.send(due).is_err() {
                break;
            }
        }
        drop(tx);
    });
    samples.into_inner().unwrap_or_default()
}

/// How long the quiet tenant runs alone before the flood starts.
const QUIET_LEAD: Duration = Duration::from_secs(2);

/// Goodput in each 2 s window of a 10 s run, by when answers ended.
fn windows(samples: &[Sample], budget: Duration) -> Vec<f64> {
    (0..5)
        .map(|w| {
            let (from, to) = (Duration::from_secs(w * 2), Duration::from_secs(w * 2 + 2));
            samples
                .iter()
                .filter(|s| s.ended >= from && s.ended < to && s.in_time(budget))
                .count() as f64
                / 2.0
        })
        .collect()
}

/// 200s within `budget`, per second of `seconds`.
fn goodput(samples: &[Sample], budget: Duration, seconds: f64) -> f64 {
    samples.iter().filter(|s| s.in_time(budget)).count() as f64 / seconds
}

fn statuses(samples: &[Sample]) -> BTreeMap<u16, usize> {
    let mut out = BTreeMap::new();
    for s in samples {
        *out.entry(s.status).or_default() += 1;
    }
    out
}

/// The p99 latency of the answers that were 200s, ms.
fn p99_ok(samples: &[Sample]) -> f64 {
    percentile_ok(samples, 0.99)
}

/// A percentile (0–1) of the latency of the answers that were 200s, ms.
fn percentile_ok(samples: &[Sample], p: f64) -> f64 {
    percentile(samples.iter().filter(|s| s.status == 200), p)
}

/// A percentile (0–1) of `samples`' latency, ms (0 when there are none).
fn percentile<'s>(samples: impl Iterator<Item = &'s Sample>, p: f64) -> f64 {
    let ms = Sorted::new(samples.map(|s| s.latency.as_secs_f64() * 1e3));
    if ms.is_empty() {
        return 0.0;
    }
    ms.at(p)
}

/// Behind a proxy: the cap and the queue's timeout for `budget`, derived
/// from `target` (the app itself): the cap is the connections, of 4, 8
/// and 16, at which its goodput peaks; the queue leaves a request let
/// through at its end the p99 of a served request at the cap, and 10 ms
/// for the answer's way back.
fn proxy_settings(target: &Target, budget: Duration) -> ProxySettings {
    let mut best = (0.0, 8usize, Vec::new());
    for c in [4usize, 8, 16] {
        let m = closed(target, c, 2.0);
        let g = goodput(&m, budget, 2.0);
        if g > best.0 {
            best = (g, c, m);
        }
    }
    let (_, cap, samples) = best;
    let ms = |p: f64| Duration::from_secs_f64(percentile_ok(&samples, p) / 1e3);
    ProxySettings::derived(budget, u32::try_from(cap).unwrap_or(8), ms(0.5), ms(0.99))
}

fn p99(samples: &[Sample]) -> f64 {
    percentile(samples.iter(), 0.99)
}

/// The app under test, with `tenants` each holding 20 residents.
fn meridian(options: SpinOptions, tenants: &[&str]) -> (SpinApp, Vec<TenantClient>) {
    let app = SpinApp::start_with(options.sound_secrets());
    let client = app.client();
    let made = tenants
        .iter()
        .map(|slug| {
            let t = app.tenant(slug);
            for i in 0..20 {
                add_resident(&client, &t, &format!("Resident {i}"));
            }
            t
        })
        .collect();
    (app, made)
}

/// Gateway events of `kind` so far.
fn events(app: &SpinApp, kind: &str) -> usize {
    app.log_lines("gateway")
        .iter()
        .filter(|l| l["event"] == kind)
        .count()
}

/// Statements run by the services for requests the gateway answered 504,
/// and all statements, from the request lines.
fn wasted(app: &SpinApp) -> (u64, u64) {
    let expired: HashSet<String> = app
        .log_lines("gateway")
        .iter()
        .filter(|l| l["status"] == 504)
        .filter_map(|l| l["request_id"].as_str().map(str::to_owned))
        .collect();
    let mut total = 0;
    let mut wasted = 0;
    for line in ["identity", "community"]
        .iter()
        .flat_map(|c| app.log_lines(c))
    {
        let n = line["statements"].as_u64().unwrap_or(0);
        total += n;
        if line["request_id"]
            .as_str()
            .is_some_and(|id| expired.contains(id))
        {
            wasted += n;
        }
    }
    (wasted, total)
}

struct Args {
    seconds: f64,
    slice: bool,
    /// Meridian trusts `X-Request-Start` and the load stamps it, as a
    /// front proxy would (the floor app ignores it).
    stamp: bool,
    /// The one-tenant curves run with the tenant's concurrency limit at
    /// its default (its rate limit off: at its default 100 a second, the
    /// rate would be all the curves measured), not with both off.
    concurrency: bool,
    /// Meridian's variables pinned in a static provider of its runtime
    /// configuration (docs/configuration.md), not looked up in the
    /// environment by every instance.
    pinned_variables: bool,
    /// Meridian and the floor each behind its own HAProxy, same settings.
    proxy: bool,
    /// The parts to run (`closed`, `open`, `recovery`, `quiet`; all by
    /// default).
    only: Vec<String>,
}

impl Args {
    fn runs(&self, part: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == part)
    }
}

fn args() -> Result<Args> {
    use lexopt::prelude::*;
    let mut args = Args {
        seconds: 5.0,
        slice: false,
        stamp: false,
        concurrency: false,
        pinned_variables: false,
        proxy: false,
        only: Vec::new(),
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next()? {
        match arg {
            Long("seconds") => args.seconds = parser.value()?.parse()?,
            Long("slice") => args.slice = true,
            Long("stamp") => args.stamp = true,
            Long("concurrency") => args.concurrency = true,
            Long("pinned-variables") => args.pinned_variables = true,
            Long("proxy") => args.proxy = true,
            Long("only") => {
                let parts: String = parser.value()?.parse()?;
                args.only = parts.split(',').map(str::to_owned).collect();
                for p in &args.only {
                    ensure!(
                        ["closed", "open", "recovery", "quiet"].contains(&p.as_str()),
                        "unknown part {p} (closed, open, recovery, quiet)"
                    );
                }
            }
            _ => return Err(arg.unexpected().into()),
        }
    }
    Ok(args)
}

/// Goodput at 8 connections before and after 15 s at 256.
struct Recovery {
    before: f64,
    windows_before: Vec<f64>,
    statuses_before: BTreeMap<u16, usize>,
    flood: f64,
    statuses_flood: BTreeMap<u16, usize>,
    windows_after: Vec<f64>,
    statuses_after: BTreeMap<u16, usize>,
    /// The runtime's threads before the flood, when it ended, and after
    /// the run after it ([`SpinApp::runtime_threads`]).
    threads: [Option<usize>; 3],
}

impl Recovery {
    /// The first 2 s after the flood, as a share of the goodput before.
    fn first_share(&self) -> f64 {
        self.windows_after.first().copied().unwrap_or(0.0) / self.before.max(1.0)
    }
}

/// The recovery run: 10 s at 8 connections, 15 s at 256, 10 s at 8. The
/// windows before say how much goodput drifts without a flood (a store
/// that grows with every request would show there too).
fn recovery(app: &SpinApp, target: &Target, budget: Duration) -> Recovery {
    let before_run = closed(target, 8, 10.0);
    let threads_before = app.runtime_threads();
    let flood = closed(target, 256, 15.0);
    let threads_flood = app.runtime_threads();
    let after_run = closed(target, 8, 10.0);
    Recovery {
        threads: [threads_before, threads_flood, app.runtime_threads()],
        before: goodput(&before_run, budget, 10.0),
        windows_before: windows(&before_run, budget),
        statuses_before: statuses(&before_run),
        flood: goodput(&flood, budget, 15.0),
        statuses_flood: statuses(&flood),
        windows_after: windows(&after_run, budget),
        statuses_after: statuses(&after_run),
    }
}

/// The test command's slice: what holds on any machine.
fn slice() -> Result<()> {
    let (app, tenants) = meridian(
        SpinOptions::default().variable("tenant_rate_limit", "100/1s"),
        &["flood", "quiet"],
    );
    let [flood, quiet] = &tenants[..] else {
        anyhow::bail!("two tenants");
    };
    let budget = Duration::from_millis(1_000);
    let flood_target = residents(app.url(), flood, 1_000);
    let quiet_target = residents(app.url(), quiet, 1_000);
    let (flooded, quieted) = std::thread::scope(|s| {
        let f = s.spawn(|| closed(&flood_target, 32, 3.0));
        let q = s.spawn(|| open(&quiet_target, 10.0, 3.0, 4));
        (f.join().unwrap_or_default(), q.join().unwrap_or_default())
    });
    let flood_statuses = statuses(&flooded);
    let quiet_ok = quieted.iter().filter(|s| s.in_time(budget)).count();
    let breaker = events(&app, "circuit_open");
    println!(
        "goodput slice: flood {flood_statuses:?}; quiet {quiet_ok} of {} 200 within 1 s; circuit_open events {breaker}",
        quieted.len()
    );
    ensure!(
        breaker == 0,
        "a flood opened the breaker on a healthy downstream"
    );
    ensure!(
        flood_statuses.get(&429).copied().unwrap_or(0) > 0,
        "the flooding tenant was never refused with 429"
    );
    ensure!(
        flood_statuses.keys().all(|s| [200, 429, 503].contains(s)),
        "the flood saw other statuses: {flood_statuses:?}"
    );
    ensure!(
        quiet_ok == quieted.len() && !quieted.is_empty(),
        "the quiet tenant's requests did not all succeed beside the flood"
    );
    Ok(())
}

fn main() -> Result<()> {
    let args = args()?;
    if args.slice {
        return slice();
    }
    let secs = args.seconds;
    let stamp = args.stamp;
    let pinned = args.pinned_variables;
    let behind_proxy = args.proxy;
    // Meridian as configured for the run: trusting the stamp (the load's
    // or the proxy's), the throttle leaving the bounding to the proxy, and
    // its variables pinned in a static provider, when asked.
    let configured = |options: SpinOptions| {
        let options = match stamp || behind_proxy {
            true => options.variable("trust_request_start", "on"),
            false => options,
        };
        let options = match behind_proxy {
            true => options.variable("admission", "proxy"),
            false => options,
        };
        match pinned {
            true => options.pin_variables(),
            false => options,
        }
    };
    let mut report = json!({"seconds": secs, "stamped": stamp,
        "concurrency_limited": args.concurrency, "pinned_variables": pinned,
        "behind_proxy": behind_proxy});
    // Tenant limits off for the one-tenant curves (they would be the
    // measure; the concurrency limiter counts, at a limit no run reaches,
    // so its cost is in the curves; what holds goodput is the throttle) unless
    // `--concurrency` asks for the tenant's share of concurrent work at its
    // default; on, at their defaults, for the two-tenant run.
    let rate_off = SpinOptions::default().variable("tenant_rate_limit", "off");
    let one_tenant = match args.concurrency {
        true => rate_off,
        false => rate_off.variable("tenant_concurrency_limit", "10000"),
    };
    let (app, tenants) = meridian(configured(one_tenant), &["bench"]);
    let tenant = &tenants[0];
    let ours_at = |budget_ms| stamped(residents(app.url(), tenant, budget_ms), stamp);
    if args.runs("closed") || args.runs("open") {
        let floor = SpinApp::start_floor();
        for budget_ms in [100u64, 300] {
            let budget = Duration::from_millis(budget_ms);
            let mut ours = ours_at(budget_ms);
            let mut theirs =
                Target::as_caller(floor.url(), "/sqlite/residents", "floor-token", budget_ms);
            // Behind a proxy each: the same settings for both, derived
            // from Meridian at this budget.
            let proxies = behind_proxy.then(|| {
                let settings = proxy_settings(&ours, budget);
                eprintln!(
                    "budget {budget_ms} ms: proxies with a cap of {}, a queue of {:?} for at most {}",
                    settings.cap, settings.queue, settings.max_queue
                );
                (
                    Proxy::start(app.url(), settings),
                    Proxy::start(floor.url(), settings),
                )
            });
            if let Some((p_ours, p_theirs)) = &proxies {
                ours = Target {
                    addr: p_ours.url().trim_start_matches("http://").to_owned(),
                    ..ours
                };
                theirs = Target {
                    addr: p_theirs.url().trim_start_matches("http://").to_owned(),
                    ..theirs
                };
                report[format!("proxy_{budget_ms}")] = json!({"cap": p_ours.settings.cap,
                    "queue_ms": p_ours.settings.queue.as_secs_f64() * 1e3,
                    "max_queue": p_ours.settings.max_queue});
            }
            let connections: &[usize] = match behind_proxy {
                true => &[1, 8, 16, 32, 64, 128, 256],
                false => &[1, 8, 32, 64, 128, 256],
            };
            let mut curve = Vec::new();
            let mut peak: f64 = 0.0;
            // The open loop's rates are multiples of the closed loop's peak.
            for &c in connections {
                let m = closed(&ours, c, secs);
                let f = closed(&theirs, c, secs);
                let (gm, gf) = (goodput(&m, budget, secs), goodput(&f, budget, secs));
                peak = peak.max(gm);
                eprintln!(
                    "budget {budget_ms} ms, {c} connections: Meridian {gm:.0}/s (p99 of its 200s {:.1} ms) {:?}, floor {gf:.0}/s (p99 {:.1} ms) {:?}",
                    p99_ok(&m),
                    statuses(&m),
                    p99_ok(&f),
                    statuses(&f)
                );
                curve.push(json!({"connections": c, "meridian": gm, "floor": gf,
                    "meridian_p99_ok_ms": p99_ok(&m), "floor_p99_ok_ms": p99_ok(&f),
                    "meridian_statuses": format!("{:?}", statuses(&m)), "floor_statuses": format!("{:?}", statuses(&f))}));
            }
            let mut open_curve = Vec::new();
            for x in [1.0, 2.0, 4.0, 8.0] {
                if !args.runs("open") {
                    break;
                }
                let rate = peak * x;
                // Behind the proxy, enough connections that the load never
                // waits for one of its own: a request may take up to its
                // budget, so the rate times the budget are in flight at
                // once (256 to 2,048 threads; the proxy holds them). At
                // the app itself, 256: a request holds up to three
                // instances at once (gateway, identity, a service), and
                // past Spin's 1,000 the runtime answers its own bare 500
                // ("maximum concurrent limit of 1000 for component
                // instances reached"), as a run with 2,048 found.
                let workers = match behind_proxy {
                    true => ((rate * budget.as_secs_f64() * 1.5) as usize).clamp(256, 2_048),
                    false => 256,
                };
                let m = open(&ours, rate, secs, workers);
                let f = open(&theirs, rate, secs, workers);
                let (gm, gf) = (goodput(&m, budget, secs), goodput(&f, budget, secs));
                eprintln!(
                    "budget {budget_ms} ms, open loop {x}× peak ({rate:.0}/s): Meridian {gm:.0}/s ({:.0} % of peak, p99 of its 200s {:.1} ms) {:?}, floor {gf:.0}/s",
                    100.0 * gm / peak.max(1.0),
                    p99_ok(&m),
                    statuses(&m)
                );
                open_curve.push(
                    json!({"times_peak": x, "rate": rate, "meridian": gm, "floor": gf,
                    "meridian_share_of_peak": gm / peak.max(1.0), "meridian_p99_ok_ms": p99_ok(&m)}),
                );
            }
            report[format!("budget_{budget_ms}")] =
                json!({"peak": peak, "closed": curve, "open": open_curve});
        }
    }
    if args.runs("recovery") {
        // Before, flood, after, each in 2 s windows (100 ms budget), for
        // Meridian and then the floor app: what the same flood leaves
        // behind in a bare app on the same runtime is the part of a slow
        // recovery that is not Meridian's state.
        let budget = Duration::from_millis(100);
        let floor = SpinApp::start_floor();
        let theirs = Target::as_caller(floor.url(), "/sqlite/residents", "floor-token", 100);
        let mut rows = serde_json::Map::new();
        for (name, runner, target) in [("meridian", &app, ours_at(100)), ("floor", &floor, theirs)]
        {
            let r = recovery(runner, &target, budget);
            eprintln!(
                "recovery, {name}: before {:.0}/s, 2 s windows {:?} {:?}; flood at 256 {:.0}/s {:?}; after, 2 s windows {:?} {:?}; first 2 s at {:.0} %; runtime threads before / after the flood / at the end {:?}",
                r.before,
                r.windows_before,
                r.statuses_before,
                r.flood,
                r.statuses_flood,
                r.windows_after,
                r.statuses_after,
                100.0 * r.first_share(),
                r.threads,
            );
            rows.insert(
                name.to_owned(),
                json!({"before": r.before, "windows_before": r.windows_before,
                    "windows_after": r.windows_after, "first_share": r.first_share(),
                    "runtime_threads": r.threads}),
            );
        }
        report["recovery"] = rows.into();
    }
    let breaker = events(&app, "circuit_open");
    let (wasted, total) = wasted(&app);
    eprintln!("circuit_open events: {breaker}; statements for 504s: {wasted} of {total}");
    report["circuit_open"] = json!(breaker);
    report["statements"] = json!({"for_504": wasted, "total": total});
    drop(app);
    // A quiet tenant beside a flooding one, tenant limits at their default.
    let mut quiet_runs = Vec::new();
    for budget_ms in [100u64, 300] {
        if !args.runs("quiet") {
            break;
        }
        let (app, tenants) = meridian(configured(SpinOptions::default()), &["flood", "quiet"]);
        let budget = Duration::from_millis(budget_ms);
        let [flood, quiet] = &tenants[..] else {
            anyhow::bail!("two tenants");
        };
        let f = stamped(residents(app.url(), flood, budget_ms), stamp);
        let q = stamped(residents(app.url(), quiet, budget_ms), stamp);
        // The quiet tenant is already running when the flood starts, as
        // a steady tenant is: its connections open and its credential
        // resolved, so what is measured beside the flood is the flood's
        // effect, its onset included, and not the quiet tenant's own
        // start. Its requests before the flood are its figure alone.
        let (flooded, quieted) = std::thread::scope(|s| {
            let fl = s.spawn(|| {
                std::thread::sleep(QUIET_LEAD);
                closed(&f, 64, secs * 2.0)
            });
            let qu = s.spawn(|| open(&q, 20.0, QUIET_LEAD.as_secs_f64() + secs * 2.0, 8));
            (fl.join().unwrap_or_default(), qu.join().unwrap_or_default())
        });
        let (alone, beside): (Vec<Sample>, Vec<Sample>) =
            quieted.into_iter().partition(|s| s.sent() < QUIET_LEAD);
        let onset_ends = QUIET_LEAD + Duration::from_secs(1);
        let (onset, later): (Vec<Sample>, Vec<Sample>) =
            beside.iter().partition(|s| s.sent() < onset_ends);
        let ok = beside.iter().filter(|s| s.in_time(budget)).count();
        // When the quiet requests slower than half the budget (its p99
        // target) were sent, in seconds from the flood's start.
        let slow: Vec<String> = beside
            .iter()
            .filter(|s| s.latency > budget / 2)
            .map(|s| format!("{:.2}", s.sent().saturating_sub(QUIET_LEAD).as_secs_f64()))
            .collect();
        eprintln!(
            "budget {budget_ms} ms: quiet alone p99 {:.1} ms ({} sent); beside the flood {ok} of {} 200 within budget ({:.2} %), p99 {:.1} ms, {:?} (its first second: p99 {:.1} ms of {}; after: p99 {:.1} ms of {}); flood {:?}; over half the budget, sent at s {slow:?}",
            p99(&alone),
            alone.len(),
            beside.len(),
            100.0 * ok as f64 / beside.len().max(1) as f64,
            p99(&beside),
            statuses(&beside),
            p99(&onset),
            onset.len(),
            p99(&later),
            later.len(),
            statuses(&flooded)
        );
        quiet_runs.push(json!({
            "budget_ms": budget_ms,
            "quiet_ok": ok,
            "quiet_sent": beside.len(),
            "quiet_p99_ms": p99(&beside),
            "quiet_alone_p99_ms": p99(&alone),
            "quiet_onset_p99_ms": p99(&onset),
            "quiet_after_onset_p99_ms": p99(&later),
            "quiet_statuses": format!("{:?}", statuses(&beside)),
            "flood_statuses": format!("{:?}", statuses(&flooded)),
        }));
    }
    report["quiet_beside_flood"] = json!(quiet_runs);
    let out = repo_root().join("target/bench/goodput.json");
    std::fs::create_dir_all(out.parent().context("parent")?)?;
    std::fs::write(&out, serde_json::to_string_pretty(&report)?)?;
    eprintln!("wrote {}", out.display());
    Ok(())
}
