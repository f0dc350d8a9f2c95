//! Meridian against the floor (docs/testing.md, "Benchmarks"): every figure a ratio to
//! the least a Spin app of the same shape costs, measured in the same run.
//!
//! Run through `scripts/bench.sh` (it builds the components and installs
//! `wrk`); by hand: `cargo run -p meridian-tools --release --bin perf --
//! [--seconds S] [--rounds R] [--per-budget N] [--write] [--uncached]
//! [--pinned-variables]` (`--uncached`: also Meridian with its resolution
//! cache off, same rounds; `--pinned-variables`: also Meridian reading with
//! its variables pinned in a static provider, same rounds).
//!
//! - **P1**: `wrk` (keep-alive, 1 and 8 connections) against Meridian's
//!   `GET /v1/{t}/residents?limit=20` and keyed `POST /v1/{t}/invoices`, and
//!   against the floor app (`bench/floor.toml`): a no-op chain of three
//!   components and the same chain doing the SQLite work (one indexed read,
//!   then a page of 20 rows or one insert), and for the keyed write a floor
//!   with its hops and statements (`floor, same work`: the claim, the
//!   resident check, one transaction, the event; its rows on a write-ahead
//!   database, as billing's are), which the write's ratio is taken
//!   against. Rounds alternate the order.
//! - **P2**: time-to-504 behind a hung community, per budget.
//! - **P3**: overload — more connections than the machine serves within a
//!   tight budget; statements started after their deadline (the services'
//!   `statement_late` lines) and answers later than the budget.
//! - **P5**: each `.wasm` against the spin-sdk hello-world (`bench/hello`).
//!
//! Writes `target/bench/perf.json`; with `--write`, also `docs/benchmarks.md`'s
//! floor section and `docs/benchmarks.svg` (the latency CDFs and the 504 times).
//!
//! One module a part: `wrk` (P1), `expiry` (P2), `overload` (P3), `sizes`
//! (P5), `postgres` (`--postgres`); `report` writes the figures and
//! `picture` draws them; this file reads the arguments and runs the parts
//! in order.

mod expiry;
mod overload;
mod picture;
mod postgres;
mod report;
mod sizes;
mod wrk;

use anyhow::{ensure, Context, Result};
use meridian_e2e::api::{add_resident, TenantClient};
use meridian_e2e::{repo_root, SpinApp, SpinOptions};

use expiry::time_to_504;
use overload::overload;
use postgres::postgres;
use report::{publish, Report, BEGIN, END};
use serde_json::json;
use sizes::sizes;
use wrk::{measure, Target};

/// How the run is sized.
struct Args {
    /// Seconds per `wrk` measurement.
    seconds: u64,
    /// Alternating rounds per scenario.
    rounds: usize,
    /// Requests per budget behind the hung downstream.
    per_budget: usize,
    /// Budgets for the time-to-504, ms.
    budgets: Vec<u64>,
    /// Write docs/benchmarks.md and docs/benchmarks.svg.
    write: bool,
    /// Run one part alone (`p1`: the reads and writes against the floor,
    /// `p1-read` the reads only;
    /// `p2`: time-to-504; `p3`: overload), printing its figures and writing
    /// nothing: for profiling one change.
    only: Option<String>,
    /// Also measure Meridian with `resolution_cache = "off"` (a second app
    /// beside it, in the same alternating rounds): the cache's effect,
    /// same run.
    uncached: bool,
    /// Also measure Meridian's read with its variables pinned in a static
    /// provider of its runtime configuration (docs/configuration.md), in
    /// the same rounds: what Spin's variable lookups cost a read.
    pinned_variables: bool,
    /// Measure the read on PostgreSQL against the floor on the same server
    /// (`MERIDIAN_DB=postgres`; scripts/bench.sh --postgres) and nothing else.
    postgres: bool,
}

