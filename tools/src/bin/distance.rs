//! Meridian on PostgreSQL a round trip away: for each round-trip time, the
//! services' databases behind a delaying proxy (`meridian_e2e::distance`:
//! the kernel here has no netem), then a tenant's `GET` of a page and its
//! keyed `POST` of an invoice, one at a time, each timed and its waited
//! round trips to the server counted (as its answer arrives, and in all:
//! the event's delivery after the answer included, once they settle);
//! then keyed `POST`s for a few seconds from one writer, and from 16
//! writers on 16 tenants at once: writes a second. Beside them the
//! PostgreSQL floor's read (bench/floor: a token read, then a page, each a
//! checkout and a statement) on the same proxy: what a round trip costs a
//! Spin app beyond the proxy's own, Meridian or not.
//!
//! Run: `scripts/distance.sh [RTT_MS ...]` (a throw-away PostgreSQL, as
//! `scripts/postgres.sh` starts it; default 0 2 10), which sets
//! `MERIDIAN_DB=postgres` and `MERIDIAN_POSTGRES` for it.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use meridian_e2e::api::TenantClient;
use meridian_e2e::distance::Distance;
use meridian_e2e::postgres::{server_at, PgDatabases};
use meridian_e2e::{settled, SpinApp, SpinOptions};
use meridian_tools::{Positionals, Sorted};
use serde_json::json;

/// Requests of each kind measured at each distance.
const EACH: usize = 15;
/// How long each throughput run writes.
const WRITING: Duration = Duration::from_secs(5);
/// Writers (and tenants) of the concurrent run.
const WRITERS: usize = 16;

/// One kind of request at one distance.
struct Measured {
    p50: Duration,
    /// Round trips to the server per request, counted as its answer
    /// arrived (the most of any request: work after the answer may have
    /// started by then).
    answered: usize,
    /// Round trips per request in all, the work after its answer included
    /// (the most of any request).
    in_all: usize,
}

fn main() -> Result<()> {
    let rtts: Vec<u64> = match Positionals::from_env()?.all() {
        [] => vec![0, 2, 10],
        args => args
            .iter()
            .map(|a| a.parse().context("a round-trip time in milliseconds"))
            .collect::<Result<_>>()?,
    };
    println!(
        "{:>6} {:>9}  {:>10} {:>8}  {:>14} {:>12}  {:>12} {:>14}  {:>10} {:>8}  {:>11} {:>8}",
        "RTT",
        "measured",
        "GET p50",
        "its RTs",
        "keyed POST p50",
        "its RTs",
        "1 writer/s",
        "16 writers/s",
        "floor GET",
        "its RTs",
        "floor POST",
        "its RTs"
    );
    // The zero-distance figures, once measured.
    let mut near: Option<Near> = None;
    for rtt in rtts {
        let (proxy, server) = server_at(Duration::from_millis(rtt))
            .context("run through scripts/distance.sh (MERIDIAN_DB=postgres)")?;
        let measured = round_trip(Duration::from_millis(rtt))?;
        let databases = PgDatabases::create(&server);
        let app = SpinApp::start_with(SpinOptions {
            postgres: Some(databases),
            ..SpinOptions::default()
        });
        let acme = app.tenant("acme");
        let resident = acme.resident("Ada");
        // Warm: the pool's connections open, the caller remembered.
        for _ in 0..3 {
            acme.get("/residents?limit=20").send();
        }
        let get = measure(&proxy, "GET", || {
            acme.get("/residents?limit=20").send().status
        })?;
        let mut n = 0;
        // Warm: billing's and community's first writes of a fresh
        // database migrate it.
        acme.post("/invoices")
            .key(&format!("distance-{rtt}-warm"))
            .json(&json!({
                "resident_id": resident, "amount_cents": 1_000, "currency": "EUR",
                "description": "dues", "due_date": "2026-12-31"
            }));
        let post = measure(&proxy, "keyed POST", || {
            n += 1;
            acme.post("/invoices")
                .key(&format!("distance-{rtt}-{n}"))
                .json(&json!({
                    "resident_id": resident, "amount_cents": 1_000, "currency": "EUR",
                    "description": "dues", "due_date": "2026-12-31"
                }))
                .status
        })?;
        let floor = SpinApp::start_floor_on(&PgDatabases::create(&server));
        let floor_read = || {
            let auth = [("authorization", "Bearer floor-token")];
            floor
                .client()
                .send("GET", "/pg/residents", &auth, None)
                .status
        };
        for _ in 0..3 {
            floor_read();
        }
        let floor_get = measure(&proxy, "the floor's GET", floor_read)?;
        let mut k = 0;
        let mut floor_write = || {
            k += 1;
            let key = format!("floor-{rtt}-{k}");
            let headers = [
                ("authorization", "Bearer floor-token"),
                ("idempotency-key", key.as_str()),
                ("content-type", "application/json"),
            ];
            let body = json!({"resident_id": "resident-0000", "amount_cents": 1_000}).to_string();
            floor
                .client()
                .send("POST", "/pg/invoices", &headers, Some(body.as_str()))
                .status
        };
        // Warm: `side`'s connection too.
        for _ in 0..3 {
            floor_write();
        }
        let floor_post = measure(&proxy, "the floor's keyed POST", floor_write)?;
        drop(floor);
        let tenants: Vec<TenantClient> = (0..WRITERS)
            .map(|i| app.tenant(&format!("writer{i}")))
            .collect();
        let residents: Vec<String> = tenants.iter().map(|t| t.resident("Ada")).collect();
        let one = writes_per_second(&tenants[..1], &residents[..1], &format!("one-{rtt}"));
        let many = writes_per_second(&tenants, &residents, &format!("many-{rtt}"));
        println!(
            "{:>4}ms {:>7.2}ms  {:>8.1}ms {:>8}  {:>12.1}ms {:>5} ({:>2} in all)  {:>10.1} {:>14.1}  {:>8.1}ms {:>8}  {:>9.1}ms {:>8}",
            rtt,
            ms(measured),
            ms(get.p50),
            get.in_all,
            ms(post.p50),
            post.answered,
            post.in_all,
            one,
            many,
            ms(floor_get.p50),
            floor_get.in_all,
            ms(floor_post.p50),
            floor_post.answered
        );
        let here = Near {
            rtt: ms(measured),
            get: ms(get.p50),
            post: ms(post.p50),
            floor: ms(floor_get.p50),
            floor_post: ms(floor_post.p50),
        };
        match &near {
            None if rtt == 0 => near = Some(here),
            Some(near) if rtt > 0 => {
                let rtt_ms = here.rtt;
                println!(
                    "        targets at {rtt} ms: GET p50 is the near p50 + {:.1} RTT (≤ 3), \
                     keyed POST + {:.1} RTT (≤ 8); 16 writers {:.1}× one (≥ 8)",
                    (here.get - near.get) / rtt_ms,
                    (here.post - near.post) / rtt_ms,
                    many / one
                );
                // Beyond the proxy's round trip (as a client on loopback
                // meets it), what each waited round trip cost.
                let beyond = |far: f64, near_ms: f64, trips: usize| {
                    let trips = trips.max(1) as f64;
                    (far - near_ms) / trips - (here.rtt - near.rtt)
                };
                println!(
                    "        a round trip beyond the proxy's: GET {:.2} ms, keyed POST {:.2} ms, \
                     the floor's GET {:.2} ms, its keyed POST {:.2} ms; against the floor at \
                     {rtt} ms: GET {:.2}×, keyed POST {:.2}×",
                    beyond(here.get, near.get, get.in_all),
                    beyond(here.post, near.post, post.answered),
                    beyond(here.floor, near.floor, floor_get.in_all),
                    beyond(here.floor_post, near.floor_post, floor_post.answered),
                    here.get / here.floor,
                    here.post / here.floor_post
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// Milliseconds, as a float.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The p50s (and the proxy's measured round trip) at one distance.
struct Near {
    rtt: f64,
    get: f64,
    post: f64,
    floor: f64,
    floor_post: f64,
}

/// The round trip the proxy puts in front of the server as a client on
/// an open connection meets it, its own threads' wake-ups included: the
/// median of 21 one-byte exchanges through a proxy of the same delay in
/// front of an echo server on loopback.
fn round_trip(rtt: Duration) -> Result<Duration> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let echo = listener.local_addr()?.to_string();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut byte = [0u8; 1];
            while stream.read_exact(&mut byte).is_ok() && stream.write_all(&byte).is_ok() {}
        }
    });
    let proxy = Distance::start(&echo, rtt);
    let mut stream = std::net::TcpStream::connect(proxy.addr()).context("the proxy")?;
    stream.set_nodelay(true)?;
    let mut took = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        stream.write_all(b"x")?;
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).context("the echo")?;
        took.push(started.elapsed());
    }
    ensure!(!took.is_empty(), "no round trip");
    Ok(median(&took))
}

