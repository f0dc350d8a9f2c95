//! Key-value writes per second at a steady request rate: the counts
//! against a store's write quota (Akamai Functions: 50 a second per app).
//! Starts the app three times in one run — the counts in the key-value
//! store with every request counted (`count_sample = 1`) and sampled
//! (`count_sample = N`), then in PostgreSQL (`counts_postgres`, as the
//! Akamai profile deploys) — with the `default` store in a file whose
//! writes a trigger stamps (`SpinApp::record_store_writes`), drives
//! `GET /v1/{t}/residents` at a fixed rate from paced threads over ten
//! tenants (each well inside its own rate limit), and prints the writes of
//! each second and the answers' latency.
//!
//! Run: `scripts/kv-writes.sh` (the Akamai profile: its build, PostgreSQL)
//! or `cargo run -p meridian-tools --bin kv_writes -- RATE SECONDS SAMPLE`.
//! Fails when the profile's app (counts in PostgreSQL) writes more than
//! `MAX_WRITES_PER_SECOND` in any whole second, refuses a request with a
//! 429, or serves less than 95 % of what was sent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use meridian_e2e::api::TenantClient;
use meridian_e2e::{SpinApp, SpinOptions};
use meridian_tools::{Positionals, Sorted};

/// Akamai Functions' published key-value write quota, per app.
const MAX_WRITES_PER_SECOND: i64 = 50;
/// Tenants the load is spread over, so that none meets its rate limit.
const TENANTS: usize = 10;

struct Run {
    sent: u64,
    ok: u64,
    /// Answered 429: a tenant's sampled count over its quota.
    limited: u64,
    /// Writes in each whole second of the load.
    writes: Vec<i64>,
    /// Each answer's latency, ms.
    latencies_ms: Sorted,
}

/// Where the counts are kept, and how many requests one write stands for.
struct Mode {
    name: &'static str,
    in_postgres: bool,
    count_sample: u32,
}

fn run(rate: u64, seconds: u64, mode: &Mode) -> Result<Run> {
    let mut options = SpinOptions::default()
        .key_value_file()
        .variable("count_sample", mode.count_sample.to_string())
        .variable("tenant_concurrency_limit", "off");
    if !mode.in_postgres {
        options = options.variable("counts_postgres", "");
    }
    let app = SpinApp::start_with(options);
    if mode.in_postgres && !app.postgres().is_some_and(|pg| pg.has_counts()) {
        bail!("counts in PostgreSQL need the Akamai profile (scripts/kv-writes.sh)");
    }
    let tenants: Vec<TenantClient> = (0..TENANTS)
        .map(|i| {
            let t = app.tenant(&format!("kv{i}"));
            t.resident("Ada");
            t
        })
        .collect();
    app.record_store_writes();
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis();
    let (sent, ok, limited) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let latencies = std::sync::Mutex::new(Vec::new());
    // Paced senders: each sends every `interval`, from its own offset.
    let senders = 50u64;
    let interval = Duration::from_secs_f64(senders as f64 / rate as f64);
    let start = Instant::now() + Duration::from_millis(200);
    std::thread::scope(|s| {
        for sender in 0..senders {
            let (sent, ok, limited, tenants, latencies) =
                (&sent, &ok, &limited, &tenants, &latencies);
            s.spawn(move || {
                let tenant = &tenants[sender as usize % TENANTS];
                let offset = interval.mul_f64(sender as f64 / senders as f64);
                let mut next = start + offset;
                while next < start + Duration::from_secs(seconds) {
                    if let Some(wait) = next.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    sent.fetch_add(1, Ordering::Relaxed);
                    let began = Instant::now();
                    let status = tenant.get("/residents?limit=20").send().status;
                    let us = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
                    if let Ok(mut l) = latencies.lock() {
                        l.push(us);
                    }
                    match status {
                        200 => ok.fetch_add(1, Ordering::Relaxed),
                        429 => limited.fetch_add(1, Ordering::Relaxed),
                        _ => 0,
                    };
                    next += interval;
                }
            });
        }
    });
    // Whole seconds inside the load only.
    let first = i64::try_from(started_ms / 1000)? + 1;
    let last = first + i64::try_from(seconds)? - 2;
    let per_second = app.store_writes_per_second();
    let writes = (first..=last)
        .map(|s| {
            per_second
                .iter()
                .find(|(at, _)| *at == s)
                .map_or(0, |(_, n)| *n)
        })
        .collect();
    let latencies_us = latencies.into_inner().unwrap_or_default();
    let latencies_ms = Sorted::new(latencies_us.iter().map(|&us| us as f64 / 1000.0));
    Ok(Run {
        sent: sent.into_inner(),
        ok: ok.into_inner(),
        limited: limited.into_inner(),
        writes,
        latencies_ms,
    })
}

fn main() -> Result<()> {
    let args = Positionals::from_env()?;
    let (rate, seconds): (u64, u64) = (args.get(0, "RATE", 500)?, args.get(1, "SECONDS", 10)?);
    let sample: u32 = args.get(2, "SAMPLE", 64)?;
    let modes = [
        Mode {
            name: "key-value, every request counted",
            in_postgres: false,
            count_sample: 1,
        },
        Mode {
            name: "key-value, count_sample",
            in_postgres: false,
            count_sample: sample,
        },
        Mode {
            name: "PostgreSQL (the profile)",
            in_postgres: true,
            count_sample: 1,
        },
    ];
    let mut failed = Vec::new();
    for mode in &modes {
        let r = run(rate, seconds, mode)?;
        let peak = r.writes.iter().copied().max().unwrap_or(0);
        let mean = r.writes.iter().sum::<i64>() as f64 / r.writes.len().max(1) as f64;
        println!(
            "{} (count_sample {}): {} sent at {rate}/s ({TENANTS} tenants, each at half its rate limit), {} answered 200, {} 429, p50 {:.1} ms, p99 {:.1} ms; key-value writes per second: mean {mean:.1}, peak {peak} ({:?})",
            mode.name,
            mode.count_sample,
            r.sent,
            r.ok,
            r.limited,
            r.latencies_ms.at(0.5),
            r.latencies_ms.at(0.99),
            r.writes
        );
        if mode.in_postgres {
            if peak > MAX_WRITES_PER_SECOND {
                failed.push(format!(
                    "{peak} writes in one second, over {MAX_WRITES_PER_SECOND}"
                ));
            }
            if r.limited > 0 {
                failed.push(format!("{} requests refused 429", r.limited));
            }
            if (r.ok as f64) < 0.95 * r.sent as f64 {
                failed.push(format!("only {} of {} answered 200", r.ok, r.sent));
            }
        }
    }
    if !failed.is_empty() {
        bail!("counts in PostgreSQL: {}", failed.join("; "));
    }
    Ok(())
}