impl Args {
    fn parse() -> Result<Self> {
        use lexopt::prelude::*;
        let mut args = Self {
            seconds: 10,
            rounds: 3,
            per_budget: 50,
            budgets: vec![100, 400, 1_000, 3_000],
            write: false,
            only: None,
            uncached: false,
            pinned_variables: false,
            postgres: false,
        };
        let mut parser = lexopt::Parser::from_env();
        while let Some(arg) = parser.next()? {
            match arg {
                Long("seconds") => args.seconds = parser.value()?.parse::<u64>()?.max(1),
                Long("rounds") => args.rounds = parser.value()?.parse::<usize>()?.max(1),
                Long("per-budget") => args.per_budget = parser.value()?.parse::<usize>()?.max(1),
                Long("budgets") => {
                    let list: String = parser.value()?.parse()?;
                    args.budgets = list
                        .split(',')
                        .map(|b| b.parse().with_context(|| format!("bad budget {b:?}")))
                        .collect::<Result<_>>()?;
                }
                Long("write") => args.write = true,
                Long("uncached") => args.uncached = true,
                Long("pinned-variables") => args.pinned_variables = true,
                Long("postgres") => args.postgres = true,
                Long("only") => {
                    let part: String = parser.value()?.parse()?;
                    ensure!(
                        ["p1", "p1-read", "p2", "p3"].contains(&part.as_str()),
                        "--only takes p1, p1-read, p2 or p3"
                    );
                    args.only = Some(part);
                }
                _ => return Err(arg.unexpected().into()),
            }
        }
        Ok(args)
    }
}