/// Keyed invoices written a second for `WRITING`, one writer a tenant,
/// each writing one after another (its keys `prefix-…`): the 201s only.
fn writes_per_second(tenants: &[TenantClient], residents: &[String], prefix: &str) -> f64 {
    let started = Instant::now();
    let written: usize = std::thread::scope(|s| {
        let writers: Vec<_> = tenants
            .iter()
            .zip(residents)
            .enumerate()
            .map(|(w, (tenant, resident))| {
                s.spawn(move || {
                    let mut ok = 0;
                    let mut n = 0;
                    while started.elapsed() < WRITING {
                        n += 1;
                        let status = tenant
                            .post("/invoices")
                            .key(&format!("{prefix}-{w}-{n}"))
                            .json(&json!({
                                "resident_id": resident, "amount_cents": 1_000, "currency": "EUR",
                                "description": "dues", "due_date": "2026-12-31"
                            }))
                            .status;
                        ok += usize::from(status == 201);
                    }
                    ok
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    written as f64 / started.elapsed().as_secs_f64()
}

/// `EACH` requests made by `send`, one at a time, each once the sends of
/// the one before (its work after the answer included) have settled.
fn measure(proxy: &Distance, what: &str, mut send: impl FnMut() -> u16) -> Result<Measured> {
    let mut took = Vec::new();
    let (mut answered, mut in_all) = (0, 0);
    for _ in 0..EACH {
        let before = settled(what, 0, || proxy.round_trips());
        let started = Instant::now();
        let status = send();
        took.push(started.elapsed());
        answered = answered.max(proxy.round_trips() - before);
        if status >= 300 {
            bail!("{what}: {status}");
        }
        in_all = in_all.max(settled(what, before, || proxy.round_trips()) - before);
    }
    Ok(Measured {
        p50: median(&took),
        answered,
        in_all,
    })
}

/// The median of `times` (zero for none).
fn median(times: &[Duration]) -> Duration {
    let sorted = Sorted::new(times.iter().map(Duration::as_secs_f64));
    Duration::try_from_secs_f64(sorted.at(0.5)).unwrap_or_default()
}