fn main() -> Result<()> {
    let args = Args::parse()?;
    if args.only.as_deref() == Some("p2") {
        time_to_504(&args)?;
        return Ok(());
    }
    if args.postgres {
        return postgres(&args);
    }
    let sizes = sizes()?;
    let floor = SpinApp::start_floor();
    // One tenant at full speed: its limits would be the measure. The
    // concurrency limiter still counts (a limit no run reaches: P3 has 64
    // connections), so what it costs a request is measured.
    let unlimited = SpinOptions::default()
        .variable("tenant_rate_limit", "off")
        .variable("tenant_concurrency_limit", "10000");
    let (app, tenant, resident) = bench_app(unlimited.clone())?;
    // The same app and rows with every request asking identity.
    let uncached = args
        .uncached
        .then(|| bench_app(unlimited.clone().variable("resolution_cache", "off")))
        .transpose()?;
    let pinned = args
        .pinned_variables
        .then(|| bench_app(unlimited.pin_variables()))
        .transpose()?;

    let auth = |token: &str| vec![("authorization".to_owned(), format!("Bearer {token}"))];
    let floor_auth = auth("floor-token");
    let get = |name, url: String, headers: Vec<(String, String)>| Target {
        name,
        url,
        method: "GET",
        headers,
        body: None,
        keyed: false,
    };
    let invoice_of = |resident: &str| {
        json!({"resident_id": resident, "amount_cents": 1250, "currency": "EUR",
            "description": "bench", "due_date": "2026-12-31"})
        .to_string()
    };
    let post = |name, url: String, token: Option<&str>, body: String| Target {
        name,
        url,
        method: "POST",
        headers: [
            token.map_or_else(|| floor_auth.clone(), auth),
            vec![("content-type".into(), "application/json".into())],
        ]
        .concat(),
        body: Some(body),
        keyed: token.is_some(),
    };
    let residents = get(
        "Meridian",
        format!("{}{}", app.url(), tenant.path("/residents?limit=20")),
        auth(&tenant.token),
    );
    let mut reads = vec![
        get("floor, no-op", format!("{}/noop", floor.url()), Vec::new()),
        get(
            "floor, SQLite",
            format!("{}/sqlite/residents", floor.url()),
            floor_auth.clone(),
        ),
        residents.clone(),
    ];
    let mut writes = vec![
        post(
            "floor, SQLite",
            format!("{}/sqlite/invoices", floor.url()),
            None,
            invoice_of(&resident),
        ),
        Target {
            keyed: true,
            ..post(
                SAME_WORK,
                format!("{}/samework/invoices", floor.url()),
                None,
                invoice_of("resident-0001"),
            )
        },
        post(
            "Meridian",
            format!("{}{}", app.url(), tenant.path("/invoices")),
            Some(&tenant.token),
            invoice_of(&resident),
        ),
    ];
    if let Some((app, tenant, resident)) = &uncached {
        reads.push(get(
            UNCACHED,
            format!("{}{}", app.url(), tenant.path("/residents?limit=20")),
            auth(&tenant.token),
        ));
        writes.push(post(
            UNCACHED,
            format!("{}{}", app.url(), tenant.path("/invoices")),
            Some(&tenant.token),
            invoice_of(resident),
        ));
    }
    if let Some((app, tenant, _)) = &pinned {
        reads.push(get(
            PINNED,
            format!("{}{}", app.url(), tenant.path("/residents?limit=20")),
            auth(&tenant.token),
        ));
    }
    if args.only.as_deref() == Some("p3") {
        overload(&app, &residents, &args)?;
        return Ok(());
    }
    let mut measured = Vec::new();
    for connections in [1, 8] {
        measured.push(measure(
            "GET /v1/{t}/residents?limit=20",
            &reads,
            connections,
            &args,
        )?);
        if args.only.as_deref() != Some("p1-read") {
            measured.push(measure(
                "POST /v1/{t}/invoices (keyed)",
                &writes,
                connections,
                &args,
            )?);
        }
    }
    for m in &measured {
        let floor = m.floor();
        for (name, ours) in m.runs.iter().filter(|(n, _)| n.starts_with("Meridian")) {
            let (p50_lo, p50_hi) = m.spread(name, &|r| r.at(50.0));
            let (rps_lo, rps_hi) = m.spread(name, &|r| r.rps());
            eprintln!(
                "{} c={}: {name} / floor p50 {:.2} (rounds {p50_lo:.2}–{p50_hi:.2}), p99 {:.2}, throughput {:.2} (rounds {rps_lo:.2}–{rps_hi:.2})",
                m.scenario,
                m.connections,
                ours.at(50.0) / floor.at(50.0),
                ours.at(99.0) / floor.at(99.0),
                ours.rps() / floor.rps()
            );
        }
        m.no_failures()?;
    }
    if args.only.as_deref().is_some_and(|p| p.starts_with("p1")) {
        return Ok(());
    }
    drop(uncached);
    drop(pinned);
    let overload = overload(&app, &residents, &args)?;
    drop(app);
    drop(floor);
    let expiry = time_to_504(&args)?;

    let report = Report {
        args: &args,
        measured: &measured,
        expiry: &expiry,
        overload: &overload,
        sizes: &sizes,
    };
    let dir = repo_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("perf.json"),
        serde_json::to_string_pretty(&report.json())?,
    )?;
    let markdown = report.markdown();
    println!("{markdown}");
    if args.write {
        publish(
            (BEGIN, END),
            "Against the floor",
            &markdown,
            "benchmarks.svg",
            &report.svg(),
        )?;
    }
    eprintln!("wrote {}", dir.join("perf.json").display());
    // Defects, whatever the machine: work started after its deadline, or a
    // hung downstream answered with anything but the 504.
    ensure!(
        overload.late_statements == 0,
        "{} statements started after their request's deadline",
        overload.late_statements
    );
    for e in &expiry {
        ensure!(
            e.other.is_empty(),
            "budget {} ms behind a hung downstream answered {:?}",
            e.budget_ms,
            e.other
        );
    }
    Ok(())
}

/// Meridian started with `options`, with the benchmark's tenant and 25
/// residents (the last one's id returned).
fn bench_app(options: SpinOptions) -> Result<(SpinApp, TenantClient, String)> {
    let app = SpinApp::start_with(options.sound_secrets());
    let client = app.client();
    let tenant = app.tenant("bench");
    let resident = (0..25)
        .map(|i| add_resident(&client, &tenant, &format!("Resident {i}")))
        .next_back()
        .context("residents")?;
    Ok((app, tenant, resident))
}

/// The floor each scenario's Meridian is compared with.
const FLOOR: &str = "floor, SQLite";

/// The keyed write's floor: the same hops and statements (bench/floor).
const SAME_WORK: &str = "floor, same work";

/// Meridian reading with its variables pinned (`--pinned-variables`).
const PINNED: &str = "Meridian, variables pinned";

/// Meridian without the resolution cache (`--uncached`).
const UNCACHED: &str = "Meridian, resolution cache off";
